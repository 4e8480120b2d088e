#!/usr/bin/env bash
# gpu-verify.sh — every GPU correctness check in one call on a GPU machine: the FP32 ladder test
# and the BF16 GEMM/GEMV test in full, then compute-sanitizer memcheck + racecheck on their
# reduced sets, then a short benchmark confirmation (top rungs vs cuBLAS). Prints a summary last.
# usage: OUT=dir scripts/gpu-verify.sh BIN_DIR   (BIN_DIR: test_gemm_fp32, test-gemm-bf16,
#        tinfer-bench-gemm, built with -DTINFER_CUDA=ON). Exit status non-zero if a check fails.
set -u -o pipefail
BIN=${1:?usage: gpu-verify.sh BIN_DIR}
OUT=${OUT:-./out-verify}
mkdir -p "$OUT"
summary=()
note() { summary+=("$1"); echo "== $1"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
rc_all=0

timeout 200 "$BIN/test_gemm_fp32" > "$OUT/fp32-test.log" 2>&1; rc=$?
[ $rc = 0 ] || rc_all=1
note "test_gemm_fp32 (full) rc=$rc: $(tail -1 "$OUT/fp32-test.log")"
timeout 120 "$BIN/test-gemm-bf16" > "$OUT/bf16-test.log" 2>&1; rc=$?
[ $rc = 0 ] || rc_all=1
note "test-gemm-bf16 (full) rc=$rc: $(tail -1 "$OUT/bf16-test.log")"

san() { # name tool cmd...
  local name=$1 tool=$2; shift 2
  timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" > "$OUT/san-$name-$tool.log" 2>&1
  local r=$?
  [ $r = 0 ] || rc_all=1
  note "compute-sanitizer $tool $name rc=$r: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Device not supported' "$OUT/san-$name-$tool.log" | tail -1)"
}
if command -v compute-sanitizer > /dev/null; then
  san fp32 memcheck "$BIN/test_gemm_fp32" --quick
  san fp32 racecheck "$BIN/test_gemm_fp32" --quick --rung 9,10,11
  san bf16 memcheck "$BIN/test-gemm-bf16" quick
  san bf16 racecheck "$BIN/test-gemm-bf16" quick
else
  note "compute-sanitizer not found"
fi

timeout 90 "$BIN/tinfer-bench-gemm" --rung cublas,10 --sizes 4096,4092,2048,8192 --layout both \
  --json "$OUT/sgemm-confirm.json" > "$OUT/sgemm-confirm.log" 2>&1
note "sgemm confirm rc=$?"
tail -n 16 "$OUT/sgemm-confirm.log"

echo "==== summary ===="
printf '%s\n' "${summary[@]}"
exit $rc_all

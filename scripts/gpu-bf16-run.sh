#!/usr/bin/env bash
# gpu-bf16-run.sh — the one script the GPU machine runs for the BF16 GEMM work (gemm/bf16.h):
# correctness of every kernel, compute-sanitizer (memcheck + racecheck) on a reduced case, and the
# benchmark (tinfer-bench-gemm bf16) with JSON + PNG, then a short table printed last.
#
# Usage: scripts/gpu-bf16-run.sh [BIN_DIR] [bench set: all|square|model|ladder]
#   BIN_DIR holds test-gemm-bf16 and tinfer-bench-gemm-bf16 (built elsewhere with -DTINFER_CUDA=ON;
#   default .devcarry-bf16). Results go to $OUT (default ./out-bf16): test.log, sanitizer.log
#   (memcheck then racecheck), bench.log, bench_<set>.json, bf16_model_tflops.png, bf16_model_gbs.png.
# Exit status: non-zero when the correctness test fails.
set -u
BIN=${1:-.devcarry-bf16}
SET=${2:-all}
OUT=${OUT:-./out-bf16}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader

timeout 120 "$BIN/test-gemm-bf16" > "$OUT/test.log" 2>&1
test_rc=$?
echo "test-gemm-bf16 rc=$test_rc: $(tail -1 "$OUT/test.log")"
grep '^FAIL' "$OUT/test.log" | head -20

if [ "$test_rc" = 3 ] || [ "$test_rc" = 124 ]; then
    echo "test hung: sanitizers skipped"
elif command -v compute-sanitizer > /dev/null; then
    timeout 100 compute-sanitizer --tool memcheck "$BIN/test-gemm-bf16" quick > "$OUT/sanitizer.log" 2>&1
    echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|Device not supported' "$OUT/sanitizer.log" | tail -1)"
    timeout 100 compute-sanitizer --tool racecheck "$BIN/test-gemm-bf16" quick > "$OUT/racecheck.tmp" 2>&1
    echo "racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|Device not supported' "$OUT/racecheck.tmp" | tail -1)"
    { echo "==== racecheck ===="; cat "$OUT/racecheck.tmp"; } >> "$OUT/sanitizer.log"
    rm -f "$OUT/racecheck.tmp"
else
    echo "compute-sanitizer not found"
fi

if [ "$SET" = all ]; then SETS="ladder square model"; else SETS=$SET; fi
: > "$OUT/bench.log"
for s in $SETS; do
    # one bench process per set, each with its own limit, so one slow set cannot eat the call
    case $s in model) lim=200 ;; *) lim=60 ;; esac
    timeout $lim "$BIN/tinfer-bench-gemm-bf16" "$s" --json "$OUT/bench_$s.json" --png "$OUT/bf16_$s" >> "$OUT/bench.log" 2>&1
    echo "bench $s rc=$?"
done

# Short table: the headline rows (as in gemm/tc/README.md and gemm/decode/README.md), last.
echo "== copy bandwidth =="
grep '^device' "$OUT/bench.log"
echo "== square (wgmma vs cuBLAS) =="
grep '^square' "$OUT/bench.log" | grep -E 'wgmma|wmma' | awk '{printf "M=N=K=%-5s %-10s %9s us %6s TF/s %7s of cuBLAS\n",$3,$6,$7,$9,$13}'
echo "== decode M=1..16 (auto) on Llama-3-8B =="
grep '^model' "$OUT/bench.log" | grep llama | grep ' auto ' | awk '$3<=16 {printf "%-13s M=%-3s %8s us %6s GB/s %7s of copy %7s of cuBLAS\n",$2,$3,$7,$11,$15,$13}'
echo "== decode rungs 05 / 06 vs cuBLAS, M = 1 and 8 (Llama-3-8B) =="
grep '^model' "$OUT/bench.log" | grep llama | grep -E 'gemv05|gemv06|cublas' | awk '$3==1 || $3==8 {printf "%-13s M=%-3s %-15s %8s us %6s GB/s %7s of copy\n",$2,$3,$6,$7,$11,$15}'
echo "== SmolLM2 (auto vs cuBLAS, us) =="
grep '^model' "$OUT/bench.log" | grep smol | grep ' auto ' | awk '{printf "%-12s M=%-5s %8s us %7s of cuBLAS\n",$2,$3,$7,$13}'
echo "== mismatches =="
grep -c MISMATCH "$OUT/bench.log"
exit $test_rc

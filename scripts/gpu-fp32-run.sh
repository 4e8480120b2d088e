#!/usr/bin/env bash
# gpu-fp32-run.sh — the one script the GPU machine runs for the FP32 SGEMM ladder:
# binary check, GPU tests, compute-sanitizer (memcheck + racecheck) on the reduced test,
# the autotuner, the benchmarks (every rung + cuBLAS; 4096, 4092, 2048, 8192 and a 128..8192
# sweep; NT at the key sizes), the markdown table. Prints the table last.
#
# usage: OUT=/some/dir scripts/gpu-fp32-run.sh [BIN_DIR]
#   BIN_DIR holds tinfer-bench-gemm and test_gemm_fp32 (default .devcarry, the folder the
#   build copies them to for carrying; build-gpu/bin also works). Writes at most 8 files to
#   $OUT: run.log tests.log sanitizer.log sgemm-tune.json bench.json bench-nt.json sgemm.png
#   table.md. FP32_RUN_SKIP="tests sanitizer tune" skips steps.
set -u -o pipefail
BIN=${1:-.devcarry}
OUT=${OUT:-$PWD/gpu-out}
SKIP=${FP32_RUN_SKIP:-}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
skip() { case " $SKIP " in *" $1 "*) return 0 ;; esac; return 1; }
t0=$(date +%s)
stamp() { echo "== [$(($(date +%s) - t0)) s] $*"; }

stamp "host $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv || true
for b in tinfer-bench-gemm test_gemm_fp32; do
  if [ ! -x "$BIN/$b" ]; then echo "error: $BIN/$b missing"; exit 1; fi
  if ldd "$BIN/$b" | grep -q "not found"; then
    echo "error: $BIN/$b has unresolved libraries:"; ldd "$BIN/$b" | grep "not found"; exit 1
  fi
done

stamp "resource usage of the ladder's kernels (registers, spills) from the fatbinary"
cuobjdump --dump-resource-usage "$BIN/tinfer-bench-gemm" 2>/dev/null | grep -E "Function|REG" | paste - - \
  | sed -E 's/.*Function ([^:]*):.*REG:([0-9]+) STACK:([0-9]+) SHARED:([0-9]+) LOCAL:([0-9]+).*/regs \2 stack \3 smem \4 local \5 \1/' \
  | grep -E "sgemm" | cut -c1-160 || true

if ! skip tests; then
  stamp "tests (full)"
  "$BIN/test_gemm_fp32" > "$OUT/tests.log" 2>&1
  echo "test_gemm_fp32 rc=$?"; grep -E "^(FAIL|PASS|skipped)" "$OUT/tests.log" | tail -15
fi

if ! skip sanitizer; then
  stamp "compute-sanitizer memcheck + racecheck (reduced test; racecheck on the shared-memory rungs)"
  {
    for tool in memcheck racecheck; do
      echo "---- $tool"
      if [ $tool = memcheck ]; then sel=""; else sel="--rung 3,7,9,10,11,12,13"; fi
      timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 "$BIN/test_gemm_fp32" --quick $sel \
        > "$OUT/san_$tool.tmp" 2>&1
      echo "$tool rc=$?"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Device not supported|========= (Error|Invalid)" \
        "$OUT/san_$tool.tmp" | head -20
      grep -E "^(PASS|FAIL)" "$OUT/san_$tool.tmp" | tail -3
      tail -c 20000 "$OUT/san_$tool.tmp"
      rm -f "$OUT/san_$tool.tmp"
    done
  } > "$OUT/sanitizer.log" 2>&1
  grep -E "rc=|SUMMARY|not supported" "$OUT/sanitizer.log" | head -10
fi

TUNE="$OUT/sgemm-tune.json"
if ! skip tune; then
  stamp "autotune"
  "$BIN/tinfer-bench-gemm" --tune-only --tune-file "$TUNE" > "$OUT/tune.tmp" 2>&1
  echo "tune rc=$?"; grep -E "winner|grid|written|error" "$OUT/tune.tmp"
  echo "(every candidate:)"; grep -vE "winner" "$OUT/tune.tmp" | sed 's/^/  /' >> "$OUT/run.log.tune"
  rm -f "$OUT/tune.tmp"
fi

stamp "bench NN: all rungs, key sizes + sweep"
"$BIN/tinfer-bench-gemm" --rung all --sizes 4096,4092,2048,8192 --sweep --layout nn \
  --tune-file "$TUNE" --max-slow 4096 --cap 0.3 --iters 5,100 \
  --json "$OUT/bench.json" --png "$OUT/sgemm.png" > "$OUT/bench_nn.tmp" 2>&1
echo "bench nn rc=$?"; grep -E "^(device|size|FAIL|error)" "$OUT/bench_nn.tmp"

stamp "bench NT (the runtime's layout): key sizes"
"$BIN/tinfer-bench-gemm" --rung 0,5,7,8,9,10,11,13 --sizes 4096,4092,2048,8192 --layout nt \
  --tune-file "$TUNE" --cap 0.3 --iters 5,100 --json "$OUT/bench-nt.json" > "$OUT/bench_nt.tmp" 2>&1
echo "bench nt rc=$?"; grep -E "^(size|FAIL|error)" "$OUT/bench_nt.tmp"
cat "$OUT/bench_nt.tmp" | sed -n '/^rung /,$p'
rm -f "$OUT/bench_nt.tmp"

if ! skip ncu; then
  stamp "ncu: cuBLAS, rung 10 and rung 13 (tuned tile) at 4096 NN, one launch each"
  for kre in xmma sgemm_pipelined sgemm_lean; do
    timeout 60 ncu --clock-control none -k regex:"$kre" --launch-count 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \
      --section WarpStateStats --section InstructionStats --section LaunchStats --section Occupancy \
      --metrics smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active \
      "$BIN/tinfer-bench-gemm" --rung 0,10,13 --sizes 4096 --iters 1,1 --cap 0 --tune-file "$TUNE" 2>&1 \
      | grep -vE "^==PROF==|^    -+|^\s*$" | head -120 >> "$OUT/run.log.tune"
  done
  echo "ncu rc=$?"
fi
# details go to run.log only (not the console tail, which ends with the table)
if [ -f "$OUT/run.log.tune" ]; then
  { echo "==== tune candidates and ncu"; cat "$OUT/run.log.tune"; } >> "$OUT/run.log"
  rm -f "$OUT/run.log.tune"
fi

stamp "table"
python3 scripts/gemm-table.py "$OUT/bench.json" "$OUT/bench-nt.json" > "$OUT/table.md"
sed -n '/^rung /,$p' "$OUT/bench_nn.tmp" | awk '$3==$4 && $4==$5 || NR==1' | head -120
rm -f "$OUT/bench_nn.tmp"
stamp "done"
cat "$OUT/table.md"

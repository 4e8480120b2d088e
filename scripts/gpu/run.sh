#!/usr/bin/env bash
# run.sh — the GPU check, run on the device from the repository root of a copy of this tree, with
# the folder scripts/gpu/pack.sh filled carried along:
#
#   run(command="bash scripts/gpu/run.sh .devcarry", carry=[".devcarry"])
#
# usage: bash scripts/gpu/run.sh [PACK_DIR] [PHASES]
#   PACK_DIR  holds pack.tar.gz (default .devcarry)
#   PHASES    comma-separated, run in this order: test, memcheck, racecheck, bench, long,
#             multi (default test,memcheck,racecheck,bench; long: the FP32 sweep, its table,
#             ncu; multi: tensor parallelism over several GPUs, the `multi` and `multibench`
#             lines: on a machine of 2+ GPUs, `bash scripts/gpu/run.sh .devcarry test,multi`)
# Unpacks, runs the lines of the pack's tests.txt (scripts/gpu/tests.txt) phase by phase: every
# test; compute-sanitizer memcheck / racecheck where it exists; the benchmarks. Each step has its
# own time limit, and the run as a whole GPU_RUN_BUDGET_S seconds (default 540): steps that would
# start later are reported SKIP. Without a GPU the tests report SKIP (exit 77) and the sanitizer
# and benchmark steps are skipped. Writes to $OUT (default PACK_DIR/out): gpu-logs.tar.gz (every
# log, the benchmarks' JSON and charts, summary.json, table.txt), summary.json and table.txt.
# Prints a short table last: step, PASS/FAIL/SKIP, seconds, key numbers.
# GPU_RUN_STEPS (comma-separated step names, e.g. gemm_bf16,gpu_model,model_smollm2,server_bench)
# runs only those steps of the phases asked for: a short call when device time is scarce.
# Exit status: 1 when a step failed, else 0.
set -u -o pipefail
SRC=${1:-.devcarry}
PHASES=${2:-test,memcheck,racecheck,bench}
OUT=${OUT:-$SRC/out}
BUDGET=${GPU_RUN_BUDGET_S:-540}
STEPS=${GPU_RUN_STEPS:-}
REPO=$PWD
t0=$(date +%s)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
LOG=$WORK/logs
mkdir -p "$LOG"

# ---- results: one row per step ----
r_name=() r_status=() r_secs=() r_key=()
record() { # name status seconds key
    r_name+=("$1") r_status+=("$2") r_secs+=("$3") r_key+=("$4")
    printf '%-28s %-4s %4ss  %s\n' "$1" "$2" "$3" "$4"
}
json_str() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\000-\037'; }
finish() { # writes summary.json and table.txt, tars the logs, prints the table; exits
    local fails=0 i
    {
        printf '{\n  "device": "%s",\n  "pack": "%s",\n  "phases": "%s",\n  "seconds": %d,\n  "steps": [\n' \
            "$(json_str "${DEVICE:-none}")" "$(json_str "$(head -1 "$PACK/MANIFEST" 2>/dev/null)")" \
            "$(json_str "$PHASES")" $(($(date +%s) - t0))
        for i in "${!r_name[@]}"; do
            printf '    {"name": "%s", "status": "%s", "seconds": %s, "key": "%s"}%s\n' "$(json_str "${r_name[$i]}")" \
                "${r_status[$i]}" "${r_secs[$i]}" "$(json_str "${r_key[$i]}")" "$([ "$i" -lt $((${#r_name[@]} - 1)) ] && echo ,)"
        done
        printf '  ]\n}\n'
    } > "$LOG/summary.json"
    {
        echo "== GPU check: ${DEVICE:-no GPU}; $(head -1 "$PACK/MANIFEST" 2>/dev/null || echo 'no pack')"
        printf '%-28s %-4s %5s  %s\n' step result time "key numbers"
        for i in "${!r_name[@]}"; do
            printf '%-28s %-4s %4ss  %s\n' "${r_name[$i]}" "${r_status[$i]}" "${r_secs[$i]}" "${r_key[$i]:0:90}"
            [ "${r_status[$i]}" = FAIL ] && fails=$((fails + 1))
        done
        echo "== $fails failed, ${#r_name[@]} steps, $(($(date +%s) - t0)) s; logs: $OUT/gpu-logs.tar.gz"
    } > "$LOG/table.txt"
    cp "$LOG/summary.json" "$LOG/table.txt" "$OUT/"
    tar -C "$WORK" -czf "$OUT/gpu-logs.tar.gz" logs
    echo
    cat "$LOG/table.txt"
    [ "$fails" = 0 ]
    exit $?
}

# ---- unpack ----
PACK=$WORK/pack
# libraries pack.sh bundled (cJSON, PCRE2, OpenMP's runtime) for the model-level binaries
export LD_LIBRARY_PATH="$PACK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ ! -f "$SRC/pack.tar.gz" ]; then
    record unpack FAIL 0 "$SRC/pack.tar.gz missing: run scripts/gpu/pack.sh first"
    finish
fi
if ! tar -xzf "$SRC/pack.tar.gz" -C "$WORK"; then
    record unpack FAIL 0 "cannot unpack $SRC/pack.tar.gz"
    finish
fi
cat "$PACK/MANIFEST"

# ---- the device ----
DEVICE=
if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
    nvidia-smi > "$LOG/nvidia-smi.txt" 2>&1
    DEVICE=$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader | head -1)
    echo "device: $DEVICE"
else
    echo "no GPU (nvidia-smi finds none): the tests report SKIP, sanitizers and benchmarks are skipped"
fi
SANITIZER=$(command -v compute-sanitizer || true)
[ -z "$SANITIZER" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && SANITIZER=/usr/local/cuda/bin/compute-sanitizer
NCU=$(command -v ncu || true)
broken=
for b in "$PACK"/bin/*; do
    if ldd "$b" 2> /dev/null | grep -q 'not found'; then
        echo "$(basename "$b"): unresolved libraries: $(ldd "$b" | grep 'not found' | awk '{print $1}' | tr '\n' ' ')"
        broken="$broken $(basename "$b")"
    fi
done
if [ -n "$DEVICE" ]; then # registers and spills of the kernels, from the fatbinaries (for the logs)
    for b in "$PACK"/bin/*; do
        { echo "==== $(basename "$b")"; cuobjdump --dump-resource-usage "$b" 2>&1 | grep -E 'Function|REG'; } \
            >> "$LOG/resource-usage.txt" 2>&1
    done
fi

# ---- the list ----
step_on() { [ -z "$STEPS" ] && return 0; case ",$STEPS," in *",$1,"*) return 0 ;; esac; return 1; }
l_kind=() l_name=() l_limit=() l_cmd=()
while read -r kind name limit rest; do
    case "$kind" in '' | \#*) continue ;; esac
    case "$kind" in data | bin | modeldir) continue ;; esac
    step_on "$name" || continue
    l_kind+=("$kind") l_name+=("$name") l_limit+=("$limit") l_cmd+=("${rest:-}")
done < "$PACK/tests.txt"

expand() { # the arguments with {OUT} and {PACK} replaced
    local s=$1
    s=${s//\{OUT\}/$LOG}
    s=${s//\{PACK\}/$PACK}
    echo "$s"
}
remaining() { echo $((BUDGET - ($(date +%s) - t0))); }
# Steps write their logs line by line (stdbuf, where there is one): a step its time limit kills
# keeps what it printed, instead of the unwritten block buffer of a program printing to a file.
LINEBUF=
command -v stdbuf > /dev/null 2>&1 && LINEBUF="stdbuf -oL -eL"
# run_step LOGFILE LIMIT CMD...: runs in the pack folder; sets rc and secs
run_step() {
    local logf=$1 lim=$2
    shift 2
    local left
    left=$(remaining)
    [ "$lim" -gt "$left" ] && lim=$left
    local s0
    s0=$(date +%s)
    (cd "$PACK" && timeout -k 10 "$lim" $LINEBUF "$@") > "$logf" 2>&1
    rc=$?
    secs=$(($(date +%s) - s0))
}
binary_broken() { case " $broken " in *" $1 "*) return 0 ;; esac; return 1; }
phase_on() { case ",$PHASES," in *",$1,"*) return 0 ;; esac; return 1; }
last_line() { grep -v '^[[:space:]]*$' "$1" | tail -1 | cut -c1-90; }

declare -A test_status test_rc
# ---- phase test (and multi: its `multi` lines) ----
run_tests() { # kind
    local i name bin args st key
    for i in "${!l_kind[@]}"; do
        [ "${l_kind[$i]}" = "$1" ] || continue
        name=${l_name[$i]}
        read -r bin args <<< "$(expand "${l_cmd[$i]}")"
        if binary_broken "$bin"; then
            record "$name" FAIL 0 "$bin: unresolved libraries (ldd)"
            test_status[$name]=FAIL
            continue
        fi
        if [ "$(remaining)" -lt 10 ]; then
            record "$name" SKIP 0 "time budget spent"
            test_status[$name]=SKIP
            continue
        fi
        # shellcheck disable=SC2086
        run_step "$LOG/test-$name.log" "${l_limit[$i]}" "bin/$bin" $args
        case $rc in
        0) st=PASS ;;
        77) st=SKIP ;;
        124 | 137) st=FAIL ;;
        *) st=FAIL ;;
        esac
        key=$(last_line "$LOG/test-$name.log")
        [ $rc = 124 ] || [ $rc = 137 ] && key="timed out after $secs s; $key"
        [ $st = FAIL ] && [ $rc != 124 ] && [ $rc != 137 ] && key="rc $rc; $(grep -m3 '^FAIL' "$LOG/test-$name.log" | tr '\n' ' ' | cut -c1-70)${key:0:40}"
        record "$name" $st "$secs" "$key"
        test_status[$name]=$st
        test_rc[$name]=$rc
    done
}
phase_on test && run_tests test

# ---- phases memcheck, racecheck ----
sanitize() { # tool
    local tool=$1 i j name line lim cmd
    for i in "${!l_kind[@]}"; do
        [ "${l_kind[$i]}" = test ] || [ "${l_kind[$i]}" = "$tool" ] || continue
        name=${l_name[$i]}
        # memcheck: every test, with its own memcheck line where it has one; racecheck: its lines
        if [ "${l_kind[$i]}" = test ]; then
            [ "$tool" = memcheck ] || continue
            line=
            for j in "${!l_kind[@]}"; do
                [ "${l_kind[$j]}" = memcheck ] && [ "${l_name[$j]}" = "$name" ] && line=$j
            done
            [ -n "$line" ] && continue # run at its own line
        fi
        [ "${l_limit[$i]}" = - ] && continue
        lim=${l_limit[$i]}
        cmd=$(expand "${l_cmd[$i]}")
        read -r bin args <<< "$cmd"
        if [ -z "$DEVICE" ]; then
            record "$tool $name" SKIP 0 "no GPU"
        elif [ -z "$SANITIZER" ]; then
            record "$tool $name" SKIP 0 "compute-sanitizer not found"
        elif binary_broken "$bin"; then
            record "$tool $name" SKIP 0 "$bin: unresolved libraries (ldd)"
        elif [ "${test_status[$name]:-}" = SKIP ] || [ "${test_rc[$name]:-0}" = 124 ] || [ "${test_rc[$name]:-0}" = 137 ]; then
            record "$tool $name" SKIP 0 "the test skipped or hung"
        elif [ "$(remaining)" -lt 10 ]; then
            record "$tool $name" SKIP 0 "time budget spent"
        else
            # shellcheck disable=SC2086
            run_step "$LOG/$tool-$name.log" "$lim" "$SANITIZER" --tool "$tool" --error-exitcode 9 "bin/$bin" $args
            local summary
            summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Device not supported' "$LOG/$tool-$name.log" | tail -1 | sed 's/^========= //')
            case $rc in
            0) record "$tool $name" PASS "$secs" "$summary" ;;
            77) record "$tool $name" SKIP "$secs" "$(last_line "$LOG/$tool-$name.log")" ;;
            124 | 137) record "$tool $name" FAIL "$secs" "timed out after $secs s" ;;
            *) record "$tool $name" FAIL "$secs" "rc $rc; ${summary:-$(last_line "$LOG/$tool-$name.log")}" ;;
            esac
        fi
    done
}
phase_on memcheck && sanitize memcheck
phase_on racecheck && sanitize racecheck

# ---- phases bench, long ----
bench_key() { # log: probe-timeline's step, tinfer-bench's tok/s (JSON), else the rows,
    # mismatches and the device line's copy rate
    local f=$1
    if grep -q '^per step: host period' "$f"; then
        sed -n 's/^per step: host period \([0-9.]*\) us.*GPU span \([0-9.]*\) us.*GPU idle [0-9.]* us (\([0-9]*%\).*/step \1 us, kernels \2 us, GPU idle \3/p' "$f" | head -1
    elif grep -q '"avg_ts"' "$f"; then
        grep -o '"test": "[^"]*"[^}]*"avg_ts": [0-9]*' "$f" |
            sed 's/"test": "\([^"]*\)".*"avg_ts": \([0-9]*\)/\1 \2 tok\/s/' | paste -sd, - | sed 's/,/, /g' | cut -c1-110
    else
        printf '%s rows, %s mismatches' "$(grep -cE '^[a-z0-9_]+ ' "$f")" "$(grep -c MISMATCH "$f")"
        grep -m1 -o 'copy [0-9]* GB/s' "$f" | sed 's/^/, /'
    fi
}
run_benches() { # phase kinds...
    local i name kind cmd bin args lim
    for i in "${!l_kind[@]}"; do
        kind=${l_kind[$i]}
        case " $* " in *" $kind "*) ;; *) continue ;; esac
        name=${l_name[$i]}
        lim=${l_limit[$i]}
        cmd=$(expand "${l_cmd[$i]}")
        local regex=
        if [ "$kind" = profile ]; then read -r regex cmd <<< "$cmd"; fi
        read -r bin args <<< "$cmd"
        if [ -z "$DEVICE" ]; then
            record "$name" SKIP 0 "no GPU"
            continue
        elif binary_broken "$bin"; then
            record "$name" FAIL 0 "$bin: unresolved libraries (ldd)"
            continue
        elif [ "$kind" = profile ] && [ -z "$NCU" ]; then
            record "$name" SKIP 0 "ncu not found"
            continue
        elif [ "$(remaining)" -lt 10 ]; then
            record "$name" SKIP 0 "time budget spent"
            continue
        fi
        if [ "$kind" = profile ]; then
            # shellcheck disable=SC2086
            run_step "$LOG/$name.log" "$lim" "$NCU" --clock-control none -k "regex:$regex" --launch-count 1 \
                --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \
                --section WarpStateStats --section InstructionStats --section LaunchStats --section Occupancy \
                "bin/$bin" $args
        else
            # shellcheck disable=SC2086
            run_step "$LOG/$name.log" "$lim" "bin/$bin" $args
        fi
        case $rc in
        0) record "$name" PASS "$secs" "$(bench_key "$LOG/$name.log")" ;;
        77) record "$name" SKIP "$secs" "$(last_line "$LOG/$name.log")" ;;
        124 | 137) record "$name" FAIL "$secs" "timed out after $secs s" ;;
        *) record "$name" FAIL "$secs" "rc $rc; $(last_line "$LOG/$name.log")" ;;
        esac
    done
}
# ---- the real SmolLM2 (scripts/gpu/real-model.sh stashed its GGUF in two earlier calls) ----
# Greedy text on the GPU = the CPU's for 32 tokens, for three prompts (both backends run here).
real_model() {
    local st=$REPO/.devstash model=$WORK/smollm2
    if [ ! -f "$st/smollm2.gguf.part1" ] || [ ! -f "$st/smollm2.gguf.part2" ]; then
        record real_model SKIP 0 "no stashed GGUF (scripts/gpu/real-model.sh)"
        return
    fi
    if [ -z "$DEVICE" ]; then
        record real_model SKIP 0 "no GPU"
        return
    fi
    cat "$st/smollm2.gguf.part1" "$st/smollm2.gguf.part2" > "$WORK/smollm2.gguf"
    if [ "$(sha256sum < "$WORK/smollm2.gguf" | cut -d' ' -f1)" != "$(cat "$st/smollm2.gguf.sha256")" ]; then
        record real_model FAIL 0 "the stashed halves do not make the pinned GGUF (sha256)"
        return
    fi
    if ! "$PACK/bin/tinfer-convert" "$WORK/smollm2.gguf" "$model" > "$LOG/real_model.log" 2>&1; then
        record real_model FAIL 0 "tinfer-convert: $(last_line "$LOG/real_model.log")"
        return
    fi
    # Greedy text, GPU against CPU, 32 tokens of 3 prompts: the GPU's activations are BF16 and
    # the CPU's F32, so a near tie may go the other way (counted and shown, not failed). The
    # logits decide: one prefill of a text with logits at every position, CUDA against the CPU;
    # the argmax must agree at >= 95% of 512 positions (Q8_0 against BF16 agrees at 96.9%; a
    # broken kernel at a fraction), and where it differs the CPU's margin is printed.
    local s0 bad=0 same=0 p agree
    s0=$(date +%s)
    for p in "What is a GPU?" "The capital of France is" "Once upon a time"; do
        for be in cpu cuda; do
            "$PACK/bin/tinfer-generate" -m "$model" -p "$p" -n 32 --temp 0 --backend "$be" \
                > "$WORK/gen-$be.txt" 2>> "$LOG/real_model.log" || bad=1
        done
        { echo "== $p"; echo "-- cpu:"; cat "$WORK/gen-cpu.txt"; echo "-- cuda:"; cat "$WORK/gen-cuda.txt"; } \
            >> "$LOG/real_model.log"
        cmp -s "$WORK/gen-cpu.txt" "$WORK/gen-cuda.txt" && same=$((same + 1))
    done
    "$PACK/bin/q8_accuracy" "$model@cpu" "$model@cuda" "$PACK/ARCHITECTURE.md" 512 \
        > "$WORK/logits.txt" 2>> "$LOG/real_model.log" || bad=1
    cat "$WORK/logits.txt" >> "$LOG/real_model.log"
    agree=$(sed -n 's/.*argmax agrees at [0-9]* of [0-9]* positions (\([0-9.]*\)%).*/\1/p' "$WORK/logits.txt")
    if [ -z "$agree" ] || awk -v a="$agree" 'BEGIN { exit !(a < 95) }'; then bad=1; fi
    local msg="greedy 32 tokens: GPU = CPU on $same of 3 prompts; logits argmax agrees ${agree:-?}%"
    if [ "$bad" = 0 ]; then
        record real_model PASS $(($(date +%s) - s0)) "$msg"
    else
        record real_model FAIL $(($(date +%s) - s0)) "$msg (or a run failed): see real_model.log"
    fi
    if phase_on bench; then
        run_step "$LOG/real_model_bench.log" 120 bin/tinfer-bench -m "$model" -p 512 -n 128 \
            --batch 1,64 -r 3 --backend cuda
        if [ "$rc" = 0 ]; then
            record real_model_bench PASS "$secs" "$(grep -E 'tg128 ' "$LOG/real_model_bench.log" | head -1 | cut -c1-80)"
        else
            record real_model_bench FAIL "$secs" "rc $rc; $(last_line "$LOG/real_model_bench.log")"
        fi
    fi
}
phase_on test && step_on real_model && real_model

# ---- the server on the GPU: scripts/bench-server.sh with the pack's tinfer-server and
# tinfer-loadgen, random weights of SmolLM2's config (its real tokenizer), 1-64 streams ----
server_bench() {
    local model=$PACK/build/models/smollm2-135m-instruct
    if [ -z "$DEVICE" ]; then
        record server_bench SKIP 0 "no GPU"
        return
    elif [ ! -x "$PACK/bin/tinfer-server" ] || [ ! -x "$PACK/bin/tinfer-loadgen" ]; then
        record server_bench SKIP 0 "tinfer-server / tinfer-loadgen not packed"
        return
    elif [ ! -f "$model/tokenizer.json" ]; then
        record server_bench SKIP 0 "no tokenizer packed (run scripts/get-model.sh before pack.sh)"
        return
    elif binary_broken tinfer-server || binary_broken tinfer-loadgen; then
        record server_bench FAIL 0 "tinfer-server / tinfer-loadgen: unresolved libraries (ldd)"
        return
    elif [ "$(remaining)" -lt 60 ]; then
        record server_bench SKIP 0 "time budget spent"
        return
    fi
    local s0
    s0=$(date +%s)
    TINFER_BIN_DIR=$PACK/bin TINFER_BENCH_OUT=$LOG/bench-server timeout -k 10 $(($(remaining) - 5)) \
        bash "$REPO/scripts/bench-server.sh" "$model" --random-weights --backend cuda \
        --streams "1 8 32 64" --requests 4 --max-tokens 128 > "$LOG/server_bench.log" 2>&1
    rc=$?
    if [ "$rc" = 0 ]; then
        record server_bench PASS $(($(date +%s) - s0)) "$(grep -E '^\| 64 ' "$LOG/server_bench.log" |
            awk -F'|' '{printf "64 streams: %s tok/s, TTFT p50 %s ms", $4, $5}')"
    else
        record server_bench FAIL $(($(date +%s) - s0)) "rc $rc; $(last_line "$LOG/server_bench.log")"
    fi
}

phase_on bench && run_benches bench
phase_on bench && step_on server_bench && server_bench
phase_on long && run_benches longbench profile
# several GPUs: tensor parallelism's tests (skipped on fewer GPUs) and benchmarks
phase_on multi && run_tests multi
phase_on multi && run_benches multibench

# ---- headline rows (as in gemm/tc/README.md and gemm/decode/README.md) and the FP32 table ----
{
    if [ -s "$LOG/bf16_square.log" ]; then
        echo "== square (wgmma vs cuBLAS) =="
        grep '^square' "$LOG/bf16_square.log" | grep -E 'wgmma|wmma' |
            awk '{printf "M=N=K=%-5s %-10s %9s us %6s TF/s %7s of cuBLAS\n",$3,$6,$7,$9,$13}'
    fi
    if [ -s "$LOG/bf16_model.log" ]; then
        echo "== decode M=1..16 (auto) on Llama-3-8B =="
        grep '^model' "$LOG/bf16_model.log" | grep llama | grep ' auto ' |
            awk '$3<=16 {printf "%-13s M=%-3s %8s us %6s GB/s %7s of copy %7s of cuBLAS\n",$2,$3,$7,$11,$15,$13}'
        echo "== decode rungs 05 / 06 vs cuBLAS, M = 1 and 8 (Llama-3-8B) =="
        grep '^model' "$LOG/bf16_model.log" | grep llama | grep -E 'gemv05|gemv06|cublas' |
            awk '$3==1 || $3==8 {printf "%-13s M=%-3s %-15s %8s us %6s GB/s %7s of copy\n",$2,$3,$6,$7,$11,$15}'
        echo "== SmolLM2 (auto vs cuBLAS, us) =="
        grep '^model' "$LOG/bf16_model.log" | grep smol | grep ' auto ' |
            awk '{printf "%-12s M=%-5s %8s us %7s of cuBLAS\n",$2,$3,$7,$13}'
    fi
    if [ -s "$LOG/sgemm_confirm.log" ]; then
        echo "== FP32 confirmation (rung 10 vs cuBLAS) =="
        tail -n 16 "$LOG/sgemm_confirm.log"
    fi
} > "$LOG/headlines.txt" 2>&1
if [ -s "$LOG/bench.json" ] && [ -s "$LOG/bench-nt.json" ] && command -v python3 > /dev/null; then
    python3 "$REPO/scripts/gemm-table.py" "$LOG/bench.json" "$LOG/bench-nt.json" > "$LOG/table.md" 2>&1 &&
        { echo "== FP32 ladder (table.md) =="; cat "$LOG/table.md"; } >> "$LOG/headlines.txt"
fi
[ -s "$LOG/headlines.txt" ] && { echo; cat "$LOG/headlines.txt"; }
finish

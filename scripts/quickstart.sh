#!/usr/bin/env bash
# The README's first command: install the build dependencies, build tinfer, fetch and convert
# SmolLM2-135M-Instruct, and generate text with it (on the GPU when one is usable, else the CPU).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${TINFER_BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)

bash scripts/install-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$jobs"
bash scripts/get-model.sh "$build"

prompt=${1:-"Write a short story about a robot who learns to paint."}
"$build/bin/tinfer-generate" -m "$build/models/smollm2-135m-instruct" --chat -n 128 -p "$prompt"

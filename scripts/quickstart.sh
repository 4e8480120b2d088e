#!/usr/bin/env bash
# The README's first command: install the build dependencies, build tinfer, fetch and convert
# SmolLM2-135M-Instruct, and generate text with it (on the GPU where one is usable, else the
# CPU: tinfer-generate takes --backend auto).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build=${TINFER_BUILD_DIR:-build}
prompt=${1:-"Write a short story about a robot who learns to paint."}
"$build/bin/tinfer-generate" -m "$build/models/smollm2-135m-instruct" --chat -n 128 -p "$prompt"

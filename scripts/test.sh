#!/usr/bin/env bash
# The README's test command: install dependencies, build, fetch+convert the real model (cached),
# and run every test. GPU tests report "skipped" where there is no usable GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${TINFER_BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)

bash scripts/install-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$jobs"
bash scripts/get-model.sh "$build"
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"

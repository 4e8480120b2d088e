#!/usr/bin/env bash
# The README's test command: install dependencies, build, fetch+convert the real model (cached),
# install gguf-py for the converter cross-check (scripts/py-tools.sh), and run every test (extra
# arguments go to ctest, e.g. -L unit). GPU tests report "skipped" where there is no usable GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/py-tools.sh "${TINFER_BUILD_DIR:-build}"
bash scripts/build.sh
ctest --test-dir "${TINFER_BUILD_DIR:-build}" --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@"

#!/usr/bin/env bash
# Installs the build dependencies (Debian packages, only those missing; NCCL's pinned wheel where
# CUDA is, scripts/nccl.sh), configures and builds
# tinfer into ${TINFER_BUILD_DIR:-build}, and fetches + converts SmolLM2-135M-Instruct into
# <build>/models/ (cached; a no-op when already there). Shared by quickstart.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TINFER_BUILD_DIR:-build}
bash scripts/install-deps.sh
bash scripts/nccl.sh "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"
bash scripts/get-model.sh "$build"

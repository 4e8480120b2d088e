#!/usr/bin/env bash
# Fetches NCCL (header and libnccl.so.2, from NVIDIA's pinned PyPI wheel nvidia-nccl-cu13) into
# BUILD_DIR/nccl/{include,lib}, where CMake looks for it (TINFER_NCCL_ROOT): tensor parallelism
# over several GPUs (tinfer_model_params.tp > 1 on CUDA) needs it; a build without it runs tp 1.
# Only when a CUDA compiler is there (NCCL is of no use to a CPU build); cached: a no-op when the
# pinned version is already unpacked. A failed download is a warning, not an error.
set -euo pipefail
build=${1:?usage: nccl.sh BUILD_DIR}
spec="nvidia-nccl-cu13==2.28.3"
dest="$build/nccl"
stamp="$dest/tinfer-stamp"
if ! command -v nvcc > /dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  exit 0
fi
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec" ] && [ -f "$dest/lib/libnccl.so.2" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! python3 -m pip download -q --disable-pip-version-check --no-deps -d "$tmp" "$spec" >&2; then
  echo "nccl: warning: could not download $spec (no network?): building without NCCL (tp 1 only)" >&2
  exit 0
fi
rm -rf "$dest"
mkdir -p "$dest"
python3 -m zipfile -e "$tmp"/*.whl "$tmp/whl"
cp -r "$tmp/whl/nvidia/nccl/include" "$tmp/whl/nvidia/nccl/lib" "$dest/"
echo "$spec" > "$stamp"
echo "nccl: $spec in $dest" >&2

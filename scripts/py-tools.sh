#!/usr/bin/env bash
# Makes <build>/pytools, a Python venv with gguf-py (and numpy), the reference the converter test
# convert_vs_gguf_py compares tinfer-convert's dequantization with. scripts/test.sh runs it before
# configuring; the tests use that venv's Python when it exists. Cached: a no-op when the pinned
# version is already there.
set -euo pipefail
build=${1:?usage: py-tools.sh BUILD_DIR}
spec="gguf==0.19.0"
venv="$build/pytools"
stamp="$venv/tinfer-stamp"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec" ] && "$venv/bin/python3" -c "import gguf, numpy" 2>/dev/null; then
  exit 0
fi
rm -rf "$venv"
mkdir -p "$build"
python3 -m venv "$venv" || { echo "error: python3 -m venv failed (Debian: apt install python3-venv)" >&2; exit 1; }
if ! "$venv/bin/python3" -m pip install -q --disable-pip-version-check "$spec" >&2; then
  rm -rf "$venv"
  echo "error: could not install $spec with pip (no network?)" >&2
  exit 1
fi
echo "$spec" > "$stamp"
echo "py-tools: $spec in $venv" >&2

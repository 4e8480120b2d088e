#!/usr/bin/env bash
# pack.sh — builds the GPU test and benchmark binaries named in scripts/gpu/tests.txt and packs
# them, stripped, with the data paths the list names (fixtures, the tiny model dirs) and the list
# itself into DEST/pack.tar.gz (gzip: the device has no zstd) for scripts/gpu/run.sh, which runs
# them on the device without cmake. The binaries need only cudart and cuBLAS there.
#
# usage: bash scripts/gpu/pack.sh [BUILD_DIR] [DEST]
#   BUILD_DIR  build folder (default build-gpu; configured with -DTINFER_CUDA=ON and sm_90a machine
#              code only when it has no CMakeCache.txt yet, else built as configured: the lent
#              GPUs are sm_90, and without the portable PTX the pack is a fifth smaller, 42 MB,
#              so another build's libtinfer.so.0 (16 MB gzipped) fits beside it in one call's
#              carry: an A/B of two builds of the library, its binaries run under each
#              LD_LIBRARY_PATH in turn)
#   DEST       the folder the device run carries (default .devcarry, ignored by git)
# Fails when a ctest test with label gpu has no `test` line in the list (gpu-multi: no `multi`
# line), or when the tarball is larger than 60 MiB.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-gpu}
DEST=${2:-.devcarry}
LIST=scripts/gpu/tests.txt
MAX_MIB=60

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTINFER_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a-real
fi

# the binaries (field 4; field 5 for profile lines) and data paths of the list
bins=$(awk '!/^[[:space:]]*(#|$)/ {
    if ($1 == "profile") print $5;
    else if ($1 == "bin") print $2;
    else if ($1 ~ /^(test|memcheck|racecheck|bench|longbench|multi|multibench)$/ && $3 != "-") print $4 }' "$LIST" | sort -u)
data=$(awk '$1 == "data" {print $2}' "$LIST")
if [ -z "$bins" ]; then
    echo "error: $LIST names no binaries" >&2
    exit 1
fi

# shellcheck disable=SC2086
cmake --build "$BUILD" -j"$(nproc)" --target $bins

# every gpu-labelled ctest test must be in the list (the list is what the device runs), once
dups=$(awk '$1 == "test" {print $2}' "$LIST" | sort | uniq -d)
if [ -n "$dups" ]; then
    echo "error: tests listed twice in $LIST: $dups" >&2
    exit 1
fi
for pair in gpu:test gpu-multi:multi; do # ctest label : the list's line kind
    label=${pair%%:*} kind=${pair#*:}
    listed=$(awk -v k="$kind" '$1 == k {print $2}' "$LIST" | sort -u)
    missing=$(ctest --test-dir "$BUILD" -N -L "^$label\$" | sed -n 's/^ *Test *#[0-9]*: *//p' | sort -u | comm -23 - <(echo "$listed"))
    if [ -n "$missing" ]; then
        echo "error: ctest tests with label $label missing from $LIST (add a '$kind' line each):" >&2
        echo "$missing" >&2
        exit 1
    fi
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/pack/bin"
for b in $bins; do
    if [ ! -x "$BUILD/bin/$b" ]; then
        echo "error: $BUILD/bin/$b was not built" >&2
        exit 1
    fi
    cp "$BUILD/bin/$b" "$stage/pack/bin/"
    strip --strip-unneeded "$stage/pack/bin/$b"
done
# Libraries the device image may lack (libtinfer and what it needs: cJSON, PCRE2, OpenMP's
# runtime; the server's libmicrohttpd and GnuTLS): every library the binaries resolve here is
# copied into pack/lib, which run.sh puts on LD_LIBRARY_PATH, except the C library's own and
# the CUDA runtime, cuBLAS, NCCL (214 MB; the device image has it) and the driver, which stay the
# device's.
mkdir -p "$stage/pack/lib"
for b in $bins; do
    ldd "$BUILD/bin/$b" | awk '$3 ~ /^\// {print $3}' |
        grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux[^/]*)\.so|/lib(cuda|cudart|cublas|cublasLt|nccl|nvidia-[^/]*|nvrtc|nvJitLink)\.so' || true
done | sort -u | while read -r lib; do
    cp -L "$lib" "$stage/pack/lib/"
done
for d in $data; do
    if [ ! -e "$d" ]; then
        echo "error: data path $d (in $LIST) does not exist" >&2
        exit 1
    fi
    cp -r --parents "$d" "$stage/pack/"
done
# modeldir lines: files of a model directory scripts/get-model.sh downloads (not in git), packed
# when present; without them the steps that need them report SKIP on the device
awk '$1 == "modeldir"' "$LIST" | while read -r _ dir files; do
    for f in $files; do
        if [ -f "$dir/$f" ]; then
            cp --parents "$dir/$f" "$stage/pack/"
        else
            echo "note: $dir/$f not found (scripts/get-model.sh makes it): not packed" >&2
        fi
    done
done
cp "$LIST" "$stage/pack/tests.txt"
{
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "packed $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
    echo "build $BUILD: $(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$BUILD/CMakeCache.txt") $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")"
    nvcc --version 2>/dev/null | tail -1 || true
} > "$stage/pack/MANIFEST"

mkdir -p "$DEST"
tar -C "$stage" -cf - pack | gzip -9 > "$DEST/pack.tar.gz.tmp" # -9: 1-2 MiB under the default
size=$(stat -c %s "$DEST/pack.tar.gz.tmp")
if [ "$size" -gt $((MAX_MIB * 1024 * 1024)) ]; then
    rm -f "$DEST/pack.tar.gz.tmp"
    echo "error: the pack is $((size / 1024 / 1024)) MiB, over $MAX_MIB MiB" >&2
    exit 1
fi
mv "$DEST/pack.tar.gz.tmp" "$DEST/pack.tar.gz"
echo "$DEST/pack.tar.gz: $((size / 1024)) KiB; binaries: $(tr "\n" " " <<< "$bins")"

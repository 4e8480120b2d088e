#!/usr/bin/env bash
# ab.sh — an A/B of two builds of libtinfer in ONE device call: the pack's binaries run a command
# in alternating rounds under a baseline build's library (A) and under the pack's own (B), on the
# same machine, so the two are compared where they ran together (an H100 and an H200 differ, and
# so do two H100s).
#
# Here, on the baseline commit, then on the change:
#   bash scripts/gpu/ab.sh base build-gpu .devcarry   # gzips build-gpu's libtinfer.so.0 into
#                                                      # .devcarry/base-libtinfer.so.0.gz (16 MB)
#   bash scripts/gpu/pack.sh build-gpu .devcarry       # the change's pack (42 MB with sm_90a only)
# There (run from the repository root, .devcarry carried):
#   bash scripts/gpu/ab.sh run .devcarry ROUNDS COMMAND...
# e.g. `bash scripts/gpu/ab.sh run .devcarry 2 tinfer-bench -m tests/model/fixtures/config-llama3-8b
# --random-weights -p 0 -n 128 -r 3 --backend cuda --no-peak`. COMMAND's first word is a binary of
# the pack. Each round prints "== A round r" / "== B round r" and the command's output; the
# outputs also go to $OUT/ab.log when OUT is set. Only libtinfer differs between A and B: a change
# to the binaries themselves, or to libtinfer_lab, needs two packs (two calls).
set -euo pipefail
mode=${1:-}
case "$mode" in
base)
    BUILD=${2:?usage: ab.sh base BUILD_DIR DEST}
    DEST=${3:?usage: ab.sh base BUILD_DIR DEST}
    lib="$BUILD/lib/libtinfer.so.0"
    [ -e "$lib" ] || { echo "error: $lib not built (cmake --build $BUILD --target tinfer_shared)" >&2; exit 1; }
    mkdir -p "$DEST"
    gzip -9c "$lib" > "$DEST/base-libtinfer.so.0.gz"
    echo "$DEST/base-libtinfer.so.0.gz: $(($(stat -c %s "$DEST/base-libtinfer.so.0.gz") / 1024)) KiB," \
        "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
    ;;
run)
    SRC=${2:?usage: ab.sh run PACK_DIR ROUNDS COMMAND...}
    ROUNDS=${3:?usage: ab.sh run PACK_DIR ROUNDS COMMAND...}
    shift 3
    [ $# -ge 1 ] || { echo "usage: ab.sh run PACK_DIR ROUNDS COMMAND..." >&2; exit 2; }
    case "$ROUNDS" in '' | *[!0-9]*) echo "error: ROUNDS '$ROUNDS' is not a number" >&2; exit 2 ;; esac
    [ -f "$SRC/pack.tar.gz" ] || { echo "error: $SRC/pack.tar.gz missing (scripts/gpu/pack.sh)" >&2; exit 1; }
    [ -f "$SRC/base-libtinfer.so.0.gz" ] || { echo "error: $SRC/base-libtinfer.so.0.gz missing (ab.sh base)" >&2; exit 1; }
    WORK=$(mktemp -d)
    trap 'rm -rf "$WORK"' EXIT
    tar -C "$WORK" -xzf "$SRC/pack.tar.gz"
    mkdir -p "$WORK/base"
    gzip -dc "$SRC/base-libtinfer.so.0.gz" > "$WORK/base/libtinfer.so.0"
    bin="$WORK/pack/bin/$1"
    shift
    [ -x "$bin" ] || { echo "error: $(basename "$bin") is not a binary of the pack" >&2; exit 1; }
    log=${OUT:+$OUT/ab.log}
    head -1 "$WORK/pack/MANIFEST" | sed 's/^/B: /' | tee ${log:+-a "$log"}
    rc=0
    for r in $(seq 1 "$ROUNDS"); do
        for v in A B; do
            # A: the baseline's libtinfer first on the path, the pack's other libraries after it
            libs="$WORK/pack/lib"
            [ "$v" = A ] && libs="$WORK/base:$libs"
            echo "== $v round $r" | tee ${log:+-a "$log"}
            LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin" "$@" 2>&1 |
                tee ${log:+-a "$log"} || rc=1
        done
    done
    exit $rc
    ;;
*)
    echo "usage: ab.sh base BUILD_DIR DEST | ab.sh run PACK_DIR ROUNDS COMMAND..." >&2
    exit 2
    ;;
esac

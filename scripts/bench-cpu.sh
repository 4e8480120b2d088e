#!/usr/bin/env bash
# The README's CPU figures: tinfer-bench on SmolLM2-135M-Instruct, BF16 weights and, when
# scripts/get-model.sh --weights q8_0 has made it, the Q8_0 directory: prefill of 128 and 512
# tokens, decode of 64 tokens alone and 8 / 32 sequences at a time, 5 runs each after a warm-up,
# with the machine's read bandwidth measured in the same run. Prints the markdown tables; with
# --update-readme it also replaces the tables between README.md's cpu-table markers.
# usage: scripts/bench-cpu.sh [--update-readme] [BUILD_DIR=build] [extra tinfer-bench args...]
set -euo pipefail
cd "$(dirname "$0")/.."
update=0
if [ "${1:-}" = "--update-readme" ]; then update=1; shift; fi
build=${1:-build}
shift $(( $# > 0 ? 1 : 0 ))
model="$build/models/smollm2-135m-instruct"
out=$("$build/bin/tinfer-bench" -m "$model" -p 128,512 -n 64 --batch 1,8,32 -r 5 --backend cpu "$@")
if [ -d "$model-q8_0" ]; then
  q8=$("$build/bin/tinfer-bench" -m "$model-q8_0" -p 128,512 -n 64 --batch 1,8,32 -r 5 --backend cpu "$@")
  out=$(printf '%s\n\nQ8_0 weights (`scripts/get-model.sh --weights q8_0`):\n\n%s\n' "$out" "$q8")
fi
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
table=$(printf '%s\n\n%s\n' "$(nproc) cores: $cpu; \`bash scripts/bench-cpu.sh\`" "$out")
echo "$table"
if [ "$update" = 1 ]; then
  python3 - "$table" <<'PY'
import re, sys
readme = open("README.md").read()
new = "<!-- cpu-table:begin -->\n" + sys.argv[1].strip() + "\n<!-- cpu-table:end -->"
readme, n = re.subn(r"<!-- cpu-table:begin -->.*?<!-- cpu-table:end -->", new, readme, flags=re.S)
if n != 1:
    sys.exit("bench-cpu: README.md has no cpu-table markers")
open("README.md", "w").write(readme)
PY
fi

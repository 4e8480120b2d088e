#!/usr/bin/env bash
# Regenerates the benchmark tables in README.md (and gemm/prefill/TABLE.md) from the committed
# benchmark JSON written by tinfer-bench-gemm on the device. Nothing in those tables is typed by
# hand: rerun the device check (scripts/gpu/pack.sh here, scripts/gpu/run.sh on the GPU, phases
# bench and long), commit its JSON, then run this.
set -euo pipefail
cd "$(dirname "$0")/.."
fp32_json=(gemm/prefill/results/bench-h200-nn.json gemm/prefill/results/bench-h200-nt.json)
python3 scripts/gemm-table.py "${fp32_json[@]}" > gemm/prefill/TABLE.md

python3 - "$@" <<'PY'
import re, subprocess
readme = open("README.md").read()
table = open("gemm/prefill/TABLE.md").read().strip()
begin, end = "<!-- sgemm-table:begin -->", "<!-- sgemm-table:end -->"
if begin not in readme or end not in readme:
    raise SystemExit("error: README.md lacks the sgemm-table markers")
pre, rest = readme.split(begin, 1)
_, post = rest.split(end, 1)
readme = pre + begin + "\n" + table + "\n" + end + post
open("README.md", "w").write(readme)
PY
echo "README.md and gemm/prefill/TABLE.md regenerated" >&2

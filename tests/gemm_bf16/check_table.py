#!/usr/bin/env python3
"""check_table.py — gemm/bench_bf16/TABLE.md is what scripts/bf16-table.py makes of the committed
JSON files (so a refreshed sweep cannot land with a stale table), and the script refuses a
directory without sweeps with a one-line error and a non-zero status.

usage: check_table.py REPO_ROOT
The "committed YYYY-MM-DD" provenance comes from git and depends on the checkout (a shallow or
exported tree has none), so it is left out of the comparison.
"""
import os
import re
import subprocess
import sys
import tempfile


def strip(text):
    return re.sub(r", committed \d{4}-\d{2}-\d{2}", "", text)


def report_difference(name, generated, committed, regenerate):
    """Prints where a committed generated file first differs from a fresh generation, and how
    to regenerate it; returns whether they differ."""
    if generated == committed:
        return False
    a, b = generated.splitlines(), committed.splitlines()
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            c = len(os.path.commonprefix([x, y]))
            c0 = max(0, c - 40)
            print(f"FAIL: {name} line {i + 1}, column {c + 1}, differs from the regenerated file:\n"
                  f"  committed: ...{y[c0:c0 + 100]}\n  generated: ...{x[c0:c0 + 100]}")
            break
    else:
        print(f"FAIL: {name} has {len(b)} lines, the regenerated file {len(a)}")
    print(f"  regenerate: {regenerate}")
    return True


def main(root):
    gen = subprocess.run([sys.executable, f"{root}/scripts/bf16-table.py", "gemm/bench_bf16"], cwd=root,
                         capture_output=True, text=True, timeout=120)
    if gen.returncode != 0:
        print(f"FAIL: bf16-table.py exited {gen.returncode}: {gen.stderr.strip()}")
        return 1
    with open(f"{root}/gemm/bench_bf16/TABLE.md") as f:
        committed = f.read()
    if report_difference("TABLE.md", strip(gen.stdout), strip(committed),
                         "scripts/bf16-table.py gemm/bench_bf16 > gemm/bench_bf16/TABLE.md"):
        return 1
    for needle in ("### Prefill rungs", "### Decode rungs", "stream timing (ours", "graph timing (ours"):
        if needle not in gen.stdout:
            print(f"FAIL: the regenerated table lacks its '{needle}' section")
            return 1
    with tempfile.TemporaryDirectory() as empty:
        bad = subprocess.run([sys.executable, f"{root}/scripts/bf16-table.py", empty], cwd=root,
                             capture_output=True, text=True, timeout=60)
        lines = bad.stderr.strip().splitlines()
        if bad.returncode == 0 or len(lines) != 1 or not lines[0].startswith("error:"):
            print(f"FAIL: a directory without sweeps gave status {bad.returncode}, stderr {bad.stderr!r}")
            return 1
    print("PASS: TABLE.md matches the committed sweeps; an empty directory is refused")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))

#!/usr/bin/env python3
"""check_routes.py — gemm/bench_bf16/ROUTES.md is what `tinfer-bench-gemm route --table` prints
from the dispatcher's rules (gemm/dispatch.cu, gemm/bf16.h), so a changed threshold cannot
land with a stale route table; and the route command refuses bad arguments with a one-line error
and status 2.

usage: check_routes.py TINFER_BENCH_GEMM REPO_ROOT
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_table import report_difference  # noqa: E402


def main(tool, root):
    env = dict(os.environ)
    env.pop("TINFER_GEMM_FORCE", None)  # the table lists the dispatcher's own routes
    gen = subprocess.run([tool, "route", "--table"], capture_output=True, text=True, timeout=60, env=env)
    if gen.returncode != 0:
        print(f"FAIL: route --table exited {gen.returncode}: {gen.stderr.strip()}")
        return 1
    with open(f"{root}/gemm/bench_bf16/ROUTES.md") as f:
        committed = f.read()
    if report_difference("ROUTES.md", gen.stdout, committed,
                         "build/bin/tinfer-bench-gemm route --table > gemm/bench_bf16/ROUTES.md"):
        return 1
    for bad in (["route", "0", "576", "576"], ["route", "16", "576"], ["route", "16", "575", "576", "1"],
                ["route", "--sm", "x", "16", "576", "576"], ["route", "--table", "16", "576", "576"],
                ["route", "16", "576", "575"],                      # K not a multiple of 8: the launch's check
                ["route", "16", str(2**31), "576"]):               # past the launchers' 2^31 - 1
        r = subprocess.run([tool] + bad, capture_output=True, text=True, timeout=60, env=env)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or len(lines) != 1 or r.stdout:
            print(f"FAIL: {' '.join(bad)} gave status {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}")
            return 1
    print("PASS: ROUTES.md matches the dispatcher; bad route arguments are refused")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: check_routes.py TINFER_BENCH_GEMM REPO_ROOT", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))

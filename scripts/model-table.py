#!/usr/bin/env python3
"""model-table.py — the README's table of the model on the GPU, from tinfer-bench's JSON.

usage: model-table.py [--update-readme] RESULT.json...
Each RESULT.json is what `tinfer-bench -o json` printed on the device (scripts/gpu/run.sh keeps it
in its logs; examples/bench/results/ holds the committed ones). Prints a markdown table: model,
GPU, test, tok/s, weights GB/s and % of the copy bandwidth (decode), GFLOP/s and % of cuBLAS
(prefill), the kernels taken; with --update-readme it also replaces the table between README.md's
gpu-model-table markers.
"""
import json
import re
import sys


def rows(path):
    j = json.load(open(path))
    model = j["model"]
    name = "SmolLM2-135M" if "hidden 576" in model else "Llama-3-8B" if "hidden 4096" in model else model.split(",")[0]
    gpu = re.search(r"cuda (NVIDIA [^(]*)", model)
    gpu = gpu.group(1).strip() if gpu else j["backend"]
    weights = "random weights" if "random weights" in model else "real weights"
    for t in j["tests"]:
        bw = "%.0f (%.1f%%)" % (t["weight_gbs"], t["pct_peak_bw"]) if t.get("pct_peak_bw") else ""
        fl = "%.0f (%.1f%%)" % (t["gflops"], t["pct_cublas"]) if t.get("pct_cublas") else ""
        yield "| %s (%s) | %s | %s | %.0f ± %.0f | %s | %s | %s |" % (
            name, weights, gpu, t["test"], t["avg_ts"], t["stddev_ts"], bw, fl, t["route"])


def main():
    args = sys.argv[1:]
    update = "--update-readme" in args
    files = [a for a in args if a != "--update-readme"]
    out = ["| model | GPU | test | tok/s | weights GB/s (% of copy) | GFLOP/s (% of cuBLAS) | kernels |",
           "|---|---|---|---|---|---|---|"]
    for f in files:
        out.extend(rows(f))
    table = "\n".join(out)
    print(table)
    if update:
        readme = open("README.md").read()
        new = "<!-- gpu-model-table:begin -->\n" + table + "\n<!-- gpu-model-table:end -->"
        readme, n = re.subn(r"<!-- gpu-model-table:begin -->.*?<!-- gpu-model-table:end -->", new,
                            readme, flags=re.S)
        if n != 1:
            sys.exit("model-table: README.md has no gpu-model-table markers")
        open("README.md", "w").write(readme)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""gemm-table.py — the FP32 ladder's README table, regenerated from tinfer-bench-gemm --json.

usage: scripts/gemm-table.py bench.json [bench-nt.json ...] > table.md
One table per layout: rung, technique, then GFLOP/s and % of cuBLAS (measured in the same run)
at each of the key sizes 4096, 4092, 2048, 8192 that the JSON holds. No numbers are typed here.
"""
import json
import sys

KEY_SIZES = (4096, 4092, 2048, 8192)


def main(paths):
    out = []
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"error: {path}: {e}", file=sys.stderr)
            return 1
        by_layout = {}
        for r in doc["results"]:
            if r["m"] == r["n"] == r["k"] and r["m"] in KEY_SIZES:
                by_layout.setdefault(r["layout"], {})[(r["rung"], r["m"])] = r
        for layout, rows in sorted(by_layout.items()):
            sizes = [s for s in KEY_SIZES if any(k[1] == s for k in rows)]
            rungs = sorted({k[0] for k in rows}, key=lambda x: (x == 0, x))
            out.append(f"### {layout.upper()} layout — {doc['gpu']} (sm_{doc['sm']}, {doc['n_sm']} SMs), "
                       f"{doc['date']}, cuBLAS {doc['cublas_math']}\n")
            head = "| rung | technique | " + " | ".join(f"{s} GFLOP/s | {s} % cuBLAS" for s in sizes) + " |"
            out.append(head)
            out.append("|" + "---|" * (2 + 2 * len(sizes)))
            for rg in rungs:
                name = tech = None
                cells = []
                for s in sizes:
                    r = rows.get((rg, s))
                    if r is None:
                        cells += ["—", "—"]
                        continue
                    name, tech = r["name"], r["technique"]
                    flag = "" if r["verified"] in (True, None) else " (FAILED CHECK)"
                    cells += [f"{r['gflops']:.0f}{flag}", f"{r['pct_cublas']:.1f}%"]
                out.append(f"| {name} | {tech} | " + " | ".join(cells) + " |")
            out.append("")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""bf16-table.py — the BF16 ladder tables, regenerated from tinfer-bench-gemm bf16 --json files.

usage: scripts/bf16-table.py [DIR] > DIR/TABLE.md      (DIR: gemm/bench_bf16 by default)

Reads, where present, DIR/bench_square.json (set square: the prefill rungs on square sizes),
DIR/bench_ladder.json (set ladder: the decode rungs at M = 1 and 8) and DIR/bench_model.json /
DIR/bench_model_graph.json (set model: the dispatcher against cuBLAS / cublasLt on the model
shapes, stream and graph timing). Every figure comes from those files; none is typed here.
Ratios are speed ratios against the faster of cuBLAS and cublasLt measured in the same run
(above 100%: ours is faster), decode rates a percentage of the device-to-device copy rate
measured in the same run.
"""
import json
import os
import subprocess
import sys

PREFILL = [  # (kernel name in the JSON, rung, technique)
    ("wmma", "01", "WMMA 16x16x16 fragments over shared-memory tiles"),
    ("mma_sync", "02", "mma.sync m16n8k16 + ldmatrix, XOR-swizzled shared memory, cp.async multi-stage pipeline"),
    ("wgmma_ws", "03", "wgmma fed by TMA + mbarriers, producer / consumer warp specialization with setmaxnreg, "
                       "persistent L2-ordered tiles, clusters, split-K, fused epilogues"),
]
DECODE = [
    ("gemv01_thread", "01", "a thread per output, 2-byte loads"),
    ("gemv02_warp", "02", "a warp per output, 4-byte loads, shuffle reduction"),
    ("gemv03_vector", "03", "16-byte loads, several in flight, each weight read shared by the M tokens"),
    ("gemv04_splitk", "04", "warps split K; mma.sync shares each weight read across the tokens"),
    ("gemv05_cpasync", "05", "04 fed by a cp.async shared-memory pipeline; the weight stream starts before the PDL wait"),
    ("gemv06_cluster", "06", "05 with K split over a 2-block cluster, reduced through distributed shared memory"),
    ("gemv07_persist", "07", "05 persistent, X staged in shared memory, up to 64 tokens per pass"),
    ("gemv08_stream", "08", "04 on a persistent grid, the next tile's weight in flight (K <= 1024)"),
    ("gemv09_bulk", "09", "a TMA-fed ring; one block per SM owns its output columns whole"),
]
REFS = {"cublas": "cuBLAS", "cublaslt": "cublasLt"}  # kernel name -> label
SHAPES = [  # model set shapes in the order of the issue
    ("smol_qkv", "SmolLM2 QKV 960x576"), ("smol_o", "SmolLM2 O 576x576"),
    ("smol_gateup", "SmolLM2 gate/up 3072x576"), ("smol_down", "SmolLM2 down 576x1536"),
    ("smol_lmhead", "SmolLM2 LM head 49152x576"), ("llama_qkv", "Llama-3-8B QKV 6144x4096"),
    ("llama_gateup", "Llama-3-8B gate/up 28672x4096"), ("llama_down", "Llama-3-8B down 4096x14336"),
]


def load(path):
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: {path}: {e}")


def committed(path):
    """The date the file was last committed (for runs that predate the JSON's own date field)."""
    try:
        r = subprocess.run(["git", "log", "-1", "--format=%cs", "--", path], capture_output=True, text=True, timeout=20)
        return r.stdout.strip() if r.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def provenance(doc, name, path):
    bits = [doc.get("gpu", "?")]
    if doc.get("n_sm"):
        bits.append(f"{doc['n_sm']} SMs")
    if doc.get("cuda_driver"):
        d = doc["cuda_driver"]
        bits.append(f"CUDA driver {d // 1000}.{d % 1000 // 10}")
    date = doc.get("date") or committed(path)
    if date:
        bits.append(date if doc.get("date") else f"committed {date}")
    bits.append(f"copy {doc['copy_gbs']:.0f} GB/s")
    bits.append(f"{doc.get('timing', 'stream')} timing")
    if doc.get("w_static"):
        bits.append("weights marked static")
    return f"`{name}`: " + ", ".join(bits)


def index(doc):
    return {(r["shape"], r["kernel"], r["M"], r["N"], r["K"]): r for r in doc["records"]}


def best_ref(idx, shape, M, N, K):
    us = [idx[(shape, k, M, N, K)]["us"] for k in REFS if (shape, k, M, N, K) in idx]
    return min(us) if us else None


def flag(r):
    return " (MISMATCH)" if r.get("diff_vs_cublas", 0) > 1e-2 else ""


def square_table(doc, path, out):
    idx = index(doc)
    sizes = sorted({r["M"] for r in doc["records"] if r["M"] == r["N"] == r["K"]})
    out.append("### Prefill rungs, square M = N = K (TFLOP/s; % of the faster reference)\n")
    out.append(provenance(doc, "bench_square.json", path) + "\n")
    out.append("| rung | technique | " + " | ".join(str(s) for s in sizes) + " |")
    out.append("|---|---|" + "---|" * len(sizes))
    for kern, rung, label in PREFILL + [(k, "ref", v) for k, v in REFS.items()]:
        cells = []
        for s in sizes:
            r = idx.get(("square", kern, s, s, s))
            ref = best_ref(idx, "square", s, s, s)
            cells.append("—" if r is None else f"{r['tflops']:.0f} ({100 * ref / r['us']:.0f}%){flag(r)}")
        if any(c != "—" for c in cells):
            out.append(f"| {rung} | {label} | " + " | ".join(cells) + " |")
    out.append("")


def ladder_table(doc, path, out):
    idx = index(doc)
    cols = []
    for r in doc["records"]:
        c = (r["shape"], r["M"], r["N"], r["K"])
        if c not in cols:
            cols.append(c)
    out.append("### Decode rungs (us; % of the copy rate)\n")
    out.append(provenance(doc, "bench_ladder.json", path) + "\n")
    out.append("| rung | technique | " + " | ".join(f"{s} {N}x{K} M={M}" for s, M, N, K in cols) + " |")
    out.append("|---|---|" + "---|" * len(cols))
    rows = DECODE + [("auto", "dispatch", "the dispatcher's pick")] + [(k, "ref", v) for k, v in REFS.items()]
    for kern, rung, tech in rows:
        cells = []
        for s, M, N, K in cols:
            r = idx.get((s, kern, M, N, K))
            cells.append("—" if r is None else f"{r['us']:.1f} ({r['pct_copy']:.0f}%){flag(r)}")
        if any(c != "—" for c in cells):
            out.append(f"| {rung} | {tech} | " + " | ".join(cells) + " |")
    out.append("")


def model_table(doc, name, path, out):
    idx = index(doc)
    auto = {(r["shape"], r["M"]): r for r in doc["records"] if r["kernel"] == "auto"}
    ms = sorted({r["M"] for r in doc["records"]})
    out.append(f"### The dispatcher on the model shapes, {doc.get('timing', 'stream')} timing "
               "(ours / the faster reference, us; speed ratio)\n")
    out.append(provenance(doc, name, path) + "\n")
    out.append("| weight (N x K) | " + " | ".join(f"M = {m}" for m in ms) + " |")
    out.append("|---|" + "---|" * len(ms))
    for shape, label in SHAPES:
        cells = []
        for m in ms:
            r = auto.get((shape, m))
            if r is None:
                cells.append("—")
                continue
            ref = best_ref(idx, shape, m, r["N"], r["K"])
            cells.append("—" if ref is None else f"{r['us']:.2f} / {ref:.2f} ({100 * ref / r['us']:.0f}%){flag(r)}")
        if any(c != "—" for c in cells):
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    out.append("")


def main(argv):
    d = argv[1] if len(argv) > 1 else "gemm/bench_bf16"
    out = ["# BF16 GEMM / GEMV tables (generated)\n",
           f"Regenerate: `scripts/bf16-table.py {d} > {d}/TABLE.md` after a run that rewrote the JSON files "
           "(commands in gemm/tc/README.md and gemm/decode/README.md). Percentages of the references are speed "
           "ratios (their time / ours), so above 100% is faster than both cuBLAS and cublasLt.\n"]
    found = False
    for fname, fn in (("bench_square.json", square_table), ("bench_ladder.json", ladder_table)):
        doc = load(os.path.join(d, fname))
        if doc:
            fn(doc, os.path.join(d, fname), out)
            found = True
    for fname in ("bench_model.json", "bench_model_graph.json"):
        doc = load(os.path.join(d, fname))
        if doc:
            model_table(doc, fname, os.path.join(d, fname), out)
            found = True
    if not found:
        print(f"error: no bench_*.json in {d}", file=sys.stderr)
        return 1
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

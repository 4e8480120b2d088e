#!/usr/bin/env python3
"""check_gguf_py.py TINFER_CONVERT SCRATCH_DIR

Independent check of tinfer-convert against the gguf Python package (ggml-org's gguf-py):
writes a tiny Llama GGUF whose tensors use every type the converter supports (F32, F16, BF16,
Q4_0, Q4_1, Q5_0, Q5_1, Q8_0; untied output.weight), converts it with --dtype f32 and bf16 (and
--weights q8_0: see check_q8), and
requires every output tensor to equal gguf.quants.dequantize() exactly (bf16: after
round-to-nearest-even), with q_proj/k_proj un-permuted the way llama.cpp's permute() is inverted
(reshape(n_head, hd/2, 2, in).swapaxes(1, 2)). Exact equality is right: both sides compute
q * d + m in float32 from the same bits. Exits 77 (skipped) when gguf or numpy is missing.
"""
import json, os, shutil, struct, subprocess, sys

try:
    import numpy as np
    import gguf
    from gguf.quants import dequantize, quantize
except ImportError as e:
    print(f"skip: {e}")
    sys.exit(77)

Q = gguf.GGMLQuantizationType
N_EMBD, N_FF, N_HEAD, N_KV, HD = 64, 96, 4, 2, 16
TOKENS = ["<|endoftext|>", "<|im_start|>", "a", "b", "ab", "\u0120", "\u0120a", "c"]
TYPES = {  # name -> (ggml type, ne0 (in), ne1 (out) or None)
    "token_embd.weight": (Q.Q8_0, N_EMBD, len(TOKENS)),
    "output.weight": (Q.F16, N_EMBD, len(TOKENS)),
    "output_norm.weight": (Q.F32, N_EMBD, None),
}
LAYER_TYPES = [
    dict(attn_q=Q.Q4_0, attn_k=Q.Q5_0, attn_v=Q.Q5_1, attn_output=Q.Q4_1, ffn_gate=Q.F16,
         ffn_up=Q.BF16, ffn_down=Q.Q8_0),
    dict(attn_q=Q.Q4_1, attn_k=Q.Q4_1, attn_v=Q.Q8_0, attn_output=Q.Q5_1, ffn_gate=Q.Q5_0,
         ffn_up=Q.Q4_0, ffn_down=Q.F32),
]
SHAPES = dict(attn_q=(N_EMBD, N_HEAD * HD), attn_k=(N_EMBD, N_KV * HD), attn_v=(N_EMBD, N_KV * HD),
              attn_output=(N_HEAD * HD, N_EMBD), ffn_gate=(N_EMBD, N_FF), ffn_up=(N_EMBD, N_FF),
              ffn_down=(N_FF, N_EMBD))
HF = dict(attn_q="self_attn.q_proj", attn_k="self_attn.k_proj", attn_v="self_attn.v_proj",
          attn_output="self_attn.o_proj", ffn_gate="mlp.gate_proj", ffn_up="mlp.up_proj",
          ffn_down="mlp.down_proj", attn_norm="input_layernorm", ffn_norm="post_attention_layernorm")
for l, lt in enumerate(LAYER_TYPES):
    for k, t in lt.items():
        TYPES[f"blk.{l}.{k}.weight"] = (t,) + SHAPES[k]
    TYPES[f"blk.{l}.attn_norm.weight"] = (Q.F32, N_EMBD, None)
    TYPES[f"blk.{l}.ffn_norm.weight"] = (Q.F32, N_EMBD, None)


def hf_name(g):
    p = g.split(".")
    if p[0] == "blk":
        return f"model.layers.{p[1]}.{HF[p[2]]}.weight"
    return {"token_embd": "model.embed_tokens.weight", "output": "lm_head.weight",
            "output_norm": "model.norm.weight"}[p[0]]


def encode(arr, t):
    if t == Q.F32:
        return arr.astype(np.float32)
    if t == Q.F16:
        return arr.astype(np.float16)
    return quantize(arr, t)


def write_gguf(path):
    rng = np.random.default_rng(1234)  # fixed seed: the test is deterministic
    w = gguf.GGUFWriter(path, "llama")
    w.add_block_count(len(LAYER_TYPES))
    w.add_context_length(128)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_KV)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(TOKENS)
    w.add_token_types([3, 3, 1, 1, 1, 1, 1, 1])
    w.add_token_merges(["a b", "\u0120 a"])
    w.add_bos_token_id(1)
    w.add_eos_token_id(0)
    w.add_add_bos_token(False)
    src = {}
    for name, (t, ne0, ne1) in TYPES.items():
        shape = (ne1, ne0) if ne1 else (ne0,)
        # values of both signs with a spread of magnitudes, plus exact zeros
        a = (rng.standard_normal(shape) * rng.choice([0.01, 0.1, 1.0], size=shape)).astype(np.float32)
        a.flat[::17] = 0.0
        data = encode(a, t)
        src[name] = (data, t)
        w.add_tensor(name, data, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return src


def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    assert n % 8 == 0, "header not padded to 8"
    out = {}
    for k, e in hdr.items():
        if k == "__metadata__":
            continue
        a, b = e["data_offsets"]
        buf = raw[8 + n + a:8 + n + b]
        if e["dtype"] == "F32":
            x = np.frombuffer(buf, np.float32)
        elif e["dtype"] == "I8":
            x = np.frombuffer(buf, np.int8)
        elif e["dtype"] == "F16":
            x = np.frombuffer(buf, np.float16).astype(np.float32)
        else:
            x = (np.frombuffer(buf, np.uint16).astype(np.uint32) << 16).view(np.float32)
        out[k] = x.reshape(e["shape"])
    return hdr, out


def unpermute(g, x):
    """GGUF's q / k row interleaving undone (llama.cpp's permute() inverted)."""
    if not g.endswith(("attn_q.weight", "attn_k.weight")):
        return x
    nh = N_HEAD if "attn_q" in g else N_KV
    rows = x.shape[0]
    return x.reshape((nh, rows // nh // 2, 2) + x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def check_q8(conv, path, src, scratch):
    """--weights q8_0: every matrix but the embedding becomes X.weight I8 + X.weight_scale F16;
    a Q8_0 source's blocks are copied bit for bit, any other type is quantized from gguf-py's
    dequantization to within half a step (d / 2, base/q8_0.h; the F32 division's rounding adds a
    relative 2^-22 at most)."""
    out = os.path.join(scratch, "tiny_mixed_q8_0")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([conv, "--weights", "q8_0", path, out], check=True)
    hdr, got = read_safetensors(os.path.join(out, "model.safetensors"))
    failures = 0
    for g, (data, t) in src.items():
        ne1 = TYPES[g][2]
        if ne1 is None or g == "token_embd.weight":
            continue
        n = hf_name(g)
        q, d = got.get(n), got.get(n + "_scale")
        if q is None or d is None or hdr[n]["dtype"] != "I8" or hdr[n + "_scale"]["dtype"] != "F16":
            print(f"FAIL q8_0: {g} -> {n} not I8 + F16 scale")
            failures += 1
            continue
        deq = q.astype(np.float32).reshape(q.shape[0], -1, 32) * d[:, :, None]
        deq = deq.reshape(q.shape)
        if t == Q.Q8_0:
            raw = unpermute(g, np.frombuffer(data.tobytes(), np.uint8).reshape(ne1, -1, 34))
            want_d = raw[:, :, :2].copy().view(np.float16).astype(np.float32)[:, :, 0]
            want_q = raw[:, :, 2:].copy().view(np.int8).reshape(q.shape)
            if not (np.array_equal(want_q, q) and np.array_equal(want_d, d)):
                print(f"FAIL q8_0: {g} (Q8_0) blocks not copied bit for bit")
                failures += 1
            continue
        ref = unpermute(g, dequantize(data, t).astype(np.float32))
        step = np.repeat(d, 32, axis=1)
        if not np.all(np.abs(deq - ref) <= step * (0.5 + 2.0 ** -22)):
            print(f"FAIL q8_0: {g} ({t.name}) beyond half a step of gguf-py's values")
            failures += 1
    cfg = json.load(open(os.path.join(out, "config.json")))
    qc = cfg.get("quantization_config", {})
    if qc.get("quant_method") != "q8_0" or qc.get("group_size") != 32:
        print(f"FAIL q8_0: quantization_config {qc}")
        failures += 1
    return failures


def to_bf16(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return (u.astype(np.uint32) << 16).view(np.float32)


def main():
    conv, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    path = os.path.join(scratch, "tiny_mixed.gguf")
    src = write_gguf(path)
    failures = 0
    for dtype in ("f32", "bf16"):
        out = os.path.join(scratch, f"tiny_mixed_{dtype}")
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([conv, "--dtype", dtype, path, out], check=True)
        hdr, got = read_safetensors(os.path.join(out, "model.safetensors"))
        names = sorted(got)
        if names != sorted(hf_name(g) for g in TYPES):
            print(f"FAIL {dtype}: tensor names {names}")
            failures += 1
        for g, (data, t) in src.items():
            ref = dequantize(data, t).astype(np.float32)
            if g.endswith(("attn_q.weight", "attn_k.weight")):
                nh = N_HEAD if "attn_q" in g else N_KV
                rows, cols = ref.shape
                ref = ref.reshape(nh, rows // nh // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)
            want = ref if dtype == "f32" else to_bf16(ref)
            have = got.get(hf_name(g))
            if have is None or have.shape != want.shape or not np.array_equal(have, want):
                print(f"FAIL {dtype}: {g} ({t.name}) -> {hf_name(g)} differs")
                failures += 1
        cfg = json.load(open(os.path.join(out, "config.json")))
        if cfg["tie_word_embeddings"] is not False or cfg["head_dim"] != HD or \
                cfg["rms_norm_eps"] != 1e-6:
            print(f"FAIL {dtype}: config {cfg}")
            failures += 1
    failures += check_q8(conv, path, src, scratch)
    try:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(scratch, "tiny_mixed_f32", "tokenizer.json"))
        ids = tok.encode("<|im_start|>ab a").ids
        if ids != [1, 4, 6]:
            print(f"FAIL tokenizer: {ids}")
            failures += 1
    except ImportError:
        pass
    if failures:
        sys.exit(1)
    print(f"check_gguf_py: {len(TYPES)} tensors x 2 dtypes match gguf-py exactly; --weights q8_0 "
          "copies Q8_0 blocks and quantizes the rest within half a step")


if __name__ == "__main__":
    main()

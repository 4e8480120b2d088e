"""Regenerates the fuzz seed corpus in tests/loader/corpus (tooling only; the runtime never
needs Python). Seeds: a file written by the reference `safetensors` library, hand-built valid
and near-valid images, and config.json texts, since the fuzz target feeds every input to both
parsers. Usage: python3 tests/loader/make_seeds.py"""
import json
import os
import struct

import numpy as np
from safetensors.numpy import save

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(here, exist_ok=True)


def image(header, data):
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def put(name, blob):
    with open(os.path.join(here, name), "wb") as f:
        f.write(blob)


rng = np.random.default_rng(1234)
put("ref_writer.safetensors", save({
    "model.embed_tokens.weight": rng.standard_normal((8, 4)).astype(np.float32),
    "model.norm.weight": np.ones(4, dtype=np.float16),
    "lm_head.bias": np.zeros((2, 2), dtype=np.float32),
}, metadata={"format": "pt"}))

bf16 = struct.pack("<4H", 0x3F80, 0xC000, 0x7F80, 0x0001)
put("bf16.safetensors", image({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}, bf16))
put("empty.safetensors", image({}, b""))
put("scalar_and_empty.safetensors", image({
    "__metadata__": {"k": "v"},
    "s": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]},
    "z": {"dtype": "F16", "shape": [0, 3], "data_offsets": [4, 4]},
}, struct.pack("<f", 2.5)))
# near-valid: each breaks one rule
put("gap.safetensors", image({
    "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
    "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}, bytes(12)))
put("overlap.safetensors", image({
    "a": {"dtype": "F16", "shape": [4], "data_offsets": [0, 8]},
    "b": {"dtype": "F16", "shape": [2], "data_offsets": [4, 8]}}, bytes(8)))
put("bad_dtype.safetensors", image({"a": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}, bytes(2)))
put("short_hdr.safetensors", struct.pack("<Q", 200) + b'{"a":{"dtype":"F32"')

smol = {
    "architectures": ["LlamaForCausalLM"], "hidden_size": 576, "num_hidden_layers": 30,
    "num_attention_heads": 9, "num_key_value_heads": 3, "intermediate_size": 1536,
    "vocab_size": 49152, "max_position_embeddings": 8192, "rope_theta": 100000,
    "rms_norm_eps": 1e-05, "tie_word_embeddings": True, "hidden_act": "silu",
    "bos_token_id": 1, "eos_token_id": [2, 0], "rope_scaling": None, "head_dim": 64,
}
put("config_smollm2.json", json.dumps(smol).encode())
qwen = dict(smol, architectures=["Qwen2ForCausalLM"], use_sliding_window=False, eos_token_id=2)
put("config_qwen2.json", json.dumps(qwen).encode())
put("generation_config.json", json.dumps({"do_sample": True, "temperature": 0.2, "top_p": 0.9,
                                          "top_k": 50, "eos_token_id": 2}).encode())

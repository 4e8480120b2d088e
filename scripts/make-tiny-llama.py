#!/usr/bin/env python3
"""make-tiny-llama.py — builds the tiny random-weight model fixtures of tests/model.

Writes two HF model directories under tests/model/fixtures/ (committed; regenerate only when
the fixture format changes):
  tiny-llama/  LlamaForCausalLM, 2 layers, hidden 64, 4 heads / 2 KV heads (GQA), head_dim 16,
               FFN 128, vocab 300, untied LM head, F32 safetensors.
  tiny-qwen2/  Qwen2ForCausalLM of the same size with q/k/v biases and tied embeddings, stored as
               BF16 (so the BF16 load path is covered; transformers widens it to F32 on load, so
               both sides compute the same F32 math on the same BF16-representable weights).
Each directory gets a small byte-level BPE tokenizer.json (trained here with `tokenizers` on a
fixed text; same pre-tokenizer as SmolLM2: Digits + ByteLevel), a ChatML tokenizer_config.json
and expected.json holding:
  prompt text + its token ids (tokenizer with add_special_tokens=True),
  logits of every prompt position (HF forward in float32),
  16 greedy tokens from model.generate(do_sample=False),
  the smallest top-1/top-2 logit gap seen over those steps (the script refuses a seed whose gap
  is too small to be robust against fp32 summation-order differences).

Usage: python3 scripts/make-tiny-llama.py [OUT_DIR]   (default tests/model/fixtures)
Needs: torch, transformers, tokenizers (pip install torch transformers tokenizers).
"""
import json
import os
import sys

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM,
                          PreTrainedTokenizerFast)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "model", "fixtures")

VOCAB = 300  # 256 byte symbols + 4 specials + 40 merges: small but exercises BPE merging
SPECIALS = ["<|endoftext|>", "<|bos|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "Once upon a time there was a tiny model that wanted to speak.",
    "The quick brown fox jumps over the lazy dog 12345 times.",
    "Attention is all you need; the rest is matrix multiplication.",
    "def add(a, b):\n    return a + b\n",
] * 8
PROMPT = "Once upon a time, the tiny model said 42 words."
N_GREEDY = 16
# A greedy fixture is only robust when no step has a near tie: our CPU forward matches HF to
# ~1e-6 relative (fp32, different summation order), so a top-1/top-2 gap above 1e-3 of the
# logit scale cannot flip. Seeds below that are skipped.
MIN_REL_GAP = 1e-3

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def build_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(CORPUS, trainer=trainer)
    bos = tok.token_to_id("<|bos|>")
    tok.post_processor = processors.TemplateProcessing(
        single="<|bos|> $A", pair="<|bos|> $A <|bos|> $B", special_tokens=[("<|bos|>", bos)])
    return tok


def write_tokenizer(tok, d):
    tok.save(os.path.join(d, "tokenizer.json"))
    cfg = {
        "bos_token": "<|bos|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>",
        "add_bos_token": True, "chat_template": CHATML,
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 256,
    }
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def greedy_with_gap(model, ids):
    """model.generate(do_sample=False) plus the smallest relative top-1/top-2 gap per step."""
    inp = torch.tensor([ids])
    out = model.generate(inp, max_new_tokens=N_GREEDY, do_sample=False, eos_token_id=None,
                         pad_token_id=0, output_scores=True, return_dict_in_generate=True)
    gen = out.sequences[0, len(ids):].tolist()
    min_gap = float("inf")
    for sc in out.scores:
        top = torch.topk(sc[0], 2).values
        min_gap = min(min_gap, float((top[0] - top[1]) / sc[0].abs().max()))
    return gen, min_gap


def make(name, cls, cfg_cls, extra, dtype, tok):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    ids = tok.encode(PROMPT).ids  # post-processor adds <|bos|>
    bos, eos = tok.token_to_id("<|bos|>"), tok.token_to_id("<|im_end|>")
    for seed in range(100):
        torch.manual_seed(seed)
        cfg = cfg_cls(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=16, intermediate_size=128,
                      vocab_size=VOCAB, max_position_embeddings=256, rms_norm_eps=1e-5,
                      bos_token_id=bos, eos_token_id=eos,
                      # Large init so logits are peaked: with HF's 0.02 the random model's
                      # logits are nearly uniform and greedy picks would hinge on ties.
                      initializer_range=0.25, **extra)
        model = cls(cfg).eval()
        with torch.no_grad():
            # Norm weights default to 1; randomise them so a wrong norm weight load shows.
            for n, p in model.named_parameters():
                if "norm" in n or n.endswith(".bias"):
                    p.copy_(1.0 + 0.3 * torch.randn_like(p) if "norm" in n
                            else 0.3 * torch.randn_like(p))
        # Save in the storage dtype and reload in float32, as a user would
        # (from_pretrained(dtype=float32)): HF then runs on exactly the stored weights, with
        # its rotary tables computed in float32 (casting a live model with .to(bfloat16) would
        # also round the inv_freq buffer).
        model.to(dtype).save_pretrained(d, safe_serialization=True)
        model = cls.from_pretrained(d, dtype=torch.float32).eval()
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0]
            gen, gap = greedy_with_gap(model, ids)
        if len(gen) == N_GREEDY and gap > MIN_REL_GAP:
            break
    else:
        sys.exit(f"{name}: no seed gives a robust greedy fixture")
    write_tokenizer(tok, d)
    exp = {
        "prompt": PROMPT, "prompt_ids": ids, "seed": seed,
        "logits": [[float(f"{v:.7g}") for v in row] for row in logits.tolist()],
        "greedy": gen, "min_rel_gap": gap,
    }
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(exp, f)
    print(f"{name}: seed {seed}, {len(ids)} prompt tokens, greedy {gen}, min rel gap {gap:.3g}")


def main():
    tok = build_tokenizer()
    assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()
    make("tiny-llama", LlamaForCausalLM, LlamaConfig,
         dict(rope_theta=5000.0, tie_word_embeddings=False), torch.float32, tok)
    make("tiny-qwen2", Qwen2ForCausalLM, Qwen2Config,
         dict(rope_theta=20000.0, tie_word_embeddings=True, use_sliding_window=False),
         torch.bfloat16, tok)


if __name__ == "__main__":
    main()

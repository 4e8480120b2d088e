#!/usr/bin/env python3
"""make-model-fixtures.py — HF transformers reference output for the real-model test.

Runs the converted SmolLM2-135M-Instruct directory (scripts/get-model.sh) through transformers in
float32 (BF16-stored weights widened exactly, the same math as tinfer's CPU backend) and writes
tests/model/fixtures/smollm2_greedy.json with, for three fixed prompts (plain, chat-templated,
code):
  text        the exact string tokenized (for chat: the chat template applied to one user
              message with add_generation_prompt=True)
  prompt_ids  its token ids (plain/code: tokenizer(text) with special tokens added as the
              tokenizer's post-processor says; chat: apply_chat_template(tokenize=True), which
              adds none)
  greedy      32 new tokens of model.generate(do_sample=False) (the prompts are chosen so that
              no EOS comes within 32 tokens; the script checks)
  top5        the first step's five largest logits as [id, logit] pairs
  min_rel_gap the smallest top-1/top-2 logit gap over the 32 steps, relative to the largest
              |logit| of that step (a near tie would make the fixture fragile)

Usage: python3 scripts/make-model-fixtures.py [MODEL_DIR] [OUT_JSON]
  defaults: build/models/smollm2-135m-instruct, tests/model/fixtures/smollm2_greedy.json
"""
import json
import os
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "models",
                                                            "smollm2-135m-instruct")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "tests", "model", "fixtures",
                                                         "smollm2_greedy.json")
N_NEW = 32
PROMPTS = [
    ("plain", False, "The three primary colors are"),
    ("chat", True, "Write a short poem about the sea."),
    ("code", False, "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
]


def main():
    tok = AutoTokenizer.from_pretrained(MODEL)
    model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32).eval()
    # Explicit config: greedy, no repetition penalty or other processors.
    gc = GenerationConfig(max_new_tokens=N_NEW, do_sample=False,
                          pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else 0)
    cases = []
    for name, chat, user in PROMPTS:
        if chat:
            msgs = [{"role": "user", "content": user}]
            text = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
            ids = tok(text, add_special_tokens=False)["input_ids"]
        else:
            text = user
            ids = tok(text)["input_ids"]
        with torch.no_grad():
            gc.output_scores = True
            gc.return_dict_in_generate = True
            out = model.generate(torch.tensor([ids]), generation_config=gc)
        new = out.sequences[0, len(ids):].tolist()
        assert len(new) == N_NEW, f"{name}: EOS after {len(new)} tokens; pick a longer prompt"
        gap = min(float((s[0].topk(2).values[0] - s[0].topk(2).values[1]) / s[0].abs().max())
                  for s in out.scores)
        top = out.scores[0][0].topk(5)
        cases.append({
            "name": name, "chat": chat, "user": user, "text": text, "prompt_ids": ids,
            "greedy": new,
            "top5": [[int(i), float(v)] for v, i in zip(top.values.tolist(), top.indices.tolist())],
            "min_rel_gap": gap,
        })
        print(f"{name}: {len(ids)} prompt tokens, min rel gap {gap:.3g}: {tok.decode(new)!r}")
    with open(OUT, "w") as f:
        json.dump({"model": "SmolLM2-135M-Instruct (converted by tinfer-convert)",
                   "transformers": __import__("transformers").__version__, "cases": cases}, f,
                  indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""make-tokenizer-fixtures.py TOKENIZER_JSON OUT [CORPUS]

Runs HF `tokenizers` (the reference) over tests/tokenizer/corpus.json and writes OUT (e.g.
tests/tokenizer/fixtures/smollm2.json), which tests/tokenizer/test_tokenizer_model.c compares
tinfer's tokenizer against token for token.

Per case: the exact input bytes (hex), whether they are valid UTF-8, the ids with special-token
text matched (HF default; tinfer flag TINFER_TOKENIZE_PARSE_SPECIAL) and with it treated as
plain text (encode_special_tokens=True; tinfer flags 0), both with add_special_tokens=False, and
HF decode of the first id list with and without skip_special_tokens. Invalid UTF-8 goes through
Python's errors="replace" first, the same maximal-subpart rule tinfer applies.

When tokenizer_config.json sits beside TOKENIZER_JSON, its chat_template is rendered with
jinja2 the way transformers' apply_chat_template does (trim_blocks, lstrip_blocks) for a few
conversations, giving expected chat bytes.
"""
import hashlib
import json
import os
import sys

import tokenizers


def corpus_inputs(corpus):
    texts = [c["text"].encode("utf-8") for c in corpus["cases"] if "text" in c and c["text"]]
    out = []
    for c in corpus["cases"]:
        if "text" in c:
            data = c["text"].encode("utf-8")
        elif "hex" in c:
            data = bytes.fromhex(c["hex"])
        elif "concat_until" in c:
            parts, n = [], 0
            while n < c["concat_until"]:
                for t in texts:
                    parts.append(t)
                    n += len(t) + 2
            data = b"\n\n".join(parts)
        else:
            raise SystemExit(f"corpus case {c.get('name')}: no text, hex or concat_until")
        out.append((c["name"], data))
    return out


def render_chat(template, bos, eos, messages, add_gen):
    import jinja2.sandbox

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(
        messages=messages, add_generation_prompt=add_gen, bos_token=bos or "", eos_token=eos or "")


CHATS = [
    ("system_user_assistant_gen",
     [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
      {"role": "assistant", "content": "A"}], True),
    ("user_only", [{"role": "user", "content": "Hello, who are you?"}], False),
    ("user_only_gen", [{"role": "user", "content": "What is 2+2?"}], True),
    ("multi_turn_no_system",
     [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello! How can I help?"},
      {"role": "user", "content": "Tell me a joke.\nA short one."}], True),
]


def main():
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    tok_path, out_path = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    corpus_path = sys.argv[3] if len(sys.argv) == 4 else os.path.join(
        here, "..", "tests", "tokenizer", "corpus.json")
    with open(corpus_path, encoding="utf-8") as f:
        corpus = json.load(f)
    with open(tok_path, "rb") as f:
        raw = f.read()
    tok = tokenizers.Tokenizer.from_str(raw.decode("utf-8"))
    tok_plain = tokenizers.Tokenizer.from_str(raw.decode("utf-8"))
    tok_plain.encode_special_tokens = True

    cases = []
    for name, data in corpus_inputs(corpus):
        try:
            data.decode("utf-8")
            valid = True
        except UnicodeDecodeError:
            valid = False
        text = data.decode("utf-8", errors="replace")
        ids = tok.encode(text, add_special_tokens=False).ids
        ids_plain = tok_plain.encode(text, add_special_tokens=False).ids
        cases.append({
            "name": name,
            "input_hex": data.hex(),
            "valid_utf8": valid,
            "ids_special": ids,
            "ids_plain": ids_plain,
            "decode_hex": tok.decode(ids, skip_special_tokens=False).encode("utf-8").hex(),
            "decode_skip_hex": tok.decode(ids, skip_special_tokens=True).encode("utf-8").hex(),
        })

    chats = []
    cfg_path = os.path.join(os.path.dirname(tok_path), "tokenizer_config.json")
    if os.path.exists(cfg_path):
        with open(cfg_path, encoding="utf-8") as f:
            cfg = json.load(f)
        tmpl = cfg.get("chat_template")
        def text_of(v):
            return v.get("content") if isinstance(v, dict) else v
        if tmpl:
            for name, msgs, gen in CHATS:
                chats.append({"name": name, "messages": msgs, "add_generation_prompt": gen,
                              "expected": render_chat(tmpl, text_of(cfg.get("bos_token")),
                                                      text_of(cfg.get("eos_token")), msgs, gen)})

    out = {
        "generator": "scripts/make-tokenizer-fixtures.py",
        "tokenizers_version": tokenizers.__version__,
        "tokenizer_json_sha256": hashlib.sha256(raw).hexdigest(),
        "cases": cases,
        "chats": chats,
    }
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=0)
        f.write("\n")
    print(f"{out_path}: {len(cases)} cases, {len(chats)} chats")


if __name__ == "__main__":
    main()

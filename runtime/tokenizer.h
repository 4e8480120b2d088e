/*
 * tokenizer.h — byte-level BPE from an HF tokenizer.json (GPT-2, SmolLM/SmolLM2, Llama-3, Qwen2).
 *
 * Encode: added/special tokens cut out as whole strings (leftmost-longest), then the
 * pre-tokenizer the file describes (Split with its regex via PCRE2, ByteLevel, Digits, Sequence;
 * NFC normalizer for Qwen2 is not supported -> TINFER_ERR_UNSUPPORTED unless input is ASCII),
 * then BPE merges by rank, then the post-processor (TemplateProcessing BOS) when add_special.
 * Decode: ByteLevel byte mapping back, added tokens' content verbatim.
 * Must agree token-for-token with HF `tokenizers` (tests/tokenizer).
 */
#ifndef TINFER_TOKENIZER_H
#define TINFER_TOKENIZER_H

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tinfer_tokenizer tinfer_tokenizer;

/* Loads dir/tokenizer.json (and dir/tokenizer_config.json for chat_template / add_bos_token
 * when present). */
tinfer_status tinfer_tokenizer_load(const char *dir, tinfer_tokenizer **out, tinfer_err *err);
tinfer_status tinfer_tokenizer_load_json(const char *json, size_t len, const char *label,
                                         tinfer_tokenizer **out, tinfer_err *err);
void tinfer_tokenizer_free(tinfer_tokenizer *tok);

int32_t tinfer_tokenizer_n_vocab(const tinfer_tokenizer *tok); /* model vocab + added tokens */

/* flags: TINFER_TOKENIZE_* from tinfer.h. Same contract as tinfer_tokenize. */
tinfer_status tinfer_tokenizer_encode(const tinfer_tokenizer *tok, const char *text, size_t len,
                                      uint32_t flags, int32_t *tokens, int32_t cap,
                                      int32_t *n_out, tinfer_err *err);

/* Raw bytes of one token (ByteLevel mapping undone; added token content verbatim). Returns
 * NULL for an id out of range. *is_special set when the token is a special added token. */
const char *tinfer_tokenizer_piece(const tinfer_tokenizer *tok, int32_t id, size_t *len,
                                   bool *is_special);

/* Token id of an exact vocab/added string, -1 if none. */
int32_t tinfer_tokenizer_find(const tinfer_tokenizer *tok, const char *s);

/* chat_template string from tokenizer_config.json (NULL if none). */
const char *tinfer_tokenizer_chat_template(const tinfer_tokenizer *tok);

#endif

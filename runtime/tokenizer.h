/*
 * tokenizer.h — byte-level BPE from an HF tokenizer.json (GPT-2, SmolLM/SmolLM2, Llama-3, Qwen2).
 *
 * Encode: added/special tokens cut out as whole strings (leftmost-longest), then the
 * pre-tokenizer the file describes (Split with its regex via PCRE2, ByteLevel, Digits, Sequence;
 * NFC normalizer for Qwen2: loads, but encoding text NFC could change (combining marks,
 * scripts outside a conservative NFC-inert set) -> TINFER_ERR_UNSUPPORTED naming the code point),
 * then BPE merges by rank, then the post-processor (TemplateProcessing BOS) when add_special.
 * Decode: ByteLevel byte mapping back, added tokens' content verbatim.
 * Must agree token-for-token with HF `tokenizers` (tests/tokenizer).
 *
 * A loaded tokenizer is read-only: every call below may run on several threads at once.
 */
#ifndef TINFER_TOKENIZER_H
#define TINFER_TOKENIZER_H

#include "base/error.h"

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

/* ---- additions (compatible extensions of the contract above) ---- */

/* bos_token / eos_token text from tokenizer_config.json (string or {"content": ...}); NULL if
 * absent. Chat templates that write {{ bos_token }} / {{ eos_token }} need them. */
const char *tinfer_tokenizer_bos_text(const tinfer_tokenizer *tok);
const char *tinfer_tokenizer_eos_text(const tinfer_tokenizer *tok);

/* Same contract as tinfer_detokenize (flags TINFER_DETOKENIZE_*). Unknown ids are skipped, like
 * HF decode. */
tinfer_status tinfer_tokenizer_decode(const tinfer_tokenizer *tok, const int32_t *tokens,
                                      int32_t n_tokens, uint32_t flags, char *text, size_t cap,
                                      size_t *n_out, tinfer_err *err);

/* Same contract as tinfer_detok_stream_push. On any error the stream state is left unchanged,
 * so a caller can retry with a larger buffer. */
tinfer_status tinfer_tokenizer_stream_push(const tinfer_tokenizer *tok, tinfer_detok_stream *st,
                                           int32_t token, uint32_t flags, char *text, size_t cap,
                                           size_t *n_out, tinfer_err *err);

/* UTF-8 helpers shared by the tokenizer, streaming decode and chat code.
 * tinfer_utf8_lossy converts in[0..n) to valid UTF-8, each maximal invalid subsequence becoming
 * U+FFFD (Unicode "maximal subpart" practice, = Python errors="replace"). When hold_tail is
 * true, a valid-but-incomplete sequence at the very end is not converted: its length (0..3) is
 * stored in *held and those bytes are left out of the output. out may be NULL to only measure;
 * the return value is the number of output bytes (at most 3 * n). */
size_t tinfer_utf8_lossy(const unsigned char *in, size_t n, bool hold_tail, char *out,
                         size_t *held);

/* Chat formatting behind tinfer_chat_apply, usable without a model: template_str is the Jinja
 * chat_template (NULL = ChatML), bos/eos the tokenizer_config texts (NULL when absent). The
 * output contract is tinfer_chat_apply's. */
tinfer_status tinfer_chat_render(const char *template_str, const char *bos, const char *eos,
                                 const tinfer_chat_message *messages, int32_t n_messages,
                                 bool add_generation_prompt, char *text, size_t cap,
                                 size_t *n_out, tinfer_err *err);

#endif

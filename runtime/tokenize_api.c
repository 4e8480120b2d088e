/*
 * tokenize_api.c — the public tokenizer calls of tinfer.h (tinfer_tokenize, tinfer_detokenize,
 * tinfer_detok_stream_*). Thin wrappers: the model's tokenizer does the work (tokenizer.c) and
 * errors land in the model's error slot (model_internal.h).
 *
 * Streaming decode holds at most 3 bytes (an incomplete UTF-8 prefix) between calls, so the
 * concatenation of every push and the final flush equals tinfer_detokenize of all tokens.
 */
#include "model_internal.h"
#include "tokenizer.h"

#include <string.h>

static tinfer_status model_tok(const tinfer_model *model, const char *fn,
                               const tinfer_tokenizer **tok, tinfer_err **err) {
    if (!model) return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG, "%s: model is NULL", fn);
    *err = tinfer_model_err_slot(model);
    *tok = tinfer_model_tokenizer(model);
    if (!*tok)
        return tinfer_err_set(*err, TINFER_ERR_INVALID_ARG, "%s: the model has no tokenizer", fn);
    return TINFER_OK;
}

tinfer_status tinfer_tokenize(const tinfer_model *model, const char *text, size_t len,
                              uint32_t flags, tinfer_token *tokens, int32_t cap, int32_t *n_out) {
    const tinfer_tokenizer *tok = NULL;
    tinfer_err *err = NULL;
    if (n_out) *n_out = 0;
    tinfer_status st = model_tok(model, "tinfer_tokenize", &tok, &err);
    if (st) return st;
    return tinfer_tokenizer_encode(tok, text, len, flags, tokens, cap, n_out, err);
}

tinfer_status tinfer_detokenize(const tinfer_model *model, const tinfer_token *tokens,
                                int32_t n_tokens, uint32_t flags, char *text, size_t cap,
                                size_t *n_out) {
    const tinfer_tokenizer *tok = NULL;
    tinfer_err *err = NULL;
    if (n_out) *n_out = 0;
    tinfer_status st = model_tok(model, "tinfer_detokenize", &tok, &err);
    if (st) return st;
    return tinfer_tokenizer_decode(tok, tokens, n_tokens, flags, text, cap, n_out, err);
}

void tinfer_detok_stream_reset(tinfer_detok_stream *st) {
    if (st) memset(st, 0, sizeof *st);
}

tinfer_status tinfer_detok_stream_push(const tinfer_model *model, tinfer_detok_stream *st,
                                       tinfer_token token, uint32_t flags, char *text, size_t cap,
                                       size_t *n_out) {
    const tinfer_tokenizer *tok = NULL;
    tinfer_err *err = NULL;
    if (n_out) *n_out = 0;
    tinfer_status s = model_tok(model, "tinfer_detok_stream_push", &tok, &err);
    if (s) return s;
    return tinfer_tokenizer_stream_push(tok, st, token, flags, text, cap, n_out, err);
}

tinfer_status tinfer_detok_stream_flush(tinfer_detok_stream *st, char *text, size_t cap,
                                        size_t *n_out) {
    if (n_out) *n_out = 0;
    if (!st || !n_out || (!text && cap))
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                              "tinfer_detok_stream_flush: NULL state, text or n_out");
    if (st->n_pending < 0 || st->n_pending > 3)
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                              "tinfer_detok_stream_flush: state not initialised (n_pending %d)",
                              st->n_pending);
    size_t need = tinfer_utf8_lossy(st->pending, (size_t)st->n_pending, false, NULL, NULL);
    *n_out = need;
    if (need > cap)
        return tinfer_err_set(NULL, TINFER_ERR_BUFFER_TOO_SMALL,
                              "tinfer_detok_stream_flush: %zu bytes do not fit in cap %zu", need,
                              cap);
    tinfer_utf8_lossy(st->pending, (size_t)st->n_pending, false, text, NULL);
    st->n_pending = 0;
    return TINFER_OK;
}

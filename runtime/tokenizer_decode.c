/*
 * tokenizer_decode.c — token ids back to text: whole (tinfer_tokenizer_decode) and streamed
 * (tinfer_tokenizer_stream_push: bytes released only as complete UTF-8).
 */
#include "tokenizer_internal.h"

#include <stdlib.h>

/* ---------------------------------------------------------------------------------------- */
/* Decoding                                                                                 */

tinfer_status tinfer_tokenizer_decode(const tinfer_tokenizer *t, const int32_t *tokens,
                                      int32_t n_tokens, uint32_t flags, char *text, size_t cap,
                                      size_t *n_out, tinfer_err *err) {
    if (n_out) *n_out = 0;
    if (!t || !n_out || n_tokens < 0 || (!tokens && n_tokens) || (!text && cap))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "detokenize: NULL tokenizer, tokens, text or n_out, or n < 0");
    size_t raw = 0;
    for (int32_t i = 0; i < n_tokens; i++) {
        size_t l;
        bool sp;
        if (tinfer_tokenizer_piece(t, tokens[i], &l, &sp) &&
            !(sp && (flags & TINFER_DETOKENIZE_SKIP_SPECIAL)))
            raw += l;
    }
    char *buf = malloc(raw + 1);
    if (!buf) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "detokenize: out of memory");
    size_t k = 0;
    for (int32_t i = 0; i < n_tokens; i++) {
        size_t l;
        bool sp;
        const char *p = tinfer_tokenizer_piece(t, tokens[i], &l, &sp);
        if (p && !(sp && (flags & TINFER_DETOKENIZE_SKIP_SPECIAL))) {
            memcpy(buf + k, p, l);
            k += l;
        }
    }
    size_t need = tinfer_utf8_lossy((const unsigned char *)buf, k, false, NULL, NULL);
    *n_out = need;
    tinfer_status st = TINFER_OK;
    if (need > cap)
        st = tinfer_err_set(err, TINFER_ERR_BUFFER_TOO_SMALL,
                            "detokenize: %zu bytes do not fit in cap %zu", need, cap);
    else
        tinfer_utf8_lossy((const unsigned char *)buf, k, false, text, NULL);
    free(buf);
    return st;
}

tinfer_status tinfer_tokenizer_stream_push(const tinfer_tokenizer *t, tinfer_detok_stream *st,
                                           int32_t token, uint32_t flags, char *text, size_t cap,
                                           size_t *n_out, tinfer_err *err) {
    if (n_out) *n_out = 0;
    if (!t || !st || !n_out || (!text && cap))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "detok_stream_push: NULL tokenizer, state, text or n_out");
    if (st->n_pending < 0 || st->n_pending > 3)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "detok_stream_push: state not initialised (n_pending %d)",
                              st->n_pending);
    size_t l = 0;
    bool sp = false;
    const char *p = tinfer_tokenizer_piece(t, token, &l, &sp);
    if (!p || (sp && (flags & TINFER_DETOKENIZE_SKIP_SPECIAL))) l = 0; /* as decode: skipped */
    unsigned char small[64];
    size_t n = (size_t)st->n_pending + l;
    unsigned char *buf = n <= sizeof small ? small : malloc(n);
    if (!buf)
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "detok_stream_push: out of memory");
    memcpy(buf, st->pending, (size_t)st->n_pending);
    if (l) memcpy(buf + st->n_pending, p, l);
    size_t held;
    size_t need = tinfer_utf8_lossy(buf, n, true, NULL, &held);
    *n_out = need;
    tinfer_status rc = TINFER_OK;
    if (need > cap) {
        rc = tinfer_err_set(err, TINFER_ERR_BUFFER_TOO_SMALL,
                            "detok_stream_push: %zu bytes do not fit in cap %zu", need, cap);
    } else {
        tinfer_utf8_lossy(buf, n, true, text, &held);
        memcpy(st->pending, buf + n - held, held);
        st->n_pending = (int32_t)held;
    }
    if (buf != small) free(buf);
    return rc;
}

/*
 * context.c — tinfer_context: the KV cache, per-sequence bookkeeping, batch validation and
 * tinfer_decode / tinfer_get_logits, and tinfer_decode_greedy(_batch) (several greedy steps a
 * call).
 *
 * The KV cache, the activations and the logits belong to the backend's context
 * (models/backend.h: ctx_init sizes all of it once; the CPU's is F32 [n_seq_max][n_layer][n_ctx]
 * [n_head_kv*head_dim] for K and the same for V).
 * A batch is validated completely before anything runs, so a rejected batch leaves the cache,
 * the sequence lengths and the previous logits untouched:
 *   token ids in [0, n_vocab), seq ids in [0, n_seq_max), n_tokens in [1, n_batch],
 *   each sequence's positions = its cached length, +1, +2, ... in batch order,
 *   cached length + tokens in the batch <= n_ctx (else TINFER_ERR_CONTEXT_FULL).
 * Memory: the batch plan and the backend's activations are sized from n_batch at init. The
 * logits buffer starts with room for n_seq_max rows (one per sequence: the decode case) and
 * grows only when a batch asks for more rows than any batch before it, so steady-state decoding
 * never allocates.
 */
#include "model_internal.h"

#include "models/backend.h"
#include "models/llama.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Steps a greedy call asks the backend for at once, with more than one sequence (one sequence:
 * up to n_batch, the fused step's metadata bound; models/backend.h). */
#define GREEDY_BATCH_STEPS 16

/* Default cache length when the caller passes n_ctx = 0 (tinfer.h: min(model's, 4096)): 4096
 * tokens keep the default F32 cache of a 135M..1B model within a few hundred MB. */
#define TINFER_DEFAULT_N_CTX 4096

struct tinfer_context {
    tinfer_err err;
    const tinfer_model *model;
    const tinfer_llama_config *cfg;
    const tinfer_llama_weights *w;
    const tinfer_backend_ops *ops;
    void *bc; /* the backend's context: KV cache, activations, logits */
    int32_t n_ctx, n_seq_max, n_batch;
    int32_t *seq_len;    /* [n_seq_max] tokens cached per sequence */
    int32_t *seq_count;  /* [n_seq_max] validation scratch: tokens per sequence in the batch */
    int32_t *out_rows;   /* [n_batch] batch indices whose logits are computed */
    int32_t *logit_row;  /* [n_batch] row in `logits` of batch entry i, -1 if none */
    const float *logits; /* [n_out, n_vocab] of the last step (NULL: only ids were wanted) */
    const int32_t *ids;  /* [n_out] the most likely token of each row of the last step */
    int8_t *row_mode;    /* [n_batch] what batch entry i asked for: 0, 1 logits, 2 argmax */
    /* greedy decoding: the backend's picks [max(n_batch, GREEDY_BATCH_STEPS n_seq_max)], and
     * per sequence still decoding [n_seq_max] each: its index in the call, token, position */
    int32_t *picks, *g_idx, *g_tok, *g_pos, *g_seq;
    size_t n_picks;
    int32_t n_last;      /* n_tokens of the last successful tinfer_decode (0: none) */
    int64_t n_steps;     /* successful tinfer_decode calls */
    tinfer_llama_scratch s;
};

tinfer_context_params tinfer_context_default_params(void) {
    tinfer_context_params p;
    memset(&p, 0, sizeof p);
    p.n_ctx = 0;
    p.n_seq_max = 1;
    p.n_batch = 0;
    p.n_threads = 0;
    p.cuda_graphs = 1;
    p.cuda_fused_decode = -1; /* where it measured faster (tinfer.h) */
    return p;
}

void tinfer_context_free(tinfer_context *c) {
    if (!c) return;
    tinfer_llama_scratch_free(&c->s);
    if (c->bc) c->ops->ctx_free(c->bc);
    free(c->seq_len);
    free(c->seq_count);
    free(c->out_rows);
    free(c->logit_row);
    free(c->row_mode);
    free(c->picks);
    free(c->g_idx);
    free(c);
}

tinfer_status tinfer_context_init(tinfer_model *model, const tinfer_context_params *params,
                                  tinfer_context **out) {
    if (out) *out = NULL;
    if (!model || !out)
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG, "tinfer_context_init: NULL %s",
                              !model ? "model" : "out");
    tinfer_context_params p = params ? *params : tinfer_context_default_params();
    const tinfer_llama_config *cfg = tinfer_model_config(model);
    if (p.cuda_micro_batches < 0 || p.cuda_micro_batches > 4)
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                              "tinfer_context_init: cuda_micro_batches %d outside 0 .. 4",
                              (int)p.cuda_micro_batches);
    if (p.n_ctx < 0 || p.n_seq_max < 1 || p.n_batch < 0)
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                              "tinfer_context_init: n_ctx %d, n_seq_max %d, n_batch %d (need "
                              "n_ctx >= 0, n_seq_max >= 1, n_batch >= 0)",
                              (int)p.n_ctx, (int)p.n_seq_max, (int)p.n_batch);
    int32_t n_ctx = p.n_ctx;
    if (n_ctx == 0)
        n_ctx = cfg->n_ctx_train < TINFER_DEFAULT_N_CTX ? cfg->n_ctx_train : TINFER_DEFAULT_N_CTX;
    int32_t n_batch = p.n_batch ? p.n_batch : n_ctx;

    tinfer_context *c = calloc(1, sizeof *c);
    if (!c) return tinfer_err_set(NULL, TINFER_ERR_OUT_OF_MEMORY, "out of memory (context)");
    c->model = model;
    c->cfg = cfg;
    c->w = tinfer_model_weights(model);
    c->ops = tinfer_model_backend_ops(model);
    c->n_ctx = n_ctx;
    c->n_seq_max = p.n_seq_max;
    c->n_batch = n_batch;

    tinfer_status rc = TINFER_OK;
    c->seq_len = calloc((size_t)p.n_seq_max, sizeof(int32_t));
    c->seq_count = calloc((size_t)p.n_seq_max, sizeof(int32_t));
    c->out_rows = malloc((size_t)n_batch * sizeof(int32_t));
    c->logit_row = malloc((size_t)n_batch * sizeof(int32_t));
    c->row_mode = malloc((size_t)n_batch);
    const size_t n_picks = (size_t)n_batch > (size_t)GREEDY_BATCH_STEPS * (size_t)p.n_seq_max
                               ? (size_t)n_batch
                               : (size_t)GREEDY_BATCH_STEPS * (size_t)p.n_seq_max;
    c->picks = malloc(n_picks * sizeof(int32_t));
    c->n_picks = n_picks;
    c->g_idx = malloc(4 * (size_t)p.n_seq_max * sizeof(int32_t));
    if (c->g_idx) {
        c->g_tok = c->g_idx + p.n_seq_max;
        c->g_pos = c->g_tok + p.n_seq_max;
        c->g_seq = c->g_pos + p.n_seq_max;
    }
    if (!c->seq_len || !c->seq_count || !c->out_rows || !c->logit_row || !c->row_mode ||
        !c->picks || !c->g_idx) {
        rc = tinfer_err_set(NULL, TINFER_ERR_OUT_OF_MEMORY, "out of memory (context of n_batch %d)",
                            (int)n_batch);
        goto fail;
    }
    tinfer_err sub;
    sub.msg[0] = '\0';
    if ((rc = c->ops->ctx_init(tinfer_model_backend_state(model), p.n_seq_max, n_ctx, n_batch,
                               p.n_threads, p.cuda_graphs != 0, p.cuda_fused_decode,
                               p.cuda_micro_batches, &c->bc, &sub)) != TINFER_OK ||
        (rc = tinfer_llama_scratch_init(cfg, n_batch, p.n_seq_max, &c->s, &sub)) != TINFER_OK) {
        tinfer_err_copy(NULL, &sub, rc);
        goto fail;
    }
    *out = c;
    return TINFER_OK;
fail:
    tinfer_context_free(c);
    return rc;
}

struct tinfer_llama_scratch *tinfer_context_llama_scratch(tinfer_context *c) {
    return c ? &c->s : NULL;
}

const char *tinfer_context_last_error(const tinfer_context *c) { return c ? c->err.msg : ""; }
int32_t tinfer_context_n_ctx(const tinfer_context *c) { return c ? c->n_ctx : 0; }

int32_t tinfer_seq_len(const tinfer_context *c, int32_t seq_id) {
    if (!c || seq_id < 0 || seq_id >= c->n_seq_max) return 0;
    return c->seq_len[seq_id];
}

tinfer_status tinfer_seq_clear(tinfer_context *c, int32_t seq_id) {
    if (!c) return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG, "tinfer_seq_clear: NULL context");
    if (seq_id >= c->n_seq_max)
        return tinfer_err_set(&c->err, TINFER_ERR_INVALID_ARG,
                              "tinfer_seq_clear: seq_id %d out of range (n_seq_max %d)",
                              (int)seq_id, (int)c->n_seq_max);
    if (seq_id < 0)
        memset(c->seq_len, 0, (size_t)c->n_seq_max * sizeof(int32_t));
    else
        c->seq_len[seq_id] = 0;
    return TINFER_OK;
}

static tinfer_status validate(tinfer_context *c, const tinfer_batch *b) {
    tinfer_err *e = &c->err;
    const int32_t n = b->n_tokens;
    if (n < 1)
        return tinfer_err_set(e, TINFER_ERR_INVALID_ARG, "tinfer_decode: empty batch (n_tokens %d)",
                              (int)n);
    if (n > c->n_batch)
        return tinfer_err_set(e, TINFER_ERR_INVALID_ARG,
                              "tinfer_decode: batch has %d tokens but n_batch is %d", (int)n,
                              (int)c->n_batch);
    if (!b->token || !b->pos || !b->seq_id)
        return tinfer_err_set(e, TINFER_ERR_INVALID_ARG, "tinfer_decode: batch.%s is NULL",
                              !b->token ? "token"
                              : !b->pos ? "pos"
                                        : "seq_id");
    memset(c->seq_count, 0, (size_t)c->n_seq_max * sizeof(int32_t));
    for (int32_t i = 0; i < n; i++) {
        if (b->token[i] < 0 || b->token[i] >= c->cfg->n_vocab)
            return tinfer_err_set(e, TINFER_ERR_INVALID_ARG,
                                  "tinfer_decode: batch entry %d: token id %d out of range "
                                  "[0, %d)",
                                  (int)i, (int)b->token[i], (int)c->cfg->n_vocab);
        if (b->seq_id[i] < 0 || b->seq_id[i] >= c->n_seq_max)
            return tinfer_err_set(e, TINFER_ERR_INVALID_ARG,
                                  "tinfer_decode: batch entry %d: seq_id %d out of range [0, %d)",
                                  (int)i, (int)b->seq_id[i], (int)c->n_seq_max);
        c->seq_count[b->seq_id[i]]++;
    }
    for (int32_t q = 0; q < c->n_seq_max; q++)
        if (c->seq_count[q] > 0 && (int64_t)c->seq_len[q] + c->seq_count[q] > c->n_ctx)
            return tinfer_err_set(e, TINFER_ERR_CONTEXT_FULL,
                                  "sequence %d would need %lld tokens but n_ctx is %d", (int)q,
                                  (long long)c->seq_len[q] + c->seq_count[q], (int)c->n_ctx);
    memset(c->seq_count, 0, (size_t)c->n_seq_max * sizeof(int32_t));
    for (int32_t i = 0; i < n; i++) {
        const int32_t q = b->seq_id[i], want = c->seq_len[q] + c->seq_count[q];
        if (b->pos[i] != want)
            return tinfer_err_set(e, TINFER_ERR_INVALID_ARG,
                                  "tinfer_decode: batch entry %d: position %d for sequence %d, "
                                  "expected %d (positions must continue the sequence's cache in "
                                  "order)",
                                  (int)i, (int)b->pos[i], (int)q, (int)want);
        c->seq_count[q]++;
    }
    return TINFER_OK;
}

tinfer_status tinfer_decode(tinfer_context *c, const tinfer_batch *b) {
    if (!c || !b)
        return tinfer_err_set(c ? &c->err : NULL, TINFER_ERR_INVALID_ARG, "tinfer_decode: NULL %s",
                              !c ? "context" : "batch");
    tinfer_status rc = validate(c, b);
    if (rc != TINFER_OK) return rc;

    const int32_t n = b->n_tokens;
    int32_t n_out = 0;
    bool need_logits = false;
    for (int32_t i = 0; i < n; i++) {
        const int8_t mode = b->logits ? (b->logits[i] == 2 ? 2 : b->logits[i] != 0) : i == n - 1;
        c->row_mode[i] = mode;
        c->logit_row[i] = mode ? n_out : -1;
        if (mode) c->out_rows[n_out++] = i;
        need_logits |= mode == 1;
    }
    c->n_last = 0; /* the previous logits are overwritten from here on */
    rc = tinfer_llama_forward(c->ops, c->bc, c->cfg, c->w, &c->s, n, b->token, b->pos, b->seq_id,
                              c->out_rows, n_out, need_logits, &c->logits, &c->ids, &c->err);
    if (rc != TINFER_OK) return rc;
    for (int32_t i = 0; i < n; i++)
        c->seq_len[b->seq_id[i]]++;
    c->n_last = n;
    c->n_steps++;
    return TINFER_OK;
}

tinfer_status tinfer_decode_greedy_batch(tinfer_context *c, int32_t n, const int32_t *seq_ids,
                                         const tinfer_token *tokens, int32_t n_max,
                                         tinfer_token *out, int32_t *n_out) {
    if (!c || !seq_ids || !tokens || !out || !n_out)
        return tinfer_err_set(c ? &c->err : NULL, TINFER_ERR_INVALID_ARG,
                              "tinfer_decode_greedy: NULL %s",
                              !c          ? "context"
                              : !seq_ids  ? "seq_ids"
                              : !tokens   ? "tokens"
                              : !out      ? "out"
                                          : "n_out");
    tinfer_err *e = &c->err;
    if (n < 1 || n > c->n_batch || n > c->n_seq_max)
        return tinfer_err_set(e, TINFER_ERR_INVALID_ARG,
                              "tinfer_decode_greedy: %d sequences (1 .. min(n_batch %d, "
                              "n_seq_max %d))",
                              (int)n, (int)c->n_batch, (int)c->n_seq_max);
    for (int32_t i = 0; i < n; i++)
        n_out[i] = 0;
    if (n_max < 1)
        return tinfer_err_set(e, TINFER_ERR_INVALID_ARG, "tinfer_decode_greedy: n_max %d < 1",
                              (int)n_max);
    memset(c->seq_count, 0, (size_t)c->n_seq_max * sizeof(int32_t));
    for (int32_t i = 0; i < n; i++) {
        const int32_t q = seq_ids[i];
        if (q < 0 || q >= c->n_seq_max)
            return tinfer_err_set(e, TINFER_ERR_INVALID_ARG,
                                  "tinfer_decode_greedy: seq_id %d out of range [0, %d)", (int)q,
                                  (int)c->n_seq_max);
        if (c->seq_count[q]++)
            return tinfer_err_set(e, TINFER_ERR_INVALID_ARG,
                                  "tinfer_decode_greedy: sequence %d given twice", (int)q);
        if (tokens[i] < 0 || tokens[i] >= c->cfg->n_vocab)
            return tinfer_err_set(e, TINFER_ERR_INVALID_ARG,
                                  "tinfer_decode_greedy: token id %d out of range [0, %d)",
                                  (int)tokens[i], (int)c->cfg->n_vocab);
        if ((int64_t)c->seq_len[q] + n_max > c->n_ctx)
            return tinfer_err_set(e, TINFER_ERR_CONTEXT_FULL,
                                  "sequence %d would need %lld tokens but n_ctx is %d", (int)q,
                                  (long long)c->seq_len[q] + n_max, (int)c->n_ctx);
    }
    c->n_last = 0; /* no logits or argmax after this call */
    int32_t na = 0; /* the sequences still decoding, in the caller's order */
    for (int32_t i = 0; i < n; i++) {
        c->g_idx[na] = i;
        c->g_tok[na] = tokens[i];
        c->g_seq[na] = seq_ids[i];
        na++;
    }
    int32_t done = 0; /* steps run: every active sequence has done picks */
    while (na > 0 && done < n_max) {
        /* steps to ask for after the first: as many as the picks buffer holds (backend.h: the
         * backend runs what it can of them; at least n_batch for one sequence, 16 steps for
         * every sequence of the context) */
        const size_t room = c->n_picks / (size_t)na - 1;
        const int32_t cap = room > (size_t)INT32_MAX ? INT32_MAX : (int32_t)room;
        int32_t more = n_max - done - 1, got = 0;
        if (more > cap) more = cap;
        for (int32_t a = 0; a < na; a++)
            c->g_pos[a] = c->seq_len[c->g_seq[a]];
        const tinfer_status rc =
            tinfer_llama_forward_greedy(c->ops, c->bc, c->cfg, c->w, &c->s, na, c->g_tok,
                                        c->g_pos, c->g_seq, more, c->picks, &got, e);
        if (rc != TINFER_OK) return rc; /* the steps before this call's stay (in n_out) */
        /* step k's pick of sequence a: picks[k na + a]; a sequence that ends generation at step
         * k keeps steps 0 .. k (the device may have run it further: its cache stops there) */
        int32_t keep = 0;
        for (int32_t a = 0; a < na; a++) {
            const int32_t i = c->g_idx[a], q = c->g_seq[a];
            bool eog = false;
            for (int32_t k = 0; k < got && !eog; k++) {
                const tinfer_token t = c->picks[(size_t)k * (size_t)na + (size_t)a];
                out[(size_t)i * (size_t)n_max + (size_t)n_out[i]++] = t;
                c->seq_len[q]++; /* the step fed a token */
                eog = tinfer_token_is_eog(c->model, t);
            }
            if (eog) continue;
            c->g_idx[keep] = i;
            c->g_seq[keep] = q;
            c->g_tok[keep] = out[(size_t)i * (size_t)n_max + (size_t)n_out[i] - 1];
            keep++;
        }
        na = keep;
        done += got;
        c->n_steps += got;
    }
    return TINFER_OK;
}

tinfer_status tinfer_decode_greedy(tinfer_context *c, int32_t seq_id, tinfer_token token,
                                   int32_t n_max, tinfer_token *out, int32_t *n_out) {
    if (n_out) *n_out = 0; /* also where the batch form refuses before setting it */
    return tinfer_decode_greedy_batch(c, 1, &seq_id, &token, n_max, out, n_out);
}

tinfer_status tinfer_context_get_stats(const tinfer_context *c, tinfer_context_stats *out) {
    if (!c || !out)
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG, "tinfer_context_get_stats: NULL %s",
                              c ? "output" : "context");
    memset(out, 0, sizeof *out);
    out->steps = c->n_steps;
    if (c->ops->stats) {
        tinfer_backend_stats s;
        memset(&s, 0, sizeof s);
        c->ops->stats(c->bc, &s);
        out->graph_replays = s.graph_replays;
        out->graph_captures = s.graph_captures;
        out->last_step_kernels = s.last_step_kernels;
        out->fused_steps = s.fused_steps;
        out->lm_argmax_steps = s.lm_argmax_steps;
    }
    if (c->ops->tp_timing)
        c->ops->tp_timing(c->bc, &out->tp_allreduce_us, &out->tp_allreduce_bf16_us);
    return TINFER_OK;
}

const float *tinfer_get_logits(const tinfer_context *c, int32_t i) {
    if (!c || i < 0 || i >= c->n_last || c->row_mode[i] != 1 || !c->logits) return NULL;
    return c->logits + (size_t)c->logit_row[i] * (size_t)c->cfg->n_vocab;
}

tinfer_token tinfer_get_argmax(const tinfer_context *c, int32_t i) {
    if (!c || i < 0 || i >= c->n_last || c->logit_row[i] < 0 || !c->ids) return -1;
    return c->ids[c->logit_row[i]];
}

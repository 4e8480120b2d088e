/*
 * backend_tp.c — the tensor-parallel backend (backend_tp.h): the host weights are sharded into
 * n_rank ranks at model init, and every op of the forward pass runs on every rank in turn, with
 * one all-reduce after each input-split GEMM (o_proj, down_proj: two a layer).
 *
 * How an op finds its shards: the weights this backend hands the forward pass (its dev_w) are
 * tinfer_weight entries whose data points to a shard descriptor (tp_desc): the kind of split
 * and, per rank, the rank sub-backend's own weight (and bias) and its [N, K]. A bias entry's
 * data is non-NULL exactly when the model has that bias (it points to its weight's descriptor,
 * which holds each rank's bias); matmul passes a rank its bias only where the forward passed one.
 *
 * GEMMs, Y[M,N] = X[M,K] · W[N,K]^T with M = the step's tokens (n, or n_out for the LM head):
 *   output-split (QKV, gate|up)  every rank Y_r[M, N_r] = X[M, K] · W_r[N_r, K]^T into its own
 *                                buffer (its heads' q|k|v, its F/tp slice of silu(g)·u)
 *   input-split (o_proj, down)   the epilogue is RESIDUAL into X [M, E]: rank 0 computes
 *                                X_0 += X·W_0^T + bias, every other rank X_r = X·W_r^T (STORE,
 *                                no bias), then the all-reduce makes every X_r = Σ_r X_r, the
 *                                new residual stream, identical on every rank
 *   vocabulary (LM head)         every rank the logits of its vocabulary slice [n_out, V_r];
 *                                logits() gathers them into one host [n_out, V]
 * Everything else (embedding, RMSNorm, RoPE + KV write, attention) runs on every rank with its
 * own config: its q heads, its KV heads (its KV cache holds only those), its F/tp.
 */
#include "models/backend_tp.h"

#include "base/q8_0.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum tp_kind {
    TP_REPL,  /* every rank the whole tensor (embedding table, norms) */
    TP_COL,   /* output-split: rank r computes its N_r outputs */
    TP_ROW,   /* input-split: rank r a partial product over its K_r inputs, then all-reduced */
    TP_VOCAB, /* the LM head: output-split over the vocabulary, gathered by logits() */
} tp_kind;

typedef struct tp_slot {
    const tinfer_weight *w; /* the rank's weight, as its sub-backend's ops take it */
    const tinfer_weight *b; /* its bias; NULL: none on this rank */
    int64_t N, K;           /* its shape [N, K] */
} tp_slot;

typedef struct tp_desc {
    tp_kind kind;
    int64_t N, K;  /* the whole weight's shape, as the forward pass names it */
    tp_slot *rank; /* [n_rank] */
} tp_desc;

typedef struct tp_model {
    int32_t n_rank;
    const tinfer_backend_ops *ops; /* every rank's */
    const tinfer_tp_allreduce *ar;
    const tinfer_llama_config *cfg;   /* the whole model's */
    tinfer_llama_config *rcfg;        /* [n_rank] each rank's (its heads, n_ff, vocab slice) */
    tinfer_llama_weights *rw;         /* [n_rank] each rank's host weights */
    unsigned char **arena;            /* [n_rank] the rank's copied slices, one allocation */
    void **state;                     /* [n_rank] each rank's model (NULL: not made) */
    const tinfer_llama_weights **dev; /* [n_rank] each rank's weights as its ops take them */
    int64_t *v0;                      /* [n_rank + 1] each rank's first vocabulary id */
    tp_desc *desc;                    /* [n_desc]: tok_embd, out_norm, lm_head, 6 a layer */
    tp_slot *slots;                   /* [n_desc * n_rank] */
    int32_t n_desc;
    tinfer_llama_weights w; /* this backend's weights: entries name descriptors */
    char text[256];
} tp_model;

typedef struct tp_ctx {
    const tp_model *m;
    tinfer_err err;
    void **rcs; /* [n_rank] each rank's context (NULL: not made) */
    const tinfer_batch_plan *plan;
    float *logits; /* [cap, V] the gathered rows */
    int32_t *ids;  /* [cap] */
    int32_t cap;
} tp_ctx;

/* ---------------------------------------------------------------------------------------- */
/* The host all-reduce                                                                      */

static tinfer_status host_check(const void *self, const tinfer_backend_ops *rank_ops,
                                tinfer_err *err) {
    (void)self;
    if (!rank_ops->buf_f32)
        return tinfer_err_set(err, TINFER_ERR_NO_DEVICE,
                              "the host all-reduce needs host buffers, which %s ranks do not have "
                              "(CUDA ranks sum through NCCL)",
                              rank_ops->name);
    return TINFER_OK;
}

/* X_0 += X_1 + ... + X_{n-1} in rank order, then X_0 copied to every rank: the same sum on
 * every rank, the same from run to run. */
static tinfer_status host_sum(void *self, const tinfer_backend_ops *rank_ops, void *const *rank_cs,
                              int32_t n_rank, tinfer_buf buf, int64_t n, tinfer_err *err) {
    (void)self;
    if (!rank_ops->buf_f32) return host_check(NULL, rank_ops, err);
    float *x0 = NULL, *xr = NULL;
    tinfer_status rc = rank_ops->buf_f32(rank_cs[0], buf, &x0);
    for (int32_t r = 1; rc == TINFER_OK && r < n_rank; r++)
        if ((rc = rank_ops->buf_f32(rank_cs[r], buf, &xr)) == TINFER_OK)
            for (int64_t i = 0; i < n; i++)
                x0[i] += xr[i];
    for (int32_t r = 1; rc == TINFER_OK && r < n_rank; r++)
        if ((rc = rank_ops->buf_f32(rank_cs[r], buf, &xr)) == TINFER_OK)
            memcpy(xr, x0, (size_t)n * sizeof(float));
    if (rc != TINFER_OK)
        return tinfer_err_set(err, rc, "tp all-reduce: no host buffer %d on a rank", (int)buf);
    return TINFER_OK;
}

const tinfer_tp_allreduce tinfer_tp_allreduce_host = {.name = "host",
                                                      .check = host_check,
                                                      .sum = host_sum};

/* ---------------------------------------------------------------------------------------- */
/* Sharding: each rank's slices of the host weights                                         */

/* One allocation per rank: a first pass only counts (base NULL), the second carves. */
typedef struct arena {
    unsigned char *base;
    size_t used;
} arena;

static unsigned char *carve(arena *a, size_t n) {
    const size_t at = (a->used + 63) & ~(size_t)63; /* 64-byte aligned slices (base is too) */
    a->used = at + n;
    return a->base ? a->base + at : NULL;
}

/* A [rows, K] weight of dtype dt being filled: the values, and the scales for Q8_0. */
typedef struct wbuf {
    unsigned char *v, *s;
    tinfer_dtype dt;
} wbuf;

static size_t row_bytes(tinfer_dtype dt, int64_t K) { return (size_t)K * tinfer_dtype_size(dt); }
static size_t scale_row_bytes(tinfer_dtype dt, int64_t K) {
    return dt == TINFER_DTYPE_Q8_0 ? (size_t)(K / TINFER_Q8_0_BLOCK) * 2 : 0;
}

static wbuf wbuf_new(arena *a, tinfer_dtype dt, int64_t rows, int64_t K) {
    wbuf b = {carve(a, (size_t)rows * row_bytes(dt, K)), NULL, dt};
    if (dt == TINFER_DTYPE_Q8_0) b.s = carve(a, (size_t)rows * scale_row_bytes(dt, K));
    return b;
}

static tinfer_weight wbuf_weight(const wbuf *b) { return (tinfer_weight){b->v, b->dt, b->s}; }

/* Rows [row0, row0 + n) of src [*, K] into b from row `at` on (with their Q8_0 scales). */
static void put_rows(const wbuf *b, int64_t at, const tinfer_weight *src, int64_t K, int64_t row0,
                     int64_t n) {
    if (!b->v) return; /* the counting pass */
    const size_t rb = row_bytes(src->dtype, K), sb = scale_row_bytes(src->dtype, K);
    memcpy(b->v + (size_t)at * rb, (const unsigned char *)src->data + (size_t)row0 * rb,
           (size_t)n * rb);
    if (sb)
        memcpy(b->s + (size_t)at * sb, (const unsigned char *)src->scale + (size_t)row0 * sb,
               (size_t)n * sb);
}

/* Columns [col0, col0 + n) of every row of src [N, K] into b [N, n] (a strided copy; for Q8_0
 * col0 and n are multiples of 32, so whole blocks move with their scales). */
static void put_cols(const wbuf *b, const tinfer_weight *src, int64_t N, int64_t K, int64_t col0,
                     int64_t n) {
    if (!b->v) return;
    const size_t esz = tinfer_dtype_size(src->dtype);
    for (int64_t r = 0; r < N; r++)
        memcpy(b->v + (size_t)(r * n) * esz,
               (const unsigned char *)src->data + (size_t)(r * K + col0) * esz, (size_t)n * esz);
    if (src->dtype == TINFER_DTYPE_Q8_0) {
        const int64_t nb = n / TINFER_Q8_0_BLOCK, kb = K / TINFER_Q8_0_BLOCK,
                      c0 = col0 / TINFER_Q8_0_BLOCK;
        for (int64_t r = 0; r < N; r++)
            memcpy(b->s + (size_t)(r * nb) * 2,
                   (const unsigned char *)src->scale + (size_t)(r * kb + c0) * 2, (size_t)nb * 2);
    }
}

/* Rank r's place in the split: its q heads [q0, q0 + hq), KV heads [k0, k0 + hk), n_ff slice
 * [f0, f0 + fr). */
typedef struct rank_split {
    int64_t q0, hq, k0, hk, f0, fr;
} rank_split;

static rank_split split_of(const tinfer_llama_config *c, int32_t n_rank, int32_t r) {
    rank_split s;
    s.hq = c->n_head / n_rank;
    s.q0 = r * s.hq;
    /* split when n_rank divides Hkv; else (Hkv divides n_rank) the one KV head its q heads use:
     * r * Hkv / n_rank in both cases */
    s.hk = c->n_head_kv % n_rank == 0 ? c->n_head_kv / n_rank : 1;
    s.k0 = (int64_t)r * c->n_head_kv / n_rank;
    s.fr = c->n_ff / n_rank;
    s.f0 = r * s.fr;
    return s;
}

/* Rank r's weights in `out` (slices copied into the arena; the norms, the embedding table and
 * the LM head's rows pointed to in place). With a->base NULL only counts a->used. */
static void shard_rank(const tp_model *m, int32_t r, const tinfer_llama_weights *hw, arena *a,
                       tinfer_llama_weights *out) {
    const tinfer_llama_config *c = m->cfg;
    const int64_t E = c->n_embd, D = c->head_dim, Q = (int64_t)c->n_head * D,
                  KV = (int64_t)c->n_head_kv * D, F = c->n_ff;
    const rank_split s = split_of(c, m->n_rank, r);
    memset(out, 0, sizeof *out);
    out->layers = (tinfer_llama_layer *)(void *)carve(a, (size_t)hw->n_layer * sizeof *out->layers);
    out->n_layer = hw->n_layer;
    out->fused_dtype = hw->fused_dtype;
    out->tok_embd = hw->tok_embd;
    out->out_norm = hw->out_norm;
    /* the LM head's vocabulary slice: whole rows, so a pointer into the host tensor */
    const tinfer_weight *lm = &hw->lm_head;
    out->lm_head = (tinfer_weight){(const unsigned char *)lm->data +
                                       (size_t)m->v0[r] * row_bytes(lm->dtype, E),
                                   lm->dtype, NULL};
    if (lm->scale)
        out->lm_head.scale =
            (const unsigned char *)lm->scale + (size_t)m->v0[r] * scale_row_bytes(lm->dtype, E);
    for (int32_t l = 0; l < hw->n_layer; l++) {
        const tinfer_llama_layer *hl = &hw->layers[l];
        tinfer_llama_layer dummy, *ly = out->layers ? &out->layers[l] : &dummy;
        memset(ly, 0, sizeof *ly);
        ly->attn_norm = hl->attn_norm;
        ly->ffn_norm = hl->ffn_norm;
        /* wqkv [Q + 2 KV, E] -> [its q heads | its k heads | its v heads] x E */
        const int64_t rows = (s.hq + 2 * s.hk) * D;
        wbuf b = wbuf_new(a, hl->wqkv.dtype, rows, E);
        put_rows(&b, 0, &hl->wqkv, E, s.q0 * D, s.hq * D);
        put_rows(&b, s.hq * D, &hl->wqkv, E, Q + s.k0 * D, s.hk * D);
        put_rows(&b, (s.hq + s.hk) * D, &hl->wqkv, E, Q + KV + s.k0 * D, s.hk * D);
        ly->wqkv = wbuf_weight(&b);
        if (hl->bqkv.data) { /* the same rows of the bias (F32: a [rows, 1] matrix) */
            b = wbuf_new(a, hl->bqkv.dtype, rows, 1);
            put_rows(&b, 0, &hl->bqkv, 1, s.q0 * D, s.hq * D);
            put_rows(&b, s.hq * D, &hl->bqkv, 1, Q + s.k0 * D, s.hk * D);
            put_rows(&b, (s.hq + s.hk) * D, &hl->bqkv, 1, Q + KV + s.k0 * D, s.hk * D);
            ly->bqkv = wbuf_weight(&b);
        }
        /* wo [E, Q] -> the columns of its q heads [E, hq D]; its bias is added once (rank 0) */
        b = wbuf_new(a, hl->wo.dtype, E, s.hq * D);
        put_cols(&b, &hl->wo, E, Q, s.q0 * D, s.hq * D);
        ly->wo = wbuf_weight(&b);
        if (r == 0) ly->bo = hl->bo;
        /* wgu [2F, E] = [gate; up] -> [gate rows f0..f0+fr; up rows f0..f0+fr] x E */
        b = wbuf_new(a, hl->wgu.dtype, 2 * s.fr, E);
        put_rows(&b, 0, &hl->wgu, E, s.f0, s.fr);
        put_rows(&b, s.fr, &hl->wgu, E, F + s.f0, s.fr);
        ly->wgu = wbuf_weight(&b);
        /* wdown [E, F] -> [E, fr] */
        b = wbuf_new(a, hl->wdown.dtype, E, s.fr);
        put_cols(&b, &hl->wdown, E, F, s.f0, s.fr);
        ly->wdown = wbuf_weight(&b);
    }
}

/* Whether the model splits n_rank ways; a one-line TINFER_ERR_INVALID_ARG naming the numbers
 * otherwise. */
static tinfer_status check_split(const tinfer_llama_config *c, const tinfer_llama_weights *hw,
                                 int32_t n, tinfer_err *err) {
    if (n < 1 || n > TINFER_TP_MAX)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "tp %d: ranks must be 1..%d", (int)n,
                              TINFER_TP_MAX);
    if (c->n_head % n != 0)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "tp %d does not divide the model's %d attention heads (each rank "
                              "takes whole heads)",
                              (int)n, (int)c->n_head);
    if (c->n_head_kv % n != 0 && n % c->n_head_kv != 0)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "tp %d: the model's %d KV heads neither split %d ways nor replicate "
                              "(tp must divide num_key_value_heads or be a multiple of it)",
                              (int)n, (int)c->n_head_kv, (int)n);
    if (c->n_ff % n != 0)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "tp %d does not divide the model's intermediate_size %d", (int)n,
                              (int)c->n_ff);
    const int64_t vs = ((int64_t)c->n_vocab + n - 1) / n;
    if (vs * (n - 1) >= c->n_vocab)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "tp %d: a vocabulary of %d leaves a rank without LM-head rows",
                              (int)n, (int)c->n_vocab);
    const int64_t qr = (int64_t)c->n_head / n * c->head_dim, fr = c->n_ff / n;
    for (int32_t l = 0; l < hw->n_layer; l++) {
        const tinfer_llama_layer *ly = &hw->layers[l];
        const bool bad_o = ly->wo.dtype == TINFER_DTYPE_Q8_0 && qr % TINFER_Q8_0_BLOCK != 0;
        if (bad_o || (ly->wdown.dtype == TINFER_DTYPE_Q8_0 && fr % TINFER_Q8_0_BLOCK != 0))
            return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                                  "tp %d: layer %d's %s is Q8_0 and each rank's %lld columns are "
                                  "not whole blocks of 32",
                                  (int)n, (int)l, bad_o ? "o_proj" : "down_proj",
                                  (long long)(bad_o ? qr : fr));
    }
    return TINFER_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Model level                                                                              */

static void tp_model_free(void *state) {
    tp_model *m = state;
    if (!m) return;
    for (int32_t r = 0; r < m->n_rank; r++) {
        if (m->state && m->state[r]) m->ops->model_free(m->state[r]);
        if (m->arena) free(m->arena[r]);
    }
    free(m->state);
    free(m->arena);
    free(m->rw);
    free(m->rcfg);
    free(m->dev);
    free(m->v0);
    free(m->desc);
    free(m->slots);
    free(m->w.layers);
    if (m->ar && m->ar->destroy) m->ar->destroy(m->ar->self);
    free(m);
}

static tinfer_status tp_model_init_refused(const tinfer_llama_config *cfg,
                                           const tinfer_llama_weights *host_w, int32_t n_threads,
                                           int32_t device, void **state,
                                           const tinfer_llama_weights **dev_w, tinfer_err *err) {
    (void)cfg, (void)host_w, (void)n_threads, (void)device, (void)state, (void)dev_w;
    return tinfer_err_set(err, TINFER_ERR_INTERNAL,
                          "the tensor-parallel backend is made by tinfer_tp_model_init");
}

/* Descriptor i: its kind and whole shape; its slots follow. */
static tp_desc *desc_at(tp_model *m, int32_t i, tp_kind kind, int64_t N, int64_t K) {
    tp_desc *d = &m->desc[i];
    d->kind = kind;
    d->N = N;
    d->K = K;
    d->rank = &m->slots[(size_t)i * (size_t)m->n_rank];
    return d;
}

/* The descriptors and this backend's weights, once every rank's dev weights exist. */
static void make_descs(tp_model *m, const tinfer_llama_weights *hw) {
    const tinfer_llama_config *c = m->cfg;
    const int64_t E = c->n_embd, D = c->head_dim, Q = (int64_t)c->n_head * D,
                  KV = (int64_t)c->n_head_kv * D, F = c->n_ff, V = c->n_vocab;
    tp_desc *d;
#define SLOTS(field, n_, k_)                                                                       \
    for (int32_t r = 0; r < m->n_rank; r++)                                                        \
    d->rank[r] = (tp_slot){&m->dev[r]->field, NULL, (n_), (k_)}
#define NAMED(dst, src)                                                                            \
    (dst) = (tinfer_weight) { d, (src).dtype, NULL }
    d = desc_at(m, 0, TP_REPL, V, E);
    SLOTS(tok_embd, V, E);
    NAMED(m->w.tok_embd, hw->tok_embd);
    d = desc_at(m, 1, TP_REPL, E, 1);
    SLOTS(out_norm, E, 1);
    NAMED(m->w.out_norm, hw->out_norm);
    d = desc_at(m, 2, TP_VOCAB, V, E);
    SLOTS(lm_head, m->v0[r + 1] - m->v0[r], E);
    NAMED(m->w.lm_head, hw->lm_head);
    for (int32_t l = 0; l < hw->n_layer; l++) {
        const tinfer_llama_layer *hl = &hw->layers[l];
        tinfer_llama_layer *ly = &m->w.layers[l];
        const rank_split s = split_of(c, m->n_rank, 0); /* every rank's counts are equal */
        const int32_t i = 3 + 6 * l;
        d = desc_at(m, i, TP_REPL, E, 1);
        SLOTS(layers[l].attn_norm, E, 1);
        NAMED(ly->attn_norm, hl->attn_norm);
        d = desc_at(m, i + 1, TP_COL, Q + 2 * KV, E);
        SLOTS(layers[l].wqkv, (s.hq + 2 * s.hk) * D, E);
        for (int32_t r = 0; hl->bqkv.data && r < m->n_rank; r++)
            d->rank[r].b = &m->dev[r]->layers[l].bqkv;
        NAMED(ly->wqkv, hl->wqkv);
        ly->bqkv = (tinfer_weight){hl->bqkv.data ? d : NULL, hl->bqkv.dtype, NULL};
        d = desc_at(m, i + 2, TP_ROW, E, Q);
        SLOTS(layers[l].wo, E, s.hq * D);
        if (hl->bo.data) d->rank[0].b = &m->dev[0]->layers[l].bo;
        NAMED(ly->wo, hl->wo);
        ly->bo = (tinfer_weight){hl->bo.data ? d : NULL, hl->bo.dtype, NULL};
        d = desc_at(m, i + 3, TP_REPL, E, 1);
        SLOTS(layers[l].ffn_norm, E, 1);
        NAMED(ly->ffn_norm, hl->ffn_norm);
        d = desc_at(m, i + 4, TP_COL, 2 * F, E);
        SLOTS(layers[l].wgu, 2 * s.fr, E);
        NAMED(ly->wgu, hl->wgu);
        d = desc_at(m, i + 5, TP_ROW, E, F);
        SLOTS(layers[l].wdown, E, s.fr);
        NAMED(ly->wdown, hl->wdown);
    }
#undef SLOTS
#undef NAMED
    m->w.n_layer = hw->n_layer;
    m->w.fused_dtype = hw->fused_dtype;
}

tinfer_status tinfer_tp_model_init(const tinfer_backend_ops *rank_ops, int32_t n_rank,
                                   const tinfer_tp_allreduce *ar, const tinfer_llama_config *cfg,
                                   const tinfer_llama_weights *host_w, int32_t n_threads,
                                   void **state, const tinfer_llama_weights **dev_w,
                                   tinfer_err *err) {
    *state = NULL;
    *dev_w = NULL;
    if (!ar) ar = &tinfer_tp_allreduce_host;
    tinfer_status rc = check_split(cfg, host_w, n_rank, err);
    if (rc == TINFER_OK) rc = ar->check(ar->self, rank_ops, err);
    tp_model *m = rc == TINFER_OK ? calloc(1, sizeof *m) : NULL;
    if (!m) {
        if (ar->destroy) ar->destroy(ar->self); /* the model would have owned it */
        return rc != TINFER_OK
                   ? rc
                   : tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (tp backend)");
    }
    m->ar = ar;
    const size_t n = (size_t)n_rank, L = (size_t)host_w->n_layer;
    m->n_rank = n_rank;
    m->ops = rank_ops;
    m->cfg = cfg;
    m->n_desc = 3 + 6 * host_w->n_layer;
    m->rcfg = calloc(n, sizeof *m->rcfg);
    m->rw = calloc(n, sizeof *m->rw);
    m->arena = calloc(n, sizeof *m->arena);
    m->state = calloc(n, sizeof *m->state);
    m->dev = calloc(n, sizeof *m->dev);
    m->v0 = calloc(n + 1, sizeof *m->v0);
    m->desc = calloc((size_t)m->n_desc, sizeof *m->desc);
    m->slots = calloc((size_t)m->n_desc * n, sizeof *m->slots);
    m->w.layers = calloc(L ? L : 1, sizeof *m->w.layers);
    if (!m->rcfg || !m->rw || !m->arena || !m->state || !m->dev || !m->v0 || !m->desc ||
        !m->slots || !m->w.layers) {
        tp_model_free(m);
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (tp backend)");
    }
    const int64_t vs = ((int64_t)cfg->n_vocab + n_rank - 1) / n_rank;
    for (int32_t r = 0; r <= n_rank; r++)
        m->v0[r] = (int64_t)r * vs < cfg->n_vocab ? (int64_t)r * vs : cfg->n_vocab;
    for (int32_t r = 0; r < n_rank; r++) {
        const rank_split s = split_of(cfg, n_rank, r);
        tinfer_llama_config *rcf = &m->rcfg[r];
        *rcf = *cfg;
        rcf->n_head = (int32_t)s.hq;
        rcf->n_head_kv = (int32_t)s.hk;
        rcf->n_ff = (int32_t)s.fr;
        rcf->n_vocab = (int32_t)(m->v0[r + 1] - m->v0[r]);
        rcf->n_embd_rows = cfg->n_vocab;     /* the embedding table stays whole */
        rcf->tie_word_embeddings = false; /* its LM head is its own slice, not the table */
        arena a = {NULL, 0};
        shard_rank(m, r, host_w, &a, &m->rw[r]); /* count */
        m->arena[r] = aligned_alloc(64, (a.used + 63) & ~(size_t)63);
        if (!m->arena[r]) {
            rc =
                tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY,
                               "out of memory: %zu bytes for tp rank %d's weights", a.used, (int)r);
            tp_model_free(m);
            return rc;
        }
        a = (arena){m->arena[r], 0};
        shard_rank(m, r, host_w, &a, &m->rw[r]); /* copy */
        const int32_t device = ar->device ? ar->device(ar->self, r) : 0;
        if ((rc = rank_ops->model_init(&m->rcfg[r], &m->rw[r], n_threads, device, &m->state[r],
                                       &m->dev[r], err)) != TINFER_OK) {
            tp_model_free(m);
            return rc;
        }
    }
    make_descs(m, host_w);
    snprintf(m->text, sizeof m->text, "%s x%d tensor-parallel shards (each %s)", rank_ops->name,
             (int)n_rank, rank_ops->model_desc(m->state[0]));
    *state = m;
    *dev_w = &m->w;
    return TINFER_OK;
}

static const char *tp_model_desc(const void *state) { return ((const tp_model *)state)->text; }

static int64_t tp_weight_bytes(const void *state) {
    const tp_model *m = state;
    int64_t bytes = 0;
    for (int32_t r = 0; r < m->n_rank; r++)
        bytes += m->ops->weight_bytes(m->state[r]);
    return bytes;
}

static void tp_route_desc(const void *state, int32_t n_tokens, int32_t n_logits, char *buf,
                          size_t cap) {
    const tp_model *m = state;
    const int k = snprintf(buf, cap, "tp %d: ", (int)m->n_rank);
    if (k > 0 && (size_t)k < cap)
        m->ops->route_desc(m->state[0], n_tokens, n_logits, buf + k, cap - (size_t)k);
}

/* ---------------------------------------------------------------------------------------- */
/* Context level                                                                            */

static void tp_ctx_free(void *cs) {
    tp_ctx *c = cs;
    if (!c) return;
    for (int32_t r = 0; c->rcs && r < c->m->n_rank; r++)
        if (c->rcs[r]) c->m->ops->ctx_free(c->rcs[r]);
    free(c->rcs);
    free(c->logits);
    free(c->ids);
    free(c);
}

/* Every rank's context: its KV cache holds its own KV heads ([n_seq][L][n_ctx][hk D] for K and
 * V on the CPU), its activations its own widths; the gathered logits [min(n_seq, n_batch), V]
 * here. */
static tinfer_status tp_ctx_init(void *model_state, int32_t n_seq, int32_t n_ctx, int32_t n_batch,
                                 int32_t n_threads, bool graphs, int32_t fused_decode,
                                 int32_t micro_batches, void **ctx_state, tinfer_err *err) {
    const tp_model *m = model_state;
    tp_ctx *c = calloc(1, sizeof *c);
    if (!c) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (tp context)");
    c->m = m;
    c->cap = n_seq < n_batch ? n_seq : n_batch;
    c->rcs = calloc((size_t)m->n_rank, sizeof *c->rcs);
    c->logits = malloc((size_t)c->cap * (size_t)m->cfg->n_vocab * sizeof(float));
    c->ids = malloc((size_t)c->cap * sizeof(int32_t));
    if (!c->rcs || !c->logits || !c->ids) {
        tp_ctx_free(c);
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory: tp logits for %d rows",
                              (int)n_seq);
    }
    for (int32_t r = 0; r < m->n_rank; r++) {
        const tinfer_status rc = m->ops->ctx_init(m->state[r], n_seq, n_ctx, n_batch, n_threads,
                                                  graphs, fused_decode, micro_batches,
                                                  &c->rcs[r], err);
        if (rc != TINFER_OK) {
            tp_ctx_free(c);
            return rc;
        }
    }
    if (m->ar->ctx_ready) {
        const tinfer_status rc = m->ar->ctx_ready(m->ar->self, m->ops, c->rcs, m->n_rank, err);
        if (rc != TINFER_OK) {
            tp_ctx_free(c);
            return rc;
        }
    }
    *ctx_state = c;
    return TINFER_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* One forward                                                                              */

static tinfer_status rank_failed(tp_ctx *c, int32_t r, tinfer_status rc) {
    return tinfer_err_set(&c->err, rc, "tp rank %d: %s", (int)r, c->m->ops->last_error(c->rcs[r]));
}

/* Runs `call` (which names rank r) on every rank in turn; the first failure is reported. */
#define EACH_RANK(call)                                                                            \
    for (int32_t r = 0; r < c->m->n_rank; r++) {                                                   \
        const tinfer_status rc_ = (call);                                                          \
        if (rc_ != TINFER_OK) return rank_failed(c, r, rc_);                                       \
    }

/* The descriptor a weight entry of this backend names (a pointer into the model's table). */
static const tp_desc *desc_of(const tp_ctx *c, const tinfer_weight *w) {
    const uintptr_t p = w ? (uintptr_t)w->data : 0, lo = (uintptr_t)c->m->desc;
    const size_t i = (size_t)(p - lo) / sizeof(tp_desc);
    return p >= lo && i < (size_t)c->m->n_desc && p == (uintptr_t)&c->m->desc[i] ? &c->m->desc[i]
                                                                                 : NULL;
}

static tinfer_status tp_begin(void *cs, const tinfer_batch_plan *plan) {
    tp_ctx *c = cs;
    c->plan = plan;
    if (plan->n_out > c->cap) { /* grows only past the most rows any step asked for */
        float *p =
            realloc(c->logits, (size_t)plan->n_out * (size_t)c->m->cfg->n_vocab * sizeof(float));
        if (p) c->logits = p;
        int32_t *ids = p ? realloc(c->ids, (size_t)plan->n_out * sizeof(int32_t)) : NULL;
        if (!ids)
            return tinfer_err_set(&c->err, TINFER_ERR_OUT_OF_MEMORY,
                                  "out of memory: tp logits for %d rows", (int)plan->n_out);
        c->ids = ids;
        c->cap = plan->n_out;
    }
    EACH_RANK(c->m->ops->begin(c->rcs[r], plan));
    return TINFER_OK;
}

static tinfer_status tp_embed(void *cs, tinfer_buf out, const tinfer_weight *table) {
    tp_ctx *c = cs;
    const tp_desc *d = desc_of(c, table);
    if (!d) return tinfer_err_set(&c->err, TINFER_ERR_INTERNAL, "tp embed: not a tp weight");
    EACH_RANK(c->m->ops->embed(c->rcs[r], out, d->rank[r].w));
    return TINFER_OK;
}

static tinfer_status tp_rmsnorm(void *cs, tinfer_buf out, tinfer_buf in, const tinfer_weight *w,
                                float eps, bool gather) {
    tp_ctx *c = cs;
    const tp_desc *d = desc_of(c, w);
    if (!d) return tinfer_err_set(&c->err, TINFER_ERR_INTERNAL, "tp rmsnorm: not a tp weight");
    EACH_RANK(c->m->ops->rmsnorm(c->rcs[r], out, in, d->rank[r].w, eps, gather));
    return TINFER_OK;
}

static tinfer_status tp_matmul(void *cs, tinfer_buf y, tinfer_buf x, const tinfer_weight *w,
                               const tinfer_weight *bias, int64_t N, int64_t K, tinfer_epi epi,
                               bool rows_out) {
    tp_ctx *c = cs;
    const tinfer_backend_ops *ops = c->m->ops;
    const tp_desc *d = desc_of(c, w);
    if (!d || d->kind == TP_REPL || d->N != N || d->K != K ||
        (d->kind == TP_ROW && epi == TINFER_EPI_SWIGLU))
        return tinfer_err_set(&c->err, TINFER_ERR_INTERNAL,
                              "tp matmul: [%lld, %lld] (epilogue %d) is not a split weight of "
                              "this shape",
                              (long long)N, (long long)K, (int)epi);
    const bool has_bias = bias && bias->data;
    if (d->kind != TP_ROW) { /* output-split: each rank its own outputs, nothing to sum */
        EACH_RANK(ops->matmul(c->rcs[r], y, x, d->rank[r].w, has_bias ? d->rank[r].b : NULL,
                              d->rank[r].N, d->rank[r].K, epi, rows_out));
        return TINFER_OK;
    }
    /* input-split: rank 0 adds its partial product and the bias to Y (the residual), every
     * other rank stores its partial product in its Y; the all-reduce sums them */
    EACH_RANK(ops->matmul(c->rcs[r], y, x, d->rank[r].w, has_bias ? d->rank[r].b : NULL,
                          d->rank[r].N, d->rank[r].K, r == 0 ? epi : TINFER_EPI_STORE, rows_out));
    /* Y is [rows, N] contiguous (the residual stream X, width E = N) */
    const int64_t rows = rows_out ? c->plan->n_out : c->plan->n;
    return c->m->ar->sum(c->m->ar->self, ops, c->rcs, c->m->n_rank, y, rows * N, &c->err);
}

static tinfer_status tp_rope_kv(void *cs, int32_t layer) {
    tp_ctx *c = cs;
    EACH_RANK(c->m->ops->rope_kv(c->rcs[r], layer));
    return TINFER_OK;
}

static tinfer_status tp_attention(void *cs, int32_t layer) {
    tp_ctx *c = cs;
    EACH_RANK(c->m->ops->attention(c->rcs[r], layer));
    return TINFER_OK;
}

/* The greedy pick of logits row j over the ranks' picks (ids[r][j] in rank r's slice, its
 * logit vals[r][j]): the greatest logit, ties to the lowest id (the earlier rank: slices are in
 * vocabulary order), NaN never wins; every rank NaN gives 0. */
static int32_t reduce_pick(const tp_model *m, const int32_t *const *ids, const float *const *vals,
                           int32_t j) {
    int32_t best = -1;
    float bv = 0.0f;
    for (int32_t r = 0; r < m->n_rank; r++) {
        const float v = vals[r][j];
        if (v == v && (best < 0 || v > bv)) best = (int32_t)m->v0[r] + ids[r][j], bv = v;
    }
    return best < 0 ? 0 : best;
}

/* Each rank's logits rows [n_out, V_r] land at columns v0[r].. of the host [n_out, V]; then the
 * argmax of backend.h (ties to the lowest id, NaN never wins, a row of only NaN gives 0). With
 * an implementation that runs the ranks itself (NCCL), greedy steps instead reduce each rank's
 * (greedy logit, id) per row and copy no logits. */
static tinfer_status tp_logits(void *cs, bool need_logits, const float **host_logits,
                               const int32_t **host_ids) {
    tp_ctx *c = cs;
    const tp_model *m = c->m;
    const int64_t V = m->cfg->n_vocab;
    const int32_t n_out = c->plan->n_out;
    const float *lgs[TINFER_TP_MAX] = {0}, *vals[TINFER_TP_MAX] = {0};
    const int32_t *ids[TINFER_TP_MAX] = {0};
    const bool gather = need_logits || !m->ar->logits;
    if (m->ar->logits) {
        const tinfer_status rc = m->ar->logits(m->ar->self, m->ops, c->rcs, m->n_rank, gather,
                                               lgs, ids, vals, &c->err);
        if (rc != TINFER_OK) return rc;
    } else
        for (int32_t r = 0; r < m->n_rank; r++) {
            const tinfer_status rc = m->ops->logits(c->rcs[r], true, &lgs[r], &ids[r]);
            if (rc != TINFER_OK) return rank_failed(c, r, rc);
        }
    if (!gather) {
        for (int32_t r = 0; r < m->n_rank; r++)
            if (!ids[r] || !vals[r])
                return tinfer_err_set(&c->err, TINFER_ERR_INTERNAL,
                                      "tp rank %d: no greedy logits", (int)r);
        for (int32_t j = 0; j < n_out; j++)
            c->ids[j] = reduce_pick(m, ids, vals, j);
        *host_logits = NULL;
        *host_ids = c->ids;
        return TINFER_OK;
    }
    for (int32_t r = 0; r < m->n_rank; r++)
        if (!lgs[r])
            return tinfer_err_set(&c->err, TINFER_ERR_INTERNAL, "tp rank %d: no logits", (int)r);
    /* one rank holds the whole vocabulary: its rows are the logits as they are */
    const float *all = lgs[0];
    if (m->n_rank > 1) {
        for (int32_t r = 0; r < m->n_rank; r++) {
            const int64_t vr = m->v0[r + 1] - m->v0[r];
            for (int32_t j = 0; j < n_out; j++)
                memcpy(c->logits + (size_t)j * (size_t)V + (size_t)m->v0[r],
                       lgs[r] + (size_t)j * (size_t)vr, (size_t)vr * sizeof(float));
        }
        all = c->logits;
    }
    bool picks = true; /* every rank's greedy logit is there (CUDA ranks): no scan of the rows */
    for (int32_t r = 0; r < m->n_rank; r++)
        picks = picks && ids[r] && vals[r];
    for (int32_t j = 0; j < n_out; j++) {
        if (picks) {
            c->ids[j] = reduce_pick(m, ids, vals, j);
            continue;
        }
        const float *x = all + (size_t)j * (size_t)V;
        int64_t best = -1;
        for (int64_t i = 0; i < V; i++)
            if (x[i] == x[i] && (best < 0 || x[i] > x[best])) best = i;
        c->ids[j] = best < 0 ? 0 : (int32_t)best;
    }
    *host_logits = need_logits ? all : NULL;
    *host_ids = c->ids;
    return TINFER_OK;
}

static const char *tp_last_error(const void *cs) { return ((const tp_ctx *)cs)->err.msg; }

static void tp_timing(void *cs, double *f32_us, double *bf16_us) {
    const tp_ctx *c = cs;
    *f32_us = *bf16_us = 0;
    if (c->m->ar->timing) c->m->ar->timing(c->m->ar->self, f32_us, bf16_us);
}

/* Launch counts: the steps rank 0 replayed / captured (every rank runs the same steps), the
 * kernels of the last step on all ranks together (none on CPU ranks). */
static void tp_stats(const void *cs, tinfer_backend_stats *out) {
    const tp_ctx *c = cs;
    memset(out, 0, sizeof *out);
    for (int32_t r = 0; c->m->ops->stats && r < c->m->n_rank; r++) {
        tinfer_backend_stats s;
        memset(&s, 0, sizeof s);
        c->m->ops->stats(c->rcs[r], &s);
        if (r == 0) *out = s, out->last_step_kernels = 0;
        out->last_step_kernels += s.last_step_kernels;
    }
}

const tinfer_backend_ops tinfer_backend_tp = {
    .name = "tp",
    .model_init = tp_model_init_refused,
    .model_free = tp_model_free,
    .model_desc = tp_model_desc,
    .weight_bytes = tp_weight_bytes,
    .route_desc = tp_route_desc,
    .ctx_init = tp_ctx_init,
    .ctx_free = tp_ctx_free,
    .begin = tp_begin,
    .embed = tp_embed,
    .rmsnorm = tp_rmsnorm,
    .matmul = tp_matmul,
    .rope_kv = tp_rope_kv,
    .attention = tp_attention,
    .logits = tp_logits,
    .last_error = tp_last_error,
    .stats = tp_stats,
    .tp_timing = tp_timing,
};

/*
 * llama.c — Llama-family weights (HF tensor names -> tinfer_llama_weights) and the batched
 * forward pass (see llama.h for the layouts).
 *
 * Forward over a batch of n tokens, possibly from several sequences:
 *   0. sort the batch by sequence (stable counting sort), so each sequence's tokens are one
 *      contiguous run with ascending positions; every per-token op is order-independent, and
 *      attention then runs once per sequence on a contiguous block;
 *   1. x = embed(tokens)
 *   2. per layer: xb = rmsnorm(x); qkv = xb·Wqkv^T (+b) [one GEMM, M = n]; rope on q and k;
 *      copy k, v rows into each sequence's cache at its positions; attention per sequence
 *      (query at pos p sees cache rows 0..p: causal inside the batch because the whole batch's
 *      K/V are written first); x += att·Wo^T [GEMM accumulating into the residual];
 *      xb = rmsnorm(x); gu = xb·Wgu^T; act = swiglu(gu); x += act·Wdown^T
 *   3. gather the rows whose logits are wanted, final rmsnorm on those only, LM-head GEMM.
 * Nothing here allocates after load/scratch init.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "models/llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------------------------------- */
/* Loading                                                                                  */

static tinfer_status own(tinfer_llama_weights *w, size_t bytes, void **out, tinfer_err *err,
                         const char *what) {
    if (w->n_owned == w->cap_owned) {
        int32_t cap = w->cap_owned ? 2 * w->cap_owned : 64;
        void **p = realloc(w->owned, (size_t)cap * sizeof *p);
        if (!p) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (weights)");
        w->owned = p;
        w->cap_owned = cap;
    }
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory: %zu bytes for %s",
                              bytes, what);
    w->owned[w->n_owned++] = p;
    w->owned_bytes += bytes;
    *out = p;
    return TINFER_OK;
}

/* Converts n elements of src (dtype sdt) into dst of dtype ddt (F32 or BF16). BF16->BF16 and
 * F32->F32 are copies; everything else goes through F32 (exact for F16/BF16 -> F32). */
static void convert(void *dst, tinfer_dtype ddt, const void *src, tinfer_dtype sdt, int64_t n) {
    if (ddt == sdt) {
        memcpy(dst, src, (size_t)n * tinfer_dtype_size(sdt));
        return;
    }
    const unsigned char *s = src;
    for (int64_t i = 0; i < n; i++) {
        float f;
        if (sdt == TINFER_DTYPE_F32) {
            memcpy(&f, s + 4 * i, 4);
        } else {
            uint16_t h;
            memcpy(&h, s + 2 * i, 2);
            f = sdt == TINFER_DTYPE_BF16 ? tinfer_bf16_to_f32(h) : tinfer_f16_to_f32(h);
        }
        if (ddt == TINFER_DTYPE_F32) {
            ((float *)dst)[i] = f;
        } else {
            uint16_t h = tinfer_f32_to_bf16(f);
            memcpy((unsigned char *)dst + 2 * i, &h, 2);
        }
    }
}

/* Fetches `name` with the expected shape; a weight usable in place when BF16/F32 and aligned,
 * else a widened F32 copy. */
static tinfer_status get_weight(tinfer_llama_weights *w, const tinfer_tensor_source *st, const char *name,
                                int32_t n_dims, int64_t d0, int64_t d1, tinfer_weight *out,
                                tinfer_err *err) {
    int64_t shape[2] = {d0, d1};
    tinfer_tensor_ref v;
    tinfer_status rc = st->get(st->ctx, name, n_dims, shape, &v, err);
    if (rc != TINFER_OK) return rc;
    size_t esz = tinfer_dtype_size(v.dtype);
    if (v.dtype != TINFER_DTYPE_F16 && ((uintptr_t)v.data % esz) == 0) {
        out->data = v.data;
        out->dtype = v.dtype;
        return TINFER_OK;
    }
    void *p = NULL;
    rc = own(w, (size_t)v.n_elems * sizeof(float), &p, err, name);
    if (rc != TINFER_OK) return rc;
    convert(p, TINFER_DTYPE_F32, v.data, v.dtype, v.n_elems);
    out->data = p;
    out->dtype = TINFER_DTYPE_F32;
    return TINFER_OK;
}

/* Fuses n_parts matrices [rows_i, K] named names[i] into one [sum rows_i, K] matrix (rows
 * stacked in order): BF16 when every part is BF16, else F32. */
static tinfer_status fuse(tinfer_llama_weights *w, const tinfer_tensor_source *st, int32_t n_parts,
                          char names[][160], const int64_t *rows, int64_t K, tinfer_weight *out,
                          tinfer_err *err) {
    tinfer_tensor_ref v[4];
    int64_t total = 0;
    bool all_bf16 = true;
    for (int32_t i = 0; i < n_parts; i++) {
        int64_t shape[2] = {rows[i], K};
        tinfer_status rc = st->get(st->ctx, names[i], 2, shape, &v[i], err);
        if (rc != TINFER_OK) return rc;
        all_bf16 = all_bf16 && v[i].dtype == TINFER_DTYPE_BF16;
        total += rows[i];
    }
    tinfer_dtype dt = all_bf16 ? TINFER_DTYPE_BF16 : TINFER_DTYPE_F32;
    void *p = NULL;
    tinfer_status rc = own(w, (size_t)(total * K) * tinfer_dtype_size(dt), &p, err, names[0]);
    if (rc != TINFER_OK) return rc;
    unsigned char *dst = p;
    for (int32_t i = 0; i < n_parts; i++) {
        convert(dst, dt, v[i].data, v[i].dtype, rows[i] * K);
        dst += (size_t)(rows[i] * K) * tinfer_dtype_size(dt);
    }
    out->data = p;
    out->dtype = dt;
    w->fused_dtype = dt;
    return TINFER_OK;
}

/* A bias vector [n] (always copied to F32: tiny). */
static tinfer_status get_bias(tinfer_llama_weights *w, const tinfer_tensor_source *st, const char *name,
                              int64_t n, float *dst, tinfer_err *err) {
    tinfer_tensor_ref v;
    tinfer_status rc = st->get(st->ctx, name, 1, &n, &v, err);
    if (rc != TINFER_OK) return rc;
    (void)w;
    convert(dst, TINFER_DTYPE_F32, v.data, v.dtype, n);
    return TINFER_OK;
}

tinfer_status tinfer_llama_load(const tinfer_llama_config *cfg, const tinfer_tensor_source *st,
                                tinfer_llama_weights *w, tinfer_err *err) {
    memset(w, 0, sizeof *w);
    const int64_t E = cfg->n_embd, Q = (int64_t)cfg->n_head * cfg->head_dim,
                  KV = (int64_t)cfg->n_head_kv * cfg->head_dim, F = cfg->n_ff, V = cfg->n_vocab;
    tinfer_status rc;
    char name[4][160];
    w->layers = calloc((size_t)cfg->n_layer, sizeof *w->layers);
    if (!w->layers) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (layers)");
    w->n_layer = cfg->n_layer;

    rc = get_weight(w, st, "model.embed_tokens.weight", 2, V, E, &w->tok_embd, err);
    if (rc != TINFER_OK) goto fail;
    rc = get_weight(w, st, "model.norm.weight", 1, E, 0, &w->out_norm, err);
    if (rc != TINFER_OK) goto fail;
    if (cfg->tie_word_embeddings) {
        w->lm_head = w->tok_embd;
    } else {
        rc = get_weight(w, st, "lm_head.weight", 2, V, E, &w->lm_head, err);
        if (rc != TINFER_OK) goto fail;
    }

    for (int32_t l = 0; l < cfg->n_layer; l++) {
        tinfer_llama_layer *ly = &w->layers[l];
        char pre[64];
        snprintf(pre, sizeof pre, "model.layers.%d.", (int)l);
#define NAME(i, suffix) snprintf(name[i], sizeof name[i], "%s%s", pre, suffix)
        NAME(0, "input_layernorm.weight");
        rc = get_weight(w, st, name[0], 1, E, 0, &ly->attn_norm, err);
        if (rc != TINFER_OK) goto fail;
        NAME(0, "post_attention_layernorm.weight");
        rc = get_weight(w, st, name[0], 1, E, 0, &ly->ffn_norm, err);
        if (rc != TINFER_OK) goto fail;

        NAME(0, "self_attn.q_proj.weight");
        NAME(1, "self_attn.k_proj.weight");
        NAME(2, "self_attn.v_proj.weight");
        const int64_t qkv_rows[3] = {Q, KV, KV};
        rc = fuse(w, st, 3, name, qkv_rows, E, &ly->wqkv, err);
        if (rc != TINFER_OK) goto fail;
        if (cfg->qkv_bias) {
            float *b = NULL;
            rc = own(w, (size_t)(Q + 2 * KV) * sizeof(float), (void **)&b, err, "qkv bias");
            if (rc != TINFER_OK) goto fail;
            NAME(0, "self_attn.q_proj.bias");
            NAME(1, "self_attn.k_proj.bias");
            NAME(2, "self_attn.v_proj.bias");
            if ((rc = get_bias(w, st, name[0], Q, b, err)) != TINFER_OK ||
                (rc = get_bias(w, st, name[1], KV, b + Q, err)) != TINFER_OK ||
                (rc = get_bias(w, st, name[2], KV, b + Q + KV, err)) != TINFER_OK)
                goto fail;
            ly->bqkv = b;
        }
        NAME(0, "self_attn.o_proj.weight");
        rc = get_weight(w, st, name[0], 2, E, Q, &ly->wo, err);
        if (rc != TINFER_OK) goto fail;
        /* Llama's attention_bias also puts a bias on o_proj (Qwen2 has none): load it when the
         * checkpoint carries one. */
        NAME(0, "self_attn.o_proj.bias");
        if (st->has(st->ctx, name[0])) {
            float *b = NULL;
            rc = own(w, (size_t)E * sizeof(float), (void **)&b, err, name[0]);
            if (rc != TINFER_OK) goto fail;
            if ((rc = get_bias(w, st, name[0], E, b, err)) != TINFER_OK) goto fail;
            ly->bo = b;
        }

        NAME(0, "mlp.gate_proj.weight");
        NAME(1, "mlp.up_proj.weight");
        const int64_t gu_rows[2] = {F, F};
        rc = fuse(w, st, 2, name, gu_rows, E, &ly->wgu, err);
        if (rc != TINFER_OK) goto fail;
        NAME(0, "mlp.down_proj.weight");
        rc = get_weight(w, st, name[0], 2, E, F, &ly->wdown, err);
        if (rc != TINFER_OK) goto fail;
#undef NAME
    }
    return TINFER_OK;
fail:
    tinfer_llama_free(w);
    return rc;
}

void tinfer_llama_free(tinfer_llama_weights *w) {
    if (!w) return;
    for (int32_t i = 0; i < w->n_owned; i++) free(w->owned[i]);
    free(w->owned);
    free(w->layers);
    memset(w, 0, sizeof *w);
}

/* ---------------------------------------------------------------------------------------- */
/* Scratch                                                                                  */

tinfer_status tinfer_llama_scratch_init(const tinfer_llama_config *cfg, int32_t n_batch,
                                        int32_t n_seq, tinfer_llama_scratch *s, tinfer_err *err) {
    memset(s, 0, sizeof *s);
    const size_t nb = (size_t)n_batch, E = (size_t)cfg->n_embd,
                 Q = (size_t)cfg->n_head * (size_t)cfg->head_dim,
                 KV = (size_t)cfg->n_head_kv * (size_t)cfg->head_dim, F = (size_t)cfg->n_ff;
    s->n_batch = n_batch;
    s->n_seq = n_seq;
    s->x = malloc(nb * E * sizeof(float));
    s->xb = malloc(nb * E * sizeof(float));
    s->qkv = malloc(nb * (Q + 2 * KV) * sizeof(float));
    s->att = malloc(nb * Q * sizeof(float));
    s->gu = malloc(nb * 2 * F * sizeof(float));
    s->act = malloc(nb * F * sizeof(float));
    s->order = malloc(nb * sizeof(int32_t));
    s->inv = malloc(nb * sizeof(int32_t));
    s->tok = malloc(nb * sizeof(int32_t));
    s->pos = malloc(nb * sizeof(int32_t));
    s->seq_start = malloc(((size_t)n_seq + 1) * sizeof(int32_t));
    if (!s->x || !s->xb || !s->qkv || !s->att || !s->gu || !s->act || !s->order || !s->inv ||
        !s->tok || !s->pos || !s->seq_start) {
        tinfer_llama_scratch_free(s);
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY,
                              "out of memory: forward scratch for n_batch %d", (int)n_batch);
    }
    return TINFER_OK;
}

void tinfer_llama_scratch_free(tinfer_llama_scratch *s) {
    if (!s) return;
    free(s->x);
    free(s->xb);
    free(s->qkv);
    free(s->att);
    free(s->gu);
    free(s->act);
    free(s->order);
    free(s->inv);
    free(s->tok);
    free(s->pos);
    free(s->seq_start);
    memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------------------------------- */
/* Forward                                                                                  */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs one backend call, returning its error; timed into the scratch when profiling. */
#define OP(id, call)                                                                               \
    do {                                                                                           \
        const double t0_ = s->profile ? now_s() : 0.0;                                             \
        tinfer_status rc_ = (call);                                                                \
        if (rc_ != TINFER_OK) return rc_;                                                          \
        if (s->profile) {                                                                          \
            s->op_seconds[TINFER_LLAMA_OP_##id] += now_s() - t0_;                                  \
            s->op_calls[TINFER_LLAMA_OP_##id]++;                                                   \
        }                                                                                          \
    } while (0)

tinfer_status tinfer_llama_forward(const tinfer_backend_ops *be, void *bs,
                                   const tinfer_llama_config *cfg, const tinfer_llama_weights *w,
                                   tinfer_llama_scratch *s, float *k_cache, float *v_cache,
                                   int32_t n_ctx, int32_t n, const int32_t *token,
                                   const int32_t *pos, const int32_t *seq, const int32_t *out_rows,
                                   int32_t n_out, float *logits, tinfer_err *err) {
    if (n < 1 || n > s->n_batch || n_out < 0 || n_out > n)
        return tinfer_err_set(err, TINFER_ERR_INTERNAL,
                              "llama forward: batch of %d tokens (%d logits) for scratch of %d",
                              (int)n, (int)n_out, (int)s->n_batch);
    const int64_t E = cfg->n_embd, Q = (int64_t)cfg->n_head * cfg->head_dim,
                  KV = (int64_t)cfg->n_head_kv * cfg->head_dim, F = cfg->n_ff, V = cfg->n_vocab,
                  QKV = Q + 2 * KV;
    const float eps = cfg->rms_norm_eps;

    /* 0. stable counting sort by sequence id */
    int32_t *start = s->seq_start;
    memset(start, 0, ((size_t)s->n_seq + 1) * sizeof *start);
    for (int32_t i = 0; i < n; i++) start[seq[i] + 1]++;
    for (int32_t q = 0; q < s->n_seq; q++) start[q + 1] += start[q];
    for (int32_t i = 0; i < n; i++) {
        /* start[seq] is used as the fill cursor here and restored below */
        int32_t j = start[seq[i]]++;
        s->order[j] = i;
        s->inv[i] = j;
        s->tok[j] = token[i];
        s->pos[j] = pos[i];
    }
    for (int32_t q = s->n_seq; q > 0; q--) start[q] = start[q - 1];
    start[0] = 0;

    /* 1. embeddings */
    OP(EMBED, be->embed(bs, s->x, w->tok_embd.data, w->tok_embd.dtype, s->tok, n, E));

    const size_t layer_stride = (size_t)n_ctx * (size_t)KV;        /* one (seq, layer) */
    const size_t seq_stride = (size_t)cfg->n_layer * layer_stride; /* one sequence */
    for (int32_t l = 0; l < cfg->n_layer; l++) {
        const tinfer_llama_layer *ly = &w->layers[l];
        /* 2a. attention block */
        OP(NORM, be->rmsnorm(bs, s->xb, s->x, ly->attn_norm.data, ly->attn_norm.dtype, n, E, eps));
        OP(QKV, be->matmul(bs, n, QKV, E, s->xb, E, ly->wqkv.data, ly->wqkv.dtype, E, ly->bqkv,
                           s->qkv, QKV, false));
        OP(ROPE, be->rope(bs, s->qkv, n, QKV, cfg->n_head, cfg->head_dim, s->pos, cfg->rope_theta));
        OP(ROPE, be->rope(bs, s->qkv + Q, n, QKV, cfg->n_head_kv, cfg->head_dim, s->pos,
                          cfg->rope_theta));
        for (int32_t q = 0; q < s->n_seq; q++) {
            int32_t b = start[q], cnt = start[q + 1] - start[q];
            if (cnt == 0) continue;
            float *kc = k_cache + (size_t)q * seq_stride + (size_t)l * layer_stride;
            float *vc = v_cache + (size_t)q * seq_stride + (size_t)l * layer_stride;
            /* positions of one sequence are contiguous: its rows land in one block */
            const size_t at = (size_t)s->pos[b] * (size_t)KV;
            OP(KV_STORE,
               be->copy_rows(bs, kc + at, KV, s->qkv + (size_t)b * QKV + Q, QKV, cnt, KV));
            OP(KV_STORE,
               be->copy_rows(bs, vc + at, KV, s->qkv + (size_t)b * QKV + Q + KV, QKV, cnt, KV));
            OP(ATTN,
               be->attention(bs, s->att + (size_t)b * Q, Q, s->qkv + (size_t)b * QKV, QKV, kc, vc,
                             cnt, s->pos + b, cfg->n_head, cfg->n_head_kv, cfg->head_dim));
        }
        OP(WO,
           be->matmul(bs, n, E, Q, s->att, Q, ly->wo.data, ly->wo.dtype, Q, ly->bo, s->x, E, true));
        /* 2b. feed-forward block */
        OP(NORM, be->rmsnorm(bs, s->xb, s->x, ly->ffn_norm.data, ly->ffn_norm.dtype, n, E, eps));
        OP(GATE_UP, be->matmul(bs, n, 2 * F, E, s->xb, E, ly->wgu.data, ly->wgu.dtype, E, NULL,
                               s->gu, 2 * F, false));
        OP(SWIGLU, be->swiglu(bs, s->act, s->gu, n, F));
        OP(DOWN, be->matmul(bs, n, E, F, s->act, F, ly->wdown.data, ly->wdown.dtype, F, NULL, s->x,
                            E, true));
    }

    /* 3. logits only for the requested rows */
    if (n_out == 0) return TINFER_OK;
    for (int32_t j = 0; j < n_out; j++)
        OP(KV_STORE, be->copy_rows(bs, s->xb + (size_t)j * E, E,
                                   s->x + (size_t)s->inv[out_rows[j]] * E, E, 1, E));
    OP(NORM, be->rmsnorm(bs, s->xb, s->xb, w->out_norm.data, w->out_norm.dtype, n_out, E, eps));
    OP(LM_HEAD, be->matmul(bs, n_out, V, E, s->xb, E, w->lm_head.data, w->lm_head.dtype, E, NULL,
                           logits, V, false));
    return TINFER_OK;
}

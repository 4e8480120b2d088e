/*
 * llama.c — Llama-family weights (HF tensor names -> tinfer_llama_weights) and the batched
 * forward pass (see llama.h for the layouts).
 *
 * Forward over a batch of n tokens, possibly from several sequences, written once against the
 * backend seam (models/backend.h) for every backend:
 *   0. the plan: sort the batch by sequence (stable counting sort), so each sequence's tokens
 *      are one contiguous run with ascending positions; every per-token op is order-independent
 *      and attention sees each sequence as one block; the backend takes the plan (begin);
 *   1. x = embed(tokens)
 *   2. per layer: xb = rmsnorm(x); qkv = xb·Wqkv^T (+b) [one GEMM, M = n]; rope on q and k
 *      fused with the k, v rows' write into each sequence's cache; attention of every sequence
 *      (query at pos p sees cache rows 0..p: causal inside the batch because the whole batch's
 *      K/V are written first); x += att·Wo^T [the residual add in the GEMM's epilogue];
 *      xb = rmsnorm(x); act = swiglu(xb·Wgu^T) [in the epilogue]; x += act·Wdown^T
 *   3. gather the rows whose logits are wanted and apply the final rmsnorm to those only (one
 *      op), LM-head GEMM; the backend hands the logits over in host memory.
 * Nothing here allocates after load/scratch init; nothing here knows which backend runs.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "models/llama.h"

#include "base/q8_0.h"

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

/* Q8_0 values dequantized to F32 (n a multiple of 32; scale of element i at s[i / 32]). */
static void dequant_q8(float *dst, const int8_t *q, const uint16_t *s, int64_t n) {
    for (int64_t b = 0; b < n / TINFER_Q8_0_BLOCK; b++)
        tinfer_q8_0_dequantize_block(q + b * TINFER_Q8_0_BLOCK, s[b], dst + b * TINFER_Q8_0_BLOCK);
}

/* The Q8_0 weight whose I8 values `name` [rows, K] the caller fetched (v): checks the config
 * says q8_0, K % 32 == 0, and fetches the F16 scales `name`_scale [rows, K / 32] (copied when
 * misaligned), every one finite. */
static tinfer_status get_q8(tinfer_llama_weights *w, const tinfer_llama_config *cfg,
                            const tinfer_tensor_source *st, const char *name, int64_t rows,
                            int64_t K, const tinfer_tensor_ref *v, tinfer_weight *out,
                            tinfer_err *err) {
    if (!cfg->q8_0)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "tensor '%s' is I8 but config.json has no quantization_config with "
                              "quant_method q8_0",
                              name);
    if (K % TINFER_Q8_0_BLOCK != 0)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "tensor '%s': I8 (Q8_0) needs rows of a multiple of 32, rows are %lld",
                              name, (long long)K);
    char sname[192];
    snprintf(sname, sizeof sname, "%s_scale", name);
    if (!st->has(st->ctx, sname))
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "missing tensor '%s' (the F16 scales of the Q8_0 tensor '%s')", sname,
                              name);
    int64_t shape[2] = {rows, K / TINFER_Q8_0_BLOCK};
    tinfer_tensor_ref sv;
    tinfer_status rc = st->get(st->ctx, sname, 2, shape, &sv, err);
    if (rc != TINFER_OK) return rc;
    if (sv.dtype != TINFER_DTYPE_F16)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "tensor '%s': dtype %s, but the scales of a Q8_0 weight are F16",
                              sname, tinfer_dtype_name(sv.dtype));
    const uint16_t *sc = sv.data;
    if ((uintptr_t)sv.data % 2 != 0) {
        void *p = NULL;
        if ((rc = own(w, (size_t)sv.n_elems * 2, &p, err, sname)) != TINFER_OK) return rc;
        memcpy(p, sv.data, (size_t)sv.n_elems * 2);
        sc = p;
    }
    for (int64_t i = 0; i < sv.n_elems; i++)
        if ((sc[i] & 0x7c00u) == 0x7c00u)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "tensor '%s': scale %lld (row %lld) is not finite", sname,
                                  (long long)i, (long long)(i / shape[1]));
    *out = (tinfer_weight){v->data, TINFER_DTYPE_Q8_0, sc};
    return TINFER_OK;
}

/* Fetches `name` with the expected shape; a weight usable in place when BF16/F32 and aligned,
 * or Q8_0 (I8 + scales) where q8 is set (the config; NULL: I8 is refused), else a widened F32
 * copy. */
static tinfer_status get_weight(tinfer_llama_weights *w, const tinfer_tensor_source *st, const char *name,
                                int32_t n_dims, int64_t d0, int64_t d1, tinfer_weight *out,
                                const tinfer_llama_config *q8, tinfer_err *err) {
    int64_t shape[2] = {d0, d1};
    tinfer_tensor_ref v;
    tinfer_status rc = st->get(st->ctx, name, n_dims, shape, &v, err);
    if (rc != TINFER_OK) return rc;
    if (v.dtype == TINFER_DTYPE_I8) {
        if (!q8 || n_dims != 2)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "tensor '%s' is I8: only the projection matrices and lm_head may "
                                  "be Q8_0",
                                  name);
        return get_q8(w, q8, st, name, d0, d1, &v, out, err);
    }
    size_t esz = tinfer_dtype_size(v.dtype);
    if (v.dtype != TINFER_DTYPE_F16 && ((uintptr_t)v.data % esz) == 0) {
        out->data = v.data;
        out->dtype = v.dtype;
        out->scale = NULL;
        return TINFER_OK;
    }
    void *p = NULL;
    rc = own(w, (size_t)v.n_elems * sizeof(float), &p, err, name);
    if (rc != TINFER_OK) return rc;
    convert(p, TINFER_DTYPE_F32, v.data, v.dtype, v.n_elems);
    *out = (tinfer_weight){p, TINFER_DTYPE_F32, NULL};
    return TINFER_OK;
}

/* Fuses n_parts matrices [rows_i, K] named names[i] into one [sum rows_i, K] matrix (rows
 * stacked in order): Q8_0 when every part is (values stacked, scales stacked the same way), BF16
 * when every part is BF16, else F32 (Q8_0 parts dequantized). */
static tinfer_status fuse(tinfer_llama_weights *w, const tinfer_llama_config *cfg,
                          const tinfer_tensor_source *st, int32_t n_parts, char names[][160],
                          const int64_t *rows, int64_t K, tinfer_weight *out, tinfer_err *err) {
    tinfer_tensor_ref v[4];
    tinfer_weight q[4] = {{0}};
    int64_t total = 0;
    bool all_bf16 = true, all_q8 = true;
    for (int32_t i = 0; i < n_parts; i++) {
        int64_t shape[2] = {rows[i], K};
        tinfer_status rc = st->get(st->ctx, names[i], 2, shape, &v[i], err);
        if (rc != TINFER_OK) return rc;
        if (v[i].dtype == TINFER_DTYPE_I8 &&
            (rc = get_q8(w, cfg, st, names[i], rows[i], K, &v[i], &q[i], err)) != TINFER_OK)
            return rc;
        all_bf16 = all_bf16 && v[i].dtype == TINFER_DTYPE_BF16;
        all_q8 = all_q8 && v[i].dtype == TINFER_DTYPE_I8;
        total += rows[i];
    }
    void *p = NULL;
    tinfer_status rc;
    if (all_q8) {
        const int64_t nb = K / TINFER_Q8_0_BLOCK;
        rc = own(w, (size_t)(total * K), &p, err, names[0]);
        void *ps = NULL;
        if (rc == TINFER_OK) rc = own(w, (size_t)(total * nb) * 2, &ps, err, names[0]);
        if (rc != TINFER_OK) return rc;
        unsigned char *dv = p, *ds = ps;
        for (int32_t i = 0; i < n_parts; i++) {
            memcpy(dv, q[i].data, (size_t)(rows[i] * K));
            memcpy(ds, q[i].scale, (size_t)(rows[i] * nb) * 2);
            dv += rows[i] * K;
            ds += rows[i] * nb * 2;
        }
        *out = (tinfer_weight){p, TINFER_DTYPE_Q8_0, ps};
        w->fused_dtype = TINFER_DTYPE_Q8_0;
        return TINFER_OK;
    }
    tinfer_dtype dt = all_bf16 ? TINFER_DTYPE_BF16 : TINFER_DTYPE_F32;
    rc = own(w, (size_t)(total * K) * tinfer_dtype_size(dt), &p, err, names[0]);
    if (rc != TINFER_OK) return rc;
    unsigned char *dst = p;
    for (int32_t i = 0; i < n_parts; i++) {
        if (v[i].dtype == TINFER_DTYPE_I8)
            dequant_q8((float *)(void *)dst, q[i].data, q[i].scale, rows[i] * K);
        else
            convert(dst, dt, v[i].data, v[i].dtype, rows[i] * K);
        dst += (size_t)(rows[i] * K) * tinfer_dtype_size(dt);
    }
    *out = (tinfer_weight){p, dt, NULL};
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
    if (v.dtype == TINFER_DTYPE_I8)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "tensor '%s' is I8: biases are not quantized",
                              name);
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

    rc = get_weight(w, st, "model.embed_tokens.weight", 2, V, E, &w->tok_embd, NULL, err);
    if (rc != TINFER_OK) goto fail;
    rc = get_weight(w, st, "model.norm.weight", 1, E, 0, &w->out_norm, NULL, err);
    if (rc != TINFER_OK) goto fail;
    if (cfg->tie_word_embeddings) {
        w->lm_head = w->tok_embd;
    } else {
        rc = get_weight(w, st, "lm_head.weight", 2, V, E, &w->lm_head, cfg, err);
        if (rc != TINFER_OK) goto fail;
    }

    for (int32_t l = 0; l < cfg->n_layer; l++) {
        tinfer_llama_layer *ly = &w->layers[l];
        char pre[64];
        snprintf(pre, sizeof pre, "model.layers.%d.", (int)l);
#define NAME(i, suffix) snprintf(name[i], sizeof name[i], "%s%s", pre, suffix)
        NAME(0, "input_layernorm.weight");
        rc = get_weight(w, st, name[0], 1, E, 0, &ly->attn_norm, NULL, err);
        if (rc != TINFER_OK) goto fail;
        NAME(0, "post_attention_layernorm.weight");
        rc = get_weight(w, st, name[0], 1, E, 0, &ly->ffn_norm, NULL, err);
        if (rc != TINFER_OK) goto fail;

        NAME(0, "self_attn.q_proj.weight");
        NAME(1, "self_attn.k_proj.weight");
        NAME(2, "self_attn.v_proj.weight");
        const int64_t qkv_rows[3] = {Q, KV, KV};
        rc = fuse(w, cfg, st, 3, name, qkv_rows, E, &ly->wqkv, err);
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
            ly->bqkv = (tinfer_weight){b, TINFER_DTYPE_F32, NULL};
        }
        NAME(0, "self_attn.o_proj.weight");
        rc = get_weight(w, st, name[0], 2, E, Q, &ly->wo, cfg, err);
        if (rc != TINFER_OK) goto fail;
        /* Llama's attention_bias also puts a bias on o_proj (Qwen2 has none): load it when the
         * checkpoint carries one. */
        NAME(0, "self_attn.o_proj.bias");
        if (st->has(st->ctx, name[0])) {
            float *b = NULL;
            rc = own(w, (size_t)E * sizeof(float), (void **)&b, err, name[0]);
            if (rc != TINFER_OK) goto fail;
            if ((rc = get_bias(w, st, name[0], E, b, err)) != TINFER_OK) goto fail;
            ly->bo = (tinfer_weight){b, TINFER_DTYPE_F32, NULL};
        }

        NAME(0, "mlp.gate_proj.weight");
        NAME(1, "mlp.up_proj.weight");
        const int64_t gu_rows[2] = {F, F};
        rc = fuse(w, cfg, st, 2, name, gu_rows, E, &ly->wgu, err);
        if (rc != TINFER_OK) goto fail;
        NAME(0, "mlp.down_proj.weight");
        rc = get_weight(w, st, name[0], 2, E, F, &ly->wdown, cfg, err);
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
    (void)cfg;
    memset(s, 0, sizeof *s);
    const size_t nb = (size_t)n_batch;
    s->n_batch = n_batch;
    s->n_seq = n_seq;
    s->inv = malloc(nb * sizeof(int32_t));
    s->tok = malloc(nb * sizeof(int32_t));
    s->pos = malloc(nb * sizeof(int32_t));
    s->seq = malloc(nb * sizeof(int32_t));
    s->out_rows = malloc(nb * sizeof(int32_t));
    s->iota = malloc(nb * sizeof(int32_t));
    s->seq_start = malloc(((size_t)n_seq + 1) * sizeof(int32_t));
    if (!s->inv || !s->tok || !s->pos || !s->seq || !s->out_rows || !s->iota || !s->seq_start) {
        tinfer_llama_scratch_free(s);
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY,
                              "out of memory: batch plan for n_batch %d", (int)n_batch);
    }
    for (int32_t i = 0; i < n_batch; i++)
        s->iota[i] = i;
    return TINFER_OK;
}

void tinfer_llama_scratch_free(tinfer_llama_scratch *s) {
    if (!s) return;
    free(s->inv);
    free(s->tok);
    free(s->pos);
    free(s->seq);
    free(s->out_rows);
    free(s->iota);
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

/* Runs one backend call; a failure carries the backend's message up. Timed into the scratch
 * when profiling. */
#define OP(id, call)                                                                               \
    do {                                                                                           \
        const double t0_ = s->profile ? now_s() : 0.0;                                             \
        tinfer_status rc_ = (call);                                                                \
        if (rc_ != TINFER_OK) return tinfer_err_set(err, rc_, "%s", be->last_error(cs));           \
        if (s->profile) {                                                                          \
            s->op_seconds[TINFER_LLAMA_OP_##id] += now_s() - t0_;                                  \
            s->op_calls[TINFER_LLAMA_OP_##id]++;                                                   \
        }                                                                                          \
    } while (0)

/* The step's plan and every op of the forward pass, up to (not including) the backend's call
 * that runs them and hands back the logits. */
static tinfer_status record_step(const tinfer_backend_ops *be, void *cs,
                                 const tinfer_llama_config *cfg, const tinfer_llama_weights *w,
                                 tinfer_llama_scratch *s, int32_t n, const int32_t *token,
                                 const int32_t *pos, const int32_t *seq, const int32_t *out_rows,
                                 int32_t n_out, tinfer_err *err) {
    if (n < 1 || n > s->n_batch || n_out < 0 || n_out > n)
        return tinfer_err_set(err, TINFER_ERR_INTERNAL,
                              "llama forward: batch of %d tokens (%d logits) for scratch of %d",
                              (int)n, (int)n_out, (int)s->n_batch);
    const int64_t E = cfg->n_embd, Q = (int64_t)cfg->n_head * cfg->head_dim,
                  KV = (int64_t)cfg->n_head_kv * cfg->head_dim, F = cfg->n_ff, V = cfg->n_vocab,
                  QKV = Q + 2 * KV;
    const float eps = cfg->rms_norm_eps;

    /* 0. the plan: a stable counting sort by sequence, so each sequence's tokens are one
     *    contiguous run with ascending positions (every per-token op is order-independent) */
    int32_t *start = s->seq_start;
    memset(start, 0, ((size_t)s->n_seq + 1) * sizeof *start);
    for (int32_t i = 0; i < n; i++) start[seq[i] + 1]++;
    for (int32_t q = 0; q < s->n_seq; q++) start[q + 1] += start[q];
    for (int32_t i = 0; i < n; i++) {
        /* start[seq] is used as the fill cursor here and restored below */
        int32_t j = start[seq[i]]++;
        s->inv[i] = j;
        s->tok[j] = token[i];
        s->pos[j] = pos[i];
        s->seq[j] = seq[i];
    }
    for (int32_t q = s->n_seq; q > 0; q--) start[q] = start[q - 1];
    start[0] = 0;
    for (int32_t j = 0; j < n_out; j++) s->out_rows[j] = s->inv[out_rows[j]];
    s->plan = (tinfer_batch_plan){n, s->tok, s->pos, s->seq, s->n_seq, start, n_out, s->out_rows};
    OP(EMBED, be->begin(cs, &s->plan));

    /* 1. embeddings                                                   X [n, E] */
    OP(EMBED, be->embed(cs, TINFER_BUF_X, &w->tok_embd));

    for (int32_t l = 0; l < cfg->n_layer; l++) {
        const tinfer_llama_layer *ly = &w->layers[l];
        /* 2a. attention block */
        OP(NORM, be->rmsnorm(cs, TINFER_BUF_XB, TINFER_BUF_X, &ly->attn_norm, eps, false));
        /*                                                             QKV [n, Q + 2 KV] */
        OP(QKV, be->matmul(cs, TINFER_BUF_QKV, TINFER_BUF_XB, &ly->wqkv, &ly->bqkv, QKV, E,
                           TINFER_EPI_STORE, false));
        /* q, k rotated; k, v rows into each sequence's cache at their positions */
        OP(ROPE_KV, be->rope_kv(cs, l));
        /* query at pos p sees its sequence's cache rows 0..p          ATT [n, Q] */
        OP(ATTN, be->attention(cs, l));
        /*                                                             X += ATT · Wo^T */
        OP(WO, be->matmul(cs, TINFER_BUF_X, TINFER_BUF_ATT, &ly->wo, &ly->bo, E, Q,
                          TINFER_EPI_RESIDUAL, false));
        /* 2b. feed-forward block */
        OP(NORM, be->rmsnorm(cs, TINFER_BUF_XB, TINFER_BUF_X, &ly->ffn_norm, eps, false));
        /*                                                             ACT [n, F] = swiglu(XB · Wgu^T) */
        OP(GATE_UP, be->matmul(cs, TINFER_BUF_ACT, TINFER_BUF_XB, &ly->wgu, NULL, 2 * F, E,
                               TINFER_EPI_SWIGLU, false));
        /*                                                             X += ACT · Wdown^T */
        OP(DOWN, be->matmul(cs, TINFER_BUF_X, TINFER_BUF_ACT, &ly->wdown, NULL, E, F,
                            TINFER_EPI_RESIDUAL, false));
    }

    /* 3. logits only for the requested rows: gather + final norm       XB [n_out, E] */
    if (n_out > 0) {
        OP(NORM, be->rmsnorm(cs, TINFER_BUF_XB, TINFER_BUF_X, &w->out_norm, eps, true));
        /*                                                             LOGITS [n_out, V] */
        OP(LM_HEAD, be->matmul(cs, TINFER_BUF_LOGITS, TINFER_BUF_XB, &w->lm_head, NULL, V, E,
                               TINFER_EPI_STORE, true));
    }
    return TINFER_OK;
}

tinfer_status tinfer_llama_forward(const tinfer_backend_ops *be, void *cs,
                                   const tinfer_llama_config *cfg, const tinfer_llama_weights *w,
                                   tinfer_llama_scratch *s, int32_t n, const int32_t *token,
                                   const int32_t *pos, const int32_t *seq, const int32_t *out_rows,
                                   int32_t n_out, bool need_logits, const float **logits,
                                   const int32_t **ids, tinfer_err *err) {
    *logits = NULL;
    *ids = NULL;
    tinfer_status rc = record_step(be, cs, cfg, w, s, n, token, pos, seq, out_rows, n_out, err);
    if (rc != TINFER_OK) return rc;
    OP(LM_HEAD, be->logits(cs, need_logits, logits, ids));
    return TINFER_OK;
}

tinfer_status tinfer_llama_forward_greedy(const tinfer_backend_ops *be, void *cs,
                                          const tinfer_llama_config *cfg,
                                          const tinfer_llama_weights *w, tinfer_llama_scratch *s,
                                          int32_t n, const int32_t *token, const int32_t *pos,
                                          const int32_t *seq, int32_t n_more, int32_t *ids,
                                          int32_t *n_steps, tinfer_err *err) {
    *n_steps = 0;
    tinfer_status rc = record_step(be, cs, cfg, w, s, n, token, pos, seq, s->iota, n, err);
    if (rc != TINFER_OK) return rc;
    if (n_more > 0 && be->greedy_steps) {
        const double t0 = s->profile ? now_s() : 0.0;
        int32_t ran = 0;
        rc = be->greedy_steps(cs, n_more, ids, &ran);
        if (rc == TINFER_OK) {
            if (s->profile) {
                s->op_seconds[TINFER_LLAMA_OP_LM_HEAD] += now_s() - t0;
                s->op_calls[TINFER_LLAMA_OP_LM_HEAD]++;
            }
            *n_steps = ran;
            return TINFER_OK;
        }
        if (rc != TINFER_ERR_UNSUPPORTED) return tinfer_err_set(err, rc, "%s", be->last_error(cs));
    }
    const float *logits = NULL;
    const int32_t *hid = NULL;
    OP(LM_HEAD, be->logits(cs, false, &logits, &hid));
    memcpy(ids, hid, (size_t)n * sizeof *ids);
    *n_steps = 1;
    return TINFER_OK;
}

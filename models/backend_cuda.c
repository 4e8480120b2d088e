/*
 * backend_cuda.c — the CUDA backend of backend.h: the Llama forward on one GPU through the
 * project's own kernels (no cuBLAS): the GEMMs through gemm/bf16.h's dispatcher (decode GEMV or
 * tensor-core GEMM chosen from M, the tokens of the step), everything else through ops/cuda.
 *
 * Types: weights, KV cache and GEMM inputs BF16; the residual stream, the logits and every
 * accumulation F32. Per op (gemm/bf16.h and ops/cuda/ops_cuda.h have the kernels):
 *   embed        F32 x from the BF16 table
 *   rmsnorm      F32 x -> BF16 xb (the LM head's variant gathers the rows that want logits)
 *   matmul       STORE: BF16 qkv / F32 logits; RESIDUAL: x += (F32, in the GEMM's epilogue);
 *                SWIGLU: BF16 act = silu(gate) * up (epilogue of the fused gate|up GEMM)
 *   rope_kv      RoPE of q and k in the BF16 qkv + the k / v rows into the BF16 cache
 *   attention    sequences with one token: split-KV decode; the others: flash prefill tiles
 *   logits       one device -> pinned host copy, then the only synchronisation of the step
 * Memory: every byte is planned on the host first (models/cuda_plan.h) and checked against the
 * device's free memory: weights at model_init, KV cache + activations + logits + metadata +
 * workspace at ctx_init, one allocation each. A step allocates nothing, except when it asks for
 * logits of more rows than any step before (the logits buffers grow then, once).
 * One stream per context; weights are written once at load, so every GEMM says w_static (decode
 * rungs may start streaming W before the previous kernel ends). Running a recorded step (op by
 * op, CUDA graphs, the fused decode kernel): backend_cuda_step.c.
 */
#include "models/backend_cuda_internal.h"
#include "models/backend_cuda.h"

#include "gemm/bf16.h"
#include "gemm/cuda/device.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* model level: probe, plan, upload                                                         */

/* Copies n elements of a host weight (BF16, F32 or Q8_0) into the device at dst as BF16, through
 * the host staging buffer tmp (n elements); Q8_0 is dequantized on the host (d * q rounded to
 * BF16). */
static tinfer_status upload_bf16(uint16_t *dst, const tinfer_weight *src, size_t n, uint16_t *tmp,
                                 tinfer_err *err) {
    const uint16_t *from = src->data;
    if (src->dtype == TINFER_DTYPE_Q8_0) {
        const int8_t *q = src->data;
        const uint16_t *d = src->scale;
        for (size_t i = 0; i < n; i++)
            tmp[i] = tinfer_f32_to_bf16((float)q[i] * tinfer_f16_to_f32(d[i / 32]));
        from = tmp;
    } else if (src->dtype == TINFER_DTYPE_F32) {
        const float *f = src->data;
        for (size_t i = 0; i < n; i++)
            tmp[i] = tinfer_f32_to_bf16(f[i]);
        from = tmp;
    } else if (src->dtype != TINFER_DTYPE_BF16) {
        return tinfer_err_set(err, TINFER_ERR_INTERNAL, "cuda backend: weight of dtype %s",
                              tinfer_dtype_name(src->dtype));
    }
    CUDA_OK(err, cudaMemcpy(dst, from, n * 2, cudaMemcpyHostToDevice), "uploading the weights");
    return TINFER_OK;
}

/* Places one tensor of n elements at the next aligned offset and uploads it. */
static tinfer_status place(cuda_model *m, size_t *at, const tinfer_weight *src, size_t n,
                           tinfer_weight *dst, uint16_t *tmp, tinfer_err *err) {
    if (!src->data) { /* an absent bias */
        *dst = (tinfer_weight){NULL, TINFER_DTYPE_BF16, NULL};
        return TINFER_OK;
    }
    uint16_t *p = (uint16_t *)((unsigned char *)m->wmem + *at);
    *at += (n * 2 + TINFER_CUDA_ALIGN - 1) / TINFER_CUDA_ALIGN * TINFER_CUDA_ALIGN;
    if (*at > m->wbytes)
        return tinfer_err_set(err, TINFER_ERR_INTERNAL, "cuda backend: weight plan overflow");
    *dst = (tinfer_weight){p, TINFER_DTYPE_BF16, NULL};
    return upload_bf16(p, src, n, tmp, err);
}

static void cuda_model_free(void *state) {
    cuda_model *m = state;
    if (!m) return;
    on_device(m);
    cudaFree(m->wmem);
    cudaFree(m->inv_freq);
    cudaFree(m->step_layers);
    free(m->w.layers);
    free(m);
}

static tinfer_status cuda_model_init(const tinfer_llama_config *cfg, const tinfer_llama_weights *hw,
                                     int32_t n_threads, int32_t device, void **state,
                                     const tinfer_llama_weights **dev_w, tinfer_err *err) {
    (void)n_threads;
    const size_t E = (size_t)cfg->n_embd, Q = (size_t)cfg->n_head * (size_t)cfg->head_dim,
                 KV = (size_t)cfg->n_head_kv * (size_t)cfg->head_dim, F = (size_t)cfg->n_ff,
                 V = (size_t)cfg->n_vocab, QKV = Q + 2 * KV;
    const size_t Ve = cfg->n_embd_rows > 0 ? (size_t)cfg->n_embd_rows : V; /* embedding rows */
    cuda_model *m = calloc(1, sizeof *m);
    if (!m) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (cuda backend)");
    m->device = device;
    uint16_t *tmp = NULL;
    /* no GPU: NO_DEVICE, said first; the device is current from here on */
    tinfer_status rc = tinfer_device_probe(device, &m->dev, err);
    if (rc != TINFER_OK) goto fail;
    /* what the kernels take: 16-byte rows for the GEMMs (K % 8), head_dim 64 / 128 */
    if (E % 8 || Q % 8 || F % 8 || (cfg->head_dim != 64 && cfg->head_dim != 128)) {
        rc = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                            "cuda backend: needs hidden, q and ffn sizes divisible by 8 and "
                            "head_dim 64 or 128 (model: %zu, %zu, %zu, head_dim %d)",
                            E, Q, F, (int)cfg->head_dim);
        goto fail;
    }
    m->cfg = cfg;
    const bool qkv_bias = hw->n_layer > 0 && hw->layers[0].bqkv.data,
               o_bias = hw->n_layer > 0 && hw->layers[0].bo.data;
    m->wbytes = tinfer_cuda_weight_bytes(cfg, qkv_bias, o_bias);
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    if (m->wbytes > free_b) {
        rc = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY,
                            "cuda backend: the weights need %zu bytes (BF16), %zu are free on %s",
                            m->wbytes, free_b, m->dev.name);
        goto fail;
    }
    if (cudaMalloc(&m->wmem, m->wbytes) != cudaSuccess) {
        cudaGetLastError();
        rc = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY,
                            "cuda backend: cudaMalloc of %zu bytes for the weights failed",
                            m->wbytes);
        goto fail;
    }
    m->w.layers = calloc((size_t)cfg->n_layer, sizeof *m->w.layers);
    size_t biggest = (Ve > V ? Ve : V) * E > 2 * F * E ? (Ve > V ? Ve : V) * E : 2 * F * E;
    if (QKV * E > biggest) biggest = QKV * E;
    tmp = malloc(biggest * 2);
    if (!m->w.layers || !tmp) {
        rc = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (weight staging)");
        goto fail;
    }
    m->w.n_layer = cfg->n_layer;
    m->w.fused_dtype = TINFER_DTYPE_BF16;
    size_t at = 0;
    if ((rc = place(m, &at, &hw->tok_embd, Ve * E, &m->w.tok_embd, tmp, err)) != TINFER_OK ||
        (rc = place(m, &at, &hw->out_norm, E, &m->w.out_norm, tmp, err)) != TINFER_OK)
        goto fail;
    if (cfg->tie_word_embeddings)
        m->w.lm_head = m->w.tok_embd;
    else if ((rc = place(m, &at, &hw->lm_head, V * E, &m->w.lm_head, tmp, err)) != TINFER_OK)
        goto fail;
    for (int32_t l = 0; l < cfg->n_layer; l++) {
        const tinfer_llama_layer *h = &hw->layers[l];
        tinfer_llama_layer *d = &m->w.layers[l];
        if ((rc = place(m, &at, &h->attn_norm, E, &d->attn_norm, tmp, err)) != TINFER_OK ||
            (rc = place(m, &at, &h->wqkv, QKV * E, &d->wqkv, tmp, err)) != TINFER_OK ||
            (rc = place(m, &at, &h->bqkv, QKV, &d->bqkv, tmp, err)) != TINFER_OK ||
            (rc = place(m, &at, &h->wo, E * Q, &d->wo, tmp, err)) != TINFER_OK ||
            (rc = place(m, &at, &h->bo, E, &d->bo, tmp, err)) != TINFER_OK ||
            (rc = place(m, &at, &h->ffn_norm, E, &d->ffn_norm, tmp, err)) != TINFER_OK ||
            (rc = place(m, &at, &h->wgu, 2 * F * E, &d->wgu, tmp, err)) != TINFER_OK ||
            (rc = place(m, &at, &h->wdown, E * F, &d->wdown, tmp, err)) != TINFER_OK)
            goto fail;
    }
    /* RoPE's inverse frequencies, as ops/ref/rope.c computes them (float exponent, double pow,
     * one rounding) */
    const int32_t half = cfg->head_dim / 2;
    float inv[64]; /* head_dim <= 128 */
    for (int32_t j = 0; j < half; j++) {
        float e = (float)(2 * j) / (float)cfg->head_dim;
        inv[j] = 1.0f / (float)pow((double)cfg->rope_theta, (double)e);
    }
    if (cudaMalloc((void **)&m->inv_freq, (size_t)half * sizeof(float)) != cudaSuccess ||
        cudaMemcpy(m->inv_freq, inv, (size_t)half * sizeof(float), cudaMemcpyHostToDevice) !=
            cudaSuccess) {
        cudaGetLastError();
        rc = tinfer_err_set(err, TINFER_ERR_CUDA, "cuda backend: RoPE table upload failed");
        goto fail;
    }
    /* the fused decode step's table of layer pointers */
    tinfer_op_cuda_step_layer *sl = calloc((size_t)cfg->n_layer, sizeof *sl);
    if (!sl) {
        rc = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (layer table)");
        goto fail;
    }
    for (int32_t l = 0; l < cfg->n_layer; l++) {
        const tinfer_llama_layer *d = &m->w.layers[l];
        sl[l] = (tinfer_op_cuda_step_layer){d->attn_norm.data, d->wqkv.data, d->bqkv.data,
                                            d->wo.data,        d->bo.data,   d->ffn_norm.data,
                                            d->wgu.data,       d->wdown.data};
    }
    const size_t sl_bytes = (size_t)cfg->n_layer * sizeof *sl;
    if (cudaMalloc((void **)&m->step_layers, sl_bytes) != cudaSuccess ||
        cudaMemcpy(m->step_layers, sl, sl_bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        cudaGetLastError();
        free(sl);
        rc = tinfer_err_set(err, TINFER_ERR_CUDA, "cuda backend: layer table upload failed");
        goto fail;
    }
    free(sl);
    m->step = (tinfer_op_cuda_step_model){cfg->n_layer,      cfg->n_embd,       cfg->n_ff,
                                          cfg->n_vocab,      cfg->rms_norm_eps, m->step_layers,
                                          m->w.tok_embd.data, m->w.out_norm.data, m->w.lm_head.data,
                                          m->inv_freq};
    /* the uploads above are pageable copies, which may return before their DMA lands; the
     * kernels run on non-blocking streams: wait here, once */
    if (cudaDeviceSynchronize() != cudaSuccess) {
        rc = tinfer_err_set(err, TINFER_ERR_CUDA, "cuda backend: the weight upload failed: %s",
                            cudaGetErrorString(cudaGetLastError()));
        goto fail;
    }
    snprintf(m->desc, sizeof m->desc, "cuda %s (sm_%d%d, %d SMs), weights %.1f MB bf16",
             m->dev.name, m->dev.cc_major, m->dev.cc_minor, m->dev.n_sm, m->wbytes / 1e6);
    free(tmp);
    *state = m;
    *dev_w = &m->w;
    return TINFER_OK;
fail:
    free(tmp);
    cuda_model_free(m);
    return rc;
}

static const char *cuda_model_desc(const void *state) { return ((const cuda_model *)state)->desc; }

/* What a decode step reads: the LM head and every layer's matrices once (the CPU backend's
 * count); not the embedding table, of which a step reads one row a token (an untied table is a
 * sixteenth of Llama-3-8B: counting it would overstate the bandwidth by as much). */
static int64_t cuda_weight_bytes(const void *state) {
    const cuda_model *m = state;
    const tinfer_llama_config *c = m->cfg;
    const int64_t E = c->n_embd, Q = (int64_t)c->n_head * c->head_dim,
                  KV = (int64_t)c->n_head_kv * c->head_dim, F = c->n_ff;
    return 2 * ((int64_t)c->n_vocab * E +
                (int64_t)c->n_layer * ((Q + 2 * KV) * E + E * Q + 2 * F * E + E * F));
}

/* The dispatcher's route (gemm/dispatch.cu) of each projection at M = n_tokens, the LM head at
 * M = n_logits (the rows that want logits). */
static void cuda_route_desc(const void *state, int32_t n_tokens, int32_t n_logits, char *buf,
                            size_t cap) {
    const cuda_model *m = state;
    const tinfer_llama_config *c = m->cfg;
    on_device(m); /* the dispatcher reads the current device's facts */
    const int64_t E = c->n_embd, Q = (int64_t)c->n_head * c->head_dim,
                  KV = (int64_t)c->n_head_kv * c->head_dim, F = c->n_ff;
    const struct {
        const char *name;
        int64_t M, N, K;
        int swiglu;
    } g[5] = {{"qkv", n_tokens, Q + 2 * KV, E, 0},
              {"o", n_tokens, E, Q, 0},
              {"gate/up", n_tokens, 2 * F, E, 1},
              {"down", n_tokens, E, F, 0},
              {"lm head", n_logits, c->n_vocab, E, 0}};
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < 5 && at < cap; i++) {
        tinfer_gemm_bf16_args a;
        memset(&a, 0, sizeof a);
        a.M = g[i].M, a.N = g[i].N, a.K = g[i].K, a.ldx = a.K, a.ldw = a.K;
        a.ldy = g[i].swiglu ? a.N / 2 : a.N;
        a.swiglu = g[i].swiglu;
        a.w_static = 1;
        a.y_dtype = TINFER_DTYPE_BF16;
        tinfer_gemm_bf16_route r = tinfer_gemm_bf16_route_for(&a, TINFER_GEMM_BF16_PATH_AUTO,
                                                              m->dev.cc_major, m->dev.n_sm);
        char name[64];
        int k = snprintf(buf + at, cap - at, "%s%s %s", i ? ", " : "", g[i].name,
                         tinfer_gemm_bf16_route_name(&r, name, sizeof name));
        if (k < 0) break;
        at += (size_t)k;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* context level                                                                            */

static void cuda_ctx_free(void *cs) {
    cuda_ctx *c = cs;
    if (!c) return;
    on_device(c->m);
    if (c->stream) cudaStreamSynchronize(c->stream);
    for (int i = 0; i < GRAPH_SLOTS; i++)
        if (c->g[i].exec) cudaGraphExecDestroy(c->g[i].exec);
    free(c->cmds);
    if (c->logits_own) cudaFree(c->logits);
    cudaFree(c->mem);
    cudaFree(c->bar);
    cudaFree(c->ll);
    cudaFreeHost(c->h_logits);
    cudaFreeHost(c->h_meta);
    cudaFreeHost(c->h_ids);
    cudaFree(c->vals);
    cudaFreeHost(c->h_vals);
    for (int i = 0; i < MICRO_MAX - 1; i++) {
        if (c->side[i]) cudaStreamDestroy(c->side[i]);
        if (c->join[i]) cudaEventDestroy(c->join[i]);
    }
    if (c->fork) cudaEventDestroy(c->fork);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

/* The device's addresses of the pinned host outputs (NULL where the memory is not mapped: then
 * every step downloads them). */
static void host_dev_ptrs(cuda_ctx *c) {
    void *d = NULL;
    c->h_logits_dev = cudaHostGetDevicePointer(&d, c->h_logits, 0) == cudaSuccess ? d : NULL;
    d = NULL;
    c->h_ids_dev = cudaHostGetDevicePointer(&d, c->h_ids, 0) == cudaSuccess ? d : NULL;
    cudaGetLastError();
}

static tinfer_status cuda_ctx_init(void *model_state, int32_t n_seq, int32_t n_ctx, int32_t n_batch,
                                   int32_t n_threads, bool graphs, int32_t fused_decode,
                                   int32_t micro_batches, void **ctx_state, tinfer_err *err) {
    (void)n_threads;
    const cuda_model *m = model_state;
    const tinfer_llama_config *cfg = m->cfg;
    on_device(m);
    cuda_ctx *c = calloc(1, sizeof *c);
    if (!c) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (context)");
    c->m = m;
    c->n_seq = n_seq;
    c->n_ctx = n_ctx;
    c->n_batch = n_batch;
    c->n_logits = n_seq < n_batch ? n_seq : n_batch;
    c->graphs = graphs;
    c->fused = fused_decode;
    c->micro = micro_batches;
    c->cap_cmds = 10 * cfg->n_layer + 8; /* llama.c: 2 + 8 per layer + 2; tp: 2 all-reduces */
    c->cmds = malloc((size_t)c->cap_cmds * sizeof *c->cmds);
    if (!c->cmds) {
        free(c);
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (context)");
    }
    /* split-KV workspace: one query per sequence, the context cut into the decode's chunks */
    const int32_t max_splits =
        (n_ctx + TINFER_OP_CUDA_DECODE_MIN_CHUNK - 1) / TINFER_OP_CUDA_DECODE_MIN_CHUNK;
    const size_t ws =
        tinfer_op_cuda_attention_ws_bytes(n_seq, max_splits, cfg->n_head, cfg->head_dim);
    tinfer_status rc = TINFER_OK;
    if (!tinfer_cuda_ctx_plan_make(cfg, n_seq, n_ctx, n_batch, c->n_logits,
                                   TINFER_OP_CUDA_ATTN_TILE, ws, &c->plan)) {
        rc = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY,
                            "cuda backend: a context of %d x %d tokens does not fit in size_t",
                            (int)n_seq, (int)n_ctx);
        goto fail;
    }
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    const tinfer_cuda_ctx_plan *p = &c->plan;
    if (p->total > free_b) {
        rc = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY,
                            "cuda backend: the context needs %zu bytes (KV cache %zu for %d x %d "
                            "tokens, activations %zu, logits %zu, workspace %zu), %zu are free",
                            p->total, p->kv_bytes, (int)n_seq, (int)n_ctx, p->act_bytes,
                            p->logits_bytes, p->ws_bytes, free_b);
        goto fail;
    }
    if (cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc((void **)&c->mem, p->total) != cudaSuccess ||
        cudaMemset(c->mem + p->amx, 0, (size_t)n_batch * 2 * 8) != cudaSuccess ||
        cudaMallocHost((void **)&c->h_logits, p->logits_bytes) != cudaSuccess ||
        cudaMallocHost((void **)&c->h_meta, p->meta_bytes) != cudaSuccess ||
        cudaMallocHost((void **)&c->h_ids, p->ids_count * sizeof(int32_t)) != cudaSuccess ||
        cudaMalloc((void **)&c->bar, 2 * sizeof(uint32_t)) != cudaSuccess ||
        cudaMemset(c->bar, 0, 2 * sizeof(uint32_t)) != cudaSuccess) {
        cudaGetLastError();
        rc = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY,
                            "cuda backend: allocating the context's %zu device bytes (+ %zu "
                            "pinned host bytes) failed",
                            p->total, p->logits_bytes + p->meta_bytes);
        goto fail;
    }
    c->logits = (float *)(c->mem + p->logits);
    host_dev_ptrs(c);
    c->kv = (tinfer_op_cuda_kv){(uint16_t *)(c->mem + p->k),
                                (uint16_t *)(c->mem + p->v),
                                n_seq,
                                cfg->n_layer,
                                n_ctx,
                                cfg->n_head,
                                cfg->n_head_kv,
                                cfg->head_dim};
    if (c->fused != 0) { /* the fused step's flagged words for its most tokens, then amax */
        const size_t words = tinfer_op_cuda_step_ll_words(&m->step, &c->kv, TINFER_OP_CUDA_STEP_MAX_B);
        const size_t ll = (words + TINFER_OP_CUDA_STEP_MAX_B) * sizeof(uint64_t);
        if (cudaMalloc((void **)&c->ll, ll) != cudaSuccess ||
            cudaMemset(c->ll, 0, ll) != cudaSuccess) {
            cudaGetLastError();
            rc = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY,
                                "cuda backend: %zu device bytes for the fused decode step", ll);
            goto fail;
        }
        c->amax = c->ll + words;
    }
    /* the memsets above ran on the legacy stream, which the context's non-blocking stream does
     * not wait for: done before any step */
    if (cudaDeviceSynchronize() != cudaSuccess) {
        rc = tinfer_err_set(err, TINFER_ERR_CUDA, "cuda backend: zeroing the context's words: %s",
                            cudaGetErrorString(cudaGetLastError()));
        goto fail;
    }
    *ctx_state = c;
    return TINFER_OK;
fail:
    cuda_ctx_free(c);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* one forward                                                                              */

static tinfer_status grow_logits(cuda_ctx *c, int32_t rows) {
    const size_t bytes = (size_t)rows * (size_t)c->m->cfg->n_vocab * sizeof(float);
    CUDA_OK(&c->err, cudaStreamSynchronize(c->stream), "growing the logits");
    float *d = NULL, *h = NULL;
    if (cudaMalloc((void **)&d, bytes) != cudaSuccess ||
        cudaMallocHost((void **)&h, bytes) != cudaSuccess) {
        cudaGetLastError();
        cudaFree(d);
        return tinfer_err_set(&c->err, TINFER_ERR_OUT_OF_MEMORY,
                              "cuda backend: %zu bytes for the logits of %d rows", bytes,
                              (int)rows);
    }
    if (c->logits_own) cudaFree(c->logits);
    cudaFreeHost(c->h_logits);
    c->logits = d;
    c->h_logits = h;
    c->logits_own = true;
    c->n_logits = rows;
    host_dev_ptrs(c);
    return TINFER_OK;
}

static tinfer_status cuda_begin(void *cs, const tinfer_batch_plan *bp) {
    cuda_ctx *c = cs;
    const tinfer_cuda_ctx_plan *p = &c->plan;
    on_device(c->m);
    c->bp = bp;
    if (bp->n_out > c->n_logits) {
        tinfer_status rc = grow_logits(c, bp->n_out);
        if (rc != TINFER_OK) return rc;
    }
    /* the previous step's upload must have left the staging buffer: its logits call waited */
    int32_t *h = c->h_meta;
    const size_t n = (size_t)bp->n;
    memcpy(h + p->m_tok, bp->tok, n * 4);
    memcpy(h + p->m_pos, bp->pos, n * 4);
    memcpy(h + p->m_seq, bp->seq, n * 4);
    memcpy(h + p->m_out, bp->out_rows, (size_t)bp->n_out * 4);
    tinfer_status rc = tinfer_op_cuda_attention_plan(
        bp->seq, bp->pos, bp->n, h + p->m_tiles, p->max_tiles, &c->n_tiles, h + p->m_dec,
        c->n_batch, &c->n_dec, &c->max_dec_len, &c->err);
    if (rc != TINFER_OK) return rc;
    c->n_cmds = 0;
    c->dec_chunk = c->dec_split = 0;
    if (c->n_dec > 0 && (rc = tinfer_op_cuda_attention_decode_split(
                             &c->kv, c->n_dec, c->max_dec_len, (float *)(c->mem + p->ws),
                             p->ws_bytes, &c->dec_chunk, &c->dec_split, &c->err)) != TINFER_OK)
        return rc;
    /* one copy of the whole block (its unused tails too: a few KB, cheaper than four calls) */
    CUDA_OK(&c->err,
            cudaMemcpyAsync(meta_dev(c, 0), h, p->m_count * 4, cudaMemcpyHostToDevice, c->stream),
            "uploading the batch");
    return TINFER_OK;
}

/* The forward pass's calls record the step; logits() runs it. */
static tinfer_status record(cuda_ctx *c, cmd op) {
    if (c->n_cmds == c->cap_cmds)
        return tinfer_err_set(&c->err, TINFER_ERR_INTERNAL, "cuda backend: more than %d ops a step",
                              (int)c->cap_cmds);
    c->cmds[c->n_cmds++] = op;
    return TINFER_OK;
}

static tinfer_status cuda_embed(void *cs, tinfer_buf out, const tinfer_weight *table) {
    return record(cs, (cmd){.kind = CMD_EMBED, .y = out, .w = table});
}

static tinfer_status cuda_rmsnorm(void *cs, tinfer_buf out, tinfer_buf in, const tinfer_weight *w,
                                  float eps, bool gather) {
    return record(
        cs, (cmd){.kind = CMD_RMSNORM, .y = out, .x = in, .w = w, .eps = eps, .rows_out = gather});
}

static tinfer_status cuda_matmul(void *cs, tinfer_buf y, tinfer_buf x, const tinfer_weight *w,
                                 const tinfer_weight *bias, int64_t N, int64_t K, tinfer_epi epi,
                                 bool rows_out) {
    return record(cs, (cmd){.kind = CMD_MATMUL,
                            .y = y,
                            .x = x,
                            .w = w,
                            .bias = bias,
                            .N = N,
                            .K = K,
                            .epi = epi,
                            .rows_out = rows_out});
}

static tinfer_status cuda_rope_kv(void *cs, int32_t layer) {
    return record(cs, (cmd){.kind = CMD_ROPE_KV, .layer = layer});
}

static tinfer_status cuda_attention(void *cs, int32_t layer) {
    return record(cs, (cmd){.kind = CMD_ATTENTION, .layer = layer});
}

static tinfer_status cuda_logits(void *cs, bool need_logits, const float **host_logits,
                                 const int32_t **host_ids) {
    cuda_ctx *c = cs;
    const int32_t n_out = c->bp->n_out, V = c->m->cfg->n_vocab;
    int32_t *d_ids = (int32_t *)(c->mem + c->plan.ids);
    on_device(c->m);
    c->want_logits = need_logits;
    c->step_to_host = false;
    tinfer_status rc = tinfer_cuda_launch_step(c);
    if (rc != TINFER_OK) {
        cudaStreamSynchronize(c->stream); /* nothing of this step is left in flight */
        return rc;
    }
    if (n_out > 0 && c->h_vals)
        CUDA_OK(&c->err,
                cudaMemcpyAsync(c->h_vals, c->vals, (size_t)n_out * sizeof(float),
                                cudaMemcpyDeviceToHost, c->stream),
                "downloading the greedy logits");
    if (n_out > 0 && !c->step_to_host) { /* the ids; the logits only when asked */
        CUDA_OK(&c->err,
                cudaMemcpyAsync(c->h_ids, d_ids, (size_t)n_out * sizeof(int32_t),
                                cudaMemcpyDeviceToHost, c->stream),
                "downloading the argmax");
        if (need_logits)
            CUDA_OK(&c->err,
                    cudaMemcpyAsync(c->h_logits, c->logits,
                                    (size_t)n_out * (size_t)V * sizeof(float),
                                    cudaMemcpyDeviceToHost, c->stream),
                    "downloading the logits");
    }
    CUDA_OK(&c->err, cudaStreamSynchronize(c->stream), "the step's kernels");
    *host_logits = need_logits ? c->h_logits : NULL;
    *host_ids = c->h_ids;
    return TINFER_OK;
}

static tinfer_status cuda_greedy_steps(void *cs, int32_t n_more, int32_t *ids,
                                       int32_t *n_steps) {
    cuda_ctx *c = cs;
    on_device(c->m);
    const tinfer_status rc = tinfer_cuda_greedy_steps(c, n_more, n_steps);
    if (rc == TINFER_OK)
        memcpy(ids, c->h_ids, (size_t)*n_steps * (size_t)c->bp->n_out * sizeof(int32_t));
    return rc;
}

static const char *cuda_last_error(const void *cs) { return ((const cuda_ctx *)cs)->err.msg; }

static void cuda_stats(const void *cs, tinfer_backend_stats *out) {
    const cuda_ctx *c = cs;
    out->graph_replays = c->n_replays;
    out->graph_captures = c->n_captures;
    out->last_step_kernels = c->last_kernels;
    out->fused_steps = c->n_fused;
    out->lm_argmax_steps = c->n_lm_argmax;
}

/* ---------------------------------------------------------------------------------------- */
/* tensor parallelism (models/backend_cuda.h)                                               */

int32_t tinfer_cuda_model_device(const void *model_state) {
    return ((const cuda_model *)model_state)->device;
}

tinfer_status tinfer_cuda_record_allreduce(void *cs, tinfer_buf buf, int64_t n, void *comm) {
    cuda_ctx *c = cs;
    if (!comm || n < 0)
        return tinfer_err_set(&c->err, TINFER_ERR_INVALID_ARG,
                              "cuda backend: all-reduce of %lld floats without a communicator",
                              (long long)n);
    return record(c, (cmd){.kind = CMD_ALLREDUCE, .y = buf, .N = n, .comm = comm});
}

tinfer_status tinfer_cuda_keep_greedy_vals(void *cs) {
    cuda_ctx *c = cs;
    if (c->vals) return TINFER_OK;
    on_device(c->m);
    const size_t bytes = (size_t)c->n_batch * sizeof(float);
    if (cudaMalloc((void **)&c->vals, bytes) != cudaSuccess ||
        cudaMallocHost((void **)&c->h_vals, bytes) != cudaSuccess) {
        cudaGetLastError();
        cudaFree(c->vals);
        c->vals = NULL;
        return tinfer_err_set(&c->err, TINFER_ERR_OUT_OF_MEMORY,
                              "cuda backend: %zu bytes for the greedy logits", bytes);
    }
    return TINFER_OK;
}

const float *tinfer_cuda_greedy_vals(const void *cs) { return ((const cuda_ctx *)cs)->h_vals; }

const tinfer_backend_ops tinfer_backend_cuda = {
    .name = "cuda",
    .model_init = cuda_model_init,
    .model_free = cuda_model_free,
    .model_desc = cuda_model_desc,
    .weight_bytes = cuda_weight_bytes,
    .route_desc = cuda_route_desc,
    .ctx_init = cuda_ctx_init,
    .ctx_free = cuda_ctx_free,
    .begin = cuda_begin,
    .embed = cuda_embed,
    .rmsnorm = cuda_rmsnorm,
    .matmul = cuda_matmul,
    .rope_kv = cuda_rope_kv,
    .attention = cuda_attention,
    .logits = cuda_logits,
    .greedy_steps = cuda_greedy_steps,
    .last_error = cuda_last_error,
    .stats = cuda_stats,
};

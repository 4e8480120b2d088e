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
 * rungs may start streaming W before the previous kernel ends).
 */
#include "models/backend.h"
#include "models/cuda_plan.h"

#include "gemm/bf16.h"
#include "gemm/cuda/device.h"
#include "ops/cuda/ops_cuda.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cuda_model {
    const tinfer_llama_config *cfg;
    tinfer_device_info dev;
    void *wmem; /* every weight, BF16, one allocation */
    size_t wbytes;
    tinfer_llama_weights w; /* device views of wmem */
    float *inv_freq;        /* device F32 [head_dim / 2]: RoPE's inverse frequencies */
    /* the fused decode step's view of the weights (ops/cuda/decode_step.cu): layers device
     * [n_layer]; used for small models only (fused_ok) */
    tinfer_op_cuda_step_model step;
    tinfer_op_cuda_step_layer *step_layers;
    char desc[320];
} cuda_model;

/* Models up to this many bytes of weights run their decode steps of up to
 * TINFER_OP_CUDA_STEP_MAX_B tokens as one fused kernel: there, each op-by-op kernel costs more
 * in latency than its weight bytes take to read. Larger models stream at bandwidth op by op. */
#define FUSED_MAX_WEIGHT_BYTES ((size_t)1 << 30)

/* One op of the step, recorded when the forward pass calls it and run in logits(): eagerly, or
 * into a CUDA graph. The arguments are what the ops were called with; the buffers and the
 * metadata they name are fixed addresses of the context, so a replay reads the new step's. */
typedef enum { CMD_EMBED, CMD_RMSNORM, CMD_MATMUL, CMD_ROPE_KV, CMD_ATTENTION } cmd_kind;
typedef struct cmd {
    cmd_kind kind;
    tinfer_buf y, x;
    const tinfer_weight *w, *bias;
    int64_t N, K;
    tinfer_epi epi;
    bool rows_out; /* matmul over the n_out gathered rows; rmsnorm: the gather */
    float eps;
    int32_t layer;
} cmd;

/* A decode step's graph: the kernels of every step of this shape (tokens, logit rows, the
 * attention's key ranges, the logits buffer) are the same launches on the same addresses. The
 * first step of a shape runs eagerly (lazy one-time set-up: kernel attributes, TMA descriptors,
 * stays out of the capture), the second is captured, later ones replay it. */
#define GRAPH_SLOTS 16
typedef struct graph_entry {
    int32_t n, n_out, chunk, n_split;
    const float *logits;
    int32_t seen;
    cudaGraphExec_t exec;
    uint64_t used;
    int32_t kernels; /* kernel nodes of the captured graph */
} graph_entry;

typedef struct cuda_ctx {
    const cuda_model *m;
    tinfer_err err;
    cudaStream_t stream;
    int32_t n_seq, n_ctx, n_batch, n_logits;
    tinfer_cuda_ctx_plan plan;
    unsigned char *mem; /* the plan's device allocation */
    float *logits;      /* device [n_logits, V] (may live outside mem once grown) */
    float *h_logits;    /* pinned host [n_logits, V] */
    bool logits_own;    /* logits was allocated apart from mem (after growing) */
    int32_t *h_meta;    /* pinned host staging of the metadata block */
    int32_t *h_ids;     /* pinned host [n_batch]: each logits row's argmax */
    tinfer_op_cuda_kv kv;
    /* this step */
    const tinfer_batch_plan *bp;
    int32_t n_tiles, n_dec, max_dec_len;
    int32_t dec_chunk, dec_split; /* the decode attention's key ranges (graph key) */
    cmd *cmds;                    /* the step's ops, run in logits() [cap_cmds] */
    int32_t n_cmds, cap_cmds;
    /* decode steps as CUDA graphs, one per batch shape (graph_entry), LRU of GRAPH_SLOTS */
    bool graphs;
    graph_entry g[GRAPH_SLOTS];
    uint64_t g_clock;
    int64_t n_replays, n_captures; /* tinfer_context_stats */
    int32_t last_kernels;          /* kernels of the last step (0: it ran eagerly) */
    /* decode steps of small models as one fused kernel (tinfer_context_params.cuda_fused_decode) */
    bool fused;
    uint32_t *bar;   /* device [2]: the fused kernel's grid barrier */
    int64_t n_fused; /* steps run fused (tinfer_context_stats) */
} cuda_ctx;

#define CUDA_OK(err, call, what)                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return tinfer_err_set((err),                                                           \
                                  e_ == cudaErrorMemoryAllocation ? TINFER_ERR_OUT_OF_MEMORY       \
                                                                  : TINFER_ERR_CUDA,               \
                                  "%s: %s (%s)", what, cudaGetErrorString(e_), #call);             \
    } while (0)

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
    cudaFree(m->wmem);
    cudaFree(m->inv_freq);
    cudaFree(m->step_layers);
    free(m->w.layers);
    free(m);
}

static tinfer_status cuda_model_init(const tinfer_llama_config *cfg, const tinfer_llama_weights *hw,
                                     int32_t n_threads, void **state,
                                     const tinfer_llama_weights **dev_w, tinfer_err *err) {
    (void)n_threads;
    const size_t E = (size_t)cfg->n_embd, Q = (size_t)cfg->n_head * (size_t)cfg->head_dim,
                 KV = (size_t)cfg->n_head_kv * (size_t)cfg->head_dim, F = (size_t)cfg->n_ff,
                 V = (size_t)cfg->n_vocab, QKV = Q + 2 * KV;
    cuda_model *m = calloc(1, sizeof *m);
    if (!m) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (cuda backend)");
    uint16_t *tmp = NULL;
    tinfer_status rc = tinfer_device_probe(0, &m->dev, err); /* no GPU: NO_DEVICE, said first */
    if (rc != TINFER_OK) goto fail;
    /* what the kernels take: 16-byte rows for the GEMMs (K % 8), head_dim 64 / 128 */
    if (E % 8 || Q % 8 || F % 8 || (cfg->head_dim != 64 && cfg->head_dim != 128)) {
        rc = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                            "cuda backend: needs hidden, q and ffn sizes divisible by 8 and "
                            "head_dim 64 or 128 (model: %zu, %zu, %zu, head_dim %d)",
                            E, Q, F, (int)cfg->head_dim);
        goto fail;
    }
    if (cudaSetDevice(0) != cudaSuccess) {
        rc = tinfer_err_set(err, TINFER_ERR_CUDA, "cudaSetDevice(0) failed");
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
    size_t biggest = V * E > 2 * F * E ? V * E : 2 * F * E;
    if (QKV * E > biggest) biggest = QKV * E;
    tmp = malloc(biggest * 2);
    if (!m->w.layers || !tmp) {
        rc = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (weight staging)");
        goto fail;
    }
    m->w.n_layer = cfg->n_layer;
    m->w.fused_dtype = TINFER_DTYPE_BF16;
    size_t at = 0;
    if ((rc = place(m, &at, &hw->tok_embd, V * E, &m->w.tok_embd, tmp, err)) != TINFER_OK ||
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

static int64_t cuda_weight_bytes(const void *state) {
    return (int64_t)((const cuda_model *)state)->wbytes;
}

/* The dispatcher's route (gemm/dispatch.cu) of each projection at M = n_tokens, the LM head at
 * M = 1 (the decode case: one row wants logits per sequence). */
static void cuda_route_desc(const void *state, int32_t n_tokens, char *buf, size_t cap) {
    const cuda_model *m = state;
    const tinfer_llama_config *c = m->cfg;
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
              {"lm head", 1, c->n_vocab, E, 0}};
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
    if (c->stream) cudaStreamSynchronize(c->stream);
    for (int i = 0; i < GRAPH_SLOTS; i++)
        if (c->g[i].exec) cudaGraphExecDestroy(c->g[i].exec);
    free(c->cmds);
    if (c->logits_own) cudaFree(c->logits);
    cudaFree(c->mem);
    cudaFree(c->bar);
    cudaFreeHost(c->h_logits);
    cudaFreeHost(c->h_meta);
    cudaFreeHost(c->h_ids);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

static tinfer_status cuda_ctx_init(void *model_state, int32_t n_seq, int32_t n_ctx, int32_t n_batch,
                                   int32_t n_threads, bool graphs, bool fused_decode,
                                   void **ctx_state, tinfer_err *err) {
    (void)n_threads;
    const cuda_model *m = model_state;
    const tinfer_llama_config *cfg = m->cfg;
    cuda_ctx *c = calloc(1, sizeof *c);
    if (!c) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (context)");
    c->m = m;
    c->n_seq = n_seq;
    c->n_ctx = n_ctx;
    c->n_batch = n_batch;
    c->n_logits = n_seq < n_batch ? n_seq : n_batch;
    c->graphs = graphs;
    c->fused = fused_decode;
    c->cap_cmds = 8 * cfg->n_layer + 8; /* llama.c: 2 + 7 per layer + 2 */
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
        cudaMallocHost((void **)&c->h_logits, p->logits_bytes) != cudaSuccess ||
        cudaMallocHost((void **)&c->h_meta, p->meta_bytes) != cudaSuccess ||
        cudaMallocHost((void **)&c->h_ids, (size_t)n_batch * sizeof(int32_t)) != cudaSuccess ||
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
    c->kv = (tinfer_op_cuda_kv){(uint16_t *)(c->mem + p->k),
                                (uint16_t *)(c->mem + p->v),
                                n_seq,
                                cfg->n_layer,
                                n_ctx,
                                cfg->n_head,
                                cfg->n_head_kv,
                                cfg->head_dim};
    *ctx_state = c;
    return TINFER_OK;
fail:
    cuda_ctx_free(c);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* one forward                                                                              */

static int32_t *meta_dev(cuda_ctx *c, size_t off) {
    return (int32_t *)(c->mem + c->plan.meta) + off;
}

static void *buf(cuda_ctx *c, tinfer_buf b) {
    const tinfer_cuda_ctx_plan *p = &c->plan;
    switch (b) {
    case TINFER_BUF_X: return c->mem + p->x;
    case TINFER_BUF_XB: return c->mem + p->xb;
    case TINFER_BUF_QKV: return c->mem + p->qkv;
    case TINFER_BUF_ATT: return c->mem + p->att;
    case TINFER_BUF_ACT: return c->mem + p->act;
    case TINFER_BUF_LOGITS: return c->logits;
    default: return NULL;
    }
}

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
    return TINFER_OK;
}

static tinfer_status cuda_begin(void *cs, const tinfer_batch_plan *bp) {
    cuda_ctx *c = cs;
    const tinfer_cuda_ctx_plan *p = &c->plan;
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

static tinfer_status run_embed(cuda_ctx *c, tinfer_buf out, const tinfer_weight *table) {
    const tinfer_llama_config *cfg = c->m->cfg;
    return tinfer_op_cuda_embed(buf(c, out), table->data, meta_dev(c, c->plan.m_tok), c->bp->n,
                                cfg->n_embd, cfg->n_vocab, c->stream, &c->err);
}

static tinfer_status run_rmsnorm(cuda_ctx *c, tinfer_buf out, tinfer_buf in, const tinfer_weight *w,
                                 float eps, bool gather) {
    return tinfer_op_cuda_rmsnorm(
        buf(c, out), buf(c, in), w->data, gather ? meta_dev(c, c->plan.m_out) : NULL,
        gather ? c->bp->n_out : c->bp->n, c->bp->n, c->m->cfg->n_embd, eps, c->stream, &c->err);
}

/* The GEMM arguments of a matmul op; false when it has no rows this step. */
static bool matmul_args(cuda_ctx *c, tinfer_buf y, tinfer_buf x, const tinfer_weight *w,
                        const tinfer_weight *bias, int64_t N, int64_t K, tinfer_epi epi,
                        bool rows_out, tinfer_gemm_bf16_args *out) {
    const int64_t M = rows_out ? c->bp->n_out : c->bp->n;
    if (M == 0) return false;
    const bool f32_out = y == TINFER_BUF_X || y == TINFER_BUF_LOGITS;
    const int64_t N_out = epi == TINFER_EPI_SWIGLU ? N / 2 : N;
    tinfer_gemm_bf16_args a;
    memset(&a, 0, sizeof a);
    a.M = M;
    a.N = N;
    a.K = K;
    a.X = buf(c, x);
    a.ldx = K;
    a.W = w->data;
    a.ldw = K;
    a.bias = bias && bias->data ? bias->data : NULL;
    a.Y = buf(c, y);
    a.ldy = N_out;
    a.y_dtype = f32_out ? TINFER_DTYPE_F32 : TINFER_DTYPE_BF16;
    if (epi == TINFER_EPI_RESIDUAL) { /* in place: x += X·W^T */
        a.R = a.Y;
        a.ldr = N_out;
    }
    a.swiglu = epi == TINFER_EPI_SWIGLU;
    a.w_static = 1; /* written once at load */
    *out = a;
    return true;
}

static tinfer_status run_matmul(cuda_ctx *c, tinfer_buf y, tinfer_buf x, const tinfer_weight *w,
                                const tinfer_weight *bias, int64_t N, int64_t K, tinfer_epi epi,
                                bool rows_out) {
    tinfer_gemm_bf16_args a;
    if (!matmul_args(c, y, x, w, bias, N, K, epi, rows_out, &a)) return TINFER_OK;
    return tinfer_gemm_bf16(&a, TINFER_GEMM_BF16_PATH_AUTO, c->stream, &c->err);
}

/* An RMSNorm whose only reader is the next op, a matmul the dispatcher sends to decode rung 08
 * (few tokens, short rows: SmolLM2's QKV and gate/up in decode), runs inside that GEMV
 * (tinfer_gemm_bf16_rmsnorm): one launch fewer. *fused: whether it did (then the matmul ran). */
static tinfer_status try_norm_matmul(cuda_ctx *c, const cmd *norm, const cmd *mm, bool *fused) {
    *fused = false;
    if (norm->rows_out || norm->x != TINFER_BUF_X || !mm || mm->kind != CMD_MATMUL ||
        mm->x != norm->y || mm->rows_out || mm->K != c->m->cfg->n_embd)
        return TINFER_OK;
    tinfer_gemm_bf16_args a;
    if (!matmul_args(c, mm->y, mm->x, mm->w, mm->bias, mm->N, mm->K, mm->epi, false, &a) ||
        !tinfer_gemm_bf16_rmsnorm_ok(&a))
        return TINFER_OK;
    *fused = true;
    return tinfer_gemm_bf16_rmsnorm(&a, buf(c, TINFER_BUF_X), mm->K, norm->w->data, norm->eps,
                                    c->stream, &c->err);
}

/* A step of decode queries only runs RoPE and the KV-cache write inside the decode attention
 * kernel (tinfer_op_cuda_attention_decode_rope: one launch a layer fewer, same bits). */
static bool rope_in_attention(const cuda_ctx *c) { return c->n_tiles == 0 && c->n_dec > 0; }

static tinfer_status run_rope_kv(cuda_ctx *c, int32_t layer) {
    if (rope_in_attention(c)) return TINFER_OK;
    return tinfer_op_cuda_rope_kv(buf(c, TINFER_BUF_QKV), &c->kv, layer, c->m->inv_freq,
                                  meta_dev(c, c->plan.m_pos), meta_dev(c, c->plan.m_seq), c->bp->n,
                                  c->stream, &c->err);
}

static tinfer_status run_attention(cuda_ctx *c, int32_t layer) {
    tinfer_status rc = TINFER_OK;
    if (c->n_tiles > 0)
        rc = tinfer_op_cuda_attention_prefill(buf(c, TINFER_BUF_ATT), buf(c, TINFER_BUF_QKV),
                                              &c->kv, layer, meta_dev(c, c->plan.m_pos),
                                              meta_dev(c, c->plan.m_tiles), c->n_tiles, c->stream,
                                              &c->err);
    if (rc == TINFER_OK && rope_in_attention(c))
        rc = tinfer_op_cuda_attention_decode_rope(
            buf(c, TINFER_BUF_ATT), buf(c, TINFER_BUF_QKV), &c->kv, layer, c->m->inv_freq,
            meta_dev(c, c->plan.m_pos), meta_dev(c, c->plan.m_seq), meta_dev(c, c->plan.m_dec),
            c->n_dec, c->max_dec_len, (float *)(c->mem + c->plan.ws), c->plan.ws_bytes, c->stream,
            &c->err);
    else if (rc == TINFER_OK && c->n_dec > 0)
        rc = tinfer_op_cuda_attention_decode(
            buf(c, TINFER_BUF_ATT), buf(c, TINFER_BUF_QKV), &c->kv, layer,
            meta_dev(c, c->plan.m_pos), meta_dev(c, c->plan.m_seq), meta_dev(c, c->plan.m_dec),
            c->n_dec, c->max_dec_len, (float *)(c->mem + c->plan.ws), c->plan.ws_bytes, c->stream,
            &c->err);
    return rc;
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

/* Every recorded op, then the argmax of the logits rows, on the stream. */
static tinfer_status run_step(cuda_ctx *c) {
    tinfer_status rc = TINFER_OK;
    for (int32_t i = 0; i < c->n_cmds && rc == TINFER_OK; i++) {
        const cmd *o = &c->cmds[i];
        switch (o->kind) {
        case CMD_EMBED: rc = run_embed(c, o->y, o->w); break;
        case CMD_RMSNORM: {
            bool fused;
            rc = try_norm_matmul(c, o, i + 1 < c->n_cmds ? &c->cmds[i + 1] : NULL, &fused);
            if (fused)
                i++; /* the matmul ran too */
            else if (rc == TINFER_OK)
                rc = run_rmsnorm(c, o->y, o->x, o->w, o->eps, o->rows_out);
            break;
        }
        case CMD_MATMUL:
            rc = run_matmul(c, o->y, o->x, o->w, o->bias, o->N, o->K, o->epi, o->rows_out);
            break;
        case CMD_ROPE_KV: rc = run_rope_kv(c, o->layer); break;
        case CMD_ATTENTION: rc = run_attention(c, o->layer); break;
        }
    }
    if (rc == TINFER_OK && c->bp->n_out > 0) /* greedy decoding needs only these ids */
        rc = tinfer_op_cuda_argmax((int32_t *)(c->mem + c->plan.ids), c->logits, c->bp->n_out,
                                   c->m->cfg->n_vocab, c->m->cfg->n_vocab, c->stream, &c->err);
    return rc;
}

/* Whether the recorded step is the forward pass of models/llama.c over this model's weights, op
 * for op, so the fused kernel may run it instead (any other sequence runs op by op). */
static bool cmds_standard(const cuda_ctx *c) {
    const cuda_model *m = c->m;
    const tinfer_llama_config *cfg = m->cfg;
    const int32_t L = cfg->n_layer, E = cfg->n_embd;
    const int64_t Q = (int64_t)cfg->n_head * cfg->head_dim,
                  QKV = Q + 2 * (int64_t)cfg->n_head_kv * cfg->head_dim, F = cfg->n_ff;
    const bool logits = c->bp->n_out > 0;
    if (c->n_cmds != 1 + 8 * L + (logits ? 2 : 0)) return false;
    const cmd *o = c->cmds;
    if (o[0].kind != CMD_EMBED || o[0].y != TINFER_BUF_X || o[0].w != &m->w.tok_embd) return false;
    for (int32_t l = 0; l < L; l++) {
        const cmd *k = o + 1 + 8 * l;
        const tinfer_llama_layer *ly = &m->w.layers[l];
        if (k[0].kind != CMD_RMSNORM || k[0].x != TINFER_BUF_X || k[0].y != TINFER_BUF_XB ||
            k[0].w != &ly->attn_norm || k[0].rows_out || k[0].eps != cfg->rms_norm_eps ||
            k[1].kind != CMD_MATMUL || k[1].x != TINFER_BUF_XB || k[1].y != TINFER_BUF_QKV ||
            k[1].w != &ly->wqkv || k[1].bias != &ly->bqkv || k[1].N != QKV || k[1].K != E ||
            k[1].epi != TINFER_EPI_STORE || k[1].rows_out || k[2].kind != CMD_ROPE_KV ||
            k[2].layer != l || k[3].kind != CMD_ATTENTION || k[3].layer != l ||
            k[4].kind != CMD_MATMUL || k[4].x != TINFER_BUF_ATT || k[4].y != TINFER_BUF_X ||
            k[4].w != &ly->wo || (k[4].bias && k[4].bias != &ly->bo) || k[4].N != E ||
            k[4].K != Q || k[4].epi != TINFER_EPI_RESIDUAL || k[4].rows_out ||
            k[5].kind != CMD_RMSNORM || k[5].x != TINFER_BUF_X || k[5].y != TINFER_BUF_XB ||
            k[5].w != &ly->ffn_norm || k[5].rows_out || k[5].eps != cfg->rms_norm_eps ||
            k[6].kind != CMD_MATMUL || k[6].x != TINFER_BUF_XB || k[6].y != TINFER_BUF_ACT ||
            k[6].w != &ly->wgu || (k[6].bias && k[6].bias->data) || k[6].N != 2 * F ||
            k[6].K != E || k[6].epi != TINFER_EPI_SWIGLU || k[6].rows_out ||
            k[7].kind != CMD_MATMUL || k[7].x != TINFER_BUF_ACT || k[7].y != TINFER_BUF_X ||
            k[7].w != &ly->wdown || (k[7].bias && k[7].bias->data) || k[7].N != E ||
            k[7].K != F || k[7].epi != TINFER_EPI_RESIDUAL || k[7].rows_out)
            return false;
    }
    if (logits) {
        const cmd *k = o + 1 + 8 * L;
        if (k[0].kind != CMD_RMSNORM || k[0].x != TINFER_BUF_X || k[0].y != TINFER_BUF_XB ||
            k[0].w != &m->w.out_norm || !k[0].rows_out || k[0].eps != cfg->rms_norm_eps ||
            k[1].kind != CMD_MATMUL || k[1].x != TINFER_BUF_XB || k[1].y != TINFER_BUF_LOGITS ||
            k[1].w != &m->w.lm_head || (k[1].bias && k[1].bias->data) || !k[1].rows_out ||
            k[1].epi != TINFER_EPI_STORE)
            return false;
    }
    return true;
}

/* A decode step of a small model in one kernel (ops/cuda/decode_step.cu), when it can. */
static bool fused_ok(const cuda_ctx *c) {
    return c->fused && c->n_tiles == 0 && c->n_dec == c->bp->n &&
           c->m->wbytes <= FUSED_MAX_WEIGHT_BYTES &&
           tinfer_op_cuda_step_ok(&c->m->step, &c->kv, c->bp->n, c->max_dec_len) &&
           cmds_standard(c);
}

static tinfer_status run_fused_step(cuda_ctx *c) {
    const tinfer_cuda_ctx_plan *p = &c->plan;
    const tinfer_op_cuda_step_bufs b = {buf(c, TINFER_BUF_X),   buf(c, TINFER_BUF_QKV),
                                        buf(c, TINFER_BUF_ATT), buf(c, TINFER_BUF_ACT),
                                        c->logits,              c->bar};
    tinfer_status rc = tinfer_op_cuda_decode_step(
        &c->m->step, &c->kv, &b, meta_dev(c, p->m_tok), meta_dev(c, p->m_pos),
        meta_dev(c, p->m_seq), meta_dev(c, p->m_out), c->bp->n, c->bp->n_out, c->max_dec_len,
        c->stream, &c->err);
    if (rc == TINFER_OK && c->bp->n_out > 0)
        rc = tinfer_op_cuda_argmax((int32_t *)(c->mem + p->ids), c->logits, c->bp->n_out,
                                   c->m->cfg->n_vocab, c->m->cfg->n_vocab, c->stream, &c->err);
    c->last_kernels = c->bp->n_out > 0 ? 2 : 1;
    if (rc == TINFER_OK) c->n_fused++;
    return rc;
}

/* The graph slot of this decode step's shape (found, or the least recently used, reset). */
static graph_entry *graph_slot(cuda_ctx *c) {
    graph_entry *lru = &c->g[0];
    for (int i = 0; i < GRAPH_SLOTS; i++) {
        graph_entry *e = &c->g[i];
        if (e->seen && e->n == c->bp->n && e->n_out == c->bp->n_out && e->chunk == c->dec_chunk &&
            e->n_split == c->dec_split && e->logits == c->logits)
            return e;
        if (e->used < lru->used) lru = e;
    }
    if (lru->exec) cudaGraphExecDestroy(lru->exec);
    *lru = (graph_entry){c->bp->n, c->bp->n_out, c->dec_chunk, c->dec_split, c->logits, 0, NULL, 0,
                         0};
    return lru;
}

/* Runs the step: a decode step through its graph where one is (or can now be) made, else
 * eagerly. A capture or instantiation that fails turns graphs off for this context and the step
 * runs eagerly: graphs only ever change how fast a step runs. */
/* Kernel nodes of a captured graph (the step's launches; the memset and copy nodes aside). */
static int32_t graph_kernels(cudaGraph_t graph) {
    size_t n = 0;
    if (cudaGraphGetNodes(graph, NULL, &n) != cudaSuccess || n == 0) return 0;
    cudaGraphNode_t *nodes = malloc(n * sizeof *nodes);
    int32_t k = 0;
    if (nodes && cudaGraphGetNodes(graph, nodes, &n) == cudaSuccess)
        for (size_t i = 0; i < n; i++) {
            enum cudaGraphNodeType t;
            if (cudaGraphNodeGetType(nodes[i], &t) == cudaSuccess && t == cudaGraphNodeTypeKernel)
                k++;
        }
    free(nodes);
    cudaGetLastError();
    return k;
}

static tinfer_status launch_step(cuda_ctx *c) {
    const bool decode_only = c->n_tiles == 0 && c->n_dec == c->bp->n;
    c->last_kernels = 0;
    if (fused_ok(c)) return run_fused_step(c);
    if (!c->graphs || !decode_only) return run_step(c);
    graph_entry *e = graph_slot(c);
    e->used = ++c->g_clock;
    if (!e->exec && e->seen++ == 0) return run_step(c); /* first sight: eager, set-up done */
    if (!e->exec) {
        cudaGraph_t graph = NULL;
        tinfer_status rc = TINFER_OK;
        if (cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
            rc = run_step(c);
            const cudaError_t ce = cudaStreamEndCapture(c->stream, &graph);
            if (rc == TINFER_OK && ce == cudaSuccess &&
                cudaGraphInstantiate(&e->exec, graph, 0) != cudaSuccess)
                e->exec = NULL;
            if (e->exec) {
                e->kernels = graph_kernels(graph);
                c->n_captures++;
            }
        }
        if (graph) cudaGraphDestroy(graph);
        if (!e->exec) {
            const cudaError_t ce = cudaGetLastError(); /* the capture's, not the step's */
            c->graphs = false;
            /* said, not failed: tinfer_context_last_error shows why steps are not replayed */
            char why[256];
            snprintf(why, sizeof why, "%s", rc != TINFER_OK ? c->err.msg : "");
            tinfer_err_set(&c->err, TINFER_OK,
                           "note: CUDA graphs off for this context: the capture of a %d-token "
                           "decode step failed (%s%s%s)",
                           (int)c->bp->n, why, why[0] ? "; " : "", cudaGetErrorString(ce));
            return run_step(c);
        }
    }
    CUDA_OK(&c->err, cudaGraphLaunch(e->exec, c->stream), "replaying the decode step's graph");
    c->n_replays++;
    c->last_kernels = e->kernels;
    return TINFER_OK;
}

static tinfer_status cuda_logits(void *cs, bool need_logits, const float **host_logits,
                                 const int32_t **host_ids) {
    cuda_ctx *c = cs;
    const int32_t n_out = c->bp->n_out, V = c->m->cfg->n_vocab;
    int32_t *d_ids = (int32_t *)(c->mem + c->plan.ids);
    tinfer_status rc = launch_step(c);
    if (rc != TINFER_OK) {
        cudaStreamSynchronize(c->stream); /* nothing of this step is left in flight */
        return rc;
    }
    if (n_out > 0) { /* the ids; the logits only when asked: they stay on the device */
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

static const char *cuda_last_error(const void *cs) { return ((const cuda_ctx *)cs)->err.msg; }

static void cuda_stats(const void *cs, int64_t *replays, int64_t *captures, int32_t *kernels,
                       int64_t *fused) {
    const cuda_ctx *c = cs;
    *fused = c->n_fused;
    *replays = c->n_replays;
    *captures = c->n_captures;
    *kernels = c->last_kernels;
}

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
    .last_error = cuda_last_error,
    .stats = cuda_stats,
};

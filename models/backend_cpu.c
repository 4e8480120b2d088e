/*
 * backend_cpu.c — the CPU backend of backend.h: gemm/cpu for the GEMMs, ops/ref for the rest,
 * OpenMP inside each op. Everything is host memory and F32 (weights stay as loaded: BF16, F32
 * or Q8_0, read in place; gemm/cpu computes Q8_0 GEMVs on int8-quantized activations). The fused ops of the seam are compositions of the reference ops:
 *   matmul SWIGLU   = GEMM into the gate|up scratch, then swiglu
 *   rope_kv         = rope on the q heads and the k heads, then the k / v rows copied into each
 *                     sequence's cache block (its positions are contiguous in the plan)
 *   attention       = the reference attention once per sequence of the step
 *   rmsnorm gather  = the out_rows copied into XB, then rmsnorm in place
 * so the numbers are those of the unfused forward, bit for bit.
 * KV cache: [n_seq][n_layer][n_ctx][KV] F32 for K and the same for V.
 */
#include "models/backend.h"

#include "gemm/cpu/gemm_cpu.h"
#include "ops/ref/ops_cpu.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cpu_model {
    const tinfer_llama_config *cfg;
    const tinfer_llama_weights *w;
    int32_t n_threads;
    char desc[64];
} cpu_model;

typedef struct cpu_ctx {
    const cpu_model *m;
    tinfer_err err;
    int32_t n_seq, n_ctx, n_batch, n_threads;
    float *buf[TINFER_BUF_COUNT]; /* LOGITS: [cap_logits, V] */
    int64_t width[TINFER_BUF_COUNT];
    float *gu;    /* [n_batch, 2F] gate|up before swiglu */
    int32_t *ids; /* [cap_logits] argmax of each logits row */
    float *k_cache, *v_cache;
    int32_t cap_logits;
    const tinfer_batch_plan *plan;
} cpu_ctx;

static tinfer_status cpu_model_init(const tinfer_llama_config *cfg,
                                    const tinfer_llama_weights *host_w, int32_t n_threads,
                                    int32_t device, void **state,
                                    const tinfer_llama_weights **dev_w, tinfer_err *err) {
    (void)device;
    cpu_model *m = calloc(1, sizeof *m);
    if (!m) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (cpu backend)");
    m->cfg = cfg;
    m->w = host_w;
    m->n_threads = n_threads;
    snprintf(m->desc, sizeof m->desc, "cpu %s, %d threads", tinfer_gemm_cpu_isa(), (int)n_threads);
    *state = m;
    *dev_w = host_w; /* read in place */
    return TINFER_OK;
}

static void cpu_model_free(void *state) { free(state); }

static const char *cpu_model_desc(const void *state) { return ((const cpu_model *)state)->desc; }

static int64_t cpu_weight_bytes(const void *state) {
    const cpu_model *m = state;
    const tinfer_llama_config *c = m->cfg;
    const int64_t E = c->n_embd, Q = (int64_t)c->n_head * c->head_dim,
                  KV = (int64_t)c->n_head_kv * c->head_dim, F = c->n_ff;
#define NB(dt, n) (int64_t) tinfer_dtype_nbytes((dt), (size_t)(n)) /* Q8_0: with its scales */
    int64_t bytes = NB(m->w->lm_head.dtype, (int64_t)c->n_vocab * E);
    for (int32_t l = 0; l < c->n_layer; l++) {
        const tinfer_llama_layer *ly = &m->w->layers[l];
        bytes += NB(ly->wqkv.dtype, (Q + 2 * KV) * E) + NB(ly->wo.dtype, E * Q) +
                 NB(ly->wgu.dtype, 2 * F * E) + NB(ly->wdown.dtype, E * F);
    }
#undef NB
    return bytes;
}

/* gemm/cpu takes its GEMV for one row (W streamed once), the packed or AMX GEMM above; the
 * kernel names the path each takes (on AMX machines: "cpu avx512vnni gemv", "cpu amx gemm") */
static void cpu_route_desc(const void *state, int32_t n_tokens, int32_t n_logits, char *buf,
                           size_t cap) {
    (void)state, (void)n_logits;
    snprintf(buf, cap, "cpu %s %s", tinfer_gemm_cpu_kernel(n_tokens),
             n_tokens == 1 ? "gemv" : "gemm");
}

static void cpu_ctx_free(void *cs) {
    cpu_ctx *c = cs;
    if (!c) return;
    for (int b = 0; b < TINFER_BUF_COUNT; b++)
        free(c->buf[b]);
    free(c->gu);
    free(c->ids);
    free(c->k_cache);
    free(c->v_cache);
    free(c);
}

static tinfer_status cpu_ctx_init(void *model_state, int32_t n_seq, int32_t n_ctx, int32_t n_batch,
                                  int32_t n_threads, bool graphs, int32_t fused_decode,
                                  int32_t micro_batches, void **ctx_state, tinfer_err *err) {
    (void)graphs; /* nothing to replay, fuse or overlap: the CPU runs each op as it is called */
    (void)fused_decode;
    (void)micro_batches;
    const cpu_model *m = model_state;
    const tinfer_llama_config *cfg = m->cfg;
    const int64_t E = cfg->n_embd, Q = (int64_t)cfg->n_head * cfg->head_dim,
                  KV = (int64_t)cfg->n_head_kv * cfg->head_dim, F = cfg->n_ff;
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (context)");
    c->m = m;
    c->n_seq = n_seq;
    c->n_ctx = n_ctx;
    c->n_batch = n_batch;
    c->n_threads = n_threads > 0 ? n_threads : m->n_threads;
    c->width[TINFER_BUF_X] = E;
    c->width[TINFER_BUF_XB] = E;
    c->width[TINFER_BUF_QKV] = Q + 2 * KV;
    c->width[TINFER_BUF_ATT] = Q;
    c->width[TINFER_BUF_ACT] = F;
    c->width[TINFER_BUF_LOGITS] = cfg->n_vocab;
    /* int64 cannot overflow: config.c caps layers, heads, head_dim and n_ctx so that
     * n_layer * n_ctx * KV < 2^50; times n_seq (int32) stays below 2^63 / 4. */
    const int64_t kv_elems = (int64_t)n_seq * cfg->n_layer * (int64_t)n_ctx * KV;
    c->cap_logits = n_seq < n_batch ? n_seq : n_batch;
    size_t act_bytes = 0;
    bool ok = (uint64_t)kv_elems <= SIZE_MAX / sizeof(float) / 2;
    for (int b = 0; ok && b < TINFER_BUF_COUNT; b++) {
        const int64_t rows = b == TINFER_BUF_LOGITS ? c->cap_logits : n_batch;
        const size_t bytes = (size_t)rows * (size_t)c->width[b] * sizeof(float);
        c->buf[b] = malloc(bytes);
        act_bytes += bytes;
        ok = c->buf[b] != NULL;
    }
    if (ok) {
        c->gu = malloc((size_t)n_batch * 2 * (size_t)F * sizeof(float));
        c->ids = malloc((size_t)c->cap_logits * sizeof(int32_t));
        c->k_cache = malloc((size_t)kv_elems * sizeof(float));
        c->v_cache = malloc((size_t)kv_elems * sizeof(float));
        ok = c->gu && c->ids && c->k_cache && c->v_cache;
    }
    if (!ok) {
        cpu_ctx_free(c);
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY,
                              "out of memory: KV cache of 2 x %lld floats (n_ctx %d, n_seq_max %d) "
                              "+ %zu bytes of activations (n_batch %d)",
                              (long long)kv_elems, (int)n_ctx, (int)n_seq,
                              act_bytes + (size_t)n_batch * 2 * (size_t)F * sizeof(float),
                              (int)n_batch);
    }
    *ctx_state = c;
    return TINFER_OK;
}

static tinfer_status cpu_begin(void *cs, const tinfer_batch_plan *plan) {
    cpu_ctx *c = cs;
    c->plan = plan;
    if (plan->n_out > c->cap_logits) { /* grows only past the most rows any step asked for */
        float *p =
            realloc(c->buf[TINFER_BUF_LOGITS],
                    (size_t)plan->n_out * (size_t)c->width[TINFER_BUF_LOGITS] * sizeof(float));
        if (!p)
            return tinfer_err_set(&c->err, TINFER_ERR_OUT_OF_MEMORY,
                                  "out of memory: logits for %d rows", (int)plan->n_out);
        c->buf[TINFER_BUF_LOGITS] = p;
        int32_t *ids = realloc(c->ids, (size_t)plan->n_out * sizeof(int32_t));
        if (!ids)
            return tinfer_err_set(&c->err, TINFER_ERR_OUT_OF_MEMORY,
                                  "out of memory: logits for %d rows", (int)plan->n_out);
        c->ids = ids;
        c->cap_logits = plan->n_out;
    }
    if (omp_get_max_threads() != c->n_threads) omp_set_num_threads(c->n_threads);
    return TINFER_OK;
}

static tinfer_status cpu_embed(void *cs, tinfer_buf out, const tinfer_weight *table) {
    cpu_ctx *c = cs;
    tinfer_op_embed(c->buf[out], table->data, table->dtype, c->plan->tok, c->plan->n,
                    c->width[out]);
    return TINFER_OK;
}

static tinfer_status cpu_rmsnorm(void *cs, tinfer_buf out, tinfer_buf in, const tinfer_weight *w,
                                 float eps, bool gather) {
    cpu_ctx *c = cs;
    const int64_t E = c->width[in];
    int64_t rows = c->plan->n;
    const float *src = c->buf[in];
    if (gather) {
        rows = c->plan->n_out;
        for (int32_t j = 0; j < c->plan->n_out; j++)
            memmove(c->buf[out] + (size_t)j * E, c->buf[in] + (size_t)c->plan->out_rows[j] * E,
                    (size_t)E * sizeof(float));
        src = c->buf[out];
    }
    tinfer_op_rmsnorm(c->buf[out], src, w->data, w->dtype, rows, E, eps);
    return TINFER_OK;
}

static tinfer_status cpu_matmul(void *cs, tinfer_buf y, tinfer_buf x, const tinfer_weight *w,
                                const tinfer_weight *bias, int64_t N, int64_t K, tinfer_epi epi,
                                bool rows_out) {
    cpu_ctx *c = cs;
    const int64_t M = rows_out ? c->plan->n_out : c->plan->n;
    const float *b = bias && bias->data ? bias->data : NULL; /* the loader keeps biases F32 */
    if (epi == TINFER_EPI_SWIGLU) {
        tinfer_gemm_cpu(M, N, K, c->buf[x], c->width[x], w->data, w->dtype, w->scale, K, b, c->gu,
                        N, false);
        tinfer_op_swiglu(c->buf[y], c->gu, M, N / 2);
    } else {
        tinfer_gemm_cpu(M, N, K, c->buf[x], c->width[x], w->data, w->dtype, w->scale, K, b,
                        c->buf[y], c->width[y], epi == TINFER_EPI_RESIDUAL);
    }
    return TINFER_OK;
}

/* The cache block of (sequence q, layer l): [n_ctx, KV]. */
static size_t cache_at(const cpu_ctx *c, int32_t q, int32_t l) {
    const tinfer_llama_config *cfg = c->m->cfg;
    const size_t KV = (size_t)cfg->n_head_kv * (size_t)cfg->head_dim;
    return ((size_t)q * (size_t)cfg->n_layer + (size_t)l) * (size_t)c->n_ctx * KV;
}

static tinfer_status cpu_rope_kv(void *cs, int32_t layer) {
    cpu_ctx *c = cs;
    const tinfer_llama_config *cfg = c->m->cfg;
    const tinfer_batch_plan *p = c->plan;
    const int64_t Q = (int64_t)cfg->n_head * cfg->head_dim,
                  KV = (int64_t)cfg->n_head_kv * cfg->head_dim, QKV = c->width[TINFER_BUF_QKV];
    float *qkv = c->buf[TINFER_BUF_QKV];
    tinfer_op_rope(qkv, p->n, QKV, cfg->n_head, cfg->head_dim, p->pos, cfg->rope_theta);
    tinfer_op_rope(qkv + Q, p->n, QKV, cfg->n_head_kv, cfg->head_dim, p->pos, cfg->rope_theta);
    for (int32_t q = 0; q < p->n_seq; q++) {
        const int32_t b = p->seq_start[q], cnt = p->seq_start[q + 1] - b;
        if (cnt == 0) continue;
        /* one sequence's positions are contiguous: its rows land in one block */
        const size_t at = cache_at(c, q, layer) + (size_t)p->pos[b] * (size_t)KV;
        for (int32_t i = 0; i < cnt; i++) {
            const float *row = qkv + (size_t)(b + i) * (size_t)QKV;
            memcpy(c->k_cache + at + (size_t)i * KV, row + Q, (size_t)KV * sizeof(float));
            memcpy(c->v_cache + at + (size_t)i * KV, row + Q + KV, (size_t)KV * sizeof(float));
        }
    }
    return TINFER_OK;
}

static tinfer_status cpu_attention(void *cs, int32_t layer) {
    cpu_ctx *c = cs;
    const tinfer_llama_config *cfg = c->m->cfg;
    const tinfer_batch_plan *p = c->plan;
    const int64_t Q = c->width[TINFER_BUF_ATT], QKV = c->width[TINFER_BUF_QKV];
    for (int32_t q = 0; q < p->n_seq; q++) {
        const int32_t b = p->seq_start[q], cnt = p->seq_start[q + 1] - b;
        if (cnt == 0) continue;
        const size_t at = cache_at(c, q, layer);
        tinfer_op_attention(c->buf[TINFER_BUF_ATT] + (size_t)b * Q, Q,
                            c->buf[TINFER_BUF_QKV] + (size_t)b * QKV, QKV, c->k_cache + at,
                            c->v_cache + at, cnt, p->pos + b, cfg->n_head, cfg->n_head_kv,
                            cfg->head_dim);
    }
    return TINFER_OK;
}

static tinfer_status cpu_logits(void *cs, bool need_logits, const float **host_logits,
                                const int32_t **host_ids) {
    cpu_ctx *c = cs;
    const int64_t V = c->width[TINFER_BUF_LOGITS];
    for (int32_t r = 0; r < c->plan->n_out; r++) { /* the GPU's argmax rule (ops/cuda) */
        const float *x = c->buf[TINFER_BUF_LOGITS] + (size_t)r * (size_t)V;
        int32_t best = -1;
        for (int32_t i = 0; i < V; i++)
            if (x[i] == x[i] && (best < 0 || x[i] > x[best])) best = i;
        c->ids[r] = best < 0 ? 0 : best;
    }
    *host_logits = need_logits ? c->buf[TINFER_BUF_LOGITS] : NULL;
    *host_ids = c->ids;
    return TINFER_OK;
}

static const char *cpu_last_error(const void *cs) { return ((const cpu_ctx *)cs)->err.msg; }

static tinfer_status cpu_buf_f32(void *cs, tinfer_buf buf, float **ptr) {
    cpu_ctx *c = cs;
    *ptr = NULL;
    if ((int)buf < 0 || buf >= TINFER_BUF_COUNT)
        return tinfer_err_set(&c->err, TINFER_ERR_INTERNAL, "cpu backend: no buffer %d", (int)buf);
    *ptr = c->buf[buf];
    return TINFER_OK;
}

const tinfer_backend_ops tinfer_backend_cpu = {
    .name = "cpu",
    .model_init = cpu_model_init,
    .model_free = cpu_model_free,
    .model_desc = cpu_model_desc,
    .weight_bytes = cpu_weight_bytes,
    .route_desc = cpu_route_desc,
    .ctx_init = cpu_ctx_init,
    .ctx_free = cpu_ctx_free,
    .begin = cpu_begin,
    .embed = cpu_embed,
    .rmsnorm = cpu_rmsnorm,
    .matmul = cpu_matmul,
    .rope_kv = cpu_rope_kv,
    .attention = cpu_attention,
    .logits = cpu_logits,
    .last_error = cpu_last_error,
    .buf_f32 = cpu_buf_f32,
};

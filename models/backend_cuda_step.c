/*
 * backend_cuda_step.c — running a step the CUDA backend recorded (backend_cuda.c records the ops
 * as models/llama.c calls them; cuda_logits calls tinfer_cuda_launch_step):
 *   op by op      each recorded op through its launcher: the GEMMs through gemm/bf16.h's
 *                 dispatcher, the rest through ops/cuda; three peepholes fuse across ops (an
 *                 RMSNorm split between the GEMMs around it, an RMSNorm into the next decode
 *                 GEMV, RoPE + KV write into the decode attention);
 *   CUDA graphs   a decode step (one token per sequence) is captured per batch shape the second
 *                 time the shape is seen and replayed after that;
 *   fused         with tinfer_context_params.cuda_fused_decode, a small model's decode step of
 *                 up to 8 sequences as one persistent kernel (ops/cuda/decode_step.cu), when the
 *                 recorded ops are exactly llama.c's forward over the model's own weights.
 */
#include "models/backend_cuda_internal.h"

#include "gemm/bf16.h"

#include <cuda_runtime.h>
#ifdef TINFER_HAVE_NCCL
#include <nccl.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* op by op                                                                                 */

/* The embedding, and the zeroing of the step's n_slots split-RMSNorm sums (plan_split_norms). */
static tinfer_status run_embed(cuda_ctx *c, tinfer_buf out, const tinfer_weight *table,
                               int32_t n_slots) {
    const tinfer_llama_config *cfg = c->m->cfg;
    return tinfer_op_cuda_embed_clear(
        buf(c, out), table->data, meta_dev(c, c->plan.m_tok), c->bp->n, cfg->n_embd,
        cfg->n_embd_rows > 0 ? cfg->n_embd_rows : cfg->n_vocab,
        (unsigned long long *)(c->mem + c->plan.nss), (int64_t)n_slots * c->bp->n * 2, c->stream,
        &c->err);
}

/* Slot s's sums of squares: two words a token of the step ([slot][n][2]). */
static unsigned long long *nss_slot(cuda_ctx *c, int32_t s) {
    return (unsigned long long *)(c->mem + c->plan.nss) + (size_t)s * c->bp->n * 2;
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

/* Recorded op i, a matmul: with its split-RMSNorm roles (plan_split_norms) when it has any. */
static tinfer_status run_matmul(cuda_ctx *c, int32_t i) {
    const cmd *o = &c->cmds[i];
    tinfer_gemm_bf16_args a;
    if (!matmul_args(c, o->y, o->x, o->w, o->bias, o->N, o->K, o->epi, o->rows_out, &a))
        return TINFER_OK;
    if (o->nss_slot >= 0) { /* the producer: XB = y * w of the skipped RMSNorm, op i + 1 */
        a.nx = buf(c, TINFER_BUF_XB);
        a.ldnx = c->m->cfg->n_embd;
        a.nw = c->cmds[i + 1].w->data;
        a.nss = nss_slot(c, o->nss_slot);
    }
    if (o->rss_slot >= 0) { /* a consumer: rows times 1 / rms */
        a.rss = nss_slot(c, o->rss_slot);
        a.rn = c->m->cfg->n_embd;
        a.reps = o->norm_eps;
    }
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

/* A decode step: one token per sequence, no prefill tiles. */
static bool decode_step(const cuda_ctx *c) { return c->n_tiles == 0 && c->n_dec == c->bp->n; }

/* The split RMSNorm (gemm/bf16.h's nx / rss): a residual matmul into X, the RMSNorm of X into XB
 * right after it, and matmuls reading XB until XB is written again become the producer writing
 * XB = x * w (the numerators) and each row's sum of squares into a slot, no RMSNorm launch, and
 * consumers multiplying their rows' accumulators by 1 / rms: a launch and a kernel boundary
 * fewer per RMSNorm (llama.c's ffn_norm after o_proj and the next layer's attn_norm after down).
 * Only where every one of these GEMMs runs on a tensor-core rung that takes the fields
 * (tinfer_gemm_bf16_split_norm_ok: never rung 03, nor the decode GEMVs, so never where the
 * RMSNorm runs inside rung 08 instead: try_norm_matmul). The RMSNorm of layer 0 and the LM
 * head's gathered one stay launches. Decode steps only (from 9 sequences on: tinfer-bench on an
 * H100, tg128 at 16 and 64 sequences 1.1-1.3% faster), since a 512-token prefill (pp512)
 * measured 5% slower with it. Returns the slots used (the embedding zeroes them first; without
 * an embedding first, nothing is split). Debug switch (read once): TINFER_CUDA_SPLIT_NORM=0
 * turns it off, so that one build measures both. */
static int32_t plan_split_norms(cuda_ctx *c) {
    static int enabled = -1;
    if (enabled < 0) {
        const char *v = getenv("TINFER_CUDA_SPLIT_NORM");
        enabled = !(v && !strcmp(v, "0"));
    }
    const int64_t E = c->m->cfg->n_embd;
    int32_t slots = 0;
    for (int32_t i = 0; i < c->n_cmds; i++)
        c->cmds[i].nss_slot = c->cmds[i].rss_slot = -1, c->cmds[i].skip = false;
    if (!enabled || !decode_step(c) || c->n_cmds == 0 || c->cmds[0].kind != CMD_EMBED ||
        c->bp->n == 0)
        return 0;
    for (int32_t i = 0; i + 2 < c->n_cmds && slots < c->plan.nss_slots; i++) {
        cmd *p = &c->cmds[i], *nm = &c->cmds[i + 1];
        tinfer_gemm_bf16_args a;
        if (p->kind != CMD_MATMUL || p->epi != TINFER_EPI_RESIDUAL || p->y != TINFER_BUF_X ||
            p->rows_out || p->N != E || nm->kind != CMD_RMSNORM || nm->x != TINFER_BUF_X ||
            nm->y != TINFER_BUF_XB || nm->rows_out ||
            !matmul_args(c, p->y, p->x, p->w, p->bias, p->N, p->K, p->epi, false, &a))
            continue;
        a.nx = buf(c, TINFER_BUF_XB); /* as run_matmul will call it */
        a.ldnx = E;
        a.nw = nm->w->data;
        a.nss = nss_slot(c, slots);
        if (!tinfer_gemm_bf16_split_norm_ok(&a)) continue;
        /* every reader of XB until its next writer: a matmul over all rows that takes rss */
        bool ok = true;
        int32_t j = i + 2;
        for (; j < c->n_cmds && ok; j++) {
            const cmd *r = &c->cmds[j];
            const bool op = r->kind == CMD_MATMUL || r->kind == CMD_RMSNORM;
            const bool reads = op && r->x == TINFER_BUF_XB, writes = op && r->y == TINFER_BUF_XB;
            if (reads) {
                tinfer_gemm_bf16_args b;
                ok = r->kind == CMD_MATMUL && !r->rows_out &&
                     matmul_args(c, r->y, r->x, r->w, r->bias, r->N, r->K, r->epi, false, &b);
                if (ok) {
                    b.rss = a.nss, b.rn = (int32_t)E, b.reps = nm->eps;
                    ok = tinfer_gemm_bf16_split_norm_ok(&b) != 0;
                }
            }
            if (writes) break;
        }
        if (!ok) continue;
        for (int32_t k = i + 2; k < j && k < c->n_cmds; k++)
            if (c->cmds[k].kind == CMD_MATMUL && c->cmds[k].x == TINFER_BUF_XB)
                c->cmds[k].rss_slot = slots, c->cmds[k].norm_eps = nm->eps;
        p->nss_slot = slots++;
        nm->skip = true;
    }
    return slots;
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

/* Tensor parallelism: buf's first n floats summed over the ranks of comm, in place. */
static tinfer_status run_allreduce(cuda_ctx *c, tinfer_buf b, int64_t n, void *comm) {
#ifdef TINFER_HAVE_NCCL
    const ncclResult_t r = ncclAllReduce(buf(c, b), buf(c, b), (size_t)n, ncclFloat32, ncclSum,
                                         (ncclComm_t)comm, c->stream);
    if (r != ncclSuccess)
        return tinfer_err_set(&c->err, TINFER_ERR_CUDA, "ncclAllReduce of %lld floats: %s",
                              (long long)n, ncclGetErrorString(r));
    return TINFER_OK;
#else
    (void)b, (void)n, (void)comm;
    return tinfer_err_set(&c->err, TINFER_ERR_NO_DEVICE,
                          "cuda backend: an all-reduce needs a build with NCCL");
#endif
}

/* Every recorded op, then the argmax of the logits rows, on the stream. */
static tinfer_status run_step(cuda_ctx *c) {
    tinfer_status rc = TINFER_OK;
    const int32_t n_slots = plan_split_norms(c);
    for (int32_t i = 0; i < c->n_cmds && rc == TINFER_OK; i++) {
        const cmd *o = &c->cmds[i];
        switch (o->kind) {
        case CMD_EMBED: rc = run_embed(c, o->y, o->w, i == 0 ? n_slots : 0); break;
        case CMD_RMSNORM: {
            if (o->skip) break; /* split: its producer and consumers do its work */
            bool fused;
            rc = try_norm_matmul(c, o, i + 1 < c->n_cmds ? &c->cmds[i + 1] : NULL, &fused);
            if (fused)
                i++; /* the matmul ran too */
            else if (rc == TINFER_OK)
                rc = run_rmsnorm(c, o->y, o->x, o->w, o->eps, o->rows_out);
            break;
        }
        case CMD_MATMUL: rc = run_matmul(c, i); break;
        case CMD_ROPE_KV: rc = run_rope_kv(c, o->layer); break;
        case CMD_ATTENTION: rc = run_attention(c, o->layer); break;
        case CMD_ALLREDUCE: rc = run_allreduce(c, o->y, o->N, o->comm); break;
        }
    }
    if (rc == TINFER_OK && c->bp->n_out > 0) /* greedy decoding needs only these ids */
        rc = tinfer_op_cuda_argmax_val((int32_t *)(c->mem + c->plan.ids), c->vals, c->logits,
                                       c->bp->n_out, c->m->cfg->n_vocab, c->m->cfg->n_vocab,
                                       c->stream, &c->err);
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
    const bool want = c->fused > 0 || (c->fused < 0 && c->bp->n <= FUSED_AUTO_MAX_TOKENS);
    const tinfer_llama_config *cfg = c->m->cfg;
    return want && !c->vals && (cfg->n_embd_rows <= 0 || cfg->n_embd_rows == cfg->n_vocab) &&
           decode_step(c) && c->m->wbytes <= FUSED_MAX_WEIGHT_BYTES &&
           tinfer_op_cuda_step_ok(&c->m->step, &c->kv, c->bp->n, c->max_dec_len, c->m->dev.n_sm) &&
           cmds_standard(c);
}

static tinfer_status run_fused_step(cuda_ctx *c) {
    const tinfer_cuda_ctx_plan *p = &c->plan;
    /* the kernel writes the logits and, gathered across its blocks, their argmax: straight into
     * the pinned host buffers where the device maps them (no download after the step) */
    const bool to_host = c->h_ids_dev && c->h_logits_dev;
    float *logits = to_host && c->want_logits ? c->h_logits_dev : c->logits;
    int32_t *ids = to_host ? c->h_ids_dev : (int32_t *)(c->mem + p->ids);
    const tinfer_op_cuda_step_bufs b = {logits, c->bar, c->ll, TINFER_OP_CUDA_STEP_MAX_B,
                                        c->amax, ids};
    tinfer_status rc = tinfer_op_cuda_decode_step(
        &c->m->step, &c->kv, &b, meta_dev(c, p->m_tok), meta_dev(c, p->m_pos),
        meta_dev(c, p->m_seq), meta_dev(c, p->m_out), c->bp->n, c->bp->n_out, c->max_dec_len,
        NULL, c->stream, &c->err);
    c->last_kernels = 1;
    if (rc == TINFER_OK) c->n_fused++, c->step_to_host = to_host;
    return rc;
}

tinfer_status tinfer_cuda_greedy_steps(cuda_ctx *c, int32_t n_more) {
    const tinfer_cuda_ctx_plan *p = &c->plan;
    const tinfer_batch_plan *bp = c->bp;
    if (n_more < 0 || n_more >= c->n_batch || bp->n != 1 || bp->n_out != 1)
        return TINFER_ERR_UNSUPPORTED; /* the positions below live in the step's metadata */
    const int32_t len0 = c->max_dec_len, max_len = len0 + n_more;
    c->max_dec_len = max_len; /* the last step's keys: fused_ok checks the kernel takes them */
    const bool ok = fused_ok(c);
    c->max_dec_len = len0;
    if (!ok) return TINFER_ERR_UNSUPPORTED;
    /* positions pos + 1 .. pos + n_more after the step's own (an unused tail of the block) */
    int32_t *h = c->h_meta + p->m_pos;
    for (int32_t k = 1; k <= n_more; k++)
        h[k] = h[0] + k;
    int32_t *d_pos = meta_dev(c, p->m_pos), *d_ids = (int32_t *)(c->mem + p->ids);
    if (n_more > 0)
        CUDA_OK(&c->err,
                cudaMemcpyAsync(d_pos + 1, h + 1, (size_t)n_more * 4, cudaMemcpyHostToDevice,
                                c->stream),
                "uploading the greedy steps' positions");
    tinfer_status rc = TINFER_OK;
    for (int32_t k = 0; k <= n_more && rc == TINFER_OK; k++) {
        const tinfer_op_cuda_step_bufs b = {c->logits, c->bar, c->ll, TINFER_OP_CUDA_STEP_MAX_B,
                                            c->amax, d_ids + k};
        rc = tinfer_op_cuda_decode_step(&c->m->step, &c->kv, &b,
                                        k ? d_ids + k - 1 : meta_dev(c, p->m_tok), d_pos + k,
                                        meta_dev(c, p->m_seq), meta_dev(c, p->m_out), 1, 1,
                                        max_len, NULL, c->stream, &c->err);
        if (rc == TINFER_OK) c->n_fused++;
    }
    c->last_kernels = 1;
    if (rc == TINFER_OK)
        CUDA_OK(&c->err,
                cudaMemcpyAsync(c->h_ids, d_ids, (size_t)(n_more + 1) * sizeof(int32_t),
                                cudaMemcpyDeviceToHost, c->stream),
                "downloading the greedy picks");
    const cudaError_t e = cudaStreamSynchronize(c->stream);
    if (rc != TINFER_OK) return rc;
    CUDA_OK(&c->err, e, "the greedy steps' kernels");
    return TINFER_OK;
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

tinfer_status tinfer_cuda_launch_step(cuda_ctx *c) {
    c->last_kernels = 0;
    if (fused_ok(c)) return run_fused_step(c);
    if (!c->graphs || !decode_step(c)) return run_step(c);
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

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

/* The rows of a step one chain of kernels runs: the whole step, or with micro-batching one
 * window of a decode step's tokens (below). The ops take their rows' slice of every buffer; the
 * decode attention its slice of the decode list (whose entries are token indices) and of the
 * workspace. */
typedef struct win {
    int32_t r0, n;          /* tokens r0 .. r0 + n - 1 */
    int32_t o0, n_out;      /* the logits rows among them: gathered rows o0 .. o0 + n_out - 1 */
    int32_t d0, n_dec;      /* their decode queries: entries d0 .. d0 + n_dec - 1 of the list */
    cudaStream_t s;         /* the stream its kernels go to */
    unsigned long long *ss; /* its split-RMSNorm sums, [slot][n][2] */
    float *ws;              /* its share of the attention workspace, ws_bytes */
    size_t ws_bytes;
} win;

/* Row r of a buffer whose rows are `width` elements of `es` bytes. */
static void *row_at(void *base, int64_t r, int64_t width, size_t es) {
    return (char *)base + (size_t)(r * width) * es;
}

/* The embedding, and the zeroing of the window's n_slots split-RMSNorm sums (plan_split_norms). */
static tinfer_status run_embed(cuda_ctx *c, const win *w, tinfer_buf out,
                               const tinfer_weight *table, int32_t n_slots) {
    const tinfer_llama_config *cfg = c->m->cfg;
    return tinfer_op_cuda_embed_clear(row_at(buf(c, out), w->r0, cfg->n_embd, sizeof(float)),
                                      table->data, meta_dev(c, c->plan.m_tok) + w->r0, w->n,
                                      cfg->n_embd,
                                      cfg->n_embd_rows > 0 ? cfg->n_embd_rows : cfg->n_vocab,
                                      w->ss, (int64_t)n_slots * w->n * 2, w->s, &c->err);
}

/* Slot s's sums of squares: two words a token of the window. */
static unsigned long long *nss_slot(const win *w, int32_t s) {
    return w->ss + (size_t)s * w->n * 2;
}

/* out = RMSNorm(in) over the window's rows; gather: of its logits rows (the LM head's), whose
 * indices in m_out are the step's token indices, so `in` is the whole of X, into the window's
 * own first rows of out (concurrent windows never write each other's rows). */
static tinfer_status run_rmsnorm(cuda_ctx *c, const win *w, tinfer_buf out, tinfer_buf in,
                                 const tinfer_weight *wt, float eps, bool gather) {
    const int64_t E = c->m->cfg->n_embd;
    if (gather)
        return w->n_out == 0
                   ? TINFER_OK
                   : tinfer_op_cuda_rmsnorm(row_at(buf(c, out), w->r0, E, 2), buf(c, in),
                                            wt->data, meta_dev(c, c->plan.m_out) + w->o0,
                                            w->n_out, c->bp->n, (int32_t)E, eps, w->s, &c->err);
    return tinfer_op_cuda_rmsnorm(row_at(buf(c, out), w->r0, E, 2),
                                  row_at(buf(c, in), w->r0, E, sizeof(float)), wt->data, NULL,
                                  w->n, w->n, (int32_t)E, eps, w->s, &c->err);
}

/* The GEMM arguments of a matmul op over the window's rows; false when it has none. rows_out:
 * over its logits rows, whose inputs the gathering RMSNorm left in the window's first rows and
 * whose outputs are rows o0 .. of the logits. */
static bool matmul_args(cuda_ctx *c, const win *w, tinfer_buf y, tinfer_buf x,
                        const tinfer_weight *wt, const tinfer_weight *bias, int64_t N, int64_t K,
                        tinfer_epi epi, bool rows_out, tinfer_gemm_bf16_args *out) {
    const int64_t M = rows_out ? w->n_out : w->n, y0 = rows_out ? w->o0 : w->r0;
    if (M == 0) return false;
    const bool f32_out = y == TINFER_BUF_X || y == TINFER_BUF_LOGITS;
    const int64_t N_out = epi == TINFER_EPI_SWIGLU ? N / 2 : N;
    tinfer_gemm_bf16_args a;
    memset(&a, 0, sizeof a);
    a.M = M;
    a.N = N;
    a.K = K;
    a.X = row_at(buf(c, x), w->r0, K, 2);
    a.ldx = K;
    a.W = wt->data;
    a.ldw = K;
    a.bias = bias && bias->data ? bias->data : NULL;
    a.Y = row_at(buf(c, y), y0, N_out, f32_out ? sizeof(float) : 2);
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
static tinfer_status run_matmul(cuda_ctx *c, const win *w, int32_t i) {
    const cmd *o = &c->cmds[i];
    tinfer_gemm_bf16_args a;
    if (!matmul_args(c, w, o->y, o->x, o->w, o->bias, o->N, o->K, o->epi, o->rows_out, &a))
        return TINFER_OK;
    if (o->nss_slot >= 0) { /* the producer: XB = y * w of the skipped RMSNorm, op i + 1 */
        a.nx = row_at(buf(c, TINFER_BUF_XB), w->r0, c->m->cfg->n_embd, 2);
        a.ldnx = c->m->cfg->n_embd;
        a.nw = c->cmds[i + 1].w->data;
        a.nss = nss_slot(w, o->nss_slot);
    }
    if (o->rss_slot >= 0) { /* a consumer: rows times 1 / rms */
        a.rss = nss_slot(w, o->rss_slot);
        a.rn = c->m->cfg->n_embd;
        a.reps = o->norm_eps;
    }
    return tinfer_gemm_bf16(&a, TINFER_GEMM_BF16_PATH_AUTO, w->s, &c->err);
}

/* An RMSNorm whose only reader is the next op, a matmul the dispatcher sends to decode rung 08
 * (few tokens, short rows: SmolLM2's QKV and gate/up in decode), runs inside that GEMV
 * (tinfer_gemm_bf16_rmsnorm): one launch fewer. *fused: whether it did (then the matmul ran). */
static tinfer_status try_norm_matmul(cuda_ctx *c, const win *w, const cmd *norm, const cmd *mm,
                                     bool *fused) {
    *fused = false;
    if (norm->rows_out || norm->x != TINFER_BUF_X || !mm || mm->kind != CMD_MATMUL ||
        mm->x != norm->y || mm->rows_out || mm->K != c->m->cfg->n_embd)
        return TINFER_OK;
    tinfer_gemm_bf16_args a;
    if (!matmul_args(c, w, mm->y, mm->x, mm->w, mm->bias, mm->N, mm->K, mm->epi, false, &a) ||
        !tinfer_gemm_bf16_rmsnorm_ok(&a))
        return TINFER_OK;
    *fused = true;
    return tinfer_gemm_bf16_rmsnorm(&a, row_at(buf(c, TINFER_BUF_X), w->r0, mm->K, sizeof(float)),
                                    mm->K, norm->w->data, norm->eps, w->s, &c->err);
}

/* A decode step: one token per sequence, no prefill tiles. */
static bool decode_step(const cuda_ctx *c) { return c->n_tiles == 0 && c->n_dec == c->bp->n; }

/* The split RMSNorm (gemm/bf16.h's nx / rss): a residual matmul into X, the RMSNorm of X into XB
 * right after it, and matmuls reading XB until XB is written again become the producer writing
 * XB = x * w (the numerators) and each row's sum of squares into a slot, no RMSNorm launch, and
 * consumers multiplying their rows' accumulators by 1 / rms: a launch and a kernel boundary
 * fewer per RMSNorm (llama.c's ffn_norm after o_proj and the next layer's attn_norm after down).
 * Only where every one of these GEMMs runs, in every window, on a tensor-core rung that takes
 * the fields (tinfer_gemm_bf16_split_norm_ok: never rung 03, nor the decode GEMVs, so never
 * where the RMSNorm runs inside rung 08 instead: try_norm_matmul). The RMSNorm of layer 0 and
 * the LM head's gathered one stay launches. Decode steps only (from 9 sequences on:
 * tinfer-bench on an H100, tg128 at 16 and 64 sequences 1.1-1.3% faster), since a 512-token
 * prefill (pp512) measured 5% slower with it. Returns the slots used (each window's embedding
 * zeroes its sums first; without an embedding first, nothing is split). Debug switch (read
 * once): TINFER_CUDA_SPLIT_NORM=0 turns it off, so that one build measures both. */
static int32_t plan_split_norms(cuda_ctx *c, const win *wins, int32_t n_win) {
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
        if (p->kind != CMD_MATMUL || p->epi != TINFER_EPI_RESIDUAL || p->y != TINFER_BUF_X ||
            p->rows_out || p->N != E || nm->kind != CMD_RMSNORM || nm->x != TINFER_BUF_X ||
            nm->y != TINFER_BUF_XB || nm->rows_out)
            continue;
        /* the producer, then every reader of XB until its next writer (a matmul over all rows
         * that takes rss), take the fields in every window, as run_matmul will call them */
        bool ok = true;
        int32_t j = i + 2;
        for (int32_t k = 0; k < n_win && ok; k++) {
            const win *w = &wins[k];
            tinfer_gemm_bf16_args a;
            ok = matmul_args(c, w, p->y, p->x, p->w, p->bias, p->N, p->K, p->epi, false, &a);
            if (!ok) break;
            a.nx = buf(c, TINFER_BUF_XB);
            a.ldnx = E;
            a.nw = nm->w->data;
            a.nss = nss_slot(w, slots);
            ok = tinfer_gemm_bf16_split_norm_ok(&a) != 0;
            for (j = i + 2; j < c->n_cmds && ok; j++) {
                const cmd *r = &c->cmds[j];
                const bool op = r->kind == CMD_MATMUL || r->kind == CMD_RMSNORM;
                const bool reads = op && r->x == TINFER_BUF_XB, writes = op && r->y == TINFER_BUF_XB;
                if (reads) {
                    tinfer_gemm_bf16_args b;
                    ok = r->kind == CMD_MATMUL && !r->rows_out &&
                         matmul_args(c, w, r->y, r->x, r->w, r->bias, r->N, r->K, r->epi, false,
                                     &b);
                    if (ok) {
                        b.rss = a.nss, b.rn = (int32_t)E, b.reps = nm->eps;
                        ok = tinfer_gemm_bf16_split_norm_ok(&b) != 0;
                    }
                }
                if (writes) break;
            }
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

static tinfer_status run_rope_kv(cuda_ctx *c, const win *w, int32_t layer) {
    if (rope_in_attention(c)) return TINFER_OK;
    const tinfer_llama_config *cfg = c->m->cfg;
    const int64_t qkv_w = (int64_t)(cfg->n_head + 2 * cfg->n_head_kv) * cfg->head_dim;
    return tinfer_op_cuda_rope_kv(row_at(buf(c, TINFER_BUF_QKV), w->r0, qkv_w, 2), &c->kv, layer,
                                  c->m->inv_freq, meta_dev(c, c->plan.m_pos) + w->r0,
                                  meta_dev(c, c->plan.m_seq) + w->r0, w->n, w->s, &c->err);
}

/* The prefill tiles (a step of one window) and the window's decode queries: their entries of
 * the decode list index the whole of QKV and ATT. */
static tinfer_status run_attention(cuda_ctx *c, const win *w, int32_t layer) {
    tinfer_status rc = TINFER_OK;
    const int32_t *pos = meta_dev(c, c->plan.m_pos), *seq = meta_dev(c, c->plan.m_seq);
    const int32_t *dec = meta_dev(c, c->plan.m_dec) + w->d0;
    if (c->n_tiles > 0)
        rc = tinfer_op_cuda_attention_prefill(buf(c, TINFER_BUF_ATT), buf(c, TINFER_BUF_QKV),
                                              &c->kv, layer, pos, meta_dev(c, c->plan.m_tiles),
                                              c->n_tiles, w->s, &c->err);
    if (rc == TINFER_OK && rope_in_attention(c))
        rc = tinfer_op_cuda_attention_decode_rope(
            buf(c, TINFER_BUF_ATT), buf(c, TINFER_BUF_QKV), &c->kv, layer, c->m->inv_freq, pos,
            seq, dec, w->n_dec, c->max_dec_len, w->ws, w->ws_bytes, w->s, &c->err);
    else if (rc == TINFER_OK && w->n_dec > 0)
        rc = tinfer_op_cuda_attention_decode(buf(c, TINFER_BUF_ATT), buf(c, TINFER_BUF_QKV),
                                             &c->kv, layer, pos, seq, dec, w->n_dec,
                                             c->max_dec_len, w->ws, w->ws_bytes, w->s, &c->err);
    return rc;
}

/* Tensor parallelism: buf's first n floats summed over the ranks of comm, in place. */
static tinfer_status run_allreduce(cuda_ctx *c, const win *w, tinfer_buf b, int64_t n,
                                   void *comm) {
#ifdef TINFER_HAVE_NCCL
    const ncclResult_t r = ncclAllReduce(buf(c, b), buf(c, b), (size_t)n, ncclFloat32, ncclSum,
                                         (ncclComm_t)comm, w->s);
    if (r != ncclSuccess)
        return tinfer_err_set(&c->err, TINFER_ERR_CUDA, "ncclAllReduce of %lld floats: %s",
                              (long long)n, ncclGetErrorString(r));
    return TINFER_OK;
#else
    (void)w, (void)b, (void)n, (void)comm;
    return tinfer_err_set(&c->err, TINFER_ERR_NO_DEVICE,
                          "cuda backend: an all-reduce needs a build with NCCL");
#endif
}

/* Micro-batching: a decode step's tokens cut into windows of consecutive rows, each run as its
 * own chain of the step's kernels on its own stream (forked from the context's stream and
 * joined back; a CUDA graph captures the chains as parallel branches). The step is a chain of
 * short dependent kernels, each of which leaves most of the GPU idle while it drains and the
 * next one starts; independent chains fill each other's gaps. Every op of a decode step is
 * row by row (each token is the only one of its sequence; the attention reads only its own
 * sequence's cache), so the windows share nothing but the weights. Never with tensor
 * parallelism (the all-reduce is one collective over the whole step). Measured slower than one
 * chain at every batch size (ARCHITECTURE.md), so auto takes one. The windows: n_win from
 * micro_windows, as even as the rows allow. */
static int32_t micro_windows(const cuda_ctx *c) {
    if (!decode_step(c) || c->vals) return 1;
    for (int32_t i = 0; i < c->n_cmds; i++)
        if (c->cmds[i].kind == CMD_ALLREDUCE) return 1;
    int32_t g = c->micro >= 1 ? c->micro : 1; /* auto: one chain (ARCHITECTURE: measured) */
    if (g > MICRO_MAX) g = MICRO_MAX;
    if (g > c->bp->n) g = c->bp->n;
    return g < 1 ? 1 : g;
}

/* The step's windows (n_win of them) and the streams they run on: created at first use. */
static tinfer_status make_windows(cuda_ctx *c, win *wins, int32_t n_win) {
    const tinfer_batch_plan *bp = c->bp;
    unsigned long long *ss = (unsigned long long *)(c->mem + c->plan.nss);
    float *ws = (float *)(c->mem + c->plan.ws);
    const size_t ws_floats = c->plan.ws_bytes / sizeof(float);
    int32_t o = 0;
    for (int32_t k = 0; k < n_win; k++) {
        win *w = &wins[k];
        w->r0 = (int32_t)((int64_t)bp->n * k / n_win);
        w->n = (int32_t)((int64_t)bp->n * (k + 1) / n_win) - w->r0;
        w->o0 = o;
        while (o < bp->n_out && bp->out_rows[o] < w->r0 + w->n) o++;
        w->n_out = o - w->o0;
        w->d0 = n_win == 1 ? 0 : w->r0; /* a decode step's list is 0 .. n - 1 */
        w->n_dec = n_win == 1 ? c->n_dec : w->n;
        if (k > 0 && !c->side[k - 1]) {
            CUDA_OK(&c->err, cudaStreamCreateWithFlags(&c->side[k - 1], cudaStreamNonBlocking),
                    "creating a micro-batch stream");
            CUDA_OK(&c->err, cudaEventCreateWithFlags(&c->join[k - 1], cudaEventDisableTiming),
                    "creating a micro-batch event");
        }
        w->s = k == 0 ? c->stream : c->side[k - 1];
        w->ss = ss; /* the slot count is known after plan_split_norms: run_step moves these */
        /* the workspace in proportion to the rows, 16-byte aligned */
        const size_t f0 = ws_floats * (size_t)w->r0 / (size_t)(bp->n ? bp->n : 1) / 4 * 4;
        const size_t f1 = k + 1 == n_win ? ws_floats
                                         : ws_floats * (size_t)(w->r0 + w->n) / (size_t)bp->n / 4 * 4;
        w->ws = ws + f0;
        w->ws_bytes = (f1 - f0) * sizeof(float);
    }
    if (n_win > 1 && !c->fork)
        CUDA_OK(&c->err, cudaEventCreateWithFlags(&c->fork, cudaEventDisableTiming),
                "creating a micro-batch event");
    return TINFER_OK;
}

/* Recorded op i over one window. *done_next: it ran op i + 1 too (an RMSNorm inside its GEMV). */
static tinfer_status run_op(cuda_ctx *c, const win *w, int32_t i, int32_t n_slots,
                            bool *done_next) {
    const cmd *o = &c->cmds[i];
    *done_next = false;
    switch (o->kind) {
    case CMD_EMBED: return run_embed(c, w, o->y, o->w, i == 0 ? n_slots : 0);
    case CMD_RMSNORM: {
        if (o->skip) return TINFER_OK; /* split: its producer and consumers do its work */
        tinfer_status rc =
            try_norm_matmul(c, w, o, i + 1 < c->n_cmds ? &c->cmds[i + 1] : NULL, done_next);
        if (rc == TINFER_OK && !*done_next)
            rc = run_rmsnorm(c, w, o->y, o->x, o->w, o->eps, o->rows_out);
        return rc;
    }
    case CMD_MATMUL: return run_matmul(c, w, i);
    case CMD_ROPE_KV: return run_rope_kv(c, w, o->layer);
    case CMD_ATTENTION: return run_attention(c, w, o->layer);
    case CMD_ALLREDUCE: return run_allreduce(c, w, o->y, o->N, o->comm);
    }
    return TINFER_OK;
}

/* Whether the step's LM head and argmax run as one kernel (tinfer_op_cuda_lm_argmax) that
 * writes the picks and no logits: where only the picks are wanted (no logits asked for, no best
 * logit kept), the last op is the LM head over the gathered rows, and every window's rows fit
 * the kernel. H100, SmolLM2 at 64 sequences (probe-timeline --argmax): 35.9 us a step against
 * 45.2 for the GEMM and 9.1 for the argmax; tinfer-bench tg64-argmax +1.5% at 64 sequences,
 * unchanged at 16 (ARCHITECTURE.md). Debug switch (read once): TINFER_CUDA_LM_ARGMAX=0 keeps
 * the GEMM and the argmax, so that one build measures both. */
static bool lm_argmax_step(const cuda_ctx *c) {
    static int enabled = -1;
    if (enabled < 0) {
        const char *v = getenv("TINFER_CUDA_LM_ARGMAX");
        enabled = !(v && !strcmp(v, "0"));
    }
    if (!enabled || c->want_logits || c->vals || c->n_cmds == 0) return false;
    const cmd *o = &c->cmds[c->n_cmds - 1];
    const int32_t E = c->m->cfg->n_embd;
    if (o->kind != CMD_MATMUL || o->y != TINFER_BUF_LOGITS || o->x != TINFER_BUF_XB ||
        !o->rows_out || (o->bias && o->bias->data) || o->epi != TINFER_EPI_STORE ||
        o->N != c->m->cfg->n_vocab || o->K != E || o->w != &c->m->w.lm_head ||
        o->nss_slot >= 0 || o->rss_slot >= 0)
        return false;
    /* every window's rows: no more than the step's n_out */
    return tinfer_op_cuda_lm_argmax_takes(c->bp->n_out, E);
}

/* Every recorded op, then the argmax of the logits rows, in each window; the windows' streams
 * forked from the context's and joined back to it (also after an error, so that a capture
 * ends joined). Where lm_argmax_step, the LM head and the argmax are one kernel instead. */
static tinfer_status run_step(cuda_ctx *c) {
    win wins[MICRO_MAX];
    const int32_t n_win = micro_windows(c);
    tinfer_status rc = make_windows(c, wins, n_win);
    if (rc != TINFER_OK) return rc;
    const int32_t n_slots = plan_split_norms(c, wins, n_win);
    for (int32_t k = 0; k < n_win; k++) /* window k's sums after those of the rows before it */
        wins[k].ss += (size_t)n_slots * wins[k].r0 * 2;
    cudaError_t ce = cudaSuccess;
    if (n_win > 1) {
        ce = cudaEventRecord(c->fork, c->stream);
        for (int32_t k = 1; k < n_win && ce == cudaSuccess; k++)
            ce = cudaStreamWaitEvent(wins[k].s, c->fork, 0);
        if (ce != cudaSuccess)
            return tinfer_err_set(&c->err, TINFER_ERR_CUDA, "forking the micro-batches: %s",
                                  cudaGetErrorString(ce));
    }
    /* op by op across the windows, so that eager launches feed every chain in turn */
    const bool lm_am = lm_argmax_step(c);
    const int32_t n_ops = c->n_cmds - (lm_am ? 1 : 0);
    uint32_t skip = 0; /* windows that already ran op i (inside op i - 1's launch) */
    for (int32_t i = 0; i < n_ops && rc == TINFER_OK; i++) {
        uint32_t ran_next = 0;
        for (int32_t k = 0; k < n_win && rc == TINFER_OK; k++) {
            if (skip & (1u << k)) continue;
            bool next = false;
            rc = run_op(c, &wins[k], i, n_slots, &next);
            if (next) ran_next |= 1u << k;
        }
        skip = ran_next;
    }
    const int32_t V = c->m->cfg->n_vocab;
    /* greedy decoding needs only these: each row cut across the SMs (a block a row would read
     * at one SM's bandwidth), or, where the best logit is kept too (tensor parallelism), a
     * block a row */
    int32_t *ids = (int32_t *)(c->mem + c->plan.ids);
    unsigned long long *amx = (unsigned long long *)(c->mem + c->plan.amx);
    const cmd *lm = &c->cmds[c->n_cmds - 1];
    for (int32_t k = 0; k < n_win && rc == TINFER_OK; k++) {
        const win *w = &wins[k];
        if (w->n_out <= 0) continue;
        tinfer_gemm_bf16_args a; /* the LM head's operands: the window's gathered rows */
        if (lm_am && matmul_args(c, w, lm->y, lm->x, lm->w, NULL, lm->N, lm->K, lm->epi,
                                 lm->rows_out, &a)) {
            rc = tinfer_op_cuda_lm_argmax(ids + w->o0, a.X, a.ldx, a.W, a.ldw, (int32_t)a.M, V,
                                          (int32_t)a.K, amx + 2 * (size_t)w->o0, w->s, &c->err);
            continue;
        }
        const float *lg = c->logits + (size_t)w->o0 * V;
        rc = c->vals ? tinfer_op_cuda_argmax_val(ids + w->o0, c->vals + w->o0, lg, w->n_out, V, V,
                                                 w->s, &c->err)
                     : tinfer_op_cuda_argmax_split(ids + w->o0, lg, w->n_out, V, V,
                                                   amx + 2 * (size_t)w->o0, w->s, &c->err);
    }
    for (int32_t k = 1; k < n_win; k++) {
        cudaError_t e = cudaEventRecord(c->join[k - 1], wins[k].s);
        if (e == cudaSuccess) e = cudaStreamWaitEvent(c->stream, c->join[k - 1], 0);
        if (e != cudaSuccess && ce == cudaSuccess) ce = e;
    }
    if (rc == TINFER_OK && ce != cudaSuccess)
        rc = tinfer_err_set(&c->err, TINFER_ERR_CUDA, "joining the micro-batches: %s",
                            cudaGetErrorString(ce));
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

/* Whether the fused kernel runs `steps` steps from here: fused_ok with the last one's keys. */
static bool fused_takes(cuda_ctx *c, int32_t steps) {
    const int32_t len0 = c->max_dec_len;
    c->max_dec_len = len0 + steps - 1;
    const bool ok = fused_ok(c);
    c->max_dec_len = len0;
    return ok;
}

/* Up to TINFER_OP_CUDA_STEP_MAX_B sequences: `steps` greedy steps as one launch of the fused
 * kernel (tinfer_op_cuda_decode_steps), which feeds each step's picks to the next on the device
 * (step k runs token j at position pos[j] + k); the picks, [steps][n], downloaded once. */
static tinfer_status greedy_fused(cuda_ctx *c, int32_t steps) {
    const tinfer_cuda_ctx_plan *p = &c->plan;
    const int32_t n = c->bp->n;
    int32_t *d_ids = (int32_t *)(c->mem + p->ids);
    const tinfer_op_cuda_step_bufs b = {c->logits, c->bar, c->ll, TINFER_OP_CUDA_STEP_MAX_B,
                                        c->amax, d_ids};
    tinfer_status rc = tinfer_op_cuda_decode_steps(
        &c->m->step, &c->kv, &b, meta_dev(c, p->m_tok), meta_dev(c, p->m_pos),
        meta_dev(c, p->m_seq), meta_dev(c, p->m_out), n, n, steps, c->max_dec_len + steps - 1,
        NULL, c->stream, &c->err);
    c->last_kernels = 1;
    c->step_to_host = false;
    if (rc != TINFER_OK) return rc;
    c->n_fused += steps;
    CUDA_OK(&c->err,
            cudaMemcpyAsync(c->h_ids, d_ids, (size_t)steps * (size_t)n * sizeof(int32_t),
                            cudaMemcpyDeviceToHost, c->stream),
            "downloading the greedy picks");
    return TINFER_OK;
}

/* Several sequences: the step as it runs alone (op by op, or its graph), and after each step
 * tinfer_op_cuda_greedy_feed, which saves the step's picks (ids[0 .. n), written by the step's
 * argmax) to ids[(k + 1) n ..] and writes them into the metadata as the next step's tokens, one
 * position further. The decode attention's key ranges are cut once, for the last step's length,
 * so every step replays the same graph. */
static tinfer_status greedy_op_by_op(cuda_ctx *c, int32_t steps) {
    const tinfer_cuda_ctx_plan *p = &c->plan;
    const int32_t n = c->bp->n;
    int32_t *d_ids = (int32_t *)(c->mem + p->ids);
    c->max_dec_len += steps - 1;
    tinfer_status rc = tinfer_op_cuda_attention_decode_split(
        &c->kv, c->n_dec, c->max_dec_len, (float *)(c->mem + p->ws), p->ws_bytes, &c->dec_chunk,
        &c->dec_split, &c->err);
    c->want_logits = false;
    int32_t *h_ids_dev = c->h_ids_dev; /* a fused step (cuda_fused_decode = 1) picks into d_ids */
    c->h_ids_dev = NULL;
    int32_t kernels = 0;
    for (int32_t k = 0; k < steps && rc == TINFER_OK; k++) {
        rc = tinfer_cuda_launch_step(c);
        kernels = c->last_kernels;
        if (rc == TINFER_OK)
            rc = tinfer_op_cuda_greedy_feed(meta_dev(c, p->m_tok), meta_dev(c, p->m_pos),
                                            meta_dev(c, p->m_out), d_ids,
                                            d_ids + (size_t)(k + 1) * (size_t)n, n, k + 1 < steps,
                                            c->stream, &c->err);
    }
    c->h_ids_dev = h_ids_dev;
    c->step_to_host = false;
    c->last_kernels = kernels + 1; /* a step's, and the feed */
    if (rc == TINFER_OK)
        CUDA_OK(&c->err,
                cudaMemcpyAsync(c->h_ids, d_ids + n, (size_t)steps * (size_t)n * sizeof(int32_t),
                                cudaMemcpyDeviceToHost, c->stream),
                "downloading the greedy picks");
    return rc;
}

tinfer_status tinfer_cuda_greedy_steps(cuda_ctx *c, int32_t n_more, int32_t *n_steps) {
    const tinfer_batch_plan *bp = c->bp;
    *n_steps = 0;
    if (n_more < 0 || bp->n < 1 || bp->n_out != bp->n || !decode_step(c) || c->vals)
        return TINFER_ERR_UNSUPPORTED;
    for (int32_t i = 0; i < c->n_cmds; i++)
        if (c->cmds[i].kind == CMD_ALLREDUCE) return TINFER_ERR_UNSUPPORTED;
    /* fused (up to TINFER_OP_CUDA_STEP_MAX_B sequences): one launch of as many steps as the
     * kernel takes the last one's keys for and the ids buffer holds the picks of, all that were
     * asked where it can. Else several sequences op by op, up to TINFER_CUDA_GREEDY_STEPS a
     * call, and one sequence UNSUPPORTED (the runtime steps it a token at a time, on the same
     * decode attention split as every other step). The runtime asks again for the rest. */
    const int32_t asked = 1 + n_more;
    int32_t steps = (int32_t)(c->plan.ids_count / (size_t)bp->n);
    if (steps > TINFER_OP_CUDA_STEP_MAX_STEPS) steps = TINFER_OP_CUDA_STEP_MAX_STEPS;
    if (steps > asked) steps = asked;
    bool fused = false;
    if (bp->n <= TINFER_OP_CUDA_STEP_MAX_B) {
        if (!fused_takes(c, steps)) { /* the keys may run out first: as many as they allow */
            const int32_t room = TINFER_OP_CUDA_STEP_MAX_KEYS - c->max_dec_len + 1;
            steps = room < steps ? room : 0;
        }
        fused = steps >= 1 && fused_takes(c, steps);
    }
    if (!fused) {
        if (bp->n == 1) return TINFER_ERR_UNSUPPORTED;
        steps = asked < TINFER_CUDA_GREEDY_STEPS ? asked : TINFER_CUDA_GREEDY_STEPS;
    }
    const tinfer_status rc = fused ? greedy_fused(c, steps) : greedy_op_by_op(c, steps);
    const cudaError_t e = cudaStreamSynchronize(c->stream);
    if (rc != TINFER_OK) return rc;
    CUDA_OK(&c->err, e, "the greedy steps' kernels");
    *n_steps = steps;
    return TINFER_OK;
}

/* The graph slot of this decode step's shape (found, or the least recently used, reset). */
static graph_entry *graph_slot(cuda_ctx *c) {
    graph_entry *lru = &c->g[0];
    const bool lm_am = lm_argmax_step(c);
    for (int i = 0; i < GRAPH_SLOTS; i++) {
        graph_entry *e = &c->g[i];
        if (e->seen && e->n == c->bp->n && e->n_out == c->bp->n_out && e->chunk == c->dec_chunk &&
            e->n_split == c->dec_split && e->logits == c->logits && e->lm_argmax == lm_am)
            return e;
        if (e->used < lru->used) lru = e;
    }
    if (lru->exec) cudaGraphExecDestroy(lru->exec);
    *lru = (graph_entry){c->bp->n, c->bp->n_out, c->dec_chunk, c->dec_split, c->logits, lm_am, 0,
                         NULL, 0, 0};
    return lru;
}

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

/* The step op by op: a decode step through its graph where one is (or can now be) made, else
 * eagerly. A capture or instantiation that fails turns graphs off for this context and the step
 * runs eagerly: graphs only ever change how fast a step runs. */
static tinfer_status launch_ops(cuda_ctx *c) {
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

tinfer_status tinfer_cuda_launch_step(cuda_ctx *c) {
    c->last_kernels = 0;
    if (fused_ok(c)) return run_fused_step(c);
    const tinfer_status rc = launch_ops(c);
    if (rc == TINFER_OK && lm_argmax_step(c)) c->n_lm_argmax++;
    return rc;
}

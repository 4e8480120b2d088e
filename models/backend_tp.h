/*
 * backend_tp.h — tensor parallelism (Megatron-LM style) as a backend of models/backend.h: one
 * model runs as n_rank shards ("ranks"), each rank a sub-backend (its ops table, its model and
 * context states) holding its slice of every weight; the partial outputs of the row-split
 * GEMMs are summed by an all-reduce, one per sub-layer. The forward pass (models/llama.c) is
 * unchanged: it calls this backend's ops, which call every rank's.
 *
 * The split (Y[M,N] = X[M,K] · W[N,K]^T; E = n_embd, D = head_dim, H / Hkv heads, F = n_ff,
 * V = n_vocab; tp = n_rank):
 *   output-split (column-parallel: each rank its N rows of W, no sum needed)
 *     wqkv [Q + 2 KV, E] -> [its H/tp q heads | its k heads | its v heads] x E (bqkv alike)
 *     wgu  [2F, E]       -> [gate rows of its F/tp slice; up rows of the same slice] x E
 *     lm_head [V, E]     -> a vocabulary slice of ceil(V/tp) rows (the last rank's shorter)
 *   input-split (row-parallel: each rank its K columns of W, partial sums all-reduced)
 *     wo    [E, Q] -> [E, Q/tp], the columns of its q heads; bo on rank 0 only
 *     wdown [E, F] -> [E, F/tp]
 *   replicated: tok_embd, the norms (the host tensors, shared).
 * KV heads: split (Hkv/tp a rank) when tp divides Hkv; else, when Hkv divides tp, each rank
 * holds the one KV head its q heads use (vLLM's rule: replicated across tp/Hkv ranks); else
 * TINFER_ERR_INVALID_ARG. H % tp == 0 and F % tp == 0 are required. Q8_0 weights (base/q8_0.h)
 * keep their F16 scales with their rows; a column slice needs (K/tp) % 32 == 0 (whole blocks).
 * A rank's config is the model's with n_head / tp, its n_head_kv, n_ff / tp and n_vocab = its
 * LM-head slice (what sizes its LOGITS buffer); its embedding table is still the whole [V, E]
 * (read in place on the CPU: a device rank will need the table's row count apart from n_vocab).
 *
 * CPU ranks run one after another and the all-reduce sums host buffers: a check of the split,
 * the head assignment and the per-rank KV layout, not a speed-up. CUDA ranks (one per GPU) take
 * the NCCL implementation of models/tp_nccl.h: the all-reduce recorded into every rank's step,
 * the ranks' steps run at once, one host thread each (ARCHITECTURE.md, "Tensor parallel").
 */
#ifndef TINFER_MODELS_BACKEND_TP_H
#define TINFER_MODELS_BACKEND_TP_H

#include "models/backend.h"

#include <stdint.h>

/* Most ranks one model is split into. */
#define TINFER_TP_MAX 64

/* The sum across ranks, and how the ranks are placed and run. sum: activation buffer `buf` of
 * every rank's context, n floats from its start, replaced on every rank by the sum over ranks
 * (the same values on each; a device implementation records it into each rank's step). check:
 * whether it can run over ranks of this sub-backend (called once at model init; a one-line
 * reason otherwise). self: the implementation's state (communicators, threads).
 * Optional (NULL: the host's way):
 *   device     the device ordinal rank r's model_init gets (NULL: 0)
 *   ctx_ready  called once every rank's context exists (a device implementation asks them to
 *              keep their greedy logits)
 *   logits     runs every rank's logits call, all at once where ranks wait on each other inside
 *              a step (NCCL); fills lg[r] (when need_logits), ids[r] and vals[r] (each rank's
 *              greedy logit of its vocabulary slice). NULL: one rank after another, every rank
 *              asked for its logits, gathered and reduced on the host.
 *   destroy    frees self when the model goes (the model owns the implementation it was given
 *              once tinfer_tp_model_init is called, whether that succeeds or not)
 *   timing     times one all-reduce of a token's residual row alone (tinfer_context_stats). */
typedef struct tinfer_tp_allreduce {
    const char *name;
    tinfer_status (*check)(const void *self, const tinfer_backend_ops *rank_ops, tinfer_err *err);
    tinfer_status (*sum)(void *self, const tinfer_backend_ops *rank_ops, void *const *rank_cs,
                         int32_t n_rank, tinfer_buf buf, int64_t n, tinfer_err *err);
    int32_t (*device)(const void *self, int32_t rank);
    tinfer_status (*ctx_ready)(void *self, const tinfer_backend_ops *rank_ops,
                               void *const *rank_cs, int32_t n_rank, tinfer_err *err);
    tinfer_status (*logits)(void *self, const tinfer_backend_ops *rank_ops, void *const *rank_cs,
                            int32_t n_rank, bool need_logits, const float **lg,
                            const int32_t **ids, const float **vals, tinfer_err *err);
    void (*destroy)(void *self);
    /* one all-reduce of a token's residual row timed alone, F32 and BF16 (us; NULL: none) */
    void (*timing)(void *self, double *f32_us, double *bf16_us);
    void *self;
} tinfer_tp_allreduce;

/* The host all-reduce: reads every rank's buffer through rank_ops->buf_f32, adds them in rank
 * order into rank 0's and copies the sum to the others (deterministic). Ranks without host
 * buffers (buf_f32 NULL: CUDA) are refused with TINFER_ERR_NO_DEVICE. */
extern const tinfer_tp_allreduce tinfer_tp_allreduce_host;

/* The model level of the tensor-parallel backend: shards host_w (the loader's weights, which
 * must outlive the state) into n_rank ranks of rank_ops and runs each rank's model_init.
 * ar: the all-reduce (NULL: tinfer_tp_allreduce_host). *dev_w: the weights as the ops of
 * tinfer_backend_tp take them (each entry names a shard descriptor, not tensor data). Errors:
 * TINFER_ERR_INVALID_ARG naming the numbers when the model does not split n_rank ways,
 * TINFER_ERR_NO_DEVICE when the all-reduce cannot run over rank_ops; a rank's own errors as it
 * reports them. The state is freed by tinfer_backend_tp.model_free. */
tinfer_status tinfer_tp_model_init(const tinfer_backend_ops *rank_ops, int32_t n_rank,
                                   const tinfer_tp_allreduce *ar, const tinfer_llama_config *cfg,
                                   const tinfer_llama_weights *host_w, int32_t n_threads,
                                   void **state, const tinfer_llama_weights **dev_w,
                                   tinfer_err *err);

/* The ops over a state made by tinfer_tp_model_init (its model_init, which cannot know n_rank,
 * refuses with TINFER_ERR_INTERNAL). */
extern const tinfer_backend_ops tinfer_backend_tp;

#endif

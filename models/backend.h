/*
 * backend.h — the compute seam the Llama forward pass (models/llama.c) is written against.
 *
 * A backend is an object with a life cycle, not only an op table:
 *   model level    model_init: take the host weights (runtime/model.c loaded and validated them)
 *                  and make them the backend's own (the CPU backend uses them in place; a GPU
 *                  backend uploads them once, in the types its kernels read), model_free;
 *   context level  ctx_init: own everything one context computes with: the KV cache of n_seq
 *                  sequences x n_ctx tokens, the activations of n_batch tokens, the logits;
 *                  every byte is sized here, once, so a decode step never allocates;
 *   one forward    begin (the step's batch plan: token ids, positions, sequence runs, the rows
 *                  that want logits), the ops below in the order of llama.c, then logits (the
 *                  wanted rows' logits in host memory; a GPU backend synchronises here and only
 *                  here).
 * The forward pass is ONE code path for every backend: it names activations by buffer id and
 * never touches their memory, so each backend picks the types (the CPU keeps F32 everywhere; a
 * GPU keeps the residual stream F32 and feeds its tensor-core GEMMs BF16). Where a GPU wants a
 * fused op (GEMM with a residual or SwiGLU epilogue, RoPE fused with the KV-cache write, the
 * LM-head row gather fused into the final RMSNorm, attention of every sequence in one launch),
 * the seam offers that op, and the CPU backend implements it by composing its reference ops, so
 * both backends run the same sequence of calls.
 *
 * Shapes, row-major, GEMM convention Y[M,N] = X[M,K] · W[N,K]^T (M tokens, N output features,
 * K input features; ARCHITECTURE.md). E = n_embd, Q = n_head * head_dim, KV = n_head_kv *
 * head_dim, F = n_ff, V = n_vocab; n = tokens in the step, n_out = rows that want logits. Tokens
 * are in the plan's order: sorted by sequence, each sequence's positions ascending.
 */
#ifndef TINFER_MODELS_BACKEND_H
#define TINFER_MODELS_BACKEND_H

#include "base/dtype.h"
#include "base/error.h"
#include "models/llama_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A weight tensor in the memory of whoever holds it (host for the loader and the CPU backend,
 * device for a GPU backend) and its element type. Q8_0 (base/q8_0.h): data holds the int8
 * values [rows, K] and scale the F16 scales [rows, K / 32], both row-major; scale is NULL for
 * every other dtype. */
typedef struct tinfer_weight {
    const void *data;
    tinfer_dtype dtype;
    const void *scale;
} tinfer_weight;

typedef struct tinfer_llama_layer {
    tinfer_weight attn_norm; /* [E]           input_layernorm */
    tinfer_weight wqkv;      /* [Q + 2*KV, E] q_proj | k_proj | v_proj rows, fused */
    tinfer_weight bqkv;      /* [Q + 2*KV]    q|k|v biases; data NULL without biases */
    tinfer_weight wo;        /* [E, Q]        o_proj */
    tinfer_weight bo;        /* [E]           o_proj bias; data NULL when absent */
    tinfer_weight ffn_norm;  /* [E]           post_attention_layernorm */
    tinfer_weight wgu;       /* [2*F, E]      gate_proj | up_proj rows, fused */
    tinfer_weight wdown;     /* [E, F]        down_proj */
} tinfer_llama_layer;

typedef struct tinfer_llama_weights {
    tinfer_weight tok_embd;     /* [V, E] model.embed_tokens */
    tinfer_weight out_norm;     /* [E]    model.norm */
    tinfer_weight lm_head;      /* [V, E] lm_head, or tok_embd when tie_word_embeddings */
    tinfer_llama_layer *layers; /* [L] */
    int32_t n_layer;
    void **owned; /* every host allocation made at load, freed by tinfer_llama_free */
    int32_t n_owned, cap_owned;
    size_t owned_bytes;
    tinfer_dtype fused_dtype; /* dtype of the fused matrices (for the description): BF16, F32
                               * or Q8_0 */
} tinfer_llama_weights;

/* Activations of one step, named by the forward pass, owned and typed by the backend. */
typedef enum tinfer_buf {
    TINFER_BUF_X = 0,  /* [n, E]      residual stream (F32 on every backend) */
    TINFER_BUF_XB,     /* [n, E]      normed activations; [n_out, E] before the LM head */
    TINFER_BUF_QKV,    /* [n, Q+2*KV] fused projection output, q | k | v per row */
    TINFER_BUF_ATT,    /* [n, Q]      attention output */
    TINFER_BUF_ACT,    /* [n, F]      silu(gate) * up */
    TINFER_BUF_LOGITS, /* [n_out, V] F32 */
    TINFER_BUF_COUNT
} tinfer_buf;

/* What the GEMM does after the product (gemm/bf16.h has the GPU side of each). */
typedef enum tinfer_epi {
    TINFER_EPI_STORE = 0, /* Y  = X·W^T (+ bias) */
    TINFER_EPI_RESIDUAL,  /* Y += X·W^T (+ bias): the residual add, in the GEMM */
    TINFER_EPI_SWIGLU,    /* W = [gate; up] (N = 2F): Y[:, j] = silu(g_j) * u_j, Y has F columns */
} tinfer_epi;

/* One step's batch, host memory, built by the forward pass (models/llama.c, step 0). */
typedef struct tinfer_batch_plan {
    int32_t n;                /* tokens */
    const int32_t *tok;       /* [n] token ids, sorted order */
    const int32_t *pos;       /* [n] positions, sorted order */
    const int32_t *seq;       /* [n] sequence ids, sorted order (non-decreasing) */
    int32_t n_seq;            /* sequences the context holds (seq_start has n_seq + 1 entries) */
    const int32_t *seq_start; /* [n_seq + 1] first sorted index of each sequence */
    int32_t n_out;            /* rows that want logits */
    const int32_t *out_rows;  /* [n_out] their sorted indices */
} tinfer_batch_plan;

/* A context's launch counts, as tinfer_context_stats reports them (include/tinfer.h). */
typedef struct tinfer_backend_stats {
    int64_t graph_replays, graph_captures; /* decode steps replayed / graphs captured */
    int32_t last_step_kernels;             /* kernel nodes of the last step's graph */
    int64_t fused_steps;                   /* decode steps run as one fused kernel */
    int64_t lm_argmax_steps; /* op-by-op steps whose LM head and argmax ran as one kernel */
} tinfer_backend_stats;

typedef struct tinfer_backend_ops {
    const char *name; /* "cpu", "cuda" */

    /* --- model level --------------------------------------------------------------------- */
    /* *state: the backend's model; *dev_w: the weights as the ops below take them (for the CPU,
     * host_w itself). host_w stays alive and unchanged until model_free. device: the CUDA
     * device the model and its contexts live on (every call of a CUDA model or context makes
     * it current first); ignored by the CPU. */
    tinfer_status (*model_init)(const tinfer_llama_config *cfg, const tinfer_llama_weights *host_w,
                                int32_t n_threads, int32_t device, void **state,
                                const tinfer_llama_weights **dev_w, tinfer_err *err);
    void (*model_free)(void *state);
    /* One-line description of where it runs ("cpu avx512, 2 threads", "cuda NVIDIA H200"). */
    const char *(*model_desc)(const void *state);
    /* Bytes of weights one decode step reads (every matrix once, the embedding rows aside). */
    int64_t (*weight_bytes)(const void *state);
    /* The kernels a step of n_tokens tokens runs its GEMMs on, the LM head on n_logits rows
     * (one line into buf, cap bytes): what the dispatcher picks from the batch shape, per
     * projection. */
    void (*route_desc)(const void *state, int32_t n_tokens, int32_t n_logits, char *buf, size_t cap);

    /* --- context level ------------------------------------------------------------------- */
    /* KV cache for n_seq x n_ctx tokens, activations for n_batch tokens, logits for n_seq rows
     * (grown when a step asks for more). Out of memory names the bytes needed (and, on a
     * device, the bytes free). */
    tinfer_status (*ctx_init)(void *model_state, int32_t n_seq, int32_t n_ctx, int32_t n_batch,
                              int32_t n_threads /* CPU threads, <= 0: the model's */,
                              bool graphs /* a GPU may replay decode steps as graphs */,
                              int32_t fused_decode /* a GPU may run a small model's decode
                                                    * step as one kernel: 1 whenever it can,
                                                    * < 0 where it measured faster, 0 never */,
                              int32_t micro_batches /* a GPU may run a decode step's sequences
                                                     * as up to this many concurrent chains:
                                                     * 0 where it measured faster, 1 never */,
                              void **ctx_state, tinfer_err *err);
    void (*ctx_free)(void *ctx_state);

    /* --- one forward ---------------------------------------------------------------------- */
    /* The step's plan (valid until the step's logits call). May grow the logits buffer. */
    tinfer_status (*begin)(void *cs, const tinfer_batch_plan *plan);
    /* X[i] = table[tok[i]] */
    tinfer_status (*embed)(void *cs, tinfer_buf out, const tinfer_weight *table);
    /* out[r] = rmsnorm(in[r]) * w for r < n, or for the plan's out_rows (gather = true: out
     * holds n_out rows, out_rows[j] -> row j) */
    tinfer_status (*rmsnorm)(void *cs, tinfer_buf out, tinfer_buf in, const tinfer_weight *w,
                             float eps, bool gather);
    /* Y[rows, N'] epi= X[rows, K] · W[N, K]^T (+ bias[N]); rows = n, or n_out when X is the
     * gathered XB of the LM head (rows_out = true) */
    tinfer_status (*matmul)(void *cs, tinfer_buf y, tinfer_buf x, const tinfer_weight *w,
                            const tinfer_weight *bias, int64_t N, int64_t K, tinfer_epi epi,
                            bool rows_out);
    /* QKV: rotate q and k heads (rotate-half RoPE at each token's position), then write the k
     * and v rows of every token into its sequence's cache of this layer at its position. */
    tinfer_status (*rope_kv)(void *cs, int32_t layer);
    /* ATT = causal GQA attention of every token's q (in QKV) against its sequence's cache of
     * this layer, rows 0..pos (its own row included: rope_kv wrote it). */
    tinfer_status (*attention)(void *cs, int32_t layer);
    /* The most likely token of each of the plan's out_rows (argmax, ties to the lowest id, NaN
     * never wins, a row of only NaN gives 0), [n_out] in host memory, and, when need_logits,
     * the rows' logits [n_out, V] (else *host_logits = NULL: a GPU then copies n_out ids
     * instead of n_out x V floats). Valid until the next begin. Waits for the step to finish. */
    tinfer_status (*logits)(void *cs, bool need_logits, const float **host_logits,
                            const int32_t **host_ids);
    /* Optional (NULL: the runtime steps one token at a time). Runs the step just recorded (one
     * token of each of n_out distinct sequences, every row asking for its argmax)
     * and then up to n_more more steps of the same sequences at the next positions, each fed
     * the previous step's argmax, without waiting in between: *n_steps (1 .. 1 + n_more) steps,
     * ids[k * n_out + j] (host memory, room for (1 + n_more) n_out) step k's pick of logits row
     * j. A backend may run fewer steps than asked (the CUDA backend: as many as its ids
     * buffer holds in one fused launch, 16 a call op by op); the runtime asks again.
     * TINFER_ERR_UNSUPPORTED, with nothing run, where it cannot; the runtime then calls logits and
     * goes on one step at a time. */
    tinfer_status (*greedy_steps)(void *cs, int32_t n_more, int32_t *ids, int32_t *n_steps);
    /* The message of the last failing call of this context ("" if none). */
    const char *(*last_error)(const void *cs);
    /* Launch counts (tinfer_context_stats' backend fields); NULL where there are none (CPU). */
    void (*stats)(const void *cs, tinfer_backend_stats *out);
    /* Tensor parallelism: one all-reduce of a token's residual row, timed alone (F32 and BF16,
     * microseconds; tinfer_context_stats); NULL, or 0s, where there is none to time. */
    void (*tp_timing)(void *cs, double *f32_us, double *bf16_us);
    /* *ptr = the host memory of activation buffer `buf` of this context (F32, [rows, width]
     * row-major, the widths above), for work on it between two ops: the tensor-parallel
     * backend's host all-reduce (models/backend_tp.c). NULL where the buffers are not host
     * memory (CUDA: its ranks will sum on the device, through NCCL). */
    tinfer_status (*buf_f32)(void *cs, tinfer_buf buf, float **ptr);
} tinfer_backend_ops;

/* The CPU backend: gemm/cpu + ops/ref, OpenMP inside each op; F32 activations and KV cache. */
extern const tinfer_backend_ops tinfer_backend_cpu;

/* The CUDA backend (models/backend_cuda.c), in builds with CUDA: BF16 weights and KV cache, the
 * project's own GEMM / GEMV kernels through gemm/bf16.h's dispatcher, and ops/cuda. */
extern const tinfer_backend_ops tinfer_backend_cuda;

#endif

/*
 * llama.h — the Llama family (Llama 2/3, SmolLM/SmolLM2, Mistral without sliding window,
 * Qwen2 with q/k/v biases): weights mapped from HF tensor names, and the batched forward pass
 * written against models/backend.h.
 *
 * Dimensions (from tinfer_llama_config): E = n_embd, L = n_layer, H = n_head, Hkv = n_head_kv,
 * D = head_dim, Q = H*D (q_dim), KV = Hkv*D (kv_dim), F = n_ff, V = n_vocab.
 *
 * Weights: Q|K|V and gate|up are fused at load time into one matrix each (one allocation each),
 * so a layer is four GEMMs. The fused matrices are BF16 when every source is BF16, else F32:
 * F32 and F16 sources are widened losslessly (the CPU backend computes in F32, and the tiny
 * F32 fixtures must match HF to fp32 rounding; a GPU backend converts to BF16 at upload).
 * Unfused tensors stay zero-copy in the safetensors mapping when BF16/F32 and aligned to their
 * element size; F16 (and misaligned) tensors are copied/widened to F32.
 * Q8_0 (config.json's quantization_config, base/q8_0.h): a projection matrix or lm_head stored
 * as I8 `X.weight` [N, K] + F16 `X.weight_scale` [N, K/32] is used in place (scales copied
 * only when misaligned) as a TINFER_DTYPE_Q8_0 weight; fused matrices stack the parts' rows and
 * their scales the same way (Q8_0 when every part is, else F32 with the Q8_0 parts
 * dequantized). Embedding and norms must not be I8. Errors name the tensor: I8 without the
 * config key, K % 32 != 0, a missing, mis-shaped or non-F16 scale tensor, a non-finite scale.
 *
 * The weights' structs (tinfer_llama_weights, tinfer_llama_layer) are in models/backend.h: the
 * loader fills them with host memory, a GPU backend fills a second copy with device memory.
 * KV cache: owned by the backend's context ([n_seq][L][n_ctx][KV] for K and for V on both
 * backends: one (sequence, layer) is a contiguous [n_ctx, Hkv, D] block).
 */
#ifndef TINFER_MODELS_LLAMA_H
#define TINFER_MODELS_LLAMA_H

#include "base/error.h"
#include "models/backend.h"
#include "models/llama_config.h"

#include <stdbool.h>
#include <stdint.h>

/* Where the weights come from: the runtime passes its safetensors set through this (models/
 * does not know the file format). get finds `name`, checks that its shape equals
 * shape[0..n_dims) (TINFER_ERR_FORMAT naming the tensor, the file and both shapes; a missing
 * tensor too) and fills *out: the elements in host memory, only as aligned as the file made
 * them. has: whether `name` exists. */
typedef struct tinfer_tensor_ref {
    const void *data;
    tinfer_dtype dtype;
    int64_t n_elems;
} tinfer_tensor_ref;
typedef struct tinfer_tensor_source {
    const void *ctx;
    tinfer_status (*get)(const void *ctx, const char *name, int32_t n_dims, const int64_t *shape,
                         tinfer_tensor_ref *out, tinfer_err *err);
    bool (*has)(const void *ctx, const char *name);
} tinfer_tensor_source;

/* Maps and validates every tensor (each shape checked against cfg; errors name the tensor and
 * the expected and actual shape), fuses QKV and gate|up. On failure everything made is freed. */
tinfer_status tinfer_llama_load(const tinfer_llama_config *cfg, const tinfer_tensor_source *st,
                                tinfer_llama_weights *w, tinfer_err *err);
void tinfer_llama_free(tinfer_llama_weights *w);

/* Per-op wall time of the forward pass, a debug aid (tests/model/perf_model.c prints it). Off
 * unless `profile` is set on the scratch; host clock around each backend call, so it is only
 * meaningful for a synchronous backend (the CPU). */
typedef enum tinfer_llama_op {
    TINFER_LLAMA_OP_EMBED,
    TINFER_LLAMA_OP_NORM,    /* attention, FFN and final RMSNorm (with the LM-head row gather) */
    TINFER_LLAMA_OP_QKV,     /* fused QKV GEMM (+ bias) */
    TINFER_LLAMA_OP_ROPE_KV, /* RoPE on q and k + the K/V rows into the cache */
    TINFER_LLAMA_OP_ATTN,
    TINFER_LLAMA_OP_WO,      /* output projection GEMM (+ residual) */
    TINFER_LLAMA_OP_GATE_UP, /* fused gate|up GEMM + SwiGLU */
    TINFER_LLAMA_OP_DOWN,    /* down projection GEMM (+ residual) */
    TINFER_LLAMA_OP_LM_HEAD,
    TINFER_LLAMA_OP_COUNT
} tinfer_llama_op;

/* Host scratch of the forward pass (the batch plan), sized once from n_batch and n_seq: a step
 * never allocates. The activations live in the backend's context. */
typedef struct tinfer_llama_scratch {
    int32_t n_batch, n_seq;
    int32_t *inv;       /* [n_batch] sorted index of batch entry b */
    int32_t *tok;       /* [n_batch] token ids, sorted order */
    int32_t *pos;       /* [n_batch] positions, sorted order */
    int32_t *seq;       /* [n_batch] sequence ids, sorted order */
    int32_t *seq_start; /* [n_seq + 1] first sorted index of each sequence */
    int32_t *out_rows;  /* [n_batch] sorted indices of the rows that want logits */
    int32_t *iota;      /* [n_batch] 0, 1, 2, ...: every row of a greedy step wants its pick */
    tinfer_batch_plan plan; /* the step's plan: the backend holds it until its logits call */
    bool profile;       /* accumulate op_seconds / op_calls (host wall time per op) */
    double op_seconds[TINFER_LLAMA_OP_COUNT];
    int64_t op_calls[TINFER_LLAMA_OP_COUNT];
} tinfer_llama_scratch;

tinfer_status tinfer_llama_scratch_init(const tinfer_llama_config *cfg, int32_t n_batch,
                                        int32_t n_seq, tinfer_llama_scratch *s, tinfer_err *err);
void tinfer_llama_scratch_free(tinfer_llama_scratch *s);

/* One forward pass over a validated batch of n tokens (1 <= n <= n_batch): token[i] at
 * position pos[i] of sequence seq[i]; positions of each sequence are contiguous and ascending
 * in batch order and continue its cache. Writes K and V of every token into the backend's
 * cache and leaves, for the n_out batch indices out_rows[j] (ascending), the most likely token
 * ids[j] and, when need_logits, logits[j, :V] in host memory (the backend's buffers, valid
 * until its next step; *logits NULL otherwise). */
tinfer_status tinfer_llama_forward(const tinfer_backend_ops *be, void *cs,
                                   const tinfer_llama_config *cfg, const tinfer_llama_weights *w,
                                   tinfer_llama_scratch *s, int32_t n, const int32_t *token,
                                   const int32_t *pos, const int32_t *seq, const int32_t *out_rows,
                                   int32_t n_out, bool need_logits, const float **logits,
                                   const int32_t **ids, tinfer_err *err);

/* Greedy steps of n distinct sequences: token[i] at position pos[i] of sequence seq[i], then
 * each step's argmax of each sequence at its next position, up to 1 + n_more steps. The
 * backend's greedy_steps runs as many of them as it can at once (*n_steps, 1 .. 1 + n_more);
 * elsewhere the first step alone runs (*n_steps = 1). ids[k * n + i] (host memory, the
 * caller's, room for (1 + n_more) n) step k's pick of sequence i. The caller has checked the
 * batch and that every sequence has room for 1 + n_more tokens. */
tinfer_status tinfer_llama_forward_greedy(const tinfer_backend_ops *be, void *cs,
                                          const tinfer_llama_config *cfg,
                                          const tinfer_llama_weights *w, tinfer_llama_scratch *s,
                                          int32_t n, const int32_t *token, const int32_t *pos,
                                          const int32_t *seq, int32_t n_more, int32_t *ids,
                                          int32_t *n_steps, tinfer_err *err);

#endif

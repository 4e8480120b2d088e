/*
 * cuda_plan.h — the CUDA backend's memory plan: every byte it will hold on the device, computed
 * on the host before anything is allocated, so that "out of memory" is said at load / context
 * creation with the bytes needed and free (never at token 1), and so that the plan is testable
 * without a GPU (tests/model/test_cuda_plan.c).
 *
 * Weights (model level): every tensor the forward reads, converted to BF16 (norm weights and
 * biases included), each at a 256-byte aligned offset of one allocation; a tied LM head is the
 * embedding table, stored once.
 * Context: K and V caches BF16 [n_seq][n_layer][n_ctx][KV] each; activations for n_batch tokens
 * (x F32 [n, E]; xb, qkv, att, act BF16); logits F32 [n_logits, V] on the device and in pinned
 * host memory; the argmax of each logits row (int32 [n_batch]) and the split argmax's words
 * (uint64 [n_batch][2], zero between steps); the step's metadata (int32: tok, pos, seq,
 * out_rows [n_batch], attention tiles 3 x max_tiles, decode list [n_batch]); the
 * split-KV attention workspace; the split RMSNorm's sums of squares (gemm/bf16.h: two uint64
 * words a token for each of the 2 n_layer RMSNorms a step can split, [slot][n tokens][2]).
 */
#ifndef TINFER_MODELS_CUDA_PLAN_H
#define TINFER_MODELS_CUDA_PLAN_H

#include "models/llama_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TINFER_CUDA_ALIGN 256 /* every buffer starts on a 256-byte boundary (TMA, 16-B vectors) */

/* Greedy steps of several sequences the backend queues at once, op by op
 * (tinfer_cuda_greedy_steps): their picks fit the ids buffer. */
#define TINFER_CUDA_GREEDY_STEPS 16

/* Bytes of the weights on the device (BF16, aligned tensors). */
size_t tinfer_cuda_weight_bytes(const tinfer_llama_config *cfg, bool qkv_bias, bool o_bias);

/* Query tiles of the prefill attention a step of n_batch tokens over n_seq sequences can need:
 * ceil per sequence, so at most n_batch / tile + n_seq. */
int32_t tinfer_cuda_max_attn_tiles(int32_t n_batch, int32_t n_seq, int32_t tile);

typedef struct tinfer_cuda_ctx_plan {
    /* byte offsets into the one device allocation */
    size_t k, v, x, xb, qkv, att, act, nss, logits, ids, amx, meta, ws;
    size_t kv_bytes;     /* both caches */
    size_t act_bytes;    /* x, xb, qkv, att, act, nss */
    int32_t nss_slots;   /* split RMSNorms a step can hold (2 n_layer) */
    size_t logits_bytes; /* device logits (the pinned host copy is the same size again) */
    size_t meta_bytes;   /* the step's int32 metadata, uploaded in one copy */
    size_t ws_bytes;     /* split-KV attention workspace */
    size_t ids_count;    /* int32 argmax ids: n_batch, and the picks of the queued greedy steps
                          * of n_seq sequences, (TINFER_CUDA_GREEDY_STEPS + 1) n_seq */
    size_t total;        /* device bytes */
    /* the metadata block: int32 element offsets from `meta` */
    size_t m_tok, m_pos, m_seq, m_out, m_tiles, m_dec, m_count;
    int32_t max_tiles;
} tinfer_cuda_ctx_plan;

/* The plan of a context; n_logits rows of logits; ws_bytes from the attention op's own sizing
 * (tinfer_op_cuda_attention_ws_bytes). Returns false when a size overflows size_t. */
bool tinfer_cuda_ctx_plan_make(const tinfer_llama_config *cfg, int32_t n_seq, int32_t n_ctx,
                               int32_t n_batch, int32_t n_logits, int32_t attn_tile,
                               size_t ws_bytes, tinfer_cuda_ctx_plan *p);

#endif

/*
 * ops_cuda.h — the non-GEMM CUDA ops of the Llama forward (the GPU twins of ops/ref/ops_cpu.h).
 *
 * Layout on the GPU (fixed; the CUDA backend relies on it):
 *   x       residual stream, F32 [n, E], row stride E
 *   norm    rmsnorm output / GEMM input, BF16 [rows, E] (uint16_t bit patterns, round to nearest
 *           even exactly as base/dtype.h's tinfer_f32_to_bf16)
 *   qkv     the QKV GEMM output, BF16 [n, QKV], QKV = (n_head + 2 * n_head_kv) * head_dim:
 *           q at column 0, k at n_head * head_dim, v at (n_head + n_head_kv) * head_dim
 *   attn    attention output, BF16 [n, n_head * head_dim]
 *   logits  F32 [n_out, V] (row stride ld)
 *   KV      BF16, one K and one V buffer, each [n_seq][n_layer][n_ctx][n_head_kv * head_dim]
 *   batch   device int32 tok[n], pos[n], seq[n]: tokens sorted by sequence, each sequence's tokens
 *           contiguous with ascending positions.
 *
 * Every entry point: asynchronous on `stream` (never the default stream unless passed), allocates
 * nothing, never synchronises (except under the debug switch TINFER_CUDA_SYNC_DEBUG=1, see
 * gemm/cuda/cuda_check.h); preconditions are checked on the host (TINFER_ERR_INVALID_ARG with a
 * one-line message in err); a failed launch gives TINFER_ERR_CUDA. n = 0 (no rows) is a no-op.
 * Metadata that only the device sees (token ids, positions, sequence ids, row indices) cannot be
 * checked on the host: an out-of-range value never reads or writes out of bounds; the rows it
 * concerns get NaN outputs instead (said per op).
 * Algorithms, tolerances against ops/ref and what runs on tensor cores: ops/README.md.
 */
#ifndef TINFER_OPS_CUDA_H
#define TINFER_OPS_CUDA_H

#include "base/error.h"

#include <cuda_runtime.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[i, :] = float(table[tok[i], :]), i < n. table BF16 [n_vocab, E], out F32 [n, E].
 * tok[i] outside [0, n_vocab): row i of out is NaN. */
tinfer_status tinfer_op_cuda_embed(float *out, const uint16_t *table, const int32_t *tok, int32_t n,
                                   int32_t E, int32_t n_vocab, cudaStream_t stream,
                                   tinfer_err *err);
/* The same, and clear[0 .. n_clear) = 0 in the same launch (n_clear >= 0; nothing cleared when
 * n == 0): the CUDA backend zeroes a step's split-RMSNorm sums (gemm/bf16.h) there, so that
 * they cost no launch of their own. */
tinfer_status tinfer_op_cuda_embed_clear(float *out, const uint16_t *table, const int32_t *tok,
                                         int32_t n, int32_t E, int32_t n_vocab,
                                         unsigned long long *clear, int64_t n_clear,
                                         cudaStream_t stream, tinfer_err *err);

/* out[r, :] = bf16(x[src, :] * (1 / sqrt(mean(x[src, :]^2) + eps)) * w), r < n_out, with
 * src = rows[r] when rows != NULL (device int32 [n_out]: the LM head's gather of the rows that
 * want logits), else src = r. x F32 [n_x, E], w BF16 [E], out BF16 [n_out, E]; F32 math.
 * rows[r] outside [0, n_x): row r of out is NaN. out must not overlap x. */
tinfer_status tinfer_op_cuda_rmsnorm(uint16_t *out, const float *x, const uint16_t *w,
                                     const int32_t *rows, int32_t n_out, int32_t n_x, int32_t E,
                                     float eps, cudaStream_t stream, tinfer_err *err);

/* The KV cache and the attention geometry, shared by rope_kv and attention. */
typedef struct tinfer_op_cuda_kv {
    uint16_t *k;       /* BF16 [n_seq][n_layer][n_ctx][n_head_kv * head_dim] */
    uint16_t *v;       /* BF16, same shape */
    int32_t n_seq;     /* sequences the cache holds */
    int32_t n_layer;   /* layers */
    int32_t n_ctx;     /* positions per sequence */
    int32_t n_head;    /* query heads */
    int32_t n_head_kv; /* KV heads; n_head % n_head_kv == 0 */
    int32_t head_dim;  /* even (rope_kv); 64 or 128 (attention) */
} tinfer_op_cuda_kv;

/* For every token i < n: rotate-half RoPE (HF Llama, as ops/ref/rope.c) of the q heads in place in
 * qkv and of the k heads (rotated k written back into qkv too), angle pos[i] * inv_freq[j]
 * computed in F32 as the reference does and cos/sin evaluated in double, rounded to F32; then the
 * rotated k row and the v row are stored into kv->k / kv->v at [seq[i]][layer][pos[i]].
 * qkv BF16 [n, QKV] (row stride QKV), inv_freq device F32 [head_dim / 2] (the host computes it
 * once: 1 / theta^(2j / head_dim), or any scaled variant), pos/seq device int32 [n].
 * pos[i] outside [0, n_ctx) or seq[i] outside [0, n_seq): nothing is stored for token i and its q
 * row becomes NaN. */
tinfer_status tinfer_op_cuda_rope_kv(uint16_t *qkv, const tinfer_op_cuda_kv *kv, int32_t layer,
                                     const float *inv_freq, const int32_t *pos, const int32_t *seq,
                                     int32_t n, cudaStream_t stream, tinfer_err *err);

/* ---- attention: causal GQA, scale 1 / sqrt(head_dim); query token i sees cache rows 0..pos[i]
 * of its sequence seq[i] in layer `layer` (its own K/V already stored there by rope_kv). q is
 * read from qkv (BF16 [n, QKV]); out BF16 [n, n_head * head_dim]; only the rows of the queries
 * named (tiles or decode list) are written. Needs 16-byte aligned qkv, out, kv->k, kv->v. ---- */

/* Query tiles of the prefill kernel: at most this many queries of ONE sequence per tile. */
#define TINFER_OP_CUDA_ATTN_TILE 64

/* Host planning from the host copy of the batch metadata (seq/pos [n]): every sequence with one
 * token in the batch goes to the decode list (dec[*n_dec] = its token index); every other
 * sequence is cut into tiles of up to TINFER_OP_CUDA_ATTN_TILE consecutive tokens, each a triple
 * (first token index, count, seq) in tiles[3 * t]. *max_dec_len = max over the decode list of
 * pos + 1 (0 when empty): the decode launcher's split choice. Capacities: tiles_cap triples
 * (n / TINFER_OP_CUDA_ATTN_TILE + number of sequences suffices), dec_cap entries (n suffices).
 * TINFER_ERR_INVALID_ARG when a capacity is short or seq is not grouped by sequence. */
tinfer_status tinfer_op_cuda_attention_plan(const int32_t *seq, const int32_t *pos, int32_t n,
                                            int32_t *tiles, int32_t tiles_cap, int32_t *n_tiles,
                                            int32_t *dec, int32_t dec_cap, int32_t *n_dec,
                                            int32_t *max_dec_len, tinfer_err *err);

/* Prefill: flash-style tiled attention over the tile list (device int32 [3 * n_tiles], as the
 * plan gives it; a tile of count 1 is valid too). */
tinfer_status tinfer_op_cuda_attention_prefill(uint16_t *out, const uint16_t *qkv,
                                               const tinfer_op_cuda_kv *kv, int32_t layer,
                                               const int32_t *pos, const int32_t *tiles,
                                               int32_t n_tiles, cudaStream_t stream,
                                               tinfer_err *err);

/* Workspace bytes the decode launcher needs for up to max_queries queries split into up to
 * max_splits key ranges: max_queries * n_head * max_splits * (head_dim + 2) * 4 (an F32 partial
 * accumulator, max and sum per query, head and split). 0 when an argument is < 1. */
size_t tinfer_op_cuda_attention_ws_bytes(int32_t max_queries, int32_t max_splits, int32_t n_head,
                                         int32_t head_dim);

/* Decode: split-KV (flash-decoding) attention for the n_dec single queries dec[] (device int32
 * token indices, as the plan gives them). max_len (host) = max pos + 1 over them: the launcher
 * cuts 0..max_len into chunks of at least TINFER_OP_CUDA_DECODE_MIN_CHUNK rows so that the grid
 * fills the GPU, as many as the workspace holds (ws: F32, ws_bytes long, 16-byte aligned; NULL /
 * 0 allowed: then no split); one split writes the output directly, more go through the
 * workspace and a combine kernel. */
#define TINFER_OP_CUDA_DECODE_MIN_CHUNK 256
tinfer_status tinfer_op_cuda_attention_decode(uint16_t *out, const uint16_t *qkv,
                                              const tinfer_op_cuda_kv *kv, int32_t layer,
                                              const int32_t *pos, const int32_t *seq,
                                              const int32_t *dec, int32_t n_dec, int32_t max_len,
                                              float *ws, size_t ws_bytes, cudaStream_t stream,
                                              tinfer_err *err);

/* tinfer_op_cuda_rope_kv of the n_dec decode queries, then tinfer_op_cuda_attention_decode, in
 * one kernel (a decode step's RoPE + KV-cache write + attention; qkv holds the QKV GEMM's
 * unrotated output and is left unchanged): the same outputs and cache rows, bit for bit. */
tinfer_status tinfer_op_cuda_attention_decode_rope(uint16_t *out, const uint16_t *qkv,
                                                   const tinfer_op_cuda_kv *kv, int32_t layer,
                                                   const float *inv_freq, const int32_t *pos,
                                                   const int32_t *seq, const int32_t *dec,
                                                   int32_t n_dec, int32_t max_len, float *ws,
                                                   size_t ws_bytes, cudaStream_t stream,
                                                   tinfer_err *err);

/* Query heads a decode attention block takes: 1 or 4 forces it for every later launch, anything
 * else restores the rule (attention_decode.cu, DEC_HB). For tests and measurements; not
 * thread-safe. */
void tinfer_op_cuda_attention_decode_force_hb(int hb);

/* The key ranges tinfer_op_cuda_attention_decode cuts 0..max_len into for these arguments
 * (*chunk rows each, *n_split of them): host arithmetic on the current device's SM count. A
 * captured CUDA graph of the decode launch replays correctly while these stay the same. */
tinfer_status tinfer_op_cuda_attention_decode_split(const tinfer_op_cuda_kv *kv, int32_t n_dec,
                                                   int32_t max_len, const float *ws,
                                                   size_t ws_bytes, int32_t *chunk,
                                                   int32_t *n_split, tinfer_err *err);

/* ids[r] = argmax_j logits[r, j], j < V, r < n_out; logits F32 with row stride ld >= V.
 * Ties go to the lowest index (runtime/sampler.c's greedy rule, torch.argmax's first maximum);
 * NaN never wins; a row of only NaN gives 0 (as a row of only -inf does). */
tinfer_status tinfer_op_cuda_argmax(int32_t *ids, const float *logits, int32_t n_out, int32_t V,
                                    int64_t ld, cudaStream_t stream, tinfer_err *err);
/* The same, and vals[r] = the maximum itself (NaN for a row of only NaN): a tensor-parallel
 * rank's best logit of its vocabulary slice, compared across ranks on the host. vals NULL: as
 * tinfer_op_cuda_argmax. */
tinfer_status tinfer_op_cuda_argmax_val(int32_t *ids, float *vals, const float *logits,
                                        int32_t n_out, int32_t V, int64_t ld, cudaStream_t stream,
                                        tinfer_err *err);
/* tinfer_op_cuda_argmax with each row cut into chunks, a block each (about two blocks an SM in
 * all), where one block a row would read at one SM's bandwidth: n_out <= 65,535; ws device
 * [2 n_out] words, zero before the first call, left zero by each. */
tinfer_status tinfer_op_cuda_argmax_split(int32_t *ids, const float *logits, int32_t n_out,
                                          int32_t V, int64_t ld, unsigned long long *ws,
                                          cudaStream_t stream, tinfer_err *err);

/* The LM head and the argmax in one kernel, without the logits (ops/cuda/lm_argmax.cu):
 * ids[r] = argmax_j X[r] · W[j], j < V, r < n, by tinfer_op_cuda_argmax's rule; X BF16 [n, ldx]
 * (the normalised rows), W BF16 [V, ldw]; each dot product summed in F32 in another order than
 * the GEMM's, so a pick differs from argmax(GEMM) only between logits within that rounding.
 * n <= TINFER_OP_CUDA_LM_ARGMAX_MAX_N, E % 8 == 0, E <= TINFER_OP_CUDA_LM_ARGMAX_MAX_E (X is
 * staged whole in shared memory), ldx, ldw multiples of 8 and >= E, X and W 16-byte aligned;
 * ws device [2 n] words, zero before the first call, left zero by each. */
#define TINFER_OP_CUDA_LM_ARGMAX_MAX_N 64
#define TINFER_OP_CUDA_LM_ARGMAX_MAX_E 1024
bool tinfer_op_cuda_lm_argmax_takes(int32_t n, int32_t E);
tinfer_status tinfer_op_cuda_lm_argmax(int32_t *ids, const uint16_t *X, int64_t ldx,
                                       const uint16_t *W, int64_t ldw, int32_t n, int32_t V,
                                       int32_t E, unsigned long long *ws, cudaStream_t stream,
                                       tinfer_err *err);

/* Between two queued greedy decode steps of n sequences (every token of the step a logits row,
 * the step's metadata on the device; models/backend_cuda_step.c): ids[0 .. n) are the step's
 * picks of logits rows 0 .. n - 1. Saves them, save[j] = ids[j], and when feed, makes them the
 * next step's tokens at the next positions: tok[out_rows[j]] = ids[j], pos[r] += 1 for r < n. */
tinfer_status tinfer_op_cuda_greedy_feed(int32_t *tok, int32_t *pos, const int32_t *out_rows,
                                         const int32_t *ids, int32_t *save, int32_t n, bool feed,
                                         cudaStream_t stream, tinfer_err *err);

/* out[i] = bf16(in[i]), i < count (round to nearest even, NaN stays NaN). */
tinfer_status tinfer_op_cuda_cast_f32_bf16(uint16_t *out, const float *in, int64_t count,
                                           cudaStream_t stream, tinfer_err *err);

/* ---- the fused decode step (decode_step.cu): a decode step of a small model (every token the
 * only one of its sequence, at most TINFER_OP_CUDA_STEP_MAX_B of them, keys at most
 * TINFER_OP_CUDA_STEP_MAX_KEYS) in one persistent cooperative kernel whose phases hand each
 * other flagged values instead of meeting at grid barriers: embed, per layer RMSNorm + QKV,
 * RoPE + KV write + attention, O + residual, RMSNorm + gate/up + SwiGLU, down + residual, then
 * the final RMSNorm and the LM head for out_rows. Same BF16 rounding points as the op-by-op
 * path. ---- */
#define TINFER_OP_CUDA_STEP_MAX_B 8
#define TINFER_OP_CUDA_STEP_MAX_KEYS 1024
#define TINFER_OP_CUDA_STEP_MAX_SMEM (200 * 1024)

/* One layer's device weights, BF16 (bqkv, bo: NULL when the model has none). */
typedef struct tinfer_op_cuda_step_layer {
    const uint16_t *attn_norm; /* [E] */
    const uint16_t *wqkv;      /* [Q + 2 KV, E] */
    const uint16_t *bqkv;      /* [Q + 2 KV] */
    const uint16_t *wo;        /* [E, Q] */
    const uint16_t *bo;        /* [E] */
    const uint16_t *ffn_norm;  /* [E] */
    const uint16_t *wgu;       /* [2 F, E] gate rows, then up rows */
    const uint16_t *wdown;     /* [E, F] */
} tinfer_op_cuda_step_layer;

typedef struct tinfer_op_cuda_step_model {
    int32_t n_layer, n_embd, n_ff, n_vocab;
    float eps;                               /* RMSNorm epsilon */
    const tinfer_op_cuda_step_layer *layers; /* device [n_layer] */
    const uint16_t *tok_embd;                /* [V, E] */
    const uint16_t *out_norm;                /* [E] */
    const uint16_t *lm_head;                 /* [V, E] */
    const float *inv_freq;                   /* device F32 [head_dim / 2] (rope_kv's) */
} tinfer_op_cuda_step_model;

/* The step's device buffers (tinfer_op_cuda_decode_step): every one zeroed once when allocated
 * and then left to the kernel, which keeps their state from launch to launch. */
typedef struct tinfer_op_cuda_step_bufs {
    float *logits;  /* F32 [n_out, V] */
    uint32_t *bar;  /* 2 words: the count of blocks done, the next launch's first epoch */
    uint64_t *ll;   /* tinfer_op_cuda_step_ll_words(m, kv, n_max) flagged words */
    int32_t n_max;  /* the most tokens a step may carry (<= TINFER_OP_CUDA_STEP_MAX_B) */
    /* Greedy decoding inside the step, or both NULL: ids [n_out] receives each logits row's
     * argmax (tinfer_op_cuda_argmax's rule: ties to the lowest id, NaN never wins, a row of
     * only NaN gives 0), gathered through amax [n_max] (all zero before the first launch; each
     * launch leaves them zero again). */
    uint64_t *amax;
    int32_t *ids;
} tinfer_op_cuda_step_bufs;

/* 64-bit words the step's buffers hold for up to n_max tokens (the values its phases hand each
 * other: x twice, qkv, the attention output, the SwiGLU output; and a step's greedy picks, the
 * next step's tokens). */
size_t tinfer_op_cuda_step_ll_words(const tinfer_op_cuda_step_model *m, const tinfer_op_cuda_kv *kv,
                                    int32_t n_max);

/* Whether a step of n decode tokens with keys up to max_len can run fused on this model with a
 * grid of `grid` blocks (the launcher's: one per SM): its shared-memory plan (two ring stages of
 * the largest weight slice a block gets, at least, beside the staged activations) fits. */
bool tinfer_op_cuda_step_ok(const tinfer_op_cuda_step_model *m, const tinfer_op_cuda_kv *kv,
                            int32_t n, int32_t max_len, int32_t grid);
/* The step: tok/pos/seq device int32 [n] (one token per sequence), out_rows device [n_out]
 * (indices into the n tokens whose logits are wanted); logits written for those rows.
 * trace: NULL, or device uint64 [TINFER_OP_CUDA_STEP_PHASES(n_layer) * grid * 4] for a probe
 * (tests/ops_cuda/probe_decode_step.cu): for phase k (0 the embedding, 1 + 5 l + 0..4 layer l's
 * QKV, attention, O, gate/up, down, then the LM head) and block b, trace[(k * grid + b) * 4 + i]
 * the time (ns, %globaltimer) at which the block's weights for the phase had landed (i = 0),
 * its inputs were staged (1), its outputs written (2), the phase's bookkeeping done (3);
 * grid = the device's SM count. */
#define TINFER_OP_CUDA_STEP_PHASES(n_layer) (2 + 5 * (n_layer))
tinfer_status tinfer_op_cuda_decode_step(const tinfer_op_cuda_step_model *m,
                                         const tinfer_op_cuda_kv *kv,
                                         const tinfer_op_cuda_step_bufs *b, const int32_t *tok,
                                         const int32_t *pos, const int32_t *seq,
                                         const int32_t *out_rows, int32_t n, int32_t n_out,
                                         int32_t max_len, uint64_t *trace, cudaStream_t stream,
                                         tinfer_err *err);
/* n_steps greedy decode steps in one launch: step 0 is tinfer_op_cuda_decode_step's, and step k
 * > 0 feeds each token the argmax of its logits row from step k - 1 (output row r's pick is
 * token out_rows[r]'s next token), token j at position pos[j] + k.
 * The picks go to ids[k n_out + r] (ids: [n_steps n_out]); the logits rows hold the last
 * step's. Needs amax and ids, n_out = n, no trace; max_len covers the last step's keys. Between
 * steps the blocks meet once (the picks need every block's share of the LM head), where
 * separate launches pay a cooperative launch and the weight ring's first loads each. */
#define TINFER_OP_CUDA_STEP_MAX_STEPS 1024
tinfer_status tinfer_op_cuda_decode_steps(const tinfer_op_cuda_step_model *m,
                                          const tinfer_op_cuda_kv *kv,
                                          const tinfer_op_cuda_step_bufs *b, const int32_t *tok,
                                          const int32_t *pos, const int32_t *seq,
                                          const int32_t *out_rows, int32_t n, int32_t n_out,
                                          int32_t n_steps, int32_t max_len, uint64_t *trace,
                                          cudaStream_t stream, tinfer_err *err);

#ifdef __cplusplus
}
#endif
#endif

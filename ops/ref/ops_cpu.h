/*
 * ops_cpu.h — the CPU ops (every non-GEMM op of the Llama forward). F32 activations.
 * Each op is also the reference its CUDA twin is tested against. Shapes in comments, row-major.
 */
#ifndef TINFER_OPS_CPU_H
#define TINFER_OPS_CPU_H

#include "base/dtype.h"

#include <stdint.h>

/* out[n, dim] = table[ids[i], :] widened to F32. table [n_vocab, dim] in table_dtype. */
void tinfer_op_embed(float *out, const void *table, tinfer_dtype table_dtype, const int32_t *ids,
                     int64_t n, int64_t dim);

/* out[n, dim] = x / sqrt(mean(x^2) + eps) * w[dim]. out may equal x. w in w_dtype. */
void tinfer_op_rmsnorm(float *out, const float *x, const void *w, tinfer_dtype w_dtype, int64_t n,
                       int64_t dim, float eps);

/* Rotate-half RoPE (HF Llama) in place on x[n, n_heads, head_dim] with row stride `stride`
 * (elements between tokens); token i at position pos[i]. Pair (j, j + head_dim/2) rotated by
 * angle pos * theta^(-2j/head_dim), j < head_dim/2. */
void tinfer_op_rope(float *x, int64_t n, int64_t stride, int32_t n_heads, int32_t head_dim,
                    const int32_t *pos, float theta);

/* Causal GQA attention of n query tokens of one sequence against its KV cache.
 * q      [n, n_head, head_dim], row stride q_stride
 * k, v   cache of the sequence [n_kv, n_head_kv, head_dim] (contiguous), n_kv >= every pos+1
 * pos    [n]: query i sees cache rows 0..pos[i]
 * out    [n, n_head, head_dim], row stride out_stride
 * scale = 1/sqrt(head_dim). Softmax in F32 with max subtraction. */
void tinfer_op_attention(float *out, int64_t out_stride, const float *q, int64_t q_stride,
                         const float *k, const float *v, int64_t n, const int32_t *pos,
                         int32_t n_head, int32_t n_head_kv, int32_t head_dim);

/* out[n, n_ff] = silu(gu[:, 0:n_ff]) * gu[:, n_ff:2n_ff], gu [n, 2*n_ff] (fused gate|up). */
void tinfer_op_swiglu(float *out, const float *gu, int64_t n, int64_t n_ff);

/* y[i] += x[i], i < n. */
void tinfer_op_add(float *y, const float *x, int64_t n);

/* In-place softmax of x[n]. */
void tinfer_op_softmax(float *x, int64_t n);

/* Which SIMD variant the ops take on this machine: "avx2" or "scalar". */
const char *tinfer_ops_cpu_isa(void);

/* Test/debug switch: force the ops' SIMD variant ("scalar", "avx2"; NULL or "" = automatic),
 * process-wide, not thread-safe (set before ops run). Returns 0, or -1 when the name is unknown
 * or the CPU lacks the instructions (the choice is unchanged). */
int tinfer_ops_cpu_force_isa(const char *isa);

#endif

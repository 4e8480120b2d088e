/*
 * backend.h — the small compute interface the model forward passes are written against.
 *
 * A backend is a table of function pointers, one per op of the Llama forward, plus an opaque
 * state pointer. models/llama.c calls only these, so a second backend (CUDA: device pointers,
 * a stream in `state`) is one more table, chosen once at context init; the forward pass itself
 * does not change. Every op returns tinfer_status so a device backend can report a failed launch;
 * the CPU ops cannot fail and always return TINFER_OK.
 *
 * Buffers: every float pointer is backend memory (host memory for the CPU backend). Weights
 * (`const void *` + dtype) are whatever the loader produced: F32 or BF16 for matrices, F32 or
 * BF16 for norm and embedding tables. Shapes are given in the comments, row-major, GEMM
 * convention Y[M,N] = X[M,K] · W[N,K]^T (M tokens, N output features, K input features).
 */
#ifndef TINFER_MODELS_BACKEND_H
#define TINFER_MODELS_BACKEND_H

#include "base/dtype.h"
#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tinfer_backend_ops {
    const char *name; /* "cpu", "cuda" */

    /* Y[M,N] (+)= X[M,K] · W[N,K]^T (+ bias[N]); ldx/ldw/ldy in elements. */
    tinfer_status (*matmul)(void *state, int64_t M, int64_t N, int64_t K, const float *X,
                            int64_t ldx, const void *W, tinfer_dtype w_dtype, int64_t ldw,
                            const float *bias, float *Y, int64_t ldy, bool accumulate);
    /* out[n, dim] = table[ids[i], :] */
    tinfer_status (*embed)(void *state, float *out, const void *table, tinfer_dtype dtype,
                           const int32_t *ids, int64_t n, int64_t dim);
    /* out[n, dim] = rmsnorm(x[n, dim]) * w[dim]; out may equal x */
    tinfer_status (*rmsnorm)(void *state, float *out, const float *x, const void *w,
                             tinfer_dtype w_dtype, int64_t n, int64_t dim, float eps);
    /* in place on x[n, n_heads, head_dim] with row stride `stride`; token i at pos[i] */
    tinfer_status (*rope)(void *state, float *x, int64_t n, int64_t stride, int32_t n_heads,
                          int32_t head_dim, const int32_t *pos, float theta);
    /* causal GQA attention of n queries of ONE sequence against its cache k, v
     * [n_kv, n_head_kv*head_dim]; query i sees cache rows 0..pos[i] */
    tinfer_status (*attention)(void *state, float *out, int64_t out_stride, const float *q,
                               int64_t q_stride, const float *k, const float *v, int64_t n,
                               const int32_t *pos, int32_t n_head, int32_t n_head_kv,
                               int32_t head_dim);
    /* out[n, n_ff] = silu(gu[:, :n_ff]) * gu[:, n_ff:] */
    tinfer_status (*swiglu)(void *state, float *out, const float *gu, int64_t n, int64_t n_ff);
    /* y[i] += x[i] */
    tinfer_status (*add)(void *state, float *y, const float *x, int64_t n);
    /* dst[i*dst_stride .. +width] = src[i*src_stride .. +width], i < rows (KV-cache writes,
     * row gathers) */
    tinfer_status (*copy_rows)(void *state, float *dst, int64_t dst_stride, const float *src,
                               int64_t src_stride, int64_t rows, int64_t width);
} tinfer_backend_ops;

/* The CPU backend: gemm/cpu + ops/ref, OpenMP inside each op. state is unused (NULL). */
extern const tinfer_backend_ops tinfer_backend_cpu;

#endif

/*
 * sgemm.h — the FP32 GEMM ladder (gemm/prefill/NN_*.cu) and its dispatch entry point.
 *
 *   C[M,N] = alpha * A[M,K] · op(B) + beta * C[M,N]          all row-major, FP32, FP32 accumulate
 *   trans_b = 0 ("NN", the classic SGEMM articles): B is [K,N], element (k,n) at B[k*ldb + n]
 *   trans_b = 1 ("NT", the runtime's Y = X·W^T):   B is [N,K], element (k,n) at B[n*ldb + k]
 *
 * Any M, N, K >= 1; ragged edges are handled inside the kernels (no padding copies). When
 * beta == 0, C is not read (it may hold NaN). Rungs that use 16-byte loads check pointer and
 * leading-dimension alignment on the host and fall back to a scalar path (named per rung) when
 * it does not hold, so misaligned inputs are slower, never wrong. Every call is asynchronous on
 * `stream` (never the legacy default stream implicitly; pass a created stream or
 * cudaStreamPerThread) and never synchronises. Errors: TINFER_ERR_INVALID_ARG for bad shapes,
 * leading dimensions, NULL pointers or an unknown rung; TINFER_ERR_CUDA for a launch failure.
 */
#ifndef TINFER_SGEMM_H
#define TINFER_SGEMM_H

#include "base/error.h"

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tinfer_sgemm_rung {
    TINFER_SGEMM_NAIVE = 1,       /* one thread per output, threadIdx.x walks rows */
    TINFER_SGEMM_COALESCED = 2,   /* threadIdx.x walks columns: coalesced B/C accesses */
    TINFER_SGEMM_SMEM = 3,        /* 32x32 shared-memory tiles */
    TINFER_SGEMM_REG1D = 4,       /* TM = 8 outputs per thread along M */
    TINFER_SGEMM_REG2D = 5,       /* 8x8 outer products per thread */
    TINFER_SGEMM_VEC = 6,         /* 128-bit loads/stores, A transposed in shared memory */
    TINFER_SGEMM_BANKFREE = 7,    /* rung 6 + padded shared-memory rows */
    TINFER_SGEMM_AUTOTUNED = 8,   /* rung 7 family, tile sizes from the tuning cache */
    TINFER_SGEMM_WARPTILE = 9,    /* block -> warp -> thread tiles */
    TINFER_SGEMM_PIPELINED = 10,  /* cp.async multi-stage + register double buffer + swizzle */
    TINFER_SGEMM_SPLITK = 11,     /* rung 10 with K split over blockIdx.z, atomic epilogue */
    TINFER_SGEMM_BANKFREE_XOR = 12, /* rung 7 with an XOR-swizzled layout instead of padding */
    TINFER_SGEMM_LEAN = 13,       /* rung 10 with the copies' address arithmetic hoisted */
    TINFER_SGEMM_N_RUNGS = 14     /* one past the last rung */
} tinfer_sgemm_rung;

/* Short name ("10_pipelined") and one-line technique of a rung; "?" for an unknown one. */
const char *tinfer_sgemm_rung_name(int rung);
const char *tinfer_sgemm_rung_technique(int rung);

/* Runs one rung. */
tinfer_status tinfer_sgemm(int rung, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                           const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                           float *C, int64_t ldc, cudaStream_t stream, tinfer_err *err);

/* The dispatch entry point: the tuned winner for this GPU and shape class when a tuning table
 * is loaded (tinfer_sgemm_tune_load), else the built-in choice (gemm/prefill/sgemm.cu). */
tinfer_status tinfer_sgemm_auto(int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                const float *A, int64_t lda, const float *B, int64_t ldb,
                                float beta, float *C, int64_t ldc, cudaStream_t stream,
                                tinfer_err *err);

/* Which rung (and for rungs 8/10/11 which tile configuration and split count) tinfer_sgemm_auto
 * would run for this call; for logs and the benchmark. desc gets e.g. "10 cfg 128x128x8 s3". */
int tinfer_sgemm_auto_choice(int trans_b, int64_t M, int64_t N, int64_t K, const float *A,
                             int64_t lda, const float *B, int64_t ldb, const float *C, int64_t ldc,
                             char *desc, size_t desc_len);

#ifdef __cplusplus
}
#endif
#endif

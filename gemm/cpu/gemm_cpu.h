/*
 * gemm_cpu.h — the CPU GEMM: Y[M,N] = X[M,K] · W[N,K]^T (+ bias[N]) (+ Y when accumulate).
 *
 * X, Y: F32 row-major with leading dimensions ldx, ldy (elements). W: row-major [N, K] with
 * leading dimension ldw, F32 or BF16 (widened on the fly; weights stay BF16 in memory).
 * Blocked for cache (panels of W reused across rows of X), SIMD chosen at run time (AVX-512 /
 * AVX2+FMA / portable C), OpenMP across the N dimension. Any M, N, K >= 1; no alignment needed.
 * M == 1 (decode) takes a GEMV path that streams W once.
 */
#ifndef TINFER_GEMM_CPU_H
#define TINFER_GEMM_CPU_H

#include "base/dtype.h"

#include <stdbool.h>
#include <stdint.h>

void tinfer_gemm_cpu(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx, const void *W,
                     tinfer_dtype w_dtype, int64_t ldw, const float *bias, float *Y, int64_t ldy,
                     bool accumulate);

/* The reference: plain loops, double accumulation, no blocking. The spec of tinfer_gemm_cpu. */
void tinfer_gemm_ref_f64(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
                         const void *W, tinfer_dtype w_dtype, int64_t ldw, const float *bias,
                         double *Y, int64_t ldy);

/* Which SIMD path tinfer_gemm_cpu took on this machine: "avx512", "avx2", "scalar". */
const char *tinfer_gemm_cpu_isa(void);

/* Test/debug switch: force the SIMD path ("scalar", "avx2", "avx512"; NULL or "" = automatic)
 * for every later call, process-wide and not thread-safe (set it before any GEMM runs). Returns 0,
 * or -1 when the name is unknown or this CPU lacks the instructions (the choice is unchanged). */
int tinfer_gemm_cpu_force_isa(const char *isa);

#endif

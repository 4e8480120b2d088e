/*
 * gemm_cpu.h — the CPU GEMM: Y[M,N] = X[M,K] · W[N,K]^T (+ bias[N]) (+ Y when accumulate).
 *
 * X, Y: F32 row-major with leading dimensions ldx, ldy (elements). W: row-major [N, K] with
 * leading dimension ldw, F32, BF16 or F16 (widened on the fly; weights stay BF16 in memory), or
 * Q8_0 (base/q8_0.h: W the int8 values, w_scale the F16 scales, element (n, k)'s scale at
 * w_scale[(n * ldw + k) / 32]; K and ldw must be multiples of 32, else nothing is computed).
 * w_scale is ignored for the other dtypes. Q8_0 at M == 1 quantizes x per 32-block to int8
 * (gemm/cpu/gemm_cpu_q8.c states the rounding and its error bound); M >= 2 computes on the
 * dequantized weights in F32.
 * Blocked for cache (panels of W reused across rows of X), SIMD chosen at run time (AMX /
 * AVX-512 / AVX2+FMA / portable C; on AMX, M >= 2 computes on X and W rounded to BF16 with F32
 * accumulation, gemm/cpu/gemm_cpu_amx.c states the bound), OpenMP across the N dimension.
 * Any M, N, K >= 1; no alignment needed. M == 1 (decode) takes a GEMV path that streams W once.
 */
#ifndef TINFER_GEMM_CPU_H
#define TINFER_GEMM_CPU_H

#include "base/dtype.h"

#include <stdbool.h>
#include <stdint.h>

void tinfer_gemm_cpu(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx, const void *W,
                     tinfer_dtype w_dtype, const void *w_scale, int64_t ldw, const float *bias,
                     float *Y, int64_t ldy, bool accumulate);

/* The reference: plain loops, double accumulation, no blocking, on the weights as stored (Q8_0
 * dequantized exactly, x never quantized). The spec of tinfer_gemm_cpu. */
void tinfer_gemm_ref_f64(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
                         const void *W, tinfer_dtype w_dtype, const void *w_scale, int64_t ldw,
                         const float *bias, double *Y, int64_t ldy);

/* The environment variable TINFER_GEMM_FORCE=f32 (read at the first call) keeps the automatic
 * choice off the AMX path, so every product is computed in F32 (the model tests against F32
 * references set it).
 * Which SIMD path tinfer_gemm_cpu took on this machine: "amx", "avx512vnni", "avx512", "avx2",
 * "scalar" (the two AVX-512 ones differ only in the Q8_0 GEMV; "amx" is "avx512vnni" with the
 * AMX tile GEMM for M >= 2). */
const char *tinfer_gemm_cpu_isa(void);

/* The kernel family an M-row call takes: the path's name, or for M == 1 the name of its GEMV's
 * path ("avx512vnni" on the AMX path, whose M == 1 calls stream W through the VNNI GEMV). */
const char *tinfer_gemm_cpu_kernel(int64_t M);

/* Test/debug switch: force the SIMD path ("scalar", "avx2", "avx512", "avx512vnni", "amx"; NULL
 * or "" = automatic) for every later call, process-wide and not thread-safe (set it before any GEMM
 * runs). Returns 0, or -1 when the name is unknown or this CPU lacks the instructions (the
 * choice is unchanged). */
int tinfer_gemm_cpu_force_isa(const char *isa);

#endif

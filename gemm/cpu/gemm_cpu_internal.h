/*
 * gemm_cpu_internal.h — the pieces one SIMD path of the CPU GEMM provides, and the shared driver
 * contract (gemm_cpu.c). Internal to gemm/cpu; nothing outside this folder includes it.
 *
 * Blocking (the BLIS/GotoBLAS layout, simplified to the sizes of one transformer layer):
 *   - W is packed per (N-panel of `nr` columns, K-block of `kc`) into a buffer P[kc][nr] of F32,
 *     rows past N zero-filled, so the BF16 -> F32 widening happens once per panel and the panel
 *     (kc * nr * 4 bytes, L1-resident) is reused by every row-block of X.
 *   - The micro-kernel computes an mr x nr tile of Y from mr rows of X (read in place, one
 *     broadcast per element) and P, with all mr*nr/lanes accumulators in registers.
 *   - M == 1 takes a GEMV that streams W row by row once (decode is bandwidth bound).
 * Every function here handles ragged edges itself (mr_valid <= mr, nr_valid <= nr, any K).
 * Q8_0 weights (base/q8_0.h; K and ldw multiples of 32, scales S with the scale of element i =
 * n * ldw + k at S[i / 32]): the packs dequantize them to F32 (exact: an 8-bit integer times an
 * 11-bit F16 mantissa fits F32), so the micro-kernels are unchanged; M == 1 takes gemv_q8 on
 * activations quantized once per call by quant_x (gemm_cpu_q8.c).
 */
#ifndef TINFER_GEMM_CPU_INTERNAL_H
#define TINFER_GEMM_CPU_INTERNAL_H

#include "base/dtype.h"

#include <stdbool.h>
#include <stdint.h>

/* Largest nr * kc over every path: the per-thread pack buffer is sized by it. */
#define TINFER_GEMM_PACK_MAX (32 * 256)

typedef struct tinfer_gemm_path {
    const char *name;
    int mr, nr, kc; /* register tile rows / columns, K-block length */
    /* P[k * nr + j] = W[n0 + j, k0 + k] widened, j < nr_valid; 0 for nr_valid <= j < nr.
     * S: Q8_0's scales (NULL for other dtypes); k0 and kc multiples of 32 for Q8_0. */
    void (*pack)(float *P, int nr, const void *W, const uint16_t *S, tinfer_dtype dt, int64_t ldw,
                 int64_t n0, int nr_valid, int64_t k0, int kc);
    /* Y[r, j] = sum_k X[r, k] P[k, j] (+ Y[r, j] when load_y) (+ bias[j] when bias != NULL),
     * for r < mr_valid, j < nr_valid. X points at row 0, column k0 of the block. */
    void (*micro)(int mr_valid, int nr_valid, int kc, const float *X, int64_t ldx, const float *P,
                  float *Y, int64_t ldy, const float *bias, bool load_y);
    /* y[n] = dot(x, W[n, :K]) (+ bias[n]) (+ y[n] when accumulate), n0 <= n < n1. */
    void (*gemv)(int64_t n0, int64_t n1, int64_t K, const float *x, const void *W, tinfer_dtype dt,
                 int64_t ldw, const float *bias, float *y, bool accumulate);
    /* x (K floats, K % 32 == 0) -> xq[K] int8 and xd[K / 32] F32 scales (gemm_cpu_q8.c). */
    void (*quant_x)(int64_t K, const float *x, int8_t *xq, float *xd);
    /* Q8_0 GEMV: y[n] = sum_b S[n, b] xd[b] dot(W[n, block b], xq[block b]) (+ bias[n])
     * (+ y[n] when accumulate), n0 <= n < n1; W rows of K int8 (ldw = K), S rows of K / 32. */
    void (*gemv_q8)(int64_t n0, int64_t n1, int64_t K, const int8_t *xq, const float *xd,
                    const int8_t *W, const uint16_t *S, const float *bias, float *y,
                    bool accumulate);
    /* Optional: the whole product for M >= 2 on nthr threads (the AMX path, gemm_cpu_amx.c);
     * false when it declined (no memory for its buffers, a dtype it lacks) and nothing was
     * written, so the packed path above runs instead. NULL on the other paths. */
    bool (*gemm)(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx, const void *W,
                 const uint16_t *S, tinfer_dtype dt, int64_t ldw, const float *bias, float *Y,
                 int64_t ldy, bool accumulate, int nthr);
    /* The name of the M == 1 kernels when they are another path's (NULL: `name`). */
    const char *gemv_name;
} tinfer_gemm_path;

extern const tinfer_gemm_path tinfer_gemm_path_scalar;
extern const tinfer_gemm_path tinfer_gemm_path_avx2;
extern const tinfer_gemm_path tinfer_gemm_path_avx512;
extern const tinfer_gemm_path tinfer_gemm_path_avx512vnni;
extern const tinfer_gemm_path tinfer_gemm_path_amx; /* AVX-512 VNNI + the AMX GEMM */

/* The AMX GEMM (gemm_cpu_amx.c; the tinfer_gemm_path.gemm contract) and whether this CPU and
 * kernel allow it: CPUID AMX-TILE + AMX-BF16 + AVX512-BF16 and the Linux permission for the
 * tile data, asked once per process (thread-safe, never prints). */
bool tinfer_gemm_amx(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx, const void *W,
                     const uint16_t *S, tinfer_dtype dt, int64_t ldw, const float *bias, float *Y,
                     int64_t ldy, bool accumulate, int nthr);
bool tinfer_gemm_amx_usable(void);

/* Portable pack used by the scalar path and for dtypes/tails the SIMD packs leave to it. */
void tinfer_gemm_pack_generic(float *P, int nr, const void *W, const uint16_t *S, tinfer_dtype dt,
                              int64_t ldw, int64_t n0, int nr_valid, int64_t k0, int kc);

/* AVX2 pack for any nr multiple of 8 (also used by the AVX-512 path: AVX-512 CPUs have AVX2). */
void tinfer_gemm_pack_avx2(float *P, int nr, const void *W, const uint16_t *S, tinfer_dtype dt,
                           int64_t ldw, int64_t n0, int nr_valid, int64_t k0, int kc);

/* The Q8_0 pieces of each path (gemm_cpu_q8.c: portable; gemm_cpu_q8_avx2.c: AVX2 + F16C;
 * gemm_cpu_q8_avx512.c: AVX-512 activations and the VNNI GEMV). */
void tinfer_gemm_quant_x_scalar(int64_t K, const float *x, int8_t *xq, float *xd);
void tinfer_gemm_gemv_q8_scalar(int64_t n0, int64_t n1, int64_t K, const int8_t *xq,
                                const float *xd, const int8_t *W, const uint16_t *S,
                                const float *bias, float *y, bool accumulate);
void tinfer_gemm_quant_x_avx2(int64_t K, const float *x, int8_t *xq, float *xd);
void tinfer_gemm_gemv_q8_avx2(int64_t n0, int64_t n1, int64_t K, const int8_t *xq,
                              const float *xd, const int8_t *W, const uint16_t *S,
                              const float *bias, float *y, bool accumulate);
void tinfer_gemm_quant_x_avx512(int64_t K, const float *x, int8_t *xq, float *xd);
void tinfer_gemm_gemv_q8_vnni(int64_t n0, int64_t n1, int64_t K, const int8_t *xq,
                              const float *xd, const int8_t *W, const uint16_t *S,
                              const float *bias, float *y, bool accumulate);

/* Element i of W (for Q8_0: i = n * ldw + k with ldw % 32 == 0, scale S[i / 32]). */
static inline float tinfer_gemm_w_at(const void *W, const uint16_t *S, tinfer_dtype dt,
                                     int64_t i) {
    if (dt == TINFER_DTYPE_BF16) return tinfer_bf16_to_f32(((const uint16_t *)W)[i]);
    if (dt == TINFER_DTYPE_F16) return tinfer_f16_to_f32(((const uint16_t *)W)[i]);
    if (dt == TINFER_DTYPE_Q8_0)
        return (float)((const int8_t *)W)[i] * tinfer_f16_to_f32(S[i >> 5]);
    return ((const float *)W)[i];
}

#endif

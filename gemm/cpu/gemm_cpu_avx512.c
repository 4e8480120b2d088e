/*
 * gemm_cpu_avx512.c — the AVX-512 path of the CPU GEMM (see gemm_cpu_internal.h for the layout).
 *
 * Micro-kernel: 12 x 32 register tile (24 zmm accumulators + 2 for the packed W row + 1 broadcast
 * = 27 of the 32 zmm registers): per k, 2 aligned loads of P, 12 broadcasts, 24 FMAs.
 * kc = 256: the packed panel is 256*32*4 = 32 KiB, L1d-sized on AVX-512 cores (48 KiB on Intel
 * Sapphire Rapids / Zen 4 has 32 KiB, where it streams from L2 — acceptable, the X broadcasts
 * dominate). Packing reuses the AVX2 8x8 transpose (every AVX-512 CPU has AVX2).
 * GEMV: 4 rows of W at a time, 16-wide, two accumulators per row; tails with masked loads
 * (avx512bw + avx512vl for the 16-bit masked 256-bit load). Every 32-column step prefetches the
 * same columns of the next 4-row group, as the AVX2 GEMV does: the hardware prefetcher alone
 * does not follow 4 interleaved short row streams (LM head 16.8 -> 46.1 GB/s, gemm/cpu/README.md).
 * Compiled with target attributes only: callers reach it after __builtin_cpu_supports.
 */
#include "gemm/cpu/gemm_cpu_internal.h"

#include <immintrin.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))
#define TGT_INLINE static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx2,fma")))

enum { MR = 12, NR = 32, KC = 256 };

TGT_INLINE __m512 load16_w(const void *W, tinfer_dtype dt, int64_t i) {
    if (dt == TINFER_DTYPE_BF16) {
        __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)W + i)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
    }
    return _mm512_loadu_ps((const float *)W + i);
}

/* Masked load of the first `cnt` (< 16) elements; the rest read as 0 and are never touched. */
TGT_INLINE __m512 load16_w_tail(const void *W, tinfer_dtype dt, int64_t i, __mmask16 m) {
    if (dt == TINFER_DTYPE_BF16) {
        __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)W + i);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    return _mm512_maskz_loadu_ps(m, (const float *)W + i);
}

/* ---------------- micro-kernel ---------------- */

TGT_INLINE void store_row(float *y, __m512 c0, __m512 c1, int nr_valid, const float *bias,
                          bool load_y) {
    __mmask16 m0 = nr_valid >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr_valid) - 1u);
    __mmask16 m1 = nr_valid >= 32   ? (__mmask16)0xFFFF
                   : nr_valid <= 16 ? (__mmask16)0
                                    : (__mmask16)((1u << (nr_valid - 16)) - 1u);
    if (load_y) {
        c0 = _mm512_add_ps(c0, _mm512_maskz_loadu_ps(m0, y));
        c1 = _mm512_add_ps(c1, _mm512_maskz_loadu_ps(m1, y + 16));
    }
    if (bias) {
        c0 = _mm512_add_ps(c0, _mm512_maskz_loadu_ps(m0, bias));
        c1 = _mm512_add_ps(c1, _mm512_maskz_loadu_ps(m1, bias + 16));
    }
    _mm512_mask_storeu_ps(y, m0, c0);
    _mm512_mask_storeu_ps(y + 16, m1, c1);
}

TGT_INLINE void micro_body(const int mr, int nr_valid, int kc, const float *X, int64_t ldx,
                           const float *P, float *Y, int64_t ldy, const float *bias, bool load_y) {
    __m512 c[MR][2];
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) c[r][0] = c[r][1] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m512 b0 = _mm512_load_ps(P + k * NR), b1 = _mm512_load_ps(P + k * NR + 16);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            if (r < mr) {
                __m512 a = _mm512_set1_ps(X[r * ldx + k]);
                c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
                c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
            }
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++)
        if (r < mr) store_row(Y + r * ldy, c[r][0], c[r][1], nr_valid, bias, load_y);
}

static TGT void micro_avx512(int mr_valid, int nr_valid, int kc, const float *X, int64_t ldx,
                             const float *P, float *Y, int64_t ldy, const float *bias,
                             bool load_y) {
    switch (mr_valid) {
    case 12: micro_body(12, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 11: micro_body(11, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 10: micro_body(10, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 9: micro_body(9, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 8: micro_body(8, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 7: micro_body(7, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 6: micro_body(6, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 5: micro_body(5, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 4: micro_body(4, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 3: micro_body(3, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 2: micro_body(2, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    default: micro_body(1, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    }
}

/* ---------------- GEMV (M == 1) ---------------- */

TGT_INLINE void gemv_body(int64_t n0, int64_t n1, int64_t K, const float *x, const void *W,
                          tinfer_dtype dt, int64_t ldw, const float *bias, float *y,
                          bool accumulate) {
    int64_t kt = K & ~(int64_t)15;
    __mmask16 mt = (__mmask16)((1u << (K & 15)) - 1u);
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) {
        int64_t b0 = n * ldw, b1 = b0 + ldw, b2 = b1 + ldw, b3 = b2 + ldw;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        __m512 e0 = a0, e1 = a0, e2 = a0, e3 = a0;
        int64_t k = 0;
        for (; k + 32 <= K; k += 32) {
            __m512 x0 = _mm512_loadu_ps(x + k), x1 = _mm512_loadu_ps(x + k + 16);
            if (dt == TINFER_DTYPE_BF16) { /* the next 4-row group, same columns (see header) */
                const uint16_t *w = (const uint16_t *)W + 4 * ldw + k;
                _mm_prefetch((const char *)(w + b0), _MM_HINT_T0);
                _mm_prefetch((const char *)(w + b1), _MM_HINT_T0);
                _mm_prefetch((const char *)(w + b2), _MM_HINT_T0);
                _mm_prefetch((const char *)(w + b3), _MM_HINT_T0);
            } else {
                const float *w = (const float *)W + 4 * ldw + k;
                _mm_prefetch((const char *)(w + b0), _MM_HINT_T0);
                _mm_prefetch((const char *)(w + b1), _MM_HINT_T0);
                _mm_prefetch((const char *)(w + b2), _MM_HINT_T0);
                _mm_prefetch((const char *)(w + b3), _MM_HINT_T0);
                _mm_prefetch((const char *)(w + b0 + 16), _MM_HINT_T0);
                _mm_prefetch((const char *)(w + b1 + 16), _MM_HINT_T0);
                _mm_prefetch((const char *)(w + b2 + 16), _MM_HINT_T0);
                _mm_prefetch((const char *)(w + b3 + 16), _MM_HINT_T0);
            }
            a0 = _mm512_fmadd_ps(x0, load16_w(W, dt, b0 + k), a0);
            a1 = _mm512_fmadd_ps(x0, load16_w(W, dt, b1 + k), a1);
            a2 = _mm512_fmadd_ps(x0, load16_w(W, dt, b2 + k), a2);
            a3 = _mm512_fmadd_ps(x0, load16_w(W, dt, b3 + k), a3);
            e0 = _mm512_fmadd_ps(x1, load16_w(W, dt, b0 + k + 16), e0);
            e1 = _mm512_fmadd_ps(x1, load16_w(W, dt, b1 + k + 16), e1);
            e2 = _mm512_fmadd_ps(x1, load16_w(W, dt, b2 + k + 16), e2);
            e3 = _mm512_fmadd_ps(x1, load16_w(W, dt, b3 + k + 16), e3);
        }
        if (k < kt) {
            __m512 x0 = _mm512_loadu_ps(x + k);
            a0 = _mm512_fmadd_ps(x0, load16_w(W, dt, b0 + k), a0);
            a1 = _mm512_fmadd_ps(x0, load16_w(W, dt, b1 + k), a1);
            a2 = _mm512_fmadd_ps(x0, load16_w(W, dt, b2 + k), a2);
            a3 = _mm512_fmadd_ps(x0, load16_w(W, dt, b3 + k), a3);
            k += 16;
        }
        if (mt) {
            __m512 x0 = _mm512_maskz_loadu_ps(mt, x + k);
            e0 = _mm512_fmadd_ps(x0, load16_w_tail(W, dt, b0 + k, mt), e0);
            e1 = _mm512_fmadd_ps(x0, load16_w_tail(W, dt, b1 + k, mt), e1);
            e2 = _mm512_fmadd_ps(x0, load16_w_tail(W, dt, b2 + k, mt), e2);
            e3 = _mm512_fmadd_ps(x0, load16_w_tail(W, dt, b3 + k, mt), e3);
        }
        float s[4] = {_mm512_reduce_add_ps(_mm512_add_ps(a0, e0)),
                      _mm512_reduce_add_ps(_mm512_add_ps(a1, e1)),
                      _mm512_reduce_add_ps(_mm512_add_ps(a2, e2)),
                      _mm512_reduce_add_ps(_mm512_add_ps(a3, e3))};
        for (int i = 0; i < 4; i++) {
            float v = s[i];
            if (accumulate) v += y[n + i];
            if (bias) v += bias[n + i];
            y[n + i] = v;
        }
    }
    for (; n < n1; n++) {
        int64_t b = n * ldw, k = 0;
        __m512 a = _mm512_setzero_ps();
        for (; k < kt; k += 16) a = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), load16_w(W, dt, b + k), a);
        if (mt) a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mt, x + k), load16_w_tail(W, dt, b + k, mt), a);
        float v = _mm512_reduce_add_ps(a);
        if (accumulate) v += y[n];
        if (bias) v += bias[n];
        y[n] = v;
    }
}

static TGT void gemv_avx512(int64_t n0, int64_t n1, int64_t K, const float *x, const void *W,
                            tinfer_dtype dt, int64_t ldw, const float *bias, float *y,
                            bool accumulate) {
    if (dt == TINFER_DTYPE_BF16)
        gemv_body(n0, n1, K, x, W, TINFER_DTYPE_BF16, ldw, bias, y, accumulate);
    else if (dt == TINFER_DTYPE_F32)
        gemv_body(n0, n1, K, x, W, TINFER_DTYPE_F32, ldw, bias, y, accumulate);
    else
        tinfer_gemm_path_scalar.gemv(n0, n1, K, x, W, dt, ldw, bias, y, accumulate);
}

/* Without VNNI the Q8_0 GEMV is the AVX2 one (maddubs); with it, vpdpbusd on 64 bytes a step. */
const tinfer_gemm_path tinfer_gemm_path_avx512 = {
    .name = "avx512", .mr = MR, .nr = NR, .kc = KC, .pack = tinfer_gemm_pack_avx2,
    .micro = micro_avx512, .gemv = gemv_avx512, .quant_x = tinfer_gemm_quant_x_avx512,
    .gemv_q8 = tinfer_gemm_gemv_q8_avx2,
};

const tinfer_gemm_path tinfer_gemm_path_avx512vnni = {
    .name = "avx512vnni", .mr = MR, .nr = NR, .kc = KC, .pack = tinfer_gemm_pack_avx2,
    .micro = micro_avx512, .gemv = gemv_avx512, .quant_x = tinfer_gemm_quant_x_avx512,
    .gemv_q8 = tinfer_gemm_gemv_q8_vnni,
};

/* The AMX path: M >= 2 on AMX tiles (gemm_cpu_amx.c), M == 1 on the VNNI path's GEMVs; the
 * register-tile kernels above remain its fallback when the AMX GEMM declines a call. */
const tinfer_gemm_path tinfer_gemm_path_amx = {
    .name = "amx", .mr = MR, .nr = NR, .kc = KC, .pack = tinfer_gemm_pack_avx2,
    .micro = micro_avx512, .gemv = gemv_avx512, .quant_x = tinfer_gemm_quant_x_avx512,
    .gemv_q8 = tinfer_gemm_gemv_q8_vnni, .gemm = tinfer_gemm_amx, .gemv_name = "avx512vnni",
};

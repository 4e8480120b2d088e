/*
 * gemm_cpu_q8_avx512.c — the Q8_0 pieces on AVX-512: the activations' quantization (avx512f+bw,
 * the rounding and its bound in gemm_cpu_q8.c) and the GEMV on AVX-512 VNNI (vpdpbusd).
 *
 * vpdpbusd multiplies unsigned by signed bytes and adds each 4 products into an int32 lane. The
 * weights are made unsigned: w ^ 0x80 is w + 128 in [0, 255] (exact for every int8, -128 too),
 * so dpbusd(c, w + 128, x) = c + sum w x + 128 sum x; starting from c = -128 sum x (one dpbusd
 * of the constant 128 with x, shared by the 4 rows) leaves sum w x exactly. A 64-byte step is
 * two blocks: lanes 0-7 hold block 2j's partial sums, lanes 8-15 block 2j+1's; converted to F32
 * they are multiplied into the row's accumulator by [d_w d_x of block 2j (x8), of 2j+1 (x8)],
 * built by one vpermps from the 8 blocks' scales converted and multiplied once per 8 blocks.
 * An odd last block is a masked 32-byte load (the upper half reads as 0 and adds 0) with a
 * broadcast scale. 4 rows at a time share the x loads; each step prefetches the next 4-row
 * group's same 64 bytes per row and each group its successor's scales, as the BF16 GEMV does
 * (gemm_cpu_avx512.c). Compiled with target attributes only: callers reach it after
 * __builtin_cpu_supports.
 */
#include "gemm/cpu/gemm_cpu_internal.h"

#include <float.h>
#include <immintrin.h>
#include <string.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define TGT_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define TGT_VNNI_INLINE                                                                            \
    static inline __attribute__((always_inline,                                                    \
                                 target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

TGT void tinfer_gemm_quant_x_avx512(int64_t K, const float *x, int8_t *xq, float *xd) {
    for (int64_t b = 0; b < K / 32; b++) {
        const float *p = x + 32 * b;
        __m512 v0 = _mm512_loadu_ps(p), v1 = _mm512_loadu_ps(p + 16);
        __mmask16 nan = _mm512_cmp_ps_mask(v0, v0, _CMP_UNORD_Q) |
                        _mm512_cmp_ps_mask(v1, v1, _CMP_UNORD_Q);
        float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
        bool bad = nan != 0 || !(amax <= FLT_MAX);
        if (bad || amax == 0.0f) {
            _mm256_storeu_si256((__m256i *)(xq + 32 * b), _mm256_setzero_si256());
            xd[b] = bad ? __builtin_nanf("") : 0.0f;
            continue;
        }
        __m512 id = _mm512_set1_ps(127.0f / amax);
        xd[b] = amax / 127.0f;
        __m128i q0 = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, id)));
        __m128i q1 = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, id)));
        _mm_storeu_si128((__m128i *)(xq + 32 * b), q0);
        _mm_storeu_si128((__m128i *)(xq + 32 * b + 16), q1);
    }
}

/* R (1..4) rows n.. n+R-1 of the GEMV */
TGT_VNNI_INLINE void rows_vnni(const int R, int64_t n, int64_t K, const int8_t *xq,
                               const float *xd, const int8_t *W, const uint16_t *S,
                               const float *bias, float *y, bool accumulate) {
    const int64_t nb = K / 32;
    const __m512i c128 = _mm512_set1_epi8((char)0x80), zero = _mm512_setzero_si512();
    const __m512i idx01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i two = _mm512_set1_epi32(2);
    const int8_t *w[4];
    const uint16_t *s[4];
    __m512 acc[4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        w[r] = W + (n + r) * K;
        s[r] = S + (n + r) * nb;
        acc[r] = _mm512_setzero_ps();
    }
    if (R == 4) /* the next group's scales: 4 rows of nb F16, contiguous */
        for (int64_t i = 0; i < 4 * nb; i += 32)
            _mm_prefetch((const char *)(s[0] + 4 * nb + i), _MM_HINT_T0);
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8) {
        __m256 sx = _mm256_loadu_ps(xd + b);
        __m512 sc[4];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            sc[r] = _mm512_castps256_ps512(_mm256_mul_ps(
                _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s[r] + b))), sx));
        __m512i idx = idx01;
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            const int64_t k = 32 * b + 64 * j;
            __m512i xv = _mm512_loadu_si512(xq + k);
            __m512i nc = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, c128, xv));
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                if (R == 4) _mm_prefetch((const char *)(w[r] + 4 * K + k), _MM_HINT_T0);
                __m512i wu = _mm512_xor_si512(_mm512_loadu_si512(w[r] + k), c128);
                __m512 d = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(nc, wu, xv));
                acc[r] = _mm512_fmadd_ps(d, _mm512_permutexvar_ps(idx, sc[r]), acc[r]);
            }
            idx = _mm512_add_epi32(idx, two);
        }
    }
    for (; b + 2 <= nb; b += 2) {
        const int64_t k = 32 * b;
        __m512i xv = _mm512_loadu_si512(xq + k);
        __m512i nc = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, c128, xv));
        __m128 sx = _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(xd + b)));
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            if (R == 4) _mm_prefetch((const char *)(w[r] + 4 * K + k), _MM_HINT_T0);
            int32_t s2;
            memcpy(&s2, s[r] + b, 4);
            __m128 sc = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(s2)), sx);
            __m512i wu = _mm512_xor_si512(_mm512_loadu_si512(w[r] + k), c128);
            __m512 d = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(nc, wu, xv));
            acc[r] = _mm512_fmadd_ps(d, _mm512_permutexvar_ps(idx01, _mm512_castps128_ps512(sc)),
                                     acc[r]);
        }
    }
    if (b < nb) { /* the odd last block: 32 bytes, the upper half zero */
        const int64_t k = 32 * b;
        const __mmask64 lo = 0xffffffffull;
        __m512i xv = _mm512_maskz_loadu_epi8(lo, xq + k);
        __m512i nc = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, c128, xv));
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512i wu = _mm512_xor_si512(_mm512_maskz_loadu_epi8(lo, w[r] + k), c128);
            __m512 d = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(nc, wu, xv));
            acc[r] = _mm512_fmadd_ps(d, _mm512_set1_ps(_cvtsh_ss(s[r][b]) * xd[b]), acc[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        float v = _mm512_reduce_add_ps(acc[r]);
        if (accumulate) v += y[n + r];
        if (bias) v += bias[n + r];
        y[n + r] = v;
    }
}

TGT_VNNI void tinfer_gemm_gemv_q8_vnni(int64_t n0, int64_t n1, int64_t K, const int8_t *xq,
                                       const float *xd, const int8_t *W, const uint16_t *S,
                                       const float *bias, float *y, bool accumulate) {
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) rows_vnni(4, n, K, xq, xd, W, S, bias, y, accumulate);
    for (; n < n1; n++) rows_vnni(1, n, K, xq, xd, W, S, bias, y, accumulate);
}

/*
 * gemm_cpu_q8_avx2.c — the Q8_0 GEMV with AVX2 (+ F16C for the scales): activations quantized
 * per 32-block (the rounding and its bound: gemm_cpu_q8.c), int8 block dots with maddubs / madd.
 *
 * One block of one row is one 32-byte load. maddubs multiplies unsigned by signed bytes, so the
 * signs move onto x: |w| (as unsigned: |-128| = 128 too, so every int8 weight is exact) times
 * sign(x, w) (x in [-127, 127] negates safely), pairs summed to int16 (at most 2 * 128 * 127 =
 * 32512: no saturation), then madd with ones to 8 int32 lanes, converted to F32 and multiplied
 * into the row's F32 accumulator by d_w * d_x. Scales: 8 blocks' F16 scales per row converted
 * at once and multiplied by the 8 activation scales; each block's is broadcast with one permute.
 * 4 rows at a time share the x loads; each block step prefetches the next 4-row group's same
 * columns (as the BF16 GEMV does, gemm_cpu_avx2.c) and each group its successor's scales.
 * Compiled with target attributes only: callers reach it after __builtin_cpu_supports.
 */
#include "gemm/cpu/gemm_cpu_internal.h"

#include <float.h>
#include <immintrin.h>

#define TGT __attribute__((target("avx2,fma,f16c")))
#define TGT_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

TGT_INLINE float hmax8(__m256 a) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

TGT_INLINE float hsum8(__m256 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TGT void tinfer_gemm_quant_x_avx2(int64_t K, const float *x, int8_t *xq, float *xd) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t b = 0; b < K / 32; b++) {
        const float *p = x + 32 * b;
        __m256 v0 = _mm256_loadu_ps(p), v1 = _mm256_loadu_ps(p + 8);
        __m256 v2 = _mm256_loadu_ps(p + 16), v3 = _mm256_loadu_ps(p + 24);
        __m256 nan = _mm256_or_ps(
            _mm256_or_ps(_mm256_cmp_ps(v0, v0, _CMP_UNORD_Q), _mm256_cmp_ps(v1, v1, _CMP_UNORD_Q)),
            _mm256_or_ps(_mm256_cmp_ps(v2, v2, _CMP_UNORD_Q), _mm256_cmp_ps(v3, v3, _CMP_UNORD_Q)));
        __m256 a = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                                 _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
        float amax = hmax8(a);
        bool bad = _mm256_movemask_ps(nan) != 0 || !(amax <= FLT_MAX);
        if (bad || amax == 0.0f) {
            _mm256_storeu_si256((__m256i *)(xq + 32 * b), _mm256_setzero_si256());
            xd[b] = bad ? __builtin_nanf("") : 0.0f;
            continue;
        }
        __m256 id = _mm256_set1_ps(127.0f / amax);
        xd[b] = amax / 127.0f;
        __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, id));
        __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, id));
        __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, id));
        __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, id));
        /* packs work per 128-bit lane: the dwords come out as i0 lo, i1 lo, i2 lo, i3 lo | i0 hi,
         * ... and the permute puts them back in order */
        __m256i q = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
        _mm256_storeu_si256((__m256i *)(xq + 32 * b), _mm256_permutevar8x32_epi32(q, order));
    }
}

/* int32 dot of one block of w and x in 8 lanes, as F32 */
TGT_INLINE __m256 block_dot(__m256i w, __m256i x, __m256i ones) {
    __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
}

/* R (1..4) rows n.. n+R-1 of the GEMV */
TGT_INLINE void rows_q8(const int R, int64_t n, int64_t K, const int8_t *xq, const float *xd,
                        const int8_t *W, const uint16_t *S, const float *bias, float *y,
                        bool accumulate) {
    const int64_t nb = K / 32;
    const __m256i ones = _mm256_set1_epi16(1);
    const int8_t *w[4];
    const uint16_t *s[4];
    __m256 acc[4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        w[r] = W + (n + r) * K;
        s[r] = S + (n + r) * nb;
        acc[r] = _mm256_setzero_ps();
    }
    if (R == 4) /* the next group's scales: 4 rows of nb F16, contiguous */
        for (int64_t i = 0; i < 4 * nb; i += 32)
            _mm_prefetch((const char *)(s[0] + 4 * nb + i), _MM_HINT_T0);
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8) {
        __m256 sx = _mm256_loadu_ps(xd + b), sc[4];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            sc[r] = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s[r] + b))), sx);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            const int64_t k = 32 * (b + j);
            __m256i xv = _mm256_loadu_si256((const __m256i *)(xq + k));
            __m256i sel = _mm256_set1_epi32(j);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                if (R == 4 && (j & 1) == 0) /* one 64-byte line per row per two blocks */
                    _mm_prefetch((const char *)(w[r] + 4 * K + k), _MM_HINT_T0);
                __m256 d = block_dot(_mm256_loadu_si256((const __m256i *)(w[r] + k)), xv, ones);
                acc[r] = _mm256_fmadd_ps(d, _mm256_permutevar8x32_ps(sc[r], sel), acc[r]);
            }
        }
    }
    for (; b < nb; b++) {
        const int64_t k = 32 * b;
        __m256i xv = _mm256_loadu_si256((const __m256i *)(xq + k));
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            if (R == 4) _mm_prefetch((const char *)(w[r] + 4 * K + k), _MM_HINT_T0);
            __m256 d = block_dot(_mm256_loadu_si256((const __m256i *)(w[r] + k)), xv, ones);
            acc[r] = _mm256_fmadd_ps(d, _mm256_set1_ps(_cvtsh_ss(s[r][b]) * xd[b]), acc[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        float v = hsum8(acc[r]);
        if (accumulate) v += y[n + r];
        if (bias) v += bias[n + r];
        y[n + r] = v;
    }
}

TGT void tinfer_gemm_gemv_q8_avx2(int64_t n0, int64_t n1, int64_t K, const int8_t *xq,
                                  const float *xd, const int8_t *W, const uint16_t *S,
                                  const float *bias, float *y, bool accumulate) {
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) rows_q8(4, n, K, xq, xd, W, S, bias, y, accumulate);
    for (; n < n1; n++) rows_q8(1, n, K, xq, xd, W, S, bias, y, accumulate);
}

/*
 * ops_simd.h — internal to ops/ref: the run-time SIMD choice of the CPU ops and an AVX2 exp.
 *
 * Every op has a portable C loop (the reference semantics, written out in each file) and, where
 * it matters for speed (attention, swiglu, softmax), an AVX2+FMA variant reached only when
 * tinfer_ops_cpu_isa_avx2() says so; those are compiled with target attributes, never -mavx2.
 *
 * exp256: exp(x) = 2^n * e^r with n = round(x / ln 2), r = x - n ln 2 (ln 2 split in a high part
 * exact in float and a low correction, Cody-Waite), |r| <= ln2/2, e^r by its Taylor series to
 * degree 7 (truncation error (ln2/2)^8 / 8! < 6e-9 relative, under float's 6e-8 rounding).
 * x is clamped to [-87, 88] so 2^n stays a normal float: exp(-87) = 1.6e-38 stands in for 0
 * (its contribution to a softmax sum >= 1 is below float resolution), exp(88) = 1.65e38 for
 * overflow.
 */
#ifndef TINFER_OPS_SIMD_H
#define TINFER_OPS_SIMD_H

#include <stdbool.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TINFER_OPS_X86 1
#define TINFER_OPS_AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma")))
#define TINFER_OPS_AVX2 __attribute__((target("avx2,fma")))

TINFER_OPS_AVX2_INLINE __m256 tinfer_exp256(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* ln2 = 0.693359375 (exact in 8 bits) - 2.12194440e-4 (Cody-Waite split). */
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

TINFER_OPS_AVX2_INLINE float tinfer_hsum256(__m256 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TINFER_OPS_AVX2_INLINE float tinfer_hmax256(__m256 a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#endif

/* True when the AVX2 variants run (CPU support, unless forced off by tinfer_ops_cpu_force_isa). */
bool tinfer_ops_cpu_isa_avx2(void);

#endif

/*
 * gemm_cpu_avx2.c — the AVX2+FMA path of the CPU GEMM (see gemm_cpu_internal.h for the layout).
 *
 * Micro-kernel: 6 x 16 register tile (12 ymm accumulators + 2 for the packed W row + 1 broadcast
 * of X = 15 of the 16 ymm registers), the classic Haswell/Zen shape: per k, 2 aligned loads of P,
 * 6 broadcasts of X, 12 FMAs. kc = 256 keeps the packed panel (256*16*4 = 16 KiB) in a 32 KiB L1d.
 * Pack: BF16 widening is a zero-extend to 32 bits and a 16-bit shift (BF16 is the top half of an
 * F32); 8 rows x 8 k are transposed in registers into P[k][j].
 * GEMV: 4 rows of W at a time, two 8-wide accumulators per row (8 independent FMA chains hide
 * the FMA latency), x shared by the 4 rows; memory bound by design. BF16 rows (K <= 8192) take
 * gemv_bf16_pairs: even/odd halves of each u32 lane widened with one shift / one AND against a
 * reordered x, see there. It also prefetches the next 4-row group: on the Zen 1 dev VM that
 * took one thread from 5.1 to 8.4 GB/s on the LM head (perf_gemm_cpu, OMP_NUM_THREADS=1; two
 * rows groups ahead gave 7.5-8.7, no better), the hardware prefetcher alone not keeping up.
 * Q8_0 weights: the pack dequantizes them (load8_q8); the Q8_0 GEMV is in gemm_cpu_q8_avx2.c.
 * Compiled with target("avx2,fma") only: callers reach it after __builtin_cpu_supports.
 */
#include "gemm/cpu/gemm_cpu_internal.h"

#include <immintrin.h>

#define TGT __attribute__((target("avx2,fma")))
#define TGT_INLINE static inline __attribute__((always_inline, target("avx2,fma")))

enum { MR = 6, NR = 16, KC = 256 };

TGT_INLINE __m256 load8_bf16(const uint16_t *p) {
    __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
}

TGT_INLINE __m256 load8_w(const void *W, tinfer_dtype dt, int64_t i) {
    if (dt == TINFER_DTYPE_BF16) return load8_bf16((const uint16_t *)W + i);
    return _mm256_loadu_ps((const float *)W + i);
}

/* 8 Q8_0 elements i..i+7 (one block: i % 8 == 0) dequantized: int8 -> F32 times the scale. */
TGT_INLINE __m256 load8_q8(const void *W, const uint16_t *S, int64_t i) {
    __m128i q = _mm_loadl_epi64((const __m128i *)((const int8_t *)W + i));
    __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
    return _mm256_mul_ps(v, _mm256_set1_ps(tinfer_f16_to_f32(S[i >> 5])));
}

TGT_INLINE __m256 load8_any(const void *W, const uint16_t *S, tinfer_dtype dt, int64_t i) {
    return dt == TINFER_DTYPE_Q8_0 ? load8_q8(W, S, i) : load8_w(W, dt, i);
}

/* ---------------- pack ---------------- */

TGT_INLINE void transpose8_store(__m256 r0, __m256 r1, __m256 r2, __m256 r3, __m256 r4,
                                 __m256 r5, __m256 r6, __m256 r7, float *dst, int nr) {
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_store_ps(dst + 0 * nr, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_store_ps(dst + 1 * nr, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_store_ps(dst + 2 * nr, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_store_ps(dst + 3 * nr, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_store_ps(dst + 4 * nr, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_store_ps(dst + 5 * nr, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_store_ps(dst + 6 * nr, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_store_ps(dst + 7 * nr, _mm256_permute2f128_ps(s3, s7, 0x31));
}

TGT_INLINE void pack_body(float *P, int nr, const void *W, const uint16_t *S, tinfer_dtype dt,
                          int64_t ldw, int64_t n0, int nr_valid, int64_t k0, int kc) {
    int j0 = 0;
    for (; j0 + 8 <= nr_valid; j0 += 8) {
        int64_t b = (n0 + j0) * ldw + k0;
        int k = 0;
        for (; k + 8 <= kc; k += 8)
            transpose8_store(
                load8_any(W, S, dt, b + k), load8_any(W, S, dt, b + ldw + k),
                load8_any(W, S, dt, b + 2 * ldw + k), load8_any(W, S, dt, b + 3 * ldw + k),
                load8_any(W, S, dt, b + 4 * ldw + k), load8_any(W, S, dt, b + 5 * ldw + k),
                load8_any(W, S, dt, b + 6 * ldw + k), load8_any(W, S, dt, b + 7 * ldw + k),
                P + (int64_t)k * nr + j0, nr);
        for (; k < kc; k++)
            for (int j = 0; j < 8; j++)
                P[(int64_t)k * nr + j0 + j] = tinfer_gemm_w_at(W, S, dt, b + j * ldw + k);
    }
    if (j0 < nr) /* ragged last columns (and the zero fill past N) */
        for (int k = 0; k < kc; k++)
            for (int j = j0; j < nr; j++)
                P[(int64_t)k * nr + j] =
                    j < nr_valid ? tinfer_gemm_w_at(W, S, dt, (n0 + j) * ldw + k0 + k) : 0.0f;
}

TGT void tinfer_gemm_pack_avx2(float *P, int nr, const void *W, const uint16_t *S, tinfer_dtype dt,
                               int64_t ldw, int64_t n0, int nr_valid, int64_t k0, int kc) {
    if (dt == TINFER_DTYPE_BF16)
        pack_body(P, nr, W, NULL, TINFER_DTYPE_BF16, ldw, n0, nr_valid, k0, kc);
    else if (dt == TINFER_DTYPE_F32)
        pack_body(P, nr, W, NULL, TINFER_DTYPE_F32, ldw, n0, nr_valid, k0, kc);
    else if (dt == TINFER_DTYPE_Q8_0)
        pack_body(P, nr, W, S, TINFER_DTYPE_Q8_0, ldw, n0, nr_valid, k0, kc);
    else
        tinfer_gemm_pack_generic(P, nr, W, S, dt, ldw, n0, nr_valid, k0, kc);
}

/* ---------------- micro-kernel ---------------- */

TGT_INLINE void store_row(float *y, __m256 c0, __m256 c1, int nr_valid, const float *bias,
                          bool load_y) {
    if (nr_valid == NR) {
        if (load_y) {
            c0 = _mm256_add_ps(c0, _mm256_loadu_ps(y));
            c1 = _mm256_add_ps(c1, _mm256_loadu_ps(y + 8));
        }
        if (bias) {
            c0 = _mm256_add_ps(c0, _mm256_loadu_ps(bias));
            c1 = _mm256_add_ps(c1, _mm256_loadu_ps(bias + 8));
        }
        _mm256_storeu_ps(y, c0);
        _mm256_storeu_ps(y + 8, c1);
        return;
    }
    float t[NR];
    _mm256_storeu_ps(t, c0);
    _mm256_storeu_ps(t + 8, c1);
    for (int j = 0; j < nr_valid; j++) {
        float v = t[j];
        if (load_y) v += y[j];
        if (bias) v += bias[j];
        y[j] = v;
    }
}

TGT_INLINE void micro_body(const int mr, int nr_valid, int kc, const float *X, int64_t ldx,
                           const float *P, float *Y, int64_t ldy, const float *bias, bool load_y) {
    __m256 c[MR][2];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) c[r][0] = c[r][1] = _mm256_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(P + k * NR), b1 = _mm256_load_ps(P + k * NR + 8);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            if (r < mr) {
                __m256 a = _mm256_broadcast_ss(X + r * ldx + k);
                c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
                c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
            }
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
        if (r < mr) store_row(Y + r * ldy, c[r][0], c[r][1], nr_valid, bias, load_y);
}

static TGT void micro_avx2(int mr_valid, int nr_valid, int kc, const float *X, int64_t ldx,
                           const float *P, float *Y, int64_t ldy, const float *bias, bool load_y) {
    switch (mr_valid) {
    case 6: micro_body(6, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 5: micro_body(5, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 4: micro_body(4, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 3: micro_body(3, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    case 2: micro_body(2, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    default: micro_body(1, nr_valid, kc, X, ldx, P, Y, ldy, bias, load_y); break;
    }
}

/* ---------------- GEMV (M == 1) ---------------- */

TGT_INLINE __m128 hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

TGT_INLINE float hsum1(__m256 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TGT_INLINE void gemv_body(int64_t n0, int64_t n1, int64_t K, const float *x, const void *W,
                          tinfer_dtype dt, int64_t ldw, const float *bias, float *y,
                          bool accumulate) {
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) {
        int64_t b0 = n * ldw, b1 = b0 + ldw, b2 = b1 + ldw, b3 = b2 + ldw;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        __m256 e0 = a0, e1 = a0, e2 = a0, e3 = a0;
        int64_t k = 0;
        for (; k + 16 <= K; k += 16) {
            __m256 x0 = _mm256_loadu_ps(x + k), x1 = _mm256_loadu_ps(x + k + 8);
            a0 = _mm256_fmadd_ps(x0, load8_w(W, dt, b0 + k), a0);
            a1 = _mm256_fmadd_ps(x0, load8_w(W, dt, b1 + k), a1);
            a2 = _mm256_fmadd_ps(x0, load8_w(W, dt, b2 + k), a2);
            a3 = _mm256_fmadd_ps(x0, load8_w(W, dt, b3 + k), a3);
            e0 = _mm256_fmadd_ps(x1, load8_w(W, dt, b0 + k + 8), e0);
            e1 = _mm256_fmadd_ps(x1, load8_w(W, dt, b1 + k + 8), e1);
            e2 = _mm256_fmadd_ps(x1, load8_w(W, dt, b2 + k + 8), e2);
            e3 = _mm256_fmadd_ps(x1, load8_w(W, dt, b3 + k + 8), e3);
        }
        for (; k + 8 <= K; k += 8) {
            __m256 x0 = _mm256_loadu_ps(x + k);
            a0 = _mm256_fmadd_ps(x0, load8_w(W, dt, b0 + k), a0);
            a1 = _mm256_fmadd_ps(x0, load8_w(W, dt, b1 + k), a1);
            a2 = _mm256_fmadd_ps(x0, load8_w(W, dt, b2 + k), a2);
            a3 = _mm256_fmadd_ps(x0, load8_w(W, dt, b3 + k), a3);
        }
        float s[4];
        _mm_storeu_ps(s, hsum4(_mm256_add_ps(a0, e0), _mm256_add_ps(a1, e1),
                               _mm256_add_ps(a2, e2), _mm256_add_ps(a3, e3)));
        for (; k < K; k++) {
            float xv = x[k];
            s[0] += xv * tinfer_gemm_w_at(W, NULL, dt, b0 + k);
            s[1] += xv * tinfer_gemm_w_at(W, NULL, dt, b1 + k);
            s[2] += xv * tinfer_gemm_w_at(W, NULL, dt, b2 + k);
            s[3] += xv * tinfer_gemm_w_at(W, NULL, dt, b3 + k);
        }
        for (int i = 0; i < 4; i++) {
            float v = s[i];
            if (accumulate) v += y[n + i];
            if (bias) v += bias[n + i];
            y[n + i] = v;
        }
    }
    for (; n < n1; n++) {
        int64_t b = n * ldw;
        __m256 a = _mm256_setzero_ps();
        int64_t k = 0;
        for (; k + 8 <= K; k += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), load8_w(W, dt, b + k), a);
        float v = hsum1(a);
        for (; k < K; k++) v += x[k] * tinfer_gemm_w_at(W, NULL, dt, b + k);
        if (accumulate) v += y[n];
        if (bias) v += bias[n];
        y[n] = v;
    }
}

/* BF16 GEMV without the per-element widening shuffle. A 32-byte load of W holds 16 BF16 values;
 * viewed as 8 u32 lanes, lane i carries element 2i in its low half and 2i+1 in its high half, so
 * (u << 16) is element 2i as an F32 and (u & 0xffff0000) is element 2i+1: two cheap bit ops per
 * 16 weights instead of a zero-extending shuffle plus a shift per 8 (on Zen 1 the 256-bit
 * vpmovzxwd and vpslld are 2 uops each and both compete for the same FP pipe, which kept one
 * core below its share of DRAM bandwidth). x is reordered once per call to match: per 16-block,
 * the 8 even-indexed values then the 8 odd-indexed ones. 4 rows in flight, 2 accumulators each. */
#define GEMV_XP_MAX 8192 /* reordered x on the stack: 32 KiB; larger K takes gemv_body */

TGT_INLINE void reorder_x(float *xp, const float *x, int64_t K16) {
    for (int64_t k = 0; k < K16; k += 16) {
        __m256 a = _mm256_loadu_ps(x + k), b = _mm256_loadu_ps(x + k + 8);
        /* per 128-bit lane: [a0 a2 b0 b2 | a4 a6 b4 b6]; the 64-bit permute (0,2,1,3) then
         * orders the pairs as a0 a2 a4 a6 b0 b2 b4 b6 (even), likewise the odd ones */
        __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
        __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
        _mm256_storeu_ps(xp + k, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8)));
        _mm256_storeu_ps(xp + k + 8,
                         _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), 0xD8)));
    }
}

TGT_INLINE __m256 bf16_even(__m256i u) { return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16)); }
TGT_INLINE __m256 bf16_odd(__m256i u, __m256i hi) {
    return _mm256_castsi256_ps(_mm256_and_si256(u, hi));
}

static TGT void gemv_bf16_pairs(int64_t n0, int64_t n1, int64_t K, const float *x,
                                const uint16_t *W, int64_t ldw, const float *bias, float *y,
                                bool accumulate) {
    _Alignas(32) float xp[GEMV_XP_MAX];
    const int64_t K16 = K & ~(int64_t)15;
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
    reorder_x(xp, x, K16);
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) {
        const uint16_t *w0 = W + n * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        __m256 e0 = a0, e1 = a0, e2 = a0, e3 = a0;
        for (int64_t k = 0; k < K16; k += 16) {
            __m256 xe = _mm256_load_ps(xp + k), xo = _mm256_load_ps(xp + k + 8);
            /* the next 4-row group, same columns: one group (4.6 KiB at K = 576) ahead */
            _mm_prefetch((const char *)(w0 + 4 * ldw + k), _MM_HINT_T0);
            _mm_prefetch((const char *)(w1 + 4 * ldw + k), _MM_HINT_T0);
            _mm_prefetch((const char *)(w2 + 4 * ldw + k), _MM_HINT_T0);
            _mm_prefetch((const char *)(w3 + 4 * ldw + k), _MM_HINT_T0);
            __m256i u0 = _mm256_loadu_si256((const __m256i *)(w0 + k));
            __m256i u1 = _mm256_loadu_si256((const __m256i *)(w1 + k));
            __m256i u2 = _mm256_loadu_si256((const __m256i *)(w2 + k));
            __m256i u3 = _mm256_loadu_si256((const __m256i *)(w3 + k));
            a0 = _mm256_fmadd_ps(xe, bf16_even(u0), a0);
            e0 = _mm256_fmadd_ps(xo, bf16_odd(u0, hi), e0);
            a1 = _mm256_fmadd_ps(xe, bf16_even(u1), a1);
            e1 = _mm256_fmadd_ps(xo, bf16_odd(u1, hi), e1);
            a2 = _mm256_fmadd_ps(xe, bf16_even(u2), a2);
            e2 = _mm256_fmadd_ps(xo, bf16_odd(u2, hi), e2);
            a3 = _mm256_fmadd_ps(xe, bf16_even(u3), a3);
            e3 = _mm256_fmadd_ps(xo, bf16_odd(u3, hi), e3);
        }
        float s[4];
        _mm_storeu_ps(s, hsum4(_mm256_add_ps(a0, e0), _mm256_add_ps(a1, e1),
                               _mm256_add_ps(a2, e2), _mm256_add_ps(a3, e3)));
        for (int64_t k = K16; k < K; k++) {
            float xv = x[k];
            s[0] += xv * tinfer_bf16_to_f32(w0[k]);
            s[1] += xv * tinfer_bf16_to_f32(w1[k]);
            s[2] += xv * tinfer_bf16_to_f32(w2[k]);
            s[3] += xv * tinfer_bf16_to_f32(w3[k]);
        }
        for (int i = 0; i < 4; i++) {
            float v = s[i];
            if (accumulate) v += y[n + i];
            if (bias) v += bias[n + i];
            y[n + i] = v;
        }
    }
    for (; n < n1; n++) {
        const uint16_t *w = W + n * ldw;
        __m256 a = _mm256_setzero_ps(), e = a;
        for (int64_t k = 0; k < K16; k += 16) {
            __m256i u = _mm256_loadu_si256((const __m256i *)(w + k));
            a = _mm256_fmadd_ps(_mm256_load_ps(xp + k), bf16_even(u), a);
            e = _mm256_fmadd_ps(_mm256_load_ps(xp + k + 8), bf16_odd(u, hi), e);
        }
        float v = hsum1(_mm256_add_ps(a, e));
        for (int64_t k = K16; k < K; k++) v += x[k] * tinfer_bf16_to_f32(w[k]);
        if (accumulate) v += y[n];
        if (bias) v += bias[n];
        y[n] = v;
    }
}

static TGT void gemv_avx2(int64_t n0, int64_t n1, int64_t K, const float *x, const void *W,
                          tinfer_dtype dt, int64_t ldw, const float *bias, float *y,
                          bool accumulate) {
    if (dt == TINFER_DTYPE_BF16 && K <= GEMV_XP_MAX)
        gemv_bf16_pairs(n0, n1, K, x, W, ldw, bias, y, accumulate);
    else if (dt == TINFER_DTYPE_BF16)
        gemv_body(n0, n1, K, x, W, TINFER_DTYPE_BF16, ldw, bias, y, accumulate);
    else if (dt == TINFER_DTYPE_F32)
        gemv_body(n0, n1, K, x, W, TINFER_DTYPE_F32, ldw, bias, y, accumulate);
    else
        tinfer_gemm_path_scalar.gemv(n0, n1, K, x, W, dt, ldw, bias, y, accumulate);
}

const tinfer_gemm_path tinfer_gemm_path_avx2 = {
    .name = "avx2", .mr = MR, .nr = NR, .kc = KC, .pack = tinfer_gemm_pack_avx2,
    .micro = micro_avx2, .gemv = gemv_avx2, .quant_x = tinfer_gemm_quant_x_avx2,
    .gemv_q8 = tinfer_gemm_gemv_q8_avx2,
};

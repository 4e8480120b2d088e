/*
 * gemm_cpu_amx.c — the Intel AMX path of the CPU GEMM for M >= 2 (prefill): BF16 tiles
 * (TDPBF16PS), F32 accumulation, Y[M,N] (+)= X[M,K] · W[N,K]^T (+ bias). M == 1 stays on the
 * AVX-512 VNNI GEMV (gemm_cpu_avx512.c, gemm_cpu_q8_avx512.c), which streams W once.
 *
 * Tiles (palette 1, 8 tiles of 16 rows x 64 bytes): C = tmm0..3 (2 x 2 blocks of 16 x 16 F32),
 * A = tmm4, tmm5 (16 rows of X x 32 BF16 each), B = tmm6, tmm7 (32 k x 16 columns of W each, in
 * the pair layout below). One k-step of 32 is 4 tile loads and 4 TDPBF16PS over a 32 x 32 block
 * of Y; the C tiles stay in the tile registers for the whole K, so Y is written once per call.
 * A 16-row tail of X uses C tiles 0, 1 only.
 *
 * Layouts (both zero-padded, so every tile is full and padding adds exact zeros):
 *   - X: converted once per call to BF16 Xb[Mp][ldxb], Mp = M rounded up to 16, K rounded up to
 *     Kp (a multiple of 32); ldxb = Kp, plus 32 when Kp / 32 is even so that consecutive rows
 *     start in different L1 sets (an odd number of cache lines apart). Rows are split across
 *     the threads, then a barrier.
 *   - W: per column chunk of 32 (two B tiles), the whole Kp is packed into the thread's panel:
 *     for k-step s and tile t, 16 rows of 16 u32, row r = the pairs (W[n, 32s + 2r],
 *     W[n, 32s + 2r + 1]) of the tile's 16 columns n — the VNNI layout TDPBF16PS reads B in
 *     (a 16 x 16 transposition of 32-bit pairs per tile, AVX-512 unpacks and lane shuffles).
 *     Columns past N and k past K are zeros. The panel (Kp * 64 bytes) is reused by every
 *     32-row block of X, as the AVX-512 path reuses its panels.
 * Threading: one OpenMP region per call; each thread takes the chunks of its own contiguous
 *   range in order, prefetching the next one's rows while it packs, then steals the chunks the
 *   others have not reached (run_range); tile state is per thread, so every thread of the region loads the tile
 *   configuration (LDTILECFG) before its first tile instruction and releases it after its last.
 *
 * Rounding (what tests/ops/test_gemm_amx.c holds the path to):
 *   - X: VCVTNE2PS2BF16, round to nearest even to 8 significant bits: |bf16(x) - x| <= 2^-8 |x|
 *     for every normal x (unit roundoff of an 8-bit significand); the instruction treats F32
 *     subnormal inputs as zero, an absolute error below 2^-126.
 *   - W: BF16 exact; F32 and F16 rounded the same way (2^-8 |w|); Q8_0 dequantized exactly in
 *     F32 (q times an F16 scale, see gemm_cpu_internal.h), then rounded the same way.
 *   - TDPBF16PS: products of two BF16 are exact in F32; sums in F32 (round to nearest even,
 *     denormal results flushed to zero), so the accumulation obeys the usual gamma_(K+2) bound of
 *     any F32 dot product, plus at most 2^-126 per step for the flushes.
 *   So |y - y_exact| <= ((1 + 2^-8)^2 - 1 + gamma_(K+2) (1 + 2^-8)^2) sum_k |x_k w_k| + ...,
 *   about 0.8% of the magnitude at most, typically 2^-8 / sqrt(K) relative: BF16 inputs, as in
 *   the GPU path.
 *
 * Availability (tinfer_gemm_amx_usable): CPUID (AMX-TILE, AMX-BF16, AVX512-BF16 for the F32 ->
 * BF16 conversion) and Linux's permission to use the tile data state, asked once per process
 * with arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); either missing, the AVX-512 path
 * runs. Compiled with target attributes only (the compiler needs no AMX flag).
 */
#define _DEFAULT_SOURCE /* syscall */
#include "gemm/cpu/gemm_cpu_internal.h"

#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TGT_LIST "amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c"
#define TGT __attribute__((target(TGT_LIST)))
#define TGT_INLINE static inline __attribute__((always_inline, target(TGT_LIST)))

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

enum {
    NB = 32,                /* columns of W per chunk: two B tiles */
    KS = 32,                /* k per step: one tile row of 32 BF16 */
    TILE_U16 = 16 * 32,     /* one 1 KiB tile in BF16 elements */
    STEP_U16 = 2 * TILE_U16 /* one k-step of the panel: both B tiles */
};

/* ---------------- availability ---------------- */

static int g_amx_state; /* 0 not yet asked, 1 usable, -1 not */

bool tinfer_gemm_amx_usable(void) {
    int s = __atomic_load_n(&g_amx_state, __ATOMIC_ACQUIRE);
    if (s) return s > 0;
    unsigned a, b, c, d;
    bool ok = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 24 & 1) /* AMX-TILE */ &&
              (d >> 22 & 1) /* AMX-BF16 */;
    if (ok) ok = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 5 & 1); /* AVX512-BF16 */
    /* Process-wide and idempotent: two threads asking at once both get the same answer. */
    if (ok) ok = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
    __atomic_store_n(&g_amx_state, ok ? 1 : -1, __ATOMIC_RELEASE);
    return ok;
}

/* ---------------- conversions ---------------- */

/* The 64-byte tile configuration: palette 1, every tile 16 rows x 64 bytes. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

TGT_INLINE void tiles_begin(void) {
    _Alignas(64) tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
}

TGT_INLINE __mmask32 mask32(int64_t n) { /* the first min(n, 32) bits */
    return n >= 32 ? (__mmask32)0xffffffffu : n <= 0 ? 0 : (__mmask32)((1u << n) - 1u);
}

TGT_INLINE __m512i f32x32_to_bf16(__m512 lo, __m512 hi) {
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo); /* lo -> elements 0..15, hi -> 16..31 */
}

/* Elements k0 .. k0+31 of W row `base` (k < kmax valid, the rest 0) as 32 BF16. */
TGT_INLINE __m512i load_w32(const void *W, const uint16_t *S, tinfer_dtype dt, int64_t base,
                            int64_t kvalid) {
    __mmask32 m = mask32(kvalid);
    if (dt == TINFER_DTYPE_BF16) return _mm512_maskz_loadu_epi16(m, (const uint16_t *)W + base);
    __mmask16 m0 = (__mmask16)m, m1 = (__mmask16)(m >> 16);
    if (dt == TINFER_DTYPE_F32) {
        const float *w = (const float *)W + base;
        return f32x32_to_bf16(_mm512_maskz_loadu_ps(m0, w), _mm512_maskz_loadu_ps(m1, w + 16));
    }
    if (dt == TINFER_DTYPE_F16) {
        const uint16_t *w = (const uint16_t *)W + base;
        return f32x32_to_bf16(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m0, w)),
                              _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m1, w + 16)));
    }
    /* Q8_0: base is a block start (K, ldw and k0 multiples of 32), every element valid */
    __m256i q = _mm256_loadu_si256((const __m256i *)((const int8_t *)W + base));
    __m512 d = _mm512_set1_ps(tinfer_f16_to_f32(S[base >> 5]));
    __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q)));
    __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1)));
    return f32x32_to_bf16(_mm512_mul_ps(lo, d), _mm512_mul_ps(hi, d));
}

/* dst row j (64 bytes) = 32-bit element j of r[0..15]: a 16 x 16 transposition. */
TGT_INLINE void transpose16_store(const __m512i r[16], uint16_t *dst) {
    __m512i t[16], u[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    /* u[4g + c], 128-bit lane L: rows 4g..4g+3 at column 4L + c */
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
        u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        __m512i x0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88);
        __m512i x1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
        __m512i y0 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
        __m512i y1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
        _mm512_store_si512(dst + 32 * (c + 0), _mm512_shuffle_i32x4(x0, y0, 0x88));
        _mm512_store_si512(dst + 32 * (c + 4), _mm512_shuffle_i32x4(x1, y1, 0x88));
        _mm512_store_si512(dst + 32 * (c + 8), _mm512_shuffle_i32x4(x0, y0, 0xdd));
        _mm512_store_si512(dst + 32 * (c + 12), _mm512_shuffle_i32x4(x1, y1, 0xdd));
    }
}

/* Bytes of element i of W (Q8_0: the int8 values). */
TGT_INLINE const char *w_byte(const void *W, tinfer_dtype dt, int64_t i) {
    int64_t size = dt == TINFER_DTYPE_F32 ? 4 : dt == TINFER_DTYPE_Q8_0 ? 1 : 2;
    return (const char *)W + i * size;
}

/* The panel of columns n0 .. n0+nv-1 (nv <= 32) over all Kp (see the header). While it packs,
 * the same k-step of the next chunk's rows (n0+32 ..., `nnext` of them: the thread's next chunk,
 * see run_range) is prefetched into L2: the hardware prefetcher alone leaves the 32 interleaved
 * row streams of a chunk partly unfetched (perf_gemm_cpu amx cold, gemm/cpu/README.md). */
TGT_INLINE void pack_w_body(uint16_t *P, const void *W, const uint16_t *S, tinfer_dtype dt,
                            int64_t ldw, int64_t n0, int nv, int nnext, int64_t K, int64_t Kp) {
    for (int64_t k0 = 0; k0 < Kp; k0 += KS) {
        uint16_t *dst = P + k0 / KS * STEP_U16;
        for (int t = 0; t < 2; t++) {
            __m512i r[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) {
                int j = 16 * t + i;
                if (j < nnext) {
                    const char *q = w_byte(W, dt, (n0 + NB + j) * ldw + k0);
                    _mm_prefetch(q, _MM_HINT_T1);
                    if (dt == TINFER_DTYPE_F32) _mm_prefetch(q + 64, _MM_HINT_T1);
                }
                r[i] = j < nv ? load_w32(W, S, dt, (n0 + j) * ldw + k0, K - k0)
                              : _mm512_setzero_si512();
            }
            transpose16_store(r, dst + t * TILE_U16);
        }
    }
}

static TGT void pack_w(uint16_t *P, const void *W, const uint16_t *S, tinfer_dtype dt,
                       int64_t ldw, int64_t n0, int nv, int nnext, int64_t K, int64_t Kp) {
    switch (dt) {
    case TINFER_DTYPE_BF16:
        pack_w_body(P, W, S, TINFER_DTYPE_BF16, ldw, n0, nv, nnext, K, Kp);
        break;
    case TINFER_DTYPE_F32: pack_w_body(P, W, S, TINFER_DTYPE_F32, ldw, n0, nv, nnext, K, Kp); break;
    case TINFER_DTYPE_F16: pack_w_body(P, W, S, TINFER_DTYPE_F16, ldw, n0, nv, nnext, K, Kp); break;
    default: pack_w_body(P, W, S, TINFER_DTYPE_Q8_0, ldw, n0, nv, nnext, K, Kp); break;
    }
}

/* Rows m0 .. m1-1 of Xb (rows >= M and k >= K zero). */
static TGT void pack_x(uint16_t *Xb, int64_t ldxb, const float *X, int64_t ldx, int64_t M,
                       int64_t K, int64_t Kp, int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; m++) {
        uint16_t *d = Xb + m * ldxb;
        const float *x = X + m * ldx;
        for (int64_t k = 0; k < Kp; k += KS) {
            __m512i v = _mm512_setzero_si512();
            if (m < M) {
                __mmask32 mk = mask32(K - k);
                v = f32x32_to_bf16(_mm512_maskz_loadu_ps((__mmask16)mk, x + k),
                                   _mm512_maskz_loadu_ps((__mmask16)(mk >> 16), x + k + 16));
            }
            _mm512_store_si512(d + k, v);
        }
    }
}

/* ---------------- tiles ---------------- */

typedef struct amx_job {
    int64_t M, N, K, Kp, Mp, ldx, ldw, ldy, ldxb;
    const float *X;
    const void *W;
    const uint16_t *S;
    tinfer_dtype dt;
    const float *bias;
    float *Y;
    bool accumulate;
    uint16_t *Xb;
} amx_job;

/* Y rows m0 .. m0+rows-1 (those < M), columns n0 .. n0+nv-1 from C tiles stored in c
 * (tile 2i + t: rows 16i.., columns 16t..; 16 floats a row). */
TGT_INLINE void epilogue(const amx_job *j, const float *c, int64_t m0, int rows, int64_t n0,
                         int nv) {
    __mmask16 mk[2] = {(__mmask16)mask32(nv), (__mmask16)mask32(nv - 16)};
    const float *bias = j->bias ? j->bias + n0 : NULL;
    __m512 b[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    if (bias) {
        b[0] = _mm512_maskz_loadu_ps(mk[0], bias);
        b[1] = _mm512_maskz_loadu_ps(mk[1], bias + 16);
    }
    int rv = j->M - m0 < rows ? (int)(j->M - m0) : rows;
    for (int r = 0; r < rv; r++) {
        float *y = j->Y + (m0 + r) * j->ldy + n0;
        const float *cr = c + (r >> 4) * 512 + (r & 15) * 16;
        for (int t = 0; t < 2; t++) {
            if (!mk[t]) break;
            __m512 v = _mm512_load_ps(cr + t * 256);
            if (j->accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk[t], y + 16 * t));
            if (bias) v = _mm512_add_ps(v, b[t]);
            _mm512_mask_storeu_ps(y + 16 * t, mk[t], v);
        }
    }
}

/* Y[m0 .. m0+31, n0 .. n0+nv-1] over the whole K, from Xb and the panel P. */
TGT_INLINE void block32(const amx_job *j, const uint16_t *P, int64_t m0, int64_t n0, int nv,
                        float *c) {
    const uint16_t *a = j->Xb + m0 * j->ldxb;
    const int64_t sa = j->ldxb * 2, a16 = 16 * j->ldxb;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t k0 = 0; k0 < j->Kp; k0 += KS) {
        const uint16_t *b = P + k0 / KS * STEP_U16;
        _tile_loadd(4, a + k0, sa);
        _tile_loadd(6, b, 64);
        _tile_loadd(7, b + TILE_U16, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, a + a16 + k0, sa);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, 64);
    _tile_stored(1, c + 256, 64);
    _tile_stored(2, c + 512, 64);
    _tile_stored(3, c + 768, 64);
    epilogue(j, c, m0, 32, n0, nv);
}

TGT_INLINE void block16(const amx_job *j, const uint16_t *P, int64_t m0, int64_t n0, int nv,
                        float *c) {
    const uint16_t *a = j->Xb + m0 * j->ldxb;
    const int64_t sa = j->ldxb * 2;
    _tile_zero(0);
    _tile_zero(1);
    for (int64_t k0 = 0; k0 < j->Kp; k0 += KS) {
        const uint16_t *b = P + k0 / KS * STEP_U16;
        _tile_loadd(4, a + k0, sa);
        _tile_loadd(6, b, 64);
        _tile_loadd(7, b + TILE_U16, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
    }
    _tile_stored(0, c, 64);
    _tile_stored(1, c + 256, 64);
    epilogue(j, c, m0, 16, n0, nv);
}

/* Column chunk ci: pack its panel (prefetching chunk ci + 1's rows when `next`), then every
 * row block of X. */
static TGT void run_chunk(const amx_job *j, uint16_t *P, int64_t ci, bool next) {
    _Alignas(64) float c[4 * 256];
    int64_t n0 = ci * NB;
    int nv = (int)(j->N - n0 < NB ? j->N - n0 : NB);
    int64_t after = j->N - n0 - NB;
    int nnext = !next || after <= 0 ? 0 : after < NB ? (int)after : NB;
    pack_w(P, j->W, j->S, j->dt, j->ldw, n0, nv, nnext, j->K, j->Kp);
    __asm__ volatile("" ::: "memory"); /* the tile loads below read P (their asm names no memory) */
    int64_t m0 = 0;
    for (; m0 + 32 <= j->Mp; m0 += 32) block32(j, P, m0, n0, nv, c);
    if (m0 < j->Mp) block16(j, P, m0, n0, nv, c);
}

/* One counter per thread on its own cache line: the next chunk of that thread's range. */
typedef struct {
    int64_t next;
    char pad[56];
} range_ctr;

/* Thread `me` of T: its own contiguous range of chunks [C me / T, C (me+1) / T) in order, so it
 * streams one contiguous part of W and can prefetch its next chunk; then the chunks the others
 * have not yet taken, through their counters (as the GEMV, gemm_cpu.c: a thread whose core is
 * busy with another process leaves its chunks to the one that runs). The last chunk of a range
 * prefetches nothing (its successor is another thread's). */
static TGT void run_range(const amx_job *j, uint16_t *P, int64_t chunks, range_ctr *ctr, int me,
                          int T) {
    tiles_begin();
    for (int v = 0; v < T; v++) {
        int t = (me + v) % T;
        int64_t c0 = chunks * t / T, c1 = chunks * (t + 1) / T;
        for (;;) {
            int64_t ci = c0 + __atomic_fetch_add(&ctr[t].next, 1, __ATOMIC_RELAXED);
            if (ci >= c1) break;
            run_chunk(j, P, ci, v == 0 && ci + 1 < c1);
        }
    }
    _tile_release();
}

bool tinfer_gemm_amx(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx, const void *W,
                     const uint16_t *S, tinfer_dtype dt, int64_t ldw, const float *bias, float *Y,
                     int64_t ldy, bool accumulate, int nthr) {
    if (dt != TINFER_DTYPE_BF16 && dt != TINFER_DTYPE_F32 && dt != TINFER_DTYPE_F16 &&
        dt != TINFER_DTYPE_Q8_0)
        return false;
    amx_job j = {.M = M, .N = N, .K = K, .ldx = ldx, .ldw = ldw, .ldy = ldy, .X = X, .W = W,
                 .S = S, .dt = dt, .bias = bias, .Y = Y, .accumulate = accumulate};
    j.Kp = (K + KS - 1) / KS * KS;
    j.Mp = (M + 15) / 16 * 16;
    j.ldxb = j.Kp + ((j.Kp / KS) % 2 == 0 ? KS : 0);
    int64_t chunks = (N + NB - 1) / NB;
    if (nthr > chunks) nthr = (int)chunks;
    if (nthr < 1) nthr = 1;
    /* One allocation: Xb, then one panel of Kp * NB BF16 per thread; every piece 64-aligned. */
    size_t xbytes = (size_t)(j.Mp * j.ldxb) * 2, pbytes = (size_t)(j.Kp * NB) * 2;
    uint16_t *mem = aligned_alloc(64, xbytes + (size_t)nthr * pbytes);
    if (!mem) return false; /* the caller runs the AVX-512 path instead */
    j.Xb = mem;
    uint16_t *panels = mem + xbytes / 2;
    enum { MAX_T = 64 };
    if (nthr > MAX_T) nthr = MAX_T;
    range_ctr ctr[MAX_T];
    for (int t = 0; t < nthr; t++) ctr[t].next = 0;
    if (nthr == 1) {
        pack_x(j.Xb, j.ldxb, X, ldx, M, K, j.Kp, 0, j.Mp);
        run_range(&j, panels, chunks, ctr, 0, 1);
    } else {
#pragma omp parallel num_threads(nthr)
        {
            int T = omp_get_num_threads(), me = omp_get_thread_num();
            int64_t g = j.Mp / 16; /* 16-row groups of Xb, split evenly */
            pack_x(j.Xb, j.ldxb, X, ldx, M, K, j.Kp, g * me / T * 16, g * (me + 1) / T * 16);
#pragma omp barrier
            run_range(&j, panels + (size_t)me * pbytes / 2, chunks, ctr, me, T);
        }
    }
    free(mem);
    return true;
}

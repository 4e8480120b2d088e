/*
 * gemm_cpu.c — the CPU GEMM driver Y[M,N] = X[M,K] · W[N,K]^T (+ bias) (+ Y), its run-time SIMD
 * dispatch, the portable C path, and the double-precision reference.
 *
 * Dispatch: AMX (AMX-TILE + AMX-BF16 + AVX512-BF16 by CPUID and the Linux permission for the
 * tile data, gemm_cpu_amx.c: M >= 2 on BF16 tiles, M == 1 on the VNNI GEMV), else
 * __builtin_cpu_supports picks AVX-512 with VNNI (avx512f+bw+vl+vnni: the Q8_0 GEMV on
 * vpdpbusd), else AVX-512, else AVX2+FMA+F16C, else the portable path; the SIMD paths live in
 * gemm_cpu_avx2.c / gemm_cpu_avx512.c / gemm_cpu_amx.c, compiled with target attributes so the
 * library never needs SIMD at compile time.
 * Blocking and threading (see gemm_cpu_internal.h for the packed layout):
 *   - M == 1: GEMV, W streamed once; each thread a contiguous range of rows of W, the tail
 *     balanced by stealing GEMV_CHUNK-row pieces (gemv_threaded).
 *   - M >= 2 on a path with its own GEMM (AMX): that GEMM, same threading (gemm_cpu_amx.c).
 *   - M >= 2 otherwise: OpenMP over chunks of a few N-panels; in a chunk, K-blocks outermost so the X block
 *     [M, kc] stays in cache across the chunk's panels, each (panel, K-block) of W packed once
 *     and the micro-kernel run over every row-block of X.
 *   Work items are handed out dynamically: on a shared machine a thread whose core is busy with
 *   another process takes fewer items instead of stalling the whole call.
 * Small problems run on the calling thread: waking the OpenMP team costs a few microseconds,
 * more than the whole product below TINFER_GEMM_PAR_MIN_MACS.
 * Q8_0 weights: M == 1 quantizes x once per call (the path's quant_x) and runs its gemv_q8 with
 * the same threading; M >= 2 dequantizes W in the pack (see gemm_cpu_internal.h).
 */
#include "gemm/cpu/gemm_cpu.h"
#include "gemm/cpu/gemm_cpu_internal.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Below this many multiply-adds the product runs single-threaded. One core runs the BF16 GEMV at
 * ~4 GMAC/s (perf_gemm_cpu, 1 thread, avx2, qkv at M = 1: 553K MACs in 0.139 ms; Xeon, see
 * README.md), so 2^17 MACs is ~30 us, several times the few-us cost of starting a parallel region;
 * below it the second thread cannot win back its start-up. */
#define TINFER_GEMM_PAR_MIN_MACS ((int64_t)1 << 17)

/* GEMV rows per piece: 64 rows x K 576 of BF16 is 74 KB, ~5 us at DRAM speed — small enough
 * that stealing balances the threads (a thread slowed by another process on its core leaves its
 * pieces to the other), large enough that the per-piece atomic (~0.1 us) and the kernel's
 * per-call reordering of x (K floats) are noise. */
#define GEMV_CHUNK 64

/* The Q8_0 GEMV quantizes x on the calling thread's stack: K int8 + K / 32 floats (34 KiB at
 * this K, far below any thread's stack). Longer rows take the packed path, which dequantizes
 * W instead. */
#define TINFER_GEMM_Q8_GEMV_MAX_K 32768

/* ---------------- portable path ---------------- */

void tinfer_gemm_pack_generic(float *P, int nr, const void *W, const uint16_t *S, tinfer_dtype dt,
                              int64_t ldw, int64_t n0, int nr_valid, int64_t k0, int kc) {
    for (int j = 0; j < nr; j++) {
        if (j < nr_valid) {
            int64_t base = (n0 + j) * ldw + k0;
            for (int k = 0; k < kc; k++) P[(int64_t)k * nr + j] = tinfer_gemm_w_at(W, S, dt, base + k);
        } else {
            for (int k = 0; k < kc; k++) P[(int64_t)k * nr + j] = 0.0f;
        }
    }
}

enum { SCALAR_MR = 4, SCALAR_NR = 8 };

static void micro_scalar(int mr_valid, int nr_valid, int kc, const float *X, int64_t ldx,
                         const float *P, float *Y, int64_t ldy, const float *bias, bool load_y) {
    float acc[SCALAR_MR][SCALAR_NR] = {{0}};
    for (int k = 0; k < kc; k++) {
        const float *p = P + (int64_t)k * SCALAR_NR;
        for (int r = 0; r < mr_valid; r++) {
            float a = X[r * ldx + k];
            for (int j = 0; j < SCALAR_NR; j++) acc[r][j] += a * p[j];
        }
    }
    for (int r = 0; r < mr_valid; r++) {
        float *y = Y + r * ldy;
        for (int j = 0; j < nr_valid; j++) {
            float v = acc[r][j];
            if (load_y) v += y[j];
            if (bias) v += bias[j];
            y[j] = v;
        }
    }
}

static void gemv_scalar(int64_t n0, int64_t n1, int64_t K, const float *x, const void *W,
                        tinfer_dtype dt, int64_t ldw, const float *bias, float *y,
                        bool accumulate) {
    for (int64_t n = n0; n < n1; n++) {
        float s = 0.0f;
        int64_t base = n * ldw;
        for (int64_t k = 0; k < K; k++) s += x[k] * tinfer_gemm_w_at(W, NULL, dt, base + k);
        if (accumulate) s += y[n];
        if (bias) s += bias[n];
        y[n] = s;
    }
}

const tinfer_gemm_path tinfer_gemm_path_scalar = {
    .name = "scalar", .mr = SCALAR_MR, .nr = SCALAR_NR, .kc = 256,
    .pack = tinfer_gemm_pack_generic, .micro = micro_scalar, .gemv = gemv_scalar,
    .quant_x = tinfer_gemm_quant_x_scalar, .gemv_q8 = tinfer_gemm_gemv_q8_scalar,
};

/* ---------------- dispatch ---------------- */

static const tinfer_gemm_path *g_forced_path; /* test/debug switch, see gemm_cpu.h */

/* F16C too: the Q8_0 GEMV converts its F16 scales with it (every AVX2 CPU has it). */
static bool cpu_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
}

static bool cpu_has_avx512(void) {
    __builtin_cpu_init();
    return cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

static bool cpu_has_avx512vnni(void) {
    return cpu_has_avx512() && __builtin_cpu_supports("avx512vnni");
}

/* AMX needs the VNNI path's GEMV beside it and the kernel's permission (tinfer_gemm_amx_usable) */
static bool cpu_has_amx(void) { return cpu_has_avx512vnni() && tinfer_gemm_amx_usable(); }

/* TINFER_GEMM_FORCE=f32, read once: never the AMX path (every other path computes in F32); the
 * model tests that hold the CPU backend to F32 references set it. The switch's other values
 * force the CUDA dispatcher's paths (gemm/dispatch.cu) and leave the CPU's choice alone. */
static bool env_f32_only(void) {
    static int cached; /* 0 not read, 1 f32 only, -1 not set */
    int c = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (!c) {
        const char *s = getenv("TINFER_GEMM_FORCE");
        c = s && !strcmp(s, "f32") ? 1 : -1;
        __atomic_store_n(&cached, c, __ATOMIC_RELAXED);
    }
    return c > 0;
}

static const tinfer_gemm_path *select_path(void) {
    if (g_forced_path) return g_forced_path;
    if (!env_f32_only() && cpu_has_amx()) return &tinfer_gemm_path_amx;
    if (cpu_has_avx512vnni()) return &tinfer_gemm_path_avx512vnni;
    if (cpu_has_avx512()) return &tinfer_gemm_path_avx512;
    if (cpu_has_avx2()) return &tinfer_gemm_path_avx2;
    return &tinfer_gemm_path_scalar;
}

const char *tinfer_gemm_cpu_isa(void) { return select_path()->name; }

const char *tinfer_gemm_cpu_kernel(int64_t M) {
    const tinfer_gemm_path *p = select_path();
    if (M == 1) return p->gemv_name ? p->gemv_name : p->name;
    return p->name;
}

int tinfer_gemm_cpu_force_isa(const char *isa) {
    if (!isa || !isa[0]) {
        g_forced_path = NULL;
        return 0;
    }
    if (!strcmp(isa, "scalar")) {
        g_forced_path = &tinfer_gemm_path_scalar;
        return 0;
    }
    if (!strcmp(isa, "avx2")) {
        if (!cpu_has_avx2()) return -1;
        g_forced_path = &tinfer_gemm_path_avx2;
        return 0;
    }
    if (!strcmp(isa, "avx512")) {
        if (!cpu_has_avx512()) return -1;
        g_forced_path = &tinfer_gemm_path_avx512;
        return 0;
    }
    if (!strcmp(isa, "amx")) {
        if (!cpu_has_amx()) return -1;
        g_forced_path = &tinfer_gemm_path_amx;
        return 0;
    }
    if (!strcmp(isa, "avx512vnni")) {
        if (!cpu_has_avx512vnni()) return -1;
        g_forced_path = &tinfer_gemm_path_avx512vnni;
        return 0;
    }
    return -1;
}

/* ---------------- driver ---------------- */

static void packed_cols(const tinfer_gemm_path *p, int64_t M, int64_t K, const float *X,
                        int64_t ldx, const void *W, const uint16_t *S, tinfer_dtype dt, int64_t ldw,
                        const float *bias, float *Y, int64_t ldy, bool accumulate, int64_t j0,
                        int64_t j1, float *buf) {
    for (int64_t k0 = 0; k0 < K; k0 += p->kc) {
        int kc = (int)(K - k0 < p->kc ? K - k0 : p->kc);
        bool first = k0 == 0;
        for (int64_t n0 = j0; n0 < j1; n0 += p->nr) {
            int nv = (int)(j1 - n0 < p->nr ? j1 - n0 : p->nr);
            p->pack(buf, p->nr, W, S, dt, ldw, n0, nv, k0, kc);
            const float *b = first && bias ? bias + n0 : NULL;
            for (int64_t m0 = 0; m0 < M; m0 += p->mr) {
                int mv = (int)(M - m0 < p->mr ? M - m0 : p->mr);
                p->micro(mv, nv, kc, X + m0 * ldx + k0, ldx, buf, Y + m0 * ldy + n0, ldy, b,
                         first ? accumulate : true);
            }
        }
    }
}

/* One GEMV call: the weights and, for Q8_0, the activations quantized once for the call. */
typedef struct gemv_job {
    const tinfer_gemm_path *p;
    int64_t K, ldw;
    const float *x;
    const void *W;
    const uint16_t *S;
    tinfer_dtype dt;
    const int8_t *xq; /* Q8_0 only */
    const float *xd;
    const float *bias;
    float *y;
    bool accumulate;
} gemv_job;

static void gemv_rows(const gemv_job *j, int64_t n0, int64_t n1) {
    if (j->dt == TINFER_DTYPE_Q8_0)
        j->p->gemv_q8(n0, n1, j->K, j->xq, j->xd, j->W, j->S, j->bias, j->y, j->accumulate);
    else
        j->p->gemv(n0, n1, j->K, j->x, j->W, j->dt, j->ldw, j->bias, j->y, j->accumulate);
}

/* GEMV over nthr threads in one parallel region. Thread t owns the contiguous rows
 * [N t / T, N (t+1) / T) (rounded to 4-row groups, the kernels' row block), cut into pieces of
 * GEMV_CHUNK rows taken in order through its own counter, so each thread streams one contiguous
 * range of W (one prefetch stream, no interleaving with the other thread's rows). A thread done
 * with its range steals the remaining pieces of the others through their counters: when another
 * process holds a core, its thread's share goes to the thread that is running instead of
 * waiting for it. */
static void gemv_threaded(const gemv_job *j, int nthr, int64_t N) {
    enum { MAX_T = 64 };
    if (nthr > MAX_T) nthr = MAX_T;
    int64_t groups = (N + 3) / 4;
    if (nthr > groups) nthr = (int)groups;
    /* one counter per 64-byte line: the owner and a thief touch it, nobody else */
    struct { int64_t next; char pad[56]; } ctr[MAX_T];
    for (int t = 0; t < nthr; t++) ctr[t].next = 0;
#pragma omp parallel num_threads(nthr)
    {
        int T = omp_get_num_threads(), me = omp_get_thread_num();
        for (int v = 0; v < T; v++) {
            int t = (me + v) % T;
            int64_t r0 = groups * t / T * 4, r1 = groups * (t + 1) / T * 4;
            if (r1 > N) r1 = N;
            for (;;) {
                int64_t c = __atomic_fetch_add(&ctr[t].next, 1, __ATOMIC_RELAXED);
                int64_t n0 = r0 + c * GEMV_CHUNK;
                if (n0 >= r1) break;
                int64_t n1 = n0 + GEMV_CHUNK < r1 ? n0 + GEMV_CHUNK : r1;
                gemv_rows(j, n0, n1);
            }
        }
    }
}

void tinfer_gemm_cpu(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx, const void *W,
                     tinfer_dtype w_dtype, const void *w_scale, int64_t ldw, const float *bias,
                     float *Y, int64_t ldy, bool accumulate) {
    if (M < 1 || N < 1 || K < 1 || !X || !W || !Y) return; /* nothing defined to compute */
    const uint16_t *S = w_scale;
    if (w_dtype == TINFER_DTYPE_Q8_0 && (K % 32 || ldw % 32 || !S)) return; /* see gemm_cpu.h */
    const tinfer_gemm_path *p = select_path();
    int nthr = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (M * N * K < TINFER_GEMM_PAR_MIN_MACS) nthr = 1;

    if (M == 1 && (w_dtype != TINFER_DTYPE_Q8_0 || (K <= TINFER_GEMM_Q8_GEMV_MAX_K && ldw == K))) {
        gemv_job j = {p, K, ldw, X, W, S, w_dtype, NULL, NULL, bias, Y, accumulate};
        _Alignas(64) int8_t xq[w_dtype == TINFER_DTYPE_Q8_0 ? K : 1];
        _Alignas(64) float xd[w_dtype == TINFER_DTYPE_Q8_0 ? K / 32 : 1];
        if (w_dtype == TINFER_DTYPE_Q8_0) { /* once per call, shared by every thread */
            p->quant_x(K, X, xq, xd);
            j.xq = xq;
            j.xd = xd;
        }
        if (nthr > 1)
            gemv_threaded(&j, nthr, N);
        else
            gemv_rows(&j, 0, N);
        return;
    }

    if (p->gemm && p->gemm(M, N, K, X, ldx, W, S, w_dtype, ldw, bias, Y, ldy, accumulate, nthr))
        return;

    int64_t panels = (N + p->nr - 1) / p->nr;
    if (nthr > panels) nthr = (int)panels;
    if (nthr > 1) {
        /* About 8 chunks per thread (at most 1/8 of a thread's share left unbalanced at the
         * end), at most 16 panels each so a chunk stays a fraction of a millisecond. */
        int64_t per = panels / (8 * (int64_t)nthr);
        per = per < 1 ? 1 : per > 16 ? 16 : per;
        int64_t chunks = (panels + per - 1) / per, cols = per * p->nr;
#pragma omp parallel num_threads(nthr)
        {
            _Alignas(64) float buf[TINFER_GEMM_PACK_MAX];
#pragma omp for schedule(dynamic, 1)
            for (int64_t c = 0; c < chunks; c++) {
                int64_t j0 = c * cols, j1 = j0 + cols < N ? j0 + cols : N;
                packed_cols(p, M, K, X, ldx, W, S, w_dtype, ldw, bias, Y, ldy, accumulate, j0,
                            j1, buf);
            }
        }
    } else {
        _Alignas(64) float buf[TINFER_GEMM_PACK_MAX];
        packed_cols(p, M, K, X, ldx, W, S, w_dtype, ldw, bias, Y, ldy, accumulate, 0, N, buf);
    }
}

/* ---------------- reference ---------------- */

void tinfer_gemm_ref_f64(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
                         const void *W, tinfer_dtype w_dtype, const void *w_scale, int64_t ldw,
                         const float *bias, double *Y, int64_t ldy) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = bias ? (double)bias[n] : 0.0;
            for (int64_t k = 0; k < K; k++)
                s += (double)X[m * ldx + k] * (double)tinfer_gemm_w_at(W, w_scale, w_dtype, n * ldw + k);
            Y[m * ldy + n] = s;
        }
}

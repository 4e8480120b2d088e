/*
 * test_sgemm.c — the FP32 ladder (every rung, both layouts) against a CPU reference.
 *
 * Random cases: inputs uniform in [-1, 1) from a fixed-seed generator (seed printed), C
 * pre-filled with random values, alpha/beta varied. Reference R in double. Each element must
 * satisfy |C - R| <= gamma_n * (|alpha| sum_k |a_ik b_kj| + |beta| |c0_ij|) with
 * gamma_n = n u / (1 - n u), u = 2^-24, n = K + 66: the worst-case bound for a sum of K
 * products in any order (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed.,
 * eq. 3.5 and lemma 3.1), plus 2 roundings for alpha and beta, plus up to 64 split-K partial
 * additions (rung 11 caps splits at 64). It holds for every correct FP32 kernel, whatever its
 * summation order, and an indexing or race bug lands orders of magnitude above it.
 * The normwise error ||C - R|| / ||R|| is printed for information.
 * Exact cases: entries in {-3..3}, alpha = 2, beta = -1, C0 in {-3..3}, K <= 4092: every
 * partial sum is an integer below 2^24, so any order is exact: compared bit for bit.
 * Guard bands: C sits inside a buffer with 64 floats before and after and ldc > N; everything
 * outside the M x N window holds a sentinel NaN pattern that must survive bit for bit; the
 * gaps of A and B (lda > K, ldb > row) hold NaN, so reading them would poison the result.
 * Misaligned cases: pointers offset by one float and odd leading dimensions (the 16-byte
 * rungs must fall back, not fault).
 * --quick: small shapes only (the compute-sanitizer run). --rung N,M,..: those rungs only.
 */
#include "gemm/cuda/device.h"
#include "gemm/prefill/sgemm_internal.h"
#include "gemm/sgemm.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "FAIL: %s: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__,     \
                    __LINE__);                                                                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static const uint32_t SENTINEL = 0x7fc0dea1u; /* a quiet NaN with a payload */
enum { GUARD = 64 };

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
static float urand(void) { return (float)(rnd() >> 8) * (2.0f / 16777216.0f) - 1.0f; }
static float irand(void) { return (float)((int)(rnd() % 7) - 3); }

static float sentinel(void) {
    float f;
    memcpy(&f, &SENTINEL, 4);
    return f;
}

typedef struct mat {
    int64_t rows, cols, ld;
    int off;    /* floats before element (0,0) inside the allocation */
    size_t n;   /* allocation in floats */
    float *h;   /* host copy of the whole allocation */
    float *d;
} mat;

/* Allocation: GUARD (+off) floats, rows x ld, GUARD floats. Everything sentinel except the
 * rows x cols window, which gets gen(). */
static void mat_make(mat *m, int64_t rows, int64_t cols, int64_t ld, int off, float (*gen)(void)) {
    m->rows = rows; m->cols = cols; m->ld = ld; m->off = GUARD + off;
    m->n = (size_t)m->off + (size_t)rows * ld + GUARD;
    m->h = malloc(m->n * sizeof(float));
    if (!m->h) { fprintf(stderr, "FAIL: host alloc\n"); exit(1); }
    const float s = sentinel();
    for (size_t i = 0; i < m->n; i++) m->h[i] = s;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) m->h[m->off + r * ld + c] = gen();
    CK(cudaMalloc((void **)&m->d, m->n * sizeof(float)));
    CK(cudaMemcpy(m->d, m->h, m->n * sizeof(float), cudaMemcpyHostToDevice));
}
static void mat_free(mat *m) { cudaFree(m->d); free(m->h); }
static float at(const mat *m, int64_t r, int64_t c) { return m->h[m->off + r * m->ld + c]; }

static int64_t pad_ld(int64_t n, int misaligned) {
    return misaligned ? n + 1 + (n % 2 == 0) /* odd: breaks 16-byte rows */
                      : ((n + 4) / 4) * 4;   /* > n and a multiple of 4 */
}

typedef struct ref {
    double *r;   /* [M*N] alpha*AB + beta*C0 */
    double *mag; /* [M*N] |alpha| sum|ab| + |beta||c0| */
} ref;

static void reference(const mat *A, const mat *B, const mat *C0, int tb, int64_t M, int64_t N,
                      int64_t K, float alpha, float beta, ref *out) {
    out->r = malloc(sizeof(double) * (size_t)(M * N));
    out->mag = malloc(sizeof(double) * (size_t)(M * N));
    if (!out->r || !out->mag) { fprintf(stderr, "FAIL: host alloc\n"); exit(1); }
    double *bt = malloc(sizeof(double) * (size_t)K);
    for (int64_t j = 0; j < N; j++) {
        for (int64_t k = 0; k < K; k++) bt[k] = tb ? at(B, j, k) : at(B, k, j);
        for (int64_t i = 0; i < M; i++) {
            const float *a = &A->h[A->off + i * A->ld];
            double s = 0, m = 0;
            for (int64_t k = 0; k < K; k++) {
                const double p = (double)a[k] * bt[k];
                s += p;
                m += fabs(p);
            }
            const double c0 = at(C0, i, j);
            out->r[i * N + j] = (double)alpha * s + (beta != 0 ? (double)beta * c0 : 0);
            out->mag[i * N + j] = fabs((double)alpha) * m + fabs((double)beta) * fabs(c0);
        }
    }
    free(bt);
}

static int g_fail, g_checks;

/* Runs one rung (rung 0 = tinfer_sgemm_auto) and checks C against the reference. */
static void check_rung(int rung, const mat *A, const mat *B, const mat *C0, int tb, int64_t M,
                       int64_t N, int64_t K, float alpha, float beta, const ref *R, int exact,
                       const char *tag) {
    mat C = *C0;
    CK(cudaMalloc((void **)&C.d, C.n * sizeof(float)));
    CK(cudaMemcpy(C.d, C0->h, C.n * sizeof(float), cudaMemcpyHostToDevice));
    float *out = malloc(C.n * sizeof(float));
    tinfer_err err;
    err.msg[0] = 0;
    tinfer_status st =
        rung ? tinfer_sgemm(rung, tb, M, N, K, alpha, A->d + A->off, A->ld, B->d + B->off, B->ld,
                            beta, C.d + C.off, C.ld, cudaStreamPerThread, &err)
             : tinfer_sgemm_auto(tb, M, N, K, alpha, A->d + A->off, A->ld, B->d + B->off, B->ld,
                                 beta, C.d + C.off, C.ld, cudaStreamPerThread, &err);
    g_checks++;
    const char *name = rung ? tinfer_sgemm_rung_name(rung) : "auto";
    if (st != TINFER_OK) {
        printf("FAIL %-16s %s %s M=%lld N=%lld K=%lld: status %d: %s\n", name, tb ? "NT" : "NN",
               tag, (long long)M, (long long)N, (long long)K, (int)st, err.msg);
        g_fail++;
        goto done;
    }
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    CK(cudaMemcpy(out, C.d, C.n * sizeof(float), cudaMemcpyDeviceToHost));
    {
        /* guard bands and gaps */
        int64_t stray = 0, first = -1;
        for (size_t i = 0; i < C.n; i++) {
            const int64_t rel = (int64_t)i - C.off;
            const int inside = rel >= 0 && rel / C.ld < M && rel % C.ld < N;
            if (!inside && memcmp(&out[i], &C0->h[i], 4) != 0) {
                if (first < 0) first = (int64_t)i;
                stray++;
            }
        }
        const double u = ldexp(1.0, -24), n = (double)K + 66, gamma = n * u / (1 - n * u);
        double num = 0, den = 0, worst = 0;
        int64_t bad = 0, bi = -1;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                const float c = out[C.off + i * C.ld + j];
                const double r = R->r[i * N + j], d = fabs((double)c - r);
                num += d * d;
                den += r * r;
                int ok;
                if (exact) ok = (double)c == r; /* r is an exact integer here */
                else ok = isfinite(c) && d <= gamma * R->mag[i * N + j];
                if (!ok) { if (bi < 0) bi = i * N + j; bad++; }
                if (R->mag[i * N + j] > 0 && d / R->mag[i * N + j] > worst) worst = d / R->mag[i * N + j];
            }
        const double rel = den > 0 ? sqrt(num / den) : sqrt(num);
        if (stray || bad) {
            g_fail++;
            printf("FAIL %-16s %s %s M=%lld N=%lld K=%lld a=%g b=%g: %lld outside writes "
                   "(first at buffer index %lld), %lld bad outputs",
                   name, tb ? "NT" : "NN", tag, (long long)M, (long long)N, (long long)K, alpha,
                   beta, (long long)stray, (long long)first, (long long)bad);
            if (bi >= 0)
                printf(" (first (%lld,%lld): got %.9g want %.9g)", (long long)(bi / N),
                       (long long)(bi % N), out[C.off + (bi / N) * C.ld + bi % N], R->r[bi]);
            printf("\n");
        } else {
            printf("ok   %-16s %s %s M=%lld N=%lld K=%lld: rel err %.2e, max err/bound %.3f\n",
                   name, tb ? "NT" : "NN", tag, (long long)M, (long long)N, (long long)K, rel,
                   exact ? 0.0 : worst / gamma);
        }
    }
done:
    free(out);
    cudaFree(C.d);
}

typedef struct shape {
    int64_t m, n, k;
    float alpha, beta;
    int misaligned;
    int exact;
} shape;

static unsigned g_rung_mask = ~0u; /* bit r: run rung r (0 = auto) */

static void run_case(const shape *s, int only_rung) {
    for (int tb = 0; tb < 2; tb++) {
        float (*gen)(void) = s->exact ? irand : urand;
        mat A, B, C;
        const int off = s->misaligned ? 1 : 0;
        mat_make(&A, s->m, s->k, pad_ld(s->k, s->misaligned), off, gen);
        if (tb) mat_make(&B, s->n, s->k, pad_ld(s->k, s->misaligned), off, gen);
        else mat_make(&B, s->k, s->n, pad_ld(s->n, s->misaligned), off, gen);
        mat_make(&C, s->m, s->n, pad_ld(s->n, s->misaligned), off, gen);
        ref R;
        reference(&A, &B, &C, tb, s->m, s->n, s->k, s->alpha, s->beta, &R);
        const char *tag = s->exact ? "exact" : s->misaligned ? "misaligned" : "random";
        for (int r = 0; r < TINFER_SGEMM_N_RUNGS; r++) {
            if (!(g_rung_mask >> r & 1u)) continue;
            check_rung(r, &A, &B, &C, tb, s->m, s->n, s->k, s->alpha, s->beta, &R, s->exact, tag);
        }
        /* Every instantiated tile configuration of rungs 8 and 10 (the tuner may pick any). */
        if (only_rung < 0 && !s->exact && !s->misaligned && s->m * s->n * s->k <= 4000000) {
            const int fail_before = g_fail;
            tinfer_sgemm_args a = {tb, (int32_t)s->m, (int32_t)s->n, (int32_t)s->k, s->alpha,
                                   s->beta, A.d + A.off, A.ld, B.d + B.off, B.ld, NULL, C.ld};
            /* fam 8: rung 8; 10: rung 10 unsplit; 11: rung 11 (automatic K slices, atomics) */
            for (int fam = 8; fam <= 11; fam += fam == 8 ? 2 : 1) {
                const int nc = fam == 8 ? tinfer_sgemm_08_n_configs() : tinfer_sgemm_10_n_configs();
                for (int c = 0; c < nc; c++) {
                    mat Cc = C;
                    CK(cudaMalloc((void **)&Cc.d, C.n * sizeof(float)));
                    CK(cudaMemcpy(Cc.d, C.h, C.n * sizeof(float), cudaMemcpyHostToDevice));
                    a.C = Cc.d + Cc.off;
                    tinfer_err err;
                    tinfer_status st =
                        fam == 8    ? tinfer_sgemm_08_autotuned(&a, c, cudaStreamPerThread, &err)
                        : fam == 10 ? tinfer_sgemm_10_pipelined(&a, c, 1, cudaStreamPerThread, &err)
                                    : tinfer_sgemm_11_splitk(&a, c, 0, cudaStreamPerThread, &err);
                    CK(cudaStreamSynchronize(cudaStreamPerThread));
                    float *out = malloc(C.n * sizeof(float));
                    CK(cudaMemcpy(out, Cc.d, C.n * sizeof(float), cudaMemcpyDeviceToHost));
                    const double u = ldexp(1.0, -24), n = (double)s->k + 66,
                                 gamma = n * u / (1 - n * u);
                    int64_t bad = st != TINFER_OK;
                    for (size_t i = 0; i < C.n; i++) {
                        const int64_t rel = (int64_t)i - C.off;
                        const int inside = rel >= 0 && rel / C.ld < s->m && rel % C.ld < s->n;
                        if (!inside) bad += memcmp(&out[i], &C.h[i], 4) != 0;
                        else {
                            const int64_t ii = rel / C.ld, jj = rel % C.ld;
                            const double d = fabs((double)out[i] - R.r[ii * s->n + jj]);
                            bad += !(d <= gamma * R.mag[ii * s->n + jj]);
                        }
                    }
                    g_checks++;
                    if (bad) {
                        g_fail++;
                        printf("FAIL rung %d cfg %d %s M=%lld N=%lld K=%lld: %lld bad elements\n",
                               fam, c, tb ? "NT" : "NN", (long long)s->m,
                               (long long)s->n, (long long)s->k, (long long)bad);
                    }
                    free(out);
                    cudaFree(Cc.d);
                }
            }
            if (g_fail == fail_before)
                printf("ok   every rung-8 and rung-10/11 config %s M=%lld N=%lld K=%lld\n",
                       tb ? "NT" : "NN", (long long)s->m, (long long)s->n, (long long)s->k);
        }
        free(R.r);
        free(R.mag);
        mat_free(&A);
        mat_free(&B);
        mat_free(&C);
    }
}

/* Bad arguments: a clear status, never a launch. */
static void check_rejects(void) {
    float *d;
    CK(cudaMalloc((void **)&d, 1024 * sizeof(float)));
    tinfer_err err;
    struct { int rung; int64_t m, n, k, lda, ldb, ldc; int null_a; } bad[] = {
        {99, 4, 4, 4, 4, 4, 4, 0}, {10, 0, 4, 4, 4, 4, 4, 0}, {10, 4, 4, 4, 3, 4, 4, 0},
        {10, 4, 4, 4, 4, 3, 4, 0}, {10, 4, 4, 4, 4, 4, 3, 0}, {10, 4, 4, 4, 4, 4, 4, 1},
        {1, 4, -1, 4, 4, 4, 4, 0}, {10, (int64_t)1 << 32, 4, 4, 4, 4, 4, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = 0;
        tinfer_status st = tinfer_sgemm(bad[i].rung, 0, bad[i].m, bad[i].n, bad[i].k, 1.f,
                                        bad[i].null_a ? NULL : d, bad[i].lda, d, bad[i].ldb, 0.f,
                                        d, bad[i].ldc, cudaStreamPerThread, &err);
        g_checks++;
        if (st != TINFER_ERR_INVALID_ARG || !err.msg[0]) {
            g_fail++;
            printf("FAIL reject case %zu: status %d, message '%s'\n", i, (int)st, err.msg);
        } else {
            printf("ok   reject case %zu: %s\n", i, err.msg);
        }
    }
    cudaFree(d);
}

int main(int argc, char **argv) {
    int quick = 0, only = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--rung") && i + 1 < argc) {
            /* comma list; the per-config sweep of rungs 8/10/11 runs when 8, 10 or 11 is in it */
            g_rung_mask = 0;
            only = 1;
            for (char *t = strtok(argv[++i], ","); t; t = strtok(NULL, ",")) {
                const int r = atoi(t);
                if (r < 0 || r >= TINFER_SGEMM_N_RUNGS) { fprintf(stderr, "bad rung %s\n", t); return 2; }
                g_rung_mask |= 1u << r;
            }
            if (g_rung_mask & ((1u << 8) | (1u << 10) | (1u << 11))) only = -1;
        } else { fprintf(stderr, "usage: test_gemm_fp32 [--quick] [--rung N[,N..]]\n"); return 2; }
    }
    tinfer_device_info info;
    tinfer_err err;
    tinfer_status st = tinfer_device_probe(0, &info, &err);
    if (st == TINFER_ERR_NO_DEVICE) {
        printf("skipped: %s\n", err.msg);
        return 77;
    }
    if (st != TINFER_OK) {
        printf("FAIL: %s\n", err.msg);
        return 1;
    }
    printf("device %s (sm_%d%d, %d SMs); seed 0x%llx\n", info.name, info.cc_major, info.cc_minor,
           info.n_sm, (unsigned long long)g_rng);
    static const shape full[] = {
        {1, 1, 1, 1.f, 0.f, 0, 0},          {7, 7, 7, 1.5f, -0.5f, 0, 0},
        {31, 33, 7, 1.f, 1.f, 0, 0},        {33, 31, 129, -0.75f, 0.f, 0, 0},
        {127, 129, 33, 1.f, 0.f, 0, 0},     {129, 127, 31, 2.f, 0.5f, 0, 0},
        {1, 1000, 129, 1.f, 0.f, 0, 0},     {1000, 1, 33, 1.f, -1.f, 0, 0},
        {7, 4092, 33, 0.5f, 0.25f, 0, 0},   {4092, 7, 31, 1.f, 0.f, 0, 0},
        {129, 33, 4092, 1.25f, -0.5f, 0, 0}, {1000, 1000, 127, 1.f, 0.f, 0, 0},
        {33, 129, 1000, 1.f, 1.f, 0, 0},    {127, 33, 129, 1.f, 0.5f, 1, 0},
        {33, 1000, 1031, -1.f, 2.f, 1, 0},  {127, 129, 1000, 2.f, -1.f, 0, 1},
        {7, 33, 4092, 2.f, -1.f, 0, 1},     {129, 31, 1031, 2.f, -1.f, 1, 1},
    };
    static const shape small[] = {
        {7, 7, 7, 1.5f, -0.5f, 0, 0},   {33, 31, 129, -0.75f, 0.f, 0, 0},
        {129, 127, 31, 2.f, 0.5f, 0, 0}, {33, 31, 1100, 1.f, 1.f, 0, 0},
        {31, 33, 37, 1.f, 0.5f, 1, 0},  {33, 31, 65, 2.f, -1.f, 0, 1},
    };
    const shape *cases = quick ? small : full;
    const size_t nc = quick ? sizeof small / sizeof small[0] : sizeof full / sizeof full[0];
    for (size_t i = 0; i < nc; i++) run_case(&cases[i], only);
    check_rejects();
    printf("%s: %d of %d checks failed\n", g_fail ? "FAIL" : "PASS", g_fail, g_checks);
    return g_fail ? 1 : 0;
}

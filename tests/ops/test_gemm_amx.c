/*
 * test_gemm_amx.c — the AMX path of tinfer_gemm_cpu (forced with tinfer_gemm_cpu_force_isa("amx"))
 * against tinfer_gemm_ref_f64 on BF16, F32, F16 and Q8_0 weights. Exits 77 (skipped) where the
 * CPU lacks AMX-BF16 or the kernel refuses the tile data permission.
 *
 * Shapes: M in {2, 3, 15, 16, 17, 33, 128, 300} (16-row tiles, 32-row blocks, ragged tails; M
 * = 128 and 300 threaded), N in {1, 5, 16, 17, 960, 1000} (32-column chunks, ragged), K in {32,
 * 33, 40, 64, 576, 999, 1000, 1536} (odd K: a BF16 pair cut in half; K not a multiple of the
 * 32-k step: zero-padded steps); Q8_0 takes the K that are multiples of 32. Each shape runs with
 * one of the 8 combinations of bias, accumulate (Y += ...) and padded leading dimensions (the
 * padding holds NaN sentinels, so reading it poisons the result), rotating, so each appears on
 * every M, N and K many times; pointers are offset by one element (unaligned) on every other case.
 *
 * Tolerance: the path rounds X to BF16 (round to nearest even, 8 significant bits: |bf16(x) - x|
 * <= u |x|, u = 2^-8), and F32 / F16 / Q8_0 weights the same way (BF16 weights are exact), then
 * sums exact BF16 products in F32. With u_w = u for rounded weights and 0 for BF16,
 *   |y - ref| <= [(1 + u)(1 + u_w) - 1 + gamma_(K+2) (1 + u)(1 + u_w)] sum_k |x_k w_k|
 *                + gamma_(K+2) (|bias| + |y_old|) + (K + 2) 2^-126
 * (the last term: the tile unit flushes denormal sums; the data here never comes near them).
 * The first term is 2^-8 (BF16 weights) or ~2^-7 of the magnitude: a kernel that dropped a
 * k-step, mixed up two columns or lost the bias would be off by far more. ref is computed in
 * double on the weights as stored (Q8_0 dequantized exactly) and the unrounded X.
 * Exact cases: small integers (exact in BF16), sums below 2^24: bit-for-bit equal to the reference.
 * Rounding pinned: with W = identity-like (K = 1, W = 1), Y = X rounded to BF16, which must equal
 * round-to-nearest-even (tinfer_f32_to_bf16) exactly, ties included; likewise F32 and Q8_0
 * weights against X = e_0.
 * Usage: test_gemm_amx [seed]. Exit 0 ok, 1 on failure (seed and case printed), 77 skipped.
 */
#include "gemm/cpu/gemm_cpu.h"
#include "test_common.h"

#include <math.h>
#include <stdbool.h>

#define SKIP 77
#define UBF16 0x1p-8

static uint64_t g_seed = 20250903;
static long g_cases;
static double g_worst; /* largest err / tol among the elements whose full bound was computed */

static size_t w_size(tinfer_dtype dt) { return dt == TINFER_DTYPE_Q8_0 ? 1 : tinfer_dtype_size(dt); }

static void w_store(void *W, tinfer_dtype dt, int64_t i, float v) {
    if (dt == TINFER_DTYPE_F32) ((float *)W)[i] = v;
    else if (dt == TINFER_DTYPE_BF16) ((uint16_t *)W)[i] = tinfer_f32_to_bf16(v);
    else if (dt == TINFER_DTYPE_F16) ((uint16_t *)W)[i] = tinfer_f32_to_f16(v);
    else ((int8_t *)W)[i] = (int8_t)v; /* Q8_0: v is the integer q */
}

static double w_at(const void *W, const uint16_t *S, tinfer_dtype dt, int64_t i) {
    if (dt == TINFER_DTYPE_F32) return ((const float *)W)[i];
    if (dt == TINFER_DTYPE_BF16) return tinfer_bf16_to_f32(((const uint16_t *)W)[i]);
    if (dt == TINFER_DTYPE_F16) return tinfer_f16_to_f32(((const uint16_t *)W)[i]);
    return (double)((const int8_t *)W)[i] * tinfer_f16_to_f32(S[i / 32]);
}

static int run_case(tinfer_dtype dt, int64_t M, int64_t N, int64_t K, int variant, bool exact) {
    g_cases++;
    bool use_bias = variant & 1, accumulate = variant & 2, pad = variant & 4;
    int64_t off = (g_cases & 1) && dt != TINFER_DTYPE_Q8_0 ? 1 : 0;
    int64_t ldx = K + (pad ? 3 : 0), ldy = N + (pad ? 2 : 0);
    int64_t ldw = K + (pad ? (dt == TINFER_DTYPE_Q8_0 ? 32 : 5) : 0);
    size_t ws = w_size(dt);
    float *xbuf = xmalloc(sizeof(float) * (size_t)(off + M * ldx));
    unsigned char *wbuf = xmalloc(ws * (size_t)(off + N * ldw));
    uint16_t *S = dt == TINFER_DTYPE_Q8_0 ? xmalloc(sizeof(uint16_t) * (size_t)(N * ldw / 32)) : NULL;
    float *bbuf = xmalloc(sizeof(float) * (size_t)(off + N));
    size_t ylen = (size_t)(GUARD + off + M * ldy + GUARD);
    float *ybuf = xmalloc(sizeof(float) * ylen), *yold = xmalloc(sizeof(float) * (size_t)(M * N));
    double *ref = xmalloc(sizeof(double) * (size_t)(M * N));
    float *X = xbuf + off, *bias = use_bias ? bbuf + off : NULL, *Y = ybuf + GUARD + off;
    void *W = wbuf + off * ws;

    for (int64_t i = 0; i < off + M * ldx; i++) xbuf[i] = sentinel();
    if (dt == TINFER_DTYPE_F32)
        for (int64_t i = 0; i < off + N * ldw; i++) ((float *)(void *)wbuf)[i] = sentinel();
    else if (dt == TINFER_DTYPE_Q8_0)
        memset(wbuf, 0x7f, (size_t)(N * ldw)); /* padding: large weights under a NaN scale */
    else
        for (int64_t i = 0; i < off + N * ldw; i++) ((uint16_t *)(void *)wbuf)[i] = 0x7fc1;
    for (size_t i = 0; i < ylen; i++) ybuf[i] = sentinel();
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++)
            X[m * ldx + k] = exact ? (float)rng_int(-3, 3) : rng_uniform(-1.0f, 1.0f);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            float v = dt == TINFER_DTYPE_Q8_0 ? (float)rng_int(exact ? -3 : -128, exact ? 3 : 127)
                      : exact                 ? (float)rng_int(-3, 3)
                                              : rng_uniform(-1.0f, 1.0f);
            if (dt == TINFER_DTYPE_F16 && fabsf(v) < 0x1p-10f) v = 0x1p-10f; /* no F16 subnormals */
            w_store(W, dt, n * ldw + k, v);
        }
    if (S)
        for (int64_t i = 0; i < N * ldw / 32; i++)
            S[i] = (i % (ldw / 32)) >= K / 32 ? 0x7e01 /* padding: NaN */
                   : exact ? 0x3c00 /* 1.0 */
                           : tinfer_f32_to_f16(rng_uniform(0.0005f, 0.05f) * (rng_int(0, 1) ? 1 : -1));
    for (int64_t n = 0; n < N; n++) bbuf[off + n] = exact ? (float)rng_int(-8, 8) : rng_uniform(-1, 1);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            float v = exact ? (float)rng_int(-8, 8) : rng_uniform(-1.0f, 1.0f);
            yold[m * N + n] = v;
            if (accumulate) Y[m * ldy + n] = v;
        }

    tinfer_gemm_cpu(M, N, K, X, ldx, W, dt, S, ldw, bias, Y, ldy, accumulate);
    tinfer_gemm_ref_f64(M, N, K, X, ldx, W, dt, S, ldw, bias, ref, N);

    double uw = dt == TINFER_DTYPE_BF16 ? 0.0 : UBF16, g = gamma_n((double)K + 2.0);
    double c_prod = (1 + UBF16) * (1 + uw) - 1 + g * (1 + UBF16) * (1 + uw);
    double c_abs = (double)(K + 2) * 0x1p-126;
    int rc = 0;
    for (int64_t m = 0; m < M && !rc; m++)
        for (int64_t n = 0; n < N; n++) {
            double r = ref[m * N + n] + (accumulate ? (double)yold[m * N + n] : 0.0);
            double y = (double)Y[m * ldy + n], err = fabs(y - r);
            if (exact) {
                float rf = (float)r;
                if (memcmp(&rf, &Y[m * ldy + n], 4) == 0) continue;
            } else {
                /* sum |x w| + |bias| + |y_old| >= |r|: the cheap test first, the sum only when
                 * it does not settle the case (cancellation), or for 1 element in 61 to report
                 * how much of the bound the errors use */
                bool sample = (m * N + n) % 61 == 0;
                if (!sample && err <= c_prod * fabs(r) + c_abs) continue;
                double mag = 0.0, extra = 0.0;
                for (int64_t k = 0; k < K; k++)
                    mag += fabs((double)X[m * ldx + k] * w_at(W, S, dt, n * ldw + k));
                if (bias) extra += fabs((double)bias[n]);
                if (accumulate) extra += fabs((double)yold[m * N + n]);
                double tol = c_prod * mag + g * extra + c_abs;
                if (err <= tol) {
                    if (err / tol > g_worst) g_worst = err / tol;
                    continue;
                }
            }
            fprintf(stderr,
                    "FAIL%s seed=%llu w=%s M=%lld N=%lld K=%lld bias=%d acc=%d pad=%d off=%d: "
                    "first bad (m=%lld, n=%lld) y=%.9g ref=%.17g\n",
                    exact ? " exact" : "", (unsigned long long)g_seed, tinfer_dtype_name(dt),
                    (long long)M, (long long)N, (long long)K, use_bias, accumulate, pad, (int)off,
                    (long long)m, (long long)n, y, r);
            rc = 1;
            break;
        }
    for (size_t i = 0; i < ylen && !rc; i++) {
        int64_t rel = (int64_t)i - GUARD - off;
        bool inside = rel >= 0 && rel < M * ldy && rel % ldy < N;
        if (!inside && !is_sentinel(ybuf[i])) {
            fprintf(stderr, "FAIL guard seed=%llu w=%s M=%lld N=%lld K=%lld: element %lld "
                            "relative to Y[0] overwritten (%g)\n",
                    (unsigned long long)g_seed, tinfer_dtype_name(dt), (long long)M, (long long)N,
                    (long long)K, (long long)rel, (double)ybuf[i]);
            rc = 1;
        }
    }
    free(xbuf);
    free(wbuf);
    free(S);
    free(bbuf);
    free(ybuf);
    free(yold);
    free(ref);
    return rc;
}

/* X rounded to BF16 by round to nearest even: Y = X W with K = 1, W = 1 (and the converse for
 * F32 / Q8_0 weights with X = e_0): bit-exact against tinfer_f32_to_bf16. */
static int check_rounding(void) {
    enum { R = 64 };
    float X[R * 32], Y[R * R];
    uint16_t one = tinfer_f32_to_bf16(1.0f);
    for (int m = 0; m < R; m++) {
        uint32_t u = (uint32_t)rng_u64();
        u = (u & 0x807fffffu) | (uint32_t)rng_int(100, 150) << 23; /* normal, |x| ~ 2^-27..2^23 */
        if (m % 4 == 0) u = (u & 0xffff0000u) | 0x8000u; /* a tie: even neighbour wins */
        memcpy(&X[m], &u, 4);
    }
    tinfer_gemm_cpu(R, 1, 1, X, 1, &one, TINFER_DTYPE_BF16, NULL, 1, NULL, Y, 1, false);
    for (int m = 0; m < R; m++)
        if (Y[m] != tinfer_bf16_to_f32(tinfer_f32_to_bf16(X[m]))) {
            uint32_t u;
            memcpy(&u, &X[m], 4);
            fprintf(stderr, "FAIL rounding of x = %.9g (0x%08x): %.9g, want %.9g\n", (double)X[m],
                    (unsigned)u, (double)Y[m],
                    (double)tinfer_bf16_to_f32(tinfer_f32_to_bf16(X[m])));
            return 1;
        }
    /* weights: F32 rows of K = 1 against X = 1 on 2 rows; Q8_0 rows of K = 32 against e_0 */
    float Wf[R], X2[2 * 32] = {0};
    int8_t Wq[R * 32];
    uint16_t Sq[R];
    X2[0] = X2[32] = 1.0f;
    for (int n = 0; n < R; n++) {
        Wf[n] = X[n];
        for (int k = 0; k < 32; k++) Wq[n * 32 + k] = (int8_t)rng_int(-128, 127);
        Sq[n] = tinfer_f32_to_f16(rng_uniform(0.0005f, 0.05f));
    }
    tinfer_gemm_cpu(2, R, 1, X2, 32, Wf, TINFER_DTYPE_F32, NULL, 1, NULL, Y, R, false);
    for (int n = 0; n < R; n++)
        if (Y[n] != tinfer_bf16_to_f32(tinfer_f32_to_bf16(Wf[n])) || Y[R + n] != Y[n]) {
            fprintf(stderr, "FAIL rounding of the F32 weight %.9g: %.9g\n", (double)Wf[n], (double)Y[n]);
            return 1;
        }
    tinfer_gemm_cpu(2, R, 32, X2, 32, Wq, TINFER_DTYPE_Q8_0, Sq, 32, NULL, Y, R, false);
    for (int n = 0; n < R; n++) {
        float w = (float)Wq[n * 32] * tinfer_f16_to_f32(Sq[n]); /* exact in F32 */
        if (Y[n] != tinfer_bf16_to_f32(tinfer_f32_to_bf16(w))) {
            fprintf(stderr, "FAIL rounding of the Q8_0 weight %.9g: %.9g\n", (double)w, (double)Y[n]);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1) g_seed = strtoull(argv[1], NULL, 10);
    g_rng = g_seed;
    if (tinfer_gemm_cpu_force_isa("amx") != 0) {
        printf("test_gemm_amx: skipped, this CPU lacks AMX-BF16 or the kernel refuses the tile "
               "data (automatic path %s)\n", tinfer_gemm_cpu_isa());
        return SKIP;
    }
    printf("test_gemm_amx: seed %llu\n", (unsigned long long)g_seed);
    if (strcmp(tinfer_gemm_cpu_isa(), "amx") || strcmp(tinfer_gemm_cpu_kernel(2), "amx") ||
        strcmp(tinfer_gemm_cpu_kernel(1), "avx512vnni")) {
        fprintf(stderr, "FAIL: forced amx but the path reports %s / %s (M = 2) / %s (M = 1)\n",
                tinfer_gemm_cpu_isa(), tinfer_gemm_cpu_kernel(2), tinfer_gemm_cpu_kernel(1));
        return 1;
    }
    int fails = check_rounding();
    printf("  rounding of X and of F32 / Q8_0 weights to BF16: %s\n", fails ? "FAILED" : "ok");
    const int64_t Ms[] = {2, 3, 15, 16, 17, 33, 128, 300}, Ns[] = {1, 5, 16, 17, 960, 1000};
    const int64_t Ks[] = {32, 33, 40, 64, 576, 999, 1000, 1536};
    const tinfer_dtype dts[] = {TINFER_DTYPE_BF16, TINFER_DTYPE_F32, TINFER_DTYPE_Q8_0,
                                TINFER_DTYPE_F16};
    int variant = 0;
    for (int d = 0; d < 4 && !fails; d++) {
        long before = g_cases;
        g_worst = 0;
        for (int a = 0; a < 8; a++)
            for (int b = 0; b < 6; b++)
                for (int c = 0; c < 8; c++) {
                    if (dts[d] == TINFER_DTYPE_Q8_0 && Ks[c] % 32) continue;
                    /* F16 shares the pack and tiles with F32: the smaller shapes only */
                    if (dts[d] == TINFER_DTYPE_F16 && Ms[a] * Ns[b] * Ks[c] > 2000000) continue;
                    fails += run_case(dts[d], Ms[a], Ns[b], Ks[c], variant++ % 8, false);
                }
        const int64_t EX[][3] = {{2, 1, 1}, {17, 33, 999}, {128, 960, 576}, {300, 17, 1536},
                                 {33, 1000, 40}};
        for (int e = 0; e < 5; e++) {
            if (dts[d] == TINFER_DTYPE_Q8_0 && EX[e][2] % 32) continue;
            fails += run_case(dts[d], EX[e][0], EX[e][1], EX[e][2], 0, true);
            fails += run_case(dts[d], EX[e][0], EX[e][1], EX[e][2], 7, true);
        }
        printf("  %-5s: %ld cases, %s, largest error %.2f of its bound (sampled)\n",
               tinfer_dtype_name(dts[d]), g_cases - before, fails ? "FAILED" : "ok", g_worst);
    }
    tinfer_gemm_cpu_force_isa(NULL);
    return fails ? 1 : 0;
}

/*
 * test_gemm_q8.c — the Q8_0 weight format and the CPU GEMM on Q8_0 weights.
 *
 *   f32 -> f16: every finite half reads back to itself; the midpoint between two neighbouring
 *     halves rounds to the even one and one F32 step either side of it to the nearer one;
 *     overflow, NaN and the subnormal range (checked against the same midpoint rule).
 *   round trip (base/q8_0.h): random blocks over 40 binades (scales from F16 subnormals to
 *     ~1e3): every element within d/2 + |w| 2^-24 of d q (d/2 from rounding to the integer grid;
 *     the 2^-24 from w / d being rounded to F32 before that); with a normal F16 scale the
 *     largest element maps to +-127 (+-126 allowed), and -128 is never produced; an all-zero block gives d = 0 and
 *     exact zeros; NaN, infinity and a scale past F16 are refused with nothing written.
 *   GEMM: tinfer_gemm_cpu on every path this CPU has (forced in turn; the others are reported
 *     as skipped) against tinfer_gemm_ref_f64 on the dequantized weights, K in {32, 64, 576,
 *     1536, 4096}, N in {1, 3, 5, 17, 1000} (rows not a multiple of the 4-row group), M = 1 (the
 *     int8 GEMV) and M = 2, 7 (packed, dequantized), bias and accumulate, weights with -128.
 *     Tolerance, M = 1: the activations are quantized per 32-block with step xd = amax / 127,
 *     each within 0.50004 xd of its value (gemm/cpu/gemm_cpu_q8.c derives it), so
 *       |y - ref| <= sum_b 0.50004 xd_b sum_{k in b} |w_k|
 *                   + gamma(K/32 + 40) sum_k |w_k| (|x_k| + xd_b) + gamma(3) (|bias| + |y_old|)
 *     the second term the F32 rounding of the per-block scaling (3 roundings) and of the sum of
 *     K/32 block terms in any order (Higham's gamma_n), bounding each term by |w| |xd q|
 *     <= |w| (|x| + xd). M >= 2: the weights are exact in F32, so the plain GEMM bound
 *     gamma(K + 2) sum |x w| of test_gemm_cpu.c applies.
 *     The bound above is loose (a few 0.1% of the magnitude), so M = 1 is also held to the spec
 *     of the quantization itself: the test quantizes x the documented way (xd = amax / 127 and
 *     rint(x * (127 / amax)) in F32) and requires the GEMV within gamma(K/32 + 40) sum_k
 *     |d_w q_w,k xd xq_k| of sum_b d_w xd sum q_w xq computed in double (the kernels' lane
 *     partial sums are bounded by the sum of magnitudes, not by the total): only F32 rounding
 *     is left, so a wrong scale, block or rounding shows.
 *     NaN in x: the GEMV's outputs are NaN (never a number).
 * Usage: test_gemm_q8 [seed].
 */
#include "base/q8_0.h"
#include "gemm/cpu/gemm_cpu.h"
#include "test_common.h"

#include <math.h>
#include <stdbool.h>

static int g_fail;
#define EXPECT(c, ...)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            if (g_fail++ < 10) {                                                                   \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fprintf(stderr, "\n");                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static float fbits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_f16(void) {
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7c00u) == 0x7c00u) continue;
        float f = tinfer_f16_to_f32((uint16_t)h);
        EXPECT(tinfer_f32_to_f16(f) == h, "half 0x%04x does not read back", h);
        if ((h & 0x7fffu) == 0x7bffu) continue; /* next is infinity */
        float g = tinfer_f16_to_f32((uint16_t)(h + 1)); /* neighbour away from zero */
        float mid = (float)(((double)f + (double)g) / 2.0); /* exact: 12 significant bits */
        uint32_t mu;
        memcpy(&mu, &mid, 4);
        uint16_t even = (h & 1u) ? (uint16_t)(h + 1) : (uint16_t)h;
        EXPECT(tinfer_f32_to_f16(mid) == even, "midpoint above 0x%04x -> 0x%04x, want 0x%04x", h,
               tinfer_f32_to_f16(mid), even);
        EXPECT(tinfer_f32_to_f16(fbits(mu + 1)) == (uint16_t)(h + 1), "above midpoint of 0x%04x", h);
        EXPECT(tinfer_f32_to_f16(fbits(mu - 1)) == (uint16_t)h, "below midpoint of 0x%04x", h);
    }
    EXPECT(tinfer_f32_to_f16(65520.0f) == 0x7c00, "65520 must round to infinity");
    EXPECT(tinfer_f32_to_f16(65519.0f) == 0x7bff, "65519 must round to 65504");
    EXPECT(tinfer_f32_to_f16(-1e30f) == 0xfc00, "-1e30 must be -infinity");
    EXPECT((tinfer_f32_to_f16(NAN) & 0x7fffu) > 0x7c00u, "NaN must stay NaN");
    EXPECT(tinfer_f32_to_f16(ldexpf(1.0f, -25)) == 0, "2^-25 ties to 0");
    EXPECT(tinfer_f32_to_f16(ldexpf(1.5f, -25)) == 1, "1.5 2^-25 rounds up to 2^-24");
    EXPECT(tinfer_f32_to_f16(-ldexpf(1.0f, -30)) == 0x8000, "tiny negative is -0");
}

static void test_round_trip(void) {
    float w[32], back[32];
    int8_t q[32];
    uint16_t d = 0;
    for (int it = 0; it < 20000; it++) {
        float mag = ldexpf(1.0f, rng_int(-30, 10));
        for (int i = 0; i < 32; i++) w[i] = rng_uniform(-1.0f, 1.0f) * mag;
        if (it % 7 == 0) w[rng_int(0, 31)] = 0.0f;
        bool ok = tinfer_q8_0_quantize_block(w, q, &d);
        EXPECT(ok, "block of magnitude %g refused", (double)mag);
        if (!ok) continue;
        tinfer_q8_0_dequantize_block(q, d, back);
        double ds = tinfer_f16_to_f32(d), amax = 0;
        int qmax = 0;
        for (int i = 0; i < 32; i++) {
            double err = fabs((double)w[i] - (double)back[i]);
            EXPECT(err <= ds / 2 + fabs(w[i]) * 0x1p-24, "it %d elem %d: |%g - %g| > d/2 (d %g)",
                   it, i, (double)w[i], (double)back[i], ds);
            EXPECT(q[i] != -128, "-128 produced");
            if (fabs(w[i]) > amax) amax = fabs(w[i]);
            if (abs(q[i]) > qmax) qmax = abs(q[i]);
        }
        EXPECT(amax == 0 || ds < 0x1p-14 || qmax >= 126, "it %d: largest |q| %d (d %g, amax %g)", it, qmax, ds, amax);
    }
    for (int i = 0; i < 32; i++) w[i] = (i & 1) ? -0.0f : 0.0f;
    EXPECT(tinfer_q8_0_quantize_block(w, q, &d) && d == 0, "zero block: d must be 0");
    tinfer_q8_0_dequantize_block(q, d, back);
    for (int i = 0; i < 32; i++) EXPECT(q[i] == 0 && back[i] == 0.0f, "zero block elem %d", i);

    const float bad[] = {NAN, INFINITY, -INFINITY, 1e10f};
    for (int c = 0; c < 4; c++) {
        for (int i = 0; i < 32; i++) w[i] = 0.5f;
        w[5] = bad[c];
        memset(q, 0x55, sizeof q);
        d = 0x1234;
        EXPECT(!tinfer_q8_0_quantize_block(w, q, &d), "value %g accepted", (double)bad[c]);
        EXPECT(d == 0x1234 && q[0] == 0x55, "refused block %d wrote its output", c);
    }
}

typedef struct qmat {
    int8_t *q;
    uint16_t *s;
} qmat;

static qmat rand_qmat(int64_t N, int64_t K) {
    qmat m = {xmalloc((size_t)(N * K)), xmalloc(sizeof(uint16_t) * (size_t)(N * K / 32))};
    for (int64_t i = 0; i < N * K; i++) m.q[i] = (int8_t)rng_int(-128, 127);
    for (int64_t i = 0; i < N * K / 32; i++)
        m.s[i] = tinfer_f32_to_f16(rng_uniform(0.0005f, 0.05f) * (rng_int(0, 1) ? 1.0f : -1.0f));
    return m;
}

static int run_case(const char *isa, int64_t M, int64_t N, int64_t K, bool use_bias,
                    bool accumulate) {
    qmat W = rand_qmat(N, K);
    float *X = xmalloc(sizeof(float) * (size_t)(M * K));
    float *bias = xmalloc(sizeof(float) * (size_t)N);
    float *Y = xmalloc(sizeof(float) * (size_t)(M * N + 2 * GUARD));
    float *yold = xmalloc(sizeof(float) * (size_t)(M * N));
    double *ref = xmalloc(sizeof(double) * (size_t)(M * N));
    for (int64_t i = 0; i < M * K; i++) X[i] = rng_uniform(-1.0f, 1.0f);
    /* a zero block, and a block with one outlier (a coarse step for the other 31) */
    if (K >= 64) {
        for (int i = 0; i < 32; i++) X[i] = 0.0f;
        X[32 + 3] = 40.0f;
    }
    for (int64_t n = 0; n < N; n++) bias[n] = rng_uniform(-1.0f, 1.0f);
    for (int64_t i = 0; i < M * N + 2 * GUARD; i++) Y[i] = sentinel();
    float *y = Y + GUARD;
    for (int64_t i = 0; i < M * N; i++) {
        yold[i] = rng_uniform(-1.0f, 1.0f);
        if (accumulate) y[i] = yold[i];
    }
    tinfer_gemm_cpu(M, N, K, X, K, W.q, TINFER_DTYPE_Q8_0, W.s, K, use_bias ? bias : NULL, y, N,
                    accumulate);
    tinfer_gemm_ref_f64(M, N, K, X, K, W.q, TINFER_DTYPE_Q8_0, W.s, K, use_bias ? bias : NULL,
                        ref, N);
    int bad = 0;
    double worst = 0;
    for (int64_t m = 0; m < M; m++) {
        const float *x = X + m * K;
        for (int64_t n = 0; n < N; n++) {
            double tol_q = 0, mag = 0, absxw = 0, spec = 0, spec_mag = 0;
            for (int64_t b = 0; b < K / 32; b++) {
                float famax = 0;
                for (int i = 0; i < 32; i++) famax = fmaxf(famax, fabsf(x[32 * b + i]));
                double xd = famax / 127.0, sw = 0, sm = 0;
                float fxd = famax / 127.0f, fid = famax > 0 ? 127.0f / famax : 0.0f;
                double dw = tinfer_f16_to_f32(W.s[(n * K + 32 * b) / 32]), isum = 0, iabs = 0;
                for (int i = 0; i < 32; i++) {
                    int64_t k = 32 * b + i;
                    double wv = (double)W.q[n * K + k] * dw;
                    sw += fabs(wv);
                    sm += fabs(wv) * (fabs(x[k]) + xd);
                    absxw += fabs(wv * x[k]);
                    double p = (double)W.q[n * K + k] * (double)rintf(x[k] * fid);
                    isum += p;
                    iabs += fabs(p);
                }
                tol_q += 0.50004 * xd * sw;
                mag += sm;
                spec += dw * (double)fxd * isum;
                spec_mag += fabs(dw * (double)fxd) * iabs; /* partial sums may cancel */
            }
            double extra = (use_bias ? fabs(bias[n]) : 0) + (accumulate ? fabs(yold[m * N + n]) : 0);
            double tol = M == 1 ? tol_q + gamma_n((double)K / 32 + 40) * mag + gamma_n(3) * extra
                                : gamma_n((double)K + 2) * (absxw + extra);
            double r = ref[m * N + n] + (accumulate ? yold[m * N + n] : 0);
            double err = fabs((double)y[m * N + n] - r);
            if (M == 1) {
                double es = fabs((double)y[m * N + n] - spec - (accumulate ? yold[m * N + n] : 0) -
                                 (use_bias ? bias[n] : 0));
                double ts = gamma_n((double)K / 32 + 40) * (spec_mag + extra);
                if (!(es <= ts) && bad++ < 3)
                    fprintf(stderr, "FAIL %s M=1 N=%lld K=%lld at row %lld: %.9g, the quantized "
                                    "spec gives %.9g (err %.3g > %.3g)\n",
                            isa, (long long)N, (long long)K, (long long)n, (double)y[n], spec, es,
                            ts);
            }
            if (!(err <= tol) && bad++ < 3)
                fprintf(stderr, "FAIL %s M=%lld N=%lld K=%lld bias=%d acc=%d at (%lld, %lld): "
                                "%.9g vs %.9g, err %.3g > tol %.3g\n",
                        isa, (long long)M, (long long)N, (long long)K, use_bias, accumulate,
                        (long long)m, (long long)n, (double)y[m * N + n], r, err, tol);
            if (tol > 0 && err / tol > worst) worst = err / tol;
        }
    }
    for (int i = 0; i < GUARD; i++)
        if (!is_sentinel(Y[i]) || !is_sentinel(Y[GUARD + M * N + i])) {
            fprintf(stderr, "FAIL %s: guard %d overwritten\n", isa, i);
            bad++;
            break;
        }
    if (M == 1) { /* a NaN in x reaches every output */
        X[K / 2] = NAN;
        tinfer_gemm_cpu(1, N, K, X, K, W.q, TINFER_DTYPE_Q8_0, W.s, K, NULL, y, N, false);
        for (int64_t n = 0; n < N; n++)
            if (!isnan(y[n])) {
                fprintf(stderr, "FAIL %s K=%lld: NaN in x gave y[%lld] = %g\n", isa, (long long)K,
                        (long long)n, (double)y[n]);
                bad++;
                break;
            }
    }
    free(W.q);
    free(W.s);
    free(X);
    free(bias);
    free(Y);
    free(yold);
    free(ref);
    if (!bad && worst > 0.5)
        printf("    note: %s M=%lld N=%lld K=%lld used %.0f%% of the tolerance\n", isa,
               (long long)M, (long long)N, (long long)K, 100 * worst);
    return bad;
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 20250733;
    g_rng = seed;
    printf("test_gemm_q8: seed %llu, automatic path %s\n", (unsigned long long)seed,
           tinfer_gemm_cpu_isa());
    test_f16();
    test_round_trip();
    printf("  f16 conversion and Q8_0 round trip: %s\n", g_fail ? "FAILED" : "ok");
    const char *isas[] = {"scalar", "avx2", "avx512", "avx512vnni"};
    const int64_t Ks[] = {32, 64, 576, 1536, 4096}, Ns[] = {1, 3, 5, 17, 1000}, Ms[] = {1, 2, 7};
    int fails = g_fail, tested = 0;
    for (int i = 0; i < 4; i++) {
        if (tinfer_gemm_cpu_force_isa(isas[i]) != 0) {
            printf("  %-10s: skipped, this CPU lacks the instructions\n", isas[i]);
            continue;
        }
        int f = 0, cases = 0;
        for (int a = 0; a < 5; a++)
            for (int b = 0; b < 5; b++)
                for (int c = 0; c < 3; c++) {
                    bool bias = (a + b + c) % 2, acc = (a + b + c) % 3 == 0;
                    f += run_case(isas[i], Ms[c], Ns[b], Ks[a], bias, acc);
                    cases++;
                }
        tested++;
        printf("  %-10s: %d cases, %s\n", isas[i], cases, f ? "FAILED" : "ok");
        fails += f;
    }
    tinfer_gemm_cpu_force_isa(NULL);
    return fails || tested < 1 ? 1 : 0;
}

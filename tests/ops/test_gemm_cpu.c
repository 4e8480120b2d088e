/*
 * test_gemm_cpu.c — tinfer_gemm_cpu against tinfer_gemm_ref_f64 (double accumulation) on every
 * SIMD path this CPU supports (forced with tinfer_gemm_cpu_force_isa), F32 / BF16 / F16 weights.
 *
 * Shapes: M, N, K from {1,2,3,7,17,31,33,64,65,127,129,300} (M = 1 is the GEMV path, M = 128 and
 * 300 span many register tiles; K not a multiple of 8/16; N ragged against the 16/32 panels),
 * plus the SmolLM2 QKV shape at M = 128 and a tall M = 1 GEMV, both large enough to run threaded.
 * Variants: bias, accumulate (Y += ...), leading dimensions larger than the row (the padding
 * holds NaN sentinels, so reading it poisons the result), pointers offset by one element from the
 * allocation (unaligned for every vector width).
 * Checks:
 *   random: |y - ref| / (sum_k |x_k w_k| + |bias| + |y_old|) <= gamma_{K+2}. Any F32 evaluation
 *     of a K-term dot product plus the bias and old-Y additions, in any order and with or without
 *     FMA, obeys this (Higham Lemma 3.1 / eq. 3.5); x*w of a BF16 or F16 weight is formed in F32
 *     like any other product. The double reference's own error (~K 2^-53) is far below it.
 *     Normalized error ||y - ref||^2 / ||ref||^2 is printed (worst case) for information.
 *   exact: integers in [-3, 3] (exact in BF16/F16), sums below 2^24: every path must produce the
 *     exact result, bit for bit.
 *   guards: GUARD sentinel floats before and after Y and the row padding stay untouched.
 * Usage: test_gemm_cpu [seed]. Exit 0 on success, 1 on the first failure (seed and index printed).
 */
#include "gemm/cpu/gemm_cpu.h"
#include "test_common.h"

#include <math.h>
#include <stdbool.h>

static uint64_t g_seed = 20250601;
static double g_worst_nmse;
static long g_cases;

static uint16_t nan16(tinfer_dtype dt) { return dt == TINFER_DTYPE_BF16 ? 0x7fc1 : 0x7e01; }

static void w_store(void *W, tinfer_dtype dt, int64_t i, float v) {
    if (dt == TINFER_DTYPE_F32) ((float *)W)[i] = v;
    else if (dt == TINFER_DTYPE_BF16) ((uint16_t *)W)[i] = tinfer_f32_to_bf16(v);
    else { /* F16: the test values are small integers or in [-1, 1]; round via the half grid */
        /* Quantize to 11 significant bits first, then encode exactly. */
        int e;
        float m = frexpf(v, &e);
        float q = ldexpf(rintf(ldexpf(m, 11)), e - 11);
        /* encode q (normal range only: |q| in [2^-14, 65504] or 0) */
        uint16_t h = 0;
        if (q != 0.0f) {
            uint32_t u;
            memcpy(&u, &q, 4);
            uint32_t sign = (u >> 16) & 0x8000u;
            int32_t ex = (int32_t)((u >> 23) & 0xff) - 127 + 15;
            if (ex <= 0) { /* below half's normal range: store 0 (tests keep values away from it) */
                h = (uint16_t)sign;
            } else {
                h = (uint16_t)(sign | ((uint32_t)ex << 10) | ((u >> 13) & 0x3ffu));
            }
        }
        ((uint16_t *)W)[i] = h;
    }
}

static float w_load(const void *W, tinfer_dtype dt, int64_t i) {
    if (dt == TINFER_DTYPE_F32) return ((const float *)W)[i];
    if (dt == TINFER_DTYPE_BF16) return tinfer_bf16_to_f32(((const uint16_t *)W)[i]);
    return tinfer_f16_to_f32(((const uint16_t *)W)[i]);
}

/* One GEMM call checked against the reference. Returns 0 on success. */
static int run_case(const char *isa, tinfer_dtype dt, int64_t M, int64_t N, int64_t K, bool use_bias,
                    bool accumulate, bool pad, bool offset, bool exact) {
    g_cases++;
    int64_t ldx = K + (pad ? 3 : 0), ldw = K + (pad ? 5 : 0), ldy = N + (pad ? 2 : 0);
    int64_t off = offset ? 1 : 0;
    size_t wsz = tinfer_dtype_size(dt);
    float *xbuf = xmalloc(sizeof(float) * (size_t)(off + M * ldx));
    unsigned char *wbuf = xmalloc(wsz * (size_t)(off + N * ldw));
    float *bbuf = xmalloc(sizeof(float) * (size_t)(off + N));
    size_t ylen = (size_t)(GUARD + off + M * ldy + GUARD);
    float *ybuf = xmalloc(sizeof(float) * ylen);
    float *yold = xmalloc(sizeof(float) * (size_t)(M * N));
    double *ref = xmalloc(sizeof(double) * (size_t)(M * N));
    float *X = xbuf + off, *bias = use_bias ? bbuf + off : NULL, *Y = ybuf + GUARD + off;
    void *W = wbuf + off * wsz;

    for (int64_t i = 0; i < off + M * ldx; i++) xbuf[i] = sentinel();
    for (int64_t i = 0; i < off + N * ldw; i++) {
        if (dt == TINFER_DTYPE_F32) ((float *)(void *)wbuf)[i] = sentinel();
        else ((uint16_t *)(void *)wbuf)[i] = nan16(dt);
    }
    for (size_t i = 0; i < ylen; i++) ybuf[i] = sentinel();
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++)
            X[m * ldx + k] = exact ? (float)rng_int(-3, 3) : rng_uniform(-1.0f, 1.0f);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            /* Random weights stay >= 2^-10 in magnitude so F16 never lands in its subnormals. */
            float v = exact ? (float)rng_int(-3, 3) : rng_uniform(-1.0f, 1.0f);
            if (!exact && fabsf(v) < 0x1p-10f) v = 0x1p-10f;
            w_store(W, dt, n * ldw + k, v);
        }
    for (int64_t n = 0; n < N; n++) bbuf[off + n] = exact ? (float)rng_int(-8, 8) : rng_uniform(-1, 1);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            float v = exact ? (float)rng_int(-8, 8) : rng_uniform(-1.0f, 1.0f);
            yold[m * N + n] = v;
            if (accumulate) Y[m * ldy + n] = v;
        }

    tinfer_gemm_cpu(M, N, K, X, ldx, W, dt, NULL, ldw, bias, Y, ldy, accumulate);
    tinfer_gemm_ref_f64(M, N, K, X, ldx, W, dt, NULL, ldw, bias, ref, N);

    int rc = 0;
    double tol = gamma_n((double)K + 2.0), num = 0.0, den = 0.0;
    for (int64_t m = 0; m < M && !rc; m++)
        for (int64_t n = 0; n < N; n++) {
            double r = ref[m * N + n] + (accumulate ? (double)yold[m * N + n] : 0.0);
            double y = (double)Y[m * ldy + n];
            num += (y - r) * (y - r);
            den += r * r;
            if (exact) {
                float rf = (float)r;
                if (memcmp(&rf, &Y[m * ldy + n], 4) != 0) {
                    fprintf(stderr,
                            "FAIL exact seed=%llu isa=%s w=%s M=%lld N=%lld K=%lld bias=%d acc=%d "
                            "pad=%d off=%d: first bad (m=%lld, n=%lld) y=%.9g ref=%.17g\n",
                            (unsigned long long)g_seed, isa, tinfer_dtype_name(dt), (long long)M,
                            (long long)N, (long long)K, use_bias, accumulate, pad, offset,
                            (long long)m, (long long)n, y, r);
                    rc = 1;
                    break;
                }
                continue;
            }
            double mag = 0.0;
            for (int64_t k = 0; k < K; k++)
                mag += fabs((double)X[m * ldx + k] * (double)w_load(W, dt, n * ldw + k));
            if (bias) mag += fabs((double)bias[n]);
            if (accumulate) mag += fabs((double)yold[m * N + n]);
            double err = fabs(y - r) / (mag + 1e-30);
            if (!(err <= tol)) {
                fprintf(stderr,
                        "FAIL seed=%llu isa=%s w=%s M=%lld N=%lld K=%lld bias=%d acc=%d pad=%d "
                        "off=%d: first bad (m=%lld, n=%lld) y=%.9g ref=%.17g rel-to-magnitude "
                        "err=%.3g > bound %.3g\n",
                        (unsigned long long)g_seed, isa, tinfer_dtype_name(dt), (long long)M,
                        (long long)N, (long long)K, use_bias, accumulate, pad, offset,
                        (long long)m, (long long)n, y, r, err, tol);
                rc = 1;
                break;
            }
        }
    if (!rc && !exact && den > 0 && num / den > g_worst_nmse) g_worst_nmse = num / den;
    /* guards: everything of ybuf outside the M x N region must still be the sentinel */
    for (size_t i = 0; i < ylen && !rc; i++) {
        int64_t rel = (int64_t)i - GUARD - off;
        bool inside = rel >= 0 && rel < M * ldy && rel % ldy < N;
        if (!inside && !is_sentinel(ybuf[i])) {
            fprintf(stderr,
                    "FAIL guard seed=%llu isa=%s w=%s M=%lld N=%lld K=%lld pad=%d off=%d: "
                    "element %lld relative to Y[0] overwritten (%g)\n",
                    (unsigned long long)g_seed, isa, tinfer_dtype_name(dt), (long long)M,
                    (long long)N, (long long)K, pad, offset, (long long)rel, (double)ybuf[i]);
            rc = 1;
        }
    }
    free(xbuf);
    free(wbuf);
    free(bbuf);
    free(ybuf);
    free(yold);
    free(ref);
    return rc;
}

static const int64_t SIZES[] = {1, 2, 3, 7, 17, 31, 33, 64, 65, 127, 129, 300};
#define NSIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

/* Every shape once plain, once with a rotating variant; returns the number of failures. */
static int run_shape(const char *isa, tinfer_dtype dt, int64_t M, int64_t N, int64_t K, int idx) {
    int fails = run_case(isa, dt, M, N, K, false, false, false, false, false);
    switch (idx % 3) {
    case 0: fails += run_case(isa, dt, M, N, K, true, true, true, true, false); break;
    case 1: fails += run_case(isa, dt, M, N, K, true, false, true, false, false); break;
    default: fails += run_case(isa, dt, M, N, K, false, true, false, true, false); break;
    }
    return fails;
}

static int run_isa(const char *isa) {
    int fails = 0, idx = 0;
    const tinfer_dtype dts[] = {TINFER_DTYPE_F32, TINFER_DTYPE_BF16, TINFER_DTYPE_F16};
    const int64_t NK[][2] = {{17, 31}, {33, 65}, {129, 7}, {64, 300}};
    for (int d = 0; d < 3; d++) {
        tinfer_dtype dt = dts[d];
        /* every M (1 .. 300 and 128) against a few N, K */
        const int64_t Ms[] = {1, 2, 3, 5, 6, 7, 12, 13, 17, 31, 33, 64, 65, 127, 128, 129, 300};
        for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
            for (int j = 0; j < 4; j++) fails += run_shape(isa, dt, Ms[mi], NK[j][0], NK[j][1], idx++);
        /* every N x K at M = 1 (GEMV), 6 (one AVX2 tile) and 13 (ragged tiles) */
        if (dt != TINFER_DTYPE_F16) /* F16 shares the generic pack / scalar GEMV: fewer shapes */
            for (int a = 0; a < NSIZES; a++)
                for (int b = 0; b < NSIZES; b++) {
                    fails += run_shape(isa, dt, 1, SIZES[a], SIZES[b], idx++);
                    fails += run_shape(isa, dt, 6, SIZES[a], SIZES[b], idx++);
                    fails += run_shape(isa, dt, 13, SIZES[a], SIZES[b], idx++);
                }
        /* threaded: SmolLM2 QKV at M = 128, a tall GEMV at M = 1 */
        fails += run_case(isa, dt, 128, 960, 576, true, true, true, true, false);
        fails += run_case(isa, dt, 1, 4099, 576, true, true, true, true, false);
        /* GEMV K past the AVX2 BF16 kernel's reordered-x buffer (8192): the fallback loop;
         * ragged N (row-group tail) and K (16-block tail) */
        fails += run_case(isa, dt, 1, 7, 8195, true, true, true, true, false);
        fails += run_case(isa, dt, 300, 129, 300, false, false, false, false, false);
        /* exact small-integer cases, plain and with every variant */
        const int64_t EX[][3] = {{1, 1, 1}, {1, 33, 300}, {7, 17, 31}, {128, 129, 300},
                                 {13, 65, 129}, {300, 31, 17}};
        for (int e = 0; e < 6; e++) {
            fails += run_case(isa, dt, EX[e][0], EX[e][1], EX[e][2], false, false, false, false, true);
            fails += run_case(isa, dt, EX[e][0], EX[e][1], EX[e][2], true, true, true, true, true);
        }
        if (fails) return fails;
    }
    return fails;
}

int main(int argc, char **argv) {
    if (argc > 1) g_seed = strtoull(argv[1], NULL, 10);
    g_rng = g_seed;
    printf("test_gemm_cpu: seed %llu, automatic path %s\n", (unsigned long long)g_seed,
           tinfer_gemm_cpu_isa());
    const char *isas[] = {"scalar", "avx2", "avx512"};
    int fails = 0, tested = 0;
    for (int i = 0; i < 3; i++) {
        if (tinfer_gemm_cpu_force_isa(isas[i]) != 0) {
            printf("  %-6s: not supported by this CPU, not tested\n", isas[i]);
            continue;
        }
        if (strcmp(tinfer_gemm_cpu_isa(), isas[i]) != 0) {
            fprintf(stderr, "FAIL: forced %s but the GEMM reports %s\n", isas[i], tinfer_gemm_cpu_isa());
            return 1;
        }
        long before = g_cases;
        g_worst_nmse = 0.0;
        int f = run_isa(isas[i]);
        tested++;
        printf("  %-6s: %ld cases, %s, worst normalized error %.3g\n", isas[i], g_cases - before,
               f ? "FAILED" : "ok", g_worst_nmse);
        fails += f;
        if (f) break;
    }
    tinfer_gemm_cpu_force_isa(NULL);
    if (tinfer_gemm_cpu_force_isa("no-such-isa") != -1) {
        fprintf(stderr, "FAIL: force_isa accepted an unknown name\n");
        return 1;
    }
    if (tested < 1) return 1;
    return fails ? 1 : 0;
}

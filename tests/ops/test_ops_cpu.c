/*
 * test_ops_cpu.c — every CPU op against a naive double-precision evaluation of its reference
 * formula (ops_cpu.h / the comments of the ops/ref sources), on each SIMD variant this CPU supports
 * (tinfer_ops_cpu_force_isa), random inputs from a printed seed, odd sizes, guard bands.
 * Tolerances are error bounds derived from the F32 operations each op performs (u = 2^-24):
 *   gamma_n (test_common.h) for n rounded operations; EXP_ULPS for an exp evaluation.
 * Known-answer cases: one-hot attention (a dominant key returns its value row; future keys and
 * the other KV heads' keys are ignored), RoPE at position 0 is the identity, embed/add exact.
 * Usage: test_ops_cpu [seed]. Exit 0 on success, 1 on the first failure (seed and index printed).
 */
#include "ops/ref/ops_cpu.h"
#include "test_common.h"

#include <math.h>
#include <stdbool.h>

/* Relative error of one exp evaluation, in units of u: glibc expf is within 1 ulp (glibc manual,
 * "Known Maximum Errors in Math Functions"); the AVX2 exp (ops_simd.h) rounds in 7 Horner FMAs on
 * |r| <= 0.35 (the partial sums stay in [0.7, 1.5], each rounding <= u relative to the result),
 * one exact 2^n scaling, a truncation error < 0.1 u and the argument reduction's (n ln2 split
 * Cody-Waite, exact high part) — 8 u bounds both. 1 ulp <= 2 u. */
#define EXP_ULPS 8.0

static uint64_t g_seed = 20250602;
static const char *g_isa = "?";

static int fail_at(const char *op, const char *what, long long idx, double got, double ref,
                   double tol) {
    fprintf(stderr, "FAIL %s seed=%llu isa=%s %s: first bad index %lld got=%.9g ref=%.17g |err|=%.3g > %.3g\n",
            op, (unsigned long long)g_seed, g_isa, what, idx, got, ref, fabs(got - ref), tol);
    return 1;
}

/* Buffer of n floats with GUARD sentinels on both sides; returns a pointer to element 0. */
static float *guarded(int64_t n) {
    float *b = xmalloc(sizeof(float) * (size_t)(n + 2 * GUARD));
    for (int64_t i = 0; i < n + 2 * GUARD; i++) b[i] = sentinel();
    return b + GUARD;
}
static int check_guards(const char *op, const float *p, int64_t n) {
    for (int64_t i = -GUARD; i < 0; i++)
        if (!is_sentinel(p[i])) return fail_at(op, "guard before output overwritten", i, p[i], 0, 0);
    for (int64_t i = n; i < n + GUARD; i++)
        if (!is_sentinel(p[i])) return fail_at(op, "guard after output overwritten", i, p[i], 0, 0);
    return 0;
}
static void unguard(float *p) { free(p - GUARD); }

/* ---------------- embed ---------------- */
static int test_embed(void) {
    const int64_t V = 37, D = 67, n = 9;
    const tinfer_dtype dts[] = {TINFER_DTYPE_F32, TINFER_DTYPE_BF16, TINFER_DTYPE_F16};
    for (int d = 0; d < 3; d++) {
        tinfer_dtype dt = dts[d];
        size_t es = tinfer_dtype_size(dt);
        unsigned char *tab = xmalloc(es * (size_t)(V * D));
        for (int64_t i = 0; i < V * D; i++) {
            /* small integers / 8: exact in every dtype, so the widening must be exact */
            float v = (float)rng_int(-64, 64) / 8.0f;
            if (dt == TINFER_DTYPE_F32) ((float *)(void *)tab)[i] = v;
            else if (dt == TINFER_DTYPE_BF16) ((uint16_t *)(void *)tab)[i] = tinfer_f32_to_bf16(v);
            else {
                /* F16 encoding of k/8, |k| <= 64: sign, exponent, 10-bit mantissa */
                uint16_t h = 0;
                if (v != 0.0f) {
                    int e;
                    float m = frexpf(fabsf(v), &e); /* |v| = m 2^e, m in [0.5, 1) */
                    h = (uint16_t)(((v < 0) << 15) | ((e - 1 + 15) << 10) |
                                   (uint16_t)((m * 2.0f - 1.0f) * 1024.0f));
                }
                ((uint16_t *)(void *)tab)[i] = h;
            }
        }
        int32_t ids[9];
        for (int i = 0; i < n; i++) ids[i] = rng_int(0, (int)V - 1);
        ids[0] = 0;
        ids[1] = (int32_t)V - 1;
        float *out = guarded(n * D);
        tinfer_op_embed(out, tab, dt, ids, n, D);
        int rc = check_guards("embed", out, n * D);
        for (int64_t i = 0; i < n && !rc; i++)
            for (int64_t k = 0; k < D; k++) {
                int64_t t = (int64_t)ids[i] * D + k;
                float want = dt == TINFER_DTYPE_F32    ? ((float *)(void *)tab)[t]
                             : dt == TINFER_DTYPE_BF16 ? tinfer_bf16_to_f32(((uint16_t *)(void *)tab)[t])
                                                       : tinfer_f16_to_f32(((uint16_t *)(void *)tab)[t]);
                /* exact: widening k/8 loses nothing */
                if (out[i * D + k] != want || want != (float)((double)lrint(want * 8.0) / 8.0)) {
                    rc = fail_at("embed", tinfer_dtype_name(dt), i * D + k, out[i * D + k], want, 0);
                    break;
                }
            }
        unguard(out);
        free(tab);
        if (rc) return rc;
    }
    return 0;
}

/* ---------------- rmsnorm ---------------- */
static int test_rmsnorm(void) {
    const int64_t dims[] = {1, 7, 64, 65, 576, 1001};
    const int64_t ns[] = {1, 3, 128};
    const float eps = 1e-5f;
    for (int di = 0; di < 6; di++)
        for (int ni = 0; ni < 3; ni++)
            for (int wd = 0; wd < 2; wd++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    int64_t D = dims[di], n = ns[ni];
                    tinfer_dtype dt = wd ? TINFER_DTYPE_BF16 : TINFER_DTYPE_F32;
                    float *x = xmalloc(sizeof(float) * (size_t)(n * D));
                    float *wf = xmalloc(sizeof(float) * (size_t)D);
                    uint16_t *wb = xmalloc(sizeof(uint16_t) * (size_t)D);
                    for (int64_t i = 0; i < n * D; i++) x[i] = rng_uniform(-3.0f, 3.0f);
                    for (int64_t k = 0; k < D; k++) {
                        wb[k] = tinfer_f32_to_bf16(rng_uniform(-2.0f, 2.0f));
                        wf[k] = wd ? tinfer_bf16_to_f32(wb[k]) : rng_uniform(-2.0f, 2.0f);
                    }
                    float *out = guarded(n * D);
                    float *xin = xmalloc(sizeof(float) * (size_t)(n * D));
                    memcpy(xin, x, sizeof(float) * (size_t)(n * D));
                    if (inplace) {
                        memcpy(out, x, sizeof(float) * (size_t)(n * D));
                        tinfer_op_rmsnorm(out, out, wd ? (void *)wb : (void *)wf, dt, n, D, eps);
                    } else {
                        tinfer_op_rmsnorm(out, x, wd ? (void *)wb : (void *)wf, dt, n, D, eps);
                    }
                    int rc = check_guards("rmsnorm", out, n * D);
                    /* F32 ops per element: r rounded once from double, x*r, (x*r)*w: gamma_3,
                     * plus the double mean's own error (far below u). */
                    double tol = gamma_n(3.0);
                    for (int64_t i = 0; i < n && !rc; i++) {
                        double ss = 0;
                        for (int64_t k = 0; k < D; k++) ss += (double)xin[i * D + k] * xin[i * D + k];
                        double r = 1.0 / sqrt(ss / (double)D + (double)eps);
                        for (int64_t k = 0; k < D; k++) {
                            double ref = (double)xin[i * D + k] * r * (double)wf[k];
                            double got = out[i * D + k];
                            if (!(fabs(got - ref) <= tol * fabs(ref) + 1e-38)) {
                                char what[96];
                                snprintf(what, sizeof what, "n=%lld dim=%lld w=%s inplace=%d",
                                         (long long)n, (long long)D, tinfer_dtype_name(dt), inplace);
                                rc = fail_at("rmsnorm", what, i * D + k, got, ref, tol * fabs(ref));
                                break;
                            }
                        }
                    }
                    unguard(out);
                    free(x);
                    free(xin);
                    free(wf);
                    free(wb);
                    if (rc) return rc;
                }
    return 0;
}

/* ---------------- rope ---------------- */
static int test_rope(void) {
    const int32_t hds[] = {2, 64, 36, 128};
    const float thetas[] = {10000.0f, 100000.0f};
    for (int hi = 0; hi < 4; hi++)
        for (int ti = 0; ti < 2; ti++) {
            int32_t hd = hds[hi], nh = 9, half = hd / 2;
            int64_t n = 37, stride = (int64_t)nh * hd + 5; /* padded rows */
            float theta = thetas[ti];
            int32_t *pos = xmalloc(sizeof(int32_t) * (size_t)n);
            for (int64_t i = 0; i < n; i++) pos[i] = i < 3 ? (int32_t)i : rng_int(0, 8191);
            float *x = guarded(n * stride), *x0 = xmalloc(sizeof(float) * (size_t)(n * stride));
            for (int64_t i = 0; i < n * stride; i++) x[i] = x0[i] = rng_uniform(-2.0f, 2.0f);
            tinfer_op_rope(x, n, stride, nh, hd, pos, theta);
            int rc = check_guards("rope", x, n * stride);
            char what[96];
            snprintf(what, sizeof what, "head_dim=%d theta=%g", hd, (double)theta);
            for (int64_t i = 0; i < n && !rc; i++) {
                /* position 0: cos = 1, sin = 0 exactly, so x*1 - y*0 must be x, bit for bit */
                if (pos[i] == 0 && memcmp(x + i * stride, x0 + i * stride, sizeof(float) * (size_t)(nh * hd))) {
                    rc = fail_at("rope", "position 0 is not the identity", i, 0, 0, 0);
                    break;
                }
                for (int32_t h = 0; h < nh && !rc; h++)
                    for (int32_t j = 0; j < half; j++) {
                        int64_t o = i * stride + (int64_t)h * hd;
                        double a0 = x0[o + j], a1 = x0[o + j + half];
                        /* (1) HF float32 steps for the angle, exact math after it. Error: cos and
                         * sin rounded to float (u each), two products, one sum: gamma_3 on
                         * |a0 c| + |a1 s| <= |a0| + |a1|; pow/cos evaluated in double and rounded
                         * once can differ from torch's float kernels by 1 ulp — the "within 1e-6"
                         * of the brief — which this bound (3u ~ 1.8e-7 relative) already exceeds
                         * only if the angle itself differed, so it is checked exactly here. */
                        float e = (float)(2 * j) / (float)hd;
                        float inv = 1.0f / (float)pow((double)theta, (double)e);
                        float ang = (float)pos[i] * inv;
                        double c = cos((double)ang), s = sin((double)ang);
                        double r0 = a0 * c - a1 * s, r1 = a1 * c + a0 * s;
                        double tol = gamma_n(3.0) * (fabs(a0) + fabs(a1)) + 1e-30;
                        if (!(fabs(x[o + j] - r0) <= tol)) { rc = fail_at("rope", what, o + j, x[o + j], r0, tol); break; }
                        if (!(fabs(x[o + j + half] - r1) <= tol)) { rc = fail_at("rope", what, o + j + half, x[o + j + half], r1, tol); break; }
                        /* (2) the pure formula, angle = pos * theta^(-2j/d) in double: the F32
                         * angle differs by the rounding of e, pow, 1/x and the product (4 u
                         * relative of the angle, theta^e moves by ln(theta)*|e|*u for e's
                         * rounding), which moves the output by at most that much times
                         * (|a0| + |a1|). */
                        double angd = (double)pos[i] * pow((double)theta, -2.0 * j / (double)hd);
                        double cd = cos(angd), sd = sin(angd);
                        double q0 = a0 * cd - a1 * sd, q1 = a1 * cd + a0 * sd;
                        double dang = fabs(angd) * (4.0 + log((double)theta)) * U32;
                        double tol2 = tol + dang * (fabs(a0) + fabs(a1));
                        if (!(fabs(x[o + j] - q0) <= tol2)) { rc = fail_at("rope (double formula)", what, o + j, x[o + j], q0, tol2); break; }
                        if (!(fabs(x[o + j + half] - q1) <= tol2)) { rc = fail_at("rope (double formula)", what, o + j + half, x[o + j + half], q1, tol2); break; }
                    }
                /* row padding untouched */
                for (int64_t p = (int64_t)nh * hd; p < stride && !rc; p++)
                    if (memcmp(&x[i * stride + p], &x0[i * stride + p], 4)) rc = fail_at("rope", "row padding modified", i * stride + p, x[i * stride + p], x0[i * stride + p], 0);
            }
            unguard(x);
            free(x0);
            free(pos);
            if (rc) return rc;
        }
    return 0;
}

/* ---------------- attention ---------------- */
typedef struct {
    int64_t n;
    int32_t first_pos, n_kv, n_head, n_head_kv, hd;
} att_case;

static int attention_vs_ref(const att_case *c) {
    int64_t n = c->n, kvs = (int64_t)c->n_head_kv * c->hd;
    int64_t qs = (int64_t)c->n_head * c->hd + 3, os = (int64_t)c->n_head * c->hd + 1; /* padded */
    float *q = xmalloc(sizeof(float) * (size_t)(n * qs));
    float *k = xmalloc(sizeof(float) * (size_t)(c->n_kv * kvs));
    float *v = xmalloc(sizeof(float) * (size_t)(c->n_kv * kvs));
    float *out = guarded(n * os);
    int32_t *pos = xmalloc(sizeof(int32_t) * (size_t)n);
    for (int64_t i = 0; i < n * qs; i++) q[i] = rng_uniform(-2.0f, 2.0f);
    for (int64_t i = 0; i < c->n_kv * kvs; i++) {
        k[i] = rng_uniform(-2.0f, 2.0f);
        v[i] = rng_uniform(-1.0f, 1.0f);
    }
    for (int64_t i = 0; i < n; i++) pos[i] = c->first_pos + (int32_t)i;
    tinfer_op_attention(out, os, q, qs, k, v, n, pos, c->n_head, c->n_head_kv, c->hd);
    int rc = check_guards("attention", out, n * os);
    char what[128];
    snprintf(what, sizeof what, "n=%lld first_pos=%d heads=%d/%d head_dim=%d", (long long)n,
             c->first_pos, c->n_head, c->n_head_kv, c->hd);
    int32_t G = c->n_head / c->n_head_kv;
    double scale = 1.0 / sqrt((double)c->hd);
    double *p = xmalloc(sizeof(double) * (size_t)c->n_kv);
    for (int64_t i = 0; i < n && !rc; i++)
        for (int32_t h = 0; h < c->n_head && !rc; h++) {
            int64_t L = (int64_t)pos[i] + 1;
            const float *qh = q + i * qs + (int64_t)h * c->hd;
            const float *kg = k + (int64_t)(h / G) * c->hd, *vg = v + (int64_t)(h / G) * c->hd;
            double m = -INFINITY, smax = 0;
            for (int64_t j = 0; j < L; j++) {
                double s = 0, sa = 0;
                for (int32_t d = 0; d < c->hd; d++) {
                    s += (double)qh[d] * kg[j * kvs + d];
                    sa += fabs((double)qh[d] * kg[j * kvs + d]);
                }
                p[j] = s * scale;
                m = p[j] > m ? p[j] : m;
                smax = sa * scale > smax ? sa * scale : smax;
            }
            double l = 0;
            for (int64_t j = 0; j < L; j++) l += (p[j] = exp(p[j] - m));
            /* Bound: each score carries <= gamma_{hd+1} smax (dot + scale); s - m adds rounding
             * <= 2 smax u; exp adds EXP_ULPS u relative. The online softmax rescales a partial
             * output by exp(m_old - m_new) (+ one product) each time the running max grows, at
             * most once per 64-key block (ATT_BLK), plus once more in the key-split merge: each
             * such step adds (EXP_ULPS + 1) u. So each p_j is off by a relative delta as below,
             * and normalising turns that into <= 2 delta of the output, times max|v| (<= 1). The
             * float sums over L keys (numerator and denominator) add gamma_L each, and the final
             * 1/l and product 2u. */
            double steps = 1.0 + (double)((L + 63) / 64) + 1.0;
            double delta = 2.0 * (gamma_n(c->hd + 1.0) * smax + 2.0 * smax * U32) + steps * (EXP_ULPS + 1.0) * U32;
            double tol = 2.0 * delta + 2.0 * gamma_n((double)L) + 2.0 * U32;
            for (int32_t d = 0; d < c->hd; d++) {
                double ref = 0;
                for (int64_t j = 0; j < L; j++) ref += p[j] * vg[j * kvs + d];
                ref /= l;
                double got = out[i * os + (int64_t)h * c->hd + d];
                if (!(fabs(got - ref) <= tol)) {
                    rc = fail_at("attention", what, i * os + (int64_t)h * c->hd + d, got, ref, tol);
                    break;
                }
            }
        }
    /* the stride padding between rows of out is never written */
    for (int64_t i = 0; i < n && !rc; i++)
        for (int64_t e = (int64_t)c->n_head * c->hd; e < os; e++)
            if (!is_sentinel(out[i * os + e])) rc = fail_at("attention", "row padding written", i * os + e, out[i * os + e], 0, 0);
    free(p);
    free(q);
    free(k);
    free(v);
    free(pos);
    unguard(out);
    return rc;
}

/* One-hot: query i, head h has q = 20 e_t; in its KV head g exactly one visible key j* has
 * k[j*, g, t] = 20 and the rest |k| <= 0.1, so s(j*) = 400 / sqrt(64) = 50 against <= 0.25:
 * every other weight is < e^-49.7 < 3e-22, and out must equal v[j*, g, :] to within that times
 * L max|v| plus the rounding of the one product 1 * v (exact) — 1e-18 covers L <= 1000 keys.
 * A dominant key placed in the future (j > pos[i]) and in the other KV heads must be ignored. */
static int attention_one_hot(void) {
    const int32_t NH = 9, NKV = 3, HD = 64, G = NH / NKV;
    const int64_t n = 6, NKVROWS = 200, kvs = (int64_t)NKV * HD, qs = (int64_t)NH * HD;
    float *q = xmalloc(sizeof(float) * (size_t)(n * qs));
    float *k = xmalloc(sizeof(float) * (size_t)(NKVROWS * kvs));
    float *v = xmalloc(sizeof(float) * (size_t)(NKVROWS * kvs));
    float *out = guarded(n * qs);
    int32_t pos[6] = {0, 1, 17, 64, 65, 150};
    for (int64_t i = 0; i < NKVROWS * kvs; i++) {
        k[i] = rng_uniform(-0.1f, 0.1f);
        v[i] = rng_uniform(-1.0f, 1.0f);
    }
    memset(q, 0, sizeof(float) * (size_t)(n * qs));
    int32_t target[6][3];
    for (int64_t i = 0; i < n; i++)
        for (int32_t g = 0; g < NKV; g++) {
            int32_t t = (int32_t)((i * 7 + g * 13) % HD); /* the feature this group's heads use */
            for (int32_t hh = 0; hh < G; hh++) q[i * qs + (int64_t)(g * G + hh) * HD + t] = 20.0f;
            target[i][g] = rng_int(0, pos[i]);
        }
    /* Dominant keys: all the targets (each only for its own (g, t)); a future one per query. */
    for (int64_t i = 0; i < n; i++)
        for (int32_t g = 0; g < NKV; g++) {
            int32_t t = (int32_t)((i * 7 + g * 13) % HD);
            k[(int64_t)target[i][g] * kvs + (int64_t)g * HD + t] = 20.0f;
            if (pos[i] + 1 < NKVROWS) k[(int64_t)(pos[i] + 1) * kvs + (int64_t)g * HD + t] = 40.0f;
        }
    /* Targets of other queries share (g, t) only if their t coincides; the t formula gives every
     * (i, g) its own t except when (7i + 13g) mod 64 repeats — check that none does, then a key
     * matching another query's t is merely small for this one. */
    for (int64_t a = 0; a < n; a++)
        for (int64_t b = 0; b < n; b++)
            for (int32_t g = 0; g < NKV; g++)
                if (a != b && (a * 7 + g * 13) % HD == (b * 7 + g * 13) % HD) {
                    fprintf(stderr, "one-hot test set-up: feature collision\n");
                    return 1;
                }
    /* A future key of query a sits at pos[a] + 1, which query b > a may see with t_a != t_b:
     * 40 * 0 contributes nothing; fine. */
    tinfer_op_attention(out, qs, q, qs, k, v, n, pos, NH, NKV, HD);
    int rc = check_guards("attention one-hot", out, n * qs);
    for (int64_t i = 0; i < n && !rc; i++)
        for (int32_t h = 0; h < NH && !rc; h++) {
            int32_t g = h / G;
            const float *want = v + (int64_t)target[i][g] * kvs + (int64_t)g * HD;
            for (int32_t d = 0; d < HD; d++) {
                float got = out[i * qs + (int64_t)h * HD + d];
                if (!(fabs((double)got - want[d]) <= 1e-18 + 2.0 * U32 * fabs(want[d]))) {
                    char what[64];
                    snprintf(what, sizeof what, "one-hot query %lld head %d", (long long)i, h);
                    rc = fail_at("attention", what, i * qs + (int64_t)h * HD + d, got, want[d], 1e-18);
                    break;
                }
            }
        }
    free(q);
    free(k);
    free(v);
    unguard(out);
    return rc;
}

static int test_attention(void) {
    const att_case cases[] = {
        {1, 0, 1, 9, 3, 64},      /* first token: one key */
        {1, 2047, 2048, 9, 3, 64}, /* decode against a 2k cache */
        {128, 0, 128, 9, 3, 64},  /* SmolLM2 prefill of 128 tokens */
        {5, 100, 120, 9, 3, 64},  /* chunk continuing a cache */
        {3, 70, 80, 8, 2, 36},    /* head_dim not a multiple of 8, G = 4 */
        {4, 10, 20, 10, 2, 12},   /* G = 5: two head batches */
        {2, 130, 140, 4, 4, 128}, /* MHA, head_dim 128, several key blocks */
        {7, 0, 7, 3, 1, 1},       /* head_dim 1 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (attention_vs_ref(&cases[i])) return 1;
    return attention_one_hot();
}

/* ---------------- swiglu ---------------- */
static int test_swiglu(void) {
    const int64_t ffs[] = {1, 7, 8, 17, 1536};
    const int64_t ns[] = {1, 3, 128};
    for (int fi = 0; fi < 5; fi++)
        for (int ni = 0; ni < 3; ni++) {
            int64_t F = ffs[fi], n = ns[ni];
            float *gu = xmalloc(sizeof(float) * (size_t)(n * 2 * F));
            for (int64_t i = 0; i < n * 2 * F; i++) gu[i] = rng_uniform(-10.0f, 10.0f);
            float *out = guarded(n * F);
            tinfer_op_swiglu(out, gu, n, F);
            int rc = check_guards("swiglu", out, n * F);
            /* exp(-g) (EXP_ULPS u), 1 + e (u), g / (.) (u), * u_val (u): relative error of
             * 1 + e is at most that of e, so the result is within (EXP_ULPS + 3) u, relative. */
            double tol = (EXP_ULPS + 3.0) * U32 * 1.0001;
            for (int64_t i = 0; i < n && !rc; i++)
                for (int64_t j = 0; j < F; j++) {
                    double g = gu[i * 2 * F + j], u = gu[i * 2 * F + F + j];
                    double ref = g / (1.0 + exp(-g)) * u;
                    double got = out[i * F + j];
                    if (!(fabs(got - ref) <= tol * fabs(ref) + 1e-37)) {
                        char what[64];
                        snprintf(what, sizeof what, "n=%lld n_ff=%lld", (long long)n, (long long)F);
                        rc = fail_at("swiglu", what, i * F + j, got, ref, tol * fabs(ref));
                        break;
                    }
                }
            unguard(out);
            free(gu);
            if (rc) return rc;
        }
    return 0;
}

/* ---------------- add, softmax ---------------- */
static int test_add_softmax(void) {
    const int64_t ns[] = {1, 2, 7, 8, 9, 100, 49152};
    for (int ni = 0; ni < 7; ni++) {
        int64_t n = ns[ni];
        float *y = guarded(n), *x = xmalloc(sizeof(float) * (size_t)n), *y0 = xmalloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            y[i] = y0[i] = rng_uniform(-5.0f, 5.0f);
            x[i] = rng_uniform(-5.0f, 5.0f);
        }
        tinfer_op_add(y, x, n);
        int rc = check_guards("add", y, n);
        for (int64_t i = 0; i < n && !rc; i++) {
            float want = y0[i] + x[i]; /* one F32 addition: bit for bit */
            if (memcmp(&want, &y[i], 4)) rc = fail_at("add", "exact", i, y[i], want, 0);
        }
        /* softmax: logits spread over [-20, 20] like real ones, plus one large outlier */
        for (int64_t i = 0; i < n; i++) y[i] = y0[i] = rng_uniform(-20.0f, 20.0f);
        if (n > 3) y[n / 2] = y0[n / 2] = 35.0f;
        tinfer_op_softmax(y, n);
        rc = rc ? rc : check_guards("softmax", y, n);
        double m = -INFINITY, l = 0;
        for (int64_t i = 0; i < n; i++) m = y0[i] > m ? y0[i] : m;
        for (int64_t i = 0; i < n; i++) l += exp((double)y0[i] - m);
        double dmax = 0; /* largest |x - max| */
        for (int64_t i = 0; i < n; i++) dmax = fabs(y0[i] - m) > dmax ? fabs(y0[i] - m) : dmax;
        /* each term: x - m rounded (|x - m| u absolute in the exponent), exp (EXP_ULPS u); the
         * sum over n terms gamma_n; 1/s and the product 2u. Normalising doubles the per-term
         * relative error. */
        double delta = dmax * U32 + EXP_ULPS * U32;
        double tol = 2.0 * delta + gamma_n((double)n) + 2.0 * U32;
        for (int64_t i = 0; i < n && !rc; i++) {
            double ref = exp((double)y0[i] - m) / l;
            if (!(fabs(y[i] - ref) <= tol * ref + 1e-38)) {
                char what[32];
                snprintf(what, sizeof what, "n=%lld", (long long)n);
                rc = fail_at("softmax", what, i, y[i], ref, tol * ref);
            }
        }
        unguard(y);
        free(x);
        free(y0);
        if (rc) return rc;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1) g_seed = strtoull(argv[1], NULL, 10);
    g_rng = g_seed;
    printf("test_ops_cpu: seed %llu, automatic variant %s\n", (unsigned long long)g_seed, tinfer_ops_cpu_isa());
    const char *isas[] = {"scalar", "avx2"};
    int tested = 0;
    for (int i = 0; i < 2; i++) {
        if (tinfer_ops_cpu_force_isa(isas[i]) != 0) {
            printf("  %-6s: not supported by this CPU, not tested\n", isas[i]);
            continue;
        }
        g_isa = isas[i];
        tested++;
        struct { const char *name; int (*fn)(void); } tests[] = {
            {"embed", test_embed}, {"rmsnorm", test_rmsnorm}, {"rope", test_rope},
            {"attention", test_attention}, {"swiglu", test_swiglu}, {"add+softmax", test_add_softmax},
        };
        for (size_t t = 0; t < sizeof tests / sizeof tests[0]; t++) {
            if (tests[t].fn()) return 1;
            printf("  %-6s %-12s ok\n", isas[i], tests[t].name);
        }
    }
    tinfer_ops_cpu_force_isa(NULL);
    if (tinfer_ops_cpu_force_isa("no-such-isa") != -1) {
        fprintf(stderr, "FAIL: force_isa accepted an unknown name\n");
        return 1;
    }
    return tested ? 0 : 1;
}

/*
 * test_gemm_bf16_norm.cu — tinfer_gemm_bf16_rmsnorm: RMSNorm fused into decode rung 08's X load.
 *
 * Each case: random F32 rows x [M, ldx] (one row scaled up 100x: the norm must undo it), a random
 * BF16 norm weight, W, bias and residual as the epilogue asks. Reference in double on the host from
 * Xn[m, k] = bf16(f32(x[m, k] * rs_m) * w[k]), rs_m = 1 / sqrt(mean x[m]^2 + eps) rounded to F32
 * (the kernel's formula). Tolerance: the BF16 bound of the GEMM tests (TOL_BF16, normalised RMS)
 * for every output dtype: the kernel sums the squares in another order, so rs_m can differ from
 * the host's in its last bit, and an element of Xn whose product lies within an F32 ulp of a BF16
 * rounding boundary then rounds the other way (about 2^-16 of the elements): that moves an output
 * by up to 2^-8 |Xn_k W_jk|, beyond the F32 bound of a plain GEMM but far inside the BF16 one.
 * Also: the guards around Y stay untouched, shapes the fused path does not take are refused with
 * TINFER_ERR_UNSUPPORTED (never silently computed), and tinfer_gemm_bf16_rmsnorm_ok agrees.
 */
#include "tests/gemm_bf16/test_gemm_bf16.h"

typedef struct norm_case {
    int64_t M, N, K;
    tinfer_dtype yd;
    int bias, resid, swiglu;
} norm_case;

static double silu_d(double g) { return g / (1.0 + exp(-g)); }

static void run_norm_case(const norm_case &c, cudaStream_t s) {
    char label[200];
    snprintf(label, sizeof label, "rmsnorm+gemv08 M=%lld N=%lld K=%lld %s%s%s%s", (long long)c.M,
             (long long)c.N, (long long)c.K, tinfer_dtype_name(c.yd), c.bias ? " bias" : "",
             c.resid ? " resid" : "", c.swiglu ? " swiglu" : "");
    g_cases++;
    const int64_t nout = c.swiglu ? c.N / 2 : c.N, ldx = c.K + 4, ldy = nout + 3;
    const float eps = 1e-5f;
    std::vector<float> x((size_t)(c.M * ldx));
    for (int64_t m = 0; m < c.M; m++)
        for (int64_t k = 0; k < ldx; k++)
            x[m * ldx + k] = tinfer_bf16_to_f32(rnd_bf16(m == 1 ? 200.0f : 2.0f)) +
                             (float)(rnd_u32() % 1000) * 1e-6f;
    std::vector<uint16_t> nw((size_t)c.K), W((size_t)(c.N * c.K)), B((size_t)c.N);
    for (auto &v : nw) v = rnd_bf16(1.5f);
    for (auto &v : W) v = rnd_bf16(1.0f);
    for (auto &v : B) v = rnd_bf16(1.0f);
    const size_t es = tinfer_dtype_size(c.yd), ny = (size_t)(c.M * ldy) + 2 * GUARD;
    std::vector<uint8_t> Y0(ny * es);
    const uint32_t sentinel = c.yd == TINFER_DTYPE_F32 ? 0x7FBFFFFFu : 0x7FBFu;
    for (size_t i = 0; i < ny; i++) memcpy(&Y0[i * es], &sentinel, es);
    auto yval = [&](const std::vector<uint8_t> &Y, size_t i) -> double {
        if (c.yd == TINFER_DTYPE_F32) {
            float f;
            memcpy(&f, &Y[i * 4], 4);
            return f;
        }
        uint16_t h;
        memcpy(&h, &Y[i * 2], 2);
        return tinfer_bf16_to_f32(h);
    };
    if (c.resid)
        for (int64_t m = 0; m < c.M; m++)
            for (int64_t j = 0; j < nout; j++) {
                const size_t i = GUARD + (size_t)(m * ldy + j);
                const uint16_t h = rnd_bf16(2.0f);
                if (c.yd == TINFER_DTYPE_F32) {
                    const float f = tinfer_bf16_to_f32(h);
                    memcpy(&Y0[i * 4], &f, 4);
                } else {
                    memcpy(&Y0[i * 2], &h, 2);
                }
            }
    /* reference */
    std::vector<double> ref((size_t)(c.M * nout));
    std::vector<double> xn((size_t)c.K);
    for (int64_t m = 0; m < c.M; m++) {
        double ss = 0;
        for (int64_t k = 0; k < c.K; k++) ss += (double)x[m * ldx + k] * x[m * ldx + k];
        const float rs = (float)(1.0 / sqrt(ss / (double)c.K + (double)eps));
        for (int64_t k = 0; k < c.K; k++)
            xn[k] = tinfer_bf16_to_f32(
                tinfer_f32_to_bf16((x[m * ldx + k] * rs) * tinfer_bf16_to_f32(nw[k])));
        for (int64_t j = 0; j < nout; j++) {
            double g = 0, u = 0;
            for (int64_t k = 0; k < c.K; k++) g += xn[k] * tinfer_bf16_to_f32(W[j * c.K + k]);
            if (c.swiglu)
                for (int64_t k = 0; k < c.K; k++) u += xn[k] * tinfer_bf16_to_f32(W[(nout + j) * c.K + k]);
            if (c.bias) {
                g += tinfer_bf16_to_f32(B[j]);
                if (c.swiglu) u += tinfer_bf16_to_f32(B[nout + j]);
            }
            double v = c.swiglu ? silu_d(g) * u : g;
            if (c.resid) v += yval(Y0, GUARD + (size_t)(m * ldy + j));
            ref[m * nout + j] = v;
        }
    }
    float *dx;
    uint16_t *dnw, *dW, *dB;
    uint8_t *dY;
    CK(cudaMalloc(&dx, x.size() * 4));
    CK(cudaMalloc(&dnw, nw.size() * 2));
    CK(cudaMalloc(&dW, W.size() * 2));
    CK(cudaMalloc(&dB, B.size() * 2));
    CK(cudaMalloc(&dY, Y0.size()));
    CK(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dnw, nw.data(), nw.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dW, W.data(), W.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, B.data(), B.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dY, Y0.data(), Y0.size(), cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize()); /* pageable copies: landed before the non-blocking stream reads */
    tinfer_gemm_bf16_args a;
    memset(&a, 0, sizeof a);
    a.M = c.M, a.N = c.N, a.K = c.K;
    a.W = dW, a.ldw = c.K;
    a.bias = c.bias ? dB : NULL;
    a.Y = dY + GUARD * es, a.ldy = ldy, a.y_dtype = c.yd;
    a.R = c.resid ? a.Y : NULL, a.ldr = ldy;
    a.swiglu = c.swiglu;
    a.w_static = 1;
    tinfer_err err;
    err.msg[0] = 0;
    int bad = 0;
    if (!tinfer_gemm_bf16_rmsnorm_ok(&a)) {
        printf("FAIL %s: not taken by the fused path (route %d)\n", label,
               (int)tinfer_gemm_bf16_choose(c.M, c.N, c.K));
        bad = 1;
    } else {
        tinfer_status st = tinfer_gemm_bf16_rmsnorm(&a, dx, ldx, dnw, eps, s, &err);
        if (st != TINFER_OK) {
            printf("FAIL %s: status %d: %s\n", label, (int)st, err.msg);
            bad = 1;
        }
    }
    CK(cudaStreamSynchronize(s));
    std::vector<uint8_t> Y(Y0.size());
    CK(cudaMemcpy(Y.data(), dY, Y.size(), cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    for (size_t i = 0; i < ny && !bad; i++) {
        const int64_t e = (int64_t)i - GUARD;
        const bool inside = e >= 0 && e < c.M * ldy && e % ldy < nout;
        uint32_t bits = 0;
        memcpy(&bits, &Y[i * es], es);
        if (!inside) {
            if (bits != sentinel) {
                printf("FAIL %s: guard / padding element %lld written\n", label, (long long)e);
                bad = 1;
            }
            continue;
        }
        const double o = yval(Y, i), r = ref[(e / ldy) * nout + e % ldy];
        if (!(fabs(o) < INFINITY)) {
            printf("FAIL %s: output (%lld, %lld) not finite\n", label, (long long)(e / ldy),
                   (long long)(e % ldy));
            bad = 1;
        }
        num += (o - r) * (o - r), den += r * r;
    }
    const double nerr = den > 0 ? sqrt(num / den) : 0;
    if (!bad && !(nerr <= TOL_BF16)) {
        printf("FAIL %s: normalised RMS error %.3g > %.1g\n", label, nerr, TOL_BF16);
        bad = 1;
    }
    if (bad) g_fail++;
    CK(cudaFree(dx));
    CK(cudaFree(dnw));
    CK(cudaFree(dW));
    CK(cudaFree(dB));
    CK(cudaFree(dY));
}

void test_rmsnorm_fused(cudaStream_t s, bool quick) {
    const tinfer_dtype BF = TINFER_DTYPE_BF16, F = TINFER_DTYPE_F32;
    /* SmolLM2's two fused norms (QKV 960 x 576; gate/up 2 x 1536 x 576 with SwiGLU) at 1..8
     * tokens, then ragged N, K = 8 (one granule), 72, 1000, 1024 (4 chunks per warp), epilogues */
    const norm_case cases[] = {
        {1, 960, 576, BF, 0, 0, 0},     {1, 2 * 1536, 576, BF, 0, 0, 1}, {8, 960, 576, BF, 1, 0, 0},
        {5, 2 * 1536, 576, BF, 0, 0, 1}, {3, 1000, 576, F, 0, 1, 0},      {2, 33, 8, F, 1, 1, 0},
        {7, 2 * 100, 72, BF, 1, 0, 1},  {4, 6000, 1000, BF, 0, 1, 0},    {6, 4100, 1024, F, 1, 0, 0},
        {8, 2 * 600, 1024, BF, 1, 1, 1},
    };
    for (const auto &c : cases) {
        if (quick && c.N > 3072) continue;
        run_norm_case(c, s);
    }
    /* refused: more than 8 tokens, K past rung 08's 1024, a shape the dispatcher sends elsewhere */
    const int64_t refused[][3] = {{9, 960, 576}, {1, 576, 1536}, {1, 4096, 4096}};
    for (const auto &r : refused) {
        g_cases++;
        tinfer_gemm_bf16_args a;
        memset(&a, 0, sizeof a);
        a.M = r[0], a.N = r[1], a.K = r[2];
        a.W = (const uint16_t *)(uintptr_t)0x1000, a.ldw = a.K;
        a.Y = (void *)(uintptr_t)0x1000, a.ldy = a.N, a.y_dtype = TINFER_DTYPE_BF16;
        tinfer_err err;
        err.msg[0] = 0;
        const tinfer_status st = tinfer_gemm_bf16_rmsnorm(&a, (const float *)(uintptr_t)0x1000, a.K,
                                                          (const uint16_t *)(uintptr_t)0x1000, 1e-5f,
                                                          s, &err);
        if (tinfer_gemm_bf16_rmsnorm_ok(&a) || st != TINFER_ERR_UNSUPPORTED || !err.msg[0]) {
            printf("FAIL rmsnorm+gemv08 refuses M=%lld N=%lld K=%lld: ok %d, status %d (%s)\n",
                   (long long)r[0], (long long)r[1], (long long)r[2],
                   tinfer_gemm_bf16_rmsnorm_ok(&a), (int)st, err.msg);
            g_fail++;
        }
    }
}

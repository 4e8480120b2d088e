/*
 * test_gemm_bf16_case.cu — one case of test-gemm-bf16 (test_gemm_bf16.cu) on a list of runners:
 * inputs drawn in BF16, the double-precision reference with the same epilogue, each runner
 * launched (run_one) on a NaN-filled, guarded output and compared (compare); the comparator's
 * self-test and the argument refusals that need a device.
 */
#include "tests/gemm_bf16/test_gemm_bf16.h"

int g_fail = 0, g_cases = 0;
const char *g_only = NULL; /* runner name filter (argv[2]) */
uint64_t g_rng = 0x9E3779B97F4A7C15ull;

uint32_t rnd_u32(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
uint16_t rnd_bf16(float scale) {
    const float f = ((float)(rnd_u32() & 0xffffff) / 16777216.0f * 2.0f - 1.0f) * scale;
    return tinfer_f32_to_bf16(f);
}

/* Rung 07 configurations: each changes one launch choice of the default (see gemv_bf16_internal.h). */
static const tinfer_gemv07_cfg g07_cfgs[] = {
    {64, 1, 16, -1, 1, 0}, /* programmatic dependent launch */
    {64, 1, 16, -1, 0, 1}, /* L2 evict_first on W */
    {64, 2, 16, -1, 1, 1}, /* two blocks per SM (fewer stages fit), both options */
    {64, 1, 16, 0, 0, 0},  /* X staged even where it would be resident */
    {64, 1, 16, 1, 0, 0},  /* X resident wherever it fits */
    {16, 1, 8, -1, 0, 0},  /* 16 tokens per pass, at most 8 stages */
};

/* Rung 09 configurations (blocks per SM, stages, early W; gemv_bf16_internal.h). */
static const tinfer_gemv09_cfg g09_cfgs[] = {
    {1, 2, 1, 0}, {2, 0, 1, 1}, {1, 3, 0, 0}, {1, 0, 1, 1}};

static tinfer_status run_one(const runner *r, const tinfer_gemm_bf16_args *a0, cudaStream_t s, tinfer_err *err) {
    tinfer_gemm_bf16_args wa = *a0;
    if (r->w_static) wa.w_static = 1;
    const tinfer_gemm_bf16_args *a = &wa;
    if (r->kind == 'p') {
        const tinfer_status st = tinfer_gemm_bf16_check(a, "gemv_bf16", err);
        return st != TINFER_OK ? st : tinfer_gemv_bf16_persistent_cfg(a, &g07_cfgs[r->id], s, err);
    }
    if (r->kind == 'v') return tinfer_gemv_bf16((tinfer_gemv_bf16_kernel)r->id, a, s, err);
    if (r->kind == 'b') {
        const tinfer_status st = tinfer_gemm_bf16_check(a, "gemv_bf16", err);
        return st != TINFER_OK ? st : tinfer_gemv_bf16_bulk_cfg(a, &g09_cfgs[r->id], s, err);
    }
    if (r->kind == 't') return tinfer_gemm_bf16_tc((tinfer_gemm_bf16_kernel)r->id, a, s, err);
    if (r->kind == 's') { /* rung 04: tile config id / 10, split factor id % 10 */
        const tinfer_status st = tinfer_gemm_bf16_check(a, "gemm_bf16", err);
        return st != TINFER_OK ? st : tinfer_gemm_bf16_mma_split(a, r->id / 10, r->id % 10, s, err);
    }
    if (r->kind == 'w') { /* rung 03 with a tile configuration forced */
        const tinfer_status st = tinfer_gemm_bf16_check(a, "gemm_bf16", err);
        return st != TINFER_OK ? st : tinfer_gemm_bf16_wgmma_ws_split(a, r->id % 1000, r->id / 1000 ? r->id / 1000 : 1, s, err);
    }
    if (r->kind == 'k') { /* rung 05 with token tile id % 100 and split factor id / 100 forced */
        const tinfer_status st = tinfer_gemm_bf16_check(a, "gemm_bf16", err);
        return st != TINFER_OK ? st : tinfer_gemm_bf16_skinny(a, r->id % 100, r->id / 100 ? r->id / 100 : 1, s, err);
    }
    if (r->kind == 'y') { /* rung 06: token tile id % 100, cluster id / 100 % 10, split-K factor id / 1000 % 10, ring stages
                           * id / 10000 % 100, consumer warpgroups id / 1000000 (0: the default) */
        const tinfer_status st = tinfer_gemm_bf16_check(a, "gemm_bf16", err);
        return st != TINFER_OK ? st
                               : tinfer_gemm_bf16_tiny_cfg(a, r->id % 100, r->id / 100 % 10, r->id / 1000 % 10, r->id / 10000 % 100,
                                                           r->id / 1000000, s, err);
    }
    if (r->kind == 'm') {
        const tinfer_status st = tinfer_gemm_bf16_check(a, "gemm_bf16", err);
        return st != TINFER_OK ? st : tinfer_gemm_bf16_mma(a, r->id, s, err);
    }
    return tinfer_gemm_bf16(a, (tinfer_gemm_bf16_path)r->id, s, err);
}

static double silu(double g) { return g / (1.0 + exp(-g)); }

void nss_words_host(float s, unsigned long long *hi, unsigned long long *lo) {
    s = s >= 0.f ? fminf(s, 0x1p52f) : 0.f;
    const float w = floorf(s);
    *hi = (unsigned long long)w;
    *lo = (unsigned long long)nearbyintf((s - w) * 0x1p32f); /* round to nearest even, as cvt.rn */
}

float nss_rs_host(unsigned long long hi, unsigned long long lo, int32_t n, float eps) {
    const float ss = (float)((double)hi + (double)lo * 0x1p-32);
    return 1.0f / sqrtf(ss / (float)n + eps);
}

/* Rung 03 (its entry, a forced tile, or the dispatcher's GEMM path where it may route there):
 * refuses the split RMSNorm's fields. */
static bool is_rung03(const runner &r) { return r.kind == 'w' || (r.kind == 't' && r.id == 3); }

/* Compares out (device copy of the whole buffer incl. guards) with ref for sampled rows.
 * Returns 0 on pass; prints the first bad index otherwise. */
static int compare(const char *label, const std::vector<uint8_t> &buf, tinfer_dtype yd, int64_t M, int64_t nout,
                   int64_t ldy, const std::vector<int64_t> &rows, const std::vector<double> &ref) {
    const size_t es = tinfer_dtype_size(yd);
    const size_t total = (size_t)(M * ldy) + 2 * GUARD;
    auto val = [&](size_t idx, uint32_t *bits) -> double {
        if (yd == TINFER_DTYPE_F32) {
            float f;
            memcpy(&f, &buf[idx * 4], 4);
            memcpy(bits, &f, 4);
            return f;
        }
        uint16_t h;
        memcpy(&h, &buf[idx * 2], 2);
        *bits = h;
        return tinfer_bf16_to_f32(h);
    };
    const uint32_t sentinel = yd == TINFER_DTYPE_F32 ? 0x7FBFFFFFu : 0x7FBFu;
    (void)es;
    /* guards and padding columns */
    for (size_t i = 0; i < total; i++) {
        const bool in_guard = i < GUARD || i >= total - GUARD;
        const int64_t e = (int64_t)i - GUARD;
        const bool pad = !in_guard && (e % ldy) >= nout;
        if (in_guard || pad) {
            uint32_t b;
            val(i, &b);
            if (b != sentinel) {
                printf("FAIL %s: guard/pad element %lld overwritten (bits 0x%x)\n", label, (long long)e, b);
                return 1;
            }
        }
    }
    double num = 0, den = 0, maxd = 0, maxr = 0;
    for (size_t ri = 0; ri < rows.size(); ri++) {
        const int64_t m = rows[ri];
        for (int64_t j = 0; j < nout; j++) {
            uint32_t b;
            const double o = val(GUARD + (size_t)(m * ldy + j), &b), rf = ref[ri * nout + j];
            if (isnan(o) || isinf(o)) {
                printf("FAIL %s: non-finite output at (m=%lld, j=%lld) (unwritten or NaN)\n", label, (long long)m,
                       (long long)j);
                return 1;
            }
            num += (o - rf) * (o - rf);
            den += rf * rf;
            if (fabs(o - rf) > maxd) maxd = fabs(o - rf);
            if (fabs(rf) > maxr) maxr = fabs(rf);
        }
    }
    const double tol = yd == TINFER_DTYPE_F32 ? TOL_F32 : TOL_BF16;
    const double nerr = den > 0 ? sqrt(num / den) : sqrt(num), merr = maxr > 0 ? maxd / maxr : maxd;
    if (!(nerr <= tol) || !(merr <= 8 * tol)) {
        /* find the first bad element for the message */
        for (size_t ri = 0; ri < rows.size(); ri++)
            for (int64_t j = 0; j < nout; j++) {
                uint32_t b;
                const double o = val(GUARD + (size_t)(rows[ri] * ldy + j), &b), rf = ref[ri * nout + j];
                if (fabs(o - rf) > 8 * tol * maxr) {
                    printf("FAIL %s: nerr %.3g maxerr %.3g (tol %.1g); first bad (m=%lld, j=%lld) got %.6g want %.6g\n",
                           label, nerr, merr, tol, (long long)rows[ri], (long long)j, o, rf);
                    return 1;
                }
            }
        printf("FAIL %s: nerr %.3g maxerr %.3g (tol %.1g)\n", label, nerr, merr, tol);
        return 1;
    }
    return 0;
}

/* The split RMSNorm's producer outputs against the kernel's own F32 Y (out, the whole buffer):
 * nx[m, j] = BF16(y * nw[j]) and each row's two words the sum of the words of its y^2, both
 * exactly (one F32 product and one rounding; integer sums); nx's guards and padding untouched. */
static int check_producer(const char *label, const std::vector<uint8_t> &out, int64_t ldy, const uint16_t *dnx,
                          int64_t ldnx, const std::vector<uint16_t> &nw, const unsigned long long *dss, int64_t M,
                          int64_t N) {
    std::vector<uint16_t> nx((size_t)(M * ldnx) + 2 * GUARD);
    std::vector<unsigned long long> ss((size_t)(2 * M));
    CK(cudaMemcpy(nx.data(), dnx, nx.size() * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ss.data(), dss, ss.size() * 8, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < nx.size(); i++) {
        const int64_t e = (int64_t)i - GUARD;
        if ((e < 0 || e >= M * ldnx || e % ldnx >= N) && nx[i] != 0x7FBF) {
            printf("FAIL %s: nx guard/pad element %lld overwritten\n", label, (long long)e);
            return 1;
        }
    }
    for (int64_t m = 0; m < M; m++) {
        unsigned long long hi = 0, lo = 0;
        for (int64_t j = 0; j < N; j++) {
            float y;
            memcpy(&y, &out[(GUARD + (size_t)(m * ldy + j)) * 4], 4);
            const uint16_t want = tinfer_f32_to_bf16(y * tinfer_bf16_to_f32(nw[j]));
            const uint16_t got = nx[GUARD + (size_t)(m * ldnx + j)];
            if (got != want) {
                printf("FAIL %s: nx (m=%lld, j=%lld) 0x%04x, want 0x%04x\n", label, (long long)m, (long long)j, got, want);
                return 1;
            }
            unsigned long long h, l;
            nss_words_host(y * y, &h, &l);
            hi += h, lo += l;
        }
        if (ss[2 * m] != hi || ss[2 * m + 1] != lo) {
            printf("FAIL %s: row %lld's sum of squares words %llu, %llu; want %llu, %llu\n", label, (long long)m,
                   ss[2 * m], ss[2 * m + 1], hi, lo);
            return 1;
        }
    }
    return 0;
}

void run_case(const test_case &c, const runner *runners, int nrun, cudaStream_t s) {
    const uint64_t seed = g_rng;
    const int64_t nout = c.swiglu ? c.N / 2 : c.N;
    const int64_t ldx = c.K + 8, ldw = c.K; /* padded X rows on purpose */
    const int64_t ldy = c.ly8 ? (nout + 7) / 8 * 8 + 8 : nout + 3; /* padded Y rows, aligned or not */
    std::vector<uint16_t> X((size_t)(c.M * ldx)), W((size_t)(c.N * ldw)), B((size_t)c.N);
    for (auto &v : X) v = rnd_bf16(1.0f);
    for (auto &v : W) v = rnd_bf16(1.0f);
    for (auto &v : B) v = rnd_bf16(1.0f);
    const size_t es = tinfer_dtype_size(c.yd);
    const size_t ybytes = ((size_t)(c.M * ldy) + 2 * GUARD) * es;
    std::vector<uint8_t> Y0(ybytes), R0(ybytes);
    const uint32_t sentinel = c.yd == TINFER_DTYPE_F32 ? 0x7FBFFFFFu : 0x7FBFu;
    for (size_t i = 0; i < ybytes / es; i++) memcpy(&Y0[i * es], &sentinel, es);
    /* residual: in place (R = Y), so Y's box starts as random values */
    if (c.resid) {
        for (int64_t m = 0; m < c.M; m++)
            for (int64_t j = 0; j < nout; j++) {
                const size_t idx = GUARD + (size_t)(m * ldy + j);
                const uint16_t h = rnd_bf16(2.0f);
                if (c.yd == TINFER_DTYPE_F32) {
                    const float f = tinfer_bf16_to_f32(h);
                    memcpy(&Y0[idx * 4], &f, 4);
                } else {
                    memcpy(&Y0[idx * 2], &h, 2);
                }
            }
    }
    R0 = Y0;
    /* the split RMSNorm: consumer rows' sums of squares (random, 0.5 .. 1000) and their 1 / rms;
     * producer outputs nx (sentinel-filled, padded rows, guards) and nss */
    const int32_t rn = (int32_t)c.K;
    const float reps = 1e-5f;
    const int64_t ldnx = c.N + 5;
    std::vector<unsigned long long> rss((size_t)(2 * c.M));
    std::vector<float> rs((size_t)c.M, 1.0f);
    std::vector<uint16_t> nw((size_t)c.N), NX0((size_t)(c.M * ldnx) + 2 * GUARD, 0x7FBF);
    if (c.split == 2)
        for (int64_t m = 0; m < c.M; m++) {
            nss_words_host(0.5f + (float)(rnd_u32() % 100000) * 0.01f, &rss[2 * m], &rss[2 * m + 1]);
            rs[m] = nss_rs_host(rss[2 * m], rss[2 * m + 1], rn, reps);
        }
    for (auto &v : nw) v = rnd_bf16(1.5f);
    /* rows to check */
    std::vector<int64_t> rows;
    if (c.M <= 256) {
        for (int64_t m = 0; m < c.M; m++) rows.push_back(m);
    } else {
        rows.push_back(0);
        rows.push_back(c.M - 1);
        for (int i = 0; i < 62; i++) rows.push_back((int64_t)(rnd_u32() % (uint32_t)c.M));
    }
    std::vector<double> ref(rows.size() * (size_t)nout);
    std::vector<double> xd((size_t)c.K);
    for (size_t ri = 0; ri < rows.size(); ri++) {
        const int64_t m = rows[ri];
        for (int64_t k = 0; k < c.K; k++) xd[k] = tinfer_bf16_to_f32(X[m * ldx + k]);
        for (int64_t j = 0; j < nout; j++) {
            double g = 0, u = 0;
            for (int64_t k = 0; k < c.K; k++) g += xd[k] * tinfer_bf16_to_f32(W[j * ldw + k]);
            if (c.swiglu)
                for (int64_t k = 0; k < c.K; k++) u += xd[k] * tinfer_bf16_to_f32(W[(nout + j) * ldw + k]);
            if (c.split == 2) g *= rs[m], u *= rs[m]; /* before the bias */
            if (c.bias) {
                g += tinfer_bf16_to_f32(B[j]);
                if (c.swiglu) u += tinfer_bf16_to_f32(B[nout + j]);
            }
            double v = c.swiglu ? silu(g) * u : g;
            if (c.resid) {
                const size_t idx = GUARD + (size_t)(m * ldy + j);
                if (c.yd == TINFER_DTYPE_F32) {
                    float f;
                    memcpy(&f, &R0[idx * 4], 4);
                    v += f;
                } else {
                    uint16_t h;
                    memcpy(&h, &R0[idx * 2], 2);
                    v += tinfer_bf16_to_f32(h);
                }
            }
            ref[ri * nout + j] = v;
        }
    }
    uint16_t *dX, *dW, *dB, *dnw = NULL, *dnx = NULL;
    unsigned long long *dss = NULL;
    uint8_t *dY;
    CK(cudaMalloc(&dX, X.size() * 2));
    CK(cudaMalloc(&dW, W.size() * 2));
    CK(cudaMalloc(&dB, B.size() * 2));
    CK(cudaMalloc(&dY, ybytes));
    if (c.split) {
        CK(cudaMalloc(&dss, rss.size() * 8));
        CK(cudaMalloc(&dnw, nw.size() * 2));
        CK(cudaMalloc(&dnx, NX0.size() * 2));
        CK(cudaMemcpy(dnw, nw.data(), nw.size() * 2, cudaMemcpyHostToDevice));
    }
    CK(cudaMemcpy(dX, X.data(), X.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dW, W.data(), W.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, B.data(), B.size() * 2, cudaMemcpyHostToDevice));
    std::vector<uint8_t> out(ybytes);
    for (int r = 0; r < nrun; r++) {
        if (g_only && !strstr(runners[r].name, g_only)) continue;
        CK(cudaMemcpy(dY, Y0.data(), ybytes, cudaMemcpyHostToDevice));
        if (c.split) { /* the consumer's sums, or the producer's zeroed ones */
            std::vector<unsigned long long> z(rss.size(), 0);
            CK(cudaMemcpy(dss, c.split == 2 ? rss.data() : z.data(), rss.size() * 8, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dnx, NX0.data(), NX0.size() * 2, cudaMemcpyHostToDevice));
        }
        /* a pageable upload may return before its DMA lands, and s does not wait for the legacy
         * stream: without this a kernel that starts early (programmatic launch) read the
         * previous runner's Y as its residual */
        CK(cudaDeviceSynchronize());
        tinfer_gemm_bf16_args a;
        memset(&a, 0, sizeof a);
        a.M = c.M; a.N = c.N; a.K = c.K;
        a.X = dX; a.ldx = ldx; a.W = dW; a.ldw = ldw;
        a.bias = c.bias ? dB : NULL;
        a.Y = dY + GUARD * es; a.ldy = ldy; a.y_dtype = c.yd;
        a.R = c.resid ? a.Y : NULL; a.ldr = ldy;
        a.swiglu = c.swiglu;
        if (c.split == 1) a.nx = dnx + GUARD, a.ldnx = ldnx, a.nw = dnw, a.nss = dss;
        if (c.split == 2) a.rss = dss, a.rn = rn, a.reps = reps;
        tinfer_err err;
        err.msg[0] = 0;
        char label[256];
        snprintf(label, sizeof label, "%s M=%lld N=%lld K=%lld %s%s%s%s%s seed=%llx", runners[r].name, (long long)c.M,
                 (long long)c.N, (long long)c.K, tinfer_dtype_name(c.yd), c.bias ? " bias" : "", c.resid ? " resid" : "",
                 c.swiglu ? " swiglu" : "", c.split == 1 ? " norm-producer" : c.split == 2 ? " norm-consumer" : "",
                 (unsigned long long)seed);
        g_cases++;
        tinfer_status st = run_one(&runners[r], &a, s, &err);
        if (c.split && is_rung03(runners[r]) && st != TINFER_ERR_UNSUPPORTED) {
            printf("FAIL %s: rung 03 took the split RMSNorm (status %d)\n", label, (int)st);
            g_fail++;
            CK(cudaStreamSynchronize(s));
            continue;
        }
        if (st == TINFER_ERR_UNSUPPORTED) {
            printf("skip %s: %s\n", label, err.msg);
            continue;
        }
        if (st != TINFER_OK) {
            printf("FAIL %s: status %d: %s\n", label, (int)st, err.msg);
            g_fail++;
            continue;
        }
        /* watchdog: a pipeline parity bug hangs instead of failing; report it and stop */
        for (int polls = 0;; polls++) {
            const cudaError_t q = cudaStreamQuery(s);
            if (q == cudaSuccess) break;
            if (q != cudaErrorNotReady) CK(q);
            if (polls > 30000) {
                printf("FAIL %s: no completion after 30 s (hang)\n", label);
                fflush(stdout);
                _exit(3);
            }
            usleep(1000);
        }
        CK(cudaMemcpy(out.data(), dY, ybytes, cudaMemcpyDeviceToHost));
        int bad = compare(label, out, c.yd, c.M, nout, ldy, rows, ref);
        if (!bad && c.split == 1) bad = check_producer(label, out, ldy, dnx, ldnx, nw, dss, c.M, c.N);
        if (bad) g_fail++;
    }
    if (c.split) {
        CK(cudaFree(dss));
        CK(cudaFree(dnw));
        CK(cudaFree(dnx));
    }
    CK(cudaFree(dX));
    CK(cudaFree(dW));
    CK(cudaFree(dB));
    CK(cudaFree(dY));
}

/* The comparator itself must reject NaN, unwritten outputs and trampled guards. */
void self_test_compare(void) {
    const int64_t M = 2, nout = 3, ldy = 4;
    const uint16_t sent = 0x7FBF;
    std::vector<uint8_t> buf(((size_t)(M * ldy) + 2 * GUARD) * 2);
    for (size_t i = 0; i < buf.size() / 2; i++) memcpy(&buf[i * 2], &sent, 2);
    std::vector<int64_t> rows = {0, 1};
    std::vector<double> ref = {1, 2, 3, 4, 5, 6};
    for (int m = 0; m < 2; m++)
        for (int j = 0; j < 3; j++) {
            const uint16_t h = tinfer_f32_to_bf16((float)ref[m * 3 + j]);
            memcpy(&buf[(GUARD + m * ldy + j) * 2], &h, 2);
        }
    int bad = 0;
    if (compare("selftest-good", buf, TINFER_DTYPE_BF16, M, nout, ldy, rows, ref) != 0) bad++;
    std::vector<uint8_t> b2 = buf;
    const uint16_t nan = 0x7FC0;
    memcpy(&b2[(GUARD + 1 * ldy + 2) * 2], &nan, 2);
    printf("(expected) ");
    if (compare("selftest-nan", b2, TINFER_DTYPE_BF16, M, nout, ldy, rows, ref) == 0) bad++;
    b2 = buf;
    memcpy(&b2[(GUARD + 1 * ldy + 2) * 2], &sent, 2); /* unwritten */
    printf("(expected) ");
    if (compare("selftest-unwritten", b2, TINFER_DTYPE_BF16, M, nout, ldy, rows, ref) == 0) bad++;
    b2 = buf;
    const uint16_t one = 0x3F80;
    memcpy(&b2[(GUARD + 0 * ldy + 3) * 2], &one, 2); /* padding column */
    printf("(expected) ");
    if (compare("selftest-pad", b2, TINFER_DTYPE_BF16, M, nout, ldy, rows, ref) == 0) bad++;
    if (bad) {
        printf("FAIL comparator self-test (%d)\n", bad);
        g_fail++;
    }
}

void bad_args(bool sm90) {
    tinfer_gemm_bf16_args a;
    memset(&a, 0, sizeof a);
    tinfer_err err;
    a.M = 1; a.N = 16; a.K = 12; a.ldx = 12; a.ldw = 12; a.ldy = 16;
    a.X = (const uint16_t *)(uintptr_t)0x1000; a.W = a.X; a.Y = (void *)(uintptr_t)0x2000;
    a.y_dtype = TINFER_DTYPE_BF16;
    if (tinfer_gemm_bf16(&a, TINFER_GEMM_BF16_PATH_AUTO, 0, &err) != TINFER_ERR_INVALID_ARG) {
        printf("FAIL bad args: K %% 8 != 0 accepted\n");
        g_fail++;
    } else {
        printf("ok   bad args: %s\n", err.msg);
    }
    a.K = 16; a.ldx = 16; a.ldw = 16; a.X = NULL;
    if (tinfer_gemm_bf16(&a, TINFER_GEMM_BF16_PATH_GEMM, 0, &err) != TINFER_ERR_INVALID_ARG) {
        printf("FAIL bad args: NULL X accepted\n");
        g_fail++;
    }
    /* rung 06's configuration refusals (sm_90; each refused before any launch): a token tile it
     * does not have, 48-token tiles with SwiGLU or with one warpgroup and multicast, two
     * warpgroups over an odd ring, three warpgroups */
    a.X = a.W; a.K = 256; a.ldx = 256; a.ldw = 256;
    struct { const char *what; int bt, cl, ks, st, wgs, sw; tinfer_status want; } ys[] = {
        {"token tile 40", 40, 1, 1, 0, 1, 0, TINFER_ERR_INVALID_ARG},
        {"48-token tile with SwiGLU", 48, 1, 1, 0, 1, 1, TINFER_ERR_UNSUPPORTED},
        {"48-token tile with one warpgroup and multicast", 48, 2, 0, 0, 1, 0, TINFER_ERR_UNSUPPORTED},
        {"two warpgroups over a 3-stage ring", 16, 1, 1, 3, 2, 0, TINFER_ERR_INVALID_ARG},
        {"two warpgroups over a 3-stage ring with multicast", 16, 2, 0, 3, 2, 0, TINFER_ERR_INVALID_ARG},
        {"three warpgroups", 16, 1, 1, 0, 3, 0, TINFER_ERR_INVALID_ARG},
    };
    if (sm90)
        for (const auto &y : ys) {
            a.swiglu = y.sw;
            const tinfer_status st = tinfer_gemm_bf16_tiny_cfg(&a, y.bt, y.cl, y.ks, y.st, y.wgs, 0, &err);
            printf("%s rung 06 refuses %s%s%s\n", st == y.want ? "ok  " : "FAIL", y.what, st == y.want ? ": " : "",
                   st == y.want ? err.msg : "");
            if (st != y.want) g_fail++;
        }
    a.swiglu = 0;
}

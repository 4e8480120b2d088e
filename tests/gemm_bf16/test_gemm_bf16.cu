/*
 * test_gemm_bf16.cu — every BF16 GEMM/GEMV kernel (gemm/bf16.h) against a CPU reference.
 *
 * Inputs are drawn fresh per case (seed printed), uniform in [-1, 1) and rounded to BF16 first;
 * the reference runs in double on exactly those BF16 values (and the same epilogue), so the
 * only differences are the kernels' FP32 accumulation and the final rounding to the output type.
 * Checks per case: normalized error ||out - ref|| / ||ref|| and max |out - ref| / max |ref|
 * within the documented bound; no NaN inside the output box (the output is pre-filled with a NaN
 * sentinel, so an unwritten element fails too); guard bands before/after the buffer and the
 * padding columns of every row keep the sentinel bit pattern. Large M compares a sample of rows.
 * Both dispatcher paths (forced GEMV and forced GEMM) run on the same inputs. Rung 04 (split-K
 * over a cluster) runs through its entry (auto split) and with each tile config x split factor
 * forced, including K so short that some blocks of a cluster get no k-tile. An optional second
 * argument NAME runs only the runners whose name contains NAME (e.g. `quick split`).
 * Usage: test-gemm-bf16 [quick|gemv|gemv-quick]   (quick: the reduced set run under
 * compute-sanitizer; gemv: the decode cases only; gemv-quick: both restrictions)
 * Exit: 0 pass, 1 fail, 77 no GPU (ctest reports skipped).
 */
#include "gemm/bf16.h"
#include "gemm/cuda/device.h"
#include "gemm/decode/gemv_bf16_internal.h" /* rung 07's launch configurations */
#include "gemm/tc/gemm_bf16_tc_internal.h" /* rung 02's fixed tile configs */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vector>

/* Tolerances (normalized L2 error; the max-element check allows 8x, since one element may sit
 * at a rounding boundary while the norm averages):
 *  - BF16 output: one rounding to BF16 is <= 2^-9 = 1.95e-3 relative per element; 4e-3 is that
 *    bound with 2x margin for the FP32 accumulation and SwiGLU's __expf.
 *  - F32 output: FP32 accumulation over K <= 16384 terms grows like sqrt(K) * 2^-24 (~8e-6); the
 *    tensor cores' FP32 accumulation does not round to nearest at every add, so allow 2e-4 (25x). */
#define TOL_BF16 4e-3
#define TOL_F32 2e-4
#define GUARD 256

static int g_fail = 0, g_cases = 0;
static const char *g_only = NULL; /* runner name filter (argv[2]) */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd_u32(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
static uint16_t rnd_bf16(float scale) {
    const float f = ((float)(rnd_u32() & 0xffffff) / 16777216.0f * 2.0f - 1.0f) * scale;
    return tinfer_f32_to_bf16(f);
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef struct test_case {
    int64_t M, N, K;
    tinfer_dtype yd;
    int bias, resid, swiglu;
    int ly8; /* 1: Y rows padded to a multiple of 8 elements (16-byte rows: the vector stores);
              * 0: ldy = N' + 3, rows deliberately misaligned */
} test_case;

/* kind: 'v' = GEMV rung, 't' = tensor-core rung, 'm' = rung 02 with tile config id, 'w' = rung 03 with
 * tile configuration id (72, 96, 128, 144, 192, 256, TINFER_GEMM_BF16_WGMMA_CFG_PP128 or _72MC) + 1000 x split-K factor, 's' = rung 04 with config * 10 + split factor, 'd' = dispatcher path,
 * 'p' = GEMV rung 07 with launch configuration g07_cfgs[id], 'b' = GEMV rung 09 with
 * launch configuration g09_cfgs[id], 'k' = rung 05 with token tile id % 100 and
 * split factor id / 100, 'y' = rung 06 with token tile id % 100, cluster id / 100 % 10 and split
 * factor id / 1000 (0: its own); any kind with w_static = 1 runs with args.w_static = 1 */
typedef struct runner {
    char kind;
    int id;
    const char *name;
    int w_static; /* 1: the call sets args.w_static (GEMV rungs 05 / 06 and prefill rungs 02 / 04
                   * then load W before the PDL wait; the others must simply ignore it) */
} runner;

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

static void run_case(const test_case &c, const runner *runners, int nrun, cudaStream_t s) {
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
    uint16_t *dX, *dW, *dB;
    uint8_t *dY;
    CK(cudaMalloc(&dX, X.size() * 2));
    CK(cudaMalloc(&dW, W.size() * 2));
    CK(cudaMalloc(&dB, B.size() * 2));
    CK(cudaMalloc(&dY, ybytes));
    CK(cudaMemcpy(dX, X.data(), X.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dW, W.data(), W.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, B.data(), B.size() * 2, cudaMemcpyHostToDevice));
    std::vector<uint8_t> out(ybytes);
    for (int r = 0; r < nrun; r++) {
        if (g_only && !strstr(runners[r].name, g_only)) continue;
        CK(cudaMemcpy(dY, Y0.data(), ybytes, cudaMemcpyHostToDevice));
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
        tinfer_err err;
        err.msg[0] = 0;
        char label[256];
        snprintf(label, sizeof label, "%s M=%lld N=%lld K=%lld %s%s%s%s seed=%llx", runners[r].name, (long long)c.M,
                 (long long)c.N, (long long)c.K, tinfer_dtype_name(c.yd), c.bias ? " bias" : "", c.resid ? " resid" : "",
                 c.swiglu ? " swiglu" : "", (unsigned long long)seed);
        g_cases++;
        tinfer_status st = run_one(&runners[r], &a, s, &err);
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
        if (compare(label, out, c.yd, c.M, nout, ldy, rows, ref)) g_fail++;
    }
    CK(cudaFree(dX));
    CK(cudaFree(dW));
    CK(cudaFree(dB));
    CK(cudaFree(dY));
}

/* The comparator itself must reject NaN, unwritten outputs and trampled guards. */
static void self_test_compare(void) {
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

static void bad_args(bool sm90) {
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

/* Argument checks that need no GPU (tinfer_gemm_bf16_check reads only the values): each bad
 * field alone must be refused with TINFER_ERR_INVALID_ARG, the good set accepted. */
static void check_args_host(void) {
    tinfer_gemm_bf16_args good;
    memset(&good, 0, sizeof good);
    good.M = 2; good.N = 16; good.K = 16; good.ldx = 16; good.ldw = 16; good.ldy = 16;
    good.X = (const uint16_t *)(uintptr_t)0x1000; good.W = good.X; good.Y = (void *)(uintptr_t)0x2000;
    good.y_dtype = TINFER_DTYPE_BF16;
    tinfer_err err;
    if (tinfer_gemm_bf16_check(&good, "test", &err) != TINFER_OK) {
        printf("FAIL check: good args refused: %s\n", err.msg);
        g_fail++;
    }
    struct { const char *what; void (*bad)(tinfer_gemm_bf16_args *); } cs[] = {
        {"K % 8 != 0", [](tinfer_gemm_bf16_args *a) { a->K = 12; a->ldx = 12; a->ldw = 12; }},
        {"ldy < N", [](tinfer_gemm_bf16_args *a) { a->ldy = 8; }},
        {"swiglu = 2", [](tinfer_gemm_bf16_args *a) { a->swiglu = 2; }},
        {"w_static = 2", [](tinfer_gemm_bf16_args *a) { a->w_static = 2; }},
        {"w_static = -1", [](tinfer_gemm_bf16_args *a) { a->w_static = -1; }},
        {"X misaligned", [](tinfer_gemm_bf16_args *a) { a->X = (const uint16_t *)(uintptr_t)0x1008; }},
    };
    for (const auto &c : cs) {
        tinfer_gemm_bf16_args a = good;
        c.bad(&a);
        const tinfer_status st = tinfer_gemm_bf16_check(&a, "test", &err);
        printf("%s check refuses %s%s%s\n", st == TINFER_ERR_INVALID_ARG ? "ok  " : "FAIL", c.what,
               st == TINFER_ERR_INVALID_ARG ? ": " : "", st == TINFER_ERR_INVALID_ARG ? err.msg : "");
        if (st != TINFER_ERR_INVALID_ARG) g_fail++;
    }
}

/* Rung 03's split pick (host arithmetic) on tables of co-resident clusters: a split only where
 * tiles are few and K is long, never with a cluster size whose clusters do not all fit, every
 * CTA with at least TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_KB k-blocks. */
static void split_pick(void) {
    int32_t roomy[TINFER_GEMM_BF16_WGMMA_WIDTHS][9], tight[TINFER_GEMM_BF16_WGMMA_WIDTHS][9];
    for (int w = 0; w < TINFER_GEMM_BF16_WGMMA_WIDTHS; w++)
        for (int k = 0; k < 9; k++) {
            roomy[w][k] = k ? 132 / k : 0;
            tight[w][k] = k <= 1 ? roomy[w][k] : 0; /* no cluster fits */
        }
    /* want_cfg: the tile width expected (0: any) */
    struct { int64_t M, N, K; int sw; const int32_t(*t)[9]; int want_split, want_cfg; } cs[] = {
        {128, 4096, 14336, 0, roomy, 1, 128}, /* Llama down, 32 tiles of 128 x 128 */
        {16, 6144, 4096, 0, roomy, 1, 256},   /* Llama QKV at M = 16 */
        {128, 4096, 14336, 0, tight, 0, 0},   /* no cluster fits: no split */
        {128, 3072, 576, 0, roomy, 0, 0},     /* short K: no split */
        {2048, 4096, 4096, 0, roomy, 0, 0},   /* many tiles: no split */
        {64, 2 * 1024, 8192, 1, roomy, 1, 256},
        /* SmolLM2 down (N' = 576 = 8 x 72): at M = 2048, 128 tiles of 72 fill the SMs unsplit;
         * at M = 128 / 512 the 72-wide tiles are few and the 128-wide tiles split, so 144 is not
         * tried */
        {2048, 576, 1536, 0, roomy, 0, 72},
        {128, 576, 1536, 0, roomy, 1, 128},
        {512, 576, 1536, 0, roomy, 1, 128},   /* 128 splits: 144 is not tried */
        {2048, 576, 1536, 0, tight, 0, 0},    /* no cluster fits: the unsplit tile */
        /* SmolLM2 gate/up (plain, N' = 3072, K = 576): at M = 512, 128 tiles of 96 fill one round
         * where 72 needs two (with TINFER_GEMM_BF16_WGMMA_96); at M = 256, 86 tiles of 72 fit one */
        {512, 3072, 576, 0, roomy, 0, TINFER_GEMM_BF16_WGMMA_96 ? 96 : 0},
        {256, 3072, 576, 0, roomy, 0, 72},
        /* 128 x 192 tiles (with TINFER_GEMM_BF16_WGMMA_192): SmolLM2 gate/up at M = 2048, 256
         * tiles in two rounds where 128 takes three (384 tiles); Llama-3-8B QKV at M = 512, 128
         * tiles in one round where 256 leaves 36 SMs idle (96 tiles, too many to split) */
        {2048, 3072, 576, 0, roomy, 0, TINFER_GEMM_BF16_WGMMA_192 ? 192 : 128},
        {512, 6144, 4096, 0, roomy, 0, TINFER_GEMM_BF16_WGMMA_192 ? 192 : 256},
    };
    for (const auto &c : cs) {
        int32_t cfg = 0, ks = 0;
        const int64_t nout = c.sw ? c.N / 2 : c.N;
        tinfer_gemm_bf16_wgmma_pick_split(c.M, nout, c.K, c.sw, 132, c.t, &cfg, &ks);
        const int64_t cols = c.sw ? cfg / 2 : cfg, tiles = ((c.M + 127) / 128) * ((nout + cols - 1) / cols);
        const int64_t kb = (c.K + 63) / 64, kper = (kb + ks - 1) / ks;
        const bool ok = (cfg == 72 || cfg == 96 || cfg == 128 || cfg == 144 || cfg == 192 || cfg == 256) && ks >= 1 && ks <= 8 && (ks > 1) == (c.want_split != 0) &&
                        (!c.want_cfg || cfg == c.want_cfg) &&
                        (ks == 1 || (tiles <= c.t[tinfer_gemm_bf16_wgmma_width_index(cfg)][ks] &&
                                     kper >= TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_KB));
        printf("%s split pick M=%lld N=%lld K=%lld%s: 128 x %d, factor %d\n", ok ? "ok  " : "FAIL", (long long)c.M,
               (long long)c.N, (long long)c.K, c.sw ? " swiglu" : "", (int)cfg, (int)ks);
        if (!ok) g_fail++;
    }
}

/* Rung 05's split pick (host arithmetic): the largest factor whose CTAs stay within FILL_NUM /
 * FILL_DEN (3/4) of the SMs, within the co-resident clusters and at least
 * TINFER_GEMM_BF16_SKINNY_MIN_KB k-blocks per CTA; none when no factor does. */
static void skinny_pick(void) {
    int32_t roomy[9], tight[9];
    for (int f = 0; f < 9; f++) {
        roomy[f] = f ? 264 / f : 0; /* two CTAs per SM on 132 SMs */
        tight[f] = f <= 1 ? roomy[f] : 0;
    }
    struct { int64_t M, N, K; int sw; const int32_t *t; int want; } cs[] = {
        {16, 49152, 576, 0, roomy, 1},    /* SmolLM2 LM head: 384 tiles */
        {16, 6144, 4096, 0, roomy, 2},    /* Llama QKV: 48 tiles, 2 x 48 <= 99 < 3 x 48 */
        {64, 4096, 14336, 0, roomy, 3},   /* Llama down: 32 tiles, 3 x 32 <= 99 */
        {32, 28672, 4096, 1, roomy, 1},   /* Llama gate/up, SwiGLU: 224 tiles of 64 outputs */
        {16, 6144, 4096, 0, tight, 1},    /* no cluster fits */
        {16, 960, 128, 0, roomy, 1},      /* two k-blocks: no split keeps >= 2 each */
        {16, 960, 576, 0, roomy, 5},      /* SmolLM2 QKV: 8 tiles, 9 k-blocks: 6..8 leave a rank none */
        {100, 4096, 4096, 0, roomy, 1},   /* two token tiles of 64: 64 tiles, 2 x 64 > 99 */
        {16, 1024, 8192, 0, roomy, 8},    /* 8 tiles: 8 is the largest */
        {16, 20000, 4096, 0, roomy, 1},   /* 157 tiles */
    };
    for (const auto &c : cs) {
        const int32_t f = tinfer_gemm_bf16_skinny_pick(c.M, c.sw ? c.N / 2 : c.N, c.K, c.sw, 132, c.t);
        const bool ok = f == c.want;
        printf("%s skinny pick M=%lld N=%lld K=%lld%s: token tile %d, factor %d (want %d)\n", ok ? "ok  " : "FAIL",
               (long long)c.M, (long long)c.N, (long long)c.K, c.sw ? " swiglu" : "", (int)tinfer_gemm_bf16_skinny_bt(c.M),
               (int)f, c.want);
        if (!ok) g_fail++;
    }
}

/* Rung 06's pick (host arithmetic, 132 SMs): 16-token tiles while their CTAs (64-output row tiles
 * x token tiles x split factor) fit one per SM, else (plain outputs, a K one CTA holds) 64-token
 * tiles while one per SM, else 32-token tiles while two per SM, else 64-token tiles while one per
 * SM (fewer where their shared memory does not fit), else none; a K that one CTA cannot hold split
 * as widely as that allows (up to 4) at 16 tokens, as little at 32 / 64; 16-token tiles with two
 * consumer warpgroups (so a K that one CTA holds, up to 22 k-blocks at 16 tokens, is not split),
 * 32 / 64-token ones with one; past all of those, plain outputs of a K over 13 k-blocks and up to
 * 2048 in unsplit 64-token tiles through a 12-stage ring, two warpgroups, while they fit one wave
 * (want_st: the ring's stages, 0 = a slot per k-block; want_wg: the warpgroups). */
static void tiny_pick(void) {
    struct { int64_t M, nout, K; int sw, n_sm, want, want_f, want_st, want_wg; } cs[] = {
        {16, 960, 576, 0, 132, 16, 1, 0, 2},    {128, 960, 576, 0, 132, 16, 1, 0, 2}, /* SmolLM2 QKV: 15 and 120 CTAs */
        {256, 960, 576, 0, 132, 64, 1, 0, 1},   {512, 960, 576, 0, 132, 64, 1, 0, 1}, /* 240 at 16 tokens; 60 / 120 at 64 */
        {1024, 960, 576, 0, 132, 0, 0, 0, 0},   {64, 3072, 576, 0, 132, 64, 1, 0, 1}, /* 240 at 64, 480 at 32; gate/up 192 at 16, 48 at 64 */
        {128, 3072, 576, 0, 132, 64, 1, 0, 1},  {256, 3072, 576, 0, 132, 0, 0, 0, 0}, /* 96 at 64; 192 at 64, 384 at 32 */
        {64, 1536, 576, 1, 132, 32, 1, 0, 1},   {16, 576, 1408, 0, 132, 16, 1, 0, 2}, /* fused gate/up: 48 row tiles of 32; 22 k-blocks fit */
        {256, 1536, 576, 1, 132, 0, 0, 0, 0},   {128, 1536, 576, 1, 132, 32, 1, 0, 1}, /* SwiGLU as gate/up: 384 / 192 at 32, 192 at 64 */
        {256, 576, 1536, 0, 132, 64, 2, 0, 1},  {16, 40, 576, 1, 132, 16, 1, 0, 2},   /* down: 72 CTAs of 64 tokens split 2; 2 row tiles */
        {16, 960, 40, 0, 132, 16, 1, 0, 2},     {16, 3072, 576, 0, 132, 16, 1, 0, 2}, /* K = 40: one k-block; gate/up: 48 CTAs */
        {32, 3072, 576, 0, 132, 16, 1, 0, 2},                                         /* 96 CTAs */
        {128, 576, 1152, 0, 132, 16, 1, 0, 2},  {512, 576, 1152, 0, 132, 64, 1, 12, 2}, /* 72 CTAs; 18 k-blocks: the ring (72 CTAs) */
        {16, 576, 1416, 0, 132, 16, 4, 0, 2},   {32, 576, 1536, 0, 132, 16, 4, 0, 2}, /* 23 / 24 k-blocks: split 4 (SmolLM2 down) */
        {64, 576, 1536, 0, 132, 16, 3, 0, 2},   {128, 576, 1536, 0, 132, 32, 2, 0, 1}, /* 144 CTAs at 4; 16 tokens: 144 at 2, 32: 72 at 2 */
        {512, 576, 1536, 0, 132, 64, 1, 12, 2}, {16, 576, 1408, 1, 132, 16, 1, 0, 2}, /* 144 CTAs at 64 x 2: the ring; SwiGLU holds plain's K */
        {448, 576, 1536, 0, 132, 64, 2, 0, 1},  {896, 576, 1536, 0, 132, 64, 1, 12, 2}, /* 126 CTAs at 64 x 2; the ring's last one wave */
        {960, 576, 1536, 0, 132, 0, 0, 0, 0},   {512, 576, 2112, 0, 132, 0, 0, 0, 0}, /* 135 ring CTAs; K past the ring's cap, 2048 */
        {512, 576, 1536, 0, 64, 0, 0, 0, 0},    {512, 3072, 1536, 1, 132, 0, 0, 0, 0}, /* 72 CTAs on 64 SMs; SwiGLU: no ring */
        {512, 576, 832, 0, 132, 64, 1, 0, 1},                                         /* 13 k-blocks fit one CTA's 64-token slots: no ring */
        {16, 576, 1416, 1, 132, 16, 4, 0, 2},                                         /* SwiGLU, 23 k-blocks: split */
        {16, 6144, 4096, 0, 132, 0, 0, 0, 0},   {32, 49152, 576, 0, 132, 0, 0, 0, 0}, /* Llama QKV (split 4: 384 CTAs); LM head */
        {16, 960, 576, 0, 0, 0, 0, 0, 0},                                             /* no device */
    };
    for (const auto &c : cs) {
        int32_t f = -1, st = -1, wg = -1;
        const int32_t bt = tinfer_gemm_bf16_tiny_pick(c.M, c.nout, c.K, c.sw, c.n_sm, &f, &st, &wg);
        const bool ok = bt == c.want && f == c.want_f && st == c.want_st && wg == c.want_wg;
        printf("%s tiny pick M=%lld N'=%lld K=%lld%s on %d SMs: %d tokens, split %d, ring %d, %d warpgroups (want %d, %d, %d, %d)\n",
               ok ? "ok  " : "FAIL", (long long)c.M, (long long)c.nout, (long long)c.K, c.sw ? " swiglu" : "", c.n_sm, (int)bt,
               (int)f, (int)st, (int)wg, c.want, c.want_f, c.want_st, c.want_wg);
        if (!ok) g_fail++;
    }
}

/* The GEMV path's rung (host arithmetic, bf16.h): rung 09 for 4..8 tokens, plain or residual,
 * K >= 4096 and at most 64 columns per SM; else rung 06 for K >= 8192 on sm_90; rung 08 for short
 * rows (K <= 1024) up to 16 tokens, or short wide weights; rung 05 otherwise. */
static void gemv_pick(void) {
    const tinfer_gemv_bf16_kernel R05 = TINFER_GEMV_BF16_CP_ASYNC, R06 = TINFER_GEMV_BF16_CLUSTER,
                                  R08 = TINFER_GEMV_BF16_STREAM, R09 = TINFER_GEMV_BF16_BULK;
    struct { const char *what; int64_t M, N, K; int sw, resid, cc, n_sm; tinfer_gemv_bf16_kernel want; } cs[] = {
        {"Llama QKV", 1, 6144, 4096, 0, 0, 9, 132, R05},   {"Llama QKV", 3, 6144, 4096, 0, 0, 9, 132, R05},
        {"Llama QKV", 4, 6144, 4096, 0, 0, 9, 132, R09},   {"Llama QKV", 8, 6144, 4096, 0, 0, 9, 132, R09},
        {"Llama QKV", 9, 6144, 4096, 0, 0, 9, 132, R05},   /* past 8 tokens (a forced GEMV path) */
        {"Llama QKV", 8, 6144, 4096, 0, 0, 9, 64, R05},    /* 96 columns per SM */
        {"Llama QKV", 8, 6144, 4096, 0, 0, 8, 132, R05},   /* not sm_90 */
        {"Llama down", 2, 4096, 14336, 0, 0, 9, 132, R06}, {"Llama down", 4, 4096, 14336, 0, 1, 9, 132, R09},
        {"Llama down", 8, 4096, 14336, 0, 1, 8, 132, R05}, /* not sm_90: no cluster rung either */
        {"Llama gate/up", 8, 28672, 4096, 0, 0, 9, 132, R05},
        {"gate/up SwiGLU", 8, 2 * 3072, 4096, 1, 0, 9, 132, R05}, /* SwiGLU: not rung 09 */
        {"SmolLM2 QKV", 4, 960, 576, 0, 0, 9, 132, R08},   {"SmolLM2 LM head", 1, 49152, 576, 0, 0, 9, 132, R08},
        {"K = 2048", 8, 4096, 2048, 0, 0, 9, 132, R05},
    };
    for (const auto &c : cs) {
        tinfer_gemm_bf16_args a;
        memset(&a, 0, sizeof a);
        a.M = c.M; a.N = c.N; a.K = c.K; a.swiglu = c.sw;
        a.R = c.resid ? (const void *)(uintptr_t)0x1000 : NULL;
        const tinfer_gemv_bf16_kernel got = tinfer_gemv_bf16_pick(&a, c.cc, c.n_sm);
        printf("%s gemv pick %s M=%lld N=%lld K=%lld%s%s sm_%d0 x %d: rung %02d (want %02d)\n", got == c.want ? "ok  " : "FAIL",
               c.what, (long long)c.M, (long long)c.N, (long long)c.K, c.sw ? " swiglu" : "", c.resid ? " resid" : "", c.cc,
               c.n_sm, (int)got, (int)c.want);
        if (got != c.want) g_fail++;
    }
}

/* The dispatcher's route (tinfer_gemm_bf16_route_for: host arithmetic, the rules in
 * gemm/dispatch.cu with bf16.h's constants) on an H200's facts (sm_90, 132 SMs) and with no
 * device (0, 0), so both run on a machine without a GPU: the decode GEMV up to
 * TINFER_GEMM_BF16_GEMV_MAX_M tokens; on sm_90 the GEMM path where rung 06 takes the shape;
 * beyond that the GEMV only for rung 08's short rows (up to TINFER_GEMV_BF16_STREAM_MAX_M tokens,
 * or _STREAM_PASS_MAX_M with the weight re-read once per 16-token pass within
 * _STREAM_PASS_TRAFFIC) or while that re-read stays within TINFER_GEMM_BF16_SMALL_W_TRAFFIC
 * (up to _SMALL_W_MAX_M tokens); then the rung on each path. And tinfer_gemm_bf16_choose (the
 * current device's facts) takes the path route_for gives for those facts. Skipped under
 * TINFER_GEMM_FORCE. */
static void route_choice(int cc, int n_sm) {
    if (getenv("TINFER_GEMM_FORCE")) return;
    struct { const char *what; int64_t M, N, K; int sw; const char *h200, *none; } cs[] = {
        {"Llama QKV", 1, 6144, 4096, 0, "gemv 05", "gemv 05"},
        {"Llama QKV", TINFER_GEMM_BF16_GEMV_MAX_M, 6144, 4096, 0, "gemv 09", "gemv 05"}, /* rung 09: sm_90, 4..8 tokens */
        {"Llama QKV", TINFER_GEMM_BF16_GEMV_MAX_M + 1, 6144, 4096, 0, "gemm 05", "gemm 01"}, /* skinny: 50 MB, <= 32 tokens */
        {"Llama QKV", 64, 6144, 4096, 0, "gemm 03", "gemm 01"},
        {"Llama down", 1, 4096, 14336, 0, "gemv 06", "gemv 05"},        /* K >= 8192: the cluster GEMV on sm_90 */
        {"SmolLM2 gate/up", 16, 3072, 576, 0, "gemm 06 t16 wg2", "gemv 08"}, /* else one rung 08 pass: 3.5 MB */
        {"SmolLM2 gate/up", 32, 3072, 576, 0, "gemm 06 t16 wg2", "gemv 08"}, /* else two passes: 7 MB */
        {"SmolLM2 gate/up", 64, 3072, 576, 0, "gemm 06 t64 wg1", "gemm 01"}, /* four passes: 14 MB */
        {"SmolLM2 down", 32, 576, 1536, 0, "gemm 06 t16 k/4 wg2", "gemv 05"}, /* else K > 1024, two passes 3.5 MB */
        {"SmolLM2 down", 33, 576, 1536, 0, "gemm 06 t16 k/4 wg2", "gemm 01"}, /* three passes: 5.3 MB */
        {"SmolLM2 down", 512, 576, 1536, 0, "gemm 06 t64 ring12 wg2", "gemm 01"},
        {"SmolLM2 down", 960, 576, 1536, 0, "gemm 03", "gemm 01"},      /* 135 ring CTAs: past one wave */
        {"SmolLM2 QKV", TINFER_GEMV_BF16_STREAM_PASS_MAX_M, 960, 576, 0, "gemm 06 t16 wg2", "gemv 08"}, /* 4 passes: 4.4 MB */
        {"SmolLM2 QKV", TINFER_GEMV_BF16_STREAM_PASS_MAX_M + 1, 960, 576, 0, "gemm 06 t16 wg2", "gemm 01"},
        {"SmolLM2 QKV", 1024, 960, 576, 0, "gemm 03", "gemm 01"},
        {"SmolLM2 O", 2048, 576, 576, 0, "gemm 03", "gemm 01"},
        {"SmolLM2 LM head", 1, 49152, 576, 0, "gemv 08", "gemv 08"},
        {"SmolLM2 LM head", TINFER_GEMV_BF16_STREAM_MAX_M, 49152, 576, 0, "gemv 08", "gemv 08"},
        {"SmolLM2 LM head", TINFER_GEMV_BF16_STREAM_MAX_M + 1, 49152, 576, 0, "gemm 05", "gemm 01"},
        {"SmolLM2 LM head", 64, 49152, 576, 0, "gemm 03", "gemm 01"},   /* past rung 05's 32 tokens */
        {"SmolLM2 gate/up SwiGLU", 64, 3072, 576, 1, "gemm 06 t32 wg1", "gemm 01"},
        {"SwiGLU 2048 x 2048", 128, 2048, 2048, 1, "gemm 04", "gemm 01"}, /* 4 wgmma tiles, no rung-06 tier */
    };
    { /* no arguments: no route, named "none"; a short buffer gets a terminated prefix */
        const tinfer_gemm_bf16_route r = tinfer_gemm_bf16_route_for(NULL, TINFER_GEMM_BF16_PATH_AUTO, 9, 132);
        char got[64], tiny[5];
        tinfer_gemm_bf16_route_name(&r, got, sizeof got);
        tinfer_gemm_bf16_args a;
        memset(&a, 0, sizeof a);
        a.M = 512; a.N = 576; a.K = 1536;
        const tinfer_gemm_bf16_route ring = tinfer_gemm_bf16_route_for(&a, TINFER_GEMM_BF16_PATH_AUTO, 9, 132);
        tinfer_gemm_bf16_route_name(&ring, tiny, sizeof tiny);
        const bool ok = r.path == TINFER_GEMM_BF16_PATH_AUTO && r.rung == 0 && !strcmp(got, "none") && !strcmp(tiny, "gemm");
        printf("%s route of NULL args: \"%s\"; a 5-byte name: \"%s\"\n", ok ? "ok  " : "FAIL", got, tiny);
        if (!ok) g_fail++;
    }
    for (const auto &c : cs) {
        for (int nodev = 0; nodev < 2; nodev++) {
            tinfer_gemm_bf16_args a;
            memset(&a, 0, sizeof a);
            a.M = c.M; a.N = c.N; a.K = c.K; a.swiglu = c.sw;
            const tinfer_gemm_bf16_route r =
                tinfer_gemm_bf16_route_for(&a, TINFER_GEMM_BF16_PATH_AUTO, nodev ? 0 : 9, nodev ? 0 : 132);
            char got[64];
            tinfer_gemm_bf16_route_name(&r, got, sizeof got);
            const char *want = nodev ? c.none : c.h200;
            const bool ok = !strcmp(got, want);
            printf("%s route %s M=%lld N=%lld K=%lld%s on %s: %s (want %s)\n", ok ? "ok  " : "FAIL", c.what,
                   (long long)c.M, (long long)c.N, (long long)c.K, c.sw ? " swiglu" : "", nodev ? "no device" : "sm_90 x 132",
                   got, want);
            if (!ok) g_fail++;
        }
        if (!c.sw) {
            tinfer_gemm_bf16_args a;
            memset(&a, 0, sizeof a);
            a.M = c.M; a.N = c.N; a.K = c.K;
            const tinfer_gemm_bf16_path want = tinfer_gemm_bf16_route_for(&a, TINFER_GEMM_BF16_PATH_AUTO, cc, n_sm).path;
            if (tinfer_gemm_bf16_choose(c.M, c.N, c.K) != want) {
                printf("FAIL choose %s M=%lld on this device (sm_%d0 x %d) differs from its route\n", c.what, (long long)c.M, cc,
                       n_sm);
                g_fail++;
            }
        }
    }
}

int main(int argc, char **argv) {
    const bool quick = argc > 1 && (!strcmp(argv[1], "quick") || !strcmp(argv[1], "gemv-quick"));
    const bool gemv_only = argc > 1 && !strncmp(argv[1], "gemv", 4);
    if (argc > 2) g_only = argv[2];
    tinfer_device_info info;
    tinfer_err err;
    tinfer_status st = tinfer_device_probe(0, &info, &err);
    /* host-only checks first: they run (and can fail) on a machine without a GPU too */
    route_choice(st == TINFER_OK ? info.cc_major : 0, st == TINFER_OK ? info.n_sm : 0);
    check_args_host();
    split_pick();
    skinny_pick();
    tiny_pick();
    gemv_pick();
    if (st == TINFER_ERR_NO_DEVICE) {
        printf("skip: %s (host checks: %d failed)\n", err.msg, g_fail);
        return g_fail ? 1 : 77;
    }
    if (st != TINFER_OK) {
        printf("FAIL device: %s\n", err.msg);
        return 1;
    }
    printf("device %s sm_%d%d, %d SMs; seed 0x%llx\n", info.name, info.cc_major, info.cc_minor, info.n_sm,
           (unsigned long long)g_rng);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    self_test_compare();
    bad_args(info.cc_major == 9);

    const runner gemv_all[] = {{'v', 1, "gemv01"}, {'v', 2, "gemv02"}, {'v', 3, "gemv03"}, {'v', 4, "gemv04"},
                               {'v', 5, "gemv05"}, {'v', 6, "gemv06"}, {'v', 7, "gemv07"}, {'v', 8, "gemv08"},
                               /* args.w_static: W loads before the PDL wait where the grid fills the SM
                                * slots, at 3 blocks per SM where 4 would not (05_cp_async.cu); rung 08
                                * loads its first tile's W before the wait */
                               {'v', 5, "gemv05/wstatic", 1}, {'v', 6, "gemv06/wstatic", 1}, {'v', 8, "gemv08/wstatic", 1},
                               /* rung 09 (sm_90; skipped as unsupported elsewhere): its default, W before
                                * the wait, a ring of 2 stages (refilled every other k-tile), two blocks
                                * per SM sized for two grids, a ring of 3 without the early W, one block
                                * sized for two grids */
                               {'v', 9, "gemv09"}, {'v', 9, "gemv09/wstatic", 1}, {'b', 0, "gemv09/s2/wstatic", 1},
                               {'b', 1, "gemv09/2bps"}, {'b', 2, "gemv09/s3/noearly", 1}, {'b', 3, "gemv09/cores/wstatic", 1}};
    const int n_gemv = (int)(sizeof gemv_all / sizeof gemv_all[0]);
    /* rung 07 with its default and each launch configuration */
    const runner g07_all[] = {{'v', 7, "gemv07"},      {'p', 0, "gemv07/pdl"},    {'p', 1, "gemv07/evict"},
                              {'p', 2, "gemv07/2bps"}, {'p', 3, "gemv07/xstage"}, {'p', 4, "gemv07/xres"},
                              {'p', 5, "gemv07/16tok"}};
    const int n_g07 = (int)(sizeof g07_all / sizeof g07_all[0]);
    /* rung 02 runs through its entry (auto tile config) and with each tile config forced */
    const runner gemm_all[] = {{'t', 1, "wmma"},          {'t', 2, "mma"},           {'m', 0, "mma64x64"},
                               {'m', 1, "mma128x64"},     {'m', 2, "mma128x128"},    {'t', 3, "wgmma"},
                               /* rung 03 with each tile configuration forced (its entry picks one per shape) */
                               {'w', 128, "wgmma128"},    {'w', 256, "wgmma256"},    {'w', 144, "wgmma144"},
                               {'w', 72, "wgmma72"},      {'w', TINFER_GEMM_BF16_WGMMA_CFG_72MC, "wgmma72mc"}, {'w', 96, "wgmma96"},
                               {'w', 192, "wgmma192"},
                               {'w', TINFER_GEMM_BF16_WGMMA_CFG_PP128, "wgmma_pp128"},
                               /* rung 03 split-K over a cluster (id = tile width + 1000 x factor) */
                               {'w', 2000 + 128, "wgmma128/k2"}, {'w', 3000 + 256, "wgmma256/k3"},
                               {'w', 4000 + 256, "wgmma256/k4"}, {'w', 8000 + 128, "wgmma128/k8"},
                               {'w', 2000 + 144, "wgmma144/k2"}, {'w', 6000 + 144, "wgmma144/k6"},
                               /* rung 04 (split-K over a cluster): entry (auto), config x split factor */
                               {'t', 4, "split"},         {'s', 2, "split64x64/2"},  {'s', 4, "split64x64/4"},
                               {'s', 8, "split64x64/8"},  {'s', 12, "split128x64/2"}, {'s', 14, "split128x64/4"},
                               {'s', 18, "split128x64/8"}, {'s', 22, "split128x128/2"}, {'s', 24, "split128x128/4"},
                               {'s', 28, "split128x128/8"},
                               /* rung 05 (skinny, operands swapped): entry (auto tile and split), each
                               * token tile forced (smaller than M: several token tiles), splits */
                               {'t', 5, "skinny"},        {'k', 8, "skinny8"},       {'k', 16, "skinny16"},
                               {'k', 32, "skinny32"},     {'k', 64, "skinny64"},     {'k', 300 + 16, "skinny16/k3"},
                               {'k', 200 + 64, "skinny64/k2"}, {'k', 800 + 8, "skinny8/k8"}, {'k', 500 + 32, "skinny32/k5"},
                               /* rung 06 (tiny: one 64-row tile per CTA, W multicast over a cluster of
                                * token tiles): entry (auto), token tile x cluster forced (id = tile +
                                * 100 x cluster; clusters wider than the token tiles hold empty CTAs);
                                * K past what fits is skipped as unsupported */
                               {'t', 6, "tiny"},          {'y', 116, "tiny16/c1"},   {'y', 216, "tiny16/c2"},
                               {'y', 816, "tiny16/c8"},   {'y', 132, "tiny32/c1"},   {'y', 432, "tiny32/c4"},
                               {'t', 6, "tiny/wstatic", 1}, {'y', 816, "tiny16/c8/wstatic", 1},
                               /* rung 06 with K split over a cluster (id + 1000 x factor; lowered so
                                * every rank has k-blocks) */
                               {'y', 2116, "tiny16/k2"},  {'y', 3132, "tiny32/k3"},  {'y', 4116, "tiny16/k4"},
                               {'y', 8116, "tiny16/k8"},  {'y', 3116, "tiny16/k3/wstatic", 1},
                               /* 64-token tiles: alone, W multicast over 2, K split over 2 / 4 */
                               {'y', 164, "tiny64/c1"},   {'y', 264, "tiny64/c2"},   {'y', 2164, "tiny64/k2"},
                               {'y', 4164, "tiny64/k4/wstatic", 1},
                               /* a ring of stages (id + 10000 x stages): any K in one CTA, or its
                                * share of a split; the W of the first round before the PDL wait */
                               {'y', 20016, "tiny16/r2"}, {'y', 40064, "tiny64/r4"}, {'y', 32032, "tiny32/k2/r3"},
                               {'y', 23064, "tiny64/k3/r2/wstatic", 1}, {'y', 50164, "tiny64/r5/wstatic", 1},
                               /* rings with the W box multicast over 2 / 4 / 8 token tiles: a slot
                                * is refilled once every CTA of the cluster released it */
                               {'y', 20232, "tiny32/c2/r2"}, {'y', 30416, "tiny16/c4/r3"},
                               {'y', 40864, "tiny64/c8/r4/wstatic", 1}, {'y', 20464, "tiny64/c4/r2/wstatic", 1},
                               /* two consumer warpgroups taking alternate k-blocks (id + 1000000 x 2):
                                * a slot per k-block, split, even rings (2 stages: each warpgroup
                                * refills the slot it just read), plain and split */
                               {'y', 2000116, "tiny16/w2"}, {'y', 2000164, "tiny64/w2"}, {'y', 2003132, "tiny32/k3/w2"},
                               {'y', 2002164, "tiny64/k2/w2/wstatic", 1}, {'y', 2020164, "tiny64/r2/w2"},
                               {'y', 2042164, "tiny64/k2/r4/w2"}, {'y', 2060132, "tiny32/r6/w2/wstatic", 1},
                               {'y', 2020116, "tiny16/r2/w2"},
                               /* 48-token tiles (plain outputs, no multicast; SwiGLU cases are
                                * skipped as unsupported): alone, split, rings, two warpgroups */
                               {'y', 148, "tiny48/c1"}, {'y', 3148, "tiny48/k3"}, {'y', 30148, "tiny48/r3"},
                               {'y', 2000148, "tiny48/w2"}, {'y', 2120148, "tiny48/r12/w2", 1}, {'y', 2042148, "tiny48/k2/r4/w2"},
                               /* two warpgroups with the W box multicast: a slot per k-block, rings
                                * (each warpgroup releases its slot in every CTA of the cluster) */
                               {'y', 2000216, "tiny16/c2/w2"}, {'y', 2020264, "tiny64/c2/r2/w2"},
                               {'y', 2040448, "tiny48/c4/r4/w2"}, {'y', 2120832, "tiny32/c8/r12/w2", 1},
                               /* args.w_static: rungs 02 / 04 issue their first stages' W loads before
                                * the PDL wait (PDL is on at K <= 2048); rungs 03 / 05 ignore it */
                               {'t', 3, "wgmma/wstatic", 1}, {'w', 144, "wgmma144/wstatic", 1},
                               {'w', 2000 + 128, "wgmma128/k2/wstatic", 1}, {'t', 5, "skinny/wstatic", 1},
                               {'k', 16, "skinny16/wstatic", 1}, {'k', 300 + 16, "skinny16/k3/wstatic", 1},
                               {'t', 2, "mma/wstatic", 1}, {'s', 4, "split64x64/4/wstatic", 1}};
    const int n_gemm = (int)(sizeof gemm_all / sizeof gemm_all[0]);
    const runner paths[] = {{'d', TINFER_GEMM_BF16_PATH_GEMV, "path=gemv"}, {'d', TINFER_GEMM_BF16_PATH_GEMM, "path=gemm"}};
    const tinfer_dtype BF = TINFER_DTYPE_BF16, F = TINFER_DTYPE_F32;

    /* decode: M = 1..16 on a ragged N, odd K; then epilogue variants */
    for (int64_t M = 1; M <= 16; M++) {
        if (quick && M != 1 && M != 9) continue;
        run_case({M, 100, 72, F, 0, 0, 0}, gemv_all, n_gemv, s);
        if (!quick) run_case({M, 1000, 576, BF, 1, 0, 0}, gemv_all, n_gemv, s);
    }
    const test_case dcases[] = {
        {1, 8, 8, F, 0, 0, 0},          {17, 33, 40, F, 0, 0, 0},       {5, 576, 1536, BF, 0, 1, 0},
        {3, 2 * 600, 576, BF, 1, 0, 1}, {16, 2 * 40, 264, F, 1, 1, 1},  {1, 4096, 4096, BF, 0, 0, 0},
        {8, 2048, 14336, F, 0, 0, 0},   {33, 300, 128, BF, 1, 1, 0},
        /* 375-382 blocks of 16 columns: on 132 SMs the w_static runners take the early weight
         * stream at 3 blocks per SM (8 stages at M = 1), 6 at M = 8, ragged N and K */
        {1, 6000, 520, BF, 0, 0, 0},    {8, 6100, 264, F, 0, 1, 0},     {3, 6004, 1000, BF, 1, 0, 0},
        /* short rows, more 16-column tiles than rung 08's resident blocks (3 x 132 on an H200), so
         * each block walks several tiles through both register buffers: 1-4 chunks per warp
         * (K = 72 / 264 / 576 / 1000), 8 / 16 tokens per pass (X in registers / staged in
         * shared memory), partial and full passes, 2-3 passes (M = 17, 32, 33, 40), ragged N */
        {1, 16400, 576, BF, 0, 0, 0},   {9, 16390, 1000, F, 1, 0, 0},   {17, 16408, 264, BF, 0, 1, 0},
        {4, 20000, 72, F, 0, 0, 0},     {16, 16385, 576, BF, 1, 1, 0},  {32, 16400, 576, F, 1, 1, 0},
        {40, 16392, 72, BF, 0, 0, 0},   {33, 16400, 1000, BF, 1, 0, 0},
    };
    for (const auto &c : dcases) {
        if (quick && c.K > 1536) continue;
        run_case(c, gemv_all, n_gemv, s);
    }
    /* rung 07 past 16 tokens per pass (up to 64, SwiGLU 32) and its launch configurations:
     * resident X (short K) and staged X (long K), ragged N and K, several passes, every epilogue;
     * more 16-column tiles than resident blocks, so a block walks several tiles */
    const test_case g07cases[] = {
        {1, 100, 72, F, 0, 0, 0},          {8, 1000, 576, BF, 1, 0, 0},       {9, 40, 264, F, 0, 1, 0},
        {17, 300, 136, F, 0, 0, 0},        {32, 4100, 576, BF, 1, 1, 0},      {33, 2 * 200, 264, BF, 1, 0, 1},
        {40, 2 * 72, 1000, F, 0, 1, 1},    {48, 600, 2056, BF, 0, 0, 0},      {64, 8200, 576, F, 1, 0, 0},
        {64, 2 * 300, 576, BF, 0, 1, 1},   {65, 500, 128, BF, 1, 1, 0},       {100, 130, 4104, F, 0, 0, 0},
        {5, 2 * 1536, 4096, BF, 0, 0, 1},  {16, 520, 14336, F, 0, 1, 0},
    };
    for (const auto &c : g07cases) {
        if (quick && (c.K > 1100 || c.N > 2000 || c.M > 65)) continue;
        run_case(c, g07_all, n_g07, s);
    }
    /* prefill at decode-sized M = 1..16: ragged N and K; every epilogue at once with SwiGLU */
    for (int64_t M = 1; M <= 16 && !gemv_only; M++) {
        if (quick && M != 1 && M != 9) continue;
        run_case({M, 100, 72, F, 0, 0, 0}, gemm_all, n_gemm, s);
        if (!quick) run_case({M, 2 * 72, 40, BF, 1, 1, 1}, gemm_all, n_gemm, s);
    }
    /* prefill: ragged, tile-exact, epilogues, large M (sampled rows) */
    const test_case pcases[] = {
        {1, 1, 8, F, 0, 0, 0},           {17, 33, 40, F, 0, 0, 0},        {128, 256, 64, BF, 0, 0, 0},
        {129, 257, 72, F, 1, 0, 0},      {300, 700, 520, BF, 1, 1, 0},    {200, 2 * 300, 576, BF, 1, 0, 1},
        {64, 2 * 130, 128, F, 0, 1, 1},  {512, 1024, 1024, F, 0, 0, 0},   {2048, 2 * 1536, 576, BF, 0, 0, 1},
        {1000, 960, 576, BF, 1, 0, 0},   {2048, 576, 1536, BF, 0, 1, 0},  {4096, 4096, 4096, BF, 0, 0, 0},
        /* long K for rung 04: ragged K (2056 = 64 k-tiles + 8; 1032), every epilogue, F32 */
        {100, 520, 2056, F, 1, 1, 0},    {64, 2 * 200, 4096, BF, 1, 1, 1}, {48, 300, 14336, BF, 0, 1, 0},
        {130, 2 * 96, 1032, F, 1, 1, 1},
        /* many tiles per CTA (ping-pong consumers alternate tiles; >= 2 x 132 128 x 128 tiles):
         * ragged M, N and K, fewer k-blocks than pipeline stages (the ring wraps inside a tile
         * and across consumers), one k-block, every epilogue */
        {1000, 8200, 72, BF, 1, 1, 0},   {3000, 2 * 2100, 200, F, 1, 1, 1}, {700, 9000, 8, BF, 0, 0, 0},
        {2100, 4100, 1000, BF, 0, 0, 0},
        /* the same under the quick set's size cap (sanitizer runs): K of one / two k-blocks */
        {300, 33000, 8, BF, 1, 1, 0},    {200, 2 * 17000, 16, F, 0, 0, 1},
        /* plain BF16 into 16-byte aligned Y rows: rung 03's whole-line stores on whole tiles, and
         * on edge tiles when N' % 8 == 0 (1000, 9000, 4104); N' = 1004 keeps edge tiles on the
         * general path; one-k-block and long-K rings */
        {200, 1000, 64, BF, 0, 0, 0, 1}, {128, 256, 64, BF, 0, 0, 0, 1}, {300, 1004, 72, BF, 0, 0, 0, 1},
        {700, 9000, 8, BF, 0, 0, 0, 1},  {2100, 4104, 1000, BF, 0, 0, 0, 1}, {2048, 4096, 1024, BF, 0, 0, 0, 1},
        {129, 257, 72, F, 1, 0, 0, 1},   {200, 2 * 300, 576, BF, 1, 1, 1, 1},
        /* fused epilogues into aligned BF16 rows (rung 03 stores them in whole lines too): bias,
         * SwiGLU with and without bias, residual with and without bias; N' % 8 == 0 or not */
        {300, 1000, 136, BF, 1, 0, 0, 1}, {300, 2 * 1000, 136, BF, 1, 0, 1, 1}, {300, 2 * 1004, 72, BF, 0, 0, 1, 1},
        {300, 1000, 200, BF, 1, 1, 0, 1}, {260, 1004, 64, BF, 0, 1, 0, 1},      {2048, 2 * 1536, 576, BF, 0, 0, 1, 1},
        {1000, 4096, 1024, BF, 0, 1, 0, 1},
        /* rung 03's TMA-store epilogue (BF16 into 16-byte rows, no residual) with CTAs walking
         * several tiles (the output buffer reused): plain and bias + SwiGLU, ragged M and N' */
        {300, 33000, 8, BF, 0, 0, 0, 1},  {700, 2 * 8200, 8, BF, 1, 0, 1, 1},  {190, 2 * 8204, 24, BF, 1, 0, 1, 1},
        /* few tiles (rung 03's split-K, and its M <= 64 tiles where one consumer computes):
         * every epilogue, ragged K (4104 = 64 k-blocks + 8), M = 1, 16, 33, 64, 130 */
        {16, 960, 576, BF, 0, 0, 0, 1},   {64, 576, 1536, BF, 1, 1, 0, 1},    {1, 2 * 1536, 576, BF, 0, 0, 1, 1},
        {130, 700, 2056, F, 1, 1, 0},     {33, 600, 4104, BF, 0, 0, 0, 1},    {64, 2 * 300, 1000, BF, 1, 0, 1},
        /* rung 06's pick through its ring of two consumer warpgroups (K past one CTA's 64-token
         * slots, 9 x 8 tiles in one wave): ragged M, N and K (24 k-blocks + 8), bias + residual */
        {500, 570, 1544, F, 1, 1, 0},     {512, 576, 1536, BF, 0, 0, 0, 1},
        /* 128 x 144 tiles (rung 03 for N' = 576): whole-line stores, whose last 64-column piece
         * holds 16 columns (SwiGLU: 8), plain / bias + residual / SwiGLU, exact and ragged edges
         * (N' = 136: an edge tile's lines end inside that piece; 100: the general path) */
        {2048, 576, 1536, BF, 0, 0, 0, 1}, {512, 576, 1536, BF, 1, 1, 0, 1},  {300, 2 * 576, 1536, BF, 1, 0, 1, 1},
        {128, 576, 1024, BF, 1, 1, 0, 1},  {64, 2 * 576, 1024, BF, 0, 0, 1, 1}, {130, 136, 136, BF, 0, 0, 0, 1},
        {130, 100, 136, BF, 1, 0, 0, 1},   {200, 2 * 580, 200, F, 1, 1, 1},    {100, 2 * 136, 520, BF, 1, 0, 1, 1},
        /* one token tile and more 128-row tiles than CTAs (157 / 141 / 313 / 157 on 132 SMs):
         * rung 05's persistent CTAs walk several tiles through the ring; k-blocks not a multiple
         * of the stage's (9 of 2), SwiGLU, ragged N, every token tile (M = 8 / 16 / 32 / 64 under
         * skinny8..64) */
        {8, 20000, 72, BF, 1, 0, 0, 1},    {16, 2 * 9000, 136, BF, 1, 0, 1, 1}, {32, 40000, 576, F, 0, 1, 0},
        {64, 20004, 520, BF, 1, 1, 0, 1},  {5, 20000, 1000, BF, 0, 0, 0},
        /* rung 06: 7 / 9 token tiles in clusters of 8 (empty CTAs in the last cluster), SwiGLU
         * with bias (32-output row tiles, the last one partial: F = 600), the longest K that fits
         * one CTA at 16 tokens (22 k-blocks) with an FP32 residual, and one past it (split by its
         * own pick), plain and SwiGLU with bias (F = 200: 7 row tiles, the last one partial) */
        {100, 960, 576, BF, 0, 0, 0, 1},   {130, 2 * 600, 576, BF, 1, 0, 1, 1}, {48, 576, 1408, F, 0, 1, 0},
        {33, 300, 1416, BF, 0, 0, 0},      {40, 2 * 200, 1416, BF, 1, 0, 1, 1},
    };
    for (const auto &c : pcases) {
        if (gemv_only) break;
        if (quick && (c.M * c.N * c.K > 300ll * 700 * 520)) continue;
        run_case(c, gemm_all, n_gemm, s);
    }
    /* dispatcher: both paths on the same inputs */
    const test_case dpc[] = {{1, 960, 576, BF, 0, 0, 0}, {8, 2 * 1536, 576, BF, 1, 0, 1}, {16, 576, 1536, BF, 0, 1, 0},
                             {17, 576, 576, F, 0, 0, 0}, {64, 1000, 264, BF, 1, 1, 0},
                             /* the GEMV path's rung choice: 06 for K >= 8192, 04 for short wide W, 09
                              * from 4 tokens for long rows of at most 64 x SMs columns */
                             {4, 256, 8192, BF, 0, 1, 0}, {2, 16400, 576, BF, 1, 0, 0}, {5, 2000, 4104, BF, 1, 1, 0},
                             /* the GEMM path's rung choice: few wgmma tiles -> rung 02, many -> rung 03 */
                             {128, 960, 576, BF, 1, 0, 0}, {2048, 2 * 1536, 576, BF, 0, 0, 1},
                             /* few wgmma tiles and long K: rung 04 with its automatic split at M <= 64,
                              * rung 03 with 128 x 128 tiles above */
                             {64, 1024, 8192, BF, 0, 1, 0}, {200, 2 * 512, 4096, BF, 1, 0, 1}};
    for (const auto &c : dpc) {
        if (quick && (c.M > 8 || c.N * c.K > 2000000)) continue;
        run_case(c, paths, 2, s);
    }
    CK(cudaStreamDestroy(s));
    printf("%s: %d runs, %d failed\n", g_fail ? "FAIL" : "PASS", g_cases, g_fail);
    return g_fail ? 1 : 0;
}

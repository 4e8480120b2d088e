/*
 * bf16_trace.cu — the BF16 benchmark's trace sets (`tinfer-bench-gemm bf16 trace|tytrace|tybisect`,
 * bf16.cu), compiled only in builds configured with -DTINFER_WS_TRACE=ON: rung 03's phase
 * timestamps (gemm/tc/ws_trace.cuh) and rung 06's per-k-block timestamps and bisection
 * (06_wgmma_tiny.cu).
 */
#include "examples/bench_gemm/bf16_internal.h"
#include "examples/bench_gemm/knobs.h"
#include "gemm/tc/gemm_bf16_tc_internal.h"

#include <string.h>

#ifdef TINFER_WS_TRACE
/* Set "trace" (builds configured with -DTINFER_WS_TRACE=ON only): rung 03's phase timestamps
 * (gemm/tc/ws_trace.cuh) for one call on an idle GPU ("iso") and for the last of 50 back to
 * back ("b2b"), next to the graph-timed cost per call. Each slot: median / max over the CTAs of
 * the time since the first CTA's entry (globaltimer, ns), and the median per-CTA cycles since
 * its own entry (clock64). */
/* Random BF16 X [M, K], W [N, K], a BF16 Y [M, N], and the arguments of a call on them */
struct trace_case {
    uint16_t *x, *w, *y;
    tinfer_gemm_bf16_args a;
};
static trace_case trace_case_new(int64_t M, int64_t N, int64_t K) {
    trace_case c;
    BCK(cudaMalloc(&c.x, (size_t)M * K * 2));
    BCK(cudaMalloc(&c.w, (size_t)N * K * 2));
    BCK(cudaMalloc(&c.y, (size_t)M * N * 2));
    bf16_fill_kernel<<<256, 256, 0, g_s>>>(c.x, (size_t)M * K, 1);
    bf16_fill_kernel<<<256, 256, 0, g_s>>>(c.w, (size_t)N * K, 2);
    memset(&c.a, 0, sizeof c.a);
    c.a.M = M; c.a.N = N; c.a.K = K; c.a.X = c.x; c.a.ldx = K; c.a.W = c.w; c.a.ldw = K;
    c.a.Y = c.y; c.a.ldy = N; c.a.y_dtype = TINFER_DTYPE_BF16;
    return c;
}
/* 20 warm-up calls, then the graph-timed cost per call */
template <class F> static double trace_graph_us(F call) {
    for (int i = 0; i < 20; i++) call(i);
    const bool gsave = g_graph;
    g_graph = true;
    const double us = time_us(call, 200);
    g_graph = gsave;
    return us;
}
static void trace_case_free(trace_case &c) {
    BCK(cudaFree(c.x));
    BCK(cudaFree(c.w));
    BCK(cudaFree(c.y));
}
extern "C" int tinfer_ws_trace_read(unsigned long long *ns, long long *clk);
extern "C" int tinfer_ws_trace_clear(void);
static void trace_print(const char *tag) {
    static unsigned long long ns[1024][8];
    static long long clk[1024][8];
    BCK(cudaDeviceSynchronize());
    if (tinfer_ws_trace_read(&ns[0][0], &clk[0][0]) != 0) {
        fprintf(stderr, "error: trace read\n");
        exit(1);
    }
    unsigned long long t0 = ~0ull;
    int n = 0;
    for (int b = 0; b < 1024; b++)
        if (ns[b][0]) {
            n++;
            t0 = std::min(t0, ns[b][0]);
        }
    printf("  %-4s CTAs %4d |", tag, n);
    for (int sl = 1; sl < 8; sl++) {
        std::vector<double> d, c;
        for (int b = 0; b < 1024; b++)
            if (ns[b][0] && ns[b][sl]) {
                d.push_back((double)(ns[b][sl] - t0));
                c.push_back((double)(clk[b][sl] - clk[b][0]));
            }
        if (d.empty()) {
            printf(" s%d -", sl);
            continue;
        }
        std::sort(d.begin(), d.end());
        std::sort(c.begin(), c.end());
        printf(" s%d %.0f/%.0f ns %.0fc", sl, d[d.size() / 2], d.back(), c[c.size() / 2]);
    }
    printf("\n");
}
void trace_set(void) {
    const struct { const char *n; int64_t M, N, K; } ts[] = {
        {"smol_down", 128, 576, 1536}, {"smol_down", 512, 576, 1536}, {"smol_down", 2048, 576, 1536},
        {"smol_o", 64, 576, 576},      {"smol_o", 512, 576, 576},      {"smol_qkv", 128, 960, 576},
        {"smol_gateup", 512, 3072, 576}, {"llama_qkv", 128, 6144, 4096}, {"square", 4096, 4096, 4096}};
    for (const auto &t : ts) {
        trace_case tc = trace_case_new(t.M, t.N, t.K);
        tinfer_gemm_bf16_args &a = tc.a;
        auto call = [&](int) {
            tinfer_err err;
            if (tinfer_gemm_bf16_tc(TINFER_GEMM_BF16_WGMMA_WS, &a, g_s, &err) != TINFER_OK) {
                fprintf(stderr, "error: %s\n", err.msg);
                exit(1);
            }
        };
        const double us = trace_graph_us(call);
        printf("trace %-12s M=%-5lld N=%-5lld K=%-5lld graph %.2f us/call\n", t.n, (long long)t.M, (long long)t.N,
               (long long)t.K, us);
        BCK(cudaDeviceSynchronize());
        if (tinfer_ws_trace_clear() != 0) exit(1);
        call(0);
        trace_print("iso");
        for (int i = 0; i < 50; i++) call(i);
        trace_print("b2b");
        trace_case_free(tc);
    }
}

/* Set "tytrace" (trace builds only): rung 06's per-k-block timestamps (06_wgmma_tiny.cu,
 * TY_MARK) for one call with W and X in L2 ("warm"), one after a 512 MB write evicted them
 * ("cold") and the last of 50 back to back ("b2b"), next to the graph-timed cost per call. Per
 * k-block i, the median over the CTAs of the ns since each CTA's own entry at which the producer
 * issued its loads ("iss"), the consumer saw it land ("land") and its wgmmas completed ("done"). */
extern "C" int tinfer_ty_trace_read(unsigned long long *c, unsigned long long *p);
extern "C" int tinfer_ty_trace_clear(void);
extern "C" int tinfer_ty_trace_flags(int f);
/* the last call's trace: consumer c[CTA][], producer p[CTA][] (06_wgmma_tiny.cu, TY_MARK) */
static unsigned long long ty_c[512][64], ty_p[512][32];
static void tytrace_read(void) {
    BCK(cudaDeviceSynchronize());
    if (tinfer_ty_trace_read(&ty_c[0][0], &ty_p[0][0]) != 0) {
        fprintf(stderr, "error: trace read\n");
        exit(1);
    }
}
static void tytrace_print(const char *tag, int nkb) {
    auto &c = ty_c;
    auto &p = ty_p;
    tytrace_read();
    unsigned long long t0 = ~0ull;
    std::vector<int> bs;
    for (int b = 0; b < 512; b++)
        if (c[b][0]) {
            bs.push_back(b);
            t0 = std::min(t0, c[b][0]);
        }
    auto med = [&](auto f, bool mx = false) {
        std::vector<double> v;
        for (int b : bs) {
            const double x = f(b);
            if (x >= 0) v.push_back(x);
        }
        if (v.empty()) return -1.0;
        std::sort(v.begin(), v.end());
        return mx ? v.back() : v[v.size() / 2];
    };
    auto rel = [&](int b, unsigned long long t) { return t && c[b][0] ? (double)(t - c[b][0]) : -1.0; };
    printf("  %-4s CTAs %3zu | entry (since the first) med %.0f max %.0f | wait %.0f | loop done %.0f | epilogue done %.0f, max since the first entry %.0f ns\n",
           tag, bs.size(), med([&](int b) { return (double)(c[b][0] - t0); }), med([&](int b) { return (double)(c[b][0] - t0); }, true),
           med([&](int b) { return rel(b, c[b][1]); }), med([&](int b) { return rel(b, c[b][58]); }),
           med([&](int b) { return rel(b, c[b][59]); }), med([&](int b) { return c[b][59] ? (double)(c[b][59] - t0) : -1.0; }, true));
    for (int i = 0; i < nkb && i < 28; i++)
        printf("    kb %2d iss %6.0f land %6.0f (max %6.0f) done %6.0f\n", i, i < 30 ? med([&](int b) { return rel(b, p[b][i]); }) : -1.0,
               med([&](int b) { return rel(b, c[b][2 + i]); }), med([&](int b) { return rel(b, c[b][2 + i]); }, true),
               med([&](int b) { return rel(b, c[b][30 + i]); }));
}
/* One rung-06 call of the trace sets (weights marked static), exiting on error */
static void ty_call(const tinfer_gemm_bf16_args &a, int bt, int cl, int ks, int st) {
    tinfer_err err;
    if (tinfer_gemm_bf16_tiny_ring(&a, bt, cl, ks, st, g_s, &err) != TINFER_OK) {
        fprintf(stderr, "error: %s\n", err.msg);
        exit(1);
    }
}
void tytrace_set(void) {
    const struct { const char *n; int64_t M, N, K; int bt, cl, ks, st; } ts[] = {
        {"smol_down", 128, 576, 1536, 64, 1, 1, 12}, {"smol_down", 128, 576, 1536, 64, 1, 2, 0},
        {"smol_down", 128, 576, 1536, 64, 1, 4, 0},  {"smol_down", 512, 576, 1536, 64, 1, 1, 12},
        {"smol_down", 512, 576, 1536, 64, 8, 1, 12}, {"smol_down", 512, 576, 1536, 64, 1, 2, 0},
        {"smol_qkv", 512, 960, 576, 32, 1, 1, 0},    {"smol_qkv", 128, 960, 576, 16, 1, 1, 0},
        {"smol_down", 512, 576, 1536, 64, 1, 3, 4},  {"smol_down", 512, 576, 1536, 48, 1, 1, 12}};
    uint8_t *flush;
    BCK(cudaMalloc(&flush, 512ull << 20));
    for (const auto &t : ts) {
        trace_case tc = trace_case_new(t.M, t.N, t.K);
        tc.a.w_static = 1;
        auto call = [&](int) { ty_call(tc.a, t.bt, t.cl, t.ks, t.st); };
        const double us = trace_graph_us(call);
        const int nkb = (int)((t.K + 63) / 64 + t.ks - 1) / t.ks;
        printf("tytrace %-10s M=%-5lld tile %d cluster %d split %d stages %d: graph %.2f us/call\n", t.n, (long long)t.M, t.bt, t.cl, t.ks,
               t.st, us);
        BCK(cudaDeviceSynchronize());
        if (tinfer_ty_trace_clear() != 0) exit(1);
        call(0);
        tytrace_print("warm", nkb);
        BCK(cudaMemsetAsync(flush, 1, 512ull << 20, g_s));
        if (tinfer_ty_trace_clear() != 0) exit(1);
        call(0);
        tytrace_print("cold", nkb);
        for (int i = 0; i < 50; i++) call(i);
        tytrace_print("b2b", nkb);
        /* the same call without its wgmmas (loads, barriers, epilogue of zeros) */
        if (tinfer_ty_trace_flags(1) != 0) exit(1);
        BCK(cudaDeviceSynchronize());
        if (tinfer_ty_trace_clear() != 0) exit(1);
        call(0);
        tytrace_print("nomma", nkb);
        if (tinfer_ty_trace_flags(0) != 0) exit(1);
        trace_case_free(tc);
    }
    BCK(cudaFree(flush));
}

/* Set "tybisect" (trace builds only): rung 06 with parts of the kernel switched off or moved
 * (tinfer_ty_trace_flags; 06_wgmma_tiny.cu), to find what holds a CTA's k-blocks to ~350 ns
 * each. Per flag set: the graph-timed cost per call, and from one call (W and X in L2) the
 * medians over the CTAs of the first k-block's landing (ns since the CTA's entry), the interval
 * between k-blocks ((last - first landing) / (k-blocks - 1)) and the rate that gives per CTA. */
void tybisect_set(void) {
    const struct { const char *n; int64_t M, N, K; int bt, ks, st; } ts[] = {
        {"smol_down", 512, 576, 1536, 64, 1, 12}, {"smol_down", 128, 576, 1536, 64, 2, 0}, {"smol_qkv", 128, 960, 576, 16, 1, 0},
        {"smol_o", 128, 576, 576, 64, 1, 0},      {"smol_o", 128, 576, 576, 64, 3, 0},     {"smol_down", 128, 576, 1536, 64, 2, 6}};
    /* TYF_: 1 no wgmma, 4 W after the PDL wait with X, 8 no griddepcontrol, 16 one polling
     * consumer thread, 32 ring slots released at once, 64 the producer's ring waits sleep between
     * polls, 128 the producer's ring lanes sleep until the first round landed, 256 a ring's first
 * round only, 512 (with 256) no slot released */
    const struct { const char *n; int f; } fs[] = {
        {"as is", 0},         {"nomma", 1},          {"nomma latew", 5},   {"+nogdc", 13},
        {"+poll1", 29},       {"+relnow", 61},       {"psleep", 64},       {"plate", 128},
        {"psleep plate", 192}, {"nomma psleep", 65}, {"nomma plate", 129}, {"round1", 256},
        {"nomma round1", 257}, {"round1 norel", 768}, {"nomma r1 norel", 769}};
    printf("tybisect: PDL launch attribute %s\n", tinfer_gemm_knobs_get()->gemm_wgmma_pdl == 0 ? "off" : "on");
    for (const auto &t : ts) {
        trace_case tc = trace_case_new(t.M, t.N, t.K);
        tc.a.w_static = 1;
        auto call = [&](int) { ty_call(tc.a, t.bt, 1, t.ks, t.st); };
        const int nkb = (int)std::min<int64_t>(((t.K + 63) / 64 + t.ks - 1) / t.ks, 28);
        const double kb_bytes = 64.0 * 128 + t.bt * 128.0;
        for (const auto &f : fs) {
            if (tinfer_ty_trace_flags(f.f) != 0) exit(1);
            const double us = trace_graph_us(call);
            BCK(cudaDeviceSynchronize());
            if (tinfer_ty_trace_clear() != 0) exit(1);
            call(0);
            tytrace_read();
            /* r1: the k-blocks of a ring's first round (all requested at once) */
            const int r1 = t.st > 0 && t.st < nkb ? t.st : nkb;
            const int nk = f.f & 256 ? r1 : nkb; /* TYF_ROUND1: the first round only */
            std::vector<double> first, iv, iv1;
            for (int b = 0; b < 512; b++) {
                if (!ty_c[b][0] || !ty_c[b][2] || !ty_c[b][2 + nk - 1]) continue;
                first.push_back((double)(ty_c[b][2] - ty_c[b][0]));
                iv.push_back((double)(ty_c[b][2 + nk - 1] - ty_c[b][2]) / (nk - 1));
                iv1.push_back((double)(ty_c[b][2 + r1 - 1] - ty_c[b][2]) / (r1 - 1));
            }
            if (iv.empty()) {
                fprintf(stderr, "error: empty trace\n");
                exit(1);
            }
            std::sort(first.begin(), first.end());
            std::sort(iv.begin(), iv.end());
            std::sort(iv1.begin(), iv1.end());
            const double ivm = iv[iv.size() / 2];
            printf("tybisect %-9s M=%-4lld tile %d split %d stages %2d | %-14s (%3d) | graph %6.2f us | first %5.0f ns | kb every %4.0f ns = %5.1f B/ns per CTA (first %d: %4.0f ns)\n",
                   t.n, (long long)t.M, t.bt, t.ks, t.st, f.n, f.f, us, first[first.size() / 2], ivm, kb_bytes / ivm, r1, iv1[iv1.size() / 2]);
        }
        if (tinfer_ty_trace_flags(0) != 0) exit(1);
        trace_case_free(tc);
    }
}
#endif

/*
 * bf16.cu — `tinfer-bench-gemm bf16 [set] [--json F] [--png PREFIX] [--quick]`: the BF16 GEMM /
 * GEMV kernels (gemm/bf16.h) against cuBLAS BF16 (cublasGemmEx, TN, FP32 compute, BF16 out),
 * measured in the same run; the splitk set adds cublasLt (cublasLtMatmul, same layout and types,
 * the heuristic's first algorithm with a 32 MB workspace) and prints each kernel's share of the
 * better of the two references ("best").
 *
 * Sets: square (M = N = K = 1024..8192: wmma, mma.sync, wgmma, cuBLAS, cublasLt), model (SmolLM2-135M and
 * Llama-3-8B projection shapes at M = 1..2048: dispatcher "auto", decode rung 05, wgmma,
 * cuBLAS, and the fused SwiGLU / residual epilogues through "auto"; at M = 1 also the read
 * ceiling of the weight, "read_pdl" / "read": a kernel that only reads its bytes, and "read_early":
 * the same with every read before the PDL wait; "read_coP_G": G blocks per SM, launch_dependents
 * first and P batches of loads before the wait, so the next grid fits beside it), ladder (decode rungs 01..09
 * at M = 1 and 8, rung 08 on short rows only, with the dispatcher and both references), prefill (the model shapes at M = 32..2048: "auto", rung 02 with its own tile
 * pick and with each tile config forced, wgmma, cuBLAS, fused epilogues through "auto"; not part
 * of all), splitk (the split-K rung 04: Llama-3-8B QKV / down and the SmolLM2 shapes at M = 32..2048,
 * "auto", rung 04's own pick and each tile config x split factor forced, rung 02, wgmma, cuBLAS
 * and cublasLt; not part of all), decode (rung 07 and its launch configurations vs rungs 04-06, the dispatcher and
 * cuBLAS at M = 1..64; not part of all), wsplit (rung 03's split-K: each tile width x split
 * factor forced at M = 16..2048 where tiles are few, vs its own pick, rung 04, the dispatcher, cuBLAS
 * and cublasLt; not part of all), skinny (rung 05, the operand-swapped wgmma kernel, at M = 1..128 with each
 * split factor forced, vs the dispatcher, rung 03 and both references; not part of all), tiny (rung
 * 06 on the SmolLM2 layer weights at M = 16..2048, token tile, cluster and split forced or picked,
 * vs the dispatcher and both references; not part of all), tinybig (rung 06 past one wave: the
 * LM head, Llama-3-8B through rings, SmolLM2 down / gate-up at 512 through short rings; not part of
 * all), wide96 (rung 03's 128 x 96 tiles against 72 / 128 / 256 on the SmolLM2 shapes at
 * M = 128..2048; not part of all), wide192 (rung 03's 128 x 192 tiles against 256 / 128 / 96
 * and the pick where the width rule would take them, with controls; not part of all), wg2 (rung 06 with one consumer warpgroup against two, in the
 * same forced configurations, on the SmolLM2 layer weights; not part of all), bulk (decode rung 09 and its launch configurations against
 * rungs 05 / 06, the read probes and both references on the Llama-3-8B weights at M = 1..8; not
 * part of all), tmabw (the TMA load path alone by box
 * shape, stages, issuers and CTAs: tma_bw.cu; not part of all), trace (builds
 * configured with -DTINFER_WS_TRACE=ON only: rung 03's per-CTA phase timestamps on a few shapes, see
 * gemm/tc/ws_trace.cuh), all (default: ladder, square, model).
 * Method: inputs are random BF16 (never zeros), each kernel's output is checked
 * against cuBLAS's before timing (normalized difference printed), warm-up, then 7 batches of
 * launches timed with events, median batch. Weights and activations rotate over enough copies
 * that one batch touches >= 256 MB, so decode rates are DRAM rates, not L2 (H200 L2 is 60 MB).
 * The copy ceiling is a 2 GiB device-to-device cudaMemcpyAsync, counting read + write bytes.
 * --only SHAPE:M[,SHAPE:M...] restricts a set to those shapes at those M (e.g. for a profiler).
 * --graph times CUDA-graph replays of each batch (device time, no per-launch host cost; the
 * JSON says which: "timing": "graph" or "stream"; it also records the GPU, driver, date and
 * set); --w-static sets args.w_static on every call
 * (W not written by work in flight, as for model weights; JSON "w_static"); set wgmma: rung 03's tile configurations (128 x 128, 128 x 256, ping-pong 128 x 128) forced.
 * Output: a table on stdout, JSON records (--json), and two PNG charts (--png PREFIX:
 * PREFIX_tflops.png TFLOP/s vs M, PREFIX_gbs.png GB/s vs M, ours vs cuBLAS).
 */
extern "C" { /* chart.h is a C header without C++ guards */
#include "examples/bench_gemm/chart.h"
#include "examples/bench_gemm/knobs.h"
}
#include "gemm/bf16.h"
#include "gemm/tc/gemm_bf16_tc_internal.h" /* rung 02's fixed tile configs (prefill set) */
#include "gemm/decode/gemv_bf16_internal.h"  /* rung 07's launch configurations (decode set) */

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <algorithm>
#include <string>
#include <vector>

#define BCK(call)                                                                                  \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "error: %s at %s:%d: %s\n", #call, __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static __global__ void bf16_fill_kernel(uint16_t *p, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)(i >> 32) * 0x9e3779b9u ^ seed;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        const float f = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
        p[i] = __bfloat16_as_ushort(__float2bfloat16_rn(f));
    }
}

/* normalized difference of two BF16 outputs (device), computed on the host */
static double bf16_diff(const uint16_t *a, const uint16_t *b, size_t n) {
    std::vector<uint16_t> ha(n), hb(n);
    BCK(cudaMemcpy(ha.data(), a, n * 2, cudaMemcpyDeviceToHost));
    BCK(cudaMemcpy(hb.data(), b, n * 2, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double x = tinfer_bf16_to_f32(ha[i]), y = tinfer_bf16_to_f32(hb[i]);
        if (!std::isfinite(x)) return INFINITY;
        num += (x - y) * (x - y);
        den += y * y;
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

typedef struct rec {
    std::string set, shape, kernel;
    int64_t M, N, K;
    double us, tflops, gbs, pct_cublas, pct_copy, diff;
    double pct_best; /* of the faster of cuBLAS and cublasLt (0 when cublasLt was not run) */
    double host_us;  /* host time per call to enqueue a batch (stream timing; 0 with --graph) */
    std::string route; /* the dispatcher's kernels (20-22): the route it ran (tinfer_gemm_bf16_route_name) */
} rec;

static cudaStream_t g_s;
static cublasHandle_t g_cublas;
static cublasLtHandle_t g_lt;
static void *g_lt_ws;                              /* cublasLt workspace */
static const size_t g_lt_ws_bytes = (size_t)32 << 20; /* 32 MB: the size the issue names */

#define LTCK(call)                                                                                 \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            fprintf(stderr, "error: %s at %s:%d: cuBLAS status %d\n", #call, __FILE__, __LINE__, (int)s_); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* A cublasLt plan for Y[M,N] = X[M,K] W[N,K]^T in column-major terms: D[N,M] = W^T[N,K] X[K,M]
 * (op(A) = T on W stored K x N, B = X stored K x M), BF16 in/out, FP32 compute and scale. */
typedef struct lt_plan {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
} lt_plan;

static void lt_plan_make(lt_plan *p, int64_t M, int64_t N, int64_t K) {
    LTCK(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LTCK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LTCK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LTCK(cublasLtMatrixLayoutCreate(&p->la, CUDA_R_16BF, (uint64_t)K, (uint64_t)N, K));
    LTCK(cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_16BF, (uint64_t)K, (uint64_t)M, K));
    LTCK(cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_16BF, (uint64_t)N, (uint64_t)M, N));
    cublasLtMatmulPreference_t pref;
    LTCK(cublasLtMatmulPreferenceCreate(&pref));
    LTCK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &g_lt_ws_bytes,
                                              sizeof g_lt_ws_bytes));
    cublasLtMatmulHeuristicResult_t h;
    int found = 0;
    LTCK(cublasLtMatmulAlgoGetHeuristic(g_lt, p->op, p->la, p->lb, p->lc, p->lc, pref, 1, &h, &found));
    if (found < 1) {
        fprintf(stderr, "error: cublasLt found no algorithm for M=%lld N=%lld K=%lld\n", (long long)M,
                (long long)N, (long long)K);
        exit(1);
    }
    p->algo = h.algo;
    LTCK(cublasLtMatmulPreferenceDestroy(pref));
}

static void lt_plan_free(lt_plan *p) {
    cublasLtMatrixLayoutDestroy(p->la);
    cublasLtMatrixLayoutDestroy(p->lb);
    cublasLtMatrixLayoutDestroy(p->lc);
    cublasLtMatmulDescDestroy(p->op);
}
static double g_copy_gbs = 0;
static bool g_quick = false;
/* --graph: each batch of launches is captured once into a CUDA graph and the graph replayed, so
 * the figure is device time without the host's per-launch cost (for many small
 * launches, a captured graph's replays are timed); without it, back-to-back stream launches. */
static bool g_graph = false;
/* --w-static: every call promises that no work in flight writes W (args.w_static, as for model
 * weights): the decode rungs 05 / 06 then issue their first W loads before the PDL wait */
static bool g_w_static = false;
static int g_cc_major; /* the device's (and g_n_sm below), for the dispatcher's route in the records */
/* every kernel but the references and read ceilings runs gate/up fused with SwiGLU (Y: N / 2 columns; timed only) */
static bool g_swiglu = false;
/* --only SHAPE:M: run just that shape at that M (e.g. under a profiler) */
static const char *g_only = NULL;

/* Host time per call of the last time_us batch set (median; stream timing only): when it is
 * close to the timed figure, the figure is the host's launch rate, not the kernel. */
static double g_host_us = 0;
static double host_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

/* median over 7 batches of `reps` launches of fn(i) (i rotates the buffers), in microseconds */
template <typename Fn> static double time_us(Fn fn, int reps) {
    cudaEvent_t e0, e1;
    BCK(cudaEventCreate(&e0));
    BCK(cudaEventCreate(&e1));
    std::vector<float> t;
    std::vector<double> h;
    int it = 0;
    cudaGraphExec_t ge = NULL;
    if (g_graph) {
        cudaGraph_t g;
        BCK(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeThreadLocal));
        for (int r = 0; r < reps; r++) fn(it++);
        BCK(cudaStreamEndCapture(g_s, &g));
        BCK(cudaGraphInstantiate(&ge, g, 0));
        BCK(cudaGraphDestroy(g));
        BCK(cudaGraphLaunch(ge, g_s)); /* upload + warm-up */
    }
    for (int b = 0; b < (g_quick ? 3 : 7); b++) {
        BCK(cudaEventRecord(e0, g_s));
        if (ge) BCK(cudaGraphLaunch(ge, g_s));
        else {
            const double h0 = host_now_us();
            for (int r = 0; r < reps; r++) fn(it++);
            h.push_back((host_now_us() - h0) / reps);
        }
        BCK(cudaEventRecord(e1, g_s));
        BCK(cudaEventSynchronize(e1));
        float ms = 0;
        BCK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    std::sort(h.begin(), h.end());
    g_host_us = h.empty() ? 0 : h[h.size() / 2];
    if (ge) BCK(cudaGraphExecDestroy(ge));
    BCK(cudaEventDestroy(e0));
    BCK(cudaEventDestroy(e1));
    return t[t.size() / 2] * 1000.0 / reps;
}

/* The grid-stride read both read kernels share: elements i, i + stride, .. of p[0, n), eight
 * 16-byte streaming loads in flight per thread, XOR-folded into acc. */
static __device__ __forceinline__ uint32_t read_fold(const uint4 *p, size_t n, size_t i, size_t stride, uint32_t acc) {
    for (; i + 7 * stride < n; i += 8 * stride) {
        uint4 v[8];
#pragma unroll
        for (int j = 0; j < 8; j++) v[j] = __ldcs(p + i + j * stride);
#pragma unroll
        for (int j = 0; j < 8; j++) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    }
    for (; i < n; i += stride) {
        const uint4 v = __ldcs(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    return acc;
}
/* The read ceiling of a decode shape (kernel ids 8 and 10): every byte of the weight copy read
 * once with 16-byte streaming loads, 8 in flight per thread, 4 blocks of 256 threads per SM,
 * grid-stride, folded with XOR and stored only when the fold equals a constant (so the loads are
 * live). It does no arithmetic and no reduction, so its time is what any kernel that must read
 * these bytes can reach at this size, launch ramp and drain included. pdl: launched like the
 * decode rungs (programmatic stream serialization, nothing read before griddepcontrol.wait,
 * launch_dependents after the loop); pdl = 2 ("read_early", kernel id 23): as the decode rungs'
 * early weight stream, launch_dependents first and every read before the wait (only the sink
 * store waits), so back to back each grid's reads start as the previous one's blocks leave. */
static __global__ void read_ceiling_kernel(const uint4 *p, size_t n, uint32_t *sink, int pdl) {
#if __CUDA_ARCH__ >= 900
    if (pdl == 2) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (pdl == 1) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const uint32_t acc = read_fold(p, n, (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride, 0);
#if __CUDA_ARCH__ >= 900
    if (pdl == 1) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (pdl == 2) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    if (acc == 0x9e3779b9u) *sink = acc;
}
/* The read ceiling of a grid that leaves room for the next one (kernel ids 25-28, "read_coP_G"):
 * G blocks of 256 threads per SM, grid-stride as above, launch_dependents first and the first PRE
 * batches of 8 loads per thread read before griddepcontrol.wait (ptxas folds them there: 32 / 38
 * registers), the rest after it. Back to back, the next grid's blocks fit beside this one's and
 * read their first batches while it streams: what a GEMV that holds PRE x 4 KB per block of its
 * weight before the wait, with room left for the next grid, could reach (gemm/decode/README.md,
 * "The read ceiling"). */
template <int PRE>
static __global__ void __launch_bounds__(256) read_co_kernel(const uint4 *p, size_t n, uint32_t *sink) {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint4 v[PRE][8];
#pragma unroll
    for (int b = 0; b < PRE; b++)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const size_t e = i + (size_t)(8 * b + j) * stride;
            v[b][j] = e < n ? __ldcs(p + e) : make_uint4(0, 0, 0, 0);
        }
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    uint32_t acc = 0;
#pragma unroll
    for (int b = 0; b < PRE; b++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc ^= v[b][j].x ^ v[b][j].y ^ v[b][j].z ^ v[b][j].w;
    acc = read_fold(p, n, i + (size_t)8 * PRE * stride, stride, acc);
    if (acc == 0x9e3779b9u) *sink = acc;
}
static uint32_t *g_sink;
static int g_n_sm;

static double measure_copy(void) {
    const size_t bytes = (size_t)2 << 30;
    void *a, *b;
    BCK(cudaMalloc(&a, bytes));
    BCK(cudaMalloc(&b, bytes));
    BCK(cudaMemsetAsync(a, 1, bytes, g_s));
    BCK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, g_s));
    /* always stream-timed: a copy captured into a graph became a memcpy node that measured 2.7
     * TB/s against 4.2 (H200, session 8), which made --graph's "% of copy" 1.56x too high */
    const bool graph = g_graph;
    g_graph = false;
    const double us = time_us([&](int) { BCK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, g_s)); }, 5);
    g_graph = graph;
    BCK(cudaFree(a));
    BCK(cudaFree(b));
    return 2.0 * bytes / (us * 1e-6) / 1e9;
}

/* kernel ids: 0 cuBLAS, 9 cublasLt, 1..7 decode rungs (24: rung 08), 8 / 10 / 23 the read ceiling (PDL / plain / reads before the wait), 25-28 the read ceiling of a grid with room for the next (read_co_kernel), 11 wmma, 12 mma.sync (own tile pick), 13 wgmma,
 * 14..16 mma.sync tile config 0..2 forced, 20 auto (dispatcher), 21/22 auto + SwiGLU / residual */
/* Rung 06's token tile from its code in a kernel id: 1 / 2 / 3 -> 16 / 32 / 64 (8 << code), 4 -> 48 */
static int tiny_bt(int code) { return code == 4 ? 48 : 8 << code; }

static const char *kname(int k) {
    switch (k) {
    case 0: return "cublas";
    case 9: return "cublaslt";
    case 8: return "read_pdl";
    case 10: return "read";
    case 23: return "read_early";
    case 25: return "read_co1_2";
    case 26: return "read_co2_2";
    case 27: return "read_co2_1";
    case 28: return "read_co1_4";
    case 40: return "split_auto";
    case 41: return "skinny";
    case 42: return "tiny";
    case 1: return "gemv01_thread";
    case 2: return "gemv02_warp";
    case 3: return "gemv03_vector";
    case 4: return "gemv04_splitk";
    case 5: return "gemv05_cpasync";
    case 6: return "gemv06_cluster";
    case 7: return "gemv07_persist";
    case 24: return "gemv08_stream";
    case 29: return "gemv09_bulk";
    case 50: return "g09_noearly";
    case 51: return "g09_cores";
    case 52: return "g09_cores_2bps";
    case 53: return "g09_s4";
    case 30: return "g07_pdl";
    case 31: return "g07_evict";
    case 32: return "g07_pdl_evict";
    case 33: return "g07_2bps";
    case 34: return "g07_s8";
    case 35: return "g07_16tok";
    case 36: return "g07_xstaged";
    case 11: return "wmma";
    case 12: return "mma_sync";
    case 14: return "mma_64x64";
    case 15: return "mma_128x64";
    case 16: return "mma_128x128";
    case 13: return "wgmma_ws";
    case 17: return "wgmma_bn128";
    case 18: return "wgmma_bn256";
    case 19: return "wgmma_pp128";
    case 20: return "auto";
    case 21: return "auto_swiglu";
    case 22: return "auto_residual";
    }
    if (k >= 210 && k < 290) { /* rung 03 forced: 200 + 10 * split factor + width code (0: 128, 1: 256, 2: 144, 3: 72, 4: 72 with X multicast, 5: 96, 6: 192) */
        static char nb[32];
        snprintf(nb, sizeof nb, "wg%d%s_k%d",
                 k % 10 == 1 ? 256 : k % 10 == 2 ? 144 : k % 10 == 5 ? 96 : k % 10 == 6 ? 192 : k % 10 >= 3 ? 72 : 128,
                 k % 10 == 4 ? "mc" : "",
                 (k - 200) / 10);
        return nb;
    }
    if (k >= 300 && k < 400) { /* rung 05 forced: 300 + 10 * split factor + token tile code (8 << code) */
        static char nb[32];
        snprintf(nb, sizeof nb, "sk%d_k%d", 8 << (k % 10), (k - 300) / 10);
        return nb;
    }
    if (k >= 1000 && k < 2600) { /* rung 06 with a ring: 1000 + 100 * stages + 10 * split factor + token tile code (tiny_bt) */
        static char nb[32];
        snprintf(nb, sizeof nb, "tiny%d_k%d_r%d", tiny_bt(k % 10), (k / 10) % 10, (k - 1000) / 100);
        return nb;
    }
    if (k >= 5000 && k < 6600) { /* rung 06 with two consumer warpgroups: 5000 + 100 * stages (0: a slot per k-block) + 10 * split + token tile code (tiny_bt) */
        static char nb[32];
        snprintf(nb, sizeof nb, "tiny%d_k%d_r%d_w2", tiny_bt(k % 10), (k / 10) % 10, (k - 5000) / 100);
        return nb;
    }
    if (k >= 7000 && k < 8600) { /* rung 06, two consumer warpgroups, W multicast: 7000 + 100 * stages (0: a slot per k-block) + 10 * cluster + token tile code (tiny_bt) */
        static char nb[32];
        snprintf(nb, sizeof nb, "tiny%d_c%d_r%d_w2", tiny_bt(k % 10), (k / 10) % 10, (k - 7000) / 100);
        return nb;
    }
    if (k >= 3000 && k < 4600) { /* rung 06 with a ring, W multicast: 3000 + 100 * stages + 10 * cluster + token tile code */
        static char nb[32];
        snprintf(nb, sizeof nb, "tiny%d_c%d_r%d", tiny_bt(k % 10), (k / 10) % 10, (k - 3000) / 100);
        return nb;
    }
    if (k >= 400 && k < 500) { /* rung 06 forced: 400 + 10 * cluster (0: auto) + token tile code (tiny_bt: 16, 32, 64, 48) */
        static char nb[32];
        snprintf(nb, sizeof nb, "tiny%d_c%d", tiny_bt(k % 10), (k - 400) / 10);
        return nb;
    }
    if (k >= 500 && k < 600) { /* rung 06 split forced: 500 + 10 * split factor + token tile code (tiny_bt) */
        static char nb[32];
        snprintf(nb, sizeof nb, "tiny%d_k%d", tiny_bt(k % 10), (k - 500) / 10);
        return nb;
    }
    if (k >= 100 && k < 130) { /* rung 04 forced: 100 + 10 * tile config + split factor */
        static const char *nm[3][9] = {
            {"", "", "split64x64/2", "", "split64x64/4", "", "", "", "split64x64/8"},
            {"", "", "split128x64/2", "", "split128x64/4", "", "", "", "split128x64/8"},
            {"", "", "split128x128/2", "", "split128x128/4", "", "", "", "split128x128/8"}};
        return nm[(k - 100) / 10][k % 10];
    }
    return "?";
}

/* decode set: rung 07 launch configurations, kernel ids 30..36 (gemv_bf16_internal.h); two
 * blocks per SM leave 113 KB each, enough for 16 tokens per pass with every option */
static const tinfer_gemv07_cfg g07_bench_cfg[] = {
    {64, 1, 16, -1, 1, 0}, {64, 1, 16, -1, 0, 1}, {64, 1, 16, -1, 1, 1}, {16, 2, 16, -1, 0, 0},
    {64, 1, 8, -1, 0, 0},  {16, 1, 16, -1, 0, 0}, {64, 1, 16, 0, 0, 0},
};

/* set bulk: rung 09 launch configurations, kernel ids 50..53 (gemv_bf16_internal.h) */
static const tinfer_gemv09_cfg g09_bench_cfg[] = {
    {1, 0, 0, 0}, {1, 0, 1, 1}, {2, 0, 1, 1}, {1, 4, 1, 0}};

static void bench_shape(std::vector<rec> &out, const char *set, const char *shape, int64_t M, int64_t N, int64_t K,
                        const std::vector<int> &kernels) {
    if (g_only) { /* a comma-separated list of SHAPE:M */
        char want[96];
        snprintf(want, sizeof want, "%s:%lld", shape, (long long)M);
        const size_t n = strlen(want);
        bool hit = false;
        for (const char *p = strstr(g_only, want); p && !hit; p = strstr(p + 1, want))
            hit = (p == g_only || p[-1] == ',') && (p[n] == ',' || p[n] == 0);
        if (!hit) return;
    }
    const size_t wsz = (size_t)(N * K), xsz = (size_t)(M * K), ysz = (size_t)(M * N);
    const size_t per = (wsz + xsz) * 2;
    /* enough copies that a batch of launches streams >= 256 MB (4x the 60 MB L2) */
    int ncopy = (int)std::min<size_t>(64, std::max<size_t>(1, ((size_t)256 << 20) / per + 1));
    if (per > ((size_t)1 << 30)) ncopy = 1;
    uint16_t *W, *X, *Y, *Yref;
    BCK(cudaMalloc(&W, wsz * 2 * ncopy));
    BCK(cudaMalloc(&X, xsz * 2 * ncopy));
    BCK(cudaMalloc(&Y, ysz * 2));
    BCK(cudaMalloc(&Yref, ysz * 2));
    bf16_fill_kernel<<<1024, 256, 0, g_s>>>(W, wsz * ncopy, 1234u);
    bf16_fill_kernel<<<1024, 256, 0, g_s>>>(X, xsz * ncopy, 987u);
    BCK(cudaGetLastError());
    const double flop = 2.0 * M * N * K, bytes = (double)per + ysz * 2.0;
    double cublas_us = 0, lt_us = 0;
    bool to_ref = false;
    lt_plan lt;
    const bool use_lt = std::find(kernels.begin(), kernels.end(), 9) != kernels.end();
    if (use_lt) lt_plan_make(&lt, M, N, K);
    for (int k : kernels) {
        auto launch = [&](int i) {
            const int c = i % ncopy;
            const uint16_t *w = W + wsz * c, *x = X + xsz * c;
            uint16_t *y = to_ref ? Yref : Y;
            if (k == 0) {
                const float alpha = 1.f, beta = 0.f;
                cublasStatus_t cs = cublasGemmEx(g_cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K, &alpha, w,
                                                 CUDA_R_16BF, (int)K, x, CUDA_R_16BF, (int)K, &beta, y, CUDA_R_16BF,
                                                 (int)N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
                if (cs != CUBLAS_STATUS_SUCCESS) {
                    fprintf(stderr, "error: cublasGemmEx status %d\n", (int)cs);
                    exit(1);
                }
                return;
            }
            if (k == 9) {
                const float alpha = 1.f, beta = 0.f;
                LTCK(cublasLtMatmul(g_lt, lt.op, &alpha, w, lt.la, x, lt.lb, &beta, y, lt.lc, y, lt.lc, &lt.algo,
                                    g_lt_ws, g_lt_ws_bytes, g_s));
                return;
            }
            if (k == 8 || k == 10 || k == 23 || (k >= 25 && k <= 28)) {
                /* the read ceiling of this weight copy (25-28: a grid that leaves room for the next) */
                cudaLaunchConfig_t lc;
                cudaLaunchAttribute at[1];
                memset(&lc, 0, sizeof lc);
                const int per_sm = k == 27 ? 1 : k == 25 || k == 26 ? 2 : 4;
                lc.gridDim = dim3((unsigned)(per_sm * g_n_sm));
                lc.blockDim = dim3(256);
                lc.stream = g_s;
                at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
                at[0].val.programmaticStreamSerializationAllowed = 1;
                lc.attrs = at;
                lc.numAttrs = k == 10 ? 0 : 1;
                const uint4 *wp = (const uint4 *)w;
                const size_t n16 = wsz * 2 / 16;
                if (k == 25 || k == 28) BCK(cudaLaunchKernelEx(&lc, read_co_kernel<1>, wp, n16, g_sink));
                else if (k == 26 || k == 27) BCK(cudaLaunchKernelEx(&lc, read_co_kernel<2>, wp, n16, g_sink));
                else BCK(cudaLaunchKernelEx(&lc, read_ceiling_kernel, wp, n16, g_sink, k == 8 ? 1 : k == 23 ? 2 : 0));
                return;
            }
            tinfer_gemm_bf16_args a;
            memset(&a, 0, sizeof a);
            a.M = M; a.N = N; a.K = K; a.X = x; a.ldx = K; a.W = w; a.ldw = K;
            a.Y = y; a.ldy = N; a.y_dtype = TINFER_DTYPE_BF16;
            a.w_static = g_w_static ? 1 : 0;
            if (k == 21 || g_swiglu) { a.swiglu = 1; a.ldy = N / 2; } /* fused gate/up: Y has N/2 columns */
            if (k == 22) { a.R = y; a.ldr = N; }              /* residual added in place */
            tinfer_err err;
            tinfer_status st;
            if (k >= 1 && k <= 7) st = tinfer_gemv_bf16((tinfer_gemv_bf16_kernel)k, &a, g_s, &err);
            else if (k == 24) st = tinfer_gemv_bf16(TINFER_GEMV_BF16_STREAM, &a, g_s, &err);
            else if (k == 29) st = tinfer_gemv_bf16(TINFER_GEMV_BF16_BULK, &a, g_s, &err);
            else if (k >= 50 && k <= 53) {
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                if (st == TINFER_OK) st = tinfer_gemv_bf16_bulk_cfg(&a, &g09_bench_cfg[k - 50], g_s, &err);
            }
            else if (k >= 30 && k <= 36) {
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                if (st == TINFER_OK) st = tinfer_gemv_bf16_persistent_cfg(&a, &g07_bench_cfg[k - 30], g_s, &err);
            }
            else if (k == 11) st = tinfer_gemm_bf16_tc(TINFER_GEMM_BF16_WMMA, &a, g_s, &err);
            else if (k == 12) st = tinfer_gemm_bf16_tc(TINFER_GEMM_BF16_MMA_SYNC, &a, g_s, &err);
            else if (k == 13) st = tinfer_gemm_bf16_tc(TINFER_GEMM_BF16_WGMMA_WS, &a, g_s, &err);
            else if (k == 17 || k == 18 || k == 19) {
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                const int32_t cfg = k == 17 ? TINFER_GEMM_BF16_WGMMA_CFG_128
                                    : k == 18 ? TINFER_GEMM_BF16_WGMMA_CFG_256
                                              : TINFER_GEMM_BF16_WGMMA_CFG_PP128;
                if (st == TINFER_OK) st = tinfer_gemm_bf16_wgmma_ws_cfg(&a, cfg, g_s, &err);
            }
            else if (k == 40) st = tinfer_gemm_bf16_tc(TINFER_GEMM_BF16_MMA_SPLITK, &a, g_s, &err);
            else if (k == 41) st = tinfer_gemm_bf16_tc(TINFER_GEMM_BF16_WGMMA_SKINNY, &a, g_s, &err);
            else if (k == 42) st = tinfer_gemm_bf16_tc(TINFER_GEMM_BF16_WGMMA_TINY, &a, g_s, &err);
            else if (k >= 400 && k < 500) {
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                if (st == TINFER_OK) st = tinfer_gemm_bf16_tiny(&a, tiny_bt(k % 10), (k - 400) / 10, 0, g_s, &err);
            }
            else if (k >= 1000 && k < 2600) {
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                if (st == TINFER_OK) st = tinfer_gemm_bf16_tiny_ring(&a, tiny_bt(k % 10), 1, (k / 10) % 10, (k - 1000) / 100, g_s, &err);
            }
            else if (k >= 5000 && k < 6600) {
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                if (st == TINFER_OK) st = tinfer_gemm_bf16_tiny_cfg(&a, tiny_bt(k % 10), 1, (k / 10) % 10, (k - 5000) / 100, 2, g_s, &err);
            }
            else if (k >= 7000 && k < 8600) {
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                if (st == TINFER_OK) st = tinfer_gemm_bf16_tiny_cfg(&a, tiny_bt(k % 10), (k / 10) % 10, 0, (k - 7000) / 100, 2, g_s, &err);
            }
            else if (k >= 3000 && k < 4600) {
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                if (st == TINFER_OK) st = tinfer_gemm_bf16_tiny_ring(&a, tiny_bt(k % 10), (k / 10) % 10, 1, (k - 3000) / 100, g_s, &err);
            }
            else if (k >= 500 && k < 600) {
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                if (st == TINFER_OK) st = tinfer_gemm_bf16_tiny(&a, tiny_bt(k % 10), 1, (k - 500) / 10, g_s, &err);
            }
            else if (k >= 300 && k < 400) {
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                if (st == TINFER_OK) st = tinfer_gemm_bf16_skinny(&a, 8 << (k % 10), (k - 300) / 10, g_s, &err);
            }
            else if (k >= 210 && k < 290) { /* rung 03 forced: 200 + 10 x split factor + width code */
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                const int32_t cfg = k % 10 == 1   ? TINFER_GEMM_BF16_WGMMA_CFG_256
                                    : k % 10 == 2 ? TINFER_GEMM_BF16_WGMMA_CFG_144
                                    : k % 10 == 3 ? TINFER_GEMM_BF16_WGMMA_CFG_72
                                    : k % 10 == 4 ? TINFER_GEMM_BF16_WGMMA_CFG_72MC
                                    : k % 10 == 5 ? TINFER_GEMM_BF16_WGMMA_CFG_96
                                    : k % 10 == 6 ? TINFER_GEMM_BF16_WGMMA_CFG_192
                                                  : TINFER_GEMM_BF16_WGMMA_CFG_128;
                if (st == TINFER_OK) st = tinfer_gemm_bf16_wgmma_ws_split(&a, cfg, (k - 200) / 10, g_s, &err);
            }
            else if (k >= 100 && k < 130) {
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                if (st == TINFER_OK) st = tinfer_gemm_bf16_mma_split(&a, (k - 100) / 10, k % 10, g_s, &err);
            }
            else if (k >= 14 && k <= 16) {
                st = tinfer_gemm_bf16_check(&a, "bench", &err);
                if (st == TINFER_OK) st = tinfer_gemm_bf16_mma(&a, k - 14, g_s, &err);
            }
            else st = tinfer_gemm_bf16(&a, TINFER_GEMM_BF16_PATH_AUTO, g_s, &err);
            if (st != TINFER_OK) {
                fprintf(stderr, "error: %s: %s\n", kname(k), err.msg);
                exit(1);
            }
        };
        /* reference output from cuBLAS on copy 0, then this kernel's output on copy 0 */
        double diff = 0;
        if (k == 0) {
            to_ref = true;
            launch(0);
            to_ref = false;
            BCK(cudaStreamSynchronize(g_s));
        } else if ((k < 21 || k >= 30) && k != 8 && k != 10 && k != 23 && (!g_swiglu || k == 9)) { /* 8 / 10 / 23 (read ceiling) write no Y */
            launch(0);
            BCK(cudaStreamSynchronize(g_s));
            diff = bf16_diff(Y, Yref, ysz);
        } /* fused epilogues compute another function: checked by test-gemm-bf16, timed only */
        /* one timed launch sizes the batch: ~2 ms of work, at least ncopy launches */
        const double est = time_us(launch, 1);
        int reps = (int)std::max(1.0, std::min(2000.0, 2000.0 / std::max(est, 1.0)));
        if (reps < ncopy && est * ncopy < 50000) reps = ncopy;
        const double us = time_us(launch, reps);
        const double host_us = g_host_us;
        if (k == 0) cublas_us = us;
        if (k == 9) lt_us = us;
        rec r;
        r.set = set; r.shape = shape; r.kernel = kname(k);
        r.M = M; r.N = N; r.K = K; r.us = us;
        r.tflops = flop / (us * 1e-6) / 1e12;
        r.gbs = bytes / (us * 1e-6) / 1e9;
        r.pct_cublas = cublas_us > 0 ? 100.0 * cublas_us / us : 0;
        r.pct_copy = 100.0 * r.gbs / g_copy_gbs;
        r.diff = diff;
        const double best = lt_us > 0 && (lt_us < cublas_us || cublas_us <= 0) ? lt_us : cublas_us;
        r.pct_best = lt_us > 0 ? 100.0 * best / us : 0;
        r.host_us = host_us;
        if (k >= 20 && k <= 22) { /* the arguments the launch above passes, as far as the route depends on them */
            tinfer_gemm_bf16_args ra;
            memset(&ra, 0, sizeof ra);
            ra.M = M; ra.N = N; ra.K = K;
            ra.swiglu = k == 21 || g_swiglu;
            const tinfer_gemm_bf16_route rt = tinfer_gemm_bf16_route_for(&ra, TINFER_GEMM_BF16_PATH_AUTO, g_cc_major, g_n_sm);
            char name[64];
            r.route = tinfer_gemm_bf16_route_name(&rt, name, sizeof name);
        }
        out.push_back(r);
        printf("%-7s %-16s %5lld %6lld %6lld %-14s %9.2f us %7.1f TF/s %7.0f GB/s %6.1f%% cublas %5.1f%% copy diff %.1e best %5.1f%% host %5.2f us%s%s%s\n",
               set, shape, (long long)M, (long long)N, (long long)K, kname(k), us, r.tflops, r.gbs, r.pct_cublas,
               r.pct_copy, diff, r.pct_best, host_us, r.route.empty() ? "" : "  route ", r.route.c_str(),
               diff > 1e-2 ? "  MISMATCH" : "");
        fflush(stdout);
    }
    BCK(cudaFree(W));
    BCK(cudaFree(X));
    BCK(cudaFree(Y));
    BCK(cudaFree(Yref));
    if (use_lt) lt_plan_free(&lt);
}

/* The run's provenance goes with its records: GPU, SMs, compute capability, driver, UTC date,
 * the copy rate the GB/s figures are measured against, the timing mode and the set run. */
static void write_json(const char *path, const std::vector<rec> &rs, const cudaDeviceProp &prop, const char *set) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "error: cannot write %s\n", path);
        return;
    }
    int drv = 0;
    if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
    char date[32] = "unknown";
    const time_t now = time(NULL);
    struct tm tmv;
    if (gmtime_r(&now, &tmv)) strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    fprintf(f,
            "{\n  \"gpu\": \"%s\",\n  \"n_sm\": %d,\n  \"sm\": %d%d,\n  \"cuda_driver\": %d,\n  \"date\": \"%s\",\n"
            "  \"set\": \"%s\",\n  \"copy_gbs\": %.1f,\n  \"timing\": \"%s\",\n  \"w_static\": %s,\n  \"records\": [\n",
            prop.name, prop.multiProcessorCount, prop.major, prop.minor, drv, date, set, g_copy_gbs, g_graph ? "graph" : "stream",
            g_w_static ? "true" : "false");
    for (size_t i = 0; i < rs.size(); i++) {
        const rec &r = rs[i];
        fprintf(f,
                "    {\"set\": \"%s\", \"shape\": \"%s\", \"kernel\": \"%s\", \"M\": %lld, \"N\": %lld, \"K\": %lld, "
                "\"us\": %.3f, \"tflops\": %.2f, \"gbs\": %.1f, \"pct_cublas\": %.1f, \"pct_copy\": %.1f, "
                "\"diff_vs_cublas\": %.2e, \"pct_best_ref\": %.1f, \"host_us\": %.2f%s%s%s}%s\n",
                r.set.c_str(), r.shape.c_str(), r.kernel.c_str(), (long long)r.M, (long long)r.N, (long long)r.K, r.us,
                r.tflops, r.gbs, r.pct_cublas, r.pct_copy, r.diff, r.pct_best, r.host_us,
                r.route.empty() ? "" : ", \"route\": \"", r.route.c_str(), r.route.empty() ? "" : "\"",
                i + 1 < rs.size() ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    fclose(f);
}

/* Charts: for one model shape, TFLOP/s (and GB/s) vs M for auto and cuBLAS. */
static void write_charts(const char *prefix, const std::vector<rec> &rs) {
    const char *shapes[] = {"llama_qkv", "llama_gateup", "llama_down", "smol_gateup", "smol_lmhead"};
    const char *kernels[] = {"auto", "cublas"};
    for (int which = 0; which < 2; which++) {
        std::vector<std::vector<double>> xs, ys;
        std::vector<std::string> names;
        for (const char *sh : shapes)
            for (const char *kn : kernels) {
                std::vector<double> x, y;
                for (const rec &r : rs)
                    if (r.set == "model" && r.shape == sh && r.kernel == kn) {
                        x.push_back((double)r.M);
                        y.push_back(which == 0 ? r.tflops : r.gbs);
                    }
                if (x.empty()) continue;
                xs.push_back(x);
                ys.push_back(y);
                names.push_back(std::string(sh) + " " + (strcmp(kn, "auto") ? "cuBLAS" : "ours"));
            }
        if (xs.empty()) continue;
        std::vector<tinfer_chart_series> ser(xs.size());
        for (size_t i = 0; i < xs.size(); i++) {
            ser[i].name = names[i].c_str();
            ser[i].x = xs[i].data();
            ser[i].y = ys[i].data();
            ser[i].n = (int32_t)xs[i].size();
        }
        tinfer_chart_spec sp;
        memset(&sp, 0, sizeof sp);
        sp.title = which == 0 ? "BF16 GEMM TFLOP/s vs M (H200): ours (auto) vs cuBLAS" : "BF16 GEMM GB/s vs M: ours vs cuBLAS";
        sp.x_label = "M (tokens)";
        sp.y_label = which == 0 ? "TFLOP/s" : "GB/s (weights + activations)";
        sp.log2_x = 1;
        std::string path = std::string(prefix) + (which == 0 ? "_tflops.png" : "_gbs.png");
        char eb[256];
        if (tinfer_chart_write_png(path.c_str(), &sp, ser.data(), (int32_t)ser.size(), eb, sizeof eb) != 0)
            fprintf(stderr, "warning: chart %s: %s\n", path.c_str(), eb);
    }
}

/* Set "tmabw": the TMA load path alone (tma_bw.cu) */
extern "C" void tinfer_bench_tma_bw(int n_sm);

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
static void trace_set(void) {
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
static void tytrace_set(void) {
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
static void tybisect_set(void) {
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

extern "C" int tinfer_bench_gemm_bf16(int argc, char **argv) {
    const char *set = "all", *json = NULL, *png = NULL;
    tinfer_gemm_knobs knobs = tinfer_gemm_knobs_unset();
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "bf16")) continue;
        const int kf = tinfer_bench_knob_flag(argc, argv, &i, &knobs);
        if (kf < 0) return 2;
        if (kf > 0) continue;
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--png") && i + 1 < argc) png = argv[++i];
        else if (!strcmp(argv[i], "--quick")) g_quick = true;
        else if (!strcmp(argv[i], "--graph")) g_graph = true;
        else if (!strcmp(argv[i], "--w-static")) g_w_static = true;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) g_only = argv[++i];
        else if (!strcmp(argv[i], "--help")) {
            printf("usage: tinfer-bench-gemm bf16 [all|square|model|ladder|prefill|splitk|decode|wgmma|wsplit|skinny|tiny|tinybig|wide96|wide192|wg2|bulk|tmabw] [--json F] [--png PREFIX] [--quick] [--graph] [--w-static] [--only SHAPE:M[,...]] [knob flags]\n");
            tinfer_bench_knobs_help(stdout);
            return 0;
        } else if (argv[i][0] != '-') set = argv[i];
        else {
            fprintf(stderr, "error: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    {
        static const char *const sets[] = {"all", "square", "model", "ladder", "prefill", "splitk", "decode", "wgmma", "wsplit", "skinny", "tiny", "tinybig", "wide96", "wide192", "wg2", "bulk", "tmabw",
#ifdef TINFER_WS_TRACE
                                           "trace", "tytrace", "tybisect"
#endif
        };
        bool known = false;
        for (const char *k : sets) known = known || !strcmp(set, k);
        if (!known) {
            fprintf(stderr, "error: unknown set '%s' (--help lists them)\n", set);
            return 2;
        }
    }
    tinfer_gemm_knobs_set(&knobs);
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
        fprintf(stderr, "error: no CUDA device\n");
        return 77;
    }
    g_cc_major = prop.major;
    BCK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    if (cublasCreate(&g_cublas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(g_cublas, g_s) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "error: cublasCreate failed\n");
        return 1;
    }
    if (cublasLtCreate(&g_lt) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "error: cublasLtCreate failed\n");
        return 1;
    }
    BCK(cudaMalloc(&g_lt_ws, g_lt_ws_bytes));
    /* Under graph capture cuBLAS must not allocate its own workspace: give it this one (the two
     * references run one after the other on one stream, so they may share it). */
    if (g_graph && cublasSetWorkspace(g_cublas, g_lt_ws, g_lt_ws_bytes) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "error: cublasSetWorkspace failed\n");
        return 1;
    }
    BCK(cudaMalloc(&g_sink, sizeof(uint32_t)));
    g_n_sm = prop.multiProcessorCount;
    g_copy_gbs = measure_copy();
    printf("device %s, %d SMs; device-to-device copy %.0f GB/s (read + write)%s\n", prop.name,
           prop.multiProcessorCount, g_copy_gbs, g_w_static ? "; W static (args.w_static)" : "");
    std::vector<rec> rs;
    const bool all = !strcmp(set, "all");
    if (!strcmp(set, "tmabw")) tinfer_bench_tma_bw(prop.multiProcessorCount);
#ifdef TINFER_WS_TRACE
    if (!strcmp(set, "trace")) trace_set();
    if (!strcmp(set, "tytrace")) tytrace_set();
    if (!strcmp(set, "tybisect")) tybisect_set();
#endif
    if (all || !strcmp(set, "ladder")) {
        const struct { const char *n; int64_t N, K; } ls[] = {
            {"llama_qkv", 6144, 4096}, {"llama_down", 4096, 14336}, {"smol_lmhead", 49152, 576}, {"smol_o", 576, 576}};
        for (const auto &s : ls)
            for (int64_t M : {1, 8}) {
                std::vector<int> ks = {0, 9, 1, 2, 3, 4, 5, 6, 7};
                if (s.K <= 1024) ks.push_back(24); /* rung 08: short rows only (else it runs 04) */
                ks.push_back(29);                  /* rung 09 */
                ks.push_back(20);                  /* the dispatcher */
                bench_shape(rs, "ladder", s.n, M, s.N, s.K, ks);
            }
    }
    if (all || !strcmp(set, "square")) {
        for (int64_t n : {1024, 2048, 4096, 8192}) {
            if (g_quick && n > 4096) continue;
            bench_shape(rs, "square", "square", n, n, n, {0, 9, 11, 12, 13});
        }
    }
    if (all || !strcmp(set, "model")) {
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576},     {"smol_o", 576, 576},       {"smol_gateup", 3072, 576},
            {"smol_down", 576, 1536},   {"smol_lmhead", 49152, 576}, {"llama_qkv", 6144, 4096},
            {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {1, 2, 4, 8, 16, 32, 64, 128, 512, 2048}) {
                if (g_quick && M != 1 && M != 16 && M != 512) continue;
                std::vector<int> ks = {0, 9, 20};
                if (M == 1) ks.insert(ks.end(), {8, 10, 23, 25, 26, 27, 28}); /* the read ceiling of the weight */
                if (M <= 64) ks.push_back(5); /* threshold sweep: GEMV vs GEMM around 16 */
                if (M <= 16) ks.push_back(6);
                if (M <= 16 && s.K <= 1024) ks.push_back(4);  /* rung 04 on short rows */
                if (M <= 64 && s.K <= 1024) ks.push_back(24); /* rung 08 (passes of 8 or 16 tokens) */
                ks.push_back(13);
                if (M <= 128) ks.push_back(41); /* rung 05, the skinny kernel */
                /* rung 06 on the SmolLM2 layer weights; at M <= 8 against the decode GEMV the
                 * dispatcher takes there (down, K = 1536, gets rung 05 at 3.5-3.8 us in graph
                 * timing where rung 06 takes 2.8 at 16 tokens; session 14) */
                if (strstr(s.n, "smol") && !strstr(s.n, "lmhead")) ks.push_back(42);
                if (strstr(s.n, "gateup")) ks.push_back(21);
                if (strstr(s.n, "down") || strstr(s.n, "_o")) ks.push_back(22);
                bench_shape(rs, "model", s.n, M, s.N, s.K, ks);
            }
    }
    if (!strcmp(set, "prefill")) {
        /* where rung 02 competes: the model shapes on the GEMM path (M above the GEMV cut) */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576},     {"smol_o", 576, 576},       {"smol_gateup", 3072, 576},
            {"smol_down", 576, 1536},   {"smol_lmhead", 49152, 576}, {"llama_qkv", 6144, 4096},
            {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {32, 64, 128, 512, 2048}) {
                std::vector<int> ks = {0, 20, 12, 13, 14, 15, 16};
                if (strstr(s.n, "gateup")) ks.push_back(21);
                if (strstr(s.n, "down") || strstr(s.n, "_o")) ks.push_back(22);
                bench_shape(rs, "prefill", s.n, M, s.N, s.K, ks);
            }
    }
    if (!strcmp(set, "decode")) {
        /* rung 07 against 05/06/04, the dispatcher and cuBLAS at decode M (Llama-3-8B, the
         * SmolLM2 LM head up to 64 tokens, the small SmolLM2 shapes at 1/16/64) */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"llama_qkv", 6144, 4096}, {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {1, 2, 4, 8, 16, 32, 64}) {
                std::vector<int> ks = {0, 20, 7};
                if (M <= 16) ks.insert(ks.end(), {5, 6, 30, 31, 32, 33, 34});
                else ks.insert(ks.end(), {13, 30});
                if (strstr(s.n, "gateup") && (M == 1 || M == 8)) ks.push_back(21);
                if (strstr(s.n, "down") && (M == 1 || M == 8)) ks.push_back(22);
                bench_shape(rs, "decode", s.n, M, s.N, s.K, ks);
            }
        for (int64_t M : {1, 2, 4, 8, 16, 24, 32, 48, 64})
            bench_shape(rs, "decode", "smol_lmhead", M, 49152, 576, {0, 20, 7, 4, 24, 30, 31, 33, 35, 36, 13});
        const struct { const char *n; int64_t N, K; } ss[] = {
            {"smol_qkv", 960, 576}, {"smol_o", 576, 576}, {"smol_gateup", 3072, 576}, {"smol_down", 576, 1536}};
        for (const auto &s : ss)
            for (int64_t M : {1, 16, 64}) bench_shape(rs, "decode", s.n, M, s.N, s.K, {0, 20, 7, 5, 30});
    }
    if (!strcmp(set, "bulk")) {
        /* decode rung 09 (two grids per SM) against rungs 05 / 06, the dispatcher, cuBLAS and the
         * read probes, on the Llama-3-8B weights at M = 1..8 */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"llama_qkv", 6144, 4096}, {"llama_down", 4096, 14336}, {"llama_gateup", 28672, 4096}};
        for (const auto &s : ms)
            for (int64_t M : {1, 2, 4, 8}) {
                std::vector<int> ks = {0, 9, 20, 5, 6, 29, 50, 51, 52, 53};
                if (M == 1) ks.insert(ks.end(), {8, 23, 26, 28});
                bench_shape(rs, "bulk", s.n, M, s.N, s.K, ks);
            }
    }
    if (!strcmp(set, "wgmma")) {
        /* rung 03's two tile widths forced vs its own pick, on the shapes it takes (many tiles) */
        for (int64_t n : {1024, 2048, 4096, 8192}) bench_shape(rs, "wgmma", "square", n, n, n, {0, 9, 13, 17, 18, 19});
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576},     {"smol_o", 576, 576},       {"smol_gateup", 3072, 576},
            {"smol_down", 576, 1536},   {"smol_lmhead", 49152, 576}, {"llama_qkv", 6144, 4096},
            {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {128, 512, 2048}) {
                std::vector<int> ks = {0, 9, 20, 13, 17, 18, 19};
                if (strstr(s.n, "gateup")) ks.push_back(21);
                if (strstr(s.n, "down") || strstr(s.n, "_o")) ks.push_back(22);
                bench_shape(rs, "wgmma", s.n, M, s.N, s.K, ks);
            }
    }
    if (!strcmp(set, "splitk")) {
        /* rung 04 where split-K matters (few tiles): Llama-3-8B QKV / down, the SmolLM2 shapes */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"llama_qkv", 6144, 4096}, {"llama_down", 4096, 14336}, {"smol_qkv", 960, 576},
            {"smol_o", 576, 576},      {"smol_gateup", 3072, 576},  {"smol_down", 576, 1536},
            {"smol_lmhead", 49152, 576}};
        for (const auto &s : ms)
            for (int64_t M : {32, 64, 128, 512, 2048}) {
                /* many tiles (wgmma's ground): the references and "auto" only */
                if ((strstr(s.n, "llama") && M == 2048) || strstr(s.n, "lmhead")) {
                    bench_shape(rs, "splitk", s.n, M, s.N, s.K, {0, 9, 20});
                    continue;
                }
                std::vector<int> ks = {0, 9, 20, 40, 12, 13, 14, 15, 16};
                for (int c = 0; c < 3; c++)
                    for (int cs : {2, 4, 8}) ks.push_back(100 + 10 * c + cs);
                if (strstr(s.n, "gateup")) ks.push_back(21);
                if (strstr(s.n, "down") || strstr(s.n, "_o")) ks.push_back(22);
                bench_shape(rs, "splitk", s.n, M, s.N, s.K, ks);
            }
    }
    if (!strcmp(set, "skinny")) {
        /* rung 05 (operands swapped) at its own pick and with each split factor forced (its own
         * token tile), against the dispatcher, rung 03 and both references, M = 1..128 */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576},   {"smol_o", 576, 576},        {"smol_gateup", 3072, 576},
            {"smol_down", 576, 1536}, {"smol_lmhead", 49152, 576}, {"llama_qkv", 6144, 4096},
            {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {1, 8, 16, 32, 64, 128}) {
                std::vector<int> ks = {0, 9, 20, 13, 41};
                if (M == 1) ks.push_back(8);
                const int code = M <= 8 ? 0 : M <= 16 ? 1 : M <= 32 ? 2 : 3;
                const int64_t tiles = ((s.N + 127) / 128) * ((M + 63) / 64);
                for (int f : {1, 2, 3, 4, 6, 8})
                    if (f == 1 || tiles * f <= 3 * prop.multiProcessorCount) ks.push_back(300 + 10 * f + code);
                for (int c = 0; c < code; c++) ks.push_back(310 + c); /* smaller token tiles, unsplit */
                bench_shape(rs, "skinny", s.n, M, s.N, s.K, ks);
            }
    }
    if (!strcmp(set, "tiny")) {
        /* rung 06 (one 64-row tile per CTA) on the SmolLM2 layer weights: its pick, each token
         * tile forced, W multicast over token tiles, K split, against the dispatcher and both
         * references */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576}, {"smol_o", 576, 576}, {"smol_gateup", 3072, 576}, {"smol_down", 576, 1536}};
        for (const auto &s : ms)
            for (int64_t M : {16, 32, 64, 128, 256, 512, 2048}) {
                std::vector<int> ks = {0, 9, 20, 42};
                if (s.K <= 1024) {
                    ks.insert(ks.end(), {401, 402, 403});
                    if (M >= 128) ks.insert(ks.end(), {422, 442}); /* 32-token tiles, W multicast over 2 / 4 */
                }
                if (s.K > 1024 || M <= 128) /* K split over 2 / 3 / 4 CTAs, 16 / 32 / 64-token tiles */
                    ks.insert(ks.end(), {521, 531, 541, 522, 532, 542, 523, 533, 543});
                /* rings: 64-token tiles split 2 through 4 / 5 stages (two CTAs per SM), on down also
                 * split 3 through 4, and unsplit through 6 / 12 */
                if (M >= 128) ks.insert(ks.end(), {1423, 1523});
                if (M >= 128 && s.K > 1024) ks.insert(ks.end(), {1433, 1613, 2213});
                /* rings with W multicast over 2 / 4 / 8 token tiles: down (K = 1536) unsplit,
                 * 64-token tiles through 12 / 6 stages, 32-token through 8; K = 576 through 4 */
                if (M >= 128 && s.K > 1024) ks.insert(ks.end(), {4223, 4243, 4283, 3643, 3683, 3822, 3842, 3882});
                if (M >= 128 && s.K <= 1024) ks.insert(ks.end(), {3443, 3483, 3442, 3482});
                if (strstr(s.n, "_o") || strstr(s.n, "down")) ks.push_back(22);
                bench_shape(rs, "tiny", s.n, M, s.N, s.K, ks);
            }
        /* the model's fused gate/up (SwiGLU epilogue, 1536 outputs): every kernel but the references
         * runs fused */
        g_swiglu = true;
        for (int64_t M : {16, 32, 64, 128, 256, 512})
            bench_shape(rs, "tiny", "smol_gateup_sw", M, 3072, 576, {0, 9, 20, 42, 401, 402, 403});
        g_swiglu = false;
    }
    if (!strcmp(set, "tinybig")) {
        /* rung 06 past one wave: the LM head (K fits one CTA) with each token tile forced, and the
         * Llama-3-8B weights through rings (6 stages, two CTAs per SM; split 1 / 2 / 4) */
        for (int64_t M : {16, 32, 64, 128, 512})
            bench_shape(rs, "tinybig", "smol_lmhead", M, 49152, 576, {0, 9, 20, 401, 402, 403});
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"llama_qkv", 6144, 4096}, {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {16, 64, 128, 512})
                bench_shape(rs, "tinybig", s.n, M, s.N, s.K, {0, 9, 20, 1611, 1621, 1641, 1612, 1622, 1642, 1613, 1623, 1643});
        /* SmolLM2 down / gate-up at 512 tokens through short rings that fit one wave: 32-token
         * tiles split 2 / 3 / 4 through 4 / 5 stages, 64-token tiles unsplit through 3 / 4 / 5 */
        bench_shape(rs, "tinybig", "smol_down", 512, 576, 1536, {0, 9, 20, 1422, 1432, 1442, 1522, 1532, 1542, 1433});
        /* rung 05 (128 W rows x 64 tokens, ring over K) unsplit / split 2 / 3 on down at 512 and 2048 */
        bench_shape(rs, "tinybig", "smol_down", 512, 576, 1536, {0, 9, 313, 323, 333});
        bench_shape(rs, "tinybig", "smol_down", 2048, 576, 1536, {0, 9, 20, 313, 323});
        bench_shape(rs, "tinybig", "smol_gateup", 512, 3072, 576, {0, 9, 20, 1313, 1413, 1513, 1312, 1412});
        /* 2048 tokens: 64-token tiles through 3 / 4 / 5-stage rings (3 / 3 / 2 CTAs per SM), 32-token
         * tiles through 3 stages */
        for (const auto &s : {std::make_pair("smol_o", 576), std::make_pair("smol_qkv", 960)})
            bench_shape(rs, "tinybig", s.first, 2048, s.second, 576, {0, 9, 20, 1313, 1413, 1513, 1312});
    }
    if (!strcmp(set, "wg2")) {
        /* rung 06 with one consumer warpgroup against two (each computing every other k-block) in
         * the same configurations, on the SmolLM2 layer weights */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576}, {"smol_o", 576, 576}, {"smol_gateup", 3072, 576}, {"smol_down", 576, 1536}};
        for (const auto &s : ms)
            for (int64_t M : {16, 32, 64, 128, 256, 512, 2048}) {
                if (s.K > 1024 && M == 512) continue; /* down at 512: below, with the long-K rings */
                std::vector<int> ks = {0, 9, 20};
                auto pair = [&](int one, int two) { ks.push_back(one); ks.push_back(two); };
                for (int c = 1; c <= 3; c++) {
                    if (s.K <= 1024) { /* 9 k-blocks: unsplit, and split 2 up to 128 tokens */
                        pair(510 + c, 5010 + c);
                        if (M <= 128) pair(520 + c, 5020 + c);
                    } else /* 24 k-blocks: split 2 / 3 / 4 */
                        for (int f = 2; f <= 4; f++) pair(500 + 10 * f + c, 5000 + 10 * f + c);
                }
                if (s.K <= 1024 && M >= 256) pair(514, 5014); /* 48-token tiles unsplit (O at 512: 99 CTAs) */
                if (s.K > 1024 && M >= 128) { /* rings, 64-token tiles: split 3 / 2 through 4 stages, unsplit through 6 / 12 */
                    pair(1433, 5433);
                    pair(1423, 5423);
                    pair(1613, 5613);
                    pair(2213, 6213);
                }
                bench_shape(rs, "wg2", s.n, M, s.N, s.K, ks);
            }
        /* rings of two warpgroups over long K: SmolLM2 down past the splits that fit (64-token
         * tiles through 12 / 8 / 6 stages, 32-token through 8 / 6, two CTAs per SM; 48-token
         * tiles, a CTA taking the 14 KB per k-block of cuBLAS's 48-output x 64-token tiles,
         * through 12 / 10 stages unsplit (99 CTAs at 512 tokens) and 8 / 6 split 2, two CTAs per
         * SM at 6), and
         * Llama-3-8B QKV / down at 16-64 tokens (one CTA per SM, 12 stages) */
        for (int64_t M : {384, 512, 640, 768, 1024})
            bench_shape(rs, "wg2", "smol_down", M, 576, 1536,
                        {0, 9, 20, 2213, 6213, 5813, 5613, 5812, 5612, 2214, 6214, 6014, 1824, 5824, 5624,
                         /* the 12-stage rings of two warpgroups with the W box multicast over 2 / 4 / 8
                          * token tiles (64 tokens), 2 / 4 (48 tokens; clusters round the token tiles up) */
                         8223, 8243, 8283, 8224, 8244});
        for (int64_t M : {16, 32, 64}) {
            const int bt = M == 16 ? 1 : M == 32 ? 2 : 3;
            bench_shape(rs, "wg2", "llama_qkv", M, 6144, 4096, {0, 9, 20, 2210 + bt, 6210 + bt});
            bench_shape(rs, "wg2", "llama_down", M, 4096, 14336, {0, 9, 20, 2210 + bt, 6210 + bt});
        }
    }
    if (!strcmp(set, "wide96")) {
        /* rung 03's 128 x 96 tiles (unsplit, plain) against 72 / 128 / 256 on the shapes whose
         * pick the width rule moves or could move */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576}, {"smol_o", 576, 576}, {"smol_gateup", 3072, 576}, {"smol_down", 576, 1536},
            {"smol_lmhead", 49152, 576}};
        for (const auto &s : ms)
            for (int64_t M : {128, 256, 512, 1024, 2048})
                bench_shape(rs, "wide96", s.n, M, s.N, s.K, {0, 9, 20, 215, 213, 210, 211});
    }
    if (!strcmp(set, "wide192")) {
        /* rung 03's 128 x 192 tiles (unsplit) against 256 / 128 / 96 and the pick, where the width
         * rule with 192 would take them (gate/up at 2048, Llama QKV / gate/up at 512) and where it
         * would not (controls: the LM head, square 4096) */
        const struct { const char *n; int64_t M, N, K; } ms[] = {
            {"smol_gateup", 2048, 3072, 576}, {"smol_gateup", 1024, 3072, 576}, {"llama_qkv", 512, 6144, 4096},
            {"llama_gateup", 512, 28672, 4096}, {"llama_qkv", 2048, 6144, 4096}, {"smol_lmhead", 2048, 49152, 576},
            {"square", 4096, 4096, 4096}};
        for (const auto &s : ms) bench_shape(rs, "wide192", s.n, s.M, s.N, s.K, {0, 9, 20, 216, 211, 210, 215});
    }
    if (!strcmp(set, "wsplit")) {
        printf("co-resident clusters of rung 03's split kernel (cudaOccupancyMaxActiveClusters), factor 2..8:\n");
        for (int cfg : {128, 144, 256}) {
            printf("  128 x %d:", cfg);
            for (int f = 2; f <= 8; f++) {
                int32_t n = -1;
                tinfer_err e;
                if (tinfer_gemm_bf16_wgmma_max_clusters(cfg, f, &n, &e) != TINFER_OK) printf(" (%s)", e.msg);
                printf(" %d", (int)n);
            }
            printf("\n");
        }
        /* rung 03's split-K: each tile width x split factor forced (one wave: tiles x factor <=
         * SMs) against its own pick, rung 04, the dispatcher and both references, where tiles are few */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576},   {"smol_o", 576, 576},        {"smol_gateup", 3072, 576},
            {"smol_down", 576, 1536}, {"smol_lmhead", 49152, 576}, {"llama_qkv", 6144, 4096},
            {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {16, 32, 64, 128, 512, 2048}) {
                std::vector<int> ks = {0, 9, 20, 13, 40};
                for (int bn : {72, 128, 144, 256}) {
                    if (bn == 144 && s.N % bn) continue; /* 144 only where it divides N */
                    const int64_t tiles = ((M + 127) / 128) * ((s.N + bn - 1) / bn);
                    for (int f : {1, 2, 3, 4, 6, 8})
                        if (f == 1 || (bn != 72 && tiles * f <= prop.multiProcessorCount)) /* 72: no split */
                            ks.push_back(200 + 10 * f + (bn == 256 ? 1 : bn == 144 ? 2 : bn == 72 ? 3 : 0));
                    if (bn == 72) ks.push_back(214); /* and with X multicast */
                }
                bench_shape(rs, "wsplit", s.n, M, s.N, s.K, ks);
            }
    }
    if (json) write_json(json, rs, prop, set);
    if (png) write_charts(png, rs);
    cublasDestroy(g_cublas);
    cublasLtDestroy(g_lt);
    BCK(cudaFree(g_lt_ws));
    BCK(cudaFree(g_sink));
    BCK(cudaStreamDestroy(g_s));
    return 0;
}

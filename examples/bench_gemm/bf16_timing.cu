/*
 * bf16_timing.cu — the BF16 benchmark's measuring tools (`tinfer-bench-gemm bf16`, bf16.cu): the
 * run's state (stream, cuBLAS / cublasLt handles, the flags), the random BF16 fill, the
 * normalized difference of two outputs, cublasLt plans, the host clock and the copy ceiling.
 * The timing loop itself (time_us: stream or graph) is in bf16_internal.h.
 */
#include "examples/bench_gemm/bf16_internal.h"

#include <math.h>
#include <time.h>

cudaStream_t g_s;
cublasHandle_t g_cublas;
cublasLtHandle_t g_lt;
void *g_lt_ws;                              /* cublasLt workspace */
double g_copy_gbs = 0;
bool g_quick = false;
/* --graph: each batch of launches is captured once into a CUDA graph and the graph replayed, so
 * the figure is device time without the host's per-launch cost (for many small
 * launches, a captured graph's replays are timed); without it, back-to-back stream launches. */
bool g_graph = false;
/* --w-static: every call promises that no work in flight writes W (args.w_static, as for model
 * weights): the decode rungs 05 / 06 then issue their first W loads before the PDL wait */
bool g_w_static = false;
int g_cc_major; /* the device's (and g_n_sm below), for the dispatcher's route in the records */
/* every kernel but the references and read ceilings runs gate/up fused with SwiGLU (Y: N / 2 columns; timed only) */
bool g_swiglu = false;
/* --only SHAPE:M: run just that shape at that M (e.g. under a profiler) */
const char *g_only = NULL;
/* Host time per call of the last time_us batch set (median; stream timing only): when it is
 * close to the timed figure, the figure is the host's launch rate, not the kernel. */
double g_host_us = 0;
/* the read ceilings' store target (bf16_shape.cu) and the device's SM count */
uint32_t *g_sink;
int g_n_sm;

__global__ void bf16_fill_kernel(uint16_t *p, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)(i >> 32) * 0x9e3779b9u ^ seed;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        const float f = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
        p[i] = __bfloat16_as_ushort(__float2bfloat16_rn(f));
    }
}

/* normalized difference of two BF16 outputs (device), computed on the host */
double bf16_diff(const uint16_t *a, const uint16_t *b, size_t n) {
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

void lt_plan_make(lt_plan *p, int64_t M, int64_t N, int64_t K) {
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

void lt_plan_free(lt_plan *p) {
    cublasLtMatrixLayoutDestroy(p->la);
    cublasLtMatrixLayoutDestroy(p->lb);
    cublasLtMatrixLayoutDestroy(p->lc);
    cublasLtMatmulDescDestroy(p->op);
}
double host_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

double measure_copy(void) {
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


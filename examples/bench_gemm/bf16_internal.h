/*
 * bf16_internal.h — what the files of the BF16 benchmark (`tinfer-bench-gemm bf16`) share: the
 * error checks, the record of one measurement, the run's state (defined in bf16_timing.cu), the
 * timing loop and the functions one file calls in another. Not a public header.
 *   bf16.cu          argument parsing and the sets of shapes (tinfer_bench_gemm_bf16)
 *   bf16_timing.cu   the run's state, random fill, output check, cublasLt plans, copy rate
 *   bf16_shape.cu    kernel ids and their names, the read ceilings, one shape measured (bench_shape)
 *   bf16_output.cu   JSON records and PNG charts
 *   bf16_trace.cu    the trace sets (builds configured with -DTINFER_WS_TRACE=ON)
 */
#ifndef TINFER_BENCH_GEMM_BF16_INTERNAL_H
#define TINFER_BENCH_GEMM_BF16_INTERNAL_H

#include "gemm/bf16.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

typedef struct rec {
    std::string set, shape, kernel;
    int64_t M, N, K;
    double us, tflops, gbs, pct_cublas, pct_copy, diff;
    double pct_best; /* of the faster of cuBLAS and cublasLt (0 when cublasLt was not run) */
    double host_us;  /* host time per call to enqueue a batch (stream timing; 0 with --graph) */
    std::string route; /* the dispatcher's kernels (20-22): the route it ran (tinfer_gemm_bf16_route_name) */
} rec;

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

/* the run's state (bf16_timing.cu, where each is described) */
extern cudaStream_t g_s;
extern cublasHandle_t g_cublas;
extern cublasLtHandle_t g_lt;
extern void *g_lt_ws;                              /* cublasLt workspace */
static const size_t g_lt_ws_bytes = (size_t)32 << 20; /* 32 MB: the size the issue names */
extern double g_copy_gbs;
extern bool g_quick;
extern bool g_graph;
extern bool g_w_static;
extern int g_cc_major;
extern bool g_swiglu;
extern const char *g_only;
extern double g_host_us;
extern uint32_t *g_sink;
extern int g_n_sm;

/* bf16_timing.cu */
__global__ void bf16_fill_kernel(uint16_t *p, size_t n, uint32_t seed);
double bf16_diff(const uint16_t *a, const uint16_t *b, size_t n);
void lt_plan_make(lt_plan *p, int64_t M, int64_t N, int64_t K);
void lt_plan_free(lt_plan *p);
double host_now_us(void);
double measure_copy(void);
/* bf16_shape.cu */
void bench_shape(std::vector<rec> &out, const char *set, const char *shape, int64_t M, int64_t N, int64_t K,
                 const std::vector<int> &kernels);
/* bf16_output.cu */
void write_json(const char *path, const std::vector<rec> &rs, const cudaDeviceProp &prop, const char *set);
void write_charts(const char *prefix, const std::vector<rec> &rs);
#ifdef TINFER_WS_TRACE
/* bf16_trace.cu */
void trace_set(void);
void tytrace_set(void);
void tybisect_set(void);
#endif

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

#endif

/*
 * peaks_cuda.c — the GPU's roofs tinfer-bench compares a CUDA run with, measured the way
 * tinfer-bench-gemm bf16 measures its references (examples/bench_gemm/bf16_timing.cu,
 * bf16_shape.cu): launches on one non-blocking stream, one warm-up, then 7 batches of launches
 * each timed with CUDA events, and the median batch's time per launch.
 *
 *   copy:   cudaMemcpyAsync device to device of a 1 GiB buffer, 5 copies a batch. The rate
 *           counts read + write bytes (2 x 1 GiB a copy), as bf16_timing.cu's measure_copy
 *           does; a decode step's weight GB/s (reads only) is reported as a percentage of it.
 *   cuBLAS: cublasGemmEx at M = N = K = 8192 (the largest of bf16.cu's square set), BF16 A / B /
 *           C with random values in [-1, 1) (not zeros: the tensor cores' power, hence clocks,
 *           depends on the data), CUBLAS_COMPUTE_32F, bf16_shape.cu's layout (W transposed); 5
 *           a batch.
 *
 * Every CUDA and cuBLAS call is checked; a failure prints one line and returns 0 ("not
 * measured") after freeing what was allocated. No device: 0, quietly.
 */
#include "peaks_cuda.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCHES 7
#define PER_BATCH 5

static void warn(const char *what, const char *call, const char *why) {
    fprintf(stderr, "tinfer-bench: warning: %s not measured: %s: %s\n", what, call, why);
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            warn(what, #call, cudaGetErrorString(e_));                                             \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

#define BK(call)                                                                                   \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            char why_[32];                                                                         \
            snprintf(why_, sizeof why_, "cuBLAS status %d", (int)s_);                              \
            warn(what, #call, why_);                                                               \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

static int have_device(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
        (void)cudaGetLastError(); /* leave no error behind for the next call */
        return 0;
    }
    return 1;
}

/* One launch of the measured operation on stream s; returns 0, or -1 after warn(). */
typedef int (*launch_fn)(void *arg, cudaStream_t s);

/* Milliseconds per launch: the median of BATCHES event-timed batches of PER_BATCH launches,
 * after one launch untimed. Returns 0 on error (after warn()). */
static double median_ms(const char *what, launch_fn fn, void *arg, cudaStream_t s) {
    cudaEvent_t e0 = NULL, e1 = NULL;
    float t[BATCHES];
    double res = 0;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    if (fn(arg, s)) goto out;
    for (int b = 0; b < BATCHES; b++) {
        CK(cudaEventRecord(e0, s));
        for (int r = 0; r < PER_BATCH; r++)
            if (fn(arg, s)) goto out;
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&t[b], e0, e1));
    }
    for (int i = 1; i < BATCHES; i++) /* insertion sort: 7 values */
        for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
            float v = t[j];
            t[j] = t[j - 1];
            t[j - 1] = v;
        }
    res = t[BATCHES / 2] / PER_BATCH;
out:
    if (e0 && cudaEventDestroy(e0) != cudaSuccess) res = 0;
    if (e1 && cudaEventDestroy(e1) != cudaSuccess) res = 0;
    return res;
}

typedef struct copy_arg {
    void *dst;
    const void *src;
    size_t bytes;
} copy_arg;

static int copy_launch(void *arg, cudaStream_t s) {
    const char *what = "device copy bandwidth";
    copy_arg *c = arg;
    CK(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, s));
    return 0;
out:
    return -1;
}

double bench_cuda_copy_gbs(void) {
    if (!have_device()) return 0;
    const char *what = "device copy bandwidth";
    const size_t bytes = (size_t)1 << 30;
    cudaStream_t s = NULL;
    void *a = NULL, *b = NULL;
    double gbs = 0;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMemsetAsync(a, 1, bytes, s));
    CK(cudaMemsetAsync(b, 0, bytes, s));
    copy_arg c = {b, a, bytes};
    const double ms = median_ms(what, copy_launch, &c, s);
    if (ms > 0) gbs = 2.0 * (double)bytes / (ms * 1e-3) / 1e9; /* read + write */
out:
    if (s && cudaStreamSynchronize(s) != cudaSuccess) gbs = 0;
    if (a && cudaFree(a) != cudaSuccess) gbs = 0;
    if (b && cudaFree(b) != cudaSuccess) gbs = 0;
    if (s && cudaStreamDestroy(s) != cudaSuccess) gbs = 0;
    return gbs;
}

typedef struct gemm_arg {
    cublasHandle_t h;
    const void *w, *x;
    void *y;
    int n;
} gemm_arg;

static int gemm_launch(void *arg, cudaStream_t s) {
    const char *what = "cuBLAS BF16 GEMM peak";
    gemm_arg *g = arg;
    const float alpha = 1.f, beta = 0.f;
    (void)s; /* the handle's stream */
    /* Y[M, N] = X[M, K] W[N, K]^T in row-major terms, as bf16_shape.cu calls it */
    BK(cublasGemmEx(g->h, CUBLAS_OP_T, CUBLAS_OP_N, g->n, g->n, g->n, &alpha, g->w, CUDA_R_16BF,
                    g->n, g->x, CUDA_R_16BF, g->n, &beta, g->y, CUDA_R_16BF, g->n,
                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return 0;
out:
    return -1;
}

/* n random BF16 values in [-1, 1) (xorshift64 from a non-zero seed, round to nearest even). */
static void fill_bf16(uint16_t *p, size_t n, uint64_t seed) {
    uint64_t r = seed;
    for (size_t i = 0; i < n; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        float f = (float)(r >> 40) * (2.0f / 16777216.0f) - 1.0f;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        p[i] = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
    }
}

double bench_cuda_cublas_gflops(void) {
    if (!have_device()) return 0;
    const char *what = "cuBLAS BF16 GEMM peak";
    const int n = BENCH_CUDA_GEMM_N;
    const size_t bytes = (size_t)n * (size_t)n * sizeof(uint16_t);
    cudaStream_t s = NULL;
    cublasHandle_t h = NULL;
    void *w = NULL, *x = NULL, *y = NULL;
    uint16_t *host = malloc(bytes);
    double gflops = 0;
    if (!host) {
        warn(what, "malloc", "out of memory");
        return 0;
    }
    fill_bf16(host, (size_t)n * (size_t)n, 0x9E3779B97F4A7C15ull);
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&w, bytes));
    CK(cudaMalloc(&x, bytes));
    CK(cudaMalloc(&y, bytes));
    CK(cudaMemcpy(w, host, bytes, cudaMemcpyHostToDevice));
    fill_bf16(host, (size_t)n * (size_t)n, 0x2545F4914F6CDD1Dull);
    CK(cudaMemcpy(x, host, bytes, cudaMemcpyHostToDevice));
    BK(cublasCreate(&h));
    BK(cublasSetStream(h, s));
    gemm_arg g = {h, w, x, y, n};
    if (gemm_launch(&g, s)) goto out; /* cuBLAS's heuristics and kernel load, before timing */
    const double ms = median_ms(what, gemm_launch, &g, s);
    if (ms > 0) gflops = 2.0 * n * (double)n * (double)n / (ms * 1e-3) / 1e9;
out:
    if (s && cudaStreamSynchronize(s) != cudaSuccess) gflops = 0;
    if (h && cublasDestroy(h) != CUBLAS_STATUS_SUCCESS) gflops = 0;
    if (w && cudaFree(w) != cudaSuccess) gflops = 0;
    if (x && cudaFree(x) != cudaSuccess) gflops = 0;
    if (y && cudaFree(y) != cudaSuccess) gflops = 0;
    if (s && cudaStreamDestroy(s) != cudaSuccess) gflops = 0;
    free(host);
    return gflops;
}

/*
 * 01_thread_per_row.cu — decode rung 1: one thread per output column j, a plain loop over K.
 *
 * Baseline only. Adjacent threads read adjacent rows of W, K elements apart, so every 2-byte
 * load touches a different 32-byte sector: the loads are uncoalesced and the L1/L2 do all the
 * work. Each token m re-reads the row (grid.y = M), so M tokens cost M weight reads.
 * Any M, N, K; with swiglu the thread computes gate row j and up row F + j.
 * Measured (H200, 2026-12-02, run 4, cold L2): Llama-3-8B QKV 6144x4096 M=1 575 us (88 GB/s,
 * 2.1% of the 4248 GB/s copy), M=8 1120 us; SmolLM2 O 576x576 M=1 84 us (cuBLAS 7.5 us).
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/decode/gemv_bf16_internal.h"

static __global__ void gemv01_kernel(tinfer_gemm_bf16_args a) {
    const int64_t nout = tinfer_gemm_bf16_nout(a);
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t m = blockIdx.y;
    if (j >= nout) return;
    const uint16_t *x = a.X + m * a.ldx;
    const uint16_t *wg = a.W + j * a.ldw;
    const uint16_t *wu = a.W + (a.N / 2 + j) * a.ldw;
    float g = 0.f, u = 0.f;
    for (int64_t k = 0; k < a.K; k++) {
        const float xv = tinfer_bf16f(x[k]);
        g += xv * tinfer_bf16f(wg[k]);
        if (a.swiglu) u += xv * tinfer_bf16f(wu[k]);
    }
    tinfer_bf16_epi_store(a, m, j, g, u);
}

tinfer_status tinfer_gemv_bf16_thread_per_row(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                              tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    if (a->M > 65535)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16 01: M=%lld > 65535",
                              (long long)a->M);
    {
        dim3 grid((unsigned)((nout + 255) / 256), (unsigned)a->M);
        gemv01_kernel<<<grid, 256, 0, s>>>(*a);
        TINFER_CUDA_LAUNCH_CHECK(err, "gemv01_kernel");
    }
cleanup:
    return status;
}

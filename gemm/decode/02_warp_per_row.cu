/*
 * 02_warp_per_row.cu — decode rung 2: one warp per output column, lanes stride K.
 *
 * Change from 01: the 32 lanes read one row together with 4-byte (BF16x2) loads, so a warp
 * load is 128 contiguous bytes (coalesced), and a 5-step shuffle tree reduces the partial sums.
 * Up to 16 tokens share each weight load (accumulators acc[16] in registers; grid.y = passes of
 * 16 tokens). Still one 4-byte load in flight per lane per step: latency-bound (HOPPER_GEMM_NOTES
 * §7: ~1 KB in flight per warp is far below the ~32 KB per SM the bandwidth needs).
 * Measured (H200, 2026-12-02, run 4): QKV 6144x4096 M=1 140 us (359 GB/s, 8.4% of copy), M=8
 * 166 us; Llama down 4096x14336 M=1 317 us; SmolLM2 O M=1 8.6 us (cuBLAS 7.5).
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/decode/gemv_bf16_internal.h"

#define MT TINFER_GEMV_BF16_MT

static __global__ void gemv02_kernel(tinfer_gemm_bf16_args a) {
    const int64_t nout = tinfer_gemm_bf16_nout(a);
    const int lane = threadIdx.x & 31;
    const int64_t j = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int64_t m0 = (int64_t)blockIdx.y * MT;
    const int mp = (int)(a.M - m0 < MT ? a.M - m0 : MT);
    if (j >= nout) return;
    const uint32_t *wg = (const uint32_t *)(a.W + j * a.ldw);
    const uint32_t *wu = (const uint32_t *)(a.W + (a.N / 2 + j) * a.ldw);
    float g[MT], u[MT];
#pragma unroll
    for (int m = 0; m < MT; m++) g[m] = u[m] = 0.f;
    for (int64_t k2 = lane; k2 < a.K / 2; k2 += 32) {
        const uint32_t w = wg[k2];
        const uint32_t w2 = a.swiglu ? wu[k2] : 0u;
#pragma unroll
        for (int m = 0; m < MT; m++) {
            if (m < mp) {
                const uint32_t xv = ((const uint32_t *)(a.X + (m0 + m) * a.ldx))[k2];
                g[m] += tinfer_bf16_lo(xv) * tinfer_bf16_lo(w) + tinfer_bf16_hi(xv) * tinfer_bf16_hi(w);
                u[m] += tinfer_bf16_lo(xv) * tinfer_bf16_lo(w2) + tinfer_bf16_hi(xv) * tinfer_bf16_hi(w2);
            }
        }
    }
#pragma unroll
    for (int m = 0; m < MT; m++) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            g[m] += __shfl_xor_sync(0xffffffffu, g[m], o);
            u[m] += __shfl_xor_sync(0xffffffffu, u[m], o);
        }
    }
#pragma unroll
    for (int m = 0; m < MT; m++)
        if (lane == m && m < mp) tinfer_bf16_epi_store(a, m0 + m, j, g[m], u[m]);
}

tinfer_status tinfer_gemv_bf16_warp_per_row(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                            tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    const int64_t passes = (a->M + MT - 1) / MT;
    if (passes > 65535)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16 02: M=%lld too large",
                              (long long)a->M);
    {
        /* 8 warps per block: 256 threads is the occupancy sweet spot for a latency-bound loop. */
        dim3 grid((unsigned)((nout + 7) / 8), (unsigned)passes);
        gemv02_kernel<<<grid, 256, 0, s>>>(*a);
        TINFER_CUDA_LAUNCH_CHECK(err, "gemv02_kernel");
    }
cleanup:
    return status;
}

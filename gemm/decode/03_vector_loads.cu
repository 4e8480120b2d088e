/*
 * 03_vector_loads.cu — decode rung 3: 16-byte loads, several in flight, M tokens per weight read.
 *
 * Change from 02: each lane loads 16 B (8 BF16) of W per load and issues U = 4 such loads
 * (per weight row) before any arithmetic, so a 256-thread block keeps 16 KB of W in flight
 * (HOPPER_GEMM_NOTES §7, H200: ~32 KB per SM is needed for ~4.4 TB/s). W is read with
 * ld.global.nc.L1::no_allocate (used once). A row is shared by L lanes: L = 8 for short rows
 * (K <= 1024: a 576-wide row is 72 granules = 9 per lane, no idle lanes; §7 measured 3.54 vs
 * 2.59 TB/s for one warp per row) and L = 32 otherwise. Every W granule is multiplied by the
 * matching X granule of each of the MT tokens (X re-read through L1, tiny), so M tokens cost one
 * weight read. Cost: MT * 8 FMAs per 16 B of W: at MT = 16 and 4.4 TB/s that is ~35 TFLOP/s of
 * FP32 FMA, beyond what the SMs sustain next to the loads, so large M here turns compute-bound;
 * rung 04 moves the multiply to the tensor cores.
 * Constraints: K % 8 == 0, 16-byte aligned rows (bf16.h). Tokens: passes of 16 (grid.y).
 * Measured (H200, 2026-12-02, run 4): M=1: QKV 6144x4096 19.0 us (2651 GB/s, 62% of the
 * 4248 GB/s copy, cuBLAS 17.0 us), down 4096x14336 35.2 us (79%), LM head 49152x576 18.6 us
 * (72%). M=8 is FMA-bound as predicted: QKV 142 us, down 341 us.
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/decode/gemv_bf16_internal.h"

#define GEMV03_U 4

template <int L, int MTT>
static __global__ void __launch_bounds__(256) gemv03_kernel(tinfer_gemm_bf16_args a) {
    const int64_t nout = tinfer_gemm_bf16_nout(a);
    const int sub = threadIdx.x % L; /* lane within the row group */
    const int64_t j = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / L;
    const int64_t m0 = (int64_t)blockIdx.y * MTT;
    const int mp = (int)(a.M - m0 < MTT ? a.M - m0 : MTT);
    const bool row_ok = j < nout; /* no early return: all lanes take part in the shuffles */
    const uint16_t *wg = a.W + (row_ok ? j : 0) * a.ldw;
    const uint16_t *wu = a.W + (row_ok && a.swiglu ? a.N / 2 + j : 0) * a.ldw;
    const int64_t ngran = a.K / 8;
    float g[MTT], u[MTT];
#pragma unroll
    for (int m = 0; m < MTT; m++) g[m] = u[m] = 0.f;
    for (int64_t q0 = sub; q0 < ngran; q0 += (int64_t)L * GEMV03_U) {
        uint4 w[GEMV03_U], w2[GEMV03_U];
#pragma unroll
        for (int i = 0; i < GEMV03_U; i++) {
            const int64_t q = q0 + (int64_t)i * L;
            const bool ok = row_ok && q < ngran;
            w[i] = ok ? tinfer_ld_stream16(wg + q * 8) : make_uint4(0, 0, 0, 0);
            w2[i] = ok && a.swiglu ? tinfer_ld_stream16(wu + q * 8) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int i = 0; i < GEMV03_U; i++) {
            const int64_t q = q0 + (int64_t)i * L;
            if (q >= ngran) break;
#pragma unroll
            for (int m = 0; m < MTT; m++) {
                if (m < mp) {
                    const uint4 xv = __ldg((const uint4 *)(a.X + (m0 + m) * a.ldx + q * 8));
                    const uint32_t xs[4] = {xv.x, xv.y, xv.z, xv.w};
                    const uint32_t ws[4] = {w[i].x, w[i].y, w[i].z, w[i].w};
                    const uint32_t us[4] = {w2[i].x, w2[i].y, w2[i].z, w2[i].w};
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const float xl = tinfer_bf16_lo(xs[e]), xh = tinfer_bf16_hi(xs[e]);
                        g[m] = fmaf(xl, tinfer_bf16_lo(ws[e]), fmaf(xh, tinfer_bf16_hi(ws[e]), g[m]));
                        u[m] = fmaf(xl, tinfer_bf16_lo(us[e]), fmaf(xh, tinfer_bf16_hi(us[e]), u[m]));
                    }
                }
            }
        }
    }
#pragma unroll
    for (int m = 0; m < MTT; m++) {
#pragma unroll
        for (int o = L / 2; o > 0; o >>= 1) {
            g[m] += __shfl_xor_sync(0xffffffffu, g[m], o);
            u[m] += __shfl_xor_sync(0xffffffffu, u[m], o);
        }
    }
    if (!row_ok) return;
#pragma unroll
    for (int m = 0; m < MTT; m++)
        if (sub == m % L && m < mp) tinfer_bf16_epi_store(a, m0 + m, j, g[m], u[m]);
}

template <int L, int MTT>
static tinfer_status gemv03_launch(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    const int64_t rows_per_block = 256 / L;
    const int64_t passes = (a->M + MTT - 1) / MTT;
    if (passes > 65535)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16 03: M=%lld too large",
                              (long long)a->M);
    {
        dim3 grid((unsigned)((nout + rows_per_block - 1) / rows_per_block), (unsigned)passes);
        gemv03_kernel<L, MTT><<<grid, 256, 0, s>>>(*a);
        TINFER_CUDA_LAUNCH_CHECK(err, "gemv03_kernel");
    }
cleanup:
    return status;
}

tinfer_status tinfer_gemv_bf16_vector(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                      tinfer_err *err) {
    /* 1024: rows up to 128 granules keep every lane of an 8-lane group busy for <= 16 loads. */
    const bool short_k = a->K <= 1024;
    if (a->M == 1) return short_k ? gemv03_launch<8, 1>(a, s, err) : gemv03_launch<32, 1>(a, s, err);
    if (a->M <= 4) return short_k ? gemv03_launch<8, 4>(a, s, err) : gemv03_launch<32, 4>(a, s, err);
    return short_k ? gemv03_launch<8, 16>(a, s, err) : gemv03_launch<32, 16>(a, s, err);
}

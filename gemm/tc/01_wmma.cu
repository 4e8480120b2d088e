/*
 * 01_wmma.cu — prefill rung 1: WMMA (16x16x16 BF16 fragments, FP32 accumulate), the simplest
 * tensor-core GEMM; runs on any sm_80+ GPU and is the GEMM path's fallback off Hopper.
 *
 * Block tile 128 x 128 x 32, 8 warps as 2 (M) x 4 (N), warp tile 64 x 32 (4 x 2 fragments).
 * Each k-step: every thread loads 2 + 2 16-byte granules of X and W into shared memory (zero
 * beyond M, N, K), barrier, 2 x 8 fragment MMAs per warp, barrier. No pipelining: loads and
 * math do not overlap, which is what rungs 2-3 fix. Rows are padded by 8 BF16 (16 B) so the
 * 16-byte row accesses of the fragment loads spread over the banks.
 * Epilogue: each fragment goes through a per-warp 16x16 FP32 scratch so every lane knows the
 * (row, column) of its values, then bias / SwiGLU / residual / store with bounds checks.
 * SwiGLU: the block's 128 B rows are gate rows j0..j0+63 and up rows F+j0..F+j0+63, so the
 * warp pair (wn, wn + 2) holds gate and up of the same outputs; they meet in shared memory.
 * Constraints: K % 8 == 0, 16-byte aligned X/W rows (bf16.h).
 * Measured (H200, 2026-12-02, run 4): 150-158 TFLOP/s at 2048-8192 (19-20% of cuBLAS), 34 at
 * 1024: no pipelining and synchronous 16-byte loads leave the tensor cores idle most of the time.
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/tc/gemm_bf16_tc_internal.h"

#include <mma.h>

#define WM_BM 128
#define WM_BN 128
#define WM_BK 32
#define WM_LD (WM_BK + 8)

static __global__ void __launch_bounds__(256) wmma_kernel(tinfer_gemm_bf16_args a) {
#if __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    /* The operand tiles (20 KB) and, after the k-loop, the SwiGLU hand-over buffer (32 KB) share
     * one allocation so the block stays under the 48 KB static limit. */
    __shared__ __align__(128) uint8_t ab_raw[2 * 64 * 64 * 4];
    __shared__ __align__(128) float scratch[8][16][16];
    uint16_t(*As)[WM_LD] = (uint16_t(*)[WM_LD])ab_raw;
    uint16_t(*Bs)[WM_LD] = (uint16_t(*)[WM_LD])(ab_raw + WM_BM * WM_LD * 2);
    float(*upbuf)[64][64] = (float(*)[64][64])ab_raw; /* [wm][row][col]: up values of warps wn >= 2 */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / 4, wn = warp % 4;
    const int64_t m0 = (int64_t)blockIdx.y * WM_BM;
    const int64_t F = a.N / 2, nout = a.swiglu ? F : a.N;
    const int64_t jb = (int64_t)blockIdx.x * (a.swiglu ? WM_BN / 2 : WM_BN);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int jf = 0; jf < 2; jf++) wmma::fill_fragment(acc[i][jf], 0.f);

    for (int64_t k0 = 0; k0 < a.K; k0 += WM_BK) {
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int idx = threadIdx.x + r * 256, row = idx / 4, kg = (idx % 4) * 8;
            const int64_t k = k0 + kg, m = m0 + row;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (m < a.M && k < a.K) v = *(const uint4 *)(a.X + m * a.ldx + k);
            *(uint4 *)&As[row][kg] = v;
            int64_t n;
            if (a.swiglu) n = row < 64 ? jb + row : F + jb + (row - 64);
            else n = jb + row;
            const bool nok = a.swiglu ? jb + (row % 64) < F : n < a.N;
            uint4 w = make_uint4(0, 0, 0, 0);
            if (nok && k < a.K) w = *(const uint4 *)(a.W + n * a.ldw + k);
            *(uint4 *)&Bs[row][kg] = w;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < WM_BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[4];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb[2];
#pragma unroll
            for (int i = 0; i < 4; i++)
                wmma::load_matrix_sync(fa[i], (const __nv_bfloat16 *)&As[wm * 64 + i * 16][kk], WM_LD);
#pragma unroll
            for (int jf = 0; jf < 2; jf++)
                wmma::load_matrix_sync(fb[jf], (const __nv_bfloat16 *)&Bs[wn * 32 + jf * 16][kk], WM_LD);
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int jf = 0; jf < 2; jf++) wmma::mma_sync(acc[i][jf], fa[i], fb[jf], acc[i][jf]);
        }
        __syncthreads();
    }
    /* Up warps (wn >= 2 under swiglu) park their values; gate warps wn - 2 consume them. */
    if (a.swiglu && wn >= 2) {
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int jf = 0; jf < 2; jf++) {
                wmma::store_matrix_sync(&scratch[warp][0][0], acc[i][jf], 16, wmma::mem_row_major);
                __syncwarp();
                for (int e = lane; e < 256; e += 32)
                    upbuf[wm][i * 16 + e / 16][(wn - 2) * 32 + jf * 16 + e % 16] = scratch[warp][e / 16][e % 16];
                __syncwarp();
            }
    }
    __syncthreads();
    if (a.swiglu && wn >= 2) return;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int jf = 0; jf < 2; jf++) {
            wmma::store_matrix_sync(&scratch[warp][0][0], acc[i][jf], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                const int r = e / 16, cc = e % 16;
                const int64_t m = m0 + wm * 64 + i * 16 + r;
                const int64_t j = jb + wn * 32 + jf * 16 + cc;
                const float u = a.swiglu ? upbuf[wm][i * 16 + r][wn * 32 + jf * 16 + cc] : 0.f;
                if (m < a.M && j < nout) tinfer_bf16_epi_store(a, m, j, scratch[warp][r][cc], u);
            }
            __syncwarp();
        }
#else
    (void)a;
    __trap();
#endif
}

tinfer_status tinfer_gemm_bf16_wmma(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    const int64_t bn = a->swiglu ? WM_BN / 2 : WM_BN;
    const int64_t gm = (a->M + WM_BM - 1) / WM_BM, gn = (nout + bn - 1) / bn;
    if (gm > 65535 || gn > 0x7fffffff)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 wmma: M=%lld N=%lld too large",
                              (long long)a->M, (long long)a->N);
    {
        dim3 grid((unsigned)gn, (unsigned)gm);
        wmma_kernel<<<grid, 256, 0, s>>>(*a);
        TINFER_CUDA_LAUNCH_CHECK(err, "wmma_kernel");
    }
cleanup:
    return status;
}

/*
 * 11_splitk.cu — rung 11 (beyond the articles' ladder): split-K for shapes that cannot fill
 * the 132 SMs with output tiles.
 *
 * Changed from rung 10: the K loop is cut into `splits` slices of whole K tiles, one per
 * blockIdx.z, so an M x N output with few 128x128 tiles (e.g. 512 x 512 = 16 tiles on 132 SMs)
 * still launches ~2 blocks per SM. Each slice adds alpha * (its partial sum) into C with
 * atomicAdd after a first kernel has replaced C by beta * C (or zeros when beta == 0, so C is
 * never read then). Costs: one extra pass over C and M*N*splits atomics; worth it only when
 * the tile count is well under the SM count and K is deep (each slice >= 256 deep here, as
 * cuBLAS's splitKreduce kernels do for such shapes). The FP32 sum order then depends on the
 * atomics' arrival order: results can differ in the last bits between runs (still within the
 * documented bound; exact small-integer inputs stay exact).
 * Measured on the H200 (run 3, 2026-12-02, NN, % of cuBLAS SGEMM in the same run) 512^3 NN: 10.0 TFLOP/s vs rung 10
 * 7.2 (63.1% vs 45.7% of cuBLAS); equals rung 10 where the tiles fill the SMs.
 */
#include "gemm/prefill/common.cuh"

static __global__ void sgemm_scale_c(int M, int N, float beta, float *__restrict__ C, int64_t ldc) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    for (int row = blockIdx.y; row < M; row += gridDim.y) {
        if (col < N) {
            float *c = C + (int64_t)row * ldc + col;
            *c = beta == 0.0f ? 0.0f : beta * *c;
        }
    }
}

static tinfer_status launch_splitk(const tinfer_sgemm_args *a, int config, int splits,
                                   cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    const tinfer_sgemm_cfg *cfg = tinfer_sgemm_10_config(config);
    if (!cfg)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "sgemm rung 11: config %d unknown",
                              config);
    /* Rung 10 falls back to rung 5 (which applies beta itself) for misaligned NN B. */
    if (!a->trans_b && !((uintptr_t)a->B % 16 == 0 && a->ldb % 4 == 0))
        return tinfer_sgemm_05_reg2d(a, s, err);
    if (splits <= 0) {
        /* Enough blocks for two per SM (configs hold 1-3 per SM), slices >= 256 deep. */
        const int64_t tiles = (int64_t)((a->M + cfg->bm - 1) / cfg->bm) *
                              ((a->N + cfg->bn - 1) / cfg->bn);
        const int64_t want = (2 * (int64_t)tinfer_sgemm_sm_count() + tiles - 1) / tiles;
        const int64_t kmax = a->K / 256 > 1 ? a->K / 256 : 1;
        splits = (int)(want < kmax ? want : kmax);
        if (splits > 64) splits = 64;
    }
    {
        /* The same slice arithmetic as rung 10's launcher: if it would end with one slice, the
         * plain (non-atomic) epilogue must run on an unscaled C. */
        const int kt_total = (a->K + cfg->bk - 1) / cfg->bk;
        if (splits > kt_total) splits = kt_total;
        const int kt_per = (kt_total + splits - 1) / splits;
        splits = (kt_total + kt_per - 1) / kt_per;
    }
    if (splits <= 1) return tinfer_sgemm_10_pipelined(a, config, 1, s, err);
    {
        dim3 grid((a->N + 255) / 256, a->M < 4096 ? a->M : 4096);
        sgemm_scale_c<<<grid, 256, 0, s>>>(a->M, a->N, a->beta, a->C, a->ldc);
        TINFER_CUDA_LAUNCH_CHECK(err, "sgemm_scale_c");
    }
    return tinfer_sgemm_10_pipelined(a, config, splits, s, err);
cleanup:
    return status;
}

extern "C" tinfer_status tinfer_sgemm_11_splitk(const tinfer_sgemm_args *a, int config,
                                                int splits, cudaStream_t s, tinfer_err *err) {
    return launch_splitk(a, config, splits, s, err);
}

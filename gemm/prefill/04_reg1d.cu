/*
 * 04_reg1d.cu — rung 4: 1D register blocktiling.
 *
 * Changed from rung 3: 64x64 block tile, 8-deep K step, 512 threads, and each thread computes
 * TM = 8 outputs of one column (rows tr*8..tr*8+7). Why: rung 3 does 2 shared-memory loads
 * per FMA; here one B value held in a register feeds 8 FMAs against 8 A values, so shared
 * traffic per FMA drops from 2 loads to 1.125 and the partial sums live in registers.
 * Tile loads: A 64x8 and B 8x64, one element per thread, coalesced along the contiguous axis
 * (NT: along k, stored transposed into Bs[k][n]).
 * Measured on the H200 (run 3, 2026-12-02, NN, % of cuBLAS SGEMM in the same run) 4096: 15.6 TFLOP/s = 30.5%; 4092:
 * 15.3 TFLOP/s = 32.1%; 2048: 16.2 TFLOP/s = 32.3%; 8192: 15.4 TFLOP/s = 30.2%
 */
#include "gemm/prefill/common.cuh"

enum { R4_BM = 64, R4_BN = 64, R4_BK = 8, R4_TM = 8, R4_THREADS = R4_BM * R4_BN / R4_TM };

template <bool TB>
static __global__ void __launch_bounds__(R4_THREADS)
    sgemm_reg1d(int M, int N, int K, float alpha, const float *__restrict__ A, int64_t lda,
                const float *__restrict__ B, int64_t ldb, float beta, float *__restrict__ C,
                int64_t ldc) {
    __shared__ float As[R4_BM][R4_BK];
    __shared__ float Bs[R4_BK][R4_BN];
    const int t = threadIdx.x;
    const int tc = t % R4_BN, tr = t / R4_BN; /* output column, row group */
    const int row0 = blockIdx.y * R4_BM, col0 = blockIdx.x * R4_BN;
    float acc[R4_TM] = {};
    for (int k0 = 0; k0 < K; k0 += R4_BK) {
        {
            const int m = t / R4_BK, k = t % R4_BK;
            As[m][k] = (row0 + m < M && k0 + k < K) ? A[(int64_t)(row0 + m) * lda + k0 + k] : 0.f;
            if (TB) {
                const int n = t / R4_BK; /* 8 threads read one row of B along k */
                Bs[k][n] = (col0 + n < N && k0 + k < K) ? B[(int64_t)(col0 + n) * ldb + k0 + k]
                                                        : 0.f;
            } else {
                const int kb = t / R4_BN, n = t % R4_BN;
                Bs[kb][n] = (k0 + kb < K && col0 + n < N) ? B[(int64_t)(k0 + kb) * ldb + col0 + n]
                                                          : 0.f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < R4_BK; kk++) {
            const float b = Bs[kk][tc];
#pragma unroll
            for (int i = 0; i < R4_TM; i++) acc[i] += As[tr * R4_TM + i][kk] * b;
        }
        __syncthreads();
    }
    const int col = col0 + tc;
    if (col >= N) return;
#pragma unroll
    for (int i = 0; i < R4_TM; i++) {
        const int row = row0 + tr * R4_TM + i;
        if (row < M) {
            float *c = C + (int64_t)row * ldc + col;
            *c = tsg::epi(acc[i], alpha, beta, c);
        }
    }
}

static tinfer_status launch_reg1d(const tinfer_sgemm_args *a, cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    dim3 grid((a->N + R4_BN - 1) / R4_BN, (a->M + R4_BM - 1) / R4_BM);
    if (grid.y > 65535)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "sgemm rung 4: M=%d too large", a->M);
    if (a->trans_b)
        sgemm_reg1d<true><<<grid, R4_THREADS, 0, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda,
                                                      a->B, a->ldb, a->beta, a->C, a->ldc);
    else
        sgemm_reg1d<false><<<grid, R4_THREADS, 0, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda,
                                                       a->B, a->ldb, a->beta, a->C, a->ldc);
    TINFER_CUDA_LAUNCH_CHECK(err, "sgemm_reg1d");
cleanup:
    return status;
}

extern "C" tinfer_status tinfer_sgemm_04_reg1d(const tinfer_sgemm_args *a, cudaStream_t s,
                                               tinfer_err *err) {
    return launch_reg1d(a, s, err);
}

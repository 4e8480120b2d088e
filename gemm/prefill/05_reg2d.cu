/*
 * 05_reg2d.cu — rung 5: 2D register blocktiling (outer products).
 *
 * Changed from rung 4: 128x128 block tile, 8-deep K step, 256 threads, each thread an 8x8
 * output tile. Per k the thread loads 8 A values and 8 B values into registers and does their
 * 64-FMA outer product: 16 shared loads per 64 FMAs (0.25 per FMA, from 1.125), and each
 * global element now serves 128 outputs of the block instead of 64.
 * All loads are scalar and guarded, so this rung also serves as the fallback of rungs 6-11
 * when pointers or leading dimensions do not allow 16-byte accesses.
 * Measured on the H200 (run 3, 2026-12-02, NN, % of cuBLAS SGEMM in the same run) 4096: 18.0 TFLOP/s = 35.2%; 4092:
 * 17.5 TFLOP/s = 36.6%; 2048: 17.9 TFLOP/s = 35.7%; 8192: 18.3 TFLOP/s = 35.8%
 */
#include "gemm/prefill/common.cuh"

enum { R5_BM = 128, R5_BN = 128, R5_BK = 8, R5_TM = 8, R5_TN = 8,
       R5_THREADS = R5_BM * R5_BN / (R5_TM * R5_TN) };

template <bool TB>
static __global__ void __launch_bounds__(R5_THREADS)
    sgemm_reg2d(int M, int N, int K, float alpha, const float *__restrict__ A, int64_t lda,
                const float *__restrict__ B, int64_t ldb, float beta, float *__restrict__ C,
                int64_t ldc) {
    __shared__ float As[R5_BM][R5_BK];
    __shared__ float Bs[R5_BK][R5_BN];
    const int t = threadIdx.x;
    const int tc = t % (R5_BN / R5_TN), tr = t / (R5_BN / R5_TN);
    const int row0 = blockIdx.y * R5_BM, col0 = blockIdx.x * R5_BN;
    float acc[R5_TM][R5_TN] = {};
    float ra[R5_TM], rb[R5_TN];
    for (int k0 = 0; k0 < K; k0 += R5_BK) {
#pragma unroll
        for (int e = t; e < R5_BM * R5_BK; e += R5_THREADS) {
            const int m = e / R5_BK, k = e % R5_BK;
            As[m][k] = (row0 + m < M && k0 + k < K) ? A[(int64_t)(row0 + m) * lda + k0 + k] : 0.f;
            if (TB) {
                const int n = e / R5_BK;
                Bs[k][n] = (col0 + n < N && k0 + k < K) ? B[(int64_t)(col0 + n) * ldb + k0 + k]
                                                        : 0.f;
            } else {
                const int kb = e / R5_BN, n = e % R5_BN;
                Bs[kb][n] = (k0 + kb < K && col0 + n < N) ? B[(int64_t)(k0 + kb) * ldb + col0 + n]
                                                          : 0.f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < R5_BK; kk++) {
#pragma unroll
            for (int i = 0; i < R5_TM; i++) ra[i] = As[tr * R5_TM + i][kk];
#pragma unroll
            for (int j = 0; j < R5_TN; j++) rb[j] = Bs[kk][tc * R5_TN + j];
#pragma unroll
            for (int i = 0; i < R5_TM; i++)
#pragma unroll
                for (int j = 0; j < R5_TN; j++) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < R5_TM; i++) {
        const int row = row0 + tr * R5_TM + i;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < R5_TN; j++) {
            const int col = col0 + tc * R5_TN + j;
            if (col < N) {
                float *c = C + (int64_t)row * ldc + col;
                *c = tsg::epi(acc[i][j], alpha, beta, c);
            }
        }
    }
}

static tinfer_status launch_reg2d(const tinfer_sgemm_args *a, cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    dim3 grid((a->N + R5_BN - 1) / R5_BN, (a->M + R5_BM - 1) / R5_BM);
    if (grid.y > 65535)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "sgemm rung 5: M=%d too large", a->M);
    if (a->trans_b)
        sgemm_reg2d<true><<<grid, R5_THREADS, 0, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda,
                                                      a->B, a->ldb, a->beta, a->C, a->ldc);
    else
        sgemm_reg2d<false><<<grid, R5_THREADS, 0, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda,
                                                       a->B, a->ldb, a->beta, a->C, a->ldc);
    TINFER_CUDA_LAUNCH_CHECK(err, "sgemm_reg2d");
cleanup:
    return status;
}

extern "C" tinfer_status tinfer_sgemm_05_reg2d(const tinfer_sgemm_args *a, cudaStream_t s,
                                               tinfer_err *err) {
    return launch_reg2d(a, s, err);
}

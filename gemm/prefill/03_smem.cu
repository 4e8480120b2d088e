/*
 * 03_smem.cu — rung 3: shared-memory cache blocking.
 *
 * Changed from rung 2: the block stages a 32x32 tile of A and of op(B) in shared memory per
 * 32-deep K step, and every thread reads its 32 operands from there. Why: each global element
 * is now loaded once per block instead of once per thread (32x fewer global loads); both tile
 * loads are coalesced in either layout (NT reads B rows along k and stores them transposed;
 * the +1 column of padding keeps that transposed store free of 32-way bank conflicts).
 * Measured on the H200 (run 3, 2026-12-02, NN, % of cuBLAS SGEMM in the same run) 4096: 8.2 TFLOP/s = 15.9%; 4092:
 * 8.1 TFLOP/s = 17.0%; 2048: 8.7 TFLOP/s = 17.3%
 */
#include "gemm/prefill/common.cuh"

template <bool TB>
static __global__ void __launch_bounds__(1024)
    sgemm_smem(int M, int N, int K, float alpha, const float *__restrict__ A, int64_t lda,
               const float *__restrict__ B, int64_t ldb, float beta, float *__restrict__ C,
               int64_t ldc) {
    __shared__ float As[32][32];
    __shared__ float Bs[32][33]; /* [k][n]; +1 column: see the file comment */
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    const int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += 32) {
        const int ar = row0 + ty, ak = k0 + tx;
        As[ty][tx] = (ar < M && ak < K) ? A[(int64_t)ar * lda + ak] : 0.f;
        if (TB) {
            const int bn = col0 + ty, bk = k0 + tx; /* read along k: coalesced */
            Bs[tx][ty] = (bn < N && bk < K) ? B[(int64_t)bn * ldb + bk] : 0.f;
        } else {
            const int bk = k0 + ty, bn = col0 + tx;
            Bs[ty][tx] = (bk < K && bn < N) ? B[(int64_t)bk * ldb + bn] : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < 32; kk++) acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    const int row = row0 + ty, col = col0 + tx;
    if (row < M && col < N) {
        float *c = C + (int64_t)row * ldc + col;
        *c = tsg::epi(acc, alpha, beta, c);
    }
}

static tinfer_status launch_smem(const tinfer_sgemm_args *a, cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    dim3 grid((a->N + 31) / 32, (a->M + 31) / 32);
    if (grid.y > 65535)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "sgemm rung 3: M=%d too large", a->M);
    if (a->trans_b)
        sgemm_smem<true><<<grid, 1024, 0, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda, a->B,
                                               a->ldb, a->beta, a->C, a->ldc);
    else
        sgemm_smem<false><<<grid, 1024, 0, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda, a->B,
                                                a->ldb, a->beta, a->C, a->ldc);
    TINFER_CUDA_LAUNCH_CHECK(err, "sgemm_smem");
cleanup:
    return status;
}

extern "C" tinfer_status tinfer_sgemm_03_smem(const tinfer_sgemm_args *a, cudaStream_t s,
                                              tinfer_err *err) {
    return launch_smem(a, s, err);
}

/*
 * 01_naive.cu — rung 1: one thread per output element.
 *
 * What: thread (x, y) of a 32x32 block computes C[row, col] with row = blockIdx.x*32 + x, a
 * K-long dot product read straight from global memory.
 * Why it is slow: consecutive threads of a warp (consecutive x) walk consecutive ROWS, so each
 * warp load of A touches 32 different rows (32 sectors for 128 useful bytes) and each store of
 * C is 32 scattered words; B is a broadcast. Memory-bound at ~0.25 FLOP/byte of traffic.
 * Measured on the H200 (run 3, 2026-12-02, NN, % of cuBLAS SGEMM in the same run) 4096: 0.5 TFLOP/s = 1.0%; 4092:
 * 1.5 TFLOP/s = 3.2%; 2048: 0.5 TFLOP/s = 1.0%
 */
#include "gemm/prefill/common.cuh"

template <bool TB>
static __global__ void sgemm_naive(int M, int N, int K, float alpha, const float *__restrict__ A,
                                   int64_t lda, const float *__restrict__ B, int64_t ldb,
                                   float beta, float *__restrict__ C, int64_t ldc) {
    const int row = blockIdx.x * 32 + threadIdx.x;
    const int col = blockIdx.y * 32 + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; k++) acc += A[(int64_t)row * lda + k] * tsg::b_at<TB>(B, ldb, k, col);
    float *c = C + (int64_t)row * ldc + col;
    *c = tsg::epi(acc, alpha, beta, c);
}

static tinfer_status launch_naive(const tinfer_sgemm_args *a, cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    dim3 block(32, 32), grid((a->M + 31) / 32, (a->N + 31) / 32);
    if (grid.y > 65535)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "sgemm rung 1: N=%d too large", a->N);
    if (a->trans_b)
        sgemm_naive<true><<<grid, block, 0, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda, a->B,
                                                 a->ldb, a->beta, a->C, a->ldc);
    else
        sgemm_naive<false><<<grid, block, 0, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda, a->B,
                                                  a->ldb, a->beta, a->C, a->ldc);
    TINFER_CUDA_LAUNCH_CHECK(err, "sgemm_naive");
cleanup:
    return status;
}

extern "C" tinfer_status tinfer_sgemm_01_naive(const tinfer_sgemm_args *a, cudaStream_t s,
                                               tinfer_err *err) {
    return launch_naive(a, s, err);
}

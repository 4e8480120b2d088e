/*
 * 02_coalesced.cu — rung 2: global-memory coalescing.
 *
 * Changed from rung 1: a 1024-thread block covers a 32x32 output tile with threadIdx.x % 32
 * walking COLUMNS. A warp now reads one A element (broadcast), 32 consecutive B elements (NN:
 * one 128-byte line) and writes 32 consecutive C elements. Why: rung 1 spent 32 sectors per
 * warp access; here one sector group serves the whole warp. For NT (B is [N,K]) consecutive n
 * are ldb apart, so the B loads stay strided; the shared-memory rungs fix that.
 * Measured on the H200 (run 3, 2026-12-02, NN, % of cuBLAS SGEMM in the same run) 4096: 6.4 TFLOP/s = 12.5%; 4092:
 * 6.4 TFLOP/s = 13.4%; 2048: 6.5 TFLOP/s = 12.9%
 */
#include "gemm/prefill/common.cuh"

template <bool TB>
static __global__ void __launch_bounds__(1024)
    sgemm_coalesced(int M, int N, int K, float alpha, const float *__restrict__ A, int64_t lda,
                    const float *__restrict__ B, int64_t ldb, float beta, float *__restrict__ C,
                    int64_t ldc) {
    const int row = blockIdx.y * 32 + threadIdx.x / 32;
    const int col = blockIdx.x * 32 + threadIdx.x % 32;
    if (row >= M || col >= N) return;
    float acc = 0.f;
    const float *a = A + (int64_t)row * lda;
    for (int k = 0; k < K; k++) acc += a[k] * tsg::b_at<TB>(B, ldb, k, col);
    float *c = C + (int64_t)row * ldc + col;
    *c = tsg::epi(acc, alpha, beta, c);
}

static tinfer_status launch_coalesced(const tinfer_sgemm_args *a, cudaStream_t s,
                                      tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    dim3 grid((a->N + 31) / 32, (a->M + 31) / 32);
    if (grid.y > 65535)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "sgemm rung 2: M=%d too large", a->M);
    if (a->trans_b)
        sgemm_coalesced<true><<<grid, 1024, 0, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda,
                                                    a->B, a->ldb, a->beta, a->C, a->ldc);
    else
        sgemm_coalesced<false><<<grid, 1024, 0, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda,
                                                     a->B, a->ldb, a->beta, a->C, a->ldc);
    TINFER_CUDA_LAUNCH_CHECK(err, "sgemm_coalesced");
cleanup:
    return status;
}

extern "C" tinfer_status tinfer_sgemm_02_coalesced(const tinfer_sgemm_args *a, cudaStream_t s,
                                                   tinfer_err *err) {
    return launch_coalesced(a, s, err);
}

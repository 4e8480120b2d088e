/*
 * 09_warptile.cu — rung 9: warptiling (block tile -> warp tile -> thread tile).
 *
 * Changed from rung 7/8: inside the 128x128 block tile each of the 8 warps owns a 64x32 warp
 * tile (2 x 4 warps), and inside it each lane owns 2x2 sub-tiles of 4x4 spread 32 rows and
 * 16 columns apart (warp_frag.cuh) instead of one contiguous 8x8 block. Why: (1) the fragment
 * reads become conflict-free broadcasts (rung 7's contiguous 8-float thread tiles put lanes 4
 * apart on the same banks of Bs); (2) a warp's reads of As/Bs cover 64+32 distinct floats per
 * k instead of 16+128, so more of what one warp loads is reused by its own lanes (the register
 * cache locality the articles credit for the last ~9%); (3) it is the shape the pipelined
 * rung 10 needs. Loads and layout are rung 7's (float4 global loads, padded As[k][m]), single
 * buffered. 16-byte alignment required as in rung 6, else rung 5 runs.
 * Measured on the H200 (run 3, 2026-12-02, NN, % of cuBLAS SGEMM in the same run) 4096: 34.2 TFLOP/s = 66.7%; 4092:
 * 32.9 TFLOP/s = 69.2%; 2048: 33.6 TFLOP/s = 66.9%; 8192: 33.7 TFLOP/s = 65.9%
 */
#include "gemm/prefill/warp_frag.cuh"

enum { R9_BM = 128, R9_BN = 128, R9_BK = 8, R9_WARPS_M = 2, R9_WARPS_N = 4, R9_MI = 2, R9_NI = 2,
       R9_THREADS = R9_WARPS_M * R9_WARPS_N * 32, R9_LDA = R9_BM + 4, R9_LDB = R9_BN + 4 };
static_assert(R9_BM == R9_WARPS_M * R9_MI * 32 && R9_BN == R9_WARPS_N * R9_NI * 16, "tiling");

template <bool TB>
static __global__ void __launch_bounds__(R9_THREADS, 2)
    sgemm_warptile(int M, int N, int K, float alpha, const float *__restrict__ A, int64_t lda,
                   const float *__restrict__ B, int64_t ldb, float beta, float *__restrict__ C,
                   int64_t ldc, bool c_vec) {
    __shared__ __align__(16) float As[R9_BK * R9_LDA];
    __shared__ __align__(16) float Bs[R9_BK * R9_LDB];
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wm0 = (warp / R9_WARPS_N) * (R9_MI * 32), wn0 = (warp % R9_WARPS_N) * (R9_NI * 16);
    const int a_off = wm0 + (lane >> 2) * 4, b_off = wn0 + (lane & 3) * 4;
    const int row0 = blockIdx.y * R9_BM, col0 = blockIdx.x * R9_BN;
    float acc[R9_MI * 4][R9_NI * 4] = {};
    float af[R9_MI * 4], bf[R9_NI * 4];
    for (int k0 = 0; k0 < K; k0 += R9_BK) {
#pragma unroll
        for (int e = t; e < R9_BM * R9_BK / 4; e += R9_THREADS) {
            const int m = e / (R9_BK / 4), k4 = (e % (R9_BK / 4)) * 4;
            const float4 v = tsg::ld4(A, lda, row0 + m, k0 + k4, M, K);
            As[(k4 + 0) * R9_LDA + m] = v.x;
            As[(k4 + 1) * R9_LDA + m] = v.y;
            As[(k4 + 2) * R9_LDA + m] = v.z;
            As[(k4 + 3) * R9_LDA + m] = v.w;
        }
#pragma unroll
        for (int e = t; e < R9_BN * R9_BK / 4; e += R9_THREADS) {
            if (TB) {
                const int n = e / (R9_BK / 4), k4 = (e % (R9_BK / 4)) * 4;
                const float4 v = tsg::ld4(B, ldb, col0 + n, k0 + k4, N, K);
                Bs[(k4 + 0) * R9_LDB + n] = v.x;
                Bs[(k4 + 1) * R9_LDB + n] = v.y;
                Bs[(k4 + 2) * R9_LDB + n] = v.z;
                Bs[(k4 + 3) * R9_LDB + n] = v.w;
            } else {
                const int k = e / (R9_BN / 4), n4 = (e % (R9_BN / 4)) * 4;
                *reinterpret_cast<float4 *>(&Bs[k * R9_LDB + n4]) =
                    tsg::ld4(B, ldb, k0 + k, col0 + n4, K, N);
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < R9_BK; kk++) {
            tsg::frag_load<R9_MI, R9_NI>(af, bf, As + kk * R9_LDA + a_off, Bs + kk * R9_LDB + b_off);
            tsg::frag_fma<R9_MI, R9_NI>(acc, af, bf);
        }
        __syncthreads();
    }
    tsg::frag_store<R9_MI, R9_NI>(acc, C, ldc, M, N, row0 + a_off, col0 + b_off, alpha, beta,
                                  c_vec, false);
}

static tinfer_status launch_warptile(const tinfer_sgemm_args *a, cudaStream_t s,
                                     tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    if (!tinfer_sgemm_vec_ok(a, 0)) return tinfer_sgemm_05_reg2d(a, s, err);
    const bool c_vec = tinfer_sgemm_vec_ok(a, 1) != 0;
    dim3 grid((a->N + R9_BN - 1) / R9_BN, (a->M + R9_BM - 1) / R9_BM);
    if (grid.y > 65535)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "sgemm rung 9: M=%d too large", a->M);
    if (a->trans_b)
        sgemm_warptile<true><<<grid, R9_THREADS, 0, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda,
                                                         a->B, a->ldb, a->beta, a->C, a->ldc, c_vec);
    else
        sgemm_warptile<false><<<grid, R9_THREADS, 0, s>>>(a->M, a->N, a->K, a->alpha, a->A,
                                                          a->lda, a->B, a->ldb, a->beta, a->C,
                                                          a->ldc, c_vec);
    TINFER_CUDA_LAUNCH_CHECK(err, "sgemm_warptile");
cleanup:
    return status;
}

extern "C" tinfer_status tinfer_sgemm_09_warptile(const tinfer_sgemm_args *a, cudaStream_t s,
                                                  tinfer_err *err) {
    return launch_warptile(a, s, err);
}

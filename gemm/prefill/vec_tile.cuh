/*
 * vec_tile.cuh — the block-tiled kernel shared by rungs 6 (plain layout), 7 (padded rows),
 * 12 (XOR-swizzled rows) and 8 (rung 7 with tuned tile sizes). Included by those .cu files
 * only; each instantiates what it launches.
 *
 * Block tile BM x BN, K step BK, thread tile TM x TN, (BM/TM)*(BN/TN) threads. Global loads are
 * 128-bit (float4) along the contiguous axis, guarded at the ragged edges (common.cuh ld4).
 * Shared layout: As[k][m] (A transposed while storing, so a thread reads its TM rows at one k
 * as TM/4 float4s) and Bs[k][n] (NN: float4 rows copied as is; NT: transposed like A).
 *   LAYOUT 0: row length BM (BN). The transposed A store writes 4 scalars per float4; with
 *             BK = 8 a warp covers 16 rows m x 2 k-groups, and k and k+4 rows land in the same
 *             banks (row length 128 = 0 mod 32): 2-way conflicts.
 *   LAYOUT 1: rows padded by 4 floats (row length = 4 mod 32): k and k+4 land 16 banks apart,
 *             conflict-free; 4 keeps float4 reads 16-byte aligned.
 *   LAYOUT 2: no padding; element m of row k is stored at m ^ ((k & 7) << 2), i.e. the 16-byte
 *             chunk index XOR (k & 7): rows k and k+4 are 16 banks apart, and float4 reads at a
 *             multiple of 4 stay contiguous (the XOR only touches bits 2..4). Needs BM, BN % 32.
 */
#ifndef TINFER_SGEMM_VEC_TILE_CUH
#define TINFER_SGEMM_VEC_TILE_CUH

#include "gemm/prefill/common.cuh"

namespace tsg {

template <int BM, int BN, int BK, int TM, int TN, int LAYOUT>
struct VecTile {
    static constexpr int THREADS = (BM / TM) * (BN / TN);
    static constexpr int PAD = LAYOUT == 1 ? 4 : 0;
    static constexpr int LDA_S = BM + PAD, LDB_S = BN + PAD;
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 granularity");
    static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must cover the block tile");
    static_assert(THREADS >= 32 && THREADS <= 1024, "thread count");
    static_assert(LAYOUT != 2 || (BM % 32 == 0 && BN % 32 == 0), "XOR layout needs rows % 32");
    __device__ static __forceinline__ int idx(int k, int m, int ld) {
        return k * ld + (LAYOUT == 2 ? (m ^ ((k & 7) << 2)) : m);
    }
};

template <int BM, int BN, int BK, int TM, int TN, int LAYOUT, bool TB>
static __global__ void __launch_bounds__((BM / TM) * (BN / TN))
    sgemm_vec_tile(int M, int N, int K, float alpha, const float *__restrict__ A, int64_t lda,
                   const float *__restrict__ B, int64_t ldb, float beta, float *__restrict__ C,
                   int64_t ldc, bool c_vec) {
    using T = VecTile<BM, BN, BK, TM, TN, LAYOUT>;
    __shared__ __align__(16) float As[BK * T::LDA_S];
    __shared__ __align__(16) float Bs[BK * T::LDB_S];
    const int t = threadIdx.x;
    const int tc = t % (BN / TN), tr = t / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int e = t; e < BM * BK / 4; e += T::THREADS) {
            const int m = e / (BK / 4), k4 = (e % (BK / 4)) * 4;
            const float4 v = ld4(A, lda, row0 + m, k0 + k4, M, K);
            As[T::idx(k4 + 0, m, T::LDA_S)] = v.x;
            As[T::idx(k4 + 1, m, T::LDA_S)] = v.y;
            As[T::idx(k4 + 2, m, T::LDA_S)] = v.z;
            As[T::idx(k4 + 3, m, T::LDA_S)] = v.w;
        }
        if (TB) {
#pragma unroll
            for (int e = t; e < BN * BK / 4; e += T::THREADS) {
                const int n = e / (BK / 4), k4 = (e % (BK / 4)) * 4;
                const float4 v = ld4(B, ldb, col0 + n, k0 + k4, N, K);
                Bs[T::idx(k4 + 0, n, T::LDB_S)] = v.x;
                Bs[T::idx(k4 + 1, n, T::LDB_S)] = v.y;
                Bs[T::idx(k4 + 2, n, T::LDB_S)] = v.z;
                Bs[T::idx(k4 + 3, n, T::LDB_S)] = v.w;
            }
        } else {
#pragma unroll
            for (int e = t; e < BN * BK / 4; e += T::THREADS) {
                const int k = e / (BN / 4), n4 = (e % (BN / 4)) * 4;
                *reinterpret_cast<float4 *>(&Bs[T::idx(k, n4, T::LDB_S)]) =
                    ld4(B, ldb, k0 + k, col0 + n4, K, N);
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v =
                    *reinterpret_cast<const float4 *>(&As[T::idx(kk, tr * TM + i, T::LDA_S)]);
                ra[i] = v.x; ra[i + 1] = v.y; ra[i + 2] = v.z; ra[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v =
                    *reinterpret_cast<const float4 *>(&Bs[T::idx(kk, tc * TN + j, T::LDB_S)]);
                rb[j] = v.x; rb[j + 1] = v.y; rb[j + 2] = v.z; rb[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            st4_epi(C, ldc, row0 + tr * TM + i, col0 + tc * TN + j, M, N,
                    make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), alpha,
                    beta, c_vec);
}

/* Host side: grid, the alignment check (falls back to rung 5's scalar kernel), the launch. */
template <int BM, int BN, int BK, int TM, int TN, int LAYOUT>
static tinfer_status launch_vec_tile(const tinfer_sgemm_args *a, cudaStream_t s, tinfer_err *err,
                                     const char *name) {
    tinfer_status status = TINFER_OK;
    if (!tinfer_sgemm_vec_ok(a, 0)) return tinfer_sgemm_05_reg2d(a, s, err);
    const bool c_vec = tinfer_sgemm_vec_ok(a, 1) != 0;
    dim3 grid((a->N + BN - 1) / BN, (a->M + BM - 1) / BM);
    if (grid.y > 65535)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "%s: M=%d too large", name, a->M);
    constexpr int threads = VecTile<BM, BN, BK, TM, TN, LAYOUT>::THREADS;
    if (a->trans_b)
        sgemm_vec_tile<BM, BN, BK, TM, TN, LAYOUT, true><<<grid, threads, 0, s>>>(
            a->M, a->N, a->K, a->alpha, a->A, a->lda, a->B, a->ldb, a->beta, a->C, a->ldc, c_vec);
    else
        sgemm_vec_tile<BM, BN, BK, TM, TN, LAYOUT, false><<<grid, threads, 0, s>>>(
            a->M, a->N, a->K, a->alpha, a->A, a->lda, a->B, a->ldb, a->beta, a->C, a->ldc, c_vec);
    TINFER_CUDA_LAUNCH_CHECK(err, name);
cleanup:
    return status;
}

} // namespace tsg

#endif

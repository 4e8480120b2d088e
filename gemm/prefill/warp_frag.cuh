/*
 * warp_frag.cuh — the block -> warp -> thread tile mapping shared by rungs 9, 10 and 11.
 *
 * A warp owns a WM x WN = (32*MI) x (16*NI) tile of the block tile. Lane l sits at
 * (lm, ln) = (l >> 2, l & 3) of an 8 x 4 lane grid and owns MI x NI sub-tiles of 4 x 4
 * outputs: rows  wm0 + i*32 + lm*4 + 0..3  (i < MI),  cols  wn0 + j*16 + ln*4 + 0..3  (j < NI).
 * At one k a lane reads MI float4s from As[k][...] and NI from Bs[k][...]. The 32 lanes then
 * touch only 8 distinct 16-byte chunks of A (128 contiguous bytes, one wavefront, the other
 * lanes get broadcasts) and 4 of B: no bank conflicts by construction, whereas rung 7's
 * thread tiles (8 consecutive floats per thread) put lanes 0 and 4 on the same banks.
 * The same 4-apart interleave makes each warp's C stores two 64-byte runs per row.
 */
#ifndef TINFER_SGEMM_WARP_FRAG_CUH
#define TINFER_SGEMM_WARP_FRAG_CUH

#include "gemm/prefill/common.cuh"

namespace tsg {

/* Shared-memory geometry of the pipelined kernels (rungs 10, 11, 13): ST stages of a K-major
 * A tile [BK][BM + 4] and B tile [BK][BN + 4] (the +4 floats make the 4-byte transposing
 * copies conflict-free for BK = 8: row length = 4 mod 32 banks). */
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int MI, int NI, int ST>
struct Pipe {
    static constexpr int T = WARPS_M * WARPS_N * 32;
    static constexpr int LDA_S = BM + 4, LDB_S = BN + 4;
    static constexpr int A_STAGE = BK * LDA_S, B_STAGE = BK * LDB_S;
    static constexpr size_t SMEM = (size_t)ST * (A_STAGE + B_STAGE) * sizeof(float);
    static_assert(BM == WARPS_M * MI * 32 && BN == WARPS_N * NI * 16, "warp tiling");
    static_assert(T % BK == 0 && (BM * BK) % T == 0 && (BN * BK) % T == 0, "transposing copies");
    static_assert(T % (BN / 4) == 0 && (BK * BN / 4) % T == 0, "16-byte copies of B (NN)");
    static_assert(ST >= 2, "at least double buffering");
};

template <int MI, int NI>
__device__ __forceinline__ void frag_load(float (&af)[MI * 4], float (&bf)[NI * 4],
                                          const float *as_k, const float *bs_k) {
#pragma unroll
    for (int i = 0; i < MI; i++) {
        const float4 v = *reinterpret_cast<const float4 *>(as_k + i * 32);
        af[i * 4 + 0] = v.x; af[i * 4 + 1] = v.y; af[i * 4 + 2] = v.z; af[i * 4 + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < NI; j++) {
        const float4 v = *reinterpret_cast<const float4 *>(bs_k + j * 16);
        bf[j * 4 + 0] = v.x; bf[j * 4 + 1] = v.y; bf[j * 4 + 2] = v.z; bf[j * 4 + 3] = v.w;
    }
}

template <int MI, int NI>
__device__ __forceinline__ void frag_fma(float (&acc)[MI * 4][NI * 4], const float (&af)[MI * 4],
                                         const float (&bf)[NI * 4]) {
#pragma unroll
    for (int i = 0; i < MI * 4; i++)
#pragma unroll
        for (int j = 0; j < NI * 4; j++) acc[i][j] += af[i] * bf[j];
}

/* Epilogue. atomic = 1 (split-K): C already holds beta*C; add alpha*acc with atomicAdd. */
template <int MI, int NI>
__device__ __forceinline__ void frag_store(const float (&acc)[MI * 4][NI * 4], float *C,
                                           int64_t ldc, int M, int N, int row, int col,
                                           float alpha, float beta, bool c_vec, bool atomic) {
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int rr = row + i * 32 + r;
#pragma unroll
            for (int j = 0; j < NI; j++) {
                const int cc = col + j * 16;
                const float *v = &acc[i * 4 + r][j * 4];
                if (atomic) {
                    if (rr < M)
#pragma unroll
                        for (int q = 0; q < 4; q++)
                            if (cc + q < N) atomicAdd(C + (int64_t)rr * ldc + cc + q, alpha * v[q]);
                } else {
                    st4_epi(C, ldc, rr, cc, M, N, make_float4(v[0], v[1], v[2], v[3]), alpha,
                            beta, c_vec);
                }
            }
        }
}

} // namespace tsg

#endif

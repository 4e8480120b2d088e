/*
 * 13_lean.cuh — rung 13: the pipelined kernel of rung 10 on an issue-slot diet (hoisted copy
 * addressing). Instantiated through rung 10's configuration table (configs 13-19 of
 * 10_pipelined.cu are the lean twins of configs 2, 8, 6, 9, 10, 3, 4), so the tuner searches
 * both and the dispatcher (gemm/prefill/sgemm.cu) reports a lean winner as rung 13.
 *
 * What changed from rung 10, and why:
 *  Rung 10's SASS (cuobjdump of config 2, NN) spends 1238 instructions per 8-deep K tile on
 *  1024 FFMA + 48 LDS.128; NT 1347. The rest is the copies' bookkeeping, recomputed every tile:
 *  (row0 + mm) * lda + k0 + k with 64-bit multiplies, a bounds test per copy, a branch around
 *  each predicated pointer select, constant-bank reloads of lda/ldb. On Hopper an SM
 *  sub-partition issues one warp instruction per clock and owns 32 FP32 lanes, so an FFMA
 *  warp instruction needs the whole issue slot: every other instruction displaces an FFMA
 *  (FP32 SIMT GEMM here is issue-bound, not shared-memory-bound: 6 LDS.128 wavefronts per
 *  128 FFMA). Rung 13 computes everything that does not change along K once per block:
 *   - each copy's source is a 32-bit element offset from a per-operand base pointer that
 *     advances one K tile per tile (one 64-bit add per operand; the address is then one
 *     IMAD.WIDE.U32); rows past M / columns past N are clamped to a valid row and copied with
 *     src-size 0 (zero-filled, nothing read); the src-size values live in registers;
 *   - the shared-memory destination is a 32-bit shared address plus a compile-time offset;
 *   - the ragged K edge is the only per-tile test: full tiles take unmasked copies, the one
 *     partial tile (K % BK != 0) a masked copy.
 *  Fragment loads, FFMA order, register double buffering, the stage ring, the grouped tile
 *  order and the epilogue are rung 10's (same shared-memory layout: tsg::Pipe), so the results
 *  are bit-identical to rung 10 with the same tile.
 * Static SASS of the main loop (offline, cuobjdump, 128x256x8 tile): NN 1176 instructions
 * incl. the never-taken partial-tile copy path (~1150 executed, FFMA share ~89% vs 83%), NT
 * 1214 (~1170, ~87% vs 76%).
 * Constraint: every element offset (row * ld + k) below 2^32; the launcher checks
 * (lean_offsets_ok) and runs rung 10's kernel with the same tile otherwise.
 * Measured (H200, run 6, 2026-12-02 15:47 UTC, the FP32 device run, tuned config, % of
 * cuBLAS SGEMM in the same run): NN 4096 49.3 TFLOP/s = 95.9%, 4092 102.3%, 2048 95.9%, 8192
 * 97.2% (config 15, 128x256x16); NT 91.3 / 88.9 / 91.0 / 91.4% (config 16, 128x128x8, two
 * blocks per SM). Rung 10 on the same tiles: NN 86.0 / 91.9 / 85.2 / 87.0%, NT 73.8-74.3%.
 * ncu at 4096 NN, same tile (128x256x16) without / with the hoisting: 2570 M / 2331 M warp
 * instructions, FFMA share 83.6% / 92.1%, issue slots busy 79.2% / 80.1%, FMA pipe 70.4% /
 * 77.6%, 3.11 / 2.79 ms: the busy share stayed put while FFMAs took more of it, the signature of
 * an issue-bound loop. cuBLAS (same tile shape, 256x128x8, 254 registers): 2428 M, 88.5%, 86.8%
 * busy, 79.4%: it issues more instructions but stalls less (no eligible warp 10.3% vs 16.9%).
 */
#ifndef TINFER_SGEMM_13_LEAN_CUH
#define TINFER_SGEMM_13_LEAN_CUH

#include "gemm/prefill/warp_frag.cuh"

namespace tsg {

__device__ __forceinline__ void cp_async4_u(uint32_t dst, const float *src, uint32_t n_src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
                 "r"(n_src));
}
__device__ __forceinline__ void cp_async16_u(uint32_t dst, const float *src, uint32_t n_src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(n_src));
}

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int MI, int NI, int ST, bool TB>
struct LeanPlan {
    using P = Pipe<BM, BN, BK, WARPS_M, WARPS_N, MI, NI, ST>;
    static constexpr int RA = BM * BK / P::T;                    /* A copies per thread */
    static constexpr int RB = TB ? BN * BK / P::T : BK * BN / 4 / P::T; /* B copies */
    uint32_t a_off[RA], a_sz[RA]; /* element offset from the tile's A base; 4 or 0 bytes */
    uint32_t b_off[RB], b_sz[RB];
    const float *pa, *pb;         /* operand bases at the current K tile */
    int64_t b_step;               /* elements pb advances per K tile */
    uint32_t k_lane;              /* this thread's k within the tile (A, and B for NT) */

    __device__ __forceinline__ void init(const float *__restrict__ A, int64_t lda,
                                         const float *__restrict__ B, int64_t ldb, int M, int N,
                                         int row0, int col0, int k_first) {
        const int t = threadIdx.x;
        {
            const int k = t % BK, m = t / BK;
            k_lane = k;
#pragma unroll
            for (int i = 0; i < RA; i++) {
                const int r = row0 + m + i * (P::T / BK);
                a_sz[i] = r < M ? 4u : 0u;
                a_off[i] = (uint32_t)((int64_t)(r < M ? r : row0) * lda + k);
            }
            pa = A + k_first;
        }
        if (TB) {
            const int k = t % BK, n = t / BK;
#pragma unroll
            for (int i = 0; i < RB; i++) {
                const int c = col0 + n + i * (P::T / BK);
                b_sz[i] = c < N ? 4u : 0u;
                b_off[i] = (uint32_t)((int64_t)(c < N ? c : col0) * ldb + k);
            }
            pb = B + k_first;
            b_step = BK;
        } else {
            const int n4 = (t % (BN / 4)) * 4, k = t / (BN / 4);
            const int nrem = N - (col0 + n4);
            const uint32_t nb = nrem >= 4 ? 16u : nrem > 0 ? (uint32_t)nrem * 4u : 0u;
#pragma unroll
            for (int i = 0; i < RB; i++) {
                const int kk = k + i * (P::T / (BN / 4));
                b_sz[i] = nb;
                b_off[i] = (uint32_t)((int64_t)kk * ldb + (nb ? col0 + n4 : col0));
            }
            pb = B + (int64_t)k_first * ldb;
            b_step = (int64_t)BK * ldb;
        }
    }

    /* Copies of the tile at pa/pb (first element k0) into the stage at shared addresses
     * as_u/bs_u; kvalid = K - k0 (>= BK: a full tile). Then advances pa/pb by one tile. */
    __device__ __forceinline__ void issue(uint32_t as_u, uint32_t bs_u, int kvalid) {
        const int t = threadIdx.x;
        if (kvalid >= BK) {
#pragma unroll
            for (int i = 0; i < RA; i++)
                cp_async4_u(as_u + 4u * (k_lane * P::LDA_S + t / BK + i * (P::T / BK)),
                            pa + a_off[i], a_sz[i]);
            if (TB) {
#pragma unroll
                for (int i = 0; i < RB; i++)
                    cp_async4_u(bs_u + 4u * (k_lane * P::LDB_S + t / BK + i * (P::T / BK)),
                                pb + b_off[i], b_sz[i]);
            } else {
#pragma unroll
                for (int i = 0; i < RB; i++)
                    cp_async16_u(bs_u + 4u * ((t / (BN / 4) + i * (P::T / (BN / 4))) * P::LDB_S +
                                              (t % (BN / 4)) * 4),
                                 pb + b_off[i], b_sz[i]);
            }
        } else {
            /* The partial last tile: k beyond K is zero-filled. */
            const bool kv = (int)k_lane < kvalid;
#pragma unroll
            for (int i = 0; i < RA; i++)
                cp_async4_u(as_u + 4u * (k_lane * P::LDA_S + t / BK + i * (P::T / BK)),
                            pa + (kv ? a_off[i] : 0u), kv ? a_sz[i] : 0u);
            if (TB) {
#pragma unroll
                for (int i = 0; i < RB; i++)
                    cp_async4_u(bs_u + 4u * (k_lane * P::LDB_S + t / BK + i * (P::T / BK)),
                                pb + (kv ? b_off[i] : 0u), kv ? b_sz[i] : 0u);
            } else {
#pragma unroll
                for (int i = 0; i < RB; i++) {
                    const bool v = t / (BN / 4) + i * (P::T / (BN / 4)) < kvalid;
                    cp_async16_u(bs_u + 4u * ((t / (BN / 4) + i * (P::T / (BN / 4))) * P::LDB_S +
                                              (t % (BN / 4)) * 4),
                                 pb + (v ? b_off[i] : 0u), v ? b_sz[i] : 0u);
                }
            }
        }
        pa += BK;
        pb += b_step;
    }
};

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int MI, int NI, int ST, int MINB,
          bool TB>
__global__ void __launch_bounds__(WARPS_M *WARPS_N * 32, MINB)
    sgemm_lean(int M, int N, int K, float alpha, const float *__restrict__ A, int64_t lda,
               const float *__restrict__ B, int64_t ldb, float beta, float *__restrict__ C,
               int64_t ldc, bool c_vec, int tiles_m, int tiles_n, int kt_per_split) {
    using P = Pipe<BM, BN, BK, WARPS_M, WARPS_N, MI, NI, ST>;
    extern __shared__ __align__(16) float smem[];
    float *As = smem, *Bs = smem + ST * P::A_STAGE;
    const uint32_t as_u0 = tsg::smem_u32(As), bs_u0 = tsg::smem_u32(Bs);

    constexpr int GROUP = 8; /* grouped tile order, as in sgemm_pipelined */
    const int pid = blockIdx.x, width = GROUP * tiles_n, first = (pid / width) * GROUP;
    const int gsz = min(tiles_m - first, GROUP);
    const int row0 = (first + (pid % width) % gsz) * BM, col0 = ((pid % width) / gsz) * BN;

    const int kt_total = (K + BK - 1) / BK;
    const int kt0 = blockIdx.z * kt_per_split;
    const int KT = min(kt_total - kt0, kt_per_split);

    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int a_off = (warp / WARPS_N) * (MI * 32) + (lane >> 2) * 4;
    const int b_off = (warp % WARPS_N) * (NI * 16) + (lane & 3) * 4;

    LeanPlan<BM, BN, BK, WARPS_M, WARPS_N, MI, NI, ST, TB> plan;
    plan.init(A, lda, B, ldb, M, N, row0, col0, kt0 * BK);
    int kleft = K - kt0 * BK; /* valid K elements from the next tile to issue on */

#pragma unroll
    for (int s = 0; s < ST - 1; s++) {
        if (s < KT) {
            plan.issue(as_u0 + 4u * s * P::A_STAGE, bs_u0 + 4u * s * P::B_STAGE, kleft);
            kleft -= BK;
        }
        tsg::cp_async_commit();
    }
    tsg::cp_async_wait<ST - 2>();
    __syncthreads();

    float acc[MI * 4][NI * 4] = {};
    float af[2][MI * 4], bf[2][NI * 4];
    int rs = 0, ws = ST - 1;
    tsg::frag_load<MI, NI>(af[0], bf[0], As + a_off, Bs + b_off);
    for (int kt = 0; kt < KT; kt++) {
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            if (kk == BK - 1) {
                tsg::cp_async_wait<ST - 2>();
                __syncthreads();
                rs = rs + 1 == ST ? 0 : rs + 1;
            }
            const int nk = (kk + 1) % BK;
            tsg::frag_load<MI, NI>(af[(kk + 1) & 1], bf[(kk + 1) & 1],
                                   As + rs * P::A_STAGE + nk * P::LDA_S + a_off,
                                   Bs + rs * P::B_STAGE + nk * P::LDB_S + b_off);
            if (kk == 0) {
                if (kt + ST - 1 < KT) {
                    plan.issue(as_u0 + 4u * ws * P::A_STAGE, bs_u0 + 4u * ws * P::B_STAGE, kleft);
                    kleft -= BK;
                }
                tsg::cp_async_commit();
                ws = ws + 1 == ST ? 0 : ws + 1;
            }
            tsg::frag_fma<MI, NI>(acc, af[kk & 1], bf[kk & 1]);
        }
    }
    tsg::cp_async_wait<0>();
    tsg::frag_store<MI, NI>(acc, C, ldc, M, N, row0 + a_off, col0 + b_off, alpha, beta, c_vec,
                            gridDim.z > 1);
}

} // namespace tsg

#endif

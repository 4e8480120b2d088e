/*
 * 10_pipelined.cu — rung 10: software pipelining (cp.async multi-stage shared memory, register
 * double buffering) on the warp-tiled kernel of rung 9, plus thread-block swizzling.
 *
 * Changed from rung 9:
 *  - Shared memory holds STAGES K-tiles (a ring). Tiles are copied global -> shared with
 *    cp.async, which needs no registers and does not stall the issuing warp; STAGES-1 tiles
 *    are in flight while one is computed. Bookkeeping: one commit_group per K tile (an empty
 *    group when there is nothing left to load, so counts stay uniform); before reading tile
 *    kt+1 the kernel waits with wait_group STAGES-2, i.e. all but the STAGES-2 newest groups
 *    have landed: prologue STAGES-1 groups + kt+1 issued in the loop = kt+STAGES groups, of
 *    which tiles 0..kt+1 must be complete. One __syncthreads per K tile (rung 9 had two).
 *  - A (and B for NT) is transposed on the fly by 4-byte cp.async (.ca; 16-byte copies cannot
 *    scatter): thread t copies k = t % BK of rows t / BK + i*(T/BK), so a warp reads
 *    32/BK rows x BK*4 contiguous bytes (coalesced into 32-byte sectors) and writes
 *    As[k][m] with row length BM+4 = 4 mod 32 banks: conflict-free for BK = 8. 4-byte copies
 *    also mean A needs no alignment at all. B for NN is copied 16 bytes at a time into
 *    Bs[k][n] (needs 16-byte aligned B and ldb % 4 == 0, else rung 5 runs); the ragged edge
 *    uses the src-size operand, so out-of-range bytes are zero-filled, never read.
 *  - Register double buffering: the fragments for k-step kk+1 are loaded from shared memory
 *    while the FMAs of kk run; at the last kk of a tile the wait + barrier come first and the
 *    next tile's first fragments are loaded from the next stage.
 *  - Thread-block swizzling: a 1-D grid walks tiles in groups of 8 tile-rows (column-major
 *    inside a group), so the blocks resident at one time share A rows and B columns in L2.
 *    At 4096^2 FP32 (64 MiB per operand, H200 L2 = 60 MiB) a plain raster wave touches all
 *    of B; a grouped wave touches 8 A tile-rows and ~17 B tile-columns.
 *  - blockIdx.z selects a K range (split-K, rung 11): the epilogue then accumulates with
 *    atomicAdd into a C that the caller has already scaled by beta.
 * The configuration table (tile, warp tile, stages) is searched by the tuner. On the H200 the
 * winner from 2048^3 up is config 2: 128x256x8, 2x4 warps of 64x64, 8x16 per thread (236
 * registers, one 8-warp block per SM), 3 stages; 8x8 per thread (config 0, two blocks per SM)
 * runs ~13% slower: it issues one LDS.128 per 16 FFMAs against one per 21 for 8x16, and Hopper
 * doubled FP32 lanes per SM without doubling shared-memory bandwidth. Tried and measured
 * slower or equal: 16-deep K tiles, a 4th stage, 4-warp blocks of 8x16 (two per SM).
 * Measured on the H200 (run 3, 2026-12-02, NN, % of cuBLAS SGEMM in the same run) 4096: 44.7 TFLOP/s = 87.3%; 4092:
 * 44.5 TFLOP/s = 93.5%; 2048: 43.9 TFLOP/s = 87.5%; 8192: 44.9 TFLOP/s = 87.9%. NT: 4096: 39.8
 * TFLOP/s = 79.0%; 4092: 39.8 TFLOP/s = 75.9%; 2048: 39.1 TFLOP/s = 80.8%; 8192: 39.9 TFLOP/s
 * = 77.9%. Target 95% missed by ~8 points at 4096/8192
 * (gemm/prefill/README.md, "Rung 10").
 * Configs 13-19 are rung 13 (13_lean.cuh): these tiles with the copies' address arithmetic
 * hoisted out of the K loop; that, not the memory pipeline, closed the gap to cuBLAS (run 5).
 * Configs 11-12 (natural-layout A/W tiles, 16-byte copies, no transposition; see the comment
 * above sgemm_pipe_nat) cut the loop's non-FFMA instructions by 4-13% and measured 11-12%
 * slower than config 2 on the 128x256 tile, ~1% slower than config 9 on 128x128 (run 4,
 * gemm/prefill/README.md): the dispatcher keeps config 2; they stay as tuner candidates.
 */
#include "gemm/prefill/13_lean.cuh"
#include "gemm/prefill/warp_frag.cuh"

#include <type_traits>

namespace {

using tsg::Pipe;
using tsg::sgemm_lean;

/* Issues the copies of K tile `kt` (elements k0 = kt*BK ...) into one stage. */
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int MI, int NI, int ST, bool TB>
__device__ __forceinline__ void load_tile(float *as, float *bs, const float *__restrict__ A,
                                          int64_t lda, const float *__restrict__ B, int64_t ldb,
                                          int M, int N, int K, int row0, int col0, int k0) {
    using P = Pipe<BM, BN, BK, WARPS_M, WARPS_N, MI, NI, ST>;
    const int t = threadIdx.x;
    {
        const int k = t % BK, m = t / BK;
        const bool kv = k0 + k < K;
#pragma unroll
        for (int i = 0; i < BM * BK / P::T; i++) {
            const int mm = m + i * (P::T / BK);
            const bool v = kv && row0 + mm < M;
            tsg::cp_async4(as + k * P::LDA_S + mm, v ? A + (int64_t)(row0 + mm) * lda + k0 + k : A,
                           v);
        }
    }
    if (TB) {
        const int k = t % BK, n = t / BK;
        const bool kv = k0 + k < K;
#pragma unroll
        for (int i = 0; i < BN * BK / P::T; i++) {
            const int nn = n + i * (P::T / BK);
            const bool v = kv && col0 + nn < N;
            tsg::cp_async4(bs + k * P::LDB_S + nn, v ? B + (int64_t)(col0 + nn) * ldb + k0 + k : B,
                           v);
        }
    } else {
        const int n4 = (t % (BN / 4)) * 4, k = t / (BN / 4);
        const int nrem = N - (col0 + n4);
        const int nbytes = nrem >= 4 ? 16 : nrem > 0 ? nrem * 4 : 0;
#pragma unroll
        for (int i = 0; i < BK * BN / 4 / P::T; i++) {
            const int kk = k + i * (P::T / (BN / 4));
            const int nb = (k0 + kk < K) ? nbytes : 0;
            tsg::cp_async16(bs + kk * P::LDB_S + n4,
                            nb ? B + (int64_t)(k0 + kk) * ldb + col0 + n4 : B, nb);
        }
    }
}

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int MI, int NI, int ST, int MINB,
          bool TB>
__global__ void __launch_bounds__(WARPS_M *WARPS_N * 32, MINB)
    sgemm_pipelined(int M, int N, int K, float alpha, const float *__restrict__ A, int64_t lda,
                    const float *__restrict__ B, int64_t ldb, float beta, float *__restrict__ C,
                    int64_t ldc, bool c_vec, int tiles_m, int tiles_n, int kt_per_split) {
    using P = Pipe<BM, BN, BK, WARPS_M, WARPS_N, MI, NI, ST>;
    extern __shared__ __align__(16) float smem[];
    float *As = smem, *Bs = smem + ST * P::A_STAGE;

    /* Grouped tile order (see the file comment). */
    constexpr int GROUP = 8;
    const int pid = blockIdx.x, width = GROUP * tiles_n, first = (pid / width) * GROUP;
    const int gsz = min(tiles_m - first, GROUP);
    const int row0 = (first + (pid % width) % gsz) * BM, col0 = ((pid % width) / gsz) * BN;

    const int kt_total = (K + BK - 1) / BK;
    const int kt0 = blockIdx.z * kt_per_split;
    const int KT = min(kt_total - kt0, kt_per_split);

    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int a_off = (warp / WARPS_N) * (MI * 32) + (lane >> 2) * 4;
    const int b_off = (warp % WARPS_N) * (NI * 16) + (lane & 3) * 4;

#pragma unroll
    for (int s = 0; s < ST - 1; s++) {
        if (s < KT)
            load_tile<BM, BN, BK, WARPS_M, WARPS_N, MI, NI, ST, TB>(
                As + s * P::A_STAGE, Bs + s * P::B_STAGE, A, lda, B, ldb, M, N, K, row0, col0,
                (kt0 + s) * BK);
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
                if (kt + ST - 1 < KT)
                    load_tile<BM, BN, BK, WARPS_M, WARPS_N, MI, NI, ST, TB>(
                        As + ws * P::A_STAGE, Bs + ws * P::B_STAGE, A, lda, B, ldb, M, N, K, row0,
                        col0, (kt0 + kt + ST - 1) * BK);
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

/* ---- Natural-layout variant (configs 11, 12): no transposing copies. ----
 * A (and W for NT) K tiles are stored in their global row order, one 8-float K slice per
 * row, and copied with 16-byte cp.async (one copy per 4 floats instead of one per float: a
 * quarter of the copy instructions and of the shared-store wavefronts of the 4-byte
 * transposing copies, which ncu showed as the only conflicted shared traffic). The inner
 * loop reads each of a lane's rows as a float4 along k (LDS.128 per row per 4 k steps: the
 * same 2 loads per k as the K-major layout) and, for NT, each of its W columns the same way
 * (4 LDS.128 per 16-column group per 4 k steps, again what the K-major layout costs).
 * Layout (float4 "chunks", chunk h in {0,1} = k 0..3 / 4..7 of row n): within each 32-row
 * group g, chunk (n, h) sits at slot g*64 + ((n&3)*2 + h)*8 + ((n>>2)&7). A warp's LDS.128
 * at fixed (sub-tile, r, h) reads rows 4*q + r for 8 (A) or 4 (W) lanes q: consecutive slots
 * of one 128-byte line, so conflict-free with the other lanes broadcast. The copies walk
 * chunks e = thread + i*T as (h, q, r, g) = (bit 0, bits 1-3, bits 4-5, bits 6..): a warp
 * writes 8 slots x 4 lines = 4 wavefronts (the minimum for 512 bytes) and reads 16 whole
 * 32-byte row slices. Needs 16-byte aligned A (and W) rows: lda % 4 == 0 and aligned base;
 * the launcher falls back to config 2 otherwise. The ragged K edge zero-fills through the
 * src-size operand, the ragged M/N edge skips the copy (zero-filled too).
 * Measured (H200, run 4): slower, not faster. ptxas allocates the "one component of 8 float4
 * registers per k" pattern with ~3x more FFMAs whose two fresh source registers share a
 * register bank than config 2's (547 vs 172 of 1024 per K tile, NN), which is the suspected
 * cause; the copy path was not the bottleneck. */
template <int BM, int BN, int WARPS_M, int WARPS_N, int MI, int NI, int ST, bool TB>
struct Nat {
    static constexpr int BK = 8;
    static constexpr int T = WARPS_M * WARPS_N * 32;
    static constexpr int LDB_S = BN + 4; /* NN: B stays K-major as in the main kernel */
    static constexpr int A_STAGE = BM * BK, B_STAGE = TB ? BN * BK : BK * LDB_S;
    static constexpr size_t SMEM = (size_t)ST * (A_STAGE + B_STAGE) * sizeof(float);
    static_assert(BM == WARPS_M * MI * 32 && BN == WARPS_N * NI * 16, "warp tiling");
    static_assert((2 * BM) % T == 0 && (2 * BN) % T == 0, "whole 16-byte copies per thread");
    static_assert(T % (BN / 4) == 0 && (BK * BN / 4) % T == 0, "16-byte copies of B (NN)");
    static_assert(NI % 2 == 0 || !TB, "W column groups pair up into 32-row groups");
};

/* Slot (in floats) of chunk h of row n (see above). */
__device__ __forceinline__ int nat_slot(int n, int h) {
    return ((n >> 5) * 64 + ((n & 3) * 2 + h) * 8 + ((n >> 2) & 7)) * 4;
}

/* Copies rows [r0, r0 + R) x k [k0, k0 + 8) of a row-major operand into the natural layout. */
template <int R, int T>
__device__ __forceinline__ void nat_copy(float *dst, const float *__restrict__ X, int64_t ldx,
                                         int rows, int K, int r0, int k0) {
#pragma unroll
    for (int i = 0; i < 2 * R / T; i++) {
        const int e = threadIdx.x + i * T;
        const int h = e & 1, n = (e >> 6) * 32 + ((e >> 1) & 7) * 4 + ((e >> 4) & 1) +
                                 ((e >> 5) & 1) * 2;
        const int krem = K - (k0 + h * 4);
        const int nb = r0 + n < rows ? (krem >= 4 ? 16 : krem > 0 ? krem * 4 : 0) : 0;
        tsg::cp_async16(dst + nat_slot(n, h), nb ? X + (int64_t)(r0 + n) * ldx + k0 + h * 4 : X,
                        nb);
    }
}

template <int BM, int BN, int WARPS_M, int WARPS_N, int MI, int NI, int ST, bool TB>
__device__ __forceinline__ void nat_load_tile(float *as, float *bs, const float *__restrict__ A,
                                              int64_t lda, const float *__restrict__ B,
                                              int64_t ldb, int M, int N, int K, int row0,
                                              int col0, int k0) {
    using P = Nat<BM, BN, WARPS_M, WARPS_N, MI, NI, ST, TB>;
    nat_copy<BM, P::T>(as, A, lda, M, K, row0, k0);
    if (TB) {
        nat_copy<BN, P::T>(bs, B, ldb, N, K, col0, k0);
    } else {
        const int t = threadIdx.x;
        const int n4 = (t % (BN / 4)) * 4, k = t / (BN / 4);
        const int nrem = N - (col0 + n4);
        const int nbytes = nrem >= 4 ? 16 : nrem > 0 ? nrem * 4 : 0;
#pragma unroll
        for (int i = 0; i < P::BK * BN / 4 / P::T; i++) {
            const int kk = k + i * (P::T / (BN / 4));
            const int nb = (k0 + kk < K) ? nbytes : 0;
            tsg::cp_async16(bs + kk * P::LDB_S + n4,
                            nb ? B + (int64_t)(k0 + kk) * ldb + col0 + n4 : B, nb);
        }
    }
}

/* A rows of one half K tile: af[i*4 + r] = A[row i*32 + lm*4 + r][k 4h .. 4h+3]. */
template <int MI>
__device__ __forceinline__ void nat_load_a(float4 (&af)[MI * 4], const float *as, int wg, int lm,
                                           int h) {
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int r = 0; r < 4; r++)
            af[i * 4 + r] = *reinterpret_cast<const float4 *>(
                as + ((wg + i) * 64 + (r * 2 + h) * 8 + lm) * 4);
}

/* NT: W columns j*16 + ln*4 + c (c < 4) of one half K tile, bf[c] = k 4h .. 4h+3. */
__device__ __forceinline__ void nat_load_w(float4 (&bf)[4], const float *bs, int wg, int ln,
                                           int j, int h) {
#pragma unroll
    for (int c = 0; c < 4; c++)
        bf[c] = *reinterpret_cast<const float4 *>(
            bs + ((wg + j / 2) * 64 + (c * 2 + h) * 8 + (j & 1) * 4 + ln) * 4);
}

/* NN: B row k (K-major, as in the main kernel): bf[j*4 + c] = B[k][j*16 + ln*4 + c]. */
template <int NI>
__device__ __forceinline__ void nat_load_b(float (&bf)[NI * 4], const float *bs_k) {
#pragma unroll
    for (int j = 0; j < NI; j++) {
        const float4 v = *reinterpret_cast<const float4 *>(bs_k + j * 16);
        bf[j * 4 + 0] = v.x; bf[j * 4 + 1] = v.y; bf[j * 4 + 2] = v.z; bf[j * 4 + 3] = v.w;
    }
}

__device__ __forceinline__ float f4_at(const float4 &v, int q) {
    return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}

template <int BM, int BN, int WARPS_M, int WARPS_N, int MI, int NI, int ST, int MINB, bool TB>
__global__ void __launch_bounds__(WARPS_M *WARPS_N * 32, MINB)
    sgemm_pipe_nat(int M, int N, int K, float alpha, const float *__restrict__ A, int64_t lda,
                   const float *__restrict__ B, int64_t ldb, float beta, float *__restrict__ C,
                   int64_t ldc, bool c_vec, int tiles_m, int tiles_n, int kt_per_split) {
    using P = Nat<BM, BN, WARPS_M, WARPS_N, MI, NI, ST, TB>;
    constexpr int BK = P::BK;
    extern __shared__ __align__(16) float smem[];
    float *As = smem, *Bs = smem + ST * P::A_STAGE;

    constexpr int GROUP = 8; /* grouped tile order, as in the main kernel */
    const int pid = blockIdx.x, width = GROUP * tiles_n, first = (pid / width) * GROUP;
    const int gsz = min(tiles_m - first, GROUP);
    const int row0 = (first + (pid % width) % gsz) * BM, col0 = ((pid % width) / gsz) * BN;

    const int kt_total = (K + BK - 1) / BK;
    const int kt0 = blockIdx.z * kt_per_split;
    const int KT = min(kt_total - kt0, kt_per_split);

    const int t = threadIdx.x, warp = t / 32, lane = t % 32, lm = lane >> 2, ln = lane & 3;
    const int wm0 = (warp / WARPS_N) * (MI * 32), wn0 = (warp % WARPS_N) * (NI * 16);
    const int wga = wm0 / 32, wgb = wn0 / 32;
    const int b_off = wn0 + ln * 4;

#pragma unroll
    for (int s = 0; s < ST - 1; s++) {
        if (s < KT)
            nat_load_tile<BM, BN, WARPS_M, WARPS_N, MI, NI, ST, TB>(
                As + s * P::A_STAGE, Bs + s * P::B_STAGE, A, lda, B, ldb, M, N, K, row0, col0,
                (kt0 + s) * BK);
        tsg::cp_async_commit();
    }
    tsg::cp_async_wait<ST - 2>();
    __syncthreads();

    float acc[MI * 4][NI * 4] = {};
    float4 af[2][MI * 4]; /* [half] */
    int rs = 0, ws = ST - 1;
    nat_load_a<MI>(af[0], As, wga, lm, 0);
    if constexpr (!TB) {
        float bf[2][NI * 4];
        nat_load_b<NI>(bf[0], Bs + b_off);
        for (int kt = 0; kt < KT; kt++) {
#pragma unroll
            for (int kk = 0; kk < BK; kk++) {
                const int h = kk / 4, q = kk % 4;
                if (kk == BK - 1) {
                    tsg::cp_async_wait<ST - 2>();
                    __syncthreads();
                    rs = rs + 1 == ST ? 0 : rs + 1;
                    nat_load_a<MI>(af[0], As + rs * P::A_STAGE, wga, lm, 0);
                } else if (kk == 3) {
                    nat_load_a<MI>(af[1], As + rs * P::A_STAGE, wga, lm, 1);
                }
                nat_load_b<NI>(bf[(kk + 1) & 1],
                               Bs + rs * P::B_STAGE + ((kk + 1) % BK) * P::LDB_S + b_off);
                if (kk == 0) {
                    if (kt + ST - 1 < KT)
                        nat_load_tile<BM, BN, WARPS_M, WARPS_N, MI, NI, ST, TB>(
                            As + ws * P::A_STAGE, Bs + ws * P::B_STAGE, A, lda, B, ldb, M, N, K,
                            row0, col0, (kt0 + kt + ST - 1) * BK);
                    tsg::cp_async_commit();
                    ws = ws + 1 == ST ? 0 : ws + 1;
                }
#pragma unroll
                for (int i = 0; i < MI * 4; i++)
#pragma unroll
                    for (int j = 0; j < NI * 4; j++)
                        acc[i][j] += f4_at(af[h][i], q) * bf[kk & 1][j];
            }
        }
    } else {
        float4 wf[2][4];
        nat_load_w(wf[0], Bs, wgb, ln, 0, 0);
        /* One step st = (half h, column group j); a generic lambda over integral constants
         * so that every register array index is a compile-time constant (a plain unrolled
         * loop of this size was left rolled, sending acc to local memory). */
        auto step = [&](auto S, int kt) {
            constexpr int st = decltype(S)::value, h = st / NI, j = st % NI;
            if (st == 2 * NI - 1) {
                tsg::cp_async_wait<ST - 2>();
                __syncthreads();
                rs = rs + 1 == ST ? 0 : rs + 1;
                nat_load_a<MI>(af[0], As + rs * P::A_STAGE, wga, lm, 0);
                nat_load_w(wf[(st + 1) & 1], Bs + rs * P::B_STAGE, wgb, ln, 0, 0);
            } else {
                if (st == NI - 1) nat_load_a<MI>(af[1], As + rs * P::A_STAGE, wga, lm, 1);
                nat_load_w(wf[(st + 1) & 1], Bs + rs * P::B_STAGE, wgb, ln, (st + 1) % NI,
                           (st + 1) / NI);
            }
            if (st == 0) {
                if (kt + ST - 1 < KT)
                    nat_load_tile<BM, BN, WARPS_M, WARPS_N, MI, NI, ST, TB>(
                        As + ws * P::A_STAGE, Bs + ws * P::B_STAGE, A, lda, B, ldb, M, N, K,
                        row0, col0, (kt0 + kt + ST - 1) * BK);
                tsg::cp_async_commit();
                ws = ws + 1 == ST ? 0 : ws + 1;
            }
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int i = 0; i < MI * 4; i++)
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        acc[i][j * 4 + c] += f4_at(af[h][i], q) * f4_at(wf[st & 1][c], q);
        };
        static_assert(NI == 4, "the step list below is written out for NI = 4");
        for (int kt = 0; kt < KT; kt++) {
            step(std::integral_constant<int, 0>{}, kt);
            step(std::integral_constant<int, 1>{}, kt);
            step(std::integral_constant<int, 2>{}, kt);
            step(std::integral_constant<int, 3>{}, kt);
            step(std::integral_constant<int, 4>{}, kt);
            step(std::integral_constant<int, 5>{}, kt);
            step(std::integral_constant<int, 6>{}, kt);
            step(std::integral_constant<int, 7>{}, kt);
        }
    }
    tsg::cp_async_wait<0>();
    tsg::frag_store<MI, NI>(acc, C, ldc, M, N, row0 + wm0 + lm * 4, col0 + b_off, alpha, beta,
                            c_vec, gridDim.z > 1);
}

template <int BM, int BN, int WARPS_M, int WARPS_N, int MI, int NI, int ST, int MINB>
tinfer_status launch_nat(const tinfer_sgemm_args *a, int splits, cudaStream_t s,
                         tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    const bool c_vec = tinfer_sgemm_vec_ok(a, 1) != 0;
    const int tiles_m = (a->M + BM - 1) / BM, tiles_n = (a->N + BN - 1) / BN;
    const int kt_total = (a->K + 7) / 8;
    if (splits < 1) splits = 1;
    if (splits > kt_total) splits = kt_total;
    const int kt_per = (kt_total + splits - 1) / splits;
    splits = (kt_total + kt_per - 1) / kt_per; /* no empty K slice */
    const int64_t n_tiles = (int64_t)tiles_m * tiles_n;
    if (n_tiles > 0x7fffffff || splits > 65535)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "sgemm rung 10: %dx%d too large",
                              a->M, a->N);
    dim3 grid((unsigned)n_tiles, 1, (unsigned)splits);
    static int opted[2]; /* > 48 KB opt-in, once per kernel (idempotent) */
    if (a->trans_b) {
        using P = Nat<BM, BN, WARPS_M, WARPS_N, MI, NI, ST, true>;
        auto k = sgemm_pipe_nat<BM, BN, WARPS_M, WARPS_N, MI, NI, ST, MINB, true>;
        if (P::SMEM > 48 * 1024 && !opted[1]) {
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                      (int)P::SMEM));
            opted[1] = 1;
        }
        k<<<grid, P::T, P::SMEM, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda, a->B, a->ldb,
                                      a->beta, a->C, a->ldc, c_vec, tiles_m, tiles_n, kt_per);
    } else {
        using P = Nat<BM, BN, WARPS_M, WARPS_N, MI, NI, ST, false>;
        auto k = sgemm_pipe_nat<BM, BN, WARPS_M, WARPS_N, MI, NI, ST, MINB, false>;
        if (P::SMEM > 48 * 1024 && !opted[0]) {
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                      (int)P::SMEM));
            opted[0] = 1;
        }
        k<<<grid, P::T, P::SMEM, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda, a->B, a->ldb,
                                      a->beta, a->C, a->ldc, c_vec, tiles_m, tiles_n, kt_per);
    }
    TINFER_CUDA_LAUNCH_CHECK(err, "sgemm_pipe_nat");
cleanup:
    return status;
}

typedef void (*pipe_kernel_fn)(int, int, int, float, const float *, int64_t, const float *, int64_t,
                               float, float *, int64_t, bool, int, int, int);

/* The plain or the lean kernel of one tile (if constexpr: only the chosen one is instantiated). */
template <bool lean, int BM, int BN, int BK, int WARPS_M, int WARPS_N, int MI, int NI, int ST,
          int MINB, bool TB>
pipe_kernel_fn pick_kernel() {
    if constexpr (lean) return sgemm_lean<BM, BN, BK, WARPS_M, WARPS_N, MI, NI, ST, MINB, TB>;
    else return sgemm_pipelined<BM, BN, BK, WARPS_M, WARPS_N, MI, NI, ST, MINB, TB>;
}

/* 1 when every element offset the lean kernel forms (row * ld + k) fits in 32 bits. */
static bool lean_offsets_ok(const tinfer_sgemm_args *a) {
    const int64_t lim = (int64_t)1 << 32;
    const int64_t a_max = (int64_t)a->M * a->lda + 64;
    const int64_t b_max = a->trans_b ? (int64_t)a->N * a->ldb + 64 : 64 * a->ldb + a->N;
    return a_max < lim && b_max < lim;
}

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int MI, int NI, int ST, int MINB,
          bool lean = false>
tinfer_status launch_pipe(const tinfer_sgemm_args *a, int splits, cudaStream_t s,
                          tinfer_err *err) {
    using P = Pipe<BM, BN, BK, WARPS_M, WARPS_N, MI, NI, ST>;
    tinfer_status status = TINFER_OK;
    const bool c_vec = tinfer_sgemm_vec_ok(a, 1) != 0;
    const int tiles_m = (a->M + BM - 1) / BM, tiles_n = (a->N + BN - 1) / BN;
    const int kt_total = (a->K + BK - 1) / BK;
    if (splits < 1) splits = 1;
    if (splits > kt_total) splits = kt_total;
    const int kt_per = (kt_total + splits - 1) / splits;
    splits = (kt_total + kt_per - 1) / kt_per; /* no empty K slice */
    const int64_t n_tiles = (int64_t)tiles_m * tiles_n;
    if (n_tiles > 0x7fffffff || splits > 65535)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "sgemm rung 10: %dx%d too large",
                              a->M, a->N);
    dim3 grid((unsigned)n_tiles, 1, (unsigned)splits);
    /* Opt in to > 48 KB of dynamic shared memory once per kernel (idempotent, so a race
     * between threads setting it twice is harmless). */
    static int opted[2];
    if (a->trans_b) {
        pipe_kernel_fn k = pick_kernel<lean, BM, BN, BK, WARPS_M, WARPS_N, MI, NI, ST, MINB, true>();
        if (P::SMEM > 48 * 1024 && !opted[1]) {
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                      (int)P::SMEM));
            opted[1] = 1;
        }
        k<<<grid, P::T, P::SMEM, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda, a->B, a->ldb,
                                      a->beta, a->C, a->ldc, c_vec, tiles_m, tiles_n, kt_per);
    } else {
        pipe_kernel_fn k = pick_kernel<lean, BM, BN, BK, WARPS_M, WARPS_N, MI, NI, ST, MINB, false>();
        if (P::SMEM > 48 * 1024 && !opted[0]) {
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                      (int)P::SMEM));
            opted[0] = 1;
        }
        k<<<grid, P::T, P::SMEM, s>>>(a->M, a->N, a->K, a->alpha, a->A, a->lda, a->B, a->ldb,
                                      a->beta, a->C, a->ldc, c_vec, tiles_m, tiles_n, kt_per);
    }
    TINFER_CUDA_LAUNCH_CHECK(err, lean ? "sgemm_lean" : "sgemm_pipelined");
cleanup:
    return status;
}

} // namespace

#define R10_CFG(BM, BN, BK, WMW, WNW, MI, NI, ST, MINB)                                            \
    {BM, BN, BK, MI * 4, NI * 4, MI * 32, NI * 16, ST, WMW * WNW * 32,                             \
     Pipe<BM, BN, BK, WMW, WNW, MI, NI, ST>::SMEM,                                                 \
     (const void *)sgemm_pipelined<BM, BN, BK, WMW, WNW, MI, NI, ST, MINB, false>,                 \
     (const void *)sgemm_pipelined<BM, BN, BK, WMW, WNW, MI, NI, ST, MINB, true>}

/* Natural-layout kernel (BK = 8; smem of the NN instance reported: NT uses less). */
#define R10_NAT_CFG(BM, BN, WMW, WNW, MI, NI, ST, MINB)                                           \
    {BM, BN, 8, MI * 4, NI * 4, MI * 32, NI * 16, ST, WMW * WNW * 32,                              \
     Nat<BM, BN, WMW, WNW, MI, NI, ST, false>::SMEM,                                               \
     (const void *)sgemm_pipe_nat<BM, BN, WMW, WNW, MI, NI, ST, MINB, false>,                      \
     (const void *)sgemm_pipe_nat<BM, BN, WMW, WNW, MI, NI, ST, MINB, true>}

/* Lean main loop (same tiles and smem as R10_CFG). */
#define R10_LEAN_CFG(BM, BN, BK, WMW, WNW, MI, NI, ST, MINB)                                       \
    {BM, BN, BK, MI * 4, NI * 4, MI * 32, NI * 16, ST, WMW * WNW * 32,                             \
     Pipe<BM, BN, BK, WMW, WNW, MI, NI, ST>::SMEM,                                                 \
     (const void *)sgemm_lean<BM, BN, BK, WMW, WNW, MI, NI, ST, MINB, false>,                      \
     (const void *)sgemm_lean<BM, BN, BK, WMW, WNW, MI, NI, ST, MINB, true>}

/* X-macro: index, then template arguments. Keep in step with the switch below. */
static const tinfer_sgemm_cfg k_r10_cfgs[] = {
    R10_CFG(128, 128, 8, 2, 4, 2, 2, 3, 2),  /* 0: 8x8/thread, 2 blocks/SM */
    R10_CFG(128, 128, 16, 2, 4, 2, 2, 3, 2), /* 1: deeper K tile, half the barriers */
    R10_CFG(128, 256, 8, 2, 4, 2, 4, 3, 1),  /* 2: 8x16/thread, 1 block/SM */
    R10_CFG(256, 128, 8, 4, 2, 2, 4, 3, 1),  /* 3: 8x16/thread, tall */
    R10_CFG(64, 128, 16, 2, 4, 1, 2, 4, 2),  /* 4: 4x8/thread, for small M or few tiles */
    R10_CFG(128, 64, 16, 2, 2, 2, 2, 4, 3),  /* 5: 128 threads, for small N or few tiles */
    R10_CFG(128, 256, 16, 2, 4, 2, 4, 3, 1), /* 6: config 2 with half the barriers */
    R10_CFG(256, 128, 16, 4, 2, 2, 4, 3, 1), /* 7: config 3 with half the barriers */
    R10_CFG(128, 256, 8, 2, 4, 2, 4, 4, 1),  /* 8: config 2, one more stage in flight */
    R10_CFG(128, 128, 8, 2, 2, 2, 4, 4, 2),  /* 9: 8x16/thread in 4-warp blocks, 2 blocks/SM */
    R10_CFG(128, 128, 16, 2, 2, 2, 4, 3, 2), /* 10: config 9 with half the barriers */
    R10_NAT_CFG(128, 256, 2, 4, 2, 4, 3, 1), /* 11: config 2, A (and W) in natural layout */
    R10_NAT_CFG(128, 128, 2, 2, 2, 4, 4, 2), /* 12: config 9, A (and W) in natural layout */
    R10_LEAN_CFG(128, 256, 8, 2, 4, 2, 4, 3, 1),  /* 13: config 2, lean main loop */
    R10_LEAN_CFG(128, 256, 8, 2, 4, 2, 4, 4, 1),  /* 14: config 8, lean main loop */
    R10_LEAN_CFG(128, 256, 16, 2, 4, 2, 4, 3, 1), /* 15: config 6, lean main loop */
    R10_LEAN_CFG(128, 128, 8, 2, 2, 2, 4, 4, 2),  /* 16: config 9, lean main loop */
    R10_LEAN_CFG(128, 128, 16, 2, 2, 2, 4, 3, 2), /* 17: config 10, lean main loop */
    R10_LEAN_CFG(256, 128, 8, 4, 2, 2, 4, 3, 1),  /* 18: config 3, lean main loop */
    R10_LEAN_CFG(64, 128, 16, 2, 4, 1, 2, 4, 2),  /* 19: config 4, lean main loop */
};
enum { R10_N = (int)(sizeof k_r10_cfgs / sizeof k_r10_cfgs[0]) };

/* Lean twin of each plain config and back (rung 13 <-> rung 10 with the same tile). */
static const int k_lean_pairs[][2] = {{2, 13}, {8, 14}, {6, 15}, {9, 16}, {10, 17}, {3, 18}, {4, 19}};

extern "C" int tinfer_sgemm_10_lean_twin(int config) {
    for (size_t i = 0; i < sizeof k_lean_pairs / sizeof k_lean_pairs[0]; i++)
        if (k_lean_pairs[i][0] == config || k_lean_pairs[i][1] == config) return k_lean_pairs[i][1];
    return -1;
}
extern "C" int tinfer_sgemm_10_plain_twin(int config) {
    for (size_t i = 0; i < sizeof k_lean_pairs / sizeof k_lean_pairs[0]; i++)
        if (k_lean_pairs[i][0] == config || k_lean_pairs[i][1] == config) return k_lean_pairs[i][0];
    return config;
}

extern "C" int tinfer_sgemm_10_n_configs(void) { return R10_N; }
extern "C" const tinfer_sgemm_cfg *tinfer_sgemm_10_config(int i) {
    return (i >= 0 && i < R10_N) ? &k_r10_cfgs[i] : NULL;
}

extern "C" tinfer_status tinfer_sgemm_10_pipelined(const tinfer_sgemm_args *a, int config,
                                                   int splits, cudaStream_t s, tinfer_err *err) {
    /* B (NN) is copied 16 bytes at a time; A and B (NT) need no alignment. */
    if (!a->trans_b && !((uintptr_t)a->B % 16 == 0 && a->ldb % 4 == 0))
        return tinfer_sgemm_05_reg2d(a, s, err);
    switch (config) {
    case 0: return launch_pipe<128, 128, 8, 2, 4, 2, 2, 3, 2>(a, splits, s, err);
    case 1: return launch_pipe<128, 128, 16, 2, 4, 2, 2, 3, 2>(a, splits, s, err);
    case 2: return launch_pipe<128, 256, 8, 2, 4, 2, 4, 3, 1>(a, splits, s, err);
    case 3: return launch_pipe<256, 128, 8, 4, 2, 2, 4, 3, 1>(a, splits, s, err);
    case 4: return launch_pipe<64, 128, 16, 2, 4, 1, 2, 4, 2>(a, splits, s, err);
    case 5: return launch_pipe<128, 64, 16, 2, 2, 2, 2, 4, 3>(a, splits, s, err);
    case 6: return launch_pipe<128, 256, 16, 2, 4, 2, 4, 3, 1>(a, splits, s, err);
    case 7: return launch_pipe<256, 128, 16, 4, 2, 2, 4, 3, 1>(a, splits, s, err);
    case 8: return launch_pipe<128, 256, 8, 2, 4, 2, 4, 4, 1>(a, splits, s, err);
    case 9: return launch_pipe<128, 128, 8, 2, 2, 2, 4, 4, 2>(a, splits, s, err);
    case 10: return launch_pipe<128, 128, 16, 2, 2, 2, 4, 3, 2>(a, splits, s, err);
    case 11:
    case 12:
        /* 16-byte copies of A (and W) rows: else the transposing config 2 runs. */
        if (!((uintptr_t)a->A % 16 == 0 && a->lda % 4 == 0 &&
              (!a->trans_b || ((uintptr_t)a->B % 16 == 0 && a->ldb % 4 == 0))))
            return launch_pipe<128, 256, 8, 2, 4, 2, 4, 3, 1>(a, splits, s, err);
        if (config == 11) return launch_nat<128, 256, 2, 4, 2, 4, 3, 1>(a, splits, s, err);
        return launch_nat<128, 128, 2, 2, 2, 4, 4, 2>(a, splits, s, err);
    /* Lean main loop; it needs 32-bit element offsets, else the plain kernel with the same
     * tile runs (lean = false). */
    case 13: return lean_offsets_ok(a) ? launch_pipe<128, 256, 8, 2, 4, 2, 4, 3, 1, true>(a, splits, s, err)
                                 : launch_pipe<128, 256, 8, 2, 4, 2, 4, 3, 1>(a, splits, s, err);
    case 14: return lean_offsets_ok(a) ? launch_pipe<128, 256, 8, 2, 4, 2, 4, 4, 1, true>(a, splits, s, err)
                                 : launch_pipe<128, 256, 8, 2, 4, 2, 4, 4, 1>(a, splits, s, err);
    case 15: return lean_offsets_ok(a) ? launch_pipe<128, 256, 16, 2, 4, 2, 4, 3, 1, true>(a, splits, s, err)
                                 : launch_pipe<128, 256, 16, 2, 4, 2, 4, 3, 1>(a, splits, s, err);
    case 16: return lean_offsets_ok(a) ? launch_pipe<128, 128, 8, 2, 2, 2, 4, 4, 2, true>(a, splits, s, err)
                                 : launch_pipe<128, 128, 8, 2, 2, 2, 4, 4, 2>(a, splits, s, err);
    case 17: return lean_offsets_ok(a) ? launch_pipe<128, 128, 16, 2, 2, 2, 4, 3, 2, true>(a, splits, s, err)
                                 : launch_pipe<128, 128, 16, 2, 2, 2, 4, 3, 2>(a, splits, s, err);
    case 18: return lean_offsets_ok(a) ? launch_pipe<256, 128, 8, 4, 2, 2, 4, 3, 1, true>(a, splits, s, err)
                                 : launch_pipe<256, 128, 8, 4, 2, 2, 4, 3, 1>(a, splits, s, err);
    case 19: return lean_offsets_ok(a) ? launch_pipe<64, 128, 16, 2, 4, 1, 2, 4, 2, true>(a, splits, s, err)
                                 : launch_pipe<64, 128, 16, 2, 4, 1, 2, 4, 2>(a, splits, s, err);
    default:
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "sgemm rung 10: config %d not in 0..%d",
                              config, R10_N - 1);
    }
}

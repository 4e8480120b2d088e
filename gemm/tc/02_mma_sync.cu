/*
 * 02_mma_sync.cu — prefill rung 2 (and rung 4, split-K over a cluster: see below): mma.sync
 * m16n8k16 (BF16 in, FP32 accumulate) fed by ldmatrix from XOR-swizzled shared memory, filled
 * by a 4-stage cp.async pipeline; small CTA tiles so that the SmolLM2-135M shapes and Llama-3-8B
 * at M <= 512 give the H200's 132 SMs enough tiles.
 *
 * What changed from rung 1 (01_wmma.cu) and why:
 *  - Loads: 16-byte cp.async.cg (L2 only) into STAGES = 4 ring slots, issued STAGES - 1 k-tiles
 *    ahead, `cp.async.wait_group STAGES-2` + one barrier per k-tile (HOPPER_GEMM_NOTES §6): rung 1
 *    loaded synchronously and stalled the tensor cores on every k-step. Out-of-range rows / K
 *    columns use the src-size operand = 0, so the hardware writes zeros (ragged M and N, K % 8 ==
 * 0).
 *  - Fragments: ldmatrix.x4 straight into mma.sync registers (4 8x8 blocks per instruction; A
 *    blocks (r0-7,k0-7), (r8-15,k0-7), (r0-7,k8-15), (r8-15,k8-15); W rows are already the "col"
 *    operand, so no .trans, and one x4 feeds two n8 tiles). Rows are 64 bytes (BK = 32 BF16),
 *    16-byte chunk c of row r lives at chunk c ^ ((r >> 1) & 3): the 8 rows one ldmatrix phase
 *    reads then cover the 8 16-byte bank groups once (conflict-free; §6), without rung 1's padding.
 *  - Tiles: one of three configs, picked per call for tile count (below), instead of 128 x 128:
 *      cfg 0: 64 x 64 x 32, 4 warps (2 x 2), warp tile 32 x 32, 32 KB shared memory
 *      cfg 1: 128 x 64 x 32, 4 warps (2 x 2), warp tile 64 x 32, 48 KB
 *      cfg 2: 128 x 128 x 32, 8 warps (2 x 4), warp tile 64 x 32, 64 KB
 *    Auto pick (forced-config sweep, gemm/tc/README.md): cfg 0 whenever K <= 1536 (short
 *    k-loops: more, smaller CTAs per SM hide the load latency best; cfg 0 was fastest on every
 *    SmolLM2 shape up to M = 2048); for longer K the largest config with >= 1.5 waves of tiles
 *    (bigger tiles read X and W fewer times once the GPU is full), else cfg 0.
 *    Compared with rung 3 (wgmma, 128 x 256 tiles) this is what matters on small problems:
 *    M = 128, N = 960 is 4 wgmma tiles but 30 tiles of cfg 0.
 *  - Epilogue straight from the accumulator registers: a thread holds the pairs (row g, cols 2t,
 *    2t + 1) and (row g + 8, same cols) of each 16 x 8 block, which is what
 *    tinfer_bf16_epi_store2 (bf16_epi.cuh, shared with the other rungs) stores. SwiGLU: a warp's
 *    32 shared-memory W rows are 16 gate rows j.. and the 16 up rows F + j.., so accumulator block
 *    ni and ni + 2 are gate and up of the same outputs in the same thread; no shared-memory
 *    hand-over as in rung 1.
 * Rung 04 (same kernel, template CS = 2, 4, 8; TINFER_GEMM_BF16_MMA_SPLITK): split-K for shapes
 * whose tiles cannot fill the SMs, with no workspace (the API allocates nothing) and no atomics
 * (deterministic). The CS blocks of a thread-block cluster (grid x = tile column * CS + rank)
 * compute the same output tile over CS contiguous shares of the k-tiles; after the main loop each
 * block stores its FP32 partial tile into its own drained ring (row stride BN + MS_PAD), cluster
 * barrier, then block `rank` sums rows [rank * BM / CS, (rank + 1) * BM / CS) over the CS
 * partials in rank order through DSMEM (cluster.map_shared_rank, float4 reads) and runs the fused
 * epilogue (bf16_epi.cuh) on its slice; a second cluster barrier keeps every block's shared
 * memory alive until its peers have read it. Same pattern as decode rung 06 (05_cp_async.cu).
 * Auto pick: cfg as above, except 128 x 64 for long K and M > 64 (one block row streams each W
 * tile); CS the largest of 8/4/2 with tiles * CS <= 4 64x64-units per SM and >= 2 k-tiles per
 * block (bf16.h, TINFER_GEMM_BF16_SPLITK_*). Registers: 72 (cfg 0), 160 (cfg 1), 124 (cfg 2),
 * no spills. Why not a workspace + second pass: that needs a caller-provided buffer (API change)
 * or atomics (non-deterministic, and Y must be zeroed first, another launch); the cluster keeps
 * the partials on chip and adds ~1-2 us per call (two cluster barriers and BM x BN x 4 bytes of
 * DSMEM per block).
 * Measured, run 1 of rung 04 (H200, 2026-12-02 15:40 UTC, `tinfer-bench-gemm-bf16 splitk`, median,
 * cuBLAS / cublasLt in the same run; us): Llama-3-8B QKV M = 32 / 64: 24.3 / 25.6 (rung 02 42.8 /
 * 44.0, cuBLAS 17.2); QKV M = 128: 35.2 (wgmma 45.7, cuBLAS 17.9); down M = 32 / 64: 54.8 / 57.5
 * (rung 02 125 / 128, cuBLAS 33.8 / 36.9); down M = 128 with 128 x 64 tiles, CS 4: 71.3 (64 x 64
 * tiles: 84-91; rung 02 128, cuBLAS 38.0). At M = 512 (64-96 wgmma tiles) the split does not
 * help (QKV 83-111 vs wgmma 48): rung 03 stays. SmolLM2 K = 576 shapes at M = 32..512: 5.5-8.8 us
 * with CS 4-8 (rung 02 9.4-10.5; cuBLAS 8.3-21, cublasLt 8.3-16.4).
 * Run 2 (same day 15:50 UTC, the committed auto rule, dispatcher "auto" vs the better of cuBLAS /
 * cublasLt): SmolLM2 down M = 128 7.6 us (rung 02 17.5; 123%), M = 512 11.2 (17.9; 90%); QKV /
 * O M = 128 6.5 / 6.2 (153% / 165%), M = 512 9.0 / 7.9 (110% / 124%); Llama-3-8B QKV M = 32 /
 * 64 / 128 24.8 / 26.1 / 34.6 (70 / 66 / 51%), down 54.9 / 61.8 / 72.4 (62 / 60 / 53%; rung 02
 * or wgmma before: 124 / 127 / 137). Not won: every SmolLM2 shape at M = 2048 (wgmma / rung 02,
 * 39-70%), gate/up M = 512 (68%), the LM head.
 * Constraints: K % 8 == 0, ldx % 8 == 0, ldw % 8 == 0, X/W 16-byte aligned (bf16.h); sm_80+
 * (cp.async, ldmatrix, bf16 mma), rung 04 sm_90 (clusters); the portable PTX target below sm_80
 * gets a trap, and rung 04 below sm_90 too (its launcher refuses there: UNSUPPORTED, or rung 02
 * for the auto split).
 * Measured (H200, 2026-12-02 14:36 UTC, `tinfer-bench-gemm-bf16 prefill`, median, cuBLAS in the
 * same run; gemm/tc/README.md "Rungs 01 and 02"). Registers (ptxas, sm_90a):
 * cfg 0 80, cfg 1 163, cfg 2 128, no spills.
 *  - Where it is dispatched (wgmma tiles < SMs / 4 and short K or M <= 64), time vs wgmma before
 *    vs cuBLAS: SmolLM2 QKV M = 128 10.2 us vs 18.3 vs 12.0 (117% of cuBLAS); O M = 512 10.3 vs
 *    13.7 vs 12.3 (119%); gate/up M = 128 10.6 vs 13.6 vs 12.2 (115%); down M = 512 18.2 vs 22.5
 *    vs 11.7 (64%); Llama-3-8B QKV M = 64 43.9 vs 52.6 vs 17.4 (40%); down M = 64 128.7 vs 144.8
 *    vs 36.5 (28%). The 9-k-block SmolLM2 problems now beat cuBLAS; the fused residual epilogue
 *    costs 1.5 us instead of the wgmma kernel's ~23.
 *  - Where it is not: large problems run at ~300 TF/s at best (Llama gate/up M = 2048: 1600 us,
 *    38% of cuBLAS, vs wgmma 656 us): mma.sync from one warp per 64 x 32 tile, one CTA round of
 *    ldmatrix per k16, is well under the wgmma ceiling. Long-K, low-tile shapes (Llama down
 *    M = 32..128: 126-129 us vs cuBLAS 34-38) stay latency-bound: 128 CTAs of 4 warps each walk
 *    448 k-tiles in series; that is where split-K (not done) is needed.
 * Programmatic dependent launch (rungs 02 / 04 on sm_90, by rung 03's rule: K <= 2048 or
 * --gemm-wgmma-pdl): the blocks wait (griddepcontrol.wait) before any global access and let
 * the next kernel launch at once. H200, session 7 run 5, the dispatcher on SmolLM2 shapes, PDL off
 * -> on, graph / stream timing, us: QKV M = 64 4.40 -> 4.05 / 5.89 -> 4.69, M = 128 5.36 -> 5.02 /
 * 6.89 -> 5.62; O M = 64 4.18 -> 3.83 / 5.43 -> 4.48; gate/up M = 64 6.03 -> 5.58 / 7.34 -> 5.83;
 * down M = 64 5.25 -> 4.92 / 6.76 -> 5.47, M = 128 6.28 -> 5.84 / 7.85 -> 6.49.
 * Early weight loads (args.w_static, PDL on; --gemm-early-w 0 turns them off): the W part of
 * the first MS_STAGES - 1 stages is issued before griddepcontrol.wait and joins the first
 * cp.async group; X and everything else wait. These blocks are small enough to sit on an SM next
 * to the previous kernel's, so the weight stream really starts early. H200 session 8 runs 1-2,
 * off -> on, stream / graph us: SmolLM2 QKV M = 64 5.63 -> 5.13 / 4.46 -> 4.37, O M = 128 5.68 ->
 * 5.33 / 4.96 -> 4.56, down M = 128 7.29 -> 6.80 / 6.09 -> 5.97, O M = 64 4.77 -> 4.83 / 4.21 ->
 * 4.06; down M = 64 5.85 -> 6.02 / 5.28 -> 5.31 the one loss. The same in the TMA rungs 03 / 05
 * (one CTA of ~200 KB per SM, which no CTA of the next kernel can share) was slower
 * (gemm/tc/README.md, "PDL and early loads") and is not built.
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/ptx.cuh"
#include "gemm/tc/gemm_bf16_tc_internal.h"

#include <cooperative_groups.h>
#include <string.h>

#define MS_BK 32    /* BF16 per shared row: 64 bytes = four 16-byte chunks */
#define MS_STAGES 4 /* ring depth; wait_group MS_STAGES - 2 leaves 2 k-tiles in flight */
/* Up to this K the 64 x 64 config was the fastest of the three at every SmolLM2 shape and
 * M = 32..2048 (K = 576, 1536; even at 1536 tiles), measured 2026-12-02 (gemm/tc/README.md). */
#define MS_SHORT_K 1536
/* Split-K partial tile row padding (floats): row stride BN + 8 puts the 8 rows g = 0..7 that one
 * accumulator float2 store touches at banks 8g mod 32, so a warp's 256 bytes go in the minimum two
 * wavefronts (stride BN alone puts all 8 rows on the same banks: 8-way conflict); 16-byte row
 * alignment for the float4 reduction reads is kept. */
#define MS_PAD 8

template <int BM, int BN, int WARPS_M, int WARPS_N> struct ms_cfg {
    static constexpr int threads = 32 * WARPS_M * WARPS_N;
    static constexpr int bm = BM, bn = BN, warps_n = WARPS_N;
    static constexpr int wtm = BM / WARPS_M, wtn = BN / WARPS_N; /* warp tile */
    static constexpr int mi = wtm / 16, ni = wtn / 8;            /* m16 x n8 blocks per warp */
    static constexpr int stage_bytes = (BM + BN) * MS_BK * 2;
    static constexpr int smem_bytes = MS_STAGES * stage_bytes;
    /* split-K (rung 04): the FP32 partial tile reuses the ring; rows padded by MS_PAD floats */
    static constexpr int part_ld = BN + MS_PAD;
    static constexpr int part_bytes = BM * part_ld * 4;
    static constexpr int split_smem_bytes = smem_bytes > part_bytes ? smem_bytes : part_bytes;
    static_assert(ni % 4 == 0,
                  "ldmatrix.x4 feeds n8 pairs; SwiGLU splits ni in gate/up halves of pairs");
    static_assert((BM * 4) % threads == 0 && (BN * 4) % threads == 0, "whole chunks per thread");
};

#if __CUDA_ARCH__ >= 800
static __device__ __forceinline__ uint32_t ms_smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
/* byte offset of 16-byte chunk c of row r in a 64-byte-row tile, XOR-swizzled (see header) */
static __device__ __forceinline__ uint32_t ms_swz(int r, int c) {
    return (uint32_t)(r * 64 + ((c ^ ((r >> 1) & 3)) << 4));
}
static __device__ __forceinline__ void ms_cp16(uint32_t dst, const void *src, bool ok) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(ok ? 16 : 0)
                 : "memory");
}
static __device__ __forceinline__ void ms_ldsm4(uint32_t addr, uint32_t &r0, uint32_t &r1,
                                                uint32_t &r2, uint32_t &r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}
static __device__ __forceinline__ void ms_mma(float *c, const uint32_t *a, uint32_t b0,
                                              uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

/* Outputs (m, col .. col + 3) from accumulators g (and u, SwiGLU), col even; the ragged end of
 * the row (col + 3 >= nout) stores what is in range. */
static __device__ __forceinline__ void ms_store4(const tinfer_gemm_bf16_args &a, bool vec, int64_t m,
                                                 int64_t col, int64_t nout, float4 g, float4 u) {
    if (col + 3 < nout) {
        tinfer_bf16_epi_store2(a, vec, m, col, g.x, u.x, g.y, u.y);
        tinfer_bf16_epi_store2(a, vec, m, col + 2, g.z, u.z, g.w, u.w);
        return;
    }
    const float gs[4] = {g.x, g.y, g.z, g.w}, us[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int e = 0; e < 4; e++)
        if (col + e < nout) tinfer_bf16_epi_store(a, m, col + e, gs[e], us[e]);
}

/* Split-K finish (rung 04), after the main loop of every block of the cluster: each block leaves
 * its FP32 partial tile in its own shared memory (the drained ring), the cluster barrier
 * publishes it, block `rank` sums rows [rank * BM / CS, (rank + 1) * BM / CS) of the CS partials
 * in rank order (deterministic) through DSMEM and runs the fused epilogue on them; a second
 * cluster barrier keeps every block's shared memory alive until its peers have read it.
 * Partial layout: row = tile row, column = the tile's W-row slot (for SwiGLU warp column w holds
 * gate rows in slots w * wtn + [0, wtn/2) and the matching up rows in the next wtn/2 slots). */
template <typename C, int CS>
static __device__ __forceinline__ void ms_split_reduce(const tinfer_gemm_bf16_args &a, bool vec,
                                                       float (&acc)[C::mi][C::ni][4],
                                                       uint8_t *smem, int rank, int64_t m0,
                                                       int64_t jb) {
#if __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    constexpr int BM = C::bm, BN = C::bn, LD = C::part_ld, T = C::threads;
    constexpr int RS = BM / CS; /* rows this block finishes */
    static_assert(BM % CS == 0, "row slices");
    float *part = (float *)smem;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / C::warps_n, wn = warp % C::warps_n, g = lane / 4, t = lane % 4;
    __syncthreads(); /* every warp is done with the ring before it is overwritten */
#pragma unroll
    for (int i = 0; i < C::mi; i++)
#pragma unroll
        for (int j = 0; j < C::ni; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = wm * C::wtm + i * 16 + g + 8 * h, c = wn * C::wtn + j * 8 + 2 * t;
                *(float2 *)&part[r * LD + c] = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
            }
    cg::cluster_group cl = cg::this_cluster();
    cl.sync(); /* all partials written (cluster barrier: release / acquire) */
    const float *peer[CS];
#pragma unroll
    for (int p = 0; p < CS; p++)
        peer[p] = cl.map_shared_rank(part, p);
    const int64_t nout = tinfer_gemm_bf16_nout(a);
    if (a.swiglu) {
        /* a quad of 4 gate slots and the 4 up slots wtn/2 further on -> 4 outputs */
        constexpr int H = C::wtn / 2, QPR = BN / 8; /* gate quads per row */
        for (int q = tid; q < RS * QPR; q += T) {
            const int rl = rank * RS + q / QPR, e = q % QPR;
            const int w = 4 * e / H, qq = 4 * e % H;
            const int gs = w * C::wtn + qq, us = gs + H;
            const int64_t m = m0 + rl, col = jb + w * H + qq;
            if (m >= a.M || col >= nout) continue;
            float4 gv = make_float4(0.f, 0.f, 0.f, 0.f), uv = gv;
#pragma unroll
            for (int p = 0; p < CS; p++) {
                const float4 x = *(const float4 *)&peer[p][rl * LD + gs];
                const float4 y = *(const float4 *)&peer[p][rl * LD + us];
                gv.x += x.x; gv.y += x.y; gv.z += x.z; gv.w += x.w;
                uv.x += y.x; uv.y += y.y; uv.z += y.z; uv.w += y.w;
            }
            ms_store4(a, vec, m, col, nout, gv, uv);
        }
    } else {
        constexpr int QPR = BN / 4;
        for (int q = tid; q < RS * QPR; q += T) {
            const int rl = rank * RS + q / QPR, c = 4 * (q % QPR);
            const int64_t m = m0 + rl, col = jb + c;
            if (m >= a.M || col >= nout) continue;
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
            for (int p = 0; p < CS; p++) {
                const float4 x = *(const float4 *)&peer[p][rl * LD + c];
                v.x += x.x; v.y += x.y; v.z += x.z; v.w += x.w;
            }
            ms_store4(a, vec, m, col, nout, v, make_float4(0.f, 0.f, 0.f, 0.f));
        }
    }
    cl.sync(); /* peers may still be reading this block's partial */
#else
    (void)a; (void)vec; (void)acc; (void)smem; (void)rank; (void)m0; (void)jb;
    __trap();
#endif
}

/* CS = 1: rung 02. CS = 2, 4, 8: rung 04, the CS blocks of a cluster (grid x = tile column * CS
 * + rank) split the k-tiles of one output tile; see the split-K section of the header. */
template <int BM, int BN, int WARPS_M, int WARPS_N, int CS>
static __global__ void __launch_bounds__(32 * WARPS_M * WARPS_N)
    mma_sync_kernel(tinfer_gemm_bf16_args a, int32_t vec, int32_t early_w) {
#if __CUDA_ARCH__ >= 800
    typedef ms_cfg<BM, BN, WARPS_M, WARPS_N> C;
    constexpr int T = C::threads, MI = C::mi, NI = C::ni;
    constexpr int NA = BM * 4 / T, NB = BN * 4 / T; /* 16-byte chunks per thread per stage */
    extern __shared__ __align__(128) uint8_t ms_smem[];
    const uint32_t sbase = ms_smem_u32(ms_smem);
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int64_t F = a.N / 2, nout = a.swiglu ? F : a.N;
    const int64_t m0 = (int64_t)blockIdx.y * BM;
    const int rank = CS > 1 ? (int)(blockIdx.x % CS) : 0;
    const int64_t jb = (int64_t)(blockIdx.x / CS) * (a.swiglu ? BN / 2 : BN); /* first output column */
    const int64_t K = a.K;
    /* Programmatic dependent launch (sm_90, where the launcher asks for it: the rule and switch of
     * rung 03, tinfer_gemm_bf16_wgmma_pdl): nothing global is read or written before the wait, so
     * the block's launch overlaps the previous kernel; the next kernel may launch at once (its
     * blocks take only the slots this grid leaves, and wait in turn). No-ops otherwise.
     * early_w (args.w_static with PDL): the W part of the first MS_STAGES - 1 stages is issued
     * before the wait (below); it joins the first cp.async group, so the group accounting of the
     * main loop is unchanged. */
    if (!early_w) tdec::pdl_wait();
    tdec::pdl_launch_dependents();

    /* Per-thread source rows, fixed over the k-loop. T % 4 == 0, so chunk column = tid % 4. */
    const int cc = tid % 4;
    const uint16_t *asrc[NA], *bsrc[NB];
    bool aok[NA], bok[NB];
#pragma unroll
    for (int i = 0; i < NA; i++) {
        const int r = (tid + i * T) / 4;
        const int64_t m = m0 + r;
        aok[i] = m < a.M;
        asrc[i] = aok[i] ? a.X + m * a.ldx + cc * 8 : a.X;
    }
#pragma unroll
    for (int i = 0; i < NB; i++) {
        const int r = (tid + i * T) / 4;
        int64_t wrow;
        if (a.swiglu) {
            /* warp column w's 32 rows: 16 gate rows then the matching 16 up rows (header) */
            const int w = r / C::wtn, q = r % C::wtn, h = C::wtn / 2;
            const int64_t j = jb + (int64_t)w * h + (q < h ? q : q - h);
            bok[i] = j < F;
            wrow = q < h ? j : F + j;
        } else {
            wrow = jb + r;
            bok[i] = wrow < a.N;
        }
        bsrc[i] = bok[i] ? a.W + wrow * a.ldw + cc * 8 : a.W;
    }
    const int64_t ktiles_all = (K + MS_BK - 1) / MS_BK;
    /* this block's k-tiles [kt0, kt0 + ktiles): an even share of the CS-way split (may be 0) */
    const int64_t kt0 = ktiles_all * rank / CS, ktiles = ktiles_all * (rank + 1) / CS - kt0;
    auto load_stage = [&](int64_t kt, bool with_x, bool with_w) { /* kt counts from kt0 */
        const int slot = (int)(kt % MS_STAGES);
        const uint32_t sa = sbase + slot * C::stage_bytes, sb = sa + BM * MS_BK * 2;
        const int64_t k = (kt0 + kt) * MS_BK;
        const bool kok = k + cc * 8 < K;
#pragma unroll
        for (int i = 0; i < NA; i++) {
            if (!with_x) break;
            const int r = (tid + i * T) / 4;
            const bool ok = aok[i] && kok;
            ms_cp16(sa + ms_swz(r, cc), ok ? (const void *)(asrc[i] + k) : (const void *)a.X, ok);
        }
#pragma unroll
        for (int i = 0; i < NB; i++) {
            if (!with_w) break;
            const int r = (tid + i * T) / 4;
            const bool ok = bok[i] && kok;
            ms_cp16(sb + ms_swz(r, cc), ok ? (const void *)(bsrc[i] + k) : (const void *)a.W, ok);
        }
    };

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0.f;

    if (early_w) {
#pragma unroll
        for (int s = 0; s < MS_STAGES - 1; s++)
            if (s < ktiles) load_stage(s, false, true);
        tdec::pdl_wait();
    }
#pragma unroll
    for (int s = 0; s < MS_STAGES - 1; s++) {
        if (s < ktiles) load_stage(s, true, !early_w);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
    /* ldmatrix lane roles: A rows lane % 16, k-half lane / 16; B rows (lane % 8) + 8 (lane / 16),
     * k-half (lane / 8) % 2 */
    const int a_row = wm * C::wtm + lane % 16, a_kc = lane / 16;
    const int b_row = wn * C::wtn + lane % 8 + 8 * (lane / 16), b_kc = (lane / 8) % 2;
    for (int64_t kt = 0; kt < ktiles; kt++) {
        /* k-tile kt has landed once at most STAGES - 2 younger groups are pending; the barrier
         * also tells every warp that slot (kt - 1) % STAGES, refilled below, has been read. */
        asm volatile("cp.async.wait_group %0;\n" ::"n"(MS_STAGES - 2) : "memory");
        __syncthreads();
        if (kt + MS_STAGES - 1 < ktiles) load_stage(kt + MS_STAGES - 1, true, true);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
        const int slot = (int)(kt % MS_STAGES);
        const uint32_t sa = sbase + slot * C::stage_bytes, sb = sa + BM * MS_BK * 2;
#pragma unroll
        for (int ks = 0; ks < MS_BK / 16; ks++) {
            uint32_t af[MI][4], bfr[NI][2];
#pragma unroll
            for (int i = 0; i < MI; i++)
                ms_ldsm4(sa + ms_swz(a_row + i * 16, ks * 2 + a_kc), af[i][0], af[i][1], af[i][2],
                         af[i][3]);
#pragma unroll
            for (int p = 0; p < NI / 2; p++)
                ms_ldsm4(sb + ms_swz(b_row + p * 16, ks * 2 + b_kc), bfr[2 * p][0], bfr[2 * p][1],
                         bfr[2 * p + 1][0], bfr[2 * p + 1][1]);
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NI; j++)
                    ms_mma(acc[i][j], af[i], bfr[j][0], bfr[j][1]);
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    if (CS > 1) {
        ms_split_reduce<C, CS>(a, vec != 0, acc, ms_smem, rank, m0, jb);
        return;
    }

    /* Epilogue from registers: block (i, j) element pair h holds row g + 8h, columns 2t, 2t + 1. */
    const int g = lane / 4, t = lane % 4;
    const bool v = vec != 0;
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t m = m0 + wm * C::wtm + i * 16 + g + 8 * h;
            if (m >= a.M) continue;
            if (a.swiglu) {
#pragma unroll
                for (int j = 0; j < NI / 2; j++) {
                    const int64_t col = jb + wn * (C::wtn / 2) + j * 8 + 2 * t;
                    const float *gv = &acc[i][j][2 * h], *uv = &acc[i][j + NI / 2][2 * h];
                    if (col + 1 < nout)
                        tinfer_bf16_epi_store2(a, v, m, col, gv[0], uv[0], gv[1], uv[1]);
                    else if (col < nout)
                        tinfer_bf16_epi_store(a, m, col, gv[0], uv[0]);
                }
            } else {
#pragma unroll
                for (int j = 0; j < NI; j++) {
                    const int64_t col = jb + wn * C::wtn + j * 8 + 2 * t;
                    const float *cv = &acc[i][j][2 * h];
                    if (col + 1 < nout)
                        tinfer_bf16_epi_store2(a, v, m, col, cv[0], 0.f, cv[1], 0.f);
                    else if (col < nout)
                        tinfer_bf16_epi_store(a, m, col, cv[0], 0.f);
                }
            }
        }
#else
    (void)a;
    (void)vec;
    __trap();
#endif
}

typedef ms_cfg<64, 64, 2, 2> ms_cfg0;
typedef ms_cfg<128, 64, 2, 2> ms_cfg1;
typedef ms_cfg<128, 128, 2, 4> ms_cfg2;
static const int ms_bm[3] = {64, 128, 128}, ms_bn[3] = {64, 64, 128};

/* Tiles of config c for this call (SwiGLU: a tile covers BN/2 outputs). */
static int64_t ms_tiles(int c, int64_t M, int64_t nout, int swiglu) {
    const int64_t bn = swiglu ? ms_bn[c] / 2 : ms_bn[c];
    return ((M + ms_bm[c] - 1) / ms_bm[c]) * ((nout + bn - 1) / bn);
}

/* Whether the > 48 KB dynamic shared memory attributes were set, per device (16 at most). */
static int ms_dev_attr[16];

/* One config, one split: grid (tile columns * CS, tile rows); CS > 1 launches clusters of CS
 * blocks along x; pdl: programmatic stream serialization (sm_90 only). Shared memory: the ring,
 * or the partial tile when that is larger (cfg 2). */
template <typename C, int CS>
static tinfer_status ms_launch(const tinfer_gemm_bf16_args *a, int64_t gm, int64_t gn, int32_t vec, bool pdl,
                               cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    const int smem = CS > 1 ? C::split_smem_bytes : C::smem_bytes;
    cudaLaunchConfig_t lc;
    cudaLaunchAttribute attr[2];
    tinfer_tc_launch_cfg(&lc, attr, dim3((unsigned)(gn * CS), (unsigned)gm), C::threads, (size_t)smem, s, CS, pdl);
    TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, mma_sync_kernel<C::bm, C::bn, C::bm / C::wtm, C::warps_n, CS>, *a, vec,
                                            (int32_t)tinfer_gemm_bf16_early_w(a, pdl)));
    TINFER_CUDA_LAUNCH_CHECK(err, "mma_sync_kernel");
cleanup:
    return status;
}

template <typename C>
static tinfer_status ms_launch_cs(const tinfer_gemm_bf16_args *a, int cs, int64_t gm, int64_t gn,
                                  int32_t vec, bool pdl, cudaStream_t s, tinfer_err *err) {
    switch (cs) {
    case 1: return ms_launch<C, 1>(a, gm, gn, vec, pdl, s, err);
    case 2: return ms_launch<C, 2>(a, gm, gn, vec, pdl, s, err);
    case 4: return ms_launch<C, 4>(a, gm, gn, vec, pdl, s, err);
    default: return ms_launch<C, 8>(a, gm, gn, vec, pdl, s, err);
    }
}

/* cfg 2's 64 KB ring and its 68 KB split partial tile are over the 48 KB default. */
template <typename C, int CS> static cudaError_t ms_smem_attr(void) {
    return cudaFuncSetAttribute(mma_sync_kernel<C::bm, C::bn, C::bm / C::wtm, C::warps_n, CS>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                CS > 1 ? C::split_smem_bytes : C::smem_bytes);
}

/* The split-K factor for rung 04's auto pick (bf16.h, TINFER_GEMM_BF16_SPLITK_*): the largest of
 * 8, 4, 2 that keeps tiles * CS, counted in 64 x 64 tile units, within CTAS_PER_SM per SM and
 * every block at least MIN_KTILES k-tiles; 1 (no split) if none. */
static int ms_pick_split(int cfg, int64_t tiles, int64_t K, int n_sm) {
    const int64_t kt = (K + MS_BK - 1) / MS_BK, units = (ms_bm[cfg] / 64) * (ms_bn[cfg] / 64);
    for (int cs = 8; cs >= 2; cs /= 2)
        if (tiles * cs * units <= (int64_t)TINFER_GEMM_BF16_SPLITK_CTAS_PER_SM * n_sm &&
            kt >= (int64_t)cs * TINFER_GEMM_BF16_SPLITK_MIN_KTILES)
            return cs;
    return 1;
}

tinfer_status tinfer_gemm_bf16_mma_split(const tinfer_gemm_bf16_args *a, int32_t cfg, int32_t cs,
                                         cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    tinfer_cuda_facts f;
    if ((status = tinfer_cuda_current_facts(&f, err)) != TINFER_OK) return status;
    const int dev = f.device, n_sm = f.n_sm, major = f.cc_major;
    if (cfg < TINFER_GEMM_BF16_MMA_CFG_AUTO || cfg > 2)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "gemm_bf16 mma_sync: unknown tile config %d", (int)cfg);
    if (cs != TINFER_GEMM_BF16_MMA_SPLIT_AUTO && cs != 1 && cs != 2 && cs != 4 && cs != 8)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "gemm_bf16 mma_sync: split-K factor %d (1, 2, 4 or 8)", (int)cs);
    if (cs != 1 && major < 9) {
        if (cs != TINFER_GEMM_BF16_MMA_SPLIT_AUTO)
            return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                  "gemm_bf16 mma_sync split-K: thread-block clusters need sm_90 "
                                  "(device is sm_%d*)",
                                  major);
        cs = 1; /* auto off Hopper: rung 02 */
    }
    {
        const int64_t nout = tinfer_gemm_bf16_nout(*a);
        const bool cfg0_auto = cfg == TINFER_GEMM_BF16_MMA_CFG_AUTO;
        if (cfg == TINFER_GEMM_BF16_MMA_CFG_AUTO) {
            /* Tile pick (header): cfg 0 for K <= MS_SHORT_K; otherwise the largest config with
             * at least 1.5 waves of tiles (2 * tiles >= 3 * SMs), else cfg 0. */
            cfg = 0;
            if (a->K > MS_SHORT_K)
                for (int c = 2; c >= 1; c--)
                    if (2 * ms_tiles(c, a->M, nout, a->swiglu) >= 3 * (int64_t)n_sm) {
                        cfg = c;
                        break;
                    }
        }
        if (cs == TINFER_GEMM_BF16_MMA_SPLIT_AUTO) {
            /* Long K with more than one 64-row tile: 128 x 64 tiles, so that each W tile is
             * streamed by one block row (Llama-3-8B down M = 128: 71 us vs 84-91 with 64 x 64). */
            if (cfg0_auto && cfg == 0 && a->K > MS_SHORT_K && a->M > 64) cfg = 1;
            cs = ms_pick_split(cfg, ms_tiles(cfg, a->M, nout, a->swiglu), a->K, n_sm);
        }
        const int64_t bn = a->swiglu ? ms_bn[cfg] / 2 : ms_bn[cfg];
        const int64_t gm = (a->M + ms_bm[cfg] - 1) / ms_bm[cfg], gn = (nout + bn - 1) / bn;
        if (gm > 65535 || gn * cs > 0x7fffffff)
            return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                                  "gemm_bf16 mma_sync: M=%lld N=%lld too large", (long long)a->M,
                                  (long long)a->N);
        if (dev >= 0 && dev < 16 && !ms_dev_attr[dev]) {
            TINFER_CUDA_TRY(err, (ms_smem_attr<ms_cfg2, 1>()));
            if (major >= 9) {
                TINFER_CUDA_TRY(err, (ms_smem_attr<ms_cfg2, 2>()));
                TINFER_CUDA_TRY(err, (ms_smem_attr<ms_cfg2, 4>()));
                TINFER_CUDA_TRY(err, (ms_smem_attr<ms_cfg2, 8>()));
            }
            ms_dev_attr[dev] = 1;
        }
        const int32_t vec = tinfer_bf16_epi_vec_ok(*a) ? 1 : 0;
        const bool pdl = major >= 9 && tinfer_gemm_bf16_wgmma_pdl(a->K); /* griddepcontrol is sm_90 */
        switch (cfg) {
        case 0: return ms_launch_cs<ms_cfg0>(a, cs, gm, gn, vec, pdl, s, err);
        case 1: return ms_launch_cs<ms_cfg1>(a, cs, gm, gn, vec, pdl, s, err);
        default: return ms_launch_cs<ms_cfg2>(a, cs, gm, gn, vec, pdl, s, err);
        }
    }
cleanup:
    return status;
}

tinfer_status tinfer_gemm_bf16_mma(const tinfer_gemm_bf16_args *a, int32_t cfg, cudaStream_t s,
                                   tinfer_err *err) {
    return tinfer_gemm_bf16_mma_split(a, cfg, 1, s, err);
}

/*
 * 05_cp_async.cu — decode rung 5 (production decode path): rung 04's split-K + mma.sync, with
 * the weight tile staged through shared memory by a cp.async pipeline so that every warp-wide
 * load is 512 contiguous bytes of one row.
 *
 * Change from 04: 04's lanes load W straight into the mma fragment layout, so one warp load
 * instruction touches 8 rows x 64 B; measured 2.1-2.4 TB/s on Llama-3-8B shapes against 3.3 for
 * rung 03's row-contiguous loads (first H200 run, gemm/decode/README.md). Here a block of 256
 * threads owns 16 weight rows (16 output columns; with SwiGLU 8 gate rows and their 8 up rows, so
 * 8 outputs: see "SwiGLU" below) and streams K in tiles of 256: each
 * stage is 16 rows x 512 B, loaded with cp.async.cg (16 B, L1 bypass, zero-fill past K and past N),
 * warp w loading rows w and w + 8 (whole 512 B rows). G05_STAGES = 6 stages keep 5 x 8 KB in
 * flight per block (~80 KB per SM at 2 blocks/SM; HOPPER_GEMM_NOTES §7 asks for >= 32 KB).
 * Compute: warp w takes the w-th 32-wide K chunk of every stage and runs rung 04's permuted-k
 * mma (lane (g, t) reads 16 B of rows g and g + 8 at granule 4w + t), so M <= 16 tokens share
 * each weight read. Shared layout: granule q of row r sits at q ^ (r & 7) (XOR within 128 B),
 * which makes those 16-byte reads conflict-free (8 rows hit 8 different bank groups).
 * The 8 warps' partial sums meet in shared memory; one thread per output runs the epilogue.
 * Rung 06 (same kernel, KS = 2; TINFER_GEMV_BF16_CLUSTER): a cluster of two blocks splits the
 * K tiles of the same 16 columns, so N = 4096 gives 512 blocks instead of 256 (a better spread
 * over 132 SMs than 2 vs 1 blocks per SM); block 1's partials reach block 0 through distributed
 * shared memory (cluster.map_shared_rank), no workspace, no atomics. sm_90 only.
 * Constraints: K % 8 == 0, 16-byte aligned rows (bf16.h). Tokens: passes of 16 (grid.y).
 * Measured (H200, 2026-12-02, run 4; % of the 4248 GB/s device-to-device copy): M=1: QKV
 * 6144x4096 16.8 us (71%, cuBLAS 17.0), gate/up 28672x4096 61.3 us (90.3%, cuBLAS 61.6), down
 * 4096x14336 35.0 us (79%); M=8: 19.2 / 77.5 / 43.2 us (+14% / +26% / +24% over M=1).
 * Rung 06: down 32.2 us at M=1 (86.0%, cuBLAS 31.7), 36.3 us at M=8; it loses at K = 4096
 * (QKV 22.9, gate/up 76.3 us), so dispatch takes it only for K >= 8192.
 * Tried and reverted (run 3): prefetching X one stage ahead plus the .L2::256B hint made
 * down 45.6 us (+31%); which of the two did it was not separated.
 * X staging: the pass's 8 * NT token rows of each k-tile are copied by
 * cp.async into the stage together with W (same commit group, same XOR layout, so a lane's X
 * granule has the index of its W granule); the mma reads X from shared memory instead of an
 * __ldg issued right in front of it. Rung 07 showed that X in shared memory removes the growth
 * with M (+0-6% at M = 8 against +13-27%). Cost: 24 KB (M <= 8) or 48 KB (M 9-16) more shared
 * memory per block, so fewer blocks per SM.
 * Measured with X staged at every M (H200, 2026-12-02 17:21 UTC, `tinfer-bench-gemm-bf16 model`,
 * stream timing; us at M = 1 / 2 / 8 / 16): QKV (05) 18.9 / 19.3 / 19.5 / 19.4, gate/up (05)
 * 66.8 / 66.8 / 68.2 / 69.8, down (06) 36.5 / 35.8 / 37.2 / 39.4: flat in M (+2-3% at M = 8),
 * and against the unstaged kernel (previous runs: 17.2 / 17.9 / 19.4 / 21.6, 61.3 / 68.4 / 77.7 /
 * 81.2, 32.4 / 33.3 / 36.2 / 39.9) equal or faster from M = 2 on (gate/up M = 8: -12%), but
 * 9-13% slower at M = 1 (one token row in eight staged rows, and fewer blocks per SM). So the
 * launcher then staged X from M = 2 on and ran the unstaged kernel at M = 1 (superseded by the
 * next paragraph: now X is staged from M = 1).
 * Shared memory and occupancy (2026-12-02, second change): the X-staged kernel held 8 * NT token
 * rows per stage whatever M was, plus the 8 KB static reduction buffer: 6 x (8 + 4) KB + 8 KB =
 * 80 KB per block at M <= 8, so 2 blocks per SM (228 KB per SM, 1 KB reserved per block) against
 * the unstaged kernel's 56 KB and 4 blocks. Now (a) the reduction buffer lives in the stage area
 * (free once the last stage is consumed: cp.async wait 0 + barrier), (b) only the token rows
 * that exist are staged (xr = min(M, 8 * NT) rows of 512 B per stage; rows >= xr feed the mma
 * zeros from registers), (c) the X-staged kernel takes the most stages (6..3) that keep
 * G05_BLOCKS_PER_SM = 4 blocks on an SM: 6 for xr <= 2 (48 + 3 xr KB), 5 for xr <= 6, 4 for
 * xr = 7..8, 3 for xr = 16; __launch_bounds__ caps registers at 64 so that 4 blocks fit there too
 * (ptxas: 45-62 registers, no spills). tinfer_gemv05_config reports the choice and the runtime's
 * occupancy (test-gemv-pdl prints it). X is staged from M = 1 (G05_XSTAGE_MIN_M).
 * Programmatic dependent launch (sm_90): the kernel is launched with programmatic stream
 * serialization, so its blocks can become resident while the previous kernel on the stream
 * finishes; before griddepcontrol.wait a block may only issue an L2 bulk prefetch of its first W
 * k-tiles (--gemv05-prefetch; safe even if the previous kernel writes W: see the comment in
 * the kernel; off by default, measured slower); every read of X / W / bias / R and every write of
 * Y comes after the wait. griddepcontrol.launch_dependents runs after the main loop (default).
 * Measured (H200 sm_90a 132 SMs, driver 580.159.04, 2026-12-02; `.devcarry-dec/run.sh`: stream
 * timing, `tinfer-bench-gemm-bf16 decode` once per switch setting; % of the measured 4274 GB/s
 * copy; the Llama-3-8B rows through rung 05 (QKV, gate/up) and 06 (down, the dispatcher's pick)):
 *   run 2 (18:20 UTC), this code with the final defaults (PDL, launch_dependents after the loop,
 *   no prefetch: the run's --gemv05-prefetch 0 row, made the default after it), us at M = 1 / 2 / 4 / 8 / 16: QKV 14.6 / 14.6 / 14.9 / 15.5 / 22.1 (80.7% at
 *   M = 1; cuBLAS 17.2), gate/up 57.5 / 57.6 / 58.1 / 60.5 / 79.7 (95.8%; cuBLAS 57.4-62.5),
 *   down (06) 31.2 / 31.5 / 31.8 / 32.8 / 43.1 (88.3%; cuBLAS 32.3). M = 8 over M = 1: +5.7%,
 *   +5.1%, +5.0% (was +11..15%); M = 16: +38..51% (3 stages of 16 rows, not improved).
 *   The same without PDL (--gemv-pdl 0): QKV 16.3 / 16.9 at M = 1 / 8, gate/up 59.2 / 61.7,
 *   down (06) 33.0 / 34.4: PDL saves 1.2-1.8 us per launch back to back.
 *   Occupancy (cudaOccupancyMaxActiveBlocksPerMultiprocessor, test-gemv-pdl): 4 blocks/SM at
 *   every M <= 16 (51 / 54 / 47.5 / 50 / 55 / 48 / 48 KB at xr = 1 / 2 / 3 / 4 / 6 / 8 / 16);
 *   SwiGLU (X not staged, then) 96 KB, 2 blocks/SM.
 *   Shared memory was the cost of staging: with PDL off, the unstaged kernel at M = 1 took
 *   QKV 18.3, gate/up 64.3, down (05) 45.8 us against 16.3 / 59.2 / 32.8 staged (1 row, 4 blocks);
 *   forcing 6 stages at M = 8 (72 KB, 3 blocks/SM) took 17.6 / 66.0 / 38.8 (06) against
 *   16.9 / 61.7 / 34.4 with 4 stages (4 blocks). The unstaged kernel itself is slower than in
 *   run 4 (down 05 M = 1: 45.8 vs 35.0 us; not investigated: candidates are the max-shared
 *   carveout, which leaves L1 28 KB for its __ldg of a 28 KB X row, and the 64-register cap);
 *   it then ran for SwiGLU (gate/up + SwiGLU 64.3 / 79.7 us at M = 1 / 8, X not staged:
 *   still +24%; SwiGLU is staged now, below) and runs only when forced by --gemv05-xstage.
 *   Where launch_dependents sits (run 1 and 2): at the start, rung 05 got slower (run 2: QKV
 *   17.4 vs 14.6, down (05) 41.0 vs 30.9): the next grid's blocks take the SM slots the running
 *   one leaves, wherever they are; after the last loads (mode 4): QKV 15.8 / 17.1 at M = 1 / 8
 *   (worse at M = 8); at exit (mode 3, run 1) within 0.2 us of the default except down
 *   (06): 32.6 vs 31.4. The L2 prefetch
 *   before the wait was slower everywhere (S - 1 k-tiles: QKV 15.9, gate/up 59.3, down 31.5;
 *   16 k-tiles: 20.1 / 74.3 / 35.6), so it is off by default. CUDA graph replay (--graph) with
 *   PDL: QKV 15.1 us at M = 1 (cuBLAS 15.6), gate/up 58.6, down 30.8.
 *   Run 1 (18:09 UTC, an earlier build: prefetch S - 1 on, no mode 4) gave 0.4-2 us lower times
 *   on down (05 29.3 us at M = 1; without PDL 30.8 vs 32.8) on another lease; whether that is the
 *   lease or mode 4's test inside the loop was not separated. Run 2's numbers are this code's.
 * Weights read before the PDL wait (args.w_static = 1: the caller promises that nothing in flight
 * on the stream writes W, as for model weights): the W part of the first S - 1 stages is issued
 * before griddepcontrol.wait, so a block's weight stream starts while the previous kernel drains;
 * X, bias, R and Y still wait. Taken where the grid fills >= G05_EARLY_MIN_FILL_PCT of the resident
 * block slots, with launch_dependents moved to the start there (H200 session 6 run 6, M = 1,
 * stream timing, copy 4239 GB/s: Llama gate/up 54.8 us = 101% of the copy rate, above the 55.2 us
 * read ceiling, which waits; down (rung 06) 29.4 us = 94%; without w_static 56.7 / 30.8).
 * Grids that fill too few of 4 x 132 slots (Llama QKV: 384 blocks, 73%) are sized for 3 blocks
 * per SM instead (g05_auto_bps: more stages each, 8 at M = 1, 6 at M = 8), where they fill 97% and
 * take the early stream. H200 session 7, stream timing, us at M = 1 / 8 (% of the copy rate at
 * M = 1), runs 1-2: QKV 13.32-13.53 (87-89%) / 15.2-15.5 against 14.34-14.41 (82-83%) / 15.4 at 4
 * blocks per SM; graph timing 12.67-12.79 against 13.83 (cuBLAS 15.4). The early stream is what
 * pays: 3 blocks per SM without it 14.43; 7 / 6 stages instead of 8: 14.16 / 14.52;
 * launch_dependents after the loop 14.74, after the last loads 13.77. What the early stream could
 * still reach: the bench's "read_early" (every read before the wait) moves QKV's 50 MB in 10.9-11.2
 * us, 105-108% of the copy rate, against 13.6-13.8 (86-87%) for the read that waits; the GEMV must
 * wait for its X, and a block holds only its first S - 1 k-tiles (56 of 128 KB) before it. An L2
 * prefetch of the rest before the wait (--gemv05-prefetch 4 / 9) made it slower: 15.2 / 17.4.
 * SwiGLU: a block's 16 weight rows are the gate rows of 8 outputs (mma rows g) and their up rows
 * (rows g + 8), so the two sums of an output land in one lane's accumulators and the block is
 * the plain kernel's shape: X staged, 4 blocks per SM, the early weight stream. It was a block
 * of 32 rows (16 outputs) with X read by __ldg, 96 KB of stages and 2 blocks per SM. H100,
 * `tinfer-bench-gemm bf16 model --w-static --only llama_gateup:1,llama_gateup:8`, two
 * alternating rounds against the 32-row kernel in one call: Llama-3-8B gate/up + SwiGLU at M = 1
 * 76.6-76.7 us (100.6-100.9% of the copy rate) against 81.7-81.9 (94.2-94.5%), at M = 8 78.3
 * against 93.9-94.1; the plain store of the same weight 76.5-76.9. `tinfer-bench` tg128 on
 * Llama-3-8B (random weights) 187.2 / 187.6 against 181.1-181.5 tok/s.
 * Measurement knobs (gemm/cuda/knobs.h, read on every call; tinfer-bench-gemm sets them from the
 * flags named here; a bad value makes the call fail with TINFER_ERR_INVALID_ARG):
 *   --gemv-pdl 0..4           0: plain launches; 1..4: PDL with launch_dependents 1: at the
 *                             start, 2 (default, G05_PDL_DEFAULT): after the main loop, 3: never
 *                             (it happens at block exit), 4: once the last k-tile's loads are issued.
 *   --gemv05-prefetch n       W k-tiles per row prefetched into L2 before the wait (default 0:
 *                             measured slower, G05_PREFETCH_DEFAULT); with the early stream, the
 *                             n k-tiles after those it loads into shared memory.
 *   --gemv05-xstage 0|1|2     0: never stage X; 1: stage from M = 1; 2: from M = 2 (the
 *                             previous choice). Unset: G05_XSTAGE_MIN_M.
 *   --gemv05-stages 3..8      force the X-staged kernel's stage count (unset: the rule above).
 *   --gemv05-bps 3|4          blocks per SM the X-staged kernel's stages are sized for (unset:
 *                             g05_auto_bps).
 *   --gemv06-split 2|4        rung 06's cluster size (default 2, G06_SPLIT_DEFAULT).
 *   --gemv-early-w 0..2       W loads before griddepcontrol.wait for w_static calls: 0 never,
 *                             1 (default) by the fill rule above, 2 at any grid size (tests).
 */
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/knobs.h"

#include <stdlib.h>
#include <string.h>
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/ptx.cuh"
#include "gemm/decode/gemv_bf16_internal.h"

#include <cooperative_groups.h>

#define G05_WARPS 8
#define G05_KT 256
/* Outputs a block owns: 16, or with SwiGLU 8 (its 16 weight rows are 8 gate rows and their 8 up
 * rows). */
#define G05_OUTS(swi) ((swi) ? 8 : 16)
/* Stages of the unstaged kernel (X from global, only where --gemv05-xstage asks): 6 x 8 KB. */
#define G05_STAGES 6
/* Blocks per SM the X-staged kernel's stage count is chosen for: the unstaged M = 1 kernel's
 * occupancy (48 KB of stages -> 4 blocks in the H200's 228 KB per SM), at which it streamed
 * 90% of the copy rate on gate/up (gemm/decode/README.md, "The ladder"). */
#define G05_BLOCKS_PER_SM 4
/* Default of --gemv-pdl: launch_dependents after the main loop. Measured against the other
 * places (file comment, run 1): at the start it made rung 05 slower (QKV 18.0 vs 15.5 us, down
 * 38.8 vs 29.3): the next grid's blocks take SM slots wherever the current one leaves them. */
#define G05_PDL_DEFAULT 2
/* Default of --gemv05-prefetch (W k-tiles per row prefetched into L2 before the PDL wait):
 * none. Prefetching the first S - 1 k-tiles made every shape slower in run 2 (file comment:
 * QKV 15.9 vs 14.6 us, gate/up 59.3 vs 57.5 at M = 1), 16 k-tiles more so (20.1 / 74.3 us). */
#define G05_PREFETCH_DEFAULT 0
/* Default of --gemv06-split: rung 06's cluster size (blocks sharing one 16-column tile's K). */
#define G06_SPLIT_DEFAULT 2
/* args.w_static: W loads before the PDL wait only for grids of at least this share of the
 * resident block slots (H200 session 6 run 6, stream timing, M = 1, w_static with
 * launch_dependents at the start against the default launch: Llama gate/up 54.8 vs 56.7 us (1792
 * blocks), down 29.4 vs 30.8 (rung 06, 512 blocks in 528 slots); QKV, 384 blocks, lost: 15.9 vs
 * 14.3, and 14.8 with launch_dependents after the loop: the next grid's blocks take the free slots
 * unevenly). */
#define G05_EARLY_MIN_FILL_PCT 90
/* The most stages of the X-staged kernel (at 3 blocks per SM: 8 x 8.5 KB at M = 1) */
#define G05_MAX_STAGES 8
/* Default of --gemv05-xstage: stage X from this many tokens up. */
#define G05_XSTAGE_MIN_M 1

using tdec::cp_async16;
using tdec::cp_async_commit;
using tdec::cp_async_wait;
using tdec::mma_16816;

/* Dynamic shared memory of one launch: S stages of RW weight rows plus (X staged) xr token rows,
 * 512 B each. The reduction buffer reuses the stage area once the loop is done. */
static size_t g05_smem(int stages, int rw, int xr) { return (size_t)stages * (size_t)(rw + xr) * G05_KT * 2; }

/* KS = 1: rung 05. KS = 2: rung 06, a cluster of 2 blocks (grid z) splits the K tiles of the same
 * 16 columns and block 1 hands its partial sums to block 0 through distributed shared memory.
 * xr: token rows staged per k-tile (XSTAGE: min(M, 8 * NT); rows >= xr feed the mma zeros from
 * registers). pdl: 0 plain launch; 1..4 launched with programmatic stream serialization
 * (launch_dependents 1: at the start, 2: after the main loop, 3: never, i.e. at exit, 4: once the
 * last k-tile's loads are issued). pf: W k-tiles per row prefetched into L2 before the wait. */
template <int NT, bool SWI, int KS, bool XSTAGE, int S>
static __global__ void __launch_bounds__(G05_WARPS * 32, G05_BLOCKS_PER_SM) gemv05_kernel(tinfer_gemm_bf16_args a, int xr, int pdl, int pf,
                                                                                          int early) {
    constexpr int RW = 16; /* weight rows per block: 16 outputs, or (SWI) 8 gate rows and their 8 up rows */
    /* XSTAGE: X is staged through the pipeline with W: the xr token rows of each k-tile land in
     * shared memory with the stage, so no mma waits on a global X load. */
    constexpr bool XS = XSTAGE;
    extern __shared__ uint4 g05_stage[]; /* [S][RW][32] granules of 16 B, then (XS) [S][xr][32] of X */
    uint4 *const g05_x = g05_stage + S * RW * 32;
    /* [G05_WARPS][16][16] partial sums, in the stage area after the loop (8 KB, within one
     * stage): no static buffer, so the stages alone set the occupancy */
    float *const red = reinterpret_cast<float *>(g05_stage);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int64_t nout = tinfer_gemm_bf16_nout(a);
    const int64_t j0 = (int64_t)blockIdx.x * G05_OUTS(SWI), m0 = (int64_t)blockIdx.y * 8 * NT, F = a.N / 2;
    /* weight row of the block's row r: output j0 + r, or (SWI) gate j0 + r for r < 8 and up
     * F + j0 + r - 8, so that a gate row and its up row are rows g and g + 8 of one mma tile and
     * their sums meet in the same lane; and whether that output exists */
    auto wrow_of = [&](int r) -> int64_t { return SWI ? (r < 8 ? j0 + r : F + j0 + r - 8) : j0 + r; };
    auto row_ok = [&](int r) { return j0 + (SWI ? r % 8 : r) < nout; };
    const int64_t nkt_all = (a.K + G05_KT - 1) / G05_KT;
    const int rank = KS > 1 ? (int)blockIdx.z : 0;
    const int64_t per = (nkt_all + KS - 1) / KS, kt0 = rank * per;
    const int64_t nkt = kt0 + per < nkt_all ? per : (nkt_all > kt0 ? nkt_all - kt0 : 0); /* this block's tiles */

    auto load_stage = [&](int st, int64_t kt, bool with_w, bool with_x) {
#pragma unroll
        for (int i = 0; i < RW * 32 / (G05_WARPS * 32); i++) {
            if (!with_w) break;
            const int idx = threadIdx.x + i * G05_WARPS * 32, r = idx / 32, q = idx % 32;
            const int64_t k = (kt0 + kt) * G05_KT + q * 8, wrow = wrow_of(r);
            const bool ok = row_ok(r) && k < a.K;
            cp_async16(&g05_stage[(st * RW + r) * 32 + (q ^ (r & 7))], ok ? (const void *)(a.W + wrow * a.ldw + k) : (const void *)a.W,
                       ok ? 16u : 0u);
        }
        if (XS && with_x) { /* rows 0..xr-1 only: up to 8 * NT rows of 32 granules, NT passes of 256 threads */
#pragma unroll
            for (int i = 0; i < NT; i++) {
                const int idx = threadIdx.x + i * G05_WARPS * 32, r = idx / 32, q = idx % 32;
                if (r >= xr) break;
                const int64_t tok = m0 + r, k = (kt0 + kt) * G05_KT + q * 8;
                const bool ok = tok < a.M && k < a.K; /* else zero-filled: the mma adds 0 */
                cp_async16(&g05_x[(st * xr + r) * 32 + (q ^ (r & 7))],
                           ok ? (const void *)(a.X + tok * a.ldx + k) : (const void *)a.X, ok ? 16u : 0u);
            }
        }
    };
    /* early: the caller promised (args.w_static) that nothing in flight on the stream writes W,
     * so the W part of the first S - 1 stages is issued before griddepcontrol.wait; it joins the
     * first cp.async group (committed with stage 0's X after the wait), so the main loop's
     * group accounting is unchanged. */
    const int npro = (int)(nkt < S - 1 ? nkt : S - 1);
    if (pdl) {
        /* Programmatic dependent launch: the previous kernel on the stream may still be running
         * and may write X, W, bias, R or Y (a conversion kernel, the previous layer), so nothing
         * but W under early is read or written before griddepcontrol.wait. Also before it: an L2 prefetch
         * of this block's first pf W k-tiles (one bulk prefetch per weight row), which only
         * warms L2. That is safe even if the previous kernel writes W: L2 is the point of
         * coherence for global memory, so its writes land in (or invalidate) those very lines,
         * and the cp.async reads after the wait see them. With early, the prefetch covers the
         * pf k-tiles after the npro that go to shared memory. */
        const int64_t pf0 = early ? npro : 0;
        if (threadIdx.x < RW && nkt > pf0 && pf > 0) {
            const int r = threadIdx.x;
            const int64_t wrow = wrow_of(r);
            const int64_t kb = (kt0 + pf0) * G05_KT, nt = nkt - pf0 < pf ? nkt - pf0 : pf;
            const int64_t ke = (kt0 + pf0 + nt) * G05_KT < a.K ? (kt0 + pf0 + nt) * G05_KT : a.K;
            if (row_ok(r)) tdec::prefetch_l2_bulk(a.W + wrow * a.ldw + kb, (uint32_t)((ke - kb) * 2));
        }
        if (early)
            for (int st = 0; st < npro; st++) load_stage(st, st, true, false);
        if (pdl == 1) tdec::pdl_launch_dependents();
        tdec::pdl_wait();
    }

#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (s < nkt) load_stage(s, s, !(pdl && early), true);
        cp_async_commit();
    }
    if (pdl == 4 && nkt < S) tdec::pdl_launch_dependents(); /* every load already issued */

    float cg[NT][4];
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) cg[n][i] = 0.f;
    const bool x0ok = m0 + g < a.M, x1ok = m0 + 8 + g < a.M;
    const uint16_t *x0 = a.X + (x0ok ? m0 + g : 0) * a.ldx;
    const uint16_t *x1 = a.X + (x1ok ? m0 + 8 + g : 0) * a.ldx;
    const uint4 z = make_uint4(0, 0, 0, 0);
    const int q = (4 * warp + t) ^ (g & 7); /* rows g and g + 8 share (row & 7) = g & 7 */
    const bool xs0 = g < xr, xs1 = 8 + g < xr; /* this lane's token rows are staged */

    for (int64_t kt = 0; kt < nkt; kt++) {
        cp_async_wait<S - 2>();
        __syncthreads(); /* stage kt landed for everyone; stage kt-1 is free to refill */
        {
            const int64_t nk = kt + S - 1;
            if (nk < nkt) load_stage((int)(nk % S), nk, true, true);
            cp_async_commit();
            if (pdl == 4 && nk == nkt - 1) tdec::pdl_launch_dependents();
        }
        const int st = (int)(kt % S);
        const int64_t k = (kt0 + kt) * G05_KT + warp * 32 + t * 8;
        const uint4 *sb = &g05_stage[st * RW * 32];
        const uint4 w0 = sb[g * 32 + q], w1 = sb[(g + 8) * 32 + q];
        uint4 xb[NT];
        if (XS) { /* token rows g and 8 + g share (row & 7) = g & 7 with the W rows: same q */
            const uint4 *xs = &g05_x[st * xr * 32];
            xb[0] = xs0 ? xs[g * 32 + q] : z;
            if (NT == 2) xb[NT - 1] = xs1 ? xs[(8 + g) * 32 + q] : z;
        } else {
            xb[0] = x0ok && k < a.K ? __ldg((const uint4 *)(x0 + k)) : z;
            if (NT == 2) xb[NT - 1] = x1ok && k < a.K ? __ldg((const uint4 *)(x1 + k)) : z;
        }
        /* Fragments as in rung 04: .x/.y words feed the first k16 mma, .z/.w the second. */
#pragma unroll
        for (int n = 0; n < NT; n++) {
            mma_16816(cg[n], w0.x, w1.x, w0.y, w1.y, xb[n].x, xb[n].y);
            mma_16816(cg[n], w0.z, w1.z, w0.w, w1.w, xb[n].z, xb[n].w);
        }
    }
    if (pdl == 2) tdec::pdl_launch_dependents();
    /* Only empty groups can still be pending; after the barrier no warp reads a stage again,
     * so the stage area becomes the reduction buffer. */
    cp_async_wait<0>();
    __syncthreads();
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = g + 8 * (i >> 1), tok = 8 * n + 2 * t + (i & 1);
            red[(warp * 16 + row) * 16 + tok] = cg[n][i];
        }
    /* one thread an output: row `row` (SWI: gate row `row`, up row row + 8) and token tok */
    const int row = threadIdx.x % 16, tok = threadIdx.x / 16;
    const int64_t m = m0 + tok, j = j0 + row;
    const bool out_ok = tok < 8 * NT && m < a.M && row < G05_OUTS(SWI) && j < nout;
    if (KS == 1) {
        __syncthreads();
        if (!out_ok) return;
        float sg = 0.f, su = 0.f;
#pragma unroll
        for (int w = 0; w < G05_WARPS; w++) {
            sg += red[(w * 16 + row) * 16 + tok];
            if (SWI) su += red[(w * 16 + row + 8) * 16 + tok];
        }
        tinfer_bf16_epi_store(a, m, j, sg, su);
    } else {
        namespace cg = cooperative_groups;
        cg::cluster_group cl = cg::this_cluster();
        cl.sync(); /* every block's partials written (cluster barrier: release/acquire) */
        if (rank == 0 && out_ok) {
            float sg = 0.f, su = 0.f;
#pragma unroll
            for (int r = 0; r < KS; r++) { /* rank order: deterministic */
                const float *rr = r == 0 ? red : cl.map_shared_rank(red, r);
#pragma unroll
                for (int w = 0; w < G05_WARPS; w++) {
                    sg += rr[(w * 16 + row) * 16 + tok];
                    if (SWI) su += rr[(w * 16 + row + 8) * 16 + tok];
                }
            }
            tinfer_bf16_epi_store(a, m, j, sg, su);
        }
        cl.sync(); /* the other blocks' shared memory stays alive until block 0 has read it */
    }
}

typedef struct g05_switches {
    int pdl, pdl_set, xstage_min_m, stages, prefetch, split, early_w, bps;
} g05_switches;
/* The knobs of rungs 05 / 06 (gemm/cuda/knobs.h), read on every call: -2 where one is out of range. */
static g05_switches g05_get_switches(void) {
    const tinfer_gemm_knobs *k = tinfer_gemm_knobs_get();
    g05_switches sw;
    sw.pdl = tinfer_knob_int(k->gemv_pdl, G05_PDL_DEFAULT, 0, 4);
    sw.prefetch = tinfer_knob_int(k->gemv05_prefetch, G05_PREFETCH_DEFAULT, 0, 4096);
    const int xs = tinfer_knob_int(k->gemv05_xstage, -1, 0, 2);
    sw.xstage_min_m = xs == -1 ? G05_XSTAGE_MIN_M : xs == 0 ? 0x7fffffff : xs == -2 ? -2 : xs;
    sw.stages = tinfer_knob_int(k->gemv05_stages, 0, 3, G05_MAX_STAGES); /* 0: auto */
    sw.bps = tinfer_knob_int(k->gemv05_bps, 0, 3, G05_BLOCKS_PER_SM);    /* 0: auto */
    sw.split = tinfer_knob_int(k->gemv06_split, G06_SPLIT_DEFAULT, 2, 4);
    if (sw.split == 3) sw.split = -2;
    sw.early_w = tinfer_knob_int(k->gemv_early_w, 1, 0, 2);
    sw.pdl_set = k->gemv_pdl != TINFER_KNOB_UNSET;
    return sw;
}

int tinfer_gemv_pdl_mode(void) { return g05_get_switches().pdl; }

/* Stages of the X-staged kernel with xr token rows: the most (up to G05_MAX_STAGES, at least 3)
 * that keep bps blocks on an SM (each block also costs the runtime's reserved shared memory).
 * The unstaged kernel keeps G05_STAGES. */
static int g05_auto_stages(const tinfer_cuda_facts *d, int xr, int bps) {
    for (int st = bps >= G05_BLOCKS_PER_SM ? G05_STAGES : G05_MAX_STAGES; st > 3; st--)
        if ((size_t)bps * (g05_smem(st, 16, xr) + (size_t)d->smem_reserved) <= (size_t)d->smem_per_sm) return st;
    return 3;
}

/* Blocks per SM the X-staged kernel is sized for. G05_BLOCKS_PER_SM, except for a w_static call
 * that will take the early weight stream (PDL on, --gemv-early-w not 0) whose grid fills too
 * few of those slots: then G05_BLOCKS_PER_SM - 1 (more stages each), if the grid fills that many
 * (Llama QKV: 384 blocks are 73% of 4 x 132 slots and 97% of 3 x 132). */
static int g05_auto_bps(const tinfer_gemm_bf16_args *a, const tinfer_cuda_facts *d, int ks, int pdl, const g05_switches *sw) {
    if (sw->bps > 0) return sw->bps;
    const int64_t outs = G05_OUTS(a->swiglu != 0);
    const int64_t blocks = (tinfer_gemm_bf16_nout(*a) + outs - 1) / outs * ((a->M + 15) / 16) * ks; /* passes of 8 or 16 tokens */
    const int64_t slots4 = (int64_t)G05_BLOCKS_PER_SM * d->n_sm, slots3 = slots4 - d->n_sm;
    if (!pdl || !a->w_static || !sw->early_w || blocks * 100 >= (int64_t)G05_EARLY_MIN_FILL_PCT * slots4) return G05_BLOCKS_PER_SM;
    return blocks * 100 >= (int64_t)G05_EARLY_MIN_FILL_PCT * slots3 && blocks <= slots3 ? G05_BLOCKS_PER_SM - 1 : G05_BLOCKS_PER_SM;
}

/* Launches one instantiation, or (info != NULL) only reports its configuration and occupancy. */
template <int NT, bool SWI, int KS, bool XSTAGE, int S>
static tinfer_status gemv05_launch(const tinfer_gemm_bf16_args *a, cudaStream_t s, int xr, int pdl, int dev,
                                   tinfer_gemv05_info *info, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    const int64_t passes = (a->M + 8 * NT - 1) / (8 * NT);
    constexpr int OUTS = G05_OUTS(SWI);
    const int smem = (int)g05_smem(S, 16, XSTAGE ? xr : 0);
    const int smem_max = (int)g05_smem(S, 16, XSTAGE ? 8 * NT : 0); /* the opt-in covers every xr */
    static int attr_dev = -1;
    /* resident blocks per SM of this instantiation at each staged-X row count (its shared memory),
     * queried once per count, and the SMs, of attr_dev */
    static int occ_xr[8 * NT + 1], d_sm = 0;
    if (passes > 65535 || (nout + OUTS - 1) / OUTS > 0x7fffffff)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16 05: M=%lld N=%lld too large",
                              (long long)a->M, (long long)a->N);
    if (attr_dev != dev) { /* > 48 KB of dynamic shared memory must be asked for once per device */
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(gemv05_kernel<NT, SWI, KS, XSTAGE, S>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_max));
        /* all of the SM's L1/shared array as shared memory: W and staged X bypass L1 (cp.async.cg) */
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(gemv05_kernel<NT, SWI, KS, XSTAGE, S>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                                  (int)cudaSharedmemCarveoutMaxShared));
        TINFER_CUDA_TRY(err, cudaDeviceGetAttribute(&d_sm, cudaDevAttrMultiProcessorCount, dev));
        memset(occ_xr, 0, sizeof occ_xr);
        attr_dev = dev;
    }
    if (info) {
        int occ = 0;
        TINFER_CUDA_TRY(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, gemv05_kernel<NT, SWI, KS, XSTAGE, S>,
                                                                            G05_WARPS * 32, (size_t)smem));
        info->stages = S;
        info->x_rows = XSTAGE ? xr : 0;
        info->tokens_per_pass = 8 * NT;
        info->smem_bytes = smem;
        info->blocks_per_sm = occ;
        info->pdl = pdl;
        return TINFER_OK;
    }
    {
        dim3 grid((unsigned)((nout + OUTS - 1) / OUTS), (unsigned)passes, KS);
        cudaLaunchConfig_t cfg;
        cudaLaunchAttribute attr[2];
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDim = grid;
        cfg.blockDim = dim3(G05_WARPS * 32);
        cfg.dynamicSmemBytes = (size_t)smem;
        cfg.stream = s;
        cfg.attrs = attr;
        if (KS > 1) {
            attr[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
            attr[cfg.numAttrs].val.clusterDim.x = 1;
            attr[cfg.numAttrs].val.clusterDim.y = 1;
            attr[cfg.numAttrs].val.clusterDim.z = KS;
            cfg.numAttrs++;
        }
        /* W read before the PDL wait (args.w_static): where the grid fills the SMs' resident
         * slots (G05_EARLY_MIN_FILL_PCT), and there with launch_dependents at the start (unless
         * --gemv-pdl chose the place), so the next grid's blocks start their W loads while
         * this one drains. --gemv-early-w 0: never; 2: at any grid size (tests). */
        const g05_switches sw = g05_get_switches();
        const int xi = XSTAGE ? xr : 0;
        if (pdl && a->w_static && !occ_xr[xi])
            TINFER_CUDA_TRY(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_xr[xi], gemv05_kernel<NT, SWI, KS, XSTAGE, S>,
                                                                                G05_WARPS * 32, (size_t)smem));
        const int64_t blocks = (int64_t)grid.x * grid.y * grid.z, slots = (int64_t)occ_xr[xi] * d_sm;
        const bool early = pdl && a->w_static && sw.early_w &&
                           (sw.early_w == 2 || blocks * 100 >= (int64_t)G05_EARLY_MIN_FILL_PCT * slots);
        if (early && !sw.pdl_set) pdl = 1;
        if (pdl) {
            attr[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attr[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
            cfg.numAttrs++;
        }
        const int pf = sw.prefetch;
        TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&cfg, gemv05_kernel<NT, SWI, KS, XSTAGE, S>, *a, xr, pdl, pf, early ? 1 : 0));
        TINFER_CUDA_LAUNCH_CHECK(err, "gemv05_kernel");
    }
cleanup:
    return status;
}

template <int NT, bool SWI, int KS>
static tinfer_status gemv05_staged(const tinfer_gemm_bf16_args *a, cudaStream_t s, int stages, int xr, int pdl, int dev,
                                   tinfer_gemv05_info *info, tinfer_err *err) {
    switch (stages) {
    case 8: return gemv05_launch<NT, SWI, KS, true, 8>(a, s, xr, pdl, dev, info, err);
    case 7: return gemv05_launch<NT, SWI, KS, true, 7>(a, s, xr, pdl, dev, info, err);
    case 6: return gemv05_launch<NT, SWI, KS, true, 6>(a, s, xr, pdl, dev, info, err);
    case 5: return gemv05_launch<NT, SWI, KS, true, 5>(a, s, xr, pdl, dev, info, err);
    case 4: return gemv05_launch<NT, SWI, KS, true, 4>(a, s, xr, pdl, dev, info, err);
    default: return gemv05_launch<NT, SWI, KS, true, 3>(a, s, xr, pdl, dev, info, err);
    }
}
template <int NT, int KS>
static tinfer_status gemv05_staged_sw(const tinfer_gemm_bf16_args *a, cudaStream_t s, int stages, int xr, int pdl, int dev,
                                      tinfer_gemv05_info *info, tinfer_err *err) {
    return a->swiglu ? gemv05_staged<NT, true, KS>(a, s, stages, xr, pdl, dev, info, err)
                     : gemv05_staged<NT, false, KS>(a, s, stages, xr, pdl, dev, info, err);
}

/* Rungs 05 (KS = 1) and 06 (KS = 2): picks the instantiation for this M and launches it. */
template <int KS>
static tinfer_status gemv05_run(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_gemv05_info *info, tinfer_err *err) {
    const g05_switches sws = g05_get_switches(), *sw = &sws;
    tinfer_cuda_facts d;
    tinfer_status st = tinfer_cuda_current_facts(&d, err);
    if (st != TINFER_OK) return st;
    const int dev = d.device;
    if (sw->pdl == -2 || sw->xstage_min_m == -2 || sw->stages == -2 || sw->prefetch == -2 || sw->split == -2 || sw->early_w == -2 ||
        sw->bps == -2)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "gemv_bf16 05: knob gemv_pdl must be 0..4, gemv05_xstage 0..2, "
                              "gemv05_stages 3..8, gemv05_prefetch 0..4096, gemv06_split 2 or 4, "
                              "gemv_early_w 0..2, gemv05_bps 3..4");
    if (KS > 1 && d.cc_major < 9)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemv_bf16 06: thread-block clusters need sm_90 (device is sm_%d*)", d.cc_major);
    const int pdl = d.cc_major >= 9 ? sw->pdl : 0; /* griddepcontrol is sm_90 */
    const bool one_tile = a->M <= 8;
    if (a->M < sw->xstage_min_m) {
        if (a->swiglu)
            return one_tile ? gemv05_launch<1, true, KS, false, G05_STAGES>(a, s, 0, pdl, dev, info, err)
                            : gemv05_launch<2, true, KS, false, G05_STAGES>(a, s, 0, pdl, dev, info, err);
        return one_tile ? gemv05_launch<1, false, KS, false, G05_STAGES>(a, s, 0, pdl, dev, info, err)
                        : gemv05_launch<2, false, KS, false, G05_STAGES>(a, s, 0, pdl, dev, info, err);
    }
    const int xr = (int)(a->M < 16 ? a->M : 16); /* min(M, 8 * NT): only rows that exist are staged */
    const int stages = sw->stages > 0 ? sw->stages : g05_auto_stages(&d, xr, g05_auto_bps(a, &d, KS, pdl, sw));
    return one_tile ? gemv05_staged_sw<1, KS>(a, s, stages, xr, pdl, dev, info, err)
                    : gemv05_staged_sw<2, KS>(a, s, stages, xr, pdl, dev, info, err);
}

tinfer_status tinfer_gemv_bf16_cp_async(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err) {
    return gemv05_run<1>(a, s, NULL, err);
}

tinfer_status tinfer_gemv_bf16_cluster(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err) {
    return g05_get_switches().split == 4 ? gemv05_run<4>(a, s, NULL, err) : gemv05_run<2>(a, s, NULL, err);
}

tinfer_status tinfer_gemv05_config(int64_t M, int32_t swiglu, int32_t cluster, tinfer_gemv05_info *info, tinfer_err *err) {
    tinfer_gemm_bf16_args a;
    memset(&a, 0, sizeof a);
    if (!info || M < 1) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv05_config: M=%lld, info %p", (long long)M, (void *)info);
    a.M = M;
    a.N = swiglu ? 32 : 16;
    a.K = G05_KT;
    a.swiglu = swiglu;
    return cluster ? gemv05_run<2>(&a, 0, info, err) : gemv05_run<1>(&a, 0, info, err);
}

/*
 * 03_wgmma_ws.cu — prefill rung 3 (production prefill path on sm_90a): Hopper wgmma fed by TMA,
 * warp-specialised producer/consumer with mbarriers, persistent grid with an L2-grouped tile
 * order, fused bias / residual / SwiGLU epilogue.
 * This file: the algorithm and its measurements (below), the measurement knobs, the tile width and
 * split-K pick, the launchers (every kernel instantiation) and the entry points. The kernel is in
 * 03_wgmma_ws_kernel.cuh, its building blocks (tile geometry, wgmma wrappers, epilogue stores,
 * mainloop) in 03_wgmma_ws.cuh.
 *
 * Algorithm (fast.cu's kernel 12 shape, HOPPER_GEMM_NOTES §5, without clusters/TMA store):
 *  - CTA tile 128 (M) x BN (N) x 64 (K), BN = 256 (4 shared-memory stages of 48 KB: A 16 KB +
 *    B 32 KB) or 128 (6 stages of 32 KB), written by TMA (cp.async.bulk.tensor.2d, 128-byte
 *    swizzle, boxes {64, 128} for X and {64, BN / 2} for W). The entry picks BN per shape
 *    (tinfer_gemm_bf16_wgmma_pick_cfg: fewest rounds of tiles x (BN + a fixed per-tile cost)):
 *    128-wide tiles double the CTAs of problems that leave SMs idle or end on a thin last wave.
 *  - 384 threads = 3 warpgroups. WG0 is the producer (setmaxnreg 40; one thread issues the TMA
 *    loads into a ring of full/empty mbarriers). WG1, WG2 are consumers (setmaxnreg 232): each
 *    owns 64 rows of the tile and runs wgmma.m64nBNk16 (BN / 2 FP32 accumulators per thread),
 *    keeping one k-block of wgmma in flight (wait_group 1) and releasing the stage before it.
 *  - Persistent: grid = #SMs, CTA b takes tiles b, b + grid, ...; tiles are numbered in groups
 *    of 16 M-tiles so the ~132 tiles in flight share 16 A row-blocks and ~8 B row-blocks in L2.
 *    The producer runs ahead into the next tile while the consumers do the epilogue.
 *  - SwiGLU (fused [gate; up] weight): the two 128-row B boxes of a stage come from gate rows
 *    j0.. and up rows F + j0.., so accumulator column c (< 128) and c + 128 are gate and up of
 *    output j0 + c, held by the same thread (register i and i + 64, layout in §1).
 *  - Epilogue: plain BF16 output (no bias/residual/SwiGLU) into 16-byte aligned rows goes through
 *    a per-warp shared scratch in 64-column pieces and leaves as 16-byte stores, each warp store
 *    writing 4 whole 128-byte lines (edge tiles too when N' % 8 == 0, bounds-checked per 16 B);
 *    other plain tiles store straight from the registers (4- or 8-byte pairs, 8 rows x 16 B
 *    per warp store); anything else goes through the same scratch one element per lane,
 *    coalesced: bias, SwiGLU, residual, BF16/F32 store, bounds-checked.
 *  - Ping-pong configuration (TINFER_GEMM_BF16_WGMMA_CFG_PP128, forced only): each consumer owns
 *    whole 128 x 128 tiles (the CTA's even / odd ones, two m64n128k16 per k16 step) and the two
 *    consumers' mainloops alternate through a pair of mbarriers, so one's epilogue runs under
 *    the other's wgmmas.
 *  - Split-K (SPLIT instantiation; picked for few tiles and K >= 1024, tinfer_gemm_bf16_wgmma_pick_split):
 *    a cluster of 2..8 CTAs shares one tile, each over its share of the k-blocks; partial sums
 *    meet over distributed shared memory, each 16-row warp unit finished by one rank (details at
 *    the kernel). No tile loop in that instantiation: with one, ptxas serialized the wgmmas
 *    (C7515) and the persistent kernel lost ~14% on large shapes (gemm/tc/README.md).
 *  - 128 x 144 tiles (m64n144k16, 5 stages of 34 KB): for outputs 144 divides and 128 does not
 *    (SmolLM2's 576), where the 128-wide tiles are too many to split: SmolLM2 down M = 2048, 80
 *    tiles of 128 (no room for clusters) against 64 of 144 in clusters of 2 (H200, session 6 run 1:
 *    10.55 -> 9.80 us graph, 10.94 -> 10.38 stream; cuBLAS 7.48 / 11.46). Elsewhere 144 measured
 *    slower than 128 at equal split (down M = 128 / 512, O M = 512 / 2048), so it is not the
 *    unsplit pick. The epilogue's last 64-column piece then holds 16 columns (SwiGLU: 8).
 *  - 128 x 72 tiles (m64n72k16, 7 stages of 25 KB, one 72-row W box: 36-row halves would not
 *    start 1024-byte aligned; plain outputs only, no split): twice the CTAs of the 144-wide tile
 *    for SmolLM2's 576 outputs, so small problems spread over more SMs without a split-K
 *    reduction. Picked by the width cost rule for K <= 2048 (bf16.h, TINFER_GEMM_BF16_WGMMA_72_MAX_K).
 *    H200, session 8 (stream / graph us, against the previous pick): O M = 512 5.29 / 4.76 vs
 *    6.33 / 5.77, O M = 2048 5.89 / 5.16 vs 6.91 / 6.42, down M = 2048 9.69 / 8.92 vs 10.91 /
 *    10.03, QKV M = 512 4.85 / 4.45 vs 5.67 / 5.37.
 *  - 128 x 96 tiles (m64n96k16, 6 stages of 28 KB, two 48-row W boxes; plain outputs only, no
 *    split, as 72): a candidate of the same cost rule where it costs less than 72
 *    (TINFER_GEMM_BF16_WGMMA_96): SmolLM2 gate/up at 512 tokens takes 128 tiles of 96 in one round
 *    (H200, session 14, graph: 5.05 us against 5.81 at 128 wide and cuBLAS 5.33). Two
 *    accumulator chains (even / odd k16 steps) in the 72- and 96-wide mainloop made every cell
 *    2-8% slower (session 14); one chain stays.
 *  - 128 x 192 tiles (m64n192k16, 4 stages of 40 KB, two 96-row W boxes; unsplit, any epilogue):
 *    for shapes whose 128 x 256 tiles leave a round part-empty and whose 128 x 128 tiles need one
 *    round more (SmolLM2 gate/up at 2048 tokens: 256 tiles in 2 rounds against 384 in 3; Llama-3-8B
 *    QKV at 512: 128 tiles where 256 gives 96 CTAs to 132 SMs). Built in session 19 without a
 *    GPU: forced only (cfg 192) until measured, then a candidate of the width rule
 *    (TINFER_GEMM_BF16_WGMMA_192). ptxas: 168 registers, no spills, as the other widths.
 *  - X multicast (MC instantiation, cfg TINFER_GEMM_BF16_WGMMA_CFG_72MC or --gemm-wgmma-mc 1
 *    for the picked 72-wide tiles): clusters of 2 CTAs walk pairs of tiles (tm, 2p) and (tm, 2p + 1)
 *    that need the same X tile; each loads its 64-row half once with a multicast TMA into both
 *    CTAs' stages, each consumer releases a stage on its own and on the peer's empty barrier
 *    (4 arrivals per phase), and a cluster barrier brackets the kernel. Halves the X traffic from
 *    L2 and measured slower everywhere (session 8 run 4, stream / graph us, 72 vs 72 + multicast):
 *    QKV M = 512 4.89 / 4.50 vs 5.64 / 4.86, O M = 128 4.69 / 4.31 vs 5.49 / 4.78, O M = 2048
 *    5.55 / 5.00 vs 5.99 / 5.38, down M = 2048 9.30 / 8.62 vs 9.97 / 9.32; with release.cluster
 *    remote arrives (run 3) 7.7-8.3 us on every shape and 19.2 on down M = 2048. The pair runs in
 *    lock-step (a stage frees only when both CTAs' consumers are done with it), which costs more
 *    than the L2 bandwidth it saves at these sizes. Kept as a tested configuration, off.
 *  - Programmatic dependent launch: every CTA waits (griddepcontrol.wait) before touching global
 *    memory, so its launch and barrier setup overlap the previous kernel on the stream.
 * Ragged M / N / K: TMA zero-fills out-of-range rows and K columns (the full box still counts
 * toward the barrier's transaction bytes); the epilogue skips rows >= M and columns >= N'.
 * Constraints: K % 8 == 0, ldx % 8 == 0, ldw % 8 == 0, X and W 16-byte aligned (TMA stride
 * rule); sm_90 only (the body is compiled for sm_90a; the portable PTX target gets a trap and
 * the launcher refuses other GPUs with TINFER_ERR_UNSUPPORTED).
 * Measured (H200, 2026-12-02, run 4, cuBLAS in the same run): 8192^3 766.8 TFLOP/s (95.8% of
 * cuBLAS), 4096^3 722.7 (90.9%), 2048^3 556.6 (81.4%), 1024^3 121.5 (69.7%). Small problems have
 * a floor of 13 us (whole tiles) to 20 us (ragged tiles) against cuBLAS's 8-10 us, and the
 * general epilogue (residual) adds ~23 us per tile round (gemm/tc/README.md, "The lesson is the
 * epilogue"). Tile width (forced sweep, H200 2026-12-02 16:04 UTC, stream timing, % of the faster
 * of cuBLAS / cublasLt): BN = 128 vs 256: SmolLM2 QKV M = 2048 10.9 vs 18.7 us, down M = 2048 14.6
 * vs 21.2, gate/up M = 2048 21.9 vs 27.6, 1024^3 10.9 vs 17.6, Llama-3-8B down M = 512 81.7 vs 168
 * (95.7% of cublasLt), QKV M = 128 25.5 vs 45.1; BN = 256 stays ahead from 4096^3 (190 vs 210 us)
 * and on Llama at M = 2048 (e.g. gate/up 655 vs 758 us).
 * General epilogue: the residual of a 16-row piece is now loaded before it is used (was: one
 * dependent load per row in a rolled loop): SmolLM2 O + residual M = 2048 20.9 -> 14.6 us,
 * Llama-3-8B down + residual M = 2048 401 -> 336 us (plain stores: 9.0 and 303; H200 runs A/B,
 * gemm/tc/README.md).
 * Whole-line stores (H200, 2026-12-02 18:45 UTC, `tinfer-bench-gemm bf16 wgmma`, stream timing, %
 * of the faster of cuBLAS / cublasLt; before = register-direct stores, --gemm-wgmma-epi regs,
 * 18:40 UTC): 8192^3 1397 us = 787 TFLOP/s = 101.4% (was 96.1%), 4096^3 180 us = 99.9% (91.0%),
 * SmolLM2 LM head M = 2048 187 vs 266-275 us (95.8%, was 64%), M = 512 50 vs 75 us (98.6%),
 * Llama-3-8B at M = 2048 QKV / gate-up / down 100.1 / 99.9 / 100.7% (91.6 / 92.3 / 97.2%), SmolLM2
 * gate/up M = 2048 15.9 vs 20.3 us; with edge tiles too (N' % 8 == 0): SmolLM2 QKV M = 2048 7.95 vs
 * 10.9 us, O 7.3 vs 9.1, down 11.8 vs 13.7. The stores were the bottleneck, not the tensor cores:
 * 8 rows x 16 B per warp store instruction, against 4 x 128 B now.
 * Ping-pong (same runs, forced): no faster than the cooperative 128 x 128 tile it replaces
 * (4096^3 201 vs 190 us, 8192^3 1613 vs 1519, LM head M = 2048 192 vs 202, SmolLM2 gate/up
 * M = 2048 15.2 vs 15.9) and behind 128 x 256 wherever that is picked: with register-direct
 * stores it did not help either (LM head 275 us in all three configurations), so the exposed
 * epilogue was never the limit. Kept as a rung, tested, not dispatched. Its first version hung:
 * an mbarrier parity wait cannot tell phase n from n - 2, and the second consumer waited on
 * phase 1 of stages whose phase 0 had not completed (fixed by the ordered mainloops).
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/knobs.h"
#include "gemm/cuda/tma.h"
#include "gemm/tc/03_wgmma_ws_kernel.cuh"
#include "gemm/tc/gemm_bf16_tc_internal.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdlib.h>
#include <string.h>

/* Measurement knobs (gemm/cuda/knobs.h, read on every call). WS_SW_LINES (on unless
 * gemm_wgmma_epi is regs): whole-line stores of BF16 tiles, else register-direct stores; WS_SW_TMA
 * (off unless gemm_wgmma_epi is tma): the TMA-store epilogue where it applies (see ws_store_tma:
 * measured no better overall, so not the default); WS_SW_MAPCACHE (on unless gemm_wgmma_mapcache
 * is 0): cached tensor maps, else every map encoded on every call; WS_SW_ASYNCRED (on unless
 * gemm_wgmma_splitred is barrier): split-K partial sums by st.async onto the owner's mbarrier,
 * else DSMEM stores and a second cluster barrier; WS_SW_MC (off unless gemm_wgmma_mc is 1): the
 * picked 128 x 72 tiles multicast X over clusters of 2. */
enum { WS_SW_LINES, WS_SW_MAPCACHE, WS_SW_TMA, WS_SW_ASYNCRED, WS_SW_MC, WS_SW_COUNT };
static bool ws_switch_on(int which) {
    const tinfer_gemm_knobs *k = tinfer_gemm_knobs_get();
    switch (which) {
    case WS_SW_LINES: return k->gemm_wgmma_epi != TINFER_KNOB_EPI_REGS;
    case WS_SW_MAPCACHE: return k->gemm_wgmma_mapcache != 0;
    case WS_SW_TMA: return k->gemm_wgmma_epi == TINFER_KNOB_EPI_TMA;
    case WS_SW_ASYNCRED: return k->gemm_wgmma_splitred != TINFER_KNOB_SPLITRED_BARRIER;
    default: return k->gemm_wgmma_mc == 1;
    }
}

/* Rung 03's maps: 64-column boxes with the 128-byte swizzle, from the shared per-thread cache
 * (gemm/cuda/tma.h). */
static tinfer_status ws_make_map(CUtensorMap *map, const uint16_t *base, int64_t rows, int64_t K, int64_t ld,
                                 uint32_t box_rows, const char *what, tinfer_err *err) {
    return tinfer_gemm_bf16_tma_map(map, base, rows, K, ld, box_rows, what, err);
}

/* Tile configuration for a shape: the tile width whose tiles finish soonest, a tile costing its
 * width in columns plus a fixed per-tile cost of TINFER_GEMM_BF16_WGMMA_TILE_FIXED columns
 * (pipeline fill, epilogue), counted in whole rounds of tiles over the SMs (the persistent grid's
 * waves). The ping-pong configuration is not picked: it measured no faster than the cooperative
 * 128 x 128 tile (file comment). */
static int32_t ws_pick_width(int64_t M, int64_t nout, int32_t swiglu, int32_t n_sm, bool allow192) {
    int32_t best = TINFER_GEMM_BF16_WGMMA_CFG_256;
    int64_t best_cost = -1;
    const int64_t tiles_m = (M + WS_BM - 1) / WS_BM;
    for (int32_t bn : {256, 192, 128}) {
        if (bn == 192 && !allow192) continue;
        const int64_t cols = swiglu ? bn / 2 : bn;
        const int64_t tiles = tiles_m * ((nout + cols - 1) / cols);
        const int64_t rounds = (tiles + n_sm - 1) / n_sm;
        const int64_t cost = rounds * (bn + TINFER_GEMM_BF16_WGMMA_TILE_FIXED);
        if (best_cost < 0 || cost < best_cost) {
            best = bn;
            best_cost = cost;
        }
    }
    return best;
}
int32_t tinfer_gemm_bf16_wgmma_pick_cfg(int64_t M, int64_t nout, int32_t swiglu, int32_t n_sm) {
    return ws_pick_width(M, nout, swiglu, n_sm, TINFER_GEMM_BF16_WGMMA_192 != 0);
}

/* 128 x 72 or 128 x 96 tiles: plain outputs, K <= TINFER_GEMM_BF16_WGMMA_72_MAX_K, and cheaper
 * than the cfg rule's width by the same cost (rounds of tiles x (width +
 * TINFER_GEMM_BF16_WGMMA_TILE_FIXED)); 96 only with TINFER_GEMM_BF16_WGMMA_96 and where it costs
 * less than 72. Returns the width, or 0. */
int32_t tinfer_gemm_bf16_wgmma_narrow(int64_t M, int64_t nout, int64_t K, int32_t swiglu,
                                      int32_t n_sm) {
    if (swiglu || K > TINFER_GEMM_BF16_WGMMA_72_MAX_K || n_sm < 1) return 0;
    const int64_t tiles_m = (M + WS_BM - 1) / WS_BM;
    auto cost = [&](int64_t bn) {
        return (tiles_m * ((nout + bn - 1) / bn) + n_sm - 1) / n_sm * (bn + TINFER_GEMM_BF16_WGMMA_TILE_FIXED);
    };
    const int32_t bn = TINFER_GEMM_BF16_WGMMA_96 && cost(96) < cost(72) ? 96 : 72;
    return cost(bn) < cost(tinfer_gemm_bf16_wgmma_pick_cfg(M, nout, 0, n_sm)) ? bn : 0;
}

/* Tile width and split-K factor. The cfg rule's width and no split, unless its tiles are few
 * (tiles x TINFER_GEMM_BF16_WGMMA_SPLIT_FILL_DIV <= SMs, counted at the cfg rule's width or at
 * 144 where that width is a candidate) and K >= TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_K. Then the
 * candidate widths are 256 for M <= TINFER_GEMM_BF16_WGMMA_SPLIT_WIDE_MAX_M (one consumer computes,
 * the weight stream is the cost; half the tiles leave room for larger clusters), else 128 (the
 * tensor-core time per CTA halves) and 144 where its tiles cover fewer output columns than 128's
 * (N' = 576: 4 x 144 = 576 against 5 x 128 = 640, and 64 tiles at M = 2048 pair into 64 clusters
 * of 2 where 80 tiles of 128 find no room), tried only when 128 finds no factor: where both
 * split, 128 measured faster (SmolLM2 down M = 512: 128 x 4 8.35 us, 144 x 6 8.86; bf16.h). The
 * first width with a factor takes the largest factor 2..8 whose clusters are all co-resident
 * (tiles <= clusters[w][factor], the runtime's cudaOccupancyMaxActiveClusters; a cluster count
 * that does not fit runs in two waves: Llama-3-8B down M = 128 with 32 clusters of 4 took 60 us
 * against 40 with 3) with at least TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_KB k-blocks per CTA; no split
 * when no width has one. The sweep behind it: bf16.h. */
void tinfer_gemm_bf16_wgmma_pick_split(int64_t M, int64_t nout, int64_t K, int32_t swiglu, int32_t n_sm,
                                       const int32_t clusters[TINFER_GEMM_BF16_WGMMA_WIDTHS][9], int32_t *cfg,
                                       int32_t *ksplit) {
    *cfg = tinfer_gemm_bf16_wgmma_pick_cfg(M, nout, swiglu, n_sm);
    *ksplit = 1;
    const int64_t tiles_m = (M + WS_BM - 1) / WS_BM, kblocks = (K + WS_BK - 1) / WS_BK;
    auto cols = [&](int32_t bn) { return (int64_t)(swiglu ? bn / 2 : bn); };
    auto tiles_of = [&](int32_t bn) { return tiles_m * ((nout + cols(bn) - 1) / cols(bn)); };
    const int32_t narrow = tinfer_gemm_bf16_wgmma_narrow(M, nout, K, swiglu, n_sm);
    if (narrow) *cfg = narrow; /* TINFER_GEMM_BF16_WGMMA_CFG_72 or _96: the width */
    const bool wide = M <= TINFER_GEMM_BF16_WGMMA_SPLIT_WIDE_MAX_M;
    /* 144 where its tiles cover fewer output columns than 128's, unless 72 or 96 already won */
    const bool use144 = !narrow && !wide && tiles_of(144) * cols(144) < tiles_of(128) * cols(128);
    const int64_t few = use144 && tiles_of(144) < tiles_of(*cfg) ? tiles_of(144) : tiles_of(*cfg);
    if (few * TINFER_GEMM_BF16_WGMMA_SPLIT_FILL_DIV > n_sm || K < TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_K) return;
    const int32_t cand[2] = {wide ? 256 : 128, use144 ? 144 : 0};
    for (int32_t bn : cand) {
        if (!bn) continue;
        const int64_t tiles = tiles_of(bn);
        for (int32_t ks = 8; ks >= 2; ks--) {
            const int64_t kper = (kblocks + ks - 1) / ks;
            if ((kblocks + kper - 1) / kper == ks && kper >= TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_KB &&
                tiles <= clusters[tinfer_gemm_bf16_wgmma_width_index(bn)][ks]) {
                *cfg = bn;
                *ksplit = ks;
                return;
            }
        }
    }
}

/* clusters[w][ks]: how many clusters of ks CTAs of the split kernel with tile width w (the width
 * index: 128, 256, 144) can be resident at once (cudaOccupancyMaxActiveClusters; [w][1] = SMs), per
 * device, queried once. */
template <int BN> static cudaError_t ws_query_clusters(int32_t out[9], int n_sm) {
    using G = WsGeo<BN>;
    out[0] = 0;
    out[1] = n_sm;
    cudaError_t e = cudaFuncSetAttribute(wgmma_ws_kernel<BN, 0, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM);
    for (int ks = 2; ks <= 8 && e == cudaSuccess; ks++) {
        int n = 0;
        e = tinfer_tc_max_clusters((const void *)wgmma_ws_kernel<BN, 0, false, true>, 384, (size_t)G::SMEM, ks, n_sm, &n);
        out[ks] = n;
    }
    return e;
}
static tinfer_status ws_clusters(int dev, int n_sm, const int32_t (**out)[9], tinfer_err *err) {
    static_assert(TINFER_GEMM_BF16_WGMMA_WIDTHS == 3, "one table row per tile width");
    static int32_t table[16][TINFER_GEMM_BF16_WGMMA_WIDTHS][9];
    static volatile int have[16];
    if (dev < 0 || dev >= 16) return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 wgmma: device %d (16 at most)", dev);
    if (!have[dev]) {
        cudaError_t e = ws_query_clusters<128>(table[dev][0], n_sm);
        if (e == cudaSuccess) e = ws_query_clusters<256>(table[dev][1], n_sm);
        if (e == cudaSuccess) e = ws_query_clusters<144>(table[dev][2], n_sm);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return tinfer_err_set(err, TINFER_ERR_CUDA, "gemm_bf16 wgmma: cluster occupancy query failed: %s", cudaGetErrorString(e));
        }
        __sync_synchronize();
        have[dev] = 1;
    }
    *out = table[dev];
    return TINFER_OK;
}

tinfer_status tinfer_gemm_bf16_wgmma_max_clusters(int32_t cfg, int32_t ksplit, int32_t *n, tinfer_err *err) {
    tinfer_cuda_facts f;
    const int32_t(*t)[9] = NULL;
    tinfer_status st = tinfer_cuda_current_facts(&f, err);
    if (st != TINFER_OK) return st;
    if (f.cc_major != 9) return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 wgmma: needs sm_90");
    if ((cfg != 128 && cfg != 144 && cfg != 256) || ksplit < 1 || ksplit > 8)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 wgmma: cfg %d / split %d", (int)cfg, (int)ksplit);
    if ((st = ws_clusters(f.device, f.n_sm, &t, err)) != TINFER_OK) return st;
    *n = t[tinfer_gemm_bf16_wgmma_width_index(cfg)][ksplit];
    return TINFER_OK;
}

/* Programmatic dependent launch for this call: K <= TINFER_GEMM_BF16_WGMMA_PDL_MAX_K (bf16.h), where
 * the launch is a large share of the kernel; knob gemm_wgmma_pdl 0 / 1: never / always
 * (measurement; test-gemv-pdl sets 1 to check the ordering at any K). */
static int ws_pdl_mode(void) { /* 0 never, 1 always, 2 by K */
    const int v = tinfer_gemm_knobs_get()->gemm_wgmma_pdl;
    return v == 0 ? 0 : v == 1 ? 1 : 2;
}
static bool ws_pdl(int64_t K) {
    const int mode = ws_pdl_mode();
    return mode == 1 || (mode == 2 && K <= TINFER_GEMM_BF16_WGMMA_PDL_MAX_K);
}

bool tinfer_gemm_bf16_wgmma_pdl(int64_t K) { return ws_pdl(K); }
bool tinfer_gemm_bf16_split_asyncred(void) { return ws_switch_on(WS_SW_ASYNCRED); }
/* knob gemm_early_w 0: no early weight loads in rungs 02 / 04. */
bool tinfer_gemm_bf16_early_w(const tinfer_gemm_bf16_args *a, bool pdl) {
    return pdl && a->w_static && tinfer_gemm_knobs_get()->gemm_early_w != 0;
}
int tinfer_gemm_bf16_wgmma_pdl_mode(void) { return ws_pdl_mode(); }

template <int BN, bool PP>
static tinfer_status ws_launch(const tinfer_gemm_bf16_args *a, int dev, int n_sm, int32_t ksplit, bool mc, cudaStream_t s,
                               tinfer_err *err) {
    using G = WsGeo<BN>;
    /* the X-multicast instantiations (clusters of 2 along N): the 72-wide tile only */
    constexpr bool WS_HAS_MC = !PP && BN == 72;
    /* co-resident clusters of 2 of the multicast kernel, per device (queried once) */
    static int mc_clusters[16];
    /* the TMA-store instantiations: persistent, whole 64-column boxes (not 192: the opt-in
     * epilogue was measured at 128 and 256 only) */
    constexpr bool WS_HAS_TS = !PP && BN % 64 == 0 && BN != 192;
    /* the split-K instantiations (not for the 72- and 96-wide tiles: they exist to avoid one;
     * not for 192: the width a round of unsplit tiles may want, split rules unmeasured) */
    constexpr bool WS_HAS_SPLIT = !PP && BN != 72 && BN != 96 && BN != 192;
    using GT = WsGeo<WS_HAS_TS ? BN : 128, true>;
    tinfer_status status = TINFER_OK;
    CUtensorMap mx, mw;
    static int smem_set_for = -1;
    const bool plain = !a->bias && !a->R && !a->swiglu;
    if (mc && (!WS_HAS_MC || ksplit > 1 || dev < 0 || dev >= 16))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 wgmma: X multicast only with unsplit 72-wide tiles");
    if ((status = ws_make_map(&mx, a->X, a->M, a->K, a->ldx, mc ? WS_BM / 2 : WS_BM, "X", err)) != TINFER_OK) return status;
    if ((status = ws_make_map(&mw, a->W, a->N, a->K, a->ldw, BN / G::W_BOXES, "W", err)) != TINFER_OK) return status;
    if (smem_set_for != dev) {
        if constexpr (WS_HAS_TS) {
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 0, false, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, GT::SMEM));
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 1, false, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, GT::SMEM));
        }
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 0, PP, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 1, PP, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
        if constexpr (WS_HAS_SPLIT) {
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 0, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 1, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
        }
        if constexpr (WS_HAS_MC) {
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 0, false, false, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 1, false, false, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
            int n = 0;
            TINFER_CUDA_TRY(err, tinfer_tc_max_clusters((const void *)wgmma_ws_kernel<BN, 0, false, false, false, true>, 384, (size_t)G::SMEM,
                                                        2, n_sm, &n));
            if (dev >= 0 && dev < 16) mc_clusters[dev] = n;
        }
        smem_set_for = dev;
    }
    {
        const int64_t nout = tinfer_gemm_bf16_nout(*a);
        const int32_t tiles_m = (int32_t)((a->M + WS_BM - 1) / WS_BM);
        const int32_t tiles_n = (int32_t)(a->swiglu ? (nout + BN / 2 - 1) / (BN / 2) : (nout + BN - 1) / BN);
        const int32_t kblocks = (int32_t)((a->K + WS_BK - 1) / WS_BK);
        const int64_t tiles = (int64_t)tiles_m * tiles_n;
        if (tiles > INT32_MAX / 2) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 wgmma: too many tiles");
        /* split-K: every CTA of a cluster gets a non-empty share of the k-blocks */
        if (ksplit > kblocks) ksplit = kblocks;
        if (ksplit > 1) {
            const int32_t kper = (kblocks + ksplit - 1) / ksplit;
            ksplit = (kblocks + kper - 1) / kper;
        }
        if (ksplit > 1 && tiles * ksplit > INT32_MAX / 2) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 wgmma: too many tiles");
        /* MC: clusters of 2 walk pairs of tiles, as many clusters as are co-resident */
        const int64_t pairs = (int64_t)tiles_m * ((tiles_n + 1) / 2);
        if (mc && mc_clusters[dev] < 1)
            return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 wgmma: no cluster of 2 CTAs fits the device");
        const int grid = mc ? 2 * (int)(pairs < mc_clusters[dev] ? pairs : mc_clusters[dev])
                         : ksplit > 1 ? (int)(tiles * ksplit) : (int)(tiles < n_sm ? tiles : n_sm);
        int32_t flags = tinfer_bf16_epi_vec_ok(*a) ? WS_F_VEC : 0;
        if (a->y_dtype == TINFER_DTYPE_BF16 && (uintptr_t)a->Y % 16 == 0 && a->ldy % 8 == 0 &&
            (!a->R || ((uintptr_t)a->R % 16 == 0 && a->ldr % 8 == 0)) && ws_switch_on(WS_SW_LINES))
            flags |= WS_F_LINES | (nout % 8 == 0 ? WS_F_N8 : 0);
        if (ksplit > 1 && ws_switch_on(WS_SW_ASYNCRED)) flags |= WS_F_ASYNCRED;
        /* TMA-store epilogue (--gemm-wgmma-epi tma only): the persistent kernel with BF16
         * output in 16-byte rows, N' % 8 == 0 (a TMA store clipped at a row end that is not a
         * 16-byte multiple wrote zeros past it, into Y's padding: H200, session 6 run 2), no residual */
        const bool ts = WS_HAS_TS && !mc && ksplit == 1 && (flags & WS_F_LINES) && (flags & WS_F_N8) && !a->R &&
                        ws_switch_on(WS_SW_TMA);
        CUtensorMap my = mw; /* unread unless ts */
        if (ts && (status = ws_make_map(&my, (const uint16_t *)a->Y, a->M, nout, a->ldy, 64, "Y", err)) != TINFER_OK) return status;
        cudaLaunchConfig_t lc;
        cudaLaunchAttribute attr[2];
        tinfer_tc_launch_cfg(&lc, attr, (unsigned)grid, 384, (size_t)(ts ? GT::SMEM : G::SMEM), s, mc ? 2 : ksplit, ws_pdl(a->K));
        if (mc) {
            if constexpr (WS_HAS_MC) {
                if (plain) TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 0, false, false, false, true>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, 1));
                else TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 1, false, false, false, true>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, 1));
            }
        } else if (ksplit > 1) {
            if constexpr (WS_HAS_SPLIT) {
                if (plain) TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 0, false, true>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, ksplit));
                else TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 1, false, true>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, ksplit));
            }
        } else if (ts) {
            if constexpr (WS_HAS_TS) {
                if (plain) TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 0, false, false, true>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, 1));
                else TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 1, false, false, true>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, 1));
            }
        } else if (plain) {
            TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 0, PP, false>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, 1));
        } else {
            TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 1, PP, false>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, 1));
        }
        TINFER_CUDA_LAUNCH_CHECK(err, "wgmma_ws_kernel");
    }
cleanup:
    return status;
}

tinfer_status tinfer_gemm_bf16_wgmma_ws_split(const tinfer_gemm_bf16_args *a, int32_t cfg, int32_t ksplit, cudaStream_t s,
                                              tinfer_err *err) {
    tinfer_cuda_facts f;
    const tinfer_status fs = tinfer_cuda_current_facts(&f, err);
    if (fs != TINFER_OK) return fs;
    const int dev = f.device, major = f.cc_major, n_sm = f.n_sm;
    if (major != 9)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 wgmma: needs sm_90 (device %d is sm_%d*)", dev, major);
    if (a->nx || a->rss) /* its epilogues (03_wgmma_ws.cuh) are its own, without the split RMSNorm */
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 wgmma: no split RMSNorm (nx / rss) on rung 03");
    if (a->M > INT32_MAX || a->N > INT32_MAX || a->K > INT32_MAX)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 wgmma: dimension over 2^31");
    const bool narrow = cfg == TINFER_GEMM_BF16_WGMMA_CFG_72 ||
                        cfg == TINFER_GEMM_BF16_WGMMA_CFG_72MC || cfg == TINFER_GEMM_BF16_WGMMA_CFG_96;
    if (ksplit < 0 || ksplit > 8 ||
        (ksplit > 1 && (cfg == TINFER_GEMM_BF16_WGMMA_CFG_PP128 || narrow || cfg == TINFER_GEMM_BF16_WGMMA_CFG_192)))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "gemm_bf16 wgmma: split-K factor %d (0 = auto, 1..8; none with "
                              "ping-pong, 72-, 96- or 192-wide tiles)",
                              (int)ksplit);
    if (narrow && a->swiglu)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "gemm_bf16 wgmma: 72- and 96-wide tiles have no SwiGLU epilogue");
    const bool picked = cfg == TINFER_GEMM_BF16_WGMMA_CFG_AUTO;
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_AUTO && ksplit == 0) {
        const int32_t(*cl)[9] = NULL;
        const tinfer_status st = ws_clusters(dev, n_sm, &cl, err);
        if (st != TINFER_OK) return st;
        tinfer_gemm_bf16_wgmma_pick_split(a->M, tinfer_gemm_bf16_nout(*a), a->K, a->swiglu, n_sm, cl, &cfg, &ksplit);
    }
    /* the width rule alone (a split factor given): among the widths that split when one is asked */
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_AUTO)
        cfg = ws_pick_width(a->M, tinfer_gemm_bf16_nout(*a), a->swiglu, n_sm, TINFER_GEMM_BF16_WGMMA_192 != 0 && ksplit <= 1);
    if (ksplit == 0) ksplit = 1;
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_256) return ws_launch<256, false>(a, dev, n_sm, ksplit, false, s, err);
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_192) return ws_launch<192, false>(a, dev, n_sm, 1, false, s, err);
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_128) return ws_launch<128, false>(a, dev, n_sm, ksplit, false, s, err);
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_144) return ws_launch<144, false>(a, dev, n_sm, ksplit, false, s, err);
    /* the picked 72-wide tiles multicast X over clusters of 2 with --gemm-wgmma-mc 1 */
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_72) return ws_launch<72, false>(a, dev, n_sm, 1, picked && ws_switch_on(WS_SW_MC), s, err);
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_72MC) return ws_launch<72, false>(a, dev, n_sm, 1, true, s, err);
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_96)
        return ws_launch<96, false>(a, dev, n_sm, 1, false, s, err);
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_PP128) return ws_launch<128, true>(a, dev, n_sm, 1, false, s, err);
    return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                          "gemm_bf16 wgmma: tile config %d (256, 192, 144, 128, 96, 72, %d for ping-pong 128, %d for 72 with X multicast)", (int)cfg,
                          TINFER_GEMM_BF16_WGMMA_CFG_PP128, TINFER_GEMM_BF16_WGMMA_CFG_72MC);
}

tinfer_status tinfer_gemm_bf16_wgmma_ws_cfg(const tinfer_gemm_bf16_args *a, int32_t cfg, cudaStream_t s, tinfer_err *err) {
    return tinfer_gemm_bf16_wgmma_ws_split(a, cfg, cfg == TINFER_GEMM_BF16_WGMMA_CFG_AUTO ? 0 : 1, s, err);
}

tinfer_status tinfer_gemm_bf16_wgmma_ws(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err) {
    return tinfer_gemm_bf16_wgmma_ws_split(a, TINFER_GEMM_BF16_WGMMA_CFG_AUTO, 0, s, err);
}

/*
 * bf16.h — the BF16 GPU GEMM/GEMV entry points: Y[M,N'] = epi(X[M,K] · W[N,K]^T).
 *
 * Conventions (ARCHITECTURE.md): M = tokens, N = rows of the weight (output features), K = input
 * features; W row-major [N, K] as HF stores it; X row-major [M, K]; both BF16; FP32 accumulate.
 *
 * Epilogue, in this order, all in FP32 before the one rounding to the output type:
 *   acc[m, n] *= rs_m                                    (the split RMSNorm's consumer, rss)
 *   v[m, n] = acc[m, n] + bias[n]                        (bias optional, BF16 [N])
 *   swiglu:  W is the fused gate/up weight [gate rows 0..F-1 ; up rows F..2F-1], N = 2F,
 *            Y has F columns and y[m, j] = silu(v[m, j]) * v[m, F + j]
 *   y[m, j] += R[m, j]                                   (residual optional, same dtype as Y;
 *                                                          R may be Y itself: in-place add)
 *   Y stored as BF16 (round to nearest even) or F32; the split RMSNorm's producer (nx, F32 Y)
 *   also stores BF16(y * nw[j]) and adds y^2 into the row's sum of squares.
 *
 * Constraints, checked by every launcher (TINFER_ERR_INVALID_ARG with a one-line message):
 *   M, N, K >= 1; K % 8 == 0, ldx % 8 == 0, ldw % 8 == 0 and X, W 16-byte aligned (16-byte
 *   vector loads and the TMA descriptor's 16-byte stride rule); swiglu needs N even;
 *   ldx >= K, ldw >= K, ldy >= N', ldr >= N' (N' = N or N/2 with swiglu). Y and R have no
 *   alignment rule. Kernels never read or write outside the [M, N'] box of Y/R.
 *
 * Families (each file's header gives its algorithm and measured result):
 *   decode GEMV  gemm/decode/0{1..5,7..9}_*.cu (06 lives in 05's file) — M = 1..16 per pass (07: up to 64);
 *                larger M loops over passes
 *   prefill      gemm/tc/01_wmma.cu, gemm/tc/02_mma_sync.cu (rung 02, and rung 04: its split-K over a
 *                cluster, sm_90), gemm/tc/03_wgmma_ws.cu (sm_90a only; 128 x 256 .. 128 x 72 tiles),
 *                gemm/tc/05_wgmma_skinny.cu (sm_90a only; W rows x 8..64 tokens, operands swapped),
 *                gemm/tc/06_wgmma_tiny.cu (sm_90a only; one 64-output tile per CTA, small weights)
 *   overviews    gemm/tc/README.md, gemm/decode/README.md; tables gemm/bench_bf16/TABLE.md
 *   dispatch     gemm/dispatch.cu: tinfer_gemm_bf16() picks one from (M, N, K)
 *                (tinfer_gemm_bf16_route_for; each model shape's route: gemm/bench_bf16/ROUTES.md).
 * Every call is asynchronous on the given stream (never the default stream unless passed),
 * allocates nothing and never synchronises (except under TINFER_CUDA_SYNC_DEBUG=1).
 */
#ifndef TINFER_GEMM_BF16_H
#define TINFER_GEMM_BF16_H

#include "base/dtype.h"
#include "base/error.h"

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tinfer_gemm_bf16_args {
    int64_t M, N, K;
    const uint16_t *X; /* BF16 [M, ldx] */
    int64_t ldx;
    const uint16_t *W; /* BF16 [N, ldw] */
    int64_t ldw;
    const uint16_t *bias; /* BF16 [N] or NULL */
    const void *R;        /* residual [M, ldr] of y_dtype, or NULL; may equal Y (same ld) */
    int64_t ldr;
    void *Y; /* [M, ldy] of y_dtype */
    int64_t ldy;
    tinfer_dtype y_dtype; /* TINFER_DTYPE_BF16 or TINFER_DTYPE_F32 */
    int32_t swiglu;       /* 1: W is [gate; up], Y[:, j] = silu(gate_j) * up_j */
    /* 1: nothing still running or queued before this call on its stream writes W (model weights,
     * written once at load time). Kernels launched with programmatic dependent launch may then
     * start reading W before the previous kernel has finished (decode rungs 05 / 06). 0 (the
     * zero-initialised default): W is treated like X. */
    int32_t w_static;
    /* An RMSNorm split across two GEMMs (the CUDA backend fuses a residual GEMM, the RMSNorm after
     * it and the GEMM that reads the normalised rows; ARCHITECTURE.md). NULL (the default): off.
     * Producer (F32 Y, no SwiGLU): besides y[m, j], nx[m, j] = BF16(y[m, j] * nw[j]) and y[m, j]^2
     * added into the row's sum of squares nss[2 m], nss[2 m + 1] (tinfer_nss_add: two words of
     * fixed point summed by integer atomics, so the sum does not depend on the order CTAs add in;
     * the caller zeroes them first). */
    uint16_t *nx; /* BF16 [M, ldnx] */
    int64_t ldnx;
    const uint16_t *nw;       /* BF16 [N] */
    unsigned long long *nss;  /* [M][2] */
    /* Consumer: row m's accumulators are multiplied by rs_m = 1 / sqrt(S_m / rn + reps) before the
     * bias (S_m: the sum of squares in rss[2 m], rss[2 m + 1], a producer's nss), so with X = a
     * producer's nx, Y = epi(rmsnorm(y) * nw · W^T), the rows' 1 / rms applied after the product. */
    const unsigned long long *rss; /* [M][2] */
    int32_t rn;
    float reps;
} tinfer_gemm_bf16_args;

/* Decode GEMV ladder rungs (gemm/decode/). */
typedef enum tinfer_gemv_bf16_kernel {
    TINFER_GEMV_BF16_THREAD_PER_ROW = 1, /* 01: baseline, one thread per output column */
    TINFER_GEMV_BF16_WARP_PER_ROW = 2,   /* 02: a warp per column, 4-byte loads, shuffles */
    TINFER_GEMV_BF16_VECTOR = 3,         /* 03: 16-byte loads, several in flight, M per read */
    TINFER_GEMV_BF16_SPLIT_K = 4,        /* 04: warps split K, mma.sync shares W across M */
    TINFER_GEMV_BF16_CP_ASYNC = 5,       /* 05: 04 fed by a cp.async shared-memory pipeline */
    TINFER_GEMV_BF16_CLUSTER = 6,        /* 06: 05 with K split over a 2-block cluster (sm_90) */
    TINFER_GEMV_BF16_PERSISTENT = 7,     /* 07: 05 persistent, X staged in smem, <= 64 tokens/pass */
    TINFER_GEMV_BF16_STREAM = 8,         /* 08: 04 on a persistent grid, next tile's W in flight (K <= 1024) */
    TINFER_GEMV_BF16_BULK = 9,           /* 09: TMA-fed ring, a block per SM owns its columns (sm_90a) */
} tinfer_gemv_bf16_kernel;

/* Prefill tensor-core rungs (gemm/tc/). */
typedef enum tinfer_gemm_bf16_kernel {
    TINFER_GEMM_BF16_WMMA = 1,     /* 01: WMMA 16x16x16, smem tiles, any sm_80+ */
    TINFER_GEMM_BF16_MMA_SYNC = 2, /* 02: mma.sync + ldmatrix + cp.async pipeline, small tiles, sm_80+ */
    TINFER_GEMM_BF16_WGMMA_WS = 3, /* 03: wgmma + TMA + mbarriers, warp-specialised, persistent, tile width per shape */
    TINFER_GEMM_BF16_MMA_SPLITK = 4, /* 04: 02 with K split over a 2/4/8-block cluster, DSMEM reduce (sm_90) */
    TINFER_GEMM_BF16_WGMMA_SKINNY = 5, /* 05: wgmma with W as the 64-row operand, tokens as N (few tokens, sm_90a) */
    TINFER_GEMM_BF16_WGMMA_TINY = 6,   /* 06: 05's form, one 64-row tile per CTA, all of K in flight, W multicast (small weights, sm_90a) */
} tinfer_gemm_bf16_kernel;

/* Which path tinfer_gemm_bf16 takes. AUTO reads the debug switch TINFER_GEMM_FORCE
 * (=gemv, =gemm, or =mma|wgmma|wmma for the GEMM path with that rung; read once per process)
 * and otherwise picks by shape. */
typedef enum tinfer_gemm_bf16_path {
    TINFER_GEMM_BF16_PATH_AUTO = 0,
    TINFER_GEMM_BF16_PATH_GEMV = 1,
    TINFER_GEMM_BF16_PATH_GEMM = 2,
} tinfer_gemm_bf16_path;

/* Which prefill rung the GEMM path runs on sm_90: rung 02 (mma.sync, 64 x 64 tiles there) when
 * the wgmma kernel's 128 x 256 tiles would fill less than 1 / TINFER_GEMM_BF16_MMA_WGMMA_FILL_DIV
 * of the SMs (tiles * DIV < SM count) and either K <= TINFER_GEMM_BF16_MMA_SHORT_K or
 * M <= TINFER_GEMM_BF16_MMA_LONG_K_MAX_M (one 64-row tile: W streamed once); rung 03 (wgmma)
 * otherwise; WMMA off sm_90. From the model-shape sweep in gemm/tc/README.md ("Rungs 01
 * and 02", H200, 2026-12-02): every shape this routes to rung 02 got faster (SmolLM2 at
 * M = 128/512: 10-18 us vs 13-23 us; Llama-3-8B QKV/down at M = 32/64: 43/127 vs 53/146 us);
 * the shapes left on wgmma lost with rung 02 (SmolLM2 down at M = 2048: 48 tiles, 25.8 vs 23.0 us;
 * Llama QKV at M = 128: 47.5 vs 46.1; QKV / down at M = 512: 83 / 191 vs 49 / 140).
 * Since rung 04 (split-K over a cluster, 2026-12-02 second sweep): every shape with few wgmma
 * tiles (tiles * FILL_DIV < SMs) goes to rung 04, whatever K and M (rung 04 picks its own split
 * and runs as rung 02 when no split pays): Llama-3-8B QKV M = 128 35 us vs wgmma 46, down
 * M = 32 55 vs 125 (rung 02). _MMA_SHORT_K and _MMA_LONG_K_MAX_M no longer steer the dispatcher.
 * Debug switch: TINFER_GEMM_FORCE=mma|split|wgmma|wmma forces the GEMM path with that rung. */
#define TINFER_GEMM_BF16_MMA_WGMMA_FILL_DIV 4
#define TINFER_GEMM_BF16_MMA_SHORT_K 1536
#define TINFER_GEMM_BF16_MMA_LONG_K_MAX_M 64

/* Rung 04's split factor CS (blocks of a cluster sharing one output tile): the largest of 8, 4, 2
 * with tiles * CS <= TINFER_GEMM_BF16_SPLITK_CTAS_PER_SM * SMs (tiles counted in 64 x 64 units) and
 * at least TINFER_GEMM_BF16_SPLITK_MIN_KTILES k-tiles (of 32) per block; no split when none
 * qualifies. From the forced sweep (gemm/tc/02_mma_sync.cu header, H200 2026-12-02): about 4 64x64
 * blocks per SM was best (Llama-3-8B QKV M = 32: CS 4 24.5 us vs CS 2 29.8, CS 8 30.1; down M = 32:
 * CS 8 54.8 vs CS 4 56.2), and the 576-long SmolLM2 rows still gained at 2-3 k-tiles per block
 * (QKV M = 32: CS 8 5.5 us vs CS 2 7.5, no split 9.6). */
#define TINFER_GEMM_BF16_SPLITK_CTAS_PER_SM 4
#define TINFER_GEMM_BF16_SPLITK_MIN_KTILES 2

/* Rung 03's tile width (128 x 256 or 128 x 128, gemm/tc/03_wgmma_ws.cu): the one with the fewest
 * rounds-of-tiles x (width + TINFER_GEMM_BF16_WGMMA_TILE_FIXED), i.e. a tile costs its width in
 * columns plus a fixed overhead (pipeline fill, epilogue) counted in the same columns. From the
 * forced sweep (gemm/tc/README.md "Tile widths", H200 2026-12-02, 28 square and model shapes):
 * 32 picks a width within 2% of the faster one on 27 of 28 shapes with stream timing, 26 with
 * graph timing (0 and 16 the same; 48 and 64 one fewer: Llama gate/up at M = 512, 189 vs 176 us). */
#define TINFER_GEMM_BF16_WGMMA_TILE_FIXED 32
/* Rung 03's split-K (tinfer_gemm_bf16_wgmma_pick_split in gemm/tc/03_wgmma_ws.cu): considered when
 * the picked width's tiles x SPLIT_FILL_DIV <= SMs; 128 x 256 tiles up to M = SPLIT_WIDE_MAX_M,
 * 128 x 128 above; the largest factor whose clusters all fit, >= SPLIT_MIN_KB k-blocks per CTA.
 * From the forced sweep (gemm/tc/README.md "Split-K over a cluster", H200 2026-12-02, us;
 * co-resident clusters of 2..8 CTAs: 66 39 30 22 17 15 15): Llama-3-8B down M = 16 / 64: 256 x 6
 * 40.2 / 40.7 (best forced 256 x 4 38.7 / 39.7; 128-wide at best 54.3 / 46.9); down M = 128: 128 x
 * 3 39.8 (best; 256 x 6 45.6); QKV M = 16 / 64: 256 x 4 22.9 / 22.9 (best 256 x 3 22.4 / 22.0); QKV
 * M = 128: 128 x 2 20.4 (best; 256 x 3 25.9). At M <= 64 only one consumer computes and the weight
 * stream is the cost; at M = 128 the 128-wide tile halves the tensor-core time per CTA.
 * Where the 128-wide tiles find no factor and 128 x 144 tiles cover fewer columns (N' = 576), the
 * fill test and the factor search use 144 (session 6 run 1, H200, graph / stream us: SmolLM2 down
 * M = 2048 144 x 2 9.80 / 10.38 against the unsplit 128 x 128 10.55 / 10.94). Where 128 splits it
 * stays (down M = 512: 128 x 4 8.35 stream, 128 x 3 8.39, 144 x 3 / 4 / 6 8.72 / 8.95 / 8.86). */
#define TINFER_GEMM_BF16_WGMMA_SPLIT_FILL_DIV 2
/* Rung 03's 128 x 72 tiles (no split-K, no SwiGLU) are a candidate of the same cost rule as the
 * other widths (rounds of tiles x (width + TINFER_GEMM_BF16_WGMMA_TILE_FIXED)) for plain outputs
 * with K <= TINFER_GEMM_BF16_WGMMA_72_MAX_K; the split rule below then still applies. H200
 * session 8 runs 1-2 (`wsplit`, stream / graph us, 72 against the previous pick): SmolLM2 O
 * M = 512 5.29 / 4.76 vs 6.33 / 5.77, O M = 2048 5.89 / 5.16 vs 6.91 / 6.42, down M = 2048 9.69 /
 * 8.92 vs 10.91 / 10.03 (144 x 2 split), QKV M = 512 4.85 / 4.45 vs 5.67 / 5.37, plain gate/up
 * M = 128 4.96 / 4.62 vs 5.84 / 5.54; the rule keeps 128 where 72 loses (gate/up M = 512 8.16 vs
 * 6.10) and down M = 512 keeps its 128 x 4 split (8.65 vs 8.92 for 72). */
#define TINFER_GEMM_BF16_WGMMA_72_MAX_K 2048
/* Rung 03's 128 x 96 tiles join the same rule (plain outputs, K <= _72_MAX_K, no split) where
 * they cost less than 72 (1) or not (0): SmolLM2 gate/up at 512 tokens, 128 tiles of 96 in one
 * round where 72 takes two and 128 leaves 36 SMs idle. H200 session 14 (`wide96`, graph us, two
 * runs): gate/up M = 512 96-wide 5.05 / 5.03 against 128-wide 5.81 / 5.78, 72-wide 7.69 / 7.68
 * and cuBLAS 5.33 / 5.30; M = 1024 8.34 vs 9.45 (128). Of the sweep's shapes the rule moves only
 * gate/up at 512 (and 1024); elsewhere 96 measured slower than the pick (O / QKV 128-2048,
 * down, LM head). */
#define TINFER_GEMM_BF16_WGMMA_96 1
/* Rung 03's 128 x 192 tiles (unsplit; plain or fused epilogues) as a candidate of the width cost
 * rule (1) or not (0). By the rule they fill a round where 256 leaves SMs idle and 128 needs one
 * round more: SmolLM2 gate/up at 2048 tokens, 256 tiles of 192 in 2 rounds (cost 448) against 384
 * of 128 in 3 (480; 13.71 us against cuBLAS 13.17, 96%, session 14 graph); Llama-3-8B QKV at 512,
 * 128 tiles in one round against 96 of 256 (36 SMs idle; 43.6 vs 36.4 us stream, 83%) and gate/up
 * at 512. Built and tested on no GPU yet (session 19): 0 until the `wide192` set has timed it. */
#define TINFER_GEMM_BF16_WGMMA_192 0
/* The dispatcher sends a few-tile shape that rung 04 would take to rung 03 instead when rung 03
 * takes it unsplit in 128 x 72 tiles (K < TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_K) and M >= this. H200
 * session 8 (stream / graph us, rung 03 in 72-wide tiles vs rung 04): run 2, SmolLM2 QKV M = 128
 * 4.75 / 4.36 vs 6.02 / 5.41, O M = 128 4.60 / 4.27 vs 5.28 / 4.52; run 7, QKV M = 64 4.54 / 4.22
 * vs 5.09 / 4.34, O M = 64 4.42 / 4.04 vs 4.90 / 4.04. At M = 32 the GEMV path is faster (QKV
 * 4.00 / 3.45 vs 4.53 / 4.21). */
#define TINFER_GEMM_BF16_WGMMA_72_MIN_M 64
#define TINFER_GEMM_BF16_WGMMA_SPLIT_WIDE_MAX_M 64
#define TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_KB 2
/* Short rows are not split: at K = 576 (9 k-blocks) no factor beat the unsplit 128 x 128 tile on
 * the SmolLM2 shapes at M = 16-512 (same sweep: gate/up M = 128 8.9 us unsplit, 9.3-9.5 split);
 * at K = 1536 the split gained (down M = 512 15.8 -> 11.5 us). */
#define TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_K 1024
/* Rung 03 is launched with programmatic dependent launch (its launch and barrier setup overlap
 * the previous kernel) for K <= WGMMA_PDL_MAX_K. Session 3 run 5 (H200, stream timing, PDL off ->
 * on, us): SmolLM2 (K <= 1536) QKV M = 512 / 2048 6.98 -> 5.66 / 7.99 -> 6.25, O 6.96 -> 5.59 /
 * 7.28 -> 6.14, gate/up M = 64 / 128 / 512 / 2048 7.29 -> 5.82 / 7.35 -> 5.85 / 7.50 -> 6.08 /
 * 15.82 -> 14.12, down M = 2048 11.77 -> 10.85, LM head M = 16 / 128 23.99 -> 21.88 / 22.20 -> 20.20;
 * Llama-3-8B (K >= 4096) mixed: gate/up M = 16-128 +4-6% (71.9 -> 76.3 at M = 16), QKV M = 128 +3%,
 * M = 512 -5%, down and M = 2048 within 1%. */
#define TINFER_GEMM_BF16_WGMMA_PDL_MAX_K 2048
/* When the 128 x 256 tiles are too few (the FILL_DIV rule above), rung 04 (split-K mma.sync) takes
 * the shape only for K <= TINFER_GEMM_BF16_SPLIT_MAX_K; longer K goes to rung 03, which splits K
 * itself. Rung 03's split sweep (gemm/tc/README.md "Split-K over a cluster"): Llama-3-8B down M =
 * 32 / 64 / 128 / 512 41 / 42 / 45 / 94 us against rung 04's 54 / 60 / 72 / 186, QKV M = 16-64 23
 * vs 24-25; SmolLM2 (K <= 1536) at M = 128 / 512 rung 04 stays ahead or level (down 7.6 vs 11.2 us,
 * QKV 6.6 vs 8.7). Before rung 03 could split, rung 04 also took long K up to M = 64. */
#define TINFER_GEMM_BF16_SPLIT_MAX_K 2048
/* Rung 04 keeps a few-tile shape only up to TINFER_GEMM_BF16_SPLIT_MAX_TILES tiles of 128 x 256;
 * beyond that rung 03 (split-K over a cluster where tiles are few) is faster. Since rung 03 stores
 * plain BF16 tiles in whole lines (H200 2026-12-02 18:45 UTC, gemm/tc/README.md "The lesson
 * is the epilogue"): SmolLM2 at M = 128 QKV (4 tiles) 6.7 us on rung 04 vs 7.1 on rung 03, O (3)
 * 6.4 vs 6.6; gate/up (12) 9.3 vs 7.4; at M = 512 QKV (16) 9.1 vs 7.2, O (12) 8.1 vs 7.1. Longer
 * rows (down, K = 1536) kept rung 04 at every tile count until rung 03's split reduction pushed its
 * partial sums (session 4, H200 2026-12-03, graph timing): down M = 512 (12 tiles) rung 03 7.67 us
 * vs rung 04 9.60 (pulled: 9.34); M = 128 (3 tiles) rung 04 still ahead, 6.15 vs 6.68. */
#define TINFER_GEMM_BF16_SPLIT_MAX_TILES 8

/* Rung 05 (the skinny wgmma kernel, 05_wgmma_skinny.cu) splits K over a cluster of f CTAs per
 * tile: the largest f (2..8) whose CTAs stay within TINFER_GEMM_BF16_SKINNY_FILL_NUM / _DEN of the
 * SMs, with at least TINFER_GEMM_BF16_SKINNY_MIN_KB k-blocks (of 64) each and every cluster
 * co-resident; none when even f = 2 passes that. A weight stream runs best on about three
 * quarters of the SMs, one CTA each (more CTAs than SMs put two on some SMs). H200 session 5
 * (run 4, stream timing, PDL on, us), Llama-3-8B at M = 16, factor 1 / 2 / 3 / 4 / 6 / 8: QKV (48
 * tiles) 18.3 / 16.3 / 21.7 / 19.2 / 21.5 / 21.8 (cuBLAS 16.9); down (32 tiles) 55.4 / 35.0 / 33.2 /
 * 46.3 / 36.0 / 39.3 (cuBLAS 33.5); at M = 32 the same picks (QKV 17.8, down 35.0).
 * TINFER_GEMM_BF16_SKINNY_KSUB / _KSUB_SPLIT: 64-wide k-blocks per pipeline stage of the persistent
 * / split kernel (two: each W row read as 256-byte runs). Same run, 1 vs 2 vs 4: SmolLM2 LM head
 * (persistent) M = 1 / 16 / 32 16.8 / 18.1 / 19.5 vs 16.6 / 17.5 / 19.0 vs 18.9 / 20.1 / 19.0,
 * Llama gate/up M = 32 64.1 vs 62.7 vs 62.7; split: QKV M = 16 factor 2 16.3 vs 17.2 vs 17.2, down
 * factor 3 33.2 vs 34.7 vs 34.8. */
#define TINFER_GEMM_BF16_SKINNY_KSUB 2
#define TINFER_GEMM_BF16_SKINNY_KSUB_SPLIT 1
#define TINFER_GEMM_BF16_SKINNY_FILL_NUM 3
#define TINFER_GEMM_BF16_SKINNY_FILL_DEN 4
#define TINFER_GEMM_BF16_SKINNY_MIN_KB 2
/* The GEMM path runs rung 05 on sm_90 for M <= TINFER_GEMM_BF16_SKINNY_MAX_M when the weight has at
 * least TINFER_GEMM_BF16_SKINNY_MIN_W bytes (the LM head from 9 tokens up: below, GEMV rung 08
 * takes it, TINFER_GEMV_BF16_STREAM_MAX_M). Session 5 (H200, 2026-12-03, stream timing, us,
 * rung 05 vs the previous pick, gemm/tc/README.md "Rung 05"): SmolLM2 LM head M = 1 / 8 / 16 / 32
 * 16.7 / 17.0 / 17.6 / 19.0 vs 17.9 / 20.3 / 21.9 / 21.4 (cuBLAS 17.6 / 17.9 / 18.2 / 18.9);
 * Llama-3-8B M = 16 / 32: QKV 16.4 / 17.8 vs 21.9 / 21.4, gate/up 61.3 / 62.8 vs 70.3 / 68.3, down
 * 32.8 / 34.9 vs 39.7 / 38.8; at M = 64 it lost to rung 03 on gate/up, down and the LM head (66.2
 * vs 64.9, 39.8 vs 38.1, 21.5 vs 20.8) and won only on QKV (20.9 vs 21.5); on every SmolLM2 layer
 * weight (<= 3.5 MB) the GEMV and rungs 03 / 04 are 10-40% faster at every M. */
#define TINFER_GEMM_BF16_SKINNY_MAX_M 32
/* Rung 06 (06_wgmma_tiny.cu, one 64-output tile (32 with SwiGLU) x 16, 32 or 64 tokens per CTA,
 * every k-block in shared memory) takes a call on sm_90 above TINFER_GEMM_BF16_GEMV_MAX_M tokens
 * when its CTAs (row tiles x token tiles x split factor) number at most
 * TINFER_GEMM_BF16_TINY_CTAS16_PER_SM x SMs with 16-token tiles (unsplit ones
 * _CTAS16_UNSPLIT_PER_SM x SMs), else (plain outputs of a K one
 * CTA holds, TINFER_GEMM_BF16_TINY_PLAIN64_FIRST) at most _CTAS64_PER_SM x SMs with 64-token
 * tiles, else at most _CTAS32_PER_SM x SMs with 32-token tiles, else at most _CTAS64_PER_SM x SMs
 * with 64-token tiles, each capped at the CTAs whose shared memory fits an SM
 * (tinfer_gemm_bf16_tiny_pick); the GEMM path, and rung 06, go
 * before GEMV rung 08's 16 / 64-token ground. H200 session 10 run 6 (graph timing, us, SmolLM2,
 * rung 06 at 16 / 32 tokens per CTA against the pick then and the faster of cuBLAS / cublasLt):
 * QKV M = 16 2.65 (2.98, 3.35), 32 2.76 (3.35, 3.32), 64 3.04 (3.78, 3.37), 128 3.01 (4.36, 3.46),
 * 256 3.28 at 32 (4.44, 3.64), 512 4.46 at 32 (4.47, 3.92); O M = 32 2.72 (3.14, 3.19), 64 2.95
 * (3.47, 3.30), 128 3.11 (4.30, 3.38), 256 3.35 (4.36, 3.43), 512 3.59 at 32 (4.43, 3.63); gate/up
 * M = 16 3.14 (3.59, 3.76), 32 3.36 (4.20, 3.79), 64 3.57 at 32 (4.46, 3.87), 128 4.26 at 32 (4.61,
 * 4.03). Past one CTA per SM at 16 tokens (QKV M = 256: 4.09 vs 3.28 at 32) or two at 32 (gate/up
 * M = 256 7.73, 512 13.4) it loses. 64-token tiles (session 11 runs 1-2, while the consumers
 * still waited at every k-block) lost to 32-token ones wherever both fit (QKV M = 512 4.53 vs 4.46,
 * O 512 4.02 vs 3.62, gate/up M = 128 4.42 vs 4.26), but took SmolLM2 down at 256 tokens, split 3
 * (5.32 us; the pick before, rung 04, 10.6; cuBLAS 4.93); session 13: below.
 * TINFER_GEMM_BF16_TINY_CLUSTER: token tiles per cluster sharing the W tile by TMA multicast; 1
 * (none): multicast lost wherever measured (session 10: QKV M = 32 over 2 CTAs 3.03 vs 2.76,
 * M = 512 over 8 5.90 vs 4.46; session 11 run 2, 32-token tiles over 2 / 4: QKV M = 512
 * 5.44 / 5.64 vs 4.46, gate/up M = 128 5.06 / 5.26 vs 4.26). */
/* Since rung 06's consumers stopped waiting at every k-block (session 13, H200, graph us, the
 * faster of cuBLAS / cublasLt in brackets) a 64-token tile, one CTA per SM, beats two 32-token
 * tiles per SM where its CTAs fit one wave and need no split (they read the weight tile half as
 * often): SmolLM2 QKV M = 256 / 512 3.21 / 3.98 vs 3.24 / 4.24 (3.66 / 3.93), gate/up M = 64 / 128
 * 3.35 / 3.90 vs 3.39 / 4.09 (3.88 / 4.07), O M = 512 3.48 vs 3.48, O M = 256 3.27 vs 3.22; not
 * with SwiGLU (gate/up fused M = 64 / 128 3.87 / 4.61 vs 3.65 / 4.43). 1: that order; 0: 32-token
 * tiles first. */
#define TINFER_GEMM_BF16_TINY_PLAIN64_FIRST 1
/* Rung 06's consumer warpgroups (1 or 2; with 2, each computes every other k-block into its own
 * accumulators, 06_wgmma_tiny.cu): TINFER_GEMM_BF16_TINY_WG16 for the pick's 16-token tiles (a
 * slot per k-block), TINFER_GEMM_BF16_TINY_WG for its 32- and 64-token ones and for calls that
 * leave the warpgroups but not the tile to the pick; the knob --gemm-tiny-wg overrides
 * both. H200 session 16 call 1 (graph / stream us; the pick then: 16-token tiles, one warpgroup,
 * a K that fits split 3): two warpgroups unsplit, SmolLM2 QKV M = 16 / 32 / 64 / 128 2.19 / 2.45 /
 * 2.63 / 2.74 (3.06 / 3.01 / 3.07 / 3.30) against the pick's 2.37 / 2.68 / 2.76 / 2.88 (3.29 /
 * 3.17 / 3.52 / 3.33; at 128 unsplit), O M = 16 / 32 / 64 / 128 2.13 / 2.29 / 2.53 / 2.68 (2.89 /
 * 2.89 / 2.95 / 3.11) against 2.26 / 2.37 / 2.73 / 3.13 (3.13 / 3.15 / 3.22 / 3.69), gate/up M =
 * 16 / 32 2.76 / 2.99 (3.31 / 3.45) against 2.71 / 3.06 (3.56 / 3.48); with two warpgroups the
 * unsplit tile beat split 2 in 9 of those 10 cells (QKV M = 64: 2.63 vs 2.47). Down (K = 1536,
 * split as now) M = 16 / 32 / 64 2.71 / 3.03 / 2.94 against 2.83 / 3.01 / 3.03. At 32 / 64 tokens
 * two warpgroups move the picked cells by at most 3% either way (QKV M = 512 4.06 vs 3.98, gate/up
 * M = 128 3.99 vs 3.89, down M = 128 3.47 vs 3.55): one stays. */
#define TINFER_GEMM_BF16_TINY_WG 1
#define TINFER_GEMM_BF16_TINY_WG16 2
/* Where no tier above takes a call: plain outputs, K past one CTA's 64-token slots (> 832) and at
 * most TINFER_GEMM_BF16_TINY_RING_MAX_K, 64-token tiles filling at most one wave (one CTA per SM)
 * -> rung 06 unsplit, each CTA streaming all of K through a ring of
 * TINFER_GEMM_BF16_TINY_RING_STAGES stages read by TINFER_GEMM_BF16_TINY_RING_WG consumer
 * warpgroups (tinfer_gemm_bf16_tiny_pick). H200 session 16 call 1 (graph / stream us): SmolLM2
 * down M = 512 (72 CTAs) 6.47 / 6.65 against the pick before (rung 03, 128 x 128 split 4) 7.55 /
 * 8.10, rung 06's best one-warpgroup form (split 3 through 4 stages) 7.24 / 7.76, the same
 * 12-stage ring with one warpgroup 9.63 / 9.83, cuBLAS 5.22 / 6.24. Down takes it for 449..896
 * tokens (below, 64-token tiles split 2 fit one wave); measured at 512 only. K is capped at 2048:
 * above the one K measured (1536), below Llama-3-8B's K = 4096 / 14336 (not measured through the
 * ring at 16-64 tokens). Plain shapes of K 833-2048 that fit one wave take the ring unmeasured
 * (gemm/bench_bf16/ROUTES.md: none of the model shapes but SmolLM2 down). */
#define TINFER_GEMM_BF16_TINY_RING_STAGES 12
#define TINFER_GEMM_BF16_TINY_RING_WG 2
#define TINFER_GEMM_BF16_TINY_RING_MAX_K 2048
#define TINFER_GEMM_BF16_TINY_CTAS16_PER_SM 1
/* Unsplit 16-token tiles may number up to this many CTAs per SM (the split ones
 * TINFER_GEMM_BF16_TINY_CTAS16_PER_SM): inside a decode step, among kernels that overlap through
 * programmatic dependent launch, two per SM beat one 32-token tile per SM where the standalone
 * graph timings above said the opposite. H100, tinfer-bench (SmolLM2, random weights, three runs
 * each, alternating with one per SM): tg128@b64-argmax 80,270-80,330 tok/s against
 * 77,710-78,050 (the fused gate/up at 64 tokens in 192 CTAs instead of 96 of 32 tokens; the
 * step's kernels 761 against 783 us, probe-timeline); tg128@b32-argmax 43,630-43,740 against
 * 43,530-43,690, pp128 115,200-115,900 against 115,900-116,400, pp256 185,500-186,000 against
 * 183,900-184,500 (QKV and O in 16-token tiles). With split tiles two per SM as well (down at 64
 * tokens split 4, 144 CTAs) 79,100-79,500: down took 5.28 us a call against 3.75 split 3. */
#define TINFER_GEMM_BF16_TINY_CTAS16_UNSPLIT_PER_SM 2
#define TINFER_GEMM_BF16_TINY_CTAS32_PER_SM 2
#define TINFER_GEMM_BF16_TINY_CTAS64_PER_SM 1
#define TINFER_GEMM_BF16_TINY_CLUSTER 1
/* Rung 06 splits K over a cluster of up to this many CTAs when one CTA cannot hold all of it
 * (SmolLM2 down, K = 1536: 24 k-blocks): 16-token tiles as widely as the CTA count of the rule
 * above allows (the split's CTAs count), 32- and 64-token tiles as little. H200 session 10 run 8,
 * SmolLM2 down, graph us, 16-token tiles split 2 / 3 / 4: M = 16 3.57 / 3.25 / 3.08, M = 32 3.63 /
 * 3.44 / 3.33, M = 64 4.00 / 3.48 / 3.71 (144 CTAs); the pick then (decode GEMV, rung 04) 4.64 /
 * 5.46 / 5.33 and the faster of cuBLAS / cublasLt 4.79 / 4.76 / 4.79. Session 13 (consumers no
 * longer waiting at every k-block): M = 16 2.96 / 2.90 / 2.89, M = 64 3.47 / 3.24 / 3.48; 32-token
 * tiles at M = 128 split 2 / 3 / 4 3.63 / 3.72 / 3.90, 64-token tiles at M = 256 split 2 / 3 4.24 /
 * 4.67 (cuBLAS 4.85 / 4.94). */
#define TINFER_GEMM_BF16_TINY_MAX_SPLIT 4
/* A K that one CTA holds is split all the same over TINFER_GEMM_BF16_TINY_SHORT_SPLIT CTAs when
 * the pick takes 16-token tiles with one consumer warpgroup (TINFER_GEMM_BF16_TINY_WG16 = 1), K
 * has at least two k-blocks per rank and the split's CTAs fit
 * TINFER_GEMM_BF16_TINY_SHORT_SPLIT_PER_SM per SM: H200 session 11 run 2, graph us, unsplit ->
 * split 3 (K = 576): SmolLM2 QKV M = 16 / 64 2.67 / 3.09 -> 2.60 / 2.99, O M = 16 / 32 / 64 2.61 /
 * 2.79 / 3.02 -> 2.42 / 2.61 / 2.90, gate/up M = 16 3.24 -> 2.95; where the CTAs are more (gate/up
 * M = 64: 576) it loses (5.55 vs 3.55 at 32 tokens). */
#define TINFER_GEMM_BF16_TINY_SHORT_SPLIT 3
#define TINFER_GEMM_BF16_TINY_SHORT_SPLIT_PER_SM 2
#define TINFER_GEMM_BF16_SKINNY_MIN_W ((int64_t)16 << 20)

/* AUTO takes the decode GEMV path when M <= TINFER_GEMM_BF16_GEMV_MAX_M, or when M <=
 * TINFER_GEMM_BF16_SMALL_W_MAX_M and the GEMV's weight traffic, the weight read once per 16-token
 * pass (ceil(M / 16) * N * K * 2 bytes), is at most TINFER_GEMM_BF16_SMALL_W_TRAFFIC: a small
 * weight re-read once per 16 tokens costs less than the GEMM's fixed latency. The traffic form
 * (session 4, H200 2026-12-03, stream timing): SmolLM2 gate/up (3.5 MB) at M = 32, two passes,
 * 6.73 us on the GEMV vs 5.76 on rung 03 (cublasLt 8.28), while at M = 16 (one pass) the GEMV
 * keeps its lead (4.5 vs 5.7-7.2) and down (1.8 MB) at M = 32 too (5.4 vs 9+); the old rule,
 * weight <= 8 MB, sent gate/up at M = 32 to the GEMV. Chosen from
 * the sweep in gemm/tc/README.md ("How a call is routed", H200, 2026-12-02): at M = 32 the GEMV
 * beat the wgmma kernel on every SmolLM2 shape but the 56 MB LM head, and lost on Llama-3-8B;
 * at M = 64 it still won on the SmolLM2 shapes up to 3.5 MB against wgmma, but not against the
 * split-K rung 04 that now takes those shapes (rung 04 forced vs the GEMV at M = 64, split-K run,
 * gemm/tc/README.md "Rung 04": gate/up 7.4 vs 10.9 us, down 6.6 vs 7.8, QKV 5.7 vs 5.6, O 5.5 vs
 * 5.3; at M = 32 the GEMV still wins or ties: gate/up 6.9 vs 7.0, QKV 5.0 vs 5.5). Hence 32.
 * GEMV_MAX_M: 8 since rung 03 splits K (gemm/tc/README.md, "Split-K over a cluster"): at
 * M = 16 the GEMV's 16-token pass (3 stages) lost to the split wgmma kernel on the large weights:
 * Llama-3-8B gate/up 80.1 vs 71.7 us, down 43.3 vs 40.2, SmolLM2 LM head 28.7 vs 22.9; QKV 22.0
 * vs 22.9. Up to M = 8 the GEMV stays within 7% of its M = 1 time. */
#define TINFER_GEMM_BF16_GEMV_MAX_M 8
#define TINFER_GEMM_BF16_SMALL_W_MAX_M 32
#define TINFER_GEMM_BF16_SMALL_W_TRAFFIC ((int64_t)4 << 20)

/* Which decode rung the GEMV path runs (same sweep, fourth H200 run): rung 06 (2-block cluster
 * split-K) for long rows, K >= TINFER_GEMV_BF16_CLUSTER_MIN_K (Llama-3-8B down, K = 14336:
 * 32.2 vs 35.0 us at M = 1, 36.3 vs 43.2 at M = 8; it lost at K = 4096; re-measured with PDL and
 * X staged at 4 blocks/SM, H200 2026-12-02 18:20 UTC: 31.2 vs 30.9 us at M = 1, 32.8 vs 33.5 at
 * M = 8, 43.1 vs 51.4 at M = 16, so the cut stays); rung 08 (rung 04's register-fed mma on a
 * persistent grid) for short, many rows, K <= TINFER_GEMV_BF16_SHORT_K and N >= TINFER_GEMV_BF16_WIDE_N
 * (SmolLM2 LM head 49152 x 576; rung 04 there: 18.6 vs 26.1 us for rung 05 at M = 1: 05's 256-wide K
 * tiles leave a 576 row only three, mostly empty pipeline stages), which the dispatcher sends to
 * the GEMV path up to TINFER_GEMV_BF16_STREAM_MAX_M tokens, and for any short row (K <=
 * TINFER_GEMV_BF16_SHORT_K) up to that many tokens; rung 05 everywhere else. */
#define TINFER_GEMV_BF16_CLUSTER_MIN_K 8192
#define TINFER_GEMV_BF16_SHORT_K 1024
#define TINFER_GEMV_BF16_WIDE_N 16384
/* Rung 08 also takes every other short row (K <= TINFER_GEMV_BF16_SHORT_K) up to
 * TINFER_GEMV_BF16_STREAM_MAX_M tokens. H200 session 9 run 3 (gemm/decode/README.md "Rung 08", us):
 * LM head at M = 1 / 8 / 16, stream timing, rung 08 15.47 / 15.65 / 17.77 against rung 05 (the
 * GEMM path's pick) 17.40 / 17.70 / 18.19 and cuBLAS 17.20 / 17.65 / 17.90; SmolLM2 QKV / O /
 * gate/up, graph timing (device time; stream timing is the host's launch cost there, 3-4 us
 * whichever rung), rung 08 at M = 1 1.46 / 1.35 / 1.91, M = 8 1.71 / 1.41 / 2.12, M = 16 3.05 /
 * 2.49 / 3.60 against GEMV rung 05 2.46 / 2.42 / 3.18, 2.60 / 2.61 / 3.36, 3.11 / 3.02 / 4.46 and
 * cublasLt 3.3-3.7. A weight this small is loaded whole before the PDL wait (args.w_static). At
 * M = 32 (two passes of 16, or the 32-token pass it no longer has) it loses: QKV 5.41 vs 3.53. */
#define TINFER_GEMV_BF16_STREAM_MAX_M 16
/* ... and past 16 tokens, in passes of 16, while the weight read once per pass stays small. Same
 * sweep (run 4, us, stream / graph, rung 08 against the previous pick, cublasLt graph): SmolLM2
 * QKV M = 32 4.54 / 3.39 vs 4.54 / 3.63 (3.35), M = 64 4.54 / 3.79 vs 4.91 / 4.24 (3.38); O M = 32
 * 4.65 / 3.02 vs 4.86 / 3.06 (3.24), M = 64 4.53 / 3.48 vs 5.08 / 4.05 (3.30); gate/up (3.5 MB)
 * M = 32 4.78 / 4.20 vs 4.90 / 4.57 (3.79), but M = 64 (four passes, 14 MB) 6.07 / 5.66 vs 4.80 /
 * 4.46; LM head M = 32 27.55 vs 18.93. */
#define TINFER_GEMV_BF16_STREAM_PASS_MAX_M 64
#define TINFER_GEMV_BF16_STREAM_PASS_TRAFFIC ((int64_t)8 << 20)
/* Rung 07 (persistent, X in shared memory, up to 64 tokens per pass) is not dispatched: it lost
 * to 05/06/04 and to the GEMM path on every shape of its H200 sweep (07_persistent.cu header). */
/* Rung 09 (TMA-fed ring, one block per SM owning <= 64 whole columns) takes the GEMV path's calls
 * of TINFER_GEMV_BF16_BULK_MIN_M.._MAX_M tokens, plain or residual (not SwiGLU: not measured),
 * with K >= TINFER_GEMV_BF16_BULK_MIN_K and N <= TINFER_GEMV_BF16_BULK_COLS_PER_SM x SMs
 * (Llama-3-8B QKV and down). H200 session 15 call 7 (`bulk`, stream / graph us, rung 09 against the previous
 * pick): QKV M = 4 13.89 / 12.80 vs rung 05 14.80 / 13.85, M = 8 14.16 / 13.03 vs 15.33 / 14.48;
 * down M = 4 29.95 / 29.55 vs rung 06 30.73 / 29.82, M = 8 30.00 / 29.63 vs 31.56 / 30.79. At
 * M = 1-2 they are level (QKV M = 1 13.56 vs 13.42, M = 2 13.59 vs 13.56; down M = 1 30.13 vs
 * 29.56, M = 2 30.10 vs 29.93), so rungs 05 / 06 keep them; M = 3 was not measured. gate/up (N =
 * 28672: 448 blocks) 62-64 vs 55-60. */
#define TINFER_GEMV_BF16_BULK_MIN_M 4
#define TINFER_GEMV_BF16_BULK_MAX_M 8
#define TINFER_GEMV_BF16_BULK_MIN_K 4096
#define TINFER_GEMV_BF16_BULK_COLS_PER_SM 64

/* Runs one decode rung. Any M >= 1 (rungs 02-05 take up to 16 tokens per pass over W). In the
 * ladder library (gemm/decode/gemv_ladder.cu; tests and tinfer-bench-gemm link it), not in
 * libtinfer, which holds only the rungs the dispatcher routes to. */
tinfer_status tinfer_gemv_bf16(tinfer_gemv_bf16_kernel kernel, const tinfer_gemm_bf16_args *a,
                               cudaStream_t stream, tinfer_err *err);

/* Runs one prefill rung. WGMMA_WS returns TINFER_ERR_UNSUPPORTED on a GPU other than sm_90. */
tinfer_status tinfer_gemm_bf16_tc(tinfer_gemm_bf16_kernel kernel, const tinfer_gemm_bf16_args *a,
                                  cudaStream_t stream, tinfer_err *err);

/* The one entry point the runtime calls. path = AUTO normally; tests force either path. */
tinfer_status tinfer_gemm_bf16(const tinfer_gemm_bf16_args *a, tinfer_gemm_bf16_path path,
                               cudaStream_t stream, tinfer_err *err);

/* RMSNorm fused into the GEMV: Y = epi(Xn · W^T) with Xn[m, k] = bf16(bf16f(x[m, k] * rs_m) *
 * norm_w[k]) (rounded as ops/cuda/elementwise.cu's RMSNorm rounds), rs_m = 1 / sqrt(mean_k x[m,
 * k]^2 + eps), x F32 [M, ldx]; a->X and a->ldx are not read. Runs where the dispatcher sends the
 * shape to decode rung 08 and M <= 8 (tinfer_gemm_bf16_rmsnorm_ok; the CUDA backend then skips
 * the RMSNorm kernel: one launch fewer per norm); elsewhere TINFER_ERR_UNSUPPORTED. The mean
 * squares are summed in another order than the RMSNorm kernel's, so an element of Xn can differ
 * from that kernel's output by 1 BF16 ulp where rs_m's last bit differs. x and norm_w 16-byte
 * aligned, ldx >= K and a multiple of 4. */
int tinfer_gemm_bf16_rmsnorm_ok(const tinfer_gemm_bf16_args *a);
tinfer_status tinfer_gemm_bf16_rmsnorm(const tinfer_gemm_bf16_args *a, const float *x, int64_t ldx,
                                       const uint16_t *norm_w, float eps, cudaStream_t stream,
                                       tinfer_err *err);

/* Whether tinfer_gemm_bf16 (path AUTO) runs these arguments where the split RMSNorm's fields
 * (nx / rss) pay: a GEMM-path rung other than 03. Every kernel but rung 03 (wgmma_ws, which
 * answers TINFER_ERR_UNSUPPORTED) takes them, but a decode GEMV stores each output from one
 * thread, so a row's sum of squares would take up to one atomic per output (thousands on one
 * address at M = 1), where the tensor-core rungs' epilogues add one per warp and row. */
int tinfer_gemm_bf16_split_norm_ok(const tinfer_gemm_bf16_args *a);

/* Which path AUTO takes for this shape on the current device (for tests and benches). */
tinfer_gemm_bf16_path tinfer_gemm_bf16_choose(int64_t M, int64_t N, int64_t K);

/* The route tinfer_gemm_bf16 takes for a call: its path and the rung on that path, and where the
 * rung is prefill rung 06, the tile its pick takes. */
typedef struct tinfer_gemm_bf16_route {
    tinfer_gemm_bf16_path path; /* GEMV or GEMM (AUTO resolved) */
    int32_t rung;               /* a tinfer_gemv_bf16_kernel on the GEMV path, a tinfer_gemm_bf16_kernel on GEMM */
    /* rung 06's pick: token tile (16 / 32 / 64), split-K factor, ring stages (0: a slot per
     * k-block), consumer warpgroups; all 0 on other rungs, or where the rung was forced on a shape
     * its pick does not take */
    int32_t tiny_bt, tiny_split, tiny_stages, tiny_wgs;
} tinfer_gemm_bf16_route;

/* The route of a call with these arguments and path argument on a device of compute capability
 * cc_major with n_sm SMs (0, 0: no device): the rules in gemm/dispatch.cu, TINFER_GEMM_FORCE
 * applied as tinfer_gemm_bf16 applies it. Host arithmetic, no device call, no argument check
 * beyond a NULL a (path AUTO, rung 0 returned): tinfer_gemm_bf16 runs exactly this route on the
 * current device. */
tinfer_gemm_bf16_route tinfer_gemm_bf16_route_for(const tinfer_gemm_bf16_args *a, tinfer_gemm_bf16_path path,
                                                  int cc_major, int n_sm);
/* A short name of a route ("gemv 08", "gemm 03", "gemm 06 t16 k/4 wg2", "gemm 06 t64 ring12 wg2";
 * "none" for NULL or a route of path AUTO) written into buf (n bytes, truncated to fit); returns
 * buf ("" when buf is NULL or n is 0). */
const char *tinfer_gemm_bf16_route_name(const tinfer_gemm_bf16_route *r, char *buf, size_t n);

/* Which decode rung the GEMV path runs for these arguments on a device of compute capability
 * cc_major with n_sm SMs (host arithmetic, no device call; for tests and benches). */
tinfer_gemv_bf16_kernel tinfer_gemv_bf16_pick(const tinfer_gemm_bf16_args *a, int cc_major, int n_sm);

/* Shared argument check used by every launcher (exposed for tests). */
tinfer_status tinfer_gemm_bf16_check(const tinfer_gemm_bf16_args *a, const char *who,
                                     tinfer_err *err);

#ifdef __cplusplus
}
#endif
#endif

/*
 * gemm_bf16_tc_internal.h — launchers of the prefill tensor-core rungs (gemm/tc/0?_*.cu),
 * called by tinfer_gemm_bf16_tc (dispatch.cu) after the shared argument check.
 */
#ifndef TINFER_GEMM_BF16_TC_INTERNAL_H
#define TINFER_GEMM_BF16_TC_INTERNAL_H

#include "gemm/bf16.h"
#include "gemm/cuda/tma.h"

#include <cuda.h>
#include <string.h>

tinfer_status tinfer_gemm_bf16_wmma(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err);
/* Rung 2 (02_mma_sync.cu). cfg: TINFER_GEMM_BF16_MMA_CFG_AUTO (pick by tile count) or a fixed tile
 * config 0 (64x64), 1 (128x64), 2 (128x128); tests and the bench force each config. The caller
 * has run tinfer_gemm_bf16_check. */
#define TINFER_GEMM_BF16_MMA_CFG_AUTO (-1)
tinfer_status tinfer_gemm_bf16_mma(const tinfer_gemm_bf16_args *a, int32_t cfg, cudaStream_t s, tinfer_err *err);
/* Rung 4 (same file): rung 2 with K split over a thread-block cluster of cs = 2, 4 or 8 blocks
 * (sm_90; UNSUPPORTED elsewhere), reduced through distributed shared memory; cs = 1 is rung 2;
 * cs = TINFER_GEMM_BF16_MMA_SPLIT_AUTO picks from the tile count (bf16.h, TINFER_GEMM_BF16_SPLITK_*)
 * and falls back to rung 2 off sm_90. cfg as above. The caller has run tinfer_gemm_bf16_check. */
#define TINFER_GEMM_BF16_MMA_SPLIT_AUTO 0
tinfer_status tinfer_gemm_bf16_mma_split(const tinfer_gemm_bf16_args *a, int32_t cfg, int32_t cs, cudaStream_t s,
                                         tinfer_err *err);

/* The wgmma kernel's CTA tile (WS_BM x BN in 03_wgmma_ws.cuh, BN = 256 or 128; keep equal): the
 * dispatcher counts its largest tiles to decide whether it fills the GPU. */
#define TINFER_GEMM_BF16_WGMMA_TILE_M 128
#define TINFER_GEMM_BF16_WGMMA_TILE_N 256

/* Rung 3 with its tile configuration picked per shape (tinfer_gemm_bf16_wgmma_pick_cfg). */
tinfer_status tinfer_gemm_bf16_wgmma_ws(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err);
/* Rung 3 tile configurations: 128 x 256, 128 x 192, 128 x 144, 128 x 128 and 128 x 72 tiles shared by both
 * consumer warpgroups (ids = the tile width; 72, 96: no split-K, no SwiGLU; 192: no split-K), 128 x 128 tiles owned by
 * one consumer each (ping-pong), or AUTO. */
#define TINFER_GEMM_BF16_WGMMA_CFG_AUTO 0
#define TINFER_GEMM_BF16_WGMMA_CFG_PP128 1
#define TINFER_GEMM_BF16_WGMMA_CFG_128 128
#define TINFER_GEMM_BF16_WGMMA_CFG_144 144
#define TINFER_GEMM_BF16_WGMMA_CFG_72 72
/* 128 x 96 tiles: plain outputs, no split-K (as 72) */
#define TINFER_GEMM_BF16_WGMMA_CFG_96 96
/* 128 x 72 tiles walked in pairs by clusters of 2 CTAs that multicast their X tile halves */
#define TINFER_GEMM_BF16_WGMMA_CFG_72MC 2
#define TINFER_GEMM_BF16_WGMMA_CFG_256 256
/* 128 x 192 tiles: no split-K (TINFER_GEMM_BF16_WGMMA_192 in bf16.h) */
#define TINFER_GEMM_BF16_WGMMA_CFG_192 192
/* The split kernel's tile widths, and each one's row in the co-resident cluster tables. */
#define TINFER_GEMM_BF16_WGMMA_WIDTHS 3
static inline int tinfer_gemm_bf16_wgmma_width_index(int32_t bn) { return bn == 256 ? 1 : bn == 144 ? 2 : 0; }
tinfer_status tinfer_gemm_bf16_wgmma_ws_cfg(const tinfer_gemm_bf16_args *a, int32_t cfg, cudaStream_t s, tinfer_err *err);
/* Rung 3 with tile configuration cfg and split-K factor ksplit: 1 = none, 2..8 = a cluster of
 * that many CTAs per tile sharing its k-blocks (lowered so every CTA has some; not with PP128);
 * cfg AUTO with ksplit 0 picks both (tinfer_gemm_bf16_wgmma_pick_split), AUTO alone the width,
 * 0 alone no split. _cfg: ksplit 1 for a forced cfg, both picked with AUTO. */
tinfer_status tinfer_gemm_bf16_wgmma_ws_split(const tinfer_gemm_bf16_args *a, int32_t cfg, int32_t ksplit, cudaStream_t s,
                                              tinfer_err *err);
/* The pick: clusters[w][ks] = co-resident clusters of ks split CTAs of the width with index w
 * (tinfer_gemm_bf16_wgmma_width_index). */
void tinfer_gemm_bf16_wgmma_pick_split(int64_t M, int64_t nout, int64_t K, int32_t swiglu, int32_t n_sm,
                                       const int32_t clusters[TINFER_GEMM_BF16_WGMMA_WIDTHS][9], int32_t *cfg,
                                       int32_t *ksplit);
/* How many clusters of ksplit CTAs of the split kernel (cfg 128, 144 or 256) the current device holds at once. */
tinfer_status tinfer_gemm_bf16_wgmma_max_clusters(int32_t cfg, int32_t ksplit, int32_t *n, tinfer_err *err);
/* The configuration the AUTO pick takes for M x N' outputs on n_sm SMs (for tests, benches). */
int32_t tinfer_gemm_bf16_wgmma_pick_cfg(int64_t M, int64_t nout, int32_t swiglu, int32_t n_sm);
/* The narrow width the pick takes for this shape, 72 or 96, or 0 (before the split rule; bf16.h,
 * TINFER_GEMM_BF16_WGMMA_72_MAX_K, TINFER_GEMM_BF16_WGMMA_96). */
int32_t tinfer_gemm_bf16_wgmma_narrow(int64_t M, int64_t nout, int64_t K, int32_t swiglu, int32_t n_sm);

/* Split-K reduction of rungs 03 and 05: st.async onto the owner's mbarrier (default), or DSMEM
 * stores and a second cluster barrier (--gemm-wgmma-splitred barrier). */
bool tinfer_gemm_bf16_split_asyncred(void);
/* Whether a launch at this K uses programmatic dependent launch (rungs 02-05 on sm_90;
 * TINFER_GEMM_BF16_WGMMA_PDL_MAX_K, --gemm-wgmma-pdl; defined in 03_wgmma_ws.cu). The TMA
 * maps these rungs use are in gemm/cuda/tma.h. */
bool tinfer_gemm_bf16_wgmma_pdl(int64_t K);
/* Whether a launch of rung 02 / 04 with PDL (pdl) issues its first stages' W loads before the
 * wait: args.w_static, unless --gemm-early-w 0. */
bool tinfer_gemm_bf16_early_w(const tinfer_gemm_bf16_args *a, bool pdl);
/* The knob gemm_wgmma_pdl (--gemm-wgmma-pdl) as used: 0 never, 1 always, 2 by K (the default). */
int tinfer_gemm_bf16_wgmma_pdl_mode(void);

/* Launch configuration shared by the cluster / PDL launches of rungs 02-05: grid x threads
 * CTAs with smem dynamic shared bytes on stream s, a cluster of `cluster` CTAs along x when it is
 * above 1, programmatic stream serialization when pdl; attr has room for both attributes. */
static inline void tinfer_tc_launch_cfg(cudaLaunchConfig_t *lc, cudaLaunchAttribute attr[2], dim3 grid,
                                        unsigned threads, size_t smem, cudaStream_t s, int cluster, bool pdl) {
    memset(lc, 0, sizeof *lc);
    lc->gridDim = grid;
    lc->blockDim = dim3(threads);
    lc->dynamicSmemBytes = smem;
    lc->stream = s;
    lc->attrs = attr;
    if (cluster > 1) {
        attr[lc->numAttrs].id = cudaLaunchAttributeClusterDimension;
        attr[lc->numAttrs].val.clusterDim.x = (unsigned)cluster;
        attr[lc->numAttrs].val.clusterDim.y = 1;
        attr[lc->numAttrs].val.clusterDim.z = 1;
        lc->numAttrs++;
    }
    if (pdl) {
        attr[lc->numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[lc->numAttrs].val.programmaticStreamSerializationAllowed = 1;
        lc->numAttrs++;
    }
}
/* How many clusters of `cluster` CTAs of func (threads each, smem dynamic bytes) the current
 * device holds at once (cudaOccupancyMaxActiveClusters over a grid of cluster x SMs). */
static inline cudaError_t tinfer_tc_max_clusters(const void *func, unsigned threads, size_t smem, int cluster, int n_sm,
                                                 int *n) {
    cudaLaunchConfig_t lc;
    cudaLaunchAttribute attr[2];
    tinfer_tc_launch_cfg(&lc, attr, (unsigned)(cluster * n_sm), threads, smem, 0, cluster, false);
    *n = 0;
    return cudaOccupancyMaxActiveClusters(n, func, &lc);
}

/* Rung 6 (06_wgmma_tiny.cu, sm_90a): one 64-output tile (32 with SwiGLU) x bt tokens (16, 32 or
 * 64; 48 for plain outputs, multicast with two warpgroups only, not picked; 0 = the pick's) per
 * CTA, all of its k-blocks in shared memory at once, the W tile multicast over a cluster of `cluster` token tiles
 * (1, 2, 4, 8; 0 = TINFER_GEMM_BF16_TINY_CLUSTER), or K split over a cluster of ksplit CTAs
 * (1..8, without multicast; 0 = the smallest that fits). A K that does not fit is
 * TINFER_ERR_UNSUPPORTED. The caller has run tinfer_gemm_bf16_check. */
tinfer_status tinfer_gemm_bf16_tiny(const tinfer_gemm_bf16_args *a, int32_t bt, int32_t cluster, int32_t ksplit, cudaStream_t s,
                                    tinfer_err *err);
/* Rung 6 with a ring of `stages` k-block slots (1..15; 0 or >= the k-blocks per CTA: a slot per
 * k-block, as tinfer_gemm_bf16_tiny) refilled as the consumers release them: any K in one CTA
 * (ksplit 0 then means 1). With cluster > 1 (no split) the W box of each k-block is multicast to
 * the cluster's token tiles and a slot is refilled once every CTA of the cluster released it. */
tinfer_status tinfer_gemm_bf16_tiny_ring(const tinfer_gemm_bf16_args *a, int32_t bt, int32_t cluster, int32_t ksplit,
                                         int32_t stages, cudaStream_t s, tinfer_err *err);
/* Rung 6 with wgs consumer warpgroups (1 or 2; 0 = the switch --gemm-tiny-wg, else the
 * pick's where bt is 0 and the call takes the pick's tile, split and ring, else
 * TINFER_GEMM_BF16_TINY_WG; one where two do not apply): with two, warpgroup g computes k-blocks
 * g, g + 2, .. into its own accumulators and the two are added before the epilogue. Two warpgroups
 * need an even ring (or none). Otherwise as tinfer_gemm_bf16_tiny_ring. */
tinfer_status tinfer_gemm_bf16_tiny_cfg(const tinfer_gemm_bf16_args *a, int32_t bt, int32_t cluster, int32_t ksplit,
                                        int32_t stages, int32_t wgs, cudaStream_t s, tinfer_err *err);
/* The longest K one rung-6 CTA holds with bt-token tiles (0 for a bt other than 16, 32, 48, 64). */
int64_t tinfer_gemm_bf16_tiny_max_k(int32_t bt);
/* Rung 6's token tile for a call (16, 32 or 64), its split-K factor (*ksplit), ring stages
 * (*stages: 0 = a slot per k-block, else a ring) and consumer warpgroups (*wgs: 1 or 2); each out
 * pointer may be NULL; or 0 where it does not take the call (bf16.h,
 * TINFER_GEMM_BF16_TINY_CTAS16_PER_SM, TINFER_GEMM_BF16_TINY_WG16, TINFER_GEMM_BF16_TINY_RING_STAGES);
 * n_sm: the device's SMs (0: none, no pick). Host only. */
int32_t tinfer_gemm_bf16_tiny_pick(int64_t M, int64_t nout, int64_t K, int32_t swiglu, int32_t n_sm, int32_t *ksplit,
                                   int32_t *stages, int32_t *wgs);
/* Rung 5 (05_wgmma_skinny.cu, sm_90a): the skinny GEMM with the operands swapped, W as wgmma's
 * 64-row A operand and bt tokens as its N (8, 16, 32 or 64; 0 = the smallest that holds M, 64
 * above); ksplit 1..8 = a cluster of that many CTAs per tile sharing its k-blocks (lowered so
 * every CTA has some), 0 = picked (tinfer_gemm_bf16_skinny_pick). The caller has run
 * tinfer_gemm_bf16_check. */
tinfer_status tinfer_gemm_bf16_skinny(const tinfer_gemm_bf16_args *a, int32_t bt, int32_t ksplit, cudaStream_t s,
                                      tinfer_err *err);
/* Rung 5's token tile for M (8, 16, 32 or 64) and its split factor: the largest f in 2..8 whose
 * tiles x f CTAs stay within TINFER_GEMM_BF16_SKINNY_FILL_NUM / _DEN of the SMs, with at least
 * TINFER_GEMM_BF16_SKINNY_MIN_KB k-blocks each and all clusters co-resident (clusters[f]: how many
 * clusters of f CTAs fit at once); 1 when none does. */
int32_t tinfer_gemm_bf16_skinny_bt(int64_t M);
int32_t tinfer_gemm_bf16_skinny_pick(int64_t M, int64_t nout, int64_t K, int32_t swiglu, int32_t n_sm,
                                     const int32_t clusters[9]);

#endif

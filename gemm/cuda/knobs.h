/*
 * knobs.h — the measurement knobs of the GEMM/GEMV rungs: pipeline depths, launch options, forced
 * configurations, each kept to compare against the default the measurements chose.
 *
 * The library reads no environment for them: every knob is TINFER_KNOB_UNSET unless a program
 * sets the knobs with tinfer_gemm_knobs_set (tinfer-bench-gemm does, from its command-line flags:
 * `tinfer-bench-gemm bf16 --help`; test-gemv-pdl does). An unset knob means the default behaviour.
 * The host launchers read the knobs on every call; set them before launching, not while another
 * thread launches. A value outside a knob's range (the comment of each field) makes the calls that
 * read it fail with TINFER_ERR_INVALID_ARG where the comment says so, else it means the default.
 * Internal: not part of include/tinfer.h, so libtinfer.so does not export it.
 */
#ifndef TINFER_GEMM_CUDA_KNOBS_H
#define TINFER_GEMM_CUDA_KNOBS_H

#ifdef __cplusplus
extern "C" {
#endif

#define TINFER_KNOB_UNSET (-1)

/* gemm_wgmma_epi values */
#define TINFER_KNOB_EPI_LINES 0 /* whole-line stores of BF16 tiles (the default) */
#define TINFER_KNOB_EPI_REGS 1  /* register-direct stores */
#define TINFER_KNOB_EPI_TMA 2   /* the TMA-store epilogue where it applies */
/* gemm_wgmma_splitred values */
#define TINFER_KNOB_SPLITRED_ASYNC 0   /* st.async onto the owner's mbarrier (the default) */
#define TINFER_KNOB_SPLITRED_BARRIER 1 /* DSMEM stores and a second cluster barrier */
/* gemm_skinny_stages values */
#define TINFER_KNOB_SKINNY_AUTO                                                                    \
    0 /* the split kernel wide, the persistent kernel deep (the default) */
#define TINFER_KNOB_SKINNY_WIDE 1  /* the wide ring (two CTAs per SM) */
#define TINFER_KNOB_SKINNY_DEEP 2  /* the deep ring (one CTA per SM) */
#define TINFER_KNOB_SKINNY_WIDE1 3 /* the wide ring with a persistent grid of one CTA per SM */

typedef struct tinfer_gemm_knobs {
    /* Decode GEMV rungs (gemm/decode/05_cp_async.cu, 09_bulk.cu; a value out of range fails the
     * call with TINFER_ERR_INVALID_ARG) */
    int gemv_pdl;          /* 0..4: 0 plain launches; PDL with launch_dependents 1 at the start,
                              2 after the main loop (default), 3 never (block exit), 4 once the
                              last k-tile's loads are issued (rungs 04, 05, 06, 08, 09) */
    int gemv05_prefetch;   /* 0..4096: W k-tiles per row prefetched into L2 before the PDL wait
                              (default 0) */
    int gemv05_xstage;     /* 0..2: 0 never stage X; 1 stage from M = 1 (default); 2 from M = 2 */
    int gemv05_stages;     /* 3..8: the X-staged kernel's stage count (default: by occupancy) */
    int gemv05_bps;        /* 3..4: blocks per SM the X-staged kernel's stages are sized for
                              (default: by the grid's fill) */
    int gemv06_split;      /* 2 or 4: rung 06's cluster size (default 2) */
    int gemv_early_w;      /* 0..2: W loads before griddepcontrol.wait for w_static calls: 0 never,
                              1 by the fill rule (default), 2 at any grid size */
    int gemv09_bps;        /* 1..2: rung 09's blocks per SM per grid */
    int gemv09_stages;     /* 0 or 2..16: rung 09's stages (0: auto) */
    int gemv09_early;      /* 0..1: 0 no W before the PDL wait in rung 09 */
    int gemv09_coresident; /* 0..1: 1 rung 09's auto stages sized for two grids per SM */
    /* Tensor-core rungs (gemm/tc/; anything outside a field's values means the default) */
    int gemm_wgmma_epi;      /* TINFER_KNOB_EPI_*: rung 03's BF16 epilogue (default lines) */
    int gemm_wgmma_pdl;      /* 0 never, 1 always: PDL of rungs 03/05/06 (default: rung 03 by K,
                                gemm/bf16.h TINFER_GEMM_BF16_WGMMA_PDL_MAX_K) */
    int gemm_wgmma_mapcache; /* 0: encode every tensor map on every call (default 1: cached) */
    int gemm_wgmma_mc;       /* 1: rung 03's picked 128 x 72 tiles multicast X over clusters of 2
                                (default 0) */
    int gemm_wgmma_splitred; /* TINFER_KNOB_SPLITRED_*: how split-K partial sums reach the owner */
    int gemm_early_w;        /* 0: no early weight loads in rungs 02 / 04 (default 1) */
    int gemm_skinny_stages;  /* TINFER_KNOB_SKINNY_*: rung 05's stage ring */
    int gemm_skinny_ksub;    /* 1, 2 or 4: rung 05's 64-wide k-blocks per stage (default: bf16.h) */
    int gemm_tiny_wg;        /* 1 or 2: rung 06's consumer warpgroups where two apply (default:
                                the pick) */
    int gemm_tiny_wg2_lag;   /* 1: in rings of >= 4 stages each of two consumer warpgroups keeps
                                one k-block's wgmmas in flight (default 0) */
} tinfer_gemm_knobs;

/* Every knob unset (the default behaviour). */
tinfer_gemm_knobs tinfer_gemm_knobs_unset(void);
/* The knobs the launchers read (all unset until tinfer_gemm_knobs_set). */
const tinfer_gemm_knobs *tinfer_gemm_knobs_get(void);
/* Replaces the knobs (a copy); NULL: every knob unset again. */
void tinfer_gemm_knobs_set(const tinfer_gemm_knobs *k);
/* An integer knob's value: dflt when TINFER_KNOB_UNSET, -2 when outside [lo, hi], else v. */
int tinfer_knob_int(int v, int dflt, int lo, int hi);

#ifdef __cplusplus
}
#endif
#endif

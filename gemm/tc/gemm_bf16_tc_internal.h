/*
 * gemm_bf16_tc_internal.h — launchers of the prefill tensor-core rungs (gemm/tc/0?_*.cu),
 * called by tinfer_gemm_bf16_tc (dispatch.cu) after the shared argument check.
 */
#ifndef TINFER_GEMM_BF16_TC_INTERNAL_H
#define TINFER_GEMM_BF16_TC_INTERNAL_H

#include "gemm/bf16.h"

tinfer_status tinfer_gemm_bf16_wmma(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err);
/* Rung 2 (02_mma_sync.cu). cfg: TINFER_GEMM_BF16_MMA_CFG_AUTO (pick by tile count) or a fixed tile
 * config 0 (64x64), 1 (128x64), 2 (128x128); tests and the bench force each config. The caller
 * has run tinfer_gemm_bf16_check. */
#define TINFER_GEMM_BF16_MMA_CFG_AUTO (-1)
tinfer_status tinfer_gemm_bf16_mma(const tinfer_gemm_bf16_args *a, int32_t cfg, cudaStream_t s, tinfer_err *err);

/* The wgmma kernel's CTA tile (WS_BM x WS_BN in 03_wgmma_ws.cu; keep equal): the dispatcher counts
 * its tiles to decide whether it fills the GPU. */
#define TINFER_GEMM_BF16_WGMMA_TILE_M 128
#define TINFER_GEMM_BF16_WGMMA_TILE_N 256

tinfer_status tinfer_gemm_bf16_wgmma_ws(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err);

#endif

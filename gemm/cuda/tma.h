/*
 * tma.h — TMA tensor maps shared by the TMA-fed GEMM kernels of both families (prefill rungs
 * 03, 05, 06 in gemm/tc/, decode rung 09 in gemm/decode/; defined in tma.cu).
 */
#ifndef TINFER_GEMM_CUDA_TMA_H
#define TINFER_GEMM_CUDA_TMA_H

#include "base/error.h"

#include <cuda.h>
#include <stdint.h>

/* A 2-D BF16 tensor map of a row-major [rows, K] matrix (leading dimension ld) with boxes of
 * 64 K-columns x box_rows rows and the 128-byte swizzle, from the per-thread map cache. */
tinfer_status tinfer_gemm_bf16_tma_map(CUtensorMap *map, const uint16_t *base, int64_t rows, int64_t K, int64_t ld,
                                       uint32_t box_rows, const char *what, tinfer_err *err);
/* The same with boxes of box_cols K-columns (<= 256): the 128-byte swizzle for box_cols <= 64,
 * else no swizzle (decode rung 09's 256-column boxes). */
tinfer_status tinfer_gemm_bf16_tma_map_box(CUtensorMap *map, const uint16_t *base, int64_t rows,
                                           int64_t K, int64_t ld, uint32_t box_cols,
                                           uint32_t box_rows, const char *what, tinfer_err *err);

#endif

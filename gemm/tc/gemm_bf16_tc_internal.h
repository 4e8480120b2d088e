/*
 * gemm_bf16_tc_internal.h — launchers of the prefill tensor-core rungs (gemm/tc/0?_*.cu),
 * called by tinfer_gemm_bf16_tc (dispatch.cu) after the shared argument check.
 */
#ifndef TINFER_GEMM_BF16_TC_INTERNAL_H
#define TINFER_GEMM_BF16_TC_INTERNAL_H

#include "gemm/bf16.h"

tinfer_status tinfer_gemm_bf16_wmma(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err);
tinfer_status tinfer_gemm_bf16_wgmma_ws(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err);

#endif

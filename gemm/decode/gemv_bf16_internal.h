/*
 * gemv_bf16_internal.h — launchers of the decode GEMV rungs (gemm/decode/0?_*.cu), called by
 * tinfer_gemv_bf16 (gemv_bf16.cu) after the shared argument check. Not a public header.
 */
#ifndef TINFER_GEMV_BF16_INTERNAL_H
#define TINFER_GEMV_BF16_INTERNAL_H

#include "gemm/bf16.h"

/* Tokens handled per pass over W by rungs 02..04 (one mma n16 pair in rung 04). */
#define TINFER_GEMV_BF16_MT 16

tinfer_status tinfer_gemv_bf16_thread_per_row(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                              tinfer_err *err);
tinfer_status tinfer_gemv_bf16_warp_per_row(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                            tinfer_err *err);
tinfer_status tinfer_gemv_bf16_vector(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                      tinfer_err *err);
tinfer_status tinfer_gemv_bf16_split_k(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                       tinfer_err *err);
tinfer_status tinfer_gemv_bf16_cp_async(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                        tinfer_err *err);
tinfer_status tinfer_gemv_bf16_cluster(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                       tinfer_err *err);

#endif

/*
 * gemv_bf16.cu — tinfer_gemv_bf16_run: runs a decode rung the dispatcher routes to (04, 05, 06,
 * 08, 09; tinfer_gemv_bf16_pick in gemm/dispatch.cu) on arguments already checked. This file is
 * part of libtinfer; the teaching rungs 01-03 and rung 07, which no route reaches, are in the
 * ladder library (gemv_ladder.cu: tinfer_gemv_bf16 runs any rung).
 */
#include "gemm/decode/gemv_bf16_internal.h"

tinfer_status tinfer_gemv_bf16_run(tinfer_gemv_bf16_kernel kernel, const tinfer_gemm_bf16_args *a,
                                   cudaStream_t stream, tinfer_err *err) {
    switch (kernel) {
    case TINFER_GEMV_BF16_SPLIT_K: return tinfer_gemv_bf16_split_k(a, stream, err);
    case TINFER_GEMV_BF16_CP_ASYNC: return tinfer_gemv_bf16_cp_async(a, stream, err);
    case TINFER_GEMV_BF16_CLUSTER: return tinfer_gemv_bf16_cluster(a, stream, err);
    case TINFER_GEMV_BF16_STREAM: return tinfer_gemv_bf16_stream(a, stream, err);
    case TINFER_GEMV_BF16_BULK: return tinfer_gemv_bf16_bulk(a, stream, err);
    case TINFER_GEMV_BF16_THREAD_PER_ROW:
    case TINFER_GEMV_BF16_WARP_PER_ROW:
    case TINFER_GEMV_BF16_VECTOR:
    case TINFER_GEMV_BF16_PERSISTENT:
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "gemv_bf16: rung %02d is in the ladder library (tinfer_gemv_bf16)", (int)kernel);
    }
    return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16: unknown kernel %d", (int)kernel);
}

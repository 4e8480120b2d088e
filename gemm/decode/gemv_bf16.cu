/*
 * gemv_bf16.cu — tinfer_gemv_bf16: the decode family's one entry point. Checks the arguments
 * (tinfer_gemm_bf16_check, shared with the prefill family) and runs the rung asked for;
 * tinfer_gemv_bf16_run runs it on arguments already checked (the dispatcher's).
 */
#include "gemm/decode/gemv_bf16_internal.h"

tinfer_status tinfer_gemv_bf16_run(tinfer_gemv_bf16_kernel kernel, const tinfer_gemm_bf16_args *a,
                                   cudaStream_t stream, tinfer_err *err) {
    switch (kernel) {
    case TINFER_GEMV_BF16_THREAD_PER_ROW: return tinfer_gemv_bf16_thread_per_row(a, stream, err);
    case TINFER_GEMV_BF16_WARP_PER_ROW: return tinfer_gemv_bf16_warp_per_row(a, stream, err);
    case TINFER_GEMV_BF16_VECTOR: return tinfer_gemv_bf16_vector(a, stream, err);
    case TINFER_GEMV_BF16_SPLIT_K: return tinfer_gemv_bf16_split_k(a, stream, err);
    case TINFER_GEMV_BF16_CP_ASYNC: return tinfer_gemv_bf16_cp_async(a, stream, err);
    case TINFER_GEMV_BF16_CLUSTER: return tinfer_gemv_bf16_cluster(a, stream, err);
    case TINFER_GEMV_BF16_PERSISTENT: return tinfer_gemv_bf16_persistent(a, stream, err);
    case TINFER_GEMV_BF16_STREAM: return tinfer_gemv_bf16_stream(a, stream, err);
    case TINFER_GEMV_BF16_BULK: return tinfer_gemv_bf16_bulk(a, stream, err);
    }
    return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16: unknown kernel %d", (int)kernel);
}

extern "C" tinfer_status tinfer_gemv_bf16(tinfer_gemv_bf16_kernel kernel,
                                          const tinfer_gemm_bf16_args *a, cudaStream_t stream,
                                          tinfer_err *err) {
    const tinfer_status st = tinfer_gemm_bf16_check(a, "gemv_bf16", err);
    return st != TINFER_OK ? st : tinfer_gemv_bf16_run(kernel, a, stream, err);
}

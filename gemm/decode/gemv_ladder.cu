/*
 * gemv_ladder.cu — tinfer_gemv_bf16: the decode family's any-rung entry point, in the ladder
 * library (libtinfer_ladder, linked by tests and tinfer-bench-gemm only). Checks the arguments
 * (tinfer_gemm_bf16_check, shared with the prefill family) and runs the rung asked for: the
 * rungs no route reaches (01-03, 07) here, the others through tinfer_gemv_bf16_run (libtinfer).
 */
#include "gemm/decode/gemv_bf16_internal.h"

extern "C" tinfer_status tinfer_gemv_bf16(tinfer_gemv_bf16_kernel kernel,
                                          const tinfer_gemm_bf16_args *a, cudaStream_t stream,
                                          tinfer_err *err) {
    const tinfer_status st = tinfer_gemm_bf16_check(a, "gemv_bf16", err);
    if (st != TINFER_OK) return st;
    switch (kernel) {
    case TINFER_GEMV_BF16_THREAD_PER_ROW: return tinfer_gemv_bf16_thread_per_row(a, stream, err);
    case TINFER_GEMV_BF16_WARP_PER_ROW: return tinfer_gemv_bf16_warp_per_row(a, stream, err);
    case TINFER_GEMV_BF16_VECTOR: return tinfer_gemv_bf16_vector(a, stream, err);
    case TINFER_GEMV_BF16_PERSISTENT: return tinfer_gemv_bf16_persistent(a, stream, err);
    default: return tinfer_gemv_bf16_run(kernel, a, stream, err);
    }
}

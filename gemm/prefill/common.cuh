/*
 * common.cuh — device helpers shared by the FP32 ladder's rung files: element access for both
 * B layouts, the alpha/beta epilogue (C is not read when beta == 0), guarded 16-byte loads,
 * and the cp.async wrappers (PTX ISA 8.x, "cp.async": 4/8/16-byte copies global -> shared,
 * src-size < cp-size zero-fills the rest, commit_group / wait_group N).
 */
#ifndef TINFER_SGEMM_COMMON_CUH
#define TINFER_SGEMM_COMMON_CUH

#include "gemm/cuda/cuda_check.h"
#include "gemm/prefill/sgemm_internal.h"

#include <stdint.h>

namespace tsg {

/* op(B)(k, n) for the two layouts. */
template <bool TB>
__device__ __forceinline__ float b_at(const float *__restrict__ B, int64_t ldb, int k, int n) {
    return TB ? B[(int64_t)n * ldb + k] : B[(int64_t)k * ldb + n];
}

__device__ __forceinline__ float epi(float acc, float alpha, float beta, const float *c) {
    return beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

/* 4 consecutive floats of row `row` starting at column `col` (multiple of 4); zero outside
 * [0,rows) x [0,cols). The base must be 16-byte aligned and ld a multiple of 4 (checked on the
 * host), so the full-vector case is one 128-bit load. */
__device__ __forceinline__ float4 ld4(const float *__restrict__ p, int64_t ld, int row, int col,
                                      int rows, int cols) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row >= rows) return v;
    const float *q = p + (int64_t)row * ld + col;
    if (col + 3 < cols) return *reinterpret_cast<const float4 *>(q);
    if (col + 0 < cols) v.x = q[0];
    if (col + 1 < cols) v.y = q[1];
    if (col + 2 < cols) v.z = q[2];
    return v;
}

/* Writes 4 outputs of row `row` from column `col`: one 128-bit access when the row has room
 * and `vec` (C aligned, ldc % 4 == 0), else guarded scalars. */
__device__ __forceinline__ void st4_epi(float *__restrict__ C, int64_t ldc, int row, int col,
                                        int M, int N, float4 acc, float alpha, float beta,
                                        bool vec) {
    if (row >= M) return;
    float *q = C + (int64_t)row * ldc + col;
    if (vec && col + 3 < N) {
        float4 o;
        if (beta == 0.0f) {
            o = make_float4(alpha * acc.x, alpha * acc.y, alpha * acc.z, alpha * acc.w);
        } else {
            float4 c = *reinterpret_cast<const float4 *>(q);
            o = make_float4(alpha * acc.x + beta * c.x, alpha * acc.y + beta * c.y,
                            alpha * acc.z + beta * c.z, alpha * acc.w + beta * c.w);
        }
        *reinterpret_cast<float4 *>(q) = o;
        return;
    }
    const float a[4] = {acc.x, acc.y, acc.z, acc.w};
#pragma unroll
    for (int j = 0; j < 4; j++)
        if (col + j < N) q[j] = epi(a[j], alpha, beta, q + j);
}

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* 4-byte copy (only .ca exists for 4 bytes); n_src = 0 writes a zero without reading. */
__device__ __forceinline__ void cp_async4(void *dst, const float *src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst)),
                 "l"(src), "r"(valid ? 4 : 0));
}

/* 16-byte copy bypassing L1 (.cg); n_src bytes are read, the rest of the 16 zero-filled. */
__device__ __forceinline__ void cp_async16(void *dst, const float *src, int n_src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)),
                 "l"(src), "r"(n_src));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

} // namespace tsg

#endif

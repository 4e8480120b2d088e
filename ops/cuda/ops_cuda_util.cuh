/*
 * ops_cuda_util.cuh — device helpers the ops/cuda kernels share: BF16 <-> F32 with the host's
 * rounding (base/dtype.h), warp reductions, and the host-side argument check macro.
 */
#ifndef TINFER_OPS_CUDA_UTIL_CUH
#define TINFER_OPS_CUDA_UTIL_CUH

#include "base/error.h"
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/pdl.cuh"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

namespace tops {

/* BF16 bit pattern -> F32 (exact). */
static __device__ __forceinline__ float bf16_to_f32(uint32_t h) {
    return __uint_as_float((h & 0xffffu) << 16);
}

/* F32 -> BF16 bit pattern, round to nearest even; NaN stays a quiet NaN. Bit for bit the host's
 * tinfer_f32_to_bf16, so GPU and CPU round identical F32 values identically. */
static __device__ __forceinline__ uint32_t f32_to_bf16(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return ((u >> 16) | 0x40u) & 0xffffu;
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
}

/* Two F32 -> one 32-bit word of two BF16 (lo in the low half: the lower address / index). */
static __device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    return f32_to_bf16(lo) | (f32_to_bf16(hi) << 16);
}

/* c += A (16x16, row) * B (16x8, col), BF16 in, F32 accumulate (PTX ISA m16n8k16 fragments). */
static __device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0,
                                                uint32_t b1) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

static __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* The greedy rule (tinfer_op_cuda_argmax's): (v, i) beats (bv, bi) when greater, or equal at a
 * lower index; NaN beats nothing. */
static __device__ __forceinline__ bool am_better(float v, int32_t i, float bv, int32_t bi) {
    return v > bv || (v == bv && i < bi);
}
/* A greedy pick (value v at index i, INT_MAX: nothing taken) as one 64-bit word that atomicMax
 * can gather: the value's bits ordered as unsigned (-0 as +0), then the complement of the index,
 * so a larger word is a larger value, or an equal one at a lower index; 0 is "nothing" (a row
 * of only NaN). */
static __device__ __forceinline__ uint64_t am_key(float v, int32_t i) {
    if (i == INT_MAX) return 0;
    const uint32_t u = __float_as_uint(v == 0.0f ? 0.0f : v);
    const uint32_t ord = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((uint64_t)ord << 32) | (0xffffffffu - (uint32_t)i);
}
/* The index of a gathered key (0 for "nothing", as the argmax of a row of only NaN). */
static __device__ __forceinline__ int32_t am_key_index(uint64_t k) {
    return k ? (int32_t)(0xffffffffu - (uint32_t)k) : 0;
}

/* The row stride, in BF16 elements, of rows of length K staged in shared memory as the B operand
 * of mma.sync m16n8k16 with the permuted-k fragments (lane g = lane / 4, t = lane % 4 loads 16
 * bytes at row g, k = 8t of each 32): at least K rounded up to 32, and 32 mod 64, so that the 8
 * lanes of a quarter warp (rows g, g + 1) read distinct banks. */
static __host__ __device__ __forceinline__ int32_t mma_staged_ld(int32_t K) {
    return (K + 31) / 64 * 64 + 32;
}

/* 16 bytes of a read-only stream (weights read once a pass), with no L1 allocation. */
static __device__ __forceinline__ uint4 ld_stream16(const void *p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

/* One of n_blocks blocks hands row r its best key k (am_key; 0: nothing) through the row's
 * two words ws[2 r] (the best, by atomicMax) and ws[2 r + 1] (the blocks so far); the row's
 * last block writes ids[r] and leaves both words zero for the next launch. */
static __device__ __forceinline__ void am_join(unsigned long long *ws, int32_t r, uint64_t k,
                                               unsigned n_blocks, int32_t *ids) {
    if (k) atomicMax(ws + 2 * r, (unsigned long long)k);
    __threadfence(); /* the key before the count */
    if (atomicAdd(ws + 2 * r + 1, 1ull) == n_blocks - 1) {
        __threadfence();
        ids[r] = am_key_index(atomicExch(ws + 2 * r, 0ull));
        ws[2 * r + 1] = 0;
    }
}

/* First statement of every ops kernel: they are all launched with programmatic dependent launch
 * on sm_90 (TOPS_LAUNCH), so the kernel after one may be scheduled at once (its own wait still
 * holds it until this grid has finished), and this one waits here for the kernel before it: a
 * decode step's small kernels overlap their launch and prologue with their predecessor's tail
 * instead of each paying a full launch gap. */
static __device__ __forceinline__ void tops_pdl_enter(void) {
    tinfer_pdl_launch_dependents();
    tinfer_pdl_wait();
}

} // namespace tops

/* 1 when the current device runs griddepcontrol (sm_90 and later). */
static inline bool tops_pdl_ok(void) {
    tinfer_cuda_facts f;
    return tinfer_cuda_current_facts(&f, NULL) == TINFER_OK && f.cc_major >= 9;
}

/* Launches an ops kernel (which starts with tops_pdl_enter) with PDL where the device has it;
 * a failed launch records "kernel <name> failed ..." and jumps to cleanup (status, as
 * TINFER_CUDA_LAUNCH_CHECK). */
#define TOPS_LAUNCH(err, name, kernel, grid, block, smem, stream, ...)                             \
    do {                                                                                           \
        cudaError_t le_ = tinfer_launch(kernel, dim3(grid), dim3(block), (smem), (stream),         \
                                        tops_pdl_ok(), __VA_ARGS__);                               \
        if (le_ != cudaSuccess) {                                                                  \
            (void)cudaGetLastError();                                                              \
            status = tinfer_err_set((err), TINFER_ERR_CUDA, "kernel %s failed at %s:%d: %s",       \
                                    name, __FILE__, __LINE__, cudaGetErrorString(le_));            \
            goto cleanup;                                                                          \
        }                                                                                          \
        TINFER_CUDA_LAUNCH_CHECK(err, name);                                                       \
    } while (0)

static inline bool tops_host_aligned(const void *p, unsigned a) {
    return ((uintptr_t)p & (uintptr_t)(a - 1)) == 0;
}

/* Host precondition: `cond` false records "<op>: <message>" and returns TINFER_ERR_INVALID_ARG. */
#define TOPS_REQUIRE(err, cond, op, ...)                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            char m_[256];                                                                          \
            snprintf(m_, sizeof m_, __VA_ARGS__);                                                  \
            return tinfer_err_set((err), TINFER_ERR_INVALID_ARG, "%s: %s", op, m_);                \
        }                                                                                          \
    } while (0)

#endif

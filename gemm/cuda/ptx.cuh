/*
 * ptx.cuh — the inline-PTX wrappers the decode rungs (04, 05/06, 07) share: the BF16 m16n8k16
 * mma.sync with FP32 accumulators, 16-byte cp.async (L1 bypass, optional L2 cache-policy hint)
 * and its group commit / wait; for programmatic dependent launch (PDL, sm_90) griddepcontrol
 * wait / launch_dependents and the bulk L2 prefetch issued before the wait. All are empty below
 * the architecture that has them (sm_80, sm_90 for the last three), where the launchers never
 * ask for them.
 */
#ifndef TINFER_GEMM_DECODE_PTX_CUH
#define TINFER_GEMM_DECODE_PTX_CUH

#include "gemm/cuda/pdl.cuh"

#include <stdint.h>

namespace tdec {

/* c += A (16x16, row) * B (16x8, col), BF16 in, FP32 accumulate; fragments as the PTX ISA lays
 * them out for m16n8k16. */
static __device__ __forceinline__ void mma_16816(float c[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                                 uint32_t a3, uint32_t b0, uint32_t b1) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

/* 16-byte cp.async, L1 bypass; bytes < 16 reads that many and zero-fills the rest (0: nothing read). */
static __device__ __forceinline__ void cp_async16(void *dst, const void *src, uint32_t bytes) {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"((uint32_t)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(bytes)
                 : "memory");
#endif
}
/* The same with an L2 cache policy (createpolicy), e.g. evict_first for data read exactly once. */
static __device__ __forceinline__ void cp_async16_hint(void *dst, const void *src, uint32_t bytes, uint64_t pol) {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;" ::"r"(
                     (uint32_t)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(bytes), "l"(pol)
                 : "memory");
#endif
}
static __device__ __forceinline__ void cp_async_commit(void) {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
/* Waits until at most N of this thread's committed groups are still in flight. */
template <int N> static __device__ __forceinline__ void cp_async_wait(void) {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/* PDL (gemm/cuda/pdl.cuh): wait for the grids this one depends on; let the next one launch. */
static __device__ __forceinline__ void pdl_wait(void) { tinfer_pdl_wait(); }
static __device__ __forceinline__ void pdl_launch_dependents(void) { tinfer_pdl_launch_dependents(); }
/* Bulk prefetch of [src, src + bytes) into L2 (sm_90; src 16-byte aligned, bytes % 16 == 0).
 * A hint only: it writes nothing the program can observe, and L2 is the point of coherence for
 * global memory, so a line fetched here that another kernel writes afterwards is updated in L2
 * itself (no stale copy can be served from it later). */
static __device__ __forceinline__ void prefetch_l2_bulk(const void *src, uint32_t bytes) {
#if __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
#endif
}

} // namespace tdec

#endif

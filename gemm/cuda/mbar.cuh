/*
 * mbar.cuh — shared-memory mbarriers and the copies that complete on them: the 1-D bulk copy
 * (cp.async.bulk, global -> shared by the copy engine, completion counted in bytes) and the
 * per-thread 16-byte cp.async whose completion a thread hands to an mbarrier as its arrival:
 * the sm_90 baseline pieces of Hopper's asynchronous copies, used by the wgmma rungs (through sm90.cuh) and by the fused decode step
 * (ops/cuda/decode_step.cu), which is also built for the portable compute_90 target. Declared
 * in the host pass too (nvcc parses device bodies there); the instructions exist from sm_90.
 */
#ifndef TINFER_GEMM_CUDA_MBAR_CUH
#define TINFER_GEMM_CUDA_MBAR_CUH

#include <stdint.h>

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
static __device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
static __device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count));
}
/* the initialised barriers made visible to the async proxy (the bulk copies' completions) */
static __device__ __forceinline__ void mbar_init_fence(void) {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
/* one arrival that also expects `bytes` of transactions before the phase can complete */
static __device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
                 "r"(bytes)
                 : "memory");
}
static __device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
/* One mbarrier.try_wait: whether the phase of the given parity has completed, the thread
 * suspended for a while (a system-dependent limit) if not yet. */
static __device__ __forceinline__ bool mbar_try(uint64_t *bar, uint32_t parity) {
    uint32_t done;
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 " selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(smem_u32(bar)), "r"(parity)
                 : "memory");
    return done != 0;
}
static __device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity) {
    while (!mbar_try(bar, parity)) {
    }
}
/* Whether the phase of the given parity has completed (mbarrier.test_wait: never suspends) */
static __device__ __forceinline__ bool mbar_test(uint64_t *bar, uint32_t parity) {
    uint32_t done;
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(smem_u32(bar)), "r"(parity)
                 : "memory");
    return done != 0;
}
/* bytes (a multiple of 16; both addresses 16-byte aligned) from global src to shared dst by the
 * copy engine; the bytes complete on bar's current phase (announce them with mbar_expect_tx). */
static __device__ __forceinline__ void bulk_g2s(void *dst, const void *src, uint32_t bytes,
                                                uint64_t *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
                 "[%3];" ::"r"(smem_u32(dst)),
                 "l"(src), "r"(bytes), "r"(smem_u32(bar))
                 : "memory");
}
/* 16 bytes from global src to shared dst (both 16-byte aligned), not cached in L1. */
static __device__ __forceinline__ void cp_async16_cg(void *dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst)), "l"(src)
                 : "memory");
}
/* This thread's arrival on bar, once all its earlier cp.async copies have landed (the arrival
 * is one of the count the barrier was initialised with: .noinc). */
static __device__ __forceinline__ void cp_async_arrive(uint64_t *bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_u32(bar))
                 : "memory");
}
#endif

#endif

/*
 * sm90.cuh — Hopper (sm_90a) device helpers shared by the wgmma rungs (03_wgmma_ws.cu,
 * 05_wgmma_skinny.cu, 06_wgmma_tiny.cu): mbarriers, TMA tile loads, cluster barriers and
 * distributed shared memory stores, the K-major 128-byte-swizzle wgmma descriptor
 * (HOPPER_GEMM_NOTES section 2), the m64nNk16 BF16 wgmma of the operand-swapped rungs and the
 * accumulator fence. Compiled only for the sm_90a target (the portable PTX target has no wgmma,
 * TMA or clusters); included by .cu files only, everything static inline. The mbarriers come
 * from mbar.cuh (sm_90 baseline).
 */
#ifndef TINFER_GEMM_TC_SM90_CUH
#define TINFER_GEMM_TC_SM90_CUH

#include "gemm/cuda/mbar.cuh"

#include <cuda.h>
#include <stdint.h>

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
static __device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, int32_t c0,
                                                   int32_t c1, uint64_t *bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_u32(dst)),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(smem_u32(bar))
                 : "memory");
}
/* tma_load_2d multicast to the cluster CTAs in mask (bit r: rank r): the box lands at dst's
 * offset in each of them and signals each one's barrier at bar's offset with its bytes. */
static __device__ __forceinline__ void tma_load_2d_mc(void *dst, const CUtensorMap *map, int32_t c0, int32_t c1,
                                                      uint64_t *bar, uint16_t mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_u32(dst)),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(smem_u32(bar)), "h"(mask)
                 : "memory");
}
/* Arrive on the mbarrier at a peer CTA's address (from cluster_map), default semantics (release,
 * CTA scope): the stage it frees was read by this thread's wgmmas, complete before it. */
static __device__ __forceinline__ void mbar_arrive_remote(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(bar) : "memory");
}
/* Remote store of 16 B into a peer CTA's shared memory (addr from cluster_map) that signals the
 * peer's mbarrier (mbar from cluster_map) with complete_tx of its 16 bytes: the peer waits on
 * that barrier instead of a cluster barrier, and no release fence sits behind the stores. */
static __device__ __forceinline__ void st_async_f4(uint32_t addr, float4 v, uint32_t mbar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(addr),
                 "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(mbar)
                 : "memory");
}
/* TMA store of one box from shared memory (the async proxy reads it: the writing threads fence
 * with fence_proxy_async_smem first); rows / columns outside the tensor are not written. */
static __device__ __forceinline__ void tma_store_2d(const CUtensorMap *map, const void *src, int32_t c0, int32_t c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"((uint64_t)map),
                 "r"(c0), "r"(c1), "r"(smem_u32(src))
                 : "memory");
}
static __device__ __forceinline__ void bulk_commit(void) { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
/* this thread's committed bulk stores have read their shared memory (it may be overwritten) */
static __device__ __forceinline__ void bulk_wait_read0(void) { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
/* this thread's committed bulk stores are complete */
static __device__ __forceinline__ void bulk_wait0(void) { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
/* generic-proxy shared-memory writes made visible to the async proxy (TMA) */
static __device__ __forceinline__ void fence_proxy_async_smem(void) { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
/* named barrier id over n threads (whole warps) */
static __device__ __forceinline__ void bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
/* Cluster barrier of split-K (every thread of every CTA of the cluster arrives; not .aligned:
 * the producer warp arrives with its lanes diverged). Release / acquire order the partial sums
 * written to shared memory before it against the peers' DSMEM reads after it. */
static __device__ __forceinline__ void cluster_sync_all(void) {
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
/* The same shared-memory offset in cluster CTA `rank` (mapa). */
static __device__ __forceinline__ uint32_t cluster_map(const void *p, uint32_t rank) {
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_u32(p)), "r"(rank));
    return r;
}
/* 16 bytes stored into cluster CTA shared memory at a mapa address (a posted write: nothing waits
 * for it until the next cluster barrier). */
static __device__ __forceinline__ void st_cluster_f4(uint32_t addr, float4 v) {
    asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                 : "memory");
}
/* K-major, 128-byte swizzle descriptor (§2): LBO unused (1), SBO = 1024 B (8 rows x 128 B). */
static __device__ __forceinline__ uint64_t wgmma_desc(const void *p) {
    return (uint64_t)((smem_u32(p) & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) |
           ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}
static __device__ __forceinline__ void wgmma_m64n8k16(float (&d)[4], uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(da), "l"(db), "r"(scale_d));
}
static __device__ __forceinline__ void wgmma_m64n16k16(float (&d)[8], uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %10, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "l"(da), "l"(db), "r"(scale_d));
}
static __device__ __forceinline__ void wgmma_m64n32k16(float (&d)[16], uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(da), "l"(db), "r"(scale_d));
}
static __device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(scale_d));
}
static __device__ __forceinline__ void wgmma_m64n48k16(float (&d)[24], uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %26, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n48k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23}, %24, %25, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
                 : "l"(da), "l"(db), "r"(scale_d));
}

/* D[64 x N] (+)= A[64 x 16] * B[16 x N] for N = 8 / 16 / 32 / 48 / 64, both operands K-major in shared
 * memory (descriptors da / db), FP32 accumulators (N / 2 per thread); scale_d = 0 overwrites D.
 * The operand-swapped rungs (05, 06) put 64 weight rows in A and N tokens in B. */
template <int N>
static __device__ __forceinline__ void wgmma_m64xn(float (&d)[N / 2], uint64_t da, uint64_t db, uint32_t scale_d) {
    static_assert(N == 8 || N == 16 || N == 32 || N == 48 || N == 64, "N = 8, 16, 32, 48 or 64");
    if constexpr (N == 8) wgmma_m64n8k16(d, da, db, scale_d);
    else if constexpr (N == 16) wgmma_m64n16k16(d, da, db, scale_d);
    else if constexpr (N == 32) wgmma_m64n32k16(d, da, db, scale_d);
    else if constexpr (N == 48) wgmma_m64n48k16(d, da, db, scale_d);
    else wgmma_m64n64k16(d, da, db, scale_d);
}
/* Pin the accumulators in place around async wgmma boundaries: the compiler must not move
 * reads or writes of d across the wait / first issue (CUTLASS's warpgroup_fence_operand). */
template <int N> static __device__ __forceinline__ void fence_acc(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}
#endif

#endif

/*
 * tma_bw.cu — `tinfer-bench-gemm bf16 tmabw`: how fast one SM's tensor-memory-access loads
 * (cp.async.bulk.tensor, 128-byte swizzle, the loads of the wgmma rungs) stream L2-resident bf16
 * tiles into shared memory, by box shape, boxes per stage, stages in flight, issuing threads,
 * rows shared between CTAs, threads polling the barriers, tensor maps and CTAs on the GPU. No
 * math: the consumer waits for each stage's full barrier and releases it at once, so the figure
 * is the load path's alone.
 *
 * Why: rung 06 (gemm/tc/06_wgmma_tiny.cu) lands one 16 KB k-block (two 64-row boxes) about every
 * 350 ns per CTA with 12 k-blocks requested at once (~46 B/ns; trace build, gemm/tc/RUNG06.md,
 * "Why a CTA streams at half cuBLAS's rate"), while cuBLAS's kernels on the same shapes move ~86
 * B/ns per CTA.
 *
 * Each CTA (CTAs <= SMs, each asking for >= 120 KB of shared memory, so one per SM) streams rows
 * of its own (or of CTA b / share's group): `bps` boxes of R rows x 64 bf16 per stage (2-D map;
 * with two maps, odd boxes through a second descriptor of the same rows), or one box of R rows x
 * 64 bf16 x D k-blocks (3-D map {64, rows, K / 64}), through `slots` stages, `steps` stages in all
 * (cycling over its K; one-shot: one stage per slot, all requested at once, as rung 06's plain
 * tile), the loads issued by `issuers` threads (lane 0 of warps 0.., lanes 0.. of warp 0, or
 * warps 0 and 4; step j by issuer j % issuers); `pollers` threads wait on each full barrier.
 * Per CTA: the stages after the first over the ns from the first landed to the last
 * (globaltimer); printed: median and lowest per-CTA rate, the first stage's latency, and all
 * CTAs' bytes over the event-timed kernel.
 *
 * Measured (H200, session 12): one issuing thread gets ~300 ns per stage whatever its size
 * (8 KB 27 B/ns, 16 KB 48-54, 32 KB 108-124, 48 KB 132), the same with 4 or 12 stages, with a
 * spin on test_wait instead of try_wait, and all-at-once (one-shot 53); 2 / 4 issuing threads
 * (lanes or warps) 81-93 / 81-115; 12 lanes one-shot 97-117; rows shared by 9 or all CTAs, 128
 * polling threads (-7%) or a second descriptor change little. 132 CTAs together cap at
 * ~8.4 TB/s (~70 B/ns each) from L2, 10 TB/s when they all read the same rows. Rung 06's own
 * pattern (SmolLM2 down's W and X, CTA = (row tile, token tile); last section) streams at 87
 * B/ns per CTA through a 12-stage ring fed by 4 lanes, 97 all at once from 12 lanes, 29 from one;
 * session 13: as fast over rung 06's own 24 k-blocks (24 steps through 12 stages, 4 / 6 / 12
 * lanes: 90 / 97 / 97), where rung 06's ring lands its first 12 at about half that rate.
 * Figures move 10-20% between calls.
 */
#include "gemm/cuda/sm90.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>

#define TB_SLOTS_MAX 32

#define TB_CK(call)                                                                                \
    do {                                                                                           \
        const cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "error: %s: %s\n", #call, cudaGetErrorString(e_));                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
static __device__ __forceinline__ void tb_load_3d(void *dst, const CUtensorMap *map, int32_t c0, int32_t c1, int32_t c2, uint64_t *bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_u32(dst)),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_u32(bar))
                 : "memory");
}
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
static __device__ __forceinline__ unsigned long long tb_now(void) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}
#endif

/* wait for a phase: spin == 0 mbarrier.try_wait (the thread may be suspended until the phase
 * completes or a time limit passes: sm90.cuh's mbar_wait), 1 a spin on mbarrier.test_wait (never
 * suspends) */
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
static __device__ __forceinline__ void tb_wait(uint64_t *bar, uint32_t parity, int spin) {
    if (!spin) {
        mbar_wait(bar, parity);
        return;
    }
    while (!mbar_test(bar, parity)) {
    }
}
#endif

/* ns_out[3 b ..]: CTA b's first wait begun, first stage landed, last stage landed (globaltimer) */
template <int DIMS>
static __global__ void __launch_bounds__(288, 1)
    tb_kernel(const __grid_constant__ CUtensorMap map, const __grid_constant__ CUtensorMap map2, int R, int bps, int D, int kcols, int steps, int slots, int issuers,
              int placement, int kb_inner, int spin, int share, int pollers, int gx, unsigned long long *ns_out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ uint8_t tb_raw[];
    uint8_t *sm = (uint8_t *)(((uintptr_t)tb_raw + 1023) & ~(uintptr_t)1023);
    const int box = 128 * R * D, stage = box * bps;
    uint64_t *full = (uint64_t *)(sm + slots * stage), *empty = full + TB_SLOTS_MAX;
    if (threadIdx.x == 0) {
        for (int s = 0; s < slots; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    /* CTAs b and b' read the same rows when b / share == b' / share */
    const int row0 = (int)blockIdx.x / share * R * bps, groups = kcols / D;
    /* issuer q of `issuers`: placement 0 lane 0 of warp q (warps 0..3 sit on the four SM
     * sub-partitions), 1 lane q of warp 0, 2 lane 0 of warps 0 and 4 (one sub-partition) */
    const int q = placement == 0 ? (lane == 0 && warp < issuers ? warp : -1)
                : placement == 1 ? (warp == 0 && lane < issuers ? lane : -1)
                                 : (lane == 0 && (warp == 0 || warp == 4) ? warp / 4 : -1);
    if (warp < 5) {
        if (q >= 0)
            for (int j = q; j < steps; j += issuers) {
                const int s = j % slots, u = j / slots, kb = (j % groups) * D;
                if (u > 0) tb_wait(&empty[s], (uint32_t)(u - 1) & 1, spin);
                mbar_expect_tx(&full[s], (uint32_t)stage);
                for (int b = 0; b < bps; b++) {
                    uint8_t *dst = sm + s * stage + b * box;
                    /* gx > 0: rung 06's pattern, box 0 the 64 W rows of row tile b / gx (map), box 1
                     * the 64 X rows of token tile b % gx (map2) */
                    if (DIMS == 2 && gx > 0)
                        tma_load_2d(dst, b ? &map2 : &map, kb * 64, (b ? (int)blockIdx.x % gx : (int)blockIdx.x / gx) * 64, &full[s]);
                    else if constexpr (DIMS == 2) tma_load_2d(dst, b % 2 ? &map2 : &map, kb * 64, row0 + b * R, &full[s]);
                    else if (kb_inner) tb_load_3d(dst, &map, 0, kb, row0 + b * R, &full[s]);
                    else tb_load_3d(dst, &map, 0, row0 + b * R, kb, &full[s]);
                }
            }
    } else if ((int)threadIdx.x - 160 < pollers) {
        /* the consumer: `pollers` threads from 160 on wait on each full barrier (rung 06's
         * warpgroup: 128), meet on a named barrier, thread 160 releases the stage */
        const unsigned long long t0 = tb_now();
        unsigned long long t1 = 0;
        for (int j = 0; j < steps; j++) {
            const int s = j % slots;
            tb_wait(&full[s], (uint32_t)(j / slots) & 1, spin);
            if (pollers > 1) bar_sync(1, (pollers + 31) / 32 * 32);
            if (j == 0) t1 = tb_now();
            if (threadIdx.x == 160) mbar_arrive(&empty[s]);
        }
        if (threadIdx.x != 160) return;
        const unsigned long long t2 = tb_now();
        ns_out[3 * blockIdx.x] = t0;
        ns_out[3 * blockIdx.x + 1] = t1;
        ns_out[3 * blockIdx.x + 2] = t2;
    }
#else
    (void)map; (void)map2; (void)R; (void)bps; (void)D; (void)kcols; (void)steps; (void)slots; (void)issuers; (void)placement; (void)kb_inner; (void)spin;
    (void)share; (void)pollers; (void)gx; (void)ns_out;
    __trap();
#endif
}

static PFN_cuTensorMapEncodeTiled_v12000 tb_encode_fn(void) {
    void *p = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        fprintf(stderr, "error: cuTensorMapEncodeTiled not available\n");
        exit(1);
    }
    return (PFN_cuTensorMapEncodeTiled_v12000)p;
}

/* rows x K bf16, row-major: 2-D map {K, rows} with box {64, R}, or 3-D {64, rows, K / 64} with
 * box {64, R, D} (k-block stride 128 B: a box lands as D slabs of R rows, wgmma's layout); where
 * the driver refuses strides that fall (*kb_inner = 1) {64, K / 64, rows} with box {64, D, R}
 * (a box lands row by row, each row's D k-blocks together). */
static void tb_map(CUtensorMap *m, const uint16_t *base, int64_t rows, int64_t K, int dims, int R, int D, int *kb_inner) {
    static PFN_cuTensorMapEncodeTiled_v12000 enc = tb_encode_fn();
    CUresult r;
    const cuuint32_t estr[3] = {1, 1, 1};
    if (dims == 2) {
        const cuuint64_t gd[2] = {(cuuint64_t)K, (cuuint64_t)rows}, gs[1] = {(cuuint64_t)K * 2};
        const cuuint32_t bx[2] = {64, (cuuint32_t)R};
        r = enc(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)base, gd, gs, bx, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    } else {
        const cuuint64_t gd[3] = {64, (cuuint64_t)rows, (cuuint64_t)(K / 64)}, gs[2] = {(cuuint64_t)K * 2, 128};
        const cuuint32_t bx[3] = {64, (cuuint32_t)R, (cuuint32_t)D};
        r = enc(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)base, gd, gs, bx, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        *kb_inner = 0;
        if (r != CUDA_SUCCESS) {
            const cuuint64_t gd2[3] = {64, (cuuint64_t)(K / 64), (cuuint64_t)rows}, gs2[2] = {128, (cuuint64_t)K * 2};
            const cuuint32_t bx2[3] = {64, (cuuint32_t)D, (cuuint32_t)R};
            r = enc(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)base, gd2, gs2, bx2, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                    CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
            *kb_inner = 1;
        }
    }
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "error: tensor map (%d-D, box %d x %d) failed: CUresult %d\n", dims, R, D, (int)r);
        exit(1);
    }
}

static __global__ void tb_fill(uint16_t *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (uint16_t)(0x3c00u + (uint32_t)((i * 2654435761u) >> 22)); /* finite, not zero */
}

/* The last launch's per-CTA figures (ns_out of tb_kernel): the stages after the first over the
 * time after it landed (median and lowest, B/ns) and the first stage's latency (median, ns) */
struct tb_rate {
    double med, low, first;
};
static tb_rate tb_rates(const unsigned long long *d_ns, int ctas, int steps, int stage) {
    std::vector<unsigned long long> ns(3 * ctas);
    TB_CK(cudaMemcpy(ns.data(), d_ns, sizeof(unsigned long long) * 3 * ctas, cudaMemcpyDeviceToHost));
    std::vector<double> rate, first;
    for (int b = 0; b < ctas; b++) {
        rate.push_back((double)(steps - 1) * stage / (double)(ns[3 * b + 2] - ns[3 * b + 1]));
        first.push_back((double)(ns[3 * b + 1] - ns[3 * b]));
    }
    std::sort(rate.begin(), rate.end());
    std::sort(first.begin(), first.end());
    return {rate[rate.size() / 2], rate[0], first[first.size() / 2]};
}

extern "C" void tinfer_bench_tma_bw(int n_sm) {
    struct cfg {
        const char *name;
        int dims, R, bps, D, slots, issuers, placement, spin, oneshot, share, pollers, twomaps;
    };
    /* stage 16 KB unless noted; ring: 8 MB per CTA through `slots` stages; one-shot: one stage per
     * slot, all requested at once (rung 06's slot per k-block), no empty barrier waited on.
     * Issuers: "warps" lane 0 of warps 0.., "lanes" lanes 0.. of warp 0, "w0+w4" one sub-partition */
    const cfg cs[] = {
        {"ring 2x64 (rung 06 down)", 2, 64, 2, 1, 12, 1, 0, 0, 0, 1, 1, 0},
        {"ring 2x64, test_wait spin", 2, 64, 2, 1, 12, 1, 0, 1, 0, 1, 1, 0},
        {"ring 2x64, 2 warps", 2, 64, 2, 1, 12, 2, 0, 0, 0, 1, 1, 0},
        {"ring 2x64, 2 lanes", 2, 64, 2, 1, 12, 2, 1, 0, 0, 1, 1, 0},
        {"ring 2x64, w0+w4", 2, 64, 2, 1, 12, 2, 2, 0, 0, 1, 1, 0},
        {"ring 2x64, 4 warps", 2, 64, 2, 1, 12, 4, 0, 0, 0, 1, 1, 0},
        {"ring 2x64, 4 lanes", 2, 64, 2, 1, 12, 4, 1, 0, 0, 1, 1, 0},
        {"ring 2x64, 4 lanes, 9 CTAs share", 2, 64, 2, 1, 12, 4, 1, 0, 0, 9, 1, 0},
        {"ring 2x64, 4 lanes, all share", 2, 64, 2, 1, 12, 4, 1, 0, 0, 1024, 1, 0},
        {"ring 2x64, 4 stages", 2, 64, 2, 1, 4, 1, 0, 0, 0, 1, 1, 0},
        {"ring 1x64 (8 KB) x 24", 2, 64, 1, 1, 24, 1, 0, 0, 0, 1, 1, 0},
        {"ring 4x32", 2, 32, 4, 1, 12, 1, 0, 0, 0, 1, 1, 0},
        {"ring 1x128", 2, 128, 1, 1, 12, 1, 0, 0, 0, 1, 1, 0},
        {"ring 3x128 (48 KB) x 4 (rung 03)", 2, 128, 3, 1, 4, 1, 0, 0, 0, 1, 1, 0},
        {"ring 3x128 x 4, 3 lanes", 2, 128, 3, 1, 4, 3, 1, 0, 0, 1, 1, 0},
        {"ring 3x128 x 4, 3 warps", 2, 128, 3, 1, 4, 3, 0, 0, 0, 1, 1, 0},
        {"ring 1x256 (32 KB) x 6", 2, 256, 1, 1, 6, 1, 0, 0, 0, 1, 1, 0},
        {"ring 3-D 64 x 2 kb", 3, 64, 1, 2, 12, 1, 0, 0, 0, 1, 1, 0},
        {"ring 3-D 64 x 4 kb (32 KB) x 6", 3, 64, 1, 4, 6, 1, 0, 0, 0, 1, 1, 0},
        {"one-shot 2x64 x 12", 2, 64, 2, 1, 12, 1, 0, 0, 1, 1, 1, 0},
        {"one-shot 2x64 x 12, 4 warps", 2, 64, 2, 1, 12, 4, 0, 0, 1, 1, 1, 0},
        {"one-shot 2x64 x 12, 12 lanes", 2, 64, 2, 1, 12, 12, 1, 0, 1, 1, 1, 0},
        {"one-shot 2x64 x 12, 12 lanes, 9 share", 2, 64, 2, 1, 12, 12, 1, 0, 1, 9, 1, 0},
        {"one-shot 2x64 x 12, 12 lanes, all", 2, 64, 2, 1, 12, 12, 1, 0, 1, 1024, 1, 0},
        {"one-shot 1x128 x 12", 2, 128, 1, 1, 12, 1, 0, 0, 1, 1, 1, 0},
        {"one-shot 2x64 x 12, 12 lanes, 2 maps", 2, 64, 2, 1, 12, 12, 1, 0, 1, 1, 1, 1},
        {"one-shot 2x64 x 12, 1 lane, 2 maps", 2, 64, 2, 1, 12, 1, 1, 0, 1, 1, 1, 1},
        {"ring 2x64, 4 lanes, 2 maps", 2, 64, 2, 1, 12, 4, 1, 0, 0, 1, 1, 1},
        {"ring 2x64, 4 lanes, 32 pollers", 2, 64, 2, 1, 12, 4, 1, 0, 0, 1, 32, 0},
        {"ring 2x64, 4 lanes, 128 pollers", 2, 64, 2, 1, 12, 4, 1, 0, 0, 1, 128, 0},
        {"ring 2x64, 4 lanes, 128 pollers, spin", 2, 64, 2, 1, 12, 4, 1, 1, 0, 1, 128, 0},
        {"one-shot 2x64 x 12, 12 lanes, 128 pollers", 2, 64, 2, 1, 12, 12, 1, 0, 1, 1, 128, 0},
        {"one-shot 3-D 64 x 4 kb x 6", 3, 64, 1, 4, 6, 1, 0, 0, 1, 1, 1, 0},
    };
    unsigned long long *d_ns;
    TB_CK(cudaMalloc(&d_ns, sizeof(unsigned long long) * 3 * 1024));
    cudaEvent_t e0, e1;
    TB_CK(cudaEventCreate(&e0));
    TB_CK(cudaEventCreate(&e1));
    printf("tmabw: TMA loads of L2-resident bf16 tiles into shared memory, no math (tma_bw.cu); per-CTA rate "
           "median (lowest), all CTAs' bytes over the kernel time\n");
    for (const cfg &c : cs) {
        const int rows_cta = c.R * c.bps, stage = 128 * c.R * c.D * c.bps;
        /* ~192 KB of K per CTA (L2-resident over 132 CTAs), a multiple of D k-blocks */
        int kcols = (192 * 1024) / (rows_cta * 128);
        kcols = std::max(c.D, kcols / c.D * c.D);
        const int64_t K = (int64_t)kcols * 64;
        const int steps = c.oneshot ? c.slots : (int)((8ll << 20) / stage); /* one-shot, or 8 MB per CTA */
        /* >= 120 KB: one CTA per SM */
        const size_t smem = std::max((size_t)c.slots * stage + 1024 + 2 * TB_SLOTS_MAX * 8, (size_t)120 * 1024);
        for (int ctas : {1, 72, n_sm}) {
            const int64_t rows = (int64_t)rows_cta * ctas;
            uint16_t *buf;
            TB_CK(cudaMalloc(&buf, (size_t)rows * K * 2));
            tb_fill<<<256, 256>>>(buf, (size_t)rows * K);
            TB_CK(cudaGetLastError());
            CUtensorMap m, m2;
            int kb_inner = 0;
            tb_map(&m, buf, rows, K, c.dims, c.R, c.D, &kb_inner);
            m2 = m;
            if (c.twomaps) tb_map(&m2, buf, rows, K, c.dims, c.R, c.D, &kb_inner); /* a second descriptor, same rows */
            auto kern = c.dims == 2 ? tb_kernel<2> : tb_kernel<3>;
            TB_CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            std::vector<float> ts;
            for (int rep = 0; rep < 7; rep++) {
                TB_CK(cudaEventRecord(e0));
                kern<<<ctas, 288, smem>>>(m, m2, c.R, c.bps, c.D, kcols, steps, c.slots, c.issuers, c.placement, kb_inner, c.spin, c.share, c.pollers, 0, d_ns);
                TB_CK(cudaGetLastError());
                TB_CK(cudaEventRecord(e1));
                TB_CK(cudaEventSynchronize(e1));
                float ms = 0;
                TB_CK(cudaEventElapsedTime(&ms, e0, e1));
                ts.push_back(ms);
            }
            const tb_rate r = tb_rates(d_ns, ctas, steps, stage);
            std::sort(ts.begin(), ts.end());
            const double us = ts[ts.size() / 2] * 1e3;
            printf("tmabw %-32s%s %2d KB x %2d | CTAs %3d | per CTA %6.1f B/ns (lowest %6.1f), first stage %5.0f ns | all %5.0f GB/s | %7.1f us\n",
                   c.name, kb_inner ? " (rows outer)" : "", stage / 1024, c.slots, ctas, r.med, r.low, r.first, (double)steps * stage * ctas / (us * 1e3), us);
            TB_CK(cudaFree(buf));
        }
    }
    /* Rung 06's loads on SmolLM2 down (W 576 x 1536, X M x 1536, 64-row boxes, CTA (row tile,
     * token tile) as in 06_wgmma_tiny.cu, 24 k-blocks per pass) */
    for (int64_t M : {128, 512}) {
        const int64_t N = 576, K = 1536;
        const int gx = (int)(M / 64), ctas = 9 * gx, kcols = 24, stage = 16384;
        uint16_t *w, *x;
        TB_CK(cudaMalloc(&w, (size_t)N * K * 2));
        TB_CK(cudaMalloc(&x, (size_t)M * K * 2));
        tb_fill<<<256, 256>>>(w, (size_t)N * K);
        tb_fill<<<256, 256>>>(x, (size_t)M * K);
        TB_CK(cudaGetLastError());
        CUtensorMap mw, mx;
        int kb_inner = 0;
        tb_map(&mw, w, N, K, 2, 64, 1, &kb_inner);
        tb_map(&mx, x, M, K, 2, 64, 1, &kb_inner);
        /* steps: 20 passes over K (the steady state), or one (rung 06's 24 k-blocks) */
        const struct { const char *name; int slots, issuers, oneshot, steps; } rc[] = {
            {"down pattern ring, 1 lane", 12, 1, 0, 24 * 20},        {"down pattern ring, 4 lanes", 12, 4, 0, 24 * 20},
            {"down pattern one-shot, 12 lanes", 12, 12, 1, 12},      {"down pattern ring, 4 lanes, 24 steps", 12, 4, 0, 24},
            {"down pattern ring, 12 lanes, 24 steps", 12, 12, 0, 24}, {"down pattern ring, 6 lanes, 24 steps", 12, 6, 0, 24}};
        for (const auto &r : rc) {
            const int steps = r.steps;
            const size_t smem = (size_t)r.slots * stage + 1024 + 2 * TB_SLOTS_MAX * 8;
            TB_CK(cudaFuncSetAttribute(tb_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            for (int rep = 0; rep < 7; rep++) {
                tb_kernel<2><<<ctas, 288, smem>>>(mw, mx, 64, 2, 1, kcols, steps, r.slots, r.issuers, 1, 0, 0, 1, 1, gx, d_ns);
                TB_CK(cudaGetLastError());
                TB_CK(cudaDeviceSynchronize());
            }
            const tb_rate q = tb_rates(d_ns, ctas, steps, stage);
            printf("tmabw %-40s M %4lld | CTAs %3d | per CTA %6.1f B/ns (lowest %6.1f), first stage %5.0f ns\n", r.name, (long long)M, ctas,
                   q.med, q.low, q.first);
        }
        TB_CK(cudaFree(w));
        TB_CK(cudaFree(x));
    }
    TB_CK(cudaFree(d_ns));
    TB_CK(cudaEventDestroy(e0));
    TB_CK(cudaEventDestroy(e1));
}

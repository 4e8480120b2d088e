/*
 * 02_mma_sync.cu — prefill rung 2: mma.sync m16n8k16 (BF16 in, FP32 accumulate) fed by ldmatrix
 * from XOR-swizzled shared memory, filled by a 4-stage cp.async pipeline; small CTA tiles so that
 * the SmolLM2-135M shapes and Llama-3-8B at M <= 512 give the H200's 132 SMs enough tiles.
 *
 * What changed from rung 1 (01_wmma.cu) and why:
 *  - Loads: 16-byte cp.async.cg (L2 only) into STAGES = 4 ring slots, issued STAGES - 1 k-tiles
 *    ahead, `cp.async.wait_group STAGES-2` + one barrier per k-tile (HOPPER_GEMM_NOTES §6): rung 1
 *    loaded synchronously and stalled the tensor cores on every k-step. Out-of-range rows / K
 *    columns use the src-size operand = 0, so the hardware writes zeros (ragged M and N, K % 8 ==
 * 0).
 *  - Fragments: ldmatrix.x4 straight into mma.sync registers (4 8x8 blocks per instruction; A
 *    blocks (r0-7,k0-7), (r8-15,k0-7), (r0-7,k8-15), (r8-15,k8-15); W rows are already the "col"
 *    operand, so no .trans, and one x4 feeds two n8 tiles). Rows are 64 bytes (BK = 32 BF16),
 *    16-byte chunk c of row r lives at chunk c ^ ((r >> 1) & 3): the 8 rows one ldmatrix phase
 *    reads then cover the 8 16-byte bank groups once (conflict-free; §6), without rung 1's padding.
 *  - Tiles: one of three configs, picked per call for tile count (below), instead of 128 x 128:
 *      cfg 0: 64 x 64 x 32, 4 warps (2 x 2), warp tile 32 x 32, 32 KB shared memory
 *      cfg 1: 128 x 64 x 32, 4 warps (2 x 2), warp tile 64 x 32, 48 KB
 *      cfg 2: 128 x 128 x 32, 8 warps (2 x 4), warp tile 64 x 32, 64 KB
 *    Auto pick (from the forced-config sweep, gemm/NOTES.md): cfg 0 whenever K <= 1536 (short
 *    k-loops: more, smaller CTAs per SM hide the load latency best; cfg 0 was fastest on every
 *    SmolLM2 shape up to M = 2048); for longer K the largest config with >= 1.5 waves of tiles
 *    (bigger tiles read X and W fewer times once the GPU is full), else cfg 0.
 *    Compared with rung 3 (wgmma, 128 x 256 tiles) this is what matters on small problems:
 *    M = 128, N = 960 is 4 wgmma tiles but 30 tiles of cfg 0.
 *  - Epilogue straight from the accumulator registers: a thread holds the pairs (row g, cols 2t,
 *    2t + 1) and (row g + 8, same cols) of each 16 x 8 block, which is what
 *    tinfer_bf16_epi_store2 (bf16_epi.cuh, shared with the other rungs) stores. SwiGLU: a warp's
 *    32 shared-memory W rows are 16 gate rows j.. and the 16 up rows F + j.., so accumulator block
 *    ni and ni + 2 are gate and up of the same outputs in the same thread; no shared-memory
 *    hand-over as in rung 1.
 * Constraints: K % 8 == 0, ldx % 8 == 0, ldw % 8 == 0, X/W 16-byte aligned (bf16.h); sm_80+
 * (cp.async, ldmatrix, bf16 mma); the portable PTX target below sm_80 gets a trap.
 * Measured (H200, 2026-12-02 14:36 UTC, `tinfer-bench-gemm-bf16 prefill`, median, cuBLAS in the
 * same run; full table in gemm/NOTES.md "Prefill rung 2: mma.sync"). Registers (ptxas, sm_90a):
 * cfg 0 80, cfg 1 163, cfg 2 128, no spills.
 *  - Where it is dispatched (wgmma tiles < SMs / 4 and short K or M <= 64), time vs wgmma before
 *    vs cuBLAS: SmolLM2 QKV M = 128 10.2 us vs 18.3 vs 12.0 (117% of cuBLAS); O M = 512 10.3 vs
 *    13.7 vs 12.3 (119%); gate/up M = 128 10.6 vs 13.6 vs 12.2 (115%); down M = 512 18.2 vs 22.5
 *    vs 11.7 (64%); Llama-3-8B QKV M = 64 43.9 vs 52.6 vs 17.4 (40%); down M = 64 128.7 vs 144.8
 *    vs 36.5 (28%). The 9-k-block SmolLM2 problems now beat cuBLAS; the fused residual epilogue
 *    costs 1.5 us instead of the wgmma kernel's ~23.
 *  - Where it is not: large problems run at ~300 TF/s at best (Llama gate/up M = 2048: 1600 us,
 *    38% of cuBLAS, vs wgmma 656 us): mma.sync from one warp per 64 x 32 tile, one CTA round of
 *    ldmatrix per k16, is well under the wgmma ceiling. Long-K, low-tile shapes (Llama down
 *    M = 32..128: 126-129 us vs cuBLAS 34-38) stay latency-bound: 128 CTAs of 4 warps each walk
 *    448 k-tiles in series; that is where split-K (not done) is needed.
 */
#include "gemm/cuda/cuda_check.h"
#include "gemm/tc/bf16_epi.cuh"
#include "gemm/tc/gemm_bf16_tc_internal.h"

#define MS_BK 32    /* BF16 per shared row: 64 bytes = four 16-byte chunks */
#define MS_STAGES 4 /* ring depth; wait_group MS_STAGES - 2 leaves 2 k-tiles in flight */
/* Up to this K the 64 x 64 config was the fastest of the three at every SmolLM2 shape and
 * M = 32..2048 (K = 576, 1536; even at 1536 tiles), measured 2026-12-02 (gemm/NOTES.md). */
#define MS_SHORT_K 1536

template <int BM, int BN, int WARPS_M, int WARPS_N> struct ms_cfg {
    static constexpr int threads = 32 * WARPS_M * WARPS_N;
    static constexpr int wtm = BM / WARPS_M, wtn = BN / WARPS_N; /* warp tile */
    static constexpr int mi = wtm / 16, ni = wtn / 8;            /* m16 x n8 blocks per warp */
    static constexpr int stage_bytes = (BM + BN) * MS_BK * 2;
    static constexpr int smem_bytes = MS_STAGES * stage_bytes;
    static_assert(ni % 4 == 0,
                  "ldmatrix.x4 feeds n8 pairs; SwiGLU splits ni in gate/up halves of pairs");
    static_assert((BM * 4) % threads == 0 && (BN * 4) % threads == 0, "whole chunks per thread");
};

#if __CUDA_ARCH__ >= 800
static __device__ __forceinline__ uint32_t ms_smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
/* byte offset of 16-byte chunk c of row r in a 64-byte-row tile, XOR-swizzled (see header) */
static __device__ __forceinline__ uint32_t ms_swz(int r, int c) {
    return (uint32_t)(r * 64 + ((c ^ ((r >> 1) & 3)) << 4));
}
static __device__ __forceinline__ void ms_cp16(uint32_t dst, const void *src, bool ok) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(ok ? 16 : 0)
                 : "memory");
}
static __device__ __forceinline__ void ms_ldsm4(uint32_t addr, uint32_t &r0, uint32_t &r1,
                                                uint32_t &r2, uint32_t &r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}
static __device__ __forceinline__ void ms_mma(float *c, const uint32_t *a, uint32_t b0,
                                              uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

template <int BM, int BN, int WARPS_M, int WARPS_N>
static __global__ void __launch_bounds__(32 * WARPS_M * WARPS_N)
    mma_sync_kernel(tinfer_gemm_bf16_args a, int32_t vec) {
#if __CUDA_ARCH__ >= 800
    typedef ms_cfg<BM, BN, WARPS_M, WARPS_N> C;
    constexpr int T = C::threads, MI = C::mi, NI = C::ni;
    constexpr int NA = BM * 4 / T, NB = BN * 4 / T; /* 16-byte chunks per thread per stage */
    extern __shared__ __align__(128) uint8_t ms_smem[];
    const uint32_t sbase = ms_smem_u32(ms_smem);
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int64_t F = a.N / 2, nout = a.swiglu ? F : a.N;
    const int64_t m0 = (int64_t)blockIdx.y * BM;
    const int64_t jb = (int64_t)blockIdx.x * (a.swiglu ? BN / 2 : BN); /* first output column */
    const int64_t K = a.K;

    /* Per-thread source rows, fixed over the k-loop. T % 4 == 0, so chunk column = tid % 4. */
    const int cc = tid % 4;
    const uint16_t *asrc[NA], *bsrc[NB];
    bool aok[NA], bok[NB];
#pragma unroll
    for (int i = 0; i < NA; i++) {
        const int r = (tid + i * T) / 4;
        const int64_t m = m0 + r;
        aok[i] = m < a.M;
        asrc[i] = aok[i] ? a.X + m * a.ldx + cc * 8 : a.X;
    }
#pragma unroll
    for (int i = 0; i < NB; i++) {
        const int r = (tid + i * T) / 4;
        int64_t wrow;
        if (a.swiglu) {
            /* warp column w's 32 rows: 16 gate rows then the matching 16 up rows (header) */
            const int w = r / C::wtn, q = r % C::wtn, h = C::wtn / 2;
            const int64_t j = jb + (int64_t)w * h + (q < h ? q : q - h);
            bok[i] = j < F;
            wrow = q < h ? j : F + j;
        } else {
            wrow = jb + r;
            bok[i] = wrow < a.N;
        }
        bsrc[i] = bok[i] ? a.W + wrow * a.ldw + cc * 8 : a.W;
    }
    const int64_t ktiles = (K + MS_BK - 1) / MS_BK;
    auto load_stage = [&](int64_t kt) {
        const int slot = (int)(kt % MS_STAGES);
        const uint32_t sa = sbase + slot * C::stage_bytes, sb = sa + BM * MS_BK * 2;
        const int64_t k = kt * MS_BK;
        const bool kok = k + cc * 8 < K;
#pragma unroll
        for (int i = 0; i < NA; i++) {
            const int r = (tid + i * T) / 4;
            const bool ok = aok[i] && kok;
            ms_cp16(sa + ms_swz(r, cc), ok ? (const void *)(asrc[i] + k) : (const void *)a.X, ok);
        }
#pragma unroll
        for (int i = 0; i < NB; i++) {
            const int r = (tid + i * T) / 4;
            const bool ok = bok[i] && kok;
            ms_cp16(sb + ms_swz(r, cc), ok ? (const void *)(bsrc[i] + k) : (const void *)a.W, ok);
        }
    };

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0.f;

#pragma unroll
    for (int s = 0; s < MS_STAGES - 1; s++) {
        if (s < ktiles) load_stage(s);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
    /* ldmatrix lane roles: A rows lane % 16, k-half lane / 16; B rows (lane % 8) + 8 (lane / 16),
     * k-half (lane / 8) % 2 */
    const int a_row = wm * C::wtm + lane % 16, a_kc = lane / 16;
    const int b_row = wn * C::wtn + lane % 8 + 8 * (lane / 16), b_kc = (lane / 8) % 2;
    for (int64_t kt = 0; kt < ktiles; kt++) {
        /* k-tile kt has landed once at most STAGES - 2 younger groups are pending; the barrier
         * also tells every warp that slot (kt - 1) % STAGES, refilled below, has been read. */
        asm volatile("cp.async.wait_group %0;\n" ::"n"(MS_STAGES - 2) : "memory");
        __syncthreads();
        if (kt + MS_STAGES - 1 < ktiles) load_stage(kt + MS_STAGES - 1);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
        const int slot = (int)(kt % MS_STAGES);
        const uint32_t sa = sbase + slot * C::stage_bytes, sb = sa + BM * MS_BK * 2;
#pragma unroll
        for (int ks = 0; ks < MS_BK / 16; ks++) {
            uint32_t af[MI][4], bfr[NI][2];
#pragma unroll
            for (int i = 0; i < MI; i++)
                ms_ldsm4(sa + ms_swz(a_row + i * 16, ks * 2 + a_kc), af[i][0], af[i][1], af[i][2],
                         af[i][3]);
#pragma unroll
            for (int p = 0; p < NI / 2; p++)
                ms_ldsm4(sb + ms_swz(b_row + p * 16, ks * 2 + b_kc), bfr[2 * p][0], bfr[2 * p][1],
                         bfr[2 * p + 1][0], bfr[2 * p + 1][1]);
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NI; j++)
                    ms_mma(acc[i][j], af[i], bfr[j][0], bfr[j][1]);
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");

    /* Epilogue from registers: block (i, j) element pair h holds row g + 8h, columns 2t, 2t + 1. */
    const int g = lane / 4, t = lane % 4;
    const bool v = vec != 0;
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t m = m0 + wm * C::wtm + i * 16 + g + 8 * h;
            if (m >= a.M) continue;
            if (a.swiglu) {
#pragma unroll
                for (int j = 0; j < NI / 2; j++) {
                    const int64_t col = jb + wn * (C::wtn / 2) + j * 8 + 2 * t;
                    const float *gv = &acc[i][j][2 * h], *uv = &acc[i][j + NI / 2][2 * h];
                    if (col + 1 < nout)
                        tinfer_bf16_epi_store2(a, v, m, col, gv[0], uv[0], gv[1], uv[1]);
                    else if (col < nout)
                        tinfer_bf16_epi_store(a, m, col, gv[0], uv[0]);
                }
            } else {
#pragma unroll
                for (int j = 0; j < NI; j++) {
                    const int64_t col = jb + wn * C::wtn + j * 8 + 2 * t;
                    const float *cv = &acc[i][j][2 * h];
                    if (col + 1 < nout)
                        tinfer_bf16_epi_store2(a, v, m, col, cv[0], 0.f, cv[1], 0.f);
                    else if (col < nout)
                        tinfer_bf16_epi_store(a, m, col, cv[0], 0.f);
                }
            }
        }
#else
    (void)a;
    (void)vec;
    __trap();
#endif
}

typedef ms_cfg<64, 64, 2, 2> ms_cfg0;
typedef ms_cfg<128, 64, 2, 2> ms_cfg1;
typedef ms_cfg<128, 128, 2, 4> ms_cfg2;
static const int ms_bm[3] = {64, 128, 128}, ms_bn[3] = {64, 64, 128};

/* Tiles of config c for this call (SwiGLU: a tile covers BN/2 outputs). */
static int64_t ms_tiles(int c, int64_t M, int64_t nout, int swiglu) {
    const int64_t bn = swiglu ? ms_bn[c] / 2 : ms_bn[c];
    return ((M + ms_bm[c] - 1) / ms_bm[c]) * ((nout + bn - 1) / bn);
}

tinfer_status tinfer_gemm_bf16_mma(const tinfer_gemm_bf16_args *a, int32_t cfg, cudaStream_t s,
                                   tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    int dev = 0, n_sm = 0;
    static int smem_set_for = -1;
    static int dev_sms[16]; /* per-device SM count, read once: 16 devices per host at most */
    TINFER_CUDA_TRY(err, cudaGetDevice(&dev));
    if (dev < 0 || dev >= 16 || !dev_sms[dev]) {
        TINFER_CUDA_TRY(err, cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev));
        if (dev >= 0 && dev < 16) dev_sms[dev] = n_sm;
    } else {
        n_sm = dev_sms[dev];
    }
    if (cfg < TINFER_GEMM_BF16_MMA_CFG_AUTO || cfg > 2)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "gemm_bf16 mma_sync: unknown tile config %d", (int)cfg);
    {
        const int64_t nout = tinfer_gemm_bf16_nout(*a);
        if (cfg == TINFER_GEMM_BF16_MMA_CFG_AUTO) {
            /* Tile pick (header): cfg 0 for K <= MS_SHORT_K; otherwise the largest config with
             * at least 1.5 waves of tiles (2 * tiles >= 3 * SMs), else cfg 0. */
            cfg = 0;
            if (a->K > MS_SHORT_K)
                for (int c = 2; c >= 1; c--)
                    if (2 * ms_tiles(c, a->M, nout, a->swiglu) >= 3 * (int64_t)n_sm) {
                        cfg = c;
                        break;
                    }
        }
        const int64_t bn = a->swiglu ? ms_bn[cfg] / 2 : ms_bn[cfg];
        const int64_t gm = (a->M + ms_bm[cfg] - 1) / ms_bm[cfg], gn = (nout + bn - 1) / bn;
        if (gm > 65535 || gn > 0x7fffffff)
            return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                                  "gemm_bf16 mma_sync: M=%lld N=%lld too large", (long long)a->M,
                                  (long long)a->N);
        if (smem_set_for != dev) {
            /* cfg 2's 64 KB is over the 48 KB default for dynamic shared memory */
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(mma_sync_kernel<128, 128, 2, 4>,
                                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                      ms_cfg2::smem_bytes));
            smem_set_for = dev;
        }
        const dim3 grid((unsigned)gn, (unsigned)gm);
        const int32_t vec = tinfer_bf16_epi_vec_ok(*a) ? 1 : 0;
        switch (cfg) {
        case 0:
            mma_sync_kernel<64, 64, 2, 2>
                <<<grid, ms_cfg0::threads, ms_cfg0::smem_bytes, s>>>(*a, vec);
            break;
        case 1:
            mma_sync_kernel<128, 64, 2, 2>
                <<<grid, ms_cfg1::threads, ms_cfg1::smem_bytes, s>>>(*a, vec);
            break;
        default:
            mma_sync_kernel<128, 128, 2, 4>
                <<<grid, ms_cfg2::threads, ms_cfg2::smem_bytes, s>>>(*a, vec);
            break;
        }
        TINFER_CUDA_LAUNCH_CHECK(err, "mma_sync_kernel");
    }
cleanup:
    return status;
}

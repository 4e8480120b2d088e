/*
 * 05_wgmma_skinny.cu — prefill rung 5 (sm_90a): the skinny GEMM of a few tokens on the tensor
 * cores with the operands swapped: W is wgmma's A operand (64 weight rows per instruction) and
 * the tokens are its N (8, 16, 32 or 64), D^T[N, M] = W[N, K] · X[M, K]^T.
 *
 * Why: wgmma's M is 64 rows per warpgroup, so rung 03 at M = 16 computes a 128-row tile of which
 * 16 rows are tokens (8x the tensor work, and at M <= 64 one of its two consumers idles), while
 * the weight stream it must hide is the same. Swapped, the token count is the instruction's N,
 * which runs down to 8: the tensor work is the real work, and the kernel is a weight stream.
 *
 * Algorithm:
 *  - CTA tile: 128 W rows (two 64-row slabs; with SwiGLU 64 gate rows j0.. and the 64 up rows
 *    F + j0.., so one thread holds gate and up of the same output) x BT tokens. A pipeline stage
 *    holds KS k-blocks of 64 (both slabs and the X box of each), written by TMA (128-byte swizzle,
 *    the K-major layout of rung 03); KS = 2 reads each W row as 256-byte runs.
 *  - 160 threads: warps 0-3 are one consumer warpgroup (per k-block two m64nBTk16 per k16 step,
 *    one per slab, B = the X tile; one stage of wgmma in flight, the stage before it released);
 *    warp 4 is the producer (one thread issues the TMA loads into the full / empty mbarrier ring).
 *  - Persistent (no split): one CTA per SM with the deepest ring that fits (~190-220 KB), CTA b
 *    taking tiles b, b + grid, ..., token tile fastest (the CTAs of one W row block run together,
 *    so W comes from DRAM once when M > BT); the producer runs ahead into the next tile while
 *    the consumers store this one through a scratch of their own.
 *  - Split-K for few tiles (tinfer_gemm_bf16_skinny_pick): a cluster of f CTAs shares a tile,
 *    each over its share of the k-blocks, two CTAs per SM ("wide" ring); warp w's 32 rows (16 per
 *    slab) are finished by rank w % f: after a cluster barrier the other ranks push their partial
 *    sums into the owner's idle stage area with posted DSMEM stores, a second barrier publishes
 *    them, and the owner adds them in rank order (deterministic), as rung 03 does.
 *  - Epilogue: the finished accumulators go to shared memory as [token][W row] (FP32), then each
 *    thread takes 8 consecutive outputs of one token: bias, SwiGLU, residual in FP32, one
 *    rounding, one 16-byte store (Y rows 16-byte aligned; otherwise element by element through
 *    the shared epilogue of bf16_epi.cuh).
 *  - Programmatic dependent launch for short K (as rung 03) and wherever no CTA walks several
 *    tiles; nothing global is touched before griddepcontrol.wait.
 * Ragged M / N / K: TMA zero-fills rows and K columns outside the matrices (a stage's k-blocks
 * past a CTA's share are read from a column past K: all zeros); the epilogue stores only tokens
 * < M and outputs < N'. Constraints: those of rung 03 (K % 8 == 0, ldx % 8 == 0, ldw % 8 == 0, X
 * and W 16-byte aligned); sm_90 only.
 * Measured (H200, session 5 run 5, stream timing, us; gemm/tc/README.md "Rung 05"): SmolLM2 LM head
 * M = 1 / 8 / 16 / 32 16.72 / 16.96 / 17.63 / 18.96 (the faster of cuBLAS / cublasLt 17.58 / 17.93 /
 * 18.19 / 18.87; before: GEMV rung 04 17.9 / 20.3, rung 03 21.9 / 21.4); Llama-3-8B M = 16: QKV
 * 16.41 (16.28; rung 03 21.9), gate/up 61.33 (58.45; 70.3), down (split 3) 32.82 (33.55; 39.7).
 * In graph timing (device only) cuBLAS stays 1-15% ahead at these M. Two things cost a
 * lot on the way: a runtime loop around the wgmmas of a stage made ptxas serialize them (C7520:
 * 16.8 -> 19.5 us on the LM head), so KS is a template parameter and the stage always runs all
 * KS k-blocks; and a CTA that walks several tiles lost with PDL (Llama gate/up 61.3 -> 64.8).
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/knobs.h"
#include "gemm/cuda/ptx.cuh"
#include "gemm/cuda/sm90.cuh"
#include "gemm/tc/gemm_bf16_tc_internal.h"

#include <stdlib.h>
#include <string.h>

#define SK_BK 64
#define SK_SLAB_BYTES (64 * SK_BK * 2) /* one 64-row W slab of a stage */
#define SK_SMEM_WIDE (113 * 1024)      /* two CTAs per SM (228 KB per SM, 1 KB reserved per CTA) */
#define SK_SMEM_DEEP 232448             /* one CTA per SM: the 227 KB per-block limit */
#define SK_BAR_BYTES 256                /* full + empty barriers of up to 16 stages */
#define SK_THREADS 160
/* kernel flags: 16-byte BF16 / FP32 stores of 8 outputs (Y, R and their rows 16-byte aligned) */
#define SK_F_V16 1
/* split-K partial sums pushed with st.async onto the owner's mbarrier (else a second cluster barrier) */
#define SK_F_ASYNCRED 2

template <int BT> struct SkGeo {
    static_assert(BT == 8 || BT == 16 || BT == 32 || BT == 64, "token tile 8, 16, 32 or 64");
    static constexpr int X_BYTES = BT * SK_BK * 2;
    /* one 64-wide k-block: both W slabs and the X box; a stage holds KS of them (the kernel's
     * template parameter, 1, 2 or 4: KS consecutive 128-byte pieces of each W row per stage) */
    static constexpr int SUB_BYTES = 2 * SK_SLAB_BYTES + X_BYTES; /* multiple of 1024 (swizzle atoms) */
    static constexpr int NACC = BT / 2;       /* FP32 accumulators per thread per slab (m64nBT) */
    static constexpr int RS = 128 + 4;        /* scratch floats per token: 128 W rows + 4 (banks) */
    static constexpr int SCR_BYTES = BT * RS * 4;
    static constexpr int SLOT_BYTES = 32 * 2 * NACC * 4; /* one warp's partial sums, both slabs */
    /* an owner receives ceil(4 / f) * (f - 1) slots: at most 7 over f = 2..8 (f = 8) */
    static constexpr int MAX_SLOTS = 7;
    /* Stage rings. Split kernel (scratch and slots in the idle stage area): as many stages as fit
     * two CTAs per SM ("wide") or one ("deep", for grids of at most one CTA per SM). Persistent
     * kernel (its own scratch after the barriers): deep (one CTA per SM, the default) or wide. */
    static constexpr int fit(int budget, int ksub = 1) {
        return (budget - 1024 - SK_BAR_BYTES) / (ksub * SUB_BYTES) > 16 ? 16 : (budget - 1024 - SK_BAR_BYTES) / (ksub * SUB_BYTES);
    }
    static constexpr int STAGES = fit(SK_SMEM_WIDE), DEEP_STAGES = fit(SK_SMEM_DEEP);
    static constexpr int P_STAGES = fit(SK_SMEM_WIDE - SCR_BYTES), P_DEEP_STAGES = fit(SK_SMEM_DEEP - SCR_BYTES);
    static constexpr int smem(int stages, int ksub = 1) { return stages * ksub * SUB_BYTES + 1024 + SK_BAR_BYTES; }
    static constexpr int p_smem(int stages, int ksub = 1) { return smem(stages, ksub) + SCR_BYTES; }
    static_assert(P_STAGES >= 3 && STAGES >= 3, "a pipeline of at least 3 stages");
    static_assert(SUB_BYTES % 1024 == 0, "stages keep the 1024-byte swizzle alignment");
    static_assert(SCR_BYTES + MAX_SLOTS * SLOT_BYTES <= STAGES * SUB_BYTES, "scratch and split slots fit the stages");
    static_assert(2 * 16 * 8 <= SK_BAR_BYTES, "barriers of 16 stages fit");
    /* the split kernel's two reduction barriers follow its full / empty barriers */
    static_assert((2 * DEEP_STAGES + 2) * 8 <= SK_BAR_BYTES, "split ring barriers and reduction barriers fit");
    static_assert(p_smem(P_DEEP_STAGES) <= SK_SMEM_DEEP && smem(DEEP_STAGES) <= SK_SMEM_DEEP, "per-block limit");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* The consumer warpgroup's mainloop over k-blocks [kb0, kb1), ring iterations it...: wait for
 * the stage, issue its 8 wgmmas (two slabs x 4 k16 steps; the tile's first zeroes the
 * accumulators), keep one k-block in flight and release the stage before it; at the end wait for
 * all and release the last stage. Returns the next ring iteration. */
template <int BT, int KS>
static __device__ __forceinline__ uint32_t sk_mainloop(float (&d0)[BT / 2], float (&d1)[BT / 2], uint64_t *full,
                                                        uint64_t *empty, const uint8_t *smem, uint32_t stages,
                                                        uint32_t it, int32_t kb0, int32_t kb1) {
    using G = SkGeo<BT>;
    uint32_t prev = 0;
    fence_acc(d0);
    fence_acc(d1);
    for (int32_t kb = kb0; kb < kb1; kb += KS, it++) {
        const uint32_t s = it % stages, ph = (it / stages) & 1;
        mbar_wait(&full[s], ph);
        const uint8_t *st = smem + s * (KS * G::SUB_BYTES);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        /* all KS k-blocks, also past kb1: the producer zero-filled those (a runtime bound here
         * makes ptxas serialize the wgmmas, C7520) */
#pragma unroll
        for (int j = 0; j < KS; j++) {
#pragma unroll
            for (int kk = 0; kk < SK_BK / 16; kk++) {
                const uint64_t dx = wgmma_desc(st + 2 * KS * SK_SLAB_BYTES + j * G::X_BYTES + kk * 32);
                const uint32_t acc = (kb != kb0) || j != 0 || kk != 0;
                wgmma_m64xn<BT>(d0, wgmma_desc(st + j * SK_SLAB_BYTES + kk * 32), dx, acc);
                wgmma_m64xn<BT>(d1, wgmma_desc(st + (KS + j) * SK_SLAB_BYTES + kk * 32), dx, acc);
            }
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        if (kb > kb0 && threadIdx.x == 0) mbar_arrive(&empty[prev]);
        prev = s;
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    fence_acc(d0);
    fence_acc(d1);
    if (threadIdx.x == 0) mbar_arrive(&empty[prev]);
    return it;
}

/* Writes this warp's accumulators (when `mine`) to the scratch [token][W row], then the
 * warpgroup stores tile (tw, tt): 8 consecutive outputs of one token per thread (128 per token,
 * 64 with SwiGLU), skipping rows held by warps of another rank (split: warp w's rows belong to
 * rank w % ksplit). Register i of a slab: W row 16 * warp + g + 8 * ((i >> 1) & 1), token
 * 8 * (i >> 2) + 2t + (i & 1) (m64nBT layout, HOPPER_GEMM_NOTES section 1); scratch rows 132
 * floats apart, so lanes (g, t) hit banks g + 8t + const, all different. */
template <int BT>
static __device__ __forceinline__ void sk_epilogue(const float (&d0)[BT / 2], const float (&d1)[BT / 2], bool mine,
                                                   float *scr, const tinfer_epi8 &e, const tinfer_gemm_bf16_args &a,
                                                   int32_t tw, int32_t tt, int32_t rank, int32_t ksplit) {
    using G = SkGeo<BT>;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    if (mine) {
#pragma unroll
        for (int i = 0; i < G::NACC; i++) {
            const int r = 16 * warp + g + 8 * ((i >> 1) & 1), c = 8 * (i >> 2) + 2 * t + (i & 1);
            scr[c * G::RS + r] = d0[i];
            scr[c * G::RS + 64 + r] = d1[i];
        }
    }
    asm volatile("bar.sync 1, 128;" ::: "memory");
    const int ow = e.sw ? 64 : 128, groups = ow / 8;
    for (int idx = threadIdx.x; idx < BT * groups; idx += 128) {
        const int tok = idx / groups, r = 8 * (idx % groups);
        const int uw = e.sw ? r / 16 : (r % 64) / 16; /* the warp that held these rows */
        if (ksplit > 1 && uw % ksplit != rank) continue;
        const int64_t m = (int64_t)tt * BT + tok, j0 = (int64_t)tw * ow + r;
        if (m >= e.M || j0 >= e.nout) continue;
        float v[8], u[8];
        {
            const float4 *p = (const float4 *)(scr + tok * G::RS + r);
            const float4 p0 = p[0], p1 = p[1];
            v[0] = p0.x; v[1] = p0.y; v[2] = p0.z; v[3] = p0.w; v[4] = p1.x; v[5] = p1.y; v[6] = p1.z; v[7] = p1.w;
            if (e.sw) {
                const float4 q0 = p[16], q1 = p[17]; /* the up rows, 64 further */
                u[0] = q0.x; u[1] = q0.y; u[2] = q0.z; u[3] = q0.w; u[4] = q1.x; u[5] = q1.y; u[6] = q1.z; u[7] = q1.w;
            } else {
#pragma unroll
                for (int k = 0; k < 8; k++) u[k] = 0.f;
            }
        }
        tinfer_bf16_epi_store8(e, a, m, j0, v, u);
    }
}
#endif

/* SPLIT: one tile per cluster of ksplit CTAs (tile blockIdx.x / ksplit, rank blockIdx.x % ksplit
 * taking k-blocks [kb0, kb1)); the scratch and the pushed partial sums use the idle stage area.
 * Otherwise persistent: CTA b takes tiles b, b + grid, ... (grid <= resident CTAs), the producer
 * running ahead into the next tile while the consumers store this one, through a scratch of its
 * own after the barriers. Tiles are numbered token tile fastest. */
template <int BT, bool SPLIT, int KS>
static __global__ void __launch_bounds__(SK_THREADS, 1)
    sk_kernel(const __grid_constant__ CUtensorMap map_w, const __grid_constant__ CUtensorMap map_x,
              tinfer_gemm_bf16_args a, int32_t tiles_t, int32_t tiles, int32_t kblocks, int32_t flags, int32_t ksplit,
              uint32_t stages) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using G = SkGeo<BT>;
    extern __shared__ uint8_t sk_smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)sk_smem_raw + 1023) & ~(uintptr_t)1023);
    const uint32_t stage_bytes = KS * G::SUB_BYTES;
    uint64_t *full = (uint64_t *)(smem + stages * stage_bytes);
    uint64_t *empty = full + stages;
    uint64_t *redb = empty + stages; /* SPLIT: redb[o] = the owner's o-th warp's partial sums all landed */
    float *scr = SPLIT ? (float *)smem : (float *)(smem + stages * stage_bytes + SK_BAR_BYTES);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int32_t rank = SPLIT ? (int32_t)(blockIdx.x % ksplit) : 0;
    const int32_t tile0 = SPLIT ? (int32_t)(blockIdx.x / ksplit) : (int32_t)blockIdx.x;
    const int32_t step = SPLIT ? tiles : (int32_t)gridDim.x;
    const int32_t kper = SPLIT ? (kblocks + ksplit - 1) / ksplit : kblocks;
    const int32_t kb0 = rank * kper, kb1 = kb0 + kper < kblocks ? kb0 + kper : kblocks;
    const bool sw = a.swiglu != 0;
    const int64_t F = a.N / 2;

    if (threadIdx.x == 0) {
        asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_w) : "memory");
        asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_x) : "memory");
        for (uint32_t s = 0; s < stages; s++) {
            mbar_init(&full[s], 1);  /* the producer's arrive.expect_tx */
            mbar_init(&empty[s], 1); /* the consumer warpgroup's release */
        }
        if (SPLIT) {
            mbar_init(&redb[0], 1); /* the owner warp's arrive.expect_tx */
            mbar_init(&redb[1], 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    tdec::pdl_wait();
    tdec::pdl_launch_dependents();

    if (warp == 4) {
        if (lane == 0) {
            uint32_t it = 0;
            const int32_t kz = kblocks * SK_BK; /* a column past K (kblocks * 64 >= K) */
            for (int32_t tile = tile0; tile < tiles; tile += step) {
                const int32_t tw = tile / tiles_t, tt = tile % tiles_t;
                const int32_t row_w0 = sw ? tw * 64 : tw * 128;
                const int32_t row_w1 = sw ? (int32_t)F + tw * 64 : tw * 128 + 64;
                const int32_t row_x = tt * BT;
                for (int32_t kb = kb0; kb < kb1; kb += KS, it++) {
                    const uint32_t s = it % stages, ph = (it / stages) & 1;
                    mbar_wait(&empty[s], ph ^ 1);
                    uint8_t *st = smem + s * stage_bytes;
                    mbar_expect_tx(&full[s], (uint32_t)stage_bytes);
                    /* a W row's KS pieces back to back: one contiguous run of the row per slab. A
                     * k-block past this CTA's share (the last stage) is read from column kz, past
                     * K: TMA zero-fills the box, which still counts its bytes. */
                    for (int j = 0; j < KS; j++) {
                        const int32_t kc = kb + j < kb1 ? (kb + j) * SK_BK : kz;
                        tma_load_2d(st + j * SK_SLAB_BYTES, &map_w, kc, row_w0, &full[s]);
                    }
                    for (int j = 0; j < KS; j++) {
                        const int32_t kc = kb + j < kb1 ? (kb + j) * SK_BK : kz;
                        tma_load_2d(st + (KS + j) * SK_SLAB_BYTES, &map_w, kc, row_w1, &full[s]);
                    }
                    for (int j = 0; j < KS; j++) {
                        const int32_t kc = kb + j < kb1 ? (kb + j) * SK_BK : kz;
                        tma_load_2d(st + 2 * KS * SK_SLAB_BYTES + j * G::X_BYTES, &map_x, kc, row_x, &full[s]);
                    }
                }
            }
        }
        if (SPLIT) { /* the cluster barriers count every thread */
            cluster_sync_all();
            if (!(flags & SK_F_ASYNCRED)) cluster_sync_all();
        }
        return;
    }

    /* The consumer warpgroup. d0 / d1: slab 0 / 1 (W rows 0-63 / 64-127 of the tile). */
    const tinfer_epi8 e = tinfer_epi8_make(a, (flags & SK_F_V16) != 0);
    float d0[G::NACC], d1[G::NACC];
    if constexpr (SPLIT) {
        /* No tile loop here: nothing redefines the accumulators after the reduction (rung 03's
         * split kernel saw ptxas serialize its wgmmas with one, C7515). */
        const int32_t tw = tile0 / tiles_t, tt = tile0 % tiles_t;
        sk_mainloop<BT, KS>(d0, d1, full, empty, smem, stages, 0, kb0, kb1);
        /* Every rank past its mainloop (all wgmmas done, every TMA load landed): the stage areas
         * are idle. Non-owners push both slabs' partial sums of this warp into the owner's slot
         * (o = warp / ksplit of the owner's warps, p = the pusher's index without the owner), the
         * owner adds them in rank order. As in rung 03: SK_F_ASYNCRED (default) pushes with
         * st.async counted on the owner's barrier redb[o], else DSMEM stores and a second
         * cluster barrier publish them. */
        const int32_t owner = warp % ksplit;
        cluster_sync_all();
        auto slot = [&](int32_t p) {
            return (size_t)G::SCR_BYTES + (size_t)((warp / ksplit) * (ksplit - 1) + p) * G::SLOT_BYTES + (size_t)lane * 16;
        };
        const bool async_red = (flags & SK_F_ASYNCRED) != 0;
        if (owner != rank) {
            const uint32_t base = cluster_map(smem + slot(rank < owner ? rank : rank - 1), (uint32_t)owner);
            if (async_red) {
                const uint32_t bar = cluster_map(&redb[warp / ksplit], (uint32_t)owner);
#pragma unroll
                for (int j = 0; j < G::NACC / 4; j++) {
                    st_async_f4(base + j * 512, make_float4(d0[4 * j], d0[4 * j + 1], d0[4 * j + 2], d0[4 * j + 3]), bar);
                    st_async_f4(base + (G::NACC / 4 + j) * 512, make_float4(d1[4 * j], d1[4 * j + 1], d1[4 * j + 2], d1[4 * j + 3]), bar);
                }
            } else {
#pragma unroll
                for (int j = 0; j < G::NACC / 4; j++) {
                    st_cluster_f4(base + j * 512, make_float4(d0[4 * j], d0[4 * j + 1], d0[4 * j + 2], d0[4 * j + 3]));
                    st_cluster_f4(base + (G::NACC / 4 + j) * 512, make_float4(d1[4 * j], d1[4 * j + 1], d1[4 * j + 2], d1[4 * j + 3]));
                }
            }
        }
        if (!async_red) cluster_sync_all();
        if (owner == rank) {
            if (async_red) {
                if (lane == 0) mbar_expect_tx(&redb[warp / ksplit], (uint32_t)((ksplit - 1) * G::SLOT_BYTES));
                mbar_wait(&redb[warp / ksplit], 0);
            }
            for (int32_t p = 0; p < ksplit - 1; p++) {
                const uint8_t *src = smem + slot(p);
#pragma unroll
                for (int j = 0; j < G::NACC / 4; j++) {
                    const float4 u = *(const float4 *)(src + j * 512), v = *(const float4 *)(src + (G::NACC / 4 + j) * 512);
                    d0[4 * j] += u.x; d0[4 * j + 1] += u.y; d0[4 * j + 2] += u.z; d0[4 * j + 3] += u.w;
                    d1[4 * j] += v.x; d1[4 * j + 1] += v.y; d1[4 * j + 2] += v.z; d1[4 * j + 3] += v.w;
                }
            }
        }
        sk_epilogue<BT>(d0, d1, owner == rank, scr, e, a, tw, tt, rank, ksplit);
    } else {
        uint32_t it = 0;
        for (int32_t tile = tile0; tile < tiles; tile += step) {
            const int32_t tw = tile / tiles_t, tt = tile % tiles_t;
            it = sk_mainloop<BT, KS>(d0, d1, full, empty, smem, stages, it, 0, kblocks);
            /* the previous tile's stores have read the scratch */
            asm volatile("bar.sync 1, 128;" ::: "memory");
            sk_epilogue<BT>(d0, d1, true, scr, e, a, tw, tt, 0, 1);
        }
    }
#else
    (void)map_w; (void)map_x; (void)a; (void)tiles_t; (void)tiles; (void)kblocks; (void)flags; (void)ksplit; (void)stages;
    __trap();
#endif
}

int32_t tinfer_gemm_bf16_skinny_bt(int64_t M) { return M <= 8 ? 8 : M <= 16 ? 16 : M <= 32 ? 32 : 64; }

int32_t tinfer_gemm_bf16_skinny_pick(int64_t M, int64_t nout, int64_t K, int32_t swiglu, int32_t n_sm,
                                     const int32_t clusters[9]) {
    const int64_t bt = tinfer_gemm_bf16_skinny_bt(M), ow = swiglu ? 64 : 128;
    const int64_t tiles = ((nout + ow - 1) / ow) * ((M + bt - 1) / bt), kblocks = (K + SK_BK - 1) / SK_BK;
    int32_t best = 1;
    for (int32_t f = 2; f <= 8; f++) {
        const int64_t kper = (kblocks + f - 1) / f;
        if ((kblocks + kper - 1) / kper != f || kper < TINFER_GEMM_BF16_SKINNY_MIN_KB || tiles > clusters[f]) continue;
        if (tiles * f * TINFER_GEMM_BF16_SKINNY_FILL_DEN <= (int64_t)n_sm * TINFER_GEMM_BF16_SKINNY_FILL_NUM) best = f;
    }
    return best;
}

/* Occupancy of rung 05 per device and token tile, queried once (which also sets the kernels'
 * shared-memory limit): clusters[f] = co-resident clusters of f split CTAs with the wide ring the
 * split kernel runs by default (cudaOccupancyMaxActiveClusters; [1] = CTAs per SM x SMs), the
 * table the split pick reads; pers[d] = resident persistent CTAs with the wide (d = 0) or deep
 * (d = 1) ring, which sizes the persistent grid. */
struct SkOcc {
    int32_t clusters[9];
    int32_t pers[2];
};
template <int BT> static cudaError_t sk_query(SkOcc *o, int n_sm) {
    using G = SkGeo<BT>;
    cudaError_t e = cudaSuccess;
    void *const kernels[6] = {(void *)sk_kernel<BT, true, 1>,  (void *)sk_kernel<BT, true, 2>,  (void *)sk_kernel<BT, true, 4>,
                              (void *)sk_kernel<BT, false, 1>, (void *)sk_kernel<BT, false, 2>, (void *)sk_kernel<BT, false, 4>};
    for (int i = 0; i < 6 && e == cudaSuccess; i++)
        e = cudaFuncSetAttribute(kernels[i], cudaFuncAttributeMaxDynamicSharedMemorySize, SK_SMEM_DEEP);
    int per_sm = 0;
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sk_kernel<BT, true, 1>, SK_THREADS, G::smem(G::STAGES));
    o->clusters[0] = 0;
    o->clusters[1] = per_sm * n_sm;
    for (int f = 2; f <= 8 && e == cudaSuccess; f++) {
        int n = 0;
        e = tinfer_tc_max_clusters((const void *)sk_kernel<BT, true, 1>, SK_THREADS, (size_t)G::smem(G::STAGES), f, n_sm, &n);
        o->clusters[f] = n;
    }
    for (int d = 0; d < 2 && e == cudaSuccess; d++) {
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sk_kernel<BT, false, 1>, SK_THREADS,
                                                          G::p_smem(d ? G::P_DEEP_STAGES : G::P_STAGES));
        o->pers[d] = per_sm * n_sm;
    }
    return e;
}
static tinfer_status sk_occupancy(int dev, int n_sm, int32_t bt, const SkOcc **out, tinfer_err *err) {
    static SkOcc table[16][4];
    static volatile int have[16];
    if (dev < 0 || dev >= 16) return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 skinny: device %d (16 at most)", dev);
    if (!have[dev]) {
        cudaError_t e = sk_query<8>(&table[dev][0], n_sm);
        if (e == cudaSuccess) e = sk_query<16>(&table[dev][1], n_sm);
        if (e == cudaSuccess) e = sk_query<32>(&table[dev][2], n_sm);
        if (e == cudaSuccess) e = sk_query<64>(&table[dev][3], n_sm);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return tinfer_err_set(err, TINFER_ERR_CUDA, "gemm_bf16 skinny: occupancy query failed: %s", cudaGetErrorString(e));
        }
        __sync_synchronize();
        have[dev] = 1;
    }
    *out = &table[dev][bt == 8 ? 0 : bt == 16 ? 1 : bt == 32 ? 2 : 3];
    return TINFER_OK;
}

/* Knob gemm_skinny_stages wide|wide1|deep (measurement): force the stage ring (wide1:
 * the wide ring with a persistent grid of one CTA per SM, which leaves room on each SM for a CTA
 * of the next kernel); otherwise
 * the split kernel runs wide (two CTAs per SM) and the persistent kernel deep (one per SM). H200
 * session 5, stream timing, us: split 2 on Llama QKV M = 16 wide 18.3 vs deep 20.1 (down 37.0 vs
 * 35.7); persistent, Llama QKV M = 16 deep 19.9 vs wide 21.9, gate/up 61.3 vs 61.7. */
static int sk_depth_switch(void) { /* 0 auto, 1 wide, 2 deep, 3 wide1 */
    const int v = tinfer_gemm_knobs_get()->gemm_skinny_stages;
    return v == TINFER_KNOB_SKINNY_WIDE || v == TINFER_KNOB_SKINNY_DEEP || v == TINFER_KNOB_SKINNY_WIDE1 ? v : 0;
}

/* Knob gemm_skinny_ksub 1|2|4 (measurement): 64-wide k-blocks per stage for both kernels; 0
 * (unset, or any other value): TINFER_GEMM_BF16_SKINNY_KSUB / _KSUB_SPLIT (bf16.h). */
static int sk_ksub_switch(void) {
    const int v = tinfer_gemm_knobs_get()->gemm_skinny_ksub;
    return v == 1 || v == 2 || v == 4 ? v : 0;
}

template <int BT>
static tinfer_status sk_launch(const tinfer_gemm_bf16_args *a, int32_t ksplit, const SkOcc *occ, int n_sm,
                               cudaStream_t s, tinfer_err *err) {
    using G = SkGeo<BT>;
    tinfer_status status = TINFER_OK;
    CUtensorMap mw, mx;
    if ((status = tinfer_gemm_bf16_tma_map(&mw, a->W, a->N, a->K, a->ldw, 64, "W", err)) != TINFER_OK) return status;
    if ((status = tinfer_gemm_bf16_tma_map(&mx, a->X, a->M, a->K, a->ldx, BT, "X", err)) != TINFER_OK) return status;
    {
        const int64_t nout = tinfer_gemm_bf16_nout(*a), ow = a->swiglu ? 64 : 128;
        const int64_t tiles_t = (a->M + BT - 1) / BT, tiles = ((nout + ow - 1) / ow) * tiles_t;
        const int32_t kblocks = (int32_t)((a->K + SK_BK - 1) / SK_BK);
        if (ksplit > kblocks) ksplit = kblocks;
        if (ksplit > 1) { /* every CTA of a cluster gets a non-empty share */
            const int32_t kper = (kblocks + ksplit - 1) / ksplit;
            ksplit = (kblocks + kper - 1) / kper;
        }
        if (tiles * ksplit > INT32_MAX / 2) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 skinny: too many tiles");
        const int dsw = sk_depth_switch();
        const bool deep = ksplit > 1 ? dsw == 2 : dsw != 1 && dsw != 3;
        /* k-blocks per stage: the switch's or the default, lowered until the ring keeps 3 stages and, for
         * the split kernel, its stage area holds the scratch and the pushed partial sums */
        const int budget = (deep ? SK_SMEM_DEEP : SK_SMEM_WIDE) - (ksplit > 1 ? 0 : G::SCR_BYTES);
        int ksub = sk_ksub_switch();
        if (ksub == 0) ksub = ksplit > 1 ? TINFER_GEMM_BF16_SKINNY_KSUB_SPLIT : TINFER_GEMM_BF16_SKINNY_KSUB;
        while (ksub > 1 && (G::fit(budget, ksub) < 3 ||
                            (ksplit > 1 && G::fit(budget, ksub) * ksub * G::SUB_BYTES < G::SCR_BYTES + G::MAX_SLOTS * G::SLOT_BYTES)))
            ksub /= 2;
        const uint32_t stages = (uint32_t)G::fit(budget, ksub);
        const int64_t slots = dsw == 3 ? n_sm : occ->pers[deep ? 1 : 0] > 0 ? occ->pers[deep ? 1 : 0] : n_sm;
        const int64_t grid = ksplit > 1 ? tiles * ksplit : tiles < slots ? tiles : slots;
        int32_t flags = 0;
        if (tinfer_bf16_epi_v16_ok(*a)) flags |= SK_F_V16;
        if (ksplit > 1 && tinfer_gemm_bf16_split_asyncred()) flags |= SK_F_ASYNCRED;
        /* PDL as rung 03 (short K), and wherever no CTA walks several tiles (split, or a
         * persistent grid with a tile per CTA): a CTA that walks several tiles lost with it (H200
         * session 5: Llama gate/up M = 16 61.3 -> 64.8 us), one-tile CTAs gained (Llama down M = 16
         * split 2 35.7 -> 33.7, QKV M = 16 unsplit 19.9 -> 18.2) */
        const int pm = tinfer_gemm_bf16_wgmma_pdl_mode();
        const bool pdl = pm == 1 || (pm == 2 && (a->K <= TINFER_GEMM_BF16_WGMMA_PDL_MAX_K || grid >= tiles));
        cudaLaunchConfig_t lc;
        cudaLaunchAttribute attr[2];
        tinfer_tc_launch_cfg(&lc, attr, (unsigned)grid, SK_THREADS,
                             (size_t)(ksplit > 1 ? G::smem((int)stages, ksub) : G::p_smem((int)stages, ksub)), s, ksplit, pdl);
        auto *kern = ksplit > 1 ? (ksub == 4 ? sk_kernel<BT, true, 4> : ksub == 2 ? sk_kernel<BT, true, 2> : sk_kernel<BT, true, 1>)
                                : (ksub == 4 ? sk_kernel<BT, false, 4> : ksub == 2 ? sk_kernel<BT, false, 2> : sk_kernel<BT, false, 1>);
        TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, kern, mw, mx, *a, (int32_t)tiles_t, (int32_t)tiles, kblocks, flags,
                                                ksplit > 1 ? ksplit : 1, stages));
        TINFER_CUDA_LAUNCH_CHECK(err, "sk_kernel");
    }
cleanup:
    return status;
}

tinfer_status tinfer_gemm_bf16_skinny(const tinfer_gemm_bf16_args *a, int32_t bt, int32_t ksplit, cudaStream_t s,
                                      tinfer_err *err) {
    tinfer_cuda_facts f;
    const tinfer_status fs = tinfer_cuda_current_facts(&f, err);
    if (fs != TINFER_OK) return fs;
    if (f.cc_major != 9)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 skinny: needs sm_90 (device %d is sm_%d*)", f.device, f.cc_major);
    if (a->M > INT32_MAX || a->N > INT32_MAX || a->K > INT32_MAX)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 skinny: dimension over 2^31");
    if (bt == 0) bt = tinfer_gemm_bf16_skinny_bt(a->M);
    if (bt != 8 && bt != 16 && bt != 32 && bt != 64)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 skinny: token tile %d (8, 16, 32, 64 or 0 = auto)", (int)bt);
    if (ksplit < 0 || ksplit > 8)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 skinny: split-K factor %d (0 = auto, 1..8)", (int)ksplit);
    const SkOcc *occ = NULL;
    const tinfer_status st = sk_occupancy(f.device, f.n_sm, bt, &occ, err); /* also sets the smem limits */
    if (st != TINFER_OK) return st;
    if (ksplit == 0) {
        /* picked for the token tile the pick would choose; a forced other tile runs unsplit */
        const int64_t nout = tinfer_gemm_bf16_nout(*a);
        ksplit = bt == tinfer_gemm_bf16_skinny_bt(a->M) ? tinfer_gemm_bf16_skinny_pick(a->M, nout, a->K, a->swiglu, f.n_sm, occ->clusters) : 1;
    }
    switch (bt) {
    case 8: return sk_launch<8>(a, ksplit, occ, f.n_sm, s, err);
    case 16: return sk_launch<16>(a, ksplit, occ, f.n_sm, s, err);
    case 32: return sk_launch<32>(a, ksplit, occ, f.n_sm, s, err);
    default: return sk_launch<64>(a, ksplit, occ, f.n_sm, s, err);
    }
}

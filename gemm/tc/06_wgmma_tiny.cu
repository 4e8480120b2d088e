/*
 * 06_wgmma_tiny.cu — prefill rung 6 (sm_90a): the small GEMM of a small model, one 64-row weight
 * tile x BT tokens per CTA, every k-block in flight at once, the weight tile multicast to the CTAs
 * of the other token tiles.
 *
 * Why: SmolLM2's layer weights are 0.7-3.5 MB. At 32-512 tokens rungs 03 / 04 need 4.3-4.7 us of
 * device time per call where cuBLAS needs 3.3-3.9 (gemm/NOTES.md, session 9). Rung 03 gives such a
 * shape a handful of 128 x 72 CTAs, each pulling ~225 KB through one SM; its split-K reduction
 * costs 1.9-2.5 us. cuBLAS (H200 session 10, SmolLM2 O 576 x 576 at M = 128) runs 80 CTAs of
 * 64 x 16 in clusters of 8. Here the work is spread the same way, in rung 05's operand-swapped
 * form (W is wgmma's 64-row A operand, the tokens its N):
 *  - CTA (row tile w, token tile t): 64 outputs (64 W rows; with SwiGLU the 64 gate rows j0.. and
 *    the 64 up rows F + j0.., two slabs) x BT tokens, over all of K.
 *  - Every k-block has its own slot in shared memory (W slabs + X box), so nothing is reused: the
 *    producer thread issues every TMA load at once and there are no empty barriers; the consumer
 *    warpgroup waits for each slot's full barrier in turn. One CTA holds up to
 *    tinfer_gemm_bf16_tiny_max_k of K.
 *  - Longer K (SmolLM2 down, K = 1536) is split over a cluster of f CTAs, each holding its share
 *    of the k-blocks: ranks >= 1 push their accumulators into rank 0's reduction area with
 *    st.async, counted on a barrier rank 0 armed at init (so no cluster barrier after the main
 *    loop); rank 0 adds them in rank order (deterministic) and runs the epilogue.
 *  - Or (measured slower, off by default): the token tiles of a row tile form a cluster of c CTAs
 *    (c <= 8), rank r loads the W box of k-blocks kb with kb % c == r and multicasts it to all c
 *    CTAs, so the weight tile leaves L2 once per cluster; each CTA loads its own X boxes. Each
 *    slot's barrier expects its W and X bytes, whichever CTA issued them.
 *  - PDL: launch_dependents at the start; with args.w_static the W loads go before
 *    griddepcontrol.wait (the weights are not written by the kernels in flight), X after.
 *  - Epilogue: accumulators to shared memory as [token][row] (the slots are idle by then), each
 *    thread stores 8 consecutive outputs of one token (tinfer_bf16_epi_store8: bias, SwiGLU,
 *    residual, 16-byte stores when aligned).
 * Ragged M / N / K: TMA zero-fills rows and columns outside the matrices; only tokens < M and
 * outputs < N' are stored. Constraints: those of rung 03 (K % 8 == 0, ldx % 8 == 0, ldw % 8 == 0, X
 * and W 16-byte aligned); sm_90 only; K up to 8 CTAs' worth (TINFER_ERR_UNSUPPORTED beyond).
 * Measured (H200, session 10 runs 7 and, for down, 9; graph timing, us, against the faster of
 * cuBLAS / cublasLt; gemm/NOTES.md "Session 10", which also has run 9's slower unsplit figures):
 * SmolLM2 QKV M = 16 / 32 / 64 / 128 2.66 / 2.75 / 3.04 / 3.01 (3.35 / 3.32 / 3.37 /
 * 3.46), O M = 128 / 512 3.10 / 3.60 (3.38 / 3.63), gate/up M = 32 3.38 (3.79), down (split) M =
 * 16 / 32 / 64 / 128 3.07 / 3.28 / 3.43 / 4.34 (4.7-4.9); W multicast lost (QKV M = 512 over 8 CTAs
 * 5.90 vs 4.46 without).
 */
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/decode/ptx.cuh"
#include "gemm/tc/bf16_epi.cuh"
#include "gemm/tc/gemm_bf16_tc_internal.h"
#include "gemm/tc/sm90.cuh"

#include <string.h>

#define TY_BK 64
#define TY_SLAB (64 * TY_BK * 2) /* one 64-row W box of a k-block */
#define TY_THREADS 160
#define TY_SMEM_MAX 232448     /* the 227 KB per-block limit */
#define TY_MAX_KB 31           /* k-block slots per CTA at most: their barriers + the split's fit TY_BAR_BYTES */
#define TY_BAR_BYTES 256

template <int BT, int SL> struct TyGeo {
    static_assert(BT == 16 || BT == 32, "token tile 16 or 32");
    static constexpr int X_BYTES = BT * TY_BK * 2;
    static constexpr int KB_BYTES = SL * TY_SLAB + X_BYTES; /* one k-block's slot */
    static constexpr int RS = 64 * SL + 4;                  /* scratch floats per token (+4: banks) */
    static constexpr int MAX_KB = (TY_SMEM_MAX - 1024 - TY_BAR_BYTES) / KB_BYTES > TY_MAX_KB
                                      ? TY_MAX_KB
                                      : (TY_SMEM_MAX - 1024 - TY_BAR_BYTES) / KB_BYTES;
    /* one CTA's accumulators, pushed to the owner of a split tile: 128 threads x SL x BT / 2 floats */
    static constexpr int RED_BYTES = 128 * SL * (BT / 2) * 4;
    /* kslots k-block slots, the (ksplit - 1) pushed partial sums (split owner), the barriers */
    static constexpr int smem(int kslots, int ksplit = 1) {
        return kslots * KB_BYTES + (ksplit - 1) * RED_BYTES + 1024 + TY_BAR_BYTES;
    }
    static_assert(KB_BYTES % 1024 == 0, "slots keep the 1024-byte swizzle alignment");
    static_assert((MAX_KB + 1) * 8 <= TY_BAR_BYTES, "full barriers of every slot and the split barrier fit");
    static_assert(BT * RS * 4 <= KB_BYTES, "the epilogue scratch fits the first slot");
};

/* gx: CTAs per row tile (token tiles rounded up to the cluster size c); grid = row tiles x gx x
 * ksplit. ksplit > 1 (then c = 1): a cluster of ksplit CTAs shares a tile, rank r over k-blocks
 * [r kper, (r + 1) kper), kper = kslots; ranks >= 1 push their accumulators into rank 0's
 * reduction area with st.async counted on its barrier, rank 0 adds them in rank order. */
template <int BT, int SL>
static __global__ void __launch_bounds__(TY_THREADS, 1)
    ty_kernel(const __grid_constant__ CUtensorMap map_w, const __grid_constant__ CUtensorMap map_x,
              tinfer_gemm_bf16_args a, int32_t gx, int32_t kblocks, int32_t c, int32_t ksplit, int32_t kslots, int32_t v16,
              int32_t early) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using G = TyGeo<BT, SL>;
    extern __shared__ uint8_t ty_smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)ty_smem_raw + 1023) & ~(uintptr_t)1023);
    uint8_t *red = smem + kslots * G::KB_BYTES;
    uint64_t *full = (uint64_t *)(red + (ksplit - 1) * G::RED_BYTES);
    uint64_t *redbar = full + kslots;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int32_t tile = (int32_t)blockIdx.x / ksplit, rk = (int32_t)blockIdx.x % ksplit;
    const int32_t tw = tile / gx, tt = tile % gx;
    const int32_t rank = tt % c; /* clusters of c consecutive token tiles of one row tile (W multicast) */
    const int32_t kb0 = rk * kslots, kb1 = kb0 + kslots < kblocks ? kb0 + kslots : kblocks, nkb = kb1 - kb0;

    if (threadIdx.x == 0) {
        for (int32_t i = 0; i < kslots; i++) mbar_init(&full[i], 1); /* the local producer's arrive.expect_tx */
        if (ksplit > 1) mbar_init(redbar, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        /* split owner: its one arrival, and the bytes the other ranks push */
        if (ksplit > 1 && rk == 0) mbar_expect_tx(redbar, (uint32_t)((ksplit - 1) * G::RED_BYTES));
    }
    /* every CTA's barriers exist before any peer multicasts into it or pushes to it */
    if (c > 1 || ksplit > 1) cluster_sync_all();
    else __syncthreads();

    if (warp == 4) {
        if (lane == 0) {
            asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_w) : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_x) : "memory");
            /* W rows of the slabs: plain 64 tw.., SwiGLU gate 64 tw.. and up F + 64 tw.. (gate rows
             * past F read up rows: their outputs are >= N' and not stored) */
            const int32_t row0 = tw * 64, row1 = (int32_t)(a.N / 2) + tw * 64;
            const uint16_t mask = (uint16_t)((1u << c) - 1u);
            for (int32_t i = 0; i < nkb; i++) mbar_expect_tx(&full[i], (uint32_t)G::KB_BYTES);
            auto load_w = [&]() {
                for (int32_t kb = kb0 + rank; kb < kb1; kb += c) {
                    uint8_t *slot = smem + (kb - kb0) * G::KB_BYTES;
                    for (int s = 0; s < SL; s++) {
                        if (c > 1) tma_load_2d_mc(slot + s * TY_SLAB, &map_w, kb * TY_BK, s ? row1 : row0, &full[kb - kb0], mask);
                        else tma_load_2d(slot + s * TY_SLAB, &map_w, kb * TY_BK, s ? row1 : row0, &full[kb - kb0]);
                    }
                }
            };
            if (early) load_w();
            tdec::pdl_launch_dependents();
            tdec::pdl_wait();
            if (!early) load_w();
            for (int32_t kb = kb0; kb < kb1; kb++)
                tma_load_2d(smem + (kb - kb0) * G::KB_BYTES + SL * TY_SLAB, &map_x, kb * TY_BK, tt * BT, &full[kb - kb0]);
        }
    } else {
        /* the consumers touch global memory only in the epilogue, after the previous kernel */
        tdec::pdl_wait();
        float d[SL][BT / 2];
#pragma unroll
        for (int s = 0; s < SL; s++) fence_acc(d[s]);
        for (int32_t i = 0; i < nkb; i++) {
            mbar_wait(&full[i], 0);
            const uint8_t *slot = smem + i * G::KB_BYTES;
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < TY_BK / 16; kk++) {
                const uint64_t dx = wgmma_desc(slot + SL * TY_SLAB + kk * 32);
                const uint32_t acc = i != 0 || kk != 0;
#pragma unroll
                for (int s = 0; s < SL; s++) wgmma_m64xn<BT>(d[s], wgmma_desc(slot + s * TY_SLAB + kk * 32), dx, acc);
            }
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
        for (int s = 0; s < SL; s++) fence_acc(d[s]);
        if (ksplit > 1) {
            /* chunk q of 4 accumulators (slab s, registers 4j..) sits at (q, thread) in 16-byte
             * units, pusher rk at chunk (rk - 1) SL BT / 8 + q: each warp writes 512 bytes in a row */
            constexpr int NCH = SL * BT / 8;
            if (rk != 0) {
                const uint32_t bar = cluster_map(redbar, 0);
                const uint32_t base = cluster_map(red + ((rk - 1) * NCH) * 2048 + threadIdx.x * 16, 0);
#pragma unroll
                for (int s = 0; s < SL; s++)
#pragma unroll
                    for (int j = 0; j < BT / 8; j++)
                        st_async_f4(base + (s * (BT / 8) + j) * 2048,
                                    make_float4(d[s][4 * j], d[s][4 * j + 1], d[s][4 * j + 2], d[s][4 * j + 3]), bar);
                return;
            }
            mbar_wait(redbar, 0);
            for (int32_t r = 1; r < ksplit; r++) /* rank order: deterministic */
#pragma unroll
                for (int s = 0; s < SL; s++)
#pragma unroll
                    for (int j = 0; j < BT / 8; j++) {
                        const float4 v = *(const float4 *)(red + ((r - 1) * NCH + s * (BT / 8) + j) * 2048 + threadIdx.x * 16);
                        d[s][4 * j] += v.x; d[s][4 * j + 1] += v.y; d[s][4 * j + 2] += v.z; d[s][4 * j + 3] += v.w;
                    }
        }
        /* Every slot has landed and been read: slot 0 becomes the scratch [token][64 SL rows].
         * Register i of a slab: row 16 warp + g + 8 ((i >> 1) & 1), token 8 (i >> 2) + 2t + (i & 1)
         * (m64nBT layout); rows RS floats apart put lanes (g, t) on banks g + 8t + const. */
        float *scr = (float *)smem;
        const int g = lane / 4, t = lane % 4;
#pragma unroll
        for (int s = 0; s < SL; s++)
#pragma unroll
            for (int i = 0; i < BT / 2; i++)
                scr[(8 * (i >> 2) + 2 * t + (i & 1)) * G::RS + 64 * s + 16 * warp + g + 8 * ((i >> 1) & 1)] = d[s][i];
        asm volatile("bar.sync 1, 128;" ::: "memory");
        const tinfer_epi8 e = tinfer_epi8_make(a, v16 != 0);
        for (int idx = threadIdx.x; idx < BT * 8; idx += 128) {
            const int tok = idx / 8, r = 8 * (idx % 8);
            const int64_t m = (int64_t)tt * BT + tok, j0 = (int64_t)tw * 64 + r;
            if (m >= e.M || j0 >= e.nout) continue;
            float v[8], u[8];
            const float *p = scr + tok * G::RS + r;
#pragma unroll
            for (int k = 0; k < 8; k++) {
                v[k] = p[k];
                u[k] = SL > 1 ? p[64 + k] : 0.f;
            }
            tinfer_bf16_epi_store8(e, a, m, j0, v, u);
        }
    }
    /* no CTA leaves while a peer may still multicast into it */
    if (c > 1) cluster_sync_all();
#else
    (void)map_w; (void)map_x; (void)a; (void)gx; (void)kblocks; (void)c; (void)v16; (void)early;
    __trap();
#endif
}

int64_t tinfer_gemm_bf16_tiny_max_k(int32_t bt, int32_t swiglu) {
    const int kb = bt == 32 ? (swiglu ? TyGeo<32, 2>::MAX_KB : TyGeo<32, 1>::MAX_KB)
                            : (swiglu ? TyGeo<16, 2>::MAX_KB : TyGeo<16, 1>::MAX_KB);
    return (int64_t)kb * TY_BK;
}

/* kblocks over ksplit ranks: the k-block slots per CTA (0 when some rank would have none, or a
 * CTA's slots and reduction area do not fit its shared memory) */
template <int BT, int SL> static int32_t ty_kslots(int64_t kblocks, int32_t ksplit) {
    const int64_t kper = (kblocks + ksplit - 1) / ksplit;
    if ((kblocks + kper - 1) / kper != ksplit || kper > TY_MAX_KB || TyGeo<BT, SL>::smem((int)kper, ksplit) > TY_SMEM_MAX) return 0;
    return (int32_t)kper;
}
/* CTAs of this shape that share an SM: per_sm, or fewer where their shared memory does not fit
 * (228 KB per SM, 1 KB of it reserved per CTA); 0 when the split does not fit at all. */
template <int BT, int SL> static int64_t ty_per_sm(int64_t kblocks, int32_t ksplit, int per_sm) {
    const int32_t kper = ty_kslots<BT, SL>(kblocks, ksplit);
    if (!kper) return 0;
    const int64_t fit = (int64_t)(228 * 1024) / (TyGeo<BT, SL>::smem(kper, ksplit) + 1024);
    return fit < per_sm ? fit : per_sm;
}
/* The smallest split-K factor (1..TINFER_GEMM_BF16_TINY_MAX_SPLIT) whose CTAs hold their k-blocks */
template <int BT, int SL> static int32_t ty_min_split(int64_t kblocks) {
    for (int32_t f = 1; f <= TINFER_GEMM_BF16_TINY_MAX_SPLIT; f++)
        if (ty_kslots<BT, SL>(kblocks, f)) return f;
    return 0;
}
template <int BT> static int32_t ty_min_split_sw(int64_t kblocks, int32_t swiglu) {
    return swiglu ? ty_min_split<BT, 2>(kblocks) : ty_min_split<BT, 1>(kblocks);
}

int32_t tinfer_gemm_bf16_tiny_pick(int64_t M, int64_t nout, int64_t K, int32_t swiglu, int32_t n_sm, int32_t *ksplit) {
    if (ksplit) *ksplit = 0;
    if (n_sm <= 0 || M < 1 || nout < 1 || K < 1) return 0;
    const int64_t rows = (nout + 63) / 64, kblocks = (K + TY_BK - 1) / TY_BK;
    for (int32_t bt = 16; bt <= 32; bt += 16) {
        const int32_t f0 = bt == 16 ? ty_min_split_sw<16>(kblocks, swiglu) : ty_min_split_sw<32>(kblocks, swiglu);
        if (!f0) continue;
        const int per = bt == 16 ? TINFER_GEMM_BF16_TINY_CTAS16_PER_SM : TINFER_GEMM_BF16_TINY_CTAS32_PER_SM;
        /* a K that fits one CTA is not split; one that does not is split as widely as the CTA
         * limit allows (bf16.h, TINFER_GEMM_BF16_TINY_MAX_SPLIT) */
        for (int32_t f = f0 == 1 ? 1 : TINFER_GEMM_BF16_TINY_MAX_SPLIT; f >= f0; f--) {
            const int64_t spm = bt == 16 ? (swiglu ? ty_per_sm<16, 2>(kblocks, f, per) : ty_per_sm<16, 1>(kblocks, f, per))
                                         : (swiglu ? ty_per_sm<32, 2>(kblocks, f, per) : ty_per_sm<32, 1>(kblocks, f, per));
            if (spm > 0 && rows * ((M + bt - 1) / bt) * f <= spm * n_sm) {
                if (ksplit) *ksplit = f;
                return bt;
            }
        }
    }
    return 0;
}

template <int BT, int SL>
static tinfer_status ty_launch(const tinfer_gemm_bf16_args *a, int32_t cluster, int32_t ksplit, int dev, cudaStream_t s,
                               tinfer_err *err) {
    using G = TyGeo<BT, SL>;
    tinfer_status status = TINFER_OK;
    static int attr_dev = -1;
    CUtensorMap mw, mx;
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    const int32_t kblocks = (int32_t)((a->K + TY_BK - 1) / TY_BK);
    const int64_t tiles_t = (a->M + BT - 1) / BT, tiles_w = (nout + 63) / 64;
    const int32_t c = cluster;
    if (c != 1 && c != 2 && c != 4 && c != 8)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: cluster %d (1, 2, 4, 8 or 0 = default)", (int)c);
    if (ksplit < 1 || ksplit > 8 || (ksplit > 1 && c > 1))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: split-K factor %d with cluster %d (1..8, split only without multicast)",
                              (int)ksplit, (int)c);
    if (ksplit > kblocks) ksplit = kblocks;
    if (ksplit > 1) { /* every rank gets some k-blocks */
        const int32_t kper = (kblocks + ksplit - 1) / ksplit;
        ksplit = (kblocks + kper - 1) / kper;
    }
    const int32_t kslots = ty_kslots<BT, SL>(kblocks, ksplit);
    if (!kslots)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 tiny: K=%lld split %d does not fit (%d k-blocks per CTA at most)",
                              (long long)a->K, (int)ksplit, (int)G::MAX_KB);
    const int64_t gx = (tiles_t + c - 1) / c * c;
    if (gx * tiles_w * ksplit > 0x7fffffff) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: too many tiles");
    if ((status = tinfer_gemm_bf16_tma_map(&mw, a->W, a->N, a->K, a->ldw, 64, "W", err)) != TINFER_OK) return status;
    if ((status = tinfer_gemm_bf16_tma_map(&mx, a->X, a->M, a->K, a->ldx, BT, "X", err)) != TINFER_OK) return status;
    if (attr_dev != dev) {
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(ty_kernel<BT, SL>, cudaFuncAttributeMaxDynamicSharedMemorySize, TY_SMEM_MAX));
        attr_dev = dev;
    }
    {
        const bool pdl = tinfer_gemm_bf16_wgmma_pdl_mode() != 0;
        cudaLaunchConfig_t lc;
        cudaLaunchAttribute attr[2];
        tinfer_tc_launch_cfg(&lc, attr, dim3((unsigned)(gx * tiles_w * ksplit)), TY_THREADS, (size_t)G::smem(kslots, ksplit), s,
                             ksplit > 1 ? ksplit : c, pdl);
        TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, ty_kernel<BT, SL>, mw, mx, *a, (int32_t)gx, kblocks, c, ksplit, kslots,
                                                (int32_t)tinfer_bf16_epi_v16_ok(*a), (int32_t)(pdl && a->w_static)));
        TINFER_CUDA_LAUNCH_CHECK(err, "ty_kernel");
    }
cleanup:
    return status;
}

tinfer_status tinfer_gemm_bf16_tiny(const tinfer_gemm_bf16_args *a, int32_t bt, int32_t cluster, int32_t ksplit, cudaStream_t s,
                                    tinfer_err *err) {
    tinfer_cuda_facts f;
    const tinfer_status fs = tinfer_cuda_current_facts(&f, err);
    if (fs != TINFER_OK) return fs;
    if (f.cc_major != 9)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 tiny: needs sm_90 (device %d is sm_%d*)", f.device, f.cc_major);
    if (a->M > INT32_MAX || a->N > INT32_MAX || a->K > INT32_MAX)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: dimension over 2^31");
    const int64_t nout = tinfer_gemm_bf16_nout(*a), kblocks = (a->K + TY_BK - 1) / TY_BK;
    int32_t pf = 0; /* the pick's tile and split factor, computed once */
    const int32_t pbt = bt == 0 || ksplit == 0 ? tinfer_gemm_bf16_tiny_pick(a->M, nout, a->K, a->swiglu, f.n_sm, &pf) : 0;
    if (bt == 0) /* the pick's tile, or where it declines, 16 tokens while that is one CTA per SM */
        bt = pbt ? pbt : (nout + 63) / 64 * ((a->M + 15) / 16) <= f.n_sm ? 16 : 32;
    if (bt != 16 && bt != 32) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: token tile %d (16, 32 or 0 = auto)", (int)bt);
    if (cluster == 0) cluster = TINFER_GEMM_BF16_TINY_CLUSTER;
    if (ksplit == 0) { /* the pick's factor for this tile, else the smallest whose CTAs hold their k-blocks */
        if (cluster != 1 || pbt != bt) pf = 0;
        ksplit = cluster > 1 ? 1 : pf ? pf : bt == 16 ? ty_min_split_sw<16>(kblocks, a->swiglu) : ty_min_split_sw<32>(kblocks, a->swiglu);
        if (ksplit == 0)
            return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 tiny: K=%lld does not fit %d CTAs", (long long)a->K,
                                  TINFER_GEMM_BF16_TINY_MAX_SPLIT);
    }
    if (bt == 16) return a->swiglu ? ty_launch<16, 2>(a, cluster, ksplit, f.device, s, err) : ty_launch<16, 1>(a, cluster, ksplit, f.device, s, err);
    return a->swiglu ? ty_launch<32, 2>(a, cluster, ksplit, f.device, s, err) : ty_launch<32, 1>(a, cluster, ksplit, f.device, s, err);
}

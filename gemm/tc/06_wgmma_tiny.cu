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
 *    warpgroup waits for each slot's full barrier in turn. K is limited by what fits
 *    (tinfer_gemm_bf16_tiny_max_k); longer rows are refused (TINFER_ERR_UNSUPPORTED).
 *  - The token tiles of a row tile form a cluster of c CTAs (c <= 8): rank r loads the W box of
 *    k-blocks kb with kb % c == r and multicasts it to all c CTAs, so the weight tile leaves L2 once
 *    per cluster; each CTA loads its own X boxes. Each slot's barrier expects its W and X bytes,
 *    whichever CTA issued them.
 *  - PDL: launch_dependents at the start; with args.w_static the W loads go before
 *    griddepcontrol.wait (the weights are not written by the kernels in flight), X after.
 *  - Epilogue: accumulators to shared memory as [token][row] (the slots are idle by then), each
 *    thread stores 8 consecutive outputs of one token (tinfer_bf16_epi_store8: bias, SwiGLU,
 *    residual, 16-byte stores when aligned).
 * Ragged M / N / K: TMA zero-fills rows and columns outside the matrices; only tokens < M and
 * outputs < N' are stored. Constraints: those of rung 03 (K % 8 == 0, ldx % 8 == 0, ldw % 8 == 0, X
 * and W 16-byte aligned); sm_90 only.
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
#define TY_MAX_KB 32           /* barriers: 32 x 8 bytes */
#define TY_BAR_BYTES (TY_MAX_KB * 8)

template <int BT, int SL> struct TyGeo {
    static_assert(BT == 16 || BT == 32, "token tile 16 or 32");
    static constexpr int X_BYTES = BT * TY_BK * 2;
    static constexpr int KB_BYTES = SL * TY_SLAB + X_BYTES; /* one k-block's slot */
    static constexpr int RS = 64 * SL + 4;                  /* scratch floats per token (+4: banks) */
    static constexpr int MAX_KB = (TY_SMEM_MAX - 1024 - TY_BAR_BYTES) / KB_BYTES > TY_MAX_KB
                                      ? TY_MAX_KB
                                      : (TY_SMEM_MAX - 1024 - TY_BAR_BYTES) / KB_BYTES;
    static constexpr int smem(int kblocks) { return kblocks * KB_BYTES + 1024 + TY_BAR_BYTES; }
    static_assert(KB_BYTES % 1024 == 0, "slots keep the 1024-byte swizzle alignment");
    static_assert(BT * RS * 4 <= KB_BYTES, "the epilogue scratch fits the first slot");
};

/* gx: CTAs per row tile (token tiles rounded up to the cluster size c); grid = row tiles x gx. */
template <int BT, int SL>
static __global__ void __launch_bounds__(TY_THREADS, 1)
    ty_kernel(const __grid_constant__ CUtensorMap map_w, const __grid_constant__ CUtensorMap map_x,
              tinfer_gemm_bf16_args a, int32_t gx, int32_t kblocks, int32_t c, int32_t v16, int32_t early) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using G = TyGeo<BT, SL>;
    extern __shared__ uint8_t ty_smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)ty_smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(smem + kblocks * G::KB_BYTES);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int32_t tw = (int32_t)blockIdx.x / gx, tt = (int32_t)blockIdx.x % gx;
    const int32_t rank = tt % c; /* clusters are c consecutive CTAs of one row tile */

    if (threadIdx.x == 0) {
        for (int32_t kb = 0; kb < kblocks; kb++) mbar_init(&full[kb], 1); /* the local producer's arrive.expect_tx */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    /* every CTA's barriers exist before any peer multicasts into it */
    if (c > 1) cluster_sync_all();
    else __syncthreads();

    if (warp == 4) {
        if (lane == 0) {
            asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_w) : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_x) : "memory");
            /* W rows of the slabs: plain 64 tw.., SwiGLU gate 64 tw.. and up F + 64 tw.. (gate rows
             * past F read up rows: their outputs are >= N' and not stored) */
            const int32_t row0 = tw * 64, row1 = (int32_t)(a.N / 2) + tw * 64;
            const uint16_t mask = (uint16_t)((1u << c) - 1u);
            for (int32_t kb = 0; kb < kblocks; kb++) mbar_expect_tx(&full[kb], (uint32_t)G::KB_BYTES);
            auto load_w = [&]() {
                for (int32_t kb = rank; kb < kblocks; kb += c) {
                    uint8_t *slot = smem + kb * G::KB_BYTES;
                    for (int s = 0; s < SL; s++) {
                        if (c > 1) tma_load_2d_mc(slot + s * TY_SLAB, &map_w, kb * TY_BK, s ? row1 : row0, &full[kb], mask);
                        else tma_load_2d(slot + s * TY_SLAB, &map_w, kb * TY_BK, s ? row1 : row0, &full[kb]);
                    }
                }
            };
            if (early) load_w();
            tdec::pdl_launch_dependents();
            tdec::pdl_wait();
            if (!early) load_w();
            for (int32_t kb = 0; kb < kblocks; kb++)
                tma_load_2d(smem + kb * G::KB_BYTES + SL * TY_SLAB, &map_x, kb * TY_BK, tt * BT, &full[kb]);
        }
    } else {
        /* the consumers touch global memory only in the epilogue, after the previous kernel */
        tdec::pdl_wait();
        float d[SL][BT / 2];
#pragma unroll
        for (int s = 0; s < SL; s++) fence_acc(d[s]);
        for (int32_t kb = 0; kb < kblocks; kb++) {
            mbar_wait(&full[kb], 0);
            const uint8_t *slot = smem + kb * G::KB_BYTES;
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < TY_BK / 16; kk++) {
                const uint64_t dx = wgmma_desc(slot + SL * TY_SLAB + kk * 32);
                const uint32_t acc = kb != 0 || kk != 0;
#pragma unroll
                for (int s = 0; s < SL; s++) wgmma_m64xn<BT>(d[s], wgmma_desc(slot + s * TY_SLAB + kk * 32), dx, acc);
            }
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
        for (int s = 0; s < SL; s++) fence_acc(d[s]);
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

template <int BT, int SL>
static tinfer_status ty_launch(const tinfer_gemm_bf16_args *a, int32_t cluster, int dev, cudaStream_t s, tinfer_err *err) {
    using G = TyGeo<BT, SL>;
    tinfer_status status = TINFER_OK;
    static int attr_dev = -1;
    CUtensorMap mw, mx;
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    const int32_t kblocks = (int32_t)((a->K + TY_BK - 1) / TY_BK);
    const int64_t tiles_t = (a->M + BT - 1) / BT, tiles_w = (nout + 63) / 64;
    if (kblocks > G::MAX_KB)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 tiny: K=%lld over %lld (every k-block in shared memory)",
                              (long long)a->K, (long long)G::MAX_KB * TY_BK);
    const int32_t c = cluster;
    if (c != 1 && c != 2 && c != 4 && c != 8)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: cluster %d (1, 2, 4, 8 or 0 = default)", (int)c);
    const int64_t gx = (tiles_t + c - 1) / c * c;
    if (gx * tiles_w > 0x7fffffff) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: too many tiles");
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
        tinfer_tc_launch_cfg(&lc, attr, dim3((unsigned)(gx * tiles_w)), TY_THREADS, (size_t)G::smem(kblocks), s, c, pdl);
        TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, ty_kernel<BT, SL>, mw, mx, *a, (int32_t)gx, kblocks, c,
                                                (int32_t)tinfer_bf16_epi_v16_ok(*a), (int32_t)(pdl && a->w_static)));
        TINFER_CUDA_LAUNCH_CHECK(err, "ty_kernel");
    }
cleanup:
    return status;
}

/* CTAs of this shape that share an SM: per_sm, or fewer where their shared memory does not fit
 * (228 KB per SM, 1 KB of it reserved per CTA); 0 when K does not fit a CTA at all. */
template <int BT, int SL> static int64_t ty_per_sm(int64_t K, int per_sm) {
    const int64_t kb = (K + TY_BK - 1) / TY_BK;
    if (kb > TyGeo<BT, SL>::MAX_KB) return 0;
    const int64_t fit = (int64_t)(228 * 1024) / (TyGeo<BT, SL>::smem((int)kb) + 1024);
    return fit < per_sm ? fit : per_sm;
}

int32_t tinfer_gemm_bf16_tiny_pick(int64_t M, int64_t nout, int64_t K, int32_t swiglu, int32_t n_sm) {
    if (n_sm <= 0 || M < 1 || nout < 1 || K < 1) return 0;
    const int64_t rows = (nout + 63) / 64;
    const int64_t s16 = swiglu ? ty_per_sm<16, 2>(K, TINFER_GEMM_BF16_TINY_CTAS16_PER_SM) : ty_per_sm<16, 1>(K, TINFER_GEMM_BF16_TINY_CTAS16_PER_SM);
    const int64_t s32 = swiglu ? ty_per_sm<32, 2>(K, TINFER_GEMM_BF16_TINY_CTAS32_PER_SM) : ty_per_sm<32, 1>(K, TINFER_GEMM_BF16_TINY_CTAS32_PER_SM);
    if (rows * ((M + 15) / 16) <= s16 * n_sm) return 16;
    if (rows * ((M + 31) / 32) <= s32 * n_sm) return 32;
    return 0;
}

tinfer_status tinfer_gemm_bf16_tiny(const tinfer_gemm_bf16_args *a, int32_t bt, int32_t cluster, cudaStream_t s, tinfer_err *err) {
    tinfer_cuda_facts f;
    const tinfer_status fs = tinfer_cuda_current_facts(&f, err);
    if (fs != TINFER_OK) return fs;
    if (f.cc_major != 9)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 tiny: needs sm_90 (device %d is sm_%d*)", f.device, f.cc_major);
    if (a->M > INT32_MAX || a->N > INT32_MAX || a->K > INT32_MAX)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: dimension over 2^31");
    if (bt == 0) { /* the pick's tile, or where it declines, 16 tokens while that is one CTA per SM */
        const int64_t nout = tinfer_gemm_bf16_nout(*a);
        bt = tinfer_gemm_bf16_tiny_pick(a->M, nout, a->K, a->swiglu, f.n_sm);
        if (bt == 0) bt = (nout + 63) / 64 * ((a->M + 15) / 16) <= f.n_sm ? 16 : 32;
    }
    if (cluster == 0) cluster = TINFER_GEMM_BF16_TINY_CLUSTER;
    if (bt != 16 && bt != 32) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 tiny: token tile %d (16, 32 or 0 = auto)", (int)bt);
    if (bt == 16) return a->swiglu ? ty_launch<16, 2>(a, cluster, f.device, s, err) : ty_launch<16, 1>(a, cluster, f.device, s, err);
    return a->swiglu ? ty_launch<32, 2>(a, cluster, f.device, s, err) : ty_launch<32, 1>(a, cluster, f.device, s, err);
}

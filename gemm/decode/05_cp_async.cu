/*
 * 05_cp_async.cu — decode rung 5 (production decode path): rung 04's split-K + mma.sync, with
 * the weight tile staged through shared memory by a cp.async pipeline so that every warp-wide
 * load is 512 contiguous bytes of one row.
 *
 * Change from 04: 04's lanes load W straight into the mma fragment layout, so one warp load
 * instruction touches 8 rows x 64 B; measured 2.1-2.4 TB/s on Llama-3-8B shapes against 3.3 for
 * rung 03's row-contiguous loads (first H200 run, gemm/NOTES.md). Here a block of 256 threads
 * owns 16 output columns (32 weight rows with SwiGLU) and streams K in tiles of 256: each stage
 * is 16 rows x 512 B, loaded with cp.async.cg (16 B, L1 bypass, zero-fill past K and past N),
 * warp w loading rows w and w + 8 (whole 512 B rows). G05_STAGES = 6 stages keep 5 x 8 KB in
 * flight per block (~80 KB per SM at 2 blocks/SM; HOPPER_GEMM_NOTES §7 asks for >= 32 KB).
 * Compute: warp w takes the w-th 32-wide K chunk of every stage and runs rung 04's permuted-k
 * mma (lane (g, t) reads 16 B of rows g and g + 8 at granule 4w + t), so M <= 16 tokens share
 * each weight read. Shared layout: granule q of row r sits at q ^ (r & 7) (XOR within 128 B),
 * which makes those 16-byte reads conflict-free (8 rows hit 8 different bank groups).
 * The 8 warps' partial sums meet in shared memory; one thread per output runs the epilogue.
 * Rung 06 (same kernel, KS = 2; TINFER_GEMV_BF16_CLUSTER): a cluster of two blocks splits the
 * K tiles of the same 16 columns, so N = 4096 gives 512 blocks instead of 256 (a better spread
 * over 132 SMs than 2 vs 1 blocks per SM); block 1's partials reach block 0 through distributed
 * shared memory (cluster.map_shared_rank), no workspace, no atomics. sm_90 only.
 * Constraints: K % 8 == 0, 16-byte aligned rows (bf16.h). Tokens: passes of 16 (grid.y).
 * Measured (H200, 2026-12-02, run 4; % of the 4248 GB/s device-to-device copy): M=1: QKV
 * 6144x4096 16.8 us (71%, cuBLAS 17.0), gate/up 28672x4096 61.3 us (90.3%, cuBLAS 61.6), down
 * 4096x14336 35.0 us (79%); M=8: 19.2 / 77.5 / 43.2 us (+14% / +26% / +24% over M=1).
 * Rung 06: down 32.2 us at M=1 (86.0%, cuBLAS 31.7), 36.3 us at M=8; it loses at K = 4096
 * (QKV 22.9, gate/up 76.3 us), so dispatch takes it only for K >= 8192.
 * Tried and reverted (run 3): prefetching X one stage ahead plus the .L2::256B hint made
 * down 45.6 us (+31%); which of the two did it was not separated.
 * X staging (plain path, not SwiGLU): the pass's 8 * NT token rows of each k-tile are copied by
 * cp.async into the stage together with W (same commit group, same XOR layout, so a lane's X
 * granule has the index of its W granule); the mma reads X from shared memory instead of an
 * __ldg issued right in front of it. Rung 07 showed that X in shared memory removes the growth
 * with M (+0-6% at M = 8 against +13-27%). Cost: 24 KB (M <= 8) or 48 KB (M 9-16) more shared
 * memory per block, so fewer blocks per SM.
 * Measured with X staged at every M (H200, 2026-12-02 17:21 UTC, `tinfer-bench-gemm-bf16 model`,
 * stream timing; us at M = 1 / 2 / 8 / 16): QKV (05) 18.9 / 19.3 / 19.5 / 19.4, gate/up (05)
 * 66.8 / 66.8 / 68.2 / 69.8, down (06) 36.5 / 35.8 / 37.2 / 39.4: flat in M (+2-3% at M = 8),
 * and against the unstaged kernel (previous runs: 17.2 / 17.9 / 19.4 / 21.6, 61.3 / 68.4 / 77.7 /
 * 81.2, 32.4 / 33.3 / 36.2 / 39.9) equal or faster from M = 2 on (gate/up M = 8: -12%), but
 * 9-13% slower at M = 1 (one token row in eight staged rows, and fewer blocks per SM). So the
 * launcher stages X from M = 2 on and runs the unstaged kernel at M = 1 (both kernels passed
 * the full test and sanitizers in that run; the M = 1 switch itself is a host-side choice made
 * after it).
 */
#include "gemm/cuda/cuda_check.h"

#include <string.h>
#include "gemm/decode/gemv_bf16_internal.h"
#include "gemm/decode/ptx.cuh"
#include "gemm/tc/bf16_epi.cuh"

#include <cooperative_groups.h>

#define G05_WARPS 8
#define G05_KT 256
#define G05_STAGES 6

using tdec::cp_async16;
using tdec::cp_async_commit;
using tdec::cp_async_wait;
using tdec::mma_16816;

/* KS = 1: rung 05. KS = 2: rung 06, a cluster of 2 blocks (grid z) splits the K tiles of the same
 * 16 columns and block 1 hands its partial sums to block 0 through distributed shared memory. */
template <int NT, bool SWI, int KS, bool XSTAGE>
static __global__ void __launch_bounds__(G05_WARPS * 32) gemv05_kernel(tinfer_gemm_bf16_args a) {
    constexpr int RW = SWI ? 32 : 16; /* weight rows per block */
    /* XSTAGE (plain path only): X is staged through the pipeline with W: the 8 * NT token rows of
     * each k-tile land in shared memory with the stage, so no mma waits on a global X load. */
    constexpr bool XS = XSTAGE && !SWI;
    constexpr int XR = 8 * NT; /* token rows per pass */
    extern __shared__ uint4 g05_stage[]; /* [G05_STAGES][RW][32] granules of 16 B, then (XS)
                                          * [G05_STAGES][XR][32] of X */
    uint4 *const g05_x = g05_stage + G05_STAGES * RW * 32;
    __shared__ float red[G05_WARPS][SWI ? 2 : 1][16][16];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int64_t nout = tinfer_gemm_bf16_nout(a);
    const int64_t j0 = (int64_t)blockIdx.x * 16, m0 = (int64_t)blockIdx.y * 16, F = a.N / 2;
    const int64_t nkt_all = (a.K + G05_KT - 1) / G05_KT;
    const int rank = KS > 1 ? (int)blockIdx.z : 0;
    const int64_t per = (nkt_all + KS - 1) / KS, kt0 = rank * per;
    const int64_t nkt = kt0 + per < nkt_all ? per : (nkt_all > kt0 ? nkt_all - kt0 : 0); /* this block's tiles */

    auto load_stage = [&](int st, int64_t kt) {
#pragma unroll
        for (int i = 0; i < RW * 32 / (G05_WARPS * 32); i++) {
            const int idx = threadIdx.x + i * G05_WARPS * 32, r = idx / 32, q = idx % 32;
            const int64_t col = j0 + (r % 16), k = (kt0 + kt) * G05_KT + q * 8;
            const int64_t wrow = r < 16 ? col : F + col;
            const bool ok = col < nout && k < a.K;
            cp_async16(&g05_stage[(st * RW + r) * 32 + (q ^ (r & 7))], ok ? (const void *)(a.W + wrow * a.ldw + k) : (const void *)a.W,
                       ok ? 16u : 0u);
        }
        if (XS) {
#pragma unroll
            for (int i = 0; i < XR * 32 / (G05_WARPS * 32); i++) {
                const int idx = threadIdx.x + i * G05_WARPS * 32, r = idx / 32, q = idx % 32;
                const int64_t tok = m0 + r, k = (kt0 + kt) * G05_KT + q * 8;
                const bool ok = tok < a.M && k < a.K; /* else zero-filled: the mma adds 0 */
                cp_async16(&g05_x[(st * XR + r) * 32 + (q ^ (r & 7))],
                           ok ? (const void *)(a.X + tok * a.ldx + k) : (const void *)a.X, ok ? 16u : 0u);
            }
        }
    };
#pragma unroll
    for (int s = 0; s < G05_STAGES - 1; s++) {
        if (s < nkt) load_stage(s, s);
        cp_async_commit();
    }

    float cg[NT][4], cu[NT][4];
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) cg[n][i] = cu[n][i] = 0.f;
    const bool x0ok = m0 + g < a.M, x1ok = m0 + 8 + g < a.M;
    const uint16_t *x0 = a.X + (x0ok ? m0 + g : 0) * a.ldx;
    const uint16_t *x1 = a.X + (x1ok ? m0 + 8 + g : 0) * a.ldx;
    const uint4 z = make_uint4(0, 0, 0, 0);
    const int q = (4 * warp + t) ^ (g & 7); /* rows g, g+8, 16+g, 24+g share (row & 7) = g & 7 */

    for (int64_t kt = 0; kt < nkt; kt++) {
        cp_async_wait<G05_STAGES - 2>();
        __syncthreads(); /* stage kt landed for everyone; stage kt-1 is free to refill */
        {
            const int64_t nk = kt + G05_STAGES - 1;
            if (nk < nkt) load_stage((int)(nk % G05_STAGES), nk);
            cp_async_commit();
        }
        const int st = (int)(kt % G05_STAGES);
        const int64_t k = (kt0 + kt) * G05_KT + warp * 32 + t * 8;
        const uint4 *sb = &g05_stage[st * RW * 32];
        const uint4 w0 = sb[g * 32 + q], w1 = sb[(g + 8) * 32 + q];
        uint4 xb[NT];
        if (XS) { /* token rows g and 8 + g share (row & 7) = g & 7 with the W rows: same q */
            const uint4 *xs = &g05_x[st * XR * 32];
            xb[0] = xs[g * 32 + q];
            if (NT == 2) xb[NT - 1] = xs[(8 + g) * 32 + q];
        } else {
            xb[0] = x0ok && k < a.K ? __ldg((const uint4 *)(x0 + k)) : z;
            if (NT == 2) xb[NT - 1] = x1ok && k < a.K ? __ldg((const uint4 *)(x1 + k)) : z;
        }
        /* Fragments as in rung 04: .x/.y words feed the first k16 mma, .z/.w the second. */
#pragma unroll
        for (int n = 0; n < NT; n++) {
            mma_16816(cg[n], w0.x, w1.x, w0.y, w1.y, xb[n].x, xb[n].y);
            mma_16816(cg[n], w0.z, w1.z, w0.w, w1.w, xb[n].z, xb[n].w);
        }
        if (SWI) {
            const uint4 u0 = sb[(16 + g) * 32 + q], u1 = sb[(24 + g) * 32 + q];
#pragma unroll
            for (int n = 0; n < NT; n++) {
                mma_16816(cu[n], u0.x, u1.x, u0.y, u1.y, xb[n].x, xb[n].y);
                mma_16816(cu[n], u0.z, u1.z, u0.w, u1.w, xb[n].z, xb[n].w);
            }
        }
    }
    cp_async_wait<0>();
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = g + 8 * (i >> 1), tok = 8 * n + 2 * t + (i & 1);
            red[warp][0][row][tok] = cg[n][i];
            if (SWI) red[warp][SWI ? 1 : 0][row][tok] = cu[n][i];
        }
    const int row = threadIdx.x % 16, tok = threadIdx.x / 16;
    const int64_t m = m0 + tok, j = j0 + row;
    const bool out_ok = tok < 8 * NT && m < a.M && j < nout;
    if (KS == 1) {
        __syncthreads();
        if (!out_ok) return;
        float sg = 0.f, su = 0.f;
#pragma unroll
        for (int w = 0; w < G05_WARPS; w++) {
            sg += red[w][0][row][tok];
            if (SWI) su += red[w][SWI ? 1 : 0][row][tok];
        }
        tinfer_bf16_epi_store(a, m, j, sg, su);
    } else {
        namespace cg = cooperative_groups;
        cg::cluster_group cl = cg::this_cluster();
        cl.sync(); /* both blocks' partials written (cluster barrier: release/acquire) */
        if (rank == 0 && out_ok) {
            const float *rr = cl.map_shared_rank(&red[0][0][0][0], 1);
            const int plane = 16 * 16, nz = SWI ? 2 : 1;
            float sg = 0.f, su = 0.f;
#pragma unroll
            for (int w = 0; w < G05_WARPS; w++) {
                sg += red[w][0][row][tok] + rr[(w * nz + 0) * plane + row * 16 + tok];
                if (SWI) su += red[w][SWI ? 1 : 0][row][tok] + rr[(w * nz + (SWI ? 1 : 0)) * plane + row * 16 + tok];
            }
            tinfer_bf16_epi_store(a, m, j, sg, su);
        }
        cl.sync(); /* block 1's shared memory stays alive until block 0 has read it */
    }
}

template <int NT, bool SWI, int KS, bool XSTAGE>
static tinfer_status gemv05_launch(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    const int64_t passes = (a->M + 15) / 16;
    const int smem = G05_STAGES * ((SWI ? 32 : 16) + (XSTAGE && !SWI ? 8 * NT : 0)) * 32 * 16; /* W (+ X) */
    static int attr_dev = -1;
    int dev = 0;
    if (passes > 65535 || (nout + 15) / 16 > 0x7fffffff)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16 05: M=%lld N=%lld too large",
                              (long long)a->M, (long long)a->N);
    TINFER_CUDA_TRY(err, cudaGetDevice(&dev));
    if (attr_dev != dev) { /* > 48 KB of dynamic shared memory must be asked for once per device */
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(gemv05_kernel<NT, SWI, KS, XSTAGE>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        attr_dev = dev;
    }
    {
        dim3 grid((unsigned)((nout + 15) / 16), (unsigned)passes, KS);
        if (KS == 1) {
            gemv05_kernel<NT, SWI, KS, XSTAGE><<<grid, G05_WARPS * 32, smem, s>>>(*a);
        } else {
            cudaLaunchConfig_t cfg;
            cudaLaunchAttribute attr[1];
            memset(&cfg, 0, sizeof cfg);
            cfg.gridDim = grid;
            cfg.blockDim = dim3(G05_WARPS * 32);
            cfg.dynamicSmemBytes = smem;
            cfg.stream = s;
            attr[0].id = cudaLaunchAttributeClusterDimension;
            attr[0].val.clusterDim.x = 1;
            attr[0].val.clusterDim.y = 1;
            attr[0].val.clusterDim.z = KS;
            cfg.attrs = attr;
            cfg.numAttrs = 1;
            TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&cfg, gemv05_kernel<NT, SWI, KS, XSTAGE>, *a));
        }
        TINFER_CUDA_LAUNCH_CHECK(err, "gemv05_kernel");
    }
cleanup:
    return status;
}

tinfer_status tinfer_gemv_bf16_cp_async(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err) {
    const bool one_tile = a->M <= 8;
    if (a->swiglu) return one_tile ? gemv05_launch<1, true, 1, false>(a, s, err) : gemv05_launch<2, true, 1, false>(a, s, err);
    /* X staged from 2 tokens up (see the file comment: at M = 1 it cost 9-13%) */
    if (a->M == 1) return gemv05_launch<1, false, 1, false>(a, s, err);
    return one_tile ? gemv05_launch<1, false, 1, true>(a, s, err) : gemv05_launch<2, false, 1, true>(a, s, err);
}

tinfer_status tinfer_gemv_bf16_cluster(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err) {
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return tinfer_err_set(err, TINFER_ERR_CUDA, "gemv_bf16 06: cannot query the device");
    }
    if (major < 9)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemv_bf16 06: thread-block clusters need sm_90 (device is sm_%d*)", major);
    const bool one_tile = a->M <= 8;
    if (a->swiglu) return one_tile ? gemv05_launch<1, true, 2, false>(a, s, err) : gemv05_launch<2, true, 2, false>(a, s, err);
    if (a->M == 1) return gemv05_launch<1, false, 2, false>(a, s, err);
    return one_tile ? gemv05_launch<1, false, 2, true>(a, s, err) : gemv05_launch<2, false, 2, true>(a, s, err);
}

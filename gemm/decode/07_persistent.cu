/*
 * 07_persistent.cu — decode rung 7: rung 05's split-K mma.sync GEMV made persistent, with X
 * staged in shared memory (never a global load in front of an mma) and up to 64 tokens per pass
 * over W.
 *
 * Changes from 05 (header of 05_cp_async.cu for the base algorithm):
 *  (1) X goes through shared memory. Either resident (the pass's 8*NT token rows x the whole K,
 *      loaded once per block, when it fits TINFER_GEMV07_XRES_MAX_BYTES: short K such as the
 *      SmolLM2 LM head, K = 576) or staged: each pipeline stage carries the X tile of its K range
 *      (8*NT rows x 512 B) in the same cp.async group as the W tile, so when a stage has landed
 *      its mma operands are all in shared memory. 05 issued one __ldg per token row per stage
 *      right before the mma, which is why M = 8 cost +14..26% over M = 1 there.
 *  (2) Persistent grid: min(column tiles, resident blocks) blocks, each owning a contiguous,
 *      even share of the 16-column tiles (q or q + 1 of them), and the cp.async pipeline runs
 *      over the flattened (tile, k-tile) sequence, so a short row (K = 576: 2.25 k-tiles) no
 *      longer drains and refills the pipeline per tile (05 lost 26.1 vs 18.6 us to rung 04 on
 *      the LM head for that reason). A tile's 8 warp partials are reduced through shared memory
 *      when its last k-tile is done, inside the loop, while later stages stay in flight.
 *  (3) Tokens per pass: NT n8 tiles = 8, 16, 32 or 64 tokens, so the 56 MB LM head is read once
 *      for M <= 64 instead of once per 16 tokens (SwiGLU: at most 32 per pass, the reduction
 *      buffer of 64 would not fit next to the stages).
 *  (4) Optional, chosen by the launcher configuration: programmatic dependent launch (the block
 *      issues its first W stages, which no earlier kernel writes, before griddepcontrol.wait;
 *      X, bias, R and Y are touched only after it, so the previous kernel's tail overlaps this
 *      kernel's ramp-up); an L2 evict_first policy on the streamed W.
 * Shared layout: granule (16 B) q of row r is stored at q ^ ((r & 1) << 2). A warp's 16-byte
 * fragment read is served in 4 phases of 8 lanes (g = 0,1 x t = 0..3 in phase 0): rows g and
 * g + 1 then hit disjoint 64-byte halves of one 128-byte line (05's q ^ (r & 7) put both rows'
 * granules in the same half: a 2-way conflict). cp.async writes stay one row per 8 lanes.
 * Constraints: K % 8 == 0, 16-byte aligned rows (bf16.h). Tokens: passes of 8*NT (grid.y).
 * Measured (H200, 2026-12-02, `tinfer-bench-gemm-bf16 decode`, copy 4235 GB/s, cuBLAS in the
 * same run; us at M = 1 / 8): the default (1 block per SM, 16 stages) LOSES everywhere:
 * QKV 6144x4096 27.5 / 28.0 (05: 17.2 / 19.4, cuBLAS 17.3 / 16.8); gate/up 28672x4096
 * 111.5 / 111.5 (05: 61.3 / 77.7); down 4096x14336 57.3 / 61.0 (06: 32.4 / 36.2); LM head
 * 49152x576 41.5 / 41.8 (04: 18.6 / 21.1), 63.7 at M = 32 (04: 53.6, wgmma 36.4, cuBLAS 18.6).
 * What the sweep says:
 *  - X staging works: M = 8 costs +2% (QKV), 0% (gate/up), +6% (down) over M = 1, against
 *    05's +13% / +27% / +24%; the M-growth of 05 was the X loads, as predicted.
 *  - The persistent single block is throughput-bound per block, not by pipeline depth: 8 and
 *    16 stages gave the same time (QKV 27.3 vs 27.5 us), every shape ran at ~0.5 us per 8 KB
 *    k-tile per block (~16 GB/s per block), and two blocks per SM (config 2bps, 8 stages each)
 *    nearly halved it (QKV 24.8, gate/up 72.9, down 39.0, LM head 27.4 us; LM head at M = 32
 *    42.9 us, better than 04 but not than wgmma). 05 gets its rate from ~3 blocks per SM.
 *    Likely next step (not run): 07's X staging with 05's grid (one 16-column tile per block,
 *    3-4 blocks per SM: blocks_per_sm = 4, stages = 4 here).
 *  - Programmatic dependent launch: -1.5..-2.5 us per launch in back-to-back launches (QKV
 *    25.3 vs 27.5, gate/up 109.2 vs 111.5); evict_first on W: -0.6..-1 us; both kept as options.
 * Hence the dispatcher does not use this rung (bf16.h).
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/ptx.cuh"
#include "gemm/decode/gemv_bf16_internal.h"

#include <string.h>

#define G07_WARPS 8
#define G07_KT 256 /* k per stage: 8 warps x one 32-wide chunk */
#define G07_KG (G07_KT / 8)


static __device__ __forceinline__ int g07_swz(int q, int r) { return q ^ ((r & 1) << 2); }

/* Shared-memory bytes of one configuration (host and device agree on this layout). */
static __host__ __device__ __forceinline__ size_t g07_smem(int nt, bool swi, bool xres, int stages, int64_t K) {
    const size_t rw = swi ? 32 : 16, xr = 8 * (size_t)nt;
    const size_t kp = (size_t)((K + 63) / 64) * 64; /* resident X row: whole 128-byte lines */
    const size_t w = (size_t)stages * rw * G07_KT * 2;
    const size_t x = xres ? xr * kp * 2 : (size_t)stages * xr * G07_KT * 2;
    const size_t red = (size_t)G07_WARPS * (swi ? 2 : 1) * 16 * (xr + 1) * 4;
    return w + x + red;
}

/* NT: n8 token tiles per pass. SWI: fused gate/up rows. XRES: X resident for the whole K (else
 * staged per k-tile). S: pipeline stages. */
template <int NT, bool SWI, bool XRES, int S>
static __global__ void __launch_bounds__(G07_WARPS * 32) gemv07_kernel(tinfer_gemm_bf16_args a, int evict_first) {
    constexpr int RW = SWI ? 32 : 16; /* weight rows per tile */
    constexpr int XR = 8 * NT;        /* token rows per pass */
    constexpr int RS = XR + 1;        /* red row stride (floats): odd, so the epilogue reads spread over banks */
    extern __shared__ uint4 g07_smem_buf[];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int64_t nout = tinfer_gemm_bf16_nout(a), F = a.N / 2;
    const int64_t m0 = (int64_t)blockIdx.y * XR;
    const int mcount = (int)(a.M - m0 < XR ? a.M - m0 : XR);
    const int nkt = (int)((a.K + G07_KT - 1) / G07_KT);
    const int kpg = (int)((a.K + 63) / 64) * 8; /* resident X row length in granules */
    const int64_t ntile = (nout + 15) / 16;
    const int64_t t0 = (int64_t)blockIdx.x * ntile / gridDim.x, t1 = ((int64_t)blockIdx.x + 1) * ntile / gridDim.x;
    const int n_it = (int)(t1 - t0) * nkt;

    uint4 *wst = g07_smem_buf;                                          /* [S][RW][KG] */
    uint4 *xs = wst + S * RW * G07_KG;                                  /* [S][XR][KG] or [XR][kpg] */
    float *red = (float *)(xs + (XRES ? XR * kpg : S * XR * G07_KG)); /* [8][SWI?2:1][16][RS] */

    uint64_t pol = 0;
#if __CUDA_ARCH__ >= 800
    if (evict_first) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
#endif
    tdec::pdl_launch_dependents(); /* no-op when the launch did not ask for PDL */

    /* W tile of flattened iteration i into stage st. */
    auto load_w = [&](int st, int i) {
        const int64_t tile = t0 + i / nkt;
        const int kt = i % nkt;
#pragma unroll
        for (int u = 0; u < RW * G07_KG / (G07_WARPS * 32); u++) {
            const int idx = tid + u * G07_WARPS * 32, r = idx / G07_KG, q = idx % G07_KG;
            const int64_t col = tile * 16 + (r % 16), k = (int64_t)kt * G07_KT + q * 8;
            const int64_t wrow = r < 16 ? col : F + col;
            const bool ok = col < nout && k < a.K;
            const void *src = ok ? (const void *)(a.W + wrow * a.ldw + k) : (const void *)a.W;
            void *dst = &wst[(st * RW + r) * G07_KG + g07_swz(q, r)];
            if (evict_first) tdec::cp_async16_hint(dst, src, ok ? 16u : 0u, pol);
            else tdec::cp_async16(dst, src, ok ? 16u : 0u);
        }
    };
    /* Staged X tile (rows < mcount) of flattened iteration i into stage st. */
    auto load_x = [&](int st, int i) {
        const int kt = i % nkt;
#pragma unroll
        for (int u = 0; u < XR * G07_KG / (G07_WARPS * 32); u++) {
            const int idx = tid + u * G07_WARPS * 32, r = idx / G07_KG, q = idx % G07_KG;
            if (r >= mcount) continue;
            const int64_t k = (int64_t)kt * G07_KT + q * 8;
            const bool ok = k < a.K;
            tdec::cp_async16(&xs[(st * XR + r) * G07_KG + g07_swz(q, r)],
                     ok ? (const void *)(a.X + (m0 + r) * a.ldx + k) : (const void *)a.X, ok ? 16u : 0u);
        }
    };

    /* Token rows past this pass's tokens are never loaded: zero them once so they feed the mma
     * zeros (their outputs are never stored, but 0 * NaN from stale shared memory is NaN). */
    const uint4 z = make_uint4(0, 0, 0, 0);
    if (XRES) {
        /* by logical granule: the swizzle moves the K padding's granules within the row, and a
         * zero store may not land on a granule that a cp.async below fills */
        for (int idx = tid; idx < XR * kpg; idx += G07_WARPS * 32) {
            const int r = idx / kpg, q = idx % kpg;
            if (r >= mcount || (int64_t)q * 8 >= a.K) xs[r * kpg + g07_swz(q, r)] = z; /* absent rows, K padding */
        }
    } else if (mcount < XR) {
        for (int idx = tid; idx < S * XR * G07_KG; idx += G07_WARPS * 32)
            if ((idx / G07_KG) % XR >= mcount) xs[idx] = z;
    }

    /* Prologue: W only (no earlier kernel writes W), then wait for the previous grid, then X. */
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (s < n_it) load_w(s, s);
        tdec::cp_async_commit();
    }
    tdec::pdl_wait();
    if (XRES) {
        const int kg = (int)(a.K / 8);
        for (int idx = tid; idx < mcount * kg; idx += G07_WARPS * 32) {
            const int r = idx / kg, q = idx % kg;
            tdec::cp_async16(&xs[r * kpg + g07_swz(q, r)], a.X + (m0 + r) * a.ldx + (int64_t)q * 8, 16u);
        }
    } else {
#pragma unroll
        for (int s = 0; s < S - 1; s++)
            if (s < n_it) load_x(s, s);
    }
    tdec::cp_async_commit();
    tdec::cp_async_wait<0>();
    __syncthreads();

    float cg[NT][4], cu[NT][4];
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) cg[n][i] = cu[n][i] = 0.f;

    int kt = 0;
    int64_t tile = t0;
    for (int it = 0; it < n_it; it++) {
        tdec::cp_async_wait<S - 2>();
        __syncthreads(); /* stage it landed for all threads; stage it - 1 is free to refill */
        {
            const int nk = it + S - 1;
            if (nk < n_it) {
                load_w(nk % S, nk);
                if (!XRES) load_x(nk % S, nk);
            }
            tdec::cp_async_commit();
        }
        const int st = it % S;
        const int64_t kc = (int64_t)kt * G07_KT + warp * 32; /* this warp's 32-wide chunk */
        if (kc < a.K) {
            const int q = 4 * warp + t;
            const uint4 *sb = &wst[st * RW * G07_KG];
            const uint4 w0 = sb[g * G07_KG + g07_swz(q, g)], w1 = sb[(g + 8) * G07_KG + g07_swz(q, g)];
            uint4 xb[NT];
#pragma unroll
            for (int n = 0; n < NT; n++) {
                const int r = 8 * n + g;
                xb[n] = XRES ? xs[r * kpg + g07_swz(kt * G07_KG + q, r)] : xs[(st * XR + r) * G07_KG + g07_swz(q, r)];
            }
            /* Fragments as in rung 04: .x/.y words feed the first k16 mma, .z/.w the second. */
#pragma unroll
            for (int n = 0; n < NT; n++) {
                tdec::mma_16816(cg[n], w0.x, w1.x, w0.y, w1.y, xb[n].x, xb[n].y);
                tdec::mma_16816(cg[n], w0.z, w1.z, w0.w, w1.w, xb[n].z, xb[n].w);
            }
            if (SWI) {
                const uint4 u0 = sb[(16 + g) * G07_KG + g07_swz(q, g)], u1 = sb[(24 + g) * G07_KG + g07_swz(q, g)];
#pragma unroll
                for (int n = 0; n < NT; n++) {
                    tdec::mma_16816(cu[n], u0.x, u1.x, u0.y, u1.y, xb[n].x, xb[n].y);
                    tdec::mma_16816(cu[n], u0.z, u1.z, u0.w, u1.w, xb[n].z, xb[n].w);
                }
            }
        }
        if (++kt == nkt) { /* tile done: reduce the 8 warps' partials, epilogue, next tile */
            /* C fragment: c0,c1 = (row g, tokens 2t, 2t+1), c2,c3 = (row g+8, same tokens). */
#pragma unroll
            for (int n = 0; n < NT; n++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int row = g + 8 * (i >> 1), tok = 8 * n + 2 * t + (i & 1);
                    red[((warp * (SWI ? 2 : 1)) * 16 + row) * RS + tok] = cg[n][i];
                    if (SWI) red[((warp * 2 + 1) * 16 + row) * RS + tok] = cu[n][i];
                    cg[n][i] = cu[n][i] = 0.f;
                }
            __syncthreads();
#pragma unroll
            for (int u = 0; u < (16 * XR + G07_WARPS * 32 - 1) / (G07_WARPS * 32); u++) {
                const int idx = tid + u * G07_WARPS * 32, row = idx % 16, tok = idx / 16;
                const int64_t m = m0 + tok, j = tile * 16 + row;
                if (tok < mcount && j < nout) {
                    float sg = 0.f, su = 0.f;
#pragma unroll
                    for (int w = 0; w < G07_WARPS; w++) {
                        sg += red[((w * (SWI ? 2 : 1)) * 16 + row) * RS + tok];
                        if (SWI) su += red[((w * 2 + 1) * 16 + row) * RS + tok];
                    }
                    tinfer_bf16_epi_store(a, m, j, sg, su);
                }
            }
            /* red is written again only at the next tile's end, after the next iteration's
             * __syncthreads, so no barrier is needed here. */
            kt = 0;
            tile++;
        }
    }
    tdec::cp_async_wait<0>();
}

/* Largest stage count (16, 12, 8 or 4, at most want) whose shared memory fits; 0 if none does.
 * Depth matters: one block per SM keeps (S - 1) stages of 8 KB in flight, and the first H200
 * sweep (S = 8, 56 KB per SM) ran at half of rung 05's rate (~3 blocks x 5 stages per SM). */
static int g07_pick_stages(int nt, bool swi, bool xres, int64_t K, int want, size_t smem_max) {
    static const int opts[] = {16, 12, 8, 4};
    for (int i = 0; i < 4; i++)
        if (opts[i] <= want && g07_smem(nt, swi, xres, opts[i], K) <= smem_max) return opts[i];
    return g07_smem(nt, swi, xres, 4, K) <= smem_max ? 4 : 0;
}

template <int NT, bool SWI, bool XRES, int S>
static tinfer_status gemv07_launch(const tinfer_gemm_bf16_args *a, const tinfer_gemv07_cfg *cfg, int dev, int n_sm,
                                   int major, int smem_optin, cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    static int attr_dev = -1; /* one per instantiation: > 48 KB of dynamic shared memory is asked for once,
                                 * the device's whole opt-in limit, since the size depends on K */
    const size_t smem = g07_smem(NT, SWI, XRES, S, a->K);
    const int64_t nout = tinfer_gemm_bf16_nout(*a), ntile = (nout + 15) / 16;
    const int64_t passes = (a->M + 8 * NT - 1) / (8 * NT);
    int occ = 0;
    if (passes > 65535)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16 07: M=%lld too large", (long long)a->M);
    if (attr_dev != dev) {
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(gemv07_kernel<NT, SWI, XRES, S>,
                                                  cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin));
        attr_dev = dev;
    }
    TINFER_CUDA_TRY(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, gemv07_kernel<NT, SWI, XRES, S>,
                                                                        G07_WARPS * 32, smem));
    {
        const int bps = occ < cfg->blocks_per_sm ? occ : cfg->blocks_per_sm;
        const int64_t resident = (int64_t)(bps > 0 ? bps : 1) * n_sm;
        dim3 grid((unsigned)(ntile < resident ? ntile : resident), (unsigned)passes);
        cudaLaunchConfig_t lc;
        cudaLaunchAttribute attr[1];
        memset(&lc, 0, sizeof lc);
        lc.gridDim = grid;
        lc.blockDim = dim3(G07_WARPS * 32);
        lc.dynamicSmemBytes = smem;
        lc.stream = s;
        if (cfg->pdl && major >= 9) {
            attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attr[0].val.programmaticStreamSerializationAllowed = 1;
            lc.attrs = attr;
            lc.numAttrs = 1;
        }
        TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, gemv07_kernel<NT, SWI, XRES, S>, *a, cfg->evict_first ? 1 : 0));
        TINFER_CUDA_LAUNCH_CHECK(err, "gemv07_kernel");
    }
cleanup:
    return status;
}

template <int NT, bool SWI, bool XRES>
static tinfer_status gemv07_by_stages(const tinfer_gemm_bf16_args *a, const tinfer_gemv07_cfg *cfg, int stages,
                                      int dev, int n_sm, int major, size_t smem_optin, cudaStream_t s,
                                      tinfer_err *err) {
    const int so = (int)smem_optin;
    if (stages == 16) return gemv07_launch<NT, SWI, XRES, 16>(a, cfg, dev, n_sm, major, so, s, err);
    if (stages == 12) return gemv07_launch<NT, SWI, XRES, 12>(a, cfg, dev, n_sm, major, so, s, err);
    if (stages == 8) return gemv07_launch<NT, SWI, XRES, 8>(a, cfg, dev, n_sm, major, so, s, err);
    return gemv07_launch<NT, SWI, XRES, 4>(a, cfg, dev, n_sm, major, so, s, err);
}

template <int NT, bool SWI>
static tinfer_status gemv07_by_x(const tinfer_gemm_bf16_args *a, const tinfer_gemv07_cfg *cfg, size_t smem_optin,
                                 size_t smem_sm, int dev, int n_sm, int major, cudaStream_t s, tinfer_err *err) {
    /* per-block budget: the opt-in limit, or the SM's share when several blocks should fit
     * (1 KB per block is reserved by the runtime) */
    const int bps = cfg->blocks_per_sm > 1 ? cfg->blocks_per_sm : 1;
    const size_t share = smem_sm / (size_t)bps > 1024 ? smem_sm / (size_t)bps - 1024 : 0;
    const size_t smem_max = share < smem_optin ? share : smem_optin;
    const size_t xres_bytes = (size_t)8 * NT * (size_t)((a->K + 63) / 64) * 64 * 2;
    bool xres = cfg->x_resident > 0 || (cfg->x_resident < 0 && xres_bytes <= TINFER_GEMV07_XRES_MAX_BYTES);
    int stages = g07_pick_stages(NT, SWI, xres, a->K, cfg->stages, smem_max);
    if (xres && !stages) { /* resident X too large for this device: stage it instead */
        xres = false;
        stages = g07_pick_stages(NT, SWI, false, a->K, cfg->stages, smem_max);
    }
    if (!stages)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "gemv_bf16 07: %d tokens per pass need more shared memory than the device's %zu bytes",
                              8 * NT, smem_max);
    if (xres) return gemv07_by_stages<NT, SWI, true>(a, cfg, stages, dev, n_sm, major, smem_optin, s, err);
    return gemv07_by_stages<NT, SWI, false>(a, cfg, stages, dev, n_sm, major, smem_optin, s, err);
}

tinfer_status tinfer_gemv_bf16_persistent_cfg(const tinfer_gemm_bf16_args *a, const tinfer_gemv07_cfg *cfg,
                                              cudaStream_t s, tinfer_err *err) {
    tinfer_cuda_facts f;
    const tinfer_status fs = tinfer_cuda_current_facts(&f, err);
    if (fs != TINFER_OK) return fs;
    const int dev = f.device, n_sm = f.n_sm, major = f.cc_major, smem_optin = f.smem_per_block_optin, smem_sm = f.smem_per_sm;
    if (major < 8)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemv_bf16 07: needs sm_80+ (device is sm_%d*)", major);
    /* tokens per pass: the fewest n8 tiles that hold M, capped by cfg (and 32 with SwiGLU) */
    int cap = cfg->max_tokens >= 64 ? 64 : cfg->max_tokens >= 32 ? 32 : cfg->max_tokens >= 16 ? 16 : 8;
    if (a->swiglu && cap > 32) cap = 32;
    const int64_t want = a->M < cap ? a->M : cap;
    const size_t smax = (size_t)smem_optin, ssm = (size_t)smem_sm;
    if (a->swiglu) {
        if (want <= 8) return gemv07_by_x<1, true>(a, cfg, smax, ssm, dev, n_sm, major, s, err);
        if (want <= 16) return gemv07_by_x<2, true>(a, cfg, smax, ssm, dev, n_sm, major, s, err);
        return gemv07_by_x<4, true>(a, cfg, smax, ssm, dev, n_sm, major, s, err);
    }
    if (want <= 8) return gemv07_by_x<1, false>(a, cfg, smax, ssm, dev, n_sm, major, s, err);
    if (want <= 16) return gemv07_by_x<2, false>(a, cfg, smax, ssm, dev, n_sm, major, s, err);
    if (want <= 32) return gemv07_by_x<4, false>(a, cfg, smax, ssm, dev, n_sm, major, s, err);
    return gemv07_by_x<8, false>(a, cfg, smax, ssm, dev, n_sm, major, s, err);
}

const tinfer_gemv07_cfg tinfer_gemv07_default = {
    /* max_tokens */ 64, /* blocks_per_sm */ 1, /* stages */ 16, /* x_resident */ -1, /* pdl */ 0, /* evict_first */ 0};

tinfer_status tinfer_gemv_bf16_persistent(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err) {
    return tinfer_gemv_bf16_persistent_cfg(a, &tinfer_gemv07_default, s, err);
}

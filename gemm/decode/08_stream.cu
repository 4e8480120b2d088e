/*
 * 08_stream.cu — decode rung 8: rung 04 on a persistent grid for short rows, the next tile's
 * weights in flight while the current tile is multiplied and reduced.
 *
 * Why: the SmolLM2 LM head (49152 x 576, 56.6 MB) streamed at 73-77% of the copy rate on rung 04
 * and on the GEMM path's rung 05, where a kernel that only reads the same bytes reaches 87-93%
 * (gemm/decode/README.md, "The read ceiling"). Rung 04 gives each block one 16-column tile: a block
 * issues its loads (18 KB for K = 576), waits one memory round trip with nothing else in flight,
 * reduces through shared memory and exits; 3072 blocks come and go. Here a block stays resident
 * and walks tiles blockIdx.x, + gridDim.x, ...; the W loads of its next tile are issued before
 * the mma and the reduction of the current one, so every thread always has a tile of loads in
 * flight, as in the read ceiling's grid-stride loop.
 *
 * Per tile, the math is rung 04's (04_split_k.cu): warp w owns a contiguous 1/8 of the 32-wide
 * K chunks, lane (g, t) loads 16 B of rows g and g + 8 per chunk (the permuted-k mma.sync
 * m16n8k16 fragment), the 8 warps' partial sums meet in shared memory, and one thread per output
 * runs the epilogue. Differences:
 *  - A warp's chunks (U = ceil(K / 256) <= 4) are loaded as one batch per tile into one of two
 *    register buffers; the loop is unrolled by two so the buffers have fixed names.
 *  - X is the same for every tile (same K range per lane): at up to 8 tokens per pass a lane
 *    loads its X granules into registers once; at 16 tokens per pass (two n8 token tiles) the
 *    block stages the pass's X rows in shared memory once (up to 32 KB at K = 1024), since
 *    registers must hold two tiles of W. 32 tokens per pass (four n8 tiles) was slower than two
 *    passes of 16 (H200 session 9 run 3: SmolLM2 QKV M = 32 5.41 vs 3.53 us for rung 05, graph
 *    timing; 80 registers spill at four tiles) and is not built.
 *  - The reduction buffer is double-buffered, so one barrier per tile suffices: a thread reads
 *    red[b] of tile i before it reaches tile i + 1's barrier, and red[b] is written again only
 *    for tile i + 2, after that barrier.
 *  - Grid: (min(tiles, resident blocks / passes), passes of 8 or 16 tokens), resident blocks from
 *    cudaOccupancyMaxActiveBlocksPerMultiprocessor.
 *  - args.w_static with PDL (sm_90): the first tile's W loads go before griddepcontrol.wait
 *    (nothing in flight writes W), and launch_dependents runs at the start, so the next call's
 *    blocks take this grid's SM slots as they free and start their weight stream there.
 * SwiGLU (the fused gate/up weight, N = 2F): a tile is 8 outputs j whose mma rows g are the gate
 * rows j and rows g + 8 the up rows F + j, so each pair is reduced in one block and the epilogue
 * takes silu(gate) * up there (before, SwiGLU calls ran rung 04).
 * Scope: K <= 1024 (one batch of at most 4 chunks per warp); other calls run rung 04 unchanged
 * (same results, documented in bf16.h).
 * Constraints: K % 8 == 0, 16-byte aligned rows (bf16.h). Tokens: passes of 8 (M <= 8) or 16
 * (grid.y).
 * Measured (H200, session 9 run 5, us, stream / graph timing; gemm/decode/README.md "Rung 08"): LM
 * head M = 1 15.52 / 14.99 (86% of the copy rate; cuBLAS 17.12 / 15.47), M = 8 15.70 / 15.21. On
 * the small SmolLM2 weights the first tile is the whole block's weight, so with args.w_static it is
 * all read while the previous kernel runs: graph timing at M = 1 QKV / O / gate/up 1.46 / 1.35 /
 * 1.91 (run 3) against rung 05's 2.46 / 2.42 / 3.18.
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/ptx.cuh"
#include "gemm/decode/gemv_bf16_internal.h"

#include <string.h>

#define G08_WARPS 8
/* Most 32-wide K chunks per warp: 8 warps x 4 x 32 = K <= 1024. */
#define G08_UMAX 4
/* Blocks per SM the register budget is set for (__launch_bounds__): 3 x 256 threads, at most 80
 * registers each, two tiles of loads in flight per thread. U = 4 (K > 768) would spill there and
 * gets 2 blocks; U = 3 with two token tiles spills 12-20 bytes (ptxas -v) and keeps 3, the form
 * measured at 16 tokens (bf16.h, TINFER_GEMV_BF16_STREAM_MAX_M). */
#define G08_MIN_BLOCKS 3
/* Row stride (floats) of the reduction buffer: 16 rows + 4 of padding (bank spread, kernel). */
#define G08_RED_LD 20

/* Shared-memory X row of the multi-tile kernels: K rounded up to whole 128-byte lines, so the
 * swizzle below stays inside a row. */
static __host__ __device__ __forceinline__ int64_t g08_xrow(int64_t K) { return (K + 63) / 64 * 64; }

/* NT: n8 token tiles per pass (1: M <= 8, 2: 16). U: chunks per warp (ceil(ceil(K / 32) / 8)).
 * NT = 1 keeps X in registers; NT = 2 stages the pass's 16 token rows of X in shared memory once
 * per block (registers would not leave room for two tiles of W):
 * granule q of row r at q ^ ((r & 1) << 2), so a warp's reads (rows g = 0, 1 and granules
 * 4c..4c+3 per 8-lane phase) fall in the two different halves of a 128-byte line. */
/* The fused RMSNorm prologue's input (tinfer_gemm_bf16_rmsnorm): X row m is
 * bf16(x[m] * rs_m * w), rs_m = 1 / sqrt(mean(x[m]^2) + eps). */
struct g08_norm {
    const float *x; /* F32 [M, ldx], 16-byte aligned rows */
    int64_t ldx;
    const uint16_t *w; /* BF16 [K], 16-byte aligned */
    float eps;
};

/* Two normalised elements as one word of two BF16: ops/cuda/elementwise.cu's RMSNorm rounding
 * (the product x * rs rounded, times w, rounded to BF16). */
static __device__ __forceinline__ uint32_t g08_norm2(float x0, float x1, uint32_t w2, float rs) {
    return (uint32_t)tinfer_f2bf16(__fmul_rn(x0, rs) * tinfer_bf16_lo(w2)) |
           ((uint32_t)tinfer_f2bf16(__fmul_rn(x1, rs) * tinfer_bf16_hi(w2)) << 16);
}

template <int NT, int U, bool NORM>
static __global__ void __launch_bounds__(G08_WARPS * 32, U < 4 ? G08_MIN_BLOCKS : G08_MIN_BLOCKS - 1) gemv08_kernel(tinfer_gemm_bf16_args a, int pdl, int early, g08_norm nm) {
    constexpr bool XS = NT > 1;
    /* two reduction buffers, each [warp][token][row], rows padded to G08_RED_LD: a warp's stores
     * of one accumulator (rows g, tokens 2t + c) then hit 32 different banks (2t * 20 + g = 8t + g
     * mod 32; unpadded [row][token] rows put 4-8 lanes on one bank: 8-way at 32 tokens per pass,
     * where a first version lost half its time to it) */
    __shared__ float red[2][G08_WARPS][8 * NT][G08_RED_LD];
    extern __shared__ uint4 g08_xs[];               /* XS: [8 NT][g08_xrow(K) / 8] granules */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    /* SwiGLU: a tile is 8 outputs j, its rows g the gate rows j and its rows g + 8 the up rows
     * F + j, so the pair meets in one block's reduction (plain: 16 outputs, rows g and g + 8) */
    const bool sw = a.swiglu != 0;
    const int64_t F = a.N / 2, nout = sw ? F : a.N, tile_out = sw ? 8 : 16;
    const int64_t ntiles = (nout + tile_out - 1) / tile_out;
    const int64_t m0 = (int64_t)blockIdx.y * 8 * NT;
    const int64_t nchunk = (a.K + 31) / 32, per = (nchunk + G08_WARPS - 1) / G08_WARPS;
    const int64_t cbeg = warp * per, cend = cbeg + per < nchunk ? cbeg + per : nchunk;
    unsigned kok = 0; /* bit i: chunk i of this warp exists and lane t's 8 elements of it are inside K */
#pragma unroll
    for (int i = 0; i < U; i++) kok |= (cbeg + i < cend && (cbeg + i) * 32 + t * 8 < a.K) ? 1u << i : 0u;
    const int64_t k0 = cbeg * 32 + t * 8; /* this lane's first element; chunk i adds 32 i */
    const uint4 z = make_uint4(0, 0, 0, 0);

    /* W of tile tl into w: rows 16 tl + g and 16 tl + g + 8; nothing read past N or past K, or
     * for tl >= ntiles (the last round of a block that has no next tile) */
    auto load_w = [&](uint4 (&w)[U][2], int64_t tl) {
        const int64_t j = tl * tile_out + g;
        const bool r0 = tl < ntiles && j < nout, r1 = sw ? r0 : tl < ntiles && j + 8 < nout;
        const uint16_t *p0 = a.W + (r0 ? j : 0) * a.ldw + k0;
        const uint16_t *p1 = sw ? a.W + (r0 ? F + j : 0) * a.ldw + k0 : p0 + 8 * a.ldw;
#pragma unroll
        for (int i = 0; i < U; i++) {
            w[i][0] = (kok >> i & 1) && r0 ? tinfer_ld_stream16(p0 + 32 * i) : z;
            w[i][1] = (kok >> i & 1) && r1 ? tinfer_ld_stream16(p1 + 32 * i) : z;
        }
    };
    uint4 wa[U][2], wb[U][2], xb[U][XS ? 1 : NT];
    const int xq = (int)(g08_xrow(a.K) / 8); /* granules per staged X row (<= 128) */
    const int qx = (int)cbeg * 4 + t;          /* this lane's X granule in chunk 0; chunk i adds 4 i */
    int64_t tile = blockIdx.x;
    if (pdl) {
        /* PDL: the previous kernel may still write X, bias, R or Y (and W unless early) */
        if (early) load_w(wa, tile);
        if (pdl == 1) tdec::pdl_launch_dependents();
        tdec::pdl_wait();
    }
    if (!(pdl && early)) load_w(wa, tile);
    if (XS) { /* rows past M and granules past K are zeros */
        for (int idx = threadIdx.x; idx < 8 * NT * xq; idx += G08_WARPS * 32) {
            const int r = idx / xq, q = idx % xq;
            const int64_t tok = m0 + r;
            g08_xs[r * xq + (q ^ ((r & 1) << 2))] = tok < a.M && q * 8 < a.K ? __ldg((const uint4 *)(a.X + tok * a.ldx + q * 8)) : z;
        }
        __syncthreads();
    } else if (NORM) { /* NT = 1: warp w sums the squares of token row m0 + w (8 warps, 8 rows) */
        __shared__ float rs_sh[G08_WARPS];
        const int64_t mr = m0 + warp;
        float ss = 0.f;
        if (mr < a.M)
            for (int64_t q = lane; q < a.K / 4; q += 32) {
                const float4 v = *(const float4 *)(nm.x + mr * nm.ldx + 4 * q);
                ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
            }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        if (lane == 0) rs_sh[warp] = 1.0f / sqrtf(ss / (float)a.K + nm.eps);
        __syncthreads();
        const bool x0 = m0 + g < a.M;
        const float rs = rs_sh[g];
        const float *px0 = nm.x + (x0 ? m0 + g : 0) * nm.ldx + k0;
#pragma unroll
        for (int i = 0; i < U; i++) {
            if ((kok >> i & 1) && x0) {
                const float4 v0 = *(const float4 *)(px0 + 32 * i), v1 = *(const float4 *)(px0 + 32 * i + 4);
                const uint4 w = __ldg((const uint4 *)(nm.w + k0 + 32 * i));
                xb[i][0] = make_uint4(g08_norm2(v0.x, v0.y, w.x, rs), g08_norm2(v0.z, v0.w, w.y, rs),
                                      g08_norm2(v1.x, v1.y, w.z, rs), g08_norm2(v1.z, v1.w, w.w, rs));
            } else {
                xb[i][0] = z;
            }
        }
    } else {
        const bool x0 = m0 + g < a.M;
        const uint16_t *px0 = a.X + (x0 ? m0 + g : 0) * a.ldx + k0;
#pragma unroll
        for (int i = 0; i < U; i++) xb[i][0] = (kok >> i & 1) && x0 ? __ldg((const uint4 *)(px0 + 32 * i)) : z;
    }

    /* multiply the tile held in w, reduce it through red[b], store its outputs */
    auto finish = [&](const uint4 (&w)[U][2], int64_t tl, int b) {
        float c[NT][4];
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) c[n][i] = 0.f;
#pragma unroll
        for (int i = 0; i < U; i++)
#pragma unroll
            for (int n = 0; n < NT; n++) { /* fragments as in rung 04 (.x/.y: first k16, .z/.w: second) */
                /* token row 8 n + g: (row & 1) = (g & 1) */
                const uint4 x = !XS ? xb[i][0] : (kok >> i & 1) ? g08_xs[(8 * n + g) * xq + ((qx + 4 * i) ^ ((g & 1) << 2))] : z;
                tdec::mma_16816(c[n], w[i][0].x, w[i][1].x, w[i][0].y, w[i][1].y, x.x, x.y);
                tdec::mma_16816(c[n], w[i][0].z, w[i][1].z, w[i][0].w, w[i][1].w, x.z, x.w);
            }
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) red[b][warp][8 * n + 2 * t + (i & 1)][g + 8 * (i >> 1)] = c[n][i];
        __syncthreads();
        if (sw) {
#pragma unroll 1
            for (int o = threadIdx.x; o < 8 * 8 * NT; o += G08_WARPS * 32) { /* 8 outputs x 8 NT tokens */
                const int row = o % 8, tok = o / 8;
                const int64_t m = m0 + tok, j = tl * 8 + row;
                if (m < a.M && j < nout) {
                    float sg = 0.f, su = 0.f;
#pragma unroll
                    for (int w8 = 0; w8 < G08_WARPS; w8++) sg += red[b][w8][tok][row], su += red[b][w8][tok][row + 8];
                    tinfer_bf16_epi_store(a, m, j, sg, su);
                }
            }
            return;
        }
#pragma unroll 1
        for (int o = threadIdx.x; o < 16 * 8 * NT; o += G08_WARPS * 32) { /* 16 rows x 8 NT tokens */
            const int row = o % 16, tok = o / 16;
            const int64_t m = m0 + tok, j = tl * 16 + row;
            if (m < a.M && j < nout) {
                float s = 0.f;
#pragma unroll
                for (int w8 = 0; w8 < G08_WARPS; w8++) s += red[b][w8][tok][row];
                tinfer_bf16_epi_store(a, m, j, s, 0.f);
            }
        }
    };
    const int64_t step = gridDim.x;
#pragma unroll 1
    while (tile < ntiles) {
        load_w(wb, tile + step);
        finish(wa, tile, 0);
        tile += step;
        if (tile >= ntiles) break;
        load_w(wa, tile + step);
        finish(wb, tile, 1);
        tile += step;
    }
    if (pdl >= 2) tdec::pdl_launch_dependents();
}

template <int NT, int U, bool NORM>
static tinfer_status gemv08_launch(const tinfer_gemm_bf16_args *a, const g08_norm &nm, cudaStream_t s,
                                   tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    /* resident blocks per SM of this instantiation on occ_dev with occ_smem bytes of staged X */
    static int occ_dev = -1, occ = 0, attr_dev = -1;
    static size_t occ_smem = 0;
    const int64_t passes = (a->M + 8 * NT - 1) / (8 * NT),
                  tiles = a->swiglu ? (a->N / 2 + 7) / 8 : (a->N + 15) / 16;
    const size_t smem = NT > 1 ? (size_t)(8 * NT) * (size_t)g08_xrow(a->K) * 2 : 0;
    tinfer_cuda_facts d;
    if ((status = tinfer_cuda_current_facts(&d, err)) != TINFER_OK) return status;
    if (passes > 65535)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16 08: M=%lld too large", (long long)a->M);
    if (NT > 1 && attr_dev != d.device) { /* the largest staged X (K = 1024) may pass 48 KB with the static buffer */
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(gemv08_kernel<NT, U, NORM>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  (int)((size_t)(8 * NT) * (G08_WARPS * G08_UMAX * 32) * 2)));
        attr_dev = d.device;
    }
    if (occ_dev != d.device || occ_smem != smem) {
        TINFER_CUDA_TRY(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, gemv08_kernel<NT, U, NORM>, G08_WARPS * 32, smem));
        occ_dev = d.device;
        occ_smem = smem;
    }
    {
        const int pdl_mode = d.cc_major >= 9 ? tinfer_gemv_pdl_mode() : 0; /* griddepcontrol is sm_90 */
        if (pdl_mode < 0) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16 08: knob gemv_pdl must be 0..4");
        const bool early = pdl_mode && a->w_static;
        /* early: launch_dependents at the start (the next call's blocks start their weights as
         * this grid's blocks leave); else rung 04's places (1: start, otherwise after the loop) */
        const int pdl = early ? 1 : pdl_mode;
        int64_t gx = (int64_t)(occ > 0 ? occ : 1) * d.n_sm / passes;
        gx = gx < 1 ? 1 : gx > tiles ? tiles : gx;
        cudaLaunchConfig_t cfg;
        cudaLaunchAttribute attr[1];
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDim = dim3((unsigned)gx, (unsigned)passes);
        cfg.blockDim = dim3(G08_WARPS * 32);
        cfg.dynamicSmemBytes = smem;
        cfg.stream = s;
        cfg.attrs = attr;
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.numAttrs = pdl ? 1 : 0;
        TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&cfg, gemv08_kernel<NT, U, NORM>, *a, pdl, early ? 1 : 0, nm));
        TINFER_CUDA_LAUNCH_CHECK(err, "gemv08_kernel");
    }
cleanup:
    return status;
}

template <int NT, bool NORM>
static tinfer_status gemv08_pick_u(const tinfer_gemm_bf16_args *a, const g08_norm &nm, cudaStream_t s,
                                   tinfer_err *err) {
    const int64_t per = ((a->K + 31) / 32 + G08_WARPS - 1) / G08_WARPS;
    switch (per) {
    case 1: return gemv08_launch<NT, 1, NORM>(a, nm, s, err);
    case 2: return gemv08_launch<NT, 2, NORM>(a, nm, s, err);
    case 3: return gemv08_launch<NT, 3, NORM>(a, nm, s, err);
    default: return gemv08_launch<NT, 4, NORM>(a, nm, s, err);
    }
}

tinfer_status tinfer_gemv_bf16_stream(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err) {
    const g08_norm none = {nullptr, 0, nullptr, 0.f};
    if (a->K > (int64_t)G08_WARPS * G08_UMAX * 32) return tinfer_gemv_bf16_split_k(a, s, err);
    return a->M <= 8 ? gemv08_pick_u<1, false>(a, none, s, err) : gemv08_pick_u<2, false>(a, none, s, err);
}

int tinfer_gemv_bf16_stream_norm_ok(const tinfer_gemm_bf16_args *a) {
    return a->M >= 1 && a->M <= 8 && a->K <= (int64_t)G08_WARPS * G08_UMAX * 32 && a->K % 8 == 0;
}

tinfer_status tinfer_gemv_bf16_stream_norm(const tinfer_gemm_bf16_args *a, const float *x, int64_t ldx,
                                           const uint16_t *norm_w, float eps, cudaStream_t s,
                                           tinfer_err *err) {
    if (!tinfer_gemv_bf16_stream_norm_ok(a))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16_rmsnorm: M=%lld K=%lld outside rung 08's fused norm (M <= 8, K <= 1024, K %% 8 == 0)",
                              (long long)a->M, (long long)a->K);
    if (!x || !norm_w || ldx < a->K || ldx % 4 != 0 || ((uintptr_t)x & 15u) != 0 || ((uintptr_t)norm_w & 15u) != 0 || !(eps >= 0.f))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16_rmsnorm: x / norm_w NULL or not 16-byte aligned, ldx %lld < K or not a multiple of 4, or eps < 0",
                              (long long)ldx);
    const g08_norm nm = {x, ldx, norm_w, eps};
    return gemv08_pick_u<1, true>(a, nm, s, err);
}

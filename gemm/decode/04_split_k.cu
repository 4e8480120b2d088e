/*
 * 04_split_k.cu — decode rung 4 (dispatch uses it for short, wide weights): a block per 16 columns, its
 * 8 warps split K, and mma.sync shares each weight read across up to 16 tokens.
 *
 * Change from 03: (1) split-K inside the block: warp w owns a contiguous 1/8 of the K range, so
 * even N = 576 (36 blocks) keeps 8 warps per block streaming, and the partial sums are reduced
 * once through shared memory (8 KB) instead of per row by shuffles. (2) The multiply runs on the
 * tensor cores: mma.sync.m16n8k16 with A = 16 rows of W, B = X^T (8 tokens; two n8 tiles for 16
 * tokens), so MT tokens cost no extra FP32 FMAs (03's limit) and M <= 16 costs about one M = 1.
 * Layout trick (where the fragments are built, below): a dot product may sum K in any order,
 * so logical k of the mma is permuted so that lane (g = lane/4, t = lane%4) needs physical
 * k = 8t..8t+7 of rows g and g+8: one 16-byte load per row per 32-wide K chunk, and the X
 * fragment is the same 16-byte granule of token g. Each lane issues U = 4 chunks (8 W loads,
 * 128 B; 32 KB per block) before the first mma.
 * Constraints: K % 8 == 0, 16-byte aligned rows (bf16.h). Tokens: passes of 16 (grid.y).
 * Measured (H200, 2026-12-02, run 4): M=1 / M=8: QKV 6144x4096 19.5 / 19.8 us (61% of copy);
 * down 4096x14336 54.0 / 54.7 us (51%: 8 rows x 64 B per warp load streams badly, see 05);
 * LM head 49152x576 18.6 / 21.1 us (72% / 64%), the best rung there (dispatch uses it).
 * Programmatic dependent launch (sm_90, as rung 05; --gemv-pdl, default on): the block reads
 * nothing before griddepcontrol.wait and lets the next grid launch once its loads are consumed,
 * so back to back the next call's blocks are resident while this one drains.
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/ptx.cuh"
#include "gemm/decode/gemv_bf16_internal.h"

#include <string.h>

#define G04_WARPS 8
#define G04_U 4

/* NT: n8 token tiles (1: M <= 8 per pass, 2: 16). SWI: fused gate/up rows. */
template <int NT, bool SWI>
static __global__ void __launch_bounds__(G04_WARPS * 32) gemv04_kernel(tinfer_gemm_bf16_args a, int pdl) {
    __shared__ float red[G04_WARPS][SWI ? 2 : 1][16][16]; /* [warp][gate/up][row][token] */
    if (pdl) { /* PDL: the previous kernel may still write X, W, bias, R or Y */
        if (pdl == 1) tdec::pdl_launch_dependents();
        tdec::pdl_wait();
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int64_t nout = tinfer_gemm_bf16_nout(a);
    const int64_t j0 = (int64_t)blockIdx.x * 16;
    const int64_t m0 = (int64_t)blockIdx.y * 16;
    const int64_t F = a.N / 2;
    /* rows of this lane: j0+g and j0+g+8 (gate block), F+j0+g, F+j0+g+8 (up block) */
    const bool r0ok = j0 + g < nout, r1ok = j0 + g + 8 < nout;
    const uint16_t *w0 = a.W + (r0ok ? j0 + g : 0) * a.ldw;
    const uint16_t *w1 = a.W + (r1ok ? j0 + g + 8 : 0) * a.ldw;
    const uint16_t *u0 = a.W + (SWI && r0ok ? F + j0 + g : 0) * a.ldw;
    const uint16_t *u1 = a.W + (SWI && r1ok ? F + j0 + g + 8 : 0) * a.ldw;
    const bool x0ok = m0 + g < a.M, x1ok = m0 + 8 + g < a.M;
    const uint16_t *x0 = a.X + (x0ok ? m0 + g : 0) * a.ldx;
    const uint16_t *x1 = a.X + (x1ok ? m0 + 8 + g : 0) * a.ldx;

    const int64_t nchunk = (a.K + 31) / 32;
    const int64_t per = (nchunk + G04_WARPS - 1) / G04_WARPS;
    const int64_t cbeg = warp * per, cend = cbeg + per < nchunk ? cbeg + per : nchunk;

    float cg[NT][4], cu[NT][4];
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) cg[n][i] = cu[n][i] = 0.f;

    const uint4 z = make_uint4(0, 0, 0, 0);
    for (int64_t c0 = cbeg; c0 < cend; c0 += G04_U) {
        uint4 wa[G04_U][2], wb[G04_U][2], xb[G04_U][NT];
#pragma unroll
        for (int i = 0; i < G04_U; i++) {
            const int64_t k = (c0 + i) * 32 + t * 8;
            const bool ok = c0 + i < cend && k < a.K;
            wa[i][0] = ok && r0ok ? tinfer_ld_stream16(w0 + k) : z;
            wa[i][1] = ok && r1ok ? tinfer_ld_stream16(w1 + k) : z;
            if (SWI) {
                wb[i][0] = ok && r0ok ? tinfer_ld_stream16(u0 + k) : z;
                wb[i][1] = ok && r1ok ? tinfer_ld_stream16(u1 + k) : z;
            }
            xb[i][0] = ok && x0ok ? __ldg((const uint4 *)(x0 + k)) : z;
            if (NT == 2) xb[i][NT - 1] = ok && x1ok ? __ldg((const uint4 *)(x1 + k)) : z;
        }
#pragma unroll
        for (int i = 0; i < G04_U; i++) {
            /* Fragments: mma #1 takes physical k 8t..8t+3 (the .x/.y words), mma #2 8t+4..8t+7
             * (.z/.w). A: a0 = (row g, pair 0), a1 = (row g+8, pair 0), a2 = (row g, pair 1),
             * a3 = (row g+8, pair 1); B: b0 = (token g, pair 0), b1 = (token g, pair 1). */
#pragma unroll
            for (int n = 0; n < NT; n++) {
                tdec::mma_16816(cg[n], wa[i][0].x, wa[i][1].x, wa[i][0].y, wa[i][1].y, xb[i][n].x, xb[i][n].y);
                tdec::mma_16816(cg[n], wa[i][0].z, wa[i][1].z, wa[i][0].w, wa[i][1].w, xb[i][n].z, xb[i][n].w);
                if (SWI) {
                    tdec::mma_16816(cu[n], wb[i][0].x, wb[i][1].x, wb[i][0].y, wb[i][1].y, xb[i][n].x, xb[i][n].y);
                    tdec::mma_16816(cu[n], wb[i][0].z, wb[i][1].z, wb[i][0].w, wb[i][1].w, xb[i][n].z, xb[i][n].w);
                }
            }
        }
    }
    if (pdl >= 2) tdec::pdl_launch_dependents();
    /* C fragment: c0,c1 = (row g, tokens 2t, 2t+1), c2,c3 = (row g+8, same tokens). */
#pragma unroll
    for (int n = 0; n < NT; n++) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = g + 8 * (i >> 1), tok = 8 * n + 2 * t + (i & 1);
            red[warp][0][row][tok] = cg[n][i];
            if (SWI) red[warp][SWI ? 1 : 0][row][tok] = cu[n][i];
        }
    }
    __syncthreads();
    /* 256 outputs (16 tokens x 16 columns), one per thread; j fastest for coalesced stores. */
    const int row = threadIdx.x % 16, tok = threadIdx.x / 16;
    if (tok >= 8 * NT) return;
    const int64_t m = m0 + tok, j = j0 + row;
    if (m >= a.M || j >= nout) return;
    float sg = 0.f, su = 0.f;
#pragma unroll
    for (int w = 0; w < G04_WARPS; w++) {
        sg += red[w][0][row][tok];
        if (SWI) su += red[w][SWI ? 1 : 0][row][tok];
    }
    tinfer_bf16_epi_store(a, m, j, sg, su);
}

template <int NT, bool SWI>
static tinfer_status gemv04_launch(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    const int64_t passes = (a->M + 15) / 16;
    if (passes > 65535 || (nout + 15) / 16 > 0x7fffffff)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16 04: M=%lld N=%lld too large",
                              (long long)a->M, (long long)a->N);
    {
        tinfer_cuda_facts d;
        if ((status = tinfer_cuda_current_facts(&d, err)) != TINFER_OK) return status;
        const int pdl = d.cc_major >= 9 ? tinfer_gemv_pdl_mode() : 0; /* griddepcontrol is sm_90 */
        if (pdl < 0) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemv_bf16 04: knob gemv_pdl must be 0..4");
        cudaLaunchConfig_t cfg;
        cudaLaunchAttribute attr[1];
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDim = dim3((unsigned)((nout + 15) / 16), (unsigned)passes);
        cfg.blockDim = dim3(G04_WARPS * 32);
        cfg.stream = s;
        cfg.attrs = attr;
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.numAttrs = pdl ? 1 : 0;
        TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&cfg, gemv04_kernel<NT, SWI>, *a, pdl));
        TINFER_CUDA_LAUNCH_CHECK(err, "gemv04_kernel");
    }
cleanup:
    return status;
}

tinfer_status tinfer_gemv_bf16_split_k(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                       tinfer_err *err) {
    const bool one_tile = a->M <= 8;
    if (a->swiglu) return one_tile ? gemv04_launch<1, true>(a, s, err) : gemv04_launch<2, true>(a, s, err);
    return one_tile ? gemv04_launch<1, false>(a, s, err) : gemv04_launch<2, false>(a, s, err);
}

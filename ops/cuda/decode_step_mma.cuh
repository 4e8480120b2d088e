/*
 * decode_step_mma.cuh — the fused decode step's GEMV phases and LM head for several tokens
 * (decode_step.cu's instance of up to 8) on the tensor cores. On the CUDA cores (the one-token
 * instance's gemv_tile, swiglu_tile, lm_head_rows) every token costs its own FMAs, BF16
 * conversions and shuffle reduction per row: 8 tokens make a phase's own work ~8 times one
 * token's. Here mma.sync.m16n8k16 (BF16 in, F32 accumulators) takes 16 weight rows against the
 * 8 staged tokens at once.
 *
 * Fragments (rung 04's layout, gemm/decode/04_split_k.cu): a dot product may sum K in any order,
 * so the mma's logical k is permuted so that lane (g = lane / 4, t = lane % 4) needs physical
 * k = 8t..8t+7 of weight rows g and g + 8 and of token g: one 16-byte load each per 32-wide chunk
 * of K; mma #1 takes the .x / .y words (k 8t..8t+3), mma #2 the .z / .w words. Accumulator c of
 * a lane: rows g (c0, c1) and g + 8 (c2, c3), tokens 2t (c0, c2) and 2t + 1 (c1, c3).
 *
 * GEMV phases (the block's rows in a ring stage, K <= 1,536): warp w takes chunks w, w + 8, ...
 * of K for two 16-row tiles at a time; the 8 warps' partial tiles meet in shared memory (8 KB,
 * one block barrier) and thread (token j, row r) sums them and runs the epilogue. The staged
 * rows xs have a stride of 32 mod 64 elements (mma_staged_ld), so the 8 lanes of a quarter warp (two
 * tokens, 64 bytes each) read distinct banks. LM head (rows read once, from global memory): a
 * warp takes 16 rows at a time over the whole of E, so no reduction between warps; the greedy
 * pick of each token is reduced across the lanes that hold it.
 *
 * Staging: the RMSNorm phases take a warp a token (stage_norm_warps); the others, as the
 * CUDA-core instances, stage_copy (8 words a thread in flight a pass: with 24, so that 8 tokens of
 * F = 1,536 took 2 passes instead of 6, an H100 step measured 533-540 against 505-506 us at 4
 * tokens and 605-611 against 578-581 at 8, probe-decode-step --ctx 64).
 * Code size: the kernel's layer loop is its working set in the SM's instruction cache, and this
 * instance's phases are larger than the one-token ones. Measured on an H200 (probe-decode-step,
 * 8 tokens, 64 keys), with the instance's sm_90a code size: 224 KB, 869 us a step; the layer as
 * two halves of one code path (decode_step.cu) 168 KB, 826 us; the RMSNorm staging a warp a
 * token instead of every thread a share of every token, 135 KB, 600 us; the K loop of
 * mma_two_tiles not unrolled, 121 KB, 593 us.
 * Included by decode_step.cu after decode_step_parts.cuh; everything static.
 */
#ifndef TINFER_OPS_CUDA_DECODE_STEP_MMA_CUH
#define TINFER_OPS_CUDA_DECODE_STEP_MMA_CUH

#include "ops/cuda/decode_step_parts.cuh"

/* Floats of shared memory the tensor-core phases reduce through: [warp][tile][c][lane]. */
#define DS_MMA_RED (DS_WARPS * 2 * 4 * 32)
static_assert(DS_MAX_B == 8, "the tensor-core phases take the tokens as one n8 tile");

static __device__ __forceinline__ uint4 lds16(const uint16_t *p) { return *(const uint4 *)p; }

/* c += the 16 x 16 tile whose fragment words are a0..a3 times the 16 x 8 one of b0, b1. */
static __device__ __forceinline__ void mma_words(float c[4], uint32_t a0, uint32_t a1,
                                                 uint32_t a2, uint32_t a3, uint32_t b0,
                                                 uint32_t b1) {
    const uint32_t a[4] = {a0, a1, a2, a3};
    mma16816(c, a, b0, b1);
}

/* w[u] = the flagged word at p + u STRIDE for u < n_on (0 past it), polled until every one
 * carries epoch ep: ll_settle_n (decode_step_parts.cuh) with the offsets computed rather than
 * kept in registers; every word loaded at once, each pass reloading every stale one. */
template <int N, int STRIDE>
static __device__ __forceinline__ void ll_load_settle(const uint64_t *p, int32_t n_on,
                                                      uint64_t (&w)[N], uint32_t ep) {
#pragma unroll
    for (int u = 0; u < N; u++)
        w[u] = u < n_on ? ll_load(p + u * STRIDE) : 0;
    for (uint32_t spins = 0;; spins++) {
        bool stale = false;
#pragma unroll
        for (int u = 0; u < N; u++)
            if (u < n_on && (uint32_t)(w[u] >> 32) != ep) {
                stale = true;
                w[u] = ll_load(p + u * STRIDE);
            }
        if (!stale) return;
        if (spins > DS_SPIN_LIMIT) __trap();
    }
}

/* stage_norm (decode_step_parts.cuh) for several tokens, a warp a token (warp j: token j;
 * DS_WARPS >= DS_MAX_B): lane l loads words l, l + 32, ... of the token's row at once (E <= 1,024:
 * 32 at most), the sum of squares is one warp reduction, and no block barrier stands between the
 * loads and the scaling. (The CUDA-core instances keep stage_norm and stage_copy: with the
 * several-token staging and the padded stride together, the one-token step measured 391 against
 * 328 us on an H100.) */
template <int NB>
static __device__ DS_PHASE void stage_norm_warps(uint16_t *xs, int32_t ldxs, const uint64_t *x,
                                                 uint32_t ep, const uint16_t *w, const int32_t *map,
                                                 int32_t rows, int32_t E, float eps) {
    constexpr int PL = NORM_PER_THREAD * DS_THREADS / 32;
    static_assert(DS_WARPS >= DS_MAX_B, "a warp a token");
    const int lane = threadIdx.x & 31, j = threadIdx.x >> 5;
    if (j < rows) {
        const uint64_t *src = x + (int64_t)(map ? map[j] : j) * E + lane;
        const int32_t n_on = (E - lane + 31) / 32; /* this lane's words: lane + 32 i < E */
        uint64_t wv[PL];
        ll_load_settle<PL, 32>(src, n_on, wv, ep);
        float ss = 0.0f;
#pragma unroll
        for (int i = 0; i < PL; i++) {
            const float v = i < n_on ? __uint_as_float((uint32_t)wv[i]) : 0.0f;
            ss += v * v;
        }
        const float rs = 1.0f / sqrtf(warp_sum(ss) / (float)E + eps);
        uint16_t *dst = xs + (int64_t)j * ldxs + lane;
#pragma unroll
        for (int i = 0; i < PL; i++)
            if (i < n_on)
                dst[32 * i] =
                    (uint16_t)f32_to_bf16(__fmul_rn(__uint_as_float((uint32_t)wv[i]), rs) *
                                          bf16_to_f32(w[lane + 32 * i]));
    }
    ds_sync(); /* xs complete */
}

/* acc[0] += tile a (16 rows of K, row stride K; rows at or past na read row 0, their sums unused)
 * and, where nb > 0, acc[1] += tile b against the 8 staged tokens, over the 32-wide chunks of K
 * this warp takes. K is a multiple of 8, so a lane's 8 k are all inside K or all outside (read
 * as zeros: stale shared memory past K might hold a NaN). */
static __device__ __forceinline__ void mma_two_tiles(const uint16_t *xs, int32_t ldxs,
                                                     const uint16_t *Wa, int32_t na,
                                                     const uint16_t *Wb, int32_t nb, int32_t K,
                                                     int warp, int lane, float (&acc)[2][4]) {
    const int g = lane >> 2, t = lane & 3;
    const uint16_t *a0 = Wa + (int64_t)(g < na ? g : 0) * K;
    const uint16_t *a1 = Wa + (int64_t)(g + 8 < na ? g + 8 : 0) * K;
    const uint16_t *b0 = Wb + (int64_t)(g < nb ? g : 0) * K;
    const uint16_t *b1 = Wb + (int64_t)(g + 8 < nb ? g + 8 : 0) * K;
    const uint16_t *x = xs + (int64_t)g * ldxs;
    const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll 1 /* code size: see the file's head */
    for (int32_t c = warp * 32; c < K; c += DS_WARPS * 32) { /* uniform across the warp */
        const int32_t k = c + t * 8;
        const bool ok = k < K;
        const uint4 xv = ok ? lds16(x + k) : z;
        const uint4 w0 = ok ? lds16(a0 + k) : z, w1 = ok ? lds16(a1 + k) : z;
        mma_words(acc[0], w0.x, w1.x, w0.y, w1.y, xv.x, xv.y);
        mma_words(acc[0], w0.z, w1.z, w0.w, w1.w, xv.z, xv.w);
        if (nb > 0) {
            const uint4 v0 = ok ? lds16(b0 + k) : z, v1 = ok ? lds16(b1 + k) : z;
            mma_words(acc[1], v0.x, v1.x, v0.y, v1.y, xv.x, xv.y);
            mma_words(acc[1], v0.z, v1.z, v0.w, v1.w, xv.z, xv.w);
        }
    }
}

/* The warps' partial tiles into mr, a block barrier, and the sum over the warps of tile tl's
 * element (row rr < 16, token j) for the calling thread. */
static __device__ __forceinline__ void mma_partials_put(float *mr, const float (&acc)[2][4],
                                                        int warp, int lane) {
#pragma unroll
    for (int tl = 0; tl < 2; tl++)
#pragma unroll
        for (int c = 0; c < 4; c++)
            mr[((warp * 2 + tl) * 4 + c) * 32 + lane] = acc[tl][c];
}
static __device__ __forceinline__ float mma_partials_sum(const float *mr, int tl, int rr, int j) {
    const int c = (rr >> 3) * 2 + (j & 1), lane = (rr & 7) * 4 + (j >> 1);
    float v = 0.0f;
#pragma unroll
    for (int w = 0; w < DS_WARPS; w++)
        v += mr[((w * 2 + tl) * 4 + c) * 32 + lane];
    return v;
}

/* gemv_tile (decode_step_parts.cuh) for up to 8 tokens on the tensor cores: Y[j][n0 + r]
 * (epilogue OUT) = xs[j] · Wt[r] (+ bias[n0 + r]), j < rows, r < R, 32 rows a pass. */
template <int OUT>
static __device__ DS_PHASE void gemv_mma(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                         const uint16_t *Wt, int32_t R, int32_t K, int32_t n0,
                                         const uint16_t *bias, float *xo, void *Y, int64_t ldy,
                                         uint32_t ep, float *mr, int warp, int lane) {
    const int tid = threadIdx.x;
    for (int32_t m0 = 0; m0 < R; m0 += 32) {
        const int32_t na = min(16, R - m0), nb = max(0, min(16, R - m0 - 16));
        float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
        const uint16_t *Wa = Wt + (int64_t)m0 * K;
        mma_two_tiles(xs, ldxs, Wa, na, nb > 0 ? Wa + 16 * (int64_t)K : Wa, nb, K, warp, lane,
                      acc);
        mma_partials_put(mr, acc, warp, lane);
        ds_sync();
        /* thread (token j, row r of the pass's 32): consecutive threads, consecutive outputs */
        const int32_t j = tid >> 5, r = tid & 31;
        if (j < rows && m0 + r < R) {
            const int32_t n = n0 + m0 + r;
            const float v = mma_partials_sum(mr, r >> 4, r & 15, j) +
                            (bias ? bf16_to_f32(bias[n]) : 0.0f);
            gemv_put<OUT>(Y, ldy, j, n, v, xo, R, m0 + r, ep);
        }
        if (m0 + 32 < R) ds_sync(); /* mr is rewritten */
    }
}

/* swiglu_tile for up to 8 tokens on the tensor cores: act[j][f0 + f] = BF16(silu(g) * u), the
 * block's Rf gate rows then its Rf up rows in Wt; gate tile and up tile of 16 rows a pass. */
static __device__ DS_PHASE void swiglu_mma(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                           const uint16_t *Wt, int32_t Rf, int32_t K, int32_t f0,
                                           uint64_t *act, int32_t F, uint32_t ep, float *mr,
                                           int warp, int lane) {
    const int tid = threadIdx.x;
    for (int32_t m0 = 0; m0 < Rf; m0 += 16) {
        const int32_t n = min(16, Rf - m0);
        float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
        mma_two_tiles(xs, ldxs, Wt + (int64_t)m0 * K, n, Wt + (int64_t)(Rf + m0) * K, n, K, warp,
                      lane, acc);
        mma_partials_put(mr, acc, warp, lane);
        ds_sync();
        const int32_t j = tid >> 4, r = tid & 15; /* threads 0..127 */
        if (tid < 128 && j < rows && r < n) {
            const float gs = mma_partials_sum(mr, 0, r, j), us = mma_partials_sum(mr, 1, r, j);
            ll_put(act + (int64_t)j * F + f0 + m0 + r,
                   f32_to_bf16(gs / (1.0f + __expf(-gs)) * us), ep);
        }
        if (m0 + 16 < Rf) ds_sync();
    }
}

/* lm_head_rows for up to 8 tokens on the tensor cores: logits[j][n] = xs[j] · lm_head[n], n in
 * [v0, v1), and each warp's greedy pick of token j as am[warp][j]. A warp takes 16 rows at a
 * time, DS_LM_CHUNKS chunks of 32 k (two 16-byte loads a lane each) in flight together, read
 * with no L1 allocation; E <= 1,024. A lane's logits leave as 4 stores, each a 32-byte run of 8
 * rows for each of 4 tokens. */
#define DS_LM_CHUNKS 6
static __device__ DS_PHASE void lm_head_mma(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                            const uint16_t *__restrict__ W, int32_t v0,
                                            int32_t v1, int32_t E, float *logits, int64_t V,
                                            uint64_t *am, int warp, int lane) {
    const int g = lane >> 2, t = lane & 3;
    const uint16_t *x = xs + (int64_t)g * ldxs;
    const uint4 z = make_uint4(0, 0, 0, 0);
    float bv[2] = {-INFINITY, -INFINITY}; /* tokens 2t, 2t + 1 */
    int32_t bi[2] = {INT_MAX, INT_MAX};
    for (int32_t n0 = v0 + warp * 16; n0 < v1; n0 += DS_WARPS * 16) {
        const bool ok0 = n0 + g < v1, ok1 = n0 + g + 8 < v1;
        const uint16_t *w0 = W + (int64_t)(ok0 ? n0 + g : v0) * E;
        const uint16_t *w1 = W + (int64_t)(ok1 ? n0 + g + 8 : v0) * E;
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int32_t c0 = 0; c0 < E; c0 += DS_LM_CHUNKS * 32) {
            uint4 wa[DS_LM_CHUNKS], wb[DS_LM_CHUNKS];
#pragma unroll
            for (int u = 0; u < DS_LM_CHUNKS; u++) {
                const int32_t k = c0 + u * 32 + t * 8;
                wa[u] = k < E ? ld_stream16(w0 + k) : z;
                wb[u] = k < E ? ld_stream16(w1 + k) : z;
            }
#pragma unroll
            for (int u = 0; u < DS_LM_CHUNKS; u++) {
                const int32_t k = c0 + u * 32 + t * 8;
                if (c0 + u * 32 >= E) break; /* uniform: the warp's last chunk */
                const uint4 xv = k < E ? lds16(x + k) : z;
                mma_words(acc, wa[u].x, wb[u].x, wa[u].y, wb[u].y, xv.x, xv.y);
                mma_words(acc, wa[u].z, wb[u].z, wa[u].w, wb[u].w, xv.z, xv.w);
            }
        }
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const int32_t n = n0 + g + (c >> 1) * 8, j = 2 * t + (c & 1);
            if (n < v1 && j < rows) {
                logits[j * V + n] = acc[c];
                if (am_better(acc[c], n, bv[c & 1], bi[c & 1])) bv[c & 1] = acc[c], bi[c & 1] = n;
            }
        }
    }
    /* the best of each token over the 8 lanes that hold it (lanes t, t + 4, ..., t + 28) */
#pragma unroll
    for (int o = 4; o < 32; o <<= 1)
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const float ov = __shfl_xor_sync(0xffffffffu, bv[i], o);
            const int32_t oi = __shfl_xor_sync(0xffffffffu, bi[i], o);
            if (am_better(ov, oi, bv[i], bi[i])) bv[i] = ov, bi[i] = oi;
        }
    if (g == 0)
#pragma unroll
        for (int i = 0; i < 2; i++)
            if (2 * t + i < rows) am[warp * DS_MAX_B + 2 * t + i] = am_key(bv[i], bi[i]);
}

/* The phases' entry points for the kernel. Instances of up to DS_CC_MAX tokens run the norm,
 * staging and GEMV phases on the CUDA cores (decode_step_parts.cuh), the instance of up to 8
 * here; the LM head takes the tensor cores from 2 tokens on. Measured on an H100
 * (probe-decode-step --ctx 64, us a step, two alternating rounds): at 2 tokens the CUDA-core
 * phases 445 against 521 for the tensor-core instance, whose hops waited twice as long for their
 * inputs (phase C 1.9 against 0.7 us a layer), at 4 tokens 693 against 536; the LM head at 2
 * tokens 39 us on the CUDA cores against 25 on the tensor cores. */
#define DS_CC_MAX 2
template <int NB>
static __device__ DS_PHASE void phase_norm(uint16_t *xs, int32_t ldxs, const uint64_t *x,
                                           uint32_t ep, const uint16_t *w, const int32_t *map,
                                           int32_t rows, int32_t E, float eps, float *red) {
    if constexpr (NB <= DS_CC_MAX)
        stage_norm<NB>(xs, ldxs, x, ep, w, map, rows, E, eps, red);
    else
        stage_norm_warps<NB>(xs, ldxs, x, ep, w, map, rows, E, eps);
}
template <int NB>
static __device__ DS_PHASE void phase_copy(uint16_t *xs, int32_t ldxs, const uint64_t *src,
                                           uint32_t ep, int32_t K, int32_t rows) {
    stage_copy(xs, ldxs, src, ep, K, rows);
}
template <int OUT, int NB>
static __device__ DS_PHASE void phase_gemv(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                           const uint16_t *Wt, int32_t R, int32_t K, int32_t n0,
                                           const uint16_t *bias, float *xo, void *Y, int64_t ldy,
                                           uint32_t ep, float *mr, int warp, int lane) {
    if constexpr (NB <= DS_CC_MAX)
        gemv_tile<OUT, NB>(xs, ldxs, rows, Wt, R, K, n0, bias, xo, Y, ldy, ep, warp, lane);
    else
        gemv_mma<OUT>(xs, ldxs, rows, Wt, R, K, n0, bias, xo, Y, ldy, ep, mr, warp, lane);
}
template <int NB>
static __device__ DS_PHASE void phase_swiglu(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                             const uint16_t *Wt, int32_t Rf, int32_t K,
                                             int32_t f0, uint64_t *act, int32_t F, uint32_t ep,
                                             float *mr, int warp, int lane) {
    if constexpr (NB <= DS_CC_MAX)
        swiglu_tile<NB>(xs, ldxs, rows, Wt, Rf, K, f0, act, F, ep, warp, lane);
    else
        swiglu_mma(xs, ldxs, rows, Wt, Rf, K, f0, act, F, ep, mr, warp, lane);
}
template <int NB>
static __device__ DS_PHASE void phase_lm_head(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                              const uint16_t *__restrict__ W, int32_t v0,
                                              int32_t v1, int32_t E, float *logits, int64_t V,
                                              uint64_t *am, int warp, int lane) {
    if constexpr (NB == 1)
        lm_head_rows<1>(xs, ldxs, rows, W, v0, v1, E, logits, V, am, warp, lane);
    else
        lm_head_mma(xs, ldxs, rows, W, v0, v1, E, logits, V, am, warp, lane);
}

#endif

/*
 * elementwise.cu — the row-wise CUDA ops: embedding lookup, RMSNorm (with the LM head's row
 * gather), argmax over logits, and the F32 -> BF16 cast. References: ops/ref/ops_elementwise.c
 * (embed, rmsnorm) and runtime/sampler.c (greedy: argmax, ties to the lowest index).
 *
 * embed    one block per token; 16-byte loads of 8 BF16 widened into two float4 stores when E % 8
 *          == 0 and both pointers are 16-byte aligned, else one element per thread. Exact.
 * rmsnorm  one block per output row. Pass 1: sum of squares in F32 (per-thread partial sums,
 *          warp shuffles, one word per warp in shared memory); r = 1 / sqrtf(ss / E + eps)
 *          (IEEE sqrt and division: nvcc's defaults). Pass 2 stores bf16((x * r) * w), products
 *          rounded as the reference rounds them (no FMA can contract a pure product chain).
 *          When E % 4 == 0, E <= 8,192 and the pointers are aligned, the row and its weights
 *          stay in registers (float4 / 8-byte BF16 vectors, all loaded at once); otherwise
 *          pass 2 re-reads the row (L1/L2-resident) element by element. The reference sums in
 *          double; the F32 sum differs from it by <= E * 2^-24 relative (a few F32 ulps of r in
 *          practice), so an output may land on the other side of a BF16 rounding boundary:
 *          <= 1 BF16 ulp (2^-8 relative) from the reference rounded to BF16.
 * argmax   one block of 1024 threads per row (the vocabulary: 32k-256k logits), each thread
 *          keeping (value, index) over a strided part of the row with the rule "greater, or
 *          equal at a lower index" (order-independent, so the result is the lowest index of the
 *          maximum whatever the reduction order); NaN fails both comparisons and never wins.
 *          Decode has few rows (n_out = active sequences), and one block a row reads at one
 *          SM's bandwidth, so argmax_split cuts each row into chunks, a block each, about two
 *          blocks an SM in all: each block's best joins its row's by a 64-bit atomicMax of
 *          (ordered value, complemented index), which keeps the rule, and the row's last block
 *          writes the id.
 * cast     grid-stride, float4 in / 8-byte out when both pointers allow it.
 * greedy_feed  one thread per sequence: the picks of a queued greedy step saved, and fed to the
 *          next step's metadata (reference: the runtime's loop over tinfer_decode +
 *          tinfer_get_argmax, runtime/context.c).
 */
#include "gemm/cuda/cuda_check.h"
#include "ops/cuda/ops_cuda.h"
#include "ops/cuda/ops_cuda_util.cuh"

#include <limits.h>
#include <math.h>

using namespace tops;

/* ---- embed ---- */

template <bool VEC>
static __global__ void embed_kernel(float *__restrict__ out, const uint16_t *__restrict__ table,
                                    const int32_t *__restrict__ tok, int32_t E, int32_t n_vocab,
                                    unsigned long long *__restrict__ clear, int64_t n_clear) {
    tops_pdl_enter();
    for (int64_t w = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; w < n_clear;
         w += (int64_t)gridDim.x * blockDim.x)
        clear[w] = 0;
    const int64_t i = blockIdx.x;
    const int32_t id = tok[i];
    float *o = out + i * E;
    if (id < 0 || id >= n_vocab) {
        for (int32_t d = threadIdx.x; d < E; d += blockDim.x)
            o[d] = __int_as_float(0x7fc00000);
        return;
    }
    const uint16_t *t = table + (int64_t)id * E;
    if (VEC) {
        const uint4 *t4 = reinterpret_cast<const uint4 *>(t);
        float4 *o4 = reinterpret_cast<float4 *>(o);
        for (int32_t c = threadIdx.x; c < E / 8; c += blockDim.x) {
            const uint4 u = t4[c];
            o4[2 * c] = make_float4(bf16_to_f32(u.x), bf16_to_f32(u.x >> 16), bf16_to_f32(u.y),
                                    bf16_to_f32(u.y >> 16));
            o4[2 * c + 1] = make_float4(bf16_to_f32(u.z), bf16_to_f32(u.z >> 16), bf16_to_f32(u.w),
                                        bf16_to_f32(u.w >> 16));
        }
    } else {
        for (int32_t d = threadIdx.x; d < E; d += blockDim.x)
            o[d] = bf16_to_f32(t[d]);
    }
}

extern "C" tinfer_status tinfer_op_cuda_embed_clear(float *out, const uint16_t *table,
                                                    const int32_t *tok, int32_t n, int32_t E,
                                                    int32_t n_vocab, unsigned long long *clear,
                                                    int64_t n_clear, cudaStream_t stream,
                                                    tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    TOPS_REQUIRE(err, n >= 0 && E >= 1 && n_vocab >= 1, "embed", "bad sizes n=%d E=%d n_vocab=%d",
                 n, E, n_vocab);
    TOPS_REQUIRE(err, n_clear >= 0 && (n_clear == 0 || clear), "embed",
                 "clear: %lld words at NULL or a negative count", (long long)n_clear);
    if (n == 0) return TINFER_OK;
    TOPS_REQUIRE(err, out && table && tok, "embed", "NULL pointer");
    {
        const bool vec = E % 8 == 0 && tops_host_aligned(out, 16) && tops_host_aligned(table, 16);
        const int threads = E >= 2048 ? 256 : 128;
        TOPS_LAUNCH(err, "embed_kernel", vec ? embed_kernel<true> : embed_kernel<false>, n, threads,
                    0, stream, out, table, tok, E, n_vocab, clear, n_clear);
    }
cleanup:
    return status;
}

extern "C" tinfer_status tinfer_op_cuda_embed(float *out, const uint16_t *table, const int32_t *tok,
                                              int32_t n, int32_t E, int32_t n_vocab,
                                              cudaStream_t stream, tinfer_err *err) {
    return tinfer_op_cuda_embed_clear(out, table, tok, n, E, n_vocab, NULL, 0, stream, err);
}

/* ---- rmsnorm ---- */

#define RMS_THREADS 256
#define RMS_MAX_VPT 8 /* float4 a thread kept in registers: E <= 4 * 8 * 256 = 8,192 */

/* VPT > 0: the row held in registers, VPT float4 (and their weights) a thread, every load of
 * the row issued at once before the reduction: one memory round trip where a loop over the row
 * paid one per iteration, twice. Measured on an H100 (ncu, real clocks, Llama-3-8B decode step,
 * E = 4,096): 3.30 us a call against 5.36 us for the loop. VPT = 0: any E or alignment, element
 * by element, two passes. */
template <int VPT>
static __global__ void __launch_bounds__(RMS_THREADS)
    rmsnorm_kernel(uint16_t *__restrict__ out, const float *__restrict__ x,
                   const uint16_t *__restrict__ w, const int32_t *__restrict__ rows, int32_t n_x,
                   int32_t E, float eps) {
    tops_pdl_enter();
    __shared__ float red[RMS_THREADS / 32];
    __shared__ float r_sh;
    const int64_t r = blockIdx.x;
    const int32_t src = rows ? rows[r] : (int32_t)r;
    uint16_t *o = out + r * E;
    if (src < 0 || src >= n_x) {
        for (int32_t d = threadIdx.x; d < E; d += blockDim.x)
            o[d] = 0x7fc0u;
        return;
    }
    const float *xr = x + (int64_t)src * E;
    float ss = 0.0f;
    float4 xv[VPT > 0 ? VPT : 1];
    uint2 wv[VPT > 0 ? VPT : 1];
    if (VPT > 0) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        const uint2 *w4 = reinterpret_cast<const uint2 *>(w);
#pragma unroll
        for (int u = 0; u < VPT; u++) {
            const int32_t c = threadIdx.x + u * RMS_THREADS;
            if (c < E / 4) xv[u] = x4[c], wv[u] = w4[c];
        }
#pragma unroll
        for (int u = 0; u < VPT; u++) {
            const int32_t c = threadIdx.x + u * RMS_THREADS;
            if (c < E / 4)
                ss += xv[u].x * xv[u].x + xv[u].y * xv[u].y + xv[u].z * xv[u].z +
                      xv[u].w * xv[u].w;
        }
    } else {
        for (int32_t d = threadIdx.x; d < E; d += blockDim.x)
            ss += xr[d] * xr[d];
    }
    ss = warp_sum(ss);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x < 32) {
        float t = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.0f;
        t = warp_sum(t);
        if (threadIdx.x == 0) r_sh = 1.0f / sqrtf(t / (float)E + eps);
    }
    __syncthreads();
    const float rs = r_sh;
    if (VPT > 0) {
        uint2 *o4 = reinterpret_cast<uint2 *>(o);
#pragma unroll
        for (int u = 0; u < VPT; u++) {
            const int32_t c = threadIdx.x + u * RMS_THREADS;
            if (c >= E / 4) break;
            const float4 v = xv[u];
            uint2 ov;
            ov.x = pack_bf16x2(__fmul_rn(v.x, rs) * bf16_to_f32(wv[u].x),
                               __fmul_rn(v.y, rs) * bf16_to_f32(wv[u].x >> 16));
            ov.y = pack_bf16x2(__fmul_rn(v.z, rs) * bf16_to_f32(wv[u].y),
                               __fmul_rn(v.w, rs) * bf16_to_f32(wv[u].y >> 16));
            o4[c] = ov;
        }
    } else {
        for (int32_t d = threadIdx.x; d < E; d += blockDim.x)
            o[d] = (uint16_t)f32_to_bf16(__fmul_rn(xr[d], rs) * bf16_to_f32(w[d]));
    }
}

extern "C" tinfer_status tinfer_op_cuda_rmsnorm(uint16_t *out, const float *x, const uint16_t *w,
                                                const int32_t *rows, int32_t n_out, int32_t n_x,
                                                int32_t E, float eps, cudaStream_t stream,
                                                tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    TOPS_REQUIRE(err, n_out >= 0 && n_x >= 0 && E >= 1, "rmsnorm", "bad sizes n_out=%d n_x=%d E=%d",
                 n_out, n_x, E);
    TOPS_REQUIRE(err, rows || n_out <= n_x, "rmsnorm", "n_out=%d > n_x=%d without a row index",
                 n_out, n_x);
    TOPS_REQUIRE(err, eps >= 0.0f, "rmsnorm", "eps %g < 0", (double)eps);
    if (n_out == 0) return TINFER_OK;
    TOPS_REQUIRE(err, out && x && w, "rmsnorm", "NULL pointer");
    {
        const bool vec = E % 4 == 0 && tops_host_aligned(x, 16) && tops_host_aligned(w, 8) &&
                         tops_host_aligned(out, 8);
        const int32_t need = (E / 4 + RMS_THREADS - 1) / RMS_THREADS; /* float4 a thread */
        auto *k = rmsnorm_kernel<0>;
        if (vec && need <= RMS_MAX_VPT)
            k = need <= 1   ? rmsnorm_kernel<1>
                : need <= 2 ? rmsnorm_kernel<2>
                : need <= 4 ? rmsnorm_kernel<4>
                            : rmsnorm_kernel<RMS_MAX_VPT>;
        TOPS_LAUNCH(err, "rmsnorm_kernel", k, n_out, RMS_THREADS, 0, stream, out, x, w, rows, n_x,
                    E, eps);
    }
cleanup:
    return status;
}

/* ---- argmax ---- */

#define ARGMAX_THREADS 1024
#define ARGMAX_SPLIT_THREADS 256
#define ARGMAX_SPLIT_MIN 2048   /* logits a split block scans at least */
#define ARGMAX_SPLIT_PER_SM 2   /* split blocks the grid aims for, per SM */

/* (bv, bi) = (v, i) where it wins (am_better, ops_cuda_util.cuh) */
static __device__ __forceinline__ void am_take(float v, int32_t i, float &bv, int32_t &bi) {
    if (am_better(v, i, bv, bi)) {
        bv = v;
        bi = i;
    }
}

/* This thread's best of row[j0 .. j1), a blockDim.x stride apart (VEC: float4 loads up to the
 * last multiple of 4; j0 a multiple of 4). */
template <bool VEC>
static __device__ __forceinline__ void am_scan(const float *row, int32_t j0, int32_t j1, float &bv,
                                               int32_t &bi) {
    int32_t js = j0;
    if (VEC) {
        const float4 *r4 = reinterpret_cast<const float4 *>(row);
        for (int32_t c = j0 / 4 + (int32_t)threadIdx.x; c < j1 / 4; c += blockDim.x) {
            const float4 v = r4[c];
            am_take(v.x, 4 * c, bv, bi);
            am_take(v.y, 4 * c + 1, bv, bi);
            am_take(v.z, 4 * c + 2, bv, bi);
            am_take(v.w, 4 * c + 3, bv, bi);
        }
        js = j1 / 4 * 4 > j0 ? j1 / 4 * 4 : j0;
    }
    for (int32_t j = js + threadIdx.x; j < j1; j += blockDim.x)
        am_take(row[j], j, bv, bi);
}

/* The block's best (every thread's (bv, bi) in), valid in thread 0. */
static __device__ __forceinline__ void am_block(float &bv, int32_t &bi, float *sv, int32_t *si) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        const int32_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
        am_take(ov, oi, bv, bi);
    }
    if ((threadIdx.x & 31) == 0) {
        sv[threadIdx.x >> 5] = bv;
        si[threadIdx.x >> 5] = bi;
    }
    __syncthreads();
    if (threadIdx.x < 32) {
        bv = -INFINITY;
        bi = INT_MAX;
        if (threadIdx.x < blockDim.x / 32) {
            bv = sv[threadIdx.x];
            bi = si[threadIdx.x];
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            const int32_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
            am_take(ov, oi, bv, bi);
        }
    }
}

template <bool VEC>
static __global__ void __launch_bounds__(ARGMAX_THREADS)
    argmax_kernel(int32_t *__restrict__ ids, float *__restrict__ vals,
                  const float *__restrict__ logits, int32_t V, int64_t ld) {
    tops_pdl_enter();
    __shared__ float sv[ARGMAX_THREADS / 32];
    __shared__ int32_t si[ARGMAX_THREADS / 32];
    float bv = -INFINITY;
    int32_t bi = INT_MAX;
    am_scan<VEC>(logits + (int64_t)blockIdx.x * ld, 0, V, bv, bi);
    am_block(bv, bi, sv, si);
    /* INT_MAX: every entry was NaN; 0, as the CPU's scan that nothing beats */
    if (threadIdx.x == 0) {
        ids[blockIdx.x] = bi == INT_MAX ? 0 : bi;
        if (vals) vals[blockIdx.x] = bi == INT_MAX ? __int_as_float(0x7fc00000) : bv;
    }
}

/* Row blockIdx.y's logits [blockIdx.x chunk, + chunk): the block's best goes into the row's
 * word ws[2 r] by atomicMax (am_key: the same rule, whatever order the blocks come in), and the
 * row's last block (its count ws[2 r + 1]) writes the id and leaves both words zero. */
template <bool VEC>
static __global__ void __launch_bounds__(ARGMAX_SPLIT_THREADS)
    argmax_split_kernel(int32_t *__restrict__ ids, const float *__restrict__ logits, int32_t V,
                        int64_t ld, int32_t chunk, unsigned long long *__restrict__ ws) {
    tops_pdl_enter();
    __shared__ float sv[ARGMAX_SPLIT_THREADS / 32];
    __shared__ int32_t si[ARGMAX_SPLIT_THREADS / 32];
    const int32_t r = blockIdx.y, j0 = blockIdx.x * chunk;
    float bv = -INFINITY;
    int32_t bi = INT_MAX;
    am_scan<VEC>(logits + (int64_t)r * ld, j0, min(V, j0 + chunk), bv, bi);
    am_block(bv, bi, sv, si);
    if (threadIdx.x == 0) am_join(ws, r, am_key(bv, bi), gridDim.x, ids);
}

extern "C" tinfer_status tinfer_op_cuda_argmax(int32_t *ids, const float *logits, int32_t n_out,
                                               int32_t V, int64_t ld, cudaStream_t stream,
                                               tinfer_err *err) {
    return tinfer_op_cuda_argmax_val(ids, NULL, logits, n_out, V, ld, stream, err);
}

extern "C" tinfer_status tinfer_op_cuda_argmax_val(int32_t *ids, float *vals,
                                                   const float *logits, int32_t n_out, int32_t V,
                                                   int64_t ld, cudaStream_t stream,
                                                   tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    TOPS_REQUIRE(err, n_out >= 0 && V >= 1 && ld >= V, "argmax", "bad sizes n_out=%d V=%d ld=%lld",
                 n_out, V, (long long)ld);
    if (n_out == 0) return TINFER_OK;
    TOPS_REQUIRE(err, ids && logits, "argmax", "NULL pointer");
    {
        const bool vec = ld % 4 == 0 && tops_host_aligned(logits, 16);
        TOPS_LAUNCH(err, "argmax_kernel", vec ? argmax_kernel<true> : argmax_kernel<false>, n_out,
                    ARGMAX_THREADS, 0, stream, ids, vals, logits, V, ld);
    }
cleanup:
    return status;
}

extern "C" tinfer_status tinfer_op_cuda_argmax_split(int32_t *ids, const float *logits,
                                                     int32_t n_out, int32_t V, int64_t ld,
                                                     unsigned long long *ws, cudaStream_t stream,
                                                     tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    TOPS_REQUIRE(err, n_out >= 0 && n_out <= 65535 && V >= 1 && ld >= V, "argmax",
                 "bad sizes n_out=%d V=%d ld=%lld", n_out, V, (long long)ld);
    if (n_out == 0) return TINFER_OK;
    TOPS_REQUIRE(err, ids && logits && ws, "argmax", "NULL pointer");
    {
        tinfer_cuda_facts f;
        status = tinfer_cuda_current_facts(&f, err);
        if (status != TINFER_OK) return status;
        /* chunks of a row: enough blocks for ARGMAX_SPLIT_PER_SM an SM, each at least
         * ARGMAX_SPLIT_MIN logits, a multiple of 4 (the float4 loads) */
        int64_t per_row = ((int64_t)ARGMAX_SPLIT_PER_SM * f.n_sm + n_out - 1) / n_out;
        int64_t chunk = (V + per_row - 1) / per_row;
        if (chunk < ARGMAX_SPLIT_MIN) chunk = ARGMAX_SPLIT_MIN;
        chunk = (chunk + 3) / 4 * 4;
        const int32_t n_chunks = (int32_t)((V + chunk - 1) / chunk);
        const bool vec = ld % 4 == 0 && tops_host_aligned(logits, 16);
        TOPS_LAUNCH(err, "argmax_split_kernel",
                    vec ? argmax_split_kernel<true> : argmax_split_kernel<false>,
                    dim3(n_chunks, n_out), ARGMAX_SPLIT_THREADS, 0, stream, ids, logits, V, ld,
                    (int32_t)chunk, ws);
    }
cleanup:
    return status;
}

/* ---- greedy_feed ---- */

static __global__ void greedy_feed_kernel(int32_t *__restrict__ tok, int32_t *__restrict__ pos,
                                          const int32_t *__restrict__ out_rows,
                                          const int32_t *__restrict__ ids,
                                          int32_t *__restrict__ save, int32_t n, bool feed) {
    tops_pdl_enter();
    const int32_t j = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (j >= n) return;
    const int32_t id = ids[j];
    save[j] = id;
    if (feed) {
        tok[out_rows[j]] = id;
        pos[j] += 1;
    }
}

extern "C" tinfer_status tinfer_op_cuda_greedy_feed(int32_t *tok, int32_t *pos,
                                                    const int32_t *out_rows, const int32_t *ids,
                                                    int32_t *save, int32_t n, bool feed,
                                                    cudaStream_t stream, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    TOPS_REQUIRE(err, n >= 0, "greedy_feed", "n %d < 0", n);
    if (n == 0) return TINFER_OK;
    TOPS_REQUIRE(err, ids && save && (!feed || (tok && pos && out_rows)), "greedy_feed",
                 "NULL pointer");
    TOPS_LAUNCH(err, "greedy_feed_kernel", greedy_feed_kernel, (n + 127) / 128, 128, 0, stream,
                tok, pos, out_rows, ids, save, n, feed);
cleanup:
    return status;
}

/* ---- cast ---- */

template <bool VEC>
static __global__ void cast_kernel(uint16_t *__restrict__ out, const float *__restrict__ in,
                                   int64_t count) {
    tops_pdl_enter();
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i0 = 0;
    if (VEC) {
        const float4 *in4 = reinterpret_cast<const float4 *>(in);
        uint2 *o4 = reinterpret_cast<uint2 *>(out);
        for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < count / 4;
             c += stride) {
            const float4 v = in4[c];
            o4[c] = make_uint2(pack_bf16x2(v.x, v.y), pack_bf16x2(v.z, v.w));
        }
        i0 = count / 4 * 4;
    }
    for (int64_t i = i0 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        out[i] = (uint16_t)f32_to_bf16(in[i]);
}

extern "C" tinfer_status tinfer_op_cuda_cast_f32_bf16(uint16_t *out, const float *in, int64_t count,
                                                      cudaStream_t stream, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    TOPS_REQUIRE(err, count >= 0, "cast_f32_bf16", "count %lld < 0", (long long)count);
    if (count == 0) return TINFER_OK;
    TOPS_REQUIRE(err, out && in, "cast_f32_bf16", "NULL pointer");
    {
        const bool vec = tops_host_aligned(in, 16) && tops_host_aligned(out, 8);
        const int threads = 256;
        int64_t blocks = (count / (vec ? 4 : 1) + threads - 1) / threads;
        if (blocks > 4096) blocks = 4096; /* grid-stride beyond: 1M threads cover any SM count */
        if (blocks < 1) blocks = 1;
        TOPS_LAUNCH(err, "cast_kernel", vec ? cast_kernel<true> : cast_kernel<false>,
                    (unsigned)blocks, threads, 0, stream, out, in, count);
    }
cleanup:
    return status;
}

/*
 * decode_step.cu — a whole decode step of a small Llama in ONE persistent kernel: embedding,
 * every layer (RMSNorm + QKV, RoPE + KV write + attention, O + residual, RMSNorm + gate/up +
 * SwiGLU, down + residual), the final RMSNorm and the LM head. The step-by-step path
 * (models/backend_cuda.c) runs the same ops as ~5 kernels a layer, and on a model as small as
 * SmolLM2-135M each kernel costs 5-7 µs of latency chain (launch, first loads from DRAM,
 * reductions, tail) for under 1 µs of weight bytes; here the phases are separated by grid-wide
 * barriers inside one launch instead, and each block asks L2 for the next weight phase's rows
 * before it waits, so after a barrier the rows come from L2 rather than DRAM.
 *
 * Grid: one block of DS_THREADS per SM, launched cooperatively (every block resident, which the
 * barrier needs). Work per phase:
 *   GEMV phases   rows of W over all warps of the grid (row n -> warp n mod warps); a warp reads
 *                 its row once with 16-byte loads (8 BF16 per lane, K % 8 == 0) and takes the dot
 *                 product with each of the step's B token vectors, which every block first stages
 *                 in shared memory as BF16 (the normed x, the attention output or the SwiGLU
 *                 output: the same BF16 inputs the GEMV path feeds its kernels); F32 sums,
 *                 shuffle-reduced; the epilogue of gemm/cuda/bf16_epi.cuh (bias, SwiGLU with
 *                 __expf, residual add into the F32 x, BF16 rounding where the step path rounds).
 *   attention     one (token, query head) item per block: q rotated (rope_cuda.cuh's arithmetic,
 *                 so the cache rows are the bits rope_kv writes), the token's own k / v row
 *                 rotated in shared memory and written to the cache by the item of the group's
 *                 first head, scores of keys 0..p with D/8 lanes per key (16-byte loads), a block
 *                 softmax in the log2 domain, P·V with the same key split, F32 throughout, BF16
 *                 output. Keys are at most TINFER_OP_CUDA_STEP_MAX_KEYS (the scores stay in
 *                 shared memory); longer contexts take the step path.
 * Data written in the kernel and read by other blocks (x, qkv, att, act) is read with ld.cg
 * (L2, never a stale L1 line); the cache rows before p were written by earlier launches.
 * Reference: the step path, op for op (tests/ops_cuda compares both on a random model, and
 * tests/model the whole backend with the CPU).
 */
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "ops/cuda/ops_cuda.h"
#include "ops/cuda/ops_cuda_util.cuh"
#include "ops/cuda/rope_cuda.cuh"

#include <cuda/atomic>
#include <math.h>
#include <string.h>

using namespace tops;

#define DS_THREADS 256
#define DS_WARPS (DS_THREADS / 32)
#define DS_MAX_B TINFER_OP_CUDA_STEP_MAX_B
#define DS_MAX_KEYS TINFER_OP_CUDA_STEP_MAX_KEYS

struct ds_args {
    tinfer_op_cuda_step_model m;
    tinfer_op_cuda_kv kv;
    tinfer_op_cuda_step_bufs b;
    const int32_t *tok, *pos, *seq, *out_rows;
    int32_t n, n_out;
    uint64_t *trace; /* NULL, or the per-barrier timestamps (tinfer_op_cuda_decode_step) */
};

/* ---- device helpers ---- */

/* Grid-wide barrier over all blocks (co-resident: cooperative launch). bar[0] counts arrivals
 * over the whole launch (the launcher zeroes it first); barrier k of the launch (k = 1, 2, ...)
 * waits until it reaches k * gridDim.x. Thread 0 of each block arrives with a release add and
 * spins with acquire loads; the block barriers around it order the other threads' writes before
 * the release and their reads after the acquire (the pattern of CUTLASS's GenericBarrier: no
 * separate fences, no returned atomic, no second word to flip). */
static __device__ __forceinline__ uint64_t global_ns(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* trace (when not NULL): the block's arrival and departure times (ns) at barrier k, at
 * trace[((k - 1) * gridDim.x + block) * 2 + {0, 1}]. */
static __device__ __forceinline__ void grid_sync(uint32_t *bar, uint32_t &k, uint64_t *trace) {
    __syncthreads();
    k++;
    if (threadIdx.x == 0) {
        const uint32_t target = k * gridDim.x;
        uint64_t *tr = trace ? trace + ((int64_t)(k - 1) * gridDim.x + blockIdx.x) * 2 : NULL;
        if (tr) tr[0] = global_ns();
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(bar) : "memory");
        uint32_t v;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(bar) : "memory");
        } while ((int32_t)(v - target) < 0);
        if (tr) tr[1] = global_ns();
    }
    __syncthreads();
}

static __device__ __forceinline__ float ldcg_f32(const float *p) { return __ldcg(p); }
static __device__ __forceinline__ uint16_t ldcg_bf16(const uint16_t *p) {
    return __ldcg((const unsigned short *)p);
}
static __device__ __forceinline__ uint4 ldcg16(const void *p) { return __ldcg((const uint4 *)p); }

/* Ask L2 for bytes [p, p + n) (one prefetch per 128-byte line, spread over the warp's lanes). */
static __device__ __forceinline__ void prefetch_l2(const void *p, int64_t n, int lane) {
    const char *c = (const char *)p;
    for (int64_t o = (int64_t)lane * 128; o < n; o += 32 * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(c + o));
}

/* The rows of an [N, K] BF16 matrix this warp will compute (row n -> warp n mod nw): to L2. */
static __device__ __forceinline__ void prefetch_rows(const uint16_t *W, int32_t N, int32_t K,
                                                     int gw, int nw, int lane) {
    for (int32_t n = gw; n < N; n += nw)
        prefetch_l2(W + (int64_t)n * K, (int64_t)K * 2, lane);
}

/* 16-byte load of weights read once per step: not kept in L1. */
static __device__ __forceinline__ uint4 ld_stream16(const void *p) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

static __device__ __forceinline__ float dot8(const uint4 w, const uint4 x) {
    float s = bf16_to_f32(w.x) * bf16_to_f32(x.x);
    s = fmaf(bf16_to_f32(w.x >> 16), bf16_to_f32(x.x >> 16), s);
    s = fmaf(bf16_to_f32(w.y), bf16_to_f32(x.y), s);
    s = fmaf(bf16_to_f32(w.y >> 16), bf16_to_f32(x.y >> 16), s);
    s = fmaf(bf16_to_f32(w.z), bf16_to_f32(x.z), s);
    s = fmaf(bf16_to_f32(w.z >> 16), bf16_to_f32(x.z >> 16), s);
    s = fmaf(bf16_to_f32(w.w), bf16_to_f32(x.w), s);
    s = fmaf(bf16_to_f32(w.w >> 16), bf16_to_f32(x.w >> 16), s);
    return s;
}

/* xs[j][e] = BF16(rmsnorm(x[src_j]) * w) for j < rows, src_j = map ? map[j] : j: the rmsnorm
 * kernel's arithmetic (ops/cuda/elementwise.cu), every block for itself. One pass over x when a
 * row fits in NORM_PER_THREAD values a thread (E <= 1,024): the values stay in registers between
 * the sum of squares and the scaling, and one block barrier serves every row; else two passes. */
#define NORM_PER_THREAD 4
static __device__ void stage_norm(uint16_t *xs, int32_t ldxs, const float *x, const uint16_t *w,
                                  const int32_t *map, int32_t rows, int32_t E, float eps,
                                  float *red) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    if (E <= NORM_PER_THREAD * DS_THREADS) {
        float xv[DS_MAX_B][NORM_PER_THREAD], wv[NORM_PER_THREAD];
#pragma unroll
        for (int t = 0; t < NORM_PER_THREAD; t++) {
            const int32_t e = tid + t * DS_THREADS;
            wv[t] = e < E ? bf16_to_f32(w[e]) : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < DS_MAX_B; j++) {
            if (j >= rows) break;
            const float *xr = x + (int64_t)(map ? map[j] : j) * E;
            float ss = 0.0f;
#pragma unroll
            for (int t = 0; t < NORM_PER_THREAD; t++) {
                const int32_t e = tid + t * DS_THREADS;
                xv[j][t] = e < E ? ldcg_f32(xr + e) : 0.0f;
                ss += xv[j][t] * xv[j][t];
            }
            ss = warp_sum(ss);
            if (lane == 0) red[warp * DS_MAX_B + j] = ss;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < DS_MAX_B; j++) {
            if (j >= rows) break;
            float t = 0.0f;
            for (int wi = 0; wi < DS_WARPS; wi++)
                t += red[wi * DS_MAX_B + j];
            const float rs = 1.0f / sqrtf(t / (float)E + eps);
#pragma unroll
            for (int u = 0; u < NORM_PER_THREAD; u++) {
                const int32_t e = tid + u * DS_THREADS;
                if (e < E)
                    xs[(int64_t)j * ldxs + e] =
                        (uint16_t)f32_to_bf16(__fmul_rn(xv[j][u], rs) * wv[u]);
            }
        }
        __syncthreads(); /* xs complete; red free again */
        return;
    }
    for (int32_t j = 0; j < rows; j++) {
        const float *xr = x + (int64_t)(map ? map[j] : j) * E;
        float ss = 0.0f;
        for (int32_t e = tid; e < E; e += DS_THREADS) {
            const float v = ldcg_f32(xr + e);
            ss += v * v;
        }
        ss = warp_sum(ss);
        if (lane == 0) red[warp * DS_MAX_B + j] = ss;
    }
    __syncthreads();
    if (tid < rows) {
        float t = 0.0f;
        for (int wi = 0; wi < DS_WARPS; wi++)
            t += red[wi * DS_MAX_B + tid];
        red[DS_WARPS * DS_MAX_B + tid] = 1.0f / sqrtf(t / (float)E + eps);
    }
    __syncthreads();
    for (int32_t j = 0; j < rows; j++) {
        const float *xr = x + (int64_t)(map ? map[j] : j) * E;
        const float rs = red[DS_WARPS * DS_MAX_B + j];
        for (int32_t e = tid; e < E; e += DS_THREADS)
            xs[(int64_t)j * ldxs + e] =
                (uint16_t)f32_to_bf16(__fmul_rn(ldcg_f32(xr + e), rs) * bf16_to_f32(w[e]));
    }
    __syncthreads();
}

/* xs[j][0:K] = src[j][0:K] (BF16 written by other blocks) for j < rows. */
static __device__ void stage_copy(uint16_t *xs, int32_t ldxs, const uint16_t *src, int32_t K,
                                  int32_t rows) {
    const int32_t k8 = K / 8;
    for (int32_t i = threadIdx.x; i < rows * k8; i += DS_THREADS) {
        const int32_t j = i / k8, c = i % k8;
        *(uint4 *)(xs + (int64_t)j * ldxs + 8 * c) = ldcg16(src + (int64_t)j * K + 8 * c);
    }
    __syncthreads();
}

enum ds_out { DS_STORE_BF16, DS_STORE_F32, DS_RESIDUAL_F32 };

/* Y[j][n] (epilogue OUT) = xs[j] · W[n] (+ bias[n]) for j < rows, n < N; the warp's rows two at
 * a time, so each lane has two rows' loads in flight. */
template <int OUT>
static __device__ void gemv_rows(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                 const uint16_t *__restrict__ W, int32_t N, int32_t K,
                                 const uint16_t *bias, void *Y, int64_t ldy, int gw, int nw,
                                 int lane) {
    for (int32_t n0 = gw; n0 < N; n0 += 2 * nw) {
        const int32_t n1 = n0 + nw;
        const bool two = n1 < N;
        float a0[DS_MAX_B], a1[DS_MAX_B];
#pragma unroll
        for (int j = 0; j < DS_MAX_B; j++)
            a0[j] = a1[j] = 0.0f;
        const uint16_t *w0 = W + (int64_t)n0 * K, *w1 = W + (int64_t)(two ? n1 : n0) * K;
        for (int32_t k = lane * 8; k < K; k += 256) {
            const uint4 v0 = ld_stream16(w0 + k);
            const uint4 v1 = ld_stream16(w1 + k);
#pragma unroll
            for (int j = 0; j < DS_MAX_B; j++)
                if (j < rows) {
                    const uint4 xv = *(const uint4 *)(xs + (int64_t)j * ldxs + k);
                    a0[j] += dot8(v0, xv);
                    a1[j] += dot8(v1, xv);
                }
        }
#pragma unroll
        for (int j = 0; j < DS_MAX_B; j++)
            if (j < rows) {
                a0[j] = warp_sum(a0[j]);
                a1[j] = warp_sum(a1[j]);
            }
#pragma unroll
        for (int j = 0; j < DS_MAX_B; j++) {
            if (j >= rows || lane > 1 || (lane == 1 && !two)) continue;
            const int32_t n = lane ? n1 : n0;
            float v = lane ? a1[j] : a0[j];
            if (bias) v += bf16_to_f32(bias[n]);
            if (OUT == DS_STORE_BF16) {
                ((uint16_t *)Y)[j * ldy + n] = (uint16_t)f32_to_bf16(v);
            } else if (OUT == DS_STORE_F32) {
                ((float *)Y)[j * ldy + n] = v;
            } else {
                float *y = (float *)Y + j * ldy + n;
                *y = ldcg_f32(y) + v;
            }
        }
    }
}

/* act[j][f] = BF16(silu(g) * u), g = xs[j] · W[f], u = xs[j] · W[F + f] (W = [gate; up]). */
static __device__ void gemv_swiglu(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                   const uint16_t *__restrict__ W, int32_t F, int32_t K,
                                   uint16_t *act, int gw, int nw, int lane) {
    for (int32_t f = gw; f < F; f += nw) {
        float g[DS_MAX_B], u[DS_MAX_B];
#pragma unroll
        for (int j = 0; j < DS_MAX_B; j++)
            g[j] = u[j] = 0.0f;
        const uint16_t *wg = W + (int64_t)f * K, *wu = W + (int64_t)(F + f) * K;
        for (int32_t k = lane * 8; k < K; k += 256) {
            const uint4 vg = ld_stream16(wg + k);
            const uint4 vu = ld_stream16(wu + k);
#pragma unroll
            for (int j = 0; j < DS_MAX_B; j++)
                if (j < rows) {
                    const uint4 xv = *(const uint4 *)(xs + (int64_t)j * ldxs + k);
                    g[j] += dot8(vg, xv);
                    u[j] += dot8(vu, xv);
                }
        }
#pragma unroll
        for (int j = 0; j < DS_MAX_B; j++)
            if (j < rows) {
                const float gs = warp_sum(g[j]), us = warp_sum(u[j]);
                if (lane == 0)
                    act[(int64_t)j * F + f] =
                        (uint16_t)f32_to_bf16(gs / (1.0f + __expf(-gs)) * us);
            }
    }
}

/* Shared memory of the attention phase (inside the block's dynamic shared memory). */
template <int D> struct ds_att_smem {
    float q[D];                      /* rotated q * scale * log2(e) */
    __align__(16) uint16_t kp[D];    /* the token's own rotated k row */
    __align__(16) uint16_t vp[D];    /* and its v row */
    float sc[DS_MAX_KEYS];           /* scores, then p = 2^(s - max) */
    float red[DS_WARPS][D];          /* P·V partials per warp */
    float stat[DS_WARPS + 2];        /* block max / sum */
};

/* Attention of item it = (token j, query head h), layer l; writes att[j][h*D .. +D). */
template <int D>
static __device__ void attention_item(const ds_args &a, int32_t l, int32_t it, const float *cs,
                                      const float *sn, ds_att_smem<D> &S) {
    constexpr int LPK = D / 8;        /* lanes per key: 8 BF16 each */
    constexpr int KPW = 32 / LPK;     /* keys per warp at a time */
    constexpr int KPB = KPW * DS_WARPS;
    const tinfer_op_cuda_kv &kv = a.kv;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int32_t H = kv.n_head, HKV = kv.n_head_kv, G = H / HKV;
    const int32_t j = it / H, h = it % H, g = h / G;
    const int32_t p = a.pos[j], s = a.seq[j];
    const int64_t QKV = (int64_t)(H + 2 * HKV) * D;
    uint16_t *out = a.b.att + (int64_t)j * H * D + (int64_t)h * D;
    if (p < 0 || p >= kv.n_ctx || p >= DS_MAX_KEYS || s < 0 || s >= kv.n_seq) {
        for (int d = tid; d < D; d += DS_THREADS)
            out[d] = 0x7fc0u; /* invalid metadata: a NaN row, as the step path writes */
        return;
    }
    const uint16_t *qrow = a.b.qkv + (int64_t)j * QKV + (int64_t)h * D;
    const uint16_t *krow = a.b.qkv + (int64_t)j * QKV + (int64_t)(H + g) * D;
    const uint16_t *vrow = krow + (int64_t)HKV * D;
    const int64_t kvd = (int64_t)HKV * D;
    const int64_t base = (((int64_t)s * kv.n_layer + l) * kv.n_ctx) * kvd + (int64_t)g * D;
    const float qscale = rsqrtf((float)D) * 1.4426950408889634f;
    if (tid < D / 2) {
        const float *c = cs + j * (D / 2), *sv = sn + j * (D / 2);
        uint16_t y0, y1;
        rope_pair(bf16_to_f32(ldcg_bf16(qrow + tid)), bf16_to_f32(ldcg_bf16(qrow + tid + D / 2)),
                  c[tid], sv[tid], &y0, &y1);
        S.q[tid] = bf16_to_f32(y0) * qscale;
        S.q[tid + D / 2] = bf16_to_f32(y1) * qscale;
        rope_pair(bf16_to_f32(ldcg_bf16(krow + tid)), bf16_to_f32(ldcg_bf16(krow + tid + D / 2)),
                  c[tid], sv[tid], &y0, &y1);
        S.kp[tid] = y0;
        S.kp[tid + D / 2] = y1;
        S.vp[tid] = ldcg_bf16(vrow + tid);
        S.vp[tid + D / 2] = ldcg_bf16(vrow + tid + D / 2);
        if (h % G == 0) { /* one writer per KV head: the cache row p of this layer */
            const int64_t r = base + (int64_t)p * kvd;
            kv.k[r + tid] = y0;
            kv.k[r + tid + D / 2] = y1;
            kv.v[r + tid] = S.vp[tid];
            kv.v[r + tid + D / 2] = S.vp[tid + D / 2];
        }
    }
    __syncthreads();

    /* scores: key kk = k0 + warp * KPW + lane / LPK; 8 dims per lane at (lane % LPK) * 8 */
    const int sub = lane % LPK, d0 = sub * 8;
    float mx = -INFINITY;
    for (int32_t k0 = 0; k0 <= p; k0 += KPB) {
        const int32_t kk = k0 + warp * KPW + lane / LPK;
        float sc = 0.0f;
        if (kk <= p) {
            const uint16_t *kr = kk == p ? S.kp : kv.k + base + (int64_t)kk * kvd;
            const uint4 kv4 = *(const uint4 *)(kr + d0);
            const float *q = S.q + d0;
            sc = q[0] * bf16_to_f32(kv4.x) + q[1] * bf16_to_f32(kv4.x >> 16) +
                 q[2] * bf16_to_f32(kv4.y) + q[3] * bf16_to_f32(kv4.y >> 16) +
                 q[4] * bf16_to_f32(kv4.z) + q[5] * bf16_to_f32(kv4.z >> 16) +
                 q[6] * bf16_to_f32(kv4.w) + q[7] * bf16_to_f32(kv4.w >> 16);
        }
#pragma unroll
        for (int o = LPK / 2; o > 0; o >>= 1)
            sc += __shfl_xor_sync(0xffffffffu, sc, o);
        if (kk <= p) {
            if (sub == 0) S.sc[kk] = sc;
            mx = fmaxf(mx, sc);
        }
    }
    mx = warp_max(mx);
    if (lane == 0) S.stat[warp] = mx;
    __syncthreads();
    if (tid == 0) {
        float m = S.stat[0];
        for (int wi = 1; wi < DS_WARPS; wi++)
            m = fmaxf(m, S.stat[wi]);
        S.stat[DS_WARPS] = m;
    }
    __syncthreads();
    const float m = S.stat[DS_WARPS];
    float ls = 0.0f;
    for (int32_t kk = tid; kk <= p; kk += DS_THREADS) {
        const float e = exp2f(S.sc[kk] - m);
        S.sc[kk] = e;
        ls += e;
    }
    ls = warp_sum(ls);
    __syncthreads(); /* every p written, every stat[] read */
    if (lane == 0) S.stat[warp] = ls;

    /* P V: the same key split; 8 output dims per lane */
    float acc[8];
#pragma unroll
    for (int t = 0; t < 8; t++)
        acc[t] = 0.0f;
    for (int32_t k0 = 0; k0 <= p; k0 += KPB) {
        const int32_t kk = k0 + warp * KPW + lane / LPK;
        if (kk <= p) {
            const uint16_t *vr = kk == p ? S.vp : kv.v + base + (int64_t)kk * kvd;
            const uint4 v4 = *(const uint4 *)(vr + d0);
            const float pk = S.sc[kk];
            acc[0] += pk * bf16_to_f32(v4.x);
            acc[1] += pk * bf16_to_f32(v4.x >> 16);
            acc[2] += pk * bf16_to_f32(v4.y);
            acc[3] += pk * bf16_to_f32(v4.y >> 16);
            acc[4] += pk * bf16_to_f32(v4.z);
            acc[5] += pk * bf16_to_f32(v4.z >> 16);
            acc[6] += pk * bf16_to_f32(v4.w);
            acc[7] += pk * bf16_to_f32(v4.w >> 16);
        }
    }
#pragma unroll
    for (int t = 0; t < 8; t++)
#pragma unroll
        for (int o = LPK; o < 32; o <<= 1)
            acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], o);
    if (lane < LPK)
#pragma unroll
        for (int t = 0; t < 8; t++)
            S.red[warp][d0 + t] = acc[t];
    __syncthreads();
    if (tid < D) {
        float o = 0.0f, lsum = 0.0f;
        for (int wi = 0; wi < DS_WARPS; wi++) {
            o += S.red[wi][tid];
            lsum += S.stat[wi];
        }
        out[tid] = (uint16_t)f32_to_bf16(o / lsum);
    }
    __syncthreads(); /* S is reused by the block's next item */
}

/* ---- the kernel ---- */

template <int D>
static __global__ void __launch_bounds__(DS_THREADS, 1) decode_step_kernel(ds_args a) {
    extern __shared__ __align__(16) unsigned char ds_smem[];
    const tinfer_op_cuda_step_model &m = a.m;
    const tinfer_op_cuda_kv &kv = a.kv;
    const int32_t B = a.n, E = m.n_embd, F = m.n_ff, V = m.n_vocab;
    const int32_t H = kv.n_head, HKV = kv.n_head_kv, Q = H * D, QKV = (H + 2 * HKV) * D;
    const int32_t KX = max(E, max(Q, F)); /* staged row length (a multiple of 8) */
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int gw = blockIdx.x * DS_WARPS + warp, nw = gridDim.x * DS_WARPS;

    uint16_t *xs = (uint16_t *)ds_smem;                               /* [B][KX] */
    float *cs = (float *)(ds_smem + (size_t)DS_MAX_B * KX * 2);       /* [B][D/2] */
    float *sn = cs + DS_MAX_B * (D / 2);                              /* [B][D/2] */
    float *red = sn + DS_MAX_B * (D / 2);                             /* [(W + 1) * MAX_B] */
    ds_att_smem<D> &S = *(ds_att_smem<D> *)(red + (DS_WARPS + 1) * DS_MAX_B);

    uint32_t nbar = 0; /* barriers passed */
    /* 0. x = embed(tok); the RoPE table of each token's position (every block, own copy) */
    for (int64_t i = (int64_t)blockIdx.x * DS_THREADS + tid; i < (int64_t)B * E;
         i += (int64_t)gridDim.x * DS_THREADS) {
        const int32_t j = (int32_t)(i / E), e = (int32_t)(i % E), t = a.tok[j];
        a.b.x[i] = t >= 0 && t < V ? bf16_to_f32(m.tok_embd[(int64_t)t * E + e])
                                   : __int_as_float(0x7fc00000);
    }
    for (int32_t i = tid; i < B * (D / 2); i += DS_THREADS) {
        const int32_t j = i / (D / 2), p = a.pos[j];
        rope_table(p, m.inv_freq, D / 2, cs + j * (D / 2), sn + j * (D / 2), i % (D / 2), D / 2);
    }
    prefetch_rows(m.layers[0].wqkv, QKV, E, gw, nw, lane);
    grid_sync(a.b.bar, nbar, a.trace);

    for (int32_t l = 0; l < m.n_layer; l++) {
        const tinfer_op_cuda_step_layer &L = m.layers[l];
        /* A. xb = rmsnorm(x) · attn_norm; qkv = xb · Wqkv^T (+ b)          qkv [B, QKV] */
        stage_norm(xs, KX, a.b.x, L.attn_norm, NULL, B, E, m.eps, red);
        gemv_rows<DS_STORE_BF16>(xs, KX, B, L.wqkv, QKV, E, L.bqkv, a.b.qkv, QKV, gw, nw, lane);
        prefetch_rows(L.wo, E, Q, gw, nw, lane);
        grid_sync(a.b.bar, nbar, a.trace);
        /* B. RoPE, the KV row, attention of every (token, head)           att [B, Q] */
        for (int32_t it = blockIdx.x; it < B * H; it += gridDim.x)
            attention_item<D>(a, l, it, cs, sn, S);
        prefetch_rows(L.wgu, 2 * F, E, gw, nw, lane);
        grid_sync(a.b.bar, nbar, a.trace);
        /* C. x += att · Wo^T (+ bo)                                       x [B, E] */
        stage_copy(xs, KX, a.b.att, Q, B);
        gemv_rows<DS_RESIDUAL_F32>(xs, KX, B, L.wo, E, Q, L.bo, a.b.x, E, gw, nw, lane);
        prefetch_rows(L.wdown, E, F, gw, nw, lane);
        grid_sync(a.b.bar, nbar, a.trace);
        /* D. xb = rmsnorm(x) · ffn_norm; act = silu(xb · Wg^T) * (xb · Wu^T)   act [B, F] */
        stage_norm(xs, KX, a.b.x, L.ffn_norm, NULL, B, E, m.eps, red);
        gemv_swiglu(xs, KX, B, L.wgu, F, E, a.b.act, gw, nw, lane);
        if (l + 1 < m.n_layer) prefetch_rows(m.layers[l + 1].wqkv, QKV, E, gw, nw, lane);
        grid_sync(a.b.bar, nbar, a.trace);
        /* E. x += act · Wdown^T                                           x [B, E] */
        stage_copy(xs, KX, a.b.act, F, B);
        gemv_rows<DS_RESIDUAL_F32>(xs, KX, B, L.wdown, E, F, NULL, a.b.x, E, gw, nw, lane);
        grid_sync(a.b.bar, nbar, a.trace);
    }
    /* the rows that want logits: final rmsnorm, LM head                  logits [n_out, V] */
    if (a.n_out > 0) {
        stage_norm(xs, KX, a.b.x, m.out_norm, a.out_rows, a.n_out, E, m.eps, red);
        gemv_rows<DS_STORE_F32>(xs, KX, a.n_out, m.lm_head, V, E, NULL, a.b.logits, V, gw, nw,
                                lane);
    }
    if (a.trace) { /* the block's end, after its last barrier's slot */
        __syncthreads();
        if (tid == 0) a.trace[((int64_t)nbar * gridDim.x + blockIdx.x) * 2] = global_ns();
    }
}

/* ---- host ---- */

static size_t ds_smem_bytes(const tinfer_op_cuda_step_model *m, const tinfer_op_cuda_kv *kv) {
    const int64_t D = kv->head_dim, Q = (int64_t)kv->n_head * D;
    int64_t KX = m->n_embd;
    if (Q > KX) KX = Q;
    if (m->n_ff > KX) KX = m->n_ff;
    const size_t att = D == 64 ? sizeof(ds_att_smem<64>) : sizeof(ds_att_smem<128>);
    return (size_t)DS_MAX_B * (size_t)KX * 2 + 2 * (size_t)DS_MAX_B * (size_t)(D / 2) * 4 +
           (size_t)(DS_WARPS + 1) * DS_MAX_B * 4 + att + 16;
}

extern "C" bool tinfer_op_cuda_step_ok(const tinfer_op_cuda_step_model *m,
                                       const tinfer_op_cuda_kv *kv, int32_t n, int32_t max_len) {
    if (!m || !kv || n < 1 || n > DS_MAX_B || max_len > DS_MAX_KEYS) return false;
    if (kv->head_dim != 64 && kv->head_dim != 128) return false;
    const int64_t Q = (int64_t)kv->n_head * kv->head_dim;
    if (m->n_embd % 8 || m->n_ff % 8 || Q % 8) return false;
    if (ds_smem_bytes(m, kv) > TINFER_OP_CUDA_STEP_MAX_SMEM) return false;
    return true;
}

template <int D>
static tinfer_status ds_launch(const ds_args &a, size_t smem, cudaStream_t stream,
                               tinfer_err *err) {
    static int attr_done[2]; /* per D: the shared-memory opt-in, once per process */
    cudaError_t e = cudaSuccess;
    if (!attr_done[D == 128]) {
        e = cudaFuncSetAttribute(decode_step_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 TINFER_OP_CUDA_STEP_MAX_SMEM);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return tinfer_err_set(err, TINFER_ERR_CUDA, "decode_step: shared memory opt-in: %s",
                                  cudaGetErrorString(e));
        }
        attr_done[D == 128] = 1;
    }
    tinfer_cuda_facts f;
    tinfer_status rc = tinfer_cuda_current_facts(&f, err);
    if (rc != TINFER_OK) return rc;
    e = cudaMemsetAsync(a.b.bar, 0, sizeof(uint32_t), stream); /* the barrier's count */
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tinfer_err_set(err, TINFER_ERR_CUDA, "decode_step: resetting the barrier: %s",
                              cudaGetErrorString(e));
    }
    void *args[] = {(void *)&a};
    e = cudaLaunchCooperativeKernel((const void *)decode_step_kernel<D>, dim3(f.n_sm),
                                    dim3(DS_THREADS), args, smem, stream);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tinfer_err_set(err, TINFER_ERR_CUDA, "kernel decode_step failed at %s:%d: %s",
                              __FILE__, __LINE__, cudaGetErrorString(e));
    }
    return TINFER_OK;
}

extern "C" tinfer_status tinfer_op_cuda_decode_step(const tinfer_op_cuda_step_model *m,
                                                    const tinfer_op_cuda_kv *kv,
                                                    const tinfer_op_cuda_step_bufs *b,
                                                    const int32_t *tok, const int32_t *pos,
                                                    const int32_t *seq, const int32_t *out_rows,
                                                    int32_t n, int32_t n_out, int32_t max_len,
                                                    uint64_t *trace, cudaStream_t stream,
                                                    tinfer_err *err) {
    TOPS_REQUIRE(err, m && kv && b && tok && pos && seq && (n_out == 0 || out_rows),
                 "decode_step", "NULL argument");
    TOPS_REQUIRE(err, n_out >= 0 && n_out <= n, "decode_step", "n_out %d outside [0, %d]", n_out,
                 n);
    TOPS_REQUIRE(err, tinfer_op_cuda_step_ok(m, kv, n, max_len), "decode_step",
                 "shape not supported (n %d, max_len %d, head_dim %d): check "
                 "tinfer_op_cuda_step_ok first",
                 n, max_len, kv->head_dim);
    TOPS_REQUIRE(err, kv->n_head % kv->n_head_kv == 0, "decode_step", "n_head %d %% n_head_kv %d",
                 kv->n_head, kv->n_head_kv);
    ds_args a;
    memset(&a, 0, sizeof a);
    a.m = *m;
    a.kv = *kv;
    a.b = *b;
    a.tok = tok;
    a.pos = pos;
    a.seq = seq;
    a.out_rows = out_rows;
    a.n = n;
    a.n_out = n_out;
    a.trace = trace;
    const size_t smem = ds_smem_bytes(m, kv);
    return kv->head_dim == 64 ? ds_launch<64>(a, smem, stream, err)
                              : ds_launch<128>(a, smem, stream, err);
}

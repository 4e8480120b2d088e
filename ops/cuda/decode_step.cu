/*
 * decode_step.cu — a whole decode step of a small Llama in ONE persistent kernel: embedding,
 * every layer (RMSNorm + QKV, RoPE + KV write + attention, O + residual, RMSNorm + gate/up +
 * SwiGLU, down + residual), the final RMSNorm and the LM head. The step-by-step path
 * (models/backend_cuda.c) runs the same ops as ~5 kernels a layer, and on a model as small as
 * SmolLM2-135M each kernel costs 5-7 µs of latency chain (launch, first loads from DRAM,
 * reductions, tail) for under 1 µs of weight bytes; here the phases are separated by grid-wide
 * barriers inside one launch instead, and no phase waits for DRAM: the weights arrive ahead of
 * time through shared memory.
 *
 * Grid: one block of DS_THREADS per SM, launched cooperatively (every block resident, which the
 * barrier needs). Block b of G owns output rows [N b / G, N (b + 1) / G) of every matrix.
 *   weight ring   the block's slices of the weight matrices, in the order the step uses them
 *                 (layer 0's QKV, O, gate/up, down, layer 1's ..., then the LM head in tiles),
 *                 are "tiles" streamed by the copy engine (cp.async.bulk, contiguous rows) into
 *                 a ring of S stages of shared memory, each with an mbarrier that counts its
 *                 bytes; tile t + S is issued as soon as tile t has been used, so the DRAM
 *                 stream runs about a layer ahead of the compute and overlaps the barriers.
 *   GEMV phases   the block's rows from shared memory, one row per warp at a time, 8 BF16 per
 *                 lane per 16-byte read, dotted with each of the step's B token vectors, which
 *                 every block first stages in shared memory as BF16 (the normed x, the attention
 *                 output or the SwiGLU output: the same BF16 inputs the GEMV path feeds its
 *                 kernels); F32 sums, shuffle-reduced; the epilogue of gemm/cuda/bf16_epi.cuh
 *                 (bias, SwiGLU with __expf, residual add into the F32 x, BF16 rounding where
 *                 the step path rounds).
 *   attention     one (token, query head) item per block: q rotated (rope_cuda.cuh's arithmetic,
 *                 so the cache rows are the bits rope_kv writes), the token's own k / v row
 *                 rotated in shared memory and written to the cache by the item of the group's
 *                 first head; the cached keys and values go out as one round of loads (8 key
 *                 slots per lane group, D/8 lanes per key, 16 bytes each) before the step's own
 *                 row is even read, and were asked of L2 during the QKV phase; an online softmax
 *                 per lane group in the log2 domain, merged across lane groups by shuffles and
 *                 across warps in shared memory; F32 throughout, BF16 output. Keys are at most
 *                 TINFER_OP_CUDA_STEP_MAX_KEYS; longer contexts take the step path.
 * Data written in the kernel and read by other blocks (x, qkv, att, act) is read with ld.cg
 * (L2, never a stale L1 line); the cache rows before p were written by earlier launches.
 * Reference: the step path, op for op (tests/ops_cuda compares both on a random model, and
 * tests/model the whole backend with the CPU).
 */
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/mbar.cuh"
#include "ops/cuda/ops_cuda.h"
#include "ops/cuda/ops_cuda_util.cuh"
#include "ops/cuda/rope_cuda.cuh"

#include <algorithm>
#include <math.h>
#include <string.h>

using namespace tops;

#define DS_THREADS 256
#define DS_WARPS (DS_THREADS / 32)
#define DS_MAX_B TINFER_OP_CUDA_STEP_MAX_B
#define DS_MAX_KEYS TINFER_OP_CUDA_STEP_MAX_KEYS
#define DS_MAX_STAGES 6 /* weight ring stages at most */
#define DS_ROUND 8      /* key slots a lane group loads at once in attention */

struct ds_args {
    tinfer_op_cuda_step_model m;
    tinfer_op_cuda_kv kv;
    tinfer_op_cuda_step_bufs b;
    const int32_t *tok, *pos, *seq, *out_rows;
    int32_t n, n_out;
    uint64_t *trace;      /* NULL, or the per-barrier timestamps (tinfer_op_cuda_decode_step) */
    uint32_t stage_bytes; /* one ring stage: the largest tile a block gets (ds_plan) */
    int32_t n_stages;     /* S */
    int32_t lm_rows;      /* LM-head rows a tile */
};

/* ---- device helpers ---- */

static __device__ __forceinline__ uint64_t global_ns(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __device__ __forceinline__ float ldcg_f32(const float *p) { return __ldcg(p); }
static __device__ __forceinline__ uint16_t ldcg_bf16(const uint16_t *p) {
    return __ldcg((const unsigned short *)p);
}
static __device__ __forceinline__ uint4 ldcg16(const void *p) { return __ldcg((const uint4 *)p); }

/* First of block b's rows when N rows are shared by G blocks. */
static __device__ __forceinline__ int32_t part(int32_t N, int32_t b, int32_t G) {
    return (int32_t)((int64_t)N * b / G);
}

/* ---- the weight ring ---- */

struct ds_ring {
    unsigned char *st; /* S stages of `bytes` each */
    uint64_t *full;    /* [S]: a stage's bytes have landed */
    int32_t S, n_tiles;
    uint32_t bytes;
};

/* This block's slice of weight tile t: for t < 4 L, layer t / 4's QKV, O, gate/up or down rows
 * (the block's share of the output rows, whole rows of K); then the block's share of the
 * vocabulary, lm_rows LM-head rows a tile. At most two contiguous pieces (gate and up rows). */
struct ds_tile {
    const uint16_t *src[2];
    uint32_t bytes[2];
};
static __device__ ds_tile tile_of(const ds_args &a, int32_t t) {
    const int32_t G = gridDim.x, b = blockIdx.x, E = a.m.n_embd, F = a.m.n_ff;
    const int32_t Q = a.kv.n_head * a.kv.head_dim, QKV = Q + 2 * a.kv.n_head_kv * a.kv.head_dim;
    ds_tile w = {{NULL, NULL}, {0, 0}};
    if (t < 4 * a.m.n_layer) {
        const tinfer_op_cuda_step_layer &L = a.m.layers[t / 4];
        int32_t n0, n1;
        switch (t % 4) {
        case 0: /* QKV rows of E */
            n0 = part(QKV, b, G), n1 = part(QKV, b + 1, G);
            w.src[0] = L.wqkv + (int64_t)n0 * E, w.bytes[0] = (uint32_t)(n1 - n0) * E * 2;
            break;
        case 1: /* O rows of Q */
            n0 = part(E, b, G), n1 = part(E, b + 1, G);
            w.src[0] = L.wo + (int64_t)n0 * Q, w.bytes[0] = (uint32_t)(n1 - n0) * Q * 2;
            break;
        case 2: /* gate rows f0..f1, then the same up rows */
            n0 = part(F, b, G), n1 = part(F, b + 1, G);
            w.src[0] = L.wgu + (int64_t)n0 * E, w.bytes[0] = (uint32_t)(n1 - n0) * E * 2;
            w.src[1] = L.wgu + (int64_t)(F + n0) * E, w.bytes[1] = w.bytes[0];
            break;
        default: /* down rows of F */
            n0 = part(E, b, G), n1 = part(E, b + 1, G);
            w.src[0] = L.wdown + (int64_t)n0 * F, w.bytes[0] = (uint32_t)(n1 - n0) * F * 2;
        }
    } else {
        const int32_t v1 = part(a.m.n_vocab, b + 1, G);
        const int32_t r0 = part(a.m.n_vocab, b, G) + (t - 4 * a.m.n_layer) * a.lm_rows;
        w.src[0] = a.m.lm_head + (int64_t)r0 * E;
        w.bytes[0] = (uint32_t)min(a.lm_rows, v1 - r0) * E * 2;
    }
    return w;
}

/* Thread 0: tile t (if there is one) into stage t mod S. The stage's previous tile, t - S, has
 * been used by every thread of the block (the caller's block barrier says so). */
static __device__ void ring_issue(const ds_args &a, const ds_ring &R, int32_t t) {
    if (t >= R.n_tiles) return;
    const ds_tile w = tile_of(a, t);
    uint64_t *bar = R.full + t % R.S;
    unsigned char *dst = R.st + (size_t)(t % R.S) * R.bytes;
    mbar_expect_tx(bar, w.bytes[0] + w.bytes[1]); /* 0 bytes: the phase completes at once */
    if (w.bytes[0]) bulk_g2s(dst, w.src[0], w.bytes[0], bar);
    if (w.bytes[1]) bulk_g2s(dst + w.bytes[0], w.src[1], w.bytes[1], bar);
}

/* Every thread: wait for tile t; its rows in shared memory. */
static __device__ __forceinline__ const uint16_t *ring_wait(const ds_ring &R, int32_t t) {
    mbar_wait(R.full + t % R.S, (uint32_t)(t / R.S) & 1u);
    return (const uint16_t *)(R.st + (size_t)(t % R.S) * R.bytes);
}

/* Grid-wide barrier over all blocks (co-resident: cooperative launch). bar[0] counts arrivals
 * over the whole launch (the launcher zeroes it first); barrier k of the launch (k = 1, 2, ...)
 * waits until it reaches k * gridDim.x. Thread 0 of each block arrives with a release add and
 * spins with acquire loads; the block barriers around it order the other threads' writes before
 * the release and their reads after the acquire (the pattern of CUTLASS's GenericBarrier: no
 * separate fences, no returned atomic, no second word to flip). Between arriving and spinning,
 * thread 0 issues weight tile `refill` (-1: none) into the stage the phase has just finished
 * with, so the copy's issue costs the barrier nothing.
 * trace (when not NULL): the block's arrival and departure times (ns) at barrier k, at
 * trace[((k - 1) * gridDim.x + block) * 2 + {0, 1}]. */
static __device__ __forceinline__ void grid_sync(const ds_args &a, const ds_ring &R,
                                                 int32_t refill, uint32_t &k) {
    __syncthreads();
    k++;
    if (threadIdx.x == 0) {
        const uint32_t target = k * gridDim.x;
        uint64_t *tr = a.trace ? a.trace + ((int64_t)(k - 1) * gridDim.x + blockIdx.x) * 2 : NULL;
        if (tr) tr[0] = global_ns();
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(a.b.bar) : "memory");
        if (refill >= 0) ring_issue(a, R, refill);
        uint32_t v;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a.b.bar) : "memory");
        } while ((int32_t)(v - target) < 0);
        if (tr) tr[1] = global_ns();
    }
    __syncthreads();
}

/* Ask L2 for the cache rows 0..p-1 of the KV head of each attention item this block will take
 * in layer l (the next phase): they were written by earlier steps and may have left L2 since. */
static __device__ void prefetch_kv(const ds_args &a, int32_t l) {
    const tinfer_op_cuda_kv &kv = a.kv;
    const int32_t H = kv.n_head, G = H / kv.n_head_kv, D = kv.head_dim;
    const int64_t kvd = (int64_t)kv.n_head_kv * D;
    for (int32_t it = blockIdx.x; it < a.n * H; it += gridDim.x) {
        const int32_t j = it / H, h = it % H, p = a.pos[j], s = a.seq[j];
        if (p < 0 || p > kv.n_ctx || s < 0 || s >= kv.n_seq || p > DS_MAX_KEYS) continue;
        const int64_t base = (((int64_t)s * kv.n_layer + l) * kv.n_ctx) * kvd + (int64_t)(h / G) * D;
        const int32_t lines = D * 2 / 128; /* 128-byte lines a row */
        for (int32_t i = threadIdx.x; i < p * lines; i += DS_THREADS) {
            const int64_t o = base + (int64_t)(i / lines) * kvd + (i % lines) * 64;
            asm volatile("prefetch.global.L2 [%0];" ::"l"(kv.k + o));
            asm volatile("prefetch.global.L2 [%0];" ::"l"(kv.v + o));
        }
    }
}

/* 8 BF16 (one 16-byte word) to F32. */
static __device__ __forceinline__ void bf16x8(const uint4 v, float f[8]) {
    f[0] = __uint_as_float(v.x << 16), f[1] = __uint_as_float(v.x & 0xffff0000u);
    f[2] = __uint_as_float(v.y << 16), f[3] = __uint_as_float(v.y & 0xffff0000u);
    f[4] = __uint_as_float(v.z << 16), f[5] = __uint_as_float(v.z & 0xffff0000u);
    f[6] = __uint_as_float(v.w << 16), f[7] = __uint_as_float(v.w & 0xffff0000u);
}

static __device__ __forceinline__ float dot8(const float w[8], const uint4 x) {
    float f[8];
    bf16x8(x, f);
    float s = w[0] * f[0];
#pragma unroll
    for (int i = 1; i < 8; i++)
        s = fmaf(w[i], f[i], s);
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

/* Y[j][n0 + r] (epilogue OUT) = xs[j] · Wt[r] (+ bias[n0 + r]) for j < rows, r < R: the block's
 * R rows of K in shared memory (a ring stage), one row per warp at a time. */
template <int OUT>
static __device__ void gemv_tile(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                 const uint16_t *Wt, int32_t R, int32_t K, int32_t n0,
                                 const uint16_t *bias, void *Y, int64_t ldy, int warp, int lane) {
    for (int32_t r = warp; r < R; r += DS_WARPS) {
        float acc[DS_MAX_B];
#pragma unroll
        for (int j = 0; j < DS_MAX_B; j++)
            acc[j] = 0.0f;
        const uint16_t *w = Wt + (int64_t)r * K;
        for (int32_t k = lane * 8; k < K; k += 256) {
            float wf[8];
            bf16x8(*(const uint4 *)(w + k), wf);
#pragma unroll
            for (int j = 0; j < DS_MAX_B; j++)
                if (j < rows) acc[j] += dot8(wf, *(const uint4 *)(xs + (int64_t)j * ldxs + k));
        }
        const int32_t n = n0 + r;
        const float bv = bias ? bf16_to_f32(bias[n]) : 0.0f;
#pragma unroll
        for (int j = 0; j < DS_MAX_B; j++) {
            if (j >= rows) break;
            const float v = warp_sum(acc[j]) + bv;
            if (lane != j) continue; /* lane j stores token j's value */
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

/* act[j][f0 + f] = BF16(silu(g) * u), g = xs[j] · Wt[f], u = xs[j] · Wt[Rf + f], f < Rf: the
 * block's gate rows, then its up rows, in shared memory. */
static __device__ void swiglu_tile(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                   const uint16_t *Wt, int32_t Rf, int32_t K, int32_t f0,
                                   uint16_t *act, int32_t F, int warp, int lane) {
    for (int32_t f = warp; f < Rf; f += DS_WARPS) {
        float g[DS_MAX_B], u[DS_MAX_B];
#pragma unroll
        for (int j = 0; j < DS_MAX_B; j++)
            g[j] = u[j] = 0.0f;
        const uint16_t *wg = Wt + (int64_t)f * K, *wu = Wt + (int64_t)(Rf + f) * K;
        for (int32_t k = lane * 8; k < K; k += 256) {
            float gf[8], uf[8];
            bf16x8(*(const uint4 *)(wg + k), gf);
            bf16x8(*(const uint4 *)(wu + k), uf);
#pragma unroll
            for (int j = 0; j < DS_MAX_B; j++)
                if (j < rows) {
                    const uint4 xv = *(const uint4 *)(xs + (int64_t)j * ldxs + k);
                    g[j] += dot8(gf, xv);
                    u[j] += dot8(uf, xv);
                }
        }
#pragma unroll
        for (int j = 0; j < DS_MAX_B; j++) {
            if (j >= rows) break;
            const float gs = warp_sum(g[j]), us = warp_sum(u[j]);
            if (lane == j)
                act[(int64_t)j * F + f0 + f] = (uint16_t)f32_to_bf16(gs / (1.0f + __expf(-gs)) * us);
        }
    }
}

/* Shared memory of the attention phase (inside the block's dynamic shared memory). */
template <int D> struct ds_att_smem {
    float q[D];                   /* rotated q * scale * log2(e) */
    __align__(16) uint16_t kp[D]; /* the token's own rotated k row */
    __align__(16) uint16_t vp[D]; /* and its v row */
    float wm[DS_WARPS], wl[DS_WARPS]; /* each warp's running max and sum */
    float wacc[DS_WARPS][D];          /* and its unnormalised P·V */
};

/* Attention of item it = (token j, query head h), layer l; writes att[j][h*D .. +D). Lane group
 * (D/8 lanes, 8 dims each) kw of the block takes keys kw, kw + KPB, kw + 2 KPB, ..., DS_ROUND of
 * them a round, with its own online softmax (running max m, sum ls, acc). */
template <int D>
static __device__ void attention_item(const ds_args &a, int32_t l, int32_t it, const float *cs,
                                      const float *sn, ds_att_smem<D> &S) {
    constexpr int LPK = D / 8;        /* lanes per key: 8 BF16 each */
    constexpr int KPW = 32 / LPK;     /* keys per warp at a time */
    constexpr int KPB = KPW * DS_WARPS;
    constexpr int U = DS_ROUND;
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
    const int sub = lane % LPK, d0 = sub * 8, kw = warp * KPW + lane / LPK;

    /* the first round of cached keys and values (rows < p): they do not depend on this step,
     * so their loads are in flight before the step's own row is read */
    uint4 kr[U], vr[U];
    auto load = [&](int32_t r0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int32_t kk = r0 + u * KPB + kw;
            if (kk < p) {
                kr[u] = *(const uint4 *)(kv.k + base + (int64_t)kk * kvd + d0);
                vr[u] = *(const uint4 *)(kv.v + base + (int64_t)kk * kvd + d0);
            }
        }
    };
    load(0);

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
    float qf[8];
#pragma unroll
    for (int t = 0; t < 8; t++)
        qf[t] = S.q[d0 + t];

    float m = -INFINITY, ls = 0.0f, acc[8];
#pragma unroll
    for (int t = 0; t < 8; t++)
        acc[t] = 0.0f;
    for (int32_t r0 = 0; r0 <= p; r0 += U * KPB) { /* the same trip count in every lane */
        if (r0 > 0) load(r0);
        float sc[U], mr = m;
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int32_t kk = r0 + u * KPB + kw;
            if (kk == p) {
                kr[u] = *(const uint4 *)(S.kp + d0);
                vr[u] = *(const uint4 *)(S.vp + d0);
            }
            float v = kk <= p ? dot8(qf, kr[u]) : 0.0f;
#pragma unroll
            for (int o = LPK / 2; o > 0; o >>= 1)
                v += __shfl_xor_sync(0xffffffffu, v, o);
            sc[u] = kk <= p ? v : -INFINITY;
            mr = fmaxf(mr, sc[u]); /* fmaxf skips a NaN score; its exp2 below carries it */
        }
        const float f = m == -INFINITY ? 0.0f : exp2f(m - mr);
        ls *= f;
#pragma unroll
        for (int t = 0; t < 8; t++)
            acc[t] *= f;
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (r0 + u * KPB + kw > p) continue;
            const float e = exp2f(sc[u] - mr);
            float vf[8];
            bf16x8(vr[u], vf);
            ls += e;
#pragma unroll
            for (int t = 0; t < 8; t++)
                acc[t] = fmaf(e, vf[t], acc[t]);
        }
        m = mr;
    }
    /* merge the warp's lane groups (same dims, other keys), then the warps */
#pragma unroll
    for (int o = LPK; o < 32; o <<= 1) {
        const float mo = __shfl_xor_sync(0xffffffffu, m, o);
        const float lo = __shfl_xor_sync(0xffffffffu, ls, o);
        const float mn = fmaxf(m, mo);
        const float fa = m == -INFINITY ? 0.0f : exp2f(m - mn);
        const float fb = mo == -INFINITY ? 0.0f : exp2f(mo - mn);
        ls = ls * fa + lo * fb;
#pragma unroll
        for (int t = 0; t < 8; t++) {
            const float ao = __shfl_xor_sync(0xffffffffu, acc[t], o);
            acc[t] = acc[t] * fa + ao * fb;
        }
        m = mn;
    }
    if (lane < LPK) {
#pragma unroll
        for (int t = 0; t < 8; t++)
            S.wacc[warp][d0 + t] = acc[t];
        if (lane == 0) S.wm[warp] = m, S.wl[warp] = ls;
    }
    __syncthreads();
    if (tid < D) {
        float M = -INFINITY;
        for (int wi = 0; wi < DS_WARPS; wi++)
            M = fmaxf(M, S.wm[wi]);
        float o = 0.0f, lsum = 0.0f;
        for (int wi = 0; wi < DS_WARPS; wi++) {
            const float f = S.wm[wi] == -INFINITY ? 0.0f : exp2f(S.wm[wi] - M);
            o += S.wacc[wi][tid] * f;
            lsum += S.wl[wi] * f;
        }
        out[tid] = (uint16_t)f32_to_bf16(o / lsum);
    }
    __syncthreads(); /* S is reused by the block's next item */
}

/* ---- the kernel ---- */

template <int D>
static __global__ void __launch_bounds__(DS_THREADS, 1) decode_step_kernel(ds_args a) {
    extern __shared__ __align__(128) unsigned char ds_smem[];
    const tinfer_op_cuda_step_model &m = a.m;
    const tinfer_op_cuda_kv &kv = a.kv;
    const int32_t B = a.n, E = m.n_embd, F = m.n_ff, V = m.n_vocab;
    const int32_t H = kv.n_head, HKV = kv.n_head_kv, Q = H * D, QKV = (H + 2 * HKV) * D;
    const int32_t KX = max(E, max(Q, F)); /* staged row length (a multiple of 8) */
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int32_t G = gridDim.x, b = blockIdx.x;
    /* this block's rows of each matrix */
    const int32_t q0 = part(QKV, b, G), q1 = part(QKV, b + 1, G);
    const int32_t e0 = part(E, b, G), e1 = part(E, b + 1, G);
    const int32_t f0 = part(F, b, G), f1 = part(F, b + 1, G);
    const int32_t v0 = part(V, b, G), v1 = part(V, b + 1, G);

    ds_ring R;
    R.st = ds_smem;
    R.S = a.n_stages;
    R.bytes = a.stage_bytes;
    R.full = (uint64_t *)(ds_smem + (size_t)R.S * R.bytes);
    R.n_tiles = 4 * m.n_layer + (a.n_out > 0 ? (v1 - v0 + a.lm_rows - 1) / a.lm_rows : 0);
    uint16_t *xs = (uint16_t *)(R.full + DS_MAX_STAGES);                   /* [B][KX] */
    float *cs = (float *)(xs + (size_t)DS_MAX_B * KX);                     /* [B][D/2] */
    float *sn = cs + DS_MAX_B * (D / 2);                                   /* [B][D/2] */
    float *red = sn + DS_MAX_B * (D / 2);                                  /* [(W + 1) * MAX_B] */
    ds_att_smem<D> &S = *(ds_att_smem<D> *)(red + (DS_WARPS + 1) * DS_MAX_B);

    /* the ring: its first S tiles go out before anything else */
    if (tid == 0) {
        for (int32_t s = 0; s < R.S; s++)
            mbar_init(&R.full[s], 1);
        mbar_init_fence();
        for (int32_t t = 0; t < R.S; t++)
            ring_issue(a, R, t);
    }
    uint32_t nbar = 0; /* barriers passed */
    /* 0. x = embed(tok); the RoPE table of each token's position (every block, own copy) */
    for (int64_t i = (int64_t)b * DS_THREADS + tid; i < (int64_t)B * E;
         i += (int64_t)G * DS_THREADS) {
        const int32_t j = (int32_t)(i / E), e = (int32_t)(i % E), t = a.tok[j];
        a.b.x[i] = t >= 0 && t < V ? bf16_to_f32(m.tok_embd[(int64_t)t * E + e])
                                   : __int_as_float(0x7fc00000);
    }
    for (int32_t i = tid; i < B * (D / 2); i += DS_THREADS) {
        const int32_t j = i / (D / 2), p = a.pos[j];
        rope_table(p, m.inv_freq, D / 2, cs + j * (D / 2), sn + j * (D / 2), i % (D / 2), D / 2);
    }
    grid_sync(a, R, -1, nbar);

    for (int32_t l = 0; l < m.n_layer; l++) {
        const tinfer_op_cuda_step_layer &L = m.layers[l];
        const int32_t t = 4 * l; /* this layer's QKV tile; O, gate/up and down follow */
        /* A. xb = rmsnorm(x) · attn_norm; qkv = xb · Wqkv^T (+ b)          qkv [B, QKV] */
        stage_norm(xs, KX, a.b.x, L.attn_norm, NULL, B, E, m.eps, red);
        const uint16_t *W = ring_wait(R, t);
        gemv_tile<DS_STORE_BF16>(xs, KX, B, W, q1 - q0, E, q0, L.bqkv, a.b.qkv, QKV, warp, lane);
        prefetch_kv(a, l);
        grid_sync(a, R, t + R.S, nbar);
        /* B. RoPE, the KV row, attention of every (token, head)           att [B, Q] */
        for (int32_t it = b; it < B * H; it += G)
            attention_item<D>(a, l, it, cs, sn, S);
        grid_sync(a, R, -1, nbar);
        /* C. x += att · Wo^T (+ bo)                                       x [B, E] */
        stage_copy(xs, KX, a.b.att, Q, B);
        W = ring_wait(R, t + 1);
        gemv_tile<DS_RESIDUAL_F32>(xs, KX, B, W, e1 - e0, Q, e0, L.bo, a.b.x, E, warp, lane);
        grid_sync(a, R, t + 1 + R.S, nbar);
        /* D. xb = rmsnorm(x) · ffn_norm; act = silu(xb · Wg^T) * (xb · Wu^T)   act [B, F] */
        stage_norm(xs, KX, a.b.x, L.ffn_norm, NULL, B, E, m.eps, red);
        W = ring_wait(R, t + 2);
        swiglu_tile(xs, KX, B, W, f1 - f0, E, f0, a.b.act, F, warp, lane);
        grid_sync(a, R, t + 2 + R.S, nbar);
        /* E. x += act · Wdown^T                                           x [B, E] */
        stage_copy(xs, KX, a.b.act, F, B);
        W = ring_wait(R, t + 3);
        gemv_tile<DS_RESIDUAL_F32>(xs, KX, B, W, e1 - e0, F, e0, NULL, a.b.x, E, warp, lane);
        grid_sync(a, R, t + 3 + R.S, nbar);
    }
    /* the rows that want logits: final rmsnorm, LM head                  logits [n_out, V] */
    if (a.n_out > 0) {
        stage_norm(xs, KX, a.b.x, m.out_norm, a.out_rows, a.n_out, E, m.eps, red);
        for (int32_t t = 4 * m.n_layer; t < R.n_tiles; t++) {
            const int32_t r0 = v0 + (t - 4 * m.n_layer) * a.lm_rows;
            const uint16_t *W = ring_wait(R, t);
            gemv_tile<DS_STORE_F32>(xs, KX, a.n_out, W, min(a.lm_rows, v1 - r0), E, r0, NULL,
                                    a.b.logits, V, warp, lane);
            __syncthreads(); /* the stage is free */
            if (tid == 0) ring_issue(a, R, t + R.S);
        }
    }
    if (a.trace) { /* the block's end, after its last barrier's slot */
        __syncthreads();
        if (tid == 0) a.trace[((int64_t)nbar * gridDim.x + blockIdx.x) * 2] = global_ns();
    }
}

/* ---- host ---- */

/* The shared-memory plan for a grid of G blocks: the ring stage (the largest tile any block
 * gets), how many stages fit beside the rest, the LM-head rows a tile. */
struct ds_plan {
    uint32_t stage_bytes;
    int32_t n_stages, lm_rows;
    size_t smem;
};

static bool ds_plan_for(const tinfer_op_cuda_step_model *m, const tinfer_op_cuda_kv *kv,
                        int32_t G, ds_plan *P) {
    const int64_t D = kv->head_dim, Q = (int64_t)kv->n_head * D;
    const int64_t QKV = Q + 2 * (int64_t)kv->n_head_kv * D, E = m->n_embd, F = m->n_ff;
    if (G < 1 || E < 8) return false;
    auto most = [G](int64_t N) { return (N + G - 1) / G; }; /* rows a block gets at most */
    int64_t tile = most(QKV) * E;
    tile = std::max(tile, most(E) * Q);
    tile = std::max(tile, 2 * most(F) * E);
    tile = std::max(tile, most(E) * F);
    tile = (tile * 2 + 127) / 128 * 128; /* bytes, stages 128-byte aligned */
    int64_t KX = std::max(E, std::max(Q, F));
    const size_t att = D == 64 ? sizeof(ds_att_smem<64>) : sizeof(ds_att_smem<128>);
    const size_t rest = DS_MAX_STAGES * 8 + (size_t)DS_MAX_B * (size_t)KX * 2 +
                        2 * (size_t)DS_MAX_B * (size_t)(D / 2) * 4 +
                        (size_t)(DS_WARPS + 1) * DS_MAX_B * 4 + att + 16;
    if (rest + 2 * (size_t)tile > TINFER_OP_CUDA_STEP_MAX_SMEM) return false;
    P->stage_bytes = (uint32_t)tile;
    P->n_stages = (int32_t)std::min<int64_t>(DS_MAX_STAGES,
                                             (TINFER_OP_CUDA_STEP_MAX_SMEM - rest) / tile);
    P->lm_rows = (int32_t)(tile / (E * 2));
    P->smem = (size_t)P->n_stages * (size_t)tile + rest;
    return true;
}

extern "C" bool tinfer_op_cuda_step_ok(const tinfer_op_cuda_step_model *m,
                                       const tinfer_op_cuda_kv *kv, int32_t n, int32_t max_len,
                                       int32_t grid) {
    if (!m || !kv || n < 1 || n > DS_MAX_B || max_len > DS_MAX_KEYS) return false;
    if (kv->head_dim != 64 && kv->head_dim != 128) return false;
    if (kv->n_head_kv < 1 || kv->n_head % kv->n_head_kv) return false;
    const int64_t Q = (int64_t)kv->n_head * kv->head_dim;
    if (m->n_embd % 8 || m->n_ff % 8 || Q % 8) return false;
    ds_plan P;
    return ds_plan_for(m, kv, grid, &P);
}

template <int D>
static tinfer_status ds_launch(const ds_args &a, int32_t grid, size_t smem, cudaStream_t stream,
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
    e = cudaMemsetAsync(a.b.bar, 0, sizeof(uint32_t), stream); /* the barrier's count */
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tinfer_err_set(err, TINFER_ERR_CUDA, "decode_step: resetting the barrier: %s",
                              cudaGetErrorString(e));
    }
    void *args[] = {(void *)&a};
    e = cudaLaunchCooperativeKernel((const void *)decode_step_kernel<D>, dim3(grid),
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
    TOPS_REQUIRE(err, n >= 1 && n <= DS_MAX_B, "decode_step", "n %d outside [1, %d]", n,
                 DS_MAX_B);
    TOPS_REQUIRE(err, n_out >= 0 && n_out <= n, "decode_step", "n_out %d outside [0, %d]", n_out,
                 n);
    TOPS_REQUIRE(err, max_len <= DS_MAX_KEYS, "decode_step", "max_len %d over %d", max_len,
                 DS_MAX_KEYS);
    tinfer_cuda_facts f; /* the grid: one block per SM */
    tinfer_status rc = tinfer_cuda_current_facts(&f, err);
    if (rc != TINFER_OK) return rc;
    TOPS_REQUIRE(err, tinfer_op_cuda_step_ok(m, kv, n, max_len, f.n_sm), "decode_step",
                 "shape not supported (n %d, max_len %d, head_dim %d): check "
                 "tinfer_op_cuda_step_ok first",
                 n, max_len, kv->head_dim);
    ds_plan P;
    (void)ds_plan_for(m, kv, f.n_sm, &P); /* true: step_ok said so */
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
    a.stage_bytes = P.stage_bytes;
    a.n_stages = P.n_stages;
    a.lm_rows = P.lm_rows;
    return kv->head_dim == 64 ? ds_launch<64>(a, f.n_sm, P.smem, stream, err)
                              : ds_launch<128>(a, f.n_sm, P.smem, stream, err);
}

/*
 * decode_step_parts.cuh — the pieces of the fused decode step (decode_step.cu, which describes
 * the whole): its constants and arguments, the flagged words, the weight ring, staging a phase's
 * inputs into shared memory, the GEMV phases, the LM head and attention. Included by
 * decode_step.cu only; everything static.
 */
#ifndef TINFER_OPS_CUDA_DECODE_STEP_PARTS_CUH
#define TINFER_OPS_CUDA_DECODE_STEP_PARTS_CUH

#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/mbar.cuh"
#include "ops/cuda/ops_cuda.h"
#include "ops/cuda/ops_cuda_util.cuh"
#include "ops/cuda/rope_cuda.cuh"

#include <limits.h>
#include <math.h>
#include <stdint.h>

using namespace tops; /* the ops' device helpers (ops_cuda_util.cuh, rope_cuda.cuh) */

#define DS_THREADS 256 /* the compute threads: DS_WARPS warps */
#define DS_WARPS (DS_THREADS / 32)
#define DS_BLOCK (DS_THREADS + 32) /* and the producer warp (the weight ring's), the last */
#define DS_MAX_B TINFER_OP_CUDA_STEP_MAX_B
#define DS_MAX_KEYS TINFER_OP_CUDA_STEP_MAX_KEYS
#define DS_MAX_STAGES 6 /* weight ring stages at most */
#define DS_ROUND 4      /* key slots a lane group loads at once in attention */
#define DS_BATCH 8      /* flagged words a thread loads at once */
/* Polls of one flagged word before the kernel traps: ~1 s, far beyond any real wait (a phase
 * takes microseconds); a bug then ends the launch with an error instead of hanging the GPU. */
#define DS_SPIN_LIMIT (1u << 21)

/* The flagged-word buffers of a step of up to n tokens, in tinfer_op_cuda_step_bufs.ll. */
struct ds_ll {
    uint64_t *xa, *xb; /* [n][E] F32: the residual stream (embed, E -> x_a; C -> x_b) */
    uint64_t *qkv;     /* [n][QKV] BF16 */
    uint64_t *att;     /* [n][Q] BF16 */
    uint64_t *act;     /* [n][F] BF16 */
    uint64_t *tok;     /* [n] int32: a step's greedy picks, the next step's tokens (n_steps > 1) */
};

struct ds_args {
    tinfer_op_cuda_step_model m;
    tinfer_op_cuda_kv kv;
    tinfer_op_cuda_step_bufs b;
    ds_ll ll;
    const int32_t *tok, *pos, *seq, *out_rows;
    int32_t n, n_out;
    int32_t n_steps;      /* greedy steps in this launch, each fed the last one's picks */
    uint64_t *trace;      /* NULL, or the per-phase timestamps (tinfer_op_cuda_decode_step) */
    uint32_t stage_bytes; /* one ring stage: the largest tile a block gets (ds_plan) */
    int32_t n_stages;     /* S */
    int32_t xr_floats;    /* the staged residual rows' shared memory (ds_plan) */
};

/* The phases' functions are inlined into the kernel: as out-of-line calls (one copy each, a
 * kernel a third the size) they saved and restored registers through local memory around every
 * call, and the step took 20% longer (measured: 402 against 335 us on an H100). */
#define DS_PHASE __forceinline__

/* ---- device helpers ---- */

static __device__ __forceinline__ uint64_t global_ns(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* How many blocks take the step's n_items attention items and no QKV rows (decode_step.cu):
 * all n_items where the other blocks' share of the QKV rows is no larger for it than that of
 * every block, else none. Measured (H100, probe-decode-step --ctx 64): one SmolLM2 token (9
 * items; 123 blocks of at most 8 rows, as 132) 326-328 against 330 us a step; two tokens (18
 * items; 114 blocks of 9 rows against 8, a warp with two) 447-449 against 433-436. */
static __host__ __device__ __forceinline__ int32_t ds_na(int32_t n_items, int32_t QKV,
                                                         int32_t G) {
    if (n_items >= G) return 0;
    const int32_t most = (QKV + G - 1) / G, most_na = (QKV + G - n_items - 1) / (G - n_items);
    return most_na <= most ? n_items : 0;
}

/* First of block b's rows when N rows are shared by G blocks. */
static __device__ __forceinline__ int32_t part(int32_t N, int32_t b, int32_t G) {
    return (int32_t)((int64_t)N * b / G);
}

/* ---- flagged words ---- */

static __device__ __forceinline__ void ll_put(uint64_t *p, uint32_t v, uint32_t ep) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(((uint64_t)ep << 32) | v)
                 : "memory");
}
static __device__ __forceinline__ uint64_t ll_load(const uint64_t *p) {
    uint64_t w;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w) : "l"(p) : "memory");
    return w;
}

/* Polls the words w[u] (loaded from p + o[u], where on[u]) until every one carries epoch ep:
 * each pass reloads every stale word at once, one L2 round trip a pass for all of them
 * (measured: a step 7% shorter than settling one word after another). */
template <int N>
static __device__ __forceinline__ void ll_settle_n(const uint64_t *p, const int64_t (&o)[N],
                                                   const bool (&on)[N], uint64_t (&w)[N],
                                                   uint32_t ep) {
    for (uint32_t spins = 0;; spins++) {
        bool stale = false;
#pragma unroll
        for (int u = 0; u < N; u++)
            if (on[u] && (uint32_t)(w[u] >> 32) != ep) {
                stale = true;
                w[u] = ll_load(p + o[u]);
            }
        if (!stale) return;
        if (spins > DS_SPIN_LIMIT) __trap();
    }
}

/* The compute warps' block barrier (named barrier 1: the producer warp is not in it). */
static __device__ __forceinline__ void ds_sync(void) {
    asm volatile("bar.sync 1, %0;" ::"n"(DS_THREADS) : "memory");
}

/* Phase-progress trace (probe-decode-step): the block's time (thread 0, after a block barrier
 * where one closes the step) at point `which` of phase k: DS_T_WEIGHTS its weight tile had
 * landed, DS_T_INPUTS its inputs were staged, DS_T_COMPUTED every warp had written its outputs,
 * DS_T_DONE the phase's bookkeeping (the stage's release) was over. */
enum { DS_T_WEIGHTS, DS_T_INPUTS, DS_T_COMPUTED, DS_T_DONE, DS_T_POINTS };
static __device__ __forceinline__ void trace_at(const ds_args &a, int32_t k, int which) {
    if (a.trace && threadIdx.x == 0)
        a.trace[((int64_t)k * gridDim.x + blockIdx.x) * DS_T_POINTS + which] = global_ns();
}

/* ---- the weight ring ---- */

struct ds_ring {
    unsigned char *st; /* S stages of `bytes` each */
    uint64_t *full;    /* [S]: a stage's bytes have landed */
    uint64_t *empty;   /* [S]: the compute warps are done with a stage */
    const tinfer_op_cuda_step_layer *layers; /* the layer table, copied to shared memory */
    int32_t S, n_tiles; /* n_tiles a step */
    int32_t t0;         /* the step's first tile in the launch's count (step st: st n_tiles) */
    uint32_t bytes;
    int32_t q0, q1, e0, e1, f0, f1; /* the block's rows of QKV, of E (O, down) and of F */
};

/* This block's share of weight tile t: for t < 4 L, layer t / 4's
 *   t % 4 = 0  attn_norm [E], then the block's QKV rows (of E)
 *           1  its O rows (of Q)
 *           2  ffn_norm [E], then its gate rows and the same up rows (of E)
 *           3  its down rows (of F);
 * t = 4 L: out_norm [E] (the LM head's rows are read directly). Contiguous pieces, copied one
 * after another; every size is a multiple of 16 bytes (E, Q, F are multiples of 8). */
struct ds_tile {
    const uint16_t *src[3];
    uint32_t bytes[3];
};
static __device__ ds_tile tile_of(const ds_args &a, const ds_ring &R, int32_t t) {
    const int32_t E = a.m.n_embd, F = a.m.n_ff, Q = a.kv.n_head * a.kv.head_dim;
    ds_tile w = {{NULL, NULL, NULL}, {0, 0, 0}};
    if (t >= 4 * a.m.n_layer) {
        w.src[0] = a.m.out_norm, w.bytes[0] = (uint32_t)E * 2;
        return w;
    }
    const tinfer_op_cuda_step_layer &L = R.layers[t / 4];
    switch (t % 4) {
    case 0:
        w.src[0] = L.attn_norm, w.bytes[0] = (uint32_t)E * 2;
        w.src[1] = L.wqkv + (int64_t)R.q0 * E, w.bytes[1] = (uint32_t)(R.q1 - R.q0) * E * 2;
        break;
    case 1:
        w.src[0] = L.wo + (int64_t)R.e0 * Q, w.bytes[0] = (uint32_t)(R.e1 - R.e0) * Q * 2;
        break;
    case 2:
        w.src[0] = L.ffn_norm, w.bytes[0] = (uint32_t)E * 2;
        w.src[1] = L.wgu + (int64_t)R.f0 * E, w.bytes[1] = (uint32_t)(R.f1 - R.f0) * E * 2;
        w.src[2] = L.wgu + (int64_t)(F + R.f0) * E, w.bytes[2] = w.bytes[1];
        break;
    default:
        w.src[0] = L.wdown + (int64_t)R.e0 * F, w.bytes[0] = (uint32_t)(R.e1 - R.e0) * F * 2;
    }
    return w;
}

/* mbar_wait with the flagged words' limit: a ring bug (a stage never refilled, never released)
 * ends the launch with an error instead of hanging the GPU. mbarrier.try_wait suspends the
 * thread for a while each call, so DS_SPIN_LIMIT calls are at least as long as as many polls. */
static __device__ __forceinline__ void ds_mbar_wait(uint64_t *bar, uint32_t parity) {
    for (uint32_t spins = 0; !mbar_try(bar, parity); spins++)
        if (spins > DS_SPIN_LIMIT) __trap();
}

/* The producer warp (lane `lane`): every tile in order, tile t into stage t mod S once the
 * compute warps have released the stage's previous tile, t - S, each lane copying every 32nd
 * 16 bytes with cp.async and arriving on the stage's "full" barrier (count 32) when its copies
 * land (cp.async.mbarrier.arrive). It runs up to S tiles (about a layer and a half) ahead and
 * waits for nothing else, so no compute warp spends time issuing copies or stalls behind a full
 * copy queue (measured: with the compute warps issuing, 0.3-1.1 us a phase went to it; thread 0
 * issuing the copy engine's bulk copies from the producer warp instead gave a step 3-5% longer;
 * cp.async.wait_group 1 and a plain arrive instead of the asynchronous arrival, 1.5% longer). */
#define DS_RING_ISSUERS 32 /* arrivals a stage expects */
static __device__ __forceinline__ void ring_produce(const ds_args &a, const ds_ring &R, int lane) {
    for (int32_t t = 0; t < R.n_tiles * a.n_steps; t++) { /* every step's, in order */
        const int32_t s = t % R.S;
        if (t >= R.S) ds_mbar_wait(R.empty + s, (uint32_t)(t / R.S - 1) & 1u);
        const ds_tile w = tile_of(a, R, t % R.n_tiles);
        unsigned char *dst = R.st + (size_t)s * R.bytes;
#pragma unroll
        for (int i = 0; i < 3; i++) {
            const unsigned char *src = (const unsigned char *)w.src[i];
            for (uint32_t o = (uint32_t)lane * 16u; o < w.bytes[i]; o += 32u * 16u)
                cp_async16_cg(dst + o, src + o);
            dst += w.bytes[i];
        }
        cp_async_arrive(R.full + s);
    }
}

/* Every compute thread: wait for tile t of the step; its rows in shared memory. */
static __device__ __forceinline__ const uint16_t *ring_wait(const ds_ring &R, int32_t t) {
    t += R.t0;
    ds_mbar_wait(R.full + t % R.S, (uint32_t)(t / R.S) & 1u);
    return (const uint16_t *)(R.st + (size_t)(t % R.S) * R.bytes);
}

/* Every compute thread, done with tile t: its stage may be refilled once all have said so (the
 * "empty" barrier counts DS_THREADS). One thread arriving after the block barrier would do as
 * well, but compute-sanitizer's racecheck does not follow a barrier into another thread's
 * arrival and flags every stage; each thread arriving for itself costs nothing measurable. */
static __device__ __forceinline__ void ring_release(const ds_ring &R, int32_t t) {
    mbar_arrive(R.empty + (t + R.t0) % R.S);
}

/* The step's token metadata, copied to shared memory at the kernel's start: the phases that
 * need a position, a sequence or an output row (attention, its KV prefetch, the LM head's
 * RMSNorm) would otherwise open with a global load, an L2 round trip on their critical path. */
struct ds_meta {
    int32_t pos[DS_MAX_B], seq[DS_MAX_B], out_rows[DS_MAX_B];
    int32_t tok[DS_MAX_B]; /* the step's tokens from its second on (the last step's picks) */
};

/* Ask L2 for the cache rows 0..p-1 of the KV head of each attention item this block will take
 * in layer l's phase B: they were written by earlier steps and may have left L2 since. Issued
 * as phase A opens, before its inputs are waited for (issued after A's GEMV instead, the
 * prefetches delayed the attention blocks' start of B: H100, probe-decode-step --ctx 64, a step
 * 330 against 338 us at one token, 481 against 502 at 4, 565 against 588 at 8). */
static __device__ __forceinline__ void prefetch_kv(const ds_args &a, const ds_meta &M, int32_t l) {
    const tinfer_op_cuda_kv &kv = a.kv;
    const int32_t H = kv.n_head, G = H / kv.n_head_kv, D = kv.head_dim;
    const int64_t kvd = (int64_t)kv.n_head_kv * D;
    for (int32_t it = blockIdx.x; it < a.n * H; it += gridDim.x) {
        const int32_t j = it / H, h = it % H, p = M.pos[j], s = M.seq[j];
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

/* ---- staging: the step's inputs of a phase, from flagged words into shared memory ---- */

/* xs[j][e] = BF16(rmsnorm(x[src_j]) * w) for j < rows, src_j = map ? map[j] : j: the rmsnorm
 * kernel's arithmetic (ops/cuda/elementwise.cu), every block for itself, x as F32 flagged words
 * of epoch ep. E <= NORM_PER_THREAD * DS_THREADS (ds_plan_for checks): every word a thread needs
 * is loaded at once, kept in registers between the sum of squares and the scaling. */
#define NORM_PER_THREAD 4
template <int NB>
static __device__ DS_PHASE void stage_norm(uint16_t *xs, int32_t ldxs, const uint64_t *x, uint32_t ep,
                                  const uint16_t *w, const int32_t *map, int32_t rows, int32_t E,
                                  float eps, float *red) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    float xv[NB][NORM_PER_THREAD], gv[NORM_PER_THREAD];
#pragma unroll
    for (int t = 0; t < NORM_PER_THREAD; t++) {
        const int32_t e = tid + t * DS_THREADS;
        gv[t] = e < E ? bf16_to_f32(w[e]) : 0.0f;
    }
    /* up to four tokens' words in flight at a time (registers: 4 x NORM_PER_THREAD words) */
    constexpr int J4 = NB < 4 ? NB : 4, NW = J4 * NORM_PER_THREAD;
#pragma unroll
    for (int j0 = 0; j0 < NB; j0 += J4) {
        if (j0 >= rows) break;
        uint64_t wv[NW];
        int64_t o[NW];
        bool on[NW];
#pragma unroll
        for (int jj = 0; jj < J4; jj++)
#pragma unroll
            for (int t = 0; t < NORM_PER_THREAD; t++) {
                const int32_t e = tid + t * DS_THREADS, u = jj * NORM_PER_THREAD + t;
                on[u] = j0 + jj < rows && e < E;
                o[u] = on[u] ? (int64_t)(map ? map[j0 + jj] : j0 + jj) * E + e : 0;
                wv[u] = on[u] ? ll_load(x + o[u]) : 0;
            }
        ll_settle_n(x, o, on, wv, ep);
#pragma unroll
        for (int jj = 0; jj < J4; jj++) {
            const int j = j0 + jj;
            if (j >= rows) break;
            float ss = 0.0f;
#pragma unroll
            for (int t = 0; t < NORM_PER_THREAD; t++) {
                const int u = jj * NORM_PER_THREAD + t;
                xv[j][t] = on[u] ? __uint_as_float((uint32_t)wv[u]) : 0.0f;
                ss += xv[j][t] * xv[j][t];
            }
            ss = warp_sum(ss);
            if (lane == 0) red[warp * DS_MAX_B + j] = ss;
        }
    }
    ds_sync();
#pragma unroll
    for (int j = 0; j < NB; j++) {
        if (j >= rows) break;
        float t = 0.0f;
        for (int wi = 0; wi < DS_WARPS; wi++)
            t += red[wi * DS_MAX_B + j];
        const float rs = 1.0f / sqrtf(t / (float)E + eps);
#pragma unroll
        for (int u = 0; u < NORM_PER_THREAD; u++) {
            const int32_t e = tid + u * DS_THREADS;
            if (e < E)
                xs[(int64_t)j * ldxs + e] = (uint16_t)f32_to_bf16(__fmul_rn(xv[j][u], rs) * gv[u]);
        }
    }
    ds_sync(); /* xs complete; red free again */
}

/* xs[j][0:K] = src[j][0:K] (BF16 flagged words of epoch ep) for j < rows, DS_BATCH words a
 * thread in flight; K >= DS_THREADS (tinfer_op_cuda_step_ok), so a step of DS_THREADS elements
 * crosses at most one row end. */
static __device__ DS_PHASE void stage_copy(uint16_t *xs, int32_t ldxs, const uint64_t *src,
                                              uint32_t ep, int32_t K, int32_t rows) {
    const int tid = threadIdx.x;
    const int32_t total = rows * K;
    int32_t j = 0, k = tid; /* element i0 = j * K + k of this thread's batch */
    for (int32_t i0 = tid; i0 < total; i0 += DS_BATCH * DS_THREADS) {
        uint64_t w[DS_BATCH];
        int64_t o[DS_BATCH];
        int32_t d[DS_BATCH]; /* its place in xs */
        bool on[DS_BATCH];
#pragma unroll
        for (int u = 0; u < DS_BATCH; u++) { /* element i0 + u * DS_THREADS */
            on[u] = i0 + u * DS_THREADS < total;
            o[u] = (int64_t)j * K + k;
            d[u] = j * ldxs + k;
            w[u] = on[u] ? ll_load(src + o[u]) : 0;
            if ((k += DS_THREADS) >= K) k -= K, j++;
        }
        ll_settle_n(src, o, on, w, ep);
#pragma unroll
        for (int u = 0; u < DS_BATCH; u++)
            if (on[u]) xs[d[u]] = (uint16_t)w[u];
    }
    ds_sync();
}

/* ---- GEMV phases: the block's rows of a ring stage against the staged tokens ---- */

enum ds_out {
    DS_LL_BF16,     /* Y: BF16 flagged words of epoch ep */
    DS_LL_RESIDUAL, /* Y: F32 flagged words of epoch ep, xo[j][r] (the block's own rows of the
                     * residual stream, in shared memory) + the sum, also kept in xo */
    DS_STORE_F32    /* Y: plain F32 (the logits) */
};

/* The epilogue of a GEMV phase for token j, output n = n0 + r (the block's row r of R): v is
 * the dot product plus the bias. */
template <int OUT>
static __device__ __forceinline__ void gemv_put(void *Y, int64_t ldy, int32_t j, int32_t n,
                                                float v, float *xo, int32_t R, int32_t r,
                                                uint32_t ep) {
    if (OUT == DS_LL_BF16)
        ll_put((uint64_t *)Y + j * ldy + n, f32_to_bf16(v), ep);
    else if (OUT == DS_LL_RESIDUAL) {
        const float x = xo[j * R + r] + v;
        xo[j * R + r] = x;
        ll_put((uint64_t *)Y + j * ldy + n, __float_as_uint(x), ep);
    } else
        ((float *)Y)[j * ldy + n] = v;
}

/* Y[j][n0 + r] (epilogue OUT) = xs[j] · Wt[r] (+ bias[n0 + r]) for j < rows, r < R: the block's
 * R rows of K in shared memory (a ring stage), one row per warp at a time. */
template <int OUT, int NB>
static __device__ DS_PHASE void gemv_tile(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                 const uint16_t *Wt, int32_t R, int32_t K, int32_t n0,
                                 const uint16_t *bias, float *xo, void *Y, int64_t ldy,
                                 uint32_t ep, int warp, int lane) {
    for (int32_t r = warp; r < R; r += DS_WARPS) {
        float acc[NB];
#pragma unroll
        for (int j = 0; j < NB; j++)
            acc[j] = 0.0f;
        const uint16_t *w = Wt + (int64_t)r * K;
        for (int32_t k = lane * 8; k < K; k += 256) {
            float wf[8];
            bf16x8(*(const uint4 *)(w + k), wf);
#pragma unroll
            for (int j = 0; j < NB; j++)
                if (j < rows) acc[j] += dot8(wf, *(const uint4 *)(xs + (int64_t)j * ldxs + k));
        }
        const int32_t n = n0 + r;
        const float bv = bias ? bf16_to_f32(bias[n]) : 0.0f;
#pragma unroll
        for (int j = 0; j < NB; j++) {
            if (j >= rows) break;
            const float v = warp_sum(acc[j]) + bv;
            if (lane != j) continue; /* lane j stores token j's value */
            gemv_put<OUT>(Y, ldy, j, n, v, xo, R, r, ep);
        }
    }
}

/* act[j][f0 + f] = BF16(silu(g) * u), g = xs[j] · Wt[f], u = xs[j] · Wt[Rf + f], f < Rf: the
 * block's gate rows, then its up rows, in shared memory; flagged words of epoch ep. */
template <int NB>
static __device__ DS_PHASE void swiglu_tile(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                   const uint16_t *Wt, int32_t Rf, int32_t K, int32_t f0,
                                   uint64_t *act, int32_t F, uint32_t ep, int warp, int lane) {
    /* a warp's rows f and f + DS_WARPS in one pass, so that their four shuffle reductions
     * overlap instead of following one another (H200, probe-decode-step --ctx 64, two rounds
     * against one row a pass: 2 tokens 414-417 against 423-424 us a step; 1 token unchanged) */
    for (int32_t f = warp; f < Rf; f += 2 * DS_WARPS) {
        const bool two = f + DS_WARPS < Rf;
        float g[2][NB], u[2][NB];
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < NB; j++)
                g[i][j] = u[i][j] = 0.0f;
        const uint16_t *wg = Wt + (int64_t)f * K, *wu = Wt + (int64_t)(Rf + f) * K;
        const int64_t o2 = two ? (int64_t)DS_WARPS * K : 0; /* row f again where there is none */
        for (int32_t k = lane * 8; k < K; k += 256) {
            float gf[2][8], uf[2][8];
            bf16x8(*(const uint4 *)(wg + k), gf[0]);
            bf16x8(*(const uint4 *)(wu + k), uf[0]);
            bf16x8(*(const uint4 *)(wg + o2 + k), gf[1]);
            bf16x8(*(const uint4 *)(wu + o2 + k), uf[1]);
#pragma unroll
            for (int j = 0; j < NB; j++)
                if (j < rows) {
                    const uint4 xv = *(const uint4 *)(xs + (int64_t)j * ldxs + k);
#pragma unroll
                    for (int i = 0; i < 2; i++) {
                        g[i][j] += dot8(gf[i], xv);
                        u[i][j] += dot8(uf[i], xv);
                    }
                }
        }
#pragma unroll
        for (int j = 0; j < NB; j++) {
            if (j >= rows) break;
            float gs[2], us[2];
#pragma unroll
            for (int i = 0; i < 2; i++)
                gs[i] = warp_sum(g[i][j]), us[i] = warp_sum(u[i][j]);
            if (lane == j)
#pragma unroll
                for (int i = 0; i < 2; i++)
                    if (i == 0 || two)
                        ll_put(act + (int64_t)j * F + f0 + f + i * DS_WARPS,
                               f32_to_bf16(gs[i] / (1.0f + __expf(-gs[i])) * us[i]), ep);
        }
    }
}

/* logits[j][n] = xs[j] · lm_head[n] for j < rows, n in [v0, v1), and each warp's greedy pick of
 * token j as am[warp][j] (am_key): the LM head is read once a step and is the largest matrix,
 * so it is not staged: each warp takes 4 consecutive rows at a time with all their 16-byte loads
 * in flight together (E <= 1,024: up to 4 per row and lane), read with no L1 allocation. The 4
 * logits of a token leave in one store instruction (4 lanes, 16 consecutive bytes): the logits
 * may be mapped host memory, where every store instruction is a PCIe write. */
#define DS_LM_ROWS 4
static_assert(DS_MAX_B * DS_LM_ROWS <= 32, "lm_head_rows: a lane per (token, row) of a group");
template <int NB>
static __device__ DS_PHASE void lm_head_rows(const uint16_t *xs, int32_t ldxs, int32_t rows,
                                    const uint16_t *__restrict__ W, int32_t v0, int32_t v1,
                                    int32_t E, float *logits, int64_t V, uint64_t *am, int warp,
                                    int lane) {
    constexpr int LR = DS_LM_ROWS;
    float bv[NB];
    int32_t bi[NB];
#pragma unroll
    for (int j = 0; j < NB; j++)
        bv[j] = -INFINITY, bi[j] = INT_MAX;
    for (int32_t n0 = v0 + warp * LR; n0 < v1; n0 += DS_WARPS * LR) {
        uint4 w[LR][NORM_PER_THREAD];
#pragma unroll
        for (int i = 0; i < LR; i++)
#pragma unroll
            for (int c = 0; c < NORM_PER_THREAD; c++) {
                const int32_t k = lane * 8 + c * 256;
                if (n0 + i < v1 && k < E) w[i][c] = ld_stream16(W + (int64_t)(n0 + i) * E + k);
            }
        float acc[LR][NB];
#pragma unroll
        for (int i = 0; i < LR; i++)
#pragma unroll
            for (int j = 0; j < NB; j++)
                acc[i][j] = 0.0f;
#pragma unroll
        for (int c = 0; c < NORM_PER_THREAD; c++) {
            const int32_t k = lane * 8 + c * 256;
            if (k >= E) break;
#pragma unroll
            for (int i = 0; i < LR; i++) {
                if (n0 + i >= v1) break;
                float wf[8];
                bf16x8(w[i][c], wf);
#pragma unroll
                for (int j = 0; j < NB; j++)
                    if (j < rows) acc[i][j] += dot8(wf, *(const uint4 *)(xs + (int64_t)j * ldxs + k));
            }
        }
        float mine = 0.0f; /* lane j * LR + i stores row n0 + i of token j: one store a warp */
#pragma unroll
        for (int i = 0; i < LR; i++) {
            if (n0 + i >= v1) break;
#pragma unroll
            for (int j = 0; j < NB; j++) {
                if (j >= rows) break;
                const float v = warp_sum(acc[i][j]); /* the same in every lane */
                if (am_better(v, n0 + i, bv[j], bi[j])) bv[j] = v, bi[j] = n0 + i;
                if (lane == j * LR + i) mine = v;
            }
        }
        {
            const int i = lane % LR, j = lane / LR;
            if (j < NB && j < rows && n0 + i < v1) logits[j * V + n0 + i] = mine;
        }
    }
    if (lane == 0)
#pragma unroll
        for (int j = 0; j < NB; j++)
            if (j < rows) am[warp * DS_MAX_B + j] = am_key(bv[j], bi[j]);
}

/* Shared memory of the attention phase (inside the block's dynamic shared memory). */
template <int D> struct ds_att_smem {
    float q[D];                   /* rotated q * scale * log2(e) */
    __align__(16) uint16_t kp[D]; /* the token's own rotated k row */
    __align__(16) uint16_t vp[D]; /* and its v row */
    float wm[DS_WARPS], wl[DS_WARPS]; /* each warp's running max and sum */
    float wacc[DS_WARPS][D];          /* and its unnormalised P·V */
};

/* Attention of item it = (token j, query head h), layer l: q, k, v from the flagged words of
 * epoch ep_in, att[j][h*D .. +D) written with epoch ep. Lane group
 * (D/8 lanes, 8 dims each) kw of the block takes keys kw, kw + KPB, kw + 2 KPB, ..., DS_ROUND of
 * them a round, with its own online softmax (running max m, sum ls, acc). */
template <int D>
static __device__ DS_PHASE void attention_item(const ds_args &a, const ds_meta &M, int32_t l,
                                               int32_t it, const float *cs, const float *sn,
                                               uint32_t ep_in, uint32_t ep, ds_att_smem<D> &S) {
    constexpr int LPK = D / 8;        /* lanes per key: 8 BF16 each */
    constexpr int KPW = 32 / LPK;     /* keys per warp at a time */
    constexpr int KPB = KPW * DS_WARPS;
    constexpr int U = DS_ROUND;
    const tinfer_op_cuda_kv &kv = a.kv;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int32_t H = kv.n_head, HKV = kv.n_head_kv, G = H / HKV;
    const int32_t j = it / H, h = it % H, g = h / G;
    const int32_t p = M.pos[j], s = M.seq[j];
    const int64_t QKV = (int64_t)(H + 2 * HKV) * D;
    uint64_t *out = a.ll.att + (int64_t)j * H * D + (int64_t)h * D;
    if (p < 0 || p >= kv.n_ctx || p >= DS_MAX_KEYS || s < 0 || s >= kv.n_seq) {
        for (int d = tid; d < D; d += DS_THREADS)
            ll_put(out + d, 0x7fc0u, ep); /* invalid metadata: a NaN row, as the step path writes */
        return;
    }
    const uint64_t *qrow = a.ll.qkv + (int64_t)j * QKV + (int64_t)h * D;
    const uint64_t *krow = a.ll.qkv + (int64_t)j * QKV + (int64_t)(H + g) * D;
    const uint64_t *vrow = krow + (int64_t)HKV * D;
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
        const int64_t o[6] = {0, D / 2, krow - qrow, krow - qrow + D / 2, vrow - qrow,
                              vrow - qrow + D / 2};
        const bool on[6] = {true, true, true, true, true, true};
        uint64_t w[6];
        uint32_t v[6];
#pragma unroll
        for (int i = 0; i < 6; i++)
            w[i] = ll_load(qrow + tid + o[i]);
        ll_settle_n(qrow + tid, o, on, w, ep_in);
#pragma unroll
        for (int i = 0; i < 6; i++)
            v[i] = (uint32_t)w[i];
        const float *c = cs + j * (D / 2), *sv = sn + j * (D / 2);
        uint16_t y0, y1;
        rope_pair(bf16_to_f32(v[0]), bf16_to_f32(v[1]), c[tid], sv[tid], &y0, &y1);
        S.q[tid] = bf16_to_f32(y0) * qscale;
        S.q[tid + D / 2] = bf16_to_f32(y1) * qscale;
        rope_pair(bf16_to_f32(v[2]), bf16_to_f32(v[3]), c[tid], sv[tid], &y0, &y1);
        S.kp[tid] = y0;
        S.kp[tid + D / 2] = y1;
        S.vp[tid] = (uint16_t)v[4];
        S.vp[tid + D / 2] = (uint16_t)v[5];
        if (h % G == 0) { /* one writer per KV head: the cache row p of this layer */
            const int64_t r = base + (int64_t)p * kvd;
            kv.k[r + tid] = y0;
            kv.k[r + tid + D / 2] = y1;
            kv.v[r + tid] = S.vp[tid];
            kv.v[r + tid + D / 2] = S.vp[tid + D / 2];
        }
    }
    ds_sync();
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
    ds_sync();
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
        ll_put(out + tid, f32_to_bf16(o / lsum), ep);
    }
    ds_sync(); /* S is reused by the block's next item */
}

/* Phase B of layer l (trace slot k): items b, b + G, ... of the n_items (token, query head)
 * items, q, k and v of epoch ep_in, the attention output written with epoch ep. */
template <int D>
static __device__ DS_PHASE void phase_attention(const ds_args &a, const ds_meta &M, int32_t l,
                                                int32_t k, int32_t n_items, int32_t b, int32_t G,
                                                const float *cs, const float *sn, uint32_t ep_in,
                                                uint32_t ep, ds_att_smem<D> &S) {
    trace_at(a, k, DS_T_WEIGHTS);
    trace_at(a, k, DS_T_INPUTS);
    for (int32_t it = b; it < n_items; it += G)
        attention_item<D>(a, M, l, it, cs, sn, ep_in, ep, S);
    trace_at(a, k, DS_T_COMPUTED);
    trace_at(a, k, DS_T_DONE);
}

#endif

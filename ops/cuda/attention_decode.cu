/*
 * attention_decode.cu — split-KV attention for single queries (flash-decoding), the batch plan
 * that sorts a batch's queries into decode queries and prefill tiles, and the workspace size.
 * Reference: ops/ref/attention.c (causal GQA, scale 1/sqrt(head_dim), F32 softmax).
 * SIMT (CUDA cores, F32 throughout): one query's scores are a vector-matrix product whose cost is
 * reading the cache once; tensor cores would idle on it.
 *
 * Work split (Dao et al. 2023, "Flash-Decoding for long-context inference"): a block owns one
 * (query, KV head g, batch of up to DEC_HB query heads of g, key range c). All query heads of a
 * KV head share the block, so each K/V row is read once per GQA group (up to DEC_HB heads);
 * where the grid stays small enough to be resident at once, a block takes one query head
 * instead, a quarter of the arithmetic on its critical path (dec_hb below). The
 * launcher cuts 0..L into chunks of `chunk` rows (a multiple of DEC_KT, >=
 * TINFER_OP_CUDA_DECODE_MIN_CHUNK unless L is shorter), as many as fill the GPU (about 2 blocks
 * per SM) and the workspace allows.
 * Inside a block the keys are dealt to lane groups (D/8 lanes a key, 16-byte loads of 8 BF16 of
 * the K and V rows), DEC_ROUND keys a lane group at a time, the next round's rows in flight while
 * this round's are used. Each lane group keeps, per head, an online softmax in the log2 domain
 * (running max m, sum l, the unnormalised P V of its 8 dims; Milakov & Gimelshein 2018) in
 * registers; at the end the lane groups merge by shuffles and the warps through shared memory.
 * A decode query has few keys (tens to thousands), so what costs is the chain of dependent
 * memory round trips, not arithmetic: one a round here, where a kernel that staged scores in
 * shared memory per 64-key tile paid several per tile. Measured on an H100 (ncu, real clocks):
 * 7.35 against 8.87 us a call on a Llama-3-8B decode step, 7.40 against 8.88 us at 64
 * SmolLM2 sequences; as part of the step (with the register-resident RMSNorm), Llama-3-8B tg128
 * 157 -> 172 tok/s and SmolLM2 64 streams 49.9k -> 60.6k tok/s.
 * One chunk: the block normalises and writes BF16 directly. Several: each writes (m, l, acc) to
 * the workspace and decode_combine_kernel merges them: M = max m_c, out = sum_c acc_c 2^(m_c-M)
 * / sum_c l_c 2^(m_c - M).
 * Accuracy vs the reference on the same BF16 q/K/V: F32 sums in another order and exp2f
 * (ex2.approx, ~2 ulp) for expf: relative errors of a few 2^-23 in each p; then the BF16 output
 * rounding (2^-9 relative). tests/ops_cuda checks |out - ref| <= 2^-7 max|v| (attention bound
 * shared with the prefill kernel, which also rounds P to BF16).
 * Invalid metadata (pos outside [0, n_ctx), seq outside [0, n_seq)): NaN output row.
 */
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "ops/cuda/attention_cuda.cuh"
#include "ops/cuda/ops_cuda.h"
#include "ops/cuda/ops_cuda_util.cuh"
#include "ops/cuda/rope_cuda.cuh"

#include <math.h>
#include <stdlib.h>
#include <string.h>

using namespace tops;

/* Threads a block: 256 when the grid has fewer blocks than the GPU has SMs (one stream's
 * step: more lane groups share each query's keys), else 128 (more blocks resident an SM).
 * Measured on an H100 against 128 everywhere: Llama-3-8B tg128 +2.3%, SmolLM2 8 streams +4.5%,
 * but 64 streams -5%. 8 key slots a lane group (instead of 4) was slower in every case. */
#define DEC_THREADS_FEW 256
#define DEC_THREADS_MANY 128
/* Query heads per block: DEC_HB (a GQA group larger than this takes several blocks), so that
 * each K / V row is read once for up to DEC_HB heads, or one where a head a block still keeps
 * every block resident at once (up to DEC_HB1_BLOCKS_PER_SM per SM): a block then does a
 * quarter of the dot products, softmax updates and merges, and a short context's call is the
 * latency of one block's instructions (ncu, H100, 64 SmolLM2 sequences at 4 heads a block: 167
 * registers a thread, ~2,400 instructions a warp at 6.5 cycles each, 10 us). Measured on an
 * H100 against 4 heads a block, two alternating runs: SmolLM2 tg128-argmax at 64 sequences
 * 70,600 / 71,800 against 68,700 / 68,400 tok/s (a step's kernels 854 against 887-890 us), at 16
 * 22,600 / 23,000 against 22,100 / 21,800; Llama-3-8B tg64 182.1 against 178.7 tok/s, at 16
 * sequences 2,393 against 2,397. TINFER_CUDA_ATTN_HB=1 or 4 forces one (a measurement knob,
 * read once), as does tinfer_op_cuda_attention_decode_force_hb. */
#define DEC_HB 4
#define DEC_HB1_BLOCKS_PER_SM 8
#define DEC_ROUND 4 /* key slots a lane group holds at a time */
#define DEC_KT 64   /* key ranges are multiples of this */
/* Blocks per SM the split aims for: enough resident blocks to hide the cache reads' latency. */
#define DEC_BLOCKS_PER_SM 2

/* ---- host: the plan and the workspace ---- */

/* Query heads per block for n_dec queries (DEC_HB or 1; the comment at DEC_HB). Host
 * arithmetic: the same for the same arguments, so the split below matches every launch. */
static int dec_hb_forced; /* tinfer_op_cuda_attention_decode_force_hb */
static int dec_hb(int n_sm, const attn_geom &geo, int32_t n_dec) {
    static int env = -1;
    if (env < 0) {
        const char *e = getenv("TINFER_CUDA_ATTN_HB");
        env = e && !strcmp(e, "1") ? 1 : e && !strcmp(e, "4") ? DEC_HB : 0;
    }
    if (dec_hb_forced) return dec_hb_forced;
    if (env) return env;
    return (int64_t)n_dec * geo.n_head <= (int64_t)DEC_HB1_BLOCKS_PER_SM * n_sm ? 1 : DEC_HB;
}

extern "C" tinfer_status tinfer_op_cuda_attention_plan(const int32_t *seq, const int32_t *pos,
                                                       int32_t n, int32_t *tiles, int32_t tiles_cap,
                                                       int32_t *n_tiles, int32_t *dec,
                                                       int32_t dec_cap, int32_t *n_dec,
                                                       int32_t *max_dec_len, tinfer_err *err) {
    TOPS_REQUIRE(err, n >= 0 && n_tiles && n_dec && max_dec_len, "attention_plan",
                 "n %d < 0 or NULL output count", n);
    TOPS_REQUIRE(err, n == 0 || (seq && pos), "attention_plan", "NULL seq/pos");
    int32_t nt = 0, nd = 0, maxl = 0;
    for (int32_t i = 0; i < n;) {
        int32_t e = i + 1;
        while (e < n && seq[e] == seq[i]) {
            TOPS_REQUIRE(err, pos[e] > pos[e - 1], "attention_plan",
                         "token %d: position %d not above %d of the same sequence", e, pos[e],
                         pos[e - 1]);
            e++;
        }
        TOPS_REQUIRE(err, e == n || seq[e] > seq[i], "attention_plan",
                     "token %d: sequence %d after %d (batch not sorted by sequence)", e,
                     e < n ? seq[e] : -1, seq[i]);
        if (e - i == 1) {
            TOPS_REQUIRE(err, nd < dec_cap && dec, "attention_plan",
                         "decode list capacity %d short", dec_cap);
            dec[nd++] = i;
            if (pos[i] + 1 > maxl) maxl = pos[i] + 1;
        } else {
            for (int32_t t = i; t < e; t += TINFER_OP_CUDA_ATTN_TILE) {
                TOPS_REQUIRE(err, nt < tiles_cap && tiles, "attention_plan",
                             "tile list capacity %d short", tiles_cap);
                tiles[3 * nt] = t;
                tiles[3 * nt + 1] =
                    e - t < TINFER_OP_CUDA_ATTN_TILE ? e - t : TINFER_OP_CUDA_ATTN_TILE;
                tiles[3 * nt + 2] = seq[i];
                nt++;
            }
        }
        i = e;
    }
    *n_tiles = nt;
    *n_dec = nd;
    *max_dec_len = maxl;
    return TINFER_OK;
}

extern "C" size_t tinfer_op_cuda_attention_ws_bytes(int32_t max_queries, int32_t max_splits,
                                                    int32_t n_head, int32_t head_dim) {
    if (max_queries < 1 || max_splits < 1 || n_head < 1 || head_dim < 1) return 0;
    return (size_t)max_queries * (size_t)n_head * (size_t)max_splits * ((size_t)head_dim + 2) *
           sizeof(float);
}

/* ---- device ---- */

/* Workspace: acc [n_dec][n_head][n_split][D], then m and l, each [n_dec][n_head][n_split]. */
struct dec_ws {
    float *acc, *m, *l;
};

/* Element d of a rotate-half RoPE'd head (x: the head's D unrotated BF16 values), as BF16, with
 * rope_kv.cu's operations: x0' = x0 c - x1 s, x1' = x1 c + x0 s, each product rounded. */
template <int D>
static __device__ __forceinline__ uint16_t rope_elem(const uint16_t *x, int d, const float *cs,
                                                     const float *sn) {
    const int j = d < D / 2 ? d : d - D / 2;
    uint16_t y0, y1;
    rope_pair(bf16_to_f32(x[j]), bf16_to_f32(x[j + D / 2]), cs[j], sn[j], &y0, &y1);
    return d < D / 2 ? y0 : y1;
}

/* 8 BF16 (one 16-byte word) to F32. */
static __device__ __forceinline__ void dec_bf16x8(const uint4 v, float f[8]) {
    f[0] = __uint_as_float(v.x << 16), f[1] = __uint_as_float(v.x & 0xffff0000u);
    f[2] = __uint_as_float(v.y << 16), f[3] = __uint_as_float(v.y & 0xffff0000u);
    f[4] = __uint_as_float(v.z << 16), f[5] = __uint_as_float(v.z & 0xffff0000u);
    f[6] = __uint_as_float(v.w << 16), f[7] = __uint_as_float(v.w & 0xffff0000u);
}

/* One block: query qi, KV head g, its query heads h0 .. h0 + nh - 1 (nh <= HB), keys
 * [r0, r1) of range c. Lane group kw (D/8 lanes, 8 dims each) takes keys r0 + kw, r0 + kw + KPB,
 * ..., DEC_ROUND of them a round, with one online softmax per head; the next round's K and V rows
 * are loaded while this round's are used. At the end the lane groups merge by shuffles and the
 * warps through shared memory.
 * ROPE: the q, k, v of each query are the QKV GEMM's unrotated output; the block rotates its q
 * heads itself, and a block whose key range holds the query's own row p also rotates k, writes k
 * and v into the cache row p (through kw / vw: the same buffers as kc / vc; every head batch of
 * that range writes the same bytes) and reads row p from shared memory, not back from global
 * memory (kc / vc may be read through the non-coherent path). The arithmetic is rope_kv.cu's,
 * operation for operation (cos / sin in double, rounded once; __fmul_rn / __fsub_rn; BF16
 * rounding of the rotated values), so the fused step's outputs and cache rows are bit-identical
 * to rope_kv followed by this kernel without ROPE (tests/ops_cuda checks it).
 * Before griddepcontrol.wait the block reads only metadata (dec, pos, seq, inv_freq: uploaded by
 * copies, never written by the kernel launched before this one) to build its RoPE table and
 * ask L2 for its first round of cache rows (a prefetch cannot return stale data). */
template <int D, bool DIRECT, bool ROPE, int NT, int HB>
static __global__ void __launch_bounds__(NT)
    decode_kernel(uint16_t *__restrict__ out, const uint16_t *__restrict__ qkv,
                  const uint16_t *__restrict__ kc, const uint16_t *__restrict__ vc,
                  const int32_t *__restrict__ pos, const int32_t *__restrict__ seq,
                  const int32_t *__restrict__ dec, attn_geom geo, int32_t chunk, int32_t n_split,
                  dec_ws ws, const float *__restrict__ inv_freq, uint16_t *kw, uint16_t *vw) {
    constexpr int LPK = D / 8;             /* lanes per key: 8 dims each */
    constexpr int KPW = 32 / LPK;          /* keys per warp at a time */
    constexpr int NW = NT / 32;            /* warps */
    constexpr int KPB = KPW * NW;          /* keys per block at a time */
    constexpr int U = DEC_ROUND;
    __shared__ float qs[HB][D];
    __shared__ float cs_sh[ROPE ? D / 2 : 1], sn_sh[ROPE ? D / 2 : 1];
    __shared__ __align__(16) uint16_t kp_sh[ROPE ? D : 8], vp_sh[ROPE ? D : 8];
    __shared__ float wm[NW][HB], wl[NW][HB];
    __shared__ float wacc[NW][HB][D];

    tinfer_pdl_launch_dependents();
    const int32_t qi = blockIdx.x, c = blockIdx.z;
    const int32_t G = geo.n_head / geo.n_head_kv, n_hb = (G + HB - 1) / HB;
    const int32_t g = blockIdx.y / n_hb, hb = blockIdx.y % n_hb;
    const int32_t h0 = g * G + hb * HB, nh = min(HB, G - hb * HB);
    const int32_t i = dec[qi], p = pos[i], s = seq[i];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int64_t out_ld = (int64_t)geo.n_head * D;
    /* invalid metadata, or a position past what the host's max_len planned for */
    if (p < 0 || p >= geo.n_ctx || s < 0 || s >= geo.n_seq || p >= chunk * n_split) {
        tinfer_pdl_wait();
        if (DIRECT)
            for (int e = tid; e < nh * D; e += NT)
                out[(int64_t)i * out_ld + (int64_t)h0 * D + e] = 0x7fc0u;
        return; /* split form: the combine kernel writes the NaN row */
    }
    const int32_t r0 = c * chunk, r1 = min(p + 1, r0 + chunk);
    if (r0 >= r1) return; /* an empty key range of a shorter query: the combine skips it */

    const int32_t kvd = geo.n_head_kv * D;
    const int64_t cbase = attn_cache_row(geo, s, 0, D) + (int64_t)g * D;
    const int sub = lane % LPK, d0 = sub * 8, kq = warp * KPW + lane / LPK;
    const bool own_row = ROPE && p < r0 + chunk; /* this range holds row p (p >= r0) */
    if (ROPE) rope_table(p, inv_freq, D / 2, cs_sh, sn_sh, tid, NT);
#pragma unroll
    for (int u = 0; u < U; u++) { /* rows the first round reads: to L2 while the GEMM drains */
        const int32_t kk = r0 + u * KPB + kq;
        if (kk < r1 && sub == 0) {
            asm volatile("prefetch.global.L2 [%0];" ::"l"(kc + cbase + (int64_t)kk * kvd));
            asm volatile("prefetch.global.L2 [%0];" ::"l"(vc + cbase + (int64_t)kk * kvd));
        }
    }
    tinfer_pdl_wait();

    /* the first round's K and V rows (row p: from shared memory below, under ROPE) */
    uint4 kr[U], vr[U];
    auto load = [&](uint4 (&kx)[U], uint4 (&vx)[U], int32_t j0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int32_t kk = j0 + u * KPB + kq;
            if (kk < r1 && !(own_row && kk == p)) {
                kx[u] = *reinterpret_cast<const uint4 *>(kc + cbase + (int64_t)kk * kvd + d0);
                vx[u] = *reinterpret_cast<const uint4 *>(vc + cbase + (int64_t)kk * kvd + d0);
            }
        }
    };
    load(kr, vr, r0);

    const float qscale = rsqrtf((float)D) * 1.4426950408889634f; /* scale * log2(e) */
    const uint16_t *qrow = qkv + (int64_t)i * geo.qkv_ld + (int64_t)h0 * D;
    if (ROPE) __syncthreads(); /* cs_sh, sn_sh */
    for (int e = tid; e < HB * D; e += NT) {
        float v = 0.0f;
        if (e / D < nh) {
            if (ROPE) v = bf16_to_f32(rope_elem<D>(qrow + e / D * D, e % D, cs_sh, sn_sh));
            else v = bf16_to_f32(qrow[e]);
        }
        qs[e / D][e % D] = v * qscale;
    }
    if (own_row) { /* k (rotated) and v of KV head g at row p: shared memory and the cache */
        const uint16_t *krow = qkv + (int64_t)i * geo.qkv_ld + (int64_t)(geo.n_head + g) * D;
        const uint16_t *vrow = krow + (int64_t)geo.n_head_kv * D;
        const int64_t crow = attn_cache_row(geo, s, p, D) + (int64_t)g * D;
        for (int d = tid; d < D; d += NT) {
            const uint16_t kv_ = rope_elem<D>(krow, d, cs_sh, sn_sh), vv = vrow[d];
            kp_sh[d] = kv_;
            vp_sh[d] = vv;
            kw[crow + d] = kv_;
            vw[crow + d] = vv;
        }
    }
    __syncthreads();
    float qf[HB][8];
#pragma unroll
    for (int t = 0; t < HB; t++)
#pragma unroll
        for (int e = 0; e < 8; e++)
            qf[t][e] = qs[t][d0 + e];

    float m[HB], l[HB], acc[HB][8];
#pragma unroll
    for (int t = 0; t < HB; t++) {
        m[t] = -INFINITY, l[t] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; e++)
            acc[t][e] = 0.0f;
    }
    for (int32_t j0 = r0; j0 < r1; j0 += U * KPB) { /* the same trip count in every lane */
        uint4 kn[U], vn[U];
        if (j0 + U * KPB < r1) load(kn, vn, j0 + U * KPB);
        float sc[U][HB], mr[HB];
#pragma unroll
        for (int t = 0; t < HB; t++)
            mr[t] = m[t];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int32_t kk = j0 + u * KPB + kq;
            if (own_row && kk == p) {
                kr[u] = *reinterpret_cast<const uint4 *>(kp_sh + d0);
                vr[u] = *reinterpret_cast<const uint4 *>(vp_sh + d0);
            }
            float kf[8];
            dec_bf16x8(kr[u], kf);
#pragma unroll
            for (int t = 0; t < HB; t++) {
                float v = 0.0f;
                if (kk < r1) {
                    v = qf[t][0] * kf[0];
#pragma unroll
                    for (int e = 1; e < 8; e++)
                        v = fmaf(qf[t][e], kf[e], v);
                }
#pragma unroll
                for (int o = LPK / 2; o > 0; o >>= 1)
                    v += __shfl_xor_sync(0xffffffffu, v, o);
                sc[u][t] = kk < r1 ? v : -INFINITY;
                mr[t] = fmaxf(mr[t], sc[u][t]); /* fmaxf skips a NaN score; its exp2 carries it */
            }
        }
#pragma unroll
        for (int t = 0; t < HB; t++) {
            const float f = m[t] == -INFINITY ? 0.0f : exp2f(m[t] - mr[t]);
            l[t] *= f;
#pragma unroll
            for (int e = 0; e < 8; e++)
                acc[t][e] *= f;
            m[t] = mr[t];
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (j0 + u * KPB + kq >= r1) continue;
            float vf[8];
            dec_bf16x8(vr[u], vf);
#pragma unroll
            for (int t = 0; t < HB; t++) {
                const float e = exp2f(sc[u][t] - m[t]);
                l[t] += e;
#pragma unroll
                for (int d = 0; d < 8; d++)
                    acc[t][d] = fmaf(e, vf[d], acc[t][d]);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++)
            kr[u] = kn[u], vr[u] = vn[u];
    }
    /* merge the warp's lane groups (same dims, other keys), then the warps */
#pragma unroll
    for (int o = LPK; o < 32; o <<= 1) {
#pragma unroll
        for (int t = 0; t < HB; t++) {
            const float mo = __shfl_xor_sync(0xffffffffu, m[t], o);
            const float lo = __shfl_xor_sync(0xffffffffu, l[t], o);
            const float mn = fmaxf(m[t], mo);
            const float fa = m[t] == -INFINITY ? 0.0f : exp2f(m[t] - mn);
            const float fb = mo == -INFINITY ? 0.0f : exp2f(mo - mn);
            l[t] = l[t] * fa + lo * fb;
#pragma unroll
            for (int d = 0; d < 8; d++) {
                const float ao = __shfl_xor_sync(0xffffffffu, acc[t][d], o);
                acc[t][d] = acc[t][d] * fa + ao * fb;
            }
            m[t] = mn;
        }
    }
    if (lane < LPK) {
#pragma unroll
        for (int t = 0; t < HB; t++) {
#pragma unroll
            for (int d = 0; d < 8; d++)
                wacc[warp][t][d0 + d] = acc[t][d];
            if (lane == 0) wm[warp][t] = m[t], wl[warp][t] = l[t];
        }
    }
    __syncthreads();
    for (int e = tid; e < nh * D; e += NT) {
        const int t = e / D, d = e % D;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < NW; w++)
            M = fmaxf(M, wm[w][t]);
        float a = 0.0f, lsum = 0.0f;
#pragma unroll
        for (int w = 0; w < NW; w++) {
            const float f = wm[w][t] == -INFINITY ? 0.0f : exp2f(wm[w][t] - M);
            a += wacc[w][t][d] * f;
            lsum += wl[w][t] * f;
        }
        const int32_t h = h0 + t;
        if (DIRECT) {
            out[(int64_t)i * out_ld + (int64_t)h * D + d] = (uint16_t)f32_to_bf16(a / lsum);
        } else {
            const int64_t u = ((int64_t)qi * geo.n_head + h) * n_split + c;
            ws.acc[u * D + d] = a;
            if (d == 0) ws.m[u] = M, ws.l[u] = lsum;
        }
    }
}

template <int D>
static __global__ void __launch_bounds__(D)
    decode_combine_kernel(uint16_t *__restrict__ out, const int32_t *__restrict__ pos,
                          const int32_t *__restrict__ seq, const int32_t *__restrict__ dec,
                          attn_geom geo, int32_t chunk, int32_t n_split, dec_ws ws) {
    tops_pdl_enter();
    const int32_t qi = blockIdx.x, h = blockIdx.y, d = threadIdx.x;
    const int32_t i = dec[qi], p = pos[i], s = seq[i];
    uint16_t *o = out + (int64_t)i * geo.n_head * D + (int64_t)h * D;
    if (p < 0 || p >= geo.n_ctx || s < 0 || s >= geo.n_seq || p >= chunk * n_split) {
        o[d] = 0x7fc0u;
        return;
    }
    const int32_t nv = (p + chunk) / chunk; /* ranges holding keys: ceil((p + 1) / chunk) */
    const int64_t u0 = ((int64_t)qi * geo.n_head + h) * n_split;
    float M = -INFINITY;
    for (int32_t c = 0; c < nv; c++)
        M = fmaxf(M, ws.m[u0 + c]);
    float l = 0.0f, a = 0.0f;
    for (int32_t c = 0; c < nv; c++) {
        const float f = exp2f(ws.m[u0 + c] - M);
        l += ws.l[u0 + c] * f;
        a += ws.acc[(u0 + c) * D + d] * f;
    }
    o[d] = (uint16_t)f32_to_bf16(a / l);
}

/* The launch's key ranges: enough splits to fill the SMs, chunks no shorter than the minimum (a
 * multiple of DEC_KT), no more than the workspace holds. They cover max_len rounded up to a power
 * of two (at least DEC_KT, at most n_ctx), not max_len itself: the ranges then stay the same while
 * the sequences grow, so a decode step's CUDA graph (keyed by them, models/backend_cuda.c) is
 * captured about log2(n_ctx) times over a generation, not at every token; ranges past a query's
 * position are empty and return at once. Host arithmetic; the same numbers for the same
 * arguments. */
static void decode_split(int n_sm, const attn_geom &geo, int32_t D, int32_t n_dec, int32_t max_len,
                         const float *ws, size_t ws_bytes, int32_t *chunk_out, int32_t *n_split) {
    const int HB = dec_hb(n_sm, geo, n_dec);
    int64_t bucket = DEC_KT;
    while (bucket < max_len) bucket *= 2;
    if (bucket > geo.n_ctx) bucket = geo.n_ctx > max_len ? geo.n_ctx : max_len;
    max_len = (int32_t)bucket;
    const int32_t G = geo.n_head / geo.n_head_kv, n_hb = (G + HB - 1) / HB;
    const int64_t base_blocks = (int64_t)n_dec * geo.n_head_kv * n_hb;
    int64_t want = ((int64_t)DEC_BLOCKS_PER_SM * n_sm + base_blocks - 1) / base_blocks;
    const int64_t by_len =
        (max_len + TINFER_OP_CUDA_DECODE_MIN_CHUNK - 1) / TINFER_OP_CUDA_DECODE_MIN_CHUNK;
    const size_t per_split = tinfer_op_cuda_attention_ws_bytes(n_dec, 1, geo.n_head, D);
    const int64_t by_ws = ws && per_split ? (int64_t)(ws_bytes / per_split) : 1;
    if (want > by_len) want = by_len;
    if (want > by_ws) want = by_ws;
    if (want > 65535) want = 65535; /* gridDim.z */
    if (want < 1) want = 1;
    int32_t chunk = (int32_t)((max_len + want - 1) / want);
    chunk = (chunk + DEC_KT - 1) / DEC_KT * DEC_KT;
    *chunk_out = chunk;
    *n_split = (max_len + chunk - 1) / chunk;
}

/* The kernel instance for a launch: head batch HB, single or split form, fused RoPE or not, 256
 * or 128 threads. */
template <int D, bool DIRECT, int HB>
static auto dec_pick(bool rope, bool few) {
    return rope ? (few ? decode_kernel<D, DIRECT, true, DEC_THREADS_FEW, HB>
                       : decode_kernel<D, DIRECT, true, DEC_THREADS_MANY, HB>)
                : (few ? decode_kernel<D, DIRECT, false, DEC_THREADS_FEW, HB>
                       : decode_kernel<D, DIRECT, false, DEC_THREADS_MANY, HB>);
}

template <int D>
static tinfer_status decode_launch(uint16_t *out, const uint16_t *qkv, const tinfer_op_cuda_kv *kv,
                                   const attn_geom &geo, const int32_t *pos, const int32_t *seq,
                                   const int32_t *dec, int32_t n_dec, int32_t max_len, float *ws,
                                   size_t ws_bytes, const float *inv_freq, cudaStream_t stream,
                                   tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    tinfer_cuda_facts facts;
    const tinfer_status fs = tinfer_cuda_current_facts(&facts, err);
    if (fs != TINFER_OK) return fs;
    {
        const int hb = dec_hb(facts.n_sm, geo, n_dec);
        const int32_t G = geo.n_head / geo.n_head_kv, n_hb = (G + hb - 1) / hb;
        int32_t chunk, n_split;
        decode_split(facts.n_sm, geo, D, n_dec, max_len, ws, ws_bytes, &chunk, &n_split);
        const dim3 grid((unsigned)n_dec, (unsigned)(geo.n_head_kv * n_hb), (unsigned)n_split);
        const int64_t nsl = (int64_t)n_dec * geo.n_head * n_split;
        const dec_ws w = {ws, ws ? ws + nsl * D : nullptr, ws ? ws + nsl * (D + 1) : nullptr};
        const bool rope = inv_freq != nullptr;
        const bool few = (int64_t)grid.x * grid.y * grid.z < facts.n_sm;
        const int nt = few ? DEC_THREADS_FEW : DEC_THREADS_MANY;
        auto *direct = hb == 1 ? dec_pick<D, true, 1>(rope, few) : dec_pick<D, true, DEC_HB>(rope, few);
        auto *split = hb == 1 ? dec_pick<D, false, 1>(rope, few) : dec_pick<D, false, DEC_HB>(rope, few);
        if (n_split == 1) {
            TOPS_LAUNCH(err, "attention decode_kernel", direct, grid, nt, 0, stream, out, qkv,
                        kv->k, kv->v, pos, seq, dec, geo, chunk, 1, w, inv_freq, kv->k, kv->v);
        } else {
            TOPS_LAUNCH(err, "attention decode_kernel (split)", split, grid, nt, 0, stream, out,
                        qkv, kv->k, kv->v, pos, seq, dec, geo, chunk, n_split, w, inv_freq,
                        kv->k, kv->v);
            auto *combine = decode_combine_kernel<D>;
            TOPS_LAUNCH(err, "attention decode_combine_kernel", combine,
                        dim3((unsigned)n_dec, (unsigned)geo.n_head), D, 0, stream, out, pos, seq,
                        dec, geo, chunk, n_split, w);
        }
    }
cleanup:
    return status;
}

static tinfer_status decode_entry(uint16_t *out, const uint16_t *qkv, const tinfer_op_cuda_kv *kv,
                                  int32_t layer, const float *inv_freq, const int32_t *pos,
                                  const int32_t *seq, const int32_t *dec, int32_t n_dec,
                                  int32_t max_len, float *ws, size_t ws_bytes, cudaStream_t stream,
                                  tinfer_err *err) {
    attn_geom geo;
    const tinfer_status st = attn_check(kv, layer, out, qkv, &geo, "attention_decode", err);
    if (st != TINFER_OK) return st;
    TOPS_REQUIRE(err, n_dec >= 0, "attention_decode", "n_dec %d < 0", n_dec);
    if (n_dec == 0) return TINFER_OK;
    TOPS_REQUIRE(err, pos && seq && dec, "attention_decode", "NULL pos/seq/dec");
    TOPS_REQUIRE(err, max_len >= 1 && max_len <= kv->n_ctx, "attention_decode",
                 "max_len %d outside [1, n_ctx %d]", max_len, kv->n_ctx);
    TOPS_REQUIRE(err, !ws || tops_host_aligned(ws, 16), "attention_decode",
                 "workspace not 16-byte aligned");
    if (kv->head_dim == 64)
        return decode_launch<64>(out, qkv, kv, geo, pos, seq, dec, n_dec, max_len, ws, ws_bytes,
                                 inv_freq, stream, err);
    return decode_launch<128>(out, qkv, kv, geo, pos, seq, dec, n_dec, max_len, ws, ws_bytes,
                              inv_freq, stream, err);
}

extern "C" tinfer_status
tinfer_op_cuda_attention_decode(uint16_t *out, const uint16_t *qkv, const tinfer_op_cuda_kv *kv,
                                int32_t layer, const int32_t *pos, const int32_t *seq,
                                const int32_t *dec, int32_t n_dec, int32_t max_len, float *ws,
                                size_t ws_bytes, cudaStream_t stream, tinfer_err *err) {
    return decode_entry(out, qkv, kv, layer, nullptr, pos, seq, dec, n_dec, max_len, ws, ws_bytes,
                        stream, err);
}

extern "C" tinfer_status tinfer_op_cuda_attention_decode_rope(
    uint16_t *out, const uint16_t *qkv, const tinfer_op_cuda_kv *kv, int32_t layer,
    const float *inv_freq, const int32_t *pos, const int32_t *seq, const int32_t *dec,
    int32_t n_dec, int32_t max_len, float *ws, size_t ws_bytes, cudaStream_t stream,
    tinfer_err *err) {
    TOPS_REQUIRE(err, inv_freq != NULL, "attention_decode_rope", "NULL inv_freq");
    return decode_entry(out, qkv, kv, layer, inv_freq, pos, seq, dec, n_dec, max_len, ws, ws_bytes,
                        stream, err);
}

extern "C" void tinfer_op_cuda_attention_decode_force_hb(int hb) {
    dec_hb_forced = hb == 1 ? 1 : hb == DEC_HB ? DEC_HB : 0;
}

extern "C" tinfer_status tinfer_op_cuda_attention_decode_split(const tinfer_op_cuda_kv *kv,
                                                              int32_t n_dec, int32_t max_len,
                                                              const float *ws, size_t ws_bytes,
                                                              int32_t *chunk, int32_t *n_split,
                                                              tinfer_err *err) {
    TOPS_REQUIRE(err, kv && chunk && n_split && n_dec >= 1 && max_len >= 1 &&
                          kv->n_head_kv > 0 && kv->n_head % kv->n_head_kv == 0,
                 "attention_decode_split", "bad arguments (n_dec %d, max_len %d)", (int)n_dec,
                 (int)max_len);
    tinfer_cuda_facts facts;
    const tinfer_status fs = tinfer_cuda_current_facts(&facts, err);
    if (fs != TINFER_OK) return fs;
    attn_geom geo;
    memset(&geo, 0, sizeof geo);
    geo.n_head = kv->n_head;
    geo.n_head_kv = kv->n_head_kv;
    geo.n_ctx = kv->n_ctx;
    decode_split(facts.n_sm, geo, kv->head_dim, n_dec, max_len, ws, ws_bytes, chunk, n_split);
    return TINFER_OK;
}

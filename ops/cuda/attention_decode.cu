/*
 * attention_decode.cu — split-KV attention for single queries (flash-decoding), the batch plan
 * that sorts a batch's queries into decode queries and prefill tiles, and the workspace size.
 * Reference: ops/ref/attention.c (causal GQA, scale 1/sqrt(head_dim), F32 softmax).
 * SIMT (CUDA cores, F32 throughout): one query's scores are a vector-matrix product whose cost is
 * reading the cache once; tensor cores would idle on it.
 *
 * Work split (Dao et al. 2023, "Flash-Decoding for long-context inference"): a block owns one
 * (query, KV head g, batch of up to DEC_HB query heads of g, key range c). All query heads of a
 * KV head share the block, so each K/V row is read once per GQA group. The launcher cuts 0..L
 * into chunks of `chunk` rows (a multiple of DEC_KT, >= TINFER_OP_CUDA_DECODE_MIN_CHUNK unless
 * L is shorter), as many as fill the GPU (about 2 blocks per SM) and the workspace allows.
 * Inside a block, keys go in tiles of DEC_KT = 64 rows:
 *   scores   D/8 lanes per key, 16-byte loads of 8 BF16 of the K row, a dot product with each
 *            head's q (F32, pre-scaled by scale * log2 e, in shared memory), shuffle-reduced
 *            over the D/8 lanes;
 *   softmax  one warp per head: online update in the log2 domain (running max m, running sum
 *            l, p = 2^(s - m), rescale factor 2^(m_old - m_new); Milakov & Gimelshein 2018);
 *   P V      each thread owns two output columns of every head for a subset of the tile's keys
 *            (32-bit loads of the V row: a row is read by D/2 consecutive threads), the partial
 *            accumulators summed over the key subsets at the end in shared memory.
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
#include <string.h>

using namespace tops;

#define DEC_THREADS 128
#define DEC_HB 8  /* query heads per block (a GQA group larger than this takes several blocks) */
#define DEC_KT 64 /* keys per tile */
/* Blocks per SM the split aims for: enough resident blocks to hide the cache reads' latency. */
#define DEC_BLOCKS_PER_SM 2

/* ---- host: the plan and the workspace ---- */

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

/* ROPE: the q, k, v of each query are the QKV GEMM's unrotated output; the block rotates its q
 * heads itself, and a block whose key range holds the query's own row p also rotates k, writes k
 * and v into the cache row p (through kw / vw: the same buffers as kc / vc; every head batch of
 * that range writes the same bytes) and reads row p from shared memory, not back from global
 * memory (kc / vc may be read through the non-coherent path). The arithmetic is rope_kv.cu's,
 * operation for operation (cos / sin in double, rounded once; __fmul_rn / __fsub_rn; BF16
 * rounding of the rotated values), so the fused step's outputs and cache rows are bit-identical
 * to rope_kv followed by this kernel without ROPE (tests/ops_cuda checks it). */
template <int D, bool DIRECT, bool ROPE>
static __global__ void __launch_bounds__(DEC_THREADS)
    decode_kernel(uint16_t *__restrict__ out, const uint16_t *__restrict__ qkv,
                  const uint16_t *__restrict__ kc, const uint16_t *__restrict__ vc,
                  const int32_t *__restrict__ pos, const int32_t *__restrict__ seq,
                  const int32_t *__restrict__ dec, attn_geom geo, int32_t chunk, int32_t n_split,
                  dec_ws ws, const float *__restrict__ inv_freq, uint16_t *kw, uint16_t *vw) {
    tops_pdl_enter();
    constexpr int LPK = D / 8;                 /* lanes per key in the score pass */
    constexpr int KPW = 32 / LPK;              /* keys per warp per step */
    constexpr int NKG = DEC_THREADS / (D / 2); /* key groups in the P V pass */
    __shared__ float qs[DEC_HB][D];
    __shared__ float ss[DEC_HB][DEC_KT];
    __shared__ float red[NKG][DEC_HB][D];
    __shared__ float corr_sh[DEC_HB], l_sh[DEC_HB], m_sh[DEC_HB];

    const int32_t qi = blockIdx.x, c = blockIdx.z;
    const int32_t G = geo.n_head / geo.n_head_kv, n_hb = (G + DEC_HB - 1) / DEC_HB;
    const int32_t g = blockIdx.y / n_hb, hb = blockIdx.y % n_hb;
    const int32_t h0 = g * G + hb * DEC_HB, nh = min(DEC_HB, G - hb * DEC_HB);
    const int32_t i = dec[qi], p = pos[i], s = seq[i];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int64_t out_ld = (int64_t)geo.n_head * D;
    /* invalid metadata, or a position past what the host's max_len planned for */
    if (p < 0 || p >= geo.n_ctx || s < 0 || s >= geo.n_seq || p >= chunk * n_split) {
        if (DIRECT)
            for (int e = tid; e < nh * D; e += DEC_THREADS)
                out[(int64_t)i * out_ld + (int64_t)h0 * D + e] = 0x7fc0u;
        return; /* split form: the combine kernel writes the NaN row */
    }
    const int32_t r0 = c * chunk, r1 = min(p + 1, r0 + chunk);
    if (r0 >= r1) return; /* an empty key range of a shorter query: the combine skips it */

    const int32_t kvd = geo.n_head_kv * D;
    const int64_t cbase = attn_cache_row(geo, s, 0, D) + (int64_t)g * D;
    const float qscale = rsqrtf((float)D) * 1.4426950408889634f; /* scale * log2(e) */
    const uint16_t *qrow = qkv + (int64_t)i * geo.qkv_ld + (int64_t)h0 * D;
    __shared__ float cs_sh[ROPE ? D / 2 : 1], sn_sh[ROPE ? D / 2 : 1];
    __shared__ __align__(16) uint16_t kp_sh[ROPE ? D : 8], vp_sh[ROPE ? D : 8];
    const bool own_row = ROPE && p < r0 + chunk; /* this range holds row p */
    if (ROPE) {
        rope_table(p, inv_freq, D / 2, cs_sh, sn_sh, tid, DEC_THREADS);
        __syncthreads();
    }
    for (int e = tid; e < DEC_HB * D; e += DEC_THREADS) {
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
        for (int d = tid; d < D; d += DEC_THREADS) {
            const uint16_t kv_ = rope_elem<D>(krow, d, cs_sh, sn_sh), vv = vrow[d];
            kp_sh[d] = kv_;
            vp_sh[d] = vv;
            kw[crow + d] = kv_;
            vw[crow + d] = vv;
        }
    }

    float mr[DEC_HB / 4], lr[DEC_HB / 4]; /* warp w owns heads w and w + 4 */
#pragma unroll
    for (int k = 0; k < DEC_HB / 4; k++)
        mr[k] = -INFINITY, lr[k] = 0.0f;
    const int dp = tid % (D / 2), kg = tid / (D / 2);
    float acc[DEC_HB][2];
#pragma unroll
    for (int t = 0; t < DEC_HB; t++)
        acc[t][0] = acc[t][1] = 0.0f;
    __syncthreads();

    for (int32_t j0 = r0; j0 < r1; j0 += DEC_KT) {
        const int32_t nk = min(DEC_KT, r1 - j0);
        /* scores */
        const int sl = lane % LPK;
        for (int jj = warp * KPW + lane / LPK; jj < DEC_KT; jj += (DEC_THREADS / 32) * KPW) {
            float d[DEC_HB];
#pragma unroll
            for (int t = 0; t < DEC_HB; t++)
                d[t] = 0.0f;
            if (jj < nk) {
                const uint4 u =
                    own_row && j0 + jj == p
                        ? *reinterpret_cast<const uint4 *>(kp_sh + sl * 8)
                        : *reinterpret_cast<const uint4 *>(kc + cbase + (int64_t)(j0 + jj) * kvd +
                                                           sl * 8);
                const float kf[8] = {bf16_to_f32(u.x), bf16_to_f32(u.x >> 16),
                                     bf16_to_f32(u.y), bf16_to_f32(u.y >> 16),
                                     bf16_to_f32(u.z), bf16_to_f32(u.z >> 16),
                                     bf16_to_f32(u.w), bf16_to_f32(u.w >> 16)};
#pragma unroll
                for (int t = 0; t < DEC_HB; t++)
                    if (t < nh)
#pragma unroll
                        for (int e = 0; e < 8; e++)
                            d[t] += qs[t][sl * 8 + e] * kf[e];
            }
#pragma unroll
            for (int t = 0; t < DEC_HB; t++) {
#pragma unroll
                for (int o = LPK / 2; o > 0; o >>= 1)
                    d[t] += __shfl_xor_sync(0xffffffffu, d[t], o);
            }
            if (sl == 0)
#pragma unroll
                for (int t = 0; t < DEC_HB; t++)
                    ss[t][jj] = jj < nk ? d[t] : -INFINITY;
        }
        __syncthreads();
        /* online softmax, one warp per head */
#pragma unroll
        for (int k = 0; k < DEC_HB / 4; k++) {
            const int t = warp + 4 * k;
            if (t >= nh) continue;
            const float s0 = ss[t][lane], s1 = ss[t][lane + 32];
            const float mn = fmaxf(mr[k], warp_max(fmaxf(s0, s1))); /* finite: nk >= 1 */
            const float p0 = exp2f(s0 - mn), p1 = exp2f(s1 - mn);
            const float corr = exp2f(mr[k] - mn); /* 0 on the first tile (m = -inf) */
            lr[k] = lr[k] * corr + warp_sum(p0 + p1);
            mr[k] = mn;
            ss[t][lane] = p0;
            ss[t][lane + 32] = p1;
            if (lane == 0) corr_sh[t] = corr;
        }
        __syncthreads();
        /* P V */
#pragma unroll
        for (int t = 0; t < DEC_HB; t++) {
            if (t < nh) {
                const float cf = corr_sh[t];
                acc[t][0] *= cf;
                acc[t][1] *= cf;
            }
        }
        for (int jj = kg; jj < nk; jj += NKG) {
            const uint32_t v2 =
                own_row && j0 + jj == p
                    ? *reinterpret_cast<const uint32_t *>(vp_sh + 2 * dp)
                    : *reinterpret_cast<const uint32_t *>(vc + cbase + (int64_t)(j0 + jj) * kvd +
                                                          2 * dp);
            const float v0 = bf16_to_f32(v2), v1 = bf16_to_f32(v2 >> 16);
#pragma unroll
            for (int t = 0; t < DEC_HB; t++) {
                if (t < nh) {
                    const float pj = ss[t][jj];
                    acc[t][0] += pj * v0;
                    acc[t][1] += pj * v1;
                }
            }
        }
        __syncthreads(); /* ss and corr_sh are rewritten by the next tile */
    }

    /* sum the key groups' partial accumulators */
#pragma unroll
    for (int t = 0; t < DEC_HB; t++) {
        red[kg][t][2 * dp] = acc[t][0];
        red[kg][t][2 * dp + 1] = acc[t][1];
    }
#pragma unroll
    for (int k = 0; k < DEC_HB / 4; k++) {
        const int t = warp + 4 * k;
        if (t < nh && lane == 0) l_sh[t] = lr[k], m_sh[t] = mr[k];
    }
    __syncthreads();
    for (int e = tid; e < nh * D; e += DEC_THREADS) {
        const int t = e / D, d = e % D;
        float a = 0.0f;
#pragma unroll
        for (int q = 0; q < NKG; q++)
            a += red[q][t][d];
        const int32_t h = h0 + t;
        if (DIRECT) {
            out[(int64_t)i * out_ld + (int64_t)h * D + d] = (uint16_t)f32_to_bf16(a / l_sh[t]);
        } else {
            const int64_t u = ((int64_t)qi * geo.n_head + h) * n_split + c;
            ws.acc[u * D + d] = a;
            if (d == 0) ws.m[u] = m_sh[t], ws.l[u] = l_sh[t];
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
    int64_t bucket = DEC_KT;
    while (bucket < max_len) bucket *= 2;
    if (bucket > geo.n_ctx) bucket = geo.n_ctx > max_len ? geo.n_ctx : max_len;
    max_len = (int32_t)bucket;
    const int32_t G = geo.n_head / geo.n_head_kv, n_hb = (G + DEC_HB - 1) / DEC_HB;
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

template <int D>
static tinfer_status decode_launch(uint16_t *out, const uint16_t *qkv, const tinfer_op_cuda_kv *kv,
                                   const attn_geom &geo, const int32_t *pos, const int32_t *seq,
                                   const int32_t *dec, int32_t n_dec, int32_t max_len, float *ws,
                                   size_t ws_bytes, const float *inv_freq, cudaStream_t stream,
                                   tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    tinfer_cuda_facts facts;
    const int32_t G = geo.n_head / geo.n_head_kv, n_hb = (G + DEC_HB - 1) / DEC_HB;
    const tinfer_status fs = tinfer_cuda_current_facts(&facts, err);
    if (fs != TINFER_OK) return fs;
    {
        int32_t chunk, n_split;
        decode_split(facts.n_sm, geo, D, n_dec, max_len, ws, ws_bytes, &chunk, &n_split);
        const dim3 grid((unsigned)n_dec, (unsigned)(geo.n_head_kv * n_hb), (unsigned)n_split);
        const int64_t nsl = (int64_t)n_dec * geo.n_head * n_split;
        const dec_ws w = {ws, ws ? ws + nsl * D : nullptr, ws ? ws + nsl * (D + 1) : nullptr};
        const bool rope = inv_freq != nullptr;
        auto *direct = rope ? decode_kernel<D, true, true> : decode_kernel<D, true, false>;
        auto *split = rope ? decode_kernel<D, false, true> : decode_kernel<D, false, false>;
        if (n_split == 1) {
            TOPS_LAUNCH(err, "attention decode_kernel", direct, grid, DEC_THREADS, 0, stream, out,
                        qkv, kv->k, kv->v, pos, seq, dec, geo, chunk, 1, w, inv_freq, kv->k,
                        kv->v);
        } else {
            TOPS_LAUNCH(err, "attention decode_kernel (split)", split, grid, DEC_THREADS, 0, stream,
                        out, qkv, kv->k, kv->v, pos, seq, dec, geo, chunk, n_split, w, inv_freq,
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

/*
 * attention.c — causal GQA attention of n query tokens of one sequence against its KV cache.
 *
 * Reference semantics (HF Llama eager attention, F32):
 *   head h reads KV head g = h / (n_head / n_head_kv)
 *   s_j = (q[i, h, :] · k[j, g, :]) * (1 / sqrt(head_dim)),  j = 0 .. pos[i]
 *   p_j = exp(s_j - max_j s_j) / sum_j exp(s_j - max_j s_j)
 *   out[i, h, :] = sum_j p_j v[j, g, :]
 * Portable path: exactly that, two passes over the keys (max, then exp/accumulate into out), no
 * scratch memory. AVX2 path: the heads sharing one KV head (up to 4 at a time) are processed
 * together so each K/V row is read once per group; keys in blocks of ATT_BLK with an online
 * softmax (running max m, running sum l, out rescaled by exp(m_old - m_new) when the max grows;
 * Milakov & Gimelshein 2018, "Online normalizer calculation for softmax"), the block's scores and
 * probabilities kept on the stack, exp from ops_simd.h.
 * Threads: OpenMP over (query, KV head, head batch) items, interleaved so the causal triangle's
 * long and short rows spread over the threads; single-threaded when the whole call is small.
 * When there are too few items for the threads (decode: 1 query x 3 KV heads on 2 threads) the
 * keys of each item are split into ranges whose partial softmax states are merged afterwards
 * (Dao et al. 2023, "Flash-Decoding"), so every thread streams its share of the cache.
 * Constraints: n_head % n_head_kv == 0, out does not overlap q/k/v, pos[i] < rows in the cache.
 */
#include "ops/ref/ops_cpu.h"
#include "ops/ref/ops_simd.h"

#include <math.h>
#include <omp.h>
#include <string.h>

/* Keys per online-softmax block: 64 keys x 4 heads of scores = 1 KiB of stack, and the block's
 * K/V rows (64 x head_dim 64 x 4 B = 16 KiB each) stay in L1/L2 between the two passes. */
#define ATT_BLK 64
/* Heads per batch in the AVX2 path: 4 accumulators + K row chunk + q chunk fit the 16 ymm. */
#define ATT_HB 4
/* Multiply-adds below which the call stays single-threaded (~10 us on one core, the order of
 * an OpenMP team wake-up; dev box, 2 cores). */
#define ATT_PAR_MIN ((int64_t)1 << 16)
/* Key split for decode: at least ATT_SPLIT_MIN keys per range (shorter ranges cost more in the
 * merge and the fork than they save; SmolLM2 decode at context 128-192 on 2 threads, attention
 * 75 ms -> 44 ms per 64 tokens with 64 instead of 256, the example programs' short spin-wait
 * making a fork cost microseconds, tests/model/perf_model.c); partial outputs of at most ATT_SPLIT_FLOATS floats (32 KiB of stack)
 * and ATT_SPLIT_PARTS ranges, else no split. */
#define ATT_SPLIT_MIN 64
#define ATT_SPLIT_FLOATS 8192
#define ATT_SPLIT_PARTS 64

static void attn_head_scalar(float *o, const float *qh, const float *kg, const float *vg,
                             int64_t kvs, int64_t L, int32_t hd, float scale) {
    float m = -INFINITY;
    for (int64_t j = 0; j < L; j++) {
        const float *kj = kg + j * kvs;
        float s = 0.0f;
        for (int32_t d = 0; d < hd; d++) s += qh[d] * kj[d];
        s *= scale;
        m = s > m ? s : m;
    }
    memset(o, 0, (size_t)hd * sizeof(float));
    float l = 0.0f;
    for (int64_t j = 0; j < L; j++) {
        const float *kj = kg + j * kvs, *vj = vg + j * kvs;
        float s = 0.0f;
        for (int32_t d = 0; d < hd; d++) s += qh[d] * kj[d];
        float p = expf(s * scale - m);
        l += p;
        for (int32_t d = 0; d < hd; d++) o[d] += p * vj[d];
    }
    float inv = 1.0f / l;
    for (int32_t d = 0; d < hd; d++) o[d] *= inv;
}

#ifdef TINFER_OPS_X86
/* Keys kg/vg rows 0 .. L-1 for nh heads: oh[t] = sum_j exp(s_j - m[t]) v_j (unnormalized),
 * m[t] = max_j s_j, l[t] = sum_j exp(s_j - m[t]). */
TINFER_OPS_AVX2_INLINE void attn_batch_body(const int nh, float *const *oh,
                                            const float *const *qh, const float *kg,
                                            const float *vg, int64_t kvs, int64_t L, int32_t hd,
                                            float scale, float *m, float *l) {
    _Alignas(32) float s[ATT_HB][ATT_BLK];
    int32_t hd8 = hd & ~7;
    for (int t = 0; t < nh; t++) {
        m[t] = -INFINITY;
        l[t] = 0.0f;
        memset(oh[t], 0, (size_t)hd * sizeof(float));
    }
    for (int64_t j0 = 0; j0 < L; j0 += ATT_BLK) {
        int nb = (int)(L - j0 < ATT_BLK ? L - j0 : ATT_BLK);
        /* scores of the block, all heads of the batch per K row */
        for (int jj = 0; jj < nb; jj++) {
            const float *kj = kg + (j0 + jj) * kvs;
            __m256 acc[ATT_HB];
            for (int t = 0; t < nh; t++) acc[t] = _mm256_setzero_ps();
            for (int32_t d = 0; d < hd8; d += 8) {
                __m256 kv = _mm256_loadu_ps(kj + d);
                for (int t = 0; t < nh; t++)
                    acc[t] = _mm256_fmadd_ps(_mm256_loadu_ps(qh[t] + d), kv, acc[t]);
            }
            for (int t = 0; t < nh; t++) {
                float sc = tinfer_hsum256(acc[t]);
                for (int32_t d = hd8; d < hd; d++) sc += qh[t][d] * kj[d];
                s[t][jj] = sc * scale;
            }
        }
        /* online softmax update per head; s becomes the unnormalized probabilities */
        for (int t = 0; t < nh; t++) {
            float bm = s[t][0];
            for (int jj = 1; jj < nb; jj++) bm = s[t][jj] > bm ? s[t][jj] : bm;
            float mn = bm > m[t] ? bm : m[t];
            float corr = expf(m[t] - mn); /* 0 on the first block (m = -inf) */
            __m256 mb = _mm256_set1_ps(mn), sum = _mm256_setzero_ps();
            int jj = 0;
            for (; jj + 8 <= nb; jj += 8) {
                __m256 p = tinfer_exp256(_mm256_sub_ps(_mm256_load_ps(&s[t][jj]), mb));
                _mm256_store_ps(&s[t][jj], p);
                sum = _mm256_add_ps(sum, p);
            }
            float bl = tinfer_hsum256(sum);
            for (; jj < nb; jj++) {
                s[t][jj] = expf(s[t][jj] - mn);
                bl += s[t][jj];
            }
            l[t] = l[t] * corr + bl;
            if (j0 > 0 && corr != 1.0f) {
                __m256 cv = _mm256_set1_ps(corr);
                int32_t d = 0;
                for (; d < hd8; d += 8)
                    _mm256_storeu_ps(oh[t] + d, _mm256_mul_ps(_mm256_loadu_ps(oh[t] + d), cv));
                for (; d < hd; d++) oh[t][d] *= corr;
            }
            m[t] = mn;
        }
        /* out += P · V over the block, one 8-wide column chunk at a time in registers */
        const float *vb = vg + j0 * kvs;
        for (int32_t d = 0; d < hd8; d += 8) {
            __m256 o[ATT_HB];
            for (int t = 0; t < nh; t++) o[t] = _mm256_loadu_ps(oh[t] + d);
            for (int jj = 0; jj < nb; jj++) {
                __m256 vv = _mm256_loadu_ps(vb + jj * kvs + d);
                for (int t = 0; t < nh; t++)
                    o[t] = _mm256_fmadd_ps(_mm256_set1_ps(s[t][jj]), vv, o[t]);
            }
            for (int t = 0; t < nh; t++) _mm256_storeu_ps(oh[t] + d, o[t]);
        }
        for (int32_t d = hd8; d < hd; d++)
            for (int jj = 0; jj < nb; jj++)
                for (int t = 0; t < nh; t++) oh[t][d] += s[t][jj] * vb[jj * kvs + d];
    }
}

static TINFER_OPS_AVX2 void attn_batch_avx2(int nh, float *const *oh, const float *const *qh,
                                            const float *kg, const float *vg, int64_t kvs,
                                            int64_t L, int32_t hd, float scale, float *m,
                                            float *l) {
    switch (nh) {
    case 4: attn_batch_body(4, oh, qh, kg, vg, kvs, L, hd, scale, m, l); break;
    case 3: attn_batch_body(3, oh, qh, kg, vg, kvs, L, hd, scale, m, l); break;
    case 2: attn_batch_body(2, oh, qh, kg, vg, kvs, L, hd, scale, m, l); break;
    default: attn_batch_body(1, oh, qh, kg, vg, kvs, L, hd, scale, m, l); break;
    }
}
#endif

void tinfer_op_attention(float *out, int64_t out_stride, const float *q, int64_t q_stride,
                         const float *k, const float *v, int64_t n, const int32_t *pos,
                         int32_t n_head, int32_t n_head_kv, int32_t head_dim) {
    if (n <= 0 || n_head <= 0 || n_head_kv <= 0 || head_dim <= 0 || n_head % n_head_kv) return;
    const int32_t G = n_head / n_head_kv;          /* query heads per KV head */
    const int32_t nbat = (G + ATT_HB - 1) / ATT_HB; /* head batches per KV head */
    const int64_t kvs = (int64_t)n_head_kv * head_dim;
    const float scale = (float)(1.0 / sqrt((double)head_dim));
    const bool avx2 = tinfer_ops_cpu_isa_avx2();
    const int64_t items = n * n_head_kv * nbat;
    int64_t work = 0, lmin = INT64_MAX;
    for (int64_t i = 0; i < n; i++) {
        work += ((int64_t)pos[i] + 1) * n_head * head_dim;
        lmin = (int64_t)pos[i] + 1 < lmin ? (int64_t)pos[i] + 1 : lmin;
    }
    /* One query (decode) forks only when its keys can be split (>= 2 ranges of ATT_SPLIT_MIN):
     * below that, the 3 KV-head items of a 9/3-head model cannot be balanced over 2 threads and
     * the whole call is a few microseconds, the order of a parallel region's wake-up and join. */
    const bool par = work >= ATT_PAR_MIN && (n > 1 ? items > 1 : lmin >= 2 * ATT_SPLIT_MIN);
    const int nthr = par && !omp_in_parallel() ? omp_get_max_threads() : 1;

    /* Key split (flash-decoding): too few items to share between the threads (decode), so each
     * item's keys are cut into S ranges computed independently, then merged:
     * m = max m_c, l = sum l_c e^(m_c - m), out = sum o_c e^(m_c - m) / l. */
    int64_t S = 1;
    if (avx2 && nthr > 1 && items < 2 * nthr) {
        S = nthr;
        if (S > lmin / ATT_SPLIT_MIN) S = lmin / ATT_SPLIT_MIN;
        if (S > 1 && (items * S * ATT_HB * head_dim > ATT_SPLIT_FLOATS || items * S > ATT_SPLIT_PARTS))
            S = 1;
        if (S < 1) S = 1;
    }
    _Alignas(32) float part_o[S > 1 ? ATT_SPLIT_FLOATS : 1];
    float part_m[S > 1 ? ATT_SPLIT_PARTS * ATT_HB : 1], part_l[S > 1 ? ATT_SPLIT_PARTS * ATT_HB : 1];

#pragma omp parallel for schedule(static, 1) num_threads(nthr) if (nthr > 1)
    for (int64_t u = 0; u < items * S; u++) {
        int64_t it = u / S, c = u % S;
        int64_t i = it / (n_head_kv * nbat);
        int32_t g = (int32_t)(it / nbat % n_head_kv), b = (int32_t)(it % nbat);
        int32_t h0 = g * G + b * ATT_HB, nh = G - b * ATT_HB < ATT_HB ? G - b * ATT_HB : ATT_HB;
        int64_t L = (int64_t)pos[i] + 1, ja = L * c / S, jb = L * (c + 1) / S;
        const float *kg = k + (int64_t)g * head_dim, *vg = v + (int64_t)g * head_dim;
        float *oh[ATT_HB];
        const float *qh[ATT_HB];
        for (int t = 0; t < nh; t++) {
            oh[t] = S > 1 ? part_o + (u * ATT_HB + t) * head_dim
                          : out + i * out_stride + (int64_t)(h0 + t) * head_dim;
            qh[t] = q + i * q_stride + (int64_t)(h0 + t) * head_dim;
        }
#ifdef TINFER_OPS_X86
        if (avx2) {
            float m[ATT_HB], l[ATT_HB];
            attn_batch_avx2(nh, oh, qh, kg + ja * kvs, vg + ja * kvs, kvs, jb - ja, head_dim, scale, m, l);
            for (int t = 0; t < nh; t++) {
                if (S > 1) {
                    part_m[u * ATT_HB + t] = m[t];
                    part_l[u * ATT_HB + t] = l[t];
                    continue;
                }
                float inv = 1.0f / l[t];
                for (int32_t d = 0; d < head_dim; d++) oh[t][d] *= inv;
            }
            continue;
        }
#endif
        (void)avx2;
        (void)ja;
        (void)jb;
        for (int t = 0; t < nh; t++) attn_head_scalar(oh[t], qh[t], kg, vg, kvs, L, head_dim, scale);
    }
    if (S == 1) return;
    for (int64_t it = 0; it < items; it++) {
        int64_t i = it / (n_head_kv * nbat);
        int32_t g = (int32_t)(it / nbat % n_head_kv), b = (int32_t)(it % nbat);
        int32_t h0 = g * G + b * ATT_HB, nh = G - b * ATT_HB < ATT_HB ? G - b * ATT_HB : ATT_HB;
        for (int t = 0; t < nh; t++) {
            float m = -INFINITY, l = 0.0f;
            for (int64_t c = 0; c < S; c++) m = part_m[(it * S + c) * ATT_HB + t] > m ? part_m[(it * S + c) * ATT_HB + t] : m;
            float *o = out + i * out_stride + (int64_t)(h0 + t) * head_dim;
            memset(o, 0, (size_t)head_dim * sizeof(float));
            for (int64_t c = 0; c < S; c++) {
                int64_t u = it * S + c;
                float f = expf(part_m[u * ATT_HB + t] - m);
                l += part_l[u * ATT_HB + t] * f;
                const float *po = part_o + (u * ATT_HB + t) * head_dim;
                for (int32_t d = 0; d < head_dim; d++) o[d] += f * po[d];
            }
            float inv = 1.0f / l;
            for (int32_t d = 0; d < head_dim; d++) o[d] *= inv;
        }
    }
}

/*
 * test_ops_cuda.cu — the CUDA ops (ops/cuda/ops_cuda.h) against their CPU references (ops/ref/)
 * on the same inputs: embed, rmsnorm (with the row gather), rope_kv, argmax, greedy_feed, cast here;
 * attention (prefill and decode) in test_ops_cuda_attn.cu, the LM head's argmax in test_lm_argmax.cu.
 *
 * Inputs are random (seeded xorshift, seed printed), never exactly zero, rounded to BF16 where the
 * GPU op takes BF16, and the reference runs on exactly those values. Every output buffer sits
 * between guard bands and starts filled with a NaN sentinel: an unwritten element fails the NaN
 * check, a stray write fails the guard check; NaN never passes a comparison (the checks are
 * written as !(err <= tol)). Host-only checks (argument errors that need no GPU, the attention
 * plan) run first, also without a GPU.
 * Usage: test-ops-cuda [quick]   (quick: smaller shapes, for compute-sanitizer)
 * Exit: 0 pass, 1 fail, 77 no GPU (ctest reports skipped).
 */
#include "gemm/cuda/device.h"
extern "C" {
#include "ops/ref/ops_cpu.h" /* C declarations */
}
#include "tests/ops_cuda/test_ops_cuda.h"

#include <limits.h>

int g_fail = 0, g_cases = 0;
cudaStream_t g_stream = nullptr;
static uint64_t g_rng = 0x2545F4914F6CDD1Dull;

uint32_t rnd_u32(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}

float rnd_f(float scale) {
    float f;
    do {
        f = ((float)(rnd_u32() & 0xffffff) / 16777216.0f * 2.0f - 1.0f) * scale;
    } while (f == 0.0f);
    return f;
}

void verdict(const char *label, int bad) {
    g_cases++;
    if (bad) {
        g_fail++;
        printf("FAIL %s\n", label);
    }
}

static int bits_eq_f32(float a, float b) { return !memcmp(&a, &b, 4); }

/* ---- embed: exact (a widening copy) ---- */
static void test_embed(int32_t n, int32_t E, int32_t V, size_t out_off, int64_t n_clear = -1) {
    char label[128];
    snprintf(label, sizeof label, "embed n=%d E=%d V=%d off=%zu clear=%lld", n, E, V, out_off,
             (long long)n_clear);
    std::vector<uint16_t> table((size_t)V * E);
    for (auto &t : table)
        t = rnd_bf16(2.0f);
    std::vector<int32_t> tok(n);
    for (int32_t i = 0; i < n; i++)
        tok[i] = (int32_t)(rnd_u32() % (uint32_t)V);
    if (n >= 3) tok[1] = -1, tok[2] = V; /* out of range: NaN rows */
    dbuf<uint16_t> dt;
    dbuf<int32_t> di;
    dbuf<float> dout;
    dt.alloc(table.size(), 0);
    dt.put(table);
    di.alloc(tok.size(), 0);
    di.put(tok);
    uint32_t s = SENT_F32;
    float sf;
    memcpy(&sf, &s, 4);
    dout.alloc((size_t)n * E, sf, out_off);
    /* n_clear >= 0: tinfer_op_cuda_embed_clear zeroes that many words (sentinel-filled, guards) */
    dbuf<unsigned long long> dz;
    if (n_clear >= 0) {
        dz.alloc((size_t)n_clear, 0x5a5a5a5a5a5a5a5aull);
        CKT(tinfer_op_cuda_embed_clear(dout.p, dt.p, di.p, n, E, V, dz.p, n_clear, g_stream, &e_));
    } else {
        CKT(tinfer_op_cuda_embed(dout.p, dt.p, di.p, n, E, V, g_stream, &e_));
    }
    CK(cudaStreamSynchronize(g_stream));
    std::vector<float> out = dout.get(), ref((size_t)E);
    int bad = dout.guards_ok(label);
    if (n_clear >= 0) {
        bad |= dz.guards_ok(label);
        const std::vector<unsigned long long> z = dz.get();
        for (size_t i = 0; i < z.size() && !bad; i++)
            if (z[i]) printf("  %s: word %zu not cleared\n", label, i), bad = 1;
    }
    for (int32_t i = 0; i < n && !bad; i++) {
        const bool inval = tok[i] < 0 || tok[i] >= V;
        if (!inval) tinfer_op_embed(ref.data(), table.data(), TINFER_DTYPE_BF16, &tok[i], 1, E);
        for (int32_t d = 0; d < E; d++) {
            const float o = out[(size_t)i * E + d];
            if (inval ? !isnan(o) : !bits_eq_f32(o, ref[d])) {
                printf("  %s: row %d col %d: %g vs %g\n", label, i, d, o, inval ? NAN : ref[d]);
                bad = 1;
                break;
            }
        }
    }
    verdict(label, bad);
    dt.free_(), di.free_(), dout.free_();
    if (n_clear >= 0) dz.free_();
}

/* ---- rmsnorm ----
 * Tolerance: |gpu - ref| <= 2^-8 |ref| per element. The GPU rounds (x r) w to BF16 (<= 2^-9
 * relative) from an r that differs from the reference's double-summed one by a few F32 ulps, so a
 * value near a BF16 rounding boundary may round the other way: at most 1 BF16 ulp = 2^-8
 * relative (normal range; inputs here are far from subnormal). */
static void test_rmsnorm(int32_t n_x, int32_t E, int gather, size_t off) {
    char label[128];
    snprintf(label, sizeof label, "rmsnorm n_x=%d E=%d gather=%d off=%zu", n_x, E, gather, off);
    std::vector<float> x((size_t)n_x * E);
    for (auto &v : x)
        v = rnd_f(4.0f);
    if (n_x > 1) /* one row of large values: the squares must not overflow F32 (1e18 < 3e38) */
        for (int32_t d = 0; d < E; d++)
            x[(size_t)E + d] = rnd_f(1e9f);
    std::vector<uint16_t> w(E);
    for (auto &v : w)
        v = rnd_bf16(2.0f);
    std::vector<int32_t> rows;
    int32_t n_out = n_x;
    if (gather) { /* the LM head's gather: last row, a repeat, the first, an invalid index */
        rows = {n_x - 1, 0, n_x - 1, n_x / 2, n_x, -1};
        n_out = (int32_t)rows.size();
    }
    dbuf<float> dx;
    dbuf<uint16_t> dw, dout;
    dbuf<int32_t> dr;
    dx.alloc(x.size(), 0.0f, off);
    dx.put(x);
    dw.alloc(w.size(), 0, off);
    dw.put(w);
    dout.alloc((size_t)n_out * E, SENT_BF16, off);
    if (gather) {
        dr.alloc(rows.size(), 0);
        dr.put(rows);
    }
    const float eps = 1e-5f;
    CKT(tinfer_op_cuda_rmsnorm(dout.p, dx.p, dw.p, gather ? dr.p : nullptr, n_out, n_x, E, eps,
                               g_stream, &e_));
    CK(cudaStreamSynchronize(g_stream));
    std::vector<uint16_t> out = dout.get();
    std::vector<float> ref((size_t)E);
    int bad = dout.guards_ok(label);
    double maxrel = 0;
    for (int32_t r = 0; r < n_out && !bad; r++) {
        const int32_t src = gather ? rows[r] : r;
        const bool inval = src < 0 || src >= n_x;
        if (!inval)
            tinfer_op_rmsnorm(ref.data(), &x[(size_t)src * E], w.data(), TINFER_DTYPE_BF16, 1, E,
                              eps);
        for (int32_t d = 0; d < E; d++) {
            const float o = tinfer_bf16_to_f32(out[(size_t)r * E + d]);
            if (inval) {
                if (!isnan(o)) bad = 1;
            } else {
                const double rel = fabs((double)o - ref[d]) / fabs((double)ref[d]);
                if (!(rel <= 1.0 / 256)) bad = 1;
                if (rel > maxrel) maxrel = rel;
            }
            if (bad) {
                printf("  %s: row %d col %d: %g vs %g\n", label, r, d, o, inval ? NAN : ref[d]);
                break;
            }
        }
    }
    if (!bad && getenv("TEST_OPS_VERBOSE")) printf("  %s: max rel %.2e\n", label, maxrel);
    verdict(label, bad);
    dx.free_(), dw.free_(), dout.free_(), dr.free_();
}

/* ---- rope_kv ----
 * Tolerance: 1 BF16 ulp per element against bf16(reference) (ops/cuda/rope_kv.cu: identical
 * F32 arithmetic; cos/sin equal unless the two double evaluations straddle an F32 rounding
 * boundary, ~2^-27 per value). The number of inexact elements is printed; it should be 0. */
static int bf16_ulps(uint16_t a, uint16_t b) {
    if ((a & 0x7fff) > 0x7f80 || (b & 0x7fff) > 0x7f80) return INT_MAX; /* NaN */
    const int ia = (a & 0x8000) ? -(int)(a & 0x7fff) : (int)a;
    const int ib = (b & 0x8000) ? -(int)(b & 0x7fff) : (int)b;
    return abs(ia - ib);
}

typedef struct rope_case {
    int32_t n_head, n_head_kv, hd, n_seq, n_layer, n_ctx, layer;
    std::vector<int32_t> lens; /* tokens per sequence in the batch (0: absent) */
    float theta;
} rope_case;

static void test_rope_kv(const rope_case &c) {
    char label[160];
    snprintf(label, sizeof label, "rope_kv heads=%d/%d hd=%d n_ctx=%d layer=%d/%d seqs=%zu",
             c.n_head, c.n_head_kv, c.hd, c.n_ctx, c.layer, c.n_layer, c.lens.size());
    const int32_t hd = c.hd, half = hd / 2, kvd = c.n_head_kv * hd;
    const int32_t QKV = (c.n_head + 2 * c.n_head_kv) * hd;
    std::vector<int32_t> pos, seq;
    for (size_t s = 0; s < c.lens.size(); s++) {
        /* ascending positions, ending anywhere up to n_ctx - 1 */
        const int32_t L = c.lens[s];
        if (!L) continue;
        const int32_t start = (int32_t)(rnd_u32() % (uint32_t)(c.n_ctx - L + 1));
        for (int32_t t = 0; t < L; t++)
            pos.push_back(start + t), seq.push_back((int32_t)s);
    }
    /* one token with invalid metadata at the end: q NaN, cache untouched */
    pos.push_back(c.n_ctx), seq.push_back(0);
    const int32_t n = (int32_t)pos.size();
    std::vector<uint16_t> qkv((size_t)n * QKV);
    for (auto &v : qkv)
        v = rnd_bf16(3.0f);
    std::vector<float> inv(half);
    for (int32_t j = 0; j < half; j++) /* as ops/ref/rope.c's rope_inv_freq */
        inv[j] = 1.0f / (float)pow((double)c.theta, (double)((float)(2 * j) / (float)hd));
    const size_t csz = (size_t)c.n_seq * c.n_layer * c.n_ctx * kvd;
    dbuf<uint16_t> dqkv, dk, dv;
    dbuf<float> dinv;
    dbuf<int32_t> dpos, dseq;
    dqkv.alloc(qkv.size(), SENT_BF16);
    dqkv.put(qkv);
    dk.alloc(csz, SENT_BF16);
    dv.alloc(csz, SENT_BF16);
    dinv.alloc(half, 0.0f);
    dinv.put(inv);
    dpos.alloc(n, 0);
    dpos.put(pos);
    dseq.alloc(n, 0);
    dseq.put(seq);
    tinfer_op_cuda_kv kv = {dk.p, dv.p, c.n_seq, c.n_layer, c.n_ctx, c.n_head, c.n_head_kv, hd};
    CKT(tinfer_op_cuda_rope_kv(dqkv.p, &kv, c.layer, dinv.p, dpos.p, dseq.p, n, g_stream, &e_));
    CK(cudaStreamSynchronize(g_stream));
    int bad = dqkv.guards_ok(label) || dk.guards_ok(label) || dv.guards_ok(label);
    /* reference: the F32 widening of qkv, q and k heads rotated by ops/ref/rope.c */
    std::vector<float> f(qkv.size());
    for (size_t i = 0; i < f.size(); i++)
        f[i] = tinfer_bf16_to_f32(qkv[i]);
    tinfer_op_rope(f.data(), n - 1, QKV, c.n_head + c.n_head_kv, hd, pos.data(), c.theta);
    std::vector<uint16_t> out = dqkv.get(), kc = dk.get(), vc = dv.get();
    std::vector<uint8_t> written(csz / kvd, 0);
    long inexact = 0;
    for (int32_t i = 0; i < n && !bad; i++) {
        const bool inval = i == n - 1;
        const size_t slot = inval ? 0 : ((size_t)seq[i] * c.n_layer + c.layer) * c.n_ctx + pos[i];
        if (!inval) written[slot] = 1;
        for (int32_t col = 0; col < QKV && !bad; col++) {
            const size_t e = (size_t)i * QKV + col;
            const uint16_t o = out[e];
            if (col < (c.n_head + c.n_head_kv) * hd) {
                if (inval) {
                    bad = col < c.n_head * hd ? !isnan(tinfer_bf16_to_f32(o)) : o != qkv[e];
                } else {
                    const int u = bf16_ulps(o, tinfer_f32_to_bf16(f[e]));
                    bad = u > 1;
                    inexact += u != 0;
                    if (col >= c.n_head * hd && kc[slot * kvd + col - c.n_head * hd] != o) bad = 2;
                }
            } else {
                bad = o != qkv[e]; /* v untouched in qkv */
                if (!inval && vc[slot * kvd + col - (c.n_head + c.n_head_kv) * hd] != qkv[e])
                    bad = 3;
            }
            if (bad)
                printf("  %s: token %d col %d: 0x%04x vs ref %g (kind %d)\n", label, i, col, o,
                       f[e], bad);
        }
    }
    for (size_t r = 0; r < written.size() && !bad; r++) /* every other cache row untouched */
        if (!written[r])
            for (int32_t d = 0; d < kvd; d++)
                if (kc[r * kvd + d] != SENT_BF16 || vc[r * kvd + d] != SENT_BF16) {
                    printf("  %s: cache row %zu written\n", label, r);
                    bad = 1;
                    break;
                }
    if (inexact) printf("  %s: %ld element(s) 1 BF16 ulp from the reference\n", label, inexact);
    verdict(label, bad);
    dqkv.free_(), dk.free_(), dv.free_(), dinv.free_(), dpos.free_(), dseq.free_();
}

/* ---- argmax: exact (an index), against the rule "lowest index of the maximum, NaN skipped" ----
 */
int32_t argmax_ref(const float *r, int32_t V) {
    int32_t best = -1;
    for (int32_t j = 0; j < V; j++)
        if (!isnan(r[j]) && (best < 0 || r[j] > r[best])) best = j;
    return best < 0 ? 0 : best;
}

static void test_argmax(int32_t n_out, int32_t V, int64_t ld, size_t off) {
    char label[128];
    snprintf(label, sizeof label, "argmax n_out=%d V=%d ld=%lld off=%zu", n_out, V, (long long)ld,
             off);
    std::vector<float> lg((size_t)n_out * ld);
    for (auto &v : lg)
        v = rnd_f(10.0f);
    for (int32_t r = 0; r < n_out; r++) {
        float *row = &lg[(size_t)r * ld];
        switch (r % 7) {
        case 0: break; /* plain */
        case 1:        /* a tie of the maximum at two places: the lower index wins */
            row[V - 1] = 20.0f, row[V / 2] = 20.0f;
            break;
        case 2: /* NaN at index 0 and scattered: never wins */
            for (int32_t j = 0; j < V; j += 5)
                row[j] = NAN;
            break;
        case 3: /* all NaN: 0 */
            for (int32_t j = 0; j < V; j++)
                row[j] = NAN;
            break;
        case 4: /* all -inf: 0 */
            for (int32_t j = 0; j < V; j++)
                row[j] = -INFINITY;
            break;
        case 5: /* +inf twice, the maximum */ row[V / 3] = INFINITY, row[V - 1] = INFINITY; break;
        case 6: /* every value equal: 0 */
            for (int32_t j = 0; j < V; j++)
                row[j] = 1.5f;
            break;
        }
    }
    dbuf<float> dl;
    dbuf<int32_t> di;
    dl.alloc(lg.size(), 0.0f, off);
    dl.put(lg);
    di.alloc(n_out, SENT_I32);
    CKT(tinfer_op_cuda_argmax(di.p, dl.p, n_out, V, ld, g_stream, &e_));
    CK(cudaStreamSynchronize(g_stream));
    std::vector<int32_t> ids = di.get();
    int bad = di.guards_ok(label);
    /* with the values (tensor parallelism's per-rank greedy logit): the same ids, and each
     * row's value at its id, NaN for a row of only NaN */
    dbuf<int32_t> di2;
    dbuf<float> dv;
    di2.alloc(n_out, SENT_I32);
    dv.alloc(n_out, 0.0f);
    CKT(tinfer_op_cuda_argmax_val(di2.p, dv.p, dl.p, n_out, V, ld, g_stream, &e_));
    CK(cudaStreamSynchronize(g_stream));
    std::vector<int32_t> ids2 = di2.get();
    std::vector<float> vals = dv.get();
    bad |= di2.guards_ok(label) | dv.guards_ok(label);
    /* rows cut into chunks (the split kernel), twice: its words must come back zero */
    dbuf<int32_t> di3;
    dbuf<unsigned long long> dws;
    di3.alloc(n_out, SENT_I32);
    dws.alloc(2 * (size_t)n_out, 0ull);
    std::vector<int32_t> ids3;
    for (int rep = 0; rep < 2 && !bad; rep++) {
        CKT(tinfer_op_cuda_argmax_split(di3.p, dl.p, n_out, V, ld, dws.p, g_stream, &e_));
        CK(cudaStreamSynchronize(g_stream));
        ids3 = di3.get();
        for (unsigned long long w : dws.get())
            if (w != 0) {
                printf("  %s: the split's words not left zero\n", label);
                bad = 1;
                break;
            }
        bad |= di3.guards_ok(label) | dws.guards_ok(label);
        for (int32_t r = 0; r < n_out && !bad; r++)
            if (ids3[r] != ids2[r]) {
                printf("  %s: row %d: split argmax %d, one block a row %d\n", label, r, ids3[r],
                       ids2[r]);
                bad = 1;
            }
    }
    di3.free_(), dws.free_();
    for (int32_t r = 0; r < n_out && !bad; r++) {
        const float *row = &lg[(size_t)r * ld];
        const int32_t want = argmax_ref(row, V);
        bool all_nan = true;
        for (int32_t j = 0; j < V && all_nan; j++)
            all_nan = row[j] != row[j];
        const bool val_ok = all_nan ? vals[r] != vals[r]
                                    : memcmp(&vals[r], &row[want], sizeof(float)) == 0;
        if (ids[r] != want || ids2[r] != want || !val_ok) {
            printf("  %s: row %d (kind %d): %d / %d (value %g), want %d (%g)\n", label, r, r % 7,
                   ids[r], ids2[r], vals[r], want, row[want]);
            bad = 1;
        }
    }
    verdict(label, bad);
    dl.free_(), di.free_(), di2.free_(), dv.free_();
}

/* ---- cast: exact, bit for bit tinfer_f32_to_bf16 (NaN payloads included) ---- */
static void test_cast(int64_t count, size_t off) {
    char label[96];
    snprintf(label, sizeof label, "cast count=%lld off=%zu", (long long)count, off);
    std::vector<float> in((size_t)count);
    for (auto &v : in)
        v = rnd_f(100.0f);
    const uint32_t special[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc12345u,
                                0x7f800001u, 0x80000000u, 0x00000001u, 0x3f808000u,
                                0x3f818000u, 0x7f7fffffu, 0x3f807fffu};
    for (size_t k = 0; k < sizeof special / 4 && k < in.size(); k++)
        memcpy(&in[(size_t)(count - 1 - (int64_t)k)], &special[k], 4);
    dbuf<float> di;
    dbuf<uint16_t> dout;
    di.alloc(in.size(), 0.0f, off);
    di.put(in);
    dout.alloc(in.size(), SENT_BF16, off);
    CKT(tinfer_op_cuda_cast_f32_bf16(dout.p, di.p, count, g_stream, &e_));
    CK(cudaStreamSynchronize(g_stream));
    std::vector<uint16_t> out = dout.get();
    int bad = dout.guards_ok(label);
    for (int64_t i = 0; i < count && !bad; i++)
        if (out[i] != tinfer_f32_to_bf16(in[i])) {
            printf("  %s: element %lld: 0x%04x want 0x%04x\n", label, (long long)i, out[i],
                   tinfer_f32_to_bf16(in[i]));
            bad = 1;
        }
    verdict(label, bad);
    di.free_(), dout.free_();
}

/* ---- greedy_feed: exact, against the runtime's rule (tinfer_op_cuda_greedy_feed) ---- */
static void test_greedy_feed(int32_t n, bool feed) {
    char label[64];
    snprintf(label, sizeof label, "greedy_feed n=%d feed=%d", n, (int)feed);
    std::vector<int32_t> tok((size_t)n), pos((size_t)n), rows((size_t)n), ids((size_t)n);
    for (int32_t j = 0; j < n; j++) {
        tok[j] = (int32_t)(rnd_u32() % 50000u);
        pos[j] = (int32_t)(rnd_u32() % 4000u);
        ids[j] = (int32_t)(rnd_u32() % 50000u);
        rows[j] = j;
    }
    for (int32_t j = n - 1; j > 0; j--) /* out_rows: a permutation, as the plan's sort makes */
        std::swap(rows[j], rows[rnd_u32() % (uint32_t)(j + 1)]);
    dbuf<int32_t> dt, dp, dr, di, ds;
    dt.alloc(tok.size(), 0, 0), dp.alloc(pos.size(), 0, 0), dr.alloc(rows.size(), 0, 0);
    di.alloc(ids.size(), 0, 0), ds.alloc(ids.size(), -7, 0);
    dt.put(tok), dp.put(pos), dr.put(rows), di.put(ids);
    CKT(tinfer_op_cuda_greedy_feed(dt.p, dp.p, dr.p, di.p, ds.p, n, feed, g_stream, &e_));
    CK(cudaStreamSynchronize(g_stream));
    const std::vector<int32_t> t2 = dt.get(), p2 = dp.get(), s2 = ds.get(), i2 = di.get();
    int bad = dt.guards_ok(label) | dp.guards_ok(label) | ds.guards_ok(label);
    for (int32_t j = 0; j < n && !bad; j++) {
        const int32_t want_tok = feed ? ids[j] : tok[rows[j]];
        if (s2[j] != ids[j] || i2[j] != ids[j] || t2[rows[j]] != want_tok ||
            p2[j] != pos[j] + (feed ? 1 : 0)) {
            printf("  %s: row %d: save %d tok %d pos %d (ids %d, pos was %d)\n", label, (int)j,
                   (int)s2[j], (int)t2[rows[j]], (int)p2[j], (int)ids[j], (int)pos[j]);
            bad = 1;
        }
    }
    verdict(label, bad);
    dt.free_(), dp.free_(), dr.free_(), di.free_(), ds.free_();
}

/* ---- argument checks (host only: they fail before any launch) ---- */
static void expect_invalid(const char *label, tinfer_status st, const tinfer_err *e) {
    const int bad = st != TINFER_ERR_INVALID_ARG || !e->msg[0] || strchr(e->msg, '\n');
    if (bad) printf("  %s: status %d msg '%s'\n", label, (int)st, e->msg);
    verdict(label, bad);
}

static void bad_args(void) {
    tinfer_err e;
    float f[4];
    uint16_t h[4];
    int32_t i4[4];
    e.msg[0] = 0;
    expect_invalid("embed E=0", tinfer_op_cuda_embed(f, h, i4, 1, 0, 1, nullptr, &e), &e);
    e.msg[0] = 0;
    expect_invalid("embed clear NULL",
                   tinfer_op_cuda_embed_clear(f, h, i4, 1, 4, 1, nullptr, 8, nullptr, &e), &e);
    e.msg[0] = 0;
    expect_invalid("rmsnorm n_out>n_x",
                   tinfer_op_cuda_rmsnorm(h, f, h, nullptr, 2, 1, 4, 1e-5f, nullptr, &e), &e);
    e.msg[0] = 0;
    expect_invalid("argmax ld<V", tinfer_op_cuda_argmax(i4, f, 1, 4, 3, nullptr, &e), &e);
    e.msg[0] = 0;
    expect_invalid("cast count<0", tinfer_op_cuda_cast_f32_bf16(h, f, -1, nullptr, &e), &e);
    e.msg[0] = 0;
    expect_invalid("greedy_feed NULL tok",
                   tinfer_op_cuda_greedy_feed(nullptr, i4, i4, i4, i4, 2, true, nullptr, &e), &e);
    tinfer_op_cuda_kv kv = {h, h, 1, 1, 8, 3, 2, 64};
    e.msg[0] = 0;
    expect_invalid("rope_kv gqa", tinfer_op_cuda_rope_kv(h, &kv, 0, f, i4, i4, 1, nullptr, &e), &e);
    kv.n_head = 4, kv.head_dim = 7;
    e.msg[0] = 0;
    expect_invalid("rope_kv odd hd", tinfer_op_cuda_rope_kv(h, &kv, 0, f, i4, i4, 1, nullptr, &e),
                   &e);
    kv.head_dim = 64;
    e.msg[0] = 0;
    expect_invalid("rope_kv layer", tinfer_op_cuda_rope_kv(h, &kv, 1, f, i4, i4, 1, nullptr, &e),
                   &e);
}

void test_attention_plan_host(void);

int main(int argc, char **argv) {
    const int quick = argc > 1 && !strcmp(argv[1], "quick");
    printf("seed 0x%llx\n", (unsigned long long)g_rng);
    bad_args();
    test_attention_plan_host();
    test_decode_step_host();
    test_lm_argmax_host();
    tinfer_device_info info;
    tinfer_err err;
    const tinfer_status st = tinfer_device_probe(0, &info, &err);
    if (st == TINFER_ERR_NO_DEVICE) {
        printf("skip: %s (host checks: %d of %d failed)\n", err.msg, g_fail, g_cases);
        return g_fail ? 1 : 77;
    }
    if (st != TINFER_OK) {
        printf("FAIL device: %s\n", err.msg);
        return 1;
    }
    printf("device %s sm_%d%d, %d SMs\n", info.name, info.cc_major, info.cc_minor, info.n_sm);
    CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));

    test_embed(1, 8, 10, 0);
    test_embed(7, 576, 100, 0);
    test_embed(5, 131, 50, 0); /* E % 8 != 0: scalar path */
    test_embed(4, 64, 30, 1);  /* misaligned out: scalar path */
    if (!quick) test_embed(33, 4096, 1000, 0);
    /* with the split RMSNorm's sums cleared in the same launch: fewer words than threads, and
     * more than the grid's threads (60 slots x 64 tokens x 2 words over 64 blocks of 128) */
    test_embed(3, 576, 100, 0, 5);
    test_embed(64, 576, 100, 0, 60 * 64 * 2);
    test_embed(2, 576, 100, 0, 0);

    /* 1028: registers, a thread's last float4 absent for most threads; 8196: past the
     * register path (E > 8,192) */
    const int32_t Es[] = {8, 131, 576, 1000, 1028, 4096, 8192, 8196};
    for (int32_t E : Es) {
        if (quick && E > 1000) continue;
        test_rmsnorm(1, E, 0, 0);
        test_rmsnorm(5, E, 0, 0);
        test_rmsnorm(9, E, 1, 0);
        test_rmsnorm(3, E, 0, 1); /* misaligned: scalar path */
    }

    std::vector<rope_case> rc = {
        {4, 2, 64, 3, 2, 64, 1, {5, 1, 64}, 10000.0f},
        {3, 1, 128, 2, 1, 4096, 0, {63, 1}, 500000.0f},
        {2, 2, 8, 1, 3, 16, 2, {16}, 10000.0f},
        {9, 3, 64, 4, 1, 128, 0, {2, 0, 65, 1}, 100000.0f},
    };
    if (!quick) rc.push_back({4, 1, 128, 1, 1, 131072, 0, {4095}, 500000.0f}); /* large angles */
    for (const auto &c : rc)
        test_rope_kv(c);

    test_argmax(7, 1, 1, 0);
    test_argmax(7, 13, 16, 0);
    test_argmax(14, 1000, 1003, 0); /* ld % 4 != 0: scalar path */
    test_argmax(7, 4099, 4100, 1);  /* misaligned */
    test_argmax(1, 6146, 6148, 0);  /* split: 4 chunks, the last of 2 logits */
    test_argmax(64, 49152, 49152, 0); /* 64 SmolLM2 rows: several chunks a row */
    if (!quick) test_argmax(7, 128256, 128256, 0);

    test_lm_argmax_all(quick);

    test_greedy_feed(1, true);
    test_greedy_feed(64, true);
    test_greedy_feed(200, true); /* two blocks */
    test_greedy_feed(37, false); /* the last step's: saved, not fed */

    test_cast(1, 0);
    test_cast(11, 0);
    test_cast(1003, 1);
    test_cast(quick ? 4099 : 1 << 20, 0);

    test_attention_all(quick);
    test_attention_decode_rope_all(quick);
    test_decode_step_all(quick);

    CK(cudaStreamDestroy(g_stream));
    printf("%s: %d of %d cases failed\n", g_fail ? "FAIL" : "PASS", g_fail, g_cases);
    return g_fail ? 1 : 0;
}

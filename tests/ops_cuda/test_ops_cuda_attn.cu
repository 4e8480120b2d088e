/*
 * test_ops_cuda_attn.cu — the attention half of test-ops-cuda: the host plan (runs without a GPU)
 * and both kernels (prefill tiles, split-KV decode) against ops/ref/attention.c.
 *
 * A case is a KV cache geometry and a batch of sequences (each: token count, first position);
 * every sequence's cache rows 0 .. its last position hold random BF16 in the layer under test,
 * everything else (later rows, other layers) keeps the NaN sentinel, so a read past a query's
 * causal range or of the wrong layer turns the output NaN and fails. q is random BF16 in the qkv
 * buffer. The reference runs per sequence in F32 on the widened BF16 q / K / V. Each case runs
 * four ways on the same inputs: the plan's mix (prefill tiles + decode list), every token through
 * prefill tiles, every token through the decode kernel (split as the workspace allows), and the
 * plan's decode list without a workspace (no split).
 * Tolerance: |out - ref| <= 2^-7 max|v| (max over the sequence's V rows), from the kernels'
 * bound (ops/cuda/attention_prefill.cu: P rounded to BF16 <= 2^-9 max|v|, l from unrounded p
 * <= 2^-9 relative, output rounding 2^-9 relative; doubled). NaN fails.
 */
extern "C" {
#include "ops/ref/ops_cpu.h" /* C declarations */
}
#include "tests/ops_cuda/test_ops_cuda.h"

#include <algorithm>

typedef struct attn_seq {
    int32_t len, start; /* tokens in the batch, position of the first */
} attn_seq;

typedef struct attn_case {
    int32_t n_head, n_head_kv, hd, n_ctx, n_layer, layer;
    std::vector<attn_seq> seqs; /* sequence s of the batch is cache slot s */
} attn_case;

/* ---- the plan (host only) ---- */
void test_attention_plan_host(void) {
    /* seq: 0 x3, 1 x1, 2 x130, 4 x1 */
    std::vector<int32_t> seq, pos;
    const int32_t lens[] = {3, 1, 130, 0, 1};
    for (int32_t s = 0; s < 5; s++)
        for (int32_t t = 0; t < lens[s]; t++)
            seq.push_back(s), pos.push_back(7 * s + t);
    const int32_t n = (int32_t)seq.size();
    std::vector<int32_t> tiles(3 * 8), dec(n);
    int32_t nt = -1, nd = -1, ml = -1;
    tinfer_err e;
    e.msg[0] = 0;
    tinfer_status st = tinfer_op_cuda_attention_plan(seq.data(), pos.data(), n, tiles.data(), 8,
                                                     &nt, dec.data(), n, &nd, &ml, &e);
    const int32_t want_tiles[] = {0, 3, 0, 4, 64, 2, 68, 64, 2, 132, 2, 2};
    int bad = st != TINFER_OK || nt != 4 || nd != 2 || dec[0] != 3 || dec[1] != 134 || ml != 29;
    for (int k = 0; k < 12 && !bad; k++)
        bad = tiles[k] != want_tiles[k];
    if (bad) printf("  plan: st %d nt %d nd %d ml %d (%s)\n", (int)st, nt, nd, ml, e.msg);
    verdict("attention_plan mixed batch", bad);
    e.msg[0] = 0;
    st = tinfer_op_cuda_attention_plan(seq.data(), pos.data(), n, tiles.data(), 3, &nt, dec.data(),
                                       n, &nd, &ml, &e);
    verdict("attention_plan tile capacity short", st != TINFER_ERR_INVALID_ARG || !e.msg[0]);
    std::swap(seq[0], seq[3]); /* 1 0 0 0 ...: not grouped */
    e.msg[0] = 0;
    st = tinfer_op_cuda_attention_plan(seq.data(), pos.data(), n, tiles.data(), 8, &nt, dec.data(),
                                       n, &nd, &ml, &e);
    verdict("attention_plan unsorted batch", st != TINFER_ERR_INVALID_ARG || !e.msg[0]);
    st = tinfer_op_cuda_attention_plan(nullptr, nullptr, 0, nullptr, 0, &nt, nullptr, 0, &nd, &ml,
                                       &e);
    verdict("attention_plan empty batch", st != TINFER_OK || nt || nd || ml);
    /* argument errors of the launchers (before any device work) */
    alignas(16) uint16_t h[16];
    int32_t i4[4];
    tinfer_op_cuda_kv kv = {h, h, 1, 1, 8, 4, 2, 96};
    e.msg[0] = 0;
    st = tinfer_op_cuda_attention_prefill(h, h, &kv, 0, i4, i4, 1, nullptr, &e);
    verdict("attention_prefill head_dim 96", st != TINFER_ERR_INVALID_ARG || !e.msg[0]);
    kv.head_dim = 64;
    e.msg[0] = 0;
    st = tinfer_op_cuda_attention_decode(h, h, &kv, 0, i4, i4, i4, 1, 9, nullptr, 0, nullptr, &e);
    verdict("attention_decode max_len > n_ctx", st != TINFER_ERR_INVALID_ARG || !e.msg[0]);
    e.msg[0] = 0;
    st = tinfer_op_cuda_attention_decode(h + 1, h, &kv, 0, i4, i4, i4, 1, 4, nullptr, 0, nullptr,
                                         &e);
    verdict("attention_decode misaligned out", st != TINFER_ERR_INVALID_ARG || !e.msg[0]);
    verdict("attention_ws_bytes",
            tinfer_op_cuda_attention_ws_bytes(3, 5, 4, 64) != (size_t)3 * 5 * 4 * 66 * 4 ||
                tinfer_op_cuda_attention_ws_bytes(0, 5, 4, 64) != 0);
}

/* ---- the kernels ---- */
/* the decode kernel's forced head batch (0: the rule's), named in the labels */
static int forced_hb;
static void force_hb(int hb) {
    forced_hb = hb;
    tinfer_op_cuda_attention_decode_force_hb(hb);
}

static void run_attention_case(const attn_case &c) {
    const int32_t hd = c.hd, kvd = c.n_head_kv * hd, qd = c.n_head * hd;
    const int32_t QKV = (c.n_head + 2 * c.n_head_kv) * hd, n_seq = (int32_t)c.seqs.size();
    char label[200];
    int lp = snprintf(label, sizeof label, "attention heads=%d/%d hd=%d n_ctx=%d seqs", c.n_head,
                      c.n_head_kv, hd, c.n_ctx);
    for (const auto &s : c.seqs)
        lp += snprintf(label + lp, sizeof label - (size_t)lp, " %d@%d", s.len, s.start);
    if (forced_hb) lp += snprintf(label + lp, sizeof label - (size_t)lp, " (hb %d)", forced_hb);
    std::vector<int32_t> pos, seq;
    for (int32_t s = 0; s < n_seq; s++)
        for (int32_t t = 0; t < c.seqs[s].len; t++)
            pos.push_back(c.seqs[s].start + t), seq.push_back(s);
    const int32_t n = (int32_t)pos.size();
    std::vector<uint16_t> qkv((size_t)n * QKV);
    for (auto &v : qkv)
        v = rnd_bf16(2.0f);
    const size_t slot_rows = (size_t)c.n_ctx, csz = (size_t)n_seq * c.n_layer * slot_rows * kvd;
    std::vector<uint16_t> kc(csz, SENT_BF16), vc(csz, SENT_BF16);
    std::vector<float> vmax(n_seq, 0.0f);
    for (int32_t s = 0; s < n_seq; s++) {
        const int32_t rows = c.seqs[s].start + c.seqs[s].len;
        const size_t base = ((size_t)s * c.n_layer + c.layer) * slot_rows * kvd;
        for (size_t e = 0; e < (size_t)rows * kvd; e++) {
            kc[base + e] = rnd_bf16(2.0f);
            vc[base + e] = rnd_bf16(3.0f);
            vmax[s] = std::max(vmax[s], fabsf(tinfer_bf16_to_f32(vc[base + e])));
        }
    }
    /* reference, per sequence */
    std::vector<float> ref((size_t)n * qd);
    {
        int32_t t0 = 0;
        for (int32_t s = 0; s < n_seq; s++) {
            const int32_t L = c.seqs[s].len, rows = c.seqs[s].start + L;
            const size_t base = ((size_t)s * c.n_layer + c.layer) * slot_rows * kvd;
            std::vector<float> q((size_t)L * QKV), k((size_t)rows * kvd), v((size_t)rows * kvd);
            for (size_t e = 0; e < q.size(); e++)
                q[e] = tinfer_bf16_to_f32(qkv[(size_t)t0 * QKV + e]);
            for (size_t e = 0; e < k.size(); e++) {
                k[e] = tinfer_bf16_to_f32(kc[base + e]);
                v[e] = tinfer_bf16_to_f32(vc[base + e]);
            }
            tinfer_op_attention(&ref[(size_t)t0 * qd], qd, q.data(), QKV, k.data(), v.data(), L,
                                &pos[t0], c.n_head, c.n_head_kv, hd);
            t0 += L;
        }
    }
    dbuf<uint16_t> dqkv, dk, dv, dout;
    dbuf<int32_t> dpos, dseq, dtiles, ddec;
    dbuf<float> dws;
    dqkv.alloc(qkv.size(), 0);
    dqkv.put(qkv);
    dk.alloc(csz, 0);
    dk.put(kc);
    dv.alloc(csz, 0);
    dv.put(vc);
    dpos.alloc(n, 0);
    dpos.put(pos);
    dseq.alloc(n, 0);
    dseq.put(seq);
    tinfer_op_cuda_kv kv = {dk.p, dv.p, n_seq, c.n_layer, c.n_ctx, c.n_head, c.n_head_kv, hd};

    /* the plan's split, plus the all-prefill and all-decode lists */
    std::vector<int32_t> tiles(3 * (size_t)(n / TINFER_OP_CUDA_ATTN_TILE + n_seq + 1)), dec(n);
    int32_t nt = 0, nd = 0, ml = 0;
    CKT(tinfer_op_cuda_attention_plan(seq.data(), pos.data(), n, tiles.data(),
                                      (int32_t)tiles.size() / 3, &nt, dec.data(), n, &nd, &ml,
                                      &e_));
    std::vector<int32_t> all_tiles, all_dec(n);
    for (int32_t i = 0, t0 = 0; i < n_seq; t0 += c.seqs[i].len, i++)
        for (int32_t t = 0; t < c.seqs[i].len; t += TINFER_OP_CUDA_ATTN_TILE)
            all_tiles.insert(all_tiles.end(),
                             {t0 + t, std::min(TINFER_OP_CUDA_ATTN_TILE, c.seqs[i].len - t), i});
    int32_t all_ml = 0;
    for (int32_t i = 0; i < n; i++)
        all_dec[i] = i, all_ml = std::max(all_ml, pos[i] + 1);
    dtiles.alloc(std::max(tiles.size(), all_tiles.size()), 0);
    ddec.alloc(n, 0);
    /* workspace: up to 64 splits of every token, capped at 256 MiB */
    int32_t max_splits = 64;
    while (max_splits > 1 &&
           tinfer_op_cuda_attention_ws_bytes(n, max_splits, c.n_head, hd) > ((size_t)256 << 20))
        max_splits /= 2;
    const size_t ws_bytes = tinfer_op_cuda_attention_ws_bytes(n, max_splits, c.n_head, hd);
    dws.alloc(ws_bytes / 4, 0.0f);

    for (int way = 0; way < 4; way++) {
        static const char *ways[] = {"plan", "all prefill", "all decode", "plan, no workspace"};
        dout.alloc((size_t)n * qd, SENT_BF16); /* fresh sentinel each way */
        const std::vector<int32_t> &tl = way == 1 ? all_tiles : tiles;
        const int32_t ntl = way == 1 ? (int32_t)all_tiles.size() / 3 : way == 2 ? 0 : nt;
        const std::vector<int32_t> &dl = way == 2 ? all_dec : dec;
        const int32_t ndl = way == 2 ? n : way == 1 ? 0 : nd, mlen = way == 2 ? all_ml : ml;
        if (ntl) {
            dtiles.put(tl.data(), 3 * (size_t)ntl);
            CKT(tinfer_op_cuda_attention_prefill(dout.p, dqkv.p, &kv, c.layer, dpos.p, dtiles.p,
                                                 ntl, g_stream, &e_));
        }
        if (ndl) {
            ddec.put(dl.data(), (size_t)ndl);
            CKT(tinfer_op_cuda_attention_decode(dout.p, dqkv.p, &kv, c.layer, dpos.p, dseq.p,
                                                ddec.p, ndl, mlen, way == 3 ? nullptr : dws.p,
                                                way == 3 ? 0 : ws_bytes, g_stream, &e_));
        }
        CK(cudaStreamSynchronize(g_stream));
        char wl[260];
        snprintf(wl, sizeof wl, "%s [%s]", label, ways[way]);
        int bad = dout.guards_ok(wl);
        std::vector<uint16_t> out = dout.get();
        double worst = 0, num = 0, den = 0;
        for (int32_t i = 0; i < n && !bad; i++) {
            const double tol = vmax[seq[i]] / 128.0;
            for (int32_t col = 0; col < qd; col++) {
                const double o = tinfer_bf16_to_f32(out[(size_t)i * qd + col]);
                const double r = ref[(size_t)i * qd + col], d = fabs(o - r);
                num += d * d, den += r * r;
                if (d / tol > worst) worst = d / tol;
                if (!(d <= tol)) {
                    printf("  %s: token %d (seq %d pos %d) head %d col %d: %g vs %g\n", wl, i,
                           seq[i], pos[i], col / hd, col % hd, o, r);
                    bad = 1;
                    break;
                }
            }
        }
        if (!bad && getenv("TEST_OPS_VERBOSE"))
            printf("  %s: worst %.3f of tol, rel L2 %.2e\n", wl, worst, sqrt(num / den));
        verdict(wl, bad);
        dout.free_();
    }
    dqkv.free_(), dk.free_(), dv.free_(), dpos.free_(), dseq.free_(), dtiles.free_();
    ddec.free_(), dws.free_();
}

void test_attention_all(int quick) {
    std::vector<attn_case> cases = {
        /* head_dim 64, GQA 2: prefill 65 / 2 / 63 / 64, decode at L = n_ctx, 1 and 63 */
        {4, 2, 64, 4096, 2, 1, {{65, 0}, {1, 4095}, {2, 10}, {1, 0}, {63, 100}, {64, 0}, {1, 62}}},
        /* head_dim 128, MHA: prefill near the end of the context, decode at L = n_ctx */
        {2, 2, 128, 1024, 1, 0, {{100, 900}, {1, 1023}, {1, 1}}},
        /* GQA 3 (SmolLM2-like), prefill of the whole context */
        {6, 2, 64, 512, 1, 0, {{512, 0}, {1, 511}, {1, 257}}},
        /* GQA 12 > the decode kernel's 4 heads per block (three head batches) */
        {12, 1, 64, 300, 1, 0, {{1, 299}, {37, 5}, {1, 64}}},
    };
    if (!quick) {
        /* head_dim 128, GQA 4 (Llama-3-8B-like): a 4095-token prefill beside long decodes */
        cases.push_back({8, 2, 128, 4096, 1, 0, {{4095, 0}, {1, 4095}, {1, 300}, {65, 4000}}});
        /* many decode sequences of mixed lengths (one batch step of a server) */
        attn_case d = {8, 8, 64, 2048, 1, 0, {}};
        for (int s = 0; s < 24; s++)
            d.seqs.push_back({1, (int32_t)(rnd_u32() % 2048u)});
        cases.push_back(d);
    }
    /* every case with the decode kernel's head batches as the rule picks them (one head a block
     * at these sizes) and forced to 4 heads a block (the rule's pick for large batches) */
    for (int hb : {0, 4}) {
        force_hb(hb);
        for (const auto &c : cases)
            run_attention_case(c);
    }
    force_hb(0);
}

/* ---- the fused decode step: tinfer_op_cuda_attention_decode_rope ----
 * A batch of single-token sequences (random positions, each cache holding random rows 0 .. pos - 1
 * and the sentinel from pos on), unrotated random q / k / v in qkv. Way A: tinfer_op_cuda_rope_kv
 * then tinfer_op_cuda_attention_decode; way B: the fused kernel on a fresh copy of the same
 * inputs. The outputs and both caches (every element, the sentinels included) must be equal bit
 * for bit: the fused kernel promises rope_kv's arithmetic operation for operation. */
static void run_decode_rope_case(int32_t n_head, int32_t n_head_kv, int32_t hd, int32_t n_ctx,
                                 int32_t n_layer, int32_t layer, const std::vector<int32_t> &pos,
                                 bool with_ws) {
    char label[200];
    snprintf(label, sizeof label,
             "attention_decode_rope = rope_kv + decode heads=%d/%d hd=%d n_ctx=%d seqs=%zu%s%s",
             n_head, n_head_kv, hd, n_ctx, pos.size(), with_ws ? "" : " (no workspace)",
             forced_hb ? " (hb 4)" : "");
    const int32_t n = (int32_t)pos.size(), kvd = n_head_kv * hd, qd = n_head * hd;
    const int32_t QKV = qd + 2 * kvd;
    std::vector<int32_t> seq(n), dec(n);
    int32_t max_len = 0;
    for (int32_t i = 0; i < n; i++)
        seq[i] = i, dec[i] = i, max_len = std::max(max_len, pos[i] + 1);
    std::vector<uint16_t> qkv((size_t)n * QKV);
    for (auto &v : qkv)
        v = rnd_bf16(2.0f);
    const size_t csz = (size_t)n * n_layer * n_ctx * kvd;
    std::vector<uint16_t> kc(csz, SENT_BF16), vc(csz, SENT_BF16);
    for (int32_t s = 0; s < n; s++) {
        const size_t base = ((size_t)s * n_layer + layer) * n_ctx * kvd;
        for (size_t e = 0; e < (size_t)pos[s] * kvd; e++)
            kc[base + e] = rnd_bf16(2.0f), vc[base + e] = rnd_bf16(3.0f);
    }
    std::vector<float> inv(hd / 2);
    for (int32_t j = 0; j < hd / 2; j++)
        inv[j] = (float)(1.0 / pow(10000.0, 2.0 * j / hd));
    const size_t ws_bytes = with_ws ? tinfer_op_cuda_attention_ws_bytes(n, 64, n_head, hd) : 0;
    dbuf<uint16_t> dqkv, dk, dv, dout;
    dbuf<int32_t> dpos, dseq, ddec;
    dbuf<float> dws, dinv;
    dpos.alloc(n, 0), dpos.put(pos);
    dseq.alloc(n, 0), dseq.put(seq);
    ddec.alloc(n, 0), ddec.put(dec);
    dinv.alloc(inv.size(), 0.0f), dinv.put(inv);
    if (with_ws) dws.alloc(ws_bytes / 4, 0.0f);
    std::vector<uint16_t> out[2], k_after[2], v_after[2];
    int bad = 0;
    for (int way = 0; way < 2 && !bad; way++) {
        dqkv.alloc(qkv.size(), 0), dqkv.put(qkv);
        dk.alloc(csz, 0), dk.put(kc);
        dv.alloc(csz, 0), dv.put(vc);
        dout.alloc((size_t)n * qd, SENT_BF16);
        tinfer_op_cuda_kv kv = {dk.p, dv.p, n, n_layer, n_ctx, n_head, n_head_kv, hd};
        if (way == 0) {
            CKT(tinfer_op_cuda_rope_kv(dqkv.p, &kv, layer, dinv.p, dpos.p, dseq.p, n, g_stream, &e_));
            CKT(tinfer_op_cuda_attention_decode(dout.p, dqkv.p, &kv, layer, dpos.p, dseq.p, ddec.p,
                                                n, max_len, with_ws ? dws.p : nullptr, ws_bytes,
                                                g_stream, &e_));
        } else {
            CKT(tinfer_op_cuda_attention_decode_rope(dout.p, dqkv.p, &kv, layer, dinv.p, dpos.p,
                                                     dseq.p, ddec.p, n, max_len,
                                                     with_ws ? dws.p : nullptr, ws_bytes, g_stream,
                                                     &e_));
        }
        CK(cudaStreamSynchronize(g_stream));
        bad |= dout.guards_ok(label) | dk.guards_ok(label) | dv.guards_ok(label);
        out[way] = dout.get(), k_after[way] = dk.get(), v_after[way] = dv.get();
        dqkv.free_(), dk.free_(), dv.free_(), dout.free_();
    }
    for (int32_t i = 0; i < n * qd && !bad; i++)
        if (out[0][i] != out[1][i] || (out[1][i] & 0x7fffu) > 0x7f80u) {
            printf("  %s: output %d (token %d): 0x%04x fused vs 0x%04x\n", label, i, i / qd,
                   out[1][i], out[0][i]);
            bad = 1;
        }
    for (size_t e = 0; e < csz && !bad; e++)
        if (k_after[0][e] != k_after[1][e] || v_after[0][e] != v_after[1][e]) {
            printf("  %s: cache element %zu: k 0x%04x / 0x%04x, v 0x%04x / 0x%04x (fused / not)\n",
                   label, e, k_after[1][e], k_after[0][e], v_after[1][e], v_after[0][e]);
            bad = 1;
        }
    verdict(label, bad);
    dpos.free_(), dseq.free_(), ddec.free_(), dinv.free_(), dws.free_();
}

void test_attention_decode_rope_all(int quick) {
    /* SmolLM2-like (GQA 3, hd 64): positions 0 (a first token), 1, 63, 64, 65, 4095 (= n_ctx - 1:
     * split ranges), with and without the workspace */
    const std::vector<int32_t> p64 = {0, 1, 63, 64, 65, 300, 4095};
    run_decode_rope_case(9, 3, 64, 4096, 2, 1, p64, true);
    run_decode_rope_case(9, 3, 64, 4096, 2, 1, p64, false);
    /* Llama-3-8B-like (GQA 4, hd 128) and a GQA group of 12 (three head batches per KV head: all
     * write row p) */
    run_decode_rope_case(8, 2, 128, 2048, 1, 0, {5, 2047, 700}, true);
    run_decode_rope_case(12, 1, 64, 300, 1, 0, {0, 299, 64}, true);
    if (!quick) {
        std::vector<int32_t> many;
        for (int s = 0; s < 32; s++)
            many.push_back((int32_t)(rnd_u32() % 2048u));
        run_decode_rope_case(8, 8, 64, 2048, 1, 0, many, true);
    }
    /* 4 heads a block (the rule picks one at these sizes): the fused RoPE rows again */
    force_hb(4);
    run_decode_rope_case(9, 3, 64, 4096, 2, 1, p64, true);
    run_decode_rope_case(12, 1, 64, 300, 1, 0, {0, 299, 64}, true);
    force_hb(0);
}

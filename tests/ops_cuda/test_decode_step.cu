/*
 * test_decode_step.cu — the fused decode step (tinfer_op_cuda_decode_step) against the same step
 * composed of the separate CUDA ops (embed, rmsnorm, attention_decode_rope) and a naive GEMV
 * written here with the fused kernel's epilogues (bias, BF16 store, residual add, SwiGLU with
 * __expf, F32 logits), on a small random model with Q/K/V and O biases.
 *
 * Cases: head_dim 64 (GQA 2) and 128 (GQA 2); one step of 7 sequences at positions 0, 1, 63, 64,
 * 65, 511 and 1023 (1,024 keys: the kernel's limit), each cache holding random rows before its
 * position and the sentinel from it on; a single sequence at position 2; a step whose third token
 * id is out of range (its logits must be NaN, the others finite and right).
 * Tolerance: both paths round at the same points (BF16 normed x, qkv, attention, SwiGLU output;
 * F32 residual and logits) and differ only in F32 summation order (K <= 1,024: relative
 * differences ~1e-6), which flips a BF16 rounding of a value now and then (probability ~1e-6 /
 * 2^-9 per value, each flip 2^-8 relative); over 2 layers the logits differ by ~1e-3 relative
 * RMS at most. TOL_STEP = 1e-2 leaves 10x; a wrong head, cache row, phase or epilogue gives O(1).
 * Also: the cache row at each position is written in every layer, the rows after it are not;
 * the guard bands of every output hold.
 */
#include "logits_util.h"
#include "test_ops_cuda.h"

#include <algorithm>

#define TOL_STEP 1e-2

/* y = epilogue(x[m] · w[n]) for m < M, n < N (one thread each, F32 sums in k order):
 * mode 0 BF16 store (+ bias), 1 F32 residual add (+ bias), 2 SwiGLU (w = [gate; up], N = F,
 * BF16 store), 3 F32 store. */
static __global__ void ref_gemv(const uint16_t *x, const uint16_t *w, const uint16_t *bias, int M,
                                int N, int K, int mode, void *y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M * N) return;
    const int m = i / N, n = i % N;
    auto f = [](uint16_t h) { return __uint_as_float((uint32_t)h << 16); };
    auto dot = [&](int row) {
        float s = 0.0f;
        for (int k = 0; k < K; k++)
            s = fmaf(f(w[(size_t)row * K + k]), f(x[(size_t)m * K + k]), s);
        return s;
    };
    auto bf = [](float v) {
        uint32_t u = __float_as_uint(v);
        if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((u >> 16) | 0x40u) & 0xffffu);
        u += 0x7fffu + ((u >> 16) & 1u);
        return (uint16_t)(u >> 16);
    };
    float g = dot(n);
    if (bias) g += f(bias[n]);
    if (mode == 0) {
        ((uint16_t *)y)[(size_t)m * N + n] = bf(g);
    } else if (mode == 1) {
        float *o = (float *)y + (size_t)m * N + n;
        *o = *o + g;
    } else if (mode == 2) {
        const float u = dot(N + n);
        ((uint16_t *)y)[(size_t)m * N + n] = bf(g / (1.0f + __expf(-g)) * u);
    } else {
        ((float *)y)[(size_t)m * N + n] = g;
    }
}

static void ref(const uint16_t *x, const uint16_t *w, const uint16_t *bias, int M, int N, int K,
                int mode, void *y) {
    ref_gemv<<<(M * N + 127) / 128, 128, 0, g_stream>>>(x, w, bias, M, N, K, mode, y);
    CK(cudaGetLastError());
}

struct step_model {
    int E, H, HKV, D, F, L, V;
};

/* A random model of shape c on the device (Q/K/V and O biases, tied LM head), as the step takes
 * it. */
struct step_weights {
    std::vector<dbuf<uint16_t>> dw;
    std::vector<tinfer_op_cuda_step_layer> hl;
    tinfer_op_cuda_step_layer *dl = NULL;
    dbuf<float> dinv;
    const uint16_t *embd = NULL, *onorm = NULL;
    tinfer_op_cuda_step_model m;

    explicit step_weights(const step_model &c) {
        const int Q = c.H * c.D, QKV = Q + 2 * c.HKV * c.D;
        auto up = [&](size_t k, float scale) {
            std::vector<uint16_t> v(k);
            for (auto &e : v)
                e = rnd_bf16(scale);
            dw.emplace_back();
            dw.back().alloc(v.size(), 0);
            dw.back().put(v);
            return (const uint16_t *)dw.back().p;
        };
        /* per layer attn_norm, wqkv, bqkv, wo, bo, ffn_norm, wgu, wdown; then embd, norm */
        dw.reserve((size_t)c.L * 8 + 2);
        hl.resize(c.L);
        for (int l = 0; l < c.L; l++) {
            hl[l].attn_norm = up(c.E, 1.0f);
            hl[l].wqkv = up((size_t)QKV * c.E, 0.1f);
            hl[l].bqkv = up(QKV, 0.5f);
            hl[l].wo = up((size_t)c.E * Q, 0.1f);
            hl[l].bo = up(c.E, 0.5f);
            hl[l].ffn_norm = up(c.E, 1.0f);
            hl[l].wgu = up((size_t)2 * c.F * c.E, 0.1f);
            hl[l].wdown = up((size_t)c.E * c.F, 0.1f);
        }
        embd = up((size_t)c.V * c.E, 1.0f), onorm = up(c.E, 1.0f);
        CK(cudaMalloc((void **)&dl, c.L * sizeof *dl));
        CK(cudaMemcpy(dl, hl.data(), c.L * sizeof *dl, cudaMemcpyHostToDevice));
        std::vector<float> inv(c.D / 2);
        for (int j = 0; j < c.D / 2; j++)
            inv[j] = (float)(1.0 / pow(10000.0, 2.0 * j / c.D));
        dinv.alloc(inv.size(), 0.0f), dinv.put(inv);
        m = {c.L, c.E, c.F, c.V, 1e-5f, dl, embd, onorm, embd, dinv.p};
    }
    ~step_weights() {
        for (auto &d : dw)
            d.free_();
        CK(cudaFree(dl));
        dinv.free_();
    }
};

/* KV caches of n sequences: random rows before each one's position, the sentinel from it on. */
static void random_caches(const step_model &c, const std::vector<int32_t> &pos, int n_ctx,
                          std::vector<uint16_t> &kc, std::vector<uint16_t> &vc) {
    const size_t KVD = (size_t)c.HKV * c.D, csz = pos.size() * c.L * n_ctx * KVD;
    kc.assign(csz, SENT_BF16), vc.assign(csz, SENT_BF16);
    for (size_t s = 0; s < pos.size(); s++)
        for (int l = 0; l < c.L; l++) {
            const size_t base = ((size_t)s * c.L + l) * n_ctx * KVD;
            for (size_t e = 0; e < (size_t)pos[s] * KVD; e++)
                kc[base + e] = rnd_bf16(1.0f), vc[base + e] = rnd_bf16(1.0f);
        }
}

static void run_step_case(const step_model &c, const std::vector<int32_t> &pos, int bad_tok) {
    char label[160];
    char at[32] = "";
    if (pos.size() == 1) snprintf(at, sizeof at, " at %d", pos[0]);
    snprintf(label, sizeof label, "decode_step E=%d heads %d/%d hd=%d F=%d L=%d seqs=%zu%s%s",
             c.E, c.H, c.HKV, c.D, c.F, c.L, pos.size(), at,
             bad_tok >= 0 ? " (a bad token id)" : "");
    const int n = (int)pos.size(), Q = c.H * c.D, KVD = c.HKV * c.D, QKV = Q + 2 * KVD,
              N_CTX = 1024;
    const step_weights sw(c);
    const std::vector<tinfer_op_cuda_step_layer> &hl = sw.hl;
    const uint16_t *embd = sw.embd, *onorm = sw.onorm;
    const float *dinv_p = sw.dinv.p;
    const tinfer_op_cuda_step_model m = sw.m;

    /* metadata: token ids, positions, one sequence each, every row wants logits */
    std::vector<int32_t> tok(n), seq(n), rows(n);
    int32_t max_len = 0;
    for (int i = 0; i < n; i++) {
        tok[i] = i == bad_tok ? c.V : (int32_t)(rnd_u32() % (uint32_t)c.V);
        seq[i] = i, rows[i] = i, max_len = std::max(max_len, pos[i] + 1);
    }
    dbuf<int32_t> dtok, dpos, dseq, drows;
    dtok.alloc(n, 0), dtok.put(tok);
    dpos.alloc(n, 0), dpos.put(pos);
    dseq.alloc(n, 0), dseq.put(seq);
    drows.alloc(n, 0), drows.put(rows);

    /* caches: random rows before each position, the sentinel from it on (same for both ways) */
    const size_t csz = (size_t)n * c.L * N_CTX * KVD;
    std::vector<uint16_t> kc, vc;
    random_caches(c, pos, N_CTX, kc, vc);
    std::vector<float> logits[2];
    std::vector<uint16_t> k_after;
    int bad = 0;
    for (int way = 0; way < 2; way++) {
        dbuf<uint16_t> dk, dv, dqkv, datt, dact, dxb;
        dbuf<float> dx, dlg;
        dbuf<uint32_t> dbar;
        dbuf<uint64_t> dll, dam;
        dbuf<int32_t> dids;
        dk.alloc(csz, 0), dk.put(kc);
        dv.alloc(csz, 0), dv.put(vc);
        dqkv.alloc((size_t)n * QKV, SENT_BF16);
        datt.alloc((size_t)n * Q, SENT_BF16);
        dact.alloc((size_t)n * c.F, SENT_BF16);
        dxb.alloc((size_t)n * c.E, SENT_BF16);
        dx.alloc((size_t)n * c.E, 0.0f);
        dlg.alloc((size_t)n * c.V, 0.0f);
        dbar.alloc(2, 0u);
        dam.alloc((size_t)n, (uint64_t)0);
        dids.alloc((size_t)n, -1);
        /* the first launch's epochs run from just under the kernel's wrap threshold past it, so
         * the second one starts again at 1 (over words the first zeroed as it wrapped) */
        dbar.put(std::vector<uint32_t>{0u, 0xefffffffu});
        tinfer_op_cuda_kv kv = {dk.p, dv.p, n, c.L, N_CTX, c.H, c.HKV, c.D};
        dll.alloc(tinfer_op_cuda_step_ll_words(&m, &kv, n), (uint64_t)0);
        if (way == 0) { /* op by op */
            CKT(tinfer_op_cuda_embed(dx.p, embd, dtok.p, n, c.E, c.V, g_stream, &e_));
            for (int l = 0; l < c.L; l++) {
                CKT(tinfer_op_cuda_rmsnorm(dxb.p, dx.p, hl[l].attn_norm, NULL, n, n, c.E, 1e-5f,
                                           g_stream, &e_));
                ref(dxb.p, hl[l].wqkv, hl[l].bqkv, n, QKV, c.E, 0, dqkv.p);
                CKT(tinfer_op_cuda_attention_decode_rope(datt.p, dqkv.p, &kv, l, dinv_p, dpos.p,
                                                         dseq.p, drows.p, n, max_len, NULL, 0,
                                                         g_stream, &e_));
                ref(datt.p, hl[l].wo, hl[l].bo, n, c.E, Q, 1, dx.p);
                CKT(tinfer_op_cuda_rmsnorm(dxb.p, dx.p, hl[l].ffn_norm, NULL, n, n, c.E, 1e-5f,
                                           g_stream, &e_));
                ref(dxb.p, hl[l].wgu, NULL, n, c.F, c.E, 2, dact.p);
                ref(dact.p, hl[l].wdown, NULL, n, c.E, c.F, 1, dx.p);
            }
            CKT(tinfer_op_cuda_rmsnorm(dxb.p, dx.p, onorm, drows.p, n, n, c.E, 1e-5f, g_stream,
                                       &e_));
            ref(dxb.p, embd, NULL, n, c.V, c.E, 3, dlg.p);
        } else {
            int n_sm = 0;
            CK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, 0));
            if (!tinfer_op_cuda_step_ok(&m, &kv, n, max_len, n_sm)) {
                printf("  %s: tinfer_op_cuda_step_ok refuses the case\n", label);
                bad = 1;
                break;
            }
            const tinfer_op_cuda_step_bufs b = {dlg.p, dbar.p, dll.p, n, dam.p, dids.p};
            /* twice: the second launch finds the first one's words under other epochs (and
             * rewrites the same cache rows with the same bits) */
            for (int rep = 0; rep < 2; rep++)
                CKT(tinfer_op_cuda_decode_step(&m, &kv, &b, dtok.p, dpos.p, dseq.p, drows.p, n, n,
                                               max_len, NULL, g_stream, &e_));
        }
        CK(cudaStreamSynchronize(g_stream));
        if (way == 1) { /* the first launch went past the threshold, so the second began at 1
                         * and leaves 1 + (1 + 5 L) for the next; every block counted, reset */
            const std::vector<uint32_t> bar = dbar.get();
            if (bar[0] != 0 || bar[1] != 2u + 5u * (uint32_t)c.L) {
                printf("  %s: after two launches the done count is %u and the epoch %u\n", label,
                       bar[0], bar[1]);
                bad = 1;
            }
            /* the greedy picks gathered in the kernel: each row's argmax of its own logits
             * (tinfer_op_cuda_argmax's rule), and the gathering words zero again */
            const std::vector<float> lg = dlg.get();
            const std::vector<int32_t> ids = dids.get();
            const std::vector<uint64_t> am = dam.get();
            for (int i = 0; i < n; i++) {
                const int32_t want = argmax_ref(lg.data() + (size_t)i * c.V, c.V);
                if (ids[i] != want || am[i] != 0) {
                    printf("  %s: row %d: greedy pick %d, argmax of the logits %d (amax %llx)\n",
                           label, i, ids[i], want, (unsigned long long)am[i]);
                    bad = 1;
                }
            }
        }
        bad |= dlg.guards_ok(label) | dx.guards_ok(label) | dqkv.guards_ok(label) |
               datt.guards_ok(label) | dact.guards_ok(label) | dk.guards_ok(label) |
               dv.guards_ok(label);
        logits[way] = dlg.get();
        if (way == 1) k_after = dk.get();
        dk.free_(), dv.free_(), dqkv.free_(), datt.free_(), dact.free_(), dxb.free_();
        dx.free_(), dlg.free_(), dbar.free_(), dll.free_(), dam.free_(), dids.free_();
    }
    for (int i = 0; i < n && !bad; i++) {
        const float *a = logits[1].data() + (size_t)i * c.V,
                    *r = logits[0].data() + (size_t)i * c.V;
        if (i == bad_tok) { /* an out-of-range token: NaN logits, both ways */
            for (int v = 0; v < c.V && !bad; v++)
                if (!isnan(a[v])) {
                    printf("  %s: row %d (bad token) logit %d = %g, not NaN\n", label, i, v, a[v]);
                    bad = 1;
                }
            continue;
        }
        const double e = rel_rms(a, r, c.V);
        if (!(e <= TOL_STEP)) {
            printf("  %s: row %d (pos %d): relative RMS %.3g against op by op\n", label, i,
                   pos[i], e);
            bad = 1;
        }
    }
    for (int s = 0; s < n && !bad; s++) /* row pos written in every layer, the next one not */
        for (int l = 0; l < c.L && !bad; l++) {
            const size_t row = (((size_t)s * c.L + l) * N_CTX + pos[s]) * KVD;
            const bool written = k_after[row] != SENT_BF16;
            const bool next_clean = pos[s] + 1 >= N_CTX || k_after[row + KVD] == SENT_BF16;
            if (!written || !next_clean) {
                printf("  %s: sequence %d layer %d: cache row %d %s\n", label, s, l, pos[s],
                       !written ? "not written" : "written past it");
                bad = 1;
            }
        }
    verdict(label, bad);
    dtok.free_(), dpos.free_(), dseq.free_(), drows.free_();
}

/* Greedy steps in one launch (tinfer_op_cuda_decode_steps) against the same steps as separate
 * launches, each fed the last one's picks: n sequences from positions p0[s], S steps, the epoch
 * counter starting at ep_start. Both run the same arithmetic in the same order, so the picks,
 * the last step's logits and both caches must match bit for bit; the launch leaves the done
 * count 0 and the epoch S (5 L + 2) - 1 past its first (or 1 where that passes the wrap
 * threshold, with every flagged word zeroed), amax zero, the guard bands whole. */
static void run_steps_case(const step_model &c, const std::vector<int32_t> &p0, int S,
                           uint32_t ep_start) {
    char label[200];
    snprintf(label, sizeof label,
             "decode_steps E=%d heads %d/%d hd=%d F=%d L=%d seqs=%zu from %d, %d steps, epoch %#x",
             c.E, c.H, c.HKV, c.D, c.F, c.L, p0.size(), p0[0], S, ep_start);
    const int n = (int)p0.size(), N_CTX = 1024;
    const step_weights sw(c);
    std::vector<int32_t> tok(n), seq(n), rows(n), pos((size_t)S * n); /* [k n + j]: p0[j] + k */
    int32_t max_len = 0;
    for (int i = 0; i < n; i++) {
        tok[i] = (int32_t)(rnd_u32() % (uint32_t)c.V), seq[i] = i, rows[i] = i;
        for (int k = 0; k < S; k++)
            pos[(size_t)k * n + i] = p0[i] + k;
        max_len = std::max(max_len, p0[i] + S);
    }
    std::vector<uint16_t> kc, vc;
    random_caches(c, p0, N_CTX, kc, vc);
    dbuf<int32_t> dtok, dpos, dseq, drows;
    dtok.alloc(n, 0), dtok.put(tok);
    dpos.alloc(pos.size(), 0), dpos.put(pos);
    dseq.alloc(n, 0), dseq.put(seq);
    drows.alloc(n, 0), drows.put(rows);
    std::vector<int32_t> ids[2];
    std::vector<float> lg[2];
    std::vector<uint16_t> k_after[2], v_after[2];
    int bad = 0;
    int n_sm = 0;
    CK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, 0));
    for (int way = 0; way < 2 && !bad; way++) { /* 0: S launches, 1: one launch of S steps */
        dbuf<uint16_t> dk, dv;
        dbuf<float> dlg;
        dbuf<uint32_t> dbar;
        dbuf<uint64_t> dll, dam;
        dbuf<int32_t> dids;
        dk.alloc(kc.size(), 0), dk.put(kc);
        dv.alloc(vc.size(), 0), dv.put(vc);
        dlg.alloc((size_t)n * c.V, 0.0f);
        dbar.alloc(2, 0u);
        dbar.put(std::vector<uint32_t>{0u, ep_start});
        dam.alloc((size_t)n, (uint64_t)0);
        dids.alloc((size_t)S * n, -1);
        tinfer_op_cuda_kv kv = {dk.p, dv.p, n, c.L, N_CTX, c.H, c.HKV, c.D};
        dll.alloc(tinfer_op_cuda_step_ll_words(&sw.m, &kv, n), (uint64_t)0);
        if (!tinfer_op_cuda_step_ok(&sw.m, &kv, n, max_len, n_sm)) {
            printf("  %s: tinfer_op_cuda_step_ok refuses the case\n", label);
            bad = 1;
            break;
        }
        if (way == 0) {
            for (int k = 0; k < S; k++) {
                const tinfer_op_cuda_step_bufs b = {dlg.p, dbar.p, dll.p,
                                                    n,     dam.p,  dids.p + (size_t)k * n};
                CKT(tinfer_op_cuda_decode_step(
                    &sw.m, &kv, &b, k ? dids.p + (size_t)(k - 1) * n : dtok.p,
                    dpos.p + (size_t)k * n, dseq.p, drows.p, n, n, max_len, NULL, g_stream, &e_));
            }
        } else {
            const tinfer_op_cuda_step_bufs b = {dlg.p, dbar.p, dll.p, n, dam.p, dids.p};
            CKT(tinfer_op_cuda_decode_steps(&sw.m, &kv, &b, dtok.p, dpos.p, dseq.p, drows.p, n, n,
                                            S, max_len, NULL, g_stream, &e_));
        }
        CK(cudaStreamSynchronize(g_stream));
        if (way == 1) {
            const std::vector<uint32_t> bar = dbar.get();
            const uint64_t next = (uint64_t)ep_start + (uint64_t)S * (5u * c.L + 2u) - 1u;
            const uint32_t want = next > 0xf0000000u ? 1u : (uint32_t)next;
            const std::vector<uint64_t> am = dam.get();
            bool am_zero = true;
            for (uint64_t w : am)
                am_zero &= w == 0;
            if (bar[0] != 0 || bar[1] != want || !am_zero) {
                printf("  %s: done count %u, epoch %u (want %u), amax %s\n", label, bar[0], bar[1],
                       want, am_zero ? "zero" : "not zero");
                bad = 1;
            }
            /* past the wrap threshold the launch leaves every flagged word zero (epoch 0: none
             * a later step waits for) */
            size_t flagged = 0;
            if (want == 1u)
                for (uint64_t w : dll.get())
                    flagged += w != 0;
            if (flagged) {
                printf("  %s: %zu flagged words left nonzero after the epoch wrapped\n", label,
                       flagged);
                bad = 1;
            }
        }
        bad |= dlg.guards_ok(label) | dk.guards_ok(label) | dv.guards_ok(label) |
               dids.guards_ok(label) | dll.guards_ok(label);
        ids[way] = dids.get(), lg[way] = dlg.get();
        k_after[way] = dk.get(), v_after[way] = dv.get();
        dk.free_(), dv.free_(), dlg.free_(), dbar.free_(), dll.free_(), dam.free_(), dids.free_();
    }
    for (size_t i = 0; i < ids[0].size() && !bad; i++)
        if (ids[0][i] != ids[1][i] || ids[1][i] < 0 || ids[1][i] >= c.V) {
            printf("  %s: step %zu sequence %zu: pick %d in one launch, %d in separate ones\n",
                   label, i / n, i % n, ids[1][i], ids[0][i]);
            bad = 1;
        }
    if (!bad && (memcmp(lg[0].data(), lg[1].data(), lg[0].size() * sizeof(float)) ||
                 k_after[0] != k_after[1] || v_after[0] != v_after[1])) {
        printf("  %s: the last logits or the caches differ from separate launches\n", label);
        bad = 1;
    }
    /* every step wrote its cache row in every layer, the row after the last step's is clean */
    const size_t KVD = (size_t)c.HKV * c.D;
    for (int s = 0; s < n && !bad; s++)
        for (int l = 0; l < c.L && !bad; l++)
            for (int k = 0; k <= S && !bad; k++) {
                const int32_t p = p0[s] + k;
                if (p >= N_CTX) break;
                const size_t row = (((size_t)s * c.L + l) * N_CTX + p) * KVD;
                if ((k_after[1][row] != SENT_BF16) != (k < S)) {
                    printf("  %s: sequence %d layer %d: cache row %d %s\n", label, s, l, p,
                           k < S ? "not written" : "written past the last step");
                    bad = 1;
                }
            }
    verdict(label, bad);
    dtok.free_(), dpos.free_(), dseq.free_(), drows.free_();
}

/* Host checks (no GPU needed): what tinfer_op_cuda_step_ok accepts, and the launcher's argument
 * errors, which return before any CUDA call. */
void test_decode_step_host(void) {
    const tinfer_op_cuda_step_layer layer = {0};
    const tinfer_op_cuda_step_model m = {1,    576,  1536, 49152, 1e-5f,
                                         &layer, NULL, NULL, NULL, NULL};
    tinfer_op_cuda_kv kv = {NULL, NULL, 8, 1, 2048, 9, 3, 64};
    int bad = 0;
    const int32_t G = 132; /* an H100's or H200's grid */
    bad |= !tinfer_op_cuda_step_ok(&m, &kv, 1, 1024, G); /* SmolLM2, 1 token, 1,024 keys */
    bad |= !tinfer_op_cuda_step_ok(&m, &kv, 8, 1, G);    /* 8 tokens */
    bad |= !tinfer_op_cuda_step_ok(&m, &kv, 1, 1, 66);   /* a smaller GPU: larger slices, 3 stages */
    bad |= tinfer_op_cuda_step_ok(&m, &kv, 1, 1, 32);    /* 32 blocks: two stages do not fit */
    bad |= tinfer_op_cuda_step_ok(&m, &kv, 1, 1, 0);     /* no grid */
    bad |= tinfer_op_cuda_step_ok(&m, &kv, 9, 1, G);     /* over 8 tokens */
    bad |= tinfer_op_cuda_step_ok(&m, &kv, 0, 1, G);     /* none */
    bad |= tinfer_op_cuda_step_ok(&m, &kv, 1, 1025, G);  /* over 1,024 keys */
    tinfer_op_cuda_kv kv96 = kv;
    kv96.head_dim = 96;
    bad |= tinfer_op_cuda_step_ok(&m, &kv96, 1, 1, G); /* head_dim 96 */
    tinfer_op_cuda_step_model big = m;
    big.n_ff = 14336; /* Llama-3-8B's F: a block's gate/up slice does not fit the shared memory */
    bad |= tinfer_op_cuda_step_ok(&big, &kv, 1, 1, G);
    tinfer_err err;
    err.msg[0] = 0;
    const int32_t one = 0;
    /* buffers that are never touched: each call stops at its argument check first */
    float lg;
    uint32_t bar[2];
    uint64_t ll;
    const tinfer_op_cuda_step_bufs b = {&lg, bar, &ll, 4}, b0 = {NULL, NULL, NULL, 4};
    bad |= tinfer_op_cuda_decode_step(&m, &kv, &b0, &one, &one, &one, &one, 1, 1, 1, NULL, NULL,
                                      &err) != TINFER_ERR_INVALID_ARG; /* no buffers */
    bad |= tinfer_op_cuda_decode_step(&m, &kv, &b, &one, &one, &one, &one, 5, 1, 1, NULL, NULL,
                                      &err) != TINFER_ERR_INVALID_ARG; /* over n_max */
    bad |= tinfer_op_cuda_decode_step(&m, &kv, &b, &one, &one, &one, &one, 9, 1, 1, NULL, NULL,
                                      &err) != TINFER_ERR_INVALID_ARG;
    bad |= tinfer_op_cuda_decode_step(&m, &kv, &b, &one, &one, &one, NULL, 1, 1, 1, NULL, NULL,
                                      &err) != TINFER_ERR_INVALID_ARG;
    bad |= tinfer_op_cuda_decode_step(&m, &kv, &b, &one, &one, &one, &one, 1, 2, 1, NULL, NULL,
                                      &err) != TINFER_ERR_INVALID_ARG;
    /* several steps: without greedy picks, with fewer output rows than tokens, too many */
    uint64_t am[4];
    int32_t ids[8];
    const tinfer_op_cuda_step_bufs bg = {&lg, bar, &ll, 4, am, ids};
    bad |= tinfer_op_cuda_decode_steps(&m, &kv, &b, &one, &one, &one, &one, 1, 1, 2, 1, NULL,
                                       NULL, &err) != TINFER_ERR_INVALID_ARG;
    bad |= tinfer_op_cuda_decode_steps(&m, &kv, &bg, &one, &one, &one, &one, 2, 1, 2, 1, NULL,
                                       NULL, &err) != TINFER_ERR_INVALID_ARG;
    bad |= tinfer_op_cuda_decode_steps(&m, &kv, &bg, &one, &one, &one, &one, 1, 1, 0, 1, NULL,
                                       NULL, &err) != TINFER_ERR_INVALID_ARG;
    bad |= tinfer_op_cuda_decode_steps(&m, &kv, &bg, &one, &one, &one, &one, 1, 1,
                                       TINFER_OP_CUDA_STEP_MAX_STEPS + 1, 1, NULL, NULL,
                                       &err) != TINFER_ERR_INVALID_ARG;
    verdict("decode_step host checks (step_ok, argument errors)", bad);
}

void test_decode_step_all(int quick) {
    const std::vector<int32_t> lens = {0, 1, 63, 64, 65, 511, 1023};
    run_step_case({128, 4, 2, 64, 256, 2, 500}, lens, -1);
    /* one token (the one-token instance), from the first position (no cached key) to the last */
    for (int32_t p : {0, 1, 2, 63, 64, 65, 1023})
        run_step_case({128, 4, 2, 64, 256, 2, 500}, {p}, -1);
    run_step_case({128, 4, 2, 64, 256, 2, 500}, {5, 9, 17}, 2);
    run_step_case({128, 4, 2, 64, 256, 2, 500}, {3, 300}, -1); /* the 2-token instance */
    /* SmolLM2's heads (9 over 3 KV heads), one token and three; a GQA group of 5 */
    run_step_case({576, 9, 3, 64, 1536, 2, 1000}, {70}, -1);
    run_step_case({576, 9, 3, 64, 1536, 2, 1000}, {0, 64, 1023}, -1);
    run_step_case({320, 10, 2, 64, 512, 2, 500}, {1, 200}, -1);
    /* attention blocks without QKV rows (ds_na) in every instance: on 132 SMs, 448 QKV rows
     * at 4 a block leave room for 20 blocks to take none, so 5 heads of up to 4 tokens do
     * (SmolLM2's one token and the 4-head model's, above, do too) */
    run_step_case({320, 5, 1, 64, 512, 2, 500}, {70}, -1);
    run_step_case({320, 5, 1, 64, 512, 2, 500}, {1, 65}, -1);
    run_step_case({320, 5, 1, 64, 512, 2, 500}, {3, 70, 200, 0}, -1);
    /* the several-token instance full (8 tokens), and with more rows a block than one pass of
     * its tensor-core phases takes (132 SMs: QKV 6,144 -> 47 rows a block, 2 passes of 32;
     * gate 4,864 -> 37, 3 passes of 16); the one-token instance on the same shapes */
    run_step_case({576, 9, 3, 64, 1536, 2, 1000}, {0, 1, 2, 63, 64, 65, 511, 1023}, -1);
    run_step_case({256, 16, 16, 128, 4864, 2, 700}, {1, 5, 64, 100, 7}, -1);
    run_step_case({256, 16, 16, 128, 4864, 2, 700}, {70}, -1);
    run_step_case({256, 16, 16, 128, 4864, 2, 700}, {64, 3}, -1); /* 2 tokens, 3 passes */
    /* greedy steps in one launch: one token (from no cached key; up to the 1,024-key limit;
     * across the epoch wrap), 2 tokens, 3 (the tensor-core instance), head_dim 128 */
    run_steps_case({128, 4, 2, 64, 256, 2, 500}, {0}, 5, 1u);
    run_steps_case({128, 4, 2, 64, 256, 2, 500}, {1017}, 7, 1u);
    run_steps_case({576, 9, 3, 64, 1536, 2, 1000}, {60}, 6, 0xefffffe0u);
    run_steps_case({128, 4, 2, 64, 256, 2, 500}, {3, 300}, 4, 7u);
    run_steps_case({320, 5, 1, 64, 512, 2, 500}, {3, 70, 0}, 4, 1u);
    run_steps_case({256, 16, 16, 128, 4864, 2, 700}, {70}, 3, 1u);
    if (!quick) {
        run_steps_case({576, 9, 3, 64, 1536, 2, 1000}, {0, 1, 2, 63, 64, 65, 511, 1000}, 9, 1u);
        run_step_case({256, 2, 1, 128, 512, 2, 1000}, lens, -1);
        for (int32_t p : {0, 65, 1023})
            run_step_case({256, 2, 1, 128, 512, 2, 1000}, {p}, -1);
    }
}

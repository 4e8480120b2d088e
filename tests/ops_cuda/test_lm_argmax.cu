/*
 * test_lm_argmax.cu — tinfer_op_cuda_lm_argmax (ops/cuda/lm_argmax.cu) against the LM head and
 * argmax on the host: the logits of the same BF16 inputs summed in double, their argmax by the
 * greedy rule.
 *
 * The kernel sums each logit in F32 in its own order, so its pick is checked by value: the
 * host's logit at the GPU's pick must be within the F32 summation bound of the host's maximum,
 * TOL = 2 E 2^-24 sum_k |x_k w_k| (the classic recursive-summation bound (E - 1) u sum |terms|,
 * doubled for the mma's internal ordering). Where the host's best and second-best distinct
 * values are further apart than that, the pick must be the host's exactly. Planted cases: the
 * best row of X row 0 copied to a lower index and to the last one (identical rows give
 * bit-identical logits, so the lower copy must win the tie), and a NaN in weight row 0 (that
 * row's logits are NaN for every X row and must never be picked). Called twice: the words must
 * come back zero and the picks equal.
 */
#include "tests/ops_cuda/test_ops_cuda.h"

#include <limits.h>

static void test_lm_argmax(int32_t n, int32_t V, int32_t E, int64_t ldx) {
    char label[128];
    snprintf(label, sizeof label, "lm_argmax n=%d V=%d E=%d ldx=%lld", n, V, E, (long long)ldx);
    std::vector<uint16_t> X((size_t)n * ldx), W((size_t)V * E);
    for (auto &x : X)
        x = rnd_bf16(1.0f);
    for (auto &w : W)
        w = rnd_bf16(0.1f);
    std::vector<float> xf(X.size()), wf(W.size());
    for (size_t i = 0; i < X.size(); i++)
        xf[i] = tinfer_bf16_to_f32(X[i]);
    auto widen_w = [&]() {
        for (size_t i = 0; i < W.size(); i++)
            wf[i] = tinfer_bf16_to_f32(W[i]);
    };
    /* the logits of X row r over weight rows [0, V) in double, with each one's |terms| sum */
    auto logits = [&](int32_t r, std::vector<double> &lg, std::vector<double> &mag) {
        for (int32_t j = 0; j < V; j++) {
            double s = 0, m = 0;
            for (int32_t k = 0; k < E; k++) {
                const double p = (double)xf[(size_t)r * ldx + k] * wf[(size_t)j * E + k];
                s += p, m += fabs(p);
            }
            lg[j] = s, mag[j] = m;
        }
    };
    std::vector<double> lg(V), mag(V);
    /* planted: X row 0's best weight row copied below it and to the last row (V >= 3) */
    int32_t tie_lo = -1;
    if (V >= 3) {
        widen_w();
        logits(0, lg, mag);
        int32_t m = 0;
        for (int32_t j = 1; j < V; j++)
            if (lg[j] > lg[m]) m = j;
        if (m == V - 1) { /* move it off the last row first */
            memcpy(&W[(size_t)(V / 2) * E], &W[(size_t)m * E], (size_t)E * 2);
            m = V / 2;
        }
        tie_lo = m / 2 < m ? m / 2 : -1;
        if (tie_lo >= 0) memcpy(&W[(size_t)tie_lo * E], &W[(size_t)m * E], (size_t)E * 2);
        memcpy(&W[(size_t)(V - 1) * E], &W[(size_t)m * E], (size_t)E * 2);
        if (tie_lo == 0) tie_lo = -1; /* row 0 takes the NaN below */
    }
    W[3 % E] = 0x7fc0; /* weight row 0: a NaN logit for every X row */
    widen_w();

    dbuf<uint16_t> dx, dw;
    dbuf<int32_t> di;
    dbuf<unsigned long long> dws;
    dx.alloc(X.size(), 0);
    dx.put(X);
    dw.alloc(W.size(), 0);
    dw.put(W);
    di.alloc(n, SENT_I32);
    dws.alloc(2 * (size_t)n, 0ull);
    std::vector<int32_t> ids, first;
    int bad = 0;
    for (int rep = 0; rep < 2 && !bad; rep++) {
        CKT(tinfer_op_cuda_lm_argmax(di.p, dx.p, ldx, dw.p, E, n, V, E, dws.p, g_stream, &e_));
        CK(cudaStreamSynchronize(g_stream));
        ids = di.get();
        if (rep == 0) first = ids;
        bad |= di.guards_ok(label) | dws.guards_ok(label);
        for (unsigned long long w : dws.get())
            if (w != 0) {
                printf("  %s: the words not left zero\n", label);
                bad = 1;
                break;
            }
        if (rep == 1 && ids != first) {
            printf("  %s: two calls picked differently\n", label);
            bad = 1;
        }
    }
    for (int32_t r = 0; r < n && !bad; r++) {
        logits(r, lg, mag);
        int32_t best = -1;
        for (int32_t j = 0; j < V; j++)
            if (!isnan(lg[j]) && (best < 0 || lg[j] > lg[best])) best = j;
        double second = -INFINITY; /* the best value below the maximum */
        for (int32_t j = 0; j < V; j++)
            if (!isnan(lg[j]) && lg[j] < lg[best] && lg[j] > second) second = lg[j];
        const int32_t id = ids[r];
        if (best < 0) { /* every logit NaN: 0, as the argmax of a row of only NaN */
            if (id != 0) printf("  %s: row %d: every logit NaN, picked %d\n", label, r, id);
            bad |= id != 0;
            continue;
        }
        const double tol = 2.0 * E * ldexp(1.0, -24) * mag[best];
        const bool in_range = id >= 0 && id < V;
        const bool close = in_range && lg[id] >= lg[best] - tol; /* false for NaN */
        const bool clear = lg[best] - second > 2 * tol;
        if (!close || (clear && lg[id] != lg[best]) ||
            (r == 0 && clear && tie_lo >= 0 && id != tie_lo)) {
            printf("  %s: row %d: picked %d (%.6g), host best %d (%.6g), tie copy %d, tol %.3g\n",
                   label, r, id, in_range ? lg[id] : NAN, best, lg[best], r == 0 ? tie_lo : -1,
                   tol);
            bad = 1;
        }
    }
    verdict(label, bad);
    dx.free_(), dw.free_(), di.free_(), dws.free_();
}

void test_lm_argmax_host(void) {
    tinfer_err e;
    uint16_t h[8] __attribute__((aligned(16)));
    int32_t i4[4];
    unsigned long long w[8];
    struct {
        const char *label;
        int32_t n, V, E;
        int64_t ldx;
    } bad[] = {{"lm_argmax n>64", 65, 10, 8, 8},
               {"lm_argmax E%8", 1, 10, 12, 16},
               {"lm_argmax E>1024", 1, 10, 1032, 1032},
               {"lm_argmax ldx<E", 1, 10, 16, 8},
               {"lm_argmax V=0", 1, 0, 8, 8}};
    for (const auto &b : bad) {
        e.msg[0] = 0;
        const tinfer_status st =
            tinfer_op_cuda_lm_argmax(i4, h, b.ldx, h, b.E, b.n, b.V, b.E, w, nullptr, &e);
        const int fail = st != TINFER_ERR_INVALID_ARG || !e.msg[0] || strchr(e.msg, '\n');
        if (fail) printf("  %s: status %d msg '%s'\n", b.label, (int)st, e.msg);
        verdict(b.label, fail);
    }
    const bool takes_ok = tinfer_op_cuda_lm_argmax_takes(64, 576) &&
                          tinfer_op_cuda_lm_argmax_takes(1, 1024) &&
                          !tinfer_op_cuda_lm_argmax_takes(65, 576) &&
                          !tinfer_op_cuda_lm_argmax_takes(8, 4096) &&
                          !tinfer_op_cuda_lm_argmax_takes(0, 576);
    verdict("lm_argmax_takes", !takes_ok);
}

void test_lm_argmax_all(int quick) {
    test_lm_argmax(1, 1, 8, 8);       /* one weight row, one X row */
    test_lm_argmax(3, 13, 64, 72);    /* V within one 16-row tile; ldx > E */
    test_lm_argmax(8, 1000, 136, 136); /* E % 32 != 0: a last chunk of lanes without k */
    test_lm_argmax(9, 4099, 576, 576); /* two X tiles, the second of one row */
    test_lm_argmax(33, 5003, 1024, 1024); /* the largest E: 5 tiles, 4 chunks of 32 k x 8 */
    test_lm_argmax(64, 2051, 576, 584);
    if (!quick) test_lm_argmax(64, 49152, 576, 576); /* SmolLM2's LM head, 64 streams */
}

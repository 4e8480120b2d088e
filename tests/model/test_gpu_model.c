/*
 * test_gpu_model.c — the CUDA backend against the CPU backend on the same model (label gpu;
 * exit 77, skipped, where the CUDA backend cannot load: no GPU, or a build without CUDA).
 *
 *   test_gpu_model CONFIG_DIR [CONFIG_DIR...]
 *
 * Each directory holds a config.json; both backends load it with the same random weights
 * (tinfer_model_params.random_weights, seed 7), so they read identical BF16 weights. Checks:
 *   1. logits, GPU vs CPU, after a 37-token prefill (every row's logits) and after 8 decode
 *      steps: relative RMS error <= TOL_REL_RMS, and the argmax agrees on >= 90% of the rows;
 *   2. prefill = decode on the GPU: the logits of position t from the prefill equal those of
 *      the same tokens fed one at a time, within the same bound;
 *   3. greedy tokens: 16 tokens from a 5-token prompt, identical on both backends;
 *   4. batched decode: 4 sequences of different prompt lengths decoded together (M = 4 every
 *      step) give each sequence the tokens it gets decoded alone, on the GPU.
 *   4b. tinfer_decode_greedy_batch of the same 4 sequences (15 steps queued in one call, the
 *      picks fed on the device between graph replays) gives each the tokens it gets alone;
 *   4c. the same in the default context, whose steps of up to 8 sequences run fused (the picks
 *      fed between fused steps): every step fused.
 *   1b. the fused decode step (cuda_fused_decode = 1, ops/cuda/decode_step.cu) against the
 *      op-by-op path on the same tokens; it must have run for every decode step.
 *   5. the default context (cuda_fused_decode < 0: one sequence's decode steps fused) gives
 *      each sequence of 4 the greedy tokens of the op-by-op path, alone; its steps ran fused.
 *   6. tinfer_decode_greedy (two calls) gives the tokens of step-by-step greedy decoding in the
 *      same context, exactly: queued fused steps in the default context (all of them fused),
 *      one step at a time in the op-by-op one.
 *   6b. 80 greedy steps in one tinfer_decode_greedy_batch call give the tokens of a step a
 *      call in the same default context, exactly: 1 sequence (one launch of 80 fused steps),
 *      then 4 (launches of up to 64).
 *   7. sequences decoded together, each step's rows of logits GPU vs CPU within TOL_REL_RMS:
 *      12 as one chain (M = 12: the RMSNorms split between the GEMMs around them,
 *      models/backend_cuda_step.c; the replayed step ran at most 6 n_layer + 5 kernels), 24 as
 *      two concurrent chains of 12 (cuda_micro_batches = 2; split in each chain) and 11 as
 *      three of 3-4 (decode GEMVs, the RMSNorm inside rung 08; every third row without logits):
 *      every chain ran a whole step.
 *   In 3, 4 and 4b two runs may part at a step whose top two logits are a tie within the bound
 *   below (random weights make such steps common; the kernels for M = 1 and M = 4 sum in
 *   different orders): the test prints where, and fails on any other difference.
 * Tolerance: the GPU rounds every GEMM input (normed activations, attention output, SwiGLU
 * output) and the KV cache to BF16 (8 significant bits, relative error <= 2^-9), four to five
 * roundings per layer, where the CPU keeps F32. Independent roundings add in quadrature: 30
 * layers x 5 x 2^-9 / sqrt(3) (uniform rounding error) ~ 0.014 relative RMS on the residual
 * stream; the final norm and the LM head keep it. TOL_REL_RMS = 0.05 leaves 3x for the
 * correlated part; an indexing or layout bug gives O(1). NaN fails every comparison.
 */
#include "tinfer.h"
#include "logits_util.h"
#include "test_util.h"
#include "gpu_model_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_REL_RMS 0.05
#define TOL_FUSED 0.02
#define N_GREEDY 16

/* Greedy sequences must agree token for token; they may part only at a step whose top two
 * logits were a tie within the BF16 bound (gap[k] < TOL_REL_RMS): there the two computations
 * round differently by construction, and the rest follows a different prefix. */
static int same_until_tie(const tinfer_token *a, const tinfer_token *b, const double *gap, int n,
                          const char *what) {
    for (int k = 0; k < n; k++)
        if (a[k] != b[k]) {
            printf("  %s: identical for %d tokens, then %s (top-2 gap %.4f)\n", what, k,
                   gap[k] < TOL_REL_RMS ? "a tie" : "NOT a tie", gap[k]);
            return gap[k] < TOL_REL_RMS;
        }
    printf("  %s: identical for all %d tokens\n", what, n);
    return 1;
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Greedy decoding of one sequence alone in context c: the prompt tok[0..plen) in one step, then
 * N_GREEDY tokens one step each into out (and each step's top-2 gap into gap, when not NULL).
 * 0, or 1 when a decode call failed (the context says why). */
static int greedy_alone(tinfer_context *c, const tinfer_token *tok, int32_t plen, int32_t V,
                        tinfer_token *out, double *gap) {
    int32_t pos[64], seq[64] = {0};
    if (plen > 64) return 1;
    tinfer_seq_clear(c, -1);
    for (int32_t i = 0; i < plen; i++)
        pos[i] = i;
    tinfer_batch b = {plen, tok, pos, seq, NULL};
    if (tinfer_decode(c, &b) != TINFER_OK) return 1;
    const float *l = tinfer_get_logits(c, plen - 1);
    for (int32_t k = 0; k < N_GREEDY; k++) {
        out[k] = argmax(l, V);
        if (gap) gap[k] = top2_gap(l, V);
        int32_t p = plen + k, q = 0;
        tinfer_batch one = {1, &out[k], &p, &q, NULL};
        if (tinfer_decode(c, &one) != TINFER_OK) return 1;
        l = tinfer_get_logits(c, 0);
    }
    return 0;
}

/* The prompts of ns sequences (sequence s: tok + s, plen[s] tokens, 64 in all at most) as one
 * step from an empty cache, each asking for its last token's argmax only: first[s]. false when
 * they do not fit or the step failed (the context says why). */
static bool prefill_argmax(tinfer_context *c, const tinfer_token *tok, const int32_t *plen,
                           int32_t ns, tinfer_token *first) {
    tinfer_token bt[64];
    int32_t pos[64], seq[64], last[8] = {0}, n = 0;
    int8_t want[64];
    if (ns > 8) return false;
    tinfer_seq_clear(c, -1);
    for (int32_t s = 0; s < ns; s++) {
        if (plen[s] < 1 || plen[s] > 64 - n) return false;
        for (int32_t i = 0; i < plen[s]; i++, n++) {
            bt[n] = tok[s + i], pos[n] = i, seq[n] = s;
            want[n] = i == plen[s] - 1 ? 2 : 0;
        }
        last[s] = n - 1;
    }
    tinfer_batch b = {n, bt, pos, seq, want};
    if (tinfer_decode(c, &b) != TINFER_OK) return false;
    for (int32_t s = 0; s < ns; s++)
        first[s] = tinfer_get_argmax(c, last[s]);
    return true;
}

/* The same through tinfer_decode_greedy: the prompt in one step, its argmax as out[0], then two
 * calls for the other N_GREEDY - 1 picks, of whose steps *fused ran fused. 0, or 1 when a call
 * failed or made fewer picks. */
static int greedy_calls(tinfer_context *c, const tinfer_token *tok, int32_t plen,
                        tinfer_token *out, int64_t *fused) {
    int32_t na = 0, nb = 0;
    if (!prefill_argmax(c, tok, &plen, 1, out)) return 1;
    tinfer_context_stats s0 = {0}, s1 = {0};
    tinfer_context_get_stats(c, &s0);
    const int32_t first = (N_GREEDY - 1) / 2;
    if (tinfer_decode_greedy(c, 0, out[0], first, out + 1, &na) != TINFER_OK || na != first)
        return 1;
    if (tinfer_decode_greedy(c, 0, out[na], N_GREEDY - 1 - na, out + 1 + na, &nb) != TINFER_OK)
        return 1;
    tinfer_context_get_stats(c, &s1);
    *fused = s1.fused_steps - s0.fused_steps;
    return na + nb == N_GREEDY - 1 && tinfer_seq_len(c, 0) == plen + N_GREEDY - 1 ? 0 : 1;
}

/* Check 4b / 4c: the 4 sequences' greedy steps queued on the device in one call
 * (tinfer_decode_greedy_batch: the picks fed on the device between steps), given out of sequence
 * order, in context c of model g: each sequence gets the tokens gg[s] it gets decoded alone.
 * fused: c's steps must all have run fused (the default context at 4 sequences); else op by op,
 * replaying the step's graph. */
static void greedy_batch(tinfer_model *g, tinfer_context *c, const tinfer_token *tok,
                         const int32_t plen[4], tinfer_token gg[4][N_GREEDY],
                         double gap[4][N_GREEDY], bool fused) {
    enum { NQ = N_GREEDY - 1 };
    tinfer_token by_seq[4], first[4], out[4 * NQ];
    int32_t n_out[4];
    const char *how = fused ? "fused" : "op by op";
    if (!prefill_argmax(c, tok, plen, 4, by_seq)) {
        CHECK(0, "batched prefill (argmax only, %s): %s", how, tinfer_context_last_error(c));
        return;
    }
    const int32_t order[4] = {2, 0, 3, 1};
    for (int32_t i = 0; i < 4; i++)
        first[i] = by_seq[order[i]];
    tinfer_context_stats q0 = {0}, q1 = {0};
    tinfer_context_get_stats(c, &q0);
    const tinfer_status qs = tinfer_decode_greedy_batch(c, 4, order, first, NQ, out, n_out);
    tinfer_context_get_stats(c, &q1);
    if (qs != TINFER_OK) {
        CHECK(0, "decode_greedy_batch (%s): %s", how, tinfer_context_last_error(c));
        return;
    }
    for (int32_t i = 0; i < 4; i++) {
        const int32_t s = order[i];
        tinfer_token gq[N_GREEDY];
        gq[0] = first[i];
        for (int32_t k = 0; k < NQ; k++)
            gq[k + 1] = k < n_out[i] ? out[i * NQ + k] : -1;
        char what[80];
        snprintf(what, sizeof what, "sequence %d decode_greedy_batch (%s) vs alone", (int)s, how);
        /* a pick that ends generation stops the sequence early: compare what it made */
        const bool eog = n_out[i] < NQ && n_out[i] > 0 &&
                         tinfer_token_is_eog(g, out[i * NQ + n_out[i] - 1]);
        CHECK(n_out[i] == NQ || eog,
              "sequence %d: decode_greedy_batch (%s) made %d of %d picks without ending "
              "generation", (int)s, how, (int)n_out[i], (int)NQ);
        CHECK(same_until_tie(gg[s], gq, gap[s], 1 + n_out[i], what),
              "sequence %d: decode_greedy_batch (%s) differs from alone at a step that was no tie",
              (int)s, how);
        CHECK(tinfer_seq_len(c, s) == plen[s] + n_out[i],
              "sequence %d holds %d tokens after decode_greedy_batch (%s), expected %d", (int)s,
              (int)tinfer_seq_len(c, s), how, (int)(plen[s] + n_out[i]));
    }
    const long long steps = q1.steps - q0.steps, replays = q1.graph_replays - q0.graph_replays,
                    nf = q1.fused_steps - q0.fused_steps,
                    nla = q1.lm_argmax_steps - q0.lm_argmax_steps;
    printf("  decode_greedy_batch (%s): %lld steps, %lld graph replays, %lld fused, %lld with "
           "the LM head + argmax kernel\n", how, steps, replays, nf, nla);
    if (fused)
        CHECK(nf >= NQ && nf == steps && nla == 0, "decode_greedy_batch ran %lld of its %lld "
              "steps fused (expected all, >= %d), %lld op by op with the LM head + argmax kernel",
              nf, steps, (int)NQ, nla);
    else
        CHECK(replays >= NQ - 2 && nf == 0, "decode_greedy_batch (op by op) replayed %lld graphs "
              "and fused %lld steps in %d", replays, nf, (int)NQ);
    /* op by op, only the picks wanted: the LM head and argmax run as one kernel (unless the
     * switch keeps the GEMM) */
    const char *lma = getenv("TINFER_CUDA_LM_ARGMAX");
    if (!fused && !(lma && !strcmp(lma, "0")))
        CHECK(nla >= NQ, "decode_greedy_batch (op by op): %lld of %lld steps ran the LM head + "
              "argmax kernel, expected every one (>= %d)", nla, steps, (int)NQ);
}

/* Check 6b: ns sequences (prompt s: tok + s, plen[s] tokens) decoded greedily for N_LONG steps
 * in context c, once a tinfer_decode a step (every row asking for its argmax) and once through
 * tinfer_decode_greedy_batch: the same tokens exactly, where both run the same fused kernel
 * (the default context, up to 8 sequences), the second time as few launches of many steps
 * (tinfer_op_cuda_decode_steps: all N_LONG in one for one sequence). Every step must have run
 * fused. A pick that ends generation ends that sequence's comparison. */
#define N_LONG 80
static void greedy_long(tinfer_model *g, tinfer_context *c, const tinfer_token *tok,
                        const int32_t *plen, int32_t ns) {
    static tinfer_token ref[8][N_LONG], out[8 * N_LONG];
    tinfer_token first[8], cur[8];
    int32_t pos[8], seq[8], n_out[8];
    int8_t want[8];
    if (!prefill_argmax(c, tok, plen, ns, first)) {
        CHECK(0, "greedy_long prefill (%d sequences): %s", (int)ns, tinfer_context_last_error(c));
        return;
    }
    for (int32_t s = 0; s < ns; s++)
        cur[s] = first[s], seq[s] = s, want[s] = 2;
    for (int32_t k = 0; k < N_LONG; k++) { /* a step a call */
        for (int32_t s = 0; s < ns; s++)
            pos[s] = plen[s] + k;
        tinfer_batch b = {ns, cur, pos, seq, want};
        if (tinfer_decode(c, &b) != TINFER_OK) {
            CHECK(0, "greedy_long step %d: %s", (int)k, tinfer_context_last_error(c));
            return;
        }
        for (int32_t s = 0; s < ns; s++)
            ref[s][k] = cur[s] = tinfer_get_argmax(c, s);
    }
    if (!prefill_argmax(c, tok, plen, ns, first)) {
        CHECK(0, "greedy_long prefill again: %s", tinfer_context_last_error(c));
        return;
    }
    tinfer_context_stats q0 = {0}, q1 = {0};
    tinfer_context_get_stats(c, &q0);
    const tinfer_status qs = tinfer_decode_greedy_batch(c, ns, seq, first, N_LONG, out, n_out);
    tinfer_context_get_stats(c, &q1);
    if (qs != TINFER_OK) {
        CHECK(0, "greedy_long (%d sequences): %s", (int)ns, tinfer_context_last_error(c));
        return;
    }
    for (int32_t s = 0; s < ns; s++) {
        const int32_t m = n_out[s];
        CHECK(m == N_LONG || (m > 0 && tinfer_token_is_eog(g, out[s * N_LONG + m - 1])),
              "greedy_long: sequence %d made %d of %d picks without ending generation", (int)s,
              (int)m, N_LONG);
        CHECK(!memcmp(ref[s], out + s * N_LONG, (size_t)m * sizeof(tinfer_token)),
              "greedy_long: sequence %d of %d: one call's tokens differ from a step a call",
              (int)s, (int)ns);
    }
    const long long steps = q1.steps - q0.steps, nf = q1.fused_steps - q0.fused_steps;
    printf("  decode_greedy_batch of %d sequences, %d steps: %lld steps, %lld fused, the tokens "
           "of a step a call\n", (int)ns, N_LONG, steps, nf);
    CHECK(steps > 0 && nf == steps, "greedy_long: %lld of %lld steps fused", nf, steps);
}

/* Check 7: NS sequences (prompts of 1 .. 10 tokens) decoded together for 4 steps, GPU vs CPU,
 * the GPU context running each decode step as `micro` concurrent chains of kernels
 * (cuda_micro_batches). Each step's NS rows of logits within TOL_REL_RMS of the CPU's (with 3
 * chains every third row asks for none, so a chain's logits rows are not its token rows). The
 * replayed step's kernels: with one chain at most 6 n_layer + 5 (split RMSNorms: 5 a layer and
 * 5 more, a split-KV attention's combine kernels aside; unsplit: 7 a layer and 4); with several,
 * each chain's at least 5 a layer and at most that bound (so each chain ran the whole step). */
static void decoded_together(tinfer_model *g, tinfer_model *cpu, const tinfer_token *tok,
                             int32_t R, int32_t NS, int32_t micro) {
    enum { STEPS = 4, MAX_NS = 32 };
    const int32_t V = tinfer_model_n_vocab(g), L = tinfer_model_n_layer(g);
    CHECK(NS <= MAX_NS, "%d sequences: at most %d", (int)NS, (int)MAX_NS);
    tinfer_context *gc = NS <= MAX_NS ? context_micro(g, NS, 0, micro) : NULL,
                   *cc = NS <= MAX_NS ? context(cpu, NS, 0) : NULL;
    if (!gc || !cc) {
        tinfer_context_free(gc);
        tinfer_context_free(cc);
        return;
    }
    tinfer_token bt[MAX_NS * 10];
    int32_t pos[MAX_NS * 10], seq[MAX_NS * 10], n = 0, len[MAX_NS];
    int8_t want[MAX_NS * 10];
    for (int32_t s = 0; s < NS; s++) /* prompts of 1 .. 10 tokens */
        for (int32_t i = 0, Lp = len[s] = 1 + (s * 7) % 10; i < Lp; i++, n++) {
            bt[n] = tok[(s + i) % R], pos[n] = i, seq[n] = s;
            want[n] = 0;
        }
    tinfer_batch b = {n, bt, pos, seq, want};
    CHECK(tinfer_decode(gc, &b) == TINFER_OK && tinfer_decode(cc, &b) == TINFER_OK,
          "%d-sequence prefill: %s", (int)NS, tinfer_context_last_error(gc));
    double worst = 0;
    for (int32_t k = 0; k < STEPS; k++) {
        for (int32_t s = 0; s < NS; s++) { /* fixed tokens: both backends see the same */
            bt[s] = tok[(5 * s + k) % R], pos[s] = len[s] + k, seq[s] = s;
            want[s] = micro < 3 || s % 3 != 1; /* 3 chains: some rows without logits */
        }
        tinfer_batch st = {NS, bt, pos, seq, want};
        CHECK(tinfer_decode(gc, &st) == TINFER_OK && tinfer_decode(cc, &st) == TINFER_OK,
              "%d-sequence step %d: %s", (int)NS, (int)k, tinfer_context_last_error(gc));
        for (int32_t s = 0; s < NS; s++) {
            const float *lg = tinfer_get_logits(gc, s), *lc = tinfer_get_logits(cc, s);
            CHECK(!lg == !want[s] && !lc == !want[s], "%d sequences, row %d: logits %s", (int)NS,
                  (int)s, want[s] ? "missing" : "not asked for, but there");
            const double e = lg && lc ? rel_rms(lg, lc, V) : 0.0;
            worst = !(e <= worst) ? e : worst;
        }
    }
    tinfer_context_stats st = {0};
    CHECK(tinfer_context_get_stats(gc, &st) == TINFER_OK, "stats");
    const int32_t k = (int32_t)st.last_step_kernels;
    printf("  %d sequences decoded together as %d chain%s: worst relative RMS %.4f, %d kernels a "
           "step\n",
           (int)NS, (int)micro, micro > 1 ? "s" : "", worst, (int)k);
    CHECK(worst <= TOL_REL_RMS, "%d-sequence decode logits: relative RMS %.4f > %.2f", (int)NS,
          worst, TOL_REL_RMS);
    if (micro == 1)
        CHECK(k > 0 && k <= 6 * L + 5,
              "the %d-sequence step ran %d kernels: the RMSNorms were not split (at most %d)",
              (int)NS, k, 6 * L + 5);
    else
        CHECK(k >= micro * 5 * L && k <= micro * (6 * L + 5),
              "the %d-sequence step in %d chains ran %d kernels (%d .. %d)", (int)NS, (int)micro,
              k, (int)(micro * 5 * L), (int)(micro * (6 * L + 5)));
    tinfer_context_free(gc);
    tinfer_context_free(cc);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CONFIG_DIR...\n", argv[0]);
        return 2;
    }
    for (int a = 1; a < argc; a++) {
        const char *dir = argv[a];
        tinfer_status rc;
        tinfer_model *g = load_random(dir, TINFER_BACKEND_CUDA, 0, &rc);
        if (!g) {
            printf("SKIP: the CUDA backend does not load here: %s\n", tinfer_last_error());
            return rc == TINFER_ERR_NO_DEVICE ? 77 : 1;
        }
        tinfer_model *cpu = load_random(dir, TINFER_BACKEND_CPU, 0, &rc);
        CHECK(cpu, "CPU load: %s", tinfer_last_error());
        if (!cpu) return 1;
        printf("%s\n  gpu: %s\n  cpu: %s\n", dir, tinfer_model_desc(g), tinfer_model_desc(cpu));
        const int32_t V = tinfer_model_n_vocab(g), R = N_PROMPT + N_DECODE;
        tinfer_token tok[N_PROMPT + N_DECODE];
        random_tokens(tok, R, V);
        float *lg = malloc((size_t)R * V * sizeof(float)),
              *lc = malloc((size_t)R * V * sizeof(float));
        float *lf = malloc((size_t)R * V * sizeof(float));
        tinfer_context *cg = context(g, 4, 0), *cc = context(cpu, 1, 0), *cf = context(g, 1, 1);
        if (!lg || !lc || !lf || !cg || !cc || !cf) return 1;

        /* 1. GPU vs CPU */
        CHECK(run(cg, tok, V, lg) == 0, "gpu run: %s", tinfer_context_last_error(cg));
        CHECK(run(cc, tok, V, lc) == 0, "cpu run: %s", tinfer_context_last_error(cc));
        double worst = 0;
        int agree = 0;
        for (int32_t r = 0; r < R; r++) {
            double e = rel_rms(lg + (size_t)r * V, lc + (size_t)r * V, V);
            worst = !(e <= worst) ? e : worst; /* NaN sticks */
            agree += argmax(lg + (size_t)r * V, V) == argmax(lc + (size_t)r * V, V);
        }
        printf("  gpu vs cpu: worst relative RMS %.4f over %d rows, argmax agrees on %d\n", worst,
               (int)R, agree);
        CHECK(worst <= TOL_REL_RMS, "gpu vs cpu logits: relative RMS %.4f > %.2f", worst,
              TOL_REL_RMS);
        CHECK(agree * 10 >= R * 9, "argmax agrees on %d of %d rows", agree, (int)R);
        /* 1b. the fused decode step against the op-by-op one, both on the GPU: the same BF16
         * rounding points, only the F32 summation orders differ, so the logits differ by the rare
         * BF16 rounding those flip: TOL_FUSED, well under the CPU bound; a wrong phase, head or
         * cache row gives O(1) */
        CHECK(run(cf, tok, V, lf) == 0, "gpu fused run: %s", tinfer_context_last_error(cf));
        double worst_f = 0;
        for (int32_t r = N_PROMPT; r < R; r++) { /* the decode steps */
            double e = rel_rms(lf + (size_t)r * V, lg + (size_t)r * V, V);
            worst_f = !(e <= worst_f) ? e : worst_f;
        }
        tinfer_context_stats sg, sf;
        CHECK(tinfer_context_get_stats(cg, &sg) == TINFER_OK, "stats");
        CHECK(tinfer_context_get_stats(cf, &sf) == TINFER_OK, "stats");
        printf("  fused vs op-by-op decode steps: worst relative RMS %.4f (fused steps: %lld of "
               "%lld; op-by-op context: %lld)\n",
               worst_f, (long long)sf.fused_steps, (long long)sf.steps, (long long)sg.fused_steps);
        CHECK(worst_f <= TOL_FUSED, "fused vs op-by-op decode logits: %.4f > %.3f", worst_f,
              TOL_FUSED);
        CHECK(sf.fused_steps >= N_DECODE, "the decode steps did not run fused (%lld of %lld)",
              (long long)sf.fused_steps, (long long)sf.steps);
        CHECK(sg.fused_steps == 0, "cuda_fused_decode = 0 ran %lld fused steps",
              (long long)sg.fused_steps);

        /* 2. prefill = decode on the GPU: feed the same tokens one at a time */
        tinfer_seq_clear(cg, -1);
        double worst_pd = 0;
        for (int32_t i = 0; i < N_PROMPT; i++) {
            int32_t p = i, s = 0;
            tinfer_batch one = {1, &tok[i], &p, &s, NULL};
            CHECK(tinfer_decode(cg, &one) == TINFER_OK, "decode %d", (int)i);
            double e = rel_rms(tinfer_get_logits(cg, 0), lg + (size_t)i * V, V);
            worst_pd = !(e <= worst_pd) ? e : worst_pd;
        }
        printf("  gpu prefill vs decode: worst relative RMS %.4f\n", worst_pd);
        CHECK(worst_pd <= TOL_REL_RMS, "prefill vs decode: %.4f", worst_pd);

        /* 3. greedy tokens, GPU = CPU; 4. batched = alone on the GPU */
        tinfer_token gg[4][N_GREEDY], gb[4][N_GREEDY], gc[N_GREEDY];
        double gap[4][N_GREEDY]; /* the alone runs' top-2 gaps */
        const int32_t plen[4] = {5, 1, 12, 30};
        for (int32_t s = 0; s < 4; s++) /* alone, GPU */
            CHECK(greedy_alone(cg, tok + s, plen[s], V, gg[s], gap[s]) == 0, "greedy: %s",
                  tinfer_context_last_error(cg));
        CHECK(greedy_alone(cc, tok, plen[0], V, gc, NULL) == 0, "cpu greedy: %s", /* sequence 0 */
              tinfer_context_last_error(cc));
        CHECK(same_until_tie(gc, gg[0], gap[0], N_GREEDY, "greedy GPU vs CPU"),
              "greedy tokens differ between GPU and CPU at a step that was no tie");
        { /* the 4 sequences together: prompts in one step, then M = 4 per step */
            tinfer_seq_clear(cg, -1);
            tinfer_token bt[64];
            int32_t pos[64], seq[64], n = 0;
            int8_t want[64];
            for (int32_t s = 0; s < 4; s++)
                for (int32_t i = 0; i < plen[s]; i++, n++) {
                    bt[n] = tok[s + i];
                    pos[n] = i;
                    seq[n] = s;
                    want[n] = i == plen[s] - 1;
                }
            tinfer_batch b = {n, bt, pos, seq, want};
            CHECK(tinfer_decode(cg, &b) == TINFER_OK, "batched prefill");
            int32_t row[4], at = 0;
            for (int32_t s = 0; s < 4; s++)
                row[s] = (at += plen[s]) - 1;
            for (int32_t k = 0; k < N_GREEDY; k++) {
                for (int32_t s = 0; s < 4; s++)
                    gb[s][k] = argmax(tinfer_get_logits(cg, row[s]), V);
                for (int32_t s = 0; s < 4; s++) {
                    bt[s] = gb[s][k];
                    pos[s] = plen[s] + k;
                    seq[s] = s;
                    want[s] = 1;
                    row[s] = s;
                }
                tinfer_batch step = {4, bt, pos, seq, want};
                CHECK(tinfer_decode(cg, &step) == TINFER_OK, "batched step");
            }
        }
        for (int32_t s = 0; s < 4; s++) {
            char what[48];
            snprintf(what, sizeof what, "sequence %d batched vs alone", (int)s);
            CHECK(same_until_tie(gg[s], gb[s], gap[s], N_GREEDY, what),
                  "sequence %d: batched decode differs from alone at a step that was no tie",
                  (int)s);
        }
        /* 4b. op by op: each step's graph replayed */
        greedy_batch(g, cg, tok, plen, gg, gap, false);
        { /* 4c. the default context: steps of up to 8 sequences run fused */
            tinfer_context *cq = context(g, 4, tinfer_context_default_params().cuda_fused_decode);
            CHECK(cq != NULL, "default context of 4 sequences");
            if (cq) greedy_batch(g, cq, tok, plen, gg, gap, true);
            tinfer_context_free(cq);
        }
        { /* 5. the default context, one sequence at a time */
            tinfer_context *cd = context(g, 1, tinfer_context_default_params().cuda_fused_decode);
            CHECK(cd != NULL, "default context");
            for (int32_t s = 0; cd && s < 4; s++) {
                tinfer_token gd[N_GREEDY];
                CHECK(greedy_alone(cd, tok + s, plen[s], V, gd, NULL) == 0,
                      "default-context greedy: %s", tinfer_context_last_error(cd));
                char what[56];
                snprintf(what, sizeof what, "sequence %d default context vs op by op", (int)s);
                CHECK(same_until_tie(gg[s], gd, gap[s], N_GREEDY, what),
                      "sequence %d: the default context's greedy tokens differ from op by op at "
                      "a step that was no tie",
                      (int)s);
            }
            tinfer_context_stats sd = {0};
            CHECK(cd && tinfer_context_get_stats(cd, &sd) == TINFER_OK, "stats");
            printf("  default context: %lld of %lld steps fused\n", (long long)sd.fused_steps,
                   (long long)sd.steps);
            CHECK(sd.fused_steps >= 4 * N_GREEDY, "the default context fused %lld of its %lld "
                  "one-sequence decode steps", (long long)sd.fused_steps, (long long)sd.steps);
            /* 6. several greedy steps a call, in the default context (queued fused steps) and
             * in the op-by-op one (a step at a time): the step-by-step tokens exactly */
            for (int32_t s = 0; cd && s < 4; s++) {
                tinfer_token step[N_GREEDY], calls[N_GREEDY], calls_g[N_GREEDY];
                int64_t fused = 0, fused_g = 0;
                CHECK(greedy_alone(cd, tok + s, plen[s], V, step, NULL) == 0, "greedy: %s",
                      tinfer_context_last_error(cd));
                CHECK(greedy_calls(cd, tok + s, plen[s], calls, &fused) == 0, "decode_greedy: %s",
                      tinfer_context_last_error(cd));
                CHECK(!memcmp(step, calls, sizeof step), "sequence %d: decode_greedy's tokens "
                      "differ from step-by-step greedy in the default context", (int)s);
                CHECK(fused == N_GREEDY - 1, "sequence %d: %lld of decode_greedy's %d steps ran "
                      "fused", (int)s, (long long)fused, N_GREEDY - 1);
                CHECK(greedy_calls(cg, tok + s, plen[s], calls_g, &fused_g) == 0 && fused_g == 0,
                      "decode_greedy (op by op): %s", tinfer_context_last_error(cg));
                CHECK(!memcmp(gg[s], calls_g, sizeof calls_g), "sequence %d: decode_greedy's "
                      "tokens differ from step-by-step greedy op by op", (int)s);
            }
            printf("  decode_greedy: the step-by-step tokens in the default (queued fused steps) "
                   "and op-by-op contexts\n");
            /* 6b. many greedy steps a call: one sequence, then 4 */
            if (cd) greedy_long(g, cd, tok, plen, 1);
            tinfer_context *c4 = context(g, 4, tinfer_context_default_params().cuda_fused_decode);
            CHECK(c4 != NULL, "default context of 4 sequences");
            if (c4) greedy_long(g, c4, tok, plen, 4);
            tinfer_context_free(c4);
            tinfer_context_free(cd);
        }
        /* 7. sequences decoded together, GPU vs CPU: 12 as one chain (the RMSNorms split);
         * 24 as two chains of 12 (split in each); 11 as three of 3-4 (decode GEMVs) */
        decoded_together(g, cpu, tok, R, 12, 1);
        decoded_together(g, cpu, tok, R, 24, 2);
        decoded_together(g, cpu, tok, R, 11, 3);
        free(lg);
        free(lc);
        free(lf);
        tinfer_context_free(cf);
        tinfer_context_free(cg);
        tinfer_context_free(cc);
        tinfer_model_free(g);
        tinfer_model_free(cpu);
    }
    if (test_failures) return 1;
    printf("gpu model: ok\n");
    return 0;
}

/*
 * test_tiny.c — the CPU forward pass against HF transformers on a tiny random-weight model.
 *
 * Usage: test_tiny FIXTURE_DIR   (tests/model/fixtures/tiny-llama or tiny-qwen2, made by
 * scripts/make-tiny-llama.py; expected.json holds HF's float32 logits of every prompt position
 * and 16 greedy tokens from model.generate(do_sample=False)).
 * Checks:
 *   1. tokenizing the prompt text gives HF's ids;
 *   2. the prompt as ONE prefill batch: logits of every position vs HF;
 *   3. the same prompt token by token (batches of 1): logits equal the prefill's;
 *   4. 16 greedy tokens equal HF's;
 *   5. two sequences in one batch (one continuing its cache, one starting, entries interleaved)
 *      give the logits each gives alone;
 *   6. tinfer_decode_greedy, in two calls, gives HF's greedy tokens and the cache the
 *      step-by-step loop leaves (the next step's logits equal), and refuses bad arguments and
 *      a full context with nothing run.
 */
#include "test_util.h"
#include "tinfer.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* HF vs us: both fp32, same operations, different summation order (our GEMM blocks K and uses
 * FMA; torch's sgemm blocks differently; softmax/rmsnorm reductions differ). Reordering a
 * K-term fp32 dot product changes it by at most ~K*u*sum|x_i*w_i| (u = 2^-24, Higham, Accuracy
 * and Stability of Numerical Algorithms, 2nd ed., eq. 3.5); here K <= 128 gives <= 7.6e-6 of the
 * absolute sum per GEMM, and the two layers (each renormalised by RMSNorm) plus the LM head stay
 * within that order, well below 1e-4 of the logit scale. A real error (a wrong weight, mask,
 * rope angle or bias) moves logits by O(1) of that scale. */
#define TOL_VS_HF 1e-4
/* Us vs us (prefill vs token-by-token, batched vs alone): the same ops, but the GEMM may take a
 * different path by M (GEMV for M = 1, blocked kernels for M > 1) and so a different summation
 * order; the same K*u argument bounds the change at ~1e-5 of the scale for K <= 128. Measured:
 * ~2e-6 of the scale on these fixtures (prefill vs token by token). */
#define TOL_SELF 1e-5

static int32_t *json_ints(const cJSON *arr, int32_t *n) {
    *n = cJSON_GetArraySize(arr);
    int32_t *v = malloc((size_t)*n * sizeof *v);
    for (int32_t i = 0; i < *n; i++) v[i] = (int32_t)cJSON_GetArrayItem(arr, i)->valuedouble;
    return v;
}

/* max |a - b| / max |ref| over n values */
static double rel_diff(const float *a, const float *b, const float *ref, int32_t n) {
    double d = 0, m = 0;
    for (int32_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - (double)b[i]));
        m = fmax(m, fabs((double)ref[i]));
    }
    return d / m;
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Greedy decoding of sequence 0 of c, one tinfer_decode a step: t fed at position pos0, then
 * each pick, at most n_max picks into out; stops after a pick that ends generation. Returns the
 * picks, -1 on error. */
static int32_t greedy_ref(tinfer_context *c, const tinfer_model *m, tinfer_token t, int32_t pos0,
                          int32_t n_max, tinfer_token *out) {
    int32_t n = 0, sq = 0;
    while (n < n_max) {
        int32_t pos = pos0 + n;
        int8_t want = 2;
        tinfer_batch one = {1, &t, &pos, &sq, &want};
        if (tinfer_decode(c, &one) != TINFER_OK) return -1;
        t = out[n++] = tinfer_get_argmax(c, 0);
        if (tinfer_token_is_eog(m, t)) break;
    }
    return n;
}

static tinfer_context *new_ctx(tinfer_model *m, int32_t n_seq) {
    tinfer_context_params cp = tinfer_context_default_params();
    cp.n_ctx = 128;
    cp.n_seq_max = n_seq;
    tinfer_context *c = NULL;
    if (tinfer_context_init(m, &cp, &c) != TINFER_OK) {
        fprintf(stderr, "context: %s\n", tinfer_last_error());
        exit(1);
    }
    return c;
}

/* Decodes tokens[0..n) of sequence `seq` as batches of `step` tokens starting at position
 * `pos0`, storing each position's logits in out[i * V]. */
static int run_seq(tinfer_context *c, int32_t seq, int32_t pos0, const int32_t *tokens, int32_t n,
                   int32_t step, float *out, int32_t V) {
    int32_t pos[256], sq[256];
    int8_t want[256];
    for (int32_t b = 0; b < n; b += step) {
        int32_t k = n - b < step ? n - b : step;
        for (int32_t i = 0; i < k; i++) {
            pos[i] = pos0 + b + i;
            sq[i] = seq;
            want[i] = 1;
        }
        tinfer_batch batch = {k, tokens + b, pos, sq, want};
        if (tinfer_decode(c, &batch) != TINFER_OK) {
            fprintf(stderr, "decode: %s\n", tinfer_last_error());
            return -1;
        }
        for (int32_t i = 0; i < k; i++)
            memcpy(out + (size_t)(b + i) * V, tinfer_get_logits(c, i), (size_t)V * sizeof(float));
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/expected.json", argv[1]);
    char *json = test_read_file(path, NULL);
    cJSON *exp = json ? cJSON_Parse(json) : NULL;
    if (!exp) {
        fprintf(stderr, "cannot read %s\n", path);
        return 1;
    }
    int32_t n_prompt, n_greedy;
    int32_t *ids = json_ints(cJSON_GetObjectItem(exp, "prompt_ids"), &n_prompt);
    int32_t *greedy = json_ints(cJSON_GetObjectItem(exp, "greedy"), &n_greedy);
    const char *prompt = cJSON_GetObjectItem(exp, "prompt")->valuestring;

    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = TINFER_BACKEND_CPU;
    tinfer_model *m = NULL;
    if (tinfer_model_load(argv[1], &mp, &m) != TINFER_OK) {
        fprintf(stderr, "load: %s\n", tinfer_last_error());
        return 1;
    }
    const int32_t V = tinfer_model_n_vocab(m);
    printf("%s: %s, %lld params\n", argv[1], tinfer_model_desc(m),
           (long long)tinfer_model_n_params(m));

    /* 1. tokenization */
    int32_t toks[256], n_tok = 0;
    tinfer_status rc =
        tinfer_tokenize(m, prompt, strlen(prompt), TINFER_TOKENIZE_ADD_SPECIAL, toks, 256, &n_tok);
    CHECK(rc == TINFER_OK && n_tok == n_prompt && !memcmp(toks, ids, (size_t)n_tok * 4),
          "tokenization differs from HF (%d vs %d tokens)", (int)n_tok, (int)n_prompt);

    /* 2. one prefill batch vs HF */
    float *pre = malloc((size_t)n_prompt * V * sizeof(float));
    float *tbt = malloc((size_t)n_prompt * V * sizeof(float));
    float *hf = malloc((size_t)n_prompt * V * sizeof(float));
    const cJSON *jl = cJSON_GetObjectItem(exp, "logits");
    CHECK(cJSON_GetArraySize(jl) == n_prompt, "expected.json: logits rows");
    for (int32_t i = 0; i < n_prompt; i++) {
        const cJSON *row = cJSON_GetArrayItem(jl, i);
        CHECK(cJSON_GetArraySize(row) == V, "expected.json: logits row %d has %d values", (int)i,
              cJSON_GetArraySize(row));
        for (int32_t j = 0; j < V; j++)
            hf[(size_t)i * V + j] = (float)cJSON_GetArrayItem(row, j)->valuedouble;
    }
    tinfer_context *c = new_ctx(m, 1);
    if (run_seq(c, 0, 0, ids, n_prompt, n_prompt, pre, V)) return 1;
    double worst = 0;
    for (int32_t i = 0; i < n_prompt; i++) {
        double d = rel_diff(pre + (size_t)i * V, hf + (size_t)i * V, hf + (size_t)i * V, V);
        worst = fmax(worst, d);
        CHECK(d <= TOL_VS_HF, "position %d: max|dlogit| = %.3g x max|logit| vs HF", (int)i, d);
    }
    printf("prefill vs HF: max rel diff %.3g (bound %.0e)\n", worst, TOL_VS_HF);

    /* 3. token by token vs prefill */
    tinfer_context_free(c);
    c = new_ctx(m, 1);
    if (run_seq(c, 0, 0, ids, n_prompt, 1, tbt, V)) return 1;
    worst = 0;
    for (int32_t i = 0; i < n_prompt; i++) {
        double d = rel_diff(tbt + (size_t)i * V, pre + (size_t)i * V, pre + (size_t)i * V, V);
        worst = fmax(worst, d);
        CHECK(d <= TOL_SELF, "position %d: token-by-token vs prefill %.3g", (int)i, d);
    }
    printf("token-by-token vs prefill: max rel diff %.3g (bound %.0e)\n", worst, TOL_SELF);

    /* 4. greedy continuation (the cache already holds the prompt) */
    int32_t gen[64], t = argmax(pre + (size_t)(n_prompt - 1) * V, V);
    for (int32_t g = 0; g < n_greedy; g++) {
        gen[g] = t;
        if (g + 1 == n_greedy) break;
        int32_t pos = n_prompt + g, sq = 0;
        tinfer_batch one = {1, &t, &pos, &sq, NULL};
        if (tinfer_decode(c, &one) != TINFER_OK) {
            fprintf(stderr, "decode: %s\n", tinfer_last_error());
            return 1;
        }
        t = argmax(tinfer_get_logits(c, 0), V);
    }
    for (int32_t g = 0; g < n_greedy; g++)
        CHECK(gen[g] == greedy[g], "greedy token %d: %d, HF %d", (int)g, (int)gen[g],
              (int)greedy[g]);
    tinfer_context_free(c);

    /* 5. two sequences in one batch. Sequence 0 first prefills its first half alone, then the
     * batch interleaves sequence 0's second half with all of sequence 1 (the prompt reversed). */
    int32_t rev[256];
    for (int32_t i = 0; i < n_prompt; i++) rev[i] = ids[n_prompt - 1 - i];
    float *alone1 = malloc((size_t)n_prompt * V * sizeof(float));
    c = new_ctx(m, 1);
    if (run_seq(c, 0, 0, rev, n_prompt, n_prompt, alone1, V)) return 1;
    tinfer_context_free(c);

    c = new_ctx(m, 2);
    const int32_t h = n_prompt / 2;
    if (run_seq(c, 0, 0, ids, h, h, tbt, V)) return 1;
    int32_t bt[512], bp[512], bs[512], n_b = 0, src[512];
    int8_t bw[512];
    for (int32_t i = 0, j = h; i < n_prompt || j < n_prompt; i++, j++) {
        if (j < n_prompt) bt[n_b] = ids[j], bp[n_b] = j, bs[n_b] = 0, src[n_b++] = j;
        if (i < n_prompt) bt[n_b] = rev[i], bp[n_b] = i, bs[n_b] = 1, src[n_b++] = i;
    }
    for (int32_t i = 0; i < n_b; i++) bw[i] = 1;
    tinfer_batch mixed = {n_b, bt, bp, bs, bw};
    rc = tinfer_decode(c, &mixed);
    CHECK(rc == TINFER_OK, "mixed batch: %s", tinfer_last_error());
    worst = 0;
    for (int32_t e = 0; rc == TINFER_OK && e < n_b; e++) {
        const float *ref = (bs[e] == 0 ? pre : alone1) + (size_t)src[e] * V;
        double d = rel_diff(tinfer_get_logits(c, e), ref, ref, V);
        worst = fmax(worst, d);
        CHECK(d <= TOL_SELF, "mixed batch entry %d (seq %d pos %d): %.3g", (int)e, (int)bs[e],
              (int)bp[e], d);
    }
    CHECK(tinfer_seq_len(c, 0) == n_prompt && tinfer_seq_len(c, 1) == n_prompt,
          "sequence lengths after the mixed batch: %d, %d", (int)tinfer_seq_len(c, 0),
          (int)tinfer_seq_len(c, 1));
    printf("two sequences in one batch vs alone: max rel diff %.3g (bound %.0e)\n", worst,
           TOL_SELF);
    tinfer_context_free(c);

    /* 6. several greedy steps a call: the prompt, HF's first greedy token fed, then its picks */
    c = new_ctx(m, 1);
    if (run_seq(c, 0, 0, ids, n_prompt, n_prompt, tbt, V)) return 1;
    int32_t picks[64], n_a = 0, n_b2 = 0;
    const int32_t first = n_greedy / 3; /* two calls: first picks, then the rest */
    rc = tinfer_decode_greedy(c, 0, greedy[0], first, picks, &n_a);
    CHECK(rc == TINFER_OK && n_a == first, "decode_greedy: %s (%d picks)", tinfer_last_error(),
          (int)n_a);
    if (rc == TINFER_OK)
        rc = tinfer_decode_greedy(c, 0, picks[n_a - 1], n_greedy - 1 - n_a, picks + n_a, &n_b2);
    CHECK(rc == TINFER_OK && n_a + n_b2 == n_greedy - 1, "decode_greedy: %s (%d + %d picks)",
          tinfer_last_error(), (int)n_a, (int)n_b2);
    for (int32_t g = 0; rc == TINFER_OK && g + 1 < n_greedy; g++)
        CHECK(picks[g] == greedy[g + 1], "decode_greedy pick %d: %d, HF %d", (int)g,
              (int)picks[g], (int)greedy[g + 1]);
    CHECK(tinfer_seq_len(c, 0) == n_prompt + n_greedy - 1, "decode_greedy: sequence length %d, "
          "expected %d", (int)tinfer_seq_len(c, 0), (int)(n_prompt + n_greedy - 1));
    CHECK(tinfer_get_argmax(c, 0) == -1 && !tinfer_get_logits(c, 0),
          "decode_greedy: the last step's logits still readable");
    /* the cache it left: the next step (HF's last greedy token fed) against the step-by-step
     * run of the prompt and every greedy token */
    if (rc == TINFER_OK) {
        const int32_t n_all = n_prompt + n_greedy;
        int32_t all[320], pos = n_all - 1, sq = 0;
        float *ref = malloc((size_t)n_all * V * sizeof(float));
        memcpy(all, ids, (size_t)n_prompt * 4);
        memcpy(all + n_prompt, greedy, (size_t)n_greedy * 4);
        tinfer_context *r = new_ctx(m, 1);
        tinfer_batch one = {1, &greedy[n_greedy - 1], &pos, &sq, NULL};
        if (run_seq(r, 0, 0, all, n_all, 1, ref, V) || tinfer_decode(c, &one) != TINFER_OK) {
            fprintf(stderr, "decode: %s\n", tinfer_last_error());
            return 1;
        }
        const float *last_ref = ref + (size_t)(n_all - 1) * V;
        const double d = rel_diff(tinfer_get_logits(c, 0), last_ref, last_ref, V);
        CHECK(d <= TOL_SELF, "the step after decode_greedy vs step by step: %.3g", d);
        printf("decode_greedy: %d greedy tokens equal HF's in two calls; the next step's logits "
               "vs step by step %.3g (bound %.0e)\n",
               (int)(n_greedy - 1), d, TOL_SELF);
        tinfer_context_free(r);
        free(ref);
    }
    /* bad arguments and a full context: refused, nothing run */
    const int32_t len = tinfer_seq_len(c, 0);
    int32_t n_bad = 7;
    CHECK(tinfer_decode_greedy(c, 0, greedy[0], 0, picks, &n_bad) == TINFER_ERR_INVALID_ARG &&
              n_bad == 0, "decode_greedy: n_max 0 accepted");
    CHECK(tinfer_decode_greedy(c, 1, greedy[0], 1, picks, &n_bad) == TINFER_ERR_INVALID_ARG,
          "decode_greedy: seq_id 1 of 1 accepted");
    CHECK(tinfer_decode_greedy(c, 0, V, 1, picks, &n_bad) == TINFER_ERR_INVALID_ARG,
          "decode_greedy: token id %d accepted", (int)V);
    CHECK(tinfer_decode_greedy(c, 0, greedy[0], 1, NULL, &n_bad) == TINFER_ERR_INVALID_ARG,
          "decode_greedy: NULL out accepted");
    CHECK(tinfer_decode_greedy(c, 0, greedy[0], 128 - len + 1, picks, &n_bad) ==
                  TINFER_ERR_CONTEXT_FULL && n_bad == 0 && tinfer_seq_len(c, 0) == len,
          "decode_greedy: %d tokens past a context of 128 holding %d not refused", 128 - len + 1,
          (int)len);
    tinfer_context_free(c);

    /* 6b. several sequences' greedy steps in one call (tinfer_decode_greedy_batch) = each one's
     * greedy decoding alone, step by step: the prompt's sequence fed HF's first greedy token,
     * and two from an empty cache, one fed a token whose greedy continuation ends generation
     * within a few steps (the first such token of the vocabulary): it must stop there, with its
     * cache holding what it was fed, while the others go on. The call's sequences are not in
     * sequence order. */
    {
        enum { NB = 3, NMAX = 20 };
        tinfer_context *r = new_ctx(m, 1);
        tinfer_token chain[NMAX], t_eog = -1;
        int32_t eog_base = 0; /* from an empty cache, else after the prompt */
        for (int pass = 0; pass < 2 && t_eog < 0; pass++)
            for (tinfer_token t = 0; t < V && t_eog < 0; t++) {
                tinfer_seq_clear(r, 0);
                if (pass && run_seq(r, 0, 0, ids, n_prompt, n_prompt, tbt, V)) return 1;
                const int32_t k = greedy_ref(r, m, t, pass ? n_prompt : 0, NMAX - 2, chain);
                CHECK(k > 0, "greedy reference: %s", tinfer_context_last_error(r));
                if (k > 0 && tinfer_token_is_eog(m, chain[k - 1]))
                    t_eog = t, eog_base = pass ? n_prompt : 0;
            }
        CHECK(t_eog >= 0, "no token of the vocabulary leads greedy decoding to an end-of-generation "
              "token within %d steps: the early stop below would go untested", NMAX - 2);
        const int32_t seq_ids[NB] = {2, 0, 1};
        const tinfer_token toks[NB] = {(t_eog + 1) % V, greedy[0], t_eog < 0 ? 0 : t_eog};
        const int32_t base[NB] = {0, n_prompt, eog_base}; /* each sequence's cached prompt */
        tinfer_token ref[NB][NMAX], out[NB * NMAX];
        int32_t n_ref[NB], n_out[NB];
        for (int32_t i = 0; i < NB; i++) { /* alone, in r's sequence 0 */
            tinfer_seq_clear(r, 0);
            if (base[i] && run_seq(r, 0, 0, ids, n_prompt, n_prompt, tbt, V)) return 1;
            n_ref[i] = greedy_ref(r, m, toks[i], base[i], NMAX, ref[i]);
        }
        tinfer_context *cb = new_ctx(m, NB);
        for (int32_t i = 0; i < NB; i++)
            if (base[i] && run_seq(cb, seq_ids[i], 0, ids, n_prompt, n_prompt, tbt, V)) return 1;
        rc = tinfer_decode_greedy_batch(cb, NB, seq_ids, toks, NMAX, out, n_out);
        CHECK(rc == TINFER_OK, "decode_greedy_batch: %s", tinfer_context_last_error(cb));
        for (int32_t i = 0; rc == TINFER_OK && i < NB; i++) {
            CHECK(n_out[i] == n_ref[i], "decode_greedy_batch: sequence %d made %d picks, alone %d",
                  (int)seq_ids[i], (int)n_out[i], (int)n_ref[i]);
            for (int32_t k = 0; k < n_out[i] && k < n_ref[i]; k++)
                CHECK(out[i * NMAX + k] == ref[i][k], "decode_greedy_batch: sequence %d pick %d: "
                      "%d, alone %d", (int)seq_ids[i], (int)k, (int)out[i * NMAX + k],
                      (int)ref[i][k]);
            CHECK(tinfer_seq_len(cb, seq_ids[i]) == base[i] + n_out[i], "decode_greedy_batch: "
                  "sequence %d holds %d tokens, expected %d", (int)seq_ids[i],
                  (int)tinfer_seq_len(cb, seq_ids[i]), (int)(base[i] + n_out[i]));
        }
        CHECK(n_ref[2] < NMAX && n_ref[0] + n_ref[1] > 2 * n_ref[2], "decode_greedy_batch: the "
              "early stop (%d picks) is not shorter than the other sequences' (%d, %d)",
              (int)n_ref[2], (int)n_ref[0], (int)n_ref[1]);
        printf("decode_greedy_batch: 3 sequences, %d / %d / %d picks (one ending generation) "
               "equal to each decoded alone\n", (int)n_out[0], (int)n_out[1], (int)n_out[2]);
        /* refused, nothing run: a sequence twice, no sequence, more than n_seq_max, NULL */
        const int32_t dup[2] = {1, 1}, lens[NB] = {tinfer_seq_len(cb, 0), tinfer_seq_len(cb, 1),
                                                   tinfer_seq_len(cb, 2)};
        int32_t n2[4];
        CHECK(tinfer_decode_greedy_batch(cb, 2, dup, toks, 1, out, n2) == TINFER_ERR_INVALID_ARG,
              "decode_greedy_batch: a sequence given twice accepted");
        CHECK(tinfer_decode_greedy_batch(cb, 0, seq_ids, toks, 1, out, n2) ==
                  TINFER_ERR_INVALID_ARG, "decode_greedy_batch: 0 sequences accepted");
        CHECK(tinfer_decode_greedy_batch(cb, 4, seq_ids, toks, 1, out, n2) ==
                  TINFER_ERR_INVALID_ARG, "decode_greedy_batch: 4 sequences of n_seq_max 3 accepted");
        CHECK(tinfer_decode_greedy_batch(cb, NB, seq_ids, NULL, 1, out, n2) ==
                  TINFER_ERR_INVALID_ARG, "decode_greedy_batch: NULL tokens accepted");
        for (int32_t q = 0; q < NB; q++)
            CHECK(tinfer_seq_len(cb, q) == lens[q], "decode_greedy_batch: a refused call changed "
                  "sequence %d", (int)q);
        tinfer_context_free(cb);
        tinfer_context_free(r);
    }

    tinfer_model_free(m);
    free(pre);
    free(tbt);
    free(hf);
    free(alone1);
    free(ids);
    free(greedy);
    cJSON_Delete(exp);
    free(json);
    return test_finish();
}

/*
 * test_smollm2.c — the converted SmolLM2-135M-Instruct against HF transformers' greedy output.
 *
 * Usage: test_smollm2 MODEL_DIR FIXTURE_JSON [amx] (amx: the AMX prefill GEMM, BF16
 * tolerances, see TOL_BF16; ctest runs it with TINFER_GEMM_FORCE unset). Exits 77 (skipped) when MODEL_DIR has no
 * config.json (scripts/get-model.sh makes it). The fixture (scripts/make-model-fixtures.py) holds,
 * for three prompts (plain, chat-templated, code): the text, HF's prompt ids, 32 greedy ids of
 * model.generate(do_sample=False) in float32 and the first step's top-5 logits.
 * Checks per prompt:
 *   1. chat prompts: tinfer_chat_apply gives HF's templated text;
 *   2. tokenization equals HF's ids (ADD_SPECIAL for plain text, PARSE_SPECIAL for chat text);
 *   3. the prompt as one prefill batch: top-5 ids and logits of the first step match HF's;
 *   4. prefill logits of every position equal token-by-token decode logits;
 *   5. the 32 greedy tokens equal HF's.
 * Same math as HF: BF16-stored weights widened to F32, F32 activations; only summation order
 * differs.
 */
#include "test_util.h"
#include "tinfer.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* First-step logits vs HF, relative to the top logit. A K-term fp32 dot product reordered moves
 * by at most K*u of its absolute sum (u = 2^-24; Higham, Accuracy and Stability of Numerical
 * Algorithms, eq. 3.5); the realistic (random-walk) change is ~sqrt(K)*u = 2.4e-6 for K = 1536
 * (the down projection). Over 30 layers x 4 GEMMs these add like a random walk (each RMSNorm
 * renormalises, nothing compounds): sqrt(120) * 2.4e-6 = 2.6e-5. 1e-4 leaves 4x over that
 * estimate (measured: ~1e-6); a real bug (a wrong weight, rope angle or mask) moves logits by
 * O(1) relative. It is also the scale of HF's smallest greedy top-1/top-2 gap in the fixture
 * (min_rel_gap ~1e-4): a larger error could flip a greedy pick anyway. */
#define TOL_TOP5 1e-4
/* Prefill (M = prompt length) vs token-by-token (M = 1): our own kernels on both sides, possibly
 * different GEMM paths and so summation orders; the same argument as above bounds it
 * (measured: ~4e-6). */
#define TOL_SELF 1e-4
/* With the third argument "amx" (the AMX GEMM, gemm/cpu/gemm_cpu_amx.c, when this machine has
 * it; skipped otherwise): prefill GEMMs round their activations to BF16 (relative error up to
 * 2^-8 per element, F32 accumulation). Each of the 30 x 4 GEMMs then moves its outputs by up to
 * ~2^-8 of their scale, and RMSNorm renormalises between layers, so the changes add like a random
 * walk: sqrt(120) * 2^-8 = 4.3e-2 of the logit scale at most; 5e-2 is the bound for both the
 * first-step top-5 vs HF and prefill vs token by token (whose GEMV stays F32). Measured: 0.4%
 * and 1.6%. A real bug moves logits by O(1) of the scale. The top-5 ranks may swap among
 * themselves within that noise, so only membership in our top 5 is required; the greedy tokens
 * must still equal HF's (deterministic: they do on this fixture). */
#define TOL_BF16 5e-2
static bool g_amx;

static int32_t *json_ints(const cJSON *arr, int32_t *n) {
    *n = cJSON_GetArraySize(arr);
    int32_t *v = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *v);
    for (int32_t i = 0; i < *n; i++) v[i] = (int32_t)cJSON_GetArrayItem(arr, i)->valuedouble;
    return v;
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static tinfer_status decode_range(tinfer_context *c, const int32_t *toks, int32_t pos0, int32_t n,
                                  bool all_logits) {
    int32_t *pos = malloc((size_t)n * sizeof *pos), *seq = calloc((size_t)n, sizeof *seq);
    int8_t *want = malloc((size_t)n);
    for (int32_t i = 0; i < n; i++) {
        pos[i] = pos0 + i;
        want[i] = all_logits || i == n - 1;
    }
    tinfer_batch b = {n, toks, pos, seq, want};
    tinfer_status rc = tinfer_decode(c, &b);
    free(pos);
    free(seq);
    free(want);
    return rc;
}

static void run_case(tinfer_model *m, const cJSON *cs) {
    const char *name = cJSON_GetObjectItem(cs, "name")->valuestring;
    const char *text = cJSON_GetObjectItem(cs, "text")->valuestring;
    const char *user = cJSON_GetObjectItem(cs, "user")->valuestring;
    const bool chat = cJSON_IsTrue(cJSON_GetObjectItem(cs, "chat"));
    int32_t n_ids, n_greedy;
    int32_t *ids = json_ints(cJSON_GetObjectItem(cs, "prompt_ids"), &n_ids);
    int32_t *greedy = json_ints(cJSON_GetObjectItem(cs, "greedy"), &n_greedy);
    const int32_t V = tinfer_model_n_vocab(m);

    /* 1. chat template */
    if (chat) {
        tinfer_chat_message msg = {"user", user};
        char buf[8192];
        size_t n = 0;
        tinfer_status rc = tinfer_chat_apply(m, &msg, 1, true, buf, sizeof buf - 1, &n);
        if (rc == TINFER_OK) buf[n] = '\0';
        CHECK(rc == TINFER_OK && !strcmp(buf, text),
              "%s: chat template differs from HF's:\n--- ours\n%s\n--- HF\n%s", name,
              rc == TINFER_OK ? buf : tinfer_last_error(), text);
    }
    /* 2. tokenization */
    int32_t toks[4096], n_tok = 0;
    tinfer_status rc = tinfer_tokenize(
        m, text, strlen(text), chat ? TINFER_TOKENIZE_PARSE_SPECIAL : TINFER_TOKENIZE_ADD_SPECIAL,
        toks, 4096, &n_tok);
    bool same = rc == TINFER_OK && n_tok == n_ids && !memcmp(toks, ids, (size_t)n_ids * 4);
    CHECK(same, "%s: tokenization differs from HF (%d vs %d tokens; %s)", name, (int)n_tok,
          (int)n_ids, rc == TINFER_OK ? "ids differ" : tinfer_last_error());

    /* 3. prefill (HF's ids, so the forward is tested even if tokenization is not) */
    tinfer_context_params cp = tinfer_context_default_params();
    cp.n_ctx = 256;
    tinfer_context *c = NULL;
    if (tinfer_context_init(m, &cp, &c) != TINFER_OK) {
        CHECK(0, "%s: context: %s", name, tinfer_last_error());
        goto out;
    }
    rc = decode_range(c, ids, 0, n_ids, true);
    CHECK(rc == TINFER_OK, "%s: prefill: %s", name, tinfer_last_error());
    if (rc != TINFER_OK) goto out;
    float *pre = malloc((size_t)n_ids * V * sizeof(float));
    for (int32_t i = 0; i < n_ids; i++)
        memcpy(pre + (size_t)i * V, tinfer_get_logits(c, i), (size_t)V * sizeof(float));
    const float *last = pre + (size_t)(n_ids - 1) * V;
    const cJSON *top5 = cJSON_GetObjectItem(cs, "top5");
    const double scale = fabs(cJSON_GetArrayItem(cJSON_GetArrayItem(top5, 0), 1)->valuedouble);
    double worst = 0;
    for (int32_t k = 0; k < cJSON_GetArraySize(top5); k++) {
        const cJSON *e = cJSON_GetArrayItem(top5, k);
        int32_t id = (int32_t)cJSON_GetArrayItem(e, 0)->valuedouble;
        double hf = cJSON_GetArrayItem(e, 1)->valuedouble, d = fabs(last[id] - hf) / scale;
        worst = fmax(worst, d);
        CHECK(d <= (g_amx ? TOL_BF16 : TOL_TOP5), "%s: first-step logit of token %d: %.6f, HF %.6f (rel %.3g)", name,
              (int)id, (double)last[id], hf, d);
        /* HF's k-th best must be our k-th best too: count tokens we rank above it */
        int32_t above = 0;
        for (int32_t j = 0; j < V; j++) above += last[j] > last[id];
        CHECK(g_amx ? above < 5 : above == k, "%s: token %d is HF's #%d but our #%d", name,
              (int)id, (int)k, (int)above);
    }
    printf("%s: %d prompt tokens, first-step top-5 max rel diff vs HF %.3g (bound %.0e)\n", name,
           (int)n_ids, worst, g_amx ? TOL_BF16 : TOL_TOP5);

    /* 5. greedy continuation */
    int32_t gen[64], t = argmax(last, V), n_gen = 0;
    for (; n_gen < n_greedy; n_gen++) {
        gen[n_gen] = t;
        if (n_gen + 1 == n_greedy) break;
        rc = decode_range(c, &t, n_ids + n_gen, 1, false);
        if (rc != TINFER_OK) break;
        t = argmax(tinfer_get_logits(c, 0), V);
    }
    CHECK(rc == TINFER_OK, "%s: decode: %s", name, tinfer_last_error());
    int32_t first_bad = -1;
    for (int32_t g = 0; g < n_greedy && first_bad < 0; g++)
        if (g >= n_gen + 1 || gen[g] != greedy[g]) first_bad = g;
    CHECK(first_bad < 0, "%s: greedy token %d is %d, HF %d", name, (int)first_bad,
          first_bad >= 0 ? (int)gen[first_bad] : 0, first_bad >= 0 ? (int)greedy[first_bad] : 0);
    if (first_bad < 0) printf("%s: %d greedy tokens equal HF's\n", name, (int)n_greedy);

    /* 5b. the same continuation through tinfer_decode_greedy, one call of up to 63 steps: HF's
     * tokens, and where HF's output ends with an end-of-generation token, the call stops on it
     * with the sequence holding what was fed before it */
    if (first_bad < 0) {
        tinfer_context *g = NULL;
        int32_t picks[64], n_p = 0, n_max = 256 - n_ids < 63 ? 256 - n_ids : 63;
        rc = tinfer_context_init(m, &cp, &g);
        if (rc == TINFER_OK) rc = decode_range(g, ids, 0, n_ids, false);
        if (rc == TINFER_OK) rc = tinfer_decode_greedy(g, 0, greedy[0], n_max, picks, &n_p);
        CHECK(rc == TINFER_OK, "%s: decode_greedy: %s", name, tinfer_last_error());
        const bool eog = tinfer_token_is_eog(m, greedy[n_greedy - 1]);
        int32_t bad = -1;
        for (int32_t k = 0; rc == TINFER_OK && k < n_p && k + 1 < n_greedy && bad < 0; k++)
            if (picks[k] != greedy[k + 1]) bad = k;
        CHECK(bad < 0, "%s: decode_greedy pick %d is %d, HF %d", name, (int)bad,
              bad >= 0 ? (int)picks[bad] : 0, bad >= 0 ? (int)greedy[bad + 1] : 0);
        CHECK(rc != TINFER_OK || (eog ? n_p == n_greedy - 1 : n_p >= n_greedy - 1),
              "%s: decode_greedy made %d picks, HF %d%s", name, (int)n_p, (int)(n_greedy - 1),
              eog ? " ending with an end-of-generation token" : "");
        CHECK(rc != TINFER_OK || tinfer_seq_len(g, 0) == n_ids + n_p,
              "%s: decode_greedy left %d tokens cached, expected %d", name,
              (int)tinfer_seq_len(g, 0), (int)(n_ids + n_p));
        if (rc == TINFER_OK && bad < 0)
            printf("%s: decode_greedy: %d picks equal HF's%s\n", name, (int)n_p,
                   eog ? ", stopped on its end-of-generation token" : "");
        tinfer_context_free(g);
    }

    /* 4. token by token vs prefill */
    tinfer_seq_clear(c, 0);
    worst = 0;
    for (int32_t i = 0; i < n_ids; i++) {
        if ((rc = decode_range(c, ids + i, i, 1, true)) != TINFER_OK) break;
        const float *a = tinfer_get_logits(c, 0), *b = pre + (size_t)i * V;
        double d = 0, mx = 0;
        for (int32_t j = 0; j < V; j++) {
            d = fmax(d, fabs((double)a[j] - b[j]));
            mx = fmax(mx, fabs((double)b[j]));
        }
        worst = fmax(worst, d / mx);
    }
    CHECK(rc == TINFER_OK, "%s: token-by-token decode: %s", name, tinfer_last_error());
    const double tol_self = g_amx ? TOL_BF16 : TOL_SELF;
    CHECK(worst <= tol_self, "%s: token-by-token vs prefill: %.3g", name, worst);
    printf("%s: token-by-token vs prefill max rel diff %.3g (bound %.0e)\n", name, worst, tol_self);
    free(pre);
out:
    tinfer_context_free(c);
    free(ids);
    free(greedy);
}

/* A chat answer that ends: "What is the capital of France?" gets a one-sentence answer and then
 * <|im_end|> within a few tokens. tinfer_decode_greedy (one call of up to 63 steps) must give
 * the step-by-step loop's tokens, stop on that end-of-generation token and leave the sequence
 * holding what was fed before it. */
static void eog_case(tinfer_model *m) {
    const char *q = "What is the capital of France?";
    tinfer_chat_message msg = {"user", q};
    char text[1024];
    size_t len = 0;
    int32_t toks[256], n = 0, loop[64], n_loop = 0, picks[64], n_p = 0;
    tinfer_status rc = tinfer_chat_apply(m, &msg, 1, true, text, sizeof text - 1, &len);
    if (rc == TINFER_OK)
        rc = tinfer_tokenize(m, text, len, TINFER_TOKENIZE_PARSE_SPECIAL, toks, 256, &n);
    tinfer_context_params cp = tinfer_context_default_params();
    cp.n_ctx = 256;
    tinfer_context *a = NULL, *b = NULL;
    if (rc == TINFER_OK) rc = tinfer_context_init(m, &cp, &a);
    if (rc == TINFER_OK) rc = tinfer_context_init(m, &cp, &b);
    if (rc == TINFER_OK) rc = decode_range(a, toks, 0, n, false);
    if (rc == TINFER_OK) rc = decode_range(b, toks, 0, n, false);
    const int32_t first = rc == TINFER_OK ? tinfer_get_argmax(a, n - 1) : 0;
    /* step by step: feed, pick, until an end-of-generation pick */
    for (int32_t t = first; rc == TINFER_OK && n_loop < 63;) {
        if ((rc = decode_range(a, &t, n + n_loop, 1, false)) != TINFER_OK) break;
        t = loop[n_loop++] = tinfer_get_argmax(a, 0);
        if (tinfer_token_is_eog(m, t)) break;
    }
    if (rc == TINFER_OK) rc = tinfer_decode_greedy(b, 0, first, 63, picks, &n_p);
    CHECK(rc == TINFER_OK, "eog: %s", tinfer_last_error());
    const bool ended = n_loop > 0 && tinfer_token_is_eog(m, loop[n_loop - 1]);
    CHECK(rc != TINFER_OK || ended, "eog: no end-of-generation token in %d greedy steps",
          (int)n_loop);
    CHECK(rc != TINFER_OK || (n_p == n_loop && !memcmp(picks, loop, (size_t)n_p * 4)),
          "eog: decode_greedy made %d picks, the loop %d (or they differ)", (int)n_p,
          (int)n_loop);
    CHECK(rc != TINFER_OK || (tinfer_seq_len(b, 0) == n + n_p &&
                              tinfer_seq_len(a, 0) == tinfer_seq_len(b, 0)),
          "eog: decode_greedy left %d tokens cached, the loop %d", (int)tinfer_seq_len(b, 0),
          (int)tinfer_seq_len(a, 0));
    if (rc == TINFER_OK && ended && n_p == n_loop)
        printf("eog: decode_greedy stopped on the end-of-generation token after %d picks, as the "
               "loop did\n", (int)n_p);
    tinfer_context_free(a);
    tinfer_context_free(b);
}

int main(int argc, char **argv) {
    if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "amx"))) {
        fprintf(stderr, "usage: %s MODEL_DIR FIXTURE_JSON [amx]\n", argv[0]);
        return 2;
    }
    g_amx = argc == 4;
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/config.json", argv[1]);
    if (stat(path, &st) != 0) {
        printf("skipped: %s not found (run scripts/get-model.sh)\n", path);
        return 77;
    }
    char *json = test_read_file(argv[2], NULL);
    cJSON *fx = json ? cJSON_Parse(json) : NULL;
    if (!fx) {
        fprintf(stderr, "cannot read fixture %s\n", argv[2]);
        return 1;
    }
    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = TINFER_BACKEND_CPU;
    tinfer_model *m = NULL;
    if (tinfer_model_load(argv[1], &mp, &m) != TINFER_OK) {
        fprintf(stderr, "load: %s\n", tinfer_last_error());
        return 1;
    }
    printf("%s\n", tinfer_model_desc(m));
    if (g_amx && !strstr(tinfer_model_desc(m), "cpu amx")) {
        printf("skipped: the CPU backend does not take the AMX path here\n");
        tinfer_model_free(m);
        return 77;
    }
    const cJSON *cases = cJSON_GetObjectItem(fx, "cases");
    for (int32_t i = 0; i < cJSON_GetArraySize(cases); i++)
        run_case(m, cJSON_GetArrayItem(cases, i));
    eog_case(m);
    tinfer_model_free(m);
    cJSON_Delete(fx);
    free(json);
    return test_finish();
}

/*
 * test_sampler.c — the sampler (runtime/sampler.c) on hand-made logits.
 * Greedy = argmax; top_k = 1 = greedy at any temperature; the empirical distribution of 20k draws
 * against softmax; top-p and min-p keep exactly the tokens they should; the repetition penalty's
 * arithmetic (divide positive, multiply negative, once per distinct token, window); seeds
 * reproduce; bad arguments give errors.
 */
#include "test_util.h"
#include "tinfer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static tinfer_sampler *make(float temp, int32_t top_k, float top_p, float min_p, float pen,
                            int32_t last_n, uint64_t seed) {
    tinfer_sampler_params p = tinfer_sampler_default_params();
    p.temperature = temp;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.repeat_penalty = pen;
    p.repeat_last_n = last_n;
    p.seed = seed;
    tinfer_sampler *s = NULL;
    if (tinfer_sampler_init(&p, &s) != TINFER_OK) {
        fprintf(stderr, "sampler init: %s\n", tinfer_last_error());
        test_failures++;
    }
    return s;
}

static tinfer_token draw(tinfer_sampler *s, const float *l, int32_t n) {
    tinfer_token t = -1;
    tinfer_status rc = tinfer_sampler_sample(s, l, n, &t);
    CHECK(rc == TINFER_OK, "sample: %s", tinfer_sampler_last_error(s));
    return t;
}

/* Deterministic pseudo-random logits in [-8, 8). */
static void fill(float *l, int32_t n, uint32_t seed) {
    for (int32_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u; /* Numerical Recipes LCG */
        l[i] = (float)(seed >> 8) / (float)(1u << 24) * 16.0f - 8.0f;
    }
}

static int32_t argmax(const float *l, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (l[i] > l[b]) b = i;
    return b;
}

/* Counts of `n` draws over 4 tokens. */
static void histogram(tinfer_sampler *s, const float *l, int32_t n, int32_t counts[4]) {
    memset(counts, 0, 4 * sizeof *counts);
    for (int32_t i = 0; i < n; i++) {
        tinfer_token t = draw(s, l, 4);
        if (t >= 0 && t < 4) counts[t]++;
    }
}

static void test_greedy(void) {
    float l[1000];
    for (uint32_t trial = 0; trial < 20; trial++) {
        fill(l, 1000, trial);
        int32_t want = argmax(l, 1000);
        tinfer_sampler *g = make(0.0f, 50, 0.9f, 0.1f, 1.0f, 64, trial);
        CHECK(draw(g, l, 1000) == want, "greedy != argmax (trial %u)", trial);
        tinfer_sampler_free(g);
        /* top_k = 1 is greedy at any temperature */
        const float temps[] = {0.3f, 1.0f, 5.0f};
        for (int k = 0; k < 3; k++) {
            tinfer_sampler *s = make(temps[k], 1, 1.0f, 0.0f, 1.0f, 64, trial);
            for (int r = 0; r < 5; r++)
                CHECK(draw(s, l, 1000) == want, "top_k=1 at T=%g != argmax", (double)temps[k]);
            tinfer_sampler_free(s);
        }
    }
    /* ties go to the lowest id, like torch.argmax */
    const float tie[4] = {1.0f, 3.0f, 3.0f, 0.0f};
    tinfer_sampler *g = make(0.0f, 0, 1.0f, 0.0f, 1.0f, 64, 0);
    CHECK(draw(g, tie, 4) == 1, "greedy tie should pick the lowest id");
    tinfer_sampler_free(g);
}

static void test_distribution(void) {
    /* 20000 draws from softmax(l / T). Each count is Binomial(N, p_i): std sqrt(N p (1-p)),
     * at most 70.7 here. A 5-sigma bound makes a false failure ~6e-7 likely per category for a
     * correct sampler (the seed is fixed, so the outcome is in fact deterministic), while a
     * wrong temperature or an off-by-one in the draw moves a count by hundreds. */
    const float l[4] = {1.0f, 2.0f, 0.5f, -1.0f};
    const int32_t N = 20000;
    const float temps[] = {1.0f, 2.0f, 0.5f};
    for (int k = 0; k < 3; k++) {
        double p[4], z = 0;
        for (int i = 0; i < 4; i++) z += p[i] = exp(l[i] / temps[k]);
        tinfer_sampler *s = make(temps[k], 0, 1.0f, 0.0f, 1.0f, 64, 1234);
        int32_t c[4];
        histogram(s, l, N, c);
        for (int i = 0; i < 4; i++) {
            double pi = p[i] / z, mean = N * pi, sd = sqrt(N * pi * (1 - pi));
            CHECK(fabs(c[i] - mean) <= 5 * sd, "T=%g token %d: %d draws, expected %.0f +- %.0f",
                  (double)temps[k], i, (int)c[i], mean, 5 * sd);
        }
        tinfer_sampler_free(s);
    }
}

static void test_top_p_min_p(void) {
    /* probabilities 0.5, 0.25, 0.15, 0.10 exactly (up to float rounding of the logs) */
    float l[4];
    const double pr[4] = {0.5, 0.25, 0.15, 0.10};
    for (int i = 0; i < 4; i++) l[i] = (float)log(pr[i]);
    struct {
        float top_p, min_p;
        int keep[4];
    } cases[] = {
        {0.7f, 0.0f, {1, 1, 0, 0}},  /* cum 0.5 < 0.7 <= 0.75: {0, 1} */
        {0.8f, 0.0f, {1, 1, 1, 0}},  /* 0.75 < 0.8 <= 0.9: {0, 1, 2} */
        {0.3f, 0.0f, {1, 0, 0, 0}},  /* 0.3 <= 0.5: the top token alone */
        {0.95f, 0.0f, {1, 1, 1, 1}}, /* 0.9 < 0.95: all */
        {1.0f, 0.25f, {1, 1, 1, 0}}, /* threshold 0.125: drops 0.10 */
        {1.0f, 0.4f, {1, 1, 0, 0}},  /* threshold 0.2: drops 0.15, 0.10 */
        {1.0f, 0.9f, {1, 0, 0, 0}},  /* threshold 0.45 */
        {0.8f, 0.4f, {1, 1, 0, 0}},  /* top-p keeps 3, min-p then drops token 2 */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tinfer_sampler *s = make(1.0f, 0, cases[k].top_p, cases[k].min_p, 1.0f, 64, 99);
        int32_t c[4];
        histogram(s, l, 4000, c);
        for (int i = 0; i < 4; i++) {
            /* a kept token has p >= 0.1 of 4000 draws even after renormalisation: expected
             * >= 400 draws, so 0 draws of a kept token is impossible in practice */
            if (cases[k].keep[i])
                CHECK(c[i] > 0, "top_p %g min_p %g: token %d should be kept (0 draws)",
                      (double)cases[k].top_p, (double)cases[k].min_p, i);
            else
                CHECK(c[i] == 0, "top_p %g min_p %g: token %d should be excluded (%d draws)",
                      (double)cases[k].top_p, (double)cases[k].min_p, i, (int)c[i]);
        }
        tinfer_sampler_free(s);
    }
    /* top-k with sampling: only the k best appear */
    tinfer_sampler *s = make(1.0f, 2, 1.0f, 0.0f, 1.0f, 64, 5);
    int32_t c[4];
    histogram(s, l, 4000, c);
    CHECK(c[0] > 0 && c[1] > 0 && c[2] == 0 && c[3] == 0, "top_k=2: counts %d %d %d %d", (int)c[0],
          (int)c[1], (int)c[2], (int)c[3]);
    tinfer_sampler_free(s);
}

/* Greedy pick after accepting `hist` with the given penalty and window. */
static tinfer_token penalised(const float *l, float pen, int32_t last_n, const int32_t *hist,
                              int32_t n_hist) {
    tinfer_sampler *s = make(0.0f, 0, 1.0f, 0.0f, pen, last_n, 0);
    for (int32_t i = 0; i < n_hist; i++) tinfer_sampler_accept(s, hist[i]);
    tinfer_token t = draw(s, l, 4);
    tinfer_sampler_free(s);
    return t;
}

static void test_penalty(void) {
    const float pos[4] = {2.0f, -2.0f, 1.5f, 0.5f};
    const int32_t h0[1] = {0};
    /* positive logits are divided: 2/1.6 = 1.25 < 1.5, 2/1.2 = 1.67 > 1.5 */
    CHECK(penalised(pos, 1.6f, 64, h0, 1) == 2, "penalty 1.6 should divide logit 2 to 1.25");
    CHECK(penalised(pos, 1.2f, 64, h0, 1) == 0, "penalty 1.2 should divide logit 2 to 1.67");
    /* once per distinct token: applying 1.2 twice would give 1.39 < 1.5 */
    const int32_t h00[3] = {0, 0, 0};
    CHECK(penalised(pos, 1.2f, 64, h00, 3) == 0, "penalty applied more than once per token");
    /* negative logits are multiplied: -1 * 2 = -2 < -1.5; -1 * 1.4 = -1.4 > -1.5 */
    const float neg[4] = {-1.0f, -1.5f, -3.0f, -3.0f};
    CHECK(penalised(neg, 2.0f, 64, h0, 1) == 1, "penalty 2 should multiply logit -1 to -2");
    CHECK(penalised(neg, 1.4f, 64, h0, 1) == 0, "penalty 1.4 should multiply logit -1 to -1.4");
    /* window: with repeat_last_n = 2, token 0 three tokens back is not penalised */
    const int32_t h033[3] = {0, 3, 3};
    CHECK(penalised(pos, 1.6f, 2, h033, 3) == 0, "token outside repeat_last_n was penalised");
    CHECK(penalised(pos, 1.6f, 3, h033, 3) == 2, "token inside repeat_last_n not penalised");
    /* repeat_last_n = 0 means every accepted token, however many */
    int32_t many[1000];
    many[0] = 0;
    for (int i = 1; i < 1000; i++) many[i] = 3;
    CHECK(penalised(pos, 1.6f, 0, many, 1000) == 2, "repeat_last_n=0 should cover all history");
    /* a penalty also shapes sampling: the penalised distribution equals softmax of the
     * penalised logits, so token 0 (2.0 -> 0.5 with penalty 4) becomes the least likely of
     * {0, 2, 3} -- checked through top_k=1 after penalty: greedy sees 1.5 as the best */
    tinfer_sampler *s = make(1.0f, 1, 1.0f, 0.0f, 4.0f, 64, 0);
    tinfer_sampler_accept(s, 0);
    CHECK(draw(s, pos, 4) == 2, "top_k must act on penalised logits");
    tinfer_sampler_free(s);
}

static void test_seed(void) {
    float l[50];
    fill(l, 50, 7);
    for (int i = 0; i < 50; i++) l[i] *= 0.3f; /* flat enough that draws vary */
    tinfer_token a[500], b[500];
    tinfer_sampler *s1 = make(1.0f, 0, 1.0f, 0.0f, 1.0f, 64, 42);
    tinfer_sampler *s2 = make(1.0f, 0, 1.0f, 0.0f, 1.0f, 64, 42);
    tinfer_sampler *s3 = make(1.0f, 0, 1.0f, 0.0f, 1.0f, 64, 43);
    int same12 = 1, same13 = 1, distinct = 0;
    for (int i = 0; i < 500; i++) {
        a[i] = draw(s1, l, 50);
        b[i] = draw(s2, l, 50);
        same12 &= a[i] == b[i];
        same13 &= a[i] == draw(s3, l, 50);
        distinct += i > 0 && a[i] != a[i - 1];
    }
    CHECK(same12, "same seed gave different tokens");
    CHECK(!same13, "different seeds gave identical 500-token streams");
    CHECK(distinct > 100, "draws barely vary (%d changes in 500)", distinct);
    tinfer_sampler_reset(s1);
    int again = 1;
    for (int i = 0; i < 500; i++) again &= draw(s1, l, 50) == a[i];
    CHECK(again, "tinfer_sampler_reset should replay the seed's stream");
    tinfer_sampler_free(s1);
    tinfer_sampler_free(s2);
    tinfer_sampler_free(s3);
}

static void test_bad_args(void) {
    float l[4] = {0, 1, 2, 3};
    tinfer_token t;
    CHECK(tinfer_sampler_sample(NULL, l, 4, &t) == TINFER_ERR_INVALID_ARG, "NULL sampler");
    CHECK(strstr(tinfer_last_error(), "sampler") != NULL, "message: %s", tinfer_last_error());
    tinfer_sampler *s = make(1.0f, 0, 1.0f, 0.0f, 1.0f, 64, 0);
    CHECK(tinfer_sampler_sample(s, NULL, 4, &t) == TINFER_ERR_INVALID_ARG, "NULL logits");
    CHECK(strstr(tinfer_sampler_last_error(s), "logits") != NULL, "message: %s",
          tinfer_sampler_last_error(s));
    CHECK(tinfer_sampler_sample(s, l, 4, NULL) == TINFER_ERR_INVALID_ARG, "NULL out");
    CHECK(tinfer_sampler_sample(s, l, 0, &t) == TINFER_ERR_INVALID_ARG, "n_vocab 0");
    CHECK(tinfer_sampler_sample(s, l, -5, &t) == TINFER_ERR_INVALID_ARG, "n_vocab < 0");
    CHECK(strstr(tinfer_sampler_last_error(s), "n_vocab") != NULL, "message: %s",
          tinfer_sampler_last_error(s));
    float nan4[4] = {NAN, NAN, NAN, NAN};
    CHECK(tinfer_sampler_sample(s, nan4, 4, &t) == TINFER_ERR_INVALID_ARG, "all-NaN logits");
    CHECK(strstr(tinfer_sampler_last_error(s), "NaN") != NULL, "message: %s",
          tinfer_sampler_last_error(s));
    tinfer_sampler *g = make(0.0f, 0, 1.0f, 0.0f, 1.0f, 64, 0);
    CHECK(tinfer_sampler_sample(g, nan4, 4, &t) == TINFER_ERR_INVALID_ARG, "greedy NaN logits");
    tinfer_sampler_free(g);
    /* scratch grows for a bigger vocabulary and still works for a smaller one */
    float big[5000];
    fill(big, 5000, 3);
    CHECK(tinfer_sampler_sample(s, big, 5000, &t) == TINFER_OK && t >= 0 && t < 5000, "grow");
    CHECK(tinfer_sampler_sample(s, l, 4, &t) == TINFER_OK && t >= 0 && t < 4, "shrink");
    tinfer_sampler_free(s);

    tinfer_sampler_params p = tinfer_sampler_default_params();
    tinfer_sampler *x = NULL;
    CHECK(tinfer_sampler_init(NULL, &x) == TINFER_ERR_INVALID_ARG && !x, "NULL params");
    p.temperature = NAN;
    CHECK(tinfer_sampler_init(&p, &x) == TINFER_ERR_INVALID_ARG && !x, "NaN temperature");
    p = tinfer_sampler_default_params();
    p.repeat_penalty = 0.0f;
    CHECK(tinfer_sampler_init(&p, &x) == TINFER_ERR_INVALID_ARG && !x, "penalty 0");
    CHECK(strstr(tinfer_last_error(), "repeat_penalty") != NULL, "message: %s",
          tinfer_last_error());
    p = tinfer_sampler_default_params();
    p.repeat_last_n = -1;
    CHECK(tinfer_sampler_init(&p, &x) == TINFER_ERR_INVALID_ARG && !x, "repeat_last_n -1");
    tinfer_sampler_free(NULL);
    tinfer_sampler_accept(NULL, 1);
    tinfer_sampler_reset(NULL);
}

int main(void) {
    test_greedy();
    test_distribution();
    test_top_p_min_p();
    test_penalty();
    test_seed();
    test_bad_args();
    return test_finish();
}

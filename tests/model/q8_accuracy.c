/*
 * q8_accuracy.c — how far one model's logits are from another's (a measuring tool, not a test):
 * a Q8_0 model from its BF16 original, or the CUDA backend from the CPU on the same directory.
 * Both run the same text as one prefill with logits at every position.
 *
 * Usage: q8_accuracy A_DIR[@BACKEND] B_DIR[@BACKEND] TEXT_FILE [MAX_TOKENS=512]
 *   BACKEND: cpu (the default) or cuda; e.g. q8_accuracy M@cpu M@cuda ARCHITECTURE.md
 * Prints, over the positions: the logits' max and mean absolute difference, the mean of each
 * position's max |difference| relative to that position's A logit range, the share of positions
 * whose argmax (greedy next token) agrees, how often A's argmax is in B's top 5, and where they
 * disagree the largest of A's margins between its argmax and B's (a disagreement at a margin
 * smaller than the logits' differences is a near tie, not an error). Exit status 0, or 1 after a
 * message on error.
 */
#include "tinfer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
    fprintf(stderr, "error: %s: %s\n", what, tinfer_last_error());
    return 1;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        const long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
            fread(buf, 1, (size_t)n, f) == (size_t)n) {
            buf[n] = 0;
            *len = (size_t)n;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

/* "DIR[@cpu|@cuda]" -> dir (in buf) and backend; 0, or 1 after a message. */
static int parse_spec(const char *spec, char *buf, size_t cap, tinfer_backend *be) {
    const char *at = strrchr(spec, '@');
    const size_t n = at ? (size_t)(at - spec) : strlen(spec);
    if (n == 0 || n >= cap) {
        fprintf(stderr, "error: bad model argument '%s'\n", spec);
        return 1;
    }
    memcpy(buf, spec, n);
    buf[n] = 0;
    *be = TINFER_BACKEND_CPU;
    if (at && !strcmp(at + 1, "cuda"))
        *be = TINFER_BACKEND_CUDA;
    else if (at && strcmp(at + 1, "cpu")) {
        fprintf(stderr, "error: backend '%s': cpu or cuda\n", at + 1);
        return 1;
    }
    return 0;
}

/* Logits of every position of tok[0..n) under the model in dir on backend be, into out [n, V]
 * (malloc'd). */
static int run(const char *dir, tinfer_backend be, const tinfer_token *tok, int32_t n, float **out,
               int32_t *V) {
    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = be;
    tinfer_model *m = NULL;
    if (tinfer_model_load(dir, &mp, &m) != TINFER_OK) return fail(dir);
    *V = tinfer_model_n_vocab(m);
    tinfer_context_params cp = tinfer_context_default_params();
    cp.n_ctx = n;
    cp.n_batch = n;
    tinfer_context *c = NULL;
    int32_t *pos = malloc((size_t)n * sizeof *pos), *seq = calloc((size_t)n, sizeof *seq);
    int8_t *want = malloc((size_t)n);
    *out = malloc((size_t)n * (size_t)*V * sizeof **out);
    int rc = 1;
    if (!pos || !seq || !want || !*out) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    for (int32_t i = 0; i < n; i++)
        pos[i] = i, want[i] = 1;
    if (tinfer_context_init(m, &cp, &c) != TINFER_OK) {
        rc = fail("context");
        goto done;
    }
    tinfer_batch b = {n, tok, pos, seq, want};
    if (tinfer_decode(c, &b) != TINFER_OK) {
        rc = fail("decode");
        goto done;
    }
    for (int32_t i = 0; i < n; i++)
        memcpy(*out + (size_t)i * *V, tinfer_get_logits(c, i), (size_t)*V * sizeof **out);
    rc = 0;
done:
    tinfer_context_free(c);
    tinfer_model_free(m);
    free(pos);
    free(seq);
    free(want);
    return rc;
}

static int32_t argmax(const float *v, int32_t n) {
    int32_t best = 0;
    for (int32_t j = 1; j < n; j++)
        if (v[j] > v[best]) best = j;
    return best;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: q8_accuracy A_DIR[@cpu|@cuda] B_DIR[@cpu|@cuda] TEXT_FILE "
                        "[MAX_TOKENS=512]\n");
        return 1;
    }
    char dir_a[4096], dir_b[4096];
    tinfer_backend be_a, be_b;
    if (parse_spec(argv[1], dir_a, sizeof dir_a, &be_a) ||
        parse_spec(argv[2], dir_b, sizeof dir_b, &be_b))
        return 1;
    const int32_t max_tok = argc > 4 ? atoi(argv[4]) : 512;
    size_t len = 0;
    char *text = read_file(argv[3], &len);
    if (!text || max_tok < 2) {
        fprintf(stderr, "error: cannot read %s (or MAX_TOKENS < 2)\n", argv[3]);
        return 1;
    }
    /* tokenize with A's tokenizer (the two directories share it) */
    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = TINFER_BACKEND_CPU;
    tinfer_model *m = NULL;
    if (tinfer_model_load(dir_a, &mp, &m) != TINFER_OK) return fail(dir_a);
    int32_t n = 0;
    tinfer_tokenize(m, text, len, TINFER_TOKENIZE_ADD_SPECIAL, NULL, 0, &n); /* the count */
    tinfer_token *tok = malloc((size_t)(n > 0 ? n : 1) * sizeof *tok);
    if (!tok || tinfer_tokenize(m, text, len, TINFER_TOKENIZE_ADD_SPECIAL, tok, n, &n) != TINFER_OK)
        return fail("tokenize");
    tinfer_model_free(m);
    if (n > max_tok) n = max_tok;
    float *a = NULL, *q = NULL;
    int32_t V = 0, V2 = 0;
    if (run(dir_a, be_a, tok, n, &a, &V) || run(dir_b, be_b, tok, n, &q, &V2)) return 1;
    if (V != V2) {
        fprintf(stderr, "error: vocabularies differ (%d, %d)\n", V, V2);
        return 1;
    }
    double max_abs = 0, sum_abs = 0, rel = 0, worst_margin = 0;
    int32_t agree = 0, top5 = 0;
    for (int32_t i = 0; i < n; i++) {
        const float *x = a + (size_t)i * V, *y = q + (size_t)i * V;
        double pmax = 0, lo = x[0], hi = x[0];
        for (int32_t j = 0; j < V; j++) {
            const double d = fabs((double)x[j] - y[j]);
            sum_abs += d;
            pmax = d > pmax ? d : pmax;
            lo = x[j] < lo ? x[j] : lo;
            hi = x[j] > hi ? x[j] : hi;
        }
        max_abs = pmax > max_abs ? pmax : max_abs;
        rel += hi > lo ? pmax / (hi - lo) : 0;
        const int32_t ta = argmax(x, V), tq = argmax(y, V);
        agree += ta == tq;
        if (ta != tq && x[ta] - x[tq] > worst_margin) worst_margin = x[ta] - x[tq];
        int32_t above = 0; /* B's logits above A's argmax's */
        for (int32_t j = 0; j < V; j++)
            above += y[j] > y[ta];
        top5 += above < 5;
    }
    printf("%d positions of %s\n", n, argv[3]);
    printf("logits |B - A|: max %.4f, mean %.5f; per position max / A's logit range, mean %.4f\n",
           max_abs, sum_abs / ((double)n * V), rel / n);
    printf("argmax agrees at %d of %d positions (%.1f%%); A's argmax in B's top 5 at %.1f%%\n",
           agree, n, 100.0 * agree / n, 100.0 * top5 / n);
    if (agree < n)
        printf("where they disagree, A's margin between the two tokens is at most %.4f\n",
               worst_margin);
    free(a);
    free(q);
    free(tok);
    free(text);
    return 0;
}

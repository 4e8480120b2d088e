/*
 * test_random_weights.c — tinfer_model_params.random_weights: a directory with only config.json
 * loads; the same seed gives the same logits (bit for bit, in any thread count), another seed
 * other logits; the logits are finite (the weights' scale keeps activations in range through
 * the layers); a tokenizer-less model says so on tokenize.
 */
#include "tinfer.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* logits of the last of 5 tokens, from a model with random weights of this seed */
static float *logits(const char *dir, uint64_t seed, int threads, int32_t *n_vocab) {
    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = TINFER_BACKEND_CPU;
    mp.random_weights = true;
    mp.random_seed = seed;
    mp.n_threads = threads;
    tinfer_model *m = NULL;
    tinfer_context *c = NULL;
    if (tinfer_model_load(dir, &mp, &m) != TINFER_OK) {
        printf("FAIL load: %s\n", tinfer_last_error());
        test_failures++;
        return NULL;
    }
    tinfer_context_params cp = tinfer_context_default_params();
    cp.n_ctx = 16;
    float *out = NULL;
    if (tinfer_context_init(m, &cp, &c) == TINFER_OK) {
        tinfer_token tok[5] = {1, 7, 42, 3, 99};
        int32_t pos[5] = {0, 1, 2, 3, 4}, seq[5] = {0};
        tinfer_batch b = {5, tok, pos, seq, NULL};
        if (tinfer_decode(c, &b) == TINFER_OK) {
            *n_vocab = tinfer_model_n_vocab(m);
            out = malloc((size_t)*n_vocab * sizeof *out);
            if (out) memcpy(out, tinfer_get_logits(c, 4), (size_t)*n_vocab * sizeof *out);
        }
    }
    CHECK(out, "decode: %s", tinfer_last_error());
    CHECK(strstr(tinfer_model_desc(m), "random weights") != NULL, "desc: %s", tinfer_model_desc(m));
    int32_t n = 0;
    tinfer_status rc = tinfer_tokenize(m, "hi", 2, 0, NULL, 0, &n);
    CHECK(rc != TINFER_OK && strstr(tinfer_last_error(), "tokenizer"), "no tokenizer: %s",
          tinfer_last_error());
    tinfer_context_free(c);
    tinfer_model_free(m);
    return out;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s CONFIG_ONLY_DIR\n", argv[0]);
        return 2;
    }
    int32_t V = 0;
    float *a = logits(argv[1], 1, 1, &V), *b = logits(argv[1], 1, 2, &V),
          *c = logits(argv[1], 2, 2, &V);
    if (a && b && c) {
        CHECK(memcmp(a, b, (size_t)V * sizeof *a) == 0, "seed 1 on 1 and 2 threads differ");
        int same = 0, finite = 1;
        for (int32_t i = 0; i < V; i++) {
            same += a[i] == c[i];
            finite &= isfinite(a[i]) && isfinite(c[i]);
        }
        CHECK(same < V / 10, "seeds 1 and 2 agree on %d of %d logits", same, (int)V);
        CHECK(finite, "non-finite logits");
    }
    free(a);
    free(b);
    free(c);
    if (test_failures) return 1;
    printf("random weights: ok\n");
    return 0;
}

/*
 * gpu_model_util.h — what the tests that run one model two ways on the GPU share
 * (test_gpu_model.c: CUDA against the CPU; test_gpu_tp.c: tensor parallelism against one GPU):
 * loading with the same random weights, random token ids, a context, and one prefill + decode
 * run's logits.
 * Header-only; include after test_util.h.
 */
#ifndef TINFER_TEST_GPU_MODEL_UTIL_H
#define TINFER_TEST_GPU_MODEL_UTIL_H

#include "tinfer.h"

#include <stdio.h>
#include <string.h>

#define N_PROMPT 37 /* a prefill of this many tokens, every row's logits kept */
#define N_DECODE 8  /* then this many single-token steps */

/* The model of config dir on backend be, tp ranks (0: off), random weights of seed 7. */
static inline tinfer_model *load_random(const char *dir, tinfer_backend be, int32_t tp,
                                        tinfer_status *rc) {
    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = be;
    mp.tp = tp;
    mp.random_weights = true;
    mp.random_seed = 7;
    tinfer_model *m = NULL;
    *rc = tinfer_model_load(dir, &mp, &m);
    return m;
}

/* tok[0 .. n): token ids below V from a fixed xorshift sequence (the same in every test). */
static inline void random_tokens(tinfer_token *tok, int32_t n, int32_t V) {
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int32_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        tok[i] = (tinfer_token)(x % (uint64_t)V);
    }
}

/* A context of n_seq sequences, 256 tokens each, cuda_fused_decode = fused, its decode steps as
 * `micro` concurrent chains (cuda_micro_batches; 0: the default). */
static inline tinfer_context *context_micro(tinfer_model *m, int32_t n_seq, int32_t fused,
                                            int32_t micro) {
    tinfer_context_params cp = tinfer_context_default_params();
    cp.cuda_fused_decode = fused;
    cp.cuda_micro_batches = micro;
    cp.n_ctx = 256;
    cp.n_seq_max = n_seq;
    cp.n_batch = 256;
    tinfer_context *c = NULL;
    if (tinfer_context_init(m, &cp, &c) != TINFER_OK) {
        printf("FAIL context: %s\n", tinfer_last_error());
        test_failures++;
    }
    return c;
}

/* A context of n_seq sequences, 256 tokens each, cuda_fused_decode = fused. */
static inline tinfer_context *context(tinfer_model *m, int32_t n_seq, int32_t fused) {
    return context_micro(m, n_seq, fused, 0);
}

/* From an empty cache: prefill tok[0 .. N_PROMPT) with every row's logits into out[N_PROMPT][V],
 * then N_DECODE steps (the token fed: tok[N_PROMPT + k]) with their logits after it. 0 or -1. */
static inline int run(tinfer_context *c, const tinfer_token *tok, int32_t V, float *out) {
    int32_t pos[N_PROMPT], seq[N_PROMPT] = {0};
    int8_t want[N_PROMPT];
    tinfer_seq_clear(c, -1);
    for (int32_t i = 0; i < N_PROMPT; i++)
        pos[i] = i, want[i] = 1;
    tinfer_batch b = {N_PROMPT, tok, pos, seq, want};
    if (tinfer_decode(c, &b) != TINFER_OK) return -1;
    for (int32_t i = 0; i < N_PROMPT; i++)
        memcpy(out + (size_t)i * V, tinfer_get_logits(c, i), (size_t)V * sizeof(float));
    for (int32_t k = 0; k < N_DECODE; k++) {
        int32_t p = N_PROMPT + k, s = 0;
        tinfer_batch one = {1, &tok[N_PROMPT + k], &p, &s, NULL};
        if (tinfer_decode(c, &one) != TINFER_OK) return -1;
        memcpy(out + (size_t)(N_PROMPT + k) * V, tinfer_get_logits(c, 0),
               (size_t)V * sizeof(float));
    }
    return 0;
}

#endif

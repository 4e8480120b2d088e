/*
 * perf_model.c — where the time of a forward pass goes, per op (a measuring tool, not a test).
 *
 * Usage: perf_model MODEL_DIR [N_PROMPT=128] [N_GEN=64] [THREADS=0]
 * Prefills N_PROMPT tokens in one batch, then decodes N_GEN tokens one at a time (greedy), with
 * the forward's per-op timers on (models/llama.h, tinfer_llama_op). Prints, for prefill and for
 * decode: ms per op, share of the total, and for the GEMMs the achieved GFLOP/s (prefill) or
 * weight-streaming GB/s (decode: every weight byte is read once per token).
 */
#define _POSIX_C_SOURCE 200809L

#include "model_internal.h"
#include "models/llama.h"
#include "tinfer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *OP_NAMES[TINFER_LLAMA_OP_COUNT] = {
    "embed",  "rmsnorm", "qkv gemm", "rope + kv", "attention", "o gemm", "gate|up+swiglu",
    "down gemm", "lm head"};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Weight elements of one GEMM op over the whole model (per token: one multiply-add each). */
static double gemm_params(const tinfer_llama_config *c, int op) {
    const double E = c->n_embd, Q = (double)c->n_head * c->head_dim,
                 KV = (double)c->n_head_kv * c->head_dim, F = c->n_ff, L = c->n_layer;
    switch (op) {
    case TINFER_LLAMA_OP_QKV: return L * (Q + 2 * KV) * E;
    case TINFER_LLAMA_OP_WO: return L * E * Q;
    case TINFER_LLAMA_OP_GATE_UP: return L * 2 * F * E;
    case TINFER_LLAMA_OP_DOWN: return L * E * F;
    case TINFER_LLAMA_OP_LM_HEAD: return (double)c->n_vocab * E;
    default: return 0;
    }
}

static void report(const char *phase, const tinfer_llama_scratch *s, const tinfer_llama_config *c,
                   double wall, int32_t tokens, int32_t lm_rows, double bytes_per_weight) {
    double total = 0;
    for (int i = 0; i < TINFER_LLAMA_OP_COUNT; i++) total += s->op_seconds[i];
    printf("%s: %d tokens in %.1f ms = %.2f tok/s (ops %.1f ms, rest %.1f ms)\n", phase,
           (int)tokens, wall * 1e3, tokens / wall, total * 1e3, (wall - total) * 1e3);
    for (int i = 0; i < TINFER_LLAMA_OP_COUNT; i++) {
        const double t = s->op_seconds[i], p = gemm_params(c, i);
        printf("  %-13s %8.2f ms %5.1f%%", OP_NAMES[i], t * 1e3, 100 * t / total);
        const int32_t rows = i == TINFER_LLAMA_OP_LM_HEAD ? lm_rows : tokens;
        if (p > 0 && t > 0) {
            if (tokens == rows && strcmp(phase, "decode") == 0)
                printf("  %6.2f GB/s weights", p * bytes_per_weight * rows / t * 1e-9);
            else
                printf("  %6.2f GFLOP/s", 2 * p * rows / t * 1e-9);
        }
        printf("\n");
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR [N_PROMPT] [N_GEN] [THREADS]\n", argv[0]);
        return 2;
    }
    const int32_t n_prompt = argc > 2 ? atoi(argv[2]) : 128, n_gen = argc > 3 ? atoi(argv[3]) : 64;
    tinfer_model_params mp = tinfer_model_default_params();
    mp.n_threads = argc > 4 ? atoi(argv[4]) : 0;
    tinfer_model *m = NULL;
    if (tinfer_model_load(argv[1], &mp, &m) != TINFER_OK) {
        fprintf(stderr, "error: %s\n", tinfer_last_error());
        return 1;
    }
    const tinfer_llama_config *cfg = tinfer_model_config(m);
    const tinfer_llama_weights *w = tinfer_model_weights(m);
    const double wbytes = w->fused_dtype == TINFER_DTYPE_BF16 ? 2.0 : 4.0;
    printf("%s, %d threads\n", tinfer_model_desc(m), (int)tinfer_model_n_threads(m));

    tinfer_context_params cp = tinfer_context_default_params();
    cp.n_ctx = n_prompt + n_gen + 1;
    tinfer_context *c = NULL;
    if (tinfer_context_init(m, &cp, &c) != TINFER_OK) {
        fprintf(stderr, "error: %s\n", tinfer_last_error());
        return 1;
    }
    tinfer_llama_scratch *s = tinfer_context_llama_scratch(c);
    int32_t *tok = malloc((size_t)n_prompt * sizeof *tok), *pos = malloc((size_t)n_prompt * 4);
    int32_t *seq = calloc((size_t)n_prompt, 4);
    for (int32_t i = 0; i < n_prompt; i++) {
        tok[i] = (int32_t)((1000 + 7919 * i) % cfg->n_vocab); /* arbitrary spread of ids */
        pos[i] = i;
    }
    s->profile = true;
    tinfer_batch b = {n_prompt, tok, pos, seq, NULL};
    double t0 = now_s();
    if (tinfer_decode(c, &b) != TINFER_OK) {
        fprintf(stderr, "error: %s\n", tinfer_last_error());
        return 1;
    }
    report("prefill", s, cfg, now_s() - t0, n_prompt, 1, wbytes);

    memset(s->op_seconds, 0, sizeof s->op_seconds);
    memset(s->op_calls, 0, sizeof s->op_calls);
    const float *lg = tinfer_get_logits(c, n_prompt - 1);
    double td = 0;
    for (int32_t g = 0; g < n_gen; g++) {
        int32_t t = 0;
        for (int32_t j = 1; j < cfg->n_vocab; j++)
            if (lg[j] > lg[t]) t = j;
        int32_t p = n_prompt + g, q = 0;
        tinfer_batch one = {1, &t, &p, &q, NULL};
        t0 = now_s();
        if (tinfer_decode(c, &one) != TINFER_OK) {
            fprintf(stderr, "error: %s\n", tinfer_last_error());
            return 1;
        }
        td += now_s() - t0;
        lg = tinfer_get_logits(c, 0);
    }
    report("decode", s, cfg, td, n_gen, n_gen, wbytes);
    free(tok);
    free(pos);
    free(seq);
    tinfer_context_free(c);
    tinfer_model_free(m);
    return 0;
}

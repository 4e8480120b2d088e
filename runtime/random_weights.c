/*
 * random_weights.c — random BF16 weights of a config's shapes (random_weights.h).
 *
 * Values: a weight matrix [N, K] is uniform in [-a, a] with a = sqrt(3 / K), so each output of
 * X·W^T has about the variance of one input (the scale of trained layers; activations neither
 * vanish nor overflow through the layers); RMSNorm weights are 1; biases uniform in [-0.02,
 * 0.02]; the embedding table uniform in [-1, 1]. Element i of a tensor is a counter hash of
 * (seed, name, i): the same seed gives the same model in any load order and on any thread count,
 * and the fill runs in parallel (OpenMP). Speed does not depend on the values; the GPU tests
 * compare the GPU backend against the CPU on the same made-up model.
 */
#include "random_weights.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct tinfer_random_weights {
    const tinfer_llama_config *cfg;
    uint64_t seed;
    void **bufs;
    int32_t n_bufs, cap_bufs;
    int64_t n_elems;
};

static uint64_t mix(uint64_t z) { /* splitmix64's finaliser */
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t name_hash(const char *s) { /* FNV-1a */
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static tinfer_status rw_get(const void *ctx, const char *name, int32_t n_dims, const int64_t *shape,
                            tinfer_tensor_ref *out, tinfer_err *err) {
    tinfer_random_weights *rw = (tinfer_random_weights *)ctx;
    const bool bias = ends_with(name, ".bias");
    if (bias && !rw->cfg->qkv_bias)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "random weights: no tensor '%s'", name);
    int64_t n = 1;
    for (int32_t d = 0; d < n_dims; d++)
        n *= shape[d];
    if (rw->n_bufs == rw->cap_bufs) {
        int32_t cap = rw->cap_bufs ? 2 * rw->cap_bufs : 64;
        void **p = realloc(rw->bufs, (size_t)cap * sizeof *p);
        if (!p) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (weights)");
        rw->bufs = p;
        rw->cap_bufs = cap;
    }
    uint16_t *w = malloc((size_t)n * sizeof *w);
    if (!w)
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY,
                              "out of memory: %lld random values for %s", (long long)n, name);
    rw->bufs[rw->n_bufs++] = w;
    rw->n_elems += n;
    float a;
    if (ends_with(name, "norm.weight"))
        a = 0.0f; /* all ones below */
    else if (bias)
        a = 0.02f;
    else if (strstr(name, "embed_tokens") || strstr(name, "lm_head"))
        a = strstr(name, "lm_head") ? sqrtf(3.0f / (float)shape[1]) : 1.0f;
    else
        a = sqrtf(3.0f / (float)(n_dims == 2 ? shape[1] : shape[0]));
    const uint64_t key = mix(rw->seed ^ name_hash(name));
#pragma omp parallel for schedule(static) if (n >= (1 << 20))
    for (int64_t i = 0; i < n; i++) {
        float v = 1.0f;
        if (a > 0) {
            /* 24 random bits -> [-1, 1) */
            const float u = (float)(mix(key + (uint64_t)i) >> 40) * (2.0f / 16777216.0f) - 1.0f;
            v = a * u;
        }
        w[i] = tinfer_f32_to_bf16(v);
    }
    out->data = w;
    out->dtype = TINFER_DTYPE_BF16;
    out->n_elems = n;
    return TINFER_OK;
}

static bool rw_has(const void *ctx, const char *name) {
    const tinfer_random_weights *rw = ctx;
    /* the optional tensors the loader asks about: biases (with qkv_bias; o_proj has none) */
    return ends_with(name, ".bias") && rw->cfg->qkv_bias && !strstr(name, "o_proj");
}

tinfer_status tinfer_random_weights_init(const tinfer_llama_config *cfg, uint64_t seed,
                                         tinfer_random_weights **out, tinfer_err *err) {
    *out = calloc(1, sizeof **out);
    if (!*out) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory");
    (*out)->cfg = cfg;
    (*out)->seed = seed;
    return TINFER_OK;
}

tinfer_tensor_source tinfer_random_weights_source(tinfer_random_weights *rw) {
    return (tinfer_tensor_source){rw, rw_get, rw_has};
}

int64_t tinfer_random_weights_count(const tinfer_random_weights *rw) { return rw->n_elems; }

void tinfer_random_weights_free(tinfer_random_weights *rw) {
    if (!rw) return;
    for (int32_t i = 0; i < rw->n_bufs; i++)
        free(rw->bufs[i]);
    free(rw->bufs);
    free(rw);
}

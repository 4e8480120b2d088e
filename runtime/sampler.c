/*
 * sampler.c — token sampling from a logits vector.
 *
 * Chain (the order of HF's LogitsProcessor list and llama.cpp's default sampler chain):
 *   repetition penalty -> [greedy when temperature <= 0 or top_k == 1] -> top-k ->
 *   temperature + softmax -> top-p -> min-p -> draw.
 *  - Repetition penalty (CTRL, Keskar et al. 2019, arXiv:1909.05858; HF
 *    RepetitionPenaltyLogitsProcessor): each distinct token among the last repeat_last_n accepted
 *    tokens (0: all) has its logit divided by the penalty when > 0, multiplied when < 0. Applied
 *    once per distinct token, as HF's gather/scatter does.
 *  - Greedy: argmax, ties to the lowest id (torch.argmax returns the first maximum).
 *  - top-k: the k largest logits (a size-k min-heap, O(n log k)), then sorted descending.
 *  - top-p (nucleus, Holtzman et al. 2019, arXiv:1904.09751): over the candidates sorted by
 *    probability, keep the shortest prefix whose cumulative probability is >= top_p (>= 1 token).
 *  - min-p (Nguyen et al. 2024, arXiv:2407.01082): keep tokens with p >= min_p * p_max.
 *  - Draw: u uniform in [0, sum of kept probabilities), first token whose running sum exceeds u.
 * PRNG: xoshiro256** (Blackman & Vigna, https://prng.di.unimi.it/) seeded through splitmix64, so
 * a seed always gives the same token stream; tinfer_sampler_reset re-seeds and forgets history.
 * Memory: per-vocabulary scratch is allocated on the first call and grown only when a larger
 * vocabulary comes; the history ring is sized at init (or doubles when repeat_last_n = 0).
 */
#include "base/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
    float logit; /* then probability, after softmax */
    int32_t id;
} cand;

struct tinfer_sampler {
    tinfer_err err;
    tinfer_sampler_params p;
    uint64_t rng[4];
    int32_t *hist;                       /* ring of accepted tokens [hist_cap] */
    int32_t hist_cap, hist_n, hist_head; /* hist_head: next write slot */
    int32_t vocab_cap;                   /* size of the scratch below */
    float *work;                         /* [vocab_cap] penalised logits */
    cand *cands;                         /* [vocab_cap] candidates */
    unsigned char *mark;                 /* [vocab_cap] distinct-token marks for the penalty */
};

tinfer_sampler_params tinfer_sampler_default_params(void) {
    tinfer_sampler_params p;
    memset(&p, 0, sizeof p);
    /* HF GenerationConfig defaults: do_sample=False (greedy), top_k=50, top_p=1.0,
     * repetition_penalty=1.0; min_p off. The penalty window is llama.cpp's default
     * (repeat_last_n = 64, common/common.h). Seed: any fixed value makes runs reproducible by
     * default; 0 is as good as any. */
    p.temperature = 0.0f;
    p.top_k = 50;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    p.repeat_last_n = 64;
    p.seed = 0;
    return p;
}

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t s[4]) {
    const uint64_t r = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

/* Uniform double in [0, 1): the top 53 bits of the generator. */
static double uniform01(uint64_t s[4]) { return (double)(xoshiro_next(s) >> 11) * 0x1.0p-53; }

static void seed_rng(tinfer_sampler *s) {
    uint64_t x = s->p.seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
}

tinfer_status tinfer_sampler_init(const tinfer_sampler_params *params, tinfer_sampler **out) {
    if (out) *out = NULL;
    if (!params || !out)
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG, "tinfer_sampler_init: NULL %s",
                              !params ? "params" : "out");
    const tinfer_sampler_params *p = params;
    if (isnan(p->temperature) || isnan(p->top_p) || isnan(p->min_p))
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                              "tinfer_sampler_init: temperature, top_p and min_p must be numbers");
    if (!(p->repeat_penalty > 0.0f) || isinf(p->repeat_penalty))
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                              "tinfer_sampler_init: repeat_penalty %g must be a positive number",
                              (double)p->repeat_penalty);
    if (p->repeat_last_n < 0)
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                              "tinfer_sampler_init: repeat_last_n %d is negative",
                              (int)p->repeat_last_n);
    tinfer_sampler *s = calloc(1, sizeof *s);
    if (!s) return tinfer_err_set(NULL, TINFER_ERR_OUT_OF_MEMORY, "out of memory (sampler)");
    s->p = *p;
    /* repeat_last_n = 0 means every accepted token: start small and double as needed. */
    s->hist_cap = p->repeat_last_n > 0 ? p->repeat_last_n : 256;
    s->hist = malloc((size_t)s->hist_cap * sizeof *s->hist);
    if (!s->hist) {
        free(s);
        return tinfer_err_set(NULL, TINFER_ERR_OUT_OF_MEMORY, "out of memory (sampler history)");
    }
    seed_rng(s);
    *out = s;
    return TINFER_OK;
}

void tinfer_sampler_free(tinfer_sampler *s) {
    if (!s) return;
    free(s->hist);
    free(s->work);
    free(s->cands);
    free(s->mark);
    free(s);
}

const char *tinfer_sampler_last_error(const tinfer_sampler *s) { return s ? s->err.msg : ""; }

void tinfer_sampler_reset(tinfer_sampler *s) {
    if (!s) return;
    s->hist_n = 0;
    s->hist_head = 0;
    seed_rng(s);
}

void tinfer_sampler_accept(tinfer_sampler *s, tinfer_token token) {
    if (!s) return;
    if (s->p.repeat_last_n == 0 && s->hist_n == s->hist_cap) {
        /* unbounded window: the ring is full and linear (head == 0 after a wrap-free fill) */
        int32_t *h = realloc(s->hist, (size_t)s->hist_cap * 2 * sizeof *h);
        if (!h) return; /* keep the oldest window; the penalty then misses the newest token */
        s->hist = h;
        s->hist_head = s->hist_cap;
        s->hist_cap *= 2;
    }
    s->hist[s->hist_head] = token;
    s->hist_head = (s->hist_head + 1) % s->hist_cap;
    if (s->hist_n < s->hist_cap) s->hist_n++;
}

static tinfer_status ensure_scratch(tinfer_sampler *s, int32_t n) {
    if (n <= s->vocab_cap) return TINFER_OK;
    free(s->work);
    free(s->cands);
    free(s->mark);
    s->work = malloc((size_t)n * sizeof *s->work);
    s->cands = malloc((size_t)n * sizeof *s->cands);
    s->mark = calloc((size_t)n, 1);
    if (!s->work || !s->cands || !s->mark) {
        free(s->work);
        free(s->cands);
        free(s->mark);
        s->work = NULL;
        s->cands = NULL;
        s->mark = NULL;
        s->vocab_cap = 0;
        return tinfer_err_set(&s->err, TINFER_ERR_OUT_OF_MEMORY,
                              "out of memory: sampler scratch for %d tokens", (int)n);
    }
    s->vocab_cap = n;
    return TINFER_OK;
}

/* a ranks before b: larger logit first, then lower id (deterministic ties). */
static int cand_before(const cand *a, const cand *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static int cand_cmp(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    return cand_before(a, b) ? -1 : cand_before(b, a) ? 1 : 0;
}

/* Min-heap (by rank: the worst candidate at the root) sift-down. */
static void heap_down(cand *h, int32_t n, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && cand_before(&h[m], &h[l])) m = l;
        if (r < n && cand_before(&h[m], &h[r])) m = r;
        if (m == i) return;
        cand t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* The k best of w[0..n) into c[0..k), sorted best first. */
static void top_k(const float *w, int32_t n, int32_t k, cand *c) {
    for (int32_t i = 0; i < k; i++) c[i] = (cand){w[i], i};
    for (int32_t i = k / 2 - 1; i >= 0; i--) heap_down(c, k, i);
    for (int32_t i = k; i < n; i++) {
        cand x = {w[i], i};
        if (cand_before(&x, &c[0])) {
            c[0] = x;
            heap_down(c, k, 0);
        }
    }
    qsort(c, (size_t)k, sizeof *c, cand_cmp);
}

tinfer_status tinfer_sampler_sample(tinfer_sampler *s, const float *logits, int32_t n_vocab,
                                    tinfer_token *out) {
    if (!s)
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG, "tinfer_sampler_sample: NULL sampler");
    if (!logits || !out)
        return tinfer_err_set(&s->err, TINFER_ERR_INVALID_ARG, "tinfer_sampler_sample: NULL %s",
                              !logits ? "logits" : "out");
    if (n_vocab <= 0)
        return tinfer_err_set(&s->err, TINFER_ERR_INVALID_ARG,
                              "tinfer_sampler_sample: n_vocab %d must be positive", (int)n_vocab);
    for (int32_t i = 0; i < n_vocab; i++)
        if (isnan(logits[i]) || logits[i] == INFINITY)
            return tinfer_err_set(&s->err, TINFER_ERR_INVALID_ARG,
                                  "tinfer_sampler_sample: logits[%d] is %s", (int)i,
                                  isnan(logits[i]) ? "NaN" : "+inf");
    tinfer_status rc = ensure_scratch(s, n_vocab);
    if (rc != TINFER_OK) return rc;
    float *w = s->work;
    memcpy(w, logits, (size_t)n_vocab * sizeof *w);

    /* repetition penalty, once per distinct token in the window */
    if (s->p.repeat_penalty != 1.0f && s->hist_n > 0) {
        const float pen = s->p.repeat_penalty;
        for (int pass = 0; pass < 2; pass++) {
            for (int32_t j = 0; j < s->hist_n; j++) {
                const int32_t t = s->hist[(s->hist_head - 1 - j + 2 * s->hist_cap) % s->hist_cap];
                if (t < 0 || t >= n_vocab) continue;
                if (pass == 0 && !s->mark[t]) {
                    s->mark[t] = 1;
                    w[t] = w[t] > 0.0f ? w[t] / pen : w[t] * pen;
                } else if (pass == 1) {
                    s->mark[t] = 0; /* leave the marks clear for the next call */
                }
            }
        }
    }

    int32_t best = 0;
    for (int32_t i = 1; i < n_vocab; i++)
        if (w[i] > w[best]) best = i;
    if (s->p.temperature <= 0.0f || s->p.top_k == 1 || w[best] == -INFINITY) {
        /* all -inf: nothing is more likely than anything else; argmax's first index */
        *out = best;
        return TINFER_OK;
    }

    /* top-k (sorted), else all candidates (sorted only when top-p needs the order) */
    cand *c = s->cands;
    int32_t m = n_vocab;
    bool sorted = false;
    if (s->p.top_k > 0 && s->p.top_k < n_vocab) {
        m = s->p.top_k;
        top_k(w, n_vocab, m, c);
        sorted = true;
    } else {
        for (int32_t i = 0; i < n_vocab; i++) c[i] = (cand){w[i], i};
        if (s->p.top_p < 1.0f) {
            qsort(c, (size_t)m, sizeof *c, cand_cmp);
            sorted = true;
        }
    }

    /* temperature + softmax (max subtracted: exp never overflows, the max maps to 1) */
    const float inv_t = 1.0f / s->p.temperature, lmax = w[best];
    double sum = 0.0;
    for (int32_t i = 0; i < m; i++) {
        c[i].logit = expf((c[i].logit - lmax) * inv_t);
        sum += c[i].logit;
    }
    /* top-p on the sorted candidates */
    if (s->p.top_p < 1.0f && sorted) {
        const double target = (double)s->p.top_p * sum;
        double cum = 0.0;
        int32_t keep = m;
        for (int32_t i = 0; i < m; i++) {
            cum += c[i].logit;
            if (cum >= target) {
                keep = i + 1;
                break;
            }
        }
        m = keep;
    }
    /* min-p: relative to the most likely token, whose unnormalised probability is 1 */
    if (s->p.min_p > 0.0f) {
        int32_t k = 0;
        for (int32_t i = 0; i < m; i++)
            if (c[i].logit >= s->p.min_p || c[i].id == best) c[k++] = c[i];
        m = k;
    }
    sum = 0.0;
    for (int32_t i = 0; i < m; i++) sum += c[i].logit;
    const double u = uniform01(s->rng) * sum;
    double run = 0.0;
    for (int32_t i = 0; i < m; i++) {
        run += c[i].logit;
        if (u < run) {
            *out = c[i].id;
            return TINFER_OK;
        }
    }
    *out = c[m - 1].id; /* u rounded to the very top of the range */
    return TINFER_OK;
}

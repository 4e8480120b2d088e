/*
 * test_common.h — helpers shared by the CPU op / GEMM tests: a seeded RNG (splitmix64, so every
 * failure is reproducible from the printed seed), guard-banded buffers, unit roundoff.
 */
#ifndef TINFER_TEST_OPS_COMMON_H
#define TINFER_TEST_OPS_COMMON_H

#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unit roundoff of F32 round-to-nearest: 2^-24 (FLT_EPSILON is the spacing at 1, 2^-23). */
#define U32 ((double)FLT_EPSILON / 2.0)

/* gamma_n = n u / (1 - n u): Higham's bound on the relative error of n rounded operations in any
 * order (Accuracy and Stability of Numerical Algorithms, 2nd ed., Lemma 3.1). */
static inline double gamma_n(double n) { return n * U32 / (1.0 - n * U32); }

static uint64_t g_rng;
static inline uint64_t rng_u64(void) {
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Uniform in [lo, hi). */
static inline float rng_uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)((double)(rng_u64() >> 40) / (double)(1ull << 24));
}
static inline int rng_int(int lo, int hi) { return lo + (int)(rng_u64() % (uint64_t)(hi - lo + 1)); }

/* A NaN with a payload no computation produces: anything written over it is detected, and a
 * kernel that reads it where it should not propagates NaN into its result. */
#define SENTINEL_BITS 0x7fc0deadu
static inline float sentinel(void) {
    float f;
    uint32_t u = SENTINEL_BITS;
    memcpy(&f, &u, 4);
    return f;
}
static inline int is_sentinel(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u == SENTINEL_BITS;
}

/* Guard floats before and after every output buffer. */
#define GUARD 64

static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

#endif

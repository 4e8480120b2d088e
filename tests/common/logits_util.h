/*
 * logits_util.h — comparing rows of logits, for the tests that run one model two ways
 * (tests/model/test_gpu_model.c and test_gpu_tp.c, tests/ops_cuda/test_decode_step.cu).
 * Header-only.
 */
#ifndef TINFER_TEST_LOGITS_UTIL_H
#define TINFER_TEST_LOGITS_UTIL_H

#include <math.h>
#include <stdint.h>

/* relative RMS difference of two rows of n logits; NaN when either holds a NaN */
static inline double rel_rms(const float *a, const float *ref, int32_t n) {
    double d = 0, r = 0;
    for (int32_t i = 0; i < n; i++) {
        d += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        r += (double)ref[i] * ref[i];
    }
    return sqrt(d / (r > 0 ? r : 1));
}

/* (top-1 - top-2) / RMS of a row: how far its greedy pick is from a tie */
static inline double top2_gap(const float *x, int32_t n) {
    double a = -INFINITY, b = -INFINITY, ss = 0;
    for (int32_t i = 0; i < n; i++) {
        ss += (double)x[i] * x[i];
        if (x[i] > a)
            b = a, a = x[i];
        else if (x[i] > b)
            b = x[i];
    }
    return (a - b) / sqrt(ss / n > 0 ? ss / n : 1);
}

#endif

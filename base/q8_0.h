/*
 * q8_0.h — the Q8_0 weight format (GGUF's Q8_0, stored as two safetensors tensors).
 *
 * A matrix W [N, K] (K a multiple of 32) is cut along K into blocks of 32 consecutive elements
 * of one row; each block b of row n holds 32 int8 values q and one F16 scale d, and stands for
 * w = d * q. Stored as `X.weight` I8 [N, K] (row-major, the blocks of a row in K order) and
 * `X.weight_scale` F16 [N, K / 32] (row-major: the scale of element (n, k) is at n * K/32 + k/32).
 * The layout, the config.json key and the files' alignment are in ARCHITECTURE.md.
 *
 * Quantizing a block: d = max|w| / 127 rounded to F16 (to nearest even; a scale that lands in
 * F16's subnormals is raised by one step when that is needed to keep max|w| within 127.5 d),
 * then q = w / d rounded half away from zero and clamped to [-127, 127] (q = 0 when d = 0). So
 * every element is within d / 2 of d * q (up to the float rounding of w / d, a relative 2^-24),
 * an all-zero block gives d = 0 and exact zeros, and -128 is never produced (readers still
 * accept it: GGUF files from elsewhere may hold it).
 */
#ifndef TINFER_Q8_0_H
#define TINFER_Q8_0_H

#include "base/dtype.h"

#include <stdbool.h>
#include <stdint.h>

#define TINFER_Q8_0_BLOCK 32

/* Round half away from zero of |v| < 2^23, without libm. */
static inline int32_t tinfer_q8_0_round(float v) {
    int32_t t = (int32_t)v; /* toward zero */
    float frac = v - (float)t; /* exact */
    if (frac >= 0.5f) t++;
    if (frac <= -0.5f) t--;
    return t;
}

/* Quantizes w[0..32) into q[0..32) and *d. Returns false, writing nothing, when a value is not
 * finite or the scale overflows F16 (max|w| above 127 * 65504). */
static inline bool tinfer_q8_0_quantize_block(const float *w, int8_t *q, uint16_t *d) {
    float amax = 0.0f;
    for (int i = 0; i < TINFER_Q8_0_BLOCK; i++) {
        float a = w[i] < 0 ? -w[i] : w[i];
        if (!(a <= 3.4028234663852886e38f)) return false; /* NaN or infinity */
        if (a > amax) amax = a;
    }
    uint16_t h = tinfer_f32_to_f16(amax / 127.0f);
    if ((h & 0x7c00u) == 0x7c00u) return false;
    float ds = tinfer_f16_to_f32(h);
    if (amax > 0.0f && ds * 127.5f < amax) ds = tinfer_f16_to_f32(++h); /* subnormal scales only */
    *d = h;
    for (int i = 0; i < TINFER_Q8_0_BLOCK; i++) {
        int32_t v = ds > 0.0f ? tinfer_q8_0_round(w[i] / ds) : 0;
        q[i] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
    }
    return true;
}

static inline void tinfer_q8_0_dequantize_block(const int8_t *q, uint16_t d, float *w) {
    float ds = tinfer_f16_to_f32(d);
    for (int i = 0; i < TINFER_Q8_0_BLOCK; i++) w[i] = (float)q[i] * ds;
}

#endif

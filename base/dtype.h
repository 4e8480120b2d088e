/*
 * dtype.h — element types shared by every layer (the lowest header of the project).
 * BF16 and F16 are stored as uint16_t bit patterns on the host.
 * I8 is the safetensors element type of a Q8_0 weight's values; TINFER_DTYPE_Q8_0 names the
 * weight as a whole (int8 values plus one F16 scale per 32 values along K, base/q8_0.h), which
 * is how a tinfer_weight (models/backend.h) carries it.
 */
#ifndef TINFER_DTYPE_H
#define TINFER_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum tinfer_dtype {
    TINFER_DTYPE_F32 = 0,
    TINFER_DTYPE_F16 = 1,
    TINFER_DTYPE_BF16 = 2,
    TINFER_DTYPE_I8 = 3,   /* int8 (a safetensors tensor; the values of a Q8_0 weight) */
    TINFER_DTYPE_Q8_0 = 4, /* weight format: int8 values [N, K] + F16 scales [N, K / 32] */
} tinfer_dtype;

/* Bytes per element; for Q8_0 the values only (tinfer_dtype_nbytes counts the scales too). */
static inline size_t tinfer_dtype_size(tinfer_dtype dt) {
    return dt == TINFER_DTYPE_F32 ? 4 : dt == TINFER_DTYPE_I8 || dt == TINFER_DTYPE_Q8_0 ? 1 : 2;
}
/* Bytes of n elements, Q8_0's scales included (n a multiple of 32 for Q8_0). */
static inline size_t tinfer_dtype_nbytes(tinfer_dtype dt, size_t n) {
    return n * tinfer_dtype_size(dt) + (dt == TINFER_DTYPE_Q8_0 ? n / 32 * 2 : 0);
}
static inline const char *tinfer_dtype_name(tinfer_dtype dt) {
    switch (dt) {
    case TINFER_DTYPE_F32: return "F32";
    case TINFER_DTYPE_F16: return "F16";
    case TINFER_DTYPE_BF16: return "BF16";
    case TINFER_DTYPE_I8: return "I8";
    case TINFER_DTYPE_Q8_0: return "Q8_0";
    }
    return "?";
}

static inline float tinfer_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Round to nearest even; NaN stays a (quiet) NaN. */
static inline uint16_t tinfer_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* IEEE half -> float, subnormals, infinities and NaN included. */
static inline float tinfer_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ffu, u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400u));
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* float -> IEEE half, round to nearest even; subnormals, overflow to infinity, NaN stays a
 * (quiet) NaN. */
static inline uint16_t tinfer_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds past 65504 */
    uint32_t h, rem, halfway, s;
    if (a >= 0x38800000u) { /* normal half: rebias the exponent, drop 13 mantissa bits */
        uint32_t t = a - 0x38000000u;
        h = t >> 13;
        rem = t & 0x1fffu;
        halfway = 0x1000u;
    } else { /* subnormal half (units of 2^-24) or zero: value = m 2^(e-150) */
        uint32_t e = a >> 23;
        if (e < 102) return (uint16_t)sign; /* below 2^-25: rounds to 0 */
        uint32_t m = (a & 0x7fffffu) | 0x800000u;
        s = 126 - e; /* 14..24 */
        h = m >> s;
        rem = m & ((1u << s) - 1u);
        halfway = 1u << (s - 1);
    }
    if (rem > halfway || (rem == halfway && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

#endif

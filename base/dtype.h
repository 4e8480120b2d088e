/*
 * dtype.h — element types shared by every layer (the lowest header of the project).
 * BF16 and F16 are stored as uint16_t bit patterns on the host.
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
} tinfer_dtype;

static inline size_t tinfer_dtype_size(tinfer_dtype dt) { return dt == TINFER_DTYPE_F32 ? 4 : 2; }
static inline const char *tinfer_dtype_name(tinfer_dtype dt) {
    return dt == TINFER_DTYPE_F32 ? "F32" : dt == TINFER_DTYPE_F16 ? "F16" : "BF16";
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

#endif

/*
 * quant.c — dequantization of the ggml block formats found in the GGUF files we convert.
 *
 * Block layouts (ggml/src/ggml-common.h), 32 values per block, fp16 scales:
 *   Q4_0 (18 B): d, qs[16];           y[j] = ((qs[j] & 15) - 8) d,  y[j+16] = ((qs[j] >> 4) - 8) d
 *   Q4_1 (20 B): d, m, qs[16];        y[j] = (qs[j] & 15) d + m,    y[j+16] = (qs[j] >> 4) d + m
 *   Q5_0 (22 B): d, qh (u32), qs[16]; 5th bit of value j is bit j of qh; y = (q - 16) d
 *   Q5_1 (24 B): d, m, qh, qs[16];    y = q d + m
 *   Q8_0 (34 B): d, qs[32] (int8);    y[j] = qs[j] d
 * Arithmetic is in float, product then add, as ggml's reference dequantize_row_* does, so the
 * results are bit-identical to it (and to gguf-py's numpy version).
 */
#include "quant.h"

#include <string.h>

#include "base/dtype.h"
#include "gguf.h"

static float f16_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return tinfer_f16_to_f32(h);
}

bool quant_supported(uint32_t t) {
    switch (t) {
    case GGML_T_F32: case GGML_T_F16: case GGML_T_BF16: case GGML_T_Q4_0: case GGML_T_Q4_1:
    case GGML_T_Q5_0: case GGML_T_Q5_1: case GGML_T_Q8_0: return true;
    default: return false;
    }
}

bool quant_dequantize(uint32_t t, const uint8_t *src, int64_t n, float *dst) {
    if (!quant_supported(t) || n < 0) return false;
    if (t != GGML_T_F32 && t != GGML_T_F16 && t != GGML_T_BF16 && n % 32 != 0) return false;
    switch (t) {
    case GGML_T_F32:
        memcpy(dst, src, (size_t)n * 4);
        return true;
    case GGML_T_F16:
        for (int64_t i = 0; i < n; i++) dst[i] = f16_at(src + 2 * i);
        return true;
    case GGML_T_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            dst[i] = tinfer_bf16_to_f32(h);
        }
        return true;
    default: break;
    }
    for (int64_t b = 0; b < n / 32; b++) {
        float *y = dst + b * 32;
        switch (t) {
        case GGML_T_Q4_0: {
            const uint8_t *p = src + b * 18;
            float d = f16_at(p);
            for (int j = 0; j < 16; j++) {
                y[j] = (float)((p[2 + j] & 15) - 8) * d;
                y[j + 16] = (float)((p[2 + j] >> 4) - 8) * d;
            }
        } break;
        case GGML_T_Q4_1: {
            const uint8_t *p = src + b * 20;
            float d = f16_at(p), m = f16_at(p + 2);
            for (int j = 0; j < 16; j++) {
                y[j] = (float)(p[4 + j] & 15) * d + m;
                y[j + 16] = (float)(p[4 + j] >> 4) * d + m;
            }
        } break;
        case GGML_T_Q5_0:
        case GGML_T_Q5_1: {
            int q51 = t == GGML_T_Q5_1;
            const uint8_t *p = src + b * (q51 ? 24 : 22);
            float d = f16_at(p), m = q51 ? f16_at(p + 2) : 0.0f;
            uint32_t qh;
            memcpy(&qh, p + (q51 ? 4 : 2), 4);
            const uint8_t *qs = p + (q51 ? 8 : 6);
            for (int j = 0; j < 16; j++) {
                int lo = (qs[j] & 15) | (int)(((qh >> j) & 1u) << 4);
                int hi = (qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
                if (q51) {
                    y[j] = (float)lo * d + m;
                    y[j + 16] = (float)hi * d + m;
                } else {
                    y[j] = (float)(lo - 16) * d;
                    y[j + 16] = (float)(hi - 16) * d;
                }
            }
        } break;
        case GGML_T_Q8_0: {
            const uint8_t *p = src + b * 34;
            float d = f16_at(p);
            for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)p[2 + j] * d;
        } break;
        default: return false;
        }
    }
    return true;
}

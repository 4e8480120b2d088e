/*
 * rope.c — rotate-half rotary position embedding (HF Llama `apply_rotary_pos_emb`), in place.
 *
 * For token i at position p, head h, pair j < half = head_dim/2:
 *   inv[j] = 1 / theta^((2j)/head_dim)        (HF: float32 arange(0, d, 2) / d, float32 pow, 1/x)
 *   a      = float(p) * inv[j]                (HF: float32 matmul inv_freq x position_ids)
 *   c, s   = cos(a), sin(a) rounded to float  (HF: float32 emb.cos() / emb.sin())
 *   x'[j]        = x[j] * c - x[j + half] * s (q * cos + rotate_half(q) * sin,
 *   x'[j + half] = x[j + half] * c + x[j] * s  rotate_half(x) = cat(-x2, x1))
 * Every step is rounded to float where HF rounds it; pow and cos/sin are evaluated in double and
 * rounded once (correctly rounded almost always, where torch's float kernels are within 1 ulp),
 * so angles and outputs match HF to within a float ulp or two.
 * Constraints: head_dim even (rotate-half pairs j with j + half), stride >= n_heads * head_dim.
 * OpenMP over tokens for long batches.
 */
#include "ops/ref/ops_cpu.h"

#include <math.h>

/* Pairs whose inverse frequencies are precomputed on the stack; larger heads compute on the fly. */
#define ROPE_INV_MAX 512
/* Elements below which the op stays single-threaded (as TINFER_OPS_PAR_MIN in ops_elementwise.c). */
#define ROPE_PAR_MIN ((int64_t)1 << 15)

static float rope_inv_freq(float theta, int32_t j, int32_t head_dim) {
    float e = (float)(2 * j) / (float)head_dim;
    return 1.0f / (float)pow((double)theta, (double)e);
}

void tinfer_op_rope(float *x, int64_t n, int64_t stride, int32_t n_heads, int32_t head_dim,
                    const int32_t *pos, float theta) {
    if (n <= 0 || n_heads <= 0 || head_dim < 2) return;
    int32_t half = head_dim / 2;
    float inv[ROPE_INV_MAX];
    for (int32_t j = 0; j < half && j < ROPE_INV_MAX; j++) inv[j] = rope_inv_freq(theta, j, head_dim);
#pragma omp parallel for schedule(static) if (n * n_heads * head_dim >= ROPE_PAR_MIN && n > 1)
    for (int64_t i = 0; i < n; i++) {
        float *xi = x + i * stride;
        float p = (float)pos[i];
        for (int32_t j = 0; j < half; j++) {
            float f = j < ROPE_INV_MAX ? inv[j] : rope_inv_freq(theta, j, head_dim);
            float a = p * f;
            float c = (float)cos((double)a), s = (float)sin((double)a);
            for (int32_t h = 0; h < n_heads; h++) {
                float *v = xi + (int64_t)h * head_dim;
                float x0 = v[j], x1 = v[j + half];
                v[j] = x0 * c - x1 * s;
                v[j + half] = x1 * c + x0 * s;
            }
        }
    }
}

/*
 * gemm_cpu_q8.c — the portable Q8_0 pieces of the CPU GEMM: quantizing the activations of a
 * GEMV and the int8 block dot products (the SIMD paths: gemm_cpu_q8_avx2.c, gemm_cpu_q8_avx512.c).
 *
 * Activations (once per GEMV call, the same on every path): per block b of 32 consecutive x,
 *   amax = max |x_k|,  xd[b] = amax / 127 (F32),  xq_k = rne(x_k * (127 / amax))  in [-127, 127]
 * (rne: round to nearest, ties to even, which is what cvtps2dq does in the default MXCSR mode;
 * here the 1.5 * 2^23 trick); amax = 0 gives xd = 0 and xq = 0; a NaN or an infinity in the
 * block gives xd = NaN, so the outputs that read it are NaN too, never a silent number.
 * Error: 127 / amax and amax / 127 are each rounded once, so xd * (x * 127 / amax) is x within
 * 3 * 2^-24 |x|, and rounding to an integer adds at most 1/2 a step:
 *   |x_k - xd[b] xq_k| <= xd[b] / 2 + amax 2^-22 = xd[b] (1/2 + 127 * 2^-22) < 0.50004 xd[b].
 * The GEMV then computes y_n = sum_b (d_w[n,b] xd[b]) * sum_{k in b} q_w,k xq_k with the inner
 * sum exact in int32 (|sum| <= 32 * 128 * 127), so against the exact product of the dequantized
 * weights and the unquantized x its error is at most
 *   sum_b 0.50004 xd[b] sum_{k in b} |w_k|
 * plus the F32 rounding of the per-block scaling and of the sum over blocks (tests/ops/
 * test_gemm_q8.c checks exactly this bound). It is the scheme of llama.cpp's Q8_0 x Q8_0 dot.
 */
#include "gemm/cpu/gemm_cpu_internal.h"

/* Round to nearest even for |v| <= 2^22: adding 1.5 * 2^23 leaves no fraction bits. */
static inline int32_t rne(float v) {
    volatile float t = v + 12582912.0f; /* volatile: the rounding must happen in F32 */
    return (int32_t)(t - 12582912.0f);
}

void tinfer_gemm_quant_x_scalar(int64_t K, const float *x, int8_t *xq, float *xd) {
    for (int64_t b = 0; b < K / 32; b++) {
        const float *v = x + 32 * b;
        float amax = 0.0f;
        bool bad = false;
        for (int i = 0; i < 32; i++) {
            float a = v[i] < 0 ? -v[i] : v[i];
            if (!(a <= 3.4028234663852886e38f)) bad = true; /* NaN or infinity */
            else if (a > amax) amax = a;
        }
        int8_t *q = xq + 32 * b;
        if (bad || amax == 0.0f) {
            for (int i = 0; i < 32; i++) q[i] = 0;
            xd[b] = bad ? __builtin_nanf("") : 0.0f;
            continue;
        }
        float id = 127.0f / amax;
        xd[b] = amax / 127.0f;
        for (int i = 0; i < 32; i++) q[i] = (int8_t)rne(v[i] * id);
    }
}

void tinfer_gemm_gemv_q8_scalar(int64_t n0, int64_t n1, int64_t K, const int8_t *xq,
                                const float *xd, const int8_t *W, const uint16_t *S,
                                const float *bias, float *y, bool accumulate) {
    const int64_t nb = K / 32;
    for (int64_t n = n0; n < n1; n++) {
        const int8_t *w = W + n * K;
        const uint16_t *s = S + n * nb;
        float acc = 0.0f;
        for (int64_t b = 0; b < nb; b++) {
            int32_t d = 0;
            for (int i = 0; i < 32; i++) d += (int32_t)w[32 * b + i] * (int32_t)xq[32 * b + i];
            acc += tinfer_f16_to_f32(s[b]) * xd[b] * (float)d;
        }
        if (accumulate) acc += y[n];
        if (bias) acc += bias[n];
        y[n] = acc;
    }
}

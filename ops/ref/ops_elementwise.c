/*
 * ops_elementwise.c — the row-wise CPU ops: embedding lookup, RMSNorm, SwiGLU, residual add,
 * softmax. Reference semantics (HF Llama, computed in F32 unless said):
 *   embed    out[i, :] = float(table[ids[i], :])
 *   rmsnorm  r = 1 / sqrt(mean_d(x[i, d]^2) + eps);  out[i, d] = (x[i, d] * r) * w[d]
 *            (the mean is accumulated in double: the F32 reference and the GPU kernels it checks
 *            then differ only by their own rounding, not by a long F32 sum's)
 *   swiglu   out[i, j] = silu(g) * u, silu(g) = g / (1 + exp(-g)), g = gu[i, j], u = gu[i, n_ff + j]
 *   add      y[i] += x[i]
 *   softmax  x[i] = exp(x[i] - max x) / sum_j exp(x[j] - max x)
 * swiglu and softmax have AVX2 variants (ops_simd.h exp: <= a few ulp from expf); the others are
 * plain loops the compiler vectorizes. OpenMP over rows only when a call is large enough to pay
 * for waking the team (TINFER_OPS_PAR_MIN elements).
 * Preconditions are the caller's (void API): ids in range of the table, sizes >= 0, no overlap
 * except where noted (rmsnorm: out may equal x).
 */
#include "ops/ref/ops_cpu.h"
#include "ops/ref/ops_simd.h"

#include <math.h>
#include <omp.h>
#include <string.h>

/* Elements below which a row-wise op stays on the calling thread: 2^15 floats is ~5-10 us of
 * such work on one core, about the cost of waking a sleeping OpenMP team (dev box, 2 cores). */
#define TINFER_OPS_PAR_MIN ((int64_t)1 << 15)

static inline float w_at(const void *w, tinfer_dtype dt, int64_t i) {
    if (dt == TINFER_DTYPE_BF16) return tinfer_bf16_to_f32(((const uint16_t *)w)[i]);
    if (dt == TINFER_DTYPE_F16) return tinfer_f16_to_f32(((const uint16_t *)w)[i]);
    return ((const float *)w)[i];
}

void tinfer_op_embed(float *out, const void *table, tinfer_dtype table_dtype, const int32_t *ids,
                     int64_t n, int64_t dim) {
    for (int64_t i = 0; i < n; i++) {
        float *o = out + i * dim;
        int64_t base = (int64_t)ids[i] * dim;
        if (table_dtype == TINFER_DTYPE_F32) {
            memcpy(o, (const float *)table + base, (size_t)dim * sizeof(float));
        } else if (table_dtype == TINFER_DTYPE_BF16) {
            const uint16_t *t = (const uint16_t *)table + base;
            for (int64_t d = 0; d < dim; d++) o[d] = tinfer_bf16_to_f32(t[d]);
        } else {
            for (int64_t d = 0; d < dim; d++) o[d] = w_at(table, table_dtype, base + d);
        }
    }
}

void tinfer_op_rmsnorm(float *out, const float *x, const void *w, tinfer_dtype w_dtype, int64_t n,
                       int64_t dim, float eps) {
    if (n <= 0 || dim <= 0) return;
#pragma omp parallel for schedule(static) if (n * dim >= TINFER_OPS_PAR_MIN && n > 1)
    for (int64_t i = 0; i < n; i++) {
        const float *xi = x + i * dim;
        float *oi = out + i * dim;
        double ss = 0.0;
        for (int64_t d = 0; d < dim; d++) ss += (double)xi[d] * (double)xi[d];
        float r = (float)(1.0 / sqrt(ss / (double)dim + (double)eps));
        if (w_dtype == TINFER_DTYPE_F32) {
            const float *wf = (const float *)w;
            for (int64_t d = 0; d < dim; d++) oi[d] = (xi[d] * r) * wf[d];
        } else if (w_dtype == TINFER_DTYPE_BF16) {
            const uint16_t *wb = (const uint16_t *)w;
            for (int64_t d = 0; d < dim; d++) oi[d] = (xi[d] * r) * tinfer_bf16_to_f32(wb[d]);
        } else {
            for (int64_t d = 0; d < dim; d++) oi[d] = (xi[d] * r) * w_at(w, w_dtype, d);
        }
    }
}

static void swiglu_row_scalar(float *o, const float *g, const float *u, int64_t n_ff) {
    for (int64_t j = 0; j < n_ff; j++) o[j] = g[j] / (1.0f + expf(-g[j])) * u[j];
}

#ifdef TINFER_OPS_X86
static TINFER_OPS_AVX2 void swiglu_row_avx2(float *o, const float *g, const float *u,
                                            int64_t n_ff) {
    int64_t j = 0;
    for (; j + 8 <= n_ff; j += 8) {
        __m256 gv = _mm256_loadu_ps(g + j);
        __m256 e = tinfer_exp256(_mm256_sub_ps(_mm256_setzero_ps(), gv));
        __m256 s = _mm256_div_ps(gv, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
        _mm256_storeu_ps(o + j, _mm256_mul_ps(s, _mm256_loadu_ps(u + j)));
    }
    swiglu_row_scalar(o + j, g + j, u + j, n_ff - j);
}
#endif

void tinfer_op_swiglu(float *out, const float *gu, int64_t n, int64_t n_ff) {
    if (n <= 0 || n_ff <= 0) return;
    bool avx2 = tinfer_ops_cpu_isa_avx2();
#pragma omp parallel for schedule(static) if (n * n_ff >= TINFER_OPS_PAR_MIN && n > 1)
    for (int64_t i = 0; i < n; i++) {
        const float *g = gu + i * 2 * n_ff;
#ifdef TINFER_OPS_X86
        if (avx2) {
            swiglu_row_avx2(out + i * n_ff, g, g + n_ff, n_ff);
            continue;
        }
#endif
        (void)avx2;
        swiglu_row_scalar(out + i * n_ff, g, g + n_ff, n_ff);
    }
}

void tinfer_op_add(float *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
}

#ifdef TINFER_OPS_X86
static TINFER_OPS_AVX2 void softmax_avx2(float *x, int64_t n) {
    int64_t i = 0;
    __m256 mv = _mm256_set1_ps(-INFINITY);
    for (; i + 8 <= n; i += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + i));
    float m = tinfer_hmax256(mv);
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    __m256 mb = _mm256_set1_ps(m), sv = _mm256_setzero_ps();
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 e = tinfer_exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), mb));
        _mm256_storeu_ps(x + i, e);
        sv = _mm256_add_ps(sv, e);
    }
    float s = tinfer_hsum256(sv);
    for (; i < n; i++) {
        x[i] = expf(x[i] - m);
        s += x[i];
    }
    __m256 inv = _mm256_set1_ps(1.0f / s);
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
    for (; i < n; i++) x[i] *= 1.0f / s;
}
#endif

void tinfer_op_softmax(float *x, int64_t n) {
    if (n <= 0) return;
#ifdef TINFER_OPS_X86
    if (tinfer_ops_cpu_isa_avx2()) {
        softmax_avx2(x, n);
        return;
    }
#endif
    float m = x[0];
    for (int64_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - m);
        s += x[i];
    }
    float inv = 1.0f / s;
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

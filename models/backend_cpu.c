/*
 * backend_cpu.c — the CPU backend table of backend.h: thin adapters over tinfer_gemm_cpu
 * (gemm/cpu) and the ops of ops/ref. All buffers are host memory; nothing here allocates.
 * The ops cannot fail, so every entry returns TINFER_OK.
 */
#include "models/backend.h"

#include "gemm/cpu/gemm_cpu.h"
#include "ops/ref/ops_cpu.h"

#include <string.h>

static tinfer_status cpu_matmul(void *state, int64_t M, int64_t N, int64_t K, const float *X,
                                int64_t ldx, const void *W, tinfer_dtype w_dtype, int64_t ldw,
                                const float *bias, float *Y, int64_t ldy, bool accumulate) {
    (void)state;
    tinfer_gemm_cpu(M, N, K, X, ldx, W, w_dtype, ldw, bias, Y, ldy, accumulate);
    return TINFER_OK;
}

static tinfer_status cpu_embed(void *state, float *out, const void *table, tinfer_dtype dtype,
                               const int32_t *ids, int64_t n, int64_t dim) {
    (void)state;
    tinfer_op_embed(out, table, dtype, ids, n, dim);
    return TINFER_OK;
}

static tinfer_status cpu_rmsnorm(void *state, float *out, const float *x, const void *w,
                                 tinfer_dtype w_dtype, int64_t n, int64_t dim, float eps) {
    (void)state;
    tinfer_op_rmsnorm(out, x, w, w_dtype, n, dim, eps);
    return TINFER_OK;
}

static tinfer_status cpu_rope(void *state, float *x, int64_t n, int64_t stride, int32_t n_heads,
                              int32_t head_dim, const int32_t *pos, float theta) {
    (void)state;
    tinfer_op_rope(x, n, stride, n_heads, head_dim, pos, theta);
    return TINFER_OK;
}

static tinfer_status cpu_attention(void *state, float *out, int64_t out_stride, const float *q,
                                   int64_t q_stride, const float *k, const float *v, int64_t n,
                                   const int32_t *pos, int32_t n_head, int32_t n_head_kv,
                                   int32_t head_dim) {
    (void)state;
    tinfer_op_attention(out, out_stride, q, q_stride, k, v, n, pos, n_head, n_head_kv, head_dim);
    return TINFER_OK;
}

static tinfer_status cpu_swiglu(void *state, float *out, const float *gu, int64_t n, int64_t n_ff) {
    (void)state;
    tinfer_op_swiglu(out, gu, n, n_ff);
    return TINFER_OK;
}

static tinfer_status cpu_add(void *state, float *y, const float *x, int64_t n) {
    (void)state;
    tinfer_op_add(y, x, n);
    return TINFER_OK;
}

static tinfer_status cpu_copy_rows(void *state, float *dst, int64_t dst_stride, const float *src,
                                   int64_t src_stride, int64_t rows, int64_t width) {
    (void)state;
    for (int64_t i = 0; i < rows; i++)
        memcpy(dst + i * dst_stride, src + i * src_stride, (size_t)width * sizeof(float));
    return TINFER_OK;
}

const tinfer_backend_ops tinfer_backend_cpu = {
    .name = "cpu",
    .matmul = cpu_matmul,
    .embed = cpu_embed,
    .rmsnorm = cpu_rmsnorm,
    .rope = cpu_rope,
    .attention = cpu_attention,
    .swiglu = cpu_swiglu,
    .add = cpu_add,
    .copy_rows = cpu_copy_rows,
};

/*
 * attention_cuda.cuh — what the two attention kernels (attention_decode.cu, attention_prefill.cu)
 * share: the geometry passed to the kernels, the KV-cache row address, the host argument check.
 */
#ifndef TINFER_OPS_ATTENTION_CUDA_CUH
#define TINFER_OPS_ATTENTION_CUDA_CUH

#include "ops/cuda/ops_cuda.h"
#include "ops/cuda/ops_cuda_util.cuh"

namespace tops {

struct attn_geom {
    int32_t n_head, n_head_kv;     /* query heads, KV heads */
    int32_t n_seq, n_layer, n_ctx; /* cache dimensions */
    int32_t layer;                 /* the layer whose cache rows are read */
    int64_t qkv_ld;                /* (n_head + 2 n_head_kv) * head_dim */
};

/* Element offset of cache row [s][layer][p] (row length n_head_kv * d). */
static __host__ __device__ __forceinline__ int64_t attn_cache_row(const attn_geom &g, int32_t s,
                                                                  int32_t p, int32_t d) {
    return (((int64_t)s * g.n_layer + g.layer) * g.n_ctx + p) * (int64_t)g.n_head_kv * d;
}

/* The checks both attention entries make; fills *geo. */
static inline tinfer_status attn_check(const tinfer_op_cuda_kv *kv, int32_t layer, const void *out,
                                       const void *qkv, attn_geom *geo, const char *op,
                                       tinfer_err *err) {
    TOPS_REQUIRE(err, kv != NULL, op, "NULL kv");
    TOPS_REQUIRE(err, kv->n_head >= 1 && kv->n_head_kv >= 1 && kv->n_head % kv->n_head_kv == 0, op,
                 "bad heads n_head=%d n_head_kv=%d", kv->n_head, kv->n_head_kv);
    TOPS_REQUIRE(err, kv->head_dim == 64 || kv->head_dim == 128, op, "head_dim %d not 64 or 128",
                 kv->head_dim);
    TOPS_REQUIRE(err, kv->n_seq >= 1 && kv->n_layer >= 1 && kv->n_ctx >= 1, op,
                 "bad cache n_seq=%d n_layer=%d n_ctx=%d", kv->n_seq, kv->n_layer, kv->n_ctx);
    TOPS_REQUIRE(err, layer >= 0 && layer < kv->n_layer, op, "layer %d outside [0, %d)", layer,
                 kv->n_layer);
    TOPS_REQUIRE(err, out && qkv && kv->k && kv->v, op, "NULL pointer");
    TOPS_REQUIRE(err,
                 tops_host_aligned(out, 16) && tops_host_aligned(qkv, 16) &&
                     tops_host_aligned(kv->k, 16) && tops_host_aligned(kv->v, 16),
                 op, "out, qkv, K and V must be 16-byte aligned");
    geo->n_head = kv->n_head;
    geo->n_head_kv = kv->n_head_kv;
    geo->n_seq = kv->n_seq;
    geo->n_layer = kv->n_layer;
    geo->n_ctx = kv->n_ctx;
    geo->layer = layer;
    geo->qkv_ld = (int64_t)(kv->n_head + 2 * kv->n_head_kv) * kv->head_dim;
    return TINFER_OK;
}

} // namespace tops

#endif

/*
 * rope_kv.cu — rotate-half RoPE of q and k in the QKV GEMM's output, and the KV-cache store of
 * the rotated k and of v, in one kernel (reference: ops/ref/rope.c, HF `apply_rotary_pos_emb`).
 *
 * One block per token i (p = pos[i], s = seq[i]):
 *   1. threads j < head_dim/2: a = float(p) * inv_freq[j] (one F32 product, as the reference);
 *      cos and sin evaluated in double (sincos) and rounded to F32 once, into shared memory.
 *      The reference evaluates cos/sin in double and rounds once as well, so the F32 values are
 *      identical unless the two double results (CUDA's sincos: <= 2 ulp; glibc: <= 1 ulp)
 *      straddle an F32 rounding boundary, a chance of about 2^-27 per value; then they differ by
 *      1 F32 ulp (2^-24 relative). H100's FP64 units make this cheap: head_dim/2 values per token.
 *   2. every (head, pair j) of the q heads and the k heads (adjacent in the row: heads 0 ..
 *      n_head + n_head_kv - 1): x0' = x0 c - x1 s, x1' = x1 c + x0 s with explicitly rounded
 *      products and sums (__fmul_rn / __fsub_rn: no FMA contraction, exactly the reference's F32
 *      operations), rounded to BF16 and stored back into qkv; a k head also goes to
 *      K[s][layer][p][g * head_dim + j].
 *   3. the v row copied to V[s][layer][p] (32-bit words when possible).
 * Result vs the reference on the same BF16 inputs: bit-identical BF16 outputs except for the
 * rare cos/sin case above, which can move one output by 1 BF16 ulp; the test allows 1 ulp.
 * Invalid metadata (p outside [0, n_ctx), s outside [0, n_seq)): nothing is stored in the cache
 * for that token and its q heads become NaN, so the error shows in the logits instead of
 * corrupting another sequence's cache.
 * Constraints: head_dim even and <= 512 (the shared cos/sin table).
 */
#include "gemm/cuda/cuda_check.h"
#include "ops/cuda/ops_cuda.h"
#include "ops/cuda/ops_cuda_util.cuh"
#include "ops/cuda/rope_cuda.cuh"

using namespace tops;

#define ROPE_THREADS 128
#define ROPE_HALF_MAX 256

static __global__ void __launch_bounds__(ROPE_THREADS)
    rope_kv_kernel(uint16_t *__restrict__ qkv, uint16_t *__restrict__ kc, uint16_t *__restrict__ vc,
                   const float *__restrict__ inv_freq, const int32_t *__restrict__ pos,
                   const int32_t *__restrict__ seq, int32_t n_head, int32_t n_head_kv, int32_t hd,
                   int32_t n_seq, int32_t n_layer, int32_t n_ctx, int32_t layer) {
    tops_pdl_enter();
    __shared__ float cs[ROPE_HALF_MAX], sn[ROPE_HALF_MAX];
    const int64_t i = blockIdx.x;
    const int32_t half = hd / 2, kvd = n_head_kv * hd;
    const int32_t p = pos[i], s = seq[i];
    const bool bad = p < 0 || p >= n_ctx || s < 0 || s >= n_seq;
    uint16_t *row = qkv + i * (int64_t)(n_head + 2 * n_head_kv) * hd;
    const int64_t crow = bad ? 0 : (((int64_t)s * n_layer + layer) * n_ctx + p) * kvd;
    rope_table(p, inv_freq, half, cs, sn, (int)threadIdx.x, (int)blockDim.x);
    __syncthreads();
    const int32_t pairs = (n_head + n_head_kv) * half;
    for (int32_t u = threadIdx.x; u < pairs; u += blockDim.x) {
        const int32_t h = u / half, j = u - h * half;
        uint16_t *v = row + (int64_t)h * hd;
        if (bad) {
            if (h < n_head) v[j] = v[j + half] = 0x7fc0u;
            continue;
        }
        uint16_t y0, y1;
        rope_pair(bf16_to_f32(v[j]), bf16_to_f32(v[j + half]), cs[j], sn[j], &y0, &y1);
        v[j] = y0;
        v[j + half] = y1;
        if (h >= n_head) {
            uint16_t *k = kc + crow + (int64_t)(h - n_head) * hd;
            k[j] = y0;
            k[j + half] = y1;
        }
    }
    if (bad) return;
    const uint16_t *vsrc = row + (int64_t)(n_head + n_head_kv) * hd;
    uint16_t *vdst = vc + crow;
    /* hd even, so the v row and its cache slot start at even elements: 4-byte words when the
     * bases are 4-byte aligned (always, for cudaMalloc'd buffers) */
    if ((((uintptr_t)vsrc | (uintptr_t)vdst) & 3u) == 0) {
        const uint32_t *s4 = reinterpret_cast<const uint32_t *>(vsrc);
        uint32_t *d4 = reinterpret_cast<uint32_t *>(vdst);
        for (int32_t d = threadIdx.x; d < kvd / 2; d += blockDim.x)
            d4[d] = s4[d];
    } else {
        for (int32_t d = threadIdx.x; d < kvd; d += blockDim.x)
            vdst[d] = vsrc[d];
    }
}

extern "C" tinfer_status tinfer_op_cuda_rope_kv(uint16_t *qkv, const tinfer_op_cuda_kv *kv,
                                                int32_t layer, const float *inv_freq,
                                                const int32_t *pos, const int32_t *seq, int32_t n,
                                                cudaStream_t stream, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    TOPS_REQUIRE(err, kv != NULL, "rope_kv", "NULL kv");
    TOPS_REQUIRE(err, n >= 0, "rope_kv", "n %d < 0", n);
    TOPS_REQUIRE(err, kv->n_head >= 1 && kv->n_head_kv >= 1 && kv->n_head % kv->n_head_kv == 0,
                 "rope_kv", "bad heads n_head=%d n_head_kv=%d", kv->n_head, kv->n_head_kv);
    TOPS_REQUIRE(err,
                 kv->head_dim >= 2 && kv->head_dim % 2 == 0 && kv->head_dim <= 2 * ROPE_HALF_MAX,
                 "rope_kv", "head_dim %d not even in [2, %d]", kv->head_dim, 2 * ROPE_HALF_MAX);
    TOPS_REQUIRE(err, kv->n_seq >= 1 && kv->n_layer >= 1 && kv->n_ctx >= 1, "rope_kv",
                 "bad cache n_seq=%d n_layer=%d n_ctx=%d", kv->n_seq, kv->n_layer, kv->n_ctx);
    TOPS_REQUIRE(err, layer >= 0 && layer < kv->n_layer, "rope_kv", "layer %d outside [0, %d)",
                 layer, kv->n_layer);
    if (n == 0) return TINFER_OK;
    TOPS_REQUIRE(err, qkv && kv->k && kv->v && inv_freq && pos && seq, "rope_kv", "NULL pointer");
    TOPS_LAUNCH(err, "rope_kv_kernel", rope_kv_kernel, n, ROPE_THREADS, 0, stream, qkv, kv->k,
                kv->v, inv_freq, pos, seq, kv->n_head, kv->n_head_kv, kv->head_dim, kv->n_seq,
                kv->n_layer, kv->n_ctx, layer);
cleanup:
    return status;
}

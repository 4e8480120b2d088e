/*
 * rope_cuda.cuh — the RoPE arithmetic rope_kv.cu and the fused decode attention
 * (attention_decode.cu) share, so both round exactly as the CPU reference (ops/ref/rope.c) does.
 */
#ifndef TINFER_OPS_ROPE_CUDA_CUH
#define TINFER_OPS_ROPE_CUDA_CUH

#include "ops/cuda/ops_cuda_util.cuh"

namespace tops {

/* cos / sin of position p for pairs j = tid, tid + nthr, ... < half into cs / sn: the F32 angle
 * p * inv_freq[j] (one rounded product), cos and sin in double, each rounded to F32 once. */
static __device__ __forceinline__ void rope_table(int32_t p, const float *inv_freq, int32_t half,
                                                  float *cs, float *sn, int tid, int nthr) {
    for (int32_t j = tid; j < half; j += nthr) {
        const float a = __fmul_rn((float)p, inv_freq[j]);
        double sd, cd;
        sincos((double)a, &sd, &cd);
        cs[j] = (float)cd;
        sn[j] = (float)sd;
    }
}

/* Rotate-half of the pair (x0, x1) by (c, s): x0 c - x1 s and x1 c + x0 s with every product
 * and sum rounded (no FMA contraction), as BF16 bit patterns. */
static __device__ __forceinline__ void rope_pair(float x0, float x1, float c, float s, uint16_t *y0,
                                                 uint16_t *y1) {
    *y0 = (uint16_t)f32_to_bf16(__fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s)));
    *y1 = (uint16_t)f32_to_bf16(__fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s)));
}

} // namespace tops

#endif

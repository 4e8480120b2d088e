/*
 * bf16_epi.cuh — device helpers shared by the BF16 GEMM and GEMV kernels (gemm/tc, gemm/decode):
 * BF16 <-> FP32 conversion and the fused epilogue of gemm/bf16.h (bias, SwiGLU, residual,
 * BF16/F32 store). Included by .cu files only; everything here is static inline.
 */
#ifndef TINFER_GEMM_BF16_EPI_CUH
#define TINFER_GEMM_BF16_EPI_CUH

#include "gemm/bf16.h"

#include <cuda_bf16.h>
#include <stdint.h>

/* A BF16 bit pattern widens to FP32 exactly: the pattern is the top half of the float. */
static __device__ __forceinline__ float tinfer_bf16f(uint16_t h) {
    return __uint_as_float((uint32_t)h << 16);
}
/* Low / high BF16 of a packed 32-bit word. */
static __device__ __forceinline__ float tinfer_bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
static __device__ __forceinline__ float tinfer_bf16_hi(uint32_t w) {
    return __uint_as_float(w & 0xffff0000u);
}

/* 16-byte load of data read once (weights in decode): skip L1, no reuse expected. */
static __device__ __forceinline__ uint4 tinfer_ld_stream16(const void *p) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

static __device__ __forceinline__ uint16_t tinfer_f2bf16(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

/* The columns of Y: N, or N/2 for the fused gate/up (SwiGLU) weight. */
static __host__ __device__ __forceinline__ int64_t tinfer_gemm_bf16_nout(const tinfer_gemm_bf16_args &a) {
    return a.swiglu ? a.N / 2 : a.N;
}

/* Epilogue for output element (m, j). g is the accumulator of weight row j; u that of row
 * F + j (only read with swiglu). Bounds are the caller's job. */
static __device__ __forceinline__ void tinfer_bf16_epi_store(const tinfer_gemm_bf16_args &a, int64_t m,
                                                             int64_t j, float g, float u) {
    const int64_t F = a.N / 2;
    if (a.bias) {
        g += tinfer_bf16f(a.bias[j]);
        if (a.swiglu) u += tinfer_bf16f(a.bias[F + j]);
    }
    /* silu(g) = g / (1 + e^-g); __expf's relative error (2 ulp + range) is far below BF16's
     * 2^-9 rounding step, so the fast exponential costs no accuracy that the output keeps. */
    float v = a.swiglu ? g / (1.0f + __expf(-g)) * u : g;
    if (a.y_dtype == TINFER_DTYPE_F32) {
        if (a.R) v += ((const float *)a.R)[m * a.ldr + j];
        ((float *)a.Y)[m * a.ldy + j] = v;
    } else {
        if (a.R) v += tinfer_bf16f(((const uint16_t *)a.R)[m * a.ldr + j]);
        ((uint16_t *)a.Y)[m * a.ldy + j] = tinfer_f2bf16(v);
    }
}

/* Two adjacent outputs (m, j), (m, j + 1), j + 1 < N': one 4- or 8-byte store when vec is set
 * (the caller checked that Y, R and their leading dimensions keep the pair aligned). */
static __device__ __forceinline__ void tinfer_bf16_epi_store2(const tinfer_gemm_bf16_args &a, bool vec,
                                                              int64_t m, int64_t j, float g0,
                                                              float u0, float g1, float u1) {
    if (!vec) {
        tinfer_bf16_epi_store(a, m, j, g0, u0);
        tinfer_bf16_epi_store(a, m, j + 1, g1, u1);
        return;
    }
    const int64_t F = a.N / 2;
    if (a.bias) {
        g0 += tinfer_bf16f(a.bias[j]);
        g1 += tinfer_bf16f(a.bias[j + 1]);
        if (a.swiglu) {
            u0 += tinfer_bf16f(a.bias[F + j]);
            u1 += tinfer_bf16f(a.bias[F + j + 1]);
        }
    }
    float v0 = a.swiglu ? g0 / (1.0f + __expf(-g0)) * u0 : g0;
    float v1 = a.swiglu ? g1 / (1.0f + __expf(-g1)) * u1 : g1;
    if (a.y_dtype == TINFER_DTYPE_F32) {
        if (a.R) {
            const float2 r = *(const float2 *)((const float *)a.R + m * a.ldr + j);
            v0 += r.x;
            v1 += r.y;
        }
        *(float2 *)((float *)a.Y + m * a.ldy + j) = make_float2(v0, v1);
    } else {
        if (a.R) {
            const uint32_t r = *(const uint32_t *)((const uint16_t *)a.R + m * a.ldr + j);
            v0 += tinfer_bf16_lo(r);
            v1 += tinfer_bf16_hi(r);
        }
        *(uint32_t *)((uint16_t *)a.Y + m * a.ldy + j) =
            (uint32_t)tinfer_f2bf16(v0) | ((uint32_t)tinfer_f2bf16(v1) << 16);
    }
}

/* Host side: may pairs (j even) of Y / R be stored as one 4/8-byte access? */
static inline bool tinfer_bf16_epi_vec_ok(const tinfer_gemm_bf16_args &a) {
    const size_t es = a.y_dtype == TINFER_DTYPE_F32 ? 8 : 4;
    if ((uintptr_t)a.Y % es || a.ldy % 2) return false;
    if (a.R && ((uintptr_t)a.R % es || a.ldr % 2)) return false;
    return true;
}

#endif

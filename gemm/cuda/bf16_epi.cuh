/*
 * bf16_epi.cuh — device helpers shared by the BF16 GEMM and GEMV kernels (gemm/tc, gemm/decode):
 * BF16 <-> FP32 conversion and the fused epilogue of gemm/bf16.h (bias, SwiGLU, residual,
 * BF16/F32 store). Included by .cu files only; everything here is static inline.
 */
#ifndef TINFER_GEMM_BF16_EPI_CUH
#define TINFER_GEMM_BF16_EPI_CUH

#include "gemm/bf16.h"

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
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

/* ---- the split RMSNorm (gemm/bf16.h: nx, nss on the producer, rss on the consumer) ---- */

/* A square's share of a row's sum of squares as two fixed-point words, summed exactly by integer
 * atomics: word 0 the whole part, word 1 the fraction in units of 2^-32 (error <= 2^-33 a square,
 * far below the F32 rounding of a square >= 2^-9; the sum's value then does not depend on the
 * order of the additions). A square above 2^52 (|y| > 6.7e7) counts as 2^52, so 512 of them cannot
 * overflow word 0; NaN counts 0 (the normalised row carries the NaN: nx = BF16(NaN * w)). */
static __device__ __forceinline__ void tinfer_nss_words(float s, unsigned long long &hi, unsigned long long &lo) {
    s = s >= 0.f ? fminf(s, 0x1p52f) : 0.f;
    const float w = floorf(s);
    hi = (unsigned long long)w;
    lo = __float2ull_rn((s - w) * 0x1p32f); /* s - w and the scaling are exact */
}
/* Adds this thread's words for row m into the row's pair (nss + 2 m). The lanes of the warp here
 * with the same row first sum theirs (a labelled partition of the active lanes), and one of them
 * adds: a row's atomics come down from one per 8 outputs to one per warp and row (the row
 * address is shared by every CTA writing the row, so its atomics serialise). Zero words add
 * nothing. Integer sums: the result is the same in any order and grouping. */
static __device__ __forceinline__ void tinfer_nss_add(unsigned long long *nss, int64_t m, unsigned long long hi,
                                                      unsigned long long lo) {
    namespace cg = cooperative_groups;
    const cg::coalesced_group active = cg::coalesced_threads();
    const cg::coalesced_group row = cg::labeled_partition(active, (unsigned)m);
    hi = cg::reduce(row, hi, cg::plus<unsigned long long>());
    lo = cg::reduce(row, lo, cg::plus<unsigned long long>());
    if (row.thread_rank() == 0) {
        if (hi) atomicAdd(nss + 2 * m, hi);
        if (lo) atomicAdd(nss + 2 * m + 1, lo);
    }
}
/* rs = 1 / sqrt(S / n + eps) of a row's words hi, lo (the RMSNorm kernel's formula, ops/cuda). */
static __device__ __forceinline__ float tinfer_nss_rs_of(unsigned long long hi, unsigned long long lo, int32_t n, float eps) {
    const float ss = (float)((double)hi + (double)lo * 0x1p-32);
    return 1.0f / sqrtf(ss / (float)n + eps);
}
static __device__ __forceinline__ float tinfer_nss_rs(const unsigned long long *row, int32_t n, float eps) {
    return tinfer_nss_rs_of(__ldcg(row), __ldcg(row + 1), n, eps);
}
/* The producer's side for output (m, j) holding the final F32 value v: nx and the row's words
 * (the caller adds them: one atomic pair per row and call). */
static __device__ __forceinline__ void tinfer_nx_put(const tinfer_gemm_bf16_args &a, int64_t m, int64_t j, float v,
                                                     unsigned long long &hi, unsigned long long &lo) {
    a.nx[m * a.ldnx + j] = tinfer_f2bf16(v * tinfer_bf16f(a.nw[j]));
    unsigned long long h, l;
    tinfer_nss_words(v * v, h, l);
    hi += h;
    lo += l;
}

/* Epilogue for output element (m, j). g is the accumulator of weight row j; u that of row
 * F + j (only read with swiglu). Bounds are the caller's job. */
static __device__ __forceinline__ void tinfer_bf16_epi_store(const tinfer_gemm_bf16_args &a, int64_t m,
                                                             int64_t j, float g, float u) {
    const int64_t F = a.N / 2;
    if (a.rss) {
        const float rs = tinfer_nss_rs(a.rss + 2 * m, a.rn, a.reps);
        g *= rs;
        u *= rs;
    }
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
        if (a.nx) {
            unsigned long long hi = 0, lo = 0;
            tinfer_nx_put(a, m, j, v, hi, lo);
            tinfer_nss_add(a.nss, m, hi, lo);
        }
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
    if (a.rss) {
        const float rs = tinfer_nss_rs(a.rss + 2 * m, a.rn, a.reps);
        g0 *= rs, u0 *= rs, g1 *= rs, u1 *= rs;
    }
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
        if (a.nx) {
            unsigned long long hi = 0, lo = 0;
            tinfer_nx_put(a, m, j, v0, hi, lo);
            tinfer_nx_put(a, m, j + 1, v1, hi, lo);
            tinfer_nss_add(a.nss, m, hi, lo);
        }
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

/* What an 8-output epilogue needs, copied into registers once per thread (not read through the
 * parameter struct per element): nout = N' (the columns of Y), F = N / 2, v16: Y, R and their
 * rows 16-byte aligned (one 16-byte BF16 store, two FP32 ones, per 8 outputs). */
struct tinfer_epi8 {
    const uint16_t *bias;
    const void *R;
    void *Y;
    int64_t M, nout, F, ldy, ldr;
    bool sw, f32, v16;
    bool nx, rss; /* the split RMSNorm's producer / consumer side (read from the arguments) */
    bool nw16;    /* the producer's norm weights nw are 16-byte aligned */
};

static __device__ __forceinline__ tinfer_epi8 tinfer_epi8_make(const tinfer_gemm_bf16_args &a, bool v16) {
    tinfer_epi8 e;
    e.bias = a.bias;
    e.R = a.R;
    e.Y = a.Y;
    e.M = a.M;
    e.nout = tinfer_gemm_bf16_nout(a);
    e.F = a.N / 2;
    e.ldy = a.ldy;
    e.ldr = a.ldr;
    e.sw = a.swiglu != 0;
    e.f32 = a.y_dtype == TINFER_DTYPE_F32;
    e.v16 = v16;
    e.nx = a.nx != NULL;
    e.rss = a.rss != NULL;
    e.nw16 = a.nx && (uintptr_t)a.nw % 16 == 0;
    return e;
}
/* Host side: may Y and R (when set) take 16-byte stores of 8 outputs (rows 16-byte aligned)? */
static inline bool tinfer_bf16_epi_v16_ok(const tinfer_gemm_bf16_args &a) {
    const size_t es = a.y_dtype == TINFER_DTYPE_F32 ? 4 : 2;
    return (uintptr_t)a.Y % 16 == 0 && (a.ldy * es) % 16 == 0 && (!a.R || ((uintptr_t)a.R % 16 == 0 && (a.ldr * es) % 16 == 0));
}

/* What the 16-byte path of tinfer_bf16_epi_store8 reads from global memory besides the
 * accumulators: the split RMSNorm's words of row m (rss), the residual's 8 values (R: 8 F32 in
 * r0, r1 or 8 BF16 in r0) and the producer's 8 norm weights (nw, 8 BF16 in w8). The first two are
 * earlier kernels' outputs, the weights static, so a kernel may load them right after its
 * griddepcontrol.wait (tinfer_bf16_epi_pre8) and hand them to store8, which then does not begin
 * with an L2 round trip after the main loop; without them store8 loads them itself. */
struct tinfer_epi8_pre {
    unsigned long long s0, s1;
    uint4 r0, r1;
    uint4 w8;
};
static __device__ __forceinline__ bool tinfer_epi8_v16_at(const tinfer_epi8 &e, int64_t j0) {
    return e.v16 && j0 + 8 <= e.nout;
}
/* The loads of outputs (m, j0 .. j0 + 7) into p (m < M, j0 < N'; nothing when store8 takes the
 * element path there). */
static __device__ __forceinline__ void tinfer_bf16_epi_pre8(const tinfer_epi8 &e, const tinfer_gemm_bf16_args &a, int64_t m,
                                                            int64_t j0, tinfer_epi8_pre &p) {
    if (!tinfer_epi8_v16_at(e, j0)) return;
    if (e.rss) p.s0 = __ldcg(a.rss + 2 * m), p.s1 = __ldcg(a.rss + 2 * m + 1);
    if (e.nw16) p.w8 = *(const uint4 *)(a.nw + j0);
    if (e.R) {
        if (e.f32) {
            const uint4 *rp = (const uint4 *)((const float *)e.R + m * e.ldr + j0);
            p.r0 = rp[0], p.r1 = rp[1];
        } else {
            p.r0 = *(const uint4 *)((const uint16_t *)e.R + m * e.ldr + j0);
        }
    }
}

/* Outputs (m, j0 .. j0 + 7) of token m from the accumulators v (weight rows j0..) and u (rows
 * F + j0.., read with SwiGLU): bias, SwiGLU and residual in FP32, one rounding, 16-byte stores
 * when e.v16 and all 8 are inside N'; otherwise element by element (tinfer_bf16_epi_store),
 * stopping at N'. pre: the 16-byte path's loads made ahead (tinfer_bf16_epi_pre8), or NULL. The
 * caller checks m < M and j0 < N'. */
static __device__ __forceinline__ void tinfer_bf16_epi_store8(const tinfer_epi8 &e, const tinfer_gemm_bf16_args &a, int64_t m,
                                                              int64_t j0, float (&v)[8], const float (&u)[8],
                                                              const tinfer_epi8_pre *pre = NULL) {
    if (!tinfer_epi8_v16_at(e, j0)) {
        for (int k = 0; k < 8 && j0 + k < e.nout; k++) tinfer_bf16_epi_store(a, m, j0 + k, v[k], u[k]);
        return;
    }
    const float rs = !e.rss ? 1.f : pre ? tinfer_nss_rs_of(pre->s0, pre->s1, a.rn, a.reps) : tinfer_nss_rs(a.rss + 2 * m, a.rn, a.reps);
#pragma unroll
    for (int k = 0; k < 8; k++) {
        float x = e.rss ? v[k] * rs : v[k];
        if (e.bias) x += tinfer_bf16f(e.bias[j0 + k]);
        if (e.sw) {
            const float y = (e.rss ? u[k] * rs : u[k]) + (e.bias ? tinfer_bf16f(e.bias[e.F + j0 + k]) : 0.f);
            x = x / (1.0f + __expf(-x)) * y;
        }
        v[k] = x;
    }
    if (e.f32) {
        float *y = (float *)e.Y + m * e.ldy + j0;
        if (e.R) {
            const uint4 *rp = (const uint4 *)((const float *)e.R + m * e.ldr + j0);
            const uint4 r0 = pre ? pre->r0 : rp[0], r1 = pre ? pre->r1 : rp[1];
            v[0] += __uint_as_float(r0.x); v[1] += __uint_as_float(r0.y); v[2] += __uint_as_float(r0.z); v[3] += __uint_as_float(r0.w);
            v[4] += __uint_as_float(r1.x); v[5] += __uint_as_float(r1.y); v[6] += __uint_as_float(r1.z); v[7] += __uint_as_float(r1.w);
        }
        *(float4 *)y = make_float4(v[0], v[1], v[2], v[3]);
        *(float4 *)(y + 4) = make_float4(v[4], v[5], v[6], v[7]);
        if (e.nx) { /* 8 BF16 of nx in one 16-byte store where its row allows */
            unsigned long long hi = 0, lo = 0;
            uint16_t o[8];
            float wn[8];
            if (e.nw16) {
                const uint4 w8 = pre ? pre->w8 : *(const uint4 *)(a.nw + j0);
                wn[0] = tinfer_bf16_lo(w8.x); wn[1] = tinfer_bf16_hi(w8.x); wn[2] = tinfer_bf16_lo(w8.y); wn[3] = tinfer_bf16_hi(w8.y);
                wn[4] = tinfer_bf16_lo(w8.z); wn[5] = tinfer_bf16_hi(w8.z); wn[6] = tinfer_bf16_lo(w8.w); wn[7] = tinfer_bf16_hi(w8.w);
            } else {
#pragma unroll
                for (int k = 0; k < 8; k++) wn[k] = tinfer_bf16f(a.nw[j0 + k]);
            }
#pragma unroll
            for (int k = 0; k < 8; k++) {
                o[k] = tinfer_f2bf16(v[k] * wn[k]);
                unsigned long long h, l;
                tinfer_nss_words(v[k] * v[k], h, l);
                hi += h;
                lo += l;
            }
            uint16_t *np = a.nx + m * a.ldnx + j0;
            if ((uintptr_t)np % 16 == 0) {
                uint4 ov;
                ov.x = (uint32_t)o[0] | ((uint32_t)o[1] << 16);
                ov.y = (uint32_t)o[2] | ((uint32_t)o[3] << 16);
                ov.z = (uint32_t)o[4] | ((uint32_t)o[5] << 16);
                ov.w = (uint32_t)o[6] | ((uint32_t)o[7] << 16);
                *(uint4 *)np = ov;
            } else {
#pragma unroll
                for (int k = 0; k < 8; k++) np[k] = o[k];
            }
            tinfer_nss_add(a.nss, m, hi, lo);
        }
    } else {
        if (e.R) {
            const uint4 rv = pre ? pre->r0 : *(const uint4 *)((const uint16_t *)e.R + m * e.ldr + j0);
            v[0] += tinfer_bf16_lo(rv.x); v[1] += tinfer_bf16_hi(rv.x); v[2] += tinfer_bf16_lo(rv.y); v[3] += tinfer_bf16_hi(rv.y);
            v[4] += tinfer_bf16_lo(rv.z); v[5] += tinfer_bf16_hi(rv.z); v[6] += tinfer_bf16_lo(rv.w); v[7] += tinfer_bf16_hi(rv.w);
        }
        uint4 o;
        o.x = (uint32_t)tinfer_f2bf16(v[0]) | ((uint32_t)tinfer_f2bf16(v[1]) << 16);
        o.y = (uint32_t)tinfer_f2bf16(v[2]) | ((uint32_t)tinfer_f2bf16(v[3]) << 16);
        o.z = (uint32_t)tinfer_f2bf16(v[4]) | ((uint32_t)tinfer_f2bf16(v[5]) << 16);
        o.w = (uint32_t)tinfer_f2bf16(v[6]) | ((uint32_t)tinfer_f2bf16(v[7]) << 16);
        *(uint4 *)((uint16_t *)e.Y + m * e.ldy + j0) = o;
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

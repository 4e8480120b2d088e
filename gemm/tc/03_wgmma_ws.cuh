/*
 * 03_wgmma_ws.cuh — rung 03's device building blocks (the kernel: 03_wgmma_ws_kernel.cuh; the
 * algorithm, the launchers and the tile pick: 03_wgmma_ws.cu): the CTA tile constants and kernel
 * flags, each tile width's geometry (WsGeo: stages, shared memory, split-K slots), the
 * wgmma.m64nNk16 wrappers, the epilogue (bias / SwiGLU in registers, ws_store_slab's stores
 * through the per-warp scratch or whole lines, ws_store_tma's TMA stores), the mainloop over the
 * mbarrier ring and the L2-grouped tile order. Included only by 03_wgmma_ws.cu's translation
 * unit (through the kernel header); everything static. § numbers: sections of HOPPER_GEMM_NOTES,
 * as in 03_wgmma_ws.cu.
 */
#ifndef TINFER_GEMM_TC_03_WGMMA_WS_CUH
#define TINFER_GEMM_TC_03_WGMMA_WS_CUH

#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/ptx.cuh"
#include "gemm/cuda/sm90.cuh"
#include "gemm/tc/gemm_bf16_tc_internal.h"

#include <cuda.h>

#define WS_BM 128
#define WS_BK 64
#define WS_A_BYTES (WS_BM * WS_BK * 2)
/* per consumer warp: two 16 x 33 FP32 epilogue scratch tiles (gate/plain and up) */
#define WS_SCR_WARP (2 * 16 * 33 * 4)
#define WS_GROUP_M 16
/* kernel flags: pairs of Y / R may be stored as one access; plain BF16 output in whole lines */
#define WS_F_VEC 1
#define WS_F_LINES 2
#define WS_F_N8 4 /* N' % 8 == 0: edge tiles may use the whole-line stores too */
#define WS_F_ASYNCRED 8 /* split-K: partial sums pushed with st.async onto the owner's mbarrier */
/* barrier area after the stages: full / empty per stage, two ping-pong turns, four split-K
 * reduction barriers (a rank owns at most 8 / 2 units of a tile) */
#define WS_BAR_BYTES 256

/* Geometry of one tile width BN (256: the large-problem tile; 192, 128: more tiles, for problems
 * whose 128 x 256 tiles leave SMs idle or quantize badly into waves; 144: for outputs 144 divides
 * and 128 does not, 576 = 4 x 144 being SmolLM2's hidden size, split-K only). Stages fill about
 * the same ~192 KB: 4 x 48 KB, 6 x 32 KB or 5 x 34 KB (192: 4 x 40 KB). SMEM: + 1024 so the stage buffers can start 1024-byte aligned
 * for the 128B swizzle (§2); + 256 barriers; + 8 warps' epilogue scratch: 231,680 B, under the
 * 232,448 B (227 KB) per-block limit. */
template <int BN, bool TS = false> struct WsGeo {
    static_assert(BN == 256 || BN == 192 || BN == 128 || BN == 144 || BN == 96 || BN == 72,
                  "tile width 72, 96, 128, 144, 192 or 256");
    static_assert(!TS || BN % 64 == 0, "TMA-store epilogue: whole 64-column boxes");
    static constexpr int B_BYTES = BN * WS_BK * 2;
    static constexpr int STAGE_BYTES = WS_A_BYTES + B_BYTES;
    /* W boxes per stage: two of BN / 2 rows (the SwiGLU halves come from two places), one of 72
     * rows for BN = 72 (plain outputs only: 36-row halves would not start 1024-byte aligned) */
    static constexpr int W_BOXES = BN == 72 ? 1 : 2;
    /* each W box (BN / W_BOXES rows of 128 B) starts 1024-byte aligned, as the 128B swizzle needs */
    static_assert((B_BYTES / W_BOXES) % 1024 == 0 && STAGE_BYTES % 1024 == 0, "swizzle atoms stay aligned");
    /* TS (TMA-store epilogue): a 128 x 256 tile's 64 KB output buffer takes a stage */
    /* 96 and 128: 6 stages (28 / 32 KB); 192: 4 of 40 KB (5 leave no room for the scratch) */
    static constexpr int STAGES = BN == 256 ? (TS ? 3 : 4) : BN == 192 ? 4 : BN == 144 ? 5 : BN == 72 ? 7 : 6;
    /* TS: each consumer's 64-row output slab as BF16 in 64-column boxes of 8 KB (128B swizzle),
     * 1024-byte aligned after 1 KB of barriers; no per-warp scratch */
    static constexpr int OUT_BYTES = TS ? 2 * 64 * BN * 2 : 0;
    static constexpr int OUT_OFFSET = STAGES * STAGE_BYTES + 1024;
    static constexpr int SMEM = TS ? OUT_OFFSET + OUT_BYTES + 1024 : STAGES * STAGE_BYTES + 1024 + WS_BAR_BYTES + 8 * WS_SCR_WARP;
    static constexpr int NACC = BN / 2; /* FP32 accumulators per consumer thread (m64nBN) */
    static_assert(SMEM <= 232448, "shared memory per block");
    /* Split-K: an owner's stage area receives one NACC x 128-byte slot per (owned unit, pusher);
     * over factors 2..8 with 8 units that is at most (7 / f + 1) * (f - 1) = 12 slots (f = 7). */
    static constexpr int SPLIT_SLOTS = 12;
    static_assert(TS || SPLIT_SLOTS * NACC * 128 <= STAGES * STAGE_BYTES, "split-K slots fit the stage area");
    static_assert((2 * STAGES + 2 + 4) * 8 <= WS_BAR_BYTES, "full, empty, turn and reduction barriers fit");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* wgmma.m64nNk16 with FP32 accumulators d[0 .. N / 2 - 1] (registers %0..), descriptors da / db,
 * and scale_d (0: the accumulators are overwritten). One wrapper per N: the operand count is part
 * of the instruction text. WS_ACC8(i): the read-write operands d[i .. i + 7]. */
#define WS_ACC8(i)                                                                                 \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
static __device__ __forceinline__ void wgmma_m64n256k16(float d[128], uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
        : WS_ACC8(0), WS_ACC8(8), WS_ACC8(16), WS_ACC8(24), WS_ACC8(32), WS_ACC8(40), WS_ACC8(48), WS_ACC8(56),
          WS_ACC8(64), WS_ACC8(72), WS_ACC8(80), WS_ACC8(88), WS_ACC8(96), WS_ACC8(104), WS_ACC8(112), WS_ACC8(120)
        : "l"(da), "l"(db), "r"(scale_d));
}
static __device__ __forceinline__ void wgmma_m64n192k16(float d[96], uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %98, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
        "}, %96, %97, p, 1, 1, 0, 0;\n}\n"
        : WS_ACC8(0), WS_ACC8(8), WS_ACC8(16), WS_ACC8(24), WS_ACC8(32), WS_ACC8(40), WS_ACC8(48), WS_ACC8(56),
          WS_ACC8(64), WS_ACC8(72), WS_ACC8(80), WS_ACC8(88)
        : "l"(da), "l"(db), "r"(scale_d));
}
static __device__ __forceinline__ void wgmma_m64n128k16(float d[64], uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : WS_ACC8(0), WS_ACC8(8), WS_ACC8(16), WS_ACC8(24), WS_ACC8(32), WS_ACC8(40), WS_ACC8(48), WS_ACC8(56)
        : "l"(da), "l"(db), "r"(scale_d));
}
static __device__ __forceinline__ void wgmma_m64n72k16(float d[36], uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %38, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n72k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35"
        "}, %36, %37, p, 1, 1, 0, 0;\n}\n"
        : WS_ACC8(0), WS_ACC8(8), WS_ACC8(16), WS_ACC8(24), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])
        : "l"(da), "l"(db), "r"(scale_d));
}
static __device__ __forceinline__ void wgmma_m64n96k16(float d[48], uint64_t da, uint64_t db,
                                                       uint32_t scale_d) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %50, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
        "}, %48, %49, p, 1, 1, 0, 0;\n}\n"
        : WS_ACC8(0), WS_ACC8(8), WS_ACC8(16), WS_ACC8(24), WS_ACC8(32), WS_ACC8(40)
        : "l"(da), "l"(db), "r"(scale_d));
}
static __device__ __forceinline__ void wgmma_m64n144k16(float d[72], uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %74, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n144k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71"
        "}, %72, %73, p, 1, 1, 0, 0;\n}\n"
        : WS_ACC8(0), WS_ACC8(8), WS_ACC8(16), WS_ACC8(24), WS_ACC8(32), WS_ACC8(40), WS_ACC8(48), WS_ACC8(56),
          WS_ACC8(64)
        : "l"(da), "l"(db), "r"(scale_d));
}
/* One m64nBNk16 step on the BN / 2 accumulators of a consumer thread. */
template <int BN>
static __device__ __forceinline__ void wgmma_step(float *d, uint64_t da, uint64_t db, uint32_t scale_d) {
    if constexpr (BN == 256) wgmma_m64n256k16(d, da, db, scale_d);
    else if constexpr (BN == 192) wgmma_m64n192k16(d, da, db, scale_d);
    else if constexpr (BN == 144) wgmma_m64n144k16(d, da, db, scale_d);
    else if constexpr (BN == 96) wgmma_m64n96k16(d, da, db, scale_d);
    else if constexpr (BN == 72) wgmma_m64n72k16(d, da, db, scale_d);
    else wgmma_m64n128k16(d, da, db, scale_d);
}
/* What the epilogue needs, copied into registers once per consumer: reading them through a
 * reference to the kernel's parameter struct measured ~0.7 us per output row on the critical
 * warp (third H200 run, gemm/tc/README.md). */
struct WsEpi {
    const uint16_t *bias;
    const void *R;
    void *Y;
    int64_t ldy, ldr, M, nout, F;
    bool sw, f32;
};

/* Bias and SwiGLU, in registers, on the pair v0, v1 = d[i], d[i + 1] of output columns j, j + 1:
 * + bias; with SwiGLU the up values are registers i + NACC / 2 and i + 1 + NACC / 2 (same row,
 * column + BN / 2), + their bias at F + j, and v = silu(gate) * up. */
template <int NACC>
static __device__ __forceinline__ void ws_bias_swiglu(const float (&d)[NACC], int i, int64_t j, const WsEpi &e, float &v0,
                                                      float &v1) {
    if (e.bias) {
        v0 += j < e.nout ? tinfer_bf16f(e.bias[j]) : 0.f;
        v1 += j + 1 < e.nout ? tinfer_bf16f(e.bias[j + 1]) : 0.f;
    }
    if (e.sw) {
        float u0 = d[(i + NACC / 2) % NACC], u1 = d[(i + 1 + NACC / 2) % NACC];
        if (e.bias) {
            u0 += j < e.nout ? tinfer_bf16f(e.bias[e.F + j]) : 0.f;
            u1 += j + 1 < e.nout ? tinfer_bf16f(e.bias[e.F + j + 1]) : 0.f;
        }
        v0 = v0 / (1.0f + __expf(-v0)) * u0;
        v1 = v1 / (1.0f + __expf(-v1)) * u1;
    }
}

/* Stores one 64-row slab of a tile: the NACC = BN / 2 accumulators a consumer thread holds for
 * rows row_slab + 16 * warp + g (+ 8) of output columns tn * BN... (m64nBN layout, §1: register
 * i is row 16*warp + g + 8*((i>>1)&1), column 8*(i>>2) + 2t + (i&1)). whole: the tile lies inside
 * [M, N'] and pairs may be stored as one access. scr: this warp's shared scratch. */
template <int BN, int EPI>
static __device__ __forceinline__ void ws_store_slab(const float (&d)[BN / 2], const WsEpi &e, int64_t row_slab,
                                                     int32_t tn, bool whole, int lines, float (*scr)[16][33], int warp,
                                                     int lane) {
    constexpr int NACC = BN / 2;
    const int g = lane / 4, t = lane % 4;
    if (lines && !e.R) {
        /* BF16 output in whole 128-byte lines (plain, bias, SwiGLU): bias and SwiGLU are applied
         * in the registers (a thread holds gate column c and up column c + BN / 2 of a row:
         * register i and i + NACC / 2), then each 64-column piece of the warp's 16 output rows
         * goes through the warp's scratch as BF16 (rows 144 B apart: the paired 4-byte writes of
         * lanes (g, t) hit banks 4g + t + 4q, all different; 16-byte reads of 8 lanes cover one
         * row's 128 B) and every lane stores 16 B, so a warp store writes 4 whole lines instead
         * of 8 rows x 16 B. lines = 1: a whole tile; 2: an edge tile, each 16-byte piece stored
         * when its row is < M and its 8 columns are < N' (N' % 8 == 0, so a piece is all in or
         * all out). The caller checked that Y is BF16, 16-byte aligned and ldy % 8 == 0. */
        const int ow = e.sw ? BN / 2 : BN; /* output columns per tile */
        uint8_t *sb = (uint8_t *)scr;
        const int64_t row0 = row_slab + 16 * warp, col0 = (int64_t)tn * ow;
#pragma unroll
        for (int ch = 0; ch < (BN + 63) / 64; ch++) {
            if (ch * 64 >= ow) break;
            /* output columns of this piece: 64, or fewer in the last piece of a tile width 64 does
             * not divide (BN = 144: 16; with SwiGLU 8) */
            const int cw = ow - 64 * ch < 64 ? ow - 64 * ch : 64;
#pragma unroll
            for (int i = 32 * ch; i < 32 * ch + 32 && i < NACC; i += 2) {
                if (8 * (i >> 2) - 64 * ch >= cw) continue; /* past the tile's outputs (SwiGLU: the up half) */
                const int r = g + 8 * ((i >> 1) & 1), oc = 8 * (i >> 2) + 2 * t;
                float v0 = d[i], v1 = d[i + 1];
                if (EPI == 1) ws_bias_swiglu<NACC>(d, i, col0 + oc, e, v0, v1);
                *(uint32_t *)(sb + r * 144 + (oc - 64 * ch) * 2) =
                    (uint32_t)tinfer_f2bf16(v0) | ((uint32_t)tinfer_f2bf16(v1) << 16);
            }
            __syncwarp();
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const int r = lane / 8 + 4 * q, c = lane % 8;
                const uint4 v = *(const uint4 *)(sb + r * 144 + 16 * c);
                if (8 * c < cw && (lines == 1 || (row0 + r < e.M && col0 + 64 * ch + 8 * c < e.nout)))
                    *(uint4 *)((uint16_t *)e.Y + (row0 + r) * e.ldy + col0 + 64 * ch + 8 * c) = v;
            }
            __syncwarp();
        }
        return;
    }
    if (EPI == 1 && lines && !e.sw) {
        /* BF16 output + residual (and bias) in 64-byte row pieces: acc + bias goes to the scratch
         * in FP32, 32 columns at a time (rows 144 B apart), then each lane takes 8 consecutive
         * columns of a row: one 16-byte residual load, the add in FP32, one rounding, one 16-byte
         * store (a warp store: 8 rows x 64 B, against one row per store on the general path).
         * R may be Y: each 16-byte piece is read and then written by the same lane. The caller
         * checked R's alignment like Y's. */
        uint8_t *sb = (uint8_t *)scr;
        const int64_t row0 = row_slab + 16 * warp, col0 = (int64_t)tn * BN;
#pragma unroll
        for (int pc = 0; pc < (BN + 31) / 32; pc++) { /* BN = 144: the last piece holds 16 columns */
#pragma unroll
            for (int i = 16 * pc; i < 16 * pc + 16 && i < NACC; i += 2) {
                const int r = g + 8 * ((i >> 1) & 1), oc = 8 * (i >> 2) + 2 * t;
                const int64_t j = col0 + oc;
                float v0 = d[i], v1 = d[i + 1];
                if (e.bias) {
                    v0 += j < e.nout ? tinfer_bf16f(e.bias[j]) : 0.f;
                    v1 += j + 1 < e.nout ? tinfer_bf16f(e.bias[j + 1]) : 0.f;
                }
                *(float2 *)(sb + r * 144 + (oc - 32 * pc) * 4) = make_float2(v0, v1);
            }
            __syncwarp();
#pragma unroll
            for (int q = 0; q < 2; q++) {
                const int k = lane + 32 * q, r = k / 4, c = k % 4;
                const int64_t m = row0 + r, j = col0 + 32 * pc + 8 * c;
                if (32 * pc + 8 * c < BN && (lines == 1 || (m < e.M && j < e.nout))) {
                    const float4 a0 = *(const float4 *)(sb + r * 144 + 32 * c);
                    const float4 a1 = *(const float4 *)(sb + r * 144 + 32 * c + 16);
                    const uint4 rv = *(const uint4 *)((const uint16_t *)e.R + m * e.ldr + j);
                    uint4 o;
                    o.x = (uint32_t)tinfer_f2bf16(a0.x + tinfer_bf16_lo(rv.x)) | ((uint32_t)tinfer_f2bf16(a0.y + tinfer_bf16_hi(rv.x)) << 16);
                    o.y = (uint32_t)tinfer_f2bf16(a0.z + tinfer_bf16_lo(rv.y)) | ((uint32_t)tinfer_f2bf16(a0.w + tinfer_bf16_hi(rv.y)) << 16);
                    o.z = (uint32_t)tinfer_f2bf16(a1.x + tinfer_bf16_lo(rv.z)) | ((uint32_t)tinfer_f2bf16(a1.y + tinfer_bf16_hi(rv.z)) << 16);
                    o.w = (uint32_t)tinfer_f2bf16(a1.z + tinfer_bf16_lo(rv.w)) | ((uint32_t)tinfer_f2bf16(a1.w + tinfer_bf16_hi(rv.w)) << 16);
                    *(uint4 *)((uint16_t *)e.Y + m * e.ldy + j) = o;
                }
            }
            __syncwarp();
        }
        return;
    }
    if (EPI == 0 && whole) {
        /* Plain output of a whole tile: straight paired stores from the registers. */
        const int64_t row0 = row_slab + 16 * warp + g, col0 = (int64_t)tn * BN + 2 * t;
        if (!e.f32) {
            uint16_t *y = (uint16_t *)e.Y + row0 * e.ldy + col0;
#pragma unroll
            for (int p = 0; p < NACC / 2; p++)
                *(uint32_t *)(y + 8 * (p & 1) * e.ldy + 8 * (p >> 1)) =
                    (uint32_t)tinfer_f2bf16(d[2 * p]) | ((uint32_t)tinfer_f2bf16(d[2 * p + 1]) << 16);
        } else {
            float *y = (float *)e.Y + row0 * e.ldy + col0;
#pragma unroll
            for (int p = 0; p < NACC / 2; p++)
                *(float2 *)(y + 8 * (p & 1) * e.ldy + 8 * (p >> 1)) = make_float2(d[2 * p], d[2 * p + 1]);
        }
        return;
    }
    /* General epilogue (bias / SwiGLU / residual / ragged edges), staged through a per-warp
     * 16 x 32 scratch so the per-element code is one small rolled loop: fully unrolled
     * per-element branches made ~100 KB of straight-line code that ran at instruction-cache-miss
     * speed (~15-20 us per tile, first H200 runs, README.md). Lane = column, so the stores are
     * coalesced (64 B per row for BF16). SwiGLU: accumulator column c (< BN / 2) and c + BN / 2
     * are gate and up of output column c (register i and i + NACC / 2). */
    const int64_t rbase = row_slab + 16 * warp;
    const int64_t jbase = e.sw ? (int64_t)tn * (BN / 2) : (int64_t)tn * BN;
    constexpr int PIECES = (BN + 31) / 32; /* 32-column pieces of the accumulator tile (BN = 144: the last holds 16) */
    const int ow = e.sw ? BN / 2 : BN;    /* output columns of the tile */
#pragma unroll
    for (int pc = 0; pc < PIECES; pc++) {
        if (pc * 32 >= ow) break;
#pragma unroll
        for (int q = 0; q < 4; q++)
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int i = 4 * (pc * 4 + q) + k;
                if (i >= NACC) continue;
                scr[0][g + 8 * ((k >> 1) & 1)][8 * q + 2 * t + (k & 1)] = d[i];
                if (pc * 32 < BN / 2 && e.sw) scr[1][g + 8 * ((k >> 1) & 1)][8 * q + 2 * t + (k & 1)] = d[(i + NACC / 2) % NACC];
            }
        __syncwarp();
        const int64_t j = jbase + pc * 32 + lane;
        if (j < e.nout && pc * 32 + lane < ow) {
            const float bg = e.bias ? tinfer_bf16f(e.bias[j]) : 0.f;
            const float bu = e.bias && e.sw ? tinfer_bf16f(e.bias[e.F + j]) : 0.f;
            /* The piece's 16 residual values are loaded before any is used: one round trip per
             * piece instead of one per row (the rolled load-add-store loop kept ~4 loads in
             * flight and cost ~20 us per tile, run 4). R may be Y itself: each element is read
             * here and written below by this lane only. */
            float rv[16];
#pragma unroll
            for (int r = 0; r < 16; r++) {
                const int64_t m = rbase + r;
                rv[r] = 0.f;
                if (e.R && m < e.M)
                    rv[r] = e.f32 ? ((const float *)e.R)[m * e.ldr + j] : tinfer_bf16f(((const uint16_t *)e.R)[m * e.ldr + j]);
            }
#pragma unroll
            for (int r = 0; r < 16; r++) {
                const int64_t m = rbase + r;
                if (m < e.M) {
                    float v = scr[0][r][lane] + bg;
                    if (e.sw) {
                        const float u = scr[1][r][lane] + bu;
                        v = v / (1.0f + __expf(-v)) * u;
                    }
                    v += rv[r];
                    if (e.f32) ((float *)e.Y)[m * e.ldy + j] = v;
                    else ((uint16_t *)e.Y)[m * e.ldy + j] = tinfer_f2bf16(v);
                }
            }
        }
        __syncwarp();
    }
}

/* TMA-store epilogue (TS): consumer c's 64-row slab of the tile leaves through its own shared
 * buffer and TMA stores, so the consumer goes on to its next tile's mainloop while the stores
 * drain (with the register / whole-line stores both consumers spend that time storing, the tensor
 * cores idle). Bias and SwiGLU are applied in the registers as in the whole-line path. The buffer
 * holds ow / 64 boxes of 64 rows x 64 columns (8 KB, the 128-byte swizzle: 16-byte chunk q of row r
 * at chunk q ^ (r % 8), so the paired 4-byte writes of a warp, lanes (g, t) at row g, chunk
 * q ^ g, word t, hit 32 different banks). Thread 0 of the consumer first waits until its previous
 * stores have read the buffer; after the writes every thread fences its writes to the async proxy,
 * the warpgroup meets at named barrier 2 + c, and thread 0 issues the stores (rows >= M and
 * columns >= N' are clipped by the tensor map) and commits them as one bulk group.
 * Measured (H200, session 6 run 2, `tinfer-bench-gemm-bf16 wgmma`, stream timing, us, TMA store vs
 * whole lines, each tile width's own row): 8192^3 1345 vs 1357, SmolLM2 LM head M = 2048 178.5 vs
 * 181.4 (128 x 256), M = 512 52.2 vs 49.1 (128 x 256) but 48.8 vs 51.5 (128 x 128), Llama QKV
 * M = 512 45.4 vs 43.2, gate/up M = 128 66.6 vs 64.2, the SmolLM2 layer shapes +0.3-0.5 us each.
 * The 128 x 256 tile gives a stage to the 64 KB buffer (3 instead of 4) and the CTA waits for its
 * last stores before it leaves; what the overlap saves is 1-2% where tiles are many. So the
 * epilogue was not what kept the LM head at M = 2048 behind cuBLAS, and this path is opt-in
 * (--gemm-wgmma-epi tma), tested, not the default. */
template <int BN, int EPI>
static __device__ __forceinline__ void ws_store_tma(const float (&d)[BN / 2], const WsEpi &e, uint8_t *obuf,
                                                    const CUtensorMap *map_y, int32_t row_slab, int32_t col0, int c,
                                                    int tid) {
    constexpr int NACC = BN / 2;
    const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int ow = e.sw ? BN / 2 : BN;
    if (tid == 0) bulk_wait_read0();
    bar_sync(2 + c, 128);
#pragma unroll
    for (int i = 0; i < NACC; i += 2) {
        const int oc = 8 * (i >> 2) + 2 * t; /* tile column of d[i], d[i + 1] */
        if (8 * (i >> 2) >= ow) continue;     /* SwiGLU: the up half */
        float v0 = d[i], v1 = d[i + 1];
        if (EPI == 1) ws_bias_swiglu<NACC>(d, i, (int64_t)col0 + oc, e, v0, v1);
        const int r = 16 * warp + g + 8 * ((i >> 1) & 1), q = (oc % 64) / 8;
        *(uint32_t *)(obuf + (oc / 64) * 8192 + r * 128 + ((q ^ (r & 7)) * 16) + 4 * t) =
            (uint32_t)tinfer_f2bf16(v0) | ((uint32_t)tinfer_f2bf16(v1) << 16);
    }
    fence_proxy_async_smem();
    bar_sync(2 + c, 128);
    if (tid == 0 && row_slab < e.M) {
        for (int b = 0; b < ow / 64; b++) tma_store_2d(map_y, obuf + b * 8192, col0 + 64 * b, row_slab);
        bulk_commit();
    }
}

/* One consumer warpgroup's mainloop over nkb k-blocks, ring iterations it .. it + nkb - 1:
 * wait for the stage, issue its 4 wgmmas (the first zeroes the accumulators), keep one k-block
 * in flight (wait_group 1) and release the stage before it; at the end wait for all and release
 * the last stage. Returns the next ring iteration. */
template <int BN, int STAGES, bool MC = false>
static __device__ __forceinline__ uint32_t ws_mainloop(float (&d)[BN / 2], uint64_t *full, uint64_t *empty, const uint8_t *smem,
                                                       int c, int tid, uint32_t it, int32_t nkb, uint32_t peer_empty = 0) {
    using G = WsGeo<BN>; /* STAGE_BYTES; the ring depth is STAGES (the TS geometry has fewer) */
    uint32_t prev = 0;
    fence_acc(d);
    for (int32_t kb = 0; kb < nkb; kb++, it++) {
        const uint32_t s = it % STAGES, ph = (it / STAGES) & 1;
        mbar_wait(&full[s], ph);
        const uint8_t *sa = smem + s * G::STAGE_BYTES + c * (64 * 128), *sb = smem + s * G::STAGE_BYTES + WS_A_BYTES;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < WS_BK / 16; kk++)
            wgmma_step<BN>(d, wgmma_desc(sa + kk * 32), wgmma_desc(sb + kk * 32), (kb | kk) != 0);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        if (kb > 0 && tid == 0) {
            mbar_arrive(&empty[prev]);
            if (MC) mbar_arrive_remote(peer_empty + 8 * prev); /* the peer multicasts into this stage too */
        }
        prev = s;
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    fence_acc(d);
    if (tid == 0) {
        mbar_arrive(&empty[prev]);
        if (MC) mbar_arrive_remote(peer_empty + 8 * prev);
    }
    return it;
}

/* Tile number -> (tm, tn): groups of WS_GROUP_M M-tiles walk N together (L2 reuse). */
static __device__ __forceinline__ void ws_tile_coords(int32_t tile, int32_t tiles_m, int32_t tiles_n, int32_t &tm,
                                                      int32_t &tn) {
    const int32_t per_group = WS_GROUP_M * tiles_n, grp = tile / per_group;
    const int32_t first_m = grp * WS_GROUP_M;
    const int32_t gsz = tiles_m - first_m < WS_GROUP_M ? tiles_m - first_m : WS_GROUP_M;
    tm = first_m + (tile % per_group) % gsz;
    tn = (tile % per_group) / gsz;
}
#endif

#endif

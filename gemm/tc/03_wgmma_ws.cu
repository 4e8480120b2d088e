/*
 * 03_wgmma_ws.cu — prefill rung 3 (production prefill path on sm_90a): Hopper wgmma fed by TMA,
 * warp-specialised producer/consumer with mbarriers, persistent grid with an L2-grouped tile
 * order, fused bias / residual / SwiGLU epilogue.
 *
 * Algorithm (fast.cu's kernel 12 shape, HOPPER_GEMM_NOTES §5, without clusters/TMA store):
 *  - CTA tile 128 (M) x BN (N) x 64 (K), BN = 256 (4 shared-memory stages of 48 KB: A 16 KB +
 *    B 32 KB) or 128 (6 stages of 32 KB), written by TMA (cp.async.bulk.tensor.2d, 128-byte
 *    swizzle, boxes {64, 128} for X and {64, BN / 2} for W). The entry picks BN per shape
 *    (tinfer_gemm_bf16_wgmma_pick_cfg: fewest rounds of tiles x (BN + a fixed per-tile cost)):
 *    128-wide tiles double the CTAs of problems that leave SMs idle or end on a thin last wave.
 *  - 384 threads = 3 warpgroups. WG0 is the producer (setmaxnreg 40; one thread issues the TMA
 *    loads into a ring of full/empty mbarriers). WG1, WG2 are consumers (setmaxnreg 232): each
 *    owns 64 rows of the tile and runs wgmma.m64nBNk16 (BN / 2 FP32 accumulators per thread),
 *    keeping one k-block of wgmma in flight (wait_group 1) and releasing the stage before it.
 *  - Persistent: grid = #SMs, CTA b takes tiles b, b + grid, ...; tiles are numbered in groups
 *    of 16 M-tiles so the ~132 tiles in flight share 16 A row-blocks and ~8 B row-blocks in L2.
 *    The producer runs ahead into the next tile while the consumers do the epilogue.
 *  - SwiGLU (fused [gate; up] weight): the two 128-row B boxes of a stage come from gate rows
 *    j0.. and up rows F + j0.., so accumulator column c (< 128) and c + 128 are gate and up of
 *    output j0 + c, held by the same thread (register i and i + 64, layout in §1).
 *  - Epilogue: plain BF16 output (no bias/residual/SwiGLU) into 16-byte aligned rows goes through
 *    a per-warp shared scratch in 64-column pieces and leaves as 16-byte stores, each warp store
 *    writing 4 whole 128-byte lines (edge tiles too when N' % 8 == 0, bounds-checked per 16 B);
 *    other plain tiles store straight from the registers (4- or 8-byte pairs, 8 rows x 16 B
 *    per warp store); anything else goes through the same scratch one element per lane,
 *    coalesced: bias, SwiGLU, residual, BF16/F32 store, bounds-checked.
 *  - Ping-pong configuration (TINFER_GEMM_BF16_WGMMA_CFG_PP128, forced only): each consumer owns
 *    whole 128 x 128 tiles (the CTA's even / odd ones, two m64n128k16 per k16 step) and the two
 *    consumers' mainloops alternate through a pair of mbarriers, so one's epilogue runs under
 *    the other's wgmmas.
 *  - Split-K (SPLIT instantiation; picked for few tiles and K >= 1024, tinfer_gemm_bf16_wgmma_pick_split):
 *    a cluster of 2..8 CTAs shares one tile, each over its share of the k-blocks; partial sums
 *    meet over distributed shared memory, each 16-row warp unit finished by one rank (details at
 *    the kernel). No tile loop in that instantiation: with one, ptxas serialized the wgmmas
 *    (C7515) and the persistent kernel lost ~14% on large shapes (gemm/tc/README.md).
 *  - 128 x 144 tiles (m64n144k16, 5 stages of 34 KB): for outputs 144 divides and 128 does not
 *    (SmolLM2's 576), where the 128-wide tiles are too many to split: SmolLM2 down M = 2048, 80
 *    tiles of 128 (no room for clusters) against 64 of 144 in clusters of 2 (H200, session 6 run 1:
 *    10.55 -> 9.80 us graph, 10.94 -> 10.38 stream; cuBLAS 7.48 / 11.46). Elsewhere 144 measured
 *    slower than 128 at equal split (down M = 128 / 512, O M = 512 / 2048), so it is not the
 *    unsplit pick. The epilogue's last 64-column piece then holds 16 columns (SwiGLU: 8).
 *  - 128 x 72 tiles (m64n72k16, 7 stages of 25 KB, one 72-row W box: 36-row halves would not
 *    start 1024-byte aligned; plain outputs only, no split): twice the CTAs of the 144-wide tile
 *    for SmolLM2's 576 outputs, so small problems spread over more SMs without a split-K
 *    reduction. Picked by the width cost rule for K <= 2048 (bf16.h, TINFER_GEMM_BF16_WGMMA_72_MAX_K).
 *    H200, session 8 (stream / graph us, against the previous pick): O M = 512 5.29 / 4.76 vs
 *    6.33 / 5.77, O M = 2048 5.89 / 5.16 vs 6.91 / 6.42, down M = 2048 9.69 / 8.92 vs 10.91 /
 *    10.03, QKV M = 512 4.85 / 4.45 vs 5.67 / 5.37.
 *  - 128 x 96 tiles (m64n96k16, 6 stages of 28 KB, two 48-row W boxes; plain outputs only, no
 *    split, as 72): a candidate of the same cost rule where it costs less than 72
 *    (TINFER_GEMM_BF16_WGMMA_96): SmolLM2 gate/up at 512 tokens takes 128 tiles of 96 in one round
 *    (H200, session 14, graph: 5.05 us against 5.81 at 128 wide and cuBLAS 5.33). Two
 *    accumulator chains (even / odd k16 steps) in the 72- and 96-wide mainloop made every cell
 *    2-8% slower (session 14); one chain stays.
 *  - 128 x 192 tiles (m64n192k16, 4 stages of 40 KB, two 96-row W boxes; unsplit, any epilogue):
 *    for shapes whose 128 x 256 tiles leave a round part-empty and whose 128 x 128 tiles need one
 *    round more (SmolLM2 gate/up at 2048 tokens: 256 tiles in 2 rounds against 384 in 3; Llama-3-8B
 *    QKV at 512: 128 tiles where 256 gives 96 CTAs to 132 SMs). Built in session 19 without a
 *    GPU: forced only (cfg 192) until measured, then a candidate of the width rule
 *    (TINFER_GEMM_BF16_WGMMA_192). ptxas: 168 registers, no spills, as the other widths.
 *  - X multicast (MC instantiation, cfg TINFER_GEMM_BF16_WGMMA_CFG_72MC or --gemm-wgmma-mc 1
 *    for the picked 72-wide tiles): clusters of 2 CTAs walk pairs of tiles (tm, 2p) and (tm, 2p + 1)
 *    that need the same X tile; each loads its 64-row half once with a multicast TMA into both
 *    CTAs' stages, each consumer releases a stage on its own and on the peer's empty barrier
 *    (4 arrivals per phase), and a cluster barrier brackets the kernel. Halves the X traffic from
 *    L2 and measured slower everywhere (session 8 run 4, stream / graph us, 72 vs 72 + multicast):
 *    QKV M = 512 4.89 / 4.50 vs 5.64 / 4.86, O M = 128 4.69 / 4.31 vs 5.49 / 4.78, O M = 2048
 *    5.55 / 5.00 vs 5.99 / 5.38, down M = 2048 9.30 / 8.62 vs 9.97 / 9.32; with release.cluster
 *    remote arrives (run 3) 7.7-8.3 us on every shape and 19.2 on down M = 2048. The pair runs in
 *    lock-step (a stage frees only when both CTAs' consumers are done with it), which costs more
 *    than the L2 bandwidth it saves at these sizes. Kept as a tested configuration, off.
 *  - Programmatic dependent launch: every CTA waits (griddepcontrol.wait) before touching global
 *    memory, so its launch and barrier setup overlap the previous kernel on the stream.
 * Ragged M / N / K: TMA zero-fills out-of-range rows and K columns (the full box still counts
 * toward the barrier's transaction bytes); the epilogue skips rows >= M and columns >= N'.
 * Constraints: K % 8 == 0, ldx % 8 == 0, ldw % 8 == 0, X and W 16-byte aligned (TMA stride
 * rule); sm_90 only (the body is compiled for sm_90a; the portable PTX target gets a trap and
 * the launcher refuses other GPUs with TINFER_ERR_UNSUPPORTED).
 * Measured (H200, 2026-12-02, run 4, cuBLAS in the same run): 8192^3 766.8 TFLOP/s (95.8% of
 * cuBLAS), 4096^3 722.7 (90.9%), 2048^3 556.6 (81.4%), 1024^3 121.5 (69.7%). Small problems have
 * a floor of 13 us (whole tiles) to 20 us (ragged tiles) against cuBLAS's 8-10 us, and the
 * general epilogue (residual) adds ~23 us per tile round (gemm/tc/README.md, "The lesson is the
 * epilogue"). Tile width (forced sweep, H200 2026-12-02 16:04 UTC, stream timing, % of the faster
 * of cuBLAS / cublasLt): BN = 128 vs 256: SmolLM2 QKV M = 2048 10.9 vs 18.7 us, down M = 2048 14.6
 * vs 21.2, gate/up M = 2048 21.9 vs 27.6, 1024^3 10.9 vs 17.6, Llama-3-8B down M = 512 81.7 vs 168
 * (95.7% of cublasLt), QKV M = 128 25.5 vs 45.1; BN = 256 stays ahead from 4096^3 (190 vs 210 us)
 * and on Llama at M = 2048 (e.g. gate/up 655 vs 758 us).
 * General epilogue: the residual of a 16-row piece is now loaded before it is used (was: one
 * dependent load per row in a rolled loop): SmolLM2 O + residual M = 2048 20.9 -> 14.6 us,
 * Llama-3-8B down + residual M = 2048 401 -> 336 us (plain stores: 9.0 and 303; H200 runs A/B,
 * gemm/tc/README.md).
 * Whole-line stores (H200, 2026-12-02 18:45 UTC, `tinfer-bench-gemm bf16 wgmma`, stream timing, %
 * of the faster of cuBLAS / cublasLt; before = register-direct stores, --gemm-wgmma-epi regs,
 * 18:40 UTC): 8192^3 1397 us = 787 TFLOP/s = 101.4% (was 96.1%), 4096^3 180 us = 99.9% (91.0%),
 * SmolLM2 LM head M = 2048 187 vs 266-275 us (95.8%, was 64%), M = 512 50 vs 75 us (98.6%),
 * Llama-3-8B at M = 2048 QKV / gate-up / down 100.1 / 99.9 / 100.7% (91.6 / 92.3 / 97.2%), SmolLM2
 * gate/up M = 2048 15.9 vs 20.3 us; with edge tiles too (N' % 8 == 0): SmolLM2 QKV M = 2048 7.95 vs
 * 10.9 us, O 7.3 vs 9.1, down 11.8 vs 13.7. The stores were the bottleneck, not the tensor cores:
 * 8 rows x 16 B per warp store instruction, against 4 x 128 B now.
 * Ping-pong (same runs, forced): no faster than the cooperative 128 x 128 tile it replaces
 * (4096^3 201 vs 190 us, 8192^3 1613 vs 1519, LM head M = 2048 192 vs 202, SmolLM2 gate/up
 * M = 2048 15.2 vs 15.9) and behind 128 x 256 wherever that is picked: with register-direct
 * stores it did not help either (LM head 275 us in all three configurations), so the exposed
 * epilogue was never the limit. Kept as a rung, tested, not dispatched. Its first version hung:
 * an mbarrier parity wait cannot tell phase n from n - 2, and the second consumer waited on
 * phase 1 of stages whose phase 0 had not completed (fixed by the ordered mainloops).
 */
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"
#include "gemm/cuda/knobs.h"
#include "gemm/cuda/ptx.cuh"
#include "gemm/cuda/sm90.cuh"
#include "gemm/cuda/tma.h"
#include "gemm/tc/gemm_bf16_tc_internal.h"
#include "gemm/tc/ws_trace.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdlib.h>
#include <string.h>

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

/* BN: tile width (WsGeo). EPI 0: no bias, residual or SwiGLU (straight stores); 1: the general
 * epilogue. PP (BN = 128 only): ping-pong consumers — each consumer warpgroup computes whole
 * 128 x 128 tiles of its own (the CTA's even / odd tiles), so one's epilogue runs while the
 * other's wgmmas keep the tensor cores busy; without PP both consumers share each tile (64 rows
 * each) and the tensor cores idle during the epilogue. SPLIT (not with PP): split-K, one tile per
 * CTA, a cluster of ksplit CTAs per tile (the persistent kernel is the !SPLIT instantiation,
 * untouched by the split code). TS (persistent, BN 128 / 256, no residual): the TMA-store epilogue
 * (ws_store_tma) through map_y, the BF16 output's tensor map; other instantiations ignore map_y. */
template <int BN, int EPI, bool PP, bool SPLIT, bool TS = false, bool MC = false>
static __global__ void __launch_bounds__(384, 1)
    wgmma_ws_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                    const __grid_constant__ CUtensorMap map_y, tinfer_gemm_bf16_args a, int32_t tiles_m,
                    int32_t tiles_n, int32_t kblocks, int32_t flags, int32_t ksplit) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    static_assert(!PP || BN == 128, "ping-pong tiles are 128 x 128 (128 accumulators per thread)");
    static_assert(!(PP && SPLIT), "no split-K with ping-pong consumers");
    static_assert(!TS || (!PP && !SPLIT), "the TMA-store epilogue is the persistent kernel's");
    static_assert(!MC || (!PP && !SPLIT && !TS), "X multicast: the persistent kernel with the scratch epilogue");
    using G = WsGeo<BN, TS>;
    constexpr int WS_STAGES = G::STAGES, WS_STAGE_BYTES = G::STAGE_BYTES, WS_B_BYTES = G::B_BYTES;
    constexpr int WS_BN = BN;
    extern __shared__ uint8_t ws_smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)ws_smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(smem + WS_STAGES * WS_STAGE_BYTES);
    uint64_t *empty = full + WS_STAGES;
    uint64_t *turn = empty + WS_STAGES; /* PP: turn[c] = consumer c may start its next mainloop */
    uint64_t *redb = turn + 2;          /* SPLIT: redb[o] = the owner's o-th unit's partial sums all landed */
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int32_t tiles = tiles_m * tiles_n;
    const int64_t F = a.N / 2;
    /* SPLIT: a cluster of ksplit CTAs along x shares tile blockIdx.x / ksplit, CTA rank r taking
     * k-blocks [kb0, kb1) (the launcher makes every share non-empty). */
    const int32_t rank = SPLIT ? (int32_t)(blockIdx.x % ksplit) : 0;
    const int32_t tile0 = SPLIT ? (int32_t)(blockIdx.x / ksplit) : (int32_t)blockIdx.x;
    const int32_t kper = SPLIT ? (kblocks + ksplit - 1) / ksplit : kblocks;
    const int32_t kb0 = rank * kper, kb1 = kb0 + kper < kblocks ? kb0 + kper : kblocks;
    /* MC: a cluster of 2 CTAs (rank mc_rank) walks pairs of tiles (tm, 2 p) and (tm, 2 p + 1):
     * both need the same X tile, so each loads its 64-row half and multicasts it to both. A
     * pair's second tile past N' (odd tiles_n) is computed from zero-filled W and not stored.
     * Otherwise the walk is over tiles: CTA b takes b, b + grid, ... (split: its one tile). */
    const int32_t mc_rank = MC ? (int32_t)(blockIdx.x % 2) : 0;
    const int32_t walk0 = MC ? (int32_t)(blockIdx.x / 2) : tile0;
    const int32_t wstep = MC ? (int32_t)(gridDim.x / 2) : SPLIT ? tiles : (int32_t)gridDim.x;
    const int32_t wcount = MC ? tiles_m * ((tiles_n + 1) / 2) : tiles;
    auto unit_coords = [&](int32_t u, int32_t &tm, int32_t &tn) {
        if (MC) {
            int32_t tn2;
            ws_tile_coords(u, tiles_m, (tiles_n + 1) / 2, tm, tn2);
            tn = 2 * tn2 + mc_rank;
        } else {
            ws_tile_coords(u, tiles_m, tiles_n, tm, tn);
        }
    };

    WS_TRACE(threadIdx.x == 0, 0);
    if (threadIdx.x == 0) {
        /* The descriptors are kernel parameters, never written by an earlier kernel: fetching them
         * now overlaps the barrier setup and the PDL wait instead of the first TMA load. */
        asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_x) : "memory");
        asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_w) : "memory");
        if (TS) asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&map_y) : "memory");
        for (int s = 0; s < WS_STAGES; s++) {
            mbar_init(&full[s], 1);           /* the producer's arrive.expect_tx */
            mbar_init(&empty[s], PP ? 1 : MC ? 4 : 2); /* one arrive per consumer warpgroup reading the stage (MC: of both CTAs) */
        }
        if (PP) {
            mbar_init(&turn[0], 1);
            mbar_init(&turn[1], 1);
        }
        if (SPLIT)
            for (int o = 0; o < 4; o++) mbar_init(&redb[o], 1); /* the owner warp's arrive.expect_tx */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (MC) cluster_sync_all(); /* the peer's barriers exist before anything multicasts or arrives on them */
    /* Programmatic dependent launch (the launcher sets it for short K, ws_pdl; without it both
     * are no-ops): the CTA may have started while the previous kernel on the stream still
     * runs, so nothing global (X, W, bias, R, Y) is touched before the wait; only the barrier
     * setup above overlaps it. The grid is all resident at once (persistent: <= SMs; split: <=
     * the co-resident clusters), so the next kernel may launch at once: its CTAs can only take
     * SMs this one leaves idle, and wait in turn. */
    tdec::pdl_wait();
    tdec::pdl_launch_dependents();
    WS_TRACE(threadIdx.x == 0, 1);

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid != 0) {
            if (SPLIT) { /* the cluster barriers count every thread */
                cluster_sync_all();
                if (!(flags & WS_F_ASYNCRED)) cluster_sync_all();
            }
            if (MC) cluster_sync_all();
            return;
        }
        /* Stages are filled in the order the CTA's tiles are numbered; with PP consecutive tiles
         * belong to alternate consumers, which therefore find their stages in the same order. */
        uint32_t it = 0;
        for (int32_t u = walk0; u < wcount; u += wstep) {
            int32_t tm, tn;
            unit_coords(u, tm, tn);
            const int32_t row_a = tm * WS_BM;
            const int32_t row_b0 = a.swiglu ? tn * (WS_BN / 2) : tn * WS_BN;
            const int32_t row_b1 = a.swiglu ? (int32_t)F + tn * (WS_BN / 2) : tn * WS_BN + WS_BN / 2;
            for (int32_t kb = kb0; kb < kb1; kb++, it++) {
                const uint32_t s = it % WS_STAGES, ph = (it / WS_STAGES) & 1;
                mbar_wait(&empty[s], ph ^ 1);
                uint8_t *sa = smem + s * WS_STAGE_BYTES, *sb = sa + WS_A_BYTES;
                mbar_expect_tx(&full[s], WS_STAGE_BYTES); /* MC: the peer's X half counts here too */
                if (MC) /* this CTA's 64-row half of the X box (map_x has 64-row boxes), to both CTAs */
                    tma_load_2d_mc(sa + mc_rank * (64 * 128), &map_x, kb * WS_BK, row_a + 64 * mc_rank, &full[s], 0x3);
                else
                    tma_load_2d(sa, &map_x, kb * WS_BK, row_a, &full[s]);
                tma_load_2d(sb, &map_w, kb * WS_BK, row_b0, &full[s]);
                if (G::W_BOXES == 2) tma_load_2d(sb + WS_B_BYTES / 2, &map_w, kb * WS_BK, row_b1, &full[s]);
            }
        }
        WS_TRACE(true, 2);
        if (SPLIT) {
            cluster_sync_all();
            if (!(flags & WS_F_ASYNCRED)) cluster_sync_all();
        }
        /* MC: no CTA leaves while its peer may still multicast into it or arrive on its barriers */
        if (MC) cluster_sync_all();
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        WS_TRACE(threadIdx.x == 128, 3);
        const int c = wg - 1, warp = tid / 32, lane = tid % 32;
        WsEpi e;
        e.bias = a.bias;
        e.R = a.R;
        e.Y = a.Y;
        e.ldy = a.ldy;
        e.ldr = a.ldr;
        e.M = a.M;
        e.nout = a.swiglu ? F : a.N;
        e.F = F;
        e.sw = a.swiglu != 0;
        e.f32 = a.y_dtype == TINFER_DTYPE_F32;
        float(*scr)[16][33] = (float(*)[16][33])(smem + WS_STAGES * WS_STAGE_BYTES + WS_BAR_BYTES + (c * 4 + warp) * WS_SCR_WARP);
        (void)scr; /* unused by TS */
        /* whole-line stores: every whole tile; edge tiles too when N' % 8 == 0 */
        auto lines_mode = [&](bool inside) { return !(flags & WS_F_LINES) ? 0 : inside ? 1 : (flags & WS_F_N8) ? 2 : 0; };
        if constexpr (TS) {
            float d[G::NACC];
            uint32_t it = 0;
            uint8_t *obuf = smem + G::OUT_OFFSET + c * (64 * BN * 2);
            const int32_t ow = e.sw ? BN / 2 : BN;
            for (int32_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int32_t tm, tn;
                ws_tile_coords(tile, tiles_m, tiles_n, tm, tn);
                it = ws_mainloop<BN, WS_STAGES>(d, full, empty, smem, c, tid, it, kblocks);
                ws_store_tma<BN, EPI>(d, e, obuf, &map_y, tm * WS_BM + 64 * c, tn * ow, c, tid);
            }
            if (tid == 0) bulk_wait0(); /* the last stores complete before the CTA leaves */
        } else if constexpr (!PP && !SPLIT) {
            float d[G::NACC];
            uint32_t it = 0;
            const uint32_t peer_empty = MC ? cluster_map(empty, (uint32_t)(mc_rank ^ 1)) : 0;
            for (int32_t u = walk0; u < wcount; u += wstep) {
                int32_t tm, tn;
                unit_coords(u, tm, tn);
                it = ws_mainloop<BN, WS_STAGES, MC>(d, full, empty, smem, c, tid, it, kblocks, peer_empty);
                WS_TRACE(threadIdx.x == 128, 4);
                const bool inside = (int64_t)(tm + 1) * WS_BM <= a.M && (int64_t)(tn + 1) * (e.sw ? WS_BN / 2 : WS_BN) <= e.nout;
                const bool whole = (flags & WS_F_VEC) && inside;
                ws_store_slab<BN, EPI>(d, e, (int64_t)tm * WS_BM + 64 * c, tn, whole, lines_mode(inside), scr, warp, lane);
            }
            WS_TRACE(threadIdx.x == 128, 7);
            if (MC) cluster_sync_all(); /* the peer's last arrivals on this CTA's barriers are in */
        } else if constexpr (SPLIT) {
            /* Split-K: this CTA's one tile, k-blocks [kb0, kb1). A slab wholly below row M
             * (M <= 64, or a ragged last row of tiles) computes nothing: its warpgroup only hands
             * the stages back, so the other consumer's wgmmas have the tensor cores to themselves.
             * No tile loop: nothing redefines the accumulators after the reduction below, so
             * ptxas keeps the wgmmas pipelined (a loop around it serialized them: C7515). */
            float d[G::NACC];
            int32_t tm, tn;
            ws_tile_coords(tile0, tiles_m, tiles_n, tm, tn);
            const bool live = (int64_t)tm * WS_BM + 64 * c < a.M;
            if (!live) {
                for (int32_t kb = kb0, it = 0; kb < kb1; kb++, it++) {
                    const uint32_t s = it % WS_STAGES, ph = (it / WS_STAGES) & 1;
                    mbar_wait(&full[s], ph);
                    if (tid == 0) mbar_arrive(&empty[s]);
                }
            } else {
                ws_mainloop<BN, WS_STAGES>(d, full, empty, smem, c, tid, 0, kb1 - kb0);
            }
            WS_TRACE(threadIdx.x == 128, 4);
            /* The tile's 8 warp units of 16 rows (u = 4c + warp) are finished by rank
             * u % ksplit. Once every CTA of the cluster is past its mainloop (first cluster
             * barrier: both consumers' wgmmas done, every TMA load landed, so every stage area is
             * idle), each other rank pushes its partial sums for the unit into the owner's stage
             * area (slot: the owner's o-th unit, o = u / ksplit, and the pusher's index among the
             * other ranks), and the owner adds them from its own shared memory in rank order
             * (deterministic) before its epilogue. WS_F_ASYNCRED (default): the pushes are st.async
             * stores that count their bytes on the owner's barrier redb[o], whose owner warp
             * arrives with the (ksplit - 1) x NACC x 128 bytes it expects and waits; else (the
             * previous version, --gemm-wgmma-splitred barrier) posted DSMEM stores and a
             * second cluster barrier (release / acquire), whose release waits for every store of
             * every rank (MEMBAR.ALL.GPU behind the pushes in the profile). Pushing costs no round
             * trip per peer: pulling (the first version) had the owner warp wait for one DSMEM
             * round trip per peer. Units wholly below row M are skipped on both sides. */
            asm volatile("bar.sync 1, 256;" ::: "memory");
            const int u = 4 * c + warp;
            const bool unit_live = (int64_t)tm * WS_BM + 16 * u < a.M;
            const int32_t owner = u % ksplit;
            const bool own = owner == rank;
            constexpr int SLOT = (G::NACC / 4) * 32; /* float4s of one unit's partial sums */
            /* slot (o, p) of the owner: o = u / ksplit, p = pusher rank with the owner skipped */
            auto slot = [&](int32_t p) { return (size_t)((u / ksplit) * (ksplit - 1) + p) * SLOT + lane; };
            const bool async_red = (flags & WS_F_ASYNCRED) != 0;
            cluster_sync_all();
            WS_TRACE(threadIdx.x == 128, 5);
            if (unit_live && !own) {
                const int32_t p = rank < owner ? rank : rank - 1;
                const uint32_t base = cluster_map((const float4 *)smem + slot(p), (uint32_t)owner);
                if (async_red) {
                    const uint32_t bar = cluster_map(&redb[u / ksplit], (uint32_t)owner);
#pragma unroll
                    for (int j = 0; j < G::NACC / 4; j++)
                        st_async_f4(base + j * 32 * 16, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]), bar);
                } else {
#pragma unroll
                    for (int j = 0; j < G::NACC / 4; j++)
                        st_cluster_f4(base + j * 32 * 16, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
                }
            }
            if (!async_red) cluster_sync_all();
            if (unit_live && own) {
                if (async_red) {
                    if (lane == 0) mbar_expect_tx(&redb[u / ksplit], (uint32_t)((ksplit - 1) * SLOT * 16));
                    mbar_wait(&redb[u / ksplit], 0);
                }
                for (int32_t p = 0; p < ksplit - 1; p++) {
                    const float4 *src = (const float4 *)smem + slot(p);
#pragma unroll
                    for (int j = 0; j < G::NACC / 4; j++) {
                        const float4 v = src[j * 32];
                        d[4 * j] += v.x;
                        d[4 * j + 1] += v.y;
                        d[4 * j + 2] += v.z;
                        d[4 * j + 3] += v.w;
                    }
                }
            }
            WS_TRACE(threadIdx.x == 128, 6);
            if (unit_live && own) {
                const bool inside = (int64_t)(tm + 1) * WS_BM <= a.M && (int64_t)(tn + 1) * (e.sw ? WS_BN / 2 : WS_BN) <= e.nout;
                const bool whole = (flags & WS_F_VEC) && inside;
                ws_store_slab<BN, EPI>(d, e, (int64_t)tm * WS_BM + 64 * c, tn, whole, lines_mode(inside), scr, warp, lane);
            }
            WS_TRACE(threadIdx.x == 128, 7);
        } else {
            /* Ping-pong: consumer c takes the CTA's tiles j = c, c + 2, ...; tile j's k-blocks
             * are ring iterations j * kblocks ... (the producer's order). d0 / d1: rows 0-63 and
             * 64-127 of the tile (two m64n128k16 per k16 step, same B).
             * The mainloops alternate (consumer 0's tile 0, 1's tile 1, 0's tile 2, ...): before
             * its k-th tile, consumer 1 waits until consumer 0 has finished k + 1 mainloops and
             * consumer 0 (k >= 1) until consumer 1 has finished k. Besides handing the tensor
             * cores to one tile at a time, this keeps the parity waits sound: an mbarrier parity
             * wait only tells the current phase from the previous one, so a consumer must never
             * wait on a full barrier more than one phase ahead of it. Unordered, consumer 1 would
             * wait on phase 1 of a slot whose phase 0 had not completed yet and pass at once
             * (first H200 run of this kernel: hangs). With the order, every earlier use of the
             * slot has completed when a consumer waits. */
            float d0[64], d1[64];
            int64_t j = c;
            uint32_t k = 0; /* this consumer's tile count */
            for (int32_t tile = blockIdx.x + c * gridDim.x; tile < tiles; tile += 2 * gridDim.x, j += 2, k++) {
                int32_t tm, tn;
                ws_tile_coords(tile, tiles_m, tiles_n, tm, tn);
                if (c == 1) mbar_wait(&turn[1], k & 1);
                else if (k > 0) mbar_wait(&turn[0], (k - 1) & 1);
                uint64_t it = (uint64_t)j * (uint64_t)kblocks;
                uint32_t prev = 0;
                fence_acc(d0);
                fence_acc(d1);
                for (int32_t kb = 0; kb < kblocks; kb++, it++) {
                    const uint32_t s = (uint32_t)(it % WS_STAGES), ph = (uint32_t)(it / WS_STAGES) & 1;
                    mbar_wait(&full[s], ph);
                    const uint8_t *sa = smem + s * WS_STAGE_BYTES, *sb = sa + WS_A_BYTES;
                    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                    for (int kk = 0; kk < WS_BK / 16; kk++) {
                        const uint64_t db = wgmma_desc(sb + kk * 32);
                        wgmma_m64n128k16(d0, wgmma_desc(sa + kk * 32), db, (kb | kk) != 0);
                        wgmma_m64n128k16(d1, wgmma_desc(sa + 64 * 128 + kk * 32), db, (kb | kk) != 0);
                    }
                    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                    if (kb > 0 && tid == 0) mbar_arrive(&empty[prev]);
                    prev = s;
                }
                /* every full barrier of this tile has completed (thread 0 waited on each) */
                if (tid == 0) mbar_arrive(&turn[c ^ 1]);
                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                fence_acc(d0);
                fence_acc(d1);
                if (tid == 0) mbar_arrive(&empty[prev]);
                const bool inside = (int64_t)(tm + 1) * WS_BM <= a.M && (int64_t)(tn + 1) * (e.sw ? WS_BN / 2 : WS_BN) <= e.nout;
                const bool whole = (flags & WS_F_VEC) && inside;
                ws_store_slab<BN, EPI>(d0, e, (int64_t)tm * WS_BM, tn, whole, lines_mode(inside), scr, warp, lane);
                ws_store_slab<BN, EPI>(d1, e, (int64_t)tm * WS_BM + 64, tn, whole, lines_mode(inside), scr, warp, lane);
            }
        }
    }
#else
    /* Built for a target without wgmma (the portable PTX): never silently do nothing. */
    (void)map_x; (void)map_w; (void)map_y; (void)a; (void)tiles_m; (void)tiles_n; (void)kblocks; (void)flags; (void)ksplit;
    __trap();
#endif
}

/* Measurement knobs (gemm/cuda/knobs.h, read on every call). WS_SW_LINES (on unless
 * gemm_wgmma_epi is regs): whole-line stores of BF16 tiles, else register-direct stores; WS_SW_TMA
 * (off unless gemm_wgmma_epi is tma): the TMA-store epilogue where it applies (see ws_store_tma:
 * measured no better overall, so not the default); WS_SW_MAPCACHE (on unless gemm_wgmma_mapcache
 * is 0): cached tensor maps, else every map encoded on every call; WS_SW_ASYNCRED (on unless
 * gemm_wgmma_splitred is barrier): split-K partial sums by st.async onto the owner's mbarrier,
 * else DSMEM stores and a second cluster barrier; WS_SW_MC (off unless gemm_wgmma_mc is 1): the
 * picked 128 x 72 tiles multicast X over clusters of 2. */
enum { WS_SW_LINES, WS_SW_MAPCACHE, WS_SW_TMA, WS_SW_ASYNCRED, WS_SW_MC, WS_SW_COUNT };
static bool ws_switch_on(int which) {
    const tinfer_gemm_knobs *k = tinfer_gemm_knobs_get();
    switch (which) {
    case WS_SW_LINES: return k->gemm_wgmma_epi != TINFER_KNOB_EPI_REGS;
    case WS_SW_MAPCACHE: return k->gemm_wgmma_mapcache != 0;
    case WS_SW_TMA: return k->gemm_wgmma_epi == TINFER_KNOB_EPI_TMA;
    case WS_SW_ASYNCRED: return k->gemm_wgmma_splitred != TINFER_KNOB_SPLITRED_BARRIER;
    default: return k->gemm_wgmma_mc == 1;
    }
}

/* Rung 03's maps: 64-column boxes with the 128-byte swizzle, from the shared per-thread cache
 * (gemm/cuda/tma.h). */
static tinfer_status ws_make_map(CUtensorMap *map, const uint16_t *base, int64_t rows, int64_t K, int64_t ld,
                                 uint32_t box_rows, const char *what, tinfer_err *err) {
    return tinfer_gemm_bf16_tma_map(map, base, rows, K, ld, box_rows, what, err);
}

/* Tile configuration for a shape: the tile width whose tiles finish soonest, a tile costing its
 * width in columns plus a fixed per-tile cost of TINFER_GEMM_BF16_WGMMA_TILE_FIXED columns
 * (pipeline fill, epilogue), counted in whole rounds of tiles over the SMs (the persistent grid's
 * waves). The ping-pong configuration is not picked: it measured no faster than the cooperative
 * 128 x 128 tile (file comment). */
static int32_t ws_pick_width(int64_t M, int64_t nout, int32_t swiglu, int32_t n_sm, bool allow192) {
    int32_t best = TINFER_GEMM_BF16_WGMMA_CFG_256;
    int64_t best_cost = -1;
    const int64_t tiles_m = (M + WS_BM - 1) / WS_BM;
    for (int32_t bn : {256, 192, 128}) {
        if (bn == 192 && !allow192) continue;
        const int64_t cols = swiglu ? bn / 2 : bn;
        const int64_t tiles = tiles_m * ((nout + cols - 1) / cols);
        const int64_t rounds = (tiles + n_sm - 1) / n_sm;
        const int64_t cost = rounds * (bn + TINFER_GEMM_BF16_WGMMA_TILE_FIXED);
        if (best_cost < 0 || cost < best_cost) {
            best = bn;
            best_cost = cost;
        }
    }
    return best;
}
int32_t tinfer_gemm_bf16_wgmma_pick_cfg(int64_t M, int64_t nout, int32_t swiglu, int32_t n_sm) {
    return ws_pick_width(M, nout, swiglu, n_sm, TINFER_GEMM_BF16_WGMMA_192 != 0);
}

/* 128 x 72 or 128 x 96 tiles: plain outputs, K <= TINFER_GEMM_BF16_WGMMA_72_MAX_K, and cheaper
 * than the cfg rule's width by the same cost (rounds of tiles x (width +
 * TINFER_GEMM_BF16_WGMMA_TILE_FIXED)); 96 only with TINFER_GEMM_BF16_WGMMA_96 and where it costs
 * less than 72. Returns the width, or 0. */
int32_t tinfer_gemm_bf16_wgmma_narrow(int64_t M, int64_t nout, int64_t K, int32_t swiglu,
                                      int32_t n_sm) {
    if (swiglu || K > TINFER_GEMM_BF16_WGMMA_72_MAX_K || n_sm < 1) return 0;
    const int64_t tiles_m = (M + WS_BM - 1) / WS_BM;
    auto cost = [&](int64_t bn) {
        return (tiles_m * ((nout + bn - 1) / bn) + n_sm - 1) / n_sm * (bn + TINFER_GEMM_BF16_WGMMA_TILE_FIXED);
    };
    const int32_t bn = TINFER_GEMM_BF16_WGMMA_96 && cost(96) < cost(72) ? 96 : 72;
    return cost(bn) < cost(tinfer_gemm_bf16_wgmma_pick_cfg(M, nout, 0, n_sm)) ? bn : 0;
}

/* Tile width and split-K factor. The cfg rule's width and no split, unless its tiles are few
 * (tiles x TINFER_GEMM_BF16_WGMMA_SPLIT_FILL_DIV <= SMs, counted at the cfg rule's width or at
 * 144 where that width is a candidate) and K >= TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_K. Then the
 * candidate widths are 256 for M <= TINFER_GEMM_BF16_WGMMA_SPLIT_WIDE_MAX_M (one consumer computes,
 * the weight stream is the cost; half the tiles leave room for larger clusters), else 128 (the
 * tensor-core time per CTA halves) and 144 where its tiles cover fewer output columns than 128's
 * (N' = 576: 4 x 144 = 576 against 5 x 128 = 640, and 64 tiles at M = 2048 pair into 64 clusters
 * of 2 where 80 tiles of 128 find no room), tried only when 128 finds no factor: where both
 * split, 128 measured faster (SmolLM2 down M = 512: 128 x 4 8.35 us, 144 x 6 8.86; bf16.h). The
 * first width with a factor takes the largest factor 2..8 whose clusters are all co-resident
 * (tiles <= clusters[w][factor], the runtime's cudaOccupancyMaxActiveClusters; a cluster count
 * that does not fit runs in two waves: Llama-3-8B down M = 128 with 32 clusters of 4 took 60 us
 * against 40 with 3) with at least TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_KB k-blocks per CTA; no split
 * when no width has one. The sweep behind it: bf16.h. */
void tinfer_gemm_bf16_wgmma_pick_split(int64_t M, int64_t nout, int64_t K, int32_t swiglu, int32_t n_sm,
                                       const int32_t clusters[TINFER_GEMM_BF16_WGMMA_WIDTHS][9], int32_t *cfg,
                                       int32_t *ksplit) {
    *cfg = tinfer_gemm_bf16_wgmma_pick_cfg(M, nout, swiglu, n_sm);
    *ksplit = 1;
    const int64_t tiles_m = (M + WS_BM - 1) / WS_BM, kblocks = (K + WS_BK - 1) / WS_BK;
    auto cols = [&](int32_t bn) { return (int64_t)(swiglu ? bn / 2 : bn); };
    auto tiles_of = [&](int32_t bn) { return tiles_m * ((nout + cols(bn) - 1) / cols(bn)); };
    const int32_t narrow = tinfer_gemm_bf16_wgmma_narrow(M, nout, K, swiglu, n_sm);
    if (narrow) *cfg = narrow; /* TINFER_GEMM_BF16_WGMMA_CFG_72 or _96: the width */
    const bool wide = M <= TINFER_GEMM_BF16_WGMMA_SPLIT_WIDE_MAX_M;
    /* 144 where its tiles cover fewer output columns than 128's, unless 72 or 96 already won */
    const bool use144 = !narrow && !wide && tiles_of(144) * cols(144) < tiles_of(128) * cols(128);
    const int64_t few = use144 && tiles_of(144) < tiles_of(*cfg) ? tiles_of(144) : tiles_of(*cfg);
    if (few * TINFER_GEMM_BF16_WGMMA_SPLIT_FILL_DIV > n_sm || K < TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_K) return;
    const int32_t cand[2] = {wide ? 256 : 128, use144 ? 144 : 0};
    for (int32_t bn : cand) {
        if (!bn) continue;
        const int64_t tiles = tiles_of(bn);
        for (int32_t ks = 8; ks >= 2; ks--) {
            const int64_t kper = (kblocks + ks - 1) / ks;
            if ((kblocks + kper - 1) / kper == ks && kper >= TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_KB &&
                tiles <= clusters[tinfer_gemm_bf16_wgmma_width_index(bn)][ks]) {
                *cfg = bn;
                *ksplit = ks;
                return;
            }
        }
    }
}

/* clusters[w][ks]: how many clusters of ks CTAs of the split kernel with tile width w (the width
 * index: 128, 256, 144) can be resident at once (cudaOccupancyMaxActiveClusters; [w][1] = SMs), per
 * device, queried once. */
template <int BN> static cudaError_t ws_query_clusters(int32_t out[9], int n_sm) {
    using G = WsGeo<BN>;
    out[0] = 0;
    out[1] = n_sm;
    cudaError_t e = cudaFuncSetAttribute(wgmma_ws_kernel<BN, 0, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM);
    for (int ks = 2; ks <= 8 && e == cudaSuccess; ks++) {
        int n = 0;
        e = tinfer_tc_max_clusters((const void *)wgmma_ws_kernel<BN, 0, false, true>, 384, (size_t)G::SMEM, ks, n_sm, &n);
        out[ks] = n;
    }
    return e;
}
static tinfer_status ws_clusters(int dev, int n_sm, const int32_t (**out)[9], tinfer_err *err) {
    static_assert(TINFER_GEMM_BF16_WGMMA_WIDTHS == 3, "one table row per tile width");
    static int32_t table[16][TINFER_GEMM_BF16_WGMMA_WIDTHS][9];
    static volatile int have[16];
    if (dev < 0 || dev >= 16) return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 wgmma: device %d (16 at most)", dev);
    if (!have[dev]) {
        cudaError_t e = ws_query_clusters<128>(table[dev][0], n_sm);
        if (e == cudaSuccess) e = ws_query_clusters<256>(table[dev][1], n_sm);
        if (e == cudaSuccess) e = ws_query_clusters<144>(table[dev][2], n_sm);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return tinfer_err_set(err, TINFER_ERR_CUDA, "gemm_bf16 wgmma: cluster occupancy query failed: %s", cudaGetErrorString(e));
        }
        __sync_synchronize();
        have[dev] = 1;
    }
    *out = table[dev];
    return TINFER_OK;
}

tinfer_status tinfer_gemm_bf16_wgmma_max_clusters(int32_t cfg, int32_t ksplit, int32_t *n, tinfer_err *err) {
    tinfer_cuda_facts f;
    const int32_t(*t)[9] = NULL;
    tinfer_status st = tinfer_cuda_current_facts(&f, err);
    if (st != TINFER_OK) return st;
    if (f.cc_major != 9) return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 wgmma: needs sm_90");
    if ((cfg != 128 && cfg != 144 && cfg != 256) || ksplit < 1 || ksplit > 8)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 wgmma: cfg %d / split %d", (int)cfg, (int)ksplit);
    if ((st = ws_clusters(f.device, f.n_sm, &t, err)) != TINFER_OK) return st;
    *n = t[tinfer_gemm_bf16_wgmma_width_index(cfg)][ksplit];
    return TINFER_OK;
}

/* Programmatic dependent launch for this call: K <= TINFER_GEMM_BF16_WGMMA_PDL_MAX_K (bf16.h), where
 * the launch is a large share of the kernel; knob gemm_wgmma_pdl 0 / 1: never / always
 * (measurement; test-gemv-pdl sets 1 to check the ordering at any K). */
static int ws_pdl_mode(void) { /* 0 never, 1 always, 2 by K */
    const int v = tinfer_gemm_knobs_get()->gemm_wgmma_pdl;
    return v == 0 ? 0 : v == 1 ? 1 : 2;
}
static bool ws_pdl(int64_t K) {
    const int mode = ws_pdl_mode();
    return mode == 1 || (mode == 2 && K <= TINFER_GEMM_BF16_WGMMA_PDL_MAX_K);
}

bool tinfer_gemm_bf16_wgmma_pdl(int64_t K) { return ws_pdl(K); }
bool tinfer_gemm_bf16_split_asyncred(void) { return ws_switch_on(WS_SW_ASYNCRED); }
/* knob gemm_early_w 0: no early weight loads in rungs 02 / 04. */
bool tinfer_gemm_bf16_early_w(const tinfer_gemm_bf16_args *a, bool pdl) {
    return pdl && a->w_static && tinfer_gemm_knobs_get()->gemm_early_w != 0;
}
int tinfer_gemm_bf16_wgmma_pdl_mode(void) { return ws_pdl_mode(); }

template <int BN, bool PP>
static tinfer_status ws_launch(const tinfer_gemm_bf16_args *a, int dev, int n_sm, int32_t ksplit, bool mc, cudaStream_t s,
                               tinfer_err *err) {
    using G = WsGeo<BN>;
    /* the X-multicast instantiations (clusters of 2 along N): the 72-wide tile only */
    constexpr bool WS_HAS_MC = !PP && BN == 72;
    /* co-resident clusters of 2 of the multicast kernel, per device (queried once) */
    static int mc_clusters[16];
    /* the TMA-store instantiations: persistent, whole 64-column boxes (not 192: the opt-in
     * epilogue was measured at 128 and 256 only) */
    constexpr bool WS_HAS_TS = !PP && BN % 64 == 0 && BN != 192;
    /* the split-K instantiations (not for the 72- and 96-wide tiles: they exist to avoid one;
     * not for 192: the width a round of unsplit tiles may want, split rules unmeasured) */
    constexpr bool WS_HAS_SPLIT = !PP && BN != 72 && BN != 96 && BN != 192;
    using GT = WsGeo<WS_HAS_TS ? BN : 128, true>;
    tinfer_status status = TINFER_OK;
    CUtensorMap mx, mw;
    static int smem_set_for = -1;
    const bool plain = !a->bias && !a->R && !a->swiglu;
    if (mc && (!WS_HAS_MC || ksplit > 1 || dev < 0 || dev >= 16))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 wgmma: X multicast only with unsplit 72-wide tiles");
    if ((status = ws_make_map(&mx, a->X, a->M, a->K, a->ldx, mc ? WS_BM / 2 : WS_BM, "X", err)) != TINFER_OK) return status;
    if ((status = ws_make_map(&mw, a->W, a->N, a->K, a->ldw, BN / G::W_BOXES, "W", err)) != TINFER_OK) return status;
    if (smem_set_for != dev) {
        if constexpr (WS_HAS_TS) {
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 0, false, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, GT::SMEM));
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 1, false, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, GT::SMEM));
        }
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 0, PP, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
        TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 1, PP, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
        if constexpr (WS_HAS_SPLIT) {
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 0, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 1, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
        }
        if constexpr (WS_HAS_MC) {
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 0, false, false, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
            TINFER_CUDA_TRY(err, cudaFuncSetAttribute(wgmma_ws_kernel<BN, 1, false, false, false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
            int n = 0;
            TINFER_CUDA_TRY(err, tinfer_tc_max_clusters((const void *)wgmma_ws_kernel<BN, 0, false, false, false, true>, 384, (size_t)G::SMEM,
                                                        2, n_sm, &n));
            if (dev >= 0 && dev < 16) mc_clusters[dev] = n;
        }
        smem_set_for = dev;
    }
    {
        const int64_t nout = tinfer_gemm_bf16_nout(*a);
        const int32_t tiles_m = (int32_t)((a->M + WS_BM - 1) / WS_BM);
        const int32_t tiles_n = (int32_t)(a->swiglu ? (nout + BN / 2 - 1) / (BN / 2) : (nout + BN - 1) / BN);
        const int32_t kblocks = (int32_t)((a->K + WS_BK - 1) / WS_BK);
        const int64_t tiles = (int64_t)tiles_m * tiles_n;
        if (tiles > INT32_MAX / 2) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 wgmma: too many tiles");
        /* split-K: every CTA of a cluster gets a non-empty share of the k-blocks */
        if (ksplit > kblocks) ksplit = kblocks;
        if (ksplit > 1) {
            const int32_t kper = (kblocks + ksplit - 1) / ksplit;
            ksplit = (kblocks + kper - 1) / kper;
        }
        if (ksplit > 1 && tiles * ksplit > INT32_MAX / 2) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 wgmma: too many tiles");
        /* MC: clusters of 2 walk pairs of tiles, as many clusters as are co-resident */
        const int64_t pairs = (int64_t)tiles_m * ((tiles_n + 1) / 2);
        if (mc && mc_clusters[dev] < 1)
            return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 wgmma: no cluster of 2 CTAs fits the device");
        const int grid = mc ? 2 * (int)(pairs < mc_clusters[dev] ? pairs : mc_clusters[dev])
                         : ksplit > 1 ? (int)(tiles * ksplit) : (int)(tiles < n_sm ? tiles : n_sm);
        int32_t flags = tinfer_bf16_epi_vec_ok(*a) ? WS_F_VEC : 0;
        if (a->y_dtype == TINFER_DTYPE_BF16 && (uintptr_t)a->Y % 16 == 0 && a->ldy % 8 == 0 &&
            (!a->R || ((uintptr_t)a->R % 16 == 0 && a->ldr % 8 == 0)) && ws_switch_on(WS_SW_LINES))
            flags |= WS_F_LINES | (nout % 8 == 0 ? WS_F_N8 : 0);
        if (ksplit > 1 && ws_switch_on(WS_SW_ASYNCRED)) flags |= WS_F_ASYNCRED;
        /* TMA-store epilogue (--gemm-wgmma-epi tma only): the persistent kernel with BF16
         * output in 16-byte rows, N' % 8 == 0 (a TMA store clipped at a row end that is not a
         * 16-byte multiple wrote zeros past it, into Y's padding: H200, session 6 run 2), no residual */
        const bool ts = WS_HAS_TS && !mc && ksplit == 1 && (flags & WS_F_LINES) && (flags & WS_F_N8) && !a->R &&
                        ws_switch_on(WS_SW_TMA);
        CUtensorMap my = mw; /* unread unless ts */
        if (ts && (status = ws_make_map(&my, (const uint16_t *)a->Y, a->M, nout, a->ldy, 64, "Y", err)) != TINFER_OK) return status;
        cudaLaunchConfig_t lc;
        cudaLaunchAttribute attr[2];
        tinfer_tc_launch_cfg(&lc, attr, (unsigned)grid, 384, (size_t)(ts ? GT::SMEM : G::SMEM), s, mc ? 2 : ksplit, ws_pdl(a->K));
        if (mc) {
            if constexpr (WS_HAS_MC) {
                if (plain) TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 0, false, false, false, true>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, 1));
                else TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 1, false, false, false, true>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, 1));
            }
        } else if (ksplit > 1) {
            if constexpr (WS_HAS_SPLIT) {
                if (plain) TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 0, false, true>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, ksplit));
                else TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 1, false, true>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, ksplit));
            }
        } else if (ts) {
            if constexpr (WS_HAS_TS) {
                if (plain) TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 0, false, false, true>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, 1));
                else TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 1, false, false, true>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, 1));
            }
        } else if (plain) {
            TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 0, PP, false>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, 1));
        } else {
            TINFER_CUDA_TRY(err, cudaLaunchKernelEx(&lc, wgmma_ws_kernel<BN, 1, PP, false>, mx, mw, my, *a, tiles_m, tiles_n, kblocks, flags, 1));
        }
        TINFER_CUDA_LAUNCH_CHECK(err, "wgmma_ws_kernel");
    }
cleanup:
    return status;
}

tinfer_status tinfer_gemm_bf16_wgmma_ws_split(const tinfer_gemm_bf16_args *a, int32_t cfg, int32_t ksplit, cudaStream_t s,
                                              tinfer_err *err) {
    tinfer_cuda_facts f;
    const tinfer_status fs = tinfer_cuda_current_facts(&f, err);
    if (fs != TINFER_OK) return fs;
    const int dev = f.device, major = f.cc_major, n_sm = f.n_sm;
    if (major != 9)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "gemm_bf16 wgmma: needs sm_90 (device %d is sm_%d*)", dev, major);
    if (a->M > INT32_MAX || a->N > INT32_MAX || a->K > INT32_MAX)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16 wgmma: dimension over 2^31");
    const bool narrow = cfg == TINFER_GEMM_BF16_WGMMA_CFG_72 ||
                        cfg == TINFER_GEMM_BF16_WGMMA_CFG_72MC || cfg == TINFER_GEMM_BF16_WGMMA_CFG_96;
    if (ksplit < 0 || ksplit > 8 ||
        (ksplit > 1 && (cfg == TINFER_GEMM_BF16_WGMMA_CFG_PP128 || narrow || cfg == TINFER_GEMM_BF16_WGMMA_CFG_192)))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "gemm_bf16 wgmma: split-K factor %d (0 = auto, 1..8; none with "
                              "ping-pong, 72-, 96- or 192-wide tiles)",
                              (int)ksplit);
    if (narrow && a->swiglu)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "gemm_bf16 wgmma: 72- and 96-wide tiles have no SwiGLU epilogue");
    const bool picked = cfg == TINFER_GEMM_BF16_WGMMA_CFG_AUTO;
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_AUTO && ksplit == 0) {
        const int32_t(*cl)[9] = NULL;
        const tinfer_status st = ws_clusters(dev, n_sm, &cl, err);
        if (st != TINFER_OK) return st;
        tinfer_gemm_bf16_wgmma_pick_split(a->M, tinfer_gemm_bf16_nout(*a), a->K, a->swiglu, n_sm, cl, &cfg, &ksplit);
    }
    /* the width rule alone (a split factor given): among the widths that split when one is asked */
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_AUTO)
        cfg = ws_pick_width(a->M, tinfer_gemm_bf16_nout(*a), a->swiglu, n_sm, TINFER_GEMM_BF16_WGMMA_192 != 0 && ksplit <= 1);
    if (ksplit == 0) ksplit = 1;
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_256) return ws_launch<256, false>(a, dev, n_sm, ksplit, false, s, err);
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_192) return ws_launch<192, false>(a, dev, n_sm, 1, false, s, err);
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_128) return ws_launch<128, false>(a, dev, n_sm, ksplit, false, s, err);
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_144) return ws_launch<144, false>(a, dev, n_sm, ksplit, false, s, err);
    /* the picked 72-wide tiles multicast X over clusters of 2 with --gemm-wgmma-mc 1 */
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_72) return ws_launch<72, false>(a, dev, n_sm, 1, picked && ws_switch_on(WS_SW_MC), s, err);
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_72MC) return ws_launch<72, false>(a, dev, n_sm, 1, true, s, err);
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_96)
        return ws_launch<96, false>(a, dev, n_sm, 1, false, s, err);
    if (cfg == TINFER_GEMM_BF16_WGMMA_CFG_PP128) return ws_launch<128, true>(a, dev, n_sm, 1, false, s, err);
    return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                          "gemm_bf16 wgmma: tile config %d (256, 192, 144, 128, 96, 72, %d for ping-pong 128, %d for 72 with X multicast)", (int)cfg,
                          TINFER_GEMM_BF16_WGMMA_CFG_PP128, TINFER_GEMM_BF16_WGMMA_CFG_72MC);
}

tinfer_status tinfer_gemm_bf16_wgmma_ws_cfg(const tinfer_gemm_bf16_args *a, int32_t cfg, cudaStream_t s, tinfer_err *err) {
    return tinfer_gemm_bf16_wgmma_ws_split(a, cfg, cfg == TINFER_GEMM_BF16_WGMMA_CFG_AUTO ? 0 : 1, s, err);
}

tinfer_status tinfer_gemm_bf16_wgmma_ws(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err) {
    return tinfer_gemm_bf16_wgmma_ws_split(a, TINFER_GEMM_BF16_WGMMA_CFG_AUTO, 0, s, err);
}

/*
 * gemv_bf16_internal.h — launchers of the decode GEMV rungs (gemm/decode/0?_*.cu), called by
 * tinfer_gemv_bf16 (gemv_bf16.cu) after the shared argument check. Not a public header.
 */
#ifndef TINFER_GEMV_BF16_INTERNAL_H
#define TINFER_GEMV_BF16_INTERNAL_H

#include "gemm/bf16.h"

#include <stddef.h>

/* Tokens handled per pass over W by rungs 02..04 (one mma n16 pair in rung 04). */
#define TINFER_GEMV_BF16_MT 16

/* tinfer_gemv_bf16 on arguments that already passed tinfer_gemm_bf16_check (the dispatcher) */
tinfer_status tinfer_gemv_bf16_run(tinfer_gemv_bf16_kernel kernel, const tinfer_gemm_bf16_args *a, cudaStream_t stream,
                                   tinfer_err *err);
tinfer_status tinfer_gemv_bf16_thread_per_row(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                              tinfer_err *err);
tinfer_status tinfer_gemv_bf16_warp_per_row(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                            tinfer_err *err);
tinfer_status tinfer_gemv_bf16_vector(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                      tinfer_err *err);
tinfer_status tinfer_gemv_bf16_split_k(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                       tinfer_err *err);
tinfer_status tinfer_gemv_bf16_cp_async(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                        tinfer_err *err);
tinfer_status tinfer_gemv_bf16_cluster(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                       tinfer_err *err);
/* Rung 08 (08_stream.cu); runs rung 04 for K > 1024. */
tinfer_status tinfer_gemv_bf16_stream(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err);
/* Rung 08 with the fused RMSNorm prologue (tinfer_gemm_bf16_rmsnorm; a->X is not read), and
 * whether it takes these arguments' shape (M <= 8, K <= 1024). */
int tinfer_gemv_bf16_stream_norm_ok(const tinfer_gemm_bf16_args *a);
tinfer_status tinfer_gemv_bf16_stream_norm(const tinfer_gemm_bf16_args *a, const float *x, int64_t ldx,
                                           const uint16_t *norm_w, float eps, cudaStream_t s,
                                           tinfer_err *err);

/* The PDL mode (knob gemv_pdl, --gemv-pdl) every PDL-capable GEMV launcher uses (05_cp_async.cu):
 * 0 plain launches, 1 launch_dependents at the start, 2 (default) after the main loop, 3 never
 * (at exit), 4 once the last loads are issued (rung 05; rung 04 treats 3 and 4 as 2); -2: the
 * knob holds a value outside 0..4 (the launcher fails the call). */
int tinfer_gemv_pdl_mode(void);

/* Rungs 05/06's launch choice for M tokens (05_cp_async.cu): stages of the cp.async pipeline,
 * token rows of X staged per stage (0: X read from global memory), tokens per pass, dynamic
 * shared memory per block, blocks per SM from cudaOccupancyMaxActiveBlocksPerMultiprocessor,
 * and the PDL mode (0 off; 1..3 where launch_dependents sits, see --gemv-pdl). */
typedef struct tinfer_gemv05_info {
    int32_t stages, x_rows, tokens_per_pass, smem_bytes, blocks_per_sm, pdl;
} tinfer_gemv05_info;
/* Reports what tinfer_gemv_bf16 (rung 05, or 06 with cluster = 1) would launch for M tokens
 * (the choice does not depend on N or K) on the current device; launches nothing. */
tinfer_status tinfer_gemv05_config(int64_t M, int32_t swiglu, int32_t cluster, tinfer_gemv05_info *info,
                                   tinfer_err *err);

/* Rung 07's launch configuration (the bench sweeps these; the dispatcher uses
 * tinfer_gemv07_default). max_tokens: tokens per pass over W, 8/16/32/64 (SwiGLU caps it at 32);
 * blocks_per_sm: persistent blocks per SM (capped by occupancy); stages: 8 or 4 (8 falls back to
 * 4 when it does not fit); x_resident: -1 auto (resident when 8*NT rows x K fit
 * TINFER_GEMV07_XRES_MAX_BYTES), 0 staged, 1 resident; pdl: programmatic dependent launch
 * (sm_90); evict_first: L2 evict_first policy on the W stream. */
typedef struct tinfer_gemv07_cfg {
    int32_t max_tokens, blocks_per_sm, stages, x_resident, pdl, evict_first;
} tinfer_gemv07_cfg;
extern const tinfer_gemv07_cfg tinfer_gemv07_default;

/* Resident X budget: 64 tokens x K = 576 (SmolLM2) is 72 KB; with 8 stages of 8 KB W and the
 * 33 KB reduction buffer that is 169 KB of the H200's 227 KB per block. Longer rows stage X. */
#define TINFER_GEMV07_XRES_MAX_BYTES ((size_t)96 << 10)

tinfer_status tinfer_gemv_bf16_persistent(const tinfer_gemm_bf16_args *a, cudaStream_t s, tinfer_err *err);
tinfer_status tinfer_gemv_bf16_persistent_cfg(const tinfer_gemm_bf16_args *a, const tinfer_gemv07_cfg *cfg,
                                              cudaStream_t s, tinfer_err *err);

/* Rung 09's launch configuration (09_bulk.cu; the dispatcher and tinfer_gemv_bf16 use
 * tinfer_gemv09_default, adjusted by the knobs gemv09_bps / _stages / _early / _coresident):
 * blocks_per_sm: 1 or 2 blocks per SM per grid; stages: 2..16, 0 auto (the most that fit);
 * early: 1 issues the W of the first stages before the PDL wait for args.w_static calls;
 * coresident: 1 sizes the auto stages so that two grids fit an SM, 0 so that one does. */
typedef struct tinfer_gemv09_cfg {
    int32_t blocks_per_sm, stages, early, coresident;
} tinfer_gemv09_cfg;
extern const tinfer_gemv09_cfg tinfer_gemv09_default;
tinfer_status tinfer_gemv_bf16_bulk(const tinfer_gemm_bf16_args *a, cudaStream_t s,
                                   tinfer_err *err);
tinfer_status tinfer_gemv_bf16_bulk_cfg(const tinfer_gemm_bf16_args *a, const tinfer_gemv09_cfg *cfg,
                                        cudaStream_t s, tinfer_err *err);

#endif

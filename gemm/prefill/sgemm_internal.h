/*
 * sgemm_internal.h — what the rung files (gemm/prefill/NN_*.cu), the autotuner and the
 * dispatcher share: the argument block, one extern "C" entry per rung family, and the tile
 * configuration tables of the tunable families (rung 8: rung-7 kernel with other tile sizes;
 * rung 10/11: warp-tiled cp.async pipeline).
 *
 * Entry points assume arguments already validated by tinfer_sgemm (gemm/prefill/sgemm.cu):
 * 1 <= M,N,K <= INT32_MAX, leading dimensions >= the row length, non-NULL pointers.
 */
#ifndef TINFER_SGEMM_INTERNAL_H
#define TINFER_SGEMM_INTERNAL_H

#include "gemm/sgemm.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tinfer_sgemm_args {
    int trans_b;
    int32_t M, N, K;
    float alpha, beta;
    const float *A; /* [M, lda] */
    int64_t lda;
    const float *B; /* [K, ldb] (NN) or [N, ldb] (NT) */
    int64_t ldb;
    float *C; /* [M, ldc] */
    int64_t ldc;
} tinfer_sgemm_args;

/* 1 when A, B (and C when `with_c`) allow 16-byte vector accesses along their rows: base
 * pointers 16-byte aligned and leading dimensions multiples of 4 floats. */
int tinfer_sgemm_vec_ok(const tinfer_sgemm_args *a, int with_c);

tinfer_status tinfer_sgemm_01_naive(const tinfer_sgemm_args *a, cudaStream_t s, tinfer_err *err);
tinfer_status tinfer_sgemm_02_coalesced(const tinfer_sgemm_args *a, cudaStream_t s, tinfer_err *err);
tinfer_status tinfer_sgemm_03_smem(const tinfer_sgemm_args *a, cudaStream_t s, tinfer_err *err);
tinfer_status tinfer_sgemm_04_reg1d(const tinfer_sgemm_args *a, cudaStream_t s, tinfer_err *err);
tinfer_status tinfer_sgemm_05_reg2d(const tinfer_sgemm_args *a, cudaStream_t s, tinfer_err *err);
tinfer_status tinfer_sgemm_06_vec(const tinfer_sgemm_args *a, cudaStream_t s, tinfer_err *err);
/* xor = 0: padded rows (rung 7); xor = 1: XOR-swizzled rows (rung 12). */
tinfer_status tinfer_sgemm_07_bankfree(const tinfer_sgemm_args *a, int xor_layout, cudaStream_t s,
                                       tinfer_err *err);
/* config: index into the rung-8 table; < 0 picks the tuned/default one for the shape. */
tinfer_status tinfer_sgemm_08_autotuned(const tinfer_sgemm_args *a, int config, cudaStream_t s,
                                        tinfer_err *err);
tinfer_status tinfer_sgemm_09_warptile(const tinfer_sgemm_args *a, cudaStream_t s, tinfer_err *err);
/* config: index into the pipelined table; splits >= 1 splits K over blockIdx.z (splits > 1
 * needs C already scaled by beta and accumulates with atomicAdd: rung 11 does that). */
tinfer_status tinfer_sgemm_10_pipelined(const tinfer_sgemm_args *a, int config, int splits,
                                        cudaStream_t s, tinfer_err *err);
/* splits <= 0: chosen from the shape (enough blocks for every SM, K slices >= 256 deep). */
tinfer_status tinfer_sgemm_11_splitk(const tinfer_sgemm_args *a, int config, int splits,
                                     cudaStream_t s, tinfer_err *err);

/* Tile configurations of the tunable families, for the tuner, the bench and the tests. */
typedef struct tinfer_sgemm_cfg {
    int bm, bn, bk;     /* block tile */
    int tm, tn;         /* thread tile (outputs per thread) */
    int wm, wn;         /* warp tile (pipelined family; 0 for rung 8) */
    int stages;         /* shared-memory stages (pipelined family; 1 for rung 8) */
    int threads;
    size_t smem_bytes;  /* shared memory per block */
    const void *kernel_nn, *kernel_nt; /* for cudaFuncGetAttributes (registers) */
} tinfer_sgemm_cfg;

int tinfer_sgemm_08_n_configs(void);
const tinfer_sgemm_cfg *tinfer_sgemm_08_config(int i);
int tinfer_sgemm_10_n_configs(void);
/* Rung 13 = rung-10 configs with the lean main loop (13_lean.cuh). lean_twin: the lean config
 * with the same tile as `config` (itself if lean), -1 if none; plain_twin: the rung-10 config
 * with the same tile (itself if plain). */
int tinfer_sgemm_10_lean_twin(int config);
int tinfer_sgemm_10_plain_twin(int config);
const tinfer_sgemm_cfg *tinfer_sgemm_10_config(int i);
/* Number of SMs of the current device (cached per device; 132 when the query fails). */
int tinfer_sgemm_sm_count(void);

/* Tuned choice lookup (autotune.cu): fills *rung, *config, *splits for the shape's class and
 * returns 1, or returns 0 when no table is loaded or it has no entry. family = 8 asks for the
 * best rung-8 configuration, 10 for the best rung-10 one, 0 for the overall winner. */
int tinfer_sgemm_tune_lookup(int family, const tinfer_sgemm_args *a, int *rung, int *config,
                             int *splits);
/* The shape class key used by the cache, e.g. "nt.m12.n12.k12.v" (log2 buckets, layout,
 * v = 16-byte aligned or s = scalar). */
void tinfer_sgemm_shape_class(const tinfer_sgemm_args *a, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif

/*
 * test_gemm_bf16.h — what the files of test-gemm-bf16 share: the tolerances, the guard band, the
 * CUDA check, a test case and a runner (the kernel under test), the failure and case counts, and
 * the functions one file calls in another.
 *   test_gemm_bf16.cu        the runner lists and the cases run on them (main)
 *   test_gemm_bf16_case.cu   one case: random inputs, the double-precision reference, each
 *                            runner launched and its output compared; the comparator's self-test
 *                            and the argument refusals on the device
 *   test_gemm_bf16_host.cu   the checks that need no GPU: argument checks, the rungs' picks and
 *                            the dispatcher's routes
 */
#ifndef TINFER_TEST_GEMM_BF16_H
#define TINFER_TEST_GEMM_BF16_H

#include "gemm/bf16.h"
#include "gemm/cuda/device.h"
#include "gemm/decode/gemv_bf16_internal.h" /* rung 07's launch configurations */
#include "gemm/tc/gemm_bf16_tc_internal.h" /* rung 02's fixed tile configs */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vector>

/* Tolerances (normalized L2 error; the max-element check allows 8x, since one element may sit
 * at a rounding boundary while the norm averages):
 *  - BF16 output: one rounding to BF16 is <= 2^-9 = 1.95e-3 relative per element; 4e-3 is that
 *    bound with 2x margin for the FP32 accumulation and SwiGLU's __expf.
 *  - F32 output: FP32 accumulation over K <= 16384 terms grows like sqrt(K) * 2^-24 (~8e-6); the
 *    tensor cores' FP32 accumulation does not round to nearest at every add, so allow 2e-4 (25x). */
#define TOL_BF16 4e-3
#define TOL_F32 2e-4
#define GUARD 256

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef struct test_case {
    int64_t M, N, K;
    tinfer_dtype yd;
    int bias, resid, swiglu;
    int ly8; /* 1: Y rows padded to a multiple of 8 elements (16-byte rows: the vector stores);
              * 0: ldy = N' + 3, rows deliberately misaligned */
    int split; /* the split RMSNorm (gemm/bf16.h): 0 off; 1 producer (F32 Y, no SwiGLU: nx and
                * nss checked bit for bit against the kernel's own Y); 2 consumer (rss of random
                * sums of squares, rows scaled by their 1 / rms). Rung 03 must refuse both. */
} test_case;

/* kind: 'v' = GEMV rung, 't' = tensor-core rung, 'm' = rung 02 with tile config id, 'w' = rung 03 with
 * tile configuration id (72, 96, 128, 144, 192, 256, TINFER_GEMM_BF16_WGMMA_CFG_PP128 or _72MC) + 1000 x split-K factor, 's' = rung 04 with config * 10 + split factor, 'd' = dispatcher path,
 * 'p' = GEMV rung 07 with launch configuration g07_cfgs[id], 'b' = GEMV rung 09 with
 * launch configuration g09_cfgs[id] (both in test_gemm_bf16_case.cu), 'k' = rung 05 with token tile id % 100 and
 * split factor id / 100, 'y' = rung 06 with token tile id % 100, cluster id / 100 % 10 and split
 * factor id / 1000 (0: its own); any kind with w_static = 1 runs with args.w_static = 1 */
typedef struct runner {
    char kind;
    int id;
    const char *name;
    int w_static; /* 1: the call sets args.w_static (GEMV rungs 05 / 06 and prefill rungs 02 / 04
                   * then load W before the PDL wait; the others must simply ignore it) */
} runner;

extern int g_fail, g_cases;
extern const char *g_only; /* runner name filter (argv[2]) */
extern uint64_t g_rng;      /* the inputs' random state (its start value is the printed seed) */

/* test_gemm_bf16_case.cu */
uint32_t rnd_u32(void);          /* from g_rng */
uint16_t rnd_bf16(float scale);  /* uniform in [-scale, scale), rounded to BF16 */
void run_case(const test_case &c, const runner *runners, int nrun, cudaStream_t s);
/* The two words of a square's share of a row's sum of squares, as the kernels' epilogue makes
 * them (gemm/cuda/bf16_epi.cuh, tinfer_nss_words), and a row's 1 / rms from the summed words. */
void nss_words_host(float s, unsigned long long *hi, unsigned long long *lo);
float nss_rs_host(unsigned long long hi, unsigned long long lo, int32_t n, float eps);
/* test_gemm_bf16_norm.cu: tinfer_gemm_bf16_rmsnorm (RMSNorm fused into rung 08) */
void test_rmsnorm_fused(cudaStream_t s, bool quick);
void self_test_compare(void);
void bad_args(bool sm90);
/* test_gemm_bf16_host.cu */
void route_choice(int cc, int n_sm);
void check_args_host(void);
void split_pick(void);
void skinny_pick(void);
void tiny_pick(void);
void gemv_pick(void);

#endif

/*
 * sgemm.cu — the public side of the FP32 ladder (gemm/sgemm.h): argument validation, the rung
 * table, the per-rung entry, and the dispatch entry point tinfer_sgemm_auto.
 *
 * Dispatch order: (1) the tuning table's winner for this GPU + shape class, when one is loaded
 * (autotune.cu); (2) otherwise the built-in rule below, from the H200 measurements in
 * gemm/prefill/README.md. Misaligned operands are handled inside the rungs (rung 5 fallback).
 */
#include "gemm/prefill/autotune.h"
#include "gemm/prefill/common.cuh"

#include <stdio.h>
#include <string.h>

static const char *const k_names[TINFER_SGEMM_N_RUNGS] = {
    "?",           "01_naive",    "02_coalesced", "03_smem",     "04_reg1d",
    "05_reg2d",    "06_vec",      "07_bankfree",  "08_autotuned", "09_warptile",
    "10_pipelined", "11_splitk",  "12_bankfree_xor", "13_lean"};
static const char *const k_tech[TINFER_SGEMM_N_RUNGS] = {
    "?",
    "naive, one thread per output",
    "global-memory coalescing",
    "shared-memory cache blocking",
    "1D register blocktiling (8 outputs/thread)",
    "2D register blocktiling (8x8 outer products)",
    "128-bit loads/stores, A transposed in smem",
    "bank conflicts removed (padded smem rows)",
    "autotuned tile sizes (rung 7 family)",
    "warptiling (block/warp/thread tiles)",
    "cp.async multi-stage + register double buffer + block swizzle",
    "split-K over rung 10 for few-tile shapes",
    "bank conflicts removed (XOR-swizzled smem)",
    "rung 10 with hoisted copy addressing (issue-slot diet)"};

extern "C" const char *tinfer_sgemm_rung_name(int rung) {
    return (rung > 0 && rung < TINFER_SGEMM_N_RUNGS) ? k_names[rung] : "?";
}
extern "C" const char *tinfer_sgemm_rung_technique(int rung) {
    return (rung > 0 && rung < TINFER_SGEMM_N_RUNGS) ? k_tech[rung] : "?";
}

extern "C" int tinfer_sgemm_vec_ok(const tinfer_sgemm_args *a, int with_c) {
    const bool ab = (uintptr_t)a->A % 16 == 0 && a->lda % 4 == 0 && (uintptr_t)a->B % 16 == 0 &&
                    a->ldb % 4 == 0;
    if (!with_c) return ab;
    return (uintptr_t)a->C % 16 == 0 && a->ldc % 4 == 0;
}

extern "C" int tinfer_sgemm_sm_count(void) {
    static int cached[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        (void)cudaGetLastError();
        return 132;
    }
    if (!cached[dev]) {
        int n = 0;
        if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
            n <= 0) {
            (void)cudaGetLastError();
            n = 132; /* H200 SXM (NVIDIA datasheet) */
        }
        cached[dev] = n;
    }
    return cached[dev];
}

static tinfer_status check(int rung, int trans_b, int64_t M, int64_t N, int64_t K,
                           const float *A, int64_t lda, const float *B, int64_t ldb,
                           const float *C, int64_t ldc, tinfer_err *err) {
    if (rung < 1 || rung >= TINFER_SGEMM_N_RUNGS)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "sgemm: unknown rung %d (1..%d)", rung,
                              TINFER_SGEMM_N_RUNGS - 1);
    if (M < 1 || N < 1 || K < 1 || M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "sgemm: M=%lld N=%lld K=%lld must each be in 1..2^31-1",
                              (long long)M, (long long)N, (long long)K);
    if (!A || !B || !C)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "sgemm: NULL %s pointer",
                              !A ? "A" : !B ? "B" : "C");
    if (lda < K)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "sgemm: lda=%lld < K=%lld",
                              (long long)lda, (long long)K);
    if (ldb < (trans_b ? K : N))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "sgemm: ldb=%lld < %s=%lld (%s)",
                              (long long)ldb, trans_b ? "K" : "N", (long long)(trans_b ? K : N),
                              trans_b ? "NT" : "NN");
    if (ldc < N)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "sgemm: ldc=%lld < N=%lld",
                              (long long)ldc, (long long)N);
    if (((uintptr_t)A | (uintptr_t)B | (uintptr_t)C) % sizeof(float))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "sgemm: A, B, C must be 4-byte aligned float pointers");
    return TINFER_OK;
}

static tinfer_status run_rung(int rung, int config, int splits, const tinfer_sgemm_args *a,
                              cudaStream_t s, tinfer_err *err) {
    switch (rung) {
    case TINFER_SGEMM_NAIVE: return tinfer_sgemm_01_naive(a, s, err);
    case TINFER_SGEMM_COALESCED: return tinfer_sgemm_02_coalesced(a, s, err);
    case TINFER_SGEMM_SMEM: return tinfer_sgemm_03_smem(a, s, err);
    case TINFER_SGEMM_REG1D: return tinfer_sgemm_04_reg1d(a, s, err);
    case TINFER_SGEMM_REG2D: return tinfer_sgemm_05_reg2d(a, s, err);
    case TINFER_SGEMM_VEC: return tinfer_sgemm_06_vec(a, s, err);
    case TINFER_SGEMM_BANKFREE: return tinfer_sgemm_07_bankfree(a, 0, s, err);
    case TINFER_SGEMM_AUTOTUNED: return tinfer_sgemm_08_autotuned(a, config, s, err);
    case TINFER_SGEMM_WARPTILE: return tinfer_sgemm_09_warptile(a, s, err);
    case TINFER_SGEMM_PIPELINED:
        return tinfer_sgemm_10_pipelined(a, config < 0 ? 0 : config, splits < 1 ? 1 : splits, s,
                                         err);
    case TINFER_SGEMM_SPLITK: return tinfer_sgemm_11_splitk(a, config < 0 ? 0 : config, splits, s, err);
    case TINFER_SGEMM_BANKFREE_XOR: return tinfer_sgemm_07_bankfree(a, 1, s, err);
    case TINFER_SGEMM_LEAN: return tinfer_sgemm_10_pipelined(a, config, 1, s, err);
    }
    return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "sgemm: unknown rung %d", rung);
}

static void fill_args(tinfer_sgemm_args *a, int trans_b, int64_t M, int64_t N, int64_t K,
                      float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                      float beta, float *C, int64_t ldc) {
    a->trans_b = trans_b ? 1 : 0;
    a->M = (int32_t)M; a->N = (int32_t)N; a->K = (int32_t)K;
    a->alpha = alpha; a->beta = beta;
    a->A = A; a->lda = lda; a->B = B; a->ldb = ldb; a->C = C; a->ldc = ldc;
}

/* Built-in choice when no tuning entry exists, from the H200 tuning runs (gemm/prefill/README.md,
 * "Tuning and the built-in choice", 2026-12-02): the 64x128 config (4) won every square class up to
 * 1024 (<= 64 tiles of 128x128, i.e. under one per SM), the lean 8x16-per-thread configs every
 * class from 2048; split-K only paid where 128x128 tiles cover under a quarter of the SMs and K >=
 * 1024 (512^3: 16 tiles; rung 11 1.5x rung 10 there, while at 1024^3 config 4 beat it). */
static void builtin_choice(const tinfer_sgemm_args *a, int *rung, int *config, int *splits) {
    const int64_t sms = tinfer_sgemm_sm_count();
    const int64_t tiles = (int64_t)((a->M + 127) / 128) * ((a->N + 127) / 128);
    *splits = 1;
    if (tiles * 4 < sms && a->K >= 1024) {
        *rung = TINFER_SGEMM_SPLITK; *config = 4; *splits = 0;
    } else if (tiles < sms) {
        *rung = TINFER_SGEMM_PIPELINED; *config = 4;
    } else {
        /* H200 tuner (gemm/prefill/README.md): rung 13 won every class from 2048 up, with
         * 128x256x16 tiles for NN (config 15) and 128x128x8 tiles, two blocks per SM, for NT (16).
         * */
        *rung = TINFER_SGEMM_LEAN; *config = a->trans_b ? 16 : 15;
    }
}

/* A rung-10-family choice (tuned or built-in) as the rung that runs it: lean configs are
 * rung 13. */
static void name_family_rung(int *rung, int config) {
    if (*rung == TINFER_SGEMM_PIPELINED && tinfer_sgemm_10_lean_twin(config) == config)
        *rung = TINFER_SGEMM_LEAN;
}

static void choose(const tinfer_sgemm_args *a, int *rung, int *config, int *splits) {
    if (tinfer_sgemm_tune_lookup(0, a, rung, config, splits)) {
        name_family_rung(rung, *config);
        return;
    }
    builtin_choice(a, rung, config, splits);
}

extern "C" tinfer_status tinfer_sgemm(int rung, int trans_b, int64_t M, int64_t N, int64_t K,
                                      float alpha, const float *A, int64_t lda, const float *B,
                                      int64_t ldb, float beta, float *C, int64_t ldc,
                                      cudaStream_t stream, tinfer_err *err) {
    tinfer_status st = check(rung, trans_b, M, N, K, A, lda, B, ldb, C, ldc, err);
    if (st != TINFER_OK) return st;
    tinfer_sgemm_args a;
    fill_args(&a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    /* Rung 8: its tuned tile (or config 0). Rungs 10, 11 and 13 called directly: the tile of
     * the tuned rung-10-family winner (else the built-in choice), with the plain main loop
     * for 10 and the lean one for 11 and 13 where the tile has a lean twin, so that 10 vs 13
     * is the same tile with and without the hoisting; never split for 10 and 13, automatic
     * slice count for 11 (one slice where the tiles already fill the SMs). */
    int config = rung == TINFER_SGEMM_AUTOTUNED ? -1 : 0, splits = 1;
    if (rung == TINFER_SGEMM_PIPELINED || rung == TINFER_SGEMM_SPLITK || rung == TINFER_SGEMM_LEAN) {
        int r;
        if (!tinfer_sgemm_tune_lookup(10, &a, &r, &config, &splits))
            builtin_choice(&a, &r, &config, &splits);
        if (rung == TINFER_SGEMM_PIPELINED) {
            config = tinfer_sgemm_10_plain_twin(config);
        } else {
            const int lean = tinfer_sgemm_10_lean_twin(config);
            if (lean >= 0) config = lean;
        }
        splits = rung == TINFER_SGEMM_SPLITK ? 0 : 1;
    }
    return run_rung(rung, config, splits, &a, stream, err);
}

extern "C" tinfer_status tinfer_sgemm_auto(int trans_b, int64_t M, int64_t N, int64_t K,
                                           float alpha, const float *A, int64_t lda,
                                           const float *B, int64_t ldb, float beta, float *C,
                                           int64_t ldc, cudaStream_t stream, tinfer_err *err) {
    tinfer_status st = check(TINFER_SGEMM_PIPELINED, trans_b, M, N, K, A, lda, B, ldb, C, ldc, err);
    if (st != TINFER_OK) return st;
    tinfer_sgemm_args a;
    fill_args(&a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    int rung, config, splits;
    choose(&a, &rung, &config, &splits);
    return run_rung(rung, config, splits, &a, stream, err);
}

extern "C" int tinfer_sgemm_auto_choice(int trans_b, int64_t M, int64_t N, int64_t K,
                                        const float *A, int64_t lda, const float *B, int64_t ldb,
                                        const float *C, int64_t ldc, char *desc, size_t desc_len) {
    tinfer_sgemm_args a;
    fill_args(&a, trans_b, M, N, K, 1.f, A, lda, B, ldb, 0.f, (float *)C, ldc);
    int rung, config, splits;
    choose(&a, &rung, &config, &splits);
    if (desc && desc_len) {
        const tinfer_sgemm_cfg *c = rung == TINFER_SGEMM_AUTOTUNED ? tinfer_sgemm_08_config(config)
                                    : (rung == TINFER_SGEMM_PIPELINED || rung == TINFER_SGEMM_SPLITK ||
                                       rung == TINFER_SGEMM_LEAN)
                                        ? tinfer_sgemm_10_config(config)
                                        : NULL;
        if (c)
            snprintf(desc, desc_len, "%d cfg%d %dx%dx%d t%dx%d s%d split%d", rung, config, c->bm,
                     c->bn, c->bk, c->tm, c->tn, c->stages, splits);
        else
            snprintf(desc, desc_len, "%d", rung);
    }
    return rung;
}

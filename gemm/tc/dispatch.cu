/*
 * dispatch.cu — the BF16 GEMM entry points: the shared argument check, the prefill family's
 * entry (tinfer_gemm_bf16_tc) and the one call the runtime makes (tinfer_gemm_bf16), which
 * picks the decode GEMV or the prefill GEMM from the shape.
 *
 * Rule: M <= TINFER_GEMM_BF16_GEMV_MAX_M -> the decode GEMV; else on sm_90, where rung 06 (one
 * 64-output tile per CTA, tinfer_gemm_bf16_tiny_pick) takes the shape, the GEMM path with it;
 * else M <= TINFER_GEMM_BF16_SMALL_W_MAX_M with at most
 * TINFER_GEMM_BF16_SMALL_W_TRAFFIC bytes of weight read over the GEMV's 16-token passes (bf16.h)
 * -> the decode GEMV (rung 05, split-K mma fed by
 * cp.async; rung 09 (TMA-fed, one block per SM) for TINFER_GEMV_BF16_BULK_MIN_M.._MAX_M tokens on
 * long rows of few columns; rung 06 for K >= TINFER_GEMV_BF16_CLUSTER_MIN_K, rung 08 (rung 04 on a persistent grid)
 * for short rows, K <= TINFER_GEMV_BF16_SHORT_K, up to TINFER_GEMV_BF16_STREAM_MAX_M tokens, or up
 * to TINFER_GEMV_BF16_STREAM_PASS_MAX_M tokens while the weight re-read per 16-token pass stays
 * within TINFER_GEMV_BF16_STREAM_PASS_TRAFFIC, and for short wide weights on a forced GEMV path;
 * every call rung 08 takes goes to the GEMV path);
 * otherwise the GEMM path: on sm_90, rung 06 where it takes the shape, rung 05 (wgmma with the
 * operands swapped) for M <= TINFER_GEMM_BF16_SKINNY_MAX_M and weights of at least
 * TINFER_GEMM_BF16_SKINNY_MIN_W bytes, else the split-K mma.sync kernel (rung 04: rung 02's small tiles with K split
 * over a thread-block cluster, its own split pick) when the wgmma kernel's 128 x 256 tiles would
 * fill under a quarter of the SMs (TINFER_GEMM_BF16_MMA_WGMMA_FILL_DIV) and K is short
 * (TINFER_GEMM_BF16_SPLIT_MAX_K) and there are at most TINFER_GEMM_BF16_SPLIT_MAX_TILES of them
 * (more go to rung 03's own split) and rung 03 would not take them unsplit in 128 x 72 tiles
 * (TINFER_GEMM_BF16_WGMMA_72_MIN_M), else the
 * wgmma kernel (rung 03, which picks its own tile width and, for few tiles and long K, its split-K
 * factor); the WMMA kernel off sm_90. The thresholds come from the
 * sweeps recorded in gemm/NOTES.md. Debug switch (documented, read once): TINFER_GEMM_FORCE=
 * gemv|gemm forces the path for AUTO calls, =mma|split|wgmma|skinny|tiny|wmma the GEMM path with that rung; an
 * explicit path argument overrides the path (the rung switch still applies to the GEMM path).
 */
#include "gemm/bf16.h"
#include "gemm/cuda/device.h"
#include "gemm/tc/bf16_epi.cuh"
#include "gemm/tc/gemm_bf16_tc_internal.h"

#include <stdlib.h>
#include <string.h>

extern "C" tinfer_status tinfer_gemm_bf16_check(const tinfer_gemm_bf16_args *a, const char *who,
                                               tinfer_err *err) {
    if (!a) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "%s: args is NULL", who);
    if (a->M < 1 || a->N < 1 || a->K < 1)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "%s: M=%lld N=%lld K=%lld must be >= 1", who,
                              (long long)a->M, (long long)a->N, (long long)a->K);
    if (!a->X || !a->W || !a->Y)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "%s: X, W and Y must be non-NULL", who);
    if (a->K % 8 || a->ldx % 8 || a->ldw % 8)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "%s: K=%lld ldx=%lld ldw=%lld must be multiples of 8 (16-byte rows)", who,
                              (long long)a->K, (long long)a->ldx, (long long)a->ldw);
    if ((uintptr_t)a->X % 16 || (uintptr_t)a->W % 16)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "%s: X and W must be 16-byte aligned", who);
    if (a->y_dtype != TINFER_DTYPE_BF16 && a->y_dtype != TINFER_DTYPE_F32)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "%s: output dtype %s (BF16 or F32 only)", who,
                              tinfer_dtype_name(a->y_dtype));
    if ((a->swiglu != 0 && a->swiglu != 1) || (a->w_static != 0 && a->w_static != 1))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "%s: swiglu=%d w_static=%d must be 0 or 1", who,
                              (int)a->swiglu, (int)a->w_static);
    if (a->swiglu && a->N % 2)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "%s: swiglu needs an even N (got %lld)", who,
                              (long long)a->N);
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    if (a->ldx < a->K || a->ldw < a->K || a->ldy < nout || (a->R && a->ldr < nout))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "%s: leading dimension too small (ldx %lld ldw %lld ldy %lld ldr %lld; K %lld N' %lld)",
                              who, (long long)a->ldx, (long long)a->ldw, (long long)a->ldy, (long long)a->ldr,
                              (long long)a->K, (long long)nout);
    if (a->R && a->R != a->Y) {
        /* R may be Y itself (in-place add, same element read then written by one thread), but not
         * a different view overlapping Y. */
        const size_t es = tinfer_dtype_size(a->y_dtype);
        const uintptr_t y0 = (uintptr_t)a->Y, y1 = y0 + ((a->M - 1) * a->ldy + nout) * es;
        const uintptr_t r0 = (uintptr_t)a->R, r1 = r0 + ((a->M - 1) * a->ldr + nout) * es;
        if (r0 < y1 && y0 < r1)
            return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "%s: residual R overlaps Y without being Y", who);
    }
    if (a->R == a->Y && a->R && a->ldr != a->ldy)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "%s: in-place residual needs ldr == ldy", who);
    return TINFER_OK;
}

extern "C" tinfer_status tinfer_gemm_bf16_tc(tinfer_gemm_bf16_kernel kernel, const tinfer_gemm_bf16_args *a,
                                             cudaStream_t stream, tinfer_err *err) {
    tinfer_status st = tinfer_gemm_bf16_check(a, "gemm_bf16", err);
    if (st != TINFER_OK) return st;
    switch (kernel) {
    case TINFER_GEMM_BF16_WMMA: return tinfer_gemm_bf16_wmma(a, stream, err);
    case TINFER_GEMM_BF16_MMA_SYNC: return tinfer_gemm_bf16_mma(a, TINFER_GEMM_BF16_MMA_CFG_AUTO, stream, err);
    case TINFER_GEMM_BF16_WGMMA_WS: return tinfer_gemm_bf16_wgmma_ws(a, stream, err);
    case TINFER_GEMM_BF16_MMA_SPLITK:
        return tinfer_gemm_bf16_mma_split(a, TINFER_GEMM_BF16_MMA_CFG_AUTO, TINFER_GEMM_BF16_MMA_SPLIT_AUTO, stream, err);
    case TINFER_GEMM_BF16_WGMMA_SKINNY: return tinfer_gemm_bf16_skinny(a, 0, 0, stream, err);
    case TINFER_GEMM_BF16_WGMMA_TINY: return tinfer_gemm_bf16_tiny(a, 0, 0, 0, stream, err);
    }
    return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16: unknown kernel %d", (int)kernel);
}

/* TINFER_GEMM_FORCE, read once: 0 none, 1 gemv, 2 gemm, 3 gemm with rung 02 (mma), 4 with rung
 * 03 (wgmma), 5 with rung 01 (wmma), 6 with rung 04 (split: mma.sync split-K over a cluster), 7
 * with rung 05 (skinny: wgmma with the operands swapped), 8 with rung 06 (tiny: 05's form, one
 * tile per CTA, W multicast over token tiles). */
static int gemm_force(void) {
    static int cached = -1;
    if (cached < 0) {
        const char *s = getenv("TINFER_GEMM_FORCE");
        cached = !s                     ? 0
                 : !strcmp(s, "gemv")  ? 1
                 : !strcmp(s, "gemm")  ? 2
                 : !strcmp(s, "mma")   ? 3
                 : !strcmp(s, "wgmma") ? 4
                 : !strcmp(s, "wmma")  ? 5
                 : !strcmp(s, "split") ? 6
                 : !strcmp(s, "skinny") ? 7
                 : !strcmp(s, "tiny")  ? 8
                                       : 0;
    }
    return cached;
}

/* Compute capability major and SM count of the current device (0, 0 if unknown; cached). */
static void device_info(int *major, int *n_sm) {
    tinfer_cuda_facts f;
    const bool ok = tinfer_cuda_current_facts(&f, NULL) == TINFER_OK;
    *major = ok ? f.cc_major : 0;
    *n_sm = ok ? f.n_sm : 0;
}

/* The prefill rung for this call (rule in bf16.h at TINFER_GEMM_BF16_MMA_WGMMA_FILL_DIV). */
static tinfer_gemm_bf16_kernel gemm_rung(const tinfer_gemm_bf16_args *a) {
    const int f = gemm_force();
    if (f == 3) return TINFER_GEMM_BF16_MMA_SYNC;
    if (f == 4) return TINFER_GEMM_BF16_WGMMA_WS;
    if (f == 5) return TINFER_GEMM_BF16_WMMA;
    if (f == 6) return TINFER_GEMM_BF16_MMA_SPLITK;
    if (f == 7) return TINFER_GEMM_BF16_WGMMA_SKINNY;
    if (f == 8) return TINFER_GEMM_BF16_WGMMA_TINY;
    int major, n_sm;
    device_info(&major, &n_sm);
    if (major != 9) return TINFER_GEMM_BF16_WMMA;
    if (tinfer_gemm_bf16_tiny_pick(a->M, tinfer_gemm_bf16_nout(*a), a->K, a->swiglu, n_sm, NULL, NULL, NULL)) return TINFER_GEMM_BF16_WGMMA_TINY;
    if (a->M <= TINFER_GEMM_BF16_SKINNY_MAX_M && a->N * a->K * 2 >= TINFER_GEMM_BF16_SKINNY_MIN_W)
        return TINFER_GEMM_BF16_WGMMA_SKINNY;
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    const int64_t bn = a->swiglu ? TINFER_GEMM_BF16_WGMMA_TILE_N / 2 : TINFER_GEMM_BF16_WGMMA_TILE_N;
    const int64_t tiles = ((a->M + TINFER_GEMM_BF16_WGMMA_TILE_M - 1) / TINFER_GEMM_BF16_WGMMA_TILE_M) *
                          ((nout + bn - 1) / bn);
    const bool few_tiles = tiles * TINFER_GEMM_BF16_MMA_WGMMA_FILL_DIV < (int64_t)n_sm;
    const bool split_pays = a->K <= TINFER_GEMM_BF16_SPLIT_MAX_K &&
                            tiles <= TINFER_GEMM_BF16_SPLIT_MAX_TILES;
    /* rung 03's narrow tiles (128 x 72 or 96), unsplit (short K), beat rung 04 from M = 64 (bf16.h) */
    if (!few_tiles || !split_pays) return TINFER_GEMM_BF16_WGMMA_WS;
    const bool narrow = a->M >= TINFER_GEMM_BF16_WGMMA_72_MIN_M && a->K < TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_K &&
                        tinfer_gemm_bf16_wgmma_narrow(a->M, nout, a->K, a->swiglu, n_sm) != 0;
    return narrow ? TINFER_GEMM_BF16_WGMMA_WS : TINFER_GEMM_BF16_MMA_SPLITK;
}

/* GEMV rung 08's ground (bf16.h): short rows up to TINFER_GEMV_BF16_STREAM_MAX_M tokens, and small
 * short-row weights re-read once per 16-token pass up to TINFER_GEMV_BF16_STREAM_PASS_MAX_M tokens */
static bool stream_rung(int64_t M, int64_t N, int64_t K) {
    if (K > TINFER_GEMV_BF16_SHORT_K) return false;
    if (M <= TINFER_GEMV_BF16_STREAM_MAX_M) return true;
    return M <= TINFER_GEMV_BF16_STREAM_PASS_MAX_M && (M + 15) / 16 * N * K * 2 <= TINFER_GEMV_BF16_STREAM_PASS_TRAFFIC;
}

/* GEMV rung 09's ground (bf16.h): 4..8 tokens, plain or residual outputs, long rows, at most
 * 64 columns per SM (one block per SM owns them all) */
static bool bulk_rung(const tinfer_gemm_bf16_args *a, int n_sm) {
    return a->M >= TINFER_GEMV_BF16_BULK_MIN_M && a->M <= TINFER_GEMV_BF16_BULK_MAX_M &&
           !a->swiglu && a->K >= TINFER_GEMV_BF16_BULK_MIN_K &&
           a->N <= (int64_t)TINFER_GEMV_BF16_BULK_COLS_PER_SM * n_sm;
}

extern "C" tinfer_gemv_bf16_kernel tinfer_gemv_bf16_pick(const tinfer_gemm_bf16_args *a, int cc_major, int n_sm) {
    if (cc_major == 9 && bulk_rung(a, n_sm)) return TINFER_GEMV_BF16_BULK;
    if (cc_major == 9 && a->K >= TINFER_GEMV_BF16_CLUSTER_MIN_K) return TINFER_GEMV_BF16_CLUSTER;
    if (stream_rung(a->M, a->N, a->K) || (a->K <= TINFER_GEMV_BF16_SHORT_K && a->N >= TINFER_GEMV_BF16_WIDE_N))
        return TINFER_GEMV_BF16_STREAM;
    return TINFER_GEMV_BF16_CP_ASYNC;
}

extern "C" tinfer_gemm_bf16_path tinfer_gemm_bf16_choose(int64_t M, int64_t N, int64_t K) {
    const int f = gemm_force();
    if (f == 1) return TINFER_GEMM_BF16_PATH_GEMV;
    if (f >= 2) return TINFER_GEMM_BF16_PATH_GEMM;
    if (M <= TINFER_GEMM_BF16_GEMV_MAX_M) return TINFER_GEMM_BF16_PATH_GEMV;
    { /* rung 06 before rung 08 (bf16.h); SwiGLU is not known here: N counted as plain outputs */
        int major, n_sm;
        device_info(&major, &n_sm);
        if (major == 9 && tinfer_gemm_bf16_tiny_pick(M, N, K, 0, n_sm, NULL, NULL, NULL)) return TINFER_GEMM_BF16_PATH_GEMM;
    }
    if (stream_rung(M, N, K)) return TINFER_GEMM_BF16_PATH_GEMV;
    if (M <= TINFER_GEMM_BF16_SMALL_W_MAX_M && (M + 15) / 16 * N * K * 2 <= TINFER_GEMM_BF16_SMALL_W_TRAFFIC)
        return TINFER_GEMM_BF16_PATH_GEMV;
    return TINFER_GEMM_BF16_PATH_GEMM;
}

extern "C" tinfer_status tinfer_gemm_bf16(const tinfer_gemm_bf16_args *a, tinfer_gemm_bf16_path path,
                                          cudaStream_t stream, tinfer_err *err) {
    tinfer_status st = tinfer_gemm_bf16_check(a, "gemm_bf16", err);
    if (st != TINFER_OK) return st;
    if (path == TINFER_GEMM_BF16_PATH_AUTO) path = tinfer_gemm_bf16_choose(a->M, a->N, a->K);
    if (path == TINFER_GEMM_BF16_PATH_GEMV) {
        int major, n_sm;
        device_info(&major, &n_sm);
        return tinfer_gemv_bf16(tinfer_gemv_bf16_pick(a, major, n_sm), a, stream, err);
    }
    if (path != TINFER_GEMM_BF16_PATH_GEMM)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16: unknown path %d", (int)path);
    return tinfer_gemm_bf16_tc(gemm_rung(a), a, stream, err);
}

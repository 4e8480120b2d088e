/*
 * dispatch.cu — the BF16 GEMM entry points: the shared argument check, the prefill family's
 * entry (tinfer_gemm_bf16_tc) and the one call the runtime makes (tinfer_gemm_bf16), which
 * routes a call by its shape to a decode GEMV rung or a prefill GEMM rung.
 *
 * The route (tinfer_gemm_bf16_route_for: host arithmetic on the device's compute capability and
 * SM count, the same function the launch uses; every constant is in bf16.h with the sweep that
 * chose it; gemm/bench_bf16/ROUTES.md lists the route of every model shape on an H200).
 *
 * Step 1, the path of an AUTO call; the first rule that holds:
 *   1. M <= GEMV_MAX_M (8)                                       -> GEMV
 *   2. sm_90 and rung 06's pick takes the shape (N counted as plain outputs)     -> GEMM
 *   3. K <= SHORT_K (1024), and M <= STREAM_MAX_M (16) or M <= STREAM_PASS_MAX_M (64)
 *      with the weight re-read once per 16-token pass within STREAM_PASS_TRAFFIC  -> GEMV
 *   4. M <= SMALL_W_MAX_M (32) with that re-read within SMALL_W_TRAFFIC           -> GEMV
 *   5. otherwise                                                                  -> GEMM
 * Step 2a, the decode rung on the GEMV path (tinfer_gemv_bf16_pick):
 *   v1. sm_90, BULK_MIN_M..BULK_MAX_M tokens, no SwiGLU, K >= BULK_MIN_K, N <= 64 per SM -> 09
 *   v2. sm_90, K >= CLUSTER_MIN_K                                                   -> 06
 *   v3. rule 3's ground, or a short row (K <= SHORT_K) of a wide weight (N >= WIDE_N) -> 08
 *   v4. otherwise                                                                   -> 05
 * Step 2b, the prefill rung on the GEMM path:
 *   g1. not sm_90                                                                   -> 01 (WMMA)
 *   g2. rung 06's pick takes the call (tinfer_gemm_bf16_tiny_pick)                  -> 06
 *   g3. M <= SKINNY_MAX_M and a weight of at least SKINNY_MIN_W bytes               -> 05
 *   g4. rung 03's 128 x 256 tiles fill at least 1 / MMA_WGMMA_FILL_DIV of the SMs, or
 *       K > SPLIT_MAX_K, or more than SPLIT_MAX_TILES of them                       -> 03
 *   g5. M >= WGMMA_72_MIN_M, K < WGMMA_SPLIT_MIN_K and rung 03 takes 72 / 96-wide tiles -> 03
 *   g6. otherwise                                                                   -> 04
 * Each rung then picks its own tile, split-K factor and pipeline from the shape (its header).
 *
 * Debug switch (read once): TINFER_GEMM_FORCE=gemv|gemm forces the path of AUTO calls;
 * =mma|split|wgmma|skinny|tiny|wmma forces the GEMM path with that rung (02, 04, 03, 05, 06, 01).
 * An explicit path argument overrides the path; the rung switch still applies on the GEMM path.
 */
#include "gemm/bf16.h"
#include "gemm/cuda/bf16_epi.cuh"
#include "gemm/cuda/device.h"
#include "gemm/decode/gemv_bf16_internal.h"
#include "gemm/tc/gemm_bf16_tc_internal.h"

#include <stdio.h>
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
    if ((a->nx || a->nw || a->nss) &&
        (!a->nx || !a->nw || !a->nss || a->y_dtype != TINFER_DTYPE_F32 || a->swiglu || a->ldnx < a->N))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "%s: the split RMSNorm's producer needs nx, nw and nss, an F32 Y, no SwiGLU and "
                              "ldnx >= N (ldnx %lld, N %lld)",
                              who, (long long)a->ldnx, (long long)a->N);
    if (a->rss && (a->rn < 1 || !(a->reps >= 0.f)))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "%s: the split RMSNorm's consumer needs rn >= 1 and reps >= 0 (rn %d)",
                              who, (int)a->rn);
    return TINFER_OK;
}

/* One prefill rung on arguments that passed tinfer_gemm_bf16_check */
static tinfer_status tc_run(tinfer_gemm_bf16_kernel kernel, const tinfer_gemm_bf16_args *a, cudaStream_t stream,
                            tinfer_err *err) {
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

extern "C" tinfer_status tinfer_gemm_bf16_tc(tinfer_gemm_bf16_kernel kernel, const tinfer_gemm_bf16_args *a,
                                             cudaStream_t stream, tinfer_err *err) {
    const tinfer_status st = tinfer_gemm_bf16_check(a, "gemm_bf16", err);
    return st != TINFER_OK ? st : tc_run(kernel, a, stream, err);
}

/* TINFER_GEMM_FORCE, read once: 0 none, 1 gemv, 2 gemm, 3 gemm with rung 02 (mma), 4 with rung
 * 03 (wgmma), 5 with rung 01 (wmma), 6 with rung 04 (split: mma.sync split-K over a cluster), 7
 * with rung 05 (skinny: wgmma with the operands swapped), 8 with rung 06 (tiny: 05's form, one
 * tile per CTA, W multicast over token tiles). Any other value (f32: the CPU backend's GEMMs in
 * F32, gemm/cpu/gemm_cpu.c) forces nothing here. */
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

/* Rung 06's pick for a call's own outputs, computed at most once per route (it is asked by rule
 * 2, rule g2 and the route's description; 25-30 ns each on a desktop core). */
typedef struct tiny_choice {
    bool done;
    int32_t bt, split, stages, wgs;
} tiny_choice;
static int32_t tiny_of(const tinfer_gemm_bf16_args *a, int n_sm, tiny_choice *t) {
    if (!t->done) {
        t->bt = tinfer_gemm_bf16_tiny_pick(a->M, tinfer_gemm_bf16_nout(*a), a->K, a->swiglu, n_sm, &t->split, &t->stages,
                                           &t->wgs);
        t->done = true;
    }
    return t->bt;
}

/* Step 1: the path of an AUTO call (rules 1-5 in the header). SwiGLU is not known to the public
 * tinfer_gemm_bf16_choose, so rule 2 counts N as plain outputs for every call. */
static tinfer_gemm_bf16_path auto_path(const tinfer_gemm_bf16_args *a, int cc_major, int n_sm, tiny_choice *t) {
    const int64_t M = a->M, N = a->N, K = a->K;
    if (M <= TINFER_GEMM_BF16_GEMV_MAX_M) return TINFER_GEMM_BF16_PATH_GEMV;
    if (cc_major == 9 && (a->swiglu ? tinfer_gemm_bf16_tiny_pick(M, N, K, 0, n_sm, NULL, NULL, NULL) : tiny_of(a, n_sm, t)))
        return TINFER_GEMM_BF16_PATH_GEMM;
    if (stream_rung(M, N, K)) return TINFER_GEMM_BF16_PATH_GEMV;
    if (M <= TINFER_GEMM_BF16_SMALL_W_MAX_M && (M + 15) / 16 * N * K * 2 <= TINFER_GEMM_BF16_SMALL_W_TRAFFIC)
        return TINFER_GEMM_BF16_PATH_GEMV;
    return TINFER_GEMM_BF16_PATH_GEMM;
}

/* Step 2b: the prefill rung on the GEMM path (rules g1-g6 in the header) */
static tinfer_gemm_bf16_kernel gemm_rung(const tinfer_gemm_bf16_args *a, int cc_major, int n_sm, tiny_choice *t) {
    switch (gemm_force()) {
    case 3: return TINFER_GEMM_BF16_MMA_SYNC;
    case 4: return TINFER_GEMM_BF16_WGMMA_WS;
    case 5: return TINFER_GEMM_BF16_WMMA;
    case 6: return TINFER_GEMM_BF16_MMA_SPLITK;
    case 7: return TINFER_GEMM_BF16_WGMMA_SKINNY;
    case 8: return TINFER_GEMM_BF16_WGMMA_TINY;
    }
    if (cc_major != 9) return TINFER_GEMM_BF16_WMMA;
    if (tiny_of(a, n_sm, t)) return TINFER_GEMM_BF16_WGMMA_TINY;
    if (a->M <= TINFER_GEMM_BF16_SKINNY_MAX_M && a->N * a->K * 2 >= TINFER_GEMM_BF16_SKINNY_MIN_W)
        return TINFER_GEMM_BF16_WGMMA_SKINNY;
    const int64_t nout = tinfer_gemm_bf16_nout(*a);
    const int64_t bn = a->swiglu ? TINFER_GEMM_BF16_WGMMA_TILE_N / 2 : TINFER_GEMM_BF16_WGMMA_TILE_N;
    const int64_t tiles = ((a->M + TINFER_GEMM_BF16_WGMMA_TILE_M - 1) / TINFER_GEMM_BF16_WGMMA_TILE_M) *
                          ((nout + bn - 1) / bn);
    const bool few_tiles = tiles * TINFER_GEMM_BF16_MMA_WGMMA_FILL_DIV < (int64_t)n_sm;
    const bool split_pays = a->K <= TINFER_GEMM_BF16_SPLIT_MAX_K &&
                            tiles <= TINFER_GEMM_BF16_SPLIT_MAX_TILES;
    if (!few_tiles || !split_pays) return TINFER_GEMM_BF16_WGMMA_WS;
    /* rung 03's narrow tiles (128 x 72 or 96), unsplit (short K), beat rung 04 from M = 64 (bf16.h) */
    const bool narrow = a->M >= TINFER_GEMM_BF16_WGMMA_72_MIN_M && a->K < TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_K &&
                        tinfer_gemm_bf16_wgmma_narrow(a->M, nout, a->K, a->swiglu, n_sm) != 0;
    return narrow ? TINFER_GEMM_BF16_WGMMA_WS : TINFER_GEMM_BF16_MMA_SPLITK;
}

extern "C" tinfer_gemm_bf16_route tinfer_gemm_bf16_route_for(const tinfer_gemm_bf16_args *a, tinfer_gemm_bf16_path path,
                                                            int cc_major, int n_sm) {
    tinfer_gemm_bf16_route r;
    memset(&r, 0, sizeof r);
    tiny_choice t;
    memset(&t, 0, sizeof t);
    if (!a) return r; /* path 0 (AUTO): no route */
    if (path == TINFER_GEMM_BF16_PATH_AUTO) {
        const int f = gemm_force();
        path = f == 1 ? TINFER_GEMM_BF16_PATH_GEMV
               : f >= 2 ? TINFER_GEMM_BF16_PATH_GEMM
                        : auto_path(a, cc_major, n_sm, &t);
    }
    r.path = path;
    if (path == TINFER_GEMM_BF16_PATH_GEMV) {
        r.rung = (int32_t)tinfer_gemv_bf16_pick(a, cc_major, n_sm);
    } else if (path == TINFER_GEMM_BF16_PATH_GEMM) {
        r.rung = (int32_t)gemm_rung(a, cc_major, n_sm, &t);
        if (r.rung == TINFER_GEMM_BF16_WGMMA_TINY && tiny_of(a, n_sm, &t)) {
            r.tiny_bt = t.bt;
            r.tiny_split = t.split;
            r.tiny_stages = t.stages;
            r.tiny_wgs = t.wgs;
        }
    }
    return r;
}

extern "C" const char *tinfer_gemm_bf16_route_name(const tinfer_gemm_bf16_route *r, char *buf, size_t n) {
    if (!buf || n == 0) return "";
    int w;
    if (!r || r->path == TINFER_GEMM_BF16_PATH_AUTO) {
        w = snprintf(buf, n, "none");
    } else if (r->path == TINFER_GEMM_BF16_PATH_GEMV) {
        w = snprintf(buf, n, "gemv %02d", (int)r->rung);
    } else if (r->path != TINFER_GEMM_BF16_PATH_GEMM) {
        w = snprintf(buf, n, "path %d?", (int)r->path);
    } else if (r->rung != TINFER_GEMM_BF16_WGMMA_TINY || r->tiny_bt == 0) {
        w = snprintf(buf, n, "gemm %02d", (int)r->rung);
    } else {
        w = snprintf(buf, n, "gemm 06 t%d", (int)r->tiny_bt);
        if (w >= 0 && (size_t)w < n && r->tiny_split > 1)
            w += snprintf(buf + w, n - (size_t)w, " k/%d", (int)r->tiny_split);
        if (w >= 0 && (size_t)w < n && r->tiny_stages > 0)
            w += snprintf(buf + w, n - (size_t)w, " ring%d", (int)r->tiny_stages);
        if (w >= 0 && (size_t)w < n)
            w += snprintf(buf + w, n - (size_t)w, " wg%d", (int)r->tiny_wgs);
    }
    (void)w; /* snprintf truncates and terminates; a short buffer gets a prefix */
    return buf;
}

extern "C" tinfer_gemm_bf16_path tinfer_gemm_bf16_choose(int64_t M, int64_t N, int64_t K) {
    tinfer_gemm_bf16_args a;
    memset(&a, 0, sizeof a);
    a.M = M;
    a.N = N;
    a.K = K;
    int major, n_sm;
    device_info(&major, &n_sm);
    return tinfer_gemm_bf16_route_for(&a, TINFER_GEMM_BF16_PATH_AUTO, major, n_sm).path;
}

extern "C" tinfer_status tinfer_gemm_bf16(const tinfer_gemm_bf16_args *a, tinfer_gemm_bf16_path path,
                                          cudaStream_t stream, tinfer_err *err) {
    tinfer_status st = tinfer_gemm_bf16_check(a, "gemm_bf16", err);
    if (st != TINFER_OK) return st;
    if (path != TINFER_GEMM_BF16_PATH_AUTO && path != TINFER_GEMM_BF16_PATH_GEMV && path != TINFER_GEMM_BF16_PATH_GEMM)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16: unknown path %d", (int)path);
    int major, n_sm;
    device_info(&major, &n_sm);
    const tinfer_gemm_bf16_route r = tinfer_gemm_bf16_route_for(a, path, major, n_sm);
    /* the arguments were checked above */
    if (r.path == TINFER_GEMM_BF16_PATH_GEMV) return tinfer_gemv_bf16_run((tinfer_gemv_bf16_kernel)r.rung, a, stream, err);
    return tc_run((tinfer_gemm_bf16_kernel)r.rung, a, stream, err);
}

extern "C" int tinfer_gemm_bf16_split_norm_ok(const tinfer_gemm_bf16_args *a) {
    if (!a) return 0;
    int major, n_sm;
    device_info(&major, &n_sm);
    const tinfer_gemm_bf16_route r = tinfer_gemm_bf16_route_for(a, TINFER_GEMM_BF16_PATH_AUTO, major, n_sm);
    return r.path == TINFER_GEMM_BF16_PATH_GEMM && r.rung != TINFER_GEMM_BF16_WGMMA_WS;
}

extern "C" int tinfer_gemm_bf16_rmsnorm_ok(const tinfer_gemm_bf16_args *a) {
    if (!a || a->nx || a->rss || !tinfer_gemv_bf16_stream_norm_ok(a)) return 0;
    int major, n_sm;
    device_info(&major, &n_sm);
    const tinfer_gemm_bf16_route r = tinfer_gemm_bf16_route_for(a, TINFER_GEMM_BF16_PATH_AUTO, major, n_sm);
    return r.path == TINFER_GEMM_BF16_PATH_GEMV && r.rung == TINFER_GEMV_BF16_STREAM;
}

extern "C" tinfer_status tinfer_gemm_bf16_rmsnorm(const tinfer_gemm_bf16_args *a, const float *x, int64_t ldx,
                                                  const uint16_t *norm_w, float eps, cudaStream_t stream,
                                                  tinfer_err *err) {
    if (!a) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "gemm_bf16_rmsnorm: NULL arguments");
    /* the generic check on a copy whose X is x (16-byte aligned rows; the kernel reads only x) */
    tinfer_gemm_bf16_args c = *a;
    c.X = (const uint16_t *)x;
    c.ldx = (a->K + 7) / 8 * 8;
    tinfer_status st = tinfer_gemm_bf16_check(&c, "gemm_bf16_rmsnorm", err);
    if (st != TINFER_OK) return st;
    if (!tinfer_gemm_bf16_rmsnorm_ok(a))
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "gemm_bf16_rmsnorm: M=%lld N=%lld K=%lld does not run on decode rung 08 with M <= 8",
                              (long long)a->M, (long long)a->N, (long long)a->K);
    return tinfer_gemv_bf16_stream_norm(&c, x, ldx, norm_w, eps, stream, err);
}

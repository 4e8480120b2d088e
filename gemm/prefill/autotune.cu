/*
 * autotune.cu — the tuning cache (autotune.h) and the search.
 *
 * Search: for each shape and layout, every candidate that the resource model admits is timed
 * (1 warm-up, then the median of 5 launches timed with events; fewer when one launch takes
 * > 50 ms). Candidates: the rung-8 tile table (08_autotuned.cu), the rung-10 configurations,
 * and rung 11 (split-K, automatic slice count) when 128x128 tiles cover fewer than the SMs.
 * Resource model, per candidate on the running GPU:
 *   threads <= maxThreadsPerBlock; static shared memory <= 48 KB (rung 8, no opt-in) or
 *   dynamic <= sharedMemPerBlockOptin (rung 10); registers: cudaFuncGetAttributes numRegs x
 *   threads <= regsPerBlock; no local-memory spills (localSizeBytes == 0); at least one block
 *   per SM by registers, shared memory and threads.
 * Before that, the full rung-8 grid BM,BN in {64,128,256}, BK in {8,16,32}, TM,TN in
 * {4,8,16} is screened with the static part of the model (thread count 64..1024, shared
 * memory, an accumulator + fragment register estimate TM*TN + TM + TN + 24 <= 255, whole
 * float4 load loops), and the log says how many valid points are not instantiated.
 * Inputs are uniform in [-1, 1) from a counter hash (never zeros).
 */
#include "gemm/prefill/autotune.h"
#include "gemm/prefill/common.cuh"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct tune_entry {
    char gpu[128];
    char cls[48];
    int family; /* 0: overall winner (auto dispatch), 8: best rung-8 tile, 10: best rung-10 tile */
    int rung, config, splits;
    double gflops;
} tune_entry;

enum { TUNE_MAX = 1024 };
static tune_entry g_tab[TUNE_MAX];
static int g_n;

static int ceil_log2(int64_t x) {
    int b = 0;
    while (((int64_t)1 << b) < x) b++;
    return b;
}

extern "C" void tinfer_sgemm_shape_class(const tinfer_sgemm_args *a, char *buf, size_t n) {
    snprintf(buf, n, "%s.m%d.n%d.k%d.%c", a->trans_b ? "nt" : "nn", ceil_log2(a->M),
             ceil_log2(a->N), ceil_log2(a->K), tinfer_sgemm_vec_ok(a, 1) ? 'v' : 's');
}

static int device_name(char *buf, size_t n) {
    int dev = 0;
    cudaDeviceProp p;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    snprintf(buf, n, "%s", p.name);
    return 1;
}

/* Exact class, else the nearest class of the same layout and alignment within 2 buckets in
 * total (so a tuned square table also serves nearby rectangular shapes). */
extern "C" int tinfer_sgemm_tune_lookup(int family, const tinfer_sgemm_args *a, int *rung,
                                        int *config, int *splits) {
    if (g_n == 0) return 0;
    char gpu[128], cls[48];
    if (!device_name(gpu, sizeof gpu)) return 0;
    tinfer_sgemm_shape_class(a, cls, sizeof cls);
    int lm = ceil_log2(a->M), ln = ceil_log2(a->N), lk = ceil_log2(a->K);
    int best = -1, best_d = 3;
    for (int i = 0; i < g_n; i++) {
        const tune_entry *e = &g_tab[i];
        if (e->family != family || strcmp(e->gpu, gpu) != 0) continue;
        char lay[3], al;
        int em, en, ek;
        if (sscanf(e->cls, "%2[a-z].m%d.n%d.k%d.%c", lay, &em, &en, &ek, &al) != 5) continue;
        if (strncmp(lay, cls, 2) != 0 || al != cls[strlen(cls) - 1]) continue;
        const int d = abs(em - lm) + abs(en - ln) + abs(ek - lk);
        if (d < best_d) { best_d = d; best = i; }
    }
    if (best < 0) return 0;
    *rung = g_tab[best].rung;
    *config = g_tab[best].config;
    *splits = g_tab[best].splits;
    return 1;
}

extern "C" int tinfer_sgemm_tune_count(void) { return g_n; }

extern "C" tinfer_status tinfer_sgemm_tune_default_path(char *buf, size_t n, tinfer_err *err) {
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int w;
    if (x && *x)
        w = snprintf(buf, n, "%s/tinfer/sgemm-tune.json", x);
    else if (h && *h)
        w = snprintf(buf, n, "%s/.cache/tinfer/sgemm-tune.json", h);
    else
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "sgemm tune: neither XDG_CACHE_HOME nor HOME is set; pass a path");
    if (w < 0 || (size_t)w >= n)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "sgemm tune: cache path too long");
    return TINFER_OK;
}

extern "C" tinfer_status tinfer_sgemm_tune_load(const char *path, tinfer_err *err) {
    char def[1024];
    if (!path) {
        tinfer_status st = tinfer_sgemm_tune_default_path(def, sizeof def, err);
        if (st != TINFER_OK) return st;
        path = def;
    }
    FILE *f = fopen(path, "r");
    if (!f)
        return tinfer_err_set(err, TINFER_ERR_IO, "sgemm tune: cannot open '%s': %s", path,
                              strerror(errno));
    static tune_entry tmp[TUNE_MAX];
    int n = 0, lineno = 0;
    char line[512];
    tinfer_status st = TINFER_OK;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        const char *p = strstr(line, "{\"gpu\"");
        if (!p) continue; /* the enclosing {"version"...} and "]}" lines */
        if (n == TUNE_MAX) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT, "%s:%d: more than %d entries", path,
                                lineno, TUNE_MAX);
            break;
        }
        tune_entry *e = &tmp[n];
        if (sscanf(p,
                   "{\"gpu\": \"%127[^\"]\", \"class\": \"%47[^\"]\", \"family\": %d, \"rung\": "
                   "%d, \"config\": %d, \"splits\": %d, \"gflops\": %lf}",
                   e->gpu, e->cls, &e->family, &e->rung, &e->config, &e->splits,
                   &e->gflops) != 7 ||
            (e->family != 0 && e->family != 8 && e->family != 10) || e->rung < 1 ||
            e->rung >= TINFER_SGEMM_N_RUNGS || e->config < 0 || e->splits < 0) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT, "%s:%d: malformed tuning entry", path,
                                lineno);
            break;
        }
        const tinfer_sgemm_cfg *c = e->rung == TINFER_SGEMM_AUTOTUNED ? tinfer_sgemm_08_config(e->config)
                                    : tinfer_sgemm_10_config(e->config);
        if ((e->rung == TINFER_SGEMM_AUTOTUNED || e->rung == TINFER_SGEMM_PIPELINED ||
             e->rung == TINFER_SGEMM_SPLITK) && !c) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s:%d: config %d of rung %d is not in this build", path, lineno,
                                e->config, e->rung);
            break;
        }
        n++;
    }
    fclose(f);
    if (st != TINFER_OK) return st;
    memcpy(g_tab, tmp, sizeof(tune_entry) * (size_t)n);
    g_n = n;
    return TINFER_OK;
}

static tinfer_status mkdirs_for(const char *path, tinfer_err *err) {
    char d[1024];
    snprintf(d, sizeof d, "%s", path);
    for (char *p = d + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(d, 0755) != 0 && errno != EEXIST)
            return tinfer_err_set(err, TINFER_ERR_IO, "sgemm tune: cannot create '%s': %s", d,
                                  strerror(errno));
        *p = '/';
    }
    return TINFER_OK;
}

static tinfer_status save(const char *path, tinfer_err *err) {
    tinfer_status st = mkdirs_for(path, err);
    if (st != TINFER_OK) return st;
    FILE *f = fopen(path, "w");
    if (!f)
        return tinfer_err_set(err, TINFER_ERR_IO, "sgemm tune: cannot write '%s': %s", path,
                              strerror(errno));
    fprintf(f, "{\"version\": 1, \"entries\": [\n");
    for (int i = 0; i < g_n; i++)
        fprintf(f,
                "{\"gpu\": \"%s\", \"class\": \"%s\", \"family\": %d, \"rung\": %d, \"config\": "
                "%d, \"splits\": %d, \"gflops\": %.1f}%s\n",
                g_tab[i].gpu, g_tab[i].cls, g_tab[i].family, g_tab[i].rung, g_tab[i].config,
                g_tab[i].splits, g_tab[i].gflops, i + 1 < g_n ? "," : "");
    fprintf(f, "]}\n");
    if (fclose(f) != 0)
        return tinfer_err_set(err, TINFER_ERR_IO, "sgemm tune: error writing '%s'", path);
    return TINFER_OK;
}

static void put_entry(const char *gpu, const char *cls, int family, int rung, int config,
                      int splits, double gflops) {
    int i;
    for (i = 0; i < g_n; i++)
        if (g_tab[i].family == family && !strcmp(g_tab[i].gpu, gpu) && !strcmp(g_tab[i].cls, cls))
            break;
    if (i == g_n) {
        if (g_n == TUNE_MAX) return;
        g_n++;
    }
    tune_entry *e = &g_tab[i];
    snprintf(e->gpu, sizeof e->gpu, "%s", gpu);
    snprintf(e->cls, sizeof e->cls, "%s", cls);
    e->family = family; e->rung = rung; e->config = config; e->splits = splits;
    e->gflops = gflops;
}

static __global__ void tune_fill(float *p, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        p[i] = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

/* Static screen of one rung-8 grid point (see the file comment). */
static int r8_static_ok(int bm, int bn, int bk, int tm, int tn, size_t smem_static_max) {
    const int threads = (bm / tm) * (bn / tn);
    if (bm % tm || bn % tn || threads < 64 || threads > 1024) return 0;
    if ((size_t)bk * (bm + bn + 8) * sizeof(float) > smem_static_max) return 0;
    if (tm * tn + tm + tn + 24 > 255) return 0;
    if ((bm * bk / 4) % threads || (bn * bk / 4) % threads) return 0;
    return 1;
}

static int fits(const tinfer_sgemm_cfg *c, const void *kernel, const cudaDeviceProp *p,
                int dynamic_smem, char *why, size_t wn) {
    cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, kernel) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why, wn, "no kernel image");
        return 0;
    }
    const size_t smem_max = dynamic_smem ? p->sharedMemPerBlockOptin : 48 * 1024;
    if (c->threads > p->maxThreadsPerBlock) { snprintf(why, wn, "threads"); return 0; }
    if (c->smem_bytes > smem_max) { snprintf(why, wn, "smem %zu > %zu", c->smem_bytes, smem_max); return 0; }
    if ((int64_t)fa.numRegs * c->threads > p->regsPerBlock) {
        snprintf(why, wn, "regs %d x %d threads", fa.numRegs, c->threads);
        return 0;
    }
    if (fa.localSizeBytes > 0) { snprintf(why, wn, "spills %zu B", fa.localSizeBytes); return 0; }
    const int by_regs = p->regsPerMultiprocessor / (fa.numRegs * c->threads);
    const int by_smem = (int)(p->sharedMemPerMultiprocessor / (c->smem_bytes + 1024));
    const int by_thr = p->maxThreadsPerMultiProcessor / c->threads;
    const int occ = by_regs < by_smem ? (by_regs < by_thr ? by_regs : by_thr)
                                      : (by_smem < by_thr ? by_smem : by_thr);
    if (occ < 1) { snprintf(why, wn, "0 blocks/SM"); return 0; }
    snprintf(why, wn, "%d regs, %d blocks/SM", fa.numRegs, occ);
    return 1;
}

typedef struct tune_ctx {
    cudaStream_t s;
    cudaEvent_t e0, e1;
    tinfer_sgemm_args a;
} tune_ctx;

/* Median time in ms of one candidate; < 0 on a launch error (message in err). */
static double time_one(tune_ctx *t, int rung, int config, int splits, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    float ms[5];
    int n = 0;
    for (int it = 0; it < 6; it++) {
        TINFER_CUDA_TRY(err, cudaEventRecord(t->e0, t->s));
        tinfer_status st;
        if (rung == TINFER_SGEMM_AUTOTUNED) st = tinfer_sgemm_08_autotuned(&t->a, config, t->s, err);
        else if (rung == TINFER_SGEMM_SPLITK) st = tinfer_sgemm_11_splitk(&t->a, config, splits, t->s, err);
        else st = tinfer_sgemm_10_pipelined(&t->a, config, 1, t->s, err);
        if (st != TINFER_OK) return -1;
        TINFER_CUDA_TRY(err, cudaEventRecord(t->e1, t->s));
        TINFER_CUDA_TRY(err, cudaEventSynchronize(t->e1));
        float v;
        TINFER_CUDA_TRY(err, cudaEventElapsedTime(&v, t->e0, t->e1));
        if (it == 0) {
            if (v > 50.f) { ms[n++] = v; break; } /* slow candidate: one sample is enough */
            continue;
        }
        ms[n++] = v;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) { float x = ms[j]; ms[j] = ms[j - 1]; ms[j - 1] = x; }
    return ms[n / 2];
cleanup:
    return status == TINFER_OK ? 0.0 : -1.0; /* only reached on a CUDA error */
}

static void logf_(tinfer_sgemm_tune_log_fn log, void *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(tinfer_sgemm_tune_log_fn log, void *ctx, const char *fmt, ...) {
    if (!log) return;
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    log(ctx, b);
}

extern "C" tinfer_status tinfer_sgemm_tune(const int64_t (*shapes)[3], int n_shapes,
                                           const char *path, cudaStream_t stream,
                                           tinfer_sgemm_tune_log_fn log, void *log_ctx,
                                           tinfer_err *err) {
    static const int64_t k_default[][3] = {{256, 256, 256},    {512, 512, 512},
                                           {1024, 1024, 1024}, {2048, 2048, 2048},
                                           {4096, 4096, 4096}, {8192, 8192, 8192}};
    tinfer_status status = TINFER_OK;
    char def[1024], gpu[128];
    int64_t maxe = 0;
    float *A = NULL, *B = NULL, *C = NULL;
    tune_ctx t;
    memset(&t, 0, sizeof t);
    cudaDeviceProp prop;
    int dev = 0;
    if (!shapes) { shapes = k_default; n_shapes = (int)(sizeof k_default / sizeof k_default[0]); }
    if (n_shapes < 1) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "sgemm tune: no shapes");
    if (!path) {
        status = tinfer_sgemm_tune_default_path(def, sizeof def, err);
        if (status != TINFER_OK) return status;
        path = def;
    }
    /* Keep other GPUs' entries (and ours for shapes not re-tuned) from an existing file. */
    if (g_n == 0) (void)tinfer_sgemm_tune_load(path, NULL);
    TINFER_CUDA_TRY(err, cudaGetDevice(&dev));
    TINFER_CUDA_TRY(err, cudaGetDeviceProperties(&prop, dev));
    snprintf(gpu, sizeof gpu, "%s", prop.name);
    {
        int total = 0, valid = 0, compiled = 0;
        static const int bms[] = {64, 128, 256}, bks[] = {8, 16, 32}, tms[] = {4, 8, 16};
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 3; k++)
                    for (int u = 0; u < 3; u++)
                        for (int v = 0; v < 3; v++) {
                            total++;
                            if (!r8_static_ok(bms[i], bms[j], bks[k], tms[u], tms[v], 48 * 1024))
                                continue;
                            valid++;
                            for (int c = 0; c < tinfer_sgemm_08_n_configs(); c++) {
                                const tinfer_sgemm_cfg *g = tinfer_sgemm_08_config(c);
                                if (g->bm == bms[i] && g->bn == bms[j] && g->bk == bks[k] &&
                                    g->tm == tms[u] && g->tn == tms[v])
                                    compiled++;
                            }
                        }
        logf_(log, log_ctx,
              "tune: rung-8 grid %d points, %d pass the static resource model, %d of those "
              "instantiated (%d configs compiled); GPU '%s', %d SMs",
              total, valid, compiled, tinfer_sgemm_08_n_configs(), gpu, prop.multiProcessorCount);
    }
    maxe = 0;
    for (int i = 0; i < n_shapes; i++) {
        if (shapes[i][0] < 1 || shapes[i][1] < 1 || shapes[i][2] < 1 || shapes[i][0] > 65536 ||
            shapes[i][1] > 65536 || shapes[i][2] > 65536) {
            status = tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                                    "sgemm tune: shape %d out of range 1..65536", i);
            goto cleanup;
        }
        for (int j = 0; j < 3; j++) {
            const int64_t e = shapes[i][j] * shapes[i][(j + 1) % 3];
            if (e > maxe) maxe = e;
        }
    }
    TINFER_CUDA_TRY(err, cudaMalloc((void **)&A, (size_t)maxe * sizeof(float)));
    TINFER_CUDA_TRY(err, cudaMalloc((void **)&B, (size_t)maxe * sizeof(float)));
    TINFER_CUDA_TRY(err, cudaMalloc((void **)&C, (size_t)maxe * sizeof(float)));
    tune_fill<<<1024, 256, 0, stream>>>(A, (size_t)maxe, 1u);
    tune_fill<<<1024, 256, 0, stream>>>(B, (size_t)maxe, 2u);
    tune_fill<<<1024, 256, 0, stream>>>(C, (size_t)maxe, 3u);
    TINFER_CUDA_LAUNCH_CHECK(err, "tune_fill");
    TINFER_CUDA_TRY(err, cudaEventCreate(&t.e0));
    TINFER_CUDA_TRY(err, cudaEventCreate(&t.e1));
    t.s = stream;
    for (int si = 0; si < n_shapes; si++) {
        for (int tb = 0; tb < 2; tb++) {
            const int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
            t.a.trans_b = tb;
            t.a.M = (int32_t)M; t.a.N = (int32_t)N; t.a.K = (int32_t)K;
            t.a.alpha = 1.f; t.a.beta = 0.f;
            t.a.A = A; t.a.lda = K; t.a.B = B; t.a.ldb = tb ? K : N; t.a.C = C; t.a.ldc = N;
            char cls[48];
            tinfer_sgemm_shape_class(&t.a, cls, sizeof cls);
            const double flop = 2.0 * (double)M * (double)N * (double)K;
            double best8 = 1e30, best = 1e30, best10 = 1e30;
            int b8c = 0, br = 10, bc = 0, bs = 1, b10c = 0;
            char why[96];
            for (int c = 0; c < tinfer_sgemm_08_n_configs(); c++) {
                const tinfer_sgemm_cfg *g = tinfer_sgemm_08_config(c);
                if (!fits(g, tb ? g->kernel_nt : g->kernel_nn, &prop, 0, why, sizeof why)) {
                    logf_(log, log_ctx, "tune %s r8 cfg%d %dx%dx%d %dx%d: pruned (%s)", cls, c,
                          g->bm, g->bn, g->bk, g->tm, g->tn, why);
                    continue;
                }
                const double ms = time_one(&t, 8, c, 1, err);
                if (ms < 0) { status = TINFER_ERR_CUDA; goto cleanup; }
                logf_(log, log_ctx, "tune %s r8 cfg%d %dx%dx%d %dx%d (%s): %.1f GFLOP/s", cls, c,
                      g->bm, g->bn, g->bk, g->tm, g->tn, why, flop / ms / 1e6);
                if (ms < best8) { best8 = ms; b8c = c; }
                if (ms < best) { best = ms; br = 8; bc = c; bs = 1; }
            }
            const int64_t tiles = ((M + 127) / 128) * ((N + 127) / 128);
            for (int c = 0; c < tinfer_sgemm_10_n_configs(); c++) {
                const tinfer_sgemm_cfg *g = tinfer_sgemm_10_config(c);
                if (!fits(g, tb ? g->kernel_nt : g->kernel_nn, &prop, 1, why, sizeof why)) {
                    logf_(log, log_ctx, "tune %s r10 cfg%d %dx%dx%d: pruned (%s)", cls, c, g->bm,
                          g->bn, g->bk, why);
                    continue;
                }
                for (int sk = 0; sk < 2; sk++) {
                    if (sk && !(tiles < prop.multiProcessorCount && K >= 1024)) continue;
                    const int rung = sk ? 11 : 10;
                    const double ms = time_one(&t, rung, c, sk ? 0 : 1, err);
                    if (ms < 0) { status = TINFER_ERR_CUDA; goto cleanup; }
                    logf_(log, log_ctx,
                          "tune %s r%d cfg%d %dx%dx%d warp %dx%d thr %dx%d st%d (%s): %.1f GFLOP/s",
                          cls, rung, c, g->bm, g->bn, g->bk, g->wm, g->wn, g->tm, g->tn, g->stages,
                          why, flop / ms / 1e6);
                    if (ms < best) { best = ms; br = rung; bc = c; bs = sk ? 0 : 1; }
                    if (!sk && ms < best10) { best10 = ms; b10c = c; }
                }
            }
            put_entry(gpu, cls, 8, 8, b8c, 1, flop / best8 / 1e6);
            put_entry(gpu, cls, 0, br, bc, bs, flop / best / 1e6);
            if (best10 < 1e30) put_entry(gpu, cls, 10, 10, b10c, 1, flop / best10 / 1e6);
            logf_(log, log_ctx, "tune %s: winner rung %d cfg%d (%.1f GFLOP/s), rung-8 best cfg%d",
                  cls, br, bc, flop / best / 1e6, b8c);
        }
    }
    status = save(path, err);
cleanup:
    if (t.e0) cudaEventDestroy(t.e0);
    if (t.e1) cudaEventDestroy(t.e1);
    cudaFree(A);
    cudaFree(B);
    cudaFree(C);
    return status;
}

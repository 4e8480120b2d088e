/*
 * fp32.c — the FP32 SGEMM ladder benchmark (tinfer-bench-gemm without a subcommand).
 *
 * For each size and layout: fills several input sets on the device (uniform [-1,1), never
 * zeros) so that the sets together exceed twice the L2 and consecutive launches read cold
 * inputs; runs cuBLAS SGEMM (CUBLAS_DEFAULT_MATH: TF32 off; a warning is printed when
 * NVIDIA_TF32_OVERRIDE is set) as the reference and as the 100% line of the same run; checks
 * cuBLAS itself on 32 sampled outputs against a double-precision dot product; verifies each
 * rung against cuBLAS before timing; warms up; times each launch with its own pair of CUDA
 * events, rotating input sets; reports the median. Roofline position: arithmetic intensity
 * 2MNK / (4(MK + KN + MN)) FLOP/byte (each operand read once, C written once; beta = 0)
 * against the ridge point peak FP32 / memory bandwidth of the device.
 * Output: a table on stdout (last), --json FILE (every measurement), --png FILE (GFLOP/s vs
 * size per rung, square NN sizes). --tune runs the autotuner and writes its cache.
 */
#include "examples/bench_gemm/chart.h"
#include "examples/bench_gemm/fill.h"
#include "gemm/cuda/device.h"
#include "gemm/prefill/autotune.h"
#include "gemm/sgemm.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "error: %s: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__,    \
                    __LINE__);                                                                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CKB(call)                                                                                  \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            fprintf(stderr, "error: %s: cuBLAS status %d (%s:%d)\n", #call, (int)s_, __FILE__,     \
                    __LINE__);                                                                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

enum { RUNG_CUBLAS = 0, MAX_RUNGS = TINFER_SGEMM_N_RUNGS, MAX_SIZES = 64, MAX_RESULTS = 4096 };

/* Verification bound for a rung against cuBLAS: both are FP32 sums of K products whose
 * normwise relative error is ~sqrt(K)*2^-24 for random inputs (3e-6 at K = 8192, measured
 * ~1e-6 on the H200); TF32 would give ~3e-4, an indexing bug O(1). 1e-4 sits
 * between with an order of magnitude on each side. */
#define VERIFY_TOL 1e-4

typedef struct result {
    int rung; /* 0 = cuBLAS */
    int trans_b;
    int64_t m, n, k;
    double ms, gflops, pct_cublas, ai, gbs, rel_err;
    int verified; /* 1 ok, 0 failed, -1 not checked (cuBLAS is the reference) */
    int iters;
} result;

typedef struct opts {
    int rungs[MAX_RUNGS + 1];
    int n_rungs;
    int64_t sizes[MAX_SIZES][3];
    int n_sizes;
    int layouts[2];
    int n_layouts;
    const char *json, *png, *tune_file;
    int tune, tune_only;
    int64_t max_slow; /* largest M*N*K^(1/3) for rungs 1..3 */
    double cap_s;     /* timing budget per (rung, size) */
    int min_iters, max_iters;
} opts;

static result g_res[MAX_RESULTS];
static int g_nres;

static void usage(void) {
    printf("usage: tinfer-bench-gemm [--rung N|all|cublas[,..]] [--m M --n N --k K]\n"
           "         [--sizes S1,S2,..] [--sweep] [--layout nn|nt|both] [--json FILE]\n"
           "         [--png FILE] [--tune] [--tune-only] [--tune-file PATH] [--max-slow N]\n"
           "         [--cap SECONDS] [--iters MIN,MAX]\n"
           "       tinfer-bench-gemm bf16 ...   (the BF16 tensor-core benchmark; its --help lists the\n"
           "                                    measurement knobs: --gemv-pdl, --gemm-wgmma-epi, ...)\n"
           "       tinfer-bench-gemm route [--cc C] [--sm N] (M N K [swiglu] | --table)\n"
           "                                    (the BF16 dispatcher's kernel for a shape; no GPU needed)\n"
           "Rungs: 0/cublas, 1..%d; 'all' = cuBLAS + every rung. --sweep adds square sizes\n"
           "128..8192 (powers of two). Rungs 1-3 skip sizes above --max-slow (default 4096).\n",
           MAX_RUNGS - 1);
}

static int parse_rungs(opts *o, const char *s) {
    o->n_rungs = 0;
    if (!strcmp(s, "all")) {
        for (int r = 0; r < MAX_RUNGS; r++) o->rungs[o->n_rungs++] = r;
        return 0;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int r;
        if (!strcmp(tok, "cublas")) r = 0;
        else {
            char *end;
            long v = strtol(tok, &end, 10);
            if (*end || v < 0 || v >= MAX_RUNGS) return -1;
            r = (int)v;
        }
        if (o->n_rungs <= MAX_RUNGS) o->rungs[o->n_rungs++] = r;
    }
    return o->n_rungs ? 0 : -1;
}

static int add_size(opts *o, int64_t m, int64_t n, int64_t k) {
    if (m < 1 || n < 1 || k < 1 || m > 65536 || n > 65536 || k > 65536) return -1;
    for (int i = 0; i < o->n_sizes; i++)
        if (o->sizes[i][0] == m && o->sizes[i][1] == n && o->sizes[i][2] == k) return 0;
    if (o->n_sizes == MAX_SIZES) return -1;
    o->sizes[o->n_sizes][0] = m;
    o->sizes[o->n_sizes][1] = n;
    o->sizes[o->n_sizes][2] = k;
    o->n_sizes++;
    return 0;
}

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

typedef struct bufs {
    int n_sets;
    float **A, **B, **C;
    float *Cref;
    size_t ea, eb, ec;
} bufs;

static void cublas_sgemm(cublasHandle_t h, int tb, int64_t M, int64_t N, int64_t K,
                         const float *A, const float *B, float *C) {
    /* Row-major C = A op(B) is column-major C^T = op(B)^T A^T: swap the operands. */
    const float one = 1.f, zero = 0.f;
    CKB(cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)M, (int)K, &one,
                    B, tb ? (int)K : (int)N, A, (int)K, &zero, C, (int)N));
}

static int launch(int rung, cublasHandle_t h, int tb, int64_t M, int64_t N, int64_t K,
                  const float *A, const float *B, float *C, cudaStream_t s) {
    if (rung == RUNG_CUBLAS) {
        cublas_sgemm(h, tb, M, N, K, A, B, C);
        return 0;
    }
    tinfer_err err;
    if (tinfer_sgemm(rung, tb, M, N, K, 1.f, A, K, B, tb ? K : N, 0.f, C, N, s, &err) !=
        TINFER_OK) {
        fprintf(stderr, "error: rung %d: %s\n", rung, err.msg);
        return -1;
    }
    return 0;
}

static double rel_err_host(const float *c, const float *r, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)c[i] - (double)r[i];
        if (!isfinite(c[i])) return INFINITY;
        num += d * d;
        den += (double)r[i] * r[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* cuBLAS itself against double dot products at 32 sampled outputs: max over samples of
 * |c - ref| / sum_k |a_ik b_kj|, compared with gamma_K = K u / (1 - K u), u = 2^-24 (the
 * classic worst-case bound for any summation order, Higham, Accuracy and Stability, 3.1).
 * TF32 (10-bit mantissa inputs) breaks it by orders of magnitude at these sizes. */
static int check_cublas(const bufs *b, int tb, int64_t M, int64_t N, int64_t K, double *worst) {
    float *arow = malloc((size_t)K * sizeof(float)), *bcol = malloc((size_t)K * sizeof(float));
    if (!arow || !bcol) { free(arow); free(bcol); return -1; }
    const double u = ldexp(1.0, -24), gamma = K * u / (1 - K * u);
    *worst = 0;
    for (int s = 0; s < 32; s++) {
        int64_t i = (int64_t)((s * 2654435761u) % (uint64_t)M), j = (int64_t)((s * 40503u + 7) % (uint64_t)N);
        float c;
        CK(cudaMemcpy(arow, b->A[0] + i * K, (size_t)K * sizeof(float), cudaMemcpyDeviceToHost));
        if (tb)
            CK(cudaMemcpy(bcol, b->B[0] + j * K, (size_t)K * sizeof(float), cudaMemcpyDeviceToHost));
        else
            CK(cudaMemcpy2D(bcol, sizeof(float), b->B[0] + j, (size_t)N * sizeof(float),
                            sizeof(float), (size_t)K, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&c, b->Cref + i * N + j, sizeof(float), cudaMemcpyDeviceToHost));
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < K; k++) {
            ref += (double)arow[k] * bcol[k];
            mag += fabs((double)arow[k] * bcol[k]);
        }
        double r = fabs(c - ref) / (mag > 0 ? mag : 1);
        if (r > *worst) *worst = r;
    }
    free(arow);
    free(bcol);
    return *worst <= gamma ? 0 : 1;
}

static double peak_gflops(const tinfer_device_info *info) {
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, info->device) != cudaSuccess) {
        (void)cudaGetLastError();
        khz = 1980000; /* H200 boost clock (nvidia-smi after a GEMM) */
    }
    /* 128 FP32 FMA lanes per SM on sm_80/86/89/90 (CUDA programming guide, arithmetic
     * instruction throughput table), 2 FLOP each. */
    return info->n_sm * 128.0 * 2.0 * khz * 1e3 / 1e9;
}

static void tune_log(void *ctx, const char *line) {
    (void)ctx;
    printf("%s\n", line);
    fflush(stdout);
}

int tinfer_bench_gemm_fp32(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    parse_rungs(&o, "all");
    o.max_slow = 4096;
    o.cap_s = 0.5;
    o.min_iters = 5;
    o.max_iters = 200;
    o.layouts[0] = 0;
    o.n_layouts = 1;
    int64_t m = 0, n = 0, k = 0;
    int sweep = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_V                                                                                     \
    if (!v) { fprintf(stderr, "error: %s needs a value\n", a); return 2; }                        \
    i++;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(); return 0; }
        else if (!strcmp(a, "--rung")) { NEED_V if (parse_rungs(&o, v)) { fprintf(stderr, "error: bad --rung '%s'\n", v); return 2; } }
        else if (!strcmp(a, "--m")) { NEED_V m = atoll(v); }
        else if (!strcmp(a, "--n")) { NEED_V n = atoll(v); }
        else if (!strcmp(a, "--k")) { NEED_V k = atoll(v); }
        else if (!strcmp(a, "--sweep")) sweep = 1;
        else if (!strcmp(a, "--sizes")) {
            NEED_V
            char buf[512];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
                int64_t s = atoll(t);
                if (add_size(&o, s, s, s)) { fprintf(stderr, "error: bad size '%s'\n", t); return 2; }
            }
        }
        else if (!strcmp(a, "--layout")) {
            NEED_V
            if (!strcmp(v, "nn")) { o.layouts[0] = 0; o.n_layouts = 1; }
            else if (!strcmp(v, "nt")) { o.layouts[0] = 1; o.n_layouts = 1; }
            else if (!strcmp(v, "both")) { o.layouts[0] = 0; o.layouts[1] = 1; o.n_layouts = 2; }
            else { fprintf(stderr, "error: --layout nn|nt|both, got '%s'\n", v); return 2; }
        }
        else if (!strcmp(a, "--json")) { NEED_V o.json = v; }
        else if (!strcmp(a, "--png")) { NEED_V o.png = v; }
        else if (!strcmp(a, "--tune")) o.tune = 1;
        else if (!strcmp(a, "--tune-only")) { o.tune = 1; o.tune_only = 1; }
        else if (!strcmp(a, "--tune-file")) { NEED_V o.tune_file = v; }
        else if (!strcmp(a, "--max-slow")) { NEED_V o.max_slow = atoll(v); }
        else if (!strcmp(a, "--cap")) { NEED_V o.cap_s = atof(v); }
        else if (!strcmp(a, "--iters")) {
            NEED_V
            if (sscanf(v, "%d,%d", &o.min_iters, &o.max_iters) != 2 || o.min_iters < 1 ||
                o.max_iters < o.min_iters) { fprintf(stderr, "error: --iters MIN,MAX\n"); return 2; }
        }
        else { fprintf(stderr, "error: unknown option '%s' (--help)\n", a); return 2; }
#undef NEED_V
    }
    if (m || n || k) {
        if (add_size(&o, m ? m : 4096, n ? n : 4096, k ? k : 4096)) {
            fprintf(stderr, "error: --m/--n/--k out of range 1..65536\n");
            return 2;
        }
    }
    if (sweep)
        for (int64_t s = 128; s <= 8192; s *= 2) add_size(&o, s, s, s);
    if (o.n_sizes == 0) add_size(&o, 4096, 4096, 4096);

    tinfer_device_info info;
    tinfer_err err;
    tinfer_status st = tinfer_device_probe(0, &info, &err);
    if (st != TINFER_OK) {
        fprintf(stderr, "error: %s\n", err.msg);
        return st == TINFER_ERR_NO_DEVICE ? 77 : 1;
    }
    const double peak = peak_gflops(&info), bw = info.mem_bw_gbs;
    printf("device: %s, sm_%d%d, %d SMs, L2 %zu MiB, peak FP32 %.0f GFLOP/s (clock x SMs x 128 "
           "x 2), memory %.0f GB/s (clock x bus), ridge %.1f FLOP/byte\n",
           info.name, info.cc_major, info.cc_minor, info.n_sm, info.l2_bytes >> 20, peak, bw,
           peak / bw);
    if (getenv("NVIDIA_TF32_OVERRIDE"))
        printf("warning: NVIDIA_TF32_OVERRIDE is set; cuBLAS may not be plain FP32\n");

    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    st = tinfer_sgemm_tune_load(o.tune_file, &err);
    printf("tuning cache: %s\n", st == TINFER_OK ? "loaded" : err.msg);
    if (o.tune) {
        if (tinfer_sgemm_tune(NULL, 0, o.tune_file, s, tune_log, NULL, &err) != TINFER_OK) {
            fprintf(stderr, "error: %s\n", err.msg);
            return 1;
        }
        printf("tuning cache written (%d entries)\n", tinfer_sgemm_tune_count());
        if (o.tune_only) return 0;
    }
    cublasHandle_t h;
    CKB(cublasCreate(&h));
    CKB(cublasSetStream(h, s));
    CKB(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));

    int failures = 0;
    cudaEvent_t *ev = malloc(sizeof(cudaEvent_t) * 2 * (size_t)o.max_iters);
    float *times = malloc(sizeof(float) * (size_t)o.max_iters);
    if (!ev || !times) { fprintf(stderr, "error: out of host memory\n"); return 1; }
    for (int i = 0; i < 2 * o.max_iters; i++) CK(cudaEventCreate(&ev[i]));

    for (int si = 0; si < o.n_sizes; si++) {
        const int64_t M = o.sizes[si][0], N = o.sizes[si][1], K = o.sizes[si][2];
        for (int li = 0; li < o.n_layouts; li++) {
            const int tb = o.layouts[li];
            bufs b;
            memset(&b, 0, sizeof b);
            b.ea = (size_t)M * K; b.eb = (size_t)K * N; b.ec = (size_t)M * N;
            const size_t set_bytes = (b.ea + b.eb + b.ec) * sizeof(float);
            size_t free_b = 0, total_b = 0;
            CK(cudaMemGetInfo(&free_b, &total_b));
            b.n_sets = (int)((2 * info.l2_bytes + set_bytes - 1) / set_bytes) + 1;
            if (b.n_sets < 2) b.n_sets = 2;
            if (b.n_sets > 64) b.n_sets = 64;
            while (b.n_sets > 1 && (size_t)b.n_sets * set_bytes + b.ec * 4 > free_b / 2) b.n_sets--;
            b.A = calloc((size_t)b.n_sets, sizeof(float *));
            b.B = calloc((size_t)b.n_sets, sizeof(float *));
            b.C = calloc((size_t)b.n_sets, sizeof(float *));
            for (int j = 0; j < b.n_sets; j++) {
                CK(cudaMalloc((void **)&b.A[j], b.ea * sizeof(float)));
                CK(cudaMalloc((void **)&b.B[j], b.eb * sizeof(float)));
                CK(cudaMalloc((void **)&b.C[j], b.ec * sizeof(float)));
                if (tinfer_bench_fill_uniform(b.A[j], b.ea, 2u * j + 1, s) ||
                    tinfer_bench_fill_uniform(b.B[j], b.eb, 2u * j + 2, s) ||
                    tinfer_bench_fill_uniform(b.C[j], b.ec, 999u, s)) {
                    fprintf(stderr, "error: fill kernel failed\n");
                    return 1;
                }
            }
            CK(cudaMalloc((void **)&b.Cref, b.ec * sizeof(float)));
            cublas_sgemm(h, tb, M, N, K, b.A[0], b.B[0], b.Cref);
            CK(cudaStreamSynchronize(s));
            float *hc = malloc(b.ec * sizeof(float)), *hr = malloc(b.ec * sizeof(float));
            if (!hc || !hr) { fprintf(stderr, "error: out of host memory\n"); return 1; }
            CK(cudaMemcpy(hr, b.Cref, b.ec * sizeof(float), cudaMemcpyDeviceToHost));
            double cw = 0;
            int cb = check_cublas(&b, tb, M, N, K, &cw);
            printf("size %lldx%lldx%lld %s: %d input sets (%.0f MiB each), cuBLAS sampled error "
                   "%.2e of sum|ab| (%s)\n",
                   (long long)M, (long long)N, (long long)K, tb ? "NT" : "NN", b.n_sets,
                   set_bytes / 1048576.0, cw, cb == 0 ? "within gamma_K" : "OVER gamma_K");
            if (cb) failures++;
            const double flop = 2.0 * M * N * K;
            const double bytes = 4.0 * (double)(b.ea + b.eb + b.ec);
            double cublas_gf = 0;
            for (int ri = 0; ri < o.n_rungs; ri++) {
                const int r = o.rungs[ri];
                const double edge = cbrt((double)M * N * K);
                if (r >= 1 && r <= 3 && edge > (double)o.max_slow) continue;
                result *res = &g_res[g_nres < MAX_RESULTS ? g_nres : MAX_RESULTS - 1];
                memset(res, 0, sizeof *res);
                res->rung = r; res->trans_b = tb; res->m = M; res->n = N; res->k = K;
                res->verified = -1;
                if (r != RUNG_CUBLAS) {
                    CK(cudaMemset(b.C[0], 0xff, b.ec * sizeof(float))); /* NaN poison */
                    if (launch(r, h, tb, M, N, K, b.A[0], b.B[0], b.C[0], s)) { failures++; continue; }
                    CK(cudaStreamSynchronize(s));
                    CK(cudaMemcpy(hc, b.C[0], b.ec * sizeof(float), cudaMemcpyDeviceToHost));
                    res->rel_err = rel_err_host(hc, hr, b.ec);
                    res->verified = res->rel_err <= VERIFY_TOL;
                    if (!res->verified) {
                        failures++;
                        printf("FAIL rung %s %s %lldx%lldx%lld: rel err %.3e > %.0e\n",
                               tinfer_sgemm_rung_name(r), tb ? "NT" : "NN", (long long)M,
                               (long long)N, (long long)K, res->rel_err, VERIFY_TOL);
                    }
                }
                /* warm-up, then size the run from one timed launch */
                CK(cudaEventRecord(ev[0], s));
                if (launch(r, h, tb, M, N, K, b.A[0], b.B[0], b.C[0], s)) { failures++; continue; }
                CK(cudaEventRecord(ev[1], s));
                CK(cudaEventSynchronize(ev[1]));
                float t0;
                CK(cudaEventElapsedTime(&t0, ev[0], ev[1]));
                int iters = (int)(o.cap_s * 1e3 / (t0 > 1e-3f ? t0 : 1e-3f));
                if (iters < o.min_iters) iters = o.min_iters;
                if (iters > o.max_iters) iters = o.max_iters;
                for (int it = 0; it < iters; it++) {
                    const int j = (it + 1) % b.n_sets;
                    CK(cudaEventRecord(ev[2 * it], s));
                    if (launch(r, h, tb, M, N, K, b.A[j], b.B[j], b.C[j], s)) { failures++; break; }
                    CK(cudaEventRecord(ev[2 * it + 1], s));
                }
                CK(cudaStreamSynchronize(s));
                for (int it = 0; it < iters; it++)
                    CK(cudaEventElapsedTime(&times[it], ev[2 * it], ev[2 * it + 1]));
                qsort(times, (size_t)iters, sizeof(float), cmp_f);
                res->ms = times[iters / 2];
                res->iters = iters;
                res->gflops = flop / (res->ms * 1e6);
                res->ai = flop / bytes;
                res->gbs = bytes / (res->ms * 1e6);
                if (r == RUNG_CUBLAS) cublas_gf = res->gflops;
                if (g_nres < MAX_RESULTS) g_nres++;
            }
            /* % of cuBLAS for this size/layout */
            for (int i = 0; i < g_nres; i++)
                if (g_res[i].m == M && g_res[i].n == N && g_res[i].k == K && g_res[i].trans_b == tb)
                    g_res[i].pct_cublas = cublas_gf > 0 ? 100.0 * g_res[i].gflops / cublas_gf : 0;
            free(hc);
            free(hr);
            for (int j = 0; j < b.n_sets; j++) {
                cudaFree(b.A[j]);
                cudaFree(b.B[j]);
                cudaFree(b.C[j]);
            }
            cudaFree(b.Cref);
            free(b.A); free(b.B); free(b.C);
        }
    }

    if (o.json) {
        FILE *f = fopen(o.json, "w");
        if (!f) { fprintf(stderr, "error: cannot write '%s'\n", o.json); return 1; }
        char date[32];
        time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        fprintf(f, "{\"gpu\": \"%s\", \"sm\": \"%d%d\", \"n_sm\": %d, \"date\": \"%s\",\n"
                   " \"cublas_math\": \"CUBLAS_DEFAULT_MATH (TF32 off)\", \"peak_fp32_gflops\": %.0f,"
                   " \"mem_bw_gbs\": %.0f, \"ridge_flop_per_byte\": %.2f,\n \"results\": [\n",
                info.name, info.cc_major, info.cc_minor, info.n_sm, date, peak, bw, peak / bw);
        for (int i = 0; i < g_nres; i++) {
            const result *r = &g_res[i];
            fprintf(f,
                    "  {\"rung\": %d, \"name\": \"%s\", \"technique\": \"%s\", \"layout\": \"%s\", "
                    "\"m\": %lld, \"n\": %lld, \"k\": %lld, \"ms\": %.5f, \"gflops\": %.1f, "
                    "\"pct_cublas\": %.2f, \"ai\": %.2f, \"gbs\": %.1f, \"bound\": \"%s\", "
                    "\"rel_err\": %.3e, \"verified\": %s, \"iters\": %d}%s\n",
                    r->rung, r->rung ? tinfer_sgemm_rung_name(r->rung) : "cublas",
                    r->rung ? tinfer_sgemm_rung_technique(r->rung) : "cuBLAS SGEMM (FP32)",
                    r->trans_b ? "nt" : "nn", (long long)r->m, (long long)r->n, (long long)r->k,
                    r->ms, r->gflops, r->pct_cublas, r->ai, r->gbs,
                    r->ai < peak / bw ? "memory" : "compute", r->rel_err,
                    r->verified < 0 ? "null" : r->verified ? "true" : "false", r->iters,
                    i + 1 < g_nres ? "," : "");
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    if (o.png) {
        static double xs[MAX_RUNGS][MAX_SIZES], ys[MAX_RUNGS][MAX_SIZES];
        static char names[MAX_RUNGS][48];
        tinfer_chart_series ser[MAX_RUNGS];
        int ns = 0;
        for (int ri = 0; ri < o.n_rungs; ri++) {
            const int r = o.rungs[ri];
            int np = 0;
            for (int i = 0; i < g_nres && np < MAX_SIZES; i++) {
                const result *q = &g_res[i];
                if (q->rung != r || q->trans_b || q->m != q->n || q->n != q->k) continue;
                xs[ns][np] = (double)q->m;
                ys[ns][np] = q->gflops;
                np++;
            }
            if (!np) continue;
            /* sort by x so lines run left to right */
            for (int a = 1; a < np; a++)
                for (int c = a; c > 0 && xs[ns][c] < xs[ns][c - 1]; c--) {
                    double t = xs[ns][c]; xs[ns][c] = xs[ns][c - 1]; xs[ns][c - 1] = t;
                    t = ys[ns][c]; ys[ns][c] = ys[ns][c - 1]; ys[ns][c - 1] = t;
                }
            snprintf(names[ns], sizeof names[ns], "%s", r ? tinfer_sgemm_rung_name(r) : "cuBLAS");
            ser[ns].name = names[ns]; ser[ns].x = xs[ns]; ser[ns].y = ys[ns]; ser[ns].n = np;
            ns++;
        }
        char title[400], eb[256];
        snprintf(title, sizeof title, "FP32 SGEMM ladder vs cuBLAS, %s (NN, square)", info.name);
        tinfer_chart_spec spec = {title, "M = N = K", "GFLOP/s", 1, 0, 1100, 680};
        if (tinfer_chart_write_png(o.png, &spec, ser, ns, eb, sizeof eb)) {
            fprintf(stderr, "error: %s\n", eb);
            failures++;
        }
    }
    printf("\n%-16s %-3s %6s %6s %6s %10s %9s %8s %7s %8s %s\n", "rung", "lay", "M", "N", "K",
           "ms", "GFLOP/s", "%cuBLAS", "AI", "bound", "check");
    for (int i = 0; i < g_nres; i++) {
        const result *r = &g_res[i];
        printf("%-16s %-3s %6lld %6lld %6lld %10.4f %9.1f %7.1f%% %7.1f %8s %s\n",
               r->rung ? tinfer_sgemm_rung_name(r->rung) : "cublas", r->trans_b ? "nt" : "nn",
               (long long)r->m, (long long)r->n, (long long)r->k, r->ms, r->gflops, r->pct_cublas,
               r->ai, r->ai < peak / bw ? "memory" : "compute",
               r->verified < 0 ? "ref" : r->verified ? "ok" : "FAIL");
    }
    cublasDestroy(h);
    cudaStreamDestroy(s);
    return failures ? 1 : 0;
}

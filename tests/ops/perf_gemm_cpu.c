/*
 * perf_gemm_cpu.c — times tinfer_gemm_cpu on the SmolLM2-135M GEMM shapes (QKV, O, gate|up,
 * down per layer; the tied LM head) at M = 1 (decode) and M = 128 (prefill), BF16 weights.
 * Prints ms, GFLOP/s (2MNK / t) and GB/s (weights + X + Y bytes / t) per shape, then the decode
 * ms/token and prefill tok/s the GEMMs alone imply for the 30-layer model (LM head on one row).
 * Decode timings rotate through enough weight copies (>= 64 MiB per shape) that W comes from DRAM
 * as in a real forward pass, not from the last-level cache.
 * Then the attention op at the same shapes (9 heads / 3 KV heads, head_dim 64): decode of one
 * token against a cache of 2048, and the causal prefill of 128 tokens, per layer and x 30.
 * Not a ctest test (it measures, it asserts nothing); results are in gemm/cpu/README.md.
 * Usage: perf_gemm_cpu [isa [cold]]   (isa: scalar | avx2 | avx512 | avx512vnni | amx | auto,
 * default automatic; cold: the M = 128 timings rotate over >= 64 MiB of weight copies as well,
 * so W comes from beyond L2 as in the model's forward pass, where every layer has its own)
 */
#include "gemm/cpu/gemm_cpu.h"
#include "ops/ref/ops_cpu.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* SmolLM2-135M config.json: hidden 576, 9 heads x 64 + 2 x 3 KV heads x 64 = 960 QKV rows,
 * intermediate 1536 (gate|up fused: 3072), vocab 49152, 30 layers. */
enum { HID = 576, QKV = 960, FF = 1536, VOCAB = 49152, LAYERS = 30, PREFILL = 128 };

typedef struct { const char *name; int64_t N, K; } shape;
static const shape SHAPES[] = {
    {"qkv", QKV, HID}, {"o", HID, HID}, {"gate_up", 2 * FF, HID}, {"down", HID, FF},
    {"lm_head", VOCAB, HID},
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rng = 88172645463325252ull;
static float rnd(void) { /* xorshift64, uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 40) / (double)(1ull << 23) - 1.0);
}

static int g_cold; /* prefill shapes rotate over weight copies too (the `cold` argument) */

/* Seconds per call of an M x N x K product, median-free mean over reps after one warm-up. */
static double time_shape(int64_t M, int64_t N, int64_t K, int *reps_out) {
    size_t wbytes = (size_t)(N * K) * 2;
    int copies = M == 1 || g_cold ? (int)((64u << 20) / wbytes) + 1 : 1;
    uint16_t **W = malloc(sizeof(uint16_t *) * (size_t)copies);
    float *X = malloc(sizeof(float) * (size_t)(M * K)), *Y = malloc(sizeof(float) * (size_t)(M * N));
    if (!W || !X || !Y) return -1.0;
    for (int c = 0; c < copies; c++) {
        W[c] = malloc(wbytes);
        if (!W[c]) return -1.0;
        for (int64_t i = 0; i < N * K; i++) {
            /* random, never zero: a zero weight could let hardware or a kernel shortcut */
            float v = rnd();
            W[c][i] = tinfer_f32_to_bf16(v == 0.0f ? 0.5f : v);
        }
    }
    for (int64_t i = 0; i < M * K; i++) X[i] = rnd();
    tinfer_gemm_cpu(M, N, K, X, K, W[0], TINFER_DTYPE_BF16, NULL, K, NULL, Y, N, false); /* warm-up */
    /* enough calls for ~0.3 s of timing, at least one pass over all copies */
    double t0 = now_s();
    tinfer_gemm_cpu(M, N, K, X, K, W[copies > 1 ? 1 : 0], TINFER_DTYPE_BF16, NULL, K, NULL, Y, N, false);
    double one = now_s() - t0;
    int reps = (int)(0.3 / (one > 1e-6 ? one : 1e-6));
    if (reps < copies) reps = copies;
    if (reps < 3) reps = 3;
    t0 = now_s();
    for (int r = 0; r < reps; r++)
        tinfer_gemm_cpu(M, N, K, X, K, W[r % copies], TINFER_DTYPE_BF16, NULL, K, NULL, Y, N, false);
    double t = (now_s() - t0) / reps;
    for (int c = 0; c < copies; c++) free(W[c]);
    free(W);
    free(X);
    free(Y);
    *reps_out = reps;
    return t;
}

/* Seconds per tinfer_op_attention call: n queries at positions ctx - n .. ctx - 1. */
static double time_attention(int64_t n, int64_t ctx) {
    const int32_t NH = 9, NKV = 3, HD = 64;
    float *q = malloc(sizeof(float) * (size_t)(n * NH * HD)), *o = malloc(sizeof(float) * (size_t)(n * NH * HD));
    float *k = malloc(sizeof(float) * (size_t)(ctx * NKV * HD)), *v = malloc(sizeof(float) * (size_t)(ctx * NKV * HD));
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)n);
    if (!q || !o || !k || !v || !pos) return -1.0;
    for (int64_t i = 0; i < n * NH * HD; i++) q[i] = rnd();
    for (int64_t i = 0; i < ctx * NKV * HD; i++) { k[i] = rnd(); v[i] = rnd(); }
    for (int64_t i = 0; i < n; i++) pos[i] = (int32_t)(ctx - n + i);
    tinfer_op_attention(o, NH * HD, q, NH * HD, k, v, n, pos, NH, NKV, HD);
    int reps = 0;
    double t0 = now_s(), t;
    do {
        tinfer_op_attention(o, NH * HD, q, NH * HD, k, v, n, pos, NH, NKV, HD);
        reps++;
        t = now_s() - t0;
    } while (t < 0.2);
    free(q); free(o); free(k); free(v); free(pos);
    return t / reps;
}

int main(int argc, char **argv) {
    g_cold = argc > 2 && !strcmp(argv[2], "cold");
    if (argc > 1 && strcmp(argv[1], "auto") && tinfer_gemm_cpu_force_isa(argv[1]) != 0) {
        fprintf(stderr, "perf_gemm_cpu: isa '%s' unknown or not supported here\n", argv[1]);
        return 1;
    }
    printf("perf_gemm_cpu: path %s, %d OpenMP threads, BF16 weights\n", tinfer_gemm_cpu_isa(),
           omp_get_max_threads());
    printf("%-8s %5s %6s %5s %9s %9s %8s %6s\n", "shape", "M", "N", "K", "ms", "GFLOP/s", "GB/s", "reps");
    double layer[2] = {0, 0}, head[2] = {0, 0};
    const int64_t Ms[2] = {1, PREFILL};
    for (int mi = 0; mi < 2; mi++)
        for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
            int64_t M = Ms[mi], N = SHAPES[s].N, K = SHAPES[s].K;
            int reps = 0;
            double t = time_shape(M, N, K, &reps);
            if (t < 0) {
                fprintf(stderr, "perf_gemm_cpu: out of memory\n");
                return 1;
            }
            double bytes = (double)N * K * 2 + 4.0 * (double)(M * K + M * N);
            printf("%-8s %5lld %6lld %5lld %9.3f %9.1f %8.1f %6d\n", SHAPES[s].name, (long long)M,
                   (long long)N, (long long)K, t * 1e3, 2.0 * M * N * K / t * 1e-9, bytes / t * 1e-9,
                   reps);
            if (s < 4) layer[mi] += t;
            else head[mi] = t;
        }
    double decode = LAYERS * layer[0] + head[0];
    double prefill = LAYERS * layer[1] + head[0]; /* logits of the last prompt token only */
    printf("GEMMs only, %d layers: decode %.2f ms/token (%.1f tok/s); prefill of %d tokens "
           "%.1f ms (%.1f tok/s)\n",
           LAYERS, decode * 1e3, 1.0 / decode, PREFILL, prefill * 1e3, PREFILL / prefill);
    double ad = time_attention(1, 2048), ap = time_attention(PREFILL, PREFILL);
    printf("attention (%s): decode at context 2048 %.3f ms/layer (%.2f ms/token); prefill of %d "
           "tokens %.3f ms/layer (%.1f ms)\n",
           tinfer_ops_cpu_isa(), ad * 1e3, LAYERS * ad * 1e3, PREFILL, ap * 1e3, LAYERS * ap * 1e3);
    return 0;
}

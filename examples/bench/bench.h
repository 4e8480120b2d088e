/*
 * bench.h — what tinfer-bench's parts share: one test's result, the machine's peaks the results
 * are compared with, and the PNG charts (png.c) drawn from them.
 */
#ifndef TINFER_BENCH_BENCH_H
#define TINFER_BENCH_BENCH_H

#include <stdint.h>

typedef struct test_result {
    char name[32];
    char kind; /* 'p' prefill, 'g' decode */
    int32_t tokens, batch;
    int32_t tp;      /* tensor-parallel shards of the model it ran on (0: off) */
    int32_t n_gpus;  /* GPUs it ran on (its bandwidth is compared with n_gpus x one card's) */
    double mean, sd; /* tok/s (decode with batch B: aggregate over the B sequences) */
    double gbs;      /* decode: weight bytes read per second */
    double gflops;   /* prefill */
    char route[512];
    int32_t kernels;  /* decode: kernels a step launched (its CUDA graph's); 0 = not known */
    double graph_pct; /* decode: % of the timed steps replayed from a CUDA graph */
    double fused_pct; /* decode: % of the timed steps run as one fused kernel */
    /* tensor parallelism on GPUs: one all-reduce of a token's row timed alone (us, F32 / BF16;
     * tinfer_context_stats) and, for one-sequence decode, the 2 n_layer of a step as a share of
     * the step's time (%); 0 where not measured */
    double ar_us, ar_bf16_us, ar_pct;
} test_result;

/* The roofs a run is compared with; 0 = not measured. */
typedef struct bench_peaks {
    double bw_gbs;     /* CPU: read bandwidth; GPU: device-to-device copy (read + write bytes) */
    double gflops;     /* GPU: cuBLAS BF16 GEMM peak; never measured on the CPU */
    const char *where; /* "cpu" or "cuda" */
} bench_peaks;

/* Writes PREFIX-batch.png (aggregate decode tok/s vs batch size) and PREFIX-roofline.png (GFLOP/s
 * vs FLOP per weight byte, with the peaks' roofs). n_params and weight_bytes: the model's
 * (tinfer_model_n_params, tinfer_model_weight_bytes). Returns 0, or 1 after a message on stderr. */
int bench_write_pngs(const char *prefix, const char *model_desc, double n_params,
                     double weight_bytes, const bench_peaks *peaks, const test_result *r, int n);

#endif

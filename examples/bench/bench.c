/*
 * bench.c — tinfer-bench: prefill vs decode at the model level, like llama-bench (pp / tg tests,
 * mean ± stddev tok/s over -r repetitions, md / json / csv) plus llama-batched-bench's
 * aggregate decode tok/s per batch size. Public API only (tinfer.h); the GPU's peaks through
 * cudart / cuBLAS (peaks_cuda.c), the charts through examples/bench_gemm/chart.c (png.c).
 *
 *   tinfer-bench -m DIR [-p 512] [-n 128] [-r 5] [--batch 1,8,64] [-o md|json|csv]
 *                [--backend auto|cpu|cuda] [--random-weights] [--threads N] [--png PREFIX]
 *                [--tp 1,2,4] [--gpus 0,1,...] [--greedy K] [--argmax] [--micro auto|1..4]
 *
 * Tests (token ids are random, from a fixed seed; the KV cache is emptied before each run):
 *   ppN      one sequence's N-token prompt in ONE tinfer_decode: N / time
 *   tgN      N single-token steps of one sequence from an empty cache: N / time
 *   tgN@bB   B sequences (16-token prompts first, not timed), then N steps of one token per
 *            sequence, all B in each step (M = B): aggregate B * N / time
 *   tgN-gK, tgN@bB-gK  (--greedy K) tgN as greedy decoding through tinfer_decode_greedy (B
 *            sequences: tinfer_decode_greedy_batch, after their prompts), K steps a call (each
 *            step fed the previous one's picks; where the backend can, queued on the device with
 *            no host round trip between them; a sequence whose pick ends generation is fed
 *            it in the next call): B * N / time
 *   tgN@bB-argmax, tgN-argmax  (--argmax) the decode steps ask each sequence for its most
 *            likely token only (tinfer_batch.logits 2), as greedy decoding does: on the GPU one
 *            id a sequence comes to the host instead of n_vocab logits (at 64 SmolLM2 sequences
 *            12.6 MB a step over PCIe). Without it every step's logits come to the host, as
 *            llama-bench and llama-batched-bench ask for them.
 *   tgN@bB-mG  (--micro G) each decode step's B sequences as G concurrent chains of kernels
 *            (tinfer_context_params.cuda_micro_batches; CUDA only, the CPU runs them as one)
 * --tp N,...: the model is loaded once per value (tensor-parallel shards; 0 off, 1 one rank
 * through the tensor-parallel path) and every test runs on each, as its own rows (backend "cuda
 * tp2"; json / csv field tp); a value needing more GPUs than the machine has is left out with a
 * note (every value: exit status 77, skipped). On several GPUs a decode row's bandwidth is a
 * percentage of that many cards' copy bandwidth, and the route ends with one all-reduce of a
 * token's row timed alone (F32 as the steps run it, BF16 for comparison; tinfer_context_stats)
 * and, for one sequence, the step's 2 n_layer all-reduces as a share of its time (json:
 * allreduce_us, allreduce_pct).
 * Each test runs once untimed (warm-up), then -r times. For every test the table gives the
 * kernels its GEMMs run on (tinfer_model_route_desc; where most decode steps ran otherwise, what
 * ran: the fused decode step, or the LM head + argmax kernel in the GEMM's place, from
 * tinfer_context_stats), the weight-read rate of decode tests in
 * GB/s (tinfer_model_weight_bytes per step) as a percentage of the peak bandwidth, and the
 * prefill's GFLOP/s (2 x weight elements x tokens; attention aside), on the GPU also as a
 * percentage of cuBLAS's BF16 GEMM rate. The peaks are measured in the same run, before the
 * tests (--no-peak skips them):
 *   CPU   the read bandwidth: all threads summing a buffer far larger than the last-level cache
 *         (no compute peak is measured on the CPU)
 *   CUDA  (built with the CUDA parts) the device-to-device copy bandwidth, read + write bytes
 *         counted as tinfer-bench-gemm counts them, and cublasGemmEx BF16 at 8192^3 (FP32
 *         compute): medians of event-timed batches (peaks_cuda.c)
 * Output fields: md (a table), json and csv (avg_ts / stddev_ts / weight_gbs / gflops per test;
 * peak_gbs, peak_gflops, pct_peak_bw, pct_cublas: null / empty where not measured or not
 * applicable; cpu_read_gbs and pct_of_read_bw: the CPU's read bandwidth only, 0 otherwise).
 * --png PREFIX also writes PREFIX-batch.png (aggregate decode tok/s vs batch size) and
 * PREFIX-roofline.png (GFLOP/s vs FLOP per weight byte, with the peaks as roofs; png.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"
#include "tinfer.h"

#include "../common/cli.h"
#include "../common/omp_policy.h"
#ifdef TINFER_BENCH_CUDA_PEAKS
#include "peaks_cuda.h"
#endif

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIST 32
#define BATCH_PROMPT 16 /* tokens of each sequence's prompt in the batched decode test */

typedef enum { OUT_MD, OUT_JSON, OUT_CSV } out_fmt;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tinfer-bench: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

/* "512,1024" -> {512, 1024}; values in [lo, hi]. */
static int parse_list(const char *opt, const char *s, long lo, long hi, int32_t *out, int *n) {
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < lo || v > hi || (*end && *end != ',') || *n == MAX_LIST)
            return fail("%s: '%s' is not a list of integers in [%ld, %ld]", opt, s, lo, hi);
        out[(*n)++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) return fail("%s: empty list", opt);
    return 0;
}

/* The machine's read bandwidth: all threads sum a 1 GiB buffer (well past any last-level
 * cache); the best of 3 passes after one to fault the pages in. */
static double cpu_read_gbs(int threads) {
    const size_t n = ((size_t)1 << 30) / sizeof(uint64_t);
    uint64_t *buf = malloc(n * sizeof *buf);
    if (!buf) return 0;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < n; i++)
        buf[i] = i;
    double best = 0;
    volatile uint64_t sink = 0;
    for (int pass = 0; pass < 4; pass++) {
        uint64_t s = 0;
        double t0 = now_s();
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : s)
        for (size_t i = 0; i < n; i++)
            s += buf[i];
        double dt = now_s() - t0;
        sink += s;
        if (pass > 0 && n * sizeof *buf / dt > best) best = n * sizeof *buf / dt;
    }
    (void)sink;
    free(buf);
    return best / 1e9;
}

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static tinfer_token rand_token(int32_t n_vocab) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (tinfer_token)(g_rng % (uint64_t)n_vocab);
}

typedef struct bench {
    tinfer_model *model;
    int32_t n_vocab, n_threads;
    tinfer_token *tok;
    int32_t *pos, *seq;
    int8_t *want;
    int graphs; /* tinfer_context_params.cuda_graphs */
    int fused;  /* tinfer_context_params.cuda_fused_decode */
    int micro;  /* tinfer_context_params.cuda_micro_batches */
    int greedy; /* > 0: tg through tinfer_decode_greedy(_batch), this many steps a call */
    int32_t *n_out; /* [batch] tinfer_decode_greedy_batch's picks a sequence */
    int argmax; /* 1: decode steps ask for the argmax only (tinfer_batch.logits 2) */
} bench;

/* One run of a test; returns its seconds, < 0 on error. */
static double run_once(bench *b, tinfer_context *ctx, char kind, int32_t tokens, int32_t batch) {
    tinfer_seq_clear(ctx, -1);
    if (kind == 'p') {
        for (int32_t i = 0; i < tokens; i++) {
            b->tok[i] = rand_token(b->n_vocab);
            b->pos[i] = i;
            b->seq[i] = 0;
        }
        tinfer_batch bt = {tokens, b->tok, b->pos, b->seq, NULL};
        double t0 = now_s();
        if (tinfer_decode(ctx, &bt) != TINFER_OK) return -1;
        return now_s() - t0;
    }
    if (batch == 1 && b->greedy > 0) { /* greedy: each call's last pick feeds the next call */
        tinfer_token t = rand_token(b->n_vocab);
        const double t0 = now_s();
        for (int32_t done = 0, n = 0; done < tokens; done += n) {
            const int32_t k = tokens - done < b->greedy ? tokens - done : b->greedy;
            if (tinfer_decode_greedy(ctx, 0, t, k, b->tok, &n) != TINFER_OK) return -1;
            t = b->tok[n - 1]; /* after an end-of-generation pick (n < k) too: fed next */
        }
        return now_s() - t0;
    }
    int32_t base = 0;
    if (batch > 1) { /* every sequence's prompt, in one untimed step */
        for (int32_t s = 0, i = 0; s < batch; s++)
            for (int32_t k = 0; k < BATCH_PROMPT; k++, i++) {
                b->tok[i] = rand_token(b->n_vocab);
                b->pos[i] = k;
                b->seq[i] = s;
                b->want[i] = k == BATCH_PROMPT - 1 ? (int8_t)(b->argmax ? 2 : 1) : 0;
            }
        tinfer_batch bt = {batch * BATCH_PROMPT, b->tok, b->pos, b->seq, b->want};
        if (tinfer_decode(ctx, &bt) != TINFER_OK) return -1;
        base = BATCH_PROMPT;
    }
    if (b->greedy > 0) { /* batched greedy: each sequence's prompt pick first, then the calls */
        tinfer_token *first = b->tok + (size_t)batch * BATCH_PROMPT, *out = first + batch;
        for (int32_t s = 0; s < batch; s++) {
            first[s] = tinfer_get_argmax(ctx, s * BATCH_PROMPT + BATCH_PROMPT - 1);
            b->seq[s] = s;
        }
        const double t0 = now_s();
        for (int32_t done = 0; done < tokens;) {
            const int32_t k = tokens - done < b->greedy ? tokens - done : b->greedy;
            if (tinfer_decode_greedy_batch(ctx, batch, b->seq, first, k, out, b->n_out) !=
                TINFER_OK)
                return -1;
            for (int32_t s = 0; s < batch; s++) /* after an end-of-generation pick too */
                first[s] = out[(size_t)s * k + (size_t)b->n_out[s] - 1];
            done += k;
        }
        return now_s() - t0;
    }
    double t0 = now_s();
    for (int32_t step = 0; step < tokens; step++) {
        for (int32_t s = 0; s < batch; s++) {
            b->tok[s] = rand_token(b->n_vocab); /* speed does not depend on which token */
            b->pos[s] = base + step;
            b->seq[s] = s;
            b->want[s] = b->argmax ? 2 : 1;
        }
        tinfer_batch bt = {batch, b->tok, b->pos, b->seq, b->want};
        if (tinfer_decode(ctx, &bt) != TINFER_OK) return -1;
    }
    return now_s() - t0;
}

static int run_test(bench *b, char kind, int32_t tokens, int32_t batch, int reps, int32_t n_ctx,
                    test_result *r, int idx, int n_tests) {
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->tokens = tokens;
    r->batch = batch;
    const char *sfx = b->argmax ? "-argmax" : ""; /* decode rows asking for the argmax only */
    if (kind == 'p')
        snprintf(r->name, sizeof r->name, "pp%d", (int)tokens);
    else if (batch == 1 && b->greedy > 0)
        snprintf(r->name, sizeof r->name, "tg%d-g%d", (int)tokens, b->greedy);
    else if (batch == 1)
        snprintf(r->name, sizeof r->name, "tg%d%s", (int)tokens, sfx);
    else if (b->greedy > 0 && b->micro > 0)
        snprintf(r->name, sizeof r->name, "tg%d@b%d-g%d-m%d", (int)tokens, (int)batch, b->greedy,
                 b->micro);
    else if (b->greedy > 0)
        snprintf(r->name, sizeof r->name, "tg%d@b%d-g%d", (int)tokens, (int)batch, b->greedy);
    else if (b->micro > 0) /* an explicit --micro: the rows say which */
        snprintf(r->name, sizeof r->name, "tg%d@b%d-m%d%s", (int)tokens, (int)batch, b->micro, sfx);
    else
        snprintf(r->name, sizeof r->name, "tg%d@b%d%s", (int)tokens, (int)batch, sfx);
    /* a prompt's LM head runs on its last token, a decode step's on every sequence's */
    tinfer_model_route_desc(b->model, kind == 'p' ? tokens : batch, kind == 'p' ? 1 : batch,
                            r->route, sizeof r->route);
    tinfer_context_params cp = tinfer_context_default_params();
    cp.n_seq_max = batch;
    cp.n_ctx = kind == 'p' ? tokens : tokens + (batch > 1 ? BATCH_PROMPT : 0);
    if (n_ctx > cp.n_ctx) cp.n_ctx = n_ctx;
    cp.n_batch = kind == 'p' ? tokens : batch * (batch > 1 ? BATCH_PROMPT : 1);
    /* greedy: room for every sequence's picks of a call's K steps (the backend runs as many of
     * them at once as its buffers, sized by n_batch, hold), up to 4,096 tokens' activations */
    const int64_t picks = (int64_t)b->greedy * batch;
    if (kind == 'g' && picks > cp.n_batch && picks <= 4096) cp.n_batch = (int32_t)picks;
    cp.cuda_graphs = b->graphs;
    cp.cuda_fused_decode = b->fused;
    cp.cuda_micro_batches = b->micro;
    tinfer_context *ctx = NULL;
    if (tinfer_context_init(b->model, &cp, &ctx) != TINFER_OK)
        return fail("%s: %s", r->name, tinfer_last_error());
    double *tps = calloc((size_t)reps, sizeof *tps);
    int rc = 1;
    if (!tps) {
        fail("out of memory");
        goto done;
    }
    const double n_tok = (double)tokens * batch;
    char note[512] = "";
    tinfer_context_stats st0 = {0}, st1 = {0};
    for (int k = -1; k < reps; k++) { /* k = -1: warm-up */
        if (k == 0) tinfer_context_get_stats(ctx, &st0);
        if (isatty(2))                /* a progress line on a terminal; logs stay clean */
            fprintf(stderr, "\rtinfer-bench: test %d/%d %-12s %s %d/%d   ", idx + 1, n_tests,
                    r->name, k < 0 ? "warm-up" : "run", k < 0 ? 0 : k + 1, reps);
        double t = run_once(b, ctx, kind, tokens, batch);
        if (t < 0) {
            fprintf(stderr, "\n");
            fail("%s: %s", r->name, tinfer_context_last_error(ctx));
            goto done;
        }
        if (k >= 0) tps[k] = n_tok / t;
        if (!note[0] && tinfer_context_last_error(ctx)[0])
            snprintf(note, sizeof note, "%s", tinfer_context_last_error(ctx));
    }
    if (note[0]) fprintf(stderr, "tinfer-bench: %s: %s\n", r->name, note);
    tinfer_context_get_stats(ctx, &st1);
    if (kind == 'g') {
        r->kernels = st1.last_step_kernels;
        if (st1.steps > st0.steps) {
            r->graph_pct = 100.0 * (double)(st1.graph_replays - st0.graph_replays) /
                           (double)(st1.steps - st0.steps);
            r->fused_pct = 100.0 * (double)(st1.fused_steps - st0.fused_steps) /
                           (double)(st1.steps - st0.steps);
        }
        if (r->fused_pct > 50.0) /* what ran: the fused step, not the op-by-op GEMM routes */
            snprintf(r->route, sizeof r->route, "fused decode step (1 kernel, argmax in it)");
        else if (st1.steps > st0.steps &&
                 2 * (st1.lm_argmax_steps - st0.lm_argmax_steps) > st1.steps - st0.steps) {
            /* the LM head's GEMM did not run: its rows went to the LM head + argmax kernel */
            char *lm = strstr(r->route, "lm head ");
            if (lm)
                snprintf(lm, sizeof r->route - (size_t)(lm - r->route),
                         "lm head + argmax (1 kernel)");
        }
    }
    r->ar_us = st1.tp_allreduce_us;
    r->ar_bf16_us = st1.tp_allreduce_bf16_us;
    double sum = 0, sq = 0;
    for (int k = 0; k < reps; k++)
        sum += tps[k];
    r->mean = sum / reps;
    for (int k = 0; k < reps; k++)
        sq += (tps[k] - r->mean) * (tps[k] - r->mean);
    r->sd = reps > 1 ? sqrt(sq / (reps - 1)) : 0;
    const double wbytes = (double)tinfer_model_weight_bytes(b->model);
    if (kind == 'p')
        r->gflops = 2.0 * (double)tinfer_model_n_params(b->model) * r->mean / 1e9;
    else
        r->gbs = wbytes * (r->mean / batch) / 1e9; /* one weight read per step */
    if (r->ar_us > 0) { /* the all-reduces' share of a one-sequence decode step, estimated */
        const double n_ar = 2.0 * tinfer_model_n_layer(b->model);
        if (kind == 'g' && batch == 1) r->ar_pct = 100.0 * n_ar * r->ar_us * 1e-6 * r->mean;
        const size_t k = strlen(r->route);
        snprintf(r->route + k, sizeof r->route - k, "; all-reduce alone %.1f us (bf16 %.1f)",
                 r->ar_us, r->ar_bf16_us);
        if (r->ar_pct > 0) {
            const size_t k2 = strlen(r->route);
            snprintf(r->route + k2, sizeof r->route - k2, ", %.0f a step = %.1f%% of it", n_ar,
                     r->ar_pct);
        }
    }
    rc = 0;
done:
    free(tps);
    tinfer_context_free(ctx);
    return rc;
}

static void usage(void) {
    printf(
        "usage: tinfer-bench -m DIR [options]\n"
        "  -m, --model DIR        HF model directory (with --random-weights: config.json only)\n"
        "  -p, --n-prompt N,...   prefill tests ppN (default 512; 0 for none)\n"
        "  -n, --n-gen N,...      decode tests tgN (default 128; 0 for none)\n"
        "  --batch B,...          batched decode tests tgN@bB: B sequences a step (default:\n"
        "                         none; e.g. 1,2,4,8,16,32,64)\n"
        "  -r, --repetitions N    timed runs per test (default 5), after one warm-up\n"
        "  -o, --output md|json|csv  (default md)\n"
        "  --backend auto|cpu|cuda  (default auto)\n"
        "  --threads N            CPU threads (default: all cores)\n"
        "  --random-weights       random BF16 weights of config.json's shapes (speed only)\n"
        "  --seed N               seed of the random weights (default 1)\n"
        "  --graphs 0|1           CUDA: replay decode steps as CUDA graphs (default 1)\n"
        "  --fused auto|0|1       CUDA: run a small model's decode steps (<= 8 sequences) as\n"
        "                         one fused kernel: where it measured faster (auto, the\n"
        "                         default: up to 8 sequences), never (0) or whenever it can (1)\n"
        "  --micro auto|1|2|3|4   CUDA: run a decode step's sequences as this many concurrent\n"
        "                         chains of kernels (auto, the default: the backend's choice,\n"
        "                         one chain for now; 1: one chain)\n"
        "  --tp N,...             tensor parallelism over N shards (default 0: off; 1: one\n"
        "                         rank through the tensor-parallel path); each value loads the\n"
        "                         model again and runs every test as its own rows. On CUDA one\n"
        "                         GPU a shard, through NCCL (values needing more GPUs than\n"
        "                         there are: left out); on the CPU the shards run one after\n"
        "                         another (a check of the split, not faster)\n"
        "  --gpus 0,1,...         CUDA devices, one per shard (default 0, 1, ...)\n"
        "  --greedy K             decode tests as greedy decoding through tinfer_decode_greedy\n"
        "                         (_batch), K steps a call (rows tgN-gK, tgN@bB-gK)\n"
        "  --argmax               decode steps ask each sequence for its most likely token\n"
        "                         only, as greedy decoding does (one id a sequence to the host\n"
        "                         instead of its logits; rows tgN-argmax, tgN@bB-argmax)\n"
        "  --no-peak              skip measuring the peaks (CPU: read bandwidth; GPU: copy\n"
        "                         bandwidth and cuBLAS BF16 GEMM) the results are compared with\n"
        "  --png PREFIX           also write PREFIX-batch.png (decode tok/s vs batch size) and\n"
        "                         PREFIX-roofline.png (GFLOP/s vs FLOP per weight byte)\n"
        "  -h, --help             this text\n");
}

/* A number, or `none` where v <= 0 (not measured, not applicable). */
static const char *num(char *buf, size_t cap, const char *fmt, double v, const char *none) {
    if (v > 0)
        snprintf(buf, cap, fmt, v);
    else
        snprintf(buf, cap, "%s", none);
    return buf;
}

/* The test's share of the peaks, in percent; 0 where not measured or not applicable. Several
 * GPUs (tensor parallelism): of as many times one card's bandwidth. */
static double pct_bw(const test_result *r, double peak_gbs) {
    const double n = r->n_gpus > 1 ? r->n_gpus : 1;
    return r->kind == 'g' && peak_gbs > 0 ? 100 * r->gbs / (n * peak_gbs) : 0;
}
static double pct_flops(const test_result *r, double peak_gflops) {
    return r->kind == 'p' && peak_gflops > 0 ? 100 * r->gflops / peak_gflops : 0;
}

static void print_results(out_fmt fmt, const char *desc, double n_params, int64_t wbytes,
                          const char *backend, int threads, const bench_peaks *pk,
                          const test_result *r, int n) {
    /* cpu_read_gbs / pct_of_read_bw: the CPU's read bandwidth only (the fields' old meaning) */
    const double cpu_gbs = !strcmp(pk->where, "cpu") ? pk->bw_gbs : 0;
    char b1[32], b2[32], b3[32], b4[32];
    if (fmt == OUT_JSON) {
        printf("{\n  \"model\": \"%s\",\n  \"n_params\": %.0f,\n  \"weight_bytes\": %lld,\n"
               "  \"backend\": \"%s\",\n  \"threads\": %d,\n  \"cpu_read_gbs\": %.3f,\n"
               "  \"peak_gbs\": %s,\n  \"peak_gflops\": %s,\n  \"tests\": [\n",
               desc, n_params, (long long)wbytes, backend, threads, cpu_gbs,
               num(b1, sizeof b1, "%.3f", pk->bw_gbs, "null"),
               num(b2, sizeof b2, "%.3f", pk->gflops, "null"));
        for (int i = 0; i < n; i++)
            printf("    {\"test\": \"%s\", \"n_prompt\": %d, \"n_gen\": %d, \"batch\": %d, "
                   "\"avg_ts\": %.3f, \"stddev_ts\": %.3f, \"weight_gbs\": %.3f, "
                   "\"gflops\": %.3f, \"route\": \"%s\", \"pct_peak_bw\": %s, "
                   "\"pct_cublas\": %s, \"kernels_per_step\": %d, \"graph_pct\": %.1f, "
                   "\"fused_pct\": %.1f, \"allreduce_us\": %s, \"allreduce_pct\": %s, "
                   "\"tp\": %d}%s\n",
                   r[i].name, r[i].kind == 'p' ? r[i].tokens : 0,
                   r[i].kind == 'g' ? r[i].tokens : 0, r[i].batch, r[i].mean, r[i].sd, r[i].gbs,
                   r[i].gflops, r[i].route,
                   num(b3, sizeof b3, "%.1f", pct_bw(&r[i], pk->bw_gbs), "null"),
                   num(b4, sizeof b4, "%.1f", pct_flops(&r[i], pk->gflops), "null"),
                   (int)r[i].kernels, r[i].graph_pct, r[i].fused_pct,
                   num(b1, sizeof b1, "%.2f", r[i].ar_us, "null"),
                   num(b2, sizeof b2, "%.1f", r[i].ar_pct, "null"), (int)r[i].tp,
                   i + 1 < n ? "," : "");
        printf("  ]\n}\n");
        return;
    }
    if (fmt == OUT_CSV) {
        printf("model,backend,threads,test,n_prompt,n_gen,batch,avg_ts,stddev_ts,weight_gbs,"
               "pct_of_read_bw,gflops,route,peak_gbs,peak_gflops,pct_peak_bw,pct_cublas,"
               "kernels_per_step,graph_pct,tp\n");
        for (int i = 0; i < n; i++)
            printf("\"%s\",%s,%d,%s,%d,%d,%d,%.3f,%.3f,%.3f,%.1f,%.3f,\"%s\",%s,%s,%s,%s,%d,%.1f,"
                   "%d\n",
                   desc,
                   backend, threads, r[i].name, r[i].kind == 'p' ? r[i].tokens : 0,
                   r[i].kind == 'g' ? r[i].tokens : 0, r[i].batch, r[i].mean, r[i].sd, r[i].gbs,
                   pct_bw(&r[i], cpu_gbs), r[i].gflops, r[i].route,
                   num(b1, sizeof b1, "%.3f", pk->bw_gbs, ""),
                   num(b2, sizeof b2, "%.3f", pk->gflops, ""),
                   num(b3, sizeof b3, "%.1f", pct_bw(&r[i], pk->bw_gbs), ""),
                   num(b4, sizeof b4, "%.1f", pct_flops(&r[i], pk->gflops), ""),
                   (int)r[i].kernels, r[i].graph_pct, (int)r[i].tp);
        return;
    }
    printf("model: %s\nparams: %.2f M, weights read per decode step: %.1f MB\n", desc,
           n_params / 1e6, wbytes / 1e6);
    if (cpu_gbs > 0)
        printf("CPU read bandwidth (%d threads summing 1 GiB, same run): %.1f GB/s\n", threads,
               cpu_gbs);
    else if (pk->bw_gbs > 0)
        printf("GPU copy bandwidth (device to device, 1 GiB, read + write bytes, median, same "
               "run): %.1f GB/s\n",
               pk->bw_gbs);
    if (pk->gflops > 0)
        printf("cuBLAS BF16 GEMM peak (8192^3, FP32 compute, median, same run): %.1f TFLOP/s\n",
               pk->gflops / 1e3);
    printf("\n| backend | threads | test | t/s | weights GB/s | %% of peak bw | GFLOP/s | "
           "%% of cuBLAS | kernels/step | GEMM route |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        char gb[16] = "", gf[16] = "", ks[48] = "";
        if (r[i].kind == 'g' && r[i].fused_pct > 50.0)
            snprintf(ks, sizeof ks, "%d (%.0f%% fused)", (int)r[i].kernels, r[i].fused_pct);
        else if (r[i].kind == 'g' && r[i].kernels > 0)
            snprintf(ks, sizeof ks, "%d (%.0f%% graphs)", (int)r[i].kernels, r[i].graph_pct);
        else if (r[i].kind == 'g' && !strcmp(backend, "cuda"))
            snprintf(ks, sizeof ks, "(no graphs)");
        if (r[i].kind == 'g')
            snprintf(gb, sizeof gb, "%.1f", r[i].gbs);
        else
            snprintf(gf, sizeof gf, "%.1f", r[i].gflops);
        char be[32];
        snprintf(be, sizeof be, r[i].tp >= 1 ? "%s tp%d" : "%s", backend, (int)r[i].tp);
        printf("| %s | %d | %s | %.2f ± %.2f | %s | %s | %s | %s | %s | %s |\n", be, threads,
               r[i].name, r[i].mean, r[i].sd, gb,
               num(b1, sizeof b1, "%.0f%%", pct_bw(&r[i], pk->bw_gbs), ""), gf,
               num(b2, sizeof b2, "%.0f%%", pct_flops(&r[i], pk->gflops), ""), ks, r[i].route);
    }
}

int main(int argc, char **argv) {
    tinfer_example_omp_policy(argv, "tinfer-bench");
    const char *dir = NULL, *png = NULL;
    int32_t pp[MAX_LIST] = {512}, tg[MAX_LIST] = {128}, batches[MAX_LIST], tps[MAX_LIST] = {0};
    int32_t gpus[MAX_LIST], n_gpus = 0;
    int n_pp = 1, n_tg = 1, n_batch = 0, n_tp = 1;
    long reps = 5, threads = 0;
    unsigned long long seed = 1;
    out_fmt fmt = OUT_MD;
    bool random_w = false, peak = true;
    int graphs = 1, fused = -1, micro = 0, greedy = 0, argmax = 0;
    tinfer_backend backend = TINFER_BACKEND_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        }
        if (!strcmp(a, "--random-weights")) {
            random_w = true;
            continue;
        }
        if (!strcmp(a, "--no-peak")) {
            peak = false;
            continue;
        }
        if (!strcmp(a, "--argmax")) {
            argmax = 1;
            continue;
        }
        if (i + 1 >= argc) return fail("%s: missing value (see --help)", a);
        const char *v = argv[++i];
        int bad = 0;
        char *end;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            dir = v;
        } else if (!strcmp(a, "--png")) {
            png = v;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) {
            bad = parse_list(a, v, 0, 1 << 20, pp, &n_pp);
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) {
            bad = parse_list(a, v, 0, 1 << 20, tg, &n_tg);
        } else if (!strcmp(a, "--batch")) {
            bad = parse_list(a, v, 1, 4096, batches, &n_batch);
        } else if (!strcmp(a, "--tp")) {
            bad = parse_list(a, v, 0, 1024, tps, &n_tp);
        } else if (!strcmp(a, "--gpus")) {
            if (tinfer_example_gpus(v, gpus, MAX_LIST, &n_gpus) != 0)
                return fail("--gpus: '%s' is not a list of distinct device ids (e.g. 0,1)", v);
        } else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) {
            errno = 0;
            reps = strtol(v, &end, 10);
            if (errno || *end || end == v || reps < 1 || reps > 1000)
                return fail("%s: '%s' is not an integer in [1, 1000]", a, v);
        } else if (!strcmp(a, "--threads")) {
            errno = 0;
            threads = strtol(v, &end, 10);
            if (errno || *end || end == v || threads < 0 || threads > 4096)
                return fail("%s: '%s' is not an integer in [0, 4096]", a, v);
        } else if (!strcmp(a, "--seed")) {
            errno = 0;
            seed = strtoull(v, &end, 10);
            if (errno || *end || end == v || v[0] == '-')
                return fail("%s: '%s' is not a non-negative integer", a, v);
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!strcmp(v, "md"))
                fmt = OUT_MD;
            else if (!strcmp(v, "json"))
                fmt = OUT_JSON;
            else if (!strcmp(v, "csv"))
                fmt = OUT_CSV;
            else
                return fail("%s: '%s' is not md, json or csv", a, v);
        } else if (!strcmp(a, "--graphs")) {
            if (strcmp(v, "0") && strcmp(v, "1")) return fail("--graphs: '%s' is not 0 or 1", v);
            graphs = v[0] == '1';
        } else if (!strcmp(a, "--fused")) {
            if (strcmp(v, "0") && strcmp(v, "1") && strcmp(v, "auto"))
                return fail("--fused: '%s' is not auto, 0 or 1", v);
            fused = !strcmp(v, "auto") ? -1 : v[0] == '1';
        } else if (!strcmp(a, "--micro")) {
            if (strcmp(v, "auto") && (strlen(v) != 1 || v[0] < '1' || v[0] > '4'))
                return fail("--micro: '%s' is not auto, 1, 2, 3 or 4", v);
            micro = !strcmp(v, "auto") ? 0 : v[0] - '0';
        } else if (!strcmp(a, "--greedy")) {
            errno = 0;
            const long k = strtol(v, &end, 10);
            if (errno || *end || end == v || k < 1 || k > 4096)
                return fail("--greedy: '%s' is not an integer in [1, 4096]", v);
            greedy = (int)k;
        } else if (!strcmp(a, "--backend")) {
            if (tinfer_example_backend(v, &backend) != 0)
                return fail("--backend: '%s' is not cpu, cuda or auto", v);
        } else {
            return fail("unknown option '%s' (see --help)", a);
        }
        if (bad) return 1;
    }
    if (!dir) return fail("-m DIR is required (see --help)");

    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = backend;
    mp.n_threads = (int32_t)threads;
    mp.random_weights = random_w;
    mp.random_seed = seed;
    mp.tp = tps[0];
    mp.gpus = n_gpus ? gpus : NULL;
    mp.n_gpus = n_gpus;
    bench b = {0};
    b.graphs = graphs;
    b.fused = fused;
    b.micro = micro;
    b.greedy = greedy;
    b.argmax = argmax;
    fprintf(stderr, "tinfer-bench: loading %s%s\n", dir, random_w ? " (random weights)" : "");
    int t_first = 0; /* the first --tp value this machine runs (fewer GPUs: later values) */
    while (tinfer_model_load(dir, &mp, &b.model) != TINFER_OK) {
        if (!strstr(tinfer_last_error(), "GPUs, but")) return fail("%s", tinfer_last_error());
        if (t_first + 1 >= n_tp) { /* no value fits this machine: skipped, not failed */
            fprintf(stderr, "tinfer-bench: skipped: %s\n", tinfer_last_error());
            return 77;
        }
        fprintf(stderr, "tinfer-bench: --tp %d skipped: %s\n", (int)tps[t_first],
                tinfer_last_error());
        mp.tp = tps[++t_first];
    }
    b.n_vocab = tinfer_model_n_vocab(b.model);
    const tinfer_backend taken = tinfer_model_backend(b.model);
    const int n_threads = threads > 0 ? (int)threads : omp_get_num_procs();
    int32_t max_tok = 1;
    for (int i = 0; i < n_pp; i++)
        max_tok = pp[i] > max_tok ? pp[i] : max_tok;
    for (int i = 0; i < n_batch; i++)
        max_tok = batches[i] * BATCH_PROMPT > max_tok ? batches[i] * BATCH_PROMPT : max_tok;
    if (greedy > max_tok) max_tok = greedy; /* a tinfer_decode_greedy call's picks */
    int32_t max_b = 1;
    for (int i = 0; i < n_batch; i++)
        max_b = batches[i] > max_b ? batches[i] : max_b;
    /* batched greedy: the prompts, then each sequence's first token and a call's picks */
    const int32_t greedy_tok = max_b * (BATCH_PROMPT + 1 + (greedy > 0 ? greedy : 0));
    if (greedy_tok > max_tok) max_tok = greedy_tok;
    b.n_out = malloc((size_t)max_b * sizeof *b.n_out);
    b.tok = malloc((size_t)max_tok * sizeof *b.tok);
    b.pos = malloc((size_t)max_tok * sizeof *b.pos);
    b.seq = malloc((size_t)max_tok * sizeof *b.seq);
    b.want = malloc((size_t)max_tok);
    int n_tests = 0; /* for each --tp value */
    for (int i = 0; i < n_pp; i++)
        n_tests += pp[i] > 0;
    for (int i = 0; i < n_tg; i++)
        n_tests += tg[i] > 0 ? (n_batch ? n_batch : 1) : 0;
    test_result *res = calloc((size_t)(n_tests * n_tp) + 1, sizeof *res);
    int rc = 1, n_res = 0;
    char desc[512];
    snprintf(desc, sizeof desc, "%s", tinfer_model_desc(b.model));
    const double n_params = (double)tinfer_model_n_params(b.model);
    const int64_t wbytes = tinfer_model_weight_bytes(b.model);
    if (!b.tok || !b.pos || !b.seq || !b.want || !b.n_out || !res) {
        fail("out of memory");
        goto done;
    }
    bench_peaks pk = {0, 0, taken == TINFER_BACKEND_CUDA ? "cuda" : "cpu"};
    if (peak && taken == TINFER_BACKEND_CPU) {
        fprintf(stderr, "tinfer-bench: measuring the CPU's read bandwidth\n");
        pk.bw_gbs = cpu_read_gbs(n_threads);
    }
#ifdef TINFER_BENCH_CUDA_PEAKS
    if (peak && taken == TINFER_BACKEND_CUDA) {
        fprintf(stderr,
                "tinfer-bench: measuring the GPU's copy bandwidth and cuBLAS's BF16 GEMM\n");
        pk.bw_gbs = bench_cuda_copy_gbs();
        pk.gflops = bench_cuda_cublas_gflops();
    }
#endif
    for (int t = t_first; t < n_tp; t++) {
        if (t > t_first) { /* the next --tp value: the model again, sharded that many ways */
            tinfer_model_free(b.model);
            b.model = NULL;
            mp.tp = tps[t];
            fprintf(stderr, "tinfer-bench: loading %s with --tp %d\n", dir, (int)tps[t]);
            if (tinfer_model_load(dir, &mp, &b.model) != TINFER_OK) {
                if (tinfer_last_error() && strstr(tinfer_last_error(), "GPUs, but")) {
                    /* fewer GPUs here than this value asks: its rows are left out */
                    fprintf(stderr, "tinfer-bench: --tp %d skipped: %s\n", (int)tps[t],
                            tinfer_last_error());
                    continue;
                }
                fail("--tp %d: %s", (int)tps[t], tinfer_last_error());
                goto done;
            }
        }
        const int first = n_res;
        for (int i = 0; i < n_pp; i++)
            if (pp[i] > 0 && run_test(&b, 'p', pp[i], 1, (int)reps, 0, &res[n_res], n_res,
                                      n_tests * n_tp) == 0)
                n_res++;
            else if (pp[i] > 0)
                goto done;
        for (int i = 0; i < n_tg; i++) {
            if (tg[i] <= 0) continue;
            for (int j = 0; j < (n_batch ? n_batch : 1); j++) {
                if (run_test(&b, 'g', tg[i], n_batch ? batches[j] : 1, (int)reps, 0, &res[n_res],
                             n_res, n_tests * n_tp) != 0)
                    goto done;
                n_res++;
            }
        }
        const bool on_gpus = tinfer_model_backend(b.model) == TINFER_BACKEND_CUDA;
        for (int i = first; i < n_res; i++) {
            res[i].tp = tps[t];
            res[i].n_gpus = on_gpus ? (tps[t] > 1 ? tps[t] : 1) : 0;
        }
    }
    if (isatty(2)) fprintf(stderr, "\r%60s\r", "");
    print_results(fmt, desc, n_params, wbytes, pk.where, n_threads, &pk, res, n_res);
    rc = png ? bench_write_pngs(png, desc, n_params, (double)wbytes, &pk, res, n_res) : 0;
done:
    free(b.tok);
    free(b.n_out);
    free(b.pos);
    free(b.seq);
    free(b.want);
    free(res);
    tinfer_model_free(b.model);
    return rc;
}

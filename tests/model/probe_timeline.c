/*
 * probe_timeline.c — probe-timeline: where a decode step's time goes on the GPU, kernel by
 * kernel, as the step really runs (CUDA graphs, programmatic dependent launch), and how much of
 * the host's step period the GPU is busy at all. A lab probe (measures, asserts nothing beyond
 * errors): Nsight Compute times each kernel alone, with its caches flushed, so it cannot see
 * how the kernels of a step overlap or what the host adds between steps.
 *
 *   probe-timeline -m DIR [--random-weights] [--batch B] [-n STEPS] [--argmax] [--fused auto|0|1]
 *                  [--micro 0..4] [--top N]
 *
 * B sequences get 16-token prompts, then decode one token each a step: 8 untimed steps (graphs
 * captured), then STEPS steps with CUPTI's kernel activity records on (start and end of every
 * kernel in GPU time) and the host's clock read through CUPTI around each tinfer_decode call.
 * Per step: the host's period (one call's start to the next's), the GPU's span (first kernel's
 * start to last kernel's end) and the GPU idle part of the period. Per kernel (name and grid
 * size, summed over the step): its marginal time (its end minus the latest end before it: what
 * it adds to the step's critical path when kernels run one after another), its own duration
 * (start to end, the early start under programmatic dependent launch included) and how many
 * times a step it runs. --argmax asks for each sequence's argmax only (tinfer_batch.logits 2),
 * as greedy decoding does; without it every sequence's logits come to the host.
 */
#define _POSIX_C_SOURCE 200809L

#include "tinfer.h"

#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TL_PROMPT 16
#define TL_WARM 8
#define TL_BUF (8u << 20)

typedef struct tl_rec {
    uint64_t start, end;
    int32_t grid;
    char name[64];
} tl_rec;

static tl_rec *g_recs;
static size_t g_n, g_cap;
static int g_oom;

static void CUPTIAPI buf_req(uint8_t **b, size_t *size, size_t *max_rec) {
    *b = (uint8_t *)aligned_alloc(8, TL_BUF);
    *size = *b ? TL_BUF : 0;
    *max_rec = 0;
}

static void CUPTIAPI buf_done(CUcontext ctx, uint32_t stream, uint8_t *b, size_t size,
                              size_t valid) {
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *r = NULL;
    while (b && cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
        if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
        if (g_n == g_cap) {
            const size_t cap = g_cap ? 2 * g_cap : 4096;
            tl_rec *p = realloc(g_recs, cap * sizeof *p);
            if (!p) {
                g_oom = 1;
                break;
            }
            g_recs = p, g_cap = cap;
        }
        tl_rec *o = &g_recs[g_n++];
        o->start = k->start, o->end = k->end;
        o->grid = k->gridX * k->gridY * k->gridZ;
        snprintf(o->name, sizeof o->name, "%s", k->name ? k->name : "?");
    }
    free(b);
}

static int by_start(const void *a, const void *b) {
    const tl_rec *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* A kernel's row of the table: its mangled name cut to the template arguments' start, grid */
typedef struct tl_row {
    char key[80];
    double marg, dur;
    long n;
} tl_row;

static int by_marg(const void *a, const void *b) {
    const tl_row *x = a, *y = b;
    return x->marg > y->marg ? -1 : x->marg < y->marg;
}

static int fail(const char *msg, const char *arg) {
    fprintf(stderr, "probe-timeline: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    return 1;
}

int main(int argc, char **argv) {
    const char *dir = NULL;
    int batch = 64, steps = 32, argmax = 0, top = 16, fused = -1, micro = 0;
    bool random_w = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--random-weights")) random_w = true;
        else if (!strcmp(a, "--argmax")) argmax = 1;
        else if (i + 1 >= argc) return fail("missing value", a);
        else if (!strcmp(a, "-m")) dir = argv[++i];
        else if (!strcmp(a, "--batch")) batch = atoi(argv[++i]);
        else if (!strcmp(a, "-n")) steps = atoi(argv[++i]);
        else if (!strcmp(a, "--top")) top = atoi(argv[++i]);
        else if (!strcmp(a, "--fused")) {
            const char *v = argv[++i];
            fused = !strcmp(v, "auto") ? -1 : !strcmp(v, "0") ? 0 : !strcmp(v, "1") ? 1 : -2;
            if (fused == -2) return fail("--fused takes auto, 0 or 1", v);
        } else if (!strcmp(a, "--micro")) {
            micro = atoi(argv[++i]);
            if (micro < 0 || micro > 4) return fail("--micro takes 0 (auto) .. 4", argv[i]);
        } else return fail("unknown argument", a);
    }
    if (!dir || batch < 1 || batch > 4096 || steps < 1 || steps > 100000 || top < 1)
        return fail("usage: probe-timeline -m DIR [--random-weights] [--batch B] [-n STEPS] "
                    "[--argmax] [--fused auto|0|1] [--micro 0..4] [--top N]",
                    NULL);
    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = TINFER_BACKEND_CUDA;
    mp.random_weights = random_w;
    tinfer_model *m = NULL;
    const tinfer_status ls = tinfer_model_load(dir, &mp, &m);
    if (ls != TINFER_OK) { /* no GPU or no CUDA build: skipped */
        fprintf(stderr, "probe-timeline: %s\n", tinfer_last_error());
        return ls == TINFER_ERR_NO_DEVICE ? 77 : 1;
    }
    tinfer_context_params cp = tinfer_context_default_params();
    cp.n_seq_max = batch;
    cp.n_ctx = TL_PROMPT + TL_WARM + steps;
    cp.n_batch = batch * TL_PROMPT; /* every prompt in one call */
    if (fused >= 0) cp.cuda_fused_decode = fused;
    cp.cuda_micro_batches = micro;
    tinfer_context *c = NULL;
    if (tinfer_context_init(m, &cp, &c) != TINFER_OK) {
        fprintf(stderr, "probe-timeline: %s\n", tinfer_last_error());
        tinfer_model_free(m);
        return 1;
    }
    const int32_t V = tinfer_model_n_vocab(m), n_max = batch * TL_PROMPT;
    tinfer_token *tok = malloc((size_t)n_max * sizeof *tok);
    int32_t *pos = malloc((size_t)n_max * sizeof *pos), *seq = malloc((size_t)n_max * sizeof *seq);
    int8_t *want = malloc((size_t)n_max);
    uint64_t *t_host = malloc((size_t)(steps + 1) * sizeof *t_host);
    int rc = 1;
    if (!tok || !pos || !seq || !want || !t_host) {
        fail("out of memory", NULL);
        goto done;
    }
    uint32_t rng = 12345u;
    for (int32_t i = 0; i < n_max; i++) {
        rng = rng * 1664525u + 1013904223u;
        tok[i] = (tinfer_token)((rng >> 8) % (uint32_t)V);
        pos[i] = i % TL_PROMPT, seq[i] = i / TL_PROMPT;
        want[i] = pos[i] == TL_PROMPT - 1 ? (int8_t)(argmax ? 2 : 1) : 0;
    }
    tinfer_batch pb = {n_max, tok, pos, seq, want};
    if (tinfer_decode(c, &pb) != TINFER_OK) {
        fail("prompt", tinfer_last_error());
        goto done;
    }
    for (int32_t s = 0; s < batch; s++) {
        seq[s] = s;
        want[s] = (int8_t)(argmax ? 2 : 1);
    }
    tinfer_batch sb = {batch, tok, pos, seq, want};
    for (int step = 0; step < TL_WARM + steps; step++) {
        if (step == TL_WARM) {
            if (cuptiActivityRegisterCallbacks(buf_req, buf_done) != CUPTI_SUCCESS ||
                cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
                fail("CUPTI: kernel activity records unavailable", NULL);
                goto done;
            }
        }
        for (int32_t s = 0; s < batch; s++) pos[s] = TL_PROMPT + step;
        if (step >= TL_WARM && cuptiGetTimestamp(&t_host[step - TL_WARM]) != CUPTI_SUCCESS) {
            fail("CUPTI: no timestamp", NULL);
            goto done;
        }
        if (tinfer_decode(c, &sb) != TINFER_OK) {
            fail("decode step", tinfer_last_error());
            goto done;
        }
        for (int32_t s = 0; s < batch; s++) tok[s] = tinfer_get_argmax(c, s);
    }
    if (cuptiGetTimestamp(&t_host[steps]) != CUPTI_SUCCESS ||
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != CUPTI_SUCCESS) {
        fail("CUPTI: flush", NULL);
        goto done;
    }
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (g_oom || g_n == 0) {
        fail(g_oom ? "out of memory for the records" : "no kernel records", NULL);
        goto done;
    }
    qsort(g_recs, g_n, sizeof *g_recs, by_start);
    /* each step's kernels: those that start inside its host period */
    tl_row *rows = calloc(g_n, sizeof *rows);
    size_t n_rows = 0, k = 0;
    double period = 0, span = 0, busy = 0;
    long kernels = 0;
    if (!rows) {
        fail("out of memory", NULL);
        goto done;
    }
    for (int step = 0; step < steps; step++) {
        while (k < g_n && g_recs[k].start < t_host[step]) k++;
        const size_t k0 = k;
        uint64_t last = 0;
        for (; k < g_n && g_recs[k].start < t_host[step + 1]; k++) {
            const tl_rec *r = &g_recs[k];
            const uint64_t pe = k == k0 ? r->start : last;
            const double mg = r->end > pe ? (double)(r->end - pe) : 0.0;
            busy += mg;
            if (r->end > last) last = r->end;
            char key[80];
            const char *nm = r->name;
            const char *cut = strchr(nm, 'I'); /* a mangled template's arguments start at I */
            snprintf(key, sizeof key, "%.*s grid %d", cut && cut - nm < 48 ? (int)(cut - nm) : 48, nm,
                     (int)r->grid);
            size_t j = 0;
            while (j < n_rows && strcmp(rows[j].key, key)) j++;
            if (j == n_rows) snprintf(rows[n_rows++].key, sizeof rows[0].key, "%s", key);
            rows[j].marg += mg, rows[j].dur += (double)(r->end - r->start), rows[j].n++;
            kernels++;
        }
        if (k > k0) span += (double)(last - g_recs[k0].start);
        period += (double)(t_host[step + 1] - t_host[step]);
    }
    qsort(rows, n_rows, sizeof *rows, by_marg);
    const double S = steps;
    printf("%s, %d sequences, %s; %d steps\n", tinfer_model_desc(m), batch,
           argmax ? "argmax only" : "logits to the host", steps);
    printf("per step: host period %.1f us (%.0f tok/s), GPU span %.1f us, kernels busy %.1f us, "
           "GPU idle %.1f us (%.0f%% of the period); %.0f kernels\n",
           period / S / 1e3, batch * S / (period / 1e9), span / S / 1e3, busy / S / 1e3,
           (period - busy) / S / 1e3, 100.0 * (period - busy) / period, kernels / S);
    printf("%10s %6s %10s %10s  kernel\n", "us/step", "n/step", "marginal", "duration");
    for (size_t j = 0; j < n_rows && j < (size_t)top; j++)
        printf("%10.1f %6.1f %10.2f %10.2f  %s\n", rows[j].marg / S / 1e3, rows[j].n / S,
               rows[j].marg / rows[j].n / 1e3, rows[j].dur / rows[j].n / 1e3, rows[j].key);
    free(rows);
    rc = 0;
done:
    free(tok), free(pos), free(seq), free(want), free(t_host), free(g_recs);
    tinfer_context_free(c);
    tinfer_model_free(m);
    return rc;
}

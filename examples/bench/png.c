/*
 * png.c — tinfer-bench --png PREFIX: two charts of a run (examples/bench_gemm/chart.c draws them).
 *
 * PREFIX-batch.png: aggregate decode tok/s against the batch size (log2 x), one line per tgN
 * (batch 1 is the plain tgN test; the others tgN@bB).
 *
 * PREFIX-roofline.png: a roofline. A step of T tokens does 2 x n_params x T FLOP (attention aside,
 * as in the GFLOP/s column) and reads the weights once (weight_bytes), so its arithmetic intensity
 * is 2 T / (weight_bytes / n_params) FLOP per byte of weights read: prefill ppN has T = N, decode
 * at batch B has T = B. A test's achieved GFLOP/s is 2 x n_params x its tok/s, so a decode point
 * sits at intensity x its weight GB/s, and its distance below the bandwidth roof is its "% of peak
 * bw". Roofs: the peak bandwidth (the CPU's read bandwidth, the GPU's device-to-device copy) and,
 * where measured, the compute roof (cuBLAS's BF16 GEMM on the GPU; none on the CPU, which the
 * title says). Log2 x, log10 y, one labelled point per test.
 */
#include "bench.h"
#include "examples/bench_gemm/chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Chart width that fits the title, centred over the plot left of a legend of names up to ~25
 * characters (5x7 font at scale 2: 12 pixels a character). */
static int32_t width_for(const char *title) {
    int32_t w = 12 * (int32_t)strlen(title) + 360;
    return w < 1100 ? 1100 : w > 2400 ? 2400 : w;
}

static int write_one(const char *path, tinfer_chart_spec *spec, const tinfer_chart_series *ser,
                     int32_t n_ser, const tinfer_chart_series_opts *opts) {
    char eb[256];
    spec->width = width_for(spec->title);
    spec->height = 700;
    if (tinfer_chart_write_png_opts(path, spec, ser, n_ser, opts, eb, sizeof eb) != 0) {
        fprintf(stderr, "tinfer-bench: error: %s\n", eb);
        return 1;
    }
    fprintf(stderr, "tinfer-bench: wrote %s\n", path);
    return 0;
}

/* One line per distinct tgN, points sorted by batch. */
static int batch_chart(const char *path, const char *desc, const test_result *r, int n) {
    double *x = calloc((size_t)n + 1, sizeof *x), *y = calloc((size_t)n + 1, sizeof *y);
    tinfer_chart_series *ser = calloc((size_t)n + 1, sizeof *ser);
    char(*names)[32] = calloc((size_t)n + 1, sizeof *names);
    int rc = 1, used = 0;
    int32_t n_ser = 0;
    if (!x || !y || !ser || !names) {
        fprintf(stderr, "tinfer-bench: error: out of memory\n");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        if (r[i].kind != 'g') continue;
        int seen = 0;
        for (int32_t s = 0; s < n_ser && !seen; s++)
            seen = atoi(names[s] + 2) == r[i].tokens;
        if (seen) continue;
        tinfer_chart_series *s = &ser[n_ser];
        snprintf(names[n_ser], sizeof names[n_ser], "tg%d", (int)r[i].tokens);
        s->name = names[n_ser++];
        s->x = x + used;
        s->y = y + used;
        for (int j = i; j < n; j++) {
            if (r[j].kind != 'g' || r[j].tokens != r[i].tokens) continue;
            int k = used + s->n++; /* insertion by batch */
            for (; k > used && x[k - 1] > r[j].batch; k--) {
                x[k] = x[k - 1];
                y[k] = y[k - 1];
            }
            x[k] = r[j].batch;
            y[k] = r[j].mean;
        }
        used += s->n;
    }
    char title[512];
    snprintf(title, sizeof title, "aggregate decode tok/s vs batch size - %s", desc);
    tinfer_chart_spec spec = {
        title, "batch size (sequences a step)", "tok/s (all sequences)", 1, 0, 0, 0};
    rc = write_one(path, &spec, ser, n_ser, NULL);
done:
    free(x);
    free(y);
    free(ser);
    free(names);
    return rc;
}

enum { S_PREFILL, S_DECODE, S_BW, S_FLOPS, S_MAX };

static int roofline_chart(const char *path, const char *desc, double n_params, double weight_bytes,
                          const bench_peaks *pk, const test_result *r, int n) {
    const double bpe = weight_bytes / n_params; /* bytes per weight element */
    double *x[2] = {calloc((size_t)n + 1, sizeof(double)), calloc((size_t)n + 1, sizeof(double))};
    double *y[2] = {calloc((size_t)n + 1, sizeof(double)), calloc((size_t)n + 1, sizeof(double))};
    const char **lab[2] = {calloc((size_t)n + 1, sizeof(char *)),
                           calloc((size_t)n + 1, sizeof(char *))};
    int rc = 1;
    if (!x[0] || !x[1] || !y[0] || !y[1] || !lab[0] || !lab[1]) {
        fprintf(stderr, "tinfer-bench: error: out of memory\n");
        goto done;
    }
    int32_t cnt[2] = {0, 0};
    double xlo = INFINITY, xhi = 0;
    for (int i = 0; i < n; i++) {
        const int k = r[i].kind == 'p' ? S_PREFILL : S_DECODE;
        const double t = r[i].kind == 'p' ? r[i].tokens : r[i].batch;
        x[k][cnt[k]] = 2.0 * t / bpe;
        y[k][cnt[k]] = 2.0 * n_params * r[i].mean / 1e9;
        lab[k][cnt[k]] = r[i].name;
        xlo = fmin(xlo, x[k][cnt[k]]);
        xhi = fmax(xhi, x[k][cnt[k]]);
        cnt[k]++;
    }
    if (!(xlo <= xhi)) xlo = xhi = 1; /* no tests: the roofs alone */
    const double bw = pk->bw_gbs, peak = pk->gflops;
    const double knee = bw > 0 && peak > 0 ? peak / bw : 0; /* FLOP/byte where the roofs meet */
    if (knee > 0) xlo = fmin(xlo, knee), xhi = fmax(xhi, knee);
    xlo /= 2, xhi *= 2;
    double bx[2] = {xlo, knee > 0 ? knee : xhi}, by[2] = {bw * bx[0], bw * bx[1]};
    double fx[2] = {knee > 0 ? knee : xlo, xhi}, fy[2] = {peak, peak};

    tinfer_chart_series ser[S_MAX];
    tinfer_chart_series_opts opts[S_MAX];
    memset(ser, 0, sizeof ser);
    memset(opts, 0, sizeof opts);
    char bw_name[96], fl_name[96];
    int32_t ns = 0;
    static const char *const kind_name[2] = {"prefill ppN", "decode tgN@bB"};
    for (int k = 0; k < 2; k++)
        if (cnt[k]) {
            ser[ns] = (tinfer_chart_series){kind_name[k], x[k], y[k], cnt[k]};
            opts[ns++] = (tinfer_chart_series_opts){TINFER_CHART_DOTS, lab[k]};
        }
    const int gpu = !strcmp(pk->where, "cuda");
    if (bw > 0) {
        snprintf(bw_name, sizeof bw_name, "%s %.0f GB/s", gpu ? "copy bw" : "read bw", bw);
        ser[ns] = (tinfer_chart_series){bw_name, bx, by, 2};
        opts[ns++] = (tinfer_chart_series_opts){TINFER_CHART_LINE, NULL};
    }
    if (peak > 0) {
        snprintf(fl_name, sizeof fl_name, "cuBLAS BF16 %.0f TFLOP/s", peak / 1e3);
        ser[ns] = (tinfer_chart_series){fl_name, fx, fy, 2};
        opts[ns++] = (tinfer_chart_series_opts){TINFER_CHART_LINE, NULL};
    }
    char title[512];
    const char *roofs = bw <= 0 && peak <= 0 ? "no roofs (peaks not measured)"
                        : gpu && peak > 0    ? "roofs: copy bandwidth, cuBLAS BF16 GEMM"
                        : gpu                ? "roof: copy bandwidth (no compute roof measured)"
                                             : "roof: read bandwidth (no compute roof on the CPU)";
    snprintf(title, sizeof title, "roofline, %s - %s", roofs, desc);
    tinfer_chart_spec spec = {title, "FLOP per byte of weights read", "GFLOP/s", 1, 1, 0, 0};
    rc = write_one(path, &spec, ser, ns, opts);
done:
    for (int k = 0; k < 2; k++) {
        free(x[k]);
        free(y[k]);
        free(lab[k]);
    }
    return rc;
}

int bench_write_pngs(const char *prefix, const char *model_desc, double n_params,
                     double weight_bytes, const bench_peaks *peaks, const test_result *r, int n) {
    size_t len = strlen(prefix) + sizeof "-roofline.png";
    char *path = malloc(len);
    if (!path || n_params <= 0 || weight_bytes <= 0) {
        fprintf(stderr, "tinfer-bench: error: --png: %s\n", path ? "empty model" : "out of memory");
        free(path);
        return 1;
    }
    snprintf(path, len, "%s-batch.png", prefix);
    int rc = batch_chart(path, model_desc, r, n);
    snprintf(path, len, "%s-roofline.png", prefix);
    rc |= roofline_chart(path, model_desc, n_params, weight_bytes, peaks, r, n);
    free(path);
    return rc;
}

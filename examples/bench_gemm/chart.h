/*
 * chart.h — a small line chart written to PNG, for the GEMM benchmarks (FP32 ladder, BF16 GEMMs).
 *
 * One chart = several named series of (x, y) points drawn as coloured polylines with dot
 * markers, a white background, axes with tick labels, axis titles, a title and a legend. Text
 * uses a built-in 5x7 bitmap font (ASCII 32..126; lower case is drawn as upper case), so the
 * module needs nothing but stb_image_write (Debian libstb-dev, <stb/stb_image_write.h>).
 * The x axis can be log2 (GEMM sizes 128..8192); the y axis is linear from 0 (or log10).
 * Points with y <= 0 or non-finite x/y are skipped (a rung not measured at that size).
 * Optional per-series options (tinfer_chart_write_png_opts) draw a series as a line only (a roof)
 * or as dots only (unconnected measurements), and write a label beside each point.
 */
#ifndef TINFER_BENCH_CHART_H
#define TINFER_BENCH_CHART_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tinfer_chart_series {
    const char *name;  /* legend text */
    const double *x;   /* [n] */
    const double *y;   /* [n] */
    int32_t n;
} tinfer_chart_series;

/* How a series is drawn; zeroed (or opts NULL) = a line with dot markers, no labels. */
typedef enum {
    TINFER_CHART_LINE_DOTS = 0,
    TINFER_CHART_LINE = 1, /* no markers */
    TINFER_CHART_DOTS = 2  /* markers only, not connected */
} tinfer_chart_style;

typedef struct tinfer_chart_series_opts {
    tinfer_chart_style style;
    const char *const *labels; /* [n] text right of each point (NULL entries skipped), or NULL */
} tinfer_chart_series_opts;

typedef struct tinfer_chart_spec {
    const char *title;   /* drawn above the plot; may be NULL */
    const char *x_label; /* e.g. "M = N = K" */
    const char *y_label; /* e.g. "GFLOP/s" */
    int log2_x;          /* 1: x axis in log2 with ticks at powers of two */
    int log10_y;         /* 1: y axis in log10 (else linear from 0) */
    int32_t width;       /* pixels; 0 -> 1000 */
    int32_t height;      /* pixels; 0 -> 640 */
} tinfer_chart_spec;

/* Writes the chart to `path` as an RGB PNG. Returns 0, or -1 with a one-line reason in
 * errbuf (may be NULL). At most 16 series get distinct colours; more reuse them. */
int tinfer_chart_write_png(const char *path, const tinfer_chart_spec *spec,
                           const tinfer_chart_series *series, int32_t n_series, char *errbuf,
                           size_t errlen);
/* The same with per-series options: opts[n_series], or NULL (every series LINE_DOTS). */
int tinfer_chart_write_png_opts(const char *path, const tinfer_chart_spec *spec,
                                const tinfer_chart_series *series, int32_t n_series,
                                const tinfer_chart_series_opts *opts, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif

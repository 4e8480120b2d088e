/*
 * chart.c — line chart to PNG (see chart.h): an RGB canvas, Bresenham lines two pixels wide,
 * a 5x7 bitmap font drawn at scale 2, "nice" linear ticks (1/2/5 x 10^k), log2 x ticks at
 * powers of two, per-series styles (line, dots, both) and point labels, and stb_image_write for
 * the PNG. The glyph table below was drawn by hand for this file: 7 rows per glyph, 5 bits per
 * row, bit 4 = leftmost pixel.
 */
#include "chart.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

typedef struct glyph {
    char c;
    unsigned char rows[7];
} glyph;

static const glyph k_font[] = {
    {' ', {0, 0, 0, 0, 0, 0, 0}},
    {'!', {0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04}},
    {'#', {0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A}},
    {'%', {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}},
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}},
    {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {'*', {0x00, 0x04, 0x15, 0x0E, 0x15, 0x04, 0x00}},
    {'+', {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}},
    {',', {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08}},
    {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}},
    {'/', {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}},
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}},
    {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {':', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}},
    {'<', {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02}},
    {'=', {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00}},
    {'>', {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08}},
    {'@', {0x0E, 0x11, 0x17, 0x15, 0x17, 0x10, 0x0F}},
    {'A', {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'B', {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}},
    {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}},
    {'D', {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}},
    {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}},
    {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
    {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}},
    {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}},
    {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}},
    {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}},
    {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}},
    {'Q', {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}},
    {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
    {'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}},
    {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}},
    {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}},
    {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
    {'[', {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E}},
    {']', {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E}},
    {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F}},
    {'x', {0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11}},
};

/* Unknown characters draw as an empty box so a missing glyph is visible, not silent. */
static const unsigned char k_box[7] = {0x1F, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1F};

enum { FONT_SCALE = 2, GLYPH_W = 6 * FONT_SCALE, GLYPH_H = 7 * FONT_SCALE };

typedef struct canvas {
    int w, h;
    unsigned char *px; /* [h, w, 3] */
} canvas;

/* 16 distinguishable colours (Tableau-like 10 + 6 darker), RGB. */
static const unsigned char k_colors[16][3] = {
    {31, 119, 180},  {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189},
    {140, 86, 75},   {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207},
    {0, 0, 0},       {230, 0, 230},   {160, 0, 80},   {80, 120, 0},   {200, 160, 0},
    {0, 130, 130}};

static const unsigned char *glyph_rows(char c) {
    if (c >= 'a' && c <= 'z' && c != 'x') c = (char)(c - 'a' + 'A');
    for (size_t i = 0; i < sizeof k_font / sizeof k_font[0]; i++)
        if (k_font[i].c == c) return k_font[i].rows;
    return k_box;
}

static void put(canvas *cv, int x, int y, const unsigned char *rgb) {
    if (x < 0 || y < 0 || x >= cv->w || y >= cv->h) return;
    unsigned char *p = cv->px + ((size_t)y * (size_t)cv->w + (size_t)x) * 3;
    p[0] = rgb[0];
    p[1] = rgb[1];
    p[2] = rgb[2];
}

static void fill_rect(canvas *cv, int x0, int y0, int x1, int y1, const unsigned char *rgb) {
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) put(cv, x, y, rgb);
}

/* Bresenham; `thick` > 1 stamps a small square at each step. */
static void line(canvas *cv, int x0, int y0, int x1, int y1, int thick, const unsigned char *rgb) {
    int dx = abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
    int dy = -abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    int e = dx + dy;
    for (;;) {
        fill_rect(cv, x0 - thick / 2, y0 - thick / 2, x0 + (thick - 1) / 2, y0 + (thick - 1) / 2,
                  rgb);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * e;
        if (e2 >= dy) { e += dy; x0 += sx; }
        if (e2 <= dx) { e += dx; y0 += sy; }
    }
}

/* Horizontal text with its top-left at (x, y); vertical (rotated 90 degrees counter-clockwise,
 * reading bottom to top) with its bottom-left at (x, y). */
static void text(canvas *cv, int x, int y, const char *s, int vertical, const unsigned char *rgb) {
    for (int i = 0; s[i]; i++) {
        const unsigned char *rows = glyph_rows(s[i]);
        for (int r = 0; r < 7; r++)
            for (int c = 0; c < 5; c++) {
                if (!(rows[r] & (0x10 >> c))) continue;
                for (int a = 0; a < FONT_SCALE; a++)
                    for (int b = 0; b < FONT_SCALE; b++) {
                        int gx = c * FONT_SCALE + b, gy = r * FONT_SCALE + a;
                        if (!vertical)
                            put(cv, x + i * GLYPH_W + gx, y + gy, rgb);
                        else
                            put(cv, x + gy, y - (i * GLYPH_W + gx), rgb);
                    }
            }
    }
}

static int text_w(const char *s) { return (int)strlen(s) * GLYPH_W; }

static void set_err(char *errbuf, size_t errlen, const char *fmt, ...) {
    if (!errbuf || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, errlen, fmt, ap);
    va_end(ap);
}

static double nice_step(double range, int target_ticks) {
    double raw = range / target_ticks, p = pow(10.0, floor(log10(raw))), f = raw / p;
    double m = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return m * p;
}

static void fmt_num(char *buf, size_t n, double v) {
    if (fabs(v) >= 1e6 || (fabs(v) < 1e-2 && v != 0))
        snprintf(buf, n, "%.0e", v);
    else if (fabs(v - floor(v + 0.5)) < 1e-9)
        snprintf(buf, n, "%.0f", v);
    else
        snprintf(buf, n, "%g", v);
}

int tinfer_chart_write_png(const char *path, const tinfer_chart_spec *spec,
                           const tinfer_chart_series *series, int32_t n_series, char *errbuf,
                           size_t errlen) {
    return tinfer_chart_write_png_opts(path, spec, series, n_series, NULL, errbuf, errlen);
}

int tinfer_chart_write_png_opts(const char *path, const tinfer_chart_spec *spec,
                                const tinfer_chart_series *series, int32_t n_series,
                                const tinfer_chart_series_opts *opts, char *errbuf, size_t errlen) {
    static const unsigned char white[3] = {255, 255, 255}, black[3] = {0, 0, 0},
                               grid[3] = {225, 225, 225};
    if (!path || !spec || (n_series > 0 && !series) || n_series < 0) {
        set_err(errbuf, errlen, "chart: bad arguments");
        return -1;
    }
    canvas cv = {spec->width > 0 ? spec->width : 1000, spec->height > 0 ? spec->height : 640, NULL};
    if (cv.w < 200 || cv.h < 150 || cv.w > 8000 || cv.h > 8000) {
        set_err(errbuf, errlen, "chart: size %dx%d out of range 200x150..8000x8000", cv.w, cv.h);
        return -1;
    }
    /* Data range over the points that will be drawn. */
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    int max_name = 0;
    for (int32_t s = 0; s < n_series; s++) {
        if (series[s].name && text_w(series[s].name) > max_name) max_name = text_w(series[s].name);
        for (int32_t i = 0; i < series[s].n; i++) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!isfinite(x) || !isfinite(y) || y <= 0 || (spec->log2_x && x <= 0)) continue;
            double tx = spec->log2_x ? log2(x) : x, ty = spec->log10_y ? log10(y) : y;
            xmin = fmin(xmin, tx); xmax = fmax(xmax, tx);
            ymin = fmin(ymin, ty); ymax = fmax(ymax, ty);
        }
    }
    if (!(xmin <= xmax)) { xmin = 0; xmax = 1; ymin = 0; ymax = 1; }
    if (spec->log2_x) { xmin = floor(xmin); xmax = ceil(xmax); }
    if (xmax - xmin < 1e-12) { xmin -= 0.5; xmax += 0.5; }
    double ystep;
    if (spec->log10_y) {
        ymin = floor(ymin); ymax = ceil(ymax);
        if (ymax - ymin < 1) ymax = ymin + 1;
        ystep = 1;
    } else {
        ymin = 0;
        if (ymax <= 0) ymax = 1;
        ystep = nice_step(ymax, 8);
        ymax = ceil(ymax * 1.02 / ystep) * ystep;
    }

    cv.px = malloc((size_t)cv.w * (size_t)cv.h * 3);
    if (!cv.px) {
        set_err(errbuf, errlen, "chart: out of memory for %dx%d", cv.w, cv.h);
        return -1;
    }
    memset(cv.px, 255, (size_t)cv.w * (size_t)cv.h * 3);
    int L = 40 + GLYPH_H + 8 * GLYPH_W, T = 20 + 2 * GLYPH_H;
    int R = cv.w - (max_name + 60), B = cv.h - (30 + 2 * GLYPH_H);
    if (R - L < 100) R = L + 100;
#define PX(tx) (L + (int)lround(((tx) - xmin) / (xmax - xmin) * (R - L)))
#define PY(ty) (B - (int)lround(((ty) - ymin) / (ymax - ymin) * (B - T)))
    char buf[64];
    /* y grid + ticks */
    for (double v = ymin; v <= ymax + ystep * 1e-6; v += ystep) {
        int py = PY(v);
        line(&cv, L, py, R, py, 1, grid);
        line(&cv, L - 5, py, L, py, 1, black);
        fmt_num(buf, sizeof buf, spec->log10_y ? pow(10, v) : v);
        text(&cv, L - 8 - text_w(buf), py - GLYPH_H / 2, buf, 0, black);
    }
    /* x grid + ticks */
    if (spec->log2_x) {
        for (double e = xmin; e <= xmax + 1e-9; e += 1) {
            int px = PX(e);
            line(&cv, px, T, px, B, 1, grid);
            line(&cv, px, B, px, B + 5, 1, black);
            fmt_num(buf, sizeof buf, pow(2.0, e));
            text(&cv, px - text_w(buf) / 2, B + 8, buf, 0, black);
        }
    } else {
        double xs = nice_step(xmax - xmin, 8);
        for (double v = ceil(xmin / xs) * xs; v <= xmax + xs * 1e-6; v += xs) {
            int px = PX(v);
            line(&cv, px, T, px, B, 1, grid);
            line(&cv, px, B, px, B + 5, 1, black);
            fmt_num(buf, sizeof buf, v);
            text(&cv, px - text_w(buf) / 2, B + 8, buf, 0, black);
        }
    }
    line(&cv, L, T, L, B, 2, black);
    line(&cv, L, B, R, B, 2, black);
    if (spec->title) text(&cv, (L + R - text_w(spec->title)) / 2, 10, spec->title, 0, black);
    if (spec->x_label)
        text(&cv, (L + R - text_w(spec->x_label)) / 2, B + 14 + GLYPH_H, spec->x_label, 0, black);
    if (spec->y_label)
        text(&cv, 10, (T + B + text_w(spec->y_label)) / 2, spec->y_label, 1, black);

    /* series */
    for (int32_t s = 0; s < n_series; s++) {
        const unsigned char *col = k_colors[s % 16];
        const tinfer_chart_series_opts *o = opts ? &opts[s] : NULL;
        const int lines = !o || o->style != TINFER_CHART_DOTS;
        const int dots = !o || o->style != TINFER_CHART_LINE;
        int have = 0, lx = 0, ly = 0;
        for (int32_t i = 0; i < series[s].n; i++) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!isfinite(x) || !isfinite(y) || y <= 0 || (spec->log2_x && x <= 0)) continue;
            int px = PX(spec->log2_x ? log2(x) : x), py = PY(spec->log10_y ? log10(y) : y);
            if (have && lines) line(&cv, lx, ly, px, py, 2, col);
            if (dots) fill_rect(&cv, px - 3, py - 3, px + 3, py + 3, col);
            if (o && o->labels && o->labels[i])
                text(&cv, px + 7, py - GLYPH_H - 2, o->labels[i], 0, black);
            lx = px; ly = py; have = 1;
        }
        /* legend entry */
        int ey = T + 4 + s * (GLYPH_H + 8);
        line(&cv, R + 12, ey + GLYPH_H / 2, R + 36, ey + GLYPH_H / 2, 3, col);
        if (series[s].name) text(&cv, R + 42, ey, series[s].name, 0, black);
    }
    (void)white;
#undef PX
#undef PY
    int ok = stbi_write_png(path, cv.w, cv.h, 3, cv.px, cv.w * 3);
    free(cv.px);
    if (!ok) {
        set_err(errbuf, errlen, "chart: cannot write PNG '%s'", path);
        return -1;
    }
    return 0;
}

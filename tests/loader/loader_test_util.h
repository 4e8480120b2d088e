/*
 * loader_test_util.h — helpers shared by the loader tests: a scratch directory made with mkdtemp
 * (removed at exit), writers for raw files and safetensors images, and check macros that count
 * failures instead of stopping, so one run reports every broken case.
 * Each bad-input case asserts both the status code and that the message names the culprit.
 */
#ifndef TINFER_LOADER_TEST_UTIL_H
#define TINFER_LOADER_TEST_UTIL_H

#include "base/error.h"

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int g_failures;
static char g_tmp[4096];

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            g_failures++;                                                                          \
        }                                                                                          \
    } while (0)

/* status == want and every non-NULL needle occurs in the message. */
static inline void check_err_at(const char *file, int line, tinfer_status got, tinfer_status want,
                         const tinfer_err *err, const char *n1, const char *n2, const char *n3) {
    const char *needles[3] = {n1, n2, n3};
    if (got != want) {
        fprintf(stderr, "%s:%d: status %d (%s), want %d (%s); message: %s\n", file, line, got,
                tinfer_status_str(got), want, tinfer_status_str(want), err->msg);
        g_failures++;
        return;
    }
    for (int i = 0; i < 3; i++)
        if (needles[i] && !strstr(err->msg, needles[i])) {
            fprintf(stderr, "%s:%d: message lacks \"%s\": %s\n", file, line, needles[i], err->msg);
            g_failures++;
        }
    if (strchr(err->msg, '\n')) {
        fprintf(stderr, "%s:%d: message is not one line: %s\n", file, line, err->msg);
        g_failures++;
    }
}
#define CHECK_ERR(got, want, err, n1, n2, n3) check_err_at(__FILE__, __LINE__, got, want, err, n1, n2, n3)

static inline int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    chmod(p, 0700); /* a test may have made it unreadable */
    return remove(p);
}
static inline void tmp_cleanup(void) {
    if (g_tmp[0]) nftw(g_tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
static inline void tmp_init(const char *tag) {
    const char *base = getenv("TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%s/tinfer-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        exit(1);
    }
    atexit(tmp_cleanup);
}

/* Returns a static path g_tmp/name (valid until the next call with the same slot). */
static inline const char *tpath(int slot, const char *name) {
    static char buf[8][4200];
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", g_tmp, name);
    return buf[slot];
}

static inline void make_dir(const char *rel) {
    if (mkdir(tpath(7, rel), 0700) != 0) {
        perror(rel);
        exit(1);
    }
}

static inline void write_raw(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* safetensors image: u64 LE header length (hlen_override when not UINT64_MAX), header, data. */
static inline size_t build_st(uint8_t *out, size_t cap, const char *header, const void *data, size_t dlen,
                       uint64_t hlen_override) {
    size_t hl = strlen(header);
    uint64_t v = hlen_override != UINT64_MAX ? hlen_override : hl;
    if (8 + hl + dlen > cap) {
        fprintf(stderr, "build_st: image too large\n");
        exit(1);
    }
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(v >> (8 * i));
    memcpy(out + 8, header, hl);
    if (dlen) memcpy(out + 8 + hl, data, dlen);
    return 8 + hl + dlen;
}

static inline void write_st(const char *path, const char *header, const void *data, size_t dlen) {
    static uint8_t img[1 << 16];
    size_t n = build_st(img, sizeof img, header, data, dlen, UINT64_MAX);
    write_raw(path, img, n);
}

#endif

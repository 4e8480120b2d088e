/*
 * test_util.h — the few helpers every C test shares: a non-fatal CHECK that counts failures
 * (so one run reports every broken case, each with file:line) and reading a whole file.
 * Header-only: each test is one executable.
 */
#ifndef TINFER_TEST_UTIL_H
#define TINFER_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>

static int test_failures = 0;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            test_failures++;                                                                       \
        }                                                                                          \
    } while (0)

/* The whole file, NUL-terminated (so JSON text can be parsed in place); NULL if unreadable.
 * *n (if not NULL) receives the byte count without the terminator. */
static inline char *test_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t)len + 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf) return NULL;
    buf[len] = '\0';
    if (n) *n = (size_t)len;
    return buf;
}

/* The exit status of a test: 1 (after a count on stderr) if any CHECK failed, else 0 ("ok"). */
static inline int test_finish(void) {
    if (test_failures) {
        fprintf(stderr, "%d check(s) failed\n", test_failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}

#endif

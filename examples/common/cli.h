/*
 * cli.h — command-line pieces every example program shares (header-only).
 */
#ifndef TINFER_EXAMPLES_CLI_H
#define TINFER_EXAMPLES_CLI_H

#include "tinfer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "--backend cpu|cuda|auto" -> *out; 0, or -1 for any other word (*out unchanged). */
static inline int tinfer_example_backend(const char *v, tinfer_backend *out) {
    if (!strcmp(v, "cpu"))
        *out = TINFER_BACKEND_CPU;
    else if (!strcmp(v, "cuda"))
        *out = TINFER_BACKEND_CUDA;
    else if (!strcmp(v, "auto"))
        *out = TINFER_BACKEND_AUTO;
    else
        return -1;
    return 0;
}

/* "--tp N": N in [0, 1024] (0 or 1: off; the library says which larger values it takes);
 * 0, or -1 for anything else (*out unchanged). */
static inline int tinfer_example_tp(const char *v, int32_t *out) {
    if (!v[0] || strspn(v, "0123456789") != strlen(v) || strlen(v) > 4) return -1;
    const long n = strtol(v, NULL, 10);
    if (n > 1024) return -1;
    *out = (int32_t)n;
    return 0;
}

/* "--gpus 0,1,...": at most cap distinct device ids in [0, 1023], digits and commas only, no
 * empty item; 0 (ids[0..*n) filled), or -1 for anything else. */
static inline int tinfer_example_gpus(const char *v, int32_t *ids, int cap, int32_t *n) {
    int32_t k = 0;
    for (const char *p = v;; p++) {
        const size_t len = strspn(p, "0123456789");
        if (len == 0 || len > 4 || k == cap) return -1;
        const long id = strtol(p, NULL, 10);
        if (id > 1023) return -1;
        for (int32_t j = 0; j < k; j++)
            if (ids[j] == id) return -1;
        ids[k++] = (int32_t)id;
        p += len;
        if (*p == '\0') break;
        if (*p != ',') return -1;
    }
    *n = k;
    return 0;
}

/* The device options the model tools share, "--backend", "--tp" and "--gpus" (a: the option,
 * v: its value): 0 when a is none of them; 1 when it is one and v parsed into the outputs; -1
 * when v is bad (why: the one-line reason, including v). */
static inline int tinfer_example_device_opt(const char *a, const char *v, tinfer_backend *backend,
                                            int32_t *tp, int32_t *gpus, int cap, int32_t *n_gpus,
                                            char *why, size_t why_cap) {
    if (!strcmp(a, "--backend")) {
        if (tinfer_example_backend(v, backend) == 0) return 1;
        snprintf(why, why_cap, "--backend: '%s' is not cpu, cuda or auto", v);
    } else if (!strcmp(a, "--tp")) {
        if (tinfer_example_tp(v, tp) == 0) return 1;
        snprintf(why, why_cap, "--tp: '%s' is not an integer in [0, 1024]", v);
    } else if (!strcmp(a, "--gpus")) {
        if (tinfer_example_gpus(v, gpus, cap, n_gpus) == 0) return 1;
        snprintf(why, why_cap, "--gpus: '%s' is not a list of distinct device ids (e.g. 0,1)", v);
    } else {
        return 0;
    }
    return -1;
}

#endif

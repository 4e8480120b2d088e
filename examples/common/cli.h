/*
 * cli.h — command-line pieces every example program shares (header-only).
 */
#ifndef TINFER_EXAMPLES_CLI_H
#define TINFER_EXAMPLES_CLI_H

#include "tinfer.h"

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

#endif

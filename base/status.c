/* status.c — status text and the error slots described in error.h. */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char tls_last_error[TINFER_ERR_MSG_MAX];

const char *tinfer_status_str(tinfer_status s) {
    switch (s) {
    case TINFER_OK: return "ok";
    case TINFER_ERR_INVALID_ARG: return "invalid argument";
    case TINFER_ERR_IO: return "i/o error";
    case TINFER_ERR_FORMAT: return "malformed file";
    case TINFER_ERR_UNSUPPORTED: return "unsupported";
    case TINFER_ERR_OUT_OF_MEMORY: return "out of memory";
    case TINFER_ERR_BUFFER_TOO_SMALL: return "buffer too small";
    case TINFER_ERR_CONTEXT_FULL: return "context full";
    case TINFER_ERR_CUDA: return "CUDA error";
    case TINFER_ERR_NO_DEVICE: return "no device";
    case TINFER_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char *tinfer_last_error(void) { return tls_last_error; }

tinfer_status tinfer_err_set(tinfer_err *err, tinfer_status status, const char *fmt, ...) {
    char buf[TINFER_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* One line: a message is shown as `error: <message>`; newlines from file contents would
     * break that. */
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    memcpy(tls_last_error, buf, sizeof buf);
    if (err) memcpy(err->msg, buf, sizeof buf);
    return status;
}

tinfer_status tinfer_err_copy(tinfer_err *dst, const tinfer_err *src, tinfer_status status) {
    if (src && dst != src) {
        if (dst) memcpy(dst->msg, src->msg, sizeof dst->msg);
        memcpy(tls_last_error, src->msg, sizeof tls_last_error);
    }
    return status;
}

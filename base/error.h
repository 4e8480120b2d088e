/*
 * error.h — internal error state shared by every part of the library.
 *
 * A tinfer_err is a message slot embedded in each handle (and one thread-local slot behind
 * tinfer_last_error()). tinfer_err_set formats a one-line message, stores it in the slot and in
 * the thread-local slot, and returns the status so callers can write
 *     return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: tensor '%s': bad shape", path, name);
 * err may be NULL (only the thread-local slot is written). Never prints.
 */
#ifndef TINFER_ERROR_H
#define TINFER_ERROR_H

#include "tinfer.h"

#ifdef __cplusplus
extern "C" { /* also called from the CUDA (.cu, C++) files */
#endif

#define TINFER_ERR_MSG_MAX 512

typedef struct tinfer_err {
    char msg[TINFER_ERR_MSG_MAX];
} tinfer_err;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
tinfer_status tinfer_err_set(tinfer_err *err, tinfer_status status, const char *fmt, ...);

/* Copies src's message into dst (and the thread-local slot); returns status. For passing an
 * error from an inner object (e.g. a loader) up to the handle that owns it. */
tinfer_status tinfer_err_copy(tinfer_err *dst, const tinfer_err *src, tinfer_status status);

#ifdef __cplusplus
}
#endif

#endif

/*
 * cuda_check.h — the one way CUDA / cuBLAS calls are checked inside the library.
 *
 * TINFER_CUDA_TRY(err, call) records "<call> failed at file:line: <cuda error text>" in err
 * (a tinfer_err*, may be NULL) and jumps to `cleanup` with status = TINFER_ERR_CUDA. The
 * enclosing function declares `tinfer_status status = TINFER_OK;` and a `cleanup:` label.
 * TINFER_CUDA_LAUNCH_CHECK(err) does the same with cudaGetLastError() after a launch; when the
 * debug switch TINFER_CUDA_SYNC_DEBUG=1 is set in the environment it also synchronises so an
 * asynchronous fault names its kernel.
 */
#ifndef TINFER_CUDA_CHECK_H
#define TINFER_CUDA_CHECK_H

#include "base/error.h"

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif
/* 1 when the documented debug switch TINFER_CUDA_SYNC_DEBUG=1 is set (read once). */
int tinfer_cuda_sync_debug(void);
#ifdef __cplusplus
}
#endif

#define TINFER_CUDA_TRY(err, call)                                                                 \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            status = tinfer_err_set((err), TINFER_ERR_CUDA, "%s failed at %s:%d: %s", #call,       \
                                    __FILE__, __LINE__, cudaGetErrorString(e_));                   \
            goto cleanup;                                                                          \
        }                                                                                          \
    } while (0)

#define TINFER_CUDA_LAUNCH_CHECK(err, kernel_name)                                                 \
    do {                                                                                           \
        cudaError_t e_ = cudaGetLastError();                                                       \
        if (e_ == cudaSuccess && tinfer_cuda_sync_debug()) e_ = cudaDeviceSynchronize();           \
        if (e_ != cudaSuccess) {                                                                   \
            status = tinfer_err_set((err), TINFER_ERR_CUDA, "kernel %s failed at %s:%d: %s",       \
                                    kernel_name, __FILE__, __LINE__, cudaGetErrorString(e_));      \
            goto cleanup;                                                                          \
        }                                                                                          \
    } while (0)

#endif

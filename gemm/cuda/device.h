/*
 * device.h — which GPU is here, and whether this binary carries code for it.
 */
#ifndef TINFER_DEVICE_H
#define TINFER_DEVICE_H

#include "runtime/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tinfer_device_info {
    int device;
    char name[256];
    int cc_major, cc_minor; /* compute capability */
    int n_sm;
    size_t l2_bytes;
    size_t smem_per_block_optin;
    double mem_bw_gbs;       /* from clock and bus width (datasheet-style; measure for ratios) */
} tinfer_device_info;

/* TINFER_OK and info filled when a CUDA device is usable and this binary has code that runs on
 * it. TINFER_ERR_NO_DEVICE when there is no GPU (message says so). TINFER_ERR_UNSUPPORTED with a
 * one-line message "this binary has kernels for sm_90a (PTX compute_90); the GPU '<name>' is
 * sm_XY" when the fatbinary has no image for the running architecture. */
tinfer_status tinfer_device_probe(int device, tinfer_device_info *info, tinfer_err *err);

#ifdef __cplusplus
}
#endif
#endif

/*
 * device.h — which GPU is here, and whether this binary carries code for it.
 */
#ifndef TINFER_DEVICE_H
#define TINFER_DEVICE_H

#include "base/error.h"

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

/* What the kernel launchers ask of the current device on every call, read from the runtime once
 * per device and cached (cudaDeviceGetAttribute is a driver call; a launcher that asked for
 * five attributes per launch spent that on every decode step). */
typedef struct tinfer_cuda_facts {
    int device;
    int cc_major;
    int n_sm;
    int smem_per_sm;          /* cudaDevAttrMaxSharedMemoryPerMultiprocessor */
    int smem_per_block_optin; /* cudaDevAttrMaxSharedMemoryPerBlockOptin */
    int smem_reserved;        /* cudaDevAttrReservedSharedMemoryPerBlock */
} tinfer_cuda_facts;

/* Facts of the current device (cudaGetDevice). TINFER_ERR_CUDA with a one-line message when the
 * runtime cannot say; the error is cleared from the runtime. */
tinfer_status tinfer_cuda_current_facts(tinfer_cuda_facts *f, tinfer_err *err);

#ifdef __cplusplus
}
#endif
#endif

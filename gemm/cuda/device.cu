/*
 * device.cu — device probing and the architecture check (see device.h).
 *
 * The check asks the runtime for the attributes of a tiny kernel compiled into this same
 * fatbinary: cudaFuncGetAttributes fails with cudaErrorNoKernelImageForDevice (or
 * cudaErrorInvalidDeviceFunction) when no SASS matches the GPU and no PTX can be JIT-compiled
 * for it. The message then names the architectures this binary was built for
 * (TINFER_CUDA_ARCH_LIST, from CMAKE_CUDA_ARCHITECTURES) and the one the GPU needs.
 */
#include "gemm/cuda/cuda_check.h"
#include "gemm/cuda/device.h"

#include <stdlib.h>
#include <string.h>

#ifndef TINFER_CUDA_ARCH_LIST
#define TINFER_CUDA_ARCH_LIST "unknown"
#endif

static __global__ void tinfer_probe_kernel(int *p) {
    if (p) *p = 1;
}

extern "C" int tinfer_cuda_sync_debug(void) {
    static int cached = -1;
    if (cached < 0) {
        const char *s = getenv("TINFER_CUDA_SYNC_DEBUG");
        cached = (s && s[0] == '1') ? 1 : 0;
    }
    return cached;
}

/* Cached per device number below TINFER_FACTS_DEVICES; each slot is filled once and never
 * changes (a benign race: two threads store the same values; `have` is set after the facts). */
#define TINFER_FACTS_DEVICES 64
extern "C" tinfer_status tinfer_cuda_current_facts(tinfer_cuda_facts *f, tinfer_err *err) {
    static tinfer_cuda_facts cache[TINFER_FACTS_DEVICES];
    static volatile int have[TINFER_FACTS_DEVICES];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return tinfer_err_set(err, TINFER_ERR_CUDA, "cannot query the current CUDA device");
    }
    if (dev >= 0 && dev < TINFER_FACTS_DEVICES && have[dev]) {
        *f = cache[dev];
        return TINFER_OK;
    }
    tinfer_cuda_facts d;
    d.device = dev;
    if (cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&d.n_sm, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&d.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&d.smem_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&d.smem_reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return tinfer_err_set(err, TINFER_ERR_CUDA, "cannot query CUDA device %d", dev);
    }
    if (dev >= 0 && dev < TINFER_FACTS_DEVICES) {
        cache[dev] = d;
        __sync_synchronize();
        have[dev] = 1;
    }
    *f = d;
    return TINFER_OK;
}

extern "C" tinfer_status tinfer_device_probe(int device, tinfer_device_info *info, tinfer_err *err) {
    tinfer_status status = TINFER_OK;
    int n = 0;
    cudaDeviceProp prop;
    cudaFuncAttributes fa;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        return tinfer_err_set(err, TINFER_ERR_NO_DEVICE, "no CUDA device found (%s)",
                              e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
    }
    if (device < 0 || device >= n)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "CUDA device %d out of range (have %d)",
                              device, n);
    TINFER_CUDA_TRY(err, cudaGetDeviceProperties(&prop, device));
    TINFER_CUDA_TRY(err, cudaSetDevice(device));
    e = cudaFuncGetAttributes(&fa, tinfer_probe_kernel);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "this binary has GPU code for %s only; the GPU '%s' is sm_%d%d "
                              "(rebuild with -DCMAKE_CUDA_ARCHITECTURES=%d%d)",
                              TINFER_CUDA_ARCH_LIST, prop.name, prop.major, prop.minor, prop.major,
                              prop.minor);
    }
    if (info) {
        memset(info, 0, sizeof *info);
        info->device = device;
        strncpy(info->name, prop.name, sizeof info->name - 1);
        info->cc_major = prop.major;
        info->cc_minor = prop.minor;
        info->n_sm = prop.multiProcessorCount;
        info->l2_bytes = (size_t)prop.l2CacheSize;
        info->smem_per_block_optin = prop.sharedMemPerBlockOptin;
        int mem_clock_khz = 0, bus_bits = 0;
        (void)cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device);
        (void)cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
        info->mem_bw_gbs = 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8) / 1e9;
    }
cleanup:
    return status;
}

/*
 * fill.cu — device-side random fill for the GEMM benchmarks: uniform [-1, 1) from a counter
 * hash (reproducible, no cuRAND dependency; never zeros).
 */
#include "examples/bench_gemm/fill.h"

static __global__ void bench_fill_kernel(float *p, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)(i >> 32) * 0x9e3779b9u ^ seed;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        p[i] = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

extern "C" int tinfer_bench_fill_uniform(float *dev, size_t n, uint32_t seed, cudaStream_t s) {
    bench_fill_kernel<<<1024, 256, 0, s>>>(dev, n, seed * 0x85ebca6bu + 1u);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

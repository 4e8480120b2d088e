/* fill.h — device-side random fill shared by the GEMM benchmarks (fill.cu). */
#ifndef TINFER_BENCH_FILL_H
#define TINFER_BENCH_FILL_H
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* Fills n floats at dev with uniform [-1, 1) values determined by (seed, index); asynchronous
 * on s. Returns 0, or -1 when the launch failed. */
int tinfer_bench_fill_uniform(float *dev, size_t n, uint32_t seed, cudaStream_t s);
#ifdef __cplusplus
}
#endif
#endif

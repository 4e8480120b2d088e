/*
 * peaks_cuda.h — the GPU's roofs for tinfer-bench (peaks_cuda.c; built only with the CUDA parts,
 * where CMake defines TINFER_BENCH_CUDA_PEAKS for tinfer-bench).
 */
#ifndef TINFER_BENCH_PEAKS_CUDA_H
#define TINFER_BENCH_PEAKS_CUDA_H

/* Device-to-device copy bandwidth in GB/s of the current device, read + write bytes counted (as
 * tinfer-bench-gemm's "copy" ceiling). 0: not measured (no device, or a CUDA call failed: one
 * line on stderr then; with no device, quietly). */
double bench_cuda_copy_gbs(void);

/* cuBLAS's BF16 GEMM rate in GFLOP/s (cublasGemmEx, BF16 in and out, FP32 compute, M = N = K =
 * BENCH_CUDA_GEMM_N). 0: not measured, as above. */
#define BENCH_CUDA_GEMM_N 8192
double bench_cuda_cublas_gflops(void);

#endif

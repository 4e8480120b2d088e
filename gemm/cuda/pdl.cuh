/*
 * pdl.cuh — programmatic dependent launch (PDL, sm_90), shared by every kernel family: the
 * device side (griddepcontrol wait / launch_dependents) and a launcher that asks for it.
 *
 * A kernel launched with programmatic stream serialization may start while the kernel before it
 * on the stream is still running, as soon as every block of that kernel has called
 * pdl_launch_dependents (or exited). It must therefore call pdl_wait before it reads anything an
 * earlier kernel wrote or writes anything an earlier kernel reads; pdl_wait returns once the
 * earlier grids have completed and their memory is visible. Only a kernel that calls pdl_wait
 * first may be launched with PDL. Calling pdl_launch_dependents early is always safe: it lets the
 * next grid be scheduled, and that grid's own pdl_wait still waits for this one to finish. In a
 * CUDA graph capture the launch becomes a programmatic edge. Below sm_90 both calls are empty and
 * the launcher never asks for PDL.
 */
#ifndef TINFER_GEMM_CUDA_PDL_CUH
#define TINFER_GEMM_CUDA_PDL_CUH

#include <cuda_runtime.h>
#include <utility>

/* Blocks until every grid this one depends on programmatically has completed and its memory
 * operations are visible; a no-op when the launch did not ask for PDL. */
static __device__ __forceinline__ void tinfer_pdl_wait(void) {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* This block no longer holds back the launch of the grid that depends on this one. */
static __device__ __forceinline__ void tinfer_pdl_launch_dependents(void) {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* Launches kernel<<<grid, block, smem, stream>>>(args...), with programmatic stream
 * serialization when pdl (the caller checked sm_90 and that the kernel calls tinfer_pdl_wait
 * first). Returns the launch's error. */
template <typename... KArgs, typename... Args>
static cudaError_t tinfer_launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                                 cudaStream_t stream, bool pdl, Args &&...args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    if (pdl) {
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
    }
    return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

#endif

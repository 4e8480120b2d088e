/*
 * ws_trace.cuh — phase timestamps of rung 03 (03_wgmma_ws.cu) for builds configured with
 * -DTINFER_WS_TRACE=ON (CMake); in every other build WS_TRACE expands to nothing.
 *
 * Each CTA (blockIdx.x < WS_TRACE_CTAS) writes %globaltimer (ns, one clock for the whole GPU) and
 * clock64 (this SM's cycles) into slot i when the traced thread reaches point i:
 *   0 entry (thread 0)                     1 after griddepcontrol.wait (thread 0)
 *   2 producer: last TMA load issued       3 consumer 0: main loop about to start
 *   4 consumer 0: (last) main loop done    5 split: past the cluster barrier
 *   6 split: partial sums reduced          7 consumer 0: epilogue done
 * A launch overwrites the slots of the CTAs it runs; tinfer_ws_trace_read copies them out and
 * tinfer_ws_trace_clear zeroes them (bench set "trace", examples/bench_gemm/bf16_trace.cu).
 */
#ifndef TINFER_GEMM_TC_WS_TRACE_CUH
#define TINFER_GEMM_TC_WS_TRACE_CUH

#include <stdint.h>

#define WS_TRACE_CTAS 1024
#define WS_TRACE_SLOTS 8

#ifdef TINFER_WS_TRACE
__device__ unsigned long long ws_trace_ns[WS_TRACE_CTAS][WS_TRACE_SLOTS];
__device__ long long ws_trace_clk[WS_TRACE_CTAS][WS_TRACE_SLOTS];
static __device__ __forceinline__ void ws_trace_mark(int slot) {
    if (blockIdx.x >= WS_TRACE_CTAS) return;
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    ws_trace_ns[blockIdx.x][slot] = t;
    ws_trace_clk[blockIdx.x][slot] = clock64();
}
#define WS_TRACE(cond, slot)                                                                       \
    do {                                                                                           \
        if (cond) ws_trace_mark(slot);                                                             \
    } while (0)

/* Host side (in 03_wgmma_ws.cu's translation unit, which owns the buffers). */
extern "C" int tinfer_ws_trace_read(unsigned long long *ns, long long *clk) {
    if (cudaMemcpyFromSymbol(ns, ws_trace_ns, sizeof ws_trace_ns) != cudaSuccess) return -1;
    return cudaMemcpyFromSymbol(clk, ws_trace_clk, sizeof ws_trace_clk) == cudaSuccess ? 0 : -1;
}
extern "C" int tinfer_ws_trace_clear(void) {
    static unsigned long long zn[WS_TRACE_CTAS][WS_TRACE_SLOTS];
    static long long zc[WS_TRACE_CTAS][WS_TRACE_SLOTS];
    if (cudaMemcpyToSymbol(ws_trace_ns, zn, sizeof zn) != cudaSuccess) return -1;
    return cudaMemcpyToSymbol(ws_trace_clk, zc, sizeof zc) == cudaSuccess ? 0 : -1;
}
#else
#define WS_TRACE(cond, slot)                                                                       \
    do {                                                                                           \
    } while (0)
#endif

#endif

/*
 * 06_vec.cu — rung 6: 128-bit loads and stores, A transposed in shared memory.
 *
 * Changed from rung 5: global tile loads are float4 (one LDG.128 instead of four LDG.32),
 * A is stored transposed (As[k][m]) so the 8 A values a thread needs at one k are two LDS.128
 * instead of eight LDS.32 (B likewise: Bs[k][n], two LDS.128), and C is written with STG.128.
 * Why: rung 5 issues 16 shared loads per 64 FMAs; this issues 4, leaving the FMA pipe more of
 * the issue slots. Precondition for the vector path: A, B, C 16-byte aligned and lda, ldb, ldc
 * multiples of 4 (C only for the vector stores); otherwise rung 5 runs (correct, slower).
 * The transposed store has 2-way bank conflicts (vec_tile.cuh, LAYOUT 0): rung 7 removes them.
 * Kernel: vec_tile.cuh, BM = BN = 128, BK = 8, TM = TN = 8, 256 threads.
 * Measured on the H200 (run 3, 2026-12-02, NN, % of cuBLAS SGEMM in the same run) 4096: 28.9 TFLOP/s = 56.4%; 4092:
 * 27.8 TFLOP/s = 58.3%; 2048: 30.9 TFLOP/s = 61.6%; 8192: 28.1 TFLOP/s = 55.0%
 */
#include "gemm/prefill/vec_tile.cuh"

extern "C" tinfer_status tinfer_sgemm_06_vec(const tinfer_sgemm_args *a, cudaStream_t s,
                                             tinfer_err *err) {
    return tsg::launch_vec_tile<128, 128, 8, 8, 8, 0>(a, s, err, "sgemm_vec (rung 6)");
}

/*
 * 07_bankfree.cu — rung 7: shared-memory bank-conflict removal, two ways, both measured.
 *
 * Changed from rung 6: the shared layout of As / Bs (vec_tile.cuh explains the arithmetic).
 *   rung 7  (TINFER_SGEMM_BANKFREE):     rows padded by 4 floats (BM + 4 = 132 = 4 mod 32).
 *   rung 12 (TINFER_SGEMM_BANKFREE_XOR): no padding; 16-byte chunk index XOR (k & 7).
 * Why: rung 6's transposed store of A (4 scalar STS per float4 loaded) sends rows k and k+4 of
 * a warp's store to the same banks, serialising each store instruction twice. Both fixes make
 * it one wavefront; the padded form costs 3% more shared memory, the XOR form costs an XOR per
 * address (hoisted out of the unrolled loop by the compiler where k is constant).
 * Expected gain is small: the stores are 4 per thread per 8-deep K step against 32 LDS.128 and
 * 512 FMAs, so conflicts there cost a few percent at most; the measurement says how much.
 * Measured on the H200 (run 3, 2026-12-02, NN, % of cuBLAS SGEMM in the same run) padded 4096: 28.9 TFLOP/s =
 * 56.4%; 4092: 27.8 TFLOP/s = 58.3%; 2048: 30.2 TFLOP/s = 60.1%; 8192: 28.2 TFLOP/s = 55.1%.
 * XOR (rung 12): 4096: 28.7 TFLOP/s = 56.0%; 4092: 27.7 TFLOP/s = 58.1%; 2048: 29.5 TFLOP/s =
 * 58.8%; 8192: 28.3 TFLOP/s = 55.4%. Neither moves the needle
 * (gemm/prefill/README.md, "Rungs 7 and 12").
 */
#include "gemm/prefill/vec_tile.cuh"

extern "C" tinfer_status tinfer_sgemm_07_bankfree(const tinfer_sgemm_args *a, int xor_layout,
                                                  cudaStream_t s, tinfer_err *err) {
    if (xor_layout)
        return tsg::launch_vec_tile<128, 128, 8, 8, 8, 2>(a, s, err, "sgemm_bankfree_xor (rung 12)");
    return tsg::launch_vec_tile<128, 128, 8, 8, 8, 1>(a, s, err, "sgemm_bankfree_pad (rung 7)");
}

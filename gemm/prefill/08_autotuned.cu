/*
 * 08_autotuned.cu — rung 8: the rung-7 kernel with tile sizes chosen per GPU and shape class.
 *
 * Changed from rung 7: BM, BN, BK, TM, TN are template parameters, and the launcher picks the
 * instantiation from the tuning cache (autotune.cu: searched on the running GPU by
 * `tinfer-bench-gemm --tune`, candidates pruned by the resource model, winner stored on disk
 * keyed by GPU name + shape class). Without a cache entry it runs config 0 (the seeds' A6000
 * winner 128x128x8, 8x8, which is also rung 7's). Why: the best tile depends on the GPU (SM
 * count, registers, shared memory per SM) and on the shape (small M or N leaves SMs idle with
 * 128x128 tiles); the articles found 128x128x16/8x8 best on an A6000 but 64x64x16/4x4 on A100.
 * The table below is the instantiated search space; autotune.cu enumerates the full grid
 * (BM,BN in 64..256, BK in 8..32, TM,TN in 4..16) and reports which valid points are not
 * compiled in.
 * Measured on the H200 (run 3, 2026-12-02, NN, % of cuBLAS SGEMM in the same run) 4096: 31.4 TFLOP/s = 61.2%; 4092:
 * 30.0 TFLOP/s = 63.1%; 2048: 33.1 TFLOP/s = 65.8%; 8192: 33.5 TFLOP/s = 65.6% (tuned tile:
 * 128x64x16, 8x4 per thread).
 */
#include "gemm/prefill/vec_tile.cuh"

#define R8_CFG(BM, BN, BK, TM, TN)                                                                \
    {BM, BN, BK, TM, TN, 0, 0, 1, (BM / TM) * (BN / TN),                                          \
     (size_t)BK * (BM + BN + 8) * sizeof(float),                                                  \
     (const void *)tsg::sgemm_vec_tile<BM, BN, BK, TM, TN, 1, false>,                             \
     (const void *)tsg::sgemm_vec_tile<BM, BN, BK, TM, TN, 1, true>}

static const tinfer_sgemm_cfg k_r8_cfgs[] = {
    R8_CFG(128, 128, 8, 8, 8),  R8_CFG(128, 128, 16, 8, 8), R8_CFG(128, 64, 16, 8, 4),
    R8_CFG(64, 128, 16, 4, 8),  R8_CFG(64, 64, 16, 4, 4),   R8_CFG(128, 256, 8, 8, 16),
    R8_CFG(256, 128, 8, 16, 8), R8_CFG(64, 64, 8, 8, 8),
};
enum { R8_N = (int)(sizeof k_r8_cfgs / sizeof k_r8_cfgs[0]) };

extern "C" int tinfer_sgemm_08_n_configs(void) { return R8_N; }
extern "C" const tinfer_sgemm_cfg *tinfer_sgemm_08_config(int i) {
    return (i >= 0 && i < R8_N) ? &k_r8_cfgs[i] : NULL;
}

extern "C" tinfer_status tinfer_sgemm_08_autotuned(const tinfer_sgemm_args *a, int config,
                                                   cudaStream_t s, tinfer_err *err) {
    if (config < 0) {
        int rung = 8, splits = 1;
        if (!tinfer_sgemm_tune_lookup(8, a, &rung, &config, &splits) || config >= R8_N) config = 0;
    }
    const char *nm = "sgemm_autotuned (rung 8)";
    switch (config) {
    case 0: return tsg::launch_vec_tile<128, 128, 8, 8, 8, 1>(a, s, err, nm);
    case 1: return tsg::launch_vec_tile<128, 128, 16, 8, 8, 1>(a, s, err, nm);
    case 2: return tsg::launch_vec_tile<128, 64, 16, 8, 4, 1>(a, s, err, nm);
    case 3: return tsg::launch_vec_tile<64, 128, 16, 4, 8, 1>(a, s, err, nm);
    case 4: return tsg::launch_vec_tile<64, 64, 16, 4, 4, 1>(a, s, err, nm);
    case 5: return tsg::launch_vec_tile<128, 256, 8, 8, 16, 1>(a, s, err, nm);
    case 6: return tsg::launch_vec_tile<256, 128, 8, 16, 8, 1>(a, s, err, nm);
    case 7: return tsg::launch_vec_tile<64, 64, 8, 8, 8, 1>(a, s, err, nm);
    default:
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "sgemm rung 8: config %d not in 0..%d",
                              config, R8_N - 1);
    }
}

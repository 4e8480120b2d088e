/*
 * test_gemm_bf16.cu — every BF16 GEMM/GEMV kernel (gemm/bf16.h) against a CPU reference.
 *
 * Inputs are drawn fresh per case (seed printed), uniform in [-1, 1) and rounded to BF16 first;
 * the reference runs in double on exactly those BF16 values (and the same epilogue), so the
 * only differences are the kernels' FP32 accumulation and the final rounding to the output type.
 * Checks per case: normalized error ||out - ref|| / ||ref|| and max |out - ref| / max |ref|
 * within the documented bound; no NaN inside the output box (the output is pre-filled with a NaN
 * sentinel, so an unwritten element fails too); guard bands before/after the buffer and the
 * padding columns of every row keep the sentinel bit pattern. Large M compares a sample of rows.
 * Both dispatcher paths (forced GEMV and forced GEMM) run on the same inputs. Rung 04 (split-K
 * over a cluster) runs through its entry (auto split) and with each tile config x split factor
 * forced, including K so short that some blocks of a cluster get no k-tile. An optional second
 * argument NAME runs only the runners whose name contains NAME (e.g. `quick split`).
 * Usage: test-gemm-bf16 [quick|gemv|gemv-quick]   (quick: the reduced set run under
 * compute-sanitizer; gemv: the decode cases only; gemv-quick: both restrictions)
 * Exit: 0 pass, 1 fail, 77 no GPU (ctest reports skipped).
 * Files: test_gemm_bf16.h lists them (this one: the runner lists and the cases, main).
 */
#include "tests/gemm_bf16/test_gemm_bf16.h"

int main(int argc, char **argv) {
    const bool quick = argc > 1 && (!strcmp(argv[1], "quick") || !strcmp(argv[1], "gemv-quick"));
    const bool gemv_only = argc > 1 && !strncmp(argv[1], "gemv", 4);
    if (argc > 2) g_only = argv[2];
    tinfer_device_info info;
    tinfer_err err;
    tinfer_status st = tinfer_device_probe(0, &info, &err);
    /* host-only checks first: they run (and can fail) on a machine without a GPU too */
    route_choice(st == TINFER_OK ? info.cc_major : 0, st == TINFER_OK ? info.n_sm : 0);
    check_args_host();
    split_pick();
    skinny_pick();
    tiny_pick();
    gemv_pick();
    if (st == TINFER_ERR_NO_DEVICE) {
        printf("skip: %s (host checks: %d failed)\n", err.msg, g_fail);
        return g_fail ? 1 : 77;
    }
    if (st != TINFER_OK) {
        printf("FAIL device: %s\n", err.msg);
        return 1;
    }
    printf("device %s sm_%d%d, %d SMs; seed 0x%llx\n", info.name, info.cc_major, info.cc_minor, info.n_sm,
           (unsigned long long)g_rng);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    self_test_compare();
    bad_args(info.cc_major == 9);

    const runner gemv_all[] = {{'v', 1, "gemv01"}, {'v', 2, "gemv02"}, {'v', 3, "gemv03"}, {'v', 4, "gemv04"},
                               {'v', 5, "gemv05"}, {'v', 6, "gemv06"}, {'v', 7, "gemv07"}, {'v', 8, "gemv08"},
                               /* args.w_static: W loads before the PDL wait where the grid fills the SM
                                * slots, at 3 blocks per SM where 4 would not (05_cp_async.cu); rung 08
                                * loads its first tile's W before the wait */
                               {'v', 5, "gemv05/wstatic", 1}, {'v', 6, "gemv06/wstatic", 1}, {'v', 8, "gemv08/wstatic", 1},
                               /* rung 09 (sm_90; skipped as unsupported elsewhere): its default, W before
                                * the wait, a ring of 2 stages (refilled every other k-tile), two blocks
                                * per SM sized for two grids, a ring of 3 without the early W, one block
                                * sized for two grids */
                               {'v', 9, "gemv09"}, {'v', 9, "gemv09/wstatic", 1}, {'b', 0, "gemv09/s2/wstatic", 1},
                               {'b', 1, "gemv09/2bps"}, {'b', 2, "gemv09/s3/noearly", 1}, {'b', 3, "gemv09/cores/wstatic", 1}};
    const int n_gemv = (int)(sizeof gemv_all / sizeof gemv_all[0]);
    /* rung 07 with its default and each launch configuration */
    const runner g07_all[] = {{'v', 7, "gemv07"},      {'p', 0, "gemv07/pdl"},    {'p', 1, "gemv07/evict"},
                              {'p', 2, "gemv07/2bps"}, {'p', 3, "gemv07/xstage"}, {'p', 4, "gemv07/xres"},
                              {'p', 5, "gemv07/16tok"}};
    const int n_g07 = (int)(sizeof g07_all / sizeof g07_all[0]);
    /* rung 02 runs through its entry (auto tile config) and with each tile config forced */
    const runner gemm_all[] = {{'t', 1, "wmma"},          {'t', 2, "mma"},           {'m', 0, "mma64x64"},
                               {'m', 1, "mma128x64"},     {'m', 2, "mma128x128"},    {'t', 3, "wgmma"},
                               /* rung 03 with each tile configuration forced (its entry picks one per shape) */
                               {'w', 128, "wgmma128"},    {'w', 256, "wgmma256"},    {'w', 144, "wgmma144"},
                               {'w', 72, "wgmma72"},      {'w', TINFER_GEMM_BF16_WGMMA_CFG_72MC, "wgmma72mc"}, {'w', 96, "wgmma96"},
                               {'w', 192, "wgmma192"},
                               {'w', TINFER_GEMM_BF16_WGMMA_CFG_PP128, "wgmma_pp128"},
                               /* rung 03 split-K over a cluster (id = tile width + 1000 x factor) */
                               {'w', 2000 + 128, "wgmma128/k2"}, {'w', 3000 + 256, "wgmma256/k3"},
                               {'w', 4000 + 256, "wgmma256/k4"}, {'w', 8000 + 128, "wgmma128/k8"},
                               {'w', 2000 + 144, "wgmma144/k2"}, {'w', 6000 + 144, "wgmma144/k6"},
                               /* rung 04 (split-K over a cluster): entry (auto), config x split factor */
                               {'t', 4, "split"},         {'s', 2, "split64x64/2"},  {'s', 4, "split64x64/4"},
                               {'s', 8, "split64x64/8"},  {'s', 12, "split128x64/2"}, {'s', 14, "split128x64/4"},
                               {'s', 18, "split128x64/8"}, {'s', 22, "split128x128/2"}, {'s', 24, "split128x128/4"},
                               {'s', 28, "split128x128/8"},
                               /* rung 05 (skinny, operands swapped): entry (auto tile and split), each
                               * token tile forced (smaller than M: several token tiles), splits */
                               {'t', 5, "skinny"},        {'k', 8, "skinny8"},       {'k', 16, "skinny16"},
                               {'k', 32, "skinny32"},     {'k', 64, "skinny64"},     {'k', 300 + 16, "skinny16/k3"},
                               {'k', 200 + 64, "skinny64/k2"}, {'k', 800 + 8, "skinny8/k8"}, {'k', 500 + 32, "skinny32/k5"},
                               /* rung 06 (tiny: one 64-row tile per CTA, W multicast over a cluster of
                                * token tiles): entry (auto), token tile x cluster forced (id = tile +
                                * 100 x cluster; clusters wider than the token tiles hold empty CTAs);
                                * K past what fits is skipped as unsupported */
                               {'t', 6, "tiny"},          {'y', 116, "tiny16/c1"},   {'y', 216, "tiny16/c2"},
                               {'y', 816, "tiny16/c8"},   {'y', 132, "tiny32/c1"},   {'y', 432, "tiny32/c4"},
                               {'t', 6, "tiny/wstatic", 1}, {'y', 816, "tiny16/c8/wstatic", 1},
                               /* rung 06 with K split over a cluster (id + 1000 x factor; lowered so
                                * every rank has k-blocks) */
                               {'y', 2116, "tiny16/k2"},  {'y', 3132, "tiny32/k3"},  {'y', 4116, "tiny16/k4"},
                               {'y', 8116, "tiny16/k8"},  {'y', 3116, "tiny16/k3/wstatic", 1},
                               /* 64-token tiles: alone, W multicast over 2, K split over 2 / 4 */
                               {'y', 164, "tiny64/c1"},   {'y', 264, "tiny64/c2"},   {'y', 2164, "tiny64/k2"},
                               {'y', 4164, "tiny64/k4/wstatic", 1},
                               /* a ring of stages (id + 10000 x stages): any K in one CTA, or its
                                * share of a split; the W of the first round before the PDL wait */
                               {'y', 20016, "tiny16/r2"}, {'y', 40064, "tiny64/r4"}, {'y', 32032, "tiny32/k2/r3"},
                               {'y', 23064, "tiny64/k3/r2/wstatic", 1}, {'y', 50164, "tiny64/r5/wstatic", 1},
                               /* rings with the W box multicast over 2 / 4 / 8 token tiles: a slot
                                * is refilled once every CTA of the cluster released it */
                               {'y', 20232, "tiny32/c2/r2"}, {'y', 30416, "tiny16/c4/r3"},
                               {'y', 40864, "tiny64/c8/r4/wstatic", 1}, {'y', 20464, "tiny64/c4/r2/wstatic", 1},
                               /* two consumer warpgroups taking alternate k-blocks (id + 1000000 x 2):
                                * a slot per k-block, split, even rings (2 stages: each warpgroup
                                * refills the slot it just read), plain and split */
                               {'y', 2000116, "tiny16/w2"}, {'y', 2000164, "tiny64/w2"}, {'y', 2003132, "tiny32/k3/w2"},
                               {'y', 2002164, "tiny64/k2/w2/wstatic", 1}, {'y', 2020164, "tiny64/r2/w2"},
                               {'y', 2042164, "tiny64/k2/r4/w2"}, {'y', 2060132, "tiny32/r6/w2/wstatic", 1},
                               {'y', 2020116, "tiny16/r2/w2"},
                               /* 48-token tiles (plain outputs, no multicast; SwiGLU cases are
                                * skipped as unsupported): alone, split, rings, two warpgroups */
                               {'y', 148, "tiny48/c1"}, {'y', 3148, "tiny48/k3"}, {'y', 30148, "tiny48/r3"},
                               {'y', 2000148, "tiny48/w2"}, {'y', 2120148, "tiny48/r12/w2", 1}, {'y', 2042148, "tiny48/k2/r4/w2"},
                               /* two warpgroups with the W box multicast: a slot per k-block, rings
                                * (each warpgroup releases its slot in every CTA of the cluster) */
                               {'y', 2000216, "tiny16/c2/w2"}, {'y', 2020264, "tiny64/c2/r2/w2"},
                               {'y', 2040448, "tiny48/c4/r4/w2"}, {'y', 2120832, "tiny32/c8/r12/w2", 1},
                               /* args.w_static: rungs 02 / 04 issue their first stages' W loads before
                                * the PDL wait (PDL is on at K <= 2048); rungs 03 / 05 ignore it */
                               {'t', 3, "wgmma/wstatic", 1}, {'w', 144, "wgmma144/wstatic", 1},
                               {'w', 2000 + 128, "wgmma128/k2/wstatic", 1}, {'t', 5, "skinny/wstatic", 1},
                               {'k', 16, "skinny16/wstatic", 1}, {'k', 300 + 16, "skinny16/k3/wstatic", 1},
                               {'t', 2, "mma/wstatic", 1}, {'s', 4, "split64x64/4/wstatic", 1}};
    const int n_gemm = (int)(sizeof gemm_all / sizeof gemm_all[0]);
    const runner paths[] = {{'d', TINFER_GEMM_BF16_PATH_GEMV, "path=gemv"}, {'d', TINFER_GEMM_BF16_PATH_GEMM, "path=gemm"}};
    const tinfer_dtype BF = TINFER_DTYPE_BF16, F = TINFER_DTYPE_F32;

    /* decode: M = 1..16 on a ragged N, odd K; then epilogue variants */
    for (int64_t M = 1; M <= 16; M++) {
        if (quick && M != 1 && M != 9) continue;
        run_case({M, 100, 72, F, 0, 0, 0}, gemv_all, n_gemv, s);
        if (!quick) run_case({M, 1000, 576, BF, 1, 0, 0}, gemv_all, n_gemv, s);
    }
    const test_case dcases[] = {
        {1, 8, 8, F, 0, 0, 0},          {17, 33, 40, F, 0, 0, 0},       {5, 576, 1536, BF, 0, 1, 0},
        {3, 2 * 600, 576, BF, 1, 0, 1}, {16, 2 * 40, 264, F, 1, 1, 1},  {1, 4096, 4096, BF, 0, 0, 0},
        {8, 2048, 14336, F, 0, 0, 0},   {33, 300, 128, BF, 1, 1, 0},
        /* 375-382 blocks of 16 columns: on 132 SMs the w_static runners take the early weight
         * stream at 3 blocks per SM (8 stages at M = 1), 6 at M = 8, ragged N and K */
        {1, 6000, 520, BF, 0, 0, 0},    {8, 6100, 264, F, 0, 1, 0},     {3, 6004, 1000, BF, 1, 0, 0},
        /* short rows, more 16-column tiles than rung 08's resident blocks (3 x 132 on an H200), so
         * each block walks several tiles through both register buffers: 1-4 chunks per warp
         * (K = 72 / 264 / 576 / 1000), 8 / 16 tokens per pass (X in registers / staged in
         * shared memory), partial and full passes, 2-3 passes (M = 17, 32, 33, 40), ragged N */
        {1, 16400, 576, BF, 0, 0, 0},   {9, 16390, 1000, F, 1, 0, 0},   {17, 16408, 264, BF, 0, 1, 0},
        {4, 20000, 72, F, 0, 0, 0},     {16, 16385, 576, BF, 1, 1, 0},  {32, 16400, 576, F, 1, 1, 0},
        {40, 16392, 72, BF, 0, 0, 0},   {33, 16400, 1000, BF, 1, 0, 0},
        /* SwiGLU through rungs 05 / 06's blocks of 8 gate and 8 up rows: a ragged last block
         * (nout % 8 = 4, 2), the early-stream grid at one token (1,501 blocks), 9 and 16 tokens
         * (two token tiles), and rung 06's split K (K >= 8192) */
        {1, 2 * 1004, 1000, BF, 0, 0, 1}, {9, 2 * 36, 520, F, 1, 0, 1},   {16, 2 * 1002, 264, BF, 0, 1, 1},
        {1, 2 * 12004, 576, BF, 1, 0, 1}, {1, 2 * 500, 4096, BF, 0, 0, 1}, {8, 2 * 260, 8200, F, 0, 0, 1},
    };
    for (const auto &c : dcases) {
        if (quick && c.K > 1536) continue;
        run_case(c, gemv_all, n_gemv, s);
    }
    test_rmsnorm_fused(s, quick);
    /* rung 07 past 16 tokens per pass (up to 64, SwiGLU 32) and its launch configurations:
     * resident X (short K) and staged X (long K), ragged N and K, several passes, every epilogue;
     * more 16-column tiles than resident blocks, so a block walks several tiles */
    const test_case g07cases[] = {
        {1, 100, 72, F, 0, 0, 0},          {8, 1000, 576, BF, 1, 0, 0},       {9, 40, 264, F, 0, 1, 0},
        {17, 300, 136, F, 0, 0, 0},        {32, 4100, 576, BF, 1, 1, 0},      {33, 2 * 200, 264, BF, 1, 0, 1},
        {40, 2 * 72, 1000, F, 0, 1, 1},    {48, 600, 2056, BF, 0, 0, 0},      {64, 8200, 576, F, 1, 0, 0},
        {64, 2 * 300, 576, BF, 0, 1, 1},   {65, 500, 128, BF, 1, 1, 0},       {100, 130, 4104, F, 0, 0, 0},
        {5, 2 * 1536, 4096, BF, 0, 0, 1},  {16, 520, 14336, F, 0, 1, 0},
    };
    for (const auto &c : g07cases) {
        if (quick && (c.K > 1100 || c.N > 2000 || c.M > 65)) continue;
        run_case(c, g07_all, n_g07, s);
    }
    /* prefill at decode-sized M = 1..16: ragged N and K; every epilogue at once with SwiGLU */
    for (int64_t M = 1; M <= 16 && !gemv_only; M++) {
        if (quick && M != 1 && M != 9) continue;
        run_case({M, 100, 72, F, 0, 0, 0}, gemm_all, n_gemm, s);
        if (!quick) run_case({M, 2 * 72, 40, BF, 1, 1, 1}, gemm_all, n_gemm, s);
    }
    /* prefill: ragged, tile-exact, epilogues, large M (sampled rows) */
    const test_case pcases[] = {
        {1, 1, 8, F, 0, 0, 0},           {17, 33, 40, F, 0, 0, 0},        {128, 256, 64, BF, 0, 0, 0},
        {129, 257, 72, F, 1, 0, 0},      {300, 700, 520, BF, 1, 1, 0},    {200, 2 * 300, 576, BF, 1, 0, 1},
        {64, 2 * 130, 128, F, 0, 1, 1},  {512, 1024, 1024, F, 0, 0, 0},   {2048, 2 * 1536, 576, BF, 0, 0, 1},
        {1000, 960, 576, BF, 1, 0, 0},   {2048, 576, 1536, BF, 0, 1, 0},  {4096, 4096, 4096, BF, 0, 0, 0},
        /* long K for rung 04: ragged K (2056 = 64 k-tiles + 8; 1032), every epilogue, F32 */
        {100, 520, 2056, F, 1, 1, 0},    {64, 2 * 200, 4096, BF, 1, 1, 1}, {48, 300, 14336, BF, 0, 1, 0},
        {130, 2 * 96, 1032, F, 1, 1, 1},
        /* many tiles per CTA (ping-pong consumers alternate tiles; >= 2 x 132 128 x 128 tiles):
         * ragged M, N and K, fewer k-blocks than pipeline stages (the ring wraps inside a tile
         * and across consumers), one k-block, every epilogue */
        {1000, 8200, 72, BF, 1, 1, 0},   {3000, 2 * 2100, 200, F, 1, 1, 1}, {700, 9000, 8, BF, 0, 0, 0},
        {2100, 4100, 1000, BF, 0, 0, 0},
        /* the same under the quick set's size cap (sanitizer runs): K of one / two k-blocks */
        {300, 33000, 8, BF, 1, 1, 0},    {200, 2 * 17000, 16, F, 0, 0, 1},
        /* plain BF16 into 16-byte aligned Y rows: rung 03's whole-line stores on whole tiles, and
         * on edge tiles when N' % 8 == 0 (1000, 9000, 4104); N' = 1004 keeps edge tiles on the
         * general path; one-k-block and long-K rings */
        {200, 1000, 64, BF, 0, 0, 0, 1}, {128, 256, 64, BF, 0, 0, 0, 1}, {300, 1004, 72, BF, 0, 0, 0, 1},
        {700, 9000, 8, BF, 0, 0, 0, 1},  {2100, 4104, 1000, BF, 0, 0, 0, 1}, {2048, 4096, 1024, BF, 0, 0, 0, 1},
        {129, 257, 72, F, 1, 0, 0, 1},   {200, 2 * 300, 576, BF, 1, 1, 1, 1},
        /* fused epilogues into aligned BF16 rows (rung 03 stores them in whole lines too): bias,
         * SwiGLU with and without bias, residual with and without bias; N' % 8 == 0 or not */
        {300, 1000, 136, BF, 1, 0, 0, 1}, {300, 2 * 1000, 136, BF, 1, 0, 1, 1}, {300, 2 * 1004, 72, BF, 0, 0, 1, 1},
        {300, 1000, 200, BF, 1, 1, 0, 1}, {260, 1004, 64, BF, 0, 1, 0, 1},      {2048, 2 * 1536, 576, BF, 0, 0, 1, 1},
        {1000, 4096, 1024, BF, 0, 1, 0, 1},
        /* rung 03's TMA-store epilogue (BF16 into 16-byte rows, no residual) with CTAs walking
         * several tiles (the output buffer reused): plain and bias + SwiGLU, ragged M and N' */
        {300, 33000, 8, BF, 0, 0, 0, 1},  {700, 2 * 8200, 8, BF, 1, 0, 1, 1},  {190, 2 * 8204, 24, BF, 1, 0, 1, 1},
        /* few tiles (rung 03's split-K, and its M <= 64 tiles where one consumer computes):
         * every epilogue, ragged K (4104 = 64 k-blocks + 8), M = 1, 16, 33, 64, 130 */
        {16, 960, 576, BF, 0, 0, 0, 1},   {64, 576, 1536, BF, 1, 1, 0, 1},    {1, 2 * 1536, 576, BF, 0, 0, 1, 1},
        {130, 700, 2056, F, 1, 1, 0},     {33, 600, 4104, BF, 0, 0, 0, 1},    {64, 2 * 300, 1000, BF, 1, 0, 1},
        /* rung 06's pick through its ring of two consumer warpgroups (K past one CTA's 64-token
         * slots, 9 x 8 tiles in one wave): ragged M, N and K (24 k-blocks + 8), bias + residual */
        {500, 570, 1544, F, 1, 1, 0},     {512, 576, 1536, BF, 0, 0, 0, 1},
        /* 128 x 144 tiles (rung 03 for N' = 576): whole-line stores, whose last 64-column piece
         * holds 16 columns (SwiGLU: 8), plain / bias + residual / SwiGLU, exact and ragged edges
         * (N' = 136: an edge tile's lines end inside that piece; 100: the general path) */
        {2048, 576, 1536, BF, 0, 0, 0, 1}, {512, 576, 1536, BF, 1, 1, 0, 1},  {300, 2 * 576, 1536, BF, 1, 0, 1, 1},
        {128, 576, 1024, BF, 1, 1, 0, 1},  {64, 2 * 576, 1024, BF, 0, 0, 1, 1}, {130, 136, 136, BF, 0, 0, 0, 1},
        {130, 100, 136, BF, 1, 0, 0, 1},   {200, 2 * 580, 200, F, 1, 1, 1},    {100, 2 * 136, 520, BF, 1, 0, 1, 1},
        /* one token tile and more 128-row tiles than CTAs (157 / 141 / 313 / 157 on 132 SMs):
         * rung 05's persistent CTAs walk several tiles through the ring; k-blocks not a multiple
         * of the stage's (9 of 2), SwiGLU, ragged N, every token tile (M = 8 / 16 / 32 / 64 under
         * skinny8..64) */
        {8, 20000, 72, BF, 1, 0, 0, 1},    {16, 2 * 9000, 136, BF, 1, 0, 1, 1}, {32, 40000, 576, F, 0, 1, 0},
        {64, 20004, 520, BF, 1, 1, 0, 1},  {5, 20000, 1000, BF, 0, 0, 0},
        /* rung 06: 7 / 9 token tiles in clusters of 8 (empty CTAs in the last cluster), SwiGLU
         * with bias (32-output row tiles, the last one partial: F = 600), the longest K that fits
         * one CTA at 16 tokens (22 k-blocks) with an FP32 residual, and one past it (split by its
         * own pick), plain and SwiGLU with bias (F = 200: 7 row tiles, the last one partial) */
        {100, 960, 576, BF, 0, 0, 0, 1},   {130, 2 * 600, 576, BF, 1, 0, 1, 1}, {48, 576, 1408, F, 0, 1, 0},
        {33, 300, 1416, BF, 0, 0, 0},      {40, 2 * 200, 1416, BF, 1, 0, 1, 1},
    };
    for (const auto &c : pcases) {
        if (gemv_only) break;
        if (quick && (c.M * c.N * c.K > 300ll * 700 * 520)) continue;
        run_case(c, gemm_all, n_gemm, s);
    }
    /* the split RMSNorm (gemm/bf16.h nx / rss) on every rung: the producer (F32 residual into
     * Y, with and without bias; ragged N and misaligned rows) and the consumer (BF16 / F32 Y,
     * bias, SwiGLU, residual); rung 03 refuses both. Decode sizes on the GEMV rungs, then the
     * tensor-core rungs, then both dispatcher paths at SmolLM2's shapes (O, down; QKV, gate/up) */
    const test_case scases_v[] = {
        {1, 576, 576, F, 0, 1, 0, 0, 1},      {5, 200, 72, F, 1, 1, 0, 0, 1},     {16, 576, 1536, F, 0, 1, 0, 1, 1},
        {3, 960, 576, BF, 1, 0, 0, 0, 2},     {8, 2 * 300, 576, BF, 0, 0, 1, 1, 2}, {2, 100, 264, F, 1, 1, 0, 0, 2},
        /* long rows, the shapes rungs 05 / 06 take (the dispatcher does not give them the split
         * RMSNorm: tinfer_gemm_bf16_split_norm_ok; every GEMV rung here takes its fields):
         * producers (O-like, and down-like with K split over a cluster), consumers (QKV-like,
         * gate/up) */
        {1, 1000, 4096, F, 0, 1, 0, 0, 1},    {2, 600, 8200, F, 1, 1, 0, 0, 1},   {1, 1500, 4096, BF, 1, 0, 0, 0, 2},
        {1, 2 * 1004, 4096, BF, 0, 0, 1, 0, 2},
    };
    for (const auto &c : scases_v) {
        if (quick && c.M > 8) continue;
        run_case(c, gemv_all, n_gemv, s);
    }
    const test_case scases_t[] = {
        {64, 576, 576, F, 0, 1, 0, 1, 1},     {33, 300, 1000, F, 1, 1, 0, 0, 1},  {100, 576, 1536, F, 0, 1, 0, 1, 1},
        {64, 960, 576, BF, 1, 0, 0, 1, 2},    {17, 2 * 300, 576, BF, 0, 0, 1, 0, 2}, {130, 500, 264, F, 1, 1, 0, 0, 2},
    };
    for (const auto &c : scases_t) {
        if (gemv_only || (quick && c.M > 64)) continue;
        run_case(c, gemm_all, n_gemm, s);
    }
    const test_case scases_d[] = {
        {9, 576, 576, F, 0, 1, 0, 1, 1},      {64, 576, 1536, F, 0, 1, 0, 1, 1},  {512, 576, 576, F, 1, 1, 0, 1, 1},
        {64, 960, 576, BF, 1, 0, 0, 1, 2},    {64, 2 * 1536, 576, BF, 0, 0, 1, 1, 2}, {300, 2 * 1536, 576, BF, 0, 0, 1, 1, 2},
    };
    for (const auto &c : scases_d) {
        if (quick && c.M > 64) continue;
        run_case(c, paths, 2, s);
    }
    /* dispatcher: both paths on the same inputs */
    const test_case dpc[] = {{1, 960, 576, BF, 0, 0, 0}, {8, 2 * 1536, 576, BF, 1, 0, 1}, {16, 576, 1536, BF, 0, 1, 0},
                             {17, 576, 576, F, 0, 0, 0}, {64, 1000, 264, BF, 1, 1, 0},
                             /* the GEMV path's rung choice: 06 for K >= 8192, 04 for short wide W, 09
                              * from 4 tokens for long rows of at most 64 x SMs columns */
                             {4, 256, 8192, BF, 0, 1, 0}, {2, 16400, 576, BF, 1, 0, 0}, {5, 2000, 4104, BF, 1, 1, 0},
                             /* the GEMM path's rung choice: few wgmma tiles -> rung 02, many -> rung 03 */
                             {128, 960, 576, BF, 1, 0, 0}, {2048, 2 * 1536, 576, BF, 0, 0, 1},
                             /* few wgmma tiles and long K: rung 04 with its automatic split at M <= 64,
                              * rung 03 with 128 x 128 tiles above */
                             {64, 1024, 8192, BF, 0, 1, 0}, {200, 2 * 512, 4096, BF, 1, 0, 1}};
    for (const auto &c : dpc) {
        if (quick && (c.M > 8 || c.N * c.K > 2000000)) continue;
        run_case(c, paths, 2, s);
    }
    CK(cudaStreamDestroy(s));
    printf("%s: %d runs, %d failed\n", g_fail ? "FAIL" : "PASS", g_cases, g_fail);
    return g_fail ? 1 : 0;
}

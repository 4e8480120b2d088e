/*
 * bf16.cu — `tinfer-bench-gemm bf16 [set] [--json F] [--png PREFIX] [--quick]`: the BF16 GEMM /
 * GEMV kernels (gemm/bf16.h) against cuBLAS BF16 (cublasGemmEx, TN, FP32 compute, BF16 out),
 * measured in the same run; the splitk set adds cublasLt (cublasLtMatmul, same layout and types,
 * the heuristic's first algorithm with a 32 MB workspace) and prints each kernel's share of the
 * better of the two references ("best").
 *
 * Sets: square (M = N = K = 1024..8192: wmma, mma.sync, wgmma, cuBLAS, cublasLt), model (SmolLM2-135M and
 * Llama-3-8B projection shapes at M = 1..2048: dispatcher "auto", decode rung 05, wgmma,
 * cuBLAS, and the fused SwiGLU / residual epilogues through "auto"; at M = 1 also the read
 * ceiling of the weight, "read_pdl" / "read": a kernel that only reads its bytes, and "read_early":
 * the same with every read before the PDL wait; "read_coP_G": G blocks per SM, launch_dependents
 * first and P batches of loads before the wait, so the next grid fits beside it), ladder (decode rungs 01..09
 * at M = 1 and 8, rung 08 on short rows only, with the dispatcher and both references), prefill (the model shapes at M = 32..2048: "auto", rung 02 with its own tile
 * pick and with each tile config forced, wgmma, cuBLAS, fused epilogues through "auto"; not part
 * of all), splitk (the split-K rung 04: Llama-3-8B QKV / down and the SmolLM2 shapes at M = 32..2048,
 * "auto", rung 04's own pick and each tile config x split factor forced, rung 02, wgmma, cuBLAS
 * and cublasLt; not part of all), decode (rung 07 and its launch configurations vs rungs 04-06, the dispatcher and
 * cuBLAS at M = 1..64; not part of all), wsplit (rung 03's split-K: each tile width x split
 * factor forced at M = 16..2048 where tiles are few, vs its own pick, rung 04, the dispatcher, cuBLAS
 * and cublasLt; not part of all), skinny (rung 05, the operand-swapped wgmma kernel, at M = 1..128 with each
 * split factor forced, vs the dispatcher, rung 03 and both references; not part of all), tiny (rung
 * 06 on the SmolLM2 layer weights at M = 16..2048, token tile, cluster and split forced or picked,
 * vs the dispatcher and both references; not part of all), tinybig (rung 06 past one wave: the
 * LM head, Llama-3-8B through rings, SmolLM2 down / gate-up at 512 through short rings; not part of
 * all), wide96 (rung 03's 128 x 96 tiles against 72 / 128 / 256 on the SmolLM2 shapes at
 * M = 128..2048; not part of all), wide192 (rung 03's 128 x 192 tiles against 256 / 128 / 96
 * and the pick where the width rule would take them, with controls; not part of all), wg2 (rung 06 with one consumer warpgroup against two, in the
 * same forced configurations, on the SmolLM2 layer weights; not part of all), bulk (decode rung 09 and its launch configurations against
 * rungs 05 / 06, the read probes and both references on the Llama-3-8B weights at M = 1..8; not
 * part of all), tmabw (the TMA load path alone by box
 * shape, stages, issuers and CTAs: tma_bw.cu; not part of all), trace (builds
 * configured with -DTINFER_WS_TRACE=ON only: rung 03's per-CTA phase timestamps on a few shapes, see
 * gemm/tc/ws_trace.cuh), all (default: ladder, square, model).
 * Method: inputs are random BF16 (never zeros), each kernel's output is checked
 * against cuBLAS's before timing (normalized difference printed), warm-up, then 7 batches of
 * launches timed with events, median batch. Weights and activations rotate over enough copies
 * that one batch touches >= 256 MB, so decode rates are DRAM rates, not L2 (H200 L2 is 60 MB).
 * The copy ceiling is a 2 GiB device-to-device cudaMemcpyAsync, counting read + write bytes.
 * --only SHAPE:M[,SHAPE:M...] restricts a set to those shapes at those M (e.g. for a profiler).
 * --graph times CUDA-graph replays of each batch (device time, no per-launch host cost; the
 * JSON says which: "timing": "graph" or "stream"; it also records the GPU, driver, date and
 * set); --w-static sets args.w_static on every call
 * (W not written by work in flight, as for model weights; JSON "w_static"); set wgmma: rung 03's tile configurations (128 x 128, 128 x 256, ping-pong 128 x 128) forced.
 * Output: a table on stdout, JSON records (--json), and two PNG charts (--png PREFIX:
 * PREFIX_tflops.png TFLOP/s vs M, PREFIX_gbs.png GB/s vs M, ours vs cuBLAS).
 * This file: the options and the sets of shapes (tinfer_bench_gemm_bf16); bf16_internal.h lists
 * the others (timing and references, one shape measured, output, the trace sets).
 */
#include "examples/bench_gemm/bf16_internal.h" /* the files of this benchmark: see there */
#include "examples/bench_gemm/knobs.h"
#include "gemm/tc/gemm_bf16_tc_internal.h" /* rung 03's co-resident clusters (wsplit set) */

#include <string.h>

/* Set "tmabw": the TMA load path alone (tma_bw.cu) */
extern "C" void tinfer_bench_tma_bw(int n_sm);

extern "C" int tinfer_bench_gemm_bf16(int argc, char **argv) {
    const char *set = "all", *json = NULL, *png = NULL;
    tinfer_gemm_knobs knobs = tinfer_gemm_knobs_unset();
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "bf16")) continue;
        const int kf = tinfer_bench_knob_flag(argc, argv, &i, &knobs);
        if (kf < 0) return 2;
        if (kf > 0) continue;
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--png") && i + 1 < argc) png = argv[++i];
        else if (!strcmp(argv[i], "--quick")) g_quick = true;
        else if (!strcmp(argv[i], "--graph")) g_graph = true;
        else if (!strcmp(argv[i], "--w-static")) g_w_static = true;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) g_only = argv[++i];
        else if (!strcmp(argv[i], "--help")) {
            printf("usage: tinfer-bench-gemm bf16 [all|square|model|ladder|prefill|splitk|decode|wgmma|wsplit|skinny|tiny|tinybig|wide96|wide192|wg2|bulk|tmabw] [--json F] [--png PREFIX] [--quick] [--graph] [--w-static] [--only SHAPE:M[,...]] [knob flags]\n");
            tinfer_bench_knobs_help(stdout);
            return 0;
        } else if (argv[i][0] != '-') set = argv[i];
        else {
            fprintf(stderr, "error: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    {
        static const char *const sets[] = {"all", "square", "model", "ladder", "prefill", "splitk", "decode", "wgmma", "wsplit", "skinny", "tiny", "tinybig", "wide96", "wide192", "wg2", "bulk", "tmabw",
#ifdef TINFER_WS_TRACE
                                           "trace", "tytrace", "tybisect"
#endif
        };
        bool known = false;
        for (const char *k : sets) known = known || !strcmp(set, k);
        if (!known) {
            fprintf(stderr, "error: unknown set '%s' (--help lists them)\n", set);
            return 2;
        }
    }
    tinfer_gemm_knobs_set(&knobs);
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
        fprintf(stderr, "error: no CUDA device\n");
        return 77;
    }
    g_cc_major = prop.major;
    BCK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    if (cublasCreate(&g_cublas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(g_cublas, g_s) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "error: cublasCreate failed\n");
        return 1;
    }
    if (cublasLtCreate(&g_lt) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "error: cublasLtCreate failed\n");
        return 1;
    }
    BCK(cudaMalloc(&g_lt_ws, g_lt_ws_bytes));
    /* Under graph capture cuBLAS must not allocate its own workspace: give it this one (the two
     * references run one after the other on one stream, so they may share it). */
    if (g_graph && cublasSetWorkspace(g_cublas, g_lt_ws, g_lt_ws_bytes) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "error: cublasSetWorkspace failed\n");
        return 1;
    }
    BCK(cudaMalloc(&g_sink, sizeof(uint32_t)));
    g_n_sm = prop.multiProcessorCount;
    g_copy_gbs = measure_copy();
    printf("device %s, %d SMs; device-to-device copy %.0f GB/s (read + write)%s\n", prop.name,
           prop.multiProcessorCount, g_copy_gbs, g_w_static ? "; W static (args.w_static)" : "");
    std::vector<rec> rs;
    const bool all = !strcmp(set, "all");
    if (!strcmp(set, "tmabw")) tinfer_bench_tma_bw(prop.multiProcessorCount);
#ifdef TINFER_WS_TRACE
    if (!strcmp(set, "trace")) trace_set();
    if (!strcmp(set, "tytrace")) tytrace_set();
    if (!strcmp(set, "tybisect")) tybisect_set();
#endif
    if (all || !strcmp(set, "ladder")) {
        const struct { const char *n; int64_t N, K; } ls[] = {
            {"llama_qkv", 6144, 4096}, {"llama_down", 4096, 14336}, {"smol_lmhead", 49152, 576}, {"smol_o", 576, 576}};
        for (const auto &s : ls)
            for (int64_t M : {1, 8}) {
                std::vector<int> ks = {0, 9, 1, 2, 3, 4, 5, 6, 7};
                if (s.K <= 1024) ks.push_back(24); /* rung 08: short rows only (else it runs 04) */
                ks.push_back(29);                  /* rung 09 */
                ks.push_back(20);                  /* the dispatcher */
                bench_shape(rs, "ladder", s.n, M, s.N, s.K, ks);
            }
    }
    if (all || !strcmp(set, "square")) {
        for (int64_t n : {1024, 2048, 4096, 8192}) {
            if (g_quick && n > 4096) continue;
            bench_shape(rs, "square", "square", n, n, n, {0, 9, 11, 12, 13});
        }
    }
    if (all || !strcmp(set, "model")) {
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576},     {"smol_o", 576, 576},       {"smol_gateup", 3072, 576},
            {"smol_down", 576, 1536},   {"smol_lmhead", 49152, 576}, {"llama_qkv", 6144, 4096},
            {"llama_o", 4096, 4096},    {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {1, 2, 4, 8, 16, 32, 64, 128, 512, 2048}) {
                if (g_quick && M != 1 && M != 16 && M != 512) continue;
                std::vector<int> ks = {0, 9, 20};
                if (M == 1) ks.insert(ks.end(), {8, 10, 23, 25, 26, 27, 28}); /* the read ceiling of the weight */
                if (M <= 64) ks.push_back(5); /* threshold sweep: GEMV vs GEMM around 16 */
                if (M <= 16) ks.push_back(6);
                if (M <= 16 && s.K <= 1024) ks.push_back(4);  /* rung 04 on short rows */
                if (M <= 64 && s.K <= 1024) ks.push_back(24); /* rung 08 (passes of 8 or 16 tokens) */
                ks.push_back(13);
                if (M <= 128) ks.push_back(41); /* rung 05, the skinny kernel */
                /* rung 06 on the SmolLM2 layer weights; at M <= 8 against the decode GEMV the
                 * dispatcher takes there (down, K = 1536, gets rung 05 at 3.5-3.8 us in graph
                 * timing where rung 06 takes 2.8 at 16 tokens; session 14) */
                if (strstr(s.n, "smol") && !strstr(s.n, "lmhead")) ks.push_back(42);
                if (strstr(s.n, "gateup")) ks.push_back(21);
                if (strstr(s.n, "down") || strstr(s.n, "_o")) ks.push_back(22);
                bench_shape(rs, "model", s.n, M, s.N, s.K, ks);
            }
    }
    if (!strcmp(set, "prefill")) {
        /* where rung 02 competes: the model shapes on the GEMM path (M above the GEMV cut) */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576},     {"smol_o", 576, 576},       {"smol_gateup", 3072, 576},
            {"smol_down", 576, 1536},   {"smol_lmhead", 49152, 576}, {"llama_qkv", 6144, 4096},
            {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {32, 64, 128, 512, 2048}) {
                std::vector<int> ks = {0, 20, 12, 13, 14, 15, 16};
                if (strstr(s.n, "gateup")) ks.push_back(21);
                if (strstr(s.n, "down") || strstr(s.n, "_o")) ks.push_back(22);
                bench_shape(rs, "prefill", s.n, M, s.N, s.K, ks);
            }
    }
    if (!strcmp(set, "decode")) {
        /* rung 07 against 05/06/04, the dispatcher and cuBLAS at decode M (Llama-3-8B, the
         * SmolLM2 LM head up to 64 tokens, the small SmolLM2 shapes at 1/16/64) */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"llama_qkv", 6144, 4096}, {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {1, 2, 4, 8, 16, 32, 64}) {
                std::vector<int> ks = {0, 20, 7};
                if (M <= 16) ks.insert(ks.end(), {5, 6, 30, 31, 32, 33, 34});
                else ks.insert(ks.end(), {13, 30});
                if (strstr(s.n, "gateup") && (M == 1 || M == 8)) ks.push_back(21);
                if (strstr(s.n, "down") && (M == 1 || M == 8)) ks.push_back(22);
                bench_shape(rs, "decode", s.n, M, s.N, s.K, ks);
            }
        for (int64_t M : {1, 2, 4, 8, 16, 24, 32, 48, 64})
            bench_shape(rs, "decode", "smol_lmhead", M, 49152, 576, {0, 20, 7, 4, 24, 30, 31, 33, 35, 36, 13});
        const struct { const char *n; int64_t N, K; } ss[] = {
            {"smol_qkv", 960, 576}, {"smol_o", 576, 576}, {"smol_gateup", 3072, 576}, {"smol_down", 576, 1536}};
        for (const auto &s : ss)
            for (int64_t M : {1, 16, 64}) bench_shape(rs, "decode", s.n, M, s.N, s.K, {0, 20, 7, 5, 30});
    }
    if (!strcmp(set, "bulk")) {
        /* decode rung 09 (two grids per SM) against rungs 05 / 06, the dispatcher, cuBLAS and the
         * read probes, on the Llama-3-8B weights at M = 1..8 */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"llama_qkv", 6144, 4096}, {"llama_down", 4096, 14336}, {"llama_gateup", 28672, 4096}};
        for (const auto &s : ms)
            for (int64_t M : {1, 2, 4, 8}) {
                std::vector<int> ks = {0, 9, 20, 5, 6, 29, 50, 51, 52, 53};
                if (M == 1) ks.insert(ks.end(), {8, 23, 26, 28});
                bench_shape(rs, "bulk", s.n, M, s.N, s.K, ks);
            }
    }
    if (!strcmp(set, "wgmma")) {
        /* rung 03's two tile widths forced vs its own pick, on the shapes it takes (many tiles) */
        for (int64_t n : {1024, 2048, 4096, 8192}) bench_shape(rs, "wgmma", "square", n, n, n, {0, 9, 13, 17, 18, 19});
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576},     {"smol_o", 576, 576},       {"smol_gateup", 3072, 576},
            {"smol_down", 576, 1536},   {"smol_lmhead", 49152, 576}, {"llama_qkv", 6144, 4096},
            {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {128, 512, 2048}) {
                std::vector<int> ks = {0, 9, 20, 13, 17, 18, 19};
                if (strstr(s.n, "gateup")) ks.push_back(21);
                if (strstr(s.n, "down") || strstr(s.n, "_o")) ks.push_back(22);
                bench_shape(rs, "wgmma", s.n, M, s.N, s.K, ks);
            }
    }
    if (!strcmp(set, "splitk")) {
        /* rung 04 where split-K matters (few tiles): Llama-3-8B QKV / down, the SmolLM2 shapes */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"llama_qkv", 6144, 4096}, {"llama_down", 4096, 14336}, {"smol_qkv", 960, 576},
            {"smol_o", 576, 576},      {"smol_gateup", 3072, 576},  {"smol_down", 576, 1536},
            {"smol_lmhead", 49152, 576}};
        for (const auto &s : ms)
            for (int64_t M : {32, 64, 128, 512, 2048}) {
                /* many tiles (wgmma's ground): the references and "auto" only */
                if ((strstr(s.n, "llama") && M == 2048) || strstr(s.n, "lmhead")) {
                    bench_shape(rs, "splitk", s.n, M, s.N, s.K, {0, 9, 20});
                    continue;
                }
                std::vector<int> ks = {0, 9, 20, 40, 12, 13, 14, 15, 16};
                for (int c = 0; c < 3; c++)
                    for (int cs : {2, 4, 8}) ks.push_back(100 + 10 * c + cs);
                if (strstr(s.n, "gateup")) ks.push_back(21);
                if (strstr(s.n, "down") || strstr(s.n, "_o")) ks.push_back(22);
                bench_shape(rs, "splitk", s.n, M, s.N, s.K, ks);
            }
    }
    if (!strcmp(set, "skinny")) {
        /* rung 05 (operands swapped) at its own pick and with each split factor forced (its own
         * token tile), against the dispatcher, rung 03 and both references, M = 1..128 */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576},   {"smol_o", 576, 576},        {"smol_gateup", 3072, 576},
            {"smol_down", 576, 1536}, {"smol_lmhead", 49152, 576}, {"llama_qkv", 6144, 4096},
            {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {1, 8, 16, 32, 64, 128}) {
                std::vector<int> ks = {0, 9, 20, 13, 41};
                if (M == 1) ks.push_back(8);
                const int code = M <= 8 ? 0 : M <= 16 ? 1 : M <= 32 ? 2 : 3;
                const int64_t tiles = ((s.N + 127) / 128) * ((M + 63) / 64);
                for (int f : {1, 2, 3, 4, 6, 8})
                    if (f == 1 || tiles * f <= 3 * prop.multiProcessorCount) ks.push_back(300 + 10 * f + code);
                for (int c = 0; c < code; c++) ks.push_back(310 + c); /* smaller token tiles, unsplit */
                bench_shape(rs, "skinny", s.n, M, s.N, s.K, ks);
            }
    }
    if (!strcmp(set, "tiny")) {
        /* rung 06 (one 64-row tile per CTA) on the SmolLM2 layer weights: its pick, each token
         * tile forced, W multicast over token tiles, K split, against the dispatcher and both
         * references */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576}, {"smol_o", 576, 576}, {"smol_gateup", 3072, 576}, {"smol_down", 576, 1536}};
        for (const auto &s : ms)
            for (int64_t M : {16, 32, 64, 128, 256, 512, 2048}) {
                std::vector<int> ks = {0, 9, 20, 42};
                if (s.K <= 1024) {
                    ks.insert(ks.end(), {401, 402, 403});
                    if (M >= 128) ks.insert(ks.end(), {422, 442}); /* 32-token tiles, W multicast over 2 / 4 */
                }
                if (s.K > 1024 || M <= 128) /* K split over 2 / 3 / 4 CTAs, 16 / 32 / 64-token tiles */
                    ks.insert(ks.end(), {521, 531, 541, 522, 532, 542, 523, 533, 543});
                /* rings: 64-token tiles split 2 through 4 / 5 stages (two CTAs per SM), on down also
                 * split 3 through 4, and unsplit through 6 / 12 */
                if (M >= 128) ks.insert(ks.end(), {1423, 1523});
                if (M >= 128 && s.K > 1024) ks.insert(ks.end(), {1433, 1613, 2213});
                /* rings with W multicast over 2 / 4 / 8 token tiles: down (K = 1536) unsplit,
                 * 64-token tiles through 12 / 6 stages, 32-token through 8; K = 576 through 4 */
                if (M >= 128 && s.K > 1024) ks.insert(ks.end(), {4223, 4243, 4283, 3643, 3683, 3822, 3842, 3882});
                if (M >= 128 && s.K <= 1024) ks.insert(ks.end(), {3443, 3483, 3442, 3482});
                if (strstr(s.n, "_o") || strstr(s.n, "down")) ks.push_back(22);
                bench_shape(rs, "tiny", s.n, M, s.N, s.K, ks);
            }
        /* the model's fused gate/up (SwiGLU epilogue, 1536 outputs): every kernel but the references
         * runs fused */
        g_swiglu = true;
        for (int64_t M : {16, 32, 64, 128, 256, 512})
            bench_shape(rs, "tiny", "smol_gateup_sw", M, 3072, 576, {0, 9, 20, 42, 401, 402, 403});
        g_swiglu = false;
    }
    if (!strcmp(set, "tinybig")) {
        /* rung 06 past one wave: the LM head (K fits one CTA) with each token tile forced, and the
         * Llama-3-8B weights through rings (6 stages, two CTAs per SM; split 1 / 2 / 4) */
        for (int64_t M : {16, 32, 64, 128, 512})
            bench_shape(rs, "tinybig", "smol_lmhead", M, 49152, 576, {0, 9, 20, 401, 402, 403});
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"llama_qkv", 6144, 4096}, {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {16, 64, 128, 512})
                bench_shape(rs, "tinybig", s.n, M, s.N, s.K, {0, 9, 20, 1611, 1621, 1641, 1612, 1622, 1642, 1613, 1623, 1643});
        /* SmolLM2 down / gate-up at 512 tokens through short rings that fit one wave: 32-token
         * tiles split 2 / 3 / 4 through 4 / 5 stages, 64-token tiles unsplit through 3 / 4 / 5 */
        bench_shape(rs, "tinybig", "smol_down", 512, 576, 1536, {0, 9, 20, 1422, 1432, 1442, 1522, 1532, 1542, 1433});
        /* rung 05 (128 W rows x 64 tokens, ring over K) unsplit / split 2 / 3 on down at 512 and 2048 */
        bench_shape(rs, "tinybig", "smol_down", 512, 576, 1536, {0, 9, 313, 323, 333});
        bench_shape(rs, "tinybig", "smol_down", 2048, 576, 1536, {0, 9, 20, 313, 323});
        bench_shape(rs, "tinybig", "smol_gateup", 512, 3072, 576, {0, 9, 20, 1313, 1413, 1513, 1312, 1412});
        /* 2048 tokens: 64-token tiles through 3 / 4 / 5-stage rings (3 / 3 / 2 CTAs per SM), 32-token
         * tiles through 3 stages */
        for (const auto &s : {std::make_pair("smol_o", 576), std::make_pair("smol_qkv", 960)})
            bench_shape(rs, "tinybig", s.first, 2048, s.second, 576, {0, 9, 20, 1313, 1413, 1513, 1312});
    }
    if (!strcmp(set, "wg2")) {
        /* rung 06 with one consumer warpgroup against two (each computing every other k-block) in
         * the same configurations, on the SmolLM2 layer weights */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576}, {"smol_o", 576, 576}, {"smol_gateup", 3072, 576}, {"smol_down", 576, 1536}};
        for (const auto &s : ms)
            for (int64_t M : {16, 32, 64, 128, 256, 512, 2048}) {
                if (s.K > 1024 && M == 512) continue; /* down at 512: below, with the long-K rings */
                std::vector<int> ks = {0, 9, 20};
                auto pair = [&](int one, int two) { ks.push_back(one); ks.push_back(two); };
                for (int c = 1; c <= 3; c++) {
                    if (s.K <= 1024) { /* 9 k-blocks: unsplit, and split 2 up to 128 tokens */
                        pair(510 + c, 5010 + c);
                        if (M <= 128) pair(520 + c, 5020 + c);
                    } else /* 24 k-blocks: split 2 / 3 / 4 */
                        for (int f = 2; f <= 4; f++) pair(500 + 10 * f + c, 5000 + 10 * f + c);
                }
                if (s.K <= 1024 && M >= 256) pair(514, 5014); /* 48-token tiles unsplit (O at 512: 99 CTAs) */
                if (s.K > 1024 && M >= 128) { /* rings, 64-token tiles: split 3 / 2 through 4 stages, unsplit through 6 / 12 */
                    pair(1433, 5433);
                    pair(1423, 5423);
                    pair(1613, 5613);
                    pair(2213, 6213);
                }
                bench_shape(rs, "wg2", s.n, M, s.N, s.K, ks);
            }
        /* rings of two warpgroups over long K: SmolLM2 down past the splits that fit (64-token
         * tiles through 12 / 8 / 6 stages, 32-token through 8 / 6, two CTAs per SM; 48-token
         * tiles, a CTA taking the 14 KB per k-block of cuBLAS's 48-output x 64-token tiles,
         * through 12 / 10 stages unsplit (99 CTAs at 512 tokens) and 8 / 6 split 2, two CTAs per
         * SM at 6), and
         * Llama-3-8B QKV / down at 16-64 tokens (one CTA per SM, 12 stages) */
        for (int64_t M : {384, 512, 640, 768, 1024})
            bench_shape(rs, "wg2", "smol_down", M, 576, 1536,
                        {0, 9, 20, 2213, 6213, 5813, 5613, 5812, 5612, 2214, 6214, 6014, 1824, 5824, 5624,
                         /* the 12-stage rings of two warpgroups with the W box multicast over 2 / 4 / 8
                          * token tiles (64 tokens), 2 / 4 (48 tokens; clusters round the token tiles up) */
                         8223, 8243, 8283, 8224, 8244});
        for (int64_t M : {16, 32, 64}) {
            const int bt = M == 16 ? 1 : M == 32 ? 2 : 3;
            bench_shape(rs, "wg2", "llama_qkv", M, 6144, 4096, {0, 9, 20, 2210 + bt, 6210 + bt});
            bench_shape(rs, "wg2", "llama_down", M, 4096, 14336, {0, 9, 20, 2210 + bt, 6210 + bt});
        }
    }
    if (!strcmp(set, "wide96")) {
        /* rung 03's 128 x 96 tiles (unsplit, plain) against 72 / 128 / 256 on the shapes whose
         * pick the width rule moves or could move */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576}, {"smol_o", 576, 576}, {"smol_gateup", 3072, 576}, {"smol_down", 576, 1536},
            {"smol_lmhead", 49152, 576}};
        for (const auto &s : ms)
            for (int64_t M : {128, 256, 512, 1024, 2048})
                bench_shape(rs, "wide96", s.n, M, s.N, s.K, {0, 9, 20, 215, 213, 210, 211});
    }
    if (!strcmp(set, "wide192")) {
        /* rung 03's 128 x 192 tiles (unsplit) against 256 / 128 / 96 and the pick, where the width
         * rule with 192 would take them (gate/up at 2048, Llama QKV / gate/up at 512) and where it
         * would not (controls: the LM head, square 4096) */
        const struct { const char *n; int64_t M, N, K; } ms[] = {
            {"smol_gateup", 2048, 3072, 576}, {"smol_gateup", 1024, 3072, 576}, {"llama_qkv", 512, 6144, 4096},
            {"llama_gateup", 512, 28672, 4096}, {"llama_qkv", 2048, 6144, 4096}, {"smol_lmhead", 2048, 49152, 576},
            {"square", 4096, 4096, 4096}};
        for (const auto &s : ms) bench_shape(rs, "wide192", s.n, s.M, s.N, s.K, {0, 9, 20, 216, 211, 210, 215});
    }
    if (!strcmp(set, "wsplit")) {
        printf("co-resident clusters of rung 03's split kernel (cudaOccupancyMaxActiveClusters), factor 2..8:\n");
        for (int cfg : {128, 144, 256}) {
            printf("  128 x %d:", cfg);
            for (int f = 2; f <= 8; f++) {
                int32_t n = -1;
                tinfer_err e;
                if (tinfer_gemm_bf16_wgmma_max_clusters(cfg, f, &n, &e) != TINFER_OK) printf(" (%s)", e.msg);
                printf(" %d", (int)n);
            }
            printf("\n");
        }
        /* rung 03's split-K: each tile width x split factor forced (one wave: tiles x factor <=
         * SMs) against its own pick, rung 04, the dispatcher and both references, where tiles are few */
        const struct { const char *n; int64_t N, K; } ms[] = {
            {"smol_qkv", 960, 576},   {"smol_o", 576, 576},        {"smol_gateup", 3072, 576},
            {"smol_down", 576, 1536}, {"smol_lmhead", 49152, 576}, {"llama_qkv", 6144, 4096},
            {"llama_gateup", 28672, 4096}, {"llama_down", 4096, 14336}};
        for (const auto &s : ms)
            for (int64_t M : {16, 32, 64, 128, 512, 2048}) {
                std::vector<int> ks = {0, 9, 20, 13, 40};
                for (int bn : {72, 128, 144, 256}) {
                    if (bn == 144 && s.N % bn) continue; /* 144 only where it divides N */
                    const int64_t tiles = ((M + 127) / 128) * ((s.N + bn - 1) / bn);
                    for (int f : {1, 2, 3, 4, 6, 8})
                        if (f == 1 || (bn != 72 && tiles * f <= prop.multiProcessorCount)) /* 72: no split */
                            ks.push_back(200 + 10 * f + (bn == 256 ? 1 : bn == 144 ? 2 : bn == 72 ? 3 : 0));
                    if (bn == 72) ks.push_back(214); /* and with X multicast */
                }
                bench_shape(rs, "wsplit", s.n, M, s.N, s.K, ks);
            }
    }
    if (json) write_json(json, rs, prop, set);
    if (png) write_charts(png, rs);
    cublasDestroy(g_cublas);
    cublasLtDestroy(g_lt);
    BCK(cudaFree(g_lt_ws));
    BCK(cudaFree(g_sink));
    BCK(cudaStreamDestroy(g_s));
    return 0;
}

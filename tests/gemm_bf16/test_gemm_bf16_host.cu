/*
 * test_gemm_bf16_host.cu — test-gemm-bf16's checks that need no GPU (host arithmetic, run first
 * and on machines without one; test_gemm_bf16.cu): tinfer_gemm_bf16_check's refusals, the picks
 * of rungs 03 (split-K), 05, 06 and the decode GEMV, and the dispatcher's routes.
 */
#include "tests/gemm_bf16/test_gemm_bf16.h"

/* Argument checks that need no GPU (tinfer_gemm_bf16_check reads only the values): each bad
 * field alone must be refused with TINFER_ERR_INVALID_ARG, the good set accepted. */
void check_args_host(void) {
    tinfer_gemm_bf16_args good;
    memset(&good, 0, sizeof good);
    good.M = 2; good.N = 16; good.K = 16; good.ldx = 16; good.ldw = 16; good.ldy = 16;
    good.X = (const uint16_t *)(uintptr_t)0x1000; good.W = good.X; good.Y = (void *)(uintptr_t)0x2000;
    good.y_dtype = TINFER_DTYPE_BF16;
    tinfer_err err;
    if (tinfer_gemm_bf16_check(&good, "test", &err) != TINFER_OK) {
        printf("FAIL check: good args refused: %s\n", err.msg);
        g_fail++;
    }
    struct { const char *what; void (*bad)(tinfer_gemm_bf16_args *); } cs[] = {
        {"K % 8 != 0", [](tinfer_gemm_bf16_args *a) { a->K = 12; a->ldx = 12; a->ldw = 12; }},
        {"ldy < N", [](tinfer_gemm_bf16_args *a) { a->ldy = 8; }},
        {"swiglu = 2", [](tinfer_gemm_bf16_args *a) { a->swiglu = 2; }},
        {"w_static = 2", [](tinfer_gemm_bf16_args *a) { a->w_static = 2; }},
        {"w_static = -1", [](tinfer_gemm_bf16_args *a) { a->w_static = -1; }},
        {"X misaligned", [](tinfer_gemm_bf16_args *a) { a->X = (const uint16_t *)(uintptr_t)0x1008; }},
        /* the split RMSNorm: a producer needs all three fields, an F32 Y, no SwiGLU, ldnx >= N;
         * a consumer rn >= 1 and reps >= 0 */
        {"split-norm producer into BF16 Y", [](tinfer_gemm_bf16_args *a) {
             a->nx = (uint16_t *)(uintptr_t)0x3000; a->ldnx = 16; a->nw = a->X;
             a->nss = (unsigned long long *)(uintptr_t)0x4000; }},
        {"split-norm producer without nss", [](tinfer_gemm_bf16_args *a) {
             a->y_dtype = TINFER_DTYPE_F32; a->nx = (uint16_t *)(uintptr_t)0x3000; a->ldnx = 16; a->nw = a->X; }},
        {"split-norm producer ldnx < N", [](tinfer_gemm_bf16_args *a) {
             a->y_dtype = TINFER_DTYPE_F32; a->nx = (uint16_t *)(uintptr_t)0x3000; a->ldnx = 8; a->nw = a->X;
             a->nss = (unsigned long long *)(uintptr_t)0x4000; }},
        {"split-norm producer with SwiGLU", [](tinfer_gemm_bf16_args *a) {
             a->y_dtype = TINFER_DTYPE_F32; a->swiglu = 1; a->nx = (uint16_t *)(uintptr_t)0x3000; a->ldnx = 16;
             a->nw = a->X; a->nss = (unsigned long long *)(uintptr_t)0x4000; }},
        {"split-norm consumer rn = 0", [](tinfer_gemm_bf16_args *a) {
             a->rss = (const unsigned long long *)(uintptr_t)0x4000; a->rn = 0; a->reps = 1e-5f; }},
        {"split-norm consumer reps NaN", [](tinfer_gemm_bf16_args *a) {
             a->rss = (const unsigned long long *)(uintptr_t)0x4000; a->rn = 16; a->reps = NAN; }},
    };
    { /* and the split RMSNorm's fields, well formed, accepted */
        tinfer_gemm_bf16_args a = good;
        a.y_dtype = TINFER_DTYPE_F32;
        a.nx = (uint16_t *)(uintptr_t)0x3000, a.ldnx = 16, a.nw = a.X, a.nss = (unsigned long long *)(uintptr_t)0x4000;
        a.rss = (const unsigned long long *)(uintptr_t)0x5000, a.rn = 16, a.reps = 1e-5f;
        if (tinfer_gemm_bf16_check(&a, "test", &err) != TINFER_OK) {
            printf("FAIL check: split-norm args refused: %s\n", err.msg);
            g_fail++;
        }
    }
    for (const auto &c : cs) {
        tinfer_gemm_bf16_args a = good;
        c.bad(&a);
        const tinfer_status st = tinfer_gemm_bf16_check(&a, "test", &err);
        printf("%s check refuses %s%s%s\n", st == TINFER_ERR_INVALID_ARG ? "ok  " : "FAIL", c.what,
               st == TINFER_ERR_INVALID_ARG ? ": " : "", st == TINFER_ERR_INVALID_ARG ? err.msg : "");
        if (st != TINFER_ERR_INVALID_ARG) g_fail++;
    }
}

/* Rung 03's split pick (host arithmetic) on tables of co-resident clusters: a split only where
 * tiles are few and K is long, never with a cluster size whose clusters do not all fit, every
 * CTA with at least TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_KB k-blocks. */
void split_pick(void) {
    int32_t roomy[TINFER_GEMM_BF16_WGMMA_WIDTHS][9], tight[TINFER_GEMM_BF16_WGMMA_WIDTHS][9];
    for (int w = 0; w < TINFER_GEMM_BF16_WGMMA_WIDTHS; w++)
        for (int k = 0; k < 9; k++) {
            roomy[w][k] = k ? 132 / k : 0;
            tight[w][k] = k <= 1 ? roomy[w][k] : 0; /* no cluster fits */
        }
    /* want_cfg: the tile width expected (0: any) */
    struct { int64_t M, N, K; int sw; const int32_t(*t)[9]; int want_split, want_cfg; } cs[] = {
        {128, 4096, 14336, 0, roomy, 1, 128}, /* Llama down, 32 tiles of 128 x 128 */
        {16, 6144, 4096, 0, roomy, 1, 256},   /* Llama QKV at M = 16 */
        {128, 4096, 14336, 0, tight, 0, 0},   /* no cluster fits: no split */
        {128, 3072, 576, 0, roomy, 0, 0},     /* short K: no split */
        {2048, 4096, 4096, 0, roomy, 0, 0},   /* many tiles: no split */
        {64, 2 * 1024, 8192, 1, roomy, 1, 256},
        /* SmolLM2 down (N' = 576 = 8 x 72): at M = 2048, 128 tiles of 72 fill the SMs unsplit;
         * at M = 128 / 512 the 72-wide tiles are few and the 128-wide tiles split, so 144 is not
         * tried */
        {2048, 576, 1536, 0, roomy, 0, 72},
        {128, 576, 1536, 0, roomy, 1, 128},
        {512, 576, 1536, 0, roomy, 1, 128},   /* 128 splits: 144 is not tried */
        {2048, 576, 1536, 0, tight, 0, 0},    /* no cluster fits: the unsplit tile */
        /* SmolLM2 gate/up (plain, N' = 3072, K = 576): at M = 512, 128 tiles of 96 fill one round
         * where 72 needs two (with TINFER_GEMM_BF16_WGMMA_96); at M = 256, 86 tiles of 72 fit one */
        {512, 3072, 576, 0, roomy, 0, TINFER_GEMM_BF16_WGMMA_96 ? 96 : 0},
        {256, 3072, 576, 0, roomy, 0, 72},
        /* 128 x 192 tiles (with TINFER_GEMM_BF16_WGMMA_192): SmolLM2 gate/up at M = 2048, 256
         * tiles in two rounds where 128 takes three (384 tiles); Llama-3-8B QKV at M = 512, 128
         * tiles in one round where 256 leaves 36 SMs idle (96 tiles, too many to split) */
        {2048, 3072, 576, 0, roomy, 0, TINFER_GEMM_BF16_WGMMA_192 ? 192 : 128},
        {512, 6144, 4096, 0, roomy, 0, TINFER_GEMM_BF16_WGMMA_192 ? 192 : 256},
    };
    for (const auto &c : cs) {
        int32_t cfg = 0, ks = 0;
        const int64_t nout = c.sw ? c.N / 2 : c.N;
        tinfer_gemm_bf16_wgmma_pick_split(c.M, nout, c.K, c.sw, 132, c.t, &cfg, &ks);
        const int64_t cols = c.sw ? cfg / 2 : cfg, tiles = ((c.M + 127) / 128) * ((nout + cols - 1) / cols);
        const int64_t kb = (c.K + 63) / 64, kper = (kb + ks - 1) / ks;
        const bool ok = (cfg == 72 || cfg == 96 || cfg == 128 || cfg == 144 || cfg == 192 || cfg == 256) && ks >= 1 && ks <= 8 && (ks > 1) == (c.want_split != 0) &&
                        (!c.want_cfg || cfg == c.want_cfg) &&
                        (ks == 1 || (tiles <= c.t[tinfer_gemm_bf16_wgmma_width_index(cfg)][ks] &&
                                     kper >= TINFER_GEMM_BF16_WGMMA_SPLIT_MIN_KB));
        printf("%s split pick M=%lld N=%lld K=%lld%s: 128 x %d, factor %d\n", ok ? "ok  " : "FAIL", (long long)c.M,
               (long long)c.N, (long long)c.K, c.sw ? " swiglu" : "", (int)cfg, (int)ks);
        if (!ok) g_fail++;
    }
}

/* Rung 05's split pick (host arithmetic): the largest factor whose CTAs stay within FILL_NUM /
 * FILL_DEN (3/4) of the SMs, within the co-resident clusters and at least
 * TINFER_GEMM_BF16_SKINNY_MIN_KB k-blocks per CTA; none when no factor does. */
void skinny_pick(void) {
    int32_t roomy[9], tight[9];
    for (int f = 0; f < 9; f++) {
        roomy[f] = f ? 264 / f : 0; /* two CTAs per SM on 132 SMs */
        tight[f] = f <= 1 ? roomy[f] : 0;
    }
    struct { int64_t M, N, K; int sw; const int32_t *t; int want; } cs[] = {
        {16, 49152, 576, 0, roomy, 1},    /* SmolLM2 LM head: 384 tiles */
        {16, 6144, 4096, 0, roomy, 2},    /* Llama QKV: 48 tiles, 2 x 48 <= 99 < 3 x 48 */
        {64, 4096, 14336, 0, roomy, 3},   /* Llama down: 32 tiles, 3 x 32 <= 99 */
        {32, 28672, 4096, 1, roomy, 1},   /* Llama gate/up, SwiGLU: 224 tiles of 64 outputs */
        {16, 6144, 4096, 0, tight, 1},    /* no cluster fits */
        {16, 960, 128, 0, roomy, 1},      /* two k-blocks: no split keeps >= 2 each */
        {16, 960, 576, 0, roomy, 5},      /* SmolLM2 QKV: 8 tiles, 9 k-blocks: 6..8 leave a rank none */
        {100, 4096, 4096, 0, roomy, 1},   /* two token tiles of 64: 64 tiles, 2 x 64 > 99 */
        {16, 1024, 8192, 0, roomy, 8},    /* 8 tiles: 8 is the largest */
        {16, 20000, 4096, 0, roomy, 1},   /* 157 tiles */
    };
    for (const auto &c : cs) {
        const int32_t f = tinfer_gemm_bf16_skinny_pick(c.M, c.sw ? c.N / 2 : c.N, c.K, c.sw, 132, c.t);
        const bool ok = f == c.want;
        printf("%s skinny pick M=%lld N=%lld K=%lld%s: token tile %d, factor %d (want %d)\n", ok ? "ok  " : "FAIL",
               (long long)c.M, (long long)c.N, (long long)c.K, c.sw ? " swiglu" : "", (int)tinfer_gemm_bf16_skinny_bt(c.M),
               (int)f, c.want);
        if (!ok) g_fail++;
    }
}

/* Rung 06's pick (host arithmetic, 132 SMs): 16-token tiles while their CTAs (64-output row tiles
 * x token tiles x split factor) fit one per SM (unsplit ones two per SM), else (plain outputs, a K one CTA holds) 64-token
 * tiles while one per SM, else 32-token tiles while two per SM, else 64-token tiles while one per
 * SM (fewer where their shared memory does not fit), else none; a K that one CTA cannot hold split
 * as widely as that allows (up to 4) at 16 tokens, as little at 32 / 64; 16-token tiles with two
 * consumer warpgroups (so a K that one CTA holds, up to 22 k-blocks at 16 tokens, is not split),
 * 32 / 64-token ones with one; past all of those, plain outputs of a K over 13 k-blocks and up to
 * 2048 in unsplit 64-token tiles through a 12-stage ring, two warpgroups, while they fit one wave
 * (want_st: the ring's stages, 0 = a slot per k-block; want_wg: the warpgroups). */
void tiny_pick(void) {
    struct { int64_t M, nout, K; int sw, n_sm, want, want_f, want_st, want_wg; } cs[] = {
        {16, 960, 576, 0, 132, 16, 1, 0, 2},    {128, 960, 576, 0, 132, 16, 1, 0, 2}, /* SmolLM2 QKV: 15 and 120 CTAs */
        {256, 960, 576, 0, 132, 16, 1, 0, 2},   {512, 960, 576, 0, 132, 64, 1, 0, 1}, /* 240 at 16 tokens, two per SM; 480 at 16, 120 at 64 */
        {1024, 960, 576, 0, 132, 0, 0, 0, 0},   {64, 3072, 576, 0, 132, 16, 1, 0, 2}, /* 240 at 64, 480 at 32; gate/up 192 at 16 */
        {128, 3072, 576, 0, 132, 64, 1, 0, 1},  {256, 3072, 576, 0, 132, 0, 0, 0, 0}, /* 96 at 64; 192 at 64, 384 at 32 */
        {64, 1536, 576, 1, 132, 16, 1, 0, 2},   {16, 576, 1408, 0, 132, 16, 1, 0, 2}, /* fused gate/up: 48 row tiles of 32, 192 CTAs; 22 k-blocks fit */
        {256, 1536, 576, 1, 132, 0, 0, 0, 0},   {128, 1536, 576, 1, 132, 32, 1, 0, 1}, /* SwiGLU as gate/up: 384 / 192 at 32, 192 at 64 */
        {256, 576, 1536, 0, 132, 64, 2, 0, 1},  {16, 40, 576, 1, 132, 16, 1, 0, 2},   /* down: 72 CTAs of 64 tokens split 2; 2 row tiles */
        {16, 960, 40, 0, 132, 16, 1, 0, 2},     {16, 3072, 576, 0, 132, 16, 1, 0, 2}, /* K = 40: one k-block; gate/up: 48 CTAs */
        {32, 3072, 576, 0, 132, 16, 1, 0, 2},                                         /* 96 CTAs */
        {128, 576, 1152, 0, 132, 16, 1, 0, 2},  {512, 576, 1152, 0, 132, 64, 1, 12, 2}, /* 72 CTAs; 18 k-blocks: the ring (72 CTAs) */
        {16, 576, 1416, 0, 132, 16, 4, 0, 2},   {32, 576, 1536, 0, 132, 16, 4, 0, 2}, /* 23 / 24 k-blocks: split 4 (SmolLM2 down) */
        {64, 576, 1536, 0, 132, 16, 3, 0, 2},   {128, 576, 1536, 0, 132, 32, 2, 0, 1}, /* 144 CTAs at 4; 16 tokens: 144 at 2, 32: 72 at 2 */
        {512, 576, 1536, 0, 132, 64, 1, 12, 2}, {16, 576, 1408, 1, 132, 16, 1, 0, 2}, /* 144 CTAs at 64 x 2: the ring; SwiGLU holds plain's K */
        {448, 576, 1536, 0, 132, 64, 2, 0, 1},  {896, 576, 1536, 0, 132, 64, 1, 12, 2}, /* 126 CTAs at 64 x 2; the ring's last one wave */
        {960, 576, 1536, 0, 132, 0, 0, 0, 0},   {512, 576, 2112, 0, 132, 0, 0, 0, 0}, /* 135 ring CTAs; K past the ring's cap, 2048 */
        {512, 576, 1536, 0, 64, 0, 0, 0, 0},    {512, 3072, 1536, 1, 132, 0, 0, 0, 0}, /* 72 CTAs on 64 SMs; SwiGLU: no ring */
        {512, 576, 832, 0, 132, 64, 1, 0, 1},                                         /* 13 k-blocks fit one CTA's 64-token slots: no ring */
        {16, 576, 1416, 1, 132, 16, 4, 0, 2},                                         /* SwiGLU, 23 k-blocks: split */
        {16, 6144, 4096, 0, 132, 0, 0, 0, 0},   {32, 49152, 576, 0, 132, 0, 0, 0, 0}, /* Llama QKV (split 4: 384 CTAs); LM head */
        {16, 960, 576, 0, 0, 0, 0, 0, 0},                                             /* no device */
    };
    for (const auto &c : cs) {
        int32_t f = -1, st = -1, wg = -1;
        const int32_t bt = tinfer_gemm_bf16_tiny_pick(c.M, c.nout, c.K, c.sw, c.n_sm, &f, &st, &wg);
        const bool ok = bt == c.want && f == c.want_f && st == c.want_st && wg == c.want_wg;
        printf("%s tiny pick M=%lld N'=%lld K=%lld%s on %d SMs: %d tokens, split %d, ring %d, %d warpgroups (want %d, %d, %d, %d)\n",
               ok ? "ok  " : "FAIL", (long long)c.M, (long long)c.nout, (long long)c.K, c.sw ? " swiglu" : "", c.n_sm, (int)bt,
               (int)f, (int)st, (int)wg, c.want, c.want_f, c.want_st, c.want_wg);
        if (!ok) g_fail++;
    }
}

/* The GEMV path's rung (host arithmetic, bf16.h): rung 09 for 4..8 tokens, plain or residual,
 * K >= 4096 and at most 64 columns per SM; else rung 06 for K >= 8192 on sm_90; rung 08 for short
 * rows (K <= 1024) up to 16 tokens, or short wide weights; rung 05 otherwise. */
void gemv_pick(void) {
    const tinfer_gemv_bf16_kernel R05 = TINFER_GEMV_BF16_CP_ASYNC, R06 = TINFER_GEMV_BF16_CLUSTER,
                                  R08 = TINFER_GEMV_BF16_STREAM, R09 = TINFER_GEMV_BF16_BULK;
    struct { const char *what; int64_t M, N, K; int sw, resid, cc, n_sm; tinfer_gemv_bf16_kernel want; } cs[] = {
        {"Llama QKV", 1, 6144, 4096, 0, 0, 9, 132, R05},   {"Llama QKV", 3, 6144, 4096, 0, 0, 9, 132, R05},
        {"Llama QKV", 4, 6144, 4096, 0, 0, 9, 132, R09},   {"Llama QKV", 8, 6144, 4096, 0, 0, 9, 132, R09},
        {"Llama QKV", 9, 6144, 4096, 0, 0, 9, 132, R05},   /* past 8 tokens (a forced GEMV path) */
        {"Llama QKV", 8, 6144, 4096, 0, 0, 9, 64, R05},    /* 96 columns per SM */
        {"Llama QKV", 8, 6144, 4096, 0, 0, 8, 132, R05},   /* not sm_90 */
        {"Llama down", 2, 4096, 14336, 0, 0, 9, 132, R06}, {"Llama down", 4, 4096, 14336, 0, 1, 9, 132, R09},
        {"Llama down", 8, 4096, 14336, 0, 1, 8, 132, R05}, /* not sm_90: no cluster rung either */
        {"Llama gate/up", 8, 28672, 4096, 0, 0, 9, 132, R05},
        {"gate/up SwiGLU", 8, 2 * 3072, 4096, 1, 0, 9, 132, R05}, /* SwiGLU: not rung 09 */
        {"SmolLM2 QKV", 4, 960, 576, 0, 0, 9, 132, R08},   {"SmolLM2 LM head", 1, 49152, 576, 0, 0, 9, 132, R08},
        {"K = 2048", 8, 4096, 2048, 0, 0, 9, 132, R05},
    };
    for (const auto &c : cs) {
        tinfer_gemm_bf16_args a;
        memset(&a, 0, sizeof a);
        a.M = c.M; a.N = c.N; a.K = c.K; a.swiglu = c.sw;
        a.R = c.resid ? (const void *)(uintptr_t)0x1000 : NULL;
        const tinfer_gemv_bf16_kernel got = tinfer_gemv_bf16_pick(&a, c.cc, c.n_sm);
        printf("%s gemv pick %s M=%lld N=%lld K=%lld%s%s sm_%d0 x %d: rung %02d (want %02d)\n", got == c.want ? "ok  " : "FAIL",
               c.what, (long long)c.M, (long long)c.N, (long long)c.K, c.sw ? " swiglu" : "", c.resid ? " resid" : "", c.cc,
               c.n_sm, (int)got, (int)c.want);
        if (got != c.want) g_fail++;
    }
}

/* The dispatcher's route (tinfer_gemm_bf16_route_for: host arithmetic, the rules in
 * gemm/dispatch.cu with bf16.h's constants) on an H200's facts (sm_90, 132 SMs) and with no
 * device (0, 0), so both run on a machine without a GPU: the decode GEMV up to
 * TINFER_GEMM_BF16_GEMV_MAX_M tokens; on sm_90 the GEMM path where rung 06 takes the shape;
 * beyond that the GEMV only for rung 08's short rows (up to TINFER_GEMV_BF16_STREAM_MAX_M tokens,
 * or _STREAM_PASS_MAX_M with the weight re-read once per 16-token pass within
 * _STREAM_PASS_TRAFFIC) or while that re-read stays within TINFER_GEMM_BF16_SMALL_W_TRAFFIC
 * (up to _SMALL_W_MAX_M tokens); then the rung on each path. And tinfer_gemm_bf16_choose (the
 * current device's facts) takes the path route_for gives for those facts. Skipped under
 * TINFER_GEMM_FORCE. */
void route_choice(int cc, int n_sm) {
    if (getenv("TINFER_GEMM_FORCE")) return;
    struct { const char *what; int64_t M, N, K; int sw; const char *h200, *none; } cs[] = {
        {"Llama QKV", 1, 6144, 4096, 0, "gemv 05", "gemv 05"},
        {"Llama QKV", TINFER_GEMM_BF16_GEMV_MAX_M, 6144, 4096, 0, "gemv 09", "gemv 05"}, /* rung 09: sm_90, 4..8 tokens */
        {"Llama QKV", TINFER_GEMM_BF16_GEMV_MAX_M + 1, 6144, 4096, 0, "gemm 05", "gemm 01"}, /* skinny: 50 MB, <= 32 tokens */
        {"Llama QKV", 64, 6144, 4096, 0, "gemm 03", "gemm 01"},
        {"Llama down", 1, 4096, 14336, 0, "gemv 06", "gemv 05"},        /* K >= 8192: the cluster GEMV on sm_90 */
        {"SmolLM2 gate/up", 16, 3072, 576, 0, "gemm 06 t16 wg2", "gemv 08"}, /* else one rung 08 pass: 3.5 MB */
        {"SmolLM2 gate/up", 32, 3072, 576, 0, "gemm 06 t16 wg2", "gemv 08"}, /* else two passes: 7 MB */
        {"SmolLM2 gate/up", 64, 3072, 576, 0, "gemm 06 t16 wg2", "gemm 01"}, /* four passes: 14 MB */
        {"SmolLM2 down", 32, 576, 1536, 0, "gemm 06 t16 k/4 wg2", "gemv 05"}, /* else K > 1024, two passes 3.5 MB */
        {"SmolLM2 down", 33, 576, 1536, 0, "gemm 06 t16 k/4 wg2", "gemm 01"}, /* three passes: 5.3 MB */
        {"SmolLM2 down", 512, 576, 1536, 0, "gemm 06 t64 ring12 wg2", "gemm 01"},
        {"SmolLM2 down", 960, 576, 1536, 0, "gemm 03", "gemm 01"},      /* 135 ring CTAs: past one wave */
        {"SmolLM2 QKV", TINFER_GEMV_BF16_STREAM_PASS_MAX_M, 960, 576, 0, "gemm 06 t16 wg2", "gemv 08"}, /* 4 passes: 4.4 MB */
        {"SmolLM2 QKV", TINFER_GEMV_BF16_STREAM_PASS_MAX_M + 1, 960, 576, 0, "gemm 06 t16 wg2", "gemm 01"},
        {"SmolLM2 QKV", 1024, 960, 576, 0, "gemm 03", "gemm 01"},
        {"SmolLM2 O", 2048, 576, 576, 0, "gemm 03", "gemm 01"},
        {"SmolLM2 LM head", 1, 49152, 576, 0, "gemv 08", "gemv 08"},
        {"SmolLM2 LM head", TINFER_GEMV_BF16_STREAM_MAX_M, 49152, 576, 0, "gemv 08", "gemv 08"},
        {"SmolLM2 LM head", TINFER_GEMV_BF16_STREAM_MAX_M + 1, 49152, 576, 0, "gemm 05", "gemm 01"},
        {"SmolLM2 LM head", 64, 49152, 576, 0, "gemm 03", "gemm 01"},   /* past rung 05's 32 tokens */
        {"SmolLM2 gate/up SwiGLU", 64, 3072, 576, 1, "gemm 06 t16 wg2", "gemm 01"},
        {"SwiGLU 2048 x 2048", 128, 2048, 2048, 1, "gemm 04", "gemm 01"}, /* 4 wgmma tiles, no rung-06 tier */
    };
    { /* no arguments: no route, named "none"; a short buffer gets a terminated prefix */
        const tinfer_gemm_bf16_route r = tinfer_gemm_bf16_route_for(NULL, TINFER_GEMM_BF16_PATH_AUTO, 9, 132);
        char got[64], tiny[5];
        tinfer_gemm_bf16_route_name(&r, got, sizeof got);
        tinfer_gemm_bf16_args a;
        memset(&a, 0, sizeof a);
        a.M = 512; a.N = 576; a.K = 1536;
        const tinfer_gemm_bf16_route ring = tinfer_gemm_bf16_route_for(&a, TINFER_GEMM_BF16_PATH_AUTO, 9, 132);
        tinfer_gemm_bf16_route_name(&ring, tiny, sizeof tiny);
        const bool ok = r.path == TINFER_GEMM_BF16_PATH_AUTO && r.rung == 0 && !strcmp(got, "none") && !strcmp(tiny, "gemm");
        printf("%s route of NULL args: \"%s\"; a 5-byte name: \"%s\"\n", ok ? "ok  " : "FAIL", got, tiny);
        if (!ok) g_fail++;
    }
    for (const auto &c : cs) {
        for (int nodev = 0; nodev < 2; nodev++) {
            tinfer_gemm_bf16_args a;
            memset(&a, 0, sizeof a);
            a.M = c.M; a.N = c.N; a.K = c.K; a.swiglu = c.sw;
            const tinfer_gemm_bf16_route r =
                tinfer_gemm_bf16_route_for(&a, TINFER_GEMM_BF16_PATH_AUTO, nodev ? 0 : 9, nodev ? 0 : 132);
            char got[64];
            tinfer_gemm_bf16_route_name(&r, got, sizeof got);
            const char *want = nodev ? c.none : c.h200;
            const bool ok = !strcmp(got, want);
            printf("%s route %s M=%lld N=%lld K=%lld%s on %s: %s (want %s)\n", ok ? "ok  " : "FAIL", c.what,
                   (long long)c.M, (long long)c.N, (long long)c.K, c.sw ? " swiglu" : "", nodev ? "no device" : "sm_90 x 132",
                   got, want);
            if (!ok) g_fail++;
        }
        if (!c.sw) {
            tinfer_gemm_bf16_args a;
            memset(&a, 0, sizeof a);
            a.M = c.M; a.N = c.N; a.K = c.K;
            const tinfer_gemm_bf16_path want = tinfer_gemm_bf16_route_for(&a, TINFER_GEMM_BF16_PATH_AUTO, cc, n_sm).path;
            if (tinfer_gemm_bf16_choose(c.M, c.N, c.K) != want) {
                printf("FAIL choose %s M=%lld on this device (sm_%d0 x %d) differs from its route\n", c.what, (long long)c.M, cc,
                       n_sm);
                g_fail++;
            }
        }
    }
}

/*
 * test_gpu_tp.c — tensor parallelism on CUDA (models/tp_nccl.c through models/backend_tp.c)
 * against the same model on one GPU without it (tp 0). Public API only.
 *
 *   test_gpu_tp CONFIG_DIR TP
 *
 * Both models load CONFIG_DIR's config.json with the same random weights (seed 7). Exit 77
 * (skipped) where tp TP cannot run here: no GPU, a build without NCCL, fewer GPUs than TP.
 * Label gpu for TP = 1 (one GPU), gpu-multi for TP >= 2.
 *   1. logits of a 37-token prefill (every row) and of 8 decode steps: TP = 1 bit for bit equal
 *      to tp 0 (one rank runs the same kernels on the same shapes; a one-rank all-reduce and the
 *      logits gather move values unchanged); TP >= 2 within TOL_TP relative RMS;
 *   2. 32 greedy tokens (argmax only, logits mode 2: each rank's greedy logit reduced on the
 *      host, no logits gathered) from a 5-token prompt: identical to tp 0's (TP >= 2: until a
 *      step whose top two logits tie within TOL_TP);
 *   3. batched decode: 3 sequences of different prompt lengths decoded together (M = 3) give
 *      each the greedy tokens it gets decoded alone on the same TP model.
 * TOL_TP: the two runs round at the same points (BF16 GEMM inputs, BF16 KV cache) and differ
 * only in F32 summation orders: a row-split GEMM adds its ranks' partial sums after each rank
 * summed its K / TP terms, and every rank's GEMMs take other shapes, so other kernels. Those
 * orders move a sum by a few F32 ulps and flip a BF16 rounding now and then, as between the
 * fused and the op-by-op decode step (tests/model/test_gpu_model.c, bound 0.02); an indexing,
 * head or KV-layout bug gives O(1).
 */
#include "logits_util.h"
#include "test_util.h"
#include "gpu_model_util.h"
#include "tinfer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_TP 0.02
#define N_GREEDY 32
#define N_SEQ 3

/* Greedy decoding of sequences 0..n-1 together, sequence s from its prompt tok[s][0..plen[s]),
 * argmax only (logits mode 2), N_GREEDY tokens each into out[s]. 0 or -1. */
static int greedy(tinfer_context *c, int32_t n, const tinfer_token (*tok)[8], const int32_t *plen,
                  tinfer_token (*out)[N_GREEDY]) {
    tinfer_token t[N_SEQ * 8];
    int32_t pos[N_SEQ * 8], seq[N_SEQ * 8], last[N_SEQ];
    int8_t mode[N_SEQ * 8];
    int32_t k = 0;
    tinfer_seq_clear(c, -1);
    for (int32_t s = 0; s < n; s++)
        for (int32_t i = 0; i < plen[s]; i++, k++) {
            t[k] = tok[s][i], pos[k] = i, seq[k] = s;
            mode[k] = i == plen[s] - 1 ? 2 : 0;
            if (mode[k]) last[s] = k;
        }
    tinfer_batch b = {k, t, pos, seq, mode};
    if (tinfer_decode(c, &b) != TINFER_OK) return -1;
    for (int32_t g = 0; g < N_GREEDY; g++) {
        for (int32_t s = 0; s < n; s++) {
            out[s][g] = tinfer_get_argmax(c, last[s]);
            t[s] = out[s][g], pos[s] = plen[s] + g, seq[s] = s, mode[s] = 2, last[s] = s;
        }
        tinfer_batch step = {n, t, pos, seq, mode};
        if (g + 1 < N_GREEDY && tinfer_decode(c, &step) != TINFER_OK) return -1;
    }
    return 0;
}

/* The logits of greedy step g of sequence 0 alone, for the tie check: replays tokens on ctx. */
static double gap_at(tinfer_context *c, const tinfer_token *prompt, int32_t plen,
                     const tinfer_token *gen, int32_t g, int32_t V) {
    tinfer_token t[8 + N_GREEDY];
    int32_t pos[8 + N_GREEDY], seq[8 + N_GREEDY] = {0};
    const int32_t n = plen + g;
    for (int32_t i = 0; i < n; i++)
        t[i] = i < plen ? prompt[i] : gen[i - plen], pos[i] = i;
    tinfer_seq_clear(c, -1);
    tinfer_batch b = {n, t, pos, seq, NULL};
    if (tinfer_decode(c, &b) != TINFER_OK) return -1;
    return top2_gap(tinfer_get_logits(c, n - 1), V);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s CONFIG_DIR TP\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    const int32_t TP = atoi(argv[2]);
    tinfer_status rc;
    tinfer_model *ref = load_random(dir, TINFER_BACKEND_CUDA, 0, &rc);
    if (!ref) {
        printf("SKIP: the CUDA backend does not load here: %s\n", tinfer_last_error());
        return rc == TINFER_ERR_NO_DEVICE ? 77 : 1;
    }
    tinfer_model *tp = load_random(dir, TINFER_BACKEND_CUDA, TP, &rc);
    if (!tp) {
        const char *msg = tinfer_last_error();
        const bool skip =
            rc == TINFER_ERR_NO_DEVICE && (strstr(msg, "NCCL") || strstr(msg, "GPUs, but"));
        printf("%s: tp %d: %s\n", skip ? "SKIP" : "FAIL", (int)TP, msg);
        tinfer_model_free(ref);
        return skip ? 77 : 1;
    }
    printf("%s\n  tp 0: %s\n  tp %d: %s\n", dir, tinfer_model_desc(ref), (int)TP,
           tinfer_model_desc(tp));
    CHECK(strstr(tinfer_model_desc(tp), "tensor-parallel") != NULL, "tp %d desc", (int)TP);
    const int32_t V = tinfer_model_n_vocab(ref), R = N_PROMPT + N_DECODE;
    tinfer_token tok[N_PROMPT + N_DECODE];
    random_tokens(tok, R, V);
    float *lr = malloc((size_t)R * V * sizeof(float)), *lt = malloc((size_t)R * V * sizeof(float));
    /* the op-by-op step on both sides (tp ranks never fuse) */
    tinfer_context *cr = context(ref, N_SEQ, 0), *ct = context(tp, N_SEQ, 0);
    if (!lr || !lt || !cr || !ct) return 1;

    /* 1. logits */
    CHECK(run(cr, tok, V, lr) == 0, "tp 0 run: %s", tinfer_context_last_error(cr));
    CHECK(run(ct, tok, V, lt) == 0, "tp %d run: %s", (int)TP, tinfer_context_last_error(ct));
    double worst = 0;
    for (int32_t r = 0; r < R; r++) {
        const double e = rel_rms(lt + (size_t)r * V, lr + (size_t)r * V, V);
        worst = !(e <= worst) ? e : worst; /* NaN sticks */
    }
    if (TP == 1) {
        const bool same = memcmp(lt, lr, (size_t)R * V * sizeof(float)) == 0;
        printf("  logits: tp 1 %s tp 0 over %d rows\n",
               same ? "bit for bit equal to" : "DIFFERS from", (int)R);
        CHECK(same, "tp 1 logits differ from tp 0's (relative RMS %.3g)", worst);
    } else {
        printf("  logits: worst relative RMS %.4f over %d rows (bound %.2f)\n", worst, (int)R,
               TOL_TP);
        CHECK(worst <= TOL_TP, "tp %d logits: relative RMS %.4f > %.2f", (int)TP, worst, TOL_TP);
    }

    /* 2. greedy tokens, alone, and 3. batched = alone */
    const tinfer_token prompts[N_SEQ][8] = {
        {11, 2, 3, 4, 5}, {7, 8, 9}, {21, 22, 23, 24, 25, 26, 27}};
    const int32_t plen[N_SEQ] = {5, 3, 7};
    tinfer_token gr[N_SEQ][N_GREEDY], gt[N_SEQ][N_GREEDY], gb[N_SEQ][N_GREEDY];
    CHECK(greedy(cr, 1, prompts, plen, gr) == 0, "tp 0 greedy: %s", tinfer_context_last_error(cr));
    CHECK(greedy(ct, 1, prompts, plen, gt) == 0, "tp %d greedy: %s", (int)TP,
          tinfer_context_last_error(ct));
    int32_t same = 0;
    while (same < N_GREEDY && gt[0][same] == gr[0][same])
        same++;
    if (same < N_GREEDY) {
        const double gap = gap_at(cr, prompts[0], plen[0], gr[0], same, V);
        printf("  greedy: identical for %d tokens, then %s (top-2 gap %.4f)\n", (int)same,
               gap < TOL_TP ? "a tie" : "NOT a tie", gap);
        CHECK(TP > 1 && gap < TOL_TP, "tp %d greedy token %d: %d, tp 0's %d", (int)TP, (int)same,
              (int)gt[0][same], (int)gr[0][same]);
    } else
        printf("  greedy: identical for all %d tokens\n", N_GREEDY);
    CHECK(greedy(ct, N_SEQ, prompts, plen, gb) == 0, "tp %d batched greedy: %s", (int)TP,
          tinfer_context_last_error(ct));
    for (int32_t s = 0; s < N_SEQ; s++) {
        tinfer_token alone[N_SEQ][N_GREEDY];
        CHECK(greedy(ct, 1, prompts + s, plen + s, alone) == 0, "tp %d alone: %s", (int)TP,
              tinfer_context_last_error(ct));
        int32_t k = 0;
        while (k < N_GREEDY && gb[s][k] == alone[0][k])
            k++;
        printf("  sequence %d batched vs alone: identical for %d of %d tokens\n", (int)s, (int)k,
               N_GREEDY);
        if (k < N_GREEDY) { /* M = 3 and M = 1 take other kernels: a tie may part them */
            const double gap = gap_at(cr, prompts[s], plen[s], alone[0], k, V);
            CHECK(gap < TOL_TP, "sequence %d batched token %d: %d, alone %d (gap %.4f: no tie)",
                  (int)s, (int)k, (int)gb[s][k], (int)alone[0][k], gap);
        }
    }
    free(lr);
    free(lt);
    tinfer_context_free(cr);
    tinfer_context_free(ct);
    tinfer_model_free(ref);
    tinfer_model_free(tp);
    if (test_failures) return 1;
    printf("gpu tp %d: ok\n", (int)TP);
    return 0;
}

/*
 * test_tp.c — tensor parallelism on the CPU (models/backend_tp.c, tinfer_model_params.tp)
 * against the unsplit model.
 *
 * Usage: test_tp TINY_LLAMA TINY_QWEN2 CONFIG_SMALL64 WORK_DIR
 * Models: the two tiny fixtures with their real weights (4 heads, 2 KV heads; qwen2 has q/k/v
 * biases and a tied LM head), a random-weight model of config-small64 (head_dim 64, 4 layers),
 * and a Q8_0 model this test writes into WORK_DIR (I8 + F16 scales for every projection and
 * the LM head). For each and tp = 1 (one rank: equal to the unsplit model), 2 (KV heads split)
 * and 4 (KV heads replicated, 2 ranks each):
 *   1. one context of 3 sequences run by both models on the same batches: sequence 0's prompt
 *      alone; sequence 1's prompt mixed with sequence 0's next token; sequence 2's prompt with
 *      a token of 0 and of 1; then 5 steps of one token each for all three. Every row asks for
 *      its logits: tp N's equal the unsplit model's (tp 0) within TOL (below), and its argmax
 *      is its logits' argmax. The tokens fed after the prompts are the unsplit model's argmax,
 *      so both runs see the same input.
 *   2. 32 greedy tokens (argmax only: logits mode 2) of each model decoding alone are equal.
 * Errors (each a one-line message, no model made): tp 3 on 4 heads; 6 ranks over 4 KV heads;
 * tp 2 with intermediate_size 201; a Q8_0 o_proj whose per-rank columns are not whole blocks;
 * tp 2 with the CUDA backend where the build has no NCCL or the machine fewer than 2 GPUs
 * (with both it loads), and with AUTO where a GPU is usable; tp -1 and 1000; device lists that
 * do not fit; CUDA-like ranks without host buffers (buf_f32 NULL) refused by the host
 * all-reduce.
 */
#include "model_internal.h"
#include "test_util.h"
#include "tinfer.h"

#include "base/q8_0.h"
#include "models/backend_tp.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

/* tp N vs the unsplit model, as max|dlogit| / max|logit| of a row. The split changes only the
 * order in which FP32 sums are formed: a row-split GEMM (o_proj over K = Q inputs, down_proj over
 * K = n_ff) sums each rank's K/tp terms and then adds the ranks' partial sums, and the column-split
 * GEMMs run on other N (the kernel may block them differently). Reordering a K-term FP32 sum moves
 * it by at most ~K·u·Σ|x_i·w_i| (u = 2^-24; Higham, Accuracy and Stability of Numerical Algorithms,
 * 2nd ed., eq. 3.5): K <= 512 here gives 3.1e-5 of the absolute sum per GEMM as the worst case,
 * while rounding errors of random sign grow like sqrt(K)·u (1.3e-6). Each layer's RMSNorm rescales,
 * so the logits keep that order: 2e-5 lies between the typical and the worst case. Measured: up to
 * ~1e-6 (see the printed figures). A wrong head, KV head, slice or a bias added twice moves logits
 * by O(1) of their scale.
 */
#define TOL 2e-5
/* Q8_0: at one token a row the CPU GEMV also quantizes the activations per 32-block to int8
 * (gemm/cpu/gemm_cpu_q8.c). An activation that differs by FP32 rounding between the two runs
 * can round to the neighbouring int8 value, moving one product term by one quantization step
 * d_x·|w| (d_x = max|x_block| / 127): up to 1/127 of one term of a K-term sum. Rare (an
 * activation must lie within ~1e-6 of a rounding boundary), but possible, so the bound allows
 * a few such terms: 1e-3. */
#define TOL_Q8 1e-3

#define N_SEQ 3
#define N_GREEDY 32

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static int32_t rand_tok(int32_t V) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (int32_t)(g_rng % (uint64_t)V);
}
static float rand_f(float a) { /* uniform in [-a, a] */
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return a * (2.0f * (float)(g_rng >> 40) / (float)(1ull << 24) - 1.0f);
}

/* backend.h's argmax rule: ties to the lowest id, NaN never wins, all NaN gives 0 */
static int32_t argmax(const float *x, int32_t n) {
    int32_t b = -1;
    for (int32_t i = 0; i < n; i++)
        if (x[i] == x[i] && (b < 0 || x[i] > x[b])) b = i;
    return b < 0 ? 0 : b;
}

static tinfer_model *load(const char *dir, int32_t tp, bool random_w) {
    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = TINFER_BACKEND_CPU;
    mp.tp = tp;
    mp.random_weights = random_w;
    mp.random_seed = 1;
    tinfer_model *m = NULL;
    if (tinfer_model_load(dir, &mp, &m) != TINFER_OK)
        fprintf(stderr, "load %s (tp %d): %s\n", dir, (int)tp, tinfer_last_error());
    return m;
}

static tinfer_context *new_ctx(tinfer_model *m, int32_t n_seq) {
    tinfer_context_params cp = tinfer_context_default_params();
    cp.n_ctx = 96;
    cp.n_seq_max = n_seq;
    cp.n_batch = 64;
    tinfer_context *c = NULL;
    if (tinfer_context_init(m, &cp, &c) != TINFER_OK)
        fprintf(stderr, "context: %s\n", tinfer_last_error());
    return c;
}

/* 1. the multi-sequence schedule on both models; returns the largest relative difference. */
static double mixed_run(tinfer_model *m1, tinfer_model *mt, const char *what) {
    const int32_t V = tinfer_model_n_vocab(m1);
    tinfer_context *c1 = new_ctx(m1, N_SEQ), *ct = new_ctx(mt, N_SEQ);
    if (!c1 || !ct) {
        CHECK(0, "%s: contexts", what);
        return INFINITY;
    }
    static const int32_t prompt[N_SEQ] = {9, 6, 5}; /* each sequence's prompt length */
    int32_t len[N_SEQ] = {0}, next[N_SEQ] = {0};
    double worst = 0;
    for (int32_t step = 0; step < 8; step++) {
        int32_t tok[64], pos[64], seq[64], n = 0, qt[N_SEQ][16], qk[N_SEQ];
        int8_t want[64];
        for (int32_t q = 0; q < N_SEQ; q++) { /* sequence q starts at step q, then decodes */
            qk[q] = step == q ? prompt[q] : step > q ? 1 : 0;
            for (int32_t i = 0; i < qk[q]; i++)
                qt[q][i] = step == q ? rand_tok(V) : next[q];
        }
        /* the sequences' entries interleaved (the plan sorts them), each in position order */
        for (int32_t i = 0, any = 1; any; i++) {
            any = 0;
            for (int32_t q = 0; q < N_SEQ; q++)
                if (i < qk[q]) {
                    tok[n] = qt[q][i], pos[n] = len[q] + i, seq[n] = q;
                    n++, any = 1;
                }
        }
        for (int32_t q = 0; q < N_SEQ; q++)
            len[q] += qk[q];
        for (int32_t i = 0; i < n; i++)
            want[i] = 1;
        tinfer_batch b = {n, tok, pos, seq, want};
        const tinfer_status r1 = tinfer_decode(c1, &b), rt = tinfer_decode(ct, &b);
        CHECK(r1 == TINFER_OK && rt == TINFER_OK, "%s step %d: %s", what, (int)step,
              tinfer_last_error());
        if (r1 != TINFER_OK || rt != TINFER_OK) break;
        for (int32_t i = 0; i < n; i++) {
            const float *a = tinfer_get_logits(c1, i), *t = tinfer_get_logits(ct, i);
            double d = 0, s = 0;
            for (int32_t v = 0; v < V; v++) {
                d = fmax(d, fabs((double)a[v] - (double)t[v]));
                s = fmax(s, fabs((double)a[v]));
            }
            worst = fmax(worst, d / s);
            CHECK(tinfer_get_argmax(ct, i) == argmax(t, V),
                  "%s step %d row %d: argmax %d, its logits' argmax %d", what, (int)step, (int)i,
                  (int)tinfer_get_argmax(ct, i), (int)argmax(t, V));
            next[seq[i]] = tinfer_get_argmax(c1, i); /* the sequence's last row wins */
        }
    }
    for (int32_t q = 0; q < N_SEQ; q++)
        CHECK(tinfer_seq_len(ct, q) == len[q], "%s: sequence %d holds %d tokens, expected %d", what,
              (int)q, (int)tinfer_seq_len(ct, q), (int)len[q]);
    tinfer_context_free(c1);
    tinfer_context_free(ct);
    return worst;
}

/* 2. N_GREEDY greedy tokens after a prompt, argmax only (mode 2). */
static int greedy(tinfer_model *m, int32_t *out) {
    const int32_t V = tinfer_model_n_vocab(m);
    tinfer_context *c = new_ctx(m, 1);
    if (!c) return -1;
    int32_t tok[8], pos[8], seq[8] = {0};
    uint64_t save = g_rng;
    g_rng = 12345; /* the same prompt for every model */
    for (int32_t i = 0; i < 8; i++)
        tok[i] = rand_tok(V), pos[i] = i;
    g_rng = save;
    int8_t want[8] = {0, 0, 0, 0, 0, 0, 0, 2};
    tinfer_batch b = {8, tok, pos, seq, want};
    int rc = tinfer_decode(c, &b) == TINFER_OK ? 0 : -1;
    int32_t row = 7;
    for (int32_t g = 0; rc == 0 && g < N_GREEDY; g++) {
        out[g] = tinfer_get_argmax(c, row);
        int32_t p = 8 + g, s = 0;
        int8_t mode = 2;
        tinfer_batch one = {1, &out[g], &p, &s, &mode};
        if (g + 1 < N_GREEDY && tinfer_decode(c, &one) != TINFER_OK) rc = -1;
        row = 0;
    }
    tinfer_context_free(c);
    return rc;
}

static void compare(const char *name, const char *dir, bool random_w, double tol) {
    tinfer_model *m1 = load(dir, 0, random_w);
    CHECK(m1, "%s: unsplit load", name);
    if (!m1) return;
    int32_t g1[N_GREEDY];
    CHECK(greedy(m1, g1) == 0, "%s unsplit: greedy: %s", name, tinfer_last_error());
    for (int32_t tp = 1; tp <= 4; tp *= 2) {
        tinfer_model *mt = load(dir, tp, random_w);
        CHECK(mt, "%s: tp %d load", name, (int)tp);
        if (!mt) continue;
        char what[128], route[256];
        snprintf(what, sizeof what, "%s tp %d", name, (int)tp);
        CHECK(strstr(tinfer_model_desc(mt), "tensor-parallel"), "%s: desc '%s'", what,
              tinfer_model_desc(mt));
        tinfer_model_route_desc(mt, 1, 1, route, sizeof route);
        CHECK(!strncmp(route, "tp ", 3), "%s: route '%s'", what, route);
        /* KV split (tp 1, 2): the shards hold exactly the weights; replicated (tp 4): more */
        const int64_t w1 = tinfer_model_weight_bytes(m1), wt = tinfer_model_weight_bytes(mt);
        CHECK(tp <= 2 ? wt == w1 : wt > w1, "%s: weight bytes %lld vs %lld", what, (long long)wt,
              (long long)w1);
        /* one rank runs the unsplit model's GEMMs on the same shapes, and its all-reduce and
         * logits gather move values unchanged: equal, not close */
        const double bound = tp == 1 ? 0.0 : tol;
        const double d = mixed_run(m1, mt, what);
        CHECK(d <= bound, "%s: logits differ by %.3g of their scale (bound %.0e)", what, d, bound);
        int32_t gt[N_GREEDY];
        CHECK(greedy(mt, gt) == 0, "%s: greedy: %s", what, tinfer_last_error());
        int32_t same = 0;
        while (same < N_GREEDY && gt[same] == g1[same])
            same++;
        CHECK(same == N_GREEDY, "%s: greedy token %d is %d, unsplit %d", what, (int)same,
              (int)gt[same < N_GREEDY ? same : 0], (int)g1[same < N_GREEDY ? same : 0]);
        printf("%-22s logits max rel diff %.3g (bound %.0e), %d/%d greedy tokens equal; %s\n", what,
               d, bound, (int)same, N_GREEDY, tinfer_model_desc(mt));
        tinfer_model_free(mt);
    }
    tinfer_model_free(m1);
}

/* ---- a Q8_0 model directory (safetensors written here) ------------------------------------ */

typedef struct st_tensor {
    char name[128];
    const char *dtype;
    int64_t d0, d1; /* d1 = 0: 1-D */
    void *data;
    size_t bytes;
} st_tensor;

static st_tensor *add_t(st_tensor *t, int *n, const char *name, const char *dt, int64_t d0,
                        int64_t d1, size_t esz) {
    st_tensor *x = &t[(*n)++];
    snprintf(x->name, sizeof x->name, "%s", name);
    x->dtype = dt;
    x->d0 = d0;
    x->d1 = d1;
    x->bytes = (size_t)(d0 * (d1 ? d1 : 1)) * esz;
    x->data = calloc(1, x->bytes);
    return x;
}

/* An F32 vector/matrix of random values in [c - a, c + a]. */
static void add_f32(st_tensor *t, int *n, const char *name, int64_t d0, int64_t d1, float c,
                    float a) {
    st_tensor *x = add_t(t, n, name, "F32", d0, d1, 4);
    for (size_t i = 0; i < x->bytes / 4; i++)
        ((float *)x->data)[i] = c + rand_f(a);
}

/* A Q8_0 matrix [N, K] quantized from random values in [-a, a]: `name` I8 + `name`_scale F16. */
static void add_q8(st_tensor *t, int *n, const char *name, int64_t N, int64_t K, float a) {
    char sn[128];
    snprintf(sn, sizeof sn, "%s_scale", name);
    st_tensor *q = add_t(t, n, name, "I8", N, K, 1);
    st_tensor *s = add_t(t, n, sn, "F16", N, K / 32, 2);
    float w[32];
    for (int64_t b = 0; b < N * K / 32; b++) {
        for (int i = 0; i < 32; i++)
            w[i] = rand_f(a);
        tinfer_q8_0_quantize_block(w, (int8_t *)q->data + b * 32, (uint16_t *)s->data + b);
    }
}

static int copy_file(const char *from, const char *to) {
    size_t n = 0;
    char *buf = test_read_file(from, &n);
    FILE *f = buf ? fopen(to, "wb") : NULL;
    int ok = f && fwrite(buf, 1, n, f) == n;
    if (f) ok &= fclose(f) == 0;
    free(buf);
    return ok ? 0 : -1;
}

/* A Llama model, E = H·D, F = 2E, vocab 300 (the tiny fixture's tokenizer.json), 2 layers. */
static int write_q8_model(const char *dir, const char *tokenizer, int E, int H, int Hkv, int D) {
    const int F = 2 * E, V = 300, L = 2;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return -1;
    char path[4096], name[100];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f,
            "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", "
            "\"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": %d, "
            "\"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"head_dim\": %d, "
            "\"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, "
            "\"vocab_size\": %d, \"tie_word_embeddings\": false, \"bos_token_id\": 1, "
            "\"eos_token_id\": 3, \"attention_bias\": true, \"quantization_config\": "
            "{\"quant_method\": \"q8_0\", "
            "\"group_size\": 32}}\n",
            E, F, L, H, Hkv, D, V);
    if (fclose(f) != 0) return -1;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (copy_file(tokenizer, path) != 0) return -1;

    st_tensor t[64];
    int n = 0;
    const float aw = 1.0f / sqrtf((float)E); /* weights of order 1/sqrt(K) */
    /* F32 first, then F16 scales, then I8: each tensor aligned to its element size */
    add_f32(t, &n, "model.embed_tokens.weight", V, E, 0.0f, 1.0f);
    add_f32(t, &n, "model.norm.weight", E, 0, 1.0f, 0.1f);
    for (int l = 0; l < L; l++) {
        snprintf(name, sizeof name, "model.layers.%d.input_layernorm.weight", l);
        add_f32(t, &n, name, E, 0, 1.0f, 0.1f);
        snprintf(name, sizeof name, "model.layers.%d.post_attention_layernorm.weight", l);
        add_f32(t, &n, name, E, 0, 1.0f, 0.1f);
        /* attention_bias: q/k/v biases and an o_proj bias (added on rank 0 only) */
        static const char *bias[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
        for (int p = 0; p < 4; p++) {
            snprintf(name, sizeof name, "model.layers.%d.self_attn.%s.bias", l, bias[p]);
            add_f32(t, &n, name, p == 0 ? H * D : p < 3 ? Hkv * D : E, 0, 0.0f, 0.2f);
        }
    }
    add_q8(t, &n, "lm_head.weight", V, E, aw);
    static const char *proj[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                 "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                 "mlp.down_proj"};
    for (int l = 0; l < L; l++)
        for (int p = 0; p < 7; p++) {
            const int64_t N = p == 0 ? H * D : p < 3 ? Hkv * D : p == 3 ? E : p < 6 ? F : E;
            const int64_t K = p == 3 ? H * D : p == 6 ? F : E;
            snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, proj[p]);
            add_q8(t, &n, name, N, K, p == 6 ? 1.0f / sqrtf((float)F) : aw);
        }
    /* the scales (F16) must precede the I8 values: reorder, keeping each group's order */
    st_tensor sorted[64];
    int k = 0;
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < n; i++)
            if (!strcmp(t[i].dtype, pass == 0 ? "F32" : pass == 1 ? "F16" : "I8"))
                sorted[k++] = t[i];
    char *hdr = malloc(65536);
    size_t h = (size_t)snprintf(hdr, 65536, "{");
    size_t off = 0;
    for (int i = 0; i < k; i++) {
        char shape[64];
        if (sorted[i].d1)
            snprintf(shape, sizeof shape, "[%lld, %lld]", (long long)sorted[i].d0,
                     (long long)sorted[i].d1);
        else
            snprintf(shape, sizeof shape, "[%lld]", (long long)sorted[i].d0);
        h += (size_t)snprintf(hdr + h, 65536 - h,
                              "%s\"%s\": {\"dtype\": \"%s\", \"shape\": %s, \"data_offsets\": "
                              "[%zu, %zu]}",
                              i ? ", " : "", sorted[i].name, sorted[i].dtype, shape, off,
                              off + sorted[i].bytes);
        off += sorted[i].bytes;
    }
    h += (size_t)snprintf(hdr + h, 65536 - h, "}");
    while (h % 8)
        hdr[h++] = ' '; /* the data section starts 8-byte aligned */
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    f = fopen(path, "wb");
    int ok = f != NULL;
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)((uint64_t)h >> (8 * i));
    ok = ok && fwrite(len, 1, 8, f) == 8 && fwrite(hdr, 1, h, f) == h;
    for (int i = 0; ok && i < k; i++)
        ok = fwrite(sorted[i].data, 1, sorted[i].bytes, f) == sorted[i].bytes;
    if (f) ok &= fclose(f) == 0;
    for (int i = 0; i < n; i++)
        free(t[i].data);
    free(hdr);
    return ok ? 0 : -1;
}

/* A config.json only (random weights), for the split errors. */
static int write_config(const char *dir, int E, int H, int Hkv, int D, int F) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return -1;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f,
            "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", "
            "\"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": 1, "
            "\"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"head_dim\": %d, "
            "\"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-05, \"vocab_size\": 64, "
            "\"tie_word_embeddings\": false}\n",
            E, F, H, Hkv, D);
    return fclose(f) == 0 ? 0 : -1;
}

/* ---- errors ------------------------------------------------------------------------------ */

/* Loading fails with `want` and a message holding `needle`, no model made. */
static void expect_fail(const char *dir, const tinfer_model_params *mp, tinfer_status want,
                        const char *needle, const char *what) {
    tinfer_model *m = (tinfer_model *)(uintptr_t)1;
    const tinfer_status rc = tinfer_model_load(dir, mp, &m);
    const char *msg = tinfer_last_error();
    CHECK(rc == want && m == NULL && strstr(msg, needle) && !strchr(msg, '\n'),
          "%s: status %d (want %d), message '%s' (want '%s' in it)", what, (int)rc, (int)want, msg,
          needle);
    if (rc == TINFER_OK) tinfer_model_free(m);
    printf("error case %-28s -> %s\n", what, msg);
}

/* Why a CUDA tensor-parallel model could not be made: a build without NCCL, no GPU, or fewer
 * GPUs than ranks. */
static bool cuda_tp_reason(const char *msg) {
    return strstr(msg, "NCCL") || strstr(msg, "no CUDA device") || strstr(msg, "GPUs, but") ||
           strstr(msg, "is not there");
}

/* tp on CUDA: TINFER_ERR_NO_DEVICE with one of those reasons, or, where the build has NCCL and
 * the machine the GPUs, a model whose ranks are CUDA's (made and freed: the gpu-multi tests
 * check what it computes). */
static void expect_cuda_tp(const char *dir, const tinfer_model_params *mp, const char *what) {
    tinfer_model *m = NULL;
    const tinfer_status rc = tinfer_model_load(dir, mp, &m);
    const char *msg = rc == TINFER_OK ? tinfer_model_desc(m) : tinfer_last_error();
    CHECK(rc == TINFER_OK ? tinfer_model_backend(m) == TINFER_BACKEND_CUDA &&
                                strstr(msg, "tensor-parallel") != NULL
                          : rc == TINFER_ERR_NO_DEVICE && !m && cuda_tp_reason(msg) &&
                                !strchr(msg, '\n'),
          "%s: status %d, '%s'", what, (int)rc, msg);
    printf("error case %-28s -> %s\n", what, msg);
    tinfer_model_free(m);
}

/* A CPU backend table that, like CUDA, has no host buffers. */
static tinfer_backend_ops g_no_host;

static void errors(const char *tiny, const char *work) {
    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = TINFER_BACKEND_CPU;
    mp.tp = 3;
    expect_fail(tiny, &mp, TINFER_ERR_INVALID_ARG, "4 attention heads", "tp 3 on 4 heads");
    mp.tp = -1;
    expect_fail(tiny, &mp, TINFER_ERR_INVALID_ARG, "tp -1", "tp -1");
    mp.tp = 1000;
    expect_fail(tiny, &mp, TINFER_ERR_INVALID_ARG, "tp 1000", "tp 1000");
    mp.tp = 2;
    mp.backend = TINFER_BACKEND_CUDA;
    expect_cuda_tp(tiny, &mp, "tp 2 on CUDA");
    const int32_t gpus[3] = {0, 1, 1};
    mp.gpus = gpus;
    mp.n_gpus = 2;
    expect_cuda_tp(tiny, &mp, "tp 2 on gpus 0,1");
    mp.n_gpus = 3;
    expect_fail(tiny, &mp, TINFER_ERR_INVALID_ARG, "3 GPUs listed for 2 ranks", "3 gpus, tp 2");
    mp.tp = 3;
    expect_fail(tiny, &mp, TINFER_ERR_INVALID_ARG, "listed twice", "gpus 0,1,1");
    mp.tp = 2;
    mp.n_gpus = 2;
    mp.backend = TINFER_BACKEND_CPU;
    expect_fail(tiny, &mp, TINFER_ERR_INVALID_ARG, "CUDA devices", "gpus with the CPU");
    mp.gpus = NULL;
    mp.n_gpus = 0;
    /* AUTO: the CPU shards where no usable GPU is present, else CUDA ranks (or the reason
     * there are none: no NCCL in the build, fewer GPUs than ranks) */
    mp.backend = TINFER_BACKEND_AUTO;
    tinfer_model *m = NULL;
    const tinfer_status rc_auto = tinfer_model_load(tiny, &mp, &m);
    CHECK(rc_auto == TINFER_OK ? strstr(tinfer_model_desc(m), "tensor-parallel") != NULL
                               : rc_auto == TINFER_ERR_NO_DEVICE && !m &&
                                     cuda_tp_reason(tinfer_last_error()),
          "tp 2, backend auto: status %d, '%s'", (int)rc_auto,
          m ? tinfer_model_desc(m) : tinfer_last_error());
    printf("tp 2, backend auto              -> %s\n",
           m ? tinfer_model_desc(m) : tinfer_last_error());
    tinfer_model_free(m);
    mp.backend = TINFER_BACKEND_CPU;

    char dir[4096];
    mp.random_weights = true;
    snprintf(dir, sizeof dir, "%s/kv4", work); /* 12 heads over 4 KV heads */
    CHECK(write_config(dir, 192, 12, 4, 16, 200) == 0, "cannot write %s", dir);
    mp.tp = 6;
    expect_fail(dir, &mp, TINFER_ERR_INVALID_ARG, "4 KV heads", "tp 6 over 4 KV heads");
    snprintf(dir, sizeof dir, "%s/ff201", work);
    CHECK(write_config(dir, 64, 4, 2, 16, 201) == 0, "cannot write %s", dir);
    mp.tp = 2;
    expect_fail(dir, &mp, TINFER_ERR_INVALID_ARG, "intermediate_size 201", "tp 2, n_ff 201");
    mp.random_weights = false;
    snprintf(dir, sizeof dir, "%s/q8-d16", work); /* Q = 64: 16 columns a rank at tp 4 */
    char tok[4096];
    snprintf(tok, sizeof tok, "%s/tokenizer.json", tiny);
    CHECK(write_q8_model(dir, tok, 64, 4, 2, 16) == 0, "cannot write %s", dir);
    mp.tp = 4;
    expect_fail(dir, &mp, TINFER_ERR_INVALID_ARG, "Q8_0", "tp 4, Q8_0 o_proj of 16 columns");

    /* ranks whose buffers are not host memory (a CUDA build's ranks before NCCL) */
    m = load(tiny, 0, false);
    CHECK(m, "tiny load");
    if (!m) return;
    g_no_host = tinfer_backend_cpu;
    g_no_host.name = "cuda";
    g_no_host.buf_f32 = NULL;
    void *st = NULL;
    const tinfer_llama_weights *dw = NULL;
    tinfer_err err = {{0}};
    const tinfer_status rc = tinfer_tp_model_init(&g_no_host, 2, NULL, tinfer_model_config(m),
                                                  tinfer_model_weights(m), 1, &st, &dw, &err);
    CHECK(rc == TINFER_ERR_NO_DEVICE && !st && strstr(err.msg, "host buffers"),
          "ranks without host buffers: status %d, '%s'", (int)rc, err.msg);
    printf("error case %-28s -> %s\n", "ranks without host buffers", err.msg);
    if (st) tinfer_backend_tp.model_free(st);
    tinfer_model_free(m);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s TINY_LLAMA TINY_QWEN2 CONFIG_SMALL64 WORK_DIR\n", argv[0]);
        return 2;
    }
    const char *work = argv[4];
    if (mkdir(work, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "cannot make %s\n", work);
        return 1;
    }
    compare("tiny-llama", argv[1], false, TOL);
    compare("tiny-qwen2", argv[2], false, TOL);
    compare("small64 random", argv[3], true, TOL);
    char dir[4096], tok[4096];
    snprintf(dir, sizeof dir, "%s/q8", work); /* Q = 128: 64 / 32 columns a rank at tp 2 / 4 */
    snprintf(tok, sizeof tok, "%s/tokenizer.json", argv[1]);
    CHECK(write_q8_model(dir, tok, 128, 4, 2, 32) == 0, "cannot write %s", dir);
    compare("q8_0", dir, false, TOL_Q8);
    errors(argv[1], work);
    return test_finish();
}

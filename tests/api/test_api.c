/*
 * test_api.c — the public API on bad input: broken model directories, bad batches, a prompt
 * longer than the context (also through tinfer-generate), an unavailable backend.
 *
 * Usage: test_api FIXTURE_DIR GENERATE_BIN. FIXTURE_DIR is tests/model/fixtures/tiny-llama; each
 * case copies it to a fresh temp directory and breaks one thing. Every failing call must
 * return the right status, leave *out NULL, and put the culprit's name (file, tensor, JSON key,
 * numbers) in tinfer_last_error().
 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"
#include "tinfer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *g_fixture;
static const char *FILES[] = {"config.json", "generation_config.json", "model.safetensors",
                              "tokenizer.json", "tokenizer_config.json"};

static void spit(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

/* A fresh copy of the fixture; returns its path (static buffer per call site is enough). */
static const char *fresh_copy(char *dir, size_t cap) {
    snprintf(dir, cap, "/tmp/tinfer_api_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    for (size_t i = 0; i < sizeof FILES / sizeof FILES[0]; i++) {
        char src[4096], dst[4096];
        size_t n;
        snprintf(src, sizeof src, "%s/%s", g_fixture, FILES[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, FILES[i]);
        char *buf = test_read_file(src, &n);
        if (!buf) {
            fprintf(stderr, "cannot read %s\n", src);
            exit(1);
        }
        spit(dst, buf, n);
        free(buf);
    }
    return dir;
}

static void remove_copy(const char *dir) {
    for (size_t i = 0; i < sizeof FILES / sizeof FILES[0]; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, FILES[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* Edits config.json: sets key to an integer. */
static void config_set_int(const char *dir, const char *key, int value) {
    char p[4096];
    snprintf(p, sizeof p, "%s/config.json", dir);
    char *txt = test_read_file(p, NULL);
    cJSON *root = cJSON_Parse(txt);
    cJSON_DeleteItemFromObject(root, key);
    cJSON_AddNumberToObject(root, key, value);
    char *out = cJSON_Print(root);
    spit(p, out, strlen(out));
    free(out);
    cJSON_Delete(root);
    free(txt);
}

/* Rewrites the safetensors header of dir/model.safetensors (data section unchanged): renames
 * tensor `name` to `rename` when given, else replaces its shape with shape[0..2). */
static void st_edit(const char *dir, const char *name, const char *rename, const int *shape) {
    char p[4096];
    size_t n;
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    unsigned char *buf = (unsigned char *)test_read_file(p, &n);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | buf[i];
    char *hdr = malloc(hlen + 1);
    memcpy(hdr, buf + 8, hlen);
    hdr[hlen] = '\0';
    cJSON *root = cJSON_Parse(hdr);
    cJSON *t = cJSON_DetachItemFromObject(root, name);
    if (!t) {
        fprintf(stderr, "fixture has no tensor %s\n", name);
        exit(1);
    }
    if (!rename) {
        cJSON_ReplaceItemInObject(t, "shape", cJSON_CreateIntArray(shape, 2));
        rename = name;
    }
    cJSON_AddItemToObject(root, rename, t);
    char *nh = cJSON_PrintUnformatted(root);
    size_t nl = strlen(nh), padded = (nl + 7) / 8 * 8; /* 8-byte alignment, as HF writes it */
    unsigned char *out = malloc(8 + padded + (n - 8 - hlen));
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    memcpy(out + 8, nh, nl);
    memset(out + 8 + nl, ' ', padded - nl);
    memcpy(out + 8 + padded, buf + 8 + hlen, n - 8 - hlen);
    spit(p, out, 8 + padded + (n - 8 - hlen));
    free(out);
    free(nh);
    cJSON_Delete(root);
    free(hdr);
    free(buf);
}

/* Loads dir and expects failure with `status` and every needle in the message. */
static void expect_load_fail(const char *what, const char *dir, tinfer_status status,
                             const char *needle1, const char *needle2) {
    tinfer_model *m = (tinfer_model *)&m; /* non-NULL: the call must reset it */
    tinfer_status rc = tinfer_model_load(dir, NULL, &m);
    const char *msg = tinfer_last_error();
    CHECK(rc == status, "%s: status %d (%s), want %d; message: %s", what, rc, tinfer_status_str(rc),
          status, msg);
    CHECK(m == NULL, "%s: *out not NULL after failure", what);
    CHECK(strstr(msg, needle1) != NULL, "%s: message does not name '%s': %s", what, needle1, msg);
    if (needle2)
        CHECK(strstr(msg, needle2) != NULL, "%s: message does not name '%s': %s", what, needle2,
              msg);
    printf("%-28s -> %s: %s\n", what, tinfer_status_str(rc), msg);
    if (rc == TINFER_OK) tinfer_model_free(m);
}

static void test_broken_dirs(void) {
    char dir[64], p[4096];

    fresh_copy(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    unlink(p);
    expect_load_fail("missing tokenizer.json", dir, TINFER_ERR_IO, "tokenizer.json", NULL);
    remove_copy(dir);

    fresh_copy(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    spit(p, "{\"model\": {\"type\": \"BPE\", \"vocab\": [1, 2", 40);
    expect_load_fail("malformed tokenizer.json", dir, TINFER_ERR_FORMAT, "tokenizer.json", NULL);
    remove_copy(dir);

    fresh_copy(dir, sizeof dir);
    st_edit(dir, "model.layers.1.mlp.up_proj.weight", "model.layers.1.mlp.up_proj.renamed", NULL);
    expect_load_fail("missing tensor", dir, TINFER_ERR_FORMAT, "model.layers.1.mlp.up_proj.weight",
                     "missing");
    remove_copy(dir);

    fresh_copy(dir, sizeof dir);
    const int swapped[2] = {64, 32}; /* k_proj is [kv_dim 32, hidden 64] */
    st_edit(dir, "model.layers.0.self_attn.k_proj.weight", NULL, swapped);
    expect_load_fail("wrong tensor shape", dir, TINFER_ERR_FORMAT,
                     "model.layers.0.self_attn.k_proj.weight", "32");
    remove_copy(dir);

    fresh_copy(dir, sizeof dir);
    config_set_int(dir, "vocab_size", 301); /* the embedding has 300 rows */
    expect_load_fail("config vocab != tensors", dir, TINFER_ERR_FORMAT, "model.embed_tokens.weight",
                     "301");
    remove_copy(dir);

    fresh_copy(dir, sizeof dir);
    config_set_int(dir, "num_key_value_heads", 3); /* 4 heads: not a multiple of 3 */
    expect_load_fail("indivisible heads", dir, TINFER_ERR_FORMAT, "num_key_value_heads",
                     "config.json");
    remove_copy(dir);

    expect_load_fail("unreadable directory", "/nonexistent/tinfer-model", TINFER_ERR_IO,
                     "/nonexistent/tinfer-model", NULL);
    snprintf(p, sizeof p, "%s/config.json", g_fixture); /* a file, not a directory */
    tinfer_model *m = NULL;
    CHECK(tinfer_model_load(p, NULL, &m) != TINFER_OK && !m, "a file as model dir loaded");
    CHECK(tinfer_model_load(NULL, NULL, &m) == TINFER_ERR_INVALID_ARG && !m, "NULL dir");

    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = TINFER_BACKEND_CUDA;
    tinfer_status rc = tinfer_model_load(g_fixture, &mp, &m);
    if (rc == TINFER_OK) { /* a GPU is here: the model runs there and says so */
        CHECK(tinfer_model_backend(m) == TINFER_BACKEND_CUDA, "CUDA asked, %d taken",
              (int)tinfer_model_backend(m));
        CHECK(strstr(tinfer_model_desc(m), "cuda") != NULL, "desc: %s", tinfer_model_desc(m));
        tinfer_model_free(m);
    } else { /* no GPU, or a build without CUDA: NO_DEVICE, saying why */
        CHECK(rc == TINFER_ERR_NO_DEVICE && !m, "CUDA backend without a GPU: %s",
              tinfer_status_str(rc));
        CHECK(strstr(tinfer_last_error(), "CUDA") != NULL ||
                  strstr(tinfer_last_error(), "GPU") != NULL,
              "message: %s", tinfer_last_error());
    }
    /* AUTO always loads: on the GPU where one is usable, else on the CPU */
    mp.backend = TINFER_BACKEND_AUTO;
    CHECK(tinfer_model_load(g_fixture, &mp, &m) == TINFER_OK && m, "AUTO: %s", tinfer_last_error());
    tinfer_model_free(m);
}

static tinfer_status decode(tinfer_context *c, int32_t n, const int32_t *tok, const int32_t *pos,
                            const int32_t *seq) {
    tinfer_batch b = {n, tok, pos, seq, NULL};
    return tinfer_decode(c, &b);
}

static void test_model_and_batches(const char *generate_bin) {
    tinfer_model *m = NULL;
    if (tinfer_model_load(g_fixture, NULL, &m) != TINFER_OK) {
        CHECK(0, "fixture load: %s", tinfer_last_error());
        return;
    }
    /* accessors against the fixture's config.json */
    CHECK(tinfer_model_n_vocab(m) == 300 && tinfer_model_n_layer(m) == 2 &&
              tinfer_model_n_embd(m) == 64 && tinfer_model_n_ctx_train(m) == 256,
          "accessors: vocab %d layers %d embd %d ctx %d", tinfer_model_n_vocab(m),
          tinfer_model_n_layer(m), tinfer_model_n_embd(m), tinfer_model_n_ctx_train(m));
    /* 2 x (300 x 64) embeddings/head + 2 layers x (q 64x64, k/v 32x64, o 64x64, 3 x 128x64
     * MLP, 2 norms of 64) + final norm 64 */
    const int64_t want_params =
        2 * 300 * 64 + 2 * (64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 128 * 64 + 2 * 64) + 64;
    CHECK(tinfer_model_n_params(m) == want_params, "n_params %lld, want %lld",
          (long long)tinfer_model_n_params(m), (long long)want_params);
    CHECK(tinfer_token_bos(m) == 1 && tinfer_token_eos_count(m) == 1 &&
              tinfer_token_eos(m, 0) == 3 && tinfer_token_is_eog(m, 3) &&
              !tinfer_token_is_eog(m, 1),
          "bos/eos: %d, %d x eos %d", tinfer_token_bos(m), tinfer_token_eos_count(m),
          tinfer_token_eos(m, 0));
    CHECK(tinfer_model_backend(m) == TINFER_BACKEND_CPU, "AUTO should resolve to the CPU");
    { /* the route of a step: the CPU's kernel names; sizes out of range: empty */
        char r[128];
        CHECK(strstr(tinfer_model_route_desc(m, 4, 4, r, sizeof r), "cpu ") == r, "route '%s'", r);
        CHECK(strstr(tinfer_model_route_desc(m, 1, 1, r, sizeof r), "gemv") != NULL, "route '%s'",
              r);
        CHECK(!tinfer_model_route_desc(m, 4, 5, r, sizeof r)[0] &&
                  !tinfer_model_route_desc(m, 4, 0, r, sizeof r)[0] &&
                  !tinfer_model_route_desc(m, 0, 0, r, sizeof r)[0] &&
                  !tinfer_model_route_desc(NULL, 1, 1, r, sizeof r)[0],
              "a route for bad sizes: '%s'", r);
    }

    tinfer_context_params cp = tinfer_context_default_params();
    cp.n_ctx = 8;
    cp.n_batch = 6;
    cp.n_seq_max = 2;
    tinfer_context *c = NULL;
    CHECK(tinfer_context_init(m, &cp, &c) == TINFER_OK, "context: %s", tinfer_last_error());
    if (!c) goto out;
    int32_t tok[16], pos[16], seq[16] = {0};
    for (int i = 0; i < 16; i++)
        tok[i] = 10 + i, pos[i] = i;

    /* more tokens than n_batch */
    CHECK(decode(c, 7, tok, pos, seq) == TINFER_ERR_INVALID_ARG, "n_tokens > n_batch");
    CHECK(strstr(tinfer_context_last_error(c), "n_batch is 6"), "msg: %s",
          tinfer_context_last_error(c));
    /* token id out of range */
    int32_t bad_tok[2] = {5, 300};
    CHECK(decode(c, 2, bad_tok, pos, seq) == TINFER_ERR_INVALID_ARG, "token 300 accepted");
    CHECK(strstr(tinfer_last_error(), "300"), "msg: %s", tinfer_last_error());
    /* seq id out of range */
    int32_t bad_seq[2] = {0, 2};
    CHECK(decode(c, 2, tok, pos, bad_seq) == TINFER_ERR_INVALID_ARG, "seq_id 2 accepted");
    CHECK(strstr(tinfer_last_error(), "seq_id 2"), "msg: %s", tinfer_last_error());
    /* positions must continue the cache */
    int32_t gap[2] = {0, 2};
    CHECK(decode(c, 2, tok, gap, seq) == TINFER_ERR_INVALID_ARG, "position gap accepted");
    CHECK(strstr(tinfer_last_error(), "position 2"), "msg: %s", tinfer_last_error());
    tinfer_batch nul = {2, tok, NULL, seq, NULL};
    CHECK(tinfer_decode(c, &nul) == TINFER_ERR_INVALID_ARG, "NULL pos accepted");
    CHECK(tinfer_decode(NULL, &nul) == TINFER_ERR_INVALID_ARG, "NULL context accepted");
    CHECK(tinfer_seq_len(c, 0) == 0, "a rejected batch changed the cache");

    /* fill sequence 0 to 6 tokens, then 3 more would need 9 > n_ctx 8 */
    CHECK(decode(c, 6, tok, pos, seq) == TINFER_OK, "decode: %s", tinfer_last_error());
    CHECK(tinfer_get_logits(c, 5) != NULL && tinfer_get_logits(c, 4) == NULL &&
              tinfer_get_logits(c, 6) == NULL,
          "logits: only the last entry by default");
    CHECK(decode(c, 3, tok, pos + 6, seq) == TINFER_ERR_CONTEXT_FULL, "context overflow");
    CHECK(strstr(tinfer_last_error(), "sequence 0 would need 9 tokens but n_ctx is 8"), "msg: %s",
          tinfer_last_error());
    CHECK(tinfer_seq_len(c, 0) == 6, "context-full batch changed the cache");
    /* the other sequence is independent; a prompt longer than the context never fits */
    int32_t seq1[6] = {1, 1, 1, 1, 1, 1};
    CHECK(decode(c, 6, tok, pos, seq1) == TINFER_OK, "seq 1: %s", tinfer_last_error());
    CHECK(tinfer_seq_clear(c, 0) == TINFER_OK && tinfer_seq_len(c, 0) == 0 &&
              tinfer_seq_len(c, 1) == 6,
          "seq_clear");
    CHECK(tinfer_seq_clear(c, 5) == TINFER_ERR_INVALID_ARG, "seq_clear out of range");

    /* logits modes: 1 gives the logits and their argmax, 2 the argmax alone, 0 nothing */
    {
        int8_t want[3] = {1, 2, 0};
        int32_t s0[3] = {0, 0, 0};
        tinfer_seq_clear(c, -1);
        tinfer_batch b = {3, tok, pos, s0, want};
        CHECK(tinfer_decode(c, &b) == TINFER_OK, "modes: %s", tinfer_last_error());
        const float *l0 = tinfer_get_logits(c, 0);
        int32_t best = 0, V = tinfer_model_n_vocab(m);
        for (int32_t i = 1; l0 && i < V; i++)
            if (l0[i] > l0[best]) best = i;
        CHECK(l0 && tinfer_get_argmax(c, 0) == best, "argmax of row 0: %d, logits say %d",
              (int)tinfer_get_argmax(c, 0), (int)best);
        CHECK(tinfer_get_logits(c, 1) == NULL && tinfer_get_argmax(c, 1) >= 0 &&
                  tinfer_get_argmax(c, 1) < V,
              "mode 2: argmax %d, logits %p", (int)tinfer_get_argmax(c, 1),
              (const void *)tinfer_get_logits(c, 1));
        CHECK(tinfer_get_logits(c, 2) == NULL && tinfer_get_argmax(c, 2) == -1, "mode 0");
        /* the same row asked for its logits gives the same argmax */
        int8_t all[3] = {1, 1, 1};
        tinfer_seq_clear(c, -1);
        tinfer_batch b2 = {3, tok, pos, s0, all};
        tinfer_token mode2 = tinfer_get_argmax(c, 1);
        CHECK(tinfer_decode(c, &b2) == TINFER_OK, "modes: %s", tinfer_last_error());
        const float *l1 = tinfer_get_logits(c, 1);
        best = 0;
        for (int32_t i = 1; l1 && i < V; i++)
            if (l1[i] > l1[best]) best = i;
        CHECK(l1 && mode2 == best, "mode-2 argmax %d, the logits' %d", (int)mode2, (int)best);
    }
    tinfer_context_free(c);

    cp.n_batch = 16;
    c = NULL;
    CHECK(tinfer_context_init(m, &cp, &c) == TINFER_OK, "context: %s", tinfer_last_error());
    CHECK(decode(c, 10, tok, pos, seq) == TINFER_ERR_CONTEXT_FULL, "10-token prompt, n_ctx 8");
    CHECK(strstr(tinfer_last_error(), "10") && strstr(tinfer_last_error(), "8"), "msg: %s",
          tinfer_last_error());
    tinfer_context_free(c);

    cp.n_seq_max = 0;
    c = (tinfer_context *)&c;
    CHECK(tinfer_context_init(m, &cp, &c) == TINFER_ERR_INVALID_ARG && !c, "n_seq_max 0");
    cp.n_seq_max = 1;
    for (int32_t micro = -1; micro <= 5; micro += 6) { /* 0 (auto) .. 4 only */
        cp.cuda_micro_batches = micro;
        c = (tinfer_context *)&c;
        CHECK(tinfer_context_init(m, &cp, &c) == TINFER_ERR_INVALID_ARG && !c &&
                  strstr(tinfer_last_error(), "cuda_micro_batches"),
              "cuda_micro_batches %d: %s", (int)micro, tinfer_last_error());
    }
    cp.cuda_micro_batches = 0;

    /* tinfer-generate: a prompt longer than --ctx is an `error: ...` line and exit status 1 */
    char cmd[8192], errpath[] = "/tmp/tinfer_api_gen_XXXXXX";
    int fd = mkstemp(errpath);
    if (fd >= 0) close(fd);
    snprintf(cmd, sizeof cmd,
             "'%s' -m '%s' --ctx 8 -n 4 -p 'Once upon a time there was a tiny model that wanted "
             "to speak.' >/dev/null 2>'%s'",
             generate_bin, g_fixture, errpath);
    int st = system(cmd);
    char *err = test_read_file(errpath, NULL);
    CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 1, "tinfer-generate exit status %d",
          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    CHECK(err && !strncmp(err, "error: ", 7) && strstr(err, " 8") && strchr(err, '\n') &&
              strchr(err, '\n')[1] == '\0',
          "tinfer-generate stderr: %s", err ? err : "(none)");
    if (err) printf("tinfer-generate, long prompt -> %s", err);
    free(err);
    /* bad arguments */
    snprintf(cmd, sizeof cmd, "'%s' -m '%s' -p hi --top-k abc >/dev/null 2>'%s'", generate_bin,
             g_fixture, errpath);
    st = system(cmd);
    err = test_read_file(errpath, NULL);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1 && err && strstr(err, "error: --top-k"),
          "tinfer-generate bad --top-k: %s", err ? err : "(none)");
    free(err);
    unlink(errpath);
out:
    tinfer_model_free(m);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s FIXTURE_DIR GENERATE_BIN\n", argv[0]);
        return 2;
    }
    g_fixture = argv[1];
    test_broken_dirs();
    test_model_and_batches(argv[2]);
    return test_finish();
}

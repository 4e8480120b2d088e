/*
 * test_convert_q8.c — tinfer-convert --weights q8_0 on a GGUF whose matrices are Q8_0 already:
 * the blocks must be copied as they are (no dequantize / requantize round trip).
 *
 * Usage: test_convert_q8 PATH/TO/tinfer-convert SCRATCH_DIR
 *
 * A tiny Llama GGUF (1 layer, hidden 32, 2 heads of 16, 1 KV head, FFN 32, vocab 4) with every
 * blk.* matrix in Q8_0 (one 32-element block per row, each with its own F16 scale and int8
 * values that differ from row to row and tensor to tensor), the embedding and norms in F32. After
 * conversion, model.safetensors must hold for each matrix X.weight I8 [N, 32] and
 * X.weight_scale F16 [N, 1] whose rows are the source blocks byte for byte: in the same order for
 * v / o / gate / up / down, and as a permutation of the source rows for q and k (the converter
 * undoes GGUF's Q/K row interleaving); config.json must say quant_method q8_0, group_size 32.
 */
#define _POSIX_C_SOURCE 200809L
#include "base/dtype.h"
#include "gguf_build.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct tdesc {
    const char *name, *hf; /* hf: the converted name (NULL: not a Q8_0 matrix) */
    uint64_t ne0, ne1;
} tdesc;

static const tdesc TENSORS[] = {
    {"token_embd.weight", NULL, 32, 4},
    {"output_norm.weight", NULL, 32, 0},
    {"blk.0.attn_norm.weight", NULL, 32, 0},
    {"blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 32, 32},
    {"blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight", 32, 16},
    {"blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight", 32, 16},
    {"blk.0.attn_output.weight", "model.layers.0.self_attn.o_proj.weight", 32, 32},
    {"blk.0.ffn_norm.weight", NULL, 32, 0},
    {"blk.0.ffn_gate.weight", "model.layers.0.mlp.gate_proj.weight", 32, 32},
    {"blk.0.ffn_up.weight", "model.layers.0.mlp.up_proj.weight", 32, 32},
    {"blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight", 32, 32},
};
enum { NT = sizeof TENSORS / sizeof TENSORS[0] };

/* Source block of row r of Q8_0 tensor t: F16 scale, then 32 int8 values. */
static void block(int t, int r, uint8_t out[34]) {
    const uint16_t d = tinfer_f32_to_f16(0.001f * (float)(t * 41 + r + 1));
    memcpy(out, &d, 2);
    for (int i = 0; i < 32; i++)
        out[2 + i] = (uint8_t)(int8_t)((r * 7 + i * 13 + t * 29) % 255 - 127);
}

static buf build(void) {
    buf b = {0};
    put(&b, "GGUF", 4);
    u32(&b, 3);
    u64(&b, NT);
    u64(&b, 11);
    kv_str(&b, "general.architecture", "llama");
    kv_tiny_llama(&b);
    str(&b, "tokenizer.ggml.tokens");
    u32(&b, 9);
    u32(&b, 8);
    u64(&b, 4);
    const char *toks[4] = {"<|endoftext|>", "a", "b", "ab"};
    for (int i = 0; i < 4; i++) str(&b, toks[i]);
    str(&b, "tokenizer.ggml.merges");
    u32(&b, 9);
    u32(&b, 8);
    u64(&b, 1);
    str(&b, "a b");
    uint64_t off = 0, offs[NT];
    for (int i = 0; i < NT; i++) {
        const tdesc *t = &TENSORS[i];
        str(&b, t->name);
        u32(&b, t->ne1 ? 2 : 1);
        u64(&b, t->ne0);
        if (t->ne1) u64(&b, t->ne1);
        u32(&b, t->hf ? 8 /* Q8_0 */ : 0 /* F32 */);
        u64(&b, off);
        offs[i] = off;
        const uint64_t rows = t->ne1 ? t->ne1 : 1;
        const uint64_t nbytes = t->hf ? rows * 34 : rows * t->ne0 * 4;
        off += (nbytes + ALIGN - 1) / ALIGN * ALIGN;
    }
    while (b.n % ALIGN) put(&b, "", 1);
    const size_t data0 = b.n;
    for (int i = 0; i < NT; i++) {
        const tdesc *t = &TENSORS[i];
        while (b.n < data0 + offs[i]) put(&b, "", 1);
        const uint64_t rows = t->ne1 ? t->ne1 : 1;
        for (uint64_t r = 0; r < rows; r++) {
            if (t->hf) {
                uint8_t blk[34];
                block(i, (int)r, blk);
                put(&b, blk, 34);
            } else {
                for (uint64_t k = 0; k < t->ne0; k++) {
                    const float v = 0.25f * (float)((r * 3 + k) % 7) + 0.5f;
                    put(&b, &v, 4);
                }
            }
        }
    }
    while (b.n < data0 + off) put(&b, "", 1);
    return b;
}

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL ");                                                                       \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p) p[len] = 0, *n = (size_t)len;
    return p;
}

/* The data of tensor name in a safetensors image (dtype and first dim checked), or NULL. */
static const uint8_t *st_tensor(const char *img, size_t n, const cJSON *hdr, const char *name,
                                const char *dtype, int64_t rows, int64_t cols) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(hdr, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || strcmp(dt->valuestring, dtype) || cJSON_GetArraySize(sh) != 2 ||
        cJSON_GetArrayItem(sh, 0)->valuedouble != (double)rows ||
        cJSON_GetArrayItem(sh, 1)->valuedouble != (double)cols || cJSON_GetArraySize(of) != 2) {
        printf("FAIL %s: missing, or not %s [%lld, %lld]\n", name, dtype, (long long)rows,
               (long long)cols);
        failures++;
        return NULL;
    }
    uint64_t hlen;
    memcpy(&hlen, img, 8);
    const size_t b = (size_t)cJSON_GetArrayItem(of, 0)->valuedouble;
    if (8 + hlen + b >= n) return NULL;
    return (const uint8_t *)img + 8 + hlen + b;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_convert_q8 TINFER_CONVERT SCRATCH_DIR\n");
        return 2;
    }
    char gguf[1024], out[1024], path[1100];
    snprintf(gguf, sizeof gguf, "%s/q8.gguf", argv[2]);
    snprintf(out, sizeof out, "%s/q8-out", argv[2]);
    if (system(NULL) == 0) return 2;
    char cmd[3400];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && rm -rf '%s'", argv[2], out);
    if (system(cmd) != 0) return 2;
    buf b = build();
    FILE *f = fopen(gguf, "wb");
    if (!f || fwrite(b.p, 1, b.n, f) != b.n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", gguf);
        return 2;
    }
    pid_t pid = fork();
    if (pid == 0) {
        execl(argv[1], argv[1], "--weights", "q8_0", gguf, out, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tinfer-convert --weights q8_0 failed");
    if (failures) return 1;

    size_t n = 0;
    snprintf(path, sizeof path, "%s/config.json", out);
    char *cfg = slurp(path, &n);
    cJSON *c = cfg ? cJSON_Parse(cfg) : NULL;
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(c, "quantization_config");
    const cJSON *qm = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(q, "group_size");
    CHECK(cJSON_IsString(qm) && !strcmp(qm->valuestring, "q8_0") && cJSON_IsNumber(gs) &&
              gs->valuedouble == 32,
          "config.json quantization_config is not {quant_method q8_0, group_size 32}");

    snprintf(path, sizeof path, "%s/model.safetensors", out);
    char *img = slurp(path, &n);
    uint64_t hlen = 0;
    if (img && n >= 8) memcpy(&hlen, img, 8);
    cJSON *hdr = img && 8 + hlen <= n ? cJSON_ParseWithLength(img + 8, (size_t)hlen) : NULL;
    CHECK(hdr != NULL, "model.safetensors unreadable");
    for (int i = 0; hdr && i < NT; i++) {
        const tdesc *t = &TENSORS[i];
        if (!t->hf) continue;
        char sname[200];
        snprintf(sname, sizeof sname, "%s_scale", t->hf);
        const int64_t rows = (int64_t)t->ne1;
        const uint8_t *qv = st_tensor(img, n, hdr, t->hf, "I8", rows, 32);
        const uint8_t *qd = st_tensor(img, n, hdr, sname, "F16", rows, 1);
        if (!qv || !qd) continue;
        const bool permuted = strstr(t->hf, "q_proj") || strstr(t->hf, "k_proj");
        bool used[64] = {false};
        for (int64_t r = 0; r < rows; r++) {
            int match = -1;
            for (int64_t s = permuted ? 0 : r; s < (permuted ? rows : r + 1); s++) {
                uint8_t src[34];
                block(i, (int)s, src);
                if (!memcmp(src, qd + 2 * r, 2) && !memcmp(src + 2, qv + 32 * r, 32) && !used[s]) {
                    match = (int)s;
                    break;
                }
            }
            CHECK(match >= 0, "%s row %lld: not a source block copied byte for byte%s", t->hf,
                  (long long)r, permuted ? " (any row)" : "");
            if (match >= 0) used[match] = true;
        }
    }
    printf("%s: %s\n", failures ? "FAIL" : "ok",
           "Q8_0 GGUF blocks copied unchanged by tinfer-convert --weights q8_0");
    cJSON_Delete(hdr);
    cJSON_Delete(c);
    free(img);
    free(cfg);
    free(b.p);
    return failures ? 1 : 0;
}

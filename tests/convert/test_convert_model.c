/*
 * test_convert_model.c — checks the converted SmolLM2-135M-Instruct directory.
 *
 * Usage: test_convert_model MODEL_DIR   (exit 77 when MODEL_DIR/config.json is absent)
 *
 * Expected values are SmolLM2-135M's published architecture: 30 layers, hidden
 * 576, 9 heads / 3 KV heads of 64, FFN 1536, vocab 49152, rope_theta 100000, eps 1e-5, tied
 * embeddings. model.safetensors must hold exactly the 272 HF names listed below (no lm_head), in
 * BF16, with the shapes those numbers imply and back-to-back offsets that end at the file size.
 */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *load_json(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    char *s = test_read_file(p, NULL);
    cJSON *j = s ? cJSON_Parse(s) : NULL;
    free(s);
    CHECK(j, "%s does not parse as JSON", p);
    return j;
}

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

#define L 30
#define D 576
#define FF 1536
#define V 49152
#define QD (9 * 64)
#define KVD (3 * 64)

static void check_config(const char *dir) {
    cJSON *c = load_json(dir, "config.json");
    if (!c) return;
    const struct { const char *k; double v; } want[] = {
        {"num_hidden_layers", L}, {"hidden_size", D}, {"num_attention_heads", 9},
        {"num_key_value_heads", 3}, {"head_dim", 64}, {"intermediate_size", FF},
        {"vocab_size", V}, {"rope_theta", 100000}, {"max_position_embeddings", 8192},
        {"bos_token_id", 1}, {"eos_token_id", 2},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK(num(c, want[i].k) == want[i].v, "config.json %s = %g, want %g", want[i].k,
              num(c, want[i].k), want[i].v);
    /* eps is stored as f32 1e-5 in the GGUF; the converter prints the shortest f32 form, which
     * must be exactly the double 1e-5 */
    CHECK(num(c, "rms_norm_eps") == 1e-5, "rms_norm_eps = %.17g", num(c, "rms_norm_eps"));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "tie_word_embeddings")),
          "tie_word_embeddings must be true");
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(c, "model_type");
    CHECK(cJSON_IsString(mt) && !strcmp(mt->valuestring, "llama"), "model_type must be llama");
    const cJSON *ha = cJSON_GetObjectItemCaseSensitive(c, "hidden_act");
    CHECK(cJSON_IsString(ha) && !strcmp(ha->valuestring, "silu"), "hidden_act must be silu");
    cJSON_Delete(c);
}

static void check_tokenizer(const char *dir) {
    cJSON *t = load_json(dir, "tokenizer.json");
    if (!t) return;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(t, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(m, "vocab");
    int n = cJSON_GetArraySize(vocab);
    CHECK(n == V, "tokenizer.json vocab has %d entries, want %d", n, V);
    const cJSON *e0 = vocab ? vocab->child : NULL;
    CHECK(e0 && !strcmp(e0->string, "<|endoftext|>") && e0->valuedouble == 0,
          "vocab must start with <|endoftext|> = 0");
    const cJSON *hello = cJSON_GetObjectItemCaseSensitive(vocab, "Hello");
    CHECK(cJSON_IsNumber(hello) && hello->valuedouble == 19556, "vocab['Hello'] != 19556");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(t, "added_tokens");
    CHECK(cJSON_GetArraySize(added) == 17, "added_tokens has %d entries, want the 17 specials",
          cJSON_GetArraySize(added));
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(m, "merges");
    CHECK(cJSON_GetArraySize(merges) > 0, "no merges");
    cJSON *tc = load_json(dir, "tokenizer_config.json");
    const cJSON *bos = cJSON_GetObjectItemCaseSensitive(tc, "bos_token");
    const cJSON *eos = cJSON_GetObjectItemCaseSensitive(tc, "eos_token");
    CHECK(cJSON_IsString(bos) && !strcmp(bos->valuestring, "<|im_start|>"), "bos_token");
    CHECK(cJSON_IsString(eos) && !strcmp(eos->valuestring, "<|im_end|>"), "eos_token");
    CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(tc, "chat_template")), "chat_template");
    cJSON_Delete(tc);
    cJSON_Delete(t);
}

static void check_safetensors(const char *dir) {
    char p[4096];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    FILE *f = fopen(p, "rb");
    CHECK(f, "cannot open %s", p);
    if (!f) return;
    uint64_t hl = 0;
    fseek(f, 0, SEEK_END);
    uint64_t fsize = (uint64_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    CHECK(fread(&hl, 8, 1, f) == 1 && hl % 8 == 0 && hl < fsize, "bad header length %llu",
          (unsigned long long)hl);
    char *h = malloc(hl + 1);
    CHECK(h && fread(h, 1, hl, f) == hl, "short header");
    fclose(f);
    h[hl] = 0;
    cJSON *j = cJSON_Parse(h);
    free(h);
    CHECK(j, "safetensors header is not JSON");
    if (!j) return;

    /* the 272 expected names and shapes, built from the architecture */
    struct { char name[96]; int64_t s0, s1; } want[2 + 9 * L];
    int nw = 0;
    snprintf(want[nw].name, 96, "model.embed_tokens.weight"), want[nw].s0 = V, want[nw++].s1 = D;
    snprintf(want[nw].name, 96, "model.norm.weight"), want[nw].s0 = D, want[nw++].s1 = -1;
    const struct { const char *n; int64_t s0, s1; } per[] = {
        {"input_layernorm", D, -1}, {"post_attention_layernorm", D, -1},
        {"self_attn.q_proj", QD, D}, {"self_attn.k_proj", KVD, D}, {"self_attn.v_proj", KVD, D},
        {"self_attn.o_proj", D, QD}, {"mlp.gate_proj", FF, D}, {"mlp.up_proj", FF, D},
        {"mlp.down_proj", D, FF},
    };
    for (int l = 0; l < L; l++)
        for (int k = 0; k < 9; k++) {
            snprintf(want[nw].name, 96, "model.layers.%d.%s.weight", l, per[k].n);
            want[nw].s0 = per[k].s0;
            want[nw++].s1 = per[k].s1;
        }
    CHECK(nw == 272, "expected-name table has %d entries", nw);
    int n_entries = cJSON_GetArraySize(j) - 1; /* minus __metadata__ */
    CHECK(n_entries == 272, "safetensors holds %d tensors, want 272", n_entries);
    CHECK(!cJSON_GetObjectItemCaseSensitive(j, "lm_head.weight"), "tied model has lm_head.weight");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(j, "__metadata__");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(meta, "format");
    CHECK(cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "pt"), "__metadata__.format != pt");
    for (int i = 0; i < nw; i++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, want[i].name);
        CHECK(e, "missing tensor %s", want[i].name);
        if (!e) continue;
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
        int nd = want[i].s1 < 0 ? 1 : 2;
        bool shape_ok = cJSON_GetArraySize(sh) == nd &&
                        cJSON_GetArrayItem(sh, 0)->valuedouble == (double)want[i].s0 &&
                        (nd == 1 || cJSON_GetArrayItem(sh, 1)->valuedouble == (double)want[i].s1);
        CHECK(shape_ok, "%s has the wrong shape", want[i].name);
        CHECK(cJSON_IsString(dt) && !strcmp(dt->valuestring, "BF16"), "%s dtype not BF16",
              want[i].name);
    }
    /* offsets: sorted by name, contiguous from 0, ending at the end of the file */
    uint64_t expect = 0;
    const char *prev = "";
    for (const cJSON *e = j->child; e; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) continue;
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
        double b = cJSON_GetArrayItem(off, 0) ? cJSON_GetArrayItem(off, 0)->valuedouble : -1;
        double en = cJSON_GetArrayItem(off, 1) ? cJSON_GetArrayItem(off, 1)->valuedouble : -1;
        CHECK(b == (double)expect && en > b, "%s data_offsets [%g, %g], want start %llu",
              e->string, b, en, (unsigned long long)expect);
        CHECK(strcmp(prev, e->string) < 0, "tensors not sorted by name at %s", e->string);
        prev = e->string;
        expect = (uint64_t)en;
    }
    CHECK(8 + hl + expect == fsize, "data ends at %llu, file is %llu bytes",
          (unsigned long long)(8 + hl + expect), (unsigned long long)fsize);
    cJSON_Delete(j);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
        return 2;
    }
    char p[4096];
    snprintf(p, sizeof p, "%s/config.json", argv[1]);
    FILE *f = fopen(p, "rb");
    if (!f) {
        printf("skip: %s absent (run scripts/get-model.sh)\n", p);
        return 77;
    }
    fclose(f);
    check_config(argv[1]);
    check_tokenizer(argv[1]);
    check_safetensors(argv[1]);
    if (test_failures) {
        fprintf(stderr, "%d check(s) failed\n", test_failures);
        return 1;
    }
    printf("test_convert_model: %s ok\n", argv[1]);
    return 0;
}

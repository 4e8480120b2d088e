/*
 * test_tokenizer_model.c — tinfer's tokenizer against HF `tokenizers` on the converted
 * SmolLM2-135M-Instruct tokenizer.json.
 *
 * usage: test_tokenizer_model MODEL_DIR FIXTURE_JSON   (env TINFER_SMOLLM2_DIR overrides MODEL_DIR)
 * Exit 77 (skipped) when MODEL_DIR/tokenizer.json is absent (model not converted yet).
 *
 * FIXTURE_JSON comes from scripts/make-tokenizer-fixtures.py (HF tokenizers output). Per case:
 * ids with and without special-token parsing must equal HF's exactly; decode must equal HF
 * decode (with and without skip_special); decode(encode(x)) == x for valid UTF-8; streaming
 * decode, token by token, must equal the whole decode; short buffers must give
 * TINFER_ERR_BUFFER_TOO_SMALL with the needed size and leave the buffer untouched. Chat
 * templates must equal the jinja2 rendering in the fixture and TOKENIZER_NOTES §6 literally.
 * Prints the time to tokenize the 20 KB case and a 100 KB text.
 */
#define _POSIX_C_SOURCE 199309L
#include "test_util.h"
#include "tokenizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned char *unhex(const char *h, size_t *n) {
    size_t l = strlen(h) / 2;
    unsigned char *o = malloc(l + 1);
    for (size_t i = 0; i < l; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        o[i] = (unsigned char)v;
    }
    *n = l;
    return o;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Encodes and compares with the fixture's id list; also checks the short-buffer contract. */
static void check_encode(const tinfer_tokenizer *tok, const char *name, const unsigned char *in,
                         size_t n, uint32_t flags, const cJSON *want) {
    tinfer_err err = {{0}};
    int32_t nw = cJSON_GetArraySize(want);
    int32_t cap = nw + 8, got = -1;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)cap);
    tinfer_status st = tinfer_tokenizer_encode(tok, (const char *)in, n, flags, ids, cap, &got, &err);
    CHECK(st == TINFER_OK, "%s flags %u: encode: %s", name, flags, err.msg);
    CHECK(got == nw, "%s flags %u: %d tokens, HF %d", name, flags, got, nw);
    for (int32_t i = 0; st == TINFER_OK && i < got && i < nw; i++) {
        int32_t w = (int32_t)cJSON_GetArrayItem(want, i)->valuedouble;
        if (ids[i] != w) {
            CHECK(0, "%s flags %u: token %d is %d, HF %d", name, flags, i, ids[i], w);
            break;
        }
    }
    if (nw > 0) { /* one slot short: BUFFER_TOO_SMALL, needed count, nothing written */
        for (int32_t i = 0; i < cap; i++) ids[i] = -7;
        int32_t need = -1;
        st = tinfer_tokenizer_encode(tok, (const char *)in, n, flags, ids, nw - 1, &need, &err);
        CHECK(st == TINFER_ERR_BUFFER_TOO_SMALL && need == nw,
              "%s: cap %d: status %d need %d (want %d)", name, nw - 1, st, need, nw);
        bool untouched = true;
        for (int32_t i = 0; i < cap; i++) untouched &= ids[i] == -7;
        CHECK(untouched, "%s: encode wrote into a too-small buffer", name);
    }
    free(ids);
}

static int32_t *ids_of(const cJSON *arr, int32_t *n) {
    *n = cJSON_GetArraySize(arr);
    int32_t *ids = malloc(sizeof(int32_t) * ((size_t)*n + 1));
    for (int32_t i = 0; i < *n; i++) ids[i] = (int32_t)cJSON_GetArrayItem(arr, i)->valuedouble;
    return ids;
}

static void check_decode(const tinfer_tokenizer *tok, const char *name, const int32_t *ids,
                         int32_t n, uint32_t flags, const unsigned char *want, size_t wn) {
    tinfer_err err = {{0}};
    size_t need = 0;
    tinfer_status st = tinfer_tokenizer_decode(tok, ids, n, flags, NULL, 0, &need, &err);
    CHECK(need == wn && (wn == 0 ? st == TINFER_OK : st == TINFER_ERR_BUFFER_TOO_SMALL),
          "%s: decode size query: status %d need %zu want %zu", name, st, need, wn);
    char *buf = malloc(wn + 16);
    memset(buf, 'Z', wn + 16);
    if (wn > 0) {
        st = tinfer_tokenizer_decode(tok, ids, n, flags, buf, wn - 1, &need, &err);
        CHECK(st == TINFER_ERR_BUFFER_TOO_SMALL && need == wn, "%s: decode cap-1: %d", name, st);
        bool untouched = true;
        for (size_t i = 0; i < wn + 16; i++) untouched &= buf[i] == 'Z';
        CHECK(untouched, "%s: decode wrote into a too-small buffer", name);
    }
    st = tinfer_tokenizer_decode(tok, ids, n, flags, buf, wn + 16, &need, &err);
    CHECK(st == TINFER_OK && need == wn && memcmp(buf, want, wn) == 0,
          "%s flags %u: decode differs from HF (%zu vs %zu bytes): %s", name, flags, need, wn,
          err.msg);

    /* streaming: every token pushed with a buffer first too small, then large enough */
    char *acc = malloc(wn + 16);
    size_t an = 0;
    tinfer_detok_stream ds;
    memset(&ds, 0, sizeof ds);
    for (int32_t i = 0; i < n; i++) {
        char out[256];
        size_t k = 0;
        tinfer_detok_stream before = ds;
        st = tinfer_tokenizer_stream_push(tok, &ds, ids[i], flags, out, 0, &k, &err);
        if (k > 0) { /* too small: refused, state unchanged, retried with room */
            CHECK(st == TINFER_ERR_BUFFER_TOO_SMALL, "%s: stream cap 0 gave %d", name, st);
            CHECK(memcmp(&before, &ds, sizeof ds) == 0, "%s: stream state changed on error", name);
            st = tinfer_tokenizer_stream_push(tok, &ds, ids[i], flags, out, sizeof out, &k, &err);
        }
        CHECK(st == TINFER_OK, "%s: stream push: %s", name, err.msg);
        if (st || an + k > wn + 16) break;
        CHECK(ds.n_pending <= 3, "%s: stream holds %d bytes", name, ds.n_pending);
        memcpy(acc + an, out, k);
        an += k;
    }
    char out[16];
    size_t k = 0;
    st = tinfer_detok_stream_flush(&ds, out, sizeof out, &k);
    CHECK(st == TINFER_OK && ds.n_pending == 0, "%s: flush: %d", name, st);
    if (an + k <= wn + 16) {
        memcpy(acc + an, out, k);
        an += k;
    }
    CHECK(an == wn && memcmp(acc, want, wn) == 0, "%s flags %u: streaming decode differs (%zu vs %zu)",
          name, flags, an, wn);
    free(acc);
    free(buf);
}

static void check_chat(const tinfer_tokenizer *tok, const char *name, const tinfer_chat_message *m,
                       int32_t n, bool gen, const char *want) {
    tinfer_err err = {{0}};
    size_t need = 0, wn = strlen(want);
    char buf[4096];
    tinfer_status st = tinfer_chat_render(tinfer_tokenizer_chat_template(tok),
                                          tinfer_tokenizer_bos_text(tok),
                                          tinfer_tokenizer_eos_text(tok), m, n, gen, buf, 4,
                                          &need, &err);
    CHECK(st == TINFER_ERR_BUFFER_TOO_SMALL && need == wn, "chat %s: cap 4: %d need %zu", name,
          st, need);
    st = tinfer_chat_render(tinfer_tokenizer_chat_template(tok), tinfer_tokenizer_bos_text(tok),
                            tinfer_tokenizer_eos_text(tok), m, n, gen, buf, sizeof buf, &need,
                            &err);
    CHECK(st == TINFER_OK && need == wn && memcmp(buf, want, wn) == 0,
          "chat %s: got '%.*s' want '%s' (%s)", name, (int)need, buf, want, err.msg);
}

int main(int argc, char **argv) {
    const char *dir = getenv("TINFER_SMOLLM2_DIR");
    if (!dir || !*dir) dir = argc > 1 ? argv[1] : NULL;
    const char *fix = argc > 2 ? argv[2] : NULL;
    if (!dir || !fix) {
        fprintf(stderr, "usage: %s MODEL_DIR FIXTURE_JSON\n", argv[0]);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *probe = fopen(path, "rb");
    if (!probe) {
        printf("skip: %s not found (convert the model with scripts/get-model.sh)\n", path);
        return 77;
    }
    fclose(probe);
    tinfer_err err = {{0}};
    tinfer_tokenizer *tok = NULL;
    double t0 = now_ms();
    if (tinfer_tokenizer_load(dir, &tok, &err) != TINFER_OK) {
        fprintf(stderr, "FAIL load: %s\n", err.msg);
        return 1;
    }
    printf("load %s: %.1f ms, %d ids\n", dir, now_ms() - t0, tinfer_tokenizer_n_vocab(tok));
    size_t flen;
    char *fj = test_read_file(fix, &flen);
    cJSON *root = fj ? cJSON_ParseWithLength(fj, flen) : NULL;
    if (!root) {
        fprintf(stderr, "FAIL: cannot read fixture %s\n", fix);
        return 1;
    }
    const cJSON *c;
    int32_t n_cases = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        size_t n, dn, sn;
        unsigned char *in = unhex(cJSON_GetObjectItem(c, "input_hex")->valuestring, &n);
        unsigned char *dec = unhex(cJSON_GetObjectItem(c, "decode_hex")->valuestring, &dn);
        unsigned char *dsk = unhex(cJSON_GetObjectItem(c, "decode_skip_hex")->valuestring, &sn);
        const cJSON *ids_sp = cJSON_GetObjectItem(c, "ids_special");
        check_encode(tok, name, in, n, TINFER_TOKENIZE_PARSE_SPECIAL, ids_sp);
        check_encode(tok, name, in, n, 0, cJSON_GetObjectItem(c, "ids_plain"));
        /* SmolLM2's post-processor is ByteLevel: ADD_SPECIAL adds nothing (no BOS) */
        check_encode(tok, name, in, n, TINFER_TOKENIZE_PARSE_SPECIAL | TINFER_TOKENIZE_ADD_SPECIAL,
                     ids_sp);
        int32_t ni;
        int32_t *ids = ids_of(ids_sp, &ni);
        check_decode(tok, name, ids, ni, 0, dec, dn);
        check_decode(tok, name, ids, ni, TINFER_DETOKENIZE_SKIP_SPECIAL, dsk, sn);
        if (cJSON_IsTrue(cJSON_GetObjectItem(c, "valid_utf8")))
            CHECK(dn == n && memcmp(dec, in, n) == 0, "%s: decode(encode(x)) != x", name);
        if (strcmp(name, "long_20k") == 0) {
            int32_t *buf = malloc(sizeof(int32_t) * (n + 1)), got;
            double a = now_ms();
            tinfer_tokenizer_encode(tok, (const char *)in, n, TINFER_TOKENIZE_PARSE_SPECIAL, buf,
                                    (int32_t)n + 1, &got, &err);
            double ms = now_ms() - a;
            printf("encode long_20k: %zu bytes -> %d tokens in %.2f ms\n", n, got, ms);
            /* 100 KB: five copies */
            char *big = malloc(5 * n);
            for (int r = 0; r < 5; r++) memcpy(big + r * n, in, n);
            int32_t *bb = malloc(sizeof(int32_t) * (5 * n + 1));
            a = now_ms();
            tinfer_status st = tinfer_tokenizer_encode(tok, big, 5 * n, TINFER_TOKENIZE_PARSE_SPECIAL,
                                                       bb, (int32_t)(5 * n + 1), &got, &err);
            ms = now_ms() - a;
            printf("encode 5 x long_20k: %zu bytes -> %d tokens in %.2f ms\n", 5 * n, got, ms);
            /* The brief's budget is "well under a second" for 100 KB; the measured time is
             * ~100x below it, so exceeding 1 s means a complexity bug, not a slow machine. */
            CHECK(st == TINFER_OK && ms < 1000.0, "100 KB encode took %.1f ms", ms);
            free(big);
            free(bb);
            free(buf);
        }
        free(ids);
        free(in);
        free(dec);
        free(dsk);
        n_cases++;
    }
    int32_t n_chats = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "chats")) {
        const cJSON *ms = cJSON_GetObjectItem(c, "messages");
        tinfer_chat_message m[16];
        int32_t n = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, ms) {
            if (n == 16) break;
            m[n].role = cJSON_GetObjectItem(x, "role")->valuestring;
            m[n].content = cJSON_GetObjectItem(x, "content")->valuestring;
            n++;
        }
        check_chat(tok, cJSON_GetObjectItem(c, "name")->valuestring, m, n,
                   cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt")),
                   cJSON_GetObjectItem(c, "expected")->valuestring);
        n_chats++;
    }
    CHECK(n_chats >= 4, "fixture has %d chats (tokenizer_config.json missing?)", n_chats);
    /* TOKENIZER_NOTES §6, verbatim */
    const tinfer_chat_message sua[] = {{"system", "S"}, {"user", "U"}, {"assistant", "A"}};
    check_chat(tok, "notes-6", sua, 3, true,
               "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
               "<|im_start|>assistant\nA<|im_end|>\n<|im_start|>assistant\n");
    const tinfer_chat_message u[] = {{"user", "U"}};
    check_chat(tok, "notes-6-default-system", u, 1, false,
               "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
               "Hugging Face<|im_end|>\n<|im_start|>user\nU<|im_end|>\n");
    /* token ids the notes quote from third parties (§8), confirmed by HF on the fixture */
    int32_t ids[16], n = 0;
    tinfer_tokenizer_encode(tok, "Hello world! 123", 16, 0, ids, 16, &n, &err);
    const int32_t hw[] = {19556, 905, 17, 216, 33, 34, 35};
    CHECK(n == 7 && memcmp(ids, hw, sizeof hw) == 0, "'Hello world! 123' ids differ");
    CHECK(tinfer_tokenizer_find(tok, "<|im_start|>") == 1 && tinfer_tokenizer_find(tok, "<|im_end|>") == 2,
          "special ids");
    cJSON_Delete(root);
    free(fj);
    tinfer_tokenizer_free(tok);
    printf("%d cases, %d chats: %s\n", n_cases, n_chats, test_failures ? "FAILED" : "ok");
    return test_failures ? 1 : 0;
}

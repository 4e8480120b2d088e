/*
 * test_tokenizer_unit.c — tokenizer unit tests that need no model.
 *
 * usage: test_tokenizer_unit TINY_TOKENIZER_JSON
 * - tests/tokenizer/tiny_tokenizer.json (18 tokens, 6 merges, Digits + ByteLevel, BOS template):
 *   merges applied by rank, not left to right; added tokens leftmost-longest, rstrip, special
 *   vs plain; BOS from TemplateProcessing; decode with and without skip_special. Expected ids
 *   are worked out by hand from the merge ranks (and agree with HF tokenizers 0.23).
 * - Split behaviors on "the-final--countdown" (TOKENIZER_NOTES §2), observed through a BPE with
 *   ignore_merges whose vocab holds each possible piece whole.
 * - Bad tokenizer.json files: each gives its status and a message naming the file and key.
 * - UTF-8 replacement (maximal subparts, as Python errors="replace"), streaming hold.
 * - Chat templates: Llama-3, Llama-2, Zephyr and a Qwen-style ChatML default system prompt,
 *   expected bytes rendered by jinja2 (trim_blocks, lstrip_blocks) from the real templates.
 */
#include "test_util.h"
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void expect_ids(const tinfer_tokenizer *t, const char *text, uint32_t flags,
                       const int32_t *want, int32_t nw) {
    int32_t ids[64], n = -1;
    tinfer_err err = {{0}};
    tinfer_status st = tinfer_tokenizer_encode(t, text, strlen(text), flags, ids, 64, &n, &err);
    bool same = st == TINFER_OK && n == nw && memcmp(ids, want, sizeof(int32_t) * (size_t)nw) == 0;
    if (!same) {
        fprintf(stderr, "  got:");
        for (int32_t i = 0; i < n && i < 64; i++) fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    CHECK(same, "'%s' flags %u: status %d (%s), %d ids", text, flags, st, err.msg, n);
}
#define IDS(...) ((const int32_t[]){__VA_ARGS__}), (int32_t)(sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

static void expect_load_error(const char *json, tinfer_status want, const char *needle1,
                              const char *needle2) {
    tinfer_tokenizer *t = NULL;
    tinfer_err err = {{0}};
    tinfer_status st = tinfer_tokenizer_load_json(json, strlen(json), "bad/tokenizer.json", &t, &err);
    CHECK(st == want && t == NULL, "load: status %d, want %d (%s)", st, want, err.msg);
    CHECK(strstr(err.msg, "bad/tokenizer.json") && strstr(err.msg, needle1) &&
              (!needle2 || strstr(err.msg, needle2)),
          "message '%s' should name the file, '%s'%s%s", err.msg, needle1, needle2 ? " and " : "",
          needle2 ? needle2 : "");
    if (st == TINFER_OK) tinfer_tokenizer_free(t);
}

static void test_tiny(const char *path) {
    /* tinfer_tokenizer_load wants a directory holding tokenizer.json: load_json on the file */
    FILE *f = fopen(path, "rb");
    if (!f) {
        CHECK(0, "cannot open %s", path);
        return;
    }
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    tinfer_tokenizer *t = NULL;
    tinfer_err err = {{0}};
    if (tinfer_tokenizer_load_json(buf, n, path, &t, &err) != TINFER_OK) {
        CHECK(0, "load tiny: %s", err.msg);
        return;
    }
    const uint32_t PS = TINFER_TOKENIZE_PARSE_SPECIAL, AS = TINFER_TOKENIZE_ADD_SPECIAL;
    CHECK(tinfer_tokenizer_n_vocab(t) == 20, "n_vocab %d", tinfer_tokenizer_n_vocab(t));
    /* ranks: b c (0) < a b (1) < ab c (2) < Ġ a (3) < c d (4) < Ġa b (5).
     * "abcd": bc first (rank 0), then nothing applies: a|bc|d. Left-to-right would give ab|cd. */
    expect_ids(t, "abcd", PS, IDS(0, 6, 3));
    expect_ids(t, "abc", PS, IDS(0, 6));
    expect_ids(t, "abd", PS, IDS(5, 3));
    expect_ids(t, "cd", PS, IDS(9));
    expect_ids(t, " a", PS, IDS(8));
    /* " ab": a b (1) beats Ġ a (3), leaving Ġ|ab; Ġab (14) is never reached */
    expect_ids(t, " ab", PS, IDS(4, 5));
    expect_ids(t, "12", PS, IDS(12, 13)); /* Digits individual_digits */
    /* special token matched only with PARSE_SPECIAL; otherwise plain text < s > */
    expect_ids(t, "a<s>b", PS, IDS(0, 10, 1));
    expect_ids(t, "a<s>b", 0, IDS(0, 15, 17, 16, 1));
    /* non-special added tokens always match; leftmost-longest: ab!! over ab! */
    expect_ids(t, "cab!abd", 0, IDS(2, 18, 5, 3));
    expect_ids(t, "cab!!abd", 0, IDS(2, 19, 5, 3));
    /* rstrip: <|x|> swallows the following spaces */
    expect_ids(t, "a<|x|>  b", 0, IDS(0, 11, 1));
    /* TemplateProcessing: <s> (10) before the sequence */
    expect_ids(t, "abd", PS | AS, IDS(10, 5, 3));
    expect_ids(t, "", PS | AS, IDS(10));
    /* chars absent from the vocab are dropped (no unk, no byte_fallback); invalid UTF-8 first
     * becomes U+FFFD, whose bytes are not in this vocab either */
    expect_ids(t, "a\xc3\xa9", PS, IDS(0));
    expect_ids(t, "a\xff\xfe", PS, IDS(0));

    int32_t ids[] = {4, 0, 10, 11, 999, -1};
    char out[64];
    size_t k = 0;
    tinfer_status st = tinfer_tokenizer_decode(t, ids, 6, 0, out, sizeof out, &k, &err);
    CHECK(st == TINFER_OK && k == 10 && memcmp(out, " a<s><|x|>", 10) == 0,
          "decode: %d '%.*s'", st, (int)k, out);
    st = tinfer_tokenizer_decode(t, ids, 6, TINFER_DETOKENIZE_SKIP_SPECIAL, out, sizeof out, &k, &err);
    CHECK(st == TINFER_OK && k == 7 && memcmp(out, " a<|x|>", 7) == 0, "decode skip: '%.*s'",
          (int)k, out);
    st = tinfer_tokenizer_decode(t, ids, 6, 0, out, 9, &k, &err);
    CHECK(st == TINFER_ERR_BUFFER_TOO_SMALL && k == 10, "decode cap 9: %d %zu", st, k);
    size_t pl;
    bool sp;
    const char *p = tinfer_tokenizer_piece(t, 4, &pl, &sp);
    CHECK(p && pl == 1 && p[0] == ' ' && !sp, "piece(4) should be a space");
    p = tinfer_tokenizer_piece(t, 10, &pl, &sp);
    CHECK(p && pl == 3 && sp, "piece(10) should be special <s>");
    CHECK(!tinfer_tokenizer_piece(t, 20, &pl, &sp) && !tinfer_tokenizer_piece(t, -1, &pl, &sp),
          "piece out of range");
    CHECK(tinfer_tokenizer_find(t, "ab!!") == 19 && tinfer_tokenizer_find(t, "\xc4\xa0" "a") == 8 &&
              tinfer_tokenizer_find(t, "zz") == -1,
          "find");
    int32_t few[2], nf = 0;
    st = tinfer_tokenizer_encode(t, "abcd", 4, 0, few, 2, &nf, &err);
    CHECK(st == TINFER_ERR_BUFFER_TOO_SMALL && nf == 3, "encode cap 2: %d %d", st, nf);
    tinfer_tokenizer_free(t);
}

/* Split "-" on "the-final--countdown" with each behavior. */
static void test_split(const char *behavior, bool invert, const char *const *want, int32_t nw) {
    char json[2048];
    snprintf(json, sizeof json,
             "{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \"-\"}, "
             "\"behavior\": \"%s\", \"invert\": %s},"
             "\"model\": {\"type\": \"BPE\", \"ignore_merges\": true, \"merges\": [], \"vocab\": {"
             "\"the\": 0, \"final\": 1, \"countdown\": 2, \"-\": 3, \"the-\": 4, \"final-\": 5,"
             "\"-final\": 6, \"-countdown\": 7, \"--\": 8}}}",
             behavior, invert ? "true" : "false");
    tinfer_tokenizer *t = NULL;
    tinfer_err err = {{0}};
    if (tinfer_tokenizer_load_json(json, strlen(json), "split.json", &t, &err) != TINFER_OK) {
        CHECK(0, "split %s: %s", behavior, err.msg);
        return;
    }
    int32_t ids[32], n = 0;
    const char *text = "the-final--countdown";
    tinfer_tokenizer_encode(t, text, strlen(text), 0, ids, 32, &n, &err);
    bool ok = n == nw;
    for (int32_t i = 0; ok && i < n; i++) {
        size_t l;
        const char *p = tinfer_tokenizer_piece(t, ids[i], &l, NULL);
        ok = p && l == strlen(want[i]) && memcmp(p, want[i], l) == 0;
    }
    CHECK(ok, "Split %s invert=%d: %d pieces (want %d)", behavior, invert, n, nw);
    tinfer_tokenizer_free(t);
}

static void test_bad_files(void) {
    tinfer_tokenizer *t = NULL;
    tinfer_err err = {{0}};
    tinfer_status st = tinfer_tokenizer_load("/nonexistent/tinfer-model", &t, &err);
    CHECK(st == TINFER_ERR_IO && !t && strstr(err.msg, "/nonexistent/tinfer-model/tokenizer.json"),
          "missing file: %d '%s'", st, err.msg);
    expect_load_error("{\"model\": {\"vocab\": {\"a\": 0}", TINFER_ERR_FORMAT, "not valid JSON",
                      NULL);
    expect_load_error("[1, 2]", TINFER_ERR_FORMAT, "not a JSON object", NULL);
    expect_load_error("{\"model\": {\"type\": \"BPE\", \"merges\": []}}", TINFER_ERR_FORMAT,
                      "model.vocab", NULL);
    expect_load_error("{\"added_tokens\": []}", TINFER_ERR_FORMAT, "model", NULL);
    expect_load_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
                      " \"merges\": [\"a b\", \"a q\"]}}",
                      TINFER_ERR_FORMAT, "model.merges[1]", "\"q\"");
    expect_load_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1},"
                      " \"merges\": [\"a b\"]}}",
                      TINFER_ERR_FORMAT, "model.merges[0]", "\"ab\"");
    expect_load_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
                      " \"merges\": [\"a b c\"]}}",
                      TINFER_ERR_FORMAT, "model.merges[0]", NULL);
    expect_load_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -3}, \"merges\": []}}",
                      TINFER_ERR_FORMAT, "model.vocab[\"a\"]", NULL);
    expect_load_error("{\"pre_tokenizer\": {\"type\": \"Whitespace\"},"
                      " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
                      TINFER_ERR_UNSUPPORTED, "pre_tokenizer type 'Whitespace' is not supported",
                      NULL);
    expect_load_error("{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
                      "{\"type\": \"Metaspace\"}]},"
                      " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
                      TINFER_ERR_UNSUPPORTED, "pre_tokenizer.pretokenizers[0] type 'Metaspace'",
                      NULL);
    expect_load_error("{\"normalizer\": {\"type\": \"Lowercase\"},"
                      " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
                      TINFER_ERR_UNSUPPORTED, "normalizer type 'Lowercase'", NULL);
    expect_load_error("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}}",
                      TINFER_ERR_UNSUPPORTED, "model type 'WordPiece'", NULL);
    expect_load_error("{\"decoder\": {\"type\": \"Metaspace\"},"
                      " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
                      TINFER_ERR_UNSUPPORTED, "decoder type 'Metaspace'", NULL);
    expect_load_error("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"},"
                      " \"behavior\": \"Isolated\"},"
                      " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
                      TINFER_ERR_UNSUPPORTED, "pre_tokenizer.pattern", "does not compile");
    expect_load_error("{\"added_tokens\": [{\"id\": 5, \"content\": \"a\"}],"
                      " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
                      TINFER_ERR_FORMAT, "added_tokens[0]", "model.vocab says 0");

    /* NFC: loads; text NFC leaves alone encodes, text NFC would change is refused */
    const char *nfc = "{\"normalizer\": {\"type\": \"NFC\"}, \"model\": {\"type\": \"BPE\","
                      " \"vocab\": {\"a\": 0, \"\\u00e9\": 1}, \"merges\": []}}";
    st = tinfer_tokenizer_load_json(nfc, strlen(nfc), "nfc.json", &t, &err);
    CHECK(st == TINFER_OK, "NFC load: %s", err.msg);
    if (st == TINFER_OK) {
        int32_t ids[8], n;
        st = tinfer_tokenizer_encode(t, "a\xc3\xa9", 3, 0, ids, 8, &n, &err);
        CHECK(st == TINFER_OK && n == 2 && ids[0] == 0 && ids[1] == 1, "NFC-stable text: %d", st);
        st = tinfer_tokenizer_encode(t, "ae\xcc\x81", 4, 0, ids, 8, &n, &err);
        CHECK(st == TINFER_ERR_UNSUPPORTED && strstr(err.msg, "NFC") && strstr(err.msg, "U+0301"),
              "NFC combining mark: %d '%s'", st, err.msg);
        tinfer_tokenizer_free(t);
    }
}

static void expect_lossy(const char *in, size_t n, bool hold, const char *want, size_t held_want) {
    char out[64];
    size_t held = 99;
    size_t k = tinfer_utf8_lossy((const unsigned char *)in, n, hold, out, &held);
    CHECK(k == strlen(want) && memcmp(out, want, k) == 0 && held == held_want,
          "utf8_lossy: %zu bytes, held %zu", k, held);
}

static void test_utf8(void) {
#define R "\xEF\xBF\xBD"
    /* maximal subparts, one U+FFFD each (Unicode §3.9 / Python errors="replace") */
    expect_lossy("a\xF0\x9F\x98", 4, false, "a" R, 0);
    expect_lossy("a\xF0\x9F\x98", 4, true, "a", 3);
    expect_lossy("\xED\xA0\x80", 3, false, R R R, 0); /* surrogate: ED alone is the subpart */
    expect_lossy("\xC0\xAF", 2, false, R R, 0);
    expect_lossy("\xE2\x82(", 3, true, R "(", 0);
    expect_lossy("\xF4\x90\x80\x80", 4, false, R R R R, 0);
    expect_lossy("\xE2\x82\xAC", 3, true, "\xE2\x82\xAC", 0);
    expect_lossy("\x80", 1, true, R, 0);
#undef R
}

#define N_MSG 4
static const tinfer_chat_message MSGS[N_MSG] = {
    {"system", "Be brief."}, {"user", "  Hi there \n"}, {"assistant", " Hello! "}, {"user", "Bye"}};

static const char TMPL_L3[] =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";
static const char WANT_L3_FULL[] =
    "<s><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
static const char WANT_L3_ONE[] =
    "<s><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>";
static const char TMPL_L2[] =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";
static const char WANT_L2_FULL[] =
    "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n  Hi there [/INST] Hello! </s><s>[INST] Bye [/INST]";
static const char WANT_L2_ONE[] =
    "<s>[INST] Hi there [/INST]";
static const char TMPL_ZE[] =
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}";
static const char WANT_ZE_FULL[] =
    "<|system|>\nBe brief.</s>\n<|user|>\n  Hi there \n</s>\n<|assistant|>\n Hello! </s>\n<|user|>\nBye</s>\n<|assistant|>\n";
static const char WANT_ZE_ONE[] =
    "<|user|>\n  Hi there \n</s>\n";
static const char TMPL_QW[] =
    "{%- if messages[0]['role'] == 'system' %}\n    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n{%- else %}\n    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}\n{%- endif %}\n{%- for message in messages %}\n    {%- if not (message.role == \"system\" and loop.first) %}\n        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n    {%- endif %}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n";
static const char WANT_QW_FULL[] =
    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n  Hi there \n<|im_end|>\n<|im_start|>assistant\n Hello! <|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n";
static const char WANT_QW_ONE[] =
    "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\n  Hi there \n<|im_end|>\n";

static void expect_chat(const char *name, const char *tmpl, const tinfer_chat_message *m, int32_t n,
                        bool gen, const char *want) {
    char out[2048];
    size_t k = 0;
    tinfer_err err = {{0}};
    tinfer_status st = tinfer_chat_render(tmpl, "<s>", "</s>", m, n, gen, out, sizeof out, &k, &err);
    CHECK(st == TINFER_OK && k == strlen(want) && memcmp(out, want, k) == 0,
          "chat %s: status %d (%s) got '%.*s'", name, st, err.msg, (int)k, out);
}

static void test_chat(void) {
    expect_chat("llama3", TMPL_L3, MSGS, N_MSG, true, WANT_L3_FULL);
    expect_chat("llama3-one", TMPL_L3, MSGS + 1, 1, false, WANT_L3_ONE);
    expect_chat("llama2", TMPL_L2, MSGS, N_MSG, true, WANT_L2_FULL);
    expect_chat("llama2-one", TMPL_L2, MSGS + 1, 1, false, WANT_L2_ONE);
    expect_chat("zephyr", TMPL_ZE, MSGS, N_MSG, true, WANT_ZE_FULL);
    expect_chat("zephyr-one", TMPL_ZE, MSGS + 1, 1, false, WANT_ZE_ONE);
    expect_chat("qwen", TMPL_QW, MSGS, N_MSG, true, WANT_QW_FULL);
    expect_chat("qwen-one", TMPL_QW, MSGS + 1, 1, false, WANT_QW_ONE);
    /* no template: plain ChatML, no default system prompt */
    const tinfer_chat_message u[] = {{"user", "hi"}};
    expect_chat("none", NULL, u, 1, true, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");

    char out[64];
    size_t k = 0;
    tinfer_err err = {{0}};
    tinfer_status st = tinfer_chat_render("{{ messages | tojson }}", NULL, NULL, u, 1, true, out,
                                          sizeof out, &k, &err);
    CHECK(st == TINFER_ERR_UNSUPPORTED && strstr(err.msg, "chat_template"), "unknown template: %d",
          st);
    const tinfer_chat_message bad[] = {{"user", "a"}, {"user", "b"}};
    st = tinfer_chat_render(TMPL_L2, "<s>", "</s>", bad, 2, false, out, sizeof out, &k, &err);
    CHECK(st == TINFER_ERR_INVALID_ARG && strstr(err.msg, "alternate"), "llama2 roles: %d", st);
    const tinfer_chat_message nul[] = {{"user", NULL}};
    st = tinfer_chat_render(NULL, NULL, NULL, nul, 1, false, out, sizeof out, &k, &err);
    CHECK(st == TINFER_ERR_INVALID_ARG, "NULL content: %d", st);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TINY_TOKENIZER_JSON\n", argv[0]);
        return 2;
    }
    test_tiny(argv[1]);
    static const char *const removed[] = {"the", "final", "countdown"};
    static const char *const isolated[] = {"the", "-", "final", "-", "-", "countdown"};
    static const char *const mprev[] = {"the-", "final-", "-", "countdown"};
    static const char *const mnext[] = {"the", "-final", "-", "-countdown"};
    static const char *const contig[] = {"the", "-", "final", "--", "countdown"};
    static const char *const inv_removed[] = {"-", "-", "-"};
    test_split("Removed", false, removed, 3);
    test_split("Isolated", false, isolated, 6);
    test_split("MergedWithPrevious", false, mprev, 4);
    test_split("MergedWithNext", false, mnext, 4);
    test_split("Contiguous", false, contig, 5);
    test_split("Removed", true, inv_removed, 3);
    test_bad_files();
    test_utf8();
    test_chat();
    printf("tokenizer unit: %s\n", test_failures ? "FAILED" : "ok");
    return test_failures ? 1 : 0;
}

/*
 * test_loader_config.c — config.json / generation_config.json parsing: a SmolLM2-135M-shaped
 * config (values from the model card's config.json), the architecture variants, and bad
 * configs (zero / negative / indivisible dimensions, missing keys, wrong JSON types, ids outside
 * the vocabulary). Each bad case checks the status and that the message names the key and file.
 */
#define _XOPEN_SOURCE 700

#include "config.h"
#include "loader_test_util.h"

/* SmolLM2-135M-Instruct config.json, trimmed to the keys the loader reads plus a few it must
 * ignore. %s slots let a case replace or add keys: the first goes before everything (so a
 * duplicate later key does not matter: cJSON returns the first match), the second at the end. */
static const char *BASE =
    "{%s\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 576, "
    "\"num_hidden_layers\": 30, \"num_attention_heads\": 9, \"num_key_value_heads\": 3, "
    "\"intermediate_size\": 1536, \"vocab_size\": 49152, \"max_position_embeddings\": 8192, "
    "\"rope_theta\": 100000, \"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": true, "
    "\"hidden_act\": \"silu\", \"bos_token_id\": 1, \"eos_token_id\": 2, "
    "\"rope_scaling\": null, \"torch_dtype\": \"bfloat16\", \"model_type\": \"llama\"%s}";

static tinfer_status parse(const char *pre, const char *post, tinfer_llama_config *c,
                           tinfer_err *err) {
    char buf[4096];
    snprintf(buf, sizeof buf, BASE, pre, post);
    return tinfer_config_parse(buf, strlen(buf), "cfg.json", c, err);
}

static void test_good(void) {
    tinfer_llama_config c;
    tinfer_err err = {{0}};
    CHECK(parse("", "", &c, &err) == TINFER_OK);
    CHECK(strcmp(c.architecture, "LlamaForCausalLM") == 0);
    CHECK(c.n_embd == 576 && c.n_layer == 30 && c.n_head == 9 && c.n_head_kv == 3);
    CHECK(c.head_dim == 64 && c.n_ff == 1536 && c.n_vocab == 49152 && c.n_ctx_train == 8192);
    CHECK(c.rope_theta == 100000.0f && c.rms_norm_eps == 1e-5f);
    CHECK(c.tie_word_embeddings && !c.qkv_bias);
    CHECK(c.bos_id == 1 && c.n_eos == 1 && c.eos_ids[0] == 2);
    CHECK(!c.has_gen_temperature && !c.has_gen_top_k && !c.has_gen_top_p);

    /* defaults when optional keys are absent (transformers' LlamaConfig defaults) */
    const char *min = "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, "
                      "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                      "\"intermediate_size\": 128, \"vocab_size\": 100, "
                      "\"max_position_embeddings\": 256}";
    CHECK(tinfer_config_parse(min, strlen(min), "min", &c, &err) == TINFER_OK);
    CHECK(c.n_head_kv == 4 && c.head_dim == 16 && c.rope_theta == 10000.0f &&
          c.rms_norm_eps == 1e-6f && !c.tie_word_embeddings && c.bos_id == -1 && c.n_eos == 0);

    CHECK(parse("\"eos_token_id\": [2, 7, 49151], ", "", &c, &err) == TINFER_OK);
    CHECK(c.n_eos == 3 && c.eos_ids[0] == 2 && c.eos_ids[1] == 7 && c.eos_ids[2] == 49151);
    CHECK(parse("\"head_dim\": 128, ", "", &c, &err) == TINFER_OK && c.head_dim == 128);
    CHECK(parse("\"attention_bias\": true, ", "", &c, &err) == TINFER_OK && c.qkv_bias);
    CHECK(parse("\"architectures\": [\"Qwen2ForCausalLM\"], \"use_sliding_window\": false, "
                "\"sliding_window\": 4096, ",
                "", &c, &err) == TINFER_OK &&
          c.qkv_bias && strcmp(c.architecture, "Qwen2ForCausalLM") == 0);
    CHECK(parse("\"architectures\": [\"MistralForCausalLM\"], \"sliding_window\": null, ", "", &c,
                &err) == TINFER_OK &&
          !c.qkv_bias);
}

static void test_bad(void) {
    tinfer_llama_config c;
    tinfer_err err = {{0}};
    tinfer_status st;
    st = parse("\"hidden_size\": 0, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'hidden_size'", NULL);
    st = parse("\"num_hidden_layers\": -3, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'num_hidden_layers'", "-3");
    st = parse("\"intermediate_size\": 0, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "'intermediate_size'", NULL, NULL);
    st = parse("\"num_key_value_heads\": 4, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'num_key_value_heads'", "'num_attention_heads'");
    st = parse("\"num_attention_heads\": 7, \"num_key_value_heads\": 7, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'hidden_size'", "'num_attention_heads'");
    st = parse("\"head_dim\": 63, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'head_dim'", NULL);
    st = parse("\"hidden_size\": 576.5, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'hidden_size'", "integer");
    st = parse("\"hidden_size\": \"576\", ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'hidden_size'", "string");
    st = parse("\"tie_word_embeddings\": 1, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'tie_word_embeddings'", NULL);
    st = parse("\"rms_norm_eps\": \"1e-5\", ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'rms_norm_eps'", NULL);
    st = parse("\"rope_theta\": -1, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'rope_theta'", NULL);
    /* positive as a double, 0 as a float (a fuzzer find): must be refused, not loaded as 0 */
    st = parse("\"rope_theta\": 1e-50, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'rope_theta'", "underflows");
    st = parse("\"rms_norm_eps\": 1e-50, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'rms_norm_eps'", "underflows");
    st = parse("\"vocab_size\": 8388608, ", "", &c, &err); /* 2^23: above the cap */
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'vocab_size'", NULL);
    st = parse("\"hidden_size\": 1e300, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'hidden_size'", NULL);
    /* quantization_config: only q8_0 in blocks of 32 */
    st = parse("\"quantization_config\": {\"quant_method\": \"awq\"}, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_UNSUPPORTED, &err, "cfg.json", "'quantization_config.quant_method'",
              "awq");
    st = parse("\"quantization_config\": {\"quant_method\": \"q8_0\", \"group_size\": 64}, ", "",
               &c, &err);
    CHECK_ERR(st, TINFER_ERR_UNSUPPORTED, &err, "cfg.json", "'quantization_config.group_size'",
              "64");
    st = parse("\"quantization_config\": \"q8_0\", ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'quantization_config'", "object");
    st = parse("\"quantization_config\": {\"group_size\": 32}, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'quantization_config.quant_method'", NULL);
    st = parse("\"quantization_config\": {\"quant_method\": \"q8_0\", "
               "\"modules_not_quantized\": [1]}, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "modules_not_quantized", NULL);
    CHECK(parse("\"quantization_config\": {\"quant_method\": \"q8_0\", \"group_size\": 32, "
                "\"modules_not_quantized\": [\"lm_head\"]}, ", "", &c, &err) == TINFER_OK &&
          c.q8_0);
    CHECK(parse("", "", &c, &err) == TINFER_OK && !c.q8_0);

    /* missing required key: build without vocab_size */
    const char *nov = "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, "
                      "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                      "\"intermediate_size\": 128, \"max_position_embeddings\": 256}";
    st = tinfer_config_parse(nov, strlen(nov), "nov.json", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "nov.json", "missing required key 'vocab_size'", NULL);
    const char *noa = "{\"hidden_size\": 64}";
    st = tinfer_config_parse(noa, strlen(noa), "noa.json", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "noa.json", "'architectures'", NULL);

    st = parse("\"eos_token_id\": 49152, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'eos_token_id'", "49152");
    st = parse("\"eos_token_id\": [1, \"2\"], ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'eos_token_id'", NULL);
    st = parse("\"eos_token_id\": [1,2,3,4,5,6,7,8,9], ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_UNSUPPORTED, &err, "cfg.json", "'eos_token_id'", NULL);
    st = parse("\"bos_token_id\": -1, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'bos_token_id'", NULL);

    st = parse("\"hidden_act\": \"gelu\", ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_UNSUPPORTED, &err, "cfg.json", "'hidden_act'", "gelu");
    st = parse("\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_UNSUPPORTED, &err, "cfg.json", "'rope_scaling'", "llama3");
    st = parse("\"architectures\": [\"GPT2LMHeadModel\"], ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_UNSUPPORTED, &err, "cfg.json", "'architectures'", "GPT2LMHeadModel");
    st = parse("\"architectures\": [], ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "cfg.json", "'architectures'", NULL);
    st = parse("\"architectures\": [\"MistralForCausalLM\"], \"sliding_window\": 4096, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_UNSUPPORTED, &err, "cfg.json", "'sliding_window'", NULL);
    st = parse("\"architectures\": [\"Qwen2ForCausalLM\"], \"use_sliding_window\": true, ", "", &c,
               &err);
    CHECK_ERR(st, TINFER_ERR_UNSUPPORTED, &err, "cfg.json", "'use_sliding_window'", NULL);
    st = parse("\"mlp_bias\": true, ", "", &c, &err);
    CHECK_ERR(st, TINFER_ERR_UNSUPPORTED, &err, "cfg.json", "'mlp_bias'", NULL);

    st = tinfer_config_parse("{\"a\": ", 6, "trunc.json", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "trunc.json", "JSON", NULL);
    st = tinfer_config_parse("{} {}", 5, "two.json", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "two.json", "JSON", NULL);
    st = tinfer_config_parse("[1]", 3, "arr.json", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "arr.json", "object", NULL);
    /* not NUL-terminated: the parser must stop at len */
    const char notnul[3] = {'{', '}', 'x'};
    st = tinfer_config_parse(notnul, 2, "nn.json", &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "nn.json", "'architectures'", NULL);
}

static void write_config_dir(const char *dir, const char *gen) {
    char buf[4096], p[8448];
    make_dir(dir);
    snprintf(buf, sizeof buf, BASE, "", "");
    snprintf(p, sizeof p, "%s/config.json", tpath(1, dir));
    write_raw(p, buf, strlen(buf));
    if (gen) {
        snprintf(p, sizeof p, "%s/generation_config.json", tpath(1, dir));
        write_raw(p, gen, strlen(gen));
    }
}

static void test_load(void) {
    tinfer_llama_config c;
    tinfer_err err = {{0}};
    tinfer_status st;
    write_config_dir("plain", NULL);
    CHECK(tinfer_config_load(tpath(1, "plain"), &c, &err) == TINFER_OK);
    CHECK(c.n_embd == 576 && c.n_eos == 1 && c.eos_ids[0] == 2 && !c.has_gen_temperature);

    write_config_dir("gen", "{\"do_sample\": true, \"temperature\": 0.2, \"top_k\": 50, "
                            "\"top_p\": 0.9, \"min_p\": 0.05, \"repetition_penalty\": 1.1, "
                            "\"bos_token_id\": 0, \"eos_token_id\": [2, 0], "
                            "\"transformers_version\": \"4.42.3\"}");
    st = tinfer_config_load(tpath(1, "gen"), &c, &err);
    CHECK(st == TINFER_OK);
    if (st != TINFER_OK) fprintf(stderr, "  %s\n", err.msg);
    CHECK(c.gen_do_sample && c.has_gen_temperature && c.gen_temperature == 0.2f);
    CHECK(c.has_gen_top_k && c.gen_top_k == 50 && c.has_gen_top_p && c.gen_top_p == 0.9f);
    CHECK(c.has_gen_min_p && c.gen_min_p == 0.05f);
    CHECK(c.has_gen_repeat_penalty && c.gen_repeat_penalty == 1.1f);
    CHECK(c.bos_id == 0 && c.n_eos == 2 && c.eos_ids[0] == 2 && c.eos_ids[1] == 0);

    write_config_dir("gen_bad", "{\"temperature\": \"hot\"}");
    st = tinfer_config_load(tpath(1, "gen_bad"), &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "gen_bad/generation_config.json", "'temperature'", NULL);
    write_config_dir("gen_topp", "{\"top_p\": 1.5}");
    st = tinfer_config_load(tpath(1, "gen_topp"), &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "generation_config.json", "'top_p'", NULL);
    write_config_dir("gen_eos", "{\"eos_token_id\": 100000}");
    st = tinfer_config_load(tpath(1, "gen_eos"), &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "generation_config.json", "'eos_token_id'", NULL);
    write_config_dir("gen_json", "{\"temperature\": ");
    st = tinfer_config_load(tpath(1, "gen_json"), &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "gen_json/generation_config.json", "JSON", NULL);

    make_dir("nocfg");
    st = tinfer_config_load(tpath(1, "nocfg"), &c, &err);
    CHECK_ERR(st, TINFER_ERR_IO, &err, "nocfg/config.json", NULL, NULL);
    make_dir("badcfg");
    write_raw(tpath(0, "badcfg/config.json"), "{\"hidden_size\": 1}", 18);
    st = tinfer_config_load(tpath(1, "badcfg"), &c, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "badcfg/config.json", "'architectures'", NULL);
}

int main(void) {
    tmp_init("cfg");
    test_good();
    test_bad();
    test_load();
    if (g_failures) {
        fprintf(stderr, "test_loader_config: %d failure(s)\n", g_failures);
        return 1;
    }
    printf("test_loader_config: all checks passed\n");
    return 0;
}

/*
 * config.c — config.json and generation_config.json of a Llama-family HF model directory.
 *
 * Parses with cJSON and validates every value before it reaches the model: required keys must be
 * present with the right JSON type, dimensions positive and below caps, head counts divisible,
 * token ids inside the vocabulary. Defaults for optional keys are those of transformers'
 * LlamaConfig (configuration_llama.py): num_key_value_heads = num_attention_heads, rope_theta =
 * 10000, rms_norm_eps = 1e-6, tie_word_embeddings = false, hidden_act = "silu".
 * Every error names the file (label) and the JSON key.
 */
#define _POSIX_C_SOURCE 200809L

#include "config.h"
#include "textfile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Caps on dimensions. The largest public Llama-family models (Llama 3.1 405B: hidden 16384,
 * 126 layers, 128 heads, FFN 53248; vocabularies up to 256k, contexts up to ~1M) sit well below
 * them. They are there so that garbage is rejected early and products such as n_vocab * n_embd
 * (elements of the embedding) or n_ctx * n_layer * kv_dim (KV cache elements) stay far from
 * int64 overflow, and per-row counts stay inside int32. */
#define CFG_MAX_HIDDEN (1 << 16)
#define CFG_MAX_LAYERS 1024
#define CFG_MAX_VOCAB (1 << 22)
#define CFG_MAX_HEADS 1024     /* head counts; also bounds n_embd / n_head from below */
#define CFG_MAX_HEAD_DIM 1024  /* largest in use is 256 (Gemma); 4x headroom */
#define CFG_MAX_FF (1 << 20)
#define CFG_MAX_CTX (1 << 24)
/* config.json files are a few KB; 16 MiB stops a wrong path (a weights file) from being read. */
#define CFG_MAX_FILE_BYTES (16u << 20)
/* A double holds integers exactly up to 2^53; ids and dims far below that. */
#define CFG_MAX_EXACT_INT 9007199254740992.0

static const char *cfg_type_name(const cJSON *it) {
    if (cJSON_IsNull(it)) return "null";
    if (cJSON_IsBool(it)) return "a boolean";
    if (cJSON_IsNumber(it)) return "a number";
    if (cJSON_IsString(it)) return "a string";
    if (cJSON_IsArray(it)) return "an array";
    if (cJSON_IsObject(it)) return "an object";
    return "invalid";
}

static const cJSON *cfg_get(const cJSON *root, const char *key) {
    return cJSON_GetObjectItemCaseSensitive(root, key);
}

/* An integral JSON number; false for fractions, NaN or values past 2^53. */
static bool cfg_is_int(const cJSON *it, int64_t *out) {
    if (!cJSON_IsNumber(it)) return false;
    double v = it->valuedouble;
    if (!(v >= -CFG_MAX_EXACT_INT && v <= CFG_MAX_EXACT_INT)) return false;
    int64_t i = (int64_t)v;
    if ((double)i != v) return false;
    *out = i;
    return true;
}

/* Reads integer `key` into *out within [lo, hi]. Absent or null: *out = def when !required. */
static tinfer_status cfg_int(const cJSON *root, const char *label, const char *key, bool required,
                             int64_t lo, int64_t hi, int32_t def, int32_t *out, tinfer_err *err) {
    const cJSON *it = cfg_get(root, key);
    if (!it || cJSON_IsNull(it)) {
        if (required)
            return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: missing required key '%s'", label,
                                  key);
        *out = def;
        return TINFER_OK;
    }
    int64_t v;
    if (!cfg_is_int(it, &v))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s' must be an integer, got %s",
                              label, key, cfg_type_name(it));
    if (v < lo || v > hi)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: key '%s' is %lld, outside the accepted range [%lld, %lld]", label,
                              key, (long long)v, (long long)lo, (long long)hi);
    *out = (int32_t)v;
    return TINFER_OK;
}

/* Reads a number `key` into *out, which must satisfy lo <= v <= hi (lo_open: lo < v).
 * *present tells whether it was there (absent or null leaves *out alone). */
static tinfer_status cfg_num(const cJSON *root, const char *label, const char *key, double lo,
                             bool lo_open, double hi, float *out, bool *present, tinfer_err *err) {
    const cJSON *it = cfg_get(root, key);
    if (present) *present = false;
    if (!it || cJSON_IsNull(it)) return TINFER_OK;
    if (!cJSON_IsNumber(it))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s' must be a number, got %s",
                              label, key, cfg_type_name(it));
    double v = it->valuedouble;
    if (!isfinite(v) || v < lo || (lo_open && v == lo) || v > hi)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s' is %g, outside %s%g, %g]",
                              label, key, v, lo_open ? "(" : "[", lo, hi);
    /* A positive double can round to 0 as a float (1e-50): where the bound is open the value
     * must stay above it after the conversion too (found by the fuzzer on rope_theta). */
    if (lo_open && (float)v <= (float)lo)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s' is %g, which underflows float",
                              label, key, v);
    *out = (float)v;
    if (present) *present = true;
    return TINFER_OK;
}

static tinfer_status cfg_bool(const cJSON *root, const char *label, const char *key, bool *out,
                              tinfer_err *err) {
    const cJSON *it = cfg_get(root, key);
    if (!it || cJSON_IsNull(it)) return TINFER_OK;
    if (!cJSON_IsBool(it))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s' must be true or false, got %s",
                              label, key, cfg_type_name(it));
    *out = cJSON_IsTrue(it);
    return TINFER_OK;
}

/* bos_token_id: an integer in [0, n_vocab) or null/absent (left as is). */
static tinfer_status cfg_bos(const cJSON *root, const char *label, int32_t n_vocab, int32_t *bos,
                             tinfer_err *err) {
    const cJSON *it = cfg_get(root, "bos_token_id");
    if (!it || cJSON_IsNull(it)) return TINFER_OK;
    int64_t v;
    if (!cfg_is_int(it, &v))
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: key 'bos_token_id' must be an integer, got %s", label,
                              cfg_type_name(it));
    if (v < 0 || v >= n_vocab)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: key 'bos_token_id' is %lld, outside the vocabulary [0, %d)",
                              label, (long long)v, n_vocab);
    *bos = (int32_t)v;
    return TINFER_OK;
}

/* eos_token_id: an integer or a list of integers in [0, n_vocab); null/absent leaves it as is. */
static tinfer_status cfg_eos(const cJSON *root, const char *label, int32_t n_vocab, int32_t *n_eos,
                             int32_t *ids, tinfer_err *err) {
    const cJSON *it = cfg_get(root, "eos_token_id");
    if (!it || cJSON_IsNull(it)) return TINFER_OK;
    int32_t tmp[TINFER_MAX_EOS], n = 0;
    const cJSON *single = cJSON_IsArray(it) ? NULL : it;
    if (!single && cJSON_GetArraySize(it) > TINFER_MAX_EOS)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: key 'eos_token_id' lists %d ids (at most %d supported)", label,
                              cJSON_GetArraySize(it), TINFER_MAX_EOS);
    for (const cJSON *e = single ? single : it->child; e; e = single ? NULL : e->next) {
        int64_t v;
        if (!cfg_is_int(e, &v))
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: key 'eos_token_id' must be an integer or a list of "
                                  "integers, got %s",
                                  label, cfg_type_name(e));
        if (v < 0 || v >= n_vocab)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: key 'eos_token_id' holds %lld, outside the vocabulary "
                                  "[0, %d)",
                                  label, (long long)v, n_vocab);
        tmp[n++] = (int32_t)v;
    }
    *n_eos = n;
    memcpy(ids, tmp, (size_t)n * sizeof *ids);
    return TINFER_OK;
}

#define CFG_TRY(expr)                                                                              \
    do {                                                                                           \
        tinfer_status s_ = (expr);                                                                 \
        if (s_ != TINFER_OK) return s_;                                                            \
    } while (0)

/* quantization_config (absent or null: none): {"quant_method": "q8_0", "group_size": 32,
 * "modules_not_quantized": [names...]}. Only q8_0 with groups of 32 is known; the list is
 * informational (which matrices are Q8_0 is decided per tensor by its dtype, models/llama.c). */
static tinfer_status cfg_quant(const cJSON *root, const char *label, tinfer_llama_config *c,
                               tinfer_err *err) {
    const cJSON *q = cfg_get(root, "quantization_config");
    if (!q || cJSON_IsNull(q)) return TINFER_OK;
    if (!cJSON_IsObject(q))
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: key 'quantization_config' must be an object, got %s", label,
                              cfg_type_name(q));
    const cJSON *m = cfg_get(q, "quant_method");
    if (!cJSON_IsString(m) || !m->valuestring)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: key 'quantization_config.quant_method' must be a string", label);
    if (strcmp(m->valuestring, "q8_0") != 0)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: key 'quantization_config.quant_method': '%.64s' is not "
                              "supported (only q8_0)",
                              label, m->valuestring);
    int32_t group = 32;
    CFG_TRY(cfg_int(q, label, "group_size", false, 1, 1 << 20, 32, &group, err));
    if (group != 32)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: key 'quantization_config.group_size': %d is not supported "
                              "(q8_0 has blocks of 32)",
                              label, (int)group);
    const cJSON *mods = cfg_get(q, "modules_not_quantized");
    if (mods && !cJSON_IsNull(mods)) {
        bool ok = cJSON_IsArray(mods);
        for (const cJSON *it = ok ? mods->child : NULL; it; it = it->next) ok = ok && cJSON_IsString(it);
        if (!ok)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: key 'quantization_config.modules_not_quantized' must be a "
                                  "list of strings",
                                  label);
    }
    c->q8_0 = true;
    return TINFER_OK;
}

static tinfer_status cfg_from_json(const cJSON *root, const char *label, tinfer_llama_config *c,
                                   tinfer_err *err) {
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(root))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: not a JSON object", label);

    /* architectures: a non-empty list whose first entry we support */
    const cJSON *arch = cfg_get(root, "architectures");
    if (!arch || cJSON_IsNull(arch))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: missing required key 'architectures'",
                              label);
    if (!cJSON_IsArray(arch) || !cJSON_IsString(arch->child) || !arch->child->valuestring)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: key 'architectures' must be a non-empty list of strings", label);
    const char *a = arch->child->valuestring;
    bool is_llama = !strcmp(a, "LlamaForCausalLM"), is_mistral = !strcmp(a, "MistralForCausalLM"),
         is_qwen2 = !strcmp(a, "Qwen2ForCausalLM");
    if (!is_llama && !is_mistral && !is_qwen2)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: key 'architectures': '%s' is not supported (LlamaForCausalLM, "
                              "MistralForCausalLM, Qwen2ForCausalLM are)",
                              label, a);
    snprintf(c->architecture, sizeof c->architecture, "%s", a);

    CFG_TRY(cfg_int(root, label, "hidden_size", true, 1, CFG_MAX_HIDDEN, 0, &c->n_embd, err));
    CFG_TRY(cfg_int(root, label, "num_hidden_layers", true, 1, CFG_MAX_LAYERS, 0, &c->n_layer, err));
    CFG_TRY(cfg_int(root, label, "num_attention_heads", true, 1, CFG_MAX_HEADS, 0, &c->n_head, err));
    CFG_TRY(cfg_int(root, label, "num_key_value_heads", false, 1, CFG_MAX_HEADS, c->n_head,
                    &c->n_head_kv, err));
    CFG_TRY(cfg_int(root, label, "intermediate_size", true, 1, CFG_MAX_FF, 0, &c->n_ff, err));
    CFG_TRY(cfg_int(root, label, "vocab_size", true, 1, CFG_MAX_VOCAB, 0, &c->n_vocab, err));
    CFG_TRY(cfg_int(root, label, "max_position_embeddings", true, 1, CFG_MAX_CTX, 0,
                    &c->n_ctx_train, err));
    if (c->n_head % c->n_head_kv != 0)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: key 'num_key_value_heads' (%d) does not divide "
                              "'num_attention_heads' (%d)",
                              label, c->n_head_kv, c->n_head);
    const cJSON *hd = cfg_get(root, "head_dim");
    if (hd && !cJSON_IsNull(hd)) {
        CFG_TRY(cfg_int(root, label, "head_dim", true, 1, CFG_MAX_HEAD_DIM, 0, &c->head_dim, err));
    } else {
        if (c->n_embd % c->n_head != 0)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: key 'hidden_size' (%d) is not a multiple of "
                                  "'num_attention_heads' (%d)",
                                  label, c->n_embd, c->n_head);
        c->head_dim = c->n_embd / c->n_head;
    }
    /* RoPE rotates pairs of channels. */
    if (c->head_dim % 2 != 0)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key 'head_dim': %d is odd (RoPE needs "
                              "pairs)", label, c->head_dim);

    c->rope_theta = 10000.0f;
    c->rms_norm_eps = 1e-6f;
    /* rope_theta in use: 1e4 (Llama 2) to 5e5 (Llama 3) and ~1e7 for long-context variants; 1e12
     * leaves room and keeps theta^(-2i/d) well inside float range. */
    bool has_theta = false;
    CFG_TRY(cfg_num(root, label, "rope_theta", 0.0, true, 1e12, &c->rope_theta, &has_theta, err));
    /* transformers >= 5 writes {"rope_parameters": {"rope_theta": .., "rope_type": "default"}}
     * instead of a top-level rope_theta; any other rope_type is a scaling scheme. */
    const cJSON *rope_p = cfg_get(root, "rope_parameters");
    if (rope_p && cJSON_IsObject(rope_p)) {
        if (!has_theta)
            CFG_TRY(cfg_num(rope_p, label, "rope_theta", 0.0, true, 1e12, &c->rope_theta, NULL,
                            err));
        const cJSON *rt = cfg_get(rope_p, "rope_type");
        if (rt && !cJSON_IsNull(rt) &&
            !(cJSON_IsString(rt) && rt->valuestring && !strcmp(rt->valuestring, "default")))
            return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                  "%s: key 'rope_parameters.rope_type' ('%s') is not supported",
                                  label, cJSON_IsString(rt) && rt->valuestring ? rt->valuestring
                                                                                : "?");
    }
    /* eps is added to a mean of squares; >= 1 would swamp any real activation scale */
    CFG_TRY(cfg_num(root, label, "rms_norm_eps", 0.0, true, 1.0, &c->rms_norm_eps, NULL, err));
    CFG_TRY(cfg_bool(root, label, "tie_word_embeddings", &c->tie_word_embeddings, err));
    bool attention_bias = false, mlp_bias = false;
    CFG_TRY(cfg_bool(root, label, "attention_bias", &attention_bias, err));
    CFG_TRY(cfg_bool(root, label, "mlp_bias", &mlp_bias, err));
    if (mlp_bias)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "%s: key 'mlp_bias': true is not "
                              "supported", label);
    c->qkv_bias = is_qwen2 || attention_bias;

    const cJSON *act = cfg_get(root, "hidden_act");
    if (act && !cJSON_IsNull(act)) {
        if (!cJSON_IsString(act) || !act->valuestring)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: key 'hidden_act' must be a string, got %s", label,
                                  cfg_type_name(act));
        if (strcmp(act->valuestring, "silu") != 0)
            return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                  "%s: key 'hidden_act': '%s' is not supported (only silu)", label,
                                  act->valuestring);
    }
    const cJSON *rs = cfg_get(root, "rope_scaling");
    if (rs && !cJSON_IsNull(rs)) {
        const cJSON *t = cJSON_IsObject(rs) ? cfg_get(rs, "rope_type") : NULL;
        if (!t && cJSON_IsObject(rs)) t = cfg_get(rs, "type");
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: key 'rope_scaling' (type '%s') is not supported", label,
                              cJSON_IsString(t) && t->valuestring ? t->valuestring : "?");
    }
    if (is_mistral) {
        const cJSON *sw = cfg_get(root, "sliding_window");
        if (sw && !cJSON_IsNull(sw))
            return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                  "%s: key 'sliding_window': sliding-window attention is not "
                                  "supported (must be null)",
                                  label);
    }
    if (is_qwen2) {
        bool use_sw = false;
        CFG_TRY(cfg_bool(root, label, "use_sliding_window", &use_sw, err));
        if (use_sw)
            return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                  "%s: key 'use_sliding_window': sliding-window attention is not "
                                  "supported",
                                  label);
    }
    CFG_TRY(cfg_quant(root, label, c, err));
    c->bos_id = -1;
    CFG_TRY(cfg_bos(root, label, c->n_vocab, &c->bos_id, err));
    CFG_TRY(cfg_eos(root, label, c->n_vocab, &c->n_eos, c->eos_ids, err));
    return TINFER_OK;
}

tinfer_status tinfer_config_parse(const char *json, size_t len, const char *label,
                                  tinfer_llama_config *cfg, tinfer_err *err) {
    if (!cfg || (!json && len))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "tinfer_config_parse: NULL argument");
    if (!label) label = "config.json";
    /* cJSON reads a terminated string; callers' buffers (the fuzzer's) need not be. */
    char *text = malloc(len + 1);
    if (!text) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    if (len) memcpy(text, json, len);
    text[len] = '\0';
    cJSON *root = tinfer_json_parse_strict(text, len);
    free(text);
    if (!root) return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: not valid JSON", label);
    tinfer_status st = cfg_from_json(root, label, cfg, err);
    cJSON_Delete(root);
    return st;
}

static char *cfg_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* generation_config.json: sampling defaults and bos/eos overrides. */
static tinfer_status cfg_generation(const cJSON *root, const char *label, tinfer_llama_config *c,
                                    tinfer_err *err) {
    if (!cJSON_IsObject(root))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: not a JSON object", label);
    CFG_TRY(cfg_bool(root, label, "do_sample", &c->gen_do_sample, err));
    /* Ranges where the values mean something: temperature >= 0 (0 = greedy); top_p and min_p are
     * probabilities; repetition_penalty > 0 (it divides logits). The upper bound of 100 on
     * temperature and penalty is far past any useful setting (both are ~1 in practice) and only
     * rejects garbage. */
    CFG_TRY(cfg_num(root, label, "temperature", 0.0, false, 100.0, &c->gen_temperature,
                    &c->has_gen_temperature, err));
    CFG_TRY(cfg_num(root, label, "top_p", 0.0, true, 1.0, &c->gen_top_p, &c->has_gen_top_p, err));
    CFG_TRY(cfg_num(root, label, "min_p", 0.0, false, 1.0, &c->gen_min_p, &c->has_gen_min_p, err));
    CFG_TRY(cfg_num(root, label, "repetition_penalty", 0.0, true, 100.0, &c->gen_repeat_penalty,
                    &c->has_gen_repeat_penalty, err));
    const cJSON *tk = cfg_get(root, "top_k");
    if (tk && !cJSON_IsNull(tk)) {
        CFG_TRY(cfg_int(root, label, "top_k", true, 0, INT32_MAX, 0, &c->gen_top_k, err));
        c->has_gen_top_k = true;
    }
    CFG_TRY(cfg_bos(root, label, c->n_vocab, &c->bos_id, err));
    CFG_TRY(cfg_eos(root, label, c->n_vocab, &c->n_eos, c->eos_ids, err));
    return TINFER_OK;
}

tinfer_status tinfer_config_load(const char *dir, tinfer_llama_config *cfg, tinfer_err *err) {
    if (!dir || !cfg)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "tinfer_config_load: NULL argument");
    char *path = cfg_join(dir, "config.json");
    char *gpath = cfg_join(dir, "generation_config.json");
    char *text = NULL;
    size_t len = 0;
    bool missing = false;
    tinfer_status st = TINFER_OK;
    if (!path || !gpath) {
        st = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
        goto cleanup;
    }
    st = tinfer_read_text_file(path, CFG_MAX_FILE_BYTES, &text, &len, &missing, err);
    if (missing) st = tinfer_err_set(err, TINFER_ERR_IO, "%s: no config.json in the model directory", path);
    if (st != TINFER_OK) goto cleanup;
    if ((st = tinfer_config_parse(text, len, path, cfg, err)) != TINFER_OK) goto cleanup;
    free(text);
    text = NULL;
    st = tinfer_read_text_file(gpath, CFG_MAX_FILE_BYTES, &text, &len, &missing, err);
    if (missing) {
        st = TINFER_OK; /* optional */
        goto cleanup;
    }
    if (st != TINFER_OK) goto cleanup;
    cJSON *root = tinfer_json_parse_strict(text, len);
    if (!root) {
        st = tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: not valid JSON", gpath);
        goto cleanup;
    }
    st = cfg_generation(root, gpath, cfg, err);
    cJSON_Delete(root);
cleanup:
    free(text);
    free(path);
    free(gpath);
    return st;
}

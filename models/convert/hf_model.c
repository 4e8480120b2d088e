/*
 * hf_model.c — Llama hyper-parameters from GGUF metadata, config.json / generation_config.json,
 * and model.safetensors (dequantized weights, HF names and layout).
 *
 * safetensors layout (huggingface/safetensors README): u64 little-endian header length N, N bytes
 * of JSON {"__metadata__":{...}, name:{"dtype","shape","data_offsets":[begin,end]}}, then the
 * data. Tensors lie back to back (the format allows no gaps); the header is padded with spaces
 * so the data starts 64-byte aligned in the file, and the tensors whose size is a multiple of 64
 * bytes come first (by name), so each of them starts 64-byte aligned; the others follow by
 * element size, largest first, then name, so every tensor is at least aligned to its element.
 * Q8_0 (--weights q8_0): X.weight I8 [N, K] and X.weight_scale F16 [N, K / 32] (base/q8_0.h).
 *
 * Shapes: GGUF ne[0] is the contiguous axis, so a GGUF [ne0, ne1] matrix is HF [ne1, ne0] with
 * the same row-major bytes. Tensors are streamed one row at a time (dequantize -> optional Q/K
 * un-permutation by picking the source row -> BF16 round-to-nearest-even or F32), so memory stays
 * at one row regardless of model size.
 */
#define _POSIX_C_SOURCE 200809L
#include "convert.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/q8_0.h"
#include "quant.h"

static tinfer_status get_i64(const gguf_file *f, const char *key, int64_t lo, int64_t hi,
                             int64_t *v, tinfer_err *err) {
    uint64_t u;
    tinfer_status st = gguf_get_u64(f, key, &u, err);
    if (st) return st;
    if (u < (uint64_t)lo || u > (uint64_t)hi)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s': value %llu out of range "
                              "[%lld, %lld]", f->path, key, (unsigned long long)u, (long long)lo,
                              (long long)hi);
    *v = (int64_t)u;
    return TINFER_OK;
}

static tinfer_status get_id(const gguf_file *f, const char *key, int64_t n_vocab, int64_t *v,
                            tinfer_err *err) {
    uint64_t u;
    tinfer_status st = gguf_get_u64_or(f, key, UINT64_MAX, &u, err);
    if (st) return st;
    if (u == UINT64_MAX) {
        *v = -1;
        return TINFER_OK;
    }
    if (u >= (uint64_t)n_vocab)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s': token id %llu >= vocab %lld",
                              f->path, key, (unsigned long long)u, (long long)n_vocab);
    *v = (int64_t)u;
    return TINFER_OK;
}

tinfer_status conv_read_hparams(const gguf_file *f, conv_hparams *hp, tinfer_err *err) {
    memset(hp, 0, sizeof *hp);
    char *arch = NULL;
    tinfer_status st = gguf_get_str(f, "general.architecture", true, &arch, err);
    if (st) return st;
    if (strcmp(arch, "llama") != 0) {
        st = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                            "%s: general.architecture '%.64s' not supported (only llama)", f->path,
                            arch);
        free(arch);
        return st;
    }
    free(arch);
    /* Upper bounds only keep the later arithmetic far from overflow; real models are far below. */
    const int64_t big = (int64_t)1 << 24;
    if ((st = get_i64(f, "llama.block_count", 1, 4096, &hp->n_layer, err)) ||
        (st = get_i64(f, "llama.embedding_length", 1, big, &hp->n_embd, err)) ||
        (st = get_i64(f, "llama.feed_forward_length", 1, big, &hp->n_ff, err)) ||
        (st = get_i64(f, "llama.attention.head_count", 1, 4096, &hp->n_head, err)) ||
        (st = get_i64(f, "llama.context_length", 1, (int64_t)1 << 30, &hp->n_ctx, err)))
        return st;
    uint64_t u;
    if ((st = gguf_get_u64_or(f, "llama.attention.head_count_kv", (uint64_t)hp->n_head, &u, err)))
        return st;
    hp->n_head_kv = (int64_t)u;
    if (hp->n_head_kv < 1 || hp->n_head_kv > hp->n_head || hp->n_head % hp->n_head_kv != 0)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: key 'llama.attention.head_count_kv': %lld does not divide "
                              "head_count %lld", f->path, (long long)hp->n_head_kv,
                              (long long)hp->n_head);
    if ((st = gguf_get_u64_or(f, "llama.attention.key_length",
                              (uint64_t)(hp->n_embd / hp->n_head), &u, err)))
        return st;
    hp->head_dim = (int64_t)u;
    if (hp->head_dim < 2 || hp->head_dim % 2 != 0 || hp->head_dim > big)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: head_dim %lld must be even and >= 2",
                              f->path, (long long)hp->head_dim);
    if ((st = gguf_get_u64_or(f, "llama.rope.dimension_count", (uint64_t)hp->head_dim, &u, err)))
        return st;
    if ((int64_t)u != hp->head_dim)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: key 'llama.rope.dimension_count' = %llu: partial rotary "
                              "(head_dim %lld) not supported", f->path, (unsigned long long)u,
                              (long long)hp->head_dim);
    if (gguf_find(f, "llama.rope.scaling.type") || gguf_find(f, "llama.rope.scaling.factor"))
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: key 'llama.rope.scaling.*': RoPE scaling not supported",
                              f->path);
    /* Defaults from llama.cpp's llama-model.cpp (rope freq_base 10000, rms eps 1e-5). */
    if ((st = gguf_get_f64_or(f, "llama.rope.freq_base", 10000.0, &hp->rope_theta, err)) ||
        (st = gguf_get_f64_or(f, "llama.attention.layer_norm_rms_epsilon", 1e-5, &hp->rms_eps,
                              err)))
        return st;
    if (!(hp->rope_theta > 0) || !(hp->rms_eps > 0) || !isfinite(hp->rope_theta))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: rope freq_base / rms epsilon must be "
                              "positive", f->path);

    const gguf_value *tokens;
    if ((st = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_T_STRING, &tokens, err))) return st;
    if ((st = gguf_get_u64_or(f, "llama.vocab_size", tokens->arr.n, &u, err))) return st;
    if (u != tokens->arr.n || u == 0 || u > (uint64_t)big)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: key 'llama.vocab_size' = %llu but tokenizer.ggml.tokens has "
                              "%llu entries", f->path, (unsigned long long)u,
                              (unsigned long long)tokens->arr.n);
    hp->n_vocab = (int64_t)u;
    if ((st = get_id(f, "tokenizer.ggml.bos_token_id", hp->n_vocab, &hp->bos_id, err)) ||
        (st = get_id(f, "tokenizer.ggml.eos_token_id", hp->n_vocab, &hp->eos_id, err)) ||
        (st = get_id(f, "tokenizer.ggml.unknown_token_id", hp->n_vocab, &hp->unk_id, err)) ||
        (st = get_id(f, "tokenizer.ggml.padding_token_id", hp->n_vocab, &hp->pad_id, err)))
        return st;
    hp->tied = gguf_find_tensor(f, "output.weight") == NULL;
    return TINFER_OK;
}

bool conv_hf_name(const char *g, const conv_hparams *hp, char *out, size_t cap,
                  int64_t *qk_heads) {
    static const struct { const char *gguf, *hf; int qk; } glob[] = {
        {"token_embd.weight", "model.embed_tokens.weight", 0},
        {"output_norm.weight", "model.norm.weight", 0},
        {"output.weight", "lm_head.weight", 0},
    };
    static const struct { const char *gguf, *hf; int qk; } blk[] = {
        {"attn_norm.weight", "input_layernorm.weight", 0},
        {"attn_q.weight", "self_attn.q_proj.weight", 1},
        {"attn_k.weight", "self_attn.k_proj.weight", 2},
        {"attn_v.weight", "self_attn.v_proj.weight", 0},
        {"attn_output.weight", "self_attn.o_proj.weight", 0},
        {"ffn_norm.weight", "post_attention_layernorm.weight", 0},
        {"ffn_gate.weight", "mlp.gate_proj.weight", 0},
        {"ffn_up.weight", "mlp.up_proj.weight", 0},
        {"ffn_down.weight", "mlp.down_proj.weight", 0},
    };
    *qk_heads = 0;
    for (size_t i = 0; i < sizeof glob / sizeof glob[0]; i++)
        if (strcmp(g, glob[i].gguf) == 0) return snprintf(out, cap, "%s", glob[i].hf) < (int)cap;
    if (strncmp(g, "blk.", 4) != 0) return false;
    const char *p = g + 4;
    char *end;
    errno = 0;
    if (*p < '0' || *p > '9') return false;
    long layer = strtol(p, &end, 10);
    if (errno || *end != '.' || layer >= hp->n_layer || (end - p > 1 && *p == '0')) return false;
    for (size_t i = 0; i < sizeof blk / sizeof blk[0]; i++) {
        if (strcmp(end + 1, blk[i].gguf) == 0) {
            *qk_heads = blk[i].qk == 1 ? hp->n_head : blk[i].qk == 2 ? hp->n_head_kv : 0;
            return snprintf(out, cap, "model.layers.%ld.%s", layer, blk[i].hf) < (int)cap;
        }
    }
    return false;
}

double conv_f32_shortest(double v) {
    float x = (float)v;
    char buf[48];
    for (int p = 1; p <= 9; p++) { /* 9 significant digits always round-trip a float32 */
        snprintf(buf, sizeof buf, "%.*g", p, (double)x);
        if (strtof(buf, NULL) == x) return strtod(buf, NULL);
    }
    return (double)x;
}

tinfer_status conv_write_text(const char *dir, const char *name, const char *text,
                              tinfer_err *err) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "%s: path too long", dir);
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return tinfer_err_set(err, TINFER_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    size_t n = strlen(text);
    bool ok = fwrite(text, 1, n, fp) == n && fputc('\n', fp) != EOF;
    ok = (fclose(fp) == 0) && ok;
    if (!ok) return tinfer_err_set(err, TINFER_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return TINFER_OK;
}

static tinfer_status write_json(const char *dir, const char *name, cJSON *root, tinfer_err *err) {
    char *s = cJSON_Print(root);
    if (!s) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s/%s: JSON printing failed",
                                  dir, name);
    tinfer_status st = conv_write_text(dir, name, s, err);
    cJSON_free(s);
    return st;
}

static void add_id(cJSON *o, const char *key, int64_t id) {
    if (id >= 0) cJSON_AddNumberToObject(o, key, (double)id);
    else cJSON_AddNullToObject(o, key);
}

tinfer_status conv_write_config(const gguf_file *f, const conv_hparams *hp, const conv_opts *o,
                                const char *dir, tinfer_err *err) {
    const bool f32 = o->f32;
    cJSON *c = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString("LlamaForCausalLM"));
    cJSON_AddStringToObject(c, "model_type", "llama");
    cJSON_AddNumberToObject(c, "hidden_size", (double)hp->n_embd);
    cJSON_AddNumberToObject(c, "intermediate_size", (double)hp->n_ff);
    cJSON_AddNumberToObject(c, "num_hidden_layers", (double)hp->n_layer);
    cJSON_AddNumberToObject(c, "num_attention_heads", (double)hp->n_head);
    cJSON_AddNumberToObject(c, "num_key_value_heads", (double)hp->n_head_kv);
    cJSON_AddNumberToObject(c, "head_dim", (double)hp->head_dim);
    cJSON_AddNumberToObject(c, "max_position_embeddings", (double)hp->n_ctx);
    cJSON_AddNumberToObject(c, "rms_norm_eps", conv_f32_shortest(hp->rms_eps));
    cJSON_AddNumberToObject(c, "rope_theta", conv_f32_shortest(hp->rope_theta));
    cJSON_AddNullToObject(c, "rope_scaling");
    cJSON_AddNumberToObject(c, "vocab_size", (double)hp->n_vocab);
    cJSON_AddBoolToObject(c, "tie_word_embeddings", hp->tied && !(o->q8 && o->q8_lm_head));
    cJSON_AddStringToObject(c, "hidden_act", "silu");
    cJSON_AddBoolToObject(c, "attention_bias", false);
    cJSON_AddBoolToObject(c, "mlp_bias", false);
    add_id(c, "bos_token_id", hp->bos_id);
    add_id(c, "eos_token_id", hp->eos_id);
    if (hp->pad_id >= 0) add_id(c, "pad_token_id", hp->pad_id);
    cJSON_AddStringToObject(c, "torch_dtype", f32 ? "float32" : "bfloat16");
    cJSON_AddBoolToObject(c, "use_cache", true);
    if (o->q8) { /* the tensors' dtypes say which are Q8_0; the list names the rest */
        cJSON *q = cJSON_AddObjectToObject(c, "quantization_config");
        cJSON_AddStringToObject(q, "quant_method", "q8_0");
        cJSON_AddNumberToObject(q, "group_size", 32);
        cJSON *m = cJSON_AddArrayToObject(q, "modules_not_quantized");
        const char *keep[] = {"model.embed_tokens", "input_layernorm", "post_attention_layernorm",
                              "model.norm", "lm_head"};
        for (int i = 0; i < (o->q8_lm_head ? 4 : 5); i++)
            cJSON_AddItemToArray(m, cJSON_CreateString(keep[i]));
    }
    tinfer_status st = write_json(dir, "config.json", c, err);
    cJSON_Delete(c);
    if (st) return st;

    cJSON *g = cJSON_CreateObject();
    add_id(g, "bos_token_id", hp->bos_id);
    add_id(g, "eos_token_id", hp->eos_id);
    if (hp->pad_id >= 0) add_id(g, "pad_token_id", hp->pad_id);
    /* Sampling defaults only when the GGUF carries them (general.sampling.*, llama.cpp
     * gguf-py constants Keys.General.SAMPLING_*). */
    static const struct { const char *key, *hf; } samp[] = {
        {"general.sampling.temp", "temperature"},
        {"general.sampling.top_p", "top_p"},
        {"general.sampling.top_k", "top_k"},
        {"general.sampling.min_p", "min_p"},
    };
    bool any = false;
    for (size_t i = 0; i < sizeof samp / sizeof samp[0]; i++) {
        if (!gguf_find(f, samp[i].key)) continue;
        double v;
        if ((st = gguf_get_f64_or(f, samp[i].key, 0, &v, err))) break;
        cJSON_AddNumberToObject(g, samp[i].hf, conv_f32_shortest(v));
        any = true;
    }
    if (any && !st) cJSON_AddBoolToObject(g, "do_sample", true);
    if (!st) st = write_json(dir, "generation_config.json", g, err);
    cJSON_Delete(g);
    return st;
}

typedef enum { ENT_PLAIN, ENT_Q8_VALUES, ENT_Q8_SCALES } ent_kind;

typedef struct st_entry {
    char name[140];
    const gguf_tensor *t;
    int64_t qk_heads;
    ent_kind kind;
    size_t begin, end;
} st_entry;

/* Output element size of an entry. */
static size_t ent_esize(const st_entry *e, bool f32) {
    return e->kind == ENT_Q8_VALUES ? 1 : e->kind == ENT_Q8_SCALES ? 2 : f32 ? 4 : 2;
}

/* Sizes that are multiples of 64 first (each stays 64-byte aligned), then by element size,
 * largest first (each stays aligned to its element), then by name. */
static bool g_cmp_f32;
static int cmp_layout(const void *a, const void *b) {
    const st_entry *x = a, *y = b;
    bool ax = (x->end - x->begin) % 64 == 0, ay = (y->end - y->begin) % 64 == 0;
    if (ax != ay) return ax ? -1 : 1;
    size_t ex = ent_esize(x, g_cmp_f32), ey = ent_esize(y, g_cmp_f32);
    if (ex != ey) return ex > ey ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const st_entry *)a)->name, ((const st_entry *)b)->name);
}

/* Appends printf output to a growing buffer; false on out of memory. */
static bool buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (n < 0) return false;
        if ((size_t)n < *cap - *len) {
            *len += (size_t)n;
            return true;
        }
        size_t nc = *cap * 2 + (size_t)n + 1;
        char *nb = realloc(*buf, nc);
        if (!nb) return false;
        *buf = nb;
        *cap = nc;
    }
}

/* Checks a tensor's shape against the hyper-parameters: a wrong shape here would only show up as
 * garbage text later. */
static tinfer_status check_shape(const gguf_file *f, const conv_hparams *hp, const st_entry *e,
                                 tinfer_err *err) {
    const gguf_tensor *t = e->t;
    int64_t want0 = 0, want1 = 0; /* 0 = 1-D */
    const char *n = e->name;
    int64_t q = hp->n_head * hp->head_dim, kv = hp->n_head_kv * hp->head_dim;
    if (strstr(n, "embed_tokens") || strstr(n, "lm_head")) want0 = hp->n_embd, want1 = hp->n_vocab;
    else if (strstr(n, "layernorm") || strcmp(n, "model.norm.weight") == 0) want0 = hp->n_embd;
    else if (strstr(n, "q_proj")) want0 = hp->n_embd, want1 = q;
    else if (strstr(n, "k_proj") || strstr(n, "v_proj")) want0 = hp->n_embd, want1 = kv;
    else if (strstr(n, "o_proj")) want0 = q, want1 = hp->n_embd;
    else if (strstr(n, "gate_proj") || strstr(n, "up_proj")) want0 = hp->n_embd, want1 = hp->n_ff;
    else if (strstr(n, "down_proj")) want0 = hp->n_ff, want1 = hp->n_embd;
    bool ok = want1 ? (t->n_dims == 2 && t->ne[0] == want0 && t->ne[1] == want1)
                    : (t->n_dims == 1 && t->ne[0] == want0);
    if (!ok) {
        char got[128] = "", want[64];
        size_t n = 0;
        for (uint32_t d = 0; d < t->n_dims && n < sizeof got; d++)
            n += (size_t)snprintf(got + n, sizeof got - n, "%s%lld", d ? ", " : "",
                                  (long long)t->ne[d]);
        if (want1) snprintf(want, sizeof want, "%lld, %lld", (long long)want0, (long long)want1);
        else snprintf(want, sizeof want, "%lld", (long long)want0);
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: tensor '%s': GGUF shape ne=[%s], expected ne=[%s]", f->path,
                              t->name, got, want);
    }
    if (!quant_supported(t->type)) {
        const char *tn = "?";
        gguf_type_info(t->type, NULL, NULL, &tn);
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: unsupported ggml type %u (%s) for tensor '%s'", f->path,
                              t->type, tn, t->name);
    }
    return TINFER_OK;
}

/* One row of a tensor as Q8_0: the GGUF's own blocks when it is Q8_0, else dequantized (every
 * value finite) and quantized. row: scratch of ne0 floats. */
static tinfer_status q8_row(const gguf_file *f, const gguf_tensor *t, int64_t src, int8_t *q,
                            uint16_t *d, float *row, tinfer_err *err) {
    int64_t be, nb = t->ne[0] / 32;
    size_t bb;
    gguf_type_info(t->type, &be, &bb, NULL);
    const uint8_t *p = t->data + (size_t)src * (size_t)(t->ne[0] / be) * bb;
    if (t->type == GGML_T_Q8_0) {
        for (int64_t b = 0; b < nb; b++) {
            memcpy(&d[b], p + 34 * b, 2);
            memcpy(q + 32 * b, p + 34 * b + 2, 32);
        }
        return TINFER_OK;
    }
    quant_dequantize(t->type, p, t->ne[0], row);
    for (int64_t b = 0; b < nb; b++)
        if (!tinfer_q8_0_quantize_block(row + 32 * b, q + 32 * b, &d[b]))
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: tensor '%s': row %lld block %lld cannot be Q8_0 (a value "
                                  "is not finite or its scale exceeds F16)",
                                  f->path, t->name, (long long)src, (long long)b);
    return TINFER_OK;
}

tinfer_status conv_write_safetensors(const gguf_file *f, const conv_hparams *hp,
                                     const conv_opts *o, const char *path, tinfer_err *err) {
    tinfer_status st = TINFER_OK;
    const bool f32 = o->f32;
    /* each tensor at most 2 entries, plus a Q8_0 copy of a tied head */
    size_t cap_e = 2 * (size_t)f->n_tensors + 2;
    st_entry *ents = calloc(cap_e, sizeof *ents);
    char *hdr = NULL;
    float *row = NULL;
    void *orow = NULL;
    FILE *fp = NULL;
    if (!ents) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    size_t max_row = 1, ne = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        st_entry *e = &ents[ne];
        e->t = &f->tensors[i];
        if (!conv_hf_name(e->t->name, hp, e->name, sizeof e->name, &e->qk_heads)) {
            st = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                "%s: tensor '%s': no HF Llama equivalent", f->path, e->t->name);
            goto done;
        }
        if ((st = check_shape(f, hp, e, err))) goto done;
        if (e->qk_heads && e->t->ne[1] != e->qk_heads * hp->head_dim) {
            st = tinfer_err_set(err, TINFER_ERR_INTERNAL, "%s: tensor '%s': rows != heads*hd",
                                f->path, e->t->name);
            goto done;
        }
        if ((size_t)e->t->ne[0] > max_row) max_row = (size_t)e->t->ne[0];
        bool is_head = !strcmp(e->name, "lm_head.weight"), is_embd = strstr(e->name, "embed_tokens");
        bool q8 = o->q8 && e->t->n_dims == 2 && e->t->ne[0] % 32 == 0 && !is_embd &&
                  (!is_head || o->q8_lm_head);
        ne++;
        if (q8) {
            e->kind = ENT_Q8_VALUES;
            ents[ne] = *e;
            ents[ne].kind = ENT_Q8_SCALES;
            size_t nl = strlen(e->name); /* HF names are < 64 bytes (conv_hf_name) */
            memcpy(ents[ne].name + nl, "_scale", 7);
            ne++;
        }
        if (is_embd && hp->tied && o->q8 && o->q8_lm_head && e->t->ne[0] % 32 == 0) {
            for (int k = 0; k < 2; k++) { /* the tied head as its own Q8_0 tensor */
                ents[ne] = *e;
                ents[ne].kind = k ? ENT_Q8_SCALES : ENT_Q8_VALUES;
                snprintf(ents[ne].name, sizeof ents[ne].name, "%s", k ? "lm_head.weight_scale"
                                                                      : "lm_head.weight");
                ne++;
            }
        }
    }
    for (size_t i = 0; i < ne; i++) {
        const gguf_tensor *t = ents[i].t;
        size_t n = (size_t)t->ne[0] * (size_t)(t->n_dims == 1 ? 1 : t->ne[1]);
        if (ents[i].kind == ENT_Q8_SCALES) n /= 32;
        ents[i].begin = 0;
        ents[i].end = n * ent_esize(&ents[i], f32); /* bounded by hparams */
    }
    qsort(ents, ne, sizeof *ents, cmp_entry);
    for (size_t i = 1; i < ne; i++)
        if (strcmp(ents[i - 1].name, ents[i].name) == 0) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: two tensors map to '%s'", f->path,
                                ents[i].name);
            goto done;
        }
    g_cmp_f32 = f32;
    qsort(ents, ne, sizeof *ents, cmp_layout);
    size_t off = 0;
    for (size_t i = 0; i < ne; i++) {
        size_t nb = ents[i].end - ents[i].begin;
        ents[i].begin = off;
        off += nb;
        ents[i].end = off;
    }

    size_t len = 0, cap = 1 << 16;
    hdr = malloc(cap);
    bool ok = hdr && buf_printf(&hdr, &len, &cap, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (size_t i = 0; ok && i < ne; i++) {
        const st_entry *e = &ents[i];
        const char *dt = e->kind == ENT_Q8_VALUES ? "I8" : e->kind == ENT_Q8_SCALES ? "F16"
                         : f32                     ? "F32"
                                                   : "BF16";
        ok = buf_printf(&hdr, &len, &cap, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", e->name, dt);
        if (ok && e->t->n_dims == 1) ok = buf_printf(&hdr, &len, &cap, "%lld", (long long)e->t->ne[0]);
        else if (ok)
            ok = buf_printf(&hdr, &len, &cap, "%lld,%lld", (long long)e->t->ne[1],
                            (long long)(e->kind == ENT_Q8_SCALES ? e->t->ne[0] / 32 : e->t->ne[0]));
        if (ok)
            ok = buf_printf(&hdr, &len, &cap, "],\"data_offsets\":[%zu,%zu]}", e->begin, e->end);
    }
    if (ok) ok = buf_printf(&hdr, &len, &cap, "}");
    while (ok && (8 + len) % 64 != 0) ok = buf_printf(&hdr, &len, &cap, " ");
    if (!ok) {
        st = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }

    fp = fopen(path, "wb");
    if (!fp) {
        st = tinfer_err_set(err, TINFER_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
        goto done;
    }
    setvbuf(fp, NULL, _IOFBF, 1 << 22);
    uint64_t hlen = len; /* little-endian host asserted in gguf.c */
    row = malloc(max_row * sizeof *row);
    orow = malloc(max_row * 4 + max_row / 32 * 2 + 64); /* F32 row, or Q8_0 values + scales */
    if (!row || !orow) {
        st = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
    ok = fwrite(&hlen, 8, 1, fp) == 1 && fwrite(hdr, 1, len, fp) == len;
    for (size_t i = 0; ok && i < ne; i++) {
        const st_entry *e = &ents[i];
        const gguf_tensor *t = e->t;
        int64_t be;
        size_t bb;
        gguf_type_info(t->type, &be, &bb, NULL);
        size_t row_bytes = (size_t)(t->ne[0] / be) * bb;
        int64_t rows = t->n_dims == 1 ? 1 : t->ne[1];
        for (int64_t r = 0; ok && r < rows; r++) {
            int64_t src = e->qk_heads ? quant_qk_src_row(r, hp->head_dim) : r;
            if (e->kind != ENT_PLAIN) {
                int8_t *q = orow;
                uint16_t *d = (uint16_t *)(void *)((char *)orow + max_row + 32);
                if ((st = q8_row(f, t, src, q, d, row, err))) goto done;
                ok = e->kind == ENT_Q8_VALUES
                         ? fwrite(q, 1, (size_t)t->ne[0], fp) == (size_t)t->ne[0]
                         : fwrite(d, 2, (size_t)t->ne[0] / 32, fp) == (size_t)t->ne[0] / 32;
                continue;
            }
            quant_dequantize(t->type, t->data + (size_t)src * row_bytes, t->ne[0], row);
            for (int64_t k = 0; k < t->ne[0]; k++) {
                if (!isfinite(row[k])) {
                    st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                        "%s: tensor '%s': non-finite value at row %lld col %lld",
                                        f->path, t->name, (long long)src, (long long)k);
                    goto done;
                }
            }
            size_t esize = f32 ? 4 : 2;
            if (f32) {
                memcpy(orow, row, (size_t)t->ne[0] * 4);
            } else {
                uint16_t *ob = orow;
                for (int64_t k = 0; k < t->ne[0]; k++) ob[k] = tinfer_f32_to_bf16(row[k]);
            }
            ok = fwrite(orow, esize, (size_t)t->ne[0], fp) == (size_t)t->ne[0];
        }
    }
    if (!ok) {
        st = tinfer_err_set(err, TINFER_ERR_IO, "%s: write failed: %s", path, strerror(errno));
        goto done;
    }
    ok = fclose(fp) == 0;
    fp = NULL;
    if (!ok) st = tinfer_err_set(err, TINFER_ERR_IO, "%s: write failed: %s", path, strerror(errno));
done:
    if (fp) fclose(fp);
    free(ents);
    free(hdr);
    free(row);
    free(orow);
    return st;
}

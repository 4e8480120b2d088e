/*
 * hf_tokenizer.c — tokenizer.json and tokenizer_config.json from GGUF tokenizer metadata.
 *
 * Only byte-level BPE (tokenizer.ggml.model = "gpt2") is handled. The JSON follows the layout HF
 * `tokenizers` serializes: added_tokens = every control (3) or
 * user-defined (4) token; the pre-tokenizer is chosen from tokenizer.ggml.pre the way llama.cpp's
 * llama-vocab.cpp maps those names to regexes:
 *   smollm          -> Sequence[Digits(individual), ByteLevel(use_regex)]
 *   gpt2 / absent   -> ByteLevel(use_regex)
 *   llama-bpe/llama3-> Sequence[Split(P3, Isolated), ByteLevel(no regex)], ignore_merges true
 * BOS is added by a TemplateProcessing post-processor only when tokenizer.ggml.add_bos_token.
 * The vocab object is built in id order (cJSON keeps insertion order). Every string must be valid
 * UTF-8 without NUL (cJSON would otherwise emit invalid JSON).
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"

/* Llama-3 pre-tokenizer regex (from transformers
 * convert_llama_weights_to_hf.py). */
static const char LLAMA3_PATTERN[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static bool utf8_valid(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        uint32_t cp;
        if (c == 0) return false;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
        else return false;
        if (n - i < len) return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        /* overlong, surrogate or out of range */
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

/* NUL-terminated copy of a GGUF string, checked. */
static char *dup_checked(const gguf_file *f, const char *key, uint64_t idx, gguf_str s,
                         tinfer_status *st, tinfer_err *err) {
    if (!utf8_valid((const unsigned char *)s.ptr, (size_t)s.len)) {
        *st = tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s': entry %llu is not valid UTF-8",
                             f->path, key, (unsigned long long)idx);
        return NULL;
    }
    char *c = malloc((size_t)s.len + 1);
    if (!c) {
        *st = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
        return NULL;
    }
    memcpy(c, s.ptr, (size_t)s.len);
    c[s.len] = 0;
    return c;
}

static cJSON *byte_level(bool add_prefix_space, bool trim_offsets, bool use_regex) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "ByteLevel");
    cJSON_AddBoolToObject(o, "add_prefix_space", add_prefix_space);
    cJSON_AddBoolToObject(o, "trim_offsets", trim_offsets);
    cJSON_AddBoolToObject(o, "use_regex", use_regex);
    return o;
}

static int cmp_strp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

tinfer_status conv_write_tokenizer(const gguf_file *f, const conv_hparams *hp, const char *dir,
                                   tinfer_err *err) {
    tinfer_status st = TINFER_OK;
    char *model = NULL, *pre = NULL, *tmpl = NULL, **tok = NULL;
    const gguf_value *tokens = NULL, *types = NULL, *merges = NULL;
    cJSON *root = NULL, *cfg = NULL;
    bool add_bos = false;
    int64_t n = hp->n_vocab;

    if ((st = gguf_get_str(f, "tokenizer.ggml.model", true, &model, err))) goto done;
    if (strcmp(model, "gpt2") != 0) {
        st = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                            "%s: tokenizer.ggml.model '%.64s' not supported (only gpt2 byte-level "
                            "BPE)", f->path, model);
        goto done;
    }
    if ((st = gguf_get_str(f, "tokenizer.ggml.pre", false, &pre, err))) goto done;
    const char *pre_name = pre ? pre : "default";
    bool smollm = strcmp(pre_name, "smollm") == 0;
    bool gpt2 = strcmp(pre_name, "gpt2") == 0 || strcmp(pre_name, "default") == 0;
    bool llama3 = strcmp(pre_name, "llama-bpe") == 0 || strcmp(pre_name, "llama3") == 0;
    if (!smollm && !gpt2 && !llama3) {
        st = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                            "%s: tokenizer.ggml.pre '%.64s' not supported (smollm, gpt2, "
                            "llama-bpe)", f->path, pre_name);
        goto done;
    }
    if ((st = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_T_STRING, &tokens, err)) ||
        (st = gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_T_STRING, &merges, err)))
        goto done;
    if (gguf_find(f, "tokenizer.ggml.token_type")) {
        if ((st = gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_T_I32, &types, err))) goto done;
        if (types->arr.n != (uint64_t)n) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: key 'tokenizer.ggml.token_type' has %llu entries, vocab %lld",
                                f->path, (unsigned long long)types->arr.n, (long long)n);
            goto done;
        }
    }
    if ((st = gguf_get_bool_or(f, "tokenizer.ggml.add_bos_token", false, &add_bos, err)))
        goto done;
    if (add_bos && hp->bos_id < 0) {
        st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                            "%s: tokenizer.ggml.add_bos_token is set but there is no bos id",
                            f->path);
        goto done;
    }

    tok = calloc((size_t)n, sizeof *tok);
    if (!tok) {
        st = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
        goto done;
    }
    for (int64_t i = 0; i < n; i++)
        if (!(tok[i] = dup_checked(f, "tokenizer.ggml.tokens", (uint64_t)i,
                                   tokens->arr.items[i].str, &st, err)))
            goto done;
    {
        /* A JSON object cannot hold a token twice: reject instead of silently losing an id. */
        char **sorted = malloc((size_t)n * sizeof *sorted);
        if (!sorted) {
            st = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
            goto done;
        }
        memcpy(sorted, tok, (size_t)n * sizeof *sorted);
        qsort(sorted, (size_t)n, sizeof *sorted, cmp_strp);
        for (int64_t i = 1; i < n && !st; i++)
            if (strcmp(sorted[i - 1], sorted[i]) == 0)
                st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                    "%s: key 'tokenizer.ggml.tokens': token '%.64s' appears twice",
                                    f->path, sorted[i]);
        free(sorted);
        if (st) goto done;
    }

    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    for (int64_t i = 0; types && i < n; i++) {
        int64_t ty = gguf_arr_int(types, (uint64_t)i);
        if (ty != 3 && ty != 4) continue; /* llama.cpp LLAMA_TOKEN_TYPE_CONTROL / USER_DEFINED */
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", (double)i);
        cJSON_AddStringToObject(a, "content", tok[i]);
        cJSON_AddBoolToObject(a, "single_word", false);
        cJSON_AddBoolToObject(a, "lstrip", false);
        cJSON_AddBoolToObject(a, "rstrip", false);
        cJSON_AddBoolToObject(a, "normalized", false);
        cJSON_AddBoolToObject(a, "special", true);
        cJSON_AddItemToArray(added, a);
    }
    cJSON_AddNullToObject(root, "normalizer");

    if (gpt2) {
        cJSON_AddItemToObject(root, "pre_tokenizer", byte_level(false, true, true));
    } else {
        cJSON *seq = cJSON_AddObjectToObject(root, "pre_tokenizer");
        cJSON_AddStringToObject(seq, "type", "Sequence");
        cJSON *list = cJSON_AddArrayToObject(seq, "pretokenizers");
        cJSON *first = cJSON_CreateObject();
        if (smollm) {
            cJSON_AddStringToObject(first, "type", "Digits");
            cJSON_AddBoolToObject(first, "individual_digits", true);
        } else {
            cJSON_AddStringToObject(first, "type", "Split");
            cJSON *pat = cJSON_AddObjectToObject(first, "pattern");
            cJSON_AddStringToObject(pat, "Regex", LLAMA3_PATTERN);
            cJSON_AddStringToObject(first, "behavior", "Isolated");
            cJSON_AddBoolToObject(first, "invert", false);
        }
        cJSON_AddItemToArray(list, first);
        cJSON_AddItemToArray(list, byte_level(false, true, smollm));
    }

    if (add_bos) {
        cJSON *seq = cJSON_AddObjectToObject(root, "post_processor");
        cJSON_AddStringToObject(seq, "type", "Sequence");
        cJSON *list = cJSON_AddArrayToObject(seq, "processors");
        cJSON_AddItemToArray(list, byte_level(true, false, true));
        cJSON *tp = cJSON_CreateObject();
        cJSON_AddStringToObject(tp, "type", "TemplateProcessing");
        const char *bos = tok[hp->bos_id];
        for (int pair = 0; pair < 2; pair++) {
            cJSON *arr = cJSON_AddArrayToObject(tp, pair ? "pair" : "single");
            for (int s = 0; s <= pair; s++) {
                cJSON *sp = cJSON_CreateObject(), *spi = cJSON_AddObjectToObject(sp, "SpecialToken");
                cJSON_AddStringToObject(spi, "id", bos);
                cJSON_AddNumberToObject(spi, "type_id", s);
                cJSON_AddItemToArray(arr, sp);
                cJSON *sq = cJSON_CreateObject(), *sqi = cJSON_AddObjectToObject(sq, "Sequence");
                cJSON_AddStringToObject(sqi, "id", s ? "B" : "A");
                cJSON_AddNumberToObject(sqi, "type_id", s);
                cJSON_AddItemToArray(arr, sq);
            }
        }
        cJSON *sts = cJSON_AddObjectToObject(tp, "special_tokens");
        cJSON *b = cJSON_AddObjectToObject(sts, bos);
        cJSON_AddStringToObject(b, "id", bos);
        cJSON *ids = cJSON_AddArrayToObject(b, "ids");
        cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)hp->bos_id));
        cJSON *toks = cJSON_AddArrayToObject(b, "tokens");
        cJSON_AddItemToArray(toks, cJSON_CreateString(bos));
        cJSON_AddItemToArray(list, tp);
    } else {
        cJSON_AddItemToObject(root, "post_processor", byte_level(true, false, true));
    }
    cJSON_AddItemToObject(root, "decoder", byte_level(true, true, true));

    cJSON *m = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(m, "type", "BPE");
    cJSON_AddNullToObject(m, "dropout");
    cJSON_AddNullToObject(m, "unk_token");
    cJSON_AddNullToObject(m, "continuing_subword_prefix");
    cJSON_AddNullToObject(m, "end_of_word_suffix");
    cJSON_AddBoolToObject(m, "fuse_unk", false);
    cJSON_AddBoolToObject(m, "byte_fallback", false);
    cJSON_AddBoolToObject(m, "ignore_merges", llama3);
    cJSON *vocab = cJSON_AddObjectToObject(m, "vocab");
    for (int64_t i = 0; i < n; i++) cJSON_AddNumberToObject(vocab, tok[i], (double)i);
    cJSON *ml = cJSON_AddArrayToObject(m, "merges");
    for (uint64_t i = 0; i < merges->arr.n; i++) {
        gguf_str s = merges->arr.items[i].str;
        char *c = dup_checked(f, "tokenizer.ggml.merges", i, s, &st, err);
        if (!c) goto done;
        const char *sp = strchr(c, ' ');
        if (!sp || sp == c || sp[1] == 0 || strchr(sp + 1, ' ')) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: key 'tokenizer.ggml.merges': entry %llu '%.64s' is not "
                                "\"a b\"", f->path, (unsigned long long)i, c);
            free(c);
            goto done;
        }
        cJSON_AddItemToArray(ml, cJSON_CreateString(c));
        free(c);
    }
    {
        char *s = cJSON_PrintUnformatted(root);
        if (!s) {
            st = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: JSON printing failed", dir);
            goto done;
        }
        st = conv_write_text(dir, "tokenizer.json", s, err);
        cJSON_free(s);
        if (st) goto done;
    }

    if ((st = gguf_get_str(f, "tokenizer.chat_template", false, &tmpl, err))) goto done;
    if (tmpl && !utf8_valid((const unsigned char *)tmpl, strlen(tmpl))) {
        st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                            "%s: key 'tokenizer.chat_template' is not valid UTF-8", f->path);
        goto done;
    }
    cfg = cJSON_CreateObject();
    cJSON_AddBoolToObject(cfg, "add_bos_token", add_bos);
    cJSON_AddBoolToObject(cfg, "add_prefix_space", false);
    static const char *names[] = {"bos_token", "eos_token", "unk_token", "pad_token"};
    const int64_t ids[] = {hp->bos_id, hp->eos_id, hp->unk_id, hp->pad_id};
    for (int i = 0; i < 4; i++) {
        if (ids[i] >= 0) cJSON_AddStringToObject(cfg, names[i], tok[ids[i]]);
        else cJSON_AddNullToObject(cfg, names[i]);
    }
    if (tmpl) cJSON_AddStringToObject(cfg, "chat_template", tmpl);
    cJSON_AddBoolToObject(cfg, "clean_up_tokenization_spaces", false);
    cJSON_AddNumberToObject(cfg, "model_max_length", (double)hp->n_ctx);
    cJSON_AddStringToObject(cfg, "tokenizer_class", "GPT2Tokenizer");
    {
        char *s = cJSON_Print(cfg);
        if (!s) {
            st = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: JSON printing failed", dir);
            goto done;
        }
        st = conv_write_text(dir, "tokenizer_config.json", s, err);
        cJSON_free(s);
    }
done:
    if (tok)
        for (int64_t i = 0; i < n; i++) free(tok[i]);
    free(tok);
    free(model);
    free(pre);
    free(tmpl);
    cJSON_Delete(root);
    cJSON_Delete(cfg);
    return st;
}

/*
 * tokenizer_pipeline.c — the normalizer, pre-tokenizer and post-processor sections of an HF
 * tokenizer.json (tokenizer_internal.h): regexes compiled with PCRE2, \s rewritten to
 * Oniguruma's set.
 */
#include "tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* GPT-2 pre-tokenizer regex (pre_tokenizers/byte_level.rs), used by ByteLevel with
 * use_regex true. \s is rewritten like every other pattern (see rewrite_ws). */
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* Oniguruma's \s: U+0009-000D, U+0085, Zs, Zl, Zp (kkos/oniguruma doc/RE). PCRE2+UCP also
 * matches U+180E, hence the rewrite (TOKENIZER_NOTES §4). */
#define WS_SET "\\t\\n\\x{0B}\\f\\r\\x{85}\\p{Z}"

/* Rewrites \s / \S so PCRE2 matches Oniguruma's whitespace set (TOKENIZER_NOTES §4). */
static tinfer_status rewrite_ws(const tinfer_tokenizer *t, const char *pat, char **out,
                                tinfer_err *err) {
    size_t n = strlen(pat);
    char *o = malloc(n * 32 + 1); /* each char grows to at most sizeof("[^" WS_SET "]") */
    if (!o) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    size_t k = 0;
    bool in_class = false;
    for (size_t i = 0; i < n; i++) {
        char c = pat[i];
        if (c == '\\' && i + 1 < n) {
            char e = pat[++i];
            if (e == 's' || e == 'S') {
                const char *rep;
                if (!in_class)
                    rep = e == 's' ? "[" WS_SET "]" : "[^" WS_SET "]";
                else if (e == 's')
                    rep = WS_SET;
                else {
                    free(o);
                    return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                          "%s: regex '%s': \\S inside a character class is not "
                                          "supported",
                                          t->label, pat);
                }
                size_t rl = strlen(rep);
                memcpy(o + k, rep, rl);
                k += rl;
            } else {
                o[k++] = '\\';
                o[k++] = e;
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            o[k++] = c;
            if (i + 1 < n && pat[i + 1] == '^') o[k++] = pat[++i];
            if (i + 1 < n && pat[i + 1] == ']') o[k++] = pat[++i]; /* leading ] is literal */
            continue;
        }
        if (in_class && c == ']') in_class = false;
        o[k++] = c;
    }
    o[k] = 0;
    *out = o;
    return TINFER_OK;
}

static tinfer_status compile_re(const tinfer_tokenizer *t, const char *pat, bool literal,
                                const char *key, pcre2_code **out, tinfer_err *err) {
    char *p = NULL;
    if (!literal) {
        tinfer_status st = rewrite_ws(t, pat, &p, err);
        if (st) return st;
    }
    int ec;
    PCRE2_SIZE eo;
    /* PCRE2_LITERAL refuses PCRE2_UCP (pcre2_compile docs); a literal needs no classes */
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)(literal ? pat : p), PCRE2_ZERO_TERMINATED, opts, &ec, &eo, NULL);
    free(p);
    if (!re) {
        PCRE2_UCHAR msg[128];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: %s: regex '%s' does not compile at offset %zu: %s", t->label,
                              key, pat, (size_t)eo, (const char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* failure just means the interpreter runs */
    *out = re;
    return TINFER_OK;
}

static tinfer_status add_step(tinfer_tokenizer *t, pretok_step s, tinfer_err *err) {
    pretok_step *ns = realloc(t->steps, (size_t)(t->n_steps + 1) * sizeof *ns);
    if (!ns) {
        if (s.re) pcre2_code_free(s.re);
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    }
    t->steps = ns;
    t->steps[t->n_steps++] = s;
    return TINFER_OK;
}

tinfer_status tok_parse_pretok(tinfer_tokenizer *t, const cJSON *p, const char *key,
                               tinfer_err *err) {
    if (!p || cJSON_IsNull(p)) return TINFER_OK;
    const char *type = jstr(p, "type");
    if (!type)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: %s: missing \"type\"", t->label, key);
    if (t->byte_level && strcmp(type, "Digits") != 0)
        /* ByteLevel maps bytes to chars in place; a later regex would see the mapped text,
         * which no released tokenizer does. */
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: %s: pre_tokenizer type '%s' after ByteLevel is not supported",
                              t->label, key, type);
    if (strcmp(type, "Sequence") == 0) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(p, "pretokenizers");
        if (!cJSON_IsArray(arr))
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: %s.pretokenizers: missing or not an array", t->label, key);
        int i = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, arr) {
            char sub[96];
            snprintf(sub, sizeof sub, "%s.pretokenizers[%d]", key, i++);
            tinfer_status st = tok_parse_pretok(t, c, sub, err);
            if (st) return st;
        }
        return TINFER_OK;
    }
    pretok_step s = {0};
    if (strcmp(type, "ByteLevel") == 0) {
        s.add_prefix_space = jbool(p, "add_prefix_space", true);
        s.behavior = SPLIT_ISOLATED;
        if (jbool(p, "use_regex", true)) {
            tinfer_status st = compile_re(t, GPT2_PATTERN, false, key, &s.re, err);
            if (st) return st;
        }
        t->byte_level = true;
        return add_step(t, s, err);
    }
    if (strcmp(type, "Digits") == 0) {
        /* Rust char::is_numeric = Nd|Nl|No = \p{N}; individual -> Isolated per char, else
         * Contiguous, which equals isolating maximal runs. */
        bool indiv = jbool(p, "individual_digits", false);
        s.behavior = SPLIT_ISOLATED;
        tinfer_status st = compile_re(t, indiv ? "\\p{N}" : "\\p{N}+", false, key, &s.re, err);
        if (st) return st;
        return add_step(t, s, err);
    }
    if (strcmp(type, "Split") == 0) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern");
        const char *rx = pat ? jstr(pat, "Regex") : NULL;
        const char *lit = pat ? jstr(pat, "String") : NULL;
        if (!rx && !lit)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: %s.pattern: expected {\"Regex\": ...} or {\"String\": ...}",
                                  t->label, key);
        const char *beh = jstr(p, "behavior");
        if (!beh)
            return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: %s.behavior: missing", t->label,
                                  key);
        static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious",
                                            "MergedWithNext", "Contiguous"};
        s.behavior = -1;
        for (int i = 0; i < 5; i++)
            if (strcmp(beh, names[i]) == 0) s.behavior = i;
        if (s.behavior < 0)
            return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                  "%s: %s.behavior '%s' is not supported", t->label, key, beh);
        s.invert = jbool(p, "invert", false);
        char sub[96];
        snprintf(sub, sizeof sub, "%s.pattern", key);
        tinfer_status st = compile_re(t, rx ? rx : lit, !rx, sub, &s.re, err);
        if (st) return st;
        return add_step(t, s, err);
    }
    return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "%s: %s type '%s' is not supported",
                          t->label, key, type);
}

static tinfer_status append_ids(tinfer_tokenizer *t, int32_t **arr, int32_t *n, const int32_t *ids,
                                int32_t k, bool front, tinfer_err *err) {
    if (k == 0) return TINFER_OK;
    int32_t *na = realloc(*arr, (size_t)(*n + k + 1) * sizeof *na);
    if (!na) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    if (front) {
        memmove(na + k, na, (size_t)*n * sizeof *na);
        memcpy(na, ids, (size_t)k * sizeof *na);
    } else {
        memcpy(na + *n, ids, (size_t)k * sizeof *na);
    }
    *arr = na;
    *n += k;
    return TINFER_OK;
}

/* TemplateProcessing "single": [SpecialToken{id}..., Sequence{A}, SpecialToken...]. Applied
 * after any processors before it in a Sequence, so its tokens wrap theirs. */
static tinfer_status parse_template(tinfer_tokenizer *t, const cJSON *p, const char *key,
                                    tinfer_err *err) {
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(p, "single");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(p, "special_tokens");
    if (!cJSON_IsArray(single))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: %s.single: missing or not an array",
                              t->label, key);
    int32_t *pre = NULL, *post = NULL, npre = 0, npost = 0;
    bool seen_a = false;
    tinfer_status st = TINFER_OK;
    const cJSON *it;
    cJSON_ArrayForEach(it, single) {
        const cJSON *stok = cJSON_GetObjectItemCaseSensitive(it, "SpecialToken");
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(it, "Sequence");
        if (seq) {
            const char *sid = jstr(seq, "id");
            if (!sid || strcmp(sid, "A") != 0) {
                st = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                    "%s: %s.single: only sequence A is supported", t->label, key);
                break;
            }
            seen_a = true;
            continue;
        }
        const char *name = stok ? jstr(stok, "id") : NULL;
        if (!name) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: %s.single: item is neither SpecialToken nor Sequence",
                                t->label, key);
            break;
        }
        const cJSON *def = cJSON_GetObjectItemCaseSensitive(sp, name);
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(def, "ids");
        if (!cJSON_IsArray(ids)) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: %s.special_tokens[\"%s\"].ids: missing", t->label, key, name);
            break;
        }
        const cJSON *x;
        cJSON_ArrayForEach(x, ids) {
            if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= t->n_ids) {
                st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                    "%s: %s.special_tokens[\"%s\"].ids: id out of range", t->label,
                                    key, name);
                break;
            }
            int32_t id = (int32_t)x->valuedouble;
            st = seen_a ? append_ids(t, &post, &npost, &id, 1, false, err)
                        : append_ids(t, &pre, &npre, &id, 1, false, err);
            if (st) break;
        }
        if (st) break;
    }
    if (!st) st = append_ids(t, &t->post_pre, &t->n_post_pre, pre, npre, true, err);
    if (!st) st = append_ids(t, &t->post_post, &t->n_post_post, post, npost, false, err);
    free(pre);
    free(post);
    return st;
}

tinfer_status tok_parse_post(tinfer_tokenizer *t, const cJSON *p, const char *key,
                             tinfer_err *err) {
    if (!p || cJSON_IsNull(p)) return TINFER_OK;
    const char *type = jstr(p, "type");
    if (!type)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: %s: missing \"type\"", t->label, key);
    if (strcmp(type, "ByteLevel") == 0) return TINFER_OK; /* offsets only, never ids */
    if (strcmp(type, "TemplateProcessing") == 0) return parse_template(t, p, key, err);
    if (strcmp(type, "Sequence") == 0) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(p, "processors");
        if (!cJSON_IsArray(arr))
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: %s.processors: missing or not an array", t->label, key);
        int i = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, arr) {
            char sub[96];
            snprintf(sub, sizeof sub, "%s.processors[%d]", key, i++);
            tinfer_status st = tok_parse_post(t, c, sub, err);
            if (st) return st;
        }
        return TINFER_OK;
    }
    return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "%s: %s type '%s' is not supported",
                          t->label, key, type);
}

tinfer_status tok_parse_normalizer(tinfer_tokenizer *t, const cJSON *p, const char *key,
                                   tinfer_err *err) {
    if (!p || cJSON_IsNull(p)) return TINFER_OK;
    const char *type = jstr(p, "type");
    if (!type)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: %s: missing \"type\"", t->label, key);
    if (strcmp(type, "NFC") == 0) {
        t->nfc = true;
        return TINFER_OK;
    }
    if (strcmp(type, "Sequence") == 0) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(p, "normalizers");
        if (!cJSON_IsArray(arr))
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: %s.normalizers: missing or not an array", t->label, key);
        int i = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, arr) {
            char sub[96];
            snprintf(sub, sizeof sub, "%s.normalizers[%d]", key, i++);
            tinfer_status st = tok_parse_normalizer(t, c, sub, err);
            if (st) return st;
        }
        return TINFER_OK;
    }
    return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "%s: %s type '%s' is not supported",
                          t->label, key, type);
}

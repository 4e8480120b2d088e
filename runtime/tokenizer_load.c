/*
 * tokenizer_load.c — loading an HF tokenizer.json (model vocab and merges, added tokens, decoder;
 * the pipeline sections through tokenizer_pipeline.c) and tokenizer_config.json.
 */
#include "tokenizer_internal.h"
#include "textfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------------------------------- */
/* Loading                                                                                  */

static tinfer_status blob_add(tinfer_tokenizer *t, const char *s, size_t n, uint32_t *off,
                              tinfer_err *err) {
    if (t->blob_len + n + 1 > t->blob_cap) {
        size_t cap = t->blob_cap ? t->blob_cap * 2 : 1 << 16;
        while (cap < t->blob_len + n + 1)
            cap *= 2;
        if (cap > UINT32_MAX)
            return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: token strings exceed 4 GiB",
                                  t->label);
        char *nb = realloc(t->blob, cap);
        if (!nb)
            return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
        t->blob = nb;
        t->blob_cap = cap;
    }
    memcpy(t->blob + t->blob_len, s, n);
    t->blob[t->blob_len + n] = 0;
    *off = (uint32_t)t->blob_len;
    t->blob_len += n + 1;
    return TINFER_OK;
}

static tinfer_status ensure_ids(tinfer_tokenizer *t, int32_t n, tinfer_err *err) {
    if (n <= t->n_ids) return TINFER_OK;
    size_t m = (size_t)n;
    uint32_t *vo = realloc(t->vocab_off, m * sizeof *vo);
    if (vo) t->vocab_off = vo;
    int32_t *vl = realloc(t->vocab_len, m * sizeof *vl);
    if (vl) t->vocab_len = vl;
    uint32_t *po = realloc(t->piece_off, m * sizeof *po);
    if (po) t->piece_off = po;
    int32_t *pl = realloc(t->piece_len, m * sizeof *pl);
    if (pl) t->piece_len = pl;
    int32_t *ao = realloc(t->added_of, m * sizeof *ao);
    if (ao) t->added_of = ao;
    if (!vo || !vl || !po || !pl || !ao)
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    for (int32_t i = t->n_ids; i < n; i++) {
        vo[i] = po[i] = 0;
        vl[i] = pl[i] = ao[i] = -1;
    }
    t->n_ids = n;
    return TINFER_OK;
}

static tinfer_status parse_vocab(tinfer_tokenizer *t, const cJSON *vocab, tinfer_err *err) {
    if (!cJSON_IsObject(vocab))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: model.vocab: missing or not an object",
                              t->label);
    int32_t n = 0, max_id = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= TOK_MAX_ID ||
            e->valuedouble != (double)(int32_t)e->valuedouble)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: model.vocab[\"%s\"]: id is not an integer in [0, %d)",
                                  t->label, e->string, TOK_MAX_ID);
        if ((int32_t)e->valuedouble > max_id) max_id = (int32_t)e->valuedouble;
        n++;
    }
    tinfer_status st = ensure_ids(t, max_id + 1, err);
    if (st) return st;
    uint32_t cap = 1024;
    while (cap < (uint32_t)n * 2)
        cap *= 2;
    t->vhash = calloc(cap, sizeof *t->vhash);
    if (!t->vhash)
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    t->vmask = cap - 1;
    cJSON_ArrayForEach(e, vocab) {
        int32_t id = (int32_t)e->valuedouble;
        size_t len = strlen(e->string);
        if (t->vocab_len[id] >= 0)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: model.vocab[\"%s\"]: id %d already used by \"%s\"", t->label,
                                  e->string, id, t->blob + t->vocab_off[id]);
        if (vocab_get(t, e->string, len) >= 0)
            return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: model.vocab: duplicate key \"%s\"",
                                  t->label, e->string);
        st = blob_add(t, e->string, len, &t->vocab_off[id], err);
        if (st) return st;
        t->vocab_len[id] = (int32_t)len;
        uint64_t h = hash_bytes(e->string, len) & t->vmask;
        while (t->vhash[h])
            h = (h + 1) & t->vmask;
        t->vhash[h] = (uint32_t)id + 1;
    }
    return TINFER_OK;
}

static tinfer_status merge_tok(tinfer_tokenizer *t, int32_t i, const char *s, size_t n, int32_t *id,
                               tinfer_err *err) {
    *id = vocab_get(t, s, n);
    if (*id < 0)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: model.merges[%d]: token \"%.*s\" is not in model.vocab",
                              t->label, i, (int)n, s);
    return TINFER_OK;
}

static tinfer_status parse_merges(tinfer_tokenizer *t, const cJSON *merges, tinfer_err *err) {
    if (!merges || cJSON_IsNull(merges)) return TINFER_OK;
    if (!cJSON_IsArray(merges))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: model.merges: not an array", t->label);
    int32_t n = cJSON_GetArraySize(merges);
    uint32_t cap = 1024;
    while (cap < (uint32_t)n * 2)
        cap *= 2;
    t->mhash = calloc(cap, sizeof *t->mhash);
    if (!t->mhash)
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    t->mmask = cap - 1;
    size_t plen = t->cprefix ? strlen(t->cprefix) : 0;
    char *buf = NULL;
    size_t bcap = 0;
    tinfer_status st = TINFER_OK;
    int32_t rank = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, merges) {
        const char *a, *b;
        size_t al, bl;
        if (cJSON_IsString(m)) {
            /* "a b": exactly two space-separated parts (models/bpe/serialization.rs) */
            a = m->valuestring;
            const char *sp = strchr(a, ' ');
            if (!sp || strchr(sp + 1, ' ')) {
                st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                    "%s: model.merges[%d]: \"%s\" is not two space-separated "
                                    "tokens",
                                    t->label, rank, a);
                break;
            }
            al = (size_t)(sp - a);
            b = sp + 1;
            bl = strlen(b);
        } else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(m, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(m, 1))) {
            a = cJSON_GetArrayItem(m, 0)->valuestring;
            b = cJSON_GetArrayItem(m, 1)->valuestring;
            al = strlen(a);
            bl = strlen(b);
        } else {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: model.merges[%d]: expected \"a b\" or [\"a\", \"b\"]",
                                t->label, rank);
            break;
        }
        int32_t ia, ib, in;
        if ((st = merge_tok(t, rank, a, al, &ia, err))) break;
        if ((st = merge_tok(t, rank, b, bl, &ib, err))) break;
        size_t skip = (plen && bl >= plen && memcmp(b, t->cprefix, plen) == 0) ? plen : 0;
        if (al + bl + 1 > bcap) {
            bcap = (al + bl + 1) * 2;
            char *nb = realloc(buf, bcap);
            if (!nb) {
                st = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
                break;
            }
            buf = nb;
        }
        memcpy(buf, a, al);
        memcpy(buf + al, b + skip, bl - skip);
        if ((st = merge_tok(t, rank, buf, al + bl - skip, &in, err))) break;
        uint64_t key = ((uint64_t)(uint32_t)(ia + 1) << 32) | (uint32_t)(ib + 1);
        uint64_t h = hash_u64(key) & t->mmask;
        while (t->mhash[h].key && t->mhash[h].key != key)
            h = (h + 1) & t->mmask;
        /* a repeated pair keeps the later rank, as HF's HashMap collect does */
        t->mhash[h] = (merge_slot){key, rank, in};
        rank++;
    }
    free(buf);
    t->n_merges = rank;
    return st;
}

/* Decoded bytes of a token string under the ByteLevel decoder (or raw without it). */
static tinfer_status set_piece(tinfer_tokenizer *t, int32_t id, const char *s, size_t n,
                               tinfer_err *err) {
    char *tmp = malloc(n + 1);
    if (!tmp) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    size_t k = 0;
    bool all = t->byte_level;
    for (size_t i = 0; all && i < n;) {
        size_t adv;
        uint32_t cp;
        if (tok_utf8_scan((const unsigned char *)s + i, n - i, &adv) != 1) {
            all = false;
            break;
        }
        utf8_cp((const unsigned char *)s + i, &cp);
        if (cp >= 0x144 || tok_bl.byte_of_cp[cp] < 0)
            all = false;
        else
            tmp[k++] = (char)tok_bl.byte_of_cp[cp];
        i += adv;
    }
    if (!all) {
        memcpy(tmp, s, n);
        k = n;
    }
    tinfer_status st = blob_add(t, tmp, k, &t->piece_off[id], err);
    free(tmp);
    if (!st) t->piece_len[id] = (int32_t)k;
    return st;
}

static tinfer_status parse_added(tinfer_tokenizer *t, const cJSON *arr, tinfer_err *err) {
    if (!arr || cJSON_IsNull(arr)) return TINFER_OK;
    if (!cJSON_IsArray(arr))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: added_tokens: not an array", t->label);
    int32_t n = cJSON_GetArraySize(arr);
    t->added = calloc((size_t)n + 1, sizeof *t->added);
    if (!t->added)
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    const cJSON *e;
    int32_t i = 0;
    cJSON_ArrayForEach(e, arr) {
        const cJSON *jid = cJSON_GetObjectItemCaseSensitive(e, "id");
        const char *content = jstr(e, "content");
        if (!cJSON_IsNumber(jid) || jid->valuedouble < 0 || jid->valuedouble >= TOK_MAX_ID)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: added_tokens[%d].id: missing or out of range", t->label, i);
        if (!content || !*content)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: added_tokens[%d].content: missing or empty", t->label, i);
        int32_t id = (int32_t)jid->valuedouble;
        size_t len = strlen(content);
        int32_t vid = vocab_get(t, content, len);
        if (vid >= 0 && vid != id)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: added_tokens[%d]: \"%s\" has id %d but model.vocab says %d",
                                  t->label, i, content, id, vid);
        tinfer_status st = ensure_ids(t, id + 1, err);
        if (st) return st;
        if (t->added_of[id] >= 0)
            return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: added_tokens[%d]: id %d repeated",
                                  t->label, i, id);
        added_token *a = &t->added[i];
        a->id = id;
        a->content = tok_dupstr(content);
        if (!a->content)
            return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
        a->len = len;
        a->special = jbool(e, "special", false);
        a->lstrip = jbool(e, "lstrip", false);
        a->rstrip = jbool(e, "rstrip", false);
        a->single_word = jbool(e, "single_word", false);
        a->normalized = jbool(e, "normalized", !a->special);
        t->added_of[id] = i;
        t->n_added = ++i;
    }
    /* first-byte index, longest first: the first candidate that matches is the longest */
    t->first_idx = malloc(((size_t)n + 1) * sizeof *t->first_idx);
    if (!t->first_idx)
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    int32_t k = 0;
    bool any_single = false;
    for (int b = 0; b < 256; b++) {
        t->first_start[b] = k;
        int32_t s = k;
        for (int32_t j = 0; j < t->n_added; j++)
            if ((unsigned char)t->added[j].content[0] == b) t->first_idx[k++] = j;
        /* insertion sort by length, longest first (stable: file order among equals) */
        for (int32_t x = s + 1; x < k; x++) {
            int32_t v = t->first_idx[x], y = x;
            for (; y > s && t->added[t->first_idx[y - 1]].len < t->added[v].len; y--)
                t->first_idx[y] = t->first_idx[y - 1];
            t->first_idx[y] = v;
        }
    }
    t->first_start[256] = k;
    for (int32_t j = 0; j < t->n_added; j++)
        any_single |= t->added[j].single_word;
    if (any_single) {
        /* Rust regex \w: Alphabetic, M, Nd, Pc (added_vocabulary.rs ends_with_word) */
        int ec;
        PCRE2_SIZE eo;
        t->word_re = pcre2_compile((PCRE2_SPTR) "[\\p{L}\\p{Nl}\\p{M}\\p{Nd}\\p{Pc}]",
                                   PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
        if (!t->word_re)
            return tinfer_err_set(err, TINFER_ERR_INTERNAL, "%s: \\w regex failed", t->label);
    }
    return TINFER_OK;
}

static tinfer_status parse_model(tinfer_tokenizer *t, const cJSON *model, tinfer_err *err) {
    if (!cJSON_IsObject(model))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: model: missing or not an object",
                              t->label);
    const char *type = jstr(model, "type");
    if (type && strcmp(type, "BPE") != 0)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: model type '%s' is not supported (only BPE)", t->label, type);
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (cJSON_IsNumber(dropout) && dropout->valuedouble > 0)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "%s: model.dropout %g is not supported",
                              t->label, dropout->valuedouble);
    const char *pre = jstr(model, "continuing_subword_prefix");
    const char *suf = jstr(model, "end_of_word_suffix");
    if (pre && *pre && !(t->cprefix = tok_dupstr(pre)))
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    if (suf && *suf && !(t->esuffix = tok_dupstr(suf)))
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    t->fuse_unk = jbool(model, "fuse_unk", false);
    t->byte_fallback = jbool(model, "byte_fallback", false);
    t->ignore_merges = jbool(model, "ignore_merges", false);
    tinfer_status st = parse_vocab(t, cJSON_GetObjectItemCaseSensitive(model, "vocab"), err);
    if (st) return st;
    const char *unk = jstr(model, "unk_token");
    t->unk_id = -1;
    if (unk && (t->unk_id = vocab_get(t, unk, strlen(unk))) < 0)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: model.unk_token \"%s\" is not in model.vocab", t->label, unk);
    return parse_merges(t, cJSON_GetObjectItemCaseSensitive(model, "merges"), err);
}

static tinfer_status parse_decoder(tinfer_tokenizer *t, const cJSON *d, tinfer_err *err) {
    if (!d || cJSON_IsNull(d)) return TINFER_OK;
    const char *type = jstr(d, "type");
    if (type && strcmp(type, "ByteLevel") == 0) return TINFER_OK;
    return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "%s: decoder type '%s' is not supported",
                          t->label, type ? type : "(missing)");
}

tinfer_status tinfer_tokenizer_load_json(const char *json, size_t len, const char *label,
                                         tinfer_tokenizer **out, tinfer_err *err) {
    if (!out) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "tokenizer: out is NULL");
    *out = NULL;
    if (!label) label = "tokenizer.json";
    if (!json) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "%s: json is NULL", label);
    tok_bl_init();
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) {
        const char *ep = cJSON_GetErrorPtr();
        size_t at = (ep && ep >= json && ep <= json + len) ? (size_t)(ep - json) : 0;
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: not valid JSON (near byte %zu)", label,
                              at);
    }
    tinfer_tokenizer *t = calloc(1, sizeof *t);
    tinfer_status st = TINFER_OK;
    if (!t || !(t->label = tok_dupstr(label))) {
        free(t);
        cJSON_Delete(root);
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    }
    if (!cJSON_IsObject(root)) {
        st = tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: top level is not a JSON object", label);
        goto done;
    }
    if ((st = parse_model(t, cJSON_GetObjectItemCaseSensitive(root, "model"), err))) goto done;
    if ((st = parse_added(t, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), err)))
        goto done;
    if ((st = tok_parse_normalizer(t, cJSON_GetObjectItemCaseSensitive(root, "normalizer"),
                                   "normalizer", err)))
        goto done;
    if ((st = tok_parse_pretok(t, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"),
                               "pre_tokenizer", err)))
        goto done;
    if ((st = tok_parse_post(t, cJSON_GetObjectItemCaseSensitive(root, "post_processor"),
                             "post_processor", err)))
        goto done;
    if ((st = parse_decoder(t, cJSON_GetObjectItemCaseSensitive(root, "decoder"), err))) goto done;
    for (int32_t id = 0; id < t->n_ids && !st; id++) {
        if (t->added_of[id] >= 0) {
            const added_token *a = &t->added[t->added_of[id]];
            st = set_piece(t, id, a->content, a->len, err);
        } else if (t->vocab_len[id] >= 0) {
            st = set_piece(t, id, t->blob + t->vocab_off[id], (size_t)t->vocab_len[id], err);
        }
    }
    if (st) goto done;
    for (int b = 0; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        t->byte_tok[b] = vocab_get(t, s, strlen(s));
    }
    for (uint32_t cp = 0; cp < 0x200; cp++) {
        char s[2];
        size_t n = 1;
        if (cp < 0x80)
            s[0] = (char)cp;
        else {
            s[0] = (char)(0xC0 | (cp >> 6));
            s[1] = (char)(0x80 | (cp & 0x3F));
            n = 2;
        }
        t->cp_tok[cp] = vocab_get(t, s, n);
    }
done:
    cJSON_Delete(root);
    if (st) {
        tinfer_tokenizer_free(t);
        return st;
    }
    *out = t;
    return TINFER_OK;
}

/* tokenizer.json of real models is up to ~10-20 MB (Llama-3's is 9 MB); 1 GiB bounds a hostile
 * file without refusing any real one. */
#define TOK_MAX_FILE_BYTES ((size_t)1 << 30)

/* Reads path whole; an optional file that does not exist gives TINFER_OK with *data NULL. */
static tinfer_status read_file(const char *path, bool optional, char **data, size_t *len,
                               tinfer_err *err) {
    bool missing;
    tinfer_status st = tinfer_read_text_file(path, TOK_MAX_FILE_BYTES, data, len, &missing, err);
    if (missing)
        return optional ? TINFER_OK
                        : tinfer_err_set(err, TINFER_ERR_IO, "%s: cannot open: %s", path,
                                         strerror(ENOENT));
    return st;
}

static tinfer_status dup_token_text(const cJSON *v, char **out) {
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    if (!cJSON_IsString(v)) return TINFER_OK;
    *out = tok_dupstr(v->valuestring);
    return *out ? TINFER_OK : TINFER_ERR_OUT_OF_MEMORY;
}

/* tokenizer_config.json: chat_template (string, or [{name, template}] -> "default"),
 * bos_token, eos_token. chat_template.jinja is the newer home of the template. */
static tinfer_status load_config(tinfer_tokenizer *t, const char *dir, tinfer_err *err) {
    size_t dl = strlen(dir);
    char *path = malloc(dl + 32);
    if (!path) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
    snprintf(path, dl + 32, "%s/tokenizer_config.json", dir);
    char *data;
    size_t len;
    tinfer_status st = read_file(path, true, &data, &len, err);
    if (st || !data) goto jinja;
    cJSON *root = cJSON_ParseWithLength(data, len);
    free(data);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        st = tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: not a valid JSON object", path);
        goto out;
    }
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
    if (cJSON_IsArray(ct)) {
        const cJSON *e, *pick = NULL;
        cJSON_ArrayForEach(e, ct) {
            const char *name = jstr(e, "name");
            if (name && strcmp(name, "default") == 0) pick = cJSON_GetObjectItem(e, "template");
        }
        ct = pick;
    }
    if (cJSON_IsString(ct) && !(t->chat_template = tok_dupstr(ct->valuestring)))
        st = TINFER_ERR_OUT_OF_MEMORY;
    if (!st) st = dup_token_text(cJSON_GetObjectItemCaseSensitive(root, "bos_token"), &t->bos_text);
    if (!st) st = dup_token_text(cJSON_GetObjectItemCaseSensitive(root, "eos_token"), &t->eos_text);
    cJSON_Delete(root);
    if (st) {
        st = tinfer_err_set(err, st, "%s: out of memory", path);
        goto out;
    }
jinja:
    if (!st && !t->chat_template) {
        snprintf(path, dl + 32, "%s/chat_template.jinja", dir);
        st = read_file(path, true, &data, &len, err);
        if (!st && data) t->chat_template = data;
    }
out:
    free(path);
    return st;
}

tinfer_status tinfer_tokenizer_load(const char *dir, tinfer_tokenizer **out, tinfer_err *err) {
    if (!out) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "tokenizer: out is NULL");
    *out = NULL;
    if (!dir) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "tokenizer: dir is NULL");
    size_t dl = strlen(dir);
    char *path = malloc(dl + 32);
    if (!path) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
    snprintf(path, dl + 32, "%s/tokenizer.json", dir);
    char *data;
    size_t len;
    tinfer_status st = read_file(path, false, &data, &len, err);
    if (!st) {
        tinfer_tokenizer *t = NULL;
        st = tinfer_tokenizer_load_json(data, len, path, &t, err);
        free(data);
        if (!st) st = load_config(t, dir, err);
        if (st)
            tinfer_tokenizer_free(t);
        else
            *out = t;
    }
    free(path);
    return st;
}

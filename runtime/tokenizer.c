/*
 * tokenizer.c — loading an HF tokenizer.json (byte-level BPE) and encoding text with it.
 *
 * Spec: huggingface/tokenizers (Rust), the library HF checkpoints are tokenized with. Encode
 * follows its order exactly:
 *   1. invalid UTF-8 -> U+FFFD per maximal invalid subsequence (tokenizers only takes str);
 *   2. added tokens with normalized:false cut out of the raw text, leftmost-longest, resuming
 *      after each match (an Aho-Corasick LeftmostLongest scan in HF; here a first-byte index
 *      with candidates sorted longest first, which gives the same matches);
 *   3. the normalizer on the rest (only null, or NFC on text NFC cannot change), then the
 *      normalized:true added tokens;
 *   4. the pre-tokenizer steps (Split / Digits / ByteLevel, in a Sequence) over every piece,
 *      empty pieces dropped after each split; regexes run in PCRE2 with \s rewritten to
 *      Oniguruma's set (the reference engine of tokenizers);
 *   5. BPE per piece: one symbol per char, then repeatedly the adjacent pair of lowest merge rank
 *      (leftmost among equals) via a binary min-heap on (rank, position), as models/bpe/word.rs;
 *   6. the post-processor's BOS/EOS when TINFER_TOKENIZE_ADD_SPECIAL.
 * Decoding (piece bytes) applies the ByteLevel decoder rule to every token, added ones too: a
 * token whose chars are all in the byte table gives those bytes, otherwise its raw UTF-8.
 *
 * Constraints: the tokenizer is immutable after load (thread-safe); each encode call allocates
 * its own scratch. Token ids must lie in [0, TOK_MAX_ID].
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer.h"
#include "textfile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ids above this are treated as a malformed file: the largest real vocabularies (Gemma) are
 * ~262k tokens, and per-id arrays are sized by the largest id. */
#define TOK_MAX_ID (1 << 24)

/* GPT-2 pre-tokenizer regex (pre_tokenizers/byte_level.rs), used by ByteLevel with
 * use_regex true. \s is rewritten like every other pattern (see rewrite_ws). */
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* Oniguruma's \s: U+0009-000D, U+0085, Zs, Zl, Zp (kkos/oniguruma doc/RE). PCRE2+UCP also
 * matches U+180E, hence the rewrite (TOKENIZER_NOTES §4). */
#define WS_SET "\\t\\n\\x{0B}\\f\\r\\x{85}\\p{Z}"

enum split_behavior { SPLIT_REMOVED, SPLIT_ISOLATED, SPLIT_MERGED_PREV, SPLIT_MERGED_NEXT,
                      SPLIT_CONTIGUOUS };

typedef struct pretok_step {
    pcre2_code *re;     /* NULL: ByteLevel without regex (only the prefix space) */
    int behavior;       /* enum split_behavior */
    bool invert;
    bool add_prefix_space; /* ByteLevel only */
} pretok_step;

typedef struct added_token {
    int32_t id;
    char *content;
    size_t len;
    bool special, lstrip, rstrip, single_word, normalized;
} added_token;

typedef struct merge_slot {
    uint64_t key; /* ((a+1) << 32) | (b+1); 0 = empty */
    int32_t rank, new_id;
} merge_slot;

struct tinfer_tokenizer {
    char *label;
    int32_t n_ids; /* max id + 1 */

    /* string blob: model vocab keys, then piece bytes */
    char *blob;
    size_t blob_len, blob_cap;
    uint32_t *vocab_off; /* [n_ids] model vocab key of the id */
    int32_t *vocab_len;  /* [n_ids] -1: id not in model vocab */
    uint32_t *piece_off; /* [n_ids] decoded bytes of the id */
    int32_t *piece_len;  /* [n_ids] -1: id unassigned */
    int32_t *added_of;   /* [n_ids] index into added[], -1 if not an added token */

    uint32_t *vhash; /* open addressing, id+1 per slot, 0 empty */
    uint32_t vmask;
    merge_slot *mhash;
    uint32_t mmask;
    int32_t n_merges;

    /* BPE options */
    int32_t unk_id; /* -1 none */
    bool fuse_unk, byte_fallback, ignore_merges;
    char *cprefix, *esuffix; /* NULL when absent or "" */
    int32_t byte_tok[256];   /* id of "<0xXX>", -1 if absent */
    int32_t cp_tok[0x200];   /* id of the single char U+0000..U+01FF, -1 if absent */

    added_token *added;
    int32_t n_added;
    int32_t *first_idx; /* added indices grouped by first byte, each group longest first */
    int32_t first_start[257];
    pcre2_code *word_re; /* \w test for single_word tokens; NULL when none is single_word */

    bool nfc;
    pretok_step *steps;
    int32_t n_steps;
    bool byte_level; /* a ByteLevel pre-tokenizer maps bytes to chars */

    int32_t *post_pre, *post_post; /* ids added before / after the sequence (ADD_SPECIAL) */
    int32_t n_post_pre, n_post_post;

    char *chat_template, *bos_text, *eos_text;
};

/* ---------------------------------------------------------------------------------------- */
/* Byte-level table (GPT-2 bytes_to_unicode, TOKENIZER_NOTES §1)                            */

static uint16_t bl_cp_of_byte(unsigned b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) return (uint16_t)b;
    /* the other 68 bytes in ascending order -> U+0100 + n */
    unsigned n = 0;
    for (unsigned x = 0; x < b; x++)
        if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE))) n++;
    return (uint16_t)(0x100 + n);
}

typedef struct bl_tables {
    uint16_t cp[256];
    unsigned char utf8[256][2];
    uint8_t utf8_len[256];
    int16_t byte_of_cp[0x144]; /* -1: not in table */
} bl_tables;

static bl_tables g_bl;
static bool g_bl_ready;

static void bl_init(void) {
    /* Idempotent and deterministic: concurrent first calls write identical values. */
    if (g_bl_ready) return;
    for (int i = 0; i < 0x144; i++) g_bl.byte_of_cp[i] = -1;
    for (unsigned b = 0; b < 256; b++) {
        uint16_t cp = bl_cp_of_byte(b);
        g_bl.cp[b] = cp;
        g_bl.byte_of_cp[cp] = (int16_t)b;
        if (cp < 0x80) {
            g_bl.utf8[b][0] = (unsigned char)cp;
            g_bl.utf8_len[b] = 1;
        } else {
            g_bl.utf8[b][0] = (unsigned char)(0xC0 | (cp >> 6));
            g_bl.utf8[b][1] = (unsigned char)(0x80 | (cp & 0x3F));
            g_bl.utf8_len[b] = 2;
        }
    }
    g_bl_ready = true;
}

/* ---------------------------------------------------------------------------------------- */
/* UTF-8                                                                                    */

/* Classifies the sequence at s[0..n): 1 = valid, *adv its length; 0 = invalid, *adv the length
 * of the maximal invalid subpart (>= 1); -1 = a valid prefix cut by the end of the buffer, *adv
 * its length. Well-formed sequences per Unicode Table 3-7. */
static int utf8_scan(const unsigned char *s, size_t n, size_t *adv) {
    unsigned c = s[0];
    if (c < 0x80) {
        *adv = 1;
        return 1;
    }
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        else if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        else if (c == 0xF4) hi = 0x8F;
    } else {
        *adv = 1;
        return 0;
    }
    for (size_t k = 1; k <= need; k++) {
        if (k >= n) {
            *adv = k;
            return -1;
        }
        unsigned b = s[k];
        if (b < lo || b > hi) {
            *adv = k;
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    *adv = need + 1;
    return 1;
}

size_t tinfer_utf8_lossy(const unsigned char *in, size_t n, bool hold_tail, char *out,
                         size_t *held) {
    size_t i = 0, o = 0;
    if (held) *held = 0;
    while (i < n) {
        size_t adv;
        int r = utf8_scan(in + i, n - i, &adv);
        if (r == 1) {
            if (out) memcpy(out + o, in + i, adv);
            o += adv;
        } else {
            if (r < 0 && hold_tail) {
                if (held) *held = adv;
                break;
            }
            if (out) memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
        }
        i += adv;
    }
    return o;
}

static bool utf8_valid(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t adv;
        if (utf8_scan(s + i, n - i, &adv) != 1) return false;
        i += adv;
    }
    return true;
}

/* Decodes one code point of valid UTF-8; returns its byte length. */
static size_t utf8_cp(const unsigned char *s, uint32_t *cp) {
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if (s[0] < 0xE0) {
        *cp = ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
        return 2;
    }
    if (s[0] < 0xF0) {
        *cp = ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        return 3;
    }
    *cp = ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
          ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    return 4;
}

/* Length of the UTF-8 char ending at s[end-1] (s valid). */
static size_t utf8_prev_len(const unsigned char *s, size_t end) {
    size_t k = 1;
    while (k < end && k < 4 && (s[end - k] & 0xC0) == 0x80) k++;
    return k;
}

/* Rust char::is_whitespace (Unicode White_Space), for added tokens' lstrip/rstrip. */
static bool cp_is_white(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* Code points that NFC leaves unchanged whatever surrounds them: no canonical decomposition,
 * canonical combining class 0 and never the second of a composition pair. Conservative ranges
 * (Unicode 15 UnicodeData.txt); text with anything else is refused when the normalizer is NFC
 * since this runtime has no composition tables. */
static bool cp_nfc_inert(uint32_t c) {
    return c < 0x300 || (c >= 0x2002 && c <= 0x2027) || (c >= 0x2030 && c <= 0x205E) ||
           (c >= 0x3000 && c <= 0x3029) || (c >= 0x3030 && c <= 0x303F) ||
           (c >= 0x3041 && c <= 0x3096) || (c >= 0x30A1 && c <= 0x30FA) ||
           (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0xFF01 && c <= 0xFF5E) || (c >= 0x1F300 && c <= 0x1FAFF);
}

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---------------------------------------------------------------------------------------- */
/* Hashing                                                                                  */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a 64-bit offset basis */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull; /* FNV-1a 64-bit prime */
    }
    return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x) { /* splitmix64 finalizer */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int32_t vocab_get(const tinfer_tokenizer *t, const char *s, size_t n) {
    if (!t->vhash) return -1;
    for (uint64_t h = hash_bytes(s, n) & t->vmask;; h = (h + 1) & t->vmask) {
        uint32_t v = t->vhash[h];
        if (!v) return -1;
        int32_t id = (int32_t)(v - 1);
        if ((size_t)t->vocab_len[id] == n && memcmp(t->blob + t->vocab_off[id], s, n) == 0)
            return id;
    }
}

static const merge_slot *merge_get(const tinfer_tokenizer *t, int32_t a, int32_t b) {
    uint64_t key = ((uint64_t)(uint32_t)(a + 1) << 32) | (uint32_t)(b + 1);
    for (uint64_t h = hash_u64(key) & t->mmask;; h = (h + 1) & t->mmask) {
        const merge_slot *m = &t->mhash[h];
        if (m->key == key) return m;
        if (!m->key) return NULL;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Loading                                                                                  */

static tinfer_status blob_add(tinfer_tokenizer *t, const char *s, size_t n, uint32_t *off,
                              tinfer_err *err) {
    if (t->blob_len + n + 1 > t->blob_cap) {
        size_t cap = t->blob_cap ? t->blob_cap * 2 : 1 << 16;
        while (cap < t->blob_len + n + 1) cap *= 2;
        if (cap > UINT32_MAX)
            return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: token strings exceed 4 GiB",
                                  t->label);
        char *nb = realloc(t->blob, cap);
        if (!nb) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory",
                                       t->label);
        t->blob = nb;
        t->blob_cap = cap;
    }
    memcpy(t->blob + t->blob_len, s, n);
    t->blob[t->blob_len + n] = 0;
    *off = (uint32_t)t->blob_len;
    t->blob_len += n + 1;
    return TINFER_OK;
}

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
                if (!in_class) rep = e == 's' ? "[" WS_SET "]" : "[^" WS_SET "]";
                else if (e == 's') rep = WS_SET;
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
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)(literal ? pat : p), PCRE2_ZERO_TERMINATED, opts,
                                   &ec, &eo, NULL);
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

static bool jbool(const cJSON *o, const char *key, bool dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    return dflt;
}

static const char *jstr(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
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

static tinfer_status parse_pretok(tinfer_tokenizer *t, const cJSON *p, const char *key,
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
            tinfer_status st = parse_pretok(t, c, sub, err);
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
    return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                          "%s: %s type '%s' is not supported", t->label, key, type);
}

static tinfer_status append_ids(tinfer_tokenizer *t, int32_t **arr, int32_t *n,
                                const int32_t *ids, int32_t k, bool front, tinfer_err *err) {
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
                                    "%s: %s.special_tokens[\"%s\"].ids: id out of range",
                                    t->label, key, name);
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

static tinfer_status parse_post(tinfer_tokenizer *t, const cJSON *p, const char *key,
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
            tinfer_status st = parse_post(t, c, sub, err);
            if (st) return st;
        }
        return TINFER_OK;
    }
    return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "%s: %s type '%s' is not supported",
                          t->label, key, type);
}

static tinfer_status parse_normalizer(tinfer_tokenizer *t, const cJSON *p, const char *key,
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
            tinfer_status st = parse_normalizer(t, c, sub, err);
            if (st) return st;
        }
        return TINFER_OK;
    }
    return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "%s: %s type '%s' is not supported",
                          t->label, key, type);
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
    while (cap < (uint32_t)n * 2) cap *= 2;
    t->vhash = calloc(cap, sizeof *t->vhash);
    if (!t->vhash) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory",
                                         t->label);
    t->vmask = cap - 1;
    cJSON_ArrayForEach(e, vocab) {
        int32_t id = (int32_t)e->valuedouble;
        size_t len = strlen(e->string);
        if (t->vocab_len[id] >= 0)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: model.vocab[\"%s\"]: id %d already used by \"%s\"",
                                  t->label, e->string, id, t->blob + t->vocab_off[id]);
        if (vocab_get(t, e->string, len) >= 0)
            return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: model.vocab: duplicate key \"%s\"",
                                  t->label, e->string);
        st = blob_add(t, e->string, len, &t->vocab_off[id], err);
        if (st) return st;
        t->vocab_len[id] = (int32_t)len;
        uint64_t h = hash_bytes(e->string, len) & t->vmask;
        while (t->vhash[h]) h = (h + 1) & t->vmask;
        t->vhash[h] = (uint32_t)id + 1;
    }
    return TINFER_OK;
}

static tinfer_status merge_tok(tinfer_tokenizer *t, int32_t i, const char *s, size_t n,
                               int32_t *id, tinfer_err *err) {
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
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: model.merges: not an array",
                              t->label);
    int32_t n = cJSON_GetArraySize(merges);
    uint32_t cap = 1024;
    while (cap < (uint32_t)n * 2) cap *= 2;
    t->mhash = calloc(cap, sizeof *t->mhash);
    if (!t->mhash) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory",
                                         t->label);
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
                st = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory",
                                    t->label);
                break;
            }
            buf = nb;
        }
        memcpy(buf, a, al);
        memcpy(buf + al, b + skip, bl - skip);
        if ((st = merge_tok(t, rank, buf, al + bl - skip, &in, err))) break;
        uint64_t key = ((uint64_t)(uint32_t)(ia + 1) << 32) | (uint32_t)(ib + 1);
        uint64_t h = hash_u64(key) & t->mmask;
        while (t->mhash[h].key && t->mhash[h].key != key) h = (h + 1) & t->mmask;
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
        if (utf8_scan((const unsigned char *)s + i, n - i, &adv) != 1) {
            all = false;
            break;
        }
        utf8_cp((const unsigned char *)s + i, &cp);
        if (cp >= 0x144 || g_bl.byte_of_cp[cp] < 0) all = false;
        else tmp[k++] = (char)g_bl.byte_of_cp[cp];
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
    if (!t->added) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory",
                                         t->label);
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
        a->content = dupstr(content);
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
    for (int32_t j = 0; j < t->n_added; j++) any_single |= t->added[j].single_word;
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
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: model.dropout %g is not supported", t->label,
                              dropout->valuedouble);
    const char *pre = jstr(model, "continuing_subword_prefix");
    const char *suf = jstr(model, "end_of_word_suffix");
    if (pre && *pre && !(t->cprefix = dupstr(pre)))
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    if (suf && *suf && !(t->esuffix = dupstr(suf)))
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
    bl_init();
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) {
        const char *ep = cJSON_GetErrorPtr();
        size_t at = (ep && ep >= json && ep <= json + len) ? (size_t)(ep - json) : 0;
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: not valid JSON (near byte %zu)",
                              label, at);
    }
    tinfer_tokenizer *t = calloc(1, sizeof *t);
    tinfer_status st = TINFER_OK;
    if (!t || !(t->label = dupstr(label))) {
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
    if ((st = parse_normalizer(t, cJSON_GetObjectItemCaseSensitive(root, "normalizer"),
                               "normalizer", err)))
        goto done;
    if ((st = parse_pretok(t, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"),
                           "pre_tokenizer", err)))
        goto done;
    if ((st = parse_post(t, cJSON_GetObjectItemCaseSensitive(root, "post_processor"),
                         "post_processor", err)))
        goto done;
    if ((st = parse_decoder(t, cJSON_GetObjectItemCaseSensitive(root, "decoder"), err)))
        goto done;
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
        if (cp < 0x80) s[0] = (char)cp;
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
    *out = dupstr(v->valuestring);
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
    if (cJSON_IsString(ct) && !(t->chat_template = dupstr(ct->valuestring))) st = TINFER_ERR_OUT_OF_MEMORY;
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
        if (st) tinfer_tokenizer_free(t);
        else *out = t;
    }
    free(path);
    return st;
}

void tinfer_tokenizer_free(tinfer_tokenizer *t) {
    if (!t) return;
    for (int32_t i = 0; i < t->n_steps; i++) pcre2_code_free(t->steps[i].re);
    free(t->steps);
    for (int32_t i = 0; i < t->n_added; i++) free(t->added[i].content);
    free(t->added);
    free(t->first_idx);
    if (t->word_re) pcre2_code_free(t->word_re);
    free(t->label);
    free(t->blob);
    free(t->vocab_off);
    free(t->vocab_len);
    free(t->piece_off);
    free(t->piece_len);
    free(t->added_of);
    free(t->vhash);
    free(t->mhash);
    free(t->cprefix);
    free(t->esuffix);
    free(t->post_pre);
    free(t->post_post);
    free(t->chat_template);
    free(t->bos_text);
    free(t->eos_text);
    free(t);
}

/* ---------------------------------------------------------------------------------------- */
/* Queries                                                                                  */

int32_t tinfer_tokenizer_n_vocab(const tinfer_tokenizer *t) { return t ? t->n_ids : 0; }

const char *tinfer_tokenizer_piece(const tinfer_tokenizer *t, int32_t id, size_t *len,
                                   bool *is_special) {
    if (!t || id < 0 || id >= t->n_ids || t->piece_len[id] < 0) return NULL;
    if (len) *len = (size_t)t->piece_len[id];
    if (is_special) *is_special = t->added_of[id] >= 0 && t->added[t->added_of[id]].special;
    return t->blob + t->piece_off[id];
}

int32_t tinfer_tokenizer_find(const tinfer_tokenizer *t, const char *s) {
    if (!t || !s) return -1;
    for (int32_t i = 0; i < t->n_added; i++)
        if (strcmp(t->added[i].content, s) == 0) return t->added[i].id;
    return vocab_get(t, s, strlen(s));
}

const char *tinfer_tokenizer_chat_template(const tinfer_tokenizer *t) {
    return t ? t->chat_template : NULL;
}
const char *tinfer_tokenizer_bos_text(const tinfer_tokenizer *t) { return t ? t->bos_text : NULL; }
const char *tinfer_tokenizer_eos_text(const tinfer_tokenizer *t) { return t ? t->eos_text : NULL; }

/* ---------------------------------------------------------------------------------------- */
/* Encoding                                                                                 */

typedef struct span {
    size_t off, len; /* into enc.work */
} span;

typedef struct bpe_sym {
    int32_t id, prev, next;
} bpe_sym;

typedef struct bpe_cand {
    int32_t rank, pos, new_id;
} bpe_cand;

typedef struct enc {
    const tinfer_tokenizer *t;
    tinfer_err *err;
    uint32_t flags;
    int32_t *ids;
    size_t n_ids, cap_ids;
    char *work; /* sanitized text, then prefix-spaced copies of pieces appended */
    size_t work_len, work_cap;
    span *pa, *pb;
    size_t na, nb, cap_a, cap_b;
    span *segs; /* regex split scratch: off,len with len's top bit = is_match */
    size_t cap_segs;
    char *word; /* mapped piece */
    size_t cap_word;
    bpe_sym *sym;
    size_t cap_sym;
    bpe_cand *heap;
    size_t cap_heap;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit;
} enc;

#define GROW(e, ptr, cap, need)                                                                 \
    do {                                                                                       \
        if ((need) > (cap)) {                                                                  \
            size_t nc_ = (cap) ? (cap) * 2 : 64;                                               \
            while (nc_ < (need)) nc_ *= 2;                                                     \
            void *np_ = realloc((ptr), nc_ * sizeof *(ptr));                                   \
            if (!np_)                                                                          \
                return tinfer_err_set((e)->err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", \
                                      (e)->t->label);                                          \
            (ptr) = np_;                                                                       \
            (cap) = nc_;                                                                       \
        }                                                                                      \
    } while (0)

static tinfer_status emit(enc *e, int32_t id) {
    GROW(e, e->ids, e->cap_ids, e->n_ids + 1);
    e->ids[e->n_ids++] = id;
    return TINFER_OK;
}

static bool cand_less(const bpe_cand *a, const bpe_cand *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static tinfer_status heap_push(enc *e, size_t *n, bpe_cand c) {
    GROW(e, e->heap, e->cap_heap, *n + 1);
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(&c, &e->heap[p])) break;
        e->heap[i] = e->heap[p];
        i = p;
    }
    e->heap[i] = c;
    return TINFER_OK;
}

static bpe_cand heap_pop(enc *e, size_t *n) {
    bpe_cand top = e->heap[0], last = e->heap[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= *n) break;
        if (l + 1 < *n && cand_less(&e->heap[l + 1], &e->heap[l])) l++;
        if (!cand_less(&e->heap[l], &last)) break;
        e->heap[i] = e->heap[l];
        i = l;
    }
    if (*n) e->heap[i] = last;
    return top;
}

static tinfer_status push_pair(enc *e, size_t *nh, int32_t pos) {
    int32_t nx = e->sym[pos].next;
    if (nx < 0) return TINFER_OK;
    const merge_slot *m = merge_get(e->t, e->sym[pos].id, e->sym[nx].id);
    if (!m) return TINFER_OK;
    return heap_push(e, nh, (bpe_cand){m->rank, pos, m->new_id});
}

static tinfer_status add_sym(enc *e, int32_t *n, int32_t id) {
    GROW(e, e->sym, e->cap_sym, (size_t)*n + 1);
    e->sym[*n] = (bpe_sym){id, *n - 1, -1};
    if (*n > 0) e->sym[*n - 1].next = *n;
    (*n)++;
    return TINFER_OK;
}

/* BPE of one pre-token w[0..n) (in vocab space): models/bpe/model.rs merge_word + word.rs. */
static tinfer_status bpe_word(enc *e, const char *w, size_t n) {
    const tinfer_tokenizer *t = e->t;
    if (t->ignore_merges) {
        int32_t id = vocab_get(t, w, n);
        if (id >= 0) return emit(e, id);
    }
    int32_t ns = 0, unk = -1;
    tinfer_status st;
    bool affix = t->cprefix || t->esuffix;
    char tmp[256];
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t cl = utf8_cp((const unsigned char *)w + i, &cp);
        bool first = i == 0, last = i + cl == n;
        int32_t id;
        const char *s = w + i;
        size_t sl = cl;
        if (!affix && cp < 0x200) {
            id = t->cp_tok[cp];
        } else {
            size_t pl = (!first && t->cprefix) ? strlen(t->cprefix) : 0;
            size_t xl = (last && t->esuffix) ? strlen(t->esuffix) : 0;
            if (pl + cl + xl > sizeof tmp)
                return tinfer_err_set(e->err, TINFER_ERR_UNSUPPORTED,
                                      "%s: continuing_subword_prefix/end_of_word_suffix too long",
                                      t->label);
            memcpy(tmp, t->cprefix, pl);
            memcpy(tmp + pl, w + i, cl);
            memcpy(tmp + pl + cl, t->esuffix, xl);
            s = tmp;
            sl = pl + cl + xl;
            id = vocab_get(t, s, sl);
        }
        i += cl;
        if (id >= 0) {
            if (unk >= 0) {
                if ((st = add_sym(e, &ns, unk))) return st;
                unk = -1;
            }
            if ((st = add_sym(e, &ns, id))) return st;
            continue;
        }
        if (t->byte_fallback) {
            bool all = true;
            for (size_t k = 0; k < sl; k++) all &= t->byte_tok[(unsigned char)s[k]] >= 0;
            if (all) {
                for (size_t k = 0; k < sl; k++)
                    if ((st = add_sym(e, &ns, t->byte_tok[(unsigned char)s[k]]))) return st;
                continue;
            }
        }
        if (t->unk_id >= 0) {
            if (unk >= 0 && !t->fuse_unk)
                if ((st = add_sym(e, &ns, unk))) return st;
            unk = t->unk_id;
        }
        /* no unk token: the char is dropped, as HF does */
    }
    if (unk >= 0 && (st = add_sym(e, &ns, unk))) return st;

    size_t nh = 0;
    for (int32_t p = 0; p + 1 < ns; p++)
        if ((st = push_pair(e, &nh, p))) return st;
    while (nh) {
        bpe_cand c = heap_pop(e, &nh);
        bpe_sym *a = &e->sym[c.pos];
        if (a->id < 0 || a->next < 0) continue; /* merged away */
        bpe_sym *b = &e->sym[a->next];
        const merge_slot *m = merge_get(t, a->id, b->id);
        if (!m || m->new_id != c.new_id) continue; /* stale candidate */
        a->id = c.new_id;
        int32_t bn = b->next;
        b->id = -1;
        a->next = bn;
        if (bn >= 0) e->sym[bn].prev = c.pos;
        if (a->prev >= 0 && (st = push_pair(e, &nh, a->prev))) return st;
        if ((st = push_pair(e, &nh, c.pos))) return st;
    }
    for (int32_t p = ns ? 0 : -1; p >= 0; p = e->sym[p].next)
        if ((st = emit(e, e->sym[p].id))) return st;
    return TINFER_OK;
}

static tinfer_status push_span(enc *e, span **arr, size_t *n, size_t *cap, size_t off,
                               size_t len) {
    if (!len) return TINFER_OK; /* empty pieces are dropped after every split */
    GROW(e, *arr, *cap, *n + 1);
    (*arr)[(*n)++] = (span){off, len};
    return TINFER_OK;
}

#define SEG_MATCH ((size_t)1 << (sizeof(size_t) * 8 - 1))

/* Splits piece p by step s into e->pb (pre_tokenizers/split.rs + normalizer split). */
static tinfer_status split_piece(enc *e, const pretok_step *s, span p) {
    const unsigned char *subj = (const unsigned char *)e->work + p.off;
    size_t nseg = 0, prev = 0;
    for (size_t at = 0; at < p.len;) {
        int rc = pcre2_match(s->re, subj, p.len, at, PCRE2_NO_UTF_CHECK, e->md, e->mctx);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[128];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return tinfer_err_set(e->err, TINFER_ERR_INTERNAL, "%s: pre_tokenizer regex: %s",
                                  e->t->label, (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(e->md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { /* empty match: contributes nothing; step one char */
            size_t adv = 1;
            while (ms + adv < p.len && (subj[ms + adv] & 0xC0) == 0x80) adv++;
            at = ms + adv;
            continue;
        }
        GROW(e, e->segs, e->cap_segs, nseg + 2);
        if (ms > prev) e->segs[nseg++] = (span){prev, ms - prev};
        e->segs[nseg++] = (span){ms, (me - ms) | SEG_MATCH};
        prev = at = me;
    }
    if (prev < p.len) {
        GROW(e, e->segs, e->cap_segs, nseg + 1);
        e->segs[nseg++] = (span){prev, p.len - prev};
    }
    /* fold by behavior into (off,len) pieces; is_match flipped by invert */
    size_t first_out = e->nb;
    bool prev_match = false;
    tinfer_status st;
    if (s->behavior == SPLIT_MERGED_NEXT) {
        /* reverse fold: a match absorbs the non-match after it */
        size_t k = nseg;
        size_t cur_off = 0, cur_len = 0;
        bool have = false;
        /* collect in reverse into pb, then reverse the appended range */
        while (k-- > 0) {
            bool m = ((e->segs[k].len & SEG_MATCH) != 0) != s->invert;
            size_t off = e->segs[k].off, len = e->segs[k].len & ~SEG_MATCH;
            if (m && !prev_match && have) {
                cur_len += cur_off - off;
                cur_off = off;
            } else {
                if (have && (st = push_span(e, &e->pb, &e->nb, &e->cap_b, p.off + cur_off, cur_len)))
                    return st;
                cur_off = off;
                cur_len = len;
                have = true;
            }
            prev_match = m;
        }
        if (have && (st = push_span(e, &e->pb, &e->nb, &e->cap_b, p.off + cur_off, cur_len)))
            return st;
        for (size_t i = first_out, j = e->nb; i + 1 < j; i++, j--) {
            span x = e->pb[i];
            e->pb[i] = e->pb[j - 1];
            e->pb[j - 1] = x;
        }
        return TINFER_OK;
    }
    size_t cur_off = 0, cur_len = 0;
    bool have = false;
    for (size_t k = 0; k < nseg; k++) {
        bool m = ((e->segs[k].len & SEG_MATCH) != 0) != s->invert;
        size_t off = e->segs[k].off, len = e->segs[k].len & ~SEG_MATCH;
        bool join = false;
        switch (s->behavior) {
        case SPLIT_REMOVED:
            if (m) {
                prev_match = m;
                continue;
            }
            break;
        case SPLIT_ISOLATED: break;
        case SPLIT_MERGED_PREV: join = m && !prev_match && have; break;
        case SPLIT_CONTIGUOUS: join = m == prev_match && have; break;
        }
        if (join) {
            cur_len = off + len - cur_off;
        } else {
            if (have && (st = push_span(e, &e->pb, &e->nb, &e->cap_b, p.off + cur_off, cur_len)))
                return st;
            cur_off = off;
            cur_len = len;
            have = true;
        }
        prev_match = m;
    }
    if (have && (st = push_span(e, &e->pb, &e->nb, &e->cap_b, p.off + cur_off, cur_len)))
        return st;
    return TINFER_OK;
}

/* Normalizer check, pre-tokenizer steps and BPE on text e->work[off, off+len). */
static tinfer_status encode_plain(enc *e, size_t off, size_t len) {
    const tinfer_tokenizer *t = e->t;
    tinfer_status st;
    if (!len) return TINFER_OK;
    if (t->nfc) {
        for (size_t i = off; i < off + len;) {
            uint32_t cp;
            i += utf8_cp((const unsigned char *)e->work + i, &cp);
            if (!cp_nfc_inert(cp))
                return tinfer_err_set(e->err, TINFER_ERR_UNSUPPORTED,
                                      "%s: normalizer 'NFC' is not supported for U+%04X",
                                      t->label, (unsigned)cp);
        }
    }
    e->na = 0;
    if ((st = push_span(e, &e->pa, &e->na, &e->cap_a, off, len))) return st;
    for (int32_t si = 0; si < t->n_steps; si++) {
        const pretok_step *s = &t->steps[si];
        e->nb = 0;
        for (size_t k = 0; k < e->na; k++) {
            span p = e->pa[k];
            if (s->add_prefix_space && e->work[p.off] != ' ') {
                GROW(e, e->work, e->work_cap, e->work_len + p.len + 1);
                e->work[e->work_len] = ' ';
                memcpy(e->work + e->work_len + 1, e->work + p.off, p.len);
                p.off = e->work_len;
                p.len += 1;
                e->work_len += p.len;
            }
            if (!s->re) {
                if ((st = push_span(e, &e->pb, &e->nb, &e->cap_b, p.off, p.len))) return st;
            } else if ((st = split_piece(e, s, p))) {
                return st;
            }
        }
        span *x = e->pa;
        e->pa = e->pb;
        e->pb = x;
        size_t c = e->cap_a;
        e->cap_a = e->cap_b;
        e->cap_b = c;
        e->na = e->nb;
    }
    for (size_t k = 0; k < e->na; k++) {
        span p = e->pa[k];
        const char *w = e->work + p.off;
        size_t wn = p.len;
        if (t->byte_level) {
            GROW(e, e->word, e->cap_word, 2 * p.len);
            wn = 0;
            for (size_t i = 0; i < p.len; i++) {
                unsigned b = (unsigned char)e->work[p.off + i];
                e->word[wn++] = (char)g_bl.utf8[b][0];
                if (g_bl.utf8_len[b] == 2) e->word[wn++] = (char)g_bl.utf8[b][1];
            }
            w = e->word;
        }
        if ((st = bpe_word(e, w, wn))) return st;
    }
    return TINFER_OK;
}

static bool is_word_char(const tinfer_tokenizer *t, const enc *e, const unsigned char *s,
                         size_t n) {
    return pcre2_match(t->word_re, s, n, 0, PCRE2_NO_UTF_CHECK | PCRE2_ANCHORED, e->md, NULL) >= 0;
}

/* Cuts added tokens of one kind (normalized or not) out of e->work[off, off+len), handing the
 * text between them to `next` (added_vocabulary.rs find_matches + split_with_indices). */
static tinfer_status split_added(enc *e, size_t off, size_t len, bool normalized) {
    const tinfer_tokenizer *t = e->t;
    const unsigned char *s = (const unsigned char *)e->work + off;
    bool skip_special = !(e->flags & TINFER_TOKENIZE_PARSE_SPECIAL);
    size_t start_off = 0;
    tinfer_status st;
    for (size_t p = 0; p < len;) {
        const added_token *hit = NULL;
        for (int32_t k = t->first_start[s[p]]; k < t->first_start[s[p] + 1]; k++) {
            const added_token *a = &t->added[t->first_idx[k]];
            if (a->normalized != normalized) continue;
            if (a->len <= len - p && memcmp(s + p, a->content, a->len) == 0) {
                hit = a;
                break;
            }
        }
        if (!hit) {
            p++;
            continue;
        }
        size_t ms = p, me = p + hit->len;
        p = me; /* the scan resumes after the match whether or not it is used */
        if (hit->special && skip_special) continue;
        if (hit->single_word) {
            bool ws_before = ms == 0 || !is_word_char(t, e, s + ms - utf8_prev_len(s, ms),
                                                      utf8_prev_len(s, ms));
            bool ws_after = me == len || !is_word_char(t, e, s + me, len - me);
            if (!ws_before || !ws_after) continue;
        }
        if (hit->lstrip) {
            size_t ns = ms;
            while (ns > start_off) {
                size_t cl = utf8_prev_len(s, ns);
                uint32_t cp;
                utf8_cp(s + ns - cl, &cp);
                if (!cp_is_white(cp)) break;
                ns -= cl;
            }
            ms = ns;
        }
        if (hit->rstrip) {
            while (me < len) {
                uint32_t cp;
                size_t cl = utf8_cp(s + me, &cp);
                if (!cp_is_white(cp)) break;
                me += cl;
            }
            p = me;
        }
        if (ms > start_off) {
            st = normalized ? encode_plain(e, off + start_off, ms - start_off)
                            : split_added(e, off + start_off, ms - start_off, true);
            if (st) return st;
            s = (const unsigned char *)e->work + off; /* work may have moved (prefix spaces) */
        }
        if ((st = emit(e, hit->id))) return st;
        start_off = me;
    }
    if (start_off < len)
        return normalized ? encode_plain(e, off + start_off, len - start_off)
                          : split_added(e, off + start_off, len - start_off, true);
    return TINFER_OK;
}

static tinfer_status encode_all(enc *e, const char *text, size_t len) {
    const tinfer_tokenizer *t = e->t;
    tinfer_status st;
    bool valid = utf8_valid((const unsigned char *)text, len);
    size_t need = valid ? len : tinfer_utf8_lossy((const unsigned char *)text, len, false, NULL, NULL);
    GROW(e, e->work, e->work_cap, need + 1);
    if (valid) memcpy(e->work, text, len);
    else tinfer_utf8_lossy((const unsigned char *)text, len, false, e->work, NULL);
    e->work_len = need;
    e->md = pcre2_match_data_create(1, NULL);
    e->mctx = pcre2_match_context_create(NULL);
    /* 32 KiB -> 1 MiB: PCRE2's documented default start and a cap far above what the
     * pre-tokenizer patterns use on any input (they do not nest repeats). */
    e->jit = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, NULL);
    if (!e->md || !e->mctx || !e->jit)
        return tinfer_err_set(e->err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", t->label);
    pcre2_jit_stack_assign(e->mctx, NULL, e->jit);
    if ((e->flags & TINFER_TOKENIZE_ADD_SPECIAL))
        for (int32_t i = 0; i < t->n_post_pre; i++)
            if ((st = emit(e, t->post_pre[i]))) return st;
    if ((st = split_added(e, 0, need, false))) return st;
    if ((e->flags & TINFER_TOKENIZE_ADD_SPECIAL))
        for (int32_t i = 0; i < t->n_post_post; i++)
            if ((st = emit(e, t->post_post[i]))) return st;
    return TINFER_OK;
}

tinfer_status tinfer_tokenizer_encode(const tinfer_tokenizer *t, const char *text, size_t len,
                                      uint32_t flags, int32_t *tokens, int32_t cap,
                                      int32_t *n_out, tinfer_err *err) {
    if (n_out) *n_out = 0;
    if (!t || !n_out || (!text && len) || cap < 0 || (!tokens && cap > 0))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "tokenize: NULL tokenizer, text, tokens or n_out, or cap < 0");
    enc e = {.t = t, .err = err, .flags = flags};
    tinfer_status st = encode_all(&e, text ? text : "", len);
    if (!st && e.n_ids > INT32_MAX)
        st = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED, "tokenize: more than 2^31 tokens");
    if (!st) {
        *n_out = (int32_t)e.n_ids;
        if (e.n_ids > (size_t)cap) {
            st = tinfer_err_set(err, TINFER_ERR_BUFFER_TOO_SMALL,
                                "tokenize: %zu tokens do not fit in cap %d", e.n_ids, cap);
        } else if (e.n_ids) {
            memcpy(tokens, e.ids, e.n_ids * sizeof *tokens);
        }
    }
    pcre2_match_data_free(e.md);
    pcre2_match_context_free(e.mctx);
    pcre2_jit_stack_free(e.jit);
    free(e.ids);
    free(e.work);
    free(e.pa);
    free(e.pb);
    free(e.segs);
    free(e.word);
    free(e.sym);
    free(e.heap);
    return st;
}

/* ---------------------------------------------------------------------------------------- */
/* Decoding                                                                                 */

tinfer_status tinfer_tokenizer_decode(const tinfer_tokenizer *t, const int32_t *tokens,
                                      int32_t n_tokens, uint32_t flags, char *text, size_t cap,
                                      size_t *n_out, tinfer_err *err) {
    if (n_out) *n_out = 0;
    if (!t || !n_out || n_tokens < 0 || (!tokens && n_tokens) || (!text && cap))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "detokenize: NULL tokenizer, tokens, text or n_out, or n < 0");
    size_t raw = 0;
    for (int32_t i = 0; i < n_tokens; i++) {
        size_t l;
        bool sp;
        if (tinfer_tokenizer_piece(t, tokens[i], &l, &sp) &&
            !(sp && (flags & TINFER_DETOKENIZE_SKIP_SPECIAL)))
            raw += l;
    }
    char *buf = malloc(raw + 1);
    if (!buf) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "detokenize: out of memory");
    size_t k = 0;
    for (int32_t i = 0; i < n_tokens; i++) {
        size_t l;
        bool sp;
        const char *p = tinfer_tokenizer_piece(t, tokens[i], &l, &sp);
        if (p && !(sp && (flags & TINFER_DETOKENIZE_SKIP_SPECIAL))) {
            memcpy(buf + k, p, l);
            k += l;
        }
    }
    size_t need = tinfer_utf8_lossy((const unsigned char *)buf, k, false, NULL, NULL);
    *n_out = need;
    tinfer_status st = TINFER_OK;
    if (need > cap)
        st = tinfer_err_set(err, TINFER_ERR_BUFFER_TOO_SMALL,
                            "detokenize: %zu bytes do not fit in cap %zu", need, cap);
    else
        tinfer_utf8_lossy((const unsigned char *)buf, k, false, text, NULL);
    free(buf);
    return st;
}

tinfer_status tinfer_tokenizer_stream_push(const tinfer_tokenizer *t, tinfer_detok_stream *st,
                                           int32_t token, uint32_t flags, char *text, size_t cap,
                                           size_t *n_out, tinfer_err *err) {
    if (n_out) *n_out = 0;
    if (!t || !st || !n_out || (!text && cap))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "detok_stream_push: NULL tokenizer, state, text or n_out");
    if (st->n_pending < 0 || st->n_pending > 3)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "detok_stream_push: state not initialised (n_pending %d)",
                              st->n_pending);
    size_t l = 0;
    bool sp = false;
    const char *p = tinfer_tokenizer_piece(t, token, &l, &sp);
    if (!p || (sp && (flags & TINFER_DETOKENIZE_SKIP_SPECIAL))) l = 0; /* as decode: skipped */
    unsigned char small[64];
    size_t n = (size_t)st->n_pending + l;
    unsigned char *buf = n <= sizeof small ? small : malloc(n);
    if (!buf) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "detok_stream_push: out of memory");
    memcpy(buf, st->pending, (size_t)st->n_pending);
    if (l) memcpy(buf + st->n_pending, p, l);
    size_t held;
    size_t need = tinfer_utf8_lossy(buf, n, true, NULL, &held);
    *n_out = need;
    tinfer_status rc = TINFER_OK;
    if (need > cap) {
        rc = tinfer_err_set(err, TINFER_ERR_BUFFER_TOO_SMALL,
                            "detok_stream_push: %zu bytes do not fit in cap %zu", need, cap);
    } else {
        tinfer_utf8_lossy(buf, n, true, text, &held);
        memcpy(st->pending, buf + n - held, held);
        st->n_pending = (int32_t)held;
    }
    if (buf != small) free(buf);
    return rc;
}

/*
 * tokenizer_internal.h — what the files of the tokenizer share: the loaded tokenizer's layout and
 * the helpers more than one of them uses. The public face is tokenizer.h; the files:
 *   tokenizer.c           the byte-level table, UTF-8, freeing, queries
 *   tokenizer_load.c      tokenizer.json's model (vocab, merges), added tokens and decoder;
 *                         tokenizer_config.json; tinfer_tokenizer_load / _load_json
 *   tokenizer_pipeline.c  tokenizer.json's normalizer, pre-tokenizer and post-processor
 *   tokenizer_encode.c    encoding: added tokens, normalizer, pre-tokenizer, BPE, post-processor
 *   tokenizer_decode.c    decoding, whole and streamed
 * The order of the encode steps and the spec they follow: tokenizer.c's file comment.
 */
#ifndef TINFER_TOKENIZER_INTERNAL_H
#define TINFER_TOKENIZER_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer.h"

#include <cjson/cJSON.h>
#include <pcre2.h>
#include <string.h>

/* Ids above this are treated as a malformed file: the largest real vocabularies (Gemma) are
 * ~262k tokens, and per-id arrays are sized by the largest id. */
#define TOK_MAX_ID (1 << 24)

enum split_behavior {
    SPLIT_REMOVED,
    SPLIT_ISOLATED,
    SPLIT_MERGED_PREV,
    SPLIT_MERGED_NEXT,
    SPLIT_CONTIGUOUS
};

typedef struct pretok_step {
    pcre2_code *re; /* NULL: ByteLevel without regex (only the prefix space) */
    int behavior;   /* enum split_behavior */
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

/* Byte-level table (GPT-2 bytes_to_unicode, TOKENIZER_NOTES §1; tokenizer.c): filled by
 * tok_bl_init, read-only after. */
typedef struct bl_tables {
    uint16_t cp[256];
    unsigned char utf8[256][2];
    uint8_t utf8_len[256];
    int16_t byte_of_cp[0x144]; /* -1: not in table */
} bl_tables;
extern bl_tables tok_bl;
void tok_bl_init(void);

/* UTF-8 (tokenizer.c) */
int tok_utf8_scan(const unsigned char *s, size_t n, size_t *adv);
bool tok_utf8_valid(const unsigned char *s, size_t n);

/* Decodes one code point of valid UTF-8; returns its byte length. */
static inline size_t utf8_cp(const unsigned char *s, uint32_t *cp) {
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
static inline size_t utf8_prev_len(const unsigned char *s, size_t end) {
    size_t k = 1;
    while (k < end && k < 4 && (s[end - k] & 0xC0) == 0x80)
        k++;
    return k;
}

/* Rust char::is_whitespace (Unicode White_Space), for added tokens' lstrip/rstrip. */
static inline bool cp_is_white(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* Code points that NFC leaves unchanged whatever surrounds them: no canonical decomposition,
 * canonical combining class 0 and never the second of a composition pair. Conservative ranges
 * (Unicode 15 UnicodeData.txt); text with anything else is refused when the normalizer is NFC
 * since this runtime has no composition tables. */
static inline bool cp_nfc_inert(uint32_t c) {
    return c < 0x300 || (c >= 0x2002 && c <= 0x2027) || (c >= 0x2030 && c <= 0x205E) ||
           (c >= 0x3000 && c <= 0x3029) || (c >= 0x3030 && c <= 0x303F) ||
           (c >= 0x3041 && c <= 0x3096) || (c >= 0x30A1 && c <= 0x30FA) ||
           (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0xFF01 && c <= 0xFF5E) || (c >= 0x1F300 && c <= 0x1FAFF);
}

char *tok_dupstr(const char *s);

/* Hashing: the vocab and merge tables (built in tokenizer_load.c) */
static inline uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a 64-bit offset basis */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull; /* FNV-1a 64-bit prime */
    }
    return h ^ (h >> 29);
}

static inline uint64_t hash_u64(uint64_t x) { /* splitmix64 finalizer */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline int32_t vocab_get(const tinfer_tokenizer *t, const char *s, size_t n) {
    if (!t->vhash) return -1;
    for (uint64_t h = hash_bytes(s, n) & t->vmask;; h = (h + 1) & t->vmask) {
        uint32_t v = t->vhash[h];
        if (!v) return -1;
        int32_t id = (int32_t)(v - 1);
        if ((size_t)t->vocab_len[id] == n && memcmp(t->blob + t->vocab_off[id], s, n) == 0)
            return id;
    }
}

static inline const merge_slot *merge_get(const tinfer_tokenizer *t, int32_t a, int32_t b) {
    uint64_t key = ((uint64_t)(uint32_t)(a + 1) << 32) | (uint32_t)(b + 1);
    for (uint64_t h = hash_u64(key) & t->mmask;; h = (h + 1) & t->mmask) {
        const merge_slot *m = &t->mhash[h];
        if (m->key == key) return m;
        if (!m->key) return NULL;
    }
}

/* JSON fields */
static inline bool jbool(const cJSON *o, const char *key, bool dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    return dflt;
}

static inline const char *jstr(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The pipeline sections of tokenizer.json (tokenizer_pipeline.c); key: the JSON path for messages.
 */
tinfer_status tok_parse_normalizer(tinfer_tokenizer *t, const cJSON *p, const char *key,
                                   tinfer_err *err);
tinfer_status tok_parse_pretok(tinfer_tokenizer *t, const cJSON *p, const char *key,
                               tinfer_err *err);
tinfer_status tok_parse_post(tinfer_tokenizer *t, const cJSON *p, const char *key, tinfer_err *err);

#endif

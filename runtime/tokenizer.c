/*
 * tokenizer.c — an HF tokenizer.json (byte-level BPE): the shared tables and UTF-8 helpers,
 * freeing and queries. Loading, encoding and decoding live in the files tokenizer_internal.h lists.
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
#include "tokenizer_internal.h"

#include <stdlib.h>

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

bl_tables tok_bl;
static bool g_bl_ready;

void tok_bl_init(void) {
    /* Idempotent and deterministic: concurrent first calls write identical values. */
    if (g_bl_ready) return;
    for (int i = 0; i < 0x144; i++)
        tok_bl.byte_of_cp[i] = -1;
    for (unsigned b = 0; b < 256; b++) {
        uint16_t cp = bl_cp_of_byte(b);
        tok_bl.cp[b] = cp;
        tok_bl.byte_of_cp[cp] = (int16_t)b;
        if (cp < 0x80) {
            tok_bl.utf8[b][0] = (unsigned char)cp;
            tok_bl.utf8_len[b] = 1;
        } else {
            tok_bl.utf8[b][0] = (unsigned char)(0xC0 | (cp >> 6));
            tok_bl.utf8[b][1] = (unsigned char)(0x80 | (cp & 0x3F));
            tok_bl.utf8_len[b] = 2;
        }
    }
    g_bl_ready = true;
}

/* ---------------------------------------------------------------------------------------- */
/* UTF-8                                                                                    */

/* Classifies the sequence at s[0..n): 1 = valid, *adv its length; 0 = invalid, *adv the length
 * of the maximal invalid subpart (>= 1); -1 = a valid prefix cut by the end of the buffer, *adv
 * its length. Well-formed sequences per Unicode Table 3-7. */
int tok_utf8_scan(const unsigned char *s, size_t n, size_t *adv) {
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
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
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
        int r = tok_utf8_scan(in + i, n - i, &adv);
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

bool tok_utf8_valid(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t adv;
        if (tok_utf8_scan(s + i, n - i, &adv) != 1) return false;
        i += adv;
    }
    return true;
}

char *tok_dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void tinfer_tokenizer_free(tinfer_tokenizer *t) {
    if (!t) return;
    for (int32_t i = 0; i < t->n_steps; i++)
        pcre2_code_free(t->steps[i].re);
    free(t->steps);
    for (int32_t i = 0; i < t->n_added; i++)
        free(t->added[i].content);
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

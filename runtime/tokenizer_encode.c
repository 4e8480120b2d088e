/*
 * tokenizer_encode.c — encoding text with a loaded tokenizer, in the order of
 * huggingface/tokenizers (tokenizer.c's file comment): added tokens, normalizer, pre-tokenizer, BPE
 * merges, post-processor.
 */
#include "tokenizer_internal.h"

#include <stdlib.h>

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

#define GROW(e, ptr, cap, need)                                                                    \
    do {                                                                                           \
        if ((need) > (cap)) {                                                                      \
            size_t nc_ = (cap) ? (cap)*2 : 64;                                                     \
            while (nc_ < (need))                                                                   \
                nc_ *= 2;                                                                          \
            void *np_ = realloc((ptr), nc_ * sizeof *(ptr));                                       \
            if (!np_)                                                                              \
                return tinfer_err_set((e)->err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory",     \
                                      (e)->t->label);                                              \
            (ptr) = np_;                                                                           \
            (cap) = nc_;                                                                           \
        }                                                                                          \
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
            for (size_t k = 0; k < sl; k++)
                all &= t->byte_tok[(unsigned char)s[k]] >= 0;
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

static tinfer_status push_span(enc *e, span **arr, size_t *n, size_t *cap, size_t off, size_t len) {
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
            while (ms + adv < p.len && (subj[ms + adv] & 0xC0) == 0x80)
                adv++;
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
                if (have &&
                    (st = push_span(e, &e->pb, &e->nb, &e->cap_b, p.off + cur_off, cur_len)))
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
    if (have && (st = push_span(e, &e->pb, &e->nb, &e->cap_b, p.off + cur_off, cur_len))) return st;
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
                                      "%s: normalizer 'NFC' is not supported for U+%04X", t->label,
                                      (unsigned)cp);
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
                e->word[wn++] = (char)tok_bl.utf8[b][0];
                if (tok_bl.utf8_len[b] == 2) e->word[wn++] = (char)tok_bl.utf8[b][1];
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
            bool ws_before =
                ms == 0 || !is_word_char(t, e, s + ms - utf8_prev_len(s, ms), utf8_prev_len(s, ms));
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
    bool valid = tok_utf8_valid((const unsigned char *)text, len);
    size_t need =
        valid ? len : tinfer_utf8_lossy((const unsigned char *)text, len, false, NULL, NULL);
    GROW(e, e->work, e->work_cap, need + 1);
    if (valid)
        memcpy(e->work, text, len);
    else
        tinfer_utf8_lossy((const unsigned char *)text, len, false, e->work, NULL);
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
                                      uint32_t flags, int32_t *tokens, int32_t cap, int32_t *n_out,
                                      tinfer_err *err) {
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

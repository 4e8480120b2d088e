/*
 * chat.c — tinfer_chat_apply: the chat template forms real models ship, recognised from the
 * Jinja chat_template of tokenizer_config.json by their marker tokens. Not a Jinja engine:
 * each form is written out by hand to reproduce transformers' apply_chat_template output
 * (Jinja with trim_blocks and lstrip_blocks) byte for byte:
 *   ChatML   (<|im_start|>): "<|im_start|>{role}\n{content}<|im_end|>\n"...; a default system
 *            prompt when the template has one literal '<|im_start|>system\n...<|im_end|>'
 *            (SmolLM2, Qwen2) and the first message is not a system one; the text is read
 *            from the template itself. No template at all also means ChatML.
 *   Llama-3  (<|start_header_id|>): bos + "<|start_header_id|>{role}<|end_header_id|>\n\n"
 *            + trim(content) + "<|eot_id|>" (Meta-Llama-3-*-Instruct).
 *   Llama-2  (<<SYS>> + [INST]): Llama-2-*-chat-hf, roles must alternate user/assistant.
 *   Zephyr   (<|user|>): "<|{role}|>\n{content}{eos}\n".
 * Anything else (Llama-3.1's date/tool preamble included) is TINFER_ERR_UNSUPPORTED.
 */
#include "model_internal.h"
#include "tokenizer.h"

#include <stdlib.h>
#include <string.h>

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap * 2 : 256;
        while (c < b->n + n) c *= 2;
        char *np = realloc(b->p, c);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

/* Python str.isspace() on one code point; what Jinja's trim / str.strip() remove. */
static bool py_space(unsigned cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 ||
           cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* Decodes the code point starting at s (valid UTF-8 assumed for non-ASCII whitespace, which
 * is all this is used to find); returns its length. */
static size_t cp_at(const unsigned char *s, size_t n, unsigned *cp) {
    if (s[0] < 0x80 || n < 2) { *cp = s[0]; return 1; }
    if ((s[0] & 0xE0) == 0xC0) { *cp = ((s[0] & 0x1Fu) << 6) | (s[1] & 0x3Fu); return 2; }
    if ((s[0] & 0xF0) == 0xE0 && n >= 3) {
        *cp = ((s[0] & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
        return 3;
    }
    *cp = 0xFFFD; /* 4-byte and broken sequences: never whitespace */
    return 1;
}

static void sb_strip(sbuf *b, const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s), a = 0, z = n;
    while (a < z) {
        unsigned cp;
        size_t l = cp_at(u + a, z - a, &cp);
        if (!py_space(cp)) break;
        a += l;
    }
    while (z > a) {
        size_t k = 1;
        while (k < z - a && k < 4 && (u[z - k] & 0xC0) == 0x80) k++;
        unsigned cp;
        cp_at(u + z - k, k, &cp);
        if (!py_space(cp)) break;
        z -= k;
    }
    sb_add(b, s + a, z - a);
}

/* The default system prompt of a ChatML template: the first string literal of the form
 * '<|im_start|>system\n TEXT <|im_end|>' with no quote inside, i.e. a constant rather than
 * one built from messages[0]. Jinja escapes in TEXT are undone. Returns NULL if none. */
static char *chatml_default_system(const char *tmpl) {
    static const char head[] = "<|im_start|>system";
    for (const char *p = strstr(tmpl, head); p; p = strstr(p + 1, head)) {
        if (p == tmpl || (p[-1] != '\'' && p[-1] != '"')) continue;
        char q = p[-1];
        const char *s = p + sizeof head - 1;
        if (*s == '\n') s++;
        else if (s[0] == '\\' && s[1] == 'n') s += 2;
        else continue;
        const char *e = strstr(s, "<|im_end|>");
        if (!e) continue;
        bool constant = true;
        for (const char *x = s; x < e; x++) {
            if (*x == '\\' && x + 1 < e) { x++; continue; }
            if (*x == q) { constant = false; break; }
        }
        if (!constant || e == s) continue;
        char *out = malloc(strlen(s) + 1); /* e lies inside s */
        if (!out) return NULL;
        size_t k = 0;
        for (const char *x = s; x < e; x++) {
            if (*x == '\\' && x + 1 < e) {
                x++;
                switch (*x) {
                case 'n': out[k++] = '\n'; break;
                case 't': out[k++] = '\t'; break;
                case 'r': out[k++] = '\r'; break;
                default: out[k++] = *x; break; /* \\ \' \" */
                }
            } else {
                out[k++] = *x;
            }
        }
        out[k] = 0;
        return out;
    }
    return NULL;
}

tinfer_status tinfer_chat_render(const char *tmpl, const char *bos, const char *eos,
                                 const tinfer_chat_message *msgs, int32_t n, bool add_gen,
                                 char *text, size_t cap, size_t *n_out, tinfer_err *err) {
    if (n_out) *n_out = 0;
    if (!n_out || n < 0 || (!msgs && n) || (!text && cap))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "chat_apply: NULL messages, text or n_out, or n_messages < 0");
    for (int32_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content)
            return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                                  "chat_apply: messages[%d] has a NULL role or content", i);
    sbuf b = {0};
    tinfer_status st = TINFER_OK;
    if (!tmpl || strstr(tmpl, "<|im_start|>")) {
        char *sys = tmpl ? chatml_default_system(tmpl) : NULL;
        if (sys && n > 0 && strcmp(msgs[0].role, "system") != 0) {
            sb_str(&b, "<|im_start|>system\n");
            sb_str(&b, sys);
            sb_str(&b, "<|im_end|>\n");
        }
        free(sys);
        for (int32_t i = 0; i < n; i++) {
            sb_str(&b, "<|im_start|>");
            sb_str(&b, msgs[i].role);
            sb_str(&b, "\n");
            sb_str(&b, msgs[i].content);
            sb_str(&b, "<|im_end|>\n");
        }
        if (add_gen) sb_str(&b, "<|im_start|>assistant\n");
    } else if (strstr(tmpl, "<|start_header_id|>")) {
        if (strstr(tmpl, "Cutting Knowledge Date")) {
            st = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                "chat_template: the Llama-3.1 form (date/tool preamble) is not "
                                "supported");
            goto out;
        }
        bool uses_bos = strstr(tmpl, "bos_token") != NULL;
        if (uses_bos && !bos) {
            st = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                "chat_template uses bos_token but tokenizer_config.json has none");
            goto out;
        }
        for (int32_t i = 0; i < n; i++) {
            if (i == 0 && uses_bos) sb_str(&b, bos);
            sb_str(&b, "<|start_header_id|>");
            sb_str(&b, msgs[i].role);
            sb_str(&b, "<|end_header_id|>\n\n");
            sb_strip(&b, msgs[i].content);
            sb_str(&b, "<|eot_id|>");
        }
        if (add_gen) sb_str(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    } else if (strstr(tmpl, "[INST]") && strstr(tmpl, "<<SYS>>")) {
        if (!bos || !eos) {
            st = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                "chat_template (Llama-2) needs bos_token and eos_token in "
                                "tokenizer_config.json");
            goto out;
        }
        int32_t first = (n > 0 && strcmp(msgs[0].role, "system") == 0) ? 1 : 0;
        for (int32_t i = first; i < n; i++) {
            int32_t k = i - first;
            bool user = strcmp(msgs[i].role, "user") == 0;
            if (user != (k % 2 == 0)) {
                st = tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                                    "chat_apply: messages[%d]: roles must alternate "
                                    "user/assistant/user/... (Llama-2 template)",
                                    i);
                goto out;
            }
            sbuf c = {0};
            if (k == 0 && first) {
                sb_str(&c, "<<SYS>>\n");
                sb_str(&c, msgs[0].content);
                sb_str(&c, "\n<</SYS>>\n\n");
            }
            sb_str(&c, msgs[i].content);
            sb_add(&c, "", 1);
            if (c.oom) {
                free(c.p);
                b.oom = true;
                break;
            }
            if (user) {
                sb_str(&b, bos);
                sb_str(&b, "[INST] ");
                sb_strip(&b, c.p);
                sb_str(&b, " [/INST]");
            } else if (strcmp(msgs[i].role, "assistant") == 0) {
                sb_str(&b, " ");
                sb_strip(&b, c.p);
                sb_str(&b, " ");
                sb_str(&b, eos);
            }
            free(c.p);
        }
    } else if (strstr(tmpl, "<|user|>")) {
        if (!eos) {
            st = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                "chat_template (Zephyr) needs eos_token in tokenizer_config.json");
            goto out;
        }
        for (int32_t i = 0; i < n; i++) {
            const char *r = msgs[i].role;
            if (!strcmp(r, "user") || !strcmp(r, "system") || !strcmp(r, "assistant")) {
                sb_str(&b, "<|");
                sb_str(&b, r);
                sb_str(&b, "|>\n");
                sb_str(&b, msgs[i].content);
                sb_str(&b, eos);
                sb_str(&b, "\n");
            }
            if (i == n - 1 && add_gen) sb_str(&b, "<|assistant|>\n");
        }
    } else {
        st = tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                            "chat_template: unrecognised form (supported: ChatML, Llama-3, "
                            "Llama-2 [INST] <<SYS>>, Zephyr)");
        goto out;
    }
    if (b.oom) {
        st = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "chat_apply: out of memory");
        goto out;
    }
    *n_out = b.n;
    if (b.n > cap)
        st = tinfer_err_set(err, TINFER_ERR_BUFFER_TOO_SMALL,
                            "chat_apply: %zu bytes do not fit in cap %zu", b.n, cap);
    else if (b.n)
        memcpy(text, b.p, b.n);
out:
    free(b.p);
    return st;
}

tinfer_status tinfer_chat_apply(const tinfer_model *model, const tinfer_chat_message *messages,
                                int32_t n_messages, bool add_generation_prompt, char *text,
                                size_t cap, size_t *n_out) {
    if (n_out) *n_out = 0;
    if (!model) return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG, "tinfer_chat_apply: model is NULL");
    tinfer_err *err = tinfer_model_err_slot(model);
    const tinfer_tokenizer *tok = tinfer_model_tokenizer(model);
    if (!tok)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "tinfer_chat_apply: the model has no tokenizer");
    return tinfer_chat_render(tinfer_tokenizer_chat_template(tok), tinfer_tokenizer_bos_text(tok),
                              tinfer_tokenizer_eos_text(tok), messages, n_messages,
                              add_generation_prompt, text, cap, n_out, err);
}

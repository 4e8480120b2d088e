/*
 * api.c — request and response JSON of the OpenAI-compatible endpoints.
 *
 * Requests (/v1/completions, /v1/chat/completions): prompt | messages, max_tokens
 * (max_completion_tokens for chat), temperature, top_p, top_k, min_p, repetition_penalty
 * (repeat_penalty, llama-server's name, too), seed, stop (string or list), stream, model, n (1),
 * ignore_eos (vLLM's and llama-server's: generate max_tokens whatever comes; for benchmarks).
 * Sampling starts from the model's generation_config.json (as tinfer-generate and HF do), then
 * the request's fields override. Unknown fields are ignored, as OpenAI's API does; a known field
 * of the wrong type or out of range is a 400 naming it. max_tokens defaults to 16 for
 * completions (OpenAI's default) and to the rest of the context for chat; a prompt plus
 * max_tokens beyond the context is a 400 (code context_length_exceeded), never a truncation.
 * Responses follow OpenAI's shapes, plus llama-server's `timings` object.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include "api.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void api_error_set(api_error *e, int http_status, const char *type, const char *code,
                   const char *fmt, ...) {
    e->http_status = http_status;
    e->type = type;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

/* A 400 invalid_request_error; returns -1 so that `return BAD(...)` reads as it does. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
bad_request(api_error *e, const char *code, const char *fmt, ...) {
    e->http_status = 400;
    e->type = "invalid_request_error";
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}
#define BAD bad_request

/* A JSON number that is an integer in [lo, hi]. */
static int get_int(const cJSON *o, const char *key, double lo, double hi, int64_t *out,
                   bool *present, api_error *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *present = v && !cJSON_IsNull(v);
    if (!*present) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
        return BAD(e, "invalid_type", "'%s' must be an integer", key);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return BAD(e, "invalid_value", "'%s' must be in [%.0f, %.0f]", key, lo, hi);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int get_float(const cJSON *o, const char *key, double lo, double hi, float *out,
                     api_error *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v)) return BAD(e, "invalid_type", "'%s' must be a number", key);
    if (!(v->valuedouble >= lo && v->valuedouble <= hi))
        return BAD(e, "invalid_value", "'%s' must be in [%g, %g]", key, lo, hi);
    *out = (float)v->valuedouble;
    return 0;
}

/* Tokenizes text into r->prompt. */
static int tokenize_into(const api_model *m, const char *text, size_t len, uint32_t flags,
                         srv_request *r, api_error *e) {
    int32_t n = 0;
    tinfer_status rc = tinfer_tokenize(m->model, text, len, flags, NULL, 0, &n);
    if (rc != TINFER_OK && rc != TINFER_ERR_BUFFER_TOO_SMALL) {
        api_error_set(e, 500, "server_error", "tokenizer", "%s", tinfer_last_error());
        return -1;
    }
    if (n > m->n_ctx) /* counted before any allocation: a huge prompt costs no memory */
        return BAD(e, "context_length_exceeded",
                   "the prompt has %d tokens but the context holds %d", (int)n, (int)m->n_ctx);
    r->prompt = malloc(((size_t)n + 1) * sizeof *r->prompt);
    if (!r->prompt) {
        api_error_set(e, 500, "server_error", "out_of_memory", "out of memory");
        return -1;
    }
    if (tinfer_tokenize(m->model, text, len, flags, r->prompt, n, &n) != TINFER_OK) {
        api_error_set(e, 500, "server_error", "tokenizer", "%s", tinfer_last_error());
        return -1;
    }
    r->n_prompt = n;
    return 0;
}

static int parse_prompt(const api_model *m, const cJSON *root, srv_request *r, api_error *e) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
    if (!p || cJSON_IsNull(p)) return BAD(e, "missing_field", "'prompt' is required");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(p->child))
        p = p->child; /* ["text"]: one prompt */
    if (cJSON_IsString(p))
        return tokenize_into(m, p->valuestring, strlen(p->valuestring), TINFER_TOKENIZE_ADD_SPECIAL,
                             r, e);
    if (!cJSON_IsArray(p))
        return BAD(e, "invalid_type", "'prompt' must be a string or an array of token ids");
    int n = cJSON_GetArraySize(p);
    if (n > 0 && cJSON_IsString(p->child))
        return BAD(e, "invalid_value", "one prompt per request ('prompt' has %d strings)", n);
    if (n > m->n_ctx)
        return BAD(e, "context_length_exceeded",
                   "the prompt has %d tokens but the context holds %d", n, (int)m->n_ctx);
    r->prompt = malloc(((size_t)n + 1) * sizeof *r->prompt);
    if (!r->prompt) {
        api_error_set(e, 500, "server_error", "out_of_memory", "out of memory");
        return -1;
    }
    const int32_t n_vocab = tinfer_model_n_vocab(m->model);
    int i = 0;
    for (const cJSON *t = p->child; t; t = t->next, i++) {
        if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) || t->valuedouble < 0 ||
            t->valuedouble >= n_vocab)
            return BAD(e, "invalid_value", "'prompt'[%d] is not a token id in [0, %d)", i,
                       (int)n_vocab);
        r->prompt[i] = (tinfer_token)t->valuedouble;
    }
    r->n_prompt = n;
    return 0;
}

/* A message's content: a string, or OpenAI's list of parts whose "text" parts are joined. */
static int message_content(const cJSON *c, int idx, char **out, api_error *e) {
    if (cJSON_IsString(c)) {
        *out = strdup(c->valuestring);
    } else if (cJSON_IsArray(c)) {
        size_t len = 0;
        for (const cJSON *part = c->child; part; part = part->next) {
            const cJSON *ty = cJSON_GetObjectItemCaseSensitive(part, "type");
            const cJSON *tx = cJSON_GetObjectItemCaseSensitive(part, "text");
            if (!cJSON_IsString(ty) || strcmp(ty->valuestring, "text") || !cJSON_IsString(tx))
                return BAD(e, "invalid_value",
                           "'messages'[%d].content: only parts {\"type\":\"text\",\"text\":...} "
                           "are supported",
                           idx);
            len += strlen(tx->valuestring);
        }
        *out = malloc(len + 1);
        if (*out) {
            size_t at = 0;
            for (const cJSON *part = c->child; part; part = part->next) {
                const char *tx = cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring;
                memcpy(*out + at, tx, strlen(tx));
                at += strlen(tx);
            }
            (*out)[at] = '\0';
        }
    } else {
        return BAD(e, "invalid_type", "'messages'[%d].content must be a string", idx);
    }
    if (!*out) {
        api_error_set(e, 500, "server_error", "out_of_memory", "out of memory");
        return -1;
    }
    return 0;
}

static int parse_messages(const api_model *m, const cJSON *root, srv_request *r, api_error *e) {
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!msgs || cJSON_IsNull(msgs)) return BAD(e, "missing_field", "'messages' is required");
    if (!cJSON_IsArray(msgs)) return BAD(e, "invalid_type", "'messages' must be an array");
    int n = cJSON_GetArraySize(msgs);
    if (n == 0) return BAD(e, "invalid_value", "'messages' is empty");
    tinfer_chat_message *cm = calloc((size_t)n, sizeof *cm);
    char **content = calloc((size_t)n, sizeof *content);
    char *text = NULL;
    int rc = -1;
    if (!cm || !content) {
        api_error_set(e, 500, "server_error", "out_of_memory", "out of memory");
        goto done;
    }
    int i = 0;
    for (const cJSON *msg = msgs->child; msg; msg = msg->next, i++) {
        if (!cJSON_IsObject(msg)) {
            BAD(e, "invalid_type", "'messages'[%d] must be an object", i);
            goto done;
        }
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
        if (!cJSON_IsString(role)) {
            BAD(e, "invalid_type", "'messages'[%d].role must be a string", i);
            goto done;
        }
        if (strcmp(role->valuestring, "system") && strcmp(role->valuestring, "user") &&
            strcmp(role->valuestring, "assistant")) {
            BAD(e, "invalid_value", "'messages'[%d].role '%.32s' is not system, user or assistant",
                i, role->valuestring);
            goto done;
        }
        if (message_content(cJSON_GetObjectItemCaseSensitive(msg, "content"), i, &content[i], e))
            goto done;
        cm[i].role = role->valuestring;
        cm[i].content = content[i];
    }
    size_t need = 0;
    tinfer_status trc = tinfer_chat_apply(m->model, cm, n, true, NULL, 0, &need);
    if (trc != TINFER_OK && trc != TINFER_ERR_BUFFER_TOO_SMALL) {
        api_error_set(e, 400, "invalid_request_error", "chat_template", "%s", tinfer_last_error());
        goto done;
    }
    text = malloc(need + 1);
    if (!text || tinfer_chat_apply(m->model, cm, n, true, text, need, &need) != TINFER_OK) {
        api_error_set(e, 500, "server_error", "out_of_memory", "out of memory");
        goto done;
    }
    rc = tokenize_into(m, text, need, TINFER_TOKENIZE_PARSE_SPECIAL, r, e);
done:
    if (content)
        for (int k = 0; k < n; k++)
            free(content[k]);
    free(content);
    free(cm);
    free(text);
    return rc;
}

static int parse_stops(const cJSON *root, srv_request *r, api_error *e) {
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "stop");
    if (!st || cJSON_IsNull(st)) return 0;
    const cJSON *one = cJSON_IsString(st) ? st : NULL;
    if (!one && !cJSON_IsArray(st))
        return BAD(e, "invalid_type", "'stop' must be a string or an array of strings");
    if (!one && cJSON_GetArraySize(st) > SRV_MAX_STOPS)
        return BAD(e, "invalid_value", "'stop' has more than %d strings", SRV_MAX_STOPS);
    for (const cJSON *s = one ? one : st->child; s; s = one ? NULL : s->next) {
        if (!cJSON_IsString(s))
            return BAD(e, "invalid_type", "'stop' must be a string or an array of strings");
        size_t len = strlen(s->valuestring);
        if (len == 0 || len > SRV_MAX_STOP_LEN)
            return BAD(e, "invalid_value", "a 'stop' string must have 1 to %d bytes",
                       SRV_MAX_STOP_LEN);
        r->stops[r->n_stops] = strdup(s->valuestring);
        if (!r->stops[r->n_stops]) {
            api_error_set(e, 500, "server_error", "out_of_memory", "out of memory");
            return -1;
        }
        r->n_stops++;
    }
    return 0;
}

int api_parse_request(const api_model *m, const char *body, size_t n, bool chat, srv_request *r,
                      api_error *e) {
    int rc = -1;
    cJSON *root = cJSON_ParseWithLength(body, n);
    if (!root) return BAD(e, "invalid_json", "the body is not valid JSON");
    if (!cJSON_IsObject(root)) {
        BAD(e, "invalid_json", "the body must be a JSON object");
        goto done;
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (model && !cJSON_IsNull(model)) {
        if (!cJSON_IsString(model)) {
            BAD(e, "invalid_type", "'model' must be a string");
            goto done;
        }
        if (strcmp(model->valuestring, m->id) != 0) {
            api_error_set(e, 404, "not_found_error", "model_not_found",
                          "the model '%.64s' does not exist (this server serves '%.64s')",
                          model->valuestring, m->id);
            goto done;
        }
    }
    const cJSON *stream = cJSON_GetObjectItemCaseSensitive(root, "stream");
    if (stream && !cJSON_IsNull(stream) && !cJSON_IsBool(stream)) {
        BAD(e, "invalid_type", "'stream' must be a boolean");
        goto done;
    }
    r->stream = cJSON_IsTrue(stream);
    r->chat = chat;
    const cJSON *ign = cJSON_GetObjectItemCaseSensitive(root, "ignore_eos");
    if (ign && !cJSON_IsNull(ign) && !cJSON_IsBool(ign)) {
        BAD(e, "invalid_type", "'ignore_eos' must be a boolean");
        goto done;
    }
    r->ignore_eos = cJSON_IsTrue(ign);

    int64_t v = 0;
    bool present = false;
    if (get_int(root, "n", 1, 1, &v, &present, e)) goto done; /* one choice per request */
    const char *penalties[] = {"frequency_penalty", "presence_penalty"};
    for (int k = 0; k < 2; k++) {
        float pv = 0;
        if (get_float(root, penalties[k], -2, 2, &pv, e)) goto done;
        if (pv != 0) {
            BAD(e, "unsupported", "'%s' is not supported (use repetition_penalty)", penalties[k]);
            goto done;
        }
    }

    tinfer_sampler_params sp = tinfer_sampler_default_params();
    tinfer_model_generation_defaults(m->model, &sp);
    /* no seed given: a different one per request, as OpenAI's API samples */
    sp.seed = r->id * 0x9E3779B97F4A7C15ull ^ (uint64_t)r->created;
    float rp = sp.repeat_penalty;
    if (get_float(root, "temperature", 0, 100, &sp.temperature, e) ||
        get_float(root, "top_p", 0, 1, &sp.top_p, e) ||
        get_float(root, "min_p", 0, 1, &sp.min_p, e) ||
        get_float(root, "repeat_penalty", 1e-3, 100, &rp, e) ||
        get_float(root, "repetition_penalty", 1e-3, 100, &rp, e))
        goto done;
    sp.repeat_penalty = rp;
    if (get_int(root, "top_k", -1, 1 << 30, &v, &present, e)) goto done;
    if (present) sp.top_k = (int32_t)v;
    if (get_int(root, "seed", -9007199254740991.0, 9007199254740991.0, &v, &present, e)) goto done;
    if (present) sp.seed = (uint64_t)v;
    r->sp = sp;

    if (parse_stops(root, r, e)) goto done;
    if ((chat ? parse_messages(m, root, r, e) : parse_prompt(m, root, r, e)) != 0) goto done;
    if (r->n_prompt == 0) {
        BAD(e, "invalid_value", "the prompt is empty after tokenization");
        goto done;
    }

    int64_t max_tokens = 0;
    bool has_max = false;
    if (get_int(root, "max_tokens", 1, 1 << 30, &max_tokens, &has_max, e)) goto done;
    if (chat && !has_max &&
        get_int(root, "max_completion_tokens", 1, 1 << 30, &max_tokens, &has_max, e))
        goto done;
    const int64_t room = (int64_t)m->n_ctx - r->n_prompt;
    if (!has_max) max_tokens = chat ? room : (room < 16 ? room : 16);
    if (max_tokens < 1 || max_tokens > room) {
        BAD(e, "context_length_exceeded",
            "the prompt (%d tokens) plus max_tokens (%lld) exceeds the context of %d tokens",
            (int)r->n_prompt, (long long)(has_max ? max_tokens : 1), (int)m->n_ctx);
        goto done;
    }
    r->max_tokens = (int32_t)max_tokens;
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */

static char *print_delete(cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

char *api_error_json(const api_error *e) {
    cJSON *o = cJSON_CreateObject(), *err = cJSON_AddObjectToObject(o, "error");
    if (!err) {
        cJSON_Delete(o);
        return NULL;
    }
    cJSON_AddStringToObject(err, "message", e->message);
    cJSON_AddStringToObject(err, "type", e->type);
    cJSON_AddStringToObject(err, "code", e->code);
    return print_delete(o);
}

static void add_head(cJSON *o, const api_model *m, const srv_request *r, const char *object) {
    char id[48];
    snprintf(id, sizeof id, "%s-%llu", r->chat ? "chatcmpl" : "cmpl", (unsigned long long)r->id);
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)r->created);
    cJSON_AddStringToObject(o, "model", m->id);
}

/* usage + llama-server's timings: prompt = queue exit to first token (the prefill), predicted =
 * first token to the end (the decode steps), per-token and per-second figures from those. */
/* milliseconds and rates to 3 decimals: the clock is not finer, and the JSON stays readable */
static double r3(double x) { return round(x * 1e3) / 1e3; }

static void add_usage(cJSON *o, const srv_request *r) {
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", r->n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", r->n_gen);
    cJSON_AddNumberToObject(u, "total_tokens", r->n_prompt + r->n_gen);
    const double p_ms = r->t_first > 0 ? 1e3 * (r->t_first - r->t_start) : 0;
    const double g_ms = r->t_first > 0 ? 1e3 * (r->t_done - r->t_first) : 0;
    cJSON *t = cJSON_AddObjectToObject(o, "timings");
    cJSON_AddNumberToObject(t, "prompt_n", r->n_prompt);
    cJSON_AddNumberToObject(t, "prompt_ms", r3(p_ms));
    cJSON_AddNumberToObject(t, "prompt_per_token_ms", r3(r->n_prompt ? p_ms / r->n_prompt : 0));
    cJSON_AddNumberToObject(t, "prompt_per_second", r3(p_ms > 0 ? 1e3 * r->n_prompt / p_ms : 0));
    cJSON_AddNumberToObject(t, "predicted_n", r->n_gen);
    cJSON_AddNumberToObject(t, "predicted_ms", r3(g_ms));
    cJSON_AddNumberToObject(t, "predicted_per_token_ms", r3(r->n_gen ? g_ms / r->n_gen : 0));
    cJSON_AddNumberToObject(t, "predicted_per_second", r3(g_ms > 0 ? 1e3 * r->n_gen / g_ms : 0));
    cJSON_AddNumberToObject(t, "queue_ms", r3(1e3 * (r->t_start - r->t_submit)));
}

/* text is r->text, or a delta; it is valid UTF-8 (the detokenizer replaces invalid bytes). */
static cJSON *add_choice(cJSON *o, const srv_request *r, const char *text, size_t n,
                         const char *finish, bool delta, bool role_only) {
    cJSON *arr = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
    if (!arr || !c) {
        cJSON_Delete(c);
        return NULL;
    }
    cJSON_AddItemToArray(arr, c);
    cJSON_AddNumberToObject(c, "index", 0);
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, text, n);
    s[n] = '\0';
    if (r->chat) {
        cJSON *msg = cJSON_AddObjectToObject(c, delta ? "delta" : "message");
        if (!delta || role_only) cJSON_AddStringToObject(msg, "role", "assistant");
        if (!delta || role_only || n || !finish) cJSON_AddStringToObject(msg, "content", s);
    } else {
        cJSON_AddStringToObject(c, "text", s);
        cJSON_AddNullToObject(c, "logprobs");
    }
    free(s);
    if (finish)
        cJSON_AddStringToObject(c, "finish_reason", finish);
    else
        cJSON_AddNullToObject(c, "finish_reason");
    return c;
}

char *api_completion_json(const api_model *m, const srv_request *r) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    add_head(o, m, r, r->chat ? "chat.completion" : "text_completion");
    if (!add_choice(o, r, r->text ? r->text : "", r->text_n, r->finish, false, false)) {
        cJSON_Delete(o);
        return NULL;
    }
    add_usage(o, r);
    return print_delete(o);
}

char *api_chunk_json(const api_model *m, const srv_request *r, const char *delta, size_t n,
                     const char *finish, bool role_only) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    add_head(o, m, r, r->chat ? "chat.completion.chunk" : "text_completion");
    if (!add_choice(o, r, delta ? delta : "", n, finish, true, role_only)) {
        cJSON_Delete(o);
        return NULL;
    }
    if (finish) add_usage(o, r);
    return print_delete(o);
}

char *api_models_json(const api_model *m, int64_t created) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data"), *d = cJSON_CreateObject();
    if (!data || !d) {
        cJSON_Delete(d);
        cJSON_Delete(o);
        return NULL;
    }
    cJSON_AddItemToArray(data, d);
    cJSON_AddStringToObject(d, "id", m->id);
    cJSON_AddStringToObject(d, "object", "model");
    cJSON_AddNumberToObject(d, "created", (double)created);
    cJSON_AddStringToObject(d, "owned_by", "tinfer");
    cJSON *meta = cJSON_AddObjectToObject(d, "meta");
    cJSON_AddStringToObject(meta, "desc", tinfer_model_desc(m->model));
    cJSON_AddNumberToObject(meta, "n_params", (double)tinfer_model_n_params(m->model));
    cJSON_AddNumberToObject(meta, "n_vocab", tinfer_model_n_vocab(m->model));
    cJSON_AddNumberToObject(meta, "n_ctx_train", tinfer_model_n_ctx_train(m->model));
    cJSON_AddNumberToObject(meta, "n_ctx", m->n_ctx);
    return print_delete(o);
}

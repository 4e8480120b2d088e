/*
 * api.h — the OpenAI-compatible JSON of tinfer-server: request bodies in, response bodies out.
 * No HTTP here (http.c) and no scheduling (sched.c): pure functions of the model and a request.
 */
#ifndef TINFER_SERVER_API_H
#define TINFER_SERVER_API_H

#include "server.h"

typedef struct api_model {
    tinfer_model *model;
    const char *id; /* the name clients pass as "model" */
    int32_t n_ctx;  /* tokens per sequence */
} api_model;

/* An OpenAI-style error: {"error":{"message","type","code"}} with its HTTP status. */
typedef struct api_error {
    int http_status;
    const char *type; /* "invalid_request_error", "not_found_error", "server_error", ... */
    const char *code; /* "invalid_json", "invalid_type", "missing_field", ... */
    char message[320];
} api_error;

/* Parses a /v1/completions (chat = false) or /v1/chat/completions body into r: prompt tokens,
 * max_tokens, sampler params, stops, stream. Returns 0, or -1 with e filled (4xx). */
int api_parse_request(const api_model *m, const char *body, size_t n, bool chat, srv_request *r,
                      api_error *e);

/* Response bodies (malloc'd, NUL-terminated; NULL when out of memory). Read r under the
 * scheduler's mutex or after it is done. */
char *api_error_json(const api_error *e);
char *api_completion_json(const api_model *m, const srv_request *r);
/* One streamed chunk: a text delta (finish NULL), the chat role opener (role_only), or the last
 * chunk (finish set; carries usage and timings). */
char *api_chunk_json(const api_model *m, const srv_request *r, const char *delta, size_t n,
                     const char *finish, bool role_only);
char *api_models_json(const api_model *m, int64_t created);

void api_error_set(api_error *e, int http_status, const char *type, const char *code,
                   const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

#endif

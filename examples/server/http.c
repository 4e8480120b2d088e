/*
 * http.c — tinfer-server's HTTP side on libmicrohttpd: routing, bodies, responses, streaming.
 *
 * libmicrohttpd runs one thread per connection, so a handler may block: a non-streamed
 * completion waits on its request until the scheduler ends it; a streamed one returns a
 * response whose reader waits for each piece of text and sends it as a Server-Sent Event.
 * While it waits, the thread looks at its socket every WAIT_SLICE_MS: a client that has gone
 * (closed or reset) gets its request cancelled, and its sequence slot is freed on the next step.
 *
 * Bodies larger than max_body are refused with 413 without being stored (a Content-Length over
 * the limit is refused before any byte is read). Every error is OpenAI-shaped JSON
 * {"error":{"message","type","code"}}.
 */
#define _GNU_SOURCE /* POLLRDHUP */

#include "http.h"

#include "api.h"

#include <microhttpd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* How often a waiting connection checks its socket: a disconnect frees the slot within this. */
#define WAIT_SLICE_MS 100

typedef struct conn {
    srv_http *h;
    struct MHD_Connection *mc;
    char *body;
    size_t body_n, body_cap;
    bool too_big;
    srv_request *req;
    /* streaming */
    char *sse; /* Server-Sent Events not yet handed to libmicrohttpd */
    size_t sse_n, sse_off, sse_cap;
    size_t text_sent;
    bool role_sent, end_sent;
} conn;

/* ---------------------------------------------------------------------------------------- */

static enum MHD_Result send_text(struct MHD_Connection *mc, unsigned status, const char *ctype,
                                 char *body /* malloc'd, taken */, const char *retry_after) {
    static const char oom[] =
        "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"code\":"
        "\"out_of_memory\"}}";
    struct MHD_Response *resp;
    if (body) {
        resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    } else {
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        ctype = "application/json";
        resp = MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
    }
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (retry_after) MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, retry_after);
    enum MHD_Result ret = MHD_queue_response(mc, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *mc, unsigned status, char *json) {
    return send_text(mc, status, "application/json", json, NULL);
}

static enum MHD_Result send_error(srv_http *h, struct MHD_Connection *mc, const api_error *e) {
    pthread_mutex_lock(&h->stats_mu);
    h->http_errors++;
    pthread_mutex_unlock(&h->stats_mu);
    return send_text(mc, (unsigned)e->http_status, "application/json", api_error_json(e),
                     e->http_status == 503 ? "1" : NULL);
}

/* True when the peer closed or reset the connection. */
static bool client_gone(struct MHD_Connection *mc) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return true;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
    char c;
    /* readable: either the next pipelined request (data) or EOF (0) */
    return recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* Waits on r->cv for up to WAIT_SLICE_MS; mu held. */
static void wait_slice(srv_request *r, pthread_mutex_t *mu) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += WAIT_SLICE_MS * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&r->cv, mu, &ts);
}

static void log_request(srv_http *h, const char *url, const srv_request *r, int status) {
    if (h->quiet) return;
    double ttft = r->t_first > 0 ? 1e3 * (r->t_first - r->t_submit) : 0;
    double gen_s = r->t_first > 0 ? r->t_done - r->t_first : 0;
    fprintf(stderr,
            "tinfer-server: %s %d id %llu prompt %d gen %d ttft %.1f ms decode %.1f tok/s %s\n",
            url, status, (unsigned long long)r->id, (int)r->n_prompt, (int)r->n_gen, ttft,
            gen_s > 0 ? r->n_gen / gen_s : 0.0,
            r->finish      ? r->finish
            : r->cancelled ? "cancelled"
                           : "error");
}

/* ---------------------------------------------------------------------------------------- */
/* streaming                                                                                */

static int sse_add(conn *k, const char *json) {
    if (!json) return -1;
    size_t n = strlen(json), need = k->sse_n + n + 9; /* "data: " + "\n\n" + NUL */
    if (need > k->sse_cap) {
        char *p = realloc(k->sse, need * 2);
        if (!p) return -1;
        k->sse = p;
        k->sse_cap = need * 2;
    }
    k->sse_n += (size_t)sprintf(k->sse + k->sse_n, "data: %s\n\n", json);
    return 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    conn *k = cls;
    srv_http *h = k->h;
    pthread_mutex_t *mu = sched_mutex(h->sched);
    for (;;) {
        if (k->sse_off < k->sse_n) {
            size_t n = k->sse_n - k->sse_off;
            if (n > max) n = max;
            memcpy(buf, k->sse + k->sse_off, n);
            k->sse_off += n;
            return (ssize_t)n;
        }
        if (k->end_sent) return MHD_CONTENT_READER_END_OF_STREAM;
        k->sse_off = k->sse_n = 0;
        srv_request *r = k->req;
        int bad = 0;
        if (!k->role_sent && r->chat) { /* OpenAI's first chat chunk carries the role */
            k->role_sent = true;
            char *j = api_chunk_json(&h->m, r, NULL, 0, NULL, true); /* immutable fields only */
            bad = sse_add(k, j);
            free(j);
            if (bad) return MHD_CONTENT_READER_END_WITH_ERROR;
            continue;
        }
        pthread_mutex_lock(mu);
        while (r->text_n == k->text_sent && r->state != SRV_DONE) {
            if (client_gone(k->mc)) {
                pthread_mutex_unlock(mu);
                sched_cancel(h->sched, r);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
            wait_slice(r, mu);
        }
        if (r->text_n > k->text_sent) {
            char *j = api_chunk_json(&h->m, r, r->text + k->text_sent, r->text_n - k->text_sent,
                                     NULL, false);
            k->text_sent = r->text_n;
            bad = sse_add(k, j);
            free(j);
        } else { /* done, everything sent */
            char *j;
            if (r->finish) {
                j = api_chunk_json(&h->m, r, NULL, 0, r->finish, false);
            } else {
                api_error e;
                api_error_set(&e, 500, "server_error", r->cancelled ? "cancelled" : "runtime_error",
                              "%s", r->cancelled ? "the server is shutting down" : r->error);
                j = api_error_json(&e);
            }
            bad = sse_add(k, j) || sse_add(k, "[DONE]");
            free(j);
            k->end_sent = true;
            log_request(h, r->chat ? "/v1/chat/completions" : "/v1/completions", r,
                        r->finish ? 200 : 500);
        }
        pthread_mutex_unlock(mu);
        if (bad) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

/* ---------------------------------------------------------------------------------------- */

static enum MHD_Result handle_completion(srv_http *h, conn *k, bool chat, const char *url) {
    struct MHD_Connection *mc = k->mc;
    api_error e;
    if (!atomic_load(&h->ready)) {
        api_error_set(&e, 503, "unavailable_error", "loading", "the model is loading");
        return send_error(h, mc, &e);
    }
    if (k->too_big) {
        api_error_set(&e, 413, "invalid_request_error", "body_too_large",
                      "the request body exceeds %zu bytes", h->max_body);
        return send_error(h, mc, &e);
    }
    srv_request *r = sched_request_new();
    if (!r) {
        api_error_set(&e, 500, "server_error", "out_of_memory", "out of memory");
        return send_error(h, mc, &e);
    }
    r->id = atomic_fetch_add(&h->next_id, 1);
    r->created = (int64_t)time(NULL);
    if (api_parse_request(&h->m, k->body ? k->body : "", k->body_n, chat, r, &e) != 0) {
        sched_release(h->sched, r);
        return send_error(h, mc, &e);
    }
    r->t_submit = srv_now();
    if (sched_submit(h->sched, r) != 0) {
        sched_release(h->sched, r);
        api_error_set(&e, 503, "unavailable_error", "server_busy",
                      "the server is busy (every slot and the queue are taken) or shutting down; "
                      "retry later");
        return send_error(h, mc, &e);
    }
    k->req = r;
    atomic_fetch_add(&h->in_flight, 1); /* until on_completed: the answer is sent or abandoned */
    if (r->stream) {
        struct MHD_Response *resp =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, k, NULL);
        if (!resp) return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        enum MHD_Result ret = MHD_queue_response(mc, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    pthread_mutex_t *mu = sched_mutex(h->sched);
    pthread_mutex_lock(mu);
    while (r->state != SRV_DONE) {
        if (client_gone(mc)) {
            pthread_mutex_unlock(mu);
            sched_cancel(h->sched, r);
            return MHD_NO; /* nobody to answer: close */
        }
        wait_slice(r, mu);
    }
    char *json = NULL;
    int status = 200;
    if (r->finish) {
        json = api_completion_json(&h->m, r);
    } else if (r->cancelled) { /* only shutdown cancels a request whose client is still here */
        status = 503;
        api_error_set(&e, 503, "unavailable_error", "cancelled", "the server is shutting down");
        json = api_error_json(&e);
    } else {
        status = 500;
        api_error_set(&e, 500, "server_error", "runtime_error", "%s", r->error);
        json = api_error_json(&e);
    }
    log_request(h, url, r, status);
    pthread_mutex_unlock(mu);
    return send_json(mc, (unsigned)status, json);
}

static char *metrics_text(srv_http *h) {
    srv_metrics m;
    int32_t active = 0, queued = 0;
    int64_t kv_used = 0, kv_cap = 1;
    memset(&m, 0, sizeof m);
    if (atomic_load(&h->ready)) {
        pthread_mutex_lock(sched_mutex(h->sched));
        sched_snapshot(h->sched, &m, &active, &queued, &kv_used, &kv_cap);
        pthread_mutex_unlock(sched_mutex(h->sched));
    }
    pthread_mutex_lock(&h->stats_mu);
    uint64_t http_errors = h->http_errors;
    pthread_mutex_unlock(&h->stats_mu);
    size_t cap = 4096;
    char *s = malloc(cap);
    if (!s) return NULL;
    int n = snprintf(
        s, cap,
        "# HELP tinfer_requests_total Generation requests accepted into the queue.\n"
        "# TYPE tinfer_requests_total counter\ntinfer_requests_total %llu\n"
        "# HELP tinfer_requests_finished_total Generation requests ended, by outcome.\n"
        "# TYPE tinfer_requests_finished_total counter\n"
        "tinfer_requests_finished_total{outcome=\"ok\"} %llu\n"
        "tinfer_requests_finished_total{outcome=\"error\"} %llu\n"
        "tinfer_requests_finished_total{outcome=\"cancelled\"} %llu\n"
        "# HELP tinfer_requests_rejected_total Requests answered 4xx/5xx before the queue.\n"
        "# TYPE tinfer_requests_rejected_total counter\ntinfer_requests_rejected_total %llu\n"
        "# HELP tinfer_requests_active Sequences in a slot (prefill or decode).\n"
        "# TYPE tinfer_requests_active gauge\ntinfer_requests_active %d\n"
        "# HELP tinfer_requests_queued Requests waiting for a slot.\n"
        "# TYPE tinfer_requests_queued gauge\ntinfer_requests_queued %d\n"
        "# HELP tinfer_prompt_tokens_total Prompt tokens prefilled.\n"
        "# TYPE tinfer_prompt_tokens_total counter\ntinfer_prompt_tokens_total %llu\n"
        "# HELP tinfer_generated_tokens_total Tokens generated.\n"
        "# TYPE tinfer_generated_tokens_total counter\ntinfer_generated_tokens_total %llu\n"
        "# HELP tinfer_prompt_tokens_seconds Prompt tokens per second of the steps that "
        "carried prompts.\n"
        "# TYPE tinfer_prompt_tokens_seconds gauge\ntinfer_prompt_tokens_seconds %.3f\n"
        "# HELP tinfer_predicted_tokens_seconds Tokens per second of the decode-only steps "
        "(aggregate over the batch).\n"
        "# TYPE tinfer_predicted_tokens_seconds gauge\ntinfer_predicted_tokens_seconds %.3f\n"
        "# HELP tinfer_decode_steps_total Forward calls (one per scheduler step).\n"
        "# TYPE tinfer_decode_steps_total counter\ntinfer_decode_steps_total %llu\n"
        "# HELP tinfer_batch_tokens_total Tokens over all forward calls.\n"
        "# TYPE tinfer_batch_tokens_total counter\ntinfer_batch_tokens_total %llu\n"
        "# HELP tinfer_kv_cache_tokens Tokens held in the KV cache.\n"
        "# TYPE tinfer_kv_cache_tokens gauge\ntinfer_kv_cache_tokens %lld\n"
        "# HELP tinfer_kv_cache_usage_ratio KV cache use (1 = every slot's context full).\n"
        "# TYPE tinfer_kv_cache_usage_ratio gauge\ntinfer_kv_cache_usage_ratio %.6f\n"
        "# HELP tinfer_http_errors_total HTTP responses with an error status.\n"
        "# TYPE tinfer_http_errors_total counter\ntinfer_http_errors_total %llu\n",
        (unsigned long long)m.requests_total, (unsigned long long)m.requests_ok,
        (unsigned long long)m.requests_failed, (unsigned long long)m.requests_cancelled,
        (unsigned long long)m.requests_rejected, (int)active, (int)queued,
        (unsigned long long)m.prompt_tokens_total, (unsigned long long)m.generated_tokens_total,
        m.t_prompt_busy > 0 ? (double)m.prompt_tokens_total / m.t_prompt_busy : 0.0,
        m.t_decode_busy > 0 ? (double)m.decode_step_tokens / m.t_decode_busy : 0.0,
        (unsigned long long)m.steps_total, (unsigned long long)m.batch_tokens_total,
        (long long)kv_used, kv_cap > 0 ? (double)kv_used / (double)kv_cap : 0.0,
        (unsigned long long)http_errors);
    if (n < 0 || (size_t)n >= cap) {
        free(s);
        return NULL;
    }
    return s;
}

static enum MHD_Result route(srv_http *h, conn *k, const char *url, const char *method) {
    struct MHD_Connection *mc = k->mc;
    const bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    const bool ready = atomic_load(&h->ready), draining = atomic_load(&h->draining);
    api_error e;
    if (!strcmp(url, "/health")) {
        if (!get) goto not_allowed;
        if (!ready || draining)
            return send_text(
                mc, 503, "application/json",
                strdup(draining ? "{\"status\":\"shutting down\"}" : "{\"status\":\"loading\"}"),
                "1");
        return send_json(mc, 200, strdup("{\"status\":\"ok\"}"));
    }
    if (!strcmp(url, "/metrics")) {
        if (!get) goto not_allowed;
        return send_text(mc, 200, "text/plain; version=0.0.4", metrics_text(h), NULL);
    }
    if (!strcmp(url, "/v1/models") || !strcmp(url, "/models")) {
        if (!get) goto not_allowed;
        if (!ready) {
            api_error_set(&e, 503, "unavailable_error", "loading", "the model is loading");
            return send_error(h, mc, &e);
        }
        return send_json(mc, 200, api_models_json(&h->m, h->started));
    }
    bool chat = !strcmp(url, "/v1/chat/completions") || !strcmp(url, "/chat/completions");
    if (chat || !strcmp(url, "/v1/completions") || !strcmp(url, "/completions")) {
        if (!post) goto not_allowed;
        return handle_completion(h, k, chat, chat ? "/v1/chat/completions" : "/v1/completions");
    }
    api_error_set(&e, 404, "not_found_error", "not_found", "no route for %.64s %.128s", method,
                  url);
    return send_error(h, mc, &e);
not_allowed:
    api_error_set(&e, 405, "invalid_request_error", "method_not_allowed",
                  "%.16s is not allowed on %.128s", method, url);
    return send_error(h, mc, &e);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
    (void)version;
    srv_http *h = cls;
    conn *k = *con_cls;
    if (!k) { /* first call: headers only */
        k = calloc(1, sizeof *k);
        if (!k) return MHD_NO;
        k->h = h;
        k->mc = mc;
        *con_cls = k;
        const char *cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > h->max_body) k->too_big = true;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (k->too_big) return MHD_YES; /* read and dropped, answered 413 at the end */
        if (k->body_n + n > h->max_body) {
            k->too_big = true;
            free(k->body);
            k->body = NULL;
            k->body_n = k->body_cap = 0;
            return MHD_YES;
        }
        if (k->body_n + n + 1 > k->body_cap) {
            size_t cap = (k->body_n + n + 1) * 2;
            if (cap > h->max_body + 1) cap = h->max_body + 1;
            char *p = realloc(k->body, cap);
            if (!p) return MHD_NO;
            k->body = p;
            k->body_cap = cap;
        }
        memcpy(k->body + k->body_n, upload_data, n);
        k->body_n += n;
        k->body[k->body_n] = '\0';
        return MHD_YES;
    }
    return route(h, k, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)mc;
    (void)toe;
    srv_http *h = cls;
    conn *k = *con_cls;
    if (!k) return;
    if (k->req) {
        sched_cancel(h->sched, k->req); /* no-op when it ended */
        sched_release(h->sched, k->req);
        atomic_fetch_sub(&h->in_flight, 1);
    }
    free(k->body);
    free(k->sse);
    free(k);
    *con_cls = NULL;
}

int http_start(srv_http *h, const struct sockaddr *addr, bool ipv6, char *err, size_t err_cap) {
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_ERROR_LOG | (ipv6 ? MHD_USE_IPv6 : 0);
    h->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, addr,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)h->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)h->idle_timeout_s,
        /* cJSON's nesting limit (1000 levels) recurses well within 1 MiB */
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)1 << 20, MHD_OPTION_END);
    if (!h->daemon) {
        snprintf(err, err_cap, "cannot listen on the address (in use, or not this machine's)");
        return -1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : 0;
    return 0;
}

int http_drain(srv_http *h, double timeout_s) {
    double deadline = srv_now() + timeout_s;
    while (atomic_load(&h->in_flight) > 0 && srv_now() < deadline) {
        struct timespec d = {0, 5 * 1000000L};
        nanosleep(&d, NULL);
    }
    return atomic_load(&h->in_flight);
}

void http_stop(srv_http *h) {
    if (h->daemon) MHD_stop_daemon(h->daemon);
    h->daemon = NULL;
}

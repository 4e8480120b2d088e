/*
 * loadgen.c — tinfer-loadgen: a load generator for tinfer-server (or any OpenAI-compatible
 * server): C concurrent clients, each sending N streamed completion requests one after another.
 *
 *   tinfer-loadgen --url http://127.0.0.1:8080 -c 8 -n 4 --max-tokens 64 [--json out.json]
 *
 * Plain HTTP/1.1 over sockets (no client library: it runs wherever the server does).
 * Every response is checked: HTTP 200, every SSE event a JSON object, a final chunk with a
 * finish_reason and usage, then `data: [DONE]`. Reported: requests ok / failed, generated
 * tokens (the servers' usage.completion_tokens), wall time, aggregate generated tok/s, time to
 * first token (request sent -> first event with text) p50 / p99, and per-stream decode tok/s.
 * Exit status 1 when any request failed or was malformed.
 */
#define _POSIX_C_SOURCE 200809L

#include <cjson/cJSON.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef struct opts {
    const char *url, *prompt, *json_path;
    long clients, per_client, max_tokens;
    double temperature;
    bool chat, ignore_eos;
} opts;

typedef struct result {
    bool ok;
    char why[160];
    double t_send, t_first, t_end;
    long tokens;
} result;

typedef struct stream_state {
    result *res;
    char *line; /* the SSE line being assembled */
    size_t line_n, line_cap;
    bool done_seen, final_seen, bad;
} stream_state;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void mark_bad(stream_state *st, const char *fmt, ...) {
    if (st->bad) return;
    st->bad = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->res->why, sizeof st->res->why, fmt, ap);
    va_end(ap);
}

/* One complete SSE line. */
static void on_line(stream_state *st, const char *line) {
    if (line[0] == '\0') return;
    if (strncmp(line, "data: ", 6) != 0) return mark_bad(st, "not an SSE data line");
    const char *data = line + 6;
    if (st->done_seen) return mark_bad(st, "data after [DONE]");
    if (!strcmp(data, "[DONE]")) {
        st->done_seen = true;
        return;
    }
    cJSON *o = cJSON_Parse(data);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return mark_bad(st, "an event is not a JSON object");
    }
    if (cJSON_GetObjectItem(o, "error")) {
        cJSON_Delete(o);
        return mark_bad(st, "error event: %.100s", data);
    }
    const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    if (!ch) {
        cJSON_Delete(o);
        return mark_bad(st, "an event without choices");
    }
    const cJSON *text = cJSON_GetObjectItem(ch, "text");
    if (!text) text = cJSON_GetObjectItem(cJSON_GetObjectItem(ch, "delta"), "content");
    if (cJSON_IsString(text) && text->valuestring[0] && st->res->t_first == 0)
        st->res->t_first = now_s();
    const cJSON *fin = cJSON_GetObjectItem(ch, "finish_reason");
    if (cJSON_IsString(fin)) {
        const cJSON *ct = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "usage"), "completion_tokens");
        if (!cJSON_IsNumber(ct))
            mark_bad(st, "the final chunk has no usage");
        else
            st->res->tokens = (long)ct->valuedouble;
        st->final_seen = true;
    }
    cJSON_Delete(o);
}

/* Body bytes as they arrive: split into lines for on_line. Returns false when out of memory. */
static bool on_data(stream_state *st, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (st->line_n + 1 >= st->line_cap) {
            char *q = realloc(st->line, st->line_cap * 2 + 64);
            if (!q) return false;
            st->line = q;
            st->line_cap = st->line_cap * 2 + 64;
        }
        if (p[i] == '\n') {
            st->line[st->line_n] = '\0';
            on_line(st, st->line);
            st->line_n = 0;
            continue;
        }
        st->line[st->line_n++] = p[i];
    }
    return true;
}

/* ---- a minimal HTTP/1.1 client: one POST per connection (Connection: close), the response
 * body delivered to on_data as it arrives, de-chunked when the server chunks it ---- */

typedef struct http_resp {
    int status;
    bool chunked;
    char hdr[8192]; /* status line and headers, until the blank line */
    size_t hdr_n;
    bool hdr_done;
    /* chunked decoding: bytes left in the current chunk, or reading a size line */
    size_t chunk_left;
    char size_line[32];
    size_t size_n;
    int chunk_state; /* 0 size line, 1 data, 2 CRLF after data, 3 trailer (done) */
} http_resp;

static int connect_to(const char *host, const char *port, char *why, size_t why_n) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc) {
        snprintf(why, why_n, "%s:%s: %s", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        snprintf(why, why_n, "connect %s:%s: %s", host, port, strerror(errno));
        return -1;
    }
    struct timeval tv = {.tv_sec = 600}; /* a request that stalls this long has failed */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

static bool send_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* The headers are complete in r->hdr: the status code and Transfer-Encoding. */
static bool parse_headers(http_resp *r) {
    r->hdr[r->hdr_n] = '\0';
    if (sscanf(r->hdr, "HTTP/%*d.%*d %d", &r->status) != 1) return false;
    for (char *l = strstr(r->hdr, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
        char *line = l + 2, *eol = strstr(line, "\r\n");
        if (!eol || strncasecmp(line, "transfer-encoding:", 18) != 0) continue;
        *eol = '\0'; /* the value alone, for strstr; restored below */
        if (strstr(line + 18, "chunked")) r->chunked = true;
        *eol = '\r';
    }
    return true;
}

/* Body bytes through the chunked decoder (or straight through). false: malformed or no memory. */
static bool body_bytes(http_resp *r, stream_state *st, const char *p, size_t n) {
    if (!r->chunked) return on_data(st, p, n);
    size_t i = 0;
    while (i < n) {
        if (r->chunk_state == 0) { /* "HEX[;ext]\r\n" */
            char c = p[i++];
            if (c == '\n') {
                r->size_line[r->size_n] = '\0';
                char *end;
                unsigned long v = strtoul(r->size_line, &end, 16);
                if (end == r->size_line) return false;
                r->size_n = 0;
                r->chunk_left = v;
                r->chunk_state = v ? 1 : 3;
            } else if (c != '\r') {
                if (r->size_n + 1 >= sizeof r->size_line) return false;
                r->size_line[r->size_n++] = c;
            }
        } else if (r->chunk_state == 1) {
            size_t k = n - i < r->chunk_left ? n - i : r->chunk_left;
            if (!on_data(st, p + i, k)) return false;
            i += k;
            r->chunk_left -= k;
            if (!r->chunk_left) r->chunk_state = 2;
        } else if (r->chunk_state == 2) { /* the CRLF that ends a chunk's data */
            if (p[i++] == '\n') r->chunk_state = 0;
        } else {
            return true; /* the trailer after the last chunk: ignored */
        }
    }
    return true;
}

/* One POST; the response body goes to st. Returns the HTTP status, or 0 with why set. */
static int http_post(const char *host, const char *port, const char *path, const char *body,
                     stream_state *st, char *why, size_t why_n) {
    int fd = connect_to(host, port, why, why_n);
    if (fd < 0) return 0;
    char head[1024];
    size_t body_n = strlen(body);
    int hn = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                      "Accept: text/event-stream\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                      path, host, port, body_n);
    if (hn < 0 || (size_t)hn >= sizeof head || !send_all(fd, head, (size_t)hn) ||
        !send_all(fd, body, body_n)) {
        snprintf(why, why_n, "send: %s", strerror(errno));
        close(fd);
        return 0;
    }
    http_resp r = {0};
    char buf[16384];
    for (;;) {
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            snprintf(why, why_n, "recv: %s", strerror(errno));
            close(fd);
            return 0;
        }
        if (k == 0) break;
        size_t off = 0;
        while (!r.hdr_done && off < (size_t)k) { /* header bytes up to the blank line */
            if (r.hdr_n + 1 >= sizeof r.hdr) {
                snprintf(why, why_n, "response headers over %zu bytes", sizeof r.hdr);
                close(fd);
                return 0;
            }
            r.hdr[r.hdr_n++] = buf[off++];
            if (r.hdr_n >= 4 && !memcmp(r.hdr + r.hdr_n - 4, "\r\n\r\n", 4)) {
                r.hdr_done = true;
                if (!parse_headers(&r)) {
                    snprintf(why, why_n, "not an HTTP response");
                    close(fd);
                    return 0;
                }
            }
        }
        if (off < (size_t)k && !body_bytes(&r, st, buf + off, (size_t)k - off)) {
            snprintf(why, why_n, "malformed chunked body (or out of memory)");
            close(fd);
            return 0;
        }
    }
    close(fd);
    if (!r.hdr_done) {
        snprintf(why, why_n, "connection closed before the response headers");
        return 0;
    }
    if (r.chunked && r.chunk_state != 3) {
        snprintf(why, why_n, "connection closed inside the chunked body");
        return 0;
    }
    return r.status;
}

typedef struct client {
    const opts *o;
    result *res; /* [per_client] */
    char *body;
    const char *host, *port, *path;
} client;

static void *client_main(void *arg) {
    client *c = arg;
    for (long i = 0; i < c->o->per_client; i++) {
        result *r = &c->res[i];
        memset(r, 0, sizeof *r);
        stream_state st = {.res = r};
        char why[160] = "";
        r->t_send = now_s();
        int status = http_post(c->host, c->port, c->path, c->body, &st, why, sizeof why);
        r->t_end = now_s();
        if (st.line_n) {
            st.line[st.line_n] = '\0';
            on_line(&st, st.line);
        }
        if (status == 0)
            snprintf(r->why, sizeof r->why, "%s", why);
        else if (status != 200)
            snprintf(r->why, sizeof r->why, "HTTP %d", status);
        else if (!st.bad && !st.final_seen)
            snprintf(r->why, sizeof r->why, "no final chunk");
        else if (!st.bad && !st.done_seen)
            snprintf(r->why, sizeof r->why, "no [DONE]");
        else
            r->ok = !st.bad;
        free(st.line);
    }
    return NULL;
}

/* "http://HOST[:PORT][/...]" (IPv6 as [::1]) -> host, port. Only plain HTTP: the load
 * generator talks to a server on loopback or a private network. */
static bool parse_url(const char *url, char *host, size_t host_n, char *port, size_t port_n) {
    if (strncmp(url, "http://", 7) != 0) return false;
    const char *h = url + 7, *e;
    size_t hl;
    if (*h == '[') {
        e = strchr(h, ']');
        if (!e) return false;
        hl = (size_t)(e - h - 1);
        h++;
        e++;
    } else {
        e = h + strcspn(h, ":/");
        hl = (size_t)(e - h);
    }
    if (hl == 0 || hl >= host_n) return false;
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (*e == ':') {
        size_t pl = strcspn(e + 1, "/");
        if (pl == 0 || pl >= port_n || strspn(e + 1, "0123456789") != pl) return false;
        memcpy(port, e + 1, pl);
        port[pl] = '\0';
        e += 1 + pl;
    } else {
        snprintf(port, port_n, "80");
    }
    return *e == '\0' || (*e == '/' && e[1] == '\0');
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, long n, double p) { /* nearest-rank percentile */
    if (n == 0) return 0;
    long k = (long)(p / 100.0 * (double)n + 0.999999);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return v[k - 1];
}

static void usage(void) {
    printf("usage: tinfer-loadgen --url URL [options]\n"
           "  --url URL           server base URL (default http://127.0.0.1:8080)\n"
           "  -c, --clients N     concurrent clients (default 8)\n"
           "  -n, --requests N    requests per client, one after another (default 4)\n"
           "  --max-tokens N      tokens per request (default 64)\n"
           "  --prompt TEXT       prompt (default: a short story opening)\n"
           "  --chat              /v1/chat/completions instead of /v1/completions\n"
           "  --temperature F     sampling temperature (default 0: greedy)\n"
           "  --ignore-eos        ask the server to generate all max_tokens (tinfer-server\n"
           "                      and llama-server field ignore_eos)\n"
           "  --json PATH         write the summary as JSON\n");
}

static int parse_long_opt(const char *opt, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "tinfer-loadgen: error: %s: '%s' is not an integer in [%ld, %ld]\n", opt, s,
                lo, hi);
        return 1;
    }
    *out = v;
    return 0;
}

int main(int argc, char **argv) {
    opts o = {.url = "http://127.0.0.1:8080",
              .prompt = "Once upon a time, in a small village by the sea,",
              .clients = 8,
              .per_client = 4,
              .max_tokens = 64};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        }
        if (!strcmp(a, "--chat")) {
            o.chat = true;
            continue;
        }
        if (!strcmp(a, "--ignore-eos")) {
            o.ignore_eos = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "tinfer-loadgen: error: %s needs a value (see --help)\n", a);
            return 1;
        }
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--url"))
            o.url = v;
        else if (!strcmp(a, "--prompt"))
            o.prompt = v;
        else if (!strcmp(a, "--json"))
            o.json_path = v;
        else if (!strcmp(a, "-c") || !strcmp(a, "--clients"))
            bad = parse_long_opt(a, v, 1, 4096, &o.clients);
        else if (!strcmp(a, "-n") || !strcmp(a, "--requests"))
            bad = parse_long_opt(a, v, 1, 1000000, &o.per_client);
        else if (!strcmp(a, "--max-tokens"))
            bad = parse_long_opt(a, v, 1, 1 << 24, &o.max_tokens);
        else if (!strcmp(a, "--temperature")) {
            char *end;
            o.temperature = strtod(v, &end);
            bad = *end || end == v || o.temperature < 0;
            if (bad) fprintf(stderr, "tinfer-loadgen: error: --temperature: '%s'\n", v);
        } else {
            fprintf(stderr, "tinfer-loadgen: error: unknown option '%s' (see --help)\n", a);
            return 1;
        }
        if (bad) return 1;
    }

    /* the request body, shared by every client (each request the same: a throughput probe) */
    cJSON *b = cJSON_CreateObject();
    if (o.chat) {
        cJSON *msgs = cJSON_AddArrayToObject(b, "messages"), *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "user");
        cJSON_AddStringToObject(m, "content", o.prompt);
        cJSON_AddItemToArray(msgs, m);
    } else {
        cJSON_AddStringToObject(b, "prompt", o.prompt);
    }
    cJSON_AddNumberToObject(b, "max_tokens", (double)o.max_tokens);
    cJSON_AddNumberToObject(b, "temperature", o.temperature);
    cJSON_AddNumberToObject(b, "seed", 1);
    cJSON_AddBoolToObject(b, "stream", 1);
    if (o.ignore_eos) cJSON_AddBoolToObject(b, "ignore_eos", 1);
    char *body = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);

    char host[256], port[16];
    if (!parse_url(o.url, host, sizeof host, port, sizeof port)) {
        fprintf(stderr, "tinfer-loadgen: error: --url '%s': expected http://HOST[:PORT]\n", o.url);
        return 1;
    }
    const long total = o.clients * o.per_client;
    result *res = calloc((size_t)total, sizeof *res);
    client *cl = calloc((size_t)o.clients, sizeof *cl);
    pthread_t *th = calloc((size_t)o.clients, sizeof *th);
    double *ttft = calloc((size_t)total, sizeof *ttft), *rate = calloc((size_t)total, sizeof *rate);
    if (!body || !res || !cl || !th || !ttft || !rate) {
        fprintf(stderr, "tinfer-loadgen: error: out of memory\n");
        return 1;
    }
    double t0 = now_s();
    long started = 0;
    for (long i = 0; i < o.clients; i++) {
        cl[i].o = &o;
        cl[i].res = res + i * o.per_client;
        cl[i].body = body;
        cl[i].host = host;
        cl[i].port = port;
        cl[i].path = o.chat ? "/v1/chat/completions" : "/v1/completions";
        if (pthread_create(&th[i], NULL, client_main, &cl[i]) != 0) break;
        started++;
    }
    for (long i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    const double wall = now_s() - t0;

    long ok = 0, tokens = 0, n_ttft = 0, n_rate = 0, n_bad = 0;
    for (long i = 0; i < started * o.per_client; i++) {
        if (!res[i].ok) {
            if (n_bad++ < 5) /* the first few say why; the count says how many */
                fprintf(stderr, "tinfer-loadgen: request %ld failed: %s\n", i, res[i].why);
            continue;
        }
        ok++;
        tokens += res[i].tokens;
        if (res[i].t_first > 0) {
            ttft[n_ttft++] = 1e3 * (res[i].t_first - res[i].t_send);
            if (res[i].tokens > 1 && res[i].t_end > res[i].t_first)
                rate[n_rate++] = (double)(res[i].tokens - 1) / (res[i].t_end - res[i].t_first);
        }
    }
    qsort(ttft, (size_t)n_ttft, sizeof *ttft, cmp_double);
    qsort(rate, (size_t)n_rate, sizeof *rate, cmp_double);
    const long failed = total - ok;
    printf("clients %ld, requests %ld: ok %ld, failed %ld; generated %ld tokens in %.3f s: "
           "%.1f tok/s aggregate; ttft p50 %.1f ms p99 %.1f ms; per-stream decode p50 %.1f tok/s\n",
           o.clients, total, ok, failed, tokens, wall, wall > 0 ? tokens / wall : 0.0,
           pct(ttft, n_ttft, 50), pct(ttft, n_ttft, 99), pct(rate, n_rate, 50));
    if (o.json_path) {
        FILE *f = fopen(o.json_path, "w");
        if (!f) {
            fprintf(stderr, "tinfer-loadgen: error: %s: %s\n", o.json_path, strerror(errno));
            return 1;
        }
        fprintf(f,
                "{\"clients\":%ld,\"requests\":%ld,\"ok\":%ld,\"failed\":%ld,\"max_tokens\":%ld,"
                "\"generated_tokens\":%ld,\"wall_s\":%.6f,\"aggregate_tok_s\":%.3f,"
                "\"ttft_ms_p50\":%.3f,\"ttft_ms_p99\":%.3f,\"stream_tok_s_p50\":%.3f}\n",
                o.clients, total, ok, failed, o.max_tokens, tokens, wall,
                wall > 0 ? tokens / wall : 0.0, pct(ttft, n_ttft, 50), pct(ttft, n_ttft, 99),
                pct(rate, n_rate, 50));
        fclose(f);
    }
    free(body);
    free(res);
    free(cl);
    free(th);
    free(ttft);
    free(rate);
    return failed ? 1 : 0;
}

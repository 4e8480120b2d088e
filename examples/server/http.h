/*
 * http.h — tinfer-server's HTTP front (libmicrohttpd, one thread per connection).
 */
#ifndef TINFER_SERVER_HTTP_H
#define TINFER_SERVER_HTTP_H

#include "api.h"
#include "server.h"

#include <stdatomic.h>
#include <sys/socket.h>

struct MHD_Daemon;

typedef struct srv_http {
    /* set before http_start */
    size_t max_body;     /* bytes; larger bodies get 413 */
    int max_connections; /* open connections (each holds a thread) */
    int idle_timeout_s;  /* an idle keep-alive connection is closed after this */
    bool quiet;          /* no per-request log line on stderr */
    int64_t started;     /* unix seconds */
    /* set when the model is loaded, before `ready` */
    api_model m;
    srv_sched *sched;
    atomic_bool ready;    /* model loaded, scheduler running */
    atomic_bool draining; /* SIGINT/SIGTERM seen: /health says so */
    atomic_ullong next_id;
    atomic_int in_flight; /* generation requests whose response is not yet fully sent */
    pthread_mutex_t stats_mu;
    uint64_t http_errors;
    /* http_start's results */
    struct MHD_Daemon *daemon;
    uint16_t port;
} srv_http;

/* Listens on addr and serves from now on (/health answers 503 until ready). */
int http_start(srv_http *h, const struct sockaddr *addr, bool ipv6, char *err, size_t err_cap);
/* Waits up to timeout_s until every generation response has been sent; returns how many are
 * still in flight. */
int http_drain(srv_http *h, double timeout_s);
/* Closes the listening socket and every connection, joining their threads. */
void http_stop(srv_http *h);

#endif

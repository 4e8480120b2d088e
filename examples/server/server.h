/*
 * server.h — tinfer-server's shared types: a generation request, the scheduler that owns the
 * context, and the counters behind /metrics. Written only against the public header tinfer.h.
 *
 * Threads and ownership
 *  - libmicrohttpd runs one thread per connection (http.c). A completion request is parsed and
 *    tokenized there, handed to the scheduler (sched_submit) and then waited on: the connection
 *    thread sleeps on the request's condition variable until text or the end arrives.
 *  - ONE scheduler thread (sched.c) owns the tinfer_context. Every step it admits queued requests
 *    into free sequence slots and runs one tinfer_decode over every active sequence: the next
 *    chunk of each new prompt and one token of each running sequence, so the batch shape (and
 *    the GEMM path the runtime takes) follows the load.
 *  - Everything a request shares between the two sides sits under the scheduler's mutex `mu`.
 *    A request is reference-counted (the connection and the scheduler each hold one); whoever
 *    drops the last reference frees it.
 */
#ifndef TINFER_SERVER_H
#define TINFER_SERVER_H

#include "tinfer.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SRV_MAX_STOPS 8      /* OpenAI's limit is 4; llama-server takes more */
#define SRV_MAX_STOP_LEN 256 /* bytes per stop string */

typedef enum srv_state {
    SRV_QUEUED = 0,  /* waiting for a free slot */
    SRV_RUNNING = 1, /* in a slot: prefill, then decode */
    SRV_DONE = 2,    /* finished, failed or cancelled; no more text will come */
} srv_state;

typedef struct srv_request {
    /* set by the connection before sched_submit, read-only afterwards */
    uint64_t id;
    bool chat, stream;
    tinfer_token *prompt; /* [n_prompt] */
    int32_t n_prompt;
    int32_t max_tokens;
    bool ignore_eos; /* end-of-generation tokens do not end it (benchmarks: fixed lengths) */
    tinfer_sampler_params sp;
    char *stops[SRV_MAX_STOPS];
    int n_stops;
    int64_t created; /* unix seconds */
    double t_submit; /* monotonic seconds */

    /* shared, under sched->mu */
    pthread_cond_t cv; /* signalled when text is appended or the request ends */
    srv_state state;
    bool cancelled;          /* the client went away: the scheduler frees the slot */
    char *text;              /* generated text so far (stop strings never included) */
    size_t text_n, text_cap; /* bytes in text / allocated */
    const char *finish;      /* "stop" | "length" once done; NULL on error or cancel */
    char error[256];         /* non-empty: the request failed (a runtime error) */
    int32_t n_gen;           /* tokens generated (text may lag by a held-back stop prefix) */
    double t_start;          /* left the queue */
    double t_first;          /* first token sampled (prefill done) */
    double t_done;
    int refs;
} srv_request;

typedef struct srv_metrics {
    uint64_t requests_total;  /* generation requests accepted into the queue */
    uint64_t requests_ok;     /* finished with finish_reason stop | length */
    uint64_t requests_failed; /* runtime error */
    uint64_t requests_cancelled;
    uint64_t requests_rejected; /* 4xx / 503 before reaching the queue */
    uint64_t prompt_tokens_total;
    uint64_t generated_tokens_total;
    uint64_t steps_total;        /* tinfer_decode calls */
    uint64_t batch_tokens_total; /* tokens over all steps */
    double t_prompt_busy;        /* seconds of steps that carried prompt tokens */
    double t_decode_busy;        /* seconds of steps that carried only decode tokens */
    uint64_t decode_step_tokens; /* tokens of those decode-only steps */
} srv_metrics;

typedef struct srv_sched srv_sched;

typedef struct srv_sched_params {
    int32_t parallel;      /* sequences decoded together (context n_seq_max) */
    int32_t queue_max;     /* requests waiting for a slot before 503 */
    int32_t n_batch;       /* most tokens per step (prompts are prefilled in chunks of this) */
    int32_t step_delay_ms; /* testing only: sleep after every step (a slow device, on demand) */
} srv_sched_params;

/* Starts the scheduler thread on ctx (which must have n_seq_max >= parallel and
 * n_batch >= params->n_batch >= parallel). Returns 0, or -1 with a message in err. */
int sched_start(tinfer_model *model, tinfer_context *ctx, const srv_sched_params *params,
                srv_sched **out, char *err, size_t err_cap);
/* Refuses new requests and cancels every queued or running one (they end on the next step). */
void sched_cancel_all(srv_sched *s);
/* Cancels what is still running, joins the thread and frees the scheduler (not ctx). Every
 * connection must be closed first: they wait on the scheduler's mutex. */
void sched_stop(srv_sched *s);

/* New request with one reference (the caller's). Fields are filled by the caller. */
srv_request *sched_request_new(void);
/* Queues r (the scheduler takes its own reference). Returns 0, or -1 when the queue is full
 * or the server is draining (nothing taken). */
int sched_submit(srv_sched *s, srv_request *r);
/* The client is gone: stop generating for r (no-op once done). */
void sched_cancel(srv_sched *s, srv_request *r);
/* Drops one reference; frees r at zero. */
void sched_release(srv_sched *s, srv_request *r);

/* The mutex every shared field of a request and the metrics sit under. */
pthread_mutex_t *sched_mutex(srv_sched *s);
/* Under sched_mutex: a snapshot of the counters and gauges. */
void sched_snapshot(srv_sched *s, srv_metrics *m, int32_t *active, int32_t *queued,
                    int64_t *kv_tokens, int64_t *kv_capacity);
/* Refuse new requests from now on (SIGTERM); wait up to timeout_s for what runs to finish.
 * Returns the number of requests still active or queued afterwards. */
int sched_drain(srv_sched *s, double timeout_s);

double srv_now(void); /* monotonic seconds */

#endif

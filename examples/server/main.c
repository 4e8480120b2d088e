/*
 * main.c — tinfer-server: an OpenAI-compatible HTTP service on the public API (tinfer.h).
 *
 *   tinfer-server -m DIR [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx N] [--backend ...]
 *                 [--tp N] [--gpus 0,1,...]
 *
 * Start-up: the socket is opened first (so /health can answer 503 while the model loads), then
 * the model is loaded, one context of --parallel sequences x --ctx tokens is made, and the
 * scheduler thread starts. "listening on http://HOST:PORT" goes to stderr once the socket is
 * bound (with --port 0 the kernel picks the port and this line names it).
 * SIGINT / SIGTERM: new requests get 503, what runs finishes (up to --drain-timeout seconds,
 * then it is cancelled), connections close, everything is freed, exit status 0.
 */
#define _POSIX_C_SOURCE 200809L

#include "http.h"
#include "server.h"

#include "../common/cli.h"
#include "../common/omp_policy.h"

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: tinfer-server -m DIR [options]\n"
            "  -m, --model DIR        HF model directory (config.json, *.safetensors, "
            "tokenizer.json)\n"
            "  --host ADDR            address to listen on (default 127.0.0.1; 0.0.0.0 or :: for "
            "all)\n"
            "  --port N               TCP port (default 8080; 0 picks a free one)\n"
            "  --parallel N           sequences decoded together in one batch (default 4)\n"
            "  --ctx N                context per sequence in tokens (default: min(model's, "
            "4096))\n"
            "  --batch N              most tokens per forward step; longer prompts are prefilled\n"
            "                         in chunks (default 512, at least --parallel)\n"
            "  --queue N              requests waiting for a slot before 503 (default 64)\n"
            "  --backend cpu|cuda|auto  compute backend (default auto)\n"
            "  --threads N            CPU threads (default: all cores)\n"
            "  --tp N                 tensor parallelism over N shards (default 0: off); on CUDA\n"
            "                         one GPU a shard, through NCCL; on the CPU they run one\n"
            "                         after another: a check of the split, not faster\n"
            "  --gpus 0,1,...         CUDA devices, one per shard (default 0, 1, ...)\n"
            "  --alias NAME           model name clients pass as \"model\" (default: the "
            "directory's name)\n"
            "  --max-body BYTES       largest request body (default 1048576; larger: 413)\n"
            "  --max-conn N           open connections at once (default 256)\n"
            "  --drain-timeout S      on SIGINT/SIGTERM, seconds to let requests finish (default "
            "30)\n"
            "  --quiet                no per-request log line\n"
            "  --random-weights       benchmarks: random weights of config.json's shapes (the\n"
            "                         model directory needs only config.json + tokenizer.json)\n"
            "  --debug-step-delay-ms N  sleep N ms after every forward step (tests: a slow\n"
            "                         device on demand, so queues fill and streams last)\n"
            "  -h, --help             this text\n"
            "Endpoints: POST /v1/completions, POST /v1/chat/completions (OpenAI-compatible,\n"
            "stream: true for Server-Sent Events), GET /v1/models, GET /health, GET /metrics\n"
            "(Prometheus text).\n");
}

static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tinfer-server: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return fail("%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo, hi);
    *out = v;
    return 0;
}

/* The directory's last component: what clients pass as "model". */
static const char *dir_name(const char *dir, char *buf, size_t cap) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/')
        b--;
    snprintf(buf, cap, "%.*s", (int)(n - b), dir + b);
    return buf;
}

int main(int argc, char **argv) {
    tinfer_example_omp_policy(argv, "tinfer-server");
    const char *model_dir = NULL, *host = "127.0.0.1", *alias = NULL;
    long port = 8080, parallel = 4, n_ctx = 0, n_batch = 512, queue = 64, threads = 0;
    long max_body = 1 << 20, max_conn = 256, drain_s = 30, step_delay_ms = 0;
    bool quiet = false, random_weights = false;
    tinfer_backend backend = TINFER_BACKEND_AUTO;
    int32_t tp = 0, gpus[64], n_gpus = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--quiet")) {
            quiet = true;
            continue;
        }
        if (!strcmp(a, "--random-weights")) {
            random_weights = true;
            continue;
        }
        if (i + 1 >= argc)
            return fail("%s: %s (see --help)", a,
                        a[0] == '-' ? "missing value (or unknown option)" : "unexpected argument");
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "-m") || !strcmp(a, "--model"))
            model_dir = v;
        else if (!strcmp(a, "--host"))
            host = v;
        else if (!strcmp(a, "--alias"))
            alias = v;
        else if (!strcmp(a, "--port"))
            bad = parse_long(a, v, 0, 65535, &port);
        else if (!strcmp(a, "--parallel"))
            bad = parse_long(a, v, 1, 4096, &parallel);
        else if (!strcmp(a, "--ctx"))
            bad = parse_long(a, v, 1, 1L << 24, &n_ctx);
        else if (!strcmp(a, "--batch"))
            bad = parse_long(a, v, 1, 1L << 20, &n_batch);
        else if (!strcmp(a, "--queue"))
            bad = parse_long(a, v, 1, 1L << 20, &queue);
        else if (!strcmp(a, "--threads"))
            bad = parse_long(a, v, 0, 4096, &threads);
        else if (!strcmp(a, "--max-body"))
            bad = parse_long(a, v, 64, 1L << 30, &max_body);
        else if (!strcmp(a, "--max-conn"))
            bad = parse_long(a, v, 1, 65536, &max_conn);
        else if (!strcmp(a, "--drain-timeout"))
            bad = parse_long(a, v, 0, 86400, &drain_s);
        else if (!strcmp(a, "--debug-step-delay-ms"))
            bad = parse_long(a, v, 0, 10000, &step_delay_ms);
        else {
            char why[160];
            const int d = tinfer_example_device_opt(a, v, &backend, &tp, gpus, 64, &n_gpus, why,
                                                    sizeof why);
            if (d < 0) return fail("%s", why);
            if (d == 0) return fail("unknown option '%s' (see --help)", a);
        }
        if (bad) return 1;
    }
    if (!model_dir) return fail("-m DIR is required (see --help)");
    if (n_batch < parallel) n_batch = parallel; /* every decoding sequence fits one step */

    /* The address, before anything is loaded: a wrong one fails fast. */
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%ld", port);
    int gai = getaddrinfo(host, port_s, &hints, &ai);
    if (gai != 0) return fail("--host '%s': %s", host, gai_strerror(gai));

    /* Signals are taken by sigwait in this thread only: every thread started below inherits
     * the mask. A client that disconnects must not kill the process with SIGPIPE. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    char name_buf[256], err[256];
    srv_http h;
    memset(&h, 0, sizeof h);
    h.max_body = (size_t)max_body;
    h.max_connections = (int)max_conn;
    h.idle_timeout_s = 120;
    h.quiet = quiet;
    h.started = (int64_t)time(NULL);
    atomic_init(&h.ready, false);
    atomic_init(&h.draining, false);
    atomic_init(&h.next_id, 1);
    atomic_init(&h.in_flight, 0);
    pthread_mutex_init(&h.stats_mu, NULL);
    int rc = http_start(&h, ai->ai_addr, ai->ai_family == AF_INET6, err, sizeof err);
    freeaddrinfo(ai);
    if (rc != 0) return fail("%s:%ld: %s", host, port, err);
    fprintf(stderr, "tinfer-server: listening on http://%s:%u\n", host, (unsigned)h.port);

    tinfer_model *model = NULL;
    tinfer_context *ctx = NULL;
    srv_sched *sched = NULL;
    int status = 1;
    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = backend;
    mp.n_threads = (int32_t)threads;
    mp.random_weights = random_weights;
    mp.random_seed = 1;
    mp.tp = tp;
    mp.gpus = n_gpus ? gpus : NULL;
    mp.n_gpus = n_gpus;
    if (tinfer_model_load(model_dir, &mp, &model) != TINFER_OK) {
        fail("%s", tinfer_last_error());
        goto done;
    }
    tinfer_context_params cp = tinfer_context_default_params();
    cp.n_ctx = (int32_t)n_ctx;
    cp.n_seq_max = (int32_t)parallel;
    cp.n_batch = (int32_t)n_batch;
    if (tinfer_context_init(model, &cp, &ctx) != TINFER_OK) {
        fail("%s", tinfer_last_error());
        goto done;
    }
    srv_sched_params sp = {(int32_t)parallel, (int32_t)queue, (int32_t)n_batch,
                           (int32_t)step_delay_ms};
    if (sched_start(model, ctx, &sp, &sched, err, sizeof err) != 0) {
        fail("%s", err);
        goto done;
    }
    h.m.model = model;
    h.m.id = alias ? alias : dir_name(model_dir, name_buf, sizeof name_buf);
    h.m.n_ctx = tinfer_context_n_ctx(ctx);
    h.sched = sched;
    atomic_store(&h.ready, true);
    fprintf(stderr, "tinfer-server: ready: model '%s' (%s), %ld slots x %d tokens, batch %ld\n",
            h.m.id, tinfer_model_desc(model), parallel, (int)h.m.n_ctx, n_batch);

    int sig = 0;
    while (sigwait(&sigs, &sig) != 0) {
    }
    fprintf(stderr, "tinfer-server: %s: draining (up to %ld s)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", drain_s);
    atomic_store(&h.draining, true);
    const double t_drain = srv_now();
    int left = sched_drain(sched, (double)drain_s);
    if (left) fprintf(stderr, "tinfer-server: cancelling %d unfinished requests\n", left);
    /* finished generations still have answers to send: let them go out first */
    double rest = (double)drain_s - (srv_now() - t_drain);
    http_drain(&h, rest > 1 ? rest : 1);
    status = 0;
done:
    /* what is left is cancelled and ends on the scheduler's next step, which wakes every waiting
     * connection; then the connections close (their threads use the scheduler's mutex until
     * then), then the scheduler stops */
    if (sched) {
        sched_cancel_all(sched);
        sched_drain(sched, 60); /* one step at most; bounded in case a step hangs */
    }
    http_drain(&h, 10); /* the cancelled ones' error answers (bounded: a client may not read) */
    http_stop(&h);
    sched_stop(sched);
    tinfer_context_free(ctx);
    tinfer_model_free(model);
    pthread_mutex_destroy(&h.stats_mu);
    if (status == 0) fprintf(stderr, "tinfer-server: stopped\n");
    return status;
}

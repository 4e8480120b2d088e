/*
 * sched.c — continuous batching: one thread owns the tinfer_context and, every step, runs ONE
 * tinfer_decode over every active sequence.
 *
 * A step:
 *   1. (under mu) free the slots of cancelled requests; move queued requests into free slots,
 *      oldest first; sleep when there is nothing to do.
 *   2. build the batch: first one token for every sequence that is decoding (its last sampled
 *      token at its next position), then the next chunk of each prompt being prefilled, oldest
 *      first, while the step has room (n_batch tokens). Logits are asked for the decoding tokens
 *      and for the last token of a prompt whose final chunk is in this step.
 *   3. tinfer_decode; then, for each sequence with logits, sample, detokenize, hold back text that
 *      may begin a stop string, append the rest to the request and wake its connection.
 *   4. a request that ends (end-of-generation token, stop string, max_tokens, context full,
 *      cancel or error) gives its slot back at once: its KV cache is cleared and the slot is
 *      free for the next step's admissions.
 * Decoding sequences always fit a step (n_batch >= parallel), so a long prompt never stalls the
 * streams that are running: it is prefilled in the room they leave.
 */
#define _POSIX_C_SOURCE 200809L

#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double srv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct slot {
    srv_request *req;  /* NULL: free */
    int32_t n_past;    /* tokens in this sequence's KV cache */
    int32_t n_fed;     /* prompt tokens fed so far */
    tinfer_token next; /* sampled, to be fed in the next step */
    tinfer_sampler *smp;
    tinfer_detok_stream ds;
    char *hold; /* generated text held back: it may be the start of a stop string */
    size_t hold_n, hold_cap;
    int32_t row;          /* batch index of this slot's logits in the current step, -1: none */
    bool greedy;          /* argmax without a penalty: the step copies one id, not the logits */
    tinfer_token sampled; /* this step's token, sampled before the lock is taken */
    tinfer_status sample_rc;
} slot;

struct srv_sched {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* wakes the scheduler: a request queued, cancelled, or stop */
    pthread_cond_t idle_cv; /* signalled when a request ends (sched_drain waits on it) */
    pthread_t thread;
    bool thread_started, stop, draining;

    tinfer_model *model;
    tinfer_context *ctx;
    srv_sched_params p;
    int32_t n_ctx, n_vocab;

    srv_request **queue; /* ring of queue_max */
    int32_t q_head, q_len;
    slot *slots; /* [parallel]; slot i is sequence i */
    int32_t n_active;
    int64_t kv_tokens; /* tokens cached over the active slots, after the last step (metrics) */

    /* batch buffers [n_batch] */
    tinfer_token *b_tok;
    int32_t *b_pos, *b_seq;
    int8_t *b_logits;
    char *piece;
    size_t piece_cap;

    srv_metrics m;
};

pthread_mutex_t *sched_mutex(srv_sched *s) { return &s->mu; }

srv_request *sched_request_new(void) {
    srv_request *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    if (pthread_cond_init(&r->cv, NULL) != 0) {
        free(r);
        return NULL;
    }
    r->refs = 1;
    return r;
}

static void request_free(srv_request *r) {
    pthread_cond_destroy(&r->cv);
    free(r->prompt);
    for (int i = 0; i < r->n_stops; i++)
        free(r->stops[i]);
    free(r->text);
    free(r);
}

/* under mu */
static void request_unref_locked(srv_request *r) {
    if (--r->refs == 0) request_free(r);
}

void sched_release(srv_sched *s, srv_request *r) {
    if (!r) return;
    pthread_mutex_lock(&s->mu);
    request_unref_locked(r);
    pthread_mutex_unlock(&s->mu);
}

int sched_submit(srv_sched *s, srv_request *r) {
    pthread_mutex_lock(&s->mu);
    if (s->draining || s->stop || s->q_len == s->p.queue_max) {
        s->m.requests_rejected++;
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    r->state = SRV_QUEUED;
    r->refs++;
    s->queue[(s->q_head + s->q_len) % s->p.queue_max] = r;
    s->q_len++;
    s->m.requests_total++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

void sched_cancel(srv_sched *s, srv_request *r) {
    pthread_mutex_lock(&s->mu);
    if (r->state != SRV_DONE && !r->cancelled) {
        r->cancelled = true;
        pthread_cond_signal(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

/* under mu: append generated text to the request and wake its connection */
static int request_append_locked(srv_request *r, const char *text, size_t n) {
    if (n == 0) return 0;
    if (r->text_n + n + 1 > r->text_cap) {
        size_t cap = (r->text_n + n + 1) * 2;
        char *p = realloc(r->text, cap);
        if (!p) return -1;
        r->text = p;
        r->text_cap = cap;
    }
    memcpy(r->text + r->text_n, text, n);
    r->text_n += n;
    r->text[r->text_n] = '\0';
    pthread_cond_broadcast(&r->cv);
    return 0;
}

/* under mu: r is finished (finish == NULL: failed or cancelled) */
static void request_end_locked(srv_sched *s, srv_request *r, const char *finish) {
    r->state = SRV_DONE;
    r->finish = finish;
    r->t_done = srv_now();
    if (r->cancelled)
        s->m.requests_cancelled++;
    else if (finish)
        s->m.requests_ok++;
    else
        s->m.requests_failed++;
    pthread_cond_broadcast(&r->cv);
    pthread_cond_broadcast(&s->idle_cv);
}

/* Under mu, on the scheduler thread (the only one that changes slots). */
static void kv_recount_locked(srv_sched *s) {
    int64_t kv = 0;
    for (int32_t i = 0; i < s->p.parallel; i++)
        if (s->slots[i].req) kv += s->slots[i].n_past;
    s->kv_tokens = kv;
}

/* Gives slot i back: the sequence's cache is cleared, its sampler freed. Under mu. */
static void slot_release_locked(srv_sched *s, int32_t i) {
    slot *sl = &s->slots[i];
    tinfer_seq_clear(s->ctx, i); /* cannot fail for a valid seq id */
    tinfer_sampler_free(sl->smp);
    sl->smp = NULL;
    request_unref_locked(sl->req);
    sl->req = NULL;
    sl->hold_n = 0;
    s->n_active--;
    kv_recount_locked(s);
}

static int hold_append(slot *sl, const char *text, size_t n) {
    if (sl->hold_n + n > sl->hold_cap) {
        size_t cap = (sl->hold_n + n) * 2 + 64;
        char *p = realloc(sl->hold, cap);
        if (!p) return -1;
        sl->hold = p;
        sl->hold_cap = cap;
    }
    memcpy(sl->hold + sl->hold_n, text, n);
    sl->hold_n += n;
    return 0;
}

static size_t stop_match(const srv_request *r, const char *buf, size_t n);

/* Under mu: the end of slot i's request. flush: the held-back text and an incomplete UTF-8 tail
 * (as U+FFFD, like tinfer-generate) go out first, cut at a stop string if they complete one. */
static void slot_finish_locked(srv_sched *s, int32_t i, const char *finish, bool flush) {
    slot *sl = &s->slots[i];
    srv_request *r = sl->req;
    if (flush && !r->cancelled) {
        size_t n = 0;
        char tail[64]; /* the stream holds at most 8 bytes: 8 x U+FFFD = 24 bytes */
        if (tinfer_detok_stream_flush(&sl->ds, tail, sizeof tail, &n) != TINFER_OK ||
            hold_append(sl, tail, n) != 0) {
            snprintf(r->error, sizeof r->error, "out of memory");
            finish = NULL;
        } else {
            size_t cut = stop_match(r, sl->hold, sl->hold_n);
            if (cut < sl->hold_n) finish = "stop";
            if (request_append_locked(r, sl->hold, cut) != 0) {
                snprintf(r->error, sizeof r->error, "out of memory");
                finish = NULL;
            }
        }
    }
    request_end_locked(s, r, finish);
    slot_release_locked(s, i);
}

static void fail_slot_locked(srv_sched *s, int32_t i, const char *msg) {
    srv_request *r = s->slots[i].req;
    snprintf(r->error, sizeof r->error, "%s", msg);
    slot_finish_locked(s, i, NULL, false);
}

/* Under mu: a queued request takes slot i. Returns 0, or -1 (the request failed). */
static int slot_admit_locked(srv_sched *s, int32_t i, srv_request *r) {
    slot *sl = &s->slots[i];
    memset(&sl->ds, 0, sizeof sl->ds);
    sl->req = r;
    sl->n_past = 0;
    sl->n_fed = 0;
    sl->hold_n = 0;
    sl->row = -1;
    s->n_active++;
    r->state = SRV_RUNNING;
    r->t_start = srv_now();
    if (tinfer_sampler_init(&r->sp, &sl->smp) != TINFER_OK) {
        fail_slot_locked(s, i, tinfer_last_error());
        return -1;
    }
    sl->greedy = (r->sp.temperature <= 0 || r->sp.top_k == 1) && r->sp.repeat_penalty == 1.0f;
    /* the repetition penalty sees the prompt too, as HF's does (tinfer-generate does the same) */
    for (int32_t k = 0; k < r->n_prompt; k++)
        tinfer_sampler_accept(sl->smp, r->prompt[k]);
    s->m.prompt_tokens_total += (uint64_t)r->n_prompt;
    return 0;
}

/* Longest suffix of buf[0..n) that is a proper prefix of a stop string. */
static size_t stop_prefix_len(const srv_request *r, const char *buf, size_t n) {
    size_t hold = 0;
    for (int k = 0; k < r->n_stops; k++) {
        size_t sl = strlen(r->stops[k]);
        for (size_t len = sl - 1 < n ? sl - 1 : n; len > hold; len--)
            if (memcmp(buf + n - len, r->stops[k], len) == 0) {
                hold = len;
                break;
            }
    }
    return hold;
}

/* Earliest occurrence of any stop string in buf[0..n), or n. */
static size_t stop_match(const srv_request *r, const char *buf, size_t n) {
    size_t cut = n;
    for (int k = 0; k < r->n_stops; k++) {
        size_t sl = strlen(r->stops[k]);
        for (size_t i = 0; i + sl <= n && i < cut; i++)
            if (memcmp(buf + i, r->stops[k], sl) == 0) {
                cut = i;
                break;
            }
    }
    return cut;
}

/* Under mu: slot i sampled token t. Returns true when the request ended. */
static bool slot_token_locked(srv_sched *s, int32_t i, tinfer_token t) {
    slot *sl = &s->slots[i];
    srv_request *r = sl->req;
    if (r->n_gen == 0) r->t_first = srv_now();
    if (!r->ignore_eos && tinfer_token_is_eog(s->model, t)) {
        slot_finish_locked(s, i, "stop", true);
        return true;
    }
    r->n_gen++;
    s->m.generated_tokens_total++;
    tinfer_sampler_accept(sl->smp, t);
    size_t n = 0;
    tinfer_status rc = tinfer_detok_stream_push(
        s->model, &sl->ds, t, TINFER_DETOKENIZE_SKIP_SPECIAL, s->piece, s->piece_cap, &n);
    if (rc == TINFER_ERR_BUFFER_TOO_SMALL) {
        char *p = realloc(s->piece, n + 64);
        if (!p) {
            fail_slot_locked(s, i, "out of memory");
            return true;
        }
        s->piece = p;
        s->piece_cap = n + 64;
        rc = tinfer_detok_stream_push(s->model, &sl->ds, t, TINFER_DETOKENIZE_SKIP_SPECIAL,
                                      s->piece, s->piece_cap, &n);
    }
    if (rc != TINFER_OK) {
        fail_slot_locked(s, i, tinfer_last_error());
        return true;
    }
    if (hold_append(sl, s->piece, n) != 0) {
        fail_slot_locked(s, i, "out of memory");
        return true;
    }
    size_t cut = stop_match(r, sl->hold, sl->hold_n);
    if (cut < sl->hold_n) { /* a stop string: send what precedes it, then end */
        if (request_append_locked(r, sl->hold, cut) != 0) {
            fail_slot_locked(s, i, "out of memory");
            return true;
        }
        slot_finish_locked(s, i, "stop", false);
        return true;
    }
    size_t keep = stop_prefix_len(r, sl->hold, sl->hold_n);
    if (request_append_locked(r, sl->hold, sl->hold_n - keep) != 0) {
        fail_slot_locked(s, i, "out of memory");
        return true;
    }
    memmove(sl->hold, sl->hold + sl->hold_n - keep, keep);
    sl->hold_n = keep;
    if (r->n_gen >= r->max_tokens || sl->n_past >= s->n_ctx) {
        slot_finish_locked(s, i, "length", true);
        return true;
    }
    sl->next = t;
    return false;
}

/* Under mu: cancelled slots go; queued requests take free slots. */
static void admit_locked(srv_sched *s) {
    for (int32_t i = 0; i < s->p.parallel; i++)
        if (s->slots[i].req && s->slots[i].req->cancelled) slot_finish_locked(s, i, NULL, false);
    while (s->q_len > 0) {
        /* cancelled while queued: drop without a slot */
        srv_request *r = s->queue[s->q_head];
        if (r->cancelled) {
            s->q_head = (s->q_head + 1) % s->p.queue_max;
            s->q_len--;
            request_end_locked(s, r, NULL);
            request_unref_locked(r);
            continue;
        }
        int32_t free_i = -1;
        for (int32_t i = 0; i < s->p.parallel && free_i < 0; i++)
            if (!s->slots[i].req) free_i = i;
        if (free_i < 0) break;
        s->q_head = (s->q_head + 1) % s->p.queue_max;
        s->q_len--;
        slot_admit_locked(s, free_i, r);
    }
}

/* Fills the step's batch. Returns its token count; sets has_prompt when a prompt chunk is in. */
static int32_t build_batch(srv_sched *s, bool *has_prompt) {
    int32_t n = 0;
    *has_prompt = false;
    for (int32_t i = 0; i < s->p.parallel; i++) {
        slot *sl = &s->slots[i];
        sl->row = -1;
        if (!sl->req || sl->n_fed < sl->req->n_prompt) continue;
        s->b_tok[n] = sl->next;
        s->b_pos[n] = sl->n_past++;
        s->b_seq[n] = i;
        s->b_logits[n] = sl->greedy ? 2 : 1;
        sl->row = n++;
    }
    /* prompts, oldest admission first, in the room the decoding sequences leave */
    for (;;) {
        int32_t pick = -1;
        for (int32_t i = 0; i < s->p.parallel; i++) {
            slot *sl = &s->slots[i];
            if (sl->req && sl->n_fed < sl->req->n_prompt && sl->row < 0 &&
                (pick < 0 || sl->req->t_start < s->slots[pick].req->t_start))
                pick = i;
        }
        if (pick < 0 || n == s->p.n_batch) break;
        slot *sl = &s->slots[pick];
        const srv_request *r = sl->req;
        int32_t take = r->n_prompt - sl->n_fed;
        if (take > s->p.n_batch - n) take = s->p.n_batch - n;
        for (int32_t k = 0; k < take; k++) {
            s->b_tok[n + k] = r->prompt[sl->n_fed + k];
            s->b_pos[n + k] = sl->n_past + k;
            s->b_seq[n + k] = pick;
            s->b_logits[n + k] = 0;
        }
        n += take;
        sl->n_fed += take;
        sl->n_past += take;
        if (sl->n_fed == r->n_prompt) {
            s->b_logits[n - 1] = sl->greedy ? 2 : 1;
            sl->row = n - 1;
        } else {
            sl->row = -2; /* in this step without logits: not picked again this step */
        }
        *has_prompt = true;
    }
    return n;
}

static void *sched_main(void *arg) {
    srv_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        admit_locked(s);
        if (s->n_active == 0) {
            if (s->stop) break;
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);

        /* the slots' batch fields are the scheduler's own: no lock while the model runs */
        bool has_prompt;
        int32_t n = build_batch(s, &has_prompt);
        tinfer_batch b = {n, s->b_tok, s->b_pos, s->b_seq, s->b_logits};
        double t0 = srv_now();
        tinfer_status rc = tinfer_decode(s->ctx, &b);
        double dt = srv_now() - t0;
        if (s->p.step_delay_ms > 0) {
            struct timespec d = {s->p.step_delay_ms / 1000, (s->p.step_delay_ms % 1000) * 1000000L};
            nanosleep(&d, NULL);
        }

        /* sampling needs no lock either: logits, samplers and slots are this thread's */
        for (int32_t i = 0; i < s->p.parallel; i++) {
            slot *sl = &s->slots[i];
            if (rc != TINFER_OK || !sl->req || sl->row < 0) continue;
            if (sl->greedy) { /* the argmax the backend computed (on a GPU: on the device) */
                sl->sampled = tinfer_get_argmax(s->ctx, sl->row);
                sl->sample_rc = sl->sampled >= 0 ? TINFER_OK : TINFER_ERR_INTERNAL;
            } else {
                sl->sample_rc = tinfer_sampler_sample(sl->smp, tinfer_get_logits(s->ctx, sl->row),
                                                      s->n_vocab, &sl->sampled);
            }
        }

        pthread_mutex_lock(&s->mu);
        s->m.steps_total++;
        s->m.batch_tokens_total += (uint64_t)n;
        if (has_prompt) {
            s->m.t_prompt_busy += dt;
        } else {
            s->m.t_decode_busy += dt;
            s->m.decode_step_tokens += (uint64_t)n;
        }
        for (int32_t i = 0; i < s->p.parallel; i++) {
            slot *sl = &s->slots[i];
            if (!sl->req || sl->row == -1) continue;
            if (rc != TINFER_OK) {
                fail_slot_locked(s, i, tinfer_context_last_error(s->ctx));
                continue;
            }
            if (sl->row < 0) continue; /* a prompt chunk that is not the last */
            if (sl->sample_rc != TINFER_OK) {
                fail_slot_locked(s, i, tinfer_sampler_last_error(sl->smp));
                continue;
            }
            slot_token_locked(s, i, sl->sampled);
        }
        kv_recount_locked(s);
    }
    /* stop: whatever is queued ends here (sched_stop cancelled everything first) */
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Everything sched_start allocates, and s itself (NULL members allowed). */
static void sched_free_buffers(srv_sched *s) {
    if (s->slots)
        for (int32_t i = 0; i < s->p.parallel; i++)
            free(s->slots[i].hold);
    free(s->queue);
    free(s->slots);
    free(s->b_tok);
    free(s->b_pos);
    free(s->b_seq);
    free(s->b_logits);
    free(s->piece);
    free(s);
}

int sched_start(tinfer_model *model, tinfer_context *ctx, const srv_sched_params *params,
                srv_sched **out, char *err, size_t err_cap) {
    *out = NULL;
    srv_sched *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, err_cap, "out of memory");
        return -1;
    }
    s->model = model;
    s->ctx = ctx;
    s->p = *params;
    s->n_ctx = tinfer_context_n_ctx(ctx);
    s->n_vocab = tinfer_model_n_vocab(model);
    const size_t nb = (size_t)s->p.n_batch;
    s->queue = calloc((size_t)s->p.queue_max, sizeof *s->queue);
    s->slots = calloc((size_t)s->p.parallel, sizeof *s->slots);
    s->b_tok = malloc(nb * sizeof *s->b_tok);
    s->b_pos = malloc(nb * sizeof *s->b_pos);
    s->b_seq = malloc(nb * sizeof *s->b_seq);
    s->b_logits = malloc(nb * sizeof *s->b_logits);
    s->piece_cap = 256;
    s->piece = malloc(s->piece_cap);
    if (!s->queue || !s->slots || !s->b_tok || !s->b_pos || !s->b_seq || !s->b_logits ||
        !s->piece) {
        snprintf(err, err_cap, "out of memory");
        goto fail;
    }
    for (int32_t i = 0; i < s->p.parallel; i++) {
        s->slots[i].hold_cap = 256;
        s->slots[i].hold = malloc(s->slots[i].hold_cap);
        if (!s->slots[i].hold) {
            snprintf(err, err_cap, "out of memory");
            goto fail;
        }
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->idle_cv, NULL);
    if (pthread_create(&s->thread, NULL, sched_main, s) != 0) {
        snprintf(err, err_cap, "cannot start the scheduler thread: %s", strerror(errno));
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        pthread_cond_destroy(&s->idle_cv);
        goto fail;
    }
    s->thread_started = true;
    *out = s;
    return 0;
fail:
    sched_free_buffers(s);
    return -1;
}

int sched_drain(srv_sched *s, double timeout_s) {
    pthread_mutex_lock(&s->mu);
    s->draining = true;
    double deadline = srv_now() + timeout_s;
    while (s->n_active + s->q_len > 0) {
        double left = deadline - srv_now();
        if (left <= 0) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double wait = left < 0.1 ? left : 0.1;
        ts.tv_nsec += (long)(wait * 1e9);
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&s->idle_cv, &s->mu, &ts);
    }
    int left = s->n_active + s->q_len;
    pthread_mutex_unlock(&s->mu);
    return left;
}

static void cancel_all_locked(srv_sched *s) {
    s->draining = true;
    for (int32_t i = 0; i < s->p.parallel; i++)
        if (s->slots[i].req) s->slots[i].req->cancelled = true;
    for (int32_t k = 0; k < s->q_len; k++)
        s->queue[(s->q_head + k) % s->p.queue_max]->cancelled = true;
    pthread_cond_signal(&s->cv);
}

void sched_cancel_all(srv_sched *s) {
    pthread_mutex_lock(&s->mu);
    cancel_all_locked(s);
    pthread_mutex_unlock(&s->mu);
}

void sched_stop(srv_sched *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    cancel_all_locked(s);
    pthread_mutex_unlock(&s->mu);
    if (s->thread_started) pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->idle_cv);
    sched_free_buffers(s);
}

void sched_snapshot(srv_sched *s, srv_metrics *m, int32_t *active, int32_t *queued,
                    int64_t *kv_tokens, int64_t *kv_capacity) {
    *m = s->m;
    *active = s->n_active;
    *queued = s->q_len;
    *kv_tokens = s->kv_tokens; /* the scheduler's count: the context is its thread's alone */
    *kv_capacity = (int64_t)s->n_ctx * s->p.parallel;
}

/*
 * tp_nccl.c — the NCCL implementation of tinfer_tp_allreduce (tp_nccl.h): communicators, the
 * all-reduce recorded into every CUDA rank's step, and the host threads that run the ranks'
 * steps at once.
 *
 * A step of a tensor-parallel model: the forward pass records every op on every rank (host
 * work, models/backend_tp.c), each input-split GEMM followed by an all-reduce of the residual
 * stream recorded here; then logits() launches every rank's step, rank 0 from the calling
 * thread and rank r > 0 from worker thread r, each waiting for its own stream. The ranks'
 * all-reduces meet on the GPUs; a decode step's graph captures them with the kernels (NCCL
 * supports stream capture). The same threads time an all-reduce alone on request
 * (tinfer_context_stats: F32 as the steps run it, BF16 for comparison).
 * Failure: a rank whose step fails may leave the others waiting inside a collective it never
 * reached; the failing rank aborts the communicators at once (ncclCommAbort ends the waiting
 * kernels: the step is lost anyway), the error is reported, and every later step of the model
 * fails at once.
 */
#define _POSIX_C_SOURCE 200809L

#include "models/tp_nccl.h"

#include "models/backend_cuda.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct nccl_tp nccl_tp;
struct nccl_tp {
    tinfer_tp_allreduce ar; /* ar.self == this */
    int32_t n;
    int32_t dev[TINFER_TP_MAX];
    ncclComm_t comm[TINFER_TP_MAX];
    /* the workers (ranks 1 .. n - 1) and the step they are running */
    pthread_t th[TINFER_TP_MAX];
    int32_t n_threads; /* started */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t gen;    /* steps handed out */
    int32_t pending; /* workers still running the current one */
    bool quit, broken;
    void (*job)(struct nccl_tp *t, int32_t r); /* what the workers run: run_rank or time_rank */
    const tinfer_backend_ops *ops;
    void *const *rcs;
    bool need_logits;
    const float **lg, **vals;
    const int32_t **ids;
    tinfer_status rc[TINFER_TP_MAX];
    /* the all-reduce timing (nccl_timing): one token's residual row, F32 and BF16 */
    int64_t row;
    bool timed;
    double us[2];
};

typedef struct worker_arg {
    nccl_tp *t;
    int32_t r;
} worker_arg;

static void abort_comms(nccl_tp *t) {
    for (int32_t r = 0; r < t->n; r++)
        if (t->comm[r]) {
            cudaSetDevice(t->dev[r]);
            ncclCommAbort(t->comm[r]);
            t->comm[r] = NULL;
        }
    t->broken = true;
}

/* Rank r's part of the step: its logits call (which launches its step and waits for it). */
static void run_rank(nccl_tp *t, int32_t r) {
    cudaSetDevice(t->dev[r]);
    t->rc[r] = t->ops->logits(t->rcs[r], t->need_logits, &t->lg[r], &t->ids[r]);
    t->vals[r] = tinfer_cuda_greedy_vals(t->rcs[r]);
    if (t->rc[r] != TINFER_OK) { /* the other ranks may wait for this one's collectives */
        pthread_mutex_lock(&t->mu);
        if (!t->broken) abort_comms(t);
        pthread_mutex_unlock(&t->mu);
    }
}

static void *worker(void *p) {
    worker_arg a = *(worker_arg *)p;
    free(p);
    nccl_tp *t = a.t;
    cudaSetDevice(t->dev[a.r]);
    uint64_t seen = 0;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (t->gen == seen && !t->quit)
            pthread_cond_wait(&t->go, &t->mu);
        if (t->quit) break;
        seen = t->gen;
        pthread_mutex_unlock(&t->mu);
        t->job(t, a.r);
        pthread_mutex_lock(&t->mu);
        if (--t->pending == 0) pthread_cond_signal(&t->done);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static void nccl_destroy(void *self) {
    nccl_tp *t = self;
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    t->quit = true;
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->mu);
    for (int32_t i = 0; i < t->n_threads; i++)
        pthread_join(t->th[i], NULL);
    for (int32_t r = 0; r < t->n; r++)
        if (t->comm[r]) {
            cudaSetDevice(t->dev[r]);
            ncclCommDestroy(t->comm[r]);
        }
    pthread_cond_destroy(&t->go);
    pthread_cond_destroy(&t->done);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static tinfer_status nccl_check(const void *self, const tinfer_backend_ops *rank_ops,
                                tinfer_err *err) {
    (void)self;
    if (rank_ops != &tinfer_backend_cuda)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG,
                              "the NCCL all-reduce runs over CUDA ranks, not %s", rank_ops->name);
    return TINFER_OK;
}

static int32_t nccl_device(const void *self, int32_t rank) {
    return ((const nccl_tp *)self)->dev[rank];
}

static tinfer_status nccl_sum(void *self, const tinfer_backend_ops *rank_ops, void *const *rank_cs,
                              int32_t n_rank, tinfer_buf buf, int64_t n, tinfer_err *err) {
    nccl_tp *t = self;
    for (int32_t r = 0; r < n_rank; r++) {
        const tinfer_status rc = tinfer_cuda_record_allreduce(rank_cs[r], buf, n, t->comm[r]);
        if (rc != TINFER_OK)
            return tinfer_err_set(err, rc, "tp rank %d: %s", (int)r,
                                  rank_ops->last_error(rank_cs[r]));
    }
    return TINFER_OK;
}

static tinfer_status nccl_ctx_ready(void *self, const tinfer_backend_ops *rank_ops,
                                    void *const *rank_cs, int32_t n_rank, tinfer_err *err) {
    (void)self;
    for (int32_t r = 0; r < n_rank; r++) {
        const tinfer_status rc = tinfer_cuda_keep_greedy_vals(rank_cs[r]);
        if (rc != TINFER_OK)
            return tinfer_err_set(err, rc, "tp rank %d: %s", (int)r,
                                  rank_ops->last_error(rank_cs[r]));
    }
    return TINFER_OK;
}

/* Runs job on every rank at once (rank 0 here, the others on their threads) and returns when
 * all are done. */
static void run_all(nccl_tp *t, void (*job)(nccl_tp *, int32_t)) {
    pthread_mutex_lock(&t->mu);
    t->job = job;
    t->pending = t->n - 1;
    t->gen++;
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->mu);
    job(t, 0);
    pthread_mutex_lock(&t->mu);
    while (t->pending > 0)
        pthread_cond_wait(&t->done, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

#define TIME_WARM 5
#define TIME_REPS 20

static int cmp_f(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Rank r's part of the timing: TIME_WARM then TIME_REPS in-place all-reduces of t->row values,
 * F32 then BF16, each between two events on a stream of its own; rank 0 keeps the medians. The
 * values are whatever cudaMalloc left (an all-reduce's time does not depend on them). */
static void time_rank(nccl_tp *t, int32_t r) {
    cudaSetDevice(t->dev[r]);
    cudaStream_t st = NULL;
    void *buf = NULL;
    cudaEvent_t ev[TIME_REPS + 1] = {0};
    float ms[TIME_REPS];
    bool ok = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess &&
              cudaMalloc(&buf, (size_t)t->row * sizeof(float)) == cudaSuccess;
    for (int i = 0; ok && i <= TIME_REPS; i++)
        ok = cudaEventCreate(&ev[i]) == cudaSuccess;
    for (int k = 0; k < 2; k++) { /* every rank issues the same collectives, ok or not */
        const ncclDataType_t ty = k == 0 ? ncclFloat32 : ncclBfloat16;
        for (int i = 0; i < TIME_WARM; i++)
            ncclAllReduce(buf, buf, (size_t)t->row, ty, ncclSum, t->comm[r], st);
        if (ok) cudaEventRecord(ev[0], st);
        for (int i = 0; i < TIME_REPS; i++) {
            ncclAllReduce(buf, buf, (size_t)t->row, ty, ncclSum, t->comm[r], st);
            if (ok) cudaEventRecord(ev[i + 1], st);
        }
        if (ok) ok = cudaStreamSynchronize(st) == cudaSuccess;
        for (int i = 0; ok && i < TIME_REPS; i++)
            ok = cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]) == cudaSuccess;
        if (ok && r == 0) {
            qsort(ms, TIME_REPS, sizeof ms[0], cmp_f);
            t->us[k] = 1e3 * ms[TIME_REPS / 2];
        }
    }
    for (int i = 0; i <= TIME_REPS; i++)
        if (ev[i]) cudaEventDestroy(ev[i]);
    if (st) cudaStreamSynchronize(st), cudaStreamDestroy(st);
    cudaFree(buf);
    cudaGetLastError();
}

static void nccl_timing(void *self, double *f32_us, double *bf16_us) {
    nccl_tp *t = self;
    if (!t->timed && !t->broken) {
        run_all(t, time_rank);
        t->timed = true;
    }
    *f32_us = t->us[0];
    *bf16_us = t->us[1];
}

static tinfer_status nccl_logits(void *self, const tinfer_backend_ops *rank_ops,
                                 void *const *rank_cs, int32_t n_rank, bool need_logits,
                                 const float **lg, const int32_t **ids, const float **vals,
                                 tinfer_err *err) {
    nccl_tp *t = self;
    if (t->broken)
        return tinfer_err_set(err, TINFER_ERR_CUDA,
                              "tp: an earlier step failed and its communicators were aborted");
    t->ops = rank_ops;
    t->rcs = rank_cs;
    t->need_logits = need_logits;
    t->lg = lg;
    t->ids = ids;
    t->vals = vals;
    run_all(t, run_rank);
    for (int32_t r = 0; r < n_rank; r++)
        if (t->rc[r] != TINFER_OK)
            return tinfer_err_set(err, t->rc[r], "tp rank %d: %s", (int)r,
                                  rank_ops->last_error(rank_cs[r]));
    return TINFER_OK;
}

tinfer_status tinfer_tp_nccl_devices_ok(int32_t n_rank, const int32_t *devices,
                                        tinfer_err *err) {
    if (n_rank < 1 || n_rank > TINFER_TP_MAX || !devices)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "tp nccl: %d ranks", (int)n_rank);
    int n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess) {
        cudaGetLastError();
        n_dev = 0;
    }
    if (n_dev < n_rank)
        return tinfer_err_set(err, TINFER_ERR_NO_DEVICE,
                              "tensor parallelism over %d GPUs, but %d %s present", (int)n_rank,
                              n_dev, n_dev == 1 ? "is" : "are");
    for (int32_t r = 0; r < n_rank; r++)
        if (devices[r] < 0 || devices[r] >= n_dev)
            return tinfer_err_set(err, TINFER_ERR_NO_DEVICE, "GPU %d is not there (%d present)",
                                  (int)devices[r], n_dev);
    return TINFER_OK;
}

tinfer_status tinfer_tp_nccl_create(int32_t n_rank, const int32_t *devices, int64_t row,
                                    const tinfer_tp_allreduce **out, tinfer_err *err) {
    *out = NULL;
    const tinfer_status rc = tinfer_tp_nccl_devices_ok(n_rank, devices, err);
    if (rc != TINFER_OK) return rc;
    nccl_tp *t = calloc(1, sizeof *t);
    if (!t) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (tp nccl)");
    t->n = n_rank;
    t->row = row > 0 ? row : 1;
    memcpy(t->dev, devices, (size_t)n_rank * sizeof *devices);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->go, NULL);
    pthread_cond_init(&t->done, NULL);
    t->ar = (tinfer_tp_allreduce){.name = "nccl",
                                  .check = nccl_check,
                                  .sum = nccl_sum,
                                  .device = nccl_device,
                                  .ctx_ready = nccl_ctx_ready,
                                  .logits = nccl_logits,
                                  .destroy = nccl_destroy,
                                  .timing = nccl_timing,
                                  .self = t};
    const ncclResult_t nr = ncclCommInitAll(t->comm, n_rank, t->dev);
    if (nr != ncclSuccess) {
        memset(t->comm, 0, sizeof t->comm);
        const tinfer_status rc =
            tinfer_err_set(err, TINFER_ERR_CUDA, "ncclCommInitAll over %d GPUs: %s", (int)n_rank,
                           ncclGetErrorString(nr));
        nccl_destroy(t);
        return rc;
    }
    for (int32_t r = 1; r < n_rank; r++) {
        worker_arg *a = malloc(sizeof *a);
        if (!a) {
            nccl_destroy(t);
            return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory (tp nccl)");
        }
        *a = (worker_arg){t, r};
        if (pthread_create(&t->th[t->n_threads], NULL, worker, a) != 0) {
            free(a);
            nccl_destroy(t);
            return tinfer_err_set(err, TINFER_ERR_INTERNAL,
                                  "tp nccl: cannot start the thread of rank %d", (int)r);
        }
        t->n_threads++;
    }
    *out = &t->ar;
    return TINFER_OK;
}

/*
 * backend_cuda_internal.h — what the two halves of the CUDA backend share: backend_cuda.c (the
 * model, the context, recording a step's ops as the forward pass calls them, handing the logits
 * over) and backend_cuda_step.c (running a recorded step: op by op, as a CUDA graph, or as the
 * fused decode kernel). Not a public interface: only those two files include it.
 */
#ifndef TINFER_MODELS_BACKEND_CUDA_INTERNAL_H
#define TINFER_MODELS_BACKEND_CUDA_INTERNAL_H

#include "models/backend.h"
#include "models/cuda_plan.h"

#include "gemm/cuda/device.h"
#include "ops/cuda/ops_cuda.h"

#include <cuda_runtime.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct cuda_model {
    const tinfer_llama_config *cfg;
    int32_t device; /* the CUDA device of the model and its contexts */
    tinfer_device_info dev;
    void *wmem; /* every weight, BF16, one allocation */
    size_t wbytes;
    tinfer_llama_weights w; /* device views of wmem */
    float *inv_freq;        /* device F32 [head_dim / 2]: RoPE's inverse frequencies */
    /* the fused decode step's view of the weights (ops/cuda/decode_step.cu): layers device
     * [n_layer]; used for small models only (fused_ok) */
    tinfer_op_cuda_step_model step;
    tinfer_op_cuda_step_layer *step_layers;
    char desc[320];
} cuda_model;

/* Models up to this many bytes of weights run their decode steps of up to
 * TINFER_OP_CUDA_STEP_MAX_B tokens as one fused kernel: there, each op-by-op kernel costs more
 * in latency than its weight bytes take to read. Larger models stream at bandwidth op by op. */
#define FUSED_MAX_WEIGHT_BYTES ((size_t)1 << 30)
/* cuda_fused_decode < 0 (the default) takes the fused kernel for steps of up to this many
 * tokens: where it measured faster than the op-by-op graphs (SmolLM2-135M, tinfer-bench tg128:
 * one sequence 2,839 tok/s fused against 1,389 on an H100; on an H200, two 3,755 against 2,617,
 * four 7,189 against 4,990, eight 12,297 against 9,204). */
#define FUSED_AUTO_MAX_TOKENS 8

/* A decode step's rows run as at most this many concurrent chains of kernels (micro-batching,
 * backend_cuda_step.c). */
#define MICRO_MAX 4

/* One op of the step, recorded when the forward pass calls it and run in logits(): eagerly, or
 * into a CUDA graph. The arguments are what the ops were called with; the buffers and the
 * metadata they name are fixed addresses of the context, so a replay reads the new step's. */
typedef enum {
    CMD_EMBED,
    CMD_RMSNORM,
    CMD_MATMUL,
    CMD_ROPE_KV,
    CMD_ATTENTION,
    CMD_ALLREDUCE /* tensor parallelism: y's first N floats summed over the ranks of comm */
} cmd_kind;
typedef struct cmd {
    cmd_kind kind;
    tinfer_buf y, x;
    const tinfer_weight *w, *bias;
    int64_t N, K;
    tinfer_epi epi;
    bool rows_out; /* matmul over the n_out gathered rows; rmsnorm: the gather */
    float eps;
    int32_t layer;
    void *comm; /* CMD_ALLREDUCE: the rank's ncclComm_t */
    /* The split RMSNorm (backend_cuda_step.c, plan_split_norms; -1: none), set when the step
     * runs: a residual matmul writing its sums of squares into slot nss_slot (and the normalised
     * rows' numerators into XB), the RMSNorm after it skipped, each matmul reading XB scaling its
     * rows by slot rss_slot's 1 / rms. */
    int32_t nss_slot, rss_slot;
    bool skip;
    float norm_eps; /* the skipped RMSNorm's eps (on the consumers) */
} cmd;

/* A decode step's graph: the kernels of every step of this shape (tokens, logit rows, the
 * attention's key ranges, the logits buffer) are the same launches on the same addresses. The
 * first step of a shape runs eagerly (lazy one-time set-up: kernel attributes, TMA descriptors,
 * stays out of the capture), the second is captured, later ones replay it. */
#define GRAPH_SLOTS 16
typedef struct graph_entry {
    int32_t n, n_out, chunk, n_split;
    const float *logits;
    bool lm_argmax; /* the LM head ran as tinfer_op_cuda_lm_argmax (no logits) */
    int32_t seen;
    cudaGraphExec_t exec;
    uint64_t used;
    int32_t kernels; /* kernel nodes of the captured graph */
} graph_entry;

typedef struct cuda_ctx {
    const cuda_model *m;
    tinfer_err err;
    cudaStream_t stream;
    int32_t n_seq, n_ctx, n_batch, n_logits;
    tinfer_cuda_ctx_plan plan;
    unsigned char *mem; /* the plan's device allocation */
    float *logits;      /* device [n_logits, V] (may live outside mem once grown) */
    float *h_logits;    /* pinned host [n_logits, V] */
    bool logits_own;    /* logits was allocated apart from mem (after growing) */
    int32_t *h_meta;    /* pinned host staging of the metadata block */
    int32_t *h_ids;     /* pinned host [plan.ids_count]: each logits row's argmax (greedy steps:
                         * each step's) */
    /* h_logits / h_ids as the device addresses them (mapped pinned memory; NULL: not mapped).
     * The fused step writes its outputs there directly, so its step has no download: the
     * logits cross PCIe while the LM head is still being computed. */
    float *h_logits_dev;
    int32_t *h_ids_dev;
    bool want_logits;  /* this step's logits go to the host (set by logits()) */
    float *vals;       /* device [n_batch]: each logits row's greedy logit (NULL: not kept) */
    float *h_vals;     /* pinned host copy of vals (tinfer_cuda_keep_greedy_vals) */
    bool step_to_host; /* the step wrote its logits (when wanted) and ids into h_* itself */
    tinfer_op_cuda_kv kv;
    /* this step */
    const tinfer_batch_plan *bp;
    int32_t n_tiles, n_dec, max_dec_len;
    int32_t dec_chunk, dec_split; /* the decode attention's key ranges (graph key) */
    cmd *cmds;                    /* the step's ops, run in logits() [cap_cmds] */
    int32_t n_cmds, cap_cmds;
    /* decode steps as CUDA graphs, one per batch shape (graph_entry), LRU of GRAPH_SLOTS */
    bool graphs;
    graph_entry g[GRAPH_SLOTS];
    uint64_t g_clock;
    int64_t n_replays, n_captures; /* tinfer_context_stats */
    int32_t last_kernels;          /* kernels of the last step (0: it ran eagerly) */
    /* decode steps of small models as one fused kernel (tinfer_context_params.cuda_fused_decode) */
    int32_t fused;   /* tinfer_context_params.cuda_fused_decode: 1, 0, < 0 auto */
    uint32_t *bar;   /* device, 2 words: the fused kernel's count of blocks done and epoch */
    uint64_t *ll;    /* device: its flagged words (tinfer_op_cuda_step_ll_words) */
    uint64_t *amax;  /* device [TINFER_OP_CUDA_STEP_MAX_B], after them: its greedy picks */
    int64_t n_fused;     /* steps run fused (tinfer_context_stats) */
    int64_t n_lm_argmax; /* op-by-op steps whose LM head ran as tinfer_op_cuda_lm_argmax */
    /* micro-batching (backend_cuda_step.c): a decode step's rows in up to MICRO_MAX windows,
     * each a chain of its own on its own stream; created at the first step that splits */
    int32_t micro; /* tinfer_context_params.cuda_micro_batches: 0 auto, 1 off, 2 .. MICRO_MAX */
    cudaStream_t side[MICRO_MAX - 1];
    cudaEvent_t fork, join[MICRO_MAX - 1];
} cuda_ctx;

/* Every entry of a CUDA model or context makes its device current first (a process may hold
 * models on several devices: tensor parallelism). */
static inline void on_device(const cuda_model *m) { cudaSetDevice(m->device); }

#define CUDA_OK(err, call, what)                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return tinfer_err_set((err),                                                           \
                                  e_ == cudaErrorMemoryAllocation ? TINFER_ERR_OUT_OF_MEMORY       \
                                                                  : TINFER_ERR_CUDA,               \
                                  "%s: %s (%s)", what, cudaGetErrorString(e_), #call);             \
    } while (0)

/* ---- the context's buffers ---- */

static inline int32_t *meta_dev(cuda_ctx *c, size_t off) {
    return (int32_t *)(c->mem + c->plan.meta) + off;
}

static inline void *buf(cuda_ctx *c, tinfer_buf b) {
    const tinfer_cuda_ctx_plan *p = &c->plan;
    switch (b) {
    case TINFER_BUF_X: return c->mem + p->x;
    case TINFER_BUF_XB: return c->mem + p->xb;
    case TINFER_BUF_QKV: return c->mem + p->qkv;
    case TINFER_BUF_ATT: return c->mem + p->att;
    case TINFER_BUF_ACT: return c->mem + p->act;
    case TINFER_BUF_LOGITS: return c->logits;
    default: return NULL;
    }
}

/* Runs the recorded step on the context's stream (backend_cuda_step.c): the fused decode kernel
 * where it applies, else a decode step through its CUDA graph, else op by op; then the argmax of
 * the logits rows. Asynchronous: cuda_logits synchronises. */
tinfer_status tinfer_cuda_launch_step(cuda_ctx *c);

/* Greedy steps (models/backend.h's greedy_steps; backend_cuda_step.c): the recorded decode step,
 * every token of it a logits row, then up to n_more more, each fed the previous step's picks on
 * the device, *n_steps of them; step k's picks into the pinned host ids [k n_out .. (k + 1)
 * n_out) once all have run. Up to TINFER_OP_CUDA_STEP_MAX_B sequences as one launch of the
 * fused kernel (tinfer_op_cuda_decode_steps: as many steps as its keys and the ids buffer
 * allow); else op by op or as graph replays with tinfer_op_cuda_greedy_feed between them (up
 * to TINFER_CUDA_GREEDY_STEPS in all).
 * TINFER_ERR_UNSUPPORTED, nothing launched, where neither applies. Waits. */
tinfer_status tinfer_cuda_greedy_steps(cuda_ctx *c, int32_t n_more, int32_t *n_steps);

#endif

/*
 * tinfer.h — the public C API of tinfer, a small transformer runtime.
 *
 * Loads an HF model directory (config.json, *.safetensors, tokenizer.json) and runs it on the
 * CPU (the reference backend) or, where built and present, on an NVIDIA GPU.
 *
 * Conventions
 *  - Handles are opaque. Each `*_free` undoes exactly what its `*_load` / `*_init` made.
 *  - Every fallible call returns a tinfer_status (TINFER_OK = 0, negative on error) and records a
 *    one-line message naming the file, tensor, JSON key or CUDA call at fault. Read it with
 *    tinfer_model_last_error / tinfer_context_last_error / tinfer_sampler_last_error, or with
 *    tinfer_last_error() (the latest error on the calling thread, also for calls that fail
 *    before a handle exists, such as tinfer_model_load).
 *  - Caller-owned outputs come with a capacity; when it is too small the call returns
 *    TINFER_ERR_BUFFER_TOO_SMALL and stores the size needed in *n_out.
 *  - The library never exits, aborts or prints.
 *  - Parameter structs are filled by *_default_params() first, so fields can be added later.
 *    Enum values are only ever added at the end.
 */
#ifndef TINFER_H
#define TINFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define TINFER_API
#else
#define TINFER_API __attribute__((visibility("default")))
#endif

typedef enum tinfer_status {
    TINFER_OK = 0,
    TINFER_ERR_INVALID_ARG = -1,      /* a caller argument is out of range or NULL */
    TINFER_ERR_IO = -2,               /* a file or directory could not be opened/read/mapped */
    TINFER_ERR_FORMAT = -3,           /* a file is malformed (safetensors, JSON, GGUF, ...) */
    TINFER_ERR_UNSUPPORTED = -4,      /* valid input we do not handle (architecture, dtype, ...) */
    TINFER_ERR_OUT_OF_MEMORY = -5,    /* host or device allocation failed */
    TINFER_ERR_BUFFER_TOO_SMALL = -6, /* caller buffer too small; *n_out holds the size needed */
    TINFER_ERR_CONTEXT_FULL = -7,     /* a sequence would exceed the context length */
    TINFER_ERR_CUDA = -8,             /* a CUDA / cuBLAS call failed (message names it) */
    TINFER_ERR_NO_DEVICE = -9,        /* the requested backend is not available here */
    TINFER_ERR_INTERNAL = -10,        /* a bug: an invariant of the library did not hold */
} tinfer_status;

/* Short constant text for a status ("ok", "invalid argument", ...). Never NULL. */
TINFER_API const char *tinfer_status_str(tinfer_status s);

/* The message of the latest failing call on this thread ("" if none). */
TINFER_API const char *tinfer_last_error(void);

typedef int32_t tinfer_token;

typedef struct tinfer_model tinfer_model;
typedef struct tinfer_context tinfer_context;
typedef struct tinfer_sampler tinfer_sampler;

/* ------------------------------------------------------------------------------------------ */
/* Model                                                                                      */

typedef enum tinfer_backend {
    TINFER_BACKEND_AUTO = 0, /* CUDA when built with it and a usable GPU is present, else CPU */
    TINFER_BACKEND_CPU = 1,
    TINFER_BACKEND_CUDA = 2,
} tinfer_backend;

typedef struct tinfer_model_params {
    tinfer_backend backend;
    int32_t n_threads; /* CPU threads; <= 0 means all available cores */
    /* Benchmarks: read only config.json (and tokenizer.json when present) and give every weight
     * random BF16 values of the config's shapes, seeded by random_seed (vLLM's load_format
     * "dummy"): speed without the weights; the text it makes is noise. */
    bool random_weights;
    uint64_t random_seed;
    /* Tensor parallelism (Megatron-style): the model runs as tp shards ("ranks"), each holding
     * its slice of every weight (whole attention heads, a slice of the MLP and of the
     * vocabulary), the partial outputs summed after each attention and MLP block. 0: off (the
     * default); 1: one rank through the tensor-parallel path (the same results as 0: a check of
     * that path); N: N ranks. tp must divide the attention heads and intermediate_size, and
     * divide the KV heads or be a multiple of them (TINFER_ERR_INVALID_ARG otherwise). On CUDA
     * (asked for, or AUTO where a GPU is usable) one rank a GPU, summed through NCCL; a build
     * without NCCL, or fewer GPUs than ranks, is TINFER_ERR_NO_DEVICE saying which. On the CPU
     * backend the shards run one after another: a check of the split, not a speed-up. */
    int32_t tp;
    /* CUDA only: the devices of the ranks, one per rank (n_gpus == max(tp, 1)), distinct,
     * >= 0; NULL / 0 = devices 0, 1, ... Naming devices asks for the CUDA backend (AUTO then
     * means CUDA; with TINFER_BACKEND_CPU it is TINFER_ERR_INVALID_ARG). Without tp, gpus {k}
     * runs the model on device k. */
    const int32_t *gpus;
    int32_t n_gpus;
} tinfer_model_params;

TINFER_API tinfer_model_params tinfer_model_default_params(void);

/* Loads an HF model directory: config.json, model.safetensors or model.safetensors.index.json
 * with its shards, tokenizer.json, and (optional) generation_config.json and
 * tokenizer_config.json. On failure *out is NULL and tinfer_last_error() says why. */
TINFER_API tinfer_status tinfer_model_load(const char *dir, const tinfer_model_params *params,
                                           tinfer_model **out);
TINFER_API void tinfer_model_free(tinfer_model *model);
TINFER_API const char *tinfer_model_last_error(const tinfer_model *model);

TINFER_API int32_t tinfer_model_n_vocab(const tinfer_model *model);
TINFER_API int32_t tinfer_model_n_ctx_train(const tinfer_model *model); /* max_position_embeddings */
TINFER_API int32_t tinfer_model_n_layer(const tinfer_model *model);
TINFER_API int32_t tinfer_model_n_embd(const tinfer_model *model);
TINFER_API int64_t tinfer_model_n_params(const tinfer_model *model);
TINFER_API tinfer_backend tinfer_model_backend(const tinfer_model *model);
/* A one-line description, e.g. "llama 30 layers, hidden 576, 9/3 heads, bf16, cpu avx512, 2
 * threads" (the backend taken and where it runs at the end). */
TINFER_API const char *tinfer_model_desc(const tinfer_model *model);
/* Bytes of weights one decode step reads on this model's backend (for GB/s figures). */
TINFER_API int64_t tinfer_model_weight_bytes(const tinfer_model *model);
/* The kernels a step of n_tokens tokens runs its projections on, as the backend's dispatcher
 * picks them from the batch shape (e.g. "qkv gemv 08, o gemv 08, ..., lm head gemv 09" on a GPU,
 * "cpu avx512 gemv" on the CPU), the LM head's for n_logits rows (1 <= n_logits <= n_tokens: 1
 * for a prompt's last token, n_tokens for a decode step of n_tokens sequences that each want
 * their logits), written NUL-terminated into buf (cap bytes, truncated to fit; empty for sizes
 * out of range). Returns buf. */
TINFER_API const char *tinfer_model_route_desc(const tinfer_model *model, int32_t n_tokens,
                                               int32_t n_logits, char *buf, size_t cap);

TINFER_API tinfer_token tinfer_token_bos(const tinfer_model *model); /* -1 if none */
/* End-of-generation tokens: every eos id of config.json / generation_config.json. */
TINFER_API int32_t tinfer_token_eos_count(const tinfer_model *model);
TINFER_API tinfer_token tinfer_token_eos(const tinfer_model *model, int32_t i);
TINFER_API bool tinfer_token_is_eog(const tinfer_model *model, tinfer_token token);

/* Generation defaults read from generation_config.json (absent keys keep sampler defaults). */
typedef struct tinfer_sampler_params tinfer_sampler_params;
TINFER_API void tinfer_model_generation_defaults(const tinfer_model *model,
                                                 tinfer_sampler_params *params);

/* ------------------------------------------------------------------------------------------ */
/* Tokenizer (byte-level BPE from tokenizer.json)                                             */

typedef enum tinfer_tokenize_flags {
    TINFER_TOKENIZE_ADD_SPECIAL = 1 << 0,   /* apply the post-processor (e.g. add BOS) */
    TINFER_TOKENIZE_PARSE_SPECIAL = 1 << 1, /* match special/added token text as one token */
} tinfer_tokenize_flags;

/* Tokenizes text[0..len). Invalid UTF-8 is replaced by U+FFFD first. Writes up to `cap` tokens;
 * *n_out always receives the number of tokens the text needs. */
TINFER_API tinfer_status tinfer_tokenize(const tinfer_model *model, const char *text, size_t len,
                                         uint32_t flags, tinfer_token *tokens, int32_t cap,
                                         int32_t *n_out);

typedef enum tinfer_detokenize_flags {
    TINFER_DETOKENIZE_SKIP_SPECIAL = 1 << 0, /* drop special tokens' text */
} tinfer_detokenize_flags;

/* Decodes tokens to UTF-8 text (invalid byte sequences become U+FFFD, like HF decode). Writes up
 * to `cap` bytes plus no terminator; *n_out receives the byte count needed. */
TINFER_API tinfer_status tinfer_detokenize(const tinfer_model *model, const tinfer_token *tokens,
                                           int32_t n_tokens, uint32_t flags, char *text,
                                           size_t cap, size_t *n_out);

/* Streaming decode, one token at a time: emits only complete UTF-8 characters and holds an
 * incomplete tail until the next token completes it (or flush turns it into U+FFFD).
 * Zero-initialise the state (or call tinfer_detok_stream_reset) before the first token. */
typedef struct tinfer_detok_stream {
    unsigned char pending[8];
    int32_t n_pending;
} tinfer_detok_stream;

TINFER_API void tinfer_detok_stream_reset(tinfer_detok_stream *st);
TINFER_API tinfer_status tinfer_detok_stream_push(const tinfer_model *model,
                                                  tinfer_detok_stream *st, tinfer_token token,
                                                  uint32_t flags, char *text, size_t cap,
                                                  size_t *n_out);
TINFER_API tinfer_status tinfer_detok_stream_flush(tinfer_detok_stream *st, char *text, size_t cap,
                                                   size_t *n_out);

/* Chat template: implements the template forms real models use (ChatML, Llama-3, Llama-2 [INST],
 * Zephyr), detected from tokenizer_config.json's chat_template; not a Jinja engine. */
typedef struct tinfer_chat_message {
    const char *role; /* "system", "user", "assistant" */
    const char *content;
} tinfer_chat_message;

TINFER_API tinfer_status tinfer_chat_apply(const tinfer_model *model,
                                           const tinfer_chat_message *messages, int32_t n_messages,
                                           bool add_generation_prompt, char *text, size_t cap,
                                           size_t *n_out);

/* ------------------------------------------------------------------------------------------ */
/* Context: KV cache + scratch for running batches                                            */

typedef struct tinfer_context_params {
    int32_t n_ctx;     /* tokens per sequence in the KV cache; 0 = min(model's, 4096) */
    int32_t n_seq_max; /* sequences sharing the context (each has its own n_ctx cache) */
    int32_t n_batch;   /* most tokens one tinfer_decode call may carry; 0 = n_ctx */
    int32_t n_threads; /* CPU threads; <= 0 = the model's setting */
    /* CUDA backend: 1 (default) replays each decode step (one token per sequence) as one CUDA
     * graph per batch shape, captured the second time the shape is seen; 0 launches every kernel
     * of every step on its own. No effect on the CPU. */
    int32_t cuda_graphs;
    /* CUDA backend: a decode step of at most 8 sequences of a small model (weights up to 1 GiB,
     * contexts up to 1,024 tokens) may run as ONE persistent kernel instead of ~5 kernels a
     * layer. < 0 (default): where that measured faster, a step of up to 8 sequences
     * (SmolLM2-135M, tok/s fused against op by op with graphs: one sequence 2,839 against 1,389
     * on an H100; on an H200 two 3,755 against 2,617, four 7,189 against 4,990, eight 12,297
     * against 9,204); 1: whenever it can; 0: never. No effect on the CPU. */
    int32_t cuda_fused_decode;
    /* CUDA backend: a decode step (one token per sequence) run op by op may split its sequences
     * into up to 4 groups of consecutive rows, each group a chain of kernels of its own on its
     * own stream, the chains running at once (micro-batching: the step's short kernels leave
     * most of the GPU idle, which the other chains were to fill). Measured slower at every
     * batch size (SmolLM2-135M on an H100, 64 sequences: 65,700 tok/s as two chains, 58,900 as
     * four, against 69,000 as one), so 0 (default, auto) runs one chain; 1: one chain; 2-4:
     * that many groups in every decode step of at least as many sequences (for measurement).
     * No effect on the CPU or with tensor parallelism. */
    int32_t cuda_micro_batches;
} tinfer_context_params;

TINFER_API tinfer_context_params tinfer_context_default_params(void);
TINFER_API tinfer_status tinfer_context_init(tinfer_model *model,
                                             const tinfer_context_params *params,
                                             tinfer_context **out);
TINFER_API void tinfer_context_free(tinfer_context *ctx);
TINFER_API const char *tinfer_context_last_error(const tinfer_context *ctx);
TINFER_API int32_t tinfer_context_n_ctx(const tinfer_context *ctx);

/* What the context's steps cost in launches (for benchmarks and the server's metrics). */
typedef struct tinfer_context_stats {
    int64_t steps;          /* tinfer_decode calls that ran */
    int64_t graph_replays;  /* CUDA backend: steps replayed from a captured graph */
    int64_t graph_captures; /* CUDA backend: graphs captured (a new batch shape, or key range) */
    /* CUDA backend: kernels of the last step when it was replayed from (or captured into) a
     * graph, counted from the graph's kernel nodes; 0 for an eager step and on the CPU */
    int32_t last_step_kernels;
    int64_t fused_steps; /* CUDA backend: decode steps run as one fused kernel */
    /* CUDA backend: steps of several kernels whose LM head and greedy argmax ran as one kernel
     * (only the picks wanted: tinfer_op_cuda_lm_argmax), so no logits were written */
    int64_t lm_argmax_steps;
    /* Tensor parallelism over GPUs: one all-reduce of a token's residual row (n_embd values, in
     * place, over every rank) timed alone on the model's communicators, median of 20 after a
     * warm-up, in microseconds: F32 (what a step runs) and BF16 (for comparison; no step runs
     * it). Measured at the first query; 0 without tensor parallelism on CUDA. A decode step of
     * B tokens runs 2 n_layer all-reduces, each of B rows. */
    double tp_allreduce_us, tp_allreduce_bf16_us;
} tinfer_context_stats;
TINFER_API tinfer_status tinfer_context_get_stats(const tinfer_context *ctx,
                                                  tinfer_context_stats *out);

/* A batch: n_tokens entries, each a token at a position in a sequence. Several sequences may
 * share one call (prefill of one while decoding another). Positions within a sequence must
 * continue that sequence's cache: pos == number of tokens already cached for seq_id, in order.
 * logits[i] asks what comes after token i: 0 nothing, 1 the logits (and the argmax), 2 only the
 * most likely token (tinfer_get_argmax: on a GPU computed there, so one id is copied to the host
 * instead of n_vocab floats: greedy decoding without a repetition penalty needs no more). */
typedef struct tinfer_batch {
    int32_t n_tokens;
    const tinfer_token *token; /* [n_tokens] */
    const int32_t *pos;        /* [n_tokens] */
    const int32_t *seq_id;     /* [n_tokens], 0 <= seq_id < n_seq_max */
    const int8_t *logits;      /* [n_tokens]; NULL = logits for the last token only */
} tinfer_batch;

/* Runs the model over the batch, appending every token to its sequence's KV cache. */
TINFER_API tinfer_status tinfer_decode(tinfer_context *ctx, const tinfer_batch *batch);

/* Logits [n_vocab] of batch entry i of the last tinfer_decode call (NULL if not requested). */
TINFER_API const float *tinfer_get_logits(const tinfer_context *ctx, int32_t i);
/* The most likely token after batch entry i of the last tinfer_decode call (argmax of its
 * logits, ties to the lowest id, as the greedy sampler picks), for entries that asked for
 * logits (1) or for the argmax only (2); -1 otherwise. */
TINFER_API tinfer_token tinfer_get_argmax(const tinfer_context *ctx, int32_t i);

/* Greedy decoding of one sequence, several tokens a call: feeds `token` at the sequence's next
 * position, then each step's most likely token (tinfer_get_argmax's pick) as the next step's
 * input, at most n_max steps; the picks go to out[0 .. *n_out). Stops after a pick that ends
 * generation (tinfer_token_is_eog; it is the last of out, and is not fed: the sequence holds
 * `token` and the picks before it). The same tokens and cache as n_max rounds of tinfer_decode
 * + tinfer_get_argmax, but where the backend can (the CUDA backend's fused decode step: the
 * steps in one kernel launch) the steps run on the device, each reading its token from the
 * previous step's pick, with no host round trip between them. Afterwards tinfer_get_logits /
 * tinfer_get_argmax have nothing (NULL / -1) until the next tinfer_decode. The sequence needs room for n_max tokens
 * (else TINFER_ERR_CONTEXT_FULL, nothing run). */
TINFER_API tinfer_status tinfer_decode_greedy(tinfer_context *ctx, int32_t seq_id,
                                              tinfer_token token, int32_t n_max, tinfer_token *out,
                                              int32_t *n_out);

/* Greedy decoding of n sequences together (vLLM's multi-step decoding): each step feeds every
 * unfinished sequence one token, seq_ids[i] (distinct) first tokens[i], then its picks, for at
 * most n_max steps. Sequence i's picks go to out[i * n_max .. i * n_max + n_out[i]); like
 * tinfer_decode_greedy it stops after a pick that ends generation (kept, not fed), so its cache
 * grows by n_out[i] tokens. The same tokens and caches as n_max rounds of one tinfer_decode of
 * all of them + tinfer_get_argmax, but where the backend can (CUDA: up to 8 sequences as one
 * launch of the fused step's kernel for many steps, more sequences op by op, 16 steps at a time)
 * the steps run on the device, each reading its tokens from the previous step's picks, with no
 * host round trip between them (a sequence that ends generation may be computed a few steps
 * further there; its cache keeps only what is described above). On the CUDA backend the picks
 * of more than 8 sequences come from the LM head and the argmax as one kernel, whose F32 sums
 * may order two logits within rounding of each other differently from the logits
 * tinfer_decode hands over. Afterwards
 * tinfer_get_logits / tinfer_get_argmax have nothing until the next tinfer_decode. Every
 * sequence needs room for n_max tokens (else TINFER_ERR_CONTEXT_FULL, nothing run); n <=
 * the context's n_batch. On an error the steps already run stay, counted in n_out. */
TINFER_API tinfer_status tinfer_decode_greedy_batch(tinfer_context *ctx, int32_t n,
                                                    const int32_t *seq_ids,
                                                    const tinfer_token *tokens, int32_t n_max,
                                                    tinfer_token *out, int32_t *n_out);

/* Tokens cached for a sequence; forgetting a sequence (seq_id < 0: all) empties its cache. */
TINFER_API int32_t tinfer_seq_len(const tinfer_context *ctx, int32_t seq_id);
TINFER_API tinfer_status tinfer_seq_clear(tinfer_context *ctx, int32_t seq_id);

/* ------------------------------------------------------------------------------------------ */
/* Sampler                                                                                    */

struct tinfer_sampler_params {
    float temperature;    /* <= 0: greedy (argmax) */
    int32_t top_k;        /* <= 0: off */
    float top_p;          /* >= 1: off */
    float min_p;          /* <= 0: off */
    float repeat_penalty; /* 1: off (CTRL-style: positive logits divided, negative multiplied) */
    int32_t repeat_last_n; /* window of previous tokens the penalty looks at; 0 = all accepted */
    uint64_t seed;
};

TINFER_API tinfer_sampler_params tinfer_sampler_default_params(void);
TINFER_API tinfer_status tinfer_sampler_init(const tinfer_sampler_params *params,
                                             tinfer_sampler **out);
TINFER_API void tinfer_sampler_free(tinfer_sampler *s);
TINFER_API const char *tinfer_sampler_last_error(const tinfer_sampler *s);
/* Picks a token from logits[n_vocab] (the array is not modified). */
TINFER_API tinfer_status tinfer_sampler_sample(tinfer_sampler *s, const float *logits,
                                               int32_t n_vocab, tinfer_token *out);
/* Records a token as generated (or part of the prompt) for the repetition penalty. */
TINFER_API void tinfer_sampler_accept(tinfer_sampler *s, tinfer_token token);
TINFER_API void tinfer_sampler_reset(tinfer_sampler *s);

#ifdef __cplusplus
}
#endif
#endif /* TINFER_H */

/*
 * generate.c — tinfer-generate: text generation from the command line, on the public API only.
 *
 * Flow: load the model, tokenize the prompt (--chat: the model's chat template around one user
 * message, special tokens parsed; else the tokenizer's post-processor adds BOS etc.), prefill
 * the whole prompt in ONE tinfer_decode batch, then decode one token at a time (greedy decoding
 * on a GPU: GEN_GREEDY_STEPS tokens a tinfer_decode_greedy call), streaming the generated text
 * (never the prompt) to stdout as soon as it is complete UTF-8.
 * Stops at an end-of-generation token, at -n tokens, when the context is full, or at a --stop
 * string. Output that could be the beginning of a stop string is held back until it is known
 * not to be one, so a stop string is never printed.
 * Then one timing line on stderr:
 *   prompt <P> tokens, prefill <X> tok/s, generated <G> tokens, decode <Y> tok/s
 * Errors: `error: <message>` on stderr, exit status 1.
 */
#define _POSIX_C_SOURCE 200809L

#include "tinfer.h"

#include "../common/cli.h"
#include "../common/omp_policy.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Greedy steps a tinfer_decode_greedy call on a GPU: 16 tokens of SmolLM2 are ~5 ms there, so
 * the text still streams smoothly, and the host's round trip per token is gone (+4-5% on an
 * H100, README "The model on the GPU"). */
#define GEN_GREEDY_STEPS 16
#include <time.h>
#include <unistd.h>

#define MAX_STOPS 16

static void usage(FILE *f) {
    fprintf(f,
            "usage: tinfer-generate -m DIR -p PROMPT [options]\n"
            "  -m, --model DIR        HF model directory (config.json, *.safetensors, "
            "tokenizer.json)\n"
            "  -p, --prompt TEXT      prompt text\n"
            "  -n, --n-predict N      most tokens to generate (default 128)\n"
            "  --chat                 wrap the prompt in the model's chat template (one user\n"
            "                         message + generation prompt)\n"
            "  --temp F               temperature; <= 0 is greedy\n"
            "  --top-k N              keep the N most likely tokens (<= 0: off)\n"
            "  --top-p F              nucleus sampling (>= 1: off)\n"
            "  --min-p F              drop tokens below F x the top probability (<= 0: off)\n"
            "  --repeat-penalty F     CTRL repetition penalty over the last 64 tokens (1: off)\n"
            "  --seed N               sampler seed (default 0; the same seed repeats a run)\n"
            "  --stop STR             stop when STR is generated (not printed); repeatable\n"
            "  --backend cpu|cuda|auto  compute backend (default auto)\n"
            "  --threads N            CPU threads (default: all cores)\n"
            "  --tp N                 tensor parallelism over N shards (default 0: off); on CUDA\n"
            "                         one GPU a shard, through NCCL; on the CPU they run one\n"
            "                         after another: a check of the split, not faster\n"
            "  --gpus 0,1,...         CUDA devices, one per shard (default 0, 1, ...)\n"
            "  --ctx N                context length in tokens (default: min(model's, 4096))\n"
            "  -h, --help             this text\n"
            "Sampling defaults follow Hugging Face transformers: the model's\n"
            "generation_config.json when present (do_sample, temperature, top_k, top_p,\n"
            "repetition_penalty), else greedy decoding (HF's default do_sample=False); with a\n"
            "temperature > 0 and nothing else set, top-k is 50 (HF's default). Options override.\n"
            "Timing line on stderr: prefill tok/s = prompt tokens / time of the prompt batch;\n"
            "decode tok/s = single-token decode calls / their time.\n");
}

static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_int(const char *opt, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return fail("%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo, hi);
    *out = v;
    return 0;
}

static int parse_u64(const char *opt, const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return fail("%s: '%s' is not a non-negative integer", opt, s);
    *out = (uint64_t)v;
    return 0;
}

static int parse_float(const char *opt, const char *s, float *out) {
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return fail("%s: '%s' is not a number", opt, s);
    *out = v;
    return 0;
}

/* Output filter holding back text that may start a stop string. */
typedef struct out_filter {
    char *buf;
    size_t n, cap;
    const char *const *stops;
    int n_stops;
    int stopped;
} out_filter;

static int filter_push(out_filter *f, const char *text, size_t len) {
    if (f->stopped) return 0;
    if (f->n + len > f->cap) {
        size_t cap = (f->n + len) * 2 + 64;
        char *p = realloc(f->buf, cap);
        if (!p) return fail("out of memory");
        f->buf = p;
        f->cap = cap;
    }
    memcpy(f->buf + f->n, text, len);
    f->n += len;
    /* earliest complete stop string: print what precedes it, then stop */
    size_t cut = f->n;
    for (int s = 0; s < f->n_stops; s++) {
        size_t sl = strlen(f->stops[s]);
        for (size_t i = 0; sl && i + sl <= f->n && i < cut; i++)
            if (memcmp(f->buf + i, f->stops[s], sl) == 0) {
                cut = i;
                break;
            }
    }
    if (cut < f->n) {
        fwrite(f->buf, 1, cut, stdout);
        fflush(stdout);
        f->stopped = 1;
        f->n = 0;
        return 0;
    }
    /* longest tail that is a proper prefix of some stop string stays held */
    size_t hold = 0;
    for (int s = 0; s < f->n_stops; s++) {
        size_t sl = strlen(f->stops[s]);
        for (size_t k = sl > 0 ? sl - 1 : 0; k > hold; k--)
            if (k <= f->n && memcmp(f->buf + f->n - k, f->stops[s], k) == 0) {
                hold = k;
                break;
            }
    }
    fwrite(f->buf, 1, f->n - hold, stdout);
    fflush(stdout);
    memmove(f->buf, f->buf + f->n - hold, hold);
    f->n = hold;
    return 0;
}

/* Runs one streaming-detokenizer step into *buf (grown when a token's text is long). */
static tinfer_status detok_push(const tinfer_model *m, tinfer_detok_stream *st, tinfer_token t,
                                char **buf, size_t *cap, size_t *n) {
    tinfer_status rc =
        tinfer_detok_stream_push(m, st, t, TINFER_DETOKENIZE_SKIP_SPECIAL, *buf, *cap, n);
    if (rc == TINFER_ERR_BUFFER_TOO_SMALL) {
        char *p = realloc(*buf, *n + 16);
        if (!p) return TINFER_ERR_OUT_OF_MEMORY;
        *buf = p;
        *cap = *n + 16;
        rc = tinfer_detok_stream_push(m, st, t, TINFER_DETOKENIZE_SKIP_SPECIAL, *buf, *cap, n);
    }
    return rc;
}

int main(int argc, char **argv) {
    tinfer_example_omp_policy(argv, "tinfer-generate");
    const char *model_dir = NULL, *prompt = NULL;
    const char *stops[MAX_STOPS];
    int n_stops = 0, chat = 0;
    long n_predict = 128, n_threads = 0, n_ctx = 0;
    tinfer_backend backend = TINFER_BACKEND_AUTO;
    int32_t tp = 0, gpus[64], n_gpus = 0;
    /* CLI sampler overrides, applied after the model's generation defaults */
    int has_temp = 0, has_top_k = 0, has_top_p = 0, has_min_p = 0, has_rp = 0, has_seed = 0;
    float temp = 0, top_p = 0, min_p = 0, rp = 1;
    long top_k = 0;
    uint64_t seed = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--chat")) {
            chat = 1;
            continue;
        }
        if (i + 1 >= argc) {
            return fail("%s: %s (see --help)", a,
                        a[0] == '-' ? "missing value (or unknown option)" : "unexpected argument");
        }
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "-m") || !strcmp(a, "--model"))
            model_dir = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt"))
            prompt = v;
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict"))
            bad = parse_int(a, v, 0, 1L << 30, &n_predict);
        else if (!strcmp(a, "--temp"))
            bad = parse_float(a, v, &temp), has_temp = 1;
        else if (!strcmp(a, "--top-k"))
            bad = parse_int(a, v, -1, 1L << 30, &top_k), has_top_k = 1;
        else if (!strcmp(a, "--top-p"))
            bad = parse_float(a, v, &top_p), has_top_p = 1;
        else if (!strcmp(a, "--min-p"))
            bad = parse_float(a, v, &min_p), has_min_p = 1;
        else if (!strcmp(a, "--repeat-penalty"))
            bad = parse_float(a, v, &rp), has_rp = 1;
        else if (!strcmp(a, "--seed"))
            bad = parse_u64(a, v, &seed), has_seed = 1;
        else if (!strcmp(a, "--threads"))
            bad = parse_int(a, v, 0, 4096, &n_threads);
        else if (!strcmp(a, "--ctx"))
            bad = parse_int(a, v, 1, 1L << 24, &n_ctx);
        else if (!strcmp(a, "--stop")) {
            if (n_stops == MAX_STOPS) return fail("--stop: at most %d stop strings", MAX_STOPS);
            if (!v[0]) return fail("--stop: empty stop string");
            stops[n_stops++] = v;
        } else {
            char why[160];
            const int d = tinfer_example_device_opt(a, v, &backend, &tp, gpus, 64, &n_gpus, why,
                                                    sizeof why);
            if (d < 0) return fail("%s", why);
            if (d == 0) return fail("unknown option '%s' (see --help)", a);
        }
        if (bad) return 1;
    }
    if (!model_dir || !prompt) {
        return fail("%s is required (see --help)", !model_dir ? "-m DIR" : "-p PROMPT");
    }

    int rc_main = 1;
    tinfer_model *model = NULL;
    tinfer_context *ctx = NULL;
    tinfer_sampler *smp = NULL;
    tinfer_token *toks = NULL;
    char *text = NULL, *piece = NULL;
    out_filter filt = {.stops = stops, .n_stops = n_stops};

    tinfer_model_params mp = tinfer_model_default_params();
    mp.backend = backend;
    mp.n_threads = (int32_t)n_threads;
    mp.tp = tp;
    mp.gpus = n_gpus ? gpus : NULL;
    mp.n_gpus = n_gpus;
    if (tinfer_model_load(model_dir, &mp, &model) != TINFER_OK) {
        fail("%s", tinfer_last_error());
        goto done;
    }

    /* prompt text -> tokens */
    const char *ptext = prompt;
    size_t plen = strlen(prompt);
    uint32_t tflags = TINFER_TOKENIZE_ADD_SPECIAL;
    if (chat) {
        tinfer_chat_message msg = {"user", prompt};
        size_t need = 0;
        tinfer_status rc = tinfer_chat_apply(model, &msg, 1, true, NULL, 0, &need);
        if (rc != TINFER_OK && rc != TINFER_ERR_BUFFER_TOO_SMALL) {
            fail("%s", tinfer_last_error());
            goto done;
        }
        text = malloc(need + 1);
        if (!text) {
            fail("out of memory");
            goto done;
        }
        if (tinfer_chat_apply(model, &msg, 1, true, text, need, &need) != TINFER_OK) {
            fail("%s", tinfer_last_error());
            goto done;
        }
        text[need] = '\0';
        ptext = text;
        plen = need;
        tflags = TINFER_TOKENIZE_PARSE_SPECIAL;
    }
    int32_t n_prompt = 0;
    tinfer_status trc = tinfer_tokenize(model, ptext, plen, tflags, NULL, 0, &n_prompt);
    if (trc != TINFER_OK && trc != TINFER_ERR_BUFFER_TOO_SMALL) {
        fail("%s", tinfer_last_error());
        goto done;
    }
    if (n_prompt < 1) {
        fail("the prompt is empty after tokenization");
        goto done;
    }
    toks = malloc((size_t)n_prompt * sizeof *toks);
    if (!toks ||
        tinfer_tokenize(model, ptext, plen, tflags, toks, n_prompt, &n_prompt) != TINFER_OK) {
        fail("%s", toks ? tinfer_last_error() : "out of memory");
        goto done;
    }

    tinfer_context_params cp = tinfer_context_default_params();
    cp.n_ctx = (int32_t)n_ctx;
    cp.n_seq_max = 1;
    if (tinfer_context_init(model, &cp, &ctx) != TINFER_OK) {
        fail("%s", tinfer_last_error());
        goto done;
    }
    const int32_t ctx_len = tinfer_context_n_ctx(ctx);
    if (n_prompt > ctx_len) {
        fail("the prompt has %d tokens but the context holds %d (use --ctx)", (int)n_prompt,
             (int)ctx_len);
        goto done;
    }

    tinfer_sampler_params sp = tinfer_sampler_default_params();
    tinfer_model_generation_defaults(model, &sp);
    if (has_temp) sp.temperature = temp;
    if (has_top_k) sp.top_k = (int32_t)top_k;
    if (has_top_p) sp.top_p = top_p;
    if (has_min_p) sp.min_p = min_p;
    if (has_rp) sp.repeat_penalty = rp;
    if (has_seed) sp.seed = seed;
    if (tinfer_sampler_init(&sp, &smp) != TINFER_OK) {
        fail("%s", tinfer_last_error());
        goto done;
    }
    /* HF's repetition penalty looks at the whole input_ids, prompt included */
    for (int32_t i = 0; i < n_prompt; i++)
        tinfer_sampler_accept(smp, toks[i]);

    /* prefill: the whole prompt in one batch; only the last token's logits are needed */
    int32_t *pos = malloc((size_t)n_prompt * sizeof *pos);
    int32_t *seq = calloc((size_t)n_prompt, sizeof *seq);
    if (!pos || !seq) {
        free(pos);
        free(seq);
        fail("out of memory");
        goto done;
    }
    for (int32_t i = 0; i < n_prompt; i++)
        pos[i] = i;
    tinfer_batch batch = {n_prompt, toks, pos, seq, NULL};
    double t0 = now_s();
    tinfer_status drc = tinfer_decode(ctx, &batch);
    const double t_prefill = now_s() - t0;
    free(pos);
    free(seq);
    if (drc != TINFER_OK) {
        fail("%s", tinfer_last_error());
        goto done;
    }

    size_t piece_cap = 256, piece_n = 0;
    piece = malloc(piece_cap);
    if (!piece) {
        fail("out of memory");
        goto done;
    }
    tinfer_detok_stream ds;
    tinfer_detok_stream_reset(&ds);
    /* greedy without a penalty needs only the argmax: on a GPU it is computed there and one id
     * comes back instead of n_vocab logits, and GEN_GREEDY_STEPS steps go in one
     * tinfer_decode_greedy call, queued on the device (the CPU steps one at a time, so its text
     * streams token by token) */
    const bool greedy = (sp.temperature <= 0 || sp.top_k == 1) && sp.repeat_penalty == 1.0f;
    const int32_t chunk = tinfer_model_backend(model) == TINFER_BACKEND_CUDA ? GEN_GREEDY_STEPS : 1;
    const float *logits = tinfer_get_logits(ctx, n_prompt - 1);
    int32_t row = n_prompt - 1;
    int32_t n_gen = 0, n_decode = 0, n_past = n_prompt;
    tinfer_token picks[GEN_GREEDY_STEPS], next = greedy ? tinfer_get_argmax(ctx, row) : -1;
    int32_t n_picks = 0, i_pick = 0;
    double t_decode = 0.0;
    while (n_gen < n_predict && !filt.stopped) {
        tinfer_token t = next;
        if (!greedy &&
            tinfer_sampler_sample(smp, logits, tinfer_model_n_vocab(model), &t) != TINFER_OK) {
            fail("%s", tinfer_last_error());
            goto done;
        }
        if (tinfer_token_is_eog(model, t)) break;
        n_gen++;
        tinfer_sampler_accept(smp, t);
        if (detok_push(model, &ds, t, &piece, &piece_cap, &piece_n) != TINFER_OK) {
            fail("%s", tinfer_last_error());
            goto done;
        }
        if (filter_push(&filt, piece, piece_n)) goto done;
        if (n_gen == n_predict || filt.stopped || n_past == ctx_len) break;
        if (greedy) { /* the next pick: from the last call's, else feed t and make more */
            if (i_pick == n_picks) {
                int32_t k = n_predict - n_gen < chunk ? (int32_t)(n_predict - n_gen) : chunk;
                if (k > ctx_len - n_past) k = ctx_len - n_past;
                t0 = now_s();
                drc = tinfer_decode_greedy(ctx, 0, t, k, picks, &n_picks);
                t_decode += now_s() - t0;
                if (drc != TINFER_OK) {
                    fail("%s", tinfer_last_error());
                    goto done;
                }
                n_decode += n_picks;
                n_past = tinfer_seq_len(ctx, 0);
                i_pick = 0;
            }
            next = picks[i_pick++];
            continue;
        }
        int32_t p1 = n_past, s1 = 0;
        int8_t mode = 1;
        tinfer_batch one = {1, &t, &p1, &s1, &mode};
        t0 = now_s();
        drc = tinfer_decode(ctx, &one);
        t_decode += now_s() - t0;
        if (drc != TINFER_OK) {
            fail("%s", tinfer_last_error());
            goto done;
        }
        n_decode++;
        n_past++;
        logits = tinfer_get_logits(ctx, 0);
        row = 0;
    }
    if (!filt.stopped) {
        if (tinfer_detok_stream_flush(&ds, piece, piece_cap, &piece_n) == TINFER_OK &&
            filter_push(&filt, piece, piece_n))
            goto done;
        fwrite(filt.buf, 1, filt.n, stdout); /* a held tail that never became a stop string */
    }
    fputc('\n', stdout);
    fflush(stdout);
    fprintf(stderr,
            "prompt %d tokens, prefill %.2f tok/s, generated %d tokens, decode %.2f tok/s\n",
            (int)n_prompt, t_prefill > 0 ? n_prompt / t_prefill : 0.0, (int)n_gen,
            t_decode > 0 ? n_decode / t_decode : 0.0);
    rc_main = 0;
done:
    free(filt.buf);
    free(piece);
    free(text);
    free(toks);
    tinfer_sampler_free(smp);
    tinfer_context_free(ctx);
    tinfer_model_free(model);
    return rc_main;
}

/*
 * model.c — tinfer_model: loading an HF directory (config.json + generation_config.json,
 * safetensors, tokenizer.json, weights) and the model-level queries of tinfer.h.
 *
 * Load order: config -> safetensors -> tokenizer -> weights. Every sub-loader reports into a
 * local error slot whose message is copied into the thread-local slot (tinfer_err_copy); on any
 * failure everything made so far is freed and *out stays NULL.
 * Backends: CUDA (in builds with CUDA) when asked, or for AUTO when a usable GPU is present
 * (the backend's model_init finds one and uploads the weights); otherwise AUTO takes the CPU.
 * CUDA asked for in a build without it, or where no GPU is usable, is TINFER_ERR_NO_DEVICE with
 * the reason. tinfer_model_desc ends with the backend taken. Threads: omp_set_num_threads once
 * at load.
 * Tensor parallelism (params.tp >= 1): the tensor-parallel backend (models/backend_tp.h) over tp
 * ranks. On CUDA (asked for, implied by a device list, or what AUTO takes where a GPU is
 * usable) one rank a GPU, through NCCL (models/tp_nccl.h; a build without NCCL says
 * TINFER_ERR_NO_DEVICE); on the CPU, CPU ranks run one after another (a check of the split,
 * not a speed-up).
 */
#include "model_internal.h"

#include "models/backend.h"
#include "models/backend_tp.h"
#include "models/llama.h"
#include "random_weights.h"
#include "safetensors.h"

#ifdef TINFER_HAVE_CUDA
#include "gemm/cuda/device.h"
#endif
#ifdef TINFER_HAVE_NCCL
#include "models/tp_nccl.h"
#endif

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tinfer_model {
    tinfer_err err;
    tinfer_llama_config cfg;
    tinfer_st_set *st;
    tinfer_random_weights
        *rw; /* random_weights: the made-up tensors (the weights point into them) */
    tinfer_tokenizer *tok;
    tinfer_llama_weights w; /* host: the mapping and what the loader fused or widened */
    tinfer_backend backend;
    const tinfer_backend_ops *ops;
    void *be_state;                    /* the backend's model */
    const tinfer_llama_weights *dev_w; /* the weights as the backend's ops take them */
    int32_t n_threads;
    int64_t n_params;
    char desc[512];
};

/* The safetensors set as the tensor source models/llama.c loads from. */
static tinfer_status st_source_get(const void *ctx, const char *name, int32_t n_dims,
                                   const int64_t *shape, tinfer_tensor_ref *out, tinfer_err *err) {
    const tinfer_tensor_view *v;
    const tinfer_status rc = tinfer_st_get(ctx, name, n_dims, shape, &v, err);
    if (rc != TINFER_OK) return rc;
    out->data = v->data;
    out->dtype = v->dtype;
    out->n_elems = v->n_elems;
    return TINFER_OK;
}
static bool st_source_has(const void *ctx, const char *name) {
    return tinfer_st_find(ctx, name) != NULL;
}

tinfer_model_params tinfer_model_default_params(void) {
    tinfer_model_params p;
    memset(&p, 0, sizeof p);
    p.backend = TINFER_BACKEND_AUTO;
    p.n_threads = 0;
    return p;
}

void tinfer_model_free(tinfer_model *m) {
    if (!m) return;
    if (m->be_state) m->ops->model_free(m->be_state);
    tinfer_llama_free(&m->w);
    tinfer_tokenizer_free(m->tok);
    tinfer_st_close(m->st);
    tinfer_random_weights_free(m->rw);
    free(m);
}

#ifndef TINFER_HAVE_NCCL
static tinfer_status tp_needs_nccl(int32_t tp) {
    return tinfer_err_set(NULL, TINFER_ERR_NO_DEVICE,
                          "tensor parallelism (tp %d) on CUDA needs a build with NCCL, which this "
                          "one is not (the CPU backend runs the shards as a check)",
                          (int)tp);
}
#endif

/* tp and the device list, before anything is loaded: out-of-range values are
 * TINFER_ERR_INVALID_ARG; tensor parallelism on CUDA without NCCL is TINFER_ERR_NO_DEVICE. A
 * device list makes AUTO mean CUDA. Whether the model splits tp ways is models/backend_tp.c's
 * check; whether the GPUs are there, the backend's. */
static tinfer_status check_parallel(tinfer_model_params *p) {
    if (p->tp < 0 || p->tp > TINFER_TP_MAX)
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                              "tinfer_model_load: tp %d (0: off, else 1..%d ranks)",
                              (int)p->tp, TINFER_TP_MAX);
    if (p->n_gpus < 0 || (p->n_gpus > 0 && !p->gpus))
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                              "tinfer_model_load: n_gpus %d with gpus %s", (int)p->n_gpus,
                              p->gpus ? "set" : "NULL");
    const int32_t ranks = p->tp >= 1 ? p->tp : 1;
    if (p->n_gpus > 0) {
        if (p->backend == TINFER_BACKEND_CPU)
            return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                                  "tinfer_model_load: gpus names CUDA devices, but the backend "
                                  "asked for is the CPU");
        if (p->n_gpus != ranks)
            return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                                  "tinfer_model_load: %d GPUs listed for %d rank%s (one per "
                                  "rank)",
                                  (int)p->n_gpus, (int)ranks, ranks > 1 ? "s" : "");
        for (int32_t i = 0; i < p->n_gpus; i++) {
            if (p->gpus[i] < 0)
                return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                                      "tinfer_model_load: GPU id %d", (int)p->gpus[i]);
            for (int32_t j = 0; j < i; j++)
                if (p->gpus[j] == p->gpus[i])
                    return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG,
                                          "tinfer_model_load: GPU %d listed twice",
                                          (int)p->gpus[i]);
        }
        if (p->backend == TINFER_BACKEND_AUTO) p->backend = TINFER_BACKEND_CUDA;
    }
#ifndef TINFER_HAVE_NCCL
    if (p->tp >= 1 && p->backend == TINFER_BACKEND_CUDA) return tp_needs_nccl(p->tp);
#endif
    return TINFER_OK;
}

#ifdef TINFER_HAVE_NCCL
/* The device of each of the p->tp ranks: the list given, else 0, 1, ... */
static void tp_devices(const tinfer_model_params *p, int32_t *devs) {
    for (int32_t r = 0; r < p->tp; r++)
        devs[r] = p->n_gpus > 0 ? p->gpus[r] : r;
}
#endif

tinfer_status tinfer_model_load(const char *dir, const tinfer_model_params *params,
                                tinfer_model **out) {
    if (out) *out = NULL;
    if (!dir || !out)
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG, "tinfer_model_load: NULL %s",
                              !dir ? "dir" : "out");
    tinfer_model_params p = params ? *params : tinfer_model_default_params();
    tinfer_status rc = check_parallel(&p);
    if (rc != TINFER_OK) return rc;
#ifdef TINFER_HAVE_NCCL
    if (p.tp >= 1 && p.backend == TINFER_BACKEND_CUDA) { /* the GPUs, before the weights load */
        int32_t devs[TINFER_TP_MAX];
        tp_devices(&p, devs);
        tinfer_err e;
        if ((rc = tinfer_tp_nccl_devices_ok(p.tp, devs, &e)) != TINFER_OK)
            return tinfer_err_copy(NULL, &e, rc);
    }
#endif
#ifndef TINFER_HAVE_CUDA
    if (p.backend == TINFER_BACKEND_CUDA)
        return tinfer_err_set(NULL, TINFER_ERR_NO_DEVICE,
                              "this build has no CUDA backend (configure with -DTINFER_CUDA=ON)");
#endif
    if (p.backend != TINFER_BACKEND_AUTO && p.backend != TINFER_BACKEND_CPU &&
        p.backend != TINFER_BACKEND_CUDA)
        return tinfer_err_set(NULL, TINFER_ERR_INVALID_ARG, "tinfer_model_load: unknown backend %d",
                              (int)p.backend);

    tinfer_model *m = calloc(1, sizeof *m);
    if (!m) return tinfer_err_set(NULL, TINFER_ERR_OUT_OF_MEMORY, "out of memory (model)");
    tinfer_err sub;
    sub.msg[0] = '\0';
    tinfer_tensor_source src = {0};
    if ((rc = tinfer_config_load(dir, &m->cfg, &sub)) != TINFER_OK) goto fail_sub;
    if (p.random_weights) { /* config.json only; a tokenizer when there is one */
        if ((rc = tinfer_random_weights_init(&m->cfg, p.random_seed, &m->rw, &sub)) != TINFER_OK)
            goto fail_sub;
        src = tinfer_random_weights_source(m->rw);
        char path[4096];
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
        FILE *f = fopen(path, "rb");
        if (f) {
            fclose(f);
            if ((rc = tinfer_tokenizer_load(dir, &m->tok, &sub)) != TINFER_OK) goto fail_sub;
        }
    } else {
        if ((rc = tinfer_st_open_dir(dir, &m->st, &sub)) != TINFER_OK ||
            (rc = tinfer_tokenizer_load(dir, &m->tok, &sub)) != TINFER_OK)
            goto fail_sub;
        src = (tinfer_tensor_source){m->st, st_source_get, st_source_has};
    }
    if ((rc = tinfer_llama_load(&m->cfg, &src, &m->w, &sub)) != TINFER_OK) goto fail_sub;
    /* Token ids the tokenizer can produce index the embedding table. */
    int32_t tok_vocab = m->tok ? tinfer_tokenizer_n_vocab(m->tok) : 0;
    if (tok_vocab > m->cfg.n_vocab) {
        rc = tinfer_err_set(NULL, TINFER_ERR_FORMAT,
                            "%s/tokenizer.json: %d tokens but config.json vocab_size is %d", dir,
                            (int)tok_vocab, (int)m->cfg.n_vocab);
        tinfer_model_free(m);
        return rc;
    }

    m->n_threads = p.n_threads > 0 ? p.n_threads : omp_get_num_procs();
    omp_set_num_threads(m->n_threads);
    rc = TINFER_ERR_NO_DEVICE;
#ifdef TINFER_HAVE_CUDA
    const int32_t dev0 = p.n_gpus > 0 ? p.gpus[0] : 0;
    if (p.backend != TINFER_BACKEND_CPU && p.tp >= 1) {
        /* AUTO: the CPU shards only where no usable GPU would be taken */
        tinfer_device_info dev;
        rc = tinfer_device_probe(dev0, &dev, &sub);
        if (rc == TINFER_OK || p.backend == TINFER_BACKEND_CUDA ||
            (rc != TINFER_ERR_NO_DEVICE && rc != TINFER_ERR_UNSUPPORTED)) {
#ifdef TINFER_HAVE_NCCL
            int32_t devs[TINFER_TP_MAX];
            tp_devices(&p, devs);
            const tinfer_tp_allreduce *ar = NULL;
            if (rc == TINFER_OK) rc = tinfer_tp_nccl_create(p.tp, devs, m->cfg.n_embd, &ar, &sub);
            if (rc == TINFER_OK) {
                m->backend = TINFER_BACKEND_CUDA;
                m->ops = &tinfer_backend_tp;
                rc = tinfer_tp_model_init(&tinfer_backend_cuda, p.tp, ar, &m->cfg, &m->w,
                                          m->n_threads, &m->be_state, &m->dev_w, &sub);
            }
            if (rc != TINFER_OK) {
                tinfer_err_copy(NULL, &sub, rc);
                m->be_state = NULL;
                tinfer_model_free(m);
                return rc;
            }
#else
            if (rc == TINFER_OK) rc = tp_needs_nccl(p.tp);
            else tinfer_err_copy(NULL, &sub, rc);
            tinfer_model_free(m);
            return rc;
#endif
        }
    } else if (p.backend != TINFER_BACKEND_CPU) {
        m->backend = TINFER_BACKEND_CUDA;
        m->ops = &tinfer_backend_cuda;
        rc = m->ops->model_init(&m->cfg, &m->w, m->n_threads, dev0, &m->be_state, &m->dev_w,
                                &sub);
        /* AUTO: no usable GPU (none, or none this binary has code for) means the CPU */
        if (rc != TINFER_OK && (p.backend == TINFER_BACKEND_CUDA ||
                                (rc != TINFER_ERR_NO_DEVICE && rc != TINFER_ERR_UNSUPPORTED))) {
            tinfer_err_copy(NULL, &sub, rc);
            tinfer_model_free(m);
            return rc;
        }
    }
#endif
    if (rc != TINFER_OK) {
        m->backend = TINFER_BACKEND_CPU;
        m->ops = p.tp >= 1 ? &tinfer_backend_tp : &tinfer_backend_cpu;
        m->be_state = NULL;
        if (p.tp >= 1)
            rc = tinfer_tp_model_init(&tinfer_backend_cpu, p.tp, NULL, &m->cfg, &m->w,
                                      m->n_threads, &m->be_state, &m->dev_w, &sub);
        else
            rc = m->ops->model_init(&m->cfg, &m->w, m->n_threads, 0, &m->be_state, &m->dev_w, &sub);
        if (rc != TINFER_OK) {
            tinfer_err_copy(NULL, &sub, rc);
            tinfer_model_free(m);
            return rc;
        }
    }
    if (m->rw)
        m->n_params = tinfer_random_weights_count(m->rw);
    else
        for (int64_t i = 0; i < tinfer_st_count(m->st); i++) {
            /* a Q8_0 matrix's F16 block scales (X.weight_scale) are not parameters */
            const tinfer_tensor_view *t = tinfer_st_at(m->st, i);
            const size_t len = strlen(t->name);
            if (t->dtype == TINFER_DTYPE_F16 && len > 13 &&
                !strcmp(t->name + len - 13, ".weight_scale"))
                continue;
            m->n_params += t->n_elems;
        }
    snprintf(m->desc, sizeof m->desc, "%s %d layers, hidden %d, %d/%d heads, %s, %s",
             !strncmp(m->cfg.architecture, "Qwen2", 5)     ? "qwen2"
             : !strncmp(m->cfg.architecture, "Mistral", 7) ? "mistral"
                                                           : "llama",
             (int)m->cfg.n_layer, (int)m->cfg.n_embd, (int)m->cfg.n_head, (int)m->cfg.n_head_kv,
             m->w.fused_dtype == TINFER_DTYPE_BF16   ? "bf16"
             : m->w.fused_dtype == TINFER_DTYPE_Q8_0 ? "q8_0"
                                                     : "f32",
             m->ops->model_desc(m->be_state));
    if (m->rw) strncat(m->desc, ", random weights", sizeof m->desc - strlen(m->desc) - 1);
    *out = m;
    return TINFER_OK;
fail_sub:
    tinfer_err_copy(NULL, &sub, rc);
    tinfer_model_free(m);
    return rc;
}

const char *tinfer_model_last_error(const tinfer_model *m) { return m ? m->err.msg : ""; }

int32_t tinfer_model_n_vocab(const tinfer_model *m) { return m ? m->cfg.n_vocab : 0; }
int32_t tinfer_model_n_ctx_train(const tinfer_model *m) { return m ? m->cfg.n_ctx_train : 0; }
int32_t tinfer_model_n_layer(const tinfer_model *m) { return m ? m->cfg.n_layer : 0; }
int32_t tinfer_model_n_embd(const tinfer_model *m) { return m ? m->cfg.n_embd : 0; }
int64_t tinfer_model_n_params(const tinfer_model *m) { return m ? m->n_params : 0; }
tinfer_backend tinfer_model_backend(const tinfer_model *m) {
    return m ? m->backend : TINFER_BACKEND_AUTO;
}
const char *tinfer_model_desc(const tinfer_model *m) { return m ? m->desc : ""; }
int64_t tinfer_model_weight_bytes(const tinfer_model *m) {
    return m ? m->ops->weight_bytes(m->be_state) : 0;
}
const char *tinfer_model_route_desc(const tinfer_model *m, int32_t n_tokens, int32_t n_logits,
                                    char *buf, size_t cap) {
    if (!buf || cap == 0) return buf;
    buf[0] = '\0';
    if (m && n_tokens >= 1 && n_logits >= 1 && n_logits <= n_tokens)
        m->ops->route_desc(m->be_state, n_tokens, n_logits, buf, cap);
    return buf;
}

tinfer_token tinfer_token_bos(const tinfer_model *m) { return m ? m->cfg.bos_id : -1; }
int32_t tinfer_token_eos_count(const tinfer_model *m) { return m ? m->cfg.n_eos : 0; }
tinfer_token tinfer_token_eos(const tinfer_model *m, int32_t i) {
    return m && i >= 0 && i < m->cfg.n_eos ? m->cfg.eos_ids[i] : -1;
}
bool tinfer_token_is_eog(const tinfer_model *m, tinfer_token t) {
    if (!m) return false;
    for (int32_t i = 0; i < m->cfg.n_eos; i++)
        if (m->cfg.eos_ids[i] == t) return true;
    return false;
}

/* HF semantics (GenerationConfig): without do_sample=true decoding is greedy whatever the
 * temperature says; with it, HF's temperature default is 1.0. Absent keys keep the caller's
 * values. */
void tinfer_model_generation_defaults(const tinfer_model *m, tinfer_sampler_params *p) {
    if (!m || !p) return;
    const tinfer_llama_config *c = &m->cfg;
    if (c->has_gen_top_k) p->top_k = c->gen_top_k;
    if (c->has_gen_top_p) p->top_p = c->gen_top_p;
    if (c->has_gen_min_p) p->min_p = c->gen_min_p;
    if (c->has_gen_repeat_penalty) p->repeat_penalty = c->gen_repeat_penalty;
    if (!c->gen_do_sample)
        p->temperature = 0.0f;
    else
        p->temperature = c->has_gen_temperature ? c->gen_temperature : 1.0f;
}

const tinfer_tokenizer *tinfer_model_tokenizer(const tinfer_model *m) { return m ? m->tok : NULL; }
const tinfer_llama_config *tinfer_model_config(const tinfer_model *m) { return m ? &m->cfg : NULL; }
tinfer_err *tinfer_model_err_slot(const tinfer_model *m) {
    return m ? (tinfer_err *)&m->err : NULL;
}
const struct tinfer_llama_weights *tinfer_model_weights(const tinfer_model *m) {
    return m ? m->dev_w : NULL;
}
void *tinfer_model_backend_state(const tinfer_model *m) { return m ? m->be_state : NULL; }
const struct tinfer_backend_ops *tinfer_model_backend_ops(const tinfer_model *m) {
    return m ? m->ops : NULL;
}
int32_t tinfer_model_n_threads(const tinfer_model *m) { return m ? m->n_threads : 1; }

/*
 * config.h — config.json (+ generation_config.json) for the Llama family.
 *
 * Accepted architectures: LlamaForCausalLM (Llama 2/3, SmolLM/SmolLM2), MistralForCausalLM
 * without sliding window, Qwen2ForCausalLM (q/k/v biases). Keys read: hidden_size,
 * num_hidden_layers, num_attention_heads, num_key_value_heads (default = heads), head_dim
 * (default hidden/heads), intermediate_size, vocab_size, rope_theta (default 10000),
 * rms_norm_eps (default 1e-6), tie_word_embeddings (default false), max_position_embeddings,
 * bos_token_id, eos_token_id (int or list), attention_bias / the Qwen2 architecture (biases),
 * hidden_act (must be silu), rope_scaling (null or absent; others unsupported).
 * Validation: positive dimensions, heads % kv_heads == 0, head_dim even, ranges sane; errors name
 * the file and the JSON key.
 */
#ifndef TINFER_CONFIG_H
#define TINFER_CONFIG_H

#include "error.h"

#include <stdbool.h>
#include <stdint.h>

#define TINFER_MAX_EOS 8

typedef struct tinfer_llama_config {
    char architecture[64];
    int32_t n_embd;       /* hidden_size */
    int32_t n_layer;      /* num_hidden_layers */
    int32_t n_head;       /* num_attention_heads */
    int32_t n_head_kv;    /* num_key_value_heads */
    int32_t head_dim;     /* head_dim or n_embd / n_head */
    int32_t n_ff;         /* intermediate_size */
    int32_t n_vocab;      /* vocab_size */
    int32_t n_ctx_train;  /* max_position_embeddings */
    float rope_theta;
    float rms_norm_eps;
    bool tie_word_embeddings;
    bool qkv_bias;        /* Qwen2 / attention_bias */
    int32_t bos_id;       /* -1 if none */
    int32_t n_eos;
    int32_t eos_ids[TINFER_MAX_EOS];
    /* generation_config.json (has_* false when absent) */
    bool has_gen_temperature, has_gen_top_k, has_gen_top_p, has_gen_repeat_penalty, has_gen_min_p;
    bool gen_do_sample;
    float gen_temperature, gen_top_p, gen_repeat_penalty, gen_min_p;
    int32_t gen_top_k;
} tinfer_llama_config;

/* Reads dir/config.json and, when present, dir/generation_config.json (whose eos_token_id and
 * bos_token_id override config.json's). */
tinfer_status tinfer_config_load(const char *dir, tinfer_llama_config *cfg, tinfer_err *err);
/* Parses config.json text (label names it in errors). Does not read generation_config. */
tinfer_status tinfer_config_parse(const char *json, size_t len, const char *label,
                                  tinfer_llama_config *cfg, tinfer_err *err);

#endif

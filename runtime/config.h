/*
 * config.h — config.json (+ generation_config.json) for the Llama family.
 *
 * Accepted architectures: LlamaForCausalLM (Llama 2/3, SmolLM/SmolLM2), MistralForCausalLM
 * without sliding window, Qwen2ForCausalLM (q/k/v biases). Keys read: hidden_size,
 * num_hidden_layers, num_attention_heads, num_key_value_heads (default = heads), head_dim
 * (default hidden/heads), intermediate_size, vocab_size, rope_theta (default 10000),
 * rms_norm_eps (default 1e-6), tie_word_embeddings (default false), max_position_embeddings,
 * bos_token_id, eos_token_id (int or list), attention_bias / the Qwen2 architecture (biases),
 * hidden_act (must be silu), rope_scaling (null or absent; others unsupported),
 * quantization_config (absent, or quant_method "q8_0" with group_size 32: ARCHITECTURE.md).
 * Validation: positive dimensions, heads % kv_heads == 0, head_dim even, ranges sane; errors name
 * the file and the JSON key.
 */
#ifndef TINFER_CONFIG_H
#define TINFER_CONFIG_H

#include "base/error.h"
#include "models/llama_config.h"

#include <stddef.h>


/* Reads dir/config.json and, when present, dir/generation_config.json (whose eos_token_id and
 * bos_token_id override config.json's). */
tinfer_status tinfer_config_load(const char *dir, tinfer_llama_config *cfg, tinfer_err *err);
/* Parses config.json text (label names it in errors). Does not read generation_config. */
tinfer_status tinfer_config_parse(const char *json, size_t len, const char *label,
                                  tinfer_llama_config *cfg, tinfer_err *err);

#endif

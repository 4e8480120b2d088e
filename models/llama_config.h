/*
 * llama_config.h — the hyperparameters of a Llama-family model (what runtime/config.c reads
 * from config.json and generation_config.json; the keys are listed there).
 */
#ifndef TINFER_MODELS_LLAMA_CONFIG_H
#define TINFER_MODELS_LLAMA_CONFIG_H

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
    int32_t n_vocab;      /* vocab_size (a tensor-parallel rank: the rows of its LM-head slice) */
    int32_t n_embd_rows;  /* rows of the embedding table when not n_vocab (a tensor-parallel
                           * rank: the whole vocabulary); 0: n_vocab */
    int32_t n_ctx_train;  /* max_position_embeddings */
    float rope_theta;
    float rms_norm_eps;
    bool tie_word_embeddings;
    bool qkv_bias;        /* Qwen2 / attention_bias */
    bool q8_0;            /* quantization_config.quant_method "q8_0": I8 matrices are Q8_0 */
    int32_t bos_id;       /* -1 if none */
    int32_t n_eos;
    int32_t eos_ids[TINFER_MAX_EOS];
    /* generation_config.json (has_* false when absent) */
    bool has_gen_temperature, has_gen_top_k, has_gen_top_p, has_gen_repeat_penalty, has_gen_min_p;
    bool gen_do_sample;
    float gen_temperature, gen_top_p, gen_repeat_penalty, gen_min_p;
    int32_t gen_top_k;
} tinfer_llama_config;

#endif

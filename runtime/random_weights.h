/*
 * random_weights.h — a tensor source (models/llama.h) that makes weights up instead of reading
 * them: random BF16 values of the config's shapes, for measuring speed without the weights
 * (tinfer_model_params.random_weights; vLLM's load_format "dummy").
 */
#ifndef TINFER_RANDOM_WEIGHTS_H
#define TINFER_RANDOM_WEIGHTS_H

#include "models/llama.h"

typedef struct tinfer_random_weights tinfer_random_weights;

/* A source whose tensors are generated on request, deterministically from (seed, tensor name,
 * element index). Biases exist when cfg->qkv_bias. */
tinfer_status tinfer_random_weights_init(const tinfer_llama_config *cfg, uint64_t seed,
                                         tinfer_random_weights **out, tinfer_err *err);
tinfer_tensor_source tinfer_random_weights_source(tinfer_random_weights *rw);
/* Elements generated so far (the model's parameter count once the weights are loaded). */
int64_t tinfer_random_weights_count(const tinfer_random_weights *rw);
/* Frees every tensor generated: after the weights are done with them. */
void tinfer_random_weights_free(tinfer_random_weights *rw);

#endif

/*
 * model_internal.h — what runtime/ files other than model.c may know of a tinfer_model.
 */
#ifndef TINFER_MODEL_INTERNAL_H
#define TINFER_MODEL_INTERNAL_H

#include "base/error.h"
#include "config.h"
#include "tokenizer.h"

const tinfer_tokenizer *tinfer_model_tokenizer(const tinfer_model *model);
const tinfer_llama_config *tinfer_model_config(const tinfer_model *model);
/* The model's error slot. Mutable through a const handle, like errno: reporting an error from
 * a const query (tokenize) is not a change of the model. */
tinfer_err *tinfer_model_err_slot(const tinfer_model *model);

/* For context.c: the weights (struct tinfer_llama_weights, models/llama.h), the compute
 * backend table (models/backend.h) and the resolved CPU thread count (>= 1). */
struct tinfer_llama_weights;
struct tinfer_backend_ops;
const struct tinfer_llama_weights *tinfer_model_weights(const tinfer_model *model);
const struct tinfer_backend_ops *tinfer_model_backend_ops(const tinfer_model *model);
void *tinfer_model_backend_state(const tinfer_model *model); /* the backend's model object */
int32_t tinfer_model_n_threads(const tinfer_model *model);

/* Debug aid: the context's forward scratch (struct tinfer_llama_scratch, models/llama.h), whose
 * `profile` switch and per-op timers tests/model/perf_model.c uses. */
struct tinfer_llama_scratch;
struct tinfer_llama_scratch *tinfer_context_llama_scratch(tinfer_context *ctx);

#endif

/*
 * backend_cuda.h — what tensor parallelism over CUDA ranks (models/tp_nccl.c) asks of a CUDA
 * model and context beyond the seam of models/backend.h. Built only with CUDA.
 */
#ifndef TINFER_MODELS_BACKEND_CUDA_H
#define TINFER_MODELS_BACKEND_CUDA_H

#include "models/backend.h"

#include <stdbool.h>
#include <stdint.h>

/* The CUDA device a model of tinfer_backend_cuda lives on. */
int32_t tinfer_cuda_model_device(const void *model_state);

/* Records, after the step's ops recorded so far, a sum over the ranks of `comm` (an ncclComm_t)
 * of the first n floats of activation buffer `buf`, in place: it runs in order with the step's
 * kernels on the context's stream (and is captured with them in a decode step's graph). Needs a
 * build with NCCL (else TINFER_ERR_NO_DEVICE). */
tinfer_status tinfer_cuda_record_allreduce(void *cs, tinfer_buf buf, int64_t n, void *comm);

/* From the next step on, each step also keeps the greedy logit of each logits row (the value at
 * its argmax id; NaN for a row of only NaN), downloaded with the ids: a rank of a vocabulary-
 * split LM head compares them with the other ranks' (no logits gathered). */
tinfer_status tinfer_cuda_keep_greedy_vals(void *cs);
/* [n_out] those values after the step's logits call (NULL before keep_greedy_vals). */
const float *tinfer_cuda_greedy_vals(const void *cs);

#endif

/*
 * tp_nccl.h — tensor parallelism over CUDA ranks, one GPU each, through NCCL: the
 * tinfer_tp_allreduce that models/backend_tp.c takes for ranks of tinfer_backend_cuda. Built
 * only with NCCL (TINFER_HAVE_NCCL).
 */
#ifndef TINFER_MODELS_TP_NCCL_H
#define TINFER_MODELS_TP_NCCL_H

#include "models/backend_tp.h"

/* Rank r on device devices[r] (n_rank distinct ordinals), one NCCL communicator a rank
 * (ncclCommInitAll: one process drives every GPU). Each all-reduce is ncclAllReduce (F32, sum,
 * in place) recorded into every rank's step; a step's ranks run at once, rank 0 on the calling
 * thread and each other rank on a host thread of its own (NCCL's collectives wait for every
 * rank's, so one thread cannot run the ranks one after another). *out is the model's once
 * passed to tinfer_tp_model_init. row: the values of one token's residual row (n_embd), the size
 * its timing hook measures an all-reduce at. Errors: TINFER_ERR_NO_DEVICE naming the counts when fewer
 * GPUs are present than ranks asked for, or a device ordinal that is not there;
 * TINFER_ERR_CUDA with NCCL's message when its set-up fails. */
tinfer_status tinfer_tp_nccl_create(int32_t n_rank, const int32_t *devices, int64_t row,
                                    const tinfer_tp_allreduce **out, tinfer_err *err);

/* Those device checks alone (the same errors), for a caller that wants them before loading
 * weights. */
tinfer_status tinfer_tp_nccl_devices_ok(int32_t n_rank, const int32_t *devices,
                                        tinfer_err *err);

#endif

/*
 * autotune.h — the tuning cache of the FP32 ladder (rung 8's tile sizes, and the overall
 * winner used by tinfer_sgemm_auto), searched on the running GPU.
 *
 * Entries per class: the overall winner (used by tinfer_sgemm_auto), the best rung-8 tile
 * (used by rung 8) and the best rung-10 tile (used by rungs 10 and 11 called directly).
 * Key: GPU name (cudaDeviceProp.name) + shape class ("nt.m12.n12.k12.v": layout, the log2
 * buckets ceil(log2 M|N|K), v = 16-byte aligned operands or s = not). File: JSON text, one
 * entry per line, at ${XDG_CACHE_HOME:-$HOME/.cache}/tinfer/sgemm-tune.json unless a path is
 * given (tinfer_sgemm_tune_default_path reads those two environment variables; nothing else
 * in the library does). Regenerate with `tinfer-bench-gemm --tune [--tune-file PATH]`.
 * The table is process-global: load it once before launching GEMMs from several threads.
 */
#ifndef TINFER_SGEMM_AUTOTUNE_H
#define TINFER_SGEMM_AUTOTUNE_H

#include "gemm/sgemm.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the default cache path into buf; TINFER_ERR_INVALID_ARG when neither XDG_CACHE_HOME
 * nor HOME is set or buf is too small. */
tinfer_status tinfer_sgemm_tune_default_path(char *buf, size_t n, tinfer_err *err);

/* Loads entries (all GPUs) from path (NULL = default path), replacing the in-memory table.
 * TINFER_ERR_IO when the file cannot be opened; TINFER_ERR_FORMAT names the bad line. */
tinfer_status tinfer_sgemm_tune_load(const char *path, tinfer_err *err);

/* Progress lines from the tuner (the library itself never prints). */
typedef void (*tinfer_sgemm_tune_log_fn)(void *ctx, const char *line);

/* Searches, for each shape (M,N,K) given and each layout (NN, NT): the rung-8 tile
 * configurations and the rung-10/11 configurations that the resource model admits on the
 * current GPU, timing each (median of several runs, CUDA events on `stream`, synchronising
 * that stream). Keeps the winners in the in-memory table (replacing entries of the same GPU
 * and class) and writes the whole table to path (NULL = default path; its directory is
 * created). shapes NULL = the built-in list: squares 256..8192. */
tinfer_status tinfer_sgemm_tune(const int64_t (*shapes)[3], int n_shapes, const char *path,
                                cudaStream_t stream, tinfer_sgemm_tune_log_fn log, void *log_ctx,
                                tinfer_err *err);

/* Entries in the in-memory table (all GPUs). */
int tinfer_sgemm_tune_count(void);

#ifdef __cplusplus
}
#endif
#endif

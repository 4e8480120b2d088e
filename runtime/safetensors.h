/*
 * safetensors.h — the safetensors loader (own parser; cJSON for the header).
 *
 * File layout: u64 little-endian header length N, N bytes of JSON
 *   {"__metadata__": {...}, "name": {"dtype": "BF16", "shape": [..], "data_offsets": [b, e]}, ...}
 * then the data section. Offsets are relative to the data section. Every file is mmap'd
 * read-only; tensors point into the mapping (zero copy).
 *
 * Validation (each failure is TINFER_ERR_FORMAT with a message naming the file and tensor/key):
 * header length vs file size (and an absolute cap), JSON well-formed and an object, known dtype
 * (F32, F16, BF16, I8 — the values of a Q8_0 weight, base/q8_0.h; others ->
 * TINFER_ERR_UNSUPPORTED naming the dtype), shape entries
 * non-negative integers, product(shape)*dtype_size == e-b (overflow-checked), 0 <= b <= e <=
 * data size, tensors sorted by offset neither overlap nor leave gaps and cover the data section.
 *
 * Integers in the header must be exact (<= 2^53, the limit of cJSON's double); the header is at
 * most 100 MB (the cap of huggingface/safetensors); dtype and data_offsets beyond these are
 * rejected. __metadata__, when present, must be an object of strings and is otherwise ignored.
 *
 * A model directory holds model.safetensors, or model.safetensors.index.json whose "weight_map"
 * maps each tensor name to a shard file in the same directory (plain file names only: no '/' or
 * ".."); every listed tensor must be in the shard named, and no tensor may be in two shards.
 *
 * Alignment: `data` is only as aligned as the writer made the header (the reference writer pads
 * it to 8 bytes, nothing enforces that): read elements with memcpy or byte loads.
 * tinfer_st_at enumerates tensors in name order (strcmp), which tinfer_st_find bsearches.
 * A set is immutable after opening: concurrent lookups from several threads are safe.
 */
#ifndef TINFER_SAFETENSORS_H
#define TINFER_SAFETENSORS_H

#include "base/dtype.h"
#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

#define TINFER_MAX_DIMS 8

typedef struct tinfer_tensor_view {
    const char *name;
    tinfer_dtype dtype;
    int32_t n_dims;
    int64_t shape[TINFER_MAX_DIMS]; /* row-major: shape[n_dims-1] is contiguous */
    int64_t n_elems;
    const void *data; /* inside the read-only mapping */
    size_t n_bytes;
    const char *file; /* path of the file that holds it */
} tinfer_tensor_view;

typedef struct tinfer_st_set tinfer_st_set; /* all shards of one model */

/* Opens one .safetensors file (path) as a set of one shard. */
tinfer_status tinfer_st_open_file(const char *path, tinfer_st_set **out, tinfer_err *err);
/* Opens a model directory: model.safetensors, else model.safetensors.index.json + shards. */
tinfer_status tinfer_st_open_dir(const char *dir, tinfer_st_set **out, tinfer_err *err);
/* Parses an in-memory safetensors image (no mmap; used by the fuzzer). buf must outlive set. */
tinfer_status tinfer_st_open_memory(const void *buf, size_t len, const char *label,
                                    tinfer_st_set **out, tinfer_err *err);
void tinfer_st_close(tinfer_st_set *set);

int64_t tinfer_st_count(const tinfer_st_set *set);
const tinfer_tensor_view *tinfer_st_at(const tinfer_st_set *set, int64_t i);
/* NULL if absent. */
const tinfer_tensor_view *tinfer_st_find(const tinfer_st_set *set, const char *name);

/* Finds `name` and checks its shape equals shape[0..n_dims); errors name the tensor, the file,
 * the expected and the actual shape (TINFER_ERR_FORMAT; missing -> TINFER_ERR_FORMAT
 * "missing tensor"). */
tinfer_status tinfer_st_get(const tinfer_st_set *set, const char *name, int32_t n_dims,
                            const int64_t *shape, const tinfer_tensor_view **out, tinfer_err *err);

#endif

/*
 * gguf.h — a read-only GGUF (v2/v3, little-endian) parser for the converter.
 *
 * The file is mmap'd; strings and tensor data point into the mapping (no copies). Layout
 * (ggml-org/ggml docs/gguf.md): u32 magic "GGUF", u32 version, u64 tensor_count,
 * u64 kv_count, kv_count key/values, tensor_count tensor infos, padding to general.alignment
 * (default 32), then the data section. ne[0] is the contiguous axis.
 *
 * Every count, length and offset in the file is treated as hostile: each read is bounds-checked
 * against the mapping, counts are capped by the bytes that remain (each element needs at least
 * its minimum encoded size), sizes are overflow-checked, arrays nest at most GGUF_MAX_DEPTH deep,
 * tensors have 1..4 dims, a known ggml type, a whole number of blocks per row and an aligned
 * offset whose data lies inside the file. Errors name the file and the key or tensor at fault.
 */
#ifndef TINFER_CONVERT_GGUF_H
#define TINFER_CONVERT_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* GGUF value types (ggml-org/ggml docs/gguf.md, enum gguf_type). */
enum {
    GGUF_T_U8 = 0, GGUF_T_I8 = 1, GGUF_T_U16 = 2, GGUF_T_I16 = 3, GGUF_T_U32 = 4, GGUF_T_I32 = 5,
    GGUF_T_F32 = 6, GGUF_T_BOOL = 7, GGUF_T_STRING = 8, GGUF_T_ARRAY = 9, GGUF_T_U64 = 10,
    GGUF_T_I64 = 11, GGUF_T_F64 = 12,
};

/* ggml tensor types used here (ggml.h enum ggml_type). */
enum {
    GGML_T_F32 = 0, GGML_T_F16 = 1, GGML_T_Q4_0 = 2, GGML_T_Q4_1 = 3, GGML_T_Q5_0 = 6,
    GGML_T_Q5_1 = 7, GGML_T_Q8_0 = 8, GGML_T_BF16 = 30,
};

#define GGUF_MAX_DIMS 4
#define GGUF_MAX_DEPTH 8          /* nested arrays deeper than this are rejected (stack safety) */
#define GGUF_DEFAULT_ALIGNMENT 32 /* ggml-org/ggml docs/gguf.md: general.alignment default */

typedef struct gguf_str {
    const char *ptr; /* into the mapping; NOT NUL-terminated */
    uint64_t len;
} gguf_str;

typedef struct gguf_value gguf_value;
struct gguf_value {
    uint32_t type; /* GGUF_T_* */
    union {
        uint64_t u64; /* every unsigned integer type, widened */
        int64_t i64;  /* every signed integer type, widened */
        double f64;   /* F32 and F64 */
        bool b;
        gguf_str str;
        struct {
            uint32_t type;     /* element type */
            uint64_t n;        /* element count */
            const uint8_t *raw; /* fixed-size elements: n * size bytes in the mapping */
            gguf_value *items;  /* STRING / ARRAY elements: n parsed values (owned) */
        } arr;
    };
};

typedef struct gguf_kv {
    gguf_str key;
    gguf_value val;
} gguf_kv;

typedef struct gguf_tensor {
    char *name;       /* owned, NUL-terminated copy */
    uint32_t n_dims;  /* 1..4 */
    int64_t ne[GGUF_MAX_DIMS]; /* ne[0] contiguous; unused dims = 1 */
    uint32_t type;    /* ggml type */
    uint64_t offset;  /* relative to the data section */
    size_t nbytes;
    const uint8_t *data; /* into the mapping */
} gguf_tensor;

typedef struct gguf_file {
    char *path;
    uint8_t *map;
    size_t size;
    bool owns_map; /* false for gguf_open_mem */
    uint32_t version;
    uint64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    uint64_t alignment;
    size_t data_start;
} gguf_file;

/* Opens and validates path. On error returns a status and a message in err (and the thread-local
 * slot); *out is NULL. */
tinfer_status gguf_open(const char *path, gguf_file **out, tinfer_err *err);
/* Parses a GGUF held in memory (for tests and fuzzing); data must outlive the gguf_file. name
 * stands for the path in messages. */
tinfer_status gguf_open_mem(const void *data, size_t size, const char *name, gguf_file **out,
                            tinfer_err *err);
void gguf_close(gguf_file *f);

/* ggml type properties; false for a type this parser does not know. */
bool gguf_type_info(uint32_t type, int64_t *block_elems, size_t *block_bytes, const char **name);

const gguf_value *gguf_find(const gguf_file *f, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

/* Typed getters. A missing key returns TINFER_ERR_FORMAT unless a default applies: the *_or
 * variants return def when the key is absent. Any integer type is accepted and range-checked;
 * floats accept F32/F64 and integers. */
tinfer_status gguf_get_u64(const gguf_file *f, const char *key, uint64_t *v, tinfer_err *err);
tinfer_status gguf_get_u64_or(const gguf_file *f, const char *key, uint64_t def, uint64_t *v,
                              tinfer_err *err);
tinfer_status gguf_get_f64_or(const gguf_file *f, const char *key, double def, double *v,
                              tinfer_err *err);
tinfer_status gguf_get_bool_or(const gguf_file *f, const char *key, bool def, bool *v,
                               tinfer_err *err);
/* Returns a NUL-terminated malloc'd copy (caller frees); NULL value + OK when absent and
 * !required. Strings containing NUL bytes are rejected. */
tinfer_status gguf_get_str(const gguf_file *f, const char *key, bool required, char **v,
                           tinfer_err *err);
/* Array of elements of type elem_type (GGUF_T_*); a missing key is an error. */
tinfer_status gguf_get_arr(const gguf_file *f, const char *key, uint32_t elem_type,
                           const gguf_value **arr, tinfer_err *err);
/* Integer element i of a fixed-size integer array (any width), widened to int64. */
int64_t gguf_arr_int(const gguf_value *arr, uint64_t i);

#endif

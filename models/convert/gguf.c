/*
 * gguf.c — GGUF parser (see gguf.h for the format and the validation rules).
 *
 * Parsing is a single forward pass with a cursor over the mmap'd file. Every read goes through
 * rd_need(), which checks the remaining bytes first, so no read can leave the mapping. Counts read
 * from the file are compared with remaining / (minimum encoded size of one element) before any
 * allocation, so a hostile count cannot make us allocate more than a small multiple of the file.
 */
#define _POSIX_C_SOURCE 200809L
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader assumes a little-endian host (GGUF files are little-endian)"
#endif

typedef struct rd {
    const uint8_t *p;
    size_t pos, size;
    const char *path;
    tinfer_err *err;
    char ctx[160]; /* what is being parsed, for error text ("key 'x'", "tensor 'y'") */
} rd;


static tinfer_status rd_fail(rd *r, const char *what) {
    return tinfer_err_set(r->err, TINFER_ERR_FORMAT, "%s: %s%s%s (at byte %zu of %zu)", r->path,
                          r->ctx, r->ctx[0] ? ": " : "", what, r->pos, r->size);
}

static bool rd_need(const rd *r, uint64_t n) { return n <= r->size - r->pos; }

static tinfer_status rd_u32(rd *r, uint32_t *v, const char *what) {
    *v = 0;
    if (!rd_need(r, 4)) return rd_fail(r, what);
    memcpy(v, r->p + r->pos, 4);
    r->pos += 4;
    return TINFER_OK;
}

static tinfer_status rd_u64(rd *r, uint64_t *v, const char *what) {
    *v = 0;
    if (!rd_need(r, 8)) return rd_fail(r, what);
    memcpy(v, r->p + r->pos, 8);
    r->pos += 8;
    return TINFER_OK;
}

static tinfer_status rd_str(rd *r, gguf_str *s) {
    uint64_t len;
    tinfer_status st = rd_u64(r, &len, "truncated string length");
    if (st) return st;
    if (!rd_need(r, len)) {
        char m[96];
        snprintf(m, sizeof m, "string length %llu runs past end of file",
                 (unsigned long long)len);
        return rd_fail(r, m);
    }
    s->ptr = (const char *)r->p + r->pos;
    s->len = len;
    r->pos += (size_t)len;
    return TINFER_OK;
}

/* Encoded size of a fixed-size value type; 0 for STRING/ARRAY/unknown. */
static size_t fixed_size(uint32_t t) {
    switch (t) {
    case GGUF_T_U8: case GGUF_T_I8: case GGUF_T_BOOL: return 1;
    case GGUF_T_U16: case GGUF_T_I16: return 2;
    case GGUF_T_U32: case GGUF_T_I32: case GGUF_T_F32: return 4;
    case GGUF_T_U64: case GGUF_T_I64: case GGUF_T_F64: return 8;
    default: return 0;
    }
}

static void value_free(gguf_value *v) {
    if (v->type != GGUF_T_ARRAY || !v->arr.items) return;
    for (uint64_t i = 0; i < v->arr.n; i++) value_free(&v->arr.items[i]);
    free(v->arr.items);
    v->arr.items = NULL;
}

static void decode_fixed(uint32_t t, const uint8_t *p, gguf_value *v) {
    v->type = t;
    switch (t) {
    case GGUF_T_U8: v->u64 = p[0]; break;
    case GGUF_T_I8: v->i64 = (int8_t)p[0]; break;
    case GGUF_T_BOOL: v->b = p[0] != 0; break;
    case GGUF_T_U16: { uint16_t x; memcpy(&x, p, 2); v->u64 = x; } break;
    case GGUF_T_I16: { int16_t x; memcpy(&x, p, 2); v->i64 = x; } break;
    case GGUF_T_U32: { uint32_t x; memcpy(&x, p, 4); v->u64 = x; } break;
    case GGUF_T_I32: { int32_t x; memcpy(&x, p, 4); v->i64 = x; } break;
    case GGUF_T_F32: { float x; memcpy(&x, p, 4); v->f64 = x; } break;
    case GGUF_T_U64: memcpy(&v->u64, p, 8); break;
    case GGUF_T_I64: memcpy(&v->i64, p, 8); break;
    case GGUF_T_F64: memcpy(&v->f64, p, 8); break;
    default: break;
    }
}

static tinfer_status rd_value(rd *r, uint32_t type, gguf_value *v, int depth) {
    memset(v, 0, sizeof *v);
    v->type = type;
    size_t fs = fixed_size(type);
    if (fs) {
        if (!rd_need(r, fs)) return rd_fail(r, "truncated value");
        decode_fixed(type, r->p + r->pos, v);
        r->pos += fs;
        return TINFER_OK;
    }
    if (type == GGUF_T_STRING) return rd_str(r, &v->str);
    if (type != GGUF_T_ARRAY) {
        char m[64];
        snprintf(m, sizeof m, "unknown value type %u", type);
        return rd_fail(r, m);
    }
    if (depth >= GGUF_MAX_DEPTH) return rd_fail(r, "arrays nested too deeply");
    uint32_t et;
    uint64_t n;
    tinfer_status st = rd_u32(r, &et, "truncated array type");
    if (!st) st = rd_u64(r, &n, "truncated array count");
    if (st) return st;
    v->arr.type = et;
    size_t efs = fixed_size(et);
    /* minimum encoded size per element: fixed size, or 8 (string length) / 12 (array header) */
    size_t min_el = efs ? efs : et == GGUF_T_STRING ? 8 : et == GGUF_T_ARRAY ? 12 : 0;
    if (!min_el) {
        char m[64];
        snprintf(m, sizeof m, "unknown array element type %u", et);
        return rd_fail(r, m);
    }
    if (n > (r->size - r->pos) / min_el) {
        char m[96];
        snprintf(m, sizeof m, "array count %llu exceeds the remaining file size",
                 (unsigned long long)n);
        return rd_fail(r, m);
    }
    v->arr.n = n;
    if (efs) {
        v->arr.raw = r->p + r->pos;
        r->pos += (size_t)(n * efs);
        return TINFER_OK;
    }
    v->arr.items = calloc(n ? n : 1, sizeof *v->arr.items);
    if (!v->arr.items)
        return tinfer_err_set(r->err, TINFER_ERR_OUT_OF_MEMORY, "%s: %s: out of memory", r->path,
                              r->ctx);
    for (uint64_t i = 0; i < n; i++) {
        st = rd_value(r, et, &v->arr.items[i], depth + 1);
        if (st) return st; /* caller frees v (items zeroed past i) */
    }
    return TINFER_OK;
}

static bool str_eq(gguf_str s, const char *c) {
    size_t n = strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

/* Copies a GGUF string for a message: at most 80 chars, non-printables as '?'. */
static void str_show(gguf_str s, char *buf, size_t cap) {
    size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
    if (n > 80) n = 80;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        buf[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    buf[n] = 0;
}

bool gguf_type_info(uint32_t type, int64_t *block_elems, size_t *block_bytes, const char **name) {
    /* Block geometry from ggml's type_traits (ggml/src/ggml.c) for the types we may meet. */
    static const struct { uint32_t t; int64_t be; size_t bb; const char *name; } tab[] = {
        {0, 1, 4, "F32"},        {1, 1, 2, "F16"},        {2, 32, 18, "Q4_0"},
        {3, 32, 20, "Q4_1"},     {6, 32, 22, "Q5_0"},     {7, 32, 24, "Q5_1"},
        {8, 32, 34, "Q8_0"},     {9, 32, 36, "Q8_1"},     {10, 256, 84, "Q2_K"},
        {11, 256, 110, "Q3_K"},  {12, 256, 144, "Q4_K"},  {13, 256, 176, "Q5_K"},
        {14, 256, 210, "Q6_K"},  {15, 256, 292, "Q8_K"},  {24, 1, 1, "I8"},
        {25, 1, 2, "I16"},       {26, 1, 4, "I32"},       {27, 1, 8, "I64"},
        {28, 1, 8, "F64"},       {30, 1, 2, "BF16"},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (tab[i].t == type) {
            if (block_elems) *block_elems = tab[i].be;
            if (block_bytes) *block_bytes = tab[i].bb;
            if (name) *name = tab[i].name;
            return true;
        }
    }
    return false;
}

static tinfer_status rd_tensor(rd *r, gguf_file *f, uint64_t idx, gguf_tensor *t) {
    gguf_str name;
    snprintf(r->ctx, sizeof r->ctx, "tensor #%llu", (unsigned long long)idx);
    tinfer_status st = rd_str(r, &name);
    if (st) return st;
    if (memchr(name.ptr, 0, (size_t)name.len) || name.len == 0 || name.len > 4096)
        return rd_fail(r, "bad tensor name");
    t->name = malloc((size_t)name.len + 1);
    if (!t->name) return tinfer_err_set(r->err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", r->path);
    memcpy(t->name, name.ptr, (size_t)name.len);
    t->name[name.len] = 0;
    snprintf(r->ctx, sizeof r->ctx, "tensor '%.100s'", t->name);
    if ((st = rd_u32(r, &t->n_dims, "truncated n_dims"))) return st;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS) {
        char m[64];
        snprintf(m, sizeof m, "n_dims %u out of range 1..%d", t->n_dims, GGUF_MAX_DIMS);
        return rd_fail(r, m);
    }
    uint64_t nel = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        uint64_t ne;
        if ((st = rd_u64(r, &ne, "truncated dims"))) return st;
        if (ne == 0 || ne > (uint64_t)INT64_MAX || nel > (uint64_t)INT64_MAX / ne) {
            char m[96];
            snprintf(m, sizeof m, "bad dimension ne[%u] = %llu", d, (unsigned long long)ne);
            return rd_fail(r, m);
        }
        t->ne[d] = (int64_t)ne;
        nel *= ne;
    }
    if ((st = rd_u32(r, &t->type, "truncated type"))) return st;
    if ((st = rd_u64(r, &t->offset, "truncated offset"))) return st;
    int64_t be;
    size_t bb;
    if (!gguf_type_info(t->type, &be, &bb, NULL)) {
        char m[64];
        snprintf(m, sizeof m, "unknown ggml type %u", t->type);
        return tinfer_err_set(r->err, TINFER_ERR_UNSUPPORTED, "%s: %s: %s", r->path, r->ctx, m);
    }
    if (t->ne[0] % be != 0) {
        char m[96];
        snprintf(m, sizeof m, "row length %lld is not a multiple of the block size %lld",
                 (long long)t->ne[0], (long long)be);
        return rd_fail(r, m);
    }
    uint64_t nblocks = nel / (uint64_t)be;
    if (nblocks > SIZE_MAX / bb) return rd_fail(r, "tensor byte size overflows");
    t->nbytes = (size_t)(nblocks * bb);
    (void)f;
    return TINFER_OK;
}

static int cmp_key(const void *a, const void *b) {
    const gguf_str *x = *(const gguf_str *const *)a, *y = *(const gguf_str *const *)b;
    size_t n = x->len < y->len ? (size_t)x->len : (size_t)y->len;
    int c = memcmp(x->ptr, y->ptr, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Duplicate keys / tensor names make lookups ambiguous: reject them. Sorting keeps this
 * O(n log n) for hostile files with millions of entries. */
static tinfer_status check_duplicates(rd *r, gguf_file *f) {
    uint64_t n = f->n_kv > f->n_tensors ? f->n_kv : f->n_tensors;
    void **v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return tinfer_err_set(r->err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", r->path);
    tinfer_status st = TINFER_OK;
    for (uint64_t i = 0; i < f->n_kv; i++) v[i] = &f->kv[i].key;
    qsort(v, f->n_kv, sizeof *v, cmp_key);
    for (uint64_t i = 1; i < f->n_kv && !st; i++)
        if (cmp_key(&v[i - 1], &v[i]) == 0) {
            char k[96];
            str_show(*(gguf_str *)v[i], k, sizeof k);
            st = tinfer_err_set(r->err, TINFER_ERR_FORMAT, "%s: duplicate key '%s'", r->path, k);
        }
    for (uint64_t i = 0; i < f->n_tensors && !st; i++) v[i] = f->tensors[i].name;
    if (!st) qsort(v, f->n_tensors, sizeof *v, cmp_name);
    for (uint64_t i = 1; i < f->n_tensors && !st; i++)
        if (strcmp(v[i - 1], v[i]) == 0)
            st = tinfer_err_set(r->err, TINFER_ERR_FORMAT, "%s: duplicate tensor '%s'", r->path,
                                (char *)v[i]);
    free(v);
    return st;
}

static tinfer_status parse(rd *r, gguf_file *f) {
    tinfer_status st;
    uint32_t magic;
    r->ctx[0] = 0;
    if (r->size < 24)
        return tinfer_err_set(r->err, TINFER_ERR_FORMAT,
                              "%s: file is %zu bytes, too small for a GGUF header (24 bytes)",
                              r->path, r->size);
    rd_u32(r, &magic, "");
    if (memcmp(&magic, "GGUF", 4) != 0)
        return tinfer_err_set(r->err, TINFER_ERR_FORMAT, "%s: bad magic (not a GGUF file)", r->path);
    rd_u32(r, &f->version, "");
    if (f->version != 2 && f->version != 3) {
        /* v1 used 32-bit counts; a byte-swapped version means a big-endian file */
        return tinfer_err_set(r->err, TINFER_ERR_UNSUPPORTED,
                              "%s: GGUF version %u not supported (need 2 or 3, little-endian)",
                              r->path, f->version);
    }
    rd_u64(r, &f->n_tensors, "");
    rd_u64(r, &f->n_kv, "");
    /* minimum sizes: a kv is key length (8) + type (4) + 1-byte value; a tensor info is name
     * length (8) + n_dims (4) + one dim (8) + type (4) + offset (8). */
    if (f->n_kv > (r->size - r->pos) / 13)
        return tinfer_err_set(r->err, TINFER_ERR_FORMAT,
                              "%s: kv_count %llu is impossible for a %zu-byte file", r->path,
                              (unsigned long long)f->n_kv, r->size);
    if (f->n_tensors > (r->size - r->pos) / 32)
        return tinfer_err_set(r->err, TINFER_ERR_FORMAT,
                              "%s: tensor_count %llu is impossible for a %zu-byte file", r->path,
                              (unsigned long long)f->n_tensors, r->size);
    f->kv = calloc(f->n_kv ? f->n_kv : 1, sizeof *f->kv);
    f->tensors = calloc(f->n_tensors ? f->n_tensors : 1, sizeof *f->tensors);
    if (!f->kv || !f->tensors)
        return tinfer_err_set(r->err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", r->path);

    for (uint64_t i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        snprintf(r->ctx, sizeof r->ctx, "key #%llu", (unsigned long long)i);
        if ((st = rd_str(r, &kv->key))) return st;
        char kshow[96];
        str_show(kv->key, kshow, sizeof kshow);
        snprintf(r->ctx, sizeof r->ctx, "key '%s'", kshow);
        uint32_t type;
        if ((st = rd_u32(r, &type, "truncated value type"))) return st;
        if ((st = rd_value(r, type, &kv->val, 0))) return st;
    }
    r->ctx[0] = 0;

    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_value *al = gguf_find(f, "general.alignment");
    if (al) {
        if (al->type != GGUF_T_U32 || al->u64 == 0 || (al->u64 & (al->u64 - 1)) != 0)
            return tinfer_err_set(r->err, TINFER_ERR_FORMAT,
                                  "%s: key 'general.alignment' must be a power-of-two u32",
                                  r->path);
        f->alignment = al->u64;
    }

    for (uint64_t i = 0; i < f->n_tensors; i++)
        if ((st = rd_tensor(r, f, i, &f->tensors[i]))) return st;
    r->ctx[0] = 0;

    size_t pad = (size_t)((f->alignment - r->pos % f->alignment) % f->alignment);
    if (!rd_need(r, pad))
        return tinfer_err_set(r->err, TINFER_ERR_FORMAT,
                              "%s: file ends before the data section (at byte %zu)", r->path,
                              r->pos);
    f->data_start = r->pos + pad;
    size_t data_size = r->size - f->data_start;

    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        if (t->offset % f->alignment != 0)
            return tinfer_err_set(r->err, TINFER_ERR_FORMAT,
                                  "%s: tensor '%s': offset %llu is not a multiple of the "
                                  "alignment %llu",
                                  r->path, t->name, (unsigned long long)t->offset,
                                  (unsigned long long)f->alignment);
        if (t->offset > data_size || t->nbytes > data_size - t->offset)
            return tinfer_err_set(r->err, TINFER_ERR_FORMAT,
                                  "%s: tensor '%s': data [%llu, +%zu) lies past the end of file "
                                  "(data section is %zu bytes)",
                                  r->path, t->name, (unsigned long long)t->offset, t->nbytes,
                                  data_size);
        t->data = r->p + f->data_start + t->offset;
    }
    return check_duplicates(r, f);
}

tinfer_status gguf_open(const char *path, gguf_file **out, tinfer_err *err) {
    *out = NULL;
    gguf_file *f = calloc(1, sizeof *f);
    if (!f) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    f->path = strdup(path);
    if (!f->path) {
        gguf_close(f);
        return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        tinfer_status st = tinfer_err_set(err, TINFER_ERR_IO, "%s: cannot open: %s", path,
                                          strerror(errno));
        gguf_close(f);
        return st;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        gguf_close(f);
        return tinfer_err_set(err, TINFER_ERR_IO, "%s: not a regular file", path);
    }
    f->size = (size_t)sb.st_size;
    if (f->size > 0) {
        void *m = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            tinfer_status st = tinfer_err_set(err, TINFER_ERR_IO, "%s: mmap failed: %s", path,
                                              strerror(errno));
            close(fd);
            f->size = 0;
            gguf_close(f);
            return st;
        }
        f->map = m;
        f->owns_map = true;
    }
    close(fd);
    rd r = {.p = f->map, .pos = 0, .size = f->size, .path = path, .err = err};
    tinfer_status st = parse(&r, f);
    if (st) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return TINFER_OK;
}

tinfer_status gguf_open_mem(const void *data, size_t size, const char *name, gguf_file **out,
                            tinfer_err *err) {
    *out = NULL;
    gguf_file *f = calloc(1, sizeof *f);
    if (!f) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    f->path = strdup(name);
    f->map = (uint8_t *)data; /* never written: parse only reads */
    f->size = data ? size : 0;
    rd r = {.p = f->map, .pos = 0, .size = f->size, .path = name, .err = err};
    tinfer_status st = f->path ? parse(&r, f)
                               : tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "out of memory");
    if (st) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return TINFER_OK;
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    if (f->kv)
        for (uint64_t i = 0; i < f->n_kv; i++) value_free(&f->kv[i].val);
    if (f->tensors)
        for (uint64_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->kv);
    free(f->tensors);
    if (f->map && f->owns_map) munmap(f->map, f->size);
    free(f->path);
    free(f);
}

const gguf_value *gguf_find(const gguf_file *f, const char *key) {
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (str_eq(f->kv[i].key, key)) return &f->kv[i].val;
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

static bool is_unsigned(uint32_t t) {
    return t == GGUF_T_U8 || t == GGUF_T_U16 || t == GGUF_T_U32 || t == GGUF_T_U64;
}
static bool is_signed(uint32_t t) {
    return t == GGUF_T_I8 || t == GGUF_T_I16 || t == GGUF_T_I32 || t == GGUF_T_I64;
}

tinfer_status gguf_get_u64_or(const gguf_file *f, const char *key, uint64_t def, uint64_t *v,
                              tinfer_err *err) {
    const gguf_value *x = gguf_find(f, key);
    if (!x) {
        *v = def;
        return TINFER_OK;
    }
    if (is_unsigned(x->type)) {
        *v = x->u64;
        return TINFER_OK;
    }
    if (is_signed(x->type) && x->i64 >= 0) {
        *v = (uint64_t)x->i64;
        return TINFER_OK;
    }
    return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s': expected a non-negative integer",
                          f->path, key);
}

tinfer_status gguf_get_u64(const gguf_file *f, const char *key, uint64_t *v, tinfer_err *err) {
    if (!gguf_find(f, key))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: missing key '%s'", f->path, key);
    return gguf_get_u64_or(f, key, 0, v, err);
}

tinfer_status gguf_get_f64_or(const gguf_file *f, const char *key, double def, double *v,
                              tinfer_err *err) {
    const gguf_value *x = gguf_find(f, key);
    if (!x) *v = def;
    else if (x->type == GGUF_T_F32 || x->type == GGUF_T_F64) *v = x->f64;
    else if (is_unsigned(x->type)) *v = (double)x->u64;
    else if (is_signed(x->type)) *v = (double)x->i64;
    else
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s': expected a number", f->path,
                              key);
    return TINFER_OK;
}

tinfer_status gguf_get_bool_or(const gguf_file *f, const char *key, bool def, bool *v,
                               tinfer_err *err) {
    const gguf_value *x = gguf_find(f, key);
    if (!x) *v = def;
    else if (x->type == GGUF_T_BOOL) *v = x->b;
    else
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s': expected a bool", f->path,
                              key);
    return TINFER_OK;
}

tinfer_status gguf_get_str(const gguf_file *f, const char *key, bool required, char **v,
                           tinfer_err *err) {
    *v = NULL;
    const gguf_value *x = gguf_find(f, key);
    if (!x) {
        if (!required) return TINFER_OK;
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: missing key '%s'", f->path, key);
    }
    if (x->type != GGUF_T_STRING)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s': expected a string", f->path,
                              key);
    if (memchr(x->str.ptr, 0, (size_t)x->str.len))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key '%s': string contains a NUL byte",
                              f->path, key);
    *v = malloc((size_t)x->str.len + 1);
    if (!*v) return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
    memcpy(*v, x->str.ptr, (size_t)x->str.len);
    (*v)[x->str.len] = 0;
    return TINFER_OK;
}

tinfer_status gguf_get_arr(const gguf_file *f, const char *key, uint32_t elem_type,
                           const gguf_value **arr, tinfer_err *err) {
    const gguf_value *x = gguf_find(f, key);
    *arr = NULL;
    if (!x) return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: missing key '%s'", f->path, key);
    bool ok = x->type == GGUF_T_ARRAY &&
              (x->arr.type == elem_type ||
               ((is_signed(elem_type) || is_unsigned(elem_type)) &&
                (is_signed(x->arr.type) || is_unsigned(x->arr.type))));
    if (!ok)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: key '%s': expected an array of type %u", f->path, key,
                              elem_type);
    *arr = x;
    return TINFER_OK;
}

int64_t gguf_arr_int(const gguf_value *arr, uint64_t i) {
    gguf_value v;
    decode_fixed(arr->arr.type, arr->arr.raw + i * fixed_size(arr->arr.type), &v);
    return is_unsigned(arr->arr.type) ? (int64_t)v.u64 : v.i64;
}

/*
 * safetensors.c — the safetensors parser behind safetensors.h.
 *
 * Algorithm, per file (a "shard"):
 *   1. mmap the file read-only (or take the caller's buffer for tinfer_st_open_memory);
 *   2. read the u64 little-endian header length N, check 8 + N <= file size and N <= a cap;
 *   3. copy the N header bytes into a NUL-terminated buffer and parse it with cJSON (the only
 *      thing cJSON is used for); every member except "__metadata__" is a tensor entry whose
 *      dtype, shape and data_offsets are validated one by one;
 *   4. sort the shard's tensors by data offset and check that they tile the data section exactly:
 *      the first begins at 0, each begins where the previous one ends, the last ends at the end
 *      of the file. This is the rule huggingface/safetensors itself enforces (its
 *      `validate` rejects "MetadataIncompleteBuffer" / "InvalidOffset"), and it means no two
 *      tensors alias and no byte is unaccounted for.
 * The tensors of every shard are then merged into one array sorted by name, so tinfer_st_find
 * is a bsearch (models have hundreds to thousands of tensors) and duplicates are neighbours.
 *
 * Constraints: tensor data points straight into the mapping, so it is aligned only as well as
 * the writer padded the header (the reference writer pads N to a multiple of 8, but nothing
 * forces it): readers must not assume element alignment (use memcpy or byte loads).
 * Numbers in the header go through cJSON's double, so integers are exact only up to 2^53; larger
 * offsets or dimensions are rejected rather than silently rounded (2^53 bytes is 8 PiB).
 * POSIX (open/fstat/mmap), hence the feature macro: the build is -std=c11 without extensions.
 */
#define _POSIX_C_SOURCE 200809L

#include "safetensors.h"
#include "textfile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* huggingface/safetensors (safetensors/src/tensor.rs, MAX_HEADER_SIZE = 100_000_000) refuses
 * headers above 100 MB; we use the same cap so a corrupt length cannot make us copy and parse
 * gigabytes (a 100 MB header already describes ~1M tensors, far more than any model). */
#define ST_MAX_HEADER_BYTES 100000000ull
/* model.safetensors.index.json of the largest public models is a few hundred KB; 64 MiB is a
 * generous bound that still stops a mistaken multi-GB file from being slurped into memory. */
#define ST_MAX_INDEX_BYTES (64u << 20)
/* Largest integer a double (cJSON's number type) holds exactly. */
#define ST_MAX_EXACT_INT 9007199254740992.0

typedef struct st_shard {
    char *path;          /* label used in messages and tinfer_tensor_view.file */
    const uint8_t *base; /* whole file image */
    size_t size;
    void *map; /* non-NULL when we own an mmap of map_len bytes */
    size_t map_len;
} st_shard;

struct tinfer_st_set {
    char *label; /* directory or file named in "missing tensor" messages */
    st_shard *shards;
    int32_t n_shards, cap_shards;
    tinfer_tensor_view *t; /* [n], sorted by name once loading is complete */
    int64_t n, cap;
};

/* ---------------------------------------------------------------------------------------------
 * small helpers */

static char *st_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static char *st_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t o = a;
    if (a == 0 || dir[a - 1] != '/') p[o++] = '/';
    memcpy(p + o, name, b + 1);
    return p;
}

static uint64_t st_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* A JSON number that is an exact non-negative integer <= 2^53. */
static bool st_json_uint(const cJSON *it, uint64_t *out) {
    if (!cJSON_IsNumber(it)) return false;
    double v = it->valuedouble;
    if (!(v >= 0.0 && v <= ST_MAX_EXACT_INT)) return false; /* also rejects NaN */
    uint64_t u = (uint64_t)v;
    if ((double)u != v) return false;
    *out = u;
    return true;
}

static tinfer_status st_oom(tinfer_err *err, const char *what) {
    return tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
}

static tinfer_status st_set_new(const char *label, tinfer_st_set **out, tinfer_err *err) {
    tinfer_st_set *s = calloc(1, sizeof *s);
    if (!s || !(s->label = st_strdup(label ? label : "(memory)"))) {
        free(s);
        return st_oom(err, label ? label : "safetensors");
    }
    *out = s;
    return TINFER_OK;
}

static st_shard *st_add_shard(tinfer_st_set *s, const char *path) {
    if (s->n_shards == s->cap_shards) {
        int32_t nc = s->cap_shards ? s->cap_shards * 2 : 4;
        st_shard *ns = realloc(s->shards, (size_t)nc * sizeof *ns);
        if (!ns) return NULL;
        s->shards = ns;
        s->cap_shards = nc;
    }
    st_shard *sh = &s->shards[s->n_shards];
    memset(sh, 0, sizeof *sh);
    if (!(sh->path = st_strdup(path))) return NULL;
    s->n_shards++;
    return sh;
}

static tinfer_tensor_view *st_add_tensor(tinfer_st_set *s) {
    if (s->n == s->cap) {
        int64_t nc = s->cap ? s->cap * 2 : 64;
        tinfer_tensor_view *nt = realloc(s->t, (size_t)nc * sizeof *nt);
        if (!nt) return NULL;
        s->t = nt;
        s->cap = nc;
    }
    tinfer_tensor_view *v = &s->t[s->n++];
    memset(v, 0, sizeof *v);
    return v;
}

void tinfer_st_close(tinfer_st_set *set) {
    if (!set) return;
    for (int64_t i = 0; i < set->n; i++) free((char *)set->t[i].name);
    for (int32_t i = 0; i < set->n_shards; i++) {
        if (set->shards[i].map) munmap(set->shards[i].map, set->shards[i].map_len);
        free(set->shards[i].path);
    }
    free(set->shards);
    free(set->t);
    free(set->label);
    free(set);
}

/* ---------------------------------------------------------------------------------------------
 * header parsing */

/* dtype strings that real safetensors files use but this runtime does not compute with. */
static const char *const st_other_dtypes[] = {"F64",     "I64",     "I32",     "I16",
                                              "U64",     "U32",     "U16",     "U8",      "BOOL",
                                              "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2",
                                              "F4",      "C64"};

static tinfer_status st_parse_dtype(const char *path, const char *name, const cJSON *entry,
                                    tinfer_dtype *dt, tinfer_err *err) {
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    if (!d) return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: tensor '%s': missing 'dtype'", path, name);
    if (!cJSON_IsString(d) || !d->valuestring)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: tensor '%s': 'dtype' is not a string",
                              path, name);
    const char *s = d->valuestring;
    if (!strcmp(s, "F32")) *dt = TINFER_DTYPE_F32;
    else if (!strcmp(s, "F16")) *dt = TINFER_DTYPE_F16;
    else if (!strcmp(s, "BF16")) *dt = TINFER_DTYPE_BF16;
    else if (!strcmp(s, "I8")) *dt = TINFER_DTYPE_I8; /* the values of a Q8_0 weight */
    else {
        for (size_t i = 0; i < sizeof st_other_dtypes / sizeof st_other_dtypes[0]; i++)
            if (!strcmp(s, st_other_dtypes[i]))
                return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                                      "%s: tensor '%s': dtype %s is not supported (only F32, F16, "
                                      "BF16, I8)",
                                      path, name, s);
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%s'", path,
                              name, s);
    }
    return TINFER_OK;
}

static tinfer_status st_parse_shape(const char *path, const char *name, const cJSON *entry,
                                    tinfer_tensor_view *v, tinfer_err *err) {
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    if (!sh) return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: tensor '%s': missing 'shape'", path, name);
    if (!cJSON_IsArray(sh))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: tensor '%s': 'shape' is not an array",
                              path, name);
    int n = cJSON_GetArraySize(sh);
    if (n > TINFER_MAX_DIMS)
        return tinfer_err_set(err, TINFER_ERR_UNSUPPORTED,
                              "%s: tensor '%s': %d dimensions (at most %d supported)", path, name, n,
                              TINFER_MAX_DIMS);
    int64_t prod = 1; /* a 0-d tensor is a scalar: one element */
    int i = 0;
    for (const cJSON *it = sh->child; it; it = it->next, i++) {
        uint64_t d;
        if (!st_json_uint(it, &d))
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: tensor '%s': shape entry %d is not a non-negative integer",
                                  path, name, i);
        if (d != 0 && (uint64_t)prod > (uint64_t)INT64_MAX / d)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: tensor '%s': shape element count overflows 64 bits", path,
                                  name);
        v->shape[i] = (int64_t)d;
        prod *= (int64_t)d;
    }
    v->n_dims = n;
    v->n_elems = prod;
    return TINFER_OK;
}

static tinfer_status st_parse_offsets(const char *path, const char *name, const cJSON *entry,
                                      uint64_t data_size, uint64_t *b, uint64_t *e,
                                      tinfer_err *err) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    if (!o)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: tensor '%s': missing 'data_offsets'",
                              path, name);
    if (!cJSON_IsArray(o) || cJSON_GetArraySize(o) != 2 || !st_json_uint(o->child, b) ||
        !st_json_uint(o->child->next, e))
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: tensor '%s': 'data_offsets' is not two non-negative integers",
                              path, name);
    if (*b > *e)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin",
                              path, name, (unsigned long long)*b, (unsigned long long)*e);
    if (*e > data_size)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: tensor '%s': data_offsets [%llu, %llu] run past the %llu-byte "
                              "data section",
                              path, name, (unsigned long long)*b, (unsigned long long)*e,
                              (unsigned long long)data_size);
    return TINFER_OK;
}

static tinfer_status st_check_metadata(const char *path, const cJSON *m, tinfer_err *err) {
    if (!cJSON_IsObject(m))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: '__metadata__' is not an object", path);
    for (const cJSON *it = m->child; it; it = it->next)
        if (!cJSON_IsString(it))
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: '__metadata__' key '%s' is not a string", path,
                                  it->string ? it->string : "");
    return TINFER_OK;
}

typedef struct st_span {
    uint64_t b, e;
    int64_t idx; /* into set->t */
} st_span;

static int st_span_cmp(const void *pa, const void *pb) {
    const st_span *a = pa, *b = pb;
    if (a->b != b->b) return a->b < b->b ? -1 : 1;
    if (a->e != b->e) return a->e < b->e ? -1 : 1;
    return 0;
}

/* The tensors [first, set->n) belong to one shard whose data section is data_size bytes: check
 * that, sorted by offset, they tile it exactly. */
static tinfer_status st_check_tiling(const tinfer_st_set *set, int64_t first, const char *path,
                                     const uint8_t *data, uint64_t data_size, tinfer_err *err) {
    int64_t n = set->n - first;
    if (n == 0) {
        if (data_size != 0)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: no tensors but a %llu-byte data section", path,
                                  (unsigned long long)data_size);
        return TINFER_OK;
    }
    st_span *sp = malloc((size_t)n * sizeof *sp);
    if (!sp) return st_oom(err, path);
    for (int64_t i = 0; i < n; i++) {
        const tinfer_tensor_view *v = &set->t[first + i];
        sp[i].b = (uint64_t)((const uint8_t *)v->data - data);
        sp[i].e = sp[i].b + v->n_bytes;
        sp[i].idx = first + i;
    }
    qsort(sp, (size_t)n, sizeof *sp, st_span_cmp);
    tinfer_status st = TINFER_OK;
    uint64_t end = 0;
    const char *prev = NULL;
    for (int64_t i = 0; i < n && st == TINFER_OK; i++) {
        const char *name = set->t[sp[i].idx].name;
        if (sp[i].b < end)
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s' "
                                "(which ends at %llu)",
                                path, name, (unsigned long long)sp[i].b,
                                (unsigned long long)sp[i].e, prev, (unsigned long long)end);
        else if (sp[i].b > end && prev)
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: tensor '%s': data begins at %llu but tensor '%s' ends at "
                                "%llu (a gap of unused bytes)",
                                path, name, (unsigned long long)sp[i].b, prev,
                                (unsigned long long)end);
        else if (sp[i].b > end)
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: tensor '%s': data begins at %llu, leaving a gap at the start "
                                "of the data section",
                                path, name, (unsigned long long)sp[i].b);
        end = sp[i].e;
        prev = name;
    }
    if (st == TINFER_OK && end != data_size)
        st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                            "%s: tensor '%s': data ends at %llu but the data section is %llu bytes "
                            "(trailing bytes not covered by any tensor)",
                            path, prev, (unsigned long long)end, (unsigned long long)data_size);
    free(sp);
    return st;
}

/* Parses the image of shard `si` and appends its tensors to set->t. */
static tinfer_status st_parse_shard(tinfer_st_set *set, int32_t si, tinfer_err *err) {
    const st_shard *sh = &set->shards[si];
    const char *path = sh->path;
    if (sh->size < 8)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: file is %zu bytes, too short for the 8-byte header length",
                              path, sh->size);
    uint64_t hlen = st_le64(sh->base);
    if (hlen > ST_MAX_HEADER_BYTES)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: header length %llu exceeds the %llu-byte limit (corrupt file?)",
                              path, (unsigned long long)hlen, ST_MAX_HEADER_BYTES);
    if (hlen > sh->size - 8)
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: header length %llu runs past the end of the %zu-byte file",
                              path, (unsigned long long)hlen, sh->size);
    const uint8_t *hdr = sh->base + 8;
    if (memchr(hdr, 0, (size_t)hlen))
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: header contains a NUL byte", path);
    /* cJSON wants a terminated string; the mapping has none after the header. */
    char *text = malloc((size_t)hlen + 1);
    if (!text) return st_oom(err, path);
    memcpy(text, hdr, (size_t)hlen);
    text[hlen] = '\0';
    cJSON *root = tinfer_json_parse_strict(text, (size_t)hlen);
    free(text);
    if (!root) return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: header is not valid JSON", path);

    tinfer_status st = TINFER_OK;
    const uint8_t *data = hdr + hlen;
    uint64_t data_size = (uint64_t)sh->size - 8 - hlen;
    int64_t first = set->n;
    if (!cJSON_IsObject(root)) {
        st = tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: header is not a JSON object", path);
        goto cleanup;
    }
    for (const cJSON *it = root->child; it && st == TINFER_OK; it = it->next) {
        const char *name = it->string ? it->string : "";
        if (!strcmp(name, "__metadata__")) {
            st = st_check_metadata(path, it, err);
            continue;
        }
        if (!cJSON_IsObject(it)) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: tensor '%s': entry is not an object",
                                path, name);
            break;
        }
        tinfer_tensor_view v;
        memset(&v, 0, sizeof v);
        uint64_t b = 0, e = 0;
        if ((st = st_parse_dtype(path, name, it, &v.dtype, err)) != TINFER_OK) break;
        if ((st = st_parse_shape(path, name, it, &v, err)) != TINFER_OK) break;
        if ((st = st_parse_offsets(path, name, it, data_size, &b, &e, err)) != TINFER_OK) break;
        size_t es = tinfer_dtype_size(v.dtype);
        /* e - b <= data_size < SIZE_MAX, so comparing in 64 bits after an overflow check on the
         * product is enough. */
        if ((uint64_t)v.n_elems > UINT64_MAX / es || (uint64_t)v.n_elems * es != e - b) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: tensor '%s': shape holds %lld %s elements but data_offsets "
                                "[%llu, %llu] span %llu bytes",
                                path, name, (long long)v.n_elems, tinfer_dtype_name(v.dtype),
                                (unsigned long long)b, (unsigned long long)e,
                                (unsigned long long)(e - b));
            break;
        }
        v.data = data + b;
        v.n_bytes = (size_t)(e - b);
        v.file = path;
        tinfer_tensor_view *slot = st_add_tensor(set);
        if (!slot || !(v.name = st_strdup(name))) {
            if (slot) set->n--;
            st = st_oom(err, path);
            break;
        }
        *slot = v;
    }
    if (st == TINFER_OK) st = st_check_tiling(set, first, path, data, data_size, err);
cleanup:
    cJSON_Delete(root);
    return st;
}

static int st_name_cmp(const void *pa, const void *pb) {
    const tinfer_tensor_view *a = pa, *b = pb;
    return strcmp(a->name, b->name);
}

/* Sorts by name (for bsearch) and rejects a name that appears twice. */
static tinfer_status st_finish(tinfer_st_set *set, tinfer_err *err) {
    if (set->n > 1) qsort(set->t, (size_t)set->n, sizeof *set->t, st_name_cmp);
    for (int64_t i = 1; i < set->n; i++) {
        const tinfer_tensor_view *a = &set->t[i - 1], *b = &set->t[i];
        if (strcmp(a->name, b->name)) continue;
        if (a->file == b->file)
            return tinfer_err_set(err, TINFER_ERR_FORMAT,
                                  "%s: tensor '%s': appears twice in the header", a->file, a->name);
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "tensor '%s' is in two shards: %s and %s",
                              a->name, a->file, b->file);
    }
    return TINFER_OK;
}

/* ---------------------------------------------------------------------------------------------
 * opening */

/* Maps `path` into a new shard of `set` and parses it. */
static tinfer_status st_load_file(tinfer_st_set *set, const char *path, tinfer_err *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return tinfer_err_set(err, TINFER_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return tinfer_err_set(err, TINFER_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return tinfer_err_set(err, TINFER_ERR_IO, "%s: not a regular file", path);
    }
    st_shard *sh = st_add_shard(set, path);
    if (!sh) {
        close(fd);
        return st_oom(err, path);
    }
    sh->size = (size_t)sb.st_size;
    if (sh->size >= 8) { /* mmap of 0 bytes fails; short files are reported by the parser */
        void *m = mmap(NULL, sh->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            return tinfer_err_set(err, TINFER_ERR_IO, "%s: cannot mmap %zu bytes: %s", path,
                                  sh->size, strerror(e));
        }
        sh->map = m;
        sh->map_len = sh->size;
        sh->base = m;
    } else {
        sh->base = (const uint8_t *)"";
    }
    close(fd); /* the mapping keeps the file alive */
    return st_parse_shard(set, set->n_shards - 1, err);
}

tinfer_status tinfer_st_open_file(const char *path, tinfer_st_set **out, tinfer_err *err) {
    if (!path || !out) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "tinfer_st_open_file: NULL argument");
    *out = NULL;
    tinfer_st_set *set;
    tinfer_status st = st_set_new(path, &set, err);
    if (st != TINFER_OK) return st;
    if ((st = st_load_file(set, path, err)) == TINFER_OK) st = st_finish(set, err);
    if (st != TINFER_OK) {
        tinfer_st_close(set);
        return st;
    }
    *out = set;
    return TINFER_OK;
}

tinfer_status tinfer_st_open_memory(const void *buf, size_t len, const char *label,
                                    tinfer_st_set **out, tinfer_err *err) {
    if ((!buf && len) || !out)
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "tinfer_st_open_memory: NULL argument");
    *out = NULL;
    if (!label) label = "(memory)";
    tinfer_st_set *set;
    tinfer_status st = st_set_new(label, &set, err);
    if (st != TINFER_OK) return st;
    st_shard *sh = st_add_shard(set, label);
    if (!sh) {
        tinfer_st_close(set);
        return st_oom(err, label);
    }
    sh->base = buf ? buf : (const void *)"";
    sh->size = len;
    if ((st = st_parse_shard(set, 0, err)) == TINFER_OK) st = st_finish(set, err);
    if (st != TINFER_OK) {
        tinfer_st_close(set);
        return st;
    }
    *out = set;
    return TINFER_OK;
}

static bool st_plain_name(const char *s) {
    return s[0] != '\0' && !strchr(s, '/') && !strstr(s, "..");
}

static int st_str_ptr_cmp(const void *pa, const void *pb) {
    const cJSON *const *a = pa, *const *b = pb;
    return strcmp((*a)->string, (*b)->string);
}

/* model.safetensors.index.json: {"weight_map": {tensor: shard file, ...}, "metadata": {...}}. */
static tinfer_status st_load_index(tinfer_st_set *set, const char *dir, const char *ipath,
                                   const char *text, size_t len, tinfer_err *err) {
    cJSON *root = tinfer_json_parse_strict(text, len);
    if (!root) return tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: not valid JSON", ipath);
    tinfer_status st = TINFER_OK;
    const cJSON **entries = NULL;
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(root) || !cJSON_IsObject(wm)) {
        st = tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: key 'weight_map' missing or not an object",
                            ipath);
        goto cleanup;
    }
    int n = cJSON_GetArraySize(wm);
    if (n == 0) {
        st = tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: 'weight_map' is empty", ipath);
        goto cleanup;
    }
    entries = malloc((size_t)n * sizeof *entries);
    if (!entries) {
        st = st_oom(err, ipath);
        goto cleanup;
    }
    int k = 0;
    for (const cJSON *it = wm->child; it; it = it->next) {
        if (!cJSON_IsString(it) || !it->valuestring) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: weight_map entry for tensor '%s' is not a string", ipath,
                                it->string ? it->string : "");
            goto cleanup;
        }
        if (!st_plain_name(it->valuestring)) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: tensor '%s': shard name '%s' is not a plain file name in the "
                                "model directory",
                                ipath, it->string ? it->string : "", it->valuestring);
            goto cleanup;
        }
        entries[k++] = it;
    }
    qsort(entries, (size_t)n, sizeof *entries, st_str_ptr_cmp);
    for (int i = 1; i < n; i++)
        if (!strcmp(entries[i - 1]->string, entries[i]->string)) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: tensor '%s' appears twice in weight_map", ipath,
                                entries[i]->string);
            goto cleanup;
        }
    /* Open each distinct shard once, in order of first appearance. The number of shards is small
     * (tens), so a linear scan over the shards opened so far is fine. */
    for (const cJSON *it = wm->child; it && st == TINFER_OK; it = it->next) {
        bool seen = false;
        char *spath = st_join(dir, it->valuestring);
        if (!spath) {
            st = st_oom(err, ipath);
            break;
        }
        for (int32_t s = 0; s < set->n_shards && !seen; s++) seen = !strcmp(set->shards[s].path, spath);
        if (!seen) {
            struct stat sb;
            if (stat(spath, &sb) != 0 && errno == ENOENT)
                st = tinfer_err_set(err, TINFER_ERR_IO,
                                    "%s: shard '%s' (of tensor '%s') does not exist", ipath,
                                    it->valuestring, it->string);
            else
                st = st_load_file(set, spath, err);
        }
        free(spath);
    }
    if (st == TINFER_OK) st = st_finish(set, err);
    /* Every weight_map entry must be in the shard the index names. */
    for (int i = 0; i < n && st == TINFER_OK; i++) {
        const tinfer_tensor_view *v = tinfer_st_find(set, entries[i]->string);
        const char *f = v ? strrchr(v->file, '/') : NULL;
        f = f ? f + 1 : (v ? v->file : NULL);
        if (!v)
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: tensor '%s' is listed in shard '%s' but missing from it",
                                ipath, entries[i]->string, entries[i]->valuestring);
        else if (strcmp(f, entries[i]->valuestring))
            st = tinfer_err_set(err, TINFER_ERR_FORMAT,
                                "%s: tensor '%s' is listed in shard '%s' but stored in %s", ipath,
                                entries[i]->string, entries[i]->valuestring, v->file);
    }
cleanup:
    free(entries);
    cJSON_Delete(root);
    return st;
}

tinfer_status tinfer_st_open_dir(const char *dir, tinfer_st_set **out, tinfer_err *err) {
    if (!dir || !out) return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "tinfer_st_open_dir: NULL argument");
    *out = NULL;
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return tinfer_err_set(err, TINFER_ERR_IO, "%s: cannot open model directory: %s", dir,
                              strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return tinfer_err_set(err, TINFER_ERR_IO, "%s: not a directory", dir);
    if (access(dir, R_OK | X_OK) != 0)
        return tinfer_err_set(err, TINFER_ERR_IO, "%s: cannot read model directory: %s", dir,
                              strerror(errno));
    tinfer_st_set *set;
    tinfer_status st = st_set_new(dir, &set, err);
    if (st != TINFER_OK) return st;
    char *single = st_join(dir, "model.safetensors");
    char *ipath = st_join(dir, "model.safetensors.index.json");
    char *text = NULL;
    if (!single || !ipath) {
        st = st_oom(err, dir);
        goto cleanup;
    }
    if (stat(single, &sb) == 0 || errno != ENOENT) {
        if ((st = st_load_file(set, single, err)) == TINFER_OK) st = st_finish(set, err);
        goto cleanup;
    }
    size_t len = 0;
    bool missing = false;
    st = tinfer_read_text_file(ipath, ST_MAX_INDEX_BYTES, &text, &len, &missing, err);
    if (missing) {
        st = tinfer_err_set(err, TINFER_ERR_IO, "%s: no model.safetensors or model.safetensors.index.json",
                            dir);
        goto cleanup;
    }
    if (st == TINFER_OK) st = st_load_index(set, dir, ipath, text, len, err);
cleanup:
    free(text);
    free(single);
    free(ipath);
    if (st != TINFER_OK) {
        tinfer_st_close(set);
        return st;
    }
    *out = set;
    return TINFER_OK;
}

/* ---------------------------------------------------------------------------------------------
 * queries */

int64_t tinfer_st_count(const tinfer_st_set *set) { return set ? set->n : 0; }

const tinfer_tensor_view *tinfer_st_at(const tinfer_st_set *set, int64_t i) {
    if (!set || i < 0 || i >= set->n) return NULL;
    return &set->t[i];
}

const tinfer_tensor_view *tinfer_st_find(const tinfer_st_set *set, const char *name) {
    if (!set || !name) return NULL;
    int64_t lo = 0, hi = set->n; /* [lo, hi) */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, set->t[mid].name);
        if (c == 0) return &set->t[mid];
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return NULL;
}

/* "[a, b, c]" into buf (truncated safely). */
static void st_fmt_shape(char *buf, size_t cap, int32_t n, const int64_t *shape) {
    size_t o = 0;
    int w = snprintf(buf, cap, "[");
    o = w > 0 ? (size_t)w : 0;
    for (int32_t i = 0; i < n && o < cap; i++) {
        w = snprintf(buf + o, cap - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
        if (w < 0) break;
        o += (size_t)w;
    }
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

tinfer_status tinfer_st_get(const tinfer_st_set *set, const char *name, int32_t n_dims,
                            const int64_t *shape, const tinfer_tensor_view **out, tinfer_err *err) {
    if (out) *out = NULL;
    if (!set || !name || !out || n_dims < 0 || n_dims > TINFER_MAX_DIMS || (n_dims && !shape))
        return tinfer_err_set(err, TINFER_ERR_INVALID_ARG, "tinfer_st_get: bad argument");
    const tinfer_tensor_view *v = tinfer_st_find(set, name);
    if (!v)
        return tinfer_err_set(err, TINFER_ERR_FORMAT, "missing tensor '%s' (in %s)", name,
                              set->label);
    bool same = v->n_dims == n_dims;
    for (int32_t i = 0; same && i < n_dims; i++) same = v->shape[i] == shape[i];
    if (!same) {
        /* 8 dims x up to 20 digits + separators fits in 200 bytes */
        char have[200], want[200];
        st_fmt_shape(have, sizeof have, v->n_dims, v->shape);
        st_fmt_shape(want, sizeof want, n_dims, shape);
        return tinfer_err_set(err, TINFER_ERR_FORMAT,
                              "%s: tensor '%s': shape %s but the config needs %s", v->file, name,
                              have, want);
    }
    *out = v;
    return TINFER_OK;
}

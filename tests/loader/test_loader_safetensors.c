/*
 * test_loader_safetensors.c — the safetensors loader on good and bad files built at run time in
 * a mkdtemp directory: single files, model directories, sharded models with an index, and the
 * lookups (tinfer_st_find / tinfer_st_get). Every bad case checks the status code and that the
 * message names the file and the tensor (or key) at fault.
 */
#define _XOPEN_SOURCE 700

#include "loader_test_util.h"
#include "safetensors.h"

/* Opens g_tmp/name as a single file, expecting failure; returns the status. */
static tinfer_status open_bad(const char *name, const char *header, const void *data, size_t dlen,
                              tinfer_err *err) {
    const char *p = tpath(0, name);
    write_st(p, header, data, dlen);
    tinfer_st_set *s = (tinfer_st_set *)1;
    tinfer_status st = tinfer_st_open_file(p, &s, err);
    CHECK(st == TINFER_OK || s == NULL);
    if (st == TINFER_OK) tinfer_st_close(s);
    return st;
}

static void test_good_file(void) {
    /* Known values: F32 exact, F16 and BF16 bit patterns from the IEEE-754 / bfloat16 encodings
     * (1.0 = 0x3C00 in F16 and 0x3F80 in BF16; -2.0 = 0xC000 / 0xC000). */
    const float f32[6] = {1.5f, -2.25f, 0.0f, 3.0e-5f, 1.0e20f, -7.0f};
    const uint16_t f16[4] = {0x3C00, 0xC000, 0x7C00, 0x0001}; /* 1, -2, inf, 2^-24 */
    const uint16_t bf16[4] = {0x3F80, 0xC000, 0x0000, 0x7F80}; /* 1, -2, 0, inf */
    uint8_t data[24 + 8 + 8];
    memcpy(data, f32, 24);
    memcpy(data + 24, f16, 8);
    memcpy(data + 32, bf16, 8);
    /* entries deliberately not in offset order: the parser must sort them */
    const char *hdr = "{\"b\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[24,32]},"
                      "\"__metadata__\":{\"format\":\"pt\"},"
                      "\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                      "\"c\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[32,40]},"
                      "\"empty\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[40,40]}}";
    write_st(tpath(0, "good.safetensors"), hdr, data, sizeof data);
    tinfer_err err = {{0}};
    tinfer_st_set *s = NULL;
    tinfer_status st = tinfer_st_open_file(tpath(0, "good.safetensors"), &s, &err);
    CHECK(st == TINFER_OK);
    if (st != TINFER_OK) {
        fprintf(stderr, "  %s\n", err.msg);
        return;
    }
    CHECK(tinfer_st_count(s) == 4);
    const tinfer_tensor_view *a = tinfer_st_find(s, "a.weight"), *b = tinfer_st_find(s, "b"),
                             *c = tinfer_st_find(s, "c"), *e = tinfer_st_find(s, "empty");
    CHECK(a && b && c && e);
    CHECK(tinfer_st_find(s, "__metadata__") == NULL);
    CHECK(tinfer_st_find(s, "a") == NULL);
    CHECK(tinfer_st_find(s, "zzz") == NULL);
    if (a && b && c && e) {
        CHECK(a->dtype == TINFER_DTYPE_F32 && a->n_dims == 2 && a->shape[0] == 2 &&
              a->shape[1] == 3 && a->n_elems == 6 && a->n_bytes == 24);
        CHECK(memcmp(a->data, f32, 24) == 0);
        CHECK(b->dtype == TINFER_DTYPE_F16 && b->n_dims == 1 && b->n_elems == 4);
        CHECK(memcmp(b->data, f16, 8) == 0);
        CHECK(c->dtype == TINFER_DTYPE_BF16 && c->n_elems == 4 && c->n_bytes == 8);
        CHECK(memcmp(c->data, bf16, 8) == 0);
        CHECK(e->n_elems == 0 && e->n_bytes == 0);
        CHECK(strcmp(a->file, tpath(0, "good.safetensors")) == 0);
        uint16_t h;
        memcpy(&h, b->data, 2);
        CHECK(tinfer_f16_to_f32(h) == 1.0f);
        memcpy(&h, (const uint8_t *)c->data + 2, 2);
        CHECK(tinfer_bf16_to_f32(h) == -2.0f);
    }
    /* tinfer_st_at walks every tensor exactly once */
    int seen = 0;
    for (int64_t i = 0; i < tinfer_st_count(s); i++) {
        const tinfer_tensor_view *v = tinfer_st_at(s, i);
        CHECK(v && tinfer_st_find(s, v->name) == v);
        seen++;
    }
    CHECK(seen == 4 && tinfer_st_at(s, 4) == NULL && tinfer_st_at(s, -1) == NULL);

    const tinfer_tensor_view *v = NULL;
    CHECK(tinfer_st_get(s, "a.weight", 2, (const int64_t[]){2, 3}, &v, &err) == TINFER_OK && v == a);
    st = tinfer_st_get(s, "a.weight", 2, (const int64_t[]){3, 2}, &v, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "good.safetensors: tensor 'a.weight'",
              "shape [2, 3] but the config needs [3, 2]", NULL);
    CHECK(v == NULL);
    st = tinfer_st_get(s, "a.weight", 1, (const int64_t[]){6}, &v, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "'a.weight'", "shape [2, 3] but the config needs [6]", NULL);
    st = tinfer_st_get(s, "lm_head.weight", 2, (const int64_t[]){2, 3}, &v, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "missing tensor 'lm_head.weight'", "good.safetensors",
              NULL);
    tinfer_st_close(s);

    /* the same image from memory */
    static uint8_t img[4096];
    size_t n = build_st(img, sizeof img, hdr, data, sizeof data, UINT64_MAX);
    CHECK(tinfer_st_open_memory(img, n, "mem", &s, &err) == TINFER_OK);
    if (s) {
        CHECK(tinfer_st_count(s) == 4);
        a = tinfer_st_find(s, "a.weight");
        CHECK(a && a->data == img + 8 + strlen(hdr) && strcmp(a->file, "mem") == 0);
        tinfer_st_close(s);
    }

    /* a model directory with model.safetensors */
    make_dir("dir1");
    write_st(tpath(0, "dir1/model.safetensors"), hdr, data, sizeof data);
    s = NULL;
    CHECK(tinfer_st_open_dir(tpath(1, "dir1"), &s, &err) == TINFER_OK);
    if (s) {
        CHECK(tinfer_st_count(s) == 4);
        st = tinfer_st_get(s, "nope", 1, (const int64_t[]){1}, &v, &err);
        CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "missing tensor 'nope'", tpath(1, "dir1"), NULL);
        tinfer_st_close(s);
    }
    /* a header with no tensors and no data is a valid (empty) file */
    write_st(tpath(0, "none.safetensors"), "{}", NULL, 0);
    CHECK(tinfer_st_open_file(tpath(0, "none.safetensors"), &s, &err) == TINFER_OK);
    if (s) {
        CHECK(tinfer_st_count(s) == 0);
        tinfer_st_close(s);
    }
}

static void test_bad_files(void) {
    tinfer_err err = {{0}};
    uint8_t z[64] = {0};
    tinfer_st_set *s = NULL;
    tinfer_status st;

    write_raw(tpath(0, "short.safetensors"), "\x10\0\0\0\0", 5);
    st = tinfer_st_open_file(tpath(0, "short.safetensors"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "short.safetensors", "too short", NULL);

    write_raw(tpath(0, "empty.safetensors"), "", 0);
    st = tinfer_st_open_file(tpath(0, "empty.safetensors"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "empty.safetensors", "0 bytes", NULL);

    st = tinfer_st_open_file(tpath(0, "does-not-exist.safetensors"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_IO, &err, "does-not-exist.safetensors", NULL, NULL);

    static uint8_t img[1024];
    size_t n = build_st(img, sizeof img, "{}", NULL, 0, 1000);
    write_raw(tpath(0, "past.safetensors"), img, n);
    st = tinfer_st_open_file(tpath(0, "past.safetensors"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "past.safetensors", "header length 1000", "past the end");

    n = build_st(img, sizeof img, "{}", NULL, 0, (uint64_t)1 << 40);
    write_raw(tpath(0, "huge.safetensors"), img, n);
    st = tinfer_st_open_file(tpath(0, "huge.safetensors"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "huge.safetensors", "exceeds", NULL);
    /* the all-ones length must not wrap 8 + N around */
    n = build_st(img, sizeof img, "{}", NULL, 0, UINT64_MAX - 1);
    CHECK_ERR(tinfer_st_open_memory(img, n, "wrap", &s, &err), TINFER_ERR_FORMAT, &err, "wrap",
              "exceeds", NULL);

    st = open_bad("nojson.safetensors", "{\"a\": {\"dtype\": ", NULL, 0, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "nojson.safetensors", "not valid JSON", NULL);
    st = open_bad("trailing.safetensors", "{}  x", NULL, 0, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "trailing.safetensors", "not valid JSON", NULL);
    CHECK(open_bad("padded.safetensors", "{}      \n", NULL, 0, &err) == TINFER_OK);
    write_raw(tpath(0, "nul.safetensors"), "\x03\0\0\0\0\0\0\0{\0}", 11);
    st = tinfer_st_open_file(tpath(0, "nul.safetensors"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "nul.safetensors", "NUL", NULL);
    st = open_bad("array.safetensors", "[1, 2, 3]", NULL, 0, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "array.safetensors", "not a JSON object", NULL);
    st = open_bad("notobj.safetensors", "{\"t\": 5}", NULL, 0, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "notobj.safetensors: tensor 't'", "not an object", NULL);
    st = open_bad("meta.safetensors", "{\"__metadata__\": {\"k\": 1}}", NULL, 0, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "meta.safetensors", "__metadata__", "'k'");

    st = open_bad("unk.safetensors",
                  "{\"w.q\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,2]}}", z, 2, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "unk.safetensors: tensor 'w.q'", "unknown dtype 'Q4'",
              NULL);
    st = open_bad("f64.safetensors",
                  "{\"w.d\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", z, 8, &err);
    CHECK_ERR(st, TINFER_ERR_UNSUPPORTED, &err, "f64.safetensors: tensor 'w.d'", "dtype F64", NULL);
    {   /* I8 is known (the values of a Q8_0 weight): 6 bytes for [2, 3], one byte each */
        tinfer_st_set *s8 = NULL;
        static uint8_t im[256];
        size_t n8 = build_st(im, sizeof im,
                             "{\"q\":{\"dtype\":\"I8\",\"shape\":[2,3],\"data_offsets\":[0,6]}}",
                             "\x01\xff\x80\x7f\x00\x02", 6, UINT64_MAX);
        CHECK(tinfer_st_open_memory(im, n8, "i8", &s8, &err) == TINFER_OK);
        const tinfer_tensor_view *q = s8 ? tinfer_st_find(s8, "q") : NULL;
        CHECK(q && q->dtype == TINFER_DTYPE_I8 && q->n_elems == 6 && q->n_bytes == 6 &&
              ((const int8_t *)q->data)[2] == -128);
        tinfer_st_close(s8);
        st = open_bad("i8bad.safetensors",
                      "{\"q\":{\"dtype\":\"I8\",\"shape\":[2,3],\"data_offsets\":[0,8]}}", z, 8,
                      &err);
        CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "tensor 'q'", "6 I8 elements", NULL);
    }
    st = open_bad("i32.safetensors",
                  "{\"ids\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}", z, 4, &err);
    CHECK_ERR(st, TINFER_ERR_UNSUPPORTED, &err, "tensor 'ids'", "dtype I32", NULL);
    st = open_bad("nodt.safetensors", "{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", z, 4, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "nodt.safetensors: tensor 'w'", "dtype", NULL);
    st = open_bad("dtnum.safetensors",
                  "{\"w\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", z, 4, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "tensor 'w'", "dtype", NULL);

    st = open_bad("range.safetensors",
                  "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", z, 8, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "range.safetensors: tensor 'w'", "past the 8-byte data",
              NULL);
    st = open_bad("rev.safetensors",
                  "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", z, 8, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "rev.safetensors: tensor 'w'", "[8, 0]", NULL);
    st = open_bad("offs3.safetensors",
                  "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", z, 8, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "tensor 'w'", "data_offsets", NULL);
    st = open_bad("offneg.safetensors",
                  "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", z, 8, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "tensor 'w'", "data_offsets", NULL);

    st = open_bad("overlap.safetensors",
                  "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                  "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                  z, 12, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "overlap.safetensors: tensor 'y'", "overlap tensor 'x'",
              NULL);
    st = open_bad("gap.safetensors",
                  "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                  "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
                  z, 12, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "gap.safetensors: tensor 'y'", "gap", NULL);
    st = open_bad("lead.safetensors",
                  "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", z, 8, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "lead.safetensors: tensor 'x'", "gap", NULL);
    st = open_bad("trail.safetensors",
                  "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", z, 12, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "trail.safetensors: tensor 'x'", "trailing", NULL);

    st = open_bad("bytes.safetensors",
                  "{\"w\":{\"dtype\":\"BF16\",\"shape\":[3,2],\"data_offsets\":[0,8]}}", z, 8, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "bytes.safetensors: tensor 'w'", "6 BF16 elements",
              "8 bytes");
    st = open_bad("neg.safetensors",
                  "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1,2],\"data_offsets\":[0,8]}}", z, 8, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "neg.safetensors: tensor 'w'", "shape entry 0", NULL);
    st = open_bad("float.safetensors",
                  "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,1.5],\"data_offsets\":[0,12]}}", z, 12, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "float.safetensors: tensor 'w'", "shape entry 1", NULL);
    st = open_bad("strshape.safetensors",
                  "{\"w\":{\"dtype\":\"F32\",\"shape\":\"2\",\"data_offsets\":[0,8]}}", z, 8, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "tensor 'w'", "shape", NULL);
    st = open_bad("dims.safetensors",
                  "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}",
                  z, 4, &err);
    CHECK_ERR(st, TINFER_ERR_UNSUPPORTED, &err, "dims.safetensors: tensor 'w'", "9 dimensions", NULL);
    /* 2^32 * 2^32 elements: the product overflows int64 */
    st = open_bad("ovf.safetensors",
                  "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
                  "\"data_offsets\":[0,4]}}",
                  z, 4, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "ovf.safetensors: tensor 'w'", "overflow", NULL);
    /* 2^61 elements fit int64 but not bytes at 4 per element */
    st = open_bad("ovf2.safetensors",
                  "{\"w\":{\"dtype\":\"F32\",\"shape\":[2147483648,1073741824],"
                  "\"data_offsets\":[0,0]}}",
                  z, 0, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "ovf2.safetensors: tensor 'w'", "bytes", NULL);

    st = open_bad("dup.safetensors",
                  "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                  "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                  z, 8, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "dup.safetensors: tensor 'w'", "twice", NULL);

    /* a directory passed as a file */
    make_dir("adir");
    st = tinfer_st_open_file(tpath(0, "adir"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_IO, &err, "adir", NULL, NULL);
}

static const char *SHARD_A_HDR = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                                 "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[8,12]}}";
static const char *SHARD_B_HDR = "{\"c\":{\"dtype\":\"F16\",\"shape\":[1,3],\"data_offsets\":[0,6]}}";

static void make_sharded(const char *dir, const char *index) {
    const float av[2] = {1.0f, 2.0f};
    const uint16_t bv[2] = {0x3F80, 0x4000}, cv[3] = {0x3C00, 0x4000, 0x4200};
    uint8_t d[12];
    memcpy(d, av, 8);
    memcpy(d + 8, bv, 4);
    char p[8448];
    make_dir(dir);
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", tpath(1, dir));
    write_st(p, SHARD_A_HDR, d, 12);
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", tpath(1, dir));
    write_st(p, SHARD_B_HDR, cv, 6);
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", tpath(1, dir));
    write_raw(p, index, strlen(index));
}

static void test_sharded(void) {
    tinfer_err err = {{0}};
    tinfer_st_set *s = NULL;
    tinfer_status st;
    make_sharded("sh_good", "{\"metadata\":{\"total_size\":18},\"weight_map\":{"
                            "\"a\":\"model-00001-of-00002.safetensors\","
                            "\"b\":\"model-00001-of-00002.safetensors\","
                            "\"c\":\"model-00002-of-00002.safetensors\"}}");
    st = tinfer_st_open_dir(tpath(1, "sh_good"), &s, &err);
    CHECK(st == TINFER_OK);
    if (st == TINFER_OK) {
        CHECK(tinfer_st_count(s) == 3);
        const tinfer_tensor_view *c = NULL, *a = tinfer_st_find(s, "a");
        CHECK(tinfer_st_get(s, "c", 2, (const int64_t[]){1, 3}, &c, &err) == TINFER_OK);
        CHECK(a && strstr(a->file, "model-00001-of-00002.safetensors"));
        CHECK(c && strstr(c->file, "model-00002-of-00002.safetensors"));
        if (c) {
            uint16_t h;
            memcpy(&h, (const uint8_t *)c->data + 4, 2);
            CHECK(tinfer_f16_to_f32(h) == 3.0f); /* 0x4200 = 3.0 in IEEE half */
        }
        st = tinfer_st_get(s, "d", 1, (const int64_t[]){1}, &c, &err);
        CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "missing tensor 'd'", "sh_good", NULL);
        tinfer_st_close(s);
    } else {
        fprintf(stderr, "  %s\n", err.msg);
    }

    make_sharded("sh_noshard", "{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\","
                               "\"b\":\"model-00001-of-00002.safetensors\","
                               "\"c\":\"model-00002-of-00002.safetensors\","
                               "\"e\":\"model-00003-of-00002.safetensors\"}}");
    st = tinfer_st_open_dir(tpath(1, "sh_noshard"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_IO, &err, "model.safetensors.index.json",
              "model-00003-of-00002.safetensors", "'e'");

    make_sharded("sh_notin", "{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\","
                             "\"b\":\"model-00001-of-00002.safetensors\","
                             "\"c\":\"model-00002-of-00002.safetensors\","
                             "\"x\":\"model-00002-of-00002.safetensors\"}}");
    st = tinfer_st_open_dir(tpath(1, "sh_notin"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "tensor 'x'", "model-00002-of-00002.safetensors",
              "missing");

    make_sharded("sh_wrong", "{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\","
                             "\"b\":\"model-00001-of-00002.safetensors\","
                             "\"c\":\"model-00001-of-00002.safetensors\","
                             "\"z\":\"model-00002-of-00002.safetensors\"}}");
    st = tinfer_st_open_dir(tpath(1, "sh_wrong"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "tensor '", "model-0000", NULL);

    make_sharded("sh_dotdot", "{\"weight_map\":{\"a\":\"../model-00001-of-00002.safetensors\"}}");
    st = tinfer_st_open_dir(tpath(1, "sh_dotdot"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "tensor 'a'", "'../model-00001-of-00002.safetensors'",
              "not a plain file name");
    make_sharded("sh_dotdot2", "{\"weight_map\":{\"a\":\"..\"}}");
    st = tinfer_st_open_dir(tpath(1, "sh_dotdot2"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "tensor 'a'", "'..'", NULL);
    make_sharded("sh_abs", "{\"weight_map\":{\"a\":\"/etc/passwd\"}}");
    st = tinfer_st_open_dir(tpath(1, "sh_abs"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "'/etc/passwd'", NULL, NULL);

    /* the same tensor stored in two shards */
    make_sharded("sh_dup", "{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\","
                           "\"b\":\"model-00001-of-00002.safetensors\","
                           "\"c\":\"model-00002-of-00002.safetensors\","
                           "\"c2\":\"model-00003-of-00002.safetensors\"}}");
    {
        char p[8448];
        const uint16_t cv[3] = {0, 0, 0};
        snprintf(p, sizeof p, "%s/model-00003-of-00002.safetensors", tpath(1, "sh_dup"));
        write_st(p, "{\"c\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,6]},"
                    "\"c2\":{\"dtype\":\"F16\",\"shape\":[0],\"data_offsets\":[6,6]}}",
                 cv, 6);
    }
    st = tinfer_st_open_dir(tpath(1, "sh_dup"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "tensor 'c'", "model-00002-of-00002.safetensors",
              "model-00003-of-00002.safetensors");

    /* the same name twice in weight_map */
    make_sharded("sh_dupkey", "{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\","
                              "\"a\":\"model-00002-of-00002.safetensors\"}}");
    st = tinfer_st_open_dir(tpath(1, "sh_dupkey"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "tensor 'a'", "twice", NULL);

    make_sharded("sh_badjson", "{\"weight_map\": ");
    st = tinfer_st_open_dir(tpath(1, "sh_badjson"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "model.safetensors.index.json", "JSON", NULL);
    make_sharded("sh_nomap", "{\"metadata\": {}}");
    st = tinfer_st_open_dir(tpath(1, "sh_nomap"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "model.safetensors.index.json", "'weight_map'", NULL);
    make_sharded("sh_numval", "{\"weight_map\": {\"a\": 3}}");
    st = tinfer_st_open_dir(tpath(1, "sh_numval"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "tensor 'a'", "not a string", NULL);

    /* a bad shard names the shard file */
    make_sharded("sh_badshard", "{\"weight_map\":{\"a\":\"bad.safetensors\"}}");
    write_raw(tpath(0, "sh_badshard/bad.safetensors"), "abc", 3);
    st = tinfer_st_open_dir(tpath(1, "sh_badshard"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_FORMAT, &err, "sh_badshard/bad.safetensors", "too short", NULL);
}

static void test_dirs(void) {
    tinfer_err err = {{0}};
    tinfer_st_set *s = NULL;
    tinfer_status st;
    make_dir("emptydir");
    st = tinfer_st_open_dir(tpath(1, "emptydir"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_IO, &err, tpath(1, "emptydir"),
              "no model.safetensors or model.safetensors.index.json", NULL);
    st = tinfer_st_open_dir(tpath(1, "no-such-dir"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_IO, &err, "no-such-dir", NULL, NULL);
    write_raw(tpath(0, "plainfile"), "x", 1);
    st = tinfer_st_open_dir(tpath(1, "plainfile"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_IO, &err, "plainfile", "not a directory", NULL);
    /* Permission bits do not stop root, so the chmod case runs only for other users. */
    if (geteuid() != 0) {
        make_dir("locked");
        write_st(tpath(0, "locked/model.safetensors"), "{}", NULL, 0);
        chmod(tpath(0, "locked"), 0);
        st = tinfer_st_open_dir(tpath(1, "locked"), &s, &err);
        CHECK_ERR(st, TINFER_ERR_IO, &err, "locked", NULL, NULL);
        chmod(tpath(0, "locked"), 0700);
    }
    /* model.safetensors that is itself a directory */
    make_dir("weird");
    make_dir("weird/model.safetensors");
    st = tinfer_st_open_dir(tpath(1, "weird"), &s, &err);
    CHECK_ERR(st, TINFER_ERR_IO, &err, "weird/model.safetensors", NULL, NULL);
    /* NULL arguments are a status, not a crash */
    CHECK(tinfer_st_open_dir(NULL, &s, &err) == TINFER_ERR_INVALID_ARG);
    CHECK(tinfer_st_open_file(NULL, &s, &err) == TINFER_ERR_INVALID_ARG);
    CHECK(tinfer_st_find(NULL, "a") == NULL && tinfer_st_count(NULL) == 0);
    tinfer_st_close(NULL);
}

int main(void) {
    tmp_init("st");
    test_good_file();
    test_bad_files();
    test_sharded();
    test_dirs();
    if (g_failures) {
        fprintf(stderr, "test_loader_safetensors: %d failure(s)\n", g_failures);
        return 1;
    }
    printf("test_loader_safetensors: all checks passed\n");
    return 0;
}

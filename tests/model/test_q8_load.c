/*
 * test_q8_load.c — models/llama.c loading Q8_0 weights (I8 values + F16 `_scale` tensors) from a
 * tensor source made up in memory, so every bad input can be built directly.
 *
 * Good: a 1-layer model whose projections and lm_head are Q8_0 loads; the fused QKV and gate|up
 * weights are Q8_0 with the parts' rows and scales stacked in order (compared byte for byte);
 * a BF16 lm_head next to Q8_0 layers stays BF16; mixing a BF16 and a Q8_0 part in one fused
 * matrix gives F32 holding exactly d * q.
 * Bad (each a one-line TINFER_ERR_FORMAT naming the tensor): I8 without quantization_config;
 * a missing scale tensor; a scale of the wrong shape; a BF16 scale tensor; a non-finite scale;
 * rows whose length is not a multiple of 32; an I8 norm and an I8 embedding.
 */
#include "base/q8_0.h"
#include "models/llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_fail;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);                           \
            g_fail++;                                                                              \
        }                                                                                          \
    } while (0)

enum { E = 64, HD = 16, H = 4, HKV = 2, F = 128, V = 40, MAXT = 32 };

typedef struct fake_tensor {
    char name[96];
    tinfer_dtype dt;
    int32_t nd;
    int64_t shape[2];
    void *data;
} fake_tensor;

typedef struct fake_src {
    fake_tensor t[MAXT];
    int n;
} fake_src;

static fake_tensor *find(const fake_src *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].name, name)) return (fake_tensor *)&s->t[i];
    return NULL;
}

static tinfer_status src_get(const void *ctx, const char *name, int32_t n_dims,
                             const int64_t *shape, tinfer_tensor_ref *out, tinfer_err *err) {
    const fake_tensor *t = find(ctx, name);
    if (!t) return tinfer_err_set(err, TINFER_ERR_FORMAT, "missing tensor '%s'", name);
    bool same = t->nd == n_dims;
    for (int i = 0; same && i < n_dims; i++) same = t->shape[i] == shape[i];
    if (!same) return tinfer_err_set(err, TINFER_ERR_FORMAT, "tensor '%s': shape mismatch", name);
    out->data = t->data;
    out->dtype = t->dt;
    out->n_elems = t->shape[0] * (t->nd == 2 ? t->shape[1] : 1);
    return TINFER_OK;
}
static bool src_has(const void *ctx, const char *name) { return find(ctx, name) != NULL; }

static void add(fake_src *s, const char *name, tinfer_dtype dt, int64_t d0, int64_t d1) {
    fake_tensor *t = &s->t[s->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dt = dt;
    t->nd = d1 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1;
    int64_t n = d0 * (d1 ? d1 : 1);
    t->data = malloc((size_t)n * tinfer_dtype_size(dt));
    for (int64_t i = 0; i < n; i++) {
        if (dt == TINFER_DTYPE_I8) ((int8_t *)t->data)[i] = (int8_t)(i * 37 % 255 - 127);
        else if (dt == TINFER_DTYPE_F16) ((uint16_t *)t->data)[i] = tinfer_f32_to_f16(0.01f * (float)(1 + i % 7));
        else if (dt == TINFER_DTYPE_BF16) ((uint16_t *)t->data)[i] = tinfer_f32_to_bf16(0.02f * (float)(i % 5 - 2));
        else ((float *)t->data)[i] = 1.0f;
    }
}

/* A matrix: I8 + F16 scales when q8, else BF16. */
static void add_mat(fake_src *s, const char *name, int64_t rows, int64_t K, bool q8) {
    add(s, name, q8 ? TINFER_DTYPE_I8 : TINFER_DTYPE_BF16, rows, K);
    if (q8) {
        char sn[112];
        snprintf(sn, sizeof sn, "%s_scale", name);
        add(s, sn, TINFER_DTYPE_F16, rows, K / 32);
    }
}

static void build(fake_src *s, bool q8_head) {
    memset(s, 0, sizeof *s);
    add(s, "model.embed_tokens.weight", TINFER_DTYPE_BF16, V, E);
    add(s, "model.norm.weight", TINFER_DTYPE_BF16, E, 0);
    add_mat(s, "lm_head.weight", V, E, q8_head);
    add(s, "model.layers.0.input_layernorm.weight", TINFER_DTYPE_BF16, E, 0);
    add(s, "model.layers.0.post_attention_layernorm.weight", TINFER_DTYPE_BF16, E, 0);
    add_mat(s, "model.layers.0.self_attn.q_proj.weight", H * HD, E, true);
    add_mat(s, "model.layers.0.self_attn.k_proj.weight", HKV * HD, E, true);
    add_mat(s, "model.layers.0.self_attn.v_proj.weight", HKV * HD, E, true);
    add_mat(s, "model.layers.0.self_attn.o_proj.weight", E, H * HD, true);
    add_mat(s, "model.layers.0.mlp.gate_proj.weight", F, E, true);
    add_mat(s, "model.layers.0.mlp.up_proj.weight", F, E, true);
    add_mat(s, "model.layers.0.mlp.down_proj.weight", E, F, true);
}

static void release(fake_src *s) {
    for (int i = 0; i < s->n; i++) free(s->t[i].data);
    s->n = 0;
}

static tinfer_llama_config config(bool q8) {
    tinfer_llama_config c;
    memset(&c, 0, sizeof c);
    c.n_embd = E;
    c.n_layer = 1;
    c.n_head = H;
    c.n_head_kv = HKV;
    c.head_dim = HD;
    c.n_ff = F;
    c.n_vocab = V;
    c.n_ctx_train = 64;
    c.rms_norm_eps = 1e-5f;
    c.rope_theta = 10000.0f;
    c.q8_0 = q8;
    return c;
}

static tinfer_status load(fake_src *s, const tinfer_llama_config *c, tinfer_llama_weights *w,
                          tinfer_err *err) {
    tinfer_tensor_source src = {s, src_get, src_has};
    err->msg[0] = '\0';
    return tinfer_llama_load(c, &src, w, err);
}

/* A bad case: loading fails with a one-line message holding both phrases. */
static void expect_bad(fake_src *s, const tinfer_llama_config *c, const char *a, const char *b) {
    tinfer_llama_weights w;
    tinfer_err err;
    tinfer_status st = load(s, c, &w, &err);
    bool ok = st == TINFER_ERR_FORMAT && strstr(err.msg, a) && (!b || strstr(err.msg, b)) &&
              !strchr(err.msg, '\n');
    if (!ok) {
        fprintf(stderr, "FAIL bad case: status %d, message '%s', want '%s' and '%s'\n", (int)st,
                err.msg, a, b ? b : "");
        g_fail++;
    } else {
        printf("ok   %s\n", err.msg);
    }
}

int main(void) {
    fake_src s;
    tinfer_llama_config c = config(true);
    tinfer_llama_weights w;
    tinfer_err err;

    build(&s, true);
    CHECK(load(&s, &c, &w, &err) == TINFER_OK);
    if (!err.msg[0] && w.layers) {
        const tinfer_weight *qkv = &w.layers[0].wqkv;
        CHECK(qkv->dtype == TINFER_DTYPE_Q8_0 && w.fused_dtype == TINFER_DTYPE_Q8_0);
        CHECK(w.lm_head.dtype == TINFER_DTYPE_Q8_0 && w.layers[0].wdown.dtype == TINFER_DTYPE_Q8_0);
        const char *parts[3] = {"model.layers.0.self_attn.q_proj.weight",
                                "model.layers.0.self_attn.k_proj.weight",
                                "model.layers.0.self_attn.v_proj.weight"};
        size_t ov = 0, os = 0;
        for (int i = 0; i < 3; i++) {
            char sn[112];
            snprintf(sn, sizeof sn, "%s_scale", parts[i]);
            const fake_tensor *tv = find(&s, parts[i]), *ts = find(&s, sn);
            size_t nv = (size_t)(tv->shape[0] * tv->shape[1]), ns = nv / 32;
            CHECK(!memcmp((const int8_t *)qkv->data + ov, tv->data, nv));
            CHECK(!memcmp((const uint16_t *)qkv->scale + os, ts->data, ns * 2));
            ov += nv;
            os += ns;
        }
        tinfer_llama_free(&w);
    }
    release(&s);

    build(&s, false); /* BF16 head next to Q8_0 layers */
    CHECK(load(&s, &c, &w, &err) == TINFER_OK && w.lm_head.dtype == TINFER_DTYPE_BF16 &&
          w.lm_head.scale == NULL);
    if (!err.msg[0]) tinfer_llama_free(&w);
    release(&s);

    build(&s, true); /* k_proj BF16: the fused QKV is F32 holding d * q exactly */
    {
        fake_tensor *k = find(&s, "model.layers.0.self_attn.k_proj.weight");
        free(k->data);
        k->dt = TINFER_DTYPE_BF16;
        k->data = calloc((size_t)(HKV * HD * E), 2);
        CHECK(load(&s, &c, &w, &err) == TINFER_OK && w.layers[0].wqkv.dtype == TINFER_DTYPE_F32);
        if (!err.msg[0]) {
            const fake_tensor *q = find(&s, "model.layers.0.self_attn.q_proj.weight");
            const fake_tensor *qs = find(&s, "model.layers.0.self_attn.q_proj.weight_scale");
            const float *f = w.layers[0].wqkv.data;
            int bad = 0;
            for (int i = 0; i < H * HD * E; i++)
                bad += f[i] != (float)((int8_t *)q->data)[i] *
                                   tinfer_f16_to_f32(((uint16_t *)qs->data)[i / 32]);
            CHECK(bad == 0);
            tinfer_llama_free(&w);
        }
    }
    release(&s);

    tinfer_llama_config plain = config(false);
    build(&s, true);
    expect_bad(&s, &plain, "lm_head.weight", "quantization_config");
    release(&s);

    build(&s, true);
    snprintf(find(&s, "model.layers.0.mlp.down_proj.weight_scale")->name, 96, "unrelated");
    expect_bad(&s, &c, "missing tensor 'model.layers.0.mlp.down_proj.weight_scale'", NULL);
    release(&s);

    build(&s, true);
    find(&s, "model.layers.0.self_attn.o_proj.weight_scale")->shape[1] = 3;
    expect_bad(&s, &c, "model.layers.0.self_attn.o_proj.weight_scale", "shape");
    release(&s);

    build(&s, true);
    find(&s, "model.layers.0.mlp.up_proj.weight_scale")->dt = TINFER_DTYPE_BF16;
    expect_bad(&s, &c, "model.layers.0.mlp.up_proj.weight_scale", "F16");
    release(&s);

    build(&s, true);
    ((uint16_t *)find(&s, "lm_head.weight_scale")->data)[5] = 0x7e00; /* NaN */
    expect_bad(&s, &c, "lm_head.weight_scale", "not finite");
    release(&s);

    build(&s, true);
    fake_tensor *norm = find(&s, "model.norm.weight");
    norm->dt = TINFER_DTYPE_I8;
    expect_bad(&s, &c, "model.norm.weight", "is I8");
    release(&s);

    build(&s, true);
    find(&s, "model.embed_tokens.weight")->dt = TINFER_DTYPE_I8;
    expect_bad(&s, &c, "model.embed_tokens.weight", "is I8");
    release(&s);

    /* rows of 48 (hidden 48): an I8 matrix cannot be Q8_0 */
    {
        tinfer_llama_config c48 = c;
        c48.n_embd = 48;
        c48.n_head = 3;
        c48.n_head_kv = 3;
        memset(&s, 0, sizeof s);
        add(&s, "model.embed_tokens.weight", TINFER_DTYPE_BF16, V, 48);
        add(&s, "model.norm.weight", TINFER_DTYPE_BF16, 48, 0);
        add(&s, "lm_head.weight", TINFER_DTYPE_I8, V, 48);
        add(&s, "lm_head.weight_scale", TINFER_DTYPE_F16, V, 1);
        expect_bad(&s, &c48, "lm_head.weight", "multiple of 32");
        release(&s);
    }
    if (g_fail) fprintf(stderr, "test_q8_load: %d failure(s)\n", g_fail);
    else printf("test_q8_load: all checks passed\n");
    return g_fail ? 1 : 0;
}

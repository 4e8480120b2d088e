/*
 * test_cuda_plan.c — the CUDA backend's memory plan (models/cuda_plan.h), on the host: the
 * weight bytes of SmolLM2-135M and Llama-3-8B worked out by hand, a context's buffers aligned,
 * disjoint and inside the total, and sizes that overflow refused rather than wrapped.
 */
#include "models/cuda_plan.h"
#include "test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static tinfer_llama_config config(int E, int L, int H, int Hkv, int D, int F, int V, bool tie) {
    tinfer_llama_config c;
    memset(&c, 0, sizeof c);
    c.n_embd = E, c.n_layer = L, c.n_head = H, c.n_head_kv = Hkv, c.head_dim = D, c.n_ff = F;
    c.n_vocab = V, c.tie_word_embeddings = tie;
    return c;
}

static size_t up(size_t x) { return (x + 255) / 256 * 256; }

int main(void) {
    /* SmolLM2-135M: E 576, 30 layers, 9 / 3 heads of 64, F 1536, V 49152, tied. Per layer:
     * two norms (576 x 2 B = 1152 -> 1280 aligned), QKV 960 x 576, O 576 x 576, gate|up
     * 3072 x 576, down 576 x 1536 (all multiples of 256 B); embedding 49152 x 576 once. */
    tinfer_llama_config s = config(576, 30, 9, 3, 64, 1536, 49152, true);
    size_t layer = 2 * up(1152) + (960 + 576 + 3072 + 1536) * (size_t)576 * 2;
    size_t want = (size_t)49152 * 576 * 2 + up(1152) + 30 * layer;
    size_t got = tinfer_cuda_weight_bytes(&s, false, false);
    CHECK(got == want, "SmolLM2 weights %zu, want %zu", got, want);
    CHECK(got > 269000000 && got < 271000000, "SmolLM2 ~270 MB of BF16: %zu", got);
    /* Qwen2-style biases add one aligned QKV vector per layer */
    CHECK(tinfer_cuda_weight_bytes(&s, true, false) == got + 30 * up(960 * 2), "qkv biases");

    /* Llama-3-8B: E 4096, 32 layers, 32 / 8 heads of 128, F 14336, V 128256, untied: 8.03e9
     * parameters, 16.06 GB in BF16 */
    tinfer_llama_config l = config(4096, 32, 32, 8, 128, 14336, 128256, false);
    got = tinfer_cuda_weight_bytes(&l, false, false);
    want = 2 * (size_t)128256 * 4096 * 2 + up(8192) +
           32 * (2 * up(8192) + ((size_t)6144 * 4096 + (size_t)4096 * 4096 + (size_t)28672 * 4096 +
                                 (size_t)4096 * 14336) *
                                    2);
    CHECK(got == want, "Llama-3-8B weights %zu, want %zu", got, want);
    CHECK(got > 16000000000u && got < 16100000000u, "Llama-3-8B ~16.06 GB: %zu", got);

    /* a context: 64 sequences x 256 tokens of SmolLM2, 512 tokens a step, 64 logits rows */
    tinfer_cuda_ctx_plan p;
    CHECK(tinfer_cuda_ctx_plan_make(&s, 64, 256, 512, 64, 64, 12345, &p), "plan");
    const size_t kv = (size_t)64 * 30 * 256 * 192 * 2; /* one cache: BF16 [64][30][256][192] */
    CHECK(p.kv_bytes == 2 * kv, "KV bytes %zu, want %zu", p.kv_bytes, 2 * kv);
    const size_t off[] = {p.k,   p.v,      p.x,   p.xb,  p.qkv,  p.att, p.act,
                          p.nss, p.logits, p.ids, p.amx, p.meta, p.ws};
    const size_t len[] = {kv,
                          kv,
                          512 * 576 * 4,
                          512 * 576 * 2,
                          512 * 960 * 2,
                          512 * 576 * 2,
                          512 * 1536 * 2,
                          (size_t)60 * 512 * 2 * 8, /* 2 split RMSNorms a layer, 2 words a token */
                          (size_t)64 * 49152 * 4,
                          512 * 4,
                          512 * 2 * 8, /* the split argmax's two words a row */
                          p.m_count * 4,
                          12345};
    CHECK(p.nss_slots == 60, "split RMSNorm slots %d", (int)p.nss_slots);
    for (int i = 0; i < 13; i++) {
        CHECK(off[i] % 256 == 0, "buffer %d at %zu not 256-byte aligned", i, off[i]);
        CHECK(off[i] + len[i] <= p.total, "buffer %d ends past the total", i);
        if (i > 0) CHECK(off[i - 1] + len[i - 1] <= off[i], "buffers %d and %d overlap", i - 1, i);
    }
    CHECK(p.max_tiles == 512 / 64 + 64, "tiles %d", (int)p.max_tiles);
    CHECK(p.m_dec + 512 == p.m_count && p.m_tiles + 3 * (size_t)p.max_tiles == p.m_dec,
          "metadata layout");
    /* a context that cannot exist: refused, not wrapped */
    tinfer_llama_config huge = config(1 << 20, 1 << 20, 1 << 10, 1 << 10, 1 << 10, 8, 8, true);
    CHECK(!tinfer_cuda_ctx_plan_make(&huge, 1 << 30, 1 << 30, 8, 1, 64, 0, &p), "overflow taken");
    if (test_failures) return 1;
    printf("cuda plan: ok\n");
    return 0;
}

/*
 * gguf_build.h — the byte writer the converter tests build their GGUF files with (header-only):
 * a growing buffer and GGUF's little-endian scalars, strings and key/value entries.
 */
#ifndef TINFER_TESTS_GGUF_BUILD_H
#define TINFER_TESTS_GGUF_BUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 32 /* GGUF default alignment (ggml docs/gguf.md) */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void str(buf *b, const char *s) {
    u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void kv_u32(buf *b, const char *k, uint32_t v) {
    str(b, k);
    u32(b, 4 /* GGUF u32 */);
    u32(b, v);
}
static void kv_str(buf *b, const char *k, const char *v) {
    str(b, k);
    u32(b, 8 /* string */);
    str(b, v);
}

/* The tiny test model's hyperparameters and tokenizer kind (8 key/value pairs): 1 layer, hidden
 * 32, ffn 32, 2 heads / 1 KV head, context 64, a GPT-2 byte-level tokenizer. */
static void kv_tiny_llama(buf *b) {
    kv_u32(b, "llama.block_count", 1);
    kv_u32(b, "llama.context_length", 64);
    kv_u32(b, "llama.embedding_length", 32);
    kv_u32(b, "llama.feed_forward_length", 32);
    kv_u32(b, "llama.attention.head_count", 2);
    kv_u32(b, "llama.attention.head_count_kv", 1);
    kv_str(b, "tokenizer.ggml.model", "gpt2");
    kv_str(b, "tokenizer.ggml.pre", "smollm");
}

#endif

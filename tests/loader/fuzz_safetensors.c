/*
 * fuzz_safetensors.c — libFuzzer target for the loader's two parsers of untrusted bytes.
 * Each input is parsed as a safetensors image (tinfer_st_open_memory) and, when that succeeds,
 * every tensor is walked: its first and last data bytes are read (so AddressSanitizer flags any
 * view that escapes the buffer, which libFuzzer allocates at exactly `size` bytes) and the
 * invariants the model loader relies on are checked (lookups by name, shape x dtype = bytes).
 * The same bytes are then parsed as config.json (tinfer_config_parse), whose accepted results
 * must satisfy the documented ranges. A broken invariant aborts: libFuzzer reports it as a crash.
 * Built with clang -fsanitize=fuzzer,address,undefined (tests/loader/tests.cmake).
 */
#include "config.h"
#include "safetensors.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ASSERT(c)                                                                             \
    do {                                                                                           \
        if (!(c)) abort();                                                                         \
    } while (0)

static volatile uint8_t g_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tinfer_err err;
    tinfer_st_set *set = NULL;
    tinfer_status st = tinfer_st_open_memory(data, size, "fuzz", &set, &err);
    if (st == TINFER_OK) {
        int64_t n = tinfer_st_count(set);
        for (int64_t i = 0; i < n; i++) {
            const tinfer_tensor_view *v = tinfer_st_at(set, i);
            FUZZ_ASSERT(v && v->name && tinfer_st_find(set, v->name) == v);
            FUZZ_ASSERT(v->n_dims >= 0 && v->n_dims <= TINFER_MAX_DIMS);
            int64_t prod = 1;
            for (int32_t d = 0; d < v->n_dims; d++) {
                FUZZ_ASSERT(v->shape[d] >= 0);
                prod *= v->shape[d];
            }
            FUZZ_ASSERT(prod == v->n_elems);
            FUZZ_ASSERT((uint64_t)v->n_elems * tinfer_dtype_size(v->dtype) == v->n_bytes);
            const uint8_t *p = v->data;
            FUZZ_ASSERT(p >= data && p + v->n_bytes <= data + size);
            if (v->n_bytes) g_sink ^= p[0] ^ p[v->n_bytes - 1];
        }
        const tinfer_tensor_view *got = NULL;
        if (n > 0) {
            const tinfer_tensor_view *v = tinfer_st_at(set, 0);
            FUZZ_ASSERT(tinfer_st_get(set, v->name, v->n_dims, v->shape, &got, &err) == TINFER_OK &&
                        got == v);
        }
        tinfer_st_close(set);
    } else {
        FUZZ_ASSERT(set == NULL && st < 0 && memchr(err.msg, '\0', sizeof err.msg));
    }

    tinfer_llama_config cfg;
    if (tinfer_config_parse((const char *)data, size, "fuzz.json", &cfg, &err) == TINFER_OK) {
        FUZZ_ASSERT(cfg.n_embd > 0 && cfg.n_layer > 0 && cfg.n_head > 0 && cfg.n_head_kv > 0);
        FUZZ_ASSERT(cfg.n_head % cfg.n_head_kv == 0 && cfg.head_dim > 0 && cfg.head_dim % 2 == 0);
        FUZZ_ASSERT(cfg.n_ff > 0 && cfg.n_vocab > 0 && cfg.n_ctx_train > 0);
        FUZZ_ASSERT(cfg.n_eos >= 0 && cfg.n_eos <= TINFER_MAX_EOS);
        for (int32_t i = 0; i < cfg.n_eos; i++)
            FUZZ_ASSERT(cfg.eos_ids[i] >= 0 && cfg.eos_ids[i] < cfg.n_vocab);
        FUZZ_ASSERT(cfg.bos_id >= -1 && cfg.bos_id < cfg.n_vocab);
        FUZZ_ASSERT(cfg.rms_norm_eps > 0.0f && cfg.rope_theta > 0.0f);
    }
    return 0;
}

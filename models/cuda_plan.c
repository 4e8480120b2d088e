/*
 * cuda_plan.c — the CUDA backend's memory plan (cuda_plan.h): host arithmetic only, built in
 * every configuration so that it is tested where there is no GPU.
 */
#include "models/cuda_plan.h"

static size_t align_up(size_t x) {
    return (x + TINFER_CUDA_ALIGN - 1) / TINFER_CUDA_ALIGN * TINFER_CUDA_ALIGN;
}

/* a * b * c bytes, false on overflow */
static bool mul3(size_t a, size_t b, size_t c, size_t *out) {
    if (a && b > SIZE_MAX / a) return false;
    size_t ab = a * b;
    if (ab && c > SIZE_MAX / ab) return false;
    *out = ab * c;
    return true;
}

size_t tinfer_cuda_weight_bytes(const tinfer_llama_config *cfg, bool qkv_bias, bool o_bias) {
    const size_t E = (size_t)cfg->n_embd, Q = (size_t)cfg->n_head * (size_t)cfg->head_dim,
                 KV = (size_t)cfg->n_head_kv * (size_t)cfg->head_dim, F = (size_t)cfg->n_ff,
                 V = (size_t)cfg->n_vocab, QKV = Q + 2 * KV, b = 2 /* BF16 */;
    size_t layer = align_up(E * b) + align_up(QKV * E * b) + align_up(E * Q * b) + align_up(E * b) +
                   align_up(2 * F * E * b) + align_up(E * F * b);
    if (qkv_bias) layer += align_up(QKV * b);
    if (o_bias) layer += align_up(E * b);
    const size_t Ve = cfg->n_embd_rows > 0 ? (size_t)cfg->n_embd_rows : V; /* embedding rows */
    size_t total = align_up(Ve * E * b) + align_up(E * b) + (size_t)cfg->n_layer * layer;
    if (!cfg->tie_word_embeddings) total += align_up(V * E * b);
    return total;
}

int32_t tinfer_cuda_max_attn_tiles(int32_t n_batch, int32_t n_seq, int32_t tile) {
    return (n_batch + tile - 1) / tile + n_seq;
}

bool tinfer_cuda_ctx_plan_make(const tinfer_llama_config *cfg, int32_t n_seq, int32_t n_ctx,
                               int32_t n_batch, int32_t n_logits, int32_t attn_tile,
                               size_t ws_bytes, tinfer_cuda_ctx_plan *p) {
    const size_t E = (size_t)cfg->n_embd, Q = (size_t)cfg->n_head * (size_t)cfg->head_dim,
                 KV = (size_t)cfg->n_head_kv * (size_t)cfg->head_dim, F = (size_t)cfg->n_ff,
                 V = (size_t)cfg->n_vocab, nb = (size_t)n_batch;
    size_t cache = 0; /* one of K / V */
    if (!mul3((size_t)n_seq * (size_t)cfg->n_layer, (size_t)n_ctx, KV * 2, &cache)) return false;
    size_t at = 0;
#define TAKE(field, bytes)                                                                         \
    do {                                                                                           \
        p->field = at;                                                                             \
        at += align_up(bytes);                                                                     \
    } while (0)
    TAKE(k, cache);
    TAKE(v, cache);
    p->kv_bytes = at;
    TAKE(x, nb * E * 4);
    TAKE(xb, nb * E * 2);
    TAKE(qkv, nb * (Q + 2 * KV) * 2);
    TAKE(att, nb * Q * 2);
    TAKE(act, nb * F * 2);
    p->nss_slots = 2 * cfg->n_layer;
    TAKE(nss, (size_t)p->nss_slots * nb * 2 * 8);
    p->act_bytes = at - p->kv_bytes;
    size_t logits = 0;
    if (!mul3((size_t)n_logits, V, 4, &logits)) return false;
    TAKE(logits, logits);
    p->logits_bytes = align_up(logits);
    p->ids_count = nb > (size_t)(TINFER_CUDA_GREEDY_STEPS + 1) * (size_t)n_seq
                       ? nb
                       : (size_t)(TINFER_CUDA_GREEDY_STEPS + 1) * (size_t)n_seq;
    TAKE(ids, p->ids_count * 4);
    TAKE(amx, nb * 2 * 8); /* tinfer_op_cuda_argmax_split's words, a row's two */
    p->max_tiles = tinfer_cuda_max_attn_tiles(n_batch, n_seq, attn_tile);
    p->m_tok = 0;
    p->m_pos = nb;
    p->m_seq = 2 * nb;
    p->m_out = 3 * nb;
    p->m_tiles = 4 * nb;
    p->m_dec = 4 * nb + 3 * (size_t)p->max_tiles;
    p->m_count = p->m_dec + nb;
    p->meta_bytes = align_up(p->m_count * 4);
    TAKE(meta, p->m_count * 4);
    p->ws_bytes = align_up(ws_bytes);
    TAKE(ws, ws_bytes);
#undef TAKE
    p->total = at;
    return true;
}

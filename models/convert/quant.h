/*
 * quant.h — ggml block dequantization and the Llama Q/K row un-permutation.
 *
 * Supported tensor types: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (block layouts in
 * quant.c). n must be a whole number of blocks (the GGUF reader guarantees it per row).
 */
#ifndef TINFER_CONVERT_QUANT_H
#define TINFER_CONVERT_QUANT_H

#include <stdbool.h>
#include <stdint.h>

bool quant_supported(uint32_t ggml_type);

/* Dequantizes n values of type ggml_type from src into dst. Returns false for an unsupported
 * type or an n that is not a whole number of blocks (nothing written). */
bool quant_dequantize(uint32_t ggml_type, const uint8_t *src, int64_t n, float *dst);

/* GGUF stores Llama q_proj/k_proj rows permuted for adjacent-pair RoPE (llama.cpp
 * convert_hf_to_gguf.py LlamaModel.permute: reshape(n_head, 2, hd/2, ...).swapaxes(1, 2)).
 * HF rotate-half RoPE wants them back: HF row (h*hd + j*hd/2 + i) = GGUF row (h*hd + 2*i + j),
 * i < hd/2, j in {0, 1}. Returns the GGUF row holding HF row hf_row; head_dim must be even. */
static inline int64_t quant_qk_src_row(int64_t hf_row, int64_t head_dim) {
    int64_t half = head_dim / 2, h = hf_row / head_dim, rem = hf_row % head_dim;
    int64_t j = rem / half, i = rem % half;
    return h * head_dim + 2 * i + j;
}

#endif

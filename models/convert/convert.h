/*
 * convert.h — pieces of tinfer-convert (GGUF -> HF directory) shared between its files.
 *
 * convert.c: command line, output directory handling (build in OUT.tmp, then rename).
 * hf_model.c: hyper-parameters, config.json, generation_config.json, model.safetensors.
 * hf_tokenizer.c: tokenizer.json, tokenizer_config.json.
 */
#ifndef TINFER_CONVERT_CONVERT_H
#define TINFER_CONVERT_CONVERT_H

#include <stdbool.h>
#include <stdint.h>

#include "gguf.h"

/* Bump when the converter's output changes: scripts/get-model.sh re-converts on a mismatch. */
#define TINFER_CONVERT_VERSION 2

typedef struct conv_hparams {
    int64_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_ctx, n_vocab;
    double rope_theta, rms_eps;
    bool tied;                         /* no output.weight: lm_head = embed_tokens */
    int64_t bos_id, eos_id, unk_id, pad_id; /* -1 when absent */
} conv_hparams;

tinfer_status conv_read_hparams(const gguf_file *f, conv_hparams *hp, tinfer_err *err);

/* Maps a GGUF tensor name to its HF name; *qk_heads is the head count whose RoPE row
 * permutation must be undone (0 = none). Returns false for an unknown name. */
bool conv_hf_name(const char *gguf_name, const conv_hparams *hp, char *out, size_t cap,
                  int64_t *qk_heads);

/* What to write: the float dtype of the tensors kept unquantized (f32, else BF16); q8: the
 * projection matrices (rows a multiple of 32) as Q8_0 (base/q8_0.h; Q8_0 GGUF blocks copied as
 * they are, other types dequantized and quantized); q8_lm_head: the LM head too (a tied head
 * is then written as its own lm_head.weight and the config unties it). */
typedef struct conv_opts {
    bool f32, q8, q8_lm_head;
} conv_opts;

tinfer_status conv_write_config(const gguf_file *f, const conv_hparams *hp, const conv_opts *o,
                                const char *dir, tinfer_err *err);
tinfer_status conv_write_safetensors(const gguf_file *f, const conv_hparams *hp,
                                     const conv_opts *o, const char *path, tinfer_err *err);
tinfer_status conv_write_tokenizer(const gguf_file *f, const conv_hparams *hp, const char *dir,
                                   tinfer_err *err);

/* Writes text + "\n" to dir/name. */
tinfer_status conv_write_text(const char *dir, const char *name, const char *text, tinfer_err *err);
/* Shortest decimal that reads back as the same float32 (1e-05, not 9.99999974e-06). */
double conv_f32_shortest(double v);

#endif

/* embed.c — the runtime inside your own program: load, prompt, greedy tokens, text. Links only
 * libtinfer (public header tinfer.h). Build: cc embed.c -Iinclude -Lbuild/lib -ltinfer ...;
 * usage: tinfer-embed DIR "prompt" */
#include "tinfer.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3) return fprintf(stderr, "usage: %s DIR PROMPT\n", argv[0]), 2;
    tinfer_model *m;
    tinfer_context *ctx;
    tinfer_model_params mp = tinfer_model_default_params();
    tinfer_context_params cp = tinfer_context_default_params();
    if (tinfer_model_load(argv[1], &mp, &m) || tinfer_context_init(m, &cp, &ctx))
        return fprintf(stderr, "error: %s\n", tinfer_last_error()), 1;
    tinfer_token tok[1024];
    int32_t n = 0, pos[1024], seq[1024] = {0};
    if (tinfer_tokenize(m, argv[2], strlen(argv[2]), TINFER_TOKENIZE_ADD_SPECIAL, tok, 1024, &n))
        return fprintf(stderr, "error: %s\n", tinfer_last_error()), 1;
    for (int32_t i = 0; i < n; i++)
        pos[i] = i;
    tinfer_batch b = {n, tok, pos, seq, NULL}; /* the whole prompt; logits of its last token */
    tinfer_detok_stream ds = {0};              /* prints whole UTF-8 characters only */
    for (int step = 0; step < 32 && tinfer_decode(ctx, &b) == TINFER_OK; step++) {
        const float *lg = tinfer_get_logits(ctx, b.n_tokens - 1);
        tinfer_token best = 0; /* greedy: the most likely next token */
        for (int32_t v = 1; v < tinfer_model_n_vocab(m); v++)
            best = lg[v] > lg[best] ? v : best;
        if (tinfer_token_is_eog(m, best)) break;
        char text[256];
        size_t len;
        if (tinfer_detok_stream_push(m, &ds, best, 0, text, sizeof text, &len) == TINFER_OK)
            fwrite(text, 1, len, stdout);
        tok[0] = best, pos[0] = n + step, b.n_tokens = 1; /* feed it back: a 1-token batch */
    }
    putchar('\n');
    tinfer_context_free(ctx);
    tinfer_model_free(m);
    return 0;
}

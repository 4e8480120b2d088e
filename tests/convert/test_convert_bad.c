/*
 * test_convert_bad.c — tinfer-convert on hostile / malformed GGUF files.
 *
 * Usage: test_convert_bad PATH/TO/tinfer-convert SCRATCH_DIR
 *
 * A builder writes a complete tiny Llama GGUF (1 layer, hidden 32, 2 heads of 16, 1 KV head,
 * vocab 4, F32 tensors). The unmodified file must convert (exit 0, files present): the positive
 * control that shows the failures below come from the one field each case breaks. Each bad case
 * must exit with status 1, print exactly one line "error: ..." on stderr that names the input file
 * and contains a case-specific phrase, and leave no output directory behind.
 *
 * Then a deterministic mutation loop (fixed seed, printed) flips random bytes of the valid file or
 * truncates it, and runs the parser (gguf_open_mem) and the whole conversion in-process: every outcome must be
 * either success or an error status with a one-line message naming the file. Run it under
 * -DTINFER_ASAN=ON to turn any out-of-bounds read into a failure.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include "convert.h"
#include "gguf_build.h"


/* What each case breaks (0 / NULL = leave valid). */
typedef struct spec {
    const char *magic;
    uint64_t tensor_count; /* override */
    uint64_t kv_count;     /* override */
    uint64_t first_key_len; /* override of the first key's length */
    uint32_t q_type;       /* ggml type of blk.0.attn_q.weight (bytes sized as F32 unless F64) */
    uint32_t q_ndims;      /* n_dims written for blk.0.attn_q.weight (extra dims are 1) */
    uint64_t q_offset;     /* override of blk.0.attn_q.weight's data offset */
    uint64_t token_array_count; /* override of tokenizer.ggml.tokens' count */
    int nest_depth;        /* > 0: add a key holding arrays nested this deep */
    const char *arch;
    size_t truncate_to;    /* > 0: cut the file to this many bytes */
} spec;

typedef struct tdesc {
    const char *name;
    uint64_t ne0, ne1; /* ne1 = 0: 1-D */
} tdesc;

static const tdesc TENSORS[] = {
    {"token_embd.weight", 32, 4},       {"output_norm.weight", 32, 0},
    {"blk.0.attn_norm.weight", 32, 0},  {"blk.0.attn_q.weight", 32, 32},
    {"blk.0.attn_k.weight", 32, 16},    {"blk.0.attn_v.weight", 32, 16},
    {"blk.0.attn_output.weight", 32, 32}, {"blk.0.ffn_norm.weight", 32, 0},
    {"blk.0.ffn_gate.weight", 32, 32},  {"blk.0.ffn_up.weight", 32, 32},
    {"blk.0.ffn_down.weight", 32, 32},
};
enum { NT = sizeof TENSORS / sizeof TENSORS[0] };

static buf build(const spec *s) {
    buf b = {0};
    put(&b, s->magic ? s->magic : "GGUF", 4);
    u32(&b, 3);
    u64(&b, s->tensor_count ? s->tensor_count : NT);
    int nkv = 11 + (s->nest_depth > 0);
    u64(&b, s->kv_count ? s->kv_count : (uint64_t)nkv);
    /* general.architecture, possibly with a lying key length */
    u64(&b, s->first_key_len ? s->first_key_len : strlen("general.architecture"));
    put(&b, "general.architecture", strlen("general.architecture"));
    u32(&b, 8);
    str(&b, s->arch ? s->arch : "llama");
    kv_tiny_llama(&b);
    /* tokens: 4 byte-level strings, merges: one */
    str(&b, "tokenizer.ggml.tokens");
    u32(&b, 9);
    u32(&b, 8);
    u64(&b, s->token_array_count ? s->token_array_count : 4);
    const char *toks[4] = {"<|endoftext|>", "a", "b", "ab"};
    for (int i = 0; i < 4; i++) str(&b, toks[i]);
    str(&b, "tokenizer.ggml.merges");
    u32(&b, 9);
    u32(&b, 8);
    u64(&b, 1);
    str(&b, "a b");
    if (s->nest_depth > 0) {
        str(&b, "test.nested");
        u32(&b, 9);
        for (int d = 1; d < s->nest_depth; d++) {
            u32(&b, 9); /* element type: array */
            u64(&b, 1);
        }
        u32(&b, 4); /* innermost: one u32 */
        u64(&b, 1);
        u32(&b, 7);
    }
    uint64_t off = 0;
    for (int i = 0; i < NT; i++) {
        const tdesc *t = &TENSORS[i];
        bool q = strcmp(t->name, "blk.0.attn_q.weight") == 0;
        uint32_t type = q ? s->q_type : 0;
        uint32_t nd = q && s->q_ndims ? s->q_ndims : t->ne1 ? 2 : 1;
        str(&b, t->name);
        u32(&b, nd);
        u64(&b, t->ne0);
        if (nd >= 2) u64(&b, t->ne1 ? t->ne1 : 1);
        for (uint32_t d = 2; d < nd; d++) u64(&b, 1);
        u32(&b, type);
        u64(&b, q && s->q_offset ? s->q_offset : off);
        uint64_t nbytes = t->ne0 * (t->ne1 ? t->ne1 : 1) * (type == 28 /* F64 */ ? 8 : 4);
        off += (nbytes + ALIGN - 1) / ALIGN * ALIGN;
    }
    while (b.n % ALIGN) put(&b, "", 1);
    /* data: small distinct values so a conversion has something real to write */
    for (uint64_t i = 0; i < off / 4; i++) {
        float v = (float)(i % 7) * 0.25f;
        put(&b, &v, 4);
    }
    if (s->truncate_to && s->truncate_to < b.n) b.n = s->truncate_to;
    return b;
}

static int failures;

static void write_file(const char *path, const buf *b) {
    FILE *f = fopen(path, "wb");
    if (!f || (b->n && fwrite(b->p, 1, b->n, f) != b->n) || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* Runs conv IN OUT; returns the exit status (or -1) and the stderr text in err. */
static int run(const char *conv, const char *in, const char *out, char *err, size_t cap,
               const char *errpath) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) _exit(126);
        dup2(fd, 2);
        int dn = open("/dev/null", O_WRONLY);
        if (dn >= 0) dup2(dn, 1);
        execl(conv, conv, in, out, (char *)NULL);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    FILE *f = fopen(errpath, "rb");
    size_t n = f ? fread(err, 1, cap - 1, f) : 0;
    if (f) fclose(f);
    err[n] = 0;
    return WEXITSTATUS(status);
}

static bool is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static void expect_error(const char *conv, const char *dir, const char *name, const spec *s,
                         const char *phrase) {
    char in[1024], out[1024], errpath[1024], err[4096];
    snprintf(in, sizeof in, "%s/%s.gguf", dir, name);
    snprintf(out, sizeof out, "%s/%s.out", dir, name);
    snprintf(errpath, sizeof errpath, "%s/%s.stderr", dir, name);
    buf b = build(s);
    write_file(in, &b);
    free(b.p);
    int rc = run(conv, in, out, err, sizeof err, errpath);
    size_t len = strlen(err);
    const char *nl = strchr(err, '\n');
    bool one_line = nl && nl == err + len - 1;
    bool ok = rc == 1 && strncmp(err, "error: ", 7) == 0 && one_line && strstr(err, in) &&
              strstr(err, phrase) && !is_dir(out);
    if (!ok) {
        failures++;
        fprintf(stderr, "FAIL %s: rc=%d, want 1, an 'error: ' line naming the file and '%s'; "
                        "stderr: %s", name, rc, phrase, err);
    } else {
        printf("ok   %-22s %s", name, err);
    }
}

/* xorshift64 (Marsaglia 2003): a fixed, portable sequence */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

enum { MUTATIONS = 3000 }; /* ~1 s; enough to reach every header field of the 27 KB file */

static void mutate(const char *dir) {
    const uint64_t seed = 0x9E3779B97F4A7C15ull;
    uint64_t rs = seed;
    spec s = {0};
    buf base = build(&s);
    char in[1024], out[1024];
    snprintf(in, sizeof in, "%s/mutant.gguf", dir);
    snprintf(out, sizeof out, "%s/mutant.out", dir);
    mkdir(out, 0755);
    int n_ok = 0, n_err = 0;
    /* mutate only the metadata region + the start of the data (the rest is float payload) */
    size_t meta = 1024 < base.n ? 1024 : base.n;
    for (int it = 0; it < MUTATIONS; it++) {
        buf m = {0};
        put(&m, base.p, base.n);
        int kind = (int)(rng_next(&rs) % 4);
        if (kind == 0) {
            m.n = (size_t)(rng_next(&rs) % base.n);
        } else {
            int nflip = 1 + (int)(rng_next(&rs) % 8);
            for (int k = 0; k < nflip; k++) {
                size_t pos = (size_t)(rng_next(&rs) % meta);
                m.p[pos] = kind == 1 ? (uint8_t)rng_next(&rs) : kind == 2 ? 0xFF : (uint8_t)(m.p[pos] ^ 0x80);
            }
        }
        tinfer_err err = {{0}};
        gguf_file *f = NULL;
        conv_hparams hp;
        char stp[1100];
        snprintf(stp, sizeof stp, "%s/model.safetensors", out);
        tinfer_status st = gguf_open_mem(m.p, m.n, in, &f, &err);
        if (!st) st = conv_read_hparams(f, &hp, &err);
        if (!st) st = conv_write_config(f, &hp, &(conv_opts){0}, out, &err);
        if (!st) st = conv_write_tokenizer(f, &hp, out, &err);
        if (!st) st = conv_write_safetensors(f, &hp, &(conv_opts){0}, stp, &err);
        gguf_close(f);
        free(m.p);
        if (st == TINFER_OK) {
            n_ok++;
        } else if (st < 0 && err.msg[0] && !strchr(err.msg, '\n') && strstr(err.msg, in)) {
            n_err++;
        } else {
            failures++;
            fprintf(stderr, "FAIL mutation %d (seed %llu): status %d, message '%s'\n", it,
                    (unsigned long long)seed, (int)st, err.msg);
        }
    }
    free(base.p);
    printf("ok   %d mutations (seed 0x%llx): %d converted, %d rejected with a message\n",
           MUTATIONS, (unsigned long long)seed, n_ok, n_err);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s TINFER_CONVERT SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    const char *conv = argv[1], *dir = argv[2];
    mkdir(dir, 0755);

    /* positive control */
    {
        char in[1024], out[1024], errpath[1024], err[4096], cfg[1100];
        snprintf(in, sizeof in, "%s/valid.gguf", dir);
        snprintf(out, sizeof out, "%s/valid.out", dir);
        snprintf(errpath, sizeof errpath, "%s/valid.stderr", dir);
        snprintf(cfg, sizeof cfg, "%s/model.safetensors", out);
        spec s = {0};
        buf b = build(&s);
        write_file(in, &b);
        free(b.p);
        char cmd[2200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
        if (system(cmd) != 0) return 2;
        int rc = run(conv, in, out, err, sizeof err, errpath);
        struct stat sb;
        if (rc != 0 || stat(cfg, &sb) != 0) {
            fprintf(stderr, "FAIL valid tiny GGUF did not convert (rc=%d): %s", rc, err);
            return 1;
        }
        printf("ok   valid tiny GGUF converts\n");
        /* converting again into an existing directory without --force must refuse */
        rc = run(conv, in, out, err, sizeof err, errpath);
        if (rc != 1 || !strstr(err, "already exists")) {
            fprintf(stderr, "FAIL existing OUTDIR without --force: rc=%d %s", rc, err);
            failures++;
        }
    }

    spec s;
    {
        char in[1024], out[1024], errpath[1024], err[4096];
        snprintf(in, sizeof in, "%s/empty.gguf", dir);
        snprintf(out, sizeof out, "%s/empty.out", dir);
        snprintf(errpath, sizeof errpath, "%s/empty.stderr", dir);
        buf e = {0};
        write_file(in, &e);
        int rc = run(conv, in, out, err, sizeof err, errpath);
        if (rc != 1 || strncmp(err, "error: ", 7) || !strstr(err, "too small") || !strstr(err, in)) {
            failures++;
            fprintf(stderr, "FAIL empty: rc=%d %s", rc, err);
        } else {
            printf("ok   %-22s %s", "empty", err);
        }
    }
    s = (spec){0}; s.magic = "GGUX";
    expect_error(conv, dir, "bad_magic", &s, "bad magic");
    s = (spec){0}; s.truncate_to = 20;
    expect_error(conv, dir, "truncated_header", &s, "too small");
    s = (spec){0}; s.truncate_to = 300; /* inside the value of the 7th key */
    s.tensor_count = 1;   /* else the count check fires first */
    expect_error(conv, dir, "truncated_kv", &s, "llama.attention.head_count_kv");
    s = (spec){0}; s.tensor_count = (uint64_t)1 << 60;
    expect_error(conv, dir, "tensor_count_absurd", &s, "tensor_count");
    s = (spec){0}; s.kv_count = (uint64_t)1 << 62;
    expect_error(conv, dir, "kv_count_absurd", &s, "kv_count");
    s = (spec){0}; s.first_key_len = 1000000000;
    expect_error(conv, dir, "string_past_eof", &s, "past end of file");
    s = (spec){0}; s.token_array_count = (uint64_t)1 << 61;
    expect_error(conv, dir, "array_count_absurd", &s, "tokenizer.ggml.tokens");
    s = (spec){0}; s.nest_depth = 100;
    expect_error(conv, dir, "arrays_nested_deep", &s, "nested too deeply");
    s = (spec){0}; s.q_offset = (uint64_t)1 << 40;
    expect_error(conv, dir, "offset_past_eof", &s, "blk.0.attn_q.weight");
    s = (spec){0}; s.q_offset = 4;
    expect_error(conv, dir, "offset_unaligned", &s, "not a multiple of the alignment");
    s = (spec){0}; s.q_type = 99;
    expect_error(conv, dir, "unknown_ggml_type", &s, "unknown ggml type 99");
    s = (spec){0}; s.q_type = 28; /* F64: a real ggml type the converter does not dequantize */
    expect_error(conv, dir, "unsupported_ggml_type", &s, "unsupported ggml type 28");
    s = (spec){0}; s.q_ndims = 5;
    expect_error(conv, dir, "n_dims_5", &s, "n_dims 5");
    s = (spec){0}; s.q_ndims = 3; /* [32, 32, 1]: a valid GGUF, but not a matrix */
    expect_error(conv, dir, "wrong_rank", &s, "blk.0.attn_q.weight");
    s = (spec){0}; s.arch = "gpt2";
    expect_error(conv, dir, "unsupported_arch", &s, "general.architecture");

    mutate(dir);

    if (failures) {
        fprintf(stderr, "%d case(s) failed\n", failures);
        return 1;
    }
    printf("test_convert_bad: all cases passed\n");
    return 0;
}

/*
 * convert.c — tinfer-convert: GGUF (Llama family, byte-level BPE) -> HF model directory.
 *
 *   tinfer-convert [--dtype bf16|f32] [--weights float|q8_0] [--lm-head q8_0|float] [--force]
 *                  INPUT.gguf OUTDIR
 *
 * --weights q8_0 writes the projection matrices (and, unless --lm-head float, the LM head) as
 * Q8_0 (base/q8_0.h; the other tensors in --dtype). Writes config.json, generation_config.json, model.safetensors, tokenizer.json and
 * tokenizer_config.json. Atomicity: everything is written into OUTDIR.tmp (a sibling), which is
 * renamed to OUTDIR only once complete, so an interrupted run never leaves a directory that looks
 * like a finished model. With --force an existing OUTDIR is first renamed to OUTDIR.old and
 * removed after the swap. Errors: one line "error: <message>" on stderr, exit status 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convert.h"

static int fail(const char *msg) {
    fprintf(stderr, "error: %s\n", msg);
    return 1;
}

static bool exists(const char *p) {
    struct stat sb;
    return lstat(p, &sb) == 0;
}

/* Removes a directory this program created (OUTDIR.tmp / OUTDIR.old): its plain entries, then
 * itself. Non-recursive on purpose: it only ever holds the flat files we write. */
static int remove_flat_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    return rmdir(dir);
}

static int mkdir_p(const char *path) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return -1;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return (mkdir(tmp, 0755) != 0 && errno != EEXIST) ? -1 : 0;
}

static void usage(FILE *o) {
    fprintf(o, "usage: tinfer-convert [--dtype bf16|f32] [--weights float|q8_0] "
               "[--lm-head q8_0|float] [--force] INPUT.gguf OUTDIR\n"
               "       tinfer-convert --version\n"
               "  --dtype    the floating-point tensors: bf16 (default) or f32\n"
               "  --weights  float (default): every tensor in --dtype; q8_0: the projection\n"
               "             matrices as Q8_0 (Q8_0 GGUF blocks copied, other types quantized)\n"
               "  --lm-head  with --weights q8_0: q8_0 (default; a tied head becomes its own\n"
               "             tensor) or float\n");
}

int main(int argc, char **argv) {
    bool f32 = false, force = false, q8 = false, q8_head = true;
    const char *in = NULL, *outarg = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--version")) {
            printf("tinfer-convert %d\n", TINFER_CONVERT_VERSION);
            return 0;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--force")) {
            force = true;
        } else if (!strcmp(a, "--dtype")) {
            if (++i >= argc) return fail("--dtype needs a value (bf16 or f32)");
            if (!strcmp(argv[i], "f32")) f32 = true;
            else if (!strcmp(argv[i], "bf16")) f32 = false;
            else return fail("--dtype must be bf16 or f32");
        } else if (!strcmp(a, "--weights")) {
            if (++i >= argc) return fail("--weights needs a value (float or q8_0)");
            if (!strcmp(argv[i], "q8_0")) q8 = true;
            else if (!strcmp(argv[i], "float")) q8 = false;
            else return fail("--weights must be float or q8_0");
        } else if (!strcmp(a, "--lm-head")) {
            if (++i >= argc) return fail("--lm-head needs a value (q8_0 or float)");
            if (!strcmp(argv[i], "q8_0")) q8_head = true;
            else if (!strcmp(argv[i], "float")) q8_head = false;
            else return fail("--lm-head must be q8_0 or float");
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "error: unknown option '%s'\n", a);
            usage(stderr);
            return 1;
        } else if (!in) {
            in = a;
        } else if (!outarg) {
            outarg = a;
        } else {
            usage(stderr);
            return fail("too many arguments");
        }
    }
    if (!in || !outarg) {
        usage(stderr);
        return fail("need INPUT.gguf and OUTDIR");
    }

    char out[4000], tmp[4096], old[4096], msg[8600];
    if (snprintf(out, sizeof out, "%s", outarg) >= (int)sizeof out) return fail("OUTDIR too long");
    size_t ol = strlen(out);
    while (ol > 1 && out[ol - 1] == '/') out[--ol] = 0;
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    snprintf(old, sizeof old, "%s.old", out);
    if (exists(out) && !force) {
        snprintf(msg, sizeof msg, "%s already exists (use --force to replace it)", out);
        return fail(msg);
    }

    tinfer_err err = {{0}};
    gguf_file *f = NULL;
    conv_hparams hp;
    tinfer_status st = gguf_open(in, &f, &err);
    if (!st) st = conv_read_hparams(f, &hp, &err);
    if (st) {
        gguf_close(f);
        return fail(err.msg);
    }

    /* A stale OUTDIR.tmp is the leftover of an interrupted run of ours. */
    if (remove_flat_dir(tmp) != 0 && errno != ENOENT) {
        snprintf(msg, sizeof msg, "%s: cannot remove stale directory: %s", tmp, strerror(errno));
        gguf_close(f);
        return fail(msg);
    }
    if (mkdir_p(tmp) != 0) {
        snprintf(msg, sizeof msg, "%s: cannot create: %s", tmp, strerror(errno));
        gguf_close(f);
        return fail(msg);
    }
    char stpath[4200];
    snprintf(stpath, sizeof stpath, "%s/model.safetensors", tmp);
    const conv_opts opts = {f32, q8, q8 && q8_head};
    st = conv_write_config(f, &hp, &opts, tmp, &err);
    if (!st) st = conv_write_tokenizer(f, &hp, tmp, &err);
    if (!st) st = conv_write_safetensors(f, &hp, &opts, stpath, &err);
    gguf_close(f);
    if (st) {
        remove_flat_dir(tmp);
        return fail(err.msg);
    }

    if (exists(out)) {
        remove_flat_dir(old);
        if (rename(out, old) != 0) {
            snprintf(msg, sizeof msg, "%s: cannot move aside: %s", out, strerror(errno));
            remove_flat_dir(tmp);
            return fail(msg);
        }
    }
    if (rename(tmp, out) != 0) {
        snprintf(msg, sizeof msg, "%s: cannot rename to %s: %s", tmp, out, strerror(errno));
        remove_flat_dir(tmp);
        return fail(msg);
    }
    if (exists(old) && remove_flat_dir(old) != 0)
        fprintf(stderr, "warning: could not remove %s: %s\n", old, strerror(errno));
    fprintf(stderr, "tinfer-convert: wrote %s (%lld layers, vocab %lld, %s%s)\n", out,
            (long long)hp.n_layer, (long long)hp.n_vocab, f32 ? "f32" : "bf16",
            q8 ? (q8_head ? ", q8_0 matrices and lm_head" : ", q8_0 matrices") : "");
    return 0;
}

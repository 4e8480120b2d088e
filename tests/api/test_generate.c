/*
 * test_generate.c — tinfer-generate end to end on the tiny fixture model.
 *
 * Usage: test_generate FIXTURE_DIR GENERATE_BIN (FIXTURE_DIR = tests/model/fixtures/tiny-llama,
 * whose expected.json holds HF's 16 greedy tokens for its prompt; the fixture has no sampling
 * settings, so tinfer-generate decodes greedily by default, like HF).
 * Checks: stdout is exactly the detokenized HF greedy tokens (+ the final newline); the stderr
 * timing line has its documented form; --stop cuts the output right before the first occurrence
 * of the stop string (which is not printed); a stop string that never occurs changes nothing;
 * --tp 2 on the CPU gives the same text; bad --tp / --gpus values end with one error line.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"
#include "tinfer.h"

#include <cjson/cJSON.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char out_path[] = "/tmp/tinfer_gen_out_XXXXXX", err_path[] = "/tmp/tinfer_gen_err_XXXXXX";

/* Runs tinfer-generate with extra arguments (already shell-quoted); returns the exit status and
 * the captured stdout / stderr. */
static int run(const char *bin, const char *fixture, const char *prompt, const char *extra,
               char **out, size_t *n_out, char **err) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' -m '%s' -n 16 -p '%s' %s >'%s' 2>'%s'", bin, fixture, prompt,
             extra, out_path, err_path);
    int st = system(cmd);
    *out = test_read_file(out_path, n_out);
    *err = test_read_file(err_path, NULL);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s FIXTURE_DIR GENERATE_BIN\n", argv[0]);
        return 2;
    }
    const char *fixture = argv[1], *bin = argv[2];
    int fd = mkstemp(out_path);
    if (fd >= 0) close(fd);
    fd = mkstemp(err_path);
    if (fd >= 0) close(fd);

    char path[4096];
    snprintf(path, sizeof path, "%s/expected.json", fixture);
    char *json = test_read_file(path, NULL);
    cJSON *exp = json ? cJSON_Parse(json) : NULL;
    if (!exp) {
        fprintf(stderr, "cannot read %s\n", path);
        return 1;
    }
    const char *prompt = cJSON_GetObjectItem(exp, "prompt")->valuestring;
    const cJSON *g = cJSON_GetObjectItem(exp, "greedy");
    int32_t greedy[64], n_greedy = cJSON_GetArraySize(g);
    for (int32_t i = 0; i < n_greedy; i++) greedy[i] = cJSON_GetArrayItem(g, i)->valueint;
    /* prompt_ids has one more than the prompt text's tokens: <|bos|> from the post-processor */
    const int32_t n_prompt = cJSON_GetArraySize(cJSON_GetObjectItem(exp, "prompt_ids"));

    tinfer_model *m = NULL;
    if (tinfer_model_load(fixture, NULL, &m) != TINFER_OK) {
        fprintf(stderr, "load: %s\n", tinfer_last_error());
        return 1;
    }
    char want[4096];
    size_t n_want = 0;
    if (tinfer_detokenize(m, greedy, n_greedy, TINFER_DETOKENIZE_SKIP_SPECIAL, want,
                          sizeof want - 2, &n_want) != TINFER_OK) {
        fprintf(stderr, "detokenize: %s\n", tinfer_last_error());
        return 1;
    }
    want[n_want++] = '\n'; /* tinfer-generate ends its output with one newline */
    want[n_want] = '\0';
    tinfer_model_free(m);

    /* 1. greedy output and the timing line */
    char *out, *err;
    size_t n_out;
    int rc = run(bin, fixture, prompt, "", &out, &n_out, &err);
    CHECK(rc == 0, "exit status %d, stderr: %s", rc, err ? err : "");
    CHECK(out && n_out == n_want && !memcmp(out, want, n_want),
          "stdout differs from HF's greedy text (%zu vs %zu bytes)", out ? n_out : 0, n_want);
    regex_t re;
    char pat[256];
    snprintf(pat, sizeof pat,
             "^prompt %d tokens, prefill [0-9.]+ tok/s, generated %d tokens, decode [0-9.]+ "
             "tok/s\n$",
             (int)n_prompt, (int)n_greedy);
    regcomp(&re, pat, REG_EXTENDED);
    CHECK(err && regexec(&re, err, 0, NULL, 0) == 0, "timing line: %s", err ? err : "(none)");
    regfree(&re);
    if (err) printf("timing line: %s", err);
    free(out);
    free(err);

    /* 2. --stop: a 3-byte piece from the middle of the text */
    int n_stop_cases = 0;
    for (size_t at = 4; at + 3 < n_want - 1 && at < 12; at += 3) {
        char stop[4];
        memcpy(stop, want + at, 3);
        stop[3] = '\0';
        if (strchr(stop, '\'') || memchr(stop, '\0', 3) || strchr(stop, '\n')) continue;
        const char *first = strstr(want, stop);
        size_t keep = (size_t)(first - want);
        char extra[64];
        snprintf(extra, sizeof extra, "--stop '%s'", stop);
        rc = run(bin, fixture, prompt, extra, &out, &n_out, &err);
        CHECK(rc == 0, "--stop: exit status %d", rc);
        n_stop_cases++;
        CHECK(out && n_out == keep + 1 && !memcmp(out, want, keep) && out[keep] == '\n',
              "--stop at byte %zu: got %zu bytes, want the %zu before the stop string", at,
              out ? n_out : 0, keep);
        free(out);
        free(err);
    }
    CHECK(n_stop_cases > 0, "no usable stop string in the expected text");
    printf("--stop cases: %d\n", n_stop_cases);
    /* 3. a stop string that does not occur in the expected text changes nothing */
    const char *absent = "zzzzzzzz";
    CHECK(!strstr(want, absent), "precondition: '%s' occurs in the expected text", absent);
    rc = run(bin, fixture, prompt, "--stop zzzzzzzz", &out, &n_out, &err);
    CHECK(rc == 0 && out && n_out == n_want && !memcmp(out, want, n_want),
          "an absent stop string changed the output");
    free(out);
    free(err);

    /* 4. --tp 2 (the CPU's tensor-parallel shards): the same greedy text; bad values: one line
     * on stderr, exit status 1 */
    rc = run(bin, fixture, prompt, "--backend cpu --tp 2", &out, &n_out, &err);
    CHECK(rc == 0 && out && n_out == n_want && !memcmp(out, want, n_want),
          "--tp 2: exit status %d, %zu bytes of output (want HF's %zu), stderr: %s", rc,
          out ? n_out : 0, n_want, err ? err : "");
    free(out);
    free(err);
    static const char *bad[] = {"--tp 3", "--tp -1", "--tp 2x", "--gpus 0,0", "--gpus 0,,1",
                                "--backend cpu --gpus 0", "--tp 2 --backend cuda --gpus 0,99"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = run(bin, fixture, prompt, bad[i], &out, &n_out, &err);
        const char *nl = err ? strchr(err, '\n') : NULL;
        CHECK(rc == 1 && n_out == 0 && err && !strncmp(err, "error: ", 7) && nl && !nl[1],
              "%s: exit status %d, stderr '%s' (want one error line)", bad[i], rc, err ? err : "");
        if (err) printf("%-24s -> %s", bad[i], err);
        free(out);
        free(err);
    }

    unlink(out_path);
    unlink(err_path);
    cJSON_Delete(exp);
    free(json);
    return test_finish();
}

/* textfile.c — see textfile.h. */
#include "textfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tinfer_status tinfer_read_text_file(const char *path, size_t max_bytes, char **text, size_t *len,
                                    bool *missing, tinfer_err *err) {
    *text = NULL;
    *len = 0;
    *missing = false;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) {
            *missing = true;
            return TINFER_ERR_IO;
        }
        return tinfer_err_set(err, TINFER_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    /* Grow geometrically; the capacity may reach max_bytes + 1 so that a file of exactly
     * max_bytes is accepted and one byte more is not. */
    size_t cap = max_bytes < 4096 ? max_bytes + 1 : 4096, n = 0;
    char *buf = malloc(cap + 1);
    tinfer_status st = TINFER_OK;
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break; /* fread is short only at end of file or on an error */
        if (n > max_bytes) {
            st = tinfer_err_set(err, TINFER_ERR_FORMAT, "%s: larger than the %zu-byte limit",
                                path, max_bytes);
            break;
        }
        cap = cap > max_bytes / 2 ? max_bytes + 1 : cap * 2;
        char *nb = realloc(buf, cap + 1);
        if (!nb) free(buf);
        buf = nb;
    }
    if (st == TINFER_OK && !buf)
        st = tinfer_err_set(err, TINFER_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    if (st == TINFER_OK && ferror(f)) st = tinfer_err_set(err, TINFER_ERR_IO, "%s: read error", path);
    fclose(f);
    if (st != TINFER_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return TINFER_OK;
}

cJSON *tinfer_json_parse_strict(const char *text, size_t len) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) return NULL;
    for (const char *p = end; p && p < text + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(root);
            return NULL;
        }
    return root;
}

/*
 * textfile.h — reading the small text files of a model directory (config.json, index files,
 * tokenizer.json, ...) and parsing them as JSON strictly. Shared by every loader.
 */
#ifndef TINFER_TEXTFILE_H
#define TINFER_TEXTFILE_H

#include "base/error.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* Reads the whole file into a NUL-terminated buffer (free() it), failing with
 * TINFER_ERR_FORMAT "<path>: larger than the N-byte limit" past max_bytes. When the file does
 * not exist, *missing is set and TINFER_ERR_IO returned with NO message recorded: the caller
 * knows whether the file was optional and what to say. */
tinfer_status tinfer_read_text_file(const char *path, size_t max_bytes, char **text, size_t *len,
                                    bool *missing, tinfer_err *err);

/* Parses text[0, len) (text[len] == '\0') as one JSON value followed only by JSON whitespace.
 * cJSON_ParseWithLength alone stops after the first value and accepts trailing garbage; a
 * header, config or index with trailing garbage is malformed. NULL when not valid. text need
 * not be NUL-terminated. */
cJSON *tinfer_json_parse_strict(const char *text, size_t len);

#endif

#ifndef SLUICE_TOKEN_H
#define SLUICE_TOKEN_H
/*
 * The admin bearer token, read from a file or from the environment; never
 * from a flag (it would show in ps).  Buffers that held it are zeroed.
 */
#include "core/error.h"

#define TOKEN_MAX 4096 /* bytes */

/*
 * Load the token: from the file `path` (one token of 1..TOKEN_MAX bytes,
 * trailing newlines stripped) when `path` is not NULL, else from the
 * environment variable named `env` (may be NULL: none).  0 and *out = the
 * token (caller frees it with token_free), or *out = NULL when no file is
 * named and the variable is unset or empty: no token is not an error.
 * -EINVAL with `err` when the file cannot be opened, is empty, longer than
 * TOKEN_MAX or holds NUL bytes (field "admin.token_file"), or the variable
 * is longer than TOKEN_MAX (field = `env`); -ENOMEM.  *out is written only
 * on success.
 */
int token_load(const char *path, const char *env, char **out, struct sl_error *err);
/* Zero and free a token from token_load(); NULL is a no-op. */
void token_free(char *token);

#endif

#include "core/token.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int token_from_env(const char *env, char **out, struct sl_error *err)
{
	const char *v = env ? getenv(env) : NULL;
	char *copy = NULL;

	if (v && *v) {
		if (strlen(v) > TOKEN_MAX)
			return sl_fail(err, env, "token longer than %d bytes", TOKEN_MAX);
		if (!(copy = strdup(v)))
			return -ENOMEM;
	}
	*out = copy;
	return 0;
}

static int token_from_file(const char *path, char **out, struct sl_error *err)
{
	char buf[TOKEN_MAX + 2];
	char *copy;
	size_t n;
	FILE *f;
	int rc = 0;

	if (!(f = fopen(path, "rb")))
		return sl_fail(err, "admin.token_file", "cannot open %s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	if (n > TOKEN_MAX || memchr(buf, '\0', n) || n == 0) {
		rc = sl_fail(err, "admin.token_file", "%s must hold one token of 1..%d bytes", path, TOKEN_MAX);
		goto out;
	}
	if (!(copy = strdup(buf))) {
		rc = -ENOMEM;
		goto out;
	}
	*out = copy;
out:
	explicit_bzero(buf, sizeof(buf));
	return rc;
}

int token_load(const char *path, const char *env, char **out, struct sl_error *err)
{
	return path ? token_from_file(path, out, err) : token_from_env(env, out, err);
}

void token_free(char *token)
{
	if (!token)
		return;
	explicit_bzero(token, strlen(token));
	free(token);
}

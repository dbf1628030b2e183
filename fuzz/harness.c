/* The fuzz targets' shared part (fuzz/harness.h). */
#include "fuzz/harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static redisContext *redis; /* the process's connection (see harness.h) */
static char sha[41];

int fuzz_redis_port(void)
{
	const char *e = getenv("SLUICE_FUZZ_REDIS_PORT");

	return e && *e ? atoi(e) : 0;
}

redisContext *fuzz_redis(void)
{
	struct timeval tv = { 1, 0 };
	int port = fuzz_redis_port();

	if (redis)
		return redis;
	if (port <= 0) {
		fprintf(stderr, "fuzz: SLUICE_FUZZ_REDIS_PORT is not set: this target talks to a redis-server "
				"(make fuzz starts one; alone: redis-server --port P --save '' & and set it to P)\n");
		abort();
	}
	redis = redisConnectWithTimeout("127.0.0.1", port, tv);
	if (!redis || redis->err || redisSetTimeout(redis, tv) != REDIS_OK) {
		fprintf(stderr, "fuzz: cannot connect to redis-server on 127.0.0.1:%d: %s\n", port,
			redis ? redis->errstr : "out of memory");
		abort();
	}
	return redis;
}

const char *fuzz_script(const char *path)
{
	FILE *f;
	char *text;
	long n;
	redisReply *r;

	if (sha[0])
		return sha;
	if (!(f = fopen(path, "rb")) || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(text = malloc((size_t)n + 1)) || fread(text, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "fuzz: cannot read %s: %s (make fuzz-build assembles it; run from the repository root)\n",
			path, strerror(errno));
		abort();
	}
	fclose(f);
	r = redisCommand(fuzz_redis(), "SCRIPT LOAD %b", text, (size_t)n);
	free(text);
	if (!r || r->type != REDIS_REPLY_STRING || r->len != 40) {
		fprintf(stderr, "fuzz: SCRIPT LOAD %s: %s\n", path,
			r && r->type == REDIS_REPLY_ERROR ? r->str : fuzz_redis()->errstr);
		abort();
	}
	memcpy(sha, r->str, 41);
	freeReplyObject(r);
	return sha;
}

void fuzz_show(const char *label, const char *s, size_t n)
{
	fprintf(stderr, "%s (%zu bytes): \"", label, n);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(stderr, "\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			fputc(c, stderr);
		else
			fprintf(stderr, "\\%03o", c); /* octal: never swallows the next byte */
	}
	fprintf(stderr, "\"\n");
}

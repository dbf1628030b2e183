#include "core/redis_target.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void redis_target_clear(struct redis_target *t)
{
	free(t->host);
	free(t->socket);
	free(t->user);
	free(t->password);
	for (size_t i = 0; i < t->nseeds; i++)
		free(t->seeds[i].host);
	memset(t, 0, sizeof(*t));
}

/* `len` decimal digits (no sign, no space; 1..9 of them) with a value <= `max`. 0 or -EINVAL. */
static int parse_uint(const char *s, size_t len, long max, long *out)
{
	long v = 0;

	if (len == 0 || len > 9)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "host", "host:port", "[v6]" or "[v6]:port" in [p, end): 0 and *host (the caller frees it), -EINVAL or -ENOMEM. */
static int parse_hostport(const char *p, const char *end, char **host, int *port, struct sl_error *err)
{
	const char *colon;
	char *h;
	long v;

	*port = 6379;
	if (*p == '[') { /* [ipv6]:port */
		const char *rb = memchr(p, ']', (size_t)(end - p));

		if (!rb)
			return sl_fail(err, "redis", "unclosed '[' in host");
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
		if (rb + 1 < end && !colon)
			return sl_fail(err, "redis", "expected ':' after ']'");
		h = strndup(p + 1, (size_t)(rb - p - 1));
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		h = strndup(p, (size_t)((colon ? colon : end) - p));
	}
	if (!h)
		return -ENOMEM;
	if (!*h) {
		free(h);
		return sl_fail(err, "redis", "host is missing");
	}
	if (colon) {
		if (parse_uint(colon + 1, (size_t)(end - colon - 1), 65535, &v) || v == 0) {
			free(h);
			return sl_fail(err, "redis", "port must be 1..65535");
		}
		*port = (int)v;
	}
	*host = h;
	return 0;
}

int redis_url_parse(const char *url, struct redis_target *out, struct sl_error *err)
{
	struct redis_target t = { .port = 6379 };
	const char *p, *at, *slash, *comma, *end;
	long v;

	if (strncmp(url, "unix://", 7) == 0) {
		const char *q;

		p = url + 7;
		if (*p != '/')
			return sl_fail(err, "redis", "unix socket URL needs an absolute path: unix:///path/to/socket");
		q = strchr(p, '?');
		end = q ? q : p + strlen(p);
		if (q) {
			if (strncmp(q, "?db=", 4) || parse_uint(q + 4, strlen(q + 4), INT_MAX, &v))
				return sl_fail(err, "redis", "unix socket URL accepts only ?db=N");
			t.db = (int)v;
		}
		t.socket = strndup(p, (size_t)(end - p));
		if (!t.socket)
			return -ENOMEM;
		*out = t;
		return 0;
	}
	if (strncmp(url, "redis://", 8) != 0)
		return sl_fail(err, "redis", "must start with redis:// or unix:// (got \"%.40s\")", url);
	p = url + 8;
	end = p + strlen(p);
	slash = strchr(p, '/');
	at = memrchr(p, '@', (size_t)((slash ? slash : end) - p));
	if (at) {
		/* userinfo: ":password", "user:password" or "password" */
		const char *c = memchr(p, ':', (size_t)(at - p));

		if (c) {
			if (c > p && !(t.user = strndup(p, (size_t)(c - p))))
				goto oom;
			if (!(t.password = strndup(c + 1, (size_t)(at - c - 1))))
				goto oom;
		} else if (!(t.password = strndup(p, (size_t)(at - p)))) {
			goto oom;
		}
		p = at + 1;
	}
	if (slash) {
		if (parse_uint(slash + 1, strlen(slash + 1), INT_MAX, &v)) {
			redis_target_clear(&t);
			return sl_fail(err, "redis", "database must be a number: /N");
		}
		t.db = (int)v;
		end = slash;
	}
	for (const char *q = p;; q = comma + 1) {
		/* host[:port], then more of them after commas: other nodes of a cluster to try first */
		char *host = NULL;
		int port, rc;

		comma = memchr(q, ',', (size_t)(end - q));
		if (!comma)
			comma = end;
		if ((rc = parse_hostport(q, comma, &host, &port, err))) {
			redis_target_clear(&t);
			return rc;
		}
		if (q == p) {
			t.host = host;
			t.port = port;
			if (comma == end)
				break;
			continue;
		}
		if (t.nseeds == REDIS_SEEDS_MAX) {
			free(host);
			redis_target_clear(&t);
			return sl_fail(err, "redis", "at most %d more nodes after a comma", REDIS_SEEDS_MAX);
		}
		t.seeds[t.nseeds].host = host;
		t.seeds[t.nseeds++].port = port;
		if (comma == end)
			break;
	}
	if (!t.host) {
		redis_target_clear(&t);
		return sl_fail(err, "redis", "host is missing");
	}
	*out = t;
	return 0;
oom:
	redis_target_clear(&t);
	return -ENOMEM;
}

const char *redis_target_describe(const struct redis_target *t, char *buf, size_t cap)
{
	if (t->socket)
		snprintf(buf, cap, "unix:%s/%d", t->socket, t->db);
	else
		snprintf(buf, cap, "%s:%d/%d", t->host ? t->host : "?", t->port, t->db);
	return buf;
}

int listen_parse(const char *s, const char *field, char **host, int *port, struct sl_error *err)
{
	const char *colon;
	char *h;
	long v;

	if (*s == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb[1] != ':')
			return sl_fail(err, field, "must be HOST:PORT or [IPV6]:PORT");
		colon = rb + 1;
		h = strndup(s + 1, (size_t)(rb - s - 1));
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return sl_fail(err, field, "must be HOST:PORT or [IPV6]:PORT");
		h = strndup(s, (size_t)(colon - s));
	}
	if (!h)
		return -ENOMEM;
	if (!*h || parse_uint(colon + 1, strlen(colon + 1), 65535, &v)) {
		free(h);
		return sl_fail(err, field, "must be HOST:PORT with a port 0..65535");
	}
	*host = h;
	*port = (int)v;
	return 0;
}

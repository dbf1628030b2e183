#ifndef SLUICE_REDIS_TARGET_H
#define SLUICE_REDIS_TARGET_H
/*
 * Where Redis is, parsed from a URL:
 *   redis://[[user]:password@]host[:port][,host[:port]...][/db]   (host may be [IPv6];
 *            the hosts after commas are more nodes of the same cluster, tried in turn at
 *            first contact when the first does not answer; credentials and db apply to all)
 *   unix:///path/to/socket[?db=N]
 * and the admin server's listen address (HOST:PORT).
 * Knows nothing of connections (core/rconn.c) or of the config file.
 */
#include <stddef.h>

#include "core/error.h"

/* Nodes that may follow the first in a URL's host list */
#define REDIS_SEEDS_MAX 8

struct redis_target {
	char *host;      /* owned: TCP host, or NULL for a unix socket */
	int port;        /* TCP port, default 6379 */
	char *socket;    /* owned: unix socket path, or NULL */
	char *user;      /* owned: ACL user, or NULL */
	char *password;  /* owned, or NULL */
	int db;          /* SELECT index, default 0 */
	struct redis_seed {
		char *host;  /* owned */
		int port;
	} seeds[REDIS_SEEDS_MAX]; /* more nodes to try at first contact (a cluster's) */
	size_t nseeds;
};

/*
 * Parse `url` (NUL-terminated, borrowed).  0 and *out, whose strings the
 * caller frees with redis_target_clear(); -EINVAL with `err` (may be NULL;
 * field "redis") when the URL is malformed; -ENOMEM.  *out is written only
 * on success.
 */
int redis_url_parse(const char *url, struct redis_target *out, struct sl_error *err);
/* Free the strings of `t` and zero it; a zeroed target is a no-op. */
void redis_target_clear(struct redis_target *t);
/*
 * "host:port/db" or "unix:/path/db", never the user or password, for logs.
 * Writes at most `cap` bytes (NUL included) to `buf` and returns `buf`.
 */
const char *redis_target_describe(const struct redis_target *t, char *buf, size_t cap);

/*
 * Parse "HOST:PORT" or "[V6]:PORT"; port 0..65535 (0 = any).  0 with *host
 * (the caller frees it) and *port; -EINVAL with `err` naming `field`, or
 * -ENOMEM.  Out-params written only on success.
 */
int listen_parse(const char *s, const char *field, char **host, int *port, struct sl_error *err);

#endif

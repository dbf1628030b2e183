#ifndef SLUICE_SERVER_H
#define SLUICE_SERVER_H
/*
 * The admin API's HTTP server: libmicrohttpd with one internal polling
 * thread, which owns the `struct api` (and so its Redis connection).
 * Bodies over max_body_bytes get 413 before they are buffered; connections
 * are capped and idle ones time out.
 */
#include <stddef.h>

#include "admin/api.h"

struct server_config {
	const char *host;        /* numeric address or name, e.g. "127.0.0.1", "::1" */
	int port;                /* 0 = any free port (read it back with server_port) */
	size_t max_body_bytes;
	unsigned max_connections;
	unsigned idle_timeout_s; /* idle connections are closed after this many seconds */
};

struct server;

/*
 * Start serving `api` (ownership passes to the server, which frees it on stop).
 * NULL on failure with a reason in `err` (cap bytes).
 */
struct server *server_start(const struct server_config *cfg, struct api *api, char *err, size_t cap);
/*
 * 1 when every address `host` resolves to is a loopback address (127.0.0.0/8,
 * ::1); 0 otherwise or when it does not resolve.
 */
int server_host_is_loopback(const char *host);
/* The port actually bound. */
int server_port(const struct server *s);
/* Stop accepting, finish the thread, free the api and the server.  NULL is a no-op. */
void server_stop(struct server *s);

#endif

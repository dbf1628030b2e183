#ifndef SLUICE_SERVER_H
#define SLUICE_SERVER_H
/*
 * The admin API's HTTP server (libmicrohttpd, epoll).  One thread reads
 * every connection and answers what never waits on Redis (admin/api.h
 * API_LANE_INLINE: /healthz, the page, the jobs, errors; and the rule reads
 * while the rules a request thread checked are fresh); /readyz and
 * /metrics go to a thread of their own, every other route to a pool of
 * request threads (admin/lanes.h), each with its own Redis connection, so
 * no slow request, slow client or stopped Redis keeps /healthz waiting.
 *
 * Against slow and numerous clients: a connection limit, a limit per client
 * address, a header deadline (a connection that has not sent a request's
 * headers header_timeout_ms after it opened or after its previous answer is
 * closed, however slowly it trickles), an idle timeout, and bodies over
 * max_body_bytes answered 413 before they are buffered.
 *
 * Stopping answers every request still waiting for a thread 503
 * "shutting_down", gives running ones STOP_GRACE_MS, then answers them 503
 * too, and cancels the bulk reset jobs at their next batch.
 */
#include <stddef.h>

#include "admin/api.h"

#define SERVER_STOP_GRACE_MS 250 /* running requests get this long to finish when stopping */

struct server_config {
	const char *host;        /* numeric address or name, e.g. "127.0.0.1", "::1" */
	int port;                /* 0 = any free port (read it back with server_port) */
	size_t max_body_bytes;
	unsigned max_connections;
	unsigned max_connections_per_ip; /* 0 = no limit per client address */
	unsigned idle_timeout_s; /* idle connections are closed after this many seconds */
	unsigned header_timeout_ms; /* 0 = no header deadline */
	unsigned threads;        /* request threads (1..64), 0 = 4 */
	const char *tls_cert;    /* PEM file, or NULL: plain HTTP (both or neither) */
	const char *tls_key;     /* PEM file of the certificate's private key, or NULL */
};

struct server;

/*
 * Start serving: the api objects are made from `ac` (one per thread, with
 * a shared api_shared; `ac` and what it points to are borrowed only during
 * the call, except what api_new says it borrows).  NULL on failure with a
 * reason in `err` (cap bytes): the address, a TLS file, out of memory.
 */
struct server *server_start(const struct server_config *cfg, const struct api_config *ac, char *err,
			    size_t cap);
/*
 * 0 when the PEM files `cert` and `key` load as the admin API's TLS pair (a
 * certificate and its own private key: libmicrohttpd loads them as it will
 * at start, listening nowhere); -1 with the reason in `err` otherwise.
 */
int server_tls_check(const char *cert, const char *key, char *err, size_t cap);
/*
 * 1 when every address `host` resolves to is a loopback address (127.0.0.0/8,
 * ::1); 0 otherwise or when it does not resolve.
 */
int server_host_is_loopback(const char *host);
/* The port actually bound. */
int server_port(const struct server *s);
/*
 * Stop: no new connections; waiting requests answered 503; running ones
 * given SERVER_STOP_GRACE_MS, then answered 503; jobs cancelled; threads
 * joined (a thread inside a Redis call ends with its redis timeout); all
 * freed.  NULL is a no-op.
 */
void server_stop(struct server *s);

#endif

#include "admin/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"

struct server {
	struct MHD_Daemon *d;
	struct api *api;
	size_t max_body;
	int port;
};

/* Per-request state, kept in *req_cls between calls of the access handler. */
struct req {
	char *body;
	size_t len, cap;
	size_t discarded;  /* bytes of an oversized chunked body read and dropped */
	int64_t start_us;  /* CLOCK_MONOTONIC, for the access log */
	int too_large;
};

#define DISCARD_FACTOR 16

/* Leave the URL and arguments percent-encoded: the API decodes path segments one by one. */
static size_t keep_escapes(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256], q[300];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	log_event(LOG_WARN, "http_error", "message=%s", log_quote(q, sizeof(q), msg, n));
}

static void completed(void *cls, struct MHD_Connection *c, void **req_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct req *r = *req_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (r) {
		free(r->body);
		free(r);
		*req_cls = NULL;
	}
}

static enum MHD_Result send_json(struct MHD_Connection *c, int status, cJSON *body, const char *allow,
				  int challenge, const char *etag)
{
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (body && !text) {
		status = 500;
		text = strdup("{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}");
	}
	resp = MHD_create_response_from_buffer(text ? strlen(text) : 0, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	if (allow)
		MHD_add_response_header(resp, "Allow", allow);
	if (challenge)
		MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"sluice\"");
	if (etag && *etag)
		MHD_add_response_header(resp, "ETag", etag);
	ret = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result send_error_field(struct MHD_Connection *c, int status, const char *code, const char *msg,
					 const char *field)
{
	cJSON *e = api_error(code, msg, field);
	enum MHD_Result ret = send_json(c, status, e, NULL, 0, NULL);

	cJSON_Delete(e);
	return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, int status, const char *code, const char *msg)
{
	cJSON *e = api_error(code, msg, NULL);
	enum MHD_Result ret = send_json(c, status, e, NULL, 0, NULL);

	cJSON_Delete(e);
	return ret;
}

/*
 * A query argument, percent-decoded into a new string; NULL when absent.
 * Sets *oom, and *nul when the decoded value holds a NUL byte (%00: the
 * value would be cut there, a glob "match everything").
 */
static char *query_arg(struct MHD_Connection *c, const char *name, int *oom, int *nul)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
	char *copy;
	size_t n;

	if (!v)
		return NULL;
	copy = strdup(v);
	if (!copy) {
		*oom = 1;
		return NULL;
	}
	for (char *p = copy; *p; p++)
		if (*p == '+')
			*p = ' ';
	n = MHD_http_unescape(copy);
	if (strlen(copy) != n)
		*nul = 1;
	return copy;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload_data, size_t *upload_size,
			      void **req_cls)
{
	struct server *s = cls;
	struct req *r = *req_cls;
	struct api_request req = { 0 };
	struct api_response res;
	char *match, *cursor, *count;
	enum MHD_Result ret;
	int oom = 0, nul[3] = { 0, 0, 0 };

	(void)version;
	if (!r) {
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");

		if (!(r = calloc(1, sizeof(*r))))
			return MHD_NO;
		r->start_us = clock_mono_us();
		*req_cls = r;
		/* refuse an announced oversized body before reading any of it */
		if (cl && strtoull(cl, NULL, 10) > s->max_body) {
			char msg[96];

			r->too_large = 1;
			snprintf(msg, sizeof(msg), "request body larger than %zu bytes", s->max_body);
			return send_error(c, 413, "payload_too_large", msg);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		if (!r->too_large && r->len + *upload_size > s->max_body)
			r->too_large = 1;
		if (r->too_large) {
			/*
			 * A body without Content-Length (chunked) grew too large.
			 * libmicrohttpd 0.9.75 cannot answer in the middle of an
			 * upload, so the rest is read and dropped (never stored) to
			 * send a proper 413 at its end; past DISCARD_FACTOR times the
			 * limit the connection is closed instead.
			 */
			r->discarded += *upload_size;
			*upload_size = 0;
			return r->discarded > DISCARD_FACTOR * s->max_body ? MHD_NO : MHD_YES;
		}
		if (r->len + *upload_size > r->cap) {
			size_t cap = r->cap ? r->cap : 1024;
			char *b;

			while (cap < r->len + *upload_size)
				cap *= 2;
			if (!(b = realloc(r->body, cap)))
				return MHD_NO;
			r->body = b;
			r->cap = cap;
		}
		memcpy(r->body + r->len, upload_data, *upload_size);
		r->len += *upload_size;
		*upload_size = 0;
		return MHD_YES;
	}
	if (r->too_large) {
		char msg[96];

		snprintf(msg, sizeof(msg), "request body larger than %zu bytes", s->max_body);
		return send_error(c, 413, "payload_too_large", msg);
	}
	match = query_arg(c, "match", &oom, &nul[0]);
	cursor = query_arg(c, "cursor", &oom, &nul[1]);
	count = query_arg(c, "count", &oom, &nul[2]);
	if (oom) {
		ret = send_error(c, 500, "internal", "out of memory");
		goto out;
	}
	for (int i = 0; i < 3; i++) {
		static const char *const names[3] = { "match", "cursor", "count" };

		if (nul[i]) {
			char msg[64];

			snprintf(msg, sizeof(msg), "%s must not hold a NUL byte (%%00)", names[i]);
			ret = send_error_field(c, 400, "invalid_query", msg, names[i]);
			goto out;
		}
	}
	req.method = method;
	req.path = url;
	req.query_match = match;
	req.query_cursor = cursor;
	req.query_count = count;
	req.body = r->body;
	req.body_len = r->len;
	req.authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	req.if_match = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-Match");
	api_handle(s->api, &req, &res);
	if (res.text) {
		struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(res.text), res.text,
									   MHD_RESPMEM_MUST_FREE);

		if (resp) {
			MHD_add_response_header(resp, "Content-Type", res.content_type);
			if (res.cache_control)
				MHD_add_response_header(resp, "Cache-Control", res.cache_control);
			ret = MHD_queue_response(c, (unsigned)res.status, resp);
			MHD_destroy_response(resp);
		} else {
			free(res.text);
			ret = MHD_NO;
		}
	} else {
		ret = send_json(c, res.status, res.body, res.allow, res.challenge, res.etag);
	}
	cJSON_Delete(res.body);
	{
		char q[300];

		/* the probes and the scrapes come every few seconds: at debug, not to drown the rest */
		int probe = !strcmp(url, "/healthz") || !strcmp(url, "/readyz") || !strcmp(url, "/metrics");

		log_event(probe ? LOG_DEBUG : LOG_INFO, "http", "method=%s path=%s status=%d us=%lld", method,
			  log_quote(q, sizeof(q), url, strlen(url)), res.status,
			  (long long)(clock_mono_us() - r->start_us));
	}
out:
	free(match);
	free(cursor);
	free(count);
	return ret;
}

struct server *server_start(const struct server_config *cfg, struct api *api, char *err, size_t cap)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai = NULL;
	const union MHD_DaemonInfo *info;
	struct server *s = calloc(1, sizeof(*s));
	char port[8];
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG;
	int rc;

	if (!s) {
		snprintf(err, cap, "out of memory");
		api_free(api);
		return NULL;
	}
	s->api = api;
	s->max_body = cfg->max_body_bytes;
	snprintf(port, sizeof(port), "%d", cfg->port);
	rc = getaddrinfo(cfg->host, port, &hints, &ai);
	if (rc) {
		snprintf(err, cap, "listen address %s: %s", cfg->host, gai_strerror(rc));
		goto fail;
	}
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->d = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, handle, s,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, /* first, to catch every message */
				MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections,
				/* room for a 10,000-byte path percent-encoded (30 KB) in the request line */
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024),
				MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s,
				MHD_OPTION_UNESCAPE_CALLBACK, keep_escapes, NULL,
				MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
				MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!s->d) {
		snprintf(err, cap, "cannot listen on %s:%d (address in use, or not permitted)", cfg->host,
			 cfg->port);
		goto fail;
	}
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : cfg->port;
	return s;
fail:
	api_free(s->api);
	free(s);
	return NULL;
}

int server_host_is_loopback(const char *host)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL, *p;
	int loop = 1;

	if (getaddrinfo(host, NULL, &hints, &ai))
		return 0;
	for (p = ai; p; p = p->ai_next) {
		if (p->ai_family == AF_INET) {
			const struct sockaddr_in *sa = (const struct sockaddr_in *)p->ai_addr;

			loop = loop && (ntohl(sa->sin_addr.s_addr) >> 24) == 127;
		} else if (p->ai_family == AF_INET6) {
			const struct sockaddr_in6 *sa = (const struct sockaddr_in6 *)p->ai_addr;

			loop = loop && IN6_IS_ADDR_LOOPBACK(&sa->sin6_addr);
		} else {
			loop = 0;
		}
	}
	freeaddrinfo(ai);
	return loop;
}

int server_port(const struct server *s)
{
	return s->port;
}

void server_stop(struct server *s)
{
	if (!s)
		return;
	if (s->d)
		MHD_stop_daemon(s->d);
	api_free(s->api);
	free(s);
}

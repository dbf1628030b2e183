/*
 * The admin server's access handler: a request's body read (413 before an
 * oversized one is buffered), its query decoded, then answered on this
 * thread (inline routes) or handed to a lane and the connection suspended
 * until a thread answered it (admin/server_int.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admin/server_int.h"
#include "core/clock.h"
#include "core/log.h"

#define DISCARD_FACTOR 16
#define QUERY_ARGS 3

/* Headers every answer may carry; `s` stopping, or `close`, adds Connection: close. */
static void add_headers(struct MHD_Response *resp, const struct server *s, const struct api_response *res,
			int close)
{
	if (res && res->allow)
		MHD_add_response_header(resp, "Allow", res->allow);
	if (res && res->challenge)
		MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"sluice\"");
	if (res && res->etag[0])
		MHD_add_response_header(resp, "ETag", res->etag);
	if (res && res->location[0])
		MHD_add_response_header(resp, "Location", res->location);
	if (close || atomic_load(&s->stopping))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
}

static enum MHD_Result send_json(struct server *s, struct MHD_Connection *c, int status, cJSON *body,
				 const struct api_response *res, int close)
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
	add_headers(resp, s, res, close);
	ret = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result send_error_field(struct server *s, struct MHD_Connection *c, int status, const char *code,
					 const char *msg, const char *field, int close)
{
	cJSON *e = api_error(code, msg, field);
	enum MHD_Result ret = send_json(s, c, status, e, NULL, close);

	cJSON_Delete(e);
	return ret;
}

static enum MHD_Result send_error(struct server *s, struct MHD_Connection *c, int status, const char *code,
				   const char *msg)
{
	cJSON *e = api_error(code, msg, NULL);
	enum MHD_Result ret = send_json(s, c, status, e, NULL, 0);

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

struct hconn *server_hconn(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Send what api_handle answered (its body and text are freed here or by libmicrohttpd). */
static enum MHD_Result send_answer(struct server *s, struct MHD_Connection *c, struct api_response *res)
{
	enum MHD_Result ret;

	if (res->text) {
		struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(res->text), res->text,
									   MHD_RESPMEM_MUST_FREE);

		res->text = NULL;
		if (!resp)
			return MHD_NO;
		MHD_add_response_header(resp, "Content-Type", res->content_type);
		if (res->cache_control)
			MHD_add_response_header(resp, "Cache-Control", res->cache_control);
		add_headers(resp, s, res, 0);
		ret = MHD_queue_response(c, (unsigned)res->status, resp);
		MHD_destroy_response(resp);
	} else {
		ret = send_json(s, c, res->status, res->body, res, 0);
	}
	cJSON_Delete(res->body);
	res->body = NULL;
	return ret;
}

/*
 * The connection's deadline while a request is on it: none while a thread
 * works on it (`waiting`), else the answer must be sent within
 * SEND_TIMEOUT_FACTOR header deadlines (a client that reads it slowly is cut).
 */
#define SEND_TIMEOUT_FACTOR 6
static void phase(struct server *s, struct MHD_Connection *c, int waiting)
{
	struct hconn *h = server_hconn(c);

	if (!h)
		return;
	h->busy = waiting;
	h->deadline_us = clock_mono_us() + SEND_TIMEOUT_FACTOR * s->header_timeout_us;
}

/* The access log line and the duration histogram, once a request is answered (`route` its api_route, -1 none). */
static void log_request(struct server *s, const struct req *r, int route, const char *method, const char *url,
			int status)
{
	int64_t us = clock_mono_us() - r->start_us;
	/* the probes and the scrapes come every few seconds: at debug, not to drown the rest */
	int probe = !strcmp(url, "/healthz") || !strcmp(url, "/readyz") || !strcmp(url, "/metrics");
	char q[300];

	api_observe(s->api, route, us);
	log_event(probe ? LOG_DEBUG : LOG_INFO, "http", "method=%s path=%s status=%d us=%lld", method,
		  log_quote(q, sizeof(q), url, strlen(url)), status, (long long)us);
}

static void task_run(struct lane_task *lt, struct api *a)
{
	struct task *t = (struct task *)lt;

	api_handle(a, &t->req, &t->res);
}

static void task_wake(struct lane_task *lt)
{
	struct task *t = (struct task *)lt;

	MHD_resume_connection(t->c);
	server_wake(t->s);
}

static void task_release(struct lane_task *lt)
{
	struct task *t = (struct task *)lt;

	free(t->method);
	free(t->path);
	free(t->match);
	free(t->cursor);
	free(t->count);
	free(t->authorization);
	free(t->if_match);
	free(t->body);
	cJSON_Delete(t->res.body);
	free(t->res.text);
	free(t);
}

static char *dup_or_null(const char *v, int *oom)
{
	char *d = v ? strdup(v) : NULL;

	if (v && !d)
		*oom = 1;
	return d;
}

/* A task for request `req` (its strings copied, the body taken from `r`); NULL on ENOMEM. */
static struct task *task_new(struct server *s, struct MHD_Connection *c, struct req *r,
			     const struct api_request *req)
{
	struct task *t = calloc(1, sizeof(*t));
	int oom = 0;

	if (!t)
		return NULL;
	t->lt.run = task_run;
	t->lt.wake = task_wake;
	t->lt.release = task_release;
	t->lt.refs = 1;
	t->c = c;
	t->s = s;
	t->method = dup_or_null(req->method, &oom);
	t->path = dup_or_null(req->path, &oom);
	t->match = dup_or_null(req->query_match, &oom);
	t->cursor = dup_or_null(req->query_cursor, &oom);
	t->count = dup_or_null(req->query_count, &oom);
	t->authorization = dup_or_null(req->authorization, &oom);
	t->if_match = dup_or_null(req->if_match, &oom);
	if (oom) {
		task_release(&t->lt);
		return NULL;
	}
	t->body = r->body;
	r->body = NULL;
	t->req = *req;
	t->req.method = t->method;
	t->req.path = t->path;
	t->req.query_match = t->match;
	t->req.query_cursor = t->cursor;
	t->req.query_count = t->count;
	t->req.authorization = t->authorization;
	t->req.if_match = t->if_match;
	t->req.body = t->body;
	return t;
}

/* A request a lane took, called again: answer what its thread answered, or 503. */
static enum MHD_Result answer_task(struct server *s, struct MHD_Connection *c, struct req *r, const char *method,
				   const char *url)
{
	int st = atomic_load(&r->task->lt.state);
	enum MHD_Result ret;

	phase(s, c, 0);
	if (st == LANE_DONE) {
		int status = r->task->res.status, route = r->task->res.route;

		ret = send_answer(s, c, &r->task->res);
		log_request(s, r, route, method, url, status);
		return ret;
	}
	/* abandoned: the server is stopping (the thread, if it ends the request, counts its own answer) */
	log_request(s, r, r->route, method, url, 503);
	return send_error(s, c, 503, "shutting_down", "the daemon is stopping; try again or another daemon");
}

/* Hand the request to its lane and suspend the connection until a thread answered (or refused) it. */
static enum MHD_Result hand_over(struct server *s, struct MHD_Connection *c, struct req *r, enum api_lane lane,
				 const struct api_request *req)
{
	struct task *t = task_new(s, c, r, req);
	int rc;

	if (!t)
		return send_error(s, c, 500, "internal", "out of memory");
	r->lane = lane == API_LANE_PROBE ? s->probe : s->pool;
	r->task = t;
	/* suspended before the push: a thread may answer (and resume it) at once */
	phase(s, c, 1);
	MHD_suspend_connection(c);
	rc = lane_push(r->lane, &t->lt);
	if (rc) {
		r->task = NULL;
		task_release(&t->lt);
		r->refused = rc == -EBUSY ? 1 : 2;
		MHD_resume_connection(c);
	} else {
		r->counted = 1; /* one the stop waits for: its answer is due */
		atomic_fetch_add(&s->active, 1);
	}
	return MHD_YES;
}

/*
 * An error the server answers itself (413, 400, 500): counted and logged as
 * the API's answers are; r->must_close closes the connection after it.
 */
static enum MHD_Result refuse(struct server *s, struct MHD_Connection *c, struct req *r, const char *method,
			      const char *url, int status, const char *code, const char *msg, const char *field)
{
	phase(s, c, 0);
	api_count(s->api, r->route, status);
	log_request(s, r, r->route, method, url, status);
	return send_error_field(s, c, status, code, msg, field, r->must_close);
}

/* What a request's headers say of its framing (start_request refuses what a proxy could read otherwise). */
struct framing {
	int cl, te;   /* Content-Length and Transfer-Encoding headers */
	int te_other; /* a Transfer-Encoding other than "chunked" */
	int bad_name; /* a header name with a space or tab ("Transfer-Encoding : chunked" is not one to libmicrohttpd) */
};

static enum MHD_Result framing_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct framing *f = cls;

	(void)kind;
	if (key[strcspn(key, " \t")])
		f->bad_name = 1;
	if (!strcasecmp(key, "Content-Length"))
		f->cl++;
	if (!strcasecmp(key, "Transfer-Encoding")) {
		f->te++;
		f->te_other |= !value || strcasecmp(value, "chunked") != 0;
	}
	return MHD_YES;
}

/*
 * The headers of a new request are read: its state, and an announced
 * oversized body refused.  The header deadline goes on until the body is
 * read too: a body trickled in is no way around it.  A request whose
 * framing a proxy in front could read otherwise than libmicrohttpd does
 * (request smuggling) is refused and its connection closed (RFC 9112, 6.1
 * and 6.3): both Content-Length and Transfer-Encoding, two Content-Length,
 * a Transfer-Encoding other than chunked, a header name with white space.
 */
static enum MHD_Result start_request(struct server *s, struct MHD_Connection *c, const char *method,
				     const char *url, void **req_cls)
{
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
	struct req *r = calloc(1, sizeof(*r));

	if (!r)
		return MHD_NO;
	r->start_us = clock_mono_us();
	r->lane_kind = api_lane_of(method, url, &r->route); /* once: the path split allocates */
	*req_cls = r;
	{
		struct framing f = { 0 };
		const char *why = NULL;

		MHD_get_connection_values(c, MHD_HEADER_KIND, framing_header, &f);
		if (f.bad_name)
			why = "a header name holds a space or a tab (RFC 9112, 5.1)";
		else if (f.cl > 1)
			why = "a request may carry one Content-Length only";
		else if (f.cl && f.te)
			why = "a request may not carry both Content-Length and Transfer-Encoding";
		else if (f.te > 1 || f.te_other)
			why = "Transfer-Encoding other than chunked is not supported";
		if (why) {
			r->must_close = 1;
			return refuse(s, c, r, method, url, 400, "invalid_request", why, NULL);
		}
	}
	if (cl && strtoull(cl, NULL, 10) > s->max_body) {
		char msg[96];

		r->too_large = 1;
		snprintf(msg, sizeof(msg), "request body larger than %zu bytes", s->max_body);
		return refuse(s, c, r, method, url, 413, "payload_too_large", msg, NULL);
	}
	return MHD_YES;
}

/* Append a body chunk (or drop it, past max_body). */
static enum MHD_Result take_upload(struct server *s, struct req *r, const char *data, size_t *size)
{
	if (!r->too_large && r->len + *size > s->max_body)
		r->too_large = 1;
	if (r->too_large) {
		/*
		 * A body without Content-Length (chunked) grew too large.
		 * libmicrohttpd 0.9.75 cannot answer in the middle of an upload,
		 * so the rest is read and dropped (never stored) to send a proper
		 * 413 at its end; past DISCARD_FACTOR times the limit the
		 * connection is closed instead.
		 */
		r->discarded += *size;
		*size = 0;
		return r->discarded > DISCARD_FACTOR * s->max_body ? MHD_NO : MHD_YES;
	}
	if (r->len + *size > r->cap) {
		size_t cap = r->cap ? r->cap : 1024;
		char *b;

		while (cap < r->len + *size)
			cap *= 2;
		if (!(b = realloc(r->body, cap)))
			return MHD_NO;
		r->body = b;
		r->cap = cap;
	}
	memcpy(r->body + r->len, data, *size);
	r->len += *size;
	*size = 0;
	return MHD_YES;
}

enum MHD_Result server_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload_data, size_t *upload_size, void **req_cls)
{
	static const char *const names[QUERY_ARGS] = { "match", "cursor", "count" };
	struct server *s = cls;
	struct req *r = *req_cls;
	struct api_request req = { 0 };
	struct api_response res;
	char *arg[QUERY_ARGS];
	enum api_lane lane;
	enum MHD_Result ret;
	int oom = 0, nul[QUERY_ARGS] = { 0 };

	(void)version;
	if (!r)
		return start_request(s, c, method, url, req_cls);
	if (*upload_size)
		return take_upload(s, r, upload_data, upload_size);
	if (r->task)
		return answer_task(s, c, r, method, url);
	if (r->refused)
		return r->refused == 1 ? refuse(s, c, r, method, url, 503, "busy",
						"every request thread is busy and the queue is full", NULL)
				       : refuse(s, c, r, method, url, 503, "shutting_down", "the daemon is stopping", NULL);
	if (r->too_large) {
		char msg[96];

		snprintf(msg, sizeof(msg), "request body larger than %zu bytes", s->max_body);
		return refuse(s, c, r, method, url, 413, "payload_too_large", msg, NULL);
	}
	for (int i = 0; i < QUERY_ARGS; i++)
		arg[i] = query_arg(c, names[i], &oom, &nul[i]);
	if (oom) {
		ret = refuse(s, c, r, method, url, 500, "internal", "out of memory", NULL);
		goto out;
	}
	for (int i = 0; i < QUERY_ARGS; i++) {
		if (nul[i]) {
			char msg[64];

			snprintf(msg, sizeof(msg), "%s must not hold a NUL byte (%%00)", names[i]);
			ret = refuse(s, c, r, method, url, 400, "invalid_query", msg, names[i]);
			goto out;
		}
	}
	req.method = method;
	req.path = url;
	req.query_match = arg[0];
	req.query_cursor = arg[1];
	req.query_count = arg[2];
	req.body = r->body;
	req.body_len = r->len;
	req.authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	req.if_match = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-Match");
	lane = r->lane_kind;
	if (lane != API_LANE_INLINE && api_refuses(s->api, &req))
		lane = API_LANE_INLINE; /* its 401 now: no Redis, no place in a queue */
	if (lane == API_LANE_TRY) {
		api_handle(s->api, &req, &res); /* answered here unless it needs Redis */
		lane = res.defer ? API_LANE_POOL : API_LANE_INLINE;
		if (res.defer) {
			cJSON_Delete(res.body);
			free(res.text);
		}
	} else if (lane == API_LANE_INLINE) {
		api_handle(s->api, &req, &res);
	}
	if (lane != API_LANE_INLINE) {
		ret = hand_over(s, c, r, lane, &req);
		goto out;
	}
	{
		int status = res.status, route = res.route;

		phase(s, c, 0);
		ret = send_answer(s, c, &res);
		log_request(s, r, route, method, url, status);
	}
out:
	for (int i = 0; i < QUERY_ARGS; i++)
		free(arg[i]);
	return ret;
}

void server_completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode toe)
{
	struct server *s = cls;
	struct req *r = *req_cls;
	struct hconn *h = server_hconn(c);

	(void)toe;
	if (h) {
		/* the next request's headers must come within the deadline, from now */
		h->busy = 0;
		h->deadline_us = clock_mono_us() + s->header_timeout_us;
	}
	if (!r)
		return;
	if (r->task)
		lane_put(r->lane, &r->task->lt);
	if (r->counted)
		atomic_fetch_sub(&s->active, 1);
	free(r->body);
	free(r);
	*req_cls = NULL;
}

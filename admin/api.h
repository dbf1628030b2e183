#ifndef SLUICE_API_H
#define SLUICE_API_H
/*
 * The admin API without sockets: (method, raw path, query, body) in,
 * (status, JSON) out.  admin/server.c puts it behind libmicrohttpd; tests
 * call it directly.  Routes and bodies are DESIGN.md's "Admin API".
 * Errors are {"error": {"code": "...", "message": "...", "field": "..."?}}.
 *
 * Threads: one api object per thread (it owns a Redis connection); the api
 * objects of one server share an api_shared (request counters, the rules'
 * change count, the bulk reset jobs), which is thread-safe.
 */
#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/redis_target.h"
#include "core/layout.h"
#include "worker/status.h"

struct api_shared;

/* Values of *api_config.ready: the config file's rules stored; not yet; not yet, Redis
 * refusing them for its maxmemory (the daemon's seed sets them, the admin threads read). */
#define API_RULES_PENDING 0
#define API_RULES_READY 1
#define API_RULES_OOM 2

struct api_config {
	const struct redis_target *redis; /* copied */
	int64_t timeout_ms;
	const char *prefix;               /* copied */
	const struct layout *layouts;     /* borrowed; outlive the api */
	size_t nlayouts;
	struct worker *worker;            /* borrowed, for GET /v1/worker (worker_status is thread-safe); may be NULL */
	const char *token;                /* admin bearer token (copied), or NULL: no auth */
	int auth_reads;                   /* with a token: reads need it too (not /healthz, /readyz) */
	int64_t rules_ttl_ms;             /* reuse the cached rules this long before checking their
					   * version in Redis again (0: check on every request);
					   * changes made through this api are seen at once */
	const atomic_int *ready;          /* borrowed, or NULL (always ready): while *ready is not
					   * API_RULES_READY (the daemon has not stored its config file's
					   * rules yet) /readyz, /v1/rules... and /v1/paths... answer 503
					   * redis_unavailable, reason rules_not_loaded, or redis_oom
					   * while *ready is API_RULES_OOM (Redis refused them: maxmemory) */
	struct api_shared *shared;        /* borrowed (outlives the api), or NULL: the api makes its own */
	int64_t metrics_fresh_ms;         /* GET /metrics reuses a Redis sample younger than this
					   * (admin/sampler.h); 0: SAMPLER_FRESH_MS, < 0: never */
	int64_t metrics_wait_ms;          /* and waits this long for a new one; 0: SAMPLER_WAIT_MS */
	int no_redis;                     /* the api never calls Redis (the server's loop thread): a
					   * route that would (API_LANE_TRY) answers res->defer instead */
};

struct api_request {
	const char *method;        /* "GET", ... */
	const char *path;          /* raw (still percent-encoded), without the query */
	const char *query_match;   /* decoded query values, or NULL when absent */
	const char *query_cursor;
	const char *query_count;
	const char *body;          /* may be NULL when body_len is 0 */
	size_t body_len;
	const char *authorization; /* the Authorization header, or NULL */
	const char *if_match;      /* the If-Match header, or NULL */
};

struct api_response {
	int status;                /* HTTP status */
	cJSON *body;               /* owned by the caller after api_handle; NULL when `text` is used */
	char *text;                /* a non-JSON body (GET /metrics), owned by the caller (free), or NULL */
	const char *content_type;  /* for `text`; static */
	int route;                 /* index of the route that answered (api_route), -1 for none */
	const char *allow;         /* for 405: the Allow header value (static), else NULL */
	int challenge;             /* for 401: send WWW-Authenticate: Bearer */
	char etag[24];             /* an ETag header to send (a rule's), or "" */
	char location[48];         /* a Location header to send (a new job's), or "" */
	int defer;                 /* api_config.no_redis: this request needs Redis; nothing was answered,
				    * counted or changed (hand it to a request thread) */
	const char *cache_control; /* for `text`: a Cache-Control header to send (static), or NULL */
};

/*
 * Where a request is answered (admin/server.c): INLINE on the thread that
 * reads the connections (routes that never wait on Redis: /healthz, the
 * page, /openapi.json, /v1/worker, the jobs, and every 401/404/405); PROBE on
 * a thread of its own (/readyz, /metrics: they read Redis, and must not wait
 * behind slow requests); POOL on the request threads (every other route);
 * TRY inline first, on the request threads when it answers `defer` (the rule
 * reads: inline while the rules another thread checked are fresh).
 */
enum api_lane { API_LANE_INLINE, API_LANE_PROBE, API_LANE_POOL, API_LANE_TRY };

/* One route the API answers: method and pattern ("{name}" stands for one path segment). */
struct api_route {
	const char *method;
	const char *pattern;
};
/* Route `i` (0, 1, ... until NULL); static storage. */
const struct api_route *api_route(size_t i);

struct api;

/*
 * New shared state for the api objects of one server; its bulk reset jobs
 * run on a thread of their own with their own Redis connection (cfg's redis,
 * timeout_ms, layouts).  NULL on ENOMEM or when the thread cannot start.
 */
struct api_shared *api_shared_new(const struct api_config *cfg);
/* Cancel the jobs (a running one ends at its next batch) without waiting; new jobs are refused. */
void api_shared_stop(struct api_shared *sh);
/* 1 while a bulk reset job runs. */
int api_shared_busy(struct api_shared *sh);
/* From any thread: the Redis calls of the jobs and of the metrics sampler in flight fail now, and later ones at once (rconn_abort). */
void api_shared_abort(struct api_shared *sh);
/* From any thread: the api's Redis calls in flight fail now, and later ones at once (rconn_abort). */
void api_abort(struct api *a);
/* api_shared_stop, wait for the jobs' thread, free.  NULL is a no-op. */
void api_shared_free(struct api_shared *sh);
/*
 * The lane that answers `method` on `path` (raw, percent-encoded), and in
 * *route the route's index (api_route) or -1 when none matches.
 */
enum api_lane api_lane_of(const char *method, const char *path, int *route);
/* 1 when api_handle would answer `req` 401 (a token needed and not given): it is answered at once, never queued. */
int api_refuses(struct api *a, const struct api_request *req);
/* Count a request answered outside api_handle (by the server: 503 while stopping), by route (-1: none) and status. */
void api_count(struct api *a, int route, int status);
/* Add a request's duration (µs, from its headers read to its answer queued) to route's histogram (-1: none). */
void api_observe(struct api *a, int route, int64_t us);

/* New api; does not connect yet.  NULL on ENOMEM. */
struct api *api_new(const struct api_config *cfg);
void api_free(struct api *a);
/*
 * Handle one request; always fills `res` (500 "internal" when out of memory;
 * the body is NULL only when even that could not be made).  The caller frees res->body (cJSON_Delete) and res->text (free).
 */
void api_handle(struct api *a, const struct api_request *req, struct api_response *res);
/* 1 when the `a_len` bytes of `a` equal the `b_len` bytes of `b`, in time that depends only on the lengths. */
int api_token_equal(const char *a, size_t a_len, const char *b, size_t b_len);
/* A JSON error body {"error": {"code", "message"[, "field"]}}; caller owns; NULL on ENOMEM. */
cJSON *api_error(const char *code, const char *message, const char *field);

#endif

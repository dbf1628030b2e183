/*
 * The admin API's front: the route table, the path split into
 * percent-decoded segments, method matching (405 with Allow), the bearer
 * token, request counting, and the api object's life.  The handlers are the
 * route groups' (admin/routes.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "admin/api.h"
#include "admin/jobs.h"
#include "admin/reply.h"
#include "admin/sampler.h"
#include "admin/routes.h"
#include "core/jsonv.h"
#include "core/reply.h"

#define MAX_SEGMENTS 6
#define ARG 2 /* the segment a pattern's {name} or {path} stands at: /v1/<group>/{...} */
#define RESET_BATCH 200 /* paths per page and per pipeline in a bulk reset job */

const int api_statuses[API_NSTATUS] = { 200, 201, 202, 400, 401, 404, 405, 409, 412, 413, 429, 500, 503 };
const double api_duration_buckets[API_NDURATION] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
						     0.25, 0.5, 1, 2.5, 5, 10 };

/* A path split into percent-decoded segments (each NUL-terminated, with its length). */
struct segs {
	char *s[MAX_SEGMENTS];
	size_t len[MAX_SEGMENTS];
	int n;
	int too_many;
	int bad_escape;
};

/* Adapters: every handler as (api, request, path segments, response). */
#define ADAPT(name, call)                                                                          \
	static void r_##name(struct api *a, const struct api_request *req, const struct segs *g,   \
			     struct api_response *res)                                              \
	{                                                                                          \
		(void)a;                                                                           \
		(void)req;                                                                         \
		(void)g;                                                                           \
		call;                                                                              \
	}
ADAPT(healthz, route_healthz(res))
ADAPT(readyz, route_readyz(a, res))
ADAPT(metrics, route_metrics(a, res))
ADAPT(openapi, route_openapi(res))
ADAPT(page, route_page(res))
ADAPT(rules_list, route_rules_list(a, res))
ADAPT(rule_get, route_rule_get(a, g->s[ARG], g->len[ARG], res))
ADAPT(rule_put, route_rule_put(a, req, g->s[ARG], g->len[ARG], res))
ADAPT(rule_delete, route_rule_delete(a, req, g->s[ARG], g->len[ARG], res))
ADAPT(paths_list, route_paths_list(a, req, res))
ADAPT(path_get, route_path_get(a, g->s[ARG], g->len[ARG], res))
ADAPT(path_reset, route_path_reset(a, g->s[ARG], g->len[ARG], res))
ADAPT(reset_match, route_reset_match(a, req, res))
ADAPT(worker, route_worker(a, res))
ADAPT(sweep, route_sweep(a, res))
ADAPT(jobs_list, route_jobs_list(a, res))
ADAPT(job_get, route_job_get(a, g->s[ARG], g->len[ARG], res))
ADAPT(job_delete, route_job_delete(a, g->s[ARG], g->len[ARG], res))
#undef ADAPT

typedef void (*route_fn)(struct api *, const struct api_request *, const struct segs *,
			 struct api_response *);

/*
 * Patterns are segment lists; "{...}" matches one non-empty segment
 * (percent-decoded).  The lane says which thread answers (api_lane).
 */
static const struct {
	struct api_route r;
	route_fn fn;
	enum api_lane lane;
} routes[] = {
	{ { "GET", "/healthz" }, r_healthz, API_LANE_INLINE },
	{ { "GET", "/readyz" }, r_readyz, API_LANE_PROBE },
	{ { "GET", "/metrics" }, r_metrics, API_LANE_PROBE },
	{ { "GET", "/openapi.json" }, r_openapi, API_LANE_INLINE },
	{ { "GET", "/" }, r_page, API_LANE_INLINE },
	{ { "GET", "/v1/rules" }, r_rules_list, API_LANE_TRY },
	{ { "GET", "/v1/rules/{name}" }, r_rule_get, API_LANE_TRY },
	{ { "PUT", "/v1/rules/{name}" }, r_rule_put, API_LANE_POOL },
	{ { "DELETE", "/v1/rules/{name}" }, r_rule_delete, API_LANE_POOL },
	{ { "GET", "/v1/paths" }, r_paths_list, API_LANE_POOL },
	{ { "GET", "/v1/paths/{path}" }, r_path_get, API_LANE_POOL },
	{ { "POST", "/v1/paths/{path}/reset" }, r_path_reset, API_LANE_POOL },
	{ { "POST", "/v1/reset" }, r_reset_match, API_LANE_INLINE },
	{ { "GET", "/v1/jobs" }, r_jobs_list, API_LANE_INLINE },
	{ { "GET", "/v1/jobs/{id}" }, r_job_get, API_LANE_INLINE },
	{ { "DELETE", "/v1/jobs/{id}" }, r_job_delete, API_LANE_INLINE },
	{ { "GET", "/v1/worker" }, r_worker, API_LANE_INLINE },
	{ { "POST", "/v1/worker/sweep" }, r_sweep, API_LANE_POOL },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))
_Static_assert(NROUTES <= API_NROUTES_MAX, "api.http has no room for every route");

const struct api_route *api_route(size_t i)
{
	return i < NROUTES ? &routes[i].r : NULL;
}

struct api_shared *api_shared_new(const struct api_config *cfg)
{
	struct api_shared *sh = calloc(1, sizeof(*sh));
	struct jobs_config jc = { .redis = cfg->redis, .timeout_ms = cfg->timeout_ms, .layouts = cfg->layouts,
				  .nlayouts = cfg->nlayouts, .batch = RESET_BATCH };

	if (!sh)
		return NULL;
	sh->metrics_fresh_ms = cfg->metrics_fresh_ms > 0 ? cfg->metrics_fresh_ms : cfg->metrics_fresh_ms < 0 ? 0
												  : SAMPLER_FRESH_MS;
	sh->metrics_wait_ms = cfg->metrics_wait_ms > 0 ? cfg->metrics_wait_ms : SAMPLER_WAIT_MS;
	pthread_mutex_init(&sh->rules_lock, NULL);
	if (!(sh->jobs = jobs_new(&jc)) ||
	    !(sh->sampler = sampler_new(cfg->redis, cfg->timeout_ms, cfg->layouts, cfg->nlayouts))) {
		jobs_free(sh->jobs);
		pthread_mutex_destroy(&sh->rules_lock);
		free(sh);
		return NULL;
	}
	return sh;
}

void api_shared_stop(struct api_shared *sh)
{
	if (sh)
		jobs_stop(sh->jobs);
}

int api_shared_busy(struct api_shared *sh)
{
	return sh && jobs_busy(sh->jobs);
}

void api_shared_abort(struct api_shared *sh)
{
	if (!sh)
		return;
	jobs_abort(sh->jobs);
	sampler_abort(sh->sampler);
}

void api_abort(struct api *a)
{
	rconn_abort(a->conn);
}

void api_shared_free(struct api_shared *sh)
{
	if (!sh)
		return;
	jobs_free(sh->jobs);
	sampler_free(sh->sampler);
	ruleset_clear(&sh->rules_last);
	pthread_mutex_destroy(&sh->rules_lock);
	free(sh);
}

struct api *api_new(const struct api_config *cfg)
{
	struct api *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->shared = cfg->shared;
	if (!a->shared && !(a->shared = a->own_shared = api_shared_new(cfg))) {
		free(a);
		return NULL;
	}
	a->conn = rconn_new(cfg->redis, cfg->timeout_ms);
	a->prefix = strdup(cfg->prefix);
	a->layouts = cfg->layouts;
	a->nlayouts = cfg->nlayouts;
	a->worker = cfg->worker;
	a->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 1000;
	a->auth_reads = cfg->auth_reads;
	a->no_redis = cfg->no_redis;
	a->ready = cfg->ready;
	a->rules_ttl_us = cfg->rules_ttl_ms > 0 ? cfg->rules_ttl_ms * 1000 : 0;
	a->token = cfg->token ? strdup(cfg->token) : NULL;
	if (!a->conn || !a->prefix || (cfg->token && !a->token)) {
		api_free(a);
		return NULL;
	}
	return a;
}

void api_free(struct api *a)
{
	if (!a)
		return;
	rconn_free(a->conn);
	api_shared_free(a->own_shared);
	ruleset_clear(&a->rules);
	free(a->rules_text);
	free(a->prefix);
	if (a->token) {
		explicit_bzero(a->token, strlen(a->token));
		free(a->token);
	}
	free(a);
}

static void segs_free(struct segs *g)
{
	for (int i = 0; i < g->n; i++)
		free(g->s[i]);
}

/*
 * 0, or -ENOMEM (with `g` empty).  "/a/b%2Fc" -> ["a", "b/c"]; a trailing '/'
 * adds an empty segment.
 * libmicrohttpd decodes; it keeps a malformed %-sequence as it is and does not
 * say so (MHD_http_unescape has no way to), so that check is done here.
 */
static int segs_split(const char *path, struct segs *g)
{
	const char *p = path;

	memset(g, 0, sizeof(*g));
	if (*p != '/')
		return 0;
	p++;
	for (;;) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char *copy;

		if (g->n == MAX_SEGMENTS) {
			g->too_many = 1;
			return 0;
		}
		for (size_t i = 0; i < n; i++)
			if (p[i] == '%' && !(i + 2 < n && isxdigit((unsigned char)p[i + 1]) &&
					     isxdigit((unsigned char)p[i + 2])))
				g->bad_escape = 1;
		copy = strndup(p, n);
		if (!copy) {
			segs_free(g);
			g->n = 0;
			return -ENOMEM;
		}
		/* returns the decoded length (NUL bytes kept): a path is any bytes, as the
		 * scripts take it (DESIGN.md), and answers show one that is not UTF-8
		 * percent-encoded (jsonv_add_path), which comes back here as it went */
		g->len[g->n] = MHD_http_unescape(copy);
		g->s[g->n++] = copy;
		if (!end)
			return 0;
		p = end + 1;
	}
}

/* Does `pattern` match the decoded segments? */
static int pattern_matches(const char *pattern, const struct segs *g)
{
	const char *p = pattern + 1;
	int i = 0;

	for (;; i++) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (i >= g->n)
			return 0;
		if (p[0] == '{') {
			if (g->len[i] == 0)
				return 0;
		} else if (n != g->len[i] || memcmp(p, g->s[i], n) != 0) {
			return 0;
		}
		if (!end)
			return i + 1 == g->n;
		p = end + 1;
	}
}

/* HEAD is answered as GET (libmicrohttpd sends the headers only). */
static int method_is(const struct api_request *req, const char *m)
{
	if (strcmp(m, "GET") == 0 && strcmp(req->method, "HEAD") == 0)
		return 1;
	return strcmp(req->method, m) == 0;
}

int api_token_equal(const char *a, size_t a_len, const char *b, size_t b_len)
{
	unsigned char diff = a_len != b_len;

	/* walk the expected token's length whatever the guess, so time tells nothing */
	for (size_t i = 0; i < b_len; i++)
		diff |= (unsigned char)(b[i] ^ (i < a_len ? a[i] : 0));
	return diff == 0;
}

/* Does the request carry "Authorization: Bearer <token>"? */
static int authorized(const struct api *a, const struct api_request *req)
{
	const char *h = req->authorization;
	size_t n;

	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return 0;

	h += 7;
	while (*h == ' ' || *h == '\t')
		h++;
	n = strlen(h);
	while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
		n--; /* optional whitespace after the value (RFC 9110) */
	return api_token_equal(h, n, a->token, strlen(a->token));
}

/*
 * Reads that never need the token: the probes, and the operator page (static,
 * it holds no data; its own requests to the API carry the token it asks for).
 */
static int is_open(const char *path)
{
	return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 || strcmp(path, "/") == 0;
}

/* Does this request need the token and lack it? */
static int needs_token(const struct api *a, const struct api_request *req)
{
	int read_only = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;

	return a->token && (!read_only || (a->auth_reads && !is_open(req->path))) && !authorized(a, req);
}

void api_count(struct api *a, int route, int status)
{
	size_t r = route >= 0 && (size_t)route < NROUTES ? (size_t)route : NROUTES, k;

	for (k = 0; k < API_NSTATUS && api_statuses[k] != status; k++)
		;
	atomic_fetch_add_explicit(&a->shared->http[r][k], 1, memory_order_relaxed);
}

void api_observe(struct api *a, int route, int64_t us)
{
	size_t r = route >= 0 && (size_t)route < NROUTES ? (size_t)route : NROUTES, i;
	double s = (double)us / 1e6;

	for (i = 0; i < API_NDURATION && s > api_duration_buckets[i]; i++)
		;
	atomic_fetch_add_explicit(&a->shared->dur[r][i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&a->shared->dur_count[r], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&a->shared->dur_sum_us[r], us > 0 ? (uint64_t)us : 0, memory_order_relaxed);
}

static void count_request(struct api *a, const struct api_response *res)
{
	api_count(a, res->route, res->status);
}

/* Until the daemon has stored its config's rules, the routes that answer with rules wait:
 * *ready's value (API_RULES_PENDING or API_RULES_OOM), else API_RULES_READY. */
static int not_ready(const struct api *a, const char *pattern)
{
	int r = a->ready ? atomic_load(a->ready) : API_RULES_READY;

	if (r != API_RULES_READY && (strcmp(pattern, "/readyz") == 0 || strncmp(pattern, "/v1/rules", 9) == 0 ||
				     strncmp(pattern, "/v1/paths", 9) == 0))
		return r;
	return API_RULES_READY;
}

/* Run the route that matches method and segments; else 405 with Allow, or 404. */
static void route(struct api *a, const struct api_request *req, const struct segs *g, struct api_response *res)
{
	size_t allow_len = 0;
	char msg[96];

	a->allow[0] = '\0';
	for (size_t i = 0; !g->too_many && i < NROUTES; i++) {
		if (!pattern_matches(routes[i].r.pattern, g))
			continue;
		if (method_is(req, routes[i].r.method)) {
			res->route = (int)i;
			int r = not_ready(a, routes[i].r.pattern);

			if (r == API_RULES_READY) {
				routes[i].fn(a, req, g, res);
				return;
			}
			if (strcmp(routes[i].r.pattern, "/readyz") == 0) {
				/* a Redis that cannot be reached is the reason first (the rules wait for it) */
				routes[i].fn(a, req, g, res);
				if (res->defer || res->status != 200)
					return;
				cJSON_Delete(res->body);
				res->body = NULL;
			}
			if (r == API_RULES_OOM)
				reply_not_ready(res, "redis_oom",
						"not ready: the config file's rules cannot be stored: " REPLY_OOM_TEXT);
			else
				reply_not_ready(res, "rules_not_loaded",
						"not ready: the config file's rules are not stored in Redis yet (see the daemon's log)");
			return;
		}
		allow_len += (size_t)snprintf(a->allow + allow_len, sizeof(a->allow) - allow_len, "%s%s",
					      allow_len ? ", " : "", routes[i].r.method);
	}
	if (!allow_len) {
		/* a path with its slashes left unencoded is the usual way to miss /v1/paths/{path} */
		reply_fail(res, 404, "not_found",
			   strncmp(req->path, "/v1/paths/", 10) == 0
				   ? "no such route (a path in the URL is one segment: percent-encode it, "
				     "e.g. /v1/paths/%2Fapi%2Fusers)"
				   : "no such route",
			   NULL);
		return;
	}
	snprintf(msg, sizeof(msg), "method not allowed; allowed: %s", a->allow);
	reply_fail(res, 405, "method_not_allowed", msg, NULL);
	res->allow = a->allow;
}

int api_refuses(struct api *a, const struct api_request *req)
{
	return needs_token(a, req);
}

enum api_lane api_lane_of(const char *method, const char *path, int *route)
{
	struct api_request req = { .method = method, .path = path };
	enum api_lane lane = API_LANE_INLINE;
	struct segs g;

	*route = -1;
	if (segs_split(path, &g))
		return API_LANE_INLINE; /* out of memory: answered at once (500) */
	for (size_t i = 0; !g.too_many && !g.bad_escape && i < NROUTES; i++) {
		if (pattern_matches(routes[i].r.pattern, &g) && method_is(&req, routes[i].r.method)) {
			*route = (int)i;
			lane = routes[i].lane;
			break;
		}
	}
	segs_free(&g);
	return lane;
}

void api_handle(struct api *a, const struct api_request *req, struct api_response *res)
{
	struct segs g;

	memset(res, 0, sizeof(*res));
	res->route = -1;
	if (needs_token(a, req)) {
		reply_fail(res, 401, "unauthorized",
			   req->authorization ? "wrong bearer token" : "this request needs Authorization: Bearer <token>",
			   NULL);
		res->challenge = 1;
		count_request(a, res);
		return;
	}
	if (segs_split(req->path, &g))
		reply_json(res, 500, NULL);
	else if (g.bad_escape)
		reply_fail(res, 400, "invalid_path", "path has an invalid percent-encoding", NULL);
	else
		route(a, req, &g, res);
	if (!res->defer)
		count_request(a, res);
	segs_free(&g);
}

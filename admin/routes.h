#ifndef SLUICE_ADMIN_ROUTES_H
#define SLUICE_ADMIN_ROUTES_H
/*
 * Inside the admin API (private to admin/): the api object that the router
 * (admin/router.c) and the route groups (admin/routes_*.c) share, and the
 * handlers the route table names.  A handler always answers into `res`
 * (admin/reply.h); a `{name}` or `{path}` argument comes percent-decoded, as
 * `len` bytes that may hold NUL bytes (NUL-terminated too).
 *
 * The admin API sees the worker only through worker/status.h.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "admin/api.h"
#include "core/layout.h"
#include "core/rconn.h"
#include "core/rules.h"
#include "worker/status.h"

#define API_NROUTES_MAX 24 /* routes api_shared.http has room for (router.c checks the table fits) */
#define API_NSTATUS 13     /* statuses counted apart in api_shared.http */
#define API_NDURATION 13   /* request-duration histogram buckets (+Inf apart) */

/* The statuses counted apart, in api_shared.http's order; any other is counted last, as "other". */
extern const int api_statuses[API_NSTATUS];
/* Upper bounds (s) of the request-duration buckets. */
extern const double api_duration_buckets[API_NDURATION];

/* What the api objects of one server share (admin/api.h); every member thread-safe. */
struct api_shared {
	/*
	 * Requests answered, by route (the api_route index; the first index with
	 * no route counts requests no route answered) and status (api_statuses
	 * index; API_NSTATUS = any other).
	 */
	_Atomic uint64_t http[API_NROUTES_MAX + 1][API_NSTATUS + 1];
	/* durations by route: dur[r][i] counts those <= api_duration_buckets[i] (not cumulative) */
	_Atomic uint64_t dur[API_NROUTES_MAX + 1][API_NDURATION + 1];
	_Atomic uint64_t dur_count[API_NROUTES_MAX + 1];
	_Atomic uint64_t dur_sum_us[API_NROUTES_MAX + 1];
	atomic_uint rules_gen;    /* bumped by every rule change through any api object */
	struct jobs *jobs;        /* owned */
	struct sampler *sampler;  /* owned: GET /metrics's Redis side */
	pthread_mutex_t rules_lock;
	struct ruleset rules_last; /* under rules_lock: the rules an api object last loaded, for one
				    * that cannot reach the store's node (a cluster node down), and for
				    * the loop thread's reads while they are fresh */
	int64_t rules_last_checked_us; /* under rules_lock: when a request thread last found them current */
	unsigned rules_last_gen;   /* under rules_lock: rules_gen when it did */
	int64_t metrics_fresh_ms, metrics_wait_ms; /* api_config's, defaults applied (fresh 0: never reuse) */
};

struct api {
	struct rconn *conn;
	char *prefix;
	const struct layout *layouts;
	size_t nlayouts;
	struct worker *worker;    /* or NULL */
	int64_t timeout_ms;       /* api_config.timeout_ms (> 0): the worker's stall allowance (/readyz) */
	char *token;              /* or NULL */
	int auth_reads;
	int no_redis;             /* api_config.no_redis */
	const atomic_int *ready;  /* or NULL: always ready (api_config.ready) */
	struct ruleset rules;     /* cache, refreshed by version before use (route_rules_fresh) */
	int64_t rules_ttl_us;
	int64_t rules_checked_us; /* CLOCK_MONOTONIC of the last version check; 0 = must check */
	char *rules_text;         /* rendered GET /v1/rules body for rules.version, or NULL */
	uint64_t rules_text_version;
	unsigned rules_gen_seen;  /* shared->rules_gen when the rules were last checked */
	char allow[64];           /* the Allow header of the last 405 */
	struct api_shared *shared;
	struct api_shared *own_shared; /* == shared when the api made it (api_config.shared NULL) */
};

/* routes_rules.c */
/*
 * Make a->rules fresh: their version is checked in Redis unless that was done
 * less than rules_ttl ago.  0, or an rconn error after answering it.
 */
int route_rules_fresh(struct api *a, struct api_response *res);
void route_rules_list(struct api *a, struct api_response *res);
void route_rule_get(struct api *a, const char *name, size_t len, struct api_response *res);
void route_rule_put(struct api *a, const struct api_request *req, const char *name, size_t len,
		    struct api_response *res);
void route_rule_delete(struct api *a, const struct api_request *req, const char *name, size_t len,
		       struct api_response *res);

/* routes_paths.c */
void route_paths_list(struct api *a, const struct api_request *req, struct api_response *res);
void route_path_get(struct api *a, const char *path, size_t len, struct api_response *res);
void route_path_reset(struct api *a, const char *path, size_t len, struct api_response *res);

/* routes_jobs.c */
void route_reset_match(struct api *a, const struct api_request *req, struct api_response *res);
void route_jobs_list(struct api *a, struct api_response *res);
void route_job_get(struct api *a, const char *id, size_t len, struct api_response *res);
void route_job_delete(struct api *a, const char *id, size_t len, struct api_response *res);

/* routes_worker.c */
void route_worker(struct api *a, struct api_response *res);
void route_sweep(struct api *a, struct api_response *res);

/* routes_docs.c */
/* GET /openapi.json: docs/openapi.json as built in (application/json). */
void route_openapi(struct api_response *res);
/* GET /: the operator page, admin/page/index.html as built in (text/html; Cache-Control: no-cache). */
void route_page(struct api_response *res);

/* routes_metrics.c */
void route_metrics(struct api *a, struct api_response *res);

/* routes_health.c */
void route_healthz(struct api_response *res);
void route_readyz(struct api *a, struct api_response *res);

#endif

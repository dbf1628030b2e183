/*
 * GET /healthz (liveness: never waits on Redis) and GET /readyz: every
 * slot's primary answers on the admin API's own connections (one node for a
 * single Redis), and the worker can tick (worker_health: its last steps did
 * not fail as a whole, and one ended lately).  A 503 names the reason.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "admin/reply.h"
#include "admin/routes.h"
#include "core/reply.h"
#include "worker/status.h"

void route_healthz(struct api_response *res)
{
	cJSON *o = cJSON_CreateObject();

	if (o && !cJSON_AddStringToObject(o, "status", "ok")) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply_json(res, 200, o);
}

/* The ReadyReason of the worker's failure `err` (a negative errno) and its text. */
static const char *worker_reason(int err, const char *why, int cluster)
{
	if (err == -ETIMEDOUT)
		return "worker_stalled";
	if (err == -ENOSPC || strstr(why, REPLY_OOM_TEXT))
		return "redis_oom";
	if (strstr(why, "CLUSTERDOWN") || strstr(why, "cluster_state:fail"))
		return "cluster_down";
	if (err == -EIO || err == -EAGAIN)
		return cluster ? "cluster_down" : "redis_down";
	return "worker_failing";
}

void route_readyz(struct api *a, struct api_response *res)
{
	char why[400], msg[480];
	int rc = rconn_coverage(a->conn, why, sizeof(why)), err = 0;
	cJSON *o;

	if (rc == -ENOMEM) {
		reply_redis_error(res, a->conn, rc);
		return;
	}
	if (rc) {
		/* which slots, which node, and why: a cluster with a primary down names it */
		snprintf(msg, sizeof(msg), "redis unavailable: %s", why);
		reply_not_ready(res, rconn_is_cluster(a->conn) ? "cluster_down" : "redis_down", msg);
		return;
	}
	if (a->worker && worker_health(a->worker, a->timeout_ms, why, sizeof(why), &err)) {
		snprintf(msg, sizeof(msg), "the worker cannot tick: %s", why);
		reply_not_ready(res, worker_reason(err, why, rconn_is_cluster(a->conn)), msg);
		return;
	}
	o = cJSON_CreateObject();
	if (o && (!cJSON_AddStringToObject(o, "status", "ready") || !cJSON_AddStringToObject(o, "redis", "up") ||
		  !cJSON_AddStringToObject(o, "mode", rconn_is_cluster(a->conn) ? "cluster" : "single") ||
		  !cJSON_AddNumberToObject(o, "primaries", (double)rconn_primaries(a->conn)))) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply_json(res, 200, o);
}

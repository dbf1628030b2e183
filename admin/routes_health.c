/* GET /healthz (liveness: never waits on Redis) and GET /readyz (every slot's primary answers PING: one node for a single Redis). */
#include <errno.h>

#include "admin/reply.h"
#include "admin/routes.h"
#include "core/reply.h"
#include <stdio.h>

void route_healthz(struct api_response *res)
{
	cJSON *o = cJSON_CreateObject();

	if (o && !cJSON_AddStringToObject(o, "status", "ok")) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply_json(res, 200, o);
}

void route_readyz(struct api *a, struct api_response *res)
{
	char why[400], msg[440];
	int rc = rconn_coverage(a->conn, why, sizeof(why));
	cJSON *o;

	if (!rc) {
		o = cJSON_CreateObject();
		if (o && (!cJSON_AddStringToObject(o, "status", "ready") ||
			  !cJSON_AddStringToObject(o, "redis", "up") ||
			  !cJSON_AddStringToObject(o, "mode", rconn_is_cluster(a->conn) ? "cluster" : "single") ||
			  !cJSON_AddNumberToObject(o, "primaries", (double)rconn_primaries(a->conn)))) {
			cJSON_Delete(o);
			o = NULL;
		}
		reply_json(res, 200, o);
		return;
	}
	if (rc == -ENOMEM) {
		reply_redis_error(res, a->conn, rc);
		return;
	}
	/* which slots, which node, and why: a cluster with a primary down names it */
	snprintf(msg, sizeof(msg), "redis unavailable: %s", why);
	reply_fail(res, 503, "redis_unavailable", msg, NULL);
}

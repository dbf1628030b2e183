/* GET /healthz (liveness: never waits on Redis) and GET /readyz (Redis answers PING). */
#include <errno.h>

#include "admin/reply.h"
#include "admin/routes.h"
#include "core/reply.h"

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
	const char *argv[1] = { "PING" };
	size_t lens[1] = { 4 };
	redisReply *r = NULL;
	int rc = rconn_command(a->conn, 1, argv, lens, &r);
	const char *pong;
	size_t n;
	cJSON *o;

	if (!rc && !reply_str(r, &pong, &n)) {
		freeReplyObject(r);
		o = cJSON_CreateObject();
		if (o && (!cJSON_AddStringToObject(o, "status", "ready") ||
			  !cJSON_AddStringToObject(o, "redis", "up"))) {
			cJSON_Delete(o);
			o = NULL;
		}
		reply_json(res, 200, o);
		return;
	}
	if (r)
		freeReplyObject(r);
	reply_redis_error(res, a->conn, rc ? rc : -EIO);
}

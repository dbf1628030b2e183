#include "admin/reply.h"

#include <errno.h>
#include <stdio.h>

#include "core/error.h"
#include "core/jsonv.h"

cJSON *api_error(const char *code, const char *message, const char *field)
{
	cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();

	if (!root || !e || !cJSON_AddStringToObject(e, "code", code) ||
	    !cJSON_AddStringToObject(e, "message", message) ||
	    (field && *field && !cJSON_AddStringToObject(e, "field", field)) ||
	    !cJSON_AddItemToObject(root, "error", e)) {
		cJSON_Delete(root);
		cJSON_Delete(e);
		return NULL;
	}
	return root;
}

void reply_json(struct api_response *res, int status, cJSON *body)
{
	res->status = body ? status : 500;
	res->body = body ? body : api_error("internal", "out of memory", NULL);
}

void reply_text(struct api_response *res, char *text, const char *content_type)
{
	if (!text) {
		reply_json(res, 500, NULL);
		return;
	}
	res->status = 200;
	res->text = text;
	res->content_type = content_type;
}

void reply_fail(struct api_response *res, int status, const char *code, const char *message,
		const char *field)
{
	reply_json(res, status, api_error(code, message, field));
}

void reply_not_ready(struct api_response *res, const char *reason, const char *message)
{
	cJSON *o = api_error("redis_unavailable", message, NULL);
	cJSON *e = o ? cJSON_GetObjectItemCaseSensitive(o, "error") : NULL;

	if (e && !cJSON_AddStringToObject(e, "reason", reason)) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply_json(res, 503, o);
}

void reply_redis_error(struct api_response *res, const struct rconn *conn, int rc)
{
	char msg[300];

	if (rc == -EIO || rc == -EAGAIN) {
		snprintf(msg, sizeof(msg), "redis unavailable: %s",
			 rconn_errstr(conn)[0] ? rconn_errstr(conn) : "not connected");
		reply_fail(res, 503, "redis_unavailable", msg, NULL);
	} else if (rc == -EBUSY) {
		/* 503: a resharding (or a slot map in flux) that the layer's redirections did not see through */
		snprintf(msg, sizeof(msg), "redis unavailable: a cluster slot is being moved, try again: %s",
			 rconn_strerror(conn, rc));
		reply_fail(res, 503, "redis_unavailable", msg, NULL);
	} else if (rc == -ENOSPC) {
		/* 503: Redis is there but refuses writes until memory is freed (the worker frees some) */
		reply_fail(res, 503, "redis_unavailable",
			   REPLY_OOM_TEXT ": it refuses writes until memory is freed or maxmemory is raised", NULL);
	} else if (rc == -ENOMEM) {
		reply_fail(res, 500, "internal", "out of memory", NULL);
	} else if (rc == -EBADMSG) {
		reply_fail(res, 500, "redis_refused",
			   "redis refused the command: one of sluice's keys (rules, rules:version, a registry) "
			   "holds another type or value; nothing was reported as done", NULL);
	} else {
		reply_fail(res, 500, "internal", "unexpected reply from redis", NULL);
	}
}

cJSON *reply_parse_body(const struct api_request *req, struct api_response *res)
{
	struct sl_error err = { 0 };
	cJSON *v = jsonv_parse(req->body ? req->body : "", req->body ? req->body_len : 0,
			       "request body", &err);
	char msg[400];

	if (!v) {
		snprintf(msg, sizeof(msg), "%s %s", err.field, err.message);
		reply_fail(res, 400, "invalid_json", msg, NULL);
	}
	return v;
}

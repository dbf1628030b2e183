#ifndef SLUICE_ADMIN_REPLY_H
#define SLUICE_ADMIN_REPLY_H
/*
 * Filling an api_response (admin/api.h), for the route handlers: a JSON
 * body, an error body, the answer to an rconn/rulestore error, and the
 * request body parsed.  Each sets res->status and res->body or res->text,
 * which then belong to the response (api_handle's caller frees them).  A body
 * that cannot be made (out of memory) turns the answer into a 500 "internal".
 */
#include <cjson/cJSON.h>

#include "admin/api.h"
#include "core/rconn.h"

/* Answer `body` (taken over; NULL means out of memory) with `status`. */
void reply_json(struct api_response *res, int status, cJSON *body);
/* Answer 200 with `text` (taken over, free()d by the caller; NULL means out of memory); `content_type` static. */
void reply_text(struct api_response *res, char *text, const char *content_type);
/* Answer `status` with the error body api_error(code, message, field). */
/*
 * 503 redis_unavailable for GET /readyz (and the routes that wait for the
 * config's rules) with `reason` (static: "redis_down", "redis_oom",
 * "cluster_down", "rules_not_loaded", "worker_failing", "worker_stalled";
 * the OpenAPI's ReadyReason) in the error object beside the message.
 */
void reply_not_ready(struct api_response *res, const char *reason, const char *message);
void reply_fail(struct api_response *res, int status, const char *code, const char *message,
		const char *field);
/*
 * Answer rconn/rulestore error `rc` (negative errno): -EIO or -EAGAIN is 503
 * "redis_unavailable" with `conn`'s last error, -EBUSY (a cluster slot being
 * moved) 503 "redis_unavailable" naming the redirection, -ENOSPC 503 at
 * maxmemory, -EBADMSG (a key of another type) 500 "redis_refused", anything
 * else 500 "internal".
 */
void reply_redis_error(struct api_response *res, const struct rconn *conn, int rc);
/*
 * The request body parsed as one JSON value with nothing after it (the caller
 * cJSON_Delete's it), or NULL after answering 400 "invalid_json".
 */
cJSON *reply_parse_body(const struct api_request *req, struct api_response *res);

#endif

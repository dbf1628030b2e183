/*
 * GET /v1/paths (paged across layouts and shards), GET /v1/paths/{path},
 * and POST /v1/paths/{path}/reset (POST /v1/reset: admin/routes_jobs.c).
 * The state itself is read by core/pathstate.c and reset by core/reset.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/reply.h"
#include "admin/routes.h"
#include "core/glob.h"
#include "core/jsonv.h"
#include "core/keys.h"
#include "core/shard.h"
#include "core/pathstate.h"
#include "core/reset.h"
#include "core/walk.h"

#define PATHS_COUNT_DEFAULT 100
#define PATHS_COUNT_MAX 1000
/*
 * Registry pages one GET /v1/paths may read: every shard's due index of the
 * five own layouts (5 x 1024, in pipelines of up to 256) and some foreign
 * pages, so a listing of few paths ends in one call; a sparse match on more
 * layouts takes more calls, none holding Redis long (an empty ZSCAN costs
 * about a microsecond).
 */
#define PATHS_REGISTRIES_MAX 8192

static void fail_cursor(struct api_response *res)
{
	reply_fail(res, 400, "invalid_query", "cursor must be \"0\" or a cursor this API returned", "cursor");
}

/* count=: 0 and *out, or -EINVAL unless it is a decimal integer 1..PATHS_COUNT_MAX. */
static int parse_count(const char *s, long *out)
{
	char *end;
	long n = strtol(s, &end, 10);

	if (s[0] < '0' || s[0] > '9' || *end || n < 1 || n > PATHS_COUNT_MAX)
		return -EINVAL;
	*out = n;
	return 0;
}

/*
 * Pages, registry after registry (sluice's own layouts shard by shard, then
 * the foreign ones), until `count` paths are collected, every registry is
 * walked, or PATHS_REGISTRIES_MAX pages were read; the cursor answered
 * ("<layout>-<shard>-<registry cursor>", core/walk.h, opaque to clients)
 * says where to go on.
 */
void route_paths_list(struct api *a, const struct api_request *req, struct api_response *res)
{
	const char *match = req->query_match && *req->query_match ? req->query_match : NULL;
	struct walk_pos w;
	long want = PATHS_COUNT_DEFAULT;
	cJSON *o, *arr, *skipped = NULL;
	char next[WALK_POS_MAX];
	int rc = 0;

	if (match && !glob_valid(match, strlen(match))) {
		reply_fail(res, 400, "invalid_query",
			   "match is not a valid glob (a '[' that does not close, or a '\\' at the end)", "match");
		return;
	}
	if (req->query_count && parse_count(req->query_count, &want)) {
		reply_fail(res, 400, "invalid_query", "count must be an integer 1..1000", "count");
		return;
	}
	if (req->query_cursor ? walk_pos_parse(req->query_cursor, a->layouts, a->nlayouts, &w) : (walk_start(&w), 0)) {
		fail_cursor(res);
		return;
	}
	if (a->nlayouts && route_rules_fresh(a, res))
		return;
	if (!(o = cJSON_CreateObject()) || !(arr = cJSON_AddArrayToObject(o, "paths"))) {
		cJSON_Delete(o);
		reply_json(res, 500, NULL);
		return;
	}
	rc = pathstate_page(a->conn, a->layouts, a->nlayouts, &a->rules, match, (size_t)want, PATHS_REGISTRIES_MAX,
			    &w, arr, &skipped);
	if (rc) {
		cJSON_Delete(o);
		cJSON_Delete(skipped);
		if (rc == -ERANGE)
			fail_cursor(res);
		else
			reply_redis_error(res, a->conn, rc);
		return;
	}
	walk_pos_format(&w, next);
	if (!cJSON_AddStringToObject(o, "cursor", next) || (skipped && !cJSON_AddItemToObject(o, "skipped_registries", skipped))) {
		cJSON_Delete(skipped);
		cJSON_Delete(o);
		o = NULL;
	}
	reply_json(res, 200, o);
}

/*
 * The id part of a lease's value "<id>:<token>" (`n` bytes): its length, 0
 * when it has no ':' or the id is not one a daemon has (printable ASCII, no
 * space: a value no daemon wrote).
 */
static size_t id_length(const char *v, size_t n)
{
	while (n > 0 && v[n - 1] != ':')
		n--;
	if (n < 2)
		return 0;
	for (size_t i = 0; i + 1 < n; i++)
		if (v[i] <= ' ' || v[i] > '~')
			return 0;
	return n - 1;
}

/*
 * Add to a path's state "shard" (its shard `k`, 0..1023) and "daemon": the
 * id of the daemon that holds the shard's lease (`lease` is the reply of GET
 * <prefix>{k}:lease, "<id>:<token>"), null when none does.  0 or -ENOMEM.
 */
static int add_daemon(unsigned k, const redisReply *lease, cJSON *o)
{
	const char *v;
	size_t n, idlen;
	int rc = 0;

	if (jsonv_add_int(o, "shard", (int64_t)k))
		rc = -ENOMEM;
	else if (!reply_str(lease, &v, &n) && (idlen = id_length(v, n)) > 0) {
		char *id = malloc(idlen + 1);

		if (id) {
			memcpy(id, v, idlen);
			id[idlen] = '\0';
		}
		if (!id || !cJSON_AddStringToObject(o, "daemon", id))
			rc = -ENOMEM;
		free(id);
	} else if (!cJSON_AddNullToObject(o, "daemon")) {
		rc = -ENOMEM;
	}
	return rc;
}

/* GET /v1/paths/{path}: its state, and its shard's lease read in the same round trip. */
void route_path_get(struct api *a, const char *path, size_t len, struct api_response *res)
{
	unsigned k = shard_of(path, len);
	struct cmdargs lease = { 0 };
	redisReply *lr = NULL;
	cJSON *o = NULL;
	int rc;

	if (route_rules_fresh(a, res))
		return;
	if (cmdargs_str(&lease, "GET") || cmdargs_end(&lease, keys_shard(cmdargs_begin(&lease), a->prefix, k, "lease"))) {
		cmdargs_free(&lease);
		reply_json(res, 500, NULL);
		return;
	}
	rc = pathstate_get(a->conn, a->layouts, a->nlayouts, &a->rules, path, len, &lease, &lr, &o);
	cmdargs_free(&lease);
	if (rc) {
		reply_redis_error(res, a->conn, rc);
		return;
	}
	if (!o) {
		freeReplyObject(lr);
		reply_fail(res, 404, "not_found", "no rule matches this path and it has no state", NULL);
		return;
	}
	rc = add_daemon(k, lr, o);
	freeReplyObject(lr);
	if (rc) {
		cJSON_Delete(o);
		reply_json(res, 500, NULL);
		return;
	}
	reply_json(res, 200, o);
}

void route_path_reset(struct api *a, const char *path, size_t len, struct api_response *res)
{
	cJSON *o = NULL;
	int rc = reset_path(a->conn, a->layouts, a->nlayouts, path, len, &o);

	if (rc) {
		reply_redis_error(res, a->conn, rc);
		return;
	}
	reply_json(res, 200, o);
}

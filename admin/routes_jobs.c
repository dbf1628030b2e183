/*
 * POST /v1/reset (a bulk reset by glob, run in the background: 202 and the
 * job), GET /v1/jobs, GET /v1/jobs/{id}, DELETE /v1/jobs/{id} (cancel).
 * The jobs themselves are admin/jobs.c's; none of these routes waits on Redis.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "admin/jobs.h"
#include "admin/reply.h"
#include "admin/routes.h"
#include "core/glob.h"
#include "core/jsonv.h"
#include "core/rules.h"

/*
 * The fields of a bulk reset body {"match": glob, "dry_run": bool} (borrowed
 * from `body`; *dry NULL when absent): 0, or -EINVAL after answering 400.
 */
static int parse_reset(const cJSON *body, struct api_response *res, const cJSON **match, const cJSON **dry)
{
	const cJSON *it, *m = NULL, *d = NULL;
	const char *dup;

	if (!cJSON_IsObject(body)) {
		reply_fail(res, 400, "invalid_body", "the body must be an object {\"match\": glob, \"dry_run\": bool}",
			   NULL);
		return -EINVAL;
	}
	if ((dup = jsonv_duplicate_key(body))) {
		reply_fail(res, 400, "invalid_body", "a field appears twice", dup);
		return -EINVAL;
	}
	cJSON_ArrayForEach(it, body) {
		if (!strcmp(it->string, "match")) {
			m = it;
		} else if (!strcmp(it->string, "dry_run")) {
			d = it;
		} else {
			reply_fail(res, 400, "invalid_body", "unknown field", it->string);
			return -EINVAL;
		}
	}
	if (!cJSON_IsString(m) || !*m->valuestring || strlen(m->valuestring) > RULE_MATCH_MAX) {
		reply_fail(res, 400, "invalid_body", "match must be a glob of 1..1024 bytes (\"*\" for every path)",
			   "match");
		return -EINVAL;
	}
	if (!glob_valid(m->valuestring, strlen(m->valuestring))) {
		reply_fail(res, 400, "invalid_body",
			   "match is not a valid glob (a '[' that does not close, or a '\\' at the end)", "match");
		return -EINVAL;
	}
	if (d && !cJSON_IsBool(d)) {
		reply_fail(res, 400, "invalid_body", "dry_run must be true or false", "dry_run");
		return -EINVAL;
	}
	*match = m;
	*dry = d;
	return 0;
}

/* The answer to a jobs_* error other than success. */
static void jobs_error(struct api_response *res, int rc, cJSON *job)
{
	if (rc == -ENOENT)
		reply_fail(res, 404, "not_found", "no such job (ids are this daemon's; the last 32 are kept)", NULL);
	else if (rc == -EALREADY && job) {
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(job, "state");
		char msg[96];

		snprintf(msg, sizeof(msg), "the job has ended (%s): there is nothing to cancel",
			 cJSON_IsString(st) ? st->valuestring : "?");
		reply_fail(res, 409, "job_ended", msg, NULL);
	}
	else if (rc == -EBUSY)
		reply_fail(res, 429, "too_many_jobs", "8 jobs wait or run already: try again when one has ended", NULL);
	else if (rc == -ECANCELED)
		reply_fail(res, 503, "shutting_down", "the daemon is stopping", NULL);
	else
		reply_fail(res, 500, "internal", "out of memory", NULL);
	cJSON_Delete(job);
}

/* Location of job `job` (its "id"). */
static void set_location(struct api_response *res, const cJSON *job)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(job, "id");

	if (cJSON_IsString(id))
		snprintf(res->location, sizeof(res->location), "/v1/jobs/%s", id->valuestring);
}

void route_reset_match(struct api *a, const struct api_request *req, struct api_response *res)
{
	const cJSON *match, *dry;
	cJSON *body, *job = NULL;
	int rc;

	if (!(body = reply_parse_body(req, res)))
		return;
	if (parse_reset(body, res, &match, &dry))
		goto out;
	rc = jobs_add_reset(a->shared->jobs, match->valuestring, cJSON_IsTrue(dry), &job);
	if (rc) {
		jobs_error(res, rc, NULL);
		goto out;
	}
	set_location(res, job);
	reply_json(res, 202, job);
out:
	cJSON_Delete(body);
}

void route_jobs_list(struct api *a, struct api_response *res)
{
	cJSON *o = NULL;
	int rc = jobs_list(a->shared->jobs, &o);

	if (rc)
		jobs_error(res, rc, NULL);
	else
		reply_json(res, 200, o);
}

/* GET (`op` jobs_get) or DELETE (jobs_cancel) of job `id` (`len` decoded bytes: a NUL inside names no job). */
static void one_job(struct api *a, const char *id, size_t len, int (*op)(struct jobs *, const char *, cJSON **),
		    struct api_response *res)
{
	cJSON *o = NULL;
	int rc = strlen(id) == len ? op(a->shared->jobs, id, &o) : -ENOENT;

	if (rc)
		jobs_error(res, rc, o);
	else
		reply_json(res, 200, o);
}

void route_job_get(struct api *a, const char *id, size_t len, struct api_response *res)
{
	one_job(a, id, len, jobs_get, res);
}

void route_job_delete(struct api *a, const char *id, size_t len, struct api_response *res)
{
	one_job(a, id, len, jobs_cancel, res);
}

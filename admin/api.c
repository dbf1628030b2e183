#include "admin/api.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pathstate.h"
#include "core/reset.h"
#include "core/clock.h"
#include "core/jsonv.h"
#include "core/log.h"
#include "core/rconn.h"
#include "core/rulestore.h"

#define MAX_SEGMENTS 6
#define PATHS_COUNT_DEFAULT 100
#define PATHS_COUNT_MAX 1000
#define PATHS_SCANS_MAX 16 /* SSCAN pages one GET /v1/paths may read */
#define RESET_BATCH 200 /* paths per pipeline in a bulk reset */
#define SWEEP_WAIT_MS 30000
#define NROUTES_MAX 16

static const int http_statuses[] = { 200, 201, 400, 401, 404, 405, 412, 413, 500, 503 };
#define NSTATUS (sizeof(http_statuses) / sizeof(http_statuses[0]))

struct api {
	struct rconn *conn;
	char *prefix;
	const struct layout *layouts;
	size_t nlayouts;
	struct worker *worker;
	char *token;             /* or NULL */
	int auth_reads;
	struct ruleset rules;    /* cache, refreshed by version before use */
	int64_t rules_ttl_us;
	int64_t rules_checked_us; /* CLOCK_MONOTONIC of the last version check; 0 = must check */
	char *rules_text;        /* rendered GET /v1/rules body for rules.version, or NULL */
	uint64_t rules_text_version;
	char allow[64];          /* the Allow header of the last 405 */
	/* requests answered, by route (NROUTES_MAX = no route) and status (http_statuses, last = other) */
	uint64_t http[NROUTES_MAX + 1][NSTATUS + 1];
};

struct api *api_new(const struct api_config *cfg)
{
	struct api *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->conn = rconn_new(cfg->redis, cfg->timeout_ms);
	a->prefix = strdup(cfg->prefix);
	a->layouts = cfg->layouts;
	a->nlayouts = cfg->nlayouts;
	a->worker = cfg->worker;
	a->auth_reads = cfg->auth_reads;
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
	ruleset_clear(&a->rules);
	free(a->rules_text);
	free(a->prefix);
	if (a->token) {
		explicit_bzero(a->token, strlen(a->token));
		free(a->token);
	}
	free(a);
}

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

/* Answer `body` with `status`; a NULL body (out of memory) becomes a 500 with an error body if one can be made. */
static void reply(struct api_response *res, int status, cJSON *body)
{
	res->status = body ? status : 500;
	res->body = body ? body : api_error("internal", "out of memory", NULL);
}

static void fail(struct api_response *res, int status, const char *code, const char *message,
		 const char *field)
{
	reply(res, status, api_error(code, message, field));
}

/* Map an rconn/rulestore error to the response. */
static void fail_redis(struct api *a, struct api_response *res, int rc)
{
	char msg[300];

	if (rc == -EIO || rc == -EAGAIN) {
		snprintf(msg, sizeof(msg), "redis unavailable: %s",
			 rconn_errstr(a->conn)[0] ? rconn_errstr(a->conn) : "not connected");
		fail(res, 503, "redis_unavailable", msg, NULL);
	} else if (rc == -ENOMEM) {
		fail(res, 500, "internal", "out of memory", NULL);
	} else if (rc == -EBADMSG) {
		fail(res, 500, "redis_refused",
		     "redis refused the command: one of sluice's keys (rules, rules:version, a registry) "
		     "holds another type or value; nothing was reported as done", NULL);
	} else {
		fail(res, 500, "internal", "unexpected reply from redis", NULL);
	}
}

/* A path split into percent-decoded segments (each NUL-terminated, with its length). */
struct segs {
	char *s[MAX_SEGMENTS];
	size_t len[MAX_SEGMENTS];
	int n;
	int too_many;
	int bad_escape;
};

static int hexval(char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

static void segs_free(struct segs *g)
{
	for (int i = 0; i < g->n; i++)
		free(g->s[i]);
}

/* 0, or -ENOMEM.  "/a/b%2Fc" -> ["a", "b/c"]; a trailing '/' adds an empty segment. */
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
			if (p[i] == '%' && !(i + 2 < n && hexval(p[i + 1]) && hexval(p[i + 2])))
				g->bad_escape = 1;
		copy = strndup(p, n);
		if (!copy)
			return -ENOMEM;
		/* libmicrohttpd's decoder; returns the decoded length (NUL bytes kept) */
		g->len[g->n] = MHD_http_unescape(copy);
		if (!jsonv_utf8_valid(copy, g->len[g->n]))
			g->bad_escape = 1; /* a path is text: UTF-8 (NUL allowed, as %00) */
		g->s[g->n++] = copy;
		if (!end)
			return 0;
		p = end + 1;
	}
}

/*
 * The rules, fresh: their version is checked in Redis unless it was checked
 * less than rules_ttl ago (a round trip per request would cost the admin
 * thread most of its time under load).
 */
static int refresh(struct api *a, struct api_response *res)
{
	int64_t now = clock_mono_us();
	int changed = 0, rc;

	if (a->rules.loaded && a->rules_checked_us && now - a->rules_checked_us < a->rules_ttl_us)
		return 0;
	rc = rulestore_refresh(a->conn, a->prefix, &a->rules, 0, &changed, NULL);
	if (rc) {
		fail_redis(a, res, rc);
		return rc;
	}
	a->rules_checked_us = now;
	if (changed) {
		free(a->rules_text);
		a->rules_text = NULL;
	}
	return 0;
}

/* After a change through this api: the next request checks Redis again. */
static void rules_changed(struct api *a)
{
	a->rules_checked_us = 0;
}

/* ---- handlers -------------------------------------------------------- */

static void h_healthz(struct api_response *res)
{
	cJSON *o = cJSON_CreateObject();

	if (o && !cJSON_AddStringToObject(o, "status", "ok")) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply(res, 200, o);
}

static void h_readyz(struct api *a, struct api_response *res)
{
	const char *argv[1] = { "PING" };
	size_t lens[1] = { 4 };
	redisReply *r = NULL;
	int rc = rconn_command(a->conn, 1, argv, lens, &r);
	cJSON *o;

	if (!rc && r->type == REDIS_REPLY_STATUS) {
		freeReplyObject(r);
		o = cJSON_CreateObject();
		if (o && (!cJSON_AddStringToObject(o, "status", "ready") ||
			  !cJSON_AddStringToObject(o, "redis", "up"))) {
			cJSON_Delete(o);
			o = NULL;
		}
		reply(res, 200, o);
		return;
	}
	if (r)
		freeReplyObject(r);
	fail_redis(a, res, rc ? rc : -EIO);
}

static void h_rules_list(struct api *a, struct api_response *res)
{
	cJSON *o, *arr;

	if (refresh(a, res))
		return;
	/* the rendered list is kept per version: most reads change nothing */
	if (a->rules_text && a->rules_text_version == a->rules.version) {
		res->status = 200;
		res->text = strdup(a->rules_text);
		res->content_type = "application/json";
		if (!res->text)
			reply(res, 500, NULL);
		return;
	}
	o = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(o, "rules");
	if (!arr || jsonv_add_int(o, "version", (int64_t)a->rules.version)) {
		cJSON_Delete(o);
		reply(res, 500, NULL);
		return;
	}
	for (size_t i = 0; i < a->rules.n; i++) {
		cJSON *r = rule_to_json(a->rules.v[i]);

		if (!r || !cJSON_AddItemToArray(arr, r)) {
			cJSON_Delete(r);
			cJSON_Delete(o);
			reply(res, 500, NULL);
			return;
		}
	}
	free(a->rules_text);
	a->rules_text = cJSON_PrintUnformatted(o);
	a->rules_text_version = a->rules.version;
	reply(res, 200, o);
}

static void not_found_rule(struct api_response *res, const char *name)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "no rule named \"%.64s\"", name);
	fail(res, 404, "not_found", msg, NULL);
}

static void h_rule_get(struct api *a, const struct segs *g, struct api_response *res)
{
	const struct rule *r;

	if (refresh(a, res))
		return;
	r = rule_name_valid(g->s[2]) && strlen(g->s[2]) == g->len[2] ? ruleset_get(&a->rules, g->s[2]) : NULL;
	if (!r) {
		not_found_rule(res, g->s[2]);
		return;
	}
	if (rulestore_etag(r, res->etag)) {
		reply(res, 500, NULL);
		return;
	}
	reply(res, 200, rule_to_json(r));
}

/* Parse a request body as one JSON value with nothing after it. NULL and a 400 otherwise. */
static cJSON *parse_body(const struct api_request *req, struct api_response *res)
{
	struct sl_error err = { 0 };
	cJSON *v = jsonv_parse(req->body ? req->body : "", req->body ? req->body_len : 0,
			       "request body", &err);
	char msg[400];

	if (!v) {
		snprintf(msg, sizeof(msg), "%s %s", err.field, err.message);
		fail(res, 400, "invalid_json", msg, NULL);
	}
	return v;
}

static void h_rule_put(struct api *a, const struct api_request *req, const struct segs *g,
		       struct api_response *res)
{
	struct sl_error err = { 0 };
	struct rule *r = NULL;
	int created = 0, rc;
	cJSON *body;

	if (strlen(g->s[2]) != g->len[2] || !rule_name_valid(g->s[2])) {
		fail(res, 400, "invalid_rule", "rule name must be 1..64 characters of [A-Za-z0-9_.-]", "name");
		return;
	}
	if (!(body = parse_body(req, res)))
		return;
	rc = rule_from_json(body, g->s[2], NULL, &r, &err);
	cJSON_Delete(body);
	if (rc) {
		char msg[400];

		if (rc == -ENOMEM) {
			reply(res, 500, NULL);
			return;
		}
		snprintf(msg, sizeof(msg), "%s%s%s", err.field, err.field[0] ? ": " : "", err.message);
		fail(res, 400, "invalid_rule", msg, err.field);
		return;
	}
	if ((rc = rulestore_put_if(a->conn, a->prefix, r, req->if_match, &created, NULL))) {
		if (rc == -ESTALE)
			fail(res, 412, "precondition_failed",
			     "If-Match does not match the stored rule (changed or deleted since it was read)", NULL);
		else
			fail_redis(a, res, rc);
		rule_free(r);
		return;
	}
	if (rulestore_etag(r, res->etag))
		res->etag[0] = '\0';
	rules_changed(a);
	log_event(LOG_INFO, "rule_changed", "rule=%s algorithm=%s change=%s", r->name,
		  algorithm_name(r->algorithm), created ? "created" : "replaced");
	reply(res, created ? 201 : 200, rule_to_json(r));
	rule_free(r);
}

static void h_rule_delete(struct api *a, const struct api_request *req, const struct segs *g,
			  struct api_response *res)
{
	int deleted = 0, rc;
	cJSON *o;

	if (strlen(g->s[2]) != g->len[2] || !rule_name_valid(g->s[2])) {
		not_found_rule(res, g->s[2]);
		return;
	}
	if ((rc = rulestore_delete_if(a->conn, a->prefix, g->s[2], req->if_match, &deleted))) {
		if (rc == -ESTALE)
			fail(res, 412, "precondition_failed",
			     "If-Match does not match the stored rule (changed since it was read)", NULL);
		else
			fail_redis(a, res, rc);
		return;
	}
	if (!deleted) {
		not_found_rule(res, g->s[2]);
		return;
	}
	rules_changed(a);
	log_event(LOG_INFO, "rule_changed", "rule=%s change=deleted", g->s[2]);
	o = cJSON_CreateObject();
	if (o && !cJSON_AddStringToObject(o, "deleted", g->s[2])) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply(res, 200, o);
}

/* Cursor of GET /v1/paths: "0" (start) or "<layout>-<sscan cursor>". */
static int parse_cursor(const char *s, size_t nlayouts, size_t *layout, char *sscan, size_t cap)
{
	const char *dash;
	char *end;
	unsigned long l;

	if (!s || strcmp(s, "0") == 0) {
		*layout = 0;
		snprintf(sscan, cap, "0");
		return 0;
	}
	dash = strchr(s, '-');
	if (!dash || dash == s || !dash[1] || strlen(dash + 1) > 20 || strlen(dash + 1) >= cap ||
	    s[0] < '0' || s[0] > '9')
		return -EINVAL;
	l = strtoul(s, &end, 10);
	if (end != dash || l >= nlayouts)
		return -EINVAL;
	for (const char *p = dash + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	*layout = l;
	snprintf(sscan, cap, "%s", dash + 1);
	return 0;
}

/*
 * GET /v1/paths: SSCAN pages, registry after registry, until `count` paths are
 * collected, every registry is walked, or PATHS_SCANS_MAX pages were read (a
 * sparse MATCH must not hold the request long); the cursor says where to go on.
 */
static void h_paths_list(struct api *a, const struct api_request *req, struct api_response *res)
{
	char sscan[24], count[24], next[48];
	size_t layout;
	long cnt = PATHS_COUNT_DEFAULT, got = 0;
	cJSON *o = NULL, *arr;
	int rc = 0, done = 0;

	if (req->query_count) {
		char *end;

		cnt = strtol(req->query_count, &end, 10);
		if (req->query_count[0] < '0' || req->query_count[0] > '9' || *end || cnt < 1 ||
		    cnt > PATHS_COUNT_MAX) {
			fail(res, 400, "invalid_query", "count must be an integer 1..1000", "count");
			return;
		}
	}
	if (parse_cursor(req->query_cursor, a->nlayouts, &layout, sscan, sizeof(sscan))) {
		fail(res, 400, "invalid_query", "cursor must be \"0\" or a cursor this API returned", "cursor");
		return;
	}
	if (a->nlayouts && refresh(a, res))
		return;
	if (!(o = cJSON_CreateObject()) || !(arr = cJSON_AddArrayToObject(o, "paths"))) {
		cJSON_Delete(o);
		reply(res, 500, NULL);
		return;
	}
	done = a->nlayouts == 0;
	for (int scans = 0; !done && got < cnt && scans < PATHS_SCANS_MAX && !rc; scans++) {
		const struct layout *l = &a->layouts[layout];
		const char *argv[9];
		size_t lens[9], n, kept = 0;
		const char **paths = NULL;
		size_t *plens = NULL;
		redisReply *r = NULL;
		struct strbuf keyglob = { 0 };
		int argc = 0;

		snprintf(count, sizeof(count), "%ld", cnt - got);
		if (l->scan) {
			/* no registry: the keys themselves, MATCH on the key (the path's glob inside the template) */
			const char *star = strchr(l->scan_match, '*');

			strbuf_add(&keyglob, l->scan_match, (size_t)(star - l->scan_match));
			if (req->query_match && *req->query_match)
				strbuf_add(&keyglob, req->query_match, strlen(req->query_match));
			else
				strbuf_add(&keyglob, "*", 1);
			if (strbuf_add(&keyglob, star + 1, strlen(star + 1))) {
				rc = -ENOMEM;
				break;
			}
			argv[argc] = "SCAN", lens[argc++] = 4;
			argv[argc] = sscan, lens[argc++] = strlen(sscan);
			argv[argc] = "MATCH", lens[argc++] = 5;
			argv[argc] = keyglob.p, lens[argc++] = keyglob.len;
			argv[argc] = "TYPE", lens[argc++] = 4;
			argv[argc] = l->scan_type, lens[argc] = strlen(l->scan_type), argc++;
		} else {
			argv[argc] = "SSCAN", lens[argc++] = 5;
			argv[argc] = l->registry, lens[argc] = strlen(argv[argc]), argc++;
			argv[argc] = sscan, lens[argc++] = strlen(sscan);
			if (req->query_match && *req->query_match) {
				argv[argc] = "MATCH", lens[argc++] = 5;
				argv[argc] = req->query_match, lens[argc] = strlen(req->query_match), argc++;
			}
		}
		argv[argc] = "COUNT", lens[argc++] = 5;
		argv[argc] = count, lens[argc++] = strlen(count);
		rc = rconn_command(a->conn, argc, argv, lens, &r);
		strbuf_free(&keyglob);
		if (rc)
			break;
		if (r->type == REDIS_REPLY_ERROR) {
			/* an out-of-range cursor is the caller's; a registry of another type is ours */
			int bad_cursor = strstr(r->str, "cursor") != NULL;

			freeReplyObject(r);
			cJSON_Delete(o);
			if (bad_cursor)
				fail(res, 400, "invalid_query", "cursor must be \"0\" or a cursor this API returned",
				     "cursor");
			else
				fail_redis(a, res, -EBADMSG);
			return;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[0]->len >= sizeof(sscan) || r->element[1]->type != REDIS_REPLY_ARRAY) {
			freeReplyObject(r);
			rc = -EPROTO;
			break;
		}
		n = r->element[1]->elements;
		paths = calloc(n + 1, sizeof(*paths));
		plens = calloc(n + 1, sizeof(*plens));
		if (!paths || !plens) {
			rc = -ENOMEM;
		} else {
			for (size_t i = 0; i < n; i++) {
				const char *m = r->element[1]->element[i]->str;
				size_t mlen = r->element[1]->element[i]->len;

				/* a scan layout yields keys: show the path inside */
				if (l->scan && layout_path_of(l, m, mlen, &m, &mlen))
					continue;
				paths[kept] = m;
				plens[kept++] = mlen;
			}
			rc = pathstate_list(a->conn, l, &a->rules, paths, plens, kept, arr);
			got += (long)kept;
		}
		/* where the walk goes on */
		if (strcmp(r->element[0]->str, "0") != 0) {
			memcpy(sscan, r->element[0]->str, r->element[0]->len + 1);
		} else if (layout + 1 < a->nlayouts) {
			layout++;
			strcpy(sscan, "0");
		} else {
			done = 1;
		}
		free(paths);
		free(plens);
		freeReplyObject(r);
	}
	if (rc) {
		cJSON_Delete(o);
		fail_redis(a, res, rc);
		return;
	}
	if (done)
		snprintf(next, sizeof(next), "0");
	else
		snprintf(next, sizeof(next), "%zu-%s", layout, sscan);
	if (!cJSON_AddStringToObject(o, "cursor", next)) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply(res, 200, o);
}

static void h_path_get(struct api *a, const struct segs *g, struct api_response *res)
{
	cJSON *o = NULL;
	int rc;

	if (refresh(a, res))
		return;
	rc = pathstate_get(a->conn, a->layouts, a->nlayouts, &a->rules, g->s[2], g->len[2], &o);
	if (rc) {
		fail_redis(a, res, rc);
		return;
	}
	if (!o) {
		fail(res, 404, "not_found", "no rule matches this path and it has no state", NULL);
		return;
	}
	reply(res, 200, o);
}

static void h_path_reset(struct api *a, const struct segs *g, struct api_response *res)
{
	cJSON *o = NULL;
	int rc = reset_path(a->conn, a->layouts, a->nlayouts, g->s[2], g->len[2], &o);

	if (rc) {
		fail_redis(a, res, rc);
		return;
	}
	reply(res, 200, o);
}

static int add_result(cJSON *o, const char *name, const char *entries, const struct worker_result *r,
		      int64_t us)
{
	cJSON *j = cJSON_CreateObject();

	if (!j || !cJSON_AddItemToObject(o, name, j)) {
		cJSON_Delete(j);
		return -ENOMEM;
	}
	return jsonv_add_int(j, "paths", (int64_t)r->paths) || jsonv_add_int(j, entries, (int64_t)r->entries) ||
	       jsonv_add_int(j, "emptied", (int64_t)r->emptied) ||
	       jsonv_add_int(j, "unmatched", (int64_t)r->unmatched) ||
	       jsonv_add_int(j, "skipped", (int64_t)r->skipped) || jsonv_add_int(j, "batches", (int64_t)r->batches) ||
	       jsonv_add_int(j, "duration_us", us)
		       ? -ENOMEM : 0;
}

/* POST /v1/worker/sweep: one full sweep of every job now, run by the worker's own thread. */
static void h_sweep(struct api *a, struct api_response *res)
{
	struct worker_result r[WORKER__JOBS];
	int64_t us[WORKER__JOBS];
	cJSON *o;
	int rc;

	if (!a->worker) {
		fail(res, 503, "no_worker", "this process runs no worker", NULL);
		return;
	}
	rc = worker_request_sweep(a->worker, SWEEP_WAIT_MS, r, us);
	if (rc == -ECANCELED) {
		fail(res, 503, "sweep_failed", "sluiced is stopping", NULL);
		return;
	}
	if (rc == -ETIMEDOUT) {
		fail(res, 503, "sweep_timeout", "the sweep did not finish within 30 s; it goes on in the worker", NULL);
		return;
	}
	if (rc) {
		struct worker_status st;
		char msg[256];

		worker_status(a->worker, &st);
		snprintf(msg, sizeof(msg), "the sweep failed: %s",
			 st.job[WORKER_DRAIN].last_error[0] ? st.job[WORKER_DRAIN].last_error
							    : st.job[WORKER_PRUNE].last_error);
		fail(res, 503, rc == -EIO || rc == -EAGAIN ? "redis_unavailable" : "sweep_failed", msg, NULL);
		return;
	}
	o = cJSON_CreateObject();
	if (o && (add_result(o, "drain", "drained", &r[WORKER_DRAIN], us[WORKER_DRAIN]) ||
		  add_result(o, "prune", "pruned", &r[WORKER_PRUNE], us[WORKER_PRUNE]))) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply(res, 200, o);
}

/* POST /v1/reset {"match": glob, "dry_run": bool} */
static void h_reset_match(struct api *a, const struct api_request *req, struct api_response *res)
{
	const cJSON *it, *match = NULL, *dry = NULL;
	cJSON *body, *o = NULL;
	const char *dup;
	int rc;

	if (!(body = parse_body(req, res)))
		return;
	if (!cJSON_IsObject(body)) {
		fail(res, 400, "invalid_body", "the body must be an object {\"match\": glob, \"dry_run\": bool}", NULL);
		goto out;
	}
	if ((dup = jsonv_duplicate_key(body))) {
		fail(res, 400, "invalid_body", "a field appears twice", dup);
		goto out;
	}
	cJSON_ArrayForEach(it, body) {
		if (!strcmp(it->string, "match")) {
			match = it;
		} else if (!strcmp(it->string, "dry_run")) {
			dry = it;
		} else {
			fail(res, 400, "invalid_body", "unknown field", it->string);
			goto out;
		}
	}
	if (!cJSON_IsString(match) || !*match->valuestring || strlen(match->valuestring) > RULE_MATCH_MAX) {
		fail(res, 400, "invalid_body", "match must be a glob of 1..1024 bytes (\"*\" for every path)", "match");
		goto out;
	}
	if (dry && !cJSON_IsBool(dry)) {
		fail(res, 400, "invalid_body", "dry_run must be true or false", "dry_run");
		goto out;
	}
	rc = reset_match(a->conn, a->layouts, a->nlayouts, match->valuestring, cJSON_IsTrue(dry),
				   RESET_BATCH, &o);
	if (rc) {
		fail_redis(a, res, rc);
		goto out;
	}
	reply(res, 200, o);
out:
	cJSON_Delete(body);
}

static int add_job(cJSON *jobs, const char *name, const char *entries, const struct worker_job_status *j)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddItemToObject(jobs, name, o)) {
		cJSON_Delete(o);
		return -ENOMEM;
	}
	return jsonv_add_int(o, "ticks", (int64_t)j->steps) || jsonv_add_int(o, "sweeps", (int64_t)j->sweeps) ||
	       jsonv_add_int(o, "batches", (int64_t)j->batches) || jsonv_add_int(o, "paths", (int64_t)j->paths) ||
	       jsonv_add_int(o, entries, (int64_t)j->entries) || jsonv_add_int(o, "emptied", (int64_t)j->emptied) ||
	       jsonv_add_int(o, "unmatched", (int64_t)j->unmatched) || jsonv_add_int(o, "skipped", (int64_t)j->skipped) ||
	       jsonv_add_int(o, "errors", (int64_t)j->errors) ||
	       jsonv_add_int(o, "last_duration_us", j->last_step_us) ||
	       jsonv_add_int(o, "last_sweep_us", j->last_sweep_us) || jsonv_add_int(o, "lag_us", j->lag_us) ||
	       jsonv_add_int(o, "max_lag_us", j->max_lag_us) || jsonv_add_int(o, "overruns", (int64_t)j->overruns) ||
	       !cJSON_AddBoolToObject(o, "in_sweep", j->in_sweep) ||
	       !(j->last_error[0] ? cJSON_AddStringToObject(o, "last_error", j->last_error)
				  : cJSON_AddNullToObject(o, "last_error"))
		       ? -ENOMEM : 0;
}

static void h_worker(struct api *a, struct api_response *res)
{
	struct worker_status st;
	cJSON *o, *jobs, *rules, *lays = NULL;
	int bad;

	if (!a->worker) {
		fail(res, 503, "no_worker", "this process runs no worker", NULL);
		return;
	}
	worker_status(a->worker, &st);
	o = cJSON_CreateObject();
	if (!o) {
		reply(res, 500, NULL);
		return;
	}
	bad = !cJSON_AddBoolToObject(o, "redis_up", st.redis_up) ||
	      jsonv_add_int(o, "connects", (int64_t)st.connects) ||
	      jsonv_add_int(o, "ticks", (int64_t)(st.job[WORKER_DRAIN].steps + st.job[WORKER_PRUNE].steps)) ||
	      jsonv_add_int(o, "drained", (int64_t)st.job[WORKER_DRAIN].entries) ||
	      jsonv_add_int(o, "pruned", (int64_t)st.job[WORKER_PRUNE].entries) ||
	      jsonv_add_int(o, "errors", (int64_t)(st.job[WORKER_DRAIN].errors + st.job[WORKER_PRUNE].errors)) ||
	      /* the top-level last_error: any job's (drain first) until that job succeeds again */
	      !(st.job[WORKER_DRAIN].last_error[0]
			? cJSON_AddStringToObject(o, "last_error", st.job[WORKER_DRAIN].last_error)
			: st.job[WORKER_PRUNE].last_error[0]
				  ? cJSON_AddStringToObject(o, "last_error", st.job[WORKER_PRUNE].last_error)
				  : cJSON_AddNullToObject(o, "last_error")) ||
	      !(rules = cJSON_AddObjectToObject(o, "rules")) ||
	      jsonv_add_int(rules, "version", (int64_t)st.rules_version) ||
	      jsonv_add_int(rules, "loaded", (int64_t)st.rules) ||
	      jsonv_add_int(rules, "invalid", (int64_t)st.rules_invalid) ||
	      !(jobs = cJSON_AddObjectToObject(o, "jobs")) ||
	      add_job(jobs, "drain", "drained", &st.job[WORKER_DRAIN]) ||
	      add_job(jobs, "prune", "pruned", &st.job[WORKER_PRUNE]) ||
	      !(lays = cJSON_AddObjectToObject(o, "layouts"));
	for (size_t i = 0; !bad && i < st.nlayouts; i++) {
		const struct worker_layout_status *ls = &st.layout[i];
		cJSON *lo = cJSON_AddObjectToObject(lays, ls->name);

		bad = !lo || !cJSON_AddStringToObject(lo, "algorithm", algorithm_name(ls->algorithm)) ||
		      jsonv_add_int(lo, "paths", (int64_t)ls->paths) ||
		      jsonv_add_int(lo, worker_action_name(ls->algorithm), (int64_t)ls->entries) ||
		      jsonv_add_int(lo, "emptied", (int64_t)ls->emptied) ||
		      jsonv_add_int(lo, "unmatched", (int64_t)ls->unmatched) ||
		      jsonv_add_int(lo, "skipped", (int64_t)ls->skipped);
	}
	if (bad) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply(res, 200, o);
}

/* ---- GET /metrics (Prometheus text format 0.0.4) ---------------------------- */

static int mprintf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int mprintf(struct strbuf *b, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -ENOMEM;
	return strbuf_add(b, line, (size_t)n);
}

static void h_metrics(struct api *a, struct api_response *res);
static size_t route_count(void);
static const char *route_label(size_t i, char *buf, size_t cap);

static void h_metrics(struct api *a, struct api_response *res)
{
	struct strbuf b = { 0 };
	struct worker_status st;
	struct rbatch *batch = rbatch_new();
	int bad = !batch, up = 0;

	/* Redis: reachable?  registry sizes */
	if (!bad) {
		const char *ping[1] = { "PING" };
		size_t pl[1] = { 4 };

		bad = rbatch_cmd(batch, 1, ping, pl) != 0;
		for (size_t i = 0; !bad && i < a->nlayouts; i++) {
			const char *argv[2] = { "SCARD", a->layouts[i].registry };
			size_t lens[2] = { 5, strlen(a->layouts[i].registry) };

			bad = rbatch_cmd(batch, 2, argv, lens) != 0;
		}
		up = !bad && rbatch_run(a->conn, batch) == 0 && rbatch_reply(batch, 0) &&
		     rbatch_reply(batch, 0)->type == REDIS_REPLY_STATUS;
	}
	bad = bad || mprintf(&b, "# HELP sluice_build_info sluiced version.\n# TYPE sluice_build_info gauge\n"
				 "sluice_build_info{version=\"%s\"} 1\n", SLUICE_VERSION);
	bad = bad || mprintf(&b, "# HELP sluice_redis_up 1 when the admin API reached Redis for this scrape.\n"
				 "# TYPE sluice_redis_up gauge\nsluice_redis_up %d\n", up);
	if (up) {
		bad = bad || mprintf(&b, "# HELP sluice_registry_paths Paths in each layout's registry set.\n"
					 "# TYPE sluice_registry_paths gauge\n");
		for (size_t i = 0; !bad && i < a->nlayouts; i++) {
			const redisReply *r = rbatch_reply(batch, i + 1);

			if (r && r->type == REDIS_REPLY_INTEGER)
				bad = mprintf(&b, "sluice_registry_paths{layout=\"%s\"} %lld\n", a->layouts[i].name,
					      r->integer);
		}
	}
	if (a->worker && !bad) {
		static const struct {
			const char *name, *help;
			size_t off;
		} counters[] = {
			{ "sluice_worker_ticks_total", "Worker ticks (steps) run.", offsetof(struct worker_job_status, steps) },
			{ "sluice_sweeps_total", "Complete sweeps over a job's registries.", offsetof(struct worker_job_status, sweeps) },
			{ "sluice_script_calls_total", "Batched script calls sent.", offsetof(struct worker_job_status, batches) },
			{ "sluice_paths_visited_total", "Registry members visited.", offsetof(struct worker_job_status, paths) },
			{ "sluice_paths_emptied_total", "Paths whose state emptied and left the registry.", offsetof(struct worker_job_status, emptied) },
			{ "sluice_paths_unmatched_total", "Paths left alone: no rule, or a rule of another algorithm.", offsetof(struct worker_job_status, unmatched) },
			{ "sluice_paths_skipped_total", "Paths left alone: key of another type, or an empty member.", offsetof(struct worker_job_status, skipped) },
			{ "sluice_worker_errors_total", "Worker ticks that failed.", offsetof(struct worker_job_status, errors) },
			{ "sluice_tick_overruns_total", "Ticks skipped because a tick ran past the next.", offsetof(struct worker_job_status, overruns) },
		};
		static const struct {
			const char *action, *name, *help;
		} per_action[] = {
			{ "drained", "sluice_drained_entries_total", "Leaky-bucket entries drained by the worker." },
			{ "pruned", "sluice_pruned_entries_total",
			  "Expired entries (sliding log) or sub-window fields (sliding counter) pruned." },
			{ "repaired", "sluice_repaired_counters_total", "Fixed-window counters given the TTL they lacked." },
			{ "reclaimed", "sluice_reclaimed_buckets_total", "Token buckets deleted because they refilled to capacity." },
		};

		worker_status(a->worker, &st);
		for (size_t k = 0; !bad && k < sizeof(per_action) / sizeof(per_action[0]); k++) {
			bad = mprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", per_action[k].name, per_action[k].help,
				      per_action[k].name);
			for (size_t i = 0; !bad && i < st.nlayouts; i++)
				if (!strcmp(worker_action_name(st.layout[i].algorithm), per_action[k].action))
					bad = mprintf(&b, "%s{algorithm=\"%s\",layout=\"%s\"} %llu\n", per_action[k].name,
						      algorithm_name(st.layout[i].algorithm), st.layout[i].name,
						      (unsigned long long)st.layout[i].entries);
		}
		bad = bad || mprintf(&b, "# HELP sluice_layout_paths_emptied_total Paths whose state emptied, per layout.\n"
					 "# TYPE sluice_layout_paths_emptied_total counter\n");
		for (size_t i = 0; !bad && i < st.nlayouts; i++)
			bad = mprintf(&b, "sluice_layout_paths_emptied_total{algorithm=\"%s\",layout=\"%s\"} %llu\n",
				      algorithm_name(st.layout[i].algorithm), st.layout[i].name,
				      (unsigned long long)st.layout[i].emptied);
		for (size_t k = 0; !bad && k < sizeof(counters) / sizeof(counters[0]); k++) {
			bad = mprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", counters[k].name, counters[k].help,
				      counters[k].name);
			for (int j = 0; !bad && j < WORKER__JOBS; j++)
				bad = mprintf(&b, "%s{job=\"%s\"} %llu\n", counters[k].name,
					      worker_job_name((enum worker_job)j),
					      (unsigned long long)*(const uint64_t *)((const char *)&st.job[j] + counters[k].off));
		}
		bad = bad || mprintf(&b, "# HELP sluice_sweep_duration_seconds Duration of complete sweeps.\n"
					 "# TYPE sluice_sweep_duration_seconds histogram\n");
		for (int j = 0; !bad && j < WORKER__JOBS; j++) {
			const char *job = worker_job_name((enum worker_job)j);

			for (int i = 0; !bad && i < WORKER_SWEEP_BUCKETS; i++)
				bad = mprintf(&b, "sluice_sweep_duration_seconds_bucket{job=\"%s\",le=\"%g\"} %llu\n", job,
					      worker_sweep_buckets[i], (unsigned long long)st.job[j].sweep_hist[i]);
			bad = bad || mprintf(&b, "sluice_sweep_duration_seconds_bucket{job=\"%s\",le=\"+Inf\"} %llu\n"
						 "sluice_sweep_duration_seconds_sum{job=\"%s\"} %.6f\n"
						 "sluice_sweep_duration_seconds_count{job=\"%s\"} %llu\n",
					     job, (unsigned long long)st.job[j].sweeps, job, st.job[j].sweep_seconds, job,
					     (unsigned long long)st.job[j].sweeps);
		}
		bad = bad || mprintf(&b, "# HELP sluice_tick_lag_seconds How late the last tick started.\n"
					 "# TYPE sluice_tick_lag_seconds gauge\n");
		for (int j = 0; !bad && j < WORKER__JOBS; j++)
			bad = mprintf(&b, "sluice_tick_lag_seconds{job=\"%s\"} %.6f\n", worker_job_name((enum worker_job)j),
				      (double)st.job[j].lag_us / 1e6);
		bad = bad || mprintf(&b, "# HELP sluice_worker_redis_up 1 when the worker's last tick reached Redis.\n"
					 "# TYPE sluice_worker_redis_up gauge\nsluice_worker_redis_up %d\n"
					 "# HELP sluice_rules_loaded Rules the worker holds.\n# TYPE sluice_rules_loaded gauge\n"
					 "sluice_rules_loaded %zu\n"
					 "# HELP sluice_rules_invalid Stored rules that fail validation (skipped).\n"
					 "# TYPE sluice_rules_invalid gauge\nsluice_rules_invalid %zu\n",
				     st.redis_up, st.rules, st.rules_invalid);
	}
	bad = bad || mprintf(&b, "# HELP sluice_http_requests_total Admin API requests by route, method and status.\n"
				 "# TYPE sluice_http_requests_total counter\n");
	for (size_t i = 0; !bad && i <= route_count(); i++)
		for (size_t k = 0; !bad && k <= NSTATUS; k++) {
			char status[8], label[64];

			if (!a->http[i][k])
				continue;
			snprintf(status, sizeof(status), "%d", k < NSTATUS ? http_statuses[k] : 0);
			bad = mprintf(&b, "sluice_http_requests_total{route=\"%s\",status=\"%s\"} %llu\n",
				      route_label(i, label, sizeof(label)), k < NSTATUS ? status : "other", (unsigned long long)a->http[i][k]);
		}
	rbatch_free(batch);
	if (bad || !b.p) {
		strbuf_free(&b);
		reply(res, 500, NULL);
		return;
	}
	res->status = 200;
	res->text = b.p;
	res->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

/* ---- routing ------------------------------------------------------------ */

/* Adapters: every handler as (api, request, path segments, response). */
#define ADAPT(name, call)                                                                     \
	static void r_##name(struct api *a, const struct api_request *req, const struct segs *g,   \
			     struct api_response *res)                                              \
	{                                                                                     \
		(void)a;                                                                      \
		(void)req;                                                                    \
		(void)g;                                                                      \
		call;                                                                         \
	}
ADAPT(healthz, h_healthz(res))
ADAPT(readyz, h_readyz(a, res))
ADAPT(metrics, h_metrics(a, res))
ADAPT(rules_list, h_rules_list(a, res))
ADAPT(rule_get, h_rule_get(a, g, res))
ADAPT(rule_put, h_rule_put(a, req, g, res))
ADAPT(rule_delete, h_rule_delete(a, req, g, res))
ADAPT(paths_list, h_paths_list(a, req, res))
ADAPT(path_get, h_path_get(a, g, res))
ADAPT(path_reset, h_path_reset(a, g, res))
ADAPT(reset_match, h_reset_match(a, req, res))
ADAPT(worker, h_worker(a, res))
ADAPT(sweep, h_sweep(a, res))
#undef ADAPT

typedef void (*route_fn)(struct api *, const struct api_request *, const struct segs *,
			 struct api_response *);

/* Patterns are segment lists; "{...}" matches one non-empty segment (percent-decoded). */
static const struct {
	struct api_route r;
	route_fn fn;
} routes[] = {
	{ { "GET", "/healthz" }, r_healthz },
	{ { "GET", "/readyz" }, r_readyz },
	{ { "GET", "/metrics" }, r_metrics },
	{ { "GET", "/v1/rules" }, r_rules_list },
	{ { "GET", "/v1/rules/{name}" }, r_rule_get },
	{ { "PUT", "/v1/rules/{name}" }, r_rule_put },
	{ { "DELETE", "/v1/rules/{name}" }, r_rule_delete },
	{ { "GET", "/v1/paths" }, r_paths_list },
	{ { "GET", "/v1/paths/{path}" }, r_path_get },
	{ { "POST", "/v1/paths/{path}/reset" }, r_path_reset },
	{ { "POST", "/v1/reset" }, r_reset_match },
	{ { "GET", "/v1/worker" }, r_worker },
	{ { "POST", "/v1/worker/sweep" }, r_sweep },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

const struct api_route *api_route(size_t i)
{
	return i < NROUTES ? &routes[i].r : NULL;
}

static size_t route_count(void)
{
	return NROUTES;
}

/* "GET /v1/rules/{name}", or "unmatched" for requests no route answered. */
static const char *route_label(size_t i, char *buf, size_t cap)
{
	if (i >= NROUTES)
		return "unmatched";
	snprintf(buf, cap, "%s %s", routes[i].r.method, routes[i].r.pattern);
	return buf;
}

static void count_request(struct api *a, const struct api_response *res)
{
	size_t r = res->route >= 0 ? (size_t)res->route : NROUTES, k;

	for (k = 0; k < NSTATUS && http_statuses[k] != res->status; k++)
		;
	a->http[r][k]++;
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

static int is_probe(const char *path)
{
	return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0;
}

void api_handle(struct api *a, const struct api_request *req, struct api_response *res)
{
	struct segs g;
	int read_only = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
	size_t allow_len = 0;

	memset(res, 0, sizeof(*res));
	res->route = -1;
	if (a->token && (!read_only || (a->auth_reads && !is_probe(req->path))) && !authorized(a, req)) {
		fail(res, 401, "unauthorized",
		     req->authorization ? "wrong bearer token" : "this request needs Authorization: Bearer <token>",
		     NULL);
		res->challenge = 1;
		count_request(a, res);
		return;
	}
	if (segs_split(req->path, &g)) {
		reply(res, 500, NULL);
		return;
	}
	if (g.bad_escape) {
		fail(res, 400, "invalid_path", "path has an invalid percent-encoding or is not UTF-8", NULL);
		goto out;
	}
	a->allow[0] = '\0';
	for (size_t i = 0; !g.too_many && i < NROUTES; i++) {
		if (!pattern_matches(routes[i].r.pattern, &g))
			continue;
		if (method_is(req, routes[i].r.method)) {
			res->route = (int)i;
			routes[i].fn(a, req, &g, res);
			goto out;
		}
		allow_len += (size_t)snprintf(a->allow + allow_len, sizeof(a->allow) - allow_len, "%s%s",
					      allow_len ? ", " : "", routes[i].r.method);
	}
	if (allow_len) {
		char msg[96];

		snprintf(msg, sizeof(msg), "method not allowed; allowed: %s", a->allow);
		fail(res, 405, "method_not_allowed", msg, NULL);
		res->allow = a->allow;
		goto out;
	}
	fail(res, 404, "not_found", "no such route", NULL);
out:
	count_request(a, res);
	segs_free(&g);
}

/*
 * GET /v1/paths (paged across layouts), GET /v1/paths/{path},
 * POST /v1/paths/{path}/reset and POST /v1/reset (bulk reset by glob).
 * The state itself is read and reset by core/pathstate.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/reply.h"
#include "admin/routes.h"
#include "core/jsonv.h"
#include "core/pathstate.h"

#define PATHS_COUNT_DEFAULT 100
#define PATHS_COUNT_MAX 1000
#define PATHS_SCANS_MAX 16 /* SCAN/SSCAN pages one GET /v1/paths may read */
#define RESET_BATCH 200    /* paths per pipeline in a bulk reset */

/* Where GET /v1/paths is: layout after layout, a SCAN or SSCAN cursor within each. */
struct walk {
	size_t layout;     /* index into api.layouts */
	char cursor[24];   /* that layout's cursor, decimal as Redis gives it */
	int done;          /* every layout walked */
	int bad_cursor;    /* Redis refused the cursor (one this API did not return) */
};

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

/* cursor= (NULL when absent): "0" (start) or "<layout>-<cursor>"; 0 and *w, or -EINVAL. */
static int parse_cursor(const char *s, size_t nlayouts, struct walk *w)
{
	const char *dash;
	char *end;
	unsigned long l;

	if (!s || strcmp(s, "0") == 0) {
		w->layout = 0;
		snprintf(w->cursor, sizeof(w->cursor), "0");
		return 0;
	}
	dash = strchr(s, '-');
	if (!dash || dash == s || !dash[1] || strlen(dash + 1) > 20 || strlen(dash + 1) >= sizeof(w->cursor) ||
	    s[0] < '0' || s[0] > '9')
		return -EINVAL;
	l = strtoul(s, &end, 10);
	if (end != dash || l >= nlayouts)
		return -EINVAL;
	for (const char *p = dash + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	w->layout = l;
	snprintf(w->cursor, sizeof(w->cursor), "%s", dash + 1);
	return 0;
}

/* A command being put together (arguments borrowed). */
struct cmd {
	const char *argv[10];
	size_t lens[10];
	int argc;
};

static void arg(struct cmd *c, const char *s, size_t n)
{
	c->argv[c->argc] = s;
	c->lens[c->argc++] = n;
}

/*
 * Read one page of the walk's layout `l`, up to about `want` members: SSCAN
 * of its registry, or for a layout without one SCAN of the keys themselves,
 * MATCH on the key (the path's glob inside the key template).  `match` is the
 * path glob or NULL.  0 and *out (caller frees), or an rconn error / -ENOMEM.
 */
static int scan_page(struct api *a, const struct layout *l, const char *match, const struct walk *w,
		     long want, redisReply **out)
{
	struct strbuf keyglob = { 0 };
	struct cmd c = { .argc = 0 };
	char count[24];
	int rc = 0;

	snprintf(count, sizeof(count), "%ld", want);
	if (l->scan) {
		const char *star = strchr(l->scan_match, '*');

		if (strbuf_add(&keyglob, l->scan_match, (size_t)(star - l->scan_match)) ||
		    strbuf_add(&keyglob, match ? match : "*", match ? strlen(match) : 1) ||
		    strbuf_add(&keyglob, star + 1, strlen(star + 1))) {
			rc = -ENOMEM;
			goto out;
		}
		arg(&c, "SCAN", 4);
		arg(&c, w->cursor, strlen(w->cursor));
		arg(&c, "MATCH", 5);
		arg(&c, keyglob.p, keyglob.len);
		arg(&c, "TYPE", 4);
		arg(&c, l->scan_type, strlen(l->scan_type));
	} else {
		arg(&c, "SSCAN", 5);
		arg(&c, l->registry, strlen(l->registry));
		arg(&c, w->cursor, strlen(w->cursor));
		if (match) {
			arg(&c, "MATCH", 5);
			arg(&c, match, strlen(match));
		}
	}
	arg(&c, "COUNT", 5);
	arg(&c, count, strlen(count));
	rc = rconn_command(a->conn, c.argc, c.argv, c.lens, out);
out:
	strbuf_free(&keyglob);
	return rc;
}

/*
 * Append the state of the paths in `members` (a page of layout `l`; a scan
 * layout's keys stand for the paths inside them) to `arr`, adding their number
 * to *got.  0, or as pathstate_list.
 */
static int page_states(struct api *a, const struct layout *l, const redisReply *members, cJSON *arr,
		       long *got)
{
	size_t n = members->elements, kept = 0;
	const char **paths = calloc(n + 1, sizeof(*paths));
	size_t *plens = calloc(n + 1, sizeof(*plens));
	int rc = -ENOMEM;

	if (paths && plens) {
		for (size_t i = 0; i < n; i++) {
			const char *m = members->element[i]->str;
			size_t mlen = members->element[i]->len;

			if (l->scan && layout_path_of(l, m, mlen, &m, &mlen))
				continue;
			paths[kept] = m;
			plens[kept++] = mlen;
		}
		rc = pathstate_list(a->conn, l, &a->rules, paths, plens, kept, arr);
		*got += (long)kept;
	}
	free(paths);
	free(plens);
	return rc;
}

/* Move the walk to Redis's next `cursor`: on in this layout, to the next layout, or done. */
static void walk_on(struct walk *w, size_t nlayouts, const redisReply *cursor)
{
	if (strcmp(cursor->str, "0") != 0) {
		memcpy(w->cursor, cursor->str, cursor->len + 1);
	} else if (w->layout + 1 < nlayouts) {
		w->layout++;
		strcpy(w->cursor, "0");
	} else {
		w->done = 1;
	}
}

/*
 * One step of the walk: a page read, its paths' state appended to `arr`, the
 * walk moved on.  0, or an rconn error / -ENOMEM / -EPROTO, or -EBADMSG when
 * Redis refused the command (w->bad_cursor set when it refused the cursor).
 */
static int walk_page(struct api *a, const char *match, long want, struct walk *w, cJSON *arr, long *got)
{
	const struct layout *l = &a->layouts[w->layout];
	redisReply *r = NULL;
	int rc = scan_page(a, l, match, w, want, &r);

	if (rc)
		return rc;
	if (r->type == REDIS_REPLY_ERROR) {
		/* an out-of-range cursor is the caller's; a registry of another type is ours */
		w->bad_cursor = strstr(r->str, "cursor") != NULL;
		rc = -EBADMSG;
	} else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
		   r->element[0]->len >= sizeof(w->cursor) || r->element[1]->type != REDIS_REPLY_ARRAY) {
		rc = -EPROTO;
	} else {
		rc = page_states(a, l, r->element[1], arr, got);
		walk_on(w, a->nlayouts, r->element[0]);
	}
	freeReplyObject(r);
	return rc;
}

/*
 * Pages, registry after registry, until `count` paths are collected, every
 * registry is walked, or PATHS_SCANS_MAX pages were read (a sparse MATCH must
 * not hold the request long); the cursor answered says where to go on.
 */
void route_paths_list(struct api *a, const struct api_request *req, struct api_response *res)
{
	const char *match = req->query_match && *req->query_match ? req->query_match : NULL;
	struct walk w = { .layout = 0 };
	long want = PATHS_COUNT_DEFAULT, got = 0;
	cJSON *o, *arr;
	char next[48];
	int rc = 0;

	if (req->query_count && parse_count(req->query_count, &want)) {
		reply_fail(res, 400, "invalid_query", "count must be an integer 1..1000", "count");
		return;
	}
	if (parse_cursor(req->query_cursor, a->nlayouts, &w)) {
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
	w.done = a->nlayouts == 0;
	for (int scans = 0; !w.done && got < want && scans < PATHS_SCANS_MAX && !rc; scans++)
		rc = walk_page(a, match, want - got, &w, arr, &got);
	if (rc) {
		cJSON_Delete(o);
		if (w.bad_cursor)
			fail_cursor(res);
		else
			reply_redis_error(res, a->conn, rc);
		return;
	}
	if (w.done)
		snprintf(next, sizeof(next), "0");
	else
		snprintf(next, sizeof(next), "%zu-%s", w.layout, w.cursor);
	if (!cJSON_AddStringToObject(o, "cursor", next)) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply_json(res, 200, o);
}

void route_path_get(struct api *a, const char *path, size_t len, struct api_response *res)
{
	cJSON *o = NULL;
	int rc;

	if (route_rules_fresh(a, res))
		return;
	if ((rc = pathstate_get(a->conn, a->layouts, a->nlayouts, &a->rules, path, len, &o))) {
		reply_redis_error(res, a->conn, rc);
		return;
	}
	if (!o) {
		reply_fail(res, 404, "not_found", "no rule matches this path and it has no state", NULL);
		return;
	}
	reply_json(res, 200, o);
}

void route_path_reset(struct api *a, const char *path, size_t len, struct api_response *res)
{
	cJSON *o = NULL;
	int rc = pathstate_reset(a->conn, a->layouts, a->nlayouts, path, len, &o);

	if (rc) {
		reply_redis_error(res, a->conn, rc);
		return;
	}
	reply_json(res, 200, o);
}

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
	if (d && !cJSON_IsBool(d)) {
		reply_fail(res, 400, "invalid_body", "dry_run must be true or false", "dry_run");
		return -EINVAL;
	}
	*match = m;
	*dry = d;
	return 0;
}

void route_reset_match(struct api *a, const struct api_request *req, struct api_response *res)
{
	const cJSON *match, *dry;
	cJSON *body, *o = NULL;
	int rc;

	if (!(body = reply_parse_body(req, res)))
		return;
	if (parse_reset(body, res, &match, &dry))
		goto out;
	rc = pathstate_reset_match(a->conn, a->layouts, a->nlayouts, match->valuestring, cJSON_IsTrue(dry),
				   RESET_BATCH, &o);
	if (rc) {
		reply_redis_error(res, a->conn, rc);
		goto out;
	}
	reply_json(res, 200, o);
out:
	cJSON_Delete(body);
}

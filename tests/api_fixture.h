#ifndef SLUICE_TEST_API_FIXTURE_H
#define SLUICE_TEST_API_FIXTURE_H
/*
 * The fixture of the admin API suites (check_api.c, check_rules_api.c,
 * check_paths_api.c, check_reset_api.c, check_worker_api.c, check_metrics.c,
 * check_http.c): an api object (admin/api.h) and a worker on sluice's default
 * layouts, against the harness's private redis-server.
 *
 * Most tests call api_handle() directly (call_on and its short forms) and
 * compare the rendered body (cJSON_PrintUnformatted) with the exact text
 * expected (ck_res), or status, error code and field (ck_err).  State is made
 * the way a client makes it: EVAL of the embedded client scripts with an
 * explicit `now` (lb_admit, sl_admit).
 *
 * Time: the admin state scripts read Redis TIME.  Entries the state must report
 * exactly are admitted at explicit times one hour AHEAD of the server clock;
 * the scripts never move stored time backward, so they evaluate at the stored
 * time and every value (count, remaining, reset_ms) is exact.  Only ttl_ms
 * (a PTTL) runs on the real clock: it is checked in a range and removed before
 * the whole body is compared.
 *
 * Tests marked "BUG:" show defects found while writing these suites.
 *
 * Header-only and static, as tests/api_objects.h (the connection `c`, layouts,
 * target, worker `w` and `api` it adds to).  A suite uses setup/teardown as
 * its checked fixture (test_tcase).
 */
#include "tests/api_objects.h"

#define RULES_HASH "sluice:rules"
#define RULES_VER "sluice:rules:version"

/* A valid leaky bucket rule body, and its echo under the name "api". */
#define API_BODY "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}"
#define API_ECHO "{\"name\":\"api\",\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}"

/* The last response: status, rendered text, the text parsed back, Allow. */
static struct {
	char what[300];    /* "METHOD path", for failure messages */
	int status;
	char *text;
	cJSON *json;
	const char *allow;
	int challenge;
	char etag[24];
} res;

API_FIXTURE void res_clear(void)
{
	free(res.text);
	cJSON_Delete(res.json);
	memset(&res, 0, sizeof(res));
}

API_FIXTURE void setup(void)
{
	objects_up();
}

API_FIXTURE void teardown(void)
{
	res_clear();
	objects_down();
}

/* ---- requests --------------------------------------------------------------- */

/* Authorization and If-Match headers for the next call_on (then reset), or NULL. */
static const char *next_auth, *next_if_match;

/* One request to api `a`; the response lands in `res`.  Returns the status. */
API_FIXTURE int call_on(struct api *a, const char *method, const char *path, const char *body, size_t len,
		   const char *match, const char *cursor, const char *count)
{
	struct api_request rq = { 0 };
	struct api_response rs;

	res_clear();
	snprintf(res.what, sizeof(res.what), "%s %s", method, path);
	rq.method = method;
	rq.path = path;
	rq.query_match = match;
	rq.query_cursor = cursor;
	rq.query_count = count;
	rq.body = body;
	rq.body_len = len;
	rq.authorization = next_auth;
	rq.if_match = next_if_match;
	next_auth = next_if_match = NULL;
	api_handle(a, &rq, &rs);
	res.status = rs.status;
	res.challenge = rs.challenge;
	memcpy(res.etag, rs.etag, sizeof(res.etag));
	res.allow = rs.allow;
	ck_assert_msg(rs.body != NULL || rs.text != NULL, "%s: no body (status %d)", res.what, rs.status);
	if (rs.text) {
		/* a body rendered before (GET /v1/rules keeps it per version) */
		ck_assert_str_eq(rs.content_type, "application/json");
		res.text = rs.text;
	} else {
		res.text = cJSON_PrintUnformatted(rs.body);
		cJSON_Delete(rs.body);
	}
	ck_assert_ptr_nonnull(res.text);
	res.json = cJSON_Parse(res.text);
	ck_assert_msg(res.json != NULL, "%s: body is not JSON: %s", res.what, res.text);
	return res.status;
}

API_FIXTURE int call(const char *method, const char *path, const char *body)
{
	return call_on(api, method, path, body, body ? strlen(body) : 0, NULL, NULL, NULL);
}

API_FIXTURE int get(const char *path)
{
	return call("GET", path, NULL);
}

API_FIXTURE int put(const char *path, const char *body)
{
	return call("PUT", path, body);
}

API_FIXTURE int list(const char *match, const char *cursor, const char *count)
{
	return call_on(api, "GET", "/v1/paths", NULL, 0, match, cursor, count);
}

/* Item at a dotted path ("error.code") in the last body, or NULL. */
static cJSON *jat(const char *dotted)
{
	char key[128];
	cJSON *o = res.json;
	const char *p = dotted;

	while (o && *p) {
		size_t n = strcspn(p, ".");

		ck_assert_uint_lt(n, sizeof(key));
		memcpy(key, p, n);
		key[n] = '\0';
		o = cJSON_GetObjectItemCaseSensitive(o, key);
		p += n;
		if (*p == '.')
			p++;
	}
	return o;
}

static const char *jstr(const char *dotted)
{
	cJSON *o = jat(dotted);

	ck_assert_msg(cJSON_IsString(o), "%s: %s is not a string in %s", res.what, dotted, res.text);
	return o->valuestring;
}

API_FIXTURE long long jint(const char *dotted)
{
	cJSON *o = jat(dotted);

	ck_assert_msg(cJSON_IsNumber(o), "%s: %s is not a number in %s", res.what, dotted, res.text);
	return (long long)o->valuedouble;
}

/* Remove top-level integer `key` from the parsed body, returning it. */
API_FIXTURE long long take_int(const char *key)
{
	long long v = jint(key);

	cJSON_DeleteItemFromObjectCaseSensitive(res.json, key);
	return v;
}

/* The parsed body (after take_int edits) printed again equals `want`. */
#define ck_json_is(want)                                                                  \
	do {                                                                              \
		char *got_ = cJSON_PrintUnformatted(res.json);                            \
		ck_assert_msg(got_ && strcmp(got_, (want)) == 0, "%s:\n got  %s\n want %s", \
			      res.what, got_ ? got_ : "(null)", (want));                  \
		free(got_);                                                               \
	} while (0)

/* Status and exact body. */
#define ck_res(st, body)                                                                         \
	do {                                                                                     \
		ck_assert_msg(res.status == (st), "%s: status %d, want %d; body %s", res.what,   \
			      res.status, (st), res.text);                                       \
		ck_assert_msg(strcmp(res.text, (body)) == 0, "%s:\n got  %s\n want %s", res.what, \
			      res.text, (body));                                                 \
	} while (0)

/* An error body {"error":{"code","message"[,"field"]}} with nothing else, and its status. */
API_FIXTURE void check_err(const char *file, int line, int status, const char *code, const char *field)
{
	cJSON *e = jat("error"), *f = jat("error.field"), *m = jat("error.message");

	ck_assert_msg(res.status == status, "%s:%d: %s: status %d, want %d; body %s", file, line, res.what,
		      res.status, status, res.text);
	ck_assert_msg(cJSON_IsObject(e) && cJSON_GetArraySize(res.json) == 1,
		      "%s:%d: %s: not an error body: %s", file, line, res.what, res.text);
	ck_assert_msg(strcmp(jstr("error.code"), code) == 0, "%s:%d: %s: code %s, want %s (%s)", file, line,
		      res.what, jstr("error.code"), code, res.text);
	ck_assert_msg(cJSON_IsString(m) && m->valuestring[0], "%s:%d: %s: no message: %s", file, line,
		      res.what, res.text);
	if (field)
		ck_assert_msg(cJSON_IsString(f) && strcmp(f->valuestring, field) == 0,
			      "%s:%d: %s: field %s, want %s (%s)", file, line, res.what,
			      cJSON_IsString(f) ? f->valuestring : "(none)", field, res.text);
	else
		ck_assert_msg(f == NULL, "%s:%d: %s: unexpected field: %s", file, line, res.what, res.text);
	ck_assert_int_eq(cJSON_GetArraySize(e), field ? 3 : 2);
	if (status != 405)
		ck_assert_ptr_null(res.allow);
}
#define ck_err(status, code, field) check_err(__FILE__, __LINE__, (status), (code), (field))

/* ---- Redis state -------------------------------------------------------------- */

/* One request through the client leaky bucket script (lua/leaky_bucket.lua) at `now`; must be admitted. */
API_FIXTURE void lb_admit(const char *path, long long capacity, const char *rate, long long now)
{
	ck_assert_msg(test_acquire(c, TEST_EVAL, "leaky_bucket", path, now, test_num(capacity), rate, "1", NULL) == 1,
		      "leaky_bucket %s at %lld not admitted", path, now);
}

/* One request through lua/sliding_log.lua at `now`; must be admitted. */
API_FIXTURE void sl_admit(const char *path, long long limit, long long window_ms, long long now)
{
	ck_assert_msg(test_acquire(c, TEST_EVAL, "sliding_log", path, now, test_num(limit), test_num(window_ms), NULL) == 1,
		      "sliding_log %s at %lld not admitted", path, now);
}

/* The rules hash and version as text: "<HLEN>/<version or nil>/<HGET api or nil>". */

API_FIXTURE void rules_snapshot(char *buf, size_t cap)
{
	long long n = test_cmd_int(c, "HLEN %s", RULES_HASH);
	redisReply *v = test_cmd(c, "GET %s", RULES_VER);
	redisReply *a = test_cmd(c, "HGET %s api", RULES_HASH);

	snprintf(buf, cap, "%lld/%s/%s", n, v->type == REDIS_REPLY_STRING ? v->str : "nil",
		 a->type == REDIS_REPLY_STRING ? a->str : "nil");
	freeReplyObject(v);
	freeReplyObject(a);
}

API_FIXTURE long long rules_version(void)
{
	redisReply *v = test_cmd(c, "GET %s", RULES_VER);
	long long n = v->type == REDIS_REPLY_STRING ? atoll(v->str) : 0;

	ck_assert(v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_NIL);
	freeReplyObject(v);
	return n;
}

API_FIXTURE void put_ok(const char *name, const char *body)
{
	char url[128];

	snprintf(url, sizeof(url), "/v1/rules/%s", name);
	put(url, body);
	ck_assert_msg(res.status == 200 || res.status == 201, "PUT %s: %d %s", url, res.status, res.text);
}

#endif

#include "tests/api_fixture.h"

#include <time.h>

#include "core/shard.h"

#include "core/clock.h"
#include "core/keys.h"
#include "core/strbuf.h"

struct last_response res;
const char *next_auth, *next_if_match;

const char *ready_body(void)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "{\"status\":\"ready\",\"redis\":\"up\",\"mode\":\"%s\",\"primaries\":%d}",
		 test_mode_name(), test_srv_primaries());
	return buf;
}

void primary_of(int i, struct primary *p)
{
	const struct test_cluster *cl = test_srv_cluster();

	ck_assert_int_lt(i, test_srv_primaries());
	memset(p, 0, sizeof(*p));
	snprintf(p->addr, sizeof(p->addr), "127.0.0.1:%d", cl ? cl->node[i].srv.port : test_srv.port);
	if (!cl) {
		p->slots = TEST_CLUSTER_SLOTS;
		snprintf(p->ranges, sizeof(p->ranges), "0-16383");
		return;
	}
	for (int s = 0; s < TEST_CLUSTER_SLOTS; s++) {
		size_t k = strlen(p->ranges);
		int end = s;

		if (cl->owner_of[s] != i)
			continue;
		while (end + 1 < TEST_CLUSTER_SLOTS && cl->owner_of[end + 1] == i)
			end++;
		snprintf(p->ranges + k, sizeof(p->ranges) - k, "%s%d-%d", k ? " " : "", s, end);
		p->slots += end - s + 1;
		s = end;
	}
}

void res_clear(void)
{
	free(res.text);
	cJSON_Delete(res.json);
	memset(&res, 0, sizeof(res));
}

void api_setup(void)
{
	objects_up();
}

void api_teardown(void)
{
	res_clear();
	objects_down();
}

int call_on(struct api *a, const char *method, const char *path, const char *body, size_t len,
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
	memcpy(res.location, rs.location, sizeof(res.location));
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

int call(const char *method, const char *path, const char *body)
{
	return call_on(api, method, path, body, body ? strlen(body) : 0, NULL, NULL, NULL);
}

/* The done job in `res` as the answer of a synchronous reset (reset_wait_on). */
static void job_as_result(void)
{
	static const char *const keep[] = { "match", "dry_run", "paths", "keys", "entries", "skipped_registries" };
	cJSON *o = cJSON_CreateObject(), *err = cJSON_GetObjectItemCaseSensitive(res.json, "error");
	const char *state = jstr("state");

	ck_assert_ptr_nonnull(o);
	if (!strcmp(state, "failed")) {
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");

		ck_assert_msg(cJSON_IsString(code), "a failed job names its error: %s", res.text);
		res.status = !strcmp(code->valuestring, "redis_unavailable") ? 503 : 500;
		cJSON_AddItemToObject(o, "error", cJSON_DetachItemViaPointer(res.json, err));
	} else {
		ck_assert_msg(!strcmp(state, "done"), "the job ended %s: %s", state, res.text);
		ck_assert_msg(!err, "a done job has no error: %s", res.text);
		ck_assert_msg(jint("walked") >= jint("paths"), "walked >= paths: %s", res.text);
		ck_assert_msg(cJSON_IsFalse(jat("cancel_requested")), "not cancelled: %s", res.text);
		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
			cJSON *v = cJSON_GetObjectItemCaseSensitive(res.json, keep[i]);

			if (v)
				cJSON_AddItemToObject(o, keep[i], cJSON_DetachItemViaPointer(res.json, v));
		}
		res.status = 200;
	}
	cJSON_Delete(res.json);
	free(res.text);
	res.json = o;
	res.text = cJSON_PrintUnformatted(o);
	ck_assert_ptr_nonnull(res.text);
}

int reset_wait_on(struct api *a, const char *body)
{
	char id[24], where[64], what[300];
	const char *state;
	int64_t until = clock_mono_ms() + 60000;

	if (call_on(a, "POST", "/v1/reset", body, body ? strlen(body) : 0, NULL, NULL, NULL) != 202)
		return res.status;
	snprintf(what, sizeof(what), "%s", res.what);
	snprintf(id, sizeof(id), "%s", jstr("id"));
	state = jstr("state");
	ck_assert_msg(!strcmp(state, "queued") || !strcmp(state, "running"), "a new job: %s", res.text);
	snprintf(where, sizeof(where), "/v1/jobs/%s", id);
	ck_assert_str_eq(res.location, where);
	for (;;) {
		struct timespec ms = { 0, 1000000 };

		ck_assert_int_eq(call_on(a, "GET", where, NULL, 0, NULL, NULL, NULL), 200);
		ck_assert_str_eq(jstr("id"), id);
		state = jstr("state");
		if (strcmp(state, "queued") && strcmp(state, "running"))
			break;
		ck_assert_msg(clock_mono_ms() < until, "job %s still %s after 60 s", id, state);
		nanosleep(&ms, NULL);
	}
	job_as_result();
	snprintf(res.what, sizeof(res.what), "%s", what);
	return res.status;
}

int reset_wait(const char *body)
{
	return reset_wait_on(api, body);
}

int get(const char *path)
{
	return call("GET", path, NULL);
}

int put(const char *path, const char *body)
{
	return call("PUT", path, body);
}

int list(const char *match, const char *cursor, const char *count)
{
	return call_on(api, "GET", "/v1/paths", NULL, 0, match, cursor, count);
}

cJSON *jat(const char *dotted)
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

const char *jstr(const char *dotted)
{
	cJSON *o = jat(dotted);

	ck_assert_msg(cJSON_IsString(o), "%s: %s is not a string in %s", res.what, dotted, res.text);
	return o->valuestring;
}

long long jint(const char *dotted)
{
	cJSON *o = jat(dotted);

	ck_assert_msg(cJSON_IsNumber(o), "%s: %s is not a number in %s", res.what, dotted, res.text);
	return (long long)o->valuedouble;
}

long long take_int(const char *key)
{
	long long v = jint(key);

	cJSON_DeleteItemFromObjectCaseSensitive(res.json, key);
	return v;
}

void check_err(const char *file, int line, int status, const char *code, const char *field)
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
	/* a readiness 503 has its reason beside code and message */
	ck_assert_int_eq(cJSON_GetArraySize(e), (field ? 3 : 2) + (jat("error.reason") != NULL));
	if (status != 405)
		ck_assert_ptr_null(res.allow);
}

void lb_admit(const char *path, long long capacity, const char *rate, long long now)
{
	ck_assert_msg(test_acquire(c, TEST_EVAL, "leaky_bucket", path, now, test_num(capacity), rate, NULL) == 1,
		      "leaky_bucket %s at %lld not admitted", path, now);
}

void lb_admit_bin(const char *path, size_t len, long long capacity, const char *rate, long long now)
{
	struct strbuf k[5] = { { 0 } };
	const char *argv[11];
	size_t lens[11];
	unsigned shard = shard_of(path, len);

	ck_assert_int_eq(keys_path(&k[0], PFX, "leaky_bucket", path, len), 0);
	ck_assert_int_eq(keys_path(&k[1], PFX, "leaky_bucket_meta", path, len), 0);
	ck_assert_int_eq(keys_shard(&k[2], PFX, shard, "registry:leaky_bucket"), 0);
	ck_assert_int_eq(keys_shard(&k[3], PFX, shard, "rules"), 0);
	ck_assert_int_eq(keys_shard(&k[4], PFX, shard, "stats"), 0);
	for (int i = 0; i < 5; i++)
		argv[i] = k[i].p, lens[i] = k[i].len;
	argv[5] = path, lens[5] = len;
	argv[6] = "", argv[7] = test_num(now), argv[8] = "", argv[9] = test_num(capacity), argv[10] = rate;
	for (int i = 6; i < 11; i++)
		lens[i] = strlen(argv[i]);
	ck_assert_msg(test_script_allowed(test_script_argv(c, TEST_EVAL, "leaky_bucket", 5, 11, argv, lens),
					  "leaky_bucket") == 1, "leaky_bucket (%zu-byte path) at %lld not admitted", len, now);
	for (int i = 0; i < 5; i++)
		strbuf_free(&k[i]);
}

void put_state(const char *algorithm, const char *path, int entries, long long now, long long due)
{
	const char *key = test_key(path, algorithm);

	if (!strcmp(algorithm, "leaky_bucket") || !strcmp(algorithm, "sliding_log")) {
		for (int i = 0; i < entries; i++)
			freeReplyObject(test_cmd(c, "ZADD %s %lld %lld:%d", key, now + i, now + i, i));
	} else {
		freeReplyObject(test_cmd(c, "HSET %s count %d", key, entries));
	}
	freeReplyObject(test_cmd(c, "ZADD %s %lld %s", test_registry(algorithm, path), due, path));
}

long long due_of_path(const char *algorithm, const char *path)
{
	redisReply *r = test_cmd(c, "ZSCORE %s %s", test_registry(algorithm, path), path);
	long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

	ck_assert_msg(r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL, "ZSCORE: %s",
		      r->type == REDIS_REPLY_ERROR ? r->str : "not a string");
	freeReplyObject(r);
	return v;
}

char *encoded_url(const char *path, size_t len, const char *suffix)
{
	struct strbuf b = { 0 };
	char hex[4];

	ck_assert_int_eq(strbuf_add(&b, "/v1/paths/", 10), 0);
	for (size_t i = 0; i < len; i++) {
		snprintf(hex, sizeof(hex), "%%%02X", (unsigned char)path[i]);
		ck_assert_int_eq(strbuf_add(&b, hex, 3), 0);
	}
	ck_assert_int_eq(strbuf_add(&b, suffix, strlen(suffix)), 0);
	return b.p;
}

void sl_admit(const char *path, long long limit, long long window_ms, long long now)
{
	ck_assert_msg(test_acquire(c, TEST_EVAL, "sliding_log", path, now, test_num(limit), test_num(window_ms), NULL) == 1,
		      "sliding_log %s at %lld not admitted", path, now);
}

void rules_snapshot(char *buf, size_t cap)
{
	long long n = test_cmd_int(c, "HLEN %s", RULES_HASH);
	redisReply *v = test_cmd(c, "GET %s", RULES_VER);
	redisReply *a = test_cmd(c, "HGET %s api", RULES_HASH);

	snprintf(buf, cap, "%lld/%s/%s", n, v->type == REDIS_REPLY_STRING ? v->str : "nil",
		 a->type == REDIS_REPLY_STRING ? a->str : "nil");
	freeReplyObject(v);
	freeReplyObject(a);
}

long long rules_version(void)
{
	redisReply *v = test_cmd(c, "GET %s", RULES_VER);
	long long n = v->type == REDIS_REPLY_STRING ? atoll(v->str) : 0;

	ck_assert(v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_NIL);
	freeReplyObject(v);
	return n;
}

void put_ok(const char *name, const char *body)
{
	char url[128];

	snprintf(url, sizeof(url), "/v1/rules/%s", name);
	put(url, body);
	ck_assert_msg(res.status == 200 || res.status == 201, "PUT %s: %d %s", url, res.status, res.text);
}

/*
 * GET /v1/paths/{path} ends a path's state with its shard and the daemon
 * holding the shard's lease (routes_paths.c): a `want` written without them
 * (no daemon runs in these suites) gets ,"shard":<shard_of(path)>,"daemon":null.
 * The returned text is `want` itself or a static buffer.
 */
static const char *with_shard(const char *what, const char *want)
{
	static char buf[16384];
	cJSON *o, *p;
	size_t n = strlen(want);

	if (strncmp(what, "GET /v1/paths/", 14) != 0 || strstr(want, "\"daemon\":") || n < 2 || want[n - 1] != '}' ||
	    n + 64 > sizeof(buf) || !(o = cJSON_Parse(want)))
		return want;
	p = cJSON_GetObjectItemCaseSensitive(o, "path");
	if (cJSON_IsString(p) && cJSON_GetObjectItemCaseSensitive(o, "algorithm"))
		snprintf(buf, sizeof(buf), "%.*s,\"shard\":%u,\"daemon\":null}", (int)(n - 1), want,
			 shard_of(p->valuestring, strlen(p->valuestring)));
	else
		want = NULL;
	cJSON_Delete(o);
	return want ? buf : NULL;
}

void check_same_text(const char *what, const char *got, const char *want)
{
	size_t at = 0, from;
	const char *shown = with_shard(what, want);

	if (shown)
		want = shown;
	if (got && strcmp(got, want) == 0)
		return;
	if (!got)
		ck_abort_msg("%s: no text, want %.1500s", what, want);
	while (got[at] && got[at] == want[at])
		at++;
	from = at > 200 ? at - 200 : 0;
	ck_abort_msg("%s: differs at byte %zu:\n got  ...%.1200s\n want ...%.1200s", what, at, got + from, want + from);
}

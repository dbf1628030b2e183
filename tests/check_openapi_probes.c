/*
 * Keeps docs/openapi.json true to the code, operation by operation:
 *
 *   probes     every documented operation is called through api_handle against
 *              the harness's private redis-server (or its 3-primary cluster:
 *              `make test` runs the suite both ways), with its template filled
 *              ({name} -> "doc-rule", {path} -> "%2Fdoc") and the body its
 *              requestBody example gives: it must reach that route (never 404
 *              "no such route" nor 405), succeed on seeded state, answer a
 *              status the document lists for the operation, with a body valid
 *              against the documented schema and the documented headers
 *   errors     a table of error probes (bad bodies, queries, escapes, If-Match,
 *              wrong-typed keys, no worker, Redis down, a token) must answer the
 *              documented status and code; with a token, every operation but the
 *              probes answers 401 exactly as its `security` says; 405 carries
 *              the documented methods in Allow
 *   http       413 and the ETag header through the real HTTP server (libcurl)
 *
 * The fixture (document, validator, seed) is tests/openapi_fixture.h's.
 */
#include "tests/openapi_fixture.h"

#include "admin/server.h"

#include <curl/curl.h>

/* Every documented operation, filled in and sent on seeded state, succeeds as documented. */
START_TEST(test_probe_every_operation)
{
	struct fails f = { 0 };
	struct op ops[MAX_OPS];
	size_t n = doc_ops(ops, MAX_OPS);

	/* a step of the worker, so that GET /v1/worker's history has a sample to check */
	seed();
	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, INT64_MAX, -1, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		char path[256], *body = example_body(&ops[i]);
		struct request rq = { .method = ops[i].upper, .path = path, .body = body };
		struct answer a;

		seed();
		if (strstr(ops[i].path, "{id}"))
			seed_jobs(strcmp(ops[i].upper, "DELETE") == 0 ? 3 : 1); /* a job that has not ended, to cancel */
		fill_template(ops[i].path, path, sizeof(path));
		call_serving(api, w, &rq, &a);
		check_answer(&ops[i], &rq, &a, &f);
		if (a.status < 200 || a.status > 299)
			addf(&f, "%s %s: %d on seeded state, want a 2xx: %.300s", rq.method, rq.path, a.status,
			     a.text ? a.text : "");
		if (a.route < 0)
			addf(&f, "%s %s: answered by no route", rq.method, rq.path);
		answer_clear(&a);
		free(body);
	}
	fails_done(&f, "probes");
}
END_TEST

/* ---- error probes ------------------------------------------------------------------ */

enum which_api { A_NORMAL, A_NO_WORKER, A_DOWN, A_TOKEN };

static const struct eprobe {
	enum which_api which;
	const char *method, *tpl, *path;  /* the operation probed (tpl) and the concrete path */
	const char *match, *cursor, *count;
	const char *body, *if_match, *auth;
	const char *pre[2];               /* Redis commands (split on spaces) run after seeding */
	int status;
	const char *code, *field;         /* expected error code and field, or NULL */
} eprobes[] = {
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/doc-new", .body = RULE_BODY, .status = 201 },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/doc-rule", .body = RULE_BODY, .if_match = "*", .status = 200 },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/bad%20name", .body = RULE_BODY, .status = 400,
	  .code = "invalid_rule", .field = "name" },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/doc-rule", .body = "{", .status = 400, .code = "invalid_json" },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/doc-rule",
	  .body = "{\"match\":\"/doc*\",\"algorithm\":\"leaky_bucket\",\"capacity\":0,\"rate\":5}", .status = 400,
	  .code = "invalid_rule", .field = "capacity" },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/doc-rule",
	  .body = "{\"match\":\"/doc*\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":1000,\"rate\":1}",
	  .status = 400, .code = "invalid_rule", .field = "rate" },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/doc-rule", .body = RULE_BODY,
	  .if_match = "\"0000000000000000\"", .status = 412, .code = "precondition_failed" },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/%zz", .body = RULE_BODY, .status = 400, .code = "invalid_path" },
	{ A_NORMAL, "GET", "/v1/rules/{name}", "/v1/rules/%zz", .status = 400, .code = "invalid_path" },
	{ A_NORMAL, "GET", "/v1/rules/{name}", "/v1/rules/nope", .status = 404, .code = "not_found" },
	{ A_NORMAL, "GET", "/v1/rules/{name}", "/v1/rules/doc-sc",
	  .pre = { "HSET sluice:rules doc-sc {\"name\":\"doc-sc\",\"match\":\"/sc\",\"algorithm\":\"sliding_counter\",\"limit\":5,\"window_ms\":1000,\"sub_windows\":10}",
		   "INCR sluice:rules:version" }, .status = 200 },
	{ A_NORMAL, "DELETE", "/v1/rules/{name}", "/v1/rules/nope", .status = 404, .code = "not_found" },
	{ A_NORMAL, "DELETE", "/v1/rules/{name}", "/v1/rules/doc-rule", .if_match = "\"0000000000000000\"",
	  .status = 412, .code = "precondition_failed" },
	{ A_NORMAL, "DELETE", "/v1/rules/{name}", "/v1/rules/%zz", .status = 400, .code = "invalid_path" },
	{ A_NORMAL, "GET", "/v1/rules", "/v1/rules", .pre = { "DEL sluice:rules", "SET sluice:rules oops" },
	  .status = 500, .code = "redis_refused" },
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .count = "0", .status = 400, .code = "invalid_query", .field = "count" },
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .cursor = "x", .status = 400, .code = "invalid_query",
	  .field = "cursor" },
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .count = "1", .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .match = "/doc*", .count = "1000", .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .cursor = "0-1024-0", .status = 400, .code = "invalid_query",
	  .field = "cursor" },
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .match = "/doc[", .status = 400, .code = "invalid_query",
	  .field = "match" },
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .cursor = "1-0-0", .status = 200 },
	/* a due index of another type: skipped and reported (skipped_registries), the listing goes on */
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .count = "1000",
	  .pre = { "SET sluice:{0}:registry:sliding_log oops" }, .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Fnowhere", .status = 404, .code = "not_found" },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%zz", .status = 400, .code = "invalid_path" },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Fdoc-bad", .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Ffree", .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Fdoc-log", .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Fsl",
	  .pre = { "HSET sluice:rules doc-sl {\"name\":\"doc-sl\",\"match\":\"/sl\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":1000}",
		   "INCR sluice:rules:version" }, .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Ftb",
	  .pre = { "HSET sluice:rules doc-tb {\"name\":\"doc-tb\",\"match\":\"/tb\",\"algorithm\":\"token_bucket\",\"capacity\":4,\"rate\":1}",
		   "INCR sluice:rules:version" }, .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Ffw",
	  .pre = { "HSET sluice:rules doc-fw {\"name\":\"doc-fw\",\"match\":\"/fw\",\"algorithm\":\"fixed_window\",\"limit\":5,\"window_ms\":1000}",
		   "INCR sluice:rules:version" }, .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/a%00b", .status = 404, .code = "not_found" },
	{ A_NORMAL, "POST", "/v1/paths/{path}/reset", "/v1/paths/%zz/reset", .status = 400, .code = "invalid_path" },
	{ A_NORMAL, "POST", "/v1/paths/{path}/reset", "/v1/paths/%2Fdoc-bad/reset", .status = 200 },
	{ A_NORMAL, "POST", "/v1/paths/{path}/reset", "/v1/paths/%2Fnothing/reset", .status = 200 },
	/* the sliding log's due index of /doc's shard (986) of another type: /doc is reset, the registry reported */
	{ A_NORMAL, "POST", "/v1/paths/{path}/reset", "/v1/paths/%2Fdoc/reset",
	  .pre = { "SET sluice:{986}:registry:sliding_log oops" }, .status = 200 },
	{ A_NORMAL, "POST", "/v1/paths/{path}/reset", "/v1/paths/%2Fdoc-log/reset", .status = 200 },
	/* a path that is not UTF-8, in the URL as answers show it: reset (registered in the fixture) */
	{ A_NORMAL, "POST", "/v1/paths/{path}/reset", "/v1/paths/%FF%2Fbin/reset", .status = 200 },
	{ A_NORMAL, "POST", "/v1/paths/{path}/reset", "/v1/paths/a%00b/reset", .status = 200 },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "{}", .status = 400, .code = "invalid_body",
	  .field = "match" },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "[", .status = 400, .code = "invalid_json" },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "{\"match\":\"*\",\"dry_run\":\"yes\"}", .status = 400,
	  .code = "invalid_body", .field = "dry_run" },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "{\"match\":\"*\",\"force\":true}", .status = 400,
	  .code = "invalid_body", .field = "force" },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "{\"match\":\"*\"}", .status = 202 },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "{\"match\":\"*\"}",
	  .pre = { "SET sluice:{986}:registry:sliding_log oops" }, .status = 202 },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "{\"match\":\"/doc*\",\"dry_run\":true}", .status = 202 },
	{ A_NORMAL, "GET", "/v1/jobs/{id}", "/v1/jobs/999999", .status = 404, .code = "not_found" },
	{ A_NORMAL, "GET", "/v1/jobs/{id}", "/v1/jobs/x1", .status = 404, .code = "not_found" },
	{ A_NORMAL, "DELETE", "/v1/jobs/{id}", "/v1/jobs/999999", .status = 404, .code = "not_found" },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "{\"match\":\"/doc[\"}", .status = 400,
	  .code = "invalid_body", .field = "match" },
	{ A_NO_WORKER, "GET", "/v1/worker", "/v1/worker", .status = 503, .code = "no_worker" },
	{ A_NO_WORKER, "POST", "/v1/worker/sweep", "/v1/worker/sweep", .status = 503, .code = "no_worker" },
	{ A_NO_WORKER, "GET", "/metrics", "/metrics", .status = 200 },
	{ A_DOWN, "GET", "/readyz", "/readyz", .status = 503, .code = "redis_unavailable" },
	{ A_DOWN, "GET", "/healthz", "/healthz", .status = 200 },
	{ A_DOWN, "GET", "/metrics", "/metrics", .status = 200 },
	{ A_DOWN, "GET", "/v1/rules", "/v1/rules", .status = 503, .code = "redis_unavailable" },
	{ A_DOWN, "PUT", "/v1/rules/{name}", "/v1/rules/doc-rule", .body = RULE_BODY, .status = 503,
	  .code = "redis_unavailable" },
	{ A_DOWN, "GET", "/v1/worker", "/v1/worker", .status = 200 },
	{ A_DOWN, "POST", "/v1/worker/sweep", "/v1/worker/sweep", .status = 503, .code = "redis_unavailable" },
	{ A_TOKEN, "GET", "/v1/rules", "/v1/rules", .status = 401, .code = "unauthorized" },
	{ A_TOKEN, "GET", "/v1/rules", "/v1/rules", .auth = "Bearer wrong", .status = 401, .code = "unauthorized" },
	{ A_TOKEN, "GET", "/v1/rules", "/v1/rules", .auth = "Bearer " TOKEN, .status = 200 },
	{ A_TOKEN, "GET", "/readyz", "/readyz", .status = 200 },
	{ A_TOKEN, "DELETE", "/v1/rules/{name}", "/v1/rules/doc-rule", .auth = "bearer " TOKEN, .status = 200 },
};

/* Run a Redis command given as one string split on spaces (no argument holds a space). */
static void redis_line(const char *line)
{
	char buf[512], *argv[8], *save = NULL;
	int argc = 0;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *t = strtok_r(buf, " ", &save); t && argc < 8; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	redis_do((const char **)argv, argc);
}

START_TEST(test_error_probes)
{
	const struct eprobe *p = &eprobes[_i];
	struct fails f = { 0 };
	struct op ops[MAX_OPS];
	size_t n = doc_ops(ops, MAX_OPS);
	const struct op *op = find_op(ops, n, p->method, p->tpl);
	struct request rq = { .method = p->method, .path = p->path, .match = p->match, .cursor = p->cursor,
			      .count = p->count, .body = p->body, .auth = p->auth, .if_match = p->if_match };
	struct redis_target dead = { 0 };
	struct worker *wk = w, *dead_w = NULL;
	struct api *a = api, *own = NULL;
	struct answer ans;
	const cJSON *code, *field;

	ck_assert_msg(op != NULL, "probe %d: %s %s is not documented", _i, p->method, p->tpl);
	seed();
	for (int i = 0; i < 2 && p->pre[i]; i++)
		redis_line(p->pre[i]);
	if (p->which == A_NO_WORKER) {
		a = own = api_make(&target, NULL, NULL, 0);
		wk = NULL;
	} else if (p->which == A_TOKEN) {
		a = own = api_make(&target, w, TOKEN, 1);
	} else if (p->which == A_DOWN) {
		struct sl_error err = { 0 };
		char url[64];

		snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", test_free_port());
		ck_assert_int_eq(redis_url_parse(url, &dead, &err), 0);
		wk = dead_w = worker_make(&dead);
		a = own = api_make(&dead, dead_w, NULL, 0);
	}
	call_serving(a, wk, &rq, &ans);
	check_answer(op, &rq, &ans, &f);
	if (ans.status != p->status)
		addf(&f, "%s %s: status %d, want %d: %.300s", p->method, p->path, ans.status, p->status,
		     ans.text ? ans.text : "");
	code = jget(jget(ans.json, "error"), "code");
	field = jget(jget(ans.json, "error"), "field");
	if (p->code && !(cJSON_IsString(code) && strcmp(code->valuestring, p->code) == 0))
		addf(&f, "%s %s: code %s, want %s", p->method, p->path, cJSON_IsString(code) ? code->valuestring : "(none)",
		     p->code);
	if (p->field && !(cJSON_IsString(field) && strcmp(field->valuestring, p->field) == 0))
		addf(&f, "%s %s: field %s, want %s", p->method, p->path,
		     cJSON_IsString(field) ? field->valuestring : "(none)", p->field);
	answer_clear(&ans);
	api_free(own);
	worker_free(dead_w);
	redis_target_clear(&dead);
	fails_done(&f, "error probe");
}
END_TEST

/*
 * With a token: writes answer 401 unless authorized, reads too with auth_reads,
 * probes never; and each operation's `security` says the same (the anonymous
 * alternative {} exactly where a request without a token passes auth_reads off).
 */
START_TEST(test_auth_matches_security)
{
	struct fails f = { 0 };
	struct op ops[MAX_OPS];
	size_t n = doc_ops(ops, MAX_OPS);

	for (int reads = 0; reads <= 1; reads++) {
		struct api *a = api_make(&target, w, TOKEN, reads);

		for (size_t i = 0; i < n; i++) {
			const cJSON *sec = jget(ops[i].obj, "security"), *it;
			char path[256], *body = example_body(&ops[i]);
			struct request rq = { .method = ops[i].upper, .path = path, .body = body };
			struct answer ans;
			int anonymous = 0, bearer = 0, empty = cJSON_IsArray(sec) && cJSON_GetArraySize(sec) == 0;

			if (!sec)
				sec = jget(doc, "security");
			cJSON_ArrayForEach(it, sec) {
				anonymous = anonymous || (cJSON_IsObject(it) && !it->child);
				bearer = bearer || jget(it, "bearerAuth");
			}
			fill_template(ops[i].path, path, sizeof(path));
			seed();
			call_serving(a, w, &rq, &ans);
			check_answer(&ops[i], &rq, &ans, &f);
			if (empty && ans.status == 401)
				addf(&f, "%s %s: 401 although its security is []", rq.method, rq.path);
			if (!empty && reads && ans.status != 401)
				addf(&f, "%s %s: %d without a token under auth_reads, want 401", rq.method, rq.path,
				     ans.status);
			if (!empty && !bearer)
				addf(&f, "%s %s: answers 401 without a token but its security lists no bearerAuth",
				     rq.method, rq.path);
			if (!empty && !reads && (ans.status == 401) == anonymous)
				addf(&f, "%s %s: %d without a token (auth_reads off), but its security %s the anonymous {}",
				     rq.method, rq.path, ans.status, anonymous ? "lists" : "does not list");
			answer_clear(&ans);
			free(body);
		}
		api_free(a);
	}
	fails_done(&f, "auth");
}
END_TEST

/* An undocumented method on every documented path: 405 with Allow = the documented methods. */
START_TEST(test_405_allow_matches_document)
{
	struct fails f = { 0 };
	const cJSON *item, *nmna = resolve(pointer("#/components/responses/MethodNotAllowed"));
	const cJSON *nr = resolve(pointer("#/components/responses/NoRoute"));
	struct answer ans;

	ck_assert_msg(nmna && nr, "components.responses MethodNotAllowed and NoRoute are needed");
	cJSON_ArrayForEach(item, jget(doc, "paths")) {
		char path[256], want[128] = "", got[128] = "";
		struct request rq = { .method = "PATCH", .path = path };
		size_t wl = 0;
		const char *names[8];
		int nn = 0;

		fill_template(item->string, path, sizeof(path));
		for (size_t m = 0; m < sizeof(http_methods) / sizeof(http_methods[0]); m++)
			if (jget(item, http_methods[m]))
				names[nn++] = http_methods[m];
		/* as sets: upper-case, sorted */
		for (int i = 0; i < nn; i++)
			for (int j = i + 1; j < nn; j++)
				if (strcmp(names[j], names[i]) < 0) {
					const char *t = names[i];

					names[i] = names[j];
					names[j] = t;
				}
		for (int i = 0; i < nn; i++) {
			wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "%s%s", i ? "," : "", names[i]);
		}
		for (char *q = want; *q; q++)
			*q = (char)(*q >= 'a' && *q <= 'z' ? *q - 32 : *q);
		call_answer(api, &rq, &ans);
		if (ans.status != 405) {
			addf(&f, "PATCH %s: %d, want 405", path, ans.status);
		} else {
			/* the Allow header, sorted */
			char tmp[128], *parts[8], *save = NULL;
			int np = 0;
			size_t gl = 0;

			snprintf(tmp, sizeof(tmp), "%s", ans.allow ? ans.allow : "");
			for (char *t = strtok_r(tmp, ", ", &save); t && np < 8; t = strtok_r(NULL, ", ", &save))
				parts[np++] = t;
			for (int i = 0; i < np; i++)
				for (int j = i + 1; j < np; j++)
					if (strcmp(parts[j], parts[i]) < 0) {
						char *t = parts[i];

						parts[i] = parts[j];
						parts[j] = t;
					}
			for (int i = 0; i < np; i++)
				gl += (size_t)snprintf(got + gl, sizeof(got) - gl, "%s%s", i ? "," : "", parts[i]);
			if (strcmp(got, want) != 0)
				addf(&f, "%s: Allow %s, the document has %s", item->string, got, want);
			if (!validate(jget(jget(jget(nmna, "content"), "application/json"), "schema"), ans.json, "405 $", &f))
				addf(&f, "PATCH %s: the 405 body does not match MethodNotAllowed", path);
		}
		answer_clear(&ans);
	}
	{
		struct request rq = { .method = "GET", .path = "/v1/doc-no-such-route" };

		call_answer(api, &rq, &ans);
		if (ans.status != 404 || !validate(jget(jget(jget(nr, "content"), "application/json"), "schema"), ans.json,
						   "404 $", &f))
			addf(&f, "GET %s: %d %s, want a 404 matching NoRoute", rq.path, ans.status, ans.text);
		answer_clear(&ans);
	}
	fails_done(&f, "405");
}
END_TEST

/* ---- through the HTTP server: 413, ETag ---------------------------------------------- */

/* A request with a JSON body (no Expect: 100-continue), through the harness's client. */
static void http(int port, const char *method, const char *path, const char *body, struct test_http_res *h)
{
	test_http(port, method, path, body, TEST_HTTP_NO_EXPECT, h);
}

/* An HTTP answer checked as check_answer does (content type, schema, ETag). */
static void check_http(const struct op *op, const char *method, const char *path, const struct test_http_res *h,
		       struct fails *f)
{
	struct request rq = { .method = method, .path = path };
	struct answer a = { 0 };

	a.status = (int)h->status;
	a.route = -1;
	snprintf(a.etag, sizeof(a.etag), "%s", h->etag);
	if (strncmp(h->ctype, "application/json", 16) == 0) {
		a.json = cJSON_Parse(h->body);
		a.text = strdup(h->body);
		if (!a.json)
			addf(f, "%s %s: Content-Type %s but the body is not JSON: %.200s", method, path, h->ctype, h->body);
	} else {
		a.is_text = 1;
		a.text = strdup(h->body);
		a.ctype = h->ctype;
	}
	check_answer(op, &rq, &a, f);
	answer_clear(&a);
}

START_TEST(test_http_413_and_headers)
{
	struct server_config sc = { .host = "127.0.0.1", .port = 0, .max_body_bytes = 256, .max_connections = 8,
				    .idle_timeout_s = 5 };
	struct fails f = { 0 };
	struct op ops[MAX_OPS];
	size_t n = doc_ops(ops, MAX_OPS);
	const struct op *put = find_op(ops, n, "PUT", "/v1/rules/{name}"), *get = find_op(ops, n, "GET", "/v1/rules/{name}");
	const struct op *metrics = find_op(ops, n, "GET", "/metrics"), *reset = find_op(ops, n, "POST", "/v1/reset");
	char err[256] = "", big[1024];
	struct server *s;
	struct test_http_res h;
	int port;

	ck_assert_msg(put && get && metrics && reset, "PUT and GET /v1/rules/{name}, GET /metrics, POST /v1/reset documented");
	ck_assert_int_eq(curl_global_init(CURL_GLOBAL_DEFAULT), 0);
	{
		struct api_config ac = api_config_of(&target, w, NULL, 0);

		s = server_start(&sc, &ac, err, sizeof(err));
	}
	ck_assert_msg(s != NULL, "server_start: %s", err);
	port = server_port(s);

	http(port, "PUT", "/v1/rules/doc-rule", RULE_BODY, &h);
	check_http(put, "PUT", "/v1/rules/doc-rule", &h, &f);
	if (h.status != 201)
		addf(&f, "PUT /v1/rules/doc-rule over HTTP: %ld %s", h.status, h.body);
	http(port, "GET", "/v1/rules/doc-rule", NULL, &h);
	check_http(get, "GET", "/v1/rules/doc-rule", &h, &f);
	if (h.status != 200 || !h.etag[0])
		addf(&f, "GET /v1/rules/doc-rule over HTTP: %ld, ETag \"%s\"", h.status, h.etag);
	http(port, "GET", "/metrics", NULL, &h);
	check_http(metrics, "GET", "/metrics", &h, &f);

	/* a body over max_body_bytes: 413 from the server, as documented for writes */
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, RULE_BODY, strlen(RULE_BODY));
	http(port, "PUT", "/v1/rules/doc-rule", big, &h);
	check_http(put, "PUT", "/v1/rules/doc-rule", &h, &f);
	if (h.status != 413)
		addf(&f, "PUT with a %zu-byte body over HTTP (limit 256): %ld, want 413", strlen(big), h.status);
	memcpy(big, "{\"match\":\"*\"}", 13);
	http(port, "POST", "/v1/reset", big, &h);
	check_http(reset, "POST", "/v1/reset", &h, &f);
	if (h.status != 413)
		addf(&f, "POST /v1/reset with a %zu-byte body over HTTP: %ld, want 413", strlen(big), h.status);

	server_stop(s);
	curl_global_cleanup();
	fails_done(&f, "http");
}
END_TEST

static Suite *openapi_probes_suite(void)
{
	Suite *s = suite_create("openapi_probes");
	TCase *tc;

	tc = test_tcase(s, "probes", openapi_setup, openapi_teardown, 120);
	tcase_add_test(tc, test_probe_every_operation);
	tcase_add_loop_test(tc, test_error_probes, 0, TEST_N(eprobes));
	tcase_add_test(tc, test_auth_matches_security);
	tcase_add_test(tc, test_405_allow_matches_document);

	tc = test_tcase(s, "http", openapi_setup, openapi_teardown, 120);
	tcase_add_test(tc, test_http_413_and_headers);
	return s;
}

int main(void)
{
	return test_run_suite(openapi_probes_suite());
}

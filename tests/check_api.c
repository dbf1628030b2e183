/*
 * The admin API as a whole (admin/router.c, admin/routes_health.c): the health probes (with Redis away too), routing
 * (405 with Allow, 404, bad percent-encoding), the bearer token of writes
 * and reads, and the operator page (GET /, admin/routes_docs.c: served
 * without the token and without Redis).  The fixture and the conventions are
 * tests/api_fixture.h's.
 */
#include "tests/api_fixture.h"

/* ---- health ----------------------------------------------------------------- */

/* `method` / through `a` with Authorization `auth` (or NULL): 200, the page as HTML, no-cache. */
static void ck_page(struct api *a, const char *method, const char *auth)
{
	struct api_request rq = { .method = method, .path = "/", .authorization = auth };
	struct api_response rs;

	api_handle(a, &rq, &rs);
	ck_assert_msg(rs.status == 200, "%s / (Authorization %s): %d", method, auth ? auth : "none", rs.status);
	ck_assert_ptr_null(rs.body);
	ck_assert_ptr_nonnull(rs.text);
	ck_assert_str_eq(rs.content_type, "text/html; charset=utf-8");
	ck_assert_str_eq(rs.cache_control, "no-cache");
	ck_assert_ptr_nonnull(strstr(rs.text, "<title>sluice</title>"));
	/* no external resource: the only URL in it is the SVG namespace (a name, never fetched) */
	for (const char *p = strstr(rs.text, "://"); p; p = strstr(p + 3, "://"))
		ck_assert_msg(p - rs.text >= 4 && strncmp(p - 4, "http://www.w3.org/2000/svg'", 27) == 0,
			      "the page names a URL: %.40s", p - 4 > rs.text ? p - 4 : rs.text);
	free(rs.text);
}


/*
 * GET and HEAD / answer the page, which sends nothing to Redis: the INFO
 * calls are all it counts.  A command of the fixture's own threads may land
 * in either window now and then: the check passes when one of 3 tries sees
 * the same count in both (a page that sent a command would differ in all).
 */
START_TEST(test_page)
{
	long long idle = -1, n, delta = -2;
	/* the api's /metrics sampler takes a first sample at its start, on its own
	 * thread (5,000-odd commands): wait for it, or it lands in the counts below */
	struct api_request rq = { .method = "GET", .path = "/metrics" };
	struct api_response rs;

	api_handle(api, &rq, &rs);
	ck_assert_int_eq(rs.status, 200);
	ck_assert_msg(rs.text && strstr(rs.text, "sluice_redis_up 1\n"), "%.300s", rs.text ? rs.text : "(no text)");
	free(rs.text);
	for (int try = 0; try < 3 && delta != idle; try++) {
		n = test_commands(c);
		idle = test_commands(c) - n; /* what one INFO adds */
		n = test_commands(c);
		for (int i = 0; i < 3; i++)
			ck_page(api, "GET", NULL);
		ck_page(api, "HEAD", NULL);
		delta = test_commands(c) - n;
	}
	ck_assert_int_eq(delta, idle);
}
END_TEST

START_TEST(test_healthz)
{
	get("/healthz");
	ck_res(200, "{\"status\":\"ok\"}");
	ck_assert_ptr_null(res.allow);
}
END_TEST

START_TEST(test_readyz)
{
	get("/readyz");
	ck_res(200, ready_body());
}
END_TEST

START_TEST(test_readyz_redis_down)
{
	struct redis_target dead = { 0 };
	struct sl_error err = { 0 };
	struct api_config ac = { 0 };
	struct api *down;
	char url[64];
	int port = test_free_port();

	ck_assert_int_gt(port, 0);
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", port);
	ck_assert_int_eq(redis_url_parse(url, &dead, &err), 0);
	ac.redis = &dead;
	ac.timeout_ms = 500;
	ac.prefix = PFX;
	ac.layouts = layouts;
	ac.nlayouts = nlayouts;
	down = api_new(&ac);
	redis_target_clear(&dead);
	ck_assert_ptr_nonnull(down);

	call_on(down, "GET", "/readyz", NULL, 0, NULL, NULL, NULL);
	ck_err(503, "redis_unavailable", NULL);
	ck_assert_msg(strncmp(jstr("error.message"), "redis unavailable", 17) == 0, "%s", res.text);
	ck_assert_str_eq(jstr("error.reason"), "redis_down");
	/* again at once (inside the reconnect backoff): still 503 */
	call_on(down, "GET", "/readyz", NULL, 0, NULL, NULL, NULL);
	ck_err(503, "redis_unavailable", NULL);
	/* liveness does not need Redis, nor does the operator page */
	call_on(down, "GET", "/healthz", NULL, 0, NULL, NULL, NULL);
	ck_res(200, "{\"status\":\"ok\"}");
	ck_page(down, "GET", NULL);
	/* every Redis-backed route answers 503 */
	call_on(down, "GET", "/v1/rules", NULL, 0, NULL, NULL, NULL);
	ck_err(503, "redis_unavailable", NULL);
	call_on(down, "PUT", "/v1/rules/api", API_BODY, strlen(API_BODY), NULL, NULL, NULL);
	ck_err(503, "redis_unavailable", NULL);
	call_on(down, "GET", "/v1/paths/%2Fapi", NULL, 0, NULL, NULL, NULL);
	ck_err(503, "redis_unavailable", NULL);
	call_on(down, "GET", "/v1/paths", NULL, 0, NULL, NULL, NULL);
	ck_err(503, "redis_unavailable", NULL);
	call_on(down, "POST", "/v1/paths/%2Fapi/reset", NULL, 0, NULL, NULL, NULL);
	ck_err(503, "redis_unavailable", NULL);
	/* no worker configured on this api */
	call_on(down, "GET", "/v1/worker", NULL, 0, NULL, NULL, NULL);
	ck_err(503, "no_worker", NULL);
	api_free(down);
}
END_TEST

/* ---- routing ---------------------------------------------------------------- */

static const struct {
	const char *method, *path, *allow;
} not_allowed[] = {
	{ "POST", "/v1/rules", "GET" },
	{ "DELETE", "/v1/rules", "GET" },
	{ "PUT", "/healthz", "GET" },
	{ "POST", "/readyz", "GET" },
	{ "PATCH", "/v1/rules/api", "GET, PUT, DELETE" },
	{ "POST", "/v1/rules/api", "GET, PUT, DELETE" },
	{ "POST", "/v1/paths", "GET" },
	{ "PUT", "/v1/paths/x", "GET" },
	{ "DELETE", "/v1/paths/x", "GET" },
	{ "DELETE", "/v1/paths/%2Fapi%2Fusers", "GET" },
	{ "GET", "/v1/paths/x/reset", "POST" },
	{ "DELETE", "/v1/paths/x/reset", "POST" },
	{ "POST", "/v1/worker", "GET" },
	{ "POST", "/", "GET" },
	{ "DELETE", "/", "GET" },
};

START_TEST(test_405)
{
	const char *method = not_allowed[_i].method, *path = not_allowed[_i].path;
	char *before;

	/* state the refused handler would touch (/api/users, /x): the whole keyspace must stay */
	lb_admit("/api/users", 10, "0.1", test_server_ms(c) + AHEAD_MS);
	lb_admit("x", 10, "0.1", test_server_ms(c) + AHEAD_MS);
	before = test_snapshot(c);
	call(method, path, API_BODY);
	ck_err(405, "method_not_allowed", NULL);
	ck_assert_msg(res.allow && strcmp(res.allow, not_allowed[_i].allow) == 0, "%s %s: Allow %s, want %s",
		      method, path, res.allow ? res.allow : "(null)", not_allowed[_i].allow);
	ck_snapshot_same(before);
	free(before);
}
END_TEST

static const char *const unknown_routes[] = {
	"/v2/rules", "/v1/rules/a/b", "//", "", "/v1", "/v1/", "/v1/rules/", "/v1/nope",
	"/v1/paths/", "/v1/paths/x/y", "/v1/paths/x/reset/more", "/v1/paths//reset", "/healthz/",
	"/HEALTHZ", "/v1/worker/x", "/v1/a/b/c/d/e/f/g", "/metrics2",
};

START_TEST(test_404_routes)
{
	get(unknown_routes[_i]);
	ck_err(404, "not_found", NULL);
	call("POST", unknown_routes[_i], "{}");
	ck_err(404, "not_found", NULL);
}
END_TEST

/* A path with its slashes left unencoded misses /v1/paths/{path}: the 404 says how to encode it. */
START_TEST(test_404_names_the_encoding)
{
	const cJSON *msg;

	get("/v1/paths/api/users");
	msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res.json, "error"), "message");
	ck_assert_int_eq(res.status, 404);
	ck_assert_str_eq(cJSON_GetStringValue(msg), "no such route (a path in the URL is one segment: percent-encode "
						  "it, e.g. /v1/paths/%2Fapi%2Fusers)");
	get("/v1/nope");
	msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res.json, "error"), "message");
	ck_assert_str_eq(cJSON_GetStringValue(msg), "no such route");
}
END_TEST

START_TEST(test_bad_percent_encoding)
{
	get("/v1/paths/%zz");
	ck_err(400, "invalid_path", NULL);
	/* not UTF-8 once decoded (a lone continuation byte, an overlong '/', a truncated
	 * sequence): a path is any bytes, so these are paths, with no rule and no state */
	get("/v1/paths/%FF");
	ck_err(404, "not_found", NULL);
	call("POST", "/v1/paths/%C0%AF/reset", NULL);
	ck_assert_int_eq(res.status, 200);
	get("/v1/paths/caf%C3");
	ck_err(404, "not_found", NULL);
	get("/v1/paths/caf%C3%A9"); /* valid UTF-8: no rule, no state */
	ck_err(404, "not_found", NULL);
	get("/v1/paths/%2");
	ck_err(400, "invalid_path", NULL);
	get("/v1/paths/ab%");
	ck_err(400, "invalid_path", NULL);
	call("POST", "/v1/paths/%g0/reset", NULL);
	ck_err(400, "invalid_path", NULL);
	get("/v1/rules/%x1");
	ck_err(400, "invalid_path", NULL);
}
END_TEST

/* ---- auth ------------------------------------------------------------------- */

static struct api *api_with_token(const char *token, int auth_reads)
{
	return api_make(&target, w, token, auth_reads);
}

START_TEST(test_auth_writes)
{
	struct api *a = api_with_token("s3cret-token", 0);
	char before[512], after[512], *keys_before;

	rules_snapshot(before, sizeof(before));
	call_on(a, "PUT", "/v1/rules/api", API_BODY, strlen(API_BODY), NULL, NULL, NULL);
	ck_err(401, "unauthorized", NULL);
	ck_assert_int_eq(res.challenge, 1);
	next_auth = "Bearer s3cret-tokeN";
	call_on(a, "PUT", "/v1/rules/api", API_BODY, strlen(API_BODY), NULL, NULL, NULL);
	ck_err(401, "unauthorized", NULL);
	next_auth = "Bearer s3cret-token-and-more";
	call_on(a, "PUT", "/v1/rules/api", API_BODY, strlen(API_BODY), NULL, NULL, NULL);
	ck_err(401, "unauthorized", NULL);
	next_auth = "Basic s3cret-token";
	call_on(a, "DELETE", "/v1/rules/api", NULL, 0, NULL, NULL, NULL);
	ck_err(401, "unauthorized", NULL);
	next_auth = "s3cret-token";
	lb_admit("/x", 10, "0.1", test_server_ms(c) + AHEAD_MS); /* state an unauthorized reset must keep */
	keys_before = test_snapshot(c);
	call_on(a, "POST", "/v1/paths/%2Fx/reset", NULL, 0, NULL, NULL, NULL);
	ck_err(401, "unauthorized", NULL);
	call_on(a, "POST", "/v1/reset", "{\"match\":\"*\"}", 13, NULL, NULL, NULL);
	ck_err(401, "unauthorized", NULL);
	call_on(a, "DELETE", "/v1/jobs/1", NULL, 0, NULL, NULL, NULL);
	ck_err(401, "unauthorized", NULL);
	ck_snapshot_same(keys_before);
	free(keys_before);
	rules_snapshot(after, sizeof(after));
	ck_assert_str_eq(before, after); /* nothing reached Redis */

	next_auth = "Bearer s3cret-token";
	call_on(a, "PUT", "/v1/rules/api", API_BODY, strlen(API_BODY), NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 201);
	next_auth = "bearer  s3cret-token \t"; /* the scheme is case-insensitive; whitespace around the token is not part of it */
	call_on(a, "DELETE", "/v1/rules/api", NULL, 0, NULL, NULL, NULL);
	ck_res(200, "{\"deleted\":\"api\"}");
	/* reads stay open */
	call_on(a, "GET", "/v1/rules", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	/* the refused requests are counted */
	{
		struct api_request rq = { .method = "GET", .path = "/metrics" };
		struct api_response rs;

		api_handle(a, &rq, &rs);
		ck_assert_ptr_nonnull(strstr(rs.text, "sluice_http_requests_total{route=\"unmatched\",method=\"any\",status=\"401\"} 7\n"));
		free(rs.text);
	}
	api_free(a);
}
END_TEST

START_TEST(test_auth_reads)
{
	struct api *a = api_with_token("t", 1);

	call_on(a, "GET", "/v1/rules", NULL, 0, NULL, NULL, NULL);
	ck_err(401, "unauthorized", NULL);
	call_on(a, "GET", "/v1/worker", NULL, 0, NULL, NULL, NULL);
	ck_err(401, "unauthorized", NULL);
	call_on(a, "GET", "/healthz", NULL, 0, NULL, NULL, NULL); /* probes stay open */
	ck_res(200, "{\"status\":\"ok\"}");
	call_on(a, "GET", "/readyz", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	/* the page holds no data: served without the token, or with a wrong one (it asks for the right one) */
	ck_page(a, "GET", NULL);
	ck_page(a, "HEAD", "Bearer wrong");
	/* a write to it is a write: the token is checked first */
	call_on(a, "POST", "/", NULL, 0, NULL, NULL, NULL);
	ck_err(401, "unauthorized", NULL);
	next_auth = "Bearer t";
	call_on(a, "GET", "/v1/rules", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	api_free(a);
}
END_TEST

START_TEST(test_token_compare)
{
	ck_assert_int_eq(api_token_equal("abc", 3, "abc", 3), 1);
	ck_assert_int_eq(api_token_equal("abd", 3, "abc", 3), 0);
	ck_assert_int_eq(api_token_equal("ab", 2, "abc", 3), 0);
	ck_assert_int_eq(api_token_equal("abcd", 4, "abc", 3), 0);
	ck_assert_int_eq(api_token_equal("", 0, "abc", 3), 0);
	ck_assert_int_eq(api_token_equal("ab\0", 3, "abc", 3), 0);
}
END_TEST

static Suite *api_suite(void)
{
	Suite *s = suite_create("api");
	TCase *tc;

	tc = test_tcase(s, "health", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_healthz);
	tcase_add_test(tc, test_readyz);
	tcase_add_test(tc, test_readyz_redis_down);
	tcase_add_test(tc, test_page);

	tc = test_tcase(s, "routing", api_setup, api_teardown, 60);
	tcase_add_loop_test(tc, test_405, 0, TEST_N(not_allowed));
	tcase_add_loop_test(tc, test_404_routes, 0, TEST_N(unknown_routes));
	tcase_add_test(tc, test_404_names_the_encoding);
	tcase_add_test(tc, test_bad_percent_encoding);

	tc = test_tcase(s, "auth", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_auth_writes);
	tcase_add_test(tc, test_auth_reads);
	tcase_add_test(tc, test_token_compare);
	return s;
}

int main(void)
{
	return test_run_suite(api_suite());
}

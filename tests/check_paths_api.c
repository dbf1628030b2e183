/*
 * The path routes (admin/routes_paths.c) over core/pathstate.c: the live state of a
 * path in every algorithm (GET /v1/paths/{path}), which rule governs it, the
 * paged listing of the registries (GET /v1/paths), paths as binary-safe
 * arguments, foreign layouts.  The fixture and the conventions are
 * tests/api_fixture.h's.
 */
#include "tests/api_fixture.h"

/* ---- path state ------------------------------------------------------------ */

START_TEST(test_path_leaky_bucket)
{
	long long t = test_server_ms(c) + HOUR_MS, ttl;

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	lb_admit("/api/users", 10, "0.1", t);
	lb_admit("/api/users", 10, "0.1", t + 1);
	lb_admit("/api/users", 10, "0.1", t + 2);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/api/users")), 3);

	get("/v1/paths/%2Fapi%2Fusers");
	ck_assert_int_eq(res.status, 200);
	/* bucket and meta expire once the bucket would be empty (30 s after `last` = t, plus the
	 * script's small grace), on the real clock */
	ttl = take_int("ttl_ms");
	ck_assert_msg(ttl > 20000 && ttl <= 29999 + 10000, "ttl_ms %lld", ttl);
	ck_json_is("{\"path\":\"/api/users\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\","
		   "\"rule\":\"api\",\"registered\":true,\"count\":3,\"capacity\":10,\"rate\":0.1,"
		   "\"remaining\":7,\"reset_ms\":10000}");

	/* the admin read writes nothing */
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/api/users")), 3);
	get("/v1/paths/%2Fapi%2Fusers");
	ck_assert_int_eq(jint("count"), 3);
}
END_TEST

START_TEST(test_path_sliding_log)
{
	long long t = test_server_ms(c) + HOUR_MS, ttl;

	put_ok("log", "{\"match\":\"/log/*\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":60000}");
	sl_admit("/log/a b", 5, 60000, t);
	sl_admit("/log/a b", 5, 60000, t + 10);

	get("/v1/paths/%2Flog%2Fa%20b");
	ck_assert_int_eq(res.status, 200);
	ttl = take_int("ttl_ms"); /* the window, and the 10 s skew horizon for its time mark */
	ck_assert_msg(ttl > 60000 && ttl <= 70000, "ttl_ms %lld", ttl);
	ck_json_is("{\"path\":\"/log/a b\",\"algorithm\":\"sliding_log\",\"layout\":\"sliding_log\","
		   "\"rule\":\"log\",\"registered\":true,\"count\":2,\"limit\":5,\"window_ms\":60000,"
		   "\"remaining\":3,\"reset_ms\":59990}");
}
END_TEST

START_TEST(test_path_state_without_rule)
{
	long long t = test_server_ms(c) + HOUR_MS;

	/* a rule that matches other paths only */
	put_ok("api", API_BODY);
	lb_admit("/free", 10, "0.1", t);
	lb_admit("/free", 10, "0.1", t);
	get("/v1/paths/%2Ffree");
	ck_res(200, "{\"path\":\"/free\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":null,"
		    "\"registered\":true,\"count\":2,\"capacity\":null,\"remaining\":null,\"reset_ms\":null}");

	sl_admit("/free-log", 10, 60000, t);
	get("/v1/paths/%2Ffree-log");
	ck_res(200, "{\"path\":\"/free-log\",\"algorithm\":\"sliding_log\",\"layout\":\"sliding_log\",\"rule\":null,"
		    "\"registered\":true,\"count\":1,\"limit\":null,\"remaining\":null,\"reset_ms\":null}");

	/* state left by a client that keeps no registry: found, not registered */
	freeReplyObject(test_cmd(c, "ZADD %s 1 a 2 b 3 c 4 d", test_sl_key("/unregistered")));
	get("/v1/paths/%2Funregistered");
	ck_res(200, "{\"path\":\"/unregistered\",\"algorithm\":\"sliding_log\",\"layout\":\"sliding_log\",\"rule\":null,"
		    "\"registered\":false,\"count\":4,\"limit\":null,\"remaining\":null,\"reset_ms\":null}");

	/* registered, but its state is gone (expired) */
	freeReplyObject(test_cmd(c, "SADD %s /gone", LB_REG));
	get("/v1/paths/%2Fgone");
	ck_res(200, "{\"path\":\"/gone\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":null,"
		    "\"registered\":true,\"count\":0,\"capacity\":null,\"remaining\":null,\"reset_ms\":null}");
}
END_TEST

START_TEST(test_path_rule_without_state)
{
	put_ok("api", API_BODY);
	get("/v1/paths/%2Fapi%2Fusers");
	ck_res(200, "{\"path\":\"/api/users\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":\"api\","
		    "\"registered\":false,\"count\":0,\"capacity\":10,\"rate\":2,\"remaining\":10,\"reset_ms\":0,"
		    "\"ttl_ms\":-2}");

	put_ok("log", "{\"match\":\"/log\",\"algorithm\":\"sliding_log\",\"limit\":7,\"window_ms\":1000}");
	get("/v1/paths/%2Flog");
	ck_res(200, "{\"path\":\"/log\",\"algorithm\":\"sliding_log\",\"layout\":\"sliding_log\",\"rule\":\"log\","
		    "\"registered\":false,\"count\":0,\"limit\":7,\"window_ms\":1000,\"remaining\":7,\"reset_ms\":0,"
		    "\"ttl_ms\":-2}");

	/* the other three algorithms, with no state yet: their full limit remains */
	put_ok("fw", "{\"match\":\"/fw\",\"algorithm\":\"fixed_window\",\"limit\":7,\"window_ms\":1000}");
	get("/v1/paths/%2Ffw");
	ck_res(200, "{\"path\":\"/fw\",\"algorithm\":\"fixed_window\",\"layout\":\"fixed_window\",\"rule\":\"fw\","
		    "\"registered\":false,\"count\":0,\"limit\":7,\"window_ms\":1000,\"remaining\":7,\"reset_ms\":0,"
		    "\"ttl_ms\":-2}");
	put_ok("sc", "{\"match\":\"/sc\",\"algorithm\":\"sliding_counter\",\"limit\":6,\"window_ms\":1000,\"sub_windows\":4}");
	get("/v1/paths/%2Fsc");
	ck_res(200, "{\"path\":\"/sc\",\"algorithm\":\"sliding_counter\",\"layout\":\"sliding_counter\",\"rule\":\"sc\","
		    "\"registered\":false,\"count\":0,\"limit\":6,\"window_ms\":1000,\"sub_windows\":4,\"remaining\":6,"
		    "\"reset_ms\":0,\"ttl_ms\":-2}");
	put_ok("tb", "{\"match\":\"/tb\",\"algorithm\":\"token_bucket\",\"capacity\":4,\"rate\":1}");
	get("/v1/paths/%2Ftb");
	ck_res(200, "{\"path\":\"/tb\",\"algorithm\":\"token_bucket\",\"layout\":\"token_bucket\",\"rule\":\"tb\","
		    "\"registered\":false,\"count\":0,\"capacity\":4,\"rate\":1,\"remaining\":4,\"reset_ms\":0,"
		    "\"ttl_ms\":-2}");
}
END_TEST

START_TEST(test_path_rule_precedence)
{
	put_ok("glob", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":1}");
	put_ok("longer", "{\"match\":\"/api/users*\",\"algorithm\":\"leaky_bucket\",\"capacity\":2,\"rate\":1}");
	put_ok("exact", "{\"match\":\"/api/users/1\",\"algorithm\":\"leaky_bucket\",\"capacity\":3,\"rate\":1}");
	get("/v1/paths/%2Fapi%2Fusers%2F1");
	ck_assert_str_eq(jstr("rule"), "exact");
	ck_assert_int_eq(jint("capacity"), 3);
	get("/v1/paths/%2Fapi%2Fusers%2F2");
	ck_assert_str_eq(jstr("rule"), "longer");
	ck_assert_int_eq(jint("capacity"), 2);
	get("/v1/paths/%2Fapi%2Fother");
	ck_assert_str_eq(jstr("rule"), "glob");
	ck_assert_int_eq(jint("remaining"), 1);
}
END_TEST

START_TEST(test_path_unknown_404)
{
	get("/v1/paths/%2Fnothing%2Fhere");
	ck_err(404, "not_found", NULL);
	put_ok("api", API_BODY);
	get("/v1/paths/%2Fnothing%2Fhere");
	ck_err(404, "not_found", NULL);
	/* unencoded slashes make more segments: not a path route */
	get("/v1/paths//api/users");
	ck_err(404, "not_found", NULL);
}
END_TEST

/* ---- path list -------------------------------------------------------------- */

/*
 * Page through GET /v1/paths (count per page) until the cursor is "0";
 * writes "layout|path" of every item, sorted and unique, into out (cap items)
 * and returns how many.  *pages gets the number of requests.
 */
static size_t page_all(const char *match, const char *count, char **out, size_t cap, int *pages)
{
	char cursor[64] = "0";
	size_t n = 0, u = 0;

	*pages = 0;
	do {
		cJSON *arr, *it;

		list(match, cursor, count);
		ck_assert_msg(res.status == 200, "cursor %s: %d %s", cursor, res.status, res.text);
		ck_assert_int_eq(cJSON_GetArraySize(res.json), 2);
		arr = jat("paths");
		ck_assert(cJSON_IsArray(arr));
		cJSON_ArrayForEach(it, arr) {
			char item[300];

			snprintf(item, sizeof(item), "%s|%s",
				 cJSON_GetObjectItemCaseSensitive(it, "layout")->valuestring,
				 cJSON_GetObjectItemCaseSensitive(it, "path")->valuestring);
			ck_assert_uint_lt(n, cap);
			out[n++] = strdup(item);
		}
		snprintf(cursor, sizeof(cursor), "%s", jstr("cursor"));
		ck_assert_int_lt(++*pages, 1000);
	} while (strcmp(cursor, "0") != 0);
	qsort(out, n, sizeof(*out), test_cmp_str);
	/* SSCAN may return a member twice; the set is what counts */
	for (size_t i = 0; i < n; i++) {
		if (u && strcmp(out[u - 1], out[i]) == 0) {
			free(out[i]);
			continue;
		}
		out[u++] = out[i];
	}
	return u;
}

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
}

/* Add paths prefix0..prefix(n-1) to a registry. */
static void sadd_n(const char *reg, const char *prefix, int n)
{
	for (int i = 0; i < n; i++)
		freeReplyObject(test_cmd(c, "SADD %s %s%d", reg, prefix, i));
}

START_TEST(test_paths_list_paging)
{
	char *got[100];
	char want[100][64];
	size_t n, nw = 0;
	int pages;

	put_ok("api", API_BODY);
	sadd_n(LB_REG, "/api/", 12);
	sadd_n(SL_REG, "/log/", 5);
	for (int i = 0; i < 12; i++)
		snprintf(want[nw++], sizeof(want[0]), "leaky_bucket|/api/%d", i);
	for (int i = 0; i < 5; i++)
		snprintf(want[nw++], sizeof(want[0]), "sliding_log|/log/%d", i);

	n = page_all(NULL, "1", got, 100, &pages);
	ck_assert_int_eq(n, nw);
	{
		const char *wp[100];

		for (size_t i = 0; i < nw; i++)
			wp[i] = want[i];
		qsort(wp, nw, sizeof(wp[0]), test_cmp_str);
		for (size_t i = 0; i < n; i++)
			ck_assert_str_eq(got[i], wp[i]);
	}
	free_strs(got, n);
	/* at least one page per layout; Redis 7.0 keeps these sets as hash tables, so COUNT 1 pages finely */
	ck_assert_int_ge(pages, 2);

	/* default count (100): every registry walked in one call */
	n = page_all(NULL, NULL, got, 100, &pages);
	ck_assert_int_eq(n, nw);
	ck_assert_int_eq(pages, 1);
	free_strs(got, n);

	/* start at the second layout */
	list(NULL, "1-0", "1000");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 5);
	ck_assert_str_eq(jstr("cursor"), "0");
}
END_TEST

START_TEST(test_paths_list_match)
{
	char *got[100];
	size_t n;
	int pages;

	sadd_n(LB_REG, "/api/", 12);
	sadd_n(SL_REG, "/api/", 3);
	sadd_n(SL_REG, "/log/", 5);

	n = page_all("/api/1*", "1", got, 100, &pages);
	ck_assert_int_eq(n, 4);
	ck_assert_str_eq(got[0], "leaky_bucket|/api/1");
	ck_assert_str_eq(got[1], "leaky_bucket|/api/10");
	ck_assert_str_eq(got[2], "leaky_bucket|/api/11");
	ck_assert_str_eq(got[3], "sliding_log|/api/1");
	free_strs(got, n);

	/* a pattern nothing matches: empty pages down to cursor "0" */
	n = page_all("/none*", "1", got, 100, &pages);
	ck_assert_int_eq(n, 0);
	/* an empty match means no filter */
	n = page_all("", NULL, got, 100, &pages);
	ck_assert_int_eq(n, 20);
	free_strs(got, n);
}
END_TEST

START_TEST(test_paths_list_items)
{
	long long t = test_server_ms(c) + HOUR_MS;
	cJSON *arr, *it;
	int seen = 0;

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	put_ok("mix", "{\"match\":\"/mixed\",\"algorithm\":\"sliding_log\",\"limit\":3,\"window_ms\":1000}");
	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/other", 10, "0.1", t);
	lb_admit("/mixed", 10, "0.1", t);

	list(NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	ck_assert_str_eq(jstr("cursor"), "0"); /* both registries walked in one call */
	arr = jat("paths");
	ck_assert_int_eq(cJSON_GetArraySize(arr), 3);
	cJSON_ArrayForEach(it, arr) {
		const char *p = cJSON_GetObjectItemCaseSensitive(it, "path")->valuestring;
		cJSON *ttl = cJSON_GetObjectItemCaseSensitive(it, "ttl_ms");
		char *s;

		if (strcmp(p, "/api/a") == 0) {
			ck_assert(cJSON_IsNumber(ttl) && ttl->valuedouble > 20000 &&
				  ttl->valuedouble <= 30001 + 10000);
			cJSON_DeleteItemFromObjectCaseSensitive(it, "ttl_ms");
		}
		s = cJSON_PrintUnformatted(it);
		if (strcmp(p, "/api/a") == 0)
			ck_assert_str_eq(s, "{\"path\":\"/api/a\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\","
					    "\"rule\":\"api\",\"registered\":true,\"count\":3,\"capacity\":10,\"rate\":0.1,\"remaining\":7,"
					    "\"reset_ms\":10000}");
		else if (strcmp(p, "/other") == 0)
			ck_assert_str_eq(s, "{\"path\":\"/other\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\","
					    "\"rule\":null,\"registered\":true,\"count\":1,\"capacity\":null,\"remaining\":null,\"reset_ms\":null}");
		else if (strcmp(p, "/mixed") == 0)
			ck_assert_str_eq(s, "{\"path\":\"/mixed\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\","
					    "\"rule\":\"mix\",\"registered\":true,\"count\":1,\"capacity\":null,\"remaining\":null,\"reset_ms\":null,"
					    "\"note\":\"the path's rule is of another algorithm\"}");
		else
			ck_abort_msg("unexpected item %s", s);
		free(s);
		seen++;
	}
	ck_assert_int_eq(seen, 3);

	list(NULL, "1-0", NULL);
	ck_res(200, "{\"paths\":[],\"cursor\":\"0\"}");
}
END_TEST

START_TEST(test_paths_list_empty)
{
	list(NULL, NULL, NULL);
	ck_res(200, "{\"paths\":[],\"cursor\":\"0\"}");
	list(NULL, "1-0", NULL);
	ck_res(200, "{\"paths\":[],\"cursor\":\"0\"}");
}
END_TEST

static const struct {
	const char *cursor, *count, *field;
} bad_queries[] = {
	{ NULL, "0", "count" },
	{ NULL, "1001", "count" },
	{ NULL, "abc", "count" },
	{ NULL, "", "count" },
	{ NULL, "-1", "count" },
	{ NULL, "5x", "count" },
	{ NULL, "99999999999999999999999", "count" },
	{ "garbage", NULL, "cursor" },
	{ "", NULL, "cursor" },
	{ "-0", NULL, "cursor" },
	{ "0-", NULL, "cursor" },
	{ "0-abc", NULL, "cursor" },
	{ "0-12x", NULL, "cursor" },
	{ "5-0", NULL, "cursor" }, /* one past the last of the 5 layouts */
	{ "99-0", NULL, "cursor" },
	{ "x-0", NULL, "cursor" },
	{ "1", NULL, "cursor" },
	{ "0-123456789012345678901234", NULL, "cursor" },
};

START_TEST(test_paths_list_bad_query)
{
	sadd_n(LB_REG, "/api/", 3);
	call_on(api, "GET", "/v1/paths", NULL, 0, NULL, bad_queries[_i].cursor, bad_queries[_i].count);
	ck_err(400, "invalid_query", bad_queries[_i].field);
}
END_TEST

/*
 * BUG: a cursor of the right shape but out of SSCAN's range ("0-" followed by a
 * number above 2^64-1) passes parse_cursor (admin/routes_paths.c), Redis answers
 * "ERR invalid cursor", and h_paths_list turns that into a 500 "internal": a
 * client error reported as a server fault.  It should be 400 field "cursor"
 * (check the number with strtoull/ERANGE in parse_cursor, or map a Redis error
 * reply to SSCAN to 400).
 */
START_TEST(test_bug_paths_list_cursor_out_of_range)
{
	sadd_n(LB_REG, "/api/", 3);
	list(NULL, "0-99999999999999999999", NULL);
	ck_err(400, "invalid_query", "cursor");
}
END_TEST

/*
 * BUG: one registry member whose key has another type (a foreign client, a
 * layout mismatch) makes GET /v1/paths answer 500 "internal" for the whole page:
 * ZCARD / the state script answer an error reply, and core/pathstate.c
 * state_json turns it into -EPROTO for the batch.  The worker skips such keys
 * (leaky_bucket_drain.lua: "a key of another type must not stop the batch");
 * the list should still answer the other paths (and report that one, e.g. with
 * count null and a note).
 */
START_TEST(test_bug_paths_list_wrong_type_key)
{
	cJSON *it;
	int n = 0;

	put_ok("api", API_BODY);
	freeReplyObject(test_cmd(c, "SADD %s /api/ok /api/bad /weird", LB_REG));
	freeReplyObject(test_cmd(c, "SET %s str", test_lb_key("/api/bad")));
	freeReplyObject(test_cmd(c, "SET %s str", test_lb_key("/weird")));
	list(NULL, NULL, "1000");
	ck_assert_msg(res.status == 200, "one wrong-typed key: GET /v1/paths %d %s", res.status, res.text);
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 3);
	cJSON_ArrayForEach(it, jat("paths")) {
		const char *p = cJSON_GetObjectItemCaseSensitive(it, "path")->valuestring;
		cJSON *count = cJSON_GetObjectItemCaseSensitive(it, "count");

		if (strcmp(p, "/api/ok") == 0) {
			ck_assert(cJSON_IsNumber(count) && count->valuedouble == 0);
			continue;
		}
		ck_assert_msg(cJSON_IsNull(count), "%s: count should be null: %s", p, res.text);
		n++;
	}
	ck_assert_int_eq(n, 2);
	/* one path: the same report, not a 500 */
	get("/v1/paths/%2Fweird");
	ck_assert_msg(res.status == 200, "%d %s", res.status, res.text);
	ck_assert(cJSON_IsNull(jat("count")));
	ck_assert(cJSON_IsNull(jat("rule")));
	get("/v1/paths/%2Fapi%2Fbad");
	ck_assert_msg(res.status == 200, "%d %s", res.status, res.text);
	ck_assert(cJSON_IsNull(jat("count")));
	ck_assert_str_eq(jstr("rule"), "api");
}
END_TEST

/* ---- live state of the sliding counter, fixed window and token bucket ------------- */

/* One request through lua/<script>.lua (rule parameters a1, a2 and a3, if any) at `now`; must be admitted. */
static void acquire_h(const char *script, const char *path, const char *a1, const char *a2, const char *a3,
		      long long now)
{
	ck_assert_msg(test_acquire(c, TEST_EVAL, script, path, now, a1, a2, a3, NULL) == 1, "%s not admitted", script);
}

START_TEST(test_path_state_other_algorithms)
{
	/* state read at max(Redis now, stored time): a future, aligned T makes every number exact */
	long long T = (test_server_ms(c) / 1000000 + 2) * 1000000 + 1000;

	put_ok("fw", "{\"match\":\"/fw\",\"algorithm\":\"fixed_window\",\"limit\":5,\"window_ms\":1000000}");
	put_ok("sc", "{\"match\":\"/sc\",\"algorithm\":\"sliding_counter\",\"limit\":10,\"window_ms\":1000,\"sub_windows\":4}");
	put_ok("tb", "{\"match\":\"/tb\",\"algorithm\":\"token_bucket\",\"capacity\":5,\"rate\":1}");
	acquire_h("fixed_window", "/fw", "5", "1000000", NULL, T);
	acquire_h("fixed_window", "/fw", "5", "1000000", NULL, T);
	for (int i = 0; i < 3; i++)
		acquire_h("sliding_counter", "/sc", "10", "1000", "4", T);
	acquire_h("token_bucket", "/tb", "5", "1", "3", T);

	get("/v1/paths/%2Ffw");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_gt(take_int("ttl_ms"), 0);
	ck_json_is("{\"path\":\"/fw\",\"algorithm\":\"fixed_window\",\"layout\":\"fixed_window\",\"rule\":\"fw\","
		    "\"registered\":true,\"count\":2,\"limit\":5,\"window_ms\":1000000,\"remaining\":3,"
		    "\"reset_ms\":999000}");
	get("/v1/paths/%2Fsc");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_gt(take_int("ttl_ms"), 0);
	ck_json_is("{\"path\":\"/sc\",\"algorithm\":\"sliding_counter\",\"layout\":\"sliding_counter\",\"rule\":\"sc\","
		    "\"registered\":true,\"count\":3,\"limit\":10,\"window_ms\":1000,\"sub_windows\":4,\"remaining\":7,"
		    "\"reset_ms\":1000}");
	get("/v1/paths/%2Ftb");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_gt(take_int("ttl_ms"), 0);
	ck_json_is("{\"path\":\"/tb\",\"algorithm\":\"token_bucket\",\"layout\":\"token_bucket\",\"rule\":\"tb\","
		    "\"registered\":true,\"count\":3,\"capacity\":5,\"rate\":1,\"remaining\":2,\"reset_ms\":3000}");
	/* and the list shows all three; reset takes them */
	list(NULL, NULL, "1000");
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 3);
	call("POST", "/v1/paths/%2Ftb/reset", NULL);
	ck_assert_int_eq(jint("keys_removed"), 1);
	ck_assert_int_eq(jint("registries_removed"), 1);
}
END_TEST

/*
 * A path whose data key has the empty hash tag "{}" (sluice:{}x}:leaky_bucket):
 * the worker, the path state and the reset use the client's meta (the data key
 * + ":meta"), so a leak the client applied is not applied again by the worker
 * (issue 8), the state reads the level both see, and the reset leaves nothing
 * behind.
 */
START_TEST(test_path_empty_hash_tag)
{
	long long t = test_server_ms(c) + HOUR_MS;
	struct worker_result r;
	char *before, *after;

	put_ok("all", "{\"match\":\"*\",\"algorithm\":\"leaky_bucket\",\"capacity\":1000,\"rate\":1}");
	before = test_snapshot(c);
	for (int i = 0; i < 20; i++)
		lb_admit("}x", 1000, "1", t);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t, &r), 0);
	/* the client's next call applies the leak of 6 s (6 entries) and admits one */
	lb_admit("}x", 1000, "1", t + 6000);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t + 6000, &r), 0);
	ck_assert_int_eq(r.entries, 0); /* nothing more is due */
	get("/v1/paths/%7Dx");
	ck_assert_int_eq(res.status, 200);
	take_int("ttl_ms");
	ck_json_is("{\"path\":\"}x\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":\"all\","
		   "\"registered\":true,\"count\":15,\"capacity\":1000,\"rate\":1,\"remaining\":985,\"reset_ms\":1000}");
	call("POST", "/v1/paths/%7Dx/reset", NULL);
	ck_res(200, "{\"path\":\"}x\",\"keys_removed\":2,\"entries_removed\":15,\"registries_removed\":1,"
		    "\"keys\":[{\"key\":\"sluice:{}x}:leaky_bucket\",\"entries\":15},"
		    "{\"key\":\"sluice:{}x}:leaky_bucket:meta\",\"meta\":true}]}");
	after = test_snapshot(c);
	ck_assert_msg(strcmp(before, after) == 0, "the reset left keys behind:\n before %s\n after  %s", before, after);
	free(before);
	free(after);
}
END_TEST

/* ---- paths are binary-safe arguments, never formatted into commands --------------- */

/* Admit one entry for the `len`-byte path (NUL bytes allowed) at `now`. */
static void lb_admit_bin(const char *path, size_t len, long long now)
{
	struct strbuf k1 = { 0 }, k2 = { 0 };
	const char *argv[8];
	size_t lens[8];

	strbuf_add(&k1, "sluice:{", 8);
	strbuf_add(&k1, path, len);
	strbuf_add(&k1, "}:leaky_bucket", 14);
	strbuf_add(&k2, k1.p, k1.len);
	strbuf_add(&k2, ":meta", 5);
	argv[0] = k1.p, argv[1] = k2.p, argv[2] = LB_REG, argv[3] = path;
	argv[4] = "10", argv[5] = "0.1", argv[6] = "1", argv[7] = test_num(now);
	for (int i = 0; i < 8; i++)
		lens[i] = strlen(argv[i]);
	lens[0] = k1.len, lens[1] = k2.len, lens[3] = len;
	ck_assert_msg(test_script_allowed(test_script_argv(c, TEST_EVAL, "leaky_bucket", 3, 8, argv, lens),
					  "leaky_bucket") == 1, "not admitted");
	strbuf_free(&k1);
	strbuf_free(&k2);
}

/* "/v1/paths/" + every byte percent-encoded + suffix, into a new string. */
static char *encoded_url(const char *path, size_t len, const char *suffix)
{
	struct strbuf b = { 0 };
	char hex[4];

	strbuf_add(&b, "/v1/paths/", 10);
	for (size_t i = 0; i < len; i++) {
		snprintf(hex, sizeof(hex), "%%%02X", (unsigned char)path[i]);
		strbuf_add(&b, hex, 3);
	}
	strbuf_add(&b, suffix, strlen(suffix));
	return b.p;
}

START_TEST(test_paths_binary_safe)
{
	static char longpath[10001];
	const struct {
		const char *p;
		size_t len;
	} paths[] = {
		{ "/a path with spaces", 19 }, { "/{braces}", 9 },   { "/\"quoted\" 'x'", 14 },
		{ "/new\nline\r", 11 },        { "/nul\0byte", 9 }, { longpath, 10000 },
		{ "/x * ? [a] \\", 13 },
	};
	long long t = test_server_ms(c) + HOUR_MS;

	memset(longpath, 'p', 10000);
	longpath[0] = '/';
	put_ok("all", "{\"match\":\"*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	lb_admit("/canary", 10, "0.1", t);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char *url = encoded_url(paths[i].p, paths[i].len, "");
		char *reset = encoded_url(paths[i].p, paths[i].len, "/reset");

		lb_admit_bin(paths[i].p, paths[i].len, t);
		lb_admit_bin(paths[i].p, paths[i].len, t + 1);
		get(url);
		ck_assert_msg(res.status == 200, "path %zu: %d %s", i, res.status, res.text);
		ck_assert_int_eq(jint("count"), 2);
		ck_assert_int_eq(cJSON_IsTrue(jat("registered")), 1);
		call("POST", reset, NULL);
		ck_assert_int_eq(res.status, 200);
		ck_assert_int_eq(jint("keys_removed"), 2);
		ck_assert_int_eq(jint("entries_removed"), 2);
		ck_assert_int_eq(jint("registries_removed"), 1);
		free(url);
		free(reset);
	}
	/* nothing else was touched */
	ck_assert_int_eq(test_cmd_int(c, "SCARD %s", LB_REG), 1);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/canary")), 1);
	ck_assert_int_eq(test_cmd_int(c, "DBSIZE"), 6); /* canary bucket + meta, registry, rules hash, version, epoch */
}
END_TEST

/* ---- foreign layouts in the admin API -------------------------------------------- */

START_TEST(test_foreign_layouts_state_and_reset)
{
	const char *json = "[{\"name\":\"seed004\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"LeakyBucket:\","
			   "\"registry\":\"LeakyBucket::pathSet\"},"
			   "{\"name\":\"seed000\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"limit:\",\"scan\":true}]";
	struct layout *all = NULL;
	size_t nall = 0;
	struct api_config ac = { .redis = &target, .timeout_ms = 5000, .prefix = PFX, .worker = w };
	struct api *fa;
	long long t = test_server_ms(c);

	test_layouts(PFX, json, &all, &nall);
	ac.layouts = all;
	ac.nlayouts = nall;
	fa = api_new(&ac);
	put_ok("seed", "{\"match\":\"/test\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":1}");
	/* written the way the seed clients write them */
	for (int k = 0; k < 3; k++)
		freeReplyObject(test_cmd(c, "ZADD LeakyBucket:/test %lld %lld", t + HOUR_MS + k, t + HOUR_MS + k));
	freeReplyObject(test_cmd(c, "SADD LeakyBucket::pathSet /test"));
	freeReplyObject(test_cmd(c, "ZADD limit:u1:/api %lld %lld", t, t));

	call_on(fa, "GET", "/v1/paths/%2Ftest", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	ck_assert_str_eq(jstr("layout"), "seed004");
	ck_assert_int_eq(jint("count"), 3);
	ck_assert_int_eq(jint("remaining"), 7);
	call_on(fa, "GET", "/v1/paths/u1%3A%2Fapi", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	ck_assert_str_eq(jstr("layout"), "seed000");
	ck_assert_int_eq(jint("count"), 1);
	ck_assert(cJSON_IsTrue(jat("registered"))); /* a scan layout: known while its key exists */
	/* the list walks the foreign registry and the SCAN layout too */
	call_on(fa, "GET", "/v1/paths", NULL, 0, NULL, NULL, "1000");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 2);
	ck_assert_str_eq(jstr("cursor"), "0");
	/* a bulk reset reaches the SCAN layout too (its match is on the path inside the key) */
	{
		const char *b = "{\"match\":\"u1*\",\"dry_run\":true}";

		call_on(fa, "POST", "/v1/reset", b, strlen(b), NULL, NULL, NULL);
		ck_res(200, "{\"match\":\"u1*\",\"dry_run\":true,\"paths\":1,\"keys\":1,\"entries\":1}");
		ck_assert_int_eq(test_cmd_int(c, "EXISTS limit:u1:/api"), 1);
	}
	/* reset takes the foreign keys */
	call_on(fa, "POST", "/v1/paths/%2Ftest/reset", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(jint("entries_removed"), 3);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS LeakyBucket:/test"), 0);
	ck_assert_int_eq(test_cmd_int(c, "SCARD LeakyBucket::pathSet"), 0);
	call_on(fa, "POST", "/v1/paths/u1%3A%2Fapi/reset", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(jint("entries_removed"), 1);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS limit:u1:/api"), 0);
	api_free(fa);
	layouts_free(all, nall);
}
END_TEST

/*
 * A foreign leaky bucket whose key holds '}' (LeakyBucket:}x): the worker's
 * drain, the path state and the reset all use sluice's meta for it,
 * sluice:{2Vc}:seed004_meta:LeakyBucket:}x (the key's slot, 4889), so the
 * state shows the carry the drain left (the next entry leaks in 500 ms) and
 * the reset leaves nothing behind.
 */
START_TEST(test_foreign_meta_state_and_reset)
{
	const char *json = "[{\"name\":\"seed004\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"LeakyBucket:\","
			   "\"registry\":\"LeakyBucket::pathSet\"}]";
	struct layout *all = NULL;
	size_t nall = 0;
	struct api_config ac = { .redis = &target, .timeout_ms = 5000, .prefix = PFX };
	struct worker_config wc = { .redis = &target, .timeout_ms = 5000, .prefix = PFX, .batch_size = 100 };
	struct worker *fw;
	struct worker_result r;
	struct api *fa;
	long long t = test_server_ms(c) + HOUR_MS;
	char *before, *after;

	test_layouts(PFX, json, &all, &nall);
	ac.layouts = wc.layouts = all;
	ac.nlayouts = wc.nlayouts = nall;
	fa = api_new(&ac);
	fw = worker_new(&wc);
	ck_assert_ptr_nonnull(fa);
	ck_assert_ptr_nonnull(fw);
	put_ok("all", "{\"match\":\"*\",\"algorithm\":\"leaky_bucket\",\"capacity\":1000,\"rate\":1}");
	before = test_snapshot(c);
	for (int k = 0; k < 20; k++)
		freeReplyObject(test_cmd(c, "ZADD LeakyBucket:}x %lld %lld-%d", t, t, k));
	freeReplyObject(test_cmd(c, "SADD LeakyBucket::pathSet }x"));
	ck_assert_int_eq(worker_sweep(fw, WORKER_DRAIN, t, &r), 0); /* first sight: accounted from t */
	ck_assert_int_eq(worker_sweep(fw, WORKER_DRAIN, t + 6500, &r), 0);
	ck_assert_int_eq(r.entries, 6);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS sluice:{2Vc}:seed004_meta:LeakyBucket:}x"), 1);

	call_on(fa, "GET", "/v1/paths/%7Dx", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	take_int("ttl_ms");
	ck_json_is("{\"path\":\"}x\",\"algorithm\":\"leaky_bucket\",\"layout\":\"seed004\",\"rule\":\"all\","
		   "\"registered\":true,\"count\":14,\"capacity\":1000,\"rate\":1,\"remaining\":986,\"reset_ms\":500}");
	call_on(fa, "POST", "/v1/paths/%7Dx/reset", NULL, 0, NULL, NULL, NULL);
	ck_res(200, "{\"path\":\"}x\",\"keys_removed\":2,\"entries_removed\":14,\"registries_removed\":1,"
		    "\"keys\":[{\"key\":\"LeakyBucket:}x\",\"entries\":14},"
		    "{\"key\":\"sluice:{2Vc}:seed004_meta:LeakyBucket:}x\",\"meta\":true}]}");
	after = test_snapshot(c);
	ck_assert_msg(strcmp(before, after) == 0, "the reset left keys behind:\n before %s\n after  %s", before, after);
	free(before);
	free(after);
	worker_free(fw);
	api_free(fa);
	layouts_free(all, nall);
}
END_TEST

static Suite *paths_api_suite(void)
{
	Suite *s = suite_create("paths_api");
	TCase *tc;

	tc = test_tcase(s, "paths", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_path_leaky_bucket);
	tcase_add_test(tc, test_path_sliding_log);
	tcase_add_test(tc, test_path_state_without_rule);
	tcase_add_test(tc, test_path_rule_without_state);
	tcase_add_test(tc, test_path_rule_precedence);
	tcase_add_test(tc, test_path_unknown_404);
	tcase_add_test(tc, test_path_state_other_algorithms);
	tcase_add_test(tc, test_paths_binary_safe);
	tcase_add_test(tc, test_path_empty_hash_tag);

	tc = test_tcase(s, "list", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_paths_list_paging);
	tcase_add_test(tc, test_paths_list_match);
	tcase_add_test(tc, test_paths_list_items);
	tcase_add_test(tc, test_paths_list_empty);
	tcase_add_loop_test(tc, test_paths_list_bad_query, 0, TEST_N(bad_queries));
	tcase_add_test(tc, test_bug_paths_list_cursor_out_of_range);
	tcase_add_test(tc, test_bug_paths_list_wrong_type_key);

	tc = test_tcase(s, "layouts", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_foreign_layouts_state_and_reset);
	tcase_add_test(tc, test_foreign_meta_state_and_reset);
	return s;
}

int main(void)
{
	return test_run_suite(paths_api_suite());
}

/*
 * The path routes (admin/routes_paths.c) over core/pathstate.c on key layout
 * 2: the live state of a path (GET /v1/paths/{path}) read by the parameters
 * its client recorded, the rule it names and the one that matches it
 * (mismatch), its due time in its shard's due index; the listing paged
 * across layouts and the 1024 shards (GET /v1/paths); paths as binary-safe
 * arguments; foreign layouts.  The fixture and the conventions are
 * tests/api_fixture.h's.  Most state is leaky buckets made by the client
 * script (lua/leaky_bucket.lua); the "algorithms" case holds the other four
 * algorithms, whose state scripts follow the same contract.
 */
#include "tests/api_fixture.h"

#include "core/pathstate.h"

/* the skew horizon (ms): due times and TTLs of leaky buckets include it */
#define S test_skew_ms()

/* Take the integer `key` out of the body and check it is `want`. */
#define ck_take(key, want)                                                                         \
	do {                                                                                       \
		long long got_ = take_int(key);                                                    \
		ck_assert_msg(got_ == (want), "%s: %s is %lld, want %lld", res.what, (key), got_, \
			      (long long)(want));                                                  \
	} while (0)

/* Take ttl_ms out of the body and check it is in (lo, hi]: a PTTL runs on the real clock. */
#define ck_take_ttl(lo, hi)                                                                         \
	do {                                                                                        \
		long long ttl_ = take_int("ttl_ms");                                                \
		ck_assert_msg(ttl_ > (lo) && ttl_ <= (hi), "%s: ttl_ms %lld not in (%lld, %lld]", res.what, \
			      ttl_, (long long)(lo), (long long)(hi));                              \
	} while (0)

/* ---- path state --------------------------------------------------------------- */

START_TEST(test_path_leaky_bucket)
{
	long long t = test_server_ms(c) + AHEAD_MS;

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	lb_admit("/api/users", 10, "0.1", t);
	lb_admit("/api/users", 10, "0.1", t + 1);
	lb_admit("/api/users", 10, "0.1", t + 2);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD sluice:{839}:leaky_bucket:/api/users"), 3);

	get("/v1/paths/%2Fapi%2Fusers");
	ck_assert_int_eq(res.status, 200);
	/* the bucket expires once it would be empty (30 s after `last` = t, + 1 ms) + 1 s grace
	 * + max_clock_skew_ms (the drain's horizon), counted from the caller's now (t + 2) */
	ck_take_ttl(20000 + S, 30999 + S);
	/* due when the first entry leaks, 10 s after t, + max_clock_skew_ms (when the drain, at its horizon, has work) */
	ck_take("due_ms", t + 10000 + S);
	/* explicit parameters, equal to the matching rule's */
	ck_json_is("{\"path\":\"/api/users\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":null,"
		   "\"matching_rule\":\"api\",\"mismatch\":false,\"recorded\":{\"capacity\":10,\"rate\":0.1},"
		   "\"registered\":true,\"count\":3,\"capacity\":10,\"rate\":0.1,\"remaining\":7,\"reset_ms\":10000}");

	/* the admin read writes nothing */
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/api/users")), 3);
	get("/v1/paths/%2Fapi%2Fusers");
	ck_assert_int_eq(jint("count"), 3);
}
END_TEST

/*
 * "daemon": the id of the daemon the path's shard lease names (the value
 * before its last ':'), null when no lease, a value without ':' or an id no
 * daemon has (a space, a byte outside printable ASCII), or a lease key of
 * another type; the read writes nothing.
 */
START_TEST(test_path_daemon)
{
	static const struct {
		const char *value, *want;
	} cases[] = {
		{ "d1:ab12cd", "d1" },
		{ "host-a:4242:0a1b2c:ff00", "host-a:4242:0a1b2c" },
		{ "ghost", NULL },
		{ ":ab", NULL },
	};

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		freeReplyObject(test_cmd(c, "SET sluice:{839}:lease %s", cases[i].value));
		get("/v1/paths/%2Fapi%2Fusers");
		ck_assert_int_eq(res.status, 200);
		ck_assert_int_eq(jint("shard"), 839);
		if (cases[i].want)
			ck_assert_str_eq(jstr("daemon"), cases[i].want);
		else
			ck_assert_msg(cJSON_IsNull(jat("daemon")), "%s: daemon %s", cases[i].value, res.text);
	}
	freeReplyObject(test_cmd(c, "SET sluice:{839}:lease %b", "a b:1", (size_t)5));
	get("/v1/paths/%2Fapi%2Fusers");
	ck_assert_msg(cJSON_IsNull(jat("daemon")), "daemon %s", res.text);
	freeReplyObject(test_cmd(c, "SET sluice:{839}:lease %b", "d\xff:1", (size_t)4));
	get("/v1/paths/%2Fapi%2Fusers");
	ck_assert_msg(cJSON_IsNull(jat("daemon")), "daemon %s", res.text);
	/* a lease key of another type: answered (null), and left as it was */
	freeReplyObject(test_cmd(c, "DEL sluice:{839}:lease"));
	freeReplyObject(test_cmd(c, "HSET sluice:{839}:lease a b"));
	get("/v1/paths/%2Fapi%2Fusers");
	ck_assert_int_eq(res.status, 200);
	ck_assert_msg(cJSON_IsNull(jat("daemon")), "daemon %s", res.text);
	test_check_cmd(__FILE__, __LINE__, c, "\"b\"", "HGET sluice:{839}:lease a");
}
END_TEST

/* The number `key` of `o` as its text says (jsonv's integers are raw items). */
static double num_of(const cJSON *o, const char *key)
{
	char *text = cJSON_PrintUnformatted(o);
	cJSON *p = cJSON_Parse(text);
	double v = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, key));

	ck_assert_msg(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(p, key)), "no number %s: %s", key, text);
	cJSON_Delete(p);
	free(text);
	return v;
}

/*
 * pathstate_get of `path` on a connection of its own, with the caller's extra
 * command GET of the lease of `lease_of`'s shard (GET /v1/paths/{path} sends
 * the path's own: in the path's slot, on one node of a cluster too): the
 * round trips it took (a pipeline over two nodes of a cluster is two); *o
 * the state (or NULL).
 */
static uint64_t path_trips_with(const struct ruleset *rs, const char *path, const char *lease_of, cJSON **o,
				redisReply **lease)
{
	struct rconn *rc = rconn_new(&target, 5000);
	struct cmdargs get = { 0 };
	uint64_t before;

	ck_assert_ptr_nonnull(rc);
	ck_assert_int_eq(rconn_ensure(rc), 0);
	ck_assert_int_eq(cmdargs_str(&get, "GET") || cmdargs_str(&get, test_shard_key("", lease_of, "lease")), 0);
	before = rconn_round_trips(rc);
	ck_assert_int_eq(pathstate_get(rc, layouts, nlayouts, rs, path, strlen(path), &get, lease, o), 0);
	before = rconn_round_trips(rc) - before;
	cmdargs_free(&get);
	rconn_free(rc);
	return before;
}

static uint64_t path_trips(const struct ruleset *rs, const char *path, cJSON **o, redisReply **lease)
{
	return path_trips_with(rs, path, path, o, lease);
}

/* A path "/far/<n>" whose shard's slot another primary than `path`'s owns (any path on a single Redis), into buf. */
static const char *path_elsewhere(const char *path, char *buf, size_t cap)
{
	const struct test_cluster *cl = test_srv_cluster();
	const char *k = test_shard_key("", path, "lease");
	int home = cl ? cl->owner_of[test_cluster_keyslot(k, strlen(k))] : 0;

	for (int n = 0; n < 100000; n++) {
		snprintf(buf, cap, "/far/%d", n);
		k = test_shard_key("", buf, "lease");
		if (!cl || cl->owner_of[test_cluster_keyslot(k, strlen(k))] != home)
			return buf;
	}
	ck_abort_msg("no path on another primary than %s's", path);
	return NULL;
}

/*
 * A path's state is read in one round trip when it is where the matching
 * rule's algorithm keeps it: the probes of every layout, the state read
 * ahead and the caller's extra command (the lease) in one pipeline; a second
 * only when the state is elsewhere, or records no parameters (or there is
 * none) and is read again by the rule.  (On a cluster a pipeline is one
 * round trip a node: all these are in the path's slot.)
 */
START_TEST(test_path_round_trips)
{
	long long t = test_server_ms(c) + AHEAD_MS;
	struct ruleset rs = { 0 };
	struct rule *r = NULL;
	redisReply *lease = NULL;
	cJSON *o = NULL;
	const char *api_rule = "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}";

	ck_assert_int_eq(rule_from_text(api_rule, strlen(api_rule), "api", &r, NULL), 0);
	ck_assert_int_eq(ruleset_put(&rs, r), 0);
	lb_admit("/api/users", 10, "0.1", t);
	freeReplyObject(test_cmd(c, "SET sluice:{839}:lease d1:ab12"));

	/* the state where the rule says: one round trip, the lease's reply handed back */
	ck_assert_int_eq(path_trips(&rs, "/api/users", &o, &lease), 1);
	ck_assert_ptr_nonnull(o);
	ck_assert_double_eq(num_of(o, "count"), 1);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "matching_rule")), "api");
	ck_assert_int_eq(lease->type, REDIS_REPLY_STRING);
	ck_assert_str_eq(lease->str, "d1:ab12");
	cJSON_Delete(o);
	freeReplyObject(lease);

	/* no state yet, a rule: two (the read ahead records no parameters: read again by the rule's) */
	ck_assert_int_eq(path_trips(&rs, "/api/none", &o, &lease), 2);
	ck_assert_double_eq(num_of(o, "count"), 0);
	cJSON_Delete(o);
	freeReplyObject(lease);

	/* a bucket without a meta (no recorded parameters): read again by the rule, two */
	test_cmd_int(c, "ZADD %s 1 a 2 b", test_lb_key("/api/bare"));
	ck_assert_int_eq(path_trips(&rs, "/api/bare", &o, &lease), 2);
	ck_assert_double_eq(num_of(o, "count"), 2);
	ck_assert_double_eq(num_of(o, "capacity"), 10);
	cJSON_Delete(o);
	freeReplyObject(lease);

	/* no rule matches: nothing to read ahead, two */
	lb_admit("/other", 5, "1", t);
	ck_assert_int_eq(path_trips(&rs, "/other", &o, &lease), 2);
	ck_assert_double_eq(num_of(o, "count"), 1);
	ck_assert_double_eq(num_of(o, "capacity"), 5);
	cJSON_Delete(o);
	freeReplyObject(lease);

	/* neither state nor rule: NULL (the 404), one */
	ck_assert_int_eq(path_trips(&rs, "/nothing", &o, &lease), 1);
	ck_assert_ptr_null(o);
	freeReplyObject(lease);

	/* the caller's extra command in a slot of another primary: on a cluster a round trip to that node too */
	{
		char far[32];

		path_elsewhere("/api/users", far, sizeof(far));
		ck_assert_int_eq(path_trips_with(&rs, "/api/users", far, &o, &lease), test_mode_cluster() ? 2 : 1);
		ck_assert_double_eq(num_of(o, "count"), 1);
		ck_assert_int_eq(lease->type, REDIS_REPLY_NIL);
		cJSON_Delete(o);
		freeReplyObject(lease);
	}
	ruleset_clear(&rs);
}
END_TEST

/*
 * Issue 8, case 5: the rule says capacity 3 rate 0.5, the application passes
 * 10 and 2.  The state shows what the client applied (10, 2: it was admitted
 * 6 times) and is flagged; once the rule says the same, it is not; a rule of
 * another algorithm is a mismatch too; with no rule, there is nothing to
 * compare.
 */
START_TEST(test_path_mismatch)
{
	long long t = test_server_ms(c) + AHEAD_MS;

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":3,\"rate\":0.5}");
	for (int i = 0; i < 6; i++)
		lb_admit("/api/x", 10, "2", t + i);
	get("/v1/paths/%2Fapi%2Fx");
	ck_assert_int_eq(res.status, 200);
	ck_take_ttl(3000 + S, 3996 + S); /* 3 s to empty + 1 ms + 1 s grace + skew, from the last call at t + 5 */
	ck_take("due_ms", t + 500 + S);
	ck_json_is("{\"path\":\"/api/x\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":null,"
		   "\"matching_rule\":\"api\",\"mismatch\":true,\"recorded\":{\"capacity\":10,\"rate\":2},"
		   "\"registered\":true,\"count\":6,\"capacity\":10,\"rate\":2,\"remaining\":4,\"reset_ms\":500}");

	/* the rule raised to the client's numbers: no mismatch */
	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}");
	get("/v1/paths/%2Fapi%2Fx");
	ck_assert(cJSON_IsFalse(jat("mismatch")));
	ck_assert_str_eq(jstr("matching_rule"), "api");
	/* the same capacity, another rate: a mismatch */
	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2.5}");
	get("/v1/paths/%2Fapi%2Fx");
	ck_assert(cJSON_IsTrue(jat("mismatch")));
	ck_assert_int_eq(jint("capacity"), 10);
	ck_assert_int_eq(jint("rate"), 2);

	/* a rule of another algorithm: a mismatch, and a note; the state is still read by what it records */
	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"sliding_log\",\"limit\":3,\"window_ms\":1000}");
	get("/v1/paths/%2Fapi%2Fx");
	ck_assert_int_eq(res.status, 200);
	take_int("ttl_ms");
	ck_take("due_ms", t + 500 + S);
	ck_json_is("{\"path\":\"/api/x\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":null,"
		   "\"matching_rule\":\"api\",\"mismatch\":true,\"recorded\":{\"capacity\":10,\"rate\":2},"
		   "\"registered\":true,\"count\":6,\"capacity\":10,\"rate\":2,\"remaining\":4,\"reset_ms\":500,"
		   "\"note\":\"the path's rule is of another algorithm\"}");

	/* no rule: nothing to compare */
	call("DELETE", "/v1/rules/api", NULL);
	ck_assert_int_eq(res.status, 200);
	get("/v1/paths/%2Fapi%2Fx");
	ck_assert(cJSON_IsNull(jat("matching_rule")));
	ck_assert(cJSON_IsNull(jat("mismatch")));
	ck_assert(cJSON_IsNull(jat("rule")));
	ck_assert_int_eq(jint("count"), 6);
	ck_assert_int_eq(jint("remaining"), 4);
}
END_TEST

/* A path with state and no rule is shown by what it records; one without a record has no limits. */
START_TEST(test_path_state_without_rule)
{
	long long t = test_server_ms(c) + AHEAD_MS;

	/* a rule that matches other paths only */
	put_ok("api", API_BODY);
	lb_admit("/free", 10, "0.1", t);
	lb_admit("/free", 10, "0.1", t);
	get("/v1/paths/%2Ffree");
	ck_assert_int_eq(res.status, 200);
	take_int("ttl_ms");
	ck_take("due_ms", t + 10000 + S);
	ck_json_is("{\"path\":\"/free\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":null,"
		   "\"matching_rule\":null,\"mismatch\":null,\"recorded\":{\"capacity\":10,\"rate\":0.1},"
		   "\"registered\":true,\"count\":2,\"capacity\":10,\"rate\":0.1,\"remaining\":8,\"reset_ms\":10000}");

	/* state left by a client that records nothing and keeps no registry: found, not registered */
	freeReplyObject(test_cmd(c, "ZADD %s 1 a 2 b 3 c 4 d", test_lb_key("/unregistered")));
	get("/v1/paths/%2Funregistered");
	ck_res(200, "{\"path\":\"/unregistered\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":null,"
		    "\"matching_rule\":null,\"mismatch\":null,\"recorded\":null,\"registered\":false,\"due_ms\":null,"
		    "\"count\":4,\"capacity\":null,\"remaining\":null,\"reset_ms\":null,\"ttl_ms\":-1}");

	/* registered, but its state is gone (expired) */
	freeReplyObject(test_cmd(c, "ZADD %s 1234 /gone", test_registry("leaky_bucket", "/gone")));
	get("/v1/paths/%2Fgone");
	ck_res(200, "{\"path\":\"/gone\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":null,"
		    "\"matching_rule\":null,\"mismatch\":null,\"recorded\":null,\"registered\":true,\"due_ms\":1234,"
		    "\"count\":0,\"capacity\":null,\"remaining\":null,\"reset_ms\":null,\"ttl_ms\":-2}");
	/* the same for a token bucket: an absent bucket uses nothing (count 0, not -1) */
	freeReplyObject(test_cmd(c, "ZADD %s 1234 /gone/tb", test_registry("token_bucket", "/gone/tb")));
	get("/v1/paths/%2Fgone%2Ftb");
	ck_res(200, "{\"path\":\"/gone/tb\",\"algorithm\":\"token_bucket\",\"layout\":\"token_bucket\",\"rule\":null,"
		    "\"matching_rule\":null,\"mismatch\":null,\"recorded\":null,\"registered\":true,\"due_ms\":1234,"
		    "\"count\":0,\"capacity\":null,\"remaining\":null,\"reset_ms\":null,\"ttl_ms\":-2}");
}
END_TEST

/* No state yet: the view under the matching rule (the state script given its parameters). */
START_TEST(test_path_rule_without_state)
{
	put_ok("api", API_BODY);
	get("/v1/paths/%2Fapi%2Fusers");
	ck_res(200, "{\"path\":\"/api/users\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":\"api\","
		    "\"matching_rule\":\"api\",\"mismatch\":false,\"recorded\":null,\"registered\":false,\"due_ms\":null,"
		    "\"count\":0,\"capacity\":10,\"rate\":2,\"remaining\":10,\"reset_ms\":0,\"ttl_ms\":-2}");
	/* registered without state (a member about to leave at its due time), under the rule */
	freeReplyObject(test_cmd(c, "ZADD %s 77 /api/users", test_registry("leaky_bucket", "/api/users")));
	get("/v1/paths/%2Fapi%2Fusers");
	ck_res(200, "{\"path\":\"/api/users\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":\"api\","
		    "\"matching_rule\":\"api\",\"mismatch\":false,\"recorded\":null,\"registered\":true,\"due_ms\":77,"
		    "\"count\":0,\"capacity\":10,\"rate\":2,\"remaining\":10,\"reset_ms\":0,\"ttl_ms\":-2}");
}
END_TEST

/* State in an algorithm other than its rule's: that state is shown, flagged, with a note. */
START_TEST(test_path_rule_of_another_algorithm)
{
	long long t = test_server_ms(c) + AHEAD_MS;

	put_ok("mix", "{\"match\":\"/mixed\",\"algorithm\":\"sliding_log\",\"limit\":3,\"window_ms\":1000}");
	lb_admit("/mixed", 10, "0.1", t);
	get("/v1/paths/%2Fmixed");
	ck_assert_int_eq(res.status, 200);
	take_int("ttl_ms");
	ck_take("due_ms", t + 10000 + S);
	ck_json_is("{\"path\":\"/mixed\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":null,"
		   "\"matching_rule\":\"mix\",\"mismatch\":true,\"recorded\":{\"capacity\":10,\"rate\":0.1},"
		   "\"registered\":true,\"count\":1,\"capacity\":10,\"rate\":0.1,\"remaining\":9,\"reset_ms\":10000,"
		   "\"note\":\"the path's rule is of another algorithm\"}");
}
END_TEST

START_TEST(test_path_rule_precedence)
{
	put_ok("glob", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":1}");
	put_ok("longer", "{\"match\":\"/api/users*\",\"algorithm\":\"leaky_bucket\",\"capacity\":2,\"rate\":1}");
	put_ok("exact", "{\"match\":\"/api/users/1\",\"algorithm\":\"leaky_bucket\",\"capacity\":3,\"rate\":1}");
	get("/v1/paths/%2Fapi%2Fusers%2F1");
	ck_assert_str_eq(jstr("rule"), "exact");
	ck_assert_str_eq(jstr("matching_rule"), "exact");
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
	/* a meta alone (the time mark an emptied bucket keeps) is no state */
	freeReplyObject(test_cmd(c, "HSET %s last 5 carry 0", test_lb_meta("/marked")));
	get("/v1/paths/%2Fmarked");
	ck_err(404, "not_found", NULL);
	/* unencoded slashes make more segments: not a path route */
	get("/v1/paths//api/users");
	ck_err(404, "not_found", NULL);
}
END_TEST

/* ---- paths are binary-safe arguments, never formatted into commands --------------- */

START_TEST(test_paths_binary_safe)
{
	static char longpath[10001];
	const struct {
		const char *p;
		size_t len;
	} paths[] = {
		{ "/a path with spaces", 19 }, { "/{braces}", 9 },   { "/\"quoted\" 'x'", 14 },
		{ "/new\nline\r", 11 },        { "/nul\0byte", 9 }, { longpath, 10000 },
		{ "/x * ? [a] \\", 13 },       { "\0", 1 },         { "}{", 2 },
		{ "\xff\xfe", 2 },              { "/caf\xc3", 5 }, /* not UTF-8: any bytes */
	};
	long long t = test_server_ms(c) + AHEAD_MS;
	char *before;

	memset(longpath, 'p', 10000);
	longpath[0] = '/';
	put_ok("all", "{\"match\":\"*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	lb_admit("/canary", 10, "0.1", t);
	before = test_snapshot(c);
	for (size_t i = 0; i < TEST_N(paths); i++) {
		char *url = encoded_url(paths[i].p, paths[i].len, "");
		char *reset = encoded_url(paths[i].p, paths[i].len, "/reset");

		lb_admit_bin(paths[i].p, paths[i].len, 10, "0.1", t);
		lb_admit_bin(paths[i].p, paths[i].len, 10, "0.1", t + 1);
		get(url);
		ck_assert_msg(res.status == 200, "path %zu: %d %s", i, res.status, res.text);
		ck_assert_int_eq(jint("count"), 2);
		ck_assert_int_eq(jint("remaining"), 8);
		ck_assert_int_eq(cJSON_IsTrue(jat("registered")), 1);
		ck_assert_int_eq(jint("due_ms"), t + 10000 + S);
		ck_assert_str_eq(jstr("matching_rule"), "all");
		call("POST", reset, NULL);
		ck_assert_int_eq(res.status, 200);
		ck_assert_int_eq(jint("keys_removed"), 2);
		ck_assert_int_eq(jint("entries_removed"), 2);
		ck_assert_int_eq(jint("registries_removed"), 1);
		/* gone: the path is back to the rule's view */
		get(url);
		ck_assert_int_eq(jint("count"), 0);
		ck_assert(cJSON_IsFalse(jat("registered")));
		free(url);
		free(reset);
	}
	/* a path that is no UTF-8 string comes back percent-encoded, every byte kept */
	lb_admit_bin("/nul\0byte", 9, 10, "0.1", t);
	get("/v1/paths/%2Fnul%00byte");
	ck_assert_str_eq(jstr("path"), "/nul%00byte");
	ck_assert_str_eq(jstr("path_encoding"), "percent");
	call("POST", "/v1/paths/%2Fnul%00byte/reset", NULL);
	{
		char want[512];

		snprintf(want, sizeof(want),
			 "{\"path\":\"/nul%%00byte\",\"path_encoding\":\"percent\",\"keys_removed\":2,\"entries_removed\":1,"
			 "\"registries_removed\":1,\"keys\":[{\"key\":\"sluice:{%u}:leaky_bucket:/nul%%00byte\","
			 "\"key_encoding\":\"percent\",\"entries\":1},{\"key\":\"sluice:{%u}:leaky_bucket_meta:/nul%%00byte\","
			 "\"key_encoding\":\"percent\",\"meta\":true}]}",
			 shard_of("/nul\0byte", 9), shard_of("/nul\0byte", 9));
		ck_res(200, want);
	}
	/* nothing else was touched, nothing was left behind */
	{
		char *after = test_snapshot(c);

		ck_assert_msg(strcmp(before, after) == 0, "keys left behind:\n before %s\n after  %s", before, after);
		free(after);
	}
	free(before);
}
END_TEST

/*
 * Paths that start with '}' or hold braces (issue 8, case 2): on key layout
 * 2 their keys carry their shard's tag, whatever bytes they hold, so the
 * worker's drain and the client's leak are one leak (20 entries lose 6 in 6
 * s, not 12), the state reads the level both see, and the reset leaves
 * nothing behind.
 */
START_TEST(test_path_brace_leading)
{
	static const char *const paths[] = { "}x", "}", "{}x", "}{a}b", "{x}" };
	/* t + 6000 must stay within the skew horizon ahead of Redis TIME */
	long long t = test_server_ms(c) + 3000;
	struct worker_result r;
	char *before, *after;

	put_ok("all", "{\"match\":\"*\",\"algorithm\":\"leaky_bucket\",\"capacity\":1000,\"rate\":1}");
	before = test_snapshot(c);
	for (size_t i = 0; i < TEST_N(paths); i++) {
		const char *p = paths[i];
		char *url = encoded_url(p, strlen(p), ""), *reset = encoded_url(p, strlen(p), "/reset");
		char want[600], key[64];

		for (int k = 0; k < 20; k++)
			lb_admit(p, 1000, "1", t);
		/* (the drain leaks at its horizon, max_clock_skew_ms behind the time it runs at) */
		ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t + S, &r), 0);
		/* the client's next call applies the leak of 6 s (6 entries) and admits one */
		lb_admit(p, 1000, "1", t + 6000);
		ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t + 6000 + S, &r), 0);
		ck_assert_int_eq(r.entries, 0); /* nothing more was due */
		get(url);
		ck_assert_int_eq(res.status, 200);
		take_int("ttl_ms");
		ck_take("due_ms", t + 7000 + S);
		snprintf(want, sizeof(want),
			 "{\"path\":\"%s\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":null,"
			 "\"matching_rule\":\"all\",\"mismatch\":false,\"recorded\":{\"capacity\":1000,\"rate\":1},"
			 "\"registered\":true,\"count\":15,\"capacity\":1000,\"rate\":1,\"remaining\":985,\"reset_ms\":1000}",
			 p);
		ck_json_is(want);
		snprintf(key, sizeof(key), "sluice:{%u}:leaky_bucket", shard_of(p, strlen(p)));
		call("POST", reset, NULL);
		snprintf(want, sizeof(want),
			 "{\"path\":\"%s\",\"keys_removed\":2,\"entries_removed\":15,\"registries_removed\":1,"
			 "\"keys\":[{\"key\":\"%s:%s\",\"entries\":15},{\"key\":\"%s_meta:%s\",\"meta\":true}]}",
			 p, key, p, key, p);
		ck_res(200, want);
		after = test_snapshot(c);
		ck_assert_msg(strcmp(before, after) == 0, "%s: the reset left keys behind:\n before %s\n after  %s", p,
			      before, after);
		free(after);
		free(url);
		free(reset);
	}
	free(before);
}
END_TEST

/* ---- path list -------------------------------------------------------------- */

/*
 * Page through GET /v1/paths (count per page) until the cursor is "0";
 * writes "layout|path" of every item, sorted, into out (cap items) and
 * returns how many (a path listed twice is there twice).  *pages gets the
 * number of requests; each page but the last holds at least half of
 * `count` items (about `count`: core/pathstate.h).
 */
static size_t page_all(const char *match, const char *count, char **out, size_t cap, int *pages)
{
	char cursor[64] = "0";
	long want = count ? atol(count) : 100;
	size_t n = 0;

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
		if (strcmp(cursor, "0") != 0)
			ck_assert_msg(cJSON_GetArraySize(arr) >= (want + 1) / 2,
				      "a page of %d items before the end (count %ld): %s", cJSON_GetArraySize(arr), want,
				      res.text);
		ck_assert_int_lt(++*pages, 1000);
	} while (strcmp(cursor, "0") != 0);
	qsort(out, n, sizeof(*out), test_cmp_str);
	return n;
}

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
}

/* Register paths prefix0..prefix(n-1) in their shards' due indexes of `algorithm` (no state). */
static void zadd_n(const char *algorithm, const char *prefix, int n)
{
	for (int i = 0; i < n; i++) {
		char p[64];

		snprintf(p, sizeof(p), "%s%d", prefix, i);
		freeReplyObject(test_cmd(c, "ZADD %s %d %s", test_registry(algorithm, p), 1000 + i, p));
	}
}

/* The sorted "layout|path" list equals want[0..n). */
static void ck_listed(char **got, size_t ngot, const char *const *want, size_t n)
{
	ck_assert_uint_eq(ngot, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(got[i], want[i]);
}

START_TEST(test_paths_list_paging)
{
	char *got[100];
	const char *want[17];
	char wbuf[17][64];
	size_t n, nw = 0;
	int pages;

	put_ok("api", API_BODY);
	zadd_n("leaky_bucket", "/api/", 12);
	zadd_n("sliding_log", "/log/", 5);
	for (int i = 0; i < 12; i++)
		snprintf(wbuf[nw++], sizeof(wbuf[0]), "leaky_bucket|/api/%d", i);
	for (int i = 0; i < 5; i++)
		snprintf(wbuf[nw++], sizeof(wbuf[0]), "sliding_log|/log/%d", i);
	for (size_t i = 0; i < nw; i++)
		want[i] = wbuf[i];
	qsort(want, nw, sizeof(want[0]), test_cmp_str);

	/* one path a page: 17 shards' registries, each page ends after the first that holds one */
	n = page_all(NULL, "1", got, 100, &pages);
	ck_listed(got, n, want, nw);
	free_strs(got, n);
	ck_assert_int_ge(pages, 17);

	/* default count (100): every registry walked in one call */
	n = page_all(NULL, NULL, got, 100, &pages);
	ck_listed(got, n, want, nw);
	ck_assert_int_eq(pages, 1);
	free_strs(got, n);

	/* start at the second layout */
	list(NULL, "1-0-0", "1000");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 5);
	ck_assert_str_eq(jstr("cursor"), "0");
	/* or at a shard past every one of them: the other layouts only */
	list(NULL, "0-1023-0", "1000");
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 5 + (shard_of("/api/0", 6) == 1023));
}
END_TEST

/* `n` paths "/about/<i>" registered in shard `k`'s leaky-bucket due index (no state); `k` is found by search. */
static void fill_shard(unsigned k, int n)
{
	int have = 0;

	for (long i = 0; have < n; i++) {
		char p[32];

		snprintf(p, sizeof(p), "/about/%ld", i);
		if (shard_of(p, strlen(p)) != k)
			continue;
		freeReplyObject(test_cmd(c, "ZADD %s %d %s", test_registry("leaky_bucket", p), 1000 + have, p));
		have++;
	}
}

/*
 * About `count`: whole registry pages, and with at least half of `count` in
 * hand a page that would overshoot it by more than half waits for the next
 * call (its state is not read twice as often as asked).
 */
START_TEST(test_paths_list_about_count)
{
	fill_shard(100, 8);
	fill_shard(200, 8);
	fill_shard(300, 8);
	char cursor[64];

	list(NULL, "0-0-0", "10"); /* 8 in hand, 16 > 15: the second page waits */
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 8);
	ck_assert_str_eq(jstr("cursor"), "0-200-0");
	list(NULL, "0-200-0", "10");
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 8);
	snprintf(cursor, sizeof(cursor), "%s", jstr("cursor")); /* past shard 200, at most at 300 */
	ck_assert_msg(!strncmp(cursor, "0-2", 3) || !strcmp(cursor, "0-300-0"), "%s", cursor);
	list(NULL, cursor, "10");
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 8);
	{
		const char *p = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(jat("paths"), 0), "path")->valuestring;

		ck_assert_uint_eq(shard_of(p, strlen(p)), 300); /* the third page's */
	}
	ck_assert_str_eq(jstr("cursor"), "0");
	list(NULL, "0-0-0", "12"); /* 16 <= 18 */
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 16);
	list(NULL, "0-0-0", "20"); /* 24 <= 30 */
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 24);
	list(NULL, "0-0-0", "3"); /* the first page whole, whatever its size */
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 8);
	ck_assert_str_eq(jstr("cursor"), "0-101-0");
	list(NULL, "0-0-0", "17"); /* 16 < 17 in hand, and 24 <= 25 */
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 24);
	fill_shard(400, 30);
	list(NULL, "0-301-0", "40"); /* 0 < 20 in hand: the 30 of shard 400 are taken; 30 < 40 goes on to the end */
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 30);
	list(NULL, "0-0-0", "40"); /* 24 in hand (>= 20), 54 <= 60: shard 400 taken */
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 54);
	list(NULL, "0-0-0", "30"); /* 24 >= 15 in hand, 54 > 45: shard 400 waits */
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 24);
	list(NULL, "0-0-0", "60"); /* 8 < 30, 16 < 30, 24 < 30: every page taken, 54 */
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 54);
}
END_TEST

/* Many paths over many shards: every one listed exactly once, by pages of at least half of `count`. */
START_TEST(test_paths_list_many_shards)
{
	enum { N = 300 };
	char *got[N + 1], wbuf[N][32];
	const char *want[N];
	size_t n;
	int pages;

	zadd_n("leaky_bucket", "/bulk/", N);
	for (int i = 0; i < N; i++) {
		snprintf(wbuf[i], sizeof(wbuf[0]), "leaky_bucket|/bulk/%d", i);
		want[i] = wbuf[i];
	}
	qsort(want, N, sizeof(want[0]), test_cmp_str);
	n = page_all(NULL, "7", got, N + 1, &pages);
	ck_listed(got, n, want, N);
	ck_assert_int_ge(pages, N / 8);
	free_strs(got, n);
	n = page_all(NULL, "1000", got, N + 1, &pages);
	ck_listed(got, n, want, N);
	ck_assert_int_eq(pages, 1);
	free_strs(got, n);
}
END_TEST

/*
 * A shard whose due index holds more than one ZSCAN page (300 paths: a
 * skiplist, so ZSCAN returns about COUNT at a time) read together with the
 * next shards: a page of a shard not yet finished ends what a call takes, so
 * the rest of that shard is listed too (the listing took the next shard's
 * page as well and resumed after it, skipping the rest: found by reading).
 */
START_TEST(test_paths_list_big_shard)
{
	enum { NBIG = 300, NNEXT = 3, N = NBIG + NNEXT };
	static char wbuf[N][32];
	char *got[N + 1];
	const char *want[N];
	const unsigned k = 40;
	int nb = 0, nn = 0, pages;
	size_t n;

	for (int j = 0; nb < NBIG || nn < NNEXT; j++) {
		char p[32];
		unsigned s;

		snprintf(p, sizeof(p), "/big/%d", j);
		s = shard_of(p, strlen(p));
		if ((s == k && nb < NBIG) || (s == k + 1 && nn < NNEXT)) {
			freeReplyObject(test_cmd(c, "ZADD %s %d %s", test_registry("leaky_bucket", p), 1000 + j, p));
			snprintf(wbuf[nb + nn], sizeof(wbuf[0]), "leaky_bucket|%.18s", p);
			want[nb + nn] = wbuf[nb + nn];
			if (s == k)
				nb++;
			else
				nn++;
		}
	}
	ck_assert_int_eq(test_cmd_int(c, "ZCARD sluice:{%u}:registry:leaky_bucket", k), NBIG);
	qsort(want, N, sizeof(want[0]), test_cmp_str);
	n = page_all(NULL, "1000", got, N + 1, &pages);
	ck_listed(got, n, want, N);
	free_strs(got, n);
	n = page_all(NULL, "50", got, N + 1, &pages);
	ck_listed(got, n, want, N);
	free_strs(got, n);
	/* other paths in the big shard that a MATCH filters out: a ZSCAN page then
	 * holds fewer paths than asked for, and the call reads on into the next shard */
	for (int j = 0, m = 0; m < NBIG; j++) {
		char p[32];

		snprintf(p, sizeof(p), "/zzz/%d", j);
		if (shard_of(p, strlen(p)) == k) {
			freeReplyObject(test_cmd(c, "ZADD %s %d %s", test_registry("leaky_bucket", p), 1000 + j, p));
			m++;
		}
	}
	n = page_all("/big/*", "100", got, N + 1, &pages);
	ck_listed(got, n, want, N);
	free_strs(got, n);
}
END_TEST

START_TEST(test_paths_list_match)
{
	char *got[100];
	size_t n;
	int pages;
	static const char *const want[] = { "leaky_bucket|/api/1", "leaky_bucket|/api/10", "leaky_bucket|/api/11",
					    "sliding_log|/api/1" };

	zadd_n("leaky_bucket", "/api/", 12);
	zadd_n("sliding_log", "/api/", 3);
	zadd_n("sliding_log", "/log/", 5);

	n = page_all("/api/1*", "1", got, 100, &pages);
	ck_listed(got, n, want, 4);
	free_strs(got, n);

	/* a pattern nothing matches: empty pages down to cursor "0" */
	n = page_all("/none*", "1", got, 100, &pages);
	ck_assert_int_eq(n, 0);
	/* the rules' dialect: "[!1]" negates */
	n = page_all("/api/[!1]", NULL, got, 100, &pages);
	ck_assert_int_eq(n, 11); /* /api/0, /api/2 .. /api/9 of the buckets, /api/0 and /api/2 of the logs */
	free_strs(got, n);
	/* an empty match means no filter */
	n = page_all("", NULL, got, 100, &pages);
	ck_assert_int_eq(n, 20);
	free_strs(got, n);
}
END_TEST

START_TEST(test_paths_list_items)
{
	long long t = test_server_ms(c) + AHEAD_MS;
	cJSON *arr, *it;
	int seen = 0;

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	put_ok("mix", "{\"match\":\"/mixed\",\"algorithm\":\"sliding_log\",\"limit\":3,\"window_ms\":1000}");
	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/other", 5, "0.5", t);
	lb_admit("/mixed", 10, "0.1", t);

	list(NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	ck_assert_str_eq(jstr("cursor"), "0"); /* every registry walked in one call */
	arr = jat("paths");
	ck_assert_int_eq(cJSON_GetArraySize(arr), 3);
	cJSON_ArrayForEach(it, arr) {
		const char *p = cJSON_GetObjectItemCaseSensitive(it, "path")->valuestring;
		cJSON *ttl = cJSON_GetObjectItemCaseSensitive(it, "ttl_ms"), *due = cJSON_GetObjectItemCaseSensitive(it, "due_ms");
		long long want_due = (strcmp(p, "/other") == 0 ? t + 2000 : t + 10000) + S;
		char *s;

		ck_assert(cJSON_IsNumber(ttl) && ttl->valuedouble > 0);
		ck_assert_msg(cJSON_IsNumber(due) && (long long)due->valuedouble == want_due, "%s: due_ms", p);
		cJSON_DeleteItemFromObjectCaseSensitive(it, "ttl_ms");
		cJSON_DeleteItemFromObjectCaseSensitive(it, "due_ms");
		s = cJSON_PrintUnformatted(it);
		if (strcmp(p, "/api/a") == 0)
			ck_assert_str_eq(s, "{\"path\":\"/api/a\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\","
					    "\"rule\":null,\"matching_rule\":\"api\",\"mismatch\":false,"
					    "\"recorded\":{\"capacity\":10,\"rate\":0.1},\"registered\":true,\"count\":3,"
					    "\"capacity\":10,\"rate\":0.1,\"remaining\":7,\"reset_ms\":10000}");
		else if (strcmp(p, "/other") == 0)
			ck_assert_str_eq(s, "{\"path\":\"/other\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\","
					    "\"rule\":null,\"matching_rule\":null,\"mismatch\":null,"
					    "\"recorded\":{\"capacity\":5,\"rate\":0.5},\"registered\":true,\"count\":1,"
					    "\"capacity\":5,\"rate\":0.5,\"remaining\":4,\"reset_ms\":2000}");
		else if (strcmp(p, "/mixed") == 0)
			ck_assert_str_eq(s, "{\"path\":\"/mixed\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\","
					    "\"rule\":null,\"matching_rule\":\"mix\",\"mismatch\":true,"
					    "\"recorded\":{\"capacity\":10,\"rate\":0.1},\"registered\":true,\"count\":1,"
					    "\"capacity\":10,\"rate\":0.1,\"remaining\":9,\"reset_ms\":10000,"
					    "\"note\":\"the path's rule is of another algorithm\"}");
		else
			ck_abort_msg("unexpected item %s", s);
		free(s);
		seen++;
	}
	ck_assert_int_eq(seen, 3);

	list(NULL, "1-0-0", NULL);
	ck_res(200, "{\"paths\":[],\"cursor\":\"0\"}");
}
END_TEST

START_TEST(test_paths_list_empty)
{
	list(NULL, NULL, NULL);
	ck_res(200, "{\"paths\":[],\"cursor\":\"0\"}");
	list(NULL, "1-0-0", NULL);
	ck_res(200, "{\"paths\":[],\"cursor\":\"0\"}");
	list(NULL, "4-1023-0", "1");
	ck_res(200, "{\"paths\":[],\"cursor\":\"0\"}");
}
END_TEST

/*
 * A listing of a few paths: the cursor says where the next page starts,
 * "<layout>-<shard>-<registry cursor>", right after the shard whose due
 * index gave the page its path.
 */
START_TEST(test_paths_list_cursor)
{
	/* /api/a is in shard 598, /api/users in 839 */
	freeReplyObject(test_cmd(c, "ZADD %s 1 /api/users", test_registry("leaky_bucket", "/api/users")));
	freeReplyObject(test_cmd(c, "ZADD %s 1 /api/a", test_registry("leaky_bucket", "/api/a")));
	list(NULL, NULL, "1");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 1);
	ck_assert_str_eq(jstr("cursor"), "0-599-0");
	ck_assert_str_eq(cJSON_GetArrayItem(jat("paths"), 0)->child->valuestring, "/api/a");
	list(NULL, "0-599-0", "1");
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 1);
	ck_assert_str_eq(jstr("cursor"), "0-840-0");
	ck_assert_str_eq(cJSON_GetArrayItem(jat("paths"), 0)->child->valuestring, "/api/users");
	list(NULL, "0-840-0", "1");
	ck_res(200, "{\"paths\":[],\"cursor\":\"0\"}");
	/* a cursor inside a shard's due index: the path at 598 again (ZSCAN of a small set answers all of it) */
	list(NULL, "0-598-5", "1");
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 1);
	ck_assert_str_eq(jstr("cursor"), "0-599-0");
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
	{ "0-0", NULL, "cursor" },       /* 0.1's two-part form */
	{ "1-0", NULL, "cursor" },
	{ "0-0-", NULL, "cursor" },
	{ "0--0", NULL, "cursor" },
	{ "0-0-abc", NULL, "cursor" },
	{ "0-0-12x", NULL, "cursor" },
	{ "0-0-0-0", NULL, "cursor" },
	{ "0-0-5-0", NULL, "cursor" },   /* a node is never 0 */
	{ "0-0-5-", NULL, "cursor" },
	{ "0-0-5-1a2b3c4d5", NULL, "cursor" }, /* nodes are 32 bits */
	{ "0-0-5-AB", NULL, "cursor" },
	{ "0-0-5-ab-1", NULL, "cursor" },
	{ "0-1024-0", NULL, "cursor" },  /* shards are 0..1023 */
	{ "0-x-0", NULL, "cursor" },
	{ "0- 1-0", NULL, "cursor" },
	{ "0-+1-0", NULL, "cursor" },
	{ "5-0-0", NULL, "cursor" },     /* one past the last of the 5 layouts */
	{ "99-0-0", NULL, "cursor" },
	{ "x-0-0", NULL, "cursor" },
	{ "1", NULL, "cursor" },
	{ "0-0-18446744073709551616", NULL, "cursor" }, /* 2^64 */
	{ "0-0-123456789012345678901234", NULL, "cursor" },
	{ "184467440737095516160-0-0", NULL, "cursor" },
};

START_TEST(test_paths_list_bad_query)
{
	zadd_n("leaky_bucket", "/api/", 3);
	call_on(api, "GET", "/v1/paths", NULL, 0, NULL, bad_queries[_i].cursor, bad_queries[_i].count);
	ck_err(400, "invalid_query", bad_queries[_i].field);
}
END_TEST

/* The largest cursor Redis takes is accepted (a small registry answers all of it from any cursor). */
START_TEST(test_paths_list_cursor_bounds)
{
	zadd_n("leaky_bucket", "/api/", 3);
	list(NULL, "0-1023-18446744073709551615", "1000");
	ck_assert_int_eq(res.status, 200);
	ck_assert_str_eq(jstr("cursor"), "0");
	list(NULL, "4-1023-0", "1000");
	ck_res(200, "{\"paths\":[],\"cursor\":\"0\"}");
}
END_TEST

/*
 * One registry member whose key has another type (a foreign client, a layout
 * mismatch): that path is reported with count null and the error, the
 * others are listed.
 */
START_TEST(test_paths_list_wrong_type_key)
{
	cJSON *it;
	int n = 0;

	put_ok("api", API_BODY);
	zadd_n("leaky_bucket", "/api/ok", 1);
	freeReplyObject(test_cmd(c, "ZADD %s 5 /api/bad", test_registry("leaky_bucket", "/api/bad")));
	freeReplyObject(test_cmd(c, "ZADD %s 5 /weird", test_registry("leaky_bucket", "/weird")));
	freeReplyObject(test_cmd(c, "SET %s str", test_lb_key("/api/bad")));
	freeReplyObject(test_cmd(c, "SET %s str", test_lb_key("/weird")));
	list(NULL, NULL, "1000");
	ck_assert_msg(res.status == 200, "one wrong-typed key: GET /v1/paths %d %s", res.status, res.text);
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 3);
	cJSON_ArrayForEach(it, jat("paths")) {
		const char *p = cJSON_GetObjectItemCaseSensitive(it, "path")->valuestring;
		cJSON *count = cJSON_GetObjectItemCaseSensitive(it, "count");
		cJSON *err = cJSON_GetObjectItemCaseSensitive(it, "error");

		if (strcmp(p, "/api/ok0") == 0) {
			ck_assert(cJSON_IsNumber(count) && count->valuedouble == 0);
			continue;
		}
		ck_assert_msg(cJSON_IsNull(count), "%s: count should be null: %s", p, res.text);
		ck_assert_msg(cJSON_IsString(err) && strncmp(err->valuestring, "WRONGTYPE", 9) == 0, "%s: %s", p, res.text);
		n++;
	}
	ck_assert_int_eq(n, 2);
	/* one path: the same report, not a 500 */
	get("/v1/paths/%2Fweird");
	ck_assert_msg(res.status == 200, "%d %s", res.status, res.text);
	ck_assert(cJSON_IsNull(jat("count")));
	ck_assert(cJSON_IsNull(jat("rule")));
	ck_assert(cJSON_IsTrue(jat("registered")));
	get("/v1/paths/%2Fapi%2Fbad");
	ck_assert_msg(res.status == 200, "%d %s", res.status, res.text);
	ck_assert(cJSON_IsNull(jat("count")));
	ck_assert_str_eq(jstr("rule"), "api");
	ck_assert_str_eq(jstr("matching_rule"), "api");
}
END_TEST

/*
 * A registry page's paths are read in one state script call
 * (lib/state_each.lua): each gets its own state, a key of another type its
 * own error, the others read all the same.
 */
START_TEST(test_paths_list_page_one_call)
{
	long long t = test_server_ms(c) + AHEAD_MS, calls, times;
	unsigned k = shard_of("/api/g0", 7);
	char p[4][32], cursor[32];
	int np = 0;
	cJSON *it;

	for (long i = 0; np < 4; i++) {
		snprintf(p[np], sizeof(p[0]), "/api/g%ld", i);
		if (shard_of(p[np], strlen(p[np])) == k)
			np++;
	}
	put_ok("api", API_BODY);
	lb_admit(p[0], 10, "0.1", t);
	lb_admit(p[0], 10, "0.1", t + 1);
	lb_admit(p[1], 10, "0.1", t);
	freeReplyObject(test_cmd(c, "ZADD %s 5 %s", test_registry("leaky_bucket", p[2]), p[2]));
	freeReplyObject(test_cmd(c, "SET %s str", test_lb_key(p[2])));
	for (int i = 0; i < 3; i++)
		lb_admit(p[3], 5, "0.1", t + i);
	snprintf(cursor, sizeof(cursor), "0-%u-0", k);
	freeReplyObject(test_cmd(c, "CONFIG RESETSTAT"));
	list(NULL, cursor, "1"); /* the page whole: its 4 paths */
	calls = test_cmdstat(c, "evalsha", "calls");
	times = test_cmdstat(c, "time", "calls");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 4);
	ck_assert_int_eq(calls, 2); /* the rule store's read (the fixture's rules_ttl_ms is 0), the page's one call */
	ck_assert_int_eq(times, 1); /* one Redis TIME for the page: its paths read at one instant */
	cJSON_ArrayForEach(it, jat("paths")) {
		const char *path = cJSON_GetObjectItemCaseSensitive(it, "path")->valuestring;
		cJSON *count = cJSON_GetObjectItemCaseSensitive(it, "count"), *cap = cJSON_GetObjectItemCaseSensitive(it, "capacity");
		cJSON *err = cJSON_GetObjectItemCaseSensitive(it, "error");

		if (!strcmp(path, p[2])) {
			ck_assert_msg(cJSON_IsNull(count) && cJSON_IsString(err) && !strncmp(err->valuestring, "WRONGTYPE", 9),
				      "%s", res.text);
			continue;
		}
		ck_assert_msg(cJSON_IsNumber(count) && cJSON_IsNumber(cap) && !err, "%s: %s", path, res.text);
		if (!strcmp(path, p[0]))
			ck_assert(count->valuedouble == 2 && cap->valuedouble == 10);
		else if (!strcmp(path, p[1]))
			ck_assert(count->valuedouble == 1 && cap->valuedouble == 10);
		else
			ck_assert_msg(!strcmp(path, p[3]) && count->valuedouble == 3 && cap->valuedouble == 5, "%s", res.text);
	}
}
END_TEST

/* A due index of another type: skipped and reported, the listing goes on past it. */
START_TEST(test_paths_list_wrong_type_registry)
{
	char want[512];

	zadd_n("leaky_bucket", "/api/", 3);
	freeReplyObject(test_cmd(c, "SET %s oops", test_registry("leaky_bucket", "/api/users")));
	list(NULL, NULL, "1000");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 3);
	ck_assert_str_eq(jstr("cursor"), "0");
	snprintf(want, sizeof(want),
		 "[{\"key\":\"sluice:{839}:registry:leaky_bucket\",\"error\":\"WRONGTYPE Operation against a key "
		 "holding the wrong kind of value\"}]");
	{
		char *got = cJSON_PrintUnformatted(jat("skipped_registries"));

		ck_assert_str_eq(got, want);
		free(got);
	}
	/* a listing that starts past it does not meet it */
	list(NULL, "0-840-0", "1000");
	ck_assert_ptr_null(jat("skipped_registries"));
	/* a path of that shard still answers, its registration unknown */
	get("/v1/paths/%2Fapi%2Fusers");
	ck_err(404, "not_found", NULL);
	freeReplyObject(test_cmd(c, "ZADD %s 5 5:1", test_lb_key("/api/users")));
	get("/v1/paths/%2Fapi%2Fusers");
	ck_res(200, "{\"path\":\"/api/users\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\",\"rule\":null,"
		    "\"matching_rule\":null,\"mismatch\":null,\"recorded\":null,\"registered\":null,\"due_ms\":null,"
		    "\"count\":1,\"capacity\":null,\"remaining\":null,\"reset_ms\":null,\"ttl_ms\":-1}");
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
	char *got[16];
	size_t n = 0;

	test_layouts(PFX, json, &all, &nall);
	ac.layouts = all;
	ac.nlayouts = nall;
	fa = api_new(&ac);
	put_ok("seed", "{\"match\":\"/test\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":1}");
	/* written the way the seed clients write them */
	for (int k = 0; k < 3; k++)
		freeReplyObject(test_cmd(c, "ZADD LeakyBucket:/test %lld %lld", t + AHEAD_MS + k, t + AHEAD_MS + k));
	freeReplyObject(test_cmd(c, "SADD LeakyBucket::pathSet /test"));
	freeReplyObject(test_cmd(c, "ZADD limit:u1:/api %lld %lld", t, t));
	/* and one path of sluice's own, listed first */
	lb_admit("/own", 10, "1", t + AHEAD_MS);

	call_on(fa, "GET", "/v1/paths/%2Ftest", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	take_int("ttl_ms");
	ck_json_is("{\"path\":\"/test\",\"algorithm\":\"leaky_bucket\",\"layout\":\"seed004\",\"rule\":\"seed\","
		   "\"matching_rule\":\"seed\",\"mismatch\":false,\"recorded\":null,\"registered\":true,\"count\":3,"
		   "\"capacity\":10,\"rate\":1,\"remaining\":7,\"reset_ms\":1000}");
	call_on(fa, "GET", "/v1/paths/u1%3A%2Fapi", NULL, 0, NULL, NULL, NULL);
	/* a scan layout: known while its key exists; no rule: counted raw */
	ck_res(200, "{\"path\":\"u1:/api\",\"algorithm\":\"sliding_log\",\"layout\":\"seed000\",\"rule\":null,"
		    "\"matching_rule\":null,\"mismatch\":null,\"recorded\":null,\"registered\":true,\"count\":1,"
		    "\"limit\":null,\"remaining\":null,\"reset_ms\":null}");
	/* the list walks the own layouts, then the foreign registry and the SCAN layout, a path a page
	 * (the SCAN's end shows only on the page after its last key: an empty last page) */
	{
		char cursor[64] = "0";
		int pages = 0;

		do {
			cJSON *it;

			call_on(fa, "GET", "/v1/paths", NULL, 0, NULL, cursor, "1");
			ck_assert_int_eq(res.status, 200);
			ck_assert_msg(cJSON_GetArraySize(jat("paths")) <= 1, "cursor %s: %s", cursor, res.text);
			cJSON_ArrayForEach(it, jat("paths")) {
				ck_assert_uint_lt(n, 16);
				got[n++] = strdup(cJSON_GetObjectItemCaseSensitive(it, "layout")->valuestring);
			}
			snprintf(cursor, sizeof(cursor), "%s", jstr("cursor"));
			ck_assert_int_lt(++pages, 100);
		} while (strcmp(cursor, "0") != 0);
	}
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(got[0], "leaky_bucket");
	ck_assert_str_eq(got[1], "seed004");
	ck_assert_str_eq(got[2], "seed000");
	free_strs(got, n);
	/* a foreign layout's cursor has shard 0 */
	call_on(fa, "GET", "/v1/paths", NULL, 0, NULL, "5-1-0", NULL);
	ck_err(400, "invalid_query", "cursor");
	call_on(fa, "GET", "/v1/paths", NULL, 0, NULL, "6-0-0", "1000");
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 1);
	/* a bulk reset reaches the SCAN layout too (its match is on the path inside the key) */
	{
		const char *b = "{\"match\":\"u1*\",\"dry_run\":true}";

		reset_wait_on(fa, b);
		ck_res(200, "{\"match\":\"u1*\",\"dry_run\":true,\"paths\":1,\"keys\":1,\"entries\":1}");
		ck_assert_int_eq(test_cmd_int(c, "EXISTS limit:u1:/api"), 1);
	}
	/* reset takes the foreign keys */
	call_on(fa, "POST", "/v1/paths/%2Ftest/reset", NULL, 0, NULL, NULL, NULL);
	ck_res(200, "{\"path\":\"/test\",\"keys_removed\":1,\"entries_removed\":3,\"registries_removed\":1,"
		    "\"keys\":[{\"key\":\"LeakyBucket:/test\",\"entries\":3}]}");
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
	long long t = test_server_ms(c) + AHEAD_MS;
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
		   "\"matching_rule\":\"all\",\"mismatch\":false,\"recorded\":null,\"registered\":true,\"count\":14,"
		   "\"capacity\":1000,\"rate\":1,\"remaining\":986,\"reset_ms\":500}");
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

/* ---- the other four algorithms (their state scripts on the same contract) ------------- */

/* One client call of `alg` (parameters a1, a2 and a3, if any) at `now`; must be admitted. */
static void acquire_h(const char *alg, const char *path, const char *a1, const char *a2, const char *a3, long long now)
{
	ck_assert_msg(test_acquire(c, TEST_EVAL, alg, path, now, a1, a2, a3, NULL) == 1, "%s not admitted", alg);
}

START_TEST(test_path_rule_without_state_other_algorithms)
{
	put_ok("log", "{\"match\":\"/log\",\"algorithm\":\"sliding_log\",\"limit\":7,\"window_ms\":1000}");
	get("/v1/paths/%2Flog");
	ck_res(200, "{\"path\":\"/log\",\"algorithm\":\"sliding_log\",\"layout\":\"sliding_log\",\"rule\":\"log\","
		    "\"matching_rule\":\"log\",\"mismatch\":false,\"recorded\":null,\"registered\":false,\"due_ms\":null,"
		    "\"count\":0,\"limit\":7,\"window_ms\":1000,\"remaining\":7,\"reset_ms\":0,\"ttl_ms\":-2}");
	put_ok("fw", "{\"match\":\"/fw\",\"algorithm\":\"fixed_window\",\"limit\":7,\"window_ms\":1000}");
	get("/v1/paths/%2Ffw");
	ck_res(200, "{\"path\":\"/fw\",\"algorithm\":\"fixed_window\",\"layout\":\"fixed_window\",\"rule\":\"fw\","
		    "\"matching_rule\":\"fw\",\"mismatch\":false,\"recorded\":null,\"registered\":false,\"due_ms\":null,"
		    "\"count\":0,\"limit\":7,\"window_ms\":1000,\"remaining\":7,\"reset_ms\":0,\"ttl_ms\":-2}");
	put_ok("sc", "{\"match\":\"/sc\",\"algorithm\":\"sliding_counter\",\"limit\":6,\"window_ms\":1000,\"sub_windows\":4}");
	get("/v1/paths/%2Fsc");
	ck_res(200, "{\"path\":\"/sc\",\"algorithm\":\"sliding_counter\",\"layout\":\"sliding_counter\",\"rule\":\"sc\","
		    "\"matching_rule\":\"sc\",\"mismatch\":false,\"recorded\":null,\"registered\":false,\"due_ms\":null,"
		    "\"count\":0,\"limit\":6,\"window_ms\":1000,\"sub_windows\":4,\"remaining\":6,\"reset_ms\":0,"
		    "\"ttl_ms\":-2}");
	put_ok("tb", "{\"match\":\"/tb\",\"algorithm\":\"token_bucket\",\"capacity\":4,\"rate\":1}");
	get("/v1/paths/%2Ftb");
	ck_res(200, "{\"path\":\"/tb\",\"algorithm\":\"token_bucket\",\"layout\":\"token_bucket\",\"rule\":\"tb\","
		    "\"matching_rule\":\"tb\",\"mismatch\":false,\"recorded\":null,\"registered\":false,\"due_ms\":null,"
		    "\"count\":0,\"capacity\":4,\"rate\":1,\"remaining\":4,\"reset_ms\":0,\"ttl_ms\":-2}");
}
END_TEST

START_TEST(test_path_state_other_algorithms)
{
	/* state read at max(Redis now, stored time): a future T (whole seconds, within the skew
	 * horizon) makes every number exact */
	long long T = ((test_server_ms(c) + 5000) / 1000 + 1) * 1000;
	long long fw_end = (T / 1000000 + 1) * 1000000; /* the fixed window's end */
	char want[600];

	put_ok("log", "{\"match\":\"/log\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":60000}");
	put_ok("fw", "{\"match\":\"/fw\",\"algorithm\":\"fixed_window\",\"limit\":5,\"window_ms\":1000000}");
	put_ok("sc", "{\"match\":\"/sc\",\"algorithm\":\"sliding_counter\",\"limit\":10,\"window_ms\":1000,\"sub_windows\":4}");
	put_ok("tb", "{\"match\":\"/tb\",\"algorithm\":\"token_bucket\",\"capacity\":5,\"rate\":1}");
	acquire_h("sliding_log", "/log", "5", "60000", NULL, T);
	acquire_h("sliding_log", "/log", "5", "60000", NULL, T + 10);
	acquire_h("fixed_window", "/fw", "5", "1000000", NULL, T);
	acquire_h("fixed_window", "/fw", "5", "1000000", NULL, T);
	for (int i = 0; i < 3; i++)
		acquire_h("sliding_counter", "/sc", "10", "1000", "4", T);
	ck_assert_int_eq(test_acquire(c, TEST_EVAL, "token_bucket", "/tb", T, "5", "1", NULL), 1);
	ck_assert_int_eq(test_acquire(c, TEST_EVAL, "token_bucket", "/tb", T, "5", "1", NULL), 1);
	ck_assert_int_eq(test_acquire(c, TEST_EVAL, "token_bucket", "/tb", T, "5", "1", NULL), 1);

	get("/v1/paths/%2Flog");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_gt(take_int("ttl_ms"), 0);
	ck_assert_int_gt(take_int("due_ms"), T);
	ck_json_is("{\"path\":\"/log\",\"algorithm\":\"sliding_log\",\"layout\":\"sliding_log\",\"rule\":null,"
		   "\"matching_rule\":\"log\",\"mismatch\":false,\"recorded\":{\"limit\":5,\"window_ms\":60000},"
		   "\"registered\":true,\"count\":2,\"limit\":5,\"window_ms\":60000,\"remaining\":3,\"reset_ms\":59990}");
	get("/v1/paths/%2Ffw");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_gt(take_int("ttl_ms"), 0);
	ck_assert_int_gt(take_int("due_ms"), T);
	snprintf(want, sizeof(want),
		 "{\"path\":\"/fw\",\"algorithm\":\"fixed_window\",\"layout\":\"fixed_window\",\"rule\":null,"
		 "\"matching_rule\":\"fw\",\"mismatch\":false,\"recorded\":{\"limit\":5,\"window_ms\":1000000},"
		 "\"registered\":true,\"count\":2,\"limit\":5,\"window_ms\":1000000,\"remaining\":3,\"reset_ms\":%lld}",
		 fw_end - T);
	ck_json_is(want);
	get("/v1/paths/%2Fsc");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_gt(take_int("ttl_ms"), 0);
	ck_assert_int_gt(take_int("due_ms"), T);
	ck_json_is("{\"path\":\"/sc\",\"algorithm\":\"sliding_counter\",\"layout\":\"sliding_counter\",\"rule\":null,"
		   "\"matching_rule\":\"sc\",\"mismatch\":false,"
		   "\"recorded\":{\"limit\":10,\"window_ms\":1000,\"sub_windows\":4},\"registered\":true,\"count\":3,"
		   "\"limit\":10,\"window_ms\":1000,\"sub_windows\":4,\"remaining\":7,\"reset_ms\":1000}");
	get("/v1/paths/%2Ftb");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_gt(take_int("ttl_ms"), 0);
	ck_assert_int_gt(take_int("due_ms"), T);
	ck_json_is("{\"path\":\"/tb\",\"algorithm\":\"token_bucket\",\"layout\":\"token_bucket\",\"rule\":null,"
		   "\"matching_rule\":\"tb\",\"mismatch\":false,\"recorded\":{\"capacity\":5,\"rate\":1},"
		   "\"registered\":true,\"count\":3,\"capacity\":5,\"rate\":1,\"remaining\":2,\"reset_ms\":3000}");
	/* and the list shows all four; reset takes them */
	list(NULL, NULL, "1000");
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 4);
	call("POST", "/v1/paths/%2Ftb/reset", NULL);
	ck_assert_int_eq(jint("registries_removed"), 1);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s", test_key("/tb", "token_bucket"),
				      test_key("/tb", "token_bucket_meta")),
			 0);
}
END_TEST

static Suite *paths_api_suite(void)
{
	Suite *s = suite_create("paths_api");
	TCase *tc;

	tc = test_tcase(s, "paths", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_path_leaky_bucket);
	tcase_add_test(tc, test_path_daemon);
	tcase_add_test(tc, test_path_round_trips);
	tcase_add_test(tc, test_path_mismatch);
	tcase_add_test(tc, test_path_state_without_rule);
	tcase_add_test(tc, test_path_rule_without_state);
	tcase_add_test(tc, test_path_rule_of_another_algorithm);
	tcase_add_test(tc, test_path_rule_precedence);
	tcase_add_test(tc, test_path_unknown_404);
	tcase_add_test(tc, test_paths_binary_safe);
	tcase_add_test(tc, test_path_brace_leading);

	tc = test_tcase(s, "list", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_paths_list_paging);
	tcase_add_test(tc, test_paths_list_about_count);
	tcase_add_test(tc, test_paths_list_page_one_call);
	tcase_add_test(tc, test_paths_list_many_shards);
	tcase_add_test(tc, test_paths_list_big_shard);
	tcase_add_test(tc, test_paths_list_match);
	tcase_add_test(tc, test_paths_list_items);
	tcase_add_test(tc, test_paths_list_empty);
	tcase_add_test(tc, test_paths_list_cursor);
	tcase_add_loop_test(tc, test_paths_list_bad_query, 0, TEST_N(bad_queries));
	tcase_add_test(tc, test_paths_list_cursor_bounds);
	tcase_add_test(tc, test_paths_list_wrong_type_key);
	tcase_add_test(tc, test_paths_list_wrong_type_registry);

	tc = test_tcase(s, "layouts", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_foreign_layouts_state_and_reset);
	tcase_add_test(tc, test_foreign_meta_state_and_reset);

	tc = test_tcase(s, "algorithms", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_path_rule_without_state_other_algorithms);
	tcase_add_test(tc, test_path_state_other_algorithms);
	return s;
}

int main(void)
{
	return test_run_suite(paths_api_suite());
}

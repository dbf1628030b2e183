/*
 * The reset routes (admin/routes_paths.c) over core/reset.c on key layout 2:
 * POST /v1/paths/{path}/reset (the path's state and meta of every algorithm
 * in its shard, its entries in that shard's due indexes; a foreign layout's
 * keys and registry) and the bulk reset POST /v1/reset (a glob over every
 * shard's due indexes, the foreign registries and SCAN layouts, dry runs).
 * A registry of another type is reported and left alone: it fails no reset.
 * The fixture and the conventions are tests/api_fixture.h's.
 */
#include "core/shard.h"
#include "tests/api_fixture.h"

/* ---- reset ------------------------------------------------------------------ */

START_TEST(test_reset_leaky_bucket)
{
	long long t = test_server_ms(c) + AHEAD_MS;

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	lb_admit("/api/users", 10, "0.1", t);
	lb_admit("/api/users", 10, "0.1", t + 1);
	lb_admit("/api/users", 10, "0.1", t + 2);
	lb_admit("/api/other", 10, "0.1", t);
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", test_lb_meta("/api/users")), 6);

	/* the meta hash is bookkeeping (last, carry, seq, the parameters): listed, not counted as entries */
	call("POST", "/v1/paths/%2Fapi%2Fusers/reset", NULL);
	ck_res(200, "{\"path\":\"/api/users\",\"keys_removed\":2,\"entries_removed\":3,\"registries_removed\":1,"
		    "\"keys\":[{\"key\":\"sluice:{839}:leaky_bucket:/api/users\",\"entries\":3},"
		    "{\"key\":\"sluice:{839}:leaky_bucket_meta:/api/users\",\"meta\":true}]}");

	/* gone from Redis and from its shard's due index */
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s", test_lb_key("/api/users"), test_lb_meta("/api/users")), 0);
	ck_assert_int_eq(due_of_path("leaky_bucket", "/api/users"), -1);
	/* the other path untouched */
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/api/other")), 1);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_lb_meta("/api/other")), 1);
	ck_assert_int_eq(due_of_path("leaky_bucket", "/api/other"), t + 10000 + test_skew_ms());
	get("/v1/paths/%2Fapi%2Fusers");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(jint("count"), 0);
	ck_assert(cJSON_IsFalse(jat("registered")));
	ck_assert_str_eq(jstr("rule"), "api");

	/* again: nothing left */
	call("POST", "/v1/paths/%2Fapi%2Fusers/reset", NULL);
	ck_res(200, "{\"path\":\"/api/users\",\"keys_removed\":0,\"entries_removed\":0,\"registries_removed\":0,\"keys\":[]}");
}
END_TEST

/* The hash algorithms' entries as their clients write them: requests admitted, not hash fields. */
START_TEST(test_reset_hash_entries)
{
	const char *p = "/hash/x";
	const char *const sc_p[3] = { "100", "60000", "6" }, *const fw_p[2] = { "100", "60000" },
			  *const tb_p[2] = { "100", "1" };

	freeReplyObject(test_client_call(c, TEST_EVAL, "sliding_counter", p, "2", -1, sc_p, 3));
	freeReplyObject(test_client_call(c, TEST_EVAL, "sliding_counter", p, "1", -1, sc_p, 3));
	freeReplyObject(test_client_call(c, TEST_EVAL, "fixed_window", p, "1", -1, fw_p, 2));
	freeReplyObject(test_client_call(c, TEST_EVAL, "token_bucket", p, "5", -1, tb_p, 2));
	call("POST", "/v1/paths/%2Fhash%2Fx/reset", NULL);
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(jint("keys_removed"), 3);
	/* 3 requests in the counter's sub-windows, 1 in the fixed window, none in a token bucket */
	ck_assert_int_eq(jint("entries_removed"), 4);
}
END_TEST

/*
 * Every algorithm's state and meta of the path, and its entry in each of its
 * shard's due indexes, in one call.  A hash state's entries are the
 * requests it holds admitted (put_state writes them as `count`).
 */
START_TEST(test_reset_every_algorithm)
{
	const char *p = "/log/x";
	long long t = test_server_ms(c) + AHEAD_MS;

	lb_admit(p, 10, "1", t);
	put_state("sliding_log", p, 2, t, t + 60000);
	freeReplyObject(test_cmd(c, "HSET %s t %lld", test_key(p, "sliding_log_meta"), t + 1));
	put_state("sliding_counter", p, 4, t, t + 250);
	put_state("fixed_window", p, 3, t, t + 1000);
	put_state("token_bucket", p, 1, t, t + 5000);
	put_state("sliding_log", "/log/y", 1, t, t + 60000);
	call("POST", "/v1/paths/%2Flog%2Fx/reset", NULL);
	ck_res(200, "{\"path\":\"/log/x\",\"keys_removed\":7,\"entries_removed\":11,\"registries_removed\":5,\"keys\":["
		    "{\"key\":\"sluice:{124}:leaky_bucket:/log/x\",\"entries\":1},"
		    "{\"key\":\"sluice:{124}:leaky_bucket_meta:/log/x\",\"meta\":true},"
		    "{\"key\":\"sluice:{124}:sliding_log:/log/x\",\"entries\":2},"
		    "{\"key\":\"sluice:{124}:sliding_log_meta:/log/x\",\"meta\":true},"
		    "{\"key\":\"sluice:{124}:sliding_counter:/log/x\",\"entries\":4},"
		    "{\"key\":\"sluice:{124}:fixed_window:/log/x\",\"entries\":3},"
		    "{\"key\":\"sluice:{124}:token_bucket:/log/x\",\"entries\":1}]}");
	for (int i = 0; i < 5; i++) {
		static const char *const algs[] = { "leaky_bucket", "sliding_log", "sliding_counter", "fixed_window",
						    "token_bucket" };

		ck_assert_int_eq(due_of_path(algs[i], p), -1);
		ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_key(p, algs[i])), 0);
	}
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_sl_key("/log/y")), 1);
	ck_assert_int_eq(due_of_path("sliding_log", "/log/y"), t + 60000);
}
END_TEST

START_TEST(test_reset_unknown_path)
{
	call("POST", "/v1/paths/%2Fnothing/reset", NULL);
	ck_res(200, "{\"path\":\"/nothing\",\"keys_removed\":0,\"entries_removed\":0,\"registries_removed\":0,\"keys\":[]}");
	/* a due index entry without state is still cleaned */
	freeReplyObject(test_cmd(c, "ZADD %s 5 /stale", test_registry("sliding_log", "/stale")));
	call("POST", "/v1/paths/%2Fstale/reset", NULL);
	ck_res(200, "{\"path\":\"/stale\",\"keys_removed\":0,\"entries_removed\":0,\"registries_removed\":1,\"keys\":[]}");
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_registry("sliding_log", "/stale")), 0);
}
END_TEST

/*
 * A due index of another type (here: the sliding log's of /api/users's shard,
 * 839) fails no reset: the path's keys go, the other due indexes lose it,
 * that registry is left alone and reported.  It used to make every reset of
 * every path answer 500, and the listing stop there.
 */
START_TEST(test_registry_of_wrong_type)
{
	long long t = test_server_ms(c) + AHEAD_MS;
	const char *skipped = "\"skipped_registries\":[{\"key\":\"sluice:{839}:registry:sliding_log\","
			      "\"error\":\"a string, not a sorted set or set: left alone\"}]";
	char want[800];

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	lb_admit("/api/users", 10, "0.1", t);
	lb_admit("/api/a", 10, "0.1", t);
	freeReplyObject(test_cmd(c, "SET %s oops", test_registry("sliding_log", "/api/users")));
	/* the listing reports it and goes on */
	list(NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(cJSON_GetArraySize(jat("paths")), 2);
	{
		char *got = cJSON_PrintUnformatted(jat("skipped_registries"));

		ck_assert_str_eq(got, "[{\"key\":\"sluice:{839}:registry:sliding_log\",\"error\":\"WRONGTYPE Operation "
				      "against a key holding the wrong kind of value\"}]");
		free(got);
	}
	/* a path of another shard: nothing to report */
	call("POST", "/v1/paths/%2Fapi%2Fa/reset", NULL);
	ck_res(200, "{\"path\":\"/api/a\",\"keys_removed\":2,\"entries_removed\":1,\"registries_removed\":1,"
		    "\"keys\":[{\"key\":\"sluice:{598}:leaky_bucket:/api/a\",\"entries\":1},"
		    "{\"key\":\"sluice:{598}:leaky_bucket_meta:/api/a\",\"meta\":true}]}");
	/* the path of that shard: reset, the registry reported */
	call("POST", "/v1/paths/%2Fapi%2Fusers/reset", NULL);
	snprintf(want, sizeof(want),
		 "{\"path\":\"/api/users\",\"keys_removed\":2,\"entries_removed\":1,\"registries_removed\":1,"
		 "\"keys\":[{\"key\":\"sluice:{839}:leaky_bucket:/api/users\",\"entries\":1},"
		 "{\"key\":\"sluice:{839}:leaky_bucket_meta:/api/users\",\"meta\":true}],%s}",
		 skipped);
	ck_res(200, want);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_lb_key("/api/users")), 0);
	ck_assert_int_eq(due_of_path("leaky_bucket", "/api/users"), -1);
	{
		redisReply *r = test_cmd(c, "GET %s", test_registry("sliding_log", "/api/users"));

		ck_assert_str_eq(r->str, "oops");
		freeReplyObject(r);
	}
	/* the path state still answers, and a path without rule or state still is 404 */
	get("/v1/paths/%2Fapi%2Fusers");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(jint("count"), 0);
	get("/v1/paths/%2Fnorule");
	ck_err(404, "not_found", NULL);
}
END_TEST

/* A foreign layout's registry of another type: the same. */
START_TEST(test_foreign_registry_of_wrong_type)
{
	const char *json = "[{\"name\":\"seed004\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"LeakyBucket:\","
			   "\"registry\":\"LeakyBucket::pathSet\"}]";
	struct layout *all = NULL;
	size_t nall = 0;
	struct api_config ac = { .redis = &target, .timeout_ms = 5000, .prefix = PFX };
	struct api *fa;

	test_layouts(PFX, json, &all, &nall);
	ac.layouts = all;
	ac.nlayouts = nall;
	fa = api_new(&ac);
	freeReplyObject(test_cmd(c, "ZADD LeakyBucket:/f 1 a"));
	freeReplyObject(test_cmd(c, "HSET LeakyBucket::pathSet x y"));
	call_on(fa, "POST", "/v1/paths/%2Ff/reset", NULL, 0, NULL, NULL, NULL);
	ck_res(200, "{\"path\":\"/f\",\"keys_removed\":1,\"entries_removed\":1,\"registries_removed\":0,"
		    "\"keys\":[{\"key\":\"LeakyBucket:/f\",\"entries\":1}],"
		    "\"skipped_registries\":[{\"key\":\"LeakyBucket::pathSet\",\"error\":\"a hash, not a sorted set or set: left alone\"}]}");
	/* the bulk reset cannot walk it: reported once (the reset of /own met it first), the rest walked */
	lb_admit("/own", 10, "1", test_server_ms(c) + AHEAD_MS);
	{
		const char *b = "{\"match\":\"*\"}";

		reset_wait_on(fa, b);
		ck_res(200, "{\"match\":\"*\",\"dry_run\":false,\"paths\":1,\"keys\":2,\"entries\":1,"
			    "\"skipped_registries\":[{\"key\":\"LeakyBucket::pathSet\",\"error\":\"a hash, not a sorted "
			    "set or set: left alone\"}]}");
		/* alone, the walk's own report */
		reset_wait_on(fa, b);
		ck_res(200, "{\"match\":\"*\",\"dry_run\":false,\"paths\":0,\"keys\":0,\"entries\":0,"
			    "\"skipped_registries\":[{\"key\":\"LeakyBucket::pathSet\",\"error\":\"WRONGTYPE Operation "
			    "against a key holding the wrong kind of value\"}]}");
	}
	api_free(fa);
	layouts_free(all, nall);
}
END_TEST

/* ---- bulk reset ------------------------------------------------------------- */

/*
 * A shard whose due index takes several ZSCAN pages, its paths mixed with
 * others the glob does not match (a page then holds fewer than asked for,
 * so the walk reads on into the next shards in the same round trip): every
 * matching path is reset, none is skipped.  (The walk went on with the
 * next shard's page and resumed after it: 51 of 303 found.)
 */
START_TEST(test_bulk_reset_big_shard)
{
	long long t = test_server_ms(c) + AHEAD_MS;
	const unsigned k = 40;
	int nb = 0, nn = 0, nz = 0;

	for (int j = 0; nb < 300 || nn < 3 || nz < 300; j++) {
		char p[32], z[32];
		unsigned s;

		snprintf(p, sizeof(p), "/big/%d", j);
		s = shard_of(p, strlen(p));
		if ((s == k && nb < 300) || (s == k + 1 && nn < 3)) {
			lb_admit(p, 10, "0.001", t);
			s == k ? nb++ : nn++;
		}
		snprintf(z, sizeof(z), "/zzz/%d", j);
		if (shard_of(z, strlen(z)) == k && nz < 300) {
			lb_admit(z, 10, "0.001", t);
			nz++;
		}
	}
	reset_wait("{\"match\":\"/big/*\",\"dry_run\":true}");
	ck_res(200, "{\"match\":\"/big/*\",\"dry_run\":true,\"paths\":303,\"keys\":606,\"entries\":303}");
	reset_wait("{\"match\":\"/big/*\"}");
	ck_res(200, "{\"match\":\"/big/*\",\"dry_run\":false,\"paths\":303,\"keys\":606,\"entries\":303}");
	ck_assert_int_eq(test_cmd_int(c, "ZCARD sluice:{%u}:registry:leaky_bucket", k), 300); /* the /zzz/ ones */
}
END_TEST

START_TEST(test_bulk_reset)
{
	long long t = test_server_ms(c) + AHEAD_MS, dbsize;
	const char *body;

	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/api/a", 10, "0.1", t + 1);
	lb_admit("/api/b", 10, "0.1", t);
	lb_admit("/web/c", 10, "0.1", t);
	put_state("sliding_log", "/api/a", 1, t, t + 1000); /* the same path in a second algorithm */
	put_state("sliding_log", "/api/x", 1, t, t + 1000);
	dbsize = test_dbsize(c);

	body = "{\"match\":\"/api/*\",\"dry_run\":true}";
	reset_wait(body);
	/* /api/a: bucket (2) + meta + log (1); /api/b: bucket (1) + meta; /api/x: log (1) */
	ck_res(200, "{\"match\":\"/api/*\",\"dry_run\":true,\"paths\":3,\"keys\":6,\"entries\":5}");
	ck_assert_int_eq(test_dbsize(c), dbsize); /* nothing removed */
	ck_assert_int_eq(due_of_path("leaky_bucket", "/api/a"), t + 10000 + test_skew_ms());

	reset_wait("{\"match\":\"/api/*\"}");
	ck_res(200, "{\"match\":\"/api/*\",\"dry_run\":false,\"paths\":3,\"keys\":6,\"entries\":5}");
	ck_assert_int_eq(due_of_path("leaky_bucket", "/api/a"), -1);
	ck_assert_int_eq(due_of_path("leaky_bucket", "/api/b"), -1);
	ck_assert_int_eq(due_of_path("sliding_log", "/api/a"), -1);
	ck_assert_int_eq(due_of_path("sliding_log", "/api/x"), -1);
	ck_assert_int_eq(due_of_path("leaky_bucket", "/web/c"), t + 10000 + test_skew_ms());
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/web/c")), 1);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s %s %s %s", test_lb_key("/api/a"), test_lb_meta("/api/a"),
				      test_sl_key("/api/a"), test_lb_key("/api/b"), test_sl_key("/api/x")),
			 0);
	/* /web/c's bucket, meta and due index */
	ck_assert_int_eq(test_dbsize(c), 3);
	/* again: nothing left to match */
	reset_wait("{\"match\":\"/api/*\",\"dry_run\":false}");
	ck_res(200, "{\"match\":\"/api/*\",\"dry_run\":false,\"paths\":0,\"keys\":0,\"entries\":0}");
}
END_TEST

/* Hundreds of paths over hundreds of shards, more than one pipeline of resets: each counted once. */
START_TEST(test_bulk_reset_many)
{
	enum { N = 450 };
	long long t = test_server_ms(c) + AHEAD_MS;

	for (int i = 0; i < N; i++) {
		char p[32];

		snprintf(p, sizeof(p), "/bulk/%d", i);
		put_state("leaky_bucket", p, 1 + i % 3, t, t + 1000);
		if (i % 5 == 0)
			put_state("token_bucket", p, 1, t, t + 1000); /* also found walking the token buckets */
	}
	put_state("leaky_bucket", "/keep", 1, t, t + 1000);
	/* entries: 150 x (1 + 2 + 3) of the buckets + 90 token buckets (a hash counts its fields: 1) */
	reset_wait("{\"match\":\"/bulk/*\",\"dry_run\":true}");
	ck_res(200, "{\"match\":\"/bulk/*\",\"dry_run\":true,\"paths\":450,\"keys\":540,\"entries\":990}");
	reset_wait("{\"match\":\"/bulk/*\"}");
	ck_res(200, "{\"match\":\"/bulk/*\",\"dry_run\":false,\"paths\":450,\"keys\":540,\"entries\":990}");
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/keep")), 1);
	ck_assert_int_eq(test_dbsize(c), 2); /* /keep's bucket and due index */
}
END_TEST

START_TEST(test_bulk_reset_errors)
{
	/* each bad body: 400 naming the field, and the keyspace as it was (state, meta, due index) */
	static char long_match[1100];
	const struct {
		const char *body;
		int status;
		const char *code, *field;
	} bad[] = {
		{ "{}", 400, "invalid_body", "match" },
		{ "{\"match\":\"\"}", 400, "invalid_body", "match" },
		{ "{\"match\":5}", 400, "invalid_body", "match" },
		{ "{\"match\":\"*\",\"dry_run\":\"yes\"}", 400, "invalid_body", "dry_run" },
		{ "{\"match\":\"*\",\"dryrun\":true}", 400, "invalid_body", "dryrun" },
		/* a field twice: refused, not the last one taken (here it would reset everything) */
		{ "{\"match\":\"/none\",\"match\":\"*\"}", 400, "invalid_body", "match" },
		{ "{\"match\":\"*\",\"dry_run\":true,\"dry_run\":false}", 400, "invalid_body", "dry_run" },
		{ long_match, 400, "invalid_body", "match" }, /* 1025 bytes of glob: over RULE_MATCH_MAX */
		{ "{\"match\":\"[a\"}", 400, "invalid_body", "match" },
		{ "[\"*\"]", 400, "invalid_body", NULL },
		{ "{\"match\":\"*\"", 400, "invalid_json", NULL },
	};
	char *before;

	snprintf(long_match, sizeof(long_match), "{\"match\":\"%01025d\"}", 0);
	long_match[10] = '*';
	lb_admit("/api/a", 10, "0.1", test_server_ms(c) + AHEAD_MS);
	before = test_snapshot(c);
	for (size_t i = 0; i < TEST_N(bad); i++) {
		reset_wait(bad[i].body);
		ck_err(bad[i].status, bad[i].code, bad[i].field);
		ck_snapshot_same(before);
	}
	call("GET", "/v1/reset", NULL);
	ck_err(405, "method_not_allowed", NULL);
	ck_assert_str_eq(res.allow, "POST");
	ck_snapshot_same(before);
	free(before);
}
END_TEST

/*
 * A bulk reset and the listing match paths in the rules' glob dialect (core/glob.h),
 * not Redis's own: "[!b]" negates, as in a rule; a malformed glob is a 400 and
 * changes nothing.  (Redis's MATCH would read "[!b]" as '!' or 'b', and select the
 * very path an operator meant to keep.)
 */
START_TEST(test_bulk_reset_glob_dialect)
{
	static const char *const paths[] = { "/a[b", "/ab", "/a\\", "/a!", "/ac", "/a[b]" };
	long long t = test_server_ms(c) + AHEAD_MS;
	char *before, *after;

	for (size_t i = 0; i < TEST_N(paths); i++)
		lb_admit(paths[i], 10, "0.1", t);
	reset_wait("{\"match\":\"/a[!b]\",\"dry_run\":true}");
	ck_res(200, "{\"match\":\"/a[!b]\",\"dry_run\":true,\"paths\":3,\"keys\":6,\"entries\":3}");
	reset_wait("{\"match\":\"/a[]!]\",\"dry_run\":false}"); /* a leading ']' is literal */
	ck_res(200, "{\"match\":\"/a[]!]\",\"dry_run\":false,\"paths\":1,\"keys\":2,\"entries\":1}");
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_lb_key("/a!")), 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_lb_key("/ab")), 1);
	before = test_snapshot(c);
	reset_wait("{\"match\":\"/a[b\",\"dry_run\":false}");
	ck_err(400, "invalid_body", "match");
	reset_wait("{\"match\":\"/a\\\\\",\"dry_run\":false}");
	ck_err(400, "invalid_body", "match");
	call_on(api, "GET", "/v1/paths", NULL, 0, "/a[b", NULL, NULL);
	ck_err(400, "invalid_query", "match");
	after = test_snapshot(c);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
}
END_TEST

/* Binary paths and '}'-leading ones, by glob. */
START_TEST(test_bulk_reset_binary_paths)
{
	long long t = test_server_ms(c) + AHEAD_MS;

	lb_admit_bin("}x\0y", 4, 10, "1", t);
	lb_admit_bin("}\0", 2, 10, "1", t);
	lb_admit("}z", 10, "1", t);
	lb_admit("/other", 10, "1", t);
	reset_wait("{\"match\":\"}*\",\"dry_run\":true}");
	ck_res(200, "{\"match\":\"}*\",\"dry_run\":true,\"paths\":3,\"keys\":6,\"entries\":3}");
	reset_wait("{\"match\":\"}?\"}");
	ck_res(200, "{\"match\":\"}?\",\"dry_run\":false,\"paths\":2,\"keys\":4,\"entries\":2}");
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_lb_key("}z")), 0);
	reset_wait("{\"match\":\"}*\"}");
	ck_res(200, "{\"match\":\"}*\",\"dry_run\":false,\"paths\":1,\"keys\":2,\"entries\":1}");
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/other")), 1);
}
END_TEST

/* A SCAN layout whose key prefix holds a glob metacharacter: the bulk reset's
 * key glob escapes it (it used to split the prebuilt glob at its first '*'). */
START_TEST(test_bulk_reset_scan_prefix_with_star)
{
	struct layout *all = NULL;
	size_t nall = 0;
	struct api_config ac = { .redis = &target, .timeout_ms = 5000, .prefix = PFX, .worker = w };
	struct api *fa;
	const char *b = "{\"match\":\"u1*\",\"dry_run\":false}";
	long long t = test_server_ms(c);

	test_layouts(PFX, "[{\"name\":\"star\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"lim*it:\",\"scan\":true}]",
		     &all, &nall);
	ac.layouts = all;
	ac.nlayouts = nall;
	fa = api_new(&ac);
	freeReplyObject(test_cmd(c, "ZADD lim*it:u1:/a %lld %lld", t, t));
	freeReplyObject(test_cmd(c, "ZADD limXit:u1:/b %lld %lld", t, t)); /* another limiter's key */
	reset_wait_on(fa, b);
	ck_res(200, "{\"match\":\"u1*\",\"dry_run\":false,\"paths\":1,\"keys\":1,\"entries\":1}");
	ck_assert_int_eq(test_cmd_int(c, "EXISTS lim*it:u1:/a"), 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS limXit:u1:/b"), 1);
	api_free(fa);
	layouts_free(all, nall);
}
END_TEST

/* A path in an own layout and in a foreign one is counted once by a dry run, and reset in both. */
START_TEST(test_bulk_reset_across_layouts)
{
	const char *json = "[{\"name\":\"seed004\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"LeakyBucket:\","
			   "\"registry\":\"LeakyBucket::pathSet\"},"
			   "{\"name\":\"seed000\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"limit:\",\"scan\":true}]";
	struct layout *all = NULL;
	size_t nall = 0;
	struct api_config ac = { .redis = &target, .timeout_ms = 5000, .prefix = PFX };
	struct api *fa;
	long long t = test_server_ms(c) + AHEAD_MS;
	const char *dry = "{\"match\":\"/p*\",\"dry_run\":true}", *wet = "{\"match\":\"/p*\"}";

	test_layouts(PFX, json, &all, &nall);
	ac.layouts = all;
	ac.nlayouts = nall;
	fa = api_new(&ac);
	lb_admit("/p", 10, "1", t);
	freeReplyObject(test_cmd(c, "ZADD LeakyBucket:/p 1 a 2 b"));
	freeReplyObject(test_cmd(c, "ZADD LeakyBucket:/q 1 a"));
	freeReplyObject(test_cmd(c, "SADD LeakyBucket::pathSet /p /q"));
	freeReplyObject(test_cmd(c, "ZADD limit:/p 1 a"));
	freeReplyObject(test_cmd(c, "ZADD limit:/p2 1 a"));
	/* /p: own bucket + meta (1), foreign bucket (2), SCAN layout's key (1); /p2: the SCAN layout's (1) */
	reset_wait_on(fa, dry);
	ck_res(200, "{\"match\":\"/p*\",\"dry_run\":true,\"paths\":2,\"keys\":5,\"entries\":5}");
	reset_wait_on(fa, wet);
	ck_res(200, "{\"match\":\"/p*\",\"dry_run\":false,\"paths\":2,\"keys\":5,\"entries\":5}");
	ck_assert_int_eq(test_cmd_int(c, "EXISTS LeakyBucket:/p limit:/p limit:/p2 %s", test_lb_key("/p")), 0);
	{
		redisReply *r = test_cmd(c, "SMEMBERS LeakyBucket::pathSet");

		ck_assert_int_eq(r->elements, 1);
		ck_assert_str_eq(r->element[0]->str, "/q");
		freeReplyObject(r);
	}
	api_free(fa);
	layouts_free(all, nall);
}
END_TEST

static Suite *reset_api_suite(void)
{
	Suite *s = suite_create("reset_api");
	TCase *tc;

	tc = test_tcase(s, "reset", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_reset_leaky_bucket);
	tcase_add_test(tc, test_reset_every_algorithm);
	tcase_add_test(tc, test_reset_hash_entries);
	tcase_add_test(tc, test_reset_unknown_path);
	tcase_add_test(tc, test_registry_of_wrong_type);
	tcase_add_test(tc, test_foreign_registry_of_wrong_type);

	tc = test_tcase(s, "bulk_reset", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_bulk_reset);
	tcase_add_test(tc, test_bulk_reset_big_shard);
	tcase_add_test(tc, test_bulk_reset_many);
	tcase_add_test(tc, test_bulk_reset_errors);
	tcase_add_test(tc, test_bulk_reset_scan_prefix_with_star);
	tcase_add_test(tc, test_bulk_reset_glob_dialect);
	tcase_add_test(tc, test_bulk_reset_binary_paths);
	tcase_add_test(tc, test_bulk_reset_across_layouts);
	return s;
}

int main(void)
{
	return test_run_suite(reset_api_suite());
}

/*
 * The census of mismatched paths (core/census.h): paths written by the
 * client scripts with explicit numbers equal to the rule matching them,
 * different, with no rule, and under a rule of another algorithm, across
 * the five algorithms and many shards; the counts must equal what GET
 * /v1/paths/{path} flags `mismatch: true`, and show in GET /v1/worker and
 * /metrics.  Then a rule change, the budget across steps, a change during
 * a pass, and the cost of a pass over many paths (printed).  The fixture
 * and the conventions are tests/api_fixture.h's.
 */
#include "tests/api_fixture.h"

#include "core/census.h"
#include "core/clock.h"
#include "core/rulestore.h"

#define T0 1800000000000LL /* an injected now (ms) for the worker's steps */

static const char *const RULES[][2] = {
	{ "api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}" },
	{ "log", "{\"match\":\"/log/*\",\"algorithm\":\"sliding_log\",\"limit\":10,\"window_ms\":60000}" },
	{ "ctr", "{\"match\":\"/ctr/*\",\"algorithm\":\"sliding_counter\",\"limit\":10,\"window_ms\":60000,\"sub_windows\":6}" },
	{ "fw", "{\"match\":\"/fw/*\",\"algorithm\":\"fixed_window\",\"limit\":10,\"window_ms\":60000}" },
	{ "tb", "{\"match\":\"/tb/*\",\"algorithm\":\"token_bucket\",\"capacity\":10,\"rate\":2}" },
	{ "x", "{\"match\":\"/x/*\",\"algorithm\":\"token_bucket\",\"capacity\":10,\"rate\":2}" },
};

/* One admitted client call of `alg` for `path` (Redis TIME) with explicit parameters. */
static void client(const char *alg, const char *path, const char *p1, const char *p2, const char *p3)
{
	const char *params[3] = { p1, p2, p3 };
	redisReply *r = test_client_call(c, TEST_EVALSHA, alg, path, "", -1, params, p3 ? 3 : 2);

	ck_assert_int_eq(test_script_allowed(r, alg), 1);
}

/* The paths of the census test: name, algorithm, parameters. */
static const char *const PATHS[][5] = {
	{ "/api/eq1", "leaky_bucket", "10", "2", NULL },
	{ "/api/eq2", "leaky_bucket", "10", "2.0", NULL }, /* the same number written otherwise */
	{ "/api/eq3", "leaky_bucket", "10", "2", NULL },
	{ "/api/diff1", "leaky_bucket", "10", "3", NULL },
	{ "/api/diff2", "leaky_bucket", "11", "2", NULL },
	{ "/none/lb", "leaky_bucket", "10", "2", NULL },   /* no rule */
	{ "/x/lb", "leaky_bucket", "10", "2", NULL },      /* its rule is a token bucket */
	{ "/log/eq", "sliding_log", "10", "60000", NULL },
	{ "/log/diff", "sliding_log", "5", "60000", NULL },
	{ "/ctr/eq", "sliding_counter", "10", "60000", "6" },
	{ "/ctr/diff", "sliding_counter", "10", "60000", "3" },
	{ "/fw/eq", "fixed_window", "10", "60000", NULL },
	{ "/fw/diff", "fixed_window", "10", "30000", NULL },
	{ "/tb/eq", "token_bucket", "10", "2", NULL },
	{ "/tb/diff", "token_bucket", "10", "1", NULL },
	{ "/none/tb", "token_bucket", "10", "2", NULL },
};

/* Prune steps at `now` until the worker's census ends a pass; returns the steps. */
static int census_pass(long long now)
{
	struct census_summary before, after;
	int steps = 0;

	census_summary(worker_census(w), &before);
	do {
		ck_assert_int_eq(worker_step(w, WORKER_PRUNE, INT64_MAX, now, NULL), 0);
		census_summary(worker_census(w), &after);
		ck_assert_int_lt(++steps, 500);
	} while (after.passes == before.passes);
	return steps;
}

/* How many of the test's paths GET /v1/paths/{path} shows with mismatch: true, for algorithm `alg`. */
static long long api_mismatched(const char *alg)
{
	long long n = 0;

	for (int i = 0; i < TEST_N(PATHS); i++) {
		char *url;

		if (strcmp(PATHS[i][1], alg))
			continue;
		url = encoded_url(PATHS[i][0], strlen(PATHS[i][0]), "");
		ck_assert_int_eq(get(url), 200);
		free(url);
		n += cJSON_IsTrue(jat("mismatch"));
	}
	return n;
}

static void check_counts(const long long want[ALG__COUNT], const long long paths[ALG__COUNT])
{
	struct census_summary s;

	census_summary(worker_census(w), &s);
	for (int a = 0; a < ALG__COUNT; a++) {
		const char *name = algorithm_name((enum algorithm)a);


		ck_assert_msg((long long)s.mismatched[a] == want[a], "%s: census %llu, want %lld", name,
			      (unsigned long long)s.mismatched[a], want[a]);
		ck_assert_int_eq(api_mismatched(name), want[a]); /* exactly what the listing shows */
		ck_assert_int_eq((long long)s.paths[a], paths[a]);
	}
}

START_TEST(test_census_counts)
{
	static const long long paths[ALG__COUNT] = { 8, 2, 2, 2, 3 };
	struct api_request rq = { .method = "GET", .path = "/metrics" };
	struct api_response rs;
	unsigned shards = 0;
	/* Redis time: the prune job that the steps run too must find nothing to prune yet */
	long long t0 = test_server_ms(c);
	char when[96];

	for (int i = 0; i < TEST_N(RULES); i++)
		put_ok(RULES[i][0], RULES[i][1]);
	for (int i = 0; i < TEST_N(PATHS); i++) {
		client(PATHS[i][1], PATHS[i][0], PATHS[i][2], PATHS[i][3], PATHS[i][4]);
		shards |= 1u << (shard_of(PATHS[i][0], strlen(PATHS[i][0])) % 32);
	}
	ck_assert_int_gt(__builtin_popcount(shards), 8); /* spread over many shards */
	/* a meta of another type: counted as unreadable, not mismatched (the listing shows an error) */
	freeReplyObject(test_cmd(c, "ZADD %s %lld /api/str", test_registry("leaky_bucket", "/api/str"), t0 + 60000));
	freeReplyObject(test_cmd(c, "SET %s x", test_lb_meta("/api/str")));
	ck_assert_int_eq(get("/v1/paths/%2Fapi%2Fstr"), 200);
	ck_assert(cJSON_IsFalse(jat("mismatch")));

	census_pass(t0);
	/* leaky bucket: diff1, diff2 and /x/lb (a rule of another algorithm); each other: its diff */
	check_counts((const long long[ALG__COUNT]){ 3, 1, 1, 1, 1 }, paths);
	get("/v1/worker");
	ck_assert_int_eq(jint("census.passes"), 1);
	ck_assert_int_eq(jint("census.paths"), 17);
	ck_assert_int_eq(jint("census.unmatched"), 2);
	ck_assert_int_eq(jint("census.unreadable"), 1);
	ck_assert_int_eq(jint("census.mismatched.leaky_bucket"), 3);
	ck_assert_int_eq(jint("census.mismatched.token_bucket"), 1);
	ck_assert_int_eq(jint("census.last_pass_ms"), t0);
	ck_assert(cJSON_IsFalse(jat("census.in_pass")));
	api_handle(api, &rq, &rs);
	ck_assert_ptr_nonnull(strstr(rs.text, "\nsluice_paths_mismatched{algorithm=\"leaky_bucket\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(rs.text, "\nsluice_paths_mismatched{algorithm=\"sliding_counter\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(rs.text, "\nsluice_census_paths{algorithm=\"token_bucket\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(rs.text, "\nsluice_census_unmatched_paths 2\n"));
	ck_assert_ptr_nonnull(strstr(rs.text, "\nsluice_census_passes_total 1\n"));
	snprintf(when, sizeof(when), "\nsluice_census_last_pass_timestamp_seconds %lld.%03lld\n", t0 / 1000, t0 % 1000);
	ck_assert_ptr_nonnull(strstr(rs.text, when));
	free(rs.text);

	/* not again before CENSUS_PERIOD_MS: the steps do nothing of it */
	ck_assert_int_eq(worker_step(w, WORKER_PRUNE, INT64_MAX, t0 + 1000, NULL), 0);
	get("/v1/worker");
	ck_assert_int_eq(jint("census.passes"), 1);

	/* a rule change starts a pass at once: api is 11 at 2/s now (eq* differ, diff2 agrees), and
	 * the log's rule takes 5; the token bucket's /x/ rule goes, so /x/lb has no rule */
	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":11,\"rate\":2}");
	put_ok("log", "{\"match\":\"/log/*\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":60000}");
	ck_assert_int_eq(call_on(api, "DELETE", "/v1/rules/x", NULL, 0, NULL, NULL, NULL), 200);
	census_pass(t0 + 2000);
	check_counts((const long long[ALG__COUNT]){ 4, 1, 1, 1, 1 }, paths);
	get("/v1/worker");
	ck_assert_int_eq(jint("census.passes"), 2);
	ck_assert_int_eq(jint("census.unmatched"), 3);
	ck_assert_int_eq(jint("census.last_pass_ms"), t0 + 2000);
}
END_TEST

/* Write `n` leaky bucket paths "/api/<i>" directly (due index and meta), recording capacity `cap` (rate 2). */
static void put_many(long n, const char *cap)
{
	for (long i = 0; i < n; i++) {
		char path[32];

		snprintf(path, sizeof(path), "/api/%ld", i);
		redisAppendCommand(c, "ZADD %s %lld %s", test_registry("leaky_bucket", path), T0, path);
		redisAppendCommand(c, "HSET %s capacity %s rate 2", test_lb_meta(path), cap);
	}
	for (long i = 0; i < 2 * n; i++) {
		redisReply *r;

		ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
		ck_assert_int_ne(r->type, REDIS_REPLY_ERROR);
		freeReplyObject(r);
	}
}

/* The rules as the worker loads them, from the store. */
static void load(struct rconn *rc, struct ruleset *rs)
{
	int changed = 0;
	size_t invalid = 0;

	ck_assert_int_eq(rulestore_refresh(rc, PFX, rs, 0, &changed, &invalid), 0);
	ck_assert(rs->loaded);
}

/* The own layouts of the fixture, for census_new. */
static struct census *census_make(void)
{
	const struct layout *own[16];
	struct census *cs;

	ck_assert_uint_le(nlayouts, 16);
	for (size_t i = 0; i < nlayouts; i++)
		own[i] = &layouts[i];
	ck_assert_ptr_nonnull(cs = census_new(own, nlayouts));
	return cs;
}

START_TEST(test_census_budget_and_change)
{
	struct rconn *rc = rconn_new(&target, OBJECTS_TIMEOUT_MS);
	struct ruleset rs = { 0 };
	struct census *cs = census_make();
	struct census_summary s;
	int64_t worst = 0;
	int steps = 0, done = 0;

	put_ok("api", RULES[0][1]);
	put_many(20000, "10");
	freeReplyObject(test_cmd(c, "HSET %s capacity 12", test_lb_meta("/api/7")));
	load(rc, &rs);
	/* the worker's budget: several steps, each about the budget (a round more at most) */
	while (!done) {
		int64_t t = clock_mono_us();

		ck_assert_int_eq(census_step(cs, rc, &rs, T0, WORKER_CENSUS_BUDGET_US, &done), 0);
		t = clock_mono_us() - t;
		worst = t > worst ? t : worst;
		ck_assert_int_lt(++steps, 10000);
	}
	census_summary(cs, &s);
	fprintf(stderr, "census: 20000 paths, budget %d us: %d steps, the longest %lld us, %llu round trips\n",
		WORKER_CENSUS_BUDGET_US, steps, (long long)worst, (unsigned long long)s.last_round_trips);
	ck_assert_int_gt(steps, 2);
	ck_assert_int_eq(s.last_steps, steps);
	ck_assert_int_lt(worst, 250000); /* loose: loaded machines and ASan */
	ck_assert_uint_eq(s.paths[ALG_LEAKY_BUCKET], 20000);
	ck_assert_uint_eq(s.mismatched[ALG_LEAKY_BUCKET], 1);

	/* a rule change during a pass: it begins again, and counts by the new rule only */
	ck_assert_int_eq(census_step(cs, rc, &rs, T0 + CENSUS_PERIOD_MS, 1, &done), 0);
	ck_assert_int_eq(done, 0);
	census_summary(cs, &s);
	ck_assert(s.in_pass);
	ck_assert_uint_gt(s.pass_paths, 0);
	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":12,\"rate\":2}");
	load(rc, &rs);
	do
		ck_assert_int_eq(census_step(cs, rc, &rs, T0 + CENSUS_PERIOD_MS + 1, INT64_MAX, &done), 0);
	while (!done);
	census_summary(cs, &s);
	ck_assert_uint_eq(s.restarts, 1);
	ck_assert_uint_eq(s.passes, 2);
	ck_assert_uint_eq(s.paths[ALG_LEAKY_BUCKET], 20000);
	ck_assert_uint_eq(s.mismatched[ALG_LEAKY_BUCKET], 19999);

	/* a longer period (several daemons: CENSUS_PERIOD_MS x the live ones) from the pass after
	 * the next: that one is due a CENSUS_PERIOD_MS after the last start, the one after it 3 */
	census_set_period(cs, 3 * CENSUS_PERIOD_MS);
	{
		int64_t start = T0 + CENSUS_PERIOD_MS + 1, next = start + CENSUS_PERIOD_MS;

		do
			ck_assert_int_eq(census_step(cs, rc, &rs, next, INT64_MAX, &done), 0);
		while (!done);
		ck_assert_int_eq(census_step(cs, rc, &rs, next + CENSUS_PERIOD_MS, INT64_MAX, &done), 0);
		ck_assert_int_eq(census_step(cs, rc, &rs, next + 3 * CENSUS_PERIOD_MS - 1, INT64_MAX, &done), 0);
		census_summary(cs, &s);
		ck_assert_uint_eq(s.passes, 3);
		ck_assert(!s.in_pass);
		do
			ck_assert_int_eq(census_step(cs, rc, &rs, next + 3 * CENSUS_PERIOD_MS, INT64_MAX, &done), 0);
		while (!done);
		census_summary(cs, &s);
		ck_assert_uint_eq(s.passes, 4);
	}
	census_free(cs);
	ruleset_clear(&rs);
	rconn_free(rc);
}
END_TEST

/* INFO commandstats' usec of one command (0: it did not run). */
static long long cmd_usec(const char *cmd)
{
	return test_cmdstat(c, cmd, "usec");
}

/* What a pass costs per path, over 100,000 paths (printed; the counts asserted). */
START_TEST(test_census_cost)
{
	const long n = 100000;
	struct rconn *rc = rconn_new(&target, OBJECTS_TIMEOUT_MS);
	struct ruleset rs = { 0 };
	struct census *cs = census_make();
	struct census_summary s;
	long long zscan, hmget, wall;
	int done = 0;

	put_ok("api", RULES[0][1]);
	put_many(n, "10");
	load(rc, &rs);
	freeReplyObject(test_cmd(c, "CONFIG RESETSTAT"));
	wall = clock_mono_us();
	ck_assert_int_eq(census_step(cs, rc, &rs, T0, INT64_MAX, &done), 0);
	wall = clock_mono_us() - wall;
	ck_assert_int_eq(done, 1);
	zscan = cmd_usec("zscan");
	hmget = cmd_usec("hmget");
	census_summary(cs, &s);
	ck_assert_uint_eq(s.paths[ALG_LEAKY_BUCKET], (uint64_t)n);
	ck_assert_uint_eq(s.mismatched[ALG_LEAKY_BUCKET], 0);
	fprintf(stderr, "census cost: %ld paths in one pass: wall %lld us (%.2f us a path), Redis ZSCAN %lld us + "
			"HMGET %lld us (%.2f us a path, INFO commandstats), %llu round trips; at 5 ms a prune step "
			"about %lld steps\n",
		n, wall, (double)wall / (double)n, zscan, hmget, (double)(zscan + hmget) / (double)n,
		(unsigned long long)s.last_round_trips, wall / WORKER_CENSUS_BUDGET_US + 1);
	census_free(cs);
	ruleset_clear(&rs);
	rconn_free(rc);
}
END_TEST

static Suite *census_suite(void)
{
	Suite *s = suite_create("census");
	TCase *tc = test_tcase(s, "census", api_setup, api_teardown, 120);

	tcase_add_test(tc, test_census_counts);
	tcase_add_test(tc, test_census_budget_and_change);
	tcase_add_test(tc, test_census_cost);
	return s;
}

int main(void)
{
	return test_run_suite(census_suite());
}

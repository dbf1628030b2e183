/*
 * The decision counters and clock lag of core/stats.h, summed from stats
 * hashes written by hand (HINCRBY, HSET) in the fixed format the client
 * scripts will write: "<rule>:allowed|denied|shadow_denied" counts and
 * ":lag:<minute>" maxima.  The collector is driven with an injected now
 * (stats_step, worker_step), so rates and minutes are exact.  Then the
 * admin API's views of them: GET /v1/rules/{name} "decisions" (since the
 * rule's baseline), /metrics, GET /v1/worker's clock lag warning.  The
 * fixture and the conventions are tests/api_fixture.h's.
 */
#include <stdarg.h>
#include "tests/api_fixture.h"

#include <errno.h>

#include "core/stats.h"

#define T0 1800000000000LL /* an injected now (ms), a whole minute */
#define MINUTE 60000LL

static struct rconn *conn_make(void)
{
	struct rconn *rc = rconn_new(&target, OBJECTS_TIMEOUT_MS);

	ck_assert_ptr_nonnull(rc);
	return rc;
}

/* One whole aggregation at `now`; it must publish. */
static void aggregate(struct stats *s, struct rconn *rc, long long now)
{
	int done = 0;

	ck_assert_int_eq(stats_step(s, rc, PFX, now, INT64_MAX, &done), 0);
	ck_assert_int_eq(done, 1);
}

struct listing {
	char text[2048];
};

static int list_one(void *arg, const char *name, const uint64_t sums[STATS__DECISIONS])
{
	struct listing *l = arg;
	size_t n = strlen(l->text);

	snprintf(l->text + n, sizeof(l->text) - n, "%s=%llu/%llu/%llu ", name, (unsigned long long)sums[0],
		 (unsigned long long)sums[1], (unsigned long long)sums[2]);
	return 0;
}

/* "name=allowed/denied/shadow_denied ..." of the last sample, in name order. */
static const char *listing(struct stats *s, struct listing *l)
{
	l->text[0] = '\0';
	ck_assert_int_eq(stats_each(s, list_one, l), 0);
	return l->text;
}

/*
 * Load rules named by the NULL-terminated list into s (stats_rules_loaded):
 * only names of loaded rules are summed.  The ruleset is freed here (s keeps
 * its own copy of the names).
 */
static void load_rules(struct stats *s, ...)
{
	struct ruleset rs = { 0 };
	va_list ap;

	va_start(ap, s);
	for (const char *n; (n = va_arg(ap, const char *));) {
		struct rule *r = NULL;

		ck_assert_int_eq(rule_from_text(API_BODY, strlen(API_BODY), n, &r, NULL), 0);
		ck_assert_int_eq(ruleset_put(&rs, r), 0);
	}
	va_end(ap);
	ck_assert_int_eq(stats_rules_loaded(s, &rs), 0);
	ruleset_clear(&rs);
}

START_TEST(test_stats_sum_shards)
{
	struct stats *s = stats_new();
	struct rconn *rc = conn_make();
	struct stats_summary sum;
	struct listing l;

	test_cmd_int(c, "HINCRBY sluice:{0}:stats api:allowed 5");
	test_cmd_int(c, "HINCRBY sluice:{1}:stats api:allowed 7");
	test_cmd_int(c, "HINCRBY sluice:{517}:stats api:denied 3");
	test_cmd_int(c, "HINCRBY sluice:{1023}:stats api:shadow_denied 2");
	test_cmd_int(c, "HINCRBY sluice:{1023}:stats api:allowed 1000000000000");
	test_cmd_int(c, "HINCRBY sluice:{1023}:stats search.v2:denied 9");
	test_cmd_int(c, "HINCRBY sluice:{300}:stats B_rule-1:allowed 4");
	/* reserved and malformed fields: ignored (the reserved ones are not even counted) */
	freeReplyObject(test_cmd(c, "HSET sluice:{2}:stats :version 7 :other 1"));
	freeReplyObject(test_cmd(c, "HSET sluice:{2}:stats api:maybe 1 bad!name:allowed 1 api:allowed x nocolon 1"));
	freeReplyObject(test_cmd(c, "HSET sluice:{3}:stats api:denied -4"));
	/* another prefix is not read */
	test_cmd_int(c, "HINCRBY other:{0}:stats api:allowed 100");
	/* a name no loaded rule has (written by hand, a rule deleted before): ignored, takes no slot */
	test_cmd_int(c, "HINCRBY sluice:{5}:stats ghost:allowed 8");

	ck_assert_int_eq(stats_rule(s, "api", &(struct stats_rule){ 0 }), -ENOENT);
	load_rules(s, "api", "search.v2", "B_rule-1", NULL);
	aggregate(s, rc, T0);
	ck_assert_str_eq(listing(s, &l), "B_rule-1=4/0/0 api=1000000000012/3/2 search.v2=0/9/0 ");
	stats_summary(s, &sum);
	ck_assert_uint_eq(sum.aggregations, 1);
	ck_assert_int_eq(sum.last_ms, T0);
	ck_assert_uint_eq(sum.last_round_trips, 4); /* 1024 HGETALLs, 256 a round trip */
	ck_assert_uint_eq(sum.fields_ignored, 6);
	ck_assert_uint_eq(sum.shards_skipped, 0);
	ck_assert_int_eq(sum.lag_ms, -1);
	ck_assert_uint_eq(sum.names, 3);
	ck_assert_str_eq(sum.last_error, "");
	/* not due again before STATS_PERIOD_MS; then the sums follow the hashes */
	{
		int done = 1;

		ck_assert_int_eq(stats_step(s, rc, PFX, T0 + STATS_PERIOD_MS - 1, INT64_MAX, &done), 0);
		ck_assert_int_eq(done, 0);
	}
	test_cmd_int(c, "HINCRBY sluice:{900}:stats search.v2:denied 1");
	aggregate(s, rc, T0 + STATS_PERIOD_MS);
	ck_assert_str_eq(listing(s, &l), "B_rule-1=4/0/0 api=1000000000012/3/2 search.v2=0/10/0 ");
	stats_free(s);
	rconn_free(rc);
}
END_TEST

/* Prune steps of worker `w` at `now` until an aggregation is published (the stats have a budget per step). */
static void prune_aggregate(long long now)
{
	struct stats_summary before, after;
	int steps = 0;

	stats_summary(worker_stats(w), &before);
	do {
		ck_assert_int_eq(worker_step(w, WORKER_PRUNE, INT64_MAX, now, NULL), 0);
		stats_summary(worker_stats(w), &after);
		ck_assert_int_lt(++steps, 50);
	} while (after.aggregations == before.aggregations);
}

/* A stats hash of another type is counted and skipped; the other shards are summed. */
START_TEST(test_stats_wrong_type_skipped)
{
	struct stats *s = stats_new();
	struct rconn *rc = conn_make();
	struct stats_summary sum;
	struct listing l;

	freeReplyObject(test_cmd(c, "SET sluice:{7}:stats not-a-hash"));
	test_cmd_int(c, "RPUSH sluice:{8}:stats a");
	test_cmd_int(c, "HINCRBY sluice:{9}:stats api:allowed 2");
	test_cmd_int(c, "HINCRBY sluice:{1000}:stats api:allowed 3");
	load_rules(s, "api", NULL);
	aggregate(s, rc, T0);
	ck_assert_str_eq(listing(s, &l), "api=5/0/0 ");
	stats_summary(s, &sum);
	ck_assert_uint_eq(sum.shards_skipped, 2);
	ck_assert_msg(strstr(sum.last_error, "shard 7's stats") && strstr(sum.last_error, "WRONGTYPE"), "%s",
		      sum.last_error);
	stats_free(s);
	rconn_free(rc);

	/* through the worker: the prune steps succeed (the stats take as many as their budget needs:
	 * one alone ran out of it on a loaded ASan run), the status says it */
	prune_aggregate(T0);
	get("/v1/worker");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(jint("decisions.shards_skipped"), 2);
	ck_assert_int_eq(jint("decisions.aggregations"), 1);
	ck_assert_ptr_nonnull(strstr(jstr("decisions.last_error"), "shard 7's stats"));
}
END_TEST

/* Per second over the last minute: newest minus the oldest sample within STATS_WINDOW_MS. */
START_TEST(test_stats_per_second)
{
	struct stats *s = stats_new();
	struct rconn *rc = conn_make();
	struct ruleset rs = { 0 };
	struct rule *r = NULL;
	struct stats_rule sr;

	ck_assert_int_eq(rule_from_text(API_BODY, strlen(API_BODY), "api", &r, NULL), 0);
	ck_assert_int_eq(ruleset_put(&rs, r), 0);
	ck_assert_int_eq(stats_rules_loaded(s, &rs), 0);
	test_cmd_int(c, "HINCRBY sluice:{4}:stats api:allowed 100");
	aggregate(s, rc, T0); /* the baseline: 100 */
	ck_assert_int_eq(stats_rule(s, "api", &sr), 0);
	ck_assert_uint_eq(sr.total[STATS_ALLOWED], 0);
	ck_assert_int_eq(sr.since_ms, T0);
	ck_assert(sr.per_second[STATS_ALLOWED] == 0.0); /* one sample: no rate */

	test_cmd_int(c, "HINCRBY sluice:{4}:stats api:allowed 50");
	test_cmd_int(c, "HINCRBY sluice:{600}:stats api:denied 20");
	aggregate(s, rc, T0 + 10000);
	ck_assert_int_eq(stats_rule(s, "api", &sr), 0);
	ck_assert_uint_eq(sr.total[STATS_ALLOWED], 50);
	ck_assert_uint_eq(sr.total[STATS_DENIED], 20);
	ck_assert(sr.per_second[STATS_ALLOWED] == 5.0);
	ck_assert(sr.per_second[STATS_DENIED] == 2.0);
	ck_assert(sr.per_second[STATS_SHADOW_DENIED] == 0.0);

	/* 70 s later: the samples at T0 and T0 + 10 s are out of the window; the rate is from T0 + 80 s on */
	test_cmd_int(c, "HINCRBY sluice:{4}:stats api:allowed 700");
	aggregate(s, rc, T0 + 80000);
	test_cmd_int(c, "HINCRBY sluice:{4}:stats api:allowed 30");
	aggregate(s, rc, T0 + 85000);
	test_cmd_int(c, "HINCRBY sluice:{4}:stats api:allowed 30");
	aggregate(s, rc, T0 + 90000);
	ck_assert_int_eq(stats_rule(s, "api", &sr), 0);
	ck_assert_uint_eq(sr.total[STATS_ALLOWED], 810);
	ck_assert(sr.per_second[STATS_ALLOWED] == 6.0); /* 60 in 10 s */
	ck_assert(sr.per_second[STATS_DENIED] == 0.0);

	/* the stats lost in Redis: the baseline goes to 0, the rates do not go negative */
	test_cmd_int(c, "DEL sluice:{4}:stats");
	test_cmd_int(c, "HINCRBY sluice:{4}:stats api:allowed 1");
	aggregate(s, rc, T0 + 95000);
	ck_assert_int_eq(stats_rule(s, "api", &sr), 0);
	ck_assert_uint_eq(sr.total[STATS_ALLOWED], 1);
	ck_assert(sr.per_second[STATS_ALLOWED] == 0.0);
	ruleset_clear(&rs);
	stats_free(s);
	rconn_free(rc);
}
END_TEST

/* The lag: the largest of the current and previous minute; the fields of other minutes (older, in the future, or not a minute) are deleted. */
START_TEST(test_stats_lag_and_cleanup)
{
	struct stats *s = stats_new();
	struct rconn *rc = conn_make();
	struct stats_summary sum;
	long long m = T0 / MINUTE, now = T0 + 30000;

	freeReplyObject(test_cmd(c, "HSET sluice:{3}:stats :lag:%lld 120 :lag:%lld 900 :lag:%lld 99999 api:allowed 1",
				 m, m - 1, m - 5));
	freeReplyObject(test_cmd(c, "HSET sluice:{4}:stats :lag:%lld 5000 :lag:junk 7", m - 2));
	freeReplyObject(test_cmd(c, "HSET sluice:{1022}:stats :lag:%lld 450 :lag:%lld 9000", m, m + 1));
	aggregate(s, rc, now);
	stats_summary(s, &sum);
	ck_assert_int_eq(sum.lag_ms, 900); /* not the future minute's 9000 */
	ck_assert_uint_eq(sum.lag_fields_deleted, 4);
	ck_assert_uint_eq(sum.last_round_trips, 6); /* 4 reads, a round of HDELs after each of the two that found some */
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS sluice:{3}:stats :lag:%lld", m - 5), 0);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS sluice:{4}:stats :lag:%lld", m - 2), 0);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS sluice:{3}:stats :lag:%lld", m), 1);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS sluice:{3}:stats :lag:%lld", m - 1), 1);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS sluice:{4}:stats :lag:junk"), 0); /* not a minute */
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS sluice:{1022}:stats :lag:%lld", m + 1), 0); /* a future one */
	ck_assert_int_eq(test_cmd_int(c, "HLEN sluice:{3}:stats"), 3);

	/* a minute later, m - 1 is too old: deleted, and the max is of m and m + 1 */
	now += MINUTE;
	aggregate(s, rc, now);
	stats_summary(s, &sum);
	ck_assert_int_eq(sum.lag_ms, 450);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS sluice:{3}:stats :lag:%lld", m - 1), 0);
	ck_assert_uint_eq(sum.lag_fields_deleted, 5); /* the 4 above and m - 1 (a total since start) */
	now += 2 * MINUTE;
	aggregate(s, rc, now);
	stats_summary(s, &sum);
	ck_assert_int_eq(sum.lag_ms, -1); /* none left */
	ck_assert_int_eq(test_cmd_int(c, "HLEN sluice:{1022}:stats"), 0);
	stats_free(s);
	rconn_free(rc);
}
END_TEST

/* GET /v1/rules/api's decisions: since the rule was stored (or this worker started), reset by a change. */
START_TEST(test_rule_decisions_since)
{
	const char *v2 = "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":20,\"rate\":2}";
	char tag[24];
	char *m;

	put_ok("api", API_BODY);
	get("/v1/rules/api");
	ck_res(200, "{\"name\":\"api\",\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2,"
		    "\"decisions\":null}"); /* no aggregation yet */
	test_cmd_int(c, "HINCRBY sluice:{5}:stats api:allowed 7");
	prune_aggregate(T0); /* the worker loads the rule: its baseline is 7 */
	get("/v1/rules/api");
	ck_res(200, "{\"name\":\"api\",\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2,"
		    "\"decisions\":{\"allowed\":0,\"denied\":0,\"shadow_denied\":0,\"since_ms\":1800000000000,"
		    "\"per_second\":{\"allowed\":0,\"denied\":0,\"shadow_denied\":0}}}");
	memcpy(tag, res.etag, sizeof(tag));

	test_cmd_int(c, "HINCRBY sluice:{5}:stats api:allowed 3");
	test_cmd_int(c, "HINCRBY sluice:{800}:stats api:shadow_denied 4");
	prune_aggregate(T0 + 5000);
	get("/v1/rules/api");
	ck_assert_int_eq(jint("decisions.allowed"), 3);
	ck_assert_int_eq(jint("decisions.shadow_denied"), 4);
	ck_assert_int_eq(jint("decisions.since_ms"), T0);
	ck_assert(cJSON_GetNumberValue(jat("decisions.per_second.allowed")) == 0.6);
	ck_assert(cJSON_GetNumberValue(jat("decisions.per_second.shadow_denied")) == 0.8);
	ck_assert_str_eq(res.etag, tag); /* the counts changed, the rule did not */

	/* the same rule PUT again changes nothing: no reset */
	put_ok("api", API_BODY);
	test_cmd_int(c, "HINCRBY sluice:{5}:stats api:allowed 2");
	prune_aggregate(T0 + 10000);
	get("/v1/rules/api");
	ck_assert_int_eq(jint("decisions.allowed"), 5);

	/* a changed rule: the baseline is taken again at the next aggregation (not waiting out the period) */
	put_ok("api", v2);
	prune_aggregate(T0 + 11000);
	get("/v1/rules/api");
	ck_assert_int_eq(jint("decisions.allowed"), 0);
	ck_assert_int_eq(jint("decisions.shadow_denied"), 0);
	ck_assert_int_eq(jint("decisions.since_ms"), T0 + 11000);
	test_cmd_int(c, "HINCRBY sluice:{5}:stats api:denied 1");
	prune_aggregate(T0 + 16000);
	get("/v1/rules/api");
	ck_assert_int_eq(jint("decisions.denied"), 1);
	ck_assert_int_eq(jint("decisions.since_ms"), T0 + 11000);

	/* /metrics: the raw sums over the shards */
	{
		struct api_request rq = { .method = "GET", .path = "/metrics" };
		struct api_response rs;

		api_handle(api, &rq, &rs);
		m = rs.text;
		ck_assert_ptr_nonnull(m);
	}
	ck_assert_ptr_nonnull(strstr(m, "\n# TYPE sluice_decisions_total counter\n"
					"sluice_decisions_total{rule=\"api\",decision=\"allowed\"} 12\n"
					"sluice_decisions_total{rule=\"api\",decision=\"denied\"} 1\n"
					"sluice_decisions_total{rule=\"api\",decision=\"shadow_denied\"} 4\n"));
	ck_assert_ptr_nonnull(strstr(m, "\nsluice_client_clock_lag_seconds 0.000\n"));
	free(m);
}
END_TEST

/* GET /v1/worker warns when the lag exceeds 80% of max_clock_skew_ms; /metrics exports it in seconds. */
START_TEST(test_worker_lag_warning)
{
	long long now = T0 + 1234, m = now / MINUTE;
	struct api_request rq = { .method = "GET", .path = "/metrics" };
	struct api_response rs;

	freeReplyObject(test_cmd(c, "HSET sluice:{3}:stats :lag:%lld 8001", m));
	freeReplyObject(test_cmd(c, "HSET sluice:{64}:stats :lag:%lld 17", m - 1));
	prune_aggregate(now);
	get("/v1/worker");
	ck_assert_int_eq(jint("clock_lag.lag_ms"), 8001);
	ck_assert_int_eq(jint("clock_lag.max_clock_skew_ms"), 10000); /* the scripts' default: no skew kept */
	ck_assert_ptr_nonnull(strstr(jstr("clock_lag.warning"), "8001 ms"));
	api_handle(api, &rq, &rs);
	ck_assert_ptr_nonnull(strstr(rs.text, "\nsluice_client_clock_lag_seconds 8.001\n"));
	free(rs.text);

	/* two minutes on: the old fields are gone, and so is the warning */
	prune_aggregate(now + 2 * MINUTE);
	get("/v1/worker");
	ck_assert(cJSON_IsNull(jat("clock_lag.lag_ms")));
	ck_assert(cJSON_IsNull(jat("clock_lag.warning")));
	ck_assert_int_eq(test_cmd_int(c, "EXISTS sluice:{3}:stats"), 0);
}
END_TEST

/* INFO commandstats' usec of one command (0: it did not run). */
static long long cmd_usec(const char *cmd)
{
	return test_cmdstat(c, cmd, "usec");
}

/* What one aggregation costs: 1024 shards of 10 rules x 3 decisions (printed; the round trips asserted). */
START_TEST(test_stats_cost)
{
	struct stats *s = stats_new();
	struct rconn *rc = conn_make();
	struct stats_summary sum;
	long long us;

	/* no stats at all (no client counts yet): 1024 HGETALLs of absent keys */
	freeReplyObject(test_cmd(c, "CONFIG RESETSTAT"));
	aggregate(s, rc, T0 - STATS_PERIOD_MS);
	stats_summary(s, &sum);
	fprintf(stderr, "stats cost: one aggregation of 1024 empty shards: wall %lld us, Redis HGETALL %lld us\n",
		(long long)sum.last_duration_us, cmd_usec("hgetall"));
	redisAppendCommand(c, "MULTI");
	for (unsigned k = 0; k < SHARD_COUNT; k++)
		redisAppendCommand(c, "HSET sluice:{%u}:stats r0:allowed %u r0:denied 1 r0:shadow_denied 2 r1:allowed 3 "
				   "r1:denied 4 r1:shadow_denied 5 r2:allowed 6 r2:denied 7 r2:shadow_denied 8 r3:allowed 9 "
				   "r3:denied 1 r3:shadow_denied 2 r4:allowed 3 r4:denied 4 r4:shadow_denied 5 r5:allowed 6 "
				   "r5:denied 7 r5:shadow_denied 8 r6:allowed 9 r6:denied 1 r6:shadow_denied 2 r7:allowed 3 "
				   "r7:denied 4 r7:shadow_denied 5 r8:allowed 6 r8:denied 7 r8:shadow_denied 8 r9:allowed 9 "
				   "r9:denied 1 r9:shadow_denied 2 :lag:1 5", k, k);
	redisAppendCommand(c, "EXEC");
	for (unsigned k = 0; k < SHARD_COUNT + 2; k++) {
		redisReply *r;

		ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
		freeReplyObject(r);
	}
	load_rules(s, "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", NULL);
	aggregate(s, rc, T0); /* warm: the names, and the old lag fields deleted */
	freeReplyObject(test_cmd(c, "CONFIG RESETSTAT"));
	aggregate(s, rc, T0 + STATS_PERIOD_MS);
	us = cmd_usec("hgetall");
	stats_summary(s, &sum);
	ck_assert_uint_eq(sum.last_round_trips, 4);
	ck_assert_uint_eq(sum.names, 10);
	fprintf(stderr, "stats cost: one aggregation of 1024 shards x 30 fields: wall %lld us, Redis HGETALL %lld us "
			"(INFO commandstats), %llu round trips\n",
		(long long)sum.last_duration_us, us, (unsigned long long)sum.last_round_trips);
	stats_free(s);
	rconn_free(rc);
}
END_TEST

static Suite *stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = test_tcase(s, "stats", api_setup, api_teardown, 60);

	tcase_add_test(tc, test_stats_sum_shards);
	tcase_add_test(tc, test_stats_wrong_type_skipped);
	tcase_add_test(tc, test_stats_per_second);
	tcase_add_test(tc, test_stats_lag_and_cleanup);
	tcase_add_test(tc, test_rule_decisions_since);
	tcase_add_test(tc, test_worker_lag_warning);
	tcase_add_test(tc, test_stats_cost);
	return s;
}

int main(void)
{
	return test_run_suite(stats_suite());
}

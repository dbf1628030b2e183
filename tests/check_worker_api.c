/*
 * The worker routes (admin/routes_worker.c), through worker/status.h: GET /v1/worker
 * (every counter, before and after sweeps) and POST /v1/worker/sweep (served
 * on the worker's own thread).  The fixture and the conventions are
 * tests/api_fixture.h's.
 */
#include "tests/api_fixture.h"

/* ---- worker ----------------------------------------------------------------- */

START_TEST(test_worker_status)
{
	const long long t0 = 1000000;
	struct worker_result r;
	long long us;

	/* before any step: all zero */
	get("/v1/worker");
	ck_res(200, "{\"redis_up\":false,\"connects\":0,\"ticks\":0,\"drained\":0,\"pruned\":0,\"errors\":0,"
		    "\"last_error\":null,\"rules\":{\"version\":0,\"loaded\":0,\"invalid\":0},\"jobs\":{"
		    "\"drain\":{\"ticks\":0,\"sweeps\":0,\"batches\":0,\"paths\":0,\"drained\":0,\"emptied\":0,"
		    "\"unmatched\":0,\"skipped\":0,\"errors\":0,\"last_duration_us\":0,\"last_sweep_us\":0,\"lag_us\":0,"
		    "\"max_lag_us\":0,\"overruns\":0,\"in_sweep\":false,\"last_error\":null},"
		    "\"prune\":{\"ticks\":0,\"sweeps\":0,\"batches\":0,\"paths\":0,\"pruned\":0,\"emptied\":0,"
		    "\"unmatched\":0,\"skipped\":0,\"errors\":0,\"last_duration_us\":0,\"last_sweep_us\":0,\"lag_us\":0,"
		    "\"max_lag_us\":0,\"overruns\":0,\"in_sweep\":false,\"last_error\":null}},"
		    "\"layouts\":{\"leaky_bucket\":{\"algorithm\":\"leaky_bucket\",\"paths\":0,\"drained\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0},\"sliding_log\":{\"algorithm\":\"sliding_log\",\"paths\":0,\"pruned\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0},\"sliding_counter\":{\"algorithm\":\"sliding_counter\",\"paths\":0,\"pruned\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0},\"fixed_window\":{\"algorithm\":\"fixed_window\",\"paths\":0,\"repaired\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0},\"token_bucket\":{\"algorithm\":\"token_bucket\",\"paths\":0,\"reclaimed\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0}}}");

	/* 1 entry per 100 s; the keys expire on the real clock long after the test */
	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.01}");
	put_ok("log", "{\"match\":\"/log/*\",\"algorithm\":\"sliding_log\",\"limit\":10,\"window_ms\":600000}");
	/* a rule in Redis that fails validation: counted as invalid */
	freeReplyObject(test_cmd(c, "HSET %s broken {\"match\":\"/b\",\"algorithm\":\"nope\"}", RULES_HASH));
	freeReplyObject(test_cmd(c, "INCR %s", RULES_VER));
	for (int i = 0; i < 5; i++)
		lb_admit("/api/a", 10, "0.01", t0);
	lb_admit("/api/b", 10, "0.01", t0);
	lb_admit("/api/b", 10, "0.01", t0);
	lb_admit("/other", 10, "0.01", t0);
	/* a key of another type under the layout's name: left alone, counted as skipped */
	freeReplyObject(test_cmd(c, "SADD %s /api/str", LB_REG));
	freeReplyObject(test_cmd(c, "SET %s x", test_lb_key("/api/str")));
	sl_admit("/log/x", 10, 600000, t0);
	sl_admit("/log/x", 10, 600000, t0 + 1);
	sl_admit("/log/x", 10, 600000, t0 + 2);
	sl_admit("/log/y", 10, 600000, t0 + 300000);

	/* 300 s later: /api/a loses 3 of 5, /api/b (2) empties, /other has no rule, /api/str is skipped */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t0 + 300000, &r), 0);
	ck_assert_int_eq(r.sweep_done, 1);
	ck_assert_int_eq(r.paths, 4);
	ck_assert_int_eq(r.skipped, 1);
	ck_assert_int_eq(r.entries, 5);
	ck_assert_int_eq(r.emptied, 1);
	ck_assert_int_eq(r.unmatched, 1);
	ck_assert_int_eq(r.batches, 1);
	/* window 600 s: as of t0 + 600001 (Redis time minus the 10 s skew horizon,
	 * lua/lib/skew.lua) /log/x (t0 .. t0+1) loses 2, /log/y keeps its one */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, t0 + 610001, &r), 0);
	ck_assert_int_eq(r.paths, 2);
	ck_assert_int_eq(r.entries, 2);
	ck_assert_int_eq(r.emptied, 0);
	worker_note_schedule(w, WORKER_DRAIN, 1500, 2);
	worker_note_schedule(w, WORKER_DRAIN, 700, 2);

	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/api/a")), 2);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_lb_key("/api/b")), 0);
	ck_assert_int_eq(test_cmd_int(c, "SISMEMBER %s /api/b", LB_REG), 0);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_sl_key("/log/x")), 1);

	get("/v1/worker");
	ck_assert_int_eq(res.status, 200);
	{
		cJSON *drain = jat("jobs.drain"), *prune = jat("jobs.prune");

		ck_assert_ptr_nonnull(drain);
		ck_assert_ptr_nonnull(prune);
		for (int j = 0; j < 2; j++) {
			cJSON *job = j ? prune : drain;

			us = (long long)cJSON_GetObjectItemCaseSensitive(job, "last_duration_us")->valuedouble;
			ck_assert_int_gt(us, 0);
			us = (long long)cJSON_GetObjectItemCaseSensitive(job, "last_sweep_us")->valuedouble;
			ck_assert_int_gt(us, 0);
			cJSON_DeleteItemFromObjectCaseSensitive(job, "last_duration_us");
			cJSON_DeleteItemFromObjectCaseSensitive(job, "last_sweep_us");
		}
	}
	ck_json_is("{\"redis_up\":true,\"connects\":1,\"ticks\":2,\"drained\":5,\"pruned\":2,\"errors\":0,"
		   "\"last_error\":null,\"rules\":{\"version\":3,\"loaded\":2,\"invalid\":1},\"jobs\":{"
		   "\"drain\":{\"ticks\":1,\"sweeps\":1,\"batches\":1,\"paths\":4,\"drained\":5,\"emptied\":1,"
		   "\"unmatched\":1,\"skipped\":1,\"errors\":0,\"lag_us\":700,\"max_lag_us\":1500,\"overruns\":2,\"in_sweep\":false,\"last_error\":null},"
		   "\"prune\":{\"ticks\":1,\"sweeps\":1,\"batches\":1,\"paths\":2,\"pruned\":2,\"emptied\":0,"
		   "\"unmatched\":0,\"skipped\":0,\"errors\":0,\"lag_us\":0,\"max_lag_us\":0,\"overruns\":0,\"in_sweep\":false,\"last_error\":null}},"
		   "\"layouts\":{\"leaky_bucket\":{\"algorithm\":\"leaky_bucket\",\"paths\":4,\"drained\":5,\"emptied\":1,\"unmatched\":1,\"skipped\":1},\"sliding_log\":{\"algorithm\":\"sliding_log\",\"paths\":2,\"pruned\":2,\"emptied\":0,\"unmatched\":0,\"skipped\":0},\"sliding_counter\":{\"algorithm\":\"sliding_counter\",\"paths\":0,\"pruned\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0},\"fixed_window\":{\"algorithm\":\"fixed_window\",\"paths\":0,\"repaired\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0},\"token_bucket\":{\"algorithm\":\"token_bucket\",\"paths\":0,\"reclaimed\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0}}}");

	/* the same instant again drains nothing more; the counters add up */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t0 + 300000, &r), 0);
	ck_assert_int_eq(r.entries, 0);
	get("/v1/worker");
	ck_assert_int_eq(jint("drained"), 5);
	ck_assert_int_eq(jint("ticks"), 3);
	ck_assert_int_eq(jint("jobs.drain.sweeps"), 2);
	ck_assert_int_eq(jint("jobs.drain.paths"), 7);
	ck_assert_int_eq(jint("jobs.drain.skipped"), 2);
	ck_assert_int_eq(jint("jobs.drain.unmatched"), 2);
}
END_TEST

/* ---- POST /v1/worker/sweep ------------------------------------------------------ */

START_TEST(test_worker_sweep_now)
{
	long long t = test_server_ms(c) - 10000; /* ten seconds ago */
	struct sweeps sw;

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/norule", 10, "0.1", t);
	sweeps_start(&sw, w);
	call("POST", "/v1/worker/sweep", NULL);
	sweeps_stop(&sw);
	ck_assert_int_eq(res.status, 200);
	/* 0.1 per second for 10 s: one entry of /api/a; /norule is left alone */
	ck_assert_int_eq(jint("drain.paths"), 2);
	ck_assert_int_eq(jint("drain.drained"), 1);
	ck_assert_int_eq(jint("drain.unmatched"), 1);
	ck_assert_int_eq(jint("drain.emptied"), 0);
	ck_assert_int_eq(jint("prune.paths"), 0);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/api/a")), 1);
	call("GET", "/v1/worker/sweep", NULL);
	ck_err(405, "method_not_allowed", NULL);
}
END_TEST

static Suite *worker_api_suite(void)
{
	Suite *s = suite_create("worker_api");
	TCase *tc;

	tc = test_tcase(s, "worker", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_worker_status);
	tcase_add_test(tc, test_worker_sweep_now);
	return s;
}

int main(void)
{
	return test_run_suite(worker_api_suite());
}

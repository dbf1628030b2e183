/*
 * The worker routes (admin/routes_worker.c), through worker/status.h: GET /v1/worker
 * (every counter, before and after sweeps) and POST /v1/worker/sweep (served
 * on the worker's own thread).  The fixture and the conventions are
 * tests/api_fixture.h's.
 */
#include <errno.h>
#include <unistd.h>

#include "core/shard.h"
#include "tests/api_fixture.h"
#include "worker/worker.h"

/* ---- worker ----------------------------------------------------------------- */

/* An entry per 100 s: the keys expire on the real clock long after the test. */
#define RATE "0.01"

/*
 * GET /v1/worker's "redis" in `res` is the suites' Redis (tests/harness_mode.h)
 * after one connection to each primary: mode, primaries, and per primary in
 * slot order its address, slots and ranges (by the cluster's map), up, one
 * connect, no error, no redirect.
 */
static void ck_redis_nodes(void)
{
	int n = test_srv_primaries();

	ck_assert_str_eq(jstr("redis.mode"), test_mode_name());
	ck_assert_int_eq(jint("redis.primaries"), n);
	ck_assert_int_eq(cJSON_GetArraySize(jat("redis.nodes")), n);
	for (int i = 0; i < n; i++) {
		const cJSON *e = cJSON_GetArrayItem(jat("redis.nodes"), i);
		struct primary p;

		primary_of(i, &p);
		ck_assert_str_eq(cJSON_GetObjectItem(e, "address")->valuestring, p.addr);
		ck_assert_int_eq(cJSON_GetObjectItem(e, "slots")->valuedouble, p.slots);
		ck_assert_str_eq(cJSON_GetObjectItem(e, "ranges")->valuestring, p.ranges);
		ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(e, "up")));
		ck_assert_int_eq(cJSON_GetObjectItem(e, "connects")->valuedouble, 1);
		ck_assert_int_eq(cJSON_GetObjectItem(e, "errors")->valuedouble, 0);
		ck_assert_int_eq(cJSON_GetObjectItem(e, "moved")->valuedouble, 0);
		ck_assert_int_eq(cJSON_GetObjectItem(e, "ask")->valuedouble, 0);
		ck_assert_int_eq(cJSON_GetObjectItem(e, "tryagain")->valuedouble, 0);
		ck_assert(cJSON_IsNull(cJSON_GetObjectItem(e, "last_error")));
	}
}

START_TEST(test_worker_status)
{
	const long long t0 = 1000000;
	struct worker_result r;
	long long us;
	char whole[4096];

	/* before any step: all zero; this worker keeps no skew copies (the daemon's does) */
	get("/v1/worker");
	ck_res(200, "{\"redis_up\":false,\"connects\":0,\"ticks\":0,\"drained\":0,\"pruned\":0,\"errors\":0,"
		    "\"last_error\":null,\"rules\":{\"version\":0,\"loaded\":0,\"invalid\":0},\"jobs\":{"
		    "\"drain\":{\"ticks\":0,\"sweeps\":0,\"batches\":0,\"polls\":0,\"paths\":0,\"drained\":0,\"emptied\":0,"
		    "\"unmatched\":0,\"skipped\":0,\"failed\":0,\"errors\":0,\"last_duration_us\":0,\"last_sweep_us\":0,\"lag_us\":0,"
		    "\"max_lag_us\":0,\"overruns\":0,\"in_sweep\":false,\"due_backlog\":0,\"oldest_due_age_ms\":0,\"failing\":false,\"failing_since_ms\":null,\"recovered_ms\":null,\"last_outage_ms\":null,\"last_error\":null},"
		    "\"prune\":{\"ticks\":0,\"sweeps\":0,\"batches\":0,\"polls\":0,\"paths\":0,\"pruned\":0,\"emptied\":0,"
		    "\"unmatched\":0,\"skipped\":0,\"failed\":0,\"errors\":0,\"last_duration_us\":0,\"last_sweep_us\":0,\"lag_us\":0,"
		    "\"max_lag_us\":0,\"overruns\":0,\"in_sweep\":false,\"due_backlog\":0,\"oldest_due_age_ms\":0,\"failing\":false,\"failing_since_ms\":null,\"recovered_ms\":null,\"last_outage_ms\":null,\"last_error\":null}},"
		    "\"layouts\":{\"leaky_bucket\":{\"algorithm\":\"leaky_bucket\",\"paths\":0,\"drained\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0,\"failed\":0},\"sliding_log\":{\"algorithm\":\"sliding_log\",\"paths\":0,\"pruned\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0,\"failed\":0},\"sliding_counter\":{\"algorithm\":\"sliding_counter\",\"paths\":0,\"pruned\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0,\"failed\":0},\"fixed_window\":{\"algorithm\":\"fixed_window\",\"paths\":0,\"repaired\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0,\"failed\":0},\"token_bucket\":{\"algorithm\":\"token_bucket\",\"paths\":0,\"reclaimed\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0,\"failed\":0}},"
		    "\"redis\":{\"mode\":\"unknown\",\"primaries\":0,\"nodes\":[]},"
		    "\"skew\":{\"max_clock_skew_ms\":null,\"shards_pending\":0,\"shards_written\":0,\"conflicts\":0,\"last_error\":null},"
		    "\"rule_copies\":{\"version\":null,\"shards_pending\":0,\"shards_written\":0,\"last_error\":null},\"leases\":null,"
		    "\"clock_lag\":{\"lag_ms\":null,\"max_clock_skew_ms\":10000,\"warning\":null},"
		    "\"decisions\":{\"aggregations\":0,\"failures\":0,\"last_ms\":null,\"last_duration_us\":0,\"round_trips\":0,"
		    "\"rules\":0,\"shards_skipped\":0,\"fields_ignored\":0,\"names_dropped\":0,\"lag_fields_deleted\":0,"
		    "\"last_error\":null},"
		    "\"census\":{\"in_pass\":false,\"pass_paths\":0,\"passes\":0,\"last_pass_ms\":null,\"mismatched\":{"
		    "\"leaky_bucket\":0,\"sliding_log\":0,\"sliding_counter\":0,\"fixed_window\":0,\"token_bucket\":0},"
		    "\"paths\":0,\"unmatched\":0,\"unreadable\":0,\"registries_skipped\":0,\"last_span_ms\":0,"
		    "\"last_busy_us\":0,\"steps\":0,\"round_trips\":0,\"restarts\":0,\"abandoned\":0,\"last_error\":null},"
		    "\"history\":{\"period_ms\":10000,\"samples\":[]}}");

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.01}");
	put_ok("log", "{\"match\":\"/log/*\",\"algorithm\":\"sliding_log\",\"limit\":10,\"window_ms\":600000}");
	/* a rule in Redis that fails validation: counted as invalid */
	freeReplyObject(test_cmd(c, "HSET %s broken {\"match\":\"/b\",\"algorithm\":\"nope\"}", RULES_HASH));
	freeReplyObject(test_cmd(c, "INCR %s", RULES_VER));
	for (int i = 0; i < 5; i++)
		lb_admit("/api/a", 10, RATE, t0);
	lb_admit("/api/b", 10, RATE, t0);
	lb_admit("/api/b", 10, RATE, t0);
	lb_admit("/other", 10, RATE, t0); /* no rule: drained all the same, by the rate it records */
	/* a meta of another type under the layout's name: left alone, counted as skipped */
	freeReplyObject(test_cmd(c, "ZADD %s %lld /api/str", test_registry("leaky_bucket", "/api/str"), t0));
	freeReplyObject(test_cmd(c, "SET %s x", test_lb_meta("/api/str")));

	/* 300 s later (at the drain's horizon, max_clock_skew_ms behind the time it runs at):
	 * /api/a loses 3 of 5, /api/b (2) and /other (1) empty, /api/str is skipped */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t0 + 300000 + test_skew_ms(), &r), 0);
	ck_assert_int_eq(r.sweep_done, 1);
	ck_assert_int_eq(r.paths, 4);
	ck_assert_int_eq(r.skipped, 1);
	ck_assert_int_eq(r.entries, 6);
	ck_assert_int_eq(r.emptied, 2);
	ck_assert_int_eq(r.unmatched, 0);
	ck_assert_int_eq(r.batches, 1024); /* one call per shard */
	/* nothing registered for the prune job's four algorithms: each shard asked once, nothing found */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, t0 + 610001, &r), 0);
	ck_assert_int_eq(r.paths, 0);
	ck_assert_int_eq(r.batches, 4096);
	{
		/* the stats aggregation has a budget of its own per step (WORKER_STATS_BUDGET_US):
		 * on a slow machine (the sanitizer build under load) one sweep's step may not end
		 * it; further steps at the same now go on with it and start no other */
		struct stats_summary ss;

		stats_summary(worker_stats(w), &ss);
		if (ss.aggregations == 0) {
			/* the aggregation goes on where the worker's step left it (no worker step
			 * runs meanwhile: this thread drives the worker), over a connection of
			 * its own, so the worker's counters below stay those of the sweeps */
			struct rconn *own = rconn_new(&target, OBJECTS_TIMEOUT_MS);

			ck_assert_ptr_nonnull(own);
			ck_assert_int_eq(stats_step(worker_stats(w), own, PFX, t0 + 610001, 10000000, NULL), 0);
			rconn_free(own);
			stats_summary(worker_stats(w), &ss);
		}
		ck_assert_int_eq(ss.aggregations, 1);
	}
	worker_note_schedule(w, WORKER_DRAIN, 1500, 2);
	worker_note_schedule(w, WORKER_DRAIN, 700, 2);

	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/api/a")), 2);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_lb_key("/api/b")), 0);
	{
		redisReply *z = test_cmd(c, "ZSCORE %s /api/b", test_registry("leaky_bucket", "/api/b"));

		ck_assert_int_eq(z->type, REDIS_REPLY_NIL); /* it left its shard's registry */
		freeReplyObject(z);
	}

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
	/* the prune sweep summed the shards' stats once (core/stats.h; check_stats.c tests it) */
	ck_assert_int_eq(jint("decisions.aggregations"), 1);
	/* 4 reads; the test's clients, at explicit nows decades behind Redis TIME, wrote lag fields
	 * at Redis's real minute, which the sweep's virtual now sees as the future: deleted, in a
	 * round of HDELs after each read that found some (2 here) */
	ck_assert_int_eq(jint("decisions.round_trips"), 6);
	ck_assert_int_eq(jint("decisions.rules"), 2);
	cJSON_DeleteItemFromObjectCaseSensitive(res.json, "decisions");
	/* the prune sweep's step went on with the census, within its own budget (check_census.c tests it) */
	ck_assert(cJSON_IsObject(jat("census")));
	cJSON_DeleteItemFromObjectCaseSensitive(res.json, "census");
	/* a single Redis is one primary owning every slot, as the worker's connection sees it;
	 * a cluster its primaries in slot order, each with its slots */
	ck_redis_nodes();
	cJSON_DeleteItemFromObjectCaseSensitive(res.json, "redis");
	/* a sample at each sweep's step (their nows are 300 s apart), with the counters it left */
	{
		char *h = cJSON_PrintUnformatted(jat("history")), want[512];

		snprintf(want, sizeof(want),
			 "{\"period_ms\":10000,\"samples\":["
			 "{\"t_ms\":%lld,\"ticks\":1,\"drained\":6,\"pruned\":0,\"errors\":0,\"due_backlog\":0},"
			 "{\"t_ms\":%lld,\"ticks\":2,\"drained\":6,\"pruned\":0,\"errors\":0,\"due_backlog\":0}]}",
			 t0 + 300000 + test_skew_ms(), t0 + 610001);
		check_same_text("history", h, want);
		free(h);
		cJSON_DeleteItemFromObjectCaseSensitive(res.json, "history");
	}
	snprintf(whole, sizeof(whole), "{\"redis_up\":true,\"connects\":%d,\"ticks\":2,\"drained\":6,\"pruned\":0,\"errors\":0,"
		   "\"last_error\":null,\"rules\":{\"version\":3,\"loaded\":2,\"invalid\":1},\"jobs\":{"
		   "\"drain\":{\"ticks\":1,\"sweeps\":1,\"batches\":1024,\"polls\":0,\"paths\":4,\"drained\":6,\"emptied\":2,"
		   "\"unmatched\":0,\"skipped\":1,\"failed\":0,\"errors\":0,\"lag_us\":700,\"max_lag_us\":1500,\"overruns\":2,\"in_sweep\":false,"
		   "\"due_backlog\":0,\"oldest_due_age_ms\":0,\"failing\":false,\"failing_since_ms\":null,\"recovered_ms\":null,\"last_outage_ms\":null,\"last_error\":null},"
		   "\"prune\":{\"ticks\":1,\"sweeps\":1,\"batches\":4096,\"polls\":0,\"paths\":0,\"pruned\":0,\"emptied\":0,"
		   "\"unmatched\":0,\"skipped\":0,\"failed\":0,\"errors\":0,\"lag_us\":0,\"max_lag_us\":0,\"overruns\":0,\"in_sweep\":false,"
		   "\"due_backlog\":0,\"oldest_due_age_ms\":0,\"failing\":false,\"failing_since_ms\":null,\"recovered_ms\":null,\"last_outage_ms\":null,\"last_error\":null}},"
		   "\"layouts\":{\"leaky_bucket\":{\"algorithm\":\"leaky_bucket\",\"paths\":4,\"drained\":6,\"emptied\":2,\"unmatched\":0,\"skipped\":1,\"failed\":0},\"sliding_log\":{\"algorithm\":\"sliding_log\",\"paths\":0,\"pruned\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0,\"failed\":0},\"sliding_counter\":{\"algorithm\":\"sliding_counter\",\"paths\":0,\"pruned\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0,\"failed\":0},\"fixed_window\":{\"algorithm\":\"fixed_window\",\"paths\":0,\"repaired\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0,\"failed\":0},\"token_bucket\":{\"algorithm\":\"token_bucket\",\"paths\":0,\"reclaimed\":0,\"emptied\":0,\"unmatched\":0,\"skipped\":0,\"failed\":0}},"
		   "\"skew\":{\"max_clock_skew_ms\":null,\"shards_pending\":0,\"shards_written\":0,\"conflicts\":0,\"last_error\":null},"
		    "\"rule_copies\":{\"version\":null,\"shards_pending\":0,\"shards_written\":0,\"last_error\":null},\"leases\":null,"
		    "\"clock_lag\":{\"lag_ms\":null,\"max_clock_skew_ms\":10000,\"warning\":null}}",
		 test_srv_primaries()); /* a connection to each primary */
	ck_json_is(whole);

	/* the same instant again drains nothing more, and visits nothing (nothing is due); the counters add up */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t0 + 300000 + test_skew_ms(), &r), 0);
	ck_assert_int_eq(r.entries, 0);
	get("/v1/worker");
	ck_assert_int_eq(jint("drained"), 6);
	ck_assert_int_eq(jint("ticks"), 3);
	ck_assert_int_eq(jint("jobs.drain.sweeps"), 2);
	ck_assert_int_eq(jint("jobs.drain.batches"), 2048);
	ck_assert_int_eq(jint("jobs.drain.paths"), 4);
	ck_assert_int_eq(jint("jobs.drain.skipped"), 1);
}
END_TEST

/*
 * A step that ran out of budget with a shard's backlog still due: the job
 * shows how many paths wait and how long the oldest has waited.  Then a
 * worker that keeps the skew copies shows them.
 */
START_TEST(test_worker_backlog_and_skew)
{
	const long long t0 = 1000000;
	struct worker_config wc = { .redis = &target, .timeout_ms = OBJECTS_TIMEOUT_MS, .prefix = PFX,
				    .batch_size = 2, .layouts = layouts, .nlayouts = nlayouts,
				    .write_skew = 1, .max_clock_skew_ms = 12000 };
	struct worker *wk = worker_new(&wc);
	struct api *a = api_make(&target, wk, NULL, 0);
	struct worker_result r;
	char p[32];
	int found = 0;

	ck_assert_ptr_nonnull(wk);
	/* shard 3's copy holds the horizon already (another daemon wrote it): its clients use it */
	freeReplyObject(test_cmd(c, "HSET %s{3}:rules :max_clock_skew_ms 12000", PFX));
	/* 5 buckets in shard 3, their first leak at t0 + 20 (rate 50): due at t0 + 20 + 12000 */
	for (int i = 0; found < 5; i++) {
		snprintf(p, sizeof(p), "/q/%d", i);
		if (shard_of(p, strlen(p)) != 3)
			continue;
		found++;
		lb_admit(p, 10, "50", t0);
		freeReplyObject(test_cmd(c, "PEXPIRE %s 600000", test_lb_key(p)));
	}
	/* every shard polled: none due */
	ck_assert_int_eq(worker_step(wk, WORKER_DRAIN, INT64_MAX, t0 + 12000, &r), 0);
	/* one round trip: 2 of 5, each drained at its horizon t0 + 50 */
	ck_assert_int_eq(worker_step(wk, WORKER_DRAIN, 1, t0 + 12050, &r), 0);
	ck_assert_int_eq(r.entries, 2);
	ck_assert_int_eq(r.polls, 51); /* ceil(51.2) shards of the rolling poll, but shard 3, which is called */
	call_on(a, "GET", "/v1/worker", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(jint("jobs.drain.polls"), 1024 + 51);
	ck_assert_int_eq(jint("jobs.drain.batches"), 1);
	ck_assert_int_eq(jint("jobs.drain.due_backlog"), 3);
	ck_assert_int_eq(jint("jobs.drain.oldest_due_age_ms"), 30);
	ck_assert(cJSON_IsTrue(jat("jobs.drain.in_sweep")));
	ck_assert_int_eq(jint("jobs.prune.due_backlog"), 0);
	ck_assert_int_eq(jint("jobs.prune.oldest_due_age_ms"), 0);
	ck_assert_int_eq(jint("skew.max_clock_skew_ms"), 12000);
	ck_assert_int_eq(jint("skew.shards_pending"), 0);
	ck_assert_int_eq(jint("skew.shards_written"), 1023);
	ck_assert(cJSON_IsNull(jat("skew.last_error")));
	/* the next 10 s of the clock: 2 more, 1 left due, in the history's sample of that step */
	ck_assert_int_eq(worker_step(wk, WORKER_DRAIN, 1, t0 + 20000, &r), 0);
	ck_assert_int_eq(r.entries, 2);
	call_on(a, "GET", "/v1/worker", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(jint("jobs.drain.due_backlog"), 1);
	{
		char *h = cJSON_PrintUnformatted(jat("history.samples"));

		check_same_text("history", h,
				"[{\"t_ms\":1012000,\"ticks\":1,\"drained\":0,\"pruned\":0,\"errors\":0,\"due_backlog\":0},"
				"{\"t_ms\":1020000,\"ticks\":3,\"drained\":4,\"pruned\":0,\"errors\":0,\"due_backlog\":1}]");
		free(h);
	}
	api_free(a);
	worker_free(wk);
}
END_TEST

/* GET /v1/worker's history.samples[i] as text. */
static char *sample_text(int i)
{
	return cJSON_PrintUnformatted(cJSON_GetArrayItem(jat("history.samples"), i));
}

/*
 * The history (worker/status.h): a sample at the first step of each 10 s of
 * the steps' clock, of both jobs' counters as that step left them (a failed
 * step's too), the last 60; a clock that goes back less than a period takes
 * none until it passes the last sample's period, more starts it again.
 */
START_TEST(test_worker_history)
{
	/* 5 entries leaking 1 a second, at the drain's horizon 2 s before the first step */
	const long long skew = test_skew_ms(), at = 1012000 - skew - 2000;
	struct worker_result r;
	char *s;

	for (int i = 0; i < 5; i++)
		lb_admit("/h", 10, "1", at);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 1012000, &r), 0); /* the first step: a sample */
	ck_assert_int_eq(r.entries, 2);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 1015000, &r), 0); /* the same period: none */
	ck_assert_int_eq(r.entries, 3);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 1020000, &r), 0); /* the next: the prune job's step */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 1014000, &r), 0); /* 6 s back: none, nothing lost */
	/* a due index of another type: the prune step fails, and its sample counts the error */
	freeReplyObject(test_cmd(c, "SET %s{0}:registry:sliding_log oops", PFX));
	ck_assert_int_ne(worker_sweep(w, WORKER_PRUNE, 1035000, &r), 0);
	get("/v1/worker");
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(jint("history.period_ms"), 10000);
	ck_assert_int_eq(cJSON_GetArraySize(jat("history.samples")), 3);
	check_same_text("sample 0", s = sample_text(0),
			"{\"t_ms\":1012000,\"ticks\":1,\"drained\":2,\"pruned\":0,\"errors\":0,\"due_backlog\":0}");
	free(s);
	check_same_text("sample 1", s = sample_text(1),
			"{\"t_ms\":1020000,\"ticks\":3,\"drained\":5,\"pruned\":0,\"errors\":0,\"due_backlog\":0}");
	free(s);
	check_same_text("sample 2", s = sample_text(2),
			"{\"t_ms\":1035000,\"ticks\":5,\"drained\":5,\"pruned\":0,\"errors\":1,\"due_backlog\":0}");
	free(s);

	/* 60 more periods: the last 60 samples are kept, oldest first */
	for (int i = 0; i < WORKER_HISTORY; i++)
		ck_assert_int_eq(worker_step(w, WORKER_DRAIN, INT64_MAX, 1040000 + 10000LL * i, &r), 0);
	get("/v1/worker");
	ck_assert_int_eq(cJSON_GetArraySize(jat("history.samples")), WORKER_HISTORY);
	check_same_text("sample 0 of 60", s = sample_text(0),
			"{\"t_ms\":1040000,\"ticks\":6,\"drained\":5,\"pruned\":0,\"errors\":1,\"due_backlog\":0}");
	free(s);
	check_same_text("sample 59 of 60", s = sample_text(WORKER_HISTORY - 1),
			"{\"t_ms\":1630000,\"ticks\":65,\"drained\":5,\"pruned\":0,\"errors\":1,\"due_backlog\":0}");
	free(s);

	/* the clock back by more than a period: the history starts again */
	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, INT64_MAX, 1619999, &r), 0);
	get("/v1/worker");
	ck_assert_int_eq(cJSON_GetArraySize(jat("history.samples")), 1);
	check_same_text("sample after the clock went back", s = sample_text(0),
			"{\"t_ms\":1619999,\"ticks\":66,\"drained\":5,\"pruned\":0,\"errors\":1,\"due_backlog\":0}");
	free(s);
}
END_TEST

/* ---- POST /v1/worker/sweep ------------------------------------------------------ */

START_TEST(test_worker_sweep_now)
{
	/* ten seconds before the drain's horizon (max_clock_skew_ms behind Redis TIME) */
	long long t = test_server_ms(c) - 10000 - test_skew_ms();
	struct sweeps sw;

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/norule", 10, "0.5", t); /* no rule: drained by its own rate, 5 due, 1 there */
	sweeps_start(&sw, w);
	call("POST", "/v1/worker/sweep", NULL);
	sweeps_stop(&sw);
	ck_assert_int_eq(res.status, 200);
	/* 0.1 per second for 10 s: one entry of /api/a; /norule empties */
	ck_assert_int_eq(jint("drain.paths"), 2);
	ck_assert_int_eq(jint("drain.drained"), 2);
	ck_assert_int_eq(jint("drain.unmatched"), 0);
	ck_assert_int_eq(jint("drain.emptied"), 1);
	ck_assert_int_eq(jint("drain.batches"), 1024);
	ck_assert_int_eq(jint("prune.paths"), 0);
	ck_assert_int_eq(jint("prune.batches"), 4096);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/api/a")), 1);
	call("GET", "/v1/worker/sweep", NULL);
	ck_err(405, "method_not_allowed", NULL);
}
END_TEST

/*
 * /readyz follows the worker: 200 while its ticks succeed; 503 redis_down
 * naming the job and the cause while its last tick could not reach Redis
 * (here a worker of a Redis that is not there, beside an API whose own
 * Redis answers), with /v1/worker's failing and failing_since_ms; and
 * worker_stalled once no tick ended for 3 periods + 2 timeouts + 1 s.
 */
START_TEST(test_readyz_follows_the_worker)
{
	struct redis_target dead = { 0 };
	struct sl_error err = { 0 };
	struct worker_result r;
	struct worker_config wc = { .timeout_ms = 200, .prefix = PFX, .batch_size = 100, .layouts = layouts,
				    .nlayouts = nlayouts };
	struct worker *up, *down;
	struct api *a_up, *a_down;
	char url[64], why[300];
	int e = 0;

	snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", test_free_port());
	ck_assert_int_eq(redis_url_parse(url, &dead, &err), 0);
	wc.redis = &target;
	up = worker_new(&wc);
	wc.redis = &dead;
	down = worker_new(&wc);
	redis_target_clear(&dead);
	ck_assert_ptr_nonnull(up);
	ck_assert_ptr_nonnull(down);
	a_up = api_make(&target, up, NULL, 0);
	a_down = api_make(&target, down, NULL, 0);

	ck_assert_int_eq(worker_step(up, WORKER_DRAIN, INT64_MAX, 1000, &r), 0);
	call_on(a_up, "GET", "/readyz", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(worker_health(up, 200, why, sizeof(why), &e), 0);
	ck_assert_str_eq(why, "");

	ck_assert_int_eq(worker_step(down, WORKER_DRAIN, INT64_MAX, 1000, &r), -EIO);
	call_on(a_down, "GET", "/readyz", NULL, 0, NULL, NULL, NULL);
	ck_err(503, "redis_unavailable", NULL);
	/* the worker's Redis is the api's for the reason (one daemon, one Redis): on a cluster, a node down */
	ck_assert_str_eq(jstr("error.reason"), test_mode_cluster() ? "cluster_down" : "redis_down");
	{
		static const char want[] = "the worker cannot tick: drain: rules: connect: Connection refused (failing for ";

		ck_assert_msg(strncmp(jstr("error.message"), want, sizeof(want) - 1) == 0, "%s", jstr("error.message"));
	}
	call_on(a_down, "GET", "/v1/worker", NULL, 0, NULL, NULL, NULL);
	ck_assert(cJSON_IsTrue(jat("jobs.drain.failing")));
	ck_assert_int_gt(jint("jobs.drain.failing_since_ms"), 1700000000000LL);
	ck_assert(cJSON_IsNull(jat("jobs.drain.recovered_ms")));
	ck_assert(cJSON_IsNull(jat("jobs.drain.last_outage_ms")));
	ck_assert(cJSON_IsFalse(jat("jobs.prune.failing")));
	ck_assert_int_eq(worker_health(down, 200, why, sizeof(why), &e), -EAGAIN);
	ck_assert_int_eq(e, -EIO);

	/* a job whose period is known and whose last tick ended over 3 periods + 2 timeouts + 1 s ago */
	worker_note_period(up, WORKER_DRAIN, 1);
	ck_assert_int_eq(worker_health(up, 0, why, sizeof(why), &e), 0);
	usleep(1100 * 1000);
	ck_assert_int_eq(worker_health(up, 0, why, sizeof(why), &e), -ETIMEDOUT);
	ck_assert_int_eq(e, -ETIMEDOUT);
	ck_assert_msg(strncmp(why, "drain: no tick ended for ", 25) == 0 && strstr(why, "(1 ticks since start)"), "%s", why);
	/* (the API's allowance is its 5 s timeout twice: not stalled for it yet) */
	call_on(a_up, "GET", "/readyz", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 200);
	ck_assert_int_eq(worker_step(up, WORKER_DRAIN, INT64_MAX, 1100, &r), 0);
	ck_assert_int_eq(worker_health(up, 0, why, sizeof(why), &e), 0);

	api_free(a_up);
	api_free(a_down);
	worker_free(up);
	worker_free(down);
}
END_TEST

static Suite *worker_api_suite(void)
{
	Suite *s = suite_create("worker_api");
	TCase *tc;

	tc = test_tcase(s, "worker", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_worker_status);
	tcase_add_test(tc, test_worker_backlog_and_skew);
	tcase_add_test(tc, test_worker_history);
	tcase_add_test(tc, test_worker_sweep_now);
	tcase_add_test(tc, test_readyz_follows_the_worker);
	return s;
}

int main(void)
{
	return test_run_suite(worker_api_suite());
}

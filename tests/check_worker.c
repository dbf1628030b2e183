/*
 * Integration suite of the worker against a real redis-server.
 *
 * sluice's own layouts (key layout 2): the due-driven walk (worker/due.c)
 * over the 1024 shards' due indexes, tested with exact values: drain
 * exactness (DESIGN.md: floor(rate x busy time) +-1, whatever the tick,
 * idempotent at one instant, no credit while empty) at the rate each
 * bucket records; a step's cost follows what is due (shard calls counted
 * by Redis itself, INFO commandstats); the rolling poll; a shard with more
 * due than batch_size (its backlog); budgets and resuming; errors (Redis
 * paused mid-pass, a registry of another type) that leave the rest
 * maintained; the status counters; the skew horizon in every shard's rules
 * copy (worker/skew.c).  Then the other algorithms' shard jobs through the
 * worker (written against the contract of lua/lib/due.lua and DESIGN.md),
 * NOSCRIPT and reconnection, and the foreign layouts (the seed articles'
 * limiters), which keep their registry sets and batch scripts.
 *
 * Client state is written with the client scripts at explicit times,
 * exactly as an application would; the worker runs at explicit times too
 * (virtual time: worker_step/worker_sweep with now_ms).
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/keys.h"
#include "core/layout.h"
#include "core/reset.h"
#include "core/rulestore.h"
#include "core/shard.h"
#include "tests/bucket_model.h"
#include "tests/harness.h"
#include "worker/worker.h"

static struct test_redis R;
static redisContext *C;
static struct redis_target T;
static struct layout *L;
static size_t NL;
static struct rconn *RC;

static void suite_up(void)
{
	ck_assert_int_eq(test_redis_start(&R), 0);
	C = test_redis_connect(&R);
	ck_assert_int_eq(redis_url_parse(R.url, &T, NULL), 0);
	ck_assert_int_eq(layouts_default("sluice:", &L, &NL), 0);
	RC = rconn_new(&T, 1000);
}

static void suite_down(void)
{
	rconn_free(RC);
	layouts_free(L, NL);
	redis_target_clear(&T);
	if (C)
		redisFree(C);
	test_redis_stop(&R);
}

static void flush(void)
{
	freeReplyObject(test_cmd(C, "CLIENT UNPAUSE"));
	test_redis_flush(C);
}

static struct worker *new_worker(size_t batch)
{
	struct worker_config wc = { .redis = &T, .timeout_ms = 1000, .prefix = "sluice:",
				    .batch_size = batch, .layouts = L, .nlayouts = NL };
	struct worker *w = worker_new(&wc);

	ck_assert_ptr_nonnull(w);
	return w;
}

static void put_rule(const char *json)
{
	cJSON *o = cJSON_Parse(json);
	struct rule *r = NULL;
	struct sl_error err;

	ck_assert_int_eq(rule_from_json(o, NULL, NULL, &r, &err), 0);
	ck_assert_int_eq(rulestore_put(RC, "sluice:", r, NULL, NULL), 0);
	rule_free(r);
	cJSON_Delete(o);
}

static void leaky_rule(const char *name, const char *match, long cap, const char *rate)
{
	char json[256];

	snprintf(json, sizeof(json),
		 "{\"name\":\"%s\",\"match\":\"%s\",\"algorithm\":\"leaky_bucket\",\"capacity\":%ld,\"rate\":%s}",
		 name, match, cap, rate);
	put_rule(json);
}

static void log_rule(const char *name, const char *match, long limit, long window)
{
	char json[256];

	snprintf(json, sizeof(json),
		 "{\"name\":\"%s\",\"match\":\"%s\",\"algorithm\":\"sliding_log\",\"limit\":%ld,\"window_ms\":%ld}",
		 name, match, limit, window);
	put_rule(json);
}

/* Client acquire of a leaky bucket of cost 1 at an explicit time (EVALSHA, as an application calls it); returns `allowed`. */
static long long lb_acquire(const char *path, long cap, const char *rate, long long now)
{
	return test_acquire(C, TEST_EVALSHA, "leaky_bucket", path, now, test_num(cap), rate, NULL);
}

static long long sl_acquire(const char *path, long limit, long window, long long now)
{
	return test_acquire(C, TEST_EVALSHA, "sliding_log", path, now, test_num(limit), test_num(window), NULL);
}

static long long level(const char *path)
{
	return test_cmd_int(C, "ZCARD %s", test_lb_key(path));
}

static long long log_count(const char *path)
{
	return test_cmd_int(C, "ZCARD %s", test_sl_key(path));
}

/* The path's due time in its shard's registry of `alg` (ms), or -1 when it is not there. */
static long long due_of(const char *alg, const char *path)
{
	redisReply *r = test_cmd(C, "ZSCORE %s %s", test_registry(alg, path), path);
	long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

	ck_assert_msg(r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL, "ZSCORE %s: %s", path,
		      r->type == REDIS_REPLY_ERROR ? r->str : "not a score");
	freeReplyObject(r);
	return v;
}

/* Paths registered in the 1024 shards' registries of `alg`. */
static long long registered(const char *alg)
{
	long long n = 0;

	for (unsigned k = 0; k < SHARD_COUNT; k++) {
		redisAppendCommand(C, "ZCARD sluice:{%u}:registry:%s", k, alg);
	}
	for (unsigned k = 0; k < SHARD_COUNT; k++) {
		redisReply *r = NULL;

		ck_assert_int_eq(redisGetReply(C, (void **)&r), REDIS_OK);
		ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
		n += r->integer;
		freeReplyObject(r);
	}
	return n;
}

static void fill(const char *path, long cap, const char *rate, long entries, long long now)
{
	for (long i = 0; i < entries; i++)
		ck_assert_int_eq(lb_acquire(path, cap, rate, now), 1);
}

/* Virtual time: keep a path's bucket and meta from expiring in real time (their TTL counts from the call's now). */
static void keep_keys(const char *path)
{
	freeReplyObject(test_cmd(C, "PEXPIRE %s 600000", test_lb_key(path)));
	freeReplyObject(test_cmd(C, "PEXPIRE %s 600000", test_lb_meta(path)));
}

/*
 * Time in the drain's tests.  The drain leaks at the horizon max(last, now -
 * SKEW_MS), SKEW_MS behind Redis time (DESIGN.md, "Time"), and a bucket's
 * due time is its next leak + SKEW_MS.  The tests speak of the buckets' own
 * timeline: drain_at(w, t) and step_at(w, t, us) run the worker at Redis
 * time t + SKEW_MS (H(t) for the direct calls), and lb_due() is a due time
 * so read (- SKEW_MS).
 */
#define S test_skew_ms()
#define H(t) ((t) + S)

static long long lb_due(const char *path)
{
	long long d = due_of("leaky_bucket", path);

	return d < 0 ? d : d - S;
}

/* A sweep of the drain at Redis time `now` (foreign layouts: their batch drain leaks at Redis time). */
static uint64_t drain_raw(struct worker *w, long long now)
{
	struct worker_result res;

	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, now, &res), 0);
	ck_assert_int_eq(res.sweep_done, 1);
	return res.entries;
}

static uint64_t drain_at(struct worker *w, long long now)
{
	struct worker_result res;

	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, H(now), &res), 0);
	ck_assert_int_eq(res.sweep_done, 1);
	return res.entries;
}

/* The n-th path (n >= 0) of the form "<stem><i>" that belongs to shard `k`, into buf. */
static const char *path_in_shard(char *buf, size_t cap, const char *stem, unsigned k, int n)
{
	for (int i = 0;; i++) {
		snprintf(buf, cap, "%s%d", stem, i);
		if (shard_of(buf, strlen(buf)) == k && n-- == 0)
			return buf;
	}
}

/*
 * EVALSHA calls Redis ran since the last CONFIG RESETSTAT (INFO commandstats):
 * the worker's shard calls, and its rules' reads by script (core/rulestore.c:
 * one at the first step, which loads them; then one per RULESTORE_DIGEST_MS
 * of real time, longer than these tests run).
 */
#define RULES_LOAD 1 /* rulestore_read.lua "all" */
static long long evalsha_calls(void)
{
	return test_cmdstat(C, "evalsha", "calls");
}

/* ZRANGE calls since the last CONFIG RESETSTAT: the poll's (one per shard polled) and two per shard script call. */
static long long zrange_calls(void)
{
	return test_cmdstat(C, "zrange", "calls");
}

static void reset_stats(void)
{
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
}

/* One step of the drain job at `now` with budget `us`; returns the step's result (rc must be 0). */
static struct worker_result step_at(struct worker *w, long long now, int64_t us)
{
	struct worker_result res;

	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, us, H(now), &res), 0);
	return res;
}

/* ---- drain exactness --------------------------------------------------------- */

/* (capacity, rate, entries at t=0, drain every `tick` ms until `until`) -> entries left */
static const struct {
	long cap;
	const char *rate;
	long entries;
	long tick, until;
	long left;
} table[] = {
	{ 10, "1", 10, 1000, 3000, 7 },       /* 1/s for 3 s */
	{ 10, "1", 10, 100, 3000, 7 },        /* same, ten times finer ticks */
	{ 10, "1", 10, 3000, 3000, 7 },       /* same, one tick */
	{ 10, "2", 10, 250, 2000, 6 },        /* 2/s, 250 ms ticks */
	{ 10, "2", 10, 333, 2000, 7 },        /* 2/s, ticks that do not divide the period: 1998 ms -> 3 */
	{ 100, "0.16666666666666666", 100, 100, 30000, 95 }, /* 10 per minute at 100 ms ticks: 5 per 30 s */
	{ 100, "0.16666666666666666", 100, 30000, 30000, 95 },
	{ 5, "3.5", 5, 100, 1000, 2 },        /* 3.5/s for 1 s: floor(3.5) = 3 */
	{ 5, "3.5", 5, 100, 2000, 0 },        /* 7 due, 5 there: empty */
	{ 20, "1000", 20, 1, 15, 5 },         /* 1 per ms */
	{ 3, "0.001", 3, 111000, 999000, 3 }, /* 1 per 1000 s, not yet */
	{ 3, "0.001", 3, 100000, 1000000, 2 },
};

/* Swept at every tick (every shard), and stepped at every tick (only what is due): the same result. */
START_TEST(drain_table)
{
	struct worker *w = new_worker(500), *w2 = new_worker(500);
	const long long t0 = 1000000;

	fill("/b", table[_i].cap, table[_i].rate, table[_i].entries, t0);
	fill("/c", table[_i].cap, table[_i].rate, table[_i].entries, t0);
	keep_keys("/b");
	keep_keys("/c");
	ck_assert_int_eq(level("/b"), table[_i].entries);
	for (long t = table[_i].tick; t <= table[_i].until; t += table[_i].tick) {
		drain_at(w, t0 + t);
		step_at(w2, t0 + t, INT64_MAX);
	}
	ck_assert_msg(level("/b") == table[_i].left, "row %d: %lld left, want %ld", _i, level("/b"),
		      table[_i].left);
	ck_assert_msg(level("/c") == table[_i].left, "row %d: %lld left after steps, want %ld", _i, level("/c"),
		      table[_i].left);
	worker_free(w);
	worker_free(w2);
}
END_TEST

START_TEST(drain_twice_same_instant)
{
	struct worker *w = new_worker(500);

	fill("/b", 10, "1", 10, 5000);
	ck_assert_int_eq(lb_due("/b"), 6000); /* the first leak */
	ck_assert_int_eq(drain_at(w, 7500), 2);
	ck_assert_int_eq(lb_due("/b"), 8000); /* 0.5 carried: the next whole entry */
	ck_assert_int_eq(drain_at(w, 7500), 0);
	ck_assert_int_eq(level("/b"), 8);
	ck_assert_int_eq(drain_at(w, 8000), 1); /* the half entry carried: 2.5 + 0.5 */
	ck_assert_int_eq(level("/b"), 7);
	ck_assert_int_eq(lb_due("/b"), 9000);
	worker_free(w);
}
END_TEST

START_TEST(drain_empty_bucket_earns_no_credit)
{
	struct worker *w = new_worker(500);

	fill("/b", 10, "1", 2, 0);
	ck_assert_int_eq(drain_at(w, 3000), 2); /* 3 due, 2 there: empty since 2 s */
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s", test_lb_key("/b")), 0);
	/* the meta goes too (the drain leaked at its horizon, behind every client within it); the path left the registry */
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s", test_lb_meta("/b")), 0);
	ck_assert_int_eq(lb_due("/b"), -1);
	ck_assert_int_eq(drain_at(w, 12000), 0); /* ten idle seconds */
	fill("/b", 10, "1", 5, 12000);
	ck_assert_int_eq(drain_at(w, 12000), 0); /* no credit from the idle time */
	ck_assert_int_eq(drain_at(w, 12999), 0);
	ck_assert_int_eq(drain_at(w, 13000), 1);
	ck_assert_int_eq(level("/b"), 4);
	worker_free(w);
}
END_TEST

START_TEST(drain_older_now_is_stored_time)
{
	struct worker *w = new_worker(500);

	fill("/b", 10, "1", 5, 10000);
	ck_assert_int_eq(drain_at(w, 12000), 2);
	ck_assert_int_eq(drain_at(w, 11000), 0); /* a clock behind the state leaks nothing */
	ck_assert_int_eq(drain_at(w, 13000), 1);
	ck_assert_int_eq(level("/b"), 2);
	worker_free(w);
}
END_TEST

START_TEST(drain_many_buckets_exact)
{
	struct worker *w = new_worker(7); /* small calls */
	char path[32];
	struct worker_status st;

	for (int i = 0; i < 100; i++) {
		snprintf(path, sizeof(path), "/m/%d", i);
		fill(path, 5, "1", 3, 0);
	}
	ck_assert_int_eq(registered("leaky_bucket"), 100);
	ck_assert_int_eq(drain_at(w, 1000), 100);
	ck_assert_int_eq(drain_at(w, 1000), 0);
	ck_assert_int_eq(drain_at(w, 4000), 200); /* 3 due, 2 there: empty */
	ck_assert_int_eq(registered("leaky_bucket"), 0);
	/* nothing remains: an emptied bucket's meta goes with it */
	ck_assert_int_eq(test_dbsize(C), 0);
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].entries, 300);
	ck_assert_int_eq(st.job[WORKER_DRAIN].emptied, 100);
	ck_assert_int_eq(st.job[WORKER_DRAIN].sweeps, 3);
	/* a path is visited when it is due: 100 at 1000, none again at 1000 (due at 2000), 100 at 4000 */
	ck_assert_int_eq(st.job[WORKER_DRAIN].paths, 200);
	/* every sweep calls each of the 1024 shards once (no shard had more than 7 due) */
	ck_assert_int_eq(st.job[WORKER_DRAIN].batches, 3 * SHARD_COUNT);
	ck_assert_int_eq(st.job[WORKER_DRAIN].errors, 0);
	worker_free(w);
}
END_TEST

/*
 * The worker drains by the parameters the bucket records (the ones its
 * client applied: DESIGN.md "State describes itself"), whatever rule
 * matches its path and whether one does (issue 8, item 5: an app passing
 * rate 1 under a rule of rate 100 was drained at 100/s).
 */
START_TEST(drain_by_recorded_parameters)
{
	struct worker *w = new_worker(500);
	struct worker_result res;

	leaky_rule("b", "/b", 10, "100");
	log_rule("l", "/other", 5, 1000);
	fill("/b", 10, "1", 3, 0);
	fill("/norule", 10, "1", 3, 0);
	fill("/other", 10, "1", 3, 0); /* a leaky bucket at a path whose rule is a sliding log */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, H(2000), &res), 0);
	ck_assert_int_eq(res.entries, 6);
	ck_assert_int_eq(res.paths, 3);
	ck_assert_int_eq(res.unmatched, 0);
	ck_assert_int_eq(level("/b"), 1);
	ck_assert_int_eq(level("/norule"), 1);
	ck_assert_int_eq(level("/other"), 1);
	worker_free(w);
}
END_TEST

/* A client that changes its parameters is drained by the new ones from its next admitted call. */
START_TEST(drain_follows_the_clients_new_rate)
{
	struct worker *w = new_worker(500);

	fill("/b", 100, "1", 50, 0);
	ck_assert_int_eq(drain_at(w, 1000), 1);
	test_check_cmd(__FILE__, __LINE__, C, "{\"100\", \"1\"}", "HMGET %s capacity rate", test_lb_meta("/b"));
	ck_assert_int_eq(lb_acquire("/b", 100, "10", 1000), 1); /* the application now leaks 10 per second */
	test_check_cmd(__FILE__, __LINE__, C, "{\"100\", \"10\"}", "HMGET %s capacity rate", test_lb_meta("/b"));
	ck_assert_int_eq(drain_at(w, 2000), 10);
	ck_assert_int_eq(level("/b"), 40);
	worker_free(w);
}
END_TEST

/* A path holding a NUL byte is drained like any other (its keys are binary-safe). */
START_TEST(drain_path_with_nul)
{
	struct worker *w = new_worker(500);
	static const char path[] = "/api/x\0y";
	struct strbuf key = { 0 }, meta = { 0 }, reg = { 0 }, rules = { 0 }, stats = { 0 };
	unsigned k = shard_of(path, sizeof(path) - 1);
	redisReply *r;

	ck_assert_int_eq(keys_path(&key, "sluice:", "leaky_bucket", path, sizeof(path) - 1), 0);
	ck_assert_int_eq(keys_path(&meta, "sluice:", "leaky_bucket_meta", path, sizeof(path) - 1), 0);
	ck_assert_int_eq(keys_shard(&reg, "sluice:", k, "registry:leaky_bucket"), 0);
	ck_assert_int_eq(keys_shard(&rules, "sluice:", k, "rules"), 0);
	ck_assert_int_eq(keys_shard(&stats, "sluice:", k, "stats"), 0);
	{
		const char *argv[] = { key.p, meta.p, reg.p, rules.p, stats.p, path, "", "1000", "", "10", "1" };
		size_t lens[] = { key.len, meta.len, reg.len, rules.len, stats.len, sizeof(path) - 1, 0, 4, 0, 2, 1 };

		for (int i = 0; i < 3; i++) {
			r = test_script_argv(C, TEST_EVALSHA, "leaky_bucket", 5, 11, argv, lens);
			ck_assert_int_eq(test_script_allowed(r, "leaky_bucket"), 1);
		}
	}
	ck_assert_int_eq(drain_at(w, 3000), 2); /* 1 per second for 2 s */
	r = redisCommand(C, "ZCARD %b", key.p, key.len);
	ck_assert_int_eq(r->integer, 1);
	freeReplyObject(r);
	r = redisCommand(C, "ZSCORE %b %b", reg.p, reg.len, path, sizeof(path) - 1);
	ck_assert_int_eq(atoll(r->str), H(4000));
	freeReplyObject(r);
	strbuf_free(&key);
	strbuf_free(&meta);
	strbuf_free(&reg);
	strbuf_free(&rules);
	strbuf_free(&stats);
	worker_free(w);
}
END_TEST

/*
 * Keys of another type under the layout's names: a bucket that is not a
 * sorted set (its meta absent) is visited and looked at again when it would
 * expire, or a minute on when it never does; a meta that is not a hash is
 * skipped (looked at again in a minute).  Neither is fatal, nor touched.
 */
START_TEST(drain_skips_wrong_type_keys)
{
	struct worker *w = new_worker(500);
	struct worker_result res;

	fill("/m/ok", 10, "1", 3, 0);
	freeReplyObject(test_cmd(C, "SET %s 7", test_lb_key("/m/str")));
	freeReplyObject(test_cmd(C, "ZADD %s 1000 /m/str", test_registry("leaky_bucket", "/m/str")));
	freeReplyObject(test_cmd(C, "SET %s 7", test_lb_meta("/m/meta")));
	freeReplyObject(test_cmd(C, "ZADD %s 1000 /m/meta", test_registry("leaky_bucket", "/m/meta")));
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, H(2000), &res), 0);
	ck_assert_int_eq(res.entries, 2);
	ck_assert_int_eq(res.paths, 3);
	ck_assert_int_eq(res.skipped, 1);
	ck_assert_int_eq(level("/m/ok"), 1);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s %s", test_lb_key("/m/str"), test_lb_meta("/m/meta")), 2);
	ck_assert_int_eq(lb_due("/m/str"), 62000);
	ck_assert_int_eq(lb_due("/m/meta"), 62000);
	worker_free(w);
}
END_TEST

/* ---- the due walk: cost, poll, backlog, budget -------------------------------------- */

/*
 * A step calls the shard script only for the shards that are due; the
 * rolling poll reads the head of 1024 shards' registries per DUE_POLL_MS (1
 * s), ceil(1.024 x ms since the cycle began) in all whatever the tick, with
 * a plain ZRANGE (no script).  The first step polls every shard (it knows
 * none yet), and loads the rules (one script call: RULES_LOAD).  Redis
 * counts the commands (INFO commandstats: each script call runs two ZRANGEs
 * of its own), and so does the status (batches: script calls; polls).
 */
START_TEST(due_cost_follows_what_is_due)
{
	struct worker *w = new_worker(500);
	const long long t0 = 1000000;
	static const long long slices[10] = { 103, 102, 103, 102, 102, 103, 102, 103, 102, 102 };
	unsigned char due[SHARD_COUNT] = { 0 };
	long long total = 0, shards = 0, in_slice = 0;
	char p[32];
	struct worker_result res;

	/* 300 buckets of 2 entries, none due before t0 + 2000 (rate 0.5: the first leak in 2 s) */
	for (int i = 0; i < 300; i++) {
		snprintf(p, sizeof(p), "/c/%d", i);
		fill(p, 10, "0.5", 2, t0);
		keep_keys(p);
		due[shard_of(p, strlen(p))] = 1;
	}
	reset_stats();
	res = step_at(w, t0, INT64_MAX);
	ck_assert_int_eq(evalsha_calls(), RULES_LOAD);
	ck_assert_int_eq(zrange_calls(), SHARD_COUNT);
	ck_assert_int_eq(res.polls, SHARD_COUNT);
	ck_assert_int_eq(res.batches, 0);
	ck_assert_int_eq(res.paths, 0);
	/* nothing due: each step reads the poll's slice and calls nothing */
	for (int i = 0; i < 10; i++) {
		reset_stats();
		res = step_at(w, t0 + 100 * (i + 1), INT64_MAX);
		ck_assert_msg(zrange_calls() == slices[i], "step %d: %lld polls, want %lld", i, zrange_calls(), slices[i]);
		ck_assert_int_eq(evalsha_calls(), 0);
		ck_assert_int_eq(res.polls, slices[i]);
		ck_assert_int_eq(res.batches, 0);
		total += slices[i];
	}
	ck_assert_int_eq(total, SHARD_COUNT); /* one whole cycle per second */
	/* a tick of 1 ms reads one or two shards, not a hundred */
	reset_stats();
	res = step_at(w, t0 + 1001, INT64_MAX);
	ck_assert_int_eq(zrange_calls(), 2); /* ceil(1.024) */
	res = step_at(w, t0 + 1002, INT64_MAX);
	ck_assert_int_eq(res.polls, 1); /* ceil(2.048) - 2 */
	/* at t0 + 2000 the 300 are due: their shards are called; the slice, shards 3 .. 1023
	 * (ceil(1.024 x 1000) - 3 = 1021 since t0 + 1000), polled but for those */
	for (unsigned k = 0; k < SHARD_COUNT; k++) {
		shards += due[k];
		in_slice += due[k] && k >= 3;
	}
	reset_stats();
	res = step_at(w, t0 + 2000, INT64_MAX);
	ck_assert_int_eq(res.paths, 300);
	ck_assert_int_eq(res.entries, 300);
	ck_assert_int_eq(res.emptied, 0);
	ck_assert_int_eq(evalsha_calls(), shards);
	ck_assert_int_eq(res.batches, shards);
	ck_assert_int_eq(res.polls, 1021 - in_slice);
	ck_assert_int_eq(zrange_calls(), 1021 - in_slice + 2 * shards);
	worker_free(w);
}
END_TEST

/*
 * A path registered after its shard was asked is found by the rolling poll
 * within DUE_POLL_MS (1 s): the first step whose slice covers its shard,
 * and not before (the worker's cache says the shard is empty).
 */
START_TEST(due_poll_finds_a_new_path)
{
	struct worker *w = new_worker(500);
	const long long t0 = 1000000;
	unsigned k = 700; /* the slices at t0 + 100 x i cover [0,103), [103,205), ... [615,717) at t0 + 700 */
	char p[32];
	struct worker_result res;

	step_at(w, t0, INT64_MAX); /* every shard: all empty */
	path_in_shard(p, sizeof(p), "/poll/", k, 0);
	fill(p, 10, "1000", 1, t0); /* due at t0 + 1 */
	for (int i = 1; i <= 10; i++) {
		res = step_at(w, t0 + 100 * i, INT64_MAX);
		ck_assert_msg(res.entries == (i == 7), "step at t0 + %d: %llu drained", 100 * i,
			      (unsigned long long)res.entries);
	}
	ck_assert_int_eq(level(p), 0);
	worker_free(w);
}
END_TEST

/*
 * A shard with more due than one call takes (batch_size): the call reports
 * the rest (backlog) and the pass calls the shard again until none is due.
 * With a 1 us budget each step is one round trip, so the backlog and the
 * age of the oldest due path show in the status between steps.
 */
START_TEST(due_backlog_in_one_shard)
{
	struct worker *w = new_worker(5);
	const long long t0 = 1000000;
	const unsigned k = 517;
	struct worker_result res;
	struct worker_status st;
	char p[32];

	/* 12 buckets of one entry in shard 517, leaking 50 per second: due at t0 + 20 */
	for (int i = 0; i < 12; i++) {
		fill(path_in_shard(p, sizeof(p), "/bl/", k, i), 10, "50", 1, t0);
		keep_keys(p);
	}
	step_at(w, t0, INT64_MAX); /* every shard once: none due yet */
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].due_backlog, 0);
	ck_assert_int_eq(st.job[WORKER_DRAIN].oldest_due_age_ms, 0);
	/* 40 ms later: the 41 shards of the poll's slice (ceil(40.96)) and shard 517 fit one round trip */
	res = step_at(w, t0 + 40, 1);
	ck_assert_int_eq(res.polls, 41);
	ck_assert_int_eq(res.batches, 1);
	ck_assert_int_eq(res.entries, 5);
	ck_assert_int_eq(res.sweep_done, 0);
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].due_backlog, 7);
	ck_assert_int_eq(st.job[WORKER_DRAIN].oldest_due_age_ms, 20); /* due at t0 + 20 */
	ck_assert_int_eq(st.job[WORKER_DRAIN].in_sweep, 1);
	res = step_at(w, t0 + 70, 1); /* the pass goes on: shard 517 again, nothing else */
	ck_assert_int_eq(res.batches, 1);
	ck_assert_int_eq(res.entries, 5);
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].due_backlog, 2);
	ck_assert_int_eq(st.job[WORKER_DRAIN].oldest_due_age_ms, 50);
	res = step_at(w, t0 + 80, 1);
	ck_assert_int_eq(res.batches, 1);
	ck_assert_int_eq(res.entries, 2);
	ck_assert_int_eq(res.sweep_done, 1);
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].due_backlog, 0);
	ck_assert_int_eq(st.job[WORKER_DRAIN].oldest_due_age_ms, 0);
	ck_assert_int_eq(st.job[WORKER_DRAIN].in_sweep, 0);
	ck_assert_int_eq(st.job[WORKER_DRAIN].entries, 12);
	ck_assert_int_eq(st.job[WORKER_DRAIN].paths, 12);
	ck_assert_int_eq(st.job[WORKER_DRAIN].emptied, 12);
	ck_assert_int_eq(st.job[WORKER_DRAIN].sweeps, 2);
	ck_assert_int_eq(registered("leaky_bucket"), 0);
	/* in one step with room: the shard is called three times in one pass */
	for (int i = 0; i < 12; i++) {
		fill(path_in_shard(p, sizeof(p), "/bl/", k, i), 10, "50", 1, t0 + 1000);
		keep_keys(p);
	}
	res = step_at(w, t0 + 3000, INT64_MAX); /* over a second since the poll's last slice: every shard */
	ck_assert_int_eq(res.entries, 12);
	ck_assert_int_eq(res.paths, 12);
	ck_assert_int_eq(res.emptied, 12);
	ck_assert_int_eq(res.polls, SHARD_COUNT); /* shard 517 found due by its poll, and called 3 times */
	ck_assert_int_eq(res.batches, 3);
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].due_backlog, 0);
	worker_free(w);
}
END_TEST

/*
 * A step stops when its budget is spent and the next one resumes where it
 * stopped: with a 1 us budget, one round trip (64 commands) per step, so
 * the first pass polls the 1024 shards in 16 steps, then calls the due ones
 * (D shards) in ceil(D / 64) more, and every bucket is drained once, none
 * twice.
 */
START_TEST(drain_budget_resumes)
{
	struct worker *w = new_worker(10);
	struct worker_result res;
	struct worker_status st;
	unsigned char due[SHARD_COUNT] = { 0 };
	char path[32];
	uint64_t total = 0, calls = 0, polls = 0;
	int steps = 0, d = 0;

	for (int i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "/m/%d", i);
		fill(path, 5, "1", 2, 0);
		keep_keys(path);
		d += !due[shard_of(path, strlen(path))];
		due[shard_of(path, strlen(path))] = 1;
	}
	do {
		res = step_at(w, 1000, 1);
		total += res.entries;
		calls += res.batches;
		polls += res.polls;
		steps++;
		worker_status(w, &st);
		ck_assert_int_eq(st.job[WORKER_DRAIN].in_sweep, !res.sweep_done);
	} while (!res.sweep_done && steps < 1000);
	ck_assert_int_eq(steps, SHARD_COUNT / 64 + (d + 63) / 64);
	ck_assert_int_eq(polls, SHARD_COUNT);
	ck_assert_int_eq(calls, d);
	ck_assert_int_eq(total, 200);
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].sweeps, 1);
	ck_assert_int_eq(st.job[WORKER_DRAIN].steps, steps);
	for (int i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "/m/%d", i);
		ck_assert_int_eq(level(path), 1);
	}
	worker_free(w);
}
END_TEST

/* worker_sweep calls every shard of every own layout of the job, whatever is due. */
START_TEST(sweep_visits_every_shard)
{
	struct worker *w = new_worker(500);
	struct worker_result res;
	char p[32];

	fill(path_in_shard(p, sizeof(p), "/s/", 0, 0), 10, "1", 2, 0);
	fill(path_in_shard(p, sizeof(p), "/s/", 1023, 0), 10, "1", 2, 0);
	reset_stats();
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, H(1000), &res), 0);
	ck_assert_int_eq(evalsha_calls(), SHARD_COUNT + RULES_LOAD); /* the first step loads the rules */
	ck_assert_int_eq(res.batches, SHARD_COUNT);
	ck_assert_int_eq(res.polls, 0);
	ck_assert_int_eq(res.entries, 2);
	reset_stats();
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, H(1000), &res), 0); /* again at once: every shard again */
	ck_assert_int_eq(evalsha_calls(), SHARD_COUNT);
	ck_assert_int_eq(res.entries, 0);
	/* the prune job has four own layouts: sliding log, sliding counter, fixed window, token bucket */
	reset_stats();
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 1000, &res), 0);
	ck_assert_int_eq(evalsha_calls(), 4 * SHARD_COUNT);
	ck_assert_int_eq(res.batches, 4 * SHARD_COUNT);
	worker_free(w);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------ */

/*
 * A registry of another type: that shard's poll (or call) fails, its error
 * named in last_error, every other shard is drained in the same step, and
 * the bad shard is read again only by the poll (once a second), not every
 * tick.
 */
START_TEST(bad_registry_leaves_the_rest)
{
	struct worker *w = new_worker(500);
	struct worker_result res;
	struct worker_status st;
	const long long t0 = 1000000;
	char ok[32];

	path_in_shard(ok, sizeof(ok), "/ok/", 900, 0);
	fill(ok, 10, "1", 3, t0);
	keep_keys(ok);
	freeReplyObject(test_cmd(C, "SET sluice:{10}:registry:leaky_bucket oops"));
	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, INT64_MAX, H(t0 + 2000), &res), -EBADMSG);
	ck_assert_int_eq(res.entries, 2); /* shard 900 drained all the same */
	ck_assert_int_eq(res.polls, SHARD_COUNT - 1);
	ck_assert_int_eq(res.batches, 1);
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].errors, 1);
	ck_assert_msg(strncmp(st.job[WORKER_DRAIN].last_error, "poll: leaky_bucket shard 10: WRONGTYPE", 38) == 0,
		      "last_error: %s", st.job[WORKER_DRAIN].last_error);
	/* the next ticks: the poll's slices, shard 10 in the first */
	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, INT64_MAX, H(t0 + 2010), &res), -EBADMSG); /* [0, 11) */
	ck_assert_int_eq(res.polls, 10);
	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, INT64_MAX, H(t0 + 2100), &res), 0);        /* [11, 103) */
	ck_assert_int_eq(res.polls, 92);
	ck_assert_int_eq(res.batches, 0);
	worker_status(w, &st);
	ck_assert_str_eq(st.job[WORKER_DRAIN].last_error, "");
	ck_assert_int_eq(st.job[WORKER_DRAIN].errors, 2);
	/* a sweep calls the shard's script, which fails as well, after draining the rest */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, H(t0 + 3000), &res), -EBADMSG);
	worker_status(w, &st);
	ck_assert_msg(strncmp(st.job[WORKER_DRAIN].last_error, "script: leaky_bucket shard 10: WRONGTYPE", 40) == 0,
		      "last_error: %s", st.job[WORKER_DRAIN].last_error);
	ck_assert_int_eq(level(ok), 0);
	worker_free(w);
}
END_TEST

/*
 * Redis stops answering in the middle of a pass (CLIENT PAUSE, longer than
 * the worker's timeout): the step fails with -EIO and the error is in the
 * status; the next steps, once Redis answers again, resume the pass where
 * the failed round trip began, and every bucket is drained exactly once.
 */
START_TEST(redis_paused_mid_pass)
{
	struct worker_config wc = { .redis = &T, .timeout_ms = 200, .prefix = "sluice:", .batch_size = 10,
				    .layouts = L, .nlayouts = NL };
	struct worker *w = worker_new(&wc);
	struct worker_result res;
	struct worker_status st;
	char path[32];
	uint64_t total = 0;
	int rc, steps = 0, failed = 0;

	ck_assert_ptr_nonnull(w);
	for (int i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "/p/%d", i);
		fill(path, 5, "1", 2, 0);
	}
	res = step_at(w, 1000, 1); /* the first round trip of the pass: 64 polls */
	total += res.entries;
	ck_assert_int_eq(res.sweep_done, 0);
	/* writes paused (the shard scripts write; the polls and the rules' reads go on): the pass
	 * polls on, and its first round trip of shard calls fails */
	freeReplyObject(test_cmd(C, "CLIENT PAUSE 600 WRITE"));
	do {
		rc = worker_step(w, WORKER_DRAIN, 1, H(1000), &res);
		total += res.entries;
	} while (rc == 0 && ++steps < 100);
	ck_assert_int_eq(rc, -EIO);
	ck_assert_int_eq(steps, SHARD_COUNT / 64 - 1); /* the other 15 rounds of polls */
	steps = 0;
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].errors, 1);
	ck_assert_int_eq(st.redis_up, 0);
	ck_assert_msg(strncmp(st.job[WORKER_DRAIN].last_error, "redis: ", 7) == 0, "%s", st.job[WORKER_DRAIN].last_error);
	ck_assert_int_eq(st.job[WORKER_DRAIN].in_sweep, 1);
	/* until Redis answers again the steps fail (timeout, or the backoff); then the pass goes on */
	do {
		rc = worker_step(w, WORKER_DRAIN, 1, H(1000), &res);
		if (rc) {
			ck_assert_msg(rc == -EIO || rc == -EAGAIN, "rc %d", rc);
			failed++;
			test_sleep_ms(20);
			continue;
		}
		total += res.entries;
		steps++;
	} while ((rc || !res.sweep_done) && steps + failed < 2000);
	ck_assert_int_eq(total, 200);
	for (int i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "/p/%d", i);
		ck_assert_int_eq(level(path), 1);
	}
	worker_status(w, &st);
	ck_assert_int_eq(st.redis_up, 1);
	ck_assert_str_eq(st.job[WORKER_DRAIN].last_error, "");
	ck_assert_int_eq(st.job[WORKER_DRAIN].entries, 200);
	ck_assert_int_eq(st.job[WORKER_DRAIN].sweeps, 1);
	worker_free(w);
}
END_TEST

START_TEST(redis_down_is_an_error_not_a_crash)
{
	struct redis_target dead = { .host = "127.0.0.1", .port = test_free_port() };
	struct worker_config wc = { .redis = &dead, .timeout_ms = 200, .prefix = "sluice:",
				    .batch_size = 10, .layouts = L, .nlayouts = NL };
	struct worker *w = worker_new(&wc);
	struct worker_status st;
	int rc;

	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, 1000, -1, NULL), -EIO);
	rc = worker_step(w, WORKER_PRUNE, 1000, -1, NULL);
	ck_assert(rc == -EAGAIN || rc == -EIO); /* inside the backoff window: not even tried */
	worker_status(w, &st);
	ck_assert_int_eq(st.redis_up, 0);
	ck_assert_int_eq(st.job[WORKER_DRAIN].errors, 1);
	ck_assert_int_eq(st.job[WORKER_PRUNE].errors, 1);
	ck_assert_msg(strncmp(st.job[WORKER_DRAIN].last_error, "rules: ", 7) == 0, "%s", st.job[WORKER_DRAIN].last_error);
	worker_free(w);
}
END_TEST

/* ---- the status ----------------------------------------------------------------------- */

START_TEST(status_counters)
{
	struct worker *w = new_worker(500);
	struct worker_status st;
	const long long t0 = 1000000;

	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].steps, 0);
	ck_assert_int_eq(st.job[WORKER_DRAIN].oldest_due_age_ms, 0);
	ck_assert_int_eq(st.job[WORKER_PRUNE].oldest_due_age_ms, 0);
	ck_assert_int_eq(st.skew_ms, -1); /* this worker keeps no skew copies */
	ck_assert_int_ne(shard_of("/a", 2), shard_of("/b", 2));
	fill("/a", 10, "1", 3, t0);
	fill("/b", 10, "3", 1, t0); /* 3 due at t0 + 1000, 1 there: emptied */
	keep_keys("/a");
	keep_keys("/b");
	step_at(w, t0, INT64_MAX);        /* polls every shard: /a due at t0 + 1000, /b at t0 + 334 */
	step_at(w, t0 + 1000, INT64_MAX); /* a whole cycle of the poll since t0: every shard but the 2 due */
	step_at(w, t0 + 2500, INT64_MAX); /* again, but /a's (due at t0 + 2000) */
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].steps, 3);
	ck_assert_int_eq(st.job[WORKER_DRAIN].sweeps, 3);
	ck_assert_int_eq(st.job[WORKER_DRAIN].batches, 3);
	ck_assert_int_eq(st.job[WORKER_DRAIN].polls, SHARD_COUNT + (SHARD_COUNT - 2) + (SHARD_COUNT - 1));
	ck_assert_int_eq(st.job[WORKER_DRAIN].paths, 3);   /* /a and /b at 1000, /a at 2500 */
	ck_assert_int_eq(st.job[WORKER_DRAIN].entries, 3); /* 1 + 1, then 1 */
	ck_assert_int_eq(st.job[WORKER_DRAIN].emptied, 1); /* /b */
	ck_assert_int_eq(st.job[WORKER_DRAIN].errors, 0);
	ck_assert_int_eq(st.job[WORKER_DRAIN].in_sweep, 0);
	ck_assert_int_eq(st.job[WORKER_DRAIN].due_backlog, 0);
	ck_assert_int_eq(st.job[WORKER_DRAIN].oldest_due_age_ms, 0);
	ck_assert_int_eq(st.job[WORKER_PRUNE].steps, 0);
	ck_assert_int_eq(st.layout[0].paths, 3);
	ck_assert_int_eq(st.layout[0].entries, 3);
	ck_assert_int_eq(st.layout[0].emptied, 1);
	ck_assert_int_eq(st.rules, 0);
	ck_assert_int_eq(st.redis_up, 1);
	ck_assert_int_eq(st.connects, 1);
	ck_assert_int_gt(st.job[WORKER_DRAIN].last_step_us, 0);
	ck_assert_int_eq(lb_due("/a"), t0 + 3000);
	worker_free(w);
}
END_TEST

/* ---- the skew horizon in every shard's rules copy ----------------------------------------- */

/* max_clock_skew_ms in shard k's rules copy, or -1 when it has none. */
static long long copy_of(unsigned k)
{
	redisReply *r = test_cmd(C, "HGET sluice:{%u}:rules :max_clock_skew_ms", k);
	long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

	freeReplyObject(r);
	return v;
}

/* How many of the 1024 copies hold `ms`. */
static int copies_holding(long long ms)
{
	int n = 0;

	for (unsigned k = 0; k < SHARD_COUNT; k++)
		n += copy_of(k) == ms;
	return n;
}

static struct worker *skew_worker(long long ms)
{
	struct worker_config wc = { .redis = &T, .timeout_ms = 1000, .prefix = "sluice:", .batch_size = 500,
				    .layouts = L, .nlayouts = NL, .write_skew = 1, .max_clock_skew_ms = ms };
	struct worker *w = worker_new(&wc);

	ck_assert_ptr_nonnull(w);
	return w;
}

/*
 * The worker writes the skew horizon into every shard's copy at its first
 * step, checks them (1024 per 5 s, rolling; all at a sweep) and writes again
 * a copy that lost it; the client scripts obey the value (the time mark's
 * TTL), and a new value (SIGHUP) reaches every copy at the next step.
 */
START_TEST(skew_written_into_every_shard)
{
	struct worker *w = skew_worker(2500);
	struct worker_status st;
	const long long t0 = 1000000;
	long long ttl;

	worker_status(w, &st);
	ck_assert_int_eq(st.skew_ms, 2500);
	ck_assert_int_eq(st.skew_pending, SHARD_COUNT);
	step_at(w, t0, INT64_MAX);
	ck_assert_int_eq(copies_holding(2500), SHARD_COUNT);
	worker_status(w, &st);
	ck_assert_int_eq(st.skew_pending, 0);
	ck_assert_int_eq(st.skew_written, SHARD_COUNT);
	ck_assert_str_eq(st.skew_error, "");
	/* a client keeps its bucket and meta the copy's 2500 ms past its drain, not the default 10000:
	 * 1 entry at 1/s, 1000 ms, +1, +1000 grace, +2500 */
	fill("/k", 10, "1", 1, -1);
	ttl = test_cmd_int(C, "PTTL %s", test_lb_key("/k"));
	ck_assert_msg(ttl > 4400 && ttl <= 4501, "the bucket's TTL is %lld ms", ttl);
	ttl = test_cmd_int(C, "PTTL %s", test_lb_meta("/k"));
	ck_assert_msg(ttl > 4400 && ttl <= 4501, "the meta's TTL is %lld ms", ttl);
	/* a copy lost (DEL by hand, or Redis lost them all): found by the rolling check */
	freeReplyObject(test_cmd(C, "DEL sluice:{100}:rules sluice:{1000}:rules"));
	step_at(w, t0 + 100, INT64_MAX); /* checks shards [0, 21): not these */
	ck_assert_int_eq(copy_of(100), -1);
	step_at(w, t0 + 600, INT64_MAX); /* [21, 123) */
	ck_assert_int_eq(copy_of(100), 2500);
	ck_assert_int_eq(copy_of(1000), -1);
	step_at(w, t0 + 5000, INT64_MAX);
	ck_assert_int_eq(copy_of(1000), 2500);
	worker_status(w, &st);
	ck_assert_int_eq(st.skew_written, SHARD_COUNT + 2);
	/* a sweep checks every copy */
	freeReplyObject(test_cmd(C, "HSET sluice:{7}:rules :max_clock_skew_ms 10"));
	ck_assert_int_eq(drain_at(w, t0 + 5001), 0);
	ck_assert_int_eq(copy_of(7), 2500);
	/* another number where this worker's was: a conflict (another daemon's value); the
	 * copies lost above (DEL) were none */
	worker_status(w, &st);
	ck_assert_uint_eq(st.skew_conflicts, 1);
	ck_assert_int_eq(st.skew_conflict_ms, 10);
	/* a new value (SIGHUP): every copy at the next step */
	worker_set_skew(w, 4000);
	worker_status(w, &st);
	ck_assert_int_eq(st.skew_ms, 4000);
	ck_assert_int_eq(st.skew_pending, SHARD_COUNT);
	step_at(w, t0 + 5002, INT64_MAX);
	ck_assert_int_eq(copies_holding(4000), SHARD_COUNT);
	worker_status(w, &st);
	ck_assert_int_eq(st.skew_written, 2 * SHARD_COUNT + 3);
	/* the copy keeps the shard's other fields (the rules by name, issue 7) */
	freeReplyObject(test_cmd(C, "HSET sluice:{9}:rules api x"));
	ck_assert_int_eq(drain_at(w, t0 + 5003), 0);
	test_check_cmd(__FILE__, __LINE__, C, "{\"4000\", \"x\"}", "HMGET sluice:{9}:rules :max_clock_skew_ms api");
	worker_free(w);
}
END_TEST

/* A copy of another type cannot be written: the status says so, the rest is kept and the drain goes on. */
START_TEST(skew_copy_of_another_type)
{
	struct worker *w = skew_worker(3000);
	struct worker_status st;
	struct worker_result res;
	char d[32];

	freeReplyObject(test_cmd(C, "SET sluice:{5}:rules oops"));
	fill(path_in_shard(d, sizeof(d), "/d/", 6, 0), 10, "1", 10, 0);
	/* the skew copy does not fail the step (shard 5 has nothing due: its scripts, which
	 * read the copy and would fail, are not called) */
	/* due at 11000 (filled before the copy, by the default horizon); there shard 6
	 * takes the copy's 3000 ms, written first in the step: it leaks up to 8000 */
	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, INT64_MAX, 11000, &res), 0);
	ck_assert_int_eq(res.entries, 8);
	worker_status(w, &st);
	ck_assert_int_eq(st.skew_pending, 1);
	ck_assert_int_eq(st.skew_written, SHARD_COUNT - 1);
	ck_assert_msg(strncmp(st.skew_error, "HGET of shard 5's rules copy: WRONGTYPE", 39) == 0, "%s", st.skew_error);
	ck_assert_str_eq(st.job[WORKER_DRAIN].last_error, "");
	ck_assert_int_eq(copies_holding(3000), SHARD_COUNT - 1);
	/* a path of shard 5 is still admitted and drained: its scripts take the default horizon */
	{
		char e[32];

		fill(path_in_shard(e, sizeof(e), "/e/", 5, 0), 10, "1", 2, 0);
		ck_assert_int_eq(drain_at(w, 1000), 1);
		worker_status(w, &st);
		ck_assert_str_eq(st.job[WORKER_DRAIN].last_error, "");
	}
	/* fixed by hand: written at the next try, 250 ms later (SKEW_RETRY_MS) */
	freeReplyObject(test_cmd(C, "DEL sluice:{5}:rules"));
	step_at(w, 1200, INT64_MAX);
	ck_assert_int_eq(copy_of(5), -1);
	worker_status(w, &st);
	ck_assert_int_eq(st.skew_pending, 1);
	step_at(w, 2000, INT64_MAX);
	ck_assert_int_eq(copy_of(5), 3000);
	worker_status(w, &st);
	ck_assert_int_eq(st.skew_pending, 0);
	ck_assert_int_eq(st.skew_written, SHARD_COUNT);
	ck_assert_str_eq(st.skew_error, "");
	worker_free(w);
}
END_TEST

/* ---- the other algorithms' shard jobs through the worker (contract: DESIGN.md, lua/lib/due.lua) ---- */

/* The prune job at `now`: one whole sweep. */
static uint64_t prune_at(struct worker *w, long long now)
{
	struct worker_result res;

	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, now, &res), 0);
	return res.entries;
}

START_TEST(prune_window_boundary)
{
	struct worker *w = new_worker(500);

	ck_assert_int_eq(sl_acquire("/l", 10, 1000, 5000), 1);
	ck_assert_int_eq(sl_acquire("/l", 10, 1000, 5000), 1); /* same millisecond: counted twice */
	ck_assert_int_eq(sl_acquire("/l", 10, 1000, 5400), 1);
	ck_assert_int_eq(log_count("/l"), 3);
	/* The prune acts at the time a client lagging Redis by the whole skew
	 * horizon (10 s, lua/lib/skew.lua) is served at: max(newest entry, now - 10000). */
	ck_assert_int_eq(prune_at(w, 6000), 0);	 /* at s + window, but not for every client */
	ck_assert_int_eq(prune_at(w, 15999), 0); /* 5000 + 1000 - 1: still inside */
	ck_assert_int_eq(prune_at(w, 16000), 2); /* at s + window it is out */
	ck_assert_int_eq(log_count("/l"), 1);
	ck_assert_int_eq(due_of("sliding_log", "/l") >= 0, 1);
	ck_assert_int_eq(prune_at(w, 16400), 1);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s", test_sl_key("/l")), 0);
	ck_assert_int_eq(due_of("sliding_log", "/l"), -1);
	worker_free(w);
}
END_TEST

START_TEST(prune_registry_cleanup_of_expired_keys)
{
	struct worker *w = new_worker(500);
	struct worker_result res;

	for (int i = 0; i < 20; i++) {
		char p[16];

		snprintf(p, sizeof(p), "/l/%d", i);
		sl_acquire(p, 10, 1000, 0);
	}
	/* keys that vanished (TTL, manual DEL) leave stale registry members: they leave at their first due time */
	freeReplyObject(test_cmd(C, "DEL %s %s %s %s", test_sl_key("/l/3"), test_key("/l/3", "sliding_log_meta"),
				 test_sl_key("/l/4"), test_key("/l/4", "sliding_log_meta")));
	ck_assert_int_eq(registered("sliding_log"), 20);
	/* the entries at 0 leave the window at 1000, of every client within the skew horizon at 11000 */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 11000, &res), 0);
	ck_assert_int_eq(res.entries, 18);
	ck_assert_int_eq(res.emptied, 20);
	ck_assert_int_eq(registered("sliding_log"), 0);
	worker_free(w);
}
END_TEST

/* ---- Redis restarts, script cache, connection loss ------------------------------ */

START_TEST(noscript_after_script_flush)
{
	struct worker *w = new_worker(500);
	struct worker_status st;

	fill("/b", 10, "1", 5, 0);
	ck_assert_int_eq(drain_at(w, 1000), 1);
	freeReplyObject(test_cmd(C, "SCRIPT FLUSH"));
	ck_assert_int_eq(drain_at(w, 2000), 1); /* NOSCRIPT -> SCRIPT LOAD -> retried once */
	ck_assert_int_eq(level("/b"), 3);
	worker_status(w, &st);
	ck_assert_int_eq(st.connects, 1);
	ck_assert_int_eq(st.job[WORKER_DRAIN].errors, 0);
	worker_free(w);
}
END_TEST

START_TEST(reconnect_after_connection_killed)
{
	struct worker *w = new_worker(500);
	struct worker_status st;

	fill("/b", 10, "1", 5, 0);
	ck_assert_int_eq(drain_at(w, 1000), 1);
	/* the worker's idle connection is closed and the script cache emptied,
	 * as after a Redis restart: the next step reconnects at once, reloads
	 * the scripts and drains, with no error */
	freeReplyObject(test_cmd(C, "CLIENT KILL TYPE normal SKIPME yes"));
	freeReplyObject(test_cmd(C, "SCRIPT FLUSH"));
	ck_assert_int_eq(drain_at(w, 2000), 1);
	worker_status(w, &st);
	ck_assert_int_eq(st.redis_up, 1);
	ck_assert_int_eq(st.connects, 2);
	ck_assert_int_eq(st.job[WORKER_DRAIN].errors, 0);
	ck_assert_str_eq(st.job[WORKER_DRAIN].last_error, "");
	ck_assert_int_eq(level("/b"), 3);
	worker_free(w);
}
END_TEST

/* ---- sliding counter, fixed window, token bucket ----------------------------------- */

START_TEST(prune_sliding_counter)
{
	struct worker *w = new_worker(500);
	struct worker_result res;
	struct worker_status st;

	for (int i = 0; i < 3; i++) /* sub-window 0 (0..249 ms) */
		ck_assert_int_eq(test_acquire(C, TEST_EVALSHA, "sliding_counter", "/c", 0, "10", "1000", "4", NULL), 1);
	for (int i = 0; i < 2; i++) /* sub-window 2 (500..749 ms) */
		ck_assert_int_eq(test_acquire(C, TEST_EVALSHA, "sliding_counter", "/c", 600, "10", "1000", "4", NULL), 1);
	/* the prune acts at max(t, now - 10000): the 10 s skew horizon (lua/lib/skew.lua) */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 10999, &res), 0);
	ck_assert_int_eq(res.entries, 0); /* sub-window 0 still counts until 1000 */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 11000, &res), 0);
	ck_assert_int_eq(res.entries, 1); /* field "0" */
	ck_assert_int_eq(test_cmd_int(C, "HEXISTS %s 0", test_key("/c", "sliding_counter")), 0);
	ck_assert_int_eq(test_cmd_int(C, "HEXISTS %s 2", test_key("/c", "sliding_counter")), 1);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 11500, &res), 0);
	ck_assert_int_eq(res.entries, 1);
	ck_assert_int_eq(res.emptied, 1);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s", test_key("/c", "sliding_counter")), 0);
	ck_assert_int_eq(registered("sliding_counter"), 0);
	worker_status(w, &st);
	ck_assert_str_eq(st.layout[2].name, "sliding_counter");
	ck_assert_int_eq(st.layout[2].entries, 2);
	ck_assert_int_eq(st.layout[2].emptied, 1);
	worker_free(w);
}
END_TEST

START_TEST(repair_fixed_window)
{
	struct worker *w = new_worker(500);
	struct worker_result res;
	struct worker_status st;
	const char *k1 = test_key("/f1", "fixed_window"), *k2 = test_key("/f2", "fixed_window");

	ck_assert_int_eq(test_acquire(C, TEST_EVALSHA, "fixed_window", "/f1", 0, "5", "1000000", NULL), 1);
	ck_assert_int_eq(test_acquire(C, TEST_EVALSHA, "fixed_window", "/f2", 0, "5", "1000000", NULL), 1);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 10, &res), 0);
	ck_assert_int_eq(res.entries, 0); /* both have their TTL */
	freeReplyObject(test_cmd(C, "PERSIST %s", k1)); /* a counter left without one */
	freeReplyObject(test_cmd(C, "ZADD %s 10 /f1", test_registry("fixed_window", "/f1"))); /* and due now */
	ck_assert_int_eq(test_cmd_int(C, "PTTL %s", k1), -1);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 10, &res), 0);
	ck_assert_int_eq(res.entries, 1);
	ck_assert_int_gt(test_cmd_int(C, "PTTL %s", k1), 900000); /* the rest of its window */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 10, &res), 0);
	ck_assert_int_eq(res.entries, 0); /* idempotent */
	/* the next window, for every client within the 10 s skew horizon (lua/lib/skew.lua):
	 * both counters are stale and go */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 1009999, &res), 0);
	ck_assert_int_eq(res.emptied, 0);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 1010000, &res), 0);
	ck_assert_int_eq(res.emptied, 2);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s %s", k1, k2), 0);
	worker_status(w, &st);
	ck_assert_str_eq(st.layout[3].name, "fixed_window");
	ck_assert_int_eq(st.layout[3].entries, 1);
	worker_free(w);
}
END_TEST

START_TEST(reclaim_token_bucket)
{
	struct worker *w = new_worker(500);
	struct worker_result res;
	struct worker_status st;
	long long skew = model_skew_ms();
	redisReply *r;

	r = test_client_call(C, TEST_EVALSHA, "token_bucket", "/t", "3", 0, (const char *const[]){ "5", "1" }, 2);
	ck_assert_int_eq(test_script_allowed(r, "token_bucket"), 1); /* 2 left */
	/* full at 3000, but kept SKEW_MS longer for a client whose clock lags */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 2999 + skew, &res), 0);
	ck_assert_int_eq(res.entries, 0); /* 4.999 tokens at 2999: not full */
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s", test_key("/t", "token_bucket")), 1);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 3000 + skew, &res), 0);
	ck_assert_int_eq(res.entries, 1); /* full since SKEW_MS: the same as absent */
	ck_assert_int_eq(res.emptied, 1);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s", test_key("/t", "token_bucket")), 0);
	ck_assert_int_eq(registered("token_bucket"), 0);
	worker_status(w, &st);
	ck_assert_str_eq(st.layout[4].name, "token_bucket");
	ck_assert_int_eq(st.layout[4].entries, 1);
	worker_free(w);
}
END_TEST

/* Shutdown: a sweep request is refused at once, not left waiting. */
START_TEST(cancelled_requests_refused)
{
	struct worker *w = new_worker(500);
	struct worker_result rr[WORKER__JOBS];
	int64_t us[WORKER__JOBS];

	worker_cancel_requests(w);
	ck_assert_int_eq(worker_request_sweep(w, 5000, rr, us), -ECANCELED);
	worker_free(w);
}
END_TEST

/* ---- one meta per bucket, whatever bytes the path holds ------------------------- */

/* Paths that would have carried an empty or misleading hash tag in 0.1's layout (issue 8: "}x" gave "{}"). */
static const char *const meta_paths[] = { "}x", "{}x", "}{", "x}", "/api/users" };

/*
 * The worker and the client share one meta hash: the one the client is told
 * (<prefix>{k}:leaky_bucket_meta:<path>).  With capacity 1000 rate 1, 20
 * entries admitted at 10 s lose exactly 6 by 16 s, drained by the worker
 * every second, and the client's next call at 16 s leaks nothing more
 * (issue 8 item 2: two metas, each applying the leak, lost 12).  A reset
 * then leaves the keyspace as it was before the first request.
 */
START_TEST(drain_meta_is_the_clients)
{
	const char *p = meta_paths[_i];
	struct worker *w = new_worker(500);
	cJSON *out = NULL;
	char *before, *after;
	uint64_t drained = 0;

	before = test_snapshot(C);
	fill(p, 1000, "1", 20, 10000);
	for (long long t = 10000; t <= 16000; t += 1000)
		drained += drain_at(w, t);
	ck_assert_msg(drained == 6, "%s: drained %llu, want 6", p, (unsigned long long)drained);
	ck_assert_int_eq(level(p), 14);
	ck_assert_int_eq(lb_acquire(p, 1000, "1", 16000), 1);
	ck_assert_msg(level(p) == 15, "%s: level %lld after the client's call, want 15", p, level(p));
	test_check_cmd(__FILE__, __LINE__, C, "\"16000\"", "HGET %s last", test_lb_meta(p));
	ck_assert_int_eq(drain_at(w, 16000), 0); /* the same instant again */

	ck_assert_int_eq(reset_path(RC, L, NL, p, strlen(p), &out), 0);
	cJSON_Delete(out);
	after = test_snapshot(C);
	ck_assert_msg(strcmp(before, after) == 0, "%s: the reset left keys behind:\n before %s\n after  %s", p,
		      before, after);
	free(before);
	free(after);
	worker_free(w);
}
END_TEST

/* ---- foreign layouts (keys written by the seed articles' limiters) ------------------- */

/* A worker over sluice's layouts plus the foreign ones given as config JSON. */
static struct worker *foreign_worker(const char *layouts_json, struct layout **all, size_t *nall)
{
	struct worker_config wc = { .redis = &T, .timeout_ms = 1000, .prefix = "sluice:", .batch_size = 3 };
	struct worker *w;

	test_layouts("sluice:", layouts_json, all, nall);
	wc.layouts = *all;
	wc.nlayouts = *nall;
	w = worker_new(&wc);
	ck_assert_ptr_nonnull(w);
	return w;
}

/* sluice's meta for LeakyBucket:/test (slot 2094, whose tag is "4be") in layout "seed004" */
#define SEED004_META "sluice:{4be}:seed004_meta:LeakyBucket:/test"

/*
 * Seed 004's leaky bucket: sorted set LeakyBucket:<path>, member = score = ms,
 * registry LeakyBucket::pathSet; its client admits while ZCARD < capacity.
 * sluiced drains it at the rule's rate, so that check admits again at that rate.
 */
START_TEST(foreign_leaky_bucket_seed004)
{
	struct layout *all;
	size_t nall;
	struct worker *w = foreign_worker(
		"[{\"name\":\"seed004\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"LeakyBucket:\","
		"\"registry\":\"LeakyBucket::pathSet\"}]", &all, &nall);
	struct worker_result res;

	leaky_rule("seed", "/test", 10, "2");
	for (int i = 0; i < 10; i++) /* the seed client: SADD path; ZADD now now (distinct ms here) */
		freeReplyObject(test_cmd(C, "ZADD LeakyBucket:/test %d %d", 1000 + i, 1000 + i));
	freeReplyObject(test_cmd(C, "SADD LeakyBucket::pathSet /test"));
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 5000, &res), 0);
	ck_assert_int_eq(res.entries, 0); /* first sight: accounting starts now */
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s", SEED004_META), 1);
	/* the meta sluiced adds expires with the bucket's drain time (10 at 2/s: 5 s) + 1 s, + SKEW_MS */
	ck_assert_int_gt(test_cmd_int(C, "PTTL %s", SEED004_META), 5900 + model_skew_ms());
	ck_assert_int_le(test_cmd_int(C, "PTTL %s", SEED004_META), 6001 + model_skew_ms());
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 5499, &res), 0);
	ck_assert_int_eq(res.entries, 0);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 5500, &res), 0);
	ck_assert_int_eq(res.entries, 1); /* 2 per second: one every 500 ms */
	/* the client's check admits exactly one more request now */
	ck_assert_int_eq(test_cmd_int(C, "ZCARD LeakyBucket:/test"), 9);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 8000, &res), 0);
	ck_assert_int_eq(res.entries, 5);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD LeakyBucket:/test"), 4);
	/* the oldest left first */
	ck_assert_int_eq(test_cmd_int(C, "ZCOUNT LeakyBucket:/test -inf 1005"), 0);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 20000, &res), 0);
	ck_assert_int_eq(res.entries, 4);
	ck_assert_int_eq(res.emptied, 1);
	ck_assert_int_eq(test_cmd_int(C, "SCARD LeakyBucket::pathSet"), 0);
	/* the meta stays SKEW_MS as the bucket's time mark */
	test_check_cmd(__FILE__, __LINE__, C, "{\"20000\", \"0\"}", "HMGET %s last carry", SEED004_META);
	worker_free(w);
	layouts_free(all, nall);
}
END_TEST

/*
 * A foreign key holding '}' (LeakyBucket:}x, slot 4889): its meta lives under
 * sluice's prefix in that slot (tag "2Vc"), the drain is exact (20 entries at
 * rate 1 lose 6 in 6 s, from the first sight, as for sluice's own buckets
 * above), and a reset takes the data, the meta and the registry member,
 * leaving the keyspace as before the client's first request.
 */
START_TEST(foreign_leaky_bucket_brace_in_key)
{
	const char *key = "LeakyBucket:}x", *meta = "sluice:{2Vc}:seed004_meta:LeakyBucket:}x";
	struct layout *all;
	size_t nall;
	struct worker *w = foreign_worker(
		"[{\"name\":\"seed004\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"LeakyBucket:\","
		"\"registry\":\"LeakyBucket::pathSet\"}]", &all, &nall);
	uint64_t drained = 0;
	cJSON *out = NULL;
	char *before, *after;

	leaky_rule("all", "*", 1000, "1");
	before = test_snapshot(C);
	for (int i = 0; i < 20; i++) /* the seed client: member = score = ms (distinct members here) */
		freeReplyObject(test_cmd(C, "ZADD %s 10000 10000-%d", key, i));
	freeReplyObject(test_cmd(C, "SADD LeakyBucket::pathSet }x"));
	for (long long t = 10000; t <= 16000; t += 1000)
		drained += drain_raw(w, t);
	ck_assert_int_eq(drained, 6);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD %s", key), 14);
	ck_assert_uint_eq(shard_keyslot(meta, strlen(meta)), shard_keyslot(key, strlen(key)));
	test_check_cmd(__FILE__, __LINE__, C, "{\"16000\", \"0\"}", "HMGET %s last carry", meta);
	ck_assert_int_eq(drain_raw(w, 16000), 0);
	ck_assert_int_eq(drain_raw(w, 16999), 0);
	ck_assert_int_eq(drain_raw(w, 17000), 1);

	ck_assert_int_eq(reset_path(RC, all, nall, "}x", 2, &out), 0);
	after = cJSON_PrintUnformatted(out);
	ck_assert_str_eq(after, "{\"path\":\"}x\",\"keys_removed\":2,\"entries_removed\":13,\"registries_removed\":1,"
				"\"keys\":[{\"key\":\"LeakyBucket:}x\",\"entries\":13},"
				"{\"key\":\"sluice:{2Vc}:seed004_meta:LeakyBucket:}x\",\"meta\":true}]}");
	free(after);
	cJSON_Delete(out);
	after = test_snapshot(C);
	ck_assert_msg(strcmp(before, after) == 0, "the reset left keys behind:\n before %s\n after  %s", before, after);
	free(before);
	free(after);
	worker_free(w);
	layouts_free(all, nall);
}
END_TEST

/*
 * Seeds 000 and 002: sliding logs with no registry, found by SCAN MATCH/TYPE
 * (000: member = the timestamp; 002: member = a UUID), score = ms; and a log
 * scored in seconds.
 */
START_TEST(foreign_sliding_logs_by_scan)
{
	struct layout *all;
	size_t nall;
	struct worker *w = foreign_worker(
		"[{\"name\":\"seed000\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"limit:\",\"scan\":true},"
		" {\"name\":\"seed002\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"rate_limit:\",\"scan\":true},"
		" {\"name\":\"secs\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"slog:\",\"scan\":true,\"unit\":\"s\"}]",
		&all, &nall);
	struct worker_result res;

	log_rule("users", "user*", 10, 1000);
	log_rule("ids", "id-*", 10, 1000);
	log_rule("secs", "s/*", 10, 10000);
	for (int i = 0; i < 4; i++) {
		freeReplyObject(test_cmd(C, "ZADD limit:user1:/api %d %d", 1000 + 100 * i, 1000 + 100 * i));
		freeReplyObject(test_cmd(C, "ZADD rate_limit:id-7 %d 6f1c-%d", 1000 + 100 * i, i));
	}
	freeReplyObject(test_cmd(C, "SET rate_limit:counter 5")); /* seed 001's string: TYPE filters it out */
	freeReplyObject(test_cmd(C, "ZADD slog:s/a 1 x 5 y 9 z")); /* seconds */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 2150, &res), 0);
	/* ms logs: entries <= 1150 go (1000, 1100 from each); seconds log: <= 2.15 - 10 s: none */
	ck_assert_int_eq(res.entries, 4);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD limit:user1:/api"), 2);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD rate_limit:id-7"), 2);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD slog:s/a"), 3);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 16000, &res), 0);
	/* ms logs empty and deleted; seconds: <= 6 s go (1, 5) */
	ck_assert_int_eq(res.entries, 6);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS limit:user1:/api rate_limit:id-7"), 0);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD slog:s/a"), 1);
	{
		redisReply *r = test_cmd(C, "GET rate_limit:counter"); /* untouched */

		ck_assert_str_eq(r->str, "5");
		freeReplyObject(r);
	}
	worker_free(w);
	layouts_free(all, nall);
}
END_TEST

/*
 * Seed 001's fixed window: INCR rate_limit:<name>, then EXPIRE only when the
 * count is 1; a client that died between the two left a counter with no TTL,
 * which would block that name forever.  Found by SCAN TYPE string, repaired.
 */
START_TEST(foreign_fixed_window_seed001)
{
	struct layout *all;
	size_t nall;
	struct worker *w = foreign_worker(
		"[{\"name\":\"seed001\",\"algorithm\":\"fixed_window\",\"key_prefix\":\"rate_limit:\",\"scan\":true}]",
		&all, &nall);
	struct worker_result res;

	put_rule("{\"name\":\"fw\",\"match\":\"login*\",\"algorithm\":\"fixed_window\",\"limit\":5,\"window_ms\":60000}");
	/* a healthy client: INCR then EXPIRE 60 */
	freeReplyObject(test_cmd(C, "INCR rate_limit:login-ok"));
	freeReplyObject(test_cmd(C, "EXPIRE rate_limit:login-ok 60"));
	/* a client that died between INCR and EXPIRE, after 7 requests */
	freeReplyObject(test_cmd(C, "SET rate_limit:login-stuck 7"));
	/* seed 002's sorted set under the same prefix: TYPE string leaves it alone */
	freeReplyObject(test_cmd(C, "ZADD rate_limit:login-zset 1 a"));
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, -1, &res), 0);
	ck_assert_int_eq(res.entries, 1);
	ck_assert_int_gt(test_cmd_int(C, "PTTL rate_limit:login-stuck"), 59000);
	ck_assert_int_le(test_cmd_int(C, "PTTL rate_limit:login-stuck"), 60000);
	/* the healthy client's own TTL is left as it was (not -1 or -2: kept, and still set) */
	ck_assert_int_gt(test_cmd_int(C, "PTTL rate_limit:login-ok"), 59000);
	ck_assert_int_le(test_cmd_int(C, "PTTL rate_limit:login-ok"), 60000);
	ck_assert_int_eq(test_cmd_int(C, "PTTL rate_limit:login-zset"), -1);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, -1, &res), 0);
	ck_assert_int_eq(res.entries, 0); /* idempotent */
	worker_free(w);
	layouts_free(all, nall);
}
END_TEST

/* ---- one bad item fails alone (issue 9) ------------------------------------------ */

/* The job's last_error holds `want` (a substring). */
static void ck_last_error_has(struct worker *w, enum worker_job job, const char *want)
{
	struct worker_status st;

	worker_status(w, &st);
	ck_assert_msg(strstr(st.job[job].last_error, want) != NULL, "last_error \"%s\", want it to hold \"%s\"",
		      st.job[job].last_error, want);
}

/*
 * A foreign layout's batch call with one path whose job fails (the layout's
 * registry name, a key nothing of the limiter writes, holds a string, so
 * taking the emptied log "/gone" out of it is refused): "/gone" fails alone,
 * counted and named (percent-encoded where it is not printable ASCII); the
 * other logs of the same call, one of them a key of odd bytes, are pruned
 * exactly, and the walk goes past the page instead of failing on it at every
 * tick.  (Before: the whole call was an error, nothing of the page or of the
 * pages after it was pruned, and the cursor stayed, so every tick failed again.)
 */
START_TEST(foreign_bad_path_fails_alone)
{
	struct layout *all;
	size_t nall;
	struct worker *w = foreign_worker(
		"[{\"name\":\"seed000\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"limit:\",\"scan\":true}]", &all,
		&nall);
	struct worker_result res;
	struct worker_status st;

	log_rule("all", "*", 10, 1000);
	freeReplyObject(test_cmd(C, "ZADD limit:/a 1000 a1 1100 a2 5000 a3"));   /* 2 go, 1 stays */
	freeReplyObject(test_cmd(C, "ZADD limit:/c 1000 c1 5000 c2"));           /* 1 goes, 1 stays */
	freeReplyObject(test_cmd(C, "ZADD %b 1000 o1 1200 o2 5000 o3", "limit:\xff{x}\x01", (size_t)11)); /* 2 go */
	freeReplyObject(test_cmd(C, "ZADD limit:/gone%%22 1000 g1"));            /* emptied: leaves the registry */
	freeReplyObject(test_cmd(C, "SET %b oops", "limit:\x01noregistry", (size_t)17));
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 5500, &res), -EBADMSG);
	ck_assert_int_eq(res.sweep_done, 1);
	ck_assert_int_eq(res.paths, 4);
	ck_assert_int_eq(res.entries, 5);
	ck_assert_int_eq(res.failed, 1);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD limit:/a"), 1);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD limit:/c"), 1);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD %b", "limit:\xff{x}\x01", (size_t)11), 1);
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_PRUNE].errors, 1);
	ck_assert_int_eq(st.job[WORKER_PRUNE].failed, 1);
	ck_assert_int_eq(st.layout[nall - 1].failed, 1);
	ck_assert_int_eq(st.layout[nall - 1].entries, 5);
	ck_last_error_has(w, WORKER_PRUNE, "path failed: seed000 path \"/gone%2522\": ");
	ck_last_error_has(w, WORKER_PRUNE, "WRONGTYPE");
	/* what its job did before the refusal stays (the log emptied, so Redis dropped it): the next
	 * sweep finds nothing left to do, and succeeds */
	ck_assert_int_eq(test_cmd_int(C, "EXISTS limit:/gone%%22"), 0);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 5500, &res), 0);
	ck_assert_int_eq(res.entries, 0);
	ck_assert_int_eq(res.failed, 0);
	worker_status(w, &st);
	ck_assert_str_eq(st.job[WORKER_PRUNE].last_error, "");
	worker_free(w);
	layouts_free(all, nall);
}
END_TEST

/*
 * Issue 9's report: a sliding-counter rule with sub_windows 3 of 1000 ms
 * (stored by a daemon that took it, before such rules were refused) matched a
 * foreign layout's counters, and the prune job failed at every tick, so no
 * path of any algorithm in it was maintained.  Now a stored rule that fails
 * validation is skipped (rules.invalid), the counters it matched are left
 * alone (unmatched), and everything else of the job is maintained.
 */
START_TEST(stored_bad_rule_stops_nothing)
{
	struct layout *all;
	size_t nall;
	struct worker *w = foreign_worker(
		"[{\"name\":\"counters\",\"algorithm\":\"sliding_counter\",\"key_prefix\":\"cnt:\",\"scan\":true},"
		" {\"name\":\"logs\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"limit:\",\"scan\":true}]",
		&all, &nall);
	struct worker_result res;
	struct worker_status st;

	log_rule("logs", "/l*", 10, 1000);
	freeReplyObject(test_cmd(C, "HSET sluice:rules bad %s",
				 "{\"name\":\"bad\",\"match\":\"/c*\",\"algorithm\":\"sliding_counter\",\"limit\":5,"
				 "\"window_ms\":1000,\"sub_windows\":3}"));
	freeReplyObject(test_cmd(C, "INCR sluice:rules:version"));
	freeReplyObject(test_cmd(C, "HSET cnt:/c1 0 4 t 100"));
	freeReplyObject(test_cmd(C, "ZADD limit:/l1 1000 a 1100 b 5000 c"));
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 5500, &res), 0);
	ck_assert_int_eq(res.entries, 2); /* the log's two old entries */
	ck_assert_int_eq(res.unmatched, 1); /* the counter: its only rule is not loaded */
	ck_assert_int_eq(res.failed, 0);
	worker_status(w, &st);
	ck_assert_int_eq(st.rules_invalid, 1);
	ck_assert_int_eq(st.job[WORKER_PRUNE].errors, 0);
	ck_assert_int_eq(test_cmd_int(C, "HLEN cnt:/c1"), 2);
	worker_free(w);
	layouts_free(all, nall);
}
END_TEST

/*
 * sluice's own layout: a log holding an entry at +inf (written by hand: it
 * never leaves the window) among good logs of the same shard.  The good ones
 * are pruned exactly; the odd one is looked at again a minute on, not given
 * the score "-9223372036854775808" (Lua's %d of inf) that kept it, and its
 * shard's script call, due at every tick.
 */
START_TEST(own_log_with_inf_entry_not_due_every_tick)
{
	struct worker *w = new_worker(500);
	struct worker_result res;
	char good[32], odd[32];

	path_in_shard(good, sizeof(good), "/g/", 77, 0);
	path_in_shard(odd, sizeof(odd), "/o/", 77, 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(sl_acquire(good, 10, 1000, 1000 + 100 * i), 1);
		ck_assert_int_eq(sl_acquire(odd, 10, 1000, 1000), 1);
	}
	freeReplyObject(test_cmd(C, "PEXPIRE %s 600000", test_sl_key(good)));
	freeReplyObject(test_cmd(C, "PEXPIRE %s 600000", test_sl_key(odd)));
	freeReplyObject(test_cmd(C, "ZADD %s +inf forever", test_sl_key(odd)));
	/* at 12150 (1000 ms window, 10 s horizon): entries <= 1150 go, 2 of good's, 3 of odd's */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 12150, &res), 0);
	ck_assert_int_eq(res.entries, 5);
	ck_assert_int_eq(log_count(good), 1);
	ck_assert_int_eq(log_count(odd), 1);
	ck_assert_int_eq(due_of("sliding_log", good), 1200 + 1000 + 10000);
	ck_assert_int_eq(due_of("sliding_log", odd), 12150 + 60000);
	worker_free(w);
}
END_TEST

static Suite *worker_suite(void)
{
	Suite *s = suite_create("worker");
	TCase *tc = tcase_create("drain");

	tcase_add_unchecked_fixture(tc, suite_up, suite_down);
	tcase_add_checked_fixture(tc, flush, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, drain_table, 0, sizeof(table) / sizeof(table[0]));
	tcase_add_test(tc, drain_twice_same_instant);
	tcase_add_test(tc, drain_empty_bucket_earns_no_credit);
	tcase_add_test(tc, drain_older_now_is_stored_time);
	tcase_add_test(tc, drain_many_buckets_exact);
	tcase_add_test(tc, drain_by_recorded_parameters);
	tcase_add_test(tc, drain_follows_the_clients_new_rate);
	tcase_add_test(tc, drain_path_with_nul);
	tcase_add_test(tc, drain_skips_wrong_type_keys);
	tcase_add_loop_test(tc, drain_meta_is_the_clients, 0, TEST_N(meta_paths));
	suite_add_tcase(s, tc);

	tc = tcase_create("due");
	tcase_add_unchecked_fixture(tc, suite_up, suite_down);
	tcase_add_checked_fixture(tc, flush, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, due_cost_follows_what_is_due);
	tcase_add_test(tc, due_poll_finds_a_new_path);
	tcase_add_test(tc, due_backlog_in_one_shard);
	tcase_add_test(tc, drain_budget_resumes);
	tcase_add_test(tc, sweep_visits_every_shard);
	tcase_add_test(tc, bad_registry_leaves_the_rest);
	tcase_add_test(tc, redis_paused_mid_pass);
	tcase_add_test(tc, redis_down_is_an_error_not_a_crash);
	tcase_add_test(tc, status_counters);
	tcase_add_test(tc, skew_written_into_every_shard);
	tcase_add_test(tc, skew_copy_of_another_type);
	tcase_add_test(tc, noscript_after_script_flush);
	tcase_add_test(tc, reconnect_after_connection_killed);
	tcase_add_test(tc, cancelled_requests_refused);
	suite_add_tcase(s, tc);

	/* the other algorithms' shard jobs (each algorithm's own suite tests its script) */
	tc = tcase_create("prune");
	tcase_add_unchecked_fixture(tc, suite_up, suite_down);
	tcase_add_checked_fixture(tc, flush, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, prune_window_boundary);
	tcase_add_test(tc, prune_registry_cleanup_of_expired_keys);
	tcase_add_test(tc, prune_sliding_counter);
	tcase_add_test(tc, repair_fixed_window);
	tcase_add_test(tc, reclaim_token_bucket);
	suite_add_tcase(s, tc);

	tc = tcase_create("foreign");
	tcase_add_unchecked_fixture(tc, suite_up, suite_down);
	tcase_add_checked_fixture(tc, flush, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, foreign_leaky_bucket_seed004);
	tcase_add_test(tc, foreign_leaky_bucket_brace_in_key);
	tcase_add_test(tc, foreign_sliding_logs_by_scan);
	tcase_add_test(tc, foreign_fixed_window_seed001);
	tcase_add_test(tc, foreign_bad_path_fails_alone);
	tcase_add_test(tc, stored_bad_rule_stops_nothing);
	tcase_add_test(tc, own_log_with_inf_entry_not_due_every_tick);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(worker_suite());
}

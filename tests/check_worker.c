/*
 * Integration suites of the worker against a real redis-server: drain
 * exactness (DESIGN.md: floor(rate x busy time) +-1, whatever the tick,
 * idempotent at one instant, no credit while empty), prune at the window
 * boundary, registry clean-up, budgets and cursors, rule changes from the next
 * tick, NOSCRIPT and reconnection.  Client state is written with the client
 * scripts at explicit times, exactly as an application would.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
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

/* Client acquire of a leaky bucket at an explicit time (EVALSHA, as an application calls it); returns `allowed`. */
static long long lb_acquire(const char *path, long cap, const char *rate, long n, long long now)
{
	return test_acquire(C, TEST_EVALSHA, "leaky_bucket", path, now, test_num(cap), rate, test_num(n), NULL);
}

static long long sl_acquire(const char *path, long limit, long window, long long now)
{
	return test_acquire(C, TEST_EVALSHA, "sliding_log", path, now, test_num(limit), test_num(window), NULL);
}

static long long level(const char *path)
{
	return test_cmd_int(C, "ZCARD sluice:{%s}:leaky_bucket", path);
}

static long long log_count(const char *path)
{
	return test_cmd_int(C, "ZCARD sluice:{%s}:sliding_log", path);
}

static void fill(const char *path, long cap, const char *rate, long entries, long long now)
{
	for (long i = 0; i < entries; i++)
		ck_assert_int_eq(lb_acquire(path, cap, rate, 1, now), 1);
}

static uint64_t drain_at(struct worker *w, long long now)
{
	struct worker_result res;

	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, now, &res), 0);
	ck_assert_int_eq(res.sweep_done, 1);
	return res.entries;
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
	{ 3, "0.001", 3, 1000, 999000, 3 },   /* 1 per 1000 s, not yet */
	{ 3, "0.001", 3, 1000, 1000000, 2 },
};

START_TEST(drain_table)
{
	struct worker *w = new_worker(500);
	const long long t0 = 1000000;

	leaky_rule("b", "/b", table[_i].cap, table[_i].rate);
	fill("/b", table[_i].cap, table[_i].rate, table[_i].entries, t0);
	ck_assert_int_eq(level("/b"), table[_i].entries);
	for (long t = table[_i].tick; t <= table[_i].until; t += table[_i].tick)
		drain_at(w, t0 + t);
	ck_assert_msg(level("/b") == table[_i].left, "row %d: %lld left, want %ld", _i, level("/b"),
		      table[_i].left);
	worker_free(w);
}
END_TEST

START_TEST(drain_twice_same_instant)
{
	struct worker *w = new_worker(500);

	leaky_rule("b", "/b", 10, "1");
	fill("/b", 10, "1", 10, 5000);
	ck_assert_int_eq(drain_at(w, 7500), 2);
	ck_assert_int_eq(drain_at(w, 7500), 0);
	ck_assert_int_eq(level("/b"), 8);
	ck_assert_int_eq(drain_at(w, 8000), 1); /* the half entry carried: 2.5 + 0.5 */
	ck_assert_int_eq(level("/b"), 7);
	worker_free(w);
}
END_TEST

START_TEST(drain_empty_bucket_earns_no_credit)
{
	struct worker *w = new_worker(500);

	leaky_rule("b", "/b", 10, "1");
	fill("/b", 10, "1", 2, 0);
	ck_assert_int_eq(drain_at(w, 2000), 2); /* empty at 2 s */
	ck_assert_int_eq(test_cmd_int(C, "EXISTS sluice:{/b}:leaky_bucket"), 0);
	/* the meta stays as the time mark: last = the drain's time, carry 0 */
	test_check_cmd(__FILE__, __LINE__, C, "{\"2000\", \"0\"}", "HMGET sluice:{/b}:leaky_bucket:meta last carry");
	ck_assert_int_eq(test_cmd_int(C, "SISMEMBER sluice:registry:leaky_bucket /b"), 0);
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

	leaky_rule("b", "/b", 10, "1");
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
	struct worker *w = new_worker(7); /* many small batches */
	char path[32];
	struct worker_status st;

	leaky_rule("m", "/m/*", 5, "1");
	for (int i = 0; i < 100; i++) {
		snprintf(path, sizeof(path), "/m/%d", i);
		fill(path, 5, "1", 3, 0);
	}
	ck_assert_int_eq(drain_at(w, 1000), 100);
	ck_assert_int_eq(drain_at(w, 1000), 0);
	ck_assert_int_eq(drain_at(w, 3000), 200);
	ck_assert_int_eq(test_cmd_int(C, "SCARD sluice:registry:leaky_bucket"), 0);
	/* only the rules hash, version and epoch remain, and each bucket's time mark (its meta, for SKEW_MS) */
	ck_assert_int_eq(test_cmd_int(C, "DBSIZE"), 103);
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].entries, 300);
	ck_assert_int_eq(st.job[WORKER_DRAIN].emptied, 100);
	ck_assert_int_eq(st.job[WORKER_DRAIN].sweeps, 3);
	ck_assert_int_eq(st.job[WORKER_DRAIN].paths, 300);
	ck_assert_int_eq(st.job[WORKER_DRAIN].errors, 0);
	worker_free(w);
}
END_TEST

/* A path holding a NUL byte is drained by the glob rule that matches it (fnmatch could not see past the NUL). */
START_TEST(drain_path_with_nul)
{
	struct worker *w = new_worker(500);
	static const char path[] = "/api/x\0y", key[] = "sluice:{/api/x\0y}:leaky_bucket",
			  meta[] = "sluice:{/api/x\0y}:leaky_bucket:meta";
	const char *argv[] = { key, meta, "sluice:registry:leaky_bucket", path, "10", "1", "1", "1000" };
	size_t lens[] = { sizeof(key) - 1, sizeof(meta) - 1, 28, sizeof(path) - 1, 2, 1, 1, 4 };
	redisReply *r;

	leaky_rule("api", "/api/*", 10, "1");
	for (int i = 0; i < 3; i++) {
		r = test_script_argv(C, TEST_EVALSHA, "leaky_bucket", 3, 8, argv, lens);
		ck_assert_int_eq(test_script_allowed(r, "leaky_bucket"), 1);
	}
	ck_assert_int_eq(drain_at(w, 3000), 2); /* 1 per second for 2 s */
	r = redisCommand(C, "ZCARD %b", key, sizeof(key) - 1);
	ck_assert_int_eq(r->integer, 1);
	freeReplyObject(r);
	worker_free(w);
}
END_TEST

START_TEST(drain_leaves_unruled_paths)
{
	struct worker *w = new_worker(500);
	struct worker_result res;

	leaky_rule("b", "/b", 10, "1");
	log_rule("l", "/other", 5, 1000);
	fill("/b", 10, "1", 3, 0);
	fill("/norule", 10, "1", 3, 0);
	fill("/other", 10, "1", 3, 0); /* a leaky bucket at a path whose rule is a sliding log */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 2000, &res), 0);
	ck_assert_int_eq(res.entries, 2);
	ck_assert_int_eq(res.paths, 3);
	ck_assert_int_eq(res.unmatched, 2);
	ck_assert_int_eq(level("/b"), 1);
	ck_assert_int_eq(level("/norule"), 3);
	ck_assert_int_eq(level("/other"), 3);
	worker_free(w);
}
END_TEST

START_TEST(drain_skips_wrong_type_keys)
{
	struct worker *w = new_worker(500);
	struct worker_result res;

	leaky_rule("m", "/m/*", 10, "1");
	fill("/m/ok", 10, "1", 3, 0);
	/* another limiter's string under our bucket name: skipped, not fatal */
	freeReplyObject(test_cmd(C, "SET sluice:{/m/str}:leaky_bucket 7"));
	freeReplyObject(test_cmd(C, "SADD sluice:registry:leaky_bucket /m/str"));
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 2000, &res), 0);
	ck_assert_int_eq(res.entries, 2);
	ck_assert_int_eq(res.skipped, 1);
	ck_assert_int_eq(level("/m/ok"), 1);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS sluice:{/m/str}:leaky_bucket"), 1);
	worker_free(w);
}
END_TEST

START_TEST(drain_rule_change_next_tick)
{
	struct worker *w = new_worker(500);

	leaky_rule("b", "/b", 100, "1");
	fill("/b", 100, "1", 50, 0);
	ck_assert_int_eq(drain_at(w, 1000), 1);
	leaky_rule("b", "/b", 100, "10"); /* an operator raises the rate */
	ck_assert_int_eq(drain_at(w, 2000), 10);
	ck_assert_int_eq(level("/b"), 39);
	worker_free(w);
}
END_TEST

START_TEST(drain_budget_resumes_from_cursor)
{
	struct worker *w = new_worker(10);
	struct worker_result res;
	struct worker_status st;
	char path[32];
	uint64_t total = 0;
	int steps = 0;

	leaky_rule("m", "/m/*", 5, "1");
	for (int i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "/m/%d", i);
		fill(path, 5, "1", 2, 0);
	}
	/* a 1 us budget: one page per step, then stop and resume */
	do {
		ck_assert_int_eq(worker_step(w, WORKER_DRAIN, 1, 1000, &res), 0);
		total += res.entries;
		if (!res.sweep_done) {
			worker_status(w, &st);
			ck_assert_int_eq(st.job[WORKER_DRAIN].in_sweep, 1);
		}
		steps++;
	} while (!res.sweep_done && steps < 1000);
	ck_assert_int_gt(steps, 5);
	ck_assert_int_eq(total, 200); /* every bucket drained once, none twice */
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].sweeps, 1);
	ck_assert_int_eq(st.job[WORKER_DRAIN].in_sweep, 0);
	worker_free(w);
}
END_TEST

/* ---- prune ------------------------------------------------------------------- */

static uint64_t prune_at(struct worker *w, long long now)
{
	struct worker_result res;

	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, now, &res), 0);
	return res.entries;
}

START_TEST(prune_window_boundary)
{
	struct worker *w = new_worker(500);

	log_rule("l", "/l", 10, 1000);
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
	ck_assert_int_eq(test_cmd_int(C, "SISMEMBER sluice:registry:sliding_log /l"), 1);
	ck_assert_int_eq(prune_at(w, 16400), 1);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS sluice:{/l}:sliding_log"), 0);
	ck_assert_int_eq(test_cmd_int(C, "SISMEMBER sluice:registry:sliding_log /l"), 0);
	worker_free(w);
}
END_TEST

START_TEST(prune_registry_cleanup_of_expired_keys)
{
	struct worker *w = new_worker(500);
	struct worker_result res;

	log_rule("l", "/l/*", 10, 1000);
	for (int i = 0; i < 20; i++) {
		char p[16];

		snprintf(p, sizeof(p), "/l/%d", i);
		sl_acquire(p, 10, 1000, 0);
	}
	/* keys that vanished (TTL, manual DEL) leave stale registry members */
	freeReplyObject(test_cmd(C, "DEL sluice:{/l/3}:sliding_log sluice:{/l/4}:sliding_log"));
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 500, &res), 0);
	ck_assert_int_eq(res.entries, 0);
	ck_assert_int_eq(res.emptied, 2);
	ck_assert_int_eq(test_cmd_int(C, "SCARD sluice:registry:sliding_log"), 18);
	/* the entries at 0 leave the window at 1000, of every client within the skew horizon at 11000 */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 11000, &res), 0);
	ck_assert_int_eq(res.entries, 18);
	ck_assert_int_eq(res.emptied, 18);
	ck_assert_int_eq(test_cmd_int(C, "SCARD sluice:registry:sliding_log"), 0);
	worker_free(w);
}
END_TEST

/* ---- Redis restarts, script cache, connection loss ------------------------------ */

START_TEST(noscript_after_script_flush)
{
	struct worker *w = new_worker(500);
	struct worker_status st;

	leaky_rule("b", "/b", 10, "1");
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

	leaky_rule("b", "/b", 10, "1");
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
	worker_free(w);
}
END_TEST

/* ---- sliding counter, fixed window, token bucket ----------------------------------- */

/* One client call of `script` for `path` (its hash key and registry from the default layout, named `kind`). */
static long long acquire(const char *script, const char *kind, const char *path, const char *a1,
			 const char *a2, const char *a3, long long now)
{
	ck_assert_str_eq(kind, script); /* sluice's layouts name the keys after the algorithm */
	return test_acquire(C, TEST_EVALSHA, script, path, now, a1, a2, a3, NULL);
}

START_TEST(prune_sliding_counter)
{
	struct worker *w = new_worker(500);
	struct worker_result res;
	struct worker_status st;

	put_rule("{\"name\":\"c\",\"match\":\"/c\",\"algorithm\":\"sliding_counter\",\"limit\":10,\"window_ms\":1000,\"sub_windows\":4}");
	for (int i = 0; i < 3; i++) /* sub-window 0 (0..249 ms) */
		ck_assert_int_eq(acquire("sliding_counter", "sliding_counter", "/c", "10", "1000", "4", 0), 1);
	for (int i = 0; i < 2; i++) /* sub-window 2 (500..749 ms) */
		ck_assert_int_eq(acquire("sliding_counter", "sliding_counter", "/c", "10", "1000", "4", 600), 1);
	/* the prune acts at max(t, now - 10000): the 10 s skew horizon (lua/lib/skew.lua) */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 10999, &res), 0);
	ck_assert_int_eq(res.entries, 0); /* sub-window 0 still counts until 1000 */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 11000, &res), 0);
	ck_assert_int_eq(res.entries, 1); /* field "0" */
	ck_assert_int_eq(test_cmd_int(C, "HEXISTS sluice:{/c}:sliding_counter 0"), 0);
	ck_assert_int_eq(test_cmd_int(C, "HEXISTS sluice:{/c}:sliding_counter 2"), 1);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 11500, &res), 0);
	ck_assert_int_eq(res.entries, 1);
	ck_assert_int_eq(res.emptied, 1);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS sluice:{/c}:sliding_counter"), 0);
	ck_assert_int_eq(test_cmd_int(C, "SCARD sluice:registry:sliding_counter"), 0);
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

	put_rule("{\"name\":\"f\",\"match\":\"/f*\",\"algorithm\":\"fixed_window\",\"limit\":5,\"window_ms\":1000000}");
	ck_assert_int_eq(acquire("fixed_window", "fixed_window", "/f1", "5", "1000000", NULL, 0), 1);
	ck_assert_int_eq(acquire("fixed_window", "fixed_window", "/f2", "5", "1000000", NULL, 0), 1);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 10, &res), 0);
	ck_assert_int_eq(res.entries, 0); /* both have their TTL */
	freeReplyObject(test_cmd(C, "PERSIST sluice:{/f1}:fixed_window")); /* a counter left without one */
	ck_assert_int_eq(test_cmd_int(C, "PTTL sluice:{/f1}:fixed_window"), -1);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 10, &res), 0);
	ck_assert_int_eq(res.entries, 1);
	ck_assert_int_gt(test_cmd_int(C, "PTTL sluice:{/f1}:fixed_window"), 900000); /* the rest of its window */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 10, &res), 0);
	ck_assert_int_eq(res.entries, 0); /* idempotent */
	/* the next window, for every client within the 10 s skew horizon (lua/lib/skew.lua):
	 * both counters are stale and go */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 1009999, &res), 0);
	ck_assert_int_eq(res.emptied, 0);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 1010000, &res), 0);
	ck_assert_int_eq(res.emptied, 2);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS sluice:{/f1}:fixed_window sluice:{/f2}:fixed_window"), 0);
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

	put_rule("{\"name\":\"t\",\"match\":\"/t\",\"algorithm\":\"token_bucket\",\"capacity\":5,\"rate\":1}");
	ck_assert_int_eq(acquire("token_bucket", "token_bucket", "/t", "5", "1", "3", 0), 1); /* 2 left */
	/* full at 3000, but kept SKEW_MS longer for a client whose clock lags */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 2999 + skew, &res), 0);
	ck_assert_int_eq(res.entries, 0); /* 4.999 tokens at 2999: not full */
	ck_assert_int_eq(test_cmd_int(C, "EXISTS sluice:{/t}:token_bucket"), 1);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 3000 + skew, &res), 0);
	ck_assert_int_eq(res.entries, 1); /* full since SKEW_MS: the same as absent */
	ck_assert_int_eq(res.emptied, 1);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS sluice:{/t}:token_bucket"), 0);
	ck_assert_int_eq(test_cmd_int(C, "SCARD sluice:registry:token_bucket"), 0);
	worker_status(w, &st);
	ck_assert_str_eq(st.layout[4].name, "token_bucket");
	ck_assert_int_eq(st.layout[4].entries, 1);
	worker_free(w);
}
END_TEST

/* A registry of another type fails its layout's page, and the job goes on with the others. */
START_TEST(bad_registry_skipped)
{
	struct worker *w = new_worker(500);
	struct worker_result res, rr[WORKER__JOBS];
	int64_t us[WORKER__JOBS];
	int rc, steps = 0, reclaimed = 0;

	put_rule("{\"name\":\"t\",\"match\":\"/t\",\"algorithm\":\"token_bucket\",\"capacity\":5,\"rate\":1}");
	ck_assert_int_eq(acquire("token_bucket", "token_bucket", "/t", "5", "1", "3", 0), 1);
	freeReplyObject(test_cmd(C, "SET sluice:registry:sliding_log oops"));
	do { /* the prune job: sliding_log (bad), sliding_counter, fixed_window, token_bucket */
		rc = worker_step(w, WORKER_PRUNE, INT64_MAX, 3000 + model_skew_ms(), &res); /* full since SKEW_MS */
		reclaimed += (int)res.entries;
	} while (++steps < 4 && !res.sweep_done);
	ck_assert_int_eq(reclaimed, 1); /* the token bucket was still reached */
	ck_assert_int_eq(test_cmd_int(C, "EXISTS sluice:{/t}:token_bucket"), 0);
	(void)rc;
	/* shutdown: a sweep request is refused at once, not left waiting */
	worker_cancel_requests(w);
	ck_assert_int_eq(worker_request_sweep(w, 5000, rr, us), -ECANCELED);
	worker_free(w);
}
END_TEST

/* ---- one meta per bucket, whatever bytes the path holds ------------------------- */

/*
 * Paths whose data key sluice:{<path>}:leaky_bucket has an empty hash tag
 * (issue 8: "}x" gives "{}"), a tag that is not the path, or a plain one.
 */
static const char *const meta_paths[] = { "}x", "{}x", "}{", "x}", "/api/users" };

/*
 * The worker and the client share one meta hash: the one the client is told
 * (lua/README.md: the data key + ":meta").  With rule `*` (capacity 1000, rate
 * 1) 20 entries admitted at 10 s lose exactly 6 by 16 s, drained by the worker
 * every second, and the client's next call at 16 s leaks nothing more (issue 8
 * item 2: two metas, each applying the leak, lost 12).  A reset then leaves
 * the keyspace as it was before the first request.
 */
START_TEST(drain_meta_is_the_clients)
{
	const char *p = meta_paths[_i];
	struct worker *w = new_worker(500);
	cJSON *out = NULL;
	char *before, *after, *got, want[512];
	uint64_t drained = 0;

	leaky_rule("all", "*", 1000, "1");
	before = test_snapshot(C);
	fill(p, 1000, "1", 20, 10000);
	for (long long t = 10000; t <= 16000; t += 1000)
		drained += drain_at(w, t);
	ck_assert_msg(drained == 6, "%s: drained %llu, want 6", p, (unsigned long long)drained);
	ck_assert_int_eq(level(p), 14);
	ck_assert_int_eq(lb_acquire(p, 1000, "1", 1, 16000), 1);
	ck_assert_msg(level(p) == 15, "%s: level %lld after the client's call, want 15", p, level(p));
	test_check_cmd(__FILE__, __LINE__, C, "\"16000\"", "HGET %s last", test_lb_meta(p));
	ck_assert_int_eq(drain_at(w, 16000), 0); /* the same instant again */

	ck_assert_int_eq(reset_path(RC, L, NL, p, strlen(p), &out), 0);
	snprintf(want, sizeof(want),
		 "{\"path\":\"%s\",\"keys_removed\":2,\"entries_removed\":15,\"registries_removed\":1,\"keys\":["
		 "{\"key\":\"%s\",\"entries\":15},{\"key\":\"%s\",\"meta\":true}]}",
		 p, test_lb_key(p), test_lb_meta(p));
	got = cJSON_PrintUnformatted(out);
	ck_assert_msg(strcmp(got, want) == 0, "reset of %s:\n got  %s\n want %s", p, got, want);
	free(got);
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
		drained += drain_at(w, t);
	ck_assert_int_eq(drained, 6);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD %s", key), 14);
	ck_assert_uint_eq(shard_keyslot(meta, strlen(meta)), shard_keyslot(key, strlen(key)));
	test_check_cmd(__FILE__, __LINE__, C, "{\"16000\", \"0\"}", "HMGET %s last carry", meta);
	ck_assert_int_eq(drain_at(w, 16000), 0);
	ck_assert_int_eq(drain_at(w, 16999), 0);
	ck_assert_int_eq(drain_at(w, 17000), 1);

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
	tcase_add_test(tc, drain_leaves_unruled_paths);
	tcase_add_test(tc, drain_path_with_nul);
	tcase_add_test(tc, drain_skips_wrong_type_keys);
	tcase_add_test(tc, drain_rule_change_next_tick);
	tcase_add_test(tc, drain_budget_resumes_from_cursor);
	tcase_add_test(tc, prune_window_boundary);
	tcase_add_test(tc, prune_registry_cleanup_of_expired_keys);
	tcase_add_test(tc, noscript_after_script_flush);
	tcase_add_test(tc, reconnect_after_connection_killed);
	tcase_add_test(tc, redis_down_is_an_error_not_a_crash);
	tcase_add_test(tc, prune_sliding_counter);
	tcase_add_test(tc, repair_fixed_window);
	tcase_add_test(tc, reclaim_token_bucket);
	tcase_add_test(tc, bad_registry_skipped);
	tcase_add_loop_test(tc, drain_meta_is_the_clients, 0, TEST_N(meta_paths));
	tcase_add_test(tc, foreign_leaky_bucket_seed004);
	tcase_add_test(tc, foreign_leaky_bucket_brace_in_key);
	tcase_add_test(tc, foreign_sliding_logs_by_scan);
	tcase_add_test(tc, foreign_fixed_window_seed001);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(worker_suite());
}

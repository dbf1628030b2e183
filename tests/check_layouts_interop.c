/*
 * sluice's worker scripts on keys written the way the seed articles' clients
 * write them (../shared/seeds/README.md, examples/seeds.json): seed 001's
 * INCR/EXPIRE counters repaired, seeds 000 and 002's sliding logs and a log
 * scored in seconds pruned, seed 004's leaky bucket drained at its rate;
 * seed 004's sliding and fixed windows and RRateLimiter found by SCAN without
 * their locks; sluice's own layout (key layout 2) in the same Redis, on the same paths,
 * maintained by its own job and unseen by the seeds' layouts.  The fixture
 * and helpers are tests/script_fixture.h's.
 */
#include "tests/script_fixture.h"

#include <cjson/cJSON.h>

#include "core/layout.h"
#include "core/strbuf.h"

/* ---- interop: keys written the way the seeds' clients write them ------------------ */

/*
 * Seed 001's fixed window: INCR, then EXPIRE only when the count is 1.  With
 * `crash`, the client dies between the two calls: the counter has no TTL and,
 * as EXPIRE is only ever sent for a count of 1, never gets one.  Returns 1
 * when the client admits the request (count <= limit).
 */
static int seed001_hit(const char *key, long long limit, long long window_s, int crash)
{
	long long count = test_cmd_int(c, "INCR %s", key);

	if (count == 1 && !crash)
		freeReplyObject(test_cmd(c, "EXPIRE %s %lld", key, window_s));
	return count <= limit;
}

START_TEST(test_seed001_counter_without_ttl_repaired)
{
	const char *ok = "rate_limit:healthy", *crashed = "rate_limit:example";
	redisReply *r;
	char *before;

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(seed001_hit(ok, 3, 60, 0), 1);
	ck_assert_int_eq(seed001_hit(crashed, 3, 60, 1), 1);
	for (int i = 2; i <= 3; i++)
		ck_assert_int_eq(seed001_hit(crashed, 3, 60, 0), 1);
	/* Over the limit, and no TTL to ever end the window: blocked for good. */
	for (int i = 4; i <= 6; i++)
		ck_assert_int_eq(seed001_hit(crashed, 3, 60, 0), 0);
	ck_assert_int_eq(test_cmd_int(c, "PTTL %s", crashed), -1);
	ck_reply(fw_state_foreign(crashed, "3", "60000", ""), 6, 0, -1, -1);

	/* The repair (Redis TIME): the crashed counter gets the whole window, the
	 * healthy one keeps its TTL; they have no registry (an absent set). */
	r = ev("fixed_window_repair", 3, "rate_limit::registry", ok, crashed, "", "healthy", "60000", "example",
	       "60000", NULL);
	ck_reply(r, 1, 0, 2, 0);
	ck_pttl(crashed, 60000);
	ck_pttl(ok, 60000);
	ck_cmd("\"6\"", "GET %s", crashed);
	ck_cmd("\"3\"", "GET %s", ok);
	r = fw_state_foreign(crashed, "3", "60000", "");
	ck_assert_int_gt(test_elem_int(r, 2), 60000 - SLACK_MS);
	ck_reply(r, 6, 0, test_elem_int(r, 2), test_elem_int(r, 3));
	ck_assert_int_eq(test_cmd_int(c, "EXISTS rate_limit::registry"), 0);
	/* Idempotent. */
	before = test_snapshot(c);
	r = ev("fixed_window_repair", 3, "rate_limit::registry", ok, crashed, "", "healthy", "60000", "example",
	       "60000", NULL);
	ck_reply(r, 0, 0, 2, 0);
	ck_snapshot_same(before);
	free(before);
}
END_TEST

START_TEST(test_seed001_repaired_counter_lets_the_client_in)
{
	const char *key = "rate_limit:login";
	long long t0;

	ck_assert_int_eq(seed001_hit(key, 1, 1, 1), 1);
	ck_assert_int_eq(seed001_hit(key, 1, 1, 0), 0);
	/* A 200 ms window, in real time. */
	ck_reply(ev("fixed_window_repair", 2, "rate_limit::registry", key, "", "login", "200", NULL), 1, 0, 1, 0);
	ck_assert_int_le(test_cmd_int(c, "PTTL %s", key), 200);
	ck_assert_int_eq(seed001_hit(key, 1, 1, 0), 0); /* still in its window */
	t0 = test_now_ms();
	ck_wait_until(test_cmd_int(c, "EXISTS %s", key) == 0, 3000, "%s has not expired", key);
	ck_assert_int_ge(test_now_ms() - t0, 100); /* it lived out its window */
	/* The window is over: the client's next INCR starts a new one. */
	ck_assert_int_eq(seed001_hit(key, 1, 1, 0), 1);
	ck_assert_int_gt(test_cmd_int(c, "PTTL %s", key), 0);
}
END_TEST

/* Seed 000's check: drop scores <= now - window, count, add `now` as both
 * score and member (so one ms counts once); no registry. */
static int seed000_hit(const char *key, long long limit, long long window, long long now)
{
	long long count;

	freeReplyObject(test_cmd(c, "ZREMRANGEBYSCORE %s 0 %lld", key, now - window));
	count = test_cmd_int(c, "ZCARD %s", key);
	if (count >= limit)
		return 0;
	freeReplyObject(test_cmd(c, "ZADD %s %lld %lld", key, now, now));
	return 1;
}

START_TEST(test_seed000_log_pruned)
{
	const char *key = "limit:user1:/api/orders", *copy = "limit:user1:/api/orders:copy";

	ck_assert_int_eq(seed000_hit(key, 5, 1000, 1000), 1);
	ck_assert_int_eq(seed000_hit(key, 5, 1000, 1000), 1); /* the same member: counted once */
	ck_assert_int_eq(seed000_hit(key, 5, 1000, 1200), 1);
	ck_assert_int_eq(seed000_hit(key, 5, 1000, 1700), 1);
	ck_cmd("{\"1000\", \"1000\", \"1200\", \"1200\", \"1700\", \"1700\"}", "ZRANGE %s 0 -1 WITHSCORES", key);
	freeReplyObject(test_cmd(c, "ZUNIONSTORE %s 1 %s", copy, key));
	/* The prune removes exactly what the client itself removes at that now. */
	ck_reply(prune_unit("limit::registry", key, "user1:/api/orders", "1000", 1999, "ms"), 0, 0, 1, 0);
	ck_reply(prune_unit("limit::registry", key, "user1:/api/orders", "1000", 2000, "ms"), 1, 0, 1, 0);
	freeReplyObject(test_cmd(c, "ZREMRANGEBYSCORE %s 0 1000", copy));
	ck_cmd("{\"1200\", \"1200\", \"1700\", \"1700\"}", "ZRANGE %s 0 -1 WITHSCORES", key);
	ck_cmd("{\"1200\", \"1200\", \"1700\", \"1700\"}", "ZRANGE %s 0 -1 WITHSCORES", copy);
	/* Nobody calls any more: the prune empties it (Redis deletes the key). */
	ck_reply(prune_unit("limit::registry", key, "user1:/api/orders", "1000", 2700, "ms"), 2, 0, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", key), 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS limit::registry"), 0);
}
END_TEST

/* Seed 002's atomic version: add the request (member = UUID), then drop
 * scores <= now - window, count, and refuse when over the limit; the refused
 * request stays in the log. */
static int seed002_hit(const char *key, long long limit, long long window_s, long long now, const char *uuid)
{
	long long count;

	freeReplyObject(test_cmd(c, "ZADD %s %lld %s", key, now, uuid));
	freeReplyObject(test_cmd(c, "ZREMRANGEBYSCORE %s 0 %lld", key, now - window_s * 1000));
	count = test_cmd_int(c, "ZCARD %s", key);
	return count <= limit;
}

START_TEST(test_seed002_log_pruned)
{
	const char *key = "rate_limit:api-key-7";

	ck_assert_int_eq(seed002_hit(key, 2, 1, 1000, "5f0c6a3e-8d1b-4c7a-9e2f-0a1b2c3d4e5f"), 1);
	ck_assert_int_eq(seed002_hit(key, 2, 1, 1000, "a9d2e4f1-3b5c-4d6e-8f70-1a2b3c4d5e6f"), 1);
	ck_assert_int_eq(seed002_hit(key, 2, 1, 1500, "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"), 0);
	ck_assert_int_eq(seed002_hit(key, 2, 1, 1600, "c0ffee00-1234-4abc-9def-0123456789ab"), 0);
	ck_assert_int_eq(zcard(key), 4);
	/* Window 1 s = 1000 ms, scores in ms: at 2000 the two of 1000 go. */
	ck_reply(prune_unit("rate_limit::registry", key, "api-key-7", "1000", 1999, "ms"), 0, 0, 1, 0);
	ck_reply(prune_unit("rate_limit::registry", key, "api-key-7", "1000", 2000, "ms"), 2, 0, 1, 0);
	ck_cmd("{\"0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9\", \"c0ffee00-1234-4abc-9def-0123456789ab\"}",
	       "ZRANGE %s 0 -1", key);
	ck_reply(prune_unit("rate_limit::registry", key, "api-key-7", "1000", 2600, "ms"), 2, 0, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", key), 0);
}
END_TEST

/* Seed 004's sliding window: removeRangeByScore(0, true, now - window, false)
 * (the bound kept), add now as member and score, count; refused when over. */
static int seed004_sliding_hit(const char *key, long long limit, long long window_s, long long now)
{
	freeReplyObject(test_cmd(c, "ZREMRANGEBYSCORE %s 0 (%lld", key, now - window_s * 1000));
	freeReplyObject(test_cmd(c, "ZADD %s %lld %lld", key, now, now));
	return test_cmd_int(c, "ZCARD %s", key) <= limit;
}

START_TEST(test_seed004_sliding_pruned_as_its_client_cuts)
{
	const char *key = "slidingWindowRateLimiter:/test", *copy = "slidingWindowRateLimiter:copy";
	redisReply *r;

	ck_assert_int_eq(seed004_sliding_hit(key, 2, 1, 1000), 1);
	ck_assert_int_eq(seed004_sliding_hit(key, 2, 1, 1500), 1);
	ck_assert_int_eq(seed004_sliding_hit(key, 2, 1, 1700), 0); /* refused, and kept */
	ck_assert_int_eq(zcard(key), 3);
	freeReplyObject(test_cmd(c, "ZUNIONSTORE %s 1 %s", copy, key));
	/* At 2000 the client keeps 1000 (its bound); "exclusive" keeps it too, "inclusive" would not. */
	r = ev("sliding_log_prune", 2, "x:noregistry", key, "2000", "/test", "1000", "ms", "exclusive", NULL);
	ck_reply(r, 0, 0, 1, 0);
	freeReplyObject(test_cmd(c, "ZREMRANGEBYSCORE %s 0 (%d", copy, 1000));
	ck_cmd("{\"1000\", \"1500\", \"1700\"}", "ZRANGE %s 0 -1", key);
	ck_cmd("{\"1000\", \"1500\", \"1700\"}", "ZRANGE %s 0 -1", copy);
	ck_reply(ev("sliding_log_prune", 2, "x:noregistry", key, "2001", "/test", "1000", "ms", "exclusive", NULL), 1, 0, 1,
		 0);
	ck_cmd("{\"1500\", \"1700\"}", "ZRANGE %s 0 -1", key);
	/* the client at 2000 would have counted 1000, 1500, 1700 and itself: refused either way */
	ck_assert_int_eq(seed004_sliding_hit(copy, 2, 1, 2000), 0);
	ck_assert_int_eq(zcard(copy), 4);
	/* "inclusive", the default, takes the bound: what seeds 000 and 002 cut */
	freeReplyObject(test_cmd(c, "ZADD %s 1001 1001", key));
	ck_reply(ev("sliding_log_prune", 2, "x:noregistry", key, "2001", "/test", "1000", "ms", "inclusive", NULL), 1, 0, 1,
		 0);
	ck_reply(ev("sliding_log_prune", 2, "x:noregistry", key, "2700", "/test", "1000", "ms", NULL), 2, 0, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", key), 0);
	r = ev("sliding_log_prune", 2, "x:noregistry", key, "2000", "/test", "1000", "ms", "open", NULL);
	ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
	ck_assert_str_eq(r->str, "ERR sluice: cut must be \"inclusive\" or \"exclusive\" (where the limiter's clients cut)");
	freeReplyObject(r);
}
END_TEST

START_TEST(test_log_in_seconds_pruned)
{
	/* A limiter that scores in seconds (fractions allowed), with a registry. */
	const char *key = "ratelimit:s:/p";

	freeReplyObject(test_cmd(c, "ZADD %s 9.001 a 9.5 b 10 c 10.999 d", key));
	freeReplyObject(test_cmd(c, "SADD ratelimit:s:paths /p"));
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 10000, "s"), 0, 0, 1, 0);
	/* 10001 - 1000 ms = 9.001 s: that score is gone (<=), exactly. */
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 10001, "s"), 1, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 10499, "s"), 0, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 10500, "s"), 1, 0, 1, 0);
	ck_cmd("{\"c\", \"d\"}", "ZRANGE %s 0 -1", key);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 11998, "s"), 1, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 11999, "s"), 1, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s ratelimit:s:paths", key), 0);
	/* Today's clock in seconds needs all 17 digits of the cut-off. */
	freeReplyObject(test_cmd(c, "ZADD %s 1700000000.001 a 1700000000.002 b 1700000000.5 c", key));
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "60000", 1700000060000LL, "s"), 0, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "60000", 1700000060001LL, "s"), 1, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "60000", 1700000060002LL, "s"), 1, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "60000", 1700000060499LL, "s"), 0, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "60000", 1700000060500LL, "s"), 1, 0, 1, 0);
	/* Read as ms, the same log would have lost everything at once. */
	freeReplyObject(test_cmd(c, "ZADD %s 9.001 a 9.5 b", key));
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 1011, "ms"), 2, 0, 1, 0);
}
END_TEST

/*
 * Seed 004's leaky bucket: the client adds `now` (score = member = ms) to
 * LeakyBucket:<path> while ZCARD < capacity, and puts the path in
 * LeakyBucket::pathSet.  sluiced drains it with leaky_bucket_drain.lua and a
 * meta hash of its own, sluice:{<tag of the key's slot>}:seed004_meta:<key>
 * (core/slottag.h; the same slot: "4be" for LeakyBucket:/test, slot 2094, and
 * "Vv" for LeakyBucket:/t, slot 14920).  A client
 * that keeps knocking (every 10 ms) is admitted exactly as often as the drain
 * leaks: floor(rate * busy time) entries, whatever the tick.
 * (These layouts' keys are their clients'; sluice's own layout, key layout
 * 2, sits beside them: test_own_layout_beside_the_seeds.)
 */
struct seed004_case {
	const char *rate;
	long long rate_num, rate_den; /* rate = num / den per second */
	long long tick_ms;
	long long until;
};

static const struct seed004_case seed004_cases[] = {
	{ "1", 1, 1, 250, 10000 },     /* the article's own rule: 10, 1 per second */
	{ "1", 1, 1, 1000, 10000 },    /* ticking once a second, as its leakWater does */
	{ "2.5", 5, 2, 100, 10000 },   { "2.5", 5, 2, 1000, 10000 }, { "0.5", 1, 2, 300, 10000 },
	{ "0.16666666666666666", 1, 6, 370, 30000 },
};

static int seed004_hit(const char *key, const char *reg, const char *path, long long cap, long long now)
{
	freeReplyObject(test_cmd(c, "SADD %s %s", reg, path));
	if (test_cmd_int(c, "ZCARD %s", key) >= cap)
		return 0;
	freeReplyObject(test_cmd(c, "ZADD %s %lld %lld", key, now, now));
	return 1;
}

START_TEST(test_seed004_leaky_bucket_drained_at_rate)
{
	const struct seed004_case *sc4 = &seed004_cases[_i];
	const char *key = "LeakyBucket:/test", *meta = "sluice:{4be}:seed004_meta:LeakyBucket:/test";
	const char *reg = "LeakyBucket::pathSet", *path = "/test";
	const long long cap = 10, first_tick = 100;
	long long admitted = 0, leaked = 0, last_tick = first_tick;

	for (long long t = 0; t <= sc4->until; t += 10) {
		if (t >= first_tick && (t - first_tick) % sc4->tick_ms == 0) {
			redisReply *r;

			/* Before the tick the client has taken every slot that leaked. */
			if (t > first_tick)
				ck_assert_int_eq(zcard(key), cap);
			ck_assert_int_eq(admitted - cap, leaked);
			r = ev("leaky_bucket_drain", 3, reg, key, meta, num(t), path, sc4->rate, NULL);
			leaked += test_elem_int(r, 0);
			ck_assert_int_eq(test_elem_int(r, 1), 0);
			freeReplyObject(r);
			/* The meter: floor(rate * busy time) since the first tick. */
			ck_assert_msg(leaked == sc4->rate_num * (t - first_tick) / (sc4->rate_den * 1000),
				      "rate %s, tick %lld: %lld leaked by %lld", sc4->rate, sc4->tick_ms, leaked, t);
			last_tick = t;
		}
		admitted += seed004_hit(key, reg, path, cap, t);
	}
	ck_assert_int_eq(admitted - cap, sc4->rate_num * (last_tick - first_tick) / (sc4->rate_den * 1000));
	ck_assert_int_gt(leaked, 0);
	ck_assert_int_eq(in_set(reg, path), 1);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s last", meta), 1);
}
END_TEST

START_TEST(test_seed004_admissions_at_the_leak_times)
{
	/* Rate 1, drained every 250 ms from 100: a leak at 1100, 2100, ...; the
	 * knocking client gets in at exactly those instants and at no other. */
	const char *key = "LeakyBucket:/t", *meta = "sluice:{Vv}:seed004_meta:LeakyBucket:/t";
	const char *reg = "LeakyBucket::pathSet";
	long long got[16], n = 0;

	for (long long t = 0; t <= 5000; t += 10) {
		if (t >= 100 && (t - 100) % 250 == 0)
			freeReplyObject(ev("leaky_bucket_drain", 3, reg, key, meta, num(t), "/t", "1", NULL));
		if (seed004_hit(key, reg, "/t", 10, t) && t >= 100) {
			ck_assert_int_lt(n, 16);
			got[n++] = t;
		}
	}
	ck_assert_int_eq(n, 4);
	for (long long i = 0; i < n; i++)
		ck_assert_int_eq(got[i], 1100 + 1000 * i);
	/* The oldest went first: what is left is 40..90 and the four late ones. */
	ck_cmd("{\"40\", \"50\", \"60\", \"70\", \"80\", \"90\", \"1100\", \"2100\", \"3100\", \"4100\"}",
	       "ZRANGE %s 0 -1", key);
	ck_cmd("{\"4100\", \"0\"}", "HMGET %s last carry", meta);
}
END_TEST

/* ---- sluice's own layout beside the seeds' --------------------------------------- */

/* The layouts of examples/seeds.json after sluice's own (prefix "sluice:"). */
static void seed_layouts(struct layout **all, size_t *n)
{
	char *json = test_read_src("examples/seeds.json", NULL);
	cJSON *doc = json ? cJSON_Parse(json) : NULL;
	char *layouts = doc ? cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(doc, "layouts")) : NULL;

	ck_assert_msg(layouts != NULL, "examples/seeds.json: no layouts");
	test_layouts("sluice:", layouts, all, n);
	free(layouts);
	cJSON_Delete(doc);
	free(json);
}

/* A layout of `all` by name. */
static const struct layout *layout_named(const struct layout *all, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(all[i].name, name) == 0)
			return &all[i];
	ck_abort_msg("no layout %s", name);
	return NULL;
}

/* Keys SCAN MATCH glob [TYPE type] finds, sorted, as {"a", "b"}, into buf. */
static const char *scan_all(const char *glob, const char *type, char *buf, size_t cap)
{
	char *names[64], cursor[32] = "0";
	redisReply *kept[64];
	size_t n = 0, nk = 0, k = 0;

	do {
		redisReply *r = type ? test_cmd(c, "SCAN %s MATCH %s TYPE %s COUNT 100", cursor, glob, type)
				     : test_cmd(c, "SCAN %s MATCH %s COUNT 100", cursor, glob);

		ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		for (size_t i = 0; i < r->element[1]->elements && n < 64; i++)
			if (!test_lag_only(c, r->element[1]->element[i]->str)) /* virtual time's clock lag */
				names[n++] = r->element[1]->element[i]->str;
		ck_assert_uint_lt(nk, 64);
		kept[nk++] = r;
	} while (strcmp(cursor, "0") != 0);
	qsort(names, n, sizeof(names[0]), test_cmp_str);
	k += (size_t)snprintf(buf, cap, "{");
	for (size_t i = 0; i < n && k < cap; i++)
		k += (size_t)snprintf(buf + k, cap - k, "%s\"%s\"", i ? ", " : "", names[i]);
	if (k < cap)
		snprintf(buf + k, cap - k, "}");
	for (size_t i = 0; i < nk; i++)
		freeReplyObject(kept[i]);
	return buf;
}

/*
 * sluice's own leaky buckets (key layout 2) on the very paths the seeds'
 * clients use, in one Redis with seeds 000, 001, 002 and 004: each layout
 * is maintained by its own job at its own rate, and none sees the other's
 * keys.  Seed 004's client and sluice's client both knock every 10 ms on
 * "/test" for 5 s; the batch drain of the seed-004 layout runs at its rule's
 * rate (1/s, examples/seeds.json), the shard job of sluice's own at the
 * 2/s its client applies (recorded in its meta), every 250 ms from 100.
 */
START_TEST(test_own_layout_beside_the_seeds)
{
	const char *own_paths[] = { "/test", "user1:/api/orders", "api-key-7", "login" };
	struct layout *all;
	size_t nall;
	const struct layout *l004, *own;
	struct strbuf fkey = { 0 }, fmeta = { 0 }, okey = { 0 }, ometa = { 0 }, oreg = { 0 }, glob = { 0 };
	long long fadmitted = 0, oadmitted = 0, fleaked = 0, oleaked = 0, last_tick = 100;
	char want[1024], got[1024];

	seed_layouts(&all, &nall);
	l004 = layout_named(all, nall, "seed004-leaky");
	own = layout_named(all, nall, "leaky_bucket");
	ck_assert_int_eq(own->foreign, 0);
	ck_assert_int_eq(layout_key(l004, "/test", 5, 0, &fkey), 0);
	ck_assert_int_eq(layout_key(l004, "/test", 5, 1, &fmeta), 0);
	ck_assert_int_eq(layout_key(own, "/test", 5, 0, &okey), 0);
	ck_assert_int_eq(layout_key(own, "/test", 5, 1, &ometa), 0);
	ck_assert_int_eq(layout_registry_key(own, "/test", 5, &oreg), 0);
	ck_assert_str_eq(fkey.p, "LeakyBucket:/test");
	ck_assert_str_eq(okey.p, test_lb_key("/test"));
	ck_assert_str_eq(ometa.p, test_lb_meta("/test"));
	ck_assert_str_eq(oreg.p, test_registry("leaky_bucket", "/test"));

	/* The other seeds' clients, and sluice's own buckets on their paths. */
	ck_assert_int_eq(seed000_hit("limit:user1:/api/orders", 5, 1000, 1000), 1);
	ck_assert_int_eq(seed001_hit("rate_limit:login", 5, 60, 0), 1);
	ck_assert_int_eq(seed002_hit("rate_limit:api-key-7", 2, 1, 1000, "5f0c6a3e-8d1b-4c7a-9e2f-0a1b2c3d4e5f"), 1);
	/* Seed 004's sliding and fixed windows with their RLocks held (hashes, under the
	 * same prefixes), and its token bucket, Redisson's RRateLimiter (tests/seeds004_e2e.py
	 * drives all three as the article writes them). */
	freeReplyObject(test_cmd(c, "HSET slidingWindowRateLimiter:LOCK:/test 7a3f0c2e:1 1"));
	freeReplyObject(test_cmd(c, "ZADD slidingWindowRateLimiter:/test 1000 1000"));
	freeReplyObject(test_cmd(c, "HSET fixedWindowRateLimiter:LOCK:/test 7a3f0c2e:1 1"));
	freeReplyObject(test_cmd(c, "INCR fixedWindowRateLimiter:/test"));
	freeReplyObject(test_cmd(c, "HSET TokenBucketRateLimiter:/test rate 10 interval 1000 keepAliveTime 0 type 0"));
	freeReplyObject(test_cmd(c, "SET {TokenBucketRateLimiter:/test}:value 9"));
	freeReplyObject(test_cmd(c, "ZADD {TokenBucketRateLimiter:/test}:permits 1000 %b", "\x10" "0123456789abcdef" "\x01\0\0\0",
				 (size_t)21));
	for (int i = 1; i < 4; i++)
		ck_assert_int_eq(test_acquire(c, TEST_EVAL, "leaky_bucket", own_paths[i], 1000, "5", "1", NULL), 1);

	for (long long t = 0; t <= 5000; t += 10) {
		if (t >= 100 && (t - 100) % 250 == 0) {
			redisReply *r = ev("leaky_bucket_drain", 3, l004->registry, fkey.p, fmeta.p, num(t), "/test", "1",
					   NULL);

			fleaked += test_elem_int(r, 0);
			freeReplyObject(r);
			r = ev("leaky_bucket_drain_shard", 1, oreg.p, num(t + test_skew_ms()), "500", NULL); /* horizon t */
			oleaked += test_elem_int(r, 0);
			freeReplyObject(r);
			/* the meter of each, at its own rate: floor(rate * busy time) */
			ck_assert_int_eq(fleaked, (t - 100) / 1000);
			last_tick = t;
		}
		fadmitted += seed004_hit(fkey.p, l004->registry, "/test", 10, t);
		oadmitted += test_acquire(c, TEST_EVAL, "leaky_bucket", "/test", t, "10", "2", NULL);
	}
	/* Seed 004's: 10, then one per leak of its drain.  sluice's: 10 at 0, then
	 * one every 500 ms from its own last (0) to 5000, by its client's leak or
	 * the job's, whichever came first. */
	ck_assert_int_eq(fadmitted - 10, (last_tick - 100) / 1000);
	ck_assert_int_eq(fleaked, fadmitted - 10);
	ck_assert_int_eq(oadmitted, 10 + 10);
	ck_assert_int_eq(zcard(okey.p), 10);
	ck_assert_int_eq(zcard(fkey.p), 10);
	ck_cmd("{\"10\", \"2\", \"\"}", "HMGET %s capacity rate rule", ometa.p);
	/* The clients stop; the jobs go on.  sluice's bucket (10 entries, last
	 * 5000) is drained by its job at 2/s, emptied at the tick after 10000;
	 * seed 004's at 1/s keeps its meter, floor((t - 100) / 1000). */
	oleaked = 0;
	for (long long t = last_tick + 250; t <= 10100; t += 250) {
		redisReply *r = ev("leaky_bucket_drain", 3, l004->registry, fkey.p, fmeta.p, num(t), "/test", "1", NULL);

		fleaked += test_elem_int(r, 0);
		freeReplyObject(r);
		ck_assert_int_eq(fleaked, (t - 100) / 1000);
		r = ev("leaky_bucket_drain_shard", 1, oreg.p, num(t + test_skew_ms()), "500", NULL); /* horizon t */
		oleaked += test_elem_int(r, 0);
		freeReplyObject(r);
		ck_assert_int_eq(oleaked, t < 10000 ? (t - 5000) * 2 / 1000 : 10);
	}
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", okey.p), 0);
	ck_assert_int_eq(zcard(fkey.p), 10 - (10 - (last_tick - 100) / 1000));

	/* Each foreign layout finds only its client's keys; sluice's own are not among them. */
	for (size_t i = 0; i < nall; i++) {
		const struct layout *l = &all[i];

		if (!l->foreign || !l->scan)
			continue;
		glob.len = 0;
		ck_assert_int_eq(layout_scan_glob(l, "*", &glob), 0);
		scan_all(glob.p, l->scan_type, got, sizeof(got));
		if (strcmp(l->name, "seed000-log") == 0)
			ck_assert_str_eq(got, "{\"limit:user1:/api/orders\"}");
		else if (strcmp(l->name, "seed002-log") == 0)
			ck_assert_str_eq(got, "{\"rate_limit:api-key-7\"}");
		else if (strcmp(l->name, "seed001-fixed") == 0)
			ck_assert_str_eq(got, "{\"rate_limit:login\"}");
		/* the RLocks are hashes: TYPE zset and string leave them out */
		else if (strcmp(l->name, "seed004-sliding") == 0)
			ck_assert_str_eq(got, "{\"slidingWindowRateLimiter:/test\"}");
		else if (strcmp(l->name, "seed004-fixed") == 0)
			ck_assert_str_eq(got, "{\"fixedWindowRateLimiter:/test\"}");
		/* the limiter's hash; its value and permits start with '{', and are no hash */
		else if (strcmp(l->name, "seed004-token") == 0)
			ck_assert_str_eq(got, "{\"TokenBucketRateLimiter:/test\"}");
		else
			ck_abort_msg("unexpected scan layout %s", l->name);
	}
	ck_cmd("{\"/test\"}", "SMEMBERS %s", l004->registry);
	/* sluice's keys: each own path's state, meta and its shard's due index, but
	 * nothing of the emptied "/test" (its drain took the meta too); seed 004's meta. */
	scan_all("sluice:*", NULL, got, sizeof(got));
	{
		char *names[16];
		size_t n = 0, k = 0;
		struct strbuf b[12] = { { 0 } };

		for (int i = 0; i < 4; i++) {
			size_t len = strlen(own_paths[i]);

			ck_assert_int_eq(layout_key(own, own_paths[i], len, 0, &b[3 * i]) ||
						 layout_key(own, own_paths[i], len, 1, &b[3 * i + 1]) ||
						 layout_registry_key(own, own_paths[i], len, &b[3 * i + 2]),
					 0);
			for (int j = 0; j < 3; j++)
				if (i > 0)
					names[n++] = b[3 * i + j].p;
		}
		names[n++] = fmeta.p;
		qsort(names, n, sizeof(names[0]), test_cmp_str);
		k += (size_t)snprintf(want, sizeof(want), "{");
		for (size_t i = 0; i < n; i++)
			if (i == 0 || strcmp(names[i], names[i - 1]) != 0) /* two paths may share a shard's index */
				k += (size_t)snprintf(want + k, sizeof(want) - k, "%s\"%s\"", k > 1 ? ", " : "", names[i]);
		snprintf(want + k, sizeof(want) - k, "}");
		for (int i = 0; i < 12; i++)
			strbuf_free(&b[i]);
	}
	ck_assert_str_eq(got, want);
	strbuf_free(&fkey);
	strbuf_free(&fmeta);
	strbuf_free(&okey);
	strbuf_free(&ometa);
	strbuf_free(&oreg);
	strbuf_free(&glob);
	layouts_free(all, nall);
}
END_TEST

static Suite *layouts_interop_suite(void)
{
	Suite *s = suite_create("layouts_interop");
	TCase *tc;

	tc = test_tcase(s, "interop", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_seed001_counter_without_ttl_repaired);
	tcase_add_test(tc, test_seed001_repaired_counter_lets_the_client_in);
	tcase_add_test(tc, test_seed000_log_pruned);
	tcase_add_test(tc, test_seed002_log_pruned);
	tcase_add_test(tc, test_log_in_seconds_pruned);
	tcase_add_test(tc, test_seed004_sliding_pruned_as_its_client_cuts);
	tcase_add_loop_test(tc, test_seed004_leaky_bucket_drained_at_rate, 0, TEST_N(seed004_cases));
	tcase_add_test(tc, test_seed004_admissions_at_the_leak_times);
	tcase_add_test(tc, test_own_layout_beside_the_seeds);
	return s;
}

int main(void)
{
	return test_run_suite(layouts_interop_suite());
}

/*
 * lua/sliding_log.lua (the client's acquire), sliding_log_prune.lua (the
 * worker's prune, with the score units of other limiters' logs) and
 * sliding_log_state.lua (the admin's read).  The fixture, helpers and time
 * conventions are tests/script_fixture.h's.
 */
#include "tests/window_trace.h"

/* ---- sliding log ------------------------------------------------------------- */

START_TEST(test_sliding_limit_3_window_1000)
{
	const char *p = "/log";
	long long ttl;

	ck_reply(sl_acquire(p, "3", "1000", "0"), 1, 2, 0, 1000);
	ck_reply(sl_acquire(p, "3", "1000", "0"), 1, 1, 0, 1000);
	ck_reply(sl_acquire(p, "3", "1000", "0"), 1, 0, 0, 1000);
	ck_assert_int_eq(zcard(test_sl_key(p)), 3);
	ck_cmd("{\"0:0\", \"0\", \"0:1\", \"0\", \"0:2\", \"0\"}", "ZRANGE %s 0 -1 WITHSCORES", test_sl_key(p));
	/* The newest entry counts until 1000, and its time (the mark) is kept
	 * SKEW_MS more. */
	ttl = test_cmd_int(c, "PTTL %s", test_sl_key(p));
	ck_assert_int_gt(ttl, 900 + SKEW_MS);
	ck_assert_int_le(ttl, 1000 + SKEW_MS);
	ck_assert_int_eq(test_cmd_int(c, "SISMEMBER %s %s", SL_REG, p), 1);

	/* Rejected requests are not added and do not extend the TTL. */
	ck_reply(sl_acquire(p, "3", "1000", "500"), 0, 0, 500, 500);
	ck_assert_int_eq(zcard(test_sl_key(p)), 3);
	ck_reply(sl_acquire(p, "3", "1000", "999"), 0, 0, 1, 1);
	ck_assert_int_eq(zcard(test_sl_key(p)), 3);
	ck_assert_int_le(test_cmd_int(c, "PTTL %s", test_sl_key(p)), ttl);
	/* The entries at 0 count for [0, 1000): gone at 1000. */
	ck_reply(sl_acquire(p, "3", "1000", "1000"), 1, 2, 0, 1000);
	ck_cmd("{\"1000:0\", \"1000\"}", "ZRANGE %s 0 -1 WITHSCORES", test_sl_key(p));
}
END_TEST

START_TEST(test_sliding_retrying_client_gets_in)
{
	const char *p = "/retrying";
	long long t;

	ck_reply(sl_acquire(p, "2", "1000", "0"), 1, 1, 0, 1000);
	ck_reply(sl_acquire(p, "2", "1000", "100"), 1, 0, 0, 900);
	/* A client hammering every 50 ms is told the exact wait, and its
	 * rejected attempts do not push the window on. */
	for (t = 150; t < 1000; t += 50) {
		ck_reply(sl_acquire(p, "2", "1000", num(t)), 0, 0, 1000 - t, 1000 - t);
		ck_assert_int_eq(zcard(test_sl_key(p)), 2);
	}
	ck_reply(sl_acquire(p, "2", "1000", "1000"), 1, 0, 0, 100);
	ck_reply(sl_acquire(p, "2", "1000", "1050"), 0, 0, 50, 50);
	ck_reply(sl_acquire(p, "2", "1000", "1100"), 1, 0, 0, 900);
}
END_TEST

START_TEST(test_sliding_older_now_is_newest)
{
	const char *p = "/older";
	long long ttl;

	ck_reply(sl_acquire(p, "3", "1000", "5000"), 1, 2, 0, 1000);
	ck_reply(sl_acquire(p, "3", "1000", "4000"), 1, 1, 0, 1000);
	ck_cmd("{\"5000:0\", \"5000\", \"5000:1\", \"5000\"}", "ZRANGE %s 0 -1 WITHSCORES", test_sl_key(p));
	/* The newest entry lives until 6000 in its clock, its mark until 16000:
	 * 12000 ms from its 4000. */
	ttl = test_cmd_int(c, "PTTL %s", test_sl_key(p));
	ck_assert_int_gt(ttl, 11900);
	ck_assert_int_le(ttl, 12000);
}
END_TEST

START_TEST(test_sliding_members_stay_unique)
{
	const char *p = "/unique";

	for (int i = 0; i < 3; i++)
		freeReplyObject(sl_acquire(p, "10", "1000", "0"));
	/* Someone removed part of that millisecond's group. */
	freeReplyObject(test_cmd(c, "ZREM %s 0:0", test_sl_key(p)));
	ck_reply(sl_acquire(p, "10", "1000", "0"), 1, 7, 0, 1000);
	ck_cmd("{\"0:1\", \"0:2\", \"0:3\"}", "ZRANGE %s 0 -1", test_sl_key(p));
}
END_TEST

START_TEST(test_sliding_limit_lowered)
{
	const char *p = "/lowered";

	for (long long t = 0; t <= 400; t += 100)
		freeReplyObject(sl_acquire(p, "10", "1000", num(t)));
	/* Limit now 3 with 5 in the window: 3 must leave it, the third oldest
	 * (at 200) at 1200. */
	ck_reply(sl_acquire(p, "3", "1000", "500"), 0, 0, 700, 500);
	ck_reply(sl_acquire(p, "3", "1000", "1199"), 0, 0, 1, 1);
	ck_reply(sl_acquire(p, "3", "1000", "1200"), 1, 0, 0, 100);
	ck_cmd("{\"300:0\", \"400:0\", \"1200:0\"}", "ZRANGE %s 0 -1", test_sl_key(p));
}
END_TEST

START_TEST(test_sliding_uses_redis_time)
{
	const char *p = "/clock";
	long long before = test_server_ms(c), after, score;
	redisReply *r;

	ck_reply(sl_acquire(p, "3", "1000", NULL), 1, 2, 0, 1000);
	after = test_server_ms(c);
	r = test_cmd(c, "ZRANGE %s 0 0 WITHSCORES", test_sl_key(p));
	score = atoll(r->element[1]->str);
	freeReplyObject(r);
	ck_assert_int_ge(score, before);
	ck_assert_int_le(score, after);
}
END_TEST

/* The prune acts at max(mark, now - SKEW_MS): a client lagging Redis by up to
 * SKEW_MS is served no earlier. */
START_TEST(test_prune_window_boundary)
{
	const char *p = "/boundary";

	ck_reply(sl_acquire(p, "3", "1000", "1000"), 1, 2, 0, 1000);
	/* At 2000 the entry has left the window of a client on time, not of one
	 * whose clock says 1999. */
	ck_reply(sl_prune1(p, "1000", 2000), 0, 0, 1, 0);
	ck_reply(sl_prune1(p, "1000", 1999 + SKEW_MS), 0, 0, 1, 0);
	ck_assert_int_eq(zcard(test_sl_key(p)), 1);
	ck_assert_int_eq(test_cmd_int(c, "SISMEMBER %s %s", SL_REG, p), 1);
	ck_reply(sl_prune1(p, "1000", 2000 + SKEW_MS), 1, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_sl_key(p)), 0);
	ck_assert_int_eq(test_cmd_int(c, "SISMEMBER %s %s", SL_REG, p), 0);
	ck_reply(sl_prune1(p, "1000", 2000 + SKEW_MS), 0, 0, 1, 0);
}
END_TEST

/* Behind Redis, the log's own timeline: the prune removes what has left the
 * window at its newest entry, never what a call served there still counts. */
START_TEST(test_prune_at_the_mark)
{
	const char *p = "/mark";

	freeReplyObject(sl_acquire(p, "3", "1000", "0"));
	freeReplyObject(sl_acquire(p, "3", "1000", "500"));
	freeReplyObject(sl_acquire(p, "3", "1000", "900"));
	/* Redis says 1500, the clients 900: all three still count for them. */
	ck_reply(sl_prune1(p, "1000", 1500), 0, 0, 1, 0);
	ck_reply(sl_acquire(p, "3", "1000", "900"), 0, 0, 100, 100);
	/* Redis 11400: a client within the horizon is served at 1400 or later. */
	ck_reply(sl_prune1(p, "1000", 11400), 1, 0, 1, 0);
	ck_cmd("{\"500:0\", \"900:0\"}", "ZRANGE %s 0 -1", test_sl_key(p));
	/* A client on time moves the mark: what left the window there goes. */
	ck_reply(sl_acquire(p, "3", "1000", "11400"), 1, 2, 0, 1000);
	ck_cmd("{\"11400:0\"}", "ZRANGE %s 0 -1", test_sl_key(p));
	ck_reply(sl_prune1(p, "1000", 11400), 0, 0, 1, 0);
}
END_TEST

/* A rejected call writes nothing: after a lowered limit refuses at 1500,
 * a client whose clock says 900 still counts the entry of 0. */
START_TEST(test_rejection_removes_nothing)
{
	const char *p = "/reject";

	freeReplyObject(sl_acquire(p, "2", "1000", "0"));
	freeReplyObject(sl_acquire(p, "2", "1000", "900"));
	ck_reply(sl_acquire(p, "1", "1000", "1500"), 0, 0, 400, 400);
	ck_assert_int_eq(zcard(test_sl_key(p)), 2);
	ck_reply(sl_acquire(p, "2", "1000", "900"), 0, 0, 100, 100);
}
END_TEST

START_TEST(test_prune_batch)
{
	/* A: entries at 0, 500, 900 (window 1000); B: registered, absent;
	 * C: entry at 0, window 5000; D: registered, a hash (another layout).
	 * Pruned at Redis 1500 + SKEW_MS: as of 1500. */
	freeReplyObject(sl_acquire("A", "10", "1000", "0"));
	freeReplyObject(sl_acquire("A", "10", "1000", "500"));
	freeReplyObject(sl_acquire("A", "10", "1000", "900"));
	freeReplyObject(sl_acquire("C", "10", "5000", "0"));
	freeReplyObject(test_cmd(c, "SADD %s B D", SL_REG));
	freeReplyObject(test_cmd(c, "HSET %s f 1", test_sl_key("D")));
	ck_reply(ev(SCRIPT_SLIDING_LOG_PRUNE, 5, SL_REG, test_sl_key("A"), test_sl_key("B"), test_sl_key("C"),
		    test_sl_key("D"), num(1500 + SKEW_MS), "A", "1000", "B", "1000", "C", "5000", "D", "1000", NULL),
		 2, 1, 4, 1);
	ck_cmd("{\"900:0\"}", "ZRANGE %s 0 -1", test_sl_key("A"));
	ck_assert_int_eq(zcard(test_sl_key("C")), 1);
	ck_cmd("{\"A\", \"C\", \"D\"}", "SORT %s ALPHA", SL_REG);
	/* Twice at one instant: nothing more. */
	ck_reply(ev(SCRIPT_SLIDING_LOG_PRUNE, 5, SL_REG, test_sl_key("A"), test_sl_key("B"), test_sl_key("C"),
		    test_sl_key("D"), num(1500 + SKEW_MS), "A", "1000", "B", "1000", "C", "5000", "D", "1000", NULL),
		 0, 0, 4, 1);
}
END_TEST

START_TEST(test_sliding_state)
{
	const char *p = "/state";
	char *before;
	redisReply *r;

	ck_reply(sl_state(p, "3", "1000", "0"), 0, 3, 0, -2);
	freeReplyObject(sl_acquire(p, "3", "1000", "0"));
	freeReplyObject(sl_acquire(p, "3", "1000", "400"));
	before = test_snapshot(c);
	r = sl_state(p, "3", "1000", "900");
	/* one window and the horizon after the entry at 400 */
	ck_assert_int_gt(test_elem_int(r, 3), 900 + SKEW_MS);
	ck_assert_int_le(test_elem_int(r, 3), 1000 + SKEW_MS);
	ck_reply(r, 2, 1, 100, test_elem_int(r, 3));
	r = sl_state(p, "3", "1000", "1000");
	ck_reply(r, 1, 2, 400, test_elem_int(r, 3));
	r = sl_state(p, "3", "1000", "1400");
	ck_reply(r, 0, 3, 0, test_elem_int(r, 3));
	/* Behind the newest entry: served at 400. */
	r = sl_state(p, "3", "1000", "100");
	ck_reply(r, 2, 1, 600, test_elem_int(r, 3));
	ck_snapshot_same(before);
	free(before);
}
END_TEST

/* ---- sliding_log_prune: score units -------------------------------------------- */

START_TEST(test_prune_unit_ms_is_the_default)
{
	/* Three identical logs; pruned with "" and no unit (sluice's own: at
	 * max(mark, now - SKEW_MS)), and "ms" (another limiter's: at now). */
	const char *paths[] = { "/a", "/b", "/c" }, *units[] = { "", NULL, "ms" };

	for (int i = 0; i < 3; i++) {
		freeReplyObject(acquire(SL, paths[i], "10", "1000", NULL, NULL, "0"));
		freeReplyObject(acquire(SL, paths[i], "10", "1000", NULL, NULL, "500"));
	}
	for (int i = 0; i < 3; i++) {
		long long skew = units[i] && units[i][0] ? 0 : SKEW_MS;

		if (skew)
			ck_reply(prune_unit(SL_REG, test_sl_key(paths[i]), paths[i], "1000", 1000, units[i]), 0, 0, 1, 0);
		ck_reply(prune_unit(SL_REG, test_sl_key(paths[i]), paths[i], "1000", 1000 + skew, units[i]), 1, 0, 1,
			 0);
		ck_cmd("{\"500:0\"}", "ZRANGE %s 0 -1", test_sl_key(paths[i]));
		ck_reply(prune_unit(SL_REG, test_sl_key(paths[i]), paths[i], "1000", 1500 + skew, units[i]), 1, 1, 1,
			 0);
	}
	ck_assert_int_eq(test_cmd_int(c, "DBSIZE"), 0);
}
END_TEST

START_TEST(test_prune_unit_us)
{
	const char *key = "log:us:/p";

	freeReplyObject(test_cmd(c, "ZADD %s 9001000 a 9001001 b 9500000 c", key));
	freeReplyObject(test_cmd(c, "SADD reg:us /p"));
	ck_reply(prune_unit("reg:us", key, "/p", "1000", 10000, "us"), 0, 0, 1, 0);
	ck_reply(prune_unit("reg:us", key, "/p", "1000", 10001, "us"), 1, 0, 1, 0);
	ck_cmd("{\"b\", \"c\"}", "ZRANGE %s 0 -1", key);
	/* "µs" in UTF-8 is the same unit. */
	ck_reply(prune_unit("reg:us", key, "/p", "1000", 10002, "\xc2\xb5s"), 1, 0, 1, 0);
	ck_reply(prune_unit("reg:us", key, "/p", "1000", 10500, "us"), 1, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s reg:us", key), 0);
	/* Today's clock in us. */
	freeReplyObject(test_cmd(c, "ZADD %s 1700000000001000 a 1700000000001001 b", key));
	ck_reply(prune_unit("reg:us", key, "/p", "60000", 1700000060000LL, "us"), 0, 0, 1, 0);
	ck_reply(prune_unit("reg:us", key, "/p", "60000", 1700000060001LL, "us"), 1, 0, 1, 0);
	ck_cmd("{\"b\"}", "ZRANGE %s 0 -1", key);
}
END_TEST

START_TEST(test_prune_unit_batch)
{
	/* The unit is for the whole batch: N logs, then the unit. */
	freeReplyObject(test_cmd(c, "ZADD s:1 9 a 10 b"));
	freeReplyObject(test_cmd(c, "ZADD s:2 9.5 a 12 b"));
	ck_reply(ev("sliding_log_prune", 3, "reg:s", "s:1", "s:2", "10500", "/1", "1000", "/2", "1000", "s", NULL),
		 2, 0, 2, 0);
	ck_cmd("{\"b\"}", "ZRANGE s:1 0 -1");
	ck_cmd("{\"b\"}", "ZRANGE s:2 0 -1");
	/* An empty batch with a unit. */
	ck_reply(ev("sliding_log_prune", 1, "reg:s", "10500", "s", NULL), 0, 0, 0, 0);
}
END_TEST

/* ---- table tests: (parameters, calls with now) -> exact replies ------------ */

static const struct algo_case algo_cases[] = {
	/* ---- sliding log ---- */
	{ "sliding log: limit 2 per 1000 ms",
	  SL,
	  "2",
	  "1000",
	  NULL,
	  /* TTL: the newest entry's window and the horizon, from the caller's now */
	  { { 0, 0, { 1, 1, 0, 1000 }, 11000 },
	    { 0, 0, { 1, 0, 0, 1000 }, 11000 },
	    { 0, 0, { 0, 0, 1000, 1000 }, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0 },
	    { 1000, 0, { 1, 1, 0, 1000 }, 11000 },
	    { 500, 0, { 1, 0, 0, 1000 }, 11500 },
	    { 1999, 0, { 0, 0, 1, 1 }, 0 },
	    { 2000, 0, { 1, 1, 0, 1000 }, 11000 },
	    END } },
};

START_TEST(test_table)
{
	check_algo_case(&algo_cases[_i]);
}
END_TEST

/* ---- the skew scenario (issue 8, item 3) ----------------------------------- */

#define SKEW_PATH "/skew"
static long long skew_left[32]; /* when each entry (by admission) left the log, Redis time */
static long long skew_r0;

static int skew_call(long long now)
{
	return (int)test_acquire(c, TEST_EVALSHA, "sliding_log", SKEW_PATH, now, "10", "10000", NULL);
}

static void skew_prune(long long r)
{
	freeReplyObject(sl_prune1(SKEW_PATH, "10000", r));
}

/* Notes the Redis time each entry (score c0 + the admission's offset) is first missed. */
static void skew_watch(long long r)
{
	redisReply *z = test_cmd(c, "ZRANGE %s 0 -1 WITHSCORES", test_sl_key(SKEW_PATH));
	long long c0 = skew_r0 - SKEW_LAG_MS;

	for (int i = 0; i < 20; i++) {
		long long score = c0 + (i / 10) * 10000 + (i % 10) * SKEW_EVERY_MS;
		int held = 0;

		for (size_t k = 1; k < z->elements; k += 2)
			held |= atoll(z->element[k]->str) == score;
		if (held)
			skew_left[i] = 0;
		else if (!skew_left[i] && r - SKEW_LAG_MS >= score)
			skew_left[i] = r;
	}
	freeReplyObject(z);
}

/*
 * 10 per 10 s, clients 5 s behind Redis (tests/window_trace.h).  The model
 * (sl_call below, by DESIGN.md's rule: served at max(now, newest entry),
 * entries live for [s, s + window)) admits at c0 + 0 .. 450 and c0 + 10000
 * .. 10450 in the clients' timeline, and an entry leaves only when the path's
 * own timeline is past its window:
 *   - the first ten, each exactly 10 s after it came, in the clients' time
 *     and in Redis's (R0 + 10000 .. 10450): the admission that takes its
 *     place removes it, not the worker, which works at max(newest entry,
 *     R - 10000) and so removes nothing while clients within the horizon
 *     still count it (the old worker removed them at R0 + 5000 and 6000:
 *     after ~6 s of the clients' time);
 *   - the last ten, when nobody calls any more, once every client within
 *     the horizon is past their window: the tick at R0 + 25000 (R - 10000 =
 *     c0 + 20000, the first one's end) and the one at R0 + 26000 (the
 *     others end by c0 + 20450); the path leaves the registry then.  Without
 *     the worker they go by the TTL, 20 s after the last admission (its
 *     window and the horizon, from its now).
 */
START_TEST(test_sl_skew_lagging_clients)
{
	for (int worker = 1; worker >= 0; worker--) {
		struct skew_run run;
		const char *what = worker ? "log with the worker" : "log without worker";

		freeReplyObject(test_cmd(c, "FLUSHALL"));
		memset(skew_left, 0, sizeof(skew_left));
		skew_r0 = (test_server_ms(c) / 10000 + 1) * 10000 + SKEW_LAG_MS;
		skew_scenario(skew_r0, test_sl_key(SKEW_PATH), skew_call, worker ? skew_prune : NULL, skew_watch,
			      &run);
		skew_check_admissions(&run, skew_r0 - SKEW_LAG_MS, what);
		for (int i = 0; i < 10; i++)
			ck_assert_msg(skew_left[i] == skew_r0 + 10000 + i * SKEW_EVERY_MS,
				      "%s: entry %d left at R0 + %lld, want R0 + %d", what, i, skew_left[i] - skew_r0,
				      10000 + i * SKEW_EVERY_MS);
		for (int i = 10; i < 20; i++)
			ck_assert_msg(skew_left[i] == (worker ? skew_r0 + (i == 10 ? 25000 : 26000) : 0),
				      "%s: entry %d left at R0 + %lld", what, i, skew_left[i] - skew_r0);
		ck_assert_int_eq(run.gone_at, (worker ? skew_r0 + 26000 : -1));
		ck_assert_int_eq(in_set(SL_REG, SKEW_PATH), !worker);
		if (!worker)
			ck_pttl(test_sl_key(SKEW_PATH), 20000);
	}
}
END_TEST

/* ---- the reference model, against the scripts over random traces ------------ */

/*
 * The sliding log of DESIGN.md and lua/README.md, written from them, cost 1
 * (sliding_log.lua takes none).  A request admitted at s counts for calls
 * served in [s, s + window); a call at now is served at t = max(now, mark),
 * the mark being the newest entry: logically nothing is ever forgotten.  What
 * Redis holds is the tail s[kept..n): an admission at t removes the entries
 * that left the window at t (t is the new mark), the prune those that left it
 * at max(mark, R - SKEW_MS), and the TTL, ending the newest entry's window +
 * SKEW_MS after the caller's now, all of them.
 */
struct sl_model {
	long long *s; /* the score of every admission, ascending */
	size_t n, cap, kept;
};

static void *sl_model_new(void)
{
	return calloc(1, sizeof(struct sl_model));
}

static void sl_model_free(void *m)
{
	free(((struct sl_model *)m)->s);
	free(m);
}

static long long sl_call(struct trace_path *p, long long now, long long want[4])
{
	struct sl_model *m = p->model;
	long long w = p->rule.window, limit = p->rule.limit;
	long long t = m->n ? model_max(now, m->s[m->n - 1]) : now;
	size_t lo = m->n; /* the first entry live at t */
	long long count;

	while (lo > 0 && m->s[lo - 1] > t - w)
		lo--;
	count = (long long)(m->n - lo);
	if (count < limit) {
		if (m->n == m->cap) {
			m->cap = m->cap ? 2 * m->cap : 64;
			m->s = realloc(m->s, m->cap * sizeof(*m->s));
			ck_assert_ptr_nonnull(m->s);
		}
		m->s[m->n++] = t;
		if (m->kept < lo)
			m->kept = lo;
		want[0] = 1, want[1] = model_max(0, limit - count - 1), want[2] = 0, want[3] = m->s[lo] + w - t;
		return t + w + SKEW_MS - now;
	}
	want[0] = 0, want[1] = model_max(0, limit - count);
	want[2] = model_max(1, m->s[lo + (size_t)(count - limit)] + w - t); /* enough have left */
	want[3] = model_max(0, m->s[lo] + w - t);
	return -1;
}

static long long sl_prune_at(struct trace_path *p, long long r, long long want[2])
{
	struct sl_model *m = p->model;
	size_t k = m->kept;

	if (k < m->n) {
		long long at = model_max(m->s[m->n - 1], r - SKEW_MS);

		while (k < m->n && m->s[k] <= at - p->rule.window)
			k++;
	}
	want[0] = (long long)(k - m->kept), want[1] = 0;
	m->kept = k;
	if (k == m->n) { /* empty or emptied: Redis drops the key, the prune the path */
		want[1] = p->registered;
		p->registered = p->exists = 0;
	}
	return -1;
}

static void sl_gone(struct trace_path *p)
{
	struct sl_model *m = p->model;

	m->kept = m->n;
}

static long long sl_edge(const struct trace_path *p)
{
	const struct sl_model *m = p->model;

	return m->kept < m->n ? m->s[m->kept] + p->rule.window : -1;
}

static const struct trace_ops sl_trace = {
	.algo = "sliding_log",
	.job = "sliding_log_prune",
	.registry = SL_REG,
	.rule = trace_window_rule,
	.job_args = trace_window_args,
	.model_new = sl_model_new,
	.model_free = sl_model_free,
	.call = sl_call,
	.job_at = sl_prune_at,
	.gone = sl_gone,
	.edge = sl_edge,
};

/* 10,000 calls per seed (tests/window_trace.h says what a trace holds). */
START_TEST(test_sl_model_traces)
{
	trace_run(&sl_trace, 1000 + (uint64_t)_i, 10000);
}
END_TEST

/* ---- validation ------------------------------------------------------------ */

static const struct bad_call bad_calls[] = {
	{ "sliding_log", 2, { SLK, SL_REG, "", "3", "1000", "9000" }, "ERR sluice: path " },
	{ "sliding_log", 2, { SLK, SL_REG, "/v", "0", "1000", "9000" }, "ERR sluice: limit " },
	{ "sliding_log", 2, { SLK, SL_REG, "/v", "2.5", "1000", "9000" }, "ERR sluice: limit " },
	{ "sliding_log", 2, { SLK, SL_REG, "/v", "3", "0", "9000" }, "ERR sluice: window_ms " },
	{ "sliding_log", 2, { SLK, SL_REG, "/v", "3", "-1000", "9000" }, "ERR sluice: window_ms " },
	{ "sliding_log", 2, { SLK, SL_REG, "/v", "3", "1000", "-1" }, "ERR sluice: now " },
	{ "sliding_log", 2, { SLK, SL_REG, "/v", "3", "1000", "now" }, "ERR sluice: now " },
	{ "sliding_log_prune", 2, { SL_REG, SLK, "9000", "/v", "0" }, "ERR sluice: window_ms " },
	{ "sliding_log_prune", 2, { SL_REG, SLK, "9000", "", "1000" }, "ERR sluice: path " },
	{ "sliding_log_prune", 2, { SL_REG, SLK, "1.5", "/v", "1000" }, "ERR sluice: now " },
	{ "sliding_log_prune", 2, { SL_REG, SLK, "9000", "/v" }, "ERR sluice: sliding_log_prune takes" },
	{ "sliding_log_state", 1, { SLK, "0", "1000", "9000" }, "ERR sluice: limit " },
	{ "sliding_log_state", 1, { SLK, "3", "x", "9000" }, "ERR sluice: window_ms " },
	{ "sliding_log_state", 1, { SLK, "3", "1000", "-9000" }, "ERR sluice: now " },
	{ "sliding_log_prune", 2, { SL_REG, SLK, "9000", "/v", "1000", "sec" }, "ERR sluice: unit " },
	{ "sliding_log_prune", 2, { SL_REG, SLK, "9000", "/v", "1000", "MS" }, "ERR sluice: unit " },
	{ "sliding_log_prune", 2, { SL_REG, SLK, "9000", "/v", "0", "s" }, "ERR sluice: window_ms " },
	{ "sliding_log_prune", 2, { SL_REG, SLK, "9000", "/v", "1000", "s", "x" }, "ERR sluice: sliding_log_prune takes" },
};

START_TEST(test_bad_arguments_change_nothing)
{
	check_bad_call(&bad_calls[_i]);
}
END_TEST

static Suite *sliding_log_suite(void)
{
	Suite *s = suite_create("sliding_log");
	TCase *tc;

	tc = test_tcase(s, "sliding_log", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_sliding_limit_3_window_1000);
	tcase_add_test(tc, test_sliding_retrying_client_gets_in);
	tcase_add_test(tc, test_sliding_older_now_is_newest);
	tcase_add_test(tc, test_sliding_members_stay_unique);
	tcase_add_test(tc, test_sliding_limit_lowered);
	tcase_add_test(tc, test_sliding_uses_redis_time);
	tcase_add_test(tc, test_prune_window_boundary);
	tcase_add_test(tc, test_prune_at_the_mark);
	tcase_add_test(tc, test_rejection_removes_nothing);
	tcase_add_test(tc, test_prune_batch);

	tc = test_tcase(s, "state", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_sliding_state);

	tc = test_tcase(s, "sliding_log_units", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_prune_unit_ms_is_the_default);
	tcase_add_test(tc, test_prune_unit_us);
	tcase_add_test(tc, test_prune_unit_batch);

	tc = test_tcase(s, "tables", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_table, 0, TEST_N(algo_cases));

	tc = test_tcase(s, "skew", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_sl_skew_lagging_clients);
	tcase_add_loop_test(tc, test_sl_model_traces, 0, 4);

	tc = test_tcase(s, "validation", script_setup, script_teardown, 60);
	tcase_add_loop_test(tc, test_bad_arguments_change_nothing, 0, TEST_N(bad_calls));
	return s;
}

int main(void)
{
	return test_run_suite(sliding_log_suite());
}

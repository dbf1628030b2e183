/*
 * The sliding log on key layout 2: lua/sliding_log.lua (the client's
 * acquire, by the calling contract), sliding_log_prune_shard.lua (the
 * worker's prune over a shard's due index), sliding_log_state.lua (the
 * admin's read), and sliding_log_prune.lua (the prune of other limiters'
 * logs, with their score units).  The fixture, helpers and time conventions
 * are tests/script_fixture.h's; the reference model and its traces are
 * tests/log_model.h's.
 */
#include "tests/log_model.h"

#define SL_META(p) test_key((p), "sliding_log_meta")
#define SL_REGK(p) test_registry("sliding_log", (p))

/* One acquire of path p by the contract: cost n (NULL: ""), now (< 0: Redis TIME). */
static redisReply *slc(const char *p, const char *n, long long now, const char *limit, const char *window)
{
	const char *params[2] = { limit, window };

	return test_client_call(c, TEST_EVAL, "sliding_log", p, n, now, params, 2);
}

/* The client reply r is exactly {a, b, d, e, ""}; frees r. */
static void check_reply5(const char *file, int line, redisReply *r, long long a, long long b, long long d,
			 long long e)
{
	const long long want[4] = { a, b, d, e };
	char got[512];
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 5 && r->element[4]->type == REDIS_REPLY_STRING &&
		 r->element[4]->len == 0;

	for (size_t i = 0; ok && i < 4; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	ck_assert_msg(ok, "%s:%d: reply %s, want {%lld, %lld, %lld, %lld, \"\"}", file, line,
		      test_show_reply(r, got, sizeof(got)), a, b, d, e);
	freeReplyObject(r);
}
#define ck5(r, a, b, d, e) check_reply5(__FILE__, __LINE__, (r), (a), (b), (d), (e))

/* A reply as text, nested arrays too: {1, "a", {"x", 2}}. */
static size_t show(const redisReply *r, char *buf, size_t cap)
{
	size_t n = 0;

	if (r->type == REDIS_REPLY_ARRAY) {
		n += (size_t)snprintf(buf + n, cap - n, "{");
		for (size_t i = 0; i < r->elements && n < cap; i++) {
			if (i)
				n += (size_t)snprintf(buf + n, cap - n, ", ");
			if (n < cap)
				n += show(r->element[i], buf + n, cap - n);
		}
		if (n < cap)
			n += (size_t)snprintf(buf + n, cap - n, "}");
		return n;
	}
	if (r->type == REDIS_REPLY_INTEGER)
		return (size_t)snprintf(buf, cap, "%lld", r->integer);
	if (r->type == REDIS_REPLY_STRING)
		return (size_t)snprintf(buf, cap, "\"%s\"", r->str);
	if (r->type == REDIS_REPLY_ERROR)
		return (size_t)snprintf(buf, cap, "error \"%s\"", r->str);
	return (size_t)snprintf(buf, cap, "<type %d>", r->type);
}

/* The state read of p (both keys): limit, window ("" = recorded), now. */
static redisReply *sls(const char *p, const char *limit, const char *window, const char *now)
{
	return ev("sliding_log_state", 2, test_sl_key(p), SL_META(p), limit, window, now, NULL);
}

/*
 * The state reply r is {count, remaining, reset, <ttl>, recorded, rule} with
 * the ttl in (ttl - SLACK_MS, ttl] (ttl < 0: exactly), recorded and rule as
 * `tail` shows them (", {...}, \"...\"}"); frees r.
 */
static void check_state(const char *file, int line, redisReply *r, long long count, long long remaining,
			long long reset, long long ttl, const char *tail)
{
	char got[1024], want[1024];
	long long t = r->type == REDIS_REPLY_ARRAY && r->elements == 6 && r->element[3]->type == REDIS_REPLY_INTEGER
			      ? r->element[3]->integer
			      : -99;

	show(r, got, sizeof(got));
	ck_assert_msg(ttl < 0 ? t == ttl : t <= ttl && t > ttl - SLACK_MS, "%s:%d: state %s, want ttl_ms %lld", file,
		      line, got, ttl);
	snprintf(want, sizeof(want), "{%lld, %lld, %lld, %lld%s", count, remaining, reset, t, tail);
	ck_assert_msg(strcmp(got, want) == 0, "%s:%d: state %s, want %s", file, line, got, want);
	freeReplyObject(r);
}
#define ck_state(r, count, remaining, reset, ttl, tail) \
	check_state(__FILE__, __LINE__, (r), (count), (remaining), (reset), (ttl), (tail))

/* The shard job over p's shard at now: its reply is exactly the six given; frees it. */
#define ck_job(p, now, ...) ck_reply(shard_job(SL, (p), (now)), __VA_ARGS__)

/* The i-th path "<base><j>" (j = 0, 1, ...) in the shard of "<base>0". */
static const char *same_shard(const char *base, int i)
{
	static char buf[16][48];
	static unsigned next;
	char *b = buf[next++ % 16], first[48];
	unsigned k;

	snprintf(first, sizeof(first), "%s0", base);
	k = shard_of(first, strlen(first));
	for (int j = 0;; j++) {
		snprintf(b, sizeof(buf[0]), "%s%d", base, j);
		if (shard_of(b, strlen(b)) == k && i-- == 0)
			return b;
	}
}

/* ---- the acquire ---------------------------------------------------------------- */

START_TEST(test_limit_3_window_1000)
{
	const char *p = "/log";
	char *before;

	ck5(slc(p, NULL, 0, "3", "1000"), 1, 2, 0, 1000);
	ck5(slc(p, NULL, 0, "3", "1000"), 1, 1, 0, 1000);
	ck5(slc(p, "1", 0, "3", "1000"), 1, 0, 0, 1000);
	/* members: the entries' numbers, a digit count first */
	ck_cmd("{\"a1\", \"0\", \"a2\", \"0\", \"a3\", \"0\"}", "ZRANGE %s 0 -1 WITHSCORES", test_sl_key(p));
	ck_cmd("{\"limit\", \"3\", \"window_ms\", \"1000\", \"rule\", \"\"}", "HGETALL %s", SL_META(p));
	/* The newest entry counts until 1000, and its time (the mark) SKEW_MS more: the meta too. */
	ck_pttl(test_sl_key(p), 1000 + SKEW_MS);
	ck_pttl(SL_META(p), 1000 + SKEW_MS);
	/* due when the oldest has left the window at the prune's time, R - SKEW_MS */
	ck_assert_int_eq(due_of(SL, p), 1000 + SKEW_MS);

	/* Rejected requests write nothing, not even a TTL. */
	freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", test_sl_key(p), MARKER_TTL));
	freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", SL_META(p), MARKER_TTL));
	before = test_snapshot(c);
	ck5(slc(p, NULL, 500, "3", "1000"), 0, 0, 500, 500);
	ck5(slc(p, NULL, 999, "3", "1000"), 0, 0, 1, 1);
	ck5(slc(p, NULL, 999, "2", "2000"), 0, 0, 1001, 1001); /* other parameters: not recorded */
	ck_snapshot_same(before);
	free(before);
	ck_pttl(test_sl_key(p), MARKER_TTL);
	ck_pttl(SL_META(p), MARKER_TTL);
	ck_cmd("{\"limit\", \"3\", \"window_ms\", \"1000\", \"rule\", \"\"}", "HGETALL %s", SL_META(p));
	/* The entries at 0 count for [0, 1000): gone at 1000, numbered on. */
	ck5(slc(p, NULL, 1000, "3", "1000"), 1, 2, 0, 1000);
	ck_cmd("{\"a4\", \"1000\"}", "ZRANGE %s 0 -1 WITHSCORES", test_sl_key(p));
	/* registered already, earlier than the new oldest's due time: left as it is */
	ck_assert_int_eq(due_of(SL, p), 1000 + SKEW_MS);
	/* another limit is recorded on admission */
	ck5(slc(p, NULL, 1000, "5", "1000"), 1, 3, 0, 1000);
	ck_cmd("{\"limit\", \"5\", \"window_ms\", \"1000\", \"rule\", \"\"}", "HGETALL %s", SL_META(p));
}
END_TEST

/* The same rule as a table: now -> reply, and the TTL (log and meta) an admission sets. */
START_TEST(test_limit_2_table)
{
	static const struct {
		long long now, want[4], ttl;
	} steps[] = {
		{ 0, { 1, 1, 0, 1000 }, 11000 },   { 0, { 1, 0, 0, 1000 }, 11000 }, { 0, { 0, 0, 1000, 1000 }, 0 },
		{ 999, { 0, 0, 1, 1 }, 0 },        { 1000, { 1, 1, 0, 1000 }, 11000 },
		{ 500, { 1, 0, 0, 1000 }, 11500 }, /* served at the mark, 1000; TTL from its own now */
		{ 1999, { 0, 0, 1, 1 }, 0 },       { 2000, { 1, 1, 0, 1000 }, 11000 },
	};
	const char *p = "/table";

	for (int i = 0; i < TEST_N(steps); i++) {
		ck5(slc(p, NULL, steps[i].now, "2", "1000"), steps[i].want[0], steps[i].want[1], steps[i].want[2],
		    steps[i].want[3]);
		if (steps[i].ttl) {
			ck_pttl(test_sl_key(p), steps[i].ttl);
			ck_pttl(SL_META(p), steps[i].ttl);
		}
	}
}
END_TEST

START_TEST(test_retrying_client_gets_in)
{
	const char *p = "/retrying";

	ck5(slc(p, NULL, 0, "2", "1000"), 1, 1, 0, 1000);
	ck5(slc(p, NULL, 100, "2", "1000"), 1, 0, 0, 900);
	/* A client hammering every 50 ms is told the exact wait, and its
	 * rejected attempts do not push the window on. */
	for (long long t = 150; t < 1000; t += 50) {
		ck5(slc(p, NULL, t, "2", "1000"), 0, 0, 1000 - t, 1000 - t);
		ck_assert_int_eq(zcard(test_sl_key(p)), 2);
	}
	ck5(slc(p, NULL, 1000, "2", "1000"), 1, 0, 0, 100);
	ck5(slc(p, NULL, 1050, "2", "1000"), 0, 0, 50, 50);
	ck5(slc(p, NULL, 1100, "2", "1000"), 1, 0, 0, 900);
}
END_TEST

START_TEST(test_older_now_is_served_at_the_mark)
{
	const char *p = "/older";

	ck5(slc(p, NULL, 5000, "3", "1000"), 1, 2, 0, 1000);
	ck5(slc(p, NULL, 4000, "3", "1000"), 1, 1, 0, 1000);
	ck_cmd("{\"a1\", \"5000\", \"a2\", \"5000\"}", "ZRANGE %s 0 -1 WITHSCORES", test_sl_key(p));
	/* The newest entry lives until 6000 in its clock, its mark until 16000:
	 * 12000 ms from its 4000, the meta as long. */
	ck_pttl(test_sl_key(p), 12000);
	ck_pttl(SL_META(p), 12000);
}
END_TEST

START_TEST(test_cost_n)
{
	const char *p = "/cost";

	ck5(slc(p, "3", 0, "5", "1000"), 1, 2, 0, 1000);
	ck_cmd("{\"a1\", \"a2\", \"a3\"}", "ZRANGE %s 0 -1", test_sl_key(p));
	/* 3 more do not fit: admitted when the oldest (rank 0) leaves */
	ck5(slc(p, "3", 100, "5", "1000"), 0, 2, 900, 900);
	ck5(slc(p, "2", 100, "5", "1000"), 1, 0, 0, 900);
	/* more than the limit: never */
	ck5(slc(p, "6", 200, "5", "1000"), 0, 0, -1, 800);
	ck5(slc(p, NULL, 1000, "5", "1000"), 1, 2, 0, 100);
	ck_cmd("{\"a4\", \"100\", \"a5\", \"100\", \"a6\", \"1000\"}", "ZRANGE %s 0 -1 WITHSCORES", test_sl_key(p));
	/* n 4 with 3 live: 2 must leave, the second one (rank 1) at 1100 */
	ck5(slc(p, "4", 1000, "5", "1000"), 0, 2, 100, 100);
	/* n 5: all 3 must leave, the newest at 2000 */
	ck5(slc(p, "5", 1000, "5", "1000"), 0, 2, 1000, 100);
	ck_assert_int_eq(zcard(test_sl_key(p)), 3);
}
END_TEST

START_TEST(test_cost_large)
{
	const char *p = "/large";

	/* one call of the largest cost: 100000 members, added in slices */
	ck5(slc(p, "100000", 0, "100000", "1000"), 1, 0, 0, 1000);
	ck_assert_int_eq(zcard(test_sl_key(p)), 100000);
	ck_cmd("{\"a1\"}", "ZRANGE %s 0 0", test_sl_key(p));
	ck_cmd("{\"f100000\"}", "ZRANGE %s -1 -1", test_sl_key(p));
	ck5(slc(p, NULL, 999, "100000", "1000"), 0, 0, 1, 1);
	ck5(slc(p, "2", 1000, "100000", "1000"), 1, 99998, 0, 1000);
	ck_cmd("{\"f100001\", \"f100002\"}", "ZRANGE %s 0 -1", test_sl_key(p));
}
END_TEST

START_TEST(test_members_stay_unique)
{
	const char *p = "/unique", *q = "/taken", *f = "/foreign";

	for (int i = 0; i < 3; i++)
		freeReplyObject(slc(p, NULL, 0, "10", "1000"));
	/* Someone removed the oldest: the count is the run of numbers left. */
	freeReplyObject(test_cmd(c, "ZREM %s a1", test_sl_key(p)));
	ck5(slc(p, NULL, 0, "10", "1000"), 1, 7, 0, 1000);
	ck_cmd("{\"a2\", \"a3\", \"a4\"}", "ZRANGE %s 0 -1", test_sl_key(p));
	/* The next number is taken (written by hand, older): stepped over, counted by ZCOUNT. */
	for (int i = 0; i < 2; i++)
		freeReplyObject(slc(q, NULL, 0, "10", "1000"));
	freeReplyObject(test_cmd(c, "ZADD %s -5 a3", test_sl_key(q)));
	ck5(slc(q, NULL, 0, "10", "1000"), 1, 6, 0, 995);
	ck_cmd("{\"a3\", \"-5\", \"a1\", \"0\", \"a2\", \"0\", \"a4\", \"0\"}", "ZRANGE %s 0 -1 WITHSCORES",
	       test_sl_key(q));
	/* A log whose members are someone else's: counted by ZCOUNT, numbered from its size. */
	freeReplyObject(test_cmd(c, "ZADD %s 0 x", test_sl_key(f)));
	ck5(slc(f, NULL, 0, "10", "1000"), 1, 8, 0, 1000);
	ck5(slc(f, NULL, 0, "10", "1000"), 1, 7, 0, 1000);
	ck_cmd("{\"a2\", \"a3\", \"x\"}", "ZRANGE %s 0 -1", test_sl_key(f));
	ck_assert_int_eq(due_of(SL, f), 1000 + SKEW_MS);
}
END_TEST

START_TEST(test_limit_lowered)
{
	const char *p = "/lowered";

	for (long long t = 0; t <= 400; t += 100)
		freeReplyObject(slc(p, NULL, t, "10", "1000"));
	/* Limit now 3 with 5 in the window: 3 must leave it, the third oldest
	 * (at 200) at 1200. */
	ck5(slc(p, NULL, 500, "3", "1000"), 0, 0, 700, 500);
	ck5(slc(p, NULL, 1199, "3", "1000"), 0, 0, 1, 1);
	ck_cmd("\"10\"", "HGET %s limit", SL_META(p));
	ck5(slc(p, NULL, 1200, "3", "1000"), 1, 0, 0, 100);
	ck_cmd("{\"a4\", \"a5\", \"a6\"}", "ZRANGE %s 0 -1", test_sl_key(p));
	ck_cmd("\"3\"", "HGET %s limit", SL_META(p));
}
END_TEST

/* A rejected call writes nothing: after a lowered limit refuses at 1500, a
 * client whose clock says 900 still counts the entry of 0. */
START_TEST(test_rejection_removes_nothing)
{
	const char *p = "/reject";

	freeReplyObject(slc(p, NULL, 0, "2", "1000"));
	freeReplyObject(slc(p, NULL, 900, "2", "1000"));
	ck5(slc(p, NULL, 1500, "1", "1000"), 0, 0, 400, 400);
	ck_assert_int_eq(zcard(test_sl_key(p)), 2);
	ck5(slc(p, NULL, 900, "2", "1000"), 0, 0, 100, 100);
}
END_TEST

START_TEST(test_uses_redis_time)
{
	const char *p = "/clock";
	long long before = test_server_ms(c), after, score;
	redisReply *r;

	ck5(slc(p, NULL, -1, "3", "1000"), 1, 2, 0, 1000);
	after = test_server_ms(c);
	r = test_cmd(c, "ZRANGE %s 0 0 WITHSCORES", test_sl_key(p));
	score = atoll(r->element[1]->str);
	freeReplyObject(r);
	ck_assert_int_ge(score, before);
	ck_assert_int_le(score, after);
	ck_assert_int_eq(due_of(SL, p), score + 1000 + SKEW_MS);
}
END_TEST

/* The due index: a client registers a new log, and again when its window changes (ZADD LT). */
START_TEST(test_due_index)
{
	const char *p = "/due";

	ck5(slc(p, NULL, 0, "10", "5000"), 1, 9, 0, 5000);
	ck_assert_int_eq(due_of(SL, p), 5000 + SKEW_MS);
	/* a shorter window: due earlier */
	ck5(slc(p, NULL, 100, "10", "1000"), 1, 8, 0, 900);
	ck_assert_int_eq(due_of(SL, p), 1000 + SKEW_MS);
	/* a longer one: the earlier time stays (the visit then finds nothing yet) */
	ck5(slc(p, NULL, 200, "10", "5000"), 1, 7, 0, 4800);
	ck_assert_int_eq(due_of(SL, p), 1000 + SKEW_MS);
	ck_job(p, 1000 + SKEW_MS, 0, 0, 1, 0, 5000 + SKEW_MS, 0);
	ck_assert_int_eq(due_of(SL, p), 5000 + SKEW_MS);
	/* by the window recorded last, 5000: all three go at 200 + 5000 + SKEW_MS */
	ck_job(p, 5000 + SKEW_MS, 1, 0, 1, 0, 5100 + SKEW_MS, 0);
	ck_job(p, 5199 + SKEW_MS, 1, 0, 1, 0, 5200 + SKEW_MS, 0);
	ck_job(p, 5200 + SKEW_MS, 1, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s", test_sl_key(p), SL_META(p)), 0);
	/* a new log after that registers again */
	ck5(slc(p, NULL, 20000, "10", "5000"), 1, 9, 0, 5000);
	ck_assert_int_eq(due_of(SL, p), 25000 + SKEW_MS);
}
END_TEST

/* ---- the shard job ---------------------------------------------------------------- */

/* Due when the entry has left the window of every client within the horizon. */
START_TEST(test_prune_window_boundary)
{
	const char *p = "/boundary";

	ck5(slc(p, NULL, 1000, "3", "1000"), 1, 2, 0, 1000);
	ck_job(p, 2000, 0, 0, 0, 0, 2000 + SKEW_MS, 0);
	ck_job(p, 1999 + SKEW_MS, 0, 0, 0, 0, 2000 + SKEW_MS, 0);
	ck_assert_int_eq(zcard(test_sl_key(p)), 1);
	/* pruned, emptied: the path leaves the index, the meta goes with the log */
	ck_job(p, 2000 + SKEW_MS, 1, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s", test_sl_key(p), SL_META(p)), 0);
	ck_assert_int_eq(in_registry(SL, p), 0);
	ck_job(p, 2000 + SKEW_MS, 0, 0, 0, 0, -1, 0);
}
END_TEST

/* Behind Redis, the log's own timeline: the prune removes what has left the
 * window at max(mark, R - SKEW_MS), never what a call served there still counts. */
START_TEST(test_prune_at_the_mark)
{
	const char *p = "/mark";

	freeReplyObject(slc(p, NULL, 0, "3", "1000"));
	freeReplyObject(slc(p, NULL, 500, "3", "1000"));
	freeReplyObject(slc(p, NULL, 900, "3", "1000"));
	ck_assert_int_eq(due_of(SL, p), 1000 + SKEW_MS);
	/* A visit before its time (Redis says 1500, the clients 900): nothing
	 * goes, and the path is due again when the oldest would. */
	freeReplyObject(test_cmd(c, "ZADD %s XX 1500 %s", SL_REGK(p), p));
	ck_job(p, 1500, 0, 0, 1, 0, 1000 + SKEW_MS, 0);
	ck5(slc(p, NULL, 900, "3", "1000"), 0, 0, 100, 100);
	/* Redis 11400: a client within the horizon is served at 1400 or later. */
	ck_job(p, 11400, 1, 0, 1, 0, 11500, 0);
	ck_cmd("{\"a2\", \"a3\"}", "ZRANGE %s 0 -1", test_sl_key(p));
	/* A client on time moves the mark: what left the window there goes. */
	ck5(slc(p, NULL, 11400, "3", "1000"), 1, 2, 0, 1000);
	ck_cmd("{\"a4\"}", "ZRANGE %s 0 -1", test_sl_key(p));
	ck_assert_int_eq(due_of(SL, p), 11500);
	ck_job(p, 11500, 0, 0, 1, 0, 12400 + SKEW_MS, 0);
}
END_TEST

/* One call over a shard's due paths: pruned, gone, not due, a key of another type, no window. */
START_TEST(test_prune_shard_batch)
{
	const char *a = same_shard("/batch/", 0), *b = same_shard("/batch/", 1), *cc = same_shard("/batch/", 2);
	const char *d = same_shard("/batch/", 3), *e = same_shard("/batch/", 4), *reg = SL_REGK(a);
	long long due;

	freeReplyObject(slc(a, NULL, 0, "10", "1000"));
	freeReplyObject(slc(a, NULL, 500, "10", "1000"));
	freeReplyObject(slc(a, NULL, 900, "10", "1000"));
	freeReplyObject(slc(cc, NULL, 0, "10", "5000"));
	freeReplyObject(slc(e, NULL, 0, "10", "1000"));
	freeReplyObject(test_cmd(c, "DEL %s", SL_META(e)));          /* e: a log whose meta records nothing */
	freeReplyObject(test_cmd(c, "ZADD %s 5000 %s 6000 %s", reg, b, d)); /* b: registered, no keys */
	freeReplyObject(test_cmd(c, "SET %s x", SL_META(d)));        /* d: a meta of another type */
	/* At 1500 + SKEW_MS: a loses 0 and 500; b leaves; cc is not due; d is skipped,
	 * looked at again in a minute; e is looked at when its log expires. */
	ck_job(a, 1500 + SKEW_MS, 2, 1, 4, 1, 900 + 1000 + SKEW_MS, 0);
	ck_cmd("{\"a3\"}", "ZRANGE %s 0 -1", test_sl_key(a));
	ck_assert_int_eq(zcard(test_sl_key(cc)), 1);
	ck_assert_int_eq(in_registry(SL, b), 0);
	ck_assert_int_eq(due_of(SL, d), 1500 + SKEW_MS + 60000);
	ck_assert_int_eq(due_of(SL, cc), 5000 + SKEW_MS);
	due = due_of(SL, e);
	ck_assert_msg(due <= 1500 + SKEW_MS + 1000 + SKEW_MS + 1 && due > 1500 + SKEW_MS + 1000 + SKEW_MS + 1 - SLACK_MS,
		      "e due at %lld", due);
	/* Twice at one instant: nothing more. */
	ck_job(a, 1500 + SKEW_MS, 0, 0, 0, 0, 900 + 1000 + SKEW_MS, 0);
	/* Three due, two a call: the backlog says one is left. */
	freeReplyObject(test_cmd(c, "ZADD %s XX 0 %s 0 %s 1 %s", reg, a, cc, e));
	ck_reply(ev("sliding_log_prune_shard", 1, reg, "1000", "2", NULL), 0, 0, 2, 0, 1, 1);
}
END_TEST

/* ---- the state read ---------------------------------------------------------------- */

START_TEST(test_state)
{
	const char *p = "/state";
	const char *rec = ", {\"limit\", \"3\", \"window_ms\", \"1000\"}, \"\"}";
	char *before;

	/* nothing: no parameters known, or given */
	ck_state(sls(p, "", "", "0"), 0, -1, -1, -2, ", {}, \"\"}");
	ck_state(sls(p, "3", "1000", "0"), 0, 3, 0, -2, ", {}, \"\"}");
	freeReplyObject(slc(p, NULL, 0, "3", "1000"));
	freeReplyObject(slc(p, NULL, 400, "3", "1000"));
	before = test_snapshot(c);
	/* the recorded parameters; one window and the horizon after the entry at 400 */
	ck_state(sls(p, "", "", "900"), 2, 1, 100, 1000 + SKEW_MS, rec);
	/* parameters given win, each on its own */
	ck_state(sls(p, "5", "2000", "900"), 2, 3, 1100, 1000 + SKEW_MS, rec);
	ck_state(sls(p, "1", "", "1000"), 1, 0, 400, 1000 + SKEW_MS, rec);
	ck_state(sls(p, "", "", "1400"), 0, 3, 0, 1000 + SKEW_MS, rec);
	/* behind the newest entry: served at 400 */
	ck_state(sls(p, "", "", "100"), 2, 1, 600, 1000 + SKEW_MS, rec);
	/* EVAL_RO: no writes */
	{
		const char *argv[] = { test_sl_key(p), SL_META(p), "", "", "900" };

		ck_state(eval_argv("sliding_log_state", 1, 2, 5, argv), 2, 1, 100, 1000 + SKEW_MS, rec);
	}
	ck_snapshot_same(before);
	free(before);
	/* a log whose meta records nothing: all its entries, no reset without a window */
	freeReplyObject(test_cmd(c, "DEL %s", SL_META(p)));
	ck_state(sls(p, "3", "", "900"), 2, 1, -1, 1000 + SKEW_MS, ", {}, \"\"}");
	ck_state(sls(p, "", "", "900"), 2, -1, -1, 1000 + SKEW_MS, ", {}, \"\"}");
	ck_state(sls(p, "", "1000", "900"), 2, -1, 100, 1000 + SKEW_MS, ", {}, \"\"}");
}
END_TEST

/* ---- other limiters' logs: sliding_log_prune.lua with score units ------------------------- */

START_TEST(test_prune_unit_required)
{
	const char *key = "limit:/a";
	char *before;

	freeReplyObject(test_cmd(c, "ZADD %s 0 0 500 500", key));
	freeReplyObject(test_cmd(c, "SADD reg:ms /a"));
	before = test_snapshot(c);
	/* sluice's own logs are pruned over their due index: a batch names its unit */
	ck_error(ev("sliding_log_prune", 2, "reg:ms", key, "1000", "/a", "1000", NULL), "ERR sluice: unit ");
	ck_error(ev("sliding_log_prune", 2, "reg:ms", key, "1000", "/a", "1000", "", NULL), "ERR sluice: unit ");
	ck_snapshot_same(before);
	free(before);
	/* "ms": at now, as their own clients cut */
	ck_reply(prune_unit("reg:ms", key, "/a", "1000", 1000, "ms"), 1, 0, 1, 0);
	ck_cmd("{\"500\"}", "ZRANGE %s 0 -1", key);
	ck_reply(prune_unit("reg:ms", key, "/a", "1000", 1500, "ms"), 1, 1, 1, 0);
	ck_assert_int_eq(test_dbsize(c), 0);
	/* an empty batch needs none */
	ck_reply(ev("sliding_log_prune", 1, "reg:ms", NULL), 0, 0, 0, 0);
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
	freeReplyObject(test_cmd(c, "HSET s:3 f 1"));
	ck_reply(ev("sliding_log_prune", 4, "reg:s", "s:1", "s:2", "s:3", "10500", "/1", "1000", "/2", "1000", "/3",
		    "1000", "s", NULL),
		 2, 0, 3, 1);
	ck_cmd("{\"b\"}", "ZRANGE s:1 0 -1");
	ck_cmd("{\"b\"}", "ZRANGE s:2 0 -1");
	/* An empty batch with a unit. */
	ck_reply(ev("sliding_log_prune", 1, "reg:s", "10500", "s", NULL), 0, 0, 0, 0);
}
END_TEST

/* ---- the skew scenario (issue 8, item 3) ----------------------------------------------- */

#define SKEW_PATH "/skew"
static long long skew_left[32]; /* when each entry (by admission) left the log, Redis time */
static long long skew_r0;

static int skew_call(long long now)
{
	return (int)test_acquire(c, TEST_EVALSHA, "sliding_log", SKEW_PATH, now, "10", "10000", NULL);
}

/* The worker's job over the path's shard, at Redis time: it acts only when the path is due. */
static void skew_job(long long r)
{
	freeReplyObject(shard_job(SL, SKEW_PATH, r));
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
 * 10 per 10 s, clients 5 s behind Redis (tests/window_trace.h), 20 requests
 * a second for 12 s, the shard job every second at Redis time.  By DESIGN.md
 * (served at max(now, newest entry), entries live for [s, s + window)) the
 * clients are admitted at c0 + 0 .. 450 and c0 + 10000 .. 10450 of their
 * timeline, 20 in all, with the worker and without, and an entry leaves only
 * when the path's own timeline is past its window:
 *   - the first ten, each exactly 10 s after it came, in the clients' time
 *     and in Redis's (R0 + 10000 .. 10450): the admission that takes its
 *     place removes it, not the worker, which works at max(newest entry, R -
 *     10000) and so removes nothing a client within the horizon still counts
 *     (0.1's worker removed them at R0 + 5000 and 6000: after ~6 s of the
 *     clients' time).  The path comes due at R0 + 15000 (c0 + 0 + 10000 +
 *     SKEW_MS), finds nothing to prune, and is due again at R0 + 25000;
 *   - the last ten, when nobody calls any more, once every client within
 *     the horizon is past their window: the tick at R0 + 25000 (R - 10000 =
 *     c0 + 20000, the first one's end) and the one at R0 + 26000 (the
 *     others end by c0 + 20450); the path leaves the index then.  Without the
 *     worker they go by the TTL, 20 s after the last admission (its window
 *     and the horizon, from its now).
 */
START_TEST(test_skew_lagging_clients)
{
	for (int worker = 1; worker >= 0; worker--) {
		struct skew_run run;
		const char *what = worker ? "log with the worker" : "log without worker";

		freeReplyObject(test_cmd(c, "FLUSHALL"));
		memset(skew_left, 0, sizeof(skew_left));
		/* a whole 10 s in the past: the client (R0 - lag) is never ahead of Redis TIME */
		skew_r0 = (test_server_ms(c) / 10000 - 1) * 10000 + SKEW_LAG_MS;
		skew_scenario(skew_r0, test_sl_key(SKEW_PATH), skew_call, worker ? skew_job : NULL, skew_watch, &run);
		skew_check_admissions(&run, skew_r0 - SKEW_LAG_MS, what);
		for (int i = 0; i < 10; i++)
			ck_assert_msg(skew_left[i] == skew_r0 + 10000 + i * SKEW_EVERY_MS,
				      "%s: entry %d left at R0 + %lld, want R0 + %d", what, i, skew_left[i] - skew_r0,
				      10000 + i * SKEW_EVERY_MS);
		for (int i = 10; i < 20; i++)
			ck_assert_msg(skew_left[i] == (worker ? skew_r0 + (i == 10 ? 25000 : 26000) : 0),
				      "%s: entry %d left at R0 + %lld", what, i, skew_left[i] - skew_r0);
		ck_assert_int_eq(run.gone_at, (worker ? skew_r0 + 26000 : -1));
		ck_assert_int_eq(in_registry(SL, SKEW_PATH), !worker);
		ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SL_META(SKEW_PATH)), !worker);
		if (!worker) {
			ck_assert_int_eq(due_of(SL, SKEW_PATH), skew_r0 - SKEW_LAG_MS + 10000 + SKEW_MS);
			ck_pttl(test_sl_key(SKEW_PATH), 20000);
			ck_pttl(SL_META(SKEW_PATH), 20000);
		}
	}
}
END_TEST

/* ---- the reference model, against the scripts over random traces ------------------------- */

/* 10,000 calls per seed (tests/log_model.h says what a trace holds). */
START_TEST(test_model_traces)
{
	long long out[4];

	lm_trace_run(2000 + (uint64_t)_i, 10000, out);
	/* the trace did what it is for: admissions, rejections, jobs that pruned */
	ck_assert_int_eq(out[0], 10000);
	ck_assert_msg(out[1] > 1000 && out[1] < 9000 && out[2] > 100 && out[3] > 100,
		      "seed %d: %lld admitted of %lld calls, %lld jobs pruned %lld", 2000 + _i, out[1], out[0], out[2],
		      out[3]);
}
END_TEST

/* ---- keys: wrong shard, '}', NUL ----------------------------------------------------------- */

/* The five keys and ARGV of a call of path (len bytes) under the hash tag of shard k. */
struct bin_call {
	char keys[5][256];
	const char *argv[11];
	size_t lens[11];
};

static void bin_call_init(struct bin_call *b, const char *path, size_t len, unsigned k, const char *now)
{
	static const char *const words[] = { "sliding_log:", "sliding_log_meta:", "registry:sliding_log", "rules",
					     "stats" };

	for (int i = 0; i < 5; i++) {
		int n = snprintf(b->keys[i], sizeof(b->keys[i]), "sluice:{%u}:%s", k, words[i]);

		if (i < 2) {
			memcpy(b->keys[i] + n, path, len);
			n += (int)len;
		}
		b->argv[i] = b->keys[i];
		b->lens[i] = (size_t)n;
	}
	b->argv[5] = path, b->lens[5] = len;
	b->argv[6] = "", b->argv[7] = now, b->argv[8] = "", b->argv[9] = "3", b->argv[10] = "1000";
	for (int i = 6; i < 11; i++)
		b->lens[i] = strlen(b->argv[i]);
}

START_TEST(test_wrong_shard_refused)
{
	const char *p = "/api/users"; /* shard 839 (lua/README.md's vectors) */
	struct bin_call b;
	char *before;

	ck_assert_uint_eq(shard_of(p, strlen(p)), 839);
	bin_call_init(&b, p, strlen(p), 840, "1000");
	before = test_snapshot(c);
	ck_error(test_script_argv(c, TEST_EVAL, "sliding_log", 5, 11, b.argv, b.lens),
		 "ERR sluice: path \"/api/users\" belongs to shard 839, not 840 (its keys carry {839})");
	ck_snapshot_same(before);
	free(before);
	/* Its own shard: admitted. */
	bin_call_init(&b, p, strlen(p), 839, "1000");
	ck5(test_script_argv(c, TEST_EVAL, "sliding_log", 5, 11, b.argv, b.lens), 1, 2, 0, 1000);
}
END_TEST

START_TEST(test_brace_paths)
{
	/* "}x" has no hash tag: sharded by all of it; "{a}b" by "a" */
	const char *paths[] = { "}x", "{a}b", "}{" };

	for (int i = 0; i < TEST_N(paths); i++) {
		const char *p = paths[i];
		char want[64];

		ck5(slc(p, NULL, 1000, "3", "1000"), 1, 2, 0, 1000);
		ck5(slc(p, NULL, 1500, "3", "1000"), 1, 1, 0, 500);
		snprintf(want, sizeof(want), "{\"%s\"}", p);
		ck_cmd(want, "ZRANGE %s 0 -1", SL_REGK(p));
		ck_state(sls(p, "", "", "1500"), 2, 1, 500, 1000 + SKEW_MS, ", {\"limit\", \"3\", \"window_ms\", \"1000\"}, \"\"}");
		ck_job(p, 2000 + SKEW_MS, 1, 0, 1, 0, 2500 + SKEW_MS, 0);
		ck_job(p, 2500 + SKEW_MS, 1, 1, 1, 0, -1, 0);
		ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s", test_sl_key(p), SL_META(p)), 0);
	}
	ck_assert_uint_eq(shard_of("{a}b", 4), shard_of("a", 1));
}
END_TEST

START_TEST(test_nul_path)
{
	static const char p[] = "/a\0b"; /* 4 bytes */
	const size_t len = sizeof(p) - 1;
	unsigned k = shard_of(p, len);
	struct bin_call b;
	redisReply *r;
	char *before;

	ck_assert_uint_ne(k, shard_of("/a", 2)); /* the bytes after the NUL count */
	bin_call_init(&b, p, len, k, "1000");
	ck5(test_script_argv(c, TEST_EVAL, "sliding_log", 5, 11, b.argv, b.lens), 1, 2, 0, 1000);
	{
		const char *zc[] = { "ZCARD", b.keys[0] };
		size_t zl[] = { 5, b.lens[0] };

		r = redisCommandArgv(c, 2, zc, zl);
		ck_assert_int_eq(r->integer, 1);
		freeReplyObject(r);
	}
	r = test_cmd(c, "ZRANGE %s 0 -1 WITHSCORES", b.keys[2]);
	ck_assert_int_eq(r->elements, 2);
	ck_assert_uint_eq(r->element[0]->len, len);
	ck_assert_int_eq(memcmp(r->element[0]->str, p, len), 0);
	ck_assert_int_eq(atoll(r->element[1]->str), 2000 + SKEW_MS);
	freeReplyObject(r);
	/* the path cut at its NUL is another path, in another shard: refused */
	bin_call_init(&b, p, len, shard_of("/a", 2), "1000");
	before = test_snapshot(c);
	ck_error(test_script_argv(c, TEST_EVAL, "sliding_log", 5, 11, b.argv, b.lens), "ERR sluice: path \"/a\\x00b\" belongs to shard ");
	ck_snapshot_same(before);
	free(before);
	/* the shard job prunes it by its binary name, and removes it */
	bin_call_init(&b, p, len, k, "1000");
	{
		const char *job[] = { "EVAL", script_find("sliding_log_prune_shard")->body, "1", b.keys[2], "", "500" };
		size_t jl[6];
		char nowv[24];

		snprintf(nowv, sizeof(nowv), "%lld", 2000 + SKEW_MS);
		job[4] = nowv;
		for (int i = 0; i < 6; i++)
			jl[i] = i == 3 ? b.lens[2] : strlen(job[i]);
		ck_reply(redisCommandArgv(c, 6, job, jl), 1, 1, 1, 0, -1, 0);
	}
	ck_assert_int_eq(test_dbsize(c), 0);
}
END_TEST

/* ---- validation: every bad argument named, nothing written ---------------------------- */

static const struct {
	int at;            /* index in the call's KEYS + ARGV to replace (-1: none; 11: one more ARGV) */
	const char *value; /* NULL: leave the argument out (the ones after it move up) */
	const char *error;
} bad_client[] = {
	{ 5, "", "ERR sluice: path must be a non-empty string" },
	{ 6, "0", "ERR sluice: n must be an integer from 1 to 100000" },
	{ 6, "1.5", "ERR sluice: n must be" },
	{ 6, "-1", "ERR sluice: n must be" },
	{ 6, "100001", "ERR sluice: n must be" },
	{ 7, "-1", "ERR sluice: now must be" },
	{ 7, "now", "ERR sluice: now must be" },
	{ 7, "1e3", "ERR sluice: now must be" },
	{ 8, "*", "ERR sluice: ARGV[5] (limit) must be \"\" with a rule reference in ARGV[4] (\"*\")" },
	{ 8, "api", "ERR sluice: ARGV[5] (limit) must be \"\" with a rule reference in ARGV[4] (\"api\")" },
	{ 8, "a\x01", "ERR sluice: rule (ARGV[4]) must be" },
	{ 9, "0", "ERR sluice: limit must be an integer from 1 to 2^53-1" },
	{ 9, "2.5", "ERR sluice: limit must be" },
	{ 9, "", "ERR sluice: limit must be" },
	{ 9, "9007199254740992", "ERR sluice: limit must be" },
	{ 10, "0", "ERR sluice: window_ms must be an integer from 1 to 2^53-1" },
	{ 10, "-1000", "ERR sluice: window_ms must be" },
	{ 10, "", "ERR sluice: window_ms must be" },
	{ 10, NULL, "ERR sluice: sliding_log takes ARGV path, n, now, rule, then limit, window_ms (6 in all)" },
	{ 11, "x", "ERR sluice: sliding_log takes ARGV path, n, now, rule, then limit, window_ms (6 in all)" },
	{ 0, "sluice:{x}:sliding_log:/v", "ERR sluice: KEYS[1] must be" },
	{ 0, "sluice:{1024}:sliding_log:/v", "ERR sluice: KEYS[1] must be" },
	{ 1, "sluice:{%u}:sliding_log_meta:/w", "ERR sluice: KEYS[2] must be" },
	{ 2, "sluice:{%u}:registry:leaky_bucket", "ERR sluice: KEYS[3] must be" },
	{ 3, "sluice:{%u}:rule", "ERR sluice: KEYS[4] must be" },
	{ 4, "sluice:{%u}:stat", "ERR sluice: KEYS[5] must be" },
	{ 4, NULL, "ERR sluice: sliding_log takes 5 KEYS (state, meta, registry, rules, stats)" },
};

START_TEST(test_bad_client_call)
{
	const char *p = "/v";
	unsigned k = shard_of(p, strlen(p));
	char keys[5][96], val[96];
	const char *argv[12];
	int argc = 0, nkeys = 5;
	char *before;

	/* state a call would change */
	freeReplyObject(slc(p, NULL, 1000, "3", "1000"));
	freeReplyObject(slc(p, NULL, 1500, "3", "1000"));
	snprintf(keys[0], sizeof(keys[0]), "%s", test_sl_key(p));
	snprintf(keys[1], sizeof(keys[1]), "%s", SL_META(p));
	snprintf(keys[2], sizeof(keys[2]), "%s", SL_REGK(p));
	snprintf(keys[3], sizeof(keys[3]), "sluice:{%u}:rules", k);
	snprintf(keys[4], sizeof(keys[4]), "sluice:{%u}:stats", k);
	snprintf(val, sizeof(val), bad_client[_i].value ? bad_client[_i].value : "", k);
	{
		const char *good[11] = { keys[0], keys[1], keys[2], keys[3], keys[4], p, "", "9000", "", "3", "1000" };

		for (int i = 0; i < 11; i++) {
			if (i == bad_client[_i].at && !bad_client[_i].value) {
				nkeys -= i < 5;
				continue;
			}
			argv[argc++] = i == bad_client[_i].at ? val : good[i];
		}
		if (bad_client[_i].at == 11)
			argv[argc++] = val;
	}
	before = test_snapshot(c);
	ck_error(eval_argv("sliding_log", 0, nkeys, argc, argv), bad_client[_i].error);
	ck_snapshot_same(before);
	free(before);
}
END_TEST

static const struct bad_call bad_others[] = {
	{ "sliding_log_prune_shard", 1, { "sluice:{5}:registry:sliding_log", "9000", "0" }, "ERR sluice: limit " },
	{ "sliding_log_prune_shard", 1, { "sluice:{5}:registry:sliding_log", "x", "500" }, "ERR sluice: now " },
	{ "sliding_log_prune_shard", 1, { "sluice:{5}:registry:leaky_bucket", "9000", "500" }, "ERR sluice: KEYS[1] " },
	{ "sliding_log_prune_shard", 2, { "sluice:{5}:registry:sliding_log", "x", "9000", "500" },
	  "ERR sluice: sliding_log shard job takes" },
	{ "sliding_log_prune_shard", 1, { "sluice:{5}:registry:sliding_log", "9000" }, "ERR sluice: sliding_log shard job takes" },
	{ "sliding_log_state", 1, { "sluice:{5}:sliding_log:/v", "3", "1000", "9000" }, "ERR sluice: sliding_log_state takes" },
	{ "sliding_log_state", 2, { "sluice:{5}:sliding_log:/v", "m", "3", "1000" }, "ERR sluice: sliding_log_state takes" },
	{ "sliding_log_state", 2, { "sluice:{5}:sliding_log:/v", "m", "0", "1000", "9000" }, "ERR sluice: limit " },
	{ "sliding_log_state", 2, { "sluice:{5}:sliding_log:/v", "m", "3", "x", "9000" }, "ERR sluice: window_ms " },
	{ "sliding_log_state", 2, { "sluice:{5}:sliding_log:/v", "m", "3", "1000", "-9000" }, "ERR sluice: now " },
	{ "sliding_log_prune", 2, { "reg", "log", "9000", "/v", "0", "ms" }, "ERR sluice: window_ms " },
	{ "sliding_log_prune", 2, { "reg", "log", "9000", "", "1000", "ms" }, "ERR sluice: path " },
	{ "sliding_log_prune", 2, { "reg", "log", "1.5", "/v", "1000", "ms" }, "ERR sluice: now " },
	{ "sliding_log_prune", 2, { "reg", "log", "9000", "/v" }, "ERR sluice: sliding_log_prune takes" },
	{ "sliding_log_prune", 2, { "reg", "log", "9000", "/v", "1000", "sec" }, "ERR sluice: unit " },
	{ "sliding_log_prune", 2, { "reg", "log", "9000", "/v", "1000", "MS" }, "ERR sluice: unit " },
	{ "sliding_log_prune", 2, { "reg", "log", "9000", "/v", "1000", "s", "x" }, "ERR sluice: cut " },
	{ "sliding_log_prune", 2, { "reg", "log", "9000", "/v", "1000", "s", "exclusive", "x" },
	  "ERR sluice: sliding_log_prune takes" },
};

START_TEST(test_bad_other_call)
{
	const struct bad_call *bc = &bad_others[_i];
	int argc = 0;
	char *before;

	freeReplyObject(slc("/v", NULL, 1000, "3", "1000"));
	freeReplyObject(test_cmd(c, "ZADD log 1000 a"));
	freeReplyObject(test_cmd(c, "SADD reg /v"));
	before = test_snapshot(c);
	while (bc->args[argc])
		argc++;
	check_refused(bc->script, eval_argv(bc->script, 0, bc->nkeys, argc, bc->args), bc->error);
	ck_snapshot_same(before);
	free(before);
}
END_TEST

static Suite *sliding_log_suite(void)
{
	Suite *s = suite_create("sliding_log");
	TCase *tc;

	tc = test_tcase(s, "acquire", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_limit_3_window_1000);
	tcase_add_test(tc, test_limit_2_table);
	tcase_add_test(tc, test_retrying_client_gets_in);
	tcase_add_test(tc, test_older_now_is_served_at_the_mark);
	tcase_add_test(tc, test_cost_n);
	tcase_add_test(tc, test_cost_large);
	tcase_add_test(tc, test_members_stay_unique);
	tcase_add_test(tc, test_limit_lowered);
	tcase_add_test(tc, test_rejection_removes_nothing);
	tcase_add_test(tc, test_uses_redis_time);
	tcase_add_test(tc, test_due_index);

	tc = test_tcase(s, "shard_job", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_prune_window_boundary);
	tcase_add_test(tc, test_prune_at_the_mark);
	tcase_add_test(tc, test_prune_shard_batch);

	tc = test_tcase(s, "state", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_state);

	tc = test_tcase(s, "foreign_units", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_prune_unit_required);
	tcase_add_test(tc, test_prune_unit_us);
	tcase_add_test(tc, test_prune_unit_batch);

	tc = test_tcase(s, "keys", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_wrong_shard_refused);
	tcase_add_test(tc, test_brace_paths);
	tcase_add_test(tc, test_nul_path);

	tc = test_tcase(s, "skew", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_skew_lagging_clients);

	tc = test_tcase(s, "model", script_setup, script_teardown, 600);
	tcase_add_loop_test(tc, test_model_traces, 0, 4);

	tc = test_tcase(s, "validation", script_setup, script_teardown, 60);
	tcase_add_loop_test(tc, test_bad_client_call, 0, TEST_N(bad_client));
	tcase_add_loop_test(tc, test_bad_other_call, 0, TEST_N(bad_others));
	return s;
}

int main(void)
{
	return test_run_suite(sliding_log_suite());
}

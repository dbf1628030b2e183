/*
 * lua/sliding_counter.lua (the client's acquire, by key layout 2's calling
 * contract), sliding_counter_prune_shard.lua (the worker's prune of expired
 * sub-windows over one shard's due index), sliding_counter_state.lua (the
 * admin's read) and sliding_counter_prune.lua (the same prune for foreign
 * layouts).  The fixture, helpers and time conventions are
 * tests/script_fixture.h's; the reference model is tests/counter_model.h.
 */
#include "core/shard.h"
#include "tests/counter_model.h"

#include <stdarg.h>

/* ---- helpers ----------------------------------------------------------------- */

#define SC_STATE(p) test_key((p), "sliding_counter")
#define SC_META(p) test_key((p), "sliding_counter_meta")
#define SC_DUE(p) test_registry("sliding_counter", (p))

/* The reply of a client call is exactly {want[0..4), ""} (explicit parameters: rule ""); frees r. */
static void check_sc(const char *file, int line, redisReply *r, const long long *want)
{
	char got[512];
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 5;

	for (size_t i = 0; ok && i < 4; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	ok = ok && r->element[4]->type == REDIS_REPLY_STRING && r->element[4]->len == 0;
	ck_assert_msg(ok, "%s:%d: reply %s, want {%lld, %lld, %lld, %lld, \"\"}", file, line,
		      test_show_reply(r, got, sizeof(got)), want[0], want[1], want[2], want[3]);
	freeReplyObject(r);
}
#define ck_sc(r, a, b, d, e) check_sc(__FILE__, __LINE__, (r), TEST_INTS(a, b, d, e))

/* The shard job over the due index of p's shard at now: {done, removed, visited, skipped, next_due, backlog}. */
#define job(p, now) shard_job(SC, (p), (now))

/* p is due now, as if the worker came early (ZADD XX 0). */
static void force_due(const char *p)
{
	ck_assert_int_eq(test_cmd_int(c, "ZADD %s XX CH 0 %s", SC_DUE(p), p), 1);
}

/* The state read of p with the given parameters ("" = the recorded ones) at now. */
static redisReply *st(const char *p, const char *limit, const char *window, const char *subs, const char *now)
{
	return ev("sliding_counter_state", 2, SC_STATE(p), SC_META(p), limit, window, subs, now, NULL);
}

/*
 * A state reply is {count, remaining, reset_ms, ttl_ms, recorded, rule} with
 * recorded shown as "f=v f=v" and ttl_ms exact when <= 0, else in
 * (ttl - SLACK_MS, ttl]; frees r.
 */
static void check_state(const char *file, int line, redisReply *r, long long count, long long remaining,
			long long reset, long long ttl, const char *recorded, const char *rule)
{
	char got[512], rec[256] = "";
	size_t len = 0;
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 6;

	for (size_t i = 0; ok && i < 4; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER;
	ok = ok && r->element[4]->type == REDIS_REPLY_ARRAY && r->element[5]->type == REDIS_REPLY_STRING;
	ck_assert_msg(ok, "%s:%d: state reply %s", file, line, test_show_reply(r, got, sizeof(got)));
	for (size_t i = 0; i + 1 < r->element[4]->elements; i += 2)
		len += (size_t)snprintf(rec + len, sizeof(rec) - len, "%s%s=%s", i ? " " : "",
					r->element[4]->element[i]->str, r->element[4]->element[i + 1]->str);
	ck_assert_msg(r->element[0]->integer == count && r->element[1]->integer == remaining &&
			      r->element[2]->integer == reset,
		      "%s:%d: state {%lld, %lld, %lld}, want {%lld, %lld, %lld}", file, line, r->element[0]->integer,
		      r->element[1]->integer, r->element[2]->integer, count, remaining, reset);
	if (ttl <= 0)
		ck_assert_msg(r->element[3]->integer == ttl, "%s:%d: ttl_ms %lld, want %lld", file, line,
			      r->element[3]->integer, ttl);
	else
		ck_assert_msg(r->element[3]->integer <= ttl && r->element[3]->integer > ttl - SLACK_MS,
			      "%s:%d: ttl_ms %lld, want %lld (minus the test's time)", file, line,
			      r->element[3]->integer, ttl);
	ck_assert_msg(strcmp(rec, recorded) == 0, "%s:%d: recorded \"%s\", want \"%s\"", file, line, rec, recorded);
	ck_assert_msg(strcmp(r->element[5]->str, rule) == 0, "%s:%d: rule \"%s\", want \"%s\"", file, line,
		      r->element[5]->str, rule);
	freeReplyObject(r);
}
#define ck_state(r, count, remaining, reset, ttl, recorded, rule) \
	check_state(__FILE__, __LINE__, (r), (count), (remaining), (reset), (ttl), (recorded), (rule))

#define REC_3_1000_10 "limit=3 window_ms=1000 sub_windows=10"

/* A client call with cost n (1 when 0). */
static redisReply *scn(const char *p, const char *limit, const char *window, const char *subs, long long n,
		       long long now)
{
	return acquire(SC, p, limit, window, subs, n ? num(n) : NULL, num(now));
}

/* The five KEYS and the ARGV of a client call of a path of any bytes, for test_script_argv. */
struct bin_call {
	char keys[5][256];
	const char *argv[12];
	size_t lens[12];
};

/* Keys of shard `k` (any, to test the refusal) for path p[0..len). */
static void bin_keys(struct bin_call *b, const char *p, size_t len, unsigned k)
{
	static const char *const kind[] = { "sliding_counter:", "sliding_counter_meta:", "registry:sliding_counter",
					    "rules", "stats" };

	ck_assert_int_lt(len, 200);
	for (int i = 0; i < 5; i++) {
		int n = snprintf(b->keys[i], sizeof(b->keys[i]), "sluice:{%u}:%s", k, kind[i]);

		b->lens[i] = (size_t)n;
		if (i < 2) {
			memcpy(b->keys[i] + n, p, len);
			b->lens[i] += len;
		}
		b->argv[i] = b->keys[i];
	}
}

/* A client call of path p[0..len) (NUL bytes too) on shard k's keys: ARGV path, n, now, "", limit, window, subs. */
static redisReply *bin_acquire(const char *p, size_t len, unsigned k, const char *n, long long now,
			       const char *limit, const char *window, const char *subs)
{
	struct bin_call b;
	const char *args[7] = { p, n, num(now), "", limit, window, subs };

	bin_keys(&b, p, len, k);
	for (int i = 0; i < 7; i++) {
		b.argv[5 + i] = args[i];
		b.lens[5 + i] = i == 0 ? len : strlen(args[i]);
	}
	return test_script_argv(c, TEST_EVAL, "sliding_counter", 5, 12, b.argv, b.lens);
}

/* A command on one binary key: "<cmd> <key[0..klen)> [arg]". */
static redisReply *bin_cmd(const char *cmd, const char *key, size_t klen, const char *arg)
{
	const char *v[3] = { cmd, key, arg };
	size_t vl[3] = { strlen(cmd), klen, arg ? strlen(arg) : 0 };
	redisReply *r = redisCommandArgv(c, arg ? 3 : 2, v, vl);

	ck_assert_msg(r != NULL, "redis I/O error: %s", c->errstr);
	return r;
}

/* ---- the acquire -------------------------------------------------------------- */

START_TEST(test_sc_fields_removed_on_the_way)
{
	const char *p = "/fields";

	/* Sub-windows of 100 ms: 0 -> 2, 1 -> 1, 9 -> 1. */
	ck_sc(sc(p, "10", "1000", "10", 0), 1, 9, 0, 1000);
	ck_sc(sc(p, "10", "1000", "10", 50), 1, 8, 0, 950);
	ck_sc(sc(p, "10", "1000", "10", 150), 1, 7, 0, 850);
	ck_sc(sc(p, "10", "1000", "10", 950), 1, 6, 0, 50);
	/* four sub-window fields, t, and the parameters with the rule */
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_STATE(p)), 3 + 5);
	ck_cmd("{\"10\", \"1000\", \"10\", \"\", \"950\"}", "HMGET %s limit window_ms sub_windows rule t", SC_STATE(p));
	/* A field written under another sub-window length (index past the current one). */
	freeReplyObject(test_cmd(c, "HSET %s 9999 5", SC_STATE(p)));
	/* At 1100 sub-windows 0 and 1 have left, and 9999 means nothing. */
	ck_sc(sc(p, "10", "1000", "10", 1100), 1, 8, 0, 800);
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_STATE(p)), 2 + 5);
	ck_cmd("{\"1\", \"1\", \"1100\"}", "HMGET %s 9 11 t", SC_STATE(p));
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s 0", SC_STATE(p)), 0);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s 9999", SC_STATE(p)), 0);
	ck_pttl(SC_STATE(p), 1000 + SKEW_MS); /* sub-window 11 leaves at 2100, its mark is kept SKEW_MS more */
	/* the meta is never written */
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SC_META(p)), 0);
}
END_TEST

/* A field whose name starts with a digit is a sub-window's: one that is no whole number is stale, and goes
 * with the next admission; other names are left alone. */
START_TEST(test_sc_foreign_fields)
{
	const char *p = "/junk";

	ck_sc(sc(p, "10", "1000", "10", 0), 1, 9, 0, 1000);
	freeReplyObject(test_cmd(c, "HSET %s 1x 5 0.5 5 x 7", SC_STATE(p)));
	ck_state(st(p, "", "", "", "50"), 1, 9, 950, 1000 + SKEW_MS, "limit=10 window_ms=1000 sub_windows=10", "");
	ck_sc(sc(p, "10", "1000", "10", 50), 1, 8, 0, 950);
	ck_cmd("{nil, nil, \"7\", \"2\"}", "HMGET %s 1x 0.5 x 0", SC_STATE(p));
}
END_TEST

START_TEST(test_sc_many_in_one_ms)
{
	const char *p = "/burst";

	for (int i = 1; i <= 5; i++)
		ck_sc(sc(p, "5", "60000", "6", 12345), 1, 5 - i, 0, 60000 - 2345);
	ck_sc(sc(p, "5", "60000", "6", 12345), 0, 0, 60000 - 2345, 60000 - 2345);
	ck_cmd("{\"5\", \"12345\"}", "HMGET %s 1 t", SC_STATE(p));
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_STATE(p)), 1 + 5);
}
END_TEST

/* Cost n: admitted iff sum + n <= limit, counted n; never when n > limit. */
START_TEST(test_sc_cost)
{
	const char *p = "/cost";
	char *before;

	/* limit 5 per 1000 ms in 4 sub-windows of 250 ms */
	ck_sc(scn(p, "5", "1000", "4", 2, 100), 1, 3, 0, 900);
	ck_sc(scn(p, "5", "1000", "4", 3, 300), 1, 0, 0, 700);
	ck_cmd("{\"2\", \"3\"}", "HMGET %s 0 1", SC_STATE(p));
	/* sum 5: cost 1 must wait for sub-window 0 (2 requests) to leave, at 1000 */
	before = test_snapshot(c);
	ck_sc(scn(p, "5", "1000", "4", 1, 400), 0, 0, 600, 600);
	/* cost 3: sub-window 0 (2) is not enough, sub-window 1 (3) must leave too, at 1250 */
	ck_sc(scn(p, "5", "1000", "4", 3, 400), 0, 0, 850, 600);
	/* n > limit: never; nothing stored */
	ck_sc(scn(p, "5", "1000", "4", 6, 400), 0, 0, -1, 600);
	ck_snapshot_same(before);
	free(before);
	ck_sc(scn(p, "5", "1000", "4", 2, 1000), 1, 0, 0, 250);
	ck_sc(scn(p, "5", "1000", "4", 2, 1249), 0, 0, 1, 1);
	ck_sc(scn(p, "5", "1000", "4", 2, 1250), 1, 1, 0, 750);
	ck_cmd("{\"2\", \"2\"}", "HMGET %s 4 5", SC_STATE(p));
	/* n > limit on a path with no state stores nothing, not even a registry member */
	ck_sc(scn("/never", "2", "1000", "4", 3, 0), 0, 2, -1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SC_STATE("/never")), 0);
	ck_assert_int_eq(in_registry(SC, "/never"), 0);
	/* "" is a cost of 1 */
	ck_sc(acquire(SC, "/one", "2", "1000", "4", "", "0"), 1, 1, 0, 1000);
}
END_TEST

START_TEST(test_sc_one_sub_window_is_a_fixed_window)
{
	const char *p = "/one";

	ck_sc(sc(p, "2", "1000", "1", 100), 1, 1, 0, 900);
	ck_sc(sc(p, "2", "1000", "1", 900), 1, 0, 0, 100);
	ck_sc(sc(p, "2", "1000", "1", 999), 0, 0, 1, 1);
	ck_sc(sc(p, "2", "1000", "1", 1000), 1, 1, 0, 1000);
}
END_TEST

START_TEST(test_sc_uses_redis_time)
{
	const char *p = "/clock";
	long long before = test_server_ms(c), after, t;
	redisReply *r;

	r = acquire(SC, p, "3", "1000", "10", NULL, NULL);
	after = test_server_ms(c);
	ck_assert_int_gt(test_elem_int(r, 3), 900);
	ck_sc(r, 1, 2, 0, test_elem_int(r, 3));
	r = test_cmd(c, "HGET %s t", SC_STATE(p));
	t = atoll(r->str);
	freeReplyObject(r);
	ck_assert_int_ge(t, before);
	ck_assert_int_le(t, after);
	ck_cmd("\"1\"", "HGET %s %lld", SC_STATE(p), t / 100);
	ck_assert_int_eq(due_of(SC, p), (t / 100 + 10) * 100 + SKEW_MS);
}
END_TEST

/* A rejected call writes nothing: after a lowered limit refuses at 1500, a
 * client whose clock says 950 still counts sub-window 0. */
START_TEST(test_sc_rejection_removes_nothing)
{
	const char *p = "/reject";
	char *before;

	ck_sc(sc(p, "2", "1000", "10", 0), 1, 1, 0, 1000);
	ck_sc(sc(p, "2", "1000", "10", 900), 1, 0, 0, 100);
	before = test_snapshot(c);
	ck_sc(sc(p, "1", "1000", "10", 1500), 0, 0, 400, 400);
	ck_snapshot_same(before);
	free(before);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s 0", SC_STATE(p)), 1);
	ck_sc(sc(p, "2", "1000", "10", 950), 0, 0, 50, 50);
	/* the parameters of the rejected calls were not recorded */
	ck_cmd("{\"2\", \"1000\", \"10\", \"900\"}", "HMGET %s limit window_ms sub_windows t", SC_STATE(p));
}
END_TEST

/*
 * The parameters are recorded, as passed, when they change, on admission;
 * the due time follows the oldest sub-window at the horizon, moved earlier
 * (ZADD LT) by a call whose window is shorter.
 */
START_TEST(test_sc_records_parameters_and_due)
{
	const char *p = "/rec";

	ck_sc(sc(p, "3", "10000", "10", 5000), 1, 2, 0, 10000);
	ck_cmd("{\"3\", \"10000\", \"10\", \"\"}", "HMGET %s limit window_ms sub_windows rule", SC_STATE(p));
	/* sub-window 5 of 1000 ms leaves at 15000; the prune may act on it at 15000 + SKEW_MS */
	ck_assert_int_eq(due_of(SC, p), 15000 + SKEW_MS);
	ck_sc(sc(p, "3", "10000", "10", 7000), 1, 1, 0, 8000);
	ck_assert_int_eq(due_of(SC, p), 15000 + SKEW_MS);
	/* "010" is recorded as passed (it reads as 10) */
	ck_sc(sc(p, "4", "10000", "010", 7000), 1, 1, 0, 8000);
	ck_assert_int_eq(due_of(SC, p), 15000 + SKEW_MS);
	ck_cmd("{\"4\", \"10000\", \"010\"}", "HMGET %s limit window_ms sub_windows", SC_STATE(p));
	/* a shorter window: 4 sub-windows of 250 ms, where fields 5 and 7 (of 1000 ms) are long past */
	ck_sc(sc(p, "4", "1000", "4", 7100), 1, 3, 0, 900);
	ck_cmd("{\"7100\", \"4\", \"1000\", \"4\", \"\", \"1\"}", "HMGET %s t limit window_ms sub_windows rule 28",
	       SC_STATE(p));
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_STATE(p)), 1 + 5);
	ck_assert_int_eq(due_of(SC, p), 8000 + SKEW_MS);
	ck_pttl(SC_STATE(p), 8000 + SKEW_MS - 7100);
	/* the same sub-windows of 100 ms, 10 instead of 20: what the counter holds stays live, due earlier */
	ck_sc(sc("/rec2", "5", "2000", "20", 1000), 1, 4, 0, 2000);
	ck_assert_int_eq(due_of(SC, "/rec2"), 3000 + SKEW_MS);
	ck_sc(sc("/rec2", "5", "1000", "10", 1050), 1, 3, 0, 950);
	ck_assert_int_eq(due_of(SC, "/rec2"), 2000 + SKEW_MS);
	ck_cmd("{\"2\", \"1000\", \"10\"}", "HMGET %s 10 window_ms sub_windows", SC_STATE("/rec2"));
}
END_TEST

/* The skew horizon comes from the shard's rules copy when the daemon wrote one: TTL, due time and the job's horizon. */
START_TEST(test_sc_skew_from_rules_copy)
{
	const char *p = "/skew2";

	freeReplyObject(test_cmd(c, "HSET %s :max_clock_skew_ms 2000", test_shard_key("sliding_counter", p, "rules")));
	ck_sc(sc(p, "3", "1000", "10", 150), 1, 2, 0, 1000 - 50);
	ck_pttl(SC_STATE(p), 1100 + 2000 - 150);
	ck_assert_int_eq(due_of(SC, p), 1100 + 2000);
	ck_reply(job(p, 1099 + 2000), 0, 0, 0, 0, 1100 + 2000, 0);
	ck_reply(job(p, 1100 + 2000), 1, 1, 1, 0, -1, 0);
}
END_TEST

/* ---- the shard job -------------------------------------------------------------- */

START_TEST(test_sc_prune_boundary)
{
	const char *p = "/prune";

	/* Sub-windows of 100 ms: 0 -> 2, 1 -> 1, 9 -> 1, t = 950; due when sub-window 0
	 * has left the window for a client lagging Redis by SKEW_MS. */
	freeReplyObject(sc(p, "10", "1000", "10", 0));
	freeReplyObject(sc(p, "10", "1000", "10", 50));
	freeReplyObject(sc(p, "10", "1000", "10", 150));
	freeReplyObject(sc(p, "10", "1000", "10", 950));
	ck_assert_int_eq(due_of(SC, p), 1000 + SKEW_MS);
	/* Visited early, at Redis 1000: it acts at max(t, now - SKEW_MS) = 950, not for a client at 999. */
	force_due(p);
	ck_reply(job(p, 1000), 0, 0, 1, 0, 1000 + SKEW_MS, 0);
	ck_reply(job(p, 999 + SKEW_MS), 0, 0, 0, 0, 1000 + SKEW_MS, 0); /* not due */
	ck_reply(job(p, 1000 + SKEW_MS), 1, 0, 1, 0, 1100 + SKEW_MS, 0); /* sub-window 0 */
	ck_reply(job(p, 1099 + SKEW_MS), 0, 0, 0, 0, 1100 + SKEW_MS, 0);
	ck_reply(job(p, 1100 + SKEW_MS), 1, 0, 1, 0, 1900 + SKEW_MS, 0); /* sub-window 1 */
	ck_reply(job(p, 1100 + SKEW_MS), 0, 0, 0, 0, 1900 + SKEW_MS, 0);
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_STATE(p)), 1 + 5);
	ck_reply(job(p, 1899 + SKEW_MS), 0, 0, 0, 0, 1900 + SKEW_MS, 0);
	ck_assert_int_eq(in_registry(SC, p), 1);
	/* At 1900 the last one leaves: the hash goes, and the path. */
	ck_reply(job(p, 1900 + SKEW_MS), 1, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SC_STATE(p)), 0);
	ck_assert_int_eq(in_registry(SC, p), 0);
	ck_reply(job(p, 1900 + SKEW_MS), 0, 0, 0, 0, -1, 0);
}
END_TEST

/* Paths of one shard (by the hash tag "{b}") in one job call. */
#define BA "{b}A"
#define BB "{b}B"
#define BC "{b}C"
#define BD "{b}D"
#define BE "{b}E"
#define BF "{b}F"
#define BG "{b}G"

START_TEST(test_sc_prune_shard_batch)
{
	char *before;

	/* Pruned at Redis 1000 + SKEW_MS, i.e. as of 1000 for a hash whose t is
	 * older; every path made due.  A: 0 -> 2, 5 -> 1 (sub 0 leaves at 1000);
	 * B: registered, absent; C: 1 -> 1 plus a field of another sub-window
	 * length; D: a string; E: only a zero count, t and the parameters:
	 * nothing live; F: t = 5000, ahead of the worker's 1000: nothing of it is
	 * expired or "in the future"; G: a hash that records no parameters (none
	 * of sliding_counter.lua's), with no TTL. */
	freeReplyObject(sc(BA, "10", "1000", "10", 0));
	freeReplyObject(sc(BA, "10", "1000", "10", 0));
	freeReplyObject(sc(BA, "10", "1000", "10", 500));
	freeReplyObject(sc(BC, "10", "1000", "10", 100));
	freeReplyObject(test_cmd(c, "HSET %s 9999 4", SC_STATE(BC)));
	freeReplyObject(test_cmd(c, "SET %s 3", SC_STATE(BD)));
	freeReplyObject(test_cmd(c, "HSET %s t 5 3 0 limit 10 window_ms 1000 sub_windows 10 rule %s", SC_STATE(BE), ""));
	freeReplyObject(sc(BF, "10", "1000", "10", 5000));
	freeReplyObject(test_cmd(c, "HSET %s t 5 3 1", SC_STATE(BG)));
	freeReplyObject(test_cmd(c, "ZADD %s 0 %s 0 %s 0 %s 0 %s 0 %s 0 %s 0 %s", SC_DUE(BA), BA, BB, BC, BD, BE, BF, BG));
	ck_reply(job(BA, 1000 + SKEW_MS), 3, 2, 7, 1, 1100 + SKEW_MS, 0);
	ck_cmd("{nil, \"1\", \"500\"}", "HMGET %s 0 5 t", SC_STATE(BA));
	ck_cmd("{\"1\", nil, \"100\"}", "HMGET %s 1 9999 t", SC_STATE(BC));
	ck_cmd("\"3\"", "GET %s", SC_STATE(BD));
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SC_STATE(BE)), 0);
	ck_cmd("{\"1\", \"5000\"}", "HMGET %s 50 t", SC_STATE(BF));
	ck_cmd("{\"1\", \"5\"}", "HMGET %s 3 t", SC_STATE(BG));
	/* A: sub-window 5 leaves at 1500; C: 1 at 1100; D: skipped, looked at again in
	 * a minute; F: 50 at 6000; G: when its key would expire (it never does: a minute) */
	ck_cmd("{\"{b}C\", \"11100\", \"{b}A\", \"11500\", \"{b}F\", \"16000\", \"{b}D\", \"71000\", \"{b}G\", \"71000\"}",
	       "ZRANGE %s 0 -1 WITHSCORES", SC_DUE(BA));
	/* Idempotent: nothing is due at the same instant, and made due again, nothing changes. */
	before = test_snapshot(c);
	ck_reply(job(BA, 1000 + SKEW_MS), 0, 0, 0, 0, 1100 + SKEW_MS, 0);
	freeReplyObject(test_cmd(c, "ZADD %s XX 0 %s 0 %s 0 %s 0 %s 0 %s", SC_DUE(BA), BA, BC, BD, BF, BG));
	ck_reply(job(BA, 1000 + SKEW_MS), 0, 0, 5, 1, 1100 + SKEW_MS, 0);
	ck_snapshot_same(before);
	free(before);
	/* G with a TTL: looked at when its key would expire, + 1 ms. */
	freeReplyObject(test_cmd(c, "PEXPIRE %s 900000", SC_STATE(BG)));
	force_due(BG);
	freeReplyObject(job(BA, 1000 + SKEW_MS));
	ck_assert_int_le(due_of(SC, BG), 1000 + SKEW_MS + 900000 + 1);
	ck_assert_int_gt(due_of(SC, BG), 1000 + SKEW_MS + 900000 + 1 - SLACK_MS);
}
END_TEST

/* More due than the call's limit: the backlog is reported, the rest comes next call. */
START_TEST(test_sc_prune_shard_limit)
{
	freeReplyObject(sc(BA, "10", "1000", "10", 0));
	freeReplyObject(sc(BB, "10", "1000", "10", 100));
	freeReplyObject(sc(BC, "10", "1000", "10", 200));
	/* due at 1000, 1100, 1200 + SKEW_MS */
	ck_reply(ev("sliding_counter_prune_shard", 1, SC_DUE(BA), num(1200 + SKEW_MS), "2", NULL), 2, 2, 2, 0,
		 1200 + SKEW_MS, 1);
	ck_reply(ev("sliding_counter_prune_shard", 1, SC_DUE(BA), num(1200 + SKEW_MS), "2", NULL), 1, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s %s", SC_STATE(BA), SC_STATE(BB), SC_STATE(BC)), 0);
}
END_TEST

/* The job prunes by the parameters each hash records, not by anything else. */
START_TEST(test_sc_prune_by_recorded_parameters)
{
	/* the same sub-window 0, by 10 sub-windows of 100 ms and of 1000 ms */
	freeReplyObject(sc(BA, "10", "1000", "10", 50));
	freeReplyObject(sc(BB, "10", "10000", "10", 50));
	ck_assert_int_eq(due_of(SC, BA), 1000 + SKEW_MS);
	ck_assert_int_eq(due_of(SC, BB), 10000 + SKEW_MS);
	force_due(BB);
	ck_reply(job(BA, 1000 + SKEW_MS), 1, 1, 2, 0, 10000 + SKEW_MS, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SC_STATE(BA)), 0);
	ck_cmd("{\"1\", \"50\"}", "HMGET %s 0 t", SC_STATE(BB));
	/* A client changes BB's rule to one sub-window of 20 s: the job follows the record. */
	ck_sc(sc(BB, "10", "20000", "1", 60), 1, 8, 0, 19940);
	ck_cmd("{\"20000\", \"1\", \"2\"}", "HMGET %s window_ms sub_windows 0", SC_STATE(BB));
	ck_reply(job(BA, 10000 + SKEW_MS), 0, 0, 1, 0, 20000 + SKEW_MS, 0);
	ck_reply(job(BA, 20000 + SKEW_MS), 1, 1, 1, 0, -1, 0);
}
END_TEST

/* What the acquire then sees is what it saw before the prune. */
START_TEST(test_sc_prune_changes_no_answer)
{
	const char *p = "/same";
	char *before;

	freeReplyObject(sc(p, "3", "1000", "10", 0));
	freeReplyObject(sc(p, "3", "1000", "10", 99));
	freeReplyObject(sc(p, "3", "1000", "10", 100));
	before = test_snapshot(c);
	ck_state(st(p, "3", "1000", "10", "1050"), 1, 2, 50, 1100 + SKEW_MS - 100, REC_3_1000_10, "");
	ck_snapshot_same(before);
	free(before);
	/* At Redis 1050 nothing goes: a client whose clock says 999 counts sub-window 0. */
	force_due(p);
	ck_reply(job(p, 1050), 0, 0, 1, 0, 1000 + SKEW_MS, 0);
	ck_state(st(p, "3", "1000", "10", "999"), 3, 0, 1, 1100 + SKEW_MS - 100, REC_3_1000_10, "");
	ck_reply(job(p, 1050 + SKEW_MS), 1, 0, 1, 0, 1100 + SKEW_MS, 0);
	ck_state(st(p, "3", "1000", "10", "1050"), 1, 2, 50, 1100 + SKEW_MS - 100, REC_3_1000_10, "");
	ck_sc(sc(p, "3", "1000", "10", 1050), 1, 1, 0, 50);
}
END_TEST

/* A hash may hold a mark and no live count (here by hand): the job keeps the
 * mark until it is past the horizon. */
START_TEST(test_sc_prune_keeps_a_bare_mark)
{
	const char *p = "/bare";

	ck_sc(sc(p, "3", "1000", "1", 5000), 1, 2, 0, 1000);
	ck_assert_int_eq(due_of(SC, p), 6000 + SKEW_MS);
	freeReplyObject(test_cmd(c, "HDEL %s 5", SC_STATE(p)));
	force_due(p);
	ck_reply(job(p, 6000), 0, 0, 1, 0, 5000 + SKEW_MS, 0);
	ck_cmd("{\"5000\", nil}", "HMGET %s t 5", SC_STATE(p));
	/* A client whose clock says 4000 is still served at 5000; the due time stays the earlier one. */
	ck_sc(sc(p, "3", "1000", "1", 4000), 1, 2, 0, 1000);
	ck_assert_int_eq(due_of(SC, p), 5000 + SKEW_MS);
	freeReplyObject(test_cmd(c, "HDEL %s 5", SC_STATE(p)));
	ck_reply(job(p, 4999 + SKEW_MS), 0, 0, 0, 0, 5000 + SKEW_MS, 0);
	ck_reply(job(p, 5000 + SKEW_MS), 0, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SC_STATE(p)), 0);
}
END_TEST

/* ---- the state read ----------------------------------------------------------------- */

START_TEST(test_sc_state)
{
	const char *p = "/state";
	char *before;
	redisReply *r;

	ck_state(st(p, "3", "1000", "10", "0"), 0, 3, 0, -2, "", "");
	ck_state(st(p, "", "", "", "0"), 0, -1, -1, -2, "", "");
	freeReplyObject(sc(p, "3", "1000", "10", 0));
	freeReplyObject(sc(p, "3", "1000", "10", 99));
	freeReplyObject(sc(p, "3", "1000", "10", 100));
	before = test_snapshot(c);
	ck_state(st(p, "3", "1000", "10", "500"), 3, 0, 500, 1100 + SKEW_MS - 100, REC_3_1000_10, "");
	ck_state(st(p, "3", "1000", "10", "50"), 3, 0, 900, 1100 + SKEW_MS - 100, REC_3_1000_10, ""); /* at 100 */
	ck_state(st(p, "3", "1000", "10", "1000"), 1, 2, 100, 1100 + SKEW_MS - 100, REC_3_1000_10, "");
	ck_state(st(p, "3", "1000", "10", "1100"), 0, 3, 0, 1100 + SKEW_MS - 100, REC_3_1000_10, "");
	/* "" = the recorded ones; the ones given win */
	ck_state(st(p, "", "", "", "500"), 3, 0, 500, 1100 + SKEW_MS - 100, REC_3_1000_10, "");
	ck_state(st(p, "5", "", "", "1000"), 1, 4, 100, 1100 + SKEW_MS - 100, REC_3_1000_10, "");
	/* one sub-window of 2000 ms: field 0 (0 to 2000 ms) holds 2; field 1 would be 2000 to 4000 ms */
	ck_state(st(p, "", "2000", "1", "1000"), 2, 1, 1000, 1100 + SKEW_MS - 100, REC_3_1000_10, "");
	ck_state(st(p, "", "", "5", "500"), 3, 0, 500, 1100 + SKEW_MS - 100, REC_3_1000_10, "");
	ck_snapshot_same(before);
	free(before);
	/* Refused: what does not fit, given or with a recorded one. */
	ck_error(st(p, "", "", "7", "500"), "ERR sluice: sub_windows ");
	ck_error(st(p, "", "999", "", "500"), "ERR sluice: sub_windows ");
	ck_error(st(p, "0", "", "", "500"), "ERR sluice: limit ");
	ck_error(st(p, "", "x", "", "500"), "ERR sluice: window_ms ");
	ck_error(st(p, "", "", "", "-5"), "ERR sluice: now ");
	ck_error(ev("sliding_counter_state", 1, SC_STATE(p), "3", "1000", "10", "0", NULL),
		 "ERR sluice: sliding_counter_state takes 2 KEYS");
	ck_error(ev("sliding_counter_state", 2, SC_STATE(p), SC_META(p), "3", "1000", "10", NULL),
		 "ERR sluice: sliding_counter_state takes 2 KEYS");
	/* No-writes: EVAL_RO runs it (and a replica could). */
	{
		const char *args[] = { SC_STATE(p), SC_META(p), "", "", "", "500" };

		r = eval_argv("sliding_counter_state", 1, 2, 6, args);
		ck_state(r, 3, 0, 500, 1100 + SKEW_MS - 100, REC_3_1000_10, "");
	}
	/* A hash that records nothing (another writer's, by hand): with no parameters, every
	 * sub-window field counts, and neither remaining nor reset_ms is known. */
	freeReplyObject(test_cmd(c, "HSET %s 3 2 7 1 x 9", SC_STATE("/bare")));
	ck_state(st("/bare", "", "", "", "500"), 3, -1, -1, -1, "", "");
	ck_state(st("/bare", "5", "", "", "500"), 3, -1, -1, -1, "", "");
	/* sub-windows of 100 ms at 500: 3 is live (until 1300), 7 is in the future */
	ck_state(st("/bare", "5", "1000", "10", "500"), 2, 3, 800, -1, "", "");
	ck_state(st("/bare", "", "1000", "10", "500"), 2, -1, 800, -1, "", "");
}
END_TEST

/* ---- table tests: (parameters, calls with now) -> exact replies ------------ */

struct sc_step {
	long long now;     /* ms; -1 ends the table */
	long long n;       /* cost; 0: "" */
	long long want[4]; /* allowed, remaining, retry_after_ms, reset_ms */
	long long ttl;     /* when admitted: the counter's PTTL right after the call */
};

struct sc_case {
	const char *name;
	const char *limit, *window, *subs;
	struct sc_step steps[40];
};

#define SC_END { -1, 0, { 0, 0, 0, 0 }, 0 }

/* TTL (last column): until the current sub-window leaves the window, and SKEW_MS
 * more for the mark, from the caller's now. */
static const struct sc_case sc_cases[] = {
	{ "limit 3 per 1000 ms in 10 sub-windows of 100 ms",
	  "3",
	  "1000",
	  "10",
	  { /* sub-window 0 gets 0 and 99, sub-window 1 gets 100 (just after the boundary) */
	    { 0, 0, { 1, 2, 0, 1000 }, 11000 },
	    { 99, 0, { 1, 1, 0, 901 }, 10901 },
	    { 100, 0, { 1, 0, 0, 900 }, 11100 },
	    /* refused in the same ms: sub-window 0 (2 requests) must leave, at 1000 */
	    { 100, 0, { 0, 0, 900, 900 }, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0 },
	    /* at 1000 sub-window 0 has left the window, even its request of 99 */
	    { 1000, 0, { 1, 1, 0, 100 }, 11000 },
	    { 1000, 0, { 1, 0, 0, 100 }, 11000 },
	    { 1000, 0, { 0, 0, 100, 100 }, 0 },
	    { 1099, 0, { 0, 0, 1, 1 }, 0 },
	    { 1100, 0, { 1, 0, 0, 900 }, 11000 },
	    /* an older now is served at the stored 1100 */
	    { 1050, 0, { 0, 0, 900, 900 }, 0 },
	    /* at 2000 the request of 1100 (sub-window 11) still counts, until 2100 */
	    { 2000, 0, { 1, 1, 0, 100 }, 11000 },
	    SC_END } },
	{ "a client that keeps retrying gets in as sub-windows leave",
	  "2",
	  "1000",
	  "4",
	  { { 0, 0, { 1, 1, 0, 1000 }, 11000 },
	    { 300, 0, { 1, 0, 0, 700 }, 10950 },
	    { 400, 0, { 0, 0, 600, 600 }, 0 },
	    { 500, 0, { 0, 0, 500, 500 }, 0 },
	    { 600, 0, { 0, 0, 400, 400 }, 0 },
	    { 700, 0, { 0, 0, 300, 300 }, 0 },
	    { 800, 0, { 0, 0, 200, 200 }, 0 },
	    { 900, 0, { 0, 0, 100, 100 }, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0 },
	    { 1000, 0, { 1, 0, 0, 250 }, 11000 },
	    { 1100, 0, { 0, 0, 150, 150 }, 0 },
	    { 1249, 0, { 0, 0, 1, 1 }, 0 },
	    { 1250, 0, { 1, 0, 0, 750 }, 11000 },
	    SC_END } },
	{ "limit 4, the wait is for enough old requests to leave",
	  "4",
	  "600",
	  "3",
	  { /* sub-windows of 200 ms: 1 in sub 0, 1 in sub 1, 2 in sub 2 */
	    { 10, 0, { 1, 3, 0, 590 }, 10590 },
	    { 210, 0, { 1, 2, 0, 390 }, 10590 },
	    { 410, 0, { 1, 1, 0, 190 }, 10590 },
	    { 410, 0, { 1, 0, 0, 190 }, 10590 },
	    /* sum 4: one must leave: sub 0 at 600 */
	    { 500, 0, { 0, 0, 100, 100 }, 0 },
	    { 600, 0, { 1, 0, 0, 200 }, 10600 },
	    /* sum 4 again (sub 1, sub 2 x2, sub 3): sub 1 leaves at 800 */
	    { 799, 0, { 0, 0, 1, 1 }, 0 },
	    /* at 800 sub 1 left: sum 3, admitted; at 1000 sub 2 (2 requests) leaves */
	    { 800, 0, { 1, 0, 0, 200 }, 10600 },
	    { 801, 0, { 0, 0, 199, 199 }, 0 },
	    SC_END } },
	{ "costs: limit 6 per 600 ms in 3 sub-windows, n 1 to 3",
	  "6",
	  "600",
	  "3",
	  { { 0, 3, { 1, 3, 0, 600 }, 10600 },
	    { 250, 2, { 1, 1, 0, 350 }, 10550 },
	    /* 2 more do not fit (5 + 2 > 6): sub 0 (3) leaves at 600 */
	    { 300, 2, { 0, 1, 300, 300 }, 0 },
	    { 300, 1, { 1, 0, 0, 300 }, 10500 },
	    /* at 600: sub 0 left, sub 1 holds 3: 3 more fit, not 4 (n > remaining: after sub 1 at 800) */
	    { 600, 3, { 1, 0, 0, 200 }, 10600 },
	    { 601, 1, { 0, 0, 199, 199 }, 0 },
	    /* n > limit: never */
	    { 601, 7, { 0, 0, -1, 199 }, 0 },
	    /* at 800 sub 1 left: 3 fit; then sub 3 (3) must leave, at 1200 */
	    { 800, 3, { 1, 0, 0, 400 }, 10600 },
	    { 999, 3, { 0, 0, 201, 201 }, 0 },
	    { 1000, 1, { 0, 0, 200, 200 }, 0 },
	    { 1200, 3, { 1, 0, 0, 200 }, 10600 },
	    SC_END } },
};

START_TEST(test_table)
{
	const struct sc_case *tc = &sc_cases[_i];
	const char *p = "/table", *key = SC_STATE(p);

	for (int i = 0; tc->steps[i].now >= 0; i++) {
		const struct sc_step *s = &tc->steps[i];
		char where[256], *before = NULL;
		redisReply *r;

		snprintf(where, sizeof(where), "%s, step %d (now %lld, n %lld)", tc->name, i, s->now, s->n);
		if (!s->want[0]) {
			/* A rejected request writes nothing and extends no TTL: mark the TTL first. */
			freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", key, MARKER_TTL));
			before = test_snapshot(c);
		}
		r = acquire(SC, p, tc->limit, tc->window, tc->subs, s->n ? num(s->n) : NULL, num(s->now));
		check_sc(where, 0, r, s->want);
		if (s->want[0]) {
			ck_assert_msg(in_registry(SC, p), "%s: path not registered", where);
			check_pttl(where, 0, key, s->ttl);
			/* Virtual time: keep the state from expiring in real time. */
			freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", key, MARKER_TTL));
			continue;
		}
		ck_snapshot_same(before);
		check_pttl(where, 0, key, MARKER_TTL);
		free(before);
	}
}
END_TEST

/* ---- the skew scenario (issue 8, item 3) ----------------------------------- */

#define SKEW_PATH "/skew"
static long long skew_first_field; /* the sub-window of the first ten admissions */
static long long skew_field_left;  /* Redis time it was first missed */

static int skew_call(long long now)
{
	return (int)test_acquire(c, TEST_EVALSHA, "sliding_counter", SKEW_PATH, now, "10", "10000", "10", NULL);
}

static void skew_prune(long long r)
{
	freeReplyObject(job(SKEW_PATH, r));
}

static void skew_watch(long long r)
{
	if (test_cmd_int(c, "HEXISTS %s %lld", SC_STATE(SKEW_PATH), skew_first_field))
		skew_field_left = 0;
	else if (!skew_field_left && test_cmd_int(c, "EXISTS %s", SC_STATE(SKEW_PATH)))
		skew_field_left = r;
}

/*
 * 10 per 10 s in ten sub-windows of 1 s, clients 5 s behind Redis
 * (tests/window_trace.h), the shard job at Redis time every second.  The
 * model (served at max(now, t), a request of sub-window j counts until
 * (j + 10) s) admits at c0 + 0 .. 450 (sub-window c0 / 1000) and c0 + 10000
 * .. 10450: 20 in 12 s.  The 0.1 prune, at Redis time, found sub-window
 * c0 / 1000 out of the window at R0 + 5000 (the clients' c0 + 5000), deleted
 * the hash and its t, and the clients started afresh: 30.  Now the first
 * sub-window leaves at R0 + 10000, when the clients' own timeline gets there
 * (the admission of c0 + 10000 removes it); the path is due at R0 + 15000
 * (that sub-window's end at the horizon), when the job finds it gone already
 * and reschedules at the next one's, R0 + 25000, when every client within
 * the horizon is past the last ten (R - 10000 = c0 + 20000): the hash goes
 * there and the path leaves the registry.  Without the worker it goes by its
 * TTL: the window's end and the horizon from the last admission's now,
 * (c0 + 20000) + 10000 - (c0 + 10450).
 */
START_TEST(test_sc_skew_lagging_clients)
{
	for (int worker = 1; worker >= 0; worker--) {
		struct skew_run run;
		/* in the past, so that no client's now is ahead of Redis TIME (the scripts refuse
		 * one more than the horizon ahead) */
		long long r0 = (test_server_ms(c) / 10000 - 6) * 10000 + SKEW_LAG_MS, c0 = r0 - SKEW_LAG_MS;
		const char *what = worker ? "counter with the worker" : "counter without worker";
		char key[64]; /* test_key's buffers rotate */

		snprintf(key, sizeof(key), "%s", SC_STATE(SKEW_PATH));
		freeReplyObject(test_cmd(c, "FLUSHALL"));
		skew_first_field = c0 / 1000;
		skew_field_left = 0;
		skew_scenario(r0, key, skew_call, worker ? skew_prune : NULL, skew_watch, &run);
		skew_check_admissions(&run, c0, what);
		ck_assert_msg(skew_field_left == r0 + 10000, "%s: the first sub-window left at R0 + %lld", what,
			      skew_field_left - r0);
		ck_assert_int_eq(run.gone_at, (worker ? r0 + 25000 : -1));
		ck_assert_int_eq(in_registry(SC, SKEW_PATH), !worker);
		if (!worker) {
			ck_pttl(SC_STATE(SKEW_PATH), 20000 + 10000 - 10450);
			ck_assert_int_eq(due_of(SC, SKEW_PATH), c0 + 10000 + SKEW_MS);
		}
	}
}
END_TEST

/* ---- awkward paths ------------------------------------------------------------ */

/*
 * A path that starts with '}' (issue 8, item 2: in 0.1 its keys carried the
 * empty hash tag and the worker and the client disagreed on its names): the
 * client, the job and the state read use the same key, of the path's shard.
 */
START_TEST(test_sc_brace_path)
{
	const char *p = "}x";
	char want[64];

	snprintf(want, sizeof(want), "sluice:{%u}:sliding_counter:}x", shard_of(p, 2));
	ck_assert_str_eq(SC_STATE(p), want);
	ck_sc(sc(p, "2", "1000", "10", 0), 1, 1, 0, 1000);
	ck_sc(sc(p, "2", "1000", "10", 500), 1, 0, 0, 500);
	ck_sc(sc(p, "2", "1000", "10", 600), 0, 0, 400, 400);
	ck_cmd("{\"1\", \"1\", \"500\"}", "HMGET %s 0 5 t", want);
	ck_assert_int_eq(due_of(SC, p), 1000 + SKEW_MS);
	ck_state(st(p, "", "", "", "600"), 2, 0, 400, 1500 + SKEW_MS - 500, "limit=2 window_ms=1000 sub_windows=10", "");
	ck_reply(job(p, 1000 + SKEW_MS), 1, 0, 1, 0, 1500 + SKEW_MS, 0);
	ck_sc(sc(p, "2", "1000", "10", 1000), 1, 0, 0, 500);
	ck_reply(job(p, 1500 + SKEW_MS), 1, 0, 1, 0, 2000 + SKEW_MS, 0);
	ck_reply(job(p, 2000 + SKEW_MS), 1, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_dbsize(c), 0);
}
END_TEST

/* A path holding NUL bytes (binary-safe ARGV and keys) is counted, pruned and read as any other. */
START_TEST(test_sc_nul_path)
{
	static const char p[] = "/a\0b\0";
	size_t len = sizeof(p) - 1;
	unsigned k = shard_of(p, len);
	struct bin_call b;
	redisReply *r;
	const char *jargs[3];
	size_t jlens[3];

	ck_sc(bin_acquire(p, len, k, "2", 100, "3", "1000", "10"), 1, 1, 0, 1000);
	ck_sc(bin_acquire(p, len, k, "", 200, "3", "1000", "10"), 1, 0, 0, 900);
	ck_sc(bin_acquire(p, len, k, "1", 300, "3", "1000", "10"), 0, 0, 800, 800);
	/* "/a" (the path cut at its NUL) has nothing */
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SC_STATE("/a")), 0);
	bin_keys(&b, p, len, k);
	r = bin_cmd("HGET", b.keys[0], b.lens[0], "1");
	ck_assert_str_eq(r->str, "2");
	freeReplyObject(r);
	/* the registry member is the whole path */
	{
		const char *v[3] = { "ZSCORE", b.keys[2], p };
		size_t vl[3] = { 6, b.lens[2], len };

		r = redisCommandArgv(c, 3, v, vl);
		ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
		ck_assert_int_eq(atoll(r->str), 1100 + SKEW_MS);
		freeReplyObject(r);
	}
	/* the state read */
	{
		const char *v[6] = { b.keys[0], b.keys[1], "", "", "", "300" };
		size_t vl[6] = { b.lens[0], b.lens[1], 0, 0, 0, 3 };

		ck_state(test_script_argv(c, TEST_EVAL, "sliding_counter_state", 2, 6, v, vl), 3, 0, 800,
			 1200 + SKEW_MS - 200, "limit=3 window_ms=1000 sub_windows=10", "");
	}
	/* the job: sub-window 1 leaves at 1100, 2 at 1200, then the hash and the path go */
	jargs[0] = b.keys[2], jlens[0] = b.lens[2];
	jargs[1] = num(1100 + SKEW_MS), jlens[1] = strlen(jargs[1]);
	jargs[2] = "500", jlens[2] = 3;
	ck_reply(test_script_argv(c, TEST_EVAL, "sliding_counter_prune_shard", 1, 3, jargs, jlens), 1, 0, 1, 0,
		 1200 + SKEW_MS, 0);
	jargs[1] = num(1200 + SKEW_MS), jlens[1] = strlen(jargs[1]);
	ck_reply(test_script_argv(c, TEST_EVAL, "sliding_counter_prune_shard", 1, 3, jargs, jlens), 1, 1, 1, 0, -1,
		 0);
	ck_assert_int_eq(test_dbsize(c), 0);
}
END_TEST

/*
 * Keys of another shard: refused, naming the path's shard, when the path has
 * no state there (the check costs a CRC16, so it is made for a new path only).
 */
START_TEST(test_sc_wrong_shard)
{
	const char *p = "/v";
	unsigned k = shard_of(p, 2), other = (k + 1) % SHARD_COUNT;
	char want[128];
	char *before;

	freeReplyObject(sc("/k", "3", "1000", "10", 1000));
	before = test_snapshot(c);
	snprintf(want, sizeof(want), "ERR sluice: path \"/v\" belongs to shard %u, not %u (its keys carry {%u})", k,
		 other, k);
	ck_error(bin_acquire(p, 2, other, "", 1000, "3", "1000", "10"), want);
	ck_error(bin_acquire(p, 2, other, "", 1000, "3", "1000", "10"), want);
	ck_snapshot_same(before);
	free(before);
	/* its own shard's keys take it */
	ck_sc(bin_acquire(p, 2, k, "", 1000, "3", "1000", "10"), 1, 2, 0, 1000);
}
END_TEST

/* ---- the reference model, against the scripts over random traces ------------ */

#define TR_PATHS 4
#define TR_JOB_LIMIT "500"

struct tr_path {
	char name[24];
	char key[96];
	struct cm_rule rule; /* what its clients pass now */
	long long lag;       /* the lag of its usual client */
	long long last_now;  /* the now of its previous call */
	int has_ttl;
	long long expire_at;   /* Redis time its TTL ends, when has_ttl */
	long long pexpiretime; /* PEXPIRETIME read when the TTL was set */
};

struct tr {
	uint64_t seed;
	long long pos; /* events so far: the position a failure names */
	long long r;   /* Redis time */
	char sha[41], job_sha[41], registry[64], rules[64], stats[64];
	struct tr_path p[TR_PATHS];
	struct cm_shard m;
};

static const long long tr_subs[] = { 1, 2, 3, 4, 5, 6, 10 };

static void tr_rule(struct model_rng *g, struct cm_rule *r)
{
	r->limit = trace_limit(g);
	r->subs = tr_subs[model_range(g, 0, TEST_N(tr_subs) - 1)];
	r->window = model_max(1, trace_window(g) / r->subs) * r->subs;
}

/* A rule edit that keeps the sub-window length: more or fewer of them, so the live ones stay live. */
static void tr_resize(struct model_rng *g, struct cm_rule *r)
{
	long long sub = r->window / r->subs;

	r->subs = tr_subs[model_range(g, 0, TEST_N(tr_subs) - 1)];
	r->window = sub * r->subs;
}

/* Fails the test: the trace, the event, path i and its rule, then what went wrong (printf-style). */
static void tr_fail(const struct tr *tr, int i, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void tr_fail(const struct tr *tr, int i, const char *event, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ck_abort_msg("sliding_counter trace, seed %llu, event %lld (%s; Redis time %lld; path %s: limit %lld, "
		     "window_ms %lld, sub_windows %lld): %s",
		     (unsigned long long)tr->seed, tr->pos, event, tr->r, tr->p[i].name, tr->p[i].rule.limit,
		     tr->p[i].rule.window, tr->p[i].rule.subs, msg);
}

/* Redis's clock in ms from a TIME reply; frees it. */
static long long tr_time(redisReply *r)
{
	long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;

	freeReplyObject(r);
	return ms;
}

/* The path's hash, its TTL and its due time are the model's: replies of HGETALL, PEXPIRETIME, ZSCORE; frees them. */
static void tr_check_keys(struct tr *tr, int i, const char *event, redisReply *h, redisReply *pexp, redisReply *due)
{
	const struct cm_path *m = &tr->m.p[i];
	const struct tr_path *p = &tr->p[i];
	size_t want = m->exists ? 2 * (size_t)(m->nf + 5) : 0;
	long long want_exp = !m->exists ? -2 : p->has_ttl ? p->pexpiretime : -1;

	if (h->elements != want)
		tr_fail(tr, i, event, "the hash has %zu fields, the model %zu", h->elements / 2, want / 2);
	for (size_t k = 0; k < h->elements; k += 2) {
		const char *f = h->element[k]->str, *v = h->element[k + 1]->str;
		long long wantv = -1;
		int found = 0;

		if (!strcmp(f, "t"))
			wantv = m->mark, found = 1;
		else if (!strcmp(f, "limit"))
			wantv = m->rec.limit, found = 1;
		else if (!strcmp(f, "window_ms"))
			wantv = m->rec.window, found = 1;
		else if (!strcmp(f, "sub_windows"))
			wantv = m->rec.subs, found = 1;
		else if (!strcmp(f, "rule"))
			found = 2;
		for (int j = 0; !found && j < m->nf; j++)
			if (atoll(f) == m->f[j].idx)
				wantv = m->f[j].count, found = 1;
		if (!found || (found == 1 && atoll(v) != wantv) || (found == 2 && *v))
			tr_fail(tr, i, event, "field %s = %s, the model has %lld (found %d)", f, v, wantv, found);
	}
	if (pexp->integer != want_exp)
		tr_fail(tr, i, event, "PEXPIRETIME %lld, want %lld", pexp->integer, want_exp);
	if ((due->type == REDIS_REPLY_STRING) != m->registered || (m->registered && atoll(due->str) != m->due))
		tr_fail(tr, i, event, "due %s, the model %s %lld", due->type == REDIS_REPLY_STRING ? due->str : "none",
			m->registered ? "has" : "has none", m->due);
	freeReplyObject(h);
	freeReplyObject(pexp);
	freeReplyObject(due);
}

static redisReply *tr_reply(void)
{
	void *r = NULL;

	ck_assert_int_eq(redisGetReply(c, &r), REDIS_OK);
	return r;
}

/* A client call of path i at now with cost n: reply, TTL, hash, due time, in one round trip. */
static void tr_call(struct tr *tr, int i, long long now, long long n)
{
	struct tr_path *p = &tr->p[i];
	char event[96], nb[24], nowb[24], lb[24], wb[24], sb[24];
	const char *argv[] = { "EVALSHA", tr->sha, "5", p->key, SC_META(p->name), tr->registry, tr->rules, tr->stats,
			       p->name, nb, nowb, "", lb, wb, sb };
	long long want[4], ttl, t0, t1;
	redisReply *before, *res, *after, *pexp, *h;
	int same;

	snprintf(nb, sizeof(nb), "%lld", n);
	snprintf(nowb, sizeof(nowb), "%lld", now);
	snprintf(lb, sizeof(lb), "%lld", p->rule.limit);
	snprintf(wb, sizeof(wb), "%lld", p->rule.window);
	snprintf(sb, sizeof(sb), "%lld", p->rule.subs);
	redisAppendCommand(c, "DUMP %s", p->key);
	redisAppendCommand(c, "TIME");
	redisAppendCommandArgv(c, TEST_N(argv), argv, NULL);
	redisAppendCommand(c, "TIME");
	redisAppendCommand(c, "DUMP %s", p->key);
	redisAppendCommand(c, "PEXPIRETIME %s", p->key);
	redisAppendCommand(c, "HGETALL %s", p->key);
	redisAppendCommand(c, "ZSCORE %s %s", tr->registry, p->name);
	before = tr_reply();
	t0 = tr_time(tr_reply());
	res = tr_reply();
	t1 = tr_time(tr_reply());
	after = tr_reply();
	pexp = tr_reply();
	snprintf(event, sizeof(event), "call at now %lld (R - %lld), n %lld", now, tr->r - now, n);
	ttl = cm_call(&tr->m, i, &p->rule, n, now, want);
	same = res->type == REDIS_REPLY_ARRAY && res->elements == 5 && res->element[4]->type == REDIS_REPLY_STRING &&
	       res->element[4]->len == 0;
	for (int k = 0; same && k < 4; k++)
		same = res->element[k]->type == REDIS_REPLY_INTEGER && res->element[k]->integer == want[k];
	if (!same) {
		char got[256];

		tr_fail(tr, i, event, "script %s, model {%lld, %lld, %lld, %lld, \"\"}",
			test_show_reply(res, got, sizeof(got)), want[0], want[1], want[2], want[3]);
	}
	if (want[0]) {
		/* to the ms when t0 = t1 (Redis measures the script's PEXPIRE from when it ran), else within them */
		if (pexp->integer < t0 + ttl || pexp->integer > t1 + ttl)
			tr_fail(tr, i, event, "expires %lld ms after the call, want %lld", pexp->integer - t0, ttl);
		p->has_ttl = 1;
		p->expire_at = tr->r + ttl;
		p->pexpiretime = pexp->integer;
	} else if (before->type != after->type || before->len != after->len ||
		   (before->type == REDIS_REPLY_STRING && memcmp(before->str, after->str, before->len))) {
		tr_fail(tr, i, event, "a rejected call changed %s", p->key);
	}
	h = tr_reply();
	tr_check_keys(tr, i, event, h, pexp, tr_reply());
	freeReplyObject(res);
	freeReplyObject(before);
	freeReplyObject(after);
}

/* The shard job at Redis time tr->r over the trace's shard, then every path's keys. */
static void tr_job(struct tr *tr)
{
	char now[24], event[64];
	long long want[6];
	redisReply *res;
	int same;

	snprintf(now, sizeof(now), "%lld", tr->r);
	snprintf(event, sizeof(event), "shard job at %lld", tr->r);
	redisAppendCommand(c, "EVALSHA %s 1 %s %s %s", tr->job_sha, tr->registry, now, TR_JOB_LIMIT);
	for (int i = 0; i < TR_PATHS; i++) {
		redisAppendCommand(c, "HGETALL %s", tr->p[i].key);
		redisAppendCommand(c, "PEXPIRETIME %s", tr->p[i].key);
		redisAppendCommand(c, "ZSCORE %s %s", tr->registry, tr->p[i].name);
	}
	res = tr_reply();
	cm_job(&tr->m, tr->r, want);
	same = res->type == REDIS_REPLY_ARRAY && res->elements == 6;
	for (int k = 0; same && k < 6; k++)
		same = res->element[k]->type == REDIS_REPLY_INTEGER && res->element[k]->integer == want[k];
	if (!same) {
		char got[256];

		tr_fail(tr, 0, event, "job %s, model {%lld, %lld, %lld, %lld, %lld, %lld}",
			test_show_reply(res, got, sizeof(got)), want[0], want[1], want[2], want[3], want[4], want[5]);
	}
	freeReplyObject(res);
	for (int i = 0; i < TR_PATHS; i++) {
		redisReply *h = tr_reply(), *pexp, *due;

		pexp = tr_reply();
		due = tr_reply();
		tr_check_keys(tr, i, event, h, pexp, due);
	}
}

/* A client's now: on time, the path's usual lag, the same ms as the last call, any lag, the whole horizon. */
static long long tr_now(struct model_rng *g, struct tr_path *p, long long r)
{
	long long x = model_range(g, 0, 99), now;

	if (x < 35)
		now = r;
	else if (x < 60)
		now = r - p->lag;
	else if (x < 75)
		now = p->last_now;
	else if (x < 90)
		now = r - model_range(g, 0, SKEW_MS);
	else
		now = r - SKEW_MS;
	now = model_max(now, r - SKEW_MS);
	p->last_now = now;
	return now;
}

/* Keys whose TTL Redis time has passed are gone (the test deletes them: real expiry is far later). */
static void tr_expire(struct tr *tr)
{
	for (int i = 0; i < TR_PATHS; i++) {
		struct tr_path *p = &tr->p[i];

		if (tr->m.p[i].exists && p->has_ttl && tr->r >= p->expire_at) {
			freeReplyObject(test_cmd(c, "DEL %s", p->key));
			p->has_ttl = 0;
			cm_gone(&tr->m.p[i]);
		}
	}
}

/*
 * A trace of `calls` client calls (seed `seed`) over TR_PATHS paths of one
 * shard with random rules, costs 1..3 and clients lagging Redis by up to
 * SKEW_MS (same-ms calls and stale times among them); at random instants:
 * the shard job at Redis time (2.5%), a lost TTL (0.5%: PERSIST, as if a
 * client had written without one), an edit of a path's limit (1%), of its
 * whole rule (0.3%) or of its number of sub-windows, their length kept (0.3%:
 * what the counter holds stays live, the due time may move earlier); keys expire as Redis time passes their TTL.  And, where
 * off-by-one errors hide (3%): Redis time moves to 1 ms before or to the
 * instant a path's oldest sub-window leaves the window, for a client on time
 * or one that lags by the whole horizon, or to 1 ms before or to its due
 * time, for the job.  Every reply, TTL, hash and due time is compared with
 * the model's.
 */
static void tr_run(uint64_t seed, int calls)
{
	struct tr tr = { .seed = seed };
	struct model_rng g = { seed };
	unsigned k;

	trace_load("sliding_counter", tr.sha);
	trace_load("sliding_counter_prune_shard", tr.job_sha);
	tr.r = 1700000000000LL + model_range(&g, 0, 999999);
	tr.m.np = TR_PATHS;
	tr.m.skew = SKEW_MS;
	/* four paths of one shard: "/trace/0" and the next three names of its shard */
	k = shard_of("/trace/0", 8);
	for (int i = 0, j = 0; i < TR_PATHS; j++) {
		struct tr_path *p = &tr.p[i];

		snprintf(p->name, sizeof(p->name), "/trace/%d", j);
		if (shard_of(p->name, strlen(p->name)) != k)
			continue;
		snprintf(p->key, sizeof(p->key), "%s", SC_STATE(p->name));
		tr_rule(&g, &p->rule);
		p->lag = model_range(&g, 0, SKEW_MS);
		p->last_now = tr.r;
		tr.m.p[i].name = p->name;
		tr.m.p[i].len = strlen(p->name);
		i++;
	}
	snprintf(tr.registry, sizeof(tr.registry), "%s", SC_DUE(tr.p[0].name));
	snprintf(tr.rules, sizeof(tr.rules), "%s", test_shard_key("sliding_counter", tr.p[0].name, "rules"));
	snprintf(tr.stats, sizeof(tr.stats), "%s", test_shard_key("sliding_counter", tr.p[0].name, "stats"));
	for (int done = 0; done < calls; tr.pos++) {
		long long x = model_range(&g, 0, 999), lag = model_range(&g, 0, 1) * SKEW_MS;
		long long n = model_range(&g, 1, 3), back = model_range(&g, 0, 1);
		int i = (int)model_range(&g, 0, TR_PATHS - 1);
		struct tr_path *p = &tr.p[i];
		struct cm_path *m = &tr.m.p[i];
		long long edge = cm_edge(m);

		if (x >= 985 && m->registered && m->due - back > tr.r) {
			tr.r = m->due - back;
			tr_expire(&tr);
			tr_job(&tr);
		} else if (x >= 970 && edge >= 0 && edge + lag - back > tr.r) {
			tr.r = edge + lag - back;
			tr_expire(&tr);
			if (x % 2)
				tr_job(&tr);
			p->last_now = tr.r - lag;
			tr_call(&tr, i, tr.r - lag, n);
			done++;
		} else {
			tr.r += trace_step(&g);
			tr_expire(&tr);
			if (x < 25) {
				tr_job(&tr);
			} else if (x < 30) {
				if (m->exists) {
					freeReplyObject(test_cmd(c, "PERSIST %s", p->key));
					p->has_ttl = 0;
				}
			} else if (x < 40) {
				p->rule.limit = trace_limit(&g);
			} else if (x < 43) {
				tr_rule(&g, &p->rule);
			} else if (x < 46) {
				tr_resize(&g, &p->rule);
			} else {
				tr_call(&tr, i, tr_now(&g, p, tr.r), n);
				done++;
			}
		}
	}
}

/* 10,000 calls per seed. */
START_TEST(test_sc_model_traces)
{
	static const uint64_t seeds[] = { 2000, 2001, 2002, 2003, 0x5eed, 0xdeadbeef };

	tr_run(seeds[_i], 10000);
}
END_TEST

/* ---- validation ------------------------------------------------------------ */

/*
 * Each bad call (KEYS of "/v"'s shard, by the contract, unless the case
 * changes one) fails with an error naming the argument, and writes nothing
 * (tests/script_fixture.c check_bad_call: state of every algorithm first).
 */
struct sc_bad {
	const char *what;
	int key;            /* 1..5: KEYS[key] replaced by `key_as`; 0: none */
	const char *key_as; /* "%u" takes the path's shard */
	int drop_key;       /* 1: only 4 KEYS */
	const char *argv[8]; /* ARGV path, n, now, rule, limit, window_ms, sub_windows (NULL ends them early) */
	int nargv;
	const char *error;
};

static const struct sc_bad sc_bad[] = {
	{ "empty path", 0, NULL, 0, { "", "", "9000", "", "3", "1000", "10" }, 7, "ERR sluice: path " },
	{ "n 0", 0, NULL, 0, { "/v", "0", "9000", "", "3", "1000", "10" }, 7, "ERR sluice: n " },
	{ "n -1", 0, NULL, 0, { "/v", "-1", "9000", "", "3", "1000", "10" }, 7, "ERR sluice: n " },
	{ "n 1.5", 0, NULL, 0, { "/v", "1.5", "9000", "", "3", "1000", "10" }, 7, "ERR sluice: n " },
	{ "n 2^53", 0, NULL, 0, { "/v", "9007199254740992", "9000", "", "3", "1000", "10" }, 7, "ERR sluice: n " },
	{ "now word", 0, NULL, 0, { "/v", "", "now", "", "3", "1000", "10" }, 7, "ERR sluice: now " },
	{ "now -1", 0, NULL, 0, { "/v", "", "-1", "", "3", "1000", "10" }, 7, "ERR sluice: now " },
	{ "rule name and numbers", 0, NULL, 0, { "/v", "", "9000", "api", "3", "1000", "10" }, 7, "ERR sluice: ARGV[5] (limit) must be \"\" with a rule" },
	{ "rule * and numbers", 0, NULL, 0, { "/v", "", "9000", "*", "", "", "10" }, 7, "ERR sluice: ARGV[7] (sub_windows) must be \"\" with a rule" },
	{ "rule unknown", 0, NULL, 0, { "/v", "", "9000", "api", "", "", "" }, 7, "ERR sluice: no rule \"api\" (in sluice:{" },
	{ "rule unknown, no numbers", 0, NULL, 0, { "/v", "", "9000", "api" }, 4, "ERR sluice: no rule \"api\" (in sluice:{" },
	{ "rule not a name", 0, NULL, 0, { "/v", "", "9000", "**" }, 4, "ERR sluice: rule (ARGV[4]) must be" },
	{ "limit 0", 0, NULL, 0, { "/v", "", "9000", "", "0", "1000", "10" }, 7, "ERR sluice: limit " },
	{ "limit empty", 0, NULL, 0, { "/v", "", "9000", "", "", "1000", "10" }, 7, "ERR sluice: limit " },
	{ "limit 1e3", 0, NULL, 0, { "/v", "", "9000", "", "1e3", "1000", "10" }, 7, "ERR sluice: limit " },
	{ "window_ms 0", 0, NULL, 0, { "/v", "", "9000", "", "3", "0", "10" }, 7, "ERR sluice: window_ms " },
	{ "window_ms 2^53", 0, NULL, 0, { "/v", "", "9000", "", "3", "9007199254740992", "1" }, 7,
	  "ERR sluice: window_ms " },
	{ "sub_windows 0", 0, NULL, 0, { "/v", "", "9000", "", "3", "1000", "0" }, 7, "ERR sluice: sub_windows " },
	{ "sub_windows 3 of 1000", 0, NULL, 0, { "/v", "", "9000", "", "3", "1000", "3" }, 7,
	  "ERR sluice: sub_windows " },
	{ "sub_windows > window_ms", 0, NULL, 0, { "/v", "", "9000", "", "3", "1000", "2000" }, 7,
	  "ERR sluice: sub_windows " },
	{ "sub_windows 2.5", 0, NULL, 0, { "/v", "", "9000", "", "3", "1000", "2.5" }, 7, "ERR sluice: sub_windows " },
	{ "sub_windows empty", 0, NULL, 0, { "/v", "", "9000", "", "3", "1000", "" }, 7, "ERR sluice: sub_windows " },
	{ "6 ARGV", 0, NULL, 0, { "/v", "", "9000", "", "3", "1000" }, 6, "ERR sluice: sliding_counter takes ARGV " },
	{ "4 KEYS", 0, NULL, 1, { "/v", "", "9000", "", "3", "1000", "10" }, 7,
	  "ERR sluice: sliding_counter takes 5 KEYS" },
	{ "KEYS[1] of 0.1's layout", 1, "sluice:{/v}:sliding_counter", 0, { "/v", "", "9000", "", "3", "1000", "10" },
	  7, "ERR sluice: KEYS[1] " },
	{ "KEYS[1] shard 1024", 1, "sluice:{1024}:sliding_counter:/v", 0, { "/v", "", "9000", "", "3", "1000", "10" },
	  7, "ERR sluice: KEYS[1] " },
	{ "KEYS[1] of another path", 1, "sluice:{%u}:sliding_counter:/w", 0,
	  { "/v", "", "9000", "", "3", "1000", "10" }, 7, "ERR sluice: KEYS[1] " },
	{ "KEYS[2] of another algorithm", 2, "sluice:{%u}:leaky_bucket_meta:/v", 0,
	  { "/v", "", "9000", "", "3", "1000", "10" }, 7, "ERR sluice: KEYS[2] " },
	{ "KEYS[3] a 0.1 registry", 3, "sluice:registry:sliding_counter", 0, { "/v", "", "9000", "", "3", "1000", "10" },
	  7, "ERR sluice: KEYS[3] " },
	{ "KEYS[4]", 4, "sluice:{%u}:rule", 0, { "/v", "", "9000", "", "3", "1000", "10" }, 7, "ERR sluice: KEYS[4] " },
	{ "KEYS[5]", 5, "sluice:{%u}:stat", 0, { "/v", "", "9000", "", "3", "1000", "10" }, 7, "ERR sluice: KEYS[5] " },
};

/* An explicit now more than the horizon ahead of Redis TIME is refused (it would become the mark); nothing written. */
START_TEST(test_sc_now_far_ahead)
{
	long long server = test_server_ms(c);
	char *before;

	freeReplyObject(sc("/v", "3", "1000", "10", 1000));
	before = test_snapshot(c);
	ck_error(sc("/v", "3", "1000", "10", server + SKEW_MS + 60000), "ERR sluice: now (ARGV[3]) ");
	ck_snapshot_same(before);
	free(before);
	ck_sc(sc("/v", "3", "1000", "10", server + SKEW_MS - 60000), 1, 2, 0,
	      ((server + SKEW_MS - 60000) / 100 + 10) * 100 - (server + SKEW_MS - 60000));
}
END_TEST

START_TEST(test_bad_arguments_change_nothing)
{
	const struct sc_bad *b = &sc_bad[_i];
	struct bad_call bc = { .script = "sliding_counter", .error = b->error };
	char subst[128];
	int n = 0;

	for (int i = 0; i < 5; i++) {
		if (b->drop_key && i == 4)
			break;
		bc.args[n++] = test_shard_key("sliding_counter", "/v",
					      i == 0 ? "sliding_counter:/v" : i == 1 ? "sliding_counter_meta:/v"
								       : i == 2 ? "registry:sliding_counter"
								       : i == 3 ? "rules"
										: "stats");
		if (b->key == i + 1) {
			snprintf(subst, sizeof(subst), b->key_as, shard_of("/v", 2));
			bc.args[n - 1] = subst;
		}
	}
	bc.nkeys = n;
	for (int i = 0; i < b->nargv; i++)
		bc.args[n++] = b->argv[i];
	bc.args[n] = NULL;
	check_bad_call(&bc);
}
END_TEST

/* The shard job's own arguments, and the foreign layouts' batch prune's (0.1's contract, kept for them). */
static const struct bad_call job_bad[] = {
	{ "sliding_counter_prune_shard", 1, { "sluice:{1}:registry:sliding_counter", "x", "500" }, "ERR sluice: now " },
	{ "sliding_counter_prune_shard", 1, { "sluice:{1}:registry:sliding_counter", "9000", "0" },
	  "ERR sluice: limit " },
	{ "sliding_counter_prune_shard", 1, { "sluice:{1}:registry:sliding_counter", "9000" },
	  "ERR sluice: sliding_counter shard job takes" },
	{ "sliding_counter_prune_shard", 1, { "sluice:{1}:registry:sliding_log", "9000", "500" }, "ERR sluice: KEYS[1] " },
	{ "sliding_counter_prune_shard", 2, { "sluice:{1}:registry:sliding_counter", "k", "9000", "500" },
	  "ERR sluice: sliding_counter shard job takes" },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "9000", "/v", "1000", "3" }, "ERR sluice: sub_windows " },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "9000", "/v", "0", "10" }, "ERR sluice: window_ms " },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "9000", "", "1000", "10" }, "ERR sluice: path " },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "-1", "/v", "1000", "10" }, "ERR sluice: now " },
	{ "sliding_counter_prune", 3, { SC_REG, SCK, "k", "9000", "/v", "1000", "10", "/k", "1000", "7" },
	  "ERR sluice: sub_windows " },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "9000", "/v", "1000" }, "ERR sluice: sliding_counter_prune takes" },
};

START_TEST(test_bad_job_arguments_change_nothing)
{
	check_bad_call(&job_bad[_i]);
}
END_TEST

/* ---- foreign layouts: the batch prune ---------------------------------------------- */

/*
 * The prune of sliding_counter_prune.lua, for hashes of a foreign layout
 * (keys and a registry set as another limiter keeps them; the window from
 * the rule that matches each path): at max(t, now - SKEW_MS) for a hash with
 * a mark, at now for one without.
 */
START_TEST(test_sc_foreign_prune_batch)
{
	const char *reg = "rl:paths";
	char *before;

	/* A: 0 -> 2, 5 -> 1, t = 500 (sub 0 leaves at 1000); B: registered, absent;
	 * C: 1 -> 1 and a field of another sub-window length, no t (another
	 * limiter's: pruned at now); D: a string; E: only a zero count and t:
	 * nothing live; F: t = 5000, ahead of the worker's 1000; G: 105 -> 1, no
	 * t: live at now. */
	freeReplyObject(test_cmd(c, "HSET rl:A 0 2 5 1 t 500"));
	freeReplyObject(test_cmd(c, "HSET rl:C 1 1 9999 4"));
	freeReplyObject(test_cmd(c, "SET rl:D 3"));
	freeReplyObject(test_cmd(c, "HSET rl:E t 5 3 0"));
	freeReplyObject(test_cmd(c, "HSET rl:F 50 1 t 5000"));
	freeReplyObject(test_cmd(c, "HSET rl:G 105 1"));
	freeReplyObject(test_cmd(c, "SADD %s A B C D E F G", reg));
	ck_reply(ev("sliding_counter_prune", 8, reg, "rl:A", "rl:B", "rl:C", "rl:D", "rl:E", "rl:F", "rl:G",
		    num(1000 + SKEW_MS), "A", "1000", "10", "B", "1000", "10", "C", "1000", "10", "D", "1000", "10", "E",
		    "1000", "10", "F", "1000", "10", "G", "1000", "10", NULL),
		 4, 3, 7, 1);
	ck_cmd("{nil, \"1\", \"500\"}", "HMGET rl:A 0 5 t");
	/* C at now = 1000 + SKEW_MS: sub-window 1 has left, and 9999 means nothing: deleted */
	ck_assert_int_eq(test_cmd_int(c, "EXISTS rl:C rl:E"), 0);
	ck_cmd("\"3\"", "GET rl:D");
	ck_cmd("{\"1\", \"5000\"}", "HMGET rl:F 50 t");
	ck_cmd("{\"1\"}", "HMGET rl:G 105");
	ck_cmd("{\"A\", \"D\", \"F\", \"G\"}", "SORT %s ALPHA", reg);
	/* Idempotent. */
	before = test_snapshot(c);
	ck_reply(ev("sliding_counter_prune", 5, reg, "rl:A", "rl:D", "rl:F", "rl:G", num(1000 + SKEW_MS), "A", "1000",
		    "10", "D", "1000", "10", "F", "1000", "10", "G", "1000", "10", NULL),
		 0, 0, 4, 1);
	ck_snapshot_same(before);
	free(before);
	/* G's sub-window 105 leaves at 11500, by the clock of the call (it keeps no mark) */
	ck_reply(ev("sliding_counter_prune", 2, reg, "rl:G", "11499", "G", "1000", "10", NULL), 0, 0, 1, 0);
	ck_reply(ev("sliding_counter_prune", 2, reg, "rl:G", "11500", "G", "1000", "10", NULL), 1, 1, 1, 0);
	ck_reply(ev("sliding_counter_prune", 1, reg, "1000", NULL), 0, 0, 0, 0);
	ck_reply(ev("sliding_counter_prune", 1, reg, NULL), 0, 0, 0, 0);
}
END_TEST

static Suite *sliding_counter_suite(void)
{
	Suite *s = suite_create("sliding_counter");
	TCase *tc;

	tc = test_tcase(s, "sliding_counter", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_sc_fields_removed_on_the_way);
	tcase_add_test(tc, test_sc_many_in_one_ms);
	tcase_add_test(tc, test_sc_foreign_fields);
	tcase_add_test(tc, test_sc_cost);
	tcase_add_test(tc, test_sc_one_sub_window_is_a_fixed_window);
	tcase_add_test(tc, test_sc_uses_redis_time);
	tcase_add_test(tc, test_sc_rejection_removes_nothing);
	tcase_add_test(tc, test_sc_records_parameters_and_due);
	tcase_add_test(tc, test_sc_skew_from_rules_copy);

	tc = test_tcase(s, "shard job", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_sc_prune_boundary);
	tcase_add_test(tc, test_sc_prune_shard_batch);
	tcase_add_test(tc, test_sc_prune_shard_limit);
	tcase_add_test(tc, test_sc_prune_by_recorded_parameters);
	tcase_add_test(tc, test_sc_prune_changes_no_answer);
	tcase_add_test(tc, test_sc_prune_keeps_a_bare_mark);

	tc = test_tcase(s, "state", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_sc_state);

	tc = test_tcase(s, "tables", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_table, 0, TEST_N(sc_cases));

	tc = test_tcase(s, "paths", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_sc_brace_path);
	tcase_add_test(tc, test_sc_nul_path);
	tcase_add_test(tc, test_sc_wrong_shard);

	tc = test_tcase(s, "skew", script_setup, script_teardown, 300);
	tcase_add_test(tc, test_sc_skew_lagging_clients);
	tcase_add_loop_test(tc, test_sc_model_traces, 0, 6);

	tc = test_tcase(s, "validation", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_sc_now_far_ahead);
	tcase_add_loop_test(tc, test_bad_arguments_change_nothing, 0, TEST_N(sc_bad));
	tcase_add_loop_test(tc, test_bad_job_arguments_change_nothing, 0, TEST_N(job_bad));

	tc = test_tcase(s, "foreign", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_sc_foreign_prune_batch);
	return s;
}

int main(void)
{
	return test_run_suite(sliding_counter_suite());
}

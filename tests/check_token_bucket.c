/*
 * lua/token_bucket.lua (the client's acquire, key layout 2: five KEYS, ARGV
 * path, n, now, rule, capacity, rate), token_bucket_reclaim_shard.lua (the
 * worker's reclaim over one shard's due index, by the parameters the bucket
 * records), token_bucket_reclaim.lua (the same for foreign layouts, batched)
 * and token_bucket_state.lua (the admin's read).  The fixture, helpers and
 * time conventions are tests/script_fixture.h's; the reference model is
 * tests/token_bucket_model.h's.
 */
#include "tests/script_fixture.h"
#include "tests/token_bucket_model.h"

#define TB_META(p) test_key((p), "token_bucket_meta")
#define TB_SHARD_REG(p) test_registry("token_bucket", (p))
#define NEVER 9007199254740992LL /* 2^53 ms */

/* A client reply {want[0..4), ""}: allowed, remaining, retry_after_ms, reset_ms, rule; frees r. */
static void check_tb(const char *file, int line, redisReply *r, const long long *want)
{
	char got[512];
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 5 && r->element[4]->type == REDIS_REPLY_STRING &&
		 r->element[4]->len == 0;

	for (size_t i = 0; ok && i < 4; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	ck_assert_msg(ok, "%s:%d: reply %s, want {%lld, %lld, %lld, %lld, \"\"}", file, line,
		      test_show_reply(r, got, sizeof(got)), want[0], want[1], want[2], want[3]);
	freeReplyObject(r);
}
#define ck_tb(r, a, b, d, e) check_tb(__FILE__, __LINE__, (r), TEST_INTS(a, b, d, e))

/* The shard job of p's shard at now (ms), up to 500 paths. */
#define job(p, now) shard_job(TB, (p), (now))

/* The state read by the layout-2 contract: KEYS state, meta; ARGV cap, rate, now (NULL: left out). */
static redisReply *tb_state2(const char *p, const char *cap, const char *rate, const char *now)
{
	return ev("token_bucket_state", 2, TB_KEY(p), TB_META(p), cap, rate, now, NULL);
}

/*
 * A state reply: {used, remaining, reset_ms, last_ms, ttl_ms, recorded, rule}
 * with want[0..4) exact, ttl_ms returned (the caller checks it), recorded
 * as "field=value,..." and the rule; frees r.
 */
static long long check_state(const char *file, int line, redisReply *r, const long long *want, const char *recorded,
			     const char *rule)
{
	char got[512], rec[256] = "";
	long long ttl;
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 7 && r->element[5]->type == REDIS_REPLY_ARRAY &&
		 r->element[6]->type == REDIS_REPLY_STRING && r->element[4]->type == REDIS_REPLY_INTEGER;

	for (size_t i = 0; ok && i < 4; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	ck_assert_msg(ok, "%s:%d: state reply %s, want {%lld, %lld, %lld, %lld, ttl, {%s}, \"%s\"}", file, line,
		      test_show_reply(r, got, sizeof(got)), want[0], want[1], want[2], want[3], recorded, rule);
	for (size_t i = 0; i + 1 < r->element[5]->elements; i += 2)
		snprintf(rec + strlen(rec), sizeof(rec) - strlen(rec), "%s%s=%s", i ? "," : "",
			 r->element[5]->element[i]->str, r->element[5]->element[i + 1]->str);
	ck_assert_msg(strcmp(rec, recorded) == 0, "%s:%d: recorded {%s}, want {%s}", file, line, rec, recorded);
	ck_assert_msg(strcmp(r->element[6]->str, rule) == 0, "%s:%d: rule \"%s\", want \"%s\"", file, line,
		      r->element[6]->str, rule);
	ttl = r->element[4]->integer;
	freeReplyObject(r);
	return ttl;
}
#define ck_state(r, rec, rule, ...) check_state(__FILE__, __LINE__, (r), TEST_INTS(__VA_ARGS__), (rec), (rule))

/* ---- the acquire ------------------------------------------------------------- */

/* retry_after is exact: denied 1 ms before it, admitted at it. */
static const struct {
	const char *rate;
	long long first_token_ms;
} tb_retry_cases[] = {
	{ "1", 1000 },	 { "0.16666666666666666", 6000 }, { "1.5", 667 }, { "7", 143 },
	{ "333.33333333333331", 3 }, { "0.001", 1000000 }, { "2.5", 400 }, { "1000", 1 },
	{ "0.3", 3334 },
};

START_TEST(test_tb_retry_after_is_exact)
{
	const char *p = "/retry", *rate = tb_retry_cases[_i].rate;
	long long r = tb_retry_cases[_i].first_token_ms;
	redisReply *reply;

	reply = tb(p, "3", rate, "3", 0);
	ck_assert_int_eq(test_elem_int(reply, 0), 1);
	ck_assert_int_eq(test_elem_int(reply, 1), 0);
	freeReplyObject(reply);
	/* the times here are explicit, the TTL runs in real time (10 s and some): keep the
	 * bucket, or a slow machine lets it expire between the calls */
	freeReplyObject(test_cmd(c, "PERSIST %s", TB_KEY(p)));
	reply = tb(p, "3", rate, "1", 0);
	ck_assert_int_eq(test_elem_int(reply, 0), 0);
	ck_assert_int_eq(test_elem_int(reply, 2), r);
	freeReplyObject(reply);
	reply = tb(p, "3", rate, "1", r - 1);
	ck_assert_int_eq(test_elem_int(reply, 0), 0);
	ck_assert_int_eq(test_elem_int(reply, 2), 1);
	freeReplyObject(reply);
	reply = tb(p, "3", rate, "1", r);
	ck_assert_int_eq(test_elem_int(reply, 0), 1);
	ck_assert_int_eq(test_elem_int(reply, 1), 0);
	ck_assert_int_eq(test_elem_int(reply, 2), 0);
	freeReplyObject(reply);
}
END_TEST

START_TEST(test_tb_layout_and_default_n)
{
	const char *p = "/layout", *params[] = { "3", "1" };
	long long before, after, last, skew = model_skew_ms();
	redisReply *r;

	ck_tb(tb(p, "5", "2", "2", 1000), 1, 3, 0, 1000);
	ck_cmd("{\"tokens\", \"3\", \"last\", \"1000\", \"capacity\", \"5\", \"rate\", \"2\", \"rule\", \"\"}",
	       "HGETALL %s", TB_KEY(p));
	/* due when it has been full (at 2000) for the skew horizon */
	ck_assert_int_eq(due_of(TB, p), 2000 + skew);
	ck_tb(tb(p, "5", "2", "1", 1250), 1, 2, 0, 1250);
	ck_cmd("{\"tokens\", \"2.5\", \"last\", \"1250\", \"capacity\", \"5\", \"rate\", \"2\", \"rule\", \"\"}",
	       "HGETALL %s", TB_KEY(p));
	ck_pttl(TB_KEY(p), 1251 + skew); /* full at 2500 (+1), and the mark SKEW_MS longer */
	/* the due time follows the state, later too: the job has nothing to do before it */
	ck_assert_int_eq(due_of(TB, p), 2500 + skew);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", TB_SHARD_REG(p)), 1);
	/* the meta is accepted and left alone: the bucket keeps its own fields */
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", TB_META(p)), 0);

	/* n "" and now "": cost 1 at Redis TIME. */
	before = test_server_ms(c);
	r = test_client_call(c, TEST_EVAL, "token_bucket", "/clock", "", -1, params, 2);
	after = test_server_ms(c);
	ck_tb(r, 1, 2, 0, 1000);
	r = test_cmd(c, "HGET %s last", TB_KEY("/clock"));
	last = atoll(r->str);
	freeReplyObject(r);
	ck_assert_int_ge(last, before);
	ck_assert_int_le(last, after);
	ck_assert_int_eq(due_of(TB, "/clock"), last + 1000 + skew);
	/* (a ms or two may have passed: a little more than 1 token was left) */
	r = test_client_call(c, TEST_EVALSHA, "token_bucket", "/clock", "", -1, params, 2);
	ck_assert_int_le(test_elem_int(r, 3), 2000);
	ck_assert_int_gt(test_elem_int(r, 3), 2000 - SLACK_MS);
	ck_tb(r, 1, 1, 0, test_elem_int(r, 3));
}
END_TEST

START_TEST(test_tb_refilled_is_absent)
{
	/* Bucket A was emptied at 0 and has refilled by 3000; B never existed. */
	ck_tb(tb("A", "3", "1", "3", 0), 1, 0, 0, 3000);
	ck_tb(tb("A", "3", "1", "2", 3000), 1, 1, 0, 2000);
	ck_tb(tb("B", "3", "1", "2", 3000), 1, 1, 0, 2000);
	ck_cmd("{\"tokens\", \"1\", \"last\", \"3000\", \"capacity\", \"3\", \"rate\", \"1\", \"rule\", \"\"}",
	       "HGETALL %s", TB_KEY("A"));
	ck_cmd("{\"tokens\", \"1\", \"last\", \"3000\", \"capacity\", \"3\", \"rate\", \"1\", \"rule\", \"\"}",
	       "HGETALL %s", TB_KEY("B"));
	/* Refilling past capacity keeps nothing extra. */
	ck_tb(tb("A", "3", "1", "3", 100000), 1, 0, 0, 3000);
}
END_TEST

START_TEST(test_tb_capacity_lowered)
{
	const char *p = "/lowered";

	ck_tb(tb(p, "10", "1", "1", 0), 1, 9, 0, 1000);
	/* Now capacity 3: the 9 stored tokens count as 3; the new capacity is recorded. */
	ck_tb(tb(p, "3", "1", "1", 0), 1, 2, 0, 1000);
	ck_cmd("{\"2\", \"3\", \"1\"}", "HMGET %s tokens capacity rate", TB_KEY(p));
	ck_assert_int_eq(due_of(TB, p), 1000 + model_skew_ms());
}
END_TEST

START_TEST(test_tb_tiny_rate_never_expires)
{
	const char *p = "/tiny";

	/* Refills in more than 2^53 ms: no TTL rather than a short one, and never due. */
	ck_tb(tb(p, "1", "1e-300", "1", 0), 1, 0, 0, NEVER);
	ck_assert_int_eq(test_cmd_int(c, "PTTL %s", TB_KEY(p)), -1);
	ck_assert_int_eq(due_of(TB, p), NEVER);
	ck_tb(tb(p, "1", "1e-300", "1", 5000), 0, 0, NEVER - 5000, NEVER - 5000);
	ck_reply(job(p, 1000000), 0, 0, 0, 0, NEVER, 0);
}
END_TEST

/* A rejected request takes nothing, records nothing and moves no due time; n > capacity never fits. */
START_TEST(test_tb_rejection_writes_nothing)
{
	const char *p = "/rej";
	char *before;

	ck_tb(tb(p, "3", "1", "3", 0), 1, 0, 0, 3000);
	before = test_snapshot(c);
	ck_tb(tb(p, "3", "1", "1", 999), 0, 0, 1, 2001);
	/* other parameters, rejected: not recorded */
	ck_tb(tb(p, "5", "0.5", "2", 1000), 0, 0, 3000, 9000);
	ck_tb(tb(p, "3", "1", "4", 5000), 0, 3, -1, 0);
	/* a path with no state and n > capacity: nothing is stored at all */
	ck_tb(tb("/never", "3", "1", "4", 5000), 0, 3, -1, 0);
	ck_snapshot_same(before);
	free(before);
}
END_TEST

/* ---- the shard job: reclaim by the recorded parameters -------------------------- */

START_TEST(test_tb_reclaim_refilled)
{
	const char *a = "{r}A", *b = "{r}B"; /* one shard: its next_due is exact */
	long long skew = model_skew_ms();
	char *before;

	ck_tb(tb(a, "3", "1", "3", 0), 1, 0, 0, 3000);
	ck_tb(tb(b, "2", "0.16666666666666666", "2", 0), 1, 0, 0, 12000);
	ck_assert_int_eq(due_of(TB, a), 3000 + skew);
	ck_assert_int_eq(due_of(TB, b), 12000 + skew);
	before = test_snapshot(c);
	/* Full at 3000 and 12000, but not yet to a client SKEW_MS behind: nothing due. */
	ck_reply(job(a, 3000), 0, 0, 0, 0, 3000 + skew, 0);
	ck_reply(job(a, 2999 + skew), 0, 0, 0, 0, 3000 + skew, 0);
	ck_snapshot_same(before);
	free(before);
	/* A full at 3000 (3 tokens), SKEW_MS ago */
	ck_reply(job(a, 3000 + skew), 1, 1, 1, 0, 12000 + skew, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", TB_KEY(a)), 0);
	ck_reply(job(b, 11999 + skew), 0, 0, 0, 0, 12000 + skew, 0);
	/* B full at 12000 (1.9999999999999998 + epsilon) */
	ck_reply(job(b, 12000 + skew), 1, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_dbsize(c), 0);
	ck_reply(job(a, 12000 + skew), 0, 0, 0, 0, -1, 0);
	/* The acquire finds a full bucket, as it would have before the reclaim. */
	ck_tb(tb(a, "3", "1", "3", 3000), 1, 0, 0, 3000);
}
END_TEST

/*
 * The job goes by what the bucket records, the parameters of its latest
 * admission: a rejected call under others records nothing, an admission
 * records its own and moves the due time, earlier as well as later.
 */
START_TEST(test_tb_reclaim_by_recorded)
{
	const char *p = "/rec", *q = "/rec2";
	long long skew = model_skew_ms();
	char *before;

	ck_tb(tb(p, "10", "1", "10", 0), 1, 0, 0, 10000);
	ck_assert_int_eq(due_of(TB, p), 10000 + skew);
	before = test_snapshot(c);
	ck_tb(tb(p, "3", "0.001", "1", 100), 0, 0, 999900, 2999900);
	ck_snapshot_same(before);
	free(before);
	ck_tb(tb(p, "3", "0.5", "1", 2000), 1, 0, 0, 6000);
	ck_cmd("{\"tokens\", \"0\", \"last\", \"2000\", \"capacity\", \"3\", \"rate\", \"0.5\", \"rule\", \"\"}",
	       "HGETALL %s", TB_KEY(p));
	ck_assert_int_eq(due_of(TB, p), 8000 + skew); /* earlier than 10000 + skew */
	ck_reply(job(p, 7999 + skew), 0, 0, 0, 0, 8000 + skew, 0);
	ck_reply(job(p, 8000 + skew), 1, 1, 1, 0, -1, 0);

	/* Recorded 4 at 1/s; a client now passing 0.001/s is rejected (0.001 tokens at
	 * 1000), records nothing, and the job reclaims at 1/s: full at 4000. */
	ck_tb(tb(q, "4", "1", "4", 0), 1, 0, 0, 4000);
	ck_tb(tb(q, "4", "0.001", "1", 1000), 0, 0, 999000, 3999000);
	ck_reply(job(q, 3999 + skew), 0, 0, 0, 0, 4000 + skew, 0);
	ck_reply(job(q, 4000 + skew), 1, 1, 1, 0, -1, 0);
}
END_TEST

/* A job met late reschedules at the due time, or at now + 1 ms at the earliest. */
START_TEST(test_tb_reclaim_reschedules)
{
	const char *p = "/late";
	long long skew = model_skew_ms();

	ck_tb(tb(p, "2", "1", "2", 0), 1, 0, 0, 2000);
	/* a later admission: last 5000, full at 6000 */
	ck_tb(tb(p, "2", "1", "1", 5000), 1, 1, 0, 1000);
	/* its registry entry moved to 6000 + skew; an entry made earlier by hand is met early,
	 * and put back at the bucket's own due time */
	freeReplyObject(test_cmd(c, "ZADD %s 100 %s", TB_SHARD_REG(p), p));
	ck_reply(job(p, 100), 0, 0, 1, 0, 6000 + skew, 0);
	freeReplyObject(test_cmd(c, "ZADD %s 100 %s", TB_SHARD_REG(p), p));
	ck_reply(job(p, 5999 + skew), 0, 0, 1, 0, 6000 + skew, 0); /* 1 ms before: kept */
	ck_reply(job(p, 6000 + skew), 1, 1, 1, 0, -1, 0);
}
END_TEST

/* Paths whose bucket is gone, that record nothing, or whose key is of another type. */
START_TEST(test_tb_reclaim_odd_paths)
{
	const char *p = "{o}gone", *q = "{o}foreign", *u = "{o}unreadable", *w = "{o}wrongtype";
	long long skew = model_skew_ms(), nd;
	redisReply *r;

	/* expired or reset: the path leaves at its due time */
	ck_tb(tb(p, "3", "1", "1", 0), 1, 2, 0, 1000);
	freeReplyObject(test_cmd(c, "DEL %s", TB_KEY(p)));
	ck_reply(job(p, 0), 0, 0, 0, 0, 1000 + skew, 0);
	ck_reply(job(p, 1000 + skew), 0, 1, 1, 0, -1, 0);

	/* a hash that records no parameters: looked at again when it would expire */
	freeReplyObject(test_cmd(c, "HSET %s tokens 1 last 0", TB_KEY(q)));
	freeReplyObject(test_cmd(c, "ZADD %s 5 %s", TB_SHARD_REG(q), q));
	ck_reply(job(q, 10), 0, 0, 1, 0, 60010, 0);
	freeReplyObject(test_cmd(c, "PEXPIRE %s 5000", TB_KEY(q)));
	r = job(q, 60010);
	nd = test_elem_int(r, 4);
	ck_assert_int_le(nd, 60010 + 5001);
	ck_assert_int_gt(nd, 60010 + 5001 - SLACK_MS);
	ck_reply(r, 0, 0, 1, 0, nd, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", TB_KEY(q)), 1);
	freeReplyObject(test_cmd(c, "DEL %s", TB_KEY(q)));
	ck_reply(job(q, 70000), 0, 1, 1, 0, -1, 0);

	/* parameters but no readable tokens: full, as the acquire reads it, so reclaimed */
	freeReplyObject(test_cmd(c, "HSET %s tokens x last 0 capacity 3 rate 1", TB_KEY(u)));
	freeReplyObject(test_cmd(c, "ZADD %s 0 %s", TB_SHARD_REG(u), u));
	ck_reply(job(u, 0), 1, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", TB_KEY(u)), 0);

	/* another type: skipped, untouched, looked at again in a minute */
	freeReplyObject(test_cmd(c, "ZADD %s 1 x", TB_KEY(w)));
	freeReplyObject(test_cmd(c, "ZADD %s 0 %s", TB_SHARD_REG(w), w));
	ck_reply(job(w, 100), 0, 0, 1, 1, 60100, 0);
	ck_assert_int_eq(zcard(TB_KEY(w)), 1);
}
END_TEST

/* A path new in its shard's registry drops up to two long-overdue members whose keys are gone. */
START_TEST(test_tb_register_drops_dead)
{
	const char *old = "{d}old", *old2 = "{d}old2", *live = "{d}live", *nw = "{d}new";

	freeReplyObject(test_cmd(c, "ZADD %s 0 %s 0 %s", TB_SHARD_REG(old), old, live));
	freeReplyObject(test_cmd(c, "HSET %s tokens 0 last 0 capacity 1 rate 0.0001", TB_KEY(live)));
	ck_tb(tb(nw, "3", "1", "1", 100000), 1, 2, 0, 1000);
	ck_assert_int_eq(in_registry(TB, old), 0);
	ck_assert_int_eq(in_registry(TB, live), 1);
	/* a path already registered drops nothing */
	freeReplyObject(test_cmd(c, "ZADD %s 0 %s", TB_SHARD_REG(old2), old2));
	ck_tb(tb(nw, "3", "1", "1", 100000), 1, 1, 0, 2000);
	ck_assert_int_eq(in_registry(TB, old2), 1);
	ck_assert_int_eq(due_of(TB, nw), 102000 + model_skew_ms());
}
END_TEST

/* The foreign layouts' batch reclaim (token_bucket_reclaim.lua), given the rule's values. */
START_TEST(test_tb_reclaim_batch_foreign)
{
	char *before, now[24];

	/* The worker runs at 1000 + SKEW_MS, so it judges fullness at 1000.
	 * A: 2.5 tokens of 3 at 1000; B: full at 1000; C: registered, absent;
	 * D: registered, a sorted set; E: 3 tokens at 1000 (capacity 3): full;
	 * F: last = 5000, after 1000: kept (2 tokens, not full);
	 * G: 3 tokens at 5000: full at its last, but kept: a client between
	 * 1000 and 5000 is served at that mark, which an absent bucket would not hold. */
	snprintf(now, sizeof(now), "%lld", 1000 + model_skew_ms());
	freeReplyObject(test_cmd(c, "HSET %s tokens 2 last 500", TB_KEY("A")));
	freeReplyObject(test_cmd(c, "HSET %s tokens 2 last 0", TB_KEY("B")));
	freeReplyObject(test_cmd(c, "HSET %s tokens 3 last 1000", TB_KEY("E")));
	freeReplyObject(test_cmd(c, "HSET %s tokens 2 last 5000", TB_KEY("F")));
	freeReplyObject(test_cmd(c, "HSET %s tokens 3 last 5000", TB_KEY("G")));
	freeReplyObject(test_cmd(c, "SADD %s A B C D E F G", TB_REG));
	freeReplyObject(test_cmd(c, "ZADD %s 1 x", TB_KEY("D")));
	ck_reply(ev("token_bucket_reclaim", 8, TB_REG, TB_KEY("A"), TB_KEY("B"), TB_KEY("C"), TB_KEY("D"),
		    TB_KEY("E"), TB_KEY("F"), TB_KEY("G"), now, "A", "3", "1", "B", "3", "1", "C", "3", "1", "D",
		    "3", "1", "E", "3", "1", "F", "3", "1", "G", "3", "1", NULL),
		 2, 3, 7, 1);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s %s", TB_KEY("B"), TB_KEY("C"), TB_KEY("E")), 0);
	ck_cmd("{\"tokens\", \"2\", \"last\", \"500\"}", "HGETALL %s", TB_KEY("A"));
	ck_cmd("{\"tokens\", \"2\", \"last\", \"5000\"}", "HGETALL %s", TB_KEY("F"));
	ck_cmd("{\"tokens\", \"3\", \"last\", \"5000\"}", "HGETALL %s", TB_KEY("G"));
	ck_cmd("{\"A\", \"D\", \"F\", \"G\"}", "SORT %s ALPHA", TB_REG);
	before = test_snapshot(c);
	ck_reply(ev("token_bucket_reclaim", 8, TB_REG, TB_KEY("A"), TB_KEY("B"), TB_KEY("C"), TB_KEY("D"),
		    TB_KEY("E"), TB_KEY("F"), TB_KEY("G"), now, "A", "3", "1", "B", "3", "1", "C", "3", "1", "D",
		    "3", "1", "E", "3", "1", "F", "3", "1", "G", "3", "1", NULL),
		 0, 0, 7, 1);
	ck_snapshot_same(before);
	free(before);
	ck_reply(ev("token_bucket_reclaim", 1, TB_REG, "1000", NULL), 0, 0, 0, 0);
	ck_reply(ev("token_bucket_reclaim", 1, TB_REG, NULL), 0, 0, 0, 0);
}
END_TEST

/* ---- state ------------------------------------------------------------------ */

START_TEST(test_tb_state)
{
	const char *p = "/state", *f = "/foreign", *ro_args[5];
	long long skew = model_skew_ms(), ttl;
	char *before;

	ck_state(tb_state2(p, "3", "1", "0"), "", "", 0, 3, 0, -1);
	ck_state(tb_state2(p, "", "", "0"), "", "", 0, -1, -1, -1); /* absent: nothing used, the rest unknown */
	ck_tb(tb(p, "3", "1", "2", 1000), 1, 1, 0, 2000);
	before = test_snapshot(c);
	ttl = ck_state(tb_state2(p, "3", "1", "1000"), "capacity=3,rate=1", "", 2, 1, 2000, 1000);
	ck_assert_int_gt(ttl, 2001 + skew - SLACK_MS); /* full at 3000 (+1), + SKEW_MS */
	ck_assert_int_le(ttl, 2001 + skew);
	/* "" = the recorded parameter */
	ck_state(tb_state2(p, "", "", "1500"), "capacity=3,rate=1", "", 2, 1, 1500, 1000);
	ck_state(tb_state2(p, "", "1", "2000"), "capacity=3,rate=1", "", 1, 2, 1000, 1000);
	ck_state(tb_state2(p, "3", "", "3000"), "capacity=3,rate=1", "", 0, 3, 0, 1000);
	ck_state(tb_state2(p, "", "", "500"), "capacity=3,rate=1", "", 2, 1, 2000, 1000); /* older: served at 1000 */
	ck_state(tb_state2(p, "", "", NULL), "capacity=3,rate=1", "", 0, 3, 0, 1000);    /* Redis TIME: long full */
	/* parameters given win */
	ck_state(tb_state2(p, "10", "", "1000"), "capacity=3,rate=1", "", 9, 1, 9000, 1000);
	ck_state(tb_state2(p, "", "2", "1500"), "capacity=3,rate=1", "", 1, 2, 500, 1000);
	/* read-only: EVAL_RO runs it */
	ro_args[0] = TB_KEY(p), ro_args[1] = TB_META(p), ro_args[2] = "", ro_args[3] = "", ro_args[4] = "1000";
	ck_state(eval_argv("token_bucket_state", 1, 2, 5, ro_args), "capacity=3,rate=1", "", 2, 1, 2000, 1000);
	ck_snapshot_same(before);
	free(before);
	/* What the state foresaw is what the acquire finds. */
	ck_tb(tb(p, "3", "1", "1", 1500), 1, 0, 0, 2500);

	/* a hash that records nothing (a foreign limiter's): only given parameters count */
	freeReplyObject(test_cmd(c, "HSET %s tokens 2 last 100", TB_KEY(f)));
	ck_state(tb_state2(f, "", "", "200"), "", "", -1, -1, -1, 100);
	ck_state(tb_state2(f, "3", "", "200"), "", "", -1, -1, -1, 100);
	ck_state(tb_state2(f, "3", "1", "200"), "", "", 1, 2, 900, 100);
}
END_TEST

/* ---- table tests: (parameters, calls with now) -> exact replies ------------ */

static const struct algo_case algo_cases[] = {
	{ "token bucket: capacity 3, 1 token per second",
	  TB,
	  "3",
	  "1",
	  NULL,
	  { /* many requests in one millisecond: the burst is the capacity */
	    { 0, 1, { 1, 2, 0, 1000 }, 1001 },
	    { 0, 1, { 1, 1, 0, 2000 }, 2001 },
	    { 0, 1, { 1, 0, 0, 3000 }, 3001 },
	    { 0, 1, { 0, 0, 1000, 3000 }, 0 },
	    { 500, 1, { 0, 0, 500, 2500 }, 0 },
	    { 999, 1, { 0, 0, 1, 2001 }, 0 },
	    { 1000, 1, { 1, 0, 0, 3000 }, 3001 },
	    /* n larger than what is left: 1.5 tokens, 2 wanted; nothing taken */
	    { 2500, 2, { 0, 1, 500, 1500 }, 0 },
	    { 2999, 2, { 0, 1, 1, 1001 }, 0 },
	    { 3000, 2, { 1, 0, 0, 3000 }, 3001 },
	    /* an older now is served at the stored 3000 */
	    { 2000, 1, { 0, 0, 1000, 3000 }, 0 },
	    /* n larger than the capacity: never, nothing stored */
	    { 3000, 4, { 0, 0, -1, 3000 }, 0 },
	    /* refilled to capacity (the same as absent): the whole burst again */
	    { 6000, 3, { 1, 0, 0, 3000 }, 3001 },
	    { 9000, 1, { 1, 2, 0, 1000 }, 1001 },
	    END } },
	{ "token bucket: 10 per minute, capacity 2 (binary error at the first token)",
	  TB,
	  "2",
	  "0.16666666666666666",
	  NULL,
	  { { 0, 2, { 1, 0, 0, 12000 }, 12001 },
	    { 0, 1, { 0, 0, 6000, 12000 }, 0 },
	    { 5999, 1, { 0, 0, 1, 6001 }, 0 },
	    { 6000, 1, { 1, 0, 0, 12000 }, 12001 },
	    { 12000, 2, { 0, 1, 6000, 6000 }, 0 },
	    { 17999, 2, { 0, 1, 1, 1 }, 0 },
	    { 24000, 2, { 1, 0, 0, 12000 }, 12001 },
	    END } },
	{ "token bucket: 10 per minute, a take at 6001 then the next token at 12000",
	  TB,
	  "2",
	  "0.16666666666666666",
	  NULL,
	  { { 0, 2, { 1, 0, 0, 12000 }, 12001 },
	    /* 1.0001666 tokens: 0.0001666 left, which makes a token at 12000 -- in
	     * binary 0.99999999999999989: only the epsilon admits it */
	    { 6001, 1, { 1, 0, 0, 11999 }, 12000 },
	    { 11999, 1, { 0, 0, 1, 6001 }, 0 },
	    /* n > capacity is never admitted, but tells how many whole tokens there are */
	    { 12000, 3, { 0, 1, -1, 6000 }, 0 },
	    { 12000, 1, { 1, 0, 0, 12000 }, 12001 },
	    END } },
	{ "token bucket: 1.5 per second, capacity 3",
	  TB,
	  "3",
	  "1.5",
	  NULL,
	  { { 0, 3, { 1, 0, 0, 2000 }, 2001 },
	    { 0, 1, { 0, 0, 667, 2000 }, 0 },
	    { 666, 1, { 0, 0, 1, 1334 }, 0 },
	    { 667, 1, { 1, 0, 0, 2000 }, 2001 },
	    END } },
};

/*
 * One table: every reply exact; after an admission the bucket's TTL is the
 * step's (until full, +1 ms) + SKEW_MS from now and its due time that, - 1
 * ms (every admission of the tables is at its own now); a rejection writes
 * nothing at all, extends no TTL, and the same call again answers the same.
 */
START_TEST(test_table)
{
	const struct algo_case *ac = &algo_cases[_i];
	const char *p = "/table";
	long long skew = model_skew_ms();
	char key[320];

	snprintf(key, sizeof(key), "%s", TB_KEY(p));
	for (int i = 0; ac->steps[i].now >= 0; i++) {
		const struct step *st = &ac->steps[i];
		char where[256], *before = NULL;

		snprintf(where, sizeof(where), "%s, step %d (now %lld)", ac->name, i, st->now);
		if (st->want[0] == 0) {
			freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", key, MARKER_TTL));
			before = test_snapshot(c);
		}
		check_tb(where, 0, tb(p, ac->a, ac->b, num(st->n), st->now), st->want);
		if (st->want[0] == 1) {
			ck_assert_msg(st->ttl > 0, "%s: the table gives no TTL", where);
			check_pttl(where, 0, key, st->ttl + skew);
			ck_assert_msg(due_of(TB, p) == st->now + st->ttl - 1 + skew, "%s: due %lld, want %lld", where,
				      due_of(TB, p), st->now + st->ttl - 1 + skew);
			/* virtual time: keep the bucket from expiring in real time */
			freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", key, MARKER_TTL));
			continue;
		}
		ck_snapshot_same(before);
		if (test_cmd_int(c, "EXISTS %s", key))
			check_pttl(where, 0, key, MARKER_TTL);
		check_tb(where, 1, tb(p, ac->a, ac->b, num(st->n), st->now), st->want);
		ck_snapshot_same(before);
		free(before);
	}
}
END_TEST

/* ---- validation ------------------------------------------------------------ */

/*
 * A bad call: `args` are KEYS then ARGV, where "@S", "@M", "@R", "@U", "@T"
 * stand for path /v's state, meta, registry, rules and stats keys, and
 * "@xS" ... "@xT" for path /w's keys in the shard after its own.
 */
struct tb_bad {
	const char *script;
	int nkeys;
	const char *args[14];
	const char *error;
};

static const struct tb_bad bad_calls[] = {
	/* the client: contract */
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "", "1", "9000", "", "3", "1" }, "ERR sluice: path must be" },
	{ "token_bucket", 4, { "@S", "@M", "@R", "@U", "/v", "1", "9000", "", "3", "1" },
	  "ERR sluice: token_bucket takes 5 KEYS" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "3" },
	  "ERR sluice: token_bucket takes ARGV path, n, now, rule, then capacity, rate (6 in all)" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "3", "1", "x" },
	  "ERR sluice: token_bucket takes ARGV path, n, now, rule" },
	{ "token_bucket", 5, { "sluice:{x}:token_bucket:/v", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "3", "1" },
	  "ERR sluice: KEYS[1] must be" },
	{ "token_bucket", 5, { "sluice:{1024}:token_bucket:/v", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "3", "1" },
	  "ERR sluice: KEYS[1] must be" },
	{ "token_bucket", 5, { "sluice:token_bucket:/v", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "3", "1" },
	  "ERR sluice: KEYS[1] must be" },
	{ "token_bucket", 5, { "@S", "@S", "@R", "@U", "@T", "/v", "1", "9000", "", "3", "1" }, "ERR sluice: KEYS[2] must be" },
	{ "token_bucket", 5, { "@S", "@M", "@U", "@U", "@T", "/v", "1", "9000", "", "3", "1" }, "ERR sluice: KEYS[3] must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@T", "@T", "/v", "1", "9000", "", "3", "1" }, "ERR sluice: KEYS[4] must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@U", "/v", "1", "9000", "", "3", "1" }, "ERR sluice: KEYS[5] must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/w", "1", "9000", "", "3", "1" }, "ERR sluice: KEYS[1] must be" },
	{ "token_bucket", 5, { "@xS", "@xM", "@xR", "@xU", "@xT", "/w", "1", "9000", "", "3", "1" },
	  "ERR sluice: path \"/w\" belongs to shard " },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "x", "3", "1" },
	  "ERR sluice: ARGV[5] (capacity) must be \"\" with a rule" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "*", "3", "1" },
	  "ERR sluice: ARGV[5] (capacity) must be \"\" with a rule" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "x" }, "ERR sluice: no rule \"x\" (in sluice:{" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", ":max_clock_skew_ms" },
	  "ERR sluice: rule (ARGV[4]) must be" },
	/* the client: arguments */
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "0", "9000", "", "3", "1" }, "ERR sluice: n must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1.5", "9000", "", "3", "1" }, "ERR sluice: n must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "abc", "9000", "", "3", "1" }, "ERR sluice: n must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "9007199254740992", "9000", "", "3", "1" },
	  "ERR sluice: n must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "1e3", "", "3", "1" }, "ERR sluice: now must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "-1", "", "3", "1" }, "ERR sluice: now must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "0", "1" }, "ERR sluice: capacity must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "2.5", "1" },
	  "ERR sluice: capacity must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "", "1" }, "ERR sluice: capacity must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "3", "0" }, "ERR sluice: rate must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "3", "-1" }, "ERR sluice: rate must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "3", "inf" }, "ERR sluice: rate must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "3", "nan" }, "ERR sluice: rate must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "3", "0x10" }, "ERR sluice: rate must be" },
	{ "token_bucket", 5, { "@S", "@M", "@R", "@U", "@T", "/v", "1", "9000", "", "3", "" }, "ERR sluice: rate must be" },
	/* the shard job */
	{ "token_bucket_reclaim_shard", 1, { "@R", "9000" }, "ERR sluice: token_bucket shard job takes" },
	{ "token_bucket_reclaim_shard", 2, { "@R", "@R", "9000", "500" }, "ERR sluice: token_bucket shard job takes" },
	{ "token_bucket_reclaim_shard", 1, { "sluice:registry:token_bucket", "9000", "500" }, "ERR sluice: KEYS[1] must be" },
	{ "token_bucket_reclaim_shard", 1, { "@S", "9000", "500" }, "ERR sluice: KEYS[1] must be" },
	{ "token_bucket_reclaim_shard", 1, { "@R", "9000", "0" }, "ERR sluice: limit must be" },
	{ "token_bucket_reclaim_shard", 1, { "@R", "x", "500" }, "ERR sluice: now must be" },
	/* the state */
	{ "token_bucket_state", 1, { "@S", "3", "1", "9000" }, "ERR sluice: token_bucket_state takes 2 KEYS" },
	{ "token_bucket_state", 2, { "@S", "@M", "3" }, "ERR sluice: token_bucket_state takes 2 KEYS" },
	{ "token_bucket_state", 2, { "@S", "@M", "0", "1", "9000" }, "ERR sluice: capacity must be" },
	{ "token_bucket_state", 2, { "@S", "@M", "3", "abc", "9000" }, "ERR sluice: rate must be" },
	{ "token_bucket_state", 2, { "@S", "@M", "3", "1", "x" }, "ERR sluice: now must be" },
	/* the foreign layouts' batch reclaim */
	{ "token_bucket_reclaim", 2, { TB_REG, TBK, "9000", "/v", "0", "1" }, "ERR sluice: capacity must be" },
	{ "token_bucket_reclaim", 2, { TB_REG, TBK, "9000", "/v", "3", "-1" }, "ERR sluice: rate must be" },
	{ "token_bucket_reclaim", 2, { TB_REG, TBK, "9000", "", "3", "1" }, "ERR sluice: path must be" },
	{ "token_bucket_reclaim", 2, { TB_REG, TBK, "x", "/v", "3", "1" }, "ERR sluice: now must be" },
	{ "token_bucket_reclaim", 3, { TB_REG, TBK, "k", "9000", "/v", "3", "1", "/k", "3", "abc" }, "ERR sluice: rate must be" },
	{ "token_bucket_reclaim", 2, { TB_REG, TBK, "9000", "/v", "3" }, "ERR sluice: token_bucket_reclaim takes" },
};

/* "@S" ... "@xT" of struct tb_bad, else s itself. */
static const char *bad_arg(const char *s)
{
	static const char *const kinds[] = { "token_bucket", "token_bucket_meta" };
	static char buf[5][96];
	static const char letters[] = "SMRUT";
	const char *at;
	unsigned k;
	int x, i;

	if (s[0] != '@')
		return s;
	x = s[1] == 'x';
	at = strchr(letters, s[1 + x]);
	ck_assert_ptr_nonnull(at);
	i = (int)(at - letters);
	k = (shard_of(x ? "/w" : "/v", 2) + (unsigned)x) % SHARD_COUNT;
	if (i < 2)
		snprintf(buf[i], sizeof(buf[i]), "sluice:{%u}:%s:%s", k, kinds[i], x ? "/w" : "/v");
	else
		snprintf(buf[i], sizeof(buf[i]), "sluice:{%u}:%s", k,
			 i == 2 ? "registry:token_bucket" : i == 3 ? "rules" : "stats");
	return buf[i];
}

START_TEST(test_bad_arguments_change_nothing)
{
	const struct tb_bad *tb_ = &bad_calls[_i];
	struct bad_call bc = { tb_->script, tb_->nkeys, { NULL }, tb_->error };

	for (int i = 0; tb_->args[i]; i++)
		bc.args[i] = bad_arg(tb_->args[i]);
	/* check_bad_call seeds /v (and /k) of every algorithm at 1000 first, so a call at 9000 would change them */
	check_bad_call(&bc);
}
END_TEST

/* The wrong shard's refusal names the path's shard; a path with state is not hashed again. */
START_TEST(test_tb_wrong_shard)
{
	const char *path = "/api/users"; /* shard 839 (lua/README.md's vectors) */
	const char *keys[5] = { "sluice:{838}:token_bucket:/api/users", "sluice:{838}:token_bucket_meta:/api/users",
				"sluice:{838}:registry:token_bucket", "sluice:{838}:rules", "sluice:{838}:stats" };
	const char *argv[11];
	redisReply *r;

	ck_assert_uint_eq(shard_of(path, strlen(path)), 839);
	memcpy(argv, keys, sizeof(keys));
	argv[5] = path, argv[6] = "1", argv[7] = "1000", argv[8] = "", argv[9] = "3", argv[10] = "1";
	r = eval_argv("token_bucket", 0, 5, 11, argv);
	ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
	ck_assert_str_eq(r->str, "ERR sluice: path \"/api/users\" belongs to shard 839, not 838 (its keys carry {839})");
	freeReplyObject(r);
	ck_assert_int_eq(test_dbsize(c), 0);
	/* its own shard's keys are accepted */
	ck_tb(tb(path, "3", "1", "1", 1000), 1, 2, 0, 1000);
	ck_assert_str_eq(TB_KEY(path), "sluice:{839}:token_bucket:/api/users");
}
END_TEST

/* Paths with braces, a leading '}' first (issue 8, item 2): one name for the client, the job and the state. */
static const char *const brace_paths[] = { "}x", "}{", "{}x}", "a{b}c", "{b}", "x{}" };

START_TEST(test_tb_brace_paths)
{
	const char *p = brace_paths[_i];
	long long skew = model_skew_ms();
	struct tb_names k;
	char want[400];

	tb_names_of(p, strlen(p), &k);
	ck_assert_str_eq(k.key[TBN_STATE], TB_KEY(p));
	ck_tb(tb(p, "3", "1", "3", 1000), 1, 0, 0, 3000);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", k.key[TBN_STATE]), 1);
	ck_assert_int_eq(test_dbsize(c), 2); /* the bucket and its shard's registry: no other key */
	ck_assert_int_eq(due_of(TB, p), 4000 + skew);
	ck_tb(tb(p, "3", "1", "1", 1500), 0, 0, 500, 2500);
	ck_state(tb_state2(p, "", "", "2000"), "capacity=3,rate=1", "", 2, 1, 2000, 1000);
	/* the job reclaims it once, at its due time, and only it */
	ck_reply(job(p, 3999 + skew), 0, 0, 0, 0, 4000 + skew, 0);
	ck_reply(job(p, 4000 + skew), 1, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_dbsize(c), 0);
	snprintf(want, sizeof(want), "sluice:{%u}:token_bucket:%s", shard_of(p, strlen(p)), p);
	ck_assert_str_eq(k.key[TBN_STATE], want);
}
END_TEST

/* A path holding NUL bytes is its bytes, all of them (binary-safe ARGV), for the client, job and state. */
START_TEST(test_tb_nul_path)
{
	static const char p[] = "/a\0b}\0", q[] = "/a";
	const size_t plen = sizeof(p) - 1;
	long long skew = model_skew_ms();
	struct tb_names k;
	const char *argv[11], *cmd[4];
	size_t lens[11], cl[4];
	redisReply *r;

	tb_names_of(p, plen, &k);
	for (int i = 0; i < 5; i++)
		argv[i] = k.key[i], lens[i] = k.len[i];
	argv[5] = p, lens[5] = plen;
	argv[6] = "2", argv[7] = "1000", argv[8] = "", argv[9] = "3", argv[10] = "1";
	for (int i = 6; i < 11; i++)
		lens[i] = strlen(argv[i]);
	ck_tb(test_script_argv(c, TEST_EVALSHA, "token_bucket", 5, 11, argv, lens), 1, 1, 0, 2000);
	/* "/a", the bytes before the NUL, is another path (not full before 4000 + SKEW_MS) */
	ck_tb(tb(q, "3", "1", "3", 1000), 1, 0, 0, 3000);
	cmd[0] = "HGET", cmd[1] = k.key[TBN_STATE], cmd[2] = "tokens";
	cl[0] = 4, cl[1] = k.len[TBN_STATE], cl[2] = 6;
	r = redisCommandArgv(c, 3, cmd, cl);
	ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
	ck_assert_str_eq(r->str, "1");
	freeReplyObject(r);
	cmd[0] = "ZSCORE", cmd[1] = k.key[TBN_REG], cmd[2] = p;
	cl[0] = 6, cl[1] = k.len[TBN_REG], cl[2] = plen;
	r = redisCommandArgv(c, 3, cmd, cl);
	ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
	ck_assert_int_eq(atoll(r->str), 3000 + skew);
	freeReplyObject(r);
	/* the state read, the same bytes */
	argv[2] = "", argv[3] = "", argv[4] = "1500";
	argv[0] = k.key[TBN_STATE], argv[1] = k.key[TBN_META];
	lens[0] = k.len[TBN_STATE], lens[1] = k.len[TBN_META], lens[2] = lens[3] = 0, lens[4] = 4;
	ck_state(test_script_argv(c, TEST_EVAL, "token_bucket_state", 2, 5, argv, lens), "capacity=3,rate=1", "", 2, 1,
		 1500, 1000);
	/* the job of its shard reclaims it by its name, and nothing else */
	cmd[0] = k.key[TBN_REG], cmd[1] = test_num(3000 + skew), cmd[2] = "500";
	cl[0] = k.len[TBN_REG], cl[1] = strlen(cmd[1]), cl[2] = 3;
	r = test_script_argv(c, TEST_EVAL, "token_bucket_reclaim_shard", 1, 3, cmd, cl);
	ck_assert_int_eq(test_elem_int(r, 0), 1);
	ck_assert_int_eq(test_elem_int(r, 1), 1);
	freeReplyObject(r);
	cmd[0] = "EXISTS", cmd[1] = k.key[TBN_STATE];
	cl[0] = 6, cl[1] = k.len[TBN_STATE];
	r = redisCommandArgv(c, 2, cmd, cl);
	ck_assert_int_eq(r->integer, 0);
	freeReplyObject(r);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", TB_KEY(q)), 1);
}
END_TEST

/* ---- the time mark: a client whose clock lags Redis (issue 8, item 3) ------- */

/*
 * A bucket the reclaim deleted reads as full.  So the reclaim, at Redis time,
 * deletes a bucket only when it was full at now - SKEW_MS already, judged from
 * its last: any client within the skew horizon then finds it full as well.
 */
START_TEST(test_tb_mark_minimal)
{
	const char *p = "/mark";
	long long T = 1000000, skew = model_skew_ms();

	ck_tb(tb(p, "1", "1", "1", T), 1, 0, 0, 1000);
	ck_pttl(TB_KEY(p), 1001 + skew); /* until full (+1), then SKEW_MS more */
	/* Full at T + 1000 by Redis time, but not for a client 5 s behind: not due. */
	ck_reply(job(p, T + 5000), 0, 0, 0, 0, T + 1000 + skew, 0);
	ck_tb(tb(p, "1", "1", "1", T + 500), 0, 0, 500, 500);
	ck_reply(job(p, T + 999 + skew), 0, 0, 0, 0, T + 1000 + skew, 0);
	ck_cmd("{\"tokens\", \"0\", \"last\", \"1000000\", \"capacity\", \"1\", \"rate\", \"1\", \"rule\", \"\"}",
	       "HGETALL %s", TB_KEY(p));
	ck_reply(job(p, T + 1000 + skew), 1, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_dbsize(c), 0);
	/* The laggiest client of the horizon finds it full, as it would have before. */
	ck_tb(tb(p, "1", "1", "1", T + 1000), 1, 0, 0, 1000);
}
END_TEST

/*
 * Issue 8, item 3 in virtual time: a client sends 20 requests per second for
 * 12 s (at Redis times R0, R0 + 50, ..., R0 + 11950: 240 calls) with its
 * clock 5 s behind Redis, to a bucket of 10 tokens refilled at 2 per second.
 * With a worker, the shard job runs at Redis time every `every` ms (R0, R0 +
 * every, ...), before the client's call of the same instant; it acts on what
 * is due.  The bucket expires by its TTL, played out in virtual time: *k,
 * with when it expires.  Returns the requests admitted.
 */
#define R0 1700000000000LL
static long long tb_lagging_client(long long every, struct vkey *k, long long *reclaimed)
{
	const char *p = "/skew";
	const long long lag = 5000;
	long long admitted = 0;

	*reclaimed = 0;
	vkey_init(k, TB_KEY(p));
	for (long long r = R0; r < R0 + 12000; r += 50) {
		if (every && (r - R0) % every == 0) {
			redisReply *j;

			vkeys_before(c, k, 1, r);
			j = job(p, r);
			*reclaimed += test_elem_int(j, 0);
			freeReplyObject(j);
			vkeys_after(c, k, 1, r);
		}
		vkeys_before(c, k, 1, r);
		admitted += test_script_allowed(tb(p, "10", "2", "1", r - lag), "token_bucket");
		vkeys_after(c, k, 1, r);
	}
	return admitted;
}

/*
 * 33 with the worker and without: the 10 tokens at once (R0 .. R0 + 450),
 * then one every 500 ms (R0 + 500 .. R0 + 11500: 23), as for a client on Redis
 * time.  Before, the reclaim found the bucket full at Redis time every second
 * (the client's last was 5 s older) and deleted it: 132 (the issue's 133
 * counts a 241st call, at R0 + 12000).  The last token, taken at R0 + 11500
 * (R0 + 6500 in the client's clock), leaves none, full again 5000 ms later:
 * the bucket's TTL, from that now, runs to R0 + 16501 (+1), and SKEW_MS more
 * for the mark.  The job never reclaims it: it is never full for the horizon.
 */
static void tb_check_lagging(long long every)
{
	struct vkey k;
	long long reclaimed;

	ck_assert_int_eq(tb_lagging_client(every, &k, &reclaimed), 33);
	ck_assert_int_eq(reclaimed, 0);
	ck_assert_int_le(k.expires, R0 + 16501 + model_skew_ms());
	ck_assert_int_gt(k.expires, R0 + 16501 + model_skew_ms() - SLACK_MS);
	ck_assert_int_eq(due_of(TB, "/skew"), R0 - 5000 + 11500 + 5000 + model_skew_ms());
}

START_TEST(test_tb_mark_lagging_client_with_worker)
{
	tb_check_lagging(1000);
}
END_TEST

START_TEST(test_tb_mark_lagging_client_with_worker_every_call)
{
	tb_check_lagging(50);
}
END_TEST

START_TEST(test_tb_mark_lagging_client_without_worker)
{
	tb_check_lagging(0);
}
END_TEST
#undef R0

/* ---- the reference model, over random traces ------------------------------------ */

/*
 * 10,000 calls per seed over four paths (tests/bucket_model.h's traces; two
 * share a shard by their hash tag, one starts with '}', one holds NUL
 * bytes): clients' acquires of cost 1..3, in the same ms or after idle
 * spells, at clocks lagging Redis by up to SKEW_MS (so often behind the
 * mark), a few ahead; the shard job at Redis time at random instants (a
 * tenth of the calls); capacities and rates varied, rule edits.  Every reply
 * of the scripts must be tests/token_bucket_model.h's, to the unit, and the
 * registry and the buckets its after each chunk; the reclaim must change
 * nothing a client within the horizon sees.
 */
START_TEST(test_tb_model_traces)
{
	static const char n0[] = "/m/{s}/0", n1[] = "/m/{s}/1", n2[] = "}m/2", n3[] = "/m\0/3";
	const char *const names[] = { n0, n1, n2, n3 };
	const size_t lens[] = { sizeof(n0) - 1, sizeof(n1) - 1, sizeof(n2) - 1, sizeof(n3) - 1 };
	struct tb2_counts cnt = { 0 };

	tb2_run(c, model_seeds[_i], names, lens, 4, &cnt);
	/* Every case came up often.  And the job never visited a bucket before it
	 * had work: its due time is always the moment it is reclaimable (an
	 * admission sets it, earlier or later), so none was rescheduled; none
	 * was gone either (no key outlived the model's state). */
	ck_assert_msg(cnt.admitted > 1000 && cnt.denied > 1000 && cnt.reclaimed > 50 && cnt.at_mark > 1000 &&
			      cnt.rescheduled == 0 && cnt.gone == 0,
		      "%lld admitted, %lld denied, %lld reclaimed, %lld at the mark, %lld rescheduled, %lld gone",
		      cnt.admitted, cnt.denied, cnt.reclaimed, cnt.at_mark, cnt.rescheduled, cnt.gone);
}
END_TEST

static Suite *token_bucket_suite(void)
{
	Suite *s = suite_create("token_bucket");
	TCase *tc;

	tc = test_tcase(s, "token_bucket", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_tb_retry_after_is_exact, 0, TEST_N(tb_retry_cases));
	tcase_add_test(tc, test_tb_layout_and_default_n);
	tcase_add_test(tc, test_tb_refilled_is_absent);
	tcase_add_test(tc, test_tb_capacity_lowered);
	tcase_add_test(tc, test_tb_tiny_rate_never_expires);
	tcase_add_test(tc, test_tb_rejection_writes_nothing);

	tc = test_tcase(s, "reclaim", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_tb_reclaim_refilled);
	tcase_add_test(tc, test_tb_reclaim_by_recorded);
	tcase_add_test(tc, test_tb_reclaim_reschedules);
	tcase_add_test(tc, test_tb_reclaim_odd_paths);
	tcase_add_test(tc, test_tb_register_drops_dead);
	tcase_add_test(tc, test_tb_reclaim_batch_foreign);

	tc = test_tcase(s, "state", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_tb_state);

	tc = test_tcase(s, "tables", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_table, 0, TEST_N(algo_cases));

	tc = test_tcase(s, "validation", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_bad_arguments_change_nothing, 0, TEST_N(bad_calls));
	tcase_add_test(tc, test_tb_wrong_shard);
	tcase_add_loop_test(tc, test_tb_brace_paths, 0, TEST_N(brace_paths));
	tcase_add_test(tc, test_tb_nul_path);

	tc = test_tcase(s, "mark", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_tb_mark_minimal);
	tcase_add_test(tc, test_tb_mark_lagging_client_with_worker);
	tcase_add_test(tc, test_tb_mark_lagging_client_with_worker_every_call);
	tcase_add_test(tc, test_tb_mark_lagging_client_without_worker);

	tc = test_tcase(s, "model", script_setup, script_teardown, 240);
	tcase_add_loop_test(tc, test_tb_model_traces, 0, TEST_N(model_seeds));
	return s;
}

int main(void)
{
	return test_run_suite(token_bucket_suite());
}

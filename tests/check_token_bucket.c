/*
 * lua/token_bucket.lua (the client's acquire), token_bucket_reclaim.lua (the
 * worker's reclaim of buckets refilled to capacity) and token_bucket_state.lua
 * (the admin's read).  The fixture, helpers and time conventions are
 * tests/script_fixture.h's.
 */
#include "tests/script_fixture.h"
#include "tests/bucket_model.h"

/* ---- token bucket ------------------------------------------------------------ */

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
	/* the times here are explicit, the TTL runs in real time (4 ms at 1000/s): keep the
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
	const char *p = "/layout";
	long long before = test_server_ms(c), after, last;
	redisReply *r;

	ck_reply(tb(p, "5", "2", "2", 1000), 1, 3, 0, 1000);
	ck_cmd("{\"tokens\", \"3\", \"last\", \"1000\"}", "HGETALL %s", TB_KEY(p));
	ck_reply(tb(p, "5", "2", "1", 1250), 1, 2, 0, 1250);
	ck_cmd("{\"tokens\", \"2.5\", \"last\", \"1250\"}", "HGETALL %s", TB_KEY(p));
	ck_pttl(TB_KEY(p), 1251 + model_skew_ms()); /* full at 2500 (+1), and the mark SKEW_MS longer */
	ck_cmd("{\"/layout\"}", "SMEMBERS %s", TB_REG);

	/* No n and no now: cost 1 at Redis TIME. */
	r = ev("token_bucket", 2, TB_KEY("/clock"), TB_REG, "/clock", "3", "1", NULL);
	ck_reply(r, 1, 2, 0, 1000);
	after = test_server_ms(c);
	r = test_cmd(c, "HGET %s last", TB_KEY("/clock"));
	last = atoll(r->str);
	freeReplyObject(r);
	ck_assert_int_ge(last, before);
	ck_assert_int_le(last, after);
	/* (a ms or two may have passed: a little more than 1 token was left) */
	r = ev("token_bucket", 2, TB_KEY("/clock"), TB_REG, "/clock", "3", "1", "", "", NULL);
	ck_assert_int_le(test_elem_int(r, 3), 2000);
	ck_assert_int_gt(test_elem_int(r, 3), 2000 - SLACK_MS);
	ck_reply(r, 1, 1, 0, test_elem_int(r, 3));
}
END_TEST

START_TEST(test_tb_refilled_is_absent)
{
	/* Bucket A was emptied at 0 and has refilled by 3000; B never existed. */
	freeReplyObject(tb("A", "3", "1", "3", 0));
	ck_reply(tb("A", "3", "1", "2", 3000), 1, 1, 0, 2000);
	ck_reply(tb("B", "3", "1", "2", 3000), 1, 1, 0, 2000);
	ck_cmd("{\"tokens\", \"1\", \"last\", \"3000\"}", "HGETALL %s", TB_KEY("A"));
	ck_cmd("{\"tokens\", \"1\", \"last\", \"3000\"}", "HGETALL %s", TB_KEY("B"));
	/* Refilling past capacity keeps nothing extra. */
	ck_reply(tb("A", "3", "1", "3", 100000), 1, 0, 0, 3000);
}
END_TEST

START_TEST(test_tb_capacity_lowered)
{
	const char *p = "/lowered";

	ck_reply(tb(p, "10", "1", "1", 0), 1, 9, 0, 1000);
	/* Now capacity 3: the 9 stored tokens count as 3. */
	ck_reply(tb(p, "3", "1", "1", 0), 1, 2, 0, 1000);
	ck_cmd("\"2\"", "HGET %s tokens", TB_KEY(p));
}
END_TEST

START_TEST(test_tb_tiny_rate_never_expires)
{
	const char *p = "/tiny";

	/* Refills in more than 2^53 ms: no TTL rather than a short one. */
	ck_reply(tb(p, "1", "1e-300", "1", 0), 1, 0, 0, 9007199254740992LL);
	ck_assert_int_eq(test_cmd_int(c, "PTTL %s", TB_KEY(p)), -1);
	ck_reply(tb(p, "1", "1e-300", "1", 5000), 0, 0, 9007199254740992LL - 5000, 9007199254740992LL - 5000);
}
END_TEST

START_TEST(test_tb_reclaim_refilled)
{
	long long skew = model_skew_ms();
	char *before;

	freeReplyObject(tb("A", "3", "1", "3", 0));
	freeReplyObject(tb("B", "2", "0.16666666666666666", "2", 0));
	before = test_snapshot(c);
	/* Full at 3000 and 12000, but not yet to a client SKEW_MS behind. */
	ck_reply(tb_reclaim1("A", "3", "1", 3000), 0, 0, 1, 0);
	ck_reply(tb_reclaim1("A", "3", "1", 2999 + skew), 0, 0, 1, 0);
	ck_reply(tb_reclaim1("B", "2", "0.16666666666666666", 11999 + skew), 0, 0, 1, 0);
	ck_snapshot_same(before);
	free(before);
	/* Full at 3000 (3 tokens) and at 12000 (1.9999999999999998 + epsilon), SKEW_MS ago. */
	ck_reply(tb_reclaim1("A", "3", "1", 3000 + skew), 1, 1, 1, 0);
	ck_reply(tb_reclaim1("B", "2", "0.16666666666666666", 12000 + skew), 1, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "DBSIZE"), 0);
	ck_reply(tb_reclaim1("A", "3", "1", 3000 + skew), 0, 0, 1, 0);
	/* The acquire finds a full bucket, as it would have before the reclaim. */
	ck_reply(tb("A", "3", "1", "3", 3000), 1, 0, 0, 3000);
}
END_TEST

START_TEST(test_tb_reclaim_batch)
{
	char *before, now[24];

	/* The worker runs at 1000 + SKEW_MS, so it judges fullness at 1000.
	 * A: 2.5 tokens of 3 at 1000; B: full at 1000; C: registered, absent;
	 * D: registered, a sorted set; E: 3 tokens at 1000, capacity lowered 5 -> 3:
	 * full; F: last = 5000, after 1000: kept (2 tokens, not full);
	 * G: 3 tokens at 5000 and capacity lowered 5 -> 3: full at its last, but
	 * kept: a client between 1000 and 5000 is served at that mark, which an
	 * absent bucket would not hold. */
	snprintf(now, sizeof(now), "%lld", 1000 + model_skew_ms());
	freeReplyObject(tb("A", "3", "1", "1", 500));
	freeReplyObject(tb("B", "3", "1", "1", 0));
	freeReplyObject(tb("E", "5", "1", "2", 1000));
	freeReplyObject(tb("F", "3", "1", "1", 5000));
	freeReplyObject(tb("G", "5", "1", "2", 5000));
	freeReplyObject(test_cmd(c, "SADD %s C D", TB_REG));
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
	const char *p = "/state";
	char *before;
	redisReply *r;

	ck_reply(tb_state(p, "3", "1", "0"), 0, 3, 0, -1, -2);
	freeReplyObject(tb(p, "3", "1", "2", 1000));
	before = test_snapshot(c);
	r = tb_state(p, "3", "1", "1000");
	ck_assert_int_gt(test_elem_int(r, 4), 2001 + model_skew_ms() - SLACK_MS); /* full at 3000 (+1), + SKEW_MS */
	ck_assert_int_le(test_elem_int(r, 4), 2001 + model_skew_ms());
	ck_reply(r, 2, 1, 2000, 1000, test_elem_int(r, 4));
	r = tb_state(p, "3", "1", "1500");
	ck_reply(r, 2, 1, 1500, 1000, test_elem_int(r, 4));
	r = tb_state(p, "3", "1", "2000");
	ck_reply(r, 1, 2, 1000, 1000, test_elem_int(r, 4));
	r = tb_state(p, "3", "1", "3000");
	ck_reply(r, 0, 3, 0, 1000, test_elem_int(r, 4));
	r = tb_state(p, "3", "1", "500"); /* older: served at 1000 */
	ck_reply(r, 2, 1, 2000, 1000, test_elem_int(r, 4));
	ck_snapshot_same(before);
	free(before);
	/* What the state foresaw is what the acquire finds. */
	ck_reply(tb(p, "3", "1", "1", 1500), 1, 0, 0, 2500);
}
END_TEST

/* ---- table tests: (parameters, calls with now) -> exact replies ------------ */

static const struct algo_case algo_cases[] = {
	/* ---- token bucket ---- */
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

/* The tables' TTLs are until full (+1 ms); the key keeps SKEW_MS more for its time mark. */
START_TEST(test_table)
{
	struct algo_case ac = algo_cases[_i];

	for (int i = 0; ac.steps[i].now >= 0; i++)
		if (ac.steps[i].ttl > 0)
			ac.steps[i].ttl += model_skew_ms();
	check_algo_case(&ac);
}
END_TEST

/* ---- validation ------------------------------------------------------------ */

static const struct bad_call bad_calls[] = {
	{ "token_bucket", 2, { TBK, TB_REG, "", "3", "1", "1", "9000" }, "ERR sluice: path " },
	{ "token_bucket", 2, { TBK, TB_REG, "/v", "0", "1", "1", "9000" }, "ERR sluice: capacity " },
	{ "token_bucket", 2, { TBK, TB_REG, "/v", "2.5", "1", "1", "9000" }, "ERR sluice: capacity " },
	{ "token_bucket", 2, { TBK, TB_REG, "/v", "3", "0", "1", "9000" }, "ERR sluice: rate " },
	{ "token_bucket", 2, { TBK, TB_REG, "/v", "3", "-1", "1", "9000" }, "ERR sluice: rate " },
	{ "token_bucket", 2, { TBK, TB_REG, "/v", "3", "inf", "1", "9000" }, "ERR sluice: rate " },
	{ "token_bucket", 2, { TBK, TB_REG, "/v", "3", "nan", "1", "9000" }, "ERR sluice: rate " },
	{ "token_bucket", 2, { TBK, TB_REG, "/v", "3", "0x10", "1", "9000" }, "ERR sluice: rate " },
	{ "token_bucket", 2, { TBK, TB_REG, "/v", "3", "", "1", "9000" }, "ERR sluice: rate " },
	{ "token_bucket", 2, { TBK, TB_REG, "/v", "3", "1", "0", "9000" }, "ERR sluice: n " },
	{ "token_bucket", 2, { TBK, TB_REG, "/v", "3", "1", "1.5", "9000" }, "ERR sluice: n " },
	{ "token_bucket", 2, { TBK, TB_REG, "/v", "3", "1", "1", "1e3" }, "ERR sluice: now " },
	{ "token_bucket", 3, { TBK, TB_REG, "x", "/v", "3", "1", "1", "9000" }, "ERR sluice: token_bucket takes 2 KEYS" },
	{ "token_bucket_reclaim", 2, { TB_REG, TBK, "9000", "/v", "0", "1" }, "ERR sluice: capacity " },
	{ "token_bucket_reclaim", 2, { TB_REG, TBK, "9000", "/v", "3", "-1" }, "ERR sluice: rate " },
	{ "token_bucket_reclaim", 2, { TB_REG, TBK, "9000", "", "3", "1" }, "ERR sluice: path " },
	{ "token_bucket_reclaim", 2, { TB_REG, TBK, "x", "/v", "3", "1" }, "ERR sluice: now " },
	{ "token_bucket_reclaim", 3, { TB_REG, TBK, "k", "9000", "/v", "3", "1", "/k", "3", "abc" }, "ERR sluice: rate " },
	{ "token_bucket_reclaim", 2, { TB_REG, TBK, "9000", "/v", "3" }, "ERR sluice: token_bucket_reclaim takes" },
	{ "token_bucket_state", 1, { TBK, "0", "1", "9000" }, "ERR sluice: capacity " },
	{ "token_bucket_state", 1, { TBK, "3", "abc", "9000" }, "ERR sluice: rate " },
	{ "token_bucket_state", 1, { TBK, "3", "1", "x" }, "ERR sluice: now " },
};

START_TEST(test_bad_arguments_change_nothing)
{
	check_bad_call(&bad_calls[_i]);
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

	ck_reply(tb(p, "1", "1", "1", T), 1, 0, 0, 1000);
	ck_pttl(TB_KEY(p), 1001 + skew); /* until full (+1), then SKEW_MS more */
	/* Full at T + 1000 by Redis time, but not for a client 5 s behind. */
	ck_reply(tb_reclaim1(p, "1", "1", T + 5000), 0, 0, 1, 0);
	ck_reply(tb(p, "1", "1", "1", T + 500), 0, 0, 500, 500);
	ck_reply(tb_reclaim1(p, "1", "1", T + 999 + skew), 0, 0, 1, 0);
	ck_cmd("{\"tokens\", \"0\", \"last\", \"1000000\"}", "HGETALL %s", TB_KEY(p));
	ck_reply(tb_reclaim1(p, "1", "1", T + 1000 + skew), 1, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "DBSIZE"), 0);
	/* The laggiest client of the horizon finds it full, as it would have before. */
	ck_reply(tb(p, "1", "1", "1", T + 1000), 1, 0, 0, 1000);
}
END_TEST

/*
 * Issue 8, item 3 in virtual time: a client sends 20 requests per second for
 * 12 s (at Redis times R0, R0 + 50, ..., R0 + 11950) with its clock 5 s behind
 * Redis, to a bucket of 10 tokens refilled at 2 per second.  With `worker`,
 * the reclaim runs at Redis time every 1000 ms (R0, R0 + 1000, ...), before the
 * client's call of the same instant, and only while the path is registered.
 * The bucket expires by its TTL, played out in virtual time: *k, with when it
 * expires.  Returns the requests admitted.
 */
#define R0 1700000000000LL
static long long tb_lagging_client(int worker, struct vkey *k)
{
	const char *p = "/skew";
	const long long lag = 5000;
	long long admitted = 0;

	vkey_init(k, TB_KEY(p));
	for (long long r = R0; r < R0 + 12000; r += 50) {
		if (worker && (r - R0) % 1000 == 0 && in_set(TB_REG, p)) {
			vkeys_before(c, k, 1, r);
			freeReplyObject(tb_reclaim1(p, "10", "2", r));
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
 * (the client's last was 5 s older) and deleted it: 132 (the 133
 * counts a 241st call, at R0 + 12000).  The last token, taken at R0 + 11500
 * (R0 + 6500 in the client's clock), leaves none, full again 5000 ms later:
 * the bucket's TTL, from that now, runs to R0 + 16501 (+1), and SKEW_MS more
 * for the mark.
 */
static void tb_check_last_ttl(const struct vkey *k)
{
	ck_assert_int_le(k->expires, R0 + 16501 + model_skew_ms());
	ck_assert_int_gt(k->expires, R0 + 16501 + model_skew_ms() - SLACK_MS);
}

START_TEST(test_tb_mark_lagging_client_with_worker)
{
	struct vkey k;

	ck_assert_int_eq(tb_lagging_client(1, &k), 33);
	tb_check_last_ttl(&k);
}
END_TEST

START_TEST(test_tb_mark_lagging_client_without_worker)
{
	struct vkey k;

	ck_assert_int_eq(tb_lagging_client(0, &k), 33);
	tb_check_last_ttl(&k);
}
END_TEST
#undef R0

/* ---- the reference model, over random traces ------------------------------------ */

/*
 * The token bucket's side of a trace (tests/bucket_model.h), with what it
 * came across; `kept` models each bucket as if the reclaim never ran.
 */
struct tb_trace {
	struct tb_model m[MODEL_PATHS], kept[MODEL_PATHS];
	long long admitted, denied, reclaimed, at_mark;
};

/* KEYS and ARGV of the acquire, or of the reclaim of one bucket. */
static int tb_trace_args(const struct model_call *k, const char *path, const char *argv[13])
{
	const char *bucket = TB_KEY(path);
	const char *reclaim_argv[] = { TB_REG, bucket, num(k->now), path, num(k->cap), k->rate };
	const char *acq_argv[] = { bucket, TB_REG, path, num(k->cap), k->rate, num(k->n), num(k->now) };

	memcpy(argv, k->job ? reclaim_argv : acq_argv, k->job ? sizeof(reclaim_argv) : sizeof(acq_argv));
	return k->job ? TEST_N(reclaim_argv) : TEST_N(acq_argv);
}

static void tb_trace_answer(void *ctx, const struct model_call *k, long long want[4], const char *where)
{
	struct tb_trace *tt = ctx;
	struct tb_model *m = &tt->m[k->path], *kept = &tt->kept[k->path];
	double rate = strtod(k->rate, NULL);
	long long other[4];

	if (k->edited) /* see test_tb_model_traces */
		*kept = *m;
	if (k->job) {
		tbm_reclaim(m, k->cap, rate, k->now, model_skew_ms(), want);
		tt->reclaimed += want[0];
		return;
	}
	tt->at_mark += m->stored && m->last > k->now;
	tbm_acquire(m, k->cap, rate, k->n, k->now, want);
	tbm_acquire(kept, k->cap, rate, k->n, k->now, other);
	tt->admitted += want[0];
	tt->denied += !want[0];
	ck_assert_msg(memcmp(want, other, sizeof(other)) == 0,
		      "%s: the reclaim changed the answer from {%lld, %lld, %lld, %lld} to {%lld, %lld, %lld, %lld}", where,
		      other[0], other[1], other[2], other[3], want[0], want[1], want[2], want[3]);
}

/*
 * 10,000 calls per seed over four buckets (tests/bucket_model.h's traces):
 * clients' acquires of cost 1..3, in the same ms or after idle spells, at
 * clocks lagging Redis by up to SKEW_MS (so often behind the mark), and the
 * reclaim at Redis time at random instants (a tenth of the calls),
 * capacities and rates varied, rule edits.  Every reply of the scripts must
 * be the model's, to the ms.  And the reclaim must change nothing a client
 * within the horizon sees: a second model of each bucket that is never
 * reclaimed answers every acquire the same.  (From the bucket's last rule
 * edit on: a lazily refilled bucket does not remember the capacity it filled
 * up to, so under a new rule an absent bucket and a full one may differ.)
 */
START_TEST(test_tb_model_traces)
{
	struct tb_trace tt = { 0 };
	const struct model_alg alg = { "token_bucket", "token_bucket_reclaim", 2, 10, tb_trace_args, tb_trace_answer,
				       &tt };

	model_run(c, model_seeds[_i], &alg);
	/* Every case came up often (by seed, 4,600 to 7,100 admitted, 1,900 to
	 * 4,400 denied, 120 to 210 buckets reclaimed, 2,200 to 2,600 calls served
	 * at the mark). */
	ck_assert_msg(tt.admitted > 1000 && tt.denied > 1000 && tt.reclaimed > 50 && tt.at_mark > 1000,
		      "%lld admitted, %lld denied, %lld reclaimed, %lld at the mark", tt.admitted, tt.denied,
		      tt.reclaimed, tt.at_mark);
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
	tcase_add_test(tc, test_tb_reclaim_refilled);
	tcase_add_test(tc, test_tb_reclaim_batch);

	tc = test_tcase(s, "state", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_tb_state);

	tc = test_tcase(s, "tables", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_table, 0, TEST_N(algo_cases));

	tc = test_tcase(s, "validation", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_bad_arguments_change_nothing, 0, TEST_N(bad_calls));

	tc = test_tcase(s, "mark", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_tb_mark_minimal);
	tcase_add_test(tc, test_tb_mark_lagging_client_with_worker);
	tcase_add_test(tc, test_tb_mark_lagging_client_without_worker);

	tc = test_tcase(s, "model", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_tb_model_traces, 0, TEST_N(model_seeds));
	return s;
}

int main(void)
{
	return test_run_suite(token_bucket_suite());
}

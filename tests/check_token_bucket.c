/*
 * lua/token_bucket.lua (the client's acquire), token_bucket_reclaim.lua (the
 * worker's reclaim of buckets refilled to capacity) and token_bucket_state.lua
 * (the admin's read).  The fixture, helpers and time conventions are
 * tests/script_fixture.h's.
 */
#include "tests/script_fixture.h"

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
	ck_pttl(TB_KEY(p), 1251);
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
	char *before;

	freeReplyObject(tb("A", "3", "1", "3", 0));
	freeReplyObject(tb("B", "2", "0.16666666666666666", "2", 0));
	before = test_snapshot(c);
	ck_reply(tb_reclaim1("A", "3", "1", 2999), 0, 0, 1, 0);
	ck_reply(tb_reclaim1("B", "2", "0.16666666666666666", 11999), 0, 0, 1, 0);
	ck_snapshot_same(before);
	free(before);
	/* Full at 3000 (3 tokens) and at 12000 (1.9999999999999998 + epsilon). */
	ck_reply(tb_reclaim1("A", "3", "1", 3000), 1, 1, 1, 0);
	ck_reply(tb_reclaim1("B", "2", "0.16666666666666666", 12000), 1, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "DBSIZE"), 0);
	ck_reply(tb_reclaim1("A", "3", "1", 3000), 0, 0, 1, 0);
	/* The acquire finds a full bucket, as it would have before the reclaim. */
	ck_reply(tb("A", "3", "1", "3", 3000), 1, 0, 0, 3000);
}
END_TEST

START_TEST(test_tb_reclaim_batch)
{
	char *before;

	/* A: 2.5 tokens of 3 at 1000; B: full at 1000; C: registered, absent;
	 * D: registered, a sorted set; E: 3 tokens, capacity lowered 5 -> 3;
	 * F: last = 5000, ahead of the worker's 1000: 2 tokens, not full;
	 * G: 3 tokens at 5000 and capacity lowered 5 -> 3: full at 5000 (served
	 * at its `last`, not at the worker's older 1000). */
	freeReplyObject(tb("A", "3", "1", "1", 500));
	freeReplyObject(tb("B", "3", "1", "1", 0));
	freeReplyObject(tb("E", "5", "1", "2", 1000));
	freeReplyObject(tb("F", "3", "1", "1", 5000));
	freeReplyObject(tb("G", "5", "1", "2", 5000));
	freeReplyObject(test_cmd(c, "SADD %s C D", TB_REG));
	freeReplyObject(test_cmd(c, "ZADD %s 1 x", TB_KEY("D")));
	ck_reply(ev("token_bucket_reclaim", 8, TB_REG, TB_KEY("A"), TB_KEY("B"), TB_KEY("C"), TB_KEY("D"),
		    TB_KEY("E"), TB_KEY("F"), TB_KEY("G"), "1000", "A", "3", "1", "B", "3", "1", "C", "3", "1", "D",
		    "3", "1", "E", "3", "1", "F", "3", "1", "G", "3", "1", NULL),
		 3, 4, 7, 1);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s %s %s", TB_KEY("B"), TB_KEY("C"), TB_KEY("E"), TB_KEY("G")), 0);
	ck_cmd("{\"tokens\", \"2\", \"last\", \"500\"}", "HGETALL %s", TB_KEY("A"));
	ck_cmd("{\"tokens\", \"2\", \"last\", \"5000\"}", "HGETALL %s", TB_KEY("F"));
	ck_cmd("{\"A\", \"D\", \"F\"}", "SORT %s ALPHA", TB_REG);
	before = test_snapshot(c);
	ck_reply(ev("token_bucket_reclaim", 8, TB_REG, TB_KEY("A"), TB_KEY("B"), TB_KEY("C"), TB_KEY("D"),
		    TB_KEY("E"), TB_KEY("F"), TB_KEY("G"), "1000", "A", "3", "1", "B", "3", "1", "C", "3", "1", "D",
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
	ck_assert_int_gt(test_elem_int(r, 4), 2001 - SLACK_MS);
	ck_assert_int_le(test_elem_int(r, 4), 2001);
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

START_TEST(test_table)
{
	check_algo_case(&algo_cases[_i]);
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
	return s;
}

int main(void)
{
	return test_run_suite(token_bucket_suite());
}

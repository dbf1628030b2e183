/*
 * lua/sliding_counter.lua (the client's acquire), sliding_counter_prune.lua
 * (the worker's prune of expired sub-windows) and sliding_counter_state.lua
 * (the admin's read).  The fixture, helpers and time conventions are
 * tests/script_fixture.h's.
 */
#include "tests/script_fixture.h"

/* ---- sliding counter ------------------------------------------------------- */

START_TEST(test_sc_fields_removed_on_the_way)
{
	const char *p = "/fields";

	/* Sub-windows of 100 ms: 0 -> 2, 1 -> 1, 9 -> 1. */
	freeReplyObject(sc(p, "10", "1000", "10", 0));
	freeReplyObject(sc(p, "10", "1000", "10", 50));
	freeReplyObject(sc(p, "10", "1000", "10", 150));
	ck_reply(sc(p, "10", "1000", "10", 950), 1, 6, 0, 50);
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_KEY(p)), 4);
	/* A field written under another sub-window length (index past the current one). */
	freeReplyObject(test_cmd(c, "HSET %s 9999 5", SC_KEY(p)));
	/* At 1100 sub-windows 0 and 1 have left, and 9999 means nothing. */
	ck_reply(sc(p, "10", "1000", "10", 1100), 1, 8, 0, 800);
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_KEY(p)), 3);
	ck_cmd("{\"1\", \"1\", \"1100\"}", "HMGET %s 9 11 t", SC_KEY(p));
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s 0", SC_KEY(p)), 0);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s 9999", SC_KEY(p)), 0);
	ck_pttl(SC_KEY(p), 1000); /* sub-window 11 leaves at 2100 */
}
END_TEST

START_TEST(test_sc_many_in_one_ms)
{
	const char *p = "/burst";

	for (int i = 1; i <= 5; i++)
		ck_reply(sc(p, "5", "60000", "6", 12345), 1, 5 - i, 0, 60000 - 2345);
	ck_reply(sc(p, "5", "60000", "6", 12345), 0, 0, 60000 - 2345, 60000 - 2345);
	ck_cmd("{\"5\", \"12345\"}", "HMGET %s 1 t", SC_KEY(p));
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_KEY(p)), 2);
}
END_TEST

START_TEST(test_sc_one_sub_window_is_a_fixed_window)
{
	const char *p = "/one";

	ck_reply(sc(p, "2", "1000", "1", 100), 1, 1, 0, 900);
	ck_reply(sc(p, "2", "1000", "1", 900), 1, 0, 0, 100);
	ck_reply(sc(p, "2", "1000", "1", 999), 0, 0, 1, 1);
	ck_reply(sc(p, "2", "1000", "1", 1000), 1, 1, 0, 1000);
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
	ck_reply(r, 1, 2, 0, test_elem_int(r, 3));
	r = test_cmd(c, "HGET %s t", SC_KEY(p));
	t = atoll(r->str);
	freeReplyObject(r);
	ck_assert_int_ge(t, before);
	ck_assert_int_le(t, after);
	ck_cmd("\"1\"", "HGET %s %lld", SC_KEY(p), t / 100);
}
END_TEST

START_TEST(test_sc_prune_boundary)
{
	const char *p = "/prune";

	/* Sub-windows of 100 ms: 0 -> 2, 1 -> 1, 9 -> 1, t = 950. */
	freeReplyObject(sc(p, "10", "1000", "10", 0));
	freeReplyObject(sc(p, "10", "1000", "10", 50));
	freeReplyObject(sc(p, "10", "1000", "10", 150));
	freeReplyObject(sc(p, "10", "1000", "10", 950));
	ck_reply(sc_prune1(p, "1000", "10", 999), 0, 0, 1, 0);
	ck_reply(sc_prune1(p, "1000", "10", 1000), 1, 0, 1, 0); /* sub-window 0 */
	ck_reply(sc_prune1(p, "1000", "10", 1099), 0, 0, 1, 0);
	ck_reply(sc_prune1(p, "1000", "10", 1100), 1, 0, 1, 0); /* sub-window 1 */
	ck_reply(sc_prune1(p, "1000", "10", 1100), 0, 0, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_KEY(p)), 2);
	ck_reply(sc_prune1(p, "1000", "10", 1899), 0, 0, 1, 0);
	ck_assert_int_eq(in_set(SC_REG, p), 1);
	/* At 1900 the last one leaves: the hash goes, and the path. */
	ck_reply(sc_prune1(p, "1000", "10", 1900), 1, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SC_KEY(p)), 0);
	ck_assert_int_eq(in_set(SC_REG, p), 0);
	ck_reply(sc_prune1(p, "1000", "10", 1900), 0, 0, 1, 0);
}
END_TEST

START_TEST(test_sc_prune_batch)
{
	char *before;

	/* A: 0 -> 2, 5 -> 1 (sub 0 leaves at 1000); B: registered, absent;
	 * C: 1 -> 1 plus a field of another sub-window length; D: a string;
	 * E: only a zero count and t: nothing live; F: t = 5000, ahead of the
	 * worker's 1000: nothing of it is expired or "in the future". */
	freeReplyObject(sc("A", "10", "1000", "10", 0));
	freeReplyObject(sc("A", "10", "1000", "10", 0));
	freeReplyObject(sc("A", "10", "1000", "10", 500));
	freeReplyObject(sc("C", "10", "1000", "10", 100));
	freeReplyObject(test_cmd(c, "HSET %s 9999 4", SC_KEY("C")));
	freeReplyObject(test_cmd(c, "SET %s 3", SC_KEY("D")));
	freeReplyObject(test_cmd(c, "HSET %s t 5 3 0", SC_KEY("E")));
	freeReplyObject(sc("F", "10", "1000", "10", 5000));
	freeReplyObject(test_cmd(c, "SADD %s B D E", SC_REG));
	ck_reply(ev("sliding_counter_prune", 7, SC_REG, SC_KEY("A"), SC_KEY("B"), SC_KEY("C"), SC_KEY("D"),
		    SC_KEY("E"), SC_KEY("F"), "1000", "A", "1000", "10", "B", "1000", "10", "C", "1000", "10",
		    "D", "1000", "10", "E", "1000", "10", "F", "1000", "10", NULL),
		 3, 2, 6, 1);
	ck_cmd("{nil, \"1\", \"500\"}", "HMGET %s 0 5 t", SC_KEY("A"));
	ck_cmd("{\"1\", nil, \"100\"}", "HMGET %s 1 9999 t", SC_KEY("C"));
	ck_cmd("\"3\"", "GET %s", SC_KEY("D"));
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SC_KEY("E")), 0);
	ck_cmd("{\"1\", \"5000\"}", "HMGET %s 50 t", SC_KEY("F"));
	ck_cmd("{\"A\", \"C\", \"D\", \"F\"}", "SORT %s ALPHA", SC_REG);
	/* Idempotent. */
	before = test_snapshot(c);
	ck_reply(ev("sliding_counter_prune", 7, SC_REG, SC_KEY("A"), SC_KEY("B"), SC_KEY("C"), SC_KEY("D"),
		    SC_KEY("E"), SC_KEY("F"), "1000", "A", "1000", "10", "B", "1000", "10", "C", "1000", "10",
		    "D", "1000", "10", "E", "1000", "10", "F", "1000", "10", NULL),
		 0, 0, 6, 1);
	ck_snapshot_same(before);
	free(before);
	ck_reply(ev("sliding_counter_prune", 1, SC_REG, "1000", NULL), 0, 0, 0, 0);
	ck_reply(ev("sliding_counter_prune", 1, SC_REG, NULL), 0, 0, 0, 0);
}
END_TEST

/* What the acquire then sees is what it saw before the prune. */
START_TEST(test_sc_prune_changes_no_answer)
{
	const char *p = "/same";
	char *before;
	redisReply *r;

	freeReplyObject(sc(p, "3", "1000", "10", 0));
	freeReplyObject(sc(p, "3", "1000", "10", 99));
	freeReplyObject(sc(p, "3", "1000", "10", 100));
	before = test_snapshot(c);
	r = sc_state(p, "3", "1000", "10", "1050");
	ck_reply(r, 1, 2, 50, test_elem_int(r, 3));
	ck_snapshot_same(before);
	free(before);
	ck_reply(sc_prune1(p, "1000", "10", 1050), 1, 0, 1, 0);
	r = sc_state(p, "3", "1000", "10", "1050");
	ck_reply(r, 1, 2, 50, test_elem_int(r, 3));
	ck_reply(sc(p, "3", "1000", "10", 1050), 1, 1, 0, 50);
}
END_TEST

/* ---- state ------------------------------------------------------------------ */

START_TEST(test_sc_state)
{
	const char *p = "/state";
	char *before;
	redisReply *r;

	ck_reply(sc_state(p, "3", "1000", "10", "0"), 0, 3, 0, -2);
	freeReplyObject(sc(p, "3", "1000", "10", 0));
	freeReplyObject(sc(p, "3", "1000", "10", 99));
	freeReplyObject(sc(p, "3", "1000", "10", 100));
	before = test_snapshot(c);
	r = sc_state(p, "3", "1000", "10", "500");
	ck_assert_int_gt(test_elem_int(r, 3), 1000 - SLACK_MS);
	ck_assert_int_le(test_elem_int(r, 3), 1000);
	ck_reply(r, 3, 0, 500, test_elem_int(r, 3));
	r = sc_state(p, "3", "1000", "10", "50"); /* older: served at 100 */
	ck_reply(r, 3, 0, 900, test_elem_int(r, 3));
	r = sc_state(p, "3", "1000", "10", "1000");
	ck_reply(r, 1, 2, 100, test_elem_int(r, 3));
	r = sc_state(p, "3", "1000", "10", "1100");
	ck_reply(r, 0, 3, 0, test_elem_int(r, 3));
	ck_snapshot_same(before);
	free(before);
}
END_TEST

/* ---- table tests: (parameters, calls with now) -> exact replies ------------ */

static const struct algo_case algo_cases[] = {
	/* ---- sliding counter ---- */
	{ "sliding counter: limit 3 per 1000 ms in 10 sub-windows of 100 ms",
	  SC,
	  "3",
	  "1000",
	  "10",
	  { /* sub-window 0 gets 0 and 99, sub-window 1 gets 100 (just after the boundary) */
	    { 0, 0, { 1, 2, 0, 1000 }, 1000 },
	    { 99, 0, { 1, 1, 0, 901 }, 901 },
	    { 100, 0, { 1, 0, 0, 900 }, 1100 },
	    /* refused in the same ms: sub-window 0 (2 requests) must leave, at 1000 */
	    { 100, 0, { 0, 0, 900, 900 }, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0 },
	    /* at 1000 sub-window 0 has left the window, even its request of 99 */
	    { 1000, 0, { 1, 1, 0, 100 }, 1000 },
	    { 1000, 0, { 1, 0, 0, 100 }, 1000 },
	    { 1000, 0, { 0, 0, 100, 100 }, 0 },
	    { 1099, 0, { 0, 0, 1, 1 }, 0 },
	    { 1100, 0, { 1, 0, 0, 900 }, 1000 },
	    /* an older now is served at the stored 1100 */
	    { 1050, 0, { 0, 0, 900, 900 }, 0 },
	    /* at 2000 the request of 1100 (sub-window 11) still counts, until 2100 */
	    { 2000, 0, { 1, 1, 0, 100 }, 1000 },
	    END } },
	{ "sliding counter: a client that keeps retrying gets in as sub-windows leave",
	  SC,
	  "2",
	  "1000",
	  "4",
	  { { 0, 0, { 1, 1, 0, 1000 }, 1000 },
	    { 300, 0, { 1, 0, 0, 700 }, 950 },
	    { 400, 0, { 0, 0, 600, 600 }, 0 },
	    { 500, 0, { 0, 0, 500, 500 }, 0 },
	    { 600, 0, { 0, 0, 400, 400 }, 0 },
	    { 700, 0, { 0, 0, 300, 300 }, 0 },
	    { 800, 0, { 0, 0, 200, 200 }, 0 },
	    { 900, 0, { 0, 0, 100, 100 }, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0 },
	    { 1000, 0, { 1, 0, 0, 250 }, 1000 },
	    { 1100, 0, { 0, 0, 150, 150 }, 0 },
	    { 1249, 0, { 0, 0, 1, 1 }, 0 },
	    { 1250, 0, { 1, 0, 0, 750 }, 1000 },
	    END } },
	{ "sliding counter: limit 4, the wait is for enough old requests to leave",
	  SC,
	  "4",
	  "600",
	  "3",
	  { /* sub-windows of 200 ms: 1 in sub 0, 1 in sub 1, 2 in sub 2 */
	    { 10, 0, { 1, 3, 0, 590 }, 590 },
	    { 210, 0, { 1, 2, 0, 390 }, 590 },
	    { 410, 0, { 1, 1, 0, 190 }, 590 },
	    { 410, 0, { 1, 0, 0, 190 }, 590 },
	    /* sum 4: one must leave: sub 0 at 600 */
	    { 500, 0, { 0, 0, 100, 100 }, 0 },
	    { 600, 0, { 1, 0, 0, 200 }, 600 },
	    /* sum 4 again (sub 1, sub 2 x2, sub 3): sub 1 leaves at 800 */
	    { 799, 0, { 0, 0, 1, 1 }, 0 },
	    /* at 800 sub 1 left: sum 3, admitted; at 1000 sub 2 (2 requests) leaves */
	    { 800, 0, { 1, 0, 0, 200 }, 600 },
	    { 801, 0, { 0, 0, 199, 199 }, 0 },
	    END } },
};

START_TEST(test_table)
{
	check_algo_case(&algo_cases[_i]);
}
END_TEST

/* ---- validation ------------------------------------------------------------ */

static const struct bad_call bad_calls[] = {
	{ "sliding_counter", 2, { SCK, SC_REG, "", "3", "1000", "10", "9000" }, "ERR sluice: path " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "0", "1000", "10", "9000" }, "ERR sluice: limit " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "0", "10", "9000" }, "ERR sluice: window_ms " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "1000", "0", "9000" }, "ERR sluice: sub_windows " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "1000", "3", "9000" }, "ERR sluice: sub_windows " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "1000", "2000", "9000" }, "ERR sluice: sub_windows " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "1000", "2.5", "9000" }, "ERR sluice: sub_windows " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "1000", "", "9000" }, "ERR sluice: sub_windows " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "1000", "10", "now" }, "ERR sluice: now " },
	{ "sliding_counter", 1, { SCK, "/v", "3", "1000", "10", "9000" }, "ERR sluice: sliding_counter takes 2 KEYS" },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "9000", "/v", "1000", "3" }, "ERR sluice: sub_windows " },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "9000", "/v", "0", "10" }, "ERR sluice: window_ms " },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "9000", "", "1000", "10" }, "ERR sluice: path " },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "-1", "/v", "1000", "10" }, "ERR sluice: now " },
	{ "sliding_counter_prune", 3, { SC_REG, SCK, "k", "9000", "/v", "1000", "10", "/k", "1000", "7" },
	  "ERR sluice: sub_windows " },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "9000", "/v", "1000" }, "ERR sluice: sliding_counter_prune takes" },
	{ "sliding_counter_state", 1, { SCK, "0", "1000", "10", "9000" }, "ERR sluice: limit " },
	{ "sliding_counter_state", 1, { SCK, "3", "1000", "7", "9000" }, "ERR sluice: sub_windows " },
	{ "sliding_counter_state", 1, { SCK, "3", "1000", "10", "x" }, "ERR sluice: now " },
};

START_TEST(test_bad_arguments_change_nothing)
{
	check_bad_call(&bad_calls[_i]);
}
END_TEST

static Suite *sliding_counter_suite(void)
{
	Suite *s = suite_create("sliding_counter");
	TCase *tc;

	tc = test_tcase(s, "sliding_counter", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_sc_fields_removed_on_the_way);
	tcase_add_test(tc, test_sc_many_in_one_ms);
	tcase_add_test(tc, test_sc_one_sub_window_is_a_fixed_window);
	tcase_add_test(tc, test_sc_uses_redis_time);
	tcase_add_test(tc, test_sc_prune_boundary);
	tcase_add_test(tc, test_sc_prune_batch);
	tcase_add_test(tc, test_sc_prune_changes_no_answer);

	tc = test_tcase(s, "state", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_sc_state);

	tc = test_tcase(s, "tables", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_table, 0, TEST_N(algo_cases));

	tc = test_tcase(s, "validation", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_bad_arguments_change_nothing, 0, TEST_N(bad_calls));
	return s;
}

int main(void)
{
	return test_run_suite(sliding_counter_suite());
}

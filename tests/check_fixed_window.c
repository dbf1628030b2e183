/*
 * lua/fixed_window.lua (the client's acquire), fixed_window_repair.lua (the
 * worker's repair of counters left without a TTL) and fixed_window_state.lua
 * (the admin's read); and where every client script's TTL ends, to the ms.
 * The fixture, helpers and time conventions are tests/script_fixture.h's.
 */
#include "tests/script_fixture.h"

/* ---- fixed window ----------------------------------------------------------- */

START_TEST(test_fw_uses_redis_time)
{
	const char *p = "/clock";
	long long before = test_server_ms(c), after, t;
	redisReply *r;

	r = acquire(FW, p, "3", "1000", NULL, NULL, NULL);
	after = test_server_ms(c);
	ck_assert_int_ge(test_elem_int(r, 3), 1);
	ck_assert_int_le(test_elem_int(r, 3), 1000);
	ck_reply(r, 1, 2, 0, test_elem_int(r, 3));
	r = test_cmd(c, "HMGET %s window t", FW_KEY(p));
	t = atoll(r->element[1]->str);
	ck_assert_int_ge(t, before);
	ck_assert_int_le(t, after);
	ck_assert_int_eq(atoll(r->element[0]->str), t / 1000);
	freeReplyObject(r);
	/* "" is the same as absent. */
	r = acquire(FW, p, "3", "1000", NULL, NULL, "");
	ck_assert_int_eq(test_elem_int(r, 1), 1);
	freeReplyObject(r);
}
END_TEST

START_TEST(test_fw_state_layout)
{
	const char *p = "/layout";

	ck_reply(fw(p, "5", "1000", 2500), 1, 4, 0, 500);
	ck_reply(fw(p, "5", "1000", 2600), 1, 3, 0, 400);
	ck_cmd("{\"window\", \"2\", \"count\", \"2\", \"t\", \"2600\"}", "HGETALL %s", FW_KEY(p));
	ck_pttl(FW_KEY(p), 401);
	ck_cmd("{\"/layout\"}", "SMEMBERS %s", FW_REG);
}
END_TEST

START_TEST(test_fw_past_counter_without_ttl)
{
	const char *p = "/stale";

	/* A full counter of window 0 that lost its TTL does not block window 1. */
	for (int i = 0; i < 5; i++)
		freeReplyObject(fw(p, "5", "1000", 200));
	ck_reply(fw(p, "5", "1000", 300), 0, 0, 700, 700);
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(p)));
	ck_reply(fw(p, "5", "1000", 1500), 1, 4, 0, 500);
	ck_cmd("{\"window\", \"1\", \"count\", \"1\", \"t\", \"1500\"}", "HGETALL %s", FW_KEY(p));
	ck_pttl(FW_KEY(p), 501);
}
END_TEST

START_TEST(test_fw_window_length_changed)
{
	const char *p = "/changed";

	ck_reply(fw(p, "2", "1000", 5000), 1, 1, 0, 1000);
	ck_reply(fw(p, "2", "1000", 5000), 1, 0, 0, 1000);
	/* The rule now says 100 ms: index 5 of 1000 ms is not index 50 of 100 ms. */
	ck_reply(fw(p, "2", "100", 5000), 1, 1, 0, 100);
	ck_cmd("{\"window\", \"50\", \"count\", \"1\", \"t\", \"5000\"}", "HGETALL %s", FW_KEY(p));
	/* Back to 1000 ms: to the repair, index 50 is not the current 5 either
	 * (the acquire would start afresh): the counter goes. */
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(p)));
	ck_reply(fw_repair1(p, "1000", 5000), 0, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", FW_KEY(p)), 0);
}
END_TEST

START_TEST(test_fw_repair_batch)
{
	char *before;

	/* A: window 1, lost its TTL -> repaired to the window's end;
	 * B: window 0 (past), lost its TTL -> deleted, out of the registry;
	 * C: window 1 with a TTL -> left alone;  D: registered, absent;
	 * E: a foreign string counter without TTL -> the whole window;
	 * F: a foreign string counter with a TTL -> left alone;
	 * G: registered, a sorted set (another layout) -> skipped. */
	freeReplyObject(fw("A", "5", "1000", 1200));
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY("A")));
	freeReplyObject(fw("B", "5", "1000", 200));
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY("B")));
	freeReplyObject(fw("C", "5", "1000", 1300));
	freeReplyObject(test_cmd(c, "PEXPIRE %s 700000", FW_KEY("C")));
	freeReplyObject(test_cmd(c, "SADD %s D G", FW_REG));
	freeReplyObject(test_cmd(c, "SET %s 7", FW_KEY("E")));
	freeReplyObject(test_cmd(c, "SET %s 3 PX 400000", FW_KEY("F")));
	freeReplyObject(test_cmd(c, "ZADD %s 1 x", FW_KEY("G")));
	ck_reply(ev("fixed_window_repair", 8, FW_REG, FW_KEY("A"), FW_KEY("B"), FW_KEY("C"), FW_KEY("D"),
		    FW_KEY("E"), FW_KEY("F"), FW_KEY("G"), "1500", "A", "1000", "B", "1000", "C", "1000", "D",
		    "1000", "E", "1000", "F", "1000", "G", "1000", NULL),
		 2, 2, 7, 1);
	ck_pttl(FW_KEY("A"), 501); /* 2000 - 1500 + 1 */
	ck_cmd("{\"window\", \"1\", \"count\", \"1\", \"t\", \"1200\"}", "HGETALL %s", FW_KEY("A"));
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", FW_KEY("B")), 0);
	ck_pttl(FW_KEY("C"), 700000);
	ck_pttl(FW_KEY("E"), 1000);
	ck_cmd("\"7\"", "GET %s", FW_KEY("E"));
	ck_pttl(FW_KEY("F"), 400000);
	ck_cmd("{\"x\"}", "ZRANGE %s 0 -1", FW_KEY("G"));
	ck_cmd("{\"A\", \"C\", \"G\"}", "SORT %s ALPHA", FW_REG);

	/* Idempotent: the same call again changes nothing. */
	before = test_snapshot(c);
	ck_reply(ev("fixed_window_repair", 8, FW_REG, FW_KEY("A"), FW_KEY("B"), FW_KEY("C"), FW_KEY("D"),
		    FW_KEY("E"), FW_KEY("F"), FW_KEY("G"), "1500", "A", "1000", "B", "1000", "C", "1000", "D",
		    "1000", "E", "1000", "F", "1000", "G", "1000", NULL),
		 0, 0, 7, 1);
	ck_snapshot_same(before);
	free(before);
	/* An empty batch is fine too. */
	ck_reply(ev("fixed_window_repair", 1, FW_REG, "1500", NULL), 0, 0, 0, 0);
	ck_reply(ev("fixed_window_repair", 1, FW_REG, NULL), 0, 0, 0, 0);
}
END_TEST

START_TEST(test_fw_repair_older_now)
{
	const char *p = "/older";

	ck_reply(fw(p, "5", "1000", 1200), 1, 4, 0, 800);
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(p)));
	/* The worker's clock is behind: served at the counter's 1200 (window 1,
	 * current, not past), the TTL measured from its own 900. */
	ck_reply(fw_repair1(p, "1000", 900), 1, 0, 1, 0);
	ck_pttl(FW_KEY(p), 1101);
	ck_reply(fw_repair1(p, "1000", 900), 0, 0, 1, 0);
	ck_reply(fw(p, "5", "1000", 1300), 1, 3, 0, 700);
	/* At 2000 window 1 is over: deleted. */
	ck_reply(fw_repair1(p, "1000", 2000), 0, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", FW_KEY(p)), 0);
	ck_assert_int_eq(in_set(FW_REG, p), 0);
}
END_TEST

START_TEST(test_fw_repair_uses_redis_time)
{
	const char *p = "/clock";
	redisReply *r;

	freeReplyObject(acquire(FW, p, "5", "60000", NULL, NULL, NULL));
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(p)));
	r = ev("fixed_window_repair", 2, FW_REG, FW_KEY(p), "", p, "60000", NULL);
	ck_reply(r, 1, 0, 1, 0);
	ck_assert_int_gt(test_cmd_int(c, "PTTL %s", FW_KEY(p)), 0);
	ck_assert_int_le(test_cmd_int(c, "PTTL %s", FW_KEY(p)), 60001);
}
END_TEST

/* ---- state ------------------------------------------------------------------ */

START_TEST(test_fw_state)
{
	const char *p = "/state";
	char *before;
	redisReply *r;

	ck_reply(fw_state(FW_KEY(p), "3", "1000", "0"), 0, 3, 0, -2);
	freeReplyObject(fw(p, "3", "1000", 100));
	freeReplyObject(fw(p, "3", "1000", 100));
	before = test_snapshot(c);
	r = fw_state(FW_KEY(p), "3", "1000", "500");
	ck_assert_int_gt(test_elem_int(r, 3), 900 - SLACK_MS);
	ck_assert_int_le(test_elem_int(r, 3), 901);
	ck_reply(r, 2, 1, 500, test_elem_int(r, 3));
	r = fw_state(FW_KEY(p), "3", "1000", "50"); /* older: served at 100 */
	ck_reply(r, 2, 1, 900, test_elem_int(r, 3));
	r = fw_state(FW_KEY(p), "3", "1000", "1000"); /* the next window */
	ck_reply(r, 0, 3, 0, test_elem_int(r, 3));
	r = fw_state(FW_KEY(p), "1", "1000", "999"); /* limit lowered below the count */
	ck_reply(r, 2, 0, 1, test_elem_int(r, 3));
	ck_snapshot_same(before);
	free(before);
	/* A foreign INCR counter: its value, and when it expires (never: -1). */
	freeReplyObject(test_cmd(c, "SET rate_limit:x 4"));
	ck_reply(fw_state("rate_limit:x", "3", "60000", "0"), 4, 0, -1, -1);
	freeReplyObject(test_cmd(c, "PEXPIRE rate_limit:x 60000"));
	r = fw_state("rate_limit:x", "10", "60000", "0");
	ck_assert_int_gt(test_elem_int(r, 2), 60000 - SLACK_MS);
	ck_reply(r, 4, 6, test_elem_int(r, 2), test_elem_int(r, 2));
	freeReplyObject(test_cmd(c, "ZADD z 1 x"));
	ck_error(fw_state("z", "3", "1000", "0"), "ERR sluice: fixed_window_state: the counter is a zset");
}
END_TEST

/* ---- TTLs to the ms ---------------------------------------------------------- */

/*
 * Where a key's TTL ends, to the ms (PEXPIRETIME).  The call uses Redis TIME;
 * it is repeated until TIME reads the same ms before and after it, so that the
 * script's now and the base of its PEXPIRE are that ms.  Returns the ms.
 */
static long long call_within_one_ms(enum algo al, const char *p, const char *a, const char *b, const char *s,
				    const char *n)
{
	for (int attempt = 0; attempt < 200; attempt++) {
		long long before, after;
		const char *keys[2];
		int nk = state_keys(al, p, keys);

		for (int k = 0; k < nk; k++)
			freeReplyObject(test_cmd(c, "DEL %s", keys[k]));
		before = test_server_ms(c);
		freeReplyObject(acquire(al, p, a, b, s, n, NULL));
		after = test_server_ms(c);
		if (before == after)
			return before;
	}
	ck_abort_msg("could not call a script within one ms");
	return -1;
}

START_TEST(test_ttls_to_the_ms)
{
	long long t;

	/* fixed window: to the window's end, + 1 ms */
	t = call_within_one_ms(FW, "/ttl", "5", "1000", NULL, NULL);
	ck_assert_int_eq(test_cmd_int(c, "PEXPIRETIME %s", FW_KEY("/ttl")), (t / 1000 + 1) * 1000 + 1);
	/* sliding counter: until the current sub-window leaves the window */
	t = call_within_one_ms(SC, "/ttl", "5", "1000", "4", NULL);
	ck_assert_int_eq(test_cmd_int(c, "PEXPIRETIME %s", SC_KEY("/ttl")), (t / 250 + 4) * 250);
	/* token bucket: until full again, + 1 ms (1 token at 1 per second) */
	t = call_within_one_ms(TB, "/ttl", "3", "1", NULL, "1");
	ck_assert_int_eq(test_cmd_int(c, "PEXPIRETIME %s", TB_KEY("/ttl")), t + 1000 + 1);
	/* sliding log: until the entry leaves the window */
	t = call_within_one_ms(SL, "/ttl", "5", "1000", NULL, NULL);
	ck_assert_int_eq(test_cmd_int(c, "PEXPIRETIME %s", test_sl_key("/ttl")), t + 1000);
}
END_TEST

/* ---- table tests: (parameters, calls with now) -> exact replies ------------ */

static const struct algo_case algo_cases[] = {
	/* ---- fixed window ---- */
	{ "fixed window: limit 3 per 1000 ms",
	  FW,
	  "3",
	  "1000",
	  NULL,
	  { /* many requests in one millisecond: 3 counted, the 4th refused */
	    { 0, 0, { 1, 2, 0, 1000 }, 1001 },
	    { 0, 0, { 1, 1, 0, 1000 }, 1001 },
	    { 0, 0, { 1, 0, 0, 1000 }, 1001 },
	    { 0, 0, { 0, 0, 1000, 1000 }, 0 },
	    { 500, 0, { 0, 0, 500, 500 }, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0 },
	    /* the window boundary: a new window, a fresh count */
	    { 1000, 0, { 1, 2, 0, 1000 }, 1001 },
	    /* an older now is served at the stored 1000 (window 1), TTL from its own now */
	    { 999, 0, { 1, 1, 0, 1000 }, 1002 },
	    { 1500, 0, { 1, 0, 0, 500 }, 501 },
	    { 1999, 0, { 0, 0, 1, 1 }, 0 },
	    { 2000, 0, { 1, 2, 0, 1000 }, 1001 },
	    END } },
	{ "fixed window: a client that keeps retrying gets in when the window ends",
	  FW,
	  "2",
	  "1000",
	  NULL,
	  { { 100, 0, { 1, 1, 0, 900 }, 901 },
	    { 200, 0, { 1, 0, 0, 800 }, 801 },
	    { 300, 0, { 0, 0, 700, 700 }, 0 },
	    { 400, 0, { 0, 0, 600, 600 }, 0 },
	    { 500, 0, { 0, 0, 500, 500 }, 0 },
	    { 600, 0, { 0, 0, 400, 400 }, 0 },
	    { 700, 0, { 0, 0, 300, 300 }, 0 },
	    { 800, 0, { 0, 0, 200, 200 }, 0 },
	    { 900, 0, { 0, 0, 100, 100 }, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0 },
	    { 1000, 0, { 1, 1, 0, 1000 }, 1001 },
	    { 1000, 0, { 1, 0, 0, 1000 }, 1001 },
	    { 1001, 0, { 0, 0, 999, 999 }, 0 },
	    END } },
	{ "fixed window: 1 per minute, requests just before and after the boundary",
	  FW,
	  "1",
	  "60000",
	  NULL,
	  { { 30000, 0, { 1, 0, 0, 30000 }, 30001 },
	    { 59999, 0, { 0, 0, 1, 1 }, 0 },
	    { 60000, 0, { 1, 0, 0, 60000 }, 60001 },
	    { 60000, 0, { 0, 0, 60000, 60000 }, 0 },
	    { 119999, 0, { 0, 0, 1, 1 }, 0 },
	    END } },
};

START_TEST(test_table)
{
	check_algo_case(&algo_cases[_i]);
}
END_TEST

/* ---- validation ------------------------------------------------------------ */

static const struct bad_call bad_calls[] = {
	{ "fixed_window", 2, { FWK, FW_REG, "", "3", "1000", "9000" }, "ERR sluice: path " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "0", "1000", "9000" }, "ERR sluice: limit " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "1.5", "1000", "9000" }, "ERR sluice: limit " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "9007199254740993", "1000", "9000" }, "ERR sluice: limit " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "3", "0", "9000" }, "ERR sluice: window_ms " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "3", "-1000", "9000" }, "ERR sluice: window_ms " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "3", "1e3", "9000" }, "ERR sluice: window_ms " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "3", "1000", "-5" }, "ERR sluice: now " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "3", "1000", "1e3" }, "ERR sluice: now " },
	{ "fixed_window", 1, { FWK, "/v", "3", "1000", "9000" }, "ERR sluice: fixed_window takes 2 KEYS" },
	{ "fixed_window_repair", 2, { FW_REG, FWK, "9000", "/v", "0" }, "ERR sluice: window_ms " },
	{ "fixed_window_repair", 2, { FW_REG, FWK, "9000", "", "1000" }, "ERR sluice: path " },
	{ "fixed_window_repair", 2, { FW_REG, FWK, "x", "/v", "1000" }, "ERR sluice: now " },
	/* The first counter is valid: the bad second one must still stop the batch. */
	{ "fixed_window_repair", 3, { FW_REG, FWK, "k", "9000", "/v", "1000", "/k", "-1" }, "ERR sluice: window_ms " },
	{ "fixed_window_repair", 2, { FW_REG, FWK, "9000", "/v" }, "ERR sluice: fixed_window_repair takes" },
	{ "fixed_window_state", 1, { FWK, "0", "1000", "9000" }, "ERR sluice: limit " },
	{ "fixed_window_state", 1, { FWK, "3", "x", "9000" }, "ERR sluice: window_ms " },
	{ "fixed_window_state", 1, { FWK, "3", "1000", "-1" }, "ERR sluice: now " },
	{ "fixed_window_state", 2, { FWK, FW_REG, "3", "1000", "9000" }, "ERR sluice: fixed_window_state takes" },
};

START_TEST(test_bad_arguments_change_nothing)
{
	check_bad_call(&bad_calls[_i]);
}
END_TEST

static Suite *fixed_window_suite(void)
{
	Suite *s = suite_create("fixed_window");
	TCase *tc;

	tc = test_tcase(s, "fixed_window", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_fw_uses_redis_time);
	tcase_add_test(tc, test_fw_state_layout);
	tcase_add_test(tc, test_fw_past_counter_without_ttl);
	tcase_add_test(tc, test_fw_window_length_changed);
	tcase_add_test(tc, test_fw_repair_batch);
	tcase_add_test(tc, test_fw_repair_older_now);
	tcase_add_test(tc, test_fw_repair_uses_redis_time);

	tc = test_tcase(s, "state", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_fw_state);

	tc = test_tcase(s, "tables", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_table, 0, TEST_N(algo_cases));
	tcase_add_test(tc, test_ttls_to_the_ms);

	tc = test_tcase(s, "validation", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_bad_arguments_change_nothing, 0, TEST_N(bad_calls));
	return s;
}

int main(void)
{
	return test_run_suite(fixed_window_suite());
}

/*
 * lua/sliding_log.lua (the client's acquire), sliding_log_prune.lua (the
 * worker's prune, with the score units of other limiters' logs) and
 * sliding_log_state.lua (the admin's read).  The fixture, helpers and time
 * conventions are tests/script_fixture.h's.
 */
#include "tests/script_fixture.h"

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
	ttl = test_cmd_int(c, "PTTL %s", test_sl_key(p));
	ck_assert_int_gt(ttl, 900);
	ck_assert_int_le(ttl, 1000);
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
	/* The newest entry lives until 6000 in its clock: 2000 ms from its 4000. */
	ttl = test_cmd_int(c, "PTTL %s", test_sl_key(p));
	ck_assert_int_gt(ttl, 1900);
	ck_assert_int_le(ttl, 2000);
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

START_TEST(test_prune_window_boundary)
{
	const char *p = "/boundary";

	ck_reply(sl_acquire(p, "3", "1000", "1000"), 1, 2, 0, 1000);
	ck_reply(sl_prune1(p, "1000", 1999), 0, 0, 1, 0);
	ck_assert_int_eq(zcard(test_sl_key(p)), 1);
	ck_assert_int_eq(test_cmd_int(c, "SISMEMBER %s %s", SL_REG, p), 1);
	ck_reply(sl_prune1(p, "1000", 2000), 1, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_sl_key(p)), 0);
	ck_assert_int_eq(test_cmd_int(c, "SISMEMBER %s %s", SL_REG, p), 0);
	ck_reply(sl_prune1(p, "1000", 2000), 0, 0, 1, 0);
}
END_TEST

START_TEST(test_prune_batch)
{
	/* A: entries at 0, 500, 900 (window 1000); B: registered, absent;
	 * C: entry at 0, window 5000; D: registered, a hash (another layout). */
	freeReplyObject(sl_acquire("A", "10", "1000", "0"));
	freeReplyObject(sl_acquire("A", "10", "1000", "500"));
	freeReplyObject(sl_acquire("A", "10", "1000", "900"));
	freeReplyObject(sl_acquire("C", "10", "5000", "0"));
	freeReplyObject(test_cmd(c, "SADD %s B D", SL_REG));
	freeReplyObject(test_cmd(c, "HSET %s f 1", test_sl_key("D")));
	ck_reply(ev(SCRIPT_SLIDING_LOG_PRUNE, 5, SL_REG, test_sl_key("A"), test_sl_key("B"), test_sl_key("C"),
		    test_sl_key("D"), "1500", "A", "1000", "B", "1000", "C", "5000", "D", "1000", NULL),
		 2, 1, 4, 1);
	ck_cmd("{\"900:0\"}", "ZRANGE %s 0 -1", test_sl_key("A"));
	ck_assert_int_eq(zcard(test_sl_key("C")), 1);
	ck_cmd("{\"A\", \"C\", \"D\"}", "SORT %s ALPHA", SL_REG);
	/* Twice at one instant: nothing more. */
	ck_reply(ev(SCRIPT_SLIDING_LOG_PRUNE, 5, SL_REG, test_sl_key("A"), test_sl_key("B"), test_sl_key("C"),
		    test_sl_key("D"), "1500", "A", "1000", "B", "1000", "C", "5000", "D", "1000", NULL),
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
	ck_assert_int_gt(test_elem_int(r, 3), 900); /* one window after the entry at 400 */
	ck_assert_int_le(test_elem_int(r, 3), 1000);
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
	/* Two identical logs of sluice's own; pruned with "", "ms" and no unit. */
	const char *paths[] = { "/a", "/b", "/c" }, *units[] = { "", "ms", NULL };

	for (int i = 0; i < 3; i++) {
		freeReplyObject(acquire(SL, paths[i], "10", "1000", NULL, NULL, "0"));
		freeReplyObject(acquire(SL, paths[i], "10", "1000", NULL, NULL, "500"));
	}
	for (int i = 0; i < 3; i++) {
		ck_reply(prune_unit(SL_REG, test_sl_key(paths[i]), paths[i], "1000", 1000, units[i]), 1, 0, 1, 0);
		ck_cmd("{\"500:0\"}", "ZRANGE %s 0 -1", test_sl_key(paths[i]));
		ck_reply(prune_unit(SL_REG, test_sl_key(paths[i]), paths[i], "1000", 1500, units[i]), 1, 1, 1, 0);
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
	  { { 0, 0, { 1, 1, 0, 1000 }, 1000 },
	    { 0, 0, { 1, 0, 0, 1000 }, 1000 },
	    { 0, 0, { 0, 0, 1000, 1000 }, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0 },
	    { 1000, 0, { 1, 1, 0, 1000 }, 1000 },
	    { 500, 0, { 1, 0, 0, 1000 }, 1500 },
	    { 1999, 0, { 0, 0, 1, 1 }, 0 },
	    { 2000, 0, { 1, 1, 0, 1000 }, 1000 },
	    END } },
};

START_TEST(test_table)
{
	check_algo_case(&algo_cases[_i]);
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
	tcase_add_test(tc, test_prune_batch);

	tc = test_tcase(s, "state", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_sliding_state);

	tc = test_tcase(s, "sliding_log_units", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_prune_unit_ms_is_the_default);
	tcase_add_test(tc, test_prune_unit_us);
	tcase_add_test(tc, test_prune_unit_batch);

	tc = test_tcase(s, "tables", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_table, 0, TEST_N(algo_cases));

	tc = test_tcase(s, "validation", script_setup, script_teardown, 60);
	tcase_add_loop_test(tc, test_bad_arguments_change_nothing, 0, TEST_N(bad_calls));
	return s;
}

int main(void)
{
	return test_run_suite(sliding_log_suite());
}

/*
 * lua/reset.lua, the admin's reset of one path: every layout's keys of the
 * path and its registry entries, dry runs, a registry walk that skips a path
 * another registry holds, bad arguments.  The fixture and helpers are
 * tests/script_fixture.h's.
 */
#include "tests/script_fixture.h"

/* ---- reset ------------------------------------------------------------------- */

START_TEST(test_reset)
{
	const char *p = "/api/users";

	freeReplyObject(lb_acquire(p, "10", "1", "3", "0"));
	freeReplyObject(sl_acquire(p, "10", "1000", "0"));
	freeReplyObject(sl_acquire(p, "10", "1000", "1"));
	freeReplyObject(lb_acquire("/other", "10", "1", "1", "0"));
	freeReplyObject(test_cmd(c, "SET sluice:{%s}:fixed_window 7", p));
	{
		const char *argv[] = { SL_REG, LB_REG, test_lb_key(p), test_lb_meta(p), "sluice:{/api/users}:none",
				       test_sl_key(p), "sluice:{/api/users}:fixed_window", "2", p };
		redisReply *r = eval_argv(SCRIPT_RESET, 0, 7, 9, argv);

		ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
		ck_assert_uint_eq(r->elements, 5);
		ck_assert_int_eq(r->element[0]->integer, 2);
		{
			char got[256];
			const char *pairs[] = { "{\"sluice:{/api/users}:leaky_bucket\", 3}",
						"{\"sluice:{/api/users}:leaky_bucket:meta\", 3}",
						"{\"sluice:{/api/users}:sliding_log\", 2}",
						"{\"sluice:{/api/users}:fixed_window\", 1}" };

			for (int i = 0; i < 4; i++)
				ck_assert_str_eq(test_show_reply(r->element[1 + i], got, sizeof(got)), pairs[i]);
		}
		freeReplyObject(r);
	}
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s %s sluice:{%s}:fixed_window", test_lb_key(p),
				      test_lb_meta(p), test_sl_key(p), p),
			 0);
	ck_cmd("{\"/other\"}", "SMEMBERS %s", LB_REG);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SL_REG), 0);
	ck_assert_int_eq(zcard(test_lb_key("/other")), 1);
	/* Again: nothing left. */
	{
		const char *argv[] = { SL_REG, LB_REG, test_lb_key(p), test_lb_meta(p), test_sl_key(p), "2", p };

		ck_reply(eval_argv(SCRIPT_RESET, 0, 5, 7, argv), 0);
	}
}
END_TEST

START_TEST(test_reset_dry_and_walked)
{
	const char *p = "/api/users";

	freeReplyObject(lb_acquire(p, "10", "1", "3", "0"));
	freeReplyObject(sl_acquire(p, "10", "1000", "0"));
	{
		/* dry: the same reply, nothing changed */
		const char *argv[] = { LB_REG, SL_REG, test_lb_key(p), test_lb_meta(p), test_sl_key(p), "2", p, "dry", "" };
		redisReply *r = eval_argv(SCRIPT_RESET, 0, 5, 9, argv);

		ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
		ck_assert_uint_eq(r->elements, 4);
		ck_assert_int_eq(r->element[0]->integer, 2);
		freeReplyObject(r);
		ck_assert_int_eq(zcard(test_lb_key(p)), 3);
		ck_assert_int_eq(zcard(test_sl_key(p)), 1);
		ck_assert_int_eq(test_cmd_int(c, "SISMEMBER %s %s", SL_REG, p), 1);
	}
	{
		/* walking the second registry: the path is in the first, so it is skipped */
		const char *argv[] = { LB_REG, SL_REG, test_lb_key(p), test_lb_meta(p), test_sl_key(p), "2", p, "", "2" };

		ck_reply(eval_argv(SCRIPT_RESET, 0, 5, 9, argv), -1);
		ck_assert_int_eq(zcard(test_lb_key(p)), 3);
	}
	{
		const char *argv[] = { LB_REG, SL_REG, test_lb_key(p), "2", p, "wet", "" };
		redisReply *r = eval_argv(SCRIPT_RESET, 0, 3, 7, argv);

		ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
		ck_assert_str_eq(r->str, "ERR sluice: mode must be \"dry\" or empty");
		freeReplyObject(r);
	}
	{
		const char *argv[] = { LB_REG, SL_REG, test_lb_key(p), "2", p, "", "3" };
		redisReply *r = eval_argv(SCRIPT_RESET, 0, 3, 7, argv);

		ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
		freeReplyObject(r);
	}
}
END_TEST

/* ---- validation ------------------------------------------------------------ */

static const struct bad_call bad_calls[] = {
	{ "reset", 3, { LB_REG, LBK, "x", "/v" }, "ERR sluice: registry_count " },
	{ "reset", 3, { LB_REG, LBK, "4", "/v" }, "ERR sluice: registry_count " },
	{ "reset", 3, { LB_REG, LBK, "1", "" }, "ERR sluice: path " },
};

START_TEST(test_bad_arguments_change_nothing)
{
	check_bad_call(&bad_calls[_i]);
}
END_TEST

static Suite *reset_script_suite(void)
{
	Suite *s = suite_create("reset_script");
	TCase *tc;

	tc = test_tcase(s, "reset", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_reset);
	tcase_add_test(tc, test_reset_dry_and_walked);

	tc = test_tcase(s, "validation", script_setup, script_teardown, 60);
	tcase_add_loop_test(tc, test_bad_arguments_change_nothing, 0, TEST_N(bad_calls));
	return s;
}

int main(void)
{
	return test_run_suite(reset_script_suite());
}

/*
 * The scripts core/scripts.c embeds: every one is there and compiles, the
 * admin's state scripts are declared no-writes (Redis runs them with EVAL_RO
 * and refuses the writers there), EVALSHA and NOSCRIPT.  The fixture and
 * helpers are tests/script_fixture.h's.
 */
#include "tests/script_fixture.h"

/* ---- embedding ----------------------------------------------------------- */

START_TEST(test_all_scripts_embedded_and_compile)
{
	for (int id = 0; id < SCRIPT__COUNT; id++) {
		const struct script_src *s = script_get((enum script_id)id);
		redisReply *r;

		ck_assert_msg(s != NULL, "script %s not embedded", script_name((enum script_id)id));
		ck_assert_uint_eq(strlen(s->body), s->len);
		r = test_cmd(c, "SCRIPT LOAD %s", s->body);
		ck_assert_msg(r->type == REDIS_REPLY_STRING && r->len == 40, "%s does not load: %s",
			      s->name, r->type == REDIS_REPLY_ERROR ? r->str : "?");
		freeReplyObject(r);
	}
}
END_TEST

START_TEST(test_new_scripts_embedded_and_compile)
{
	static const char *const names[] = {
		"fixed_window",	    "fixed_window_repair",   "fixed_window_state", "sliding_counter",
		"sliding_counter_prune", "sliding_counter_state", "token_bucket",	  "token_bucket_reclaim",
		"token_bucket_state", "sliding_log_prune",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct script_src *s = script_find(names[i]);
		int state = strstr(names[i], "_state") != NULL;
		redisReply *r;

		ck_assert_msg(s != NULL, "lua/%s.lua not embedded", names[i]);
		ck_assert_uint_eq(strlen(s->body), s->len);
		/* Admin reads declare no-writes; the others must not (they write). */
		ck_assert_int_eq(strncmp(s->body, "#!lua flags=no-writes\n", 22) == 0, state);
		r = test_cmd(c, "SCRIPT LOAD %s", s->body);
		ck_assert_msg(r->type == REDIS_REPLY_STRING && r->len == 40, "%s does not load: %s", s->name,
			      r->type == REDIS_REPLY_ERROR ? r->str : "?");
		freeReplyObject(r);
	}
	/* Every embedded script compiles, whatever the daemon calls. */
	for (size_t i = 0; i < script_srcs_len; i++) {
		redisReply *r = test_cmd(c, "SCRIPT LOAD %s", script_srcs[i].body);

		ck_assert_msg(r->type == REDIS_REPLY_STRING, "%s does not load", script_srcs[i].name);
		freeReplyObject(r);
	}
}
END_TEST

/* ---- EVALSHA and NOSCRIPT ---------------------------------------------------- */

START_TEST(test_evalsha_and_noscript)
{
	const struct script_src *s = script_get(SCRIPT_LEAKY_BUCKET);
	redisReply *load = test_cmd(c, "SCRIPT LOAD %s", s->body);
	char sha[41];

	ck_assert_int_eq(load->type, REDIS_REPLY_STRING);
	ck_assert_uint_eq(load->len, 40);
	memcpy(sha, load->str, 41);
	freeReplyObject(load);
	ck_reply(test_cmd(c, "EVALSHA %s 3 %s %s %s /sha 3 1 1 1000", sha, test_lb_key("/sha"),
			  test_lb_meta("/sha"), LB_REG),
		 1, 2, 0, 1000);
	/* Same script, same state, whichever way it is called. */
	ck_reply(lb_acquire("/sha", "3", "1", "1", "1000"), 1, 1, 0, 1000);
	/* A restart, failover or SCRIPT FLUSH empties the script cache: EVALSHA then
	 * answers NOSCRIPT and the daemon must SCRIPT LOAD again and retry. */
	freeReplyObject(test_cmd(c, "SCRIPT FLUSH"));
	ck_error(test_cmd(c, "EVALSHA %s 3 %s %s %s /sha 3 1 1 1000", sha, test_lb_key("/sha"),
			  test_lb_meta("/sha"), LB_REG),
		 "NOSCRIPT");
	ck_assert_int_eq(zcard(test_lb_key("/sha")), 2);
}
END_TEST

/* ---- state scripts are read-only -------------------------------------------- */

/* Redis 7's answer to EVAL_RO of a script that declares flags but not no-writes. */
#define RO_REFUSED "ERR Can not execute a script with write flag using *_ro command."

START_TEST(test_state_scripts_are_read_only)
{
	const char *lb_args[] = { test_lb_key("/ro"), test_lb_meta("/ro"), "5", "2", "0" };
	const char *sl_args[] = { test_sl_key("/ro"), "3", "1000", "0" };
	const char *acq_args[] = { test_lb_key("/ro"), test_lb_meta("/ro"), LB_REG, "/ro", "5", "2", "1", "0" };

	freeReplyObject(lb_acquire("/ro", "5", "2", "1", "0"));
	freeReplyObject(sl_acquire("/ro", "3", "1000", "0"));
	redisReply *r;

	/* Declared no-writes: Redis runs them with EVAL_RO, and refuses writes there. */
	r = eval_argv(SCRIPT_LEAKY_BUCKET_STATE, 1, 2, 5, lb_args);
	ck_assert_int_gt(test_elem_int(r, 4), 400);
	ck_reply(r, 1, 4, 500, 0, test_elem_int(r, 4));
	r = eval_argv(SCRIPT_SLIDING_LOG_STATE, 1, 1, 4, sl_args);
	ck_assert_int_gt(test_elem_int(r, 3), 900);
	ck_reply(r, 1, 2, 1000, test_elem_int(r, 3));
	/* The writers declare no flags (#!lua): Redis refuses them with EVAL_RO before they run. */
	ck_error(eval_argv(SCRIPT_LEAKY_BUCKET, 1, 3, 8, acq_args), RO_REFUSED);
}
END_TEST

START_TEST(test_new_state_scripts_are_read_only)
{
	const char *fw_args[] = { FW_KEY("/ro"), "3", "1000", "0" };
	const char *sc_args[] = { SC_KEY("/ro"), "3", "1000", "10", "0" };
	const char *tb_args[] = { TB_KEY("/ro"), "3", "1", "0" };
	const char *fw_acq[] = { FW_KEY("/ro"), FW_REG, "/ro", "3", "1000", "0" };
	const char *sc_acq[] = { SC_KEY("/ro"), SC_REG, "/ro", "3", "1000", "10", "0" };
	const char *tb_acq[] = { TB_KEY("/ro"), TB_REG, "/ro", "3", "1", "1", "0" };
	redisReply *r;

	freeReplyObject(fw("/ro", "3", "1000", 0));
	freeReplyObject(sc("/ro", "3", "1000", "10", 0));
	freeReplyObject(tb("/ro", "3", "1", "1", 0));
	/* Declared no-writes: Redis runs them with EVAL_RO. */
	r = eval_argv("fixed_window_state", 1, 1, 4, fw_args);
	ck_reply(r, 1, 2, 1000, test_elem_int(r, 3));
	r = eval_argv("sliding_counter_state", 1, 1, 5, sc_args);
	ck_reply(r, 1, 2, 1000, test_elem_int(r, 3));
	r = eval_argv("token_bucket_state", 1, 1, 4, tb_args);
	ck_reply(r, 1, 2, 1000, 0, test_elem_int(r, 4));
	/* and the writers are refused there, before they run. */
	ck_error(eval_argv("fixed_window", 1, 2, 6, fw_acq), RO_REFUSED);
	ck_error(eval_argv("sliding_counter", 1, 2, 7, sc_acq), RO_REFUSED);
	ck_error(eval_argv("token_bucket", 1, 2, 7, tb_acq), RO_REFUSED);
}
END_TEST

/*
 * What is embedded is the assembled file (tools/lua_assemble.c), not a source
 * of lua/: no include directive is left, a #! line can only be the first one,
 * each fragment is inlined at most once, and Redis takes it as it is.
 */
START_TEST(test_embedded_scripts_are_self_contained)
{
	ck_assert_uint_eq(script_srcs_len, SCRIPT__COUNT);
	for (size_t i = 0; i < script_srcs_len; i++) {
		const struct script_src *s = &script_srcs[i];
		const char *line = s->body;
		int lineno = 1, generated = 0;
		redisReply *r;

		for (; *line; lineno++) {
			const char *nl = strchr(line, '\n');
			size_t n = nl ? (size_t)(nl - line) : strlen(line);

			ck_assert_msg(strncmp(line, "--@", 3) != 0, "%s line %d: a directive is left: %.*s", s->name,
				      lineno, (int)n, line);
			ck_assert_msg(lineno == 1 || strncmp(line, "#!", 2) != 0, "%s line %d: #! after line 1",
				      s->name, lineno);
			if (strncmp(line, "-- Generated by tools/lua_assemble.c from lua/", 46) == 0)
				generated++;
			/* "-- ---- lib/x.lua ----" opens an inlined fragment: once each */
			if (strncmp(line, "-- ---- lib/", 12) == 0) {
				for (const char *a = strstr(line + n, "\n-- ---- lib/"); a;
				     a = strstr(a + 1, "\n-- ---- lib/"))
					ck_assert_msg(strncmp(a + 1, line, n) != 0 || (a[1 + n] != '\n' && a[1 + n] != '\0'),
						      "%s: %.*s inlined twice", s->name, (int)n, line);
			}
			line += n + (nl != NULL);
		}
		ck_assert_msg(generated == 1, "%s: not the assembled file (no \"Generated by\" line)", s->name);
		r = test_cmd(c, "SCRIPT LOAD %s", s->body);
		ck_assert_msg(r->type == REDIS_REPLY_STRING && r->len == 40, "%s does not load: %s", s->name,
			      r->type == REDIS_REPLY_ERROR ? r->str : "?");
		freeReplyObject(r);
	}
}
END_TEST

static Suite *embedded_scripts_suite(void)
{
	Suite *s = suite_create("embedded_scripts");
	TCase *tc;

	tc = test_tcase(s, "embedding", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_all_scripts_embedded_and_compile);
	tcase_add_test(tc, test_new_scripts_embedded_and_compile);
	tcase_add_test(tc, test_evalsha_and_noscript);
	tcase_add_test(tc, test_embedded_scripts_are_self_contained);

	tc = test_tcase(s, "state", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_state_scripts_are_read_only);
	tcase_add_test(tc, test_new_state_scripts_are_read_only);
	return s;
}

int main(void)
{
	return test_run_suite(embedded_scripts_suite());
}

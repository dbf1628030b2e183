/*
 * The scripts core/scripts.c embeds: every one is there and compiles, the
 * admin's state scripts are declared no-writes (Redis runs them with EVAL_RO
 * and refuses the writers there), EVALSHA and NOSCRIPT.  The fixture and
 * helpers are tests/script_fixture.h's.
 */
#include "tests/script_fixture.h"

#include "core/algorithm.h"

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

/*
 * Each script's first line says what Redis may do with it at maxmemory
 * (lua/README.md, "Memory"): the five client scripts "#!lua" (refused before
 * they write), the state reads "#!lua flags=no-writes", the worker's jobs
 * (the shard jobs of sluice's own layout, the batch jobs of foreign ones) and
 * reset "#!lua flags=allow-oom".
 */
START_TEST(test_new_scripts_embedded_and_compile)
{
	static const char *const clients[] = { "leaky_bucket", "sliding_log", "sliding_counter", "fixed_window",
					       "token_bucket" };
	static const char *const jobs[] = { "leaky_bucket_drain", "sliding_log_prune", "sliding_counter_prune",
					    "fixed_window_repair", "token_bucket_reclaim" };
	char name[64];

	for (int i = 0; i < TEST_N(clients); i++) {
		const struct script_src *s;

		ck_assert_msg((s = script_find(clients[i])) != NULL, "lua/%s.lua not embedded", clients[i]);
		ck_assert_msg(strncmp(s->body, "#!lua\n", 6) == 0, "%s: not \"#!lua\"", clients[i]);
		snprintf(name, sizeof(name), "%s_state", clients[i]);
		ck_assert_msg((s = script_find(name)) != NULL, "lua/%s.lua not embedded", name);
		ck_assert_msg(strncmp(s->body, "#!lua flags=no-writes\n", 22) == 0, "%s: not no-writes", name);
		for (int shard = 0; shard < 2; shard++) {
			snprintf(name, sizeof(name), "%s%s", jobs[i], shard ? "_shard" : "");
			ck_assert_msg((s = script_find(name)) != NULL, "lua/%s.lua not embedded", name);
			ck_assert_msg(strncmp(s->body, "#!lua flags=allow-oom\n", 22) == 0, "%s: not allow-oom", name);
		}
	}
	ck_assert_msg(strncmp(script_find("reset")->body, "#!lua flags=allow-oom\n", 22) == 0, "reset: not allow-oom");
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
	const char *p = "/sha";
	const char *const params[] = { "3", "1" };
	char text[128];
	redisReply *r;

	/* As applications call it: SCRIPT LOAD, then EVALSHA by the calling contract. */
	r = test_client_call(c, TEST_EVALSHA, "leaky_bucket", p, "1", 1000, params, 2);
	ck_assert_str_eq(test_show_reply(r, text, sizeof(text)), "{1, 2, 0, 1000, \"\"}");
	freeReplyObject(r);
	/* Same script, same state, whichever way it is called. */
	r = lb_acquire(p, "3", "1", "1", "1000");
	ck_assert_str_eq(test_show_reply(r, text, sizeof(text)), "{1, 1, 0, 1000, \"\"}");
	freeReplyObject(r);
	/* A restart, failover or SCRIPT FLUSH empties the script cache: EVALSHA then
	 * answers NOSCRIPT and the daemon must SCRIPT LOAD again and retry. */
	{
		const struct script_src *s = script_get(SCRIPT_LEAKY_BUCKET);
		redisReply *load = test_cmd(c, "SCRIPT LOAD %s", s->body);
		char sha[41];

		memcpy(sha, load->str, 41);
		freeReplyObject(load);
		freeReplyObject(test_cmd(c, "SCRIPT FLUSH"));
		ck_error(test_cmd(c, "EVALSHA %s 5 %s %s %s %s %s %s 1 1000 \"\" 3 1", sha, test_lb_key(p), test_lb_meta(p),
				  test_registry("leaky_bucket", p), test_shard_key("leaky_bucket", p, "rules"),
				  test_shard_key("leaky_bucket", p, "stats"), p),
			 "NOSCRIPT");
	}
	ck_assert_int_eq(zcard(test_lb_key(p)), 2);
}
END_TEST

/* ---- state scripts are read-only -------------------------------------------- */

/* Redis 7's answer to EVAL_RO of a script that declares flags but not no-writes. */
#define RO_REFUSED "ERR Can not execute a script with write flag using *_ro command."

static int cmp_pair(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* recorded (a flat array field, value, ...) as "a=1 b=2", its pairs sorted. */
static void recorded_text(const redisReply *r, char *buf, size_t cap)
{
	char pairs[8][64];
	size_t n = 0;

	buf[0] = '\0';
	ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
	for (size_t i = 0; i + 1 < r->elements && n < 8; i += 2)
		snprintf(pairs[n++], sizeof(pairs[0]), "%s=%s", r->element[i]->str, r->element[i + 1]->str);
	qsort(pairs, n, sizeof(pairs[0]), cmp_pair);
	for (size_t i = 0; i < n; i++)
		snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", i ? " " : "", pairs[i]);
}

/*
 * Each algorithm's state read, after one client call at 0 with these
 * parameters: KEYS state, meta; ARGV "" for each parameter (the recorded
 * ones) and now 0; the reply's first three elements (count, remaining,
 * reset_ms), then after ttl_ms the recorded parameters and the rule.
 */
static const struct {
	enum algo al;
	enum algorithm alg;
	const char *a, *b, *s; /* the client's parameters (acquire()) */
	int nparams;
	long long head[3];
	const char *recorded;
} ro_cases[] = {
	{ LB, ALG_LEAKY_BUCKET, "5", "2", NULL, 2, { 1, 4, 500 }, "capacity=5 rate=2" },
	{ SL, ALG_SLIDING_LOG, "3", "1000", NULL, 2, { 1, 2, 1000 }, "limit=3 window_ms=1000" },
	{ SC, ALG_SLIDING_COUNTER, "3", "1000", "10", 3, { 1, 2, 1000 }, "limit=3 sub_windows=10 window_ms=1000" },
	{ FW, ALG_FIXED_WINDOW, "3", "1000", NULL, 2, { 1, 2, 1000 }, "limit=3 window_ms=1000" },
	{ TB, ALG_TOKEN_BUCKET, "3", "1", NULL, 2, { 1, 2, 1000 }, "capacity=3 rate=1" },
};

START_TEST(test_state_scripts_are_read_only)
{
	const struct alg_ops *ops = algorithm_get(ro_cases[_i].alg);
	const char *p = "/ro", *keys[2], *argv[6];
	const char *const params[3] = { ro_cases[_i].a, ro_cases[_i].b, ro_cases[_i].s };
	char rec[256], name[64];
	redisReply *r;
	int argc = 0;

	state_keys(ro_cases[_i].al, p, keys);
	argv[argc++] = keys[0];
	argv[argc++] = keys[1];
	for (int i = 0; i < ro_cases[_i].nparams; i++)
		argv[argc++] = "";
	argv[argc++] = "0";
	freeReplyObject(acquire(ro_cases[_i].al, p, ro_cases[_i].a, ro_cases[_i].b, ro_cases[_i].s, "1", "0"));
	/* Declared no-writes: Redis runs them with EVAL_RO. */
	r = eval_argv(ops->state_script, 1, 2, argc, argv);
	ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == ops->state_ttl_at + 3, "%s: %s",
		      script_name(ops->state_script), test_show_reply(r, rec, sizeof(rec)));
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(test_elem_int(r, (size_t)i), ro_cases[_i].head[i]);
	ck_assert_int_gt(test_elem_int(r, ops->state_ttl_at), 0);
	recorded_text(r->element[ops->state_ttl_at + 1], rec, sizeof(rec));
	ck_assert_str_eq(rec, ro_cases[_i].recorded);
	ck_assert_str_eq(r->element[ops->state_ttl_at + 2]->str, "");
	freeReplyObject(r);
	/* The writers are refused there, before they run: the client script and the jobs. */
	{
		const char *kv[12];
		int kc = 0;

		kv[kc++] = keys[0];
		kv[kc++] = keys[1];
		kv[kc++] = test_registry(ops->name, p);
		kv[kc++] = test_shard_key(ops->name, p, "rules");
		kv[kc++] = test_shard_key(ops->name, p, "stats");
		kv[kc++] = p;
		kv[kc++] = "1";
		kv[kc++] = "0";
		kv[kc++] = "";
		for (int i = 0; i < ro_cases[_i].nparams; i++)
			kv[kc++] = params[i];
		ck_error(eval_argv(ops->client_script, 1, 5, kc, kv), RO_REFUSED);
		snprintf(name, sizeof(name), "%s", script_name(ops->shard_script));
		kv[0] = test_registry(ops->name, p);
		kv[1] = "0";
		kv[2] = "500";
		ck_error(eval_argv(name, 1, 1, 3, kv), RO_REFUSED);
	}
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

/*
 * A due index (KEYS[3]) of another type refuses a client call whole, naming
 * KEYS[3], before anything is written: the registration is each script's
 * first write.  A new path (it registers) and, for the token bucket, one
 * with state (it registers on every admission).
 */
START_TEST(test_client_refuses_a_bad_due_index)
{
	const struct alg_ops *ops = algorithm_get(ro_cases[_i].alg);
	const char *const params[3] = { ro_cases[_i].a, ro_cases[_i].b, ro_cases[_i].s };
	const char *p = "/badreg";
	char *before;

	freeReplyObject(test_cmd(c, "SET %s notazset", test_registry(ops->name, p)));
	before = test_snapshot(c);
	ck_error(test_client_call(c, TEST_EVAL, ops->name, p, "1", -1, params, ro_cases[_i].nparams),
		 "ERR sluice: KEYS[3] (the shard's due index) must be a sorted set: WRONGTYPE");
	ck_snapshot_same(before);
	free(before);
	if (ro_cases[_i].al == TB) {
		/* state first (a good registry), then a bad one: still refused, nothing taken */
		freeReplyObject(test_cmd(c, "DEL %s", test_registry(ops->name, p)));
		ck_assert_int_eq(test_acquire(c, TEST_EVAL, ops->name, p, -1, params[0], params[1], NULL), 1);
		freeReplyObject(test_cmd(c, "DEL %s", test_registry(ops->name, p)));
		freeReplyObject(test_cmd(c, "SET %s notazset", test_registry(ops->name, p)));
		before = test_snapshot(c);
		ck_error(test_client_call(c, TEST_EVAL, ops->name, p, "1", -1, params, ro_cases[_i].nparams),
			 "ERR sluice: KEYS[3] (the shard's due index) must be a sorted set: WRONGTYPE");
		ck_snapshot_same(before);
		free(before);
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
	tcase_add_loop_test(tc, test_state_scripts_are_read_only, 0, TEST_N(ro_cases));
	tcase_add_loop_test(tc, test_client_refuses_a_bad_due_index, 0, TEST_N(ro_cases));
	return s;
}

int main(void)
{
	return test_run_suite(embedded_scripts_suite());
}

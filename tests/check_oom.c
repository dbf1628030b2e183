/*
 * Redis out of memory: `maxmemory` below what Redis already uses, with
 * `maxmemory-policy noeviction` (at_limit), against the harness's real
 * redis-server.  The client scripts are refused before they write anything;
 * the worker's scripts, reset and the state reads still run and free memory;
 * the rules are still read (outside MULTI, which Redis refuses then); and
 * every error that comes of it names the cause (REPLY_OOM_TEXT) in the
 * worker's last_error and the admin API's message.  State is written before
 * the limit through the client scripts at explicit times, so the counts are
 * exact.  The fixture is tests/api_fixture.h's (connection `c`, worker `w`,
 * api `api`), with the limit lifted around every test.
 */
#include <errno.h>

#include "core/rulestore.h"
#include "tests/api_fixture.h"

/* What Redis 7.0 answers a command it refuses over maxmemory. */
#define OOM_REPLY "OOM command not allowed when used memory > 'maxmemory'."

#define OOM_RULE_LB "{\"match\":\"/oom/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}"
#define OOM_RULE_SL "{\"match\":\"/log/*\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":1000}"

static void lift_limit(void)
{
	freeReplyObject(test_cmd(c, "CONFIG SET maxmemory 0"));
}

static void oom_setup(void)
{
	api_setup();
	lift_limit(); /* a test that failed at the limit left it there */
}

static void oom_teardown(void)
{
	lift_limit();
	api_teardown();
}

static long long used_memory(void)
{
	redisReply *r = test_cmd(c, "INFO memory");
	const char *p = r->type == REDIS_REPLY_STRING ? strstr(r->str, "\r\nused_memory:") : NULL;
	long long n;

	ck_assert_ptr_nonnull(p);
	n = atoll(p + strlen("\r\nused_memory:"));
	freeReplyObject(r);
	ck_assert_int_gt(n, 0);
	return n;
}

/* maxmemory at half of what Redis uses now (the data written so far and its own), nothing to evict. */
static void at_limit(void)
{
	long long half = used_memory() / 2;

	ck_assert_int_gt(half, 0);
	freeReplyObject(test_cmd(c, "CONFIG SET maxmemory-policy noeviction"));
	freeReplyObject(test_cmd(c, "CONFIG SET maxmemory %lld", half));
	/* Redis says so itself: a plain write is refused */
	ck_error(test_cmd(c, "SET sluice:probe 1"), OOM_REPLY);
}

static struct rule *rule_of(const char *name, const char *json)
{
	cJSON *o = cJSON_Parse(json);
	struct rule *r = NULL;
	struct sl_error err = { 0 };

	ck_assert_ptr_nonnull(o);
	ck_assert_msg(rule_from_json(o, name, NULL, &r, &err) == 0, "%s: %s %s", name, err.field, err.message);
	cJSON_Delete(o);
	return r;
}

/* ---- (0) the flags by role -------------------------------------------------- */

START_TEST(test_shebangs_by_role)
{
	for (size_t i = 0; i < script_srcs_len; i++) {
		const struct script_src *s = &script_srcs[i];
		size_t n = strlen(s->name);
		const char *want;

		if (n > 6 && strcmp(s->name + n - 6, "_state") == 0)
			want = "#!lua flags=no-writes\n"; /* reads: EVAL_RO, replicas, and at the limit */
		else if (strcmp(s->name, "reset") == 0 || strstr(s->name, "_drain") || strstr(s->name, "_prune") ||
			 strstr(s->name, "_repair") || strstr(s->name, "_reclaim"))
			want = "#!lua flags=allow-oom\n"; /* they free memory */
		else
			want = "#!lua\n"; /* the client scripts: refused at the limit */
		ck_assert_msg(strncmp(s->body, want, strlen(want)) == 0, "%s.lua starts with \"%.30s\", want \"%s\"",
			      s->name, s->body, want);
	}
	ck_assert_uint_eq(script_srcs_len, 16);
}
END_TEST

/* ---- (a) the client scripts are refused ------------------------------------- */

/* One call of `algorithm`'s client script for `path` as `how` sends it, at `now`, cost 1. */
static redisReply *acquire_reply(int how, const char *algorithm, const char *path, long long now)
{
	static const struct {
		const char *algorithm;
		const char *params[3];
	} params[] = {
		{ "leaky_bucket", { "10", "2", NULL } },	  { "sliding_log", { "5", "1000", NULL } },
		{ "sliding_counter", { "5", "1000", "10" } }, { "fixed_window", { "5", "1000", NULL } },
		{ "token_bucket", { "10", "2", NULL } },
	};
	for (int i = 0; i < TEST_N(params); i++)
		if (strcmp(params[i].algorithm, algorithm) == 0)
			return test_client_call(c, how, algorithm, path, "1", now, params[i].params,
						params[i].params[2] ? 3 : 2);
	ck_abort_msg("no parameters for %s", algorithm);
	return NULL;
}

static const char *const client_scripts[] = { "leaky_bucket", "sliding_log", "sliding_counter", "fixed_window",
					       "token_bucket" };

START_TEST(test_client_scripts_refused_at_oom)
{
	char *before, *after;

	/* each algorithm has a path with state, admitted before the limit */
	for (int i = 0; i < TEST_N(client_scripts); i++)
		ck_assert_int_eq(test_script_allowed(acquire_reply(TEST_EVAL, client_scripts[i], "/oom/old", 1000),
						     client_scripts[i]), 1);
	at_limit();
	before = test_snapshot(c);
	for (int i = 0; i < TEST_N(client_scripts); i++) {
		/* a known path and a new one, by EVAL and as applications call them (EVALSHA) */
		ck_error(acquire_reply(TEST_EVAL, client_scripts[i], "/oom/old", 2000), OOM_REPLY);
		ck_error(acquire_reply(TEST_EVALSHA, client_scripts[i], "/oom/old", 2000), OOM_REPLY);
		ck_error(acquire_reply(TEST_EVAL, client_scripts[i], "/oom/new", 2000), OOM_REPLY);
		ck_error(acquire_reply(TEST_EVALSHA, client_scripts[i], "/oom/new", 2000), OOM_REPLY);
	}
	/* a cost of 100000 (12 MB of entries without the shebang) is refused as well */
	ck_error(test_script(c, "leaky_bucket", 3, test_lb_key("/oom/big"), test_lb_meta("/oom/big"), LB_REG,
			     "/oom/big", "200000", "2", "100000", "3000", NULL),
		 OOM_REPLY);
	after = test_snapshot(c);
	ck_assert_str_eq(after, before); /* nothing was written */
	free(before);
	free(after);
	/* once the limit is lifted the same call is admitted again */
	lift_limit();
	ck_assert_int_eq(test_script_allowed(acquire_reply(TEST_EVALSHA, "leaky_bucket", "/oom/old", 2000),
					     "leaky_bucket"), 1);
}
END_TEST

/* ---- (b) the worker's scripts, reset and the reads still run ------------------- */

START_TEST(test_drain_runs_at_oom)
{
	/* 6 entries at t = 1000 ms into a bucket of capacity 10 leaking 2 per second */
	for (int i = 0; i < 6; i++)
		lb_admit("/oom/d", 10, "2", 1000);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/oom/d")), 6);
	at_limit();
	/* at 3000 ms: 2 s x 2/s = 4 leak; reply {drained, emptied, buckets, skipped} */
	ck_reply(test_script(c, "leaky_bucket_drain", 3, LB_REG, test_lb_key("/oom/d"), test_lb_meta("/oom/d"),
			     "3000", "/oom/d", "2", NULL),
		 4, 0, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/oom/d")), 2);
	/* the same instant again removes nothing */
	ck_reply(test_script(c, "leaky_bucket_drain", 3, LB_REG, test_lb_key("/oom/d"), test_lb_meta("/oom/d"),
			     "3000", "/oom/d", "2", NULL),
		 0, 0, 1, 0);
	/* at 4000 ms the last 2 go: the bucket and its registry member are freed; the meta
	 * stays SKEW_MS as the bucket's time mark (written at the limit too) */
	ck_reply(test_script(c, "leaky_bucket_drain", 3, LB_REG, test_lb_key("/oom/d"), test_lb_meta("/oom/d"),
			     "4000", "/oom/d", "2", NULL),
		 2, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_lb_key("/oom/d")), 0);
	test_check_cmd(__FILE__, __LINE__, c, "{\"4000\", \"0\"}", "HMGET %s last carry", test_lb_meta("/oom/d"));
	ck_assert_int_eq(test_cmd_int(c, "SISMEMBER %s /oom/d", LB_REG), 0);
	/* still over the limit: a client call stays refused */
	ck_error(acquire_reply(TEST_EVAL, "leaky_bucket", "/oom/d", 4000), OOM_REPLY);
}
END_TEST

START_TEST(test_state_prune_and_reset_run_at_oom)
{
	for (int i = 0; i < 3; i++)
		lb_admit("/oom/s", 10, "2", 1000);
	sl_admit("/log/a", 5, 1000, 1000);
	sl_admit("/log/a", 5, 1000, 1500);
	at_limit();
	/* state (no-writes) with EVAL_RO: {level 3, remaining 7, next leak in 500 ms, last 1000 ms, PTTL} */
	{
		const char *argv[] = { test_lb_key("/oom/s"), test_lb_meta("/oom/s"), "10", "2", "1000" };
		long long ttl_before = test_cmd_int(c, "PTTL %s", test_lb_key("/oom/s")), ttl_after;
		redisReply *r = test_script_argv(c, TEST_EVAL_RO, "leaky_bucket_state", 2, 5, argv, NULL);

		/* the reply's ttl_ms is the bucket's PTTL, read between the two around it */
		ttl_after = test_cmd_int(c, "PTTL %s", test_lb_key("/oom/s"));
		ck_assert_int_gt(ttl_after, 0);
		ck_assert_int_le(test_elem_int(r, 4), ttl_before);
		ck_assert_int_ge(test_elem_int(r, 4), ttl_after);
		ck_reply(r, 3, 7, 500, 1000, test_elem_int(r, 4));
	}
	/* prune as of 2200 ms (Redis at 12200, less the 10 s skew horizon): the entry of
	 * 1000 ms left the 1000 ms window, the one of 1500 ms stays */
	ck_reply(test_script(c, "sliding_log_prune", 2, SL_REG, test_sl_key("/log/a"), "12200", "/log/a", "1000", NULL),
		 1, 0, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_sl_key("/log/a")), 1);
	/* reset deletes the bucket: {registries the path left, {key, entries}, {key, entries}} */
	{
		redisReply *r = test_script(c, "reset", 3, LB_REG, test_lb_key("/oom/s"), test_lb_meta("/oom/s"), "1",
					    "/oom/s", NULL);
		char text[256];

		ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 3, "reset: %s",
			      test_show_reply(r, text, sizeof(text)));
		ck_assert_int_eq(test_elem_int(r, 0), 1);
		ck_assert_str_eq(test_show_reply(r->element[1], text, sizeof(text)), "{\"sluice:{/oom/s}:leaky_bucket\", 3}");
		ck_assert_str_eq(test_show_reply(r->element[2], text, sizeof(text)),
				 "{\"sluice:{/oom/s}:leaky_bucket:meta\", 3}");
		freeReplyObject(r);
	}
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s", test_lb_key("/oom/s"), test_lb_meta("/oom/s")), 0);
}
END_TEST

/* ---- (c) the rules are read at the limit ---------------------------------------- */

START_TEST(test_rules_load_at_oom)
{
	struct rconn *rc = rconn_new(&target, OBJECTS_TIMEOUT_MS);
	struct rule *lb = rule_of("lb", OOM_RULE_LB), *sl = rule_of("sl", OOM_RULE_SL);
	struct ruleset rs = { 0 };
	const struct rule *got;
	size_t invalid = 99;
	int changed = 0;

	ck_assert_ptr_nonnull(rc);
	ck_assert_int_eq(rulestore_put(rc, PFX, lb, NULL, NULL), 0);
	ck_assert_int_eq(rulestore_put(rc, PFX, sl, NULL, NULL), 0);
	at_limit();
	/* a transaction is what Redis refuses: every command queued after MULTI, then EXEC */
	{
		redisReply *r;

		freeReplyObject(test_cmd(c, "MULTI"));
		ck_error(test_cmd(c, "MGET %s sluice:rules:epoch", RULES_VER), OOM_REPLY);
		ck_error(test_cmd(c, "HGETALL %s", RULES_HASH), OOM_REPLY);
		r = test_cmd(c, "EXEC");
		ck_error(r, "EXECABORT");
	}
	/* the daemon's load, on a new connection, as at start */
	ck_assert_int_eq(rulestore_refresh(rc, PFX, &rs, 0, &changed, &invalid), 0);
	ck_assert_int_eq(changed, 1);
	ck_assert_uint_eq(invalid, 0);
	ck_assert_int_eq(rs.loaded, 1);
	ck_assert_uint_eq(rs.version, 2);
	ck_assert_uint_eq(rs.n, 2);
	ck_assert_ptr_nonnull(got = ruleset_get(&rs, "lb"));
	ck_assert_str_eq(got->match, "/oom/*");
	ck_assert_int_eq(got->algorithm, ALG_LEAKY_BUCKET);
	ck_assert_int_eq(got->capacity, 10);
	ck_assert(got->rate == 2.0);
	ck_assert_ptr_nonnull(got = ruleset_get(&rs, "sl"));
	ck_assert_int_eq(got->limit, 5);
	ck_assert_int_eq(got->window_ms, 1000);
	ck_assert_ptr_eq(ruleset_match(&rs, "/oom/x", 6), ruleset_get(&rs, "lb"));
	/* nothing changed: the next refresh keeps them */
	ck_assert_int_eq(rulestore_refresh(rc, PFX, &rs, 0, &changed, NULL), 0);
	ck_assert_int_eq(changed, 0);
	/* forced: read again all the same */
	ck_assert_int_eq(rulestore_refresh(rc, PFX, &rs, 1, &changed, NULL), 0);
	ck_assert_int_eq(changed, 1);
	ck_assert_uint_eq(rs.n, 2);
	/* a store that has its version and epoch needs no write to be marked */
	ck_assert_int_eq(rulestore_mark(rc, PFX), 0);
	ruleset_clear(&rs);
	rule_free(lb);
	rule_free(sl);
	rconn_free(rc);
}
END_TEST

START_TEST(test_rule_writes_at_oom_name_it)
{
	struct rconn *rc = rconn_new(&target, OBJECTS_TIMEOUT_MS);
	struct rule *sl = rule_of("sl", OOM_RULE_SL);
	char before[512], after[512];
	int deleted = -1;

	ck_assert_ptr_nonnull(rc);
	put_ok("api", API_BODY);
	at_limit();
	rules_snapshot(before, sizeof(before));
	/* the store refuses the changes, and says why */
	ck_assert_int_eq(rulestore_put(rc, PFX, sl, NULL, NULL), -ENOSPC);
	ck_assert_int_eq(rulestore_delete(rc, PFX, "api", &deleted), -ENOSPC);
	ck_assert_int_eq(deleted, -1);
	ck_assert_str_eq(rconn_strerror(rc, -ENOSPC), "Redis is out of memory (maxmemory)");
	/* the admin API: 503, and the message names the cause */
	put("/v1/rules/sl", OOM_RULE_SL);
	ck_err(503, "redis_unavailable", NULL);
	ck_assert_str_eq(jstr("error.message"),
			 "Redis is out of memory (maxmemory): it refuses writes until memory is freed or maxmemory is raised");
	call("DELETE", "/v1/rules/api", NULL);
	ck_err(503, "redis_unavailable", NULL);
	ck_assert_str_eq(jstr("error.message"),
			 "Redis is out of memory (maxmemory): it refuses writes until memory is freed or maxmemory is raised");
	rules_snapshot(after, sizeof(after));
	ck_assert_str_eq(after, before);
	/* the reads answer */
	get("/v1/rules/api");
	ck_res(200, API_ECHO);
	/* a store whose version went missing cannot be marked now, and says why */
	ck_assert_int_eq(test_cmd_int(c, "DEL %s", RULES_VER), 1);
	ck_assert_int_eq(rulestore_mark(rc, PFX), -ENOSPC);
	lift_limit();
	ck_assert_int_eq(rulestore_mark(rc, PFX), 0);
	ck_assert_int_eq(rules_version(), 1);
	rule_free(sl);
	rconn_free(rc);
}
END_TEST

/* ---- (d) the worker at the limit ------------------------------------------------ */

START_TEST(test_worker_drains_at_oom)
{
	struct worker_result r;
	struct worker_status st;

	put_ok("lb", OOM_RULE_LB);
	put_ok("sl", OOM_RULE_SL);
	for (int i = 0; i < 6; i++)
		lb_admit("/oom/w", 10, "2", 1000);
	sl_admit("/log/w", 5, 1000, 1000);
	at_limit();
	/* a new worker: its connection, script loads and rules load all happen at the limit */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 2500, &r), 0);
	ck_assert_uint_eq(r.entries, 3); /* 1.5 s x 2/s */
	ck_assert_uint_eq(r.emptied, 0);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 12500, &r), 0);
	ck_assert_uint_eq(r.entries, 1); /* the log's one entry left its window (as of 12500 - the 10 s horizon) */
	ck_assert_uint_eq(r.emptied, 1);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/oom/w")), 3);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_sl_key("/log/w")), 0);
	worker_status(w, &st);
	ck_assert_uint_eq(st.rules, 2);
	ck_assert_uint_eq(st.job[WORKER_DRAIN].errors, 0);
	ck_assert_str_eq(st.job[WORKER_DRAIN].last_error, "");
	ck_assert_str_eq(st.job[WORKER_PRUNE].last_error, "");
}
END_TEST

/*
 * With the flags above no command the worker sends is refused at the limit,
 * so the worker's error text for one is checked on the reply itself: a real
 * OOM reply of this server is told from every other error reply.
 */
START_TEST(test_worker_error_names_oom)
{
	redisReply *oom, *other;

	at_limit();
	oom = test_cmd(c, "SET sluice:oom-probe %s", "x");
	ck_assert_int_eq(oom->type, REDIS_REPLY_ERROR);
	ck_assert_int_eq(reply_is_oom(oom), 1);
	lift_limit();
	freeReplyObject(test_cmd(c, "SET sluice:oom-probe x"));
	other = test_cmd(c, "LPUSH sluice:oom-probe x"); /* WRONGTYPE */
	ck_assert_int_eq(other->type, REDIS_REPLY_ERROR);
	ck_assert_int_eq(reply_is_oom(other), 0);
	ck_assert_int_eq(reply_is_oom(NULL), 0);
	freeReplyObject(oom);
	freeReplyObject(other);
}
END_TEST

static Suite *oom_suite(void)
{
	Suite *s = suite_create("oom");
	TCase *tc;

	tc = test_tcase(s, "scripts", oom_setup, oom_teardown, 60);
	tcase_add_test(tc, test_shebangs_by_role);
	tcase_add_test(tc, test_client_scripts_refused_at_oom);
	tcase_add_test(tc, test_drain_runs_at_oom);
	tcase_add_test(tc, test_state_prune_and_reset_run_at_oom);
	tc = test_tcase(s, "rules", oom_setup, oom_teardown, 60);
	tcase_add_test(tc, test_rules_load_at_oom);
	tcase_add_test(tc, test_rule_writes_at_oom_name_it);
	tc = test_tcase(s, "worker", oom_setup, oom_teardown, 60);
	tcase_add_test(tc, test_worker_drains_at_oom);
	tcase_add_test(tc, test_worker_error_names_oom);
	return s;
}

int main(void)
{
	return test_run_suite(oom_suite());
}

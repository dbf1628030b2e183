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

#include "core/reset.h"
#include "core/rulestore.h"
#include "tests/api_fixture.h"
/* the skew horizon (ms): the leaky bucket's drain runs that far behind the time it is given */
#define S test_skew_ms()

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

		if ((n > 6 && strcmp(s->name + n - 6, "_state") == 0) || strcmp(s->name, "rulestore_read") == 0)
			want = "#!lua flags=no-writes\n"; /* reads: EVAL_RO, replicas, and at the limit */
		else if (strcmp(s->name, "reset") == 0 || strstr(s->name, "_drain") || strstr(s->name, "_prune") ||
			 strstr(s->name, "_repair") || strstr(s->name, "_reclaim"))
			want = "#!lua flags=allow-oom\n"; /* they free memory */
		else if (strcmp(s->name, "lease") == 0 || strcmp(s->name, "daemons") == 0)
			want = "#!lua flags=allow-oom\n"; /* the daemons that free it must keep their shards */
		else
			want = "#!lua\n"; /* the client scripts and the rule store's writes: refused at the limit */
		ck_assert_msg(strncmp(s->body, want, strlen(want)) == 0, "%s.lua starts with \"%.30s\", want \"%s\"",
			      s->name, s->body, want);
	}
	/* 5 client scripts, 5 state reads, 5 batched jobs (foreign layouts), 5 shard jobs, reset,
	 * the rule store's compare-and-set and read, the lease and the heartbeat; Redisson's
	 * RRateLimiter's state read and reclaim */
	ck_assert_uint_eq(script_srcs_len, 27);
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
	ck_error(test_client_call(c, TEST_EVALSHA, "leaky_bucket", "/oom/big", "100000", 3000,
				  (const char *const[]){ "200000", "2" }, 2),
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

/* The drain of one shard's due index, sluice's own layout (lua/leaky_bucket_drain_shard.lua), at `now`. */
static redisReply *drain_shard(const char *path, long long now)
{
	return test_script(c, "leaky_bucket_drain_shard", 1, test_registry("leaky_bucket", path), test_num(now), "500",
			   NULL);
}

START_TEST(test_drain_runs_at_oom)
{
	/* 6 entries at t = 1000 ms into a bucket of capacity 10 leaking 2 per second: due at 1500 */
	for (int i = 0; i < 6; i++)
		lb_admit("/oom/d", 10, "2", 1000);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/oom/d")), 6);
	at_limit();
	/* the drain leaks at its horizon, SKEW_MS behind the time it runs at (S): at 3000 ms
	 * 2 s x 2/s = 4 leak; reply {drained, removed, visited, skipped, next_due, backlog} */
	ck_reply(drain_shard("/oom/d", 3000 + S), 4, 0, 1, 0, 3500 + S, 0);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/oom/d")), 2);
	/* the same instant again: nothing due, nothing removed */
	ck_reply(drain_shard("/oom/d", 3000 + S), 0, 0, 0, 0, 3500 + S, 0);
	/* at 4500 ms 3 are due and the last 2 go: the bucket, its meta and its registry member are freed */
	ck_reply(drain_shard("/oom/d", 4500 + S), 2, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s", test_lb_key("/oom/d"), test_lb_meta("/oom/d")), 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_registry("leaky_bucket", "/oom/d")), 0);
	/* still over the limit: a client call stays refused */
	ck_error(acquire_reply(TEST_EVAL, "leaky_bucket", "/oom/d", 4500), OOM_REPLY);
}
END_TEST

/* A foreign layout's batched drain (lua/leaky_bucket_drain.lua: keys given, registry a set) runs too. */
START_TEST(test_foreign_drain_runs_at_oom)
{
	static const char *const key = "LeakyBucket:/oom/f", *meta = "sluice:{x}:seed_meta:LeakyBucket:/oom/f";

	for (int i = 0; i < 6; i++)
		freeReplyObject(test_cmd(c, "ZADD %s %d %d", key, 1000 + i, 1000 + i));
	freeReplyObject(test_cmd(c, "SADD LeakyBucket::pathSet /oom/f"));
	freeReplyObject(test_cmd(c, "HSET %s last 1000 carry 0", meta));
	at_limit();
	/* reply {drained, emptied, buckets, skipped} */
	ck_reply(test_script(c, "leaky_bucket_drain", 3, "LeakyBucket::pathSet", key, meta, "3000", "/oom/f", "2", NULL),
		 4, 0, 1, 0);
	ck_reply(test_script(c, "leaky_bucket_drain", 3, "LeakyBucket::pathSet", key, meta, "3000", "/oom/f", "2", NULL),
		 0, 0, 1, 0);
	ck_reply(test_script(c, "leaky_bucket_drain", 3, "LeakyBucket::pathSet", key, meta, "4500", "/oom/f", "2", NULL),
		 2, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", key), 0);
	ck_assert_int_eq(test_cmd_int(c, "SISMEMBER LeakyBucket::pathSet /oom/f"), 0);
}
END_TEST

/*
 * The state read (no-writes), a sliding log's prune (allow-oom) and a reset
 * run at the limit.  By the contract (DESIGN.md, "Fixed decisions"): the
 * state script takes KEYS state, meta and ARGV capacity, rate, now, and adds
 * the recorded parameters and rule to its reply; the shard job's reply is
 * lua/lib/due.lua's.
 */
START_TEST(test_state_prune_and_reset_run_at_oom)
{
	cJSON *out = NULL;

	for (int i = 0; i < 3; i++)
		lb_admit("/oom/s", 10, "2", 1000);
	sl_admit("/log/a", 5, 1000, 1000);
	sl_admit("/log/a", 5, 1000, 1500);
	at_limit();
	/* state with EVAL_RO: {level 3, remaining 7, next leak in 500 ms, last 1000 ms, PTTL, recorded, rule} */
	{
		const char *argv[] = { test_lb_key("/oom/s"), test_lb_meta("/oom/s"), "", "", "1000" };
		long long ttl_before = test_cmd_int(c, "PTTL %s", test_lb_key("/oom/s")), ttl_after;
		redisReply *r = test_script_argv(c, TEST_EVAL_RO, "leaky_bucket_state", 2, 5, argv, NULL);
		char text[256];

		/* the reply's ttl_ms is the bucket's PTTL, read between the two around it */
		ttl_after = test_cmd_int(c, "PTTL %s", test_lb_key("/oom/s"));
		ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 7, "state: %s",
			      test_show_reply(r, text, sizeof(text)));
		ck_assert_int_gt(ttl_after, 0);
		ck_assert_int_eq(test_elem_int(r, 0), 3);
		ck_assert_int_eq(test_elem_int(r, 1), 7);
		ck_assert_int_eq(test_elem_int(r, 2), 500);
		ck_assert_int_eq(test_elem_int(r, 3), 1000);
		ck_assert_int_le(test_elem_int(r, 4), ttl_before);
		ck_assert_int_ge(test_elem_int(r, 4), ttl_after);
		ck_assert_str_eq(test_show_reply(r->element[5], text, sizeof(text)), "{\"capacity\", \"10\", \"rate\", \"2\"}");
		ck_assert_str_eq(test_show_reply(r->element[6], text, sizeof(text)), "\"\"");
		freeReplyObject(r);
	}
	/* the log's prune at 12200 ms (Redis at 12200, less the 10 s skew horizon: 2200): the entry of
	 * 1000 ms left the 1000 ms window, the one of 1500 ms stays, due when it leaves every client's
	 * window (1500 + 1000 + 10000) */
	ck_reply(test_script(c, "sliding_log_prune_shard", 1, test_registry("sliding_log", "/log/a"), "12200", "500",
			     NULL),
		 1, 0, 1, 0, 12500, 0);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_sl_key("/log/a")), 1);
	/* reset deletes the bucket, its meta and its registry member */
	{
		struct rconn *rc = rconn_new(&target, OBJECTS_TIMEOUT_MS);

		ck_assert_ptr_nonnull(rc);
		ck_assert_int_eq(reset_path(rc, layouts, nlayouts, "/oom/s", 6, &out), 0);
		cJSON_Delete(out);
		rconn_free(rc);
	}
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s", test_lb_key("/oom/s"), test_lb_meta("/oom/s")), 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_registry("leaky_bucket", "/oom/s")), 0);
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

/*
 * A change whose version bump was lost (an HSET by hand, made before the
 * limit), found at the limit by the digest check: the bump Redis refuses,
 * and the daemon reloads all the same, at the version it had; the next check
 * finds the digest agreeing.  Once the limit is lifted the next change bumps
 * the version as usual.
 */
START_TEST(test_lost_bump_found_at_oom)
{
	struct rconn *rc = rconn_new(&target, OBJECTS_TIMEOUT_MS);
	struct rule *lb = rule_of("lb", OOM_RULE_LB), *sl = rule_of("sl", OOM_RULE_SL);
	struct ruleset rs = { 0 };
	int changed = -1;

	ck_assert_ptr_nonnull(rc);
	ck_assert_int_eq(rulestore_put(rc, PFX, lb, NULL, NULL), 0);
	ck_assert_int_eq(rulestore_refresh(rc, PFX, &rs, 0, &changed, NULL), 0);
	ck_assert_int_eq(ruleset_get(&rs, "lb")->capacity, 10);
	freeReplyObject(test_cmd(c, "HSET %s lb {\"name\":\"lb\",\"match\":\"/oom/*\",\"algorithm\":\"leaky_bucket\","
				    "\"capacity\":20,\"rate\":2}", RULES_HASH));
	at_limit();
	rs.digest_due_ms = 0;
	ck_assert_int_eq(rulestore_refresh(rc, PFX, &rs, 0, &changed, NULL), 0);
	ck_assert_int_eq(changed, 1);
	ck_assert_int_eq(ruleset_get(&rs, "lb")->capacity, 20);
	ck_assert_uint_eq(rs.version, 1);
	ck_assert_int_eq(rules_version(), 1);
	rs.digest_due_ms = 0;
	ck_assert_int_eq(rulestore_refresh(rc, PFX, &rs, 0, &changed, NULL), 0);
	ck_assert_int_eq(changed, 0);
	lift_limit();
	ck_assert_int_eq(rulestore_put(rc, PFX, sl, NULL, NULL), 0);
	ck_assert_int_eq(rulestore_refresh(rc, PFX, &rs, 0, &changed, NULL), 0);
	ck_assert_int_eq(changed, 1);
	ck_assert_uint_eq(rs.version, 2);
	ck_assert_uint_eq(rs.n, 2);
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
	ck_res(200, API_VIEW);
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
	for (int i = 0; i < 6; i++)
		lb_admit("/oom/w", 10, "2", 1000);
	lb_admit("/oom/e", 10, "2", 1000);
	at_limit();
	/* a new worker: its connection, script loads and rules load all happen at the limit */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 2500 + S, &r), 0);
	ck_assert_uint_eq(r.entries, 4); /* 1.5 s x 2/s at the horizon: 3 of /oom/w, and /oom/e's one */
	ck_assert_uint_eq(r.emptied, 1);
	ck_assert_uint_eq(r.batches, 1024);
	ck_assert_int_eq(test_cmd_int(c, "ZCARD %s", test_lb_key("/oom/w")), 3);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_lb_key("/oom/e")), 0);
	/* the prune job runs too (each shard's four jobs, nothing registered) */
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 12500, &r), 0);
	ck_assert_uint_eq(r.batches, 4096);
	worker_status(w, &st);
	ck_assert_uint_eq(st.rules, 1);
	ck_assert_uint_eq(st.job[WORKER_DRAIN].errors, 0);
	ck_assert_str_eq(st.job[WORKER_DRAIN].last_error, "");
	ck_assert_str_eq(st.job[WORKER_PRUNE].last_error, "");
}
END_TEST

/* The prune of a sliding log by the worker at the limit (contract: lua/lib/due.lua, DESIGN.md). */
START_TEST(test_worker_prunes_at_oom)
{
	struct worker_result r;

	sl_admit("/log/w", 5, 1000, 1000);
	at_limit();
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, 12500, &r), 0);
	ck_assert_uint_eq(r.entries, 1); /* the log's one entry left its window (as of 12500 - the 10 s horizon) */
	ck_assert_uint_eq(r.emptied, 1);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_sl_key("/log/w")), 0);
}
END_TEST

/*
 * A daemon's worker that starts at the limit cannot write the skew copies
 * it lacks: its status says so and names the cause, it drains all the same
 * (the step does not fail), and once memory is freed the next try (250
 * ms later) writes them.  Copies already there need no write.
 */
START_TEST(test_skew_copies_at_oom)
{
	struct worker_config wc = { .redis = &target, .timeout_ms = OBJECTS_TIMEOUT_MS, .prefix = PFX,
				    .batch_size = 100, .layouts = layouts, .nlayouts = nlayouts,
				    .write_skew = 1, .max_clock_skew_ms = 10000 };
	struct worker *wk = worker_new(&wc), *again;
	struct worker_result r;
	struct worker_status st;

	ck_assert_ptr_nonnull(wk);
	for (int i = 0; i < 6; i++)
		lb_admit("/oom/k", 10, "2", 1000);
	at_limit();
	ck_assert_int_eq(worker_step(wk, WORKER_DRAIN, INT64_MAX, 2500 + S, &r), 0);
	ck_assert_uint_eq(r.entries, 3);
	worker_status(wk, &st);
	ck_assert_uint_eq(st.skew_pending, 1024);
	ck_assert_uint_eq(st.skew_written, 0);
	ck_assert_msg(strstr(st.skew_error, "rules copy: " REPLY_OOM_TEXT), "%s", st.skew_error);
	ck_assert_str_eq(st.job[WORKER_DRAIN].last_error, "");
	lift_limit();
	ck_assert_int_eq(worker_step(wk, WORKER_DRAIN, INT64_MAX, 2700 + S, &r), 0); /* within 250 ms: not yet */
	worker_status(wk, &st);
	ck_assert_uint_eq(st.skew_pending, 1024);
	ck_assert_int_eq(worker_step(wk, WORKER_DRAIN, INT64_MAX, 3500 + S, &r), 0);
	worker_status(wk, &st);
	ck_assert_uint_eq(st.skew_pending, 0);
	ck_assert_uint_eq(st.skew_written, 1024);
	ck_assert_str_eq(st.skew_error, "");
	/* a daemon that starts at the limit with the copies in place writes nothing and reports nothing */
	at_limit();
	again = worker_new(&wc);
	ck_assert_ptr_nonnull(again);
	ck_assert_int_eq(worker_step(again, WORKER_DRAIN, INT64_MAX, 4000, &r), 0);
	worker_status(again, &st);
	ck_assert_uint_eq(st.skew_pending, 0);
	ck_assert_uint_eq(st.skew_written, 0);
	ck_assert_str_eq(st.skew_error, "");
	worker_free(again);
	worker_free(wk);
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
	tcase_add_test(tc, test_foreign_drain_runs_at_oom);
	tcase_add_test(tc, test_state_prune_and_reset_run_at_oom);
	tc = test_tcase(s, "rules", oom_setup, oom_teardown, 60);
	tcase_add_test(tc, test_rules_load_at_oom);
	tcase_add_test(tc, test_rule_writes_at_oom_name_it);
	tcase_add_test(tc, test_lost_bump_found_at_oom);
	tc = test_tcase(s, "worker", oom_setup, oom_teardown, 60);
	tcase_add_test(tc, test_worker_drains_at_oom);
	tcase_add_test(tc, test_worker_prunes_at_oom);
	tcase_add_test(tc, test_skew_copies_at_oom);
	tcase_add_test(tc, test_worker_error_names_oom);
	return s;
}

int main(void)
{
	return test_run_suite(oom_suite());
}

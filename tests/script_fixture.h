#ifndef SLUICE_TEST_SCRIPT_FIXTURE_H
#define SLUICE_TEST_SCRIPT_FIXTURE_H
/*
 * The fixture of the script suites (check_leaky_bucket.c, check_sliding_log.c,
 * check_sliding_counter.c, check_fixed_window.c, check_token_bucket.c,
 * check_reset_script.c, check_layouts_interop.c, check_embedded_scripts.c):
 * the Lua scripts of lua/ run against the harness's private redis-server with
 * the text the binary embeds.  Time is virtual: every call passes an explicit
 * `now` in ms, so the expected values are exact; a few tests use Redis TIME
 * (or wait for a real expiry) and allow for the test's own duration.
 *
 * Header-only and static: the Makefile links only tests/harness.o into each
 * suite, so a fixture shared by a family of suites is compiled into each of
 * them, written once here.  A suite uses setup/teardown as its checked
 * fixture (test_tcase), and `c`, the test's connection.
 */
#include "core/scripts.h"
#include "tests/harness.h"

#include <check.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FW_REG "sluice:registry:fixed_window"
#define SC_REG "sluice:registry:sliding_counter"
#define TB_REG "sluice:registry:token_bucket"
#define SL_REG "sluice:registry:sliding_log"
#define LB_REG "sluice:registry:leaky_bucket"
/* A TTL no script sets: put on a key before a rejected call, it must still be
 * there afterwards (a rejected request extends no TTL). */
#define MARKER_TTL 987654LL
/* Real ms a test may take between a call and its PTTL check (asan is slow). */
#define SLACK_MS 500

/* Every definition below is static; a suite need not use them all. */
#define SCRIPT_FIXTURE static __attribute__((unused))

/* The running test's connection (flushed before each test). */
static redisContext *c;

SCRIPT_FIXTURE void setup(void)
{
	c = test_srv_connect_flushed();
}

SCRIPT_FIXTURE void teardown(void)
{
	redisFree(c);
	c = NULL;
}

#define ck_cmd(want, ...) test_check_cmd(__FILE__, __LINE__, c, (want), __VA_ARGS__)

/* ---- calls by script name or enum script_id ---------------------------------- */

SCRIPT_FIXTURE const char *script_name_of_str(const char *name)
{
	return name;
}
/* The name of a script given by name ("fixed_window") or by id (SCRIPT_FIXED_WINDOW). */
#define SCRIPT_NAME(s) _Generic((s), char *: script_name_of_str, const char *: script_name_of_str, default: script_name)(s)

/* Decimal text of v (test_num: one of 32 rotating buffers, enough for one call's ARGV). */
SCRIPT_FIXTURE const char *num(long long v)
{
	return test_num(v);
}

/* EVAL (or EVAL_RO when `ro`) script `s` (name or id) with argv[0..argc): nkeys KEYS, then ARGV. */
#define eval_argv(s, ro, nkeys, argc, argv) \
	test_script_argv(c, (ro) ? TEST_EVAL_RO : TEST_EVAL, SCRIPT_NAME(s), (nkeys), (argc), (argv), NULL)
/* EVAL script `s` (name or id): nkeys KEYS then ARGV, as strings up to a NULL (so a
 * NULL right after the last given argument leaves the optional ones absent). */
#define ev(s, nkeys, ...) test_script(c, SCRIPT_NAME(s), (nkeys), __VA_ARGS__)

/* sluice's key of `kind` for `path`. */
#define FW_KEY(p) test_key((p), "fixed_window")
#define SC_KEY(p) test_key((p), "sliding_counter")
#define TB_KEY(p) test_key((p), "token_bucket")

/* PTTL of key is in (want - SLACK_MS, want]: set from a call's `now` a moment ago. */
SCRIPT_FIXTURE void check_pttl(const char *file, int line, const char *key, long long want)
{
	long long ttl = test_cmd_int(c, "PTTL %s", key);

	ck_assert_msg(ttl <= want && ttl > want - SLACK_MS, "%s:%d: PTTL %s is %lld, want %lld (minus the test's time)",
		      file, line, key, ttl, want);
}
#define ck_pttl(key, want) check_pttl(__FILE__, __LINE__, (key), (want))

/* The keyspace equals the snapshot `before` (test_snapshot): nothing was written. */
#define ck_snapshot_same(before)                                                            \
	do {                                                                                \
		char *after_ = test_snapshot(c);                                            \
		ck_assert_msg(strcmp((before), after_) == 0, "keyspace changed:\n%s---\n%s", \
			      (before), after_);                                            \
		free(after_);                                                               \
	} while (0)

SCRIPT_FIXTURE long long zcard(const char *key)
{
	return test_cmd_int(c, "ZCARD %s", key);
}

SCRIPT_FIXTURE int in_set(const char *set, const char *member)
{
	return (int)test_cmd_int(c, "SISMEMBER %s %s", set, member);
}

/* ---- leaky bucket and sliding log, with string arguments ----------------------- */

SCRIPT_FIXTURE redisReply *lb_acquire(const char *path, const char *cap, const char *rate, const char *n,
				      const char *now)
{
	return ev(SCRIPT_LEAKY_BUCKET, 3, test_lb_key(path), test_lb_meta(path), LB_REG, path, cap, rate, n,
		  now, NULL);
}

SCRIPT_FIXTURE redisReply *lb_drain1(const char *path, const char *rate, long long now)
{
	return ev(SCRIPT_LEAKY_BUCKET_DRAIN, 3, LB_REG, test_lb_key(path), test_lb_meta(path), num(now),
		  path, rate, NULL);
}

SCRIPT_FIXTURE redisReply *lb_state(const char *path, const char *cap, const char *rate, const char *now)
{
	return ev(SCRIPT_LEAKY_BUCKET_STATE, 2, test_lb_key(path), test_lb_meta(path), cap, rate, now, NULL);
}

SCRIPT_FIXTURE redisReply *sl_acquire(const char *path, const char *limit, const char *window,
				      const char *now)
{
	return ev(SCRIPT_SLIDING_LOG, 2, test_sl_key(path), SL_REG, path, limit, window, now, NULL);
}

SCRIPT_FIXTURE redisReply *sl_prune1(const char *path, const char *window, long long now)
{
	return ev(SCRIPT_SLIDING_LOG_PRUNE, 2, SL_REG, test_sl_key(path), num(now), path, window, NULL);
}

SCRIPT_FIXTURE redisReply *sl_state(const char *path, const char *limit, const char *window,
				    const char *now)
{
	return ev(SCRIPT_SLIDING_LOG_STATE, 1, test_sl_key(path), limit, window, now, NULL);
}

/* sliding_log_prune of one log with a score unit ("ms", "s", "us"; NULL leaves it out). */
SCRIPT_FIXTURE redisReply *prune_unit(const char *reg, const char *key, const char *path, const char *window,
				      long long now, const char *unit)
{
	return ev("sliding_log_prune", 2, reg, key, num(now), path, window, unit, NULL);
}

/* ---- the five client scripts, by algorithm -------------------------------------- */

enum algo { FW, SL, SC, TB, LB };

/*
 * One client call.  a, b, s are the rule's parameters: FW and SL (limit,
 * window_ms), SC (limit, window_ms, sub_windows), TB and LB (capacity, rate);
 * n is the cost (TB, LB; NULL leaves it out); now is ms, NULL for Redis TIME.
 */
SCRIPT_FIXTURE redisReply *acquire(enum algo al, const char *p, const char *a, const char *b, const char *s,
				   const char *n, const char *now)
{
	switch (al) {
	case FW:
		return ev("fixed_window", 2, FW_KEY(p), FW_REG, p, a, b, now, NULL);
	case SL:
		return ev("sliding_log", 2, test_sl_key(p), SL_REG, p, a, b, now, NULL);
	case SC:
		return ev("sliding_counter", 2, SC_KEY(p), SC_REG, p, a, b, s, now, NULL);
	case TB:
		return ev("token_bucket", 2, TB_KEY(p), TB_REG, p, a, b, n ? n : "", now, NULL);
	case LB:
		return ev("leaky_bucket", 3, test_lb_key(p), test_lb_meta(p), LB_REG, p, a, b, n ? n : "", now,
			  NULL);
	}
	return NULL;
}

/* The keys that hold one path's state (at most 2). */
SCRIPT_FIXTURE int state_keys(enum algo al, const char *p, const char *keys[2])
{
	switch (al) {
	case FW:
		keys[0] = FW_KEY(p);
		return 1;
	case SL:
		keys[0] = test_sl_key(p);
		return 1;
	case SC:
		keys[0] = SC_KEY(p);
		return 1;
	case TB:
		keys[0] = TB_KEY(p);
		return 1;
	case LB:
		keys[0] = test_lb_key(p);
		keys[1] = test_lb_meta(p);
		return 2;
	}
	return 0;
}

SCRIPT_FIXTURE const char *registry_of(enum algo al)
{
	static const char *const regs[] = { FW_REG, SL_REG, SC_REG, TB_REG, LB_REG };

	return regs[al];
}

SCRIPT_FIXTURE redisReply *fw(const char *p, const char *limit, const char *window, long long now)
{
	return acquire(FW, p, limit, window, NULL, NULL, num(now));
}

SCRIPT_FIXTURE redisReply *sc(const char *p, const char *limit, const char *window, const char *subs, long long now)
{
	return acquire(SC, p, limit, window, subs, NULL, num(now));
}

SCRIPT_FIXTURE redisReply *tb(const char *p, const char *cap, const char *rate, const char *n, long long now)
{
	return acquire(TB, p, cap, rate, NULL, n, num(now));
}

SCRIPT_FIXTURE redisReply *fw_repair1(const char *p, const char *window, long long now)
{
	return ev("fixed_window_repair", 2, FW_REG, FW_KEY(p), num(now), p, window, NULL);
}

SCRIPT_FIXTURE redisReply *sc_prune1(const char *p, const char *window, const char *subs, long long now)
{
	return ev("sliding_counter_prune", 2, SC_REG, SC_KEY(p), num(now), p, window, subs, NULL);
}

SCRIPT_FIXTURE redisReply *tb_reclaim1(const char *p, const char *cap, const char *rate, long long now)
{
	return ev("token_bucket_reclaim", 2, TB_REG, TB_KEY(p), num(now), p, cap, rate, NULL);
}

SCRIPT_FIXTURE redisReply *fw_state(const char *key, const char *limit, const char *window, const char *now)
{
	return ev("fixed_window_state", 1, key, limit, window, now, NULL);
}

SCRIPT_FIXTURE redisReply *sc_state(const char *p, const char *limit, const char *window, const char *subs,
				    const char *now)
{
	return ev("sliding_counter_state", 1, SC_KEY(p), limit, window, subs, now, NULL);
}

SCRIPT_FIXTURE redisReply *tb_state(const char *p, const char *cap, const char *rate, const char *now)
{
	return ev("token_bucket_state", 1, TB_KEY(p), cap, rate, now, NULL);
}

/* ---- table tests: (parameters, calls with now) -> exact replies ---------------- */

struct step {
	long long now;	   /* ms; -1 ends the table */
	long long n;	   /* cost (TB, LB); 0: left out */
	long long want[4]; /* allowed, remaining, retry_after_ms, reset_ms */
	long long ttl;	   /* when > 0: the state key's PTTL right after the call (a meta's is the suite's) */
};

struct algo_case {
	const char *name;
	enum algo algo;
	const char *a, *b, *s; /* see acquire() */
	struct step steps[40];
};

#define END { -1, 0, { 0, 0, 0, 0 }, 0 }

/* Run one table: every step's reply exact, TTLs as listed, rejections writing nothing. */
SCRIPT_FIXTURE void check_algo_case(const struct algo_case *ac)
{
	const char *p = "/table", *keys[2];
	int nk = state_keys(ac->algo, p, keys);

	for (int i = 0; ac->steps[i].now >= 0; i++) {
		const struct step *st = &ac->steps[i];
		const char *n = st->n ? num(st->n) : NULL;
		char where[256], *before = NULL;
		redisReply *r;

		snprintf(where, sizeof(where), "%s, step %d (now %lld)", ac->name, i, st->now);
		if (st->want[0] == 0) {
			/* A rejected request extends no TTL: mark the TTLs first. */
			for (int k = 0; k < nk; k++)
				freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", keys[k], MARKER_TTL));
			before = test_snapshot(c);
		}
		r = acquire(ac->algo, p, ac->a, ac->b, ac->s, n, num(st->now));
		test_check_ints(where, 0, r, st->want, 4);
		if (st->want[0] == 1) {
			ck_assert_msg(in_set(registry_of(ac->algo), p), "%s: path not registered", where);
			for (int k = 0; k < nk; k++) {
				if (st->ttl > 0 && k == 0)
					check_pttl(where, 0, keys[k], st->ttl);
				/* Virtual time: keep the state from expiring in real time. */
				freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", keys[k], MARKER_TTL));
			}
			continue;
		}
		/* Fixed window and token bucket: a rejection writes nothing at all.
		 * Sliding log and counter may drop what has left the window, the leaky
		 * bucket apply a leak that was due: the same call again writes nothing. */
		if (ac->algo == FW || ac->algo == TB)
			ck_snapshot_same(before);
		for (int k = 0; k < nk; k++)
			if (test_cmd_int(c, "EXISTS %s", keys[k]))
				check_pttl(where, 0, keys[k], MARKER_TTL);
		free(before);
		before = test_snapshot(c);
		r = acquire(ac->algo, p, ac->a, ac->b, ac->s, n, num(st->now));
		test_check_ints(where, 1, r, st->want, 4);
		ck_snapshot_same(before);
		free(before);
	}
}

/* ---- validation: a bad call is an error and changes nothing ---------------------- */

/* One bad call: the script (by name), its KEYS count, all its arguments, the error prefix. */
struct bad_call {
	const char *script;
	int nkeys;
	const char *args[14]; /* KEYS then ARGV, NULL-terminated */
	const char *error;
};

#define LBK "sluice:{/v}:leaky_bucket", "sluice:{/v}:leaky_bucket:meta"
#define SLK "sluice:{/v}:sliding_log"
#define FWK "sluice:{/v}:fixed_window"
#define SCK "sluice:{/v}:sliding_counter"
#define TBK "sluice:{/v}:token_bucket"

SCRIPT_FIXTURE void check_bad_call(const struct bad_call *bc)
{
	int argc = 0;
	char *before;

	/* State at 1000 (of every algorithm, at /v and /k) that a call at 9000
	 * would drain, count, prune, repair, reclaim or reset. */
	freeReplyObject(lb_acquire("/v", "3", "1", "2", "1000"));
	freeReplyObject(sl_acquire("/v", "3", "1000", "1000"));
	freeReplyObject(fw("/v", "3", "1000", 1000));
	freeReplyObject(test_cmd(c, "PERSIST %s", FWK));
	freeReplyObject(sc("/v", "3", "1000", "10", 1000));
	freeReplyObject(tb("/v", "3", "1", "1", 1000));
	freeReplyObject(fw("/k", "3", "1000", 1000));
	freeReplyObject(sc("/k", "3", "1000", "10", 1000));
	freeReplyObject(tb("/k", "3", "1", "1", 1000));
	before = test_snapshot(c);
	while (bc->args[argc])
		argc++;
	ck_error(eval_argv(bc->script, 0, bc->nkeys, argc, bc->args), bc->error);
	ck_snapshot_same(before);
	free(before);
}

#endif

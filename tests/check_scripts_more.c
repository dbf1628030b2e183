/*
 * Integration tests of the client-side limiters and the worker jobs of
 * lua/fixed_window*.lua, lua/sliding_counter*.lua, lua/token_bucket*.lua, the
 * score units of lua/sliding_log_prune.lua, and of sluice's scripts working
 * on keys written the way the seed articles' clients write them
 * (../shared/seeds/README.md).  Run against a private redis-server
 * (tests/harness.h) with the text the binary embeds.  Time is virtual: every
 * call passes an explicit `now` in ms, so the expected values are exact; a
 * few tests use Redis TIME (or wait for a real expiry) and allow for the
 * test's own duration.
 */
#include "core/scripts.h"
#include "tests/harness.h"

#include <check.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FW_REG "sluice:registry:fixed_window"
#define SC_REG "sluice:registry:sliding_counter"
#define TB_REG "sluice:registry:token_bucket"
#define SL_REG "sluice:registry:sliding_log"
#define LB_REG "sluice:registry:leaky_bucket"
#define MAX_ARGS 64
/* A TTL no script sets: put on a key before a rejected call, it must still be
 * there afterwards (a rejected request extends no TTL). */
#define MARKER_TTL 987654LL
/* Real ms a test may take between a call and its PTTL check (asan is slow). */
#define SLACK_MS 500

static struct test_redis srv;
static redisContext *c;

static void srv_start(void)
{
	if (test_redis_start(&srv) != 0)
		abort();
}

static void srv_stop(void)
{
	test_redis_stop(&srv);
}

static void setup(void)
{
	c = test_redis_connect(&srv);
	test_redis_flush(c);
}

static void teardown(void)
{
	redisFree(c);
	c = NULL;
}

#define ck_cmd(want, ...) test_check_cmd(__FILE__, __LINE__, c, (want), __VA_ARGS__)

/* ---- helpers ------------------------------------------------------------ */

/* Decimal text of v in one of 32 rotating buffers (enough for one call's ARGV). */
static const char *num(long long v)
{
	static char buf[32][24];
	static unsigned next;
	char *b = buf[next++ % 32];

	snprintf(b, sizeof(buf[0]), "%lld", v);
	return b;
}

/* sluice's key of `kind` for `path`, in one of 16 rotating buffers. */
static const char *key_of(const char *path, const char *kind)
{
	static char buf[16][256];
	static unsigned next;
	char *b = buf[next++ % 16];

	snprintf(b, sizeof(buf[0]), "sluice:{%s}:%s", path, kind);
	return b;
}
#define FW_KEY(p) key_of((p), "fixed_window")
#define SC_KEY(p) key_of((p), "sliding_counter")
#define TB_KEY(p) key_of((p), "token_bucket")

/* EVAL (or EVAL_RO when `ro`) the embedded lua/<script>.lua with nkeys KEYS, then ARGV. */
static redisReply *eval_argv(const char *script, int ro, int nkeys, int argc, const char *const *argv)
{
	const struct script_src *src = script_find(script);
	const char *v[MAX_ARGS + 3];
	redisReply *r;

	ck_assert_msg(src != NULL, "lua/%s.lua is not embedded", script);
	ck_assert_int_le(argc, MAX_ARGS);
	v[0] = ro ? "EVAL_RO" : "EVAL";
	v[1] = src->body;
	v[2] = num(nkeys);
	for (int i = 0; i < argc; i++)
		v[3 + i] = argv[i];
	r = redisCommandArgv(c, argc + 3, v, NULL);
	ck_assert_msg(r != NULL, "redis I/O error: %s", c->errstr);
	return r;
}

/* EVAL `script`: nkeys KEYS then ARGV, as strings up to a NULL (so a NULL
 * right after the last given argument leaves the optional ones absent). */
static redisReply *ev(const char *script, int nkeys, ...)
{
	const char *argv[MAX_ARGS];
	int argc = 0;
	const char *a;
	va_list ap;

	va_start(ap, nkeys);
	while ((a = va_arg(ap, const char *)) != NULL && argc < MAX_ARGS)
		argv[argc++] = a;
	va_end(ap);
	return eval_argv(script, 0, nkeys, argc, argv);
}

/* PTTL of key is in (want - SLACK_MS, want]: set from a call's `now` a moment ago. */
static void check_pttl(const char *file, int line, const char *key, long long want)
{
	long long ttl = test_cmd_int(c, "PTTL %s", key);

	ck_assert_msg(ttl <= want && ttl > want - SLACK_MS, "%s:%d: PTTL %s is %lld, want %lld (minus the test's time)",
		      file, line, key, ttl, want);
}
#define ck_pttl(key, want) check_pttl(__FILE__, __LINE__, (key), (want))

#define ck_snapshot_same(before)                                                            \
	do {                                                                                \
		char *after_ = test_snapshot(c);                                                  \
		ck_assert_msg(strcmp((before), after_) == 0, "keyspace changed:\n%s---\n%s", \
			      (before), after_);                                            \
		free(after_);                                                               \
	} while (0)


static long long zcard(const char *key)
{
	return test_cmd_int(c, "ZCARD %s", key);
}

static int in_set(const char *set, const char *member)
{
	return (int)test_cmd_int(c, "SISMEMBER %s %s", set, member);
}

/* ---- the five client scripts, by algorithm -------------------------------- */

enum algo { FW, SL, SC, TB, LB };

/*
 * One client call.  a, b, s are the rule's parameters: FW and SL (limit,
 * window_ms), SC (limit, window_ms, sub_windows), TB and LB (capacity, rate);
 * n is the cost (TB, LB; NULL leaves it out); now is ms, NULL for Redis TIME.
 */
static redisReply *acquire(enum algo al, const char *p, const char *a, const char *b, const char *s,
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
static int state_keys(enum algo al, const char *p, const char *keys[2])
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

static const char *registry_of(enum algo al)
{
	static const char *const regs[] = { FW_REG, SL_REG, SC_REG, TB_REG, LB_REG };

	return regs[al];
}

static redisReply *fw(const char *p, const char *limit, const char *window, long long now)
{
	return acquire(FW, p, limit, window, NULL, NULL, num(now));
}

static redisReply *sc(const char *p, const char *limit, const char *window, const char *subs, long long now)
{
	return acquire(SC, p, limit, window, subs, NULL, num(now));
}

static redisReply *tb(const char *p, const char *cap, const char *rate, const char *n, long long now)
{
	return acquire(TB, p, cap, rate, NULL, n, num(now));
}

static redisReply *fw_repair1(const char *p, const char *window, long long now)
{
	return ev("fixed_window_repair", 2, FW_REG, FW_KEY(p), num(now), p, window, NULL);
}

static redisReply *sc_prune1(const char *p, const char *window, const char *subs, long long now)
{
	return ev("sliding_counter_prune", 2, SC_REG, SC_KEY(p), num(now), p, window, subs, NULL);
}

static redisReply *tb_reclaim1(const char *p, const char *cap, const char *rate, long long now)
{
	return ev("token_bucket_reclaim", 2, TB_REG, TB_KEY(p), num(now), p, cap, rate, NULL);
}

static redisReply *fw_state(const char *key, const char *limit, const char *window, const char *now)
{
	return ev("fixed_window_state", 1, key, limit, window, now, NULL);
}

static redisReply *sc_state(const char *p, const char *limit, const char *window, const char *subs,
			    const char *now)
{
	return ev("sliding_counter_state", 1, SC_KEY(p), limit, window, subs, now, NULL);
}

static redisReply *tb_state(const char *p, const char *cap, const char *rate, const char *now)
{
	return ev("token_bucket_state", 1, TB_KEY(p), cap, rate, now, NULL);
}

/* ---- embedding ------------------------------------------------------------ */

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

/* ---- table tests: (parameters, calls with now) -> exact replies ------------ */

struct step {
	long long now;	   /* ms; -1 ends the table */
	long long n;	   /* cost (TB, LB); 0: left out */
	long long want[4]; /* allowed, remaining, retry_after_ms, reset_ms */
	long long ttl;	   /* when > 0: the state key's PTTL right after the call */
};

struct algo_case {
	const char *name;
	enum algo algo;
	const char *a, *b, *s; /* see acquire() */
	struct step steps[40];
};

#define END { -1, 0, { 0, 0, 0, 0 }, 0 }

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

	/* ---- leaky bucket ---- */
	{ "leaky bucket: capacity 3, leaking 1 per second, costs of 1 and 2",
	  LB,
	  "3",
	  "1",
	  NULL,
	  { { 0, 1, { 1, 2, 0, 1000 }, 2001 },
	    { 0, 2, { 1, 0, 0, 1000 }, 4001 },
	    { 0, 1, { 0, 0, 1000, 1000 }, 0 },
	    { 999, 1, { 0, 0, 1, 1 }, 0 },
	    { 1000, 1, { 1, 0, 0, 1000 }, 4001 },
	    /* n larger than what is left: two must leak, at 3000 */
	    { 1500, 2, { 0, 0, 1500, 500 }, 0 },
	    /* (at 2999 one of them leaks: 2 left, 0.999 carried) */
	    { 2999, 2, { 0, 1, 1, 1 }, 0 },
	    { 3000, 2, { 1, 0, 0, 1000 }, 4001 },
	    { 2000, 1, { 0, 0, 1000, 1000 }, 0 },
	    { 3000, 4, { 0, 0, -1, 1000 }, 0 },
	    END } },
};

START_TEST(test_table)
{
	const struct algo_case *ac = &algo_cases[_i];
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
				if (st->ttl > 0)
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

/* ---- state scripts ------------------------------------------------------------ */

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
	/* and the writers are refused there. */
	ck_error(eval_argv("fixed_window", 1, 2, 6, fw_acq), "ERR Write commands are not allowed");
	ck_error(eval_argv("sliding_counter", 1, 2, 7, sc_acq), "ERR Write commands are not allowed");
	ck_error(eval_argv("token_bucket", 1, 2, 7, tb_acq), "ERR Write commands are not allowed");
}
END_TEST

/* ---- sliding_log_prune: score units -------------------------------------------- */

static redisReply *prune_unit(const char *reg, const char *key, const char *path, const char *window,
			      long long now, const char *unit)
{
	return ev("sliding_log_prune", 2, reg, key, num(now), path, window, unit, NULL);
}

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

/* ---- interop: keys written the way the seeds' clients write them ------------------ */

/*
 * Seed 001's fixed window: INCR, then EXPIRE only when the count is 1.  With
 * `crash`, the client dies between the two calls: the counter has no TTL and,
 * as EXPIRE is only ever sent for a count of 1, never gets one.  Returns 1
 * when the client admits the request (count <= limit).
 */
static int seed001_hit(const char *key, long long limit, long long window_s, int crash)
{
	long long count = test_cmd_int(c, "INCR %s", key);

	if (count == 1 && !crash)
		freeReplyObject(test_cmd(c, "EXPIRE %s %lld", key, window_s));
	return count <= limit;
}

START_TEST(test_seed001_counter_without_ttl_repaired)
{
	const char *ok = "rate_limit:healthy", *crashed = "rate_limit:example";
	redisReply *r;
	char *before;

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(seed001_hit(ok, 3, 60, 0), 1);
	ck_assert_int_eq(seed001_hit(crashed, 3, 60, 1), 1);
	for (int i = 2; i <= 3; i++)
		ck_assert_int_eq(seed001_hit(crashed, 3, 60, 0), 1);
	/* Over the limit, and no TTL to ever end the window: blocked for good. */
	for (int i = 4; i <= 6; i++)
		ck_assert_int_eq(seed001_hit(crashed, 3, 60, 0), 0);
	ck_assert_int_eq(test_cmd_int(c, "PTTL %s", crashed), -1);
	ck_reply(fw_state(crashed, "3", "60000", ""), 6, 0, -1, -1);

	/* The repair (Redis TIME): the crashed counter gets the whole window, the
	 * healthy one keeps its TTL; they have no registry (an absent set). */
	r = ev("fixed_window_repair", 3, "rate_limit::registry", ok, crashed, "", "healthy", "60000", "example",
	       "60000", NULL);
	ck_reply(r, 1, 0, 2, 0);
	ck_pttl(crashed, 60000);
	ck_pttl(ok, 60000);
	ck_cmd("\"6\"", "GET %s", crashed);
	ck_cmd("\"3\"", "GET %s", ok);
	r = fw_state(crashed, "3", "60000", "");
	ck_assert_int_gt(test_elem_int(r, 2), 60000 - SLACK_MS);
	ck_reply(r, 6, 0, test_elem_int(r, 2), test_elem_int(r, 3));
	ck_assert_int_eq(test_cmd_int(c, "EXISTS rate_limit::registry"), 0);
	/* Idempotent. */
	before = test_snapshot(c);
	r = ev("fixed_window_repair", 3, "rate_limit::registry", ok, crashed, "", "healthy", "60000", "example",
	       "60000", NULL);
	ck_reply(r, 0, 0, 2, 0);
	ck_snapshot_same(before);
	free(before);
}
END_TEST

START_TEST(test_seed001_repaired_counter_lets_the_client_in)
{
	const char *key = "rate_limit:login";
	int waited = 0;

	ck_assert_int_eq(seed001_hit(key, 1, 1, 1), 1);
	ck_assert_int_eq(seed001_hit(key, 1, 1, 0), 0);
	/* A 200 ms window, in real time. */
	ck_reply(ev("fixed_window_repair", 2, "rate_limit::registry", key, "", "login", "200", NULL), 1, 0, 1, 0);
	ck_assert_int_le(test_cmd_int(c, "PTTL %s", key), 200);
	ck_assert_int_eq(seed001_hit(key, 1, 1, 0), 0); /* still in its window */
	while (test_cmd_int(c, "EXISTS %s", key) && waited < 3000) {
		usleep(20 * 1000);
		waited += 20;
	}
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", key), 0);
	ck_assert_int_ge(waited, 100);
	/* The window is over: the client's next INCR starts a new one. */
	ck_assert_int_eq(seed001_hit(key, 1, 1, 0), 1);
	ck_assert_int_gt(test_cmd_int(c, "PTTL %s", key), 0);
}
END_TEST

/* Seed 000's check: drop scores <= now - window, count, add `now` as both
 * score and member (so one ms counts once); no registry. */
static int seed000_hit(const char *key, long long limit, long long window, long long now)
{
	long long count;

	freeReplyObject(test_cmd(c, "ZREMRANGEBYSCORE %s 0 %lld", key, now - window));
	count = test_cmd_int(c, "ZCARD %s", key);
	if (count >= limit)
		return 0;
	freeReplyObject(test_cmd(c, "ZADD %s %lld %lld", key, now, now));
	return 1;
}

START_TEST(test_seed000_log_pruned)
{
	const char *key = "limit:user1:/api/orders", *copy = "limit:user1:/api/orders:copy";

	ck_assert_int_eq(seed000_hit(key, 5, 1000, 1000), 1);
	ck_assert_int_eq(seed000_hit(key, 5, 1000, 1000), 1); /* the same member: counted once */
	ck_assert_int_eq(seed000_hit(key, 5, 1000, 1200), 1);
	ck_assert_int_eq(seed000_hit(key, 5, 1000, 1700), 1);
	ck_cmd("{\"1000\", \"1000\", \"1200\", \"1200\", \"1700\", \"1700\"}", "ZRANGE %s 0 -1 WITHSCORES", key);
	freeReplyObject(test_cmd(c, "ZUNIONSTORE %s 1 %s", copy, key));
	/* The prune removes exactly what the client itself removes at that now. */
	ck_reply(prune_unit("limit::registry", key, "user1:/api/orders", "1000", 1999, "ms"), 0, 0, 1, 0);
	ck_reply(prune_unit("limit::registry", key, "user1:/api/orders", "1000", 2000, "ms"), 1, 0, 1, 0);
	freeReplyObject(test_cmd(c, "ZREMRANGEBYSCORE %s 0 1000", copy));
	ck_cmd("{\"1200\", \"1200\", \"1700\", \"1700\"}", "ZRANGE %s 0 -1 WITHSCORES", key);
	ck_cmd("{\"1200\", \"1200\", \"1700\", \"1700\"}", "ZRANGE %s 0 -1 WITHSCORES", copy);
	/* Nobody calls any more: the prune empties it (Redis deletes the key). */
	ck_reply(prune_unit("limit::registry", key, "user1:/api/orders", "1000", 2700, "ms"), 2, 0, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", key), 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS limit::registry"), 0);
}
END_TEST

/* Seed 002's atomic version: add the request (member = UUID), then drop
 * scores <= now - window, count, and refuse when over the limit; the refused
 * request stays in the log. */
static int seed002_hit(const char *key, long long limit, long long window_s, long long now, const char *uuid)
{
	long long count;

	freeReplyObject(test_cmd(c, "ZADD %s %lld %s", key, now, uuid));
	freeReplyObject(test_cmd(c, "ZREMRANGEBYSCORE %s 0 %lld", key, now - window_s * 1000));
	count = test_cmd_int(c, "ZCARD %s", key);
	return count <= limit;
}

START_TEST(test_seed002_log_pruned)
{
	const char *key = "rate_limit:api-key-7";

	ck_assert_int_eq(seed002_hit(key, 2, 1, 1000, "5f0c6a3e-8d1b-4c7a-9e2f-0a1b2c3d4e5f"), 1);
	ck_assert_int_eq(seed002_hit(key, 2, 1, 1000, "a9d2e4f1-3b5c-4d6e-8f70-1a2b3c4d5e6f"), 1);
	ck_assert_int_eq(seed002_hit(key, 2, 1, 1500, "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"), 0);
	ck_assert_int_eq(seed002_hit(key, 2, 1, 1600, "c0ffee00-1234-4abc-9def-0123456789ab"), 0);
	ck_assert_int_eq(zcard(key), 4);
	/* Window 1 s = 1000 ms, scores in ms: at 2000 the two of 1000 go. */
	ck_reply(prune_unit("rate_limit::registry", key, "api-key-7", "1000", 1999, "ms"), 0, 0, 1, 0);
	ck_reply(prune_unit("rate_limit::registry", key, "api-key-7", "1000", 2000, "ms"), 2, 0, 1, 0);
	ck_cmd("{\"0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9\", \"c0ffee00-1234-4abc-9def-0123456789ab\"}",
	       "ZRANGE %s 0 -1", key);
	ck_reply(prune_unit("rate_limit::registry", key, "api-key-7", "1000", 2600, "ms"), 2, 0, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", key), 0);
}
END_TEST

START_TEST(test_log_in_seconds_pruned)
{
	/* A limiter that scores in seconds (fractions allowed), with a registry. */
	const char *key = "ratelimit:s:/p";

	freeReplyObject(test_cmd(c, "ZADD %s 9.001 a 9.5 b 10 c 10.999 d", key));
	freeReplyObject(test_cmd(c, "SADD ratelimit:s:paths /p"));
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 10000, "s"), 0, 0, 1, 0);
	/* 10001 - 1000 ms = 9.001 s: that score is gone (<=), exactly. */
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 10001, "s"), 1, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 10499, "s"), 0, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 10500, "s"), 1, 0, 1, 0);
	ck_cmd("{\"c\", \"d\"}", "ZRANGE %s 0 -1", key);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 11998, "s"), 1, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 11999, "s"), 1, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s ratelimit:s:paths", key), 0);
	/* Today's clock in seconds needs all 17 digits of the cut-off. */
	freeReplyObject(test_cmd(c, "ZADD %s 1700000000.001 a 1700000000.002 b 1700000000.5 c", key));
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "60000", 1700000060000LL, "s"), 0, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "60000", 1700000060001LL, "s"), 1, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "60000", 1700000060002LL, "s"), 1, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "60000", 1700000060499LL, "s"), 0, 0, 1, 0);
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "60000", 1700000060500LL, "s"), 1, 0, 1, 0);
	/* Read as ms, the same log would have lost everything at once. */
	freeReplyObject(test_cmd(c, "ZADD %s 9.001 a 9.5 b", key));
	ck_reply(prune_unit("ratelimit:s:paths", key, "/p", "1000", 1011, "ms"), 2, 0, 1, 0);
}
END_TEST

/*
 * Seed 004's leaky bucket: the client adds `now` (score = member = ms) to
 * LeakyBucket:<path> while ZCARD < capacity, and puts the path in
 * LeakyBucket::pathSet.  sluiced drains it with leaky_bucket_drain.lua and a
 * meta hash of its own, {LeakyBucket:<path>}:meta (the same slot).  A client
 * that keeps knocking (every 10 ms) is admitted exactly as often as the drain
 * leaks: floor(rate * busy time) entries, whatever the tick.
 */
struct seed004_case {
	const char *rate;
	long long rate_num, rate_den; /* rate = num / den per second */
	long long tick_ms;
	long long until;
};

static const struct seed004_case seed004_cases[] = {
	{ "1", 1, 1, 250, 10000 },     /* the article's own rule: 10, 1 per second */
	{ "1", 1, 1, 1000, 10000 },    /* ticking once a second, as its leakWater does */
	{ "2.5", 5, 2, 100, 10000 },   { "2.5", 5, 2, 1000, 10000 }, { "0.5", 1, 2, 300, 10000 },
	{ "0.16666666666666666", 1, 6, 370, 30000 },
};

static int seed004_hit(const char *key, const char *reg, const char *path, long long cap, long long now)
{
	freeReplyObject(test_cmd(c, "SADD %s %s", reg, path));
	if (test_cmd_int(c, "ZCARD %s", key) >= cap)
		return 0;
	freeReplyObject(test_cmd(c, "ZADD %s %lld %lld", key, now, now));
	return 1;
}

START_TEST(test_seed004_leaky_bucket_drained_at_rate)
{
	const struct seed004_case *sc4 = &seed004_cases[_i];
	const char *key = "LeakyBucket:/test", *meta = "{LeakyBucket:/test}:meta";
	const char *reg = "LeakyBucket::pathSet", *path = "/test";
	const long long cap = 10, first_tick = 100;
	long long admitted = 0, leaked = 0, last_tick = first_tick;

	for (long long t = 0; t <= sc4->until; t += 10) {
		if (t >= first_tick && (t - first_tick) % sc4->tick_ms == 0) {
			redisReply *r;

			/* Before the tick the client has taken every slot that leaked. */
			if (t > first_tick)
				ck_assert_int_eq(zcard(key), cap);
			ck_assert_int_eq(admitted - cap, leaked);
			r = ev("leaky_bucket_drain", 3, reg, key, meta, num(t), path, sc4->rate, NULL);
			leaked += test_elem_int(r, 0);
			ck_assert_int_eq(test_elem_int(r, 1), 0);
			freeReplyObject(r);
			/* The meter: floor(rate * busy time) since the first tick. */
			ck_assert_msg(leaked == sc4->rate_num * (t - first_tick) / (sc4->rate_den * 1000),
				      "rate %s, tick %lld: %lld leaked by %lld", sc4->rate, sc4->tick_ms, leaked, t);
			last_tick = t;
		}
		admitted += seed004_hit(key, reg, path, cap, t);
	}
	ck_assert_int_eq(admitted - cap, sc4->rate_num * (last_tick - first_tick) / (sc4->rate_den * 1000));
	ck_assert_int_gt(leaked, 0);
	ck_assert_int_eq(in_set(reg, path), 1);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s last", meta), 1);
}
END_TEST

START_TEST(test_seed004_admissions_at_the_leak_times)
{
	/* Rate 1, drained every 250 ms from 100: a leak at 1100, 2100, ...; the
	 * knocking client gets in at exactly those instants and at no other. */
	const char *key = "LeakyBucket:/t", *meta = "{LeakyBucket:/t}:meta", *reg = "LeakyBucket::pathSet";
	long long got[16], n = 0;

	for (long long t = 0; t <= 5000; t += 10) {
		if (t >= 100 && (t - 100) % 250 == 0)
			freeReplyObject(ev("leaky_bucket_drain", 3, reg, key, meta, num(t), "/t", "1", NULL));
		if (seed004_hit(key, reg, "/t", 10, t) && t >= 100) {
			ck_assert_int_lt(n, 16);
			got[n++] = t;
		}
	}
	ck_assert_int_eq(n, 4);
	for (long long i = 0; i < n; i++)
		ck_assert_int_eq(got[i], 1100 + 1000 * i);
	/* The oldest went first: what is left is 40..90 and the four late ones. */
	ck_cmd("{\"40\", \"50\", \"60\", \"70\", \"80\", \"90\", \"1100\", \"2100\", \"3100\", \"4100\"}",
	       "ZRANGE %s 0 -1", key);
	ck_cmd("{\"4100\", \"0\"}", "HMGET %s last carry", meta);
}
END_TEST

/* ---- validation ---------------------------------------------------------------- */

/* One bad call: the script, its KEYS count, all its arguments, the error prefix. */
struct bad_call {
	const char *script;
	int nkeys;
	const char *args[14]; /* KEYS then ARGV, NULL-terminated */
	const char *error;
};

#define FWK "sluice:{/v}:fixed_window"
#define SCK "sluice:{/v}:sliding_counter"
#define TBK "sluice:{/v}:token_bucket"
#define SLK "sluice:{/v}:sliding_log"

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
	{ "sliding_log_prune", 2, { SL_REG, SLK, "9000", "/v", "1000", "sec" }, "ERR sluice: unit " },
	{ "sliding_log_prune", 2, { SL_REG, SLK, "9000", "/v", "1000", "MS" }, "ERR sluice: unit " },
	{ "sliding_log_prune", 2, { SL_REG, SLK, "9000", "/v", "0", "s" }, "ERR sluice: window_ms " },
	{ "sliding_log_prune", 2, { SL_REG, SLK, "9000", "/v", "1000", "s", "x" }, "ERR sluice: sliding_log_prune takes" },
};

START_TEST(test_bad_arguments_change_nothing)
{
	const struct bad_call *bc = &bad_calls[_i];
	int argc = 0;
	char *before;

	/* State at 1000 that a call at 9000 would count, prune, repair or reclaim. */
	freeReplyObject(fw("/v", "3", "1000", 1000));
	freeReplyObject(test_cmd(c, "PERSIST %s", FWK));
	freeReplyObject(sc("/v", "3", "1000", "10", 1000));
	freeReplyObject(tb("/v", "3", "1", "1", 1000));
	freeReplyObject(acquire(SL, "/v", "3", "1000", NULL, NULL, "1000"));
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
END_TEST

/* ---- suite ------------------------------------------------------------------------ */

static Suite *scripts_more_suite(void)
{
	Suite *s = suite_create("scripts_more");
	TCase *tc;

#define TC(name)                                                      \
	do {                                                          \
		tc = tcase_create(name);                              \
		tcase_add_unchecked_fixture(tc, srv_start, srv_stop); \
		tcase_add_checked_fixture(tc, setup, teardown);       \
		tcase_set_timeout(tc, 120);                           \
		suite_add_tcase(s, tc);                               \
	} while (0)

	TC("embedding");
	tcase_add_test(tc, test_new_scripts_embedded_and_compile);

	TC("tables");
	tcase_add_loop_test(tc, test_table, 0, (int)(sizeof(algo_cases) / sizeof(algo_cases[0])));
	tcase_add_test(tc, test_ttls_to_the_ms);

	TC("fixed_window");
	tcase_add_test(tc, test_fw_uses_redis_time);
	tcase_add_test(tc, test_fw_state_layout);
	tcase_add_test(tc, test_fw_past_counter_without_ttl);
	tcase_add_test(tc, test_fw_window_length_changed);
	tcase_add_test(tc, test_fw_repair_batch);
	tcase_add_test(tc, test_fw_repair_older_now);
	tcase_add_test(tc, test_fw_repair_uses_redis_time);

	TC("sliding_counter");
	tcase_add_test(tc, test_sc_fields_removed_on_the_way);
	tcase_add_test(tc, test_sc_many_in_one_ms);
	tcase_add_test(tc, test_sc_one_sub_window_is_a_fixed_window);
	tcase_add_test(tc, test_sc_uses_redis_time);
	tcase_add_test(tc, test_sc_prune_boundary);
	tcase_add_test(tc, test_sc_prune_batch);
	tcase_add_test(tc, test_sc_prune_changes_no_answer);

	TC("token_bucket");
	tcase_add_loop_test(tc, test_tb_retry_after_is_exact, 0,
			    (int)(sizeof(tb_retry_cases) / sizeof(tb_retry_cases[0])));
	tcase_add_test(tc, test_tb_layout_and_default_n);
	tcase_add_test(tc, test_tb_refilled_is_absent);
	tcase_add_test(tc, test_tb_capacity_lowered);
	tcase_add_test(tc, test_tb_tiny_rate_never_expires);
	tcase_add_test(tc, test_tb_reclaim_refilled);
	tcase_add_test(tc, test_tb_reclaim_batch);

	TC("state");
	tcase_add_test(tc, test_fw_state);
	tcase_add_test(tc, test_sc_state);
	tcase_add_test(tc, test_tb_state);
	tcase_add_test(tc, test_new_state_scripts_are_read_only);

	TC("sliding_log_units");
	tcase_add_test(tc, test_prune_unit_ms_is_the_default);
	tcase_add_test(tc, test_prune_unit_us);
	tcase_add_test(tc, test_prune_unit_batch);

	TC("interop");
	tcase_add_test(tc, test_seed001_counter_without_ttl_repaired);
	tcase_add_test(tc, test_seed001_repaired_counter_lets_the_client_in);
	tcase_add_test(tc, test_seed000_log_pruned);
	tcase_add_test(tc, test_seed002_log_pruned);
	tcase_add_test(tc, test_log_in_seconds_pruned);
	tcase_add_loop_test(tc, test_seed004_leaky_bucket_drained_at_rate, 0,
			    (int)(sizeof(seed004_cases) / sizeof(seed004_cases[0])));
	tcase_add_test(tc, test_seed004_admissions_at_the_leak_times);

	TC("validation");
	tcase_add_loop_test(tc, test_bad_arguments_change_nothing, 0,
			    (int)(sizeof(bad_calls) / sizeof(bad_calls[0])));
#undef TC
	return s;
}

int main(void)
{
	return test_run_suite(scripts_more_suite());
}

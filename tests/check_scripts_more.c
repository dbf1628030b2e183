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

/* Describe reply r in buf, for failure messages and exact comparisons. */
static const char *show(const redisReply *r, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	if (r->type == REDIS_REPLY_ERROR)
		snprintf(buf, cap, "error \"%s\"", r->str);
	else if (r->type == REDIS_REPLY_INTEGER)
		snprintf(buf, cap, "%lld", r->integer);
	else if (r->type == REDIS_REPLY_NIL)
		snprintf(buf, cap, "nil");
	else if (r->type == REDIS_REPLY_ARRAY) {
		n += snprintf(buf + n, cap - n, "{");
		for (size_t i = 0; i < r->elements && n < cap; i++) {
			const redisReply *e = r->element[i];

			if (e->type == REDIS_REPLY_INTEGER)
				n += snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", e->integer);
			else if (e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS)
				n += snprintf(buf + n, cap - n, "%s\"%s\"", i ? ", " : "", e->str);
			else
				n += snprintf(buf + n, cap - n, "%s<type %d>", i ? ", " : "", e->type);
		}
		if (n < cap)
			snprintf(buf + n, cap - n, "}");
	} else if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
		snprintf(buf, cap, "\"%s\"", r->str);
	else
		snprintf(buf, cap, "<type %d>", r->type);
	return buf;
}

/* Assert that r is an array of exactly these integers; frees r. */
static void check_ints(const char *where, int line, redisReply *r, const long long *want, size_t n)
{
	char got[512];
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == n;

	for (size_t i = 0; ok && i < n; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	if (!ok) {
		char exp[512];
		size_t k = 0;

		k += snprintf(exp + k, sizeof(exp) - k, "{");
		for (size_t i = 0; i < n && k < sizeof(exp); i++)
			k += snprintf(exp + k, sizeof(exp) - k, "%s%lld", i ? ", " : "", want[i]);
		if (k < sizeof(exp))
			snprintf(exp + k, sizeof(exp) - k, "}");
		ck_abort_msg("%s:%d: reply %s, want %s", where, line, show(r, got, sizeof(got)), exp);
	}
	freeReplyObject(r);
}

#define INTS(...) ((const long long[]){ __VA_ARGS__ })
#define NINTS(...) (sizeof(INTS(__VA_ARGS__)) / sizeof(long long))
/* ck_reply(reply, 1, 2, 0, 1000): the reply is exactly {1, 2, 0, 1000}; frees it. */
#define ck_reply(r, ...) check_ints(__FILE__, __LINE__, (r), INTS(__VA_ARGS__), NINTS(__VA_ARGS__))

/* Assert that r is an error starting with `prefix`; frees r. */
static void check_error(const char *file, int line, redisReply *r, const char *prefix)
{
	char got[512];

	ck_assert_msg(r->type == REDIS_REPLY_ERROR && strncmp(r->str, prefix, strlen(prefix)) == 0,
		      "%s:%d: reply %s, want an error starting \"%s\"", file, line,
		      show(r, got, sizeof(got)), prefix);
	freeReplyObject(r);
}
#define ck_error(r, prefix) check_error(__FILE__, __LINE__, (r), (prefix))

/* Element i of an array reply as an integer (the reply stays owned by the caller). */
static long long elem_int(const redisReply *r, size_t i)
{
	char got[512];

	ck_assert_msg(r->type == REDIS_REPLY_ARRAY && i < r->elements &&
			      r->element[i]->type == REDIS_REPLY_INTEGER,
		      "reply %s has no integer element %zu", show(r, got, sizeof(got)), i);
	return r->element[i]->integer;
}

/* A command's reply rendered as text ("{...}" for arrays); for exact comparisons. */
static void ck_cmd_is(const char *file, int line, const char *want, const char *fmt, ...)
{
	char got[2048];
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	ck_assert_msg(r != NULL, "redis I/O error: %s", c->errstr);
	show(r, got, sizeof(got));
	freeReplyObject(r);
	ck_assert_msg(strcmp(got, want) == 0, "%s:%d: %s answered %s, want %s", file, line, fmt, got, want);
}
#define ck_cmd(want, ...) ck_cmd_is(__FILE__, __LINE__, (want), __VA_ARGS__)

/* PTTL of key is in (want - SLACK_MS, want]: set from a call's `now` a moment ago. */
static void check_pttl(const char *file, int line, const char *key, long long want)
{
	long long ttl = test_cmd_int(c, "PTTL %s", key);

	ck_assert_msg(ttl <= want && ttl > want - SLACK_MS, "%s:%d: PTTL %s is %lld, want %lld (minus the test's time)",
		      file, line, key, ttl, want);
}
#define ck_pttl(key, want) check_pttl(__FILE__, __LINE__, (key), (want))

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The whole keyspace as text: each key (sorted) with its type, content and
 * whether it has a TTL.  Equal snapshots before and after a call mean the
 * call wrote nothing (TTL values themselves tick, so only their presence).
 */
static char *snapshot(void)
{
	redisReply *keys = test_cmd(c, "KEYS *");
	size_t cap = 1 << 16, n = 0;
	char *out = malloc(cap), part[2048];
	char **names = malloc((keys->elements + 1) * sizeof(*names));

	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(names);
	for (size_t i = 0; i < keys->elements; i++)
		names[i] = keys->element[i]->str;
	qsort(names, keys->elements, sizeof(*names), cmp_str);
	n += snprintf(out + n, cap - n, "dbsize=%zu\n", keys->elements);
	for (size_t i = 0; i < keys->elements; i++) {
		redisReply *ty = test_cmd(c, "TYPE %s", names[i]);
		redisReply *content;

		if (strcmp(ty->str, "zset") == 0)
			content = test_cmd(c, "ZRANGE %s 0 -1 WITHSCORES", names[i]);
		else if (strcmp(ty->str, "hash") == 0)
			content = test_cmd(c, "HGETALL %s", names[i]);
		else if (strcmp(ty->str, "set") == 0)
			content = test_cmd(c, "SORT %s ALPHA", names[i]);
		else if (strcmp(ty->str, "string") == 0)
			content = test_cmd(c, "GET %s", names[i]);
		else
			content = test_cmd(c, "DUMP %s", names[i]);
		n += snprintf(out + n, cap - n, "%s %s %s ttl=%s\n", names[i], ty->str,
			      show(content, part, sizeof(part)),
			      test_cmd_int(c, "PTTL %s", names[i]) >= 0 ? "yes" : "no");
		ck_assert_uint_lt(n, cap);
		freeReplyObject(content);
		freeReplyObject(ty);
	}
	free(names);
	freeReplyObject(keys);
	return out;
}

#define ck_snapshot_same(before)                                                            \
	do {                                                                                \
		char *after_ = snapshot();                                                  \
		ck_assert_msg(strcmp((before), after_) == 0, "keyspace changed:\n%s---\n%s", \
			      (before), after_);                                            \
		free(after_);                                                               \
	} while (0)

/* Redis TIME in ms, the clock the scripts use when no `now` is given. */
static long long redis_ms(void)
{
	return test_server_ms(c);
}

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
			before = snapshot();
		}
		r = acquire(ac->algo, p, ac->a, ac->b, ac->s, n, num(st->now));
		check_ints(where, 0, r, st->want, 4);
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
		before = snapshot();
		r = acquire(ac->algo, p, ac->a, ac->b, ac->s, n, num(st->now));
		check_ints(where, 1, r, st->want, 4);
		ck_snapshot_same(before);
		free(before);
	}
}
END_TEST

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
 * Sets up: script_setup/script_teardown are a suite's checked fixture
 * (test_tcase): a flushed connection per test.  The suite gets one global,
 * `c` (tests/conn_fixture.h), the running test's connection, owned by the
 * fixture.  Every reply a function here returns is the caller's to free.
 */
#include "core/scripts.h"
#include "tests/conn_fixture.h"
#include "tests/harness.h"

#include <check.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Registry sets for the batch scripts (the jobs of foreign layouts, which
 * take their keys as given); sluice's own registries are per shard:
 * test_registry(), in_registry(), due_of(). */
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

/* `c` connected to test_srv and flushed / freed. */
void script_setup(void);
void script_teardown(void);

#define ck_cmd(want, ...) test_check_cmd(__FILE__, __LINE__, c, (want), __VA_ARGS__)

/* ---- calls by script name or enum script_id ---------------------------------- */

/* `name` itself: the string branch of SCRIPT_NAME. */
const char *script_name_of_str(const char *name);
/* The name of a script given by name ("fixed_window") or by id (SCRIPT_FIXED_WINDOW). */
#define SCRIPT_NAME(s) _Generic((s), char *: script_name_of_str, const char *: script_name_of_str, default: script_name)(s)

/* Decimal text of v (test_num: one of 32 rotating buffers, enough for one call's ARGV). */
const char *num(long long v);

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
void check_pttl(const char *file, int line, const char *key, long long want);
#define ck_pttl(key, want) check_pttl(__FILE__, __LINE__, (key), (want))


long long zcard(const char *key);
int in_set(const char *set, const char *member);

/* ---- leaky bucket and sliding log, with string arguments ----------------------- */

redisReply *lb_acquire(const char *path, const char *cap, const char *rate, const char *n, const char *now);
redisReply *lb_state(const char *path, const char *cap, const char *rate, const char *now);
redisReply *sl_acquire(const char *path, const char *limit, const char *window, const char *now);
/* sliding_log_prune of one log with a score unit ("ms", "s", "us"; NULL leaves it out). */
redisReply *prune_unit(const char *reg, const char *key, const char *path, const char *window, long long now,
		       const char *unit);

/* ---- the five client scripts, by algorithm -------------------------------------- */

enum algo { FW, SL, SC, TB, LB };

/* "fixed_window", ...: the algorithm's name in keys and script names. */
const char *algo_name(enum algo al);
/* The path is in its shard's due index of algorithm al. */
int in_registry(enum algo al, const char *path);
/* Its due time there (ms), or -1 when it is not registered. */
long long due_of(enum algo al, const char *path);
/* The algorithm's worker job over the due index of path's shard, at now (ms; < 0: Redis TIME),
 * up to 500 paths: reply {done, removed, visited, skipped, next_due, backlog}. */
redisReply *shard_job(enum algo al, const char *path, long long now);

/*
 * One client call by the calling contract (five KEYS; ARGV path, n, now,
 * rule "", parameters).  a, b, s are the parameters: FW and SL (limit,
 * window_ms), SC (limit, window_ms, sub_windows), TB and LB (capacity, rate);
 * n is the cost (NULL: ""); now is ms, NULL for Redis TIME.
 */
redisReply *acquire(enum algo al, const char *p, const char *a, const char *b, const char *s, const char *n,
		    const char *now);
/* The keys that hold one path's state: its state key and its meta; returns 2. */
int state_keys(enum algo al, const char *p, const char *keys[2]);

redisReply *fw(const char *p, const char *limit, const char *window, long long now);
redisReply *sc(const char *p, const char *limit, const char *window, const char *subs, long long now);
redisReply *tb(const char *p, const char *cap, const char *rate, const char *n, long long now);
redisReply *fw_state(const char *key, const char *limit, const char *window, const char *now);
/* fw_state of a foreign counter (which records nothing): fails the test unless the reply ends in
 * recorded {} and rule "", and returns it cut to its four integers {count, remaining, reset_ms, ttl_ms}. */
redisReply *fw_state_foreign(const char *key, const char *limit, const char *window, const char *now);
redisReply *sc_state(const char *p, const char *limit, const char *window, const char *subs, const char *now);
redisReply *tb_state(const char *p, const char *cap, const char *rate, const char *now);

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
void check_algo_case(const struct algo_case *ac);

/* ---- validation: a bad call is an error and changes nothing ---------------------- */

/* One bad call: the script (by name), its KEYS count, all its arguments, the error prefix. */
struct bad_call {
	const char *script;
	int nkeys;
	const char *args[14]; /* KEYS then ARGV, NULL-terminated */
	const char *error;
};

/* keys the bad calls of the foreign-layout batch scripts name */
#define SCK "sluice:{/v}:sliding_counter"
#define TBK "sluice:{/v}:token_bucket"

/*
 * Reply r (freed here) of a call whose argument `error` (a prefix) names is
 * bad: an error reply, or, from a worker batch script, whose bad path fails
 * alone (lib/batch.lua), a reply counting one failed path with that error.
 */
void check_refused(const char *script, redisReply *r, const char *error);
/*
 * The call fails with bc->error and leaves the state of every algorithm
 * (seeded first) unchanged.  A worker batch script's path whose arguments are
 * refused fails alone: the reply then counts one failed path whose error
 * starts with bc->error (and the seeded state is unchanged too).
 */
void check_bad_call(const struct bad_call *bc);

#endif

#ifndef SLUICE_TEST_BUCKET_MODEL_H
#define SLUICE_TEST_BUCKET_MODEL_H
/*
 * Reference models of the two buckets, for check_leaky_bucket.c and
 * check_token_bucket.c: each algorithm written again from DESIGN.md ("Time",
 * "State model") and lua/README.md, not from the scripts, so that random
 * traces can compare every reply of a script with what the rule says:
 *
 *   - the leaky bucket as a meter: between last and t a non-empty bucket
 *     loses k = floor(rate * (t - last) / 1000 + carry + 1e-9) entries and
 *     keeps the fraction; an empty one earns no credit;
 *   - the token bucket refilled lazily: min(capacity, tokens + rate * (t -
 *     last) / 1000), a request of cost n taken when that + 1e-9 >= n;
 *   - the time mark of both: a call is served at t = max(now, last); an
 *     emptied or empty leaky bucket keeps last = t (carry 0); a token bucket
 *     is reclaimed only when it was full at now - SKEW_MS already.
 *
 * "The smallest whole ms after which ..." (retry_after_ms, reset_ms) is found
 * by a search on the arithmetic itself, not by the scripts' closed form.
 *
 * Also what those tests run on: a seeded generator of traces, pipelined
 * EVALSHA calls, and keys whose TTLs run out in virtual time.
 *
 * Header-only and static, as tests/script_fixture.h: the Makefile links only
 * tests/harness.o into each suite.
 */
#include "core/scripts.h"
#include "tests/harness.h"

#include <check.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_FN static __attribute__((unused))

#define MODEL_EPS 1e-9                  /* lua/README.md: absorbs binary rounding */
#define MODEL_NEVER 9007199254740992LL  /* 2^53 ms: "never" in the replies */

/* SKEW_MS of lua/lib/skew.lua (tests/harness.h's test_skew_ms). */
MODEL_FN long long model_skew_ms(void)
{
	return test_skew_ms();
}

/* ---- the arithmetic -------------------------------------------------------------- */

/* The smallest whole ms x >= 0 with ok(a, x), for ok false then true as x grows; MODEL_NEVER when none below 2^53. */
MODEL_FN long long model_first_ms(int (*ok)(const double *a, long long x), const double *a)
{
	long long lo = -1, hi = 0; /* ok(lo) is false (-1: below every x), ok(hi) is to be seen */

	while (!ok(a, hi)) {
		lo = hi;
		hi = hi ? 2 * hi : 1;
		if (hi >= MODEL_NEVER)
			return MODEL_NEVER;
	}
	while (hi - lo > 1) {
		long long mid = lo + (hi - lo) / 2;

		if (ok(a, mid))
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

MODEL_FN long long model_max(long long a, long long b)
{
	return a > b ? a : b;
}

/* ---- the leaky bucket ---------------------------------------------------------- */

struct lb_model {
	long long level; /* entries */
	int marked;      /* the meta holds a time mark (last) */
	long long last;  /* ms up to which the leak is accounted: the mark */
	double carry;    /* fraction of an entry leaked, in [0, 1) */
	int registered;  /* the path is in the registry */
};

/* Entries leaked x ms after last, from carry. */
MODEL_FN long long lbm_leaked(double rate, double carry, long long x)
{
	return (long long)floor(rate * (double)x / 1000 + carry + MODEL_EPS);
}

/* a = {rate, carry, want}: want entries have leaked x ms after last. */
static int lbm_leaked_ok(const double *a, long long x)
{
	return (double)lbm_leaked(a[0], a[1], x) >= a[2];
}

MODEL_FN long long lbm_ms_until(const struct lb_model *m, double rate, long long want)
{
	const double a[3] = { rate, m->carry, (double)want };

	return model_first_ms(lbm_leaked_ok, a);
}

/* The leak at t >= last. */
MODEL_FN void lbm_leak(struct lb_model *m, double rate, long long t)
{
	double due;
	long long k;

	if (m->level > 0 && !m->marked) { /* entries nobody accounted for: from t on */
		m->marked = 1;
		m->last = t;
		m->carry = 0;
		return;
	}
	if (m->level == 0) { /* empty: earns nothing, but the mark is kept at t */
		if (m->marked)
			m->last = t, m->carry = 0;
		return;
	}
	due = rate * (double)(t - m->last) / 1000 + m->carry;
	k = (long long)floor(due + MODEL_EPS);
	if (k >= m->level)
		m->level = 0, m->last = t, m->carry = 0;
	else if (k > 0)
		m->level -= k, m->last = t, m->carry = fmax(0, due - (double)k);
}

MODEL_FN long long lbm_t(const struct lb_model *m, long long now)
{
	return m->marked && m->last > now ? m->last : now;
}

/* leaky_bucket.lua: out = {allowed, remaining, retry_after_ms, reset_ms}. */
MODEL_FN void lbm_acquire(struct lb_model *m, long long cap, double rate, long long n, long long now, long long out[4])
{
	long long t = lbm_t(m, now);

	lbm_leak(m, rate, t);
	out[0] = out[2] = 0;
	if (n > cap) {
		out[2] = -1;
	} else if (m->level + n <= cap) {
		out[0] = 1;
		if (m->level == 0)
			m->marked = 1, m->last = t, m->carry = 0;
		m->level += n;
		m->registered = 1;
	} else {
		out[2] = model_max(1, m->last + lbm_ms_until(m, rate, m->level + n - cap) - t);
	}
	out[1] = model_max(0, cap - m->level);
	out[3] = m->level == 0 ? 0 : model_max(0, m->last + lbm_ms_until(m, rate, 1) - t);
}

/* leaky_bucket_drain.lua for this one bucket: out = {drained, emptied}. */
MODEL_FN void lbm_drain(struct lb_model *m, double rate, long long now, long long out[2])
{
	long long t = lbm_t(m, now), before = m->level;

	out[0] = out[1] = 0;
	if (m->marked && lbm_leaked(rate, m->carry, t - m->last) < 1)
		return; /* nothing due: nothing looked at */
	lbm_leak(m, rate, t);
	out[0] = before - m->level;
	if (m->level == 0) {
		out[1] = m->registered;
		m->registered = 0;
	}
}

/* ---- the leaky bucket on key layout 2: recorded rate, due index, shard job ---------- */

/*
 * DESIGN.md "State model (key layout 2)": the client records the rate it
 * applied (on admission) and puts the path in its shard's due index at the
 * time its next entry leaks (ZADD LT: a path already there keeps the earlier
 * time); the worker's job over a shard takes the paths due by now, drains
 * each at the rate its meta records, and reschedules it at its next leak
 * (at least now + 1) or removes it once its bucket is empty.
 */
struct lb2_model {
	struct lb_model b; /* level, mark, carry; b.registered: in the due index */
	char rate_rec[24]; /* the rate the last admission recorded, as passed ("": none) */
	long long due;     /* its due time while b.registered (ms) */
};

/* leaky_bucket.lua on layout 2: out = {allowed, remaining, retry_after_ms, reset_ms}. */
MODEL_FN void lb2m_acquire(struct lb2_model *m, long long cap, const char *rate_s, long long n, long long now,
			   long long out[4])
{
	double rate = strtod(rate_s, NULL);
	int was = m->b.registered;

	lbm_acquire(&m->b, cap, rate, n, now, out);
	if (out[0]) {
		long long due = m->b.last + lbm_ms_until(&m->b, rate, 1) + model_skew_ms();

		snprintf(m->rate_rec, sizeof(m->rate_rec), "%s", rate_s);
		m->due = was && m->due < due ? m->due : due;
		m->b.registered = 1;
	}
}

/*
 * leaky_bucket_drain_shard.lua's job on one due path at now: the leak at the
 * horizon t = max(last, now - SKEW_MS) (DESIGN.md, "Time": never ahead of a
 * client whose clock lags Redis by up to SKEW_MS); adds the entries it
 * removed to *done; returns 1 when the path left the due index (emptied: its
 * meta goes too, as every client within the horizon is at t or later), else
 * 0 with m->due its next due time, the next leak + SKEW_MS.  (Every path of
 * a trace has a mark and a recorded rate once it is registered.)
 */
MODEL_FN int lb2m_job(struct lb2_model *m, long long now, long long *done)
{
	double rate = strtod(m->rate_rec, NULL), due;
	long long skew = model_skew_ms(), t, k, next;

	ck_assert_msg(m->b.marked && m->rate_rec[0], "model: a registered path without a mark or a rate");
	t = model_max(m->b.last, now - skew);
	due = rate * (double)(t - m->b.last) / 1000 + m->b.carry;
	k = (long long)floor(due + MODEL_EPS);
	if (k < 1) {
		next = m->b.last + lbm_ms_until(&m->b, rate, 1) + skew; /* nothing due: nothing written */
	} else if (k >= m->b.level) {
		*done += m->b.level; /* emptied: the bucket and its meta go */
		m->b.level = 0, m->b.marked = 0, m->b.carry = 0;
		m->rate_rec[0] = '\0';
		m->b.registered = 0;
		return 1;
	} else {
		*done += k;
		m->b.level -= k, m->b.last = t, m->b.carry = fmax(0, due - (double)k);
		next = t + lbm_ms_until(&m->b, rate, 1) + skew;
	}
	m->due = model_max(next, now + 1);
	return 0;
}

/*
 * The shard job over the paths m[0..n) at now, for those whose shard[i] is
 * `shard` (the job's limit above n): out = {done, removed, visited, skipped,
 * next_due (-1: none registered), backlog}.
 */
MODEL_FN void lb2m_shard_job(struct lb2_model *m, const unsigned *shard, int n, unsigned which, long long now,
			     long long out[6])
{
	out[0] = out[1] = out[2] = out[3] = out[5] = 0;
	out[4] = -1;
	for (int i = 0; i < n; i++) {
		if (shard[i] != which || !m[i].b.registered || m[i].due > now)
			continue;
		out[2]++;
		out[1] += lb2m_job(&m[i], now, &out[0]);
	}
	for (int i = 0; i < n; i++)
		if (shard[i] == which && m[i].b.registered && (out[4] < 0 || m[i].due < out[4]))
			out[4] = m[i].due;
}

/* ---- the token bucket ---------------------------------------------------------- */

struct tb_model {
	int stored;     /* the bucket hash exists (absent: full) */
	double tokens;  /* at last */
	long long last; /* ms of the latest admission: the mark */
	int registered;
};

/* a = {tokens, rate, want}: the bucket holds want tokens x ms after last. */
static int tbm_have_ok(const double *a, long long x)
{
	return a[0] + a[1] * (double)x / 1000 + MODEL_EPS >= a[2];
}

MODEL_FN long long tbm_ms_until(double tokens, double rate, long long want)
{
	const double a[3] = { tokens, rate, (double)want };

	return model_first_ms(tbm_have_ok, a);
}

/* token_bucket.lua: out = {allowed, remaining, retry_after_ms, reset_ms}. */
MODEL_FN void tbm_acquire(struct tb_model *m, long long cap, double rate, long long n, long long now, long long out[4])
{
	double t0 = m->stored ? fmin(m->tokens, (double)cap) : (double)cap, tok;
	long long last = m->stored ? m->last : now, t = model_max(now, last);

	tok = fmin((double)cap, t0 + rate * (double)(t - last) / 1000);
	out[0] = out[2] = 0;
	if (n > cap) {
		out[2] = -1;
	} else if (tok + MODEL_EPS >= (double)n) {
		out[0] = 1;
		tok = fmax(0, tok - (double)n);
		t0 = tok, last = t;
		m->stored = 1, m->tokens = tok, m->last = t, m->registered = 1;
	} else {
		out[2] = model_max(1, last + tbm_ms_until(t0, rate, n) - t);
	}
	out[1] = model_max(0, (long long)fmin((double)cap, floor(tok + MODEL_EPS)));
	out[3] = tok + MODEL_EPS >= (double)cap ? 0 : model_max(0, last + tbm_ms_until(t0, rate, cap) - t);
}

/* token_bucket_reclaim.lua for this one bucket: out = {reclaimed, emptied}. */
MODEL_FN void tbm_reclaim(struct tb_model *m, long long cap, double rate, long long now, long long skew,
			  long long out[2])
{
	long long by = now - skew;

	out[0] = out[1] = 0;
	if (m->stored) {
		double t0 = fmin(m->tokens, (double)cap);

		/* full by now - SKEW_MS: the same as absent to any client within the horizon */
		if (m->last > by || fmin((double)cap, t0 + rate * (double)(by - m->last) / 1000) + MODEL_EPS < (double)cap)
			return;
		m->stored = 0;
		out[0] = 1;
	}
	out[1] = m->registered;
	m->registered = 0;
}

/* ---- random traces ---------------------------------------------------------------- */

/* splitmix64 (Steele, Lea, Flood 2014): a seed gives the same trace everywhere. */
struct model_rng {
	uint64_t s;
};

MODEL_FN uint64_t model_rand(struct model_rng *g)
{
	uint64_t z = (g->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
MODEL_FN long long model_range(struct model_rng *g, long long lo, long long hi)
{
	return lo + (long long)(model_rand(g) % (uint64_t)(hi - lo + 1));
}

/* One call of a trace: a client's acquire at its own clock, or the worker's job at Redis time. */
struct model_call {
	int path;           /* index of the path */
	int job;            /* 1: the worker's drain or reclaim, at now = redis */
	long long redis;    /* Redis TIME in ms (virtual) */
	long long now;      /* the `now` given: redis - the caller's lag (a client may also be ahead) */
	long long n;        /* cost, 1..3 */
	long long cap;      /* the path's rule when called */
	char rate[24];
	int edited;         /* the path's rule changed with this call */
};

/* A rate: one of the awkward ones of the suites (10 per minute, 1000/3, ...) or a random decimal. */
MODEL_FN void model_pick_rate(struct model_rng *g, char *rate, size_t cap)
{
	static const char *const rates[] = { "1", "2", "0.5", "0.16666666666666666", "1.5", "7",
					     "333.33333333333331", "0.3", "10", "2.5", "0.05", "1000" };

	if (model_range(g, 0, 9) < 7)
		snprintf(rate, cap, "%s", rates[model_range(g, 0, TEST_N(rates) - 1)]);
	else
		snprintf(rate, cap, "%.4g", 0.05 + (double)model_range(g, 0, 200000) / 10000);
}

/*
 * A trace of `ncalls` calls over `npaths` paths (at most 8), from `seed`:
 * Redis time moves on by 0 (same ms) to 3 x SKEW_MS (idle) between calls;
 * `job_pct` % of the calls are the worker's job at Redis time, the others
 * clients' acquires of cost 1..3 at Redis time, lagging by up to SKEW_MS (a
 * few ahead by up to 1 s); capacities 1..40 and rates vary by path, and a
 * rule edit now and then changes a path's.
 */
MODEL_FN void model_trace(uint64_t seed, struct model_call *calls, int ncalls, int npaths, int job_pct, long long skew)
{
	struct model_rng g = { seed };
	long long cap[8], redis = 1700000000000LL + (long long)(seed % 1000) * 1000;
	char rate[8][24];

	ck_assert_int_le(npaths, 8);
	for (int p = 0; p < npaths; p++) {
		cap[p] = model_range(&g, 0, 4) ? model_range(&g, 1, 10) : model_range(&g, 11, 40);
		model_pick_rate(&g, rate[p], sizeof(rate[p]));
	}
	for (int i = 0; i < ncalls; i++) {
		struct model_call *k = &calls[i];
		long long u = model_range(&g, 0, 99), lag;

		redis += u < 30 ? 0 : u < 60 ? model_range(&g, 1, 20) : u < 85 ? model_range(&g, 1, 1000)
		       : u < 95 ? model_range(&g, 1, 5000) : model_range(&g, 1, 3 * skew);
		k->path = (int)model_range(&g, 0, npaths - 1);
		k->edited = model_range(&g, 0, 499) == 0;
		if (k->edited) {
			cap[k->path] = model_range(&g, 1, 10);
			model_pick_rate(&g, rate[k->path], sizeof(rate[0]));
		}
		u = model_range(&g, 0, 99);
		lag = u < 35 ? 0 : u < 65 ? model_range(&g, 1, skew) : u < 75 ? skew : u < 95 ? model_range(&g, 1, 200)
		    : -model_range(&g, 1, 1000);
		k->job = model_range(&g, 0, 99) < job_pct;
		k->redis = redis;
		k->now = k->job ? redis : redis - lag;
		k->n = model_range(&g, 1, 3);
		k->cap = cap[k->path];
		snprintf(k->rate, sizeof(k->rate), "%s", rate[k->path]);
	}
}

/* "call 17 of 10000 (client of path 2: capacity 3, rate 1.5, n 2, now 1700000004000, Redis time 1700000009000)" */
MODEL_FN const char *model_show_call(const struct model_call *calls, int i, int ncalls, char *buf, size_t cap)
{
	const struct model_call *k = &calls[i];

	snprintf(buf, cap, "call %d of %d (%s of path %d: capacity %lld, rate %s, n %lld, now %lld, Redis time %lld)", i,
		 ncalls, k->job ? "worker's job" : "client", k->path, k->cap, k->rate, k->n, k->now, k->redis);
	return buf;
}

/* ---- pipelined script calls -------------------------------------------------------- */

/* SCRIPT LOAD of the embedded script `name`: its SHA1 in sha. */
MODEL_FN void model_load(redisContext *rc, const char *name, char sha[41])
{
	const struct script_src *src = script_find(name);
	redisReply *r;

	ck_assert_msg(src != NULL, "lua/%s.lua is not embedded", name);
	r = test_cmd(rc, "SCRIPT LOAD %s", src->body);
	ck_assert_msg(r->type == REDIS_REPLY_STRING && r->len == 40, "SCRIPT LOAD %s failed", name);
	memcpy(sha, r->str, 41);
	freeReplyObject(r);
}

/* Queue EVALSHA sha nkeys argv[0..argc) (model_reply reads the answers, in order). */
MODEL_FN void model_send(redisContext *rc, const char *sha, int nkeys, int argc, const char *const *argv)
{
	const char *v[16];
	char nk[8];

	ck_assert_int_le(argc, 13);
	snprintf(nk, sizeof(nk), "%d", nkeys);
	v[0] = "EVALSHA", v[1] = sha, v[2] = nk;
	memcpy(v + 3, argv, (size_t)argc * sizeof(*argv));
	ck_assert_int_eq(redisAppendCommandArgv(rc, argc + 3, v, NULL), REDIS_OK);
}

/* The next answer of the pipeline; fails the test on an I/O error or an error reply. */
MODEL_FN redisReply *model_reply(redisContext *rc)
{
	void *r = NULL;

	ck_assert_msg(redisGetReply(rc, &r) == REDIS_OK && r, "redis I/O error: %s", rc->errstr);
	ck_assert_msg(((redisReply *)r)->type == REDIS_REPLY_ARRAY, "script error: %s",
		      ((redisReply *)r)->type == REDIS_REPLY_ERROR ? ((redisReply *)r)->str : "not an array");
	return r;
}

/* Whether reply r is the integers want[0..n); if not, both as text in msg. */
MODEL_FN int model_same(const redisReply *r, const long long *want, size_t n, char *msg, size_t cap)
{
	char got[256];
	size_t k = 0;
	int ok = r->elements == n;

	for (size_t i = 0; ok && i < n; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	if (ok)
		return 1;
	k += (size_t)snprintf(msg + k, cap - k, "script %s, model {", test_show_reply(r, got, sizeof(got)));
	for (size_t i = 0; i < n && k < cap; i++)
		k += (size_t)snprintf(msg + k, cap - k, "%s%lld", i ? ", " : "", want[i]);
	if (k < cap)
		snprintf(msg + k, cap - k, "}");
	return 0;
}

/* ---- a trace against a script and its model ------------------------------------------ */

#define MODEL_CALLS 10000
#define MODEL_PATHS 4
#define MODEL_CHUNK 500 /* calls per pipeline */

/* The suites' seeds: each gives its trace of MODEL_CALLS calls. */
static const uint64_t model_seeds[] = { 1, 2, 3, 2024, 0x5eed, 0xdeadbeef };

/* One algorithm's side of a trace (see model_run). */
struct model_alg {
	const char *script, *job_script; /* the client's and the worker's, by name */
	int nkeys;                       /* KEYS of either */
	int job_pct;                     /* % of the calls that are the worker's job */
	/* KEYS then ARGV of k's script call on `path` (path number k->path) into argv; returns how many. */
	int (*args)(const struct model_call *k, const char *path, const char *argv[13]);
	/* The model's answer to k, in want[4]; `where` names the call, for the side's own checks. */
	void (*answer)(void *ctx, const struct model_call *k, long long want[4], const char *where);
	void *ctx;
};

/*
 * The trace of `seed` over MODEL_PATHS paths ("/model/0", ...) through the
 * scripts, MODEL_CHUNK calls per pipeline, and through the model: every
 * reply must be the model's answer, or the test fails naming the call and
 * both.  (Virtual time runs about a thousand times faster than real time
 * here, so no key's real TTL, a second at the least, runs out while the model
 * still holds its state.)
 */
MODEL_FN void model_run(redisContext *rc, uint64_t seed, const struct model_alg *alg)
{
	struct model_call *calls = calloc(MODEL_CALLS, sizeof(*calls));
	char path[MODEL_PATHS][16], sha[2][41];

	ck_assert_ptr_nonnull(calls);
	model_trace(seed, calls, MODEL_CALLS, MODEL_PATHS, alg->job_pct, model_skew_ms());
	model_load(rc, alg->script, sha[0]);
	model_load(rc, alg->job_script, sha[1]);
	for (int p = 0; p < MODEL_PATHS; p++)
		snprintf(path[p], sizeof(path[p]), "/model/%d", p);
	for (int i0 = 0; i0 < MODEL_CALLS; i0 += MODEL_CHUNK) {
		int i1 = i0 + MODEL_CHUNK < MODEL_CALLS ? i0 + MODEL_CHUNK : MODEL_CALLS;

		for (int i = i0; i < i1; i++) {
			const char *argv[13];
			int argc = alg->args(&calls[i], path[calls[i].path], argv);

			model_send(rc, sha[calls[i].job], alg->nkeys, argc, argv);
		}
		for (int i = i0; i < i1; i++) {
			long long want[4] = { 0, 0, 1, 0 }; /* a job's: {done, emptied, 1 path, 0 skipped} */
			redisReply *r = model_reply(rc);
			char msg[512], where[320];
			int same;

			snprintf(where, sizeof(where), "seed %llu, ", (unsigned long long)seed);
			model_show_call(calls, i, MODEL_CALLS, where + strlen(where), sizeof(where) - strlen(where));
			alg->answer(alg->ctx, &calls[i], want, where);
			same = model_same(r, want, 4, msg, sizeof(msg));
			freeReplyObject(r);
			ck_assert_msg(same, "%s: %s", where, msg);
		}
	}
	free(calls);
}

/* ---- a trace against a client script of the calling contract and its shard job ------- */

/*
 * One algorithm's side of a trace on key layout 2 (model_run_contract): the
 * client's replies end with the rule applied, the job's reply has six
 * elements, and the paths are the side's (so that it can put several in one
 * shard).
 */
struct model_contract_alg {
	const char *script, *job_script; /* the client's and the shard job's, by name */
	int job_pct;                     /* % of the calls that are the worker's job */
	const char *const *paths;        /* MODEL_PATHS paths (C strings) */
	/* KEYS then ARGV of k's call on `path` into argv, the KEYS count in *nkeys; returns how many. */
	int (*args)(const struct model_call *k, const char *path, const char *argv[13], int *nkeys);
	/* The model's answer to k: want[0..*nwant), then (a client's call) the rule string *rule, else NULL. */
	void (*answer)(void *ctx, const struct model_call *k, long long want[6], size_t *nwant, const char **rule,
		       const char *where);
	/* After each pipeline: the side compares what else Redis holds (the due index) with its model; or NULL. */
	void (*check)(void *ctx, redisContext *rc, const char *where);
	void *ctx;
};

/* Whether r is the integers want[0..n) followed (rule not NULL) by the string rule; if not, both in msg. */
MODEL_FN int model_same_rule(const redisReply *r, const long long *want, size_t n, const char *rule, char *msg,
			     size_t cap)
{
	int ok = r->elements == n + (rule != NULL);

	for (size_t i = 0; ok && i < n; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	if (ok && rule)
		ok = r->element[n]->type == REDIS_REPLY_STRING && strcmp(r->element[n]->str, rule) == 0;
	if (ok)
		return 1;
	model_same(r, want, n, msg, cap); /* writes both */
	if (rule && strlen(msg) + strlen(rule) + 16 < cap)
		snprintf(msg + strlen(msg), cap - strlen(msg), " then rule \"%s\"", rule);
	return 0;
}

/*
 * model_run on the calling contract: the trace of `seed` over alg->paths,
 * MODEL_CHUNK calls per pipeline; every reply must be the model's answer,
 * and after each pipeline alg->check compares the rest.
 */
MODEL_FN void model_run_contract(redisContext *rc, uint64_t seed, const struct model_contract_alg *alg)
{
	struct model_call *calls = calloc(MODEL_CALLS, sizeof(*calls));
	char sha[2][41];

	ck_assert_ptr_nonnull(calls);
	model_trace(seed, calls, MODEL_CALLS, MODEL_PATHS, alg->job_pct, model_skew_ms());
	model_load(rc, alg->script, sha[0]);
	model_load(rc, alg->job_script, sha[1]);
	for (int i0 = 0; i0 < MODEL_CALLS; i0 += MODEL_CHUNK) {
		int i1 = i0 + MODEL_CHUNK < MODEL_CALLS ? i0 + MODEL_CHUNK : MODEL_CALLS;
		char where[320];

		for (int i = i0; i < i1; i++) {
			const char *argv[13];
			int nkeys = 0, argc = alg->args(&calls[i], alg->paths[calls[i].path], argv, &nkeys);

			model_send(rc, sha[calls[i].job], nkeys, argc, argv);
		}
		for (int i = i0; i < i1; i++) {
			long long want[6] = { 0 };
			size_t nwant = 0;
			const char *rule = NULL;
			redisReply *r = model_reply(rc);
			char msg[512];
			int same;

			snprintf(where, sizeof(where), "seed %llu, ", (unsigned long long)seed);
			model_show_call(calls, i, MODEL_CALLS, where + strlen(where), sizeof(where) - strlen(where));
			alg->answer(alg->ctx, &calls[i], want, &nwant, &rule, where);
			same = model_same_rule(r, want, nwant, rule, msg, sizeof(msg));
			freeReplyObject(r);
			ck_assert_msg(same, "%s: %s", where, msg);
		}
		if (alg->check) {
			snprintf(where, sizeof(where), "seed %llu, after call %d", (unsigned long long)seed, i1 - 1);
			alg->check(alg->ctx, rc, where);
		}
	}
	free(calls);
}

/* ---- keys that expire in virtual time ---------------------------------------------- */

/*
 * Virtual time runs thousands of times faster than Redis's clock, so Redis
 * would never expire a key of a scenario by itself.  A vkey plays its TTL out
 * in virtual time instead: the TTL a call sets (PTTL right after it, while the
 * key's real TTL is parked far away between calls) is counted from that call's
 * Redis time, and the key is deleted once virtual Redis time is past it.
 */
struct vkey {
	char key[200];
	long long expires; /* virtual ms it lives through; -1: no TTL (or absent) */
};

#define VKEY_PARKED 900000000LL /* ms: a real TTL no script sets */

MODEL_FN void vkey_init(struct vkey *k, const char *key)
{
	snprintf(k->key, sizeof(k->key), "%s", key);
	k->expires = -1;
}

/* Before a call at Redis time `redis`: the keys whose TTL has run out are gone. */
MODEL_FN void vkeys_before(redisContext *rc, struct vkey *k, int n, long long redis)
{
	for (int i = 0; i < n; i++) {
		if (k[i].expires < 0)
			continue;
		if (redis > k[i].expires) {
			freeReplyObject(test_cmd(rc, "DEL %s", k[i].key));
			k[i].expires = -1;
		} else {
			freeReplyObject(test_cmd(rc, "PEXPIRE %s %lld", k[i].key, VKEY_PARKED));
		}
	}
}

/* After it: a TTL the call set counts from `redis`; one it left alone stays as it was. */
MODEL_FN void vkeys_after(redisContext *rc, struct vkey *k, int n, long long redis)
{
	for (int i = 0; i < n; i++) {
		long long ttl = test_cmd_int(rc, "PTTL %s", k[i].key);

		if (ttl < 0)
			k[i].expires = -1;
		else if (ttl <= VKEY_PARKED - 60000)
			k[i].expires = redis + ttl;
	}
}

#endif

#ifndef SLUICE_TEST_WINDOW_TRACE_H
#define SLUICE_TEST_WINDOW_TRACE_H
/*
 * What the suites of the window algorithms (check_sliding_log.c,
 * check_sliding_counter.c, check_fixed_window.c) share on top of
 * tests/script_fixture.h:
 *
 *   - SKEW_MS, the skew horizon of lua/lib/skew.lua;
 *   - skew_scenario(): issue 8's clients that lag Redis, in virtual time;
 *   - trace_run(): random traces of client calls, worker jobs, lost TTLs,
 *     rule edits and key expiries, every reply compared with a reference
 *     model that the suite writes from DESIGN.md (struct trace_ops).
 *
 * Virtual time: R is Redis's clock, as the worker's jobs see it (they get R
 * as their explicit now); clients call with now in [R - SKEW_MS, R], the
 * clocks DESIGN.md's "Time" promises to hold the rule for.  Keys expire when
 * R reaches the end of the TTL the scripts set (the test deletes them then;
 * Redis's own, real-time, expiry is seconds later).
 *
 * Header-only and static, as script_fixture.h.
 */
#include "tests/script_fixture.h"
/* The seeded generator (model_rng), model_max and model_skew_ms of the buckets' models. */
#include "tests/bucket_model.h"

#include <stdint.h>

#define WINDOW_TRACE static __attribute__((unused))

/* The skew horizon of lua/lib/skew.lua, in ms (DESIGN.md, "Time"), read once from the embedded scripts. */
WINDOW_TRACE long long trace_skew_ms(void)
{
	static long long skew = -1;

	if (skew < 0)
		skew = model_skew_ms();
	return skew;
}
#define SKEW_MS trace_skew_ms()

/* floor(a / b) for b > 0. */
WINDOW_TRACE long long floor_div(long long a, long long b)
{
	return a / b - (a % b < 0);
}

/* ---- the skew scenario (issue 8, item 3) ---------------------------------------- */

#define SKEW_LAG_MS 5000   /* the clients' clocks behind Redis */
#define SKEW_EVERY_MS 50   /* one request per 50 ms: 20 per second */
#define SKEW_RUN_MS 12000  /* for 12 s */
#define SKEW_TICK_MS 1000  /* the worker's period */
#define SKEW_AFTER_MS 40000 /* the worker runs on, alone, until then */

struct skew_run {
	int admitted;
	long long at[64];     /* the clients' nows of the first 64 admissions */
	long long gone_at;    /* Redis time a tick of the worker found the key gone, -1 if never */
};

/*
 * From Redis time r0: a call every SKEW_EVERY_MS ms for SKEW_RUN_MS, each
 * with the client's now = Redis time - SKEW_LAG_MS (`call(now)` returns 1 when
 * admitted); with `job`, the worker's job at Redis time every SKEW_TICK_MS
 * (`job(R)`), before the call of the same ms, and on alone after the calls
 * until r0 + SKEW_AFTER_MS.  `after(R)`, when given, runs after every event.
 * `key` is the path's state key, to find when it goes.
 */
WINDOW_TRACE void skew_scenario(long long r0, const char *key, int (*call)(long long now),
				void (*job)(long long r), void (*after)(long long r), struct skew_run *run)
{
	long long end = job ? r0 + SKEW_AFTER_MS : r0 + SKEW_RUN_MS;

	memset(run, 0, sizeof(*run));
	run->gone_at = -1;
	for (long long r = r0; r < end; r += SKEW_EVERY_MS) {
		if (job && (r - r0) % SKEW_TICK_MS == 0) {
			job(r);
			if (run->admitted && run->gone_at < 0 && !test_cmd_int(c, "EXISTS %s", key))
				run->gone_at = r;
			if (after)
				after(r);
		}
		if (r - r0 >= SKEW_RUN_MS)
			continue;
		if (call(r - SKEW_LAG_MS)) {
			if (run->admitted < TEST_N(run->at))
				run->at[run->admitted] = r - SKEW_LAG_MS;
			run->admitted++;
		}
		if (after)
			after(r);
	}
}

/*
 * The admissions of a rule of 10 per 10 s in the scenario, whatever the
 * algorithm (the log, the counter of ten 1 s sub-windows, the fixed window),
 * with the clients' timeline c0 + 0 .. c0 + 11950 aligned to 10 s: the first
 * ten calls (c0 + 0 .. 450), then nothing until c0 + 10000, when the first
 * entry, sub-window or window has left, then the next ten (c0 + 10000 ..
 * 10450).  20 in 12 s; what the old worker left a lagging client was 30
 * (counter, fixed window) or entries gone after ~6 s (log).
 */
WINDOW_TRACE void skew_check_admissions(const struct skew_run *run, long long c0, const char *what)
{
	ck_assert_msg(run->admitted == 20, "%s: %d admitted in 12 s, want 20", what, run->admitted);
	for (int i = 0; i < 20; i++) {
		long long want = c0 + (i / 10) * 10000 + (i % 10) * SKEW_EVERY_MS;

		ck_assert_msg(run->at[i] == want, "%s: admission %d at %lld, want %lld", what, i, run->at[i] - c0,
			      want - c0);
	}
}

/* ---- random traces against a reference model -------------------------------------- */

/* A rule's limit: mostly small, so that traces hit it often. */
WINDOW_TRACE long long trace_limit(struct model_rng *r)
{
	return model_range(r, 0, 9) < 8 ? model_range(r, 1, 8) : model_range(r, 9, 40);
}

/* A window in ms: shorter than, about and longer than the horizon. */
WINDOW_TRACE long long trace_window(struct model_rng *r)
{
	switch (model_range(r, 0, 6)) {
	case 0:
	case 1:
		return model_range(r, 1, 200);
	case 2:
	case 3:
		return model_range(r, 201, 5000);
	case 4:
	case 5:
		return model_range(r, 5001, 20000);
	}
	return 60000;
}

struct trace_rule {
	long long limit, window, subs; /* subs: the sliding counter's sub_windows */
};

/* The rule of the sliding log and the fixed window: limit and window_ms. */
WINDOW_TRACE void trace_window_rule(struct model_rng *r, struct trace_rule *rule)
{
	rule->limit = trace_limit(r);
	rule->window = trace_window(r);
	rule->subs = 0;
}

/* Their job's ARGV per path after the path: window_ms. */
WINDOW_TRACE int trace_window_args(const struct trace_rule *rule, const char **argv)
{
	argv[0] = num(rule->window);
	return 1;
}

#define TRACE_PATHS 4

/* One path of a trace: its rule, its clients, what Redis holds of it, its model. */
struct trace_path {
	char name[16];
	char key[64];
	struct trace_rule rule;
	long long lag;       /* the lag of this path's usual client */
	long long last_now;  /* the now of its previous call */
	/* What Redis holds, by the model (the model's own callbacks keep it too). */
	int exists, registered, has_ttl;
	long long expire_at;   /* Redis time the key's TTL ends, when has_ttl */
	long long pexpiretime; /* PEXPIRETIME read when the TTL was set */
	void *model;
};

/*
 * An algorithm under trace: its scripts, and the reference model.  The
 * client script's ARGV are path, limit, then job_args (window [, subs]), now;
 * the job's ARGV per path are path, then job_args.
 */
struct trace_ops {
	const char *algo;     /* the client script, also the key's kind */
	const char *job;      /* the worker's batch script */
	const char *registry;
	void (*rule)(struct model_rng *r, struct trace_rule *rule);
	int (*job_args)(const struct trace_rule *rule, const char **argv); /* returns how many */
	void *(*model_new)(void);
	void (*model_free)(void *model);
	/* A call at now: the reply want[4]; the TTL it sets in ms when admitted, else -1. */
	long long (*call)(struct trace_path *p, long long now, long long want[4]);
	/* The job at Redis time r: what it counts as done (want[0]) and whether the
	 * path left the registry (want[1]); updates p; the TTL it gives, or -1. */
	long long (*job_at)(struct trace_path *p, long long r, long long want[2]);
	/* The key is gone (its TTL ended): Redis holds nothing of the path now. */
	void (*gone)(struct trace_path *p);
	/* The time, in the path's own timeline, its oldest held state (entry,
	 * sub-window, window) leaves the window; -1 when it holds none. */
	long long (*edge)(const struct trace_path *p);
};

struct trace {
	const struct trace_ops *ops;
	uint64_t seed;
	long long pos; /* events so far: the position a failure names */
	long long r;   /* Redis time */
	char sha[41], job_sha[41];
	struct trace_path paths[TRACE_PATHS];
};

WINDOW_TRACE void trace_load(const char *name, char sha[41])
{
	redisReply *r = test_cmd(c, "SCRIPT LOAD %s", script_find(name)->body);

	ck_assert_msg(r->type == REDIS_REPLY_STRING && r->len == 40, "SCRIPT LOAD %s", name);
	memcpy(sha, r->str, 41);
	freeReplyObject(r);
}

WINDOW_TRACE redisReply *trace_reply(void)
{
	void *r = NULL;

	ck_assert_int_eq(redisGetReply(c, &r), REDIS_OK);
	return r;
}

/* "/trace/1: limit 3, window_ms 1000[, sub_windows 4]" for p, or for every path of the trace when p is NULL. */
WINDOW_TRACE void trace_show_rules(const struct trace *tr, const struct trace_path *p, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < TRACE_PATHS; i++) {
		const struct trace_path *q = &tr->paths[i];

		if (p && p != q)
			continue;
		len += (size_t)snprintf(buf + len, cap - len, "%s%s: limit %lld, window_ms %lld", len ? "; " : "",
					q->name, q->rule.limit, q->rule.window);
		if (q->rule.subs)
			len += (size_t)snprintf(buf + len, cap - len, ", sub_windows %lld", q->rule.subs);
		if (len >= cap)
			break;
	}
}

/* Fails the test unless the reply `r` (to a call of path p, or to a job: NULL) is the array want[0..n); frees r. */
WINDOW_TRACE void trace_compare(const struct trace *tr, const struct trace_path *p, const char *event,
				redisReply *r, const long long *want, size_t n)
{
	char got[256], model[256], rule[512];
	int same = r->type == REDIS_REPLY_ARRAY && r->elements == n;
	size_t len = 0;

	for (size_t i = 0; same && i < n; i++)
		same = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	if (!same) {
		test_show_reply(r, got, sizeof(got));
		trace_show_rules(tr, p, rule, sizeof(rule));
		for (size_t i = 0; i < n; i++)
			len += (size_t)snprintf(model + len, sizeof(model) - len, "%s%lld", i ? ", " : "{", want[i]);
		ck_abort_msg("%s trace, seed %llu, event %lld (%s; Redis time %lld; %s): script %s, model %s}",
			     tr->ops->algo, (unsigned long long)tr->seed, tr->pos, event, tr->r, rule, got, model);
	}
	freeReplyObject(r);
}

/* The TTL the path's key must have now: the one last set, none, or no key. */
WINDOW_TRACE void trace_check_ttl(const struct trace *tr, const struct trace_path *p, long long pexpiretime,
				  const char *event)
{
	long long want = !p->exists ? -2 : p->has_ttl ? p->pexpiretime : -1;

	ck_assert_msg(pexpiretime == want, "%s trace, seed %llu, event %lld (%s): %s PEXPIRETIME %lld, want %lld",
		      tr->ops->algo, (unsigned long long)tr->seed, tr->pos, event, p->key, pexpiretime, want);
}

/* Redis's clock in ms from a TIME reply; frees it. */
WINDOW_TRACE long long trace_time_ms(redisReply *r)
{
	long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;

	freeReplyObject(r);
	return ms;
}

/*
 * A TTL of `ttl` ms was just set by a script that ran between the TIME
 * readings t0 and t1 (ms), and PEXPIRETIME read right after: to the ms when
 * t0 = t1 (Redis measures the script's PEXPIRE from when it ran), else within
 * them.  Keep it.
 */
WINDOW_TRACE void trace_set_ttl(const struct trace *tr, struct trace_path *p, long long ttl, long long t0,
				long long t1, long long pexpiretime, const char *event)
{
	ck_assert_msg(pexpiretime >= t0 + ttl && pexpiretime <= t1 + ttl,
		      "%s trace, seed %llu, event %lld (%s): %s expires %lld ms after the call, want %lld",
		      tr->ops->algo, (unsigned long long)tr->seed, tr->pos, event, p->key, pexpiretime - t0, ttl);
	p->has_ttl = 1;
	p->expire_at = tr->r + ttl;
	p->pexpiretime = pexpiretime;
}

/* One client call at now, with the key's dump before and after and its TTL, in one round trip. */
WINDOW_TRACE void trace_call(struct trace *tr, struct trace_path *p, long long now)
{
	const char *argv[12] = { "EVALSHA", tr->sha, "2", p->key, tr->ops->registry, p->name };
	char lim[24], nw[24], event[96];
	int n = 6;
	long long want[4], ttl, t0, t1;
	redisReply *before, *res, *after, *pexp;

	snprintf(lim, sizeof(lim), "%lld", p->rule.limit);
	snprintf(nw, sizeof(nw), "%lld", now);
	argv[n++] = lim;
	n += tr->ops->job_args(&p->rule, argv + n);
	argv[n++] = nw;
	redisAppendCommand(c, "DUMP %s", p->key);
	redisAppendCommand(c, "TIME");
	redisAppendCommandArgv(c, n, argv, NULL);
	redisAppendCommand(c, "TIME");
	redisAppendCommand(c, "DUMP %s", p->key);
	redisAppendCommand(c, "PEXPIRETIME %s", p->key);
	before = trace_reply();
	t0 = trace_time_ms(trace_reply());
	res = trace_reply();
	t1 = trace_time_ms(trace_reply());
	after = trace_reply();
	pexp = trace_reply();
	snprintf(event, sizeof(event), "call at now %lld, R - %lld", now, tr->r - now);
	ttl = tr->ops->call(p, now, want);
	trace_compare(tr, p, event, res, want, 4);
	if (want[0]) {
		p->exists = p->registered = 1;
		trace_set_ttl(tr, p, ttl, t0, t1, pexp->integer, event);
	} else {
		/* A rejected call writes nothing and extends no TTL. */
		ck_assert_msg(before->type == after->type && before->len == after->len &&
				      (before->type != REDIS_REPLY_STRING || !memcmp(before->str, after->str, before->len)),
			      "%s trace, seed %llu, event %lld (%s): a rejected call changed %s", tr->ops->algo,
			      (unsigned long long)tr->seed, tr->pos, event, p->key);
		trace_check_ttl(tr, p, pexp->integer, event);
	}
	freeReplyObject(before);
	freeReplyObject(after);
	freeReplyObject(pexp);
}

/* The worker's job over every path of the trace at Redis time r: one batch, as sluiced sends it. */
WINDOW_TRACE void trace_job(struct trace *tr)
{
	const char *argv[4 + TRACE_PATHS * 5];
	char nkeys[8], now[24], event[64];
	long long want[4] = { 0, 0, TRACE_PATHS, 0 }, ttl[TRACE_PATHS], t0, t1;
	int n = 0;
	redisReply *res;

	snprintf(nkeys, sizeof(nkeys), "%d", 1 + TRACE_PATHS);
	snprintf(now, sizeof(now), "%lld", tr->r);
	snprintf(event, sizeof(event), "%s at %lld", tr->ops->job, tr->r);
	argv[n++] = "EVALSHA";
	argv[n++] = tr->job_sha;
	argv[n++] = nkeys;
	argv[n++] = tr->ops->registry;
	for (int i = 0; i < TRACE_PATHS; i++)
		argv[n++] = tr->paths[i].key;
	argv[n++] = now;
	for (int i = 0; i < TRACE_PATHS; i++) {
		struct trace_path *p = &tr->paths[i];
		long long w[2];

		argv[n++] = p->name;
		n += tr->ops->job_args(&p->rule, argv + n);
		ttl[i] = tr->ops->job_at(p, tr->r, w);
		want[0] += w[0];
		want[1] += w[1];
	}
	redisAppendCommand(c, "TIME");
	redisAppendCommandArgv(c, n, argv, NULL);
	redisAppendCommand(c, "TIME");
	t0 = trace_time_ms(trace_reply());
	res = trace_reply();
	t1 = trace_time_ms(trace_reply());
	trace_compare(tr, NULL, event, res, want, 4);
	for (int i = 0; i < TRACE_PATHS; i++) {
		struct trace_path *p = &tr->paths[i];
		redisReply *pexp = test_cmd(c, "PEXPIRETIME %s", p->key);

		if (ttl[i] >= 0)
			trace_set_ttl(tr, p, ttl[i], t0, t1, pexp->integer, event);
		else
			trace_check_ttl(tr, p, pexp->integer, event);
		ck_assert_msg(test_cmd_int(c, "SISMEMBER %s %s", tr->ops->registry, p->name) == p->registered,
			      "%s trace, seed %llu, event %lld (%s): %s registered %d, want %d", tr->ops->algo,
			      (unsigned long long)tr->seed, tr->pos, event, p->name, !p->registered, p->registered);
		freeReplyObject(pexp);
	}
}

/* Redis time moves on: mostly not at all or a few ms, now and then for longer than a window and the horizon. */
WINDOW_TRACE long long trace_step(struct model_rng *r)
{
	long long x = model_range(r, 0, 99);

	if (x < 45)
		return 0;
	if (x < 70)
		return model_range(r, 1, 20);
	if (x < 90)
		return model_range(r, 1, 400);
	if (x < 98)
		return model_range(r, 1, 4000);
	return model_range(r, 1, 30000);
}

/*
 * A client's now at Redis time redis_ms, for a path whose usual lag is `lag`
 * and whose last call came at *last_now (updated): on time, the usual lag, the
 * same ms as the last call, any lag, the whole horizon; never more than
 * SKEW_MS behind.  Shared by the window traces and tests/log_model.h.
 */
WINDOW_TRACE long long trace_client_now(struct model_rng *r, long long lag, long long *last_now, long long redis_ms)
{
	long long x = model_range(r, 0, 99), now;

	if (x < 35)
		now = redis_ms;
	else if (x < 60)
		now = redis_ms - lag;
	else if (x < 75)
		now = *last_now;
	else if (x < 90)
		now = redis_ms - model_range(r, 0, SKEW_MS);
	else
		now = redis_ms - SKEW_MS;
	now = model_max(now, redis_ms - SKEW_MS);
	*last_now = now;
	return now;
}

/* A client's now for path p (trace_client_now). */
WINDOW_TRACE long long trace_now(struct model_rng *r, struct trace_path *p, long long redis_ms)
{
	return trace_client_now(r, p->lag, &p->last_now, redis_ms);
}

/*
 * A trace of `calls` client calls (seed `seed`) over TRACE_PATHS paths with
 * random rules, among them, at random instants: the worker's job over all
 * paths (2.5%), a lost TTL (0.5%: PERSIST, as if a client had written without
 * one) and a rule edit of a path's limit (1%); keys expire as Redis time
 * passes their TTL.  And, where off-by-one errors hide (3%): Redis time moves
 * to 1 ms before or to the instant a path's oldest state leaves the window,
 * for a client on time or one that lags by the whole horizon, and the job
 * (half of the time) and that client's call run there.  Every reply, TTL and
 * registry membership is compared with the model.
 */
WINDOW_TRACE void trace_run(const struct trace_ops *ops, uint64_t seed, int calls)
{
	struct trace tr = { .ops = ops, .seed = seed };
	struct model_rng rng = { seed };

	trace_load(ops->algo, tr.sha);
	trace_load(ops->job, tr.job_sha);
	tr.r = 1700000000000LL + model_range(&rng, 0, 999999);
	for (int i = 0; i < TRACE_PATHS; i++) {
		struct trace_path *p = &tr.paths[i];

		snprintf(p->name, sizeof(p->name), "/trace/%d", i);
		snprintf(p->key, sizeof(p->key), "%s", test_key(p->name, ops->algo));
		ops->rule(&rng, &p->rule);
		p->lag = model_range(&rng, 0, SKEW_MS);
		p->last_now = tr.r;
		p->model = ops->model_new();
	}
	for (int done = 0; done < calls; tr.pos++) {
		long long x = model_range(&rng, 0, 999), lag = model_range(&rng, 0, 1) * SKEW_MS;
		struct trace_path *p = &tr.paths[model_range(&rng, 0, TRACE_PATHS - 1)];
		long long edge = ops->edge(p) + lag - model_range(&rng, 0, 1);

		if (x >= 970 && ops->edge(p) >= 0 && edge > tr.r)
			tr.r = edge;
		else
			tr.r += trace_step(&rng);
		for (int i = 0; i < TRACE_PATHS; i++) {
			struct trace_path *q = &tr.paths[i];

			if (q->exists && q->has_ttl && tr.r >= q->expire_at) {
				freeReplyObject(test_cmd(c, "DEL %s", q->key));
				q->exists = q->has_ttl = 0;
				ops->gone(q);
			}
		}
		if (x >= 970 && tr.r == edge) {
			if (x % 2)
				trace_job(&tr);
			p->last_now = tr.r - lag;
			trace_call(&tr, p, tr.r - lag);
			done++;
		} else if (x < 25) {
			trace_job(&tr);
		} else if (x < 30) {
			if (p->exists) {
				freeReplyObject(test_cmd(c, "PERSIST %s", p->key));
				p->has_ttl = 0;
			}
		} else if (x < 40) {
			p->rule.limit = trace_limit(&rng);
		} else {
			trace_call(&tr, p, trace_now(&rng, p, tr.r));
			done++;
		}
	}
	for (int i = 0; i < TRACE_PATHS; i++)
		ops->model_free(tr.paths[i].model);
}

#endif

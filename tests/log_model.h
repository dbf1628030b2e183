#ifndef SLUICE_TEST_LOG_MODEL_H
#define SLUICE_TEST_LOG_MODEL_H
/*
 * The sliding log of DESIGN.md ("Time", "State model (key layout 2)", the
 * due index) written again from it and lua/README.md, not from the scripts,
 * for check_sliding_log.c's random traces, and the traces themselves:
 *
 *   - an entry admitted at s counts for calls served in [s, s + window); a
 *     call at now is served at t = max(now, mark), the mark being the newest
 *     entry ever admitted (what Redis forgets of it no call within the skew
 *     horizon can tell); a call of cost n is admitted, as n entries at t,
 *     when the live entries it sees plus n are at most limit, and then
 *     removes what has left the window at t (with its window); a rejected
 *     call writes nothing;
 *   - the meta records the limit and window of the latest admission; log and
 *     meta live until t + window + SKEW_MS, measured from the caller's now;
 *   - the due index: a path is due when the prune first has work, oldest
 *     entry + recorded window + SKEW_MS; a client adds it there (ZADD LT) when
 *     the log held nothing or the window changes; a new member drops up to
 *     two members 60 s overdue whose keys are gone;
 *   - the prune (the shard job at Redis time R, over the due paths): removes
 *     the entries that have left the recorded window at max(mark, R -
 *     SKEW_MS); a path left with nothing leaves the index and loses its meta,
 *     the others are due when their oldest entry goes so.
 *
 * Virtual time: R is Redis's clock as the jobs see it (explicit now); clients
 * call with now in [R - SKEW_MS, R]; keys expire when R reaches the end of
 * the TTL the script set (the test deletes them then; Redis's own expiry is
 * pushed far out after each check).  Every path of a trace is in one shard,
 * so one shard job call covers them all, as sluiced's does.
 *
 * Header-only and static, as tests/window_trace.h, whose skew scenario,
 * rule and step generators it uses.
 */
#include "core/shard.h"
#include "tests/window_trace.h"

#include <stdarg.h>

#define LOG_MODEL static __attribute__((unused))

#define LM_PATHS 4
#define LM_DEAD_AFTER_MS 60000 /* lib/due.lua: a member this overdue whose keys are gone is dropped */
#define LM_DEAD_PER_CALL 2
#define LM_FAR_MS 100000000000LL /* the test pushes Redis's real expiry this far beyond the checked one */

struct lm_path {
	char name[32];
	char key[96], meta_key[96];
	long long limit, window; /* what its clients pass now */
	long long *s;            /* the score of every entry ever admitted, ascending */
	size_t n, cap, kept;     /* Redis holds s[kept..n) */
	int meta;                /* the meta exists */
	long long rec_limit, rec_window;
	int has_ttl;
	long long expire_at; /* R at which the log and the meta expire */
	long long pexp_log, pexp_meta; /* what the test set their PEXPIRETIME to (real expiry, pushed out) */
	int registered;
	long long due;
	long long lag, last_now;
};

struct lm {
	struct lm_path p[LM_PATHS];
	char registry[96];
};

/* The path's log is held in Redis (has entries). */
LOG_MODEL int lm_held(const struct lm_path *p)
{
	return p->kept < p->n;
}

LOG_MODEL void lm_push(struct lm_path *p, long long t)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 256;
		p->s = realloc(p->s, p->cap * sizeof(*p->s));
		ck_assert_ptr_nonnull(p->s);
	}
	p->s[p->n++] = t;
}

/* lib/due.lua's dead-member drop after a path came new into the index at the caller's now:
 * the first LM_DEAD_PER_CALL members by (score, name) overdue by LM_DEAD_AFTER_MS leave it when
 * both their keys are gone. */
LOG_MODEL void lm_drop_dead(struct lm *m, long long now)
{
	struct lm_path *v[LM_PATHS];
	int nv = 0;

	for (int i = 0; i < LM_PATHS; i++)
		if (m->p[i].registered && m->p[i].due <= now - LM_DEAD_AFTER_MS)
			v[nv++] = &m->p[i];
	for (int i = 1; i < nv; i++) /* insertion sort by (due, name) */
		for (int j = i; j > 0 && (v[j]->due < v[j - 1]->due ||
					  (v[j]->due == v[j - 1]->due && strcmp(v[j]->name, v[j - 1]->name) < 0));
		     j--) {
			struct lm_path *x = v[j];

			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	for (int i = 0; i < nv && i < LM_DEAD_PER_CALL; i++)
		if (!lm_held(v[i]) && !v[i]->meta)
			v[i]->registered = 0;
}

/*
 * A call of cost nc at now: the reply into want[4] (allowed, remaining,
 * retry_after_ms, reset_ms); returns the TTL it gives the log and the meta
 * when admitted, else -1.
 */
LOG_MODEL long long lm_call(struct lm *m, struct lm_path *p, long long now, long long nc, long long want[4])
{
	long long w = p->window, limit = p->limit, skew = SKEW_MS;
	long long t = p->n ? model_max(now, p->s[p->n - 1]) : now;
	size_t lo = p->kept;
	long long count;

	while (lo < p->n && p->s[lo] <= t - w)
		lo++;
	count = (long long)(p->n - lo);
	if (nc > limit || count + nc > limit) {
		want[0] = 0;
		want[1] = model_max(0, limit - count);
		want[3] = count ? model_max(0, p->s[lo] + w - t) : 0;
		want[2] = nc > limit ? -1 : model_max(1, p->s[lo + (size_t)(count + nc - limit - 1)] + w - t);
		return -1;
	}
	{
		int reg = !lm_held(p) || !p->meta || p->rec_window != w;
		long long due;

		p->kept = lo;
		for (long long i = 0; i < nc; i++)
			lm_push(p, t);
		p->meta = 1;
		p->rec_limit = limit;
		p->rec_window = w;
		want[0] = 1;
		want[1] = limit - count - nc;
		want[2] = 0;
		want[3] = p->s[p->kept] + w - t;
		due = p->s[p->kept] + w + skew;
		if (reg) {
			if (p->registered) {
				p->due = due < p->due ? due : p->due;
			} else {
				p->registered = 1;
				p->due = due;
				lm_drop_dead(m, now);
			}
		}
	}
	return t + w + skew - now;
}

/*
 * The shard job at Redis time r: its reply into want[6] (pruned, removed,
 * visited, skipped, next_due, backlog).
 */
LOG_MODEL void lm_job(struct lm *m, long long r, long long want[6])
{
	long long skew = SKEW_MS, next = -1;

	memset(want, 0, 6 * sizeof(*want));
	for (int i = 0; i < LM_PATHS; i++) {
		struct lm_path *p = &m->p[i];
		size_t k;

		if (!p->registered || p->due > r)
			continue;
		want[2]++;
		if (!p->meta) { /* records no window: here only with both keys gone */
			ck_assert_msg(!lm_held(p), "model: a log without its meta");
			p->registered = 0;
			want[1]++;
			continue;
		}
		k = p->kept;
		while (k < p->n && p->s[k] <= r - skew - p->rec_window)
			k++;
		want[0] += (long long)(k - p->kept);
		p->kept = k;
		if (!lm_held(p)) {
			p->registered = 0;
			p->meta = 0;
			want[1]++;
		} else {
			p->due = model_max(p->s[p->kept] + p->rec_window + skew, r + 1);
		}
	}
	for (int i = 0; i < LM_PATHS; i++)
		if (m->p[i].registered && (next < 0 || m->p[i].due < next))
			next = m->p[i].due;
	want[4] = next;
}

/* Redis time r passes the TTL of some keys: they are gone (the test deletes them). */
LOG_MODEL void lm_expire(struct lm *m, long long r)
{
	for (int i = 0; i < LM_PATHS; i++) {
		struct lm_path *p = &m->p[i];

		if (p->has_ttl && r >= p->expire_at && (lm_held(p) || p->meta)) {
			freeReplyObject(test_cmd(c, "DEL %s %s", p->key, p->meta_key));
			p->kept = p->n;
			p->meta = 0;
			p->has_ttl = 0;
		}
	}
}

/* ---- the trace ------------------------------------------------------------------- */

struct lm_trace {
	struct lm m;
	uint64_t seed;
	long long pos, r;
	char sha[41], job_sha[41];
	long long calls, admitted, jobs, pruned;
};

LOG_MODEL redisReply *lm_reply(void)
{
	void *r = NULL;

	ck_assert_int_eq(redisGetReply(c, &r), REDIS_OK);
	return r;
}

LOG_MODEL long long lm_time_ms(redisReply *r)
{
	long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;

	freeReplyObject(r);
	return ms;
}

/* A ZSCORE reply as the model states it: the score, or -1 for none. */
LOG_MODEL long long lm_score(redisReply *r)
{
	long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

	ck_assert_msg(r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL, "ZSCORE answered type %d", r->type);
	freeReplyObject(r);
	return v;
}

#define lm_fail(tr, ...)                                                                                      \
	ck_abort_msg("sliding_log trace, seed %llu, event %lld, Redis time %lld: %s", (unsigned long long)(tr)->seed, \
		     (tr)->pos, (tr)->r, lm_msg(__VA_ARGS__))

static __attribute__((unused, format(printf, 1, 2))) const char *lm_msg(const char *fmt, ...)
{
	static char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return buf;
}

/* The client reply `r` is {want[0..4), ""}; frees r. */
LOG_MODEL void lm_check_reply(struct lm_trace *tr, const struct lm_path *p, const char *event, redisReply *r,
			      const long long want[4])
{
	char got[256];
	int same = r->type == REDIS_REPLY_ARRAY && r->elements == 5 && r->element[4]->type == REDIS_REPLY_STRING &&
		   r->element[4]->len == 0;

	for (size_t i = 0; same && i < 4; i++)
		same = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	if (!same)
		lm_fail(tr, "%s of %s (limit %lld, window_ms %lld): script %s, model {%lld, %lld, %lld, %lld, \"\"}", event,
			p->name, p->limit, p->window, test_show_reply(r, got, sizeof(got)), want[0], want[1], want[2],
			want[3]);
	freeReplyObject(r);
}

LOG_MODEL int lm_same_bulk(const redisReply *a, const redisReply *b)
{
	return a->type == b->type && a->len == b->len && (a->type != REDIS_REPLY_STRING || !memcmp(a->str, b->str, a->len));
}

/* One client call of p at now with cost nc; every reply, TTL and due time checked. */
LOG_MODEL void lm_trace_call(struct lm_trace *tr, struct lm_path *p, long long now, long long nc)
{
	char nw[24], ncs[8], lim[24], win[24], event[96];
	const char *argv[16] = { "EVALSHA", tr->sha, "5", p->key, p->meta_key, tr->m.registry };
	redisReply *dl0, *dm0, *z0, *res, *dl1, *dm1, *z1, *pl, *pm;
	long long want[4], ttl, t0, t1;
	int argc = 6;

	snprintf(nw, sizeof(nw), "%lld", now);
	snprintf(ncs, sizeof(ncs), "%lld", nc);
	snprintf(lim, sizeof(lim), "%lld", p->limit);
	snprintf(win, sizeof(win), "%lld", p->window);
	argv[argc++] = test_shard_key("sliding_log", p->name, "rules");
	argv[argc++] = test_shard_key("sliding_log", p->name, "stats");
	argv[argc++] = p->name;
	argv[argc++] = nc == 1 && tr->pos % 2 ? "" : ncs; /* "" is 1 */
	argv[argc++] = nw;
	argv[argc++] = "";
	argv[argc++] = lim;
	argv[argc++] = win;
	redisAppendCommand(c, "DUMP %s", p->key);
	redisAppendCommand(c, "DUMP %s", p->meta_key);
	redisAppendCommand(c, "ZSCORE %s %s", tr->m.registry, p->name);
	redisAppendCommand(c, "TIME");
	redisAppendCommandArgv(c, argc, argv, NULL);
	redisAppendCommand(c, "TIME");
	redisAppendCommand(c, "DUMP %s", p->key);
	redisAppendCommand(c, "DUMP %s", p->meta_key);
	redisAppendCommand(c, "ZSCORE %s %s", tr->m.registry, p->name);
	redisAppendCommand(c, "PEXPIRETIME %s", p->key);
	redisAppendCommand(c, "PEXPIRETIME %s", p->meta_key);
	dl0 = lm_reply();
	dm0 = lm_reply();
	z0 = lm_reply();
	t0 = lm_time_ms(lm_reply());
	res = lm_reply();
	t1 = lm_time_ms(lm_reply());
	dl1 = lm_reply();
	dm1 = lm_reply();
	z1 = lm_reply();
	pl = lm_reply();
	pm = lm_reply();
	snprintf(event, sizeof(event), "call at now %lld (R - %lld), n %lld", now, tr->r - now, nc);
	ttl = lm_call(&tr->m, p, now, nc, want);
	lm_check_reply(tr, p, event, res, want);
	tr->calls++;
	if (want[0]) {
		tr->admitted++;
		if (!(pl->integer >= t0 + ttl && pl->integer <= t1 + ttl && pm->integer >= t0 + ttl && pm->integer <= t1 + ttl))
			lm_fail(tr, "%s of %s: log expires %lld, meta %lld ms after the call, want %lld", event, p->name,
				pl->integer - t0, pm->integer - t0, ttl);
		p->has_ttl = 1;
		p->expire_at = tr->r + ttl;
		/* Redis's real expiry goes far out, so that only the virtual one counts. */
		p->pexp_log = pl->integer + LM_FAR_MS;
		p->pexp_meta = pm->integer + LM_FAR_MS;
		freeReplyObject(test_cmd(c, "PEXPIREAT %s %lld", p->key, p->pexp_log));
		freeReplyObject(test_cmd(c, "PEXPIREAT %s %lld", p->meta_key, p->pexp_meta));
	} else {
		/* A rejected call writes nothing and extends no TTL. */
		if (!lm_same_bulk(dl0, dl1) || !lm_same_bulk(dm0, dm1) || !lm_same_bulk(z0, z1))
			lm_fail(tr, "%s of %s: a rejected call changed the log, the meta or the due index", event, p->name);
		if (pl->integer != (lm_held(p) ? p->pexp_log : -2) || pm->integer != (p->meta ? p->pexp_meta : -2))
			lm_fail(tr, "%s of %s: after a rejection PEXPIRETIME %lld and %lld, want %lld and %lld", event,
				p->name, pl->integer, pm->integer, lm_held(p) ? p->pexp_log : -2, p->meta ? p->pexp_meta : -2);
	}
	{
		long long due = lm_score(z1);

		if (due != (p->registered ? p->due : -1))
			lm_fail(tr, "%s of %s: due %lld, model %lld", event, p->name, due, p->registered ? p->due : -1);
	}
	freeReplyObject(dl0);
	freeReplyObject(dm0);
	freeReplyObject(z0);
	freeReplyObject(dl1);
	freeReplyObject(dm1);
	freeReplyObject(pl);
	freeReplyObject(pm);
}

/* The shard job at Redis time tr->r; its reply, and every path's keys and due time, checked. */
LOG_MODEL void lm_trace_job(struct lm_trace *tr)
{
	char now[24], got[256];
	const char *argv[] = { "EVALSHA", tr->job_sha, "1", tr->m.registry, now, "500" };
	long long want[6];
	redisReply *r;
	int same;

	snprintf(now, sizeof(now), "%lld", tr->r);
	r = redisCommandArgv(c, TEST_N(argv), argv, NULL);
	ck_assert_ptr_nonnull(r);
	lm_job(&tr->m, tr->r, want);
	tr->jobs++;
	tr->pruned += want[0];
	same = r->type == REDIS_REPLY_ARRAY && r->elements == 6;
	for (size_t i = 0; same && i < 6; i++)
		same = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	if (!same)
		lm_fail(tr, "shard job: script %s, model {%lld, %lld, %lld, %lld, %lld, %lld}",
			test_show_reply(r, got, sizeof(got)), want[0], want[1], want[2], want[3], want[4], want[5]);
	freeReplyObject(r);
	for (int i = 0; i < LM_PATHS; i++) {
		struct lm_path *p = &tr->m.p[i];
		long long due = lm_score(test_cmd(c, "ZSCORE %s %s", tr->m.registry, p->name));
		long long card = test_cmd_int(c, "ZCARD %s", p->key), meta = test_cmd_int(c, "EXISTS %s", p->meta_key);

		if (due != (p->registered ? p->due : -1) || card != (long long)(p->n - p->kept) || meta != p->meta)
			lm_fail(tr, "after the shard job %s: due %lld, %lld entries, meta %lld; model %lld, %zu, %d", p->name,
				due, card, meta, p->registered ? p->due : -1, p->n - p->kept, p->meta);
	}
}

/* A client's now (window_trace.h's trace_now): on time, the path's usual lag, the same ms as
 * the last call, any lag, the whole horizon. */
LOG_MODEL long long lm_now(struct model_rng *g, struct lm_path *p, long long redis_ms)
{
	return trace_client_now(g, p->lag, &p->last_now, redis_ms);
}

/* A cost: mostly 1. */
LOG_MODEL long long lm_cost(struct model_rng *g)
{
	long long x = model_range(g, 0, 9);

	return x < 7 ? 1 : x < 9 ? 2 : 3;
}

/*
 * A trace of `calls` client calls over LM_PATHS paths of one shard with
 * random rules (seed `seed`), among them, at random instants, the shard job
 * (2.5% of the events) and rule edits of a path's limit (1%) or window
 * (0.3%); keys expire as Redis time passes their TTL.  And, where
 * off-by-ones hide (3%): Redis time moves to a path's due time, or to 1 ms
 * before, or to the instant its oldest entry leaves the window of a client on
 * time or of one that lags by the whole horizon, and the job (half of the
 * time) and that client's call run there.  Clients call at Redis time, at
 * their path's usual lag, in the same ms as the last call, at any lag or at
 * the whole horizon.  Every reply, TTL, due time and key is compared with
 * the model.  Counts of what happened in *out (calls, admitted, jobs, pruned).
 */
LOG_MODEL void lm_trace_run(uint64_t seed, int calls, long long out[4])
{
	struct lm_trace tr = { .seed = seed };
	struct model_rng rng = { seed };
	unsigned shard = shard_of("/trace/0", 8);
	int np = 0;

	trace_load("sliding_log", tr.sha);
	trace_load("sliding_log_prune_shard", tr.job_sha);
	tr.r = 1700000000000LL + model_range(&rng, 0, 999999);
	snprintf(tr.m.registry, sizeof(tr.m.registry), "%s", test_registry("sliding_log", "/trace/0"));
	/* LM_PATHS paths of the shard of "/trace/0" */
	for (int j = 0; np < LM_PATHS; j++) {
		struct lm_path *p = &tr.m.p[np];
		struct trace_rule rule;

		snprintf(p->name, sizeof(p->name), j ? "/trace/%d" : "/trace/0", j);
		if (shard_of(p->name, strlen(p->name)) != shard)
			continue;
		snprintf(p->key, sizeof(p->key), "%s", test_key(p->name, "sliding_log"));
		snprintf(p->meta_key, sizeof(p->meta_key), "%s", test_key(p->name, "sliding_log_meta"));
		trace_window_rule(&rng, &rule);
		p->limit = rule.limit;
		p->window = rule.window;
		p->lag = model_range(&rng, 0, SKEW_MS);
		p->last_now = tr.r;
		np++;
	}
	for (int done = 0; done < calls; tr.pos++) {
		long long x = model_range(&rng, 0, 999), lag = model_range(&rng, 0, 1) * SKEW_MS;
		struct lm_path *p = &tr.m.p[model_range(&rng, 0, LM_PATHS - 1)];
		long long edge = -1;

		if (x >= 970) {
			long long y = model_range(&rng, 0, 3), back = model_range(&rng, 0, 1);

			if (y < 2 && p->registered)
				edge = p->due - back;
			else if (lm_held(p))
				edge = p->s[p->kept] + p->window + lag - back;
		}
		if (edge > tr.r)
			tr.r = edge;
		else
			tr.r += trace_step(&rng);
		lm_expire(&tr.m, tr.r);
		if (x >= 970 && tr.r == edge) {
			if (x % 2)
				lm_trace_job(&tr);
			p->last_now = tr.r - lag;
			lm_trace_call(&tr, p, tr.r - lag, lm_cost(&rng));
			done++;
		} else if (x < 25) {
			lm_trace_job(&tr);
		} else if (x < 35) {
			p->limit = trace_limit(&rng);
		} else if (x < 38) {
			p->window = trace_window(&rng);
		} else {
			lm_trace_call(&tr, p, lm_now(&rng, p, tr.r), lm_cost(&rng));
			done++;
		}
	}
	out[0] = tr.calls, out[1] = tr.admitted, out[2] = tr.jobs, out[3] = tr.pruned;
	for (int i = 0; i < LM_PATHS; i++)
		free(tr.m.p[i].s);
}

#endif

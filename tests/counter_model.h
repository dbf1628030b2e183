#ifndef SLUICE_TEST_COUNTER_MODEL_H
#define SLUICE_TEST_COUNTER_MODEL_H
/*
 * A reference model of the sliding-window counter on key layout 2, for
 * check_sliding_counter.c: written again from DESIGN.md ("Time", "State
 * model (key layout 2)", "Due index", "Client scripts: the calling
 * contract") and lua/README.md ("The sliding-window counter"), not from the
 * scripts, so that random traces can compare every reply, TTL, hash and due
 * time of the scripts with what the rule says:
 *
 *   - the window of window_ms is N = sub_windows sub-windows of sub =
 *     window_ms / N ms; a request admitted in sub-window j = floor(t / sub)
 *     counts for calls served before (j + N) * sub;
 *   - a call at now is served at t = max(now, mark), the mark being the time
 *     the latest admission was served at; a call of cost n is admitted when
 *     the live sub-windows (j > cur - N, j <= cur) hold sum with
 *     sum + n <= limit; never when n > limit (retry_after -1);
 *   - an admission removes the fields that are not live at t, adds n to
 *     sub-window cur, writes the mark and the parameters (limit, window_ms,
 *     sub_windows, rule "") when they changed, sets the TTL to
 *     (cur + N) * sub + SKEW_MS from the caller's now, and registers the
 *     path in its shard's due index (ZADD LT) at the time the shard job first
 *     has work, (oldest live j + N) * sub + SKEW_MS, when the counter held no
 *     live sub-window before or its parameters changed (else it is there,
 *     due no later); a path new there drops up to 2 members overdue by 60 s
 *     whose keys are gone (lib/due.lua); a rejection writes nothing;
 *   - the shard job takes the paths due by R (Redis time) and, for each, by
 *     the parameters the hash records, at max(mark, R - SKEW_MS): removes
 *     the fields not live there; deletes the hash when none is left live
 *     (count > 0) and the mark is past the horizon (then, as for a hash that
 *     is gone, the path leaves the index); else reschedules it at the next
 *     sub-window's leaving at the horizon (or, with only the mark left, when
 *     the mark passes the horizon), at least R + 1.
 *
 * Header-only and static, as tests/script_fixture.h.
 */
#include "tests/window_trace.h"

#include <string.h>

#define CM_FN static __attribute__((unused))

#define CM_MAX_FIELDS 128     /* sub-window fields one hash holds in a trace (N <= 10, and stale ones) */
#define CM_MAX_PATHS 8
#define CM_DEAD_AFTER_MS 60000 /* lib/due.lua DEAD_AFTER_MS */
#define CM_DEAD_PER_CALL 2     /* lib/due.lua DEAD_PER_CALL */

struct cm_rule {
	long long limit, window, subs;
};

struct cm_field {
	long long idx, count;
};

/* One path: what Redis holds of it, by the model. */
struct cm_path {
	const char *name; /* its bytes (the registry member) */
	size_t len;
	int exists;       /* the counter hash */
	int nf;           /* its sub-window fields f[0..nf), in no order */
	struct cm_field f[CM_MAX_FIELDS];
	long long mark;     /* its t */
	struct cm_rule rec; /* the limit, window_ms and sub_windows it records */
	int registered;     /* in the shard's due index */
	long long due;      /* its score there */
};

/* The paths of one shard (one due index). */
struct cm_shard {
	int np;
	struct cm_path p[CM_MAX_PATHS];
	long long skew; /* SKEW_MS */
};

CM_FN long long cm_sub(const struct cm_rule *r)
{
	return r->window / r->subs;
}

CM_FN int cm_live(const struct cm_field *f, long long cur, long long subs)
{
	return f->idx > cur - subs && f->idx <= cur;
}

/* Sum of the live sub-windows at cur, and the oldest live index holding requests (-1 when none). */
CM_FN long long cm_sum(const struct cm_path *p, long long cur, long long subs, long long *oldest)
{
	long long sum = 0;

	*oldest = -1;
	for (int i = 0; i < p->nf; i++) {
		if (cm_live(&p->f[i], cur, subs) && p->f[i].count > 0) {
			sum += p->f[i].count;
			if (*oldest < 0 || p->f[i].idx < *oldest)
				*oldest = p->f[i].idx;
		}
	}
	return sum;
}

/* Removes the fields not live at cur; returns how many. */
CM_FN int cm_drop_stale(struct cm_path *p, long long cur, long long subs)
{
	int kept = 0, n = p->nf;

	for (int i = 0; i < p->nf; i++)
		if (cm_live(&p->f[i], cur, subs))
			p->f[kept++] = p->f[i];
	p->nf = kept;
	return n - kept;
}

/* Registry order: score, then the member's bytes. */
CM_FN int cm_before(const struct cm_path *a, const struct cm_path *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int cmp = memcmp(a->name, b->name, n);

	if (a->due != b->due)
		return a->due < b->due;
	return cmp < 0 || (cmp == 0 && a->len < b->len);
}

/* due_register (lib/due.lua): ZADD LT, and the dead members a new one drops. */
CM_FN void cm_register(struct cm_shard *s, struct cm_path *p, long long due, long long now)
{
	struct cm_path *dead[CM_MAX_PATHS];
	int ndead = 0;

	if (p->registered) {
		if (due < p->due)
			p->due = due;
		return;
	}
	p->registered = 1;
	p->due = due;
	/* ZRANGE <registry> -inf (now - 60 s) BYSCORE LIMIT 0 2, then ZREM of those whose keys are gone */
	for (int i = 0; i < s->np; i++) {
		struct cm_path *q = &s->p[i];
		int rank = 0;

		if (!q->registered || q->due > now - CM_DEAD_AFTER_MS)
			continue;
		for (int j = 0; j < s->np; j++) {
			const struct cm_path *o = &s->p[j];

			rank += o != q && o->registered && o->due <= now - CM_DEAD_AFTER_MS && cm_before(o, q);
		}
		dead[ndead++] = rank < CM_DEAD_PER_CALL && !q->exists ? q : NULL;
	}
	for (int i = 0; i < ndead; i++)
		if (dead[i])
			dead[i]->registered = 0;
}

/*
 * A client call of path i at now with cost n under rule r: the reply's four
 * integers in want (allowed, remaining, retry_after_ms, reset_ms); returns
 * the TTL it sets (ms), or -1 for a rejection (nothing written).
 */
CM_FN long long cm_call(struct cm_shard *s, int i, const struct cm_rule *r, long long n, long long now,
			long long want[4])
{
	struct cm_path *p = &s->p[i];
	long long sub = cm_sub(r), t = p->exists && p->mark > now ? p->mark : now, cur = floor_div(t, sub), oldest;
	long long sum = cm_sum(p, cur, r->subs, &oldest), need, acc = 0;
	int changed, was_live = oldest >= 0, at = -1;

	want[0] = 0, want[2] = 0;
	if (n <= r->limit && sum + n <= r->limit) {
		cm_drop_stale(p, cur, r->subs);
		for (int k = 0; k < p->nf; k++)
			if (p->f[k].idx == cur)
				at = k;
		if (at < 0) {
			ck_assert_int_lt(p->nf, CM_MAX_FIELDS);
			at = p->nf++;
			p->f[at] = (struct cm_field){ cur, 0 };
		}
		p->f[at].count += n;
		changed = !p->exists || p->rec.limit != r->limit || p->rec.window != r->window || p->rec.subs != r->subs;
		p->exists = 1;
		p->mark = t;
		p->rec = *r;
		sum += n;
		if (oldest < 0 || cur < oldest)
			oldest = cur;
		if (!was_live || changed)
			cm_register(s, p, (oldest + r->subs) * sub + s->skew, now);
		want[0] = 1;
	} else if (n > r->limit) {
		want[2] = -1;
	} else {
		/* the oldest live sub-windows holding sum + n - limit must leave */
		need = sum + n - r->limit;
		for (long long from = oldest; acc < need;) {
			long long next = -1, cnt = 0;

			for (int k = 0; k < p->nf; k++) {
				const struct cm_field *f = &p->f[k];

				if (cm_live(f, cur, r->subs) && f->count > 0 && f->idx >= from && (next < 0 || f->idx < next))
					next = f->idx, cnt = f->count;
			}
			ck_assert_int_ge(next, 0);
			acc += cnt;
			from = next + 1;
			want[2] = model_max(1, (next + r->subs) * sub - t);
		}
	}
	want[1] = model_max(0, r->limit - sum);
	want[3] = oldest < 0 ? 0 : model_max(0, (oldest + r->subs) * sub - t);
	return want[0] ? (cur + r->subs) * sub + s->skew - now : -1;
}

/*
 * The shard job at Redis time R over the paths due by R: its reply in want
 * ({done, removed, visited, skipped, next_due, backlog}; never more due than
 * the job's limit here).
 */
CM_FN void cm_job(struct cm_shard *s, long long R, long long want[6])
{
	memset(want, 0, 6 * sizeof(*want));
	for (int i = 0; i < s->np; i++) {
		struct cm_path *p = &s->p[i];
		long long sub, at, cur, oldest;

		if (!p->registered || p->due > R)
			continue;
		want[2]++;
		if (!p->exists) {
			p->registered = 0;
			want[1]++;
			continue;
		}
		sub = cm_sub(&p->rec);
		at = model_max(p->mark, R - s->skew);
		cur = floor_div(at, sub);
		cm_sum(p, cur, p->rec.subs, &oldest);
		if (oldest < 0 && p->mark <= R - s->skew) {
			want[0] += p->nf;
			p->nf = 0;
			p->exists = p->registered = 0;
			want[1]++;
			continue;
		}
		want[0] += cm_drop_stale(p, cur, p->rec.subs);
		p->due = model_max(oldest < 0 ? p->mark + s->skew : (oldest + p->rec.subs) * sub + s->skew, R + 1);
	}
	want[4] = -1;
	for (int i = 0; i < s->np; i++)
		if (s->p[i].registered && (want[4] < 0 || s->p[i].due < want[4]))
			want[4] = s->p[i].due;
}

/* The path's hash is gone (its TTL ran out): Redis holds nothing of it but, maybe, its registry member. */
CM_FN void cm_gone(struct cm_path *p)
{
	p->exists = 0;
	p->nf = 0;
}

/*
 * When, in the path's own timeline, its oldest held sub-window leaves the
 * window under the parameters it records (those its fields were written
 * under); -1 when it holds none.
 */
CM_FN long long cm_edge(const struct cm_path *p)
{
	long long lo = -1;

	for (int i = 0; i < p->nf; i++)
		if (lo < 0 || p->f[i].idx < lo)
			lo = p->f[i].idx;
	return lo < 0 ? -1 : (lo + p->rec.subs) * cm_sub(&p->rec);
}

#endif

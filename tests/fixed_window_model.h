#ifndef SLUICE_TEST_FIXED_WINDOW_MODEL_H
#define SLUICE_TEST_FIXED_WINDOW_MODEL_H
/*
 * A reference model of the fixed window on key layout 2, for
 * check_fixed_window.c: the rule of DESIGN.md ("Time", "State model (key
 * layout 2)", "Due index") and lua/README.md ("The fixed window"), written
 * again from them and not from the scripts, so that random traces can compare
 * every reply, field, TTL and due time of the scripts with it.  No Redis in
 * here: what Redis should hold of each path is kept in struct fwm_path.
 *
 *   - the client (fixed_window.lua): window k holds [k * window_ms, (k + 1) *
 *     window_ms); a call at now is served at t = max(now, mark), the mark
 *     being the time the latest admission was served at, and counted in t's
 *     window (a count of another window, or of another window_ms, is 0);
 *     cost n is admitted iff count + n <= limit (never when n > limit:
 *     retry_after -1); an admission writes count, window, mark and the
 *     parameters, sets the TTL to the window's end + 1 + SKEW_MS from the
 *     caller's now and, when it opens the window, registers the path at the
 *     window's end + SKEW_MS (ZADD LT; a path new to the registry drops up to
 *     two members 60 s overdue whose keys are gone); a rejection writes
 *     nothing;
 *   - the shard job (fixed_window_repair_shard.lua) at Redis time r, over the
 *     members due by r in (score, member) order, up to `limit`: a path whose
 *     counter is gone leaves; one whose window is over at max(mark, r -
 *     SKEW_MS) is deleted and leaves; any other gets the acquire's TTL from r
 *     if it lost its own (repaired), and is due again at its window's end +
 *     SKEW_MS (at least r + 1).
 *
 * Header-only and static, as tests/bucket_model.h.
 */
#include <stddef.h>
#include <string.h>

#define FWM_FN static __attribute__((unused))

#define FWM_PATHS 4
#define FWM_DEAD_AFTER_MS 60000 /* lib/due.lua: a member this overdue, whose keys are gone, may be dropped */
#define FWM_DEAD_PER_CALL 2

struct fwm_path {
	char name[48];
	size_t len;       /* the path's bytes (a NUL among them too) */
	/* the counter, as Redis should hold it */
	int exists;
	long long window, count, mark, rec_limit, rec_window;
	int has_ttl;
	long long expire_at; /* the Redis time its TTL ends at, when has_ttl */
	/* its member of the shard's due index */
	int registered;
	long long due;
};

struct fwm {
	long long skew; /* SKEW_MS */
	struct fwm_path p[FWM_PATHS];
};

FWM_FN long long fwm_max(long long a, long long b)
{
	return a > b ? a : b;
}

FWM_FN long long fwm_floor_div(long long a, long long b)
{
	return a / b - (a % b < 0);
}

/* The registry's order: by score, then by member, bytewise. */
FWM_FN int fwm_before(const struct fwm_path *a, const struct fwm_path *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int c;

	if (a->due != b->due)
		return a->due < b->due;
	c = memcmp(a->name, b->name, n);
	return c ? c < 0 : a->len < b->len;
}

/* The indices of the members with due <= until, in registry order; returns how many. */
FWM_FN int fwm_due_list(const struct fwm *m, long long until, int out[FWM_PATHS])
{
	int n = 0;

	for (int i = 0; i < FWM_PATHS; i++) {
		int j = n;

		if (!m->p[i].registered || m->p[i].due > until)
			continue;
		while (j > 0 && fwm_before(&m->p[i], &m->p[out[j - 1]])) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = i;
		n++;
	}
	return n;
}

/* ZADD LT of path i at `due` by a client at now, with lib/due.lua's drop of dead members. */
FWM_FN void fwm_register(struct fwm *m, int i, long long due, long long now)
{
	struct fwm_path *p = &m->p[i];
	int dead[FWM_PATHS], nd;

	if (p->registered) {
		if (due < p->due)
			p->due = due;
		return;
	}
	p->registered = 1;
	p->due = due;
	nd = fwm_due_list(m, now - FWM_DEAD_AFTER_MS, dead);
	for (int k = 0; k < nd && k < FWM_DEAD_PER_CALL; k++)
		if (!m->p[dead[k]].exists)
			m->p[dead[k]].registered = 0;
}

/*
 * A client call of path i at now, cost n, with limit and window (ms), at
 * Redis time r: the reply in want[4] ({allowed, remaining, retry_after_ms,
 * reset_ms}); returns the TTL it sets (ms from the call) when admitted, else
 * -1.  *served is the time it was served at.
 */
FWM_FN long long fwm_call(struct fwm *m, int i, long long limit, long long window, long long n, long long now,
			  long long r, long long want[4], long long *served)
{
	struct fwm_path *p = &m->p[i];
	long long t = p->exists ? fwm_max(now, p->mark) : now, w = fwm_floor_div(t, window), end = (w + 1) * window;
	long long count = p->exists && p->window == w && p->rec_window == window ? p->count : 0, ttl;

	*served = t;
	if (n > limit || count + n > limit) {
		want[0] = 0, want[1] = fwm_max(0, limit - count), want[3] = end - t;
		want[2] = n > limit ? -1 : end - t;
		return -1;
	}
	ttl = end - now + 1 + m->skew;
	want[0] = 1, want[1] = limit - count - n, want[2] = 0, want[3] = end - t;
	p->exists = 1;
	p->window = w, p->count = count + n, p->mark = t;
	p->rec_limit = limit, p->rec_window = window;
	p->has_ttl = 1, p->expire_at = r + ttl;
	if (count == 0)
		fwm_register(m, i, end + m->skew, now);
	return ttl;
}

/*
 * The shard job at Redis time r over at most `limit` due members: its reply
 * in want[6] ({repaired, removed, visited, skipped, next_due, backlog}), and
 * per path the TTL it gave (ms from r), or -1, in ttl[].
 */
FWM_FN void fwm_job(struct fwm *m, long long r, long long limit, long long want[6], long long ttl[FWM_PATHS])
{
	int due[FWM_PATHS], nd = fwm_due_list(m, r, due), all[FWM_PATHS], na;
	long long next_due = -1;

	memset(want, 0, 6 * sizeof(*want));
	for (int i = 0; i < FWM_PATHS; i++)
		ttl[i] = -1;
	if (nd > limit)
		nd = (int)limit;
	want[2] = nd;
	for (int k = 0; k < nd; k++) {
		struct fwm_path *p = &m->p[due[k]];
		long long end = (p->window + 1) * p->rec_window;

		if (p->exists && fwm_max(p->mark, r - m->skew) >= end)
			p->exists = 0; /* over for every call within the horizon: deleted */
		if (!p->exists) {
			p->registered = 0;
			want[1]++;
			continue;
		}
		if (!p->has_ttl) {
			ttl[due[k]] = end - r + 1 + m->skew;
			p->has_ttl = 1, p->expire_at = r + ttl[due[k]];
			want[0]++;
		}
		p->due = fwm_max(end + m->skew, r + 1);
	}
	for (int i = 0; i < FWM_PATHS; i++)
		if (m->p[i].registered && (next_due < 0 || m->p[i].due < next_due))
			next_due = m->p[i].due;
	want[4] = next_due;
	na = fwm_due_list(m, r, all);
	if (nd >= limit && next_due >= 0 && next_due <= r)
		want[5] = na;
}

#endif

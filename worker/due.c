/*
 * The due-driven walk of sluice's own layouts (DESIGN.md, "Due index"):
 * each shard's registry is a sorted set scored by when a path next needs
 * the worker, and the algorithm's shard script (lua/lib/due.lua) takes
 * what is due by now from one shard, handles it and reschedules it.  So a
 * step costs what is due, not what is registered.
 *
 * Asking all 1024 shards every tick would cost Redis some 2.5 ms of CPU a
 * tick with nothing due (BENCHMARKS.md), so the worker keeps each shard's
 * next due time from the script's reply and asks only the shards that are
 * due, plus a rolling poll that passes over every shard once per
 * DUE_POLL_MS: that is how it learns of paths that clients registered since
 * (a client's first due time is never earlier than its first leak or
 * expiry, and a due time met late only delays freeing memory: no client
 * decision waits for the worker).
 *
 * A pass is the set of shards chosen at its start; it runs in pipelines of
 * DUE_DEPTH shard calls, stops when the step's budget is spent and resumes
 * at the next shard in the next step.  A shard that had more due than one
 * call takes (its backlog) is visited again before the pass ends.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "worker/internal.h"

/* ms in which the rolling poll passes over every shard */
#define DUE_POLL_MS 1000
/* shard calls per round trip */
#define DUE_DEPTH 64

void due_init(struct due_state *d, const struct layout *l, size_t index)
{
	memset(d, 0, sizeof(*d));
	d->layout = l;
	d->index = index;
	/* unknown: every shard is due until it has answered once */
	for (size_t k = 0; k < SHARD_COUNT; k++)
		d->next_due[k] = 0;
	d->last_poll_ms = -1;
}

/* Choose the shards of a new pass at `now` (ms): those due and the poll's next slice; all with `full`. */
static void pass_start(struct due_state *d, int64_t now, int full)
{
	size_t slice = SHARD_COUNT;

	if (!full && d->last_poll_ms >= 0 && now >= d->last_poll_ms) {
		int64_t dt = now - d->last_poll_ms;

		slice = dt >= DUE_POLL_MS ? SHARD_COUNT : (size_t)((dt * SHARD_COUNT + DUE_POLL_MS - 1) / DUE_POLL_MS);
	}
	if (d->last_poll_ms < 0 || now >= d->last_poll_ms)
		d->last_poll_ms = now;
	for (size_t k = 0; k < SHARD_COUNT; k++)
		d->pending[k] = full || d->next_due[k] <= now;
	for (size_t i = 0; i < slice; i++)
		d->pending[(d->poll_at + i) % SHARD_COUNT] = 1;
	d->poll_at = (d->poll_at + slice) % SHARD_COUNT;
	d->cursor = 0;
	d->in_pass = 1;
}

/* Fold shard k's reply {done, removed, visited, skipped, next_due, backlog} into the counts. */
static int fold(struct due_state *d, size_t k, const redisReply *e, int64_t now, struct worker_result *r,
		struct worker_layout_status *ls, char *why, size_t cap)
{
	long long v[6];

	for (size_t i = 0; i < 6; i++) {
		if (reply_int_at(e, i, &v[i])) {
			snprintf(why, cap, "%s", reply_describe(e));
			return reply_errno(e);
		}
	}
	r->entries += (uint64_t)v[0];
	r->emptied += (uint64_t)v[1];
	r->paths += (uint64_t)v[2];
	r->skipped += (uint64_t)v[3];
	r->batches++;
	ls->entries += (uint64_t)v[0];
	ls->emptied += (uint64_t)v[1];
	ls->paths += (uint64_t)v[2];
	ls->skipped += (uint64_t)v[3];
	d->next_due[k] = v[4] < 0 ? INT64_MAX : v[4];
	d->backlog[k] = v[5] > 0 ? (uint32_t)v[5] : 0;
	/* more was due than one call takes: again in this pass */
	d->pending[k] = d->backlog[k] > 0 && d->next_due[k] <= now;
	return 0;
}

/* The due backlog (paths) and the oldest due time (ms, INT64_MAX: none) the shards last reported. */
void due_backlog(const struct due_state *d, int64_t now, uint64_t *paths, int64_t *oldest)
{
	for (size_t k = 0; k < SHARD_COUNT; k++) {
		*paths += d->backlog[k];
		if (d->next_due[k] <= now && d->next_due[k] > 0 && d->next_due[k] < *oldest)
			*oldest = d->next_due[k];
	}
}

/*
 * Run d's pass from its cursor until it ends (1) or the budget is spent (0),
 * or a negative errno.  `nows` is the scripts' now ("" = Redis TIME).
 */
static int pass_run(struct worker *w, enum worker_job job, struct due_state *d, int64_t now, const char *nows,
		    int64_t start_us, int64_t budget_us, struct worker_result *r, struct worker_layout_status *ls)
{
	const struct alg_ops *alg = algorithm_get(d->layout->algorithm);
	struct cmdargs *a = &w->jb.keys;
	size_t shard[DUE_DEPTH];
	char why[160];
	int rc;

	while (d->in_pass) {
		size_t n = 0;

		rbatch_clear(w->batch);
		for (; d->cursor < SHARD_COUNT && n < DUE_DEPTH; d->cursor++) {
			const char *const *argv;
			const size_t *lens;
			int argc;

			if (!d->pending[d->cursor])
				continue;
			cmdargs_reset(a);
			if (cmdargs_end(a, layout_shard_registry(d->layout, (unsigned)d->cursor, cmdargs_begin(a))) ||
			    cmdargs_str(a, nows) || cmdargs_int(a, (int64_t)w->batch_size) ||
			    (argc = cmdargs_view(a, NULL, &argv, &lens)) < 0 ||
			    rbatch_eval(w->batch, alg->shard_script, 1, argc, argv, lens))
				return -ENOMEM;
			shard[n++] = d->cursor;
		}
		if (n && (rc = rbatch_run(w->conn, w->batch)))
			return rc;
		for (size_t i = 0; i < n; i++) {
			if ((rc = fold(d, shard[i], rbatch_reply(w->batch, i), now, r, ls, why, sizeof(why)))) {
				status_error(w, job, "script: %s", why);
				/* resume after the shard that failed, not before it, next step */
				d->cursor = shard[i] + 1;
				return rc;
			}
		}
		if (d->cursor >= SHARD_COUNT) {
			int again = 0;

			for (size_t k = 0; k < SHARD_COUNT && !again; k++)
				again = d->pending[k];
			if (again)
				d->cursor = 0;
			else
				d->in_pass = 0;
		}
		if (d->in_pass && clock_mono_us() - start_us >= budget_us)
			return 0;
	}
	return 1;
}

/* Redis TIME in ms, or a negative errno. */
static int redis_now(struct worker *w, int64_t *now)
{
	static const char *const argv[1] = { "TIME" };
	static const size_t lens[1] = { 4 };
	const redisReply *const *el;
	long long s, us;
	size_t n;
	int rc;

	rbatch_clear(w->batch);
	if ((rc = rbatch_cmd(w->batch, 1, argv, lens)) || (rc = rbatch_run(w->conn, w->batch)))
		return rc;
	if (reply_array(rbatch_reply(w->batch, 0), 2, &el, &n) || reply_int_text(el[0], &s) ||
	    reply_int_text(el[1], &us))
		return -EPROTO;
	*now = (int64_t)s * 1000 + (int64_t)us / 1000;
	return 0;
}

int due_step(struct worker *w, enum worker_job job, int64_t start_us, int64_t budget_us, int64_t now_ms,
	     int full, struct worker_result *r, struct worker_layout_status lr[WORKER_MAX_LAYOUTS])
{
	struct job_state *js = &w->jobs[job];
	char nows[24] = "";
	int64_t now = now_ms;
	int rc = 0;

	if (js->ndue == 0)
		return 1;
	if (full) {
		/* a whole sweep: every shard of every layout, from the first */
		js->due_at = 0;
		for (size_t i = 0; i < js->ndue; i++)
			js->due[i].in_pass = 0;
	}
	if (now_ms >= 0)
		snprintf(nows, sizeof(nows), "%lld", (long long)now_ms);
	else if ((rc = redis_now(w, &now))) {
		status_error(w, job, "redis: %s", rconn_strerror(w->conn, rc));
		return rc;
	}
	js->now_ms = now;
	for (; js->due_at < js->ndue; js->due_at++) {
		struct due_state *d = &js->due[js->due_at];

		if (!d->in_pass)
			pass_start(d, now, full);
		rc = pass_run(w, job, d, now, nows, start_us, budget_us, r, &lr[d->index]);
		if (rc <= 0)
			break;
	}
	if (rc > 0 || js->due_at >= js->ndue) {
		js->due_at = 0;
		rc = 1;
	}
	if (rc == -EIO || rc == -EAGAIN)
		status_error(w, job, "redis: %s", rconn_errstr(w->conn));
	else if (rc == -ENOMEM)
		status_error(w, job, "%s", "out of memory");
	rbatch_clear(w->batch);
	return rc;
}

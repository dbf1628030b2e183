/*
 * The due-driven walk of sluice's own layouts (DESIGN.md, "Due index"):
 * each shard's registry is a sorted set scored by when a path next needs
 * the worker, and the algorithm's shard script (lua/lib/due.lua) takes
 * what is due by now from one shard, handles it and reschedules it.  So a
 * step costs what is due, not what is registered.
 *
 * The worker keeps each shard's next due time (the script's reply says the
 * registry's lowest score after the call) and calls the script only for
 * the shards that are due.  A rolling poll reads the head of every shard's
 * registry once per DUE_POLL_MS (1024 shards a second, whatever the tick:
 * struct roll), with a plain ZRANGE 0 0 WITHSCORES, not a script call:
 * that is how the worker learns of paths that clients registered since
 * (ZADD LT may move a shard's due time earlier), and a polled shard found
 * due is called in the same pass.  A script call with nothing due costs
 * Redis some 10-20 us (the script's own set-up), a ZRANGE under one: with
 * five layouts an idle daemon's polls cost some 5 ms of Redis CPU a
 * second, where calling every shard would cost 50-100 ms.  A client's
 * first due time is never earlier than its first leak or expiry, and a due
 * time met late (by up to DUE_POLL_MS) only delays freeing memory: no
 * client decision waits for the worker.
 *
 * A pass is the set of shards chosen at its start; it runs in pipelines of
 * DUE_DEPTH commands per primary (shard calls and polls; the calls at most
 * DUE_ROUND_PATHS / batch_size of them on each primary: a Redis Cluster's
 * primaries work in parallel, and what bounds one call's wait is the one
 * node's time; a single Redis is one primary), stops when the step's budget
 * is spent and resumes at the next shard in the next step.  A shard that
 * had more due than one call takes (its backlog) is called again before the
 * pass ends.  A shard whose call or poll fails (its registry has another
 * type, say) is left to the next poll, and the pass goes on with the
 * others: one bad key does not stop the maintenance of the rest.  So is
 * a shard whose slot is being moved between cluster nodes (-EBUSY), but
 * as no failure of the step: the move is counted per node (moved, ask).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "worker/internal.h"

/* ms in which the rolling poll passes over every shard */
#define DUE_POLL_MS 1000
/* commands (shard calls and polls) per round trip and primary */
#define DUE_DEPTH 64
/* a round trip's commands at most: DUE_DEPTH for each of this many primaries */
#define DUE_NODES 8
/* primaries whose shard calls are counted apart (more share their counts) */
#define DUE_NODES_COUNTED 128
/*
 * Paths one round trip's shard calls may take at most, as calls x
 * batch_size (at least one call): Redis spends some 20 us a drained bucket,
 * so 64 calls of 500 would hold it (and the connection, against
 * redis_timeout_ms) for seconds when a million are due at once.
 */
#define DUE_ROUND_PATHS 4096

void roll_init(struct roll *r)
{
	r->epoch_ms = -1;
	r->last_ms = -1;
	r->done = 0;
	r->at = 0;
}

size_t roll_slice(struct roll *r, int64_t now, int64_t period_ms, int all, size_t *from)
{
	int64_t target;
	size_t n;

	*from = r->at;
	if (all || r->epoch_ms < 0) {
		/* the first time, or on request: every shard once, and a cycle from now */
		r->epoch_ms = r->last_ms = now;
		r->done = 0;
		return SHARD_COUNT;
	}
	if (now < r->last_ms) {
		/* the clock went back: the cycle goes on from now */
		r->epoch_ms = r->last_ms = now;
		r->done = 0;
		return 0;
	}
	r->last_ms = now;
	/* ceil: each shard is covered again at most period_ms after it was */
	target = now < r->epoch_ms ? 0 : ((now - r->epoch_ms) * SHARD_COUNT + period_ms - 1) / period_ms;
	if (target - r->done >= SHARD_COUNT) {
		/* a whole cycle (or more) is owed: every shard once, and a cycle from now */
		r->epoch_ms = now;
		r->done = 0;
		return SHARD_COUNT;
	}
	n = target > r->done ? (size_t)(target - r->done) : 0;
	r->done += (int64_t)n;
	r->at = (r->at + n) % SHARD_COUNT;
	if (r->done >= SHARD_COUNT) {
		/* one period covers SHARD_COUNT shards exactly: keep the numbers small */
		r->done -= SHARD_COUNT;
		r->epoch_ms += period_ms;
	}
	return n;
}

void due_init(struct due_state *d, const struct layout *l, size_t index)
{
	memset(d, 0, sizeof(*d));
	d->layout = l;
	d->index = index;
	/* unknown (0): every shard is polled by the first pass */
	for (size_t k = 0; k < SHARD_COUNT; k++)
		d->next_due[k] = 0;
	roll_init(&d->poll);
}

/* Forget what is known of shard k (another daemon's now, or its call failed): left to the next poll. */
static void forget(struct due_state *d, size_t k)
{
	d->pending[k] = DUE_NONE;
	d->next_due[k] = INT64_MAX;
	d->backlog[k] = 0;
}

/*
 * Choose the shards of a new pass at `now` (ms): a call for each one due,
 * a poll for the rolling poll's slice and for each one not asked yet; a
 * call for every shard with `full`.
 */
static void pass_start(const struct worker *w, struct due_state *d, int64_t now, int full)
{
	size_t from, slice = roll_slice(&d->poll, now, DUE_POLL_MS, full, &from);

	for (size_t k = 0; k < SHARD_COUNT; k++) {
		if (!worker_owns(w, (unsigned)k)) {
			forget(d, k); /* another daemon's: nothing of it is known here (nor in the backlog) */
			continue;
		}
		if (w->lease && d->gained[k] != lease_gained(w->lease, (unsigned)k)) {
			/* taken (again) since the last pass: what its registry holds is read afresh */
			d->gained[k] = lease_gained(w->lease, (unsigned)k);
			d->next_due[k] = 0;
		}
		d->pending[k] = full || (d->next_due[k] > 0 && d->next_due[k] <= now) ? DUE_CALL
				: d->next_due[k] == 0 ? DUE_POLL : DUE_NONE;
	}
	for (size_t i = 0; i < slice; i++) {
		size_t k = (from + i) % SHARD_COUNT;
		unsigned char *p = &d->pending[k];

		if (*p == DUE_NONE && worker_owns(w, (unsigned)k))
			*p = DUE_POLL;
	}
	d->cursor = 0;
	d->in_pass = 1;
}

/*
 * Fold shard k's script reply {done, removed, visited, skipped, next_due,
 * backlog, failed?, path?, error?} into the counts.  0 (*nfailed: paths that
 * failed alone, the first named in `why`), or reply_errno() of a reply that
 * is not one (the reason in `why`).
 */
static int fold(struct due_state *d, size_t k, const redisReply *e, int64_t now, struct worker_result *r,
		struct worker_layout_status *ls, char *why, size_t cap, uint64_t *nfailed)
{
	long long v[6];

	for (size_t i = 0; i < 6; i++) {
		if (reply_int_at(e, i, &v[i])) {
			snprintf(why, cap, "%s", reply_describe(e));
			return reply_errno(e);
		}
	}
	*nfailed = job_failures(e, 6, d->layout->name, why, cap);
	r->failed += *nfailed;
	ls->failed += *nfailed;
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
	d->pending[k] = d->backlog[k] > 0 && d->next_due[k] <= now ? DUE_CALL : DUE_NONE;
	return 0;
}

/* 1 when a shard call's reply is the fence's refusal (lib/due.lua: "LEASE sluice: ..."). */
static int fenced(const redisReply *e)
{
	const char *err = reply_error(e);

	return err && strncmp(err, "LEASE ", 6) == 0;
}

/* A registry score (ms, as ZRANGE WITHSCORES gives it) as a due time: ceil, at least 1, "inf" INT64_MAX; -1 if not a number. */
static int64_t score_ms(const redisReply *e)
{
	double v;

	if (reply_double(e, &v))
		return -1;
	if (v >= 9.2e18)
		return INT64_MAX;
	return v < 1 ? 1 : (int64_t)ceil(v);
}

/*
 * Fold shard k's poll reply (ZRANGE 0 0 WITHSCORES: {} or {member, score}):
 * its next due time, and a call in this pass when that is by now.
 */
static int fold_poll(struct due_state *d, size_t k, const redisReply *e, int64_t now, struct worker_result *r,
		     char *why, size_t cap)
{
	const redisReply *const *el;
	int64_t due = INT64_MAX;
	size_t n;

	if (reply_array(e, 0, &el, &n) || (n != 0 && (n != 2 || (due = score_ms(el[1])) < 0))) {
		snprintf(why, cap, "%s", reply_describe(e));
		return reply_errno(e);
	}
	r->polls++;
	d->next_due[k] = due;
	d->backlog[k] = 0;
	d->pending[k] = due <= now ? DUE_CALL : DUE_NONE;
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
 * or a negative errno when Redis could not be reached (the cursor back at
 * the first shard of the round trip that failed).  `nows` is the scripts'
 * now ("" = Redis TIME).  A shard whose call or poll failed leaves the pass
 * (and is read again only by the poll: no retry every tick); the first such
 * error goes to *failed (when it is 0) and the job's last_error.
 */
static int pass_run(struct worker *w, enum worker_job job, struct due_state *d, int64_t now, const char *nows,
		    int64_t start_us, int64_t budget_us, struct worker_result *r, struct worker_layout_status *ls,
		    int *failed)
{
	const struct alg_ops *alg = algorithm_get(d->layout->algorithm);
	struct cmdargs *a = &w->jb.keys;
	size_t shard[DUE_DEPTH * DUE_NODES];
	char why[224];
	int rc;

	while (d->in_pass) {
		unsigned char kind[DUE_DEPTH * DUE_NODES];
		size_t n = 0, max_calls = DUE_ROUND_PATHS / w->batch_size, np = rconn_primaries(w->conn);
		size_t calls[DUE_NODES_COUNTED] = { 0 }, depth;

		if (max_calls < 1)
			max_calls = 1;
		depth = DUE_DEPTH * (np < 1 ? 1 : np > DUE_NODES ? DUE_NODES : np);
		rbatch_clear(w->batch);
		for (; d->cursor < SHARD_COUNT && n < depth; d->cursor++) {
			const char *const *argv;
			const size_t *lens;
			int argc, poll = d->pending[d->cursor] == DUE_POLL;
			size_t node;

			if (d->pending[d->cursor] == DUE_NONE)
				continue;
			if (!worker_owns(w, (unsigned)d->cursor)) {
				forget(d, d->cursor); /* given back or lost since the pass started */
				continue;
			}
			node = rconn_shard_primary(w->conn, (unsigned)d->cursor) % DUE_NODES_COUNTED;
			if (!poll && calls[node] == max_calls) {
				if (np <= 1)
					break; /* this round trip has its share of work: the shard goes in the next one */
				continue;  /* its node has its share: it stays pending for this pass's next round */
			}
			calls[node] += !poll;
			cmdargs_reset(a);
			/* a shard call with leases: KEYS registry, lease; ARGV now, limit, owner (the fence) */
			if ((poll && cmdargs_str(a, "ZRANGE")) ||
			    cmdargs_end(a, layout_shard_registry(d->layout, (unsigned)d->cursor, cmdargs_begin(a))) ||
			    (!poll && w->lease && lease_key_arg(w->lease, (unsigned)d->cursor, a)) ||
			    (poll ? cmdargs_str(a, "0") || cmdargs_str(a, "0") || cmdargs_str(a, "WITHSCORES")
				  : cmdargs_str(a, nows) || cmdargs_int(a, (int64_t)w->batch_size)) ||
			    (!poll && w->lease && lease_owner_arg(w->lease, (unsigned)d->cursor, a)) ||
			    (argc = cmdargs_view(a, NULL, &argv, &lens)) < 0 ||
			    (poll ? rbatch_cmd(w->batch, argc, argv, lens)
				  : rbatch_eval(w->batch, alg->shard_script, w->lease ? 2 : 1, argc, argv, lens)))
				return -ENOMEM;
			kind[n] = d->pending[d->cursor];
			shard[n++] = d->cursor;
		}
		if (n && (rc = rbatch_run(w->conn, w->batch))) {
			if ((rc == -EIO || rc == -EAGAIN) && rconn_is_cluster(w->conn)) {
				/*
				 * Every shard of this round trip is on a node that is down: they
				 * leave the pass as a failed call does (the poll reads them again),
				 * so the shards after them, on nodes that are up, are not held up.
				 */
				for (size_t i = 0; i < n; i++)
					forget(d, shard[i]);
				if (!*failed) {
					status_error(w, job, "redis: %s", rconn_errstr(w->conn));
					*failed = rc;
				}
				goto next;
			}
			/* some of these may have run: they run again (a shard job is idempotent at one instant) */
			d->cursor = shard[0];
			return rc;
		}
		for (size_t i = 0; i < n; i++) {
			const redisReply *e = rbatch_reply(w->batch, i);
			uint64_t nfailed = 0;

			if (kind[i] == DUE_CALL && w->lease && fenced(e)) {
				/* the lease is another daemon's now: this call changed nothing */
				lease_fenced(w->lease, (unsigned)shard[i]);
				r->batches++;
				forget(d, shard[i]);
				continue;
			}
			rc = kind[i] == DUE_POLL ? fold_poll(d, shard[i], e, now, r, why, sizeof(why))
						 : fold(d, shard[i], e, now, r, ls, why, sizeof(why), &nfailed);
			if (rc == -EBUSY) {
				/*
				 * Its slot is being moved (a shard script is not sent after an
				 * ASK; or a MOVED after every redirection): counted per node
				 * as a redirection, not a failure; the shard is put off to the
				 * next poll, and drained exactly where it lands.
				 */
				forget(d, shard[i]);
				continue;
			}
			if (!rc && nfailed && !*failed) {
				/* paths that failed alone: the shard was maintained, the step reports them */
				status_error(w, job, "path failed: %s", why);
				*failed = -EBADMSG;
			}
			if (rc) {
				forget(d, shard[i]);
				if (!*failed) {
					char shown[320];

					snprintf(shown, sizeof(shown), "%s shard %zu: %s", d->layout->name, shard[i], why);
					status_error(w, job, kind[i] == DUE_POLL ? "poll: %s" : "script: %s", shown);
					*failed = rc;
				}
			}
		}
next:
		if (d->cursor >= SHARD_COUNT) {
			int again = 0;

			for (size_t k = 0; k < SHARD_COUNT && !again; k++)
				again = d->pending[k] != DUE_NONE;
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

int due_step(struct worker *w, enum worker_job job, int64_t start_us, int64_t budget_us, int64_t now,
	     const char *nows, int restart, int full, struct worker_result *r,
	     struct worker_layout_status lr[WORKER_MAX_LAYOUTS], int *failed)
{
	struct job_state *js = &w->jobs[job];
	int rc = 1;

	*failed = 0;
	if (js->ndue == 0)
		return 1;
	if (restart) {
		/* a whole sweep: every shard of every layout, from the first */
		js->due_at = 0;
		for (size_t i = 0; i < js->ndue; i++)
			js->due[i].in_pass = 0;
	}
	js->now_ms = now;
	for (; js->due_at < js->ndue; js->due_at++) {
		struct due_state *d = &js->due[js->due_at];

		if (!d->in_pass)
			pass_start(w, d, now, full);
		rc = pass_run(w, job, d, now, nows, start_us, budget_us, r, &lr[d->index], failed);
		if (rc <= 0)
			break;
	}
	if (rc > 0)
		js->due_at = 0;
	if (rc == -EIO || rc == -EAGAIN)
		status_error(w, job, "redis: %s", rconn_errstr(w->conn));
	else if (rc == -ENOMEM)
		status_error(w, job, "%s", "out of memory");
	rbatch_clear(w->batch);
	return rc;
}

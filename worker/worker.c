/*
 * The worker's lifetime, its copy of the rules, and whole sweeps.  Which job
 * maintains which layout comes from each layout's algorithm table
 * (core/algorithm.h): the drain job runs at the leak's pace (every 100 ms by
 * default), everything else only bounds memory and repairs, at the prune
 * job's slower pace.
 */
#include "worker/worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/rulestore.h"
#include "worker/internal.h"

const char *worker_action_name(enum algorithm a)
{
	const struct alg_ops *alg = algorithm_get(a);

	return alg ? alg->action : NULL;
}

const char *worker_job_name(enum worker_job j)
{
	static const char *const names[WORKER__JOBS] = { "drain", "prune" };

	return (unsigned)j < WORKER__JOBS ? names[j] : NULL;
}

static enum worker_job job_of(const struct layout *l)
{
	return layout_ops(l)->job == ALG_JOB_DRAIN ? WORKER_DRAIN : WORKER_PRUNE;
}

struct worker *worker_new(const struct worker_config *cfg)
{
	struct worker *w;

	if (!cfg->redis || !cfg->prefix || cfg->batch_size == 0 || cfg->nlayouts > WORKER_MAX_LAYOUTS ||
	    (cfg->write_skew && cfg->max_clock_skew_ms < 0))
		return NULL;
	if (!(w = calloc(1, sizeof(*w))))
		return NULL;
	if (requests_init(w)) {
		free(w);
		return NULL;
	}
	w->batch_size = cfg->batch_size;
	w->st.nlayouts = cfg->nlayouts;
	if (cfg->write_skew)
		skew_init(&w->skew, cfg->max_clock_skew_ms);
	if (cfg->write_rules && copies_init(&w->copies)) {
		requests_destroy(w);
		free(w);
		return NULL;
	}
	for (size_t i = 0; i < cfg->nlayouts; i++) {
		struct job_state *js = &w->jobs[job_of(&cfg->layouts[i])];

		snprintf(w->st.layout[i].name, sizeof(w->st.layout[i].name), "%s", cfg->layouts[i].name);
		w->st.layout[i].algorithm = cfg->layouts[i].algorithm;
		if (!cfg->layouts[i].foreign) {
			struct due_state *nd = realloc(js->due, (js->ndue + 1) * sizeof(*nd));

			if (!nd) {
				worker_free(w);
				return NULL;
			}
			js->due = nd;
			due_init(&js->due[js->ndue++], &cfg->layouts[i], i);
			continue;
		}
		js->layouts[js->nlayouts] = &cfg->layouts[i];
		js->index[js->nlayouts++] = i;
	}
	for (int j = 0; j < WORKER__JOBS; j++) {
		strcpy(w->jobs[j].cursor, "0");
		w->st.job[j].oldest_due_age_ms = w->jobs[j].ndue ? 0 : -1;
		w->st.job[j].last_outage_ms = -1;
	}
	w->st.skew_ms = w->skew.on ? w->skew.ms : -1;
	w->st.skew_pending = w->skew.on ? skew_pending(w) : 0;
	w->st.copies_on = w->copies.on;
	w->st.copies_pending = w->copies.on ? copies_pending(w) : 0;
	if (cfg->sum_stats && !(w->stats = stats_new())) {
		worker_free(w);
		return NULL;
	}
	if (cfg->census) {
		const struct layout *own[WORKER_MAX_LAYOUTS];

		for (size_t i = 0; i < cfg->nlayouts; i++)
			own[i] = &cfg->layouts[i];
		if (!(w->census = census_new(own, cfg->nlayouts))) {
			worker_free(w);
			return NULL;
		}
	}
	if (cfg->lease_id && !(w->lease = lease_new(cfg->lease_id, cfg->prefix, cfg->lease_ttl_ms))) {
		worker_free(w);
		return NULL;
	}
	w->conn = rconn_new(cfg->redis, cfg->timeout_ms);
	w->prefix = strdup(cfg->prefix);
	w->batch = rbatch_new();
	if (!w->conn || !w->prefix || !w->batch) {
		worker_free(w);
		return NULL;
	}
	return w;
}

void worker_abort(struct worker *w)
{
	rconn_abort(w->conn);
}

void worker_free(struct worker *w)
{
	if (!w)
		return;
	for (int j = 0; j < WORKER__JOBS; j++)
		free(w->jobs[j].due);
	rconn_free(w->conn);
	rbatch_free(w->batch);
	ruleset_clear(&w->rules);
	job_batch_free(&w->jb);
	copies_free(&w->copies);
	stats_free(w->stats);
	census_free(w->census);
	lease_free(w->lease);
	free(w->prefix);
	requests_destroy(w);
	free(w);
}

void worker_set_skew(struct worker *w, int64_t ms)
{
	if (ms < 0)
		return;
	skew_init(&w->skew, ms);
	pthread_mutex_lock(&w->lock);
	w->st.skew_ms = ms;
	w->st.skew_pending = skew_pending(w);
	pthread_mutex_unlock(&w->lock);
}

/* 0, with *changed set when the rules were reloaded; or an rconn error. */
static int refresh_rules(struct worker *w, int *changed)
{
	size_t invalid = 0;
	int rc;

	*changed = 0;
	rc = rulestore_refresh(w->conn, w->prefix, &w->rules, 0, changed, &invalid);
	/* the rules hash lost with its data: keep the rules held until the daemon stored them again */
	w->rules_lost = rc == -ENODATA;
	if (rc == -ENODATA)
		return 0;
	if (!rc && *changed) {
		w->rules_invalid = invalid;
		/* rules new or changed get their decisions' baseline at the next aggregation; one
		 * it had no room for (STATS_MAX_NAMES, ENOMEM) shows no decisions: not the step's failure */
		if (w->stats)
			(void)stats_rules_loaded(w->stats, &w->rules);
	}
	return rc;
}

struct stats *worker_stats(struct worker *w)
{
	return w->stats;
}

struct census *worker_census(struct worker *w)
{
	return w->census;
}

/*
 * A failure of the step's preparation that need not stop the job: -EIO or
 * -EAGAIN on a cluster (some node is down; the job goes on with the nodes that are up),
 * -EBUSY (a slot being moved: the job goes on with the others).
 * Names it in last_error and keeps the first one in *later; returns 0 then.
 * Any other failure: 1 (the step stops).
 */
static int note_later(struct worker *w, enum worker_job job, const char *what, int rc, int *later)
{
	if ((rc != -EIO && rc != -EAGAIN && rc != -EBUSY) || !rconn_is_cluster(w->conn))
		return 1;
	if (!*later) {
		char msg[200];

		snprintf(msg, sizeof(msg), "%s: %s", what, rconn_strerror(w->conn, rc));
		status_error(w, job, "%s", msg);
		*later = rc;
	}
	return 0;
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
		rc = -EPROTO;
	else
		*now = (int64_t)s * 1000 + (int64_t)us / 1000;
	rbatch_clear(w->batch);
	return rc;
}

/*
 * The step's part before the job: the rules, the time (when the due walk or
 * the skew copies need it) and the skew copies, the rule copies, the stats
 * and the census.  0 or an rconn error (the job's last_error set).  Only the
 * time, and rules never loaded, stop the step: a cluster node that is down
 * (-EIO from the rule store's node, or from some shards' copies) must not
 * stop the job on the nodes that are up, so those errors go to *later
 * (the step's result once the job ran) and the step goes on with the rules
 * it holds.
 */
static int step_prepare(struct worker *w, enum worker_job job, int64_t now_ms, int full, int64_t *now, int *later)
{
	const char *what = "rules";
	int changed = 0, rc;

	*now = now_ms;
	*later = 0;
	if ((rc = refresh_rules(w, &changed))) {
		if ((rc != -EIO && rc != -EAGAIN && rc != -EBUSY) || !w->rules.loaded)
			goto fail;
		note_later(w, job, what, rc, later);
	}
	what = "redis";
	if (now_ms < 0 && (w->jobs[job].ndue || w->skew.on || w->copies.on || ((w->stats || w->census) && job == WORKER_PRUNE)) &&
	    (rc = redis_now(w, now)))
		goto fail;
	/* a sweep checks every copy; so does a change of the rules (Redis may have lost its data) */
	what = "skew copies";
	if ((rc = skew_step(w, *now, full || changed)) && note_later(w, job, what, rc, later))
		goto fail;
	/* the rule copies: every one at a prune step too (1024 HGETs in 4 round trips) */
	what = "rule copies";
	if ((rc = copies_step(w, *now, full || changed || job == WORKER_PRUNE)) && note_later(w, job, what, rc, later))
		goto fail;
	/* the decision counters, at the prune job's pace and within a budget of their own */
	what = "stats";
	if (job == WORKER_PRUNE && w->stats &&
	    (rc = stats_step(w->stats, w->conn, w->prefix, *now, WORKER_STATS_BUDGET_US, NULL)) &&
	    note_later(w, job, what, rc, later))
		goto fail;
	/* the census of mismatched paths, likewise */
	what = "census";
	if (w->census && w->lease)
		census_set_period(w->census, CENSUS_PERIOD_MS * (int64_t)lease_live(w->lease));
	if (job == WORKER_PRUNE && w->census &&
	    (rc = census_step(w->census, w->conn, &w->rules, *now, WORKER_CENSUS_BUDGET_US, NULL)) &&
	    note_later(w, job, what, rc, later))
		goto fail;
	return 0;
fail:
	{
		char msg[200];

		snprintf(msg, sizeof(msg), "%s: %s", what, rconn_strerror(w->conn, rc));
		status_error(w, job, "%s", msg);
	}
	return rc;
}

/*
 * With leases, 1 while this worker holds the lease of the shard whose
 * holder walks job's foreign layouts for a third of the TTL more at least:
 * a foreign layout's keys are in slots of their own, so no script can check
 * that lease (no fence); the margin, far longer than a step, is what keeps
 * two daemons from walking them at once, unless one is paused in between.
 */
static int foreign_owned(const struct worker *w, enum worker_job job)
{
	return !w->lease || lease_holds_for(w->lease, WORKER_FOREIGN_SHARD(job), clock_mono_us(),
					    lease_ttl_ms(w->lease) * 1000 / 3);
}

int worker_lease_step(struct worker *w)
{
	int rc;

	if (!w->lease)
		return 0;
	rc = lease_step(w->lease, w->conn, w->batch, clock_mono_us());
	pthread_mutex_lock(&w->lock);
	lease_status(w->lease, &w->st.lease);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

int worker_lease_release(struct worker *w)
{
	int rc;

	if (!w->lease)
		return 0;
	rc = lease_release_all(w->lease, w->conn, w->batch);
	pthread_mutex_lock(&w->lock);
	lease_status(w->lease, &w->st.lease);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

int worker_step(struct worker *w, enum worker_job job, int64_t budget_us, int64_t now_ms,
		struct worker_result *res)
{
	struct job_state *js;
	struct worker_result r = { 0 };
	struct worker_layout_status lr[WORKER_MAX_LAYOUTS] = { 0 };
	int64_t start = clock_mono_us(), now;
	char nows[24] = "";
	int rc, full, restart, later = 0;

	if ((unsigned)job >= WORKER__JOBS)
		return -EINVAL;
	js = &w->jobs[job];
	/*
	 * A connection made since the last step (Redis back after an outage, maybe
	 * restarted from its AOF with every leak of the outage due): a whole sweep,
	 * every shard polled now, not only the rolling poll's slice.  Shards whose
	 * call failed left the pass and would otherwise wait for the rolling poll.
	 */
	if (rconn_connects(w->conn) != js->connects) {
		if (js->connects)
			js->full = 1; /* not at the first connection: the walk starts from the top then anyway */
		js->connects = rconn_connects(w->conn);
	}
	restart = js->full;
	full = restart || js->full_sweep;
	if (now_ms >= 0)
		snprintf(nows, sizeof(nows), "%lld", (long long)now_ms);
	if (!(rc = step_prepare(w, job, now_ms, restart, &now, &later))) {
		int due_rc, failed = 0;

		js->full = 0;
		js->full_sweep = full;
		if (!js->in_sweep) {
			js->in_sweep = 1;
			js->due_swept = js->walk_swept = 0;
			js->sweep_start_us = start;
		}
		/* sluice's own layouts by due index first (cheap), then the foreign walk */
		due_rc = due_step(w, job, start, budget_us, now, nows, restart, full, &r, lr, &failed);
		if (due_rc < 0) {
			rc = due_rc;
		} else {
			js->due_swept |= due_rc;
			if (js->nlayouts && !foreign_owned(w, job)) {
				js->walk_swept = 1; /* another daemon walks them */
			} else if (js->nlayouts) {
				rc = walk_step(w, job, start, budget_us, nows, &r, lr, &failed);
				js->walk_swept |= r.sweep_done;
			}
			/* a shard, page or path that failed did not stop the others, but the step reports it */
			if (!rc)
				rc = failed;
			if (!rc)
				rc = later;
		}
		/* a sweep ends when both parts ended since it started */
		r.sweep_done = js->due_swept && (js->walk_swept || js->nlayouts == 0);
		if (r.sweep_done)
			js->in_sweep = js->full_sweep = 0;
	}
	status_fold(w, job, rc, start, now, &r, lr);
	if (res)
		*res = r;
	return rc;
}

int worker_sweep(struct worker *w, enum worker_job job, int64_t now_ms, struct worker_result *res)
{
	return worker_sweep_until(w, job, now_ms, NULL, NULL, res);
}

int worker_sweep_until(struct worker *w, enum worker_job job, int64_t now_ms, int (*stop)(void *arg), void *arg,
		       struct worker_result *res)
{
	struct worker_result total = { 0 }, r = { 0 };
	int rc;

	if ((unsigned)job >= WORKER__JOBS)
		return -EINVAL;
	/* start from the top: a whole sweep, whatever a budgeted step left part-way */
	w->jobs[job].full = 1;
	w->jobs[job].layout = 0;
	w->jobs[job].node = 0;
	w->jobs[job].in_sweep = 0;
	strcpy(w->jobs[job].cursor, "0");
	do {
		if (stop && stop(arg)) {
			rc = -ECANCELED;
			break;
		}
		rc = worker_step(w, job, stop ? WORKER_SWEEP_STEP_US : INT64_MAX, now_ms, &r);
		total.paths += r.paths;
		total.entries += r.entries;
		total.emptied += r.emptied;
		total.unmatched += r.unmatched;
		total.skipped += r.skipped;
		total.batches += r.batches;
		total.polls += r.polls;
		total.failed += r.failed;
	} while (!rc && !r.sweep_done);
	/* a step that failed ends the sweep (what it did is counted); the next tick resumes */
	total.sweep_done = r.sweep_done;
	if (res)
		*res = total;
	return rc;
}

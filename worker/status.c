/*
 * The worker's counters, and sweeps that other threads ask for (POST
 * /v1/worker/sweep): the asking thread writes an eventfd and waits on a
 * condition variable; the thread that drives the worker runs the sweeps, so
 * the worker's Redis connection never leaves that thread.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "worker/internal.h"

const double worker_sweep_buckets[WORKER_SWEEP_BUCKETS] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.25,
							      0.5, 1, 2.5, 5, 10 };

void status_error(struct worker *w, enum worker_job job, const char *fmt, const char *detail)
{
	pthread_mutex_lock(&w->lock);
	snprintf(w->st.job[job].last_error, sizeof(w->st.job[job].last_error), fmt, detail);
	pthread_mutex_unlock(&w->lock);
}

static void add_sweep(struct worker_job_status *s, int64_t us)
{
	double secs = (double)us / 1e6;

	s->sweeps++;
	s->last_sweep_us = us;
	s->sweep_seconds += secs;
	for (int i = 0; i < WORKER_SWEEP_BUCKETS; i++)
		if (secs <= worker_sweep_buckets[i])
			s->sweep_hist[i]++;
}

/* Take a sample of st's counters at `now` (ms, >= 0) when its period came (worker/status.h). */
static void history_note(struct worker_status *st, int64_t now)
{
	const struct worker_job_status *d = &st->job[WORKER_DRAIN], *p = &st->job[WORKER_PRUNE];
	struct worker_sample *s;

	if (st->nhistory) {
		int64_t last = st->history[st->nhistory - 1].t_ms;

		if (now < last - WORKER_HISTORY_PERIOD_MS)
			st->nhistory = 0; /* the clock went back (another Redis, a clock stepped): again */
		else if (now / WORKER_HISTORY_PERIOD_MS <= last / WORKER_HISTORY_PERIOD_MS)
			return;
	}
	if (st->nhistory == WORKER_HISTORY) {
		memmove(st->history, st->history + 1, (WORKER_HISTORY - 1) * sizeof(st->history[0]));
		st->nhistory--;
	}
	s = &st->history[st->nhistory++];
	s->t_ms = now;
	s->ticks = d->steps + p->steps;
	s->drained = d->entries;
	s->pruned = p->entries;
	s->errors = d->errors + p->errors;
	s->due_backlog = d->due_backlog + p->due_backlog;
}

void status_fold(struct worker *w, enum worker_job job, int rc, int64_t start_us, int64_t now_ms,
		 const struct worker_result *r, const struct worker_layout_status lr[WORKER_MAX_LAYOUTS])
{
	struct worker_job_status *s = &w->st.job[job];
	const struct job_state *js = &w->jobs[job];
	int64_t end = clock_mono_us(), oldest = INT64_MAX;
	uint64_t backlog = 0;
	int hard;

	for (size_t i = 0; i < js->ndue; i++)
		due_backlog(&js->due[i], js->now_ms, &backlog, &oldest);
	pthread_mutex_lock(&w->lock);
	s->due_backlog = backlog;
	s->oldest_due_age_ms = js->ndue == 0 ? -1 : oldest == INT64_MAX ? 0 : js->now_ms - oldest;
	s->steps++;
	s->paths += r->paths;
	s->entries += r->entries;
	s->emptied += r->emptied;
	s->unmatched += r->unmatched;
	s->skipped += r->skipped;
	s->failed += r->failed;
	s->batches += r->batches;
	s->polls += r->polls;
	s->last_step_us = end - start_us;
	if (rc)
		s->errors++;
	s->last_end_mono_ms = end / 1000;
	/* only some paths failed alone (-EBADMSG with paths counted failed): the job still works */
	hard = rc && !(rc == -EBADMSG && r->failed);
	if (hard) {
		if (!s->failing) {
			s->failing_since_ms = clock_wall_ms();
			s->failing = 1;
		}
		s->failing_rc = rc;
	} else {
		s->last_ok_mono_ms = end / 1000;
		if (s->failing) {
			s->recovered_ms = clock_wall_ms();
			s->last_outage_ms = s->recovered_ms - s->failing_since_ms;
			s->failing = 0;
			s->failing_rc = 0;
			s->failing_since_ms = 0;
		}
	}
	if (r->sweep_done && !rc)
		add_sweep(s, end - w->jobs[job].sweep_start_us);
	s->in_sweep = w->jobs[job].in_sweep;
	for (size_t i = 0; i < w->st.nlayouts; i++) {
		struct worker_layout_status *ls = &w->st.layout[i];

		ls->paths += lr[i].paths;
		ls->entries += lr[i].entries;
		ls->emptied += lr[i].emptied;
		ls->unmatched += lr[i].unmatched;
		ls->skipped += lr[i].skipped;
		ls->failed += lr[i].failed;
	}
	if (!rc)
		s->last_error[0] = '\0';
	w->st.redis_up = rconn_is_up(w->conn);
	w->st.connects = rconn_connects(w->conn);
	w->st.cluster = rconn_is_cluster(w->conn);
	w->st.nprimaries = rconn_primaries(w->conn);
	w->st.nnodes = rconn_node_info(w->conn, w->st.node, WORKER_MAX_NODES);
	w->st.rules_version = w->rules.version;
	w->st.rules = w->rules.n;
	w->st.rules_invalid = w->rules_invalid;
	w->st.rules_lost = w->rules_lost;
	w->st.skew_ms = w->skew.on ? w->skew.ms : -1;
	w->st.skew_pending = w->skew.on ? skew_pending(w) : 0;
	w->st.skew_written = w->skew.written;
	w->st.skew_conflicts = w->skew.conflicts;
	w->st.skew_conflict_ms = w->skew.conflicts ? w->skew.conflict_ms : -1;
	snprintf(w->st.skew_error, sizeof(w->st.skew_error), "%s", w->skew.keep.error);
	w->st.copies_on = w->copies.on;
	snprintf(w->st.copies_version, sizeof(w->st.copies_version), "%s", w->copies.have ? w->copies.text : "");
	w->st.copies_rules_version = w->copies.have ? w->copies.version : 0;
	w->st.copies_pending = w->copies.on ? copies_pending(w) : 0;
	w->st.copies_written = w->copies.written;
	snprintf(w->st.copies_error, sizeof(w->st.copies_error), "%s", w->copies.keep.error);
	if (w->lease)
		lease_status(w->lease, &w->st.lease); /* the fence's refusals of this step */
	if (now_ms >= 0)
		history_note(&w->st, now_ms);
	pthread_mutex_unlock(&w->lock);
}

void worker_note_schedule(struct worker *w, enum worker_job job, int64_t lag_us, uint64_t overruns)
{
	pthread_mutex_lock(&w->lock);
	w->st.job[job].lag_us = lag_us;
	if (lag_us > w->st.job[job].max_lag_us)
		w->st.job[job].max_lag_us = lag_us;
	w->st.job[job].overruns = overruns;
	pthread_mutex_unlock(&w->lock);
}

void worker_note_period(struct worker *w, enum worker_job job, int64_t period_ms)
{
	pthread_mutex_lock(&w->lock);
	w->st.job[job].period_ms = period_ms;
	w->st.job[job].period_noted_mono_ms = clock_mono_ms();
	pthread_mutex_unlock(&w->lock);
}

int worker_health(struct worker *w, int64_t timeout_ms, char *why, size_t cap, int *err)
{
	int64_t now = clock_mono_ms(), wall = clock_wall_ms();
	int rc = 0;

	why[0] = '\0';
	*err = 0;
	pthread_mutex_lock(&w->lock);
	for (int j = 0; j < WORKER__JOBS && !rc; j++) {
		const struct worker_job_status *s = &w->st.job[j];
		int64_t since = s->last_end_mono_ms > s->period_noted_mono_ms ? s->last_end_mono_ms
									    : s->period_noted_mono_ms;
		int64_t stall = 3 * s->period_ms + 2 * timeout_ms + 1000;
		int excused = 0;

		/* Redis could not be reached at its last step, but it was at another job's since */
		for (int o = 0; o < WORKER__JOBS && s->failing && !excused; o++)
			excused = o != j && (s->failing_rc == -EIO || s->failing_rc == -EAGAIN || s->failing_rc == -ETIMEDOUT) &&
				  w->st.job[o].last_ok_mono_ms > s->last_end_mono_ms;
		if (s->failing && !excused) {
			snprintf(why, cap, "%s: %s (failing for %lld ms)", worker_job_name((enum worker_job)j),
				 s->last_error[0] ? s->last_error : "failed",
				 (long long)(wall - s->failing_since_ms));
			*err = s->failing_rc;
			rc = -EAGAIN;
		} else if (s->period_ms > 0 && now - since > stall) {
			snprintf(why, cap, "%s: no tick ended for %lld ms (%lld ticks since start)",
				 worker_job_name((enum worker_job)j), (long long)(now - since), (long long)s->steps);
			*err = -ETIMEDOUT;
			rc = -ETIMEDOUT;
		}
	}
	/* the rules copies (and the skew horizon in them) that the scripts read, which it cannot write */
	if (!rc && w->st.copies_pending && w->st.copies_error[0]) {
		snprintf(why, cap, "rule copies: %s (%zu shards behind)", w->st.copies_error, w->st.copies_pending);
		rc = -EAGAIN;
	} else if (!rc && w->st.skew_pending && w->st.skew_error[0]) {
		snprintf(why, cap, "skew copies: %s (%zu shards behind)", w->st.skew_error, w->st.skew_pending);
		rc = -EAGAIN;
	}
	if (rc == -EAGAIN && !*err)
		*err = strstr(why, REPLY_OOM_TEXT) ? -ENOSPC : -EBADMSG;
	pthread_mutex_unlock(&w->lock);
	return rc;
}

void worker_status(struct worker *w, struct worker_status *out)
{
	pthread_mutex_lock(&w->lock);
	*out = w->st;
	pthread_mutex_unlock(&w->lock);
}

int requests_init(struct worker *w)
{
	pthread_condattr_t ca;

	w->reqfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->reqfd < 0)
		return -errno;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->done, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

void requests_destroy(struct worker *w)
{
	close(w->reqfd);
	pthread_cond_destroy(&w->done);
	pthread_mutex_destroy(&w->lock);
}

int worker_request_fd(const struct worker *w)
{
	return w->reqfd;
}

int worker_request_sweep(struct worker *w, int64_t timeout_ms, struct worker_result res[WORKER__JOBS],
			 int64_t duration_us[WORKER__JOBS])
{
	uint64_t one = 1, mine;
	struct timespec until = clock_deadline(CLOCK_MONOTONIC, timeout_ms);
	int rc = 0;

	pthread_mutex_lock(&w->lock);
	if (w->cancelled) {
		pthread_mutex_unlock(&w->lock);
		return -ECANCELED;
	}
	mine = ++w->req_seq;
	pthread_mutex_unlock(&w->lock);
	if (write(w->reqfd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		return -errno;
	pthread_mutex_lock(&w->lock);
	while (w->done_seq < mine && rc == 0)
		rc = pthread_cond_timedwait(&w->done, &w->lock, &until);
	if (w->done_seq >= mine) {
		/* a sweep that started after our request covers it */
		memcpy(res, w->req_res, sizeof(w->req_res));
		memcpy(duration_us, w->req_us, sizeof(w->req_us));
		rc = w->req_rc;
	} else {
		rc = -ETIMEDOUT;
	}
	pthread_mutex_unlock(&w->lock);
	return rc;
}

void worker_cancel_requests(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	if (w->done_seq < w->req_seq) {
		memset(w->req_res, 0, sizeof(w->req_res));
		memset(w->req_us, 0, sizeof(w->req_us));
		w->req_rc = -ECANCELED;
		w->done_seq = w->req_seq;
		pthread_cond_broadcast(&w->done);
	}
	w->cancelled = 1; /* requests from now on are answered at once */
	pthread_mutex_unlock(&w->lock);
}

void worker_serve_requests(struct worker *w, int (*stop)(void *arg), void *arg)
{
	struct worker_result r[WORKER__JOBS] = { 0 };
	int64_t us[WORKER__JOBS] = { 0 };
	uint64_t n, target;
	int rc = 0;

	if (read(w->reqfd, &n, sizeof(n)) != (ssize_t)sizeof(n))
		return;
	pthread_mutex_lock(&w->lock);
	target = w->req_seq;
	pthread_mutex_unlock(&w->lock);
	for (int j = 0; j < WORKER__JOBS && !rc; j++) {
		int64_t t0 = clock_mono_us();

		rc = worker_sweep_until(w, (enum worker_job)j, -1, stop, arg, &r[j]);
		us[j] = clock_mono_us() - t0;
	}
	pthread_mutex_lock(&w->lock);
	memcpy(w->req_res, r, sizeof(r));
	memcpy(w->req_us, us, sizeof(us));
	w->req_rc = rc;
	w->done_seq = target;
	pthread_cond_broadcast(&w->done);
	pthread_mutex_unlock(&w->lock);
}

/* Bulk resets in the background: the job list, its thread, and a job as JSON (admin/jobs.h). */
#include "admin/jobs.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/reply.h"
#include "core/clock.h"
#include "core/jsonv.h"
#include "core/log.h"
#include "core/rconn.h"
#include "core/reset.h"

enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_CANCELLED, JOB_FAILED };
static const char *const state_names[] = { "queued", "running", "done", "cancelled", "failed" };

struct job {
	uint64_t id;
	char *match;
	int dry_run;
	enum job_state state;    /* under jobs.lock */
	atomic_int cancel;       /* read by reset_match between batches */
	atomic_int retries;      /* walks started again after Redis stopped answering */
	struct reset_progress prog;
	int64_t created_ms;      /* Unix ms */
	int64_t queued_us, ended_us; /* CLOCK_MONOTONIC; ended_us 0 until it ended */
	cJSON *result;           /* owned: reset_match's answer (done), or {"error": ...} (failed) */
};

struct jobs {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	int stopping;
	struct rconn *conn;          /* the thread's */
	const struct layout *layouts;
	size_t nlayouts;
	size_t batch;
	uint64_t next_id;
	struct job *job[JOBS_KEEP];  /* oldest first; job[0..n) */
	size_t n;
};

static int64_t unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void job_free(struct job *jb)
{
	if (!jb)
		return;
	free(jb->match);
	cJSON_Delete(jb->result);
	free(jb);
}

static int ended(const struct job *jb)
{
	return jb->state != JOB_QUEUED && jb->state != JOB_RUNNING;
}

/* The job as JSON (admin/jobs.h); under the lock.  NULL on ENOMEM. */
static cJSON *job_json(const struct job *jb)
{
	cJSON *o = cJSON_CreateObject();
	char id[24];
	int64_t end = jb->ended_us ? jb->ended_us : clock_mono_us();

	snprintf(id, sizeof(id), "%llu", (unsigned long long)jb->id);
	if (!o || !cJSON_AddStringToObject(o, "id", id) || !cJSON_AddStringToObject(o, "kind", "reset") ||
	    !cJSON_AddStringToObject(o, "state", state_names[jb->state]) ||
	    jsonv_add_path(o, "match", jb->match, strlen(jb->match)) ||
	    !cJSON_AddBoolToObject(o, "dry_run", jb->dry_run) ||
	    jsonv_add_int(o, "walked", atomic_load(&jb->prog.walked)) ||
	    jsonv_add_int(o, "paths", atomic_load(&jb->prog.paths)) ||
	    jsonv_add_int(o, "keys", atomic_load(&jb->prog.keys)) ||
	    jsonv_add_int(o, "entries", atomic_load(&jb->prog.entries)) ||
	    jsonv_add_int(o, "created_ms", jb->created_ms) ||
	    jsonv_add_int(o, "elapsed_ms", (end - jb->queued_us) / 1000) ||
	    !cJSON_AddBoolToObject(o, "cancel_requested", atomic_load(&jb->cancel) != 0) ||
	    jsonv_add_int(o, "retries", atomic_load(&jb->retries)))
		goto fail;
	if (jb->result) {
		const cJSON *skipped = cJSON_GetObjectItemCaseSensitive(jb->result, "skipped_registries");
		const cJSON *err = cJSON_GetObjectItemCaseSensitive(jb->result, "error");
		cJSON *copy;

		if (skipped && (!(copy = cJSON_Duplicate(skipped, 1)) ||
				!cJSON_AddItemToObject(o, "skipped_registries", copy)))
			goto fail;
		if (err && (!(copy = cJSON_Duplicate(err, 1)) || !cJSON_AddItemToObject(o, "error", copy)))
			goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* The oldest queued job, or NULL; under the lock. */
static struct job *next_queued(struct jobs *j)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->job[i]->state == JOB_QUEUED)
			return j->job[i];
	return NULL;
}


/* The error a failed reset answers, as the routes would answer it: {"error": {...}}. */
static cJSON *failure(const struct rconn *conn, int rc)
{
	struct api_response r = { 0 };

	reply_redis_error(&r, conn, rc);
	return r.body;
}

/* Wait `ms` for a retry, in steps that see a cancel.  1 when cancelled meanwhile. */
static int backoff(struct job *jb, int ms)
{
	for (int waited = 0; waited < ms; waited += 10) {
		struct timespec ten = { 0, 10 * 1000000L };

		if (atomic_load(&jb->cancel))
			return 1;
		nanosleep(&ten, NULL);
	}
	return atomic_load(&jb->cancel) != 0;
}

/*
 * The reset, walked again from the start when Redis did not answer (a
 * timeout, a reconnect's backoff), up to JOB_RETRIES times, 100 ms doubling
 * apart: what was reset is not met again, so the counts add up; a dry run
 * counts again from zero.
 */
static int run_reset(struct jobs *j, struct job *jb, cJSON **out)
{
	int rc;

	for (int attempt = 0;; attempt++) {
		char q[300];

		rc = reset_match(j->conn, j->layouts, j->nlayouts, jb->match, jb->dry_run, j->batch, &jb->prog, out);
		if ((rc != -EIO && rc != -EAGAIN) || attempt == JOB_RETRIES)
			return rc;
		log_event(LOG_WARN, "reset_job_retry", "id=%llu attempt=%d reason=%s", (unsigned long long)jb->id,
			  attempt + 1, log_quote(q, sizeof(q), rconn_errstr(j->conn), strlen(rconn_errstr(j->conn))));
		atomic_fetch_add(&jb->retries, 1);
		if (backoff(jb, 100 << attempt))
			return -ECANCELED;
		if (jb->dry_run) {
			atomic_store(&jb->prog.walked, 0);
			atomic_store(&jb->prog.paths, 0);
			atomic_store(&jb->prog.keys, 0);
			atomic_store(&jb->prog.entries, 0);
		}
	}
}

static void run_one(struct jobs *j, struct job *jb)
{
	cJSON *out = NULL;
	int rc = run_reset(j, jb, &out);
	char q[300];

	pthread_mutex_lock(&j->lock);
	jb->ended_us = clock_mono_us();
	if (rc == 0) {
		jb->state = JOB_DONE;
		jb->result = out; /* its skipped_registries; the counts are prog's (every attempt's) */
	} else if (rc == -ECANCELED || atomic_load(&jb->cancel)) {
		jb->state = JOB_CANCELLED; /* also when the stop cut its last call short */
	} else {
		jb->state = JOB_FAILED;
		jb->result = failure(j->conn, rc);
	}
	/* under the lock: once it is unlocked, an ended job may be forgotten (make_room frees it) */
	log_event(jb->state == JOB_FAILED ? LOG_WARN : LOG_INFO, "reset_job",
		  "id=%llu state=%s match=%s dry_run=%d walked=%lld paths=%lld keys=%lld entries=%lld ms=%lld",
		  (unsigned long long)jb->id, state_names[jb->state], log_quote(q, sizeof(q), jb->match, strlen(jb->match)),
		  jb->dry_run, atomic_load(&jb->prog.walked), atomic_load(&jb->prog.paths),
		  atomic_load(&jb->prog.keys), atomic_load(&jb->prog.entries),
		  (long long)((jb->ended_us - jb->queued_us) / 1000));
	pthread_mutex_unlock(&j->lock);
}

static void *thread_main(void *arg)
{
	struct jobs *j = arg;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		struct job *jb = next_queued(j);

		if (!jb && j->stopping)
			break;
		if (!jb) {
			pthread_cond_wait(&j->wake, &j->lock);
			continue;
		}
		jb->state = JOB_RUNNING;
		pthread_mutex_unlock(&j->lock);
		run_one(j, jb);
		pthread_mutex_lock(&j->lock);
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

struct jobs *jobs_new(const struct jobs_config *cfg)
{
	struct jobs *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->layouts = cfg->layouts;
	j->nlayouts = cfg->nlayouts;
	j->batch = cfg->batch ? cfg->batch : 1;
	j->next_id = 1;
	if (!(j->conn = rconn_new(cfg->redis, cfg->timeout_ms))) {
		free(j);
		return NULL;
	}
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->wake, NULL);
	if (pthread_create(&j->thread, NULL, thread_main, j)) {
		pthread_cond_destroy(&j->wake);
		pthread_mutex_destroy(&j->lock);
		rconn_free(j->conn);
		free(j);
		return NULL;
	}
	return j;
}

void jobs_stop(struct jobs *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	j->stopping = 1;
	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = j->job[i];

		atomic_store(&jb->cancel, 1);
		if (jb->state == JOB_QUEUED) {
			jb->state = JOB_CANCELLED;
			jb->ended_us = clock_mono_us();
		}
	}
	pthread_cond_broadcast(&j->wake);
	pthread_mutex_unlock(&j->lock);
}

int jobs_busy(struct jobs *j)
{
	int busy = 0;

	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < j->n && !busy; i++)
		busy = j->job[i]->state == JOB_RUNNING;
	pthread_mutex_unlock(&j->lock);
	return busy;
}

void jobs_abort(struct jobs *j)
{
	rconn_abort(j->conn);
}

void jobs_free(struct jobs *j)
{
	if (!j)
		return;
	jobs_stop(j);
	pthread_join(j->thread, NULL);
	for (size_t i = 0; i < j->n; i++)
		job_free(j->job[i]);
	rconn_free(j->conn);
	pthread_cond_destroy(&j->wake);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

/* Room for one more job: forget the oldest ended one when the list is full.  0 or -EBUSY; under the lock. */
static int make_room(struct jobs *j)
{
	size_t waiting = 0, oldest = j->n;

	for (size_t i = 0; i < j->n; i++) {
		if (!ended(j->job[i]))
			waiting++;
		else if (oldest == j->n)
			oldest = i;
	}
	if (waiting >= JOBS_WAITING_MAX)
		return -EBUSY;
	if (j->n < JOBS_KEEP)
		return 0;
	job_free(j->job[oldest]);
	memmove(&j->job[oldest], &j->job[oldest + 1], (j->n - oldest - 1) * sizeof(j->job[0]));
	j->n--;
	return 0;
}

int jobs_add_reset(struct jobs *j, const char *match, int dry_run, cJSON **out)
{
	struct job *jb = calloc(1, sizeof(*jb));
	int rc;

	if (!jb || !(jb->match = strdup(match))) {
		job_free(jb);
		return -ENOMEM;
	}
	jb->dry_run = dry_run;
	jb->state = JOB_QUEUED;
	jb->prog.cancel = &jb->cancel;
	jb->created_ms = unix_ms();
	jb->queued_us = clock_mono_us();
	pthread_mutex_lock(&j->lock);
	rc = j->stopping ? -ECANCELED : make_room(j);
	if (!rc) {
		jb->id = j->next_id++;
		*out = job_json(jb);
		if (!*out) {
			rc = -ENOMEM;
		} else {
			j->job[j->n++] = jb;
			jb = NULL;
			pthread_cond_signal(&j->wake);
		}
	}
	pthread_mutex_unlock(&j->lock);
	job_free(jb);
	return rc;
}

/* Job `id` (its decimal text), or NULL; under the lock. */
static struct job *find(struct jobs *j, const char *id)
{
	char *end;
	unsigned long long v;

	if (!*id || *id < '0' || *id > '9')
		return NULL;
	errno = 0;
	v = strtoull(id, &end, 10);
	if (*end || errno)
		return NULL;
	for (size_t i = 0; i < j->n; i++)
		if (j->job[i]->id == v)
			return j->job[i];
	return NULL;
}

int jobs_get(struct jobs *j, const char *id, cJSON **out)
{
	struct job *jb;
	int rc = -ENOENT;

	pthread_mutex_lock(&j->lock);
	if ((jb = find(j, id)))
		rc = (*out = job_json(jb)) ? 0 : -ENOMEM;
	pthread_mutex_unlock(&j->lock);
	return rc;
}

int jobs_list(struct jobs *j, cJSON **out)
{
	cJSON *o = cJSON_CreateObject(), *arr = o ? cJSON_AddArrayToObject(o, "jobs") : NULL;
	int rc = arr ? 0 : -ENOMEM;

	pthread_mutex_lock(&j->lock);
	for (size_t i = j->n; i-- > 0 && !rc;) {
		cJSON *one = job_json(j->job[i]);

		if (!one || !cJSON_AddItemToArray(arr, one)) {
			cJSON_Delete(one);
			rc = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&j->lock);
	if (rc) {
		cJSON_Delete(o);
		return rc;
	}
	*out = o;
	return 0;
}

int jobs_cancel(struct jobs *j, const char *id, cJSON **out)
{
	struct job *jb;
	int rc = -ENOENT;

	pthread_mutex_lock(&j->lock);
	if ((jb = find(j, id))) {
		rc = ended(jb) ? -EALREADY : 0;
		if (!rc) {
			atomic_store(&jb->cancel, 1);
			if (jb->state == JOB_QUEUED) {
				jb->state = JOB_CANCELLED;
				jb->ended_us = clock_mono_us();
			}
		}
		if (!(*out = job_json(jb)))
			rc = -ENOMEM;
	}
	pthread_mutex_unlock(&j->lock);
	return rc;
}

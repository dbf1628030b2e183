#ifndef SLUICE_ADMIN_JOBS_H
#define SLUICE_ADMIN_JOBS_H
/*
 * Bulk resets in the background (DESIGN.md "Admin API": POST /v1/reset "run
 * in the background with progress").  One thread with its own Redis
 * connection runs the jobs one after another, in the order they were made;
 * a job walks the registries as core/reset.h's reset_match does and sees a
 * cancel (DELETE /v1/jobs/{id}, or the daemon stopping) at the next batch
 * boundary; a walk that Redis stopped answering (a timeout) is started
 * again, JOB_RETRIES times at most, before the job fails.  The last JOBS_KEEP jobs are kept for GET /v1/jobs/{id}; ids are
 * this process's (1, 2, ...): a job is known to the daemon that runs it.
 *
 * A job, as the routes answer it (caller owns the cJSON):
 *   {"id": "7", "kind": "reset", "state": "queued"|"running"|"done"|"cancelled"|"failed",
 *    "match", "dry_run", "walked", "paths", "keys", "entries",
 *    "created_ms" (Unix ms), "elapsed_ms" (queued to ended, or to now),
 *    "cancel_requested" (bool), "retries" (walks started again after Redis stopped answering),
 *    ["skipped_registries"] (done), ["error": {"code", "message"}] (failed)}
 * walked counts the registry members the walk met (matching the glob);
 * paths, keys and entries are what was reset so far (or would be, dry_run).
 *
 * Thread-safe: every function may be called from any thread.
 */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "core/layout.h"
#include "core/redis_target.h"

#define JOBS_KEEP 32      /* jobs remembered, the oldest finished forgotten first */
#define JOBS_WAITING_MAX 8 /* jobs queued or running at once; more are refused */
#define JOB_RETRIES 4      /* a walk Redis stopped answering is started again this often (100 ms doubling apart) */

struct jobs_config {
	const struct redis_target *redis; /* copied */
	int64_t timeout_ms;               /* Redis connect and command timeout */
	const struct layout *layouts;     /* borrowed; outlive the jobs */
	size_t nlayouts;
	size_t batch;                     /* paths per page and per pipeline (reset_match's batch) */
};

struct jobs;

/* New job runner with its thread started.  NULL on ENOMEM or when the thread cannot start. */
struct jobs *jobs_new(const struct jobs_config *cfg);
/*
 * Cancel every job that waits or runs, without waiting (a running one ends
 * at its next batch boundary); from now on jobs_add_reset refuses.
 */
void jobs_stop(struct jobs *j);
/* 1 while a job runs (its thread inside a reset). */
int jobs_busy(struct jobs *j);
/* From any thread: the job's Redis call in flight fails now, later ones at once (rconn_abort). */
void jobs_abort(struct jobs *j);
/* jobs_stop, then wait for the thread and free everything.  NULL is a no-op. */
void jobs_free(struct jobs *j);
/*
 * Queue a bulk reset of the paths matching `match` (a glob_valid glob:
 * the caller checked it), only counted with `dry_run`.  *out: the new job
 * (state "queued", or "running" once the thread took it).  0, -EBUSY
 * (JOBS_WAITING_MAX jobs wait or run), -ECANCELED (stopping), -ENOMEM.
 */
int jobs_add_reset(struct jobs *j, const char *match, int dry_run, cJSON **out);
/* *out: job `id` (the text of its id).  0, -ENOENT (unknown or forgotten), -ENOMEM. */
int jobs_get(struct jobs *j, const char *id, cJSON **out);
/* *out: {"jobs": [job, ...]}, newest first.  0 or -ENOMEM. */
int jobs_list(struct jobs *j, cJSON **out);
/*
 * Cancel job `id`: a queued job ends "cancelled" at once, a running one at
 * its next batch boundary (cancel_requested is true until then).  *out: the
 * job after the request.  0, -ENOENT, -EALREADY (it had ended: *out is it), -ENOMEM.
 */
int jobs_cancel(struct jobs *j, const char *id, cJSON **out);

#endif

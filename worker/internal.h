#ifndef SLUICE_WORKER_INTERNAL_H
#define SLUICE_WORKER_INTERNAL_H
/*
 * The worker's insides, shared by its files and nobody else:
 *   worker.c    lifetime, rules, whole sweeps
 *   due.c       one budgeted step over sluice's own layouts: the due index, shard by shard
 *   walk.c      one budgeted step over foreign layouts: the registry walk, page after page
 *   jobs.c      one page's batched job script call, built and its reply read
 *   status.c    counters, and sweeps requested by other threads
 */
#include <pthread.h>

#include "core/layout.h"
#include "core/rconn.h"
#include "core/reply.h"
#include "core/rules.h"
#include "core/shard.h"
#include "worker/worker.h"

/* Where the due-driven walk of one of sluice's own layouts stands (due.c). */
struct due_state {
	const struct layout *layout;
	size_t index;                    /* the layout's index in the worker's layouts */
	int64_t next_due[SHARD_COUNT];   /* ms each shard's registry said its lowest score is
					  * (INT64_MAX: empty; 0: not asked yet) */
	uint32_t backlog[SHARD_COUNT];   /* paths each shard still had due after its last call */
	unsigned char pending[SHARD_COUNT]; /* chosen for the current pass and not done */
	size_t cursor;                   /* next shard of the pass */
	size_t poll_at;                  /* where the rolling poll goes on */
	int64_t last_poll_ms;            /* now of the last pass start; -1: none */
	int in_pass;
};

/* Where one job's walk stands: the layouts it maintains and the cursor in them. */
struct job_state {
	struct due_state *due;   /* sluice's own layouts of this job (ndue), walked by due index */
	size_t ndue, due_at;     /* due_at: the one whose pass goes on */
	int full;                /* the next step starts a whole sweep (worker_sweep) */
	int64_t now_ms;          /* the now (ms) of the last due step */
	const struct layout *layouts[WORKER_MAX_LAYOUTS]; /* the foreign layouts this job walks, in order */
	size_t index[WORKER_MAX_LAYOUTS]; /* each one's index in the worker's layouts (for the status) */
	size_t nlayouts;
	size_t layout;           /* index into layouts of the cursor */
	char cursor[REPLY_CURSOR_MAX]; /* SSCAN/SCAN cursor, "0" at the start of a layout */
	int in_sweep;
	int64_t sweep_start_us;
};

/* One page's job script call, built in reused buffers (bounded by batch_size, not the registry). */
struct job_batch {
	struct cmdargs keys, args;
	size_t eligible;         /* paths in the call */
};

struct worker {
	struct rconn *conn;
	char *prefix;
	size_t batch_size;
	struct ruleset rules;
	size_t rules_invalid;
	struct job_state jobs[WORKER__JOBS];
	struct rbatch *batch;
	struct job_batch jb;

	pthread_mutex_t lock;    /* guards st and the request fields below */
	struct worker_status st;

	/* sweep requests from other threads */
	pthread_cond_t done;     /* CLOCK_MONOTONIC */
	int reqfd;               /* eventfd */
	uint64_t req_seq, done_seq;
	struct worker_result req_res[WORKER__JOBS];
	int64_t req_us[WORKER__JOBS];
	int req_rc;
	int cancelled;           /* shutting down: sweep requests are refused */
};

/*
 * Build the job script call of layout `l` for one page of members, with
 * `now` ("" = Redis TIME): KEYS = registry, per path its data [and meta] key;
 * ARGV = now, per path the path and its rule's job arguments [, score unit].
 * Counts visited, skipped and unmatched paths into *r.  0 or -ENOMEM.
 */
int job_build(struct job_batch *jb, const struct layout *l, const struct ruleset *rules,
	      const redisReply *members, const char *now, struct worker_result *r);
/* Queue the call built by job_build (jb->eligible > 0).  0 or -ENOMEM. */
int job_queue(struct rbatch *b, struct job_batch *jb, const struct layout *l);
/*
 * Fold the job script's reply {entries, emptied, _, skipped?} into *r and *ls.
 * 0, or reply_errno() of the reply (-ENOSPC, -EBADMSG, -EPROTO) with the reason in `why`.
 */
int job_fold(const redisReply *e, struct worker_result *r, struct worker_layout_status *ls, char *why,
	     size_t cap);
void job_batch_free(struct job_batch *jb);

void due_init(struct due_state *d, const struct layout *l, size_t index);
/*
 * One step over `job`'s own layouts: the pass of each (due shards, the
 * rolling poll's slice; every shard with `full`) from where the last step
 * stopped, until it ends or `budget_us` after `start_us` is spent.
 * `now_ms` >= 0 is the scripts' now, -1 Redis TIME.  1 when every pass
 * ended, 0 when the budget ran out first, or a negative errno (the job's
 * last_error set); the position is kept so the next step resumes.
 */
int due_step(struct worker *w, enum worker_job job, int64_t start_us, int64_t budget_us, int64_t now_ms,
	     int full, struct worker_result *r, struct worker_layout_status lr[WORKER_MAX_LAYOUTS]);
/* Add d's due backlog (paths) to *paths and lower *oldest to its oldest due time (ms) by now. */
void due_backlog(const struct due_state *d, int64_t now, uint64_t *paths, int64_t *oldest);

/*
 * Walk `job` from its cursor until the sweep ends or `budget_us` after
 * `start_us` is spent, counting into *r and lr[] (per layout).  0 or a
 * negative errno (the job's last_error set).
 */
int walk_step(struct worker *w, enum worker_job job, int64_t start_us, int64_t budget_us, const char *now,
	      struct worker_result *r, struct worker_layout_status lr[WORKER_MAX_LAYOUTS]);

/* Set job's last_error (printf of `fmt` with one string). */
void status_error(struct worker *w, enum worker_job job, const char *fmt, const char *detail);
/* Fold one step's result (rc, counts, durations) into the status. */
void status_fold(struct worker *w, enum worker_job job, int rc, int64_t start_us, const struct worker_result *r,
		 const struct worker_layout_status lr[WORKER_MAX_LAYOUTS]);
/* Set up and tear down the request machinery; 0 or -errno. */
int requests_init(struct worker *w);
void requests_destroy(struct worker *w);

#endif

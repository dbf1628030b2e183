#ifndef SLUICE_WORKER_H
#define SLUICE_WORKER_H
/*
 * The worker's maintenance jobs.  Each job walks the registry sets of the
 * layouts it maintains with SSCAN, looks up each path's rule, and calls its
 * script for a whole batch of paths per EVALSHA, with the next SSCAN in the
 * same pipeline (one round trip per batch, never one per path).
 *
 *   drain (WORKER_DRAIN): leaky buckets lose floor(rate x elapsed + carry)
 *                         entries (lua/leaky_bucket_drain.lua)
 *   prune (WORKER_PRUNE): sliding logs lose entries older than the window and
 *                         sliding counters their expired sub-windows; fixed-window
 *                         counters without a TTL get one; token buckets refilled
 *                         to capacity are deleted; empty keys leave the registry
 *                         (lua/sliding_log_prune.lua, sliding_counter_prune.lua,
 *                         fixed_window_repair.lua, token_bucket_reclaim.lua)
 *
 * A step stops when its time budget is spent and resumes from its cursor at
 * the next step; memory does not grow with the registry (one batch at a time).
 * A path with no rule, or whose rule is of another algorithm, is left alone
 * and counted as unmatched.
 *
 * Threads: one worker is driven by one thread (it owns its Redis connection).
 * worker_status() may be called from any thread.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/layout.h"
#include "core/rules.h"

enum worker_job { WORKER_DRAIN = 0, WORKER_PRUNE, WORKER__JOBS };

/* Upper bounds (s) of the sweep-duration histogram buckets (+Inf is `sweeps`). */
#define WORKER_SWEEP_BUCKETS 11
extern const double worker_sweep_buckets[WORKER_SWEEP_BUCKETS];

/* "drain", "prune"; static storage. */
const char *worker_job_name(enum worker_job j);
/* What the worker does to algorithm `a`'s state: "drained", "pruned", "repaired", "reclaimed". */
const char *worker_action_name(enum algorithm a);

struct worker_config {
	const struct redis_target *redis; /* copied */
	int64_t timeout_ms;               /* Redis connect/command timeout */
	const char *prefix;               /* key prefix; copied */
	size_t batch_size;                /* paths per SSCAN COUNT and per script call */
	const struct layout *layouts;     /* borrowed; must outlive the worker */
	size_t nlayouts;
};

/* Counters of one job since start. */
struct worker_job_status {
	uint64_t steps;          /* calls of worker_step */
	uint64_t sweeps;         /* full passes over every registry of the job */
	uint64_t batches;        /* script calls sent */
	uint64_t paths;          /* registry members visited */
	uint64_t entries;        /* entries drained or pruned */
	uint64_t emptied;        /* paths whose state emptied and left the registry */
	uint64_t unmatched;      /* paths left alone: no rule, or a rule of another algorithm */
	uint64_t skipped;        /* paths left untouched: their key has another type, or an empty member */
	uint64_t errors;         /* steps that failed (Redis down, script error) */
	int64_t last_step_us;    /* duration of the last step */
	int64_t last_sweep_us;   /* duration of the last complete sweep (wall, across steps) */
	int64_t lag_us;          /* lag of the last scheduled start (worker_note_schedule) */
	int64_t max_lag_us;
	uint64_t overruns;
	int in_sweep;            /* 1 while a sweep is part-way (cursor not at the start) */
	char last_error[160];    /* why the last step failed; "" when it succeeded */
	/* complete sweeps by duration: sweep_hist[i] counts those <= worker_sweep_buckets[i] s */
	uint64_t sweep_hist[WORKER_SWEEP_BUCKETS];
	double sweep_seconds;    /* sum of complete sweep durations, s */
};

#define WORKER_MAX_LAYOUTS 32

/* Counters of one layout since start (the job that walks it is its algorithm's). */
struct worker_layout_status {
	char name[32];
	enum algorithm algorithm;
	uint64_t paths;          /* registry members (or scanned keys) visited */
	uint64_t entries;        /* drained (leaky bucket), pruned (logs: entries; counters:
				  * sub-window fields), repaired (fixed window: counters given a
				  * TTL), reclaimed (token bucket: full buckets deleted) */
	uint64_t emptied, unmatched, skipped;
};

struct worker_status {
	struct worker_job_status job[WORKER__JOBS];
	struct worker_layout_status layout[WORKER_MAX_LAYOUTS];
	size_t nlayouts;
	int redis_up;
	uint64_t connects;       /* connections established (1 + reconnects) */
	uint64_t rules_version;
	size_t rules;            /* rules loaded */
	size_t rules_invalid;    /* rules in Redis that failed validation (skipped) */
};

/* Result of one step (also folded into the status). */
struct worker_result {
	int sweep_done;          /* the step finished a full sweep */
	uint64_t paths, entries, emptied, unmatched, skipped, batches;
};

struct worker;

/* New worker; does not connect yet.  NULL on ENOMEM or a bad config. */
struct worker *worker_new(const struct worker_config *cfg);
void worker_free(struct worker *w);

/*
 * One step of `job`: walk from the saved cursor until the sweep ends or
 * `budget_us` (> 0; CLOCK_MONOTONIC) is spent.  `now_ms` >= 0 is passed to
 * the scripts as "now" (tests, benchmarks); -1 lets each script use Redis TIME.
 * Reloads the rules first when their version changed.
 * 0 with *res (may be NULL) filled, or a negative errno (-EIO, -EAGAIN: Redis
 * down; -EPROTO: unexpected reply); the cursor is kept so the next step resumes.
 */
int worker_step(struct worker *w, enum worker_job job, int64_t budget_us, int64_t now_ms,
		struct worker_result *res);
/* One full sweep of `job` from the start of its registries, whatever the time; same returns. */
int worker_sweep(struct worker *w, enum worker_job job, int64_t now_ms, struct worker_result *res);
/* Record the scheduler's view of the job (lag and overruns), for the status. */
void worker_note_schedule(struct worker *w, enum worker_job job, int64_t lag_us, uint64_t overruns);
/*
 * Sweeps on request from another thread (POST /v1/worker/sweep), run by the
 * thread that drives the worker, so its Redis connection stays single-threaded.
 *
 * worker_request_sweep(), from any thread: asks for one full sweep of every
 * job and waits up to `timeout_ms` for it.  0 and res[job] filled, the
 * sweep's own error (negative errno), or -ETIMEDOUT (the sweep goes on).
 *
 * worker_request_fd(): an eventfd that turns readable when a request waits;
 * the driving thread polls it and then calls worker_serve_requests(), which
 * runs the sweeps and wakes every waiting requester.
 */
int worker_request_sweep(struct worker *w, int64_t timeout_ms, struct worker_result res[WORKER__JOBS],
			 int64_t duration_us[WORKER__JOBS]);
int worker_request_fd(const struct worker *w);
void worker_serve_requests(struct worker *w);
/* Shutdown: wake every waiting requester with -ECANCELED and refuse new requests. */
void worker_cancel_requests(struct worker *w);

/* Thread-safe snapshot of the counters. */
void worker_status(struct worker *w, struct worker_status *out);

#endif

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
 *   prune (WORKER_PRUNE): sliding logs lose the entries, and sliding counters
 *                         the sub-windows, that have left the window of every
 *                         client within the skew horizon (lua/lib/skew.lua);
 *                         fixed-window counters without a TTL get one; token
 *                         buckets full for the whole horizon are deleted; empty
 *                         keys leave the registry (lua/sliding_log_prune.lua,
 *                         sliding_counter_prune.lua, fixed_window_repair.lua,
 *                         token_bucket_reclaim.lua).  Which job maintains which
 *                         algorithm, and with what, is its table's (core/algorithm.h).
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

#include "core/redis_target.h"
#include "core/layout.h"
#include "core/rules.h"

#include "worker/status.h"

struct worker_config {
	const struct redis_target *redis; /* copied */
	int64_t timeout_ms;               /* Redis connect/command timeout */
	const char *prefix;               /* key prefix; copied */
	size_t batch_size;                /* paths per SSCAN COUNT and per script call */
	const struct layout *layouts;     /* borrowed; must outlive the worker */
	size_t nlayouts;
};


/* New worker; does not connect yet.  NULL on ENOMEM or a bad config. */
struct worker *worker_new(const struct worker_config *cfg);
void worker_free(struct worker *w);

/*
 * One step of `job`: walk from the saved cursor until the sweep ends or
 * `budget_us` (> 0; CLOCK_MONOTONIC) is spent.  `now_ms` >= 0 is passed to
 * the scripts as "now" (tests, benchmarks); -1 lets each script use Redis TIME.
 * Reloads the rules first when their version changed.
 * 0 with *res (may be NULL) filled, or a negative errno (-EIO, -EAGAIN: Redis
 * down; -ENOSPC: Redis out of memory; -EPROTO: unexpected reply); the cursor
 * is kept so the next step resumes.
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
 * worker_request_sweep() and worker_status() are in worker/status.h.
 *
 * worker_request_fd(): an eventfd that turns readable when a request waits;
 * the driving thread polls it and then calls worker_serve_requests(), which
 * runs the sweeps and wakes every waiting requester.
 */
int worker_request_fd(const struct worker *w);
void worker_serve_requests(struct worker *w);
/* Shutdown: wake every waiting requester with -ECANCELED and refuse new requests. */
void worker_cancel_requests(struct worker *w);

#endif

#ifndef SLUICE_WORKER_H
#define SLUICE_WORKER_H
/*
 * The worker's maintenance jobs.  sluice's own layouts (key layout 2) are
 * walked by their due index (worker/due.c): each of the 1024 shards'
 * registries is a sorted set scored by when a path next needs the worker,
 * and one call of the algorithm's shard script (<alg>_<job>_shard.lua) per
 * shard handles what is due there and reschedules it, in pipelines across
 * shards, so a step costs what is due, not what is registered.  Foreign
 * layouts are walked as their registry allows (SSCAN of a set, or SCAN),
 * one batched script call per page (worker/walk.c).
 *
 *   drain (WORKER_DRAIN): leaky buckets lose floor(rate x elapsed + carry)
 *                         entries, at the rate the bucket records (own
 *                         layout) or its rule's (foreign)
 *   prune (WORKER_PRUNE): sliding logs lose the entries, and sliding counters
 *                         the sub-windows, that have left the window of every
 *                         client within the skew horizon (lua/lib/skew.lua);
 *                         fixed-window counters without a TTL get one; token
 *                         buckets full for the whole horizon are deleted; empty
 *                         keys leave the registry.  Which job maintains which
 *                         algorithm, and with what, is its table's (core/algorithm.h).
 *
 * A step stops when its time budget is spent and resumes where it stopped
 * at the next step; memory does not grow with the registry (one pipeline
 * at a time, and a few bytes per shard).  A foreign path with no rule, or
 * whose rule is of another algorithm, is left alone and counted as unmatched.
 *
 * The worker also keeps the skew horizon (config max_clock_skew_ms) in every
 * shard's rules copy, where the scripts read it (worker/skew.c), and the
 * rules themselves, which scripts called by rule name read (worker/copies.c).
 * With sum_stats, a prune step also goes on with the aggregation of the
 * shards' stats hashes (core/stats.h: one every STATS_PERIOD_MS, or after a
 * rule changed), within WORKER_STATS_BUDGET_US of its own per step.  With
 * census, a prune step also goes on with the census of the own layouts'
 * mismatched paths (core/census.h: a pass every CENSUS_PERIOD_MS, or after
 * a rule changed), within WORKER_CENSUS_BUDGET_US of its own per step.
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

/* µs a prune step may spend on the stats aggregation (at least one round trip of 256 HGETALLs) */
#define WORKER_STATS_BUDGET_US 5000
/* µs a prune step may spend on the census of mismatches (at least one round: a ZSCAN and an HMGET pipeline) */
#define WORKER_CENSUS_BUDGET_US 5000

struct worker_config {
	const struct redis_target *redis; /* copied */
	int64_t timeout_ms;               /* Redis connect/command timeout */
	const char *prefix;               /* key prefix; copied */
	size_t batch_size;                /* paths per shard call, per SSCAN COUNT and per batched call */
	const struct layout *layouts;     /* borrowed; must outlive the worker */
	size_t nlayouts;
	int write_skew;                   /* keep max_clock_skew_ms in every shard's rules copy
					   * (0: leave the copies alone; the scripts use their default) */
	int64_t max_clock_skew_ms;        /* with write_skew: the skew horizon, ms >= 0 */
	int write_rules;                  /* keep the loaded rules in every shard's rules copy
					   * (worker/copies.c; 0: leave the rule fields alone) */
	int sum_stats;                    /* sum the shards' decision counters and clock lag at prune
					   * steps (core/stats.h; worker_stats); 0: not */
	int census;                       /* count the own layouts' mismatched paths at prune steps
					   * (core/census.h; worker_census); 0: not */
	const char *lease_id;             /* share the shards with other daemons under this id
					   * (worker/lease.h; copied): the steps maintain only the
					   * shards whose lease it holds, with fenced scripts, and the
					   * foreign layouts only while it holds WORKER_FOREIGN_SHARD's
					   * lease.  NULL: no leases, every shard is the worker's */
	int64_t lease_ttl_ms;             /* with lease_id: LEASE_TTL_MIN_MS..LEASE_TTL_MAX_MS */
};

/* With leases: the shard whose lease holder walks job j's foreign layouts (drain 0, prune 512). */
#define WORKER_FOREIGN_SHARD(j) ((unsigned)(j) * 512u)



/* New worker; does not connect yet.  NULL on ENOMEM or a bad config. */
struct worker *worker_new(const struct worker_config *cfg);
void worker_free(struct worker *w);
/*
 * Keep `ms` (>= 0; a negative value is ignored) in every shard's rules copy
 * from the next step on (SIGHUP): every copy is checked then and those that
 * differ are written.  The skew copies are kept from then on even if the
 * worker was made without write_skew.
 */
void worker_set_skew(struct worker *w, int64_t ms);

/*
 * One step of `job`: the due shards and the rolling poll's slice of its own
 * layouts, then the foreign walk from its cursor, until both are done or
 * `budget_us` (> 0; CLOCK_MONOTONIC) is spent.  `now_ms` >= 0 is passed to
 * the scripts as "now" and is the step's clock (tests, benchmarks); -1 lets
 * each script use Redis TIME, and the step reads TIME once for its own
 * decisions.  Reloads the rules first when their version changed, and keeps
 * the skew copies and the rule copies (all 1024 checked at a prune step).
 * 0 with *res (may be NULL) filled, or a negative errno (-EIO, -EAGAIN: Redis
 * down; -ENOSPC: Redis out of memory; -EBADMSG: Redis refused a call, e.g. a
 * registry of another type; -EPROTO: unexpected reply); the position is kept
 * so the next step resumes.  A shard call or a foreign page's call that
 * failed does not stop the others, nor does a path that a script refused or
 * failed on alone (counted in res->failed, named in the job's last_error):
 * the step does the rest and then returns the first error (-EBADMSG for a
 * failed path).
 */
int worker_step(struct worker *w, enum worker_job job, int64_t budget_us, int64_t now_ms,
		struct worker_result *res);
/*
 * One full sweep of `job`: every shard and every foreign registry from the
 * start, whatever is due; same returns.  *res (may be NULL) sums the steps
 * run, also when one failed (the sweep stops after it; res->sweep_done says
 * whether it had ended).
 */
int worker_sweep(struct worker *w, enum worker_job job, int64_t now_ms, struct worker_result *res);
/*
 * worker_sweep in steps of WORKER_SWEEP_STEP_US, asking `stop(arg)` between
 * them: when it answers non-zero the sweep ends there with -ECANCELED (the
 * next tick resumes where it stopped).  `stop` NULL: worker_sweep.
 */
#define WORKER_SWEEP_STEP_US 50000
int worker_sweep_until(struct worker *w, enum worker_job job, int64_t now_ms, int (*stop)(void *arg), void *arg,
		       struct worker_result *res);
/* Record the scheduler's view of the job (lag and overruns), for the status. */
void worker_note_schedule(struct worker *w, enum worker_job job, int64_t lag_us, uint64_t overruns);
/*
 * Record the period (ms > 0) the scheduler runs `job` at, from now on: the
 * job then counts as stalled (worker_health) when no step of it ends for 3
 * periods plus twice the Redis timeout and 1 s.
 */
void worker_note_period(struct worker *w, enum worker_job job, int64_t period_ms);
/*
 * With leases (worker_config.lease_id): one lease step (worker/lease.h,
 * lease_step) on the worker's connection, then its status published.  The
 * caller runs it every min(drain interval, lease_ttl_ms / 4).  0 (also
 * without leases) or lease_step's error (the leases held stay held while
 * their time lasts).
 */
int worker_lease_step(struct worker *w);
/*
 * Shutdown, with leases: give every lease back and leave the set of
 * daemons (lease_release_all); the worker maintains nothing after it.
 * 0 or an rconn error.
 */
int worker_lease_release(struct worker *w);
/*
 * Sweeps on request from another thread (POST /v1/worker/sweep), run by the
 * thread that drives the worker, so its Redis connection stays single-threaded.
 *
 * worker_request_sweep() and worker_status() are in worker/status.h.
 *
 * worker_request_fd(): an eventfd that turns readable when a request waits;
 * the driving thread polls it and then calls worker_serve_requests(), which
 * runs the sweeps (worker_sweep_until with `stop`, `arg`: a sweep asked for
 * when the daemon is stopping ends at once, answered -ECANCELED) and wakes
 * every waiting requester.
 */
int worker_request_fd(const struct worker *w);
void worker_serve_requests(struct worker *w, int (*stop)(void *arg), void *arg);
/*
 * From any thread: the worker's Redis call in flight fails now, and every
 * later one at once (rconn_abort): bounds a stop's last calls on a Redis
 * that hangs.
 */
void worker_abort(struct worker *w);
/* Shutdown: wake every waiting requester with -ECANCELED and refuse new requests. */
void worker_cancel_requests(struct worker *w);

#endif

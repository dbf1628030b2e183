#ifndef SLUICE_SCHED_H
#define SLUICE_SCHED_H
/*
 * Periodic jobs on CLOCK_MONOTONIC, after Redis's serverCron/run_with_period:
 * each job has a period and a next due time on a fixed grid (due_0 + k*period).
 * A run that starts late records its lag (start - due); a run that ends after
 * its next due time is an overrun, and the slots it missed are skipped (no
 * burst of catch-up runs), keeping the grid's phase.
 *
 * The scheduler knows nothing of what the jobs do.  All times are µs on a
 * clock the caller gives (sched_new), so tests run in virtual time.
 */
#include <stddef.h>
#include <stdint.h>

/* A job: returns 0 or a negative errno (counted as a failed run, not fatal). */
typedef int (*sched_fn)(void *arg);
/* A clock in µs; CLOCK_MONOTONIC in the daemon (clock_mono_us). */
typedef int64_t (*sched_clock)(void *arg);

struct sched_stats {
	const char *name;        /* borrowed from sched_add's caller */
	int64_t period_us;
	int64_t next_due_us;
	uint64_t runs;           /* runs started */
	uint64_t failures;       /* runs that returned < 0 */
	uint64_t overruns;       /* slots skipped because a run ended past them */
	int64_t last_lag_us;     /* start - due of the last run */
	int64_t max_lag_us;
	int64_t last_duration_us;
};

struct sched;

/* New scheduler reading time from `clock(clock_arg)`.  NULL on ENOMEM. */
struct sched *sched_new(sched_clock clock, void *clock_arg);
void sched_free(struct sched *s);
/*
 * Add a job first due at `first_due_us`, then every `period_us` (> 0).
 * `name` must outlive the scheduler.  Returns the job index (>= 0) or -EINVAL/-ENOMEM.
 */
int sched_add(struct sched *s, const char *name, int64_t period_us, int64_t first_due_us,
	      sched_fn fn, void *arg);
/* Change job `i`'s period from its next run on (the next due time is kept). 0 or -EINVAL. */
int sched_set_period(struct sched *s, int i, int64_t period_us);
/* Earliest next due time of all jobs, in µs; INT64_MAX when there are none. */
int64_t sched_next_due(const struct sched *s);
/*
 * Run every job due at `now_us` (next_due <= now_us), in the order added,
 * reading the clock after each run for its duration.  Returns how many ran.
 */
int sched_run_due(struct sched *s, int64_t now_us);
/* Number of jobs. */
size_t sched_len(const struct sched *s);
/* Copy job `i`'s statistics; 0 or -EINVAL. */
int sched_get_stats(const struct sched *s, size_t i, struct sched_stats *out);

#endif

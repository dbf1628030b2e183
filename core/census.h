#ifndef SLUICE_CENSUS_H
#define SLUICE_CENSUS_H
/*
 * The census of mismatches (issue 9, "Mismatch"): a bounded walk of every
 * path of sluice's own layouts that counts, per algorithm, the paths whose
 * state is flagged `mismatch: true` in GET /v1/paths (core/pathview.h): the
 * rule that matches the path is of another algorithm than the path's
 * layout, or the parameters the client recorded differ from that rule's
 * (pathview_params_differ, the listing's own comparison).  A path that no
 * rule matches is counted as unmatched, never as mismatched; one that
 * records no parameters (state gone, or written without them) is not
 * mismatched.
 *
 * A pass walks each layout's 1024 due indexes (ZSCAN COUNT
 * CENSUS_SCAN_COUNT, a few shards per round trip: core/walk.h) and reads
 * each path's recorded parameters with one HMGET of the hash that records
 * them (the meta or the state, alg->recorded_in_meta), pipelined: two
 * round trips per round, about CENSUS_ROUND_PATHS paths a round (the number
 * of shards a round covers doubles while rounds find few paths and halves
 * when they find many).  Paths whose rule is of another algorithm are not
 * read.  A pass may span many steps: each step goes on from the cursor
 * until its budget is spent (at least one round).  Memory is one round's
 * pipeline, whatever the number of paths.
 *
 * A pass starts CENSUS_PERIOD_MS after the last one started (or when the
 * clock went back before that start), at once when
 * the rules (their store version or epoch) differ from those of the last
 * complete pass, and begins again from the start when they change during
 * one (counted in restarts).  Redis unreachable abandons the pass; the next
 * is tried CENSUS_RETRY_MS later.  The counts are published when a pass
 * ends.  A path moved or added while a pass runs may be missed or, if
 * Redis rehashes a due index meanwhile, counted twice (ZSCAN's guarantee).
 *
 * Threads: one thread steps (census_step); census_summary may be called
 * from any thread.  Times: "now" values are ms of the caller's clock (Redis
 * TIME, or injected by tests); durations are CLOCK_MONOTONIC µs.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/algorithm.h"
#include "core/layout.h"
#include "core/rconn.h"
#include "core/rules.h"

#define CENSUS_PERIOD_MS 60000   /* between the starts of two passes */
#define CENSUS_RETRY_MS 5000     /* after a pass was abandoned (Redis down) */
#define CENSUS_SCAN_COUNT 64     /* ZSCAN COUNT of a due index */
#define CENSUS_ROUND_PATHS 512   /* HMGETs a round aims at */
#define CENSUS_WIDTH_MIN 4       /* due indexes (shards) a round reads: from ... */
#define CENSUS_WIDTH_MAX 256     /* ... to */

/* What the last complete pass found, and how the current one goes. */
struct census_summary {
	unsigned algorithms;              /* bit 1 << a for each algorithm a with an own layout */
	uint64_t paths[ALG__COUNT];       /* last pass: paths found in the due indexes */
	uint64_t mismatched[ALG__COUNT];  /* last pass: of those, mismatch: true */
	uint64_t unmatched;               /* last pass: paths no rule matches */
	uint64_t unreadable;              /* last pass: paths whose hash is of another type */
	uint64_t registries_skipped;      /* last pass: due indexes of another type */
	uint64_t passes;                  /* complete passes since start */
	uint64_t abandoned;               /* passes abandoned (Redis down) */
	uint64_t restarts;                /* passes begun again because the rules changed */
	int64_t last_ms;                  /* now (ms) at which the last pass ended; -1: none yet */
	int64_t last_span_ms;             /* the last pass's now at its end minus at its start */
	int64_t last_busy_us;             /* time its steps spent in it, summed */
	uint64_t last_steps;              /* steps it took */
	uint64_t last_round_trips;        /* round trips it made (ZSCAN and HMGET pipelines) */
	int in_pass;                      /* a pass is under way */
	uint64_t pass_paths;              /* paths the pass under way has checked so far */
	char last_error[160];             /* why the last pass was abandoned; "" */
};

struct census;

/*
 * A census of the own layouts among `layouts[0..n)` (the pointers are
 * copied, the layouts borrowed: they must outlive it; foreign ones are
 * ignored).  NULL on ENOMEM.  census_free(NULL) is a no-op.
 */
struct census *census_new(const struct layout *const *layouts, size_t n);
void census_free(struct census *cs);

/*
 * Go on with the pass (starting one when it is due, see above) at `now_ms`
 * over `c` (the caller's connection, used only during the call), matching
 * paths against `rules` (borrowed for the call; nothing is done before it
 * was loaded), until it ends or `budget_us` (CLOCK_MONOTONIC µs; at least
 * one round is made) is spent.  *done (may be NULL) is 1 when this call
 * ended a pass and published it.  0, or the rconn error when Redis could
 * not be reached (-EIO, -EAGAIN; the pass is abandoned), -ENOSPC (Redis out
 * of memory refused a read; abandoned too), or -ENOMEM.
 */
int census_step(struct census *cs, struct rconn *c, const struct ruleset *rules, int64_t now_ms, int64_t budget_us,
		int *done);

/*
 * The time between the starts of two passes, ms (> 0; CENSUS_PERIOD_MS until
 * set), from the next pass on.  Several daemons that share the shards each
 * run a census of the whole keyspace for their own admin API: the worker
 * stretches the period by the number of live daemons, so that together they
 * cost Redis what one daemon's census does.
 */
void census_set_period(struct census *cs, int64_t period_ms);

/* The summary: the last complete pass, the progress of the current one. */
void census_summary(struct census *cs, struct census_summary *out);

#endif

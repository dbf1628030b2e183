#ifndef SLUICE_STATS_H
#define SLUICE_STATS_H
/*
 * Decision counters and client clock lag, summed over the 1024 shards'
 * stats hashes <prefix>{k}:stats (DESIGN.md, "State model"; issue 9), which
 * the client scripts write:
 *   "<rule>:allowed", "<rule>:denied", "<rule>:shadow_denied"
 *                       integer counts (HINCRBY) of calls that named a rule
 *                       (by name or "*"); rule names hold no ':'
 *   ":lag:<minute>"     the largest lag in ms of a client's explicit now
 *                       behind Redis TIME seen in that minute
 *                       (minute = floor(TIME ms / 60000))
 *   any other ":..."    reserved, ignored
 *
 * One aggregation reads every shard with HGETALL, STATS_DEPTH per round
 * trip (4 round trips), possibly across several steps when a step's
 * budget runs out, and then publishes one sample: the sums per rule and
 * decision, and the largest lag of the current and previous minute (of the
 * now the aggregation started at).  It deletes (HDEL) the ":lag:" fields of
 * older minutes while reading.  A shard whose stats key has another type,
 * or a field not of the format, is counted and skipped, never fatal.
 * An aggregation starts every STATS_PERIOD_MS, or at the next step after a
 * rule changed.
 *
 * Samples: a ring of the last STATS_RING, from which per-second rates over
 * the last STATS_WINDOW_MS are computed (newest minus the oldest within the
 * window, over their time apart; a sum that went down, as after a FLUSHALL,
 * counts as 0).
 *
 * "Since the rule was stored": when the owner loads a ruleset
 * (stats_rules_loaded) every rule whose canonical text is new or changed
 * since the last ruleset it gave gets a baseline: the sums of the first
 * aggregation that starts after that call; a rule's counts are its sums
 * minus its baseline, and since_ms is that aggregation's now.  The
 * baselines live in this object only: a daemon that (re)starts takes every
 * rule's baseline at its first aggregation, so "since" means since the rule
 * was last changed or since this daemon started, whichever is later
 * (since_ms says which); two daemons may differ by an aggregation period.
 * Calls between the change and that aggregation (at most a prune tick plus
 * one aggregation's read) count before the baseline.  A sum found below its
 * baseline (the stats were lost in Redis) makes that decision's baseline 0.
 *
 * Threads: one thread collects (stats_step, stats_rules_loaded); the
 * readers (stats_rule, stats_each, stats_summary) may be called from any
 * thread.  Times: "now" values are ms of the caller's clock (Redis TIME, or
 * injected by tests); durations are CLOCK_MONOTONIC µs.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/rconn.h"
#include "core/rules.h"

#define STATS_PERIOD_MS 5000   /* between aggregations */
#define STATS_RETRY_MS 1000    /* after an aggregation failed (Redis down) */
#define STATS_DEPTH 256        /* HGETALLs per round trip */
#define STATS_WINDOW_MS 60000  /* of the per-second rates */
#define STATS_RING 16          /* samples kept (> STATS_WINDOW_MS / STATS_PERIOD_MS) */
#define STATS_MAX_NAMES 4096   /* distinct rule names summed; more are dropped and counted */

enum stats_decision { STATS_ALLOWED = 0, STATS_DENIED, STATS_SHADOW_DENIED, STATS__DECISIONS };

/* "allowed", "denied", "shadow_denied" (the field suffixes and metric labels); static storage. */
const char *stats_decision_name(enum stats_decision d);

/* One rule's counts since its baseline. */
struct stats_rule {
	uint64_t total[STATS__DECISIONS];       /* since the baseline */
	int64_t since_ms;                       /* now (ms) of the aggregation that took the baseline */
	double per_second[STATS__DECISIONS];    /* over the last STATS_WINDOW_MS (0 with one sample) */
};

/* The collector as a whole, as of the last aggregation. */
struct stats_summary {
	uint64_t aggregations;      /* completed since start */
	uint64_t failures;          /* aggregations abandoned (Redis down) */
	int64_t last_ms;            /* now (ms) of the last; -1 before the first */
	int64_t last_duration_us;   /* wall time of the last, from its first round trip to its end */
	uint64_t last_round_trips;  /* of the last (HGETALL rounds and HDEL rounds) */
	int64_t lag_ms;             /* largest client clock lag of the current and previous minute; -1: none */
	uint64_t shards_skipped;    /* in the last: shards whose stats could not be read (another type) */
	uint64_t fields_ignored;    /* in the last: fields not of the format (bad name, decision or count) */
	uint64_t names_dropped;     /* in the last: fields of rule names beyond STATS_MAX_NAMES */
	uint64_t lag_fields_deleted; /* ":lag:" fields of old minutes deleted since start */
	size_t names;               /* distinct rule names known */
	char last_error[160];       /* the last shard skipped or aggregation failed, and why; "" */
};

struct stats;

/* New collector; NULL on ENOMEM.  stats_free(NULL) is a no-op. */
struct stats *stats_new(void);
void stats_free(struct stats *s);

/*
 * The owner loaded ruleset `rs` (borrowed for the call): rules new or changed
 * since the last call get a baseline at the next aggregation, which starts
 * at the next stats_step; rules no longer in it lose theirs.  0, or -ENOMEM
 * when a rule had no room (out of memory, or STATS_MAX_NAMES names known):
 * that rule has no baseline (stats_rule answers -ENOENT), the others do.
 */
int stats_rules_loaded(struct stats *s, const struct ruleset *rs);

/*
 * Go on with the aggregation (starting one when STATS_PERIOD_MS passed since
 * the last started, or a rule changed) at `now_ms` (>= 0) over `c` (the
 * caller's connection; this call owns it meanwhile), until it ends or
 * `budget_us` (CLOCK_MONOTONIC; at least one round trip is made) is spent.
 * *done (may be NULL) is 1 when this call published a sample.  0, or the
 * rconn error when Redis could not be reached (-EIO, -EAGAIN; the
 * aggregation is abandoned and tried again STATS_RETRY_MS later), or -ENOMEM.
 */
int stats_step(struct stats *s, struct rconn *c, const char *prefix, int64_t now_ms, int64_t budget_us,
	       int *done);

/*
 * Rule `name`'s counts since its baseline into *out: 0, or -ENOENT when it
 * has none yet (not a rule of the last ruleset, or no aggregation since).
 */
int stats_rule(struct stats *s, const char *name, struct stats_rule *out);
/*
 * Call fn(arg, name, sums) for every rule name of the last sample, in name
 * order, with its raw sums over the shards (not minus any baseline; the
 * Prometheus counters).  Stops at fn's first non-zero return, which it
 * returns; 0 otherwise.  Runs under the readers' lock: fn must not call
 * back into `s`.
 */
int stats_each(struct stats *s, int (*fn)(void *arg, const char *name, const uint64_t sums[STATS__DECISIONS]),
	       void *arg);
/* The summary as of the last aggregation. */
void stats_summary(struct stats *s, struct stats_summary *out);

#endif

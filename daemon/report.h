#ifndef SLUICE_DAEMON_REPORT_H
#define SLUICE_DAEMON_REPORT_H
/*
 * What the log says of the worker's upkeep after each step: the shards'
 * copies of max_clock_skew_ms and of the rules, and the shard leases.  Each
 * logs the transitions only (a failure once per reason, a recovery once),
 * remembering what it said in its own struct (zeroed to start).
 */
#include <stddef.h>
#include <stdint.h>

#include "worker/status.h"

/* What the log last said of the shards' skew or rule copies. */
struct copies_log {
	int failing;             /* a *_sync_failed was logged and no *_synced since */
	uint64_t written;        /* copies written when *_synced was last logged */
	uint64_t conflicts;      /* the worker's skew_conflicts when skew_conflict was last logged */
	int64_t conflict_us;     /* when (CLOCK_MONOTONIC); 0: never */
	char why[160];
};

/* What the log last said of the shard leases. */
struct lease_log {
	size_t owned, live;
	uint64_t repaired, duplicate_id, ttl_conflicts; /* the counters when last logged */
	int64_t ttl_conflict_us; /* when ttl_conflicts was last logged (CLOCK_MONOTONIC); 0: never */
	int64_t duplicate_us;    /* when duplicate_id was last logged (CLOCK_MONOTONIC); 0: never */
	int said;                /* a shards_owned line was logged */
	int failing;
	char why[160];
};

/*
 * The skew copies: skew_synced when every copy holds the horizon and some
 * were written since the last such line (at start, after SIGHUP, after Redis
 * lost them), skew_sync_failed when a write or check failed, skew_conflict
 * (at most once a minute) when another daemon rewrites them with another value.
 */
void report_skew(const struct worker_status *ws, struct copies_log *l);
/* The rule copies: rule_copies_synced (with "<epoch>:<version>") and rule_copies_sync_failed, likewise. */
void report_copies(const struct worker_status *ws, struct copies_log *l);
/*
 * After a lease step that returned `rc`: shards_owned when the shards held
 * or the live daemons changed (and the first time), lease_failed once per
 * reason, lease_repaired when a key no daemon writes was replaced,
 * duplicate_id (at most once a minute) while another process with this id
 * holds leases, lease_ttl_conflict (at most once a minute) while another
 * daemon holds leases with a longer lease_ttl_ms.
 */
void report_leases(const struct worker_status *ws, int rc, struct lease_log *l);

#endif

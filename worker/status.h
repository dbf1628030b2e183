#ifndef SLUICE_WORKER_STATUS_H
#define SLUICE_WORKER_STATUS_H
/*
 * The worker as others see it: its counters and sweeps on request.  This is
 * the narrow interface the admin API uses (it never drives the worker);
 * worker/worker.h is for the thread that owns and runs it.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/rconn.h"
#include "core/rules.h"
#include "core/census.h"
#include "core/stats.h"

enum worker_job { WORKER_DRAIN = 0, WORKER_PRUNE, WORKER__JOBS };

/* Upper bounds (s) of the sweep-duration histogram buckets (+Inf is `sweeps`). */
#define WORKER_SWEEP_BUCKETS 11
extern const double worker_sweep_buckets[WORKER_SWEEP_BUCKETS];

/* "drain", "prune"; static storage. */
const char *worker_job_name(enum worker_job j);
/* What the worker does to algorithm `a`'s state: "drained", "pruned", "repaired", "reclaimed". */
const char *worker_action_name(enum algorithm a);


/* Counters of one job since start. */
struct worker_job_status {
	uint64_t steps;          /* calls of worker_step */
	uint64_t sweeps;         /* passes over the due shards (and the foreign registries) that ended */
	uint64_t batches;        /* script calls sent (a shard call, or a page's batched call) */
	uint64_t polls;          /* shards' registry heads read by the due walk's rolling poll */
	uint64_t paths;          /* registry members visited (due ones, for the own layouts) */
	uint64_t entries;        /* entries drained or pruned */
	uint64_t emptied;        /* paths whose state emptied and left the registry */
	uint64_t unmatched;      /* paths left alone: no rule, or a rule of another algorithm */
	uint64_t skipped;        /* paths left untouched: their key has another type, or an empty member */
	uint64_t failed;         /* paths a script refused or failed on alone (its rule's arguments, an
				  * error in its job): the rest of their call was maintained */
	uint64_t errors;         /* steps that failed (Redis down, a script call refused, a path failed) */
	int64_t last_step_us;    /* duration of the last step */
	int64_t last_sweep_us;   /* duration of the last complete sweep (wall, across steps) */
	int64_t lag_us;          /* lag of the last scheduled start (worker_note_schedule) */
	int64_t max_lag_us;
	uint64_t overruns;
	int in_sweep;            /* 1 while a sweep is part-way (cursor not at the start) */
	uint64_t due_backlog;    /* paths due by now that the last calls of their shards left
				  * for later (more were due than batch_size) */
	int64_t oldest_due_age_ms; /* ms the oldest due path known has waited past its due time
				  * at the last step; 0 when none was due, -1 when the job has
				  * no layout of sluice's own */
	/* The outages of the job: runs of steps that failed as a whole (Redis down, out of
	 * memory, CLUSTERDOWN, the rules never loaded), not those where only some paths
	 * failed alone. */
	int failing;             /* the last step failed as a whole */
	int failing_rc;          /* its negative errno (-EIO, -ENOSPC, ...); 0 when not failing */
	int64_t failing_since_ms; /* Unix ms of the first failed step of this outage; 0 when not failing */
	int64_t recovered_ms;    /* Unix ms of the step that ended the last outage; 0: none yet */
	int64_t last_outage_ms;  /* ms from that outage's first failed step to the step that ended it; -1: none */
	int64_t period_ms;       /* the scheduler's period of the job (worker_note_period); 0: not known */
	int64_t period_noted_mono_ms; /* CLOCK_MONOTONIC ms when the period was noted */
	int64_t last_end_mono_ms; /* CLOCK_MONOTONIC ms the last step ended; 0: none yet */
	int64_t last_ok_mono_ms;  /* CLOCK_MONOTONIC ms the last step that did not fail as a whole ended; 0: none */
	char last_error[256];    /* why the last step failed (a failed path named, percent-encoded where
				  * not printable ASCII); "" when it succeeded */
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
	uint64_t failed;         /* paths a script refused or failed on alone */
};

/* Longest daemon id (config `id`), bytes: the config's */
#define LEASE_ID_MAX CONFIG_ID_MAX
/* Daemons the status lists (a larger set shows the first by id) */
#define LEASE_PEERS_MAX 32

/* A member of <prefix>daemons as the last heartbeat read it. */
struct worker_lease_peer {
	char id[LEASE_ID_MAX + 1];
	int alive;               /* its heartbeat is at most lease_ttl_ms old */
	int64_t last_seen_ms;    /* ms from its heartbeat to the last one of this daemon (Redis TIME) */
};

/* The shard leases (worker/lease.h), when the worker shares the shards with other daemons. */
struct worker_lease_status {
	int on;                  /* 0: no leases (the worker owns every shard, unfenced) */
	char id[LEASE_ID_MAX + 1];
	int64_t ttl_ms;
	size_t owned;            /* shards whose lease this daemon holds now */
	size_t live;             /* daemons alive, this one included */
	size_t npeers;           /* of the members of <prefix>daemons, those in peer[] */
	struct worker_lease_peer peer[LEASE_PEERS_MAX];
	uint64_t acquired;       /* leases taken (SET NX won) */
	uint64_t refused;        /* acquisitions that found another holder */
	uint64_t lost;           /* leases held that turned out not to be (renewal or fence refused,
				  * or their time ran out while Redis could not be reached) */
	uint64_t fenced;         /* worker script calls the fence refused (the lease was not ours) */
	uint64_t released;       /* leases given up: to the daemon that should own them, or at shutdown */
	uint64_t heartbeats;     /* heartbeats written */
	uint64_t repaired;       /* keys of ours found holding what no daemon writes (a lease of another
				  * type or without a TTL, <prefix>daemons of another type): replaced */
	char repaired_last[80];  /* the last of them; "" */
	uint64_t ttl_conflicts;  /* acquisitions refused by a lease with more time left than this
				  * daemon's lease_ttl_ms: another daemon runs with a longer TTL */
	long long ttl_conflict_ms; /* the last such lease's PTTL (a lower bound of that TTL) */
	uint64_t duplicate_id;   /* acquisitions refused by a lease of another process with this id */
	char duplicate_last[160]; /* the last such refusal; "" */
	char last_error[160];    /* why the last lease step failed; "" */
};

/*
 * The recent past of the counters (GET /v1/worker "history", the operator
 * page's chart): a sample at the first step of each WORKER_HISTORY_PERIOD_MS
 * of the steps' clock (Redis TIME, or the now a test gives), the last
 * WORKER_HISTORY of them (10 minutes).  A step that could not read the time
 * (Redis down) takes none: the next sample's counters include what happened
 * meanwhile.  A clock that went back by more than a period starts the
 * history again; less, and the samples wait for it to pass the last one's
 * period.
 */
#define WORKER_HISTORY_PERIOD_MS 10000
#define WORKER_HISTORY 60

/* One sample: the counters since start, as the step that took it left them. */
struct worker_sample {
	int64_t t_ms;            /* the step's now, ms (Redis TIME, or the injected now) */
	uint64_t ticks;          /* both jobs' steps */
	uint64_t drained;        /* the drain job's entries */
	uint64_t pruned;         /* the prune job's entries */
	uint64_t errors;         /* both jobs' failed steps */
	uint64_t due_backlog;    /* both jobs' due backlog (paths) at that step */
};

/* Primaries whose status the worker keeps (a larger cluster shows its first ones) */
#define WORKER_MAX_NODES 32

struct worker_status {
	struct worker_job_status job[WORKER__JOBS];
	struct worker_layout_status layout[WORKER_MAX_LAYOUTS];
	size_t nlayouts;
	int redis_up;            /* every primary connected */
	uint64_t connects;       /* connections established (1 + reconnects), all nodes */
	int cluster;             /* Redis is a cluster */
	size_t nprimaries;       /* primaries of its slot map (1 for a single Redis) */
	size_t nnodes;           /* of them, those in node[] */
	struct rconn_node_info node[WORKER_MAX_NODES]; /* per primary, as the worker's connection sees it */
	uint64_t rules_version;
	size_t rules;            /* rules loaded */
	size_t rules_invalid;    /* rules in Redis that failed validation (skipped) */
	int rules_lost;          /* the rules hash is gone while its version is not: stored again by the daemon */
	int64_t skew_ms;         /* max_clock_skew_ms kept in every shard's rules copy; -1: none kept */
	size_t skew_pending;     /* shards whose copy is not known to hold it (0: all do) */
	uint64_t skew_written;   /* copies written since start */
	uint64_t skew_conflicts; /* copies found holding another value after holding this worker's:
				  * another daemon keeps another max_clock_skew_ms */
	long long skew_conflict_ms; /* the other value the last conflict found (-1: none yet) */
	char skew_error[160];    /* why the last write or check of a copy failed; "" */
	int copies_on;           /* the worker keeps the rules in every shard's rules copy */
	char copies_version[64]; /* "<epoch>:<version>" the copies are brought to; "" before the rules loaded */
	uint64_t copies_rules_version; /* its version part (0 before) */
	size_t copies_pending;   /* shards whose copy is not known to hold that version (0: all do) */
	uint64_t copies_written; /* copies written since start */
	char copies_error[160];  /* why the last write or check of a rule copy failed; "" */
	struct worker_lease_status lease;
	struct worker_sample history[WORKER_HISTORY]; /* oldest first */
	size_t nhistory;         /* samples in history[] */
};

/* Result of one step (also folded into the status). */
struct worker_result {
	int sweep_done;          /* the step finished a full sweep */
	uint64_t paths, entries, emptied, unmatched, skipped, batches, polls;
	uint64_t failed;         /* paths a script refused or failed on alone */
};

struct worker;

/*
 * The worker's decision counters and clock lag (core/stats.h; its readers
 * are thread-safe), borrowed for the worker's lifetime; NULL when the worker
 * was made without sum_stats.
 */
struct stats *worker_stats(struct worker *w);
/*
 * The worker's census of mismatched paths (core/census.h; census_summary
 * is thread-safe), borrowed for the worker's lifetime; NULL when the worker
 * was made without census.
 */
struct census *worker_census(struct worker *w);

/*
 * Can the worker tick?  From any thread.  0 when every job's last step
 * succeeded (or failed only on some paths alone, or failed to reach Redis
 * before a later step of another job succeeded: the connection is theirs
 * to share, and the prune job runs seldom) and, for a job whose
 * period was noted (worker_note_period), a step ended within 3 periods plus
 * 2 x `timeout_ms` + 1 s (or since the period was noted), and the rules
 * copies (with the skew horizon) it keeps are written or being written
 * without error.  Else -EAGAIN (the job's last step failed as a whole: *err
 * its errno, -EIO for Redis down, -ENOSPC out of memory, ...; or a copy
 * cannot be written: -ENOSPC at maxmemory, else -EBADMSG) or -ETIMEDOUT (no
 * step ended for that long: *err -ETIMEDOUT), with `why` (cap bytes) naming
 * the job or the copies and the cause,
 * e.g. "drain: redis: connect: Connection refused (failing for 2300 ms)".
 */
int worker_health(struct worker *w, int64_t timeout_ms, char *why, size_t cap, int *err);

/* Thread-safe snapshot of the counters. */
void worker_status(struct worker *w, struct worker_status *out);

/*
 * From any thread: ask the thread that drives the worker for one full sweep
 * of every job and wait up to `timeout_ms` for it.  0 and res[job] and
 * duration_us[job] (µs) filled, the sweep's own error (negative errno),
 * -ECANCELED (shutting down) or -ETIMEDOUT (the sweep goes on).
 */
int worker_request_sweep(struct worker *w, int64_t timeout_ms, struct worker_result res[WORKER__JOBS],
			 int64_t duration_us[WORKER__JOBS]);

#endif

#ifndef SLUICE_SCRIPTS_H
#define SLUICE_SCRIPTS_H
/*
 * The Lua scripts of lua/, embedded at build time by tools/embed_lua.c.
 * Their KEYS, ARGV and replies are documented in lua/README.md.
 */
#include <stddef.h>

struct script_src {
	const char *name; /* file name without ".lua", e.g. "leaky_bucket_drain" */
	const char *body; /* NUL-terminated script text, static storage */
	size_t len;       /* strlen(body) */
};

/* Generated table, sorted by file name. */
extern const struct script_src script_srcs[];
extern const size_t script_srcs_len;

/* The scripts the daemon calls by id (rconn loads them by these names). */
enum script_id {
	SCRIPT_LEAKY_BUCKET = 0,   /* client acquire, also used by tests */
	SCRIPT_LEAKY_BUCKET_DRAIN, /* worker drain, batched (foreign layouts) */
	SCRIPT_LEAKY_BUCKET_STATE, /* admin read, no writes */
	SCRIPT_SLIDING_LOG,        /* client acquire */
	SCRIPT_SLIDING_LOG_PRUNE,  /* worker prune, batched */
	SCRIPT_SLIDING_LOG_STATE,  /* admin read, no writes */
	SCRIPT_RESET,              /* admin: delete one path's keys */
	SCRIPT_FIXED_WINDOW,       /* client acquire */
	SCRIPT_FIXED_WINDOW_REPAIR, /* worker: TTL for counters without one, batched */
	SCRIPT_FIXED_WINDOW_STATE, /* admin read */
	SCRIPT_SLIDING_COUNTER,    /* client acquire */
	SCRIPT_SLIDING_COUNTER_PRUNE, /* worker prune, batched */
	SCRIPT_SLIDING_COUNTER_STATE, /* admin read */
	SCRIPT_TOKEN_BUCKET,       /* client acquire */
	SCRIPT_TOKEN_BUCKET_RECLAIM, /* worker: delete full buckets, batched */
	SCRIPT_TOKEN_BUCKET_STATE, /* admin read */
	/* the worker's jobs over one shard's due index (sluice's own layout) */
	SCRIPT_LEAKY_BUCKET_DRAIN_SHARD,
	SCRIPT_SLIDING_LOG_PRUNE_SHARD,
	SCRIPT_SLIDING_COUNTER_PRUNE_SHARD,
	SCRIPT_FIXED_WINDOW_REPAIR_SHARD,
	SCRIPT_TOKEN_BUCKET_RECLAIM_SHARD,
	/* the rule store (core/rulestore.c): one key per call */
	SCRIPT_REDISSON_RECLAIM,   /* worker: Redisson RRateLimiter permits credited, idle ones reclaimed */
	SCRIPT_REDISSON_STATE,     /* admin read of a Redisson RRateLimiter */
	SCRIPT_RULESTORE_CAS,      /* compare-and-set of a rule, or of the version's bump */
	SCRIPT_RULESTORE_READ,     /* the rules hash and its digest, no writes */
	/* several daemons (worker/lease.c): one key per call */
	SCRIPT_LEASE,              /* take, renew or give up one shard's lease */
	SCRIPT_DAEMONS,            /* a heartbeat into <prefix>daemons, and the members */
	SCRIPT__COUNT
};

/* Name of script `id` ("leaky_bucket", ...); static storage. */
const char *script_name(enum script_id id);
/* Source of script `id`; NULL if the build did not embed it (a build error). */
const struct script_src *script_get(enum script_id id);
/*
 * 1 when script `id` touches only the keys it is given (KEYS), so that Redis
 * Cluster can judge a call whole during a slot's migration (ASK, TRYAGAIN);
 * 0 for the shard scripts, which reach the paths of the due index they are
 * given (same slot, not declared): the one Redis layer does not follow ASK
 * for those (the importing node would see the paths not moved yet as absent).
 */
int script_declares_keys(enum script_id id);
/* Source by file name without ".lua"; NULL when there is none. */
const struct script_src *script_find(const char *name);

#endif

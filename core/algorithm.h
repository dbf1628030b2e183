#ifndef SLUICE_ALGORITHM_H
#define SLUICE_ALGORITHM_H
/*
 * One table per rate-limit algorithm (the way Redis's rio.h puts each I/O
 * backend behind one struct): its rule fields and their checks, its keys,
 * its scripts, its worker job and how its live state is read.  Code outside
 * core/alg/ reaches an algorithm only through this table and never names one;
 * a sixth algorithm is a new file in core/alg/ and a line in core/algorithm.c.
 *
 * The algorithms and where their definitions come from are in DESIGN.md
 * ("State model") and lua/README.md; each core/alg/<name>.c says which
 * script implements which part.
 */
#include <cjson/cJSON.h>
#include <stddef.h>

#include "core/error.h"
#include "core/scripts.h"
#include "core/strbuf.h"

enum algorithm {
	ALG_LEAKY_BUCKET = 0,
	ALG_SLIDING_LOG,
	ALG_SLIDING_COUNTER,
	ALG_FIXED_WINDOW,
	ALG_TOKEN_BUCKET,
	ALG__COUNT
};

/* Which of the worker's two cadences maintains an algorithm's state. */
enum alg_job {
	ALG_JOB_DRAIN = 0,       /* at the leak's pace (drain_interval_ms) */
	ALG_JOB_PRUNE,           /* at the slower pace that bounds memory (prune_interval_ms) */
};

/* Rule fields (members of struct rule) an algorithm takes; JSON names in algorithm_field_name. */
enum {
	RULE_F_CAPACITY = 1 << 0, /* int64 >= 1: entries or tokens */
	RULE_F_RATE = 1 << 1,     /* double > 0: per second */
	RULE_F_LIMIT = 1 << 2,    /* int64 >= 1: requests per window */
	RULE_F_WINDOW = 1 << 3,   /* int64 >= 1: ms */
	RULE_F_SUB = 1 << 4,      /* int64 >= 1: sub-windows per window */
	RULE_F__ALL = (1 << 5) - 1
};

struct rule;

struct alg_ops {
	enum algorithm id;
	const char *name;        /* "leaky_bucket": in rules, keys, metrics labels */
	const char *action;      /* what its worker job does: "drained", "pruned", "repaired", "reclaimed" */
	enum alg_job job;
	unsigned fields;         /* RULE_F_* it takes, all required */
	/* checks across fields, after each field passed its own: 0, or -EINVAL via sl_fail
	 * naming `where`.<field>; NULL when there are none */
	int (*check)(const struct rule *r, const char *where, struct sl_error *err);

	const char *foreign_type; /* Redis type of a foreign limiter's key of this algorithm:
				   * "zset", "hash" or "string" (a SCAN layout's default TYPE) */
	int zset;                /* data key is a sorted set of entries: ZCARD counts them */
	int meta;                /* keeps a meta hash beside the data key (layout_key meta) */
	int score_units;         /* its foreign layouts may score in s or µs */
	int recorded_in_meta;    /* sluice's own layouts: the client records its parameters (hash
				  * fields named as the rule's, algorithm_field_name) and rule in the
				  * meta hash; 0: in the state key, a hash (the census, core/census.h) */

	enum script_id client_script; /* the application's check */
	enum script_id job_script;    /* the worker's batched job over given keys (foreign layouts) */
	enum script_id shard_script;  /* the worker's job over one shard's due index (sluice's own
				       * layout: lua/lib/due.lua) */
	enum script_id state_script;  /* the admin API's read, no writes */
	/*
	 * Arguments of job_script for one path, after the path itself, from rule
	 * `r` (lua/README.md gives each script's ARGV).  0 or -ENOMEM.
	 */
	int (*job_args)(const struct rule *r, struct cmdargs *a);
	/* Arguments of state_script after its keys, from rule `r`.  0 or -ENOMEM. */
	int (*state_args)(const struct rule *r, struct cmdargs *a);
	size_t state_ttl_at;     /* index of ttl_ms in state_script's reply
				  * ({count, remaining, reset_ms, [last_ms,] ttl_ms}) */
	/*
	 * A foreign kind whose state records its own parameters (Redisson's
	 * RRateLimiter): its paths are maintained and shown by them, with no rule;
	 * job_args and state_args are not called.  0 for the five algorithms.
	 */
	int self_described;
	/*
	 * Append the keys that sit beside data key `key` (`len` bytes) to `a`, in
	 * the order job_script and state_script take them after it (meta is then
	 * unused).  0, -ENOMEM, or -EINVAL when they would be in another slot than
	 * the data key (the path is skipped).  NULL: the meta, where alg->meta.
	 */
	int (*side_keys)(const char *key, size_t len, struct cmdargs *a);
};

/* The table of algorithm `a`, or NULL when `a` is out of range; static storage. */
const struct alg_ops *algorithm_get(enum algorithm a);
/*
 * The table of a foreign layout kind ("redisson": Redisson's RRateLimiter,
 * core/alg/redisson.c) for a layout of algorithm `a`, or NULL when there is
 * no such kind or it does not keep state of that algorithm; static storage.
 */
const struct alg_ops *algorithm_kind(const char *kind, enum algorithm a);
/* "leaky_bucket", ...; static storage; NULL for an invalid value. */
const char *algorithm_name(enum algorithm a);
/* 0 and *out, or -EINVAL for an unknown name. */
int algorithm_parse(const char *s, enum algorithm *out);
/* Write "leaky_bucket, sliding_log, ..." (for error messages) into `buf`; returns buf. */
const char *algorithm_list(char *buf, size_t cap);
/* 1 when the algorithm is limited by a capacity (buckets), 0 by a limit (windows). */
int algorithm_has_capacity(const struct alg_ops *alg);

/* JSON name of rule field bit `f` ("capacity", ...), or NULL. */
const char *algorithm_field_name(unsigned f);

#endif

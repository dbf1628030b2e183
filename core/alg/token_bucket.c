/*
 * Token bucket (DESIGN.md "State model"; the lazily refilled bucket of
 * Redisson's RRateLimiter and bucket4j): a hash of tokens and last refill
 * time; `rate` tokens per second come back up to `capacity`, and a request of
 * cost n takes n tokens if there are n.  lua/token_bucket.lua is the
 * application's check (key layout 2: the hash also records the capacity,
 * rate and rule applied, and the path is due in its shard's registry when
 * the bucket will have been full for the skew horizon);
 * lua/token_bucket_reclaim_shard.lua the worker's reclaim over one shard's
 * due index, by the recorded capacity and rate (a bucket full for the skew
 * horizon is the same as none: it is deleted); lua/token_bucket_reclaim.lua
 * the same reclaim for foreign layouts, batched with the rule's values;
 * lua/token_bucket_state.lua the admin read (parameters given, else the
 * recorded ones).  lua/README.md gives each script's KEYS, ARGV and reply.
 */
#include <errno.h>

#include "core/alg/alg.h"
#include "core/rules.h"

/* foreign reclaim ARGV per path: capacity (tokens), rate (tokens per second) */
static int job_args(const struct rule *r, struct cmdargs *a)
{
	return cmdargs_int(a, r->capacity) || cmdargs_double(a, r->rate) ? -ENOMEM : 0;
}

/* state ARGV: capacity, rate (the rule's; "" would be the recorded ones), now ("" = Redis TIME) */
static int state_args(const struct rule *r, struct cmdargs *a)
{
	return job_args(r, a) || cmdargs_add(a, "", 0) ? -ENOMEM : 0;
}

const struct alg_ops alg_token_bucket = {
	.id = ALG_TOKEN_BUCKET,
	.name = "token_bucket",
	.action = "reclaimed",
	.job = ALG_JOB_PRUNE,
	.fields = RULE_F_CAPACITY | RULE_F_RATE,
	.foreign_type = "hash",
	.client_script = SCRIPT_TOKEN_BUCKET,
	.job_script = SCRIPT_TOKEN_BUCKET_RECLAIM,
	.shard_script = SCRIPT_TOKEN_BUCKET_RECLAIM_SHARD,
	.state_script = SCRIPT_TOKEN_BUCKET_STATE,
	.job_args = job_args,
	.state_args = state_args,
	.state_ttl_at = 4,
};

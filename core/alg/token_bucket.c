/*
 * Token bucket (DESIGN.md "State model"; the lazily refilled bucket of
 * Redisson's RRateLimiter and bucket4j): a hash of tokens and last refill
 * time; `rate` tokens per second come back up to `capacity`, and a request of
 * cost n takes n tokens if there are n.  lua/token_bucket.lua is the
 * application's check, lua/token_bucket_reclaim.lua the worker's reclaim
 * (a bucket that is full is the same as none: it is deleted),
 * lua/token_bucket_state.lua the admin read.
 */
#include <errno.h>

#include "core/alg/alg.h"
#include "core/rules.h"

/* reclaim ARGV per path: capacity (tokens), rate (tokens per second) */
static int job_args(const struct rule *r, struct cmdargs *a)
{
	return cmdargs_int(a, r->capacity) || cmdargs_double(a, r->rate) ? -ENOMEM : 0;
}

/* state ARGV: capacity, rate, now ("" = Redis TIME) */
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

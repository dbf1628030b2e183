/*
 * Leaky bucket as a meter (DESIGN.md "State model"; the leaky-bucket-as-meter
 * of Turner 1986 and ATM's GCRA): a sorted set of admitted entries that leaks
 * `rate` entries per second; a request of cost n is admitted while
 * level + n <= capacity.  lua/leaky_bucket.lua is the application's check
 * (it records the capacity, rate and rule it applied in the meta, and puts
 * the path in its shard's due index at the time its next entry leaks);
 * lua/leaky_bucket_drain_shard.lua the worker's drain of one shard's due
 * buckets, at the rate each meta records (sluice's own layout);
 * lua/leaky_bucket_drain.lua the worker's batched drain of a foreign
 * layout's buckets at the matching rule's rate (floor(rate x elapsed +
 * carry) of the oldest entries, the fraction kept in the meta hash);
 * lua/leaky_bucket_state.lua the admin read.
 */
#include <errno.h>

#include "core/alg/alg.h"
#include "core/rules.h"

/* foreign drain ARGV per path: rate (entries per second) */
static int job_args(const struct rule *r, struct cmdargs *a)
{
	return cmdargs_double(a, r->rate);
}

/* state ARGV: capacity, rate, now ("" = Redis TIME); the script reads "" parameters from the meta */
static int state_args(const struct rule *r, struct cmdargs *a)
{
	return cmdargs_int(a, r->capacity) || job_args(r, a) || cmdargs_add(a, "", 0) ? -ENOMEM : 0;
}

const struct alg_ops alg_leaky_bucket = {
	.id = ALG_LEAKY_BUCKET,
	.name = "leaky_bucket",
	.action = "drained",
	.job = ALG_JOB_DRAIN,
	.fields = RULE_F_CAPACITY | RULE_F_RATE,
	.foreign_type = "zset",
	.zset = 1,
	.meta = 1,
	.recorded_in_meta = 1,
	.client_script = SCRIPT_LEAKY_BUCKET,
	.job_script = SCRIPT_LEAKY_BUCKET_DRAIN,
	.shard_script = SCRIPT_LEAKY_BUCKET_DRAIN_SHARD,
	.state_script = SCRIPT_LEAKY_BUCKET_STATE,
	.job_args = job_args,
	.state_args = state_args,
	.state_ttl_at = 4,
};

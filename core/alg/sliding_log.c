/*
 * Sliding-window log (DESIGN.md "State model"; the sliding log of the seed
 * articles 000 and 002, done atomically and without counting rejections): a
 * sorted set of admitted entries scored by time; entries older than the
 * window leave it; a request of cost n is admitted, as n entries, while
 * count + n <= limit.  lua/sliding_log.lua is the application's check (it
 * records limit, window_ms and rule in the path's meta),
 * lua/sliding_log_prune_shard.lua the worker's prune of sluice's own logs
 * over a shard's due index (by the recorded window), lua/sliding_log_prune.lua
 * the prune of a foreign layout's logs (by the rule's window, in their score
 * unit), lua/sliding_log_state.lua the admin read.
 */
#include <errno.h>

#include "core/alg/alg.h"
#include "core/rules.h"

/* foreign prune ARGV per path: window (ms); the worker appends the layout's score unit */
static int job_args(const struct rule *r, struct cmdargs *a)
{
	return cmdargs_int(a, r->window_ms);
}

/* state ARGV (KEYS log, meta): limit, window (ms), now ("" = Redis TIME); the rule's
 * values win over what the meta records */
static int state_args(const struct rule *r, struct cmdargs *a)
{
	return cmdargs_int(a, r->limit) || cmdargs_int(a, r->window_ms) || cmdargs_add(a, "", 0) ? -ENOMEM : 0;
}

const struct alg_ops alg_sliding_log = {
	.id = ALG_SLIDING_LOG,
	.name = "sliding_log",
	.action = "pruned",
	.job = ALG_JOB_PRUNE,
	.fields = RULE_F_LIMIT | RULE_F_WINDOW,
	.foreign_type = "zset",
	.zset = 1,
	.score_units = 1,
	.recorded_in_meta = 1,
	.client_script = SCRIPT_SLIDING_LOG,
	.job_script = SCRIPT_SLIDING_LOG_PRUNE,
	.shard_script = SCRIPT_SLIDING_LOG_PRUNE_SHARD,
	.state_script = SCRIPT_SLIDING_LOG_STATE,
	.job_args = job_args,
	.state_args = state_args,
	.state_ttl_at = 3,
};

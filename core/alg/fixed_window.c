/*
 * Fixed window (DESIGN.md "State model"; the INCR + EXPIRE counter of seed
 * article 001, made atomic so no counter is left without a TTL): a hash of
 * window index and count with a TTL to the window's end; a request of cost n
 * is admitted while count + n <= limit, and a rejected one is not counted.
 * lua/fixed_window.lua is the application's check, lua/fixed_window_repair.lua
 * the worker's repair (a TTL for counters that foreign, non-atomic clients
 * left without one), lua/fixed_window_state.lua the admin read.
 */
#include <errno.h>

#include "core/alg/alg.h"
#include "core/rules.h"

/* repair ARGV per path: window (ms) */
static int job_args(const struct rule *r, struct cmdargs *a)
{
	return cmdargs_int(a, r->window_ms);
}

/* state ARGV: limit, window (ms), now ("" = Redis TIME) */
static int state_args(const struct rule *r, struct cmdargs *a)
{
	return cmdargs_int(a, r->limit) || cmdargs_int(a, r->window_ms) || cmdargs_add(a, "", 0) ? -ENOMEM : 0;
}

const struct alg_ops alg_fixed_window = {
	.id = ALG_FIXED_WINDOW,
	.name = "fixed_window",
	.action = "repaired",
	.job = ALG_JOB_PRUNE,
	.fields = RULE_F_LIMIT | RULE_F_WINDOW,
	.foreign_type = "string",
	.client_script = SCRIPT_FIXED_WINDOW,
	.job_script = SCRIPT_FIXED_WINDOW_REPAIR,
	.shard_script = SCRIPT_FIXED_WINDOW_REPAIR_SHARD,
	.state_script = SCRIPT_FIXED_WINDOW_STATE,
	.job_args = job_args,
	.state_args = state_args,
	.state_ttl_at = 3,
};

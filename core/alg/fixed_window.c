/*
 * Fixed window (DESIGN.md "State model (key layout 2)"; the INCR + EXPIRE
 * counter of seed article 001, made atomic so no counter is left without a
 * TTL): one hash per path, <prefix>{k}:fixed_window:<path>, of window index,
 * count, time mark and the parameters the client applied (limit, window_ms,
 * rule), with a TTL to the window's end + the skew horizon; a request of
 * cost n is admitted while count + n <= limit, and a rejected one is not
 * counted.  The path's meta key is never used (alg->meta stays 0: that flag
 * is about foreign layouts).
 *
 * lua/fixed_window.lua is the application's check (the calling contract),
 * lua/fixed_window_repair_shard.lua the worker's job over one shard's due
 * index for sluice's own layout (a path is due when every call within the
 * skew horizon is past its counter's window: the counter goes, the path
 * leaves the registry; a counter that lost its TTL gets one, by the
 * recorded window_ms), lua/fixed_window_repair.lua the batch job for
 * foreign layouts (a TTL for INCR counters that non-atomic clients left
 * without one, window_ms from the matching rule: job_args),
 * lua/fixed_window_state.lua the admin read (state_args: the rule's
 * parameters; "" would take the recorded ones).
 */
#include <errno.h>

#include "core/alg/alg.h"
#include "core/rules.h"

/* foreign batch repair ARGV per path: window (ms) */
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

/*
 * Sliding-window counter (DESIGN.md "State model"; the "sliding window of
 * sub-windows" of seed article 001, summing counts rather than members): a
 * hash of sub-window index -> count, beside the time mark and the parameters
 * applied (fields t, limit, window_ms, sub_windows, rule: no meta key); a
 * request of cost n is admitted while the sum of the last sub_windows
 * sub-windows + n <= limit.  lua/sliding_counter.lua is the application's
 * check (key layout 2's calling contract), lua/sliding_counter_prune_shard.lua
 * the worker's prune of expired sub-window fields over one shard's due index
 * (by the parameters the hash records), lua/sliding_counter_prune.lua the same
 * prune for foreign layouts (keys given, the window from the matching rule),
 * lua/sliding_counter_state.lua the admin read.
 */
#include <stdio.h>

#include <errno.h>

#include "core/alg/alg.h"
#include "core/rules.h"

static int check(const struct rule *r, const char *where, struct sl_error *err)
{
	char f[128];

	if (r->sub_windows <= r->window_ms && r->window_ms % r->sub_windows == 0)
		return 0;
	snprintf(f, sizeof(f), "%s%ssub_windows", where && *where ? where : "", where && *where ? "." : "");
	/* the client script refuses the others: each sub-window is a whole number of ms */
	if (r->sub_windows > r->window_ms)
		return sl_fail(err, f, "must not exceed window_ms");
	return sl_fail(err, f, "must divide window_ms");
}

/* foreign layouts' prune ARGV per path: window (ms), sub-windows */
static int job_args(const struct rule *r, struct cmdargs *a)
{
	return cmdargs_int(a, r->window_ms) || cmdargs_int(a, r->sub_windows) ? -ENOMEM : 0;
}

/* state ARGV: limit, window (ms), sub-windows, now ("" = Redis TIME); the script reads "" parameters from the
 * counter's hash */
static int state_args(const struct rule *r, struct cmdargs *a)
{
	return cmdargs_int(a, r->limit) || cmdargs_int(a, r->window_ms) || cmdargs_int(a, r->sub_windows) ||
			       cmdargs_add(a, "", 0)
		       ? -ENOMEM
		       : 0;
}

const struct alg_ops alg_sliding_counter = {
	.id = ALG_SLIDING_COUNTER,
	.name = "sliding_counter",
	.action = "pruned",
	.job = ALG_JOB_PRUNE,
	.fields = RULE_F_LIMIT | RULE_F_WINDOW | RULE_F_SUB,
	.check = check,
	.foreign_type = "hash",
	.client_script = SCRIPT_SLIDING_COUNTER,
	.job_script = SCRIPT_SLIDING_COUNTER_PRUNE,
	.shard_script = SCRIPT_SLIDING_COUNTER_PRUNE_SHARD,
	.state_script = SCRIPT_SLIDING_COUNTER_STATE,
	.job_args = job_args,
	.state_args = state_args,
	.state_ttl_at = 3,
};

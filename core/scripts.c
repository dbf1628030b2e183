#include "core/scripts.h"

#include <string.h>

static const char *const ids[SCRIPT__COUNT] = {
	[SCRIPT_LEAKY_BUCKET] = "leaky_bucket",
	[SCRIPT_LEAKY_BUCKET_DRAIN] = "leaky_bucket_drain",
	[SCRIPT_LEAKY_BUCKET_STATE] = "leaky_bucket_state",
	[SCRIPT_SLIDING_LOG] = "sliding_log",
	[SCRIPT_SLIDING_LOG_PRUNE] = "sliding_log_prune",
	[SCRIPT_SLIDING_LOG_STATE] = "sliding_log_state",
	[SCRIPT_RESET] = "reset",
	[SCRIPT_FIXED_WINDOW] = "fixed_window",
	[SCRIPT_FIXED_WINDOW_REPAIR] = "fixed_window_repair",
	[SCRIPT_FIXED_WINDOW_STATE] = "fixed_window_state",
	[SCRIPT_SLIDING_COUNTER] = "sliding_counter",
	[SCRIPT_SLIDING_COUNTER_PRUNE] = "sliding_counter_prune",
	[SCRIPT_SLIDING_COUNTER_STATE] = "sliding_counter_state",
	[SCRIPT_TOKEN_BUCKET] = "token_bucket",
	[SCRIPT_TOKEN_BUCKET_RECLAIM] = "token_bucket_reclaim",
	[SCRIPT_TOKEN_BUCKET_STATE] = "token_bucket_state",
	[SCRIPT_LEAKY_BUCKET_DRAIN_SHARD] = "leaky_bucket_drain_shard",
	[SCRIPT_SLIDING_LOG_PRUNE_SHARD] = "sliding_log_prune_shard",
	[SCRIPT_SLIDING_COUNTER_PRUNE_SHARD] = "sliding_counter_prune_shard",
	[SCRIPT_FIXED_WINDOW_REPAIR_SHARD] = "fixed_window_repair_shard",
	[SCRIPT_TOKEN_BUCKET_RECLAIM_SHARD] = "token_bucket_reclaim_shard",
	[SCRIPT_REDISSON_RECLAIM] = "redisson_reclaim",
	[SCRIPT_REDISSON_STATE] = "redisson_state",
	[SCRIPT_RULESTORE_CAS] = "rulestore_cas",
	[SCRIPT_RULESTORE_READ] = "rulestore_read",
	[SCRIPT_LEASE] = "lease",
	[SCRIPT_DAEMONS] = "daemons",
};

const char *script_name(enum script_id id)
{
	return (unsigned)id < SCRIPT__COUNT ? ids[id] : NULL;
}

int script_declares_keys(enum script_id id)
{
	switch (id) {
	case SCRIPT_LEAKY_BUCKET_DRAIN_SHARD:
	case SCRIPT_SLIDING_LOG_PRUNE_SHARD:
	case SCRIPT_SLIDING_COUNTER_PRUNE_SHARD:
	case SCRIPT_FIXED_WINDOW_REPAIR_SHARD:
	case SCRIPT_TOKEN_BUCKET_RECLAIM_SHARD:
		return 0;
	default:
		return (unsigned)id < SCRIPT__COUNT;
	}
}

const struct script_src *script_find(const char *name)
{
	for (size_t i = 0; i < script_srcs_len; i++)
		if (strcmp(script_srcs[i].name, name) == 0)
			return &script_srcs[i];
	return NULL;
}

const struct script_src *script_get(enum script_id id)
{
	const char *name = script_name(id);

	return name ? script_find(name) : NULL;
}

#ifndef SLUICE_RESET_CALL_H
#define SLUICE_RESET_CALL_H
/*
 * The calls of lua/reset.lua that reset one path, and the sum of what they
 * removed: shared by the reset of one path and the bulk reset (core/reset.c);
 * private to core/reset.c and core/reset_call.c.
 */
#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>
#include <stddef.h>

#include "core/layout.h"
#include "core/rconn.h"
#include "core/strbuf.h"

/* Calls of reset_queue_path for one path, at most */
#define RESET_CALLS(nlayouts) (2 * (nlayouts) + 1)
/* Registries a reset reports as skipped (of another type), at most: the report stays small. */
#define RESET_SKIPPED_MAX 64

/*
 * The arguments of one reset.lua call: the path's keys of sluice's own
 * layouts (all in its shard's slot), or of one foreign layout; and which of
 * its KEYS are meta hashes.
 */
struct reset_call {
	struct cmdargs keys, args;
	unsigned char *meta;     /* meta[i]: KEYS[i] is a meta hash (bookkeeping, not entries) */
	size_t path;             /* the path's index in the caller's list (a bulk reset's page) */
};

/* Totals of what went (or would go), and the registries left alone. */
struct reset_sum {
	long long paths, keys, entries, registries;
	cJSON *skipped;          /* owned: [{"key", "error"}], at most RESET_SKIPPED_MAX */
	char *seen[RESET_SKIPPED_MAX]; /* owned: the names in `skipped`, as bytes */
	size_t seen_len[RESET_SKIPPED_MAX], nseen;
};

/* Free a call's buffers and zero it. */
void reset_call_free(struct reset_call *rc);
/* Free what a sum owns (its skipped list). */
void reset_sum_free(struct reset_sum *sum);
/*
 * Report registry `key` (`len` bytes), left alone with `error`, once in
 * sum->skipped (at most RESET_SKIPPED_MAX).  0 or -ENOMEM.
 */
int reset_sum_skipped(struct reset_sum *sum, const char *key, size_t len, const char *error);
/* Move sum->skipped, when there is one, into `o` as "skipped_registries".  0 or -ENOMEM (sum keeps it). */
int reset_sum_give_skipped(struct reset_sum *sum, cJSON *o);
/*
 * Fold reset.lua's reply to call `rc` into `sum` (not its path count);
 * `keys_out` (may be NULL) gets one object per key; *found: 1 when the call
 * found anything of the path.  0, or the reply's errno (-ENOSPC, -EBADMSG,
 * -EPROTO), -ENOMEM.
 */
int reset_call_sum(const struct reset_call *rc, const redisReply *r, struct reset_sum *sum, cJSON *keys_out,
		   int *found);
/*
 * Queue every call that resets `path` (`len` bytes; sluice's own layouts in
 * one call, then one per foreign layout, or two when its registry set and
 * the path's keys are in two slots: RESET_CALLS(nlayouts) at most) into
 * `calls` (*ncalls counts them), each tagged with `idx`; `dry` only counts.
 * 0 or -ENOMEM.
 */
int reset_queue_path(struct rbatch *b, struct reset_call *calls, size_t *ncalls, const struct layout *layouts,
		     size_t nlayouts, const char *path, size_t len, int dry, size_t idx);

#endif

#ifndef SLUICE_RESET_H
#define SLUICE_RESET_H
/*
 * Manual resets (lua/reset.lua): one path's keys in every layout, or every
 * path matching a glob, walked as core/walk.h walks registries and keyspaces.
 *
 * For sluice's own layouts (key layout 2) a path's reset is one script call
 * in its shard's slot: the state and meta of each algorithm deleted, the
 * path ZREM'd from each algorithm's due index of that shard.  Each foreign
 * layout gets its own call (its data key, sluice's meta for it, SREM from
 * its registry set).  The calls of one path travel in one pipeline; each is
 * atomic, the whole is not.
 *
 * A registry of another type (a key nothing of sluice's wrote) never fails a
 * reset: the path's keys still go, the registry is left alone and reported
 * in "skipped_registries": [{"key", "error"}] (the member present only when
 * there is one to report, at most 64 of them).
 */
#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stddef.h>

#include "core/layout.h"
#include "core/rconn.h"

/*
 * Delete every key the layouts keep for `path` and remove it from their
 * registries.  *out is a new object describing what was removed:
 * {"path", "keys_removed", "entries_removed", "registries_removed",
 *  "keys": [{"key", "entries"} for data keys, {"key", "meta": true} for meta hashes],
 *  ["skipped_registries"]};
 * entries_removed counts admitted entries only (a meta hash holds bookkeeping).
 * 0, an rconn error, -ENOSPC (Redis out of memory), -EBADMSG (Redis refused
 * the script), -EPROTO, -ENOMEM.
 */
int reset_path(struct rconn *c, const struct layout *layouts, size_t nlayouts,
	       const char *path, size_t len, cJSON **out);

/*
 * Bulk reset: every path of every layout's registry that matches the glob
 * `match` (the rules' dialect, core/glob.h): sluice's own due indexes shard
 * by shard (ZSCAN MATCH), then the foreign layouts (SSCAN MATCH, or SCAN
 * MATCH/TYPE for a layout without a registry), about `batch` paths a page
 * and at most `batch` paths' resets per pipeline, each reset as reset_path
 * does, or with `dry_run` only counted.  A path is counted once: one found
 * in a layout whose earlier layouts' registries also hold it was met there.
 * *out: {"match", "dry_run", "paths", "keys", "entries", ["skipped_registries"]}:
 * paths reset, keys deleted (meta hashes included), admitted entries among
 * them; a registry that cannot be walked (another type) is skipped and
 * reported, the walk goes on.  Errors as reset_path, and -EINVAL for a glob
 * that is not glob_valid; a failure part-way leaves the paths already reset
 * reset.
 *
 * `prog` (may be NULL) has what each page did added to it, for another
 * thread to read (the counts of several calls add up: a caller that starts
 * again after a failure keeps the first call's); when *prog->cancel is set
 * (non-zero) the walk stops before its next page and answers -ECANCELED
 * (what was reset stays reset and is counted in `prog`).
 */
struct reset_progress {
	atomic_llong walked;               /* registry members met so far (matching the glob) */
	atomic_llong paths, keys, entries; /* as in *out, so far */
	const atomic_int *cancel;          /* borrowed, or NULL */
};
int reset_match(struct rconn *c, const struct layout *layouts, size_t nlayouts,
		const char *match, int dry_run, size_t batch, struct reset_progress *prog, cJSON **out);

#endif

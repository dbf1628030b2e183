#ifndef SLUICE_RESET_H
#define SLUICE_RESET_H
/*
 * Manual resets (lua/reset.lua): one path's keys in every layout, or every
 * path matching a glob, walked as core/walk.h walks registries and keyspaces.
 */
#include <cjson/cJSON.h>
#include <stddef.h>

#include "core/layout.h"
#include "core/rconn.h"

/*
 * Delete every key the layouts keep for `path` and remove it from their
 * registries, atomically.  *out is a new object describing what was removed:
 * {"path", "keys_removed", "entries_removed", "registries_removed",
 *  "keys": [{"key", "entries"} for data keys, {"key", "meta": true} for meta hashes]};
 * entries_removed counts admitted entries only.
 */
int reset_path(struct rconn *c, const struct layout *layouts, size_t nlayouts,
	       const char *path, size_t len, cJSON **out);

/*
 * Bulk reset: every path of every layout's registry that matches the glob
 * `match` (SSCAN MATCH, or SCAN MATCH/TYPE for a layout without a registry;
 * `batch` paths per pipeline), reset as reset_path
 * does, or with `dry_run` only counted.  A path in several registries counts
 * once.  *out: {"match", "dry_run", "paths", "keys", "entries"}: paths reset,
 * keys deleted (meta hashes included), admitted entries among them.
 * Errors as reset_path; a failure part-way leaves the paths already reset reset.
 */
int reset_match(struct rconn *c, const struct layout *layouts, size_t nlayouts,
		const char *match, int dry_run, size_t batch, cJSON **out);

#endif

#ifndef SLUICE_PATHSTATE_H
#define SLUICE_PATHSTATE_H
/*
 * Live state of paths, read without writing (the lua/ state scripts), and the
 * manual reset of one path (lua/reset.lua).  JSON field names are DESIGN.md's:
 * path, algorithm, rule, count, capacity|limit, remaining, reset_ms.
 */
#include <cjson/cJSON.h>
#include <stddef.h>

#include "core/layout.h"
#include "core/rconn.h"
#include "core/rules.h"

/*
 * State of `n` paths found in layout `l`'s registry (paths[i], lens[i]), with
 * their rules from `rules`, read in one pipeline.  Appends one object per path
 * to the JSON array `out`.  0 or an rconn error / -ENOMEM / -EPROTO.
 */
int pathstate_list(struct rconn *c, const struct layout *l, const struct ruleset *rules,
		   const char *const *paths, const size_t *lens, size_t n, cJSON *out);

/*
 * State of one path: its rule decides the layout; with no rule, the first
 * layout whose registry holds the path.  *out is a new object (caller deletes),
 * or NULL when the path has no rule and no state (the 404 case).
 */
int pathstate_get(struct rconn *c, const struct layout *layouts, size_t nlayouts,
		  const struct ruleset *rules, const char *path, size_t len, cJSON **out);

/*
 * Delete every key the layouts keep for `path` and remove it from their
 * registries, atomically.  *out is a new object describing what was removed:
 * {"path", "keys_removed", "entries_removed", "registries_removed",
 *  "keys": [{"key", "entries"} for data keys, {"key", "meta": true} for meta hashes]};
 * entries_removed counts admitted entries only.
 */
int pathstate_reset(struct rconn *c, const struct layout *layouts, size_t nlayouts,
		    const char *path, size_t len, cJSON **out);

/*
 * Bulk reset: every path of every layout's registry that matches the glob
 * `match` (SSCAN MATCH, or SCAN MATCH/TYPE for a layout without a registry;
 * `batch` paths per pipeline), reset as pathstate_reset
 * does, or with `dry_run` only counted.  A path in several registries counts
 * once.  *out: {"match", "dry_run", "paths", "keys", "entries"}: paths reset,
 * keys deleted (meta hashes included), admitted entries among them.
 * Errors as pathstate_reset; a failure part-way leaves the paths already reset reset.
 */
int pathstate_reset_match(struct rconn *c, const struct layout *layouts, size_t nlayouts,
			  const char *match, int dry_run, size_t batch, cJSON **out);

#endif

#ifndef SLUICE_PATHSTATE_H
#define SLUICE_PATHSTATE_H
/*
 * Live state of paths, read without writing (each algorithm's state script,
 * core/algorithm.h).  JSON field names are DESIGN.md's:
 * path, algorithm, rule, count, capacity|limit, remaining, reset_ms.
 */
#include <cjson/cJSON.h>
#include <stddef.h>

#include "core/layout.h"
#include "core/rconn.h"
#include "core/reply.h"
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

/* Where a listing across layouts stands: a layout and the walk cursor inside it. */
struct pathstate_cursor {
	size_t layout;                 /* index into the layouts */
	char walk[REPLY_CURSOR_MAX];   /* "0": that layout's start */
	int done;                      /* the walk passed the last layout */
};

/*
 * A page of the listing: walk layout after layout from *cur (core/walk.h),
 * appending to `out` the state of each path found whose path matches the glob
 * `match` (NULL: all), until `count` paths were appended, every layout was
 * walked (cur->done), or `max_pages` pages were read (a sparse match must not
 * hold the caller long).  *cur says where to go on.  0, -ERANGE when Redis
 * refuses the cursor (not one it gave), -EBADMSG (a registry of another
 * type), or an rconn error / -ENOMEM / -EPROTO; *cur is then unchanged.
 */
int pathstate_page(struct rconn *c, const struct layout *layouts, size_t nlayouts, const struct ruleset *rules,
		   const char *match, size_t count, int max_pages, struct pathstate_cursor *cur, cJSON *out);

#endif

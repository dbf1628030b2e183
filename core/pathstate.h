#ifndef SLUICE_PATHSTATE_H
#define SLUICE_PATHSTATE_H
/*
 * Live state of paths, read without writing (each algorithm's state script,
 * core/algorithm.h).  JSON field names are DESIGN.md's (path, algorithm,
 * rule, count, capacity|limit, remaining, reset_ms) and these:
 *
 *   layout          the layout the state was found in
 *   rule            the rule the state names: for sluice's own layouts the
 *                   rule its client recorded, null for explicit parameters
 *                   (DESIGN.md, "Rules"); when the state records nothing (no
 *                   state yet, a foreign layout), the matching rule it is
 *                   read by, if that rule is of the layout's algorithm
 *   matching_rule   the rule that matches the path, or null
 *   mismatch        true when the recorded parameters differ from the
 *                   matching rule's, or that rule is of another algorithm;
 *                   false when they agree or nothing is recorded; null when
 *                   no rule matches
 *   recorded        the parameters the client recorded ({"capacity": 3,
 *                   "rate": 0.5}, as numbers), or null
 *   registered      whether the path is in its registry (sluice's own: its
 *                   shard's due index); null when the registry cannot be read
 *   due_ms          own layouts: the due index's score (ms, Redis time at
 *                   which the worker next looks at the path), null when not
 *                   registered
 *   <limits>        the parameters the state is read by (recorded, else the
 *                   rule's), null when there are none
 *   ttl_ms          the state key's PTTL (-2 absent, -1 none)
 *   note, error     why limits are unknown; a key of another type
 *
 * The state script is called with every parameter "" first (the recorded
 * ones are used); a path that records none is read again with its matching
 * rule's (the algorithm's state_args, core/algorithm.h) when that rule is
 * of the layout's algorithm.  A foreign layout records nothing: it is read
 * with the matching rule's parameters, or counted raw (ZCARD, EXISTS) with
 * none.
 */
#include <cjson/cJSON.h>
#include <stddef.h>

#include "core/layout.h"
#include "core/rconn.h"
#include "core/reply.h"
#include "core/rules.h"
#include "core/walk.h"

/*
 * State of one path: the first layout of the matching rule's algorithm
 * whose state key exists, else the first layout (own ones first) whose
 * state key exists, else the first of the rule's algorithm, else the first
 * that registers the path.  *out is a new object (caller deletes), or NULL
 * when no rule matches and no layout holds or registers the path (the 404
 * case).  `extra` (NULL: none) is one more command sent in the first round
 * trip (the admin's lease read); its reply goes to *extra_reply (the caller
 * frees it; NULL on an error return).  The state in the first layout of the
 * rule's algorithm is read in that round trip too: when it is the one
 * picked, as it is whenever it exists, the read takes one round trip (two
 * when a state without recorded parameters is read again by the rule).
 * 0, an rconn error, -ENOMEM, -EPROTO.
 */
int pathstate_get(struct rconn *c, const struct layout *layouts, size_t nlayouts, const struct ruleset *rules,
		  const char *path, size_t len, struct cmdargs *extra, redisReply **extra_reply, cJSON **out);

/*
 * A page of the listing: walk layout after layout from *cur (core/walk.h:
 * own layouts shard by shard), appending to `out` the state of each path
 * found whose path matches the glob `match` (NULL: all), until about
 * `count` paths were appended (registry pages are taken whole: with at least
 * half of `count` in hand, a page that would bring more than 1.5 x `count`
 * is left to the next call; the first page is always taken, whatever its
 * size), every layout was walked (cur->done), or `max_registries`
 * registry pages were read (a sparse match must not hold the caller long).
 * A registry that cannot be walked (another type) is skipped and appended
 * to *skipped ([{"key", "error"}], created when needed, the caller's to
 * delete).  *cur says where to go on.  0; -ERANGE when Redis refuses the
 * cursor (not one it gave); -EINVAL for a glob that is not glob_valid; an
 * rconn error / -ENOMEM / -EPROTO; *cur is then unchanged.
 */
int pathstate_page(struct rconn *c, const struct layout *layouts, size_t nlayouts, const struct ruleset *rules,
		   const char *match, size_t count, size_t max_registries, struct walk_pos *cur, cJSON *out,
		   cJSON **skipped);

#endif

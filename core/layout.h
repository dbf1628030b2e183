#ifndef SLUICE_LAYOUT_H
#define SLUICE_LAYOUT_H
/*
 * A layout says where a limiter keeps its state: algorithm, key template
 * and registry.  sluice's own layouts are key layout 2 (core/keys.h): by
 * shard, every key of shard k tagged {k}:
 *   <prefix>{k}:<algorithm>:<path>        data: sorted set (leaky bucket, sliding log),
 *                                         hash (sliding counter, fixed window, token bucket)
 *   <prefix>{k}:<algorithm>_meta:<path>   meta hash (time mark, carry, parameters, rule)
 *   <prefix>{k}:registry:<algorithm>      the shard's due index (sorted set)
 * A foreign layout's keys are its client's (data key = key_prefix + path +
 * key_suffix, one registry set or SCAN); sluice's bookkeeping for one of
 * them (a leaky bucket's meta) lives under sluice's prefix, in the data
 * key's own slot whatever bytes the key holds (core/slottag.h):
 *   <prefix>{<tag of the data key's slot>}:<layout name>_meta:<data key>
 */
#include <cjson/cJSON.h>
#include <stddef.h>

#include "core/algorithm.h"
#include "core/error.h"
#include "core/rules.h"
#include "core/strbuf.h"

/* Unit of the scores a limiter writes into its sorted sets. */
enum score_unit { UNIT_MS = 0, UNIT_S, UNIT_US };

struct layout {
	char name[32];           /* "leaky_bucket", ... for sluice's own */
	enum algorithm algorithm;
	char *key_prefix;        /* owned; sluice's own: the key prefix ("sluice:"), a
				  * foreign one's: the key before the path */
	char *key_suffix;        /* owned; "" for sluice's own */
	char *registry;          /* owned; a foreign layout's registry set ("LeakyBucket::pathSet"),
				  * for a scan layout a name nothing writes (SREM on it is a
				  * no-op); NULL for sluice's own, which has one per shard
				  * (layout_shard_registry) */
	int foreign;             /* written by another limiter (from the config's "layouts");
				  * 0: sluice's own, key layout 2, walked by its due index */
	int scan;                /* no registry: found by SCAN MATCH scan_match TYPE scan_type */
	char *scan_match;        /* owned; glob of the data keys (prefix*suffix, escaped) */
	char *scan_type;         /* owned; "zset", "hash" or "string" */
	enum score_unit unit;    /* scores in ms (sluice's own), s or µs */
	int cut_exclusive;       /* a foreign sliding log whose clients remove scores < now - window
				  * and keep the bound ("cut": "exclusive"); 0: <= now - window */
	const struct alg_ops *kind; /* static; a foreign layout kind's table ("kind": "redisson",
				  * algorithm_kind) in place of the algorithm's, NULL for none */
	char *meta_prefix;       /* owned; a foreign layout's: sluice's key prefix, under which
				  * its metas live (layouts_append_foreign); NULL for sluice's own,
				  * and for a foreign layout not yet given one (config) */
};

/*
 * sluice's own layouts under key prefix `prefix`, one per algorithm, in the
 * order of enum algorithm (leaky_bucket, sliding_log, sliding_counter,
 * fixed_window, token_bucket).  *out is a new array of *n
 * layouts, freed with layouts_free().  0 or -ENOMEM.
 */
int layouts_default(const char *prefix, struct layout **out, size_t *n);
void layouts_free(struct layout *v, size_t n);
/*
 * A foreign layout from a config object:
 *   {"name": "...", "algorithm": "...", "key_prefix": "...", "key_suffix": "...",
 *    "registry": "..."}  or, with no registry, "scan": true (optional "scan_type"),
 *   and "unit": "ms" | "s" | "us" (scores; default ms), "cut": "inclusive" | "exclusive"
 *   (where a sliding log's clients cut; default inclusive); "kind": "redisson" (algorithm
 *   token_bucket, with "scan": true) for Redisson's RRateLimiter (core/alg/redisson.c).
 * Fills *out (free its strings with layouts_free on an array holding it).
 * -EINVAL with `err` naming the field (prefixed by `where`), -ENOMEM.
 */
int layout_from_json(const cJSON *obj, const char *where, struct layout *out, struct sl_error *err);
/* The table the layout is maintained and shown by: its kind's, else its algorithm's; static storage. */
const struct alg_ops *layout_ops(const struct layout *l);
/* Free the strings of one layout and zero it. */
void layout_clear(struct layout *l);
/* Append a copy of `l` to the array *v of *n layouts.  0 or -ENOMEM (array unchanged). */
int layouts_append(struct layout **v, size_t *n, const struct layout *l);
/*
 * Append a copy of the foreign layout `l` (from layout_from_json) whose metas
 * live under sluice's key prefix `prefix` (a copy is kept): how the daemon
 * (and a test) puts the config's foreign layouts after sluice's own.  0 or
 * -ENOMEM (array unchanged).
 */
int layouts_append_foreign(struct layout **v, size_t *n, const struct layout *l, const char *prefix);
/*
 * The path inside data key `key` (`len` bytes) of layout `l`: *path points
 * into `key`.  0, or -EINVAL when the key is not of the layout's shape (for
 * sluice's own: not in the path's shard).
 */
int layout_path_of(const struct layout *l, const char *key, size_t len, const char **path, size_t *plen);
/*
 * Append the registry key that holds `path` (`len` bytes): a foreign
 * layout's registry, or sluice's due index of the path's shard.  0 or -ENOMEM.
 */
int layout_registry_key(const struct layout *l, const char *path, size_t len, struct strbuf *b);
/* Append sluice's own due index of shard `shard` (0..1023): <prefix>{k}:registry:<algorithm>.  0 or -ENOMEM. */
int layout_shard_registry(const struct layout *l, unsigned shard, struct strbuf *b);
/* "ms", "s", "us". */
const char *score_unit_name(enum score_unit u);

/* The layout for algorithm `a`, or NULL; borrowed. */
const struct layout *layouts_find(const struct layout *v, size_t n, enum algorithm a);

/*
 * Append the data key of `path` (`len` bytes, binary-safe) to `b`; with
 * `meta` set, the key of the leaky bucket's meta hash instead.  The one place
 * a meta key is made (the worker's drain, the admin path state and reset all
 * come here):
 *   sluice's own layouts: <prefix>{k}:<algorithm>_meta:<path> (core/keys.h),
 *     exactly what lua/README.md tells clients, whatever bytes the path holds;
 *   a foreign layout: <meta_prefix>{<slottag_of(keyslot(data key))>}:<name>_meta:<data key>,
 *     in the data key's slot whatever bytes it holds ('{' and '}' included).
 * 0, -ENOMEM, or -EINVAL for the meta of a foreign layout without a
 * meta_prefix (`b` as it was on error).
 */
int layout_key(const struct layout *l, const char *path, size_t len, int meta, struct strbuf *b);

/* layout_key appended as one argument of `a`.  0 or -ENOMEM. */
int layout_push_key(struct cmdargs *a, const struct layout *l, const char *path, size_t len, int meta);
/*
 * Append to `b` the SCAN MATCH glob of the data keys whose path matches the
 * glob `match` (the layout's prefix and suffix escaped, `match` as given).
 * 0 or -ENOMEM.
 */
int layout_scan_glob(const struct layout *l, const char *match, struct strbuf *b);

#endif

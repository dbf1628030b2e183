#ifndef SLUICE_PATHREAD_H
#define SLUICE_PATHREAD_H
/*
 * The state reads of path items (struct path_item, core/pathview.h) for
 * core/pathstate.c: how an item is read (its algorithm's state script with
 * the recorded parameters, its rule's, or raw), in pipelines where the paths
 * of one registry page share one state script call (lib/state_each.lua).
 * Every reply an item gets is owned by the item (pathread_free).
 */
#include <cjson/cJSON.h>
#include <stddef.h>

#include "core/layout.h"
#include "core/pathview.h"
#include "core/rconn.h"
#include "core/rules.h"
#include "core/strbuf.h"

/* Free the replies of the `n` items of `v`, then `v`. */
void pathread_free(struct path_item *v, size_t n);
/* Queue the command built in `a` (`script`: a call of script `id` with `nkeys` keys).  0 or -ENOMEM. */
int pathread_args(struct rbatch *b, struct cmdargs *a, int script, enum script_id id, int nkeys);
/* The rule item `path` of layout `l` is shown by: a foreign layout's of its algorithm if one matches, else the path's (NULL: none). */
const struct rule *pathread_match(const struct ruleset *rules, const struct layout *l, const char *path, size_t len);
/* Set it->raw and it->read_by: by its matching rule when a foreign layout has one of its algorithm, else raw. */
void pathread_kind(struct path_item *it);
/*
 * Queue the read of `it`: its algorithm's state script with KEYS state and
 * meta, ARGV the parameters of `rule` (NULL: every one "", the recorded
 * ones) and now "" (Redis TIME); or, when `raw`, ZCARD / EXISTS of its data
 * key.  0, -EINVAL (a foreign layout with no meta to pass), -ENOMEM.
 */
int pathread_queue(struct rbatch *b, const struct path_item *it, const struct rule *rule, int raw);
/*
 * Read the state of the `n` items of `v` (those holding a reply already are
 * not read again): one pipeline, the paths of one shard's own layout in one
 * call, then those that record no parameters again by their rule.  0, an
 * rconn error, -ENOMEM, -EPROTO.
 */
int pathread_items(struct rconn *c, struct path_item *v, size_t n);
/* Append the items' state objects to `out`.  0, or -EPROTO (a reply of the wrong shape, or -ENOMEM). */
int pathread_out(struct path_item *v, size_t n, cJSON *out);

#endif

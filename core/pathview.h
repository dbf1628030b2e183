#ifndef SLUICE_PATHVIEW_H
#define SLUICE_PATHVIEW_H
/*
 * A path's state as the admin API shows it (core/pathstate.h reads it):
 * the JSON object built from what the algorithm's state script answered,
 * with the parameters and rule the state records, the rule that matches
 * the path and whether they differ.  Private to core/pathstate.c and
 * core/pathview.c, but for pathview_params_differ, which the census of
 * mismatches (core/census.c) shares so that both count the same paths.
 */
#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>
#include <stddef.h>

#include "core/layout.h"
#include "core/rules.h"

/* One path to show: where it was found and what was read. */
struct path_item {
	const struct layout *l;
	const char *path;            /* borrowed */
	size_t len;
	const struct rule *match;    /* the rule that matches the path, or NULL */
	const struct rule *read_by;  /* the rule whose parameters the read used, or NULL */
	int registered;              /* 1, 0, or -1: unknown (the registry could not be read) */
	double due;                  /* own layouts: the due index's score; < 0: none */
	int raw;                     /* counted raw (ZCARD / EXISTS): a foreign layout without a rule */
	redisReply *reply;           /* owned: the read's reply */
};

/*
 * The item's state object from its read: a new object (caller deletes), or
 * NULL on -ENOMEM or a reply of the wrong shape.  A key of another type is
 * an object with the Redis `error`.
 */
cJSON *pathview_item(struct path_item *it);
/* Rule fields (RULE_F_*, core/algorithm.h): one slot per bit. */
#define PATHVIEW_FIELDS 5

/*
 * The `mismatch` comparison: whether the recorded parameters `rec` (rec[i]
 * the value of field bit 1 << i as the client recorded it, a string reply
 * borrowed, or NULL when absent; only alg's fields are read) differ from
 * rule `r`'s (of the same algorithm).  A field of alg missing, or not a
 * finite number, differs.  1 or 0: the numbers are compared as they are,
 * nothing is allocated (a negative return, once -ENOMEM, is no longer made).
 */
int pathview_params_differ(const struct alg_ops *alg, const redisReply *const rec[PATHVIEW_FIELDS],
			   const struct rule *r);
/* The object for a rule of an algorithm no layout keeps state for; new, or NULL (-ENOMEM). */
cJSON *pathview_unkept(const struct rule *rule, const char *path, size_t len);
/* 1 when the item's matching rule is of another algorithm than its layout. */
int pathview_other_algorithm(const struct path_item *it);
/* 1 when an own-layout item's state records no parameters (nor rule) and is to be read by its matching rule. */
int pathview_wants_rule_read(const struct path_item *it);

#endif

#ifndef SLUICE_RULESTORE_H
#define SLUICE_RULESTORE_H
/*
 * Rules live in Redis so that every daemon sees the same ones:
 *   <prefix>rules           hash: rule name -> rule JSON (compact)
 *   <prefix>rules:version   counter, INCR'd by every change (MULTI/EXEC with it)
 * A daemon reloads its ruleset when the counter differs from the version it holds.
 * Ties between globs of equal literal prefix are broken by rule name, so every
 * daemon orders the rules the same way whatever order HGETALL returns.
 */
#include <stdint.h>

#include "core/rconn.h"
#include "core/rules.h"

/* Current version counter (0 when absent).  0 or an rconn error. */
int rulestore_version(struct rconn *c, const char *prefix, uint64_t *out);

/*
 * Reload `rs` from Redis when the version differs from rs->version (or `force`).
 * Entries that fail validation are skipped and counted in *invalid (may be NULL).
 * *changed (may be NULL) is set to 1 when `rs` was reloaded.  On error `rs` is unchanged.
 */
int rulestore_refresh(struct rconn *c, const char *prefix, struct ruleset *rs, int force,
		      int *changed, size_t *invalid);

/*
 * Store `r` (replacing the rule of that name) and bump the version, atomically.
 * *created (may be NULL) is 1 when no rule of that name existed; *unchanged (may be
 * NULL) is 1 when the stored rule was already identical (then the version is not bumped).
 */
int rulestore_put(struct rconn *c, const char *prefix, const struct rule *r, int *created,
		  int *unchanged);
/* Delete rule `name`; *deleted = 1 when it existed (version bumped only then). */
int rulestore_delete(struct rconn *c, const char *prefix, const char *name, int *deleted);

#endif

#ifndef SLUICE_RULESTORE_H
#define SLUICE_RULESTORE_H
/*
 * Rules live in Redis so that every daemon sees the same ones:
 *   <prefix>rules           hash: rule name -> rule JSON (compact)
 *   <prefix>rules:version   counter, INCR'd by every change
 *   <prefix>rules:epoch     random token set (NX) with the first change
 * Every change is one MULTI/EXEC.  A daemon reloads its ruleset when the
 * (version, epoch) pair differs from the one it holds: the epoch tells a
 * store that lost its data (FLUSHALL, a restart without persistence) and
 * counted up to the same version again from one that did not change.
 * Ties between globs of equal literal prefix are broken by rule name, so every
 * daemon orders the rules the same way whatever order HGETALL returns.
 *
 * Errors: 0, an rconn error (-EIO, -EAGAIN, -ENOMEM), -ESTALE for a failed
 * If-Match precondition (the *_if calls), -ENOSPC when Redis is out of memory
 * (maxmemory: it refuses a change, which is then not made), -EBADMSG when Redis
 * refused a command (e.g. one of these keys has another type; nothing is
 * reported as done then), -EPROTO for an unexpected reply.
 */
#include <stdint.h>

#include "core/rconn.h"
#include "core/rules.h"

/* Current version counter into *out (0 when absent or not a number). */
int rulestore_version(struct rconn *c, const char *prefix, uint64_t *out);

/*
 * Reload `rs` from Redis when the version or epoch differ from rs's (or `force`).
 * Reads only, outside MULTI (which Redis refuses at maxmemory), so it works
 * when Redis is out of memory; the rules read agree with the version read.
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
/*
 * Give a store that has rules but no version (its version key was lost) a
 * version and an epoch (SET NX: an existing one is kept), so daemons can tell
 * it is not empty.  Writes only what is missing, so a store that has both
 * needs no write (and Redis at maxmemory does not refuse it).  0, -ENOSPC
 * (missing, and Redis is out of memory), -EBADMSG, -EPROTO or an rconn error.
 */
int rulestore_mark(struct rconn *c, const char *prefix);
/* Delete rule `name`; *deleted = 1 when it existed (version bumped only then). */
int rulestore_delete(struct rconn *c, const char *prefix, const char *name, int *deleted);

/*
 * The entity tag of a rule: FNV-1a 64 of its canonical JSON (rule_to_text),
 * as a quoted HTTP strong ETag, e.g. "\"9f0c...\"" (19 bytes with NUL).
 * Two daemons give the same rule the same tag.  0 or -ENOMEM.
 */
#define RULESTORE_ETAG_SIZE 20
int rulestore_etag(const struct rule *r, char out[RULESTORE_ETAG_SIZE]);

/*
 * As rulestore_put / rulestore_delete, under an HTTP If-Match precondition:
 * `if_match` is "*" (the rule must exist) or one or more ETags separated by
 * commas; NULL means no precondition.  -ESTALE when the stored rule does not
 * match (or changed while this call ran: WATCH on the rules hash).
 */
int rulestore_put_if(struct rconn *c, const char *prefix, const struct rule *r, const char *if_match,
		     int *created, int *unchanged);
int rulestore_delete_if(struct rconn *c, const char *prefix, const char *name, const char *if_match,
			int *deleted);

#endif

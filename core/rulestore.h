#ifndef SLUICE_RULESTORE_H
#define SLUICE_RULESTORE_H
/*
 * Rules live in Redis so that every daemon sees the same ones:
 *   <prefix>rules           hash: rule name -> rule JSON (compact)
 *   <prefix>rules:version   counter, INCR'd by every change
 *   <prefix>rules:epoch     random token set (NX) with the first change
 * A daemon reloads its ruleset when the (version, epoch) pair differs from
 * the one it holds: the epoch tells a store that lost its data (FLUSHALL, a
 * restart without persistence) and counted up to the same version again from
 * one that did not change.  Ties between globs of equal literal prefix are
 * broken by rule name, so every daemon orders the rules the same way whatever
 * order HGETALL returns.
 *
 * One key per command.  The three keys carry no hash tag, so on a Redis
 * Cluster they are in three slots (perhaps on three nodes): no command, MULTI
 * or WATCH here names two of them, and where order matters each step is its
 * own round trip (a pipeline split by node keeps no order between nodes).  A
 * change is therefore no longer one MULTI/EXEC but three steps:
 *   1. a compare-and-set of the rule's field of the hash alone
 *      (lua/rulestore_cas.lua): with If-Match, "set (or delete) the field only
 *      if it still holds the text the precondition was evaluated on";
 *   2. SET NX of the epoch, when the read before the change found none;
 *   3. INCR of the version, last, so a reader that sees the new version
 *      finds the new rules in the hash.
 * What that changes for callers:
 *   - A change is atomic on the hash, not with its bump.  A writer that stops
 *     (crash, lost connection, Redis refusing the INCR) between 1 and 3 leaves
 *     the change in the hash with the old version.  Such a change is not
 *     lost: rulestore_refresh compares a digest of the hash (every
 *     RULESTORE_DIGEST_MS) and, finding it changed at the same version,
 *     bumps the version itself (once, however many daemons find it: an INCR
 *     only if the version is still the one it read) and reloads; so does an
 *     edit of the hash by hand.  Until then (up to RULESTORE_DIGEST_MS plus a
 *     refresh) other daemons keep the rules they had.  At maxmemory that bump
 *     is refused: the daemon reloads all the same, and the shard copies the
 *     worker keeps by version follow at the next change.
 *   - Once step 1 is done the call succeeds: an error of step 2 or 3 is not
 *     reported (the change is made; the refresh above finishes it).
 *   - If-Match (the *_if calls) needs no WATCH and is exact per rule: the
 *     write fails with -ESTALE only when that rule's text changed between
 *     this call's read and its write, not when another rule of the hash did.
 *     Two writers with the same ETag: one wins, the other gets -ESTALE.  A
 *     text changed and changed back between the two counts as unchanged (the
 *     ETag is of the content).  A write that finds the rule already as it
 *     would leave it (another writer's identical change, or this call sent
 *     twice by rconn after a reconnect) is told so rather than -ESTALE, as
 *     RFC 9110 13.1.1 allows: a put succeeds with *unchanged = 1, a delete
 *     with *deleted = 0 (the rule is gone), and neither bumps the version
 *     (the writer that made the change does, or the digest check does).
 *   - A read is no longer a snapshot: see rulestore_refresh.
 *
 * Errors: 0, an rconn error (-EIO, -EAGAIN, -ENOMEM), -ESTALE for a failed
 * If-Match precondition (the *_if calls), -ENOSPC when Redis is out of memory
 * (maxmemory: it refuses a change, which is then not made: the
 * compare-and-set script declares no flags, so Redis refuses it before it
 * runs, as it refused the MULTI before), -EBADMSG when Redis refused a
 * command (e.g. one of these keys has another type, or the version is not a
 * number: refused before anything is written), -EPROTO for an unexpected
 * reply.
 */
#include <stdint.h>

#include "core/rconn.h"
#include "core/rules.h"

/* Current version counter into *out (0 when absent or not a number). */
int rulestore_version(struct rconn *c, const char *prefix, uint64_t *out);

/*
 * Reload `rs` from Redis when the version or epoch differ from rs's (or
 * `force`), or when the hash's digest differs from the one it was loaded at
 * (checked at most every RULESTORE_DIGEST_MS, as rs->digest_due_ms says;
 * then the version is bumped first: see above).  The common case is one
 * round trip: GET of the version and GET of the epoch (and, when due, the
 * digest script).  A reload reads the hash (lua/rulestore_read.lua, with its
 * digest) and then the marks again, in round trips of their own; equal marks
 * around the hash mean the rules read hold every change up to that version.
 * After REFRESH_READS (3) reads that each saw the marks move, it takes the
 * last one, with the marks read before it: those differ from the version now
 * stored, so the next refresh reads again (the rules may then be ahead of the
 * version they are held at, never behind it).  Reads only, but for the
 * bump a lost one is owed; no MULTI (which Redis refuses at maxmemory, and
 * which cannot span slots), so it works when Redis is out of memory.
 * A version key of another type reads as a version that is no number (every
 * refresh reloads); a rules key of another type is -EBADMSG.
 * -ENODATA (`rs` unchanged) when the rules hash is gone while the version is
 * >= 1: a delete of the last rule leaves the field ':empty' (skipped by every
 * reader), so the hash goes only with its data (a FLUSHALL, or on a cluster
 * its node back empty while the version's node is not); the caller stores
 * its config's rules again (the daemon does: `rules_lost`).
 * Entries that fail validation are skipped and counted in *invalid (may be NULL).
 * *changed (may be NULL) is set to 1 when `rs` was reloaded.  On error `rs` is unchanged.
 */
#define RULESTORE_DIGEST_MS 5000
int rulestore_refresh(struct rconn *c, const char *prefix, struct ruleset *rs, int force,
		      int *changed, size_t *invalid);

/*
 * Store `r` (replacing the rule of that name) and bump the version: the
 * hash's field set atomically (rulestore_cas.lua), then the version (see
 * above for what is no longer atomic).  *created (may be NULL) is 1 when no
 * rule of that name existed; *unchanged (may be NULL) is 1 when the stored
 * rule was already identical (then nothing is written and the version is not
 * bumped).
 */
int rulestore_put(struct rconn *c, const char *prefix, const struct rule *r, int *created,
		  int *unchanged);
/*
 * Give a store that has rules but no version (its version key was lost) a
 * version and an epoch (SET NX: an existing one is kept; the epoch first, the
 * version last, each one command of one key), so daemons can tell it is not
 * empty.  Writes only what is missing, so a store that has both needs no
 * write (and Redis at maxmemory does not refuse it).  0, -ENOSPC (missing,
 * and Redis is out of memory), -EBADMSG, -EPROTO or an rconn error.
 */
int rulestore_mark(struct rconn *c, const char *prefix);
/*
 * Delete rule `name` (HDEL by rulestore_cas.lua, then the version's bump);
 * *deleted = 1 when this call deleted it (version bumped only then), 0 when
 * there was none (or it was gone by the time of the write).
 */
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
 * match, or when its text changed between this call's read and its write
 * (the write is a compare-and-set on that text: see above).  No tag (nor
 * "*") matches an absent rule; but delete_if of a rule absent at the read
 * answers *deleted = 0, whatever the precondition.
 */
int rulestore_put_if(struct rconn *c, const char *prefix, const struct rule *r, const char *if_match,
		     int *created, int *unchanged);
int rulestore_delete_if(struct rconn *c, const char *prefix, const char *name, const char *if_match,
			int *deleted);

#endif

#ifndef SLUICE_WORKER_LEASE_H
#define SLUICE_WORKER_LEASE_H
/*
 * Shard leases: several daemons share the 1024 shards (DESIGN.md, "Several
 * daemons").
 *
 * Membership and ownership: worker/members.h (a heartbeat each step, into
 * <prefix>daemons; rendezvous hashing over the live ids).  A daemon whose
 * heartbeat is older than ttl_ms (three lease periods of ttl_ms / 3) is
 * dead; members silent for LEASE_FORGET_TTLS x ttl_ms leave the set.
 *
 * Leases.  A daemon takes the shards it should own with SET
 * <prefix>{k}:lease <id>:<token> NX PX ttl_ms (lua/lease.lua), renews
 * them every ttl_ms / 3 while they hold its string (PEXPIRE), and gives
 * back (DEL while its own) those another live daemon should now own; that
 * one takes them at its next step.  A refused acquisition is tried again
 * 50 ms later, then 100, 200, ... up to ttl_ms / 4 (its holder, alive, hands
 * it over at its next step), or when the holder's lease runs out if sooner,
 * and at once after the members changed; a refusal by a lease with more
 * time left than ttl_ms counts a TTL conflict (another daemon's lease_ttl_ms
 * is longer), one by this id's lease from another process a duplicate id.
 * A lease key that no daemon writes (another type, or no TTL) is replaced
 * by the daemon the shard belongs to (lua/lease.lua).  The token is new at every
 * acquisition, so a string from before a lease was lost never matches the
 * lease taken again.  The worker's shard scripts get the lease key and the
 * string and change nothing when the key holds another (lib/due.lua: the
 * fence); a daemon whose lease time ran out by its own clock
 * (CLOCK_MONOTONIC, from the send of its last successful renewal) without a
 * renewal counts it as lost at once.
 *
 * Threads: one thread steps the leases (it owns the connection);
 * lease_status is read by that thread too (the worker copies it under its
 * lock).  Memory is fixed: some 40 bytes per shard, and the members.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/rconn.h"
#include "core/strbuf.h"
#include "worker/status.h"

#define LEASE_TTL_MIN_MS CONFIG_LEASE_TTL_MIN_MS
#define LEASE_TTL_MAX_MS CONFIG_LEASE_TTL_MAX_MS
/* members of <prefix>daemons silent for this many lease TTLs are removed */
#define LEASE_FORGET_TTLS 30

struct lease;

/*
 * New leases for daemon `id` (config_id_check, core/config.h) under
 * key prefix `prefix` (both copied), with leases of `ttl_ms`
 * (LEASE_TTL_MIN_MS..LEASE_TTL_MAX_MS).  Holds no shard until a step took
 * some.  NULL on a bad argument or ENOMEM.
 */
struct lease *lease_new(const char *id, const char *prefix, int64_t ttl_ms);
void lease_free(struct lease *l);

/*
 * One lease step at `now_us` (CLOCK_MONOTONIC): the heartbeat and the
 * members (one round trip), then, in one more, the renewals (every
 * ttl_ms / 3), the leases given back and those taken.  Leases whose time ran
 * out without a renewal are dropped first (counted as lost).  0, or an
 * rconn error when Redis could not be reached (-EIO, -EAGAIN; the leases
 * held stay held until their time runs out), -EBADMSG when Redis refused
 * the heartbeat (its key of another type, out of memory), -EPROTO, -ENOMEM;
 * the reason in the status's last_error.  A lease call that failed alone
 * (its node down) leaves that shard as it was.
 */
int lease_step(struct lease *l, struct rconn *c, struct rbatch *b, int64_t now_us);
/*
 * Shutdown: give back every lease held (DEL while its own) and leave
 * <prefix>daemons, in one round trip, so the others take the shards at
 * their next step rather than after the TTL.  0 or an rconn error.
 */
int lease_release_all(struct lease *l, struct rconn *c, struct rbatch *b);

/* 1 when this daemon holds shard k's lease now (as far as it knows). */
int lease_holds(const struct lease *l, unsigned k);
/*
 * 1 when it holds shard k's lease for at least `margin_us` more by its own
 * clock (from the send of the last renewal that succeeded), at `now_us`.
 */
int lease_holds_for(const struct lease *l, unsigned k, int64_t now_us, int64_t margin_us);
/* Changes each time shard k's lease is taken (a shard taken again must be looked at again). */
uint32_t lease_gained(const struct lease *l, unsigned k);
/* Append the string shard k's lease holds when it is this daemon's ("<id>:<token>") to `a`.  0 or -ENOMEM. */
int lease_owner_arg(const struct lease *l, unsigned k, struct cmdargs *a);
/* Append shard k's lease key "<prefix>{k}:lease" to `a`.  0 or -ENOMEM. */
int lease_key_arg(const struct lease *l, unsigned k, struct cmdargs *a);
/* A worker script's fence refused shard k's call: the lease is not held (counted as fenced and lost). */
void lease_fenced(struct lease *l, unsigned k);
/* The lease timing: its TTL (ms). */
int64_t lease_ttl_ms(const struct lease *l);
/* Daemons alive by the last heartbeat read, this one included (1 before any). */
size_t lease_live(const struct lease *l);
/* Fill `out` (every field): some 3 KB copied and the 1024 shards counted; the status's, not a hot path's. */
void lease_status(const struct lease *l, struct worker_lease_status *out);

#endif

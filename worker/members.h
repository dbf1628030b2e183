#ifndef SLUICE_WORKER_MEMBERS_H
#define SLUICE_WORKER_MEMBERS_H
/*
 * The daemons that share the shards, and which shards are this one's
 * (DESIGN.md, "Several daemons"; used by worker/lease.c).
 *
 * Membership: a heartbeat into <prefix>daemons (a sorted set: id -> ms of
 * Redis TIME, lua/daemons.lua) that reads the members back, so every daemon
 * compares the scores with one clock, the node's that holds the set.  A
 * member whose heartbeat is older than `dead_ms` is dead.
 *
 * Ownership: rendezvous (highest random weight) hashing.  The live member
 * with the highest weight(id, k) owns shard k (Thaler and Ravishankar,
 * "Using name-based mappings to increase hit rates", IEEE/ACM Transactions
 * on Networking 6(1), 1998): every daemon that reads the same members
 * computes the same owners with no message between them, and a daemon that
 * joins or dies moves only the shards it gains or held, about 1/N of them.
 *
 * Memory is fixed: LEASE_MEMBERS_MAX members and a byte per shard.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/rconn.h"
#include "core/shard.h"
#include "core/strbuf.h"
#include "worker/status.h"

/* members a heartbeat reads at most (the set's 256 heard from last) */
#define LEASE_MEMBERS_MAX 256

struct members_entry {
	char id[CONFIG_ID_MAX + 1];
	int64_t seen_ms;                 /* its heartbeat, Redis TIME */
	int alive;
};

struct members {
	char id[CONFIG_ID_MAX + 1];      /* this daemon's */
	size_t idlen;
	int64_t dead_ms, forget_ms;
	struct members_entry m[LEASE_MEMBERS_MAX]; /* by id (strcmp) */
	size_t n, live;
	int64_t now_ms;                  /* the last heartbeat's Redis TIME */
	uint64_t view;                   /* hash of the live ids the owners were computed for */
	int have_view;
	unsigned char mine[SHARD_COUNT]; /* rendezvous names this daemon */
	uint64_t repaired;               /* heartbeats that found the key of another type (replaced) */
	char repaired_what[24];          /* ... the type it held */
	struct cmdargs a;
};

/* Start with no member (not even this one: the first read adds it).  `id` is checked by the caller. */
void members_init(struct members *ms, const char *id, int64_t dead_ms, int64_t forget_ms);
void members_free(struct members *ms);
/*
 * Queue the heartbeat (`leave`: the removal of this daemon) under key
 * prefix `prefix`: EVALSHA daemons <prefix>daemons id beat|leave forget_ms
 * dead_ms (members scored more than dead_ms ahead of now are removed).
 * 0 or -ENOMEM.
 */
int members_queue(struct members *ms, const char *prefix, struct rbatch *b, int leave);
/*
 * Read the heartbeat's reply {now, repaired, id1, ms1, ...}: the members
 * (this daemon always among them, alive; ids that are not valid daemon ids
 * skipped; a member scored ahead of now by more than dead_ms is dead), a
 * key found of another type (replaced) counted, and the shards that are this daemon's when
 * the live ones changed.  1 when they changed (and on the first read), 0
 * when not, or the reply's errno with the reason in `why` (`cap` bytes).
 */
int members_read(struct members *ms, const redisReply *e, char *why, size_t cap);
/* Copy the members (the first LEASE_PEERS_MAX by id) and the live count into `out`. */
void members_status(const struct members *ms, struct worker_lease_status *out);

/*
 * The rendezvous weight of daemon `id` (`n` bytes) for shard k: SplitMix64's
 * finalizer (Steele, Lea, Flood, 2014) of the id's FNV-1a hash (64 bits)
 * mixed with the shard's.
 */
uint64_t members_weight(const char *id, size_t n, unsigned k);
/*
 * A default daemon id, "<hostname>:<pid>:<6 hex random>", into `buf`
 * (`cap` >= CONFIG_ID_MAX + 1).  0, or -errno when no random bytes could be had.
 */
int members_default_id(char *buf, size_t cap);

#endif

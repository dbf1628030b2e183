#ifndef SLUICE_RCONN_H
#define SLUICE_RCONN_H
/*
 * The one Redis layer (DESIGN.md "Redis Cluster"): the one place that talks
 * to hiredis.  A `struct rconn` is used by one thread.  At first contact it
 * asks the node of the URL (or, when that one does not answer, the nodes
 * listed after it) for CLUSTER SLOTS: a single Redis answers that cluster
 * support is disabled and is then one node that owns every slot; a cluster
 * answers its slot map, and every command is routed to the primary that owns
 * the slot of its key (a script call's first key, a plain command's first
 * argument); a command of one word (TIME, PING) goes to any primary, and one
 * without a key that takes arguments (SCAN, INFO, CLUSTER INFO) is queued
 * for a primary with rbatch_cmd_at.  Callers never see a node.
 *
 * Per node: one connection, made lazily, with AUTH and SELECT, and every
 * embedded script loaded (SCRIPT LOAD, all in one round trip with INFO); after an I/O error, the node is
 * probed (a connect attempt 50 ms later, doubling to every 250 ms, connect
 * timeout 250 ms) until it answers: a Redis that is back is used within
 * 250 ms plus a tick, however long it was away.  A connection that was up and
 * fails on use (closed, not timed out) is re-established at once and its
 * commands sent again once (so a Redis restart costs no error when Redis is
 * back); after that, backoff.  A pipeline is split by node, sent to every
 * node, and the replies read as they arrive from all of them (poll), so a
 * slow or hung node holds up only its own commands, for at most the timeout.
 * Replies that ask for it are acted on and the command sent again, within a
 * pipeline's run: MOVED (the map's slot updated, the whole map asked again
 * within 100 ms), ASK (ASKING, then once to that node), TRYAGAIN and
 * CLUSTERDOWN (waits of 20, 40, 80 ... ms, a few times), NOSCRIPT (the script
 * loaded on that node).  A node that failed makes the map be asked again, so
 * a replica promoted in its place is found.
 *
 * Errors: functions return 0 or a negative errno.  -EAGAIN: not connected and
 * still inside the backoff window.  -EIO: the connection failed (the context
 * is dropped; the next call reconnects).  -ENOMEM.  A Redis error reply is not
 * an rconn error: it comes back as a reply of type REDIS_REPLY_ERROR.  The
 * modules on top return -ENOSPC when that reply is Redis's refusal at
 * maxmemory (reply_is_oom, core/reply.h).
 */
#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "core/redis_target.h"
#include "core/reply.h"
#include "core/scripts.h"

struct rconn;

/* New handle for `t` (copied, seeds included) with connect and command timeout `timeout_ms` (per node); does not connect. NULL on ENOMEM. */
struct rconn *rconn_new(const struct redis_target *t, int64_t timeout_ms);
/* Close and free; NULL is a no-op. */
void rconn_free(struct rconn *c);
/*
 * From any thread: a call in flight on `c` (blocked on a Redis that hangs)
 * fails now, and every later one fails at once (-EIO, "aborted"): for a
 * daemon that stops.  `c` is still freed by its owner, after its thread ended.
 */
void rconn_abort(struct rconn *c);
/* Learn the topology and connect to every primary now (honouring backoff).  0, -EAGAIN, -EIO. */
int rconn_ensure(struct rconn *c);
/* 1 when every primary known has a live connection (0 before first contact). */
int rconn_is_up(const struct rconn *c);
/* Text of the last connection error ("" if none), naming the node on a cluster; valid until the next call. */
const char *rconn_errstr(const struct rconn *c);
/* How many times a connection was (re)established, summed over the nodes. */
uint64_t rconn_connects(const struct rconn *c);
/* Round trips made: pipelines sent to a node (a batch over 3 nodes is 3), since rconn_new. */
uint64_t rconn_round_trips(const struct rconn *c);
/* 1 when the Redis is a cluster (known after first contact). */
int rconn_is_cluster(const struct rconn *c);
/* Primaries of the current map (1 for a single Redis; 0 before first contact). */
size_t rconn_primaries(const struct rconn *c);
/* The ordinal (rbatch_cmd_at's) of the primary that owns shard k's slot now; 0 before first contact or for a slot without a node. */
size_t rconn_shard_primary(const struct rconn *c, unsigned shard);
/* A counter bumped whenever the slot map changes (a walk of every node's keys starts again then). */
uint64_t rconn_map_epoch(const struct rconn *c);

/* One primary as the map has it, for status and metrics. */
struct rconn_node_info {
	char addr[96];        /* "host:port" (or the unix socket), cut short when longer */
	size_t slots;         /* slots it owns */
	char ranges[96];      /* those slots as "0-5460 10923", cut short when long */
	int up;               /* a live connection */
	uint64_t connects, errors;     /* connections made; connection failures */
	uint64_t moved, ask, tryagain; /* MOVED, ASK, TRYAGAIN/CLUSTERDOWN replies from it */
	char err[160];        /* its last connection error, "" when none */
};
/* Fill out[0..cap) with the primaries, in rbatch_cmd_at's order; returns how many were filled. */
size_t rconn_node_info(const struct rconn *c, struct rconn_node_info *out, size_t cap);
/*
 * Is every slot served?  Asks a cluster for its map (at most every 100 ms),
 * then every primary for CLUSTER INFO (a single Redis: PING).  0 when every
 * slot has a primary that answers with cluster_state:ok; else a negative
 * errno with `why` (cap bytes) naming the slots and the node missing, e.g.
 * "slots 5461-10922 (127.0.0.1:7001): connect: Connection refused".
 */
int rconn_coverage(struct rconn *c, char *why, size_t cap);

/*
 * On a cluster, a pipeline some of whose nodes failed while others answered
 * succeeds: the failed nodes' commands get an error reply that starts with
 * REPLY_NODEDOWN and names the node and the cause (reply_is_nodedown,
 * core/reply.h; reply_errno makes it -EIO).  (A single Redis that fails
 * fails the whole pipeline with -EIO, as one that all nodes failed.)
 */

/*
 * On a cluster, a command still answered MOVED, ASK or TRYAGAIN after every
 * round of its run (a slot whose owners disagree, a migration that lasts),
 * or a shard script answered ASK (not followed: it reaches keys it does not
 * name), has that reply: a slot being moved (reply_is_moving, core/reply.h;
 * reply_errno makes it -EBUSY), counted per node as a redirection (moved,
 * ask, tryagain) like those followed.
 */

/*
 * One line naming error `rc` of an rconn call or of a module on top of it:
 * the connection error (rconn_errstr) for -EIO/-EAGAIN, REPLY_OOM_TEXT for
 * -ENOSPC, "Redis refused the command" for -EBADMSG, the last redirection
 * handed back for -EBUSY ("MOVED: slot map changed (...) (127.0.0.1:7001
 * answered MOVED 100 127.0.0.1:7002)"), "unexpected reply from Redis" for
 * -EPROTO, else strerror.  Valid until the next call on `c`.
 */
const char *rconn_strerror(const struct rconn *c, int rc);

/* One command as rbatch_cmd routes it, binary-safe argv; *out is the reply the caller frees (freeReplyObject). */
int rconn_command(struct rconn *c, int argc, const char *const *argv, const size_t *lens,
		  redisReply **out);
/* One script call: argv holds `nkeys` keys then the arguments; NOSCRIPT handled. *out as above. */
int rconn_eval(struct rconn *c, enum script_id id, int nkeys, int argc, const char *const *argv,
	       const size_t *lens, redisReply **out);

/*
 * A pipeline: commands are queued (their arguments copied), then sent in one
 * write and their replies read in order.  Replies belong to the batch until
 * rbatch_clear()/rbatch_free().  No transactions: each command is routed on
 * its own, so a MULTI, the commands after it and its EXEC may go to
 * different nodes (on a cluster, keys of one slot are one script call).
 */
struct rbatch;
struct rbatch *rbatch_new(void);
void rbatch_free(struct rbatch *b);
/* Drop queued commands and replies; keep the allocation. */
void rbatch_clear(struct rbatch *b);
/*
 * Queue a plain command whose first argument (argv[1]) is its key, or a
 * command of one word (argc 1: TIME, PING), which goes to any primary.  A
 * command without a key that takes arguments goes by rbatch_cmd_at: here
 * its first argument would be taken for a key.  0, -EINVAL (argc < 1) or -ENOMEM.
 */
int rbatch_cmd(struct rbatch *b, int argc, const char *const *argv, const size_t *lens);
/* Queue a command for the `primary`th primary (0 .. rconn_primaries-1; a key-less command such as SCAN or INFO that must reach every node).  0 or -ENOMEM. */
int rbatch_cmd_at(struct rbatch *b, size_t primary, int argc, const char *const *argv, const size_t *lens);
/* Queue a script call (`nkeys` keys first in argv; routed by the first key).  0 or -ENOMEM. */
int rbatch_eval(struct rbatch *b, enum script_id id, int nkeys, int argc, const char *const *argv,
		const size_t *lens);
size_t rbatch_len(const struct rbatch *b);
/*
 * Send everything and read every reply, following redirections (above).
 * 0 when every command has a reply (some may be NODEDOWN replies on a
 * cluster); else an rconn error and no replies.
 */
int rbatch_run(struct rconn *c, struct rbatch *b);
/* Reply of command `i` after a successful run, or NULL; owned by the batch. */
redisReply *rbatch_reply(const struct rbatch *b, size_t i);
/* Reply of command `i`, handed to the caller (who frees it), or NULL. */
redisReply *rbatch_take(struct rbatch *b, size_t i);
/*
 * A number naming the Redis process that gave reply `i` of the last run
 * (a digest of its INFO run_id, new at each start of Redis; of its address
 * when INFO is refused), the same in every daemon; 0 when there is no reply
 * or the layer made it (NODEDOWN).  A SCAN, SSCAN or ZSCAN cursor means
 * something only to the process that gave it (its hash tables' order
 * depends on its seed): a slot moved, a failover or a restart make it
 * another's.  core/walk.c keeps it with its positions.
 */
uint32_t rbatch_reply_node(const struct rbatch *b, size_t i);

#endif

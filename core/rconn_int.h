#ifndef SLUICE_RCONN_INT_H
#define SLUICE_RCONN_INT_H
/*
 * Inside the one Redis layer: what core/rconn.c (topology, routing, the
 * pipelines' runs) and core/rbatch.c (queueing commands) share.  Nothing
 * outside these two files includes it.
 */
#include "core/rconn.h"
#include "core/rabort.h"
#include "core/rnode.h"
#include "core/shard.h"

#define RCONN_NODES_MAX 128
#define RCONN_NO_NODE 0xFFFFu

enum rconn_mode { RCONN_UNKNOWN, RCONN_SINGLE, RCONN_CLUSTER };

struct rconn {
	struct redis_target t;
	int64_t timeout_ms;
	char sha[SCRIPT__COUNT][41];
	struct rnode *nodes;        /* every node known: the seeds first, then what maps named */
	size_t nnodes, capnodes, nseeds;
	enum rconn_mode mode;
	uint16_t owner[SHARD_SLOTS]; /* node index of each slot's primary, RCONN_NO_NODE */
	uint16_t primary[RCONN_NODES_MAX]; /* node indexes of the primaries, by their lowest slot */
	size_t nprimary;
	int stale;                  /* the map is to be asked again */
	int64_t refreshed_ms;       /* CLOCK_MONOTONIC of the last ask */
	uint64_t epoch;             /* bumped when the map changed */
	uint64_t gen;               /* bumped at each map install: the nodes it names are not reused */
	char err[600];
	uint64_t round_trips;       /* sends of a pipeline to a node (rconn_round_trips) */
	struct rabort abort;        /* rconn_abort: every node's socket registered here */
};

struct rbatch_cmd {
	int script;       /* enum script_id, or -1 for a plain command */
	int nkeys;
	int argc;
	char **argv;      /* one allocation: pointers, then lengths, then bytes */
	size_t *lens;
	redisReply *reply;
	int slot;         /* slot of its key, -1 for a command without a key */
	int at;           /* explicit primary (rbatch_cmd_at), or -1 */
	/* state of one run */
	unsigned node;
	int pending, waiting, asking, asked, redirects, retries, reloaded, rerouted, rc;
};

struct rbatch {
	struct rbatch_cmd *v;
	size_t n, cap;
};

/* Index of the node at host:port (socket when not NULL), added when new; RCONN_NO_NODE when full or on ENOMEM. */
unsigned rconn_node_at(struct rconn *c, const char *host, int port, const char *socket);
/*
 * Know the topology: at first contact, and when a cluster's map was marked
 * stale, at most every 100 ms.  0 (a cluster keeps routing by the map it has
 * when no node answers), or -EIO/-EAGAIN before any first contact.
 */
int rconn_topology(struct rconn *c);
/* Rounds of one pipeline's run: the first send, then redirections and retries */
#define MAX_ROUNDS 6
/* 1 when `r` is an error reply whose code (first word) is `code`. */
int rconn_is_error(const redisReply *r, const char *code);
/*
 * Act on what command `cmd`'s reply asks (core/rredirect.c): 1 when the
 * command is pending again (sent in the next round; *wait set when that
 * round should wait first), 0 when its reply stays (or it failed: cmd->rc).
 * `last`: the run's last round, whose replies stay.
 */
int rconn_redirect(struct rconn *c, struct rbatch_cmd *cmd, int *wait, int last);
/* Free every reply of the batch (commands stay queued). */
void rbatch_drop_replies(struct rbatch *b);
/* One command run on its own; *out is its reply for the caller. */
int rbatch_run_one(struct rconn *c, int script, int nkeys, int argc, const char *const *argv,
		   const size_t *lens, redisReply **out);

#endif

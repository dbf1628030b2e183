#ifndef SLUICE_RCONN_INT_H
#define SLUICE_RCONN_INT_H
/*
 * Inside the one Redis layer: what its files (core/rconn.c: topology;
 * core/rpipe.c: the pipelines' runs; core/rredirect.c: what replies ask;
 * core/rbatch.c: queueing commands) share.  Nothing else of the daemon
 * includes it; tests/check_slotmap.c does, for rconn_take_map.
 */
#include <errno.h>
#include <poll.h>

#include "core/rconn.h"
#include "core/rabort.h"
#include "core/rnode.h"
#include "core/shard.h"

/*
 * The table of nodes grows with the maps: it has room for the seeds and
 * twice the nodes (primaries and replicas) of the largest map installed, at
 * least RCONN_NODES_MIN; when that is full, the entry of an address that
 * serves no slot now is reused (nodes that move to new addresses, as pods
 * do, do not grow it for ever).  Node indexes are uint16_t: RCONN_NODES_MAX
 * at most (Redis Cluster's advice is up to 1000 nodes).
 */
#define RCONN_NODES_MIN 128
#define RCONN_NODES_MAX 0xFFFEu
#define RCONN_NO_NODE 0xFFFFu

enum rconn_mode { RCONN_UNKNOWN, RCONN_SINGLE, RCONN_CLUSTER };

struct rconn {
	struct redis_target t;
	int64_t timeout_ms;
	char sha[SCRIPT__COUNT][41];
	struct rnode *nodes;        /* every node known: the seeds first, then what maps named */
	size_t nnodes, capnodes, nseeds;
	size_t room;                /* entries before one is reused (above), RCONN_NODES_MIN .. RCONN_NODES_MAX */
	/* per node, capnodes of each (grown with `nodes`): a pipeline's run (core/rpipe.c) */
	struct rconn_run *run;
	struct pollfd *pfd;         /* the sockets polled in a round, and whose they are */
	unsigned *pwho;
	enum rconn_mode mode;
	uint16_t owner[SHARD_SLOTS]; /* node index of each slot's primary, RCONN_NO_NODE */
	uint16_t *primary;          /* node indexes of the primaries, by their lowest slot (capnodes of room) */
	uint16_t *ordinal;          /* per node: its index in primary[], RCONN_NO_NODE for a node that is none */
	size_t nprimary;
	int stale;                  /* the map is to be asked again */
	int64_t refreshed_ms;       /* CLOCK_MONOTONIC of the last ask */
	uint64_t epoch;             /* bumped when the map changed */
	uint64_t gen;               /* bumped at each map install: the nodes it names are not reused */
	char err[600];
	char moving[400];           /* the last redirection handed back (reply_is_moving): node and reply */
	uint64_t round_trips;       /* sends of a pipeline to a node (rconn_round_trips) */
	struct rabort abort;        /* rconn_abort: every node's socket registered here */
};

/* What a pipeline's run keeps of one node (core/rpipe.c). */
struct rconn_run {
	size_t due;       /* replies owed in this round */
	size_t cursor;    /* the next command whose reply may come from it */
	int64_t last;     /* CLOCK_MONOTONIC ms of its last reply (or of the round's sends) */
	int up;           /* it had a connection when the run began */
	int retried;      /* 1: its commands are sent again after its idle connection died; 2: done */
	int any;          /* a command is pending for it in this round */
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
	uint32_t tag;     /* the process that gave its reply (the node's tag then); 0: none, or made here */
	int pending, waiting, asking, asked, redirects, retries, reloaded, rerouted;
	int rc;           /* 0; -EIO: its connection failed (sent again once when it had been idle);
			   * RCONN_CLUSTERDOWN; -EAGAIN, -ENOMEM */
};

/*
 * A command's rc inside a run when its node answered CLUSTERDOWN: failed as
 * a node down (callers get -EIO or a NODEDOWN reply), but not sent again as
 * after a dead connection (a cluster heals in seconds, not in a retry).
 */
#define RCONN_CLUSTERDOWN (-ENETDOWN)

struct rbatch {
	struct rbatch_cmd *v;
	size_t n, cap;
};

/* Index of the node at host:port (socket when not NULL), added when new; RCONN_NO_NODE when full (c->room, no entry to reuse) or on ENOMEM. */
unsigned rconn_node_at(struct rconn *c, const char *host, int port, const char *socket);
/*
 * Take node `ni`'s reply `r` to CLUSTER SLOTS (freed here): install the map
 * it is (core/slotmap.c parses it), or, for "cluster support disabled",
 * make `ni` a single Redis.  0, -EPROTO (no map: c->err says why), -ENOMEM
 * (the map we had is kept).  What rconn_topology does with each answer;
 * tests/check_slotmap.c gives it maps no cluster of theirs could answer.
 */
int rconn_take_map(struct rconn *c, unsigned ni, redisReply *r);
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

#ifndef SLUICE_TEST_HARNESS_CLUSTER_H
#define SLUICE_TEST_HARNESS_CLUSTER_H
/*
 * A private Redis Cluster for the suites (DESIGN.md, "Redis Cluster"); the
 * Python tests have the same in tests/cluster.py.
 *
 * Every node is a cluster-enabled redis-server of the harness
 * (test_redis_start_with: a free port, the bus on another, its own temporary
 * directory and nodes.conf, no persistence, PR_SET_PDEATHSIG), and the
 * cluster is made by `redis-cli --cluster create` (3 primaries or more; 1 or
 * 2, which redis-cli refuses, by CLUSTER ADDSLOTSRANGE, MEET and REPLICATE).
 * test_cluster_start returns once every node says cluster_state:ok, all
 * answer the same CLUSTER SLOTS over the 16384 slots with every replica in
 * it, and every replica's link to its primary is up: about 2.5 s (Redis
 * holds a new primary's state at fail for 2 s).
 *
 * Nothing outlives the test: test_cluster_stop kills and reaps every node
 * and removes its directory; the nodes die with the thread that started them
 * (PDEATHSIG: so start a cluster from the runner's fixture, or from the test
 * itself, not from a thread that ends first), and an atexit hook stops what
 * this process started and did not stop (never a cluster of another
 * process: a forked Check test inherits the hook and the struct, and does
 * not touch its runner's nodes).
 *
 * Start, stop and restart a cluster in one process (the fixture's).  A test
 * forked from it may read it, send commands, kill nodes, wait for a
 * failover and move slots: the nodes are real processes, so what it changes
 * stays for the next test, while the struct (its slot map cache) goes
 * stale, which the routing below handles by following MOVED.
 *
 * Ports are TCP ports of 127.0.0.1; nodes are indexes into c->node[];
 * timeouts are ms.  Functions that return a reply or a connection abort the
 * test (ck_abort) when they cannot get one; the caller frees what they
 * return.
 */
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "tests/harness.h"

#define TEST_CLUSTER_SLOTS 16384
#define TEST_CLUSTER_MAX_NODES 16
#define TEST_CLUSTER_URL_MAX 64

struct test_cluster_node {
	struct test_redis srv; /* pid (0 once reaped), port, bus, dir, url of the node */
	char id[41];           /* its node id (CLUSTER MYID) */
	int primary;           /* as created: -1 for a primary, else its primary's index */
};

struct test_cluster {
	int n;                    /* nodes in node[] */
	int primaries;            /* as created: node[0 .. primaries), in slot order (node[0] has slot 0) */
	int replicas_per_primary; /* node[primaries + i * replicas_per_primary + j]: replica j of primary i */
	int node_timeout_ms;      /* their --cluster-node-timeout */
	pid_t owner;              /* the process that started it: only it stops the nodes */
	long long start_ms;       /* how long test_cluster_start took */
	/* The slot map as last read (index into node[] per slot, -1 unknown): test_cluster_cmd routes by it. */
	signed char owner_of[TEST_CLUSTER_SLOTS];
	struct test_cluster_node node[TEST_CLUSTER_MAX_NODES];
};

/* How test_cluster_start_with builds the cluster; all zero: as test_cluster_start. */
struct test_cluster_opts {
	int node_timeout_ms; /* --cluster-node-timeout; 0: 1000 (a failover then takes 2 to 3 s) */
	int timeout_ms;      /* bound of each waiting step; 0: 30000 */
};

/*
 * Start primaries * (1 + replicas_per_primary) nodes (at most
 * TEST_CLUSTER_MAX_NODES) and make them a cluster.  Returns 0, or -1 after
 * printing on stderr which node or step failed and why (then nothing of it
 * is left running).
 */
int test_cluster_start(struct test_cluster *c, int primaries, int replicas_per_primary);
int test_cluster_start_with(struct test_cluster *c, int primaries, int replicas_per_primary,
			    const struct test_cluster_opts *o);
/* Kill every node (SIGTERM, SIGKILL after 2 s), reap it, remove its directory.  Idempotent. */
void test_cluster_stop(struct test_cluster *c);

/* ---- where things are ---- */

/* Redis Cluster's key slot of `key` (len bytes): its hash tag when non-empty, else all of it. */
int test_cluster_keyslot(const char *key, size_t len);
/*
 * The node (index into node[]) that owns `slot` now, by CLUSTER SLOTS of the
 * first node that answers (the struct's map is refreshed with it); -1 when
 * no node answers or none owns the slot.
 */
int test_cluster_node_for_slot(struct test_cluster *c, int slot);
/* A new connection to the primary that owns `slot` now (redisFree it); aborts the test when there is none. */
redisContext *test_cluster_connect_slot(struct test_cluster *c, int slot);
/* The same for the slot of `key` (a C string). */
redisContext *test_cluster_connect_key(struct test_cluster *c, const char *key);
/* A new connection to node[i] (redisFree it); aborts the test when it cannot connect. */
redisContext *test_cluster_connect_node(const struct test_cluster *c, int i);
/*
 * "redis://127.0.0.1:<port>" of one node (the first primary as created that
 * is running) into buf; returns buf.  What --redis of sluiced takes: any node
 * of a cluster.
 */
const char *test_cluster_url(const struct test_cluster *c, char buf[TEST_CLUSTER_URL_MAX]);

/* ---- commands on the node that owns a key ---- */

/*
 * Run a command (printf-style, as redisCommand) on the node that owns the
 * slot of `key` by the struct's map; on a MOVED reply, once more on the node
 * it names (and the map is read again), on ASK, once more there after ASKING.
 * Returns the reply, which may be an error reply (a second MOVED, say); aborts
 * the test on an I/O error.
 */
redisReply *test_cluster_cmd(struct test_cluster *c, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* test_cluster_cmd of argv[0..argc) (`lens` their byte lengths, or NULL for C strings), routed by `key` (len bytes). */
redisReply *test_cluster_cmd_argv(struct test_cluster *c, const char *key, size_t len, int argc,
				  const char *const *argv, const size_t *lens);

/* ---- failures and resharding ---- */

/*
 * Until every running node that answers says cluster_state:ok and all answer
 * the same CLUSTER SLOTS over the 16384 slots; returns the ms waited, or -1
 * after printing on stderr which node is not there yet.  The map is refreshed.
 */
long long test_cluster_wait_ok(struct test_cluster *c, long timeout_ms);
/* Send `sig` to node[i]; SIGKILL and SIGTERM also reap it (srv.pid 0). */
void test_cluster_kill(struct test_cluster *c, int i, int sig);
/*
 * After node[old] (a primary) was killed: until another node owns every slot
 * that node[old] owned by the struct's map, and test_cluster_wait_ok holds.
 * Returns the new owner's index, or -1 after printing why on timeout.
 */
int test_cluster_wait_failover(struct test_cluster *c, int old, long timeout_ms);
/*
 * Live resharding of one slot to node[dst], in the steps a test may want to
 * act between: begin (CLUSTER SETSLOT IMPORTING on dst, MIGRATING on the
 * owner: the owner answers ASK for a key it no longer holds, TRYAGAIN for a
 * multi-key command of which it holds only some), keys (MIGRATE up to
 * `batch` keys per call, all of the slot's, or exactly keys[0..nkeys) when
 * keys is not NULL; returns the number sent), finish (SETSLOT NODE on dst,
 * the source, then every other primary that answers).  They fail the test on
 * an error reply.  test_cluster_move_slot does all three and waits for every
 * node to agree; returns the keys moved.
 */
void test_cluster_migrate_begin(struct test_cluster *c, int slot, int dst);
long long test_cluster_migrate_keys(struct test_cluster *c, int slot, int batch, const char *const *keys,
				    int nkeys);
void test_cluster_migrate_finish(struct test_cluster *c, int slot);
long long test_cluster_move_slot(struct test_cluster *c, int slot, int dst);

/* 1 while node[i]'s process runs (a zombie, or a process another reaped, does not). */
int test_pid_running(pid_t pid);

/*
 * A new rconn (core/rconn.h, the daemon's Redis layer) on cluster `c` through
 * node[i]'s URL, commands timing out after `timeout_ms`; the caller frees it
 * (rconn_free).  Aborts the test when it cannot be made.
 */
struct rconn *test_cluster_rconn(const struct test_cluster *c, int i, int timeout_ms);

#endif

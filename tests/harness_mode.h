#ifndef SLUICE_TEST_HARNESS_MODE_H
#define SLUICE_TEST_HARNESS_MODE_H
/*
 * The suites' Redis (test_srv_start, test_tcase: tests/harness.h) in one of
 * two modes, chosen by the environment of the suite's process:
 *   - SLUICE_TEST_REDIS unset, "" or "single": a private redis-server per
 *     test case (test_srv);
 *   - SLUICE_TEST_REDIS=cluster: a private Redis Cluster of
 *     TEST_MODE_PRIMARIES primaries and no replicas (tests/harness_cluster.h)
 *     for the whole suite process: started by the first test case's
 *     unchecked fixture (about 2.5 s), flushed before every test as the one
 *     server is, stopped when the suite ends (test_run_suite).
 * Any other value aborts the suite.  The Makefile runs the admin suites in
 * both modes (the second run's lines marked "[cluster]").
 *
 * The daemon's objects get test_srv_url(): the server's URL, or the first
 * primary's (the daemon's own cluster layer, core/rconn.c, finds the others).
 * The test's own commands on the connection test_srv_connect_flushed gives
 * (`c` of tests/conn_fixture.h) go through the harness (test_cmd,
 * test_cmd_int, test_script*, test_check_cmd, test_snapshot ...), which sends
 * them here, test_route.  On a single Redis that is the one connection.  On
 * a cluster:
 *   - a command on keys goes to the primary that owns its first key's slot
 *     (EVAL, EVALSHA, EVAL_RO, FCALL: the first of their KEYS), following
 *     MOVED (the map read again) and ASK (ASKING, once);
 *   - EXISTS, DEL, UNLINK and TOUCH of keys in several slots are sent one
 *     key at a time and their counts summed;
 *   - FLUSHALL, FLUSHDB, SCRIPT, CLIENT, CONFIG and FUNCTION go to every
 *     primary: the reply is the first error reply, else the first primary's;
 *   - a command without keys (TIME, PING, CLUSTER KEYSLOT, an EVAL of no
 *     KEYS) goes to the first primary;
 *   - INFO, DBSIZE, KEYS, SCAN and RANDOMKEY (their reply would be one
 *     node's) and MULTI, EXEC, WATCH and DISCARD fail the test: the harness's
 *     test_info_num, test_commands, test_cmdstat, test_dbsize and
 *     test_snapshot sum or gather them over test_route_nodes.
 * The routing's connections to the primaries are the test's process's,
 * opened when first used, closed by test_srv_disconnect.  Functions that
 * return a connection or a reply abort the test when they cannot.
 */
#include <hiredis/hiredis.h>
#include <stddef.h>

#include "tests/harness.h"
#include "tests/harness_cluster.h"

/* Primaries of the cluster mode's cluster. */
#define TEST_MODE_PRIMARIES 3

/* 1 in cluster mode, 0 in single mode; aborts the process on a value of SLUICE_TEST_REDIS it does not know. */
int test_mode_cluster(void);
/* "single" or "cluster": the mode's name, as GET /v1/worker's redis.mode and /readyz's mode say it. */
const char *test_mode_name(void);
/* Primaries of the suites' Redis: 1, or TEST_MODE_PRIMARIES. */
int test_srv_primaries(void);
/*
 * The cluster of cluster mode once started (NULL in single mode): node[0 ..
 * primaries) own the slots in order (harness_cluster.h).  The runner's; a
 * forked test reads its copy, whose slot map the routing refreshes.
 */
struct test_cluster *test_srv_cluster(void);
/* The URL the daemon's objects are given: test_srv.url, or "redis://127.0.0.1:<port>" of the first primary. */
const char *test_srv_url(void);
/* A plain connection (no routing) to the server, or to the primary that owns `key` now; the caller redisFree's it. */
redisContext *test_srv_connect_key(const char *key);
/* Free connection `c` of test_srv_connect_flushed and the routing's connections behind it.  NULL is a no-op. */
void test_srv_disconnect(redisContext *c);
/* The end of the suite: stop the cluster of cluster mode, if this process started it (test_run_suite calls it). */
void test_srv_end(void);

/* ---- the routing, for the harness's own functions ---------------------------------- */

/*
 * Run the formatted command `cmd` (len bytes, as redisFormatCommand makes it)
 * on `c`, routed as above when `c` is the cluster mode's connection.
 * Returns the reply (an error reply too; the caller frees it), or NULL on an
 * I/O error of an unrouted `c` (c->errstr says why); an I/O error on a
 * routed node fails the test, naming the node.
 */
redisReply *test_route(redisContext *c, const char *cmd, size_t len);
/*
 * The connections to every primary behind `c`, first primary first, into
 * out[0..cap): `c` alone unless it is the cluster mode's connection.
 * Returns how many; they stay the routing's (do not free them).
 */
int test_route_nodes(redisContext *c, redisContext **out, int cap);

#endif

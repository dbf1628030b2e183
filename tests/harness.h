#ifndef SLUICE_TEST_HARNESS_H
#define SLUICE_TEST_HARNESS_H
/*
 * Test harness, written once for every suite:
 *   - a private redis-server on a free loopback port, in a temporary
 *     directory, with no persistence (test_redis_*; test_redis_start_with for
 *     a cluster-enabled one), and the suites' fixture on
 *     it (test_srv, test_tcase): started from an unchecked fixture, FLUSHALL
 *     from a checked one, stopped in teardown.  The server gets
 *     PR_SET_PDEATHSIG, so it dies with the test runner even when the runner
 *     is killed;
 *   - commands and assertions on replies and on the whole keyspace;
 *   - calls of the embedded Lua scripts by name (test_script*);
 *   - waiting for a state with a deadline instead of a fixed sleep
 *     (ck_wait_until, test_poll);
 *   - the one HTTP client of the socket tests (test_http, libcurl).
 * The fixture of a family of suites is a module (.h and .c) on top of this
 * one: tests/script_fixture (the script suites), tests/api_fixture (the admin
 * API's), tests/openapi_fixture (the OpenAPI document's); the last two share
 * tests/api_objects, and all three the test's connection, tests/conn_fixture.
 * A Redis Cluster of such servers: tests/harness_cluster.  The suites'
 * fixture runs on one server, or on such a cluster (SLUICE_TEST_REDIS=cluster:
 * tests/harness_mode.h), and the commands below that take the test's
 * connection are routed over its nodes then.
 * The Makefile puts every .c of tests/ but the suites into one archive that each
 * suite links, so a suite gets only the modules it uses.
 */
#include <check.h>
#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct test_redis {
	pid_t pid;
	int port;
	int bus;        /* the cluster bus port of a cluster-enabled server, else 0 */
	char dir[128];  /* temporary directory, removed by test_redis_stop */
	char url[64];   /* "redis://127.0.0.1:<port>/0" */
};

/* A loopback TCP port that was free a moment ago (bind to port 0, read it back). */
int test_free_port(void);
/* How test_redis_start_with starts the server; all zero: as test_redis_start. */
struct test_redis_opts {
	/*
	 * Cluster-enabled (--cluster-enabled yes, its nodes.conf in the server's
	 * temporary directory, the bus on another free port): a node of no
	 * cluster that owns no slot.  CLUSTER KEYSLOT and key-less commands
	 * (EVAL with no KEYS) work; commands on keys answer CLUSTERDOWN.
	 * Replication is quick to start and to show (--repl-diskless-sync-delay
	 * 0, --repl-ping-replica-period 1), for the nodes of a test cluster
	 * (tests/harness_cluster.h).
	 */
	int cluster;
	/*
	 * With `cluster`: the node owns all 16384 slots (CLUSTER ADDSLOTSRANGE
	 * 0 16383), and the start waits for cluster_state:ok.  A one-node
	 * cluster: commands on keys of one slot run, and a command (or MULTI)
	 * on keys of two slots answers CROSSSLOT, as on any cluster.
	 */
	int all_slots;
	/* With cluster: --cluster-node-timeout in ms (failure detection); 0: Redis's default, 15000. */
	int node_timeout_ms;
};

/* Start redis-server; returns 0, or -1 after printing why on stderr. */
int test_redis_start(struct test_redis *r);
/* Start redis-server as `o` says (NULL: as test_redis_start); returns as test_redis_start. */
int test_redis_start_with(struct test_redis *r, const struct test_redis_opts *o);
/* Kill (SIGTERM, then SIGKILL after 2 s), reap, remove the directory.  Idempotent. */
void test_redis_stop(struct test_redis *r);
/* New connection to the test server; aborts the test process when it cannot connect. */
redisContext *test_redis_connect(const struct test_redis *r);
/* Run a command (printf-style, as redisCommand) and return its reply; aborts on I/O error. */
redisReply *test_cmd(redisContext *c, const char *fmt, ...);
/* test_cmd of argv[0..argc) (`lens` their byte lengths, or NULL for C strings). */
redisReply *test_cmd_argv(redisContext *c, int argc, const char *const *argv, const size_t *lens);
/* Integer reply of a command (aborts unless the reply is an integer). */
long long test_cmd_int(redisContext *c, const char *fmt, ...);
/* FLUSHALL and SCRIPT FLUSH. */
void test_redis_flush(redisContext *c);

/*
 * The suites' fixture (tests/harness_mode.c): one server per test case (Check
 * runs an unchecked fixture once per TCase, in the runner), or in cluster
 * mode one cluster per suite process; one connection per test.
 */
extern struct test_redis test_srv; /* single mode's server (all zero in cluster mode) */
/* Start test_srv, or the cluster once (an unchecked fixture); aborts the runner when it cannot, as nothing could run. */
void test_srv_start(void);
void test_srv_stop(void);
/*
 * A new connection to test_srv, after FLUSHALL and SCRIPT FLUSH (for a
 * checked fixture); in cluster mode the routed connection, every primary
 * flushed.  Free it with test_srv_disconnect (tests/harness_mode.h).
 */
redisContext *test_srv_connect_flushed(void);
/* A test case named `name` in `s` on test_srv (or the cluster mode's cluster): test_srv_start/stop around it, setup/teardown around each test. */
TCase *test_tcase(Suite *s, const char *name, void (*setup)(void), void (*teardown)(void), int timeout_s);
#define TEST_N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/*
 * The whole file `rel` of the source tree (a path relative to the repository
 * root: $SLUICE_SRCDIR, or "." when unset or empty), NUL-terminated; its
 * length in *len (when len is not NULL).  NULL with errno set when it cannot
 * be read.  The caller frees it.
 */
char *test_read_src(const char *rel, size_t *len);

/* ---- waiting for a state -------------------------------------------------------- */

/* CLOCK_MONOTONIC in ms. */
long long test_now_ms(void);
/* Let `ms` of real time pass: only where the passing of time is what a test is about (a TTL, a rate), never to wait for a state. */
void test_sleep_ms(long ms);
/*
 * Poll cond(arg) every `every_ms` until it is nonzero or `timeout_ms` have
 * passed (checked once more at the deadline).  Returns the ms waited, or -1
 * on timeout.  For the harness's own waits, which do not fail a test.
 */
long long test_poll(int (*cond)(void *), void *arg, long timeout_ms, long every_ms);
/*
 * ck_wait_until(cond, timeout_ms, fmt, ...): evaluate `cond` every 5 ms until it
 * holds; fail the test with the message (and how long it waited) when it still
 * does not after timeout_ms.  Use it wherever a test waits for something to
 * happen, instead of a fixed sleep.
 */
#define ck_wait_until(cond, timeout_ms, ...) ck_wait_until_every((cond), (timeout_ms), 5, __VA_ARGS__)
/* ck_wait_until, evaluating `cond` every `every_ms` (1: to catch a short-lived state of a race). */
#define ck_wait_until_every(cond, timeout_ms, every_ms, ...)                                  \
	for (long long wait_start_ = test_now_ms(); !(cond);                                   \
	     test_wait_step(wait_start_, (timeout_ms), (every_ms), __FILE__, __LINE__, __VA_ARGS__))
/* One step of ck_wait_until_every: fail once the time is up, else sleep every_ms. */
void test_wait_step(long long start_ms, long timeout_ms, long every_ms, const char *file, int line, const char *fmt,
		    ...) __attribute__((format(printf, 6, 7)));

/* ---- calling the embedded scripts -------------------------------------------------- */

/* Decimal text of v, in one of 32 rotating static buffers (enough for one call's arguments). */
const char *test_num(long long v);

/* How test_script_argv sends the call. */
enum {
	TEST_EVAL = 0,    /* EVAL <body> */
	TEST_EVAL_RO = 1, /* EVAL_RO <body>: Redis refuses writes (scripts declared no-writes) */
	TEST_EVALSHA = 2, /* SCRIPT LOAD, then EVALSHA <sha1>, as applications call the scripts */
};
/*
 * Call the embedded script lua/<name>.lua: `nkeys` KEYS then ARGV, all in
 * argv[0..argc) (`lens` their byte lengths, or NULL for C strings).  Returns
 * the reply (an error reply too; the caller frees it); fails the test on an
 * I/O error or when no such script is embedded.
 */
redisReply *test_script_argv(redisContext *c, int how, const char *name, int nkeys, int argc,
			     const char *const *argv, const size_t *lens);
/* test_script_argv with TEST_EVAL; the arguments are C strings up to a NULL. */
redisReply *test_script(redisContext *c, const char *name, int nkeys, ...);
/* Element 0 of a script's reply (`allowed` of the client scripts); fails the test on an error reply; frees r. */
long long test_script_allowed(redisReply *r, const char *name);
/*
 * One client call of sluice's script `algorithm` (lua/<algorithm>.lua) by
 * the calling contract (lua/README.md, "Calling a client script"): KEYS
 * the path's state, meta, its shard's registry, rules copy and stats; ARGV
 * `path`, cost n ("" = 1), `now` in ms (< 0: "", the script reads Redis
 * TIME), rule "" and the explicit parameters given as strings up to a NULL.
 * Returns `allowed` (1 or 0); fails the test on an error reply.
 */
long long test_acquire(redisContext *c, int how, const char *algorithm, const char *path, long long now, ...);
/* test_acquire's call with cost `n` (NULL: ""), its reply returned (caller frees), whatever it is;
 * `params` are ARGV[5..]. */
redisReply *test_client_call(redisContext *c, int how, const char *algorithm, const char *path, const char *n,
			     long long now, const char *const *params, int nparams);

/*
 * SKEW_MS of lua/lib/skew.lua (ms), read from the embedded scripts, so that
 * tests follow it: the skew horizon a shard uses when its rules copy names
 * none.  The jobs act at max(mark, now - SKEW_MS).  Aborts the test if no
 * script defines it.
 */
long long test_skew_ms(void);

/*
 * Field `field` ("calls", "usec") of command `cmd` (lower case: "hset") in
 * `c`'s INFO commandstats: what Redis ran since the last CONFIG RESETSTAT;
 * 0 when the command has not run.  Summed over the primaries of a cluster.
 */
long long test_cmdstat(redisContext *c, const char *cmd, const char *field);

/* Redis's clock (TIME) in ms: the clock every script and the daemon use. */
long long test_server_ms(redisContext *c);
/*
 * sluice's key names for `path` (key layout 2, prefix "sluice:"; C strings
 * only), in one of 32 rotating static buffers, so the keys of a batch can be
 * used in one call; paths up to 200 bytes.
 */
const char *test_key(const char *path, const char *kind); /* sluice:{k}:<kind>:<path>, k = its shard */
const char *test_registry(const char *algorithm, const char *path); /* sluice:{k}:registry:<algorithm> */
const char *test_shard_key(const char *algorithm, const char *path, const char *what); /* sluice:{k}:<what> */
const char *test_lb_key(const char *path);   /* sluice:{k}:leaky_bucket:<path> */
const char *test_lb_meta(const char *path);  /* sluice:{k}:leaky_bucket_meta:<path> */
const char *test_sl_key(const char *path);   /* sluice:{k}:sliding_log:<path> */

/*
 * sluice's default layouts (key prefix `prefix`) followed by the foreign
 * layouts of `json`, a config's "layouts" array (NULL for none), their metas
 * under `prefix` too (as the daemon puts them); fails the
 * test on a bad layout.  Free with layouts_free(*all, *nall).
 */
struct layout;
void test_layouts(const char *prefix, const char *json, struct layout **all, size_t *nall);

/* ---- assertions on replies (for the script suites) ---- */

/* A reply as text: 5, "s", nil, error "...", {1, "a", nil} (cut to `cap`); returns buf. */
const char *test_show_reply(const redisReply *r, char *buf, size_t cap);
/* Abort the test unless `r` is an array of exactly want[0..n); frees r. */
void test_check_ints(const char *file, int line, redisReply *r, const long long *want, size_t n);
/* A client script's reply is exactly {want[0..3], rule} (the calling contract's five
 * elements); frees r. */
void test_check_client(const char *file, int line, redisReply *r, const long long want[4], const char *rule);
/* Abort the test unless `r` is an error reply starting with `prefix`; frees r. */
void test_check_error(const char *file, int line, redisReply *r, const char *prefix);
/* Element i of an array reply as an integer (aborts the test otherwise); r stays the caller's. */
long long test_elem_int(const redisReply *r, size_t i);
/* Abort the test unless the command's reply, as test_show_reply text, is `want`. */
void test_check_cmd(const char *file, int line, redisContext *c, const char *want, const char *fmt, ...);

#define TEST_INTS(...) ((const long long[]){ __VA_ARGS__ })
#define TEST_NINTS(...) (sizeof(TEST_INTS(__VA_ARGS__)) / sizeof(long long))
/* ck_reply(reply, 1, 2, 0, 1000): the reply is exactly {1, 2, 0, 1000}; frees it. */
#define ck_reply(r, ...) test_check_ints(__FILE__, __LINE__, (r), TEST_INTS(__VA_ARGS__), TEST_NINTS(__VA_ARGS__))
#define ck_error(r, prefix) test_check_error(__FILE__, __LINE__, (r), (prefix))

/*
 * The whole keyspace as text: each key (sorted) with its type, content and
 * whether it has a TTL.  Equal snapshots before and after a call mean the call
 * wrote nothing (TTL values tick, so only their presence counts); every
 * primary's keys on a cluster.  Caller frees.
 * The clock-lag fields ":lag:<minute>" of a shard's stats hash (<...>:stats)
 * are left out, and such a hash that holds nothing else with them: every call
 * with an explicit now behind Redis TIME (the suites' virtual time) records
 * its lag there (lua/lib/contract.lua, contract_reply), denials included; the
 * lag tests read those fields themselves.  The decision counters stay in.
 */
char *test_snapshot(redisContext *c);
/* test_snapshot without the key `skip` (NULL: none), e.g. a shard's stats
 * hash whose decision counters a test checks by value. */
char *test_snapshot_except(redisContext *c, const char *skip);
/* DBSIZE (summed over the primaries) without the stats hashes that hold only
 * clock-lag fields (as test_snapshot leaves them out). */
long long test_dbsize(redisContext *c);
/* Commands `c`'s server has processed (INFO stats' total_commands_processed; this INFO included), summed over the primaries of a cluster. */
long long test_commands(redisContext *c);
/* The primaries `c` reaches: 1, or a cluster's (what one test_commands adds: an INFO on each). */
int test_nodes_of(redisContext *c);
/* Numeric `field` of INFO `section` ("blocked_clients" of "clients"), summed over the primaries; 0 when absent. */
double test_info_num(redisContext *c, const char *section, const char *field);
/* KEYS `pattern` of every primary as one array reply; the caller frees it. */
redisReply *test_keys(redisContext *c, const char *pattern);
/* 1 when key `name` is a stats hash that holds only clock-lag fields. */
int test_lag_only(redisContext *c, const char *name);
/* qsort comparator of C strings (char *). */
int test_cmp_str(const void *a, const void *b);

/* ---- an HTTP client for the admin API's socket tests (libcurl) ---- */

struct test_http_res {
	long status;
	char body[16384];        /* cut there */
	size_t len;
	char allow[128], ctype[128], etag[64], cache_control[64]; /* those headers, or "" */
};

/* How test_http sends a body. */
enum {
	TEST_HTTP_PLAIN = 0,     /* Content-Length, as curl does by default (Expect: 100-continue) */
	TEST_HTTP_CHUNKED = 1,   /* Transfer-Encoding: chunked, in 100-byte chunks */
	TEST_HTTP_NO_EXPECT = 2, /* Content-Length, the body right after the headers */
};

/* One request to 127.0.0.1:port; aborts the test when the transfer fails. */
void test_http(int port, const char *method, const char *path, const char *body, int mode,
	       struct test_http_res *h);
/*
 * test_http for a server that may not answer (not listening yet, or going
 * away): returns the status, or 0 when the transfer failed (then h->body says
 * why and h->status is 0).
 */
long test_http_try(int port, const char *method, const char *path, const char *body, int mode,
		   struct test_http_res *h);

/* Standard Check runner main: runs `s`, prints Check's summary, returns the exit code. */
int test_run_suite(Suite *s);

#endif

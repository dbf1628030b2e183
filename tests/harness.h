#ifndef SLUICE_TEST_HARNESS_H
#define SLUICE_TEST_HARNESS_H
/*
 * Test harness: a private redis-server on a free loopback port, in a temporary
 * directory, with no persistence.  Start it from an unchecked fixture (once per
 * suite process), FLUSHALL from a checked fixture, stop it in teardown.  The
 * server gets PR_SET_PDEATHSIG, so it dies with the test runner even when the
 * runner is killed.
 */
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <sys/types.h>

struct test_redis {
	pid_t pid;
	int port;
	char dir[128];  /* temporary directory, removed by test_redis_stop */
	char url[64];   /* "redis://127.0.0.1:<port>/0" */
};

/* A loopback TCP port that was free a moment ago (bind to port 0, read it back). */
int test_free_port(void);
/* Start redis-server; returns 0, or -1 after printing why on stderr. */
int test_redis_start(struct test_redis *r);
/* Kill (SIGTERM, then SIGKILL after 2 s), reap, remove the directory.  Idempotent. */
void test_redis_stop(struct test_redis *r);
/* New connection to the test server; aborts the test process when it cannot connect. */
redisContext *test_redis_connect(const struct test_redis *r);
/* Run a command (printf-style, as redisCommand) and return its reply; aborts on I/O error. */
redisReply *test_cmd(redisContext *c, const char *fmt, ...);
/* Integer reply of a command (aborts unless the reply is an integer). */
long long test_cmd_int(redisContext *c, const char *fmt, ...);
/* FLUSHALL and SCRIPT FLUSH. */
void test_redis_flush(redisContext *c);

/* Redis's clock (TIME) in ms: the clock every script and the daemon use. */
long long test_server_ms(redisContext *c);
/*
 * sluice's key names for `path` (layout "sluice:"), in one of 4 rotating static
 * buffers each, so a few can be used in one call; paths up to 200 bytes.
 */
const char *test_lb_key(const char *path);   /* sluice:{path}:leaky_bucket */
const char *test_lb_meta(const char *path);  /* sluice:{path}:leaky_bucket:meta */
const char *test_sl_key(const char *path);   /* sluice:{path}:sliding_log */

/* ---- assertions on replies (for the script suites) ---- */

/* A reply as text: 5, "s", nil, error "...", {1, "a", nil} (cut to `cap`); returns buf. */
const char *test_show_reply(const redisReply *r, char *buf, size_t cap);
/* Abort the test unless `r` is an array of exactly want[0..n); frees r. */
void test_check_ints(const char *file, int line, redisReply *r, const long long *want, size_t n);
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
 * wrote nothing (TTL values tick, so only their presence counts).  Caller frees.
 */
char *test_snapshot(redisContext *c);
/* qsort comparator of C strings (char *). */
int test_cmp_str(const void *a, const void *b);

/* ---- an HTTP client for the admin API's socket tests (libcurl) ---- */

struct test_http_res {
	long status;
	char body[16384];        /* cut there */
	size_t len;
	char allow[128], ctype[128], etag[64]; /* those headers, or "" */
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

/* Standard Check runner main: runs `s`, prints Check's summary, returns the exit code. */
struct Suite;
int test_run_suite(struct Suite *s);

#endif

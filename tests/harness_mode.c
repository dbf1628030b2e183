#include "tests/harness_mode.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- the mode and the suites' Redis -------------------------------------------------- */

struct test_redis test_srv;

/* The cluster of cluster mode: started once in the runner, copied into each forked test. */
static struct test_cluster cluster;
static int cluster_up;

int test_mode_cluster(void)
{
	const char *m = getenv("SLUICE_TEST_REDIS");

	if (!m || !*m || !strcmp(m, "single"))
		return 0;
	if (!strcmp(m, "cluster"))
		return 1;
	fprintf(stderr, "harness: SLUICE_TEST_REDIS=%s: \"single\" or \"cluster\", please\n", m);
	abort();
}

const char *test_mode_name(void)
{
	return test_mode_cluster() ? "cluster" : "single";
}

int test_srv_primaries(void)
{
	return test_mode_cluster() ? TEST_MODE_PRIMARIES : 1;
}

struct test_cluster *test_srv_cluster(void)
{
	return test_mode_cluster() && cluster_up ? &cluster : NULL;
}

void test_srv_start(void)
{
	if (!test_mode_cluster()) {
		if (test_redis_start(&test_srv) != 0)
			abort();
		return;
	}
	if (cluster_up)
		return; /* one cluster for the whole suite */
	if (test_cluster_start(&cluster, TEST_MODE_PRIMARIES, 0) != 0)
		abort();
	cluster_up = 1;
}

void test_srv_stop(void)
{
	if (!test_mode_cluster())
		test_redis_stop(&test_srv);
	/* the cluster stays for the next test case; test_srv_end stops it */
}

void test_srv_end(void)
{
	if (cluster_up && cluster.owner == getpid()) {
		test_cluster_stop(&cluster);
		cluster_up = 0;
	}
}

/* The cluster, or abort the test: cluster mode before test_srv_start. */
static struct test_cluster *the_cluster(void)
{
	ck_assert_msg(cluster_up, "cluster mode: the suite's cluster is not started (test_srv_start)");
	return &cluster;
}

const char *test_srv_url(void)
{
	static char url[TEST_CLUSTER_URL_MAX];

	if (!test_mode_cluster())
		return test_srv.url;
	return test_cluster_url(the_cluster(), url);
}

redisContext *test_srv_connect_key(const char *key)
{
	if (!test_mode_cluster())
		return test_redis_connect(&test_srv);
	return test_cluster_connect_key(the_cluster(), key);
}

TCase *test_tcase(Suite *s, const char *name, void (*setup)(void), void (*teardown)(void), int timeout_s)
{
	TCase *tc = tcase_create(name);

	tcase_add_unchecked_fixture(tc, test_srv_start, test_srv_stop);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, timeout_s);
	suite_add_tcase(s, tc);
	return tc;
}

/* ---- the routing ------------------------------------------------------------------- */

/*
 * The routed connection of this process (the test's `c`) and the routing's
 * connections, one per node index of the cluster (conn[first primary] is
 * `front` itself).  Zero in the runner, which sends nothing.
 */
static struct {
	redisContext *front;
	redisContext *conn[TEST_CLUSTER_MAX_NODES];
} rt;

/* The routing's connection to node[i], made when first needed. */
static redisContext *node_conn(int i)
{
	if (!rt.conn[i])
		rt.conn[i] = test_cluster_connect_node(&cluster, i);
	return rt.conn[i];
}

/* The primaries as the map has them (distinct owners, in slot order) into idx[]; returns how many. */
static int primaries_now(int idx[TEST_CLUSTER_MAX_NODES])
{
	int n = 0;

	for (int s = 0; s < TEST_CLUSTER_SLOTS; s++) {
		int o = cluster.owner_of[s], seen = 0;

		if (o < 0 && (o = test_cluster_node_for_slot(&cluster, s)) < 0)
			continue;
		for (int k = 0; k < n && !seen; k++)
			seen = idx[k] == o;
		if (!seen && n < TEST_CLUSTER_MAX_NODES)
			idx[n++] = o;
	}
	ck_assert_msg(n > 0, "no node of the cluster owns a slot");
	return n;
}

redisContext *test_srv_connect_flushed(void)
{
	redisContext *c;
	int idx[TEST_CLUSTER_MAX_NODES];

	if (!test_mode_cluster()) {
		c = test_redis_connect(&test_srv);
		test_redis_flush(c);
		return c;
	}
	the_cluster();
	ck_assert_msg(!rt.front, "cluster mode: one routed connection at a time (test_srv_disconnect the last)");
	primaries_now(idx);
	rt.front = node_conn(idx[0]);
	test_redis_flush(rt.front);
	return rt.front;
}

void test_srv_disconnect(redisContext *c)
{
	if (!c)
		return;
	if (c != rt.front) {
		redisFree(c);
		return;
	}
	for (int i = 0; i < TEST_CLUSTER_MAX_NODES; i++)
		if (rt.conn[i]) {
			redisFree(rt.conn[i]);
			rt.conn[i] = NULL;
		}
	rt.front = NULL;
}

/* The formatted command as an array reply of its arguments (bulk strings); the caller frees it. */
static redisReply *parse_cmd(const char *cmd, size_t len)
{
	redisReader *rd = redisReaderCreate();
	void *r = NULL;

	ck_assert_ptr_nonnull(rd);
	ck_assert_msg(redisReaderFeed(rd, cmd, len) == REDIS_OK && redisReaderGetReply(rd, &r) == REDIS_OK && r &&
			      ((redisReply *)r)->type == REDIS_REPLY_ARRAY && ((redisReply *)r)->elements > 0,
		      "harness: not a formatted command: %.60s", cmd);
	redisReaderFree(rd);
	return r;
}

/* The reply of the formatted command on node[i] (after ASKING when `asking`). */
static redisReply *on_node(int i, int asking, const char *cmd, size_t len)
{
	redisContext *n = node_conn(i);
	redisReply *r = NULL;

	if (asking) {
		ck_assert_int_eq(redisAppendCommand(n, "ASKING"), REDIS_OK);
		if (redisGetReply(n, (void **)&r) == REDIS_OK)
			freeReplyObject(r);
		r = NULL;
	}
	ck_assert_int_eq(redisAppendFormattedCommand(n, cmd, len), REDIS_OK);
	if (redisGetReply(n, (void **)&r) != REDIS_OK)
		r = NULL;
	ck_assert_msg(r != NULL, "redis I/O error on node %d (port %d): %s", i, cluster.node[i].srv.port, n->errstr);
	return r;
}

/* The node a "MOVED <slot> <host>:<port>" or "ASK ..." reply names, or -1. */
static int redirected_to(const redisReply *r, const char *kind)
{
	size_t k = strlen(kind);
	const char *colon;
	int port;

	if (r->type != REDIS_REPLY_ERROR || strncmp(r->str, kind, k) != 0 || r->str[k] != ' ')
		return -1;
	colon = strrchr(r->str, ':');
	port = colon ? atoi(colon + 1) : -1;
	for (int i = 0; i < cluster.n; i++)
		if (cluster.node[i].srv.port == port)
			return i;
	return -1;
}

/* The formatted command on the primary of `slot`, following MOVED (a few times) and ASK (once). */
static redisReply *on_slot(int slot, const char *cmd, size_t len)
{
	int i = cluster.owner_of[slot], to;
	redisReply *r;

	if (i < 0)
		i = test_cluster_node_for_slot(&cluster, slot);
	ck_assert_msg(i >= 0, "no node of the cluster owns slot %d", slot);
	r = on_node(i, 0, cmd, len);
	for (int hops = 0; hops < 3 && (to = redirected_to(r, "MOVED")) >= 0; hops++) {
		freeReplyObject(r);
		test_cluster_node_for_slot(&cluster, slot); /* the map read again */
		r = on_node(to, 0, cmd, len);
	}
	if ((to = redirected_to(r, "ASK")) >= 0) {
		freeReplyObject(r);
		r = on_node(to, 1, cmd, len);
	}
	return r;
}

static int is(const redisReply *arg, const char *name)
{
	return arg->len == strlen(name) && strncasecmp(arg->str, name, arg->len) == 0;
}

static int is_any(const redisReply *arg, const char *const *names)
{
	for (; *names; names++)
		if (is(arg, *names))
			return 1;
	return 0;
}

static int slot_of(const redisReply *arg)
{
	return test_cluster_keyslot(arg->str, arg->len);
}

/* The formatted command on every primary: the first error reply, else the first primary's. */
static redisReply *on_every_primary(const char *cmd, size_t len)
{
	int idx[TEST_CLUSTER_MAX_NODES], n = primaries_now(idx);
	redisReply *keep = NULL;

	for (int k = 0; k < n; k++) {
		redisReply *r = on_node(idx[k], 0, cmd, len);

		if (!keep || (r->type == REDIS_REPLY_ERROR && keep->type != REDIS_REPLY_ERROR)) {
			freeReplyObject(keep);
			keep = r;
		} else {
			freeReplyObject(r);
		}
	}
	return keep;
}

/* EXISTS/DEL/UNLINK/TOUCH of keys argv[1..] in several slots: one command a key, the counts summed. */
static redisReply *per_key_summed(const redisReply *argv)
{
	redisReply *sum = NULL;

	for (size_t k = 1; k < argv->elements; k++) {
		const char *a[2] = { argv->element[0]->str, argv->element[k]->str };
		size_t l[2] = { argv->element[0]->len, argv->element[k]->len };
		char *cmd = NULL;
		int len = redisFormatCommandArgv(&cmd, 2, a, l);
		redisReply *r;

		ck_assert_int_gt(len, 0);
		r = on_slot(slot_of(argv->element[k]), cmd, (size_t)len);
		redisFreeCommand(cmd);
		if (r->type != REDIS_REPLY_INTEGER) {
			freeReplyObject(sum);
			return r;
		}
		if (!sum)
			sum = r;
		else {
			sum->integer += r->integer;
			freeReplyObject(r);
		}
	}
	return sum;
}

/* The primary of slot 0, where a command without keys goes. */
static int first_primary(void)
{
	int idx[TEST_CLUSTER_MAX_NODES];

	primaries_now(idx);
	return idx[0];
}

static redisReply *routed(const char *cmd, size_t len)
{
	static const char *const every[] = { "FLUSHALL", "FLUSHDB", "SCRIPT", "CLIENT", "CONFIG", "FUNCTION", NULL };
	static const char *const gathered[] = { "INFO", "DBSIZE", "KEYS", "SCAN", "RANDOMKEY", NULL };
	static const char *const txn[] = { "MULTI", "EXEC", "WATCH", "UNWATCH", "DISCARD", NULL };
	static const char *const scripts[] = { "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO", NULL };
	static const char *const counted[] = { "EXISTS", "DEL", "UNLINK", "TOUCH", NULL };
	static const char *const keyless[] = { "TIME", "PING", "ECHO", "CLUSTER", "COMMAND", "LASTSAVE", NULL };
	redisReply *argv = parse_cmd(cmd, len), *r = NULL;
	const redisReply *name = argv->element[0];
	int keyed = -1; /* the argument whose slot routes the command, -1: none */

	ck_assert_msg(!is_any(name, gathered), "cluster mode: %.*s would answer one node's; use test_info_num, "
					     "test_commands, test_cmdstat, test_dbsize or test_snapshot",
		      (int)name->len, name->str);
	ck_assert_msg(!is_any(name, txn), "cluster mode: no %.*s on the routed connection", (int)name->len,
		      name->str);
	if (is_any(name, every)) {
		r = on_every_primary(cmd, len);
	} else if (is_any(name, scripts)) {
		ck_assert_uint_ge(argv->elements, 3);
		if (atoll(argv->element[2]->str) > 0) {
			ck_assert_uint_ge(argv->elements, 4);
			keyed = 3;
		}
	} else if (is_any(name, counted) && argv->elements > 2) {
		int one_slot = 1;

		for (size_t k = 2; k < argv->elements && one_slot; k++)
			one_slot = slot_of(argv->element[k]) == slot_of(argv->element[1]);
		if (one_slot)
			keyed = 1;
		else
			r = per_key_summed(argv);
	} else if (!is_any(name, keyless) && argv->elements > 1) {
		keyed = 1;
	}
	if (!r && keyed >= 0)
		r = on_slot(slot_of(argv->element[keyed]), cmd, len);
	else if (!r)
		r = on_node(first_primary(), 0, cmd, len);
	freeReplyObject(argv);
	return r;
}

redisReply *test_route(redisContext *c, const char *cmd, size_t len)
{
	redisReply *r = NULL;

	if (c && c == rt.front)
		return routed(cmd, len);
	if (redisAppendFormattedCommand(c, cmd, len) != REDIS_OK || redisGetReply(c, (void **)&r) != REDIS_OK)
		return NULL;
	return r;
}

int test_route_nodes(redisContext *c, redisContext **out, int cap)
{
	int idx[TEST_CLUSTER_MAX_NODES], n;

	ck_assert_int_gt(cap, 0);
	if (!c || c != rt.front) {
		out[0] = c;
		return 1;
	}
	n = primaries_now(idx);
	ck_assert_int_le(n, cap);
	for (int k = 0; k < n; k++)
		out[k] = node_conn(idx[k]);
	return n;
}

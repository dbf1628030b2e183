/*
 * The cluster mode of the suites' fixture (tests/harness_mode.h) does what it
 * says, so that the admin suites' second run stands on it: on the 3-primary
 * cluster that test_tcase starts (the suite sets SLUICE_TEST_REDIS=cluster
 * itself, whatever the environment says):
 *   - a keyed command through the test's connection lands on the primary
 *     that owns its key's slot, and only there; a script call by its first
 *     KEYS; a command of keys in several slots is counted key by key;
 *   - FLUSHALL, SCRIPT LOAD and CONFIG RESETSTAT reach every primary;
 *   - test_snapshot, test_keys, test_dbsize and test_cmdstat see every
 *     primary's keys and counts;
 *   - a map gone stale (a slot moved behind the routing's back) is followed
 *     by MOVED, a key migrated ahead of its slot by ASK.
 * Each check reads the nodes directly (test_cluster_connect_node), not
 * through the routing it checks.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/conn_fixture.h"
#include "tests/harness_mode.h"

/* A key of the form "<prefix><n>" whose slot node[node] owns by the map, into buf. */
static const char *key_on(int node, const char *prefix, char *buf, size_t cap)
{
	const struct test_cluster *cl = test_srv_cluster();

	for (int n = 0; n < 100000; n++) {
		snprintf(buf, cap, "%s%d", prefix, n);
		if (cl->owner_of[test_cluster_keyslot(buf, strlen(buf))] == node)
			return buf;
	}
	ck_abort_msg("no key of prefix %s on node %d", prefix, node);
	return NULL;
}

/* DBSIZE of node[i], asked directly. */
static long long dbsize_of(int i)
{
	redisContext *n = test_cluster_connect_node(test_srv_cluster(), i);
	long long v = test_cmd_int(n, "DBSIZE");

	redisFree(n);
	return v;
}

/* node[i]'s reply to a command, as test_show_reply text, asked directly. */
static const char *direct(int i, char *out, size_t cap, const char *fmt, const char *arg)
{
	redisContext *n = test_cluster_connect_node(test_srv_cluster(), i);
	redisReply *r = test_cmd(n, fmt, arg);

	test_show_reply(r, out, cap);
	freeReplyObject(r);
	redisFree(n);
	return out;
}

START_TEST(test_keyed_lands_on_the_owner)
{
	char k[TEST_MODE_PRIMARIES][32], got[128];

	ck_assert_ptr_nonnull(test_srv_cluster());
	ck_assert_int_eq(test_nodes_of(c), TEST_MODE_PRIMARIES);
	for (int i = 0; i < TEST_MODE_PRIMARIES; i++) {
		key_on(i, "k", k[i], sizeof(k[i]));
		freeReplyObject(test_cmd(c, "SET %s v%d", k[i], i));
	}
	for (int i = 0; i < TEST_MODE_PRIMARIES; i++) {
		char want[16];

		snprintf(want, sizeof(want), "\"v%d\"", i);
		ck_assert_int_eq(dbsize_of(i), 1);
		ck_assert_str_eq(direct(i, got, sizeof(got), "GET %s", k[i]), want);
		test_check_cmd(__FILE__, __LINE__, c, want, "GET %s", k[i]);
	}
	/* keys in three slots: counted one by one; keys of one slot: one command */
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s %s nope", k[0], k[1], k[2]), 3);
	freeReplyObject(test_cmd(c, "SET {t}a 1"));
	freeReplyObject(test_cmd(c, "SET {t}b 1"));
	ck_assert_int_eq(test_cmd_int(c, "EXISTS {t}a {t}b"), 2);
	ck_assert_int_eq(test_dbsize(c), 5);
	ck_assert_int_eq(test_cmd_int(c, "DEL %s %s {t}a", k[1], k[2]), 3);
	ck_assert_str_eq(direct(1, got, sizeof(got), "EXISTS %s", k[1]), "0");
	ck_assert_str_eq(direct(2, got, sizeof(got), "EXISTS %s", k[2]), "0");
	ck_assert_int_eq(dbsize_of(0) + dbsize_of(1) + dbsize_of(2), 2); /* k0 and {t}b */
	ck_assert_int_eq(test_dbsize(c), 2);
	/* a key-less command goes to the first primary */
	ck_assert_int_gt(test_server_ms(c), 1700000000000LL);
}
END_TEST

START_TEST(test_scripts_by_first_key)
{
	char k[TEST_MODE_PRIMARIES][32], path[32], got[128];

	for (int i = 0; i < TEST_MODE_PRIMARIES; i++) {
		key_on(i, "s", k[i], sizeof(k[i]));
		freeReplyObject(test_cmd(c, "SET %s %d", k[i], 10 + i));
		test_check_cmd(__FILE__, __LINE__, c, i == 0 ? "\"10\"" : i == 1 ? "\"11\"" : "\"12\"",
			       "EVAL %s 1 %s", "return redis.call('GET', KEYS[1])", k[i]);
	}
	test_check_cmd(__FILE__, __LINE__, c, "7", "EVAL %s 0", "return 7");
	/* EVALSHA after SCRIPT LOAD (on every primary): a client call on each node's paths */
	for (int i = 0; i < TEST_MODE_PRIMARIES; i++) {
		const struct test_cluster *cl = test_srv_cluster();
		int n = 0;

		do
			snprintf(path, sizeof(path), "/p/%d", n++);
		while (cl->owner_of[test_cluster_keyslot(test_lb_key(path), strlen(test_lb_key(path)))] != i);
		ck_assert_int_eq(test_acquire(c, TEST_EVALSHA, "leaky_bucket", path, -1, "10", "1", NULL), 1);
		ck_assert_str_eq(direct(i, got, sizeof(got), "ZCARD %s", test_lb_key(path)), "1");
	}
}
END_TEST

START_TEST(test_every_primary)
{
	char k[TEST_MODE_PRIMARIES][32], got[128];
	char *snap;

	freeReplyObject(test_cmd(c, "CONFIG RESETSTAT"));
	for (int i = 0; i < TEST_MODE_PRIMARIES; i++) {
		key_on(i, "e", k[i], sizeof(k[i]));
		freeReplyObject(test_cmd(c, "SET %s x", k[i]));
	}
	ck_assert_int_eq(test_cmdstat(c, "set", "calls"), TEST_MODE_PRIMARIES);
	{
		redisReply *all = test_keys(c, "e*");

		ck_assert_uint_eq(all->elements, TEST_MODE_PRIMARIES);
		freeReplyObject(all);
	}
	snap = test_snapshot(c);
	ck_assert_ptr_nonnull(strstr(snap, "dbsize=3\n"));
	for (int i = 0; i < TEST_MODE_PRIMARIES; i++)
		ck_assert_ptr_nonnull(strstr(snap, k[i]));
	free(snap);
	/* a script loaded through the routing is on every primary */
	{
		redisReply *r = test_cmd(c, "SCRIPT LOAD %s", "return 1");
		char sha[41];

		ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
		memcpy(sha, r->str, sizeof(sha));
		freeReplyObject(r);
		for (int i = 0; i < TEST_MODE_PRIMARIES; i++)
			ck_assert_str_eq(direct(i, got, sizeof(got), "SCRIPT EXISTS %s", sha), "{1}");
	}
	freeReplyObject(test_cmd(c, "FLUSHALL"));
	for (int i = 0; i < TEST_MODE_PRIMARIES; i++)
		ck_assert_int_eq(dbsize_of(i), 0);
}
END_TEST

START_TEST(test_moved_and_ask)
{
	struct test_cluster *cl = test_srv_cluster();
	char k[32];
	int slot, dst;

	key_on(0, "m", k, sizeof(k));
	slot = test_cluster_keyslot(k, strlen(k));
	freeReplyObject(test_cmd(c, "SET %s moved", k));
	/* the slot moved to node 1 behind the routing's back: MOVED is followed */
	ck_assert_int_eq(test_cluster_move_slot(cl, slot, 1), 1);
	cl->owner_of[slot] = 0; /* the routing's map, stale */
	test_check_cmd(__FILE__, __LINE__, c, "\"moved\"", "GET %s", k);
	ck_assert_int_eq(cl->owner_of[slot], 1); /* and read again */
	ck_assert_int_eq(dbsize_of(1), 1);
	/* a key migrated to node 2 ahead of its slot: node 1 answers ASK, which is followed */
	dst = 2;
	test_cluster_migrate_begin(cl, slot, dst);
	ck_assert_int_eq(test_cluster_migrate_keys(cl, slot, 10, NULL, 0), 1);
	test_check_cmd(__FILE__, __LINE__, c, "\"moved\"", "GET %s", k);
	test_cluster_migrate_finish(cl, slot);
	ck_assert_int_eq(dbsize_of(dst), 1);
	/* back where it was, for the tests after */
	ck_assert_int_eq(test_cluster_move_slot(cl, slot, 0), 1);
	test_check_cmd(__FILE__, __LINE__, c, "\"moved\"", "GET %s", k);
	ck_assert_int_eq(dbsize_of(0), 1);
}
END_TEST

static Suite *harness_mode_suite(void)
{
	Suite *s = suite_create("harness_mode");
	TCase *tc = test_tcase(s, "cluster", conn_up, conn_down, 60);

	tcase_add_test(tc, test_keyed_lands_on_the_owner);
	tcase_add_test(tc, test_scripts_by_first_key);
	tcase_add_test(tc, test_every_primary);
	tcase_add_test(tc, test_moved_and_ask);
	return s;
}

int main(void)
{
	setenv("SLUICE_TEST_REDIS", "cluster", 1);
	return test_run_suite(harness_mode_suite());
}

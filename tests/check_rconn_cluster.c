/*
 * The one Redis layer (core/rconn.h) on a real Redis Cluster of 3 primaries
 * (tests/harness_cluster.h), one cluster for the whole suite: routing by
 * slot, a command for every primary, MOVED after a slot moved, ASK during a
 * migration (followed for a call that names all its keys, not for a shard
 * script), NOSCRIPT on one node, a node killed (its commands answered
 * NODEDOWN, the others' served, /readyz's coverage naming its slots) and a
 * node that hangs (its commands time out, the others' do not wait for it).
 * The tests run in that order in one process (CK_FORK=no is not needed:
 * each test leaves the cluster as the next expects and says so).
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rconn.h"
#include "core/shard.h"
#include "tests/harness.h"
#include "tests/harness_cluster.h"

#define TIMEOUT_MS 400

static struct test_cluster C;

static void cluster_start(void)
{
	if (test_cluster_start(&C, 3, 0))
		ck_abort_msg("the cluster did not start");
}

static void cluster_stop(void)
{
	test_cluster_stop(&C);
}

/* A new rconn on the cluster through node[i]'s URL (the caller frees it). */
static struct rconn *conn_via(int i)
{
	return test_cluster_rconn(&C, i, TIMEOUT_MS);
}

/* Queue SET key value. */
static void queue_set(struct rbatch *b, const char *key, const char *value)
{
	const char *argv[3] = { "SET", key, value };
	size_t lens[3] = { 3, strlen(key), strlen(value) };

	ck_assert_int_eq(rbatch_cmd(b, 3, argv, lens), 0);
}

/* A key of slot `slot`: "k{<tag>}" with a tag found by trying */
static const char *key_in_slot(int slot, char *buf, size_t cap)
{
	for (int i = 0;; i++) {
		snprintf(buf, cap, "k{t%d}", i);
		if (test_cluster_keyslot(buf, strlen(buf)) == slot)
			return buf;
	}
}

START_TEST(test_routes_by_slot)
{
	struct rconn *c = conn_via(1);
	struct rbatch *b = rbatch_new();
	struct rconn_node_info ni[4];
	char key[32], why[300];
	long long on[3] = { 0 };

	for (int i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "route:%d", i);
		queue_set(b, key, "v");
	}
	ck_assert_int_eq(rbatch_run(c, b), 0);
	for (size_t i = 0; i < rbatch_len(b); i++)
		ck_assert_int_eq(rbatch_reply(b, i)->type, REDIS_REPLY_STATUS);
	ck_assert(rconn_is_cluster(c));
	ck_assert_uint_eq(rconn_primaries(c), 3);
	/* each key is on its slot's owner, and only there */
	for (int i = 0; i < 3000; i++) {
		int slot, owner;
		redisContext *x;

		snprintf(key, sizeof(key), "route:%d", i);
		slot = test_cluster_keyslot(key, strlen(key));
		owner = test_cluster_node_for_slot(&C, slot);
		x = test_cluster_connect_node(&C, owner);
		ck_assert_int_eq(test_cmd_int(x, "EXISTS %s", key), 1);
		redisFree(x);
		on[owner]++;
	}
	ck_assert(on[0] > 800 && on[1] > 800 && on[2] > 800);
	/* primaries in slot order, every slot owned once */
	ck_assert_uint_eq(rconn_node_info(c, ni, 4), 3);
	ck_assert_uint_eq(ni[0].slots + ni[1].slots + ni[2].slots, 16384);
	ck_assert_str_eq(ni[0].ranges, "0-5460");
	for (int i = 0; i < 3; i++) {
		char want[32];

		snprintf(want, sizeof(want), "127.0.0.1:%d", C.node[i].srv.port);
		ck_assert_str_eq(ni[i].addr, want);
		ck_assert(ni[i].up);
	}
	/* a command for each primary: DBSIZE sums to the keys written */
	rbatch_clear(b);
	for (size_t i = 0; i < 3; i++) {
		const char *argv[1] = { "DBSIZE" };
		size_t lens[1] = { 6 };

		ck_assert_int_eq(rbatch_cmd_at(b, i, 1, argv, lens), 0);
	}
	ck_assert_int_eq(rbatch_run(c, b), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(rbatch_reply(b, (size_t)i)->integer, on[i]);
	ck_assert_int_eq(rconn_coverage(c, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "");
	/* a command of one word has no key: any primary answers it, in one round trip */
	{
		const char *argv[1] = { "TIME" };
		size_t lens[1] = { 4 };
		uint64_t trips = rconn_round_trips(c);
		redisReply *r;

		ck_assert_int_eq(rconn_command(c, 1, argv, lens, &r), 0);
		ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
		ck_assert_uint_eq(r->elements, 2);
		freeReplyObject(r);
		ck_assert_uint_eq(rconn_round_trips(c) - trips, 1);
	}
	rbatch_free(b);
	rconn_free(c);
	(void)key_in_slot;
}
END_TEST

START_TEST(test_moved_after_a_slot_moved)
{
	struct rconn *c = conn_via(0);
	struct rconn_node_info ni[4], before[4];
	char key[32];
	int slot, src, dst;
	redisReply *r;
	const char *argv[2] = { "GET", key };
	size_t lens[2] = { 3, 0 };

	key_in_slot(100, key, sizeof(key));
	lens[1] = strlen(key);
	r = test_cluster_cmd(&C, key, "SET %s before", key);
	freeReplyObject(r);
	/* the rconn learns the map */
	ck_assert_int_eq(rconn_command(c, 2, argv, lens, &r), 0);
	ck_assert_str_eq(r->str, "before");
	freeReplyObject(r);
	ck_assert_uint_eq(rconn_node_info(c, before, 4), 3);
	slot = 100;
	src = test_cluster_node_for_slot(&C, slot);
	dst = (src + 1) % 3;
	ck_assert_int_eq(test_cluster_move_slot(&C, slot, dst), 1);
	/* same handle, old map: MOVED is followed, counted on the old owner, and the map updated */
	ck_assert_int_eq(rconn_command(c, 2, argv, lens, &r), 0);
	ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
	ck_assert_str_eq(r->str, "before");
	freeReplyObject(r);
	ck_assert_uint_eq(rconn_node_info(c, ni, 4), 3);
	ck_assert_uint_eq(ni[src].moved, 1);
	ck_assert_uint_eq(ni[src].slots, before[src].slots - 1);
	ck_assert_uint_eq(ni[dst].slots, before[dst].slots + 1);
	/* and again: no MOVED now */
	ck_assert_int_eq(rconn_command(c, 2, argv, lens, &r), 0);
	freeReplyObject(r);
	rconn_node_info(c, ni, 4);
	ck_assert_uint_eq(ni[src].moved, 1);
	/* back where it was, for the next tests */
	ck_assert_int_eq(test_cluster_move_slot(&C, slot, src), 1);
	rconn_free(c);
}
END_TEST

START_TEST(test_ask_during_migration)
{
	struct rconn *c = conn_via(0);
	struct rconn_node_info ni[4];
	char path[32] = "/ask/0", key[160];
	int slot, src, dst;
	redisReply *r;
	unsigned k;

	/* a leaky bucket path: its keys all carry {k}, in slot keyslot("{k}") */
	k = shard_of(path, strlen(path));
	snprintf(key, sizeof(key), "{%u}", k);
	slot = test_cluster_keyslot(key, strlen(key));
	{
		char s[5][160];
		const char *argv[9];
		size_t lens[9];

		snprintf(s[0], sizeof(s[0]), "sluice:{%u}:leaky_bucket:%s", k, path);
		snprintf(s[1], sizeof(s[1]), "sluice:{%u}:leaky_bucket_meta:%s", k, path);
		snprintf(s[2], sizeof(s[2]), "sluice:{%u}:registry:leaky_bucket", k);
		snprintf(s[3], sizeof(s[3]), "sluice:{%u}:rules", k);
		snprintf(s[4], sizeof(s[4]), "sluice:{%u}:stats", k);
		for (int i = 0; i < 5; i++)
			argv[i] = s[i];
		argv[5] = path;
		argv[6] = "3";
		argv[7] = "1000000";
		argv[8] = "";
		for (int i = 0; i < 9; i++)
			lens[i] = strlen(argv[i]);
		{
			const char *full[11];
			size_t fl[11];

			memcpy(full, argv, sizeof(argv));
			memcpy(fl, lens, sizeof(lens));
			full[9] = "10";
			fl[9] = 2;
			full[10] = "1";
			fl[10] = 1;
			ck_assert_int_eq(rconn_eval(c, SCRIPT_LEAKY_BUCKET, 5, 11, full, fl, &r), 0);
			ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
			ck_assert_int_eq(r->element[0]->integer, 1);
			freeReplyObject(r);
			/* every key the call names exists (a rules copy and stats, as a daemon and a call by rule
			 * leave them): so the call is judged whole on either side during the migration */
			freeReplyObject(test_cluster_cmd(&C, s[3], "HSET %s x 1", s[3]));
			freeReplyObject(test_cluster_cmd(&C, s[4], "HSET %s x 1", s[4]));
			src = test_cluster_node_for_slot(&C, slot);
			dst = (src + 2) % 3;
			test_cluster_migrate_begin(&C, slot, dst);
			/* every key of the path moves: the source answers ASK for a call of them all */
			ck_assert_int_gt(test_cluster_migrate_keys(&C, slot, 100, NULL, 0), 0);
			full[6] = "1";
			full[7] = "1000001";
			fl[6] = 1;
			{
				int rc = rconn_eval(c, SCRIPT_LEAKY_BUCKET, 5, 11, full, fl, &r);

				ck_assert_msg(rc == 0, "%d %s", rc, rconn_errstr(c));
			}
			/* the client script names all its keys: followed (ASKING), served on the importing node */
			ck_assert_msg(r->type == REDIS_REPLY_ARRAY, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "?");
			ck_assert_int_eq(r->element[0]->integer, 1);
			ck_assert_int_eq(r->element[1]->integer, 6); /* 10 - 3 - 1 (nothing leaked in 1 ms at 1/s) */
			freeReplyObject(r);
		}
		/* a shard script reaches paths it does not name: not followed, the ASK is its reply */
		{
			const char *sargv[3] = { s[2], "1000002", "10" };
			size_t sl[3] = { strlen(s[2]), 7, 2 };

			ck_assert_int_eq(rconn_eval(c, SCRIPT_LEAKY_BUCKET_DRAIN_SHARD, 1, 3, sargv, sl, &r), 0);
			ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
			ck_assert_msg(strncmp(r->str, "ASK ", 4) == 0, "%s", r->str);
			freeReplyObject(r);
		}
		test_cluster_migrate_finish(&C, slot);
		ck_assert_int_ge(test_cluster_wait_ok(&C, 10000), 0);
		rconn_node_info(c, ni, 4);
		ck_assert_uint_eq(ni[src].ask, 2);
		/* after the move: MOVED, then the shard script runs where the bucket is (4 entries) */
		{
			const char *sargv[3] = { s[2], "1000003", "10" };
			size_t sl[3] = { strlen(s[2]), 7, 2 };

			ck_assert_int_eq(rconn_eval(c, SCRIPT_LEAKY_BUCKET_DRAIN_SHARD, 1, 3, sargv, sl, &r), 0);
			ck_assert_msg(r->type == REDIS_REPLY_ARRAY, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "?");
			freeReplyObject(r);
		}
		ck_assert_int_gt(test_cluster_move_slot(&C, slot, src), 0);
	}
	rconn_free(c);
}
END_TEST

START_TEST(test_noscript_on_one_node)
{
	struct rconn *c = conn_via(2);
	char key[32];
	redisContext *x;
	redisReply *r;
	const char *argv[6] = { NULL, "", "", "", "", "" };
	size_t lens[6];

	/* the reset script on a key of node 0, after that node's script cache was flushed */
	key_in_slot(10, key, sizeof(key));
	argv[0] = key;
	lens[0] = strlen(key);
	for (int i = 1; i < 6; i++)
		lens[i] = 0;
	ck_assert_int_eq(rconn_ensure(c), 0);
	x = test_cluster_connect_slot(&C, 10);
	freeReplyObject(test_cmd(x, "SCRIPT FLUSH"));
	ck_assert_int_eq(rconn_eval(c, SCRIPT_SLIDING_LOG_STATE, 1, 1, argv, lens, &r), 0);
	ck_assert_msg(r->type != REDIS_REPLY_ERROR || strncmp(r->str, "NOSCRIPT", 8) != 0, "%s", r->str);
	freeReplyObject(r);
	redisFree(x);
	rconn_free(c);
}
END_TEST

START_TEST(test_hung_node)
{
	struct rconn *c = conn_via(0);
	struct rbatch *b = rbatch_new();
	char key[32];
	long long t;
	size_t down = 0, up = 0;

	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "hang:%d", i);
		queue_set(b, key, "v");
	}
	ck_assert_int_eq(rbatch_run(c, b), 0);
	test_cluster_kill(&C, 2, SIGSTOP);
	t = test_now_ms();
	ck_assert_int_eq(rbatch_run(c, b), 0);
	t = test_now_ms() - t;
	test_cluster_kill(&C, 2, SIGCONT);
	/* the other nodes' commands are served; node 2's answer NODEDOWN ... timed out, after the timeout, once */
	for (size_t i = 0; i < rbatch_len(b); i++) {
		const redisReply *r = rbatch_reply(b, i);

		if (reply_is_nodedown(r)) {
			ck_assert_msg(strstr(r->str, "timed out") != NULL, "%s", r->str);
			down++;
		} else {
			ck_assert_int_eq(r->type, REDIS_REPLY_STATUS);
			up++;
		}
	}
	ck_assert(down > 50 && up > 150);
	ck_assert_msg(t >= TIMEOUT_MS - 20 && t < 2 * TIMEOUT_MS, "%lld ms", t);
	rbatch_free(b);
	rconn_free(c);
}
END_TEST

START_TEST(test_killed_node)
{
	struct rconn *c = conn_via(0);
	struct rbatch *b = rbatch_new();
	char key[32], why[300], want[80];
	redisReply *r;
	size_t down = 0;
	const char *argv[2] = { "GET", key };
	size_t lens[2] = { 3, 0 };

	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "kill:%d", i);
		queue_set(b, key, "v");
	}
	ck_assert_int_eq(rbatch_run(c, b), 0);
	test_cluster_kill(&C, 1, SIGKILL);
	ck_assert_int_eq(rbatch_run(c, b), 0);
	for (size_t i = 0; i < rbatch_len(b); i++)
		if (reply_is_nodedown(rbatch_reply(b, i))) {
			snprintf(want, sizeof(want), "NODEDOWN 127.0.0.1:%d: ", C.node[1].srv.port);
			ck_assert_msg(strncmp(rbatch_reply(b, i)->str, want, strlen(want)) == 0, "%s",
				      rbatch_reply(b, i)->str);
			down++;
		}
	ck_assert(down > 50 && down < 200);
	/* one command for the dead node alone: the call fails, naming the node */
	key_in_slot(6000, key, sizeof(key));
	lens[1] = strlen(key);
	{
		int rc = rconn_command(c, 2, argv, lens, &r);

		/* -EIO, or -EAGAIN inside the reconnect backoff the batch's failure began */
		ck_assert_msg(rc == -EIO || rc == -EAGAIN, "%d", rc);
	}
	snprintf(want, sizeof(want), "127.0.0.1:%d: ", C.node[1].srv.port);
	ck_assert_msg(strncmp(rconn_errstr(c), want, strlen(want)) == 0, "%s", rconn_errstr(c));
	/* the coverage names the slots and the node */
	ck_assert_int_eq(rconn_coverage(c, why, sizeof(why)), -EIO);
	snprintf(want, sizeof(want), "slots 5461-10922 (127.0.0.1:%d): ", C.node[1].srv.port);
	ck_assert_msg(strncmp(why, want, strlen(want)) == 0, "%s", why);
	rbatch_free(b);
	rconn_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rconn_cluster");
	TCase *tc = tcase_create("cluster");

	/* one cluster, the tests in this order: the last kills a node */
	tcase_add_unchecked_fixture(tc, cluster_start, cluster_stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_routes_by_slot);
	tcase_add_test(tc, test_moved_after_a_slot_moved);
	tcase_add_test(tc, test_ask_during_migration);
	tcase_add_test(tc, test_noscript_on_one_node);
	tcase_add_test(tc, test_hung_node);
	tcase_add_test(tc, test_killed_node);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}

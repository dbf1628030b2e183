/*
 * The one Redis layer (core/rconn.h) following a MOVED to a node that it
 * meets for the first time, when its table of nodes is full: a cluster
 * grown by a primary while the daemon runs.  Adding the node may move the
 * table (realloc); the redirection must not write through a pointer into
 * the old one (it did: heap-use-after-free in redirect(), core/rpipe.c,
 * and the MOVED went uncounted).  Two nodes: A owns every slot, B joins
 * with none; the layer knows A and 7 seeds (8 nodes, the table's first
 * size); then one slot goes to B and a GET of a key in it is sent.
 */
#include <check.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rconn.h"
#include "core/redis_target.h"
#include "core/shard.h"
#include "tests/harness.h"

static struct test_redis node_a, node_b;

static void nodes_start(void)
{
	const struct test_redis_opts a = { .cluster = 1, .all_slots = 1 }, b = { .cluster = 1 };

	if (test_redis_start_with(&node_a, &a) != 0 || test_redis_start_with(&node_b, &b) != 0)
		abort();
}

static void nodes_stop(void)
{
	test_redis_stop(&node_a);
	test_redis_stop(&node_b);
}

/* "cluster_state:ok" in CLUSTER INFO of cc, and no handshake left in its CLUSTER NODES */
static int settled(redisContext *cc)
{
	redisReply *r = test_cmd(cc, "CLUSTER INFO");
	int ok = r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") != NULL;

	freeReplyObject(r);
	r = test_cmd(cc, "CLUSTER NODES");
	ok = ok && r->type == REDIS_REPLY_STRING && !strstr(r->str, "handshake") && !strstr(r->str, "noaddr");
	freeReplyObject(r);
	return ok;
}

/* Whether a's CLUSTER NODES names `id` */
static int knows(redisContext *a, const char *id)
{
	redisReply *r = test_cmd(a, "CLUSTER NODES");
	int ok = r->type == REDIS_REPLY_STRING && strstr(r->str, id) != NULL;

	freeReplyObject(r);
	return ok;
}

START_TEST(test_moved_to_a_new_node_when_the_table_is_full)
{
	static const char key[] = "k0";
	struct redis_target t = { .host = "127.0.0.1", .port = node_a.port, .nseeds = 7 };
	char seed_host[7][16], bid[64] = "", addr_a[32];
	long long moved_a = -1;
	redisContext *a = test_redis_connect(&node_a), *b = test_redis_connect(&node_b);
	const char *argv[2] = { "GET", key };
	size_t lens[2] = { 3, sizeof(key) - 1 }, n;
	struct rconn_node_info info[4];
	struct rconn *c;
	redisReply *r;
	int bus = -1, slot = (int)shard_keyslot(key, sizeof(key) - 1);

	/* 7 seeds after A (never asked: A answers first) fill the table's first 8 entries */
	for (int i = 0; i < 7; i++) {
		snprintf(seed_host[i], sizeof(seed_host[i]), "127.0.0.1");
		t.seeds[i].host = seed_host[i];
		t.seeds[i].port = 1 + i;
	}
	c = rconn_new(&t, 2000);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(rconn_ensure(c), 0);
	ck_assert_int_eq(rconn_is_cluster(c), 1);
	ck_assert_uint_eq(rconn_primaries(c), 1);

	/* B meets A, then takes the slot of `key` (empty on A) */
	r = test_cmd(b, "CLUSTER NODES");
	ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
	for (char *save = NULL, *l = strtok_r(r->str, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (strstr(l, "myself") && strchr(l, '@')) {
			ck_assert_int_eq(sscanf(l, "%63s", bid), 1);
			bus = atoi(strchr(l, '@') + 1);
		}
	freeReplyObject(r);
	ck_assert_int_gt(bus, 0);
	freeReplyObject(test_cmd(a, "CLUSTER MEET 127.0.0.1 %d %d", node_b.port, bus));
	ck_wait_until(knows(a, bid) && settled(a), 10000, "A did not meet B");
	freeReplyObject(test_cmd(b, "CLUSTER SETSLOT %d NODE %s", slot, bid));
	freeReplyObject(test_cmd(a, "CLUSTER SETSLOT %d NODE %s", slot, bid));
	ck_wait_until(settled(b), 10000, "B does not know the whole map");
	r = test_cmd(a, "GET %s", key);
	ck_assert_msg(r->type == REDIS_REPLY_ERROR && strncmp(r->str, "MOVED ", 6) == 0, "A answers %s",
		      r->type == REDIS_REPLY_ERROR ? r->str : "no MOVED");
	freeReplyObject(r);

	/* through the layer: MOVED to B, the 9th node; B's nil reply, and A's MOVED counted */
	ck_assert_int_eq(rconn_command(c, 2, argv, lens, &r), 0);
	ck_assert_int_eq(r->type, REDIS_REPLY_NIL);
	freeReplyObject(r);
	n = rconn_node_info(c, info, 4);
	snprintf(addr_a, sizeof(addr_a), "127.0.0.1:%d", node_a.port);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(info[i].addr, addr_a))
			moved_a = (long long)info[i].moved;
	ck_assert_int_eq(moved_a, 1);
	rconn_free(c);
	redisFree(a);
	redisFree(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rconn_moved");
	TCase *tc = tcase_create("moved");

	tcase_add_unchecked_fixture(tc, nodes_start, nodes_stop);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_moved_to_a_new_node_when_the_table_is_full);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}

/*
 * What callers of the one Redis layer (core/rconn.h) get when a real Redis
 * Cluster of 2 primaries (tests/harness_cluster.h) answers something other
 * than an answer:
 * - CLUSTERDOWN (a node whose cluster lacks a slot): the command fails as a
 *   node down, at once, and is not sent again as one whose idle connection
 *   died would be;
 * - a SCRIPT LOAD refused after NOSCRIPT (an ACL without it): the refusal is
 *   the command's reply, sent once, and the connection stays.
 * One cluster for the suite; each test leaves it as it found it.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rconn.h"
#include "core/reply.h"
#include "core/shard.h"
#include "tests/harness.h"
#include "tests/harness_cluster.h"

#define TIMEOUT_MS 1000

static struct test_cluster C;

static void cluster_start(void)
{
	if (test_cluster_start(&C, 2, 0))
		ck_abort_msg("the cluster did not start");
}

static void cluster_stop(void)
{
	test_cluster_stop(&C);
}

/* A new rconn on the cluster through node[i]'s URL (the caller frees it). */
static struct rconn *conn_via(int i)
{
	struct redis_target t;
	char url[64];
	struct rconn *c;

	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", C.node[i].srv.port);
	ck_assert_int_eq(redis_url_parse(url, &t, NULL), 0);
	c = rconn_new(&t, TIMEOUT_MS);
	redis_target_clear(&t);
	ck_assert_ptr_nonnull(c);
	return c;
}

/* A key of slot `slot` ("k{t<i>}", by trying) into buf. */
static const char *key_in_slot(int slot, char *buf, size_t cap)
{
	for (int i = 0;; i++) {
		snprintf(buf, cap, "k{t%d}", i);
		if (test_cluster_keyslot(buf, strlen(buf)) == slot)
			return buf;
	}
}

/* 1 when node i's CLUSTER INFO says cluster_state:<state> */
static int state_is(int i, const char *state)
{
	redisContext *x = test_cluster_connect_node(&C, i);
	redisReply *r = test_cmd(x, "CLUSTER INFO");
	char want[32];
	int ok;

	snprintf(want, sizeof(want), "cluster_state:%s", state);
	ok = r->type == REDIS_REPLY_STRING && strstr(r->str, want) != NULL;
	freeReplyObject(r);
	redisFree(x);
	return ok;
}

/* The primary of rconn_node_info whose address is node[i]'s. */
static struct rconn_node_info info_of(const struct rconn *c, int i)
{
	struct rconn_node_info ni[4];
	char want[32];
	size_t n = rconn_node_info(c, ni, 4);

	snprintf(want, sizeof(want), "127.0.0.1:%d", C.node[i].srv.port);
	for (size_t k = 0; k < n; k++)
		if (!strcmp(ni[k].addr, want))
			return ni[k];
	ck_abort_msg("no primary %s", want);
	return ni[0];
}

/* Queue a sliding log's state read (KEYS log, meta; ARGV limit, window_ms, now) of keys "<tag>:log", "<tag>:meta". */
static void queue_state(struct rbatch *b, const char *tag)
{
	char log[48], meta[48];
	const char *argv[5] = { log, meta, "5", "1000", "" };
	size_t lens[5] = { 0, 0, 1, 4, 0 };

	lens[0] = (size_t)snprintf(log, sizeof(log), "%s:log", tag);
	lens[1] = (size_t)snprintf(meta, sizeof(meta), "%s:meta", tag);
	ck_assert_int_eq(rbatch_eval(b, SCRIPT_SLIDING_LOG_STATE, 2, 5, argv, lens), 0);
}

START_TEST(test_clusterdown_is_not_sent_again)
{
	struct rconn *c = conn_via(0);
	struct rbatch *b = rbatch_new();
	int owner = test_cluster_node_for_slot(&C, 1), other = test_cluster_node_for_slot(&C, 16000);
	char key[32], tag[32];
	const char *argv[2] = { "GET", key };
	size_t lens[2] = { 3, 0 };
	uint64_t trips;
	redisContext *x, *y;
	redisReply *r;

	ck_assert_int_eq(rconn_ensure(c), 0);
	ck_assert_int_ge(owner, 0);
	ck_assert_int_ne(other, owner);
	/* the owner of slot 1 gives up slot 0 (its own): its cluster lacks a slot, it answers CLUSTERDOWN */
	ck_assert_int_eq(test_cluster_node_for_slot(&C, 0), owner);
	x = test_cluster_connect_node(&C, owner);
	freeReplyObject(test_cmd(x, "CLUSTER DELSLOTS 0"));
	ck_wait_until(state_is(owner, "fail"), 5000, "node %d is not at cluster_state:fail", owner);
	key_in_slot(1, key, sizeof(key));
	lens[1] = strlen(key);

	/* alone: it fails as a node down (-EIO, naming the cause), sent once, one CLUSTERDOWN counted */
	trips = rconn_round_trips(c);
	ck_assert_int_eq(rconn_command(c, 2, argv, lens, &r), -EIO);
	ck_assert_msg(strstr(rconn_errstr(c), "CLUSTERDOWN") != NULL, "%s", rconn_errstr(c));
	ck_assert_uint_eq(rconn_round_trips(c) - trips, 1);
	ck_assert_uint_eq(info_of(c, owner).tryagain, 1);
	ck_assert_int_eq(info_of(c, owner).up, 1);

	/* with a command of the other node that takes a second round (NOSCRIPT: loaded, sent again): the
	 * CLUSTERDOWN is still sent once (it was sent again then, as if its idle connection had died) */
	y = test_cluster_connect_node(&C, other);
	freeReplyObject(test_cmd(y, "SCRIPT FLUSH"));
	ck_assert_int_eq(rbatch_cmd(b, 2, argv, lens), 0);
	key_in_slot(16000, tag, sizeof(tag));
	queue_state(b, tag);
	trips = rconn_round_trips(c);
	ck_assert_int_eq(rbatch_run(c, b), 0);
	ck_assert_msg(reply_is_nodedown(rbatch_reply(b, 0)), "%s", rbatch_reply(b, 0)->str);
	ck_assert_msg(strstr(rbatch_reply(b, 0)->str, "CLUSTERDOWN") != NULL, "%s", rbatch_reply(b, 0)->str);
	ck_assert_int_eq(rbatch_reply(b, 1)->type, REDIS_REPLY_ARRAY);
	ck_assert_uint_eq(rconn_round_trips(c) - trips, 3); /* both nodes, then the other again */
	ck_assert_uint_eq(info_of(c, owner).tryagain, 2);

	/* back as it was */
	freeReplyObject(test_cmd(x, "CLUSTER ADDSLOTS 0"));
	ck_wait_until(state_is(owner, "ok"), 5000, "node %d is not at cluster_state:ok", owner);
	ck_assert_int_ge(test_cluster_wait_ok(&C, 10000), 0);
	redisFree(x);
	redisFree(y);
	rbatch_free(b);
	rconn_free(c);
}
END_TEST

START_TEST(test_script_load_refused)
{
	struct rconn *c = conn_via(1);
	struct rbatch *b = rbatch_new();
	int slot = 10, owner = test_cluster_node_for_slot(&C, slot);
	char key[32];
	uint64_t trips, connects;
	redisContext *x = test_cluster_connect_node(&C, owner);
	const redisReply *r;

	key_in_slot(slot, key, sizeof(key));
	queue_state(b, key);
	ck_assert_int_eq(rconn_ensure(c), 0); /* the scripts are loaded on every primary */
	connects = rconn_connects(c);
	/* the script cache flushed, and SCRIPT LOAD taken from the layer's user (every connection of it) */
	freeReplyObject(test_cmd(x, "SCRIPT FLUSH"));
	{
		redisReply *a = test_cmd(x, "ACL SETUSER default -script|load");

		ck_assert_msg(a->type == REDIS_REPLY_STATUS, "%s", a->type == REDIS_REPLY_ERROR ? a->str : "?");
		freeReplyObject(a);
	}
	trips = rconn_round_trips(c);
	/* NOSCRIPT, then the SCRIPT LOAD refused: its refusal is the reply (it was -EIO: "Redis unavailable") */
	ck_assert_int_eq(rbatch_run(c, b), 0);
	r = rbatch_reply(b, 0);
	ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
	ck_assert_msg(strncmp(r->str, "NOPERM ", 7) == 0, "%s", r->str);
	ck_assert_str_eq(reply_describe(r), "NOPERM: the ACL user may not run a command sluice needs");
	ck_assert_int_eq(reply_errno(r), -EBADMSG);
	ck_assert_uint_eq(rconn_round_trips(c) - trips, 1);
	ck_assert_int_eq(rconn_is_up(c), 1);
	ck_assert_uint_eq(rconn_connects(c), connects);
	/* allowed again: NOSCRIPT, loaded, answered */
	freeReplyObject(test_cmd(x, "ACL SETUSER default +script|load"));
	ck_assert_int_eq(rbatch_run(c, b), 0);
	r = rbatch_reply(b, 0);
	ck_assert_msg(r->type == REDIS_REPLY_ARRAY, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "not an array");
	redisFree(x);
	rbatch_free(b);
	rconn_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_errors");
	TCase *tc = tcase_create("errors");

	tcase_add_unchecked_fixture(tc, cluster_start, cluster_stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_clusterdown_is_not_sent_again);
	tcase_add_test(tc, test_script_load_refused);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}

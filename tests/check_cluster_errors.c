/*
 * What callers of the one Redis layer (core/rconn.h) get when a real Redis
 * Cluster of 2 primaries (tests/harness_cluster.h) answers something other
 * than an answer:
 * - CLUSTERDOWN (a node whose cluster lacks a slot): the command fails as a
 *   node down, at once, and is not sent again as one whose idle connection
 *   died would be;
 * - a SCRIPT LOAD refused after NOSCRIPT (an ACL without it): the refusal is
 *   the command's reply, sent once, and the connection stays;
 * - a slot whose two nodes each say the other owns it (MOVED both ways, for
 *   as long as nobody fixes it): after the layer's rounds the MOVED is the
 *   reply, each one counted; callers see a slot being moved (-EBUSY, named),
 *   not a refusal (-EBADMSG, "Redis refused");
 * - a slot being migrated under the worker (ASK to its shard script): the
 *   shard is put off, not failed, and drained exactly once the slot moved.
 * One cluster for the suite; each test leaves it as it found it.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/layout.h"
#include "core/pathstate.h"
#include "core/rconn.h"
#include "core/reply.h"
#include "core/rules.h"
#include "core/shard.h"
#include "tests/harness.h"
#include "tests/harness_cluster.h"
#include "worker/worker.h"

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
	return test_cluster_rconn(&C, i, TIMEOUT_MS);
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
	/* a new connection to that node cannot load its scripts (all sent in one round trip): it fails, naming the first */
	{
		struct rconn *c2 = conn_via(owner);
		char want[128];

		ck_assert_int_eq(rconn_ensure(c2), -EIO);
		snprintf(want, sizeof(want), "SCRIPT LOAD %s: NOPERM ", script_name((enum script_id)0));
		ck_assert_msg(strstr(rconn_errstr(c2), want) != NULL, "%s", rconn_errstr(c2));
		ck_assert_int_eq(rconn_is_up(c2), 0);
		rconn_free(c2);
	}
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

/* node[i]'s id (CLUSTER MYID) */
static const char *id_of(int i)
{
	return C.node[i].id;
}

START_TEST(test_moved_both_ways)
{
	struct rconn *c = conn_via(0);
	const unsigned k = 0, slot = shard_slot(k); /* shard 0's slot, 13907 */
	int owner = test_cluster_node_for_slot(&C, (int)slot), other = 1 - owner;
	char key[16];
	const char *argv[2] = { "GET", key };
	size_t lens[2] = { 3, 0 };
	struct rconn_node_info a, b;
	uint64_t trips, moved;
	struct layout *l;
	size_t nl;
	struct ruleset rules = { 0 };
	struct walk_pos pos;
	cJSON *out = cJSON_CreateArray(), *skipped = NULL;
	redisContext *x = test_cluster_connect_node(&C, owner);
	redisReply *r;

	ck_assert_int_ge(owner, 0);
	lens[1] = (size_t)snprintf(key, sizeof(key), "{%u}", k);
	ck_assert_int_eq(rconn_ensure(c), 0);
	/* the owner says the other node has the slot; the other still says the owner has it */
	r = test_cmd(x, "CLUSTER SETSLOT %u NODE %s", slot, id_of(other));
	ck_assert_msg(r->type == REDIS_REPLY_STATUS, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "?");
	freeReplyObject(r);

	/* one GET: MOVED in each of the layer's 6 rounds, each counted, the last one the reply */
	a = info_of(c, owner), b = info_of(c, other);
	moved = a.moved + b.moved;
	trips = rconn_round_trips(c);
	ck_assert_int_eq(rconn_command(c, 2, argv, lens, &r), 0);
	ck_assert_msg(r->type == REDIS_REPLY_ERROR && strncmp(r->str, "MOVED ", 6) == 0, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "not an error");
	ck_assert_int_eq(reply_is_moving(r), 1);
	ck_assert_int_eq(reply_errno(r), -EBUSY); /* was -EBADMSG: "Redis refused the command" */
	freeReplyObject(r);
	ck_assert_uint_eq(rconn_round_trips(c) - trips, 6);
	a = info_of(c, owner), b = info_of(c, other);
	ck_assert_uint_eq(a.moved + b.moved - moved, 6);
	ck_assert_msg(strncmp(rconn_strerror(c, -EBUSY), "MOVED: slot map changed (the slot lives on another node now) (",
			      62) == 0, "%s", rconn_strerror(c, -EBUSY));

	/* the listing, which starts with shard 0: it stops there (-EBUSY, try again), where it listed shard 0's
	 * due index among the registries of another type and went on past it */
	ck_assert_int_eq(layouts_default("sluice:", &l, &nl), 0);
	walk_start(&pos);
	ck_assert_int_eq(pathstate_page(c, l, nl, &rules, NULL, 100, 64, &pos, out, &skipped), -EBUSY);
	ck_assert_ptr_null(skipped);
	ck_assert_int_eq(cJSON_GetArraySize(out), 0);

	/* back as it was: the owner claims the slot again */
	freeReplyObject(test_cmd(x, "CLUSTER SETSLOT %u NODE %s", slot, id_of(owner)));
	ck_assert_int_ge(test_cluster_wait_ok(&C, 10000), 0);
	ck_assert_int_eq(rconn_command(c, 2, argv, lens, &r), 0);
	ck_assert_int_eq(r->type, REDIS_REPLY_NIL);
	freeReplyObject(r);
	cJSON_Delete(out);
	layouts_free(l, nl);
	redisFree(x);
	rconn_free(c);
}
END_TEST

/* The n-th path of the form "<stem><i>" in shard k, into buf. */
static const char *path_in_shard(char *buf, size_t cap, const char *stem, unsigned k, int n)
{
	for (int i = 0;; i++) {
		snprintf(buf, cap, "%s%d", stem, i);
		if (shard_of(buf, strlen(buf)) == k && n-- == 0)
			return buf;
	}
}

/* Entries in path p's leaky bucket, wherever its slot is now. */
static long long level(const char *p)
{
	redisReply *r = test_cluster_cmd(&C, test_lb_key(p), "ZCARD %s", test_lb_key(p));
	long long v;

	ck_assert_msg(r->type == REDIS_REPLY_INTEGER, "ZCARD: %s", r->type == REDIS_REPLY_ERROR ? r->str : "?");
	v = r->integer;
	freeReplyObject(r);
	return v;
}

START_TEST(test_worker_during_a_migration)
{
	struct layout *l;
	size_t nl;
	struct redis_target t;
	struct worker_config wc = { .timeout_ms = TIMEOUT_MS, .prefix = "sluice:", .batch_size = 100 };
	struct worker_result res;
	struct worker_status st;
	struct worker *w;
	char url[64], path[32];
	const unsigned k = 517;
	const int slot = (int)shard_slot(k);
	int src = test_cluster_node_for_slot(&C, slot), dst = 1 - src;
	const long long t0 = 1000000, S = test_skew_ms();
	uint64_t ask = 0;
	redisContext *x = test_cluster_connect_node(&C, src);

	path_in_shard(path, sizeof(path), "/api/m", k, 0);
	/* 5 entries in a leaky bucket of capacity 10 leaking 1/s, at t0 (virtual: kept from expiring) */
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(test_acquire(x, TEST_EVAL, "leaky_bucket", path, t0, "10", "1", NULL), 1);
	freeReplyObject(test_cmd(x, "PEXPIRE %s 600000", test_lb_key(path)));
	freeReplyObject(test_cmd(x, "PEXPIRE %s 600000", test_lb_meta(path)));
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", C.node[0].srv.port);
	ck_assert_int_eq(redis_url_parse(url, &t, NULL), 0);
	ck_assert_int_eq(layouts_default("sluice:", &l, &nl), 0);
	wc.redis = &t;
	wc.layouts = l;
	wc.nlayouts = nl;
	ck_assert_ptr_nonnull(w = worker_new(&wc));
	/* a sweep at t0 + 1 s: one entry leaked (the drain acts SKEW_MS behind Redis time) */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t0 + 1000 + S, &res), 0);
	ck_assert_uint_eq(res.entries, 1);
	ck_assert_int_eq(level(path), 4);

	/* the slot being migrated, every key of it on the importing node: the source answers ASK */
	test_cluster_migrate_begin(&C, slot, dst);
	ck_assert_int_gt(test_cluster_migrate_keys(&C, slot, 100, NULL, 0), 0);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t0 + 2000 + S, &res), 0); /* was -EBADMSG */
	ck_assert_uint_eq(res.entries, 0);
	ck_assert_uint_eq(res.failed, 0);
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].failing, 0);
	ck_assert_str_eq(st.job[WORKER_DRAIN].last_error, "");
	ck_assert_uint_eq(st.job[WORKER_DRAIN].errors, 0);
	for (size_t i = 0; i < st.nnodes; i++) {
		char want[32];

		snprintf(want, sizeof(want), "127.0.0.1:%d", C.node[src].srv.port);
		if (!strcmp(st.node[i].addr, want))
			ask = st.node[i].ask;
	}
	ck_assert_uint_eq(ask, 1); /* the shard's call, counted as a redirection */
	ck_assert_int_eq(level(path), 4);

	/* moved: the next sweep follows the MOVED and drains what leaked since t0 + 1 s, exactly */
	test_cluster_migrate_finish(&C, slot);
	ck_assert_int_ge(test_cluster_wait_ok(&C, 10000), 0);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t0 + 3000 + S, &res), 0);
	ck_assert_uint_eq(res.entries, 2);
	ck_assert_int_eq(level(path), 2);
	worker_status(w, &st);
	ck_assert_int_eq(st.job[WORKER_DRAIN].failing, 0);

	ck_assert_int_gt(test_cluster_move_slot(&C, slot, src), 0); /* back as it was */
	worker_free(w);
	layouts_free(l, nl);
	redis_target_clear(&t);
	redisFree(x);
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
	tcase_add_test(tc, test_moved_both_ways);
	tcase_add_test(tc, test_worker_during_a_migration);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}

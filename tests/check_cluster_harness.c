/*
 * The cluster harness (tests/harness_cluster.h) does what it says, so that
 * the suites of the daemon's cluster layer can stand on it:
 *   - a cluster of 3 primaries and 1 replica each: every node says
 *     cluster_state:ok, the 16384 slots are covered, node[] is in the
 *     documented order, the URL names a primary;
 *   - a key set on the slot's owner is read there, and another primary
 *     answers MOVED naming it; test_cluster_cmd follows MOVED (a map gone
 *     stale behind its back) and ASK (a key migrated, its slot not yet);
 *   - test_cluster_move_slot moves a slot's keys, test_cluster_kill and
 *     test_cluster_wait_failover see a replica take over;
 *   - a cluster of 1 primary (made by hand, not by redis-cli);
 *   - nothing is left: after test_cluster_stop no node runs (kill(pid, 0)
 *     fails) and the directories are gone; a process that started a cluster
 *     and was killed with SIGKILL leaves no node either (PDEATHSIG).
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/harness_cluster.h"

static struct test_cluster cl;

static void cluster_start(void)
{
	if (test_cluster_start(&cl, 3, 1) != 0)
		abort(); /* nothing could run; the harness said why on stderr */
	fprintf(stderr, "check_cluster_harness: 3 primaries and 3 replicas started in %lld ms\n", cl.start_ms);
}

static void cluster_stop(void)
{
	test_cluster_stop(&cl);
}

/* Field `name` of an INFO-style reply ("name:value\r\n"), as an integer; -1 when absent. */
static long long info_field(const char *text, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "%s:", name);
	p = strstr(text, key);
	return p ? atoll(p + strlen(key)) : -1;
}

START_TEST(test_every_node_is_ok)
{
	ck_assert_int_eq(cl.n, 6);
	ck_assert_int_eq(cl.primaries, 3);
	for (int i = 0; i < cl.n; i++) {
		redisContext *r = test_cluster_connect_node(&cl, i);
		redisReply *info = test_cmd(r, "CLUSTER INFO"), *role;

		ck_assert_msg(info->type == REDIS_REPLY_STRING && strstr(info->str, "cluster_state:ok"),
			      "node %d: %s", i, info->type == REDIS_REPLY_STRING ? info->str : "no CLUSTER INFO");
		ck_assert_int_eq(info_field(info->str, "cluster_slots_assigned"), TEST_CLUSTER_SLOTS);
		ck_assert_int_eq(info_field(info->str, "cluster_slots_ok"), TEST_CLUSTER_SLOTS);
		ck_assert_int_eq(info_field(info->str, "cluster_known_nodes"), 6);
		ck_assert_int_eq(info_field(info->str, "cluster_size"), 3);
		freeReplyObject(info);
		/* node[0..3) are the primaries, then each one's replica */
		role = test_cmd(r, "ROLE");
		ck_assert_str_eq(role->element[0]->str, i < 3 ? "master" : "slave");
		if (i >= 3) {
			ck_assert_int_eq(cl.node[i].primary, i - 3);
			ck_assert_int_eq(role->element[2]->integer, cl.node[i - 3].srv.port);
		} else {
			ck_assert_int_eq(cl.node[i].primary, -1);
		}
		freeReplyObject(role);
		redisFree(r);
	}
}
END_TEST

START_TEST(test_slots_covered)
{
	/* every node's CLUSTER SLOTS: three ranges over 0..16383, each primary with its replica */
	for (int i = 0; i < cl.n; i++) {
		redisContext *r = test_cluster_connect_node(&cl, i);
		redisReply *s = test_cmd(r, "CLUSTER SLOTS");
		long long covered = 0;

		ck_assert_int_eq(s->type, REDIS_REPLY_ARRAY);
		ck_assert_uint_eq(s->elements, 3);
		for (size_t k = 0; k < s->elements; k++) {
			const redisReply *e = s->element[k];

			covered += e->element[1]->integer - e->element[0]->integer + 1;
			ck_assert_uint_eq(e->elements, 4); /* range, primary, one replica */
		}
		ck_assert_int_eq(covered, TEST_CLUSTER_SLOTS);
		freeReplyObject(s);
		redisFree(r);
	}
	/* node[0] has slot 0, node[2] slot 16383, in slot order */
	ck_assert_int_eq(test_cluster_node_for_slot(&cl, 0), 0);
	ck_assert_int_eq(test_cluster_node_for_slot(&cl, TEST_CLUSTER_SLOTS - 1), 2);
	ck_assert_int_lt(test_cluster_node_for_slot(&cl, 5000), test_cluster_node_for_slot(&cl, 12000));
	for (int s = 0; s < TEST_CLUSTER_SLOTS; s++)
		ck_assert_msg(cl.owner_of[s] >= 0 && cl.owner_of[s] < 3, "slot %d: owner %d", s, cl.owner_of[s]);
}
END_TEST

START_TEST(test_url_names_a_primary)
{
	char url[TEST_CLUSTER_URL_MAX], want[TEST_CLUSTER_URL_MAX];

	snprintf(want, sizeof(want), "redis://127.0.0.1:%d", cl.node[0].srv.port);
	ck_assert_str_eq(test_cluster_url(&cl, url), want);
}
END_TEST

START_TEST(test_key_on_its_owner)
{
	const char *key = "sluice:{839}:leaky_bucket:/api/users";
	int slot = test_cluster_keyslot(key, strlen(key)), owner = test_cluster_node_for_slot(&cl, slot);
	redisContext *r = test_cluster_connect_slot(&cl, slot), *other;
	redisReply *moved;
	char want[64];

	ck_assert_int_eq(test_cmd_int(r, "CLUSTER KEYSLOT %s", key), slot);
	ck_assert_int_eq(slot, test_cluster_keyslot("{839}", 5));
	test_check_cmd(__FILE__, __LINE__, r, "\"OK\"", "SET %s 42", key);
	test_check_cmd(__FILE__, __LINE__, r, "\"42\"", "GET %s", key);
	/* another primary sends the client to the owner */
	other = test_cluster_connect_node(&cl, (owner + 1) % 3);
	moved = test_cmd(other, "GET %s", key);
	snprintf(want, sizeof(want), "MOVED %d 127.0.0.1:%d", slot, cl.node[owner].srv.port);
	ck_assert_msg(moved->type == REDIS_REPLY_ERROR && strcmp(moved->str, want) == 0, "got %s, want %s",
		      moved->type == REDIS_REPLY_ERROR ? moved->str : "no error", want);
	freeReplyObject(moved);
	/* test_cluster_cmd routes by the key; test_cluster_connect_key too */
	test_check_cmd(__FILE__, __LINE__, r, "1", "EXISTS %s", key);
	moved = test_cluster_cmd(&cl, key, "GET %s", key);
	ck_assert_str_eq(moved->str, "42");
	freeReplyObject(moved);
	redisFree(other);
	redisFree(r);
	r = test_cluster_connect_key(&cl, key);
	test_check_cmd(__FILE__, __LINE__, r, "\"42\"", "GET %s", key);
	redisFree(r);
}
END_TEST

/* test_cluster_cmd follows a MOVED once: the map it routes by has gone stale behind its back. */
START_TEST(test_cmd_follows_moved)
{
	const char *key = "{7}moved";
	int slot = test_cluster_keyslot(key, strlen(key)), owner = test_cluster_node_for_slot(&cl, slot);
	redisReply *r;

	freeReplyObject(test_cluster_cmd(&cl, key, "SET %s v", key));
	cl.owner_of[slot] = (signed char)((owner + 1) % 3); /* stale */
	r = test_cluster_cmd(&cl, key, "GET %s", key);
	ck_assert_msg(r->type == REDIS_REPLY_STRING && strcmp(r->str, "v") == 0, "GET after MOVED: type %d", r->type);
	freeReplyObject(r);
	ck_assert_int_eq(cl.owner_of[slot], owner); /* read again */
}
END_TEST

/* Resharding in steps: a migrated key is served after ASK, the slot's other keys by its owner, then all moved. */
START_TEST(test_migrate_steps_and_ask)
{
	const char *a = "{mig}a", *b = "{mig}b";
	const char *const keys[] = { a };
	int slot = test_cluster_keyslot(a, strlen(a)), src = test_cluster_node_for_slot(&cl, slot);
	int dst = (src + 1) % 3;
	redisContext *s;
	redisReply *r;

	freeReplyObject(test_cluster_cmd(&cl, a, "SET %s 1", a));
	freeReplyObject(test_cluster_cmd(&cl, b, "SET %s 2", b));
	test_cluster_migrate_begin(&cl, slot, dst);
	ck_assert_int_eq(test_cluster_migrate_keys(&cl, slot, 10, keys, 1), 1);
	/* the source has b, and sends a client of a to the target */
	s = test_cluster_connect_node(&cl, src);
	r = test_cmd(s, "GET %s", a);
	ck_assert_msg(r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ASK ", 4) == 0, "GET of a moved key: %s",
		      r->type == REDIS_REPLY_ERROR ? r->str : "not ASK");
	freeReplyObject(r);
	test_check_cmd(__FILE__, __LINE__, s, "\"2\"", "GET %s", b);
	r = test_cluster_cmd(&cl, a, "GET %s", a); /* ASK, then ASKING there */
	ck_assert_msg(r->type == REDIS_REPLY_STRING && strcmp(r->str, "1") == 0, "GET after ASK: type %d", r->type);
	freeReplyObject(r);
	ck_assert_int_eq(test_cluster_migrate_keys(&cl, slot, 10, NULL, 0), 1); /* b */
	test_cluster_migrate_finish(&cl, slot);
	ck_assert_int_eq(test_cluster_node_for_slot(&cl, slot), dst);
	ck_assert_int_eq(test_cmd_int(s, "CLUSTER COUNTKEYSINSLOT %d", slot), 0);
	redisFree(s);
	ck_wait_until(test_cluster_wait_ok(&cl, 1000) >= 0, 10000, "the nodes do not agree on slot %d", slot);
	/* and back, in one call, with 300 keys */
	for (int i = 0; i < 300; i++)
		freeReplyObject(test_cluster_cmd(&cl, a, "SET {mig}k%d %d", i, i));
	ck_assert_int_eq(test_cluster_move_slot(&cl, slot, src), 302);
	ck_assert_int_eq(test_cluster_node_for_slot(&cl, slot), src);
	s = test_cluster_connect_slot(&cl, slot);
	test_check_cmd(__FILE__, __LINE__, s, "\"299\"", "GET {mig}k299");
	test_check_cmd(__FILE__, __LINE__, s, "\"1\"", "GET %s", a);
	redisFree(s);
}
END_TEST

/* Last of its case: it leaves node[2] dead and its replica in charge. */
START_TEST(test_failover)
{
	const char *key = "{x}failover"; /* slot 16287: node[2]'s */
	int slot = test_cluster_keyslot(key, strlen(key)), now;
	long long t;
	redisReply *r;

	ck_assert_int_eq(test_cluster_node_for_slot(&cl, slot), 2);
	freeReplyObject(test_cluster_cmd(&cl, key, "SET %s kept", key));
	{
		redisContext *p = test_cluster_connect_node(&cl, 2);

		ck_assert_int_eq(test_cmd_int(p, "WAIT 1 2000"), 1);
		redisFree(p);
	}
	t = test_now_ms();
	test_cluster_kill(&cl, 2, SIGKILL);
	ck_assert_int_eq(cl.node[2].srv.pid, 0);
	now = test_cluster_wait_failover(&cl, 2, 15000);
	fprintf(stderr, "check_cluster_harness: failover of node 2 to node %d in %lld ms\n", now, test_now_ms() - t);
	ck_assert_int_eq(now, 5); /* its replica */
	r = test_cluster_cmd(&cl, key, "GET %s", key);
	ck_assert_msg(r->type == REDIS_REPLY_STRING && strcmp(r->str, "kept") == 0, "GET on the new primary: type %d",
		      r->type);
	freeReplyObject(r);
}
END_TEST

/* One primary, no replica: made by hand (redis-cli wants 3); stopped, nothing is left. */
START_TEST(test_one_primary_and_stop)
{
	struct test_cluster one;
	pid_t pid;
	char dir[sizeof(one.node[0].srv.dir)];
	redisContext *r;

	ck_assert_int_eq(test_cluster_start(&one, 1, 0), 0);
	ck_assert_int_eq(one.n, 1);
	ck_assert_int_eq(test_cluster_node_for_slot(&one, 0), 0);
	ck_assert_int_eq(test_cluster_node_for_slot(&one, TEST_CLUSTER_SLOTS - 1), 0);
	r = test_cluster_connect_slot(&one, 1234);
	test_check_cmd(__FILE__, __LINE__, r, "\"OK\"", "SET a 1");
	redisFree(r);
	pid = one.node[0].srv.pid;
	memcpy(dir, one.node[0].srv.dir, sizeof(dir));
	test_cluster_stop(&one);
	ck_assert_msg(kill(pid, 0) == -1 && errno == ESRCH, "node pid %d is still there", (int)pid);
	ck_assert_msg(access(dir, F_OK) == -1, "%s is still there", dir);
	test_cluster_stop(&one); /* idempotent */
}
END_TEST

START_TEST(test_stop_leaves_nothing)
{
	struct test_cluster c3;
	pid_t pids[TEST_CLUSTER_MAX_NODES];
	char dirs[TEST_CLUSTER_MAX_NODES][sizeof(c3.node[0].srv.dir)];
	int n;
	long long t;

	ck_assert_int_eq(test_cluster_start(&c3, 3, 0), 0);
	n = c3.n;
	ck_assert_int_eq(n, 3);
	for (int i = 0; i < n; i++) {
		pids[i] = c3.node[i].srv.pid;
		memcpy(dirs[i], c3.node[i].srv.dir, sizeof(dirs[i]));
		ck_assert(test_pid_running(pids[i]));
	}
	t = test_now_ms();
	test_cluster_stop(&c3);
	fprintf(stderr, "check_cluster_harness: 3 primaries started in %lld ms, stopped in %lld ms\n", c3.start_ms,
		test_now_ms() - t);
	for (int i = 0; i < n; i++) {
		ck_assert_msg(kill(pids[i], 0) == -1 && errno == ESRCH, "node pid %d is still there", (int)pids[i]);
		ck_assert_msg(access(dirs[i], F_OK) == -1, "%s is still there", dirs[i]);
	}
}
END_TEST

/* A process that started a cluster is killed with SIGKILL: its nodes die with it (PDEATHSIG). */
START_TEST(test_killed_starter_leaves_nothing)
{
	int fd[2];
	pid_t kid, pids[3];
	ssize_t got;

	ck_assert_int_eq(pipe(fd), 0);
	kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0) {
		struct test_cluster k;

		close(fd[0]);
		if (test_cluster_start(&k, 3, 0) != 0)
			_exit(1);
		for (int i = 0; i < 3; i++)
			pids[i] = k.node[i].srv.pid;
		if (write(fd[1], pids, sizeof(pids)) != (ssize_t)sizeof(pids))
			_exit(1);
		pause();
		_exit(0);
	}
	close(fd[1]);
	got = read(fd[0], pids, sizeof(pids));
	close(fd[0]);
	ck_assert_int_eq(got, (ssize_t)sizeof(pids));
	for (int i = 0; i < 3; i++)
		ck_assert(test_pid_running(pids[i]));
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	for (int i = 0; i < 3; i++)
		ck_wait_until(!test_pid_running(pids[i]), 5000, "node pid %d outlived its starter", (int)pids[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_harness");
	TCase *tc = tcase_create("cluster");

	tcase_add_unchecked_fixture(tc, cluster_start, cluster_stop);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_every_node_is_ok);
	tcase_add_test(tc, test_slots_covered);
	tcase_add_test(tc, test_url_names_a_primary);
	tcase_add_test(tc, test_key_on_its_owner);
	tcase_add_test(tc, test_cmd_follows_moved);
	tcase_add_test(tc, test_migrate_steps_and_ask);
	tcase_add_test(tc, test_failover); /* last: it leaves node[2] dead */
	suite_add_tcase(s, tc);

	tc = tcase_create("lifetime");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_one_primary_and_stop);
	tcase_add_test(tc, test_stop_leaves_nothing);
	tcase_add_test(tc, test_killed_starter_leaves_nothing);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}

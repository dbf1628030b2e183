/*
 * Shard leases (worker/lease.h, lua/lease.lua, lua/daemons.lua, the fence
 * of lua/lib/due.lua) against a real redis-server: daemons in one process,
 * each a struct lease on its own connection, stepped by hand at explicit
 * CLOCK_MONOTONIC times, and workers with leases whose shard scripts a
 * lease held by another daemon refuses.  Exact values: shards owned,
 * leases acquired, refused, lost, fenced, released, entries drained.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/layout.h"
#include "core/rules.h"
#include "core/rulestore.h"
#include "core/shard.h"
#include "tests/harness.h"
#include "worker/lease.h"
#include "worker/members.h"
#include "worker/worker.h"

static struct test_redis R;
static redisContext *C;
static struct redis_target T;
static struct layout *L;
static size_t NL;

static void suite_up(void)
{
	ck_assert_int_eq(test_redis_start(&R), 0);
	C = test_redis_connect(&R);
	ck_assert_int_eq(redis_url_parse(R.url, &T, NULL), 0);
	ck_assert_int_eq(layouts_default("sluice:", &L, &NL), 0);
}

static void suite_down(void)
{
	layouts_free(L, NL);
	redis_target_clear(&T);
	if (C)
		redisFree(C);
	test_redis_stop(&R);
}

static void flush(void)
{
	test_redis_flush(C);
}

/* One daemon's leases, with its own connection and pipeline. */
struct daemon {
	struct lease *l;
	struct rconn *c;
	struct rbatch *b;
};

static void daemon_up(struct daemon *d, const char *id, int64_t ttl_ms)
{
	d->l = lease_new(id, "sluice:", ttl_ms);
	d->c = rconn_new(&T, 1000);
	d->b = rbatch_new();
	ck_assert_ptr_nonnull(d->l);
	ck_assert_ptr_nonnull(d->c);
	ck_assert_ptr_nonnull(d->b);
}

static void daemon_down(struct daemon *d)
{
	lease_free(d->l);
	rconn_free(d->c);
	rbatch_free(d->b);
}

static size_t owned(const struct daemon *d)
{
	size_t n = 0;

	for (unsigned k = 0; k < SHARD_COUNT; k++)
		n += (size_t)lease_holds(d->l, k);
	return n;
}

static struct worker_lease_status status(const struct daemon *d)
{
	struct worker_lease_status s;

	lease_status(d->l, &s);
	return s;
}

/* The id part of shard k's lease key, "" when none holds it. */
static const char *holder(unsigned k)
{
	static char id[80];
	redisReply *r = test_cmd(C, "GET sluice:{%u}:lease", k);
	char *colon;

	id[0] = '\0';
	if (r->type == REDIS_REPLY_STRING) {
		snprintf(id, sizeof(id), "%s", r->str);
		if ((colon = strrchr(id, ':')))
			*colon = '\0';
	}
	freeReplyObject(r);
	return id;
}

/* Every daemon of `d` steps once at `now_us`, in turn; all succeed. */
static void step_all(struct daemon *d, size_t n, int64_t now_us)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(lease_step(d[i].l, d[i].c, d[i].b, now_us), 0);
}

/* A daemon alone takes every shard at its first step; the keys hold its string, with the TTL. */
START_TEST(alone_owns_all)
{
	struct daemon d;
	struct worker_lease_status s;
	int64_t t = clock_mono_us();
	long long pttl;

	daemon_up(&d, "solo", 2000);
	step_all(&d, 1, t);
	ck_assert_uint_eq(owned(&d), SHARD_COUNT);
	s = status(&d);
	ck_assert_uint_eq(s.acquired, SHARD_COUNT);
	ck_assert_uint_eq(s.refused, 0);
	ck_assert_uint_eq(s.live, 1);
	ck_assert_uint_eq(s.npeers, 1);
	ck_assert_str_eq(s.peer[0].id, "solo");
	ck_assert_str_eq(holder(0), "solo");
	ck_assert_str_eq(holder(1023), "solo");
	pttl = test_cmd_int(C, "PTTL sluice:{517}:lease");
	ck_assert_int_gt(pttl, 1500);
	ck_assert_int_le(pttl, 2000);
	/* the heartbeat: one member, scored at Redis TIME */
	ck_assert_int_eq(test_cmd_int(C, "ZCARD sluice:daemons"), 1);
	{
		redisReply *z = test_cmd(C, "ZSCORE sluice:daemons solo");

		ck_assert_int_eq(z->type, REDIS_REPLY_STRING);
		ck_assert_int_le(llabs(atoll(z->str) - test_server_ms(C)), 1000);
		freeReplyObject(z);
	}
	/* a step a third of the TTL later renews every lease: the TTL is back near 2000 */
	test_sleep_ms(700);
	step_all(&d, 1, t + 700000);
	ck_assert_int_gt(test_cmd_int(C, "PTTL sluice:{517}:lease"), 1500); /* not renewed: <= 1300 */
	ck_assert_uint_eq(status(&d).acquired, SHARD_COUNT); /* renewed, not taken again */
	daemon_down(&d);
}
END_TEST

/*
 * Three daemons: each ends with about a third (250..430), every shard held
 * by exactly the daemon the others agree on, no shard twice.  The shards
 * the first daemon took and now belong to the others were handed over.
 */
START_TEST(three_share)
{
	struct daemon d[3];
	const char *ids[3] = { "d1", "d2", "d3" };
	int64_t t = clock_mono_us();
	size_t sum = 0;

	for (int i = 0; i < 3; i++)
		daemon_up(&d[i], ids[i], 2000);
	step_all(d, 1, t);            /* d1 first alone: all 1024; then d2, d3 see three, get refused */
	step_all(d, 3, t + 1000);     /* d1 hands over; d2, d3 try again later (refused: ttl/4) */
	step_all(d, 3, t + 600000);   /* they take what was handed over */
	for (int i = 0; i < 3; i++) {
		size_t n = owned(&d[i]);

		ck_assert_msg(n >= 250 && n <= 430, "%s owns %zu shards", ids[i], n);
		ck_assert_uint_eq(status(&d[i]).live, 3);
		sum += n;
	}
	ck_assert_uint_eq(sum, SHARD_COUNT);
	for (unsigned k = 0; k < SHARD_COUNT; k++) {
		int holders = 0;

		for (int i = 0; i < 3; i++)
			if (lease_holds(d[i].l, k)) {
				holders++;
				ck_assert_str_eq(holder(k), ids[i]);
			}
		ck_assert_int_eq(holders, 1);
	}
	ck_assert_uint_eq(status(&d[0]).released, SHARD_COUNT - owned(&d[0]));
	ck_assert_uint_eq(status(&d[1]).acquired, owned(&d[1]));
	for (int i = 0; i < 3; i++)
		daemon_down(&d[i]);
}
END_TEST

/*
 * Rendezvous moves only what it must: a fourth daemon takes about a quarter
 * and every shard that changed hands went to it; when one of four leaves
 * (releases), only its shards move.
 */
START_TEST(join_and_leave_move_little)
{
	struct daemon d[4];
	const char *ids[4] = { "d1", "d2", "d3", "d4" };
	char before[SHARD_COUNT][8];
	int64_t t = clock_mono_us();
	size_t moved = 0, n4;

	for (int i = 0; i < 4; i++)
		daemon_up(&d[i], ids[i], 2000);
	step_all(d, 3, t);
	step_all(d, 3, t + 1000);
	step_all(d, 3, t + 600000);
	for (unsigned k = 0; k < SHARD_COUNT; k++)
		snprintf(before[k], sizeof(before[k]), "%s", holder(k));
	/* d4 joins */
	step_all(d, 4, t + 700000);
	step_all(d, 4, t + 1300000);
	n4 = owned(&d[3]);
	ck_assert_msg(n4 >= 180 && n4 <= 340, "d4 owns %zu", n4);
	for (unsigned k = 0; k < SHARD_COUNT; k++) {
		const char *now = holder(k);

		if (strcmp(now, before[k])) {
			ck_assert_str_eq(now, "d4");
			moved++;
		}
	}
	ck_assert_uint_eq(moved, n4);
	/* d2 leaves at once: its shards go to the others, nothing else moves */
	for (unsigned k = 0; k < SHARD_COUNT; k++)
		snprintf(before[k], sizeof(before[k]), "%s", holder(k));
	ck_assert_int_eq(lease_release_all(d[1].l, d[1].c, d[1].b), 0);
	ck_assert_uint_eq(owned(&d[1]), 0);
	{
		redisReply *z = test_cmd(C, "ZSCORE sluice:daemons d2");

		ck_assert_int_eq(z->type, REDIS_REPLY_NIL); /* it left the set */
		freeReplyObject(z);
	}
	{
		struct daemon rest[3] = { d[0], d[2], d[3] };

		step_all(rest, 3, t + 1400000); /* one step: the released shards are free, taken at once */
		for (unsigned k = 0; k < SHARD_COUNT; k++) {
			const char *now = holder(k);

			ck_assert_msg(*now, "shard %u held by none one step after d2 left", k);
			if (strcmp(before[k], "d2"))
				ck_assert_str_eq(now, before[k]);
		}
	}
	for (int i = 0; i < 4; i++)
		daemon_down(&d[i]);
}
END_TEST

/*
 * A daemon that stops stepping (killed): its heartbeat goes stale after the
 * TTL, its leases run out with it, and the others take its shards at the
 * first step after (SET NX refused before, retried when the PTTL says).
 */
START_TEST(dead_daemon_taken_over)
{
	struct daemon d[2];
	int64_t t = clock_mono_us(), ttl_ms = 400;
	long long waited = 0;
	size_t nb;

	daemon_up(&d[0], "a", ttl_ms);
	daemon_up(&d[1], "b", ttl_ms);
	step_all(d, 2, t);
	step_all(d, 2, t + 1000);
	step_all(d, 2, t + 200000);
	ck_assert_uint_eq(owned(&d[0]) + owned(&d[1]), SHARD_COUNT);
	nb = owned(&d[1]);
	ck_assert_uint_gt(nb, 300);
	/* "b" stops; "a" steps every 50 ms until it holds everything */
	while (owned(&d[0]) < SHARD_COUNT && waited < 3000) {
		test_sleep_ms(50);
		waited += 50;
		ck_assert_int_eq(lease_step(d[0].l, d[0].c, d[0].b, t + 200000 + waited * 1000), 0);
	}
	ck_assert_uint_eq(owned(&d[0]), SHARD_COUNT);
	/* within the TTL (heartbeat stale, leases run out) plus a step or two */
	ck_assert_msg(waited <= ttl_ms + 150, "took %lld ms", waited);
	ck_assert_uint_eq(status(&d[0]).live, 1);
	/* "b", back, counts what it lost at its first step (its time ran out by its own clock) */
	ck_assert_int_eq(lease_step(d[1].l, d[1].c, d[1].b, t + 200000 + waited * 1000 + 1000), 0);
	ck_assert_uint_eq(status(&d[1]).lost, nb);
	ck_assert_uint_eq(owned(&d[1]), 0);
	daemon_down(&d[0]);
	daemon_down(&d[1]);
}
END_TEST

/* Entry i of a lease.lua reply: 1 when done, else 0 with the holder and PTTL (*holder: "" when none). */
static long long entry(const redisReply *r, size_t i, const char **holder, long long *pttl)
{
	const redisReply *e;

	ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
	ck_assert_uint_gt(r->elements, i);
	e = r->element[i];
	ck_assert_int_eq(e->type, REDIS_REPLY_ARRAY);
	ck_assert_int_eq(e->element[0]->type, REDIS_REPLY_INTEGER);
	if (e->element[0]->integer == 1) {
		/* {1}, or {1, what} when an acquire replaced a key no daemon writes */
		ck_assert_uint_le(e->elements, 2);
		if (holder)
			*holder = e->elements == 2 ? e->element[1]->str : "";
		return 1;
	}
	ck_assert_uint_eq(e->elements, 3);
	if (holder)
		*holder = e->element[1]->str;
	if (pttl)
		*pttl = e->element[2]->integer;
	return 0;
}

/* lease.lua refuses what is not the caller's and names the holder; one call takes many shards */
START_TEST(lease_script_contract)
{
	redisReply *r;
	const char *who;
	long long pttl;

	r = test_script(C, "lease", 1, "sluice:{7}:lease", "1000", "acquire", "x:1", NULL);
	ck_assert_int_eq(entry(r, 0, NULL, NULL), 1);
	freeReplyObject(r);
	r = test_script(C, "lease", 1, "sluice:{7}:lease", "1000", "acquire", "y:1", NULL);
	ck_assert_int_eq(entry(r, 0, &who, &pttl), 0);
	ck_assert_str_eq(who, "x:1");
	ck_assert_int_gt(pttl, 900);
	freeReplyObject(r);
	/* an acquire of the string the key holds already (the daemon's earlier acquire whose
	 * answer was lost, sent again with the same token): done, its TTL given again */
	test_sleep_ms(300);
	r = test_script(C, "lease", 1, "sluice:{7}:lease", "1000", "acquire", "x:1", NULL);
	ck_assert_int_eq(entry(r, 0, &who, NULL), 1);
	ck_assert_str_eq(who, "");
	freeReplyObject(r);
	ck_assert_int_gt(test_cmd_int(C, "PTTL sluice:{7}:lease"), 900); /* not given again: <= 700 */
	r = test_script(C, "lease", 1, "sluice:{7}:lease", "1000", "renew", "y:1", NULL);
	ck_assert_int_eq(entry(r, 0, NULL, NULL), 0);
	freeReplyObject(r);
	r = test_script(C, "lease", 1, "sluice:{7}:lease", "1000", "release", "y:1", NULL);
	ck_assert_int_eq(entry(r, 0, NULL, NULL), 0);
	freeReplyObject(r);
	ck_assert_str_eq(holder(7), "x");
	/* four shards in one call (a single Redis): each answered in order; a renew of a
	 * key of another type fails alone, an acquire replaces it (no daemon writes a hash
	 * there, nor a lease without a TTL: they would hold the shard for ever) */
	freeReplyObject(test_cmd(C, "HSET sluice:{9}:lease a b"));
	freeReplyObject(test_cmd(C, "HSET sluice:{10}:lease a b"));
	freeReplyObject(test_cmd(C, "SET sluice:{11}:lease ghost:1"));
	r = test_script(C, "lease", 4, "sluice:{7}:lease", "sluice:{8}:lease", "sluice:{9}:lease", "sluice:{10}:lease",
			"5000", "renew", "x:1", "acquire", "x:2", "renew", "x:3", "acquire", "x:4", NULL);
	ck_assert_uint_eq(r->elements, 4);
	ck_assert_int_eq(entry(r, 0, &who, NULL), 1);
	ck_assert_str_eq(who, "");
	ck_assert_int_eq(entry(r, 1, &who, NULL), 1);
	ck_assert_str_eq(who, "");
	ck_assert_int_eq(entry(r, 2, &who, &pttl), 0);
	ck_assert_msg(strncmp(who, "error: WRONGTYPE", 16) == 0, "holder %s", who);
	ck_assert_int_eq(entry(r, 3, &who, NULL), 1);
	ck_assert_str_eq(who, "a hash");
	freeReplyObject(r);
	ck_assert_str_eq(holder(10), "x");
	r = test_script(C, "lease", 1, "sluice:{11}:lease", "5000", "acquire", "x:5", NULL);
	ck_assert_int_eq(entry(r, 0, &who, NULL), 1);
	ck_assert_str_eq(who, "a string without a TTL");
	freeReplyObject(r);
	ck_assert_int_gt(test_cmd_int(C, "PTTL sluice:{11}:lease"), 4000);
	freeReplyObject(test_cmd(C, "DEL sluice:{9}:lease sluice:{10}:lease sluice:{11}:lease"));
	ck_assert_int_gt(test_cmd_int(C, "PTTL sluice:{7}:lease"), 4000); /* renewed to 5000 */
	ck_assert_str_eq(holder(8), "x");
	freeReplyObject(test_cmd(C, "DEL sluice:{9}:lease sluice:{8}:lease"));
	r = test_script(C, "lease", 1, "sluice:{7}:lease", "0", "release", "x:1", NULL);
	ck_assert_int_eq(entry(r, 0, NULL, NULL), 1);
	freeReplyObject(r);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS sluice:{7}:lease"), 0);
	/* bad input: an error reply, nothing written */
	test_check_error(__FILE__, __LINE__, test_script(C, "lease", 1, "sluice:{7}:lease", "0", "acquire", "x:1", NULL),
			 "ERR sluice: ARGV[1]");
	test_check_error(__FILE__, __LINE__, test_script(C, "lease", 1, "sluice:{7}:rules", "10", "acquire", "x:1", NULL),
			 "ERR sluice: KEYS[1]");
	test_check_error(__FILE__, __LINE__, test_script(C, "lease", 1, "sluice:{7}:lease", "10", "steal", "x:1", NULL),
			 "ERR sluice: ARGV[2]");
	test_check_error(__FILE__, __LINE__, test_script(C, "lease", 1, "sluice:{7}:lease", "10", "acquire", "", NULL),
			 "ERR sluice: ARGV[3]");
	test_check_error(__FILE__, __LINE__, test_script(C, "lease", 2, "sluice:{7}:lease", "sluice:{8}:lease", "10",
							 "acquire", "x:1", NULL),
			 "ERR sluice: lease takes");
	/* one valid key before a bad one: nothing done (the arguments are checked first) */
	test_check_error(__FILE__, __LINE__, test_script(C, "lease", 2, "sluice:{7}:lease", "sluice:{8}:lease", "10",
							 "acquire", "x:1", "acquire", "", NULL),
			 "ERR sluice: ARGV[5]");
	ck_assert_int_eq(test_dbsize(C), 0);
}
END_TEST

/*
 * The fence: a worker whose lease string is not the one shard k's lease
 * key holds (another daemon took the shard while it was paused) changes
 * nothing there; its call is counted as fenced and the lease as lost.
 */
START_TEST(fence_refuses_a_lost_lease)
{
	struct worker_config wc = { .redis = &T, .timeout_ms = 1000, .prefix = "sluice:", .batch_size = 500,
				    .layouts = L, .nlayouts = NL, .lease_id = "paused", .lease_ttl_ms = 2000 };
	struct worker *w = worker_new(&wc);
	struct worker_status st;
	struct worker_result r;
	unsigned k = shard_of("/f", 2);
	long long t0 = test_server_ms(C);

	ck_assert_ptr_nonnull(w);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(test_acquire(C, TEST_EVALSHA, "leaky_bucket", "/f", t0, "10", "1", NULL), 1);
	ck_assert_int_eq(worker_lease_step(w), 0);
	worker_status(w, &st);
	ck_assert_uint_eq(st.lease.owned, SHARD_COUNT);
	/* another daemon's string in shard k's lease, as after a takeover */
	freeReplyObject(test_cmd(C, "SET sluice:{%u}:lease other:1 PX 5000", k));
	/* 3 s later (plus the skew horizon): 3 would leak, but the call is refused */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t0 + 3000 + test_skew_ms(), &r), 0);
	ck_assert_int_eq(r.entries, 0);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD %s", test_lb_key("/f")), 5);
	worker_status(w, &st);
	ck_assert_uint_eq(st.lease.fenced, 1);
	ck_assert_uint_eq(st.lease.lost, 1);
	ck_assert_uint_eq(st.lease.owned, SHARD_COUNT - 1);
	/* the next sweep leaves shard k alone (no call at all): 1023 calls, none fenced */
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t0 + 3000 + test_skew_ms(), &r), 0);
	ck_assert_int_eq(r.batches, SHARD_COUNT - 1);
	worker_status(w, &st);
	ck_assert_uint_eq(st.lease.fenced, 1);
	/* the lease back (the other daemon's ran out): taken at a step, and the bucket drained exactly */
	freeReplyObject(test_cmd(C, "DEL sluice:{%u}:lease", k));
	ck_assert_int_eq(worker_lease_step(w), 0);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, t0 + 3000 + test_skew_ms(), &r), 0);
	ck_assert_int_eq(r.entries, 3);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD %s", test_lb_key("/f")), 2);
	worker_free(w);
}
END_TEST

/*
 * A heartbeat Redis refuses (on a cluster, its node down; here a user whose
 * ACL reaches the lease keys but not <prefix>daemons) fails the step, but
 * the leases held are renewed all the same: the shards stay maintained;
 * none is taken or given back.
 */
START_TEST(renewed_without_heartbeat)
{
	struct daemon d;
	struct worker_lease_status s;
	struct redis_target lt;
	struct rconn *limited;
	char url[128];
	int64_t t = clock_mono_us();

	freeReplyObject(test_cmd(C, "ACL SETUSER leases on >pw resetkeys ~sluice:{* +@all"));
	snprintf(url, sizeof(url), "redis://leases:pw@127.0.0.1:%d/0", R.port);
	ck_assert_int_eq(redis_url_parse(url, &lt, NULL), 0);
	ck_assert_ptr_nonnull(limited = rconn_new(&lt, 1000));
	daemon_up(&d, "solo", 1200);
	step_all(&d, 1, t);
	ck_assert_uint_eq(owned(&d), SHARD_COUNT);
	test_sleep_ms(500);
	ck_assert_int_eq(lease_step(d.l, limited, d.b, t + 500000), -EBADMSG);
	s = status(&d);
	ck_assert_msg(strstr(s.last_error, "heartbeat") != NULL, "last_error: %s", s.last_error);
	ck_assert_uint_eq(owned(&d), SHARD_COUNT);
	ck_assert_int_gt(test_cmd_int(C, "PTTL sluice:{100}:lease"), 1100); /* renewed */
	ck_assert_uint_eq(s.lost, 0);
	ck_assert_uint_eq(s.acquired, SHARD_COUNT);
	rconn_free(limited);
	redis_target_clear(&lt);
	freeReplyObject(test_cmd(C, "ACL DELUSER leases"));
	daemon_down(&d);
}
END_TEST

/*
 * What no daemon writes is replaced: <prefix>daemons of another type (the
 * heartbeat DELs it and goes on), a member scored far ahead of Redis TIME
 * (removed; one a little ahead is not taken for alive), ids that no daemon
 * has (skipped).  Without this a fake or stale member would seem alive for
 * ever and keep its shards unmaintained.
 */
START_TEST(members_repaired)
{
	struct daemon d;
	struct worker_lease_status s;
	int64_t t = clock_mono_us();
	long long now;

	freeReplyObject(test_cmd(C, "SET sluice:daemons garbage"));
	daemon_up(&d, "solo", 1000);
	step_all(&d, 1, t);
	s = status(&d);
	ck_assert_uint_eq(s.repaired, 1);
	ck_assert_str_eq(s.repaired_last, "<prefix>daemons was a string");
	ck_assert_uint_eq(owned(&d), SHARD_COUNT);
	now = test_server_ms(C);
	freeReplyObject(test_cmd(C, "ZADD sluice:daemons %lld far %lld bad\xff", now + 1000000000LL, now));
	freeReplyObject(test_cmd(C, "ZADD sluice:daemons %lld %s", now, "with space"));
	step_all(&d, 1, t + 100000);
	s = status(&d);
	/* "far" (more than lease_ttl_ms ahead) removed by the script, the bad ids skipped */
	ck_assert_uint_eq(s.npeers, 1);
	ck_assert_str_eq(s.peer[0].id, "solo");
	ck_assert_uint_eq(s.live, 1);
	ck_assert_int_eq(test_cmd_int(C, "ZCARD sluice:daemons"), 3); /* solo and the two bad ids */
	ck_assert_uint_eq(owned(&d), SHARD_COUNT);
	{
		redisReply *z = test_cmd(C, "ZSCORE sluice:daemons far");

		ck_assert_int_eq(z->type, REDIS_REPLY_NIL);
		freeReplyObject(z);
	}
	daemon_down(&d);
}
END_TEST

/*
 * The foreign layouts are walked by the holder of WORKER_FOREIGN_SHARD's
 * lease only (drain: shard 0): without it a drain step leaves them (nothing
 * visited, nothing drained); with it, they are drained as before.
 */
START_TEST(foreign_walk_by_one_holder)
{
	struct layout *all;
	size_t nall;
	struct worker_config wc = { .redis = &T, .timeout_ms = 1000, .prefix = "sluice:", .batch_size = 10,
				    .lease_id = "x", .lease_ttl_ms = 2000 };
	struct worker *w;
	struct worker_result r;
	struct rconn *rc = rconn_new(&T, 1000);
	struct rule *rule = NULL;
	struct sl_error err;
	cJSON *o = cJSON_Parse("{\"name\":\"seed\",\"match\":\"/test\",\"algorithm\":\"leaky_bucket\","
			       "\"capacity\":10,\"rate\":2}");

	ck_assert_int_eq(rule_from_json(o, NULL, NULL, &rule, &err), 0);
	ck_assert_int_eq(rulestore_put(rc, "sluice:", rule, NULL, NULL), 0);
	rule_free(rule);
	cJSON_Delete(o);
	rconn_free(rc);
	test_layouts("sluice:", "[{\"name\":\"seed004\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"LeakyBucket:\","
		     "\"registry\":\"LeakyBucket::pathSet\"}]", &all, &nall);
	wc.layouts = all;
	wc.nlayouts = nall;
	ck_assert_ptr_nonnull(w = worker_new(&wc));
	for (int i = 0; i < 10; i++)
		freeReplyObject(test_cmd(C, "ZADD LeakyBucket:/test %d %d", 1000 + i, 1000 + i));
	freeReplyObject(test_cmd(C, "SADD LeakyBucket::pathSet /test"));
	/* shard 0's lease is another daemon's: this one owns the other 1023, and no foreign walk */
	freeReplyObject(test_cmd(C, "SET sluice:{0}:lease other:1 PX 60000"));
	ck_assert_int_eq(worker_lease_step(w), 0);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 5000, &r), 0);
	ck_assert_int_eq(r.sweep_done, 1);
	ck_assert_int_eq(r.paths, 0);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS sluice:{4be}:seed004_meta:LeakyBucket:/test"), 0);
	/* shard 0 free: taken at the next lease step (its retry once the holder's TTL is past:
	 * dropped here by hand), then the walk sees the bucket (first sight: accounting starts)
	 * and drains it exactly after */
	freeReplyObject(test_cmd(C, "DEL sluice:{0}:lease"));
	for (int i = 0; i < 100 && !r.paths; i++) {
		test_sleep_ms(10);
		ck_assert_int_eq(worker_lease_step(w), 0);
		ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 5000, &r), 0);
	}
	ck_assert_int_eq(r.paths, 1);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, 8000, &r), 0);
	ck_assert_int_eq(r.entries, 6); /* 3 s at 2/s */
	ck_assert_int_eq(test_cmd_int(C, "ZCARD LeakyBucket:/test"), 4);
	worker_free(w);
	layouts_free(all, nall);
}
END_TEST

/*
 * Two lease_ttl_ms: the daemon with the shorter one sees leases with more
 * time left than it ever sets (its refused acquisitions' PTTL), and counts
 * a conflict; the joining daemon retries soon (50 ms, doubling) and takes
 * its shards at the first step after the holder handed them over.
 */
START_TEST(ttl_conflict_and_quick_join)
{
	struct daemon d[2];
	struct worker_lease_status s;
	int64_t t = clock_mono_us();

	daemon_up(&d[0], "long", 5000);
	daemon_up(&d[1], "short", 1000);
	step_all(d, 2, t);           /* long takes all, short is refused (PTTL ~5000) */
	s = status(&d[1]);
	ck_assert_uint_gt(s.refused, 300);
	ck_assert_uint_eq(s.ttl_conflicts, s.refused);
	ck_assert_int_gt(s.ttl_conflict_ms, 4000);
	ck_assert_uint_eq(status(&d[0]).ttl_conflicts, 0);
	step_all(d, 1, t + 1000);    /* long sees short: hands over */
	/* 60 ms later (past the first retry, 50 ms): short takes them */
	ck_assert_int_eq(lease_step(d[1].l, d[1].c, d[1].b, t + 61000), 0);
	ck_assert_uint_eq(owned(&d[0]) + owned(&d[1]), SHARD_COUNT);
	ck_assert_uint_gt(owned(&d[1]), 300);
	daemon_down(&d[0]);
	daemon_down(&d[1]);
}
END_TEST

/*
 * Two processes with one id: the second heartbeats as the same member, wants
 * the same shards, and is refused every one the first holds, by a string of
 * this id but another incarnation: counted and named (duplicate_id); it
 * holds nothing, and takes them all once the first gives them back.
 */
START_TEST(same_id_waits_as_standby)
{
	struct daemon a, b;
	struct worker_lease_status s;
	int64_t t = clock_mono_us();

	daemon_up(&a, "twin", 2000);
	daemon_up(&b, "twin", 2000);
	step_all(&a, 1, t);
	step_all(&b, 1, t);
	s = status(&b);
	ck_assert_uint_eq(owned(&a), SHARD_COUNT);
	ck_assert_uint_eq(owned(&b), 0);
	ck_assert_uint_eq(s.duplicate_id, SHARD_COUNT);
	ck_assert_uint_eq(s.refused, SHARD_COUNT);
	ck_assert_msg(strstr(s.duplicate_last, "ids must be unique") != NULL, "%s", s.duplicate_last);
	ck_assert_uint_eq(status(&a).duplicate_id, 0);
	ck_assert_uint_eq(s.live, 1);
	ck_assert_int_eq(lease_release_all(a.l, a.c, a.b), 0);
	step_all(&b, 1, t + 100000);
	ck_assert_uint_eq(owned(&b), SHARD_COUNT);
	ck_assert_str_eq(holder(0), "twin");
	daemon_down(&a);
	daemon_down(&b);
}
END_TEST

/* Shutdown gives every lease back and leaves the set of daemons. */
START_TEST(release_all_at_shutdown)
{
	struct daemon d;

	daemon_up(&d, "going", 2000);
	step_all(&d, 1, clock_mono_us());
	ck_assert_int_eq(lease_release_all(d.l, d.c, d.b), 0);
	ck_assert_uint_eq(owned(&d), 0);
	ck_assert_uint_eq(status(&d).released, SHARD_COUNT);
	ck_assert_int_eq(test_dbsize(C), 0); /* no lease key, no daemons set */
	daemon_down(&d);
}
END_TEST

/* Bad ids and TTLs are refused; the default id is "<host>:<pid>:<6 hex>" and valid. */
START_TEST(ids_and_ttls)
{
	const char *why;
	char id[CONFIG_ID_MAX + 1], pid[32];

	ck_assert_ptr_null(lease_new("", "sluice:", 2000));
	ck_assert_ptr_null(lease_new("has space", "sluice:", 2000));
	ck_assert_ptr_null(lease_new("ok", "sluice:", CONFIG_LEASE_TTL_MIN_MS - 1));
	ck_assert_ptr_null(lease_new("ok", "sluice:", CONFIG_LEASE_TTL_MAX_MS + 1));
	ck_assert_int_eq(config_id_check("a\tb", &why), -EINVAL);
	ck_assert_int_eq(members_default_id(id, sizeof(id)), 0);
	ck_assert_int_eq(config_id_check(id, &why), 0);
	snprintf(pid, sizeof(pid), ":%ld:", (long)getpid());
	ck_assert_ptr_nonnull(strstr(id, pid));
	ck_assert_uint_eq(strlen(strstr(id, pid) + strlen(pid)), 6);
}
END_TEST

static Suite *lease_suite(void)
{
	Suite *s = suite_create("lease");
	TCase *tc = tcase_create("lease");

	tcase_add_unchecked_fixture(tc, suite_up, suite_down);
	tcase_add_checked_fixture(tc, flush, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, alone_owns_all);
	tcase_add_test(tc, three_share);
	tcase_add_test(tc, join_and_leave_move_little);
	tcase_add_test(tc, dead_daemon_taken_over);
	tcase_add_test(tc, lease_script_contract);
	tcase_add_test(tc, fence_refuses_a_lost_lease);
	tcase_add_test(tc, renewed_without_heartbeat);
	tcase_add_test(tc, members_repaired);
	tcase_add_test(tc, ttl_conflict_and_quick_join);
	tcase_add_test(tc, same_id_waits_as_standby);
	tcase_add_test(tc, foreign_walk_by_one_holder);
	tcase_add_test(tc, release_all_at_shutdown);
	tcase_add_test(tc, ids_and_ttls);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(lease_suite());
}

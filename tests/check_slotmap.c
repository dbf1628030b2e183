/*
 * CLUSTER SLOTS parsing (core/slotmap.h), on replies built from RESP text by
 * hiredis's own reader, as they come off the wire: Redis 7's shape (ip, port,
 * id, hostname map), a node that does not know its ip (""), ranges out of
 * order, holes, and malformed maps (refused whole, nothing written).
 *
 * Then the Redis layer installing such a map (rconn_take_map, what it does
 * with each CLUSTER SLOTS answer): maps of clusters larger than this machine
 * runs (65 primaries with a replica each, 130 nodes; 500 and 500, the 1000
 * nodes Redis Cluster is made for), whose first primary is a real one-node
 * cluster of the harness: its slots are served, the others' nodes are
 * addresses where nothing answers, and the map asked again when one fails
 * is the real node's.
 */
#include <check.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rconn.h"
#include "core/rconn_int.h"
#include "core/redis_target.h"
#include "core/shard.h"
#include "core/slotmap.h"
#include "core/strbuf.h"
#include "tests/harness.h"

/* The reply that RESP text `wire` parses to (the caller frees it). */
static redisReply *parse(const char *wire)
{
	redisReader *rd = redisReaderCreate();
	void *r = NULL;

	ck_assert_ptr_nonnull(rd);
	ck_assert_int_eq(redisReaderFeed(rd, wire, strlen(wire)), REDIS_OK);
	ck_assert_int_eq(redisReaderGetReply(rd, &r), REDIS_OK);
	ck_assert_ptr_nonnull(r);
	redisReaderFree(rd);
	return r;
}

/* One node as Redis 7 writes it: ip, port, id, {hostname?} */
#define NODE(port) "*4\r\n$9\r\n127.0.0.1\r\n:" #port "\r\n$40\r\n" \
	"0123456789012345678901234567890123456789\r\n*0\r\n"

START_TEST(test_three_primaries_with_replicas)
{
	/* ranges given out of order: parsed sorted by start */
	const char *wire =
		"*3\r\n"
		"*4\r\n:10923\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:7003\r\n$1\r\nc\r\n*0\r\n"
		"*4\r\n$9\r\n127.0.0.1\r\n:7006\r\n$1\r\nf\r\n*0\r\n"
		"*3\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:7001\r\n$1\r\na\r\n*0\r\n"
		"*4\r\n:5461\r\n:10922\r\n*4\r\n$0\r\n\r\n:7002\r\n$1\r\nb\r\n*0\r\n"
		"*4\r\n$9\r\n127.0.0.1\r\n:7005\r\n$1\r\ne\r\n*0\r\n";
	redisReply *r = parse(wire);
	struct slotmap m = { 0 };

	ck_assert_int_eq(slotmap_parse(r, "10.0.0.9", &m), 0);
	ck_assert_uint_eq(m.n, 3);
	ck_assert_uint_eq(m.v[0].start, 0);
	ck_assert_uint_eq(m.v[0].end, 5460);
	ck_assert_str_eq(m.v[0].primary.host, "127.0.0.1");
	ck_assert_int_eq(m.v[0].primary.port, 7001);
	ck_assert_uint_eq(m.v[0].nreplicas, 0);
	/* a node that does not know its own address: the address we asked */
	ck_assert_str_eq(m.v[1].primary.host, "10.0.0.9");
	ck_assert_int_eq(m.v[1].primary.port, 7002);
	ck_assert_uint_eq(m.v[1].nreplicas, 1);
	ck_assert_int_eq(m.v[1].replica[0].port, 7005);
	ck_assert_uint_eq(m.v[2].start, 10923);
	ck_assert_uint_eq(m.v[2].end, 16383);
	ck_assert_int_eq(m.v[2].replica[0].port, 7006);
	ck_assert_uint_eq(slotmap_uncovered(&m), 0);
	slotmap_clear(&m);
	ck_assert_ptr_null(m.v);
	freeReplyObject(r);
}
END_TEST

/* Endpoints of cluster-preferred-endpoint-type: NULL (unknown-endpoint), "?" with the ip in the metadata */
START_TEST(test_endpoints)
{
	const char *wire = "*2\r\n"
			   "*3\r\n:0\r\n:100\r\n*4\r\n$-1\r\n:7001\r\n$1\r\na\r\n*0\r\n"
			   "*3\r\n:101\r\n:16383\r\n*4\r\n$1\r\n?\r\n:7002\r\n$1\r\nb\r\n"
			   "*2\r\n$2\r\nip\r\n$8\r\n10.0.0.2\r\n";
	redisReply *r = parse(wire);
	struct slotmap m = { 0 };

	ck_assert_int_eq(slotmap_parse(r, "asked", &m), 0);
	ck_assert_uint_eq(m.n, 2);
	ck_assert_str_eq(m.v[0].primary.host, "asked");
	ck_assert_int_eq(m.v[0].primary.port, 7001);
	ck_assert_str_eq(m.v[1].primary.host, "10.0.0.2");
	ck_assert_int_eq(m.v[1].primary.port, 7002);
	slotmap_clear(&m);
	freeReplyObject(r);
}
END_TEST

START_TEST(test_holes_are_uncovered)
{
	/* slots 0-99 and 200-299 only; a single slot range 5000-5000 */
	const char *wire = "*3\r\n"
			   "*3\r\n:200\r\n:299\r\n" NODE(7001)
			   "*3\r\n:0\r\n:99\r\n" NODE(7002)
			   "*3\r\n:5000\r\n:5000\r\n" NODE(7002);
	redisReply *r = parse(wire);
	struct slotmap m = { 0 };

	ck_assert_int_eq(slotmap_parse(r, "h", &m), 0);
	ck_assert_uint_eq(m.n, 3);
	ck_assert_uint_eq(slotmap_uncovered(&m), 16384 - 201);
	slotmap_clear(&m);
	freeReplyObject(r);
}
END_TEST

/* Replies that are no slot map: -EPROTO, *out untouched */
static const char *const bad[] = {
	"-ERR This instance has cluster support disabled\r\n",
	"$2\r\nhi\r\n",
	"*1\r\n*3\r\n:0\r\n:16384\r\n" NODE(7001),   /* end past the last slot */
	"*1\r\n*3\r\n:9\r\n:3\r\n" NODE(7001),       /* end before start */
	"*1\r\n*3\r\n:-1\r\n:3\r\n" NODE(7001),      /* negative */
	"*1\r\n*2\r\n:0\r\n:3\r\n",                             /* no primary */
	"*1\r\n*3\r\n:0\r\n:3\r\n*1\r\n$1\r\nh\r\n",           /* a node without a port */
	"*1\r\n*3\r\n:0\r\n:3\r\n*2\r\n$1\r\nh\r\n:70000\r\n", /* a port out of range */
	"*1\r\n*3\r\n$1\r\n0\r\n:3\r\n" NODE(7001), /* a start that is text */
};

START_TEST(test_bad_maps)
{
	redisReply *r = parse(bad[_i]);
	struct slotmap m = { (void *)1, 7 };

	ck_assert_int_eq(slotmap_parse(r, "h", &m), -EPROTO);
	ck_assert_ptr_eq(m.v, (void *)1);
	ck_assert_uint_eq(m.n, 7);
	freeReplyObject(r);
}
END_TEST

START_TEST(test_no_reply)
{
	struct slotmap m = { 0 };

	ck_assert_int_eq(slotmap_parse(NULL, "h", &m), -EPROTO);
}
END_TEST

/* ---- the Redis layer installing a map ------------------------------------------- */

static struct test_redis node;

static void node_start(void)
{
	const struct test_redis_opts o = { .cluster = 1, .all_slots = 1 };

	if (test_redis_start_with(&node, &o) != 0)
		abort();
}

static void node_stop(void)
{
	test_redis_stop(&node);
}

/* Append one node [127.0.0.1, port, id, {}] as Redis 7 writes it. */
static void wire_node(struct strbuf *w, int port, int id)
{
	char buf[160];
	int n = snprintf(buf, sizeof(buf), "*4\r\n$9\r\n127.0.0.1\r\n:%d\r\n$40\r\n%040d\r\n*0\r\n", port, id);

	ck_assert_int_eq(strbuf_add(w, buf, (size_t)n), 0);
}

/* Slots [start, end] of primary i of `np`, ranges of equal size (the last takes the rest). */
static void range_of(int i, int np, unsigned *start, unsigned *end)
{
	unsigned size = SHARD_SLOTS / (unsigned)np;

	*start = (unsigned)i * size;
	*end = i == np - 1 ? SHARD_SLOTS - 1 : *start + size - 1;
}

/* A key (into buf) whose slot is in [lo, hi]. */
static const char *key_in(unsigned lo, unsigned hi, char *buf, size_t cap)
{
	for (int i = 0;; i++) {
		unsigned slot;

		snprintf(buf, cap, "k%d", i);
		slot = shard_keyslot(buf, strlen(buf));
		if (slot >= lo && slot <= hi)
			return buf;
	}
}

/*
 * CLUSTER SLOTS of `np` primaries with one replica each: primary 0 the real
 * node; primary `refusing` at port `refusing_port`, where nothing listens;
 * the others, and the replicas, at ports nothing is sent to.
 */
static redisReply *big_map(int np, int refusing, int refusing_port)
{
	struct strbuf w = { 0 };
	char head[64];
	redisReply *r;
	int n;

	n = snprintf(head, sizeof(head), "*%d\r\n", np);
	ck_assert_int_eq(strbuf_add(&w, head, (size_t)n), 0);
	for (int i = 0; i < np; i++) {
		unsigned start, end;

		range_of(i, np, &start, &end);
		n = snprintf(head, sizeof(head), "*4\r\n:%u\r\n:%u\r\n", start, end);
		ck_assert_int_eq(strbuf_add(&w, head, (size_t)n), 0);
		wire_node(&w, i == 0 ? node.port : i == refusing ? refusing_port : 20000 + i, 2 * i);
		wire_node(&w, 40000 + i, 2 * i + 1);
	}
	r = parse(w.p);
	strbuf_free(&w);
	return r;
}

static const int big[] = { 65, 500 };

START_TEST(test_install_a_large_map)
{
	const int np = big[_i], refusing = np / 2, refusing_port = test_free_port();
	struct rconn_node_info *info = calloc((size_t)np + 1, sizeof(*info));
	struct redis_target t = { .host = "127.0.0.1", .port = node.port };
	char key[32], want[64];
	const char *set[3] = { "SET", key, "v" }, *get[2] = { "GET", key };
	size_t setl[3] = { 3, 0, 1 }, getl[2] = { 3, 0 };
	unsigned lo, hi;
	uint64_t epoch;
	struct rconn *c = rconn_new(&t, 500);
	redisReply *r;

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(info);
	ck_assert_int_eq(rconn_ensure(c), 0);
	ck_assert_uint_eq(rconn_primaries(c), 1);
	epoch = rconn_map_epoch(c);

	/* the map of np primaries and np replicas: 2 * np nodes (the seed is primary 0) */
	ck_assert_int_eq(rconn_take_map(c, 0, big_map(np, refusing, refusing_port)), 0);
	ck_assert_uint_eq(c->nnodes, 2 * (size_t)np);
	ck_assert_uint_eq(rconn_primaries(c), (size_t)np);
	ck_assert_uint_eq(rconn_map_epoch(c), epoch + 1);
	ck_assert_uint_eq(rconn_node_info(c, info, (size_t)np + 1), (size_t)np);
	for (int i = 0; i < np; i++) {
		unsigned start, end;

		range_of(i, np, &start, &end);
		snprintf(want, sizeof(want), "127.0.0.1:%d", i == 0 ? node.port : i == refusing ? refusing_port : 20000 + i);
		ck_assert_str_eq(info[i].addr, want);
		ck_assert_uint_eq(info[i].slots, end - start + 1);
		snprintf(want, sizeof(want), "%u-%u", start, end);
		ck_assert_str_eq(info[i].ranges, want);
	}
	/* every shard's primary is the one whose range holds the slot of its tag {k} */
	for (unsigned k = 0; k < SHARD_COUNT; k++) {
		char tag[16];
		unsigned slot = shard_keyslot(tag, (size_t)snprintf(tag, sizeof(tag), "{%u}", k)), size = SHARD_SLOTS / (unsigned)np;
		size_t ord = slot / size < (unsigned)np ? slot / size : (size_t)np - 1;

		ck_assert_uint_eq(rconn_shard_primary(c, k), ord);
	}

	/* a key of primary 0's slots: served by the real node */
	range_of(0, np, &lo, &hi);
	key_in(lo, hi, key, sizeof(key));
	setl[1] = getl[1] = strlen(key);
	ck_assert_int_eq(rconn_command(c, 3, set, setl, &r), 0);
	ck_assert_int_eq(r->type, REDIS_REPLY_STATUS);
	ck_assert_str_eq(r->str, "OK");
	freeReplyObject(r);
	{
		redisContext *x = test_redis_connect(&node);

		r = test_cmd(x, "GET %s", key);
		ck_assert_str_eq(r->str, "v");
		freeReplyObject(r);
		redisFree(x);
	}

	/* a key of the refusing node's slots: its connect fails, the map is asked again (100 ms after the
	 * last ask), the real node's map (one primary, every slot) is installed, and the GET goes there */
	range_of(refusing, np, &lo, &hi);
	key_in(lo, hi, key, sizeof(key));
	setl[1] = getl[1] = strlen(key);
	{
		struct timespec ts = { 0, 150 * 1000000L };

		nanosleep(&ts, NULL);
	}
	ck_assert_int_eq(rconn_command(c, 2, get, getl, &r), 0);
	ck_assert_int_eq(r->type, REDIS_REPLY_NIL);
	freeReplyObject(r);
	ck_assert_uint_eq(rconn_primaries(c), 1);
	ck_assert_uint_eq(rconn_node_info(c, info, 2), 1);
	ck_assert_uint_eq(info[0].slots, SHARD_SLOTS);
	ck_assert_uint_eq(rconn_shard_primary(c, 5), 0);
	rconn_free(c);
	free(info);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slotmap");
	TCase *tc = tcase_create("parse"), *ti = tcase_create("install");

	tcase_add_test(tc, test_three_primaries_with_replicas);
	tcase_add_test(tc, test_holes_are_uncovered);
	tcase_add_test(tc, test_endpoints);
	tcase_add_loop_test(tc, test_bad_maps, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, test_no_reply);
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(ti, node_start, node_stop);
	tcase_set_timeout(ti, 30);
	tcase_add_loop_test(ti, test_install_a_large_map, 0, sizeof(big) / sizeof(big[0]));
	suite_add_tcase(s, ti);
	return test_run_suite(s);
}

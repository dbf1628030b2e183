/*
 * CLUSTER SLOTS parsing (core/slotmap.h), on replies built from RESP text by
 * hiredis's own reader, as they come off the wire: Redis 7's shape (ip, port,
 * id, hostname map), a node that does not know its ip (""), ranges out of
 * order, holes, and malformed maps (refused whole, nothing written).
 */
#include <check.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "core/slotmap.h"
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

int main(void)
{
	Suite *s = suite_create("slotmap");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_three_primaries_with_replicas);
	tcase_add_test(tc, test_holes_are_uncovered);
	tcase_add_test(tc, test_endpoints);
	tcase_add_loop_test(tc, test_bad_maps, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, test_no_reply);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}

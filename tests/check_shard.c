/*
 * The shard function of key layout 2 (core/shard.h): Redis Cluster's key
 * slot, checked against fixed vectors from the cluster specification and
 * the CRC16/XMODEM check value.  (The comparison with CLUSTER KEYSLOT of a
 * real cluster-enabled redis-server over random byte strings comes with the
 * layout-2 scripts.)
 */
#include <check.h>
#include <string.h>

#include "core/shard.h"
#include "tests/harness.h"

START_TEST(test_crc16_check_value)
{
	ck_assert_uint_eq(shard_crc16("123456789", 9), 0x31C3);
	ck_assert_uint_eq(shard_crc16("", 0), 0);
}
END_TEST

START_TEST(test_keyslot_vectors)
{
	/* the cluster specification's examples and the hash-tag rules */
	ck_assert_uint_eq(shard_keyslot("foo", 3), 12182);
	ck_assert_uint_eq(shard_keyslot("{user1000}.following", 20), shard_keyslot("user1000", 8));
	ck_assert_uint_eq(shard_keyslot("foo{}{bar}", 10), shard_crc16("foo{}{bar}", 10) & 16383);
	ck_assert_uint_eq(shard_keyslot("foo{{bar}}zap", 13), shard_keyslot("{bar", 4));
	ck_assert_uint_eq(shard_keyslot("foo{bar}{zap}", 13), shard_keyslot("bar", 3));
	ck_assert_uint_eq(shard_keyslot("}x", 2), shard_crc16("}x", 2) & 16383);
	ck_assert_uint_eq(shard_keyslot("a\0{b}", 5), shard_keyslot("b", 1)); /* binary-safe */
	ck_assert_uint_eq(shard_of("foo", 3), 12182 % 1024);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shard");
	TCase *tc = tcase_create("keyslot");

	tcase_add_test(tc, test_crc16_check_value);
	tcase_add_test(tc, test_keyslot_vectors);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}

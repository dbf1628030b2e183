/*
 * The slot tag table (core/slottag.h): every slot of the 16384 has a tag whose
 * keyslot (core/shard.h, Redis Cluster's) is that slot, inside braces too and
 * whatever bytes follow; each tag is the first candidate of its slot (shortest
 * first, then in byte order); and the table built in is what the search
 * computes.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "core/shard.h"
#include "core/slottag.h"
#include "tests/harness.h"

static const char alphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/* Candidate order: shorter first, then byte order. */
static int cand_cmp(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	return la != lb ? (la < lb ? -1 : 1) : strcmp(a, b);
}

START_TEST(test_every_slot_has_its_tag)
{
	size_t by_len[SLOTTAG_MAX + 1] = { 0 };

	for (unsigned s = 0; s < SHARD_SLOTS; s++) {
		const char *t = slottag_of(s);
		size_t n = strlen(t);
		char key[64];
		int k;

		ck_assert_msg(n >= 1 && n <= SLOTTAG_MAX, "slot %u: tag \"%s\"", s, t);
		ck_assert_msg(strspn(t, alphabet) == n, "slot %u: tag \"%s\" outside [0-9A-Za-z]", s, t);
		by_len[n]++;
		ck_assert_msg(shard_keyslot(t, n) == s, "slot %u: tag \"%s\" is in slot %u", s, t, shard_keyslot(t, n));
		/* as a hash tag, whatever the key holds around it */
		k = snprintf(key, sizeof(key), "sluice:{%s}:seed_meta:}{x{}", t);
		ck_assert_uint_eq(shard_keyslot(key, (size_t)k), s);
		ck_assert_str_eq(slottag_of(s + SHARD_SLOTS), t);
	}
	/* 62 one-character tags each have a slot of their own (no two collide) */
	ck_assert_uint_eq(by_len[1], 62);
	ck_assert_uint_eq(by_len[1] + by_len[2] + by_len[3], SHARD_SLOTS);
}
END_TEST

/* No candidate of a slot comes before its tag: every candidate of up to 3 characters, in order. */
START_TEST(test_tags_are_the_first_candidates)
{
	char c[SLOTTAG_SIZE] = { 0 };
	size_t seen = 0;

	for (size_t len = 1; len <= SLOTTAG_MAX; len++) {
		size_t a = len > 1 ? 62 : 1, b = len > 2 ? 62 : 1;

		for (size_t i = 0; i < a; i++)
			for (size_t j = 0; j < b; j++)
				for (size_t k = 0; k < 62; k++) {
					size_t n = 0;

					if (len > 2)
						c[n++] = alphabet[i];
					if (len > 1)
						c[n++] = alphabet[j];
					c[n++] = alphabet[k];
					c[n] = '\0';
					ck_assert_msg(cand_cmp(slottag_of(shard_keyslot(c, n)), c) <= 0,
						      "\"%s\" comes before the tag \"%s\" of its slot", c,
						      slottag_of(shard_keyslot(c, n)));
					seen++;
				}
	}
	ck_assert_uint_eq(seen, 62 + 62 * 62 + 62 * 62 * 62);
}
END_TEST

/* The table built in is what slottag_build computes now. */
START_TEST(test_table_is_the_search)
{
	static char tags[SHARD_SLOTS][SLOTTAG_SIZE];

	ck_assert_int_eq(slottag_build(tags), 0);
	for (unsigned s = 0; s < SHARD_SLOTS; s++)
		ck_assert_msg(strcmp(tags[s], slottag_of(s)) == 0, "slot %u: built \"%s\", table \"%s\"", s, tags[s],
			      slottag_of(s));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slottag");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, test_every_slot_has_its_tag);
	tcase_add_test(tc, test_tags_are_the_first_candidates);
	tcase_add_test(tc, test_table_is_the_search);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}

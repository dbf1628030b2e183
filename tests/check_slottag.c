/*
 * The slot tag table (core/slottag.h): every slot of the 16384 has a tag whose
 * keyslot (core/shard.h, Redis Cluster's) is that slot, inside braces too and
 * whatever bytes follow; each tag is the first candidate of its slot (shortest
 * first, then in byte order); the table built in is what the search
 * computes; and a foreign key's meta (core/layout.h) lies in the key's slot
 * whatever bytes the key holds.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/glob.h"
#include "core/layout.h"
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

/* ---- a foreign key's meta ------------------------------------------------------ */

/* Two foreign leaky buckets: a key without braces, and one that puts the path in a hash tag. */
#define FOREIGN_LAYOUTS                                                                                      \
	"[{\"name\":\"seed004\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"LeakyBucket:\","                  \
	"\"registry\":\"LeakyBucket::pathSet\"},"                                                              \
	"{\"name\":\"tagged\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"rl:{\",\"key_suffix\":\"}:lb\","          \
	"\"registry\":\"rl:paths\"}]"

static char kilobyte[1024];

/* Paths holding '}', '{', "{}", "}{", NUL, and 1 kB of every byte value. */
static const struct {
	const char *p;
	size_t len;
} meta_paths[] = {
	{ "}", 1 }, { "{", 1 }, { "{}", 2 }, { "}{", 2 }, { "x}y{z", 5 }, { "a\0}b", 4 }, { "\0{\0}", 4 },
	{ kilobyte, sizeof(kilobyte) },
};

START_TEST(test_foreign_meta_in_the_keys_slot)
{
	const char *path = meta_paths[_i].p;
	size_t len = meta_paths[_i].len;
	struct layout *all;
	size_t nall;

	for (size_t i = 0; i < sizeof(kilobyte); i++)
		kilobyte[i] = (char)(i * 7 + 3); /* every byte value, '{' and '}' among them */
	test_layouts("sluice:", FOREIGN_LAYOUTS, &all, &nall);
	ck_assert_uint_eq(nall, 7);
	for (size_t li = 0; li < nall; li++) {
		const struct layout *l = &all[li];
		struct strbuf data = { 0 }, meta = { 0 }, head = { 0 };
		unsigned slot;

		if (l->algorithm != ALG_LEAKY_BUCKET)
			continue;
		ck_assert_int_eq(layout_key(l, path, len, 0, &data), 0);
		ck_assert_int_eq(layout_key(l, path, len, 1, &meta), 0);
		slot = shard_keyslot(data.p, data.len);
		if (!l->foreign) {
			/* sluice's own (key layout 2): <prefix>{k}:leaky_bucket_meta:<path>, the data key's shard
			 * tag, so the same slot whatever the path holds */
			char tag[64];
			int n = snprintf(tag, sizeof(tag), "sluice:{%u}:leaky_bucket_meta:", shard_of(path, len));

			ck_assert_uint_eq(meta.len, (size_t)n + len);
			ck_assert(memcmp(meta.p, tag, (size_t)n) == 0 && memcmp(meta.p + n, path, len) == 0);
			ck_assert_uint_eq(shard_keyslot(meta.p, meta.len), slot);
		} else {
			/* sluice:{<tag>}:<name>_meta:<data key>, in the data key's slot */
			strbuf_add(&head, "sluice:{", 8);
			strbuf_add(&head, slottag_of(slot), strlen(slottag_of(slot)));
			strbuf_add(&head, "}:", 2);
			strbuf_add(&head, l->name, strlen(l->name));
			strbuf_add(&head, "_meta:", 6);
			ck_assert_uint_eq(meta.len, head.len + data.len);
			ck_assert(memcmp(meta.p, head.p, head.len) == 0);
			ck_assert(memcmp(meta.p + head.len, data.p, data.len) == 0);
			ck_assert_msg(shard_keyslot(meta.p, meta.len) == slot, "layout %s, path %zu: meta in slot %u, data in %u",
				      l->name, (size_t)_i, shard_keyslot(meta.p, meta.len), slot);
		}
		strbuf_free(&data);
		strbuf_free(&meta);
		strbuf_free(&head);
	}
	layouts_free(all, nall);
}
END_TEST

/*
 * Every layout's data key of a hostile path gives the path back (layout_path_of),
 * byte for byte, and a SCAN layout's MATCH glob (its prefix and suffix escaped:
 * here they hold '*', '?', '[' and '\\') matches the key, so the worker finds
 * it and reads the same path from it.  The layouts: sluice's own, the seeds'
 * (examples/seeds.json) and the two above, and SCAN layouts with a suffix.
 */
#define SCAN_LAYOUTS                                                                                         \
	"[{\"name\":\"seed000-log\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"limit:\",\"scan\":true},"    \
	"{\"name\":\"seed001-fixed\",\"algorithm\":\"fixed_window\",\"key_prefix\":\"rate_limit:\",\"scan\":true,"  \
	"\"scan_type\":\"string\"},"                                                                             \
	"{\"name\":\"globby\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"a*b?[c\\\\:\",\"key_suffix\":\":]x*\","  \
	"\"scan\":true},"                                                                                         \
	"{\"name\":\"braced\",\"algorithm\":\"sliding_counter\",\"key_prefix\":\"c:{\",\"key_suffix\":\"}\",\"scan\":true}]"

START_TEST(test_layout_path_of_hostile_paths)
{
	const char *path = meta_paths[_i].p;
	size_t len = meta_paths[_i].len;
	const char *sets[] = { FOREIGN_LAYOUTS, SCAN_LAYOUTS };

	for (size_t i = 0; i < sizeof(kilobyte); i++)
		kilobyte[i] = (char)(i * 7 + 3);
	for (size_t si = 0; si < 2; si++) {
		struct layout *all;
		size_t nall;

		test_layouts("sluice:", sets[si], &all, &nall);
		for (size_t li = 0; li < nall; li++) {
			const struct layout *l = &all[li];
			struct strbuf data = { 0 };
			const char *got;
			size_t glen;

			ck_assert_int_eq(layout_key(l, path, len, 0, &data), 0);
			ck_assert_msg(layout_path_of(l, data.p, data.len, &got, &glen) == 0,
				      "layout %s, path %zu: its own key refused", l->name, (size_t)_i);
			ck_assert_msg(glen == len && memcmp(got, path, len) == 0, "layout %s, path %zu: read back %zu bytes",
				      l->name, (size_t)_i, glen);
			if (l->scan)
				ck_assert_msg(glob_match(l->scan_match, strlen(l->scan_match), data.p, data.len),
					      "layout %s: MATCH %s misses the key of path %zu", l->name, l->scan_match,
					      (size_t)_i);
			if (!l->foreign) {
				/* sluice's own: the key names its shard; the same path's key in another shard is
				 * not of the layout */
				struct strbuf other = { 0 };
				char head[64];
				int n = snprintf(head, sizeof(head), "sluice:{%u}:%s:", (shard_of(path, len) + 1) % 1024,
						 l->name);

				strbuf_add(&other, head, (size_t)n);
				strbuf_add(&other, path, len);
				ck_assert_int_eq(layout_path_of(l, other.p, other.len, &got, &glen), -EINVAL);
				strbuf_free(&other);
			}
			strbuf_free(&data);
		}
		layouts_free(all, nall);
	}
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
	tc = tcase_create("foreign_meta");
	tcase_add_loop_test(tc, test_foreign_meta_in_the_keys_slot, 0, TEST_N(meta_paths));
	tcase_add_loop_test(tc, test_layout_path_of_hostile_paths, 0, TEST_N(meta_paths));
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}

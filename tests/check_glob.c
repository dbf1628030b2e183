/*
 * core/glob.c against glibc's fnmatch(3) with no flags, the dialect the rules
 * have always used, over many random patterns and paths (where fnmatch can
 * see them: no NUL, no POSIX classes), and on paths holding NUL bytes, which
 * fnmatch cannot match at all.
 */
#include <check.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "core/glob.h"
#include "tests/harness.h"

#define G(p, s) glob_match((p), sizeof(p) - 1, (s), sizeof(s) - 1)

START_TEST(test_fixed_cases)
{
	ck_assert_int_eq(G("/api/*", "/api/users"), 1);
	ck_assert_int_eq(G("/api/*", "/api/a/b"), 1); /* '*' crosses '/' */
	ck_assert_int_eq(G("/api/*", "/apix"), 0);
	ck_assert_int_eq(G("/u?er", "/user"), 1);
	ck_assert_int_eq(G("[a-c]x", "bx"), 1);
	ck_assert_int_eq(G("[!a-c]x", "bx"), 0);
	ck_assert_int_eq(G("[^a-c]x", "dx"), 1);
	ck_assert_int_eq(G("[]]", "]"), 1);
	ck_assert_int_eq(G("[a-]", "-"), 1);
	ck_assert_int_eq(G("\\*", "*"), 1);
	ck_assert_int_eq(G("\\*", "a"), 0);
	ck_assert_int_eq(glob_valid("[ab", 3), 0);
	ck_assert_int_eq(glob_valid("ab\\", 3), 0);
	ck_assert_int_eq(glob_valid("[a-", 3), 0);
	ck_assert_int_eq(glob_valid("[]]\\*[!a-z]", 11), 1);
	ck_assert_int_eq(G("*", ""), 1);
	ck_assert_int_eq(G("", ""), 1);
	ck_assert_int_eq(G("a*b*c", "aXbYbZc"), 1);
	ck_assert_int_eq(G("a*b*c", "aXbYbZ"), 0);
	/* the longest run after a '*' (what a match's time grows with) */
	ck_assert_uint_eq(glob_star_run("/api/users", 10), 0);
	ck_assert_uint_eq(glob_star_run("/api/*", 6), 0);
	ck_assert_uint_eq(glob_star_run("/api/*/users/*.json", 19), 7); /* "/users/" */
	ck_assert_uint_eq(glob_star_run("*[a-z]?\\*x", 10), 4); /* a set, ?, an escaped '*', x */
	ck_assert_uint_eq(glob_star_run("**ab**c", 7), 2);
}
END_TEST

START_TEST(test_nul_bytes)
{
	ck_assert_int_eq(G("/a*", "/a\0b"), 1);
	ck_assert_int_eq(G("/a?b", "/a\0b"), 1);
	ck_assert_int_eq(G("/a\0*", "/a\0zz"), 1);
	ck_assert_int_eq(G("/a\0*", "/a\1zz"), 0);
	ck_assert_int_eq(G("[\1-\3]", "\0"), 0);
	ck_assert_int_eq(G("*c", "a\0c"), 1);
}
END_TEST

/* Random text over a small alphabet rich in glob metacharacters. */
static size_t rnd(char *out, size_t max, const char *alpha, unsigned *seed)
{
	size_t n = (size_t)rand_r(seed) % (max + 1), k = strlen(alpha);

	for (size_t i = 0; i < n; i++)
		out[i] = alpha[(size_t)rand_r(seed) % k];
	out[n] = '\0';
	return n;
}

START_TEST(test_agrees_with_fnmatch)
{
	unsigned seed = 20261201;
	long compared = 0, matched = 0;

	for (int i = 0; i < 300000; i++) {
		char pat[16], s[24];
		size_t pl = rnd(pat, 10, "ab/*?[]!^-\\", &seed), sl = rnd(s, 16, "ab/[]!^-\\*?", &seed);
		int want, got;

		if (strstr(pat, "[:") || strstr(pat, "[=") || strstr(pat, "[.") || !glob_valid(pat, pl))
			continue; /* POSIX classes, malformed patterns: not our dialect (rules refuse the latter) */
		want = fnmatch(pat, s, 0) == 0;
		got = glob_match(pat, pl, s, sl);
		ck_assert_msg(got == want, "pattern \"%s\" path \"%s\": glob %d, fnmatch %d", pat, s, got, want);
		compared++;
		matched += want;
	}
	ck_assert_int_gt(compared, 150000);
	ck_assert_int_gt(matched, 4000); /* the inputs do match often enough to mean something */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("glob");
	TCase *tc = tcase_create("match");

	tcase_add_test(tc, test_fixed_cases);
	tcase_add_test(tc, test_nul_bytes);
	tcase_add_test(tc, test_agrees_with_fnmatch);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}

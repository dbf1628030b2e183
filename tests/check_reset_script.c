/*
 * lua/reset.lua, the admin's reset of one path on key layout 2: the path's
 * state and meta of every algorithm in its shard, its due indexes there
 * (sorted sets), a foreign layout's registry set, dry runs, a registry of
 * another type (reported and left alone, the reset goes on), bad arguments.
 * The fixture and helpers are tests/script_fixture.h's.
 */
#include "tests/script_fixture.h"

#include "core/shard.h"

/* A reply as text, nested arrays too: {2, {}, {"k", 3}}. */
static void show(const redisReply *r, char *buf, size_t cap, size_t *n)
{
	if (r->type == REDIS_REPLY_ARRAY) {
		*n += (size_t)snprintf(buf + *n, *n < cap ? cap - *n : 0, "{");
		for (size_t i = 0; i < r->elements; i++) {
			if (i)
				*n += (size_t)snprintf(buf + *n, *n < cap ? cap - *n : 0, ", ");
			show(r->element[i], buf, cap, n);
		}
		*n += (size_t)snprintf(buf + *n, *n < cap ? cap - *n : 0, "}");
	} else {
		char one[256];

		*n += (size_t)snprintf(buf + *n, *n < cap ? cap - *n : 0, "%s", test_show_reply(r, one, sizeof(one)));
	}
}

/* The reply, as show() prints it, is `want`; frees r. */
#define ck_shown(r, want)                                                              \
	do {                                                                           \
		redisReply *r_ = (r);                                                  \
		char got_[2048];                                                       \
		size_t n_ = 0;                                                         \
		show(r_, got_, sizeof(got_), &n_);                                     \
		ck_assert_msg(strcmp(got_, (want)) == 0, "reply\n got  %s\n want %s", got_, (want)); \
		freeReplyObject(r_);                                                   \
	} while (0)

static const char *const algs[] = { "leaky_bucket", "sliding_log", "sliding_counter", "fixed_window", "token_bucket" };

/* reset.lua for path p as the admin calls it for sluice's own layouts: the five due
 * indexes of p's shard, then state and meta of each algorithm; ARGV 5, p, mode. */
static redisReply *reset_own(const char *p, const char *mode)
{
	const char *argv[20];
	int n = 0;

	for (int i = 0; i < 5; i++)
		argv[n++] = test_registry(algs[i], p);
	for (int i = 0; i < 5; i++) {
		char meta[48];

		snprintf(meta, sizeof(meta), "%s_meta", algs[i]);
		argv[n++] = test_key(p, algs[i]);
		argv[n++] = test_key(p, meta);
	}
	argv[n++] = "5";
	argv[n++] = p;
	if (mode)
		argv[n++] = mode;
	return eval_argv(SCRIPT_RESET, 0, 15, n, argv);
}

/* State of /api/users in three algorithms of its shard (shard 839), and of /other. */
static void seed(const char *p)
{
	freeReplyObject(lb_acquire(p, "10", "1", "3", "0"));
	ck_assert_int_eq(due_of(LB, p), 1000 + test_skew_ms()); /* the first leak + the horizon */
	/* the other algorithms' keys as their clients write them: reset.lua takes any type */
	freeReplyObject(test_cmd(c, "ZADD %s 5 5:1 6 6:1", test_key(p, "sliding_log")));
	freeReplyObject(test_cmd(c, "HSET %s t 6", test_key(p, "sliding_log_meta")));
	freeReplyObject(test_cmd(c, "ZADD %s 60005 %s", test_registry("sliding_log", p), p));
	freeReplyObject(test_cmd(c, "HSET %s window 0 count 7 t 9", test_key(p, "fixed_window")));
	freeReplyObject(test_cmd(c, "ZADD %s 1000 %s", test_registry("fixed_window", p), p));
	freeReplyObject(lb_acquire("/other", "10", "1", "1", "0"));
}

START_TEST(test_reset_own_layouts)
{
	const char *p = "/api/users";

	ck_assert_uint_eq(shard_of(p, strlen(p)), 839);
	seed(p);
	ck_shown(reset_own(p, NULL),
		 "{3, {}, {\"sluice:{839}:leaky_bucket:/api/users\", 3}, {\"sluice:{839}:leaky_bucket_meta:/api/users\", 0}, "
		 "{\"sluice:{839}:sliding_log:/api/users\", 2}, {\"sluice:{839}:sliding_log_meta:/api/users\", 0}, "
		 "{\"sluice:{839}:fixed_window:/api/users\", 7}}");
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s %s %s %s", test_lb_key(p), test_lb_meta(p), test_sl_key(p),
				      test_key(p, "sliding_log_meta"), test_key(p, "fixed_window")),
			 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s %s", test_registry("leaky_bucket", p),
				      test_registry("sliding_log", p), test_registry("fixed_window", p)),
			 0);
	/* the other path, in its own shard, untouched */
	ck_assert_int_eq(zcard(test_lb_key("/other")), 1);
	ck_assert_int_eq(due_of(LB, "/other"), 1000 + test_skew_ms());
	/* again: nothing left */
	ck_shown(reset_own(p, NULL), "{0, {}}");
	ck_shown(reset_own(p, ""), "{0, {}}");
}
END_TEST

START_TEST(test_reset_dry)
{
	const char *p = "/api/users";
	char *before;

	seed(p);
	before = test_snapshot(c);
	ck_shown(reset_own(p, "dry"),
		 "{3, {}, {\"sluice:{839}:leaky_bucket:/api/users\", 3}, {\"sluice:{839}:leaky_bucket_meta:/api/users\", 0}, "
		 "{\"sluice:{839}:sliding_log:/api/users\", 2}, {\"sluice:{839}:sliding_log_meta:/api/users\", 0}, "
		 "{\"sluice:{839}:fixed_window:/api/users\", 7}}");
	ck_snapshot_same(before);
	free(before);
}
END_TEST

/* A due index of another type (a key nothing of sluice's wrote) is reported and left alone:
 * the path's keys still go, and the other registries lose the path. */
START_TEST(test_reset_registry_of_another_type)
{
	const char *p = "/api/users";

	seed(p);
	freeReplyObject(test_cmd(c, "SET %s oops", test_registry("sliding_counter", p)));
	freeReplyObject(test_cmd(c, "RPUSH %s /api/users", test_registry("token_bucket", p)));
	ck_shown(reset_own(p, "dry"),
		 "{3, {\"sluice:{839}:registry:sliding_counter\", \"string\", \"sluice:{839}:registry:token_bucket\", \"list\"}, "
		 "{\"sluice:{839}:leaky_bucket:/api/users\", 3}, {\"sluice:{839}:leaky_bucket_meta:/api/users\", 0}, "
		 "{\"sluice:{839}:sliding_log:/api/users\", 2}, {\"sluice:{839}:sliding_log_meta:/api/users\", 0}, "
		 "{\"sluice:{839}:fixed_window:/api/users\", 7}}");
	ck_assert_int_eq(zcard(test_lb_key(p)), 3);
	ck_shown(reset_own(p, NULL),
		 "{3, {\"sluice:{839}:registry:sliding_counter\", \"string\", \"sluice:{839}:registry:token_bucket\", \"list\"}, "
		 "{\"sluice:{839}:leaky_bucket:/api/users\", 3}, {\"sluice:{839}:leaky_bucket_meta:/api/users\", 0}, "
		 "{\"sluice:{839}:sliding_log:/api/users\", 2}, {\"sluice:{839}:sliding_log_meta:/api/users\", 0}, "
		 "{\"sluice:{839}:fixed_window:/api/users\", 7}}");
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s %s", test_lb_key(p), test_registry("leaky_bucket", p)), 0);
	ck_cmd("\"oops\"", "GET %s", test_registry("sliding_counter", p));
	ck_assert_int_eq(test_cmd_int(c, "LLEN %s", test_registry("token_bucket", p)), 1);
}
END_TEST

/* A foreign layout's call: its registry set, its data key and sluice's meta for it. */
START_TEST(test_reset_foreign_set)
{
	const char *argv[] = { "LeakyBucket::pathSet", "LeakyBucket:/f", "sluice:{x}:seed_meta:LeakyBucket:/f", "1", "/f" };

	freeReplyObject(test_cmd(c, "ZADD LeakyBucket:/f 1 a 2 b"));
	freeReplyObject(test_cmd(c, "SADD LeakyBucket::pathSet /f /g"));
	ck_shown(eval_argv(SCRIPT_RESET, 0, 3, 5, argv), "{1, {}, {\"LeakyBucket:/f\", 2}}");
	ck_cmd("{\"/g\"}", "SMEMBERS LeakyBucket::pathSet");
	ck_assert_int_eq(test_cmd_int(c, "EXISTS LeakyBucket:/f"), 0);
	/* a registry entry without state is still cleaned */
	freeReplyObject(test_cmd(c, "SADD LeakyBucket::pathSet /f"));
	ck_shown(eval_argv(SCRIPT_RESET, 0, 3, 5, argv), "{1, {}}");
	ck_assert_int_eq(test_cmd_int(c, "SISMEMBER LeakyBucket::pathSet /f"), 0);
}
END_TEST

/* Keys of any type are deleted, and sized by the requests they hold admitted (by their type). */
START_TEST(test_reset_sizes_by_type)
{
	const char *argv[] = { "k:z", "k:h", "k:fw", "k:sc", "k:s", "k:l", "k:x", "k:str", "k:incr", "k:none", "0", "/p" };

	freeReplyObject(test_cmd(c, "ZADD k:z 1 a 2 b 3 c"));
	freeReplyObject(test_cmd(c, "HSET k:h a 1 b 2"));                   /* a token bucket's: none */
	freeReplyObject(test_cmd(c, "HSET k:fw window 3 count 5 t 9"));     /* a fixed window's count */
	freeReplyObject(test_cmd(c, "HSET k:sc 10 2 11 3 t 9 limit 100")); /* a sliding counter's sub-windows */
	freeReplyObject(test_cmd(c, "SADD k:s a b c d"));
	freeReplyObject(test_cmd(c, "RPUSH k:l a"));
	freeReplyObject(test_cmd(c, "XADD k:x 1-1 f v"));
	freeReplyObject(test_cmd(c, "SET k:str v"));
	freeReplyObject(test_cmd(c, "SET k:incr 42"));                      /* an INCR counter's value */
	ck_shown(eval_argv(SCRIPT_RESET, 0, 10, 12, argv),
		 "{0, {}, {\"k:z\", 3}, {\"k:h\", 0}, {\"k:fw\", 5}, {\"k:sc\", 5}, {\"k:s\", 4}, {\"k:l\", 1}, "
		 "{\"k:x\", 1}, {\"k:str\", 1}, {\"k:incr\", 42}}");
	ck_assert_int_eq(test_dbsize(c), 0);
}
END_TEST

/* ---- validation ------------------------------------------------------------ */

#define R839 "sluice:{839}:registry:leaky_bucket"
#define K839 "sluice:{839}:leaky_bucket:/api/users"

static const struct bad_call bad_calls[] = {
	{ "reset", 2, { R839, K839, "x", "/api/users" }, "ERR sluice: registry_count " },
	{ "reset", 2, { R839, K839, "3", "/api/users" }, "ERR sluice: registry_count " },
	{ "reset", 2, { R839, K839, "-1", "/api/users" }, "ERR sluice: registry_count " },
	{ "reset", 2, { R839, K839, "1", "" }, "ERR sluice: path " },
	{ "reset", 2, { R839, K839, "1" }, "ERR sluice: path " },
	{ "reset", 2, { R839, K839, "1", "/api/users", "wet" }, "ERR sluice: mode must be \"dry\" or empty" },
	{ "reset", 2, { R839, K839, "1", "/api/users", "", "2" }, "ERR sluice: reset takes ARGV " },
};

START_TEST(test_bad_arguments_change_nothing)
{
	/* state the bad call would have reset */
	freeReplyObject(lb_acquire("/api/users", "10", "1", "3", "0"));
	check_bad_call(&bad_calls[_i]);
	ck_assert_int_eq(zcard(K839), 3);
}
END_TEST

static Suite *reset_script_suite(void)
{
	Suite *s = suite_create("reset_script");
	TCase *tc;

	tc = test_tcase(s, "reset", script_setup, script_teardown, 60);
	tcase_add_test(tc, test_reset_own_layouts);
	tcase_add_test(tc, test_reset_dry);
	tcase_add_test(tc, test_reset_registry_of_another_type);
	tcase_add_test(tc, test_reset_foreign_set);
	tcase_add_test(tc, test_reset_sizes_by_type);

	tc = test_tcase(s, "validation", script_setup, script_teardown, 60);
	tcase_add_loop_test(tc, test_bad_arguments_change_nothing, 0, TEST_N(bad_calls));
	return s;
}

int main(void)
{
	return test_run_suite(reset_script_suite());
}

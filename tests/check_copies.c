/*
 * Integration suite of the rule copies (worker/copies.c) against a real
 * redis-server: written, followed, repaired (the fixture and how the copies
 * are compared with the store: tests/copies_fixture.h).  A copy whose
 * version is current but whose fields were edited: check_copies_drift.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rulestore.h"
#include "core/shard.h"
#include "tests/copies_fixture.h"
#include "tests/harness.h"
#include "worker/worker.h"


/* The first step writes the store's rules and version into every copy, the skew field beside them. */
START_TEST(copies_written_at_first_step)
{
	struct worker *w = copies_worker(1);
	struct worker_status st;
	char ver[96];

	three_rules();
	st = status(w);
	ck_assert_int_eq(st.copies_on, 1);
	ck_assert_int_eq(st.copies_pending, SHARD_COUNT);
	ck_assert_str_eq(st.copies_version, "");
	step(w, WORKER_DRAIN, 1000000);
	ck_assert_int_eq(copies_exact_skew(1), SHARD_COUNT);
	st = status(w);
	ck_assert_int_eq(st.copies_pending, 0);
	ck_assert_int_eq(st.copies_written, SHARD_COUNT);
	ck_assert_str_eq(st.copies_version, store_version(ver, sizeof(ver)));
	ck_assert_int_eq(st.copies_rules_version, 3);
	ck_assert_str_eq(st.copies_error, "");
	/* the text is rule_to_text's, the store's, byte for byte */
	test_check_cmd(__FILE__, __LINE__, C,
		       "\"{\"name\":\"login\",\"match\":\"/login\",\"algorithm\":\"sliding_log\","
		       "\"limit\":5,\"window_ms\":60000}\"",
		       "HGET sluice:{777}:rules login");
	/* nothing changed: the next steps write nothing */
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	step(w, WORKER_PRUNE, 1000100);
	step(w, WORKER_DRAIN, 1000200);
	ck_assert_int_eq(hset_calls(), 0);
	ck_assert_int_eq(status(w).copies_written, SHARD_COUNT);
	worker_free(w);
}
END_TEST

/* An empty store: every copy says ":0" (no epoch, version 0) and holds no rule. */
START_TEST(copies_of_an_empty_store)
{
	struct worker *w = copies_worker(0);

	step(w, WORKER_DRAIN, 1000);
	ck_assert_int_eq(copies_exact(), SHARD_COUNT);
	test_check_cmd(__FILE__, __LINE__, C, "\":0\"", "HGET sluice:{0}:rules :version");
	ck_assert_str_eq(status(w).copies_version, ":0");
	worker_free(w);
}
END_TEST

/*
 * A PUT and a DELETE through the store reach all 1024 copies at the next
 * step: the new rule written, the deleted one HDEL'd, a changed one
 * replaced, as the difference from the version the copies held (one HSET of
 * what changed, one HDEL of what went: no HKEYS, no rewrite of the rest);
 * but a copy that holds a stray field (not ':') has a field too many for
 * its version: it is rewritten whole (HKEYS), the stray field goes, ':'
 * fields stay.
 */
START_TEST(copies_follow_put_and_delete)
{
	struct worker *w = copies_worker(1);
	char ver[96];
	redisReply *r;

	three_rules();
	step(w, WORKER_DRAIN, 1000);
	ck_assert_int_eq(copies_exact_skew(1), SHARD_COUNT);
	freeReplyObject(test_cmd(C, "HSET sluice:{12}:rules stray x :other y"));
	put_rule("checkout", "{\"match\":\"/checkout\",\"algorithm\":\"fixed_window\",\"limit\":3,\"window_ms\":1000}");
	del_rule("login");
	put_rule("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":7,\"rate\":2}");
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	step(w, WORKER_DRAIN, 1100);
	/* the difference in 1023 copies: HDEL of "login", one HSET of checkout, api and :version;
	 * {12} whole: HKEYS, one HDEL of login and stray, one HSET of every rule */
	r = test_cmd(C, "INFO commandstats");
	ck_assert_ptr_nonnull(strstr(r->str, "cmdstat_hkeys:calls=1,"));
	ck_assert_ptr_nonnull(strstr(r->str, "cmdstat_hdel:calls=1024,"));
	ck_assert_ptr_nonnull(strstr(r->str, "cmdstat_hset:calls=1024,"));
	freeReplyObject(r);
	ck_assert_int_eq(copies_exact_skew(1), SHARD_COUNT);
	test_check_cmd(__FILE__, __LINE__, C, "{nil, nil, \"y\"}", "HMGET sluice:{12}:rules login stray :other");
	test_check_cmd(__FILE__, __LINE__, C, "0", "HEXISTS sluice:{1023}:rules login");
	ck_assert_str_eq(status(w).copies_version, store_version(ver, sizeof(ver)));
	ck_assert_int_eq(status(w).copies_rules_version, 6);
	ck_assert_int_eq(status(w).copies_written, 2 * SHARD_COUNT);
	/* {12} at another version: rewritten whole at the next check (a prune step checks all) */
	freeReplyObject(test_cmd(C, "HSET sluice:{12}:rules :version x stray x"));
	step(w, WORKER_PRUNE, 1150);
	ck_assert_int_eq(copies_exact_skew(1), SHARD_COUNT);
	test_check_cmd(__FILE__, __LINE__, C, "{nil, nil, \"y\"}", "HMGET sluice:{12}:rules login stray :other");
	ck_assert_int_eq(status(w).copies_written, 2 * SHARD_COUNT + 1);
	/* every rule deleted: the copies hold none, and the new version */
	del_rule("api");
	del_rule("search");
	del_rule("checkout");
	step(w, WORKER_PRUNE, 1200);
	ck_assert_int_eq(copies_exact_skew(1), SHARD_COUNT);
	test_check_cmd(__FILE__, __LINE__, C, "2", "HLEN sluice:{500}:rules");
	worker_free(w);
}
END_TEST

/*
 * Copies lost or edited by hand are found and written again: by the rolling
 * check (all of them over 5 s), at once by a prune step (every copy), and
 * after a FLUSHALL with the rules restored (a new epoch).
 */
START_TEST(copies_repaired)
{
	struct worker *w = copies_worker(0);
	char ver[96];

	three_rules();
	step(w, WORKER_DRAIN, 1000000);
	freeReplyObject(test_cmd(C, "DEL sluice:{100}:rules sluice:{1000}:rules"));
	step(w, WORKER_DRAIN, 1000100); /* the rolling check: shards [0, 21) */
	ck_assert_int_eq(copies_exact(), SHARD_COUNT - 2);
	step(w, WORKER_DRAIN, 1000600); /* [21, 123) */
	ck_assert_int_eq(copies_exact(), SHARD_COUNT - 1);
	step(w, WORKER_DRAIN, 1005000);
	ck_assert_int_eq(copies_exact(), SHARD_COUNT);
	/* edited by hand (a rule changed, a version that is not the store's): a prune step checks every copy */
	freeReplyObject(test_cmd(C, "HSET sluice:{900}:rules api {} :version x:1"));
	freeReplyObject(test_cmd(C, "HDEL sluice:{901}:rules :version"));
	freeReplyObject(test_cmd(C, "HSET sluice:{902}:rules :version %s9", store_version(ver, sizeof(ver))));
	step(w, WORKER_PRUNE, 1005001);
	ck_assert_int_eq(copies_exact(), SHARD_COUNT);
	ck_assert_int_eq(status(w).copies_written, SHARD_COUNT + 5);
	/* Redis lost everything; the rules are stored again (a new epoch): every copy written again */
	test_redis_flush(C);
	three_rules();
	step(w, WORKER_DRAIN, 1005100);
	ck_assert_int_eq(copies_exact(), SHARD_COUNT);
	ck_assert_int_eq(status(w).copies_written, 2 * SHARD_COUNT + 5);
	ck_assert_str_eq(status(w).copies_version, store_version(ver, sizeof(ver)));
	worker_free(w);
}
END_TEST

/*
 * The store's version key lost and marked again (same epoch, version 1):
 * copies at a later version of that epoch are not the store's and are
 * written (a copy of a later version is left alone only while the store is
 * later too).
 */
START_TEST(copies_newer_than_the_store)
{
	struct worker *w = copies_worker(0);
	char ver[96];

	three_rules();
	step(w, WORKER_DRAIN, 1000);
	freeReplyObject(test_cmd(C, "DEL sluice:rules:version"));
	ck_assert_int_eq(rulestore_mark(RC, "sluice:"), 0);
	step(w, WORKER_DRAIN, 1100);
	ck_assert_int_eq(copies_exact(), SHARD_COUNT);
	ck_assert_str_eq(status(w).copies_version, store_version(ver, sizeof(ver)));
	ck_assert_int_eq(status(w).copies_rules_version, 1);
	ck_assert_int_eq(status(w).copies_pending, 0);
	worker_free(w);
}
END_TEST

/* A copy of another type is reported and retried every second; the rest are written and the drain goes on. */
START_TEST(copies_copy_of_another_type)
{
	struct worker *w = copies_worker(0);
	struct worker_result res;
	struct worker_status st;

	three_rules();
	freeReplyObject(test_cmd(C, "SET sluice:{5}:rules oops"));
	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, INT64_MAX, 1000, &res), 0);
	st = status(w);
	ck_assert_int_eq(st.copies_pending, 1);
	ck_assert_int_eq(st.copies_written, SHARD_COUNT - 1);
	ck_assert_msg(!strncmp(st.copies_error, "HGET of shard 5's rules copy: WRONGTYPE", 39), "%s", st.copies_error);
	ck_assert_str_eq(st.job[WORKER_DRAIN].last_error, "");
	ck_assert_int_eq(copies_exact(), SHARD_COUNT - 1);
	/* fixed by hand: not before 250 ms (COPIES_RETRY_MS), then written */
	freeReplyObject(test_cmd(C, "DEL sluice:{5}:rules"));
	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, INT64_MAX, 1200, &res), 0);
	ck_assert_int_eq(status(w).copies_pending, 1);
	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, INT64_MAX, 2000, &res), 0);
	st = status(w);
	ck_assert_int_eq(st.copies_pending, 0);
	ck_assert_int_eq(st.copies_written, SHARD_COUNT);
	ck_assert_str_eq(st.copies_error, "");
	ck_assert_int_eq(copies_exact(), SHARD_COUNT);
	worker_free(w);
}
END_TEST

/* Redis at maxmemory refuses the writes: reported, retried, and written once there is room. */
START_TEST(copies_refused_at_maxmemory)
{
	struct worker *w = copies_worker(0);
	struct worker_result res;
	struct worker_status st;

	three_rules();
	freeReplyObject(test_cmd(C, "CONFIG SET maxmemory-policy noeviction"));
	freeReplyObject(test_cmd(C, "CONFIG SET maxmemory 1"));
	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, INT64_MAX, 1000, &res), 0);
	freeReplyObject(test_cmd(C, "CONFIG SET maxmemory 0"));
	st = status(w);
	ck_assert_int_eq(st.copies_pending, SHARD_COUNT);
	ck_assert_int_eq(st.copies_written, 0);
	ck_assert_msg(!strncmp(st.copies_error, "HSET of shard 0's rules copy: Redis is out of memory", 52), "%s", st.copies_error);
	ck_assert_int_eq(worker_step(w, WORKER_DRAIN, INT64_MAX, 2000, &res), 0);
	ck_assert_int_eq(status(w).copies_pending, 0);
	ck_assert_int_eq(copies_exact(), SHARD_COUNT);
	worker_free(w);
}
END_TEST

/* A worker that starts on copies in place (a restart, a second daemon) writes nothing. */
START_TEST(copies_restart_writes_nothing)
{
	struct worker *w = copies_worker(1);

	three_rules();
	step(w, WORKER_DRAIN, 1000);
	worker_free(w);
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	w = copies_worker(1);
	step(w, WORKER_DRAIN, 2000);
	step(w, WORKER_PRUNE, 2001);
	ck_assert_int_eq(hset_calls(), 0);
	ck_assert_int_eq(status(w).copies_written, 0);
	ck_assert_int_eq(status(w).copies_pending, 0);
	ck_assert_int_eq(copies_exact_skew(1), SHARD_COUNT);
	worker_free(w);
}
END_TEST

/*
 * Two workers on one Redis: a change through the store is in every copy
 * after a step of either; the other's next step writes nothing.
 */
START_TEST(copies_two_workers)
{
	struct worker *a = copies_worker(0), *b = copies_worker(0);

	three_rules();
	step(a, WORKER_DRAIN, 1000);
	step(b, WORKER_DRAIN, 1000);
	ck_assert_int_eq(status(b).copies_written, 0);
	del_rule("search");
	step(b, WORKER_DRAIN, 1100);
	ck_assert_int_eq(copies_exact(), SHARD_COUNT);
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	step(a, WORKER_DRAIN, 1100);
	ck_assert_int_eq(hset_calls(), 0);
	ck_assert_int_eq(status(a).copies_written, SHARD_COUNT);
	ck_assert_int_eq(status(a).copies_pending, 0);
	worker_free(a);
	worker_free(b);
}
END_TEST

/* A worker made without write_rules leaves the rule fields alone. */
START_TEST(copies_off_leaves_them)
{
	struct worker_config wc = { .redis = &T, .timeout_ms = 1000, .prefix = "sluice:", .batch_size = 500,
				    .layouts = L, .nlayouts = NL };
	struct worker *w = worker_new(&wc);

	three_rules();
	step(w, WORKER_DRAIN, 1000);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS sluice:{0}:rules"), 0);
	ck_assert_int_eq(status(w).copies_on, 0);
	ck_assert_int_eq(status(w).copies_pending, 0);
	worker_free(w);
}
END_TEST

static Suite *copies_suite(void)
{
	Suite *s = suite_create("copies");
	TCase *tc = tcase_create("copies");

	tcase_add_unchecked_fixture(tc, copies_suite_up, copies_suite_down);
	tcase_add_checked_fixture(tc, copies_flush, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, copies_written_at_first_step);
	tcase_add_test(tc, copies_of_an_empty_store);
	tcase_add_test(tc, copies_follow_put_and_delete);
	tcase_add_test(tc, copies_repaired);
	tcase_add_test(tc, copies_newer_than_the_store);
	tcase_add_test(tc, copies_copy_of_another_type);
	tcase_add_test(tc, copies_refused_at_maxmemory);
	tcase_add_test(tc, copies_restart_writes_nothing);
	tcase_add_test(tc, copies_two_workers);
	tcase_add_test(tc, copies_off_leaves_them);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(copies_suite());
}

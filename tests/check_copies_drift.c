/*
 * Integration suite of the rule copies (worker/copies.c, copies_check.c)
 * against a real redis-server: a copy whose ":version" is still the store's
 * (or the one before) but whose fields were edited by hand.  The check reads
 * ":version" and HLEN of every copy; a count other than the version's rules
 * plus the ':' fields the copy holds makes it rewritten whole, so a rule
 * lost from one shard's copy does not leave the clients of that shard
 * calling with `*` admitted with no limit ("none").  A ':' field added by
 * hand is kept and learnt: nothing is written for it, at no step after.
 * (The fixture: tests/copies_fixture.h.)
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

/* A rule JSON that matches every path: what a stray field could make `*` pick. */
#define EVIL "{\"name\":\"evilextra\",\"match\":\"/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":1000000,\"rate\":1000}"

/*
 * A rule HDEL'd from a current copy is written back at the next prune step
 * (a prune step checks every copy): one HKEYS, one HSET of that copy, the
 * exact fields (the three rules, :version, :max_clock_skew_ms); then
 * nothing more is read or written.  The rolling check finds it too.
 */
START_TEST(copies_drift_rule_lost)
{
	struct worker *w = copies_worker(1);

	three_rules();
	step(w, WORKER_DRAIN, 1000000);
	freeReplyObject(test_cmd(C, "HDEL sluice:{230}:rules api"));
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	step(w, WORKER_PRUNE, 1000001);
	ck_assert_int_eq(cmd_calls("hkeys"), 1);
	ck_assert_int_eq(hset_calls(), 1);
	ck_assert_int_eq(cmd_calls("hlen"), SHARD_COUNT);
	ck_assert_int_eq(copies_exact_skew(1), SHARD_COUNT);
	ck_assert_int_eq(test_cmd_int(C, "HLEN sluice:{230}:rules"), 5);
	ck_assert_int_eq(status(w).copies_written, SHARD_COUNT + 1);
	ck_assert_int_eq(status(w).copies_pending, 0);
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	step(w, WORKER_PRUNE, 1000002);
	ck_assert_int_eq(cmd_calls("hkeys") + hset_calls(), 0);
	/* the rolling check (shards [0, 21) first): shard 3 lost two rules */
	freeReplyObject(test_cmd(C, "HDEL sluice:{3}:rules login search"));
	step(w, WORKER_DRAIN, 1000100);
	ck_assert_int_eq(copies_exact_skew(1), SHARD_COUNT);
	ck_assert_int_eq(status(w).copies_written, SHARD_COUNT + 2);
	worker_free(w);
}
END_TEST

/* A stray rule field added to a current copy is HDEL'd at the next prune step; the rules are written with it. */
START_TEST(copies_drift_stray_field)
{
	struct worker *w = copies_worker(1);

	three_rules();
	step(w, WORKER_DRAIN, 1000);
	freeReplyObject(test_cmd(C, "HSET sluice:{229}:rules evilextra %s", EVIL));
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	step(w, WORKER_PRUNE, 1001);
	ck_assert_int_eq(test_cmd_int(C, "HEXISTS sluice:{229}:rules evilextra"), 0);
	ck_assert_int_eq(copies_exact_skew(1), SHARD_COUNT);
	ck_assert_int_eq(cmd_calls("hkeys"), 1);
	ck_assert_int_eq(cmd_calls("hdel"), 1);
	ck_assert_int_eq(hset_calls(), 1);
	ck_assert_int_eq(status(w).copies_written, SHARD_COUNT + 1);
	/* one rule lost and one stray field: the same count, and not found (copies_check.c) */
	freeReplyObject(test_cmd(C, "HDEL sluice:{229}:rules api"));
	freeReplyObject(test_cmd(C, "HSET sluice:{229}:rules evilextra %s", EVIL));
	step(w, WORKER_PRUNE, 1002);
	ck_assert_int_eq(test_cmd_int(C, "HEXISTS sluice:{229}:rules evilextra"), 1);
	ck_assert_int_eq(status(w).copies_written, SHARD_COUNT + 1);
	worker_free(w);
}
END_TEST

/*
 * A ':' field added by hand is not a rule: kept.  The copy's count is off
 * once: one HKEYS shows the target's rule names, so the count of its ':'
 * fields is learnt and nothing is written; over the steps after (prune
 * steps, the rolling check over 5 s), no HKEYS, no HSET.  A worker that
 * starts on it (a restart) reads its HKEYS once and writes nothing.
 */
START_TEST(copies_drift_colon_field_kept)
{
	struct worker *w = copies_worker(1);

	three_rules();
	step(w, WORKER_DRAIN, 1000000);
	freeReplyObject(test_cmd(C, "HSET sluice:{300}:rules :extra v"));
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	step(w, WORKER_PRUNE, 1000001);
	ck_assert_int_eq(cmd_calls("hkeys"), 1);
	ck_assert_int_eq(hset_calls(), 0);
	test_check_cmd(__FILE__, __LINE__, C, "\"v\"", "HGET sluice:{300}:rules :extra");
	ck_assert_int_eq(status(w).copies_pending, 0);
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	for (long long t = 1000500; t < 1012000; t += 500)
		step(w, t % 1000 ? WORKER_DRAIN : WORKER_PRUNE, t);
	ck_assert_int_gt(cmd_calls("hlen"), 2 * SHARD_COUNT);
	ck_assert_int_eq(cmd_calls("hkeys"), 0);
	ck_assert_int_eq(hset_calls(), 0);
	ck_assert_int_eq(status(w).copies_written, SHARD_COUNT);
	ck_assert_int_eq(copies_exact_skew(1), SHARD_COUNT);
	worker_free(w);
	w = copies_worker(1);
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	step(w, WORKER_DRAIN, 2000000);
	step(w, WORKER_PRUNE, 2000001);
	ck_assert_int_eq(cmd_calls("hkeys"), 1);
	ck_assert_int_eq(hset_calls(), 0);
	ck_assert_int_eq(status(w).copies_written, 0);
	worker_free(w);
}
END_TEST

/*
 * A copy whose count is still off right after its whole rewrite (its skew
 * field HDEL'd: the rewrite counts on skew.c writing it back, which happens
 * only at skew.c's own check of that shard) is not rewritten at every check:
 * one HSET of the copy, then at most an HKEYS each time its count changes,
 * and nothing once the skew field is back.
 */
START_TEST(copies_drift_no_write_loop)
{
	struct worker *w = copies_worker(1);
	uint64_t written;

	three_rules();
	step(w, WORKER_DRAIN, 1000000);
	freeReplyObject(test_cmd(C, "HDEL sluice:{700}:rules :max_clock_skew_ms login"));
	freeReplyObject(test_cmd(C, "HSET sluice:{700}:rules :version x :extra v"));
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	step(w, WORKER_PRUNE, 1000001);
	written = status(w).copies_written;
	ck_assert_int_eq(written, SHARD_COUNT + 1);
	for (long long t = 1000500; t < 1012000; t += 500)
		step(w, t % 1000 ? WORKER_DRAIN : WORKER_PRUNE, t);
	ck_assert_int_eq(hset_calls(), 2); /* the copy's rewrite, skew.c's field */
	ck_assert_int_eq(cmd_calls("hkeys"), 3); /* the rewrite; two learnt counts (without the skew field, with it) */
	ck_assert_int_eq(status(w).copies_written, written);
	ck_assert_int_eq(copies_exact_skew(1), SHARD_COUNT);
	test_check_cmd(__FILE__, __LINE__, C, "\"v\"", "HGET sluice:{700}:rules :extra");
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	for (long long t = 1012000; t < 1024000; t += 500)
		step(w, t % 1000 ? WORKER_DRAIN : WORKER_PRUNE, t);
	ck_assert_int_eq(cmd_calls("hkeys") + hset_calls(), 0);
	worker_free(w);
}
END_TEST

/*
 * A copy at the version before that lost a rule is not given the difference
 * (which would leave the rule lost): its count is off for that version, so
 * it is rewritten whole (one HKEYS); the 1023 others get the difference.
 */
START_TEST(copies_drift_prev_version_rule_lost)
{
	struct worker *w = copies_worker(1);

	three_rules();
	step(w, WORKER_DRAIN, 1000);
	freeReplyObject(test_cmd(C, "HDEL sluice:{40}:rules search"));
	put_rule("checkout", "{\"match\":\"/checkout\",\"algorithm\":\"fixed_window\",\"limit\":3,\"window_ms\":1000}");
	freeReplyObject(test_cmd(C, "CONFIG RESETSTAT"));
	step(w, WORKER_DRAIN, 1100);
	ck_assert_int_eq(copies_exact_skew(1), SHARD_COUNT);
	ck_assert_int_eq(test_cmd_int(C, "HEXISTS sluice:{40}:rules search"), 1);
	ck_assert_int_eq(cmd_calls("hkeys"), 1);
	ck_assert_int_eq(hset_calls(), SHARD_COUNT);
	ck_assert_int_eq(status(w).copies_written, 2 * SHARD_COUNT);
	worker_free(w);
}
END_TEST

static Suite *copies_drift_suite(void)
{
	Suite *s = suite_create("copies_drift");
	TCase *tc = tcase_create("copies_drift");

	tcase_add_unchecked_fixture(tc, copies_suite_up, copies_suite_down);
	tcase_add_checked_fixture(tc, copies_flush, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, copies_drift_rule_lost);
	tcase_add_test(tc, copies_drift_stray_field);
	tcase_add_test(tc, copies_drift_colon_field_kept);
	tcase_add_test(tc, copies_drift_no_write_loop);
	tcase_add_test(tc, copies_drift_prev_version_rule_lost);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(copies_drift_suite());
}

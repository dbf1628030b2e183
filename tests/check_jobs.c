/*
 * Bulk resets as background jobs (admin/jobs.c, admin/routes_jobs.c):
 * POST /v1/reset answers 202 with the job and its Location; GET /v1/jobs and
 * GET /v1/jobs/{id} show it; DELETE cancels a queued job at once and a
 * running one at its next batch, what it reset so far staying reset and
 * counted exactly; an ended job cannot be cancelled (409); 8 jobs may wait
 * or run (429 beyond); the last 32 are kept.  The fixture is
 * tests/api_fixture.h's.
 */
#include <time.h>

#include "core/clock.h"
#include "core/shard.h"
#include "tests/api_fixture.h"

#define MANY 10000 /* buckets a job takes long enough over to be cancelled while it runs */

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* POST /v1/reset `body`: 202, its id (copied into `id`). */
static void post_job(const char *body, char *id, size_t cap)
{
	char where[48];

	ck_assert_int_eq(call("POST", "/v1/reset", body), 202);
	snprintf(id, cap, "%s", jstr("id"));
	snprintf(where, sizeof(where), "/v1/jobs/%s", id);
	ck_assert_str_eq(res.location, where);
}

/* GET /v1/jobs/{id} until its state is not `while_state`; `res` holds it then. */
static void wait_not(const char *id, const char *while_state)
{
	char where[48];
	int64_t until = clock_mono_ms() + 60000;

	snprintf(where, sizeof(where), "/v1/jobs/%s", id);
	for (;;) {
		ck_assert_int_eq(get(where), 200);
		if (strcmp(jstr("state"), while_state))
			return;
		ck_assert_msg(clock_mono_ms() < until, "job %s still %s", id, while_state);
		sleep_ms(2);
	}
}

static long long registered(void)
{
	long long n = 0;

	for (unsigned k = 0; k < SHARD_COUNT; k++)
		n += test_cmd_int(c, "ZCARD sluice:{%u}:registry:leaky_bucket", k);
	return n;
}

static void fill(int n)
{
	long long t = test_server_ms(c) + AHEAD_MS;

	for (int i = 0; i < n; i++) {
		char p[32];

		snprintf(p, sizeof(p), "/many/%d", i);
		lb_admit(p, 10, "0.001", t);
	}
}

/* A new job answers exactly this before the thread took it (or "running", the only member that may differ). */
START_TEST(test_job_answer)
{
	char id[24];
	long long created;

	lb_admit("/one", 10, "0.001", test_server_ms(c) + AHEAD_MS);
	post_job("{\"match\":\"/o*\",\"dry_run\":true}", id, sizeof(id));
	created = take_int("created_ms");
	ck_assert_int_ge(created, test_server_ms(c) - 60000);
	ck_assert_int_le(take_int("elapsed_ms"), 1000);
	if (!strcmp(jstr("state"), "running"))
		cJSON_ReplaceItemInObject(res.json, "state", cJSON_CreateString("queued"));
	/* counts may have moved already when it runs: the done answer below is exact */
	take_int("walked");
	take_int("paths");
	take_int("keys");
	take_int("entries");
	ck_json_is("{\"id\":\"1\",\"kind\":\"reset\",\"state\":\"queued\",\"match\":\"/o*\",\"dry_run\":true,"
		   "\"cancel_requested\":false,\"retries\":0}");
	wait_not(id, "queued");
	wait_not(id, "running");
	ck_assert_int_eq(take_int("created_ms"), created);
	take_int("elapsed_ms");
	ck_json_is("{\"id\":\"1\",\"kind\":\"reset\",\"state\":\"done\",\"match\":\"/o*\",\"dry_run\":true,\"walked\":1,"
		   "\"paths\":1,\"keys\":2,\"entries\":1,\"cancel_requested\":false,\"retries\":0}");
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_lb_key("/one")), 1); /* a dry run */
	/* an ended job cannot be cancelled; unknown ids are 404, whatever they look like */
	ck_assert_int_eq(call("DELETE", "/v1/jobs/1", NULL), 409);
	ck_assert_str_eq(jstr("error.code"), "job_ended");
	ck_assert_str_eq(jstr("error.message"), "the job has ended (done): there is nothing to cancel");
	ck_assert_int_eq(get("/v1/jobs/2"), 404);
	ck_assert_str_eq(jstr("error.code"), "not_found");
	ck_assert_int_eq(get("/v1/jobs/01x"), 404);
	ck_assert_int_eq(get("/v1/jobs/-1"), 404);
	ck_assert_int_eq(call("DELETE", "/v1/jobs/99999999999999999999999", NULL), 404);
}
END_TEST

/* Cancelled while it runs: it stops at a batch boundary; what it reset is gone and counted, the rest is there. */
START_TEST(test_cancel_running)
{
	char id[24];
	long long paths, keys;

	fill(MANY);
	post_job("{\"match\":\"/many/*\"}", id, sizeof(id));
	do
		wait_not(id, "queued");
	while (jint("paths") == 0 && !strcmp(jstr("state"), "running")); /* until its first batch is done */
	ck_assert_str_eq(jstr("state"), "running");
	ck_assert_int_eq(call("DELETE", "/v1/jobs/1", NULL), 200);
	ck_assert_msg(cJSON_IsTrue(jat("cancel_requested")), "%s", res.text);
	wait_not(id, "running");
	ck_assert_str_eq(jstr("state"), "cancelled");
	paths = jint("paths");
	keys = jint("keys");
	ck_assert_msg(paths > 0 && paths < MANY, "cancelled part-way: %lld of %d", paths, MANY);
	ck_assert_int_eq(keys, 2 * paths);
	ck_assert_int_eq(jint("entries"), paths);
	ck_assert_int_ge(jint("walked"), paths);
	/* exact: each path reset is gone with its meta and due index entry, each other one is whole */
	ck_assert_int_eq(registered(), MANY - paths);
	{
		long long buckets = 0;

		for (int i = 0; i < MANY; i++) {
			char p[32];

			snprintf(p, sizeof(p), "/many/%d", i);
			buckets += test_cmd_int(c, "EXISTS %s %s", test_lb_key(p), test_lb_meta(p));
		}
		ck_assert_int_eq(buckets, 2 * (MANY - paths));
	}
	/* a job for the rest ends the work: done, the counts add up */
	ck_assert_int_eq(reset_wait("{\"match\":\"/many/*\"}"), 200);
	ck_assert_int_eq(jint("paths"), MANY - paths);
	ck_assert_int_eq(registered(), 0);
}
END_TEST

/* 8 jobs wait or run at most (429 beyond); one queued is cancelled at once; 32 kept, newest first. */
START_TEST(test_limits_and_list)
{
	char id[10][24];

	fill(MANY);
	post_job("{\"match\":\"/many/*\",\"dry_run\":true}", id[0], sizeof(id[0]));
	for (int i = 1; i < 8; i++)
		post_job("{\"match\":\"/none*\"}", id[i], sizeof(id[i]));
	ck_assert_int_eq(call("POST", "/v1/reset", "{\"match\":\"/none*\"}"), 429);
	ck_assert_str_eq(jstr("error.code"), "too_many_jobs");
	/* the last one waits behind the first's 10,000 paths */
	ck_assert_int_eq(call("DELETE", "/v1/jobs/8", NULL), 200);
	ck_assert_str_eq(jstr("state"), "cancelled");
	ck_assert_msg(cJSON_IsTrue(jat("cancel_requested")), "%s", res.text);
	ck_assert_int_eq(jint("walked"), 0);
	post_job("{\"match\":\"/none*\"}", id[8], sizeof(id[8])); /* room again */
	ck_assert_str_eq(id[8], "9");
	wait_not(id[8], "queued");
	wait_not(id[8], "running");
	ck_assert_str_eq(jstr("state"), "done");
	wait_not(id[0], "running");
	ck_assert_int_eq(jint("paths"), MANY);
	ck_assert_int_eq(registered(), MANY); /* a dry run */
	ck_assert_int_eq(get("/v1/jobs"), 200);
	{
		cJSON *jobs = jat("jobs"), *j;
		int n = 0, want = 9;

		cJSON_ArrayForEach(j, jobs) {
			char idw[16];

			snprintf(idw, sizeof(idw), "%d", want--);
			ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "id")->valuestring, idw);
			n++;
		}
		ck_assert_int_eq(n, 9);
	}
	/* 32 kept: after 24 more (33 in all), the oldest (1) is forgotten */
	for (int i = 0; i < 24; i++) {
		char one[24];

		post_job("{\"match\":\"/none*\"}", one, sizeof(one));
		wait_not(one, "queued");
		wait_not(one, "running");
	}
	ck_assert_int_eq(get("/v1/jobs"), 200);
	ck_assert_int_eq(cJSON_GetArraySize(jat("jobs")), 32);
	ck_assert_str_eq(cJSON_GetArrayItem(jat("jobs"), 0)->child->valuestring, "33");
	ck_assert_str_eq(cJSON_GetArrayItem(jat("jobs"), 31)->child->valuestring, "2");
	ck_assert_int_eq(get("/v1/jobs/1"), 404);
	ck_assert_int_eq(get("/v1/jobs/2"), 200);
}
END_TEST

/*
 * Redis stops answering part-way (CLIENT PAUSE longer than the job's 200 ms
 * timeout): the walk is started again and the job ends done; what it met is
 * gone (the batch whose answer was lost is reset but not counted).
 */
START_TEST(test_retry_after_timeout)
{
	struct api_config ac = api_config_of(&target, w, NULL, 0);
	struct api *a;
	char where[48];
	int64_t until;
	long long paths;

	ac.timeout_ms = 200;
	ck_assert_ptr_nonnull(a = api_new(&ac));
	fill(MANY);
	ck_assert_int_eq(call_on(a, "POST", "/v1/reset", "{\"match\":\"/many/*\"}", 19, NULL, NULL, NULL), 202);
	snprintf(where, sizeof(where), "/v1/jobs/%s", jstr("id"));
	do
		ck_assert_int_eq(call_on(a, "GET", where, NULL, 0, NULL, NULL, NULL), 200);
	while (jint("paths") == 0 && !strcmp(jstr("state"), "running"));
	freeReplyObject(test_cmd(c, "CLIENT PAUSE 700 ALL"));
	until = clock_mono_ms() + 60000;
	do {
		sleep_ms(5);
		ck_assert_int_eq(call_on(a, "GET", where, NULL, 0, NULL, NULL, NULL), 200);
		ck_assert(clock_mono_ms() < until);
	} while (!strcmp(jstr("state"), "running"));
	ck_assert_msg(!strcmp(jstr("state"), "done"), "%s", res.text);
	ck_assert_msg(jint("retries") >= 1, "no retry: %s", res.text);
	paths = jint("paths");
	ck_assert_int_eq(registered(), 0);
	ck_assert_msg(paths <= MANY && paths >= MANY - 2 * 200, "%lld of %d counted", paths, MANY);
	ck_assert_int_eq(jint("keys"), 2 * paths);
	api_free(a);
}
END_TEST

static Suite *jobs_suite(void)
{
	Suite *s = suite_create("jobs");
	TCase *tc = test_tcase(s, "jobs", api_setup, api_teardown, 120);

	tcase_add_test(tc, test_job_answer);
	tcase_add_test(tc, test_cancel_running);
	tcase_add_test(tc, test_limits_and_list);
	tcase_add_test(tc, test_retry_after_timeout);
	return s;
}

int main(void)
{
	return test_run_suite(jobs_suite());
}

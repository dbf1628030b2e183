/*
 * End-to-end: the real sluiced binary ($SLUICED, else ./sluiced) against a
 * redis-server the harness starts, driven by the client scripts and read
 * through the admin API over HTTP (libcurl).
 */
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/scripts.h"
#include "core/shard.h"
#include "tests/harness.h"

static struct test_redis R;
static redisContext *C;

struct daemon_proc {
	pid_t pid;
	int port;
	char config[64];
	char log[80];
};

static const char *binary(void)
{
	const char *s = getenv("SLUICED");

	return s && *s ? s : "./sluiced";
}

/* The status of one request to the daemon on `port` (0 when the transfer failed). */
static long http_status(int port, const char *method, const char *path, const char *body)
{
	struct test_http_res h;

	return test_http_try(port, method, path, body, TEST_HTTP_PLAIN, &h);
}

/* GET `path`: its body parsed (caller frees), after asserting the status. */
static cJSON *get_json(int port, const char *path, long want_status)
{
	struct test_http_res h;
	cJSON *j;

	test_http(port, "GET", path, NULL, TEST_HTTP_PLAIN, &h);
	ck_assert_msg(h.status == want_status, "GET %s: %ld (%s), want %ld", path, h.status, h.body, want_status);
	j = cJSON_Parse(h.body);
	ck_assert_msg(j != NULL, "GET %s: not JSON: %s", path, h.body);
	return j;
}

/* *j = GET `path` (200), freeing the document it held; returns it (to re-read a state in ck_wait_until). */
static cJSON *refetch(cJSON **j, int port, const char *path)
{
	cJSON_Delete(*j);
	*j = NULL;
	*j = get_json(port, path, 200);
	return *j;
}

/* How many rules a GET /v1/rules body lists. */
static int n_rules(const cJSON *j)
{
	return cJSON_GetArraySize(cJSON_GetObjectItem(j, "rules"));
}

static long long jint(const cJSON *o, const char *dotted)
{
	char path[128], *save = NULL, *tok;
	const cJSON *cur = o;

	snprintf(path, sizeof(path), "%s", dotted);
	for (tok = strtok_r(path, ".", &save); tok; tok = strtok_r(NULL, ".", &save))
		cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
	ck_assert_msg(cJSON_IsNumber(cur), "%s is not a number", dotted);
	return (long long)cur->valuedouble;
}

static void write_config(struct daemon_proc *d, const char *redis_url, const char *extra)
{
	FILE *f;
	int fd;

	snprintf(d->config, sizeof(d->config), "/tmp/sluice-e2e-XXXXXX");
	fd = mkstemp(d->config);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fprintf(f,
		"{\"redis\":\"%s\",\"listen\":\"127.0.0.1:%d\",\"drain_interval_ms\":20,"
		"\"prune_interval_ms\":50,\"rules\":["
		"{\"name\":\"e2e-bucket\",\"match\":\"/bucket/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":50},"
		"{\"name\":\"e2e-log\",\"match\":\"/log\",\"algorithm\":\"sliding_log\",\"limit\":3,\"window_ms\":300}]%s}",
		redis_url, d->port, extra ? extra : "");
	fclose(f);
}

/* Start sluiced with the config and `extra` members (",\"k\":v...", or NULL); do not wait. */
static void spawn_daemon_with(struct daemon_proc *d, const char *redis_url, const char *extra)
{
	d->port = test_free_port();
	write_config(d, redis_url, extra);
	snprintf(d->log, sizeof(d->log), "%s.log", d->config);
	d->pid = fork();
	ck_assert_int_ge(d->pid, 0);
	if (d->pid == 0) {
		FILE *lf = freopen(d->log, "w", stderr);

		(void)lf;
		execl(binary(), "sluiced", "--config", d->config, (char *)NULL);
		_exit(127);
	}
}

static void spawn_daemon(struct daemon_proc *d, const char *redis_url)
{
	spawn_daemon_with(d, redis_url, NULL);
}

/* ck_wait_until condition: `d` answers /healthz with 200; it must still be running. */
static int healthy(const struct daemon_proc *d)
{
	int status;

	ck_assert_msg(waitpid(d->pid, &status, WNOHANG) == 0, "sluiced exited early (see %s)", d->log);
	return http_status(d->port, "GET", "/healthz", NULL) == 200;
}

/* Start sluiced with the config and `extra` members; wait for /healthz. */
static void start_daemon_with(struct daemon_proc *d, const char *redis_url, const char *extra)
{
	spawn_daemon_with(d, redis_url, extra);
	ck_wait_until(healthy(d), 5000, "sluiced did not answer /healthz");
}

static void start_daemon(struct daemon_proc *d, const char *redis_url)
{
	start_daemon_with(d, redis_url, NULL);
}

/*
 * Wait for the worker's first connect to Redis (on its first tick, a moment
 * after /healthz and /readyz answer, which are the API's).  Until then the
 * daemon's start (connections loading the scripts, the config's rules being
 * stored) competes with the test for Redis.
 */
static void wait_worker_connected(const struct daemon_proc *d)
{
	cJSON *j = NULL;

	ck_wait_until(cJSON_IsTrue(cJSON_GetObjectItem(refetch(&j, d->port, "/v1/worker"), "redis_up")), 3000,
		      "the worker did not connect");
	cJSON_Delete(j);
}

/* SIGTERM; returns the exit status; asserts it took less than a second. */
static int stop_daemon(struct daemon_proc *d)
{
	int status = 0;

	kill(d->pid, SIGTERM);
	ck_wait_until(waitpid(d->pid, &status, WNOHANG) != 0, 1000, "sluiced took over 1 s to stop");
	unlink(d->config);
	unlink(d->log);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Client acquire of cost 1 of the leaky bucket at `path` (capacity 10, rate
 * 50, the config's e2e-bucket numbers) at `now` ms, or at the server's clock
 * when now < 0 (what production clients do), by the calling contract
 * (lua/README.md): the five keys of the path's shard.
 */
static long long lb_acquire(const char *path, long long now)
{
	static const char *const params[] = { "10", "50" };

	return test_script_allowed(test_client_call(C, TEST_EVAL, "leaky_bucket", path, "1", now, params, 2),
				   "leaky_bucket");
}

/* A sliding log call (limit 3, window 300 ms: the config's e2e-log) at `now` (< 0: Redis TIME); returns `allowed`. */
static long long sl_acquire(const char *path, long long now)
{
	static const char *const params[] = { "3", "300" };

	return test_script_allowed(test_client_call(C, TEST_EVAL, "sliding_log", path, "1", now, params, 2),
				   "sliding_log");
}

/* max_clock_skew_ms in shard k's rules copy on `c`, or -1 when it has none. */
static long long copy_on(redisContext *c, unsigned k)
{
	redisReply *r = test_cmd(c, "HGET sluice:{%u}:rules :max_clock_skew_ms", k);
	long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

	freeReplyObject(r);
	return v;
}

/* How many of the 1024 shards' rules copies on `c` hold max_clock_skew_ms = ms. */
static int copies_holding(redisContext *c, long long ms)
{
	int n = 0;

	for (unsigned k = 0; k < 1024; k++)
		redisAppendCommand(c, "HGET sluice:{%u}:rules :max_clock_skew_ms", k);
	for (unsigned k = 0; k < 1024; k++) {
		redisReply *r = NULL;

		ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
		n += r->type == REDIS_REPLY_STRING && atoll(r->str) == ms;
		freeReplyObject(r);
	}
	return n;
}

/* Delete every shard's rules copy on `c`. */
static void drop_copies(redisContext *c)
{
	for (unsigned k = 0; k < 1024; k++)
		redisAppendCommand(c, "DEL sluice:{%u}:rules", k);
	for (unsigned k = 0; k < 1024; k++) {
		redisReply *r = NULL;

		ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
		freeReplyObject(r);
	}
}

/* The whole log of `d` so far, in `buf`. */
static const char *read_log(const struct daemon_proc *d, char *buf, size_t cap)
{
	FILE *f = fopen(d->log, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* ck_wait_until condition: the log of `d` (its first 32 KB) holds `what`. */
static int log_has(const struct daemon_proc *d, const char *what)
{
	char buf[32768];

	return strstr(read_log(d, buf, sizeof(buf)), what) != NULL;
}

static void setup(void)
{
	ck_assert_int_eq(test_redis_start(&R), 0);
	C = test_redis_connect(&R);
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void teardown(void)
{
	redisFree(C);
	test_redis_stop(&R);
	curl_global_cleanup();
}

static void flush(void)
{
	test_redis_flush(C);
}

START_TEST(drain_seen_through_admin_api)
{
	struct daemon_proc d;
	cJSON *j;
	int64_t t0;
	int n = 0;

	start_daemon(&d, R.url);
	/* the config's rules were stored in Redis */
	j = get_json(d.port, "/v1/rules", 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "rules")), 2);
	cJSON_Delete(j);

	/* twelve requests in one instant: ten fit, two are refused; the instant is the drain's
	 * horizon (max_clock_skew_ms, 10 s, behind the server's clock), so the worker drains at once */
	t0 = test_server_ms(C) - test_skew_ms();
	for (int i = 0; i < 12; i++)
		n += (int)lb_acquire("/bucket/a", t0);
	ck_assert_int_eq(n, 10);
	/* 10 entries at 50/s drain in 200 ms; wait for the worker to empty the bucket */
	j = NULL;
	ck_wait_until(jint(refetch(&j, d.port, "/v1/paths/%2Fbucket%2Fa"), "count") == 0, 3000,
		      "bucket not drained after 3 s");
	ck_assert_int_eq(jint(j, "remaining"), 10);
	ck_assert_int_eq(jint(j, "capacity"), 10);
	cJSON_Delete(j);
	/* the worker counts each admitted entry leaked exactly once, and the bucket leaves its registry */
	j = NULL;
	ck_wait_until(jint(refetch(&j, d.port, "/v1/worker"), "jobs.drain.emptied") == 1, 3000,
		      "the emptied bucket did not leave its registry within 3 s");
	ck_assert_int_eq(jint(j, "drained"), 10);
	ck_assert_int_eq(jint(j, "errors"), 0);
	ck_assert_int_eq(jint(j, "jobs.drain.due_backlog"), 0);
	ck_assert_int_ge(jint(j, "jobs.drain.oldest_due_age_ms"), 0);
	/* the skew horizon of the config (default 10000) is in every shard's rules copy */
	ck_assert_int_eq(jint(j, "skew.max_clock_skew_ms"), 10000);
	ck_assert_int_eq(jint(j, "skew.shards_pending"), 0);
	ck_assert_int_eq(jint(j, "skew.shards_written"), 1024);
	cJSON_Delete(j);
	ck_assert_int_eq(copies_holding(C, 10000), 1024);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s", test_lb_key("/bucket/a")), 0);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s", test_registry("leaky_bucket", "/bucket/a")), 0);
	ck_wait_until(log_has(&d, "event=skew_synced max_clock_skew_ms=10000 shards_written=1024"), 1000,
		      "no skew_synced in the log");
	ck_assert_int_eq(stop_daemon(&d), 0);
}
END_TEST

/*
 * The prune seen through the admin API, with a skew horizon of 200 ms in
 * the config (max_clock_skew_ms, in every shard's rules copy, where the
 * scripts read it): a log's entries go 300 + 200 ms after they were
 * admitted, not 10.3 s; then a reset through the API.
 */
START_TEST(prune_and_reset_through_admin_api)
{
	struct daemon_proc d;
	struct test_http_res h;
	cJSON *j;

	start_daemon_with(&d, R.url, ",\"max_clock_skew_ms\":200");
	/*
	 * Before the log is written: while the daemon's connections load their
	 * scripts and write the skew copies, the entries would be spread in time,
	 * and a prune tick between their expiries would prune only some of them.
	 */
	wait_worker_connected(&d);
	j = NULL;
	ck_wait_until(jint(refetch(&j, d.port, "/v1/worker"), "skew.shards_pending") == 0, 3000,
		      "the skew copies were not written within 3 s");
	cJSON_Delete(j);
	ck_assert_int_eq(copy_on(C, shard_of("/log", 4)), 200);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(sl_acquire("/log", -1), i < 3 ? 1 : 0); /* the 4th is over the limit */
	j = get_json(d.port, "/v1/paths/%2Flog", 200);
	ck_assert_int_eq(jint(j, "count"), 3);
	ck_assert_int_eq(jint(j, "limit"), 3);
	ck_assert_int_eq(jint(j, "remaining"), 0);
	cJSON_Delete(j);
	/* they leave every window of a client within the 200 ms horizon at +500 ms; the worker prunes
	 * them then, unregisters the path, and counts the step in its status (a moment after the
	 * registry changed: the wait is for both) */
	j = NULL;
	ck_wait_until(test_cmd_int(C, "EXISTS %s", test_registry("sliding_log", "/log")) == 0 &&
			      jint(refetch(&j, d.port, "/v1/worker"), "jobs.prune.emptied") > 0,
		      3000, "log not pruned (and counted by the worker) after 3 s");
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s", test_sl_key("/log")), 0);
	ck_assert_int_eq(jint(j, "jobs.prune.emptied"), 1);
	/* the log's TTL ends when its newest entry leaves the horizon, and the path is due when its
	 * oldest does: the same ms here (one burst), so Redis has expired the entries by the time the
	 * prune comes, which counts none and takes the path out of the due index */
	ck_assert_int_eq(jint(j, "pruned"), 0);
	cJSON_Delete(j);

	/* manual reset of a bucket */
	ck_assert_int_eq(lb_acquire("/bucket/r", -1), 1);
	test_http(d.port, "POST", "/v1/paths/%2Fbucket%2Fr/reset", "", TEST_HTTP_PLAIN, &h);
	ck_assert_int_eq(h.status, 200);
	j = cJSON_Parse(h.body);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "path")->valuestring, "/bucket/r");
	ck_assert_int_eq(jint(j, "registries_removed"), 1);
	cJSON_Delete(j);
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s %s", test_lb_key("/bucket/r"), test_lb_meta("/bucket/r")), 0);
	ck_assert_int_eq(stop_daemon(&d), 0);
}
END_TEST

/*
 * The skew copies: a copy lost (DEL by hand) is written again by the
 * rolling check (every shard each 5 s); SIGHUP with another value writes it
 * into every copy at the next tick, and the log says so.
 */
START_TEST(skew_copies_kept_and_reloaded)
{
	struct daemon_proc d;
	char log[8192];
	FILE *f;
	cJSON *j = NULL;

	start_daemon_with(&d, R.url, ",\"max_clock_skew_ms\":3000");
	ck_wait_until(copies_holding(C, 3000) == 1024, 3000, "the copies do not hold 3000 after 3 s");
	freeReplyObject(test_cmd(C, "DEL sluice:{600}:rules"));
	ck_wait_until(copy_on(C, 600) == 3000, 7000, "the lost copy was not written again within 7 s");
	ck_wait_until(jint(refetch(&j, d.port, "/v1/worker"), "skew.shards_written") == 1025, 1000,
		      "the status does not count the copy written again");
	cJSON_Delete(j);
	j = NULL;
	/* the same file with another value, and a SIGHUP */
	f = fopen(d.config, "w");
	fprintf(f,
		"{\"redis\":\"%s\",\"listen\":\"127.0.0.1:%d\",\"drain_interval_ms\":20,\"prune_interval_ms\":50,"
		"\"max_clock_skew_ms\":4000}",
		R.url, d.port);
	fclose(f);
	kill(d.pid, SIGHUP);
	ck_wait_until(copies_holding(C, 4000) == 1024, 3000, "the copies do not hold 4000 3 s after the SIGHUP");
	ck_wait_until(jint(refetch(&j, d.port, "/v1/worker"), "skew.max_clock_skew_ms") == 4000 &&
			      jint(j, "skew.shards_written") == 2049,
		      1000, "the status does not show the new value written");
	cJSON_Delete(j);
	ck_wait_until(log_has(&d, "event=skew_synced max_clock_skew_ms=4000 shards_written=1024"), 1000,
		      "no skew_synced for 4000 in the log");
	read_log(&d, log, sizeof(log));
	ck_assert_msg(strstr(log, "event=skew_synced max_clock_skew_ms=3000 shards_written=1024"), "%s", log);
	ck_assert_msg(strstr(log, "event=reloaded drain_interval_ms=20 prune_interval_ms=50 rules=0 max_clock_skew_ms=4000"),
		      "%s", log);
	/* requests are logged at info, but the probes (its start waited on /healthz) at debug */
	ck_assert_msg(strstr(log, "event=http method=GET path=\"/v1/worker\" status=200"), "%s", log);
	ck_assert_msg(!strstr(log, "path=\"/healthz\""), "%s", log);
	ck_assert_int_eq(stop_daemon(&d), 0);
}
END_TEST

/* Kill `r`'s redis-server (SIGKILL: no goodbye to the clients) and reap it. */
static void redis_kill(struct test_redis *r)
{
	kill(r->pid, SIGKILL);
	waitpid(r->pid, NULL, 0);
	r->pid = 0;
}

/* Start redis-server again on `r`'s port and directory, empty; does not wait for it. */
static void redis_restart(struct test_redis *r)
{
	char port[16];
	pid_t pid;

	snprintf(port, sizeof(port), "%d", r->port);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
		       "--appendonly", "no", "--dir", r->dir, "--logfile", "redis2.log", (char *)NULL);
		_exit(127);
	}
	r->pid = pid;
}

/* The error code of an error body. */
static const char *error_code(const cJSON *j)
{
	const cJSON *c = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "code");

	ck_assert_msg(cJSON_IsString(c), "not an error body");
	return c->valuestring;
}

/*
 * ck_wait_until condition: GET /v1/rules of `d` answers 200 (into h).  Until
 * then it may only refuse with 503, or also not connect (status 0) while
 * sluiced is `starting`; then sluiced must still be running.
 */
static int rules_served(const struct daemon_proc *d, int starting, struct test_http_res *h)
{
	long st = test_http_try(d->port, "GET", "/v1/rules", NULL, TEST_HTTP_PLAIN, h);

	if (st == 200)
		return 1;
	if (!starting) {
		ck_assert_msg(st == 503, "GET /v1/rules: %ld %s", st, h->body);
		return 0;
	}
	ck_assert_msg(st == 0 || st == 503, "GET /v1/rules: %ld %s", st, h->body);
	ck_assert_msg(waitpid(d->pid, NULL, WNOHANG) == 0, "sluiced exited early (see %s)", d->log);
	return 0;
}

/*
 * The config's rules are stored before the admin API answers rule requests:
 * from the moment the port answers, GET /v1/rules is refused (no connection
 * yet, or 503 not ready) until it lists every rule of the file; it never
 * answers a list without them.  A few rounds, as a race shows only sometimes.
 */
START_TEST(first_rules_answer_lists_config_rules)
{
	for (int round = 0; round < 5; round++) {
		struct daemon_proc d;
		struct test_http_res h;
		cJSON *j;

		test_redis_flush(C);
		spawn_daemon(&d, R.url);
		/* every 1 ms: the refusals come in the short while before the rules are stored */
		ck_wait_until_every(rules_served(&d, 1, &h), 5000, 1, "GET /v1/rules did not succeed within 5 s");
		j = cJSON_Parse(h.body);
		ck_assert_ptr_nonnull(j);
		ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "rules")), 2);
		ck_assert_int_ge(jint(j, "version"), 1);
		cJSON_Delete(j);
		ck_assert_int_eq(stop_daemon(&d), 0);
	}
}
END_TEST

/*
 * Redis is down when the daemon starts: it starts all the same and /healthz
 * answers; /readyz and the rule and path routes answer 503 until Redis is
 * back and the config's rules are stored; the first rules list that succeeds
 * has them all.
 */
START_TEST(redis_down_at_start)
{
	struct test_redis r2;
	struct daemon_proc d;
	struct test_http_res h;
	char log[8192];
	cJSON *j;

	ck_assert_int_eq(test_redis_start(&r2), 0);
	redis_kill(&r2);
	start_daemon(&d, r2.url);
	j = get_json(d.port, "/readyz", 503);
	ck_assert_str_eq(error_code(j), "redis_unavailable");
	cJSON_Delete(j);
	j = get_json(d.port, "/v1/rules", 503);
	ck_assert_str_eq(error_code(j), "redis_unavailable");
	cJSON_Delete(j);
	ck_assert_int_eq(http_status(d.port, "PUT", "/v1/rules/late",
				     "{\"match\":\"/late\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1000}"),
			 503);
	ck_assert_int_eq(http_status(d.port, "GET", "/v1/paths/%2Fbucket%2Fa", NULL), 503);
	/* what needs no rules answers: liveness, metrics, the worker's status (why it waits) */
	ck_assert_int_eq(http_status(d.port, "GET", "/healthz", NULL), 200);
	ck_assert_int_eq(http_status(d.port, "GET", "/metrics", NULL), 200);
	j = get_json(d.port, "/v1/worker", 200);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "redis_up")));
	cJSON_Delete(j);

	redis_restart(&r2);
	ck_wait_until(rules_served(&d, 0, &h), 10000, "rules not served 10 s after Redis came back");
	j = cJSON_Parse(h.body);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "rules")), 2);
	cJSON_Delete(j);
	/* ready once the worker ticks too: its next probe of Redis (250 ms at most) and tick */
	ck_wait_until(http_status(d.port, "GET", "/readyz", NULL) == 200, 2000, "not ready 2 s after the rules were served");
	read_log(&d, log, sizeof(log));
	ck_assert_msg(strstr(log, "event=rules_seed_failed reason=\"redis unavailable: "), "%s", log);
	ck_assert_msg(strstr(log, "event=rules_ready rules=2"), "%s", log);
	ck_assert_int_eq(stop_daemon(&d), 0);
	test_redis_stop(&r2);
}
END_TEST

START_TEST(redis_outage_and_recovery)
{
	struct test_redis r2;
	struct daemon_proc d;
	char url[64];
	cJSON *j;

	ck_assert_int_eq(test_redis_start(&r2), 0);
	start_daemon(&d, r2.url);
	j = get_json(d.port, "/readyz", 200);
	cJSON_Delete(j);
	wait_worker_connected(&d); /* so that the reconnect below is its second connect */
	/* Redis goes away: the daemon stays up, reports it, counts errors */
	redis_kill(&r2);
	j = get_json(d.port, "/readyz", 503);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "code")->valuestring,
			 "redis_unavailable");
	cJSON_Delete(j);
	j = NULL;
	ck_wait_until(jint(refetch(&j, d.port, "/v1/worker"), "errors") > 0, 5000,
		      "the worker counted no error 5 s after Redis went away");
	ck_assert_int_gt(jint(j, "errors"), 0);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "redis_up")));
	cJSON_Delete(j);
	ck_assert_int_eq(http_status(d.port, "GET", "/healthz", NULL), 200);

	/* Redis comes back on the same port, empty: scripts reloaded, rules re-seeded not needed */
	redis_restart(&r2);
	ck_wait_until(http_status(d.port, "GET", "/readyz", NULL) == 200, 8000, "not ready again after 8 s");
	j = NULL;
	ck_wait_until(cJSON_IsTrue(cJSON_GetObjectItem(refetch(&j, d.port, "/v1/worker"), "redis_up")) &&
			      cJSON_IsNull(cJSON_GetObjectItem(j, "last_error")),
		      8000, "worker did not recover");
	ck_assert_int_ge(jint(j, "connects"), 2);
	cJSON_Delete(j);
	/* the new Redis is empty: the config's rules are stored again, and the skew copies written again */
	j = NULL;
	ck_wait_until(n_rules(refetch(&j, d.port, "/v1/rules")) == 2, 3000, "rules not re-stored after the restart");
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rules"), 0), "name")->valuestring,
			 "e2e-bucket");
	cJSON_Delete(j);
	{
		redisContext *c2 = test_redis_connect(&r2);

		ck_wait_until(copies_holding(c2, 10000) == 1024, 3000, "the skew copies not written again after the restart");
		redisFree(c2);
	}
	snprintf(url, sizeof(url), "%s", r2.url);
	(void)url;
	ck_assert_int_eq(stop_daemon(&d), 0);
	test_redis_stop(&r2);
}
END_TEST

START_TEST(bad_config_exits_2_and_touches_nothing)
{
	char path[] = "/tmp/sluice-e2e-bad-XXXXXX", cmd[512], line[512] = "";
	int fd = mkstemp(path), status;
	/* issue 9's rule: the client script refuses sub_windows 3 of 1000 ms, so must the config */
	const char *text = "{\"rules\":[{\"name\":\"search\",\"match\":\"/search\",\"algorithm\":\"sliding_counter\","
			   "\"limit\":5,\"window_ms\":1000,\"sub_windows\":3}]}";
	char redis_flag[96];
	FILE *p;

	ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
	close(fd);
	snprintf(redis_flag, sizeof(redis_flag), "--redis=%s", R.url);
	snprintf(cmd, sizeof(cmd), "%s --config %s %s 2>&1; echo \"exit=$?\"", binary(), path, redis_flag);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	{
		char want[600]; /* the file named first */

		snprintf(want, sizeof(want), "sluiced: %s: rules[0].sub_windows: must divide window_ms (rule \"search\")\n",
			 path);
		ck_assert_str_eq(line, want);
	}
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	ck_assert_str_eq(line, "exit=2\n");
	status = pclose(p);
	ck_assert_int_eq(status, 0);
	ck_assert_int_eq(test_dbsize(C), 0);
	unlink(path);
}
END_TEST

/*
 * A bad node list (redis_url_parse), in --redis or in the config file's
 * "redis", whose first node is the test's live Redis: refused naming the
 * field, exit 2, and nothing written there.
 */
static const struct {
	const char *nodes; /* after "redis://127.0.0.1:<port>", before "/0" */
	const char *why;
} bad_node_lists[] = {
	{ ",127.0.0.1:0", "port must be 1..65535" },
	{ ",,127.0.0.1:7001", "host is missing" },
	{ ",", "host is missing" },
	{ ",a,b,c,d,e,f,g,h,i", "at most 8 more nodes after a comma" },
};

START_TEST(bad_redis_node_list_exits_2)
{
	char url[256], cmd[1024], line[512] = "", want[256];
	char path[] = "/tmp/sluice-e2e-nodes-XXXXXX";
	int fd;
	FILE *p;

	snprintf(url, sizeof(url), "redis://127.0.0.1:%d%s/0", R.port, bad_node_lists[_i].nodes);
	for (int in_file = 0; in_file < 2; in_file++) {
		if (in_file) {
			char text[400];

			fd = mkstemp(path);
			ck_assert_int_ge(fd, 0);
			snprintf(text, sizeof(text), "{\"redis\":\"%s\"}", url);
			ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
			close(fd);
			snprintf(cmd, sizeof(cmd), "%s --config %s 2>&1; echo \"exit=$?\"", binary(), path);
		} else {
			snprintf(cmd, sizeof(cmd), "%s --no-config '--redis=%s' 2>&1; echo \"exit=$?\"", binary(), url);
		}
		p = popen(cmd, "r");
		ck_assert_ptr_nonnull(p);
		ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
		if (in_file) /* the file named first */
			snprintf(want, sizeof(want), "sluiced: %s: redis: %s\n", path, bad_node_lists[_i].why);
		else
			snprintf(want, sizeof(want), "sluiced: --redis: %s\n", bad_node_lists[_i].why);
		ck_assert_str_eq(line, want);
		ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
		ck_assert_str_eq(line, "exit=2\n");
		ck_assert_int_eq(pclose(p), 0);
		ck_assert_int_eq(test_dbsize(C), 0);
		if (in_file)
			unlink(path);
	}
}
END_TEST

START_TEST(two_daemons_share_rules)
{
	struct daemon_proc a, b;
	long long version;
	cJSON *j;

	start_daemon(&a, R.url);
	start_daemon(&b, R.url);
	ck_assert_int_eq(http_status(a.port, "PUT", "/v1/rules/shared",
				     "{\"match\":\"/shared/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":5,\"rate\":1000}"),
			 201);
	j = get_json(a.port, "/v1/rules", 200);
	version = jint(j, "version");
	cJSON_Delete(j);
	/* B's worker checks the version every tick (20 ms here): it must hold the rule within a few */
	j = NULL;
	ck_wait_until(jint(refetch(&j, b.port, "/v1/worker"), "rules.version") == version &&
			      jint(j, "rules.loaded") == 3,
		      500, "B did not load the rule changed through A");
	cJSON_Delete(j);
	/* and B serves it too, through its own API (which rechecks the version every 100 ms) */
	ck_wait_until(http_status(b.port, "GET", "/v1/rules/shared", NULL) == 200, 500,
		      "B's API does not serve the rule changed through A");
	j = get_json(b.port, "/v1/rules/shared", 200);
	ck_assert_int_eq(jint(j, "capacity"), 5);
	cJSON_Delete(j);
	ck_assert_int_eq(stop_daemon(&a), 0);
	ck_assert_int_eq(stop_daemon(&b), 0);
}
END_TEST

/* How many of the 1024 shards' rules copies on `c` hold field `name` = `text` (NULL: lack the field). */
static int copies_with_rule(redisContext *c, const char *name, const char *text)
{
	int n = 0;

	for (unsigned k = 0; k < 1024; k++)
		redisAppendCommand(c, "HGET sluice:{%u}:rules %s", k, name);
	for (unsigned k = 0; k < 1024; k++) {
		redisReply *r = NULL;

		ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
		n += text ? r->type == REDIS_REPLY_STRING && !strcmp(r->str, text) : r->type == REDIS_REPLY_NIL;
		freeReplyObject(r);
	}
	return n;
}

/* ck_wait_until condition: every copy holds ":version" = the store's "<epoch>:<version>". */
static int copies_at_store_version(redisContext *c)
{
	redisReply *m = test_cmd(c, "MGET sluice:rules:version sluice:rules:epoch");
	char want[96];
	int n = 0;

	snprintf(want, sizeof(want), "%s:%s", m->element[1]->type == REDIS_REPLY_STRING ? m->element[1]->str : "",
		 m->element[0]->type == REDIS_REPLY_STRING ? m->element[0]->str : "0");
	freeReplyObject(m);
	for (unsigned k = 0; k < 1024; k++)
		redisAppendCommand(c, "HGET sluice:{%u}:rules :version", k);
	for (unsigned k = 0; k < 1024; k++) {
		redisReply *r = NULL;

		ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
		n += r->type == REDIS_REPLY_STRING && !strcmp(r->str, want);
		freeReplyObject(r);
	}
	return n == 1024;
}

/*
 * Two daemons on one Redis, each keeping every shard's rules copy: a rule
 * PUT through A is in all 1024 copies within a tick or so (asserted: 2 s),
 * whichever daemon wrote them, and B then reports every copy at that
 * version; a DELETE through B leaves no copy holding it.  Neither writes
 * again what the other wrote.
 */
static const char *const SHARED_TEXT =
	"{\"name\":\"shared\",\"match\":\"/shared/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":5,\"rate\":1000}";

/*
 * Two daemons with different max_clock_skew_ms rewrite each other's copies;
 * each says so (skew_conflict, at most once a minute) and counts it.
 */
START_TEST(two_daemons_skew_conflict)
{
	struct daemon_proc a, b;
	cJSON *j = NULL;

	start_daemon(&a, R.url);
	start_daemon_with(&b, R.url, ",\"max_clock_skew_ms\":3000");
	ck_wait_until(log_has(&a, "event=skew_conflict max_clock_skew_ms=10000 found=3000") ||
			      log_has(&b, "event=skew_conflict max_clock_skew_ms=3000 found=10000"),
		      5000, "no skew_conflict logged within 5 s");
	ck_wait_until(jint(refetch(&j, a.port, "/v1/worker"), "skew.conflicts") > 0 ||
			      jint(refetch(&j, b.port, "/v1/worker"), "skew.conflicts") > 0,
		      3000, "no skew.conflicts counted");
	cJSON_Delete(j);
	ck_assert_int_eq(stop_daemon(&a), 0);
	ck_assert_int_eq(stop_daemon(&b), 0);
}
END_TEST

START_TEST(two_daemons_keep_rule_copies)
{
	struct daemon_proc a, b;
	long long t0, took;
	cJSON *ja = NULL, *jb = NULL;

	start_daemon(&a, R.url);
	start_daemon(&b, R.url);
	wait_worker_connected(&a);
	wait_worker_connected(&b);
	ck_wait_until(copies_with_rule(C, "e2e-log", NULL) == 0 && copies_at_store_version(C), 3000,
		      "the config's rules were not copied within 3 s");
	t0 = test_now_ms();
	ck_assert_int_eq(http_status(a.port, "PUT", "/v1/rules/shared",
				     "{\"match\":\"/shared/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":5,\"rate\":1000}"),
			 201);
	ck_wait_until_every(copies_with_rule(C, "shared", SHARED_TEXT) == 1024, 2000, 1,
			    "the rule PUT through A is not in every copy within 2 s");
	took = test_now_ms() - t0;
	ck_assert_msg(copies_at_store_version(C), "copies hold the rule but not the store's version");
	/* both daemons see every copy at the store's version, and wrote each copy once between them */
	ck_wait_until(jint(refetch(&ja, a.port, "/v1/worker"), "rule_copies.shards_pending") == 0 &&
			      jint(refetch(&jb, b.port, "/v1/worker"), "rule_copies.shards_pending") == 0 &&
			      !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(ja, "rule_copies"), "version")->valuestring,
				      cJSON_GetObjectItem(cJSON_GetObjectItem(jb, "rule_copies"), "version")->valuestring),
		      1000, "A and B do not agree that every copy is at the store's version");
	fprintf(stderr, "two_daemons_keep_rule_copies: PUT to all 1024 copies in %lld ms (A wrote %lld, B %lld)\n",
		took, jint(ja, "rule_copies.shards_written"), jint(jb, "rule_copies.shards_written"));
	/* two versions (the config's, then the PUT), each copy written at most once per daemon and version */
	ck_assert_msg(jint(ja, "rule_copies.shards_written") + jint(jb, "rule_copies.shards_written") <= 4 * 1024,
		      "more writes than once per copy, daemon and version");
	/* a DELETE through B */
	ck_assert_int_eq(http_status(b.port, "DELETE", "/v1/rules/shared", NULL), 200);
	ck_wait_until(copies_with_rule(C, "shared", NULL) == 1024 && copies_at_store_version(C), 2000,
		      "the rule deleted through B is still in some copy after 2 s");
	cJSON_Delete(ja);
	cJSON_Delete(jb);
	ck_assert_int_eq(stop_daemon(&a), 0);
	ck_assert_int_eq(stop_daemon(&b), 0);
}
END_TEST

START_TEST(sighup_reloads_config)
{
	struct daemon_proc d;
	static char log[65536]; /* the whole log: its first 4 kB may not reach the reload_failed line */
	FILE *f;
	cJSON *j = NULL;

	start_daemon(&d, R.url);
	/* a new rule in the file, and a broken file after it */
	f = fopen(d.config, "w");
	fprintf(f, "{\"redis\":\"%s\",\"listen\":\"127.0.0.1:%d\",\"drain_interval_ms\":20,\"rules\":["
		   "{\"name\":\"added\",\"match\":\"/added\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1000}]}",
		R.url, d.port);
	fclose(f);
	kill(d.pid, SIGHUP);
	ck_wait_until(n_rules(refetch(&j, d.port, "/v1/rules")) == 3, 3000, "the reloaded rule did not appear");
	cJSON_Delete(j);
	f = fopen(d.config, "w");
	fputs("{\"drain_interval_ms\": 0", f);
	fclose(f);
	kill(d.pid, SIGHUP);
	ck_wait_until(log_has(&d, "event=reload_failed"), 3000, "no reload_failed in the log 3 s after the SIGHUP");
	ck_assert_int_eq(http_status(d.port, "GET", "/healthz", NULL), 200); /* still running */
	read_log(&d, log, sizeof(log));
	ck_assert_ptr_nonnull(strstr(log, "event=reloaded drain_interval_ms=20 prune_interval_ms=1000 rules=1 max_clock_skew_ms=10000"));
	{
		/* the file named first, then what is wrong in it */
		char want[400];

		snprintf(want, sizeof(want), "event=reload_failed field=\"%s\" error=\"config: is not valid JSON", d.config);
		ck_assert_msg(strstr(log, want) != NULL, "no %s in the log:\n%s", want, log);
	}
	ck_assert_int_eq(stop_daemon(&d), 0);
}
END_TEST

START_TEST(non_loopback_needs_token)
{
	char cmd[512], line[512] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "env -u SLUICE_ADMIN_TOKEN %s --no-config --redis %s --listen 0.0.0.0:%d 2>&1; echo \"exit=$?\"",
		 binary(), R.url, test_free_port());
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	ck_assert_str_eq(line, "sluiced: --listen: 0.0.0.0 is not a loopback address; set an admin token "
			       "(admin.token_file, or $SLUICE_ADMIN_TOKEN) or pass --insecure\n");
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	ck_assert_str_eq(line, "exit=2\n");
	pclose(p);
	ck_assert_int_eq(test_dbsize(C), 0);
}
END_TEST

START_TEST(help_and_version)
{
	char cmd[512], line[512] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s --version", binary());
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	ck_assert_int_eq(strncmp(line, "sluiced ", 8), 0);
	ck_assert_int_eq(pclose(p), 0);
	snprintf(cmd, sizeof(cmd), "%s --help", binary());
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	ck_assert_str_eq(line, "Usage: sluiced [--config FILE] [OPTIONS]\n");
	while (fgets(line, sizeof(line), p))
		;
	ck_assert_int_eq(pclose(p), 0);
}
END_TEST

/* maxmemory at half of what Redis uses now, nothing it may evict (0 lifts it). */
static void redis_limit(int on)
{
	long long used = 0;
	redisReply *r = test_cmd(C, "INFO memory");
	const char *p = r->type == REDIS_REPLY_STRING ? strstr(r->str, "\r\nused_memory:") : NULL;

	if (p)
		used = atoll(p + strlen("\r\nused_memory:"));
	freeReplyObject(r);
	ck_assert_int_gt(used, 1);
	freeReplyObject(test_cmd(C, "CONFIG SET maxmemory-policy noeviction"));
	freeReplyObject(test_cmd(C, "CONFIG SET maxmemory %lld", on ? used / 2 : 0));
}

/*
 * Redis is over maxmemory (noeviction) when the daemon starts: the rules
 * stored before still load (read outside MULTI, which Redis refuses then),
 * the worker drains (its scripts are allow-oom), so memory is freed; a rule
 * change is refused with a message naming the cause; and a config rule that
 * differs from the stored one cannot be stored, which the log says.
 */
START_TEST(started_at_maxmemory)
{
	struct daemon_proc d;
	struct test_http_res h;
	char log[16384];
	int64_t t0;
	int n = 0;
	cJSON *j = NULL;

	redis_limit(0);
	start_daemon(&d, R.url);
	ck_wait_until(http_status(d.port, "GET", "/v1/rules", NULL) == 200, 5000, "rules not stored within 5 s");
	ck_wait_until(copies_holding(C, 10000) == 1024, 3000, "skew copies not written within 3 s");
	ck_assert_int_eq(stop_daemon(&d), 0);
	t0 = test_server_ms(C) - test_skew_ms(); /* at the drain's horizon: due at once */
	for (int i = 0; i < 10; i++)
		n += (int)lb_acquire("/bucket/oom", t0);
	ck_assert_int_eq(n, 10);

	redis_limit(1);
	start_daemon(&d, R.url);
	/* 10 entries at 50/s: the worker drains them in 200 ms (the key's TTL is longer) */
	ck_wait_until(jint(refetch(&j, d.port, "/v1/worker"), "drained") == 10, 3000,
		      "bucket not drained at maxmemory after 3 s (see %s)", d.log);
	ck_assert_int_eq(jint(j, "errors"), 0);
	/* the copies were there: nothing to write, nothing refused */
	ck_assert_int_eq(jint(j, "skew.shards_pending"), 0);
	ck_assert_int_eq(jint(j, "skew.shards_written"), 0);
	cJSON_Delete(j);
	j = NULL;
	ck_assert_int_eq(test_cmd_int(C, "EXISTS %s", test_lb_key("/bucket/oom")), 0);
	test_http(d.port, "PUT", "/v1/rules/late",
		  "{\"match\":\"/late\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1000}",
		  TEST_HTTP_PLAIN, &h);
	ck_assert_msg(h.status == 503 && strstr(h.body, "\"code\":\"redis_unavailable\"") &&
			      strstr(h.body, "\"message\":\"Redis is out of memory (maxmemory): "),
		      "PUT at maxmemory: %ld %s", h.status, h.body);
	read_log(&d, log, sizeof(log));
	ck_assert_msg(strstr(log, "event=rules_ready rules=2"), "%s", log);
	ck_assert_msg(!strstr(log, "job_failed") && !strstr(log, "rules_seed_failed") && !strstr(log, "skew_sync"),
		      "%s", log);
	ck_assert_int_eq(stop_daemon(&d), 0);

	/*
	 * A stored rule the config file disagrees with, and no skew copies: at
	 * the limit the file's rule cannot be stored nor the copies written,
	 * which the log says; the worker drains all the same (it frees the
	 * memory the writes wait for), and once the limit is lifted both are
	 * written.
	 */
	redis_limit(0);
	freeReplyObject(test_cmd(C, "HSET sluice:rules e2e-log %s",
				 "{\"name\":\"e2e-log\",\"match\":\"/log\",\"algorithm\":\"sliding_log\",\"limit\":4,"
				 "\"window_ms\":300}"));
	freeReplyObject(test_cmd(C, "INCR sluice:rules:version"));
	drop_copies(C);
	t0 = test_server_ms(C) - test_skew_ms(); /* at the drain's horizon: due at once */
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(lb_acquire("/bucket/oom2", t0), 1);
	redis_limit(1);
	start_daemon(&d, R.url);
	ck_wait_until(log_has(&d, "event=rules_seed_failed") && log_has(&d, "event=skew_sync_failed"), 3000,
		      "no rules_seed_failed and skew_sync_failed within 3 s: %s", read_log(&d, log, sizeof(log)));
	read_log(&d, log, sizeof(log));
	ck_assert_msg(strstr(log, "event=rules_seed_failed reason=\"Redis is out of memory (maxmemory)\""), "%s", log);
	ck_assert_msg(strstr(log, "event=skew_sync_failed max_clock_skew_ms=10000 shards_pending=1024 reason=\"HSET of shard 0's "
				  "rules copy: Redis is out of memory (maxmemory)\" retry=250ms"),
		      "%s", log);
	ck_wait_until(jint(refetch(&j, d.port, "/v1/worker"), "drained") == 10, 3000,
		      "bucket not drained at maxmemory while the rules could not be stored (see %s)", d.log);
	ck_assert_int_eq(jint(j, "skew.shards_pending"), 1024);
	cJSON_Delete(j);
	j = NULL;
	redis_limit(0);
	ck_wait_until(log_has(&d, "event=skew_synced max_clock_skew_ms=10000 shards_written=1024"), 3000,
		      "no skew_synced within 3 s of lifting the limit");
	ck_wait_until(log_has(&d, "event=rules_ready rules=2"), 3000, "the rules were not stored after the limit");
	ck_assert_int_eq(copies_holding(C, 10000), 1024);
	ck_assert_int_eq(stop_daemon(&d), 0);
}
END_TEST

static Suite *e2e_suite(void)
{
	Suite *s = suite_create("e2e");
	TCase *tc = tcase_create("sluiced");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_add_checked_fixture(tc, flush, NULL);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, drain_seen_through_admin_api);
	tcase_add_test(tc, prune_and_reset_through_admin_api);
	tcase_add_test(tc, skew_copies_kept_and_reloaded);
	tcase_add_test(tc, redis_outage_and_recovery);
	tcase_add_test(tc, first_rules_answer_lists_config_rules);
	tcase_add_test(tc, redis_down_at_start);
	tcase_add_test(tc, bad_config_exits_2_and_touches_nothing);
	tcase_add_loop_test(tc, bad_redis_node_list_exits_2, 0, TEST_N(bad_node_lists));
	tcase_add_test(tc, two_daemons_share_rules);
	tcase_add_test(tc, two_daemons_keep_rule_copies);
	tcase_add_test(tc, two_daemons_skew_conflict);
	tcase_add_test(tc, sighup_reloads_config);
	tcase_add_test(tc, non_loopback_needs_token);
	tcase_add_test(tc, help_and_version);
	tcase_add_test(tc, started_at_maxmemory); /* last: it sets maxmemory on the suite's server */
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(e2e_suite());
}

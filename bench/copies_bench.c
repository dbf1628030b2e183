/*
 * copies_bench: time from a rule change to all 1024 shards' rules copies
 * holding it (issue 9, "Benchmark"; worker/copies.c).  bench/bench.sh runs
 * it on its private redis-server.
 *
 *   copies_bench worker --redis URL [--rules N] [--repeat R]
 *   copies_bench daemon --redis URL --admin PORT [--repeat R]
 *
 * worker: N rules stored (default 10), one worker (libsluice) brought up to
 *   date; then per round one rule changed with rulestore_put and the
 *   worker's next step timed (CLOCK_MONOTONIC): the check of every copy's
 *   ":version" and the rewrite of all 1024 copies, in pipelines.  Every copy
 *   is checked afterwards to hold the new text.
 * daemon: against a running sluiced (admin API on 127.0.0.1:PORT): per
 *   round, PUT /v1/rules/bench-copies (HTTP/1.1 over a plain socket), then
 *   pipelined HGETs of that field in all 1024 copies, again every 1 ms,
 *   until every copy holds the stored text: the time from sending the PUT
 *   to that, which includes the wait for the daemon's next tick (drain
 *   interval, 100 ms by default).
 * Prints "RESULT rule copies ..." lines; exit 0, 1 on an error, 2 on a bad flag.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/layout.h"
#include "core/redis_target.h"
#include "core/rulestore.h"
#include "core/shard.h"
#include "worker/worker.h"

#define MAX_ROUNDS 100

static void die(const char *what)
{
	fprintf(stderr, "copies_bench: %s\n", what);
	exit(1);
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* How many of the 1024 copies hold field `name` = `text`, one pipeline. */
static int copies_holding(redisContext *c, const char *name, const char *text)
{
	int n = 0;

	for (unsigned k = 0; k < SHARD_COUNT; k++)
		redisAppendCommand(c, "HGET sluice:{%u}:rules %s", k, name);
	for (unsigned k = 0; k < SHARD_COUNT; k++) {
		redisReply *r = NULL;

		if (redisGetReply(c, (void **)&r) != REDIS_OK)
			die("HGET of a copy failed");
		n += r->type == REDIS_REPLY_STRING && !strcmp(r->str, text);
		freeReplyObject(r);
	}
	return n;
}

static void put_rule(struct rconn *rc, const char *name, long capacity, char **text)
{
	char json[256];
	struct rule *r = NULL;

	snprintf(json, sizeof(json), "{\"match\":\"/%s/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":%ld,\"rate\":5}",
		 name, capacity);
	if (rule_from_text(json, strlen(json), name, &r, NULL) || rulestore_put(rc, "sluice:", r, NULL, NULL))
		die("rulestore_put failed");
	if (text && !(*text = rule_to_text(r)))
		die("out of memory");
	rule_free(r);
}

static void report(const char *what, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	printf("RESULT rule copies: %s: median %.2f ms, min %.2f, max %.2f (%d rounds)\n", what, v[n / 2], v[0],
	       v[n - 1], n);
}

static void mode_worker(const struct redis_target *t, redisContext *c, int nrules, int rounds)
{
	struct layout *l;
	size_t nl;
	struct rconn *rc = rconn_new(t, 10000);
	struct worker_config wc = { .redis = t, .timeout_ms = 10000, .prefix = "sluice:", .batch_size = 500,
				    .write_rules = 1 };
	struct worker *w;
	double ms[MAX_ROUNDS];
	char name[32], what[160];

	if (!rc || layouts_default("sluice:", &l, &nl))
		die("out of memory");
	wc.layouts = l;
	wc.nlayouts = nl;
	freeReplyObject(redisCommand(c, "FLUSHDB"));
	for (int i = 0; i < nrules; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		put_rule(rc, name, 10, NULL);
	}
	{
		double t0 = mono_ms(), first;

		if (!(w = worker_new(&wc)) || worker_step(w, WORKER_DRAIN, INT64_MAX, 1000, NULL))
			die("worker's first step failed");
		first = mono_ms() - t0;
		snprintf(what, sizeof(what), "first step, %d rules, all 1024 copies written whole", nrules);
		report(what, &first, 1);
	}
	for (int r = 0; r < rounds; r++) {
		char *text;
		double t0;
		int rcs;

		put_rule(rc, "r0", 11 + r, &text);
		t0 = mono_ms();
		rcs = worker_step(w, WORKER_DRAIN, INT64_MAX, 1000 + r, NULL);
		ms[r] = mono_ms() - t0;
		if (rcs || copies_holding(c, "r0", text) != SHARD_COUNT)
			die("the step did not bring every copy to the change");
		free(text);
	}
	snprintf(what, sizeof(what), "worker step after rulestore_put of one of %d rules, all 1024 copies at the new version (the difference written)", nrules);
	report(what, ms, rounds);
	worker_free(w);
	rconn_free(rc);
	layouts_free(l, nl);
}

/* PUT /v1/rules/bench-copies with `body` to 127.0.0.1:port; returns the HTTP status. */
static int http_put(int port, const char *body)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	char req[512], resp[512];
	int fd = socket(AF_INET, SOCK_STREAM, 0), n, status = 0;
	size_t got = 0;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("connect to the admin API failed");
	n = snprintf(req, sizeof(req),
		     "PUT /v1/rules/bench-copies HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		     strlen(body), body);
	if (write(fd, req, (size_t)n) != n)
		die("write to the admin API failed");
	while (got < sizeof(resp) - 1 && (n = (int)read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
		got += (size_t)n;
	resp[got] = '\0';
	close(fd);
	sscanf(resp, "HTTP/1.%*d %d", &status);
	return status;
}

static void mode_daemon(redisContext *c, int port, int rounds)
{
	double ms[MAX_ROUNDS];

	for (int r = 0; r < rounds; r++) {
		char body[160];
		redisReply *stored;
		double t0;
		int st;

		snprintf(body, sizeof(body), "{\"match\":\"/bench-copies/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":%d,\"rate\":5}",
			 100 + r);
		t0 = mono_ms();
		if ((st = http_put(port, body)) != 200 && st != 201)
			die("PUT /v1/rules/bench-copies was not 200 or 201");
		stored = redisCommand(c, "HGET sluice:rules bench-copies");
		if (!stored || stored->type != REDIS_REPLY_STRING)
			die("the rule is not in the store");
		while (copies_holding(c, "bench-copies", stored->str) != SHARD_COUNT) {
			if (mono_ms() - t0 > 10000)
				die("the copies did not hold the change within 10 s");
			usleep(1000);
		}
		ms[r] = mono_ms() - t0;
		freeReplyObject(stored);
		usleep(37000); /* not in step with the ticks */
	}
	report("PUT /v1/rules through sluiced (default intervals) to all 1024 copies holding it", ms, rounds);
}

int main(int argc, char **argv)
{
	struct redis_target t;
	struct sl_error err = { 0 };
	const char *url = NULL;
	int rounds = 20, nrules = 10, port = 0;
	redisContext *c;

	if (argc < 2 || (strcmp(argv[1], "worker") && strcmp(argv[1], "daemon")))
		goto usage;
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--redis"))
			url = argv[i + 1];
		else if (!strcmp(argv[i], "--rules"))
			nrules = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--repeat"))
			rounds = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--admin"))
			port = atoi(argv[i + 1]);
		else
			goto usage;
	}
	if (!url || rounds < 1 || rounds > MAX_ROUNDS || nrules < 1 || (!strcmp(argv[1], "daemon") && port <= 0))
		goto usage;
	if (redis_url_parse(url, &t, &err)) {
		fprintf(stderr, "copies_bench: %s: %s\n", err.field, err.message);
		return 2;
	}
	c = t.socket ? redisConnectUnix(t.socket) : redisConnect(t.host ? t.host : "127.0.0.1", t.port);
	if (!c || c->err)
		die("connect to Redis failed");
	if (!strcmp(argv[1], "worker"))
		mode_worker(&t, c, nrules, rounds);
	else
		mode_daemon(c, port, rounds);
	redisFree(c);
	redis_target_clear(&t);
	return 0;
usage:
	fputs("usage: copies_bench worker --redis URL [--rules N] [--repeat R]\n"
	      "       copies_bench daemon --redis URL --admin PORT [--repeat R]\n",
	      stderr);
	return 2;
}

/*
 * drain_bench: how fast sluice's worker drains leaky buckets, against the
 * seed article's way (004, `leakWater`: one round trip per path per tick).
 *
 *   drain_bench bench --redis URL [--paths N] [--repeat R] [--batch-size B]
 *                     [--also-batch B1,B2,...]
 *   drain_bench fill  --redis URL [--paths N] [--age-ms A]
 *   drain_bench sweep --redis URL [--paths N] [--batch-size B]
 *
 * bench: for each of R rounds, three fresh identical fills of N buckets, each
 * followed by one timed pass that drains exactly one entry from every bucket:
 *   sweep     worker_sweep(WORKER_DRAIN) of libsluice (SSCAN + pipelined EVALSHA
 *             of leaky_bucket_drain.lua, B paths per call)
 *   evalsha   SSCAN the registry, then per path ONE synchronous EVALSHA of the
 *             same leaky_bucket_drain.lua with one bucket (same work, same script)
 *   zrem      SSCAN the registry, then per path ONE synchronous
 *             ZREMRANGEBYSCORE key 0 <cutoff> (the seed's literal command)
 * and prints the median and minimum of each, keys per second, and the ratios.
 * The drained count is checked (N each time): a wrong count exits 1.
 *
 * fill: FLUSHDB, store the rule and fill N buckets as of now - A ms (Redis
 * clock), for the daemon's memory run (bench.sh).
 * sweep: one timed drain sweep at the Redis clock after `fill --age-ms 100000`
 * (exactly one entry due per bucket), for profiling with perf or callgrind.
 *
 * The state is written the way a client writes it: leaky_bucket.lua (the
 * embedded build/lua/leaky_bucket.lua) with an explicit now, pipelined, for a
 * burst of one request at T0 - 4 ms and four (n = 4) at T0.  Rule "bench" (every bench path): capacity 10, rate 0.01 per second.
 * The low rate is on purpose: the client script gives each key a TTL of "time
 * to drain at the rule's rate" in real time (here 500 s), and at 1 per second
 * the first keys would expire (5 s) before the slow baselines are done.  The
 * drain is then asked for now = T0 + 100 s, where exactly one entry is due
 * per bucket (floor(0.01 x 100.004) = 1); the seed's ZREMRANGEBYSCORE gets
 * cutoff T0 - 4, which removes that same oldest entry.
 *
 * Only the sluice key layout and the bench's private Redis are touched
 * (FLUSHDB before every fill).  Exit 0, 1 on an error, 2 on a bad flag.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/error.h"
#include "core/layout.h"
#include "core/rconn.h"
#include "core/rules.h"
#include "core/rulestore.h"
#include "core/scripts.h"
#include "worker/worker.h"

#define PREFIX "sluice:"
#define RULE_JSON \
	"{\"name\":\"bench\",\"match\":\"/bench/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.01}"
#define RULE_RATE 0.01
#define DUE_AFTER_MS 100000 /* one entry due per bucket at this rate */
#define FILL_PIPELINE 1000  /* commands per pipeline while filling */
#define SCAN_COUNT 1000     /* SSCAN COUNT of the baselines (generous to them) */
#define MAX_ROUNDS 50
#define MAX_BATCHES 16

enum pass { PASS_SWEEP, PASS_EVALSHA, PASS_ZREM, PASS__N };

struct bench {
	struct redis_target target;
	struct rconn *conn;           /* fill, checks, rules */
	redisContext *raw;            /* the baselines' plain synchronous client */
	struct layout *layouts;
	size_t nlayouts;
	const struct layout *lb;      /* leaky_bucket layout */
	size_t paths;
	int64_t t0;                   /* ms: time of the last fill's second request */
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("drain_bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A plain command through rconn, printf-free: NULL-terminated list of strings. */
static redisReply *cmd(struct bench *b, const char *first, ...)
{
	const char *argv[16];
	size_t lens[16];
	int argc = 0, rc;
	redisReply *r = NULL;
	va_list ap;

	va_start(ap, first);
	for (const char *s = first; s && argc < 16; s = va_arg(ap, const char *)) {
		argv[argc] = s;
		lens[argc++] = strlen(s);
	}
	va_end(ap);
	if ((rc = rconn_command(b->conn, argc, argv, lens, &r)))
		die("%s: %s (%s)", first, strerror(-rc), rconn_errstr(b->conn));
	if (r->type == REDIS_REPLY_ERROR)
		die("%s: %s", first, r->str);
	return r;
}

static int64_t redis_time_ms(struct bench *b)
{
	redisReply *r = cmd(b, "TIME", NULL);
	int64_t ms;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
		die("TIME: unexpected reply");
	ms = strtoll(r->element[0]->str, NULL, 10) * 1000 + strtoll(r->element[1]->str, NULL, 10) / 1000;
	freeReplyObject(r);
	return ms;
}

static void build_keys(const struct layout *l, const char *path, size_t plen, struct strbuf *kb,
		       size_t *klen, size_t *mlen)
{
	kb->len = 0;
	if (layout_key(l, path, plen, 0, kb))
		die("out of memory");
	*klen = kb->len;
	if (layout_key(l, path, plen, 1, kb))
		die("out of memory");
	*mlen = kb->len - *klen;
}

/* Run and check a fill pipeline: every acquire must be admitted. */
static void fill_flush(struct bench *b, struct rbatch *batch)
{
	int rc;

	if (!rbatch_len(batch))
		return;
	if ((rc = rbatch_run(b->conn, batch)))
		die("fill: %s (%s)", strerror(-rc), rconn_errstr(b->conn));
	for (size_t i = 0; i < rbatch_len(batch); i++) {
		const redisReply *r = rbatch_reply(batch, i);

		if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
		    r->element[0]->type != REDIS_REPLY_INTEGER || r->element[0]->integer != 1)
			die("fill: acquire %zu not admitted (%s)", i,
			    r && r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
	}
	rbatch_clear(batch);
}

/*
 * FLUSHDB, store the rule, and fill b->paths buckets: one request at t0 - 4,
 * four at t0.  Returns the seconds the fill took.
 */
static double fill(struct bench *b, int64_t t0)
{
	struct rbatch *batch = rbatch_new();
	struct strbuf kb = { 0 };
	struct sl_error err = { 0 };
	struct rule *rule = NULL;
	char path[64], when[2][24];
	double start;
	int rc;

	if (!batch)
		die("out of memory");
	freeReplyObject(cmd(b, "FLUSHDB", NULL));
	if (rule_from_text(RULE_JSON, strlen(RULE_JSON), NULL, &rule, &err))
		die("rule: %s: %s", err.field, err.message);
	if ((rc = rulestore_put(b->conn, PREFIX, rule, NULL, NULL)))
		die("rulestore_put: %s", strerror(-rc));
	rule_free(rule);
	snprintf(when[0], sizeof(when[0]), "%lld", (long long)(t0 - 4));
	snprintf(when[1], sizeof(when[1]), "%lld", (long long)t0);

	start = now_s();
	for (size_t i = 0; i < b->paths; i++) {
		size_t plen = (size_t)snprintf(path, sizeof(path), "/bench/%zu", i), klen, mlen;

		build_keys(b->lb, path, plen, &kb, &klen, &mlen);
		for (int j = 0; j < 2; j++) {
			/* KEYS bucket meta registry; ARGV path capacity rate n now */
			const char *argv[8] = { kb.p, kb.p + klen, b->lb->registry, path, "10", "0.01",
						j ? "4" : "1", when[j] };
			size_t lens[8] = { klen, mlen, strlen(b->lb->registry), plen, 2, 4, 1, strlen(when[j]) };

			if (rbatch_eval(batch, SCRIPT_LEAKY_BUCKET, 3, 8, argv, lens))
				die("out of memory");
		}
		if (rbatch_len(batch) >= FILL_PIPELINE)
			fill_flush(b, batch);
	}
	fill_flush(b, batch);
	start = now_s() - start;
	rbatch_free(batch);
	strbuf_free(&kb);
	b->t0 = t0;
	return start;
}

/* A few buckets must hold exactly `want` entries, and the registry all paths. */
static void check_sample(struct bench *b, long long want, const char *what)
{
	size_t idx[3] = { 0, b->paths / 2, b->paths - 1 };
	struct strbuf kb = { 0 };
	char path[64];
	redisReply *r;

	r = cmd(b, "SCARD", b->lb->registry, NULL);
	if (r->type != REDIS_REPLY_INTEGER || (size_t)r->integer != b->paths)
		die("%s: registry holds %lld paths, expected %zu", what, r->integer, b->paths);
	freeReplyObject(r);
	for (int i = 0; i < 3; i++) {
		size_t plen = (size_t)snprintf(path, sizeof(path), "/bench/%zu", idx[i]), klen, mlen;

		build_keys(b->lb, path, plen, &kb, &klen, &mlen);
		kb.p[klen] = '\0'; /* data key only */
		r = cmd(b, "ZCARD", kb.p, NULL);
		if (r->type != REDIS_REPLY_INTEGER || r->integer != want)
			die("%s: %s holds %lld entries, expected %lld", what, path, r->integer, want);
		freeReplyObject(r);
	}
	strbuf_free(&kb);
}

/* ---- Redis-side accounting (INFO commandstats) ---------------------------- */

struct cmdstat {
	char name[64];
	long long calls, usec;
};

static void stats_reset(struct bench *b)
{
	freeReplyObject(cmd(b, "CONFIG", "RESETSTAT", NULL));
}

/* Fill up to `cap` entries of `out` from INFO commandstats; returns how many. */
static size_t stats_read(struct bench *b, struct cmdstat *out, size_t cap)
{
	redisReply *r = cmd(b, "INFO", "commandstats", NULL);
	size_t n = 0;

	for (char *line = strtok(r->str, "\r\n"); line && n < cap; line = strtok(NULL, "\r\n")) {
		char name[64];
		long long calls, usec;

		if (sscanf(line, "cmdstat_%63[^:]:calls=%lld,usec=%lld", name, &calls, &usec) != 3)
			continue;
		if (!strcmp(name, "info") || !strcmp(name, "config|resetstat"))
			continue;
		snprintf(out[n].name, sizeof(out[n].name), "%s", name);
		out[n].calls = calls;
		out[n].usec = usec;
		n++;
	}
	freeReplyObject(r);
	return n;
}

static int top_level(const char *name)
{
	static const char *const top[] = { "evalsha", "sscan", "zremrangebyscore", "get", "mget", "multi",
					   "exec", "hgetall", "ping" };

	for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
		if (!strcmp(name, top[i]))
			return 1;
	return 0;
}

/*
 * One line: Redis's own time in the pass's commands (INFO commandstats, reset
 * before the pass), then the commands the scripts called (included in evalsha).
 */
static void stats_print(struct bench *b, double wall)
{
	struct cmdstat s[32];
	size_t n = stats_read(b, s, 32);
	long long top = 0;
	int nested = 0;

	for (size_t i = 0; i < n; i++)
		if (top_level(s[i].name))
			top += s[i].usec;
	printf("      redis busy %.3f s of %.3f s (%.0f%%):", (double)top / 1e6, wall,
	       100.0 * (double)top / 1e6 / wall);
	for (size_t i = 0; i < n; i++)
		if (top_level(s[i].name))
			printf(" %s %lld x %.3f s;", s[i].name, s[i].calls, (double)s[i].usec / 1e6);
	for (size_t i = 0; i < n; i++)
		if (!top_level(s[i].name))
			printf("%s %s %lld x %.3f s", nested++ ? "," : " inside scripts:", s[i].name, s[i].calls,
			       (double)s[i].usec / 1e6);
	printf("\n");
}

/* ---- the three passes ------------------------------------------------------ */

struct outcome {
	double secs;
	uint64_t drained;
	uint64_t batches;        /* sweep: script calls; loops: round trips (SSCAN pages + paths) */
};

static struct outcome pass_sweep(struct bench *b, size_t batch_size)
{
	struct worker_config wc = {
		.redis = &b->target, .timeout_ms = 60000, .prefix = PREFIX, .batch_size = batch_size,
		.layouts = b->layouts, .nlayouts = b->nlayouts,
	};
	struct worker *w = worker_new(&wc);
	struct worker_result res;
	struct outcome o = { 0 };
	double t;
	int rc;

	if (!w)
		die("worker_new failed");
	/* connect, load the scripts and the rules outside the timing: prune walks an empty registry */
	if ((rc = worker_sweep(w, WORKER_PRUNE, b->t0 + DUE_AFTER_MS, &res)))
		die("warm-up sweep: %s", strerror(-rc));
	stats_reset(b);
	t = now_s();
	rc = worker_sweep(w, WORKER_DRAIN, b->t0 + DUE_AFTER_MS, &res);
	o.secs = now_s() - t;
	if (rc) {
		struct worker_status st;

		worker_status(w, &st);
		die("drain sweep: %s (%s)", strerror(-rc), st.job[WORKER_DRAIN].last_error);
	}
	worker_free(w);
	if (res.paths != b->paths || res.entries != b->paths || res.unmatched || res.emptied || res.skipped)
		die("drain sweep: %llu paths, %llu entries drained, %llu unmatched, %llu emptied, %llu skipped; "
		    "expected %zu, %zu, 0, 0, 0",
		    (unsigned long long)res.paths, (unsigned long long)res.entries, (unsigned long long)res.unmatched,
		    (unsigned long long)res.emptied, (unsigned long long)res.skipped, b->paths, b->paths);
	o.drained = res.entries;
	o.batches = res.batches;
	return o;
}

static redisReply *raw_cmd(struct bench *b, int argc, const char **argv, const size_t *lens)
{
	redisReply *r = redisCommandArgv(b->raw, argc, argv, lens);

	if (!r)
		die("%s: %s", argv[0], b->raw->errstr);
	if (r->type == REDIS_REPLY_ERROR)
		die("%s: %s", argv[0], r->str);
	return r;
}

/*
 * The seed's loop: SSCAN the registry page by page, and for each path ONE
 * synchronous round trip.  `zrem` selects the seed's literal command;
 * otherwise EVALSHA of leaky_bucket_drain.lua for that one bucket.
 */
static struct outcome pass_loop(struct bench *b, int zrem)
{
	const struct script_src *src = script_get(SCRIPT_LEAKY_BUCKET_DRAIN);
	struct ruleset rs = { 0 };
	struct strbuf kb = { 0 };
	struct outcome o = { 0 };
	char cursor[32] = "0", sha[41], now[24], cutoff[24], count[16];
	const char *reg = b->lb->registry;
	redisReply *r;
	double t;
	int rc;

	if (!src)
		die("leaky_bucket_drain.lua is not embedded");
	{
		const char *argv[3] = { "SCRIPT", "LOAD", src->body };
		size_t lens[3] = { 6, 4, src->len };

		r = raw_cmd(b, 3, argv, lens);
		if (r->type != REDIS_REPLY_STRING || r->len != 40)
			die("SCRIPT LOAD: unexpected reply");
		memcpy(sha, r->str, 41);
		freeReplyObject(r);
	}
	if ((rc = rulestore_refresh(b->conn, PREFIX, &rs, 1, NULL, NULL)))
		die("rules: %s", strerror(-rc));
	snprintf(now, sizeof(now), "%lld", (long long)(b->t0 + DUE_AFTER_MS));
	snprintf(cutoff, sizeof(cutoff), "%lld", (long long)(b->t0 - 4));
	snprintf(count, sizeof(count), "%d", SCAN_COUNT);

	stats_reset(b);
	t = now_s();
	do {
		const char *sargv[5] = { "SSCAN", reg, cursor, "COUNT", count };
		size_t slens[5] = { 5, strlen(reg), strlen(cursor), 5, strlen(count) };
		redisReply *page = raw_cmd(b, 5, sargv, slens);

		if (page->type != REDIS_REPLY_ARRAY || page->elements != 2 ||
		    page->element[0]->type != REDIS_REPLY_STRING || page->element[0]->len >= sizeof(cursor) ||
		    page->element[1]->type != REDIS_REPLY_ARRAY)
			die("SSCAN: unexpected reply");
		memcpy(cursor, page->element[0]->str, page->element[0]->len + 1);
		o.batches++;
		for (size_t i = 0; i < page->element[1]->elements; i++) {
			const redisReply *m = page->element[1]->element[i];
			size_t klen, mlen;

			if (m->type != REDIS_REPLY_STRING)
				die("SSCAN: member is not a string");
			build_keys(b->lb, m->str, m->len, &kb, &klen, &mlen);
			if (zrem) {
				const char *argv[4] = { "ZREMRANGEBYSCORE", kb.p, "0", cutoff };
				size_t lens[4] = { 16, klen, 1, strlen(cutoff) };

				r = raw_cmd(b, 4, argv, lens);
				if (r->type != REDIS_REPLY_INTEGER)
					die("ZREMRANGEBYSCORE: unexpected reply");
				o.drained += (uint64_t)r->integer;
			} else {
				const struct rule *rule = ruleset_match(&rs, m->str, m->len);
				char rate[40];
				const char *argv[9] = { "EVALSHA", sha, "3", reg, kb.p, kb.p + klen, now, m->str, rate };
				size_t lens[9] = { 7, 40, 1, strlen(reg), klen, mlen, strlen(now), m->len, 0 };

				if (!rule || rule->algorithm != ALG_LEAKY_BUCKET)
					die("no leaky_bucket rule for %s", m->str);
				lens[8] = (size_t)snprintf(rate, sizeof(rate), "%.17g", rule->rate);
				r = raw_cmd(b, 9, argv, lens);
				if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
				    r->element[0]->type != REDIS_REPLY_INTEGER)
					die("EVALSHA: unexpected reply");
				o.drained += (uint64_t)r->element[0]->integer;
			}
			freeReplyObject(r);
			o.batches++;
		}
		freeReplyObject(page);
	} while (strcmp(cursor, "0") != 0);
	o.secs = now_s() - t;
	ruleset_clear(&rs);
	strbuf_free(&kb);
	if (o.drained != b->paths)
		die("%s loop drained %llu entries, expected %zu", zrem ? "ZREMRANGEBYSCORE" : "EVALSHA",
		    (unsigned long long)o.drained, b->paths);
	return o;
}

/* ---- driver ------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[MAX_ROUNDS];

	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double minimum(const double *v, int n)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static struct outcome run_pass(struct bench *b, enum pass p, size_t batch_size, int round)
{
	static const char *const names[PASS__N] = { "sweep", "evalsha-per-path", "zrem-per-path" };
	double fsecs = fill(b, redis_time_ms(b));
	struct outcome o;

	check_sample(b, 5, "after fill");
	printf("  round %d %-17s fill %.2f s (%.0f acquires/s)", round, names[p], fsecs,
	       2.0 * (double)b->paths / fsecs);
	fflush(stdout);
	o = p == PASS_SWEEP ? pass_sweep(b, batch_size) : pass_loop(b, p == PASS_ZREM);
	printf("  -> %.3f s, %.0f keys/s, %llu drained", o.secs, (double)b->paths / o.secs,
	       (unsigned long long)o.drained);
	if (p == PASS_SWEEP)
		printf(", %llu script calls", (unsigned long long)o.batches);
	else
		printf(", %llu round trips of %.0f us", (unsigned long long)o.batches, o.secs * 1e6 / (double)o.batches);
	printf("\n");
	stats_print(b, o.secs);
	check_sample(b, 4, names[p]);
	fflush(stdout);
	return o;
}

static void usage(FILE *f)
{
	fputs("usage: drain_bench bench --redis URL [--paths N] [--repeat R] [--batch-size B]\n"
	      "                         [--also-batch B1,B2,...]\n"
	      "       drain_bench fill  --redis URL [--paths N] [--age-ms A]\n"
	      "       drain_bench sweep --redis URL [--paths N] [--batch-size B]\n",
	      f);
}

static long long num_arg(const char *s, const char *flag, long long min, long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < min || v > max) {
		fprintf(stderr, "drain_bench: %s must be an integer %lld..%lld\n", flag, min, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct bench b = { 0 };
	struct sl_error err = { 0 };
	const char *url = NULL, *mode, *also = NULL;
	size_t batch_size = 500, also_v[MAX_BATCHES], nalso = 0;
	int rounds = 3;
	long long age_ms = 0;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	mode = argv[1];
	if (strcmp(mode, "bench") && strcmp(mode, "fill") && strcmp(mode, "sweep")) {
		usage(stderr);
		return 2;
	}
	b.paths = 100000;
	for (int i = 2; i < argc; i++) {
		const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			usage(stderr);
			return 2;
		}
		i++;
		if (!strcmp(f, "--redis"))
			url = v;
		else if (!strcmp(f, "--paths"))
			b.paths = (size_t)num_arg(v, f, 3, 100000000);
		else if (!strcmp(f, "--repeat"))
			rounds = (int)num_arg(v, f, 1, MAX_ROUNDS);
		else if (!strcmp(f, "--batch-size"))
			batch_size = (size_t)num_arg(v, f, 1, 100000);
		else if (!strcmp(f, "--age-ms"))
			age_ms = num_arg(v, f, 0, 1000000000);
		else if (!strcmp(f, "--also-batch"))
			also = v;
		else {
			usage(stderr);
			return 2;
		}
	}
	if (also) {
		char *dup = strdup(also), *save = NULL;

		for (char *t = strtok_r(dup, ",", &save); t && nalso < MAX_BATCHES; t = strtok_r(NULL, ",", &save))
			also_v[nalso++] = (size_t)num_arg(t, "--also-batch", 1, 100000);
		free(dup);
	}
	if (!url) {
		usage(stderr);
		return 2;
	}
	if (redis_url_parse(url, &b.target, &err)) {
		fprintf(stderr, "drain_bench: %s: %s\n", err.field, err.message);
		return 2;
	}
	if (layouts_default(PREFIX, &b.layouts, &b.nlayouts) ||
	    !(b.lb = layouts_find(b.layouts, b.nlayouts, ALG_LEAKY_BUCKET)))
		die("layouts: out of memory");
	if (!(b.conn = rconn_new(&b.target, 60000)))
		die("out of memory");
	{
		int rc = rconn_ensure(b.conn);

		if (rc)
			die("connect %s: %s (%s)", url, strerror(-rc), rconn_errstr(b.conn));
	}

	if (!strcmp(mode, "fill")) {
		double s = fill(&b, redis_time_ms(&b) - age_ms);

		check_sample(&b, 5, "after fill");
		printf("filled %zu buckets (5 entries each, as of now - %lld ms) in %.2f s\n", b.paths, age_ms, s);
	} else if (!strcmp(mode, "sweep")) {
		/* after `fill --age-ms 100000`: one entry is due per bucket at the Redis clock */
		struct outcome o;

		b.t0 = redis_time_ms(&b) - DUE_AFTER_MS;
		o = pass_sweep(&b, batch_size);
		printf("sweep %zu buckets, batch %zu: %.3f s, %.0f keys/s, %llu script calls\n", b.paths, batch_size,
		       o.secs, (double)b.paths / o.secs, (unsigned long long)o.batches);
		stats_print(&b, o.secs);
	} else {
		struct timeval tv = { 60, 0 };
		double secs[PASS__N][MAX_ROUNDS], also_secs[MAX_BATCHES], trips[PASS__N] = { 0 };
		uint64_t batches = 0;
		double med[PASS__N], mn[PASS__N];
		static const char *const label[PASS__N] = {
			"drain sweep (worker, pipelined)", "one round trip per path (same script)",
			"one round trip per path (seed ZREMRANGEBYSCORE)",
		};

		b.raw = redisConnectWithTimeout(b.target.host ? b.target.host : "127.0.0.1", b.target.port, tv);
		if (!b.raw || b.raw->err)
			die("connect: %s", b.raw ? b.raw->errstr : "out of memory");
		redisSetTimeout(b.raw, tv);
		if (b.target.db) {
			char db[16];
			const char *a[2] = { "SELECT", db };
			size_t l[2] = { 6, 0 };

			l[1] = (size_t)snprintf(db, sizeof(db), "%d", b.target.db);
			freeReplyObject(raw_cmd(&b, 2, a, l));
		}
		printf("drain_bench: %zu leaky buckets x 5 entries (rule capacity 10, rate %g/s), each pass drains\n"
		       "1 entry from every bucket; worker batch %zu; %d rounds of 3 fresh fills\n",
		       b.paths, RULE_RATE, batch_size, rounds);
		for (int r = 0; r < rounds; r++)
			for (int p = 0; p < PASS__N; p++) {
				struct outcome o = run_pass(&b, (enum pass)p, batch_size, r + 1);

				secs[p][r] = o.secs;
				if (p == PASS_SWEEP)
					batches = o.batches;
				else
					trips[p] = (double)o.batches;
			}
		for (size_t k = 0; k < nalso; k++) {
			fill(&b, redis_time_ms(&b));
			also_secs[k] = pass_sweep(&b, also_v[k]).secs;
			check_sample(&b, 4, "sweep");
			printf("  batch %-6zu sweep %.3f s, %.0f keys/s\n", also_v[k], also_secs[k],
			       (double)b.paths / also_secs[k]);
			fflush(stdout);
		}

		for (int p = 0; p < PASS__N; p++) {
			med[p] = median(secs[p], rounds);
			mn[p] = minimum(secs[p], rounds);
		}
		printf("\nsummary (median of %d; min in brackets):\n", rounds);
		for (int p = 0; p < PASS__N; p++) {
			char name[80];

			if (p == PASS_SWEEP)
				snprintf(name, sizeof(name), "%s, batch %zu", label[p], batch_size);
			else
				snprintf(name, sizeof(name), "%s", label[p]);
			printf("RESULT %-50s %7zu keys %7.3f s [%.3f]  %8.0f keys/s", name, b.paths, med[p], mn[p],
			       (double)b.paths / med[p]);
			if (p == PASS_SWEEP)
				printf("  (%llu script calls)\n", (unsigned long long)batches);
			else
				printf("  (%.0f us a round trip)  sweep is %.1fx faster\n", med[p] * 1e6 / trips[p],
				       med[p] / med[PASS_SWEEP]);
		}
		for (size_t k = 0; k < nalso; k++) {
			char name[80];

			snprintf(name, sizeof(name), "%s, batch %zu", label[PASS_SWEEP], also_v[k]);
			printf("RESULT %-50s %7zu keys %7.3f s (1 run)  %8.0f keys/s\n", name, b.paths, also_secs[k],
			       (double)b.paths / also_secs[k]);
		}
		printf("RESULT target: sweep >= 20x the same-script loop: %s (%.1fx); %zu keys in < 1 s: %s (%.3f s)\n",
		       med[PASS_EVALSHA] / med[PASS_SWEEP] >= 20 ? "met" : "NOT met",
		       med[PASS_EVALSHA] / med[PASS_SWEEP], b.paths, med[PASS_SWEEP] < 1.0 ? "met" : "NOT met",
		       med[PASS_SWEEP]);
		redisFree(b.raw);
	}
	rconn_free(b.conn);
	layouts_free(b.layouts, b.nlayouts);
	redis_target_clear(&b.target);
	return 0;
}

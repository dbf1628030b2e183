/*
 * drain_bench: the benchmarks of key layout 2 (issue 8, "Benchmark") that
 * need the worker's own code or a tight client loop.  bench/bench.sh runs
 * them on a private redis-server and prints the summary.
 *
 *   drain_bench ticks  --redis URL [--sizes 10000,100000,1000000] [--due 10000]
 *                      [--algs leaky_bucket,sliding_log] [--repeat R] [--batch-size B]
 *   drain_bench sweep  --redis URL [--paths 100000] [--repeat R] [--batch-size B] [--depth D]
 *   drain_bench prune  --redis URL [--paths 100000] [--repeat R] [--batch-size B] [--depth D]
 *   drain_bench client --redis URL [--calls 20000] [--repeat R]
 *   drain_bench fill   --redis URL --paths N [--due N] [--prefix P] [--due-in-ms MS]
 *   drain_bench cluster --redis URL[,HOST:PORT...] [--paths 100000] [--repeat R] [--batch-size B]
 *   drain_bench keys   ALGORITHM PATH [--prefix P]
 *
 * ticks: the worker's step (worker_step of libsluice, the due-driven walk of
 *   worker/due.c) over N registered paths of which `due` are due, for each
 *   size: cost should follow the work due, not the registry.  A fresh
 *   worker first takes one step just before the due time (it learns every
 *   shard's next due time, as the daemon does in its first tick), then the
 *   timed step at the due time.  Wall time (CLOCK_MONOTONIC) and Redis CPU
 *   (INFO cpu, used_cpu_sys + used_cpu_user) of that step; the due paths are
 *   restored between rounds and the sizes alternate within a round.
 * sweep: 100,000 leaky buckets, each with one entry due: one full drain
 *   sweep (worker_sweep) against the same work done by one EVALSHA of the
 *   same shard job per bucket (limit 1: it drains the shard's first due
 *   bucket), pipelined `depth` (128) deep.  Redis CPU per drained bucket.
 * prune: 100,000 sliding logs of 20 entries, 5 of them expired: one prune
 *   sweep against one ZREMRANGEBYSCORE per log on the same keys, pipelined
 *   `depth` deep.
 * client: Redis's own time per call (INFO commandstats, usec_per_call of
 *   evalsha) of each client script, admitted calls on one path whose state
 *   exists (the applications' hot path) and calls on a new path each time,
 *   beside seed 000's sliding-log script and an empty script with the same
 *   KEYS and ARGV, in the same run.
 * fill: leaky buckets for the daemon runs of bench.sh (5 entries each,
 *   capacity 10), `due` of them (default all) due `due-in-ms` from now
 *   (Redis clock), the others 10^5 s later.
 * keys: print the five KEYS of a client call for PATH, one a line.
 * cluster: one drain sweep (worker_sweep) of 100,000 leaky buckets on a
 *   Redis Cluster (or a single Redis) through libsluice's Redis layer
 *   (core/rconn.h), which this mode also fills and checks with: wall time,
 *   buckets and entries a second, the worker's thread CPU and round trips,
 *   and per primary its Redis CPU, shard calls and reads (the pipeline
 *   depth it sees).  bench/cluster.py runs it on 1 and 3 primaries.
 *
 * Filling: a path's state is what the client script writes.  The script
 * itself makes a template path (its calls at chosen, explicit `now`s, none
 * ahead of Redis TIME: the scripts refuse that); the
 * template's state and meta are copied to every path with DUMP / RESTORE
 * (with their TTLs) and the path is added to its shard's registry at the
 * template's score, pipelined.  Then three sample paths are checked: their
 * copied state is dropped and made again by the script itself, and must be
 * byte for byte the same (DUMP), with the same registry score and TTLs
 * within 2 s.  Same data as calling the script per path, several times
 * faster (no Lua per path).
 *
 * Every figure is measured against a baseline in the same run; nothing
 * passes or fails on speed.  Exit 0; 1 on a real error (Redis refuses
 * something, a count of drained/pruned entries is not the one the state
 * implies); 2 on a bad flag; 3 when a script this mode needs is not on the
 * layout-2 calling contract yet or its shard job is a placeholder (the
 * message says which).  Only the bench's private Redis is touched, and each
 * mode starts with FLUSHDB.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/algorithm.h"
#include "core/keys.h"
#include "core/layout.h"
#include "core/rconn.h"
#include "core/redis_target.h"
#include "core/scripts.h"
#include "core/shard.h"
#include "worker/worker.h"

#define MAX_ROUNDS 50
#define MAX_SIZES 8
#define FILL_PIPELINE 1000     /* paths per pipeline while filling (3 commands each) */
#define TTL_SLACK_MS 2000      /* a sample's TTLs against the template's */
#define EXIT_NOT_READY 3

/* seed 000's Lua script (shared/seeds/000, "Lua脚本优化"): the same commands and
 * conversions, in our words: drop scores <= now - window, count, refuse at the
 * threshold, else add now as member and score.  KEYS[1] key; ARGV now window threshold. */
static const char SEED000_LUA[] =
	"local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])\n"
	"redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now - window)\n"
	"if redis.call('ZCARD', KEYS[1]) >= limit then\n"
	"  return tostring(0)\n"
	"end\n"
	"redis.call('ZADD', KEYS[1], tostring(now), now)\n"
	"return tostring(1)\n";
/* the floor: a script that takes the contract's 5 KEYS and 6 ARGV and answers a reply of its shape */
static const char FLOOR_LUA[] = "return { 1, 0, 0, 0, '' }\n";

struct bench {
	struct redis_target target;
	const char *url;
	redisContext *c;
	/*
	 * mode cluster: the one Redis layer of libsluice (core/rconn.h, which
	 * routes by slot) instead of `c`; the helpers below (cmdv, pipe_push,
	 * pipe_flush) go through it, a script's EVALSHA as rbatch_eval of the
	 * script script_load_id named (rconn loads it on every node).
	 */
	struct rconn *k;
	struct rbatch *kb;
	struct { char sha[41]; enum script_id id; } ks[4];
	int nks;
	size_t batch;    /* the worker's batch_size */
	int depth;       /* pipeline depth of the per-bucket / per-log baselines */
	int rounds;
	int queued;      /* commands appended and not read yet */
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

static void not_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void not_ready(const char *fmt, ...)
{
	va_list ap;

	fputs("RESULT not measured: ", stdout);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	exit(EXIT_NOT_READY);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- Redis, plain hiredis ------------------------------------------------- */

static void check_ctx(struct bench *b, const char *what)
{
	if (b->c->err)
		die("%s: %s", what, b->c->errstr);
}

/* One command; an error reply is returned to the caller (who frees the reply). */
static redisReply *cmdv(struct bench *b, int argc, const char **argv, const size_t *lens)
{
	redisReply *r;

	if (b->k) {
		int rc = rconn_command(b->k, argc, argv, lens, &r);

		if (rc)
			die("%s: %s", argv[0], rconn_strerror(b->k, rc));
		return r;
	}
	r = redisCommandArgv(b->c, argc, argv, lens);
	if (!r)
		die("%s: %s", argv[0], b->c->errstr);
	return r;
}

/*
 * A command without a key (SCRIPT LOAD, CLUSTER SLOTS): in mode cluster on
 * the first primary (rbatch_cmd_at; rconn_command would route it by its
 * first argument), else as cmdv.
 */
static redisReply *cmdv_keyless(struct bench *b, int argc, const char **argv, const size_t *lens)
{
	struct rbatch *one;
	redisReply *r;
	int rc;

	if (!b->k)
		return cmdv(b, argc, argv, lens);
	if (!(one = rbatch_new()) || rbatch_cmd_at(one, 0, argc, argv, lens))
		die("out of memory");
	if ((rc = rbatch_run(b->k, one)))
		die("%s: %s", argv[0], rconn_strerror(b->k, rc));
	r = rbatch_take(one, 0);
	rbatch_free(one);
	return r;
}

/* A printf-style command (no binary arguments) that must not fail. */
static redisReply *cmdf(struct bench *b, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	if (b->k)
		die("%s: not sent through a cluster (no format commands in mode cluster)", fmt);
	va_start(ap, fmt);
	r = redisvCommand(b->c, fmt, ap);
	va_end(ap);
	if (!r)
		die("%s: %s", fmt, b->c->errstr);
	if (r->type == REDIS_REPLY_ERROR)
		die("%s: %s", fmt, r->str);
	return r;
}

/* Mode cluster: queue a command in b->kb, an EVALSHA of a script loaded by script_load_id as rbatch_eval. */
static void kpush(struct bench *b, int argc, const char **argv, const size_t *lens)
{
	int rc = -EINVAL;

	if (argc >= 3 && !strcmp(argv[0], "EVALSHA")) {
		for (int i = 0; i < b->nks; i++)
			if (lens[1] == 40 && !memcmp(argv[1], b->ks[i].sha, 40))
				rc = rbatch_eval(b->kb, b->ks[i].id, atoi(argv[2]), argc - 3, argv + 3, lens + 3);
		if (rc == -EINVAL)
			die("EVALSHA %.40s: not a script of script_load_id (mode cluster)", argv[1]);
	} else {
		rc = rbatch_cmd(b->kb, argc, argv, lens);
	}
	if (rc)
		die("%s: %s", argv[0], strerror(-rc));
}

static void pipe_push(struct bench *b, int argc, const char **argv, const size_t *lens)
{
	if (b->k)
		kpush(b, argc, argv, lens);
	else if (redisAppendCommandArgv(b->c, argc, argv, lens) != REDIS_OK)
		die("%s: %s", argv[0], b->c->errstr);
	b->queued++;
}

/* Read every queued reply, each handed to fn (may be NULL) before it is freed. */
static void pipe_flush(struct bench *b, void (*fn)(redisReply *r, void *ctx), void *ctx)
{
	if (b->k) {
		int rc = b->queued ? rbatch_run(b->k, b->kb) : 0;

		if (rc)
			die("pipeline: %s", rconn_strerror(b->k, rc));
		for (size_t i = 0; fn && i < rbatch_len(b->kb); i++)
			fn(rbatch_reply(b->kb, i), ctx);
		rbatch_clear(b->kb);
		b->queued = 0;
		return;
	}
	while (b->queued > 0) {
		void *rv = NULL;

		if (redisGetReply(b->c, &rv) != REDIS_OK || !rv)
			die("pipeline: %s", b->c->errstr);
		b->queued--;
		if (fn)
			fn(rv, ctx);
		freeReplyObject(rv);
	}
}

static void reply_ok(redisReply *r, void *ctx)
{
	if (r->type == REDIS_REPLY_ERROR)
		die("%s: %s", (const char *)ctx, r->str);
}

static int64_t redis_time_ms(struct bench *b)
{
	const char *argv[1] = { "TIME" };
	size_t lens[1] = { 4 };
	redisReply *r = cmdv(b, 1, argv, lens);
	int64_t ms;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
		die("TIME: unexpected reply");
	ms = strtoll(r->element[0]->str, NULL, 10) * 1000 + strtoll(r->element[1]->str, NULL, 10) / 1000;
	freeReplyObject(r);
	return ms;
}

/* Redis's CPU time so far, s (INFO cpu: used_cpu_sys + used_cpu_user, all its threads). */
static double redis_cpu_s(struct bench *b)
{
	redisReply *r = cmdf(b, "INFO cpu");
	const char *s, *u;
	double v;

	if (r->type != REDIS_REPLY_STRING || !(s = strstr(r->str, "used_cpu_sys:")) ||
	    !(u = strstr(r->str, "used_cpu_user:")))
		die("INFO cpu: no used_cpu_sys / used_cpu_user");
	v = strtod(s + 13, NULL) + strtod(u + 14, NULL);
	freeReplyObject(r);
	return v;
}

/* usec_per_call and calls of `cmd` in INFO commandstats (0 when it was not called). */
static double cmd_usec_per_call(struct bench *b, const char *cmd, long long *calls)
{
	redisReply *r = cmdf(b, "INFO commandstats");
	char want[80];
	const char *p;
	double v = 0;

	*calls = 0;
	snprintf(want, sizeof(want), "cmdstat_%s:", cmd);
	if ((p = strstr(r->str, want))) {
		const char *c = strstr(p, "calls="), *u = strstr(p, "usec_per_call=");

		if (c)
			*calls = strtoll(c + 6, NULL, 10);
		if (u)
			v = strtod(u + 14, NULL);
	}
	freeReplyObject(r);
	return v;
}

/*
 * One line: Redis's own time in commands since CONFIG RESETSTAT (INFO
 * commandstats; a script's time includes the commands it calls, which
 * follow).
 */
static void stats_print(struct bench *b)
{
	static const char *const top[] = { "evalsha", "zremrangebyscore", "time", "mget", "get", "ping" };
	redisReply *r = cmdf(b, "INFO commandstats");
	int nested = 0;

	printf("      in commands:");
	for (int pass = 0; pass < 2; pass++) {
		char *copy = strdup(r->str), *save = NULL;

		if (!copy)
			die("out of memory");
		for (char *line = strtok_r(copy, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
			char name[64];
			long long calls, usec;
			int is_top = 0;

			if (sscanf(line, "cmdstat_%63[^:]:calls=%lld,usec=%lld", name, &calls, &usec) != 3 ||
			    !strcmp(name, "info") || !strcmp(name, "config|resetstat"))
				continue;
			for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
				is_top |= !strcmp(name, top[i]);
			if (pass == 0 && is_top)
				printf(" %s %lld x %.3f s;", name, calls, (double)usec / 1e6);
			else if (pass == 1 && !is_top)
				printf("%s %s %lld x %.3f s", nested++ ? "," : " inside scripts:", name, calls,
				       (double)usec / 1e6);
		}
		free(copy);
	}
	printf("\n");
	freeReplyObject(r);
}

static void script_load(struct bench *b, const char *body, size_t len, char sha[41])
{
	const char *argv[3] = { "SCRIPT", "LOAD", body };
	size_t lens[3] = { 6, 4, len };
	redisReply *r = cmdv_keyless(b, 3, argv, lens);

	if (r->type != REDIS_REPLY_STRING || r->len != 40)
		die("SCRIPT LOAD: %s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
	memcpy(sha, r->str, 41);
	freeReplyObject(r);
}

static void script_load_id(struct bench *b, enum script_id id, char sha[41])
{
	const struct script_src *s = script_get(id);

	if (!s)
		die("script %s is not embedded", script_name(id));
	script_load(b, s->body, s->len, sha);
	if (b->k && b->nks < (int)(sizeof(b->ks) / sizeof(b->ks[0]))) {
		/* loaded on one node; rconn loads every embedded script on every node itself */
		memcpy(b->ks[b->nks].sha, sha, 41);
		b->ks[b->nks++].id = id;
	}
}

/* ---- keys of layout 2 ------------------------------------------------------ */

enum { K_STATE, K_META, K_REGISTRY, K_RULES, K_STATS, K__N };

/* The five KEYS of a client call for one path (core/keys.h), in one buffer. */
struct pkeys {
	struct strbuf buf;
	size_t off[K__N], len[K__N];
	const char *p[K__N]; /* valid until the next pkeys_make */
};

static void pkeys_make(struct pkeys *k, const char *prefix, const char *alg, const char *path, size_t plen)
{
	unsigned shard = shard_of(path, plen);
	char word[64];
	int rc = 0;

	k->buf.len = 0;
	for (int i = 0; i < K__N && !rc; i++) {
		k->off[i] = k->buf.len;
		switch (i) {
		case K_STATE:
			rc = keys_path(&k->buf, prefix, alg, path, plen);
			break;
		case K_META:
			snprintf(word, sizeof(word), "%s_meta", alg);
			rc = keys_path(&k->buf, prefix, word, path, plen);
			break;
		case K_REGISTRY:
			snprintf(word, sizeof(word), "registry:%s", alg);
			rc = keys_shard(&k->buf, prefix, shard, word);
			break;
		case K_RULES:
			rc = keys_shard(&k->buf, prefix, shard, "rules");
			break;
		default:
			rc = keys_shard(&k->buf, prefix, shard, "stats");
			break;
		}
		k->len[i] = k->buf.len - k->off[i];
	}
	if (rc)
		die("out of memory");
	for (int i = 0; i < K__N; i++)
		k->p[i] = k->buf.p + k->off[i];
}

/* ---- the client scripts ------------------------------------------------------ */

/* The parameters (ARGV[5..]) an algorithm's client script takes, in order. */
static int alg_nparams(enum algorithm a)
{
	unsigned f = algorithm_get(a)->fields;
	int n = 0;

	for (; f; f &= f - 1)
		n++;
	return n;
}

struct call {
	const char *n;   /* cost, "" = 1 */
	int64_t now;     /* ms */
};

/* What one algorithm's client script is called with to make a path's state. */
struct tmpl {
	enum algorithm alg;
	const char *params[3];
	struct call calls[2];
	int ncalls;
	/* made by tmpl_make: */
	redisReply *dump[2];   /* DUMP of state, meta (nil: no such key) */
	long long pttl[2];     /* their PTTLs (-1: none) */
	long long due;         /* registry score */
};

/* Queue one client call of t's algorithm for `path` (ARGV path, n, now, "" rule, params). */
static void client_push(struct bench *b, const char *sha, const char *prefix, enum algorithm a, struct pkeys *k,
			const char *path, size_t plen, const char *n, int64_t now, const char *const *params)
{
	const char *argv[16];
	size_t lens[16];
	char nows[24];
	int argc = 0, np = alg_nparams(a);

	pkeys_make(k, prefix, algorithm_name(a), path, plen);
	snprintf(nows, sizeof(nows), "%lld", (long long)now);
	argv[argc] = "EVALSHA", lens[argc++] = 7;
	argv[argc] = sha, lens[argc++] = 40;
	argv[argc] = "5", lens[argc++] = 1;
	for (int i = 0; i < K__N; i++)
		argv[argc] = k->p[i], lens[argc++] = k->len[i];
	argv[argc] = path, lens[argc++] = plen;
	argv[argc] = n, lens[argc++] = strlen(n);
	argv[argc] = nows, lens[argc++] = strlen(nows);
	argv[argc] = "", lens[argc++] = 0;
	for (int i = 0; i < np; i++)
		argv[argc] = params[i], lens[argc++] = strlen(params[i]);
	pipe_push(b, argc, argv, lens);
}

/* The reply of a client call must be an admission; else exit (3 for a script not on the contract). */
static void admitted(redisReply *r, void *ctx)
{
	const char *alg = ctx;

	if (r->type == REDIS_REPLY_ERROR) {
		if (strstr(r->str, "takes 5 KEYS") || strstr(r->str, "KEYS"))
			not_ready("%s.lua is not on the layout-2 calling contract in this tree: %s", alg, r->str);
		die("%s.lua: %s", alg, r->str);
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->type != REDIS_REPLY_INTEGER)
		not_ready("%s.lua does not answer {allowed, ...} (not on the layout-2 contract in this tree?)", alg);
	if (r->element[0]->integer != 1)
		die("%s.lua: the bench's call was not admitted", alg);
}

static void run_calls(struct bench *b, const char *sha, const char *prefix, const struct tmpl *t, struct pkeys *k,
		      const char *path, size_t plen)
{
	for (int i = 0; i < t->ncalls; i++) {
		client_push(b, sha, prefix, t->alg, k, path, plen, t->calls[i].n, t->calls[i].now, t->params);
		pipe_flush(b, admitted, (void *)algorithm_name(t->alg));
	}
}

/* DUMP state and meta, their PTTLs and the registry score of the path whose keys are in k. */
static void snapshot(struct bench *b, const struct pkeys *k, const char *path, size_t plen, redisReply *dump[2],
		     long long pttl[2], long long *due)
{
	for (int i = 0; i < 2; i++) {
		const char *argv[2] = { "DUMP", k->p[i] };
		size_t lens[2] = { 4, k->len[i] };
		redisReply *r;

		dump[i] = cmdv(b, 2, argv, lens);
		if (dump[i]->type != REDIS_REPLY_STRING && dump[i]->type != REDIS_REPLY_NIL)
			die("DUMP: unexpected reply");
		argv[0] = "PTTL";
		r = cmdv(b, 2, argv, lens);
		pttl[i] = r->type == REDIS_REPLY_INTEGER ? r->integer : -2;
		freeReplyObject(r);
	}
	{
		const char *argv[3] = { "ZSCORE", k->p[K_REGISTRY], path };
		size_t lens[3] = { 6, k->len[K_REGISTRY], plen };
		redisReply *r = cmdv(b, 3, argv, lens);

		if (r->type != REDIS_REPLY_STRING)
			die("the client script did not register %.*s in its shard's due index", (int)plen, path);
		*due = strtoll(r->str, NULL, 10);
		freeReplyObject(r);
	}
}

static void forget(struct bench *b, const struct pkeys *k, const char *path, size_t plen)
{
	const char *del[3] = { "DEL", k->p[K_STATE], k->p[K_META] };
	size_t dlen[3] = { 3, k->len[K_STATE], k->len[K_META] };
	const char *zrem[3] = { "ZREM", k->p[K_REGISTRY], path };
	size_t zlen[3] = { 4, k->len[K_REGISTRY], plen };

	pipe_push(b, 3, del, dlen);
	pipe_push(b, 3, zrem, zlen);
	pipe_flush(b, reply_ok, "DEL/ZREM");
}

/* Make t's state with the client script on a scratch path, keep it (DUMP), then remove it. */
static void tmpl_make(struct bench *b, const char *sha, struct tmpl *t)
{
	static const char path[] = "/bench/template";
	struct pkeys k = { 0 };

	run_calls(b, sha, "tmpl:", t, &k, path, sizeof(path) - 1);
	snapshot(b, &k, path, sizeof(path) - 1, t->dump, t->pttl, &t->due);
	if (t->dump[0]->type == REDIS_REPLY_NIL)
		die("%s.lua wrote no state key", algorithm_name(t->alg));
	forget(b, &k, path, sizeof(path) - 1);
	strbuf_free(&k.buf);
}

static void tmpl_free(struct tmpl *t)
{
	for (int i = 0; i < 2; i++) {
		freeReplyObject(t->dump[i]);
		t->dump[i] = NULL;
	}
}

/* Queue the copy of t's state for `path`: RESTORE state and meta (REPLACE, with their TTLs). */
static void copy_push(struct bench *b, const char *prefix, const struct tmpl *t, struct pkeys *k, const char *path,
		      size_t plen)
{
	char ttl[24];

	pkeys_make(k, prefix, algorithm_name(t->alg), path, plen);
	for (int i = 0; i < 2; i++) {
		if (t->dump[i]->type != REDIS_REPLY_STRING)
			continue;
		snprintf(ttl, sizeof(ttl), "%lld", t->pttl[i] > 0 ? t->pttl[i] : 0);
		{
			const char *argv[5] = { "RESTORE", k->p[i], ttl, t->dump[i]->str, "REPLACE" };
			size_t lens[5] = { 7, k->len[i], strlen(ttl), t->dump[i]->len, 7 };

			pipe_push(b, 5, argv, lens);
		}
	}
}

/* "/bench/<i>" */
static size_t path_of(size_t i, char *buf, size_t cap)
{
	return (size_t)snprintf(buf, cap, "/bench/%zu", i);
}

/* tmpl_of(i, ctx): which template path i gets (NULL: none). */
typedef const struct tmpl *(*tmpl_of_fn)(size_t i, const void *ctx);

/* A path of a fill chunk waiting for its registry ZADD, ordered by shard. */
struct member {
	unsigned shard;
	size_t i;
	const struct tmpl *t;
};

static int cmp_member(const void *x, const void *y)
{
	const struct member *a = x, *c = y;

	return a->shard != c->shard ? (a->shard > c->shard) - (a->shard < c->shard) : (a->i > c->i) - (a->i < c->i);
}

#define FILL_CHUNK 65536 /* paths whose registry members are grouped by shard */
#define ZADD_SLICE 256   /* members per ZADD */

/* ZADD the chunk's members, one command per shard and slice. */
static void registry_push(struct bench *b, const char *prefix, struct member *m, size_t n)
{
	struct cmdargs a = { 0 };
	char path[64];

	qsort(m, n, sizeof(*m), cmp_member);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		const char *const *argv;
		const size_t *lens;
		int argc;

		cmdargs_reset(&a);
		if (cmdargs_str(&a, "ZADD"))
			die("out of memory");
		{
			struct strbuf *sb = cmdargs_begin(&a);
			char word[64];

			snprintf(word, sizeof(word), "registry:%s", algorithm_name(m[i].t->alg));
			if (cmdargs_end(&a, keys_shard(sb, prefix, m[i].shard, word)))
				die("out of memory");
		}
		for (; j < n && m[j].shard == m[i].shard && j - i < ZADD_SLICE; j++)
			if (cmdargs_int(&a, m[j].t->due) || cmdargs_add(&a, path, path_of(m[j].i, path, sizeof(path))))
				die("out of memory");
		if ((argc = cmdargs_view(&a, NULL, &argv, &lens)) < 0)
			die("out of memory");
		pipe_push(b, argc, (const char **)argv, lens);
		if (b->queued >= FILL_PIPELINE)
			pipe_flush(b, reply_ok, "fill: ZADD");
		i = j;
	}
	pipe_flush(b, reply_ok, "fill: ZADD");
	cmdargs_free(&a);
}

/*
 * Copy templates to paths [from, to) of `prefix`: RESTORE of the state and
 * meta per path, pipelined, and the registry members by shard.  Returns the
 * seconds it took.
 */
static double fill_paths(struct bench *b, const char *prefix, size_t from, size_t to, tmpl_of_fn of, const void *ctx)
{
	struct member *m = malloc(FILL_CHUNK * sizeof(*m));
	struct pkeys k = { 0 };
	char path[64];
	double t0 = mono_s();
	size_t nm = 0;

	if (!m)
		die("out of memory");
	for (size_t i = from; i < to; i++) {
		const struct tmpl *t = of(i, ctx);
		size_t plen;

		if (!t)
			continue;
		plen = path_of(i, path, sizeof(path));
		copy_push(b, prefix, t, &k, path, plen);
		if (b->queued >= FILL_PIPELINE)
			pipe_flush(b, reply_ok, "fill: RESTORE");
		m[nm++] = (struct member){ shard_of(path, plen), i, t };
		if (nm == FILL_CHUNK) {
			pipe_flush(b, reply_ok, "fill: RESTORE");
			registry_push(b, prefix, m, nm);
			nm = 0;
		}
	}
	pipe_flush(b, reply_ok, "fill: RESTORE");
	registry_push(b, prefix, m, nm);
	free(m);
	strbuf_free(&k.buf);
	return mono_s() - t0;
}

/*
 * Path i of `prefix` holds a copy of t: drop it, make it again with the
 * client script itself, and compare (DUMP bytes, registry score, TTLs).
 */
static void check_copy(struct bench *b, const char *sha, const char *prefix, const struct tmpl *t, size_t i)
{
	struct pkeys k = { 0 };
	redisReply *dump[2];
	long long pttl[2], due;
	char path[64];
	size_t plen = path_of(i, path, sizeof(path));
	const char *alg = algorithm_name(t->alg);

	pkeys_make(&k, prefix, alg, path, plen);
	forget(b, &k, path, plen);
	run_calls(b, sha, prefix, t, &k, path, plen);
	snapshot(b, &k, path, plen, dump, pttl, &due);
	for (int j = 0; j < 2; j++) {
		if (dump[j]->type != t->dump[j]->type ||
		    (dump[j]->type == REDIS_REPLY_STRING &&
		     (dump[j]->len != t->dump[j]->len || memcmp(dump[j]->str, t->dump[j]->str, dump[j]->len))))
			die("fill check: %s of %s%s as %s.lua makes it differs from the bench's copy", j ? "meta" : "state",
			    prefix, path, alg);
		if ((pttl[j] < 0) != (t->pttl[j] < 0) || llabs(pttl[j] - t->pttl[j]) > TTL_SLACK_MS)
			die("fill check: %s of %s%s: PTTL %lld as %s.lua makes it, %lld in the copy", j ? "meta" : "state",
			    prefix, path, pttl[j], alg, t->pttl[j]);
		freeReplyObject(dump[j]);
	}
	if (due != t->due)
		die("fill check: %s%s due at %lld as %s.lua registers it, %lld in the copy", prefix, path, due, alg, t->due);
	strbuf_free(&k.buf);
}

/* ---- the worker ------------------------------------------------------------------ */

/* A worker for one of sluice's own layouts (the others' registries are not walked). */
static struct worker *worker_for(struct bench *b, const struct layout *l)
{
	struct worker_config wc = {
		.redis = &b->target, .timeout_ms = 120000, .prefix = l->key_prefix, .batch_size = b->batch,
		.layouts = l, .nlayouts = 1,
	};
	struct worker *w = worker_new(&wc);

	if (!w)
		die("worker_new failed");
	return w;
}

static enum worker_job job_of(enum algorithm a)
{
	return algorithm_get(a)->job == ALG_JOB_DRAIN ? WORKER_DRAIN : WORKER_PRUNE;
}

static void step_or_die(struct worker *w, enum worker_job job, int64_t now, struct worker_result *res, int sweep)
{
	int rc = sweep ? worker_sweep(w, job, now, res) : worker_step(w, job, INT64_MAX, now, res);

	if (rc) {
		struct worker_status st;

		worker_status(w, &st);
		die("worker %s: %s (%s)", sweep ? "sweep" : "step", strerror(-rc), st.job[job].last_error);
	}
}

/* ---- statistics ---------------------------------------------------------------- */

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, c = *(const double *)y;

	return (a > c) - (a < c);
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
		m = v[i] < m ? v[i] : m;
	return m;
}

static double maximum(const double *v, int n)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

/* "a, b, c" of v[0..n) with fmt, into buf */
static const char *list(const double *v, int n, const char *fmt, char *buf, size_t cap)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && used < cap; i++) {
		used += (size_t)snprintf(buf + used, cap - used, i ? ", " : "");
		if (used < cap)
			used += (size_t)snprintf(buf + used, cap - used, fmt, v[i]);
	}
	return buf;
}

/* ---- ticks ---------------------------------------------------------------------- */

struct tick_ctx {
	const struct tmpl *due, *far;
	size_t every; /* path i is due when i % every == 0 */
};

static const struct tmpl *tick_tmpl(size_t i, const void *ctx)
{
	const struct tick_ctx *t = ctx;

	return i % t->every == 0 ? t->due : t->far;
}

static const struct tmpl *tick_due_only(size_t i, const void *ctx)
{
	const struct tick_ctx *t = ctx;

	return i % t->every == 0 ? t->due : NULL;
}

/* The entries a due path's job removes at its due time, by how the templates are made. */
#define TICK_WORK_PER_PATH 1

/*
 * The templates of `ticks` for algorithm a, both made at t0 (a client's now
 * may not be ahead of Redis TIME): the due one's job has work at its due
 * time, the far one is due 10^5 s later, by its parameters.
 */
static int tick_templates(enum algorithm a, int64_t t0, struct tmpl *due, struct tmpl *far)
{
	memset(due, 0, sizeof(*due));
	due->alg = a;
	due->ncalls = 1;
	due->calls[0].now = t0;
	*far = *due;
	if (a == ALG_LEAKY_BUCKET) {
		/* 5 entries, capacity 10: at 0.001/s the first leaks 1000 s after t0, at 10^-5/s 10^5 s after */
		due->params[0] = far->params[0] = "10";
		due->params[1] = "0.001", far->params[1] = "0.00001";
		due->calls[0].n = far->calls[0].n = "5";
	} else if (a == ALG_SLIDING_LOG) {
		/* limit 10; the due ones: an entry at t0 - 300 s, which leaves the 600 s window
		 * 300 s after t0 (+ the skew horizon), and one at t0, which stays; the far ones:
		 * one entry at t0 in a 10^5 s window */
		due->params[0] = far->params[0] = "10";
		due->params[1] = "600000", far->params[1] = "100000000";
		due->calls[0] = (struct call){ "1", t0 - 300000 };
		due->calls[1] = (struct call){ "1", t0 };
		due->ncalls = 2;
		far->calls[0].n = "1";
	} else {
		return -EINVAL;
	}
	return 0;
}

struct tick_fig {
	double wall[MAX_ROUNDS], cpu[MAX_ROUNDS];
	uint64_t batches;
};

static void mode_ticks(struct bench *b, const size_t *sizes, int nsizes, size_t due_n, const enum algorithm *algs,
		       int nalgs)
{
	for (int ai = 0; ai < nalgs; ai++) {
		enum algorithm a = algs[ai];
		const char *alg = algorithm_name(a);
		const struct alg_ops *ops = algorithm_get(a);
		struct tmpl due, far;
		struct tick_fig fig[MAX_SIZES] = { 0 };
		struct layout *lays[MAX_SIZES] = { 0 };
		size_t nlays[MAX_SIZES] = { 0 };
		char sha[41], prefix[MAX_SIZES][24];
		int64_t t0;
		int placeholder = 0;

		freeReplyObject(cmdf(b, "FLUSHDB"));
		script_load_id(b, ops->client_script, sha);
		t0 = redis_time_ms(b);
		if (tick_templates(a, t0, &due, &far))
			die("ticks: no templates for %s", alg);
		tmpl_make(b, sha, &due);
		tmpl_make(b, sha, &far);
		if (far.due <= due.due)
			die("ticks: %s: the far template is due at %lld, not after %lld", alg, far.due, due.due);
		printf("== %s: ticks over registered paths, %zu of them due (the rest due %lld s later)\n", alg, due_n,
		       (far.due - due.due) / 1000);
		printf("   state as %s.lua makes it: ", alg);
		for (int i = 0; i < due.ncalls; i++)
			printf("%sn=%s at t0%+lld ms", i ? ", " : "", due.calls[i].n, (long long)(due.calls[i].now - t0));
		printf(" (params %s %s, the far ones %s %s), due at t0 + %lld ms; the tick at that time; batch %zu\n",
		       due.params[0], due.params[1], far.params[0], far.params[1], due.due - t0, b->batch);
		for (int s = 0; s < nsizes; s++) {
			struct tick_ctx tc = { &due, &far, sizes[s] / due_n };
			double secs;

			snprintf(prefix[s], sizeof(prefix[s]), "n%zu:", sizes[s]);
			if (layouts_default(prefix[s], &lays[s], &nlays[s]))
				die("out of memory");
			secs = fill_paths(b, prefix[s], 0, sizes[s], tick_tmpl, &tc);
			check_copy(b, sha, prefix[s], &due, 0);
			check_copy(b, sha, prefix[s], sizes[s] > due_n ? &far : &due, 1);
			check_copy(b, sha, prefix[s], &due, (due_n - 1) * tc.every);
			printf("   filled %zu paths (%zu due) under %s in %.1f s (%.0f paths/s); 3 samples checked against %s.lua\n",
			       sizes[s], due_n, prefix[s], secs, (double)sizes[s] / secs, alg);
			fflush(stdout);
		}
		for (int r = 0; r < b->rounds && !placeholder; r++) {
			for (int s = 0; s < nsizes && !placeholder; s++) {
				const struct layout *l = layouts_find(lays[s], nlays[s], a);
				struct tick_ctx tc = { &due, &far, sizes[s] / due_n };
				struct worker_result res;
				struct worker *w;
				double t, cpu;

				if (r > 0)
					fill_paths(b, prefix[s], 0, sizes[s], tick_due_only, &tc);
				w = worker_for(b, l);
				/* the daemon's first tick: every shard asked once, nothing due yet */
				step_or_die(w, job_of(a), due.due - 1, &res, 0);
				if (res.entries || res.paths)
					die("ticks: %s: the step before the due time did %llu on %llu paths", alg,
					    (unsigned long long)res.entries, (unsigned long long)res.paths);
				cpu = redis_cpu_s(b);
				t = mono_s();
				step_or_die(w, job_of(a), due.due, &res, 0);
				t = mono_s() - t;
				cpu = redis_cpu_s(b) - cpu;
				worker_free(w);
				if (res.paths != due_n)
					die("ticks: %s: the tick visited %llu paths, %zu are due", alg,
					    (unsigned long long)res.paths, due_n);
				if (res.entries == 0 && a != ALG_LEAKY_BUCKET) {
					placeholder = 1;
					break;
				}
				if (res.entries != due_n * TICK_WORK_PER_PATH || res.emptied || res.skipped)
					die("ticks: %s: the tick did %llu entries (%llu emptied, %llu skipped) on %zu due paths, "
					    "expected %zu, 0, 0",
					    alg, (unsigned long long)res.entries, (unsigned long long)res.emptied,
					    (unsigned long long)res.skipped, due_n, due_n * TICK_WORK_PER_PATH);
				fig[s].wall[r] = t;
				fig[s].cpu[r] = cpu;
				fig[s].batches = res.batches;
				printf("   round %d %8zu registered: tick %7.1f ms, Redis CPU %7.1f ms (%.2f us a due path), "
				       "%llu shard calls, %llu %s\n",
				       r + 1, sizes[s], t * 1e3, cpu * 1e3, cpu * 1e6 / (double)due_n,
				       (unsigned long long)res.batches, (unsigned long long)res.entries, ops->action);
				fflush(stdout);
			}
		}
		if (placeholder) {
			printf("RESULT tick %s: not measured: %s_%s_shard.lua %s nothing on %zu due paths "
			       "(a placeholder in this tree?)\n",
			       alg, alg, a == ALG_SLIDING_LOG ? "prune" : "job", ops->action, due_n);
		} else {
			char l1[160];
			double ratio[MAX_ROUNDS];
			int last = nsizes - 1;

			for (int s = 0; s < nsizes; s++)
				printf("RESULT tick %-13s %8zu registered, %zu due: %7.1f ms [%.1f-%.1f], Redis CPU %6.1f ms "
				       "(%.2f us a due path), %llu shard calls\n",
				       alg, sizes[s], due_n, median(fig[s].wall, b->rounds) * 1e3,
				       minimum(fig[s].wall, b->rounds) * 1e3, maximum(fig[s].wall, b->rounds) * 1e3,
				       median(fig[s].cpu, b->rounds) * 1e3,
				       median(fig[s].cpu, b->rounds) * 1e6 / (double)due_n,
				       (unsigned long long)fig[s].batches);
			for (int r = 0; r < b->rounds; r++)
				ratio[r] = fig[last].wall[r] / fig[0].wall[r];
			if (last > 0) {
				double rm = median(fig[last].wall, b->rounds) / median(fig[0].wall, b->rounds);
				double cm = median(fig[last].cpu, b->rounds) / median(fig[0].cpu, b->rounds);

				printf("RESULT tick %-13s %zu vs %zu registered: %.2fx (rounds %s; Redis CPU %.2fx), "
				       "the %zu tick %.1f ms; target <= 1.5x and < 100 ms: %s (0.1: 128x, 3.57 s)\n",
				       alg, sizes[last], sizes[0], rm, list(ratio, b->rounds, "%.2f", l1, sizeof(l1)), cm,
				       sizes[last], median(fig[last].wall, b->rounds) * 1e3,
				       rm <= 1.5 && median(fig[last].wall, b->rounds) < 0.1 ? "met" : "NOT met");
			}
		}
		fflush(stdout);
		tmpl_free(&due);
		tmpl_free(&far);
		for (int s = 0; s < nsizes; s++)
			layouts_free(lays[s], nlays[s]);
		freeReplyObject(cmdf(b, "FLUSHDB"));
	}
}

/* ---- sweep: drain of 100,000 buckets, sweep vs per-bucket calls --------------- */

static const struct tmpl *every_path(size_t i, const void *ctx)
{
	(void)i;
	return ctx;
}

struct job_sum {
	uint64_t done, visited;
	const char *what;
};

/* Fold a shard job's reply {done, removed, visited, skipped, next_due, backlog}. */
static void job_reply(redisReply *r, void *ctx)
{
	struct job_sum *s = ctx;

	if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 || r->element[0]->type != REDIS_REPLY_INTEGER ||
	    r->element[2]->type != REDIS_REPLY_INTEGER)
		die("%s: %s", s->what, r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
	s->done += (uint64_t)r->element[0]->integer;
	s->visited += (uint64_t)r->element[2]->integer;
}

/*
 * The same work as one sweep of shard jobs, one EVALSHA of the shard job per
 * path (limit 1: the shard's first due path), pipelined depth deep.
 */
static double per_path_jobs(struct bench *b, const char *sha, const char *prefix, enum algorithm a, size_t paths,
			    int64_t now, struct job_sum *sum)
{
	struct pkeys k = { 0 };
	char path[64], nows[24];
	double t;

	snprintf(nows, sizeof(nows), "%lld", (long long)now);
	t = mono_s();
	for (size_t i = 0; i < paths; i++) {
		size_t plen = path_of(i, path, sizeof(path));

		pkeys_make(&k, prefix, algorithm_name(a), path, plen);
		{
			const char *argv[6] = { "EVALSHA", sha, "1", k.p[K_REGISTRY], nows, "1" };
			size_t lens[6] = { 7, 40, 1, k.len[K_REGISTRY], strlen(nows), 1 };

			pipe_push(b, 6, argv, lens);
		}
		if (b->queued >= b->depth)
			pipe_flush(b, job_reply, sum);
	}
	pipe_flush(b, job_reply, sum);
	t = mono_s() - t;
	strbuf_free(&k.buf);
	return t;
}

static void zrem_reply(redisReply *r, void *ctx)
{
	if (r->type != REDIS_REPLY_INTEGER)
		die("ZREMRANGEBYSCORE: %s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
	*(uint64_t *)ctx += (uint64_t)r->integer;
}

/* ZREMRANGEBYSCORE <state> -inf <cutoff> per path, pipelined depth deep. */
static double per_path_zrem(struct bench *b, const char *prefix, enum algorithm a, size_t paths, long long cutoff,
			    uint64_t *removed)
{
	struct pkeys k = { 0 };
	char path[64], cut[24];
	double t;

	snprintf(cut, sizeof(cut), "%lld", cutoff);
	*removed = 0;
	t = mono_s();
	for (size_t i = 0; i < paths; i++) {
		size_t plen = path_of(i, path, sizeof(path));

		pkeys_make(&k, prefix, algorithm_name(a), path, plen);
		{
			const char *argv[4] = { "ZREMRANGEBYSCORE", k.p[K_STATE], "-inf", cut };
			size_t lens[4] = { 16, k.len[K_STATE], 4, strlen(cut) };

			pipe_push(b, 4, argv, lens);
		}
		if (b->queued >= b->depth)
			pipe_flush(b, zrem_reply, removed);
	}
	pipe_flush(b, zrem_reply, removed);
	t = mono_s() - t;
	strbuf_free(&k.buf);
	return t;
}

struct pass_fig {
	double wall[MAX_ROUNDS], cpu[MAX_ROUNDS];
};

/*
 * sweep (drain, leaky buckets) or prune (sliding logs): rounds of
 * [the worker's sweep, the baseline] on identical fills of `paths`.
 */
static void mode_sweep(struct bench *b, enum algorithm a, size_t paths)
{
	const struct alg_ops *ops = algorithm_get(a);
	const char *alg = algorithm_name(a), *prefix = a == ALG_LEAKY_BUCKET ? "sw:" : "pr:";
	struct layout *lays;
	size_t nlays;
	struct tmpl t = { 0 };
	struct pass_fig fig[2] = { 0 };
	char sha[41], job_sha[41], l1[160], l2[160];
	uint64_t expect;
	long long cutoff = 0;
	int64_t t0;
	double secs;

	freeReplyObject(cmdf(b, "FLUSHDB"));
	if (layouts_default(prefix, &lays, &nlays))
		die("out of memory");
	script_load_id(b, ops->client_script, sha);
	script_load_id(b, ops->shard_script, job_sha);
	t0 = redis_time_ms(b);
	t.alg = a;
	if (a == ALG_LEAKY_BUCKET) {
		/* 5 entries at t0, capacity 10, rate 0.001/s: one entry due at t0 + 1000 s */
		t.params[0] = "10", t.params[1] = "0.001";
		t.calls[0] = (struct call){ "5", t0 };
		t.ncalls = 1;
		expect = paths;
	} else {
		/* 5 entries at t0 - 300 s, 15 at t0, limit 100 per 600 s: at the due time the 5 go */
		t.params[0] = "100", t.params[1] = "600000";
		t.calls[0] = (struct call){ "5", t0 - 300000 };
		t.calls[1] = (struct call){ "15", t0 };
		t.ncalls = 2;
		expect = 5 * paths;
		cutoff = t0 - 300000;
	}
	tmpl_make(b, sha, &t);
	secs = fill_paths(b, prefix, 0, paths, every_path, &t);
	check_copy(b, sha, prefix, &t, 0);
	check_copy(b, sha, prefix, &t, paths / 2);
	check_copy(b, sha, prefix, &t, paths - 1);
	printf("== %s %s: %zu paths as %s.lua makes them (", alg, a == ALG_LEAKY_BUCKET ? "sweep" : "prune", paths, alg);
	for (int i = 0; i < t.ncalls; i++)
		printf("%sn=%s at t0%+lld ms", i ? ", " : "", t.calls[i].n, (long long)(t.calls[i].now - t0));
	printf("; params %s %s), due at t0 + %lld ms; filled in %.1f s; batch %zu, baseline pipelined %d deep\n",
	       t.params[0], t.params[1], t.due - t0, secs, b->batch, b->depth);
	fflush(stdout);
	for (int r = 0; r < b->rounds; r++) {
		for (int p = 0; p < 2; p++) {
			struct worker_result res = { 0 };
			struct job_sum sum = { 0, 0, "per-path call" };
			uint64_t done, visited;
			double wall, cpu;

			if (r > 0 || p > 0)
				fill_paths(b, prefix, 0, paths, every_path, &t);
			freeReplyObject(cmdf(b, "CONFIG RESETSTAT"));
			if (p == 0) {
				struct worker *w = worker_for(b, layouts_find(lays, nlays, a));

				/* connect and load the scripts outside the timing: nothing is due yet */
				step_or_die(w, job_of(a), t.due - 1, &res, 0);
				freeReplyObject(cmdf(b, "CONFIG RESETSTAT"));
				cpu = redis_cpu_s(b);
				wall = mono_s();
				step_or_die(w, job_of(a), t.due, &res, 1);
				wall = mono_s() - wall;
				cpu = redis_cpu_s(b) - cpu;
				worker_free(w);
				done = res.entries;
				visited = res.paths;
			} else if (a == ALG_LEAKY_BUCKET) {
				cpu = redis_cpu_s(b);
				wall = per_path_jobs(b, job_sha, prefix, a, paths, t.due, &sum);
				cpu = redis_cpu_s(b) - cpu;
				done = sum.done;
				visited = sum.visited;
			} else {
				cpu = redis_cpu_s(b);
				wall = per_path_zrem(b, prefix, a, paths, cutoff, &done);
				cpu = redis_cpu_s(b) - cpu;
				visited = paths;
			}
			if (p == 0 && done == 0 && a != ALG_LEAKY_BUCKET)
				not_ready("%s_prune_shard.lua pruned nothing from %zu due logs (a placeholder in this tree?)",
					  alg, paths);
			if (done != expect || visited != paths)
				die("%s: %s did %llu entries on %llu paths, expected %llu on %zu", alg,
				    p ? "baseline" : "sweep", (unsigned long long)done, (unsigned long long)visited,
				    (unsigned long long)expect, paths);
			fig[p].wall[r] = wall;
			fig[p].cpu[r] = cpu;
			printf("   round %d %-34s %.3f s, %8.0f paths/s, Redis CPU %.3f s (%.2f us a path), %llu %s\n",
			       r + 1,
			       p == 0 ? "sweep (worker, shard jobs)"
			       : a == ALG_LEAKY_BUCKET ? "one EVALSHA a bucket (same job)"
						       : "one ZREMRANGEBYSCORE a log",
			       wall, (double)paths / wall, cpu, cpu * 1e6 / (double)paths, (unsigned long long)done,
			       ops->action);
			stats_print(b);
			fflush(stdout);
		}
	}
	{
		double ws = median(fig[0].wall, b->rounds), wb = median(fig[1].wall, b->rounds);
		double cs = median(fig[0].cpu, b->rounds), cb = median(fig[1].cpu, b->rounds);
		double ratio[MAX_ROUNDS];

		for (int r = 0; r < b->rounds; r++)
			ratio[r] = fig[1].wall[r] / fig[0].wall[r];
		printf("RESULT %s sweep of %zu paths: %.3f s [%.3f-%.3f], Redis CPU %.2f us a path (rounds %s)",
		       alg, paths, ws, minimum(fig[0].wall, b->rounds), maximum(fig[0].wall, b->rounds),
		       cs * 1e6 / (double)paths, list(fig[0].cpu, b->rounds, "%.3f", l1, sizeof(l1)));
		if (a == ALG_LEAKY_BUCKET)
			printf("; target <= 4 us a bucket: %s (0.1: 5.79 us)", cs * 1e6 / (double)paths <= 4 ? "met" : "NOT met");
		printf("\n");
		printf("RESULT %s %-28s %.3f s [%.3f-%.3f], Redis CPU %.2f us a path; the sweep is %.2fx it "
		       "(rounds %s; Redis CPU %.2fx); target >= %s: %s (0.1: %s)\n",
		       alg, a == ALG_LEAKY_BUCKET ? "one EVALSHA a bucket:" : "one ZREMRANGEBYSCORE a log:", wb,
		       minimum(fig[1].wall, b->rounds), maximum(fig[1].wall, b->rounds), cb * 1e6 / (double)paths,
		       wb / ws, list(ratio, b->rounds, "%.2f", l2, sizeof(l2)), cb / cs,
		       a == ALG_LEAKY_BUCKET ? "1.3x" : "0.8x",
		       wb / ws >= (a == ALG_LEAKY_BUCKET ? 1.3 : 0.8) ? "met" : "NOT met",
		       a == ALG_LEAKY_BUCKET ? "1.29x" : "0.42x");
	}
	tmpl_free(&t);
	layouts_free(lays, nlays);
	freeReplyObject(cmdf(b, "FLUSHDB"));
}

/* ---- cluster: one drain sweep on a Redis Cluster, figures per node (issue 10) ------- */

/*
 * The Redis layer's round trips: drain_bench (alone; sluiced is not) is
 * linked with -Wl,--wrap=rbatch_run (Makefile), so every rbatch_run of
 * libsluice, the worker's pipelines among them, comes here first and is
 * counted while rt.on.  One run is one round trip to each node that has
 * commands in it (a second only for a reply that asks for one: MOVED, ASK,
 * TRYAGAIN, NOSCRIPT, which Redis's read counts per node would show).
 */
int __real_rbatch_run(struct rconn *c, struct rbatch *b);
int __wrap_rbatch_run(struct rconn *c, struct rbatch *b);

static struct {
	int on;
	uint64_t runs, cmds;
	size_t max;
} rt;

int __wrap_rbatch_run(struct rconn *c, struct rbatch *b)
{
	if (rt.on) {
		size_t n = rbatch_len(b);

		rt.runs++;
		rt.cmds += n;
		rt.max = n > rt.max ? n : rt.max;
	}
	return __real_rbatch_run(c, b);
}

#define CL_NODES 32
/* the sweep's now, after the buckets' due time (rate 0.001/s, 5 entries at t0: the first leak at
 * t0 + 1000 s, due 10 s later, the skew horizon): at t0 + 2510 s each bucket leaks up to the horizon,
 * t0 + 2500 s, so loses floor(2.5) = 2 entries and keeps 3, with a carry of 0.5 */
#define CL_LATER_MS 1500000
#define CL_DRAINED 2
#define CL_LEFT 3

/* One primary, in rbatch_cmd_at's order: its address, slots, and what the fill put there. */
struct cl_node {
	char addr[96], ranges[96];
	size_t buckets, shards;
};

/* A node's counters (INFO cpu stats commandstats) at one moment. */
struct cl_info {
	double cpu;                /* used_cpu_sys + used_cpu_user, s */
	long long cmds, reads;     /* total_commands_processed, total_reads_processed */
	long long evalsha, zrange; /* calls (commandstats) */
	long long net_in;          /* total_net_input_bytes */
};

static double info_num(const char *s, const char *field)
{
	char want[80];
	const char *p;

	snprintf(want, sizeof(want), "\n%s", field);
	if (!(p = strstr(s, want)))
		return 0; /* a command never called has no commandstats line */
	return strtod(p + strlen(want), NULL);
}

/* INFO cpu stats commandstats of every primary, in one pipeline. */
static void cl_infos(struct bench *b, size_t n, struct cl_info *out)
{
	const char *argv[4] = { "INFO", "cpu", "stats", "commandstats" };
	size_t lens[4] = { 4, 3, 5, 12 };
	int rc;

	rbatch_clear(b->kb);
	for (size_t i = 0; i < n; i++)
		if (rbatch_cmd_at(b->kb, i, 4, argv, lens))
			die("out of memory");
	if ((rc = rbatch_run(b->k, b->kb)))
		die("INFO: %s", rconn_strerror(b->k, rc));
	for (size_t i = 0; i < n; i++) {
		const redisReply *r = rbatch_reply(b->kb, i);
		const char *s;

		if (!r || r->type != REDIS_REPLY_STRING || !strstr(r->str, "used_cpu_user:") ||
		    !strstr(r->str, "total_reads_processed:"))
			die("INFO of primary %zu: %s", i, r && r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
		s = r->str;
		out[i].cpu = info_num(s, "used_cpu_sys:") + info_num(s, "used_cpu_user:");
		out[i].cmds = (long long)info_num(s, "total_commands_processed:");
		out[i].reads = (long long)info_num(s, "total_reads_processed:");
		out[i].net_in = (long long)info_num(s, "total_net_input_bytes:");
		out[i].evalsha = (long long)info_num(s, "cmdstat_evalsha:calls=");
		out[i].zrange = (long long)info_num(s, "cmdstat_zrange:calls=");
	}
	rbatch_clear(b->kb);
}

/* One command on every primary; each reply must not be an error. */
static void cl_each(struct bench *b, size_t n, int argc, const char **argv, const size_t *lens)
{
	int rc;

	rbatch_clear(b->kb);
	for (size_t i = 0; i < n; i++)
		if (rbatch_cmd_at(b->kb, i, argc, argv, lens))
			die("out of memory");
	if ((rc = rbatch_run(b->k, b->kb)))
		die("%s: %s", argv[0], rconn_strerror(b->k, rc));
	for (size_t i = 0; i < n; i++) {
		const redisReply *r = rbatch_reply(b->kb, i);

		if (!r || r->type == REDIS_REPLY_ERROR)
			die("%s on primary %zu: %s", argv[0], i, r ? r->str : "no reply");
	}
	rbatch_clear(b->kb);
}

/*
 * The primaries (rconn_node_info: the order of rbatch_cmd_at) and the node
 * of every slot (CLUSTER SLOTS; a single Redis owns them all).  Returns how
 * many primaries.
 */
static size_t cl_map(struct bench *b, struct cl_node *node, unsigned char *of_slot)
{
	struct rconn_node_info info[CL_NODES];
	const char *argv[2] = { "CLUSTER", "SLOTS" };
	size_t lens[2] = { 7, 5 }, n, covered = 0;
	redisReply *r;
	int rc;

	if ((rc = rconn_ensure(b->k)))
		die("connect %s: %s", b->url, rconn_strerror(b->k, rc));
	n = rconn_node_info(b->k, info, CL_NODES);
	if (n == 0 || n < rconn_primaries(b->k))
		die("%zu primaries: drain_bench cluster takes 1 to %d", rconn_primaries(b->k), CL_NODES);
	for (size_t i = 0; i < n; i++) {
		memset(&node[i], 0, sizeof(node[i]));
		snprintf(node[i].addr, sizeof(node[i].addr), "%.95s", info[i].addr);
		snprintf(node[i].ranges, sizeof(node[i].ranges), "%.95s", info[i].ranges);
	}
	if (!rconn_is_cluster(b->k)) {
		memset(of_slot, 0, SHARD_SLOTS);
		return n;
	}
	memset(of_slot, 0xFF, SHARD_SLOTS);
	r = cmdv_keyless(b, 2, argv, lens);
	if (r->type != REDIS_REPLY_ARRAY)
		die("CLUSTER SLOTS: %s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
	for (size_t e = 0; e < r->elements; e++) {
		const redisReply *x = r->element[e], *p;
		char addr[96];
		size_t i;

		if (x->type != REDIS_REPLY_ARRAY || x->elements < 3 || (p = x->element[2])->type != REDIS_REPLY_ARRAY ||
		    p->elements < 2 || p->element[0]->type != REDIS_REPLY_STRING)
			die("CLUSTER SLOTS: unexpected entry");
		/* a node that knows no address of its own (a one-node cluster met by none) names "" */
		snprintf(addr, sizeof(addr), "%s:%lld", p->element[0]->str, p->element[1]->integer);
		for (i = 0; i < n; i++) {
			const char *colon = strrchr(node[i].addr, ':');

			if (p->element[0]->len ? !strcmp(node[i].addr, addr) : colon && !strcmp(colon, addr))
				break;
		}
		if (i == n)
			die("CLUSTER SLOTS names %s, which the Redis layer does not know as a primary", addr);
		for (long long s = x->element[0]->integer; s <= x->element[1]->integer && s < SHARD_SLOTS; s++, covered++)
			of_slot[s] = (unsigned char)i;
	}
	freeReplyObject(r);
	if (covered != SHARD_SLOTS)
		die("CLUSTER SLOTS covers %zu slots of %d", covered, SHARD_SLOTS);
	return n;
}

/* Every bucket of the fill holds `want` entries (ZCARD of its state). */
struct zcard_check {
	long long want;
	size_t seen, bad;
	long long first_bad;
};

static void zcard_reply(redisReply *r, void *ctx)
{
	struct zcard_check *z = ctx;

	if (r->type != REDIS_REPLY_INTEGER)
		die("ZCARD: %s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
	if (r->integer != z->want && !z->bad++)
		z->first_bad = (long long)z->seen;
	z->seen++;
}

static void zcard_all(struct bench *b, const char *prefix, size_t paths, long long want)
{
	struct zcard_check z = { want, 0, 0, -1 };
	struct pkeys k = { 0 };
	char path[64];

	for (size_t i = 0; i < paths; i++) {
		size_t plen = path_of(i, path, sizeof(path));

		pkeys_make(&k, prefix, "leaky_bucket", path, plen);
		{
			const char *argv[2] = { "ZCARD", k.p[K_STATE] };
			size_t lens[2] = { 5, k.len[K_STATE] };

			pipe_push(b, 2, argv, lens);
		}
		if (b->queued >= FILL_PIPELINE)
			pipe_flush(b, zcard_reply, &z);
	}
	pipe_flush(b, zcard_reply, &z);
	strbuf_free(&k.buf);
	if (z.bad)
		die("cluster: %zu of %zu buckets do not hold %lld entries after the sweep (the first: /bench/%lld)", z.bad,
		    paths, want, z.first_bad);
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * cluster: `paths` leaky buckets as leaky_bucket.lua makes them (5 entries
 * at t0, capacity 10, rate 0.001/s), spread over every shard and so over
 * every primary; one full drain sweep (worker_sweep) at t0 + 2510 s, when
 * each loses exactly 2 entries (it leaks up to now less the 10 s horizon).  Per round: wall time, buckets and entries
 * a second, the worker's thread CPU, the Redis layer's round trips and
 * commands in each; per primary: its buckets, Redis CPU (INFO cpu), the
 * commands it ran and the reads it took them in (INFO stats), its shard
 * calls (commandstats).  Checked: the worker's counts, and every bucket's
 * ZCARD after the sweep.
 */
static void mode_cluster(struct bench *b, size_t paths)
{
	const char *prefix = "cl:";
	const char *flush[1] = { "FLUSHDB" };
	size_t flushl[1] = { 7 };
	struct layout *lays;
	size_t nlays, np, shard_n[SHARD_COUNT] = { 0 };
	struct cl_node node[CL_NODES];
	struct cl_info i0[CL_NODES], i1[CL_NODES];
	unsigned char of_slot[SHARD_SLOTS];
	struct tmpl t = { 0 };
	char sha[41], path[64];
	int64_t t0, at;
	double secs, rtt;

	np = cl_map(b, node, of_slot);
	cl_each(b, np, 1, flush, flushl);
	if (layouts_default(prefix, &lays, &nlays))
		die("out of memory");
	script_load_id(b, SCRIPT_LEAKY_BUCKET, sha);
	t0 = redis_time_ms(b);
	t.alg = ALG_LEAKY_BUCKET;
	t.params[0] = "10", t.params[1] = "0.001";
	t.calls[0] = (struct call){ "5", t0 };
	t.ncalls = 1;
	tmpl_make(b, sha, &t);
	secs = fill_paths(b, prefix, 0, paths, every_path, &t);
	check_copy(b, sha, prefix, &t, 0);
	check_copy(b, sha, prefix, &t, paths / 2);
	check_copy(b, sha, prefix, &t, paths - 1);
	at = t.due + CL_LATER_MS;
	/* where the buckets are: shard k's keys are in the slot of "{k}" */
	for (size_t i = 0; i < paths; i++)
		shard_n[shard_of(path, path_of(i, path, sizeof(path)))]++;
	for (unsigned s = 0; s < SHARD_COUNT; s++) {
		int len = snprintf(path, sizeof(path), "{%u}", s);
		struct cl_node *nd = &node[of_slot[shard_keyslot(path, (size_t)len)]];

		nd->shards++;
		nd->buckets += shard_n[s];
	}
	/* a round trip's fixed cost through the Redis layer: 200 PINGs, one at a time */
	{
		const char *argv[1] = { "PING" };
		size_t lens[1] = { 4 };
		double t1 = mono_s();

		for (int i = 0; i < 200; i++)
			freeReplyObject(cmdv(b, 1, argv, lens));
		rtt = (mono_s() - t1) / 200;
	}
	printf("== leaky_bucket drain sweep on %s of %zu primar%s: %zu buckets as leaky_bucket.lua makes them "
	       "(n=5 at t0; params %s %s), due at t0 + %lld ms, swept at t0 + %lld ms (%d entries each); filled in %.1f s, "
	       "3 samples checked against leaky_bucket.lua; batch %zu; a PING round trip %.0f us\n",
	       rconn_is_cluster(b->k) ? "a Redis Cluster" : "a single Redis", np, np == 1 ? "y" : "ies", paths,
	       t.params[0], t.params[1], (long long)(t.due - t0), (long long)(at - t0), CL_DRAINED, secs, b->batch, rtt * 1e6);
	for (size_t i = 0; i < np; i++)
		printf("   primary %zu %s, slots %s: %zu buckets in %zu shards\n", i, node[i].addr, node[i].ranges,
		       node[i].buckets, node[i].shards);
	printf("SETUP primaries=%zu cluster=%d paths=%zu batch=%zu rtt_us=%.1f fill_s=%.2f\n", np, rconn_is_cluster(b->k),
	       paths, b->batch, rtt * 1e6, secs);
	fflush(stdout);
	for (int r = 0; r < b->rounds; r++) {
		struct worker_result res = { 0 };
		struct worker *w;
		double wall, cpu;

		if (r > 0)
			fill_paths(b, prefix, 0, paths, every_path, &t);
		w = worker_for(b, layouts_find(lays, nlays, ALG_LEAKY_BUCKET));
		/* connect, load the scripts, learn every shard's head outside the timing: nothing is due yet */
		step_or_die(w, WORKER_DRAIN, t.due - 1, &res, 0);
		if (res.entries)
			die("cluster: the step before the due time drained %llu entries", (unsigned long long)res.entries);
		cl_infos(b, np, i0);
		memset(&rt, 0, sizeof(rt));
		rt.on = 1;
		cpu = thread_cpu_s();
		wall = mono_s();
		step_or_die(w, WORKER_DRAIN, at, &res, 1);
		wall = mono_s() - wall;
		cpu = thread_cpu_s() - cpu;
		rt.on = 0;
		cl_infos(b, np, i1);
		worker_free(w);
		if (res.entries != CL_DRAINED * paths || res.paths != paths || res.emptied || res.skipped || res.failed ||
		    !res.sweep_done)
			die("cluster: the sweep drained %llu entries from %llu buckets (%llu emptied, %llu skipped, %llu failed, "
			    "done %d), expected %llu from %zu, 0, 0, 0, 1",
			    (unsigned long long)res.entries, (unsigned long long)res.paths, (unsigned long long)res.emptied,
			    (unsigned long long)res.skipped, (unsigned long long)res.failed, res.sweep_done,
			    (unsigned long long)CL_DRAINED * paths, paths);
		zcard_all(b, prefix, paths, CL_LEFT);
		printf("   round %d: sweep %.3f s, %.0f buckets/s, %.0f entries/s; the worker's thread %.3f s CPU "
		       "(%.2f us a bucket, %.0f %% of the wall); %llu shard calls in %llu round trips of %.1f commands "
		       "(at most %zu); every bucket holds %d entries after it\n",
		       r + 1, wall, (double)paths / wall, (double)res.entries / wall, cpu, cpu * 1e6 / (double)paths,
		       100 * cpu / wall, (unsigned long long)res.batches, (unsigned long long)rt.runs,
		       rt.runs ? (double)rt.cmds / (double)rt.runs : 0.0, rt.max, CL_LEFT);
		printf("FIG primaries=%zu round=%d wall=%.6f thread_cpu=%.6f buckets=%llu entries=%llu batches=%llu "
		       "polls=%llu runs=%llu cmds=%llu max=%zu\n",
		       np, r + 1, wall, cpu, (unsigned long long)res.paths, (unsigned long long)res.entries,
		       (unsigned long long)res.batches, (unsigned long long)res.polls, (unsigned long long)rt.runs,
		       (unsigned long long)rt.cmds, rt.max);
		for (size_t i = 0; i < np; i++) {
			/* less the INFO that opened the interval (a command) and the one that closed it (a read);
			 * total_commands_processed counts the commands scripts call too */
			long long cmds = i1[i].cmds - i0[i].cmds - 1, reads = i1[i].reads - i0[i].reads - 1;
			long long calls = i1[i].evalsha - i0[i].evalsha;
			double c = i1[i].cpu - i0[i].cpu;

			printf("      primary %zu %s: Redis CPU %.3f s (%.2f us a bucket, busy %.0f %% of the sweep); "
			       "%lld shard calls in %lld reads: %.2f a read, %.0f buckets a read\n",
			       i, node[i].addr, c, node[i].buckets ? c * 1e6 / (double)node[i].buckets : 0.0, 100 * c / wall,
			       calls, reads, reads > 0 ? (double)calls / (double)reads : 0.0,
			       reads > 0 ? (double)node[i].buckets / (double)reads : 0.0);
			printf("NODE primaries=%zu round=%d node=%zu cpu=%.6f cmds=%lld reads=%lld evalsha=%lld zrange=%lld "
			       "net_in=%lld buckets=%zu shards=%zu\n",
			       np, r + 1, i, c, cmds, reads, calls, i1[i].zrange - i0[i].zrange, i1[i].net_in - i0[i].net_in,
			       node[i].buckets, node[i].shards);
		}
		fflush(stdout);
	}
	/* what the nodes spend with nothing to do (cron, the cluster bus), on the same data */
	cl_infos(b, np, i0);
	{
		struct timespec ts = { 1, 0 };

		nanosleep(&ts, NULL);
	}
	cl_infos(b, np, i1);
	printf("   idle, after the rounds, Redis CPU in a second:");
	for (size_t i = 0; i < np; i++) {
		printf("%s primary %zu %.1f ms", i ? "," : "", i, (i1[i].cpu - i0[i].cpu) * 1e3);
	}
	printf("\n");
	for (size_t i = 0; i < np; i++)
		printf("IDLE node=%zu cpu_ms=%.2f\n", i, (i1[i].cpu - i0[i].cpu) * 1e3);
	tmpl_free(&t);
	layouts_free(lays, nlays);
	cl_each(b, np, 1, flush, flushl);
}

/* ---- client: Redis time per call of the client scripts ------------------------ */

enum { V_SCRIPT, V_SEED, V_FLOOR };

struct variant {
	const char *label;
	int kind;
	enum algorithm alg;
	const char *params[3];
	char sha[41];
	double hot[MAX_ROUNDS], fresh[MAX_ROUNDS];
	double hot_cpu[MAX_ROUNDS], fresh_cpu[MAX_ROUNDS]; /* Redis CPU a call (INFO cpu), us */
	int ready;
	char why[200];
};

/* Admitted: {1, ...} for sluice's scripts and the floor, "1" for the seed's. */
static void client_reply(redisReply *r, void *ctx)
{
	struct variant *v = ctx;

	if (!v->ready)
		return;
	if (v->kind == V_SEED) {
		if (r->type != REDIS_REPLY_STRING || strcmp(r->str, "1"))
			die("seed 000 script: %s", r->type == REDIS_REPLY_ERROR ? r->str : "not admitted");
		return;
	}
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 && r->element[0]->type == REDIS_REPLY_INTEGER &&
	    r->element[0]->integer == 1)
		return;
	if (r->type == REDIS_REPLY_ERROR && v->kind == V_SCRIPT) {
		v->ready = 0;
		snprintf(v->why, sizeof(v->why), "%s", r->str);
		return;
	}
	die("%s: %s", v->label, r->type == REDIS_REPLY_ERROR ? r->str : "not admitted, or not {allowed, ...}");
}

/* `calls` calls of v, on one path (fresh = 0) or on a new path each (fresh = 1); usec_per_call. */
static double client_run(struct bench *b, struct variant *v, size_t calls, int fresh, int round, double *cpu_us)
{
	static const char *const no_params[3] = { "", "", "" };
	struct pkeys k = { 0 };
	char path[64], nows[24], key[80];
	long long n;
	double us, cpu;

	freeReplyObject(cmdf(b, "FLUSHDB"));
	freeReplyObject(cmdf(b, "CONFIG RESETSTAT"));
	cpu = redis_cpu_s(b);
	for (size_t i = 0; i < calls && v->ready; i++) {
		size_t plen = fresh ? (size_t)snprintf(path, sizeof(path), "/c%d/%zu", round, i)
				    : (size_t)snprintf(path, sizeof(path), "/api/orders");
		int64_t now = wall_ms();

		if (v->kind == V_SCRIPT) {
			client_push(b, v->sha, "sluice:", v->alg, &k, path, plen, "1", now, v->params);
		} else if (v->kind == V_SEED) {
			const char *argv[7] = { "EVALSHA", v->sha, "1", key, nows, "60000", "1000000000" };
			size_t lens[7] = { 7, 40, 1, 0, 0, 5, 10 };

			lens[3] = (size_t)snprintf(key, sizeof(key), "limit:%.*s", (int)plen, path);
			lens[4] = (size_t)snprintf(nows, sizeof(nows), "%lld", (long long)now);
			pipe_push(b, 7, argv, lens);
		} else {
			/* the floor: the contract's KEYS and ARGV of a leaky bucket call */
			client_push(b, v->sha, "sluice:", ALG_LEAKY_BUCKET, &k, path, plen, "1", now, no_params);
		}
		if (b->queued >= 16)
			pipe_flush(b, client_reply, v);
	}
	pipe_flush(b, client_reply, v);
	*cpu_us = (redis_cpu_s(b) - cpu) * 1e6 / (double)calls;
	strbuf_free(&k.buf);
	us = cmd_usec_per_call(b, "evalsha", &n);
	if (v->ready && (size_t)n != calls)
		die("%s: commandstats counts %lld evalsha, %zu were sent", v->label, n, calls);
	return us;
}

static void mode_client(struct bench *b, size_t calls)
{
	struct variant v[8] = {
		{ .label = "seed 000 sliding log (the baseline)", .kind = V_SEED },
		{ .label = "empty script, same KEYS and ARGV", .kind = V_FLOOR },
		{ .label = "leaky_bucket", .alg = ALG_LEAKY_BUCKET, .params = { "1000000000", "1" } },
		{ .label = "sliding_log", .alg = ALG_SLIDING_LOG, .params = { "1000000000", "60000" } },
		{ .label = "sliding_counter", .alg = ALG_SLIDING_COUNTER, .params = { "1000000000", "60000", "60" } },
		{ .label = "fixed_window", .alg = ALG_FIXED_WINDOW, .params = { "1000000000", "60000" } },
		{ .label = "token_bucket", .alg = ALG_TOKEN_BUCKET, .params = { "1000000000", "1" } },
	};
	static const char *const was[8] = { "", "", "2.9x", "2.7x", "1.9x", "1.6x", "1.9x" };
	int nv = 7;

	for (int i = 0; i < nv; i++)
		v[i].ready = 1;

	printf("== client scripts: Redis time per call (INFO commandstats, usec_per_call of evalsha; and Redis CPU a\n"
	       "   call, INFO cpu over the run, protocol included, which a busy machine's preemption does not inflate), %zu calls a run,\n"
	       "   pipelined 16 deep, explicit now = the client's clock; limits 10^9 so every call is admitted;\n"
	       "   'hot' = one path whose state exists, 'new path' = a new path every call\n",
	       calls);
	for (int i = 0; i < nv; i++) {
		if (v[i].kind == V_SEED)
			script_load(b, SEED000_LUA, sizeof(SEED000_LUA) - 1, v[i].sha);
		else if (v[i].kind == V_FLOOR)
			script_load(b, FLOOR_LUA, sizeof(FLOOR_LUA) - 1, v[i].sha);
		else
			script_load_id(b, algorithm_get(v[i].alg)->client_script, v[i].sha);
	}
	for (int r = 0; r < b->rounds; r++) {
		for (int i = 0; i < nv; i++) {
			if (!v[i].ready)
				continue;
			v[i].hot[r] = client_run(b, &v[i], calls, 0, r, &v[i].hot_cpu[r]);
			if (v[i].ready)
				v[i].fresh[r] = client_run(b, &v[i], calls, 1, r, &v[i].fresh_cpu[r]);
			if (v[i].ready)
				printf("   round %d %-36s hot %6.2f us (Redis CPU %6.2f), new path %6.2f us (%6.2f)\n", r + 1,
				       v[i].label, v[i].hot[r], v[i].hot_cpu[r], v[i].fresh[r], v[i].fresh_cpu[r]);
			else
				printf("   round %d %-36s not measured: %s\n", r + 1, v[i].label, v[i].why);
			fflush(stdout);
		}
	}
	for (int i = 0; i < nv; i++) {
		double ratio[MAX_ROUNDS], cratio[MAX_ROUNDS], rm;
		char l1[160];

		if (!v[i].ready) {
			printf("RESULT client %-16s not measured: not on the layout-2 calling contract in this tree (%s)\n",
			       v[i].kind == V_SCRIPT ? algorithm_name(v[i].alg) : v[i].label, v[i].why);
			continue;
		}
		for (int r = 0; r < b->rounds; r++) {
			ratio[r] = v[i].hot[r] / v[0].hot[r];
			cratio[r] = v[i].hot_cpu[r] / v[0].hot_cpu[r];
		}
		rm = median(ratio, b->rounds);
		printf("RESULT client %-16s hot %6.2f us a call [%.2f-%.2f] (Redis CPU %.2f us, %.2fx), new path %6.2f us",
		       v[i].kind == V_SCRIPT ? algorithm_name(v[i].alg) : v[i].kind == V_SEED ? "seed000" : "empty",
		       median(v[i].hot, b->rounds), minimum(v[i].hot, b->rounds), maximum(v[i].hot, b->rounds),
		       median(v[i].hot_cpu, b->rounds), median(cratio, b->rounds), median(v[i].fresh, b->rounds));
		if (v[i].kind == V_SEED)
			printf(" (the baseline)\n");
		else if (v[i].kind == V_FLOOR)
			printf("; %.2fx the seed's (rounds %s): the cost of a call itself\n", rm,
			       list(ratio, b->rounds, "%.2f", l1, sizeof(l1)));
		else
			printf("; %.2fx the seed's (rounds %s); target <= 2x: %s (0.1: %s)\n", rm,
			       list(ratio, b->rounds, "%.2f", l1, sizeof(l1)), rm <= 2 ? "met" : "NOT met", was[i]);
	}
	freeReplyObject(cmdf(b, "FLUSHDB"));
}

/* ---- fill (for the daemon runs), keys ------------------------------------------ */

static void mode_fill(struct bench *b, const char *prefix, size_t paths, size_t due_n, long long due_in_ms)
{
	struct tmpl t = { 0 }, far;
	struct tick_ctx tc = { &t, &far, 1 };
	char sha[41];
	int64_t now;
	double secs;

	freeReplyObject(cmdf(b, "FLUSHDB"));
	script_load_id(b, SCRIPT_LEAKY_BUCKET, sha);
	now = redis_time_ms(b);
	/* 5 entries, rate 0.001/s: the first leaks 1,000,000 ms after the call's now; the
	 * others (10^-5/s) 10^8 ms after */
	t.alg = ALG_LEAKY_BUCKET;
	t.params[0] = "10", t.params[1] = "0.001";
	t.calls[0] = (struct call){ "5", now + due_in_ms - 1000000 };
	t.ncalls = 1;
	far = t;
	far.params[1] = "0.00001";
	tmpl_make(b, sha, &t);
	if (due_n < paths) {
		tmpl_make(b, sha, &far);
		tc.every = paths / due_n;
	}
	secs = fill_paths(b, prefix, 0, paths, tick_tmpl, &tc);
	check_copy(b, sha, prefix, &t, 0);
	check_copy(b, sha, prefix, tc.every > 1 ? &far : &t, paths - 1);
	printf("filled %zu leaky buckets under %s (5 entries, capacity 10), %zu due at Redis now %+lld ms (rate 0.001/s), "
	       "%s in %.1f s\n",
	       paths, prefix, paths / tc.every, t.due - now,
	       tc.every > 1 ? "the others 10^5 s later (rate 10^-5/s)" : "none other", secs);
	tmpl_free(&t);
	if (tc.every > 1)
		tmpl_free(&far);
}

static void mode_keys(const char *alg, const char *path, const char *prefix)
{
	enum algorithm a;
	struct pkeys k = { 0 };

	if (algorithm_parse(alg, &a)) {
		fprintf(stderr, "drain_bench: unknown algorithm \"%s\"\n", alg);
		exit(2);
	}
	pkeys_make(&k, prefix, algorithm_name(a), path, strlen(path));
	for (int i = 0; i < K__N; i++)
		printf("%.*s\n", (int)k.len[i], k.p[i]);
	strbuf_free(&k.buf);
}

/* ---- driver ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fputs("usage: drain_bench ticks  --redis URL [--sizes N1,N2,...] [--due N] [--algs A1,A2]\n"
	      "                          [--repeat R] [--batch-size B]\n"
	      "       drain_bench sweep  --redis URL [--paths N] [--repeat R] [--batch-size B] [--depth D]\n"
	      "       drain_bench prune  --redis URL [--paths N] [--repeat R] [--batch-size B] [--depth D]\n"
	      "       drain_bench client --redis URL [--calls N] [--repeat R]\n"
	      "       drain_bench fill   --redis URL --paths N [--due N] [--prefix P] [--due-in-ms MS]\n"
	      "       drain_bench cluster --redis URL[,HOST:PORT...] [--paths N] [--repeat R] [--batch-size B]\n"
	      "       drain_bench keys   ALGORITHM PATH [--prefix P]\n",
	      f);
}

static long long num_arg(const char *s, const char *flag, long long min, long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < min || v > max) {
		fprintf(stderr, "drain_bench: %s must be an integer %lld..%lld (got \"%s\")\n", flag, min, max, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct bench b = { .batch = 500, .depth = 128, .rounds = 3 };
	struct sl_error err = { 0 };
	const char *mode, *sizes_s = "10000,100000,1000000", *algs_s = "leaky_bucket,sliding_log";
	const char *prefix = "sluice:";
	size_t paths = 100000, due_n = 10000, calls = 20000, sizes[MAX_SIZES];
	enum algorithm algs[ALG__COUNT];
	long long due_in_ms = 0;
	int nsizes = 0, nalgs = 0, first = 2, due_set = 0;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	mode = argv[1];
	if (!strcmp(mode, "keys")) {
		if (argc != 4 && !(argc == 6 && !strcmp(argv[4], "--prefix"))) {
			usage(stderr);
			return 2;
		}
		mode_keys(argv[2], argv[3], argc == 6 ? argv[5] : prefix);
		return 0;
	}
	if (strcmp(mode, "ticks") && strcmp(mode, "sweep") && strcmp(mode, "prune") && strcmp(mode, "client") &&
	    strcmp(mode, "fill") && strcmp(mode, "cluster")) {
		usage(stderr);
		return 2;
	}
	for (int i = first; i < argc; i++) {
		const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			usage(stderr);
			return 2;
		}
		i++;
		if (!strcmp(f, "--redis"))
			b.url = v;
		else if (!strcmp(f, "--paths"))
			paths = (size_t)num_arg(v, f, 3, 100000000);
		else if (!strcmp(f, "--repeat"))
			b.rounds = (int)num_arg(v, f, 1, MAX_ROUNDS);
		else if (!strcmp(f, "--batch-size"))
			b.batch = (size_t)num_arg(v, f, 1, 100000);
		else if (!strcmp(f, "--depth"))
			b.depth = (int)num_arg(v, f, 1, 100000);
		else if (!strcmp(f, "--due"))
			due_n = (size_t)num_arg(v, f, 3, 100000000), due_set = 1;
		else if (!strcmp(f, "--calls"))
			calls = (size_t)num_arg(v, f, 1, 100000000);
		else if (!strcmp(f, "--due-in-ms"))
			due_in_ms = num_arg(v, f, -1000000, 1000000000);
		else if (!strcmp(f, "--prefix"))
			prefix = v;
		else if (!strcmp(f, "--sizes"))
			sizes_s = v;
		else if (!strcmp(f, "--algs"))
			algs_s = v;
		else {
			usage(stderr);
			return 2;
		}
	}
	{
		char *dup = strdup(sizes_s), *save = NULL;

		for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (nsizes >= MAX_SIZES) {
				fprintf(stderr, "drain_bench: at most %d --sizes\n", MAX_SIZES);
				return 2;
			}
			sizes[nsizes] = (size_t)num_arg(t, "--sizes", 1, 100000000);
			if (!strcmp(mode, "ticks") && sizes[nsizes] % due_n) {
				fprintf(stderr, "drain_bench: each of --sizes must be a multiple of --due (%zu)\n", due_n);
				return 2;
			}
			nsizes++;
		}
		free(dup);
		dup = strdup(algs_s);
		for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (nalgs >= ALG__COUNT || algorithm_parse(t, &algs[nalgs]) ||
			    (algs[nalgs] != ALG_LEAKY_BUCKET && algs[nalgs] != ALG_SLIDING_LOG)) {
				fprintf(stderr, "drain_bench: --algs takes leaky_bucket and sliding_log (got \"%s\")\n", t);
				return 2;
			}
			nalgs++;
		}
		free(dup);
	}
	if (!strcmp(mode, "fill") && due_set && paths % due_n) {
		fprintf(stderr, "drain_bench: --paths must be a multiple of --due\n");
		return 2;
	}
	if (!b.url || !nsizes) {
		usage(stderr);
		return 2;
	}
	if (redis_url_parse(b.url, &b.target, &err)) {
		fprintf(stderr, "drain_bench: %s: %s\n", err.field, err.message);
		return 2;
	}
	if (!strcmp(mode, "cluster")) {
		/* the one Redis layer of libsluice, which routes by slot; no plain connection */
		if (!(b.k = rconn_new(&b.target, 120000)) || !(b.kb = rbatch_new()))
			die("out of memory");
		mode_cluster(&b, paths);
		rbatch_free(b.kb);
		rconn_free(b.k);
		redis_target_clear(&b.target);
		return 0;
	}
	{
		struct timeval tv = { 120, 0 };

		b.c = b.target.socket ? redisConnectUnixWithTimeout(b.target.socket, tv)
				      : redisConnectWithTimeout(b.target.host ? b.target.host : "127.0.0.1", b.target.port, tv);
		if (!b.c || b.c->err)
			die("connect %s: %s", b.url, b.c ? b.c->errstr : "out of memory");
		redisSetTimeout(b.c, tv);
		if (b.target.db)
			freeReplyObject(cmdf(&b, "SELECT %d", b.target.db));
		check_ctx(&b, "connect");
	}

	if (!strcmp(mode, "ticks"))
		mode_ticks(&b, sizes, nsizes, due_n, algs, nalgs);
	else if (!strcmp(mode, "sweep"))
		mode_sweep(&b, ALG_LEAKY_BUCKET, paths);
	else if (!strcmp(mode, "prune"))
		mode_sweep(&b, ALG_SLIDING_LOG, paths);
	else if (!strcmp(mode, "client"))
		mode_client(&b, calls);
	else
		mode_fill(&b, prefix, paths, due_set ? due_n : paths, due_in_ms);
	redisFree(b.c);
	redis_target_clear(&b.target);
	return 0;
}

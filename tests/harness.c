#include "tests/harness.h"

#include "tests/harness_mode.h"

#include "core/shard.h"

#include "core/layout.h"
#include "core/log.h"
#include "core/scripts.h"

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int test_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd, port = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

long long test_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void test_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

long long test_poll(int (*cond)(void *), void *arg, long timeout_ms, long every_ms)
{
	long long start = test_now_ms();

	for (;;) {
		long long waited = test_now_ms() - start;

		if (cond(arg))
			return waited;
		if (waited >= timeout_ms)
			return -1;
		test_sleep_ms(every_ms);
	}
}

void test_wait_step(long long start_ms, long timeout_ms, long every_ms, const char *file, int line, const char *fmt,
		    ...)
{
	long long waited = test_now_ms() - start_ms;
	char msg[512];
	va_list ap;

	if (waited < timeout_ms) {
		test_sleep_ms(every_ms);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ck_abort_msg("%s:%d: %s (waited %lld ms)", file, line, msg, waited);
}

static int ping(int port)
{
	struct timeval tv = { 0, 200000 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
	redisReply *r;
	int ok = 0;

	if (!c)
		return 0;
	if (!c->err) {
		r = redisCommand(c, "PING");
		ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
		freeReplyObject(r);
	}
	redisFree(c);
	return ok;
}

/* test_poll condition: the server answers PING, or it died (then r->pid is 0). */
static int answers_or_died(void *arg)
{
	struct test_redis *r = arg;

	if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
		r->pid = 0;
		return 1;
	}
	return ping(r->port);
}

/* test_poll condition: CLUSTER INFO of the server at port *arg says cluster_state:ok. */
static int cluster_ok(void *arg)
{
	struct timeval tv = { 0, 200000 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", *(int *)arg, tv);
	redisReply *r;
	int ok = 0;

	if (!c)
		return 0;
	if (!c->err) {
		r = redisCommand(c, "CLUSTER INFO");
		ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") != NULL;
		freeReplyObject(r);
	}
	redisFree(c);
	return ok;
}

/* A cluster node that answers: give it every slot and wait (5 s) until its cluster is up.  0 or -1. */
static int own_all_slots(const struct test_redis *r)
{
	struct timeval tv = { 1, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
	redisReply *rep = c && !c->err ? redisCommand(c, "CLUSTER ADDSLOTSRANGE 0 16383") : NULL;
	int ok = rep && rep->type == REDIS_REPLY_STATUS;
	int port = r->port;

	if (!ok)
		fprintf(stderr, "harness: CLUSTER ADDSLOTSRANGE 0 16383: %s\n",
			rep && rep->type == REDIS_REPLY_ERROR ? rep->str : c && c->err ? c->errstr : "no reply");
	freeReplyObject(rep);
	if (c)
		redisFree(c);
	if (ok && test_poll(cluster_ok, &port, 5000, 10) < 0) {
		fprintf(stderr, "harness: cluster_state not ok within 5 s (see %s/redis.log)\n", r->dir);
		ok = 0;
	}
	return ok ? 0 : -1;
}

/* test_poll condition: the server's process is reaped (then r->pid is 0). */
static int reaped(void *arg)
{
	struct test_redis *r = arg;

	if (waitpid(r->pid, NULL, WNOHANG) != r->pid)
		return 0;
	r->pid = 0;
	return 1;
}

int test_redis_start(struct test_redis *r)
{
	return test_redis_start_with(r, NULL);
}

int test_redis_start_with(struct test_redis *r, const struct test_redis_opts *o)
{
	char portstr[16], busstr[16], timeoutstr[16], nodes[sizeof(r->dir) + 16];
	pid_t parent = getpid();

	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "/tmp/sluice-test-XXXXXX");
	if (!mkdtemp(r->dir)) {
		perror("mkdtemp");
		return -1;
	}
	for (int attempt = 0; attempt < 5; attempt++) {
		int bus = o && o->cluster ? test_free_port() : 0;
		const char *argv[40];
		int argc = 0;

		r->port = test_free_port();
		if (r->port <= 0 || bus < 0 || bus == r->port)
			continue;
		snprintf(portstr, sizeof(portstr), "%d", r->port);
		snprintf(busstr, sizeof(busstr), "%d", bus);
		snprintf(timeoutstr, sizeof(timeoutstr), "%d", o ? o->node_timeout_ms : 0);
		snprintf(nodes, sizeof(nodes), "%s/nodes.conf", r->dir);
		{
			const char *base[] = {
				"redis-server", "--port", portstr, "--bind", "127.0.0.1", "--save", "",
				"--appendonly", "no", "--dir", r->dir, "--daemonize", "no",
				"--loglevel", "warning", "--logfile", "redis.log",
			};

			for (int i = 0; i < TEST_N(base); i++)
				argv[argc++] = base[i];
		}
		if (bus) {
			/* the bus on a port of its own, not port + 10000, which may be taken or above 65535 */
			const char *cl[] = {
				"--cluster-enabled", "yes", "--cluster-config-file", nodes, "--cluster-port", busstr,
				"--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1",
			};

			for (int i = 0; i < TEST_N(cl); i++)
				argv[argc++] = cl[i];
			if (o->node_timeout_ms > 0) {
				argv[argc++] = "--cluster-node-timeout";
				argv[argc++] = timeoutstr;
			}
		}
		argv[argc] = NULL;
		r->pid = fork();
		if (r->pid < 0) {
			perror("fork");
			return -1;
		}
		if (r->pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(1);
			execvp("redis-server", (char *const *)argv);
			fprintf(stderr, "harness: cannot exec redis-server: %s\n", strerror(errno));
			_exit(127);
		}
		/* up to 5 s for PONG; a server that died (port taken, no binary) is tried again */
		if (test_poll(answers_or_died, r, 5000, 10) >= 0 && r->pid > 0) {
			snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d/0", r->port);
			r->bus = bus;
			if (bus && o->all_slots && own_all_slots(r)) {
				test_redis_stop(r);
				return -1;
			}
			return 0;
		}
		if (r->pid > 0) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, NULL, 0);
			r->pid = 0;
		}
		unlink(nodes); /* a bus port taken after the node wrote its nodes.conf: start afresh */
	}
	fprintf(stderr, "harness: redis-server did not start (see %s/redis.log)\n", r->dir);
	return -1;
}

void test_redis_stop(struct test_redis *r)
{
	char cmd[200];

	if (r->pid > 0) {
		kill(r->pid, SIGTERM);
		test_poll(reaped, r, 2000, 10);
		if (r->pid > 0) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, NULL, 0);
			r->pid = 0;
		}
	}
	if (r->dir[0] && strncmp(r->dir, "/tmp/sluice-test-", 17) == 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "harness: could not remove %s\n", r->dir);
		r->dir[0] = '\0';
	}
}

redisContext *test_redis_connect(const struct test_redis *r)
{
	redisContext *c = redisConnect("127.0.0.1", r->port);

	if (!c || c->err) {
		fprintf(stderr, "harness: connect to port %d: %s\n", r->port, c ? c->errstr : "oom");
		abort();
	}
	return c;
}

/* The command of `fmt` and `ap` on `c` (routed in cluster mode: tests/harness_mode.h); NULL on an I/O error. */
static redisReply *cmd_v(redisContext *c, const char *fmt, va_list ap)
{
	char *cmd = NULL;
	int len = redisvFormatCommand(&cmd, fmt, ap);
	redisReply *r;

	if (len <= 0) {
		fprintf(stderr, "harness: cannot format the command '%s'\n", fmt);
		abort();
	}
	r = test_route(c, cmd, (size_t)len);
	redisFreeCommand(cmd);
	return r;
}

redisReply *test_cmd(redisContext *c, const char *fmt, ...)
{
	redisReply *reply;
	va_list ap;

	va_start(ap, fmt);
	reply = cmd_v(c, fmt, ap);
	va_end(ap);
	if (!reply) {
		fprintf(stderr, "harness: redis I/O error: %s\n", c->errstr);
		abort();
	}
	return reply;
}

redisReply *test_cmd_argv(redisContext *c, int argc, const char *const *argv, const size_t *lens)
{
	char *cmd = NULL;
	int len = redisFormatCommandArgv(&cmd, argc, (const char **)argv, lens);
	redisReply *reply;

	if (len <= 0) {
		fprintf(stderr, "harness: cannot format a command of %d arguments\n", argc);
		abort();
	}
	reply = test_route(c, cmd, (size_t)len);
	redisFreeCommand(cmd);
	if (!reply) {
		fprintf(stderr, "harness: redis I/O error: %s\n", c->errstr);
		abort();
	}
	return reply;
}

long long test_cmd_int(redisContext *c, const char *fmt, ...)
{
	redisReply *reply;
	long long v;
	va_list ap;

	va_start(ap, fmt);
	reply = cmd_v(c, fmt, ap);
	va_end(ap);
	if (!reply || reply->type != REDIS_REPLY_INTEGER) {
		fprintf(stderr, "harness: '%s' did not answer an integer (%s)\n", fmt,
			reply && reply->type == REDIS_REPLY_ERROR ? reply->str : "other type");
		abort();
	}
	v = reply->integer;
	freeReplyObject(reply);
	return v;
}

void test_redis_flush(redisContext *c)
{
	freeReplyObject(test_cmd(c, "FLUSHALL"));
	freeReplyObject(test_cmd(c, "SCRIPT FLUSH"));
}

char *test_read_src(const char *rel, size_t *len)
{
	const char *dir = getenv("SLUICE_SRCDIR") && *getenv("SLUICE_SRCDIR") ? getenv("SLUICE_SRCDIR") : ".";
	char path[1024];
	FILE *fp;
	char *buf = NULL;
	long size;
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	if (fseek(fp, 0, SEEK_END) != 0 || (size = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0)
		goto out;
	buf = malloc((size_t)size + 1);
	if (!buf)
		goto out;
	if (fread(buf, 1, (size_t)size, fp) != (size_t)size) {
		free(buf);
		buf = NULL;
		errno = EIO;
		goto out;
	}
	buf[size] = '\0';
	if (len)
		*len = (size_t)size;
out:
	err = errno;
	fclose(fp);
	errno = err;
	return buf;
}

long long test_server_ms(redisContext *c)
{
	redisReply *r = test_cmd(c, "TIME");
	long long ms;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
		fprintf(stderr, "harness: TIME did not answer an array\n");
		abort();
	}
	ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
	freeReplyObject(r);
	return ms;
}

const char *test_key(const char *path, const char *kind)
{
	static char buf[32][320];
	static unsigned next;
	char *b = buf[next++ % 32];

	snprintf(b, sizeof(buf[0]), "sluice:{%u}:%s:%s", shard_of(path, strlen(path)), kind, path);
	return b;
}

const char *test_registry(const char *algorithm, const char *path)
{
	static char buf[32][96];
	static unsigned next;
	char *b = buf[next++ % 32];

	snprintf(b, sizeof(buf[0]), "sluice:{%u}:registry:%s", shard_of(path, strlen(path)), algorithm);
	return b;
}

const char *test_shard_key(const char *algorithm, const char *path, const char *what)
{
	static char buf[32][96];
	static unsigned next;
	char *b = buf[next++ % 32];

	(void)algorithm;
	snprintf(b, sizeof(buf[0]), "sluice:{%u}:%s", shard_of(path, strlen(path)), what);
	return b;
}

const char *test_lb_key(const char *path)
{
	return test_key(path, "leaky_bucket");
}

const char *test_lb_meta(const char *path)
{
	return test_key(path, "leaky_bucket_meta");
}

const char *test_sl_key(const char *path)
{
	return test_key(path, "sliding_log");
}

void test_layouts(const char *prefix, const char *json, struct layout **all, size_t *nall)
{
	cJSON *arr = json ? cJSON_Parse(json) : NULL, *it;
	struct sl_error err = { 0 };
	size_t i = 0;

	ck_assert_msg(!json || cJSON_IsArray(arr), "layouts: not a JSON array: %s", json);
	ck_assert_int_eq(layouts_default(prefix, all, nall), 0);
	cJSON_ArrayForEach(it, arr) {
		struct layout l;
		char where[24];

		snprintf(where, sizeof(where), "layouts[%zu]", i++);
		ck_assert_msg(layout_from_json(it, where, &l, &err) == 0, "%s: %s", err.field, err.message);
		ck_assert_int_eq(layouts_append_foreign(all, nall, &l, prefix), 0);
		layout_clear(&l);
	}
	cJSON_Delete(arr);
}

/* ---- scripts ------------------------------------------------------------------ */

const char *test_num(long long v)
{
	static char buf[32][24];
	static unsigned next;
	char *b = buf[next++ % 32];

	snprintf(b, sizeof(buf[0]), "%lld", v);
	return b;
}

/* Room for a script call's arguments: the command, the body or SHA1, numkeys. */
#define SCRIPT_MAX_ARGS 64

redisReply *test_script_argv(redisContext *c, int how, const char *name, int nkeys, int argc,
			     const char *const *argv, const size_t *lens)
{
	const struct script_src *src = script_find(name);
	const char *v[SCRIPT_MAX_ARGS + 3];
	size_t vl[SCRIPT_MAX_ARGS + 3];
	char sha[41];
	redisReply *r;

	ck_assert_msg(src != NULL, "lua/%s.lua is not embedded", name);
	ck_assert_int_le(argc, SCRIPT_MAX_ARGS);
	if (how == TEST_EVALSHA) {
		r = test_cmd(c, "SCRIPT LOAD %s", src->body);
		ck_assert_msg(r->type == REDIS_REPLY_STRING && r->len == 40, "SCRIPT LOAD of %s: %s", name,
			      r->type == REDIS_REPLY_ERROR ? r->str : "not a SHA1");
		memcpy(sha, r->str, sizeof(sha));
		freeReplyObject(r);
	}
	v[0] = how == TEST_EVALSHA ? "EVALSHA" : how == TEST_EVAL_RO ? "EVAL_RO" : "EVAL";
	v[1] = how == TEST_EVALSHA ? sha : src->body;
	v[2] = test_num(nkeys);
	for (int i = 0; i < 3; i++)
		vl[i] = strlen(v[i]);
	for (int i = 0; i < argc; i++) {
		v[3 + i] = argv[i];
		vl[3 + i] = lens ? lens[i] : strlen(argv[i]);
	}
	return test_cmd_argv(c, argc + 3, v, vl);
}

redisReply *test_script(redisContext *c, const char *name, int nkeys, ...)
{
	const char *argv[SCRIPT_MAX_ARGS];
	int argc = 0;
	const char *a;
	va_list ap;

	va_start(ap, nkeys);
	while ((a = va_arg(ap, const char *)) != NULL && argc < SCRIPT_MAX_ARGS)
		argv[argc++] = a;
	va_end(ap);
	return test_script_argv(c, TEST_EVAL, name, nkeys, argc, argv, NULL);
}

redisReply *test_client_call(redisContext *c, int how, const char *algorithm, const char *path, const char *n,
			     long long now, const char *const *params, int nparams)
{
	const char *argv[SCRIPT_MAX_ARGS];
	char meta[64];
	int argc = 0;

	snprintf(meta, sizeof(meta), "%s_meta", algorithm);
	argv[argc++] = test_key(path, algorithm);
	argv[argc++] = test_key(path, meta);
	argv[argc++] = test_registry(algorithm, path);
	argv[argc++] = test_shard_key(algorithm, path, "rules");
	argv[argc++] = test_shard_key(algorithm, path, "stats");
	argv[argc++] = path;
	argv[argc++] = n ? n : "";
	argv[argc++] = now >= 0 ? test_num(now) : "";
	argv[argc++] = "";
	for (int i = 0; i < nparams && argc < SCRIPT_MAX_ARGS; i++)
		argv[argc++] = params[i];
	return test_script_argv(c, how, algorithm, 5, argc, argv, NULL);
}

long long test_acquire(redisContext *c, int how, const char *algorithm, const char *path, long long now, ...)
{
	const char *params[SCRIPT_MAX_ARGS];
	int n = 0;
	const char *a;
	va_list ap;

	va_start(ap, now);
	while ((a = va_arg(ap, const char *)) != NULL && n < SCRIPT_MAX_ARGS)
		params[n++] = a;
	va_end(ap);
	return test_script_allowed(test_client_call(c, how, algorithm, path, "", now, params, n), algorithm);
}

long long test_script_allowed(redisReply *r, const char *name)
{
	long long allowed;

	ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements >= 1 && r->element[0]->type == REDIS_REPLY_INTEGER,
		      "%s.lua: %s", name, r->type == REDIS_REPLY_ERROR ? r->str : "not an array of integers");
	allowed = r->element[0]->integer;
	freeReplyObject(r);
	return allowed;
}

const char *test_show_reply(const redisReply *r, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	if (r->type == REDIS_REPLY_ERROR)
		snprintf(buf, cap, "error \"%s\"", r->str);
	else if (r->type == REDIS_REPLY_INTEGER)
		snprintf(buf, cap, "%lld", r->integer);
	else if (r->type == REDIS_REPLY_NIL)
		snprintf(buf, cap, "nil");
	else if (r->type == REDIS_REPLY_ARRAY) {
		n += snprintf(buf + n, cap - n, "{");
		for (size_t i = 0; i < r->elements && n < cap; i++) {
			const redisReply *e = r->element[i];

			if (e->type == REDIS_REPLY_INTEGER)
				n += snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", e->integer);
			else if (e->type == REDIS_REPLY_NIL)
				n += snprintf(buf + n, cap - n, "%snil", i ? ", " : "");
			else if (e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS)
				n += snprintf(buf + n, cap - n, "%s\"%s\"", i ? ", " : "", e->str);
			else
				n += snprintf(buf + n, cap - n, "%s<type %d>", i ? ", " : "", e->type);
		}
		if (n < cap)
			snprintf(buf + n, cap - n, "}");
	} else if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
		snprintf(buf, cap, "\"%s\"", r->str);
	else
		snprintf(buf, cap, "<type %d>", r->type);
	return buf;
}

void test_check_ints(const char *file, int line, redisReply *r, const long long *want, size_t n)
{
	char got[512];
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == n;

	for (size_t i = 0; ok && i < n; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	if (!ok) {
		char exp[512];
		size_t k = 0;

		k += (size_t)snprintf(exp + k, sizeof(exp) - k, "{");
		for (size_t i = 0; i < n && k < sizeof(exp); i++)
			k += (size_t)snprintf(exp + k, sizeof(exp) - k, "%s%lld", i ? ", " : "", want[i]);
		if (k < sizeof(exp))
			snprintf(exp + k, sizeof(exp) - k, "}");
		ck_abort_msg("%s:%d: reply %s, want %s", file, line, test_show_reply(r, got, sizeof(got)), exp);
	}
	freeReplyObject(r);
}

void test_check_client(const char *file, int line, redisReply *r, const long long want[4], const char *rule)
{
	char got[512];
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 5 && r->element[4]->type == REDIS_REPLY_STRING &&
		 strcmp(r->element[4]->str, rule) == 0;

	for (size_t i = 0; ok && i < 4; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	if (!ok)
		ck_abort_msg("%s:%d: reply %s, want {%lld, %lld, %lld, %lld, \"%s\"}", file, line,
			     test_show_reply(r, got, sizeof(got)), want[0], want[1], want[2], want[3], rule);
	freeReplyObject(r);
}

void test_check_error(const char *file, int line, redisReply *r, const char *prefix)
{
	char got[512];

	ck_assert_msg(r->type == REDIS_REPLY_ERROR && strncmp(r->str, prefix, strlen(prefix)) == 0,
		      "%s:%d: reply %s, want an error starting \"%s\"", file, line,
		      test_show_reply(r, got, sizeof(got)), prefix);
	freeReplyObject(r);
}

long long test_elem_int(const redisReply *r, size_t i)
{
	char got[512];

	ck_assert_msg(r->type == REDIS_REPLY_ARRAY && i < r->elements &&
			      r->element[i]->type == REDIS_REPLY_INTEGER,
		      "reply %s has no integer element %zu", test_show_reply(r, got, sizeof(got)), i);
	return r->element[i]->integer;
}

void test_check_cmd(const char *file, int line, redisContext *c, const char *want, const char *fmt, ...)
{
	char got[2048];
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = cmd_v(c, fmt, ap);
	va_end(ap);
	ck_assert_msg(r != NULL, "redis I/O error: %s", c->errstr);
	test_show_reply(r, got, sizeof(got));
	freeReplyObject(r);
	ck_assert_msg(strcmp(got, want) == 0, "%s:%d: %s answered %s, want %s", file, line, fmt, got, want);
}

int test_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when field name f (n bytes) is a clock-lag field of a stats hash. */
static int lag_field(const char *f, size_t n)
{
	return n > 5 && memcmp(f, ":lag:", 5) == 0;
}

static int stats_key(const char *name)
{
	size_t n = strlen(name);

	return n > 6 && strcmp(name + n - 6, ":stats") == 0;
}

/* The HGETALL reply of a stats hash without its lag fields (r edited in
 * place: the dropped elements are freed); 0 when nothing is left. */
static size_t drop_lag(redisReply *r)
{
	size_t j = 0;

	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		if (lag_field(r->element[i]->str, r->element[i]->len)) {
			freeReplyObject(r->element[i]);
			freeReplyObject(r->element[i + 1]);
			continue;
		}
		r->element[j++] = r->element[i];
		r->element[j++] = r->element[i + 1];
	}
	r->elements = j;
	return j;
}

redisReply *test_keys(redisContext *c, const char *pattern)
{
	redisContext *node[TEST_CLUSTER_MAX_NODES];
	int n = test_route_nodes(c, node, TEST_N(node));
	redisReply *all = calloc(1, sizeof(*all));
	size_t total = 0;

	ck_assert_ptr_nonnull(all);
	all->type = REDIS_REPLY_ARRAY;
	for (int i = 0; i < n; i++) {
		redisReply *r = redisCommand(node[i], "KEYS %s", pattern);
		redisReply **grown;

		ck_assert_msg(r && r->type == REDIS_REPLY_ARRAY, "KEYS %s: %s", pattern,
			      r ? (r->type == REDIS_REPLY_ERROR ? r->str : "not an array") : node[i]->errstr);
		grown = realloc(all->element, (total + r->elements + 1) * sizeof(*grown));
		ck_assert_ptr_nonnull(grown);
		all->element = grown;
		if (r->elements)
			memcpy(all->element + total, r->element, r->elements * sizeof(*grown));
		total += r->elements;
		r->elements = 0; /* its elements are all's now */
		freeReplyObject(r);
	}
	all->elements = total;
	return all;
}

/* The number `field` of INFO `section` of one node (0 when absent). */
static double info_field(redisContext *node, const char *section, const char *field)
{
	redisReply *r = redisCommand(node, "INFO %s", section);
	char key[128];
	const char *p;
	double v = 0;

	ck_assert_msg(r && r->type == REDIS_REPLY_STRING, "INFO %s failed", section);
	snprintf(key, sizeof(key), "\n%s:", field);
	if (!strncmp(r->str, key + 1, strlen(key + 1)))
		v = atof(r->str + strlen(key + 1));
	else if ((p = strstr(r->str, key)))
		v = atof(p + strlen(key));
	freeReplyObject(r);
	return v;
}

double test_info_num(redisContext *c, const char *section, const char *field)
{
	redisContext *node[TEST_CLUSTER_MAX_NODES];
	int n = test_route_nodes(c, node, TEST_N(node));
	double sum = 0;

	for (int i = 0; i < n; i++)
		sum += info_field(node[i], section, field);
	return sum;
}

int test_nodes_of(redisContext *c)
{
	redisContext *node[TEST_CLUSTER_MAX_NODES];

	return test_route_nodes(c, node, TEST_N(node));
}

char *test_snapshot(redisContext *c)
{
	return test_snapshot_except(c, NULL);
}

char *test_snapshot_except(redisContext *c, const char *skip)
{
	redisReply *keys = test_keys(c, "*");
	size_t cap = 1 << 16, n = 0, shown = 0;
	char *out = malloc(cap), *body = malloc(cap), part[2048];
	char **names = malloc((keys->elements + 1) * sizeof(*names));

	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(body);
	ck_assert_ptr_nonnull(names);
	body[0] = '\0';
	for (size_t i = 0; i < keys->elements; i++)
		names[i] = keys->element[i]->str;
	qsort(names, keys->elements, sizeof(*names), test_cmp_str);
	for (size_t i = 0; i < keys->elements; i++) {
		redisReply *ty, *content;

		if (skip && strcmp(names[i], skip) == 0)
			continue;
		ty = test_cmd(c, "TYPE %s", names[i]);
		if (strcmp(ty->str, "zset") == 0)
			content = test_cmd(c, "ZRANGE %s 0 -1 WITHSCORES", names[i]);
		else if (strcmp(ty->str, "hash") == 0)
			content = test_cmd(c, "HGETALL %s", names[i]);
		else if (strcmp(ty->str, "set") == 0)
			content = test_cmd(c, "SORT %s ALPHA", names[i]);
		else
			content = test_cmd(c, "DUMP %s", names[i]);
		if (strcmp(ty->str, "hash") == 0 && stats_key(names[i]) && content->elements > 0 &&
		    drop_lag(content) == 0) {
			freeReplyObject(content);
			freeReplyObject(ty);
			continue;
		}
		n += snprintf(body + n, cap - n, "%s %s %s ttl=%s\n", names[i], ty->str,
			      test_show_reply(content, part, sizeof(part)),
			      test_cmd_int(c, "PTTL %s", names[i]) >= 0 ? "yes" : "no");
		ck_assert_uint_lt(n, cap);
		shown++;
		freeReplyObject(content);
		freeReplyObject(ty);
	}
	snprintf(out, cap, "dbsize=%zu\n%s", shown, body);
	free(body);
	free(names);
	freeReplyObject(keys);
	return out;
}

int test_lag_only(redisContext *c, const char *name)
{
	redisReply *f, *ty;
	size_t lag = 0;
	int only;

	if (!stats_key(name))
		return 0;
	ty = test_cmd(c, "TYPE %s", name);
	only = strcmp(ty->str, "hash") == 0;
	freeReplyObject(ty);
	if (!only)
		return 0;
	f = test_cmd(c, "HKEYS %s", name);
	for (size_t j = 0; j < f->elements; j++)
		lag += lag_field(f->element[j]->str, f->element[j]->len);
	only = f->elements > 0 && lag == f->elements;
	freeReplyObject(f);
	return only;
}

long long test_commands(redisContext *c)
{
	redisContext *node[TEST_CLUSTER_MAX_NODES];
	int n = test_route_nodes(c, node, TEST_N(node));
	long long sum = 0;

	for (int i = 0; i < n; i++) {
		redisReply *r = redisCommand(node[i], "INFO stats");
		const char *at = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "total_commands_processed:") : NULL;

		ck_assert_msg(at != NULL, "INFO stats has no total_commands_processed");
		sum += atoll(at + strlen("total_commands_processed:"));
		freeReplyObject(r);
	}
	return sum;
}

long long test_dbsize(redisContext *c)
{
	redisContext *node[TEST_CLUSTER_MAX_NODES];
	int nn = test_route_nodes(c, node, TEST_N(node));
	redisReply *keys = test_keys(c, "*:stats");
	long long n = 0;

	for (int i = 0; i < nn; i++) {
		redisReply *r = redisCommand(node[i], "DBSIZE");

		ck_assert_msg(r && r->type == REDIS_REPLY_INTEGER, "DBSIZE failed");
		n += r->integer;
		freeReplyObject(r);
	}

	for (size_t i = 0; i < keys->elements; i++)
		n -= test_lag_only(c, keys->element[i]->str);
	freeReplyObject(keys);
	return n;
}

static size_t http_on_body(char *p, size_t size, size_t n, void *ud)
{
	struct test_http_res *h = ud;
	size_t k = size * n;

	if (h->len + k >= sizeof(h->body))
		k = sizeof(h->body) - 1 - h->len;
	memcpy(h->body + h->len, p, k);
	h->len += k;
	h->body[h->len] = '\0';
	return size * n;
}

static void http_header_value(const char *line, size_t n, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);

	if (n > nl && strncasecmp(line, name, nl) == 0) {
		const char *v = line + nl;
		size_t vl = n - nl;

		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
			vl--;
		snprintf(out, cap, "%.*s", (int)vl, v);
	}
}

static size_t http_on_header(char *p, size_t size, size_t n, void *ud)
{
	struct test_http_res *h = ud;

	http_header_value(p, size * n, "Allow:", h->allow, sizeof(h->allow));
	http_header_value(p, size * n, "Content-Type:", h->ctype, sizeof(h->ctype));
	http_header_value(p, size * n, "ETag:", h->etag, sizeof(h->etag));
	http_header_value(p, size * n, "Cache-Control:", h->cache_control, sizeof(h->cache_control));
	return size * n;
}

struct http_upload {
	const char *p;
	size_t left;
};

static size_t http_on_read(char *buf, size_t size, size_t n, void *ud)
{
	struct http_upload *u = ud;
	size_t k = size * n < u->left ? size * n : u->left;

	if (k > 100)
		k = 100; /* small chunks */
	memcpy(buf, u->p, k);
	u->p += k;
	u->left -= k;
	return k;
}

long test_http_try(int port, const char *method, const char *target_path, const char *body, int mode,
		   struct test_http_res *h)
{
	CURL *e = curl_easy_init();
	struct curl_slist *hdrs = NULL;
	struct http_upload up = { body, body ? strlen(body) : 0 };
	char url[512];
	CURLcode rc;

	ck_assert_ptr_nonnull(e);
	memset(h, 0, sizeof(*h));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, target_path);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, http_on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, http_on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	if (body && mode == TEST_HTTP_CHUNKED) {
		hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, http_on_read);
		curl_easy_setopt(e, CURLOPT_READDATA, &up);
	} else if (body) {
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
		if (mode == TEST_HTTP_NO_EXPECT)
			hdrs = curl_slist_append(hdrs, "Expect:");
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	if (hdrs)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	rc = curl_easy_perform(e);
	if (rc == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &h->status);
	else
		h->len = (size_t)snprintf(h->body, sizeof(h->body), "%s", curl_easy_strerror(rc));
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(e);
	return rc == CURLE_OK ? h->status : 0;
}

void test_http(int port, const char *method, const char *target_path, const char *body, int mode,
	       struct test_http_res *h)
{
	ck_assert_msg(test_http_try(port, method, target_path, body, mode, h) != 0, "%s %s: %s", method, target_path,
		      h->body);
}


int test_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_ERROR); /* the suites assert on state; info lines would bury Check's report */
	if (test_mode_cluster())
		printf("Redis: a cluster of %d primaries (SLUICE_TEST_REDIS=cluster)\n", TEST_MODE_PRIMARIES);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	test_srv_end();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

long long test_skew_ms(void)
{
	static const char def[] = "\nlocal SKEW_MS = ";

	for (size_t i = 0; i < script_srcs_len; i++) {
		const char *p = strstr(script_srcs[i].body, def);

		if (p)
			return atoll(p + sizeof(def) - 1);
	}
	ck_abort_msg("no embedded script defines SKEW_MS (lua/lib/skew.lua)");
	return -1;
}

long long test_cmdstat(redisContext *c, const char *cmd, const char *field)
{
	redisContext *node[TEST_CLUSTER_MAX_NODES];
	int n = test_route_nodes(c, node, TEST_N(node));
	char key[96];
	long long v = 0;

	snprintf(key, sizeof(key), "cmdstat_%s:", cmd);
	for (int i = 0; i < n; i++) {
		redisReply *r = redisCommand(node[i], "INFO commandstats");
		const char *p;

		ck_assert_msg(r && r->type == REDIS_REPLY_STRING, "INFO commandstats failed");
		if ((p = strstr(r->str, key))) {
			const char *eol = strstr(p, "\r\n");
			char f[32];

			snprintf(f, sizeof(f), "%s=", field);
			p = strstr(p, f);
			if (p && (!eol || p < eol))
				v += atoll(p + strlen(f));
		}
		freeReplyObject(r);
	}
	return v;
}

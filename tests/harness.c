#include "tests/harness.h"

#include "core/log.h"

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

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
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

int test_redis_start(struct test_redis *r)
{
	char portstr[16];
	pid_t parent = getpid();

	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "/tmp/sluice-test-XXXXXX");
	if (!mkdtemp(r->dir)) {
		perror("mkdtemp");
		return -1;
	}
	for (int attempt = 0; attempt < 5; attempt++) {
		int status;

		r->port = test_free_port();
		if (r->port <= 0)
			continue;
		snprintf(portstr, sizeof(portstr), "%d", r->port);
		r->pid = fork();
		if (r->pid < 0) {
			perror("fork");
			return -1;
		}
		if (r->pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(1);
			execlp("redis-server", "redis-server", "--port", portstr, "--bind", "127.0.0.1",
			       "--save", "", "--appendonly", "no", "--dir", r->dir, "--daemonize", "no",
			       "--loglevel", "warning", "--logfile", "redis.log", (char *)NULL);
			fprintf(stderr, "harness: cannot exec redis-server: %s\n", strerror(errno));
			_exit(127);
		}
		for (int i = 0; i < 100; i++) { /* up to 5 s */
			if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
				r->pid = 0;
				break; /* died: port taken or no binary; try again */
			}
			if (ping(r->port)) {
				snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d/0", r->port);
				return 0;
			}
			sleep_ms(50);
		}
		if (r->pid > 0) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, NULL, 0);
			r->pid = 0;
		}
	}
	fprintf(stderr, "harness: redis-server did not start (see %s/redis.log)\n", r->dir);
	return -1;
}

void test_redis_stop(struct test_redis *r)
{
	char cmd[200];

	if (r->pid > 0) {
		kill(r->pid, SIGTERM);
		for (int i = 0; i < 40; i++) {
			if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
				r->pid = 0;
				break;
			}
			sleep_ms(50);
		}
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

redisReply *test_cmd(redisContext *c, const char *fmt, ...)
{
	redisReply *reply;
	va_list ap;

	va_start(ap, fmt);
	reply = redisvCommand(c, fmt, ap);
	va_end(ap);
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
	reply = redisvCommand(c, fmt, ap);
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

static const char *key_of(char (*buf)[256], unsigned *next, const char *path, const char *kind)
{
	char *b = buf[(*next)++ % 4];

	snprintf(b, 256, "sluice:{%s}:%s", path, kind);
	return b;
}

const char *test_lb_key(const char *path)
{
	static char buf[4][256];
	static unsigned next;

	return key_of(buf, &next, path, "leaky_bucket");
}

const char *test_lb_meta(const char *path)
{
	static char buf[4][256];
	static unsigned next;

	return key_of(buf, &next, path, "leaky_bucket:meta");
}

const char *test_sl_key(const char *path)
{
	static char buf[4][256];
	static unsigned next;

	return key_of(buf, &next, path, "sliding_log");
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
	r = redisvCommand(c, fmt, ap);
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

char *test_snapshot(redisContext *c)
{
	redisReply *keys = test_cmd(c, "KEYS *");
	size_t cap = 1 << 16, n = 0;
	char *out = malloc(cap), part[2048];
	char **names = malloc((keys->elements + 1) * sizeof(*names));

	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(names);
	for (size_t i = 0; i < keys->elements; i++)
		names[i] = keys->element[i]->str;
	qsort(names, keys->elements, sizeof(*names), test_cmp_str);
	n += snprintf(out + n, cap - n, "dbsize=%zu\n", keys->elements);
	for (size_t i = 0; i < keys->elements; i++) {
		redisReply *ty = test_cmd(c, "TYPE %s", names[i]);
		redisReply *content;

		if (strcmp(ty->str, "zset") == 0)
			content = test_cmd(c, "ZRANGE %s 0 -1 WITHSCORES", names[i]);
		else if (strcmp(ty->str, "hash") == 0)
			content = test_cmd(c, "HGETALL %s", names[i]);
		else if (strcmp(ty->str, "set") == 0)
			content = test_cmd(c, "SORT %s ALPHA", names[i]);
		else
			content = test_cmd(c, "DUMP %s", names[i]);
		n += snprintf(out + n, cap - n, "%s %s %s ttl=%s\n", names[i], ty->str,
			      test_show_reply(content, part, sizeof(part)),
			      test_cmd_int(c, "PTTL %s", names[i]) >= 0 ? "yes" : "no");
		ck_assert_uint_lt(n, cap);
		freeReplyObject(content);
		freeReplyObject(ty);
	}
	free(names);
	freeReplyObject(keys);
	return out;
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

void test_http(int port, const char *method, const char *target_path, const char *body, int mode,
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
	ck_assert_msg(rc == CURLE_OK, "%s %s: %s", method, target_path, curl_easy_strerror(rc));
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &h->status);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(e);
}


int test_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_ERROR); /* the suites assert on state; info lines would bury Check's report */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

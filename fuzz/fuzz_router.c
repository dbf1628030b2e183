/*
 * fuzz_router: the admin API's route and dispatch (admin/router.c, api_handle
 * and api_lane_of) and every handler behind it, on the private redis-server
 * (fuzz/harness.h, FLUSHDB before each input), without sockets: the requests
 * libmicrohttpd would hand to admin/server_req.c are given to api_handle as
 * it gives them.  An input is up to MAX_REQS requests, apart by a line "%%":
 *
 *     PUT /v1/rules/api?match=%2Fapi*&cursor=0&count=10
 *     Authorization: Bearer s3cret
 *     If-Match: "0123"
 *     X-Fuzz: token reads unready
 *
 *     {"match": "/api/?*", "algorithm": "fixed_window", "limit": 5, "window_ms": 1000}
 *
 * (the request line: method, raw path, query; headers until an empty line;
 * the rest up to the next "\n%%\n" is the body).  The query is decoded as
 * server_req.c's query_arg does (MHD_http_unescape, '+' a space; a value
 * holding %00 refused as it refuses it).  X-Fuzz picks the api: with the
 * token "s3cret" (token), reads needing it too (reads), the daemon's rules
 * not yet stored (unready).
 *
 * Beyond ASan/UBSan, each answer must be whole: a status the API counts, a
 * JSON body (or a text one) that cJSON prints and reads back, an error body
 * {"error": {"code", "message"}} for a status >= 400, the Allow header for a
 * 405 only, and api_lane_of naming the route api_handle answered with.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "admin/api.h"
#include "core/layout.h"
#include "core/log.h"
#include "fuzz/harness.h"

#define MAX_REQS 4
#define TOKEN "s3cret"
#define PFX "sluice:"
#define SEP "\n%%\n"

int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The process's api objects (harness.h): none, token, token + reads. */
static struct api *apis[3];
static atomic_int ready;
static struct layout *layouts;
static size_t nlayouts;
static const int statuses[] = { 200, 201, 202, 400, 401, 404, 405, 409, 412, 413, 429, 500, 503 };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct redis_target t;
	struct sl_error err = { 0 };
	char url[64];

	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR); /* the handlers' info lines would flood libFuzzer's output */
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", fuzz_redis_port());
	fuzz_redis(); /* aborts, saying why, without a Redis */
	if (redis_url_parse(url, &t, &err) || layouts_default(PFX, &layouts, &nlayouts)) {
		fprintf(stderr, "fuzz_router: %s: %s\n", err.field, err.message);
		abort();
	}
	for (int i = 0; i < 3; i++) {
		struct api_config ac = { .redis = &t, .timeout_ms = 1000, .prefix = PFX, .layouts = layouts,
					 .nlayouts = nlayouts, .token = i ? TOKEN : NULL, .auth_reads = i == 2,
					 .ready = &ready, .metrics_fresh_ms = -1, .metrics_wait_ms = 1000 };

		if (!(apis[i] = api_new(&ac))) {
			fprintf(stderr, "fuzz_router: api_new: out of memory\n");
			abort();
		}
	}
	redis_target_clear(&t);
	return 0;
}

/* One decoded query value (server_req.c's query_arg); *nul when it holds a NUL byte. */
static char *decode(const char *v, size_t n, int *nul)
{
	char *copy = strndup(v, n);

	if (!copy)
		abort();
	for (char *p = copy; *p; p++)
		if (*p == '+')
			*p = ' ';
	if (strlen(copy) != MHD_http_unescape(copy))
		*nul = 1;
	return copy;
}

static void bad(const struct api_request *req, const struct api_response *res, const char *what)
{
	char *text = res->body ? cJSON_PrintUnformatted(res->body) : NULL;

	fprintf(stderr, "fuzz_router: %s: %s %s -> %d %s\n", what, req->method, req->path, res->status,
		text ? text : res->text ? res->text : "(no body)");
	free(text);
	abort();
}

/* The answer is whole (see the top). */
static void check(struct api *a, const struct api_request *req, const struct api_response *res)
{
	size_t i;
	int route;

	for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]) && statuses[i] != res->status; i++)
		;
	if (i == sizeof(statuses) / sizeof(statuses[0]))
		bad(req, res, "a status the API does not count");
	if (!res->body == !res->text)
		bad(req, res, "not exactly one of a JSON body and a text");
	if (res->body) {
		char *text = cJSON_PrintUnformatted(res->body);
		cJSON *back = text ? cJSON_Parse(text) : NULL;
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(res->body, "error");

		if (!back)
			bad(req, res, "the body does not print as JSON that reads back");
		cJSON_Delete(back);
		free(text);
		if (res->status >= 400 && (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "code")) ||
					   !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message"))))
			bad(req, res, "an error without error.code and error.message");
	}
	if ((res->status == 405) != (res->allow != NULL))
		bad(req, res, "Allow set without a 405, or a 405 without it");
	api_lane_of(req->method, req->path, &route);
	if (res->status != 401 && route != res->route && !(res->status == 500 && res->route < 0))
		bad(req, res, "api_lane_of and api_handle name different routes");
	if (res->status == 401 && !api_refuses(a, req))
		bad(req, res, "a 401 that api_refuses does not foresee");
}

/* The request in [p, end) (the format at the top). */
static void one(const char *p, const char *end)
{
	struct api_request req = { 0 };
	struct api_response res;
	const char *eol = memchr(p, '\n', (size_t)(end - p)), *q;
	char *line, *path, *qs, *hdr[2] = { NULL, NULL }, *arg[3] = { NULL, NULL, NULL };
	static const char *const names[3] = { "match", "cursor", "count" };
	int which = 0, nul = 0;
	struct api *a;

	line = strndup(p, eol ? (size_t)(eol - p) : (size_t)(end - p));
	p = eol ? eol + 1 : end;
	/* the request line: METHOD SP path[?query] (a missing path is "/") */
	if (!line)
		abort();
	path = strchr(line, ' ');
	if (path)
		*path++ = '\0';
	else
		path = line + strlen(line);
	if ((qs = strchr(path, '?')))
		*qs++ = '\0';
	for (const char *k = qs; k && *k;) {
		const char *amp = strchr(k, '&'), *eq;
		size_t n = amp ? (size_t)(amp - k) : strlen(k);

		eq = memchr(k, '=', n);
		for (int i = 0; i < 3; i++)
			if (!arg[i] && (size_t)((eq ? eq : k + n) - k) == strlen(names[i]) &&
			    !memcmp(k, names[i], strlen(names[i])))
				arg[i] = eq ? decode(eq + 1, n - (size_t)(eq + 1 - k), &nul) : decode("", 0, &nul);
		k = amp ? amp + 1 : NULL;
	}
	/* headers until an empty line */
	while (p < end && *p != '\n') {
		size_t n;

		eol = memchr(p, '\n', (size_t)(end - p));
		n = eol ? (size_t)(eol - p) : (size_t)(end - p);
		if (n > 15 && !strncasecmp(p, "Authorization: ", 15) && !hdr[0])
			hdr[0] = strndup(p + 15, n - 15);
		else if (n > 10 && !strncasecmp(p, "If-Match: ", 10) && !hdr[1])
			hdr[1] = strndup(p + 10, n - 10);
		else if (n >= 8 && !strncasecmp(p, "X-Fuzz: ", 8)) {
			q = p + 8;
			which = memmem(q, n - 8, "reads", 5) ? 2 : memmem(q, n - 8, "token", 5) ? 1 : 0;
			atomic_store(&ready, !memmem(q, n - 8, "unready", 7));
		}
		p = eol ? eol + 1 : end;
	}
	if (p < end)
		p++; /* the empty line */
	if (nul)
		goto out; /* server_req.c answers 400 invalid_query itself */
	req.method = line;
	req.path = path;
	req.query_match = arg[0];
	req.query_cursor = arg[1];
	req.query_count = arg[2];
	req.body = p;
	req.body_len = (size_t)(end - p);
	req.authorization = hdr[0];
	req.if_match = hdr[1];
	a = apis[which];
	api_handle(a, &req, &res);
	check(a, &req, &res);
	cJSON_Delete(res.body);
	free(res.text);
out:
	free(line);
	for (int i = 0; i < 3; i++)
		free(arg[i]);
	free(hdr[0]);
	free(hdr[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	redisReply *r = redisCommand(fuzz_redis(), "FLUSHDB");

	if (!r || r->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "fuzz_router: FLUSHDB: %s\n", r ? r->str : fuzz_redis()->errstr);
		abort();
	}
	freeReplyObject(r);
	for (int n = 0; n < MAX_REQS && p < end; n++) {
		const char *sep = memmem(p, (size_t)(end - p), SEP, strlen(SEP));
		const char *stop = sep ? sep : end;

		atomic_store(&ready, 1);
		one(p, stop);
		p = sep ? sep + strlen(SEP) : end;
	}
	return 0;
}

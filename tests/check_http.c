/*
 * admin/server.c, the libmicrohttpd server in front of the api, through a real
 * socket with the harness's HTTP client (libcurl): bodies by length and
 * chunked, 413 over max_body_bytes, percent-decoding of paths and queries
 * done once, Allow on 405, the operator page's headers.  The fixture is tests/api_fixture.h's.
 */
#include "tests/api_fixture.h"

#include "admin/server.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

/* ---- through a real socket ------------------------------------------------- */

#define ck_http(h, st, text)                                                                    \
	do {                                                                                    \
		ck_assert_msg((h).status == (st) && strcmp((h).body, (text)) == 0,              \
			      "got %ld %s, want %d %s", (h).status, (h).body, (st), (text));    \
		ck_assert_str_eq((h).ctype, "application/json");                                \
	} while (0)

/* The error code in an HTTP body. */
static void ck_http_err(const struct test_http_res *h, long status, const char *code, const char *field)
{
	cJSON *o = cJSON_Parse(h->body);
	cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
	cJSON *cd = cJSON_GetObjectItemCaseSensitive(e, "code"), *f = cJSON_GetObjectItemCaseSensitive(e, "field");

	ck_assert_msg(h->status == status, "status %ld, want %ld: %s", h->status, status, h->body);
	ck_assert_msg(cJSON_IsString(cd) && strcmp(cd->valuestring, code) == 0, "want code %s: %s", code, h->body);
	if (field)
		ck_assert_msg(cJSON_IsString(f) && strcmp(f->valuestring, field) == 0, "want field %s: %s", field,
			      h->body);
	ck_assert_str_eq(h->ctype, "application/json");
	cJSON_Delete(o);
}

/*
 * Send `req` as is on a new connection to 127.0.0.1:port and read until the
 * server closes it (or 2 s pass): what came back, in out (cut at cap - 1);
 * *closed 1 when the server closed the connection.
 */
static void raw_exchange(int port, const char *req, char *out, size_t cap, int *closed)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 2 };
	size_t len = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	ck_assert_int_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	*closed = 0;
	for (;;) {
		ssize_t n = recv(fd, out + len, cap - 1 - len, 0);

		if (n == 0)
			*closed = 1;
		if (n <= 0 || (len += (size_t)n) == cap - 1)
			break;
	}
	out[len] = '\0';
	close(fd);
}

START_TEST(test_server_smoke)
{
	struct server_config sc = { 0 };
	struct api_config ac = { 0 };
	struct server *s;
	struct test_http_res h;
	char err[256] = "", big[4096];
	int port;

	ck_assert_int_eq(curl_global_init(CURL_GLOBAL_DEFAULT), 0);
	ac.redis = &target;
	ac.timeout_ms = 5000;
	ac.prefix = PFX;
	ac.layouts = layouts;
	ac.nlayouts = nlayouts;
	ac.worker = w;
	ac.rules_ttl_ms = 100; /* as the daemon */
	sc.host = "127.0.0.1";
	sc.port = 0;
	sc.max_body_bytes = 1024;
	sc.max_connections = 8;
	sc.idle_timeout_s = 5;
	s = server_start(&sc, &ac, err, sizeof(err));
	ck_assert_msg(s != NULL, "server_start: %s", err);
	port = server_port(s);
	ck_assert_int_gt(port, 0);

	test_http(port, "GET", "/healthz", NULL, 0, &h);
	ck_http(h, 200, "{\"status\":\"ok\"}");
	test_http(port, "GET", "/readyz", NULL, 0, &h);
	ck_http(h, 200, ready_body());
	/* the operator page: HTML, checked again by caches at every load */
	test_http(port, "GET", "/", NULL, 0, &h);
	ck_assert_int_eq(h.status, 200);
	ck_assert_str_eq(h.ctype, "text/html; charset=utf-8");
	ck_assert_str_eq(h.cache_control, "no-cache");
	ck_assert_int_eq(strncmp(h.body, "<!doctype html>", 15), 0);
	test_http(port, "GET", "/healthz", NULL, 0, &h);
	ck_assert_str_eq(h.cache_control, ""); /* only the page says so */

	test_http(port, "PUT", "/v1/rules/api", API_BODY, 0, &h);
	ck_http(h, 201, API_ECHO);
	test_http(port, "GET", "/v1/rules/api", NULL, 0, &h);
	ck_http(h, 200, API_VIEW);
	test_http(port, "PUT", "/v1/rules/api", API_BODY, TEST_HTTP_CHUNKED, &h); /* same rule */
	ck_http(h, 200, API_ECHO);
	test_http(port, "PUT", "/v1/rules/api", "{\"match\":1}", 0, &h);
	ck_http_err(&h, 400, "invalid_rule", "match");

	/* the encoded slashes reach the API undecoded, and are decoded there once */
	test_http(port, "GET", "/v1/paths/%2Fapi%2Fusers", NULL, 0, &h);
	ck_http(h, 200, "{\"path\":\"/api/users\",\"algorithm\":\"leaky_bucket\",\"layout\":\"leaky_bucket\","
			"\"rule\":\"api\",\"matching_rule\":\"api\",\"mismatch\":false,\"recorded\":null,"
			"\"registered\":false,\"due_ms\":null,\"count\":0,\"capacity\":10,\"rate\":2,"
			"\"remaining\":10,\"reset_ms\":0,\"ttl_ms\":-2,\"shard\":839,\"daemon\":null}");
	test_http(port, "GET", "/v1/paths/%252Fapi", NULL, 0, &h); /* "%2Fapi" literally: no rule, no state */
	ck_http_err(&h, 404, "not_found", NULL);
	test_http(port, "GET", "/v1/paths/%zz", NULL, 0, &h);
	ck_http_err(&h, 400, "invalid_path", NULL);

	/* query arguments are decoded once */
	/* registered in their shards' due indexes (layout 2), with no state */
	freeReplyObject(test_cmd(c, "ZADD %s 1 /api/1", test_registry("leaky_bucket", "/api/1")));
	freeReplyObject(test_cmd(c, "ZADD %s 1 /api/2", test_registry("leaky_bucket", "/api/2")));
	freeReplyObject(test_cmd(c, "ZADD %s 1 /x", test_registry("leaky_bucket", "/x")));
	test_http(port, "GET", "/v1/paths?match=%2Fapi%2F*&count=1000&cursor=0", NULL, 0, &h);
	ck_assert_int_eq(h.status, 200);
	{
		cJSON *o = cJSON_Parse(h.body);

		ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "paths")), 2);
		ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "cursor")->valuestring, "0");
		cJSON_Delete(o);
	}
	freeReplyObject(test_cmd(c, "ZADD %s 1 %s", test_registry("sliding_log", "/a b+c"), "/a b+c"));
	test_http(port, "GET", "/v1/paths?match=%2Fa+b%2Bc&cursor=1-0-0", NULL, 0, &h); /* '+' is a space, %2B a '+' */
	ck_http(h, 200, "{\"paths\":[{\"path\":\"/a b+c\",\"algorithm\":\"sliding_log\",\"layout\":\"sliding_log\","
			"\"rule\":null,\"matching_rule\":null,\"mismatch\":null,\"recorded\":null,\"registered\":true,"
			"\"due_ms\":1,\"count\":0,\"limit\":null,\"remaining\":null,\"reset_ms\":null,\"ttl_ms\":-2}],"
			"\"cursor\":\"0\"}");
	test_http(port, "GET", "/v1/paths?count=abc", NULL, 0, &h);
	ck_http_err(&h, 400, "invalid_query", "count");
	/* a NUL byte would cut the glob there ("%00zzz": match everything): refused */
	test_http(port, "GET", "/v1/paths?match=%00zzz", NULL, 0, &h);
	ck_http_err(&h, 400, "invalid_query", "match");
	test_http(port, "GET", "/v1/paths?match=a&cursor=0%00", NULL, 0, &h);
	ck_http_err(&h, 400, "invalid_query", "cursor");
	test_http(port, "GET", "/v1/paths?count=5%00", NULL, 0, &h);
	ck_http_err(&h, 400, "invalid_query", "count");

	/* 405 carries Allow */
	test_http(port, "DELETE", "/healthz", NULL, 0, &h);
	ck_http_err(&h, 405, "method_not_allowed", NULL);
	ck_assert_str_eq(h.allow, "GET");
	test_http(port, "PATCH", "/v1/rules/api", NULL, 0, &h);
	ck_http_err(&h, 405, "method_not_allowed", NULL);
	ck_assert_str_eq(h.allow, "GET, PUT, DELETE");
	test_http(port, "GET", "/v2", NULL, 0, &h);
	ck_http_err(&h, 404, "not_found", NULL);

	/* bodies over max_body_bytes: 413, with Content-Length and chunked; nothing stored */
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, API_BODY, strlen(API_BODY));
	test_http(port, "PUT", "/v1/rules/big", big, 0, &h);
	ck_http_err(&h, 413, "payload_too_large", NULL);
	test_http(port, "PUT", "/v1/rules/big", big, TEST_HTTP_CHUNKED, &h);
	ck_http_err(&h, 413, "payload_too_large", NULL);
	test_http(port, "PUT", "/v1/rules/big", big, TEST_HTTP_NO_EXPECT, &h);
	ck_http_err(&h, 413, "payload_too_large", NULL);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s big", RULES_HASH), 0);
	/*
	 * Content-Length and Transfer-Encoding together (request smuggling: a
	 * proxy reading by length would pass the "body" on as a request): 400,
	 * the connection closed, the request after it never read
	 */
	{
		char got[4096];
		int closed;

		raw_exchange(port,
			     "PUT /v1/rules/smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n"
			     "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
			     "DELETE /v1/rules/api HTTP/1.1\r\nHost: x\r\n\r\n",
			     got, sizeof(got), &closed);
		ck_assert_msg(!strncmp(got, "HTTP/1.1 400 ", 13) && strstr(got, "\"code\":\"invalid_request\"") &&
				      strstr(got, "Connection: close"),
			      "%s", got);
		ck_assert_msg(!strstr(got + 13, "HTTP/1.1 "), "a second answer: %s", got);
		ck_assert_int_eq(closed, 1);
		ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s smuggled", RULES_HASH), 0);
		test_http(port, "GET", "/v1/rules/api", NULL, 0, &h);
		ck_assert_int_eq(h.status, 200); /* not deleted */
	}
	{
		/* the other framings a proxy may read otherwise: two lengths, a disguised or unknown coding */
		static const char *const heads[] = {
			"Content-Length: 0\r\nContent-Length: 44\r\n",
			"Transfer-Encoding : chunked\r\nContent-Length: 44\r\n",
			"Transfer-Encoding: gzip\r\n",
			"Transfer-Encoding: gzip, chunked\r\n",
		};

		for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
			char req[512], got[4096];
			int closed;

			snprintf(req, sizeof(req),
				 "GET /healthz HTTP/1.1\r\nHost: x\r\n%s\r\n"
				 "DELETE /v1/rules/api HTTP/1.1\r\nHost: x\r\n\r\n",
				 heads[i]);
			raw_exchange(port, req, got, sizeof(got), &closed);
			ck_assert_msg(!strncmp(got, "HTTP/1.1 400 ", 13) && strstr(got, "\"code\":\"invalid_request\"") &&
					      !strstr(got + 13, "HTTP/1.1 ") && closed,
				      "%s: %s", heads[i], got);
		}
		test_http(port, "GET", "/v1/rules/api", NULL, 0, &h);
		ck_assert_int_eq(h.status, 200); /* never deleted */
		/* chunked alone is fine */
		test_http(port, "PUT", "/v1/rules/chunked", API_BODY, TEST_HTTP_CHUNKED, &h);
		ck_assert_int_eq(h.status, 201);
	}
	/* exactly the limit is fine */
	big[1024] = '\0';
	test_http(port, "PUT", "/v1/rules/big", big, 0, &h);
	ck_assert_int_eq(h.status, 201);

	/* the server still serves after all that */
	test_http(port, "GET", "/v1/worker", NULL, 0, &h);
	ck_assert_int_eq(h.status, 200);
	test_http(port, "DELETE", "/v1/rules/api", NULL, 0, &h);
	ck_http(h, 200, "{\"deleted\":\"api\"}");
	/*
	 * The rule reads answered by the loop thread from the rules a request
	 * thread found current: a change through the API is seen by the next
	 * read at once, whichever thread made it and whichever answers; one made
	 * elsewhere (another daemon) within the rules' TTL.
	 */
	for (int i = 0; i < 20; i++) {
		char name[16], path[48];

		snprintf(name, sizeof(name), "r%d", i);
		snprintf(path, sizeof(path), "/v1/rules/%s", name);
		test_http(port, "PUT", path, API_BODY, 0, &h);
		ck_assert_int_eq(h.status, 201);
		test_http(port, "GET", path, NULL, 0, &h);
		ck_assert_msg(h.status == 200, "GET %s right after its PUT: %ld %s", path, h.status, h.body);
		test_http(port, "DELETE", path, NULL, 0, &h);
		ck_assert_int_eq(h.status, 200);
		test_http(port, "GET", "/v1/rules", NULL, 0, &h);
		ck_assert_msg(h.status == 200 && !strstr(h.body, name), "GET /v1/rules right after DELETE %s: %s", name,
			      h.body);
	}
	{
		struct api *other = api_new(&ac); /* another daemon's API on the same Redis */
		struct api_request rq = { .method = "PUT", .path = "/v1/rules/elsewhere", .body = API_BODY,
					  .body_len = strlen(API_BODY) };
		struct api_response rs;
		int seen = 0;

		ck_assert_ptr_nonnull(other);
		test_http(port, "GET", "/v1/rules", NULL, 0, &h); /* fresh now */
		api_handle(other, &rq, &rs);
		ck_assert_int_eq(rs.status, 201);
		cJSON_Delete(rs.body);
		api_free(other);
		for (int i = 0; i < 100 && !seen; i++) {
			test_http(port, "GET", "/v1/rules/elsewhere", NULL, 0, &h);
			seen = h.status == 200;
			if (!seen)
				usleep(20000);
		}
		ck_assert_msg(seen, "a rule stored by another daemon is not seen within 2 s");
	}
	{
		/* within the TTL the reads cost Redis nothing: 20 of them in far less than 100 ms, one check at
		 * most (of up to 3 commands; test_commands' own INFO adds one a primary) */
		long long before, after;

		test_http(port, "GET", "/v1/rules", NULL, 0, &h);
		before = test_commands(c);
		for (int i = 0; i < 20; i++) {
			test_http(port, "GET", "/v1/rules/elsewhere", NULL, 0, &h);
			ck_assert_int_eq(h.status, 200);
		}
		after = test_commands(c);
		ck_assert_msg(after - before <= 3 + test_nodes_of(c), "20 rule reads sent Redis %lld commands",
			      after - before - test_nodes_of(c));
	}

	server_stop(s);
	curl_global_cleanup();
}
END_TEST

static Suite *http_suite(void)
{
	Suite *s = suite_create("http");
	TCase *tc;

	tc = test_tcase(s, "server", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_server_smoke);
	return s;
}

int main(void)
{
	return test_run_suite(http_suite());
}

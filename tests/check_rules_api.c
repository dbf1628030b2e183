/*
 * The rules routes (admin/routes_rules.c) (GET/PUT/DELETE /v1/rules[/{name}]) over
 * the rules store in Redis (core/rulestore.c): create, replace, delete and
 * version, validation of bodies, the store after data loss or with keys of
 * another type, ETags and If-Match, the rules cache of an api with a TTL.
 * The fixture and the conventions are tests/api_fixture.h's.
 */
#include "tests/api_fixture.h"

/* ---- rules ------------------------------------------------------------------ */

START_TEST(test_rules_empty)
{
	get("/v1/rules");
	ck_res(200, "{\"rules\":[],\"version\":0}");
	get("/v1/rules/api");
	ck_err(404, "not_found", NULL);
}
END_TEST

/* A name no rule can have (bytes the URL may carry: not UTF-8, a NUL): 404, and the message
 * stays valid JSON text (the name is not echoed); a valid one is named. */
START_TEST(test_rule_404_names)
{
	const cJSON *msg;

	get("/v1/rules/%FF");
	ck_err(404, "not_found", NULL);
	msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res.json, "error"), "message");
	ck_assert_str_eq(cJSON_GetStringValue(msg),
			 "no rule by that name (a rule name is 1..64 characters of [A-Za-z0-9_.-])");
	call("DELETE", "/v1/rules/a%00b", NULL);
	ck_err(404, "not_found", NULL);
	msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res.json, "error"), "message");
	ck_assert_str_eq(cJSON_GetStringValue(msg),
			 "no rule by that name (a rule name is 1..64 characters of [A-Za-z0-9_.-])");
	get("/v1/rules/nope");
	msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res.json, "error"), "message");
	ck_assert_str_eq(cJSON_GetStringValue(msg), "no rule named \"nope\"");
}
END_TEST

START_TEST(test_rules_crud)
{
	char snap[512];

	/* create */
	put("/v1/rules/api", API_BODY);
	ck_res(201, API_ECHO);
	ck_assert_int_eq(rules_version(), 1);
	get("/v1/rules/api");
	ck_res(200, API_VIEW);
	get("/v1/rules");
	ck_res(200, "{\"rules\":[" API_ECHO "],\"version\":1}");

	/* a second rule, put before "api" in name order */
	put("/v1/rules/aaa", "{\"name\":\"aaa\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":1000}");
	ck_res(201, "{\"name\":\"aaa\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":1000}");
	put("/v1/rules/zz.top-1_", "{\"match\":\"/z\",\"algorithm\":\"fixed_window\",\"limit\":1,\"window_ms\":1}");
	ck_res(201, "{\"name\":\"zz.top-1_\",\"match\":\"/z\",\"algorithm\":\"fixed_window\",\"limit\":1,\"window_ms\":1}");
	ck_assert_int_eq(rules_version(), 3);
	get("/v1/rules");
	ck_res(200, "{\"rules\":["
		    "{\"name\":\"aaa\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":1000},"
		    API_ECHO ","
		    "{\"name\":\"zz.top-1_\",\"match\":\"/z\",\"algorithm\":\"fixed_window\",\"limit\":1,\"window_ms\":1}"
		    "],\"version\":3}");

	/* replace: 200, version counts it */
	put("/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":20,\"rate\":0.5}");
	ck_res(200, "{\"name\":\"api\",\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":20,\"rate\":0.5}");
	ck_assert_int_eq(rules_version(), 4);
	get("/v1/rules/api");
	ck_res(200, "{\"name\":\"api\",\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":20,\"rate\":0.5,\"decisions\":null}");

	/* identical PUT (other field order, name in the body): 200, version unchanged */
	rules_snapshot(snap, sizeof(snap));
	put("/v1/rules/api", "{\"rate\":0.5,\"capacity\":20,\"algorithm\":\"leaky_bucket\",\"match\":\"/api/*\",\"name\":\"api\"}");
	ck_res(200, "{\"name\":\"api\",\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":20,\"rate\":0.5}");
	{
		char again[512];

		rules_snapshot(again, sizeof(again));
		ck_assert_str_eq(snap, again);
	}
	get("/v1/rules");
	ck_assert_int_eq(jint("version"), 4);

	/* unknown */
	get("/v1/rules/nope");
	ck_err(404, "not_found", NULL);
	get("/v1/rules/bad%20name");
	ck_err(404, "not_found", NULL);

	/* delete */
	call("DELETE", "/v1/rules/api", NULL);
	ck_res(200, "{\"deleted\":\"api\"}");
	ck_assert_int_eq(rules_version(), 5);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s api", RULES_HASH), 0);
	get("/v1/rules/api");
	ck_err(404, "not_found", NULL);
	call("DELETE", "/v1/rules/api", NULL);
	ck_err(404, "not_found", NULL);
	get("/v1/rules");
	ck_assert_int_eq(cJSON_GetArraySize(jat("rules")), 2);
	ck_assert_str_eq(cJSON_GetArrayItem(jat("rules"), 0)->child->valuestring, "aaa");
	ck_assert_str_eq(cJSON_GetArrayItem(jat("rules"), 1)->child->valuestring, "zz.top-1_");
}
END_TEST

/*
 * BUG: DELETE of a rule that does not exist answers 404 but still bumps the
 * version counter (core/rulestore.c rulestore_delete: INCR is queued in the
 * MULTI whatever HDEL answers), contrary to rulestore.h ("version bumped only
 * then") and to the version "counting changes": every daemon reloads for nothing.
 */
START_TEST(test_bug_delete_missing_rule_keeps_version)
{
	put("/v1/rules/api", API_BODY);
	ck_res(201, API_ECHO);
	call("DELETE", "/v1/rules/api", NULL);
	ck_res(200, "{\"deleted\":\"api\"}");
	ck_assert_int_eq(rules_version(), 2);
	call("DELETE", "/v1/rules/api", NULL);
	ck_err(404, "not_found", NULL);
	call("DELETE", "/v1/rules/never-existed", NULL);
	ck_err(404, "not_found", NULL);
	ck_assert_msg(rules_version() == 2, "a 404 DELETE changed the rules version: 2 -> %lld", rules_version());
}
END_TEST

START_TEST(test_rules_every_algorithm)
{
	static const struct {
		const char *name, *body, *echo;
	} ok[] = {
		{ "lb", "{\"match\":\"/lb\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":0.25}",
		  "{\"name\":\"lb\",\"match\":\"/lb\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":0.25}" },
		{ "sl", "{\"window_ms\":60000,\"limit\":100,\"algorithm\":\"sliding_log\",\"match\":\"/sl/*\"}",
		  "{\"name\":\"sl\",\"match\":\"/sl/*\",\"algorithm\":\"sliding_log\",\"limit\":100,\"window_ms\":60000}" },
		{ "sc", "{\"match\":\"/sc/[ab]?\",\"algorithm\":\"sliding_counter\",\"limit\":100,\"window_ms\":60000,\"sub_windows\":60000}",
		  "{\"name\":\"sc\",\"match\":\"/sc/[ab]?\",\"algorithm\":\"sliding_counter\",\"limit\":100,\"window_ms\":60000,\"sub_windows\":60000}" },
		{ "fw", "{\"match\":\"/fw\",\"algorithm\":\"fixed_window\",\"limit\":9007199254740991,\"window_ms\":1}",
		  "{\"name\":\"fw\",\"match\":\"/fw\",\"algorithm\":\"fixed_window\",\"limit\":9007199254740991,\"window_ms\":1}" },
		{ "tb", "{\"rate\":1.5,\"capacity\":5,\"algorithm\":\"token_bucket\",\"match\":\"/tb\"}",
		  "{\"name\":\"tb\",\"match\":\"/tb\",\"algorithm\":\"token_bucket\",\"capacity\":5,\"rate\":1.5}" },
		{ "int-rate", "{\"match\":\"/i\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":100.0}",
		  "{\"name\":\"int-rate\",\"match\":\"/i\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":100}" },
		{ "exp", "{\"match\":\"/e\",\"algorithm\":\"leaky_bucket\",\"capacity\":1e3,\"rate\":2.5e-1}",
		  "{\"name\":\"exp\",\"match\":\"/e\",\"algorithm\":\"leaky_bucket\",\"capacity\":1000,\"rate\":0.25}" },
	};
	size_t n = sizeof(ok) / sizeof(ok[0]);

	for (size_t i = 0; i < n; i++) {
		char url[128];

		snprintf(url, sizeof(url), "/v1/rules/%s", ok[i].name);
		put(url, ok[i].body);
		ck_res(201, ok[i].echo);
		get(url);
		{
			char view[512]; /* the echo with the decisions, none summed yet */

			snprintf(view, sizeof(view), "%.*s,\"decisions\":null}", (int)strlen(ok[i].echo) - 1, ok[i].echo);
			ck_res(200, view);
		}
	}
	ck_assert_int_eq(rules_version(), (long long)n);
	get("/v1/rules");
	ck_assert_int_eq(cJSON_GetArraySize(jat("rules")), (int)n);
	ck_assert_int_eq(jint("version"), (long long)n);
}
END_TEST

/* Bodies PUT over an existing rule "api" (or to a new name); each must be a 400 that changes nothing. */
static const struct {
	const char *url, *body, *code, *field;
} bad_puts[] = {
	{ "/v1/rules/api", "", "invalid_json", NULL },
	{ "/v1/rules/api", "   ", "invalid_json", NULL },
	{ "/v1/rules/api", "not json", "invalid_json", NULL },
	{ "/v1/rules/api", "{\"match\":\"/api/*\"", "invalid_json", NULL },
	{ "/v1/rules/api", API_BODY " x", "invalid_json", NULL },
	{ "/v1/rules/api", API_BODY "{}", "invalid_json", NULL },
	{ "/v1/rules/api", API_BODY ",", "invalid_json", NULL },
	{ "/v1/rules/api", "[" API_BODY "]", "invalid_rule", NULL },
	{ "/v1/rules/api", "null", "invalid_rule", NULL },
	{ "/v1/rules/api", "10", "invalid_rule", NULL },
	{ "/v1/rules/api", "\"rule\"", "invalid_rule", NULL },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2,\"burst\":5}", "invalid_rule", "burst" },
	{ "/v1/rules/api", "{\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}", "invalid_rule", "match" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"capacity\":10,\"rate\":2}", "invalid_rule", "algorithm" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"rate\":2}", "invalid_rule", "capacity" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10}", "invalid_rule", "rate" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky\",\"capacity\":10,\"rate\":2}", "invalid_rule", "algorithm" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"LEAKY_BUCKET\",\"capacity\":10,\"rate\":2}", "invalid_rule", "algorithm" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":7,\"capacity\":10,\"rate\":2}", "invalid_rule", "algorithm" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":0,\"rate\":2}", "invalid_rule", "capacity" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":-1,\"rate\":2}", "invalid_rule", "capacity" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":1.5,\"rate\":2}", "invalid_rule", "capacity" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":\"10\",\"rate\":2}", "invalid_rule", "capacity" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":null,\"rate\":2}", "invalid_rule", "capacity" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":true,\"rate\":2}", "invalid_rule", "capacity" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":[10],\"rate\":2}", "invalid_rule", "capacity" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":1e300,\"rate\":2}", "invalid_rule", "capacity" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":18014398509481984,\"rate\":2}", "invalid_rule", "capacity" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":1e999,\"rate\":2}", "invalid_rule", "capacity" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0}", "invalid_rule", "rate" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":-1}", "invalid_rule", "rate" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":\"2\"}", "invalid_rule", "rate" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":1e300}", "invalid_rule", "rate" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2,\"limit\":5}", "invalid_rule", "limit" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2,\"window_ms\":5}", "invalid_rule", "window_ms" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":1000,\"capacity\":10}", "invalid_rule", "capacity" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":1000,\"sub_windows\":10}", "invalid_rule", "sub_windows" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"sliding_log\",\"limit\":5}", "invalid_rule", "window_ms" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":0}", "invalid_rule", "window_ms" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"fixed_window\",\"limit\":0,\"window_ms\":1000}", "invalid_rule", "limit" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"sliding_counter\",\"limit\":5,\"window_ms\":10,\"sub_windows\":11}", "invalid_rule", "sub_windows" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"sliding_counter\",\"limit\":5,\"window_ms\":10,\"sub_windows\":0}", "invalid_rule", "sub_windows" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"sliding_counter\",\"limit\":5,\"window_ms\":60000,\"sub_windows\":7}", "invalid_rule", "sub_windows" },
	/* issue 9's report, exactly */
	{ "/v1/rules/search", "{\"match\":\"/search\",\"algorithm\":\"sliding_counter\",\"limit\":5,\"window_ms\":1000,\"sub_windows\":3}", "invalid_rule", "sub_windows" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"sliding_counter\",\"limit\":5,\"window_ms\":10}", "invalid_rule", "sub_windows" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"token_bucket\",\"capacity\":5,\"rate\":0}", "invalid_rule", "rate" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"token_bucket\",\"capacity\":5,\"rate\":1,\"mode\":\"observe\"}", "invalid_rule", "mode" },
	{ "/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"token_bucket\",\"capacity\":5,\"rate\":1,\"mode\":true}", "invalid_rule", "mode" },
	{ "/v1/rules/api", "{\"name\":\"other\",\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}", "invalid_rule", "name" },
	{ "/v1/rules/api", "{\"name\":5,\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}", "invalid_rule", "name" },
	{ "/v1/rules/api", "{\"match\":\"\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}", "invalid_rule", "match" },
	/* 33 elements after a '*': a match's time in the client scripts grows with them (break test: 1 s a call) */
	{ "/v1/rules/api", "{\"match\":\"/g/*?????????????????????????????????\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":1}", "invalid_rule", "match" },
	{ "/v1/rules/api", "{\"match\":[\"/api/*\"],\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}", "invalid_rule", "match" },
	{ "/v1/rules/new", "{\"match\":\"/new\",\"algorithm\":\"leaky_bucket\",\"capacity\":0,\"rate\":2}", "invalid_rule", "capacity" },
	{ "/v1/rules/new", "{\"name\":\"api\",\"match\":\"/new\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}", "invalid_rule", "name" },
	{ "/v1/rules/bad%20name", API_BODY, "invalid_rule", "name" },
	{ "/v1/rules/bad%2Fname", API_BODY, "invalid_rule", "name" },
	{ "/v1/rules/b%00", API_BODY, "invalid_rule", "name" },
	{ "/v1/rules/%C3%A9", API_BODY, "invalid_rule", "name" },
	{ "/v1/rules/a2345678901234567890123456789012345678901234567890123456789012345", API_BODY, "invalid_rule", "name" },
	{ "/v1/rules/bad%20name", "{\"name\":\"bad name\",\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}", "invalid_rule", "name" },
};

START_TEST(test_put_invalid)
{
	const char *url = bad_puts[_i].url, *body = bad_puts[_i].body;
	char before[512], after[512];

	put_ok("api", API_BODY);
	rules_snapshot(before, sizeof(before));
	ck_assert_str_eq(before, "1/1/" API_ECHO);
	put(url, body);
	ck_err(400, bad_puts[_i].code, bad_puts[_i].field);
	rules_snapshot(after, sizeof(after));
	ck_assert_msg(strcmp(before, after) == 0, "PUT %s %s changed Redis: %s -> %s", url, body, before, after);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", RULES_HASH), 1);
	get("/v1/rules");
	ck_res(200, "{\"rules\":[" API_ECHO "],\"version\":1}");
}
END_TEST

START_TEST(test_put_body_with_nul)
{
	static const char body[] = API_BODY "\0garbage";
	char before[512], after[512];

	rules_snapshot(before, sizeof(before));
	call_on(api, "PUT", "/v1/rules/api", body, sizeof(body) - 1, NULL, NULL, NULL);
	ck_err(400, "invalid_json", NULL);
	rules_snapshot(after, sizeof(after));
	ck_assert_str_eq(before, after);
	/* the body is taken by length, not up to a NUL */
	call_on(api, "PUT", "/v1/rules/api", API_BODY "junk", strlen(API_BODY), NULL, NULL, NULL);
	ck_res(201, API_ECHO);
}
END_TEST

/*
 * BUG: 9007199254740993 (2^53 + 1) is read by cJSON as the double 2^53, which
 * core/jsonv.c jsonv_int accepts (`d > 2^53` is false): the rule is stored with
 * capacity 9007199254740992, a value the client never sent.  DESIGN.md: "anything
 * larger [than 2^53] ... is a 400 that names the field, and nothing is stored".
 */
START_TEST(test_bug_capacity_above_2p53_accepted)
{
	static const char *const bodies[] = {
		"{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":9007199254740993e0,\"rate\":2}",
		"{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":9007199254740993,\"rate\":2}",
	};

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		char before[512], after[512];

		rules_snapshot(before, sizeof(before));
		put("/v1/rules/big", bodies[i]);
		ck_err(400, "invalid_rule", "capacity");
		rules_snapshot(after, sizeof(after));
		ck_assert_str_eq(before, after);
		ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s big", RULES_HASH), 0);
	}
}
END_TEST

/*
 * BUG: a rule the API accepts must be usable.  capacity 2^53 passes
 * core/jsonv.c jsonv_int, but every Lua script takes integers "from 1 to
 * 2^53-1" only, so GET /v1/paths/{path} under that rule gets an error reply from
 * leaky_bucket_state.lua and answers 500 (and clients cannot use the rule).
 * Either fix (reject >= 2^53 in the API, or accept 2^53 in the scripts) passes.
 */
START_TEST(test_bug_capacity_2p53_unusable)
{
	put("/v1/rules/big", "{\"match\":\"/big\",\"algorithm\":\"leaky_bucket\",\"capacity\":9007199254740992,\"rate\":2}");
	if (res.status == 400) {
		ck_err(400, "invalid_rule", "capacity");
		return;
	}
	ck_assert_int_eq(res.status, 201);
	get("/v1/paths/%2Fbig");
	ck_assert_msg(res.status == 200, "rule accepted with capacity 2^53, then GET /v1/paths/%%2Fbig: %d %s",
		      res.status, res.text);
}
END_TEST

/*
 * A JSON string with an escaped NUL (\u0000) would be cut at the NUL by cJSON and
 * the rest silently dropped (match "/a\u0000b" stored as "/a"): such a body is
 * refused as invalid JSON; a field given twice is refused too.
 */
START_TEST(test_string_with_nul_escape)
{
	char before[512], after[512];

	rules_snapshot(before, sizeof(before));
	put("/v1/rules/api", "{\"match\":\"/a\\u0000b\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}");
	ck_err(400, "invalid_json", NULL);
	put("/v1/rules/api", "{\"name\":\"api\\u0000junk\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}");
	ck_err(400, "invalid_json", NULL);
	/* an escaped backslash before "u0000" is just text */
	put("/v1/rules/api", "{\"match\":\"/a\\\\u0000b\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}");
	ck_assert_int_eq(res.status, 201);
	freeReplyObject(test_cmd(c, "FLUSHALL"));
	/* a field given twice is refused, not first-wins */
	put("/v1/rules/api", "{\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"capacity\":0,\"rate\":2}");
	ck_err(400, "invalid_rule", "capacity");
	rules_snapshot(after, sizeof(after));
	ck_assert_str_eq(before, after);
}
END_TEST

/*
 * The rules store after data loss: FLUSHALL, then a new rule reaches version 1
 * again.  The api's cache must see the new epoch and reload, not serve the old
 * rule at the "same" version.
 */
START_TEST(test_rules_epoch_after_flush)
{
	put_ok("old", "{\"match\":\"/old/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":1}");
	get("/v1/rules");
	ck_assert_int_eq(jint("version"), 1);
	freeReplyObject(test_cmd(c, "FLUSHALL"));
	put_ok("new", "{\"match\":\"/new/*\",\"algorithm\":\"sliding_log\",\"limit\":10,\"window_ms\":1000}");
	get("/v1/rules");
	ck_res(200, "{\"rules\":[{\"name\":\"new\",\"match\":\"/new/*\",\"algorithm\":\"sliding_log\",\"limit\":10,"
		    "\"window_ms\":1000}],\"version\":1}");
	get("/v1/rules/old");
	ck_err(404, "not_found", NULL);
}
END_TEST

/* Keys of sluice's with another type or value: the change is refused before any write. */
START_TEST(test_rules_store_corrupt)
{
	freeReplyObject(test_cmd(c, "SET sluice:rules:version abc"));
	put("/v1/rules/api", API_BODY);
	ck_err(500, "redis_refused", NULL);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS sluice:rules"), 0);
	freeReplyObject(test_cmd(c, "FLUSHALL"));
	freeReplyObject(test_cmd(c, "SET sluice:rules oops"));
	put("/v1/rules/api", API_BODY);
	ck_err(500, "redis_refused", NULL);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS sluice:rules:version"), 0);
	call("DELETE", "/v1/rules/api", NULL);
	ck_err(500, "redis_refused", NULL);
}
END_TEST

/* ---- ETag / If-Match ------------------------------------------------------------ */

/* mode: "shadow" round-trips through PUT and GET; "enforce" is stored as a rule without mode (same ETag). */
START_TEST(test_rule_mode)
{
	char e0[24];

	put_ok("api", API_BODY);
	memcpy(e0, res.etag, sizeof(e0));
	put("/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2,\"mode\":\"enforce\"}");
	ck_res(200, API_ECHO);
	ck_assert_str_eq(res.etag, e0);
	ck_assert_int_eq(rules_version(), 1); /* the same rule: nothing stored */
	put("/v1/rules/api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2,\"mode\":\"shadow\"}");
	ck_assert_int_eq(res.status, 200);
	ck_assert_str_ne(res.etag, e0);
	ck_assert_int_eq(rules_version(), 2);
	get("/v1/rules/api");
	ck_assert_str_eq(jstr("mode"), "shadow");
	ck_assert_str_eq(jstr("algorithm"), "leaky_bucket");
}
END_TEST

START_TEST(test_rule_etags)
{
	const char *v2 = "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":20,\"rate\":2}";
	const char *v3 = "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":30,\"rate\":2}";
	char e1[24], e2[24], list[64], before[512], after[512];

	/* If-Match "*" needs the rule to exist */
	next_if_match = "*";
	put("/v1/rules/api", API_BODY);
	ck_err(412, "precondition_failed", NULL);
	put_ok("api", API_BODY);
	ck_assert_int_eq(strlen(res.etag), 18); /* "<16 hex digits>" */
	memcpy(e1, res.etag, sizeof(e1));
	get("/v1/rules/api");
	ck_assert_str_eq(res.etag, e1);

	next_if_match = e1;
	put("/v1/rules/api", v2);
	ck_assert_int_eq(res.status, 200);
	memcpy(e2, res.etag, sizeof(e2));
	ck_assert_str_ne(e1, e2);

	/* a writer still holding e1 is refused, and nothing changes */
	rules_snapshot(before, sizeof(before));
	next_if_match = e1;
	put("/v1/rules/api", v3);
	ck_err(412, "precondition_failed", NULL);
	next_if_match = e1;
	call("DELETE", "/v1/rules/api", NULL);
	ck_err(412, "precondition_failed", NULL);
	rules_snapshot(after, sizeof(after));
	ck_assert_str_eq(before, after);

	/* one of several tags */
	snprintf(list, sizeof(list), "\"0000000000000000\", %s", e2);
	next_if_match = list;
	put("/v1/rules/api", v3);
	ck_assert_int_eq(res.status, 200);
	get("/v1/rules/api");
	next_if_match = res.etag[0] ? strcpy(e1, res.etag) : NULL;
	call("DELETE", "/v1/rules/api", NULL);
	ck_res(200, "{\"deleted\":\"api\"}");
}
END_TEST

/* The rules cache of an api with a TTL: its own changes are seen at once, others' after the TTL. */
START_TEST(test_rules_cache)
{
	struct api_config ac = { .redis = &target, .timeout_ms = 5000, .prefix = PFX, .layouts = layouts,
				 .nlayouts = nlayouts, .worker = w, .rules_ttl_ms = 300 };
	struct api *a = api_new(&ac);
	char first[256];

	call_on(a, "GET", "/v1/rules", NULL, 0, NULL, NULL, NULL);
	ck_res(200, "{\"rules\":[],\"version\":0}");
	call_on(a, "PUT", "/v1/rules/api", API_BODY, strlen(API_BODY), NULL, NULL, NULL);
	ck_assert_int_eq(res.status, 201);
	call_on(a, "GET", "/v1/rules", NULL, 0, NULL, NULL, NULL); /* its own change: at once */
	ck_assert_int_eq(jint("version"), 1);
	snprintf(first, sizeof(first), "%s", res.text);
	call_on(a, "GET", "/v1/rules", NULL, 0, NULL, NULL, NULL); /* the kept body, same bytes */
	ck_assert_str_eq(res.text, first);
	/* a change through another daemon (here: the test's api) shows after the TTL */
	put_ok("other", "{\"match\":\"/o\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1}");
	call_on(a, "GET", "/v1/rules", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(jint("version"), 1);
	/* past the 300 ms TTL: the passing of time is what this test is about, there is
	 * no state to wait for (polling would accept any TTL up to its deadline) */
	test_sleep_ms(350);
	call_on(a, "GET", "/v1/rules", NULL, 0, NULL, NULL, NULL);
	ck_assert_int_eq(jint("version"), 2);
	ck_assert_int_eq(cJSON_GetArraySize(jat("rules")), 2);
	api_free(a);
}
END_TEST

static Suite *rules_api_suite(void)
{
	Suite *s = suite_create("rules_api");
	TCase *tc;

	tc = test_tcase(s, "rules", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_rules_empty);
	tcase_add_test(tc, test_rules_crud);
	tcase_add_test(tc, test_rule_404_names);
	tcase_add_test(tc, test_rules_every_algorithm);
	tcase_add_loop_test(tc, test_put_invalid, 0, TEST_N(bad_puts));
	tcase_add_test(tc, test_put_body_with_nul);
	tcase_add_test(tc, test_bug_delete_missing_rule_keeps_version);
	tcase_add_test(tc, test_bug_capacity_above_2p53_accepted);
	tcase_add_test(tc, test_bug_capacity_2p53_unusable);
	tcase_add_test(tc, test_string_with_nul_escape);
	tcase_add_test(tc, test_rules_epoch_after_flush);
	tcase_add_test(tc, test_rules_store_corrupt);

	tc = test_tcase(s, "etags", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_rule_etags);
	tcase_add_test(tc, test_rule_mode);
	tcase_add_test(tc, test_rules_cache);
	return s;
}

int main(void)
{
	return test_run_suite(rules_api_suite());
}

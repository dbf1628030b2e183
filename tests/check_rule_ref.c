/*
 * Rule references in the five client scripts (ARGV[4]: a rule name or "*";
 * lua/lib/rule.lua, DESIGN.md "Rules"), against the harness's redis-server.
 * The shard's rules copy <prefix>{k}:rules is written by hand here, in the
 * format the daemon writes: field <name> = the rule's JSON, ":version" =
 * "<epoch>:<version>".  Every test runs for each algorithm (a loop test over
 * `algos`), in virtual time (explicit now).
 */
#include <stdlib.h>
#include <unistd.h>

#include "tests/script_fixture.h"

static const enum algo algos[] = { FW, SL, SC, TB, LB };

/* The JSON of a rule of algorithm al; a, b, s as acquire() takes them;
 * extra: more members ("" or ",\"mode\":\"shadow\""). */
static const char *rule_json(enum algo al, const char *name, const char *match, const char *a, const char *b,
			     const char *s, const char *extra)
{
	static char buf[8][512];
	static unsigned next;
	char *out = buf[next++ % 8];
	const char *f1 = al == TB || al == LB ? "capacity" : "limit";
	const char *f2 = al == TB || al == LB ? "rate" : "window_ms";

	if (al == SC)
		snprintf(out, sizeof(buf[0]),
			 "{\"name\":\"%s\",\"match\":\"%s\",\"algorithm\":\"%s\",\"%s\":%s,\"%s\":%s,\"sub_windows\":%s%s}",
			 name, match, algo_name(al), f1, a, f2, b, s, extra);
	else
		snprintf(out, sizeof(buf[0]), "{\"name\":\"%s\",\"match\":\"%s\",\"algorithm\":\"%s\",\"%s\":%s,\"%s\":%s%s}",
			 name, match, algo_name(al), f1, a, f2, b, extra);
	return out;
}

/* Field `name` of path's shard copy = json (raw text). */
static void put_rule(const char *path, const char *name, const char *json)
{
	freeReplyObject(test_cmd(c, "HSET %s %s %s", test_shard_key("", path, "rules"), name, json));
}

static void put_version(const char *path, const char *version)
{
	freeReplyObject(test_cmd(c, "HSET %s :version %s", test_shard_key("", path, "rules"), version));
}

/* A client call by reference: ARGV path, n ("" when NULL), now, ref and no parameters. */
static redisReply *by_ref(enum algo al, const char *p, const char *ref, const char *n, long long now)
{
	char meta[48];
	const char *argv[9];

	snprintf(meta, sizeof(meta), "%s_meta", algo_name(al));
	argv[0] = test_key(p, algo_name(al));
	argv[1] = test_key(p, meta);
	argv[2] = test_registry(algo_name(al), p);
	argv[3] = test_shard_key("", p, "rules");
	argv[4] = test_shard_key("", p, "stats");
	argv[5] = p;
	argv[6] = n ? n : "";
	argv[7] = num(now);
	argv[8] = ref;
	return test_script_argv(c, TEST_EVAL, algo_name(al), 5, 9, argv, NULL);
}

/* The key whose hash records the parameters, the rule and the "*" cache. */
static const char *record_key(enum algo al, const char *p)
{
	char meta[48];

	if (al == LB || al == SL) {
		snprintf(meta, sizeof(meta), "%s_meta", algo_name(al));
		return test_key(p, meta);
	}
	return test_key(p, algo_name(al));
}

/* HGET of the recording hash as text ("nil" when absent). */
static void ck_recorded(enum algo al, const char *p, const char *field, const char *want)
{
	redisReply *r = test_cmd(c, "HGET %s %s", record_key(al, p), field);
	const char *got = r->type == REDIS_REPLY_STRING ? r->str : "nil";

	ck_assert_msg(strcmp(got, want) == 0, "%s %s: %s is \"%s\", want \"%s\"", algo_name(al), p, field, got, want);
	freeReplyObject(r);
}

/* Parameters per algorithm: a small limit or capacity of 3 over about a second. */
static void params(enum algo al, const char **a, const char **b, const char **s)
{
	*a = "3";
	*b = al == TB || al == LB ? "2.5" : "1000";
	*s = al == SC ? "4" : NULL;
}

/* r is a client reply {allowed, ...} with this allowed and rule; frees r. */
#define ck_allowed(r, allowed, rule) check_allowed(__FILE__, __LINE__, (r), (allowed), (rule))
static void check_allowed(const char *file, int line, redisReply *r, long long allowed, const char *rule)
{
	char got[256];

	ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 5 && r->element[0]->type == REDIS_REPLY_INTEGER &&
			      r->element[0]->integer == allowed && r->element[4]->type == REDIS_REPLY_STRING &&
			      strcmp(r->element[4]->str, rule) == 0,
		      "%s:%d: reply %s, want allowed %lld, rule \"%s\"", file, line, test_show_reply(r, got, sizeof(got)),
		      allowed, rule);
	freeReplyObject(r);
}

/* Element 1 (remaining) of a client reply; frees r. */
static long long remaining_of(redisReply *r)
{
	long long v;

	ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 5, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "?");
	v = r->element[1]->integer;
	freeReplyObject(r);
	return v;
}

/* Field `field` of path's shard stats hash as an integer, -1 when absent. */
static long long stat_of(const char *path, const char *field)
{
	redisReply *r = test_cmd(c, "HGET %s %s", test_shard_key("", path, "stats"), field);
	long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;

	freeReplyObject(r);
	return v;
}

#define ck_stat(path, field, want)                                                                     \
	do {                                                                                           \
		long long got_ = stat_of((path), (field));                                             \
		ck_assert_msg(got_ == (want), "%s: stats %s is %lld, want %lld", algo_name(al), (field), \
			      got_, (long long)(want));                                                \
	} while (0)

/* ---- by name: exactly the replies of the same calls with explicit numbers ---------- */

START_TEST(test_name_same_as_explicit)
{
	enum algo al = algos[_i];
	const char *a, *b, *s;
	static const struct {
		long long now;
		const char *n;
	} calls[] = { { 1000, NULL }, { 1000, "2" }, { 1000, NULL }, { 1100, NULL }, { 1300, "4" },
		      { 1450, NULL }, { 1999, "2" }, { 2600, NULL }, { 2600, "3" }, { 9000, NULL } };
	char got[256], want[256];

	params(al, &a, &b, &s);
	put_rule("/named", "api", rule_json(al, "api", "/named", a, b, s ? s : "0", ""));
	put_version("/named", "1:1");
	for (int i = 0; i < TEST_N(calls); i++) {
		redisReply *e = acquire(al, "/explicit", a, b, s, calls[i].n, num(calls[i].now));
		redisReply *r = by_ref(al, "/named", "api", calls[i].n, calls[i].now);

		ck_assert_msg(e->type == REDIS_REPLY_ARRAY && e->elements == 5, "explicit: %s",
			      test_show_reply(e, got, sizeof(got)));
		ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 5 && strcmp(r->element[4]->str, "api") == 0,
			      "%s call %d by name: %s", algo_name(al), i, test_show_reply(r, got, sizeof(got)));
		for (int j = 0; j < 4; j++)
			ck_assert_msg(r->element[j]->integer == e->element[j]->integer,
				      "%s call %d: by name %s, explicit %s", algo_name(al), i,
				      test_show_reply(r, got, sizeof(got)), test_show_reply(e, want, sizeof(want)));
		ck_assert_int_eq(due_of(al, "/named"), due_of(al, "/explicit"));
		freeReplyObject(e);
		freeReplyObject(r);
	}
	/* recorded: the rule's parameters, as the explicit ones, and its name */
	ck_recorded(al, "/named", al == TB || al == LB ? "capacity" : "limit", a);
	ck_recorded(al, "/named", al == TB || al == LB ? "rate" : "window_ms", b);
	ck_recorded(al, "/named", "rule", "api");
	ck_recorded(al, "/explicit", "rule", "");
	ck_recorded(al, "/named", "rv", "nil"); /* a name caches nothing */
	/* ARGV[5..] all "" is the same as absent */
	{
		char meta[48];
		const char *argv[12];

		snprintf(meta, sizeof(meta), "%s_meta", algo_name(al));
		argv[0] = test_key("/named", algo_name(al));
		argv[1] = test_key("/named", meta);
		argv[2] = test_registry(algo_name(al), "/named");
		argv[3] = test_shard_key("", "/named", "rules");
		argv[4] = test_shard_key("", "/named", "stats");
		argv[5] = "/named", argv[6] = "", argv[7] = "9000", argv[8] = "api";
		argv[9] = argv[10] = argv[11] = "";
		ck_allowed(test_script_argv(c, TEST_EVAL, algo_name(al), 5, al == SC ? 12 : 11, argv, NULL), 1, "api");
	}
}
END_TEST

/* ---- "*": the daemon's precedence ------------------------------------------------ */

START_TEST(test_star_precedence)
{
	enum algo al = algos[_i];
	const char *sub = al == SC ? "1" : NULL;
	static const char *paths[] = { "/api/users", "/api/usx", "/api/v", "/x/y", "/q" };
	static const struct {
		const char *name, *match, *limit;
	} rules[] = {
		{ "z_exact", "/api/users", "1" }, /* exact wins over every glob, whatever the name */
		{ "a_short", "/api/*", "2" },	  /* literal prefix 5 */
		{ "m_long", "/api/us*", "3" },	  /* literal prefix 7 */
		{ "b_same", "/x/*", "4" },	  /* equal prefixes: the smaller name wins */
		{ "a_same", "/x/?", "5" },
		{ "Z_case", "/x/*", "6" },	  /* by bytes, 'Z' < 'a' */
	};
	static const char *want[] = { "z_exact", "m_long", "a_short", "Z_case", "none" };

	for (int p = 0; p < TEST_N(paths); p++) {
		for (int r = 0; r < TEST_N(rules); r++)
			put_rule(paths[p], rules[r].name,
				 rule_json(al, rules[r].name, rules[r].match, rules[r].limit, "1000", sub ? sub : "0", ""));
		put_version(paths[p], "1:7");
	}
	for (int p = 0; p < TEST_N(paths); p++) {
		redisReply *r = by_ref(al, paths[p], "*", NULL, 5000);
		char got[256];

		ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 5 && strcmp(r->element[4]->str, want[p]) == 0,
			      "%s %s: %s, want rule %s", algo_name(al), paths[p], test_show_reply(r, got, sizeof(got)),
			      want[p]);
		ck_assert_int_eq(r->element[0]->integer, 1);
		freeReplyObject(r);
		if (strcmp(want[p], "none") != 0) {
			ck_recorded(al, paths[p], "rule", want[p]);
			ck_recorded(al, paths[p], "rv", "1:7");
			ck_recorded(al, paths[p], "rn", want[p]);
		}
	}
}
END_TEST

/* ---- "*" with no match: admitted, nothing stored ----------------------------------- */

START_TEST(test_star_no_match_stores_nothing)
{
	enum algo al = algos[_i];
	char *before;

	/* no copy at all */
	before = test_snapshot(c);
	test_check_client(__FILE__, __LINE__, by_ref(al, "/free", "*", NULL, 1000), TEST_INTS(1, -1, 0, 0), "none");
	ck_snapshot_same(before);
	free(before);
	ck_assert_int_eq(test_dbsize(c), 0);
	/* a copy whose rules match other paths; many calls, a cost above any limit */
	put_rule("/free", "api", rule_json(al, "api", "/api/*", "1", "1000", "1", ""));
	put_version("/free", "3:1");
	before = test_snapshot(c);
	for (int i = 0; i < 5; i++)
		test_check_client(__FILE__, __LINE__, by_ref(al, "/free", "*", "50", 1000 + i), TEST_INTS(1, -1, 0, 0),
				  "none");
	ck_snapshot_same(before);
	free(before);
	ck_assert_int_eq(test_dbsize(c), 1);
	ck_assert_int_eq(due_of(al, "/free"), -1);
}
END_TEST

/* ---- a name that does not exist: an error naming it, nothing written ------------- */

START_TEST(test_unknown_name_writes_nothing)
{
	enum algo al = algos[_i];
	char *before, want[160];

	put_rule("/v", "api", rule_json(al, "api", "/v", "3", "1000", "1", ""));
	put_version("/v", "1:1");
	ck_allowed(by_ref(al, "/v", "api", NULL, 1000), 1, "api");
	before = test_snapshot(c);
	snprintf(want, sizeof(want), "ERR sluice: no rule \"nope\" (in %s; is sluiced running?)",
		 test_shard_key("", "/v", "rules"));
	ck_error(by_ref(al, "/v", "nope", NULL, 1100), want);
	ck_error(by_ref(al, "/new", "nope", NULL, 1100), "ERR sluice: no rule \"nope\" (in sluice:{");
	ck_snapshot_same(before);
	free(before);
}
END_TEST

/* ---- a rule edited in the copy applies from the next call -------------------------- */

START_TEST(test_rule_edit_applies_next_call)
{
	enum algo al = algos[_i];
	const char *b = al == TB || al == LB ? "1" : "60000";
	const char *s = "1";
	const char *ref[] = { "api", "*" };

	for (int k = 0; k < 2; k++) {
		const char *p = k ? "/star" : "/name";
		char *before;

		put_rule(p, "api", rule_json(al, "api", "/*", "4", b, s, ""));
		put_version(p, "1:1");
		for (int i = 0; i < 4; i++)
			ck_allowed(by_ref(al, p, ref[k], NULL, 1000), 1, "api");
		ck_allowed(by_ref(al, p, ref[k], NULL, 1000), 0, "api");
		/* lowered to 2: denied while 4 count, remaining 0 */
		put_rule(p, "api", rule_json(al, "api", "/*", "2", b, s, ""));
		put_version(p, "1:2");
		before = test_snapshot_except(c, test_shard_key("", p, "stats"));
		ck_assert_int_eq(remaining_of(by_ref(al, p, ref[k], NULL, 1000)), 0);
		ck_allowed(by_ref(al, p, ref[k], NULL, 1000), 0, "api");
		/* a denial writes nothing (the leaky bucket's, its leak) but its count */
		if (al != LB)
			ck_snapshot_same_except(before, test_shard_key("", p, "stats"));
		free(before);
		ck_stat(p, "api:allowed", 4);
		ck_stat(p, "api:denied", 3);
		/* raised to 6: admitted at once, twice, then denied (a token bucket's tokens are
		 * as they were, none: it refills up to the new capacity, 6 after 9 s at 1/s) */
		put_rule(p, "api", rule_json(al, "api", "/*", "6", b, s, ""));
		put_version(p, "1:3");
		if (al == TB) {
			ck_allowed(by_ref(al, p, ref[k], NULL, 1000), 0, "api");
			ck_assert_int_eq(remaining_of(by_ref(al, p, ref[k], NULL, 10000)), 5);
		} else {
			ck_allowed(by_ref(al, p, ref[k], NULL, 1000), 1, "api");
			ck_allowed(by_ref(al, p, ref[k], NULL, 1000), 1, "api");
			ck_allowed(by_ref(al, p, ref[k], NULL, 1000), 0, "api");
		}
		ck_recorded(al, p, al == TB || al == LB ? "capacity" : "limit", "6");
	}
}
END_TEST

/* The leaky bucket's lowered capacity denies until the level is below it. */
START_TEST(test_lb_lowered_capacity_denies_until_below)
{
	put_rule("/lb", "api", rule_json(LB, "api", "/lb", "4", "1", "", ""));
	put_version("/lb", "1:1");
	for (int i = 0; i < 4; i++)
		ck_allowed(by_ref(LB, "/lb", "api", NULL, 1000), 1, "api");
	put_rule("/lb", "api", rule_json(LB, "api", "/lb", "2", "1", "", ""));
	put_version("/lb", "1:2");
	/* level 4 at 1000, leaking 1/s: 3 at 2000, 2 at 3000 (2 + 1 > 2), 1 at 4000 */
	test_check_client(__FILE__, __LINE__, by_ref(LB, "/lb", "api", NULL, 2000), TEST_INTS(0, 0, 2000, 1000), "api");
	test_check_client(__FILE__, __LINE__, by_ref(LB, "/lb", "api", NULL, 3000), TEST_INTS(0, 0, 1000, 1000), "api");
	test_check_client(__FILE__, __LINE__, by_ref(LB, "/lb", "api", NULL, 4000), TEST_INTS(1, 0, 0, 1000), "api");
}
END_TEST

/* ---- the "*" cache: kept while :version stays, dropped when it changes -------------- */

START_TEST(test_star_cache_follows_version)
{
	enum algo al = algos[_i];
	const char *b = al == TB || al == LB ? "1" : "60000";

	put_rule("/api/x", "wide", rule_json(al, "wide", "/api/*", "10", b, "1", ""));
	put_version("/api/x", "5:1");
	ck_allowed(by_ref(al, "/api/x", "*", NULL, 1000), 1, "wide");
	ck_recorded(al, "/api/x", "rv", "5:1");
	ck_recorded(al, "/api/x", "rn", "wide");
	/* a better rule written without a new :version: the cache still answers */
	put_rule("/api/x", "narrow", rule_json(al, "narrow", "/api/x", "5", b, "1", ""));
	ck_allowed(by_ref(al, "/api/x", "*", NULL, 1000), 1, "wide");
	/* the version moves: resolved afresh */
	put_version("/api/x", "5:2");
	ck_allowed(by_ref(al, "/api/x", "*", NULL, 1000), 1, "narrow");
	ck_recorded(al, "/api/x", "rv", "5:2");
	ck_recorded(al, "/api/x", "rn", "narrow");
	ck_recorded(al, "/api/x", "rule", "narrow");
	/* the cached rule deleted (a new version): the next resolves afresh */
	freeReplyObject(test_cmd(c, "HDEL %s narrow", test_shard_key("", "/api/x", "rules")));
	put_version("/api/x", "6:1");
	ck_allowed(by_ref(al, "/api/x", "*", NULL, 1000), 1, "wide");
	ck_recorded(al, "/api/x", "rn", "wide");
	/* a cached name whose rule went without a version change is not trusted */
	freeReplyObject(test_cmd(c, "HDEL %s wide", test_shard_key("", "/api/x", "rules")));
	test_check_client(__FILE__, __LINE__, by_ref(al, "/api/x", "*", NULL, 1000), TEST_INTS(1, -1, 0, 0), "none");
}
END_TEST

/* ---- bad copy entries: errors naming the rule and the field, nothing written -------- */

static const struct {
	enum algo al;
	const char *json; /* NULL: rule_json with limit/capacity 3 */
	const char *ref;
	const char *error; /* after "ERR sluice: rule \"api\" (in <copy>): " */
} bad_rules[] = {
	{ FW, "{not json", "api", "not a JSON object" },
	{ SL, "[1,2]x", "api", "not a JSON object" },
	{ SC, "\"a string\"", "api", "not a JSON object" },
	{ TB, "{not json", "*", "not a JSON object" },
	{ LB, "{\"match\":\"/v\",\"algorithm\":\"leaky_bucket\",\"capacity\":\"10\",\"rate\":1}", "api",
	  "capacity must be a number" },
	{ LB, "{\"match\":\"/v\",\"algorithm\":\"leaky_bucket\",\"capacity\":0,\"rate\":1}", "api",
	  "capacity must be an integer from 1 to 2^53-1" },
	{ TB, "{\"match\":\"/v\",\"algorithm\":\"token_bucket\",\"capacity\":2.5,\"rate\":1}", "*",
	  "capacity must be an integer from 1 to 2^53-1" },
	{ TB, "{\"match\":\"/v\",\"algorithm\":\"token_bucket\",\"capacity\":2,\"rate\":-1}", "api", "rate must be" },
	{ TB, "{\"match\":\"/v\",\"algorithm\":\"token_bucket\",\"capacity\":2}", "api", "rate must be a number" },
	{ SL, "{\"match\":\"/v\",\"algorithm\":\"sliding_log\",\"limit\":2,\"window_ms\":1e300}", "api",
	  "window_ms must be an integer" },
	{ SC, "{\"match\":\"/v\",\"algorithm\":\"sliding_counter\",\"limit\":5,\"window_ms\":1000,\"sub_windows\":3}",
	  "api", "sub_windows must be an integer from 1 to 2^53-1 that divides window_ms" },
	{ FW, "{\"match\":\"/v\",\"algorithm\":\"fixed_window\",\"limit\":5,\"window_ms\":1000,\"mode\":\"loud\"}",
	  "api", "mode must be \"enforce\" or \"shadow\"" },
	{ FW, "{\"match\":\"/v\",\"algorithm\":\"token_bucket\",\"capacity\":5,\"rate\":1}", "api",
	  "a \"token_bucket\" rule, called with the fixed_window script" },
	{ SL, "{\"match\":\"/v\",\"algorithm\":\"token_bucket\",\"capacity\":5,\"rate\":1}", "*",
	  "a \"token_bucket\" rule, called with the sliding_log script" },
	{ SL, "{\"match\":\"/v\",\"limit\":5,\"window_ms\":1000}", "api", "algorithm must be a string" },
	{ FW, "{\"match\":7,\"algorithm\":\"fixed_window\",\"limit\":5,\"window_ms\":1000}", "*", "match must be a string" },
};

START_TEST(test_bad_copy_entry)
{
	enum algo al = bad_rules[_i].al;
	char *before, want[256];

	/* a good path state first: nothing of it changes */
	ck_allowed(acquire(al, "/v", "3", al == TB || al == LB ? "1" : "1000", al == SC ? "1" : NULL, NULL, "1000"), 1,
		   "");
	put_rule("/v", "api", bad_rules[_i].json);
	put_version("/v", "1:1");
	before = test_snapshot(c);
	snprintf(want, sizeof(want), "ERR sluice: rule \"api\" (in %s): %s", test_shard_key("", "/v", "rules"),
		 bad_rules[_i].error);
	ck_error(by_ref(al, "/v", bad_rules[_i].ref, NULL, 1000), want);
	ck_snapshot_same(before);
	free(before);
}
END_TEST

/* ---- mode shadow: decided as usual, always admitted, a denial's writes only -------- */

START_TEST(test_shadow_admits_denials)
{
	enum algo al = algos[_i];
	const char *b = al == TB || al == LB ? "1" : "60000";
	char *before;

	put_rule("/sh", "try", rule_json(al, "try", "/sh", "2", b, "1", ",\"mode\":\"shadow\""));
	put_version("/sh", "1:1");
	ck_assert_int_eq(remaining_of(by_ref(al, "/sh", "try", "2", 1000)), 0);
	before = test_snapshot_except(c, test_shard_key("", "/sh", "stats"));
	for (int i = 0; i < 3; i++) {
		redisReply *r = by_ref(al, "/sh", i ? "try" : "*", NULL, 1000);

		ck_assert_int_eq(r->element[0]->integer, 1); /* would be denied */
		ck_assert_int_eq(r->element[1]->integer, 0);
		ck_assert_int_eq(r->element[2]->integer, 0);
		freeReplyObject(r);
	}
	ck_snapshot_same_except(before, test_shard_key("", "/sh", "stats"));
	free(before);
	/* counted: admitted (the first, n = 2), and would have been denied, three times */
	ck_stat("/sh", "try:allowed", 1);
	ck_stat("/sh", "try:shadow_denied", 3);
	ck_stat("/sh", "try:denied", -1);
	/* an enforced rule of the same numbers denies */
	put_rule("/sh", "try", rule_json(al, "try", "/sh", "2", b, "1", ",\"mode\":\"enforce\""));
	ck_allowed(by_ref(al, "/sh", "try", NULL, 1000), 0, "try");
	ck_stat("/sh", "try:denied", 1);
	ck_stat("/sh", "try:shadow_denied", 3);
}
END_TEST

/* ---- decision counters in the shard's stats hash (lib/contract.lua, contract_reply) -- */

/* The number of fields of path's shard stats hash that are not clock-lag fields. */
static long long counted_fields(const char *path)
{
	redisReply *r = test_cmd(c, "HKEYS %s", test_shard_key("", path, "stats"));
	long long n = 0;

	for (size_t i = 0; i < r->elements; i++)
		n += strncmp(r->element[i]->str, ":lag:", 5) != 0;
	freeReplyObject(r);
	return n;
}

START_TEST(test_counts_per_rule)
{
	enum algo al = algos[_i];
	const char *a, *b, *s;
	static const struct {
		const char *ref, *n;
		int shadow, allowed;
	} calls[] = {
		{ "api", NULL, 0, 1 }, { "*", NULL, 0, 1 }, { "api", NULL, 0, 1 }, /* 3 of 3 */
		{ "api", NULL, 0, 0 }, { "*", NULL, 0, 0 }, { "api", "3", 0, 0 }, /* denied, by 1 each */
		{ "api", NULL, 1, 1 }, { "*", "2", 1, 1 },			     /* shadow: would deny */
	};

	params(al, &a, &b, &s);
	put_rule("/cnt", "api", rule_json(al, "api", "/cnt", a, b, s ? s : "0", ""));
	put_version("/cnt", "1:1");
	for (int i = 0; i < TEST_N(calls); i++) {
		if (calls[i].shadow && !calls[i - 1].shadow) {
			put_rule("/cnt", "api", rule_json(al, "api", "/cnt", a, b, s ? s : "0", ",\"mode\":\"shadow\""));
			put_version("/cnt", "1:2");
		}
		ck_allowed(by_ref(al, "/cnt", calls[i].ref, calls[i].n, 1000), calls[i].allowed, "api");
	}
	ck_stat("/cnt", "api:allowed", 3);
	ck_stat("/cnt", "api:denied", 3);
	ck_stat("/cnt", "api:shadow_denied", 2);
	ck_assert_int_eq(counted_fields("/cnt"), 3);
	/* a call refused with an error reply counts nothing: a bad cost, numbers beside
	 * the rule, a rule the script cannot apply */
	ck_error(by_ref(al, "/cnt", "api", "0", 1000), "ERR sluice: ");
	ck_error(by_ref(al, "/cnt", "*", "x", 1000), "ERR sluice: ");
	put_rule("/cnt", "api", rule_json(al, "api", "/cnt", a, b, s ? s : "0", ",\"mode\":\"off\""));
	put_version("/cnt", "1:3");
	ck_error(by_ref(al, "/cnt", "api", NULL, 1000), "ERR sluice: rule \"api\"");
	ck_error(by_ref(al, "/cnt", "*", NULL, 1000), "ERR sluice: rule \"api\"");
	ck_stat("/cnt", "api:allowed", 3);
	ck_stat("/cnt", "api:denied", 3);
	ck_stat("/cnt", "api:shadow_denied", 2);
	ck_assert_int_eq(counted_fields("/cnt"), 3);
}
END_TEST

/* Explicit parameters and "*" matching nothing count nothing, admitted or denied. */
START_TEST(test_counts_nothing_unruled)
{
	enum algo al = algos[_i];
	const char *a, *b, *s;

	params(al, &a, &b, &s);
	for (int i = 0; i < 5; i++) {
		redisReply *r = acquire(al, "/cnt", a, b, s, NULL, num(1000));

		ck_assert_int_eq(r->element[0]->integer, i < 3);
		freeReplyObject(r);
	}
	put_rule("/cnt", "api", rule_json(al, "api", "/other/*", a, b, s ? s : "0", ""));
	put_version("/cnt", "1:1");
	for (int i = 0; i < 3; i++)
		test_check_client(__FILE__, __LINE__, by_ref(al, "/cnt", "*", NULL, 1000), TEST_INTS(1, -1, 0, 0),
				  "none");
	ck_assert_int_eq(counted_fields("/cnt"), 0);
}
END_TEST

/* ---- clock lag: an explicit now behind Redis TIME, the largest per minute ----------- */

static long long redis_ms(void)
{
	redisReply *r = test_cmd(c, "TIME");
	long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;

	freeReplyObject(r);
	return ms;
}

/* A call of al on /lag with its now `behind` ms behind Redis TIME (read just
 * before), explicit parameters or by name; returns that TIME. */
static long long call_behind(enum algo al, long long behind, int by_name)
{
	const char *a, *b, *s;
	long long t = redis_ms();
	redisReply *r;

	params(al, &a, &b, &s);
	r = by_name ? by_ref(al, "/lag", "api", NULL, t - behind) : acquire(al, "/lag", "1000", b, s, NULL, num(t - behind));
	ck_assert_msg(r->type == REDIS_REPLY_ARRAY, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "?");
	freeReplyObject(r);
	return t;
}

/* The lag recorded for the minute of ms t, -1 when none. */
static long long lag_of(long long t)
{
	char field[48];

	snprintf(field, sizeof(field), ":lag:%lld", t / 60000);
	return stat_of("/lag", field);
}

#define LAG_SLACK 50 /* ms between our TIME and the script's */

START_TEST(test_lag_largest_per_minute)
{
	enum algo al = algos[_i];
	const char *a, *b, *s;
	long long t, got;

	/* the test's calls in one minute: not within 3 s of its end */
	while ((t = redis_ms()) % 60000 > 57000)
		usleep(100000);
	params(al, &a, &b, &s);
	put_rule("/lag", "api", rule_json(al, "api", "/lag", "1000", b, s ? s : "0", ""));
	put_version("/lag", "1:1");
	/* ahead of TIME (within the skew horizon) or with TIME: nothing recorded */
	call_behind(al, -500, 0);
	ck_assert_int_eq(counted_fields("/lag"), 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_shard_key("", "/lag", "stats")), 0);
	t = call_behind(al, 1234, 0); /* explicit parameters record the lag too */
	got = lag_of(t);
	ck_assert_msg(got >= 1234 && got <= 1234 + LAG_SLACK, "lag %lld, want 1234", got);
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", test_shard_key("", "/lag", "stats")), 1);
	t = call_behind(al, 5000, 1); /* larger: replaces it (by name too) */
	got = lag_of(t);
	ck_assert_msg(got >= 5000 && got <= 5000 + LAG_SLACK, "lag %lld, want 5000", got);
	t = call_behind(al, 2000, 0); /* smaller: kept */
	ck_assert_int_eq(lag_of(t), got);
	/* the one lag field, and the counter of the call by name */
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", test_shard_key("", "/lag", "stats")), 2);
	ck_stat("/lag", "api:allowed", 1);
}
END_TEST

static Suite *rule_ref_suite(void)
{
	Suite *s = suite_create("rule_ref");
	TCase *tc = test_tcase(s, "by name", script_setup, script_teardown, 120);

	tcase_add_loop_test(tc, test_name_same_as_explicit, 0, TEST_N(algos));
	tcase_add_loop_test(tc, test_unknown_name_writes_nothing, 0, TEST_N(algos));
	tcase_add_loop_test(tc, test_rule_edit_applies_next_call, 0, TEST_N(algos));
	tcase_add_test(tc, test_lb_lowered_capacity_denies_until_below);
	tcase_add_loop_test(tc, test_bad_copy_entry, 0, TEST_N(bad_rules));
	tcase_add_loop_test(tc, test_shadow_admits_denials, 0, TEST_N(algos));

	tc = test_tcase(s, "stats", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_counts_per_rule, 0, TEST_N(algos));
	tcase_add_loop_test(tc, test_counts_nothing_unruled, 0, TEST_N(algos));
	tcase_add_loop_test(tc, test_lag_largest_per_minute, 0, TEST_N(algos));

	tc = test_tcase(s, "star", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_star_precedence, 0, TEST_N(algos));
	tcase_add_loop_test(tc, test_star_no_match_stores_nothing, 0, TEST_N(algos));
	tcase_add_loop_test(tc, test_star_cache_follows_version, 0, TEST_N(algos));
	return s;
}

int main(void)
{
	return test_run_suite(rule_ref_suite());
}

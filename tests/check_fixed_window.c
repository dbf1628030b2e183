/*
 * The fixed window on key layout 2: lua/fixed_window.lua (the client's
 * acquire, by the calling contract), fixed_window_repair_shard.lua (the
 * worker's job over one shard's due index), fixed_window_state.lua (the
 * admin's read) and fixed_window_repair.lua (the batch repair of foreign
 * INCR counters).  The reference model of the random traces is
 * tests/fixed_window_model.h; the fixture, helpers and time conventions are
 * tests/script_fixture.h's, the skew scenario tests/window_trace.h's.
 */
#include "core/shard.h"
#include "tests/fixed_window_model.h"
#include "tests/window_trace.h"

/* ---- replies ---------------------------------------------------------------- */

/* The client's reply is exactly {want[0..3], rule ""}; frees r. */
static void check_fw(const char *file, int line, redisReply *r, const long long want[4])
{
	char got[256];
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 5 && r->element[4]->type == REDIS_REPLY_STRING &&
		 r->element[4]->len == 0;

	for (int i = 0; ok && i < 4; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	ck_assert_msg(ok, "%s:%d: reply %s, want {%lld, %lld, %lld, %lld, \"\"}", file, line,
		      test_show_reply(r, got, sizeof(got)), want[0], want[1], want[2], want[3]);
	freeReplyObject(r);
}
#define ck_fw(r, a, b, d, e) check_fw(__FILE__, __LINE__, (r), TEST_INTS(a, b, d, e))

/* A reply as text, one level of nested arrays shown too ({1, 2, {"limit", "3"}, ""}); returns buf. */
static const char *show_nested(const redisReply *r, char *buf, size_t cap)
{
	size_t n = 0;

	if (r->type != REDIS_REPLY_ARRAY)
		return test_show_reply(r, buf, cap);
	n += (size_t)snprintf(buf, cap, "{");
	for (size_t i = 0; i < r->elements && n < cap; i++) {
		char part[256];

		n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", test_show_reply(r->element[i], part, sizeof(part)));
	}
	if (n < cap)
		snprintf(buf + n, cap - n, "}");
	return buf;
}

/*
 * The state read's reply is exactly {want[0..3], recorded, rule}, recorded
 * being the strings of `rec` (up to a NULL); frees r.
 */
static void check_state(const char *file, int line, redisReply *r, const long long want[4], const char *const *rec,
			const char *rule)
{
	char got[512], exp[512];
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 6 && r->element[4]->type == REDIS_REPLY_ARRAY &&
		 r->element[5]->type == REDIS_REPLY_STRING && strcmp(r->element[5]->str, rule) == 0;
	size_t n = 0, k;

	for (int i = 0; ok && i < 4; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	while (rec[n])
		n++;
	ok = ok && r->element[4]->elements == n;
	for (size_t i = 0; ok && i < n; i++)
		ok = r->element[4]->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[4]->element[i]->str, rec[i]) == 0;
	k = (size_t)snprintf(exp, sizeof(exp), "{%lld, %lld, %lld, %lld, {", want[0], want[1], want[2], want[3]);
	for (size_t i = 0; i < n && k < sizeof(exp); i++)
		k += (size_t)snprintf(exp + k, sizeof(exp) - k, "%s\"%s\"", i ? ", " : "", rec[i]);
	if (k < sizeof(exp))
		snprintf(exp + k, sizeof(exp) - k, "}, \"%s\"}", rule);
	ck_assert_msg(ok, "%s:%d: state reply %s, want %s", file, line, show_nested(r, got, sizeof(got)), exp);
	freeReplyObject(r);
}
#define ck_state(r, a, b, d, e, rule, ...) \
	check_state(__FILE__, __LINE__, (r), TEST_INTS(a, b, d, e), (const char *const[]){ __VA_ARGS__, NULL }, (rule))
#define NO_RECORD NULL

/* fixed_window_state.lua on path p's keys (KEYS state, meta). */
static redisReply *state_of(const char *p, const char *limit, const char *window, const char *now)
{
	return ev("fixed_window_state", 2, FW_KEY(p), test_key(p, "fixed_window_meta"), limit, window, now, NULL);
}

/* The shard job over path p's shard, at now, up to `limit` paths. */
static redisReply *job_at(const char *p, long long now, const char *limit)
{
	return ev("fixed_window_repair_shard", 1, test_registry("fixed_window", p), num(now), limit, NULL);
}

/* Make path p due at `at` in its shard's registry (as a due time met early would). */
static void make_due(const char *p, long long at)
{
	freeReplyObject(test_cmd(c, "ZADD %s %lld %s", test_registry("fixed_window", p), at, p));
}

/* ---- paths of any bytes ------------------------------------------------------ */

/* A path (any bytes) and its five keys by the calling contract, in shard `shard`. */
struct fwp {
	char path[48];
	size_t len;
	unsigned shard;
	char key[5][128];
	size_t klen[5];
};

static void fwp_set(struct fwp *p, const char *path, size_t len, unsigned shard)
{
	static const char *const kinds[] = { "fixed_window:", "fixed_window_meta:" };

	ck_assert_uint_lt(len, sizeof(p->path));
	memcpy(p->path, path, len);
	p->path[len] = '\0'; /* a C string too, up to its first NUL */
	p->len = len;
	p->shard = shard;
	for (int i = 0; i < 2; i++) {
		int n = snprintf(p->key[i], sizeof(p->key[i]), "sluice:{%u}:%s", shard, kinds[i]);

		ck_assert_uint_lt((size_t)n + len, sizeof(p->key[i]));
		memcpy(p->key[i] + n, path, len);
		p->key[i][n + len] = '\0';
		p->klen[i] = (size_t)n + len;
	}
	p->klen[2] = (size_t)snprintf(p->key[2], sizeof(p->key[2]), "sluice:{%u}:registry:fixed_window", shard);
	p->klen[3] = (size_t)snprintf(p->key[3], sizeof(p->key[3]), "sluice:{%u}:rules", shard);
	p->klen[4] = (size_t)snprintf(p->key[4], sizeof(p->key[4]), "sluice:{%u}:stats", shard);
}

/* Path `path` (len bytes) with the keys of its own shard. */
static void fwp_init(struct fwp *p, const char *path, size_t len)
{
	fwp_set(p, path, len, shard_of(path, len));
}

/* "<stem><i>" (stem: len bytes) for the first i >= 0 that lands in shard k. */
static void fwp_in_shard(struct fwp *p, const char *stem, size_t len, unsigned k)
{
	char buf[48];

	memcpy(buf, stem, len);
	for (int i = 0; i < 100000; i++) {
		size_t n = len + (size_t)snprintf(buf + len, sizeof(buf) - len, "%d", i);

		if (shard_of(buf, n) == k) {
			fwp_init(p, buf, n);
			return;
		}
	}
	ck_abort_msg("no path in shard %u", k);
}

/* The client call on p: n and now as strings ("" allowed), limit, window_ms. */
static redisReply *fwp_call(const struct fwp *p, const char *n, const char *now, const char *limit,
			    const char *window)
{
	const char *argv[11] = { p->key[0], p->key[1], p->key[2], p->key[3], p->key[4], p->path, n, now, "", limit,
				 window };
	size_t lens[11] = { p->klen[0], p->klen[1], p->klen[2], p->klen[3], p->klen[4], p->len, strlen(n),
			    strlen(now), 0, strlen(limit), strlen(window) };

	return test_script_argv(c, TEST_EVAL, "fixed_window", 5, 11, argv, lens);
}

/* ---- the client ------------------------------------------------------------- */

START_TEST(test_fw_uses_redis_time)
{
	const char *p = "/clock";
	long long before = test_server_ms(c), after, t;
	redisReply *r;

	r = acquire(FW, p, "3", "1000", NULL, NULL, NULL);
	after = test_server_ms(c);
	ck_assert_int_ge(test_elem_int(r, 3), 1);
	ck_assert_int_le(test_elem_int(r, 3), 1000);
	ck_fw(r, 1, 2, 0, test_elem_int(r, 3));
	r = test_cmd(c, "HMGET %s window t", FW_KEY(p));
	t = atoll(r->element[1]->str);
	ck_assert_int_ge(t, before);
	ck_assert_int_le(t, after);
	ck_assert_int_eq(atoll(r->element[0]->str), t / 1000);
	freeReplyObject(r);
	/* due when every call within the horizon is past the window */
	ck_assert_int_eq(due_of(FW, p), (t / 1000 + 1) * 1000 + SKEW_MS);
	/* "" for n is a cost of 1, "" for now Redis TIME */
	r = acquire(FW, p, "3", "1000", NULL, "", "");
	/* 2 counted, or 1 if TIME crossed into the next second meanwhile */
	ck_assert_int_eq(test_elem_int(r, 1), 3 - test_cmd_int(c, "HINCRBY %s count 0", FW_KEY(p)));
	ck_fw(r, 1, test_elem_int(r, 1), 0, test_elem_int(r, 3));
}
END_TEST

START_TEST(test_fw_state_layout)
{
	const char *p = "/layout";

	ck_fw(fw(p, "5", "1000", 2500), 1, 4, 0, 500);
	ck_fw(fw(p, "5", "1000", 2600), 1, 3, 0, 400);
	ck_cmd("{\"count\", \"2\", \"window\", \"2\", \"t\", \"2600\", \"limit\", \"5\", \"window_ms\", \"1000\", "
	       "\"rule\", \"\"}",
	       "HGETALL %s", FW_KEY(p));
	ck_pttl(FW_KEY(p), 401 + SKEW_MS); /* the window's end + 1, and the horizon for the mark */
	/* the repair's first work: the window's end + the horizon */
	ck_assert_int_eq(due_of(FW, p), 3000 + SKEW_MS);
	/* the meta is left alone (absent), the rules copy and the stats are only read: two keys */
	ck_assert_int_eq(test_dbsize(c), 2);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", test_key(p, "fixed_window_meta")), 0);
}
END_TEST

START_TEST(test_fw_past_counter_without_ttl)
{
	const char *p = "/stale";

	/* A full counter of window 0 that lost its TTL does not block window 1. */
	for (int i = 0; i < 5; i++)
		freeReplyObject(fw(p, "5", "1000", 200));
	ck_fw(fw(p, "5", "1000", 300), 0, 0, 700, 700);
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(p)));
	ck_fw(fw(p, "5", "1000", 1500), 1, 4, 0, 500);
	ck_cmd("{\"count\", \"1\", \"window\", \"1\", \"t\", \"1500\", \"limit\", \"5\", \"window_ms\", \"1000\", "
	       "\"rule\", \"\"}",
	       "HGETALL %s", FW_KEY(p));
	ck_pttl(FW_KEY(p), 501 + SKEW_MS);
	/* registered by window 0 (ZADD LT: window 1's later due changes nothing) */
	ck_assert_int_eq(due_of(FW, p), 1000 + SKEW_MS);
}
END_TEST

START_TEST(test_fw_cost)
{
	const char *p = "/cost";

	ck_fw(acquire(FW, p, "5", "1000", NULL, "3", "100"), 1, 2, 0, 900);
	ck_fw(acquire(FW, p, "5", "1000", NULL, "3", "200"), 0, 2, 800, 800); /* 3 + 3 > 5: not counted */
	ck_fw(acquire(FW, p, "5", "1000", NULL, "2", "300"), 1, 0, 0, 700);
	ck_cmd("\"5\"", "HGET %s count", FW_KEY(p));
	/* more than the limit can never be admitted: retry_after -1, nothing stored */
	ck_fw(acquire(FW, p, "5", "1000", NULL, "6", "1000"), 0, 5, -1, 1000);
	ck_cmd("\"0\"", "HGET %s window", FW_KEY(p));
	ck_fw(acquire(FW, p, "5", "1000", NULL, "5", "1000"), 1, 0, 0, 1000);
	ck_fw(acquire(FW, "/cost/new", "2", "1000", NULL, "3", "0"), 0, 2, -1, 1000);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", FW_KEY("/cost/new")), 0);
	ck_assert_int_eq(in_registry(FW, "/cost/new"), 0);
	/* the largest cost and limit: exact */
	ck_fw(acquire(FW, "/cost/big", "9007199254740991", "1000", NULL, "9007199254740991", "0"), 1, 0, 0, 1000);
	ck_cmd("\"9007199254740991\"", "HGET %s count", FW_KEY("/cost/big"));
	ck_fw(acquire(FW, "/cost/big", "9007199254740991", "1000", NULL, "1", "0"), 0, 0, 1000, 1000);
}
END_TEST

START_TEST(test_fw_records_parameters)
{
	const char *p = "/rec";
	char *before;

	ck_fw(fw(p, "3", "1000", 100), 1, 2, 0, 900);
	ck_cmd("{\"3\", \"1000\", \"\"}", "HMGET %s limit window_ms rule", FW_KEY(p));
	/* a raised limit applies to the live count at once, and is recorded */
	ck_fw(fw(p, "4", "1000", 200), 1, 2, 0, 800);
	ck_cmd("{\"4\", \"1000\", \"\"}", "HMGET %s limit window_ms rule", FW_KEY(p));
	/* a lowered one denies until the window ends; a rejection records nothing */
	freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", FW_KEY(p), MARKER_TTL));
	before = test_snapshot(c);
	ck_fw(fw(p, "2", "1000", 300), 0, 0, 700, 700);
	ck_snapshot_same(before);
	free(before);
	ck_pttl(FW_KEY(p), MARKER_TTL);
	/* recorded as passed: "0004" is 4, and is what the counter records */
	ck_fw(fw(p, "0004", "1000", 400), 1, 1, 0, 600);
	ck_cmd("{\"0004\", \"1000\", \"\"}", "HMGET %s limit window_ms rule", FW_KEY(p));
}
END_TEST

START_TEST(test_fw_window_length_changed)
{
	const char *p = "/changed";

	ck_fw(fw(p, "2", "1000", 5000), 1, 1, 0, 1000);
	ck_fw(fw(p, "2", "1000", 5000), 1, 0, 0, 1000);
	ck_assert_int_eq(due_of(FW, p), 6000 + SKEW_MS);
	/* The rule now says 100 ms: index 5 of 1000 ms is not index 50 of 100 ms. */
	ck_fw(fw(p, "2", "100", 5000), 1, 1, 0, 100);
	ck_cmd("{\"count\", \"1\", \"window\", \"50\", \"t\", \"5000\", \"limit\", \"2\", \"window_ms\", \"100\", "
	       "\"rule\", \"\"}",
	       "HGETALL %s", FW_KEY(p));
	/* a window that ends sooner moves the due time earlier (ZADD LT) */
	ck_assert_int_eq(due_of(FW, p), 5100 + SKEW_MS);
	/* 1001 ms at 5005 is index 5 too, but of another length: counted afresh */
	ck_fw(fw(p, "2", "1001", 5005), 1, 1, 0, 1001);
	ck_fw(fw(p, "2", "1001", 5005), 1, 0, 0, 1001);
	ck_fw(fw(p, "2", "100", 5005), 1, 1, 0, 95);
	/* The job goes by the recorded 100 ms: the counter is over for every
	 * client within the horizon at 5100 + SKEW_MS, not 6000 + SKEW_MS. */
	ck_reply(job_at(p, 5099 + SKEW_MS, "500"), 0, 0, 0, 0, 5100 + SKEW_MS, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", FW_KEY(p)), 1);
	ck_reply(job_at(p, 5100 + SKEW_MS, "500"), 0, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", FW_KEY(p)), 0);
	ck_assert_int_eq(in_registry(FW, p), 0);
}
END_TEST

START_TEST(test_fw_registers_when_a_window_opens)
{
	const char *p = "/reg";

	/* A rejected call on a new path registers nothing. */
	ck_fw(acquire(FW, p, "1", "1000", NULL, "2", "100"), 0, 1, -1, 900);
	ck_assert_int_eq(test_dbsize(c), 0);
	ck_fw(fw(p, "5", "1000", 100), 1, 4, 0, 900);
	ck_assert_int_eq(due_of(FW, p), 1000 + SKEW_MS);
	/* The calls inside a window do not touch the registry (the hot path): a
	 * member taken out by hand comes back when the next window opens. */
	freeReplyObject(test_cmd(c, "ZREM %s %s", test_registry("fixed_window", p), p));
	ck_fw(fw(p, "5", "1000", 200), 1, 3, 0, 800);
	ck_assert_int_eq(in_registry(FW, p), 0);
	ck_fw(fw(p, "5", "1000", 1000), 1, 4, 0, 1000);
	ck_assert_int_eq(due_of(FW, p), 2000 + SKEW_MS);
	/* A later window keeps the earlier due time (ZADD LT); the job moves it. */
	ck_fw(fw(p, "5", "1000", 2000), 1, 4, 0, 1000);
	ck_assert_int_eq(due_of(FW, p), 2000 + SKEW_MS);
	ck_reply(job_at(p, 2000 + SKEW_MS, "500"), 0, 0, 1, 0, 3000 + SKEW_MS, 0);
	ck_assert_int_eq(due_of(FW, p), 3000 + SKEW_MS);
	ck_pttl(FW_KEY(p), 1001 + SKEW_MS); /* untouched: it had its TTL */
}
END_TEST

START_TEST(test_fw_registry_bounded_without_daemon)
{
	struct fwp x, y;

	/* With no daemon, a counter that expired leaves its member behind; the
	 * next path new to the shard's registry drops it once it is a minute
	 * overdue (lib/due.lua), so the registry stays bounded by live paths. */
	fwp_in_shard(&x, "x", 1, 5);
	fwp_in_shard(&y, "y", 1, 5);
	ck_fw(fwp_call(&x, "", "0", "5", "1000"), 1, 4, 0, 1000);
	freeReplyObject(test_cmd(c, "DEL %b", x.key[0], x.klen[0])); /* its TTL ended */
	ck_fw(fwp_call(&y, "", "70999", "5", "1000"), 1, 4, 0, 1); /* 59999 ms overdue: kept */
	ck_assert_int_eq(test_cmd_int(c, "ZCARD sluice:{5}:registry:fixed_window"), 2);
	freeReplyObject(test_cmd(c, "DEL %b", y.key[0], y.klen[0]));
	freeReplyObject(test_cmd(c, "ZREM sluice:{5}:registry:fixed_window %b", y.path, y.len));
	ck_fw(fwp_call(&y, "", "71000", "5", "1000"), 1, 4, 0, 1000); /* 60000 ms overdue: dropped */
	ck_assert_int_eq(test_cmd_int(c, "ZCARD sluice:{5}:registry:fixed_window"), 1);
	ck_assert_int_eq(due_of(FW, y.path), 72000 + SKEW_MS);
}
END_TEST

START_TEST(test_fw_meta_left_alone)
{
	const char *p = "/m", *meta = test_key(p, "fixed_window_meta");

	freeReplyObject(test_cmd(c, "HSET %s x y", meta));
	ck_fw(fw(p, "5", "1000", 100), 1, 4, 0, 900);
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(p)));
	make_due(p, 500);
	ck_reply(job_at(p, 500, "500"), 1, 0, 1, 0, 1000 + SKEW_MS, 0);
	ck_reply(job_at(p, 1000 + SKEW_MS, "500"), 0, 1, 1, 0, -1, 0);
	ck_cmd("{\"x\", \"y\"}", "HGETALL %s", meta);
	ck_assert_int_eq(test_cmd_int(c, "PTTL %s", meta), -1);
}
END_TEST

START_TEST(test_fw_wrong_shard)
{
	struct fwp p, q;
	char want[160];
	unsigned k = shard_of("/w", 2);

	/* All five keys name shard k + 1, consistently: the path's own is k. */
	fwp_set(&p, "/w", 2, (k + 1) % SHARD_COUNT);
	snprintf(want, sizeof(want), "ERR sluice: path \"/w\" belongs to shard %u, not %u (its keys carry {%u})", k,
		 (k + 1) % SHARD_COUNT, k);
	ck_error(fwp_call(&p, "", "1000", "5", "1000"), want);
	ck_assert_int_eq(test_dbsize(c), 0);
	/* A NUL in the path: shown as \x00, and every byte counts for the shard. */
	fwp_init(&q, "/a\0b", 4);
	fwp_set(&p, "/a\0b", 4, (q.shard + 7) % SHARD_COUNT);
	snprintf(want, sizeof(want), "ERR sluice: path \"/a\\x00b\" belongs to shard %u, not %u", q.shard,
		 (q.shard + 7) % SHARD_COUNT);
	ck_error(fwp_call(&p, "", "1000", "5", "1000"), want);
	ck_assert_int_eq(test_dbsize(c), 0);
	/* The right shard is admitted. */
	ck_fw(fwp_call(&q, "", "1000", "5", "1000"), 1, 4, 0, 1000);
}
END_TEST

/* A path whose bytes put braces where a hash tag would be, or a NUL. */
static void check_odd_path(const char *path, size_t len, unsigned want_shard)
{
	struct fwp p;
	const char *hm[8] = { "HMGET" };
	size_t hl[8] = { 5 };
	const char *fields[] = { "window", "count", "t", "limit", "window_ms", "rule" };
	redisReply *r;
	char shown[64];

	fwp_init(&p, path, len);
	snprintf(shown, sizeof(shown), "%.*s", (int)len, path);
	ck_assert_msg(p.shard == want_shard, "%s: shard %u, want %u", shown, p.shard, want_shard);
	ck_fw(fwp_call(&p, "2", "1500", "3", "1000"), 1, 1, 0, 500);
	ck_fw(fwp_call(&p, "", "1600", "3", "1000"), 1, 0, 0, 400);
	ck_fw(fwp_call(&p, "", "1700", "3", "1000"), 0, 0, 300, 300);
	hm[1] = p.key[0], hl[1] = p.klen[0];
	for (int i = 0; i < 6; i++)
		hm[2 + i] = fields[i], hl[2 + i] = strlen(fields[i]);
	r = redisCommandArgv(c, 8, hm, hl);
	{
		char got[256];

		ck_assert_str_eq(test_show_reply(r, got, sizeof(got)), "{\"1\", \"3\", \"1600\", \"3\", \"1000\", \"\"}");
	}
	freeReplyObject(r);
	/* the registry member is the path itself, every byte */
	r = redisCommand(c, "ZRANGE %s 0 -1 WITHSCORES", p.key[2]);
	ck_assert_uint_eq(r->elements, 2);
	ck_assert_uint_eq(r->element[0]->len, len);
	ck_assert_int_eq(memcmp(r->element[0]->str, path, len), 0);
	ck_assert_int_eq(atoll(r->element[1]->str), 2000 + SKEW_MS);
	freeReplyObject(r);
	/* the state read, on its keys */
	{
		const char *argv[5] = { p.key[0], p.key[1], "", "", "1700" };
		size_t lens[5] = { p.klen[0], p.klen[1], 0, 0, 4 };

		r = test_script_argv(c, TEST_EVAL_RO, "fixed_window_state", 2, 5, argv, lens);
		ck_assert_int_gt(test_elem_int(r, 3), 0);
		ck_state(r, 3, 0, 300, test_elem_int(r, 3), "", "limit", "3", "window_ms", "1000");
	}
	/* the shard job finds its counter by the member: kept, then deleted and forgotten */
	r = redisCommand(c, "EVAL %s 1 %b %s 500", script_find("fixed_window_repair_shard")->body, p.key[2], p.klen[2],
			 test_num(1999 + SKEW_MS));
	ck_reply(r, 0, 0, 0, 0, 2000 + SKEW_MS, 0);
	r = redisCommand(c, "EVAL %s 1 %b %s 500", script_find("fixed_window_repair_shard")->body, p.key[2], p.klen[2],
			 test_num(2000 + SKEW_MS));
	ck_reply(r, 0, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_dbsize(c), 0);
}

START_TEST(test_fw_brace_and_nul_paths)
{
	/* "}x": no hash tag in the path, the empty tag "{}" neither: the whole string */
	check_odd_path("}x", 2, shard_crc16("}x", 2) % SHARD_SLOTS % SHARD_COUNT);
	check_odd_path("{}x", 3, shard_crc16("{}x", 3) % SHARD_SLOTS % SHARD_COUNT);
	/* "{u1}/a": the tag "u1" alone */
	check_odd_path("{u1}/a", 6, shard_crc16("u1", 2) % SHARD_SLOTS % SHARD_COUNT);
	check_odd_path("/a\0b", 4, shard_crc16("/a\0b", 4) % SHARD_SLOTS % SHARD_COUNT);
	check_odd_path("\0", 1, shard_crc16("\0", 1) % SHARD_SLOTS % SHARD_COUNT);
}
END_TEST

START_TEST(test_fw_wrong_type)
{
	const char *p = "/wt";
	char *before;

	freeReplyObject(test_cmd(c, "ZADD %s 1 x", FW_KEY(p)));
	before = test_snapshot(c);
	ck_error(fw(p, "5", "1000", 100), "WRONGTYPE");
	ck_snapshot_same(before);
	free(before);
}
END_TEST

/* ---- the shard job --------------------------------------------------------------- */

START_TEST(test_fw_shard_job)
{
	/* Nine paths of one shard, all made due at 11500 (Redis time): a client
	 * within the skew horizon is served at 1500 or later (and at its counter's
	 * t, if that is later).
	 * A: window 11, lost its TTL -> repaired to the window's end + SKEW_MS;
	 * H: window 9, lost its TTL: over at 11500, not at 1500 -> repaired too;
	 * B: window 0, lost its TTL, t = 200: over at 1500 -> deleted, out of the registry;
	 * C: window 11 with a TTL -> left alone, due at its end + SKEW_MS;
	 * D: registered, absent -> out of the registry;
	 * E: a hash that records nothing, with a TTL -> looked at again when it expires;
	 * F: the same without a TTL -> in a minute;
	 * G: a sorted set, S: a string (another layout's keys) -> skipped, in a minute. */
	struct fwp a;
	const char *stems[] = { "A", "H", "B", "C", "D", "E", "F", "G", "S" };
	char name[9][48];
	const char *A = name[0], *H = name[1], *B = name[2], *C = name[3], *D = name[4], *E = name[5],
		   *F = name[6], *G = name[7], *S = name[8];
	long long e_due;
	char *before;

	for (int i = 0; i < 9; i++) {
		fwp_in_shard(&a, stems[i], 1, shard_of("A", 1));
		snprintf(name[i], sizeof(name[i]), "%.*s", (int)a.len, a.path);
	}
	ck_fw(fw(A, "5", "1000", 11200), 1, 4, 0, 800);
	ck_fw(fw(H, "5", "1000", 9000), 1, 4, 0, 1000);
	ck_fw(fw(B, "5", "1000", 200), 1, 4, 0, 800);
	ck_fw(fw(C, "5", "1000", 11300), 1, 4, 0, 700);
	for (int i = 0; i < 3; i++)
		freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(name[i])));
	freeReplyObject(test_cmd(c, "PEXPIRE %s 700000", FW_KEY(C)));
	freeReplyObject(test_cmd(c, "HSET %s foo bar", FW_KEY(E)));
	freeReplyObject(test_cmd(c, "PEXPIRE %s 400000", FW_KEY(E)));
	freeReplyObject(test_cmd(c, "HSET %s window 3 count 2", FW_KEY(F)));
	freeReplyObject(test_cmd(c, "ZADD %s 1 x", FW_KEY(G)));
	freeReplyObject(test_cmd(c, "SET %s 7", FW_KEY(S)));
	for (int i = 0; i < 9; i++)
		make_due(name[i], 11500);
	ck_reply(job_at(A, 11500, "500"), 2, 2, 9, 2, 10000 + SKEW_MS, 0);
	ck_pttl(FW_KEY(A), 12000 + 1 + SKEW_MS - 11500);
	ck_cmd("{\"count\", \"1\", \"window\", \"11\", \"t\", \"11200\", \"limit\", \"5\", \"window_ms\", \"1000\", "
	       "\"rule\", \"\"}",
	       "HGETALL %s", FW_KEY(A));
	ck_assert_int_eq(due_of(FW, A), 12000 + SKEW_MS);
	ck_pttl(FW_KEY(H), 10000 + 1 + SKEW_MS - 11500);
	ck_assert_int_eq(due_of(FW, H), 10000 + SKEW_MS);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", FW_KEY(B)), 0);
	ck_assert_int_eq(in_registry(FW, B), 0);
	ck_pttl(FW_KEY(C), 700000);
	ck_assert_int_eq(due_of(FW, C), 12000 + SKEW_MS);
	ck_assert_int_eq(in_registry(FW, D), 0);
	e_due = due_of(FW, E);
	ck_assert_int_gt(e_due, 11500 + 400000 + 1 - SLACK_MS);
	ck_assert_int_le(e_due, 11500 + 400000 + 1);
	ck_pttl(FW_KEY(E), 400000);
	ck_assert_int_eq(due_of(FW, F), 11500 + 60000);
	ck_assert_int_eq(test_cmd_int(c, "PTTL %s", FW_KEY(F)), -1);
	ck_cmd("{\"window\", \"3\", \"count\", \"2\"}", "HGETALL %s", FW_KEY(F));
	ck_assert_int_eq(due_of(FW, G), 11500 + 60000);
	ck_cmd("{\"x\"}", "ZRANGE %s 0 -1", FW_KEY(G));
	ck_assert_int_eq(due_of(FW, S), 11500 + 60000);
	ck_cmd("\"7\"", "GET %s", FW_KEY(S));

	/* Idempotent: due again at the same instant, nothing changes (E aside:
	 * its due time follows its PTTL, which runs in real time). */
	before = test_snapshot(c);
	for (int i = 0; i < 9; i++)
		if (i != 2 && i != 4 && i != 5)
			make_due(name[i], 11500);
	ck_reply(job_at(A, 11500, "500"), 0, 0, 6, 2, 10000 + SKEW_MS, 0);
	ck_snapshot_same(before);
	free(before);
	/* Nothing due: nothing visited. */
	ck_reply(job_at(A, 11500, "500"), 0, 0, 0, 0, 10000 + SKEW_MS, 0);
	/* An empty registry. */
	ck_reply(job_at("/none", 11500, "500"), 0, 0, 0, 0, -1, 0);
}
END_TEST

START_TEST(test_fw_shard_job_limit)
{
	struct fwp a, b, d;

	/* a and b due at 11000, d at 12000; all three past at 21000 */
	fwp_in_shard(&a, "a", 1, 0);
	fwp_in_shard(&b, "b", 1, 0);
	fwp_in_shard(&d, "d", 1, 0);
	ck_fw(fwp_call(&a, "", "100", "5", "1000"), 1, 4, 0, 900);
	ck_fw(fwp_call(&b, "", "200", "5", "1000"), 1, 4, 0, 800);
	ck_fw(fwp_call(&d, "", "1100", "5", "1000"), 1, 4, 0, 900);
	/* two a call: a and b first (same score, members in order), d left due: the backlog */
	ck_reply(ev("fixed_window_repair_shard", 1, "sluice:{0}:registry:fixed_window", "21000", "2", NULL), 0, 2, 2, 0,
		 12000, 1);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %b", a.key[0], a.klen[0]), 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %b", b.key[0], b.klen[0]), 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %b", d.key[0], d.klen[0]), 1);
	ck_reply(ev("fixed_window_repair_shard", 1, "sluice:{0}:registry:fixed_window", "21000", "2", NULL), 0, 1, 1, 0,
		 -1, 0);
	ck_assert_int_eq(test_dbsize(c), 0);
}
END_TEST

START_TEST(test_fw_repair_older_now)
{
	const char *p = "/older";

	ck_fw(fw(p, "5", "1000", 1200), 1, 4, 0, 800);
	ck_assert_int_eq(due_of(FW, p), 2000 + SKEW_MS);
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(p)));
	/* Due early, and the worker's clock is behind: served at the counter's
	 * 1200 (window 1, current, not past), the TTL measured from its own 900. */
	make_due(p, 900);
	ck_reply(job_at(p, 900, "500"), 1, 0, 1, 0, 2000 + SKEW_MS, 0);
	ck_pttl(FW_KEY(p), 1101 + SKEW_MS);
	ck_reply(job_at(p, 900, "500"), 0, 0, 0, 0, 2000 + SKEW_MS, 0);
	ck_fw(fw(p, "5", "1000", 1300), 1, 3, 0, 700);
	/* At Redis 2000 window 1 is over, but not for a client lagging by up to
	 * the horizon: kept.  At 12000 it is over for all of them: deleted, when
	 * it comes due by itself. */
	make_due(p, 2000);
	ck_reply(job_at(p, 2000, "500"), 0, 0, 1, 0, 2000 + SKEW_MS, 0);
	make_due(p, 1999 + SKEW_MS);
	ck_reply(job_at(p, 1999 + SKEW_MS, "500"), 0, 0, 1, 0, 2000 + SKEW_MS, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", FW_KEY(p)), 1);
	ck_reply(job_at(p, 2000 + SKEW_MS, "500"), 0, 1, 1, 0, -1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", FW_KEY(p)), 0);
	ck_assert_int_eq(in_registry(FW, p), 0);
}
END_TEST

START_TEST(test_fw_repair_uses_redis_time)
{
	const char *p = "/clock";
	long long end;
	redisReply *r;

	freeReplyObject(acquire(FW, p, "5", "60000", NULL, NULL, NULL));
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(p)));
	r = test_cmd(c, "HGET %s window", FW_KEY(p));
	end = (atoll(r->str) + 1) * 60000;
	freeReplyObject(r);
	make_due(p, 0);
	ck_reply(shard_job(FW, p, -1), 1, 0, 1, 0, end + SKEW_MS, 0);
	ck_assert_int_gt(test_cmd_int(c, "PTTL %s", FW_KEY(p)), 0);
	ck_assert_int_le(test_cmd_int(c, "PTTL %s", FW_KEY(p)), 60001 + SKEW_MS);
}
END_TEST

/* ---- the state read ------------------------------------------------------------- */

START_TEST(test_fw_state)
{
	const char *p = "/state";
	char *before;
	redisReply *r;

	ck_state(state_of(p, "3", "1000", "0"), 0, 3, 0, -2, "", NO_RECORD);
	/* no parameters at all: no limit, no window */
	ck_state(state_of(p, "", "", "0"), 0, -1, -1, -2, "", NO_RECORD);
	freeReplyObject(fw(p, "3", "1000", 100));
	freeReplyObject(fw(p, "3", "1000", 100));
	before = test_snapshot(c);
	r = state_of(p, "3", "1000", "500");
	ck_assert_int_gt(test_elem_int(r, 3), 900 + SKEW_MS - SLACK_MS);
	ck_assert_int_le(test_elem_int(r, 3), 901 + SKEW_MS);
	ck_state(r, 2, 1, 500, test_elem_int(r, 3), "", "limit", "3", "window_ms", "1000");
	/* "" takes the recorded ones */
	r = state_of(p, "", "", "500");
	ck_state(r, 2, 1, 500, test_elem_int(r, 3), "", "limit", "3", "window_ms", "1000");
	r = state_of(p, "3", "1000", "50"); /* older: served at 100 */
	ck_state(r, 2, 1, 900, test_elem_int(r, 3), "", "limit", "3", "window_ms", "1000");
	r = state_of(p, "3", "1000", "1000"); /* the next window */
	ck_state(r, 0, 3, 0, test_elem_int(r, 3), "", "limit", "3", "window_ms", "1000");
	/* the given ones win: a lowered limit, a raised one, another window length */
	r = state_of(p, "1", "", "999");
	ck_state(r, 2, 0, 1, test_elem_int(r, 3), "", "limit", "3", "window_ms", "1000");
	r = state_of(p, "7", "", "500");
	ck_state(r, 2, 5, 500, test_elem_int(r, 3), "", "limit", "3", "window_ms", "1000");
	r = state_of(p, "", "100", "150");
	ck_state(r, 0, 3, 0, test_elem_int(r, 3), "", "limit", "3", "window_ms", "1000");
	/* now "" is Redis TIME (long after 100: the next window), now absent too */
	r = state_of(p, "", "", "");
	ck_state(r, 0, 3, 0, test_elem_int(r, 3), "", "limit", "3", "window_ms", "1000");
	r = ev("fixed_window_state", 2, FW_KEY(p), FW_KEY(p), "3", "1000", NULL);
	ck_state(r, 0, 3, 0, test_elem_int(r, 3), "", "limit", "3", "window_ms", "1000");
	ck_snapshot_same(before);
	free(before);

	/* A hash that records nothing: counted at its index when a window_ms is given. */
	freeReplyObject(test_cmd(c, "HSET %s window 0 count 4 t 100", FW_KEY("/bare")));
	ck_state(state_of("/bare", "", "", "500"), 4, -1, -1, -1, "", NO_RECORD);
	ck_state(state_of("/bare", "5", "", "500"), 4, 1, -1, -1, "", NO_RECORD);
	ck_state(state_of("/bare", "", "1000", "500"), 4, -1, 500, -1, "", NO_RECORD);
	ck_state(state_of("/bare", "5", "1000", "1000"), 0, 5, 0, -1, "", NO_RECORD);

	/* A foreign INCR counter: its value, and when it expires (never: -1). */
	freeReplyObject(test_cmd(c, "SET rate_limit:x 4"));
	ck_state(ev("fixed_window_state", 2, "rate_limit:x", "rate_limit:x", "3", "60000", "0", NULL), 4, 0, -1, -1, "",
		 NO_RECORD);
	ck_state(ev("fixed_window_state", 2, "rate_limit:x", "rate_limit:x", "", "", "0", NULL), 4, -1, -1, -1, "",
		 NO_RECORD);
	freeReplyObject(test_cmd(c, "PEXPIRE rate_limit:x 60000"));
	r = ev("fixed_window_state", 2, "rate_limit:x", "rate_limit:x", "10", "60000", "0", NULL);
	ck_assert_int_gt(test_elem_int(r, 2), 60000 - SLACK_MS);
	ck_state(r, 4, 6, test_elem_int(r, 2), test_elem_int(r, 2), "", NO_RECORD);
	freeReplyObject(test_cmd(c, "ZADD z 1 x"));
	ck_error(ev("fixed_window_state", 2, "z", "z", "3", "1000", "0", NULL),
		 "ERR sluice: fixed_window_state: the counter is a zset");
}
END_TEST

START_TEST(test_fw_state_read_only)
{
	const char *argv[] = { FW_KEY("/ro"), test_key("/ro", "fixed_window_meta"), "3", "1000", "0" };
	redisReply *r;

	freeReplyObject(fw("/ro", "3", "1000", 0));
	/* Declared no-writes: Redis runs it with EVAL_RO. */
	r = test_script_argv(c, TEST_EVAL_RO, "fixed_window_state", 2, 5, argv, NULL);
	ck_state(r, 1, 2, 1000, test_elem_int(r, 3), "", "limit", "3", "window_ms", "1000");
}
END_TEST

/* ---- TTLs to the ms ---------------------------------------------------------- */

/*
 * Where the counter's TTL ends, to the ms (PEXPIRETIME).  The call uses Redis
 * TIME; it is repeated until TIME reads the same ms before and after it, so
 * that the script's now and the base of its PEXPIRE are that ms.  Returns the ms.
 */
static long long call_within_one_ms(const char *p, const char *limit, const char *window)
{
	for (int attempt = 0; attempt < 200; attempt++) {
		long long before, after;

		freeReplyObject(test_cmd(c, "DEL %s", FW_KEY(p)));
		before = test_server_ms(c);
		freeReplyObject(acquire(FW, p, limit, window, NULL, NULL, NULL));
		after = test_server_ms(c);
		if (before == after)
			return before;
	}
	ck_abort_msg("could not call a script within one ms");
	return -1;
}

START_TEST(test_ttls_to_the_ms)
{
	long long t;

	/* to the window's end, + 1 ms, and the horizon */
	t = call_within_one_ms("/ttl", "5", "1000");
	ck_assert_int_eq(test_cmd_int(c, "PEXPIRETIME %s", FW_KEY("/ttl")), (t / 1000 + 1) * 1000 + 1 + SKEW_MS);
	t = call_within_one_ms("/ttl", "5", "7");
	ck_assert_int_eq(test_cmd_int(c, "PEXPIRETIME %s", FW_KEY("/ttl")), (t / 7 + 1) * 7 + 1 + SKEW_MS);
}
END_TEST

/* ---- table tests: (parameters, calls with now) -> exact replies ------------ */

struct fw_step {
	long long now;     /* ms; -1 ends the table */
	long long n;       /* cost; 0: "" (1) */
	long long want[4]; /* allowed, remaining, retry_after_ms, reset_ms */
	long long ttl;     /* admitted: the counter's PTTL right after the call */
	long long due;     /* admitted: the path's due time in its shard's registry */
};

struct fw_case {
	const char *name;
	const char *limit, *window;
	struct fw_step steps[24];
};

#define FW_END { -1, 0, { 0, 0, 0, 0 }, 0, 0 }

/* TTL: the window's end + 1 ms, and SKEW_MS (10000) more for the mark, from
 * the caller's now; due: the end of the window that registered the path +
 * SKEW_MS (ZADD LT keeps the earliest). */
static const struct fw_case fw_cases[] = {
	{ "limit 3 per 1000 ms",
	  "3",
	  "1000",
	  { /* many requests in one millisecond: 3 counted, the 4th refused */
	    { 0, 0, { 1, 2, 0, 1000 }, 11001, 11000 },
	    { 0, 0, { 1, 1, 0, 1000 }, 11001, 11000 },
	    { 0, 0, { 1, 0, 0, 1000 }, 11001, 11000 },
	    { 0, 0, { 0, 0, 1000, 1000 }, 0, 0 },
	    { 500, 0, { 0, 0, 500, 500 }, 0, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0, 0 },
	    /* the window boundary: a new window, a fresh count */
	    { 1000, 0, { 1, 2, 0, 1000 }, 11001, 11000 },
	    /* an older now is served at the stored 1000 (window 1), TTL from its own now */
	    { 999, 0, { 1, 1, 0, 1000 }, 11002, 11000 },
	    { 1500, 0, { 1, 0, 0, 500 }, 10501, 11000 },
	    { 1999, 0, { 0, 0, 1, 1 }, 0, 0 },
	    { 2000, 0, { 1, 2, 0, 1000 }, 11001, 11000 },
	    FW_END } },
	{ "a client that keeps retrying gets in when the window ends",
	  "2",
	  "1000",
	  { { 100, 0, { 1, 1, 0, 900 }, 10901, 11000 },
	    { 200, 0, { 1, 0, 0, 800 }, 10801, 11000 },
	    { 300, 0, { 0, 0, 700, 700 }, 0, 0 },
	    { 400, 0, { 0, 0, 600, 600 }, 0, 0 },
	    { 500, 0, { 0, 0, 500, 500 }, 0, 0 },
	    { 600, 0, { 0, 0, 400, 400 }, 0, 0 },
	    { 700, 0, { 0, 0, 300, 300 }, 0, 0 },
	    { 800, 0, { 0, 0, 200, 200 }, 0, 0 },
	    { 900, 0, { 0, 0, 100, 100 }, 0, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0, 0 },
	    { 1000, 0, { 1, 1, 0, 1000 }, 11001, 11000 },
	    { 1000, 0, { 1, 0, 0, 1000 }, 11001, 11000 },
	    { 1001, 0, { 0, 0, 999, 999 }, 0, 0 },
	    FW_END } },
	{ "1 per minute, requests just before and after the boundary",
	  "1",
	  "60000",
	  { { 30000, 0, { 1, 0, 0, 30000 }, 40001, 70000 },
	    { 59999, 0, { 0, 0, 1, 1 }, 0, 0 },
	    { 60000, 0, { 1, 0, 0, 60000 }, 70001, 70000 },
	    { 60000, 0, { 0, 0, 60000, 60000 }, 0, 0 },
	    { 119999, 0, { 0, 0, 1, 1 }, 0, 0 },
	    FW_END } },
	{ "costs: 5 per 1000 ms",
	  "5",
	  "1000",
	  { { 100, 3, { 1, 2, 0, 900 }, 10901, 11000 },
	    { 200, 3, { 0, 2, 800, 800 }, 0, 0 },
	    { 300, 2, { 1, 0, 0, 700 }, 10701, 11000 },
	    { 400, 1, { 0, 0, 600, 600 }, 0, 0 },
	    { 500, 6, { 0, 0, -1, 500 }, 0, 0 },
	    { 1000, 6, { 0, 5, -1, 1000 }, 0, 0 },
	    { 1000, 5, { 1, 0, 0, 1000 }, 11001, 11000 },
	    /* a client 800 ms behind is served at 1000, in window 1 */
	    { 200, 1, { 0, 0, 1000, 1000 }, 0, 0 },
	    { 2000, 1, { 1, 4, 0, 1000 }, 11001, 11000 },
	    FW_END } },
	{ "1 ms windows",
	  "1",
	  "1",
	  { { 5, 0, { 1, 0, 0, 1 }, 10002, 10006 },
	    { 5, 0, { 0, 0, 1, 1 }, 0, 0 },
	    { 6, 0, { 1, 0, 0, 1 }, 10002, 10006 },
	    { 8, 0, { 1, 0, 0, 1 }, 10002, 10006 },
	    FW_END } },
};

START_TEST(test_table)
{
	const struct fw_case *fc = &fw_cases[_i];
	const char *p = "/table", *key = FW_KEY(p);

	for (int i = 0; fc->steps[i].now >= 0; i++) {
		const struct fw_step *st = &fc->steps[i];
		char where[256], *before = NULL, got[256];
		redisReply *r;
		int ok;

		snprintf(where, sizeof(where), "%s, step %d (now %lld)", fc->name, i, st->now);
		if (!st->want[0]) {
			/* A rejected request extends no TTL: mark the TTL first. */
			freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", key, MARKER_TTL));
			before = test_snapshot(c);
		}
		r = acquire(FW, p, fc->limit, fc->window, NULL, st->n ? num(st->n) : NULL, num(st->now));
		ok = r->type == REDIS_REPLY_ARRAY && r->elements == 5 && r->element[4]->type == REDIS_REPLY_STRING &&
		     r->element[4]->len == 0;
		for (int k = 0; ok && k < 4; k++)
			ok = r->element[k]->type == REDIS_REPLY_INTEGER && r->element[k]->integer == st->want[k];
		ck_assert_msg(ok, "%s: reply %s, want {%lld, %lld, %lld, %lld, \"\"}", where,
			      test_show_reply(r, got, sizeof(got)), st->want[0], st->want[1], st->want[2], st->want[3]);
		freeReplyObject(r);
		if (st->want[0]) {
			check_pttl(where, 0, key, st->ttl);
			ck_assert_msg(due_of(FW, p) == st->due, "%s: due %lld, want %lld", where, due_of(FW, p), st->due);
			/* Virtual time: keep the counter from expiring in real time. */
			freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", key, MARKER_TTL));
			continue;
		}
		/* A rejection writes nothing at all, the registry included. */
		ck_snapshot_same(before);
		free(before);
		if (test_cmd_int(c, "EXISTS %s", key))
			check_pttl(where, 0, key, MARKER_TTL);
	}
}
END_TEST

/* ---- the skew scenario (issue 8, item 3) ----------------------------------- */

#define SKEW_PATH "/skew"

static int skew_call(long long now)
{
	return (int)test_acquire(c, TEST_EVALSHA, "fixed_window", SKEW_PATH, now, "10", "10000", NULL);
}

static void skew_job(long long r)
{
	freeReplyObject(shard_job(FW, SKEW_PATH, r));
}

/*
 * 10 per 10 s, clients 5 s behind Redis, the shard job at Redis time
 * (tests/window_trace.h).  By DESIGN.md's rule (served at max(now, t),
 * counted in the window that holds it) the clients are admitted at c0 + 0 ..
 * 450 in window [c0, c0 + 10000) and c0 + 10000 .. 10450 in the next: 20 in
 * 12 s, never more than the rule allows (0.1's repair at Redis time let 30
 * through).  The job leaves each window's counter until every client within
 * the horizon is past it: registered at the first window's end + SKEW_MS (R0
 * + 15000), when the counter already counts the second window, rescheduled
 * to that one's end + SKEW_MS, and deleted there, at R0 + 25000 (R - 10000 =
 * c0 + 20000); the path leaves the registry.  Without the worker the counter
 * goes by its TTL: the window's end + 1 and the horizon from the last
 * admission's now, (c0 + 20000) + 1 + 10000 - (c0 + 10450).
 */
START_TEST(test_fw_skew_lagging_clients)
{
	for (int worker = 1; worker >= 0; worker--) {
		struct skew_run run;
		long long r0 = (test_server_ms(c) / 10000 - 1) * 10000 + SKEW_LAG_MS; /* in the past: the client is never ahead of TIME */
		const char *what = worker ? "fixed window with the worker" : "fixed window without worker";
		char key[64];

		snprintf(key, sizeof(key), "%s", FW_KEY(SKEW_PATH)); /* FW_KEY's buffers rotate */
		freeReplyObject(test_cmd(c, "FLUSHALL"));
		skew_scenario(r0, key, skew_call, worker ? skew_job : NULL, NULL, &run);
		skew_check_admissions(&run, r0 - SKEW_LAG_MS, what);
		ck_assert_int_eq(run.gone_at, (worker ? r0 + 25000 : -1));
		ck_assert_int_eq(in_registry(FW, SKEW_PATH), !worker);
		if (!worker) {
			ck_pttl(FW_KEY(SKEW_PATH), 20000 + 1 + 10000 - 10450);
			ck_assert_int_eq(due_of(FW, SKEW_PATH), r0 + 15000);
		}
	}
}
END_TEST

/* ---- the reference model, against the scripts over random traces ------------ */

/* A TTL no script sets, far ahead: the trace's counters expire in virtual time only. */
#define TRACE_MARKER_MS 1000000000LL

struct fw_trace {
	struct fwm m;
	struct fwp k[FWM_PATHS];   /* the paths, all in one shard, and their keys */
	uint64_t seed;
	long long pos;             /* events so far: the position a failure names */
	long long r;               /* Redis time (virtual) */
	char sha[41], job_sha[41];
	long long limit[FWM_PATHS], window[FWM_PATHS]; /* the rule each path's client passes now */
	long long lag[FWM_PATHS], last_now[FWM_PATHS];
	long long marker_at[FWM_PATHS]; /* PEXPIRETIME of the marker TTL, while the model says it has a TTL */
	/* the rule's bound on the served timeline: cost admitted in the window the latest admission was served in */
	long long led_window[FWM_PATHS], led_w[FWM_PATHS], led_sum[FWM_PATHS], led_max[FWM_PATHS], led_t[FWM_PATHS];
	char event[128];
	/* what the trace went through, so that a weaker generator cannot pass unnoticed */
	long long seen_admitted, seen_full, seen_never, seen_stale, seen_repaired, seen_removed, seen_backlog;
};

/* Fail with the trace's position unless `ok`. */
#define fwt_assert(tr, ok, ...)                                                                           \
	do {                                                                                                \
		if (!(ok)) {                                                                                \
			char msg_[1024];                                                                    \
			snprintf(msg_, sizeof(msg_), __VA_ARGS__);                                          \
			ck_abort_msg("fixed_window trace, seed %llu, event %lld (%s; Redis time %lld): %s", \
				     (unsigned long long)(tr)->seed, (tr)->pos, (tr)->event, (tr)->r, msg_);  \
		}                                                                                           \
	} while (0)

static redisReply *fwt_reply(void)
{
	void *r = NULL;

	ck_assert_int_eq(redisGetReply(c, &r), REDIS_OK);
	return r;
}

/* Redis's clock in ms from a TIME reply; frees it. */
static long long fwt_time_ms(redisReply *r)
{
	long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;

	freeReplyObject(r);
	return ms;
}

/* The reply r is the integers want[0..n), then (rule) "" when `rule`; frees r. */
static void fwt_compare(struct fw_trace *tr, redisReply *r, const long long *want, size_t n, int rule)
{
	char got[256];
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == n + (size_t)rule;

	for (size_t i = 0; ok && i < n; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	if (ok && rule)
		ok = r->element[n]->type == REDIS_REPLY_STRING && r->element[n]->len == 0;
	fwt_assert(tr, ok, "script %s, model {%lld, %lld, %lld, %lld%s%lld%s%lld}", test_show_reply(r, got, sizeof(got)),
		     want[0], want[1], want[2], want[3], n > 4 ? ", " : "", n > 4 ? want[4] : 0, n > 5 ? ", " : "",
		     n > 5 ? want[5] : 0);
	freeReplyObject(r);
}

/*
 * A TTL of `ttl` ms was just set on path i by a script that ran between the
 * TIME readings t0 and t1, and PEXPIRETIME read `at` before t1: check it,
 * then move it to the marker (so that it never ends in real time).  A TTL of
 * a few ms (the job's, at the end of a counter's horizon) may end in real
 * time before it is read: then t1 is past it, and the counter is put back as
 * the model holds it (as the trace deletes counters whose TTL ended in
 * virtual time).
 */
static void fwt_ttl_set(struct fw_trace *tr, int i, long long ttl, long long t0, long long t1, long long at)
{
	const struct fwp *k = &tr->k[i];
	const struct fwm_path *p = &tr->m.p[i];

	if (at == -2) {
		fwt_assert(tr, t1 >= t0 + ttl, "path %d is gone, %lld ms after the call, before its TTL of %lld", i,
			   t1 - t0, ttl);
		freeReplyObject(test_cmd(c, "HSET %b window %lld count %lld t %lld limit %lld window_ms %lld rule %s",
					 k->key[0], k->klen[0], p->window, p->count, p->mark, p->rec_limit, p->rec_window,
					 ""));
	} else {
		fwt_assert(tr, at >= t0 + ttl && at <= t1 + ttl, "path %d expires %lld ms after the call, want %lld", i,
			   at - t0, ttl);
	}
	freeReplyObject(test_cmd(c, "PEXPIRE %b %lld", k->key[0], k->klen[0], TRACE_MARKER_MS));
	tr->marker_at[i] = test_cmd_int(c, "PEXPIRETIME %b", k->key[0], k->klen[0]);
}

/* Every path's counter (fields and TTL) and due time are what the model says. */
static void fwt_check_all(struct fw_trace *tr)
{
	for (int i = 0; i < FWM_PATHS; i++) {
		const struct fwp *k = &tr->k[i];

		redisAppendCommand(c, "HMGET %b window count t limit window_ms rule", k->key[0], k->klen[0]);
		redisAppendCommand(c, "PEXPIRETIME %b", k->key[0], k->klen[0]);
		redisAppendCommand(c, "ZSCORE %b %b", k->key[2], k->klen[2], k->path, k->len);
	}
	for (int i = 0; i < FWM_PATHS; i++) {
		const struct fwm_path *p = &tr->m.p[i];
		redisReply *h = fwt_reply(), *e = fwt_reply(), *z = fwt_reply();
		char got[256], want[256];

		if (p->exists)
			snprintf(want, sizeof(want), "{\"%lld\", \"%lld\", \"%lld\", \"%lld\", \"%lld\", \"\"}", p->window,
				 p->count, p->mark, p->rec_limit, p->rec_window);
		else
			snprintf(want, sizeof(want), "{nil, nil, nil, nil, nil, nil}");
		fwt_assert(tr, strcmp(test_show_reply(h, got, sizeof(got)), want) == 0, "path %d holds %s, want %s", i,
			     got, want);
		fwt_assert(tr, e->integer == (!p->exists ? -2 : p->has_ttl ? tr->marker_at[i] : -1),
			     "path %d: PEXPIRETIME %lld, model %s", i, e->integer,
			     !p->exists ? "absent" : p->has_ttl ? "the marker" : "no TTL");
		fwt_assert(tr, p->registered ? z->type == REDIS_REPLY_STRING && atoll(z->str) == p->due
					       : z->type == REDIS_REPLY_NIL,
			     "path %d due %s, model %lld", i, z->type == REDIS_REPLY_STRING ? z->str : "nil",
			     p->registered ? p->due : -1);
		freeReplyObject(h);
		freeReplyObject(e);
		freeReplyObject(z);
	}
}

/* The rule's bound: served times never go back, and a window never admits more than its limit (the highest it had). */
static void fwt_ledger(struct fw_trace *tr, int i, long long t, long long n)
{
	long long window = tr->window[i], w = fwm_floor_div(t, window);

	fwt_assert(tr, t >= tr->led_t[i], "path %d served at %lld, before its last admission at %lld", i, t,
		     tr->led_t[i]);
	tr->led_t[i] = t;
	if (tr->led_window[i] != window || tr->led_w[i] != w) {
		tr->led_window[i] = window, tr->led_w[i] = w;
		tr->led_sum[i] = 0, tr->led_max[i] = 0;
	}
	tr->led_sum[i] += n;
	tr->led_max[i] = fwm_max(tr->led_max[i], tr->limit[i]);
	fwt_assert(tr, tr->led_sum[i] <= tr->led_max[i], "path %d: %lld admitted in window %lld, limit %lld", i,
		     tr->led_sum[i], w, tr->led_max[i]);
}

/* A client call of path i at now, cost n ("" when 1 and `blank`). */
static void fwt_call(struct fw_trace *tr, int i, long long now, long long n, int blank)
{
	const struct fwp *k = &tr->k[i];
	char ns[24], nw[24], lim[24], win[24];
	const char *argv[14] = { "EVALSHA", tr->sha, "5", k->key[0], k->key[1], k->key[2], k->key[3], k->key[4],
				 k->path, ns, nw, "", lim, win };
	size_t lens[14];
	long long want[4], ttl, t0, t1, served, at;
	redisReply *res, *e;

	snprintf(ns, sizeof(ns), "%s", blank ? "" : test_num(n));
	snprintf(nw, sizeof(nw), "%lld", now);
	snprintf(lim, sizeof(lim), "%lld", tr->limit[i]);
	snprintf(win, sizeof(win), "%lld", tr->window[i]);
	for (int j = 0; j < 14; j++)
		lens[j] = strlen(argv[j]);
	for (int j = 0; j < 5; j++)
		lens[3 + j] = k->klen[j];
	lens[8] = k->len;
	snprintf(tr->event, sizeof(tr->event), "call of path %d at now %lld = R - %lld, n %lld, limit %lld, window_ms %lld",
		 i, now, tr->r - now, n, tr->limit[i], tr->window[i]);
	redisAppendCommand(c, "TIME");
	redisAppendCommandArgv(c, 14, argv, lens);
	redisAppendCommand(c, "PEXPIRETIME %b", k->key[0], k->klen[0]);
	redisAppendCommand(c, "TIME");
	t0 = fwt_time_ms(fwt_reply());
	res = fwt_reply();
	e = fwt_reply();
	t1 = fwt_time_ms(fwt_reply());
	ttl = fwm_call(&tr->m, i, tr->limit[i], tr->window[i], n, now, tr->r, want, &served);
	tr->seen_admitted += want[0];
	tr->seen_full += !want[0] && want[2] > 0;
	tr->seen_never += want[2] == -1;
	tr->seen_stale += served > now;
	fwt_compare(tr, res, want, 4, 1);
	at = e->integer;
	freeReplyObject(e);
	if (ttl >= 0) {
		fwt_ttl_set(tr, i, ttl, t0, t1, at);
		fwt_ledger(tr, i, served, n);
	}
	fwt_check_all(tr);
}

/* The shard job at Redis time, up to `limit` paths. */
static void fwt_job(struct fw_trace *tr, long long limit)
{
	const struct fwp *k = &tr->k[0];
	char now[24], lim[24];
	const char *argv[6] = { "EVALSHA", tr->job_sha, "1", k->key[2], now, lim };
	size_t lens[6];
	long long want[6], ttl[FWM_PATHS], at[FWM_PATHS], t0, t1;
	redisReply *res;

	snprintf(now, sizeof(now), "%lld", tr->r);
	snprintf(lim, sizeof(lim), "%lld", limit);
	for (int j = 0; j < 6; j++)
		lens[j] = strlen(argv[j]);
	snprintf(tr->event, sizeof(tr->event), "shard job, limit %lld", limit);
	redisAppendCommand(c, "TIME");
	redisAppendCommandArgv(c, 6, argv, lens);
	for (int i = 0; i < FWM_PATHS; i++)
		redisAppendCommand(c, "PEXPIRETIME %b", tr->k[i].key[0], tr->k[i].klen[0]);
	redisAppendCommand(c, "TIME");
	t0 = fwt_time_ms(fwt_reply());
	res = fwt_reply();
	for (int i = 0; i < FWM_PATHS; i++) {
		redisReply *e = fwt_reply();

		at[i] = e->integer;
		freeReplyObject(e);
	}
	t1 = fwt_time_ms(fwt_reply());
	fwm_job(&tr->m, tr->r, limit, want, ttl);
	tr->seen_repaired += want[0];
	tr->seen_removed += want[1];
	tr->seen_backlog += want[5] > 0;
	fwt_compare(tr, res, want, 6, 0);
	for (int i = 0; i < FWM_PATHS; i++)
		if (ttl[i] >= 0)
			fwt_ttl_set(tr, i, ttl[i], t0, t1, at[i]);
	fwt_check_all(tr);
}

/* Redis time moves to r: counters whose TTL ended go (the test deletes them: Redis's own expiry is real time). */
static void fwt_advance(struct fw_trace *tr, long long r)
{
	tr->r = r;
	for (int i = 0; i < FWM_PATHS; i++) {
		struct fwm_path *p = &tr->m.p[i];

		if (p->exists && p->has_ttl && r >= p->expire_at) {
			freeReplyObject(test_cmd(c, "DEL %b", tr->k[i].key[0], tr->k[i].klen[0]));
			p->exists = 0;
		}
	}
}

/* A client's now: on time, the path's usual lag, the same ms as its last call, any lag, the whole horizon. */
static long long fwt_now(struct fw_trace *tr, struct model_rng *g, int i)
{
	long long x = model_range(g, 0, 99), now;

	if (x < 35)
		now = tr->r;
	else if (x < 60)
		now = tr->r - tr->lag[i];
	else if (x < 75)
		now = tr->last_now[i];
	else if (x < 90)
		now = tr->r - model_range(g, 0, SKEW_MS);
	else
		now = tr->r - SKEW_MS;
	now = fwm_max(now, tr->r - SKEW_MS);
	tr->last_now[i] = now;
	return now;
}

/*
 * A trace of `calls` client calls (seed `seed`) over FWM_PATHS paths of one
 * shard with random rules ("{t}race" names the shard; the others are a
 * plain path, one that starts with '}' and one that holds a NUL), costs
 * 1..3, clients on time or lagging Redis by up to the horizon (same-ms calls
 * and stale times among them), and, at random instants: the shard job
 * (2.5%: up to 500 paths, or 1..3 so that some stay due), a lost TTL (0.5%:
 * PERSIST, as a foreign writer would leave it), an edit of a path's limit
 * (1%) or window (0.3%); counters expire as Redis time passes their TTL.
 * And, where off-by-one errors hide (3%): Redis time moves to 1 ms before or
 * to the instant a path's window ends, for a client on time or for the job
 * (its window's end + SKEW_MS), and the job (half of the time) and a client
 * lagging by 0 or the whole horizon run there.  Every reply, field, TTL and
 * due time is compared with the model, and every admission with the rule.
 */
static void fwt_run(uint64_t seed, int calls)
{
	static const struct {
		const char *stem;
		size_t len;
	} stems[FWM_PATHS] = { { "{t}race", 7 }, { "/trace/a-", 9 }, { "}trace-", 7 }, { "/tr\0ce-", 7 } };
	struct fw_trace *tr = calloc(1, sizeof(*tr));
	struct model_rng g = { seed };
	unsigned shard = shard_of("{t}race", 7);

	ck_assert_ptr_nonnull(tr);
	tr->seed = seed;
	tr->m.skew = SKEW_MS;
	snprintf(tr->event, sizeof(tr->event), "start");
	{
		redisReply *r = test_cmd(c, "SCRIPT LOAD %s", script_find("fixed_window")->body);

		memcpy(tr->sha, r->str, 41);
		freeReplyObject(r);
		r = test_cmd(c, "SCRIPT LOAD %s", script_find("fixed_window_repair_shard")->body);
		memcpy(tr->job_sha, r->str, 41);
		freeReplyObject(r);
	}
	tr->r = 1700000000000LL + model_range(&g, 0, 999999);
	fwp_init(&tr->k[0], stems[0].stem, stems[0].len);
	for (int i = 1; i < FWM_PATHS; i++)
		fwp_in_shard(&tr->k[i], stems[i].stem, stems[i].len, shard);
	for (int i = 0; i < FWM_PATHS; i++) {
		memcpy(tr->m.p[i].name, tr->k[i].path, tr->k[i].len);
		tr->m.p[i].len = tr->k[i].len;
		tr->limit[i] = trace_limit(&g);
		tr->window[i] = trace_window(&g);
		tr->lag[i] = model_range(&g, 0, SKEW_MS);
		tr->last_now[i] = tr->r;
		tr->led_window[i] = -1;
		tr->led_t[i] = -1;
	}
	unsigned idle = 0;

	for (int done = 0, down = 0; done < calls; tr->pos++) {
		long long x = model_range(&g, 0, 999), lag = model_range(&g, 0, 1) * SKEW_MS;
		int i = (int)model_range(&g, 0, FWM_PATHS - 1);
		const struct fwm_path *p;

		/* now and then a path falls idle (or wakes up): its counter expires unseen */
		if (model_range(&g, 0, 299) == 0)
			idle ^= 1u << model_range(&g, 0, FWM_PATHS - 1);
		if (idle == (1u << FWM_PATHS) - 1)
			idle = 0;
		while (idle & (1u << i))
			i = (i + 1) % FWM_PATHS;
		p = &tr->m.p[i];
		long long edge = p->exists ? (p->window + 1) * p->rec_window + lag - model_range(&g, 0, 1) : -1;

		if (x >= 970 && edge > tr->r)
			fwt_advance(tr, edge);
		else
			fwt_advance(tr, tr->r + trace_step(&g));
		if (model_range(&g, 0, down ? 199 : 799) == 0)
			down = !down; /* no daemon runs for a while (some 200 events): members go overdue */
		if (x >= 970 && tr->r == edge) {
			if (x % 2 && !down)
				fwt_job(tr, 500);
			tr->last_now[i] = tr->r - lag;
			fwt_call(tr, i, tr->r - lag, model_range(&g, 1, 3), 0);
			done++;
		} else if (x < 25) {
			if (!down)
				fwt_job(tr, model_range(&g, 0, 9) < 7 ? 500 : model_range(&g, 1, 3));
		} else if (x < 35) {
			if (tr->m.p[i].exists) {
				snprintf(tr->event, sizeof(tr->event), "PERSIST of path %d", i);
				freeReplyObject(test_cmd(c, "PERSIST %b", tr->k[i].key[0], tr->k[i].klen[0]));
				tr->m.p[i].has_ttl = 0;
				fwt_check_all(tr);
			}
		} else if (x < 45) {
			tr->limit[i] = trace_limit(&g);
		} else if (x < 48) {
			tr->window[i] = trace_window(&g);
		} else {
			long long n = model_range(&g, 1, 3);

			fwt_call(tr, i, fwt_now(tr, &g, i), n, n == 1 && x % 2);
			done++;
		}
	}
	ck_assert_msg(tr->seen_admitted > 2000 && tr->seen_full > 1000 && tr->seen_never > 100 && tr->seen_stale > 1000 &&
			      tr->seen_repaired > 0 && tr->seen_removed > 30 && tr->seen_backlog > 3,
		      "seed %llu: the trace missed a case it is meant to cover: admitted %lld, full %lld, n > limit %lld, "
		      "served at the mark %lld; job: repaired %lld, removed %lld, backlog %lld",
		      (unsigned long long)seed, tr->seen_admitted, tr->seen_full, tr->seen_never, tr->seen_stale,
		      tr->seen_repaired, tr->seen_removed, tr->seen_backlog);
	free(tr);
}

/* 10,000 calls per seed. */
START_TEST(test_fw_model_traces)
{
	fwt_run(3000 + (uint64_t)_i, 10000);
}
END_TEST

/* ---- the batch repair of foreign counters ------------------------------------ */

START_TEST(test_fw_repair_foreign_batch)
{
	char *before;

	/* Seed 001's INCR counters (and what else a foreign layout's keys may be):
	 * E: a string without TTL -> the whole window;  F: a string with a TTL -> left alone;
	 * D: registered, absent -> out of the registry;  G: a sorted set, H: a hash -> skipped. */
	freeReplyObject(test_cmd(c, "SET rate_limit:E 7"));
	freeReplyObject(test_cmd(c, "SET rate_limit:F 3 PX 400000"));
	freeReplyObject(test_cmd(c, "ZADD rate_limit:G 1 x"));
	freeReplyObject(test_cmd(c, "HSET rate_limit:H window 0 count 2 t 100"));
	freeReplyObject(test_cmd(c, "SADD %s D E F G H", FW_REG));
	ck_reply(ev("fixed_window_repair", 6, FW_REG, "rate_limit:D", "rate_limit:E", "rate_limit:F", "rate_limit:G",
		    "rate_limit:H", "11500", "D", "1000", "E", "1000", "F", "1000", "G", "1000", "H", "1000", NULL),
		 1, 1, 5, 2);
	ck_pttl("rate_limit:E", 1000);
	ck_cmd("\"7\"", "GET rate_limit:E");
	ck_pttl("rate_limit:F", 400000);
	ck_cmd("{\"x\"}", "ZRANGE rate_limit:G 0 -1");
	ck_assert_int_eq(test_cmd_int(c, "PTTL rate_limit:H"), -1);
	ck_cmd("{\"E\", \"F\", \"G\", \"H\"}", "SORT %s ALPHA", FW_REG);
	/* Idempotent: the same call again changes nothing. */
	before = test_snapshot(c);
	ck_reply(ev("fixed_window_repair", 6, FW_REG, "rate_limit:D", "rate_limit:E", "rate_limit:F", "rate_limit:G",
		    "rate_limit:H", "11500", "D", "1000", "E", "1000", "F", "1000", "G", "1000", "H", "1000", NULL),
		 0, 0, 5, 2);
	ck_snapshot_same(before);
	free(before);
	/* Redis TIME, and an empty batch. */
	freeReplyObject(test_cmd(c, "PERSIST rate_limit:E"));
	ck_reply(ev("fixed_window_repair", 2, FW_REG, "rate_limit:E", "", "E", "60000", NULL), 1, 0, 1, 0);
	ck_pttl("rate_limit:E", 60000);
	ck_reply(ev("fixed_window_repair", 1, FW_REG, "1500", NULL), 0, 0, 0, 0);
	ck_reply(ev("fixed_window_repair", 1, FW_REG, NULL), 0, 0, 0, 0);
}
END_TEST

/* ---- validation ------------------------------------------------------------ */

/* Placeholders for path /v's keys, filled in by the test (their shard is computed). */
#define S_ "@state"
#define M_ "@meta"
#define R_ "@registry"
#define U_ "@rules"
#define T_ "@stats"
#define V5 S_, M_, R_, U_, T_

static const struct bad_call bad_calls[] = {
	/* the client: the contract's KEYS */
	{ "fixed_window", 4, { S_, M_, R_, U_, "/v", "", "9000", "", "3", "1000" }, "ERR sluice: fixed_window takes 5 KEYS" },
	{ "fixed_window", 5, { "sluice:/v", M_, R_, U_, T_, "/v", "", "9000", "", "3", "1000" }, "ERR sluice: KEYS[1] " },
	{ "fixed_window", 5, { "sluice:{01}:fixed_window:/v", M_, R_, U_, T_, "/v", "", "9000", "", "3", "1000" },
	  "ERR sluice: KEYS[1] " },
	{ "fixed_window", 5, { "sluice:{1024}:fixed_window:/v", M_, R_, U_, T_, "/v", "", "9000", "", "3", "1000" },
	  "ERR sluice: KEYS[1] " },
	{ "fixed_window", 5, { "@other", M_, R_, U_, T_, "/v", "", "9000", "", "3", "1000" }, "ERR sluice: KEYS[1] " },
	{ "fixed_window", 5, { S_, "@lbmeta", R_, U_, T_, "/v", "", "9000", "", "3", "1000" }, "ERR sluice: KEYS[2] " },
	{ "fixed_window", 5, { S_, M_, "@lbreg", U_, T_, "/v", "", "9000", "", "3", "1000" }, "ERR sluice: KEYS[3] " },
	{ "fixed_window", 5, { S_, M_, R_, T_, T_, "/v", "", "9000", "", "3", "1000" }, "ERR sluice: KEYS[4] " },
	{ "fixed_window", 5, { S_, M_, R_, U_, U_, "/v", "", "9000", "", "3", "1000" }, "ERR sluice: KEYS[5] " },
	/* ARGV */
	{ "fixed_window", 5, { V5, "", "", "9000", "", "3", "1000" }, "ERR sluice: path " },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "", "3" },
	  "ERR sluice: fixed_window takes ARGV path, n, now, rule, then limit, window_ms (6 in all)" },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "", "3", "1000", "1" }, "ERR sluice: fixed_window takes ARGV" },
	{ "fixed_window", 5, { V5, "/v", "0", "9000", "", "3", "1000" }, "ERR sluice: n " },
	{ "fixed_window", 5, { V5, "/v", "1.5", "9000", "", "3", "1000" }, "ERR sluice: n " },
	{ "fixed_window", 5, { V5, "/v", "-1", "9000", "", "3", "1000" }, "ERR sluice: n " },
	{ "fixed_window", 5, { V5, "/v", "9007199254740992", "9000", "", "3", "1000" }, "ERR sluice: n " },
	{ "fixed_window", 5, { V5, "/v", "", "-5", "", "3", "1000" }, "ERR sluice: now " },
	{ "fixed_window", 5, { V5, "/v", "", "1e3", "", "3", "1000" }, "ERR sluice: now " },
	/* a rule reference takes no numbers beside it, names an existing rule, and is a rule name */
	{ "fixed_window", 5, { V5, "/v", "", "9000", "*", "3", "1000" }, "ERR sluice: ARGV[5] (limit) must be \"\" with a rule" },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "api", "", "1000" }, "ERR sluice: ARGV[6] (window_ms) must be \"\" with a rule" },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "api", "", "" }, "ERR sluice: no rule \"api\" (in sluice:{" },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "api" }, "ERR sluice: no rule \"api\" (in sluice:{" },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "api", "" }, "ERR sluice: fixed_window takes ARGV path, n, now, rule" },
	{ "fixed_window", 5, { V5, "/v", "", "9000", ":version" }, "ERR sluice: rule (ARGV[4]) must be" },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "a b", "", "" }, "ERR sluice: rule (ARGV[4]) must be" },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "", "0", "1000" }, "ERR sluice: limit " },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "", "1.5", "1000" }, "ERR sluice: limit " },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "", "9007199254740993", "1000" }, "ERR sluice: limit " },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "", "", "1000" }, "ERR sluice: limit " },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "", "3", "0" }, "ERR sluice: window_ms " },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "", "3", "-1000" }, "ERR sluice: window_ms " },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "", "3", "1e3" }, "ERR sluice: window_ms " },
	{ "fixed_window", 5, { V5, "/v", "", "9000", "", "3", "" }, "ERR sluice: window_ms " },
	/* the shard job */
	{ "fixed_window_repair_shard", 2, { R_, S_, "99000", "500" }, "ERR sluice: fixed_window shard job takes" },
	{ "fixed_window_repair_shard", 1, { R_, "99000" }, "ERR sluice: fixed_window shard job takes" },
	{ "fixed_window_repair_shard", 1, { "@lbreg", "99000", "500" }, "ERR sluice: KEYS[1] " },
	{ "fixed_window_repair_shard", 1, { "sluice:registry:fixed_window", "99000", "500" }, "ERR sluice: KEYS[1] " },
	{ "fixed_window_repair_shard", 1, { R_, "99000", "0" }, "ERR sluice: limit " },
	{ "fixed_window_repair_shard", 1, { R_, "x", "500" }, "ERR sluice: now " },
	/* the state read */
	{ "fixed_window_state", 2, { S_, M_, "0", "1000", "9000" }, "ERR sluice: limit " },
	{ "fixed_window_state", 2, { S_, M_, "3", "x", "9000" }, "ERR sluice: window_ms " },
	{ "fixed_window_state", 2, { S_, M_, "3", "1000", "-1" }, "ERR sluice: now " },
	{ "fixed_window_state", 1, { S_, "3", "1000", "9000" }, "ERR sluice: fixed_window_state takes" },
	{ "fixed_window_state", 2, { S_, M_, "3" }, "ERR sluice: fixed_window_state takes" },
	{ "fixed_window_state", 2, { S_, M_, "3", "1000", "9000", "1" }, "ERR sluice: fixed_window_state takes" },
	/* the batch repair of foreign counters */
	{ "fixed_window_repair", 2, { FW_REG, S_, "9000", "/v", "0" }, "ERR sluice: window_ms " },
	{ "fixed_window_repair", 2, { FW_REG, S_, "9000", "", "1000" }, "ERR sluice: path " },
	{ "fixed_window_repair", 2, { FW_REG, S_, "x", "/v", "1000" }, "ERR sluice: now " },
	/* The first counter is valid: the bad second one must still stop the batch. */
	{ "fixed_window_repair", 3, { FW_REG, S_, "k", "9000", "/v", "1000", "/k", "-1" }, "ERR sluice: window_ms " },
	{ "fixed_window_repair", 2, { FW_REG, S_, "9000", "/v" }, "ERR sluice: fixed_window_repair takes" },
};

START_TEST(test_bad_arguments_change_nothing)
{
	struct bad_call bc = bad_calls[_i];
	char lbmeta[64], lbreg[64];

	snprintf(lbmeta, sizeof(lbmeta), "sluice:{%u}:leaky_bucket_meta:/v", shard_of("/v", 2));
	snprintf(lbreg, sizeof(lbreg), "sluice:{%u}:registry:leaky_bucket", shard_of("/v", 2));
	for (int i = 0; bc.args[i]; i++) {
		const char *a = bc.args[i];

		if (a[0] != '@')
			continue;
		bc.args[i] = !strcmp(a, S_)	   ? FW_KEY("/v")
			     : !strcmp(a, M_)	   ? test_key("/v", "fixed_window_meta")
			     : !strcmp(a, R_)	   ? test_registry("fixed_window", "/v")
			     : !strcmp(a, U_)	   ? test_shard_key("fixed_window", "/v", "rules")
			     : !strcmp(a, T_)	   ? test_shard_key("fixed_window", "/v", "stats")
			     : !strcmp(a, "@other") ? FW_KEY("/k")
			     : !strcmp(a, "@lbmeta") ? lbmeta
						    : lbreg;
	}
	/* /v is due and past at 99000: a job that ran would delete it */
	make_due("/v", 0);
	check_bad_call(&bc);
}
END_TEST

static Suite *fixed_window_suite(void)
{
	Suite *s = suite_create("fixed_window");
	TCase *tc;

	tc = test_tcase(s, "client", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_fw_uses_redis_time);
	tcase_add_test(tc, test_fw_state_layout);
	tcase_add_test(tc, test_fw_past_counter_without_ttl);
	tcase_add_test(tc, test_fw_cost);
	tcase_add_test(tc, test_fw_records_parameters);
	tcase_add_test(tc, test_fw_window_length_changed);
	tcase_add_test(tc, test_fw_registers_when_a_window_opens);
	tcase_add_test(tc, test_fw_registry_bounded_without_daemon);
	tcase_add_test(tc, test_fw_meta_left_alone);
	tcase_add_test(tc, test_fw_wrong_shard);
	tcase_add_test(tc, test_fw_brace_and_nul_paths);
	tcase_add_test(tc, test_fw_wrong_type);

	tc = test_tcase(s, "shard job", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_fw_shard_job);
	tcase_add_test(tc, test_fw_shard_job_limit);
	tcase_add_test(tc, test_fw_repair_older_now);
	tcase_add_test(tc, test_fw_repair_uses_redis_time);
	tcase_add_test(tc, test_fw_repair_foreign_batch);

	tc = test_tcase(s, "state", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_fw_state);
	tcase_add_test(tc, test_fw_state_read_only);

	tc = test_tcase(s, "tables", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_table, 0, TEST_N(fw_cases));
	tcase_add_test(tc, test_ttls_to_the_ms);

	tc = test_tcase(s, "skew", script_setup, script_teardown, 300);
	tcase_add_test(tc, test_fw_skew_lagging_clients);
	tcase_add_loop_test(tc, test_fw_model_traces, 0, 4);

	tc = test_tcase(s, "validation", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_bad_arguments_change_nothing, 0, TEST_N(bad_calls));
	return s;
}

int main(void)
{
	return test_run_suite(fixed_window_suite());
}

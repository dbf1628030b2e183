/*
 * lua/fixed_window.lua (the client's acquire), fixed_window_repair.lua (the
 * worker's repair of counters left without a TTL) and fixed_window_state.lua
 * (the admin's read); and where every client script's TTL ends, to the ms.
 * The fixture, helpers and time conventions are tests/script_fixture.h's.
 */
#include "tests/window_trace.h"

/* ---- fixed window ----------------------------------------------------------- */

START_TEST(test_fw_uses_redis_time)
{
	const char *p = "/clock";
	long long before = test_server_ms(c), after, t;
	redisReply *r;

	r = acquire(FW, p, "3", "1000", NULL, NULL, NULL);
	after = test_server_ms(c);
	ck_assert_int_ge(test_elem_int(r, 3), 1);
	ck_assert_int_le(test_elem_int(r, 3), 1000);
	ck_reply(r, 1, 2, 0, test_elem_int(r, 3));
	r = test_cmd(c, "HMGET %s window t", FW_KEY(p));
	t = atoll(r->element[1]->str);
	ck_assert_int_ge(t, before);
	ck_assert_int_le(t, after);
	ck_assert_int_eq(atoll(r->element[0]->str), t / 1000);
	freeReplyObject(r);
	/* "" is the same as absent. */
	r = acquire(FW, p, "3", "1000", NULL, NULL, "");
	ck_assert_int_eq(test_elem_int(r, 1), 1);
	freeReplyObject(r);
}
END_TEST

START_TEST(test_fw_state_layout)
{
	const char *p = "/layout";

	ck_reply(fw(p, "5", "1000", 2500), 1, 4, 0, 500);
	ck_reply(fw(p, "5", "1000", 2600), 1, 3, 0, 400);
	ck_cmd("{\"window\", \"2\", \"count\", \"2\", \"t\", \"2600\"}", "HGETALL %s", FW_KEY(p));
	ck_pttl(FW_KEY(p), 401 + SKEW_MS); /* the window's end + 1, and the horizon for the mark */
	ck_cmd("{\"/layout\"}", "SMEMBERS %s", FW_REG);
}
END_TEST

START_TEST(test_fw_past_counter_without_ttl)
{
	const char *p = "/stale";

	/* A full counter of window 0 that lost its TTL does not block window 1. */
	for (int i = 0; i < 5; i++)
		freeReplyObject(fw(p, "5", "1000", 200));
	ck_reply(fw(p, "5", "1000", 300), 0, 0, 700, 700);
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(p)));
	ck_reply(fw(p, "5", "1000", 1500), 1, 4, 0, 500);
	ck_cmd("{\"window\", \"1\", \"count\", \"1\", \"t\", \"1500\"}", "HGETALL %s", FW_KEY(p));
	ck_pttl(FW_KEY(p), 501 + SKEW_MS);
}
END_TEST

START_TEST(test_fw_window_length_changed)
{
	const char *p = "/changed";

	ck_reply(fw(p, "2", "1000", 5000), 1, 1, 0, 1000);
	ck_reply(fw(p, "2", "1000", 5000), 1, 0, 0, 1000);
	/* The rule now says 100 ms: index 5 of 1000 ms is not index 50 of 100 ms. */
	ck_reply(fw(p, "2", "100", 5000), 1, 1, 0, 100);
	ck_cmd("{\"window\", \"50\", \"count\", \"1\", \"t\", \"5000\"}", "HGETALL %s", FW_KEY(p));
	/* Back to 1000 ms: to the repair, index 50 is not the current 5 either
	 * (the acquire would start afresh), but its mark still serves a client
	 * lagging by up to the horizon at 5000: it gets the TTL of window 5.
	 * Past the horizon the counter goes. */
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(p)));
	ck_reply(fw_repair1(p, "1000", 5000), 1, 0, 1, 0);
	ck_pttl(FW_KEY(p), 1001 + SKEW_MS);
	ck_reply(fw_repair1(p, "1000", 4999 + SKEW_MS), 0, 0, 1, 0);
	ck_reply(fw_repair1(p, "1000", 5000 + SKEW_MS), 0, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", FW_KEY(p)), 0);
}
END_TEST

START_TEST(test_fw_repair_batch)
{
	char *before;

	/* Repaired at Redis 11500: a client within the skew horizon is served at
	 * 1500 or later (and at its counter's t, if that is later).
	 * A: window 11, lost its TTL -> repaired to the window's end + SKEW_MS;
	 * H: window 9, lost its TTL: over at 11500, not at 1500 -> repaired too;
	 * B: window 0, lost its TTL, t = 200: over at 1500 -> deleted, out of the registry;
	 * C: window 11 with a TTL -> left alone;  D: registered, absent;
	 * E: a foreign string counter without TTL -> the whole window;
	 * F: a foreign string counter with a TTL -> left alone;
	 * G: registered, a sorted set (another layout) -> skipped. */
	freeReplyObject(fw("A", "5", "1000", 11200));
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY("A")));
	freeReplyObject(fw("H", "5", "1000", 9000));
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY("H")));
	freeReplyObject(fw("B", "5", "1000", 200));
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY("B")));
	freeReplyObject(fw("C", "5", "1000", 11300));
	freeReplyObject(test_cmd(c, "PEXPIRE %s 700000", FW_KEY("C")));
	freeReplyObject(test_cmd(c, "SADD %s D G", FW_REG));
	freeReplyObject(test_cmd(c, "SET %s 7", FW_KEY("E")));
	freeReplyObject(test_cmd(c, "SET %s 3 PX 400000", FW_KEY("F")));
	freeReplyObject(test_cmd(c, "ZADD %s 1 x", FW_KEY("G")));
	ck_reply(ev("fixed_window_repair", 9, FW_REG, FW_KEY("A"), FW_KEY("H"), FW_KEY("B"), FW_KEY("C"), FW_KEY("D"),
		    FW_KEY("E"), FW_KEY("F"), FW_KEY("G"), "11500", "A", "1000", "H", "1000", "B", "1000", "C", "1000",
		    "D", "1000", "E", "1000", "F", "1000", "G", "1000", NULL),
		 3, 2, 8, 1);
	ck_pttl(FW_KEY("A"), 12000 + 1 + SKEW_MS - 11500);
	ck_cmd("{\"window\", \"11\", \"count\", \"1\", \"t\", \"11200\"}", "HGETALL %s", FW_KEY("A"));
	ck_pttl(FW_KEY("H"), 10000 + 1 + SKEW_MS - 11500);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", FW_KEY("B")), 0);
	ck_pttl(FW_KEY("C"), 700000);
	ck_pttl(FW_KEY("E"), 1000);
	ck_cmd("\"7\"", "GET %s", FW_KEY("E"));
	ck_pttl(FW_KEY("F"), 400000);
	ck_cmd("{\"x\"}", "ZRANGE %s 0 -1", FW_KEY("G"));
	ck_cmd("{\"A\", \"C\", \"G\", \"H\"}", "SORT %s ALPHA", FW_REG);

	/* Idempotent: the same call again changes nothing. */
	before = test_snapshot(c);
	ck_reply(ev("fixed_window_repair", 9, FW_REG, FW_KEY("A"), FW_KEY("H"), FW_KEY("B"), FW_KEY("C"), FW_KEY("D"),
		    FW_KEY("E"), FW_KEY("F"), FW_KEY("G"), "11500", "A", "1000", "H", "1000", "B", "1000", "C", "1000",
		    "D", "1000", "E", "1000", "F", "1000", "G", "1000", NULL),
		 0, 0, 8, 1);
	ck_snapshot_same(before);
	free(before);
	/* An empty batch is fine too. */
	ck_reply(ev("fixed_window_repair", 1, FW_REG, "1500", NULL), 0, 0, 0, 0);
	ck_reply(ev("fixed_window_repair", 1, FW_REG, NULL), 0, 0, 0, 0);
}
END_TEST

START_TEST(test_fw_repair_older_now)
{
	const char *p = "/older";

	ck_reply(fw(p, "5", "1000", 1200), 1, 4, 0, 800);
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(p)));
	/* The worker's clock is behind: served at the counter's 1200 (window 1,
	 * current, not past), the TTL measured from its own 900. */
	ck_reply(fw_repair1(p, "1000", 900), 1, 0, 1, 0);
	ck_pttl(FW_KEY(p), 1101 + SKEW_MS);
	ck_reply(fw_repair1(p, "1000", 900), 0, 0, 1, 0);
	ck_reply(fw(p, "5", "1000", 1300), 1, 3, 0, 700);
	/* At Redis 2000 window 1 is over, but not for a client lagging by up to
	 * the horizon: kept.  At 12000 it is over for all of them: deleted. */
	ck_reply(fw_repair1(p, "1000", 2000), 0, 0, 1, 0);
	ck_reply(fw_repair1(p, "1000", 11999), 0, 0, 1, 0);
	ck_reply(fw_repair1(p, "1000", 12000), 0, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", FW_KEY(p)), 0);
	ck_assert_int_eq(in_set(FW_REG, p), 0);
}
END_TEST

START_TEST(test_fw_repair_uses_redis_time)
{
	const char *p = "/clock";
	redisReply *r;

	freeReplyObject(acquire(FW, p, "5", "60000", NULL, NULL, NULL));
	freeReplyObject(test_cmd(c, "PERSIST %s", FW_KEY(p)));
	r = ev("fixed_window_repair", 2, FW_REG, FW_KEY(p), "", p, "60000", NULL);
	ck_reply(r, 1, 0, 1, 0);
	ck_assert_int_gt(test_cmd_int(c, "PTTL %s", FW_KEY(p)), 0);
	ck_assert_int_le(test_cmd_int(c, "PTTL %s", FW_KEY(p)), 60001 + SKEW_MS);
}
END_TEST

/* ---- state ------------------------------------------------------------------ */

START_TEST(test_fw_state)
{
	const char *p = "/state";
	char *before;
	redisReply *r;

	ck_reply(fw_state(FW_KEY(p), "3", "1000", "0"), 0, 3, 0, -2);
	freeReplyObject(fw(p, "3", "1000", 100));
	freeReplyObject(fw(p, "3", "1000", 100));
	before = test_snapshot(c);
	r = fw_state(FW_KEY(p), "3", "1000", "500");
	ck_assert_int_gt(test_elem_int(r, 3), 900 + SKEW_MS - SLACK_MS);
	ck_assert_int_le(test_elem_int(r, 3), 901 + SKEW_MS);
	ck_reply(r, 2, 1, 500, test_elem_int(r, 3));
	r = fw_state(FW_KEY(p), "3", "1000", "50"); /* older: served at 100 */
	ck_reply(r, 2, 1, 900, test_elem_int(r, 3));
	r = fw_state(FW_KEY(p), "3", "1000", "1000"); /* the next window */
	ck_reply(r, 0, 3, 0, test_elem_int(r, 3));
	r = fw_state(FW_KEY(p), "1", "1000", "999"); /* limit lowered below the count */
	ck_reply(r, 2, 0, 1, test_elem_int(r, 3));
	ck_snapshot_same(before);
	free(before);
	/* A foreign INCR counter: its value, and when it expires (never: -1). */
	freeReplyObject(test_cmd(c, "SET rate_limit:x 4"));
	ck_reply(fw_state("rate_limit:x", "3", "60000", "0"), 4, 0, -1, -1);
	freeReplyObject(test_cmd(c, "PEXPIRE rate_limit:x 60000"));
	r = fw_state("rate_limit:x", "10", "60000", "0");
	ck_assert_int_gt(test_elem_int(r, 2), 60000 - SLACK_MS);
	ck_reply(r, 4, 6, test_elem_int(r, 2), test_elem_int(r, 2));
	freeReplyObject(test_cmd(c, "ZADD z 1 x"));
	ck_error(fw_state("z", "3", "1000", "0"), "ERR sluice: fixed_window_state: the counter is a zset");
}
END_TEST

/* ---- TTLs to the ms ---------------------------------------------------------- */

/*
 * Where a key's TTL ends, to the ms (PEXPIRETIME).  The call uses Redis TIME;
 * it is repeated until TIME reads the same ms before and after it, so that the
 * script's now and the base of its PEXPIRE are that ms.  Returns the ms.
 */
static long long call_within_one_ms(enum algo al, const char *p, const char *a, const char *b, const char *s,
				    const char *n)
{
	for (int attempt = 0; attempt < 200; attempt++) {
		long long before, after;
		const char *keys[2];
		int nk = state_keys(al, p, keys);

		for (int k = 0; k < nk; k++)
			freeReplyObject(test_cmd(c, "DEL %s", keys[k]));
		before = test_server_ms(c);
		freeReplyObject(acquire(al, p, a, b, s, n, NULL));
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

	/* fixed window: to the window's end, + 1 ms, and the horizon */
	t = call_within_one_ms(FW, "/ttl", "5", "1000", NULL, NULL);
	ck_assert_int_eq(test_cmd_int(c, "PEXPIRETIME %s", FW_KEY("/ttl")), (t / 1000 + 1) * 1000 + 1 + SKEW_MS);
	/* sliding counter: until the current sub-window leaves the window, and the horizon */
	t = call_within_one_ms(SC, "/ttl", "5", "1000", "4", NULL);
	ck_assert_int_eq(test_cmd_int(c, "PEXPIRETIME %s", SC_KEY("/ttl")), (t / 250 + 4) * 250 + SKEW_MS);
	/* token bucket: until full again, + 1 ms (1 token at 1 per second), + SKEW_MS (10000) for its mark */
	t = call_within_one_ms(TB, "/ttl", "3", "1", NULL, "1");
	ck_assert_int_eq(test_cmd_int(c, "PEXPIRETIME %s", TB_KEY("/ttl")), t + 1000 + 1 + 10000);
	/* sliding log: until the entry leaves the window, and the horizon */
	t = call_within_one_ms(SL, "/ttl", "5", "1000", NULL, NULL);
	ck_assert_int_eq(test_cmd_int(c, "PEXPIRETIME %s", test_sl_key("/ttl")), t + 1000 + SKEW_MS);
}
END_TEST

/* ---- table tests: (parameters, calls with now) -> exact replies ------------ */

/* TTL (last column): the window's end + 1 ms, and SKEW_MS more for the mark, from
 * the caller's now. */
static const struct algo_case algo_cases[] = {
	/* ---- fixed window ---- */
	{ "fixed window: limit 3 per 1000 ms",
	  FW,
	  "3",
	  "1000",
	  NULL,
	  { /* many requests in one millisecond: 3 counted, the 4th refused */
	    { 0, 0, { 1, 2, 0, 1000 }, 11001 },
	    { 0, 0, { 1, 1, 0, 1000 }, 11001 },
	    { 0, 0, { 1, 0, 0, 1000 }, 11001 },
	    { 0, 0, { 0, 0, 1000, 1000 }, 0 },
	    { 500, 0, { 0, 0, 500, 500 }, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0 },
	    /* the window boundary: a new window, a fresh count */
	    { 1000, 0, { 1, 2, 0, 1000 }, 11001 },
	    /* an older now is served at the stored 1000 (window 1), TTL from its own now */
	    { 999, 0, { 1, 1, 0, 1000 }, 11002 },
	    { 1500, 0, { 1, 0, 0, 500 }, 10501 },
	    { 1999, 0, { 0, 0, 1, 1 }, 0 },
	    { 2000, 0, { 1, 2, 0, 1000 }, 11001 },
	    END } },
	{ "fixed window: a client that keeps retrying gets in when the window ends",
	  FW,
	  "2",
	  "1000",
	  NULL,
	  { { 100, 0, { 1, 1, 0, 900 }, 10901 },
	    { 200, 0, { 1, 0, 0, 800 }, 10801 },
	    { 300, 0, { 0, 0, 700, 700 }, 0 },
	    { 400, 0, { 0, 0, 600, 600 }, 0 },
	    { 500, 0, { 0, 0, 500, 500 }, 0 },
	    { 600, 0, { 0, 0, 400, 400 }, 0 },
	    { 700, 0, { 0, 0, 300, 300 }, 0 },
	    { 800, 0, { 0, 0, 200, 200 }, 0 },
	    { 900, 0, { 0, 0, 100, 100 }, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0 },
	    { 1000, 0, { 1, 1, 0, 1000 }, 11001 },
	    { 1000, 0, { 1, 0, 0, 1000 }, 11001 },
	    { 1001, 0, { 0, 0, 999, 999 }, 0 },
	    END } },
	{ "fixed window: 1 per minute, requests just before and after the boundary",
	  FW,
	  "1",
	  "60000",
	  NULL,
	  { { 30000, 0, { 1, 0, 0, 30000 }, 40001 },
	    { 59999, 0, { 0, 0, 1, 1 }, 0 },
	    { 60000, 0, { 1, 0, 0, 60000 }, 70001 },
	    { 60000, 0, { 0, 0, 60000, 60000 }, 0 },
	    { 119999, 0, { 0, 0, 1, 1 }, 0 },
	    END } },
};

START_TEST(test_table)
{
	check_algo_case(&algo_cases[_i]);
}
END_TEST

/* ---- the skew scenario (issue 8, item 3) ----------------------------------- */

#define SKEW_PATH "/skew"

static int skew_call(long long now)
{
	return (int)test_acquire(c, TEST_EVALSHA, "fixed_window", SKEW_PATH, now, "10", "10000", NULL);
}

static void skew_repair(long long r)
{
	freeReplyObject(fw_repair1(SKEW_PATH, "10000", r));
}

/*
 * 10 per 10 s, clients 5 s behind Redis (tests/window_trace.h).  The model
 * (fw_call below, by DESIGN.md's rule: served at max(now, t), counted in the
 * window that holds it) admits at c0 + 0 .. 450 in window [c0, c0 + 10000)
 * and c0 + 10000 .. 10450 in the next: 20 in 12 s.  The old repair deleted
 * the counter at R0 + 5000, when Redis's clock left the first window, and
 * the clients, still in it, were counted afresh: 30.  Now the counter moves
 * to the next window with the clients' own timeline, and goes at the tick of
 * R0 + 25000, when every client within the horizon is past its window (R -
 * 10000 = c0 + 20000); the path leaves the registry.  Without the worker it
 * goes by its TTL: the window's end + 1 and the horizon from the last
 * admission's now, (c0 + 20000) + 1 + 10000 - (c0 + 10450).
 */
START_TEST(test_fw_skew_lagging_clients)
{
	for (int worker = 1; worker >= 0; worker--) {
		struct skew_run run;
		long long r0 = (test_server_ms(c) / 10000 + 1) * 10000 + SKEW_LAG_MS;
		const char *what = worker ? "fixed window with the worker" : "fixed window without worker";

		freeReplyObject(test_cmd(c, "FLUSHALL"));
		skew_scenario(r0, FW_KEY(SKEW_PATH), skew_call, worker ? skew_repair : NULL, NULL, &run);
		skew_check_admissions(&run, r0 - SKEW_LAG_MS, what);
		ck_assert_int_eq(run.gone_at, (worker ? r0 + 25000 : -1));
		ck_assert_int_eq(in_set(FW_REG, SKEW_PATH), !worker);
		if (!worker)
			ck_pttl(FW_KEY(SKEW_PATH), 20000 + 1 + 10000 - 10450);
	}
}
END_TEST

/* ---- the reference model, against the scripts over random traces ------------ */

/*
 * The fixed window of DESIGN.md and lua/README.md, written from them, cost 1
 * (fixed_window.lua takes none).  Window k holds [k * window, (k + 1) *
 * window) and admits up to limit; a call at now is served at t = max(now,
 * mark), the mark being the time the latest admission was served at, and
 * counted in t's window.  Redis holds the mark and its window's count until
 * the TTL, the window's end + 1 + SKEW_MS after the caller's now, or the
 * repair, once the mark is past the horizon and its window over there.
 */
struct fw_model {
	long long mark, count; /* count: of the mark's window */
};

static void *fw_model_new(void)
{
	struct fw_model *m = calloc(1, sizeof(*m));

	ck_assert_ptr_nonnull(m);
	m->mark = -1;
	return m;
}

static long long fw_call(struct trace_path *p, long long now, long long want[4])
{
	struct fw_model *m = p->model;
	long long w = p->rule.window, t = model_max(now, m->mark), k = floor_div(t, w), end = (k + 1) * w;
	long long count = m->mark >= 0 && floor_div(m->mark, w) == k ? m->count : 0;

	if (count < p->rule.limit) {
		m->mark = t;
		m->count = ++count;
		want[0] = 1, want[1] = p->rule.limit - count, want[2] = 0, want[3] = end - t;
		return end - now + 1 + SKEW_MS;
	}
	want[0] = 0, want[1] = model_max(0, p->rule.limit - count), want[2] = want[3] = end - t;
	return -1;
}

static long long fw_repair_at(struct trace_path *p, long long r, long long want[2])
{
	struct fw_model *m = p->model;
	long long w = p->rule.window, k = floor_div(model_max(m->mark, r - SKEW_MS), w);

	want[0] = want[1] = 0;
	if (p->exists && (floor_div(m->mark, w) == k || m->mark > r - SKEW_MS)) {
		if (p->has_ttl)
			return -1;
		want[0] = 1; /* a lost TTL: the acquire's, from the repair's now */
		return (k + 1) * w + 1 + SKEW_MS - r;
	}
	/* absent (expired), or its window over for every client within the horizon */
	want[1] = p->registered;
	p->registered = p->exists = 0;
	return -1;
}

static void fw_gone(struct trace_path *p)
{
	(void)p; /* Redis holds the count and the mark, or nothing */
}

static long long fw_edge(const struct trace_path *p)
{
	const struct fw_model *m = p->model;

	return p->exists ? (floor_div(m->mark, p->rule.window) + 1) * p->rule.window : -1;
}

static const struct trace_ops fw_trace = {
	.algo = "fixed_window",
	.job = "fixed_window_repair",
	.registry = FW_REG,
	.rule = trace_window_rule,
	.job_args = trace_window_args,
	.model_new = fw_model_new,
	.model_free = free,
	.call = fw_call,
	.job_at = fw_repair_at,
	.gone = fw_gone,
	.edge = fw_edge,
};

/* 10,000 calls per seed (tests/window_trace.h says what a trace holds). */
START_TEST(test_fw_model_traces)
{
	trace_run(&fw_trace, 3000 + (uint64_t)_i, 10000);
}
END_TEST

/* ---- validation ------------------------------------------------------------ */

static const struct bad_call bad_calls[] = {
	{ "fixed_window", 2, { FWK, FW_REG, "", "3", "1000", "9000" }, "ERR sluice: path " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "0", "1000", "9000" }, "ERR sluice: limit " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "1.5", "1000", "9000" }, "ERR sluice: limit " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "9007199254740993", "1000", "9000" }, "ERR sluice: limit " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "3", "0", "9000" }, "ERR sluice: window_ms " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "3", "-1000", "9000" }, "ERR sluice: window_ms " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "3", "1e3", "9000" }, "ERR sluice: window_ms " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "3", "1000", "-5" }, "ERR sluice: now " },
	{ "fixed_window", 2, { FWK, FW_REG, "/v", "3", "1000", "1e3" }, "ERR sluice: now " },
	{ "fixed_window", 1, { FWK, "/v", "3", "1000", "9000" }, "ERR sluice: fixed_window takes 2 KEYS" },
	{ "fixed_window_repair", 2, { FW_REG, FWK, "9000", "/v", "0" }, "ERR sluice: window_ms " },
	{ "fixed_window_repair", 2, { FW_REG, FWK, "9000", "", "1000" }, "ERR sluice: path " },
	{ "fixed_window_repair", 2, { FW_REG, FWK, "x", "/v", "1000" }, "ERR sluice: now " },
	/* The first counter is valid: the bad second one must still stop the batch. */
	{ "fixed_window_repair", 3, { FW_REG, FWK, "k", "9000", "/v", "1000", "/k", "-1" }, "ERR sluice: window_ms " },
	{ "fixed_window_repair", 2, { FW_REG, FWK, "9000", "/v" }, "ERR sluice: fixed_window_repair takes" },
	{ "fixed_window_state", 1, { FWK, "0", "1000", "9000" }, "ERR sluice: limit " },
	{ "fixed_window_state", 1, { FWK, "3", "x", "9000" }, "ERR sluice: window_ms " },
	{ "fixed_window_state", 1, { FWK, "3", "1000", "-1" }, "ERR sluice: now " },
	{ "fixed_window_state", 2, { FWK, FW_REG, "3", "1000", "9000" }, "ERR sluice: fixed_window_state takes" },
};

START_TEST(test_bad_arguments_change_nothing)
{
	check_bad_call(&bad_calls[_i]);
}
END_TEST

static Suite *fixed_window_suite(void)
{
	Suite *s = suite_create("fixed_window");
	TCase *tc;

	tc = test_tcase(s, "fixed_window", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_fw_uses_redis_time);
	tcase_add_test(tc, test_fw_state_layout);
	tcase_add_test(tc, test_fw_past_counter_without_ttl);
	tcase_add_test(tc, test_fw_window_length_changed);
	tcase_add_test(tc, test_fw_repair_batch);
	tcase_add_test(tc, test_fw_repair_older_now);
	tcase_add_test(tc, test_fw_repair_uses_redis_time);

	tc = test_tcase(s, "state", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_fw_state);

	tc = test_tcase(s, "tables", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_table, 0, TEST_N(algo_cases));
	tcase_add_test(tc, test_ttls_to_the_ms);

	tc = test_tcase(s, "skew", script_setup, script_teardown, 120);
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

/*
 * lua/sliding_counter.lua (the client's acquire), sliding_counter_prune.lua
 * (the worker's prune of expired sub-windows) and sliding_counter_state.lua
 * (the admin's read).  The fixture, helpers and time conventions are
 * tests/script_fixture.h's.
 */
#include "tests/window_trace.h"

/* ---- sliding counter ------------------------------------------------------- */

START_TEST(test_sc_fields_removed_on_the_way)
{
	const char *p = "/fields";

	/* Sub-windows of 100 ms: 0 -> 2, 1 -> 1, 9 -> 1. */
	freeReplyObject(sc(p, "10", "1000", "10", 0));
	freeReplyObject(sc(p, "10", "1000", "10", 50));
	freeReplyObject(sc(p, "10", "1000", "10", 150));
	ck_reply(sc(p, "10", "1000", "10", 950), 1, 6, 0, 50);
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_KEY(p)), 4);
	/* A field written under another sub-window length (index past the current one). */
	freeReplyObject(test_cmd(c, "HSET %s 9999 5", SC_KEY(p)));
	/* At 1100 sub-windows 0 and 1 have left, and 9999 means nothing. */
	ck_reply(sc(p, "10", "1000", "10", 1100), 1, 8, 0, 800);
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_KEY(p)), 3);
	ck_cmd("{\"1\", \"1\", \"1100\"}", "HMGET %s 9 11 t", SC_KEY(p));
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s 0", SC_KEY(p)), 0);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s 9999", SC_KEY(p)), 0);
	ck_pttl(SC_KEY(p), 1000 + SKEW_MS); /* sub-window 11 leaves at 2100, its mark is kept SKEW_MS more */
}
END_TEST

START_TEST(test_sc_many_in_one_ms)
{
	const char *p = "/burst";

	for (int i = 1; i <= 5; i++)
		ck_reply(sc(p, "5", "60000", "6", 12345), 1, 5 - i, 0, 60000 - 2345);
	ck_reply(sc(p, "5", "60000", "6", 12345), 0, 0, 60000 - 2345, 60000 - 2345);
	ck_cmd("{\"5\", \"12345\"}", "HMGET %s 1 t", SC_KEY(p));
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_KEY(p)), 2);
}
END_TEST

START_TEST(test_sc_one_sub_window_is_a_fixed_window)
{
	const char *p = "/one";

	ck_reply(sc(p, "2", "1000", "1", 100), 1, 1, 0, 900);
	ck_reply(sc(p, "2", "1000", "1", 900), 1, 0, 0, 100);
	ck_reply(sc(p, "2", "1000", "1", 999), 0, 0, 1, 1);
	ck_reply(sc(p, "2", "1000", "1", 1000), 1, 1, 0, 1000);
}
END_TEST

START_TEST(test_sc_uses_redis_time)
{
	const char *p = "/clock";
	long long before = test_server_ms(c), after, t;
	redisReply *r;

	r = acquire(SC, p, "3", "1000", "10", NULL, NULL);
	after = test_server_ms(c);
	ck_assert_int_gt(test_elem_int(r, 3), 900);
	ck_reply(r, 1, 2, 0, test_elem_int(r, 3));
	r = test_cmd(c, "HGET %s t", SC_KEY(p));
	t = atoll(r->str);
	freeReplyObject(r);
	ck_assert_int_ge(t, before);
	ck_assert_int_le(t, after);
	ck_cmd("\"1\"", "HGET %s %lld", SC_KEY(p), t / 100);
}
END_TEST

START_TEST(test_sc_prune_boundary)
{
	const char *p = "/prune";

	/* Sub-windows of 100 ms: 0 -> 2, 1 -> 1, 9 -> 1, t = 950.  The prune acts
	 * at max(t, now - SKEW_MS): a client lagging Redis by up to SKEW_MS is
	 * served no earlier. */
	freeReplyObject(sc(p, "10", "1000", "10", 0));
	freeReplyObject(sc(p, "10", "1000", "10", 50));
	freeReplyObject(sc(p, "10", "1000", "10", 150));
	freeReplyObject(sc(p, "10", "1000", "10", 950));
	ck_reply(sc_prune1(p, "1000", "10", 1000), 0, 0, 1, 0); /* not for a client at 999 */
	ck_reply(sc_prune1(p, "1000", "10", 999 + SKEW_MS), 0, 0, 1, 0);
	ck_reply(sc_prune1(p, "1000", "10", 1000 + SKEW_MS), 1, 0, 1, 0); /* sub-window 0 */
	ck_reply(sc_prune1(p, "1000", "10", 1099 + SKEW_MS), 0, 0, 1, 0);
	ck_reply(sc_prune1(p, "1000", "10", 1100 + SKEW_MS), 1, 0, 1, 0); /* sub-window 1 */
	ck_reply(sc_prune1(p, "1000", "10", 1100 + SKEW_MS), 0, 0, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "HLEN %s", SC_KEY(p)), 2);
	ck_reply(sc_prune1(p, "1000", "10", 1899 + SKEW_MS), 0, 0, 1, 0);
	ck_assert_int_eq(in_set(SC_REG, p), 1);
	/* At 1900 the last one leaves: the hash goes, and the path. */
	ck_reply(sc_prune1(p, "1000", "10", 1900 + SKEW_MS), 1, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SC_KEY(p)), 0);
	ck_assert_int_eq(in_set(SC_REG, p), 0);
	ck_reply(sc_prune1(p, "1000", "10", 1900 + SKEW_MS), 0, 0, 1, 0);
}
END_TEST

START_TEST(test_sc_prune_batch)
{
	char *before;

	/* Pruned at Redis 1000 + SKEW_MS, i.e. as of 1000 for a hash whose t is
	 * older.  A: 0 -> 2, 5 -> 1 (sub 0 leaves at 1000); B: registered, absent;
	 * C: 1 -> 1 plus a field of another sub-window length; D: a string;
	 * E: only a zero count and t: nothing live; F: t = 5000, ahead of the
	 * worker's 1000: nothing of it is expired or "in the future". */
	freeReplyObject(sc("A", "10", "1000", "10", 0));
	freeReplyObject(sc("A", "10", "1000", "10", 0));
	freeReplyObject(sc("A", "10", "1000", "10", 500));
	freeReplyObject(sc("C", "10", "1000", "10", 100));
	freeReplyObject(test_cmd(c, "HSET %s 9999 4", SC_KEY("C")));
	freeReplyObject(test_cmd(c, "SET %s 3", SC_KEY("D")));
	freeReplyObject(test_cmd(c, "HSET %s t 5 3 0", SC_KEY("E")));
	freeReplyObject(sc("F", "10", "1000", "10", 5000));
	freeReplyObject(test_cmd(c, "SADD %s B D E", SC_REG));
	ck_reply(ev("sliding_counter_prune", 7, SC_REG, SC_KEY("A"), SC_KEY("B"), SC_KEY("C"), SC_KEY("D"),
		    SC_KEY("E"), SC_KEY("F"), num(1000 + SKEW_MS), "A", "1000", "10", "B", "1000", "10", "C", "1000", "10",
		    "D", "1000", "10", "E", "1000", "10", "F", "1000", "10", NULL),
		 3, 2, 6, 1);
	ck_cmd("{nil, \"1\", \"500\"}", "HMGET %s 0 5 t", SC_KEY("A"));
	ck_cmd("{\"1\", nil, \"100\"}", "HMGET %s 1 9999 t", SC_KEY("C"));
	ck_cmd("\"3\"", "GET %s", SC_KEY("D"));
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SC_KEY("E")), 0);
	ck_cmd("{\"1\", \"5000\"}", "HMGET %s 50 t", SC_KEY("F"));
	ck_cmd("{\"A\", \"C\", \"D\", \"F\"}", "SORT %s ALPHA", SC_REG);
	/* Idempotent. */
	before = test_snapshot(c);
	ck_reply(ev("sliding_counter_prune", 7, SC_REG, SC_KEY("A"), SC_KEY("B"), SC_KEY("C"), SC_KEY("D"),
		    SC_KEY("E"), SC_KEY("F"), num(1000 + SKEW_MS), "A", "1000", "10", "B", "1000", "10", "C", "1000", "10",
		    "D", "1000", "10", "E", "1000", "10", "F", "1000", "10", NULL),
		 0, 0, 6, 1);
	ck_snapshot_same(before);
	free(before);
	ck_reply(ev("sliding_counter_prune", 1, SC_REG, "1000", NULL), 0, 0, 0, 0);
	ck_reply(ev("sliding_counter_prune", 1, SC_REG, NULL), 0, 0, 0, 0);
}
END_TEST

/* What the acquire then sees is what it saw before the prune. */
START_TEST(test_sc_prune_changes_no_answer)
{
	const char *p = "/same";
	char *before;
	redisReply *r;

	freeReplyObject(sc(p, "3", "1000", "10", 0));
	freeReplyObject(sc(p, "3", "1000", "10", 99));
	freeReplyObject(sc(p, "3", "1000", "10", 100));
	before = test_snapshot(c);
	r = sc_state(p, "3", "1000", "10", "1050");
	ck_reply(r, 1, 2, 50, test_elem_int(r, 3));
	ck_snapshot_same(before);
	free(before);
	/* At Redis 1050 nothing goes: a client whose clock says 999 counts sub-window 0. */
	ck_reply(sc_prune1(p, "1000", "10", 1050), 0, 0, 1, 0);
	r = sc_state(p, "3", "1000", "10", "999");
	ck_reply(r, 3, 0, 1, test_elem_int(r, 3));
	ck_reply(sc_prune1(p, "1000", "10", 1050 + SKEW_MS), 1, 0, 1, 0);
	r = sc_state(p, "3", "1000", "10", "1050");
	ck_reply(r, 1, 2, 50, test_elem_int(r, 3));
	ck_reply(sc(p, "3", "1000", "10", 1050), 1, 1, 0, 50);
}
END_TEST

/* After a rule edit of sub_windows the hash may hold a mark and no live
 * count: the prune keeps the mark until it is past the horizon. */
START_TEST(test_sc_prune_keeps_a_bare_mark)
{
	const char *p = "/bare";

	freeReplyObject(sc(p, "3", "1000", "10", 5000)); /* field 50 of 100 ms */
	/* One sub-window of 1000 ms: index 50 means nothing at 5000 (index 5). */
	ck_reply(sc_prune1(p, "1000", "1", 6000), 1, 0, 1, 0);
	ck_cmd("{\"t\", \"5000\"}", "HGETALL %s", SC_KEY(p));
	/* A client whose clock says 4000 is still served at 5000. */
	ck_reply(sc(p, "3", "1000", "1", 4000), 1, 2, 0, 1000);
	freeReplyObject(test_cmd(c, "HDEL %s 5", SC_KEY(p)));
	ck_reply(sc_prune1(p, "1000", "1", 4999 + SKEW_MS), 0, 0, 1, 0);
	ck_reply(sc_prune1(p, "1000", "1", 5000 + SKEW_MS), 0, 1, 1, 0);
	ck_assert_int_eq(test_cmd_int(c, "EXISTS %s", SC_KEY(p)), 0);
}
END_TEST

/* A rejected call writes nothing: after a lowered limit refuses at 1500, a
 * client whose clock says 950 still counts sub-window 0. */
START_TEST(test_sc_rejection_removes_nothing)
{
	const char *p = "/reject";

	freeReplyObject(sc(p, "2", "1000", "10", 0));
	freeReplyObject(sc(p, "2", "1000", "10", 900));
	ck_reply(sc(p, "1", "1000", "10", 1500), 0, 0, 400, 400);
	ck_assert_int_eq(test_cmd_int(c, "HEXISTS %s 0", SC_KEY(p)), 1);
	ck_reply(sc(p, "2", "1000", "10", 950), 0, 0, 50, 50);
}
END_TEST

/* ---- state ------------------------------------------------------------------ */

START_TEST(test_sc_state)
{
	const char *p = "/state";
	char *before;
	redisReply *r;

	ck_reply(sc_state(p, "3", "1000", "10", "0"), 0, 3, 0, -2);
	freeReplyObject(sc(p, "3", "1000", "10", 0));
	freeReplyObject(sc(p, "3", "1000", "10", 99));
	freeReplyObject(sc(p, "3", "1000", "10", 100));
	before = test_snapshot(c);
	r = sc_state(p, "3", "1000", "10", "500");
	ck_assert_int_gt(test_elem_int(r, 3), 1000 + SKEW_MS - SLACK_MS);
	ck_assert_int_le(test_elem_int(r, 3), 1000 + SKEW_MS);
	ck_reply(r, 3, 0, 500, test_elem_int(r, 3));
	r = sc_state(p, "3", "1000", "10", "50"); /* older: served at 100 */
	ck_reply(r, 3, 0, 900, test_elem_int(r, 3));
	r = sc_state(p, "3", "1000", "10", "1000");
	ck_reply(r, 1, 2, 100, test_elem_int(r, 3));
	r = sc_state(p, "3", "1000", "10", "1100");
	ck_reply(r, 0, 3, 0, test_elem_int(r, 3));
	ck_snapshot_same(before);
	free(before);
}
END_TEST

/* ---- table tests: (parameters, calls with now) -> exact replies ------------ */

/* TTL (last column): until the current sub-window leaves the window, and SKEW_MS
 * more for the mark, from the caller's now. */
static const struct algo_case algo_cases[] = {
	/* ---- sliding counter ---- */
	{ "sliding counter: limit 3 per 1000 ms in 10 sub-windows of 100 ms",
	  SC,
	  "3",
	  "1000",
	  "10",
	  { /* sub-window 0 gets 0 and 99, sub-window 1 gets 100 (just after the boundary) */
	    { 0, 0, { 1, 2, 0, 1000 }, 11000 },
	    { 99, 0, { 1, 1, 0, 901 }, 10901 },
	    { 100, 0, { 1, 0, 0, 900 }, 11100 },
	    /* refused in the same ms: sub-window 0 (2 requests) must leave, at 1000 */
	    { 100, 0, { 0, 0, 900, 900 }, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0 },
	    /* at 1000 sub-window 0 has left the window, even its request of 99 */
	    { 1000, 0, { 1, 1, 0, 100 }, 11000 },
	    { 1000, 0, { 1, 0, 0, 100 }, 11000 },
	    { 1000, 0, { 0, 0, 100, 100 }, 0 },
	    { 1099, 0, { 0, 0, 1, 1 }, 0 },
	    { 1100, 0, { 1, 0, 0, 900 }, 11000 },
	    /* an older now is served at the stored 1100 */
	    { 1050, 0, { 0, 0, 900, 900 }, 0 },
	    /* at 2000 the request of 1100 (sub-window 11) still counts, until 2100 */
	    { 2000, 0, { 1, 1, 0, 100 }, 11000 },
	    END } },
	{ "sliding counter: a client that keeps retrying gets in as sub-windows leave",
	  SC,
	  "2",
	  "1000",
	  "4",
	  { { 0, 0, { 1, 1, 0, 1000 }, 11000 },
	    { 300, 0, { 1, 0, 0, 700 }, 10950 },
	    { 400, 0, { 0, 0, 600, 600 }, 0 },
	    { 500, 0, { 0, 0, 500, 500 }, 0 },
	    { 600, 0, { 0, 0, 400, 400 }, 0 },
	    { 700, 0, { 0, 0, 300, 300 }, 0 },
	    { 800, 0, { 0, 0, 200, 200 }, 0 },
	    { 900, 0, { 0, 0, 100, 100 }, 0 },
	    { 999, 0, { 0, 0, 1, 1 }, 0 },
	    { 1000, 0, { 1, 0, 0, 250 }, 11000 },
	    { 1100, 0, { 0, 0, 150, 150 }, 0 },
	    { 1249, 0, { 0, 0, 1, 1 }, 0 },
	    { 1250, 0, { 1, 0, 0, 750 }, 11000 },
	    END } },
	{ "sliding counter: limit 4, the wait is for enough old requests to leave",
	  SC,
	  "4",
	  "600",
	  "3",
	  { /* sub-windows of 200 ms: 1 in sub 0, 1 in sub 1, 2 in sub 2 */
	    { 10, 0, { 1, 3, 0, 590 }, 10590 },
	    { 210, 0, { 1, 2, 0, 390 }, 10590 },
	    { 410, 0, { 1, 1, 0, 190 }, 10590 },
	    { 410, 0, { 1, 0, 0, 190 }, 10590 },
	    /* sum 4: one must leave: sub 0 at 600 */
	    { 500, 0, { 0, 0, 100, 100 }, 0 },
	    { 600, 0, { 1, 0, 0, 200 }, 10600 },
	    /* sum 4 again (sub 1, sub 2 x2, sub 3): sub 1 leaves at 800 */
	    { 799, 0, { 0, 0, 1, 1 }, 0 },
	    /* at 800 sub 1 left: sum 3, admitted; at 1000 sub 2 (2 requests) leaves */
	    { 800, 0, { 1, 0, 0, 200 }, 10600 },
	    { 801, 0, { 0, 0, 199, 199 }, 0 },
	    END } },
};

START_TEST(test_table)
{
	check_algo_case(&algo_cases[_i]);
}
END_TEST

/* ---- the skew scenario (issue 8, item 3) ----------------------------------- */

#define SKEW_PATH "/skew"
static long long skew_first_field;  /* the sub-window of the first ten admissions */
static long long skew_field_left;   /* Redis time it was first missed */

static int skew_call(long long now)
{
	return (int)test_acquire(c, TEST_EVALSHA, "sliding_counter", SKEW_PATH, now, "10", "10000", "10", NULL);
}

static void skew_prune(long long r)
{
	freeReplyObject(sc_prune1(SKEW_PATH, "10000", "10", r));
}

static void skew_watch(long long r)
{
	if (test_cmd_int(c, "HEXISTS %s %lld", SC_KEY(SKEW_PATH), skew_first_field))
		skew_field_left = 0;
	else if (!skew_field_left && test_cmd_int(c, "EXISTS %s", SC_KEY(SKEW_PATH)))
		skew_field_left = r;
}

/*
 * 10 per 10 s in ten sub-windows of 1 s, clients 5 s behind Redis
 * (tests/window_trace.h).  The model (sc_call below, by DESIGN.md's rule:
 * served at max(now, t), a request of sub-window j counts until (j + 10) s)
 * admits at c0 + 0 .. 450 (sub-window c0 / 1000) and c0 + 10000 .. 10450:
 * 20 in 12 s.  The old prune, at Redis time, found sub-window c0 / 1000 out
 * of the window at R0 + 5000 (the clients' c0 + 5000), deleted the hash and
 * its t, and the clients started afresh: 30.  Now the first sub-window
 * leaves at R0 + 10000, when the clients' own timeline gets there (the
 * admission of c0 + 10000 removes it); the hash of the last ten goes at the
 * tick of R0 + 25000, when every client within the horizon is past their
 * window (R - 10000 = c0 + 20000), and the path leaves the registry.
 * Without the worker it goes by its TTL: the window's end and the horizon
 * from the last admission's now, (c0 + 20000) + 10000 - (c0 + 10450).
 */
START_TEST(test_sc_skew_lagging_clients)
{
	for (int worker = 1; worker >= 0; worker--) {
		struct skew_run run;
		long long r0 = (test_server_ms(c) / 10000 + 1) * 10000 + SKEW_LAG_MS;
		const char *what = worker ? "counter with the worker" : "counter without worker";

		freeReplyObject(test_cmd(c, "FLUSHALL"));
		skew_first_field = (r0 - SKEW_LAG_MS) / 1000;
		skew_field_left = 0;
		skew_scenario(r0, SC_KEY(SKEW_PATH), skew_call, worker ? skew_prune : NULL, skew_watch, &run);
		skew_check_admissions(&run, r0 - SKEW_LAG_MS, what);
		ck_assert_msg(skew_field_left == r0 + 10000, "%s: the first sub-window left at R0 + %lld", what,
			      skew_field_left - r0);
		ck_assert_int_eq(run.gone_at, (worker ? r0 + 25000 : -1));
		ck_assert_int_eq(in_set(SC_REG, SKEW_PATH), !worker);
		if (!worker)
			ck_pttl(SC_KEY(SKEW_PATH), 20000 + 10000 - 10450);
	}
}
END_TEST

/* ---- the reference model, against the scripts over random traces ------------ */

/*
 * The sliding-window counter of DESIGN.md and lua/README.md, written from
 * them, cost 1 (sliding_counter.lua takes none).  A request admitted in
 * sub-window j (of sub = window / N ms) counts for calls served before
 * (j + N) * sub; a call at now is served at t = max(now, mark), the mark
 * being the time the latest admission was served at; logically nothing is
 * forgotten.  Redis holds the fields f[kept..n): an admission at t removes the
 * sub-windows that left the window at t, the prune those that left it at
 * max(mark, R - SKEW_MS) (and the hash with them, once the mark is past the
 * horizon), the TTL, (cur + N) * sub + SKEW_MS after the caller's now, all.
 */
struct sc_model {
	struct sc_sub {
		long long idx, count;
	} *f; /* every sub-window that admitted, ascending */
	size_t n, cap, kept;
	long long mark;
};

static void *sc_model_new(void)
{
	struct sc_model *m = calloc(1, sizeof(*m));

	ck_assert_ptr_nonnull(m);
	m->mark = -1;
	return m;
}

static void sc_model_free(void *m)
{
	free(((struct sc_model *)m)->f);
	free(m);
}

static long long sc_call(struct trace_path *p, long long now, long long want[4])
{
	struct sc_model *m = p->model;
	long long subs = p->rule.subs, sub = p->rule.window / subs, limit = p->rule.limit;
	long long t = model_max(now, m->mark), cur = floor_div(t, sub), sum = 0, need, acc = 0;
	size_t lo = m->n; /* the first sub-window live at t */

	while (lo > 0 && m->f[lo - 1].idx > cur - subs)
		sum += m->f[--lo].count;
	if (sum < limit) {
		if (m->n && m->f[m->n - 1].idx == cur) {
			m->f[m->n - 1].count++;
		} else {
			if (m->n == m->cap) {
				m->cap = m->cap ? 2 * m->cap : 64;
				m->f = realloc(m->f, m->cap * sizeof(*m->f));
				ck_assert_ptr_nonnull(m->f);
			}
			m->f[m->n++] = (struct sc_sub){ cur, 1 };
		}
		if (m->kept < lo)
			m->kept = lo;
		m->mark = t;
		want[0] = 1, want[1] = model_max(0, limit - sum - 1), want[2] = 0;
		want[3] = (m->f[lo].idx + subs) * sub - t;
		return (cur + subs) * sub + SKEW_MS - now;
	}
	/* admitted once the oldest sub-windows holding sum - limit + 1 have left */
	need = sum - limit + 1;
	want[0] = 0, want[1] = model_max(0, limit - sum), want[3] = model_max(0, (m->f[lo].idx + subs) * sub - t);
	for (size_t j = lo; acc < need; j++) {
		acc += m->f[j].count;
		want[2] = model_max(1, (m->f[j].idx + subs) * sub - t);
	}
	return -1;
}

static long long sc_prune_at(struct trace_path *p, long long r, long long want[2])
{
	struct sc_model *m = p->model;
	long long subs = p->rule.subs, sub = p->rule.window / subs;
	long long cur = floor_div(model_max(m->mark, r - SKEW_MS), sub);
	size_t k = m->kept;

	want[0] = want[1] = 0;
	if (!p->exists) { /* expired: the path leaves the registry */
		want[1] = p->registered;
		p->registered = 0;
		return -1;
	}
	while (k < m->n && m->f[k].idx <= cur - subs)
		k++;
	if (k < m->n || m->mark > r - SKEW_MS) {
		want[0] = (long long)(k - m->kept);
		m->kept = k;
		return -1;
	}
	/* nothing live, and the mark past the horizon: the hash goes, and its path */
	want[0] = (long long)(m->n - m->kept), want[1] = p->registered;
	m->kept = m->n;
	p->registered = p->exists = 0;
	return -1;
}

static void sc_gone(struct trace_path *p)
{
	struct sc_model *m = p->model;

	m->kept = m->n;
}

static long long sc_edge(const struct trace_path *p)
{
	const struct sc_model *m = p->model;

	return m->kept < m->n ? (m->f[m->kept].idx + p->rule.subs) * (p->rule.window / p->rule.subs) : -1;
}

static void sc_rule(struct model_rng *r, struct trace_rule *rule)
{
	static const long long subs[] = { 1, 2, 3, 4, 5, 6, 10 };

	rule->limit = trace_limit(r);
	rule->subs = subs[model_range(r, 0, TEST_N(subs) - 1)];
	rule->window = model_max(1, trace_window(r) / rule->subs) * rule->subs;
}

static int sc_job_args(const struct trace_rule *rule, const char **argv)
{
	argv[0] = num(rule->window);
	argv[1] = num(rule->subs);
	return 2;
}

static const struct trace_ops sc_trace = {
	.algo = "sliding_counter",
	.job = "sliding_counter_prune",
	.registry = SC_REG,
	.rule = sc_rule,
	.job_args = sc_job_args,
	.model_new = sc_model_new,
	.model_free = sc_model_free,
	.call = sc_call,
	.job_at = sc_prune_at,
	.gone = sc_gone,
	.edge = sc_edge,
};

/* 10,000 calls per seed (tests/window_trace.h says what a trace holds). */
START_TEST(test_sc_model_traces)
{
	trace_run(&sc_trace, 2000 + (uint64_t)_i, 10000);
}
END_TEST

/* ---- validation ------------------------------------------------------------ */

static const struct bad_call bad_calls[] = {
	{ "sliding_counter", 2, { SCK, SC_REG, "", "3", "1000", "10", "9000" }, "ERR sluice: path " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "0", "1000", "10", "9000" }, "ERR sluice: limit " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "0", "10", "9000" }, "ERR sluice: window_ms " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "1000", "0", "9000" }, "ERR sluice: sub_windows " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "1000", "3", "9000" }, "ERR sluice: sub_windows " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "1000", "2000", "9000" }, "ERR sluice: sub_windows " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "1000", "2.5", "9000" }, "ERR sluice: sub_windows " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "1000", "", "9000" }, "ERR sluice: sub_windows " },
	{ "sliding_counter", 2, { SCK, SC_REG, "/v", "3", "1000", "10", "now" }, "ERR sluice: now " },
	{ "sliding_counter", 1, { SCK, "/v", "3", "1000", "10", "9000" }, "ERR sluice: sliding_counter takes 2 KEYS" },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "9000", "/v", "1000", "3" }, "ERR sluice: sub_windows " },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "9000", "/v", "0", "10" }, "ERR sluice: window_ms " },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "9000", "", "1000", "10" }, "ERR sluice: path " },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "-1", "/v", "1000", "10" }, "ERR sluice: now " },
	{ "sliding_counter_prune", 3, { SC_REG, SCK, "k", "9000", "/v", "1000", "10", "/k", "1000", "7" },
	  "ERR sluice: sub_windows " },
	{ "sliding_counter_prune", 2, { SC_REG, SCK, "9000", "/v", "1000" }, "ERR sluice: sliding_counter_prune takes" },
	{ "sliding_counter_state", 1, { SCK, "0", "1000", "10", "9000" }, "ERR sluice: limit " },
	{ "sliding_counter_state", 1, { SCK, "3", "1000", "7", "9000" }, "ERR sluice: sub_windows " },
	{ "sliding_counter_state", 1, { SCK, "3", "1000", "10", "x" }, "ERR sluice: now " },
};

START_TEST(test_bad_arguments_change_nothing)
{
	check_bad_call(&bad_calls[_i]);
}
END_TEST

static Suite *sliding_counter_suite(void)
{
	Suite *s = suite_create("sliding_counter");
	TCase *tc;

	tc = test_tcase(s, "sliding_counter", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_sc_fields_removed_on_the_way);
	tcase_add_test(tc, test_sc_many_in_one_ms);
	tcase_add_test(tc, test_sc_one_sub_window_is_a_fixed_window);
	tcase_add_test(tc, test_sc_uses_redis_time);
	tcase_add_test(tc, test_sc_prune_boundary);
	tcase_add_test(tc, test_sc_prune_batch);
	tcase_add_test(tc, test_sc_prune_changes_no_answer);
	tcase_add_test(tc, test_sc_rejection_removes_nothing);
	tcase_add_test(tc, test_sc_prune_keeps_a_bare_mark);

	tc = test_tcase(s, "state", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_sc_state);

	tc = test_tcase(s, "tables", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_table, 0, TEST_N(algo_cases));

	tc = test_tcase(s, "skew", script_setup, script_teardown, 120);
	tcase_add_test(tc, test_sc_skew_lagging_clients);
	tcase_add_loop_test(tc, test_sc_model_traces, 0, 4);

	tc = test_tcase(s, "validation", script_setup, script_teardown, 120);
	tcase_add_loop_test(tc, test_bad_arguments_change_nothing, 0, TEST_N(bad_calls));
	return s;
}

int main(void)
{
	return test_run_suite(sliding_counter_suite());
}

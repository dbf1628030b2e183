#include "tests/script_fixture.h"

void script_setup(void)
{
	conn_up();
}

void script_teardown(void)
{
	conn_down();
}

const char *script_name_of_str(const char *name)
{
	return name;
}

const char *num(long long v)
{
	return test_num(v);
}

void check_pttl(const char *file, int line, const char *key, long long want)
{
	long long ttl = test_cmd_int(c, "PTTL %s", key);

	ck_assert_msg(ttl <= want && ttl > want - SLACK_MS, "%s:%d: PTTL %s is %lld, want %lld (minus the test's time)",
		      file, line, key, ttl, want);
}

long long zcard(const char *key)
{
	return test_cmd_int(c, "ZCARD %s", key);
}

int in_set(const char *set, const char *member)
{
	return (int)test_cmd_int(c, "SISMEMBER %s %s", set, member);
}

int in_registry(enum algo al, const char *path)
{
	return due_of(al, path) >= 0;
}

long long due_of(enum algo al, const char *path)
{
	redisReply *r = test_cmd(c, "ZSCORE %s %s", test_registry(algo_name(al), path), path);
	long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

	ck_assert_msg(r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL, "ZSCORE: %s",
		      r->type == REDIS_REPLY_ERROR ? r->str : "not a string");
	freeReplyObject(r);
	return v;
}

const char *algo_name(enum algo al)
{
	static const char *const names[] = { "fixed_window", "sliding_log", "sliding_counter", "token_bucket",
					     "leaky_bucket" };

	return names[al];
}

redisReply *shard_job(enum algo al, const char *path, long long now)
{
	static const char *const jobs[] = { "fixed_window_repair_shard", "sliding_log_prune_shard",
					    "sliding_counter_prune_shard", "token_bucket_reclaim_shard",
					    "leaky_bucket_drain_shard" };

	return ev(jobs[al], 1, test_registry(algo_name(al), path), now >= 0 ? num(now) : "", "500", NULL);
}

redisReply *lb_acquire(const char *path, const char *cap, const char *rate, const char *n, const char *now)
{
	return acquire(LB, path, cap, rate, NULL, n, now);
}

redisReply *lb_state(const char *path, const char *cap, const char *rate, const char *now)
{
	return ev(SCRIPT_LEAKY_BUCKET_STATE, 2, test_lb_key(path), test_lb_meta(path), cap, rate, now, NULL);
}

redisReply *sl_acquire(const char *path, const char *limit, const char *window, const char *now)
{
	return acquire(SL, path, limit, window, NULL, NULL, now);
}

redisReply *prune_unit(const char *reg, const char *key, const char *path, const char *window, long long now,
		       const char *unit)
{
	return ev("sliding_log_prune", 2, reg, key, num(now), path, window, unit, NULL);
}

redisReply *acquire(enum algo al, const char *p, const char *a, const char *b, const char *s, const char *n,
		    const char *now)
{
	const char *params[3] = { a, b, s };
	int np = al == SC ? 3 : 2;

	return test_client_call(c, TEST_EVAL, algo_name(al), p, n, now ? atoll(now) : -1, params, np);
}

int state_keys(enum algo al, const char *p, const char *keys[2])
{
	char meta[48];

	snprintf(meta, sizeof(meta), "%s_meta", algo_name(al));
	keys[0] = test_key(p, algo_name(al));
	keys[1] = test_key(p, meta);
	return 2;
}


redisReply *fw(const char *p, const char *limit, const char *window, long long now)
{
	return acquire(FW, p, limit, window, NULL, NULL, num(now));
}

redisReply *sc(const char *p, const char *limit, const char *window, const char *subs, long long now)
{
	return acquire(SC, p, limit, window, subs, NULL, num(now));
}

redisReply *tb(const char *p, const char *cap, const char *rate, const char *n, long long now)
{
	return acquire(TB, p, cap, rate, NULL, n, num(now));
}

redisReply *fw_state(const char *key, const char *limit, const char *window, const char *now)
{
	return ev("fixed_window_state", 2, key, key, limit, window, now, NULL);
}

redisReply *fw_state_foreign(const char *key, const char *limit, const char *window, const char *now)
{
	redisReply *r = fw_state(key, limit, window, now);
	char got[256];

	ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 6 && r->element[4]->type == REDIS_REPLY_ARRAY &&
			      r->element[4]->elements == 0 && r->element[5]->type == REDIS_REPLY_STRING &&
			      r->element[5]->len == 0,
		      "fixed_window_state of %s: %s, want 4 integers, {} and \"\"", key, test_show_reply(r, got, sizeof(got)));
	freeReplyObject(r->element[4]);
	freeReplyObject(r->element[5]);
	r->elements = 4;
	return r;
}

redisReply *sc_state(const char *p, const char *limit, const char *window, const char *subs, const char *now)
{
	return ev("sliding_counter_state", 1, SC_KEY(p), limit, window, subs, now, NULL);
}

redisReply *tb_state(const char *p, const char *cap, const char *rate, const char *now)
{
	return ev("token_bucket_state", 1, TB_KEY(p), cap, rate, now, NULL);
}

void check_algo_case(const struct algo_case *ac)
{
	const char *p = "/table", *keys[2];
	int nk = state_keys(ac->algo, p, keys);

	for (int i = 0; ac->steps[i].now >= 0; i++) {
		const struct step *st = &ac->steps[i];
		const char *n = st->n ? num(st->n) : NULL;
		char where[256], *before = NULL;
		redisReply *r;

		snprintf(where, sizeof(where), "%s, step %d (now %lld)", ac->name, i, st->now);
		if (st->want[0] == 0) {
			/* A rejected request extends no TTL: mark the TTLs first. */
			for (int k = 0; k < nk; k++)
				freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", keys[k], MARKER_TTL));
			before = test_snapshot(c);
		}
		r = acquire(ac->algo, p, ac->a, ac->b, ac->s, n, num(st->now));
		test_check_client(where, 0, r, st->want, "");
		if (st->want[0] == 1) {
			ck_assert_msg(in_registry(ac->algo, p), "%s: path not registered", where);
			for (int k = 0; k < nk; k++) {
				if (st->ttl > 0 && k == 0)
					check_pttl(where, 0, keys[k], st->ttl);
				/* Virtual time: keep the state from expiring in real time. */
				freeReplyObject(test_cmd(c, "PEXPIRE %s %lld", keys[k], MARKER_TTL));
			}
			continue;
		}
		/* Fixed window and token bucket: a rejection writes nothing at all.
		 * Sliding log and counter may drop what has left the window, the leaky
		 * bucket apply a leak that was due: the same call again writes nothing. */
		if (ac->algo == FW || ac->algo == TB)
			ck_snapshot_same(before);
		for (int k = 0; k < nk; k++)
			if (test_cmd_int(c, "EXISTS %s", keys[k]))
				check_pttl(where, 0, keys[k], MARKER_TTL);
		free(before);
		before = test_snapshot(c);
		r = acquire(ac->algo, p, ac->a, ac->b, ac->s, n, num(st->now));
		test_check_client(where, 1, r, st->want, "");
		ck_snapshot_same(before);
		free(before);
	}
}

void check_refused(const char *script, redisReply *r, const char *error)
{
	char shown[512];

	if (r->type == REDIS_REPLY_ARRAY && r->elements == 7) {
		ck_assert_msg(r->element[4]->type == REDIS_REPLY_INTEGER && r->element[4]->integer == 1 &&
				      r->element[6]->type == REDIS_REPLY_STRING &&
				      strncmp(r->element[6]->str, error, strlen(error)) == 0,
			      "%s: %s, want one path failed with \"%s...\"", script,
			      test_show_reply(r, shown, sizeof(shown)), error);
		freeReplyObject(r);
		return;
	}
	ck_error(r, error);
}

void check_bad_call(const struct bad_call *bc)
{
	int argc = 0;
	char *before;

	/* State at 1000 (of every algorithm, at /v and /k) that a call at 9000
	 * would drain, count, prune, repair, reclaim or reset. */
	freeReplyObject(lb_acquire("/v", "3", "1", "2", "1000"));
	freeReplyObject(sl_acquire("/v", "3", "1000", "1000"));
	freeReplyObject(fw("/v", "3", "1000", 1000));
	freeReplyObject(test_cmd(c, "PERSIST %s", test_key("/v", "fixed_window")));
	freeReplyObject(sc("/v", "3", "1000", "10", 1000));
	freeReplyObject(tb("/v", "3", "1", "1", 1000));
	freeReplyObject(fw("/k", "3", "1000", 1000));
	freeReplyObject(sc("/k", "3", "1000", "10", 1000));
	freeReplyObject(tb("/k", "3", "1", "1", 1000));
	before = test_snapshot(c);
	while (bc->args[argc])
		argc++;
	check_refused(bc->script, eval_argv(bc->script, 0, bc->nkeys, argc, bc->args), bc->error);
	ck_snapshot_same(before);
	free(before);
}

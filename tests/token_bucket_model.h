#ifndef SLUICE_TEST_TOKEN_BUCKET_MODEL_H
#define SLUICE_TEST_TOKEN_BUCKET_MODEL_H
/*
 * The token bucket on key layout 2, as a reference model for
 * check_token_bucket.c, written from DESIGN.md ("Time", "State model (key
 * layout 2)", "Client scripts: the calling contract") and lua/README.md, not
 * from the scripts:
 *
 *   - the bucket itself is tests/bucket_model.h's (lazy refill, the time
 *     mark: a call is served at t = max(now, last));
 *   - an admission records the capacity and rate it applied, as passed, and
 *     sets the path's due time in its shard's registry to when the bucket
 *     will have been full for the skew horizon: the smallest whole ms D with
 *     the bucket full at D - SKEW_MS, found by a search on the arithmetic;
 *   - the shard job at Redis time R takes the shard's paths due by R (by
 *     score, then member), deletes each bucket full at R - SKEW_MS already
 *     by the RECORDED capacity and rate and removes its path, removes a path
 *     whose bucket is gone, and reschedules the others at their due time.
 *
 * Also the layout-2 key names of a path of any bytes (NUL too), and the
 * randomized differential run over tests/bucket_model.h's traces.
 * Header-only and static, as tests/bucket_model.h.
 */
#include "core/shard.h"
#include "tests/bucket_model.h"

/* ---- key names --------------------------------------------------------------------- */

/* sluice's five keys of a path (any bytes, up to 200), with their lengths, and its shard. */
struct tb_names {
	char key[5][320];
	size_t len[5];
	unsigned shard;
};

enum { TBN_STATE, TBN_META, TBN_REG, TBN_RULES, TBN_STATS };

MODEL_FN void tb_names_of(const char *path, size_t plen, struct tb_names *k)
{
	static const char *const kind[] = { ":token_bucket:", ":token_bucket_meta:", ":registry:token_bucket", ":rules",
					    ":stats" };

	ck_assert_uint_le(plen, 200);
	k->shard = shard_of(path, plen);
	for (int i = 0; i < 5; i++) {
		int n = snprintf(k->key[i], sizeof(k->key[i]), "sluice:{%u}%s", k->shard, kind[i]);

		k->len[i] = (size_t)n;
		if (i <= TBN_META) { /* the path's own keys end with the path */
			memcpy(k->key[i] + n, path, plen);
			k->len[i] += plen;
			k->key[i][k->len[i]] = '\0';
		}
	}
}

/* ---- the model ----------------------------------------------------------------------- */

/* One path. */
struct tb2 {
	struct tb_model b;  /* the bucket (b.registered is not used: see due) */
	long long rec_cap;  /* the recorded capacity and rate, when b.stored */
	char rec_rate[24];
	long long due;      /* its score in the shard's registry; -1: not there */
	unsigned shard;
	const char *name;   /* the path's bytes */
	size_t len;
};

/* The ms at which the reclaim first has work on a bucket holding t0 tokens at last: min(2^53, last + the first ms it is full + skew). */
MODEL_FN long long tb2_due(double t0, long long last, long long cap, double rate, long long skew)
{
	long long full = tbm_ms_until(t0, rate, cap);

	return full >= MODEL_NEVER - last - skew ? MODEL_NEVER : last + full + skew;
}

/* token_bucket.lua on layout 2: out = {allowed, remaining, retry_after_ms, reset_ms} (the rule is ""). */
MODEL_FN void tb2_acquire(struct tb2 *m, long long cap, const char *rate, long long n, long long now, long long skew,
			  long long out[4])
{
	double r = strtod(rate, NULL);

	tbm_acquire(&m->b, cap, r, n, now, out);
	if (!out[0])
		return;
	m->rec_cap = cap;
	snprintf(m->rec_rate, sizeof(m->rec_rate), "%s", rate);
	m->due = tb2_due(m->b.tokens, m->b.last, cap, r, skew);
}

/* Registry order: by score, then by member as bytes (a shorter prefix first). */
MODEL_FN int tb2_before(const struct tb2 *a, const struct tb2 *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int cmp = memcmp(a->name, b->name, n);

	if (a->due != b->due)
		return a->due < b->due;
	return cmp < 0 || (cmp == 0 && a->len < b->len);
}

/*
 * token_bucket_reclaim_shard.lua over shard `shard` at R (limit above the
 * paths there): out = {reclaimed, removed, visited, skipped, next_due, backlog}.
 */
MODEL_FN void tb2_job(struct tb2 *p, int np, unsigned shard, long long R, long long skew, long long out[6])
{
	struct tb2 *due[16];
	int nd = 0;

	ck_assert_int_le(np, 16);
	memset(out, 0, 6 * sizeof(out[0]));
	for (int i = 0; i < np; i++)
		if (p[i].shard == shard && p[i].due >= 0 && p[i].due <= R)
			due[nd++] = &p[i];
	for (int i = 1; i < nd; i++) /* insertion sort: a handful */
		for (int j = i; j > 0 && tb2_before(due[j], due[j - 1]); j--) {
			struct tb2 *x = due[j];

			due[j] = due[j - 1];
			due[j - 1] = x;
		}
	for (int i = 0; i < nd; i++) {
		struct tb2 *m = due[i];
		long long by = R - skew;
		double rate, t0;

		out[2]++;
		if (!m->b.stored) { /* gone: leaves the registry */
			m->due = -1;
			out[1]++;
			continue;
		}
		rate = strtod(m->rec_rate, NULL);
		t0 = fmin(m->b.tokens, (double)m->rec_cap);
		/* full at R - SKEW_MS already, by what the bucket records: the same as absent */
		if (m->b.last <= by &&
		    fmin((double)m->rec_cap, t0 + rate * (double)(by - m->b.last) / 1000) + MODEL_EPS >= (double)m->rec_cap) {
			m->b.stored = 0;
			m->due = -1;
			out[0]++;
			out[1]++;
			continue;
		}
		m->due = model_max(tb2_due(t0, m->b.last, m->rec_cap, rate, skew), R + 1);
	}
	out[4] = -1;
	for (int i = 0; i < np; i++)
		if (p[i].shard == shard && p[i].due >= 0 && (out[4] < 0 || p[i].due < out[4]))
			out[4] = p[i].due;
}

/* ---- the differential run -------------------------------------------------------------- */

/* Queue EVALSHA sha nkeys argv[0..argc) with byte lengths lens. */
MODEL_FN void tb2_send(redisContext *rc, const char *sha, int nkeys, int argc, const char **argv, size_t *lens)
{
	const char *v[16];
	size_t l[16];
	char nk[8];

	ck_assert_int_le(argc, 13);
	snprintf(nk, sizeof(nk), "%d", nkeys);
	v[0] = "EVALSHA", v[1] = sha, v[2] = nk;
	for (int i = 0; i < 3; i++)
		l[i] = strlen(v[i]);
	memcpy(v + 3, argv, (size_t)argc * sizeof(*argv));
	memcpy(l + 3, lens, (size_t)argc * sizeof(*lens));
	ck_assert_int_eq(redisAppendCommandArgv(rc, argc + 3, v, l), REDIS_OK);
}

/* Whether r is a client reply {want[0..4), ""} (job 0) or a job reply want[0..6) (job 1); if not, both in msg. */
MODEL_FN int tb2_same(const redisReply *r, const long long *want, int job, char *msg, size_t cap)
{
	size_t n = job ? 6 : 4, k = 0;
	int ok = r->type == REDIS_REPLY_ARRAY && r->elements == n + !job;
	char got[256];

	for (size_t i = 0; ok && i < n; i++)
		ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == want[i];
	if (ok && !job)
		ok = r->element[4]->type == REDIS_REPLY_STRING && r->element[4]->len == 0;
	if (ok)
		return 1;
	k += (size_t)snprintf(msg + k, cap - k, "script %s, model {", test_show_reply(r, got, sizeof(got)));
	for (size_t i = 0; i < n && k < cap; i++)
		k += (size_t)snprintf(msg + k, cap - k, "%s%lld", i ? ", " : "", want[i]);
	if (k < cap)
		snprintf(msg + k, cap - k, "%s}", job ? "" : ", \"\"");
	return 0;
}

/* What a trace came across. */
struct tb2_counts {
	long long admitted, denied, reclaimed, at_mark, rescheduled, gone;
};

/*
 * The registry and the keys agree with the model after a chunk: each path's
 * score (or its absence), its bucket's existence and recorded parameters.
 */
MODEL_FN void tb2_check_keys(redisContext *rc, const struct tb2 *p, int np, const char *where)
{
	for (int i = 0; i < np; i++) {
		struct tb_names k;
		const char *zs[3], *hm[5];
		size_t zl[3], hl[5];
		redisReply *r;
		long long score;

		tb_names_of(p[i].name, p[i].len, &k);
		zs[0] = "ZSCORE", zs[1] = k.key[TBN_REG], zs[2] = p[i].name;
		zl[0] = 6, zl[1] = k.len[TBN_REG], zl[2] = p[i].len;
		r = redisCommandArgv(rc, 3, zs, zl);
		ck_assert_ptr_nonnull(r);
		score = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
		freeReplyObject(r);
		ck_assert_msg(score == p[i].due, "%s: path %d due %lld in the registry, %lld in the model", where, i, score,
			      p[i].due);
		hm[0] = "HMGET", hm[1] = k.key[TBN_STATE], hm[2] = "capacity", hm[3] = "rate", hm[4] = "last";
		hl[0] = 5, hl[1] = k.len[TBN_STATE], hl[2] = 8, hl[3] = 4, hl[4] = 4;
		r = redisCommandArgv(rc, 5, hm, hl);
		ck_assert_ptr_nonnull(r);
		ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
		if (!p[i].b.stored) {
			ck_assert_msg(r->element[0]->type == REDIS_REPLY_NIL && r->element[2]->type == REDIS_REPLY_NIL,
				      "%s: path %d has a bucket, none in the model", where, i);
		} else {
			ck_assert_msg(r->element[0]->type == REDIS_REPLY_STRING &&
					      atoll(r->element[0]->str) == p[i].rec_cap &&
					      r->element[1]->type == REDIS_REPLY_STRING &&
					      strcmp(r->element[1]->str, p[i].rec_rate) == 0 &&
					      r->element[2]->type == REDIS_REPLY_STRING &&
					      atoll(r->element[2]->str) == p[i].b.last,
				      "%s: path %d records other parameters or last than the model's (%lld, %s, last %lld)",
				      where, i, p[i].rec_cap, p[i].rec_rate, p[i].b.last);
		}
		freeReplyObject(r);
	}
}

/*
 * The trace of `seed` over np paths (names[i], lens[i]; at most 8), 10,000
 * calls, pipelined MODEL_CHUNK at a time: clients' acquires and shard jobs
 * (the job of call k->path's shard, at Redis time; two jobs in three are
 * moved back to the shard's first due time, or 1 ms before it, when that
 * has passed, so the reclaim's boundary is met exactly).  Every reply must be the
 * model's to the unit, or the test fails naming the call and both; after
 * each chunk the registry and the buckets must be the model's.  `kept` (np
 * of them) models each bucket as if the reclaim never ran, and must answer
 * every acquire as the bucket does: the reclaim changes nothing a client
 * within the horizon sees.  That holds while the client's parameters are
 * the ones the bucket records, so after a rule edit it is checked again
 * from the path's first admission under the new ones on: until then the
 * reclaim goes by the old ones (a rejection records nothing), and a bucket
 * full by those is the same as absent only under those.
 */
MODEL_FN void tb2_run(redisContext *rc, uint64_t seed, const char *const *names, const size_t *lens, int np,
		      struct tb2_counts *cnt)
{
	struct model_call *calls = calloc(MODEL_CALLS, sizeof(*calls));
	struct tb2 p[8];
	struct tb_model kept[8];
	int unsettled[8] = { 0 }; /* edited, not yet admitted under its new parameters */
	struct tb_names k[8];
	long long skew = model_skew_ms();
	char sha[2][41];

	ck_assert_ptr_nonnull(calls);
	ck_assert_int_le(np, 8);
	model_trace(seed, calls, MODEL_CALLS, np, 10, skew);
	model_load(rc, "token_bucket", sha[0]);
	model_load(rc, "token_bucket_reclaim_shard", sha[1]);
	memset(p, 0, sizeof(p));
	memset(kept, 0, sizeof(kept));
	for (int i = 0; i < np; i++) {
		tb_names_of(names[i], lens[i], &k[i]);
		p[i].due = -1;
		p[i].shard = k[i].shard;
		p[i].name = names[i];
		p[i].len = lens[i];
	}
	for (int i0 = 0; i0 < MODEL_CALLS; i0 += MODEL_CHUNK) {
		int i1 = i0 + MODEL_CHUNK < MODEL_CALLS ? i0 + MODEL_CHUNK : MODEL_CALLS;
		long long want[MODEL_CHUNK][6];
		char where[320];

		/* The model answers each call as it is queued, so that a job can be
		 * sent at a due time of its shard, or 1 ms before it. */
		for (int i = i0; i < i1; i++) {
			struct model_call *mc = &calls[i];
			struct tb2 *m = &p[mc->path];
			const struct tb_names *kk = &k[mc->path];
			long long *w = want[i - i0], other[4];
			const char *argv[11];
			size_t lv[11];

			snprintf(where, sizeof(where), "seed %llu, ", (unsigned long long)seed);
			if (mc->job) {
				long long first = -1;

				for (int j = 0; j < np; j++)
					if (p[j].shard == m->shard && p[j].due >= 0 && (first < 0 || p[j].due < first))
						first = p[j].due;
				if (first >= 0 && first <= mc->now && i % 3)
					mc->now = first - (i % 3 == 2); /* the boundary, met or just missed */
				model_show_call(calls, i, MODEL_CALLS, where + strlen(where), sizeof(where) - strlen(where));
				tb2_job(p, np, m->shard, mc->now, skew, w);
				cnt->reclaimed += w[0];
				cnt->gone += w[1] - w[0];
				cnt->rescheduled += w[2] - w[1];
				argv[0] = kk->key[TBN_REG], lv[0] = kk->len[TBN_REG];
				argv[1] = test_num(mc->now), argv[2] = "500";
				lv[1] = strlen(argv[1]), lv[2] = 3;
				tb2_send(rc, sha[1], 1, 3, argv, lv);
				continue;
			}
			model_show_call(calls, i, MODEL_CALLS, where + strlen(where), sizeof(where) - strlen(where));
			if (mc->edited)
				unsettled[mc->path] = 1;
			cnt->at_mark += m->b.stored && m->b.last > mc->now;
			tb2_acquire(m, mc->cap, mc->rate, mc->n, mc->now, skew, w);
			tbm_acquire(&kept[mc->path], mc->cap, strtod(mc->rate, NULL), mc->n, mc->now, other);
			cnt->admitted += w[0];
			cnt->denied += !w[0];
			if (unsettled[mc->path]) {
				if (w[0])
					unsettled[mc->path] = 0, kept[mc->path] = m->b;
				memcpy(other, w, sizeof(other));
			}
			ck_assert_msg(memcmp(w, other, sizeof(other)) == 0,
				      "%s: the reclaim changed the answer from {%lld, %lld, %lld, %lld} to {%lld, %lld, "
				      "%lld, %lld}",
				      where, other[0], other[1], other[2], other[3], w[0], w[1], w[2], w[3]);
			for (int j = 0; j < 5; j++)
				argv[j] = kk->key[j], lv[j] = kk->len[j];
			argv[5] = names[mc->path], lv[5] = lens[mc->path];
			argv[6] = test_num(mc->n), argv[7] = test_num(mc->now), argv[8] = "";
			argv[9] = test_num(mc->cap), argv[10] = mc->rate;
			for (int j = 6; j < 11; j++)
				lv[j] = strlen(argv[j]);
			tb2_send(rc, sha[0], 5, 11, argv, lv);
		}
		for (int i = i0; i < i1; i++) {
			const struct model_call *mc = &calls[i];
			redisReply *r;
			char msg[512];
			void *v = NULL;
			int same;

			ck_assert_msg(redisGetReply(rc, &v) == REDIS_OK && v, "redis I/O error: %s", rc->errstr);
			r = v;
			same = tb2_same(r, want[i - i0], mc->job, msg, sizeof(msg));
			freeReplyObject(r);
			if (!same) {
				snprintf(where, sizeof(where), "seed %llu, ", (unsigned long long)seed);
				model_show_call(calls, i, MODEL_CALLS, where + strlen(where), sizeof(where) - strlen(where));
			}
			ck_assert_msg(same, "%s: %s", where, msg);
		}
		snprintf(where, sizeof(where), "seed %llu, after call %d", (unsigned long long)seed, i1 - 1);
		tb2_check_keys(rc, p, np, where);
	}
	free(calls);
}

#endif

/*
 * Which shards' rules copies need writing (copies.c): each check reads a
 * copy's ":version" (HGET) and its field count (HLEN), two commands per
 * shard in one pipeline (COPIES_DEPTH commands a round trip).
 *
 * The version says which target the copy reflects.  The count says whether
 * it still holds that target's rules: a copy at the target (or at the
 * previous one) should hold its rule count plus the ':' fields it holds
 * (":version", ":max_clock_skew_ms" that skew.c keeps, any other written
 * by hand or by a newer daemon).  Not every ':' field is known, so the
 * count of them is learnt per shard: c->colons[k], what the copy held after
 * the last whole write or HKEYS of it (copies.c); a copy never seen so is
 * assumed to hold ":version", and ":max_clock_skew_ms" when this worker
 * keeps the skew.  So a rule lost (an HDEL by hand) or a stray rule field
 * added to a copy whose ":version" is current is found at its next check:
 *   - at the target: COPY_DRIFT, an HKEYS, then written whole (HDEL of the
 *     names it should not hold, one HSET of every rule) unless its rule
 *     names are exactly the target's, when only the ':' count is learnt (a
 *     ':' field added by hand: kept, and nothing written);
 *   - at the previous target: COPY_STALE, written whole (the difference
 *     alone would leave the loss in place).
 * A copy is written only when its names differ from the target's, and each
 * learning takes the count it saw, so a count that stays off does not make
 * a write at every check (at most an HKEYS each time the count changes).
 *
 * Not found, the count being the same: a rule whose text was changed in
 * place (a client then gets an error naming the rule when the text is not
 * a rule it can apply, which fails closed; the edited limit when it is one),
 * and as many fields lost as added (an HDEL of a rule with a stray or ':'
 * field added).  Such a copy stays so until it is rewritten whole for
 * another reason (a change of the rules gives a copy at the version before
 * only the difference, which does not rewrite an unchanged rule).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "worker/internal.h"

uint32_t copies_colons(const struct worker *w, unsigned k)
{
	if (w->copies.colons[k])
		return w->copies.colons[k];
	return 1 + (w->skew.on ? 1 : 0); /* ":version", ":max_clock_skew_ms" */
}

/*
 * What a copy's ":version" reply `e` says against the target: COPY_OK (the
 * same), COPY_PREV (the previous target's: the difference is enough),
 * COPY_NEWER (the same epoch, a later version), else COPY_STALE.
 */
static int judge(const struct copies_state *c, const redisReply *e)
{
	const char *v, *colon;
	size_t len, elen;
	uint64_t ver = 0;

	if (reply_str(e, &v, &len))
		return COPY_STALE;
	if (len == strlen(c->text) && !memcmp(v, c->text, len))
		return COPY_OK;
	if (c->prev_text[0] && len == strlen(c->prev_text) && !memcmp(v, c->prev_text, len))
		return COPY_PREV;
	if (!(colon = memrchr(v, ':', len)) || (elen = (size_t)(colon - v)) != strlen(c->epoch) ||
	    memcmp(v, c->epoch, elen) || colon + 1 == v + len || v + len - colon > 20)
		return COPY_STALE;
	for (const char *p = colon + 1; p < v + len; p++) {
		if (*p < '0' || *p > '9')
			return COPY_STALE;
		ver = ver * 10 + (uint64_t)(*p - '0');
	}
	return ver > c->version ? COPY_NEWER : COPY_STALE;
}

/*
 * The verdict `st` of shard k's version, against its HLEN reply `e`: a copy
 * at the target or the previous one with another count than that target's
 * rules and its ':' fields is COPY_DRIFT (the target) or COPY_STALE.
 */
static int judge_len(const struct worker *w, unsigned k, int st, const redisReply *e)
{
	const struct copies_state *c = &w->copies;
	long long n;
	size_t want;

	if (st != COPY_OK && st != COPY_PREV)
		return st;
	want = (st == COPY_OK ? c->nnames : c->prev_nnames) + copies_colons(w, k);
	if (!reply_int(e, &n) && n >= 0 && (unsigned long long)n == want)
		return st;
	return st == COPY_OK ? COPY_DRIFT : COPY_STALE;
}

int copies_check(struct worker *w, size_t from, size_t n, int *failed)
{
	struct copies_state *c = &w->copies;
	unsigned shard[COPIES_DEPTH / 2];
	int rc;

	for (size_t i = 0; i < n;) {
		size_t m = 0;

		rbatch_clear(w->batch);
		for (; i < n && m < COPIES_DEPTH / 2; i++) {
			unsigned k = (unsigned)((from + i) % SHARD_COUNT);

			if (c->state[k] == COPY_STALE || !worker_owns(w, k))
				continue;
			if (copies_cmd_start(c, w->prefix, "HGET", k) || cmdargs_str(&c->cmd, COPIES_VERSION) ||
			    copies_cmd_queue(c, NULL, w->batch) || copies_cmd_start(c, w->prefix, "HLEN", k) ||
			    copies_cmd_queue(c, NULL, w->batch))
				return -ENOMEM;
			shard[m++] = k;
		}
		if (m && (rc = rbatch_run(w->conn, w->batch)))
			return rc;
		for (size_t j = 0; j < m; j++) {
			const redisReply *e = rbatch_reply(w->batch, 2 * j), *len = rbatch_reply(w->batch, 2 * j + 1);
			unsigned char *st = &c->state[shard[j]];
			int now_st = judge_len(w, shard[j], judge(c, e), len);

			if (e && e->type == REDIS_REPLY_ERROR)
				copies_fail(c, shard[j], "HGET", e, failed);
			else if (len && len->type == REDIS_REPLY_ERROR)
				copies_fail(c, shard[j], "HLEN", len, failed);
			*st = (unsigned char)now_st;
		}
	}
	return 0;
}

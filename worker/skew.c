/*
 * The skew horizon in every shard's rules copy (DESIGN.md, "Time"): each
 * client script and shard job sets SKEW_MS from field ":max_clock_skew_ms" of
 * <prefix>{k}:rules, its own shard's (lua/lib/skew.lua skew_read), so the
 * one value sluiced is configured with (max_clock_skew_ms) reaches every
 * script in every language, on one Redis or on a Cluster (the copy is in
 * its shard's slot).  A copy without the field means the scripts' default.
 *
 * The worker writes the value into all 1024 copies when it starts and when
 * it is given another (SIGHUP), and checks them with a rolling HGET over
 * every shard each SKEW_CHECK_MS (and all of them after a reconnect or a
 * change of the rules, when Redis may have lost its data): a copy that lost
 * the field (FLUSHALL, a restart without persistence, a DEL by hand) is
 * written again.  Only the copies that need it are written, so a daemon that
 * starts while Redis is at maxmemory writes nothing when the copies are
 * there.  A write Redis refuses is retried every SKEW_RETRY_MS; meanwhile
 * the status says how many shards are pending, and why.  With leases
 * (several daemons) a daemon writes the copies of the shards it owns only,
 * and reads the others' too, so that a daemon configured with another
 * max_clock_skew_ms is noticed (conflicts) without two daemons rewriting
 * each other's copies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/keys.h"
#include "worker/internal.h"

/* ms in which the rolling check passes over every shard's copy */
#define SKEW_CHECK_MS 5000
/* ms between tries of a write Redis refused */
#define SKEW_RETRY_MS 250 /* as a node that is down is probed (core/rnode.c): back within 250 ms of Redis */
/* commands per round trip */
#define SKEW_DEPTH 256

void skew_init(struct skew_state *s, int64_t ms)
{
	if (!s->on || s->ms != ms) {
		/* the first time, what the copies hold is checked before anything is written (a
		 * restart writes nothing, at maxmemory too); a new value is written everywhere */
		memset(s->state, s->on ? SKEW_MISSING : SKEW_UNKNOWN, sizeof(s->state));
	}
	if (!s->on)
		roll_init(&s->keep.check);
	s->on = 1;
	s->ms = ms;
	snprintf(s->text, sizeof(s->text), "%lld", (long long)ms);
	s->keep.check_all = 1;
	s->keep.retry_ms = INT64_MIN;
}

/* Queue HGET (write 0) or HSET (write 1) of shard k's copy.  0 or -ENOMEM. */
static int queue(struct worker *w, unsigned k, int write)
{
	struct cmdargs *a = &w->jb.keys;
	const char *const *argv;
	const size_t *lens;
	int argc;

	cmdargs_reset(a);
	if (cmdargs_str(a, write ? "HSET" : "HGET") ||
	    cmdargs_end(a, keys_shard(cmdargs_begin(a), w->prefix, k, "rules")) || cmdargs_str(a, SKEW_FIELD) ||
	    (write && cmdargs_str(a, w->skew.text)) || (argc = cmdargs_view(a, NULL, &argv, &lens)) < 0)
		return -ENOMEM;
	return rbatch_cmd(w->batch, argc, argv, lens);
}

/* Note why shard k's copy could not be read or written, when it is the step's first failure. */
static void skew_fail(struct skew_state *s, unsigned k, const char *what, const redisReply *e, int *failed)
{
	if (!*failed)
		snprintf(s->keep.error, sizeof(s->keep.error), "%s of shard %u's rules copy: %s", what, k, reply_describe(e));
	*failed = 1;
}

/* Check `n` shards from `from` (not those known to lack it: they are written anyway).  0 or an rconn error. */
static int check(struct worker *w, size_t from, size_t n, int *failed)
{
	struct skew_state *s = &w->skew;
	unsigned shard[SKEW_DEPTH];
	int rc;

	for (size_t i = 0; i < n;) {
		size_t m = 0;

		rbatch_clear(w->batch);
		for (; i < n && m < SKEW_DEPTH; i++) {
			unsigned k = (unsigned)((from + i) % SHARD_COUNT);

			if (s->state[k] == SKEW_MISSING)
				continue;
			if ((rc = queue(w, k, 0)))
				return rc;
			shard[m++] = k;
		}
		if (m && (rc = rbatch_run(w->conn, w->batch)))
			return rc;
		for (size_t j = 0; j < m; j++) {
			const redisReply *e = rbatch_reply(w->batch, j);
			unsigned char *st = &s->state[shard[j]];
			const char *v;
			size_t len;
			int holds = !reply_str(e, &v, &len) && len == strlen(s->text) && !memcmp(v, s->text, len);

			if (e && e->type == REDIS_REPLY_ERROR)
				skew_fail(s, shard[j], "HGET", e, failed);
			if (!holds && (*st == SKEW_OK || !worker_owns(w, shard[j]))) {
				/* another number where this worker saw or wrote its own, or in a
				 * shard another daemon keeps (read, never written: its owner keeps
				 * it): someone else writes the copies with another max_clock_skew_ms */
				if (!reply_str(e, &v, &len) && len && len < 20) {
					char num[24];
					char *end;
					long long other;

					memcpy(num, v, len);
					num[len] = '\0';
					other = strtoll(num, &end, 10);
					if (*end == '\0' && other >= 0) {
						s->conflicts++;
						s->conflict_ms = other;
					}
				}
			}
			*st = holds ? SKEW_OK : SKEW_MISSING;
		}
	}
	return 0;
}

/* Write every copy known to lack it.  0 or an rconn error. */
static int write_pending(struct worker *w, int *failed)
{
	struct skew_state *s = &w->skew;
	unsigned shard[SKEW_DEPTH];
	size_t k = 0;
	int rc;

	while (k < SHARD_COUNT) {
		size_t m = 0;

		rbatch_clear(w->batch);
		for (; k < SHARD_COUNT && m < SKEW_DEPTH; k++) {
			if (s->state[k] != SKEW_MISSING || !worker_owns(w, (unsigned)k))
				continue;
			if ((rc = queue(w, (unsigned)k, 1)))
				return rc;
			shard[m++] = (unsigned)k;
		}
		if (m && (rc = rbatch_run(w->conn, w->batch)))
			return rc;
		for (size_t j = 0; j < m; j++) {
			const redisReply *e = rbatch_reply(w->batch, j);
			long long added;

			if (reply_int(e, &added)) {
				skew_fail(s, shard[j], "HSET", e, failed);
				continue;
			}
			s->state[shard[j]] = SKEW_OK;
			s->written++;
		}
	}
	return 0;
}

size_t skew_pending(const struct worker *w)
{
	size_t n = 0;

	for (unsigned k = 0; k < SHARD_COUNT; k++)
		n += w->skew.state[k] != SKEW_OK && worker_owns(w, k);
	return n;
}

int skew_step(struct worker *w, int64_t now, int all)
{
	static const struct keep_ops ops = { SKEW_CHECK_MS, SKEW_RETRY_MS, skew_pending, check, write_pending };

	return w->skew.on ? keep_step(w, &w->skew.keep, &ops, now, all) : 0;
}

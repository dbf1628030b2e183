/*
 * The rules in every shard's rules copy (DESIGN.md, "Rules"): a client
 * script called with a rule reference reads the rule from its own shard's
 * <prefix>{k}:rules, in its shard's slot, on one Redis or on a Cluster.
 * The format, which lua/lib/ruleset.lua reads:
 *
 *   <rule name>   the rule's canonical JSON (rule_to_text, the store's text)
 *   :version      "<epoch>:<version>" of the store the copy reflects
 *                 (decimal version; "" epoch when the store has none)
 *   :max_clock_skew_ms, and any field starting with ':', is not a rule
 *                 (skew.c keeps that one; a rule name holds no ':')
 *
 * A copy holds exactly the rules the worker loaded (rulestore_refresh: the
 * store's valid rules): a name the ruleset lacks is HDEL'd.  A copy at the
 * previous target, with its count of fields, is brought to the new one by
 * its difference (copies_target.c): HDEL of the names gone, one HSET of the rules new or
 * changed with ":version" last; any other copy by HKEYS, HDEL of the names
 * it should not hold, then one HSET of every rule with ":version" last.
 * Each command is atomic per copy, so a copy whose ":version" is the
 * store's holds that version's rules (unless edited by hand since).
 *
 * When: every copy is checked (HGET of ":version" and HLEN, pipelined:
 * copies_check.c) at the first step, after a reload of the rules, after a
 * reconnect, and when the caller asks (a sweep, every prune step);
 * otherwise a rolling slice, all of them every SKEW_CHECK_MS, so a copy
 * lost with Redis's data (FLUSHALL, a restart without persistence) or
 * edited by hand is written again: one at another version, or whose field
 * count is not its version's rules and its ':' fields (a rule HDEL'd, a
 * stray field added; then an HKEYS shows which, and the copy is written
 * whole).  A rule's text changed in place keeps the count: not found.
 * Only copies found so are written, so a daemon that starts on copies in
 * place writes nothing.  With leases (several daemons sharing the shards,
 * worker/lease.h) a daemon checks and writes the copies of the shards it
 * owns only (worker_owns); without, every copy.  A daemon that
 * has not reloaded yet leaves alone a copy of a later version of the same
 * epoch while the store's version is later too (a copy of another epoch is
 * written: the store lost its data and the epoch is new).  A write Redis refuses is retried every
 * COPIES_RETRY_MS; meanwhile the status says how many shards are pending,
 * and why.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/keys.h"
#include "core/rulestore.h"
#include "worker/internal.h"

/* ms in which the rolling check passes over every shard's copy (as skew.c's) */
#define COPIES_CHECK_MS 5000
/* ms between tries of a write Redis refused */
#define COPIES_RETRY_MS 250 /* as a node that is down is probed (core/rnode.c) */
/* shards per write round trip (HDEL + HSET each: COPIES_DEPTH commands) */
#define COPIES_CHUNK (COPIES_DEPTH / 2)
/* bytes of HSET payload per round trip, above which a chunk has fewer shards */
#define COPIES_BYTES (4u << 20)

int copies_init(struct copies_state *c)
{
	memset(c, 0, sizeof(*c));
	if (!(c->wbatch = rbatch_new()))
		return -ENOMEM;
	c->on = 1;
	roll_init(&c->keep.check);
	c->keep.retry_ms = INT64_MIN;
	return 0;
}

void copies_free(struct copies_state *c)
{
	copies_target_free(c);
	cmdargs_free(&c->cmd);
	rbatch_free(c->wbatch);
	c->wbatch = NULL;
}

/* Build the target from `rs` (loaded); every copy is checked again.  0 or -ENOMEM (c->have = 0). */
static int build_target(struct copies_state *c, const struct ruleset *rs)
{
	int rc = copies_target_build(c, rs);

	if (rc)
		return rc;
	/* a new version: every copy is checked, and written unless it holds it already */
	memset(c->state, COPY_UNKNOWN, sizeof(c->state));
	keep_reset(&c->keep);
	return 0;
}

void copies_fail(struct copies_state *c, unsigned k, const char *what, const redisReply *e, int *failed)
{
	if (!*failed)
		snprintf(c->keep.error, sizeof(c->keep.error), "%s of shard %u's rules copy: %s", what, k, reply_describe(e));
	*failed = 1;
}

int copies_cmd_start(struct copies_state *c, const char *prefix, const char *cmd, unsigned k)
{
	cmdargs_reset(&c->cmd);
	if (cmdargs_str(&c->cmd, cmd) || cmdargs_end(&c->cmd, keys_shard(cmdargs_begin(&c->cmd), prefix, k, "rules")))
		return -ENOMEM;
	return 0;
}

int copies_cmd_queue(struct copies_state *c, const struct cmdargs *tail, struct rbatch *b)
{
	const char *const *argv;
	const size_t *lens;
	int argc = cmdargs_view(&c->cmd, tail, &argv, &lens);

	return argc < 0 ? -ENOMEM : rbatch_cmd(b, argc, argv, lens);
}

/* Is field `f` (`len` bytes) `name`? */
static int is_field(const char *f, size_t len, const char *name)
{
	return len == strlen(name) && !memcmp(f, name, len);
}

/*
 * Queue shard k's writes into c->wbatch from its HKEYS reply `keys`: HDEL
 * of the fields that are neither the target's rules nor ':' fields (if
 * any), then the HSET; *colons: the ':' fields the copy holds then (those
 * it held, ":version", ":max_clock_skew_ms" when skew.c keeps it).  A copy
 * at the target with another count (`drift`) whose rule names are exactly
 * the target's gets nothing: its ':' fields were miscounted, *colons is
 * what it holds.  *cmds: how many were queued.  0 or -ENOMEM.
 */
static int queue_writes(struct worker *w, unsigned k, const redisReply *keys, int drift, size_t *cmds,
			uint32_t *colons)
{
	struct copies_state *c = &w->copies;
	size_t rules = 0;
	int rc, extra = 0, ver = 0, skew = 0;

	*cmds = 0;
	*colons = 0;
	if ((rc = copies_cmd_start(c, w->prefix, "HDEL", k)))
		return rc;
	for (size_t i = 0; i < keys->elements; i++) {
		const redisReply *f = keys->element[i];

		if (f->type != REDIS_REPLY_STRING)
			continue;
		if (f->len && f->str[0] == ':') {
			(*colons)++;
			ver |= is_field(f->str, f->len, COPIES_VERSION);
			skew |= is_field(f->str, f->len, SKEW_FIELD);
		} else if (copies_target_has(c, f->str, f->len)) {
			rules++;
		} else {
			if (cmdargs_add(&c->cmd, f->str, f->len))
				return -ENOMEM;
			extra = 1;
		}
	}
	if (drift && !extra && rules == c->nnames)
		return 0;
	*colons += (uint32_t)!ver + (uint32_t)(w->skew.on && !skew);
	if (extra) {
		if ((rc = copies_cmd_queue(c, NULL, c->wbatch)))
			return rc;
		(*cmds)++;
	}
	if ((rc = copies_cmd_start(c, w->prefix, "HSET", k)) || (rc = copies_cmd_queue(c, &c->fields, c->wbatch)))
		return rc;
	(*cmds)++;
	return 0;
}

/* Queue shard k's difference from the previous target: HDEL of the names gone (if any), HSET of the rest. */
static int queue_delta(struct worker *w, unsigned k, size_t *cmds)
{
	struct copies_state *c = &w->copies;
	int rc;

	*cmds = 0;
	if (c->gone.n) {
		if ((rc = copies_cmd_start(c, w->prefix, "HDEL", k)) || (rc = copies_cmd_queue(c, &c->gone, c->wbatch)))
			return rc;
		(*cmds)++;
	}
	if ((rc = copies_cmd_start(c, w->prefix, "HSET", k)) || (rc = copies_cmd_queue(c, &c->delta, c->wbatch)))
		return rc;
	(*cmds)++;
	return 0;
}

/*
 * Write the copies of shards[0..m): a COPY_PREV one its difference from the
 * previous target; a COPY_STALE one the whole target (HKEYS, then HDEL of
 * the names it should not hold, and the HSET); a COPY_DRIFT one the same,
 * unless its HKEYS shows the target's names (its ':' count is learnt, and
 * nothing written).  0 or an rconn error.
 */
static int write_chunk(struct worker *w, const unsigned *shard, size_t m, int *failed)
{
	struct copies_state *c = &w->copies;
	size_t first[COPIES_CHUNK], ncmds[COPIES_CHUNK], at[COPIES_CHUNK], q = 0, nk = 0;
	uint32_t colons[COPIES_CHUNK];
	int rc;

	rbatch_clear(w->batch);
	for (size_t j = 0; j < m; j++) {
		if (c->state[shard[j]] == COPY_PREV)
			continue;
		if ((rc = copies_cmd_start(c, w->prefix, "HKEYS", shard[j])) || (rc = copies_cmd_queue(c, NULL, w->batch)))
			return -ENOMEM;
		at[j] = nk++;
	}
	if (nk && (rc = rbatch_run(w->conn, w->batch)))
		return rc;
	rbatch_clear(c->wbatch);
	for (size_t j = 0; j < m; j++) {
		unsigned char *st = &c->state[shard[j]];
		const redisReply *keys;

		ncmds[j] = 0;
		first[j] = q;
		colons[j] = c->colons[shard[j]]; /* the difference keeps them */
		if (*st == COPY_PREV) {
			if ((rc = queue_delta(w, shard[j], &ncmds[j])))
				return rc;
			q += ncmds[j];
			continue;
		}
		keys = rbatch_reply(w->batch, at[j]);
		if (!keys || keys->type != REDIS_REPLY_ARRAY) {
			copies_fail(c, shard[j], "HKEYS", keys, failed);
			continue;
		}
		if ((rc = queue_writes(w, shard[j], keys, *st == COPY_DRIFT, &ncmds[j], &colons[j])))
			return rc;
		if (!ncmds[j]) { /* the target's rules: the ':' fields are learnt */
			c->colons[shard[j]] = colons[j];
			*st = COPY_OK;
		}
		q += ncmds[j];
	}
	if (q && (rc = rbatch_run(w->conn, c->wbatch)))
		return rc;
	for (size_t j = 0; j < m; j++) {
		int ok = ncmds[j] > 0;

		for (size_t i = 0; i < ncmds[j]; i++) {
			const redisReply *e = rbatch_reply(c->wbatch, first[j] + i);
			long long n;

			if (reply_int(e, &n)) {
				copies_fail(c, shard[j], i + 1 < ncmds[j] ? "HDEL" : "HSET", e, failed);
				ok = 0;
				break;
			}
		}
		if (!ok)
			continue;
		c->state[shard[j]] = COPY_OK;
		c->colons[shard[j]] = colons[j];
		c->written++;
	}
	rbatch_clear(c->wbatch);
	return 0;
}

/* Write every copy known to be stale, drifted or at the previous target, in chunks.  0 or an rconn error. */
static int write_pending(struct worker *w, int *failed)
{
	struct copies_state *c = &w->copies;
	unsigned shard[COPIES_CHUNK];
	size_t chunk = COPIES_BYTES / (c->field_bytes + 64), k = 0;
	int rc;

	if (chunk > COPIES_CHUNK)
		chunk = COPIES_CHUNK;
	if (chunk == 0)
		chunk = 1;
	while (k < SHARD_COUNT) {
		size_t m = 0;

		for (; k < SHARD_COUNT && m < chunk; k++)
			if ((c->state[k] == COPY_STALE || c->state[k] == COPY_PREV || c->state[k] == COPY_DRIFT) &&
			    worker_owns(w, (unsigned)k))
				shard[m++] = (unsigned)k;
		if (m && (rc = write_chunk(w, shard, m, failed)))
			return rc;
	}
	return 0;
}

/*
 * Copies seen at a later version of the target's epoch: left alone while
 * the store is ahead of the target (another daemon reloaded first; this one
 * reloads at its next step), written when it is not (the store's version
 * went back in the same epoch: its version key was lost and marked again,
 * or a copy was edited by hand).  0 or an rconn error.
 */
static int settle_newer(struct worker *w)
{
	struct copies_state *c = &w->copies;
	uint64_t v;
	int rc;

	if (!memchr(c->state, COPY_NEWER, sizeof(c->state)))
		return 0;
	if ((rc = rulestore_version(w->conn, w->prefix, &v)))
		return rc == -EBADMSG ? 0 : rc; /* a version key of another type: the reload reports it */
	if (v > c->version)
		return 0;
	for (size_t k = 0; k < SHARD_COUNT; k++)
		if (c->state[k] == COPY_NEWER)
			c->state[k] = COPY_STALE;
	return 0;
}

/* The writes of a step: the newer copies settled first, then those pending. */
static int write_step(struct worker *w, int *failed)
{
	int rc = settle_newer(w);

	return rc ? rc : write_pending(w, failed);
}

size_t copies_pending(const struct worker *w)
{
	size_t n = 0;

	for (unsigned k = 0; k < SHARD_COUNT; k++)
		n += w->copies.state[k] != COPY_OK && worker_owns(w, k);
	return n;
}

int copies_step(struct worker *w, int64_t now, int all)
{
	static const struct keep_ops ops = { COPIES_CHECK_MS, COPIES_RETRY_MS, copies_pending, copies_check,
					     write_step };
	struct copies_state *c = &w->copies;
	int rc;

	if (!c->on || !w->rules.loaded)
		return 0;
	if ((!c->have || c->version != w->rules.version || strcmp(c->epoch, w->rules.epoch)) &&
	    (rc = build_target(c, &w->rules))) {
		c->keep.check_all = 1;
		rbatch_clear(w->batch);
		return rc;
	}
	return keep_step(w, &c->keep, &ops, now, all);
}

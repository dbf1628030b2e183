/*
 * Shard leases (worker/lease.h): taken, renewed and given back in batched
 * lease.lua calls, one round trip a step after the heartbeat; who should
 * own which shard is worker/members.c's.
 */
#include "worker/lease.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/config.h"
#include "core/keys.h"
#include "core/reply.h"
#include "core/shard.h"
#include "worker/members.h"

enum { OP_NONE = 0, OP_ACQUIRE, OP_RENEW, OP_RELEASE };

/* ms of the first retry of a refused acquisition (doubling) */
#define LEASE_RETRY_MS 50
/* a PTTL this much above lease_ttl_ms is another daemon's longer TTL (not a clock's jitter) */
#define LEASE_TTL_SLACK_MS 100

/*
 * The lease calls of one round trip.  On a single Redis one call takes up to
 * LEASE_PER_CALL shards (one script's set-up for all: a daemon renews every
 * lease it holds each ttl / 3); on a cluster each shard is a slot of its own,
 * so a call takes one.
 */
#define LEASE_PER_CALL 256

struct calls {
	size_t per_call;                 /* shards a call takes at most */
	size_t n;                        /* shards queued */
	unsigned shard[SHARD_COUNT];
	size_t ncalls;
	size_t first[SHARD_COUNT + 1];   /* call i's shards: shard[first[i] .. first[i + 1]) */
	size_t in_call;                  /* shards in the call being built */
};

struct lease {
	char id[LEASE_ID_MAX + 1];
	size_t idlen;
	char *prefix;
	int64_t ttl_ms;
	char incarnation[9];                 /* 8 hex digits, random per process */
	uint64_t tokens;                     /* tokens handed out */
	unsigned char held[SHARD_COUNT];
	unsigned char op[SHARD_COUNT];       /* the call of the current round trip */
	uint32_t gained[SHARD_COUNT];
	uint64_t token[SHARD_COUNT];         /* held (or being taken): its token */
	int64_t valid_us[SHARD_COUNT];       /* held: surely ours until then (CLOCK_MONOTONIC) */
	int64_t retry_us[SHARD_COUNT];       /* wanted, refused: not tried again before */
	unsigned char refusals[SHARD_COUNT]; /* wanted: acquisitions refused in a row */
	unsigned char unsure[SHARD_COUNT];   /* an acquire of token[k] got no answer: it may hold the key */
	struct members ms;                   /* the daemons, and which shards are this one's */
	struct calls calls;                  /* the lease calls of the round trip being built */
	struct cmdargs args;                 /* ... the ARGV of the call being built (`a`: its KEYS) */
	struct cmdargs a;
	struct worker_lease_status st;       /* counters and last_error (the rest is filled by lease_status) */
};

struct lease *lease_new(const char *id, const char *prefix, int64_t ttl_ms)
{
	struct lease *l;
	const char *why;
	unsigned char r[4];

	if (config_id_check(id, &why) || !prefix || ttl_ms < LEASE_TTL_MIN_MS || ttl_ms > LEASE_TTL_MAX_MS)
		return NULL;
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return NULL;
	if (!(l = calloc(1, sizeof(*l))))
		return NULL;
	if (!(l->prefix = strdup(prefix))) {
		free(l);
		return NULL;
	}
	/* dead after three lease periods (ttl / 3) without a heartbeat */
	members_init(&l->ms, id, ttl_ms, ttl_ms * LEASE_FORGET_TTLS);
	l->idlen = strlen(id);
	memcpy(l->id, id, l->idlen + 1);
	l->ttl_ms = ttl_ms;
	snprintf(l->incarnation, sizeof(l->incarnation), "%02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
	return l;
}

void lease_free(struct lease *l)
{
	if (!l)
		return;
	cmdargs_free(&l->a);
	cmdargs_free(&l->args);
	members_free(&l->ms);
	free(l->prefix);
	free(l);
}

int lease_holds(const struct lease *l, unsigned k)
{
	return k < SHARD_COUNT && l->held[k];
}

int lease_holds_for(const struct lease *l, unsigned k, int64_t now_us, int64_t margin_us)
{
	return lease_holds(l, k) && l->valid_us[k] - now_us >= margin_us;
}

uint32_t lease_gained(const struct lease *l, unsigned k)
{
	return k < SHARD_COUNT ? l->gained[k] : 0;
}

int64_t lease_ttl_ms(const struct lease *l)
{
	return l->ttl_ms;
}

size_t lease_live(const struct lease *l)
{
	return l->ms.live ? l->ms.live : 1;
}

/* "<id>:<token>" of token `t`: the token is hex, the incarnation (8 digits) then `t` (8 or more) */
static int owner_add(const struct lease *l, uint64_t t, struct cmdargs *a)
{
	char tail[40];
	struct strbuf *b = cmdargs_begin(a);
	int n = snprintf(tail, sizeof(tail), ":%s%08llx", l->incarnation, (unsigned long long)t);

	return cmdargs_end(a, strbuf_add(b, l->id, l->idlen) || strbuf_add(b, tail, (size_t)n));
}

int lease_owner_arg(const struct lease *l, unsigned k, struct cmdargs *a)
{
	return owner_add(l, k < SHARD_COUNT ? l->token[k] : 0, a);
}

int lease_key_arg(const struct lease *l, unsigned k, struct cmdargs *a)
{
	return cmdargs_end(a, keys_shard(cmdargs_begin(a), l->prefix, k, "lease"));
}

static void set_error(struct lease *l, const char *what, const char *why)
{
	snprintf(l->st.last_error, sizeof(l->st.last_error), "%s: %s", what, why);
}

void lease_fenced(struct lease *l, unsigned k)
{
	if (k >= SHARD_COUNT)
		return;
	l->st.fenced++;
	if (l->held[k]) {
		l->held[k] = 0;
		l->st.lost++;
	}
}

/* Drop the leases whose time ran out by this daemon's clock. */
static void expire_local(struct lease *l, int64_t now_us)
{
	for (size_t k = 0; k < SHARD_COUNT; k++) {
		if (l->held[k] && l->valid_us[k] <= now_us) {
			l->held[k] = 0;
			l->st.lost++;
		}
	}
}

/* Queue the call being built (lease.lua: KEYS the lease keys, ARGV ttl then op and owner per key).  0 or -ENOMEM. */
static int calls_flush(struct lease *l, struct calls *cs, struct rbatch *b)
{
	const char *const *argv;
	const size_t *lens;
	int argc;

	if (!cs->in_call)
		return 0;
	if ((argc = cmdargs_view(&l->a, &l->args, &argv, &lens)) < 0 ||
	    rbatch_eval(b, SCRIPT_LEASE, (int)cs->in_call, argc, argv, lens))
		return -ENOMEM;
	cs->first[++cs->ncalls] = cs->n;
	cs->in_call = 0;
	return 0;
}

/* Add lease.lua `op` of shard k with `token` to the calls.  0 or -ENOMEM. */
static int calls_add(struct lease *l, struct calls *cs, struct rbatch *b, unsigned k, const char *op,
		     uint64_t token)
{
	if (cs->in_call == 0) {
		cmdargs_reset(&l->a);
		cmdargs_reset(&l->args);
		if (cmdargs_int(&l->args, l->ttl_ms))
			return -ENOMEM;
	}
	if (lease_key_arg(l, k, &l->a) || cmdargs_str(&l->args, op) || owner_add(l, token, &l->args))
		return -ENOMEM;
	cs->shard[cs->n++] = k;
	if (++cs->in_call == cs->per_call)
		return calls_flush(l, cs, b);
	return 0;
}

static void calls_init(struct calls *cs, const struct rconn *c)
{
	cs->per_call = rconn_is_cluster(c) ? 1 : LEASE_PER_CALL;
	cs->n = cs->ncalls = cs->in_call = 0;
	cs->first[0] = 0;
}

/* The refused acquisition's reply {0, holder, pttl}: when to try again. */
static void refused_retry(struct lease *l, unsigned k, const redisReply *e, int64_t now_us)
{
	long long pttl = -2;
	/*
	 * Its holder, alive, hands it over at its next step once it sees this daemon
	 * (a join): tried again soon, then less and less often (50 ms doubling, up to
	 * ttl / 4) while it does not (the holder sees other members, or it is dead
	 * and its lease runs out: PTTL below).
	 */
	int64_t wait_ms = LEASE_RETRY_MS << (l->refusals[k] < 6 ? l->refusals[k] : 6);
	const redisReply *const *el;
	const char *holder;
	size_t n, len;

	if (wait_ms > l->ttl_ms / 4)
		wait_ms = l->ttl_ms / 4;
	if (l->refusals[k] < UINT8_MAX)
		l->refusals[k]++;
	(void)reply_int_at(e, 2, &pttl);
	if (pttl > l->ttl_ms + LEASE_TTL_SLACK_MS) {
		/* a lease longer than any this daemon sets: its holder has a longer lease_ttl_ms
		 * (it judges the others' deaths by it too: a dead daemon's shards wait for it) */
		l->st.ttl_conflicts++;
		l->st.ttl_conflict_ms = pttl;
	}
	if (!reply_array(e, 2, &el, &n) && !reply_str(el[1], &holder, &len) && len > l->idlen + 1 &&
	    memcmp(holder, l->id, l->idlen) == 0 && holder[l->idlen] == ':' &&
	    memcmp(holder + l->idlen + 1, l->incarnation, 8) != 0)
		/* this id's string, not this process's: an earlier run of it (its lease runs out), or
		 * another daemon configured with the same id (they would take turns for ever) */
	{
		l->st.duplicate_id++;
		snprintf(l->st.duplicate_last, sizeof(l->st.duplicate_last),
			 "shard %u's lease is held by another process with this id (\"%.*s\"): ids must be unique", k,
			 (int)(len < 90 ? len : 90), holder);
	}
	if (pttl == -2)
		wait_ms = 0; /* gone meanwhile: at the next step */
	else if (pttl >= 0 && pttl < wait_ms)
		wait_ms = pttl; /* it runs out before its holder would hand it over */
	l->retry_us[k] = now_us + wait_ms * 1000;
}

/* Fold the reply of shard k's call `op` (sent at `sent_us`). */
static void fold_lease(struct lease *l, unsigned k, const redisReply *e, int64_t sent_us)
{
	long long ok;

	if (reply_int_at(e, 0, &ok)) {
		/* a node down, or Redis refused: the shard stays as it was (its time runs out if held) */
		set_error(l, "lease", reply_describe(e));
		return;
	}
	switch (l->op[k]) {
	case OP_ACQUIRE:
		l->unsure[k] = 0; /* answered */
		if (ok == 1) {
			const redisReply *const *el;
			const char *what;
			size_t n, len;

			if (!reply_array(e, 2, &el, &n) && !reply_str(el[1], &what, &len)) {
				/* the key held what no daemon writes: replaced */
				l->st.repaired++;
				snprintf(l->st.repaired_last, sizeof(l->st.repaired_last), "shard %u's lease was %.*s", k,
					 (int)(len < 40 ? len : 40), what);
			}
			l->held[k] = 1;
			l->refusals[k] = 0;
			l->gained[k]++;
			l->valid_us[k] = sent_us + l->ttl_ms * 1000;
			l->st.acquired++;
		} else {
			l->st.refused++;
			refused_retry(l, k, e, sent_us);
		}
		break;
	case OP_RENEW:
		if (ok == 1) {
			l->valid_us[k] = sent_us + l->ttl_ms * 1000;
		} else {
			l->held[k] = 0;
			l->st.lost++;
		}
		break;
	case OP_RELEASE:
		l->held[k] = 0;
		if (ok == 1)
			l->st.released++;
		else
			l->st.lost++;
		break;
	}
}

/* Fold the replies of the calls (each an array: one entry per shard, in order), sent at `sent_us`. */
static void fold_calls(struct lease *l, const struct calls *cs, const struct rbatch *b, int64_t sent_us)
{
	for (size_t i = 0; i < cs->ncalls; i++) {
		const redisReply *e = rbatch_reply(b, i);
		const redisReply *const *el;
		size_t n, want = cs->first[i + 1] - cs->first[i];

		if (reply_array(e, want, &el, &n) || n != want) {
			/* a node down, or Redis refused the call: its shards stay as they were
			 * (their time runs out if held) */
			set_error(l, "lease", reply_describe(e));
			continue;
		}
		for (size_t j = 0; j < n; j++)
			fold_lease(l, cs->shard[cs->first[i] + j], el[j], sent_us);
	}
}

int lease_step(struct lease *l, struct rconn *c, struct rbatch *b, int64_t now_us)
{
	struct calls *cs = &l->calls;
	int rc, beat_rc = 0;

	expire_local(l, now_us);
	rbatch_clear(b);
	if ((rc = members_queue(&l->ms, l->prefix, b, 0)))
		goto out;
	if ((beat_rc = rbatch_run(c, b))) {
		if (beat_rc == -EIO || beat_rc == -EAGAIN)
			set_error(l, "heartbeat: redis", rconn_errstr(c));
	} else if ((beat_rc = members_read(&l->ms, rbatch_reply(b, 0), l->st.last_error,
					   sizeof(l->st.last_error))) >= 0) {
		l->st.heartbeats++;
		if (beat_rc == 1) {
			/* other members, other owners: every shard this daemon now wants is tried at once */
			memset(l->retry_us, 0, sizeof(l->retry_us));
			memset(l->refusals, 0, sizeof(l->refusals));
		}
		beat_rc = 0;
	}
	/* a single Redis that did not answer the heartbeat answers no renewal either */
	if (beat_rc == -ENOMEM || ((beat_rc == -EIO || beat_rc == -EAGAIN) && !rconn_is_cluster(c))) {
		rc = beat_rc;
		goto out;
	}

	/*
	 * Without a heartbeat (on a cluster, the node that holds <prefix>daemons
	 * may be down while the shards' nodes are up) the leases held are still
	 * renewed, so the shards stay maintained, but none is taken or given
	 * back: the members are not known.
	 */
	rbatch_clear(b);
	calls_init(cs, c);
	for (unsigned k = 0; k < SHARD_COUNT; k++) {
		const char *op = NULL;

		l->op[k] = OP_NONE;
		/* each lease renewed once a third of its TTL went by since its last renewal
		 * (those taken together are renewed together: one call on a single Redis) */
		int renew = l->held[k] && l->valid_us[k] - now_us <= l->ttl_ms * 1000 * 2 / 3;

		if (beat_rc && !renew)
			continue;
		if (l->held[k] && !l->ms.mine[k] && !beat_rc) {
			l->op[k] = OP_RELEASE;
			op = "release";
		} else if (renew) {
			l->op[k] = OP_RENEW;
			op = "renew";
		} else if (!l->held[k] && l->ms.mine[k] && l->retry_us[k] <= now_us) {
			l->op[k] = OP_ACQUIRE;
			/* a new string, so no call from before matches it; but the same one again
			 * when the last acquire got no answer: it may have set the key (lease.lua
			 * answers an acquire of the string the key holds as done) */
			if (!l->unsure[k])
				l->token[k] = ++l->tokens;
			l->unsure[k] = 1;
			op = "acquire";
		}
		if (op && (rc = calls_add(l, cs, b, k, op, l->token[k])))
			goto out;
	}
	if ((rc = calls_flush(l, cs, b)))
		goto out;
	if (cs->ncalls && (rc = rbatch_run(c, b))) {
		if ((rc == -EIO || rc == -EAGAIN) && !beat_rc)
			set_error(l, "redis", rconn_errstr(c));
		goto out;
	}
	if (!beat_rc)
		l->st.last_error[0] = '\0';
	fold_calls(l, cs, b, now_us);
	rc = beat_rc;
out:
	if (rc == -ENOMEM)
		set_error(l, "lease", "out of memory");
	rbatch_clear(b);
	return rc;
}

int lease_release_all(struct lease *l, struct rconn *c, struct rbatch *b)
{
	struct calls *cs = &l->calls;
	int rc;

	rbatch_clear(b);
	calls_init(cs, c);
	for (unsigned k = 0; k < SHARD_COUNT; k++) {
		l->op[k] = OP_NONE;
		if (!l->held[k])
			continue;
		l->op[k] = OP_RELEASE;
		if ((rc = calls_add(l, cs, b, k, "release", l->token[k])))
			goto out;
	}
	if ((rc = calls_flush(l, cs, b)) || (rc = members_queue(&l->ms, l->prefix, b, 1)) || (rc = rbatch_run(c, b)))
		goto out;
	fold_calls(l, cs, b, 0);
	/* whatever the replies said: this daemon acts on no shard any more */
	memset(l->held, 0, sizeof(l->held));
out:
	rbatch_clear(b);
	return rc;
}

void lease_status(const struct lease *l, struct worker_lease_status *out)
{
	size_t owned = 0;

	*out = l->st;
	out->on = 1;
	out->repaired += l->ms.repaired;
	if (l->ms.repaired && !out->repaired_last[0])
		snprintf(out->repaired_last, sizeof(out->repaired_last), "<prefix>daemons was a %s", l->ms.repaired_what);
	memcpy(out->id, l->id, l->idlen + 1);
	out->ttl_ms = l->ttl_ms;
	for (size_t k = 0; k < SHARD_COUNT; k++)
		owned += l->held[k];
	out->owned = owned;
	members_status(&l->ms, out);
}

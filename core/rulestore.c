#include "core/rulestore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

struct keys {
	char hash[128];
	char version[136];
	char epoch[136];
};

static void make_keys(const char *prefix, struct keys *k)
{
	snprintf(k->hash, sizeof(k->hash), "%srules", prefix);
	snprintf(k->version, sizeof(k->version), "%srules:version", prefix);
	snprintf(k->epoch, sizeof(k->epoch), "%srules:epoch", prefix);
}

/* A version as stored: digits only; anything else reads as 0 (and forces reloads). */
static int parse_version(const redisReply *r, uint64_t *out)
{
	uint64_t v = 0;

	*out = 0;
	if (r->type == REDIS_REPLY_NIL)
		return 0;
	if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 19)
		return -EPROTO;
	for (size_t i = 0; i < r->len; i++) {
		if (r->str[i] < '0' || r->str[i] > '9')
			return -EPROTO;
		v = v * 10 + (uint64_t)(r->str[i] - '0');
	}
	*out = v;
	return 0;
}

int rulestore_version(struct rconn *c, const char *prefix, uint64_t *out)
{
	struct keys k;
	const char *argv[2] = { "GET", k.version };
	size_t lens[2] = { 3, 0 };
	redisReply *r;
	uint64_t v;
	int rc;

	make_keys(prefix, &k);
	lens[1] = strlen(k.version);
	if ((rc = rconn_command(c, 2, argv, lens, &r)))
		return rc;
	if (r->type == REDIS_REPLY_ERROR)
		rc = -EBADMSG;
	else
		parse_version(r, &v);
	freeReplyObject(r);
	if (!rc)
		*out = v;
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct rule *const *)a)->name, (*(struct rule *const *)b)->name);
}

/* The store's (version, epoch); *sane = 0 when the version is not a number. */
static int read_marks(struct rconn *c, const struct keys *k, uint64_t *version, char *epoch,
		      size_t cap, int *sane)
{
	const char *argv[3] = { "MGET", k->version, k->epoch };
	size_t lens[3] = { 4, strlen(k->version), strlen(k->epoch) };
	redisReply *r;
	int rc;

	if ((rc = rconn_command(c, 3, argv, lens, &r)))
		return rc;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
		rc = r->type == REDIS_REPLY_ERROR ? -EBADMSG : -EPROTO;
		freeReplyObject(r);
		return rc;
	}
	*sane = parse_version(r->element[0], version) == 0;
	snprintf(epoch, cap, "%s", r->element[1]->type == REDIS_REPLY_STRING ? r->element[1]->str : "");
	freeReplyObject(r);
	return 0;
}

static int queue_multi(struct rbatch *b, int exec)
{
	const char *m[1] = { exec ? "EXEC" : "MULTI" };
	size_t l[1] = { exec ? 4 : 5 };

	return rbatch_cmd(b, 1, m, l) ? -ENOMEM : 0;
}

/* Tries of the read without a transaction before one inside MULTI. */
#define REFRESH_READS 3

/* Any reply of the batch that is Redis's refusal at maxmemory: -ENOSPC; else 0. */
static int batch_oom(const struct rbatch *b)
{
	for (size_t i = 0; i < rbatch_len(b); i++)
		if (reply_is_oom(rbatch_reply(b, i)))
			return -ENOSPC;
	return 0;
}

/* Two MGET replies of (version, epoch) that are the same strings (or both nil). */
static int same_marks(const redisReply *a, const redisReply *b)
{
	for (size_t i = 0; i < 2; i++) {
		const redisReply *x = a->element[i], *y = b->element[i];

		if (x->type != y->type || (x->type == REDIS_REPLY_STRING &&
					   (x->len != y->len || memcmp(x->str, y->str, x->len) != 0)))
			return 0;
	}
	return 1;
}

static int is_marks(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ARRAY && r->elements == 2;
}

/*
 * Read the marks and the rules hash so that they agree, into *marks and *hash
 * (owned by `b`).  Redis at maxmemory refuses every command queued in MULTI,
 * so first without a transaction: MGET, HGETALL, MGET again in one pipeline.
 * Every change bumps the version with the hash in one MULTI (the epoch tells
 * a store that started again), so equal marks around the HGETALL mean no
 * change landed in between.  After REFRESH_READS tries that all saw a change,
 * one read inside MULTI (which at maxmemory fails with -ENOSPC).
 */
static int read_store(struct rconn *c, const struct keys *k, struct rbatch *b, const redisReply **marks,
		      const redisReply **hash)
{
	const char *mget[3] = { "MGET", k->version, k->epoch }, *all[2] = { "HGETALL", k->hash };
	size_t mgetl[3] = { 4, strlen(k->version), strlen(k->epoch) }, alll[2] = { 7, strlen(k->hash) };
	const redisReply *r;
	int rc;

	for (int tries = 0; tries < REFRESH_READS; tries++) {
		rbatch_clear(b);
		if (rbatch_cmd(b, 3, mget, mgetl) || rbatch_cmd(b, 2, all, alll) || rbatch_cmd(b, 3, mget, mgetl))
			return -ENOMEM;
		if ((rc = rbatch_run(c, b)))
			return rc;
		if (!is_marks(rbatch_reply(b, 0)) || !is_marks(rbatch_reply(b, 2)))
			return batch_oom(b) ? -ENOSPC : -EPROTO;
		if (same_marks(rbatch_reply(b, 0), rbatch_reply(b, 2))) {
			*marks = rbatch_reply(b, 0);
			*hash = rbatch_reply(b, 1);
			return 0;
		}
	}
	rbatch_clear(b);
	if (queue_multi(b, 0) || rbatch_cmd(b, 3, mget, mgetl) || rbatch_cmd(b, 2, all, alll) ||
	    queue_multi(b, 1))
		return -ENOMEM;
	if ((rc = rbatch_run(c, b)))
		return rc;
	if ((rc = batch_oom(b)))
		return rc;
	r = rbatch_reply(b, 3);
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !is_marks(r->element[0]))
		return -EPROTO;
	*marks = r->element[0];
	*hash = r->element[1];
	return 0;
}

int rulestore_refresh(struct rconn *c, const char *prefix, struct ruleset *rs, int force,
		      int *changed, size_t *invalid)
{
	struct keys k;
	struct ruleset next = { 0 };
	struct rbatch *b = NULL;
	char epoch[sizeof(rs->epoch)];
	const redisReply *marks, *hash;
	size_t bad = 0;
	uint64_t v;
	int rc, sane;

	if (changed)
		*changed = 0;
	make_keys(prefix, &k);
	if ((rc = read_marks(c, &k, &v, epoch, sizeof(epoch), &sane)))
		return rc;
	if (!force && sane && rs->loaded && v == rs->version && strcmp(epoch, rs->epoch) == 0)
		return 0;
	if (!(b = rbatch_new()))
		return -ENOMEM;
	if ((rc = read_store(c, &k, b, &marks, &hash)))
		goto out;
	if (hash->type == REDIS_REPLY_ERROR) {
		rc = -EBADMSG; /* the rules key has another type */
		goto out;
	}
	if (hash->type != REDIS_REPLY_ARRAY) {
		rc = -EPROTO;
		goto out;
	}
	parse_version(marks->element[0], &v);
	snprintf(epoch, sizeof(epoch), "%s", marks->element[1]->type == REDIS_REPLY_STRING ? marks->element[1]->str : "");
	for (size_t i = 0; i + 1 < hash->elements; i += 2) {
		const redisReply *name = hash->element[i], *body = hash->element[i + 1];
		struct rule *rule;

		if (name->type != REDIS_REPLY_STRING || body->type != REDIS_REPLY_STRING ||
		    strlen(name->str) != name->len ||
		    rule_from_text(body->str, body->len, name->str, &rule, NULL)) {
			bad++;
			continue;
		}
		if ((rc = ruleset_put(&next, rule)))
			goto out;
	}
	if (next.n > 1)
		qsort(next.v, next.n, sizeof(next.v[0]), by_name);
	ruleset_clear(rs);
	*rs = next;
	rs->version = v;
	memcpy(rs->epoch, epoch, sizeof(rs->epoch));
	rs->loaded = 1;
	memset(&next, 0, sizeof(next));
	if (changed)
		*changed = 1;
	if (invalid)
		*invalid = bad;
out:
	ruleset_clear(&next);
	rbatch_free(b);
	return rc;
}

/*
 * Refuse a change when the version counter is not a number: EXEC would store
 * the rule and fail the INCR (Redis does not roll back), and no other daemon
 * would ever reload.
 */
static int check_version(struct rconn *c, const struct keys *k)
{
	char epoch[40];
	uint64_t v;
	int sane, rc = read_marks(c, k, &v, epoch, sizeof(epoch), &sane);

	return rc ? rc : sane ? 0 : -EBADMSG;
}

/* A fresh epoch token: 16 hex digits from getrandom, or time and pid when it fails. */
static void new_epoch(char *out, size_t cap)
{
	unsigned long long x;

	if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x))
		x = (unsigned long long)time(NULL) * 1000003ULL ^ (unsigned long long)getpid();
	snprintf(out, cap, "%016llx", x);
}

/* Run MULTI, `cmds`, EXEC; every queued command must succeed. */
static int transaction(struct rconn *c, struct rbatch *b, size_t ncmds, redisReply **exec)
{
	redisReply *r;
	int rc;

	if ((rc = rbatch_run(c, b)))
		return rc;
	if ((rc = batch_oom(b)))
		return rc; /* refused at maxmemory: EXEC ran nothing (EXECABORT) */
	r = rbatch_reply(b, ncmds + 1);
	if (!r)
		return -EPROTO;
	if (r->type == REDIS_REPLY_NIL)
		return -ESTALE; /* a WATCHed key changed: EXEC ran nothing */
	if (r->type != REDIS_REPLY_ARRAY || r->elements != ncmds)
		return r->type == REDIS_REPLY_ERROR ? -EBADMSG : -EPROTO;
	for (size_t i = 0; i < r->elements; i++)
		if (r->element[i]->type == REDIS_REPLY_ERROR)
			return -EBADMSG;
	*exec = r;
	return 0;
}

int rulestore_etag(const struct rule *r, char out[RULESTORE_ETAG_SIZE])
{
	char *text = rule_to_text(r);
	uint64_t h = 1469598103934665603ULL; /* FNV-1a 64 offset basis */

	if (!text)
		return -ENOMEM;
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		h ^= *p;
		h *= 1099511628211ULL; /* FNV 64 prime */
	}
	free(text);
	snprintf(out, RULESTORE_ETAG_SIZE, "\"%016llx\"", (unsigned long long)h);
	return 0;
}

/* Does the stored rule (`text`, or NULL when absent) satisfy If-Match `cond`? */
static int precondition_holds(const char *cond, const char *name, const char *text, size_t len)
{
	char tag[RULESTORE_ETAG_SIZE];
	struct rule *r = NULL;
	const char *p = cond;

	if (!text)
		return 0; /* neither "*" nor a tag matches an absent rule */
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '*' && p[strspn(p + 1, " \t") + 1] == '\0')
		return 1; /* "*", spaces around it allowed */
	if (rule_from_text(text, len, name, &r, NULL) || rulestore_etag(r, tag)) {
		rule_free(r);
		return 0;
	}
	rule_free(r);
	/* a list of tags: "a", "b" (weak tags never match a strong comparison) */
	while (*p) {
		size_t n;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		n = strcspn(p, ",");
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == strlen(tag) && memcmp(p, tag, n) == 0)
			return 1;
		p += strcspn(p, ",");
	}
	return 0;
}

static int watch_rules(struct rconn *c, const struct keys *k, int on)
{
	const char *argv[2] = { on ? "WATCH" : "UNWATCH", k->hash };
	size_t lens[2] = { on ? 5 : 7, strlen(k->hash) };
	redisReply *r;
	int rc = rconn_command(c, on ? 2 : 1, argv, lens, &r);

	if (!rc) {
		rc = r->type == REDIS_REPLY_STATUS ? 0 : -EBADMSG;
		freeReplyObject(r);
	}
	return rc;
}

int rulestore_put(struct rconn *c, const char *prefix, const struct rule *rule, int *created,
		  int *unchanged)
{
	return rulestore_put_if(c, prefix, rule, NULL, created, unchanged);
}

int rulestore_put_if(struct rconn *c, const char *prefix, const struct rule *rule, const char *if_match,
		     int *created, int *unchanged)
{
	struct keys k;
	char *text = rule_to_text(rule), epoch[24];
	const char *hget[3] = { "HGET", k.hash, rule->name };
	size_t hgetl[3] = { 4, 0, strlen(rule->name) };
	struct rbatch *b = NULL;
	redisReply *old = NULL, *exec;
	int rc, execd = 0;

	if (!text)
		return -ENOMEM;
	make_keys(prefix, &k);
	hgetl[1] = strlen(k.hash);
	/* WATCH before the read, so a change between the check and EXEC aborts EXEC */
	if (if_match && (rc = watch_rules(c, &k, 1)))
		goto out;
	if ((rc = rconn_command(c, 3, hget, hgetl, &old)))
		goto out;
	if (old->type == REDIS_REPLY_ERROR) {
		rc = -EBADMSG;
		goto out;
	}
	if (if_match && !precondition_holds(if_match, rule->name,
					    old->type == REDIS_REPLY_STRING ? old->str : NULL, old->len)) {
		rc = -ESTALE;
		goto out;
	}
	if (old->type == REDIS_REPLY_STRING && strcmp(old->str, text) == 0) {
		if (created)
			*created = 0;
		if (unchanged)
			*unchanged = 1;
		goto out;
	}
	if ((rc = check_version(c, &k)))
		goto out;
	if (!(b = rbatch_new())) {
		rc = -ENOMEM;
		goto out;
	}
	new_epoch(epoch, sizeof(epoch));
	{
		const char *hset[4] = { "HSET", k.hash, rule->name, text };
		const char *incr[2] = { "INCR", k.version };
		const char *setnx[4] = { "SET", k.epoch, epoch, "NX" };
		size_t hsetl[4] = { 4, strlen(k.hash), strlen(rule->name), strlen(text) };
		size_t incrl[2] = { 4, strlen(k.version) };
		size_t setnxl[4] = { 3, strlen(k.epoch), strlen(epoch), 2 };

		if (queue_multi(b, 0) || rbatch_cmd(b, 4, hset, hsetl) || rbatch_cmd(b, 2, incr, incrl) ||
		    rbatch_cmd(b, 4, setnx, setnxl) || queue_multi(b, 1)) {
			rc = -ENOMEM;
			goto out;
		}
	}
	rc = transaction(c, b, 3, &exec);
	execd = 1; /* EXEC (run or aborted) ended the WATCH */
	if (rc)
		goto out;
	if (created)
		*created = old->type == REDIS_REPLY_NIL;
	if (unchanged)
		*unchanged = 0;
out:
	if (if_match && !execd)
		watch_rules(c, &k, 0); /* EXEC clears the WATCH; every other way out must */
	if (old)
		freeReplyObject(old);
	rbatch_free(b);
	free(text);
	return rc;
}

int rulestore_mark(struct rconn *c, const char *prefix)
{
	struct keys k;
	char epoch[24];
	struct rbatch *b = NULL;
	redisReply *r = NULL;
	int rc;

	make_keys(prefix, &k);
	/* Write only what is missing: Redis at maxmemory refuses even a SET NX that would change nothing. */
	{
		const char *argv[3] = { "MGET", k.version, k.epoch };
		size_t lens[3] = { 4, strlen(k.version), strlen(k.epoch) };

		if ((rc = rconn_command(c, 3, argv, lens, &r)))
			return rc;
	}
	if (!is_marks(r)) {
		rc = r->type == REDIS_REPLY_ERROR ? -EBADMSG : -EPROTO;
		goto out;
	}
	if (r->element[0]->type != REDIS_REPLY_NIL && r->element[1]->type != REDIS_REPLY_NIL)
		goto out;
	if (!(b = rbatch_new())) {
		rc = -ENOMEM;
		goto out;
	}
	new_epoch(epoch, sizeof(epoch));
	{
		const char *v[4] = { "SET", k.version, "1", "NX" }, *e[4] = { "SET", k.epoch, epoch, "NX" };
		size_t vl[4] = { 3, strlen(k.version), 1, 2 }, el[4] = { 3, strlen(k.epoch), strlen(epoch), 2 };

		rc = rbatch_cmd(b, 4, v, vl) || rbatch_cmd(b, 4, e, el) ? -ENOMEM : rbatch_run(c, b);
	}
	if (!rc)
		rc = batch_oom(b);
out:
	freeReplyObject(r);
	rbatch_free(b);
	return rc;
}

int rulestore_delete(struct rconn *c, const char *prefix, const char *name, int *deleted)
{
	return rulestore_delete_if(c, prefix, name, NULL, deleted);
}

int rulestore_delete_if(struct rconn *c, const char *prefix, const char *name, const char *if_match,
			int *deleted)
{
	struct keys k;
	const char *hexists[3] = { "HEXISTS", k.hash, name };
	const char *hdel[3] = { "HDEL", k.hash, name };
	const char *incr[2] = { "INCR", k.version };
	size_t hel[3] = { 7, 0, strlen(name) }, hdell[3] = { 4, 0, strlen(name) }, incrl[2] = { 4, 0 };
	struct rbatch *b = NULL;
	redisReply *r = NULL, *exec;
	int rc;

	make_keys(prefix, &k);
	hel[1] = hdell[1] = strlen(k.hash);
	incrl[1] = strlen(k.version);
	if (if_match) {
		const char *hget[3] = { "HGET", k.hash, name };
		size_t hgl[3] = { 4, strlen(k.hash), strlen(name) };

		if ((rc = watch_rules(c, &k, 1)))
			return rc;
		if ((rc = rconn_command(c, 3, hget, hgl, &r)))
			return rc;
		rc = r->type == REDIS_REPLY_ERROR ? -EBADMSG
		     : r->type == REDIS_REPLY_NIL ? 0
		     : !precondition_holds(if_match, name, r->type == REDIS_REPLY_STRING ? r->str : NULL, r->len)
			     ? -ESTALE : 0;
		if (!rc && r->type == REDIS_REPLY_NIL) {
			/* nothing to delete: not found, whatever the precondition */
			freeReplyObject(r);
			watch_rules(c, &k, 0);
			*deleted = 0;
			return 0;
		}
		freeReplyObject(r);
		if (rc || (rc = check_version(c, &k))) {
			watch_rules(c, &k, 0);
			return rc;
		}
	} else {
		/* only an existing rule is deleted and bumps the version */
		if ((rc = rconn_command(c, 3, hexists, hel, &r)))
			return rc;
		rc = r->type == REDIS_REPLY_INTEGER ? 0 : r->type == REDIS_REPLY_ERROR ? -EBADMSG : -EPROTO;
		if (!rc && r->integer == 0) {
			freeReplyObject(r);
			*deleted = 0;
			return 0;
		}
		freeReplyObject(r);
		if (rc || (rc = check_version(c, &k)))
			return rc;
	}
	if (!(b = rbatch_new()) || queue_multi(b, 0) || rbatch_cmd(b, 3, hdel, hdell) ||
	    rbatch_cmd(b, 2, incr, incrl) || queue_multi(b, 1)) {
		rc = -ENOMEM;
		if (if_match)
			watch_rules(c, &k, 0); /* nothing was sent: EXEC did not end the WATCH */
		goto out;
	}
	if ((rc = transaction(c, b, 2, &exec)))
		goto out;
	*deleted = exec->element[0]->type == REDIS_REPLY_INTEGER && exec->element[0]->integer == 1;
out:
	rbatch_free(b);
	return rc;
}

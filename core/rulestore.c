#include "core/rulestore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

/*
 * Every command this file sends names one key: the three keys below hash to
 * three slots of a Redis Cluster (they carry no hash tag, and DESIGN.md fixes
 * their names).  Commands of a pipeline go to different nodes there and keep
 * no order between nodes, so where order matters (a write before the
 * version's bump, the hash read between two reads of the marks) each step is
 * its own round trip.
 */
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
		rc = reply_errno(r); /* -EIO for a node down (NODEDOWN), else -ENOSPC or -EBADMSG */
	else
		parse_version(r, &v);
	freeReplyObject(r);
	if (!rc)
		*out = v;
	return rc;
}

/* Bytes of a digest as rulestore_read.lua writes it ("<fields>:<40 hex>"), with its NUL. */
#define DIGEST_SIZE sizeof(((struct ruleset *)0)->digest)

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct rule *const *)a)->name, (*(struct rule *const *)b)->name);
}

/* The store's (version, epoch) as read. */
struct marks {
	uint64_t version;   /* 0 when absent or not a number */
	int sane;           /* the version key is absent or holds a number */
	int has_version;    /* the version key exists (of any type) */
	int has_epoch;      /* the epoch key exists (of any type) */
	char epoch[40];     /* "" when absent or not a string */
};

static int same_marks(const struct marks *a, const struct marks *b)
{
	return a->version == b->version && a->sane == b->sane && a->has_version == b->has_version &&
	       a->has_epoch == b->has_epoch && strcmp(a->epoch, b->epoch) == 0;
}

/* GET of the version, GET of the epoch: two commands of one key each. 0 or -ENOMEM. */
static int queue_marks(struct rbatch *b, const struct keys *k)
{
	const char *gv[2] = { "GET", k->version }, *ge[2] = { "GET", k->epoch };
	size_t gvl[2] = { 3, strlen(k->version) }, gel[2] = { 3, strlen(k->epoch) };

	return rbatch_cmd(b, 2, gv, gvl) || rbatch_cmd(b, 2, ge, gel) ? -ENOMEM : 0;
}

static int is_wrongtype(const redisReply *r)
{
	return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "WRONGTYPE", 9) == 0;
}

/*
 * The marks from the replies of queue_marks at `i` and `i + 1` of `b`.  A key
 * of another type (WRONGTYPE) reads as one of no value, as MGET answers it: a
 * version not sane, the epoch "".  Another error reply: -ENOSPC or -EBADMSG.
 */
static int take_marks(const struct rbatch *b, size_t i, struct marks *m)
{
	const redisReply *v = rbatch_reply(b, i), *e = rbatch_reply(b, i + 1);

	if (!v || !e)
		return -EPROTO;
	if ((v->type == REDIS_REPLY_ERROR && !is_wrongtype(v)) || (e->type == REDIS_REPLY_ERROR && !is_wrongtype(e)))
		return reply_errno(v->type == REDIS_REPLY_ERROR && !is_wrongtype(v) ? v : e);
	memset(m, 0, sizeof(*m));
	m->has_version = v->type != REDIS_REPLY_NIL;
	m->sane = parse_version(v, &m->version) == 0;
	m->has_epoch = e->type != REDIS_REPLY_NIL;
	if (e->type == REDIS_REPLY_STRING)
		snprintf(m->epoch, sizeof(m->epoch), "%.*s", (int)e->len, e->str);
	return 0;
}

/* The marks alone, one round trip.  0 or as take_marks, or an rconn error. */
static int read_marks(struct rconn *c, const struct keys *k, struct rbatch *b, struct marks *m)
{
	int rc;

	rbatch_clear(b);
	if ((rc = queue_marks(b, k)) || (rc = rbatch_run(c, b)))
		return rc;
	return take_marks(b, 0, m);
}

/* rulestore_read.lua on the hash: `what` is "digest" or "all".  0 or -ENOMEM. */
static int queue_read(struct rbatch *b, const struct keys *k, const char *what)
{
	const char *argv[2] = { k->hash, what };
	size_t lens[2] = { strlen(k->hash), strlen(what) };

	return rbatch_eval(b, SCRIPT_RULESTORE_READ, 1, 2, argv, lens) ? -ENOMEM : 0;
}

/* The digest, first element of a rulestore_read.lua reply, into `out` (`cap` bytes). */
static int take_digest(const redisReply *r, char *out, size_t cap)
{
	if (!r)
		return -EPROTO;
	if (r->type == REDIS_REPLY_ERROR)
		return reply_errno(r); /* WRONGTYPE: the rules key has another type */
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || (r->elements - 1) % 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len >= cap)
		return -EPROTO;
	memcpy(out, r->element[0]->str, r->element[0]->len + 1);
	return 0;
}

/*
 * The check of a refresh: the marks, and the hash's digest when `digest` is
 * not NULL, in one round trip (three keys, any order).
 */
static int read_check(struct rconn *c, const struct keys *k, struct rbatch *b, struct marks *m, char *digest,
		      size_t cap)
{
	int rc;

	rbatch_clear(b);
	if ((rc = queue_marks(b, k)) || (digest && (rc = queue_read(b, k, "digest"))) || (rc = rbatch_run(c, b)))
		return rc;
	if ((rc = take_marks(b, 0, m)))
		return rc;
	return digest ? take_digest(rbatch_reply(b, 2), digest, cap) : 0;
}

/* Tries of the hash's read between two equal reads of the marks; then the last read is taken. */
#define REFRESH_READS 3

/*
 * Read the rules hash (rulestore_read.lua "all": its digest, then its fields)
 * between two reads of the marks, each its own round trip, so the hash was
 * read after the first marks and before the second on a Cluster too.  `m`
 * holds the marks read before (in) and the ones the hash goes with (out).
 * Every change writes the hash before it bumps the version, so equal marks
 * around the read mean it holds every change up to them (and perhaps one
 * whose bump is still to come, which the next refresh sees).  After
 * REFRESH_READS reads that each saw the marks change, the last read is taken
 * with the marks read before it: the version now stored differs from those,
 * so the next refresh reads again.  *hash is the caller's (freeReplyObject).
 */
static int read_store(struct rconn *c, const struct keys *k, struct rbatch *b, struct marks *m,
		      redisReply **hash)
{
	redisReply *h = NULL;
	struct marks after;
	char digest[DIGEST_SIZE];
	int rc = 0;

	for (int tries = 0; tries < REFRESH_READS; tries++) {
		rbatch_clear(b);
		if ((rc = queue_read(b, k, "all")) || (rc = rbatch_run(c, b)))
			goto fail;
		if (h)
			freeReplyObject(h);
		h = rbatch_take(b, 0);
		if ((rc = take_digest(h, digest, sizeof(digest))) || (rc = read_marks(c, k, b, &after)))
			goto fail;
		if (same_marks(m, &after))
			break;
		if (tries + 1 < REFRESH_READS)
			*m = after;
	}
	*hash = h;
	return 0;
fail:
	if (h)
		freeReplyObject(h);
	return rc;
}

/*
 * rulestore_cas.lua on `key` (the hash for "hset"/"hdel", the version for
 * "incr") with ARGV `args` (`nargs` of them, at most 5, the op first).  *st is
 * the script's status (0, 1, 2) and *found its second element, owned by `b`.
 * -ENOSPC when Redis refused the call at maxmemory (nothing written),
 * -EBADMSG for another error reply (a key of another type), -EPROTO.
 */
static int cas(struct rconn *c, struct rbatch *b, const char *key, int nargs, const char *const *args,
	       const size_t *lens, long long *st, const redisReply **found)
{
	const char *argv[6];
	size_t l[6];
	const redisReply *r;
	int rc;

	if (nargs > 5)
		return -EINVAL;
	argv[0] = key;
	l[0] = strlen(key);
	for (int i = 0; i < nargs; i++) {
		argv[i + 1] = args[i];
		l[i + 1] = lens[i];
	}
	rbatch_clear(b);
	if (rbatch_eval(b, SCRIPT_RULESTORE_CAS, 1, nargs + 1, argv, l))
		return -ENOMEM;
	if ((rc = rbatch_run(c, b)))
		return rc;
	r = rbatch_reply(b, 0);
	if (!r || r->type == REDIS_REPLY_ERROR)
		return r ? reply_errno(r) : -EPROTO;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_INTEGER ||
	    r->element[0]->integer < 0 || r->element[0]->integer > 2)
		return -EPROTO;
	*st = r->element[0]->integer;
	*found = r->element[1];
	return 0;
}

/* A fresh epoch token: 16 hex digits from getrandom, or time and pid when it fails. */
static void new_epoch(char *out, size_t cap)
{
	unsigned long long x;

	if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x))
		x = (unsigned long long)time(NULL) * 1000003ULL ^ (unsigned long long)getpid();
	snprintf(out, cap, "%016llx", x);
}

/* One command of one key whose reply must not be an error.  0, -ENOSPC, -EBADMSG or an rconn error. */
static int write_one(struct rconn *c, struct rbatch *b, int argc, const char *const *argv, const size_t *lens)
{
	const redisReply *r;
	int rc;

	rbatch_clear(b);
	if (rbatch_cmd(b, argc, argv, lens))
		return -ENOMEM;
	if ((rc = rbatch_run(c, b)))
		return rc;
	r = rbatch_reply(b, 0);
	return !r ? -EPROTO : r->type == REDIS_REPLY_ERROR ? reply_errno(r) : 0;
}

/* SET <epoch> <fresh token> NX.  As write_one. */
static int set_epoch(struct rconn *c, const struct keys *k, struct rbatch *b)
{
	char epoch[24];
	const char *argv[4] = { "SET", k->epoch, epoch, "NX" };
	size_t lens[4] = { 3, strlen(k->epoch), 0, 2 };

	new_epoch(epoch, sizeof(epoch));
	lens[2] = strlen(epoch);
	return write_one(c, b, 4, argv, lens);
}

/*
 * A change's announcement, after its write to the hash: the epoch (SET NX)
 * when the read before found none, then INCR of the version, each its own
 * round trip so the version moves last on a Cluster too.  Its error is not
 * the change's: the change is made, and a refresh that finds the hash's
 * digest changed at the same version bumps the version for it (rulestore.h).
 */
static int announce(struct rconn *c, const struct keys *k, struct rbatch *b, int with_epoch)
{
	const char *incr[2] = { "INCR", k->version };
	size_t incrl[2] = { 4, strlen(k->version) };
	int rc;

	if (with_epoch && (rc = set_epoch(c, k, b)))
		return rc;
	return write_one(c, b, 2, incr, incrl);
}

/*
 * The bump a change without one is owed (found by the digest): the epoch when
 * there is none, then the version, only if it is still `m`'s
 * (rulestore_cas.lua "incr"), so daemons that find the same change at once
 * bump it once.  0 (bumped, or the version moved already), or the error of
 * the write Redis refused (at maxmemory: -ENOSPC).
 */
static int owed_bump(struct rconn *c, const struct keys *k, struct rbatch *b, const struct marks *m)
{
	char v[24];
	const char *args[2] = { "incr", v };
	size_t lens[2] = { 4, 0 };
	const redisReply *found;
	long long st;
	int rc;

	if (!m->has_epoch && (rc = set_epoch(c, k, b)))
		return rc;
	lens[1] = (size_t)snprintf(v, sizeof(v), "%llu", (unsigned long long)m->version);
	return cas(c, b, k->version, 2, args, lens, &st, &found);
}

int rulestore_refresh(struct rconn *c, const char *prefix, struct ruleset *rs, int force,
		      int *changed, size_t *invalid)
{
	struct keys k;
	struct ruleset next = { 0 };
	struct rbatch *b = NULL;
	struct marks m;
	char digest[DIGEST_SIZE];
	redisReply *hash = NULL;
	int64_t now = clock_mono_ms();
	int due = !force && rs->loaded && now >= rs->digest_due_ms;
	size_t bad = 0;
	int rc;

	if (changed)
		*changed = 0;
	make_keys(prefix, &k);
	if (!(b = rbatch_new()))
		return -ENOMEM;
	if ((rc = read_check(c, &k, b, &m, due ? digest : NULL, sizeof(digest))))
		goto out;
	if (!force && rs->loaded && m.sane && m.version == rs->version && strcmp(m.epoch, rs->epoch) == 0) {
		if (!due)
			goto out; /* the version says nothing changed; the digest is checked later */
		if (strcmp(digest, rs->digest) == 0) {
			rs->digest_due_ms = now + RULESTORE_DIGEST_MS;
			goto out; /* nothing changed */
		}
		if (m.version > 0 && strncmp(digest, "0:", 2) == 0) {
			rc = -ENODATA; /* the hash is gone, not emptied: lost with its node's data */
			goto out;
		}
		/*
		 * The hash changed and the version did not: a writer stopped
		 * between the two, or a hand edit.  Bump it, so every daemon
		 * reloads and rewrites its copies; refused (maxmemory), this
		 * daemon reloads all the same.
		 */
		if (owed_bump(c, &k, b, &m) == 0 && (rc = read_marks(c, &k, b, &m)))
			goto out;
	}
	if ((rc = read_store(c, &k, b, &m, &hash)) || (rc = take_digest(hash, digest, sizeof(digest))))
		goto out;
	if (m.sane && m.version > 0 && hash->elements <= 1) {
		rc = -ENODATA; /* the hash is gone, not emptied (a delete leaves ':empty'): lost with its node's data */
		goto out;
	}
	for (size_t i = 1; i + 1 < hash->elements; i += 2) {
		const redisReply *name = hash->element[i], *body = hash->element[i + 1];
		struct rule *rule;

		if (name->type == REDIS_REPLY_STRING && name->len && name->str[0] == ':')
			continue; /* the store's own field (':empty'), no rule */
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
	rs->version = m.version;
	memcpy(rs->epoch, m.epoch, sizeof(rs->epoch));
	memcpy(rs->digest, digest, sizeof(rs->digest));
	rs->digest_due_ms = now + RULESTORE_DIGEST_MS;
	rs->loaded = 1;
	memset(&next, 0, sizeof(next));
	if (changed)
		*changed = 1;
	if (invalid)
		*invalid = bad;
out:
	if (hash)
		freeReplyObject(hash);
	ruleset_clear(&next);
	rbatch_free(b);
	return rc;
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

/*
 * The read before a change, one round trip: HGET of rule `name` (*old, the
 * caller's) and the marks.  -EBADMSG when the hash has another type.
 */
static int read_before(struct rconn *c, const struct keys *k, struct rbatch *b, const char *name,
		       redisReply **old, struct marks *m)
{
	const char *hget[3] = { "HGET", k->hash, name };
	size_t hgetl[3] = { 4, strlen(k->hash), strlen(name) };
	redisReply *r;
	int rc;

	rbatch_clear(b);
	if (rbatch_cmd(b, 3, hget, hgetl) || queue_marks(b, k))
		return -ENOMEM;
	if ((rc = rbatch_run(c, b)))
		return rc;
	r = rbatch_reply(b, 0);
	if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL))
		return r && r->type == REDIS_REPLY_ERROR ? reply_errno(r) : -EPROTO;
	if ((rc = take_marks(b, 1, m)))
		return rc;
	*old = rbatch_take(b, 0);
	return 0;
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
	char *text = rule_to_text(rule);
	struct rbatch *b = NULL;
	redisReply *old = NULL;
	const redisReply *found;
	struct marks m;
	long long st;
	int rc;

	if (!text)
		return -ENOMEM;
	make_keys(prefix, &k);
	if (!(b = rbatch_new())) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = read_before(c, &k, b, rule->name, &old, &m)))
		goto out;
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
	/* a version that is no number: the bump would fail and no other daemon would reload */
	if (!m.sane) {
		rc = -EBADMSG;
		goto out;
	}
	{
		/* with If-Match, the field must still hold what the precondition held on */
		const char *args[5] = { "hset", rule->name, if_match ? "equal" : "any",
					if_match ? old->str : "", text };
		size_t lens[5] = { 4, strlen(rule->name), if_match ? 5 : 3, if_match ? old->len : 0, strlen(text) };

		if ((rc = cas(c, b, k.hash, 5, args, lens, &st, &found)))
			goto out;
	}
	if (st == 0) {
		rc = if_match ? -ESTALE : -EPROTO; /* changed since the read ("any" never answers 0) */
		goto out;
	}
	if (created)
		*created = st == 1 && found->type == REDIS_REPLY_NIL;
	if (unchanged)
		*unchanged = st == 2; /* in place already: another writer's, or this call sent twice */
	if (st == 1)
		(void)announce(c, &k, b, !m.has_epoch);
out:
	if (old)
		freeReplyObject(old);
	rbatch_free(b);
	free(text);
	return rc;
}

int rulestore_mark(struct rconn *c, const char *prefix)
{
	struct keys k;
	struct rbatch *b;
	struct marks m;
	int rc;

	make_keys(prefix, &k);
	if (!(b = rbatch_new()))
		return -ENOMEM;
	/* Write only what is missing: Redis at maxmemory refuses even a SET NX that would change nothing. */
	if ((rc = read_marks(c, &k, b, &m)))
		goto out;
	if (!m.has_epoch && (rc = set_epoch(c, &k, b)))
		goto out;
	if (!m.has_version) {
		const char *argv[4] = { "SET", k.version, "1", "NX" };
		size_t lens[4] = { 3, strlen(k.version), 1, 2 };

		rc = write_one(c, b, 4, argv, lens);
	}
out:
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
	struct rbatch *b;
	redisReply *old = NULL;
	const redisReply *found;
	struct marks m;
	long long st;
	int rc;

	make_keys(prefix, &k);
	if (!(b = rbatch_new()))
		return -ENOMEM;
	if ((rc = read_before(c, &k, b, name, &old, &m)))
		goto out;
	if (old->type == REDIS_REPLY_NIL) {
		*deleted = 0; /* nothing to delete: not found, whatever the precondition */
		goto out;
	}
	if (if_match && !precondition_holds(if_match, name, old->str, old->len)) {
		rc = -ESTALE;
		goto out;
	}
	if (!m.sane) {
		rc = -EBADMSG;
		goto out;
	}
	{
		const char *args[4] = { "hdel", name, if_match ? "equal" : "any", if_match ? old->str : "" };
		size_t lens[4] = { 4, strlen(name), if_match ? 5 : 3, if_match ? old->len : 0 };

		if ((rc = cas(c, b, k.hash, 4, args, lens, &st, &found)))
			goto out;
	}
	if (st == 0) {
		rc = if_match ? -ESTALE : -EPROTO;
		goto out;
	}
	*deleted = st == 1; /* 2: gone already (another writer's delete, or this call sent twice) */
	if (st == 1)
		(void)announce(c, &k, b, 0);
out:
	if (old)
		freeReplyObject(old);
	rbatch_free(b);
	return rc;
}

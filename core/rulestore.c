#include "core/rulestore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct keys {
	char hash[128];
	char version[136];
};

static void make_keys(const char *prefix, struct keys *k)
{
	snprintf(k->hash, sizeof(k->hash), "%srules", prefix);
	snprintf(k->version, sizeof(k->version), "%srules:version", prefix);
}

static int reply_u64(const redisReply *r, uint64_t *out)
{
	char *end;

	if (r->type == REDIS_REPLY_NIL) {
		*out = 0;
		return 0;
	}
	if (r->type == REDIS_REPLY_INTEGER) {
		*out = (uint64_t)r->integer;
		return 0;
	}
	if (r->type != REDIS_REPLY_STRING)
		return -EPROTO;
	*out = strtoull(r->str, &end, 10);
	return *end ? -EPROTO : 0;
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
	rc = reply_u64(r, &v);
	freeReplyObject(r);
	if (!rc)
		*out = v;
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct rule *const *)a)->name, (*(struct rule *const *)b)->name);
}

int rulestore_refresh(struct rconn *c, const char *prefix, struct ruleset *rs, int force,
		      int *changed, size_t *invalid)
{
	struct keys k;
	const char *get[2] = { "GET", k.version }, *all[2] = { "HGETALL", k.hash };
	size_t getl[2] = { 3, 0 }, alll[2] = { 7, 0 };
	struct ruleset next = { 0 };
	struct rbatch *b = NULL;
	redisReply *r;
	size_t bad = 0;
	uint64_t v;
	int rc;

	if (changed)
		*changed = 0;
	make_keys(prefix, &k);
	getl[1] = strlen(k.version);
	alll[1] = strlen(k.hash);
	if ((rc = rulestore_version(c, prefix, &v)))
		return rc;
	if (!force && rs->loaded && v == rs->version)
		return 0;
	/* Read version and hash in one MULTI so they agree. */
	if (!(b = rbatch_new()))
		return -ENOMEM;
	{
		const char *m[1] = { "MULTI" }, *e[1] = { "EXEC" };
		size_t ml[1] = { 5 }, el[1] = { 4 };

		if (rbatch_cmd(b, 1, m, ml) || rbatch_cmd(b, 2, get, getl) ||
		    rbatch_cmd(b, 2, all, alll) || rbatch_cmd(b, 1, e, el)) {
			rc = -ENOMEM;
			goto out;
		}
	}
	if ((rc = rbatch_run(c, b)))
		goto out;
	r = rbatch_reply(b, 3);
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    reply_u64(r->element[0], &v) || r->element[1]->type != REDIS_REPLY_ARRAY) {
		rc = -EPROTO;
		goto out;
	}
	for (size_t i = 0; i + 1 < r->element[1]->elements; i += 2) {
		const redisReply *name = r->element[1]->element[i], *body = r->element[1]->element[i + 1];
		struct rule *rule;

		if (name->type != REDIS_REPLY_STRING || body->type != REDIS_REPLY_STRING ||
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

/* MULTI; HSET|HDEL; INCR version; EXEC — with a prior read to report what changed. */
int rulestore_put(struct rconn *c, const char *prefix, const struct rule *rule, int *created,
		  int *unchanged)
{
	struct keys k;
	char *text = rule_to_text(rule);
	const char *hget[3] = { "HGET", k.hash, rule->name };
	size_t hgetl[3] = { 4, 0, strlen(rule->name) };
	struct rbatch *b = NULL;
	redisReply *old = NULL;
	int rc;

	if (!text)
		return -ENOMEM;
	make_keys(prefix, &k);
	hgetl[1] = strlen(k.hash);
	if ((rc = rconn_command(c, 3, hget, hgetl, &old)))
		goto out;
	if (old->type == REDIS_REPLY_STRING && strcmp(old->str, text) == 0) {
		if (created)
			*created = 0;
		if (unchanged)
			*unchanged = 1;
		goto out;
	}
	if (!(b = rbatch_new())) {
		rc = -ENOMEM;
		goto out;
	}
	{
		const char *m[1] = { "MULTI" }, *e[1] = { "EXEC" };
		const char *hset[4] = { "HSET", k.hash, rule->name, text };
		const char *incr[2] = { "INCR", k.version };
		size_t ml[1] = { 5 }, el[1] = { 4 };
		size_t hsetl[4] = { 4, strlen(k.hash), strlen(rule->name), strlen(text) };
		size_t incrl[2] = { 4, strlen(k.version) };

		if (rbatch_cmd(b, 1, m, ml) || rbatch_cmd(b, 4, hset, hsetl) ||
		    rbatch_cmd(b, 2, incr, incrl) || rbatch_cmd(b, 1, e, el)) {
			rc = -ENOMEM;
			goto out;
		}
	}
	if ((rc = rbatch_run(c, b)))
		goto out;
	if (!rbatch_reply(b, 3) || rbatch_reply(b, 3)->type != REDIS_REPLY_ARRAY) {
		rc = -EPROTO;
		goto out;
	}
	if (created)
		*created = old->type == REDIS_REPLY_NIL;
	if (unchanged)
		*unchanged = 0;
out:
	if (old)
		freeReplyObject(old);
	rbatch_free(b);
	free(text);
	return rc;
}

int rulestore_delete(struct rconn *c, const char *prefix, const char *name, int *deleted)
{
	struct keys k;
	const char *m[1] = { "MULTI" }, *e[1] = { "EXEC" };
	const char *hexists[3] = { "HEXISTS", k.hash, name };
	const char *hdel[3] = { "HDEL", k.hash, name };
	const char *incr[2] = { "INCR", k.version };
	size_t ml[1] = { 5 }, el[1] = { 4 }, hl[3] = { 0, 0, strlen(name) }, incrl[2] = { 4, 0 };
	struct rbatch *b = NULL;
	redisReply *r = NULL;
	int rc;

	make_keys(prefix, &k);
	hl[1] = strlen(k.hash);
	incrl[1] = strlen(k.version);
	/* only an existing rule is deleted and bumps the version */
	hl[0] = 7;
	if ((rc = rconn_command(c, 3, hexists, hl, &r)))
		return rc;
	if (r->type != REDIS_REPLY_INTEGER) {
		freeReplyObject(r);
		return -EPROTO;
	}
	if (r->integer == 0) {
		freeReplyObject(r);
		*deleted = 0;
		return 0;
	}
	freeReplyObject(r);
	if (!(b = rbatch_new()))
		return -ENOMEM;
	hl[0] = 4;
	if (rbatch_cmd(b, 1, m, ml) || rbatch_cmd(b, 3, hdel, hl) ||
	    rbatch_cmd(b, 2, incr, incrl) || rbatch_cmd(b, 1, e, el)) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = rbatch_run(c, b)))
		goto out;
	r = rbatch_reply(b, 3);
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_INTEGER) {
		rc = -EPROTO;
		goto out;
	}
	*deleted = r->element[0]->integer == 1;
out:
	rbatch_free(b);
	return rc;
}

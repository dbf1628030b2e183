/* The state reads of path items for core/pathstate.c (core/pathread.h). */
#include "core/pathread.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/algorithm.h"
#include "core/pathview.h"
#include "core/reply.h"
#include "core/shard.h"

void pathread_free(struct path_item *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		freeReplyObject(v[i].reply);
	free(v);
}

/* Queue one command built in `a` (`nkeys` > 0: a call of script `id` with that many keys). */
int pathread_args(struct rbatch *b, struct cmdargs *a, int script, enum script_id id, int nkeys)
{
	const char *const *argv;
	const size_t *lens;
	int n = cmdargs_view(a, NULL, &argv, &lens);

	if (n < 0)
		return -ENOMEM;
	return script ? rbatch_eval(b, id, nkeys, n, argv, lens) : rbatch_cmd(b, n, argv, lens);
}

/* The rule an item is shown by: a foreign layout's of its algorithm if one matches, else the path's. */
const struct rule *pathread_match(const struct ruleset *rules, const struct layout *l, const char *path, size_t len)
{
	const struct rule *r = l->foreign ? ruleset_match_algorithm(rules, path, len, l->algorithm) : NULL;

	return r ? r : ruleset_match(rules, path, len);
}

/* An item of a self-described kind whose keys beside the data key can be named (in its slot): 1, else 0. */
static int kind_readable(const struct path_item *it)
{
	const struct alg_ops *alg = layout_ops(it->l);
	struct strbuf k = { 0 };
	struct cmdargs a = { 0 };
	int ok = alg->side_keys && !layout_key(it->l, it->path, it->len, 0, &k) && !alg->side_keys(k.p, k.len, &a);

	strbuf_free(&k);
	cmdargs_free(&a);
	return ok;
}

/* How many parameters an algorithm's state script takes before `now`. */
static int nparams(const struct alg_ops *alg)
{
	int n = 0;

	for (unsigned f = alg->fields; f; f &= f - 1)
		n++;
	return n;
}

/*
 * Queue what reads the item's state: its algorithm's state script with KEYS
 * state and meta, ARGV the parameters of `rule` (NULL: every one "", the
 * recorded ones) and now "" (Redis TIME); or, when `raw`, a raw size where
 * the data key counts entries (ZCARD), else its existence.
 */
int pathread_queue(struct rbatch *b, const struct path_item *it, const struct rule *rule, int raw)
{
	const struct alg_ops *alg = layout_ops(it->l);
	struct cmdargs a = { 0 };
	int rc;

	if (alg->side_keys && !raw) {
		/* a kind that describes itself: its keys, then now "" */
		struct strbuf k = { 0 };

		rc = layout_key(it->l, it->path, it->len, 0, &k) || cmdargs_add(&a, k.p, k.len) ? -ENOMEM : 0;
		rc = rc ? rc : alg->side_keys(k.p, k.len, &a);
		strbuf_free(&k);
		if (!rc)
			rc = cmdargs_add(&a, "", 0) || pathread_args(b, &a, 1, alg->state_script, (int)a.n - 1) ? -ENOMEM : 0;
		goto out;
	}
	if (raw) {
		rc = cmdargs_str(&a, alg->zset ? "ZCARD" : "EXISTS") || layout_push_key(&a, it->l, it->path, it->len, 0) ||
		     pathread_args(b, &a, 0, 0, 0) ? -ENOMEM : 0;
		goto out;
	}
	/* -EINVAL: a foreign layout given no meta prefix has no meta to pass */
	if ((rc = layout_push_key(&a, it->l, it->path, it->len, 0)) ||
	    (rc = cmdargs_end(&a, layout_key(it->l, it->path, it->len, 1, cmdargs_begin(&a)))))
		goto out;
	if (rule) {
		rc = alg->state_args(rule, &a);
	} else {
		/* every parameter "" (the recorded ones), then now "" */
		for (int i = 0, n = nparams(alg); i <= n && !rc; i++)
			rc = cmdargs_add(&a, "", 0);
	}
	rc = rc || pathread_args(b, &a, 1, alg->state_script, 2) ? -ENOMEM : 0;
out:
	cmdargs_free(&a);
	return rc;
}

/* How item `it` is read: by its matching rule when a foreign layout has one of its algorithm, else raw. */
void pathread_kind(struct path_item *it)
{
	int self = layout_ops(it->l)->self_described;
	const struct rule *by = it->l->foreign && it->match && !pathview_other_algorithm(it) && !self ? it->match : NULL;

	/* a self-described kind is read by what it records; raw when its keys cannot be named */
	it->raw = it->l->foreign && !by && !(self && kind_readable(it));
	it->read_by = by;
}

/* Pairs of keys one state script call reads (lib/state_each.lua): a registry page's paths, at most this many a call. */
#define STATE_EACH_MAX 128

/* Whether item `it` may be read in one call with the group that starts at `g`: an own layout's, same layout and shard. */
static int joins(const struct path_item *g, const struct path_item *it, size_t m)
{
	return m < STATE_EACH_MAX && !it->l->foreign && it->l == g->l && !it->raw && !g->raw &&
	       shard_of(it->path, it->len) == shard_of(g->path, g->len);
}

/* Queue one state script call for the `m` items from `v` (each with its recorded parameters: "" for all, now ""). */
static int queue_group(struct rbatch *b, const struct path_item *v, size_t m)
{
	const struct alg_ops *alg = layout_ops(v->l);
	struct cmdargs a = { 0 };
	int rc = 0;

	if (m == 1)
		return pathread_queue(b, v, v->read_by, v->raw);
	for (size_t i = 0; i < m && !rc; i++)
		if ((rc = layout_push_key(&a, v[i].l, v[i].path, v[i].len, 0)) ||
		    (rc = cmdargs_end(&a, layout_key(v[i].l, v[i].path, v[i].len, 1, cmdargs_begin(&a)))))
			break;
	for (int i = 0, n = nparams(alg); i <= n && !rc; i++)
		rc = cmdargs_add(&a, "", 0);
	rc = rc || pathread_args(b, &a, 1, alg->state_script, (int)(2 * m)) ? -ENOMEM : 0;
	cmdargs_free(&a);
	return rc;
}

/*
 * Hand the reply `r` of a group of `m` items from `v` to them: the reply
 * itself for one, its elements for several (taken out of it).  1 when it is
 * not an array of `m` (a whole call refused: BUSY, LOADING): the items are
 * then read one by one.
 */
static int spread(redisReply *r, struct path_item *v, size_t m)
{
	if (m == 1) {
		v->reply = r;
		return 0;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements != m) {
		freeReplyObject(r);
		return 1;
	}
	for (size_t i = 0; i < m; i++) {
		v[i].reply = r->element[i];
		r->element[i] = NULL;
	}
	freeReplyObject(r);
	return 0;
}

/*
 * Read the state of `n` items in one pipeline (those that hold a reply
 * already, read ahead in the caller's pipeline, are not read again; the
 * paths of one registry page in one script call), and a second for those of
 * sluice's own layouts that record no parameters but have a matching rule
 * of their algorithm; each item keeps its reply.
 */
int pathread_items(struct rconn *c, struct path_item *v, size_t n)
{
	struct rbatch *b;
	size_t *first = NULL, *size = NULL, *again = NULL, ngroups = 0, nagain = 0;
	int rc = 0;

	if (!n)
		return 0;
	if (!(b = rbatch_new()) || !(first = calloc(n, sizeof(*first))) || !(size = calloc(n, sizeof(*size))) ||
	    !(again = calloc(n, sizeof(*again)))) {
		rbatch_free(b);
		free(first);
		free(size);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].reply)
			continue;
		pathread_kind(&v[i]);
		if (ngroups && first[ngroups - 1] + size[ngroups - 1] == i &&
		    joins(&v[first[ngroups - 1]], &v[i], size[ngroups - 1])) {
			size[ngroups - 1]++;
		} else {
			first[ngroups] = i;
			size[ngroups++] = 1;
		}
	}
	for (size_t g = 0; g < ngroups && !rc; g++)
		rc = queue_group(b, &v[first[g]], size[g]);
	if (!rc && ngroups)
		rc = rbatch_run(c, b);
	for (size_t g = 0; g < ngroups && !rc; g++) {
		redisReply *r = rbatch_take(b, g);

		if (!r)
			rc = -EPROTO;
		else if (spread(r, &v[first[g]], size[g]))
			for (size_t i = first[g]; i < first[g] + size[g]; i++)
				again[nagain++] = i;
	}
	rbatch_clear(b);
	/* the items of a group whose call was refused whole, one by one */
	for (size_t k = 0; k < nagain && !rc; k++)
		rc = pathread_queue(b, &v[again[k]], v[again[k]].read_by, v[again[k]].raw);
	if (!rc && nagain)
		rc = rbatch_run(c, b);
	for (size_t k = 0; k < nagain && !rc; k++)
		if (!(v[again[k]].reply = rbatch_take(b, k)))
			rc = -EPROTO;
	rbatch_clear(b);
	nagain = 0;
	for (size_t i = 0; i < n && !rc; i++)
		if (pathview_wants_rule_read(&v[i])) {
			again[nagain++] = i;
			rc = pathread_queue(b, &v[i], v[i].match, 0);
		}
	if (!rc && nagain)
		rc = rbatch_run(c, b);
	for (size_t k = 0; k < nagain && !rc; k++) {
		struct path_item *it = &v[again[k]];
		redisReply *r = rbatch_take(b, k);

		if (!r) {
			rc = -EPROTO;
			break;
		}
		freeReplyObject(it->reply);
		it->reply = r;
		it->read_by = it->match;
	}
	rbatch_free(b);
	free(first);
	free(size);
	free(again);
	return rc;
}

/* Append the items' state objects to `out`. */
int pathread_out(struct path_item *v, size_t n, cJSON *out)
{
	for (size_t i = 0; i < n; i++) {
		cJSON *o = pathview_item(&v[i]);

		if (!o || !cJSON_AddItemToArray(out, o)) {
			cJSON_Delete(o);
			return -EPROTO;
		}
	}
	return 0;
}


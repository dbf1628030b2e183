#include "core/pathstate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonv.h"
#include "core/pathview.h"
#include "core/reply.h"

/* The listing's first pipeline covers this many shards of an own layout; each next one twice as many, up to the max. */
#define PAGE_WIDTH_FIRST 16
#define PAGE_WIDTH_MAX 256

static void items_free(struct path_item *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		freeReplyObject(v[i].reply);
	free(v);
}

/* Queue one command built in `a` (`nkeys` > 0: a call of script `id` with that many keys). */
static int queue_args(struct rbatch *b, struct cmdargs *a, int script, enum script_id id, int nkeys)
{
	const char *const *argv;
	const size_t *lens;
	int n = cmdargs_view(a, NULL, &argv, &lens);

	if (n < 0)
		return -ENOMEM;
	return script ? rbatch_eval(b, id, nkeys, n, argv, lens) : rbatch_cmd(b, n, argv, lens);
}

/* The rule an item is shown by: a foreign layout's of its algorithm if one matches, else the path's. */
static const struct rule *item_match(const struct ruleset *rules, const struct layout *l, const char *path, size_t len)
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
static int queue_read(struct rbatch *b, const struct path_item *it, const struct rule *rule, int raw)
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
			rc = cmdargs_add(&a, "", 0) || queue_args(b, &a, 1, alg->state_script, (int)a.n - 1) ? -ENOMEM : 0;
		goto out;
	}
	if (raw) {
		rc = cmdargs_str(&a, alg->zset ? "ZCARD" : "EXISTS") || layout_push_key(&a, it->l, it->path, it->len, 0) ||
		     queue_args(b, &a, 0, 0, 0) ? -ENOMEM : 0;
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
	rc = rc || queue_args(b, &a, 1, alg->state_script, 2) ? -ENOMEM : 0;
out:
	cmdargs_free(&a);
	return rc;
}

/*
 * Read the state of `n` items in one pipeline, and a second for those of
 * sluice's own layouts that record no parameters but have a matching rule
 * of their algorithm; each item keeps its reply.
 */
static int read_items(struct rconn *c, struct path_item *v, size_t n)
{
	struct rbatch *b;
	size_t *again = NULL, nagain = 0;
	int rc = 0;

	if (!n)
		return 0;
	if (!(b = rbatch_new()) || !(again = calloc(n, sizeof(*again)))) {
		rbatch_free(b);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		struct path_item *it = &v[i];
		int self = layout_ops(it->l)->self_described;
		const struct rule *by = it->l->foreign && it->match && !pathview_other_algorithm(it) && !self ? it->match : NULL;

		/* a self-described kind is read by what it records; raw when its keys cannot be named */
		it->raw = it->l->foreign && !by && !(self && kind_readable(it));
		it->read_by = by;
		rc = queue_read(b, it, by, it->raw);
	}
	if (!rc)
		rc = rbatch_run(c, b);
	for (size_t i = 0; i < n && !rc; i++)
		if (!(v[i].reply = rbatch_take(b, i)))
			rc = -EPROTO;
	rbatch_clear(b);
	for (size_t i = 0; i < n && !rc; i++)
		if (pathview_wants_rule_read(&v[i])) {
			again[nagain++] = i;
			rc = queue_read(b, &v[i], v[i].match, 0);
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
	free(again);
	return rc;
}

/* Append the items' state objects to `out`. */
static int items_out(struct path_item *v, size_t n, cJSON *out)
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

/* ---- one path ------------------------------------------------------------------- */

/*
 * Queue, for each layout, EXISTS of the path's data key and its registry
 * membership (ZSCORE of an own layout's due index of the path's shard,
 * SISMEMBER of a foreign registry, EXISTS again for a SCAN layout).
 */
static int queue_probe(struct rbatch *b, const struct layout *l, const char *path, size_t len)
{
	struct cmdargs a = { 0 };
	int rc;

	rc = cmdargs_str(&a, "EXISTS") || layout_push_key(&a, l, path, len, 0) || queue_args(b, &a, 0, 0, 0);
	cmdargs_reset(&a);
	if (!rc && l->scan)
		rc = cmdargs_str(&a, "EXISTS") || layout_push_key(&a, l, path, len, 0) || queue_args(b, &a, 0, 0, 0);
	else if (!rc)
		rc = cmdargs_str(&a, l->foreign ? "SISMEMBER" : "ZSCORE") ||
		     cmdargs_end(&a, layout_registry_key(l, path, len, cmdargs_begin(&a))) || cmdargs_add(&a, path, len) ||
		     queue_args(b, &a, 0, 0, 0);
	cmdargs_free(&a);
	return rc ? -ENOMEM : 0;
}

int pathstate_get(struct rconn *c, const struct layout *layouts, size_t nlayouts,
		  const struct ruleset *rules, const char *path, size_t len, cJSON **out)
{
	const struct rule *rule = ruleset_match(rules, path, len);
	struct rbatch *b = rbatch_new();
	struct path_item *it = NULL;
	cJSON *arr = NULL, *o = NULL;
	long long pick = -1, any = -1, ruled = -1, reg = -1;
	int rc = -ENOMEM;

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < nlayouts; i++)
		if ((rc = queue_probe(b, &layouts[i], path, len)))
			goto out;
	if (nlayouts && (rc = rbatch_run(c, b)))
		goto out;
	for (size_t i = 0; i < nlayouts; i++) {
		const redisReply *e = rbatch_reply(b, 2 * i), *m = rbatch_reply(b, 2 * i + 1);
		long long exists = 0;
		int same = layouts[i].foreign ? ruleset_match_algorithm(rules, path, len, layouts[i].algorithm) != NULL
					      : rule && rule->algorithm == layouts[i].algorithm;

		if (reply_int(e, &exists) || !m)
			goto proto;
		if (exists && same && pick < 0)
			pick = (long long)i;
		if (exists && any < 0)
			any = (long long)i;
		if (same && ruled < 0)
			ruled = (long long)i;
		if (reg < 0 && (m->type == REDIS_REPLY_STRING || (m->type == REDIS_REPLY_INTEGER && m->integer == 1)))
			reg = (long long)i;
	}
	if (pick < 0)
		pick = any >= 0 ? any : ruled >= 0 ? ruled : reg;
	rc = 0;
	if (pick < 0) {
		if (rule && !(o = pathview_unkept(rule, path, len)))
			rc = -ENOMEM;
		goto out;
	}
	rc = -ENOMEM;
	if (!(it = calloc(1, sizeof(*it))))
		goto out;
	it->l = &layouts[pick];
	it->path = path;
	it->len = len;
	it->match = item_match(rules, it->l, path, len);
	it->due = -1;
	{
		const redisReply *m = rbatch_reply(b, 2 * (size_t)pick + 1);

		if (reply_error(m)) {
			it->registered = -1;
		} else if (m->type == REDIS_REPLY_STRING) {
			it->registered = 1;
			if (reply_double(m, &it->due))
				it->due = -1; /* a score is a number: shown as no due time */
		} else {
			it->registered = m->type == REDIS_REPLY_INTEGER && m->integer == 1;
		}
	}
	if ((rc = read_items(c, it, 1)))
		goto out;
	rc = -ENOMEM;
	if (!(arr = cJSON_CreateArray()))
		goto out;
	if ((rc = items_out(it, 1, arr)))
		goto out;
	o = cJSON_DetachItemFromArray(arr, 0);
	rc = 0;
	goto out;
proto:
	rc = -EPROTO;
out:
	if (!rc)
		*out = o;
	else
		cJSON_Delete(o);
	cJSON_Delete(arr);
	items_free(it, it ? 1 : 0);
	rbatch_free(b);
	return rc;
}

/* ---- the listing ------------------------------------------------------------------ */

/* The items of pages [0, n) of `pages`, matched against the rules; *items new, *nitems set. */
static int page_items(const struct layout *layouts, const struct ruleset *rules, const struct walk_pages *pages,
		      size_t n, struct path_item **items, size_t *nitems)
{
	size_t total = 0, k = 0;
	struct path_item *v;

	for (size_t i = 0; i < n; i++)
		total += walk_page_len(&layouts[pages->page[i].layout], &pages->page[i]);
	if (!(v = calloc(total + 1, sizeof(*v))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct walk_page *pg = &pages->page[i];
		const struct layout *l = &layouts[pg->layout];

		for (size_t m = 0; m < walk_page_len(l, pg); m++) {
			struct path_item *it = &v[k];

			if (walk_member(l, pg, m, &it->path, &it->len, &it->due))
				continue;
			it->l = l;
			it->match = item_match(rules, l, it->path, it->len);
			it->registered = 1;
			k++;
		}
	}
	*items = v;
	*nitems = k;
	return 0;
}

/* Report the registry of a page that could not be walked. */
static int add_skipped(cJSON **skipped, const struct layout *l, const struct walk_page *pg)
{
	struct strbuf name = { 0 };
	cJSON *o = NULL;
	int rc = -ENOMEM;

	if ((!*skipped && !(*skipped = cJSON_CreateArray())) || walk_page_registry(l, pg, &name) ||
	    !(o = cJSON_CreateObject()) || jsonv_add_path(o, "key", name.p, name.len) ||
	    !cJSON_AddStringToObject(o, "error", pg->error) || !cJSON_AddItemToArray(*skipped, o))
		goto out;
	o = NULL;
	rc = 0;
out:
	cJSON_Delete(o);
	strbuf_free(&name);
	return rc;
}

int pathstate_page(struct rconn *c, const struct layout *layouts, size_t nlayouts, const struct ruleset *rules,
		   const char *match, size_t count, size_t max_registries, struct walk_pos *cur, cJSON *out,
		   cJSON **skipped)
{
	struct walk_pos at = *cur;
	struct walk_pages pages = { 0 };
	size_t got = 0, read = 0, width = PAGE_WIDTH_FIRST;
	int rc = 0;

	if (at.layout >= nlayouts)
		at.done = 1;
	while (!at.done && got < count && read < max_registries && !rc) {
		struct path_item *items = NULL;
		size_t take = 0, nitems = 0, want = width < max_registries - read ? width : max_registries - read;

		if ((rc = walk_read(c, layouts, nlayouts, &at, match, count - got, want, &pages)))
			break;
		/* whole pages, until `count` paths are in hand */
		for (size_t n = 0; take < pages.n && got + n < count; take++)
			n += walk_page_len(&layouts[pages.page[take].layout], &pages.page[take]);
		if ((rc = page_items(layouts, rules, &pages, take, &items, &nitems)) ||
		    (rc = read_items(c, items, nitems)) || (rc = items_out(items, nitems, out))) {
			items_free(items, nitems);
			break;
		}
		items_free(items, nitems);
		for (size_t i = 0; i < take && !rc; i++) {
			const struct walk_page *pg = &pages.page[i];

			if (pg->error)
				rc = add_skipped(skipped, &layouts[pg->layout], pg);
			walk_after(layouts, nlayouts, pg, &at);
		}
		got += nitems;
		read += take;
		if (width < PAGE_WIDTH_MAX)
			width *= 2;
	}
	walk_pages_free(&pages);
	if (!rc)
		*cur = at;
	return rc;
}

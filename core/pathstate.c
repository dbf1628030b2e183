#include "core/pathstate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonv.h"
#include "core/pathview.h"
#include "core/reply.h"
#include "core/shard.h"

/*
 * The listing's first pipeline covers this many registry pages; each next
 * one as many as the pages read so far say are needed for what is missing
 * (+1), or twice as many while they held nothing, up to the max.  A page
 * read and not taken is read again by the next call: at 100,000 paths one
 * page of ~98 holds a count of 100, and 16 at first read 15 for nothing
 * (22 us of Redis each).
 */
#define PAGE_WIDTH_FIRST 2
#define PAGE_WIDTH_MAX 256

/* The next pipeline's width after `pages` pages held `members` paths, `missing` still wanted. */
static size_t next_width(size_t width, size_t pages, size_t members, size_t missing)
{
	size_t w;

	if (!members)
		w = width * 2;
	else
		w = missing / ((members + pages - 1) / pages) + 1;
	return w < 1 ? 1 : w > PAGE_WIDTH_MAX ? PAGE_WIDTH_MAX : w;
}

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

/* How item `it` is read: by its matching rule when a foreign layout has one of its algorithm, else raw. */
static void read_kind(struct path_item *it)
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
		return queue_read(b, v, v->read_by, v->raw);
	for (size_t i = 0; i < m && !rc; i++)
		if ((rc = layout_push_key(&a, v[i].l, v[i].path, v[i].len, 0)) ||
		    (rc = cmdargs_end(&a, layout_key(v[i].l, v[i].path, v[i].len, 1, cmdargs_begin(&a)))))
			break;
	for (int i = 0, n = nparams(alg); i <= n && !rc; i++)
		rc = cmdargs_add(&a, "", 0);
	rc = rc || queue_args(b, &a, 1, alg->state_script, (int)(2 * m)) ? -ENOMEM : 0;
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
static int read_items(struct rconn *c, struct path_item *v, size_t n)
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
		read_kind(&v[i]);
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
		rc = queue_read(b, &v[again[k]], v[again[k]].read_by, v[again[k]].raw);
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
	free(first);
	free(size);
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

int pathstate_get(struct rconn *c, const struct layout *layouts, size_t nlayouts, const struct ruleset *rules,
		  const char *path, size_t len, const struct cmdargs *extra, redisReply **extra_reply, cJSON **out)
{
	const struct rule *rule = ruleset_match(rules, path, len);
	struct rbatch *b = rbatch_new();
	struct path_item *it = NULL, ahead = { .path = path, .len = len };
	cJSON *arr = NULL, *o = NULL;
	long long pick = -1, any = -1, ruled = -1, reg = -1;
	size_t at = 2 * nlayouts; /* the replies after the probes': the read ahead, then `extra`'s */
	int rc = -ENOMEM;

	if (extra_reply)
		*extra_reply = NULL;
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < nlayouts; i++) {
		if ((rc = queue_probe(b, &layouts[i], path, len)))
			goto out;
		if (rule && rule->algorithm == layouts[i].algorithm && ruled < 0)
			ruled = (long long)i;
	}
	/*
	 * The state in the first layout of the rule's algorithm is read ahead, in
	 * the probes' round trip: it is the one picked whenever it exists (or
	 * nothing does), so the common read is one round trip, not two.
	 */
	if (ruled >= 0) {
		ahead.l = &layouts[ruled];
		ahead.match = item_match(rules, ahead.l, path, len); /* as the item picked will have */
		read_kind(&ahead);
		if ((rc = queue_read(b, &ahead, ahead.read_by, ahead.raw)))
			goto out;
	}
	if (extra) {
		const char *const *argv;
		const size_t *lens;
		int argc = cmdargs_view((struct cmdargs *)extra, NULL, &argv, &lens);

		if (argc < 0 || (rc = rbatch_cmd(b, argc, argv, lens))) {
			rc = -ENOMEM;
			goto out;
		}
	}
	if ((nlayouts || extra) && (rc = rbatch_run(c, b)))
		goto out;
	if (extra && extra_reply && !(*extra_reply = rbatch_take(b, at + (ruled >= 0))))
		goto proto;
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
	if (pick == ruled) { /* read ahead */
		if (!(it->reply = rbatch_take(b, at)))
			goto proto;
		it->raw = ahead.raw;
		it->read_by = ahead.read_by;
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
	if (rc && extra_reply) {
		freeReplyObject(*extra_reply);
		*extra_reply = NULL;
	}
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
	size_t got = 0, read = 0, seen = 0, width = PAGE_WIDTH_FIRST;
	int rc = 0;

	if (at.layout >= nlayouts)
		at.done = 1;
	while (!at.done && got < count && read < max_registries && !rc) {
		struct path_item *items = NULL;
		size_t take = 0, nitems = 0, want = width < max_registries - read ? width : max_registries - read;

		if ((rc = walk_read(c, layouts, nlayouts, &at, match, count - got, want, &pages)))
			break;
		/*
		 * Whole pages, until `count` paths are in hand, or about: with at
		 * least half of `count` in hand, a page that would overshoot it by
		 * more than half is left to the next call (at 100,000 paths a
		 * shard's page holds ~98: count 100 reads one page's state, not
		 * two).
		 */
		for (size_t n = 0; take < pages.n && got + n < count; take++) {
			size_t len = walk_page_len(&layouts[pages.page[take].layout], &pages.page[take]);

			if (got + n >= (count + 1) / 2 && got + n + len > count + count / 2)
				break;
			n += len;
		}
		if (!take)
			break; /* about `count` already */
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
		for (size_t i = 0; i < take; i++)
			seen += walk_page_len(&layouts[pages.page[i].layout], &pages.page[i]);
		if (take < pages.n && got < count)
			break; /* a page waits: about `count` already */
		width = next_width(width, read, seen, count > got ? count - got : 0);
	}
	walk_pages_free(&pages);
	if (!rc)
		*cur = at;
	return rc;
}

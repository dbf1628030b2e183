#include "core/pathstate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonv.h"
#include "core/pathread.h"
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

	rc = cmdargs_str(&a, "EXISTS") || layout_push_key(&a, l, path, len, 0) || pathread_args(b, &a, 0, 0, 0);
	cmdargs_reset(&a);
	if (!rc && l->scan)
		rc = cmdargs_str(&a, "EXISTS") || layout_push_key(&a, l, path, len, 0) || pathread_args(b, &a, 0, 0, 0);
	else if (!rc)
		rc = cmdargs_str(&a, l->foreign ? "SISMEMBER" : "ZSCORE") ||
		     cmdargs_end(&a, layout_registry_key(l, path, len, cmdargs_begin(&a))) || cmdargs_add(&a, path, len) ||
		     pathread_args(b, &a, 0, 0, 0);
	cmdargs_free(&a);
	return rc ? -ENOMEM : 0;
}

int pathstate_get(struct rconn *c, const struct layout *layouts, size_t nlayouts, const struct ruleset *rules,
		  const char *path, size_t len, struct cmdargs *extra, redisReply **extra_reply, cJSON **out)
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
		ahead.match = pathread_match(rules, ahead.l, path, len); /* as the item picked will have */
		pathread_kind(&ahead);
		if ((rc = pathread_queue(b, &ahead, ahead.read_by, ahead.raw)))
			goto out;
	}
	if (extra) {
		const char *const *argv;
		const size_t *lens;
		int argc = cmdargs_view(extra, NULL, &argv, &lens);

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
	it->match = pathread_match(rules, it->l, path, len);
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
	if ((rc = pathread_items(c, it, 1)))
		goto out;
	rc = -ENOMEM;
	if (!(arr = cJSON_CreateArray()))
		goto out;
	if ((rc = pathread_out(it, 1, arr)))
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
	pathread_free(it, it ? 1 : 0);
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
			it->match = pathread_match(rules, l, it->path, it->len);
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
		    (rc = pathread_items(c, items, nitems)) || (rc = pathread_out(items, nitems, out))) {
			pathread_free(items, nitems);
			break;
		}
		pathread_free(items, nitems);
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

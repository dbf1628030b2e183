#include "core/reset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonv.h"
#include "core/reply.h"
#include "core/reset_call.h"
#include "core/walk.h"

/* Own layouts' shards whose due indexes one pipeline of a bulk reset reads. */
#define RESET_WALK_WIDTH 64

int reset_path(struct rconn *c, const struct layout *layouts, size_t nlayouts,
	       const char *path, size_t len, cJSON **out)
{
	struct reset_call *calls = calloc(RESET_CALLS(nlayouts), sizeof(*calls));
	struct reset_sum sum = { 0 };
	struct rbatch *b = rbatch_new();
	cJSON *o = NULL, *arr = NULL;
	size_t ncalls = 0;
	int rc = -ENOMEM;

	if (!b || !calls)
		goto out;
	if ((rc = reset_queue_path(b, calls, &ncalls, layouts, nlayouts, path, len, 0, 0)) || (rc = rbatch_run(c, b)))
		goto out;
	rc = -ENOMEM;
	if (!(o = cJSON_CreateObject()) || jsonv_add_path(o, "path", path, len) || !(arr = cJSON_CreateArray()))
		goto out;
	for (size_t i = 0; i < ncalls; i++) {
		int found;

		if ((rc = reset_call_sum(&calls[i], rbatch_reply(b, i), &sum, arr, &found)))
			goto out;
	}
	rc = -ENOMEM;
	if (jsonv_add_int(o, "keys_removed", sum.keys) || jsonv_add_int(o, "entries_removed", sum.entries) ||
	    jsonv_add_int(o, "registries_removed", sum.registries) || !cJSON_AddItemToObject(o, "keys", arr))
		goto out;
	arr = NULL;
	if (reset_sum_give_skipped(&sum, o))
		goto out;
	*out = o;
	o = NULL;
	rc = 0;
out:
	rbatch_free(b);
	cJSON_Delete(arr);
	cJSON_Delete(o);
	reset_sum_free(&sum);
	for (size_t i = 0; i < ncalls; i++)
		reset_call_free(&calls[i]);
	free(calls);
	return rc;
}

/* ---- bulk reset --------------------------------------------------------------- */

/*
 * Queue the checks of whether `path`, found walking layout `li`, is in the
 * registry of an earlier layout (a walk there met it first and counted it):
 * ZSCORE of an own layout's due index, SISMEMBER of a foreign registry,
 * EXISTS of a SCAN layout's key.  One command per earlier layout.
 */
static int queue_earlier(struct rbatch *b, const struct layout *layouts, size_t li, const char *path, size_t len)
{
	for (size_t j = 0; j < li; j++) {
		const struct layout *l = &layouts[j];
		struct cmdargs a = { 0 };
		const char *const *argv;
		const size_t *lens;
		int n = 0, rc;

		if (l->scan)
			rc = cmdargs_str(&a, "EXISTS") || layout_push_key(&a, l, path, len, 0);
		else
			rc = cmdargs_str(&a, l->foreign ? "SISMEMBER" : "ZSCORE") ||
			     cmdargs_end(&a, layout_registry_key(l, path, len, cmdargs_begin(&a))) ||
			     cmdargs_add(&a, path, len);
		rc = rc || (n = cmdargs_view(&a, NULL, &argv, &lens)) < 0 || rbatch_cmd(b, n, argv, lens);
		cmdargs_free(&a);
		if (rc)
			return -ENOMEM;
	}
	return 0;
}

/* Did the reply of a queue_earlier command find the path?  An error reply (another type) holds nothing. */
static int held(const redisReply *r)
{
	return r && ((r->type == REDIS_REPLY_INTEGER && r->integer == 1) || r->type == REDIS_REPLY_STRING);
}

/* The paths of one walk page that are to be reset (not met in an earlier layout), and the calls for them. */
struct reset_page {
	const char **path;
	size_t *len;
	size_t n, cap;
	struct reset_call *calls;
	size_t ncalls, callcap;
};

static void page_free(struct reset_page *p)
{
	for (size_t i = 0; i < p->ncalls; i++)
		reset_call_free(&p->calls[i]);
	free(p->path);
	free(p->len);
	free(p->calls);
	memset(p, 0, sizeof(*p));
}

/* Gather the members of walk page `pg` into `p` (borrowed paths). */
static int page_gather(struct reset_page *p, const struct layout *l, const struct walk_page *pg)
{
	size_t n = walk_page_len(l, pg);

	if (n > p->cap) {
		const char **np = realloc(p->path, n * sizeof(*np));
		size_t *nl = np ? realloc(p->len, n * sizeof(*nl)) : NULL;

		if (np)
			p->path = np;
		if (!np || !nl)
			return -ENOMEM;
		p->len = nl;
		p->cap = n;
	}
	p->n = 0;
	for (size_t i = 0; i < n; i++) {
		double due;

		if (!walk_member(l, pg, i, &p->path[p->n], &p->len[p->n], &due))
			p->n++;
	}
	return 0;
}

/* Keep only the paths of `p` that no earlier layout's registry holds (found walking layout `li`). */
static int page_drop_earlier(struct rconn *c, struct rbatch *b, struct reset_page *p, const struct layout *layouts,
			     size_t li)
{
	size_t kept = 0;
	int rc;

	if (li == 0 || p->n == 0)
		return 0;
	rbatch_clear(b);
	for (size_t i = 0; i < p->n; i++)
		if ((rc = queue_earlier(b, layouts, li, p->path[i], p->len[i])))
			return rc;
	if ((rc = rbatch_run(c, b)))
		return rc;
	for (size_t i = 0; i < p->n; i++) {
		int seen = 0;

		for (size_t j = 0; j < li; j++)
			seen = seen || held(rbatch_reply(b, i * li + j));
		if (!seen) {
			p->path[kept] = p->path[i];
			p->len[kept++] = p->len[i];
		}
	}
	p->n = kept;
	rbatch_clear(b);
	return 0;
}

/* Reset the paths of `p`, at most `batch` paths' calls per pipeline; fold into `sum`. */
static int page_reset(struct rconn *c, struct rbatch *b, struct reset_page *p, const struct layout *layouts,
		      size_t nlayouts, int dry, size_t batch, struct reset_sum *sum)
{
	size_t want = batch * RESET_CALLS(nlayouts);
	int rc = 0;

	if (want > p->callcap) {
		struct reset_call *nc = realloc(p->calls, want * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		p->calls = nc;
		p->callcap = want;
	}
	for (size_t from = 0; from < p->n && !rc; from += batch) {
		size_t to = from + batch < p->n ? from + batch : p->n;
		int *found = calloc(to - from, sizeof(*found));

		if (!found)
			return -ENOMEM;
		rbatch_clear(b);
		for (size_t i = from; i < to && !rc; i++)
			rc = reset_queue_path(b, p->calls, &p->ncalls, layouts, nlayouts, p->path[i], p->len[i], dry, i - from);
		if (!rc)
			rc = rbatch_run(c, b);
		for (size_t k = 0; k < p->ncalls && !rc; k++) {
			int f = 0;

			rc = reset_call_sum(&p->calls[k], rbatch_reply(b, k), sum, NULL, &f);
			found[p->calls[k].path] |= f;
		}
		for (size_t i = 0; i < to - from && !rc; i++)
			sum->paths += found[i];
		for (size_t k = 0; k < p->ncalls; k++)
			reset_call_free(&p->calls[k]);
		p->ncalls = 0;
		free(found);
	}
	rbatch_clear(b);
	return rc;
}

/* A page that could not be walked (a registry of another type): reported, the walk goes on. */
static int page_skipped(const struct layout *l, const struct walk_page *pg, struct reset_sum *sum)
{
	struct strbuf name = { 0 };
	int rc = walk_page_registry(l, pg, &name) ? -ENOMEM : reset_sum_skipped(sum, name.p, name.len, pg->error);

	strbuf_free(&name);
	return rc;
}

/* Add what `sum` holds beyond `told` (what was added before) to `prog` (may be NULL). */
static void progress(struct reset_progress *prog, const struct reset_sum *sum, struct reset_sum *told,
		     long long walked)
{
	if (!prog)
		return;
	atomic_fetch_add(&prog->walked, walked);
	atomic_fetch_add(&prog->paths, sum->paths - told->paths);
	atomic_fetch_add(&prog->keys, sum->keys - told->keys);
	atomic_fetch_add(&prog->entries, sum->entries - told->entries);
	told->paths = sum->paths;
	told->keys = sum->keys;
	told->entries = sum->entries;
}

static int cancelled(const struct reset_progress *prog)
{
	return prog && prog->cancel && atomic_load(prog->cancel);
}

int reset_match(struct rconn *c, const struct layout *layouts, size_t nlayouts,
		const char *match, int dry_run, size_t batch, struct reset_progress *prog, cJSON **out)
{
	struct reset_sum sum = { 0 }, told = { 0 };
	struct walk_pages pages = { 0 };
	struct reset_page p = { 0 };
	struct walk_pos pos;
	struct rbatch *b = rbatch_new();
	cJSON *o = NULL;
	int rc = -ENOMEM;

	if (!b)
		goto out;
	if (batch < 1)
		batch = 1;
	walk_start(&pos);
	pos.done = nlayouts == 0;
	rc = 0;
	while (!pos.done && !rc) {
		if (cancelled(prog)) {
			rc = -ECANCELED;
			break;
		}
		if ((rc = walk_read(c, layouts, nlayouts, &pos, match, batch, RESET_WALK_WIDTH, &pages)))
			break;
		for (size_t i = 0; i < pages.n && !rc && !cancelled(prog); i++) {
			const struct walk_page *pg = &pages.page[i];
			const struct layout *l = &layouts[pg->layout];
			long long met = pg->error ? 0 : (long long)walk_page_len(l, pg);

			if (pg->error)
				rc = page_skipped(l, pg, &sum);
			/* A real reset of a path takes it out of every layout at once, so a
			 * later layout's walk cannot meet it again; only a dry run must
			 * drop the paths an earlier layout's registry holds (counted there). */
			else if (!(rc = page_gather(&p, l, pg)) &&
				 !(rc = dry_run ? page_drop_earlier(c, b, &p, layouts, pg->layout) : 0))
				rc = page_reset(c, b, &p, layouts, nlayouts, dry_run, batch, &sum);
			walk_after(layouts, nlayouts, pg, &pos);
			progress(prog, &sum, &told, met);
		}
	}
	if (rc)
		goto out;
	rc = -ENOMEM;
	if (!(o = cJSON_CreateObject()) || !cJSON_AddStringToObject(o, "match", match) ||
	    !cJSON_AddBoolToObject(o, "dry_run", dry_run) || jsonv_add_int(o, "paths", sum.paths) ||
	    jsonv_add_int(o, "keys", sum.keys) || jsonv_add_int(o, "entries", sum.entries))
		goto out;
	if (reset_sum_give_skipped(&sum, o))
		goto out;
	*out = o;
	o = NULL;
	rc = 0;
out:
	cJSON_Delete(o);
	reset_sum_free(&sum);
	page_free(&p);
	walk_pages_free(&pages);
	rbatch_free(b);
	return rc;
}

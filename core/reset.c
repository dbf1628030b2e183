#include "core/reset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonv.h"
#include "core/reply.h"
#include "core/walk.h"

/* Registries a reset reports as skipped (of another type), at most: the report stays small. */
#define RESET_SKIPPED_MAX 64
/* Own layouts' shards whose due indexes one pipeline of a bulk reset reads. */
#define RESET_WALK_WIDTH 64

/*
 * The arguments of one reset.lua call: the path's keys of sluice's own
 * layouts (all in its shard's slot), or of one foreign layout; and which of
 * its KEYS are meta hashes.
 */
struct reset_call {
	struct cmdargs keys, args;
	unsigned char *meta;     /* meta[i]: KEYS[i] is a meta hash (bookkeeping, not entries) */
	size_t path;             /* the path's index in the caller's list (a bulk reset's page) */
};

static void call_free(struct reset_call *rc)
{
	cmdargs_free(&rc->keys);
	cmdargs_free(&rc->args);
	free(rc->meta);
	memset(rc, 0, sizeof(*rc));
}

/* Push the data key of `path` in `l`, and its meta where the layout keeps one. */
static int push_keys(struct reset_call *rc, const struct layout *l, const char *path, size_t len)
{
	int meta = !l->foreign || (algorithm_get(l->algorithm)->meta && l->meta_prefix);

	if (layout_push_key(&rc->keys, l, path, len, 0))
		return -ENOMEM;
	if (meta) {
		if (layout_push_key(&rc->keys, l, path, len, 1))
			return -ENOMEM;
		rc->meta[rc->keys.n - 1] = 1;
	}
	return 0;
}

/*
 * One call for `path`: `foreign` NULL for the keys of every own layout
 * (KEYS: their due indexes of the path's shard, then state and meta of
 * each), else for that foreign layout's (its registry, data key, meta).
 * ARGV: #registries, path, "dry" or "".
 */
static int call_build(struct reset_call *rc, const struct layout *layouts, size_t nlayouts,
		      const struct layout *foreign, const char *path, size_t len, int dry)
{
	size_t nreg = 0;

	memset(rc, 0, sizeof(*rc));
	if (!(rc->meta = calloc(3 * nlayouts + 3, 1))) /* registries, then data key and meta of each */
		return -ENOMEM;
	if (foreign) {
		if (cmdargs_str(&rc->keys, foreign->registry) || push_keys(rc, foreign, path, len))
			goto oom;
		nreg = 1;
	} else {
		for (size_t i = 0; i < nlayouts; i++)
			if (!layouts[i].foreign) {
				struct strbuf *b = cmdargs_begin(&rc->keys);

				if (cmdargs_end(&rc->keys, layout_registry_key(&layouts[i], path, len, b)))
					goto oom;
				nreg++;
			}
		for (size_t i = 0; i < nlayouts; i++)
			if (!layouts[i].foreign && push_keys(rc, &layouts[i], path, len))
				goto oom;
	}
	if (cmdargs_int(&rc->args, (int64_t)nreg) || cmdargs_add(&rc->args, path, len) ||
	    cmdargs_str(&rc->args, dry ? "dry" : ""))
		goto oom;
	return 0;
oom:
	call_free(rc);
	return -ENOMEM;
}

static int call_queue(struct rbatch *b, struct reset_call *rc)
{
	const char *const *argv;
	const size_t *lens;
	int n = cmdargs_view(&rc->keys, &rc->args, &argv, &lens);

	return n < 0 ? -ENOMEM : rbatch_eval(b, SCRIPT_RESET, (int)rc->keys.n, n, argv, lens);
}

static int is_meta_key(const struct reset_call *rc, const char *key, size_t len)
{
	for (size_t j = 0; j < rc->keys.n; j++)
		if (rc->meta[j] && rc->keys.len[j] == len && memcmp(rc->keys.buf.p + rc->keys.off[j], key, len) == 0)
			return 1;
	return 0;
}

/* Totals of what went (or would go), and the registries left alone. */
struct reset_sum {
	long long paths, keys, entries, registries;
	cJSON *skipped;          /* owned: [{"key", "error"}], at most RESET_SKIPPED_MAX */
	char *seen[RESET_SKIPPED_MAX]; /* owned: the names in `skipped`, as bytes */
	size_t seen_len[RESET_SKIPPED_MAX], nseen;
};

static void sum_free(struct reset_sum *sum)
{
	cJSON_Delete(sum->skipped);
	for (size_t i = 0; i < sum->nseen; i++)
		free(sum->seen[i]);
	memset(sum, 0, sizeof(*sum));
}

/* Report registry `key` (`len` bytes) as skipped, once, with `error`. */
static int add_skipped(struct reset_sum *sum, const char *key, size_t len, const char *error)
{
	cJSON *o;

	for (size_t i = 0; i < sum->nseen; i++)
		if (sum->seen_len[i] == len && memcmp(sum->seen[i], key, len) == 0)
			return 0;
	if (sum->nseen == RESET_SKIPPED_MAX)
		return 0;
	if (!sum->skipped && !(sum->skipped = cJSON_CreateArray()))
		return -ENOMEM;
	if (!(sum->seen[sum->nseen] = malloc(len + 1)))
		return -ENOMEM;
	memcpy(sum->seen[sum->nseen], key, len);
	sum->seen_len[sum->nseen++] = len;
	if (!(o = cJSON_CreateObject()) || jsonv_add_path(o, "key", key, len) ||
	    !cJSON_AddStringToObject(o, "error", error) || !cJSON_AddItemToArray(sum->skipped, o)) {
		cJSON_Delete(o);
		return -ENOMEM;
	}
	return 0;
}

/* One {key, entries} of reset.lua's reply as JSON: a meta hash holds bookkeeping, not admitted entries. */
static int add_key(cJSON *keys_out, const char *key, size_t len, int is_meta, long long entries)
{
	cJSON *k = cJSON_CreateObject();

	if (!k || jsonv_add_path(k, "key", key, len) ||
	    (is_meta ? !cJSON_AddBoolToObject(k, "meta", 1) : jsonv_add_int(k, "entries", entries)) ||
	    !cJSON_AddItemToArray(keys_out, k)) {
		cJSON_Delete(k);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Fold reset.lua's reply {registries removed, {registry, type, ...},
 * {key, entries}...} into `sum` (not its path count); `keys_out` (may be
 * NULL) gets one object per key.  *found: 1 when the call found anything of
 * the path (a key or a registry entry).
 */
static int call_sum(const struct reset_call *rc, const redisReply *r, struct reset_sum *sum, cJSON *keys_out,
		    int *found)
{
	const redisReply *const *e;
	size_t n;
	long long regs;
	int err;

	if ((err = reply_array(r, 2, &e, &n)) || (err = reply_int(e[0], &regs)))
		return err == -EBADMSG ? reply_errno(r) : err;
	if (e[1]->type != REDIS_REPLY_ARRAY || e[1]->elements % 2 || !reply_is_strings(e[1]))
		return -EPROTO;
	for (size_t i = 0; i + 1 < e[1]->elements; i += 2) {
		char why[96];

		snprintf(why, sizeof(why), "a %s, not a sorted set or set: left alone", e[1]->element[i + 1]->str);
		if ((err = add_skipped(sum, e[1]->element[i]->str, e[1]->element[i]->len, why)))
			return err;
	}
	for (size_t i = 2; i < n; i++) {
		const char *key;
		size_t klen;
		long long entries;
		int is_meta;

		if (e[i]->type != REDIS_REPLY_ARRAY || e[i]->elements != 2 ||
		    reply_str(e[i]->element[0], &key, &klen) || reply_int(e[i]->element[1], &entries))
			return -EPROTO;
		is_meta = is_meta_key(rc, key, klen);
		sum->keys++;
		if (!is_meta)
			sum->entries += entries;
		if (keys_out && add_key(keys_out, key, klen, is_meta, entries))
			return -ENOMEM;
	}
	sum->registries += regs;
	*found = n > 2 || regs > 0;
	return 0;
}

/* Queue every call that resets `path` (own layouts, then each foreign one) into `calls` (room for 1 + nlayouts). */
static int queue_path(struct rbatch *b, struct reset_call *calls, size_t *ncalls, const struct layout *layouts,
		      size_t nlayouts, const char *path, size_t len, int dry, size_t idx)
{
	int own = 0, rc;

	for (size_t i = 0; i < nlayouts; i++)
		own = own || !layouts[i].foreign;
	for (size_t i = own ? 0 : 1; i <= nlayouts; i++) {
		const struct layout *f = i ? &layouts[i - 1] : NULL;

		if (f && !f->foreign)
			continue;
		if ((rc = call_build(&calls[*ncalls], layouts, nlayouts, f, path, len, dry)))
			return rc;
		calls[*ncalls].path = idx;
		if ((rc = call_queue(b, &calls[(*ncalls)++])))
			return rc;
	}
	return 0;
}

int reset_path(struct rconn *c, const struct layout *layouts, size_t nlayouts,
	       const char *path, size_t len, cJSON **out)
{
	struct reset_call *calls = calloc(nlayouts + 1, sizeof(*calls));
	struct reset_sum sum = { 0 };
	struct rbatch *b = rbatch_new();
	cJSON *o = NULL, *arr = NULL;
	size_t ncalls = 0;
	int rc = -ENOMEM;

	if (!b || !calls)
		goto out;
	if ((rc = queue_path(b, calls, &ncalls, layouts, nlayouts, path, len, 0, 0)) || (rc = rbatch_run(c, b)))
		goto out;
	rc = -ENOMEM;
	if (!(o = cJSON_CreateObject()) || jsonv_add_path(o, "path", path, len) || !(arr = cJSON_CreateArray()))
		goto out;
	for (size_t i = 0; i < ncalls; i++) {
		int found;

		if ((rc = call_sum(&calls[i], rbatch_reply(b, i), &sum, arr, &found)))
			goto out;
	}
	rc = -ENOMEM;
	if (jsonv_add_int(o, "keys_removed", sum.keys) || jsonv_add_int(o, "entries_removed", sum.entries) ||
	    jsonv_add_int(o, "registries_removed", sum.registries) || !cJSON_AddItemToObject(o, "keys", arr))
		goto out;
	arr = NULL;
	if (sum.skipped) {
		if (!cJSON_AddItemToObject(o, "skipped_registries", sum.skipped))
			goto out;
		sum.skipped = NULL;
	}
	*out = o;
	o = NULL;
	rc = 0;
out:
	rbatch_free(b);
	cJSON_Delete(arr);
	cJSON_Delete(o);
	sum_free(&sum);
	for (size_t i = 0; i < ncalls; i++)
		call_free(&calls[i]);
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
		call_free(&p->calls[i]);
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
	size_t want = batch * (nlayouts + 1);
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
			rc = queue_path(b, p->calls, &p->ncalls, layouts, nlayouts, p->path[i], p->len[i], dry, i - from);
		if (!rc)
			rc = rbatch_run(c, b);
		for (size_t k = 0; k < p->ncalls && !rc; k++) {
			int f = 0;

			rc = call_sum(&p->calls[k], rbatch_reply(b, k), sum, NULL, &f);
			found[p->calls[k].path] |= f;
		}
		for (size_t i = 0; i < to - from && !rc; i++)
			sum->paths += found[i];
		for (size_t k = 0; k < p->ncalls; k++)
			call_free(&p->calls[k]);
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
	int rc = walk_page_registry(l, pg, &name) ? -ENOMEM : add_skipped(sum, name.p, name.len, pg->error);

	strbuf_free(&name);
	return rc;
}

int reset_match(struct rconn *c, const struct layout *layouts, size_t nlayouts,
		const char *match, int dry_run, size_t batch, cJSON **out)
{
	struct reset_sum sum = { 0 };
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
		if ((rc = walk_read(c, layouts, nlayouts, &pos, match, batch, RESET_WALK_WIDTH, &pages)))
			break;
		for (size_t i = 0; i < pages.n && !rc; i++) {
			const struct walk_page *pg = &pages.page[i];
			const struct layout *l = &layouts[pg->layout];

			if (pg->error)
				rc = page_skipped(l, pg, &sum);
			else if (!(rc = page_gather(&p, l, pg)) &&
				 !(rc = page_drop_earlier(c, b, &p, layouts, pg->layout)))
				rc = page_reset(c, b, &p, layouts, nlayouts, dry_run, batch, &sum);
			walk_after(layouts, nlayouts, pg, &pos);
		}
	}
	if (rc)
		goto out;
	rc = -ENOMEM;
	if (!(o = cJSON_CreateObject()) || !cJSON_AddStringToObject(o, "match", match) ||
	    !cJSON_AddBoolToObject(o, "dry_run", dry_run) || jsonv_add_int(o, "paths", sum.paths) ||
	    jsonv_add_int(o, "keys", sum.keys) || jsonv_add_int(o, "entries", sum.entries))
		goto out;
	if (sum.skipped) {
		if (!cJSON_AddItemToObject(o, "skipped_registries", sum.skipped))
			goto out;
		sum.skipped = NULL;
	}
	*out = o;
	o = NULL;
	rc = 0;
out:
	cJSON_Delete(o);
	sum_free(&sum);
	page_free(&p);
	walk_pages_free(&pages);
	rbatch_free(b);
	return rc;
}

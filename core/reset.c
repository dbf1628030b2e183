#include "core/reset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonv.h"
#include "core/reply.h"
#include "core/walk.h"

/* The arguments of one reset.lua call, and which of its KEYS are meta hashes. */
struct reset_call {
	struct cmdargs keys, args;
	unsigned char *meta;     /* meta[i]: KEYS[i] is a meta hash (bookkeeping, not entries) */
};

static void call_free(struct reset_call *rc)
{
	cmdargs_free(&rc->keys);
	cmdargs_free(&rc->args);
	free(rc->meta);
	memset(rc, 0, sizeof(*rc));
}

/*
 * KEYS: every registry, then every data (and meta) key of `path`;
 * ARGV: #registries, path, "dry" or "", walked registry (1-based) or "".
 */
static int call_build(struct reset_call *rc, const struct layout *layouts, size_t nlayouts,
		      const char *path, size_t len, int dry, size_t walked)
{
	memset(rc, 0, sizeof(*rc));
	if (!(rc->meta = calloc(3 * nlayouts + 1, 1)))
		return -ENOMEM;
	for (size_t i = 0; i < nlayouts; i++)
		if (cmdargs_str(&rc->keys, layouts[i].registry))
			goto oom;
	for (size_t i = 0; i < nlayouts; i++) {
		if (layout_push_key(&rc->keys, &layouts[i], path, len, 0))
			goto oom;
		if (algorithm_get(layouts[i].algorithm)->meta) {
			if (layout_push_key(&rc->keys, &layouts[i], path, len, 1))
				goto oom;
			rc->meta[rc->keys.n - 1] = 1;
		}
	}
	if (cmdargs_int(&rc->args, (int64_t)nlayouts) || cmdargs_add(&rc->args, path, len) ||
	    cmdargs_str(&rc->args, dry ? "dry" : "") ||
	    (walked ? cmdargs_int(&rc->args, (int64_t)walked) : cmdargs_str(&rc->args, "")))
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

/* Totals of what went (or would go). */
struct reset_sum {
	long long paths, keys, entries, registries;
};

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
 * Fold reset.lua's reply {registries removed (-1: counted in an earlier
 * registry's walk), {key, entries}...} into `sum`; `keys_out` (may be NULL)
 * gets one object per key.
 */
static int call_sum(const struct reset_call *rc, const redisReply *r, struct reset_sum *sum, cJSON *keys_out)
{
	const redisReply *const *e;
	size_t n;
	long long regs;
	int err;

	if ((err = reply_array(r, 1, &e, &n)) || (err = reply_int(e[0], &regs)))
		return err;
	if (regs < 0)
		return 0;
	for (size_t i = 1; i < n; i++) {
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
	if (n > 1 || regs > 0)
		sum->paths++;
	return 0;
}

int reset_path(struct rconn *c, const struct layout *layouts, size_t nlayouts,
	       const char *path, size_t len, cJSON **out)
{
	struct reset_call call;
	struct reset_sum sum = { 0 };
	struct rbatch *b = rbatch_new();
	cJSON *o = NULL, *arr = NULL;
	int rc;

	if (!b)
		return -ENOMEM;
	if ((rc = call_build(&call, layouts, nlayouts, path, len, 0, 0))) {
		rbatch_free(b);
		return rc;
	}
	if ((rc = call_queue(b, &call)) || (rc = rbatch_run(c, b)))
		goto out;
	rc = -ENOMEM;
	if (!(o = cJSON_CreateObject()) || jsonv_add_path(o, "path", path, len) || !(arr = cJSON_CreateArray()))
		goto out;
	if ((rc = call_sum(&call, rbatch_reply(b, 0), &sum, arr)))
		goto out;
	rc = -ENOMEM;
	if (jsonv_add_int(o, "keys_removed", sum.keys) || jsonv_add_int(o, "entries_removed", sum.entries) ||
	    jsonv_add_int(o, "registries_removed", sum.registries) || !cJSON_AddItemToObject(o, "keys", arr))
		goto out;
	arr = NULL;
	*out = o;
	o = NULL;
	rc = 0;
out:
	rbatch_free(b);
	cJSON_Delete(arr);
	cJSON_Delete(o);
	call_free(&call);
	return rc;
}

/* Send the queued reset calls and fold their replies; the calls are freed. */
static int flush_calls(struct rconn *c, struct rbatch *b, struct reset_call *calls, size_t *ncalls,
		       struct reset_sum *sum)
{
	int rc = rbatch_run(c, b);

	for (size_t k = 0; k < *ncalls && !rc; k++)
		rc = call_sum(&calls[k], rbatch_reply(b, k), sum, NULL);
	for (size_t k = 0; k < *ncalls; k++)
		call_free(&calls[k]);
	*ncalls = 0;
	rbatch_clear(b);
	return rc;
}

/* Reset the paths of one page of layout `li`, at most `batch` script calls per pipeline. */
static int reset_page(struct rconn *c, struct rbatch *b, struct reset_call *calls, size_t batch,
		      const struct layout *layouts, size_t nlayouts, size_t li, const redisReply *members,
		      int dry_run, struct reset_sum *sum)
{
	size_t ncalls = 0;
	int rc = 0;

	rbatch_clear(b);
	for (size_t i = 0; i < members->elements && !rc; i++) {
		const char *path;
		size_t plen;

		if (walk_path(&layouts[li], members->element[i], &path, &plen))
			continue;
		if ((rc = call_build(&calls[ncalls], layouts, nlayouts, path, plen, dry_run, li + 1)))
			break;
		if ((rc = call_queue(b, &calls[ncalls++])))
			break;
		if (ncalls == batch)
			rc = flush_calls(c, b, calls, &ncalls, sum);
	}
	/* what is queued: the last members may have been skipped */
	if (!rc && ncalls)
		rc = flush_calls(c, b, calls, &ncalls, sum);
	for (size_t k = 0; k < ncalls; k++)
		call_free(&calls[k]);
	rbatch_clear(b);
	return rc;
}

int reset_match(struct rconn *c, const struct layout *layouts, size_t nlayouts,
		const char *match, int dry_run, size_t batch, cJSON **out)
{
	struct reset_sum sum = { 0 };
	struct rbatch *b = rbatch_new(), *page = rbatch_new();
	struct reset_call *calls = calloc(batch, sizeof(*calls));
	cJSON *o = NULL;
	int rc = -ENOMEM;

	if (!b || !page || !calls)
		goto out;
	rc = 0;
	for (size_t li = 0; li < nlayouts && !rc; li++) {
		char cursor[REPLY_CURSOR_MAX] = "0";

		do {
			const redisReply *members;

			rbatch_clear(page);
			if ((rc = walk_queue(page, &layouts[li], cursor, match, batch)) || (rc = rbatch_run(c, page)) ||
			    (rc = walk_page(rbatch_reply(page, 0), cursor, &members)))
				break;
			rc = reset_page(c, b, calls, batch, layouts, nlayouts, li, members, dry_run, &sum);
		} while (!rc && !walk_at_end(cursor));
	}
	if (rc)
		goto out;
	rc = -ENOMEM;
	if (!(o = cJSON_CreateObject()) || !cJSON_AddStringToObject(o, "match", match) ||
	    !cJSON_AddBoolToObject(o, "dry_run", dry_run) || jsonv_add_int(o, "paths", sum.paths) ||
	    jsonv_add_int(o, "keys", sum.keys) || jsonv_add_int(o, "entries", sum.entries))
		goto out;
	*out = o;
	o = NULL;
	rc = 0;
out:
	cJSON_Delete(o);
	rbatch_free(b);
	rbatch_free(page);
	free(calls);
	return rc;
}

#include "core/reset_call.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonv.h"
#include "core/reply.h"
#include "core/shard.h"

void reset_call_free(struct reset_call *rc)
{
	cmdargs_free(&rc->keys);
	cmdargs_free(&rc->args);
	free(rc->meta);
	memset(rc, 0, sizeof(*rc));
}

/* Push the data key of `path` in `l`, and its meta where the layout keeps one. */
static int push_keys(struct reset_call *rc, const struct layout *l, const char *path, size_t len)
{
	const struct alg_ops *alg = layout_ops(l);
	int meta = !l->foreign || (alg->meta && l->meta_prefix);

	if (alg->side_keys) {
		/* Redisson's RRateLimiter: its value and permits go, its hash (the
		 * settings, which its acquire cannot do without) stays: a fresh trySetRate */
		struct strbuf k = { 0 };
		int r = layout_key(l, path, len, 0, &k) ? -ENOMEM : alg->side_keys(k.p, k.len, &rc->keys);

		strbuf_free(&k);
		return r == -EINVAL ? 0 : r;
	}
	if (layout_push_key(&rc->keys, l, path, len, 0))
		return -ENOMEM;
	if (meta) {
		if (layout_push_key(&rc->keys, l, path, len, 1))
			return -ENOMEM;
		rc->meta[rc->keys.n - 1] = 1;
	}
	return 0;
}

/* What a foreign layout's call takes: its registry and keys, or (they are in two slots) one of them */
enum part { PART_ALL, PART_REGISTRY, PART_KEYS };

/*
 * One call for `path`: `foreign` NULL for the keys of every own layout
 * (KEYS: their due indexes of the path's shard, then state and meta of
 * each), else for that foreign layout's `part` (its registry, data key, meta).
 * ARGV: #registries, path, "dry" or "".
 */
static int reset_call_build(struct reset_call *rc, const struct layout *layouts, size_t nlayouts,
		      const struct layout *foreign, enum part part, const char *path, size_t len, int dry)
{
	size_t nreg = 0;

	memset(rc, 0, sizeof(*rc));
	if (!(rc->meta = calloc(3 * nlayouts + 3, 1))) /* registries, then data key and meta of each */
		return -ENOMEM;
	if (foreign) {
		if (part != PART_KEYS && cmdargs_str(&rc->keys, foreign->registry))
			goto oom;
		if (part != PART_REGISTRY && push_keys(rc, foreign, path, len))
			goto oom;
		nreg = part != PART_KEYS;
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
	reset_call_free(rc);
	return -ENOMEM;
}

static int reset_call_queue(struct rbatch *b, struct reset_call *rc)
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


void reset_sum_free(struct reset_sum *sum)
{
	cJSON_Delete(sum->skipped);
	for (size_t i = 0; i < sum->nseen; i++)
		free(sum->seen[i]);
	memset(sum, 0, sizeof(*sum));
}

/* Report registry `key` (`len` bytes) as skipped, once, with `error`. */
int reset_sum_give_skipped(struct reset_sum *sum, cJSON *o)
{
	if (!sum->skipped)
		return 0;
	if (!cJSON_AddItemToObject(o, "skipped_registries", sum->skipped))
		return -ENOMEM;
	sum->skipped = NULL;
	return 0;
}

int reset_sum_skipped(struct reset_sum *sum, const char *key, size_t len, const char *error)
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
int reset_call_sum(const struct reset_call *rc, const redisReply *r, struct reset_sum *sum, cJSON *keys_out,
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
		if ((err = reset_sum_skipped(sum, e[1]->element[i]->str, e[1]->element[i]->len, why)))
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

/*
 * The calls that reset `path` in layout `f` (NULL: sluice's own), as a mask
 * of 1 << part.  One call of everything, but for a foreign layout whose keys
 * are in two slots, so that a Redis Cluster can run each call (on a single
 * Redis as well: the same code, and what each removes is the same):
 *  - a registry set in another slot than the path's data key (the usual
 *    case: "LeakyBucket::pathSet" and "LeakyBucket:<path>"): two calls, one
 *    on each slot;
 *  - a SCAN layout, whose registry is a name nothing writes (core/layout.c),
 *    in a slot of its own: the data key's call alone.
 */
static unsigned parts_of(const struct layout *f, const char *path, size_t len)
{
	struct strbuf k = { 0 };
	int two;

	if (!f || !f->registry)
		return 1u << PART_ALL;
	if (f->scan)
		return 1u << PART_KEYS;
	if (layout_key(f, path, len, 0, &k))
		return 1u << PART_ALL;
	two = shard_keyslot(f->registry, strlen(f->registry)) != shard_keyslot(k.p, k.len);
	strbuf_free(&k);
	return two ? 1u << PART_REGISTRY | 1u << PART_KEYS : 1u << PART_ALL;
}

/* Queue every call that resets `path` (own layouts, then each foreign one) into `calls` (room for 1 + nlayouts). */
int reset_queue_path(struct rbatch *b, struct reset_call *calls, size_t *ncalls, const struct layout *layouts,
		      size_t nlayouts, const char *path, size_t len, int dry, size_t idx)
{
	int own = 0, rc;

	for (size_t i = 0; i < nlayouts; i++)
		own = own || !layouts[i].foreign;
	for (size_t i = own ? 0 : 1; i <= nlayouts; i++) {
		const struct layout *f = i ? &layouts[i - 1] : NULL;
		unsigned parts;

		if (f && !f->foreign)
			continue;
		parts = parts_of(f, path, len);
		for (enum part part = PART_ALL; part <= PART_KEYS; part++) {
			if (!(parts & 1u << part))
				continue;
			if ((rc = reset_call_build(&calls[*ncalls], layouts, nlayouts, f, part, path, len, dry)))
				return rc;
			calls[*ncalls].path = idx;
			if ((rc = reset_call_queue(b, &calls[(*ncalls)++])))
				return rc;
		}
	}
	return 0;
}

#include "core/pathstate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonv.h"

/* Scratch for building one command's argv from keys and numbers. */
struct args {
	struct strbuf buf;
	size_t off[8], len[8];
	int n;
};

static int args_add(struct args *a, const void *s, size_t n)
{
	if (a->n == 8)
		return -E2BIG;
	a->off[a->n] = a->buf.len;
	a->len[a->n] = n;
	a->n++;
	return strbuf_add(&a->buf, s, n);
}

static int args_key(struct args *a, const struct layout *l, const char *path, size_t len, int meta)
{
	size_t start = a->buf.len;
	int rc;

	if (a->n == 8)
		return -E2BIG;
	if ((rc = layout_key(l, path, len, meta, &a->buf)))
		return rc;
	a->off[a->n] = start;
	a->len[a->n] = a->buf.len - start;
	a->n++;
	return 0;
}

static int args_num(struct args *a, const char *fmt, double v)
{
	char num[40];
	int n = snprintf(num, sizeof(num), fmt, v);

	return args_add(a, num, (size_t)n);
}

static int args_int(struct args *a, int64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%lld", (long long)v);

	return args_add(a, num, (size_t)n);
}

static void args_view(struct args *a, const char **argv)
{
	for (int i = 0; i < a->n; i++)
		argv[i] = a->buf.p + a->off[i];
}

/* Algorithms whose data key is a sorted set of entries (so ZCARD is a count). */
static int is_zset(enum algorithm a)
{
	return a == ALG_LEAKY_BUCKET || a == ALG_SLIDING_LOG;
}

/* Algorithms limited by a capacity (buckets) rather than a limit (windows). */
static int has_capacity(enum algorithm a)
{
	return a == ALG_LEAKY_BUCKET || a == ALG_TOKEN_BUCKET;
}

/* Queue what reads path's state in layout `l`: the state script under a rule, else ZCARD or EXISTS. */
static int queue_state(struct rbatch *b, const struct layout *l, const struct rule *rule,
		       const char *path, size_t len)
{
	struct args a = { 0 };
	const char *argv[8];
	int rc, nkeys;
	enum script_id id;

	if (rule && rule->algorithm == ALG_LEAKY_BUCKET) {
		id = SCRIPT_LEAKY_BUCKET_STATE;
		nkeys = 2;
		rc = args_key(&a, l, path, len, 0) || args_key(&a, l, path, len, 1) ||
		     args_int(&a, rule->capacity) || args_num(&a, "%.17g", rule->rate) ||
		     args_add(&a, "", 0);
	} else if (rule && rule->algorithm == ALG_SLIDING_LOG) {
		id = SCRIPT_SLIDING_LOG_STATE;
		nkeys = 1;
		rc = args_key(&a, l, path, len, 0) || args_int(&a, rule->limit) ||
		     args_int(&a, rule->window_ms) || args_add(&a, "", 0);
	} else if (rule && rule->algorithm == ALG_FIXED_WINDOW) {
		id = SCRIPT_FIXED_WINDOW_STATE;
		nkeys = 1;
		rc = args_key(&a, l, path, len, 0) || args_int(&a, rule->limit) ||
		     args_int(&a, rule->window_ms) || args_add(&a, "", 0);
	} else if (rule && rule->algorithm == ALG_SLIDING_COUNTER) {
		id = SCRIPT_SLIDING_COUNTER_STATE;
		nkeys = 1;
		rc = args_key(&a, l, path, len, 0) || args_int(&a, rule->limit) ||
		     args_int(&a, rule->window_ms) || args_int(&a, rule->sub_windows) || args_add(&a, "", 0);
	} else if (rule && rule->algorithm == ALG_TOKEN_BUCKET) {
		id = SCRIPT_TOKEN_BUCKET_STATE;
		nkeys = 1;
		rc = args_key(&a, l, path, len, 0) || args_int(&a, rule->capacity) ||
		     args_num(&a, "%.17g", rule->rate) || args_add(&a, "", 0);
	} else {
		/* no rule of the layout's algorithm: a raw size where it means entries, else existence */
		rc = (is_zset(l->algorithm) ? args_add(&a, "ZCARD", 5) : args_add(&a, "EXISTS", 6)) ||
		     args_key(&a, l, path, len, 0);
		if (!rc) {
			args_view(&a, argv);
			rc = rbatch_cmd(b, a.n, argv, a.len);
		}
		strbuf_free(&a.buf);
		return rc ? -ENOMEM : 0;
	}
	if (!rc) {
		args_view(&a, argv);
		rc = rbatch_eval(b, id, nkeys, a.n, argv, a.len);
	}
	strbuf_free(&a.buf);
	return rc ? -ENOMEM : 0;
}

static int int_at(const redisReply *r, size_t i, long long *out)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements ||
	    r->element[i]->type != REDIS_REPLY_INTEGER)
		return -EPROTO;
	*out = r->element[i]->integer;
	return 0;
}

/* Build the state object from the reply of queue_state(). */
static cJSON *state_json(const struct layout *l, const struct rule *rule, const char *path,
			 size_t len, const redisReply *r, int registered)
{
	cJSON *o = cJSON_CreateObject();
	long long count = 0, remaining = 0, reset = 0, ttl = -2;
	int bad = !o;
	int under = rule && rule->algorithm == l->algorithm;

	if (bad)
		return NULL;
	if (r && r->type == REDIS_REPLY_ERROR) {
		/* e.g. WRONGTYPE: a key of another limiter under this layout's name;
		 * report it and let the rest of the page through */
		bad = jsonv_add_path(o, "path", path, len) ||
		      !cJSON_AddStringToObject(o, "algorithm", algorithm_name(l->algorithm)) ||
		      !cJSON_AddStringToObject(o, "layout", l->name) ||
		      !(rule ? cJSON_AddStringToObject(o, "rule", rule->name) : cJSON_AddNullToObject(o, "rule")) ||
		      !cJSON_AddNullToObject(o, "count") || !cJSON_AddNullToObject(o, "remaining") ||
		      !cJSON_AddNullToObject(o, "reset_ms") || !cJSON_AddStringToObject(o, "error", r->str);
		if (bad)
			goto fail;
		return o;
	}
	/* state replies: {count, remaining, reset_ms, [last_ms,] ttl_ms}; buckets carry last_ms */
	if (under && (int_at(r, 0, &count) || int_at(r, 1, &remaining) || int_at(r, 2, &reset) ||
		      int_at(r, has_capacity(rule->algorithm) ? 4 : 3, &ttl)))
		goto fail;
	if (!under) {
		if (!r || r->type != REDIS_REPLY_INTEGER)
			goto fail;
		count = r->integer;
	}
	/* a layout without a registry (SCAN discovery): the path is known while its key exists */
	if (l->scan && registered >= 0)
		registered = under ? ttl != -2 : count > 0;
	bad = jsonv_add_path(o, "path", path, len) ||
	      !cJSON_AddStringToObject(o, "algorithm", algorithm_name(l->algorithm)) ||
	      !cJSON_AddStringToObject(o, "layout", l->name) ||
	      !(rule ? cJSON_AddStringToObject(o, "rule", rule->name) : cJSON_AddNullToObject(o, "rule")) ||
	      (registered >= 0 && !cJSON_AddBoolToObject(o, "registered", registered)) ||
	      (under || is_zset(l->algorithm) ? jsonv_add_int(o, "count", count)
					      : !cJSON_AddNullToObject(o, "count"));
	if (bad)
		goto fail;
	if (!under) {
		/* no rule of this algorithm governs the path: the limits are unknown */
		bad = !cJSON_AddNullToObject(o, has_capacity(l->algorithm) ? "capacity" : "limit") ||
		      !cJSON_AddNullToObject(o, "remaining") || !cJSON_AddNullToObject(o, "reset_ms");
		if (rule)
			bad = bad || !cJSON_AddStringToObject(o, "note", "the path's rule is of another algorithm");
	} else {
		if (has_capacity(rule->algorithm))
			bad = jsonv_add_int(o, "capacity", rule->capacity) || jsonv_add_number(o, "rate", rule->rate);
		else
			bad = jsonv_add_int(o, "limit", rule->limit) || jsonv_add_int(o, "window_ms", rule->window_ms) ||
			      (rule->algorithm == ALG_SLIDING_COUNTER &&
			       jsonv_add_int(o, "sub_windows", rule->sub_windows));
		bad = bad || jsonv_add_int(o, "remaining", remaining) || jsonv_add_int(o, "reset_ms", reset) ||
		      jsonv_add_int(o, "ttl_ms", ttl);
	}
	if (bad)
		goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

int pathstate_list(struct rconn *c, const struct layout *l, const struct ruleset *rules,
		   const char *const *paths, const size_t *lens, size_t n, cJSON *out)
{
	struct rbatch *b = rbatch_new();
	int rc = 0;

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < n && !rc; i++) {
		const struct rule *rule = ruleset_match(rules, paths[i], lens[i]);

		rc = queue_state(b, l, rule && rule->algorithm == l->algorithm ? rule : NULL,
				 paths[i], lens[i]);
	}
	if (!rc && n)
		rc = rbatch_run(c, b);
	for (size_t i = 0; i < n && !rc; i++) {
		const struct rule *rule = ruleset_match(rules, paths[i], lens[i]);
		cJSON *o = state_json(l, rule, paths[i], lens[i], rbatch_reply(b, i), 1);

		if (!o || !cJSON_AddItemToArray(out, o)) {
			cJSON_Delete(o);
			rc = -EPROTO;
		}
	}
	rbatch_free(b);
	return rc;
}

static int queue_sismember(struct rbatch *b, const struct layout *l, const char *path, size_t len)
{
	const char *argv[3] = { "SISMEMBER", l->registry, path };
	size_t lens[3] = { 9, strlen(l->registry), len };

	return rbatch_cmd(b, 3, argv, lens);
}

int pathstate_get(struct rconn *c, const struct layout *layouts, size_t nlayouts,
		  const struct ruleset *rules, const char *path, size_t len, cJSON **out)
{
	const struct rule *rule = ruleset_match(rules, path, len);
	const struct layout *l = rule ? layouts_find(layouts, nlayouts, rule->algorithm) : NULL;
	struct rbatch *b = rbatch_new();
	cJSON *o = NULL;
	int rc = 0;

	if (!b)
		return -ENOMEM;
	if (l) {
		/* several layouts may keep this algorithm (sluice's own, foreign ones):
		 * the first whose key exists for the path, else sluice's own */
		size_t cand[32], nc = 0;

		for (size_t i = 0; i < nlayouts && nc < 32; i++)
			if (layouts[i].algorithm == rule->algorithm)
				cand[nc++] = i;
		for (size_t i = 0; i < nc && !rc; i++) {
			struct strbuf k = { 0 };
			const char *argv[2] = { "EXISTS", NULL };
			size_t lens[2] = { 6, 0 };

			rc = layout_key(&layouts[cand[i]], path, len, 0, &k);
			if (!rc) {
				argv[1] = k.p;
				lens[1] = k.len;
				rc = rbatch_cmd(b, 2, argv, lens);
			}
			strbuf_free(&k);
		}
		if (!rc && nc > 1 && !(rc = rbatch_run(c, b)))
			for (size_t i = 0; i < nc; i++) {
				const redisReply *e = rbatch_reply(b, i);

				if (e && e->type == REDIS_REPLY_INTEGER && e->integer == 1) {
					l = &layouts[cand[i]];
					break;
				}
			}
		rbatch_clear(b);
		if (rc)
			goto out;
	}
	if (l) {
		/* the rule decides: [SISMEMBER, state script] */
		if ((rc = queue_sismember(b, l, path, len)) || (rc = queue_state(b, l, rule, path, len)) ||
		    (rc = rbatch_run(c, b)))
			goto out;
		if (!rbatch_reply(b, 0)) {
			rc = -EPROTO;
			goto out;
		}
		o = state_json(l, rule, path, len, rbatch_reply(b, 1),
			       rbatch_reply(b, 0)->type == REDIS_REPLY_INTEGER && rbatch_reply(b, 0)->integer == 1);
		if (!o)
			rc = -EPROTO;
		goto out;
	}
	if (rule) {
		/* a rule of an algorithm this build keeps no state for */
		o = cJSON_CreateObject();
		if (!o || jsonv_add_path(o, "path", path, len) ||
		    !cJSON_AddStringToObject(o, "algorithm", algorithm_name(rule->algorithm)) ||
		    !cJSON_AddStringToObject(o, "rule", rule->name) ||
		    !cJSON_AddNullToObject(o, "count") ||
		    (rule->algorithm == ALG_TOKEN_BUCKET ? jsonv_add_int(o, "capacity", rule->capacity)
							  : jsonv_add_int(o, "limit", rule->limit)) ||
		    !cJSON_AddNullToObject(o, "remaining") || !cJSON_AddNullToObject(o, "reset_ms") ||
		    !cJSON_AddStringToObject(o, "note", "no maintained layout for this algorithm")) {
			cJSON_Delete(o);
			o = NULL;
			rc = -ENOMEM;
		}
		goto out;
	}
	/* no rule: the first layout that holds the path, counted raw */
	for (size_t i = 0; i < nlayouts && !rc; i++)
		if ((rc = queue_sismember(b, &layouts[i], path, len)) ||
		    (rc = queue_state(b, &layouts[i], NULL, path, len)))
			goto out;
	if ((rc = rbatch_run(c, b)))
		goto out;
	for (size_t i = 0; i < nlayouts; i++) {
		const redisReply *m = rbatch_reply(b, 2 * i), *n = rbatch_reply(b, 2 * i + 1);

		int member;

		/* a registry of another type (error reply) holds no member */
		if (!m || (m->type != REDIS_REPLY_INTEGER && m->type != REDIS_REPLY_ERROR) || !n ||
		    (n->type != REDIS_REPLY_INTEGER && n->type != REDIS_REPLY_ERROR)) {
			rc = -EPROTO;
			goto out;
		}
		member = m->type == REDIS_REPLY_INTEGER && m->integer == 1;
		if (member || n->type == REDIS_REPLY_ERROR || n->integer) {
			o = state_json(&layouts[i], NULL, path, len, n, member);
			rc = o ? 0 : -EPROTO;
			break;
		}
	}
out:
	rbatch_free(b);
	if (!rc)
		*out = o;
	else
		cJSON_Delete(o);
	return rc;
}

/* The arguments of one reset.lua call, and which of its KEYS are meta hashes. */
struct reset_call {
	struct strbuf buf;
	size_t *off, *lens;
	const char **argv;
	char *meta;              /* meta[i]: argv[i] is a meta hash (bookkeeping, not entries) */
	size_t n;                /* argc */
	size_t nkeys;
};

static void reset_call_free(struct reset_call *rc)
{
	strbuf_free(&rc->buf);
	free(rc->off);
	free(rc->lens);
	free(rc->argv);
	free(rc->meta);
	memset(rc, 0, sizeof(*rc));
}

/*
 * KEYS: every registry, then every data (and meta) key of `path`;
 * ARGV: #registries, path, "dry" or "", walked registry (1-based) or "".
 */
static int reset_call_build(struct reset_call *rc, const struct layout *layouts, size_t nlayouts,
			    const char *path, size_t len, int dry, size_t walked)
{
	size_t cap = 3 * nlayouts + 4;
	char num[24];

	memset(rc, 0, sizeof(*rc));
	rc->off = calloc(cap, sizeof(size_t));
	rc->lens = calloc(cap, sizeof(size_t));
	rc->argv = calloc(cap, sizeof(char *));
	rc->meta = calloc(cap, 1);
	if (!rc->off || !rc->lens || !rc->argv || !rc->meta)
		goto oom;
#define PUSH(expr)                                         \
	do {                                               \
		rc->off[rc->n] = rc->buf.len;              \
		if (expr)                                  \
			goto oom;                          \
		rc->lens[rc->n] = rc->buf.len - rc->off[rc->n]; \
		rc->n++;                                   \
	} while (0)
	for (size_t i = 0; i < nlayouts; i++)
		PUSH(strbuf_add(&rc->buf, layouts[i].registry, strlen(layouts[i].registry)));
	for (size_t i = 0; i < nlayouts; i++) {
		PUSH(layout_key(&layouts[i], path, len, 0, &rc->buf));
		if (layouts[i].algorithm == ALG_LEAKY_BUCKET) {
			PUSH(layout_key(&layouts[i], path, len, 1, &rc->buf));
			rc->meta[rc->n - 1] = 1;
		}
	}
	rc->nkeys = rc->n;
	snprintf(num, sizeof(num), "%zu", nlayouts);
	PUSH(strbuf_add(&rc->buf, num, strlen(num)));
	PUSH(strbuf_add(&rc->buf, path, len));
	PUSH(strbuf_add(&rc->buf, dry ? "dry" : "", dry ? 3 : 0));
	if (walked)
		snprintf(num, sizeof(num), "%zu", walked);
	else
		num[0] = '\0';
	PUSH(strbuf_add(&rc->buf, num, strlen(num)));
#undef PUSH
	for (size_t i = 0; i < rc->n; i++)
		rc->argv[i] = rc->buf.p + rc->off[i];
	return 0;
oom:
	reset_call_free(rc);
	return -ENOMEM;
}

/* Totals of what went (or would go); `keys_out` (may be NULL) gets one object per key. */
struct reset_sum {
	long long paths, keys, entries, registries;
};

static int reset_call_sum(const struct reset_call *rc, const redisReply *r, struct reset_sum *sum,
			  cJSON *keys_out)
{
	if (!r)
		return -EPROTO;
	if (r->type == REDIS_REPLY_ERROR)
		return -EBADMSG;
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->type != REDIS_REPLY_INTEGER)
		return -EPROTO;
	if (r->element[0]->integer < 0)
		return 0; /* counted in an earlier registry's walk */
	for (size_t i = 1; i < r->elements; i++) {
		const redisReply *e = r->element[i];
		int is_meta = 0;
		cJSON *k;

		if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
		    e->element[0]->type != REDIS_REPLY_STRING || e->element[1]->type != REDIS_REPLY_INTEGER)
			return -EPROTO;
		for (size_t j = 0; j < rc->nkeys; j++)
			if (rc->meta[j] && rc->lens[j] == e->element[0]->len &&
			    memcmp(rc->argv[j], e->element[0]->str, rc->lens[j]) == 0)
				is_meta = 1;
		sum->keys++;
		if (!is_meta)
			sum->entries += e->element[1]->integer;
		if (!keys_out)
			continue;
		k = cJSON_CreateObject();
		/* a meta hash holds bookkeeping (last, carry, seq), not admitted entries */
		if (!k || jsonv_add_path(k, "key", e->element[0]->str, e->element[0]->len) ||
		    (is_meta ? !cJSON_AddBoolToObject(k, "meta", 1)
			     : jsonv_add_int(k, "entries", e->element[1]->integer)) ||
		    !cJSON_AddItemToArray(keys_out, k)) {
			cJSON_Delete(k);
			return -ENOMEM;
		}
	}
	sum->registries += r->element[0]->integer;
	if (r->elements > 1 || r->element[0]->integer > 0)
		sum->paths++;
	return 0;
}

int pathstate_reset(struct rconn *c, const struct layout *layouts, size_t nlayouts,
		    const char *path, size_t len, cJSON **out)
{
	struct reset_call call;
	struct reset_sum sum = { 0 };
	redisReply *r = NULL;
	cJSON *o = NULL, *arr = NULL;
	int rc;

	if ((rc = reset_call_build(&call, layouts, nlayouts, path, len, 0, 0)))
		return rc;
	if ((rc = rconn_eval(c, SCRIPT_RESET, (int)call.nkeys, (int)call.n, call.argv, call.lens, &r)))
		goto out;
	rc = -ENOMEM;
	if (!(o = cJSON_CreateObject()) || jsonv_add_path(o, "path", path, len) ||
	    !(arr = cJSON_CreateArray()))
		goto out;
	if ((rc = reset_call_sum(&call, r, &sum, arr)))
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
	if (r)
		freeReplyObject(r);
	cJSON_Delete(arr);
	cJSON_Delete(o);
	reset_call_free(&call);
	return rc;
}

int pathstate_reset_match(struct rconn *c, const struct layout *layouts, size_t nlayouts,
			  const char *match, int dry_run, size_t batch, cJSON **out)
{
	struct reset_sum sum = { 0 };
	struct rbatch *b = rbatch_new();
	struct reset_call *calls = calloc(batch, sizeof(*calls));
	char count[24];
	cJSON *o = NULL;
	int rc = -ENOMEM;

	if (!b || !calls)
		goto out;
	snprintf(count, sizeof(count), "%zu", batch);
	rc = 0;
	for (size_t li = 0; li < nlayouts && !rc; li++) {
		char cursor[24] = "0";

		do {
			const struct layout *l = &layouts[li];
			struct strbuf keyglob = { 0 };
			redisReply *page = NULL, *members;
			size_t ncalls = 0;

			if (l->scan) {
				/* no registry: SCAN the keys, the path glob inside the key template */
				const char *star = strchr(l->scan_match, '*');
				const char *argv[9] = { "SCAN", cursor, "MATCH", NULL, "TYPE", l->scan_type, "COUNT", count };
				size_t lens[8];

				if (strbuf_add(&keyglob, l->scan_match, (size_t)(star - l->scan_match)) ||
				    strbuf_add(&keyglob, match, strlen(match)) ||
				    strbuf_add(&keyglob, star + 1, strlen(star + 1))) {
					rc = -ENOMEM;
					break;
				}
				argv[3] = keyglob.p;
				for (int k = 0; k < 8; k++)
					lens[k] = k == 3 ? keyglob.len : strlen(argv[k]);
				rc = rconn_command(c, 8, argv, lens, &page);
			} else {
				const char *argv[7] = { "SSCAN", l->registry, cursor, "MATCH", match, "COUNT", count };
				size_t lens[7];

				for (int k = 0; k < 7; k++)
					lens[k] = strlen(argv[k]);
				rc = rconn_command(c, 7, argv, lens, &page);
			}
			strbuf_free(&keyglob);
			if (rc)
				break;
			if (page->type != REDIS_REPLY_ARRAY || page->elements != 2 ||
			    page->element[0]->type != REDIS_REPLY_STRING || page->element[0]->len >= sizeof(cursor) ||
			    page->element[1]->type != REDIS_REPLY_ARRAY) {
				rc = page->type == REDIS_REPLY_ERROR ? -EBADMSG : -EPROTO;
				freeReplyObject(page);
				break;
			}
			memcpy(cursor, page->element[0]->str, page->element[0]->len + 1);
			members = page->element[1];
			rbatch_clear(b);
			/* one pipelined script call per path of the page, at most `batch` at a time */
			for (size_t i = 0; i <= members->elements && !rc; i++) {
				/* i == elements: flush what is queued (the last members may have been skipped) */
				if (i < members->elements) {
					const redisReply *m = members->element[i];
					const char *path = m->str;
					size_t plen = m->len;

					if (m->type != REDIS_REPLY_STRING ||
					    (l->scan && layout_path_of(l, m->str, m->len, &path, &plen)) || plen == 0)
						continue;
					rc = reset_call_build(&calls[ncalls], layouts, nlayouts, path, plen,
							      dry_run, li + 1);
					if (!rc) {
						rc = rbatch_eval(b, SCRIPT_RESET, (int)calls[ncalls].nkeys,
								 (int)calls[ncalls].n, calls[ncalls].argv, calls[ncalls].lens);
						ncalls++;
					}
				}
				if (!rc && ncalls && (ncalls == batch || i == members->elements)) {
					rc = rbatch_run(c, b);
					for (size_t k = 0; k < ncalls && !rc; k++)
						rc = reset_call_sum(&calls[k], rbatch_reply(b, k), &sum, NULL);
					for (size_t k = 0; k < ncalls; k++)
						reset_call_free(&calls[k]);
					ncalls = 0;
					rbatch_clear(b);
				}
			}
			for (size_t k = 0; k < ncalls; k++)
				reset_call_free(&calls[k]);
			freeReplyObject(page);
		} while (!rc && strcmp(cursor, "0") != 0);
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
	free(calls);
	return rc;
}

#include "admin/pathstate.h"

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

/* Queue what reads path's state in layout `l`: the state script under a rule, else ZCARD. */
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
	} else {
		rc = args_add(&a, "ZCARD", 5) || args_key(&a, l, path, len, 0);
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
	if (under && (int_at(r, 0, &count) || int_at(r, 1, &remaining) || int_at(r, 2, &reset) ||
		      int_at(r, rule->algorithm == ALG_LEAKY_BUCKET ? 4 : 3, &ttl)))
		goto fail;
	if (!under) {
		if (!r || r->type != REDIS_REPLY_INTEGER)
			goto fail;
		count = r->integer;
	}
	bad = jsonv_add_path(o, "path", path, len) ||
	      !cJSON_AddStringToObject(o, "algorithm", algorithm_name(l->algorithm)) ||
	      !cJSON_AddStringToObject(o, "layout", l->name) ||
	      !(rule ? cJSON_AddStringToObject(o, "rule", rule->name) : cJSON_AddNullToObject(o, "rule")) ||
	      (registered >= 0 && !cJSON_AddBoolToObject(o, "registered", registered)) ||
	      jsonv_add_int(o, "count", count);
	if (bad)
		goto fail;
	if (!under) {
		/* no rule of this algorithm governs the path: the limits are unknown */
		const char *lim = l->algorithm == ALG_LEAKY_BUCKET ? "capacity" : "limit";

		bad = !cJSON_AddNullToObject(o, lim) || !cJSON_AddNullToObject(o, "remaining") ||
		      !cJSON_AddNullToObject(o, "reset_ms");
		if (rule)
			bad = bad || !cJSON_AddStringToObject(o, "note", "the path's rule is of another algorithm");
	} else if (rule->algorithm == ALG_LEAKY_BUCKET) {
		bad = jsonv_add_int(o, "capacity", rule->capacity) ||
		      jsonv_add_number(o, "rate", rule->rate) ||
		      jsonv_add_int(o, "remaining", remaining) || jsonv_add_int(o, "reset_ms", reset) ||
		      jsonv_add_int(o, "ttl_ms", ttl);
	} else {
		bad = jsonv_add_int(o, "limit", rule->limit) ||
		      jsonv_add_int(o, "window_ms", rule->window_ms) ||
		      jsonv_add_int(o, "remaining", remaining) || jsonv_add_int(o, "reset_ms", reset) ||
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
		cJSON *o = state_json(l, rule, paths[i], lens[i], rbatch_reply(b, i), -1);

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

int pathstate_reset(struct rconn *c, const struct layout *layouts, size_t nlayouts,
		    const char *path, size_t len, cJSON **out)
{
	struct strbuf buf = { 0 };
	size_t *off = calloc(3 * nlayouts + 2, sizeof(size_t)), *lens = calloc(3 * nlayouts + 2, sizeof(size_t));
	const char **argv = calloc(3 * nlayouts + 2, sizeof(char *));
	char *meta = calloc(3 * nlayouts + 2, 1); /* meta[i]: KEYS[i] is a meta hash, not entries */
	char nreg[16];
	size_t n = 0;
	long long entries = 0, keys = 0;
	redisReply *r = NULL;
	cJSON *o = NULL, *arr;
	int rc = -ENOMEM;

	if (!off || !lens || !argv || !meta)
		goto out;
	/* KEYS: every registry, then every data (and meta) key; ARGV: #registries, path */
#define PUSH(expr)                                 \
	do {                                       \
		off[n] = buf.len;                  \
		if (expr)                          \
			goto out;                  \
		lens[n] = buf.len - off[n];        \
		n++;                               \
	} while (0)
	for (size_t i = 0; i < nlayouts; i++)
		PUSH(strbuf_add(&buf, layouts[i].registry, strlen(layouts[i].registry)));
	for (size_t i = 0; i < nlayouts; i++) {
		PUSH(layout_key(&layouts[i], path, len, 0, &buf));
		if (layouts[i].algorithm == ALG_LEAKY_BUCKET) {
			PUSH(layout_key(&layouts[i], path, len, 1, &buf));
			meta[n - 1] = 1;
		}
	}
	snprintf(nreg, sizeof(nreg), "%zu", nlayouts);
	PUSH(strbuf_add(&buf, nreg, strlen(nreg)));
	PUSH(strbuf_add(&buf, path, len));
#undef PUSH
	for (size_t i = 0; i < n; i++)
		argv[i] = buf.p + off[i];
	if ((rc = rconn_eval(c, SCRIPT_RESET, (int)n - 2, (int)n, argv, lens, &r)))
		goto out;
	rc = r->type == REDIS_REPLY_ERROR ? -EBADMSG : -EPROTO;
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->type != REDIS_REPLY_INTEGER)
		goto out;
	if (!(o = cJSON_CreateObject()) || jsonv_add_path(o, "path", path, len) ||
	    !(arr = cJSON_CreateArray()))
		goto out;
	for (size_t i = 1; i < r->elements; i++) {
		const redisReply *e = r->element[i];
		int is_meta;
		cJSON *k;

		if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
		    e->element[0]->type != REDIS_REPLY_STRING || e->element[1]->type != REDIS_REPLY_INTEGER) {
			cJSON_Delete(arr);
			goto out;
		}
		is_meta = 0;
		for (size_t j = 0; j < n; j++)
			if (meta[j] && lens[j] == e->element[0]->len &&
			    memcmp(argv[j], e->element[0]->str, lens[j]) == 0)
				is_meta = 1;
		k = cJSON_CreateObject();
		/* a meta hash holds bookkeeping (last, carry, seq), not admitted entries */
		if (!k || jsonv_add_path(k, "key", e->element[0]->str, e->element[0]->len) ||
		    (is_meta ? !cJSON_AddBoolToObject(k, "meta", 1)
			     : jsonv_add_int(k, "entries", e->element[1]->integer)) ||
		    !cJSON_AddItemToArray(arr, k)) {
			cJSON_Delete(k);
			cJSON_Delete(arr);
			goto out;
		}
		keys++;
		if (!is_meta)
			entries += e->element[1]->integer;
	}
	if (jsonv_add_int(o, "keys_removed", keys) || jsonv_add_int(o, "entries_removed", entries) ||
	    jsonv_add_int(o, "registries_removed", r->element[0]->integer) ||
	    !cJSON_AddItemToObject(o, "keys", arr)) {
		cJSON_Delete(arr);
		goto out;
	}
	*out = o;
	o = NULL;
	rc = 0;
out:
	if (r)
		freeReplyObject(r);
	cJSON_Delete(o);
	strbuf_free(&buf);
	free(off);
	free(lens);
	free(argv);
	free(meta);
	return rc;
}

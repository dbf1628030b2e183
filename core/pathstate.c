#include "core/pathstate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonv.h"
#include "core/reply.h"

/* The listing's first pipeline covers this many shards of an own layout; each next one twice as many, up to the max. */
#define PAGE_WIDTH_FIRST 16
#define PAGE_WIDTH_MAX 256

/* One path to show: where it was found and what was read. */
struct item {
	const struct layout *l;
	const char *path;            /* borrowed */
	size_t len;
	const struct rule *match;    /* the rule that matches the path, or NULL */
	const struct rule *read_by;  /* the rule whose parameters the read used, or NULL */
	int registered;              /* 1, 0, or -1: unknown (the registry could not be read) */
	double due;                  /* own layouts: the due index's score; < 0: none */
	int raw;                     /* counted raw (ZCARD / EXISTS): a foreign layout without a rule */
	redisReply *reply;           /* owned: the read's reply */
};

static void items_free(struct item *v, size_t n)
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
static int queue_read(struct rbatch *b, const struct item *it, const struct rule *rule, int raw)
{
	const struct alg_ops *alg = algorithm_get(it->l->algorithm);
	struct cmdargs a = { 0 };
	int rc;

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

/* A state script's reply: {count, remaining, reset_ms, [last_ms,] ttl_ms, recorded, rule}. */
struct view {
	long long count, remaining, reset, ttl;
	const redisReply *recorded;  /* flat {field, value, ...}, or NULL when none */
	const char *rule;            /* the recorded rule ("" none) */
	size_t rule_len;
};

/* 0 and *v, or -EPROTO.  A reply without the last two elements (a script of before) records nothing. */
static int parse_view(const struct alg_ops *alg, const redisReply *r, struct view *v)
{
	size_t at = alg->state_ttl_at;

	memset(v, 0, sizeof(*v));
	v->rule = "";
	if (!r || r->type != REDIS_REPLY_ARRAY || (r->elements != at + 1 && r->elements != at + 3) ||
	    reply_int_at(r, 0, &v->count) || reply_int_at(r, 1, &v->remaining) || reply_int_at(r, 2, &v->reset) ||
	    reply_int_at(r, at, &v->ttl))
		return -EPROTO;
	if (r->elements == at + 3) {
		const redisReply *rec = r->element[at + 1];

		if (rec->type != REDIS_REPLY_ARRAY || rec->elements % 2 || !reply_is_strings(rec) ||
		    reply_str(r->element[at + 2], &v->rule, &v->rule_len))
			return -EPROTO;
		if (rec->elements)
			v->recorded = rec;
	}
	return 0;
}

/* The recorded value of `field`, or NULL. */
static const redisReply *recorded_value(const struct view *v, const char *field)
{
	if (!v->recorded)
		return NULL;
	for (size_t i = 0; i + 1 < v->recorded->elements; i += 2)
		if (strcmp(v->recorded->element[i]->str, field) == 0)
			return v->recorded->element[i + 1];
	return NULL;
}

/* A recorded value as a finite number: 0 and *out, or -EINVAL. */
static int recorded_number(const redisReply *s, double *out)
{
	char *end;
	double d;

	if (!s || !s->len)
		return -EINVAL;
	d = strtod(s->str, &end);
	if (*end || !isfinite(d))
		return -EINVAL;
	*out = d;
	return 0;
}

/* Add recorded value `s` as `name`: a number, or the text as recorded when it is none; null when absent. */
static int add_recorded(cJSON *o, const char *name, const redisReply *s)
{
	double d;

	if (!s)
		return cJSON_AddNullToObject(o, name) ? 0 : -ENOMEM;
	if (!recorded_number(s, &d))
		return jsonv_add_number(o, name, d);
	return jsonv_add_strn(o, name, s->str, s->len);
}

/* The recorded parameters, each field of the algorithm in rule order (rule_add_limits's). */
static int add_recorded_limits(cJSON *o, const struct alg_ops *alg, const struct view *v)
{
	for (unsigned bit = 1; bit & RULE_F__ALL; bit <<= 1)
		if ((alg->fields & bit) && add_recorded(o, algorithm_field_name(bit), recorded_value(v, algorithm_field_name(bit))))
			return -ENOMEM;
	return 0;
}

/*
 * The recorded parameters differ from rule `r` (of the same algorithm):
 * 1, 0, or -ENOMEM.  A field missing or not a number differs.
 */
static int differs(const struct alg_ops *alg, const struct view *v, const struct rule *r)
{
	cJSON *want = cJSON_CreateObject();
	int diff = 0;

	if (!want || rule_add_limits(want, r)) {
		cJSON_Delete(want);
		return -ENOMEM;
	}
	for (unsigned bit = 1; bit & RULE_F__ALL && !diff; bit <<= 1) {
		const cJSON *w;
		double d;

		if (!(alg->fields & bit))
			continue;
		/* integers are raw text (jsonv_add_int prints them in full), the rest numbers */
		w = cJSON_GetObjectItemCaseSensitive(want, algorithm_field_name(bit));
		diff = !(cJSON_IsNumber(w) || cJSON_IsRaw(w)) ||
		       recorded_number(recorded_value(v, algorithm_field_name(bit)), &d) ||
		       d != (cJSON_IsRaw(w) ? strtod(w->valuestring, NULL) : w->valuedouble);
	}
	cJSON_Delete(want);
	return diff;
}

/* A name, or null. */
static int add_name(cJSON *o, const char *key, const struct rule *r)
{
	return (r ? cJSON_AddStringToObject(o, key, r->name) : cJSON_AddNullToObject(o, key)) ? 0 : -ENOMEM;
}

/* registered and, for an own layout, due_ms. */
static int add_registered(cJSON *o, const struct item *it)
{
	if (!(it->registered < 0 ? cJSON_AddNullToObject(o, "registered")
				 : cJSON_AddBoolToObject(o, "registered", it->registered)))
		return -ENOMEM;
	if (it->l->foreign)
		return 0;
	if (it->registered == 1 && it->due >= 0)
		return jsonv_add_number(o, "due_ms", floor(it->due));
	return cJSON_AddNullToObject(o, "due_ms") ? 0 : -ENOMEM;
}

/*
 * The fields every path's state starts with: path, algorithm, layout, rule
 * (`named`: the rule the state names; `rule_null` with `rule_text` NULL),
 * matching_rule, mismatch (`mismatch` 1/0, -1 null).
 */
static int add_head(cJSON *o, const struct item *it, const char *rule_text, size_t rule_len, int mismatch)
{
	if (jsonv_add_path(o, "path", it->path, it->len) ||
	    !cJSON_AddStringToObject(o, "algorithm", algorithm_name(it->l->algorithm)) ||
	    !cJSON_AddStringToObject(o, "layout", it->l->name))
		return -ENOMEM;
	if (rule_text ? jsonv_add_strn(o, "rule", rule_text, rule_len) : !cJSON_AddNullToObject(o, "rule"))
		return -ENOMEM;
	if (add_name(o, "matching_rule", it->match))
		return -ENOMEM;
	return (mismatch < 0 ? cJSON_AddNullToObject(o, "mismatch") : cJSON_AddBoolToObject(o, "mismatch", mismatch))
		       ? 0
		       : -ENOMEM;
}

/* The matching rule is of another algorithm than the item's layout. */
static int other_algorithm(const struct item *it)
{
	return it->match && it->match->algorithm != it->l->algorithm;
}

/* A key of another type (WRONGTYPE) under this layout's name: reported, the rest of a page goes on. */
static cJSON *error_json(const struct item *it, const char *error)
{
	cJSON *o = cJSON_CreateObject();
	const struct rule *by = other_algorithm(it) ? NULL : it->match;

	if (!o || add_head(o, it, by ? by->name : NULL, by ? strlen(by->name) : 0, it->match ? other_algorithm(it) : -1) ||
	    !cJSON_AddNullToObject(o, "recorded") || add_registered(o, it) || !cJSON_AddNullToObject(o, "count") ||
	    !cJSON_AddNullToObject(o, "remaining") || !cJSON_AddNullToObject(o, "reset_ms") ||
	    !cJSON_AddStringToObject(o, "error", error)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* A raw count (a foreign layout without a rule of its algorithm): the limits are unknown. */
static cJSON *raw_json(struct item *it)
{
	const struct alg_ops *alg = algorithm_get(it->l->algorithm);
	cJSON *o = cJSON_CreateObject();
	long long count = 0;

	if (!o || reply_int(it->reply, &count))
		goto fail;
	if (it->l->scan)
		it->registered = count > 0;
	if (add_head(o, it, NULL, 0, it->match ? 1 : -1) || !cJSON_AddNullToObject(o, "recorded") ||
	    add_registered(o, it) ||
	    (alg->zset ? jsonv_add_int(o, "count", count) : !cJSON_AddNullToObject(o, "count")) ||
	    !cJSON_AddNullToObject(o, algorithm_has_capacity(alg) ? "capacity" : "limit") ||
	    !cJSON_AddNullToObject(o, "remaining") || !cJSON_AddNullToObject(o, "reset_ms") ||
	    (it->match && !cJSON_AddStringToObject(o, "note", "the path's rule is of another algorithm")))
		goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* The item's state object from its read (state_json); NULL on -ENOMEM / -EPROTO. */
static cJSON *item_json(struct item *it)
{
	const struct alg_ops *alg = algorithm_get(it->l->algorithm);
	const char *rule_text = NULL;
	size_t rule_len = 0;
	struct view v;
	int mismatch = -1, bad;
	cJSON *o, *rec = NULL;

	if (reply_error(it->reply))
		return error_json(it, reply_error(it->reply));
	if (it->raw)
		return raw_json(it);
	if (parse_view(alg, it->reply, &v))
		return NULL;
	if (v.recorded || v.rule_len) {
		/* the state describes itself: its rule, or null for explicit parameters */
		if (v.rule_len)
			rule_text = v.rule, rule_len = v.rule_len;
	} else if (it->read_by) {
		rule_text = it->read_by->name, rule_len = strlen(it->read_by->name);
	}
	if (it->match) {
		mismatch = other_algorithm(it);
		if (!mismatch && v.recorded && (mismatch = differs(alg, &v, it->match)) < 0)
			return NULL;
	}
	/* a layout without a registry (SCAN discovery): the path is known while its key exists */
	if (it->l->scan)
		it->registered = v.ttl != -2;
	if (!(o = cJSON_CreateObject()))
		return NULL;
	bad = add_head(o, it, rule_text, rule_len, mismatch);
	if (!bad && v.recorded) {
		bad = !(rec = cJSON_AddObjectToObject(o, "recorded"));
		for (size_t i = 0; !bad && i + 1 < v.recorded->elements; i += 2)
			bad = add_recorded(rec, v.recorded->element[i]->str, v.recorded->element[i + 1]);
	} else if (!bad) {
		bad = !cJSON_AddNullToObject(o, "recorded");
	}
	bad = bad || add_registered(o, it) || jsonv_add_int(o, "count", v.count);
	if (!bad) {
		/* the parameters the state was read by */
		if (v.recorded)
			bad = add_recorded_limits(o, alg, &v);
		else if (it->read_by)
			bad = rule_add_limits(o, it->read_by);
		else
			bad = !cJSON_AddNullToObject(o, algorithm_has_capacity(alg) ? "capacity" : "limit");
	}
	/* no parameters at all: the state script answers -1 for what it cannot know */
	bad = bad ||
	      (v.remaining < 0 ? !cJSON_AddNullToObject(o, "remaining") : jsonv_add_int(o, "remaining", v.remaining)) ||
	      (v.reset < 0 ? !cJSON_AddNullToObject(o, "reset_ms") : jsonv_add_int(o, "reset_ms", v.reset)) ||
	      jsonv_add_int(o, "ttl_ms", v.ttl) ||
	      (other_algorithm(it) && !cJSON_AddStringToObject(o, "note", "the path's rule is of another algorithm"));
	if (bad) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The state of an own-layout item records no parameters (nor rule): it is to be read by its matching rule. */
static int wants_rule_read(const struct item *it)
{
	struct view v;

	return !it->l->foreign && it->match && !other_algorithm(it) && !reply_error(it->reply) &&
	       !parse_view(algorithm_get(it->l->algorithm), it->reply, &v) && !v.recorded && !v.rule_len;
}

/*
 * Read the state of `n` items in one pipeline, and a second for those of
 * sluice's own layouts that record no parameters but have a matching rule
 * of their algorithm; each item keeps its reply.
 */
static int read_items(struct rconn *c, struct item *v, size_t n)
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
		struct item *it = &v[i];
		const struct rule *by = it->l->foreign && it->match && !other_algorithm(it) ? it->match : NULL;

		it->raw = it->l->foreign && !by;
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
		if (wants_rule_read(&v[i])) {
			again[nagain++] = i;
			rc = queue_read(b, &v[i], v[i].match, 0);
		}
	if (!rc && nagain)
		rc = rbatch_run(c, b);
	for (size_t k = 0; k < nagain && !rc; k++) {
		struct item *it = &v[again[k]];
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
static int items_out(struct item *v, size_t n, cJSON *out)
{
	for (size_t i = 0; i < n; i++) {
		cJSON *o = item_json(&v[i]);

		if (!o || !cJSON_AddItemToArray(out, o)) {
			cJSON_Delete(o);
			return -EPROTO;
		}
	}
	return 0;
}

/* ---- one path ------------------------------------------------------------------- */

/* A rule of an algorithm no layout keeps state for. */
static cJSON *unkept_json(const struct rule *rule, const char *path, size_t len)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || jsonv_add_path(o, "path", path, len) ||
	    !cJSON_AddStringToObject(o, "algorithm", algorithm_name(rule->algorithm)) ||
	    !cJSON_AddStringToObject(o, "rule", rule->name) || !cJSON_AddStringToObject(o, "matching_rule", rule->name) ||
	    !cJSON_AddBoolToObject(o, "mismatch", 0) || !cJSON_AddNullToObject(o, "recorded") ||
	    !cJSON_AddNullToObject(o, "count") || rule_add_limits(o, rule) || !cJSON_AddNullToObject(o, "remaining") ||
	    !cJSON_AddNullToObject(o, "reset_ms") ||
	    !cJSON_AddStringToObject(o, "note", "no maintained layout for this algorithm")) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

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
	struct item *it = NULL;
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
		int same = rule && rule->algorithm == layouts[i].algorithm;

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
		if (rule && !(o = unkept_json(rule, path, len)))
			rc = -ENOMEM;
		goto out;
	}
	rc = -ENOMEM;
	if (!(it = calloc(1, sizeof(*it))))
		goto out;
	it->l = &layouts[pick];
	it->path = path;
	it->len = len;
	it->match = rule;
	it->due = -1;
	{
		const redisReply *m = rbatch_reply(b, 2 * (size_t)pick + 1);
		char *end;

		if (reply_error(m)) {
			it->registered = -1;
		} else if (m->type == REDIS_REPLY_STRING) {
			it->registered = 1;
			it->due = strtod(m->str, &end);
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
		      size_t n, struct item **items, size_t *nitems)
{
	size_t total = 0, k = 0;
	struct item *v;

	for (size_t i = 0; i < n; i++)
		total += walk_page_len(&layouts[pages->page[i].layout], &pages->page[i]);
	if (!(v = calloc(total + 1, sizeof(*v))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct walk_page *pg = &pages->page[i];
		const struct layout *l = &layouts[pg->layout];

		for (size_t m = 0; m < walk_page_len(l, pg); m++) {
			struct item *it = &v[k];

			if (walk_member(l, pg, m, &it->path, &it->len, &it->due))
				continue;
			it->l = l;
			it->match = ruleset_match(rules, it->path, it->len);
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
		struct item *items = NULL;
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

#include "core/pathview.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonv.h"
#include "core/reply.h"

_Static_assert(RULE_F__ALL == (1 << PATHVIEW_FIELDS) - 1, "one recorded slot per rule field");

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

/*
 * Add `item` (NULL: -ENOMEM) as `key`, a name that outlives the object (a
 * literal, algorithm_field_name's): not copied (cJSON_AddItemToObjectCS),
 * one allocation a field fewer.  0 or -ENOMEM.
 */
static int put(cJSON *o, const char *key, cJSON *item)
{
	if (!item || !cJSON_AddItemToObjectCS(o, key, item)) {
		cJSON_Delete(item);
		return -ENOMEM;
	}
	return 0;
}

static int put_null(cJSON *o, const char *key)
{
	return put(o, key, cJSON_CreateNull());
}

/* `v`, or null when negative (what the state script cannot know). */
static int put_int_or_null(cJSON *o, const char *key, long long v)
{
	return put(o, key, v < 0 ? cJSON_CreateNull() : jsonv_int_item(v));
}

/* Recorded value `s` as an item: a number, or the text as recorded when it is none; null when absent. */
static cJSON *recorded_item(const redisReply *s)
{
	double d;

	if (!s)
		return cJSON_CreateNull();
	if (!recorded_number(s, &d))
		return jsonv_number_item(d);
	return jsonv_strn_item(s->str, s->len);
}

/* Add recorded value `s` as `name` (a reply's field name: copied). */
static int add_recorded(cJSON *o, const char *name, const redisReply *s)
{
	cJSON *item = recorded_item(s);

	if (!item || !cJSON_AddItemToObject(o, name, item)) {
		cJSON_Delete(item);
		return -ENOMEM;
	}
	return 0;
}

/* The recorded parameters, each field of the algorithm in rule order (rule_add_limits's). */
static int add_recorded_limits(cJSON *o, const struct alg_ops *alg, const struct view *v)
{
	for (unsigned bit = 1; bit & RULE_F__ALL; bit <<= 1) {
		const char *name = algorithm_field_name(bit);

		if ((alg->fields & bit) && put(o, name, recorded_item(recorded_value(v, name))))
			return -ENOMEM;
	}
	return 0;
}

int pathview_params_differ(const struct alg_ops *alg, const redisReply *const rec[PATHVIEW_FIELDS],
			   const struct rule *r)
{
	/*
	 * The numbers themselves, as rule_add_limits would print them and
	 * strtod read them back: its integers exactly, its rate by the shortest
	 * text that reads back as exactly the rate (jsonv_add_number).
	 */
	for (unsigned i = 0, bit = 1; bit & RULE_F__ALL; i++, bit <<= 1) {
		double want = rule_field_value(r, bit), d;

		if ((alg->fields & bit) && (!isfinite(want) || recorded_number(rec[i], &d) || d != want))
			return 1;
	}
	return 0;
}

/* The view's recorded parameters differ from rule `r` (of the same algorithm): 1, 0, or -ENOMEM. */
static int differs(const struct alg_ops *alg, const struct view *v, const struct rule *r)
{
	const redisReply *rec[PATHVIEW_FIELDS];

	for (unsigned i = 0, bit = 1; bit & RULE_F__ALL; i++, bit <<= 1)
		rec[i] = recorded_value(v, algorithm_field_name(bit));
	return pathview_params_differ(alg, rec, r);
}

/* A name, or null. */
static int add_name(cJSON *o, const char *key, const struct rule *r)
{
	return put(o, key, r ? cJSON_CreateString(r->name) : cJSON_CreateNull());
}

/* registered and, for an own layout, due_ms. */
static int add_registered(cJSON *o, const struct path_item *it)
{
	if (put(o, "registered", it->registered < 0 ? cJSON_CreateNull() : cJSON_CreateBool(it->registered)))
		return -ENOMEM;
	if (it->l->foreign)
		return 0;
	if (it->registered == 1 && it->due >= 0)
		return put(o, "due_ms", jsonv_number_item(floor(it->due)));
	return put_null(o, "due_ms");
}

/*
 * The fields every path's state starts with: path, algorithm, layout, rule
 * (`named`: the rule the state names; `rule_null` with `rule_text` NULL),
 * matching_rule, mismatch (`mismatch` 1/0, -1 null).
 */
static int add_head(cJSON *o, const struct path_item *it, const char *rule_text, size_t rule_len, int mismatch)
{
	if (jsonv_add_path(o, "path", it->path, it->len) ||
	    put(o, "algorithm", cJSON_CreateStringReference(algorithm_name(it->l->algorithm))) /* a literal */ ||
	    put(o, "layout", cJSON_CreateString(it->l->name)))
		return -ENOMEM;
	if (put(o, "rule", rule_text ? jsonv_strn_item(rule_text, rule_len) : cJSON_CreateNull()))
		return -ENOMEM;
	if (add_name(o, "matching_rule", it->match))
		return -ENOMEM;
	return put(o, "mismatch", mismatch < 0 ? cJSON_CreateNull() : cJSON_CreateBool(mismatch));
}

/* The matching rule is of another algorithm than the item's layout. */
int pathview_other_algorithm(const struct path_item *it)
{
	return it->match && it->match->algorithm != it->l->algorithm;
}

/* A key of another type (WRONGTYPE) under this layout's name: reported, the rest of a page goes on. */
static cJSON *error_json(const struct path_item *it, const char *error)
{
	cJSON *o = cJSON_CreateObject();
	const struct rule *by = pathview_other_algorithm(it) ? NULL : it->match;

	if (!o || add_head(o, it, by ? by->name : NULL, by ? strlen(by->name) : 0, it->match ? pathview_other_algorithm(it) : -1) ||
	    !cJSON_AddNullToObject(o, "recorded") || add_registered(o, it) || !cJSON_AddNullToObject(o, "count") ||
	    !cJSON_AddNullToObject(o, "remaining") || !cJSON_AddNullToObject(o, "reset_ms") ||
	    !cJSON_AddStringToObject(o, "error", error)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* A raw count (a foreign layout without a rule of its algorithm): the limits are unknown. */
static cJSON *raw_json(struct path_item *it)
{
	const struct alg_ops *alg = layout_ops(it->l);
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
cJSON *pathview_item(struct path_item *it)
{
	const struct alg_ops *alg = layout_ops(it->l);
	const char *rule_text = NULL;
	size_t rule_len = 0;
	struct view v;
	int mismatch = -1, bad;
	cJSON *o, *rec = NULL;

	if (reply_error(it->reply))
		return error_json(it, reply_describe(it->reply)); /* the cause named (MOVED: ..., OOM) or Redis's text */
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
		mismatch = pathview_other_algorithm(it);
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
		bad = put(o, "recorded", rec = cJSON_CreateObject());
		for (size_t i = 0; !bad && i + 1 < v.recorded->elements; i += 2)
			bad = add_recorded(rec, v.recorded->element[i]->str, v.recorded->element[i + 1]);
	} else if (!bad) {
		bad = put_null(o, "recorded");
	}
	bad = bad || add_registered(o, it) || put_int_or_null(o, "count", v.count);
	if (!bad) {
		/* the parameters the state was read by */
		if (v.recorded)
			bad = add_recorded_limits(o, alg, &v);
		else if (it->read_by)
			bad = rule_add_limits(o, it->read_by);
		else
			bad = put_null(o, algorithm_has_capacity(alg) ? "capacity" : "limit");
	}
	/* no parameters at all: the state script answers -1 for what it cannot know */
	bad = bad ||
	      put_int_or_null(o, "remaining", v.remaining) || put_int_or_null(o, "reset_ms", v.reset) ||
	      put(o, "ttl_ms", jsonv_int_item(v.ttl)) ||
	      (pathview_other_algorithm(it) && put(o, "note", cJSON_CreateString("the path's rule is of another algorithm")));
	if (bad) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The state of an own-layout item records no parameters (nor rule): it is to be read by its matching rule. */
int pathview_wants_rule_read(const struct path_item *it)
{
	struct view v;

	return !it->l->foreign && it->match && !pathview_other_algorithm(it) && !reply_error(it->reply) &&
	       !parse_view(layout_ops(it->l), it->reply, &v) && !v.recorded && !v.rule_len;
}

/* A rule of an algorithm no layout keeps state for. */
cJSON *pathview_unkept(const struct rule *rule, const char *path, size_t len)
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

#include "core/rules.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/glob.h"
#include "core/jsonv.h"

/* Every rule field, in the order they are read and written. */
static const unsigned all_fields[] = { RULE_F_CAPACITY, RULE_F_RATE, RULE_F_LIMIT, RULE_F_WINDOW, RULE_F_SUB };
#define NFIELDS (sizeof(all_fields) / sizeof(all_fields[0]))

int rule_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > RULE_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

static size_t literal_prefix(const char *m, int *is_glob)
{
	size_t i;

	for (i = 0; m[i]; i++)
		if (m[i] == '*' || m[i] == '?' || m[i] == '[' || m[i] == '\\') {
			*is_glob = 1;
			return i;
		}
	*is_glob = 0;
	return i;
}

void rule_free(struct rule *r)
{
	if (!r)
		return;
	free(r->match);
	free(r);
}

static const char *fname(char *buf, size_t cap, const char *where, const char *field)
{
	if (where && *where)
		snprintf(buf, cap, "%s.%s", where, field);
	else
		snprintf(buf, cap, "%s", field);
	return buf;
}

/* Read field `bit` of a rule from `it` into `r`; -EINVAL naming `f`. */
static int read_field(const cJSON *it, unsigned bit, const char *f, struct rule *r, struct sl_error *err)
{
	switch (bit) {
	case RULE_F_CAPACITY:
		return jsonv_int(it, f, 1, &r->capacity, err);
	case RULE_F_RATE:
		return jsonv_positive(it, f, 0, &r->rate, err);
	case RULE_F_LIMIT:
		return jsonv_int(it, f, 1, &r->limit, err);
	case RULE_F_WINDOW:
		return jsonv_int(it, f, 1, &r->window_ms, err);
	default:
		return jsonv_int(it, f, 1, &r->sub_windows, err);
	}
}

/* Add field `bit` of `r` to `o`.  0 or -ENOMEM. */
static int write_field(cJSON *o, unsigned bit, const struct rule *r)
{
	const char *name = algorithm_field_name(bit);

	switch (bit) {
	case RULE_F_CAPACITY:
		return jsonv_add_int(o, name, r->capacity);
	case RULE_F_RATE:
		return jsonv_add_number(o, name, r->rate);
	case RULE_F_LIMIT:
		return jsonv_add_int(o, name, r->limit);
	case RULE_F_WINDOW:
		return jsonv_add_int(o, name, r->window_ms);
	default:
		return jsonv_add_int(o, name, r->sub_windows);
	}
}

/* Optional "mode" (`it`, may be NULL): "enforce" (the default) or "shadow"; -EINVAL naming `f`. */
static int read_mode(const cJSON *it, const char *f, struct rule *r, struct sl_error *err)
{
	const char *s;
	int rc;

	r->shadow = 0;
	if (!it)
		return 0;
	if ((rc = jsonv_string(it, f, &s, err)))
		return rc;
	if (!strcmp(s, "shadow"))
		r->shadow = 1;
	else if (strcmp(s, "enforce") != 0)
		return sl_fail(err, f, "must be \"enforce\" or \"shadow\"");
	return 0;
}

double rule_field_value(const struct rule *r, unsigned bit)
{
	switch (bit) {
	case RULE_F_CAPACITY:
		return (double)r->capacity;
	case RULE_F_RATE:
		return r->rate;
	case RULE_F_LIMIT:
		return (double)r->limit;
	case RULE_F_WINDOW:
		return (double)r->window_ms;
	default:
		return (double)r->sub_windows;
	}
}

int rule_add_limits(cJSON *o, const struct rule *r)
{
	unsigned want = algorithm_get(r->algorithm)->fields;

	for (size_t i = 0; i < NFIELDS; i++)
		if ((want & all_fields[i]) && write_field(o, all_fields[i], r))
			return -ENOMEM;
	return 0;
}

int rule_from_json(const cJSON *obj, const char *name, const char *where, struct rule **out,
		   struct sl_error *err)
{
	struct rule *r = NULL;
	const cJSON *it;
	const char *s;
	char f[128];
	const struct alg_ops *alg;
	int rc;

	if (!cJSON_IsObject(obj))
		return sl_fail(err, where ? where : "", "a rule must be a JSON object");
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;

	if ((s = jsonv_duplicate_key(obj))) {
		rc = sl_fail(err, fname(f, sizeof(f), where, s), "appears twice");
		goto fail;
	}
	/* Reject unknown fields first, so a typo is never silently ignored. */
	cJSON_ArrayForEach(it, obj) {
		int known = !strcmp(it->string, "name") || !strcmp(it->string, "match") ||
			    !strcmp(it->string, "algorithm") || !strcmp(it->string, "mode");

		for (size_t i = 0; !known && i < NFIELDS; i++)
			known = !strcmp(it->string, algorithm_field_name(all_fields[i]));
		if (!known) {
			rc = sl_fail(err, fname(f, sizeof(f), where, it->string), "unknown field");
			goto fail;
		}
	}

	it = cJSON_GetObjectItemCaseSensitive(obj, "name");
	if (it) {
		if ((rc = jsonv_string(it, fname(f, sizeof(f), where, "name"), &s, err)))
			goto fail;
		if (name && strcmp(name, s) != 0) {
			rc = sl_fail(err, f, "does not match the rule name in the URL (\"%s\")", name);
			goto fail;
		}
		name = s;
	}
	if (!name) {
		rc = sl_fail(err, fname(f, sizeof(f), where, "name"), "is required");
		goto fail;
	}
	if (!rule_name_valid(name)) {
		rc = sl_fail(err, fname(f, sizeof(f), where, "name"),
			     "must be 1..%d characters of [A-Za-z0-9_.-]", RULE_NAME_MAX);
		goto fail;
	}
	memcpy(r->name, name, strlen(name) + 1);

	it = cJSON_GetObjectItemCaseSensitive(obj, "match");
	fname(f, sizeof(f), where, "match");
	if (!it) {
		rc = sl_fail(err, f, "is required");
		goto fail;
	}
	if ((rc = jsonv_string(it, f, &s, err)))
		goto fail;
	if (!*s || strlen(s) > RULE_MATCH_MAX) {
		rc = sl_fail(err, f, "must be 1..%d bytes", RULE_MATCH_MAX);
		goto fail;
	}
	if (!jsonv_utf8_valid(s, strlen(s))) {
		/* the rule is stored, copied and answered as JSON text, which is UTF-8 (RFC 8259) */
		rc = sl_fail(err, f, "must be UTF-8 (a byte that is not: match it with ? or [...])");
		goto fail;
	}
	if (!glob_valid(s, strlen(s))) {
		rc = sl_fail(err, f, "is not a valid glob (a '[' that does not close, or a '\\' at the end)");
		goto fail;
	}
	if (glob_star_run(s, strlen(s)) > RULE_GLOB_RUN_MAX) {
		/* a client script's `*` matches globs in Redis: its time grows with this run times the path */
		rc = sl_fail(err, f, "has more than %d characters, ? or [...] sets between a '*' and the next '*' "
				     "(or the end): a glob's matching time grows with them", RULE_GLOB_RUN_MAX);
		goto fail;
	}
	if (!(r->match = strdup(s))) {
		rc = -ENOMEM;
		goto fail;
	}
	r->literal_prefix = literal_prefix(r->match, &r->is_glob);

	it = cJSON_GetObjectItemCaseSensitive(obj, "algorithm");
	fname(f, sizeof(f), where, "algorithm");
	if (!it) {
		rc = sl_fail(err, f, "is required");
		goto fail;
	}
	if ((rc = jsonv_string(it, f, &s, err)))
		goto fail;
	if (algorithm_parse(s, &r->algorithm)) {
		char names[128];

		rc = sl_fail(err, f, "must be one of %s", algorithm_list(names, sizeof(names)));
		goto fail;
	}
	alg = algorithm_get(r->algorithm);

	for (size_t i = 0; i < NFIELDS; i++) {
		unsigned bit = all_fields[i];

		it = cJSON_GetObjectItemCaseSensitive(obj, algorithm_field_name(bit));
		fname(f, sizeof(f), where, algorithm_field_name(bit));
		if (!(alg->fields & bit)) {
			if (it) {
				rc = sl_fail(err, f, "is not a field of algorithm %s", alg->name);
				goto fail;
			}
			continue;
		}
		if (!it) {
			rc = sl_fail(err, f, "is required for algorithm %s", alg->name);
			goto fail;
		}
		if ((rc = read_field(it, bit, f, r, err)))
			goto fail;
	}
	if (alg->check && (rc = alg->check(r, where, err)))
		goto fail;
	if ((rc = read_mode(cJSON_GetObjectItemCaseSensitive(obj, "mode"), fname(f, sizeof(f), where, "mode"), r,
			    err)))
		goto fail;
	*out = r;
	return 0;
fail:
	rule_free(r);
	return rc;
}

int rule_from_text(const char *text, size_t len, const char *name, struct rule **out,
		   struct sl_error *err)
{
	cJSON *obj = jsonv_parse(text, len, "rule", err);
	int rc;

	if (!obj)
		return -EINVAL;
	rc = rule_from_json(obj, name, NULL, out, err);
	cJSON_Delete(obj);
	return rc;
}

cJSON *rule_to_json(const struct rule *r)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddStringToObject(o, "name", r->name) || !cJSON_AddStringToObject(o, "match", r->match) ||
	    !cJSON_AddStringToObject(o, "algorithm", algorithm_name(r->algorithm)) || rule_add_limits(o, r) ||
	    (r->shadow && !cJSON_AddStringToObject(o, "mode", "shadow"))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

char *rule_to_text(const struct rule *r)
{
	cJSON *o = rule_to_json(r);
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;

	cJSON_Delete(o);
	return s;
}

struct rule *rule_dup(const struct rule *r)
{
	struct rule *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	*c = *r;
	c->match = strdup(r->match);
	if (!c->match) {
		free(c);
		return NULL;
	}
	return c;
}

int rule_matches(const struct rule *r, const char *path, size_t len)
{
	if (!r->is_glob)
		return strlen(r->match) == len && memcmp(r->match, path, len) == 0;
	return glob_match(r->match, strlen(r->match), path, len);
}

int ruleset_copy(struct ruleset *dst, const struct ruleset *src)
{
	struct ruleset n = *src;

	n.v = src->n ? calloc(src->n, sizeof(*n.v)) : NULL;
	n.cap = src->n;
	if (src->n && !n.v)
		return -ENOMEM;
	for (size_t i = 0; i < src->n; i++) {
		if (!(n.v[i] = rule_dup(src->v[i]))) {
			n.n = i;
			ruleset_clear(&n);
			return -ENOMEM;
		}
	}
	ruleset_clear(dst);
	*dst = n;
	return 0;
}

void ruleset_clear(struct ruleset *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		rule_free(rs->v[i]);
	free(rs->v);
	rs->v = NULL;
	rs->n = rs->cap = 0;
	rs->version = 0;
	rs->epoch[0] = '\0';
	rs->digest[0] = '\0';
	rs->digest_due_ms = 0;
	rs->loaded = 0;
}

int ruleset_put(struct ruleset *rs, struct rule *r)
{
	for (size_t i = 0; i < rs->n; i++)
		if (strcmp(rs->v[i]->name, r->name) == 0) {
			rule_free(rs->v[i]);
			rs->v[i] = r;
			return 0;
		}
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 8;
		struct rule **v = realloc(rs->v, cap * sizeof(*v));

		if (!v) {
			rule_free(r);
			return -ENOMEM;
		}
		rs->v = v;
		rs->cap = cap;
	}
	rs->v[rs->n++] = r;
	return 0;
}

const struct rule *ruleset_get(const struct ruleset *rs, const char *name)
{
	for (size_t i = 0; i < rs->n; i++)
		if (strcmp(rs->v[i]->name, name) == 0)
			return rs->v[i];
	return NULL;
}

/* The governing rule of `path` among the rules of algorithm `a`, or among all with `any`. */
static const struct rule *match_of(const struct ruleset *rs, const char *path, size_t len, int any, enum algorithm a)
{
	const struct rule *best = NULL, *exact = NULL;

	/* Ties go to the smaller name (strcmp: byte order) whatever the order of
	 * rs, so every daemon and lua/lib/ruleset.lua pick the same rule. */
	for (size_t i = 0; i < rs->n; i++) {
		const struct rule *r = rs->v[i];

		if (!any && r->algorithm != a)
			continue;
		if (!r->is_glob) {
			if ((!exact || strcmp(r->name, exact->name) < 0) && rule_matches(r, path, len))
				exact = r;
			continue;
		}
		if (exact || (best && (r->literal_prefix < best->literal_prefix ||
				       (r->literal_prefix == best->literal_prefix && strcmp(r->name, best->name) > 0))))
			continue;
		if (rule_matches(r, path, len))
			best = r;
	}
	return exact ? exact : best; /* exact beats any glob */
}

const struct rule *ruleset_match(const struct ruleset *rs, const char *path, size_t len)
{
	return match_of(rs, path, len, 1, ALG_LEAKY_BUCKET);
}

const struct rule *ruleset_match_algorithm(const struct ruleset *rs, const char *path, size_t len, enum algorithm a)
{
	return match_of(rs, path, len, 0, a);
}

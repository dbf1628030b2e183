#include "core/layout.h"

#include "core/glob.h"
#include "core/keys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/shard.h"
#include "core/slottag.h"

void layout_clear(struct layout *l)
{
	free(l->key_prefix);
	free(l->key_suffix);
	free(l->registry);
	free(l->scan_match);
	free(l->scan_type);
	free(l->meta_prefix);
	memset(l, 0, sizeof(*l));
}

const struct alg_ops *layout_ops(const struct layout *l)
{
	return l->kind ? l->kind : algorithm_get(l->algorithm);
}

void layouts_free(struct layout *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		layout_clear(&v[i]);
	free(v);
}

const char *score_unit_name(enum score_unit u)
{
	return u == UNIT_S ? "s" : u == UNIT_US ? "us" : "ms";
}

static char *dup_opt(const char *s)
{
	return s ? strdup(s) : NULL;
}

int layouts_append(struct layout **v, size_t *n, const struct layout *l)
{
	struct layout *nv = realloc(*v, (*n + 1) * sizeof(**v)), c = *l;

	if (!nv)
		return -ENOMEM;
	*v = nv;
	c.key_prefix = dup_opt(l->key_prefix);
	c.key_suffix = dup_opt(l->key_suffix);
	c.registry = dup_opt(l->registry);
	c.scan_match = dup_opt(l->scan_match);
	c.scan_type = dup_opt(l->scan_type);
	c.meta_prefix = dup_opt(l->meta_prefix);
	if (!c.key_prefix || !c.key_suffix || (l->registry && !c.registry) || (l->scan_match && !c.scan_match) ||
	    (l->scan_type && !c.scan_type) || (l->meta_prefix && !c.meta_prefix)) {
		layout_clear(&c);
		return -ENOMEM;
	}
	nv[(*n)++] = c;
	return 0;
}

int layouts_append_foreign(struct layout **v, size_t *n, const struct layout *l, const char *prefix)
{
	struct layout bound = *l;

	/* layouts_append copies every string, this one included */
	bound.meta_prefix = (char *)prefix;
	return layouts_append(v, n, &bound);
}

int layout_path_of(const struct layout *l, const char *key, size_t len, const char **path, size_t *plen)
{
	size_t p = strlen(l->key_prefix), q = strlen(l->key_suffix);

	if (!l->foreign)
		return keys_path_of(l->key_prefix, l->name, key, len, path, plen);
	if (len <= p + q || memcmp(key, l->key_prefix, p) != 0 || memcmp(key + len - q, l->key_suffix, q) != 0)
		return -EINVAL;
	*path = key + p;
	*plen = len - p - q;
	return 0;
}

int layout_registry_key(const struct layout *l, const char *path, size_t len, struct strbuf *b)
{
	if (l->foreign)
		return strbuf_add(b, l->registry, strlen(l->registry));
	return layout_shard_registry(l, shard_of(path, len), b);
}

int layout_shard_registry(const struct layout *l, unsigned shard, struct strbuf *b)
{
	char word[48];

	snprintf(word, sizeof(word), "registry:%s", l->name);
	return keys_shard(b, l->key_prefix, shard, word);
}

/* Append `s` to `b` with the glob metacharacters of Redis's MATCH escaped. */
static int glob_escape(struct strbuf *b, const char *s)
{
	for (; *s; s++) {
		if (strchr("*?[]\\", *s) && strbuf_add(b, "\\", 1))
			return -ENOMEM;
		if (strbuf_add(b, s, 1))
			return -ENOMEM;
	}
	return 0;
}

int layout_from_json(const cJSON *obj, const char *where, struct layout *out, struct sl_error *err)
{
	struct layout l = { .foreign = 1 };
	struct strbuf glob = { 0 };
	const cJSON *it;
	char f[96];
	int rc = -ENOMEM;

#define FIELD(name) (snprintf(f, sizeof(f), "%s.%s", where, name), f)
	if (!cJSON_IsObject(obj))
		return sl_fail(err, where, "a layout must be a JSON object");
	cJSON_ArrayForEach(it, obj) {
		static const char *const known[] = { "name", "algorithm", "key_prefix", "key_suffix",
						     "registry", "scan", "scan_type", "unit", "kind", "cut" };
		size_t k;

		for (k = 0; k < sizeof(known) / sizeof(known[0]) && strcmp(it->string, known[k]); k++)
			;
		if (k == sizeof(known) / sizeof(known[0]))
			return sl_fail(err, FIELD(it->string), "unknown field");
	}
	it = cJSON_GetObjectItemCaseSensitive(obj, "name");
	if (!cJSON_IsString(it) || !rule_name_valid(it->valuestring) || strlen(it->valuestring) >= sizeof(l.name))
		return sl_fail(err, FIELD("name"), "must be 1..31 characters of [A-Za-z0-9_.-]");
	snprintf(l.name, sizeof(l.name), "%s", it->valuestring);
	it = cJSON_GetObjectItemCaseSensitive(obj, "algorithm");
	if (!cJSON_IsString(it) || algorithm_parse(it->valuestring, &l.algorithm)) {
		char names[128];

		return sl_fail(err, FIELD("algorithm"), "must be one of %s", algorithm_list(names, sizeof(names)));
	}
	it = cJSON_GetObjectItemCaseSensitive(obj, "kind");
	if (it && (!cJSON_IsString(it) || !(l.kind = algorithm_kind(it->valuestring, l.algorithm))))
		return sl_fail(err, FIELD("kind"), "must be \"redisson\" (Redisson's RRateLimiter), with algorithm token_bucket");
	if (l.kind && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "scan")))
		return sl_fail(err, FIELD("scan"), "a redisson layout keeps no registry: it needs \"scan\": true");
	it = cJSON_GetObjectItemCaseSensitive(obj, "key_prefix");
	if (!cJSON_IsString(it) || !*it->valuestring || strlen(it->valuestring) > 256)
		return sl_fail(err, FIELD("key_prefix"), "must be a string of 1..256 bytes (the key before the path)");
	l.key_prefix = strdup(it->valuestring);
	it = cJSON_GetObjectItemCaseSensitive(obj, "key_suffix");
	if (it && (!cJSON_IsString(it) || strlen(it->valuestring) > 256)) {
		rc = sl_fail(err, FIELD("key_suffix"), "must be a string of 0..256 bytes (the key after the path)");
		goto fail;
	}
	l.key_suffix = strdup(it ? it->valuestring : "");
	if (!l.key_prefix || !l.key_suffix)
		goto fail;
	it = cJSON_GetObjectItemCaseSensitive(obj, "scan");
	if (it && !cJSON_IsBool(it)) {
		rc = sl_fail(err, FIELD("scan"), "must be true or false");
		goto fail;
	}
	l.scan = cJSON_IsTrue(it);
	it = cJSON_GetObjectItemCaseSensitive(obj, "registry");
	if (l.scan == !!it) {
		rc = sl_fail(err, FIELD("registry"), "give either a registry set or \"scan\": true");
		goto fail;
	}
	if (it) {
		if (!cJSON_IsString(it) || !*it->valuestring || strlen(it->valuestring) > 256) {
			rc = sl_fail(err, FIELD("registry"), "must be a key name of 1..256 bytes");
			goto fail;
		}
		l.registry = strdup(it->valuestring);
	} else {
		/* SCAN discovery: MATCH prefix*suffix with the literal parts escaped */
		if (glob_escape(&glob, l.key_prefix) || strbuf_add(&glob, "*", 1) || glob_escape(&glob, l.key_suffix))
			goto fail;
		l.scan_match = glob.p;
		glob.p = NULL;
		it = cJSON_GetObjectItemCaseSensitive(obj, "scan_type");
		if (it && (!cJSON_IsString(it) || (strcmp(it->valuestring, "zset") && strcmp(it->valuestring, "hash") &&
						  strcmp(it->valuestring, "string")))) {
			rc = sl_fail(err, FIELD("scan_type"), "must be zset, hash or string");
			goto fail;
		}
		l.scan_type = strdup(it ? it->valuestring : layout_ops(&l)->foreign_type);
		/* scripts SREM from a registry: give them a key nothing writes */
		if (asprintf(&l.registry, "%s\x01noregistry", l.key_prefix) < 0)
			l.registry = NULL;
	}
	if (!l.registry || (l.scan && !l.scan_type))
		goto fail;
	it = cJSON_GetObjectItemCaseSensitive(obj, "unit");
	if (it) {
		if (cJSON_IsString(it) && !strcmp(it->valuestring, "ms"))
			l.unit = UNIT_MS;
		else if (cJSON_IsString(it) && !strcmp(it->valuestring, "s"))
			l.unit = UNIT_S;
		else if (cJSON_IsString(it) && !strcmp(it->valuestring, "us"))
			l.unit = UNIT_US;
		else {
			rc = sl_fail(err, FIELD("unit"), "must be ms, s or us");
			goto fail;
		}
		if (l.unit != UNIT_MS && !algorithm_get(l.algorithm)->score_units) {
			rc = sl_fail(err, FIELD("unit"), "only sliding_log layouts take scores in s or us");
			goto fail;
		}
	}
	it = cJSON_GetObjectItemCaseSensitive(obj, "cut");
	if (it) {
		if (!cJSON_IsString(it) || (strcmp(it->valuestring, "inclusive") && strcmp(it->valuestring, "exclusive"))) {
			rc = sl_fail(err, FIELD("cut"), "must be inclusive or exclusive");
			goto fail;
		}
		if (!algorithm_get(l.algorithm)->score_units) {
			rc = sl_fail(err, FIELD("cut"), "only sliding_log layouts take a cut");
			goto fail;
		}
		l.cut_exclusive = !strcmp(it->valuestring, "exclusive");
	}
#undef FIELD
	*out = l;
	return 0;
fail:
	strbuf_free(&glob);
	layout_clear(&l);
	return rc;
}

int layouts_default(const char *prefix, struct layout **out, size_t *n)
{
	size_t cnt = ALG__COUNT;
	struct layout *v = calloc(cnt, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < cnt; i++) {
		snprintf(v[i].name, sizeof(v[i].name), "%s", algorithm_name((enum algorithm)i));
		v[i].algorithm = (enum algorithm)i;
		v[i].key_prefix = strdup(prefix);
		v[i].key_suffix = strdup("");
		if (!v[i].key_prefix || !v[i].key_suffix) {
			layouts_free(v, cnt);
			return -ENOMEM;
		}
	}
	*out = v;
	*n = cnt;
	return 0;
}

const struct layout *layouts_find(const struct layout *v, size_t n, enum algorithm a)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].algorithm == a)
			return &v[i];
	return NULL;
}

int layout_scan_glob(const struct layout *l, const char *match, struct strbuf *b)
{
	size_t start = b->len;

	int rc = -ENOMEM;

	if (glob_escape(b, l->key_prefix) || (rc = glob_to_redis(match, b)) || glob_escape(b, l->key_suffix)) {
		strbuf_truncate(b, start);
		return rc == -EINVAL ? -EINVAL : -ENOMEM;
	}
	return 0;
}

int layout_push_key(struct cmdargs *a, const struct layout *l, const char *path, size_t len, int meta)
{
	return cmdargs_end(a, layout_key(l, path, len, meta, cmdargs_begin(a)));
}

/* Append the data key of `path` to `b`.  0 or -ENOMEM (`b` may hold a partial key: the caller cuts it). */
static int data_key(const struct layout *l, const char *path, size_t len, struct strbuf *b)
{
	return strbuf_add(b, l->key_prefix, strlen(l->key_prefix)) || strbuf_add(b, path, len) ||
	       strbuf_add(b, l->key_suffix, strlen(l->key_suffix)) ? -ENOMEM : 0;
}

/*
 * A foreign key's meta: <meta_prefix>{<tag>}:<name>_meta:<data key>.  The
 * prefix holds no brace (config), so the first '{' opens the tag and the tag
 * (no brace either) is what Redis hashes: the data key's slot.  The data key
 * comes last, after a fixed word, so no two data keys share a meta.
 */
static int foreign_meta_key(const struct layout *l, const char *path, size_t len, struct strbuf *b)
{
	struct strbuf k = { 0 };
	const char *tag;
	int rc = -ENOMEM;

	if (!l->meta_prefix)
		return -EINVAL;
	if (data_key(l, path, len, &k))
		goto out;
	tag = slottag_of(shard_keyslot(k.p, k.len));
	if (strbuf_add(b, l->meta_prefix, strlen(l->meta_prefix)) || strbuf_add(b, "{", 1) ||
	    strbuf_add(b, tag, strlen(tag)) || strbuf_add(b, "}:", 2) || strbuf_add(b, l->name, strlen(l->name)) ||
	    strbuf_add(b, "_meta:", 6) || strbuf_add(b, k.p, k.len))
		goto out;
	rc = 0;
out:
	strbuf_free(&k);
	return rc;
}

int layout_key(const struct layout *l, const char *path, size_t len, int meta, struct strbuf *b)
{
	size_t start = b->len;
	char word[48];
	int rc;

	if (!l->foreign) {
		/* key layout 2 (core/keys.h): <prefix>{k}:<algorithm>[_meta]:<path> */
		snprintf(word, sizeof(word), "%s%s", l->name, meta ? "_meta" : "");
		return keys_path(b, l->key_prefix, word, path, len);
	}
	rc = meta ? foreign_meta_key(l, path, len, b) : data_key(l, path, len, b) ? -ENOMEM : 0;
	if (rc)
		strbuf_truncate(b, start);
	return rc;
}

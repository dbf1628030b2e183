#include "core/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/jsonv.h"
#include "core/token.h"

#define CONFIG_MAX_FILE (4 << 20) /* bytes; a config is small */
#define CONFIG_MAX_LAYOUTS 24     /* foreign ones: sluice keeps 5 of its own, 32 in all */
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

int config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->listen_port = 8080;
	cfg->drain_interval_ms = 100;
	cfg->prune_interval_ms = 1000;
	cfg->batch_size = 500;
	cfg->redis_timeout_ms = 500;
	cfg->max_clock_skew_ms = CONFIG_SKEW_DEFAULT_MS;
	cfg->lease_ttl_ms = CONFIG_LEASE_TTL_DEFAULT_MS;
	cfg->max_body_bytes = 65536;
	cfg->max_connections = 1024;
	cfg->max_connections_per_ip = 64;
	cfg->header_timeout_ms = 5000;
	cfg->admin_threads = 4;
	cfg->idle_timeout_s = 30;
	cfg->log_level = LOG_INFO;
	cfg->log_format = LOG_FORMAT_TEXT;
	cfg->redis_url = strdup("redis://127.0.0.1:6379/0");
	cfg->listen_host = strdup("127.0.0.1");
	cfg->prefix = strdup("sluice:");
	cfg->admin_token_env = strdup("SLUICE_ADMIN_TOKEN");
	if (!cfg->redis_url || !cfg->listen_host || !cfg->prefix || !cfg->admin_token_env ||
	    redis_url_parse(cfg->redis_url, &cfg->redis, NULL)) {
		config_free(cfg);
		return -ENOMEM;
	}
	return 0;
}

static void rules_free(struct rule **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rule_free(v[i]);
	free(v);
}

void config_free(struct config *cfg)
{
	free(cfg->redis_url);
	redis_target_clear(&cfg->redis);
	free(cfg->listen_host);
	free(cfg->prefix);
	free(cfg->id);
	free(cfg->admin_token_file);
	free(cfg->admin_token_env);
	free(cfg->admin_tls_cert);
	free(cfg->admin_tls_key);
	token_free(cfg->admin_token);
	rules_free(cfg->rules, cfg->nrules);
	layouts_free(cfg->layouts, cfg->nlayouts);
	memset(cfg, 0, sizeof(*cfg));
}

int config_set_redis(struct config *cfg, const char *url, const char *field, struct sl_error *err)
{
	struct redis_target t;
	char *copy;
	int rc = redis_url_parse(url, &t, err);

	if (rc) {
		if (err)
			snprintf(err->field, sizeof(err->field), "%s", field);
		return rc;
	}
	if (!(copy = strdup(url))) {
		redis_target_clear(&t);
		return -ENOMEM;
	}
	free(cfg->redis_url);
	redis_target_clear(&cfg->redis);
	cfg->redis_url = copy;
	cfg->redis = t;
	return 0;
}

int config_load_token(struct config *cfg, struct sl_error *err)
{
	char *token;
	int rc = token_load(cfg->admin_token_file, cfg->admin_token_env, &token, err);

	if (rc && err && cfg->admin_token_file_flag && !strcmp(err->field, "admin.token_file"))
		snprintf(err->field, sizeof(err->field), "--token-file");
	if (rc)
		return rc;
	token_free(cfg->admin_token);
	cfg->admin_token = token;
	return 0;
}

/* ---- the config file -------------------------------------------------------- */

/*
 * What one config file changes, built aside so that an error leaves the
 * config as it was: scalars go to `next` (a shallow copy of the config),
 * owned values to the fields below, and staged_commit() moves them in.
 */
struct staged {
	struct config next;
	char *redis_url;              /* with `target`: set when the file has "redis" */
	struct redis_target target;
	char *listen_host;
	char *prefix;
	char *id;
	char *token_file;
	char *token_env;
	char *tls_cert;
	char *tls_key;
	int have_layouts;             /* the file has "layouts" (an empty array clears them) */
	struct layout *layouts;
	size_t nlayouts;
	int have_rules;               /* the file has "rules" (an empty array clears them) */
	struct rule **rules;
	size_t nrules;
};

/* Replace *dst (owned) by a copy of `s`.  0, or -ENOMEM with *dst kept. */
static int set_str(char **dst, const char *s)
{
	char *copy = strdup(s);

	if (!copy)
		return -ENOMEM;
	free(*dst);
	*dst = copy;
	return 0;
}

/* Integer fields of the config file: name, bounds (inclusive), where it goes. */
struct int_field {
	const char *name;
	int64_t min, max;
	size_t off;
};
static const struct int_field int_fields[] = {
	{ "drain_interval_ms", 1, 3600000, offsetof(struct config, drain_interval_ms) },
	{ "prune_interval_ms", 1, 3600000, offsetof(struct config, prune_interval_ms) },
	{ "sweep_budget_ms", 0, 3600000, offsetof(struct config, sweep_budget_ms) },
	{ "batch_size", 1, 100000, offsetof(struct config, batch_size) },
	{ "redis_timeout_ms", 1, 600000, offsetof(struct config, redis_timeout_ms) },
	{ "max_clock_skew_ms", 0, 3600000, offsetof(struct config, max_clock_skew_ms) },
	{ "lease_ttl_ms", CONFIG_LEASE_TTL_MIN_MS, CONFIG_LEASE_TTL_MAX_MS, offsetof(struct config, lease_ttl_ms) },
	{ "max_body_bytes", 1, 64 << 20, offsetof(struct config, max_body_bytes) },
	{ "max_connections", 1, 65536, offsetof(struct config, max_connections) },
	{ "max_connections_per_ip", 0, 65536, offsetof(struct config, max_connections_per_ip) },
	{ "header_timeout_ms", 0, 600000, offsetof(struct config, header_timeout_ms) },
	{ "admin_threads", 1, 64, offsetof(struct config, admin_threads) },
	{ "idle_timeout_s", 1, 3600, offsetof(struct config, idle_timeout_s) },
};

static int apply_int(struct staged *st, const struct int_field *f, const cJSON *it, struct sl_error *err)
{
	int64_t v;
	int rc;

	if ((rc = jsonv_int(it, f->name, f->min, &v, err)))
		return rc;
	if (v > f->max)
		return sl_fail(err, f->name, "must be at most %lld", (long long)f->max);
	*(int64_t *)((char *)&st->next + f->off) = v;
	return 0;
}

static int apply_redis(struct staged *st, const cJSON *it, struct sl_error *err)
{
	struct redis_target t;
	const char *s;
	char *url;
	int rc;

	if ((rc = jsonv_string(it, "redis", &s, err)) || (rc = redis_url_parse(s, &t, err)))
		return rc;
	if (!(url = strdup(s))) {
		redis_target_clear(&t);
		return -ENOMEM;
	}
	free(st->redis_url);
	redis_target_clear(&st->target);
	st->redis_url = url;
	st->target = t;
	return 0;
}

static int apply_listen(struct staged *st, const cJSON *it, struct sl_error *err)
{
	const char *s;
	char *host;
	int rc;

	if ((rc = jsonv_string(it, "listen", &s, err)) ||
	    (rc = listen_parse(s, "listen", &host, &st->next.listen_port, err)))
		return rc;
	free(st->listen_host);
	st->listen_host = host;
	return 0;
}

static int apply_prefix(struct staged *st, const cJSON *it, struct sl_error *err)
{
	const char *s;
	int rc;

	if ((rc = jsonv_string(it, "prefix", &s, err)))
		return rc;
	if (!*s || strlen(s) > 64 || strpbrk(s, "{}"))
		return sl_fail(err, "prefix", "must be 1..64 bytes without '{' or '}'");
	return set_str(&st->prefix, s);
}

int config_id_check(const char *id, const char **why)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > CONFIG_ID_MAX) {
		*why = "must be 1 to 64 bytes";
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (id[i] <= ' ' || id[i] > '~') {
			*why = "must be printable ASCII without spaces";
			return -EINVAL;
		}
	}
	return 0;
}

int config_set_id(struct config *cfg, const char *id, const char *field, struct sl_error *err)
{
	const char *why;

	if (config_id_check(id, &why))
		return sl_fail(err, field, "%s", why);
	return set_str(&cfg->id, id);
}

static int apply_id(struct staged *st, const cJSON *it, struct sl_error *err)
{
	const char *s, *why;
	int rc;

	if ((rc = jsonv_string(it, "id", &s, err)))
		return rc;
	if (config_id_check(s, &why))
		return sl_fail(err, "id", "%s", why);
	return set_str(&st->id, s);
}

static int apply_log_level(struct staged *st, const cJSON *it, struct sl_error *err)
{
	const char *s;
	int rc;

	if ((rc = jsonv_string(it, "log_level", &s, err)))
		return rc;
	if (log_level_parse(s, &st->next.log_level))
		return sl_fail(err, "log_level", "must be debug, info, warn or error");
	return 0;
}

static int apply_log_format(struct staged *st, const cJSON *it, struct sl_error *err)
{
	const char *s;
	int rc;

	if ((rc = jsonv_string(it, "log_format", &s, err)))
		return rc;
	if (log_format_parse(s, &st->next.log_format))
		return sl_fail(err, "log_format", "must be text or json");
	return 0;
}

/* One member `a` of "admin"; `f` is its field name for errors ("admin.token_file"). */
static int apply_admin_member(struct staged *st, const cJSON *a, const char *f, struct sl_error *err)
{
	const char *s;
	int rc;

	if (!strcmp(a->string, "auth_reads")) {
		if (!cJSON_IsBool(a))
			return sl_fail(err, f, "must be true or false");
		st->next.admin_auth_reads = cJSON_IsTrue(a);
		return 0;
	}
	if (strcmp(a->string, "token_file") && strcmp(a->string, "token_env") && strcmp(a->string, "tls_cert") &&
	    strcmp(a->string, "tls_key"))
		return sl_fail(err, f, "unknown field");
	if ((rc = jsonv_string(a, f, &s, err)))
		return rc;
	if (!*s)
		return sl_fail(err, f, "must not be empty");
	return set_str(!strcmp(a->string, "token_file") ? &st->token_file
		       : !strcmp(a->string, "token_env") ? &st->token_env
		       : !strcmp(a->string, "tls_cert")  ? &st->tls_cert
							 : &st->tls_key, s);
}

static int apply_admin(struct staged *st, const cJSON *it, struct sl_error *err)
{
	const cJSON *a;
	const char *dup;
	char f[96];
	int rc;

	if (!cJSON_IsObject(it))
		return sl_fail(err, "admin", "must be an object");
	if ((dup = jsonv_duplicate_key(it))) {
		snprintf(f, sizeof(f), "admin.%s", dup);
		return sl_fail(err, f, "appears twice");
	}
	cJSON_ArrayForEach(a, it) {
		snprintf(f, sizeof(f), "admin.%s", a->string);
		if ((rc = apply_admin_member(st, a, f, err)))
			return rc;
	}
	return 0;
}

/* Parse one foreign layout and append it: its name must be new and not an algorithm's (sluice's own layouts). */
static int add_layout(struct staged *st, const cJSON *obj, const char *where, struct sl_error *err)
{
	struct layout one;
	enum algorithm alg;
	int rc;

	if ((rc = layout_from_json(obj, where, &one, err)))
		return rc;
	for (size_t j = 0; j < st->nlayouts && !rc; j++)
		if (!strcmp(st->layouts[j].name, one.name))
			rc = sl_fail(err, where, "duplicate layout name \"%s\"", one.name);
	if (!rc && algorithm_parse(one.name, &alg) == 0)
		rc = sl_fail(err, where, "the name \"%s\" is sluice's own layout's", one.name);
	if (!rc)
		rc = layouts_append(&st->layouts, &st->nlayouts, &one);
	layout_clear(&one); /* the array holds a copy */
	return rc;
}

static int apply_layouts(struct staged *st, const cJSON *it, struct sl_error *err)
{
	const cJSON *l;
	size_t n = 0;
	int rc;

	if (!cJSON_IsArray(it))
		return sl_fail(err, "layouts", "must be an array of layout objects");
	st->have_layouts = 1;
	if (cJSON_GetArraySize(it) > CONFIG_MAX_LAYOUTS)
		return sl_fail(err, "layouts", "at most %d foreign layouts (sluice keeps 5 of its own, 32 in all)",
			       CONFIG_MAX_LAYOUTS);
	cJSON_ArrayForEach(l, it) {
		char where[32];

		snprintf(where, sizeof(where), "layouts[%zu]", n++);
		if ((rc = add_layout(st, l, where, err)))
			return rc;
	}
	return 0;
}

/*
 * Name the refused rule `r` in err's message (" (rule \"search\")"), when its
 * "name" is one a rule may have (1..64 of [A-Za-z0-9_.-]): the index alone
 * is hard to find in a long file.  Anything else is not echoed.
 */
static void name_rule(const cJSON *r, struct sl_error *err)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(r, "name");
	size_t len, used;

	if (!err || !cJSON_IsString(n) || !(len = strlen(n->valuestring)) || len > 64 ||
	    strspn(n->valuestring, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != len)
		return;
	used = strlen(err->message);
	snprintf(err->message + used, sizeof(err->message) - used, " (rule \"%s\")", n->valuestring);
}

static int apply_rules(struct staged *st, const cJSON *it, struct sl_error *err)
{
	const cJSON *r;
	int rc;

	if (!cJSON_IsArray(it))
		return sl_fail(err, "rules", "must be an array of rule objects");
	st->have_rules = 1;
	if (!(st->rules = calloc((size_t)cJSON_GetArraySize(it) + 1, sizeof(*st->rules))))
		return -ENOMEM;
	cJSON_ArrayForEach(r, it) {
		struct rule *rule;
		char where[32];

		snprintf(where, sizeof(where), "rules[%zu]", st->nrules);
		if ((rc = rule_from_json(r, NULL, where, &rule, err))) {
			name_rule(r, err);
			return rc;
		}
		st->rules[st->nrules++] = rule;
		for (size_t j = 0; j + 1 < st->nrules; j++)
			if (!strcmp(st->rules[j]->name, rule->name))
				return sl_fail(err, where, "duplicate rule name \"%s\"", rule->name);
	}
	return 0;
}

/* The top-level members that are not integers, by name. */
static const struct section {
	const char *name;
	int (*apply)(struct staged *st, const cJSON *it, struct sl_error *err);
} sections[] = {
	{ "redis", apply_redis },
	{ "listen", apply_listen },
	{ "prefix", apply_prefix },
	{ "id", apply_id },
	{ "log_level", apply_log_level },
	{ "log_format", apply_log_format },
	{ "admin", apply_admin },
	{ "layouts", apply_layouts },
	{ "rules", apply_rules },
};

static int apply_member(struct staged *st, const cJSON *it, struct sl_error *err)
{
	for (size_t i = 0; i < ARRAY_LEN(int_fields); i++)
		if (!strcmp(it->string, int_fields[i].name))
			return apply_int(st, &int_fields[i], it, err);
	for (size_t i = 0; i < ARRAY_LEN(sections); i++)
		if (!strcmp(it->string, sections[i].name))
			return sections[i].apply(st, it, err);
	/* a member named "" would make an error that names nothing ("sluiced: : unknown field") */
	if (!it->string[0])
		return sl_fail(err, "config", "unknown field \"\" (a member with an empty name)");
	return sl_fail(err, it->string, "unknown field");
}

/* A foreign layout must not reach into sluice's own keys (its job would touch them). */
static int check_layout_prefixes(const struct staged *st, struct sl_error *err)
{
	const struct layout *v = st->have_layouts ? st->layouts : st->next.layouts;
	size_t n = st->have_layouts ? st->nlayouts : st->next.nlayouts;
	const char *pfx = st->prefix ? st->prefix : st->next.prefix;
	size_t p = strlen(pfx);

	for (size_t i = 0; i < n; i++) {
		size_t a = strlen(v[i].key_prefix);

		if (strncmp(v[i].key_prefix, pfx, a < p ? a : p) == 0) {
			char where[48];

			snprintf(where, sizeof(where), "layouts[%zu].key_prefix", i);
			return sl_fail(err, where, "overlaps sluice's own key prefix \"%s\"", pfx);
		}
	}
	return 0;
}

/* Move *src (owned, may be NULL: nothing staged) over *dst. */
static void take_str(char **dst, char **src)
{
	if (!*src)
		return;
	free(*dst);
	*dst = *src;
	*src = NULL;
}

/* Move everything staged into `cfg`; what it replaces is freed.  Cannot fail. */
static void staged_commit(struct staged *st, struct config *cfg)
{
	struct config *n = &st->next;

	if (st->redis_url) {
		take_str(&n->redis_url, &st->redis_url);
		redis_target_clear(&n->redis);
		n->redis = st->target;
		memset(&st->target, 0, sizeof(st->target));
	}
	take_str(&n->listen_host, &st->listen_host);
	take_str(&n->prefix, &st->prefix);
	take_str(&n->id, &st->id);
	take_str(&n->admin_token_file, &st->token_file);
	take_str(&n->admin_token_env, &st->token_env);
	take_str(&n->admin_tls_cert, &st->tls_cert);
	take_str(&n->admin_tls_key, &st->tls_key);
	if (st->have_layouts) {
		layouts_free(n->layouts, n->nlayouts);
		n->layouts = st->layouts;
		n->nlayouts = st->nlayouts;
		st->layouts = NULL;
		st->nlayouts = 0;
	}
	if (st->have_rules) {
		rules_free(n->rules, n->nrules);
		n->rules = st->rules;
		n->nrules = st->nrules;
		st->rules = NULL;
		st->nrules = 0;
	}
	*cfg = *n;
}

/* Free what is still staged (everything after an error); `next` is borrowed and left alone. */
static void staged_clear(struct staged *st)
{
	free(st->redis_url);
	redis_target_clear(&st->target);
	free(st->listen_host);
	free(st->prefix);
	free(st->id);
	free(st->token_file);
	free(st->token_env);
	free(st->tls_cert);
	free(st->tls_key);
	layouts_free(st->layouts, st->nlayouts);
	rules_free(st->rules, st->nrules);
}

int config_apply_json(struct config *cfg, const char *text, size_t len, struct sl_error *err)
{
	struct staged st = { .next = *cfg };
	const cJSON *it;
	const char *dup;
	cJSON *root;
	int rc = 0;

	if (!(root = jsonv_parse(text, len, "config", err)))
		return -EINVAL;
	if (!cJSON_IsObject(root)) {
		rc = sl_fail(err, "config", "must be a JSON object");
		goto out;
	}
	if ((dup = jsonv_duplicate_key(root))) {
		/* as in apply_member: a name "" would name no field */
		rc = *dup ? sl_fail(err, dup, "appears twice")
			  : sl_fail(err, "config", "a member named \"\" appears twice");
		goto out;
	}
	cJSON_ArrayForEach(it, root)
		if ((rc = apply_member(&st, it, err)))
			goto out;
	if ((rc = check_layout_prefixes(&st, err)))
		goto out;
	staged_commit(&st, cfg);
out:
	cJSON_Delete(root);
	staged_clear(&st);
	return rc;
}

int config_apply_file(struct config *cfg, const char *path, struct sl_error *err)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n;
	int rc;

	if (!f) {
		rc = -errno;
		sl_fail(err, path, "cannot open: %s", strerror(-rc));
		return rc;
	}
	buf = malloc(CONFIG_MAX_FILE + 1);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, CONFIG_MAX_FILE + 1, f);
	if (ferror(f)) {
		rc = sl_fail(err, path, "read error");
	} else if (n > CONFIG_MAX_FILE) {
		rc = sl_fail(err, path, "larger than %d bytes", CONFIG_MAX_FILE);
	} else {
		rc = config_apply_json(cfg, buf, n, err);
	}
	free(buf);
	fclose(f);
	return rc;
}

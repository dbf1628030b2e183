#include "core/config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/jsonv.h"

#define CONFIG_MAX_FILE (4 << 20) /* bytes; a config is small */

void redis_target_clear(struct redis_target *t)
{
	free(t->host);
	free(t->socket);
	free(t->user);
	free(t->password);
	memset(t, 0, sizeof(*t));
}

static int parse_uint(const char *s, size_t len, long max, long *out)
{
	long v = 0;

	if (len == 0 || len > 9)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int redis_url_parse(const char *url, struct redis_target *out, struct sl_error *err)
{
	struct redis_target t = { .port = 6379 };
	const char *p, *at, *slash, *colon, *end;
	long v;

	if (strncmp(url, "unix://", 7) == 0) {
		const char *q;

		p = url + 7;
		if (*p != '/')
			return sl_fail(err, "redis", "unix socket URL needs an absolute path: unix:///path/to/socket");
		q = strchr(p, '?');
		end = q ? q : p + strlen(p);
		if (q) {
			if (strncmp(q, "?db=", 4) || parse_uint(q + 4, strlen(q + 4), INT_MAX, &v))
				return sl_fail(err, "redis", "unix socket URL accepts only ?db=N");
			t.db = (int)v;
		}
		t.socket = strndup(p, (size_t)(end - p));
		if (!t.socket)
			return -ENOMEM;
		*out = t;
		return 0;
	}
	if (strncmp(url, "redis://", 8) != 0)
		return sl_fail(err, "redis", "must start with redis:// or unix:// (got \"%.40s\")", url);
	p = url + 8;
	end = p + strlen(p);
	slash = strchr(p, '/');
	at = memrchr(p, '@', (size_t)((slash ? slash : end) - p));
	if (at) {
		/* userinfo: ":password", "user:password" or "password" */
		const char *c = memchr(p, ':', (size_t)(at - p));

		if (c) {
			if (c > p && !(t.user = strndup(p, (size_t)(c - p))))
				goto oom;
			if (!(t.password = strndup(c + 1, (size_t)(at - c - 1))))
				goto oom;
		} else if (!(t.password = strndup(p, (size_t)(at - p)))) {
			goto oom;
		}
		p = at + 1;
	}
	if (slash) {
		if (parse_uint(slash + 1, strlen(slash + 1), INT_MAX, &v)) {
			redis_target_clear(&t);
			return sl_fail(err, "redis", "database must be a number: /N");
		}
		t.db = (int)v;
		end = slash;
	}
	if (*p == '[') { /* [ipv6]:port */
		const char *rb = memchr(p, ']', (size_t)(end - p));

		if (!rb) {
			redis_target_clear(&t);
			return sl_fail(err, "redis", "unclosed '[' in host");
		}
		t.host = strndup(p + 1, (size_t)(rb - p - 1));
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
		if (rb + 1 < end && !colon) {
			redis_target_clear(&t);
			return sl_fail(err, "redis", "expected ':' after ']'");
		}
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		t.host = strndup(p, (size_t)((colon ? colon : end) - p));
	}
	if (!t.host)
		goto oom;
	if (!*t.host) {
		redis_target_clear(&t);
		return sl_fail(err, "redis", "host is missing");
	}
	if (colon) {
		if (parse_uint(colon + 1, (size_t)(end - colon - 1), 65535, &v) || v == 0) {
			redis_target_clear(&t);
			return sl_fail(err, "redis", "port must be 1..65535");
		}
		t.port = (int)v;
	}
	*out = t;
	return 0;
oom:
	redis_target_clear(&t);
	return -ENOMEM;
}

const char *redis_target_describe(const struct redis_target *t, char *buf, size_t cap)
{
	if (t->socket)
		snprintf(buf, cap, "unix:%s/%d", t->socket, t->db);
	else
		snprintf(buf, cap, "%s:%d/%d", t->host ? t->host : "?", t->port, t->db);
	return buf;
}

int listen_parse(const char *s, const char *field, char **host, int *port, struct sl_error *err)
{
	const char *colon;
	char *h;
	long v;

	if (*s == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb[1] != ':')
			return sl_fail(err, field, "must be HOST:PORT or [IPV6]:PORT");
		colon = rb + 1;
		h = strndup(s + 1, (size_t)(rb - s - 1));
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return sl_fail(err, field, "must be HOST:PORT or [IPV6]:PORT");
		h = strndup(s, (size_t)(colon - s));
	}
	if (!h)
		return -ENOMEM;
	if (!*h || parse_uint(colon + 1, strlen(colon + 1), 65535, &v)) {
		free(h);
		return sl_fail(err, field, "must be HOST:PORT with a port 0..65535");
	}
	*host = h;
	*port = (int)v;
	return 0;
}

int config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->listen_port = 8080;
	cfg->drain_interval_ms = 100;
	cfg->prune_interval_ms = 1000;
	cfg->batch_size = 500;
	cfg->redis_timeout_ms = 500;
	cfg->max_body_bytes = 65536;
	cfg->max_connections = 64;
	cfg->idle_timeout_s = 30;
	cfg->log_level = LOG_INFO;
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

void config_free(struct config *cfg)
{
	free(cfg->redis_url);
	redis_target_clear(&cfg->redis);
	free(cfg->listen_host);
	free(cfg->prefix);
	free(cfg->admin_token_file);
	free(cfg->admin_token_env);
	if (cfg->admin_token) {
		explicit_bzero(cfg->admin_token, strlen(cfg->admin_token));
		free(cfg->admin_token);
	}
	for (size_t i = 0; i < cfg->nrules; i++)
		rule_free(cfg->rules[i]);
	free(cfg->rules);
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

/* Integer fields of the config file: name, minimum, maximum, where it goes. */
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
	{ "max_body_bytes", 1, 64 << 20, offsetof(struct config, max_body_bytes) },
	{ "max_connections", 1, 65536, offsetof(struct config, max_connections) },
	{ "idle_timeout_s", 1, 3600, offsetof(struct config, idle_timeout_s) },
};

int config_apply_json(struct config *cfg, const char *text, size_t len, struct sl_error *err)
{
	struct config next = *cfg; /* shallow: strings and rules are swapped in only at the end */
	char *redis_url = NULL, *listen_host = NULL, *prefix = NULL, *token_file = NULL, *token_env = NULL;
	struct redis_target target = { 0 };
	struct rule **rules = NULL;
	size_t nrules = 0;
	struct layout *layouts = NULL;
	size_t nlayouts = 0;
	int have_rules = 0, have_layouts = 0, rc = 0;
	const char *dup;
	cJSON *root, *it;

	if (!(root = jsonv_parse(text, len, "config", err)))
		return -EINVAL;
	if (!cJSON_IsObject(root)) {
		rc = sl_fail(err, "config", "must be a JSON object");
		goto out;
	}
	if ((dup = jsonv_duplicate_key(root))) {
		rc = sl_fail(err, dup, "appears twice");
		goto out;
	}
	cJSON_ArrayForEach(it, root) {
		const char *key = it->string, *s;
		size_t i;

		for (i = 0; i < sizeof(int_fields) / sizeof(int_fields[0]); i++)
			if (!strcmp(key, int_fields[i].name))
				break;
		if (i < sizeof(int_fields) / sizeof(int_fields[0])) {
			const struct int_field *f = &int_fields[i];
			int64_t v;

			if ((rc = jsonv_int(it, f->name, f->min, &v, err)))
				goto out;
			if (v > f->max) {
				rc = sl_fail(err, f->name, "must be at most %lld", (long long)f->max);
				goto out;
			}
			*(int64_t *)((char *)&next + f->off) = v;
		} else if (!strcmp(key, "redis")) {
			if ((rc = jsonv_string(it, "redis", &s, err)))
				goto out;
			redis_target_clear(&target);
			if ((rc = redis_url_parse(s, &target, err)))
				goto out;
			free(redis_url);
			if (!(redis_url = strdup(s))) {
				rc = -ENOMEM;
				goto out;
			}
		} else if (!strcmp(key, "listen")) {
			if ((rc = jsonv_string(it, "listen", &s, err)))
				goto out;
			free(listen_host);
			listen_host = NULL;
			if ((rc = listen_parse(s, "listen", &listen_host, &next.listen_port, err)))
				goto out;
		} else if (!strcmp(key, "prefix")) {
			if ((rc = jsonv_string(it, "prefix", &s, err)))
				goto out;
			if (!*s || strlen(s) > 64 || strpbrk(s, "{}")) {
				rc = sl_fail(err, "prefix", "must be 1..64 bytes without '{' or '}'");
				goto out;
			}
			free(prefix);
			if (!(prefix = strdup(s))) {
				rc = -ENOMEM;
				goto out;
			}
		} else if (!strcmp(key, "log_level")) {
			if ((rc = jsonv_string(it, "log_level", &s, err)))
				goto out;
			if (log_level_parse(s, &next.log_level)) {
				rc = sl_fail(err, "log_level", "must be debug, info, warn or error");
				goto out;
			}
		} else if (!strcmp(key, "admin")) {
			const cJSON *a;

			if (!cJSON_IsObject(it)) {
				rc = sl_fail(err, "admin", "must be an object");
				goto out;
			}
			if ((s = jsonv_duplicate_key(it))) {
				char f[96];

				snprintf(f, sizeof(f), "admin.%s", s);
				rc = sl_fail(err, f, "appears twice");
				goto out;
			}
			cJSON_ArrayForEach(a, it) {
				char f[96];

				snprintf(f, sizeof(f), "admin.%s", a->string);
				if (!strcmp(a->string, "token_file") || !strcmp(a->string, "token_env")) {
					char **dst = !strcmp(a->string, "token_file") ? &token_file : &token_env;

					if ((rc = jsonv_string(a, f, &s, err)))
						goto out;
					if (!*s) {
						rc = sl_fail(err, f, "must not be empty");
						goto out;
					}
					free(*dst);
					if (!(*dst = strdup(s))) {
						rc = -ENOMEM;
						goto out;
					}
				} else if (!strcmp(a->string, "auth_reads")) {
					if (!cJSON_IsBool(a)) {
						rc = sl_fail(err, f, "must be true or false");
						goto out;
					}
					next.admin_auth_reads = cJSON_IsTrue(a);
				} else {
					rc = sl_fail(err, f, "unknown field");
					goto out;
				}
			}
		} else if (!strcmp(key, "layouts")) {
			const cJSON *l;
			size_t n = 0;

			if (!cJSON_IsArray(it)) {
				rc = sl_fail(err, "layouts", "must be an array of layout objects");
				goto out;
			}
			have_layouts = 1;
			if (cJSON_GetArraySize(it) > 24) {
				rc = sl_fail(err, "layouts", "at most 24 foreign layouts (sluice keeps 5 of its own, 32 in all)");
				goto out;
			}
			cJSON_ArrayForEach(l, it) {
				struct layout one;
				char where[32];

				snprintf(where, sizeof(where), "layouts[%zu]", n++);
				if ((rc = layout_from_json(l, where, &one, err)))
					goto out;
				for (size_t j = 0; j < nlayouts; j++)
					if (!strcmp(layouts[j].name, one.name))
						rc = sl_fail(err, where, "duplicate layout name \"%s\"", one.name);
				if (!rc && (!strcmp(one.name, "leaky_bucket") || !strcmp(one.name, "sliding_log") ||
					    !strcmp(one.name, "sliding_counter") || !strcmp(one.name, "fixed_window") ||
					    !strcmp(one.name, "token_bucket")))
					rc = sl_fail(err, where, "the name \"%s\" is sluice's own layout's", one.name);
				if (!rc)
					rc = layouts_append(&layouts, &nlayouts, &one);
				layout_clear(&one); /* the array holds a copy */
				if (rc)
					goto out;
			}
		} else if (!strcmp(key, "rules")) {
			const cJSON *r;
			size_t n = 0;

			if (!cJSON_IsArray(it)) {
				rc = sl_fail(err, "rules", "must be an array of rule objects");
				goto out;
			}
			have_rules = 1;
			rules = calloc((size_t)cJSON_GetArraySize(it) + 1, sizeof(*rules));
			if (!rules) {
				rc = -ENOMEM;
				goto out;
			}
			cJSON_ArrayForEach(r, it) {
				char where[32];

				snprintf(where, sizeof(where), "rules[%zu]", n);
				if ((rc = rule_from_json(r, NULL, where, &rules[n], err)))
					goto out;
				for (size_t j = 0; j < n; j++)
					if (!strcmp(rules[j]->name, rules[n]->name)) {
						n++;
						rc = sl_fail(err, where, "duplicate rule name \"%s\"",
							     rules[n - 1]->name);
						nrules = n;
						goto out;
					}
				n++;
				nrules = n;
			}
		} else {
			rc = sl_fail(err, key, "unknown field");
			goto out;
		}
	}

	/* A foreign layout must not reach into sluice's own keys (its job would touch them). */
	for (size_t i = 0; i < (have_layouts ? nlayouts : next.nlayouts); i++) {
		const struct layout *l = have_layouts ? &layouts[i] : &next.layouts[i];
		const char *pfx = prefix ? prefix : next.prefix;
		size_t a = strlen(l->key_prefix), p2 = strlen(pfx);

		if (strncmp(l->key_prefix, pfx, a < p2 ? a : p2) == 0) {
			char where[32];

			snprintf(where, sizeof(where), "layouts[%zu].key_prefix", i);
			rc = sl_fail(err, where, "overlaps sluice's own key prefix \"%s\"", pfx);
			goto out;
		}
	}
	/* All good: swap the new values in. */
	if (redis_url) {
		free(next.redis_url);
		redis_target_clear(&next.redis);
		next.redis_url = redis_url;
		next.redis = target;
		redis_url = NULL;
		memset(&target, 0, sizeof(target));
	}
	if (listen_host) {
		free(next.listen_host);
		next.listen_host = listen_host;
		listen_host = NULL;
	}
	if (prefix) {
		free(next.prefix);
		next.prefix = prefix;
		prefix = NULL;
	}
	if (token_file) {
		free(next.admin_token_file);
		next.admin_token_file = token_file;
		token_file = NULL;
	}
	if (token_env) {
		free(next.admin_token_env);
		next.admin_token_env = token_env;
		token_env = NULL;
	}
	if (have_layouts) {
		layouts_free(next.layouts, next.nlayouts);
		next.layouts = layouts;
		next.nlayouts = nlayouts;
		layouts = NULL;
		nlayouts = 0;
	}
	if (have_rules) {
		for (size_t i = 0; i < next.nrules; i++)
			rule_free(next.rules[i]);
		free(next.rules);
		next.rules = rules;
		next.nrules = nrules;
		rules = NULL;
		nrules = 0;
	}
	*cfg = next;
out:
	cJSON_Delete(root);
	free(redis_url);
	free(listen_host);
	free(prefix);
	free(token_file);
	free(token_env);
	redis_target_clear(&target);
	for (size_t i = 0; i < nrules; i++)
		rule_free(rules[i]);
	free(rules);
	layouts_free(layouts, nlayouts);
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

#define TOKEN_MAX 4096 /* bytes */

int config_load_token(struct config *cfg, struct sl_error *err)
{
	char buf[TOKEN_MAX + 2];
	const char *env;
	size_t n;
	FILE *f;

	if (!cfg->admin_token_file) {
		env = cfg->admin_token_env ? getenv(cfg->admin_token_env) : NULL;
		if (!env || !*env)
			return 0;
		if (strlen(env) > TOKEN_MAX)
			return sl_fail(err, cfg->admin_token_env, "token longer than %d bytes", TOKEN_MAX);
		return (cfg->admin_token = strdup(env)) ? 0 : -ENOMEM;
	}
	if (!(f = fopen(cfg->admin_token_file, "rb")))
		return sl_fail(err, "admin.token_file", "cannot open %s: %s", cfg->admin_token_file,
			       strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	if (n > TOKEN_MAX || memchr(buf, '\0', n) || n == 0) {
		explicit_bzero(buf, sizeof(buf));
		return sl_fail(err, "admin.token_file", "%s must hold one token of 1..%d bytes",
			       cfg->admin_token_file, TOKEN_MAX);
	}
	cfg->admin_token = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return cfg->admin_token ? 0 : -ENOMEM;
}

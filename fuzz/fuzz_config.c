/*
 * fuzz_config: the config file parser, core/config.c's config_apply_json
 * (with the rules, layouts and Redis URL parsers it calls), on any bytes as
 * the file's text.  Beyond ASan/UBSan it checks config.h's contract: an
 * error is -EINVAL naming a field and a message (or -ENOMEM) and leaves the
 * config as it was (its rendering below is compared); a text that applies
 * once applies again to the same result.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/strbuf.h"
#include "fuzz/harness.h"

static void add(struct strbuf *b, const char *k, const char *v)
{
	if (strbuf_add(b, k, strlen(k)) || strbuf_add(b, "=", 1) || strbuf_add(b, v ? v : "(null)", strlen(v ? v : "(null)")) ||
	    strbuf_add(b, "\n", 1))
		abort();
}

static void addi(struct strbuf *b, const char *k, long long v)
{
	char s[32];

	snprintf(s, sizeof(s), "%lld", v);
	add(b, k, s);
}

/* Every member of `c` that the file sets, as text (rules as their JSON text). */
static char *render(const struct config *c)
{
	struct strbuf b = { 0 };

	add(&b, "redis_url", c->redis_url);
	add(&b, "redis.host", c->redis.host);
	addi(&b, "redis.port", c->redis.port);
	add(&b, "redis.socket", c->redis.socket);
	add(&b, "redis.user", c->redis.user);
	add(&b, "redis.password", c->redis.password);
	addi(&b, "redis.db", c->redis.db);
	addi(&b, "redis.nseeds", (long long)c->redis.nseeds);
	add(&b, "listen_host", c->listen_host);
	addi(&b, "listen_port", c->listen_port);
	add(&b, "prefix", c->prefix);
	addi(&b, "drain", c->drain_interval_ms);
	addi(&b, "prune", c->prune_interval_ms);
	addi(&b, "budget", c->sweep_budget_ms);
	addi(&b, "batch", c->batch_size);
	addi(&b, "timeout", c->redis_timeout_ms);
	addi(&b, "skew", c->max_clock_skew_ms);
	add(&b, "id", c->id);
	addi(&b, "lease", c->lease_ttl_ms);
	addi(&b, "body", c->max_body_bytes);
	addi(&b, "conns", c->max_connections);
	addi(&b, "conns_ip", c->max_connections_per_ip);
	addi(&b, "header", c->header_timeout_ms);
	addi(&b, "threads", c->admin_threads);
	addi(&b, "idle", c->idle_timeout_s);
	addi(&b, "log_level", c->log_level);
	addi(&b, "log_format", c->log_format);
	add(&b, "token_file", c->admin_token_file);
	add(&b, "token_env", c->admin_token_env);
	addi(&b, "auth_reads", c->admin_auth_reads);
	add(&b, "tls_cert", c->admin_tls_cert);
	add(&b, "tls_key", c->admin_tls_key);
	for (size_t i = 0; i < c->nrules; i++) {
		char *t = rule_to_text(c->rules[i]);

		if (!t)
			abort();
		add(&b, c->rules[i]->name, t);
		free(t);
	}
	addi(&b, "nlayouts", (long long)c->nlayouts);
	for (size_t i = 0; i < c->nlayouts; i++)
		add(&b, "layout", c->layouts[i].name);
	return b.p;
}

static void fail(const uint8_t *data, size_t size, const char *what, const char *a, const char *b)
{
	fuzz_show("config", (const char *)data, size);
	fprintf(stderr, "fuzz_config: %s\n--- before/first:\n%s--- after/again:\n%s", what, a ? a : "", b ? b : "");
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config cfg;
	struct sl_error err = { 0 };
	char *before, *after;
	int rc;

	if (config_defaults(&cfg))
		abort();
	before = render(&cfg);
	rc = config_apply_json(&cfg, (const char *)data, size, &err);
	after = render(&cfg);
	if (rc) {
		if (rc != -EINVAL && rc != -ENOMEM)
			fail(data, size, "an error other than -EINVAL and -ENOMEM", before, after);
		if (rc == -EINVAL && (!err.field[0] || !err.message[0]))
			fail(data, size, "an -EINVAL that names no field or says nothing", err.field, err.message);
		if (strcmp(before, after))
			fail(data, size, "an error changed the config", before, after);
	} else {
		char *again;

		if (config_apply_json(&cfg, (const char *)data, size, &err))
			fail(data, size, "applies once, not twice", err.field, err.message);
		again = render(&cfg);
		if (strcmp(after, again))
			fail(data, size, "applied twice, another config", after, again);
		free(again);
	}
	free(before);
	free(after);
	config_free(&cfg);
	return 0;
}

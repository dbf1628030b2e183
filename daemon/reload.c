/* The daemon's SIGHUP reload and the periods it sets again (daemon/daemon.h). */
#include "daemon/daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "daemon/options.h"

int64_t daemon_lease_interval_ms(const struct config *cfg)
{
	int64_t q = cfg->lease_ttl_ms / 4;

	return cfg->drain_interval_ms < q ? cfg->drain_interval_ms : q;
}

int64_t daemon_budget_us(const struct config *cfg, int64_t interval_ms)
{
	int64_t ms = cfg->sweep_budget_ms ? cfg->sweep_budget_ms : interval_ms * 8 / 10;

	return (ms > 0 ? ms : 1) * 1000;
}

/* Two optional strings equal (both NULL, or the same text). */
static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

void daemon_reload(struct daemon *d, int argc, char **argv)
{
	struct config next;
	struct sl_error err = { 0 };
	enum options_action action;
	char q[300];
	int64_t interval[WORKER__JOBS];

	if (config_defaults(&next)) {
		log_event(LOG_ERROR, "reload_failed", "error=\"out of memory\"");
		return;
	}
	if (options_parse(argc, argv, options_default_config(), &next, &action, NULL, &err)) {
		log_event(LOG_ERROR, "reload_failed", "field=%s error=%s config=kept",
			  log_quote(q, sizeof(q), err.field, strlen(err.field)),
			  log_quote(q + 150, 150, err.message, strlen(err.message)));
		config_free(&next);
		return;
	}
	{
		/* settings that only a restart applies: name the ones that changed */
		char changed[256] = "";
		const struct {
			const char *name;
			int differs;
		} fixed[] = {
			{ "redis", strcmp(next.redis_url, d->cfg.redis_url) != 0 },
			{ "listen", strcmp(next.listen_host, d->cfg.listen_host) != 0 ||
					    next.listen_port != d->cfg.listen_port },
			{ "prefix", strcmp(next.prefix, d->cfg.prefix) != 0 },
			{ "batch_size", next.batch_size != d->cfg.batch_size },
			{ "redis_timeout_ms", next.redis_timeout_ms != d->cfg.redis_timeout_ms },
			{ "max_body_bytes", next.max_body_bytes != d->cfg.max_body_bytes },
			{ "max_connections", next.max_connections != d->cfg.max_connections },
			{ "idle_timeout_s", next.idle_timeout_s != d->cfg.idle_timeout_s },
			{ "max_connections_per_ip", next.max_connections_per_ip != d->cfg.max_connections_per_ip },
			{ "header_timeout_ms", next.header_timeout_ms != d->cfg.header_timeout_ms },
			{ "admin_threads", next.admin_threads != d->cfg.admin_threads },
			{ "admin.tls_cert", !same_str(next.admin_tls_cert, d->cfg.admin_tls_cert) },
			{ "admin.tls_key", !same_str(next.admin_tls_key, d->cfg.admin_tls_key) },
			{ "admin.auth_reads", next.admin_auth_reads != d->cfg.admin_auth_reads },
			{ "layouts", next.nlayouts != d->cfg.nlayouts },
			{ "id", next.id && strcmp(next.id, d->id) != 0 },
			{ "lease_ttl_ms", next.lease_ttl_ms != d->cfg.lease_ttl_ms },
			{ "log_format", next.log_format != d->cfg.log_format },
		};

		for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
			if (fixed[i].differs)
				snprintf(changed + strlen(changed), sizeof(changed) - strlen(changed), "%s%s",
					 *changed ? "," : "", fixed[i].name);
		if (*changed)
			log_event(LOG_WARN, "reload_partial", "changed=%s applies=next_start", changed);
	}
	/* what applies now */
	d->cfg.drain_interval_ms = next.drain_interval_ms;
	d->cfg.prune_interval_ms = next.prune_interval_ms;
	d->cfg.sweep_budget_ms = next.sweep_budget_ms;
	d->cfg.log_level = next.log_level;
	d->cfg.max_clock_skew_ms = next.max_clock_skew_ms;
	worker_set_skew(d->worker, d->cfg.max_clock_skew_ms); /* every copy checked at the next tick */
	log_set_level(next.log_level);
	interval[WORKER_DRAIN] = d->cfg.drain_interval_ms;
	interval[WORKER_PRUNE] = d->cfg.prune_interval_ms;
	for (int j = 0; j < WORKER__JOBS; j++) {
		sched_set_period(d->sched, d->jobs[j].sched_idx, interval[j] * 1000);
		d->jobs[j].budget_us = daemon_budget_us(&d->cfg, interval[j]);
	}
	sched_set_period(d->sched, d->lease_idx, daemon_lease_interval_ms(&d->cfg) * 1000);
	/* the file's rules are stored again (an identical rule changes nothing) */
	for (size_t i = 0; i < d->cfg.nrules; i++)
		rule_free(d->cfg.rules[i]);
	free(d->cfg.rules);
	d->cfg.rules = next.rules;
	d->cfg.nrules = next.nrules;
	next.rules = NULL;
	next.nrules = 0;
	if (d->cfg.nrules && seed_start(&d->seed, &d->cfg, 0))
		log_event(LOG_ERROR, "reload_failed", "error=\"out of memory\" rules=not_stored");
	log_event(LOG_INFO, "reloaded", "drain_interval_ms=%lld prune_interval_ms=%lld rules=%zu max_clock_skew_ms=%lld",
		  (long long)d->cfg.drain_interval_ms, (long long)d->cfg.prune_interval_ms, d->cfg.nrules,
		  (long long)d->cfg.max_clock_skew_ms);
	config_free(&next);
}


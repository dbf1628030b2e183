/* Storing the config file's rules in Redis (daemon/seed.h). */
#include "daemon/seed.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "admin/api.h"
#include "core/algorithm.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/reply.h"
#include "core/rulestore.h"

int seed_start(struct seed *s, const struct config *cfg, int mark_only)
{
	s->mark_only = mark_only;
	if (!s->conn && !(s->conn = rconn_new(&cfg->redis, cfg->redis_timeout_ms)))
		return -ENOMEM;
	return 0;
}

void seed_free(struct seed *s)
{
	rconn_free(s->conn);
	s->conn = NULL;
}

/*
 * Store the config file's rules in Redis over `c`: one rulestore_put each (an
 * identical rule changes nothing), then make sure the store has a version.
 * 0, or the first error (an rconn error while Redis is unreachable, -EBUSY
 * while a cluster slot of the store is being moved, -EBADMSG when Redis
 * refused, -EPROTO, -ENOMEM) with a reason in `why` (`cap` bytes).
 * Rules stored before an error stay stored; running it again is safe.
 */
static int seed_rules(struct rconn *c, const struct config *cfg, int mark_only, char *why, size_t cap)
{
	int rc = 0, created = 0, unchanged = 0;

	for (size_t i = 0; i < cfg->nrules && !rc && !mark_only; i++) {
		rc = rulestore_put(c, cfg->prefix, cfg->rules[i], &created, &unchanged);
		/* a replaced rule overwrote what Redis held: maybe an edit made through the API */
		if (!rc)
			log_event(!unchanged && !created ? LOG_WARN : LOG_INFO, "rule_loaded",
				  "rule=%s algorithm=%s change=%s%s", cfg->rules[i]->name,
				  algorithm_name(cfg->rules[i]->algorithm), unchanged ? "none" : created ? "created" : "replaced",
				  !unchanged && !created ? " hint=\"the config file's rule replaced the one stored in Redis "
							   "(an edit through the API is undone: put it in the file too)\"" : "");
	}
	/* identical rules bump nothing: make sure the store has a version again */
	if (!rc)
		rc = rulestore_mark(c, cfg->prefix);
	if (rc == -EIO || rc == -EAGAIN)
		snprintf(why, cap, "redis unavailable: %s", *rconn_errstr(c) ? rconn_errstr(c) : "not connected");
	else if (rc == -ENOSPC)
		snprintf(why, cap, "%s", REPLY_OOM_TEXT);
	else if (rc == -EBUSY)
		snprintf(why, cap, "%s", rconn_strerror(c, rc));
	else if (rc == -EBADMSG)
		snprintf(why, cap, "redis refused the rules (a key of the rule store has another type)");
	else if (rc)
		snprintf(why, cap, "%s", strerror(-rc));
	return rc;
}

int seed_step(struct seed *s, const struct config *cfg)
{
	char why[sizeof(s->why)] = "", q[sizeof(why) + 16];
	int rc;

	if (!s->conn)
		return 0;
	if (!s->started_us)
		s->started_us = clock_mono_us();
	if ((rc = seed_rules(s->conn, cfg, s->mark_only, why, sizeof(why)))) {
		if (!s->failing || strcmp(why, s->why))
			log_event(LOG_WARN, "rules_seed_failed", "reason=%s rules=%zu retry=next_tick%s",
				  log_quote(q, sizeof(q), why, strlen(why)), cfg->nrules,
				  atomic_load(s->ready) == API_RULES_READY ? "" : " admin=not_ready");
		s->failing = 1;
		memcpy(s->why, why, sizeof(why));
		/* not ready yet: /readyz names maxmemory when that is what refuses them */
		if (atomic_load(s->ready) != API_RULES_READY)
			atomic_store(s->ready, rc == -ENOSPC ? API_RULES_OOM : API_RULES_PENDING);
		return rc;
	}
	seed_free(s);
	s->failing = 0;
	if (atomic_load(s->ready) != API_RULES_READY) {
		log_event(LOG_INFO, "rules_ready", "rules=%zu waited_ms=%lld", cfg->nrules,
			  (long long)((clock_mono_us() - s->started_us) / 1000));
		atomic_store(s->ready, API_RULES_READY);
	}
	return 0;
}

/* Until the config's rules are stored again, /readyz and the rule and path routes answer 503 rules_not_loaded. */
static void not_ready(struct seed *s)
{
	if (s->ready)
		atomic_store(s->ready, API_RULES_PENDING);
	s->started_us = 0; /* rules_ready's waited_ms from now */
}

int seed_check_lost(struct seed *s, const struct config *cfg, const struct worker_status *ws)
{
	if (!cfg->nrules || s->conn)
		return 0;
	/* The store has no version at all: Redis lost its data.  With no rules either, store
	 * the config's rules again, as at start.  With its rules kept (on a cluster the
	 * version is on another node than the rules hash, and that node alone came back
	 * empty) only give it a version again: the rules edited through the API stay.  A
	 * store that was only edited keeps its version >= 1. */
	if (ws->rules_lost) {
		/* the rules hash is gone, its version not (on a cluster: two nodes, one back empty) */
		log_event(LOG_WARN, "rules_lost", "reason=\"the rules hash is gone, its version is not\" action=reseed rules=%zu",
			  cfg->nrules);
		not_ready(s);
		return seed_start(s, cfg, 0);
	}
	if (ws->rules_version != 0)
		return 0;
	if (ws->rules > 0)
		log_event(LOG_WARN, "rules_version_lost",
			  "reason=\"the rules store has rules but no version\" action=mark rules=%zu", ws->rules);
	else {
		log_event(LOG_WARN, "rules_lost", "reason=\"the rules store is empty\" action=reseed rules=%zu",
			  cfg->nrules);
		not_ready(s);
	}
	return seed_start(s, cfg, ws->rules > 0);
}

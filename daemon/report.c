/* What the log says of the worker's upkeep (daemon/report.h). */
#include "daemon/report.h"

#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"

void report_skew(const struct worker_status *ws, struct copies_log *l)
{
	char q[200];

	if (ws->skew_ms < 0)
		return;
	if (ws->skew_error[0] && (!l->failing || strcmp(ws->skew_error, l->why))) {
		log_event(LOG_WARN, "skew_sync_failed", "max_clock_skew_ms=%lld shards_pending=%zu reason=%s "
			  "retry=250ms", (long long)ws->skew_ms, ws->skew_pending,
			  log_quote(q, sizeof(q), ws->skew_error, strlen(ws->skew_error)));
		l->failing = 1;
		snprintf(l->why, sizeof(l->why), "%s", ws->skew_error);
	}
	/* another daemon rewrites the copies with its own value: once a minute at most */
	if (ws->skew_conflicts != l->conflicts &&
	    (!l->conflict_us || clock_mono_us() - l->conflict_us >= 60 * 1000000LL)) {
		log_event(LOG_WARN, "skew_conflict", "max_clock_skew_ms=%lld found=%lld conflicts=%llu "
			  "hint=\"another daemon keeps another max_clock_skew_ms: the two rewrite every shard's copy\"",
			  (long long)ws->skew_ms, ws->skew_conflict_ms, (unsigned long long)ws->skew_conflicts);
		l->conflicts = ws->skew_conflicts;
		l->conflict_us = clock_mono_us();
	}
	if (ws->skew_pending == 0 && (ws->skew_written != l->written || l->failing)) {
		log_event(LOG_INFO, "skew_synced", "max_clock_skew_ms=%lld shards_written=%llu",
			  (long long)ws->skew_ms, (unsigned long long)(ws->skew_written - l->written));
		l->written = ws->skew_written;
		l->failing = 0;
	}
}

void report_copies(const struct worker_status *ws, struct copies_log *l)
{
	char q[200], v[100];

	if (!ws->copies_on)
		return;
	log_quote(v, sizeof(v), ws->copies_version, strlen(ws->copies_version));
	if (ws->copies_error[0] && (!l->failing || strcmp(ws->copies_error, l->why))) {
		log_event(LOG_WARN, "rule_copies_sync_failed", "version=%s shards_pending=%zu reason=%s retry=250ms", v,
			  ws->copies_pending, log_quote(q, sizeof(q), ws->copies_error, strlen(ws->copies_error)));
		l->failing = 1;
		snprintf(l->why, sizeof(l->why), "%s", ws->copies_error);
	}
	if (ws->copies_pending == 0 && (ws->copies_written != l->written || l->failing)) {
		log_event(LOG_INFO, "rule_copies_synced", "version=%s shards_written=%llu", v,
			  (unsigned long long)(ws->copies_written - l->written));
		l->written = ws->copies_written;
		l->failing = 0;
	}
}

void report_leases(const struct worker_status *ws, int rc, struct lease_log *l)
{
	const struct worker_lease_status *s = &ws->lease;
	char q[200];

	if (!s->on)
		return;
	if (rc && (!l->failing || strcmp(s->last_error, l->why))) {
		log_event(LOG_WARN, "lease_failed", "id=%s owned=%zu reason=%s", s->id, s->owned,
			  log_quote(q, sizeof(q), s->last_error, strlen(s->last_error)));
		snprintf(l->why, sizeof(l->why), "%s", s->last_error);
	}
	l->failing = rc != 0;
	if (s->repaired != l->repaired) {
		log_event(LOG_WARN, "lease_repaired", "id=%s repaired=%llu last=%s", s->id,
			  (unsigned long long)s->repaired,
			  log_quote(q, sizeof(q), s->repaired_last, strlen(s->repaired_last)));
		l->repaired = s->repaired;
	}
	if (s->duplicate_id != l->duplicate_id &&
	    (!l->duplicate_us || clock_mono_us() - l->duplicate_us >= 60 * 1000000LL)) {
		log_event(LOG_WARN, "duplicate_id", "id=%s refused=%llu last=%s hint=\"another sluiced runs with this "
			  "id: it holds the shards, this one waits; give each daemon its own id\"", s->id,
			  (unsigned long long)s->duplicate_id,
			  log_quote(q, sizeof(q), s->duplicate_last, strlen(s->duplicate_last)));
		l->duplicate_id = s->duplicate_id;
		l->duplicate_us = clock_mono_us();
	}
	if (s->ttl_conflicts != l->ttl_conflicts &&
	    (!l->ttl_conflict_us || clock_mono_us() - l->ttl_conflict_us >= 60 * 1000000LL)) {
		log_event(LOG_WARN, "lease_ttl_conflict", "id=%s lease_ttl_ms=%lld found_pttl_ms=%lld conflicts=%llu "
			  "hint=\"another daemon runs with a longer lease_ttl_ms: each judges the others' deaths by its own, "
			  "so a dead daemon's shards wait for the longest; give every daemon one lease_ttl_ms\"", s->id,
			  (long long)s->ttl_ms, s->ttl_conflict_ms, (unsigned long long)s->ttl_conflicts);
		l->ttl_conflicts = s->ttl_conflicts;
		l->ttl_conflict_us = clock_mono_us();
	}
	if (!l->said || s->owned != l->owned || s->live != l->live) {
		log_event(LOG_INFO, "shards_owned", "id=%s owned=%zu live=%zu acquired=%llu lost=%llu released=%llu",
			  s->id, s->owned, s->live, (unsigned long long)s->acquired, (unsigned long long)s->lost,
			  (unsigned long long)s->released);
		l->owned = s->owned;
		l->live = s->live;
		l->said = 1;
	}
}

/*
 * GET /metrics in the Prometheus text format 0.0.4: build, Redis as the
 * admin API sees it (and the paths registered), the worker's counters and
 * gauges (worker/status.h), and the admin API's own requests by route and
 * status.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "admin/metrics.h"
#include "admin/reply.h"
#include "admin/routes.h"
#include "core/reply.h"
#include "core/shard.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Counters kept per job, one metric each, labelled job="drain"|"prune". */
static const struct {
	const char *name, *help;
	size_t off; /* of the uint64_t in struct worker_job_status */
} job_counters[] = {
	{ "sluice_worker_ticks_total", "Worker ticks (steps) run.", offsetof(struct worker_job_status, steps) },
	{ "sluice_sweeps_total", "Complete sweeps over a job's registries.", offsetof(struct worker_job_status, sweeps) },
	{ "sluice_script_calls_total", "Script calls sent: one per shard called, one per page of a foreign walk.", offsetof(struct worker_job_status, batches) },
	{ "sluice_due_polls_total", "Shards' due index heads read by the rolling poll (ZRANGE, not a script call).", offsetof(struct worker_job_status, polls) },
	{ "sluice_paths_visited_total", "Registry members visited.", offsetof(struct worker_job_status, paths) },
	{ "sluice_paths_emptied_total", "Paths whose state emptied and left the registry.", offsetof(struct worker_job_status, emptied) },
	{ "sluice_paths_unmatched_total", "Paths left alone: no rule, or a rule of another algorithm.", offsetof(struct worker_job_status, unmatched) },
	{ "sluice_paths_skipped_total", "Paths left alone: key of another type, or an empty member.", offsetof(struct worker_job_status, skipped) },
	{ "sluice_paths_failed_total", "Paths a script refused or failed on alone; the rest of their call was maintained.", offsetof(struct worker_job_status, failed) },
	{ "sluice_worker_errors_total", "Worker ticks that failed.", offsetof(struct worker_job_status, errors) },
	{ "sluice_tick_overruns_total", "Ticks skipped because a tick ran past the next.", offsetof(struct worker_job_status, overruns) },
};

/* A layout's `entries`, named by what the worker does to its algorithm (worker_action_name). */
static const struct {
	const char *action, *name, *help;
} action_counters[] = {
	{ "drained", "sluice_drained_entries_total", "Leaky-bucket entries drained by the worker." },
	{ "pruned", "sluice_pruned_entries_total",
	  "Expired entries (sliding log) or sub-window fields (sliding counter) pruned." },
	{ "repaired", "sluice_repaired_counters_total", "Fixed-window counters given the TTL they lacked." },
	{ "reclaimed", "sluice_reclaimed_buckets_total", "Token buckets deleted because they refilled to capacity." },
};

/* One layout's sample `v` of metric `name`.  0 or -ENOMEM. */
static int put_layout_sample(struct strbuf *b, const char *name, const struct worker_layout_status *ls,
			     uint64_t v)
{
	return metrics_printf(b, "%s{algorithm=\"%s\",layout=\"%s\"} %llu\n", name, algorithm_name(ls->algorithm),
		       ls->name, (unsigned long long)v);
}

/* The per-layout counters: entries by action, paths emptied.  0 or -ENOMEM. */
static int put_layouts(struct strbuf *b, const struct worker_status *st)
{
	static const char emptied[] = "sluice_layout_paths_emptied_total";

	for (size_t k = 0; k < NELEM(action_counters); k++) {
		if (metrics_head(b, action_counters[k].name, "counter", action_counters[k].help))
			return -ENOMEM;
		for (size_t i = 0; i < st->nlayouts; i++)
			if (!strcmp(worker_action_name(st->layout[i].algorithm), action_counters[k].action) &&
			    put_layout_sample(b, action_counters[k].name, &st->layout[i], st->layout[i].entries))
				return -ENOMEM;
	}
	if (metrics_head(b, emptied, "counter", "Paths whose state emptied, per layout."))
		return -ENOMEM;
	for (size_t i = 0; i < st->nlayouts; i++)
		if (put_layout_sample(b, emptied, &st->layout[i], st->layout[i].emptied))
			return -ENOMEM;
	return 0;
}

/* job_counters for each job.  0 or -ENOMEM. */
static int put_job_counters(struct strbuf *b, const struct worker_status *st)
{
	for (size_t k = 0; k < NELEM(job_counters); k++) {
		if (metrics_head(b, job_counters[k].name, "counter", job_counters[k].help))
			return -ENOMEM;
		for (int j = 0; j < WORKER__JOBS; j++) {
			const uint64_t *v = (const uint64_t *)((const char *)&st->job[j] + job_counters[k].off);

			if (metrics_printf(b, "%s{job=\"%s\"} %llu\n", job_counters[k].name, worker_job_name((enum worker_job)j),
				    (unsigned long long)*v))
				return -ENOMEM;
		}
	}
	return 0;
}

/* sluice_sweep_duration_seconds, a histogram per job.  0 or -ENOMEM. */
static int put_sweep_histogram(struct strbuf *b, const struct worker_status *st)
{
	if (metrics_head(b, "sluice_sweep_duration_seconds", "histogram", "Duration of complete sweeps."))
		return -ENOMEM;
	for (int j = 0; j < WORKER__JOBS; j++) {
		const struct worker_job_status *js = &st->job[j];
		const char *job = worker_job_name((enum worker_job)j);

		for (int i = 0; i < WORKER_SWEEP_BUCKETS; i++)
			if (metrics_printf(b, "sluice_sweep_duration_seconds_bucket{job=\"%s\",le=\"%g\"} %llu\n", job,
				    worker_sweep_buckets[i], (unsigned long long)js->sweep_hist[i]))
				return -ENOMEM;
		if (metrics_printf(b, "sluice_sweep_duration_seconds_bucket{job=\"%s\",le=\"+Inf\"} %llu\n"
			       "sluice_sweep_duration_seconds_sum{job=\"%s\"} %.6f\n"
			       "sluice_sweep_duration_seconds_count{job=\"%s\"} %llu\n",
			    job, (unsigned long long)js->sweeps, job, js->sweep_seconds, job,
			    (unsigned long long)js->sweeps))
			return -ENOMEM;
	}
	return 0;
}

/*
 * Tick lag, due backlog and the oldest due path's age per job (the age only
 * for a job with layouts of sluice's own), the skew copies, and the
 * worker's gauges: Redis reached, rules held and refused.  0 or -ENOMEM.
 */
static int put_worker_gauges(struct strbuf *b, const struct worker_status *st)
{
	if (metrics_head(b, "sluice_tick_lag_seconds", "gauge", "How late the last tick started."))
		return -ENOMEM;
	for (int j = 0; j < WORKER__JOBS; j++)
		if (metrics_printf(b, "sluice_tick_lag_seconds{job=\"%s\"} %.6f\n", worker_job_name((enum worker_job)j),
			    (double)st->job[j].lag_us / 1e6))
			return -ENOMEM;
	if (metrics_head(b, "sluice_due_backlog_paths", "gauge",
		     "Paths due by now that the last calls of their shards left for later (more were due than "
		     "batch_size)."))
		return -ENOMEM;
	for (int j = 0; j < WORKER__JOBS; j++)
		if (metrics_printf(b, "sluice_due_backlog_paths{job=\"%s\"} %llu\n", worker_job_name((enum worker_job)j),
			    (unsigned long long)st->job[j].due_backlog))
			return -ENOMEM;
	if (metrics_head(b, "sluice_oldest_due_age_seconds", "gauge",
		     "How long the oldest due path known has waited past its due time (0: none waits)."))
		return -ENOMEM;
	for (int j = 0; j < WORKER__JOBS; j++)
		if (st->job[j].oldest_due_age_ms >= 0 &&
		    metrics_printf(b, "sluice_oldest_due_age_seconds{job=\"%s\"} %.3f\n", worker_job_name((enum worker_job)j),
			    (double)st->job[j].oldest_due_age_ms / 1e3))
			return -ENOMEM;
	if (st->skew_ms >= 0 &&
	    (metrics_head(b, "sluice_max_clock_skew_seconds", "gauge",
		      "The skew horizon the worker keeps in every shard's rules copy (max_clock_skew_ms).") ||
	     metrics_printf(b, "sluice_max_clock_skew_seconds %.3f\n", (double)st->skew_ms / 1e3) ||
	     metrics_head(b, "sluice_skew_shards_pending", "gauge",
		      "Shards whose rules copy is not known to hold max_clock_skew_ms (their scripts use the default).") ||
	     metrics_printf(b, "sluice_skew_shards_pending %zu\n", st->skew_pending) ||
	     metrics_head(b, "sluice_skew_conflicts_total", "counter",
		      "Copies found holding another max_clock_skew_ms after holding this daemon's (another daemon's).") ||
	     metrics_printf(b, "sluice_skew_conflicts_total %llu\n", (unsigned long long)st->skew_conflicts)))
		return -ENOMEM;
	if (st->copies_on &&
	    (metrics_head(b, "sluice_rule_copies_pending", "gauge",
		      "Shards whose rules copy is not known to hold the rules' version (scripts there may read others).") ||
	     metrics_printf(b, "sluice_rule_copies_pending %zu\n", st->copies_pending) ||
	     metrics_head(b, "sluice_rule_copies_version", "gauge",
		      "The rules' version the worker brings every shard's rules copy to (0 before the rules loaded).") ||
	     metrics_printf(b, "sluice_rule_copies_version %llu\n", (unsigned long long)st->copies_rules_version) ||
	     metrics_head(b, "sluice_rule_copies_written_total", "counter", "Shards' rules copies written since start.") ||
	     metrics_printf(b, "sluice_rule_copies_written_total %llu\n", (unsigned long long)st->copies_written)))
		return -ENOMEM;
	return metrics_head(b, "sluice_worker_redis_up", "gauge", "1 when the worker's last tick reached Redis.") ||
	       metrics_printf(b, "sluice_worker_redis_up %d\n", st->redis_up) ||
	       metrics_head(b, "sluice_rules_loaded", "gauge", "Rules the worker holds.") ||
	       metrics_printf(b, "sluice_rules_loaded %zu\n", st->rules) ||
	       metrics_head(b, "sluice_rules_invalid", "gauge", "Stored rules that fail validation (skipped).") ||
	       metrics_printf(b, "sluice_rules_invalid %zu\n", st->rules_invalid)
		       ? -ENOMEM : 0;
}

/* stats_each's callback: one rule's three sluice_decisions_total samples.  0 or -ENOMEM. */
static int put_decision(void *arg, const char *name, const uint64_t sums[STATS__DECISIONS])
{
	for (int d = 0; d < STATS__DECISIONS; d++)
		/* a rule name is [A-Za-z0-9_.-]: nothing to escape in the label */
		if (metrics_printf(arg, "sluice_decisions_total{rule=\"%s\",decision=\"%s\"} %llu\n", name,
			    stats_decision_name((enum stats_decision)d), (unsigned long long)sums[d]))
			return -ENOMEM;
	return 0;
}

/*
 * The shards' decision counters summed (core/stats.h: the raw sums, as of the
 * last aggregation, up to STATS_PERIOD_MS old), the client clock lag, and
 * what the last aggregation cost.  0 or -ENOMEM.
 */
static int put_stats(struct strbuf *b, struct stats *s)
{
	struct stats_summary sum;

	stats_summary(s, &sum);
	return metrics_head(b, "sluice_decisions_total", "counter",
			"Client script decisions per rule, summed over the shards' stats hashes.") ||
	       stats_each(s, put_decision, b) ||
	       metrics_head(b, "sluice_client_clock_lag_seconds", "gauge",
			"Largest lag of a client's explicit now behind Redis TIME in the current and previous minute (0: none seen).") ||
	       metrics_printf(b, "sluice_client_clock_lag_seconds %.3f\n", sum.lag_ms > 0 ? (double)sum.lag_ms / 1e3 : 0.0) ||
	       metrics_head(b, "sluice_stats_aggregation_seconds", "gauge",
			"Wall time of the last summing of the 1024 shards' stats hashes.") ||
	       metrics_printf(b, "sluice_stats_aggregation_seconds %.6f\n", (double)sum.last_duration_us / 1e6) ||
	       metrics_head(b, "sluice_stats_shards_skipped", "gauge",
			"Shards whose stats hash the last aggregation could not read (another type): skipped.") ||
	       metrics_printf(b, "sluice_stats_shards_skipped %llu\n", (unsigned long long)sum.shards_skipped)
		       ? -ENOMEM : 0;
}

/*
 * The census of mismatched paths (core/census.h), as of its last complete
 * pass (the per-algorithm gauges only once there was one).  0 or -ENOMEM.
 */
static int put_census(struct strbuf *b, struct census *cs)
{
	struct census_summary s;
	int bad;

	census_summary(cs, &s);
	bad = metrics_head(b, "sluice_census_passes_total", "counter", "Complete passes of the census of mismatched paths.") ||
	      metrics_printf(b, "sluice_census_passes_total %llu\n", (unsigned long long)s.passes);
	if (bad || !s.passes)
		return bad ? -ENOMEM : 0;
	bad = metrics_head(b, "sluice_paths_mismatched", "gauge",
		       "Paths whose recorded parameters differ from the rule matching them, or whose rule is of another algorithm (GET /v1/paths mismatch: true), at the last census pass.");
	for (int a = 0; a < ALG__COUNT && !bad; a++)
		bad = (s.algorithms & (1u << a)) &&
		      metrics_printf(b, "sluice_paths_mismatched{algorithm=\"%s\"} %llu\n", algorithm_name((enum algorithm)a),
			      (unsigned long long)s.mismatched[a]);
	bad = bad || metrics_head(b, "sluice_census_paths", "gauge", "Paths of the own layouts' due indexes the last census pass checked.");
	for (int a = 0; a < ALG__COUNT && !bad; a++)
		bad = (s.algorithms & (1u << a)) &&
		      metrics_printf(b, "sluice_census_paths{algorithm=\"%s\"} %llu\n", algorithm_name((enum algorithm)a),
			      (unsigned long long)s.paths[a]);
	return bad || metrics_head(b, "sluice_census_unmatched_paths", "gauge", "Paths no rule matches, at the last census pass.") ||
	       metrics_printf(b, "sluice_census_unmatched_paths %llu\n", (unsigned long long)s.unmatched) ||
	       metrics_head(b, "sluice_census_last_pass_timestamp_seconds", "gauge", "When the last census pass ended (Redis time, s).") ||
	       metrics_printf(b, "sluice_census_last_pass_timestamp_seconds %.3f\n", (double)s.last_ms / 1e3) ||
	       metrics_head(b, "sluice_census_pass_busy_seconds", "gauge", "Time the worker's steps spent in the last census pass.") ||
	       metrics_printf(b, "sluice_census_pass_busy_seconds %.6f\n", (double)s.last_busy_us / 1e6)
		       ? -ENOMEM : 0;
}

/* The worker's metrics, from one snapshot of its counters.  0 or -ENOMEM. */
static int put_worker(struct strbuf *b, struct worker *w)
{
	struct worker_status st;

	worker_status(w, &st);
	return put_layouts(b, &st) || put_job_counters(b, &st) || put_sweep_histogram(b, &st) ||
	       put_worker_gauges(b, &st) || metrics_put_nodes(b, &st) || metrics_put_leases(b, &st) || (worker_stats(w) && put_stats(b, worker_stats(w))) ||
	       (worker_census(w) && put_census(b, worker_census(w))) ? -ENOMEM : 0;
}

/* sluice_http_requests_total: the counts of api_handle, those not zero.  0 or -ENOMEM. */
static int put_requests(struct strbuf *b, const struct api *a)
{
	if (metrics_head(b, "sluice_http_requests_total", "counter", "Admin API requests by route, method and status."))
		return -ENOMEM;
	/* routes in table order, then (r NULL) the requests no route answered */
	for (size_t i = 0;; i++) {
		const struct api_route *r = api_route(i);
		char status[8];
		/* the route's pattern and method apart; the requests no route answered, of any method */
		const char *route = r ? r->pattern : "unmatched", *method = r ? r->method : "any";

		for (size_t k = 0; k <= API_NSTATUS; k++) {
			uint64_t n = atomic_load_explicit(&a->shared->http[i][k], memory_order_relaxed);

			if (!n)
				continue;
			if (k < API_NSTATUS)
				snprintf(status, sizeof(status), "%d", api_statuses[k]);
			else
				snprintf(status, sizeof(status), "other");
			if (metrics_printf(b, "sluice_http_requests_total{route=\"%s\",method=\"%s\",status=\"%s\"} %llu\n",
					   route, method, status, (unsigned long long)n))
				return -ENOMEM;
		}
		if (!r)
			return 0;
	}
}

/*
 * sluice_http_request_duration_seconds: by route, from its headers read to
 * its answer queued (the wait for a request thread included); the routes
 * that answered at least once.  0 or -ENOMEM.
 */
static int put_durations(struct strbuf *b, const struct api *a)
{
	if (metrics_head(b, "sluice_http_request_duration_seconds", "histogram",
			 "Admin API request durations by route and method, from the request read to its answer queued."))
		return -ENOMEM;
	for (size_t i = 0;; i++) {
		const struct api_route *r = api_route(i);
		const char *route = r ? r->pattern : "unmatched", *method = r ? r->method : "any";
		uint64_t count = atomic_load_explicit(&a->shared->dur_count[i], memory_order_relaxed), cum = 0;

		for (size_t k = 0; count && k <= API_NDURATION; k++) {
			char le[24];

			cum += atomic_load_explicit(&a->shared->dur[i][k], memory_order_relaxed);
			if (k < API_NDURATION)
				snprintf(le, sizeof(le), "%g", api_duration_buckets[k]);
			else
				snprintf(le, sizeof(le), "+Inf");
			/* +Inf is the count, read once, so the buckets never exceed it */
			if (metrics_printf(b, "sluice_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\",le=\"%s\"} %llu\n",
					   route, method, le, (unsigned long long)(k < API_NDURATION && cum < count ? cum : count)))
				return -ENOMEM;
		}
		if (count &&
		    (metrics_printf(b, "sluice_http_request_duration_seconds_sum{route=\"%s\",method=\"%s\"} %.6f\n", route,
				    method, (double)atomic_load_explicit(&a->shared->dur_sum_us[i], memory_order_relaxed) / 1e6) ||
		     metrics_printf(b, "sluice_http_request_duration_seconds_count{route=\"%s\",method=\"%s\"} %llu\n", route,
				    method, (unsigned long long)count)))
			return -ENOMEM;
		if (!r)
			return 0;
	}
}

void route_metrics(struct api *a, struct api_response *res)
{
	struct strbuf b = { 0 };
	int bad = metrics_put_redis(&b, a) || (a->worker && put_worker(&b, a->worker)) || put_requests(&b, a) ||
	      put_durations(&b, a) || metrics_put_process(&b);
	if (bad || !b.p) {
		strbuf_free(&b);
		reply_json(res, 500, NULL);
		return;
	}
	reply_text(res, b.p, "text/plain; version=0.0.4; charset=utf-8");
}

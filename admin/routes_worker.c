/* GET /v1/worker (the worker's counters) and POST /v1/worker/sweep (a full sweep now). */
#include <errno.h>
#include <stdio.h>

#include "admin/reply.h"
#include "admin/routes.h"
#include "core/jsonv.h"

#define SWEEP_WAIT_MS 30000 /* how long POST /v1/worker/sweep waits for the worker */

/* obj[name] = a new object; NULL on ENOMEM. */
static cJSON *add_object(cJSON *obj, const char *name)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddItemToObject(obj, name, o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* obj[name] = v, or null when v < 0 (not applicable).  0 or -ENOMEM. */
static int add_int_or_null(cJSON *obj, const char *name, int64_t v)
{
	if (v >= 0)
		return jsonv_add_int(obj, name, v);
	return cJSON_AddNullToObject(obj, name) ? 0 : -ENOMEM;
}

/* `name`: one job's result of a sweep; `entries` names its entries ("drained", "pruned").  0 or -ENOMEM. */
static int add_result(cJSON *o, const char *name, const char *entries, const struct worker_result *r,
		      int64_t us)
{
	cJSON *j = add_object(o, name);

	return !j || jsonv_add_int(j, "paths", (int64_t)r->paths) || jsonv_add_int(j, entries, (int64_t)r->entries) ||
	       jsonv_add_int(j, "emptied", (int64_t)r->emptied) ||
	       jsonv_add_int(j, "unmatched", (int64_t)r->unmatched) ||
	       jsonv_add_int(j, "skipped", (int64_t)r->skipped) || jsonv_add_int(j, "failed", (int64_t)r->failed) ||
	       jsonv_add_int(j, "batches", (int64_t)r->batches) ||
	       jsonv_add_int(j, "duration_us", us)
		       ? -ENOMEM : 0;
}

/* The answer to a sweep that failed with `rc` (negative errno from worker_request_sweep). */
static void sweep_failed(struct api *a, int rc, struct api_response *res)
{
	struct worker_status st;
	char msg[320];

	if (rc == -ECANCELED) {
		reply_fail(res, 503, "sweep_failed", "sluiced is stopping", NULL);
		return;
	}
	if (rc == -ETIMEDOUT) {
		reply_fail(res, 503, "sweep_timeout", "the sweep did not finish within 30 s; it goes on in the worker",
			   NULL);
		return;
	}
	worker_status(a->worker, &st);
	snprintf(msg, sizeof(msg), "the sweep failed: %s",
		 st.job[WORKER_DRAIN].last_error[0] ? st.job[WORKER_DRAIN].last_error
						    : st.job[WORKER_PRUNE].last_error);
	reply_fail(res, 503, rc == -EIO || rc == -EAGAIN ? "redis_unavailable" : "sweep_failed", msg, NULL);
}

/* Run by the worker's own thread; this one waits up to SWEEP_WAIT_MS. */
void route_sweep(struct api *a, struct api_response *res)
{
	struct worker_result r[WORKER__JOBS];
	int64_t us[WORKER__JOBS];
	cJSON *o;
	int rc;

	if (!a->worker) {
		reply_fail(res, 503, "no_worker", "this process runs no worker", NULL);
		return;
	}
	if ((rc = worker_request_sweep(a->worker, SWEEP_WAIT_MS, r, us))) {
		sweep_failed(a, rc, res);
		return;
	}
	o = cJSON_CreateObject();
	if (o && (add_result(o, "drain", "drained", &r[WORKER_DRAIN], us[WORKER_DRAIN]) ||
		  add_result(o, "prune", "pruned", &r[WORKER_PRUNE], us[WORKER_PRUNE]))) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply_json(res, 200, o);
}

/* jobs[name]: one job's counters; `entries` as in add_result.  0 or -ENOMEM. */
static int add_job(cJSON *jobs, const char *name, const char *entries, const struct worker_job_status *j)
{
	cJSON *o = add_object(jobs, name);

	return !o || jsonv_add_int(o, "ticks", (int64_t)j->steps) || jsonv_add_int(o, "sweeps", (int64_t)j->sweeps) ||
	       jsonv_add_int(o, "batches", (int64_t)j->batches) || jsonv_add_int(o, "polls", (int64_t)j->polls) ||
	       jsonv_add_int(o, "paths", (int64_t)j->paths) ||
	       jsonv_add_int(o, entries, (int64_t)j->entries) || jsonv_add_int(o, "emptied", (int64_t)j->emptied) ||
	       jsonv_add_int(o, "unmatched", (int64_t)j->unmatched) || jsonv_add_int(o, "skipped", (int64_t)j->skipped) ||
	       jsonv_add_int(o, "failed", (int64_t)j->failed) || jsonv_add_int(o, "errors", (int64_t)j->errors) ||
	       jsonv_add_int(o, "last_duration_us", j->last_step_us) ||
	       jsonv_add_int(o, "last_sweep_us", j->last_sweep_us) || jsonv_add_int(o, "lag_us", j->lag_us) ||
	       jsonv_add_int(o, "max_lag_us", j->max_lag_us) || jsonv_add_int(o, "overruns", (int64_t)j->overruns) ||
	       !cJSON_AddBoolToObject(o, "in_sweep", j->in_sweep) ||
	       jsonv_add_int(o, "due_backlog", (int64_t)j->due_backlog) ||
	       add_int_or_null(o, "oldest_due_age_ms", j->oldest_due_age_ms) ||
	       !cJSON_AddBoolToObject(o, "failing", j->failing) ||
	       add_int_or_null(o, "failing_since_ms", j->failing ? j->failing_since_ms : -1) ||
	       add_int_or_null(o, "recovered_ms", j->recovered_ms ? j->recovered_ms : -1) ||
	       add_int_or_null(o, "last_outage_ms", j->last_outage_ms) ||
	       !(j->last_error[0] ? cJSON_AddStringToObject(o, "last_error", j->last_error)
				  : cJSON_AddNullToObject(o, "last_error"))
		       ? -ENOMEM : 0;
}

/*
 * "skew": the skew horizon the worker keeps in every shard's rules copy
 * (null when it keeps none), how many copies are not known to hold it,
 * how many it wrote since start, and why the last write or check failed.
 * 0 or -ENOMEM.
 */
static int add_skew(cJSON *o, const struct worker_status *st)
{
	cJSON *k = add_object(o, "skew");

	return !k ||
	       add_int_or_null(k, "max_clock_skew_ms", st->skew_ms) ||
	       jsonv_add_int(k, "shards_pending", (int64_t)st->skew_pending) ||
	       jsonv_add_int(k, "shards_written", (int64_t)st->skew_written) ||
	       jsonv_add_int(k, "conflicts", (int64_t)st->skew_conflicts) ||
	       !(st->skew_error[0] ? cJSON_AddStringToObject(k, "last_error", st->skew_error)
				   : cJSON_AddNullToObject(k, "last_error"))
		       ? -ENOMEM : 0;
}

/*
 * "rule_copies": the store version ("<epoch>:<version>", as in every
 * copy's ":version") the worker brings every shard's rules copy to (null
 * when it keeps none, "" before the rules loaded), how many copies are not
 * known to hold it, how many it wrote since start, and why the last write
 * or check failed.  0 or -ENOMEM.
 */
static int add_copies(cJSON *o, const struct worker_status *st)
{
	cJSON *k = add_object(o, "rule_copies");

	return !k ||
	       !(st->copies_on ? cJSON_AddStringToObject(k, "version", st->copies_version)
			       : cJSON_AddNullToObject(k, "version")) ||
	       jsonv_add_int(k, "shards_pending", (int64_t)st->copies_pending) ||
	       jsonv_add_int(k, "shards_written", (int64_t)st->copies_written) ||
	       !(st->copies_error[0] ? cJSON_AddStringToObject(k, "last_error", st->copies_error)
				     : cJSON_AddNullToObject(k, "last_error"))
		       ? -ENOMEM : 0;
}

/*
 * "leases": the shards this daemon maintains among several (DESIGN.md,
 * "Several daemons"): its id, the TTL, the shards held, the daemons alive,
 * every member of <prefix>daemons with how long ago it was heard from, and
 * the lease counters.  null when the worker runs without leases.  0 or -ENOMEM.
 */
static int add_leases(cJSON *o, const struct worker_status *st)
{
	const struct worker_lease_status *l = &st->lease;
	cJSON *k, *peers;

	if (!l->on)
		return cJSON_AddNullToObject(o, "leases") ? 0 : -ENOMEM;
	if (!(k = add_object(o, "leases")) || !cJSON_AddStringToObject(k, "id", l->id) ||
	    jsonv_add_int(k, "ttl_ms", l->ttl_ms) || jsonv_add_int(k, "owned", (int64_t)l->owned) ||
	    jsonv_add_int(k, "live", (int64_t)l->live) || !(peers = cJSON_AddArrayToObject(k, "peers")))
		return -ENOMEM;
	for (size_t i = 0; i < l->npeers; i++) {
		cJSON *p = cJSON_CreateObject();

		if (!p || !cJSON_AddItemToArray(peers, p) || !cJSON_AddStringToObject(p, "id", l->peer[i].id) ||
		    !cJSON_AddBoolToObject(p, "alive", l->peer[i].alive) ||
		    jsonv_add_int(p, "last_seen_ms", l->peer[i].last_seen_ms))
			return -ENOMEM;
	}
	return jsonv_add_int(k, "acquired", (int64_t)l->acquired) || jsonv_add_int(k, "refused", (int64_t)l->refused) ||
	       jsonv_add_int(k, "lost", (int64_t)l->lost) || jsonv_add_int(k, "fenced", (int64_t)l->fenced) ||
	       jsonv_add_int(k, "released", (int64_t)l->released) ||
	       jsonv_add_int(k, "heartbeats", (int64_t)l->heartbeats) ||
	       jsonv_add_int(k, "repaired", (int64_t)l->repaired) ||
	       !(l->repaired_last[0] ? cJSON_AddStringToObject(k, "repaired_last", l->repaired_last)
				     : cJSON_AddNullToObject(k, "repaired_last")) ||
	       jsonv_add_int(k, "ttl_conflicts", (int64_t)l->ttl_conflicts) ||
	       jsonv_add_int(k, "duplicate_id", (int64_t)l->duplicate_id) ||
	       !(l->duplicate_last[0] ? cJSON_AddStringToObject(k, "duplicate_last", l->duplicate_last)
				      : cJSON_AddNullToObject(k, "duplicate_last")) ||
	       !(l->last_error[0] ? cJSON_AddStringToObject(k, "last_error", l->last_error)
				  : cJSON_AddNullToObject(k, "last_error"))
		       ? -ENOMEM : 0;
}

/* The scripts' skew horizon when the worker keeps none in the copies (lua/lib/skew.lua's default). */
#define SCRIPTS_DEFAULT_SKEW_MS 10000
/* The lag is warned about above this share of the skew horizon. */
#define LAG_WARN_SHARE 0.8

/*
 * "clock_lag": the largest lag of a client's explicit now behind Redis TIME
 * in the current and previous minute (core/stats.h; null when none was seen
 * or the worker sums no stats), the skew horizon it is held against, and a
 * warning when it exceeds LAG_WARN_SHARE of it (a client lagging past the
 * horizon is served at the path's time mark, so it is admitted less than its
 * clock says).  "decisions": how the summing of the shards' stats goes.
 * 0 or -ENOMEM.
 */
static int add_stats(cJSON *o, struct stats *s, const struct worker_status *st)
{
	struct stats_summary sum = { .last_ms = -1, .lag_ms = -1 };
	int64_t horizon = st->skew_ms >= 0 ? st->skew_ms : SCRIPTS_DEFAULT_SKEW_MS;
	cJSON *l = add_object(o, "clock_lag"), *d;
	char warn[200] = "";

	if (s)
		stats_summary(s, &sum);
	if (sum.lag_ms >= 0 && (double)sum.lag_ms > LAG_WARN_SHARE * (double)horizon)
		snprintf(warn, sizeof(warn),
			 "a client's clock lags Redis TIME by %lld ms, over 80%% of max_clock_skew_ms (%lld): "
			 "past it, its calls are served at the paths' time marks",
			 (long long)sum.lag_ms, (long long)horizon);
	if (!l || add_int_or_null(l, "lag_ms", sum.lag_ms) || jsonv_add_int(l, "max_clock_skew_ms", horizon) ||
	    !(warn[0] ? cJSON_AddStringToObject(l, "warning", warn) : cJSON_AddNullToObject(l, "warning")))
		return -ENOMEM;
	if (!s)
		return cJSON_AddNullToObject(o, "decisions") ? 0 : -ENOMEM;
	d = add_object(o, "decisions");
	return !d || jsonv_add_int(d, "aggregations", (int64_t)sum.aggregations) ||
	       jsonv_add_int(d, "failures", (int64_t)sum.failures) ||
	       add_int_or_null(d, "last_ms", sum.last_ms) ||
	       jsonv_add_int(d, "last_duration_us", sum.last_duration_us) ||
	       jsonv_add_int(d, "round_trips", (int64_t)sum.last_round_trips) ||
	       jsonv_add_int(d, "rules", (int64_t)sum.names) ||
	       jsonv_add_int(d, "shards_skipped", (int64_t)sum.shards_skipped) ||
	       jsonv_add_int(d, "fields_ignored", (int64_t)sum.fields_ignored) ||
	       jsonv_add_int(d, "names_dropped", (int64_t)sum.names_dropped) ||
	       jsonv_add_int(d, "lag_fields_deleted", (int64_t)sum.lag_fields_deleted) ||
	       !(sum.last_error[0] ? cJSON_AddStringToObject(d, "last_error", sum.last_error)
				   : cJSON_AddNullToObject(d, "last_error"))
		       ? -ENOMEM : 0;
}

/*
 * "census": the last complete pass of the census of mismatched paths
 * (core/census.h) and the progress of the current one; null when the
 * worker keeps none.  0 or -ENOMEM.
 */
static int add_census(cJSON *o, struct census *cs)
{
	struct census_summary s;
	uint64_t paths = 0;
	cJSON *j, *m;

	if (!cs)
		return cJSON_AddNullToObject(o, "census") ? 0 : -ENOMEM;
	census_summary(cs, &s);
	if (!(j = add_object(o, "census")) || !cJSON_AddBoolToObject(j, "in_pass", s.in_pass) ||
	    jsonv_add_int(j, "pass_paths", (int64_t)s.pass_paths) || jsonv_add_int(j, "passes", (int64_t)s.passes) ||
	    add_int_or_null(j, "last_pass_ms", s.last_ms) || !(m = add_object(j, "mismatched")))
		return -ENOMEM;
	for (int a = 0; a < ALG__COUNT; a++) {
		if (!(s.algorithms & (1u << a)))
			continue;
		paths += s.paths[a];
		if (jsonv_add_int(m, algorithm_name((enum algorithm)a), (int64_t)s.mismatched[a]))
			return -ENOMEM;
	}
	return jsonv_add_int(j, "paths", (int64_t)paths) || jsonv_add_int(j, "unmatched", (int64_t)s.unmatched) ||
	       jsonv_add_int(j, "unreadable", (int64_t)s.unreadable) ||
	       jsonv_add_int(j, "registries_skipped", (int64_t)s.registries_skipped) ||
	       jsonv_add_int(j, "last_span_ms", s.passes ? s.last_span_ms : 0) ||
	       jsonv_add_int(j, "last_busy_us", s.last_busy_us) || jsonv_add_int(j, "steps", (int64_t)s.last_steps) ||
	       jsonv_add_int(j, "round_trips", (int64_t)s.last_round_trips) ||
	       jsonv_add_int(j, "restarts", (int64_t)s.restarts) || jsonv_add_int(j, "abandoned", (int64_t)s.abandoned) ||
	       !(s.last_error[0] ? cJSON_AddStringToObject(j, "last_error", s.last_error)
				 : cJSON_AddNullToObject(j, "last_error"))
		       ? -ENOMEM : 0;
}

/* Both jobs' counters added up, the last error, the rules the worker holds.  0 or -ENOMEM. */
static int add_totals(cJSON *o, const struct worker_status *st)
{
	const struct worker_job_status *drain = &st->job[WORKER_DRAIN], *prune = &st->job[WORKER_PRUNE];
	cJSON *rules;

	return !cJSON_AddBoolToObject(o, "redis_up", st->redis_up) ||
	       jsonv_add_int(o, "connects", (int64_t)st->connects) ||
	       jsonv_add_int(o, "ticks", (int64_t)(drain->steps + prune->steps)) ||
	       jsonv_add_int(o, "drained", (int64_t)drain->entries) ||
	       jsonv_add_int(o, "pruned", (int64_t)prune->entries) ||
	       jsonv_add_int(o, "errors", (int64_t)(drain->errors + prune->errors)) ||
	       /* the top-level last_error: any job's (drain first) until that job succeeds again */
	       !(drain->last_error[0] ? cJSON_AddStringToObject(o, "last_error", drain->last_error)
		 : prune->last_error[0] ? cJSON_AddStringToObject(o, "last_error", prune->last_error)
					: cJSON_AddNullToObject(o, "last_error")) ||
	       !(rules = cJSON_AddObjectToObject(o, "rules")) ||
	       jsonv_add_int(rules, "version", (int64_t)st->rules_version) ||
	       jsonv_add_int(rules, "loaded", (int64_t)st->rules) ||
	       jsonv_add_int(rules, "invalid", (int64_t)st->rules_invalid)
		       ? -ENOMEM : 0;
}

/* "redis": the mode, and per primary what the worker's connection sees of it.  0 or -ENOMEM. */
static int add_nodes(cJSON *o, const struct worker_status *st)
{
	cJSON *r = cJSON_AddObjectToObject(o, "redis"), *nodes;

	if (!r || !cJSON_AddStringToObject(r, "mode", st->cluster ? "cluster" : st->nprimaries ? "single" : "unknown") ||
	    jsonv_add_int(r, "primaries", (int64_t)st->nprimaries) || !(nodes = cJSON_AddArrayToObject(r, "nodes")))
		return -ENOMEM;
	for (size_t i = 0; i < st->nnodes; i++) {
		const struct rconn_node_info *n = &st->node[i];
		cJSON *e = cJSON_CreateObject();

		if (!e || !cJSON_AddItemToArray(nodes, e))
			return cJSON_Delete(e), -ENOMEM;
		if (!cJSON_AddStringToObject(e, "address", n->addr) || jsonv_add_int(e, "slots", (int64_t)n->slots) ||
		    !cJSON_AddStringToObject(e, "ranges", n->ranges) || !cJSON_AddBoolToObject(e, "up", n->up) ||
		    jsonv_add_int(e, "connects", (int64_t)n->connects) || jsonv_add_int(e, "errors", (int64_t)n->errors) ||
		    jsonv_add_int(e, "moved", (int64_t)n->moved) || jsonv_add_int(e, "ask", (int64_t)n->ask) ||
		    jsonv_add_int(e, "tryagain", (int64_t)n->tryagain) ||
		    !(n->err[0] ? cJSON_AddStringToObject(e, "last_error", n->err) : cJSON_AddNullToObject(e, "last_error")))
			return -ENOMEM;
	}
	return 0;
}

/* "layouts": {name: counters} for each layout.  0 or -ENOMEM. */
static int add_layouts(cJSON *o, const struct worker_status *st)
{
	cJSON *lays = cJSON_AddObjectToObject(o, "layouts");

	if (!lays)
		return -ENOMEM;
	for (size_t i = 0; i < st->nlayouts; i++) {
		const struct worker_layout_status *ls = &st->layout[i];
		cJSON *lo = cJSON_AddObjectToObject(lays, ls->name);

		if (!lo || !cJSON_AddStringToObject(lo, "algorithm", algorithm_name(ls->algorithm)) ||
		    jsonv_add_int(lo, "paths", (int64_t)ls->paths) ||
		    jsonv_add_int(lo, worker_action_name(ls->algorithm), (int64_t)ls->entries) ||
		    jsonv_add_int(lo, "emptied", (int64_t)ls->emptied) ||
		    jsonv_add_int(lo, "unmatched", (int64_t)ls->unmatched) ||
		    jsonv_add_int(lo, "skipped", (int64_t)ls->skipped) ||
		    jsonv_add_int(lo, "failed", (int64_t)ls->failed))
			return -ENOMEM;
	}
	return 0;
}

/* "history": the period and the samples, oldest first (worker/status.h).  0 or -ENOMEM. */
static int add_history(cJSON *o, const struct worker_status *st)
{
	cJSON *h = add_object(o, "history"), *arr;

	if (!h || jsonv_add_int(h, "period_ms", WORKER_HISTORY_PERIOD_MS) ||
	    !(arr = cJSON_AddArrayToObject(h, "samples")))
		return -ENOMEM;
	for (size_t i = 0; i < st->nhistory; i++) {
		const struct worker_sample *s = &st->history[i];
		cJSON *e = cJSON_CreateObject();

		if (!e || !cJSON_AddItemToArray(arr, e))
			return cJSON_Delete(e), -ENOMEM;
		if (jsonv_add_int(e, "t_ms", s->t_ms) || jsonv_add_int(e, "ticks", (int64_t)s->ticks) ||
		    jsonv_add_int(e, "drained", (int64_t)s->drained) || jsonv_add_int(e, "pruned", (int64_t)s->pruned) ||
		    jsonv_add_int(e, "errors", (int64_t)s->errors) ||
		    jsonv_add_int(e, "due_backlog", (int64_t)s->due_backlog))
			return -ENOMEM;
	}
	return 0;
}

void route_worker(struct api *a, struct api_response *res)
{
	struct worker_status st;
	cJSON *o, *jobs;

	if (!a->worker) {
		reply_fail(res, 503, "no_worker", "this process runs no worker", NULL);
		return;
	}
	worker_status(a->worker, &st);
	if (!(o = cJSON_CreateObject())) {
		reply_json(res, 500, NULL);
		return;
	}
	if (add_totals(o, &st) || !(jobs = cJSON_AddObjectToObject(o, "jobs")) ||
	    add_job(jobs, "drain", "drained", &st.job[WORKER_DRAIN]) ||
	    add_job(jobs, "prune", "pruned", &st.job[WORKER_PRUNE]) || add_layouts(o, &st) || add_nodes(o, &st) ||
	    add_skew(o, &st) ||
	    add_copies(o, &st) || add_leases(o, &st) || add_stats(o, worker_stats(a->worker), &st) ||
	    add_census(o, worker_census(a->worker)) || add_history(o, &st)) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply_json(res, 200, o);
}

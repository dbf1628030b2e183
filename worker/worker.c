/*
 * The worker's lifetime, its copy of the rules, and whole sweeps.  Which job
 * maintains which layout comes from each layout's algorithm table
 * (core/algorithm.h): the drain job runs at the leak's pace (every 100 ms by
 * default), everything else only bounds memory and repairs, at the prune
 * job's slower pace.
 */
#include "worker/worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/rulestore.h"
#include "worker/internal.h"

const char *worker_action_name(enum algorithm a)
{
	const struct alg_ops *alg = algorithm_get(a);

	return alg ? alg->action : NULL;
}

const char *worker_job_name(enum worker_job j)
{
	static const char *const names[WORKER__JOBS] = { "drain", "prune" };

	return (unsigned)j < WORKER__JOBS ? names[j] : NULL;
}

static enum worker_job job_of(const struct layout *l)
{
	return algorithm_get(l->algorithm)->job == ALG_JOB_DRAIN ? WORKER_DRAIN : WORKER_PRUNE;
}

struct worker *worker_new(const struct worker_config *cfg)
{
	struct worker *w;

	if (!cfg->redis || !cfg->prefix || cfg->batch_size == 0 || cfg->nlayouts > WORKER_MAX_LAYOUTS)
		return NULL;
	if (!(w = calloc(1, sizeof(*w))))
		return NULL;
	if (requests_init(w)) {
		free(w);
		return NULL;
	}
	w->batch_size = cfg->batch_size;
	w->st.nlayouts = cfg->nlayouts;
	for (size_t i = 0; i < cfg->nlayouts; i++) {
		struct job_state *js = &w->jobs[job_of(&cfg->layouts[i])];

		snprintf(w->st.layout[i].name, sizeof(w->st.layout[i].name), "%s", cfg->layouts[i].name);
		w->st.layout[i].algorithm = cfg->layouts[i].algorithm;
		if (!cfg->layouts[i].foreign) {
			struct due_state *nd = realloc(js->due, (js->ndue + 1) * sizeof(*nd));

			if (!nd) {
				worker_free(w);
				return NULL;
			}
			js->due = nd;
			due_init(&js->due[js->ndue++], &cfg->layouts[i], i);
			continue;
		}
		js->layouts[js->nlayouts] = &cfg->layouts[i];
		js->index[js->nlayouts++] = i;
	}
	for (int j = 0; j < WORKER__JOBS; j++)
		strcpy(w->jobs[j].cursor, "0");
	w->conn = rconn_new(cfg->redis, cfg->timeout_ms);
	w->prefix = strdup(cfg->prefix);
	w->batch = rbatch_new();
	if (!w->conn || !w->prefix || !w->batch) {
		worker_free(w);
		return NULL;
	}
	return w;
}

void worker_free(struct worker *w)
{
	if (!w)
		return;
	for (int j = 0; j < WORKER__JOBS; j++)
		free(w->jobs[j].due);
	rconn_free(w->conn);
	rbatch_free(w->batch);
	ruleset_clear(&w->rules);
	job_batch_free(&w->jb);
	free(w->prefix);
	requests_destroy(w);
	free(w);
}

static int refresh_rules(struct worker *w)
{
	int changed = 0, rc;
	size_t invalid = 0;

	rc = rulestore_refresh(w->conn, w->prefix, &w->rules, 0, &changed, &invalid);
	if (!rc && changed)
		w->rules_invalid = invalid;
	return rc;
}

int worker_step(struct worker *w, enum worker_job job, int64_t budget_us, int64_t now_ms,
		struct worker_result *res)
{
	struct job_state *js;
	struct worker_result r = { 0 };
	struct worker_layout_status lr[WORKER_MAX_LAYOUTS] = { 0 };
	int64_t start = clock_mono_us();
	char now[24] = "";
	int rc;

	if ((unsigned)job >= WORKER__JOBS)
		return -EINVAL;
	js = &w->jobs[job];
	if (now_ms >= 0)
		snprintf(now, sizeof(now), "%lld", (long long)now_ms);
	if ((rc = refresh_rules(w))) {
		status_error(w, job, "rules: %s", rconn_strerror(w->conn, rc));
	} else {
		int full = js->full, due_done;

		js->full = 0;
		if (!js->in_sweep) {
			js->in_sweep = 1;
			js->sweep_start_us = start;
		}
		/* sluice's own layouts by due index first (cheap), then the foreign walk */
		due_done = rc = due_step(w, job, start, budget_us, now_ms, full, &r, lr);
		if (rc >= 0 && js->nlayouts == 0) {
			rc = 0;
			r.sweep_done = due_done;
		} else if (rc >= 0) {
			rc = walk_step(w, job, start, budget_us, now, &r, lr);
			r.sweep_done = r.sweep_done && due_done;
		}
		if (r.sweep_done)
			js->in_sweep = 0;
	}
	status_fold(w, job, rc, start, &r, lr);
	if (res)
		*res = r;
	return rc;
}

int worker_sweep(struct worker *w, enum worker_job job, int64_t now_ms, struct worker_result *res)
{
	struct worker_result total = { 0 }, r;
	int rc;

	if ((unsigned)job >= WORKER__JOBS)
		return -EINVAL;
	/* start from the top: a whole sweep, whatever a budgeted step left part-way */
	w->jobs[job].full = 1;
	w->jobs[job].layout = 0;
	w->jobs[job].in_sweep = 0;
	strcpy(w->jobs[job].cursor, "0");
	do {
		if ((rc = worker_step(w, job, INT64_MAX, now_ms, &r)))
			return rc;
		total.paths += r.paths;
		total.entries += r.entries;
		total.emptied += r.emptied;
		total.unmatched += r.unmatched;
		total.skipped += r.skipped;
		total.batches += r.batches;
	} while (!r.sweep_done);
	total.sweep_done = 1;
	if (res)
		*res = total;
	return 0;
}

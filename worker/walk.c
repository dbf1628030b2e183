/*
 * One budgeted step of a job: page after page of each layout's registry
 * (core/walk.h), each page's job script call sent in the same pipeline as
 * the next page's SSCAN, so a step costs one round trip per page and never
 * one per path.  The cursor is committed only once a page's work is done,
 * so a failed step resumes where it failed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/walk.h"
#include "worker/internal.h"

/*
 * Past the current keyspace: a SCAN layout's next primary (`whole` 0), else
 * the next layout from its start, or the end of the sweep (1).
 */
static int next_layout(struct worker *w, struct job_state *js, int whole)
{
	strcpy(js->cursor, "0");
	if (!whole && js->layouts[js->layout]->scan && ++js->node < rconn_primaries(w->conn))
		return 0;
	js->node = 0;
	if (++js->layout < js->nlayouts)
		return 0;
	js->layout = 0;
	return 1;
}

static void add_page_counts(struct worker_layout_status *ls, const struct worker_result *r,
			    const struct worker_result *base)
{
	ls->paths += r->paths - base->paths;
	ls->unmatched += r->unmatched - base->unmatched;
	ls->skipped += r->skipped - base->skipped;
}

/* The first failure of the step (failed path or page) to last_error and *failed; later ones are only counted. */
static void note_failure(struct worker *w, enum worker_job job, int *failed, int rc, const char *fmt,
			 const char *why)
{
	if (*failed)
		return;
	status_error(w, job, fmt, why);
	*failed = rc;
}

int walk_step(struct worker *w, enum worker_job job, int64_t start_us, int64_t budget_us, const char *now,
	      struct worker_result *r, struct worker_layout_status lr[WORKER_MAX_LAYOUTS], int *failed)
{
	struct job_state *js = &w->jobs[job];
	struct worker_result base = *r;
	redisReply *page = NULL;
	char why[224];
	int rc;

	rbatch_clear(w->batch);
	if (js->layouts[js->layout]->scan && js->map_epoch != rconn_map_epoch(w->conn)) {
		/* the slot map changed (failover, resharding): the ordinal may name another node
		 * now, so the layout's keyspace walk starts again from the first primary */
		js->node = 0;
		strcpy(js->cursor, "0");
	}
	js->map_epoch = rconn_map_epoch(w->conn);
	if ((rc = walk_queue(w->batch, js->layouts[js->layout], js->node, js->cursor, NULL, w->batch_size)) ||
	    (rc = rbatch_run(w->conn, w->batch)))
		goto fail;
	page = rbatch_take(w->batch, 0);

	for (;;) {
		const struct layout *l = js->layouts[js->layout], *nl = NULL;
		struct worker_layout_status *ls = &lr[js->index[js->layout]];
		const redisReply *members;
		char next[REPLY_CURSOR_MAX];
		const char *ncursor = NULL;
		size_t nnode = 0;
		int more, has_eval = 0, has_scan = 0, ncalls = 0;

		if (walk_page(page, next, &members) && reply_is_moving(page)) {
			/* the registry's slot is being moved (counted per node): the page is read again next step */
			rc = 0;
			goto out;
		}
		if (walk_page(page, next, &members)) {
			status_error(w, job, "SSCAN: %s", reply_describe(page));
			/* a registry of another type: step over its layout, so the next step
			 * goes on with the others instead of failing on this one for good */
			next_layout(w, js, 1);
			rc = reply_errno(page);
			goto out;
		}
		more = !walk_at_end(next);
		if ((rc = job_build(&w->jb, l, &w->rules, members, now, w->skew.on ? w->skew.text : NULL, r)))
			goto fail;
		freeReplyObject(page);
		page = NULL;

		/* where the cursor goes after this page */
		if (more) {
			nl = l;
			ncursor = next;
			nnode = js->node;
		} else if (l->scan && js->node + 1 < rconn_primaries(w->conn)) {
			nl = l; /* the next primary's keyspace */
			ncursor = "0";
			nnode = js->node + 1;
		} else if (js->layout + 1 < js->nlayouts) {
			nl = js->layouts[js->layout + 1];
			ncursor = "0";
		}
		rbatch_clear(w->batch);
		if (w->jb.eligible) {
			if ((ncalls = job_queue(w->batch, &w->jb, l, w->conn, w->prefix)) < 0) {
				rc = ncalls;
				goto fail;
			}
			has_eval = 1;
		}
		if (nl && clock_mono_us() - start_us < budget_us) {
			if ((rc = walk_queue(w->batch, nl, nnode, ncursor, NULL, w->batch_size)))
				goto fail;
			has_scan = 1;
		}
		if (rbatch_len(w->batch) && (rc = rbatch_run(w->conn, w->batch)))
			goto fail;
		add_page_counts(ls, r, &base);
		for (int c = 0; c < ncalls; c++) {
			uint64_t nfailed;
			int frc = job_fold(rbatch_reply(w->batch, (size_t)c), l, r, ls, why, sizeof(why), &nfailed);

			if (frc == -EBUSY) {
				/* its slot is being moved (counted per node): its paths come again next sweep */
			} else if (frc) {
				/* the whole call refused: counted, and the walk goes on past the page
				 * (its paths come again next sweep) instead of failing on it at
				 * every tick */
				char shown[sizeof(why) + 40];

				snprintf(shown, sizeof(shown), "%s page: %s", l->name, why);
				note_failure(w, job, failed, frc, "script: %s", shown);
			} else if (nfailed) {
				note_failure(w, job, failed, -EBADMSG, "path failed: %s", why);
			}
		}
		/* on a cluster, the paths whose keys are gone leave a registry set in another slot */
		if (has_eval && (rc = job_unregister(w->conn, w->batch, &w->jb, l, (size_t)ncalls, r, ls)))
			goto fail;
		base = *r;

		/* commit the cursor only once the page's work is done */
		if (more) {
			snprintf(js->cursor, sizeof(js->cursor), "%s", next);
		} else if (next_layout(w, js, 0)) {
			r->sweep_done = 1;
			break;
		}
		if (!has_scan)
			break; /* over budget: resume from the cursor next step */
		page = rbatch_take(w->batch, (size_t)ncalls + w->jb.nexists);
	}
	rc = 0;
	goto out;
fail:
	/* a SCAN layout's keyspace on a cluster node that is down: the next node's, not this one for ever */
	if ((rc == -EIO || rc == -EAGAIN) && rconn_is_cluster(w->conn) && js->layouts[js->layout]->scan &&
	    next_layout(w, js, 0))
		r->sweep_done = 1;
	if (rc == -EIO || rc == -EAGAIN)
		status_error(w, job, "redis: %s", rconn_errstr(w->conn));
	else if (rc == -ENOMEM)
		status_error(w, job, "%s", "out of memory");
out:
	if (page)
		freeReplyObject(page);
	rbatch_clear(w->batch);
	return rc;
}

/*
 * One page's worth of a job: the batched script call of the layout's
 * algorithm (core/algorithm.h names the script and its per-path arguments)
 * for every path of the page that a rule of that algorithm governs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/walk.h"
#include "worker/internal.h"

int job_build(struct job_batch *jb, const struct layout *l, const struct ruleset *rules,
	      const redisReply *members, const char *now, struct worker_result *r)
{
	const struct alg_ops *alg = algorithm_get(l->algorithm);

	cmdargs_reset(&jb->keys);
	cmdargs_reset(&jb->args);
	jb->eligible = 0;
	if (cmdargs_str(&jb->keys, l->registry) || cmdargs_str(&jb->args, now))
		return -ENOMEM;
	for (size_t i = 0; i < members->elements; i++) {
		const struct rule *rule;
		const char *path;
		size_t plen;

		if (members->element[i]->type != REDIS_REPLY_STRING)
			continue;
		r->paths++;
		if (walk_path(l, members->element[i], &path, &plen)) {
			/* not of the layout's key shape, or "": the script would refuse the whole batch */
			r->skipped++;
			continue;
		}
		rule = ruleset_match(rules, path, plen);
		if (!rule || rule->algorithm != l->algorithm) {
			r->unmatched++;
			continue;
		}
		if (layout_push_key(&jb->keys, l, path, plen, 0) ||
		    (alg->meta && layout_push_key(&jb->keys, l, path, plen, 1)) ||
		    cmdargs_add(&jb->args, path, plen) || alg->job_args(rule, &jb->args))
			return -ENOMEM;
		jb->eligible++;
	}
	/* a foreign log names its score unit, "ms" too: the prune cuts it at now - window
	 * (converted), as its own clients do; sluice's own (no unit) at its time mark */
	if (jb->eligible && l->foreign && alg->score_units &&
	    cmdargs_str(&jb->args, score_unit_name(l->unit)))
		return -ENOMEM;
	return 0;
}

int job_queue(struct rbatch *b, struct job_batch *jb, const struct layout *l)
{
	const char *const *argv;
	const size_t *lens;
	int n = cmdargs_view(&jb->keys, &jb->args, &argv, &lens);

	if (n < 0)
		return -ENOMEM;
	return rbatch_eval(b, algorithm_get(l->algorithm)->job_script, (int)jb->keys.n, n, argv, lens);
}

int job_fold(const redisReply *e, struct worker_result *r, struct worker_layout_status *ls, char *why,
	     size_t cap)
{
	long long entries, emptied, skipped;

	if (reply_int_at(e, 0, &entries) || reply_int_at(e, 1, &emptied)) {
		snprintf(why, cap, "%s", reply_describe(e));
		return reply_errno(e);
	}
	r->entries += (uint64_t)entries;
	r->emptied += (uint64_t)emptied;
	ls->entries += (uint64_t)entries;
	ls->emptied += (uint64_t)emptied;
	if (!reply_int_at(e, 3, &skipped)) {
		r->skipped += (uint64_t)skipped;
		ls->skipped += (uint64_t)skipped;
	}
	r->batches++;
	return 0;
}

void job_batch_free(struct job_batch *jb)
{
	cmdargs_free(&jb->keys);
	cmdargs_free(&jb->args);
}

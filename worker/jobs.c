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

/* Append s[0..len) to out (`cap` bytes, written up to *at, NUL kept), as far as it fits whole; with
 * `encode`, bytes other than printable ASCII (and '%', '"', '\\'; and ' ' when `blank`) as %XX. */
static void put(char *out, size_t cap, size_t *at, const char *s, size_t len, int encode, int blank)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		int plain = !encode || (ch >= 0x20 && ch < 0x7f && ch != '%' && ch != '"' && ch != '\\' &&
					(ch != ' ' || !blank));

		if (*at + (plain ? 1 : 3) >= cap)
			break;
		if (plain) {
			out[(*at)++] = (char)ch;
		} else {
			out[(*at)++] = '%';
			out[(*at)++] = hex[ch >> 4];
			out[(*at)++] = hex[ch & 15];
		}
	}
	out[*at] = '\0';
}

uint64_t job_failures(const redisReply *e, size_t at, const char *layout, char *why, size_t cap)
{
	const redisReply *const *el;
	const char *path = "", *err = "";
	size_t n, plen = 0, elen = 0, w = 0;
	long long failed;
	char tail[48];

	if (cap == 0 || reply_int_at(e, at, &failed) || failed <= 0)
		return 0;
	if (reply_array(e, at + 3, &el, &n) || reply_str(el[at + 1], &path, &plen) ||
	    reply_str(el[at + 2], &err, &elen)) {
		path = err = "";
		plen = elen = 0;
	}
	why[0] = '\0';
	put(why, cap, &w, layout, strlen(layout), 1, 1);
	put(why, cap, &w, " path \"", 7, 0, 0);
	put(why, cap, &w, path, plen, 1, 1);
	put(why, cap, &w, "\": ", 3, 0, 0);
	put(why, cap, &w, err, elen, 1, 0);
	if (failed > 1) {
		snprintf(tail, sizeof(tail), " (and %lld more)", failed - 1);
		put(why, cap, &w, tail, strlen(tail), 0, 0);
	}
	return (uint64_t)failed;
}

int job_fold(const redisReply *e, const struct layout *l, struct worker_result *r, struct worker_layout_status *ls,
	     char *why, size_t cap, uint64_t *nfailed)
{
	long long entries, emptied, skipped;
	uint64_t failed;

	*nfailed = 0;
	if (reply_int_at(e, 0, &entries) || reply_int_at(e, 1, &emptied)) {
		snprintf(why, cap, "%s", reply_describe(e));
		return reply_errno(e);
	}
	failed = job_failures(e, 4, l->name, why, cap);
	r->failed += failed;
	ls->failed += failed;
	*nfailed = failed;
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

/*
 * One page's worth of a job: the batched script call of the layout's
 * algorithm (core/algorithm.h names the script and its per-path arguments)
 * for every path of the page that a rule of that algorithm governs.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/shard.h"
#include "core/slottag.h"
#include "core/walk.h"
#include "worker/internal.h"

/* Room for path index i in the per-path arrays.  0 or -ENOMEM. */
static int room(struct job_batch *jb, size_t i)
{
	size_t cap = jb->cap ? jb->cap : 64;
	size_t *k, *a, *e;
	unsigned *sl;
	unsigned char *d;

	if (i < jb->cap)
		return 0;
	while (cap <= i)
		cap *= 2;
	if (!(k = realloc(jb->kat, cap * sizeof(*k))))
		return -ENOMEM;
	jb->kat = k;
	if (!(a = realloc(jb->aat, cap * sizeof(*a))))
		return -ENOMEM;
	jb->aat = a;
	if (!(sl = realloc(jb->slot, cap * sizeof(*sl))))
		return -ENOMEM;
	jb->slot = sl;
	if (!(d = realloc(jb->done, cap)))
		return -ENOMEM;
	jb->done = d;
	if (!(e = realloc(jb->exists_path, cap * sizeof(*e))))
		return -ENOMEM;
	jb->exists_path = e;
	jb->cap = cap;
	return 0;
}

/* Argument i of `a` as a pointer and a length. */
static const char *arg_at(const struct cmdargs *a, size_t i, size_t *len)
{
	*len = a->len[i];
	return a->buf.p + a->off[i];
}

/* Append arguments [from, to) of `src` to `dst`.  0 or -ENOMEM. */
static int copy_args(struct cmdargs *dst, const struct cmdargs *src, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		size_t n;
		const char *p = arg_at(src, i, &n);

		if (cmdargs_add(dst, p, n))
			return -ENOMEM;
	}
	return 0;
}

int job_build(struct job_batch *jb, const struct layout *l, const struct ruleset *rules,
	      const redisReply *members, const char *now, const char *skew, struct worker_result *r)
{
	const struct alg_ops *alg = layout_ops(l);

	cmdargs_reset(&jb->keys);
	cmdargs_reset(&jb->args);
	jb->eligible = 0;
	/* job_queue counts a page's EXISTS; a page with nothing eligible queues none, and the
	 * walk finds its next page after them (a count left from an earlier page took an EXISTS
	 * reply, or none, for that page: "SSCAN: unexpected reply", the layout skipped) */
	jb->nexists = 0;
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
		/* a foreign layout by the best rule of its algorithm (one path may be kept by
		 * several limiters of different algorithms); a self-described kind by its state */
		rule = alg->self_described ? NULL : ruleset_match_algorithm(rules, path, plen, l->algorithm);
		if (!rule && !alg->self_described) {
			r->unmatched++;
			continue;
		}
		if (alg->side_keys) {
			/* the data key and the keys beside it, in jb->ck (free until job_queue) */
			size_t kl;
			const char *k;
			int rc;

			cmdargs_reset(&jb->ck);
			if (layout_push_key(&jb->ck, l, path, plen, 0))
				return -ENOMEM;
			k = arg_at(&jb->ck, 0, &kl);
			rc = alg->side_keys(k, kl, &jb->ck);
			if (rc == -EINVAL) {
				r->skipped++;
				continue;
			}
			if (rc)
				return rc;
		}
		if (room(jb, jb->eligible))
			return -ENOMEM;
		jb->kat[jb->eligible] = jb->keys.n;
		jb->aat[jb->eligible] = jb->args.n;
		if ((alg->side_keys ? copy_args(&jb->keys, &jb->ck, 0, jb->ck.n) : layout_push_key(&jb->keys, l, path, plen, 0)) ||
		    (alg->meta && !alg->side_keys && layout_push_key(&jb->keys, l, path, plen, 1)) ||
		    cmdargs_add(&jb->args, path, plen) || (rule && alg->job_args(rule, &jb->args)))
			return -ENOMEM;
		{
			size_t kl;
			const char *k = arg_at(&jb->keys, jb->kat[jb->eligible], &kl);

			jb->slot[jb->eligible] = shard_keyslot(k, kl);
		}
		jb->eligible++;
	}
	jb->args_end = jb->args.n;
	/* a foreign log names its score unit, "ms" too: the prune cuts it at now - window
	 * (converted), as its own clients do; sluice's own (no unit) at its time mark */
	if (jb->eligible && l->foreign && alg->score_units &&
	    (cmdargs_str(&jb->args, score_unit_name(l->unit)) || (l->cut_exclusive && cmdargs_str(&jb->args, "exclusive"))))
		return -ENOMEM;
	/* a kind whose clients stamp their own clocks works at the skew horizon */
	if (jb->eligible && alg->self_described && skew && cmdargs_str(&jb->args, skew))
		return -ENOMEM;
	return 0;
}

int job_queue(struct rbatch *b, struct job_batch *jb, const struct layout *l, struct rconn *conn,
	      const char *prefix)
{
	enum script_id script = layout_ops(l)->job_script;
	const char *const *argv;
	const size_t *lens;
	unsigned reg_slot;
	int n, calls = 0;

	jb->nexists = 0;
	if (!rconn_is_cluster(conn)) {
		if ((n = cmdargs_view(&jb->keys, &jb->args, &argv, &lens)) < 0)
			return -ENOMEM;
		return rbatch_eval(b, script, (int)jb->keys.n, n, argv, lens) ? -ENOMEM : 1;
	}
	{
		size_t rl;
		const char *rk = arg_at(&jb->keys, 0, &rl);

		reg_slot = shard_keyslot(rk, rl);
	}
	memset(jb->done, 0, jb->eligible);
	for (size_t i = 0; i < jb->eligible; i++) {
		unsigned slot = jb->slot[i];
		int elsewhere = slot != reg_slot;

		if (jb->done[i])
			continue;
		cmdargs_reset(&jb->ck);
		cmdargs_reset(&jb->ca);
		if (elsewhere) {
			char key[160];
			int kl = snprintf(key, sizeof(key), "%.120s{%s}:no_registry", prefix, slottag_of(slot));

			if (cmdargs_add(&jb->ck, key, (size_t)kl))
				return -ENOMEM;
		} else if (copy_args(&jb->ck, &jb->keys, 0, 1)) {
			return -ENOMEM;
		}
		if (copy_args(&jb->ca, &jb->args, 0, 1))
			return -ENOMEM;
		for (size_t j = i; j < jb->eligible; j++) {
			size_t kend = j + 1 < jb->eligible ? jb->kat[j + 1] : jb->keys.n;
			size_t aend = j + 1 < jb->eligible ? jb->aat[j + 1] : jb->args_end;

			if (jb->done[j] || jb->slot[j] != slot)
				continue;
			jb->done[j] = 1;
			if (copy_args(&jb->ck, &jb->keys, jb->kat[j], kend) || copy_args(&jb->ca, &jb->args, jb->aat[j], aend))
				return -ENOMEM;
			if (elsewhere && !l->scan)
				jb->exists_path[jb->nexists++] = j;
		}
		if (copy_args(&jb->ca, &jb->args, jb->args_end, jb->args.n) ||
		    (n = cmdargs_view(&jb->ck, &jb->ca, &argv, &lens)) < 0 ||
		    rbatch_eval(b, script, (int)jb->ck.n, n, argv, lens))
			return -ENOMEM;
		calls++;
	}
	for (size_t k = 0; k < jb->nexists; k++) {
		size_t kl;
		const char *key = arg_at(&jb->keys, jb->kat[jb->exists_path[k]], &kl);
		const char *argv2[2] = { "EXISTS", key };
		size_t lens2[2] = { 6, kl };

		if (rbatch_cmd(b, 2, argv2, lens2))
			return -ENOMEM;
	}
	return calls;
}

int job_unregister(struct rconn *conn, struct rbatch *b, struct job_batch *jb, const struct layout *l,
		   size_t ncalls, struct worker_result *r, struct worker_layout_status *ls)
{
	const char *const *argv;
	const size_t *lens;
	redisReply *rep;
	long long gone;
	int n, rc;

	if (!jb->nexists)
		return 0;
	cmdargs_reset(&jb->ck);
	if (cmdargs_str(&jb->ck, "SREM") || cmdargs_str(&jb->ck, l->registry))
		return -ENOMEM;
	for (size_t k = 0; k < jb->nexists; k++) {
		long long v;

		/* a node that failed, or an error: the path stays (it comes again next sweep) */
		if (reply_int(rbatch_reply(b, ncalls + k), &v) || v != 0)
			continue;
		if (copy_args(&jb->ck, &jb->args, jb->aat[jb->exists_path[k]], jb->aat[jb->exists_path[k]] + 1))
			return -ENOMEM;
	}
	if (jb->ck.n == 2)
		return 0;
	if ((n = cmdargs_view(&jb->ck, NULL, &argv, &lens)) < 0)
		return -ENOMEM;
	if ((rc = rconn_command(conn, n, argv, lens, &rep)))
		return rc;
	if (!reply_int(rep, &gone) && gone > 0) {
		r->emptied += (uint64_t)gone;
		ls->emptied += (uint64_t)gone;
	}
	freeReplyObject(rep);
	return 0;
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
	cmdargs_free(&jb->ck);
	cmdargs_free(&jb->ca);
	free(jb->kat);
	free(jb->aat);
	free(jb->slot);
	free(jb->done);
	free(jb->exists_path);
	memset(jb, 0, sizeof(*jb));
}

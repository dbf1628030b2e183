/*
 * The census of core/census.h: rounds of ZSCAN pages of the due indexes
 * (core/walk.c), then one pipeline of HMGETs of the paths' recorded
 * parameters, compared with the matching rule by pathview_params_differ.
 */
#include "core/census.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/pathview.h"
#include "core/reply.h"
#include "core/walk.h"

/* The counts of one pass. */
struct tally {
	uint64_t paths[ALG__COUNT], mismatched[ALG__COUNT];
	uint64_t unmatched, unreadable, skipped;
};

struct census {
	const struct layout **layout;   /* the own layouts (borrowed), n of them */
	size_t n;
	unsigned algorithms;

	/* the pass under way (the stepping thread only) */
	int in_pass;
	size_t at;                      /* the layout being walked */
	struct walk_pos pos;            /* in it (a walk over that one layout) */
	size_t width;                   /* shards a round reads */
	struct tally t;
	uint64_t rules_version;         /* the rules it matches against */
	char rules_epoch[40];
	int64_t start_ms, next_ms;      /* now it started at; when the next is due */
	int64_t period_ms;              /* between the starts of two passes (census_set_period) */
	int64_t busy_us;
	uint64_t steps, trips;
	int have_last;                  /* a pass ended: last_version/epoch are its rules */
	uint64_t last_version;
	char last_epoch[40];

	struct walk_pages pages;
	struct rbatch *b;
	struct cmdargs a;
	const struct rule **pend;       /* per queued HMGET: its path's matching rule */
	size_t pend_cap;

	pthread_mutex_t lock;           /* guards sum */
	struct census_summary sum;
};

struct census *census_new(const struct layout *const *layouts, size_t n)
{
	struct census *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return NULL;
	if (pthread_mutex_init(&cs->lock, NULL)) {
		free(cs);
		return NULL;
	}
	if (!(cs->b = rbatch_new()) || (n && !(cs->layout = calloc(n, sizeof(*cs->layout))))) {
		census_free(cs);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (!layouts[i]->foreign) {
			cs->layout[cs->n++] = layouts[i];
			cs->algorithms |= 1u << layouts[i]->algorithm;
		}
	cs->width = CENSUS_WIDTH_MIN;
	cs->period_ms = CENSUS_PERIOD_MS;
	cs->sum.algorithms = cs->algorithms;
	cs->sum.last_ms = -1;
	return cs;
}

void census_free(struct census *cs)
{
	if (!cs)
		return;
	walk_pages_free(&cs->pages);
	rbatch_free(cs->b);
	cmdargs_free(&cs->a);
	free(cs->pend);
	free(cs->layout);
	pthread_mutex_destroy(&cs->lock);
	free(cs);
}

static int same_rules(uint64_t version, const char *epoch, const struct ruleset *rules)
{
	return version == rules->version && strcmp(epoch, rules->epoch) == 0;
}

/* Start a pass from the first layout's shard 0 with `rules`. */
static void begin(struct census *cs, const struct ruleset *rules, int64_t now_ms)
{
	cs->in_pass = 1;
	cs->at = 0;
	walk_start(&cs->pos);
	memset(&cs->t, 0, sizeof(cs->t));
	cs->rules_version = rules->version;
	snprintf(cs->rules_epoch, sizeof(cs->rules_epoch), "%s", rules->epoch);
	cs->start_ms = now_ms;
	cs->next_ms = now_ms + cs->period_ms;
	cs->busy_us = 0;
	cs->steps = cs->trips = 0;
}

/* Queue the HMGET of a path's recorded parameters; 0 or -ENOMEM. */
static int queue_read(struct census *cs, const struct layout *l, const char *path, size_t len,
		      const struct rule *match, size_t k)
{
	const struct alg_ops *alg = algorithm_get(l->algorithm);
	const char *const *argv;
	const size_t *lens;
	int n;

	if (k >= cs->pend_cap) {
		size_t cap = cs->pend_cap ? 2 * cs->pend_cap : 256;
		const struct rule **np = realloc(cs->pend, cap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		cs->pend = np;
		cs->pend_cap = cap;
	}
	cs->pend[k] = match;
	cmdargs_reset(&cs->a);
	if (cmdargs_str(&cs->a, "HMGET") || layout_push_key(&cs->a, l, path, len, alg->recorded_in_meta))
		return -ENOMEM;
	for (unsigned bit = 1; bit & RULE_F__ALL; bit <<= 1)
		if ((alg->fields & bit) && cmdargs_str(&cs->a, algorithm_field_name(bit)))
			return -ENOMEM;
	if ((n = cmdargs_view(&cs->a, NULL, &argv, &lens)) < 0)
		return -ENOMEM;
	return rbatch_cmd(cs->b, n, argv, lens);
}

/* Fold HMGET reply `r` of a path matched by `match` (of l's algorithm) into the tally; 0 or -ENOMEM. */
static int fold_read(struct census *cs, const struct layout *l, const redisReply *r, const struct rule *match)
{
	const struct alg_ops *alg = algorithm_get(l->algorithm);
	const redisReply *rec[PATHVIEW_FIELDS] = { 0 };
	size_t k = 0;
	int any = 0, d;

	if (!r || r->type != REDIS_REPLY_ARRAY) {
		cs->t.unreadable++;
		return 0;
	}
	for (unsigned i = 0, bit = 1; bit & RULE_F__ALL; i++, bit <<= 1) {
		const redisReply *e;

		if (!(alg->fields & bit))
			continue;
		e = k < r->elements ? r->element[k] : NULL;
		k++;
		if (e && e->type == REDIS_REPLY_STRING) {
			rec[i] = e;
			any = 1;
		}
	}
	/* as the listing: a state that records no parameters is not mismatched */
	if (!any)
		return 0;
	if ((d = pathview_params_differ(alg, rec, match)) < 0)
		return d;
	cs->t.mismatched[l->algorithm] += (uint64_t)d;
	return 0;
}

/*
 * One round over the current layout: a pipeline of ZSCAN pages, then one of
 * the HMGETs of their paths.  The pages are taken in order up to the first
 * whose due index goes on (its cursor is where the next round starts; the
 * shards read after it are read again then).  0 or an error.
 */
static int round_trip(struct census *cs, struct rconn *c, const struct ruleset *rules)
{
	const struct layout *l = cs->layout[cs->at];
	size_t take = 0, queued = 0, found = 0;
	int rc;

	if ((rc = walk_read(c, l, 1, &cs->pos, NULL, CENSUS_SCAN_COUNT, cs->width, &cs->pages)))
		return rc == -ERANGE ? -EPROTO : rc;
	cs->trips++;
	rbatch_clear(cs->b);
	while (take < cs->pages.n) {
		const struct walk_page *pg = &cs->pages.page[take++];

		if (pg->error) {
			cs->t.skipped++;
			continue;
		}
		for (size_t m = 0; m < walk_page_len(l, pg); m++) {
			const struct rule *match;
			const char *path;
			size_t len;
			double due;

			if (walk_member(l, pg, m, &path, &len, &due))
				continue;
			found++;
			cs->t.paths[l->algorithm]++;
			if (!(match = ruleset_match(rules, path, len))) {
				cs->t.unmatched++;
				continue;
			}
			if (match->algorithm != l->algorithm) {
				cs->t.mismatched[l->algorithm]++;
				continue;
			}
			if ((rc = queue_read(cs, l, path, len, match, queued++)))
				return rc;
		}
	}
	if (queued) {
		if ((rc = rbatch_run(c, cs->b)))
			return rc;
		cs->trips++;
		for (size_t k = 0; k < queued && !rc; k++) {
			const redisReply *r = rbatch_reply(cs->b, k);

			if (reply_is_oom(r))
				return -ENOSPC;
			rc = fold_read(cs, l, r, cs->pend[k]);
		}
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < take; i++)
		walk_after(l, 1, &cs->pages.page[i], &cs->pos);
	if (cs->pos.done) {
		cs->at++;
		walk_start(&cs->pos);
	}
	/* about CENSUS_ROUND_PATHS paths a round */
	if (found < CENSUS_ROUND_PATHS / 4 && cs->width < CENSUS_WIDTH_MAX)
		cs->width *= 2;
	else if (found > CENSUS_ROUND_PATHS && cs->width > CENSUS_WIDTH_MIN)
		cs->width /= 2;
	return 0;
}

/* Publish the pass that ended at `now_ms`. */
static void finish(struct census *cs, int64_t now_ms)
{
	struct census_summary *s = &cs->sum;

	cs->in_pass = 0;
	cs->have_last = 1;
	cs->last_version = cs->rules_version;
	memcpy(cs->last_epoch, cs->rules_epoch, sizeof(cs->last_epoch));
	pthread_mutex_lock(&cs->lock);
	memcpy(s->paths, cs->t.paths, sizeof(s->paths));
	memcpy(s->mismatched, cs->t.mismatched, sizeof(s->mismatched));
	s->unmatched = cs->t.unmatched;
	s->unreadable = cs->t.unreadable;
	s->registries_skipped = cs->t.skipped;
	s->passes++;
	s->last_ms = now_ms;
	s->last_span_ms = now_ms - cs->start_ms;
	s->last_busy_us = cs->busy_us;
	s->last_steps = cs->steps;
	s->last_round_trips = cs->trips;
	s->in_pass = 0;
	s->pass_paths = 0;
	s->last_error[0] = '\0';
	pthread_mutex_unlock(&cs->lock);
}

/* The pass under way: its progress, or that it was abandoned with `rc`. */
static void progress(struct census *cs, struct rconn *c, int rc, int restarted)
{
	uint64_t n = 0;

	for (int a = 0; a < ALG__COUNT; a++)
		n += cs->t.paths[a];
	pthread_mutex_lock(&cs->lock);
	cs->sum.in_pass = cs->in_pass;
	cs->sum.pass_paths = cs->in_pass ? n : 0;
	cs->sum.restarts += (uint64_t)restarted;
	if (rc) {
		cs->sum.abandoned++;
		snprintf(cs->sum.last_error, sizeof(cs->sum.last_error), "%s", rconn_strerror(c, rc));
	}
	pthread_mutex_unlock(&cs->lock);
}

void census_set_period(struct census *cs, int64_t period_ms)
{
	if (period_ms > 0)
		cs->period_ms = period_ms;
}

int census_step(struct census *cs, struct rconn *c, const struct ruleset *rules, int64_t now_ms, int64_t budget_us,
		int *done)
{
	int64_t t0 = clock_mono_us();
	int rc = 0, restarted = 0;

	if (done)
		*done = 0;
	if (!rules->loaded || !cs->n)
		return 0;
	if (!cs->in_pass) {
		int changed = cs->have_last && !same_rules(cs->last_version, cs->last_epoch, rules);
		/* not yet due: the period (or the retry after an abandoned first pass) runs, and the
		 * clock did not go back past the last start (the start itself: a period set since
		 * applies from the next pass on, shorter or longer) */
		int wait = (cs->have_last || cs->next_ms) && now_ms < cs->next_ms && now_ms >= cs->start_ms;

		if (!changed && wait)
			return 0;
		begin(cs, rules, now_ms);
	} else if (!same_rules(cs->rules_version, cs->rules_epoch, rules)) {
		begin(cs, rules, now_ms);
		restarted = 1;
	}
	cs->steps++;
	do {
		if ((rc = round_trip(cs, c, rules)))
			break;
	} while (cs->at < cs->n && clock_mono_us() - t0 < budget_us);
	cs->busy_us += clock_mono_us() - t0;
	if (rc) {
		cs->in_pass = 0;
		cs->next_ms = now_ms + CENSUS_RETRY_MS;
	} else if (cs->at >= cs->n) {
		finish(cs, now_ms);
		if (done)
			*done = 1;
	}
	progress(cs, c, rc, restarted);
	return rc;
}

void census_summary(struct census *cs, struct census_summary *out)
{
	pthread_mutex_lock(&cs->lock);
	*out = cs->sum;
	pthread_mutex_unlock(&cs->lock);
}

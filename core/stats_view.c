/*
 * core/stats.h's state between aggregations: the rule names (a table in the
 * order first seen, with a sorted index for lookups and the listing), the
 * ring of published samples, the baselines, and the readers' side.  Memory
 * is bounded by STATS_MAX_NAMES x (STATS_RING + 2) x 24 bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats_int.h"

/* strcmp of `len` bytes at `a` (no NUL) against C string `b`. */
static int cmp_name(const char *a, size_t len, const char *b)
{
	size_t bl = strlen(b);
	int c = memcmp(a, b, len < bl ? len : bl);

	return c ? c : len < bl ? -1 : len > bl;
}

/* Position in s->order of the first name >= `name`. */
static size_t lower_bound(const struct stats *s, const char *name, size_t len, int *found)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_name(name, len, s->name[s->order[mid]]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < s->n && cmp_name(name, len, s->name[s->order[lo]]) == 0;
	return lo;
}

/* Room for one more name in every per-name array.  0 or -ENOMEM. */
static int grow(struct stats *s)
{
	size_t cap = s->cap ? s->cap * 2 : 16;
	void *p;

	if (s->n < s->cap)
		return 0;
	if (cap > STATS_MAX_NAMES)
		cap = STATS_MAX_NAMES;
	if (!(p = realloc(s->name, cap * sizeof(s->name[0]))))
		return -ENOMEM;
	s->name = p;
	if (!(p = realloc(s->order, cap * sizeof(s->order[0]))))
		return -ENOMEM;
	s->order = p;
	if (!(p = realloc(s->base, cap * sizeof(s->base[0]))))
		return -ENOMEM;
	s->base = p;
	if (!(p = realloc(s->cur, cap * sizeof(s->cur[0]))))
		return -ENOMEM;
	s->cur = p;
	s->cap = cap;
	return 0;
}

long stats_name_index(struct stats *s, const char *name, size_t len, int add, int *full)
{
	char buf[RULE_NAME_MAX + 1];
	size_t at;
	int found, rc;

	*full = 0;
	at = lower_bound(s, name, len, &found);
	if (found)
		return (long)s->order[at];
	if (!add || len == 0 || len > RULE_NAME_MAX)
		return -1;
	memcpy(buf, name, len);
	buf[len] = '\0';
	if (!rule_name_valid(buf))
		return -1;
	if (s->n == STATS_MAX_NAMES) {
		*full = 1;
		return -1;
	}
	pthread_mutex_lock(&s->lock); /* readers walk the names */
	rc = grow(s);
	if (!rc) {
		memcpy(s->name[s->n], buf, len + 1);
		memset(&s->base[s->n], 0, sizeof(s->base[0]));
		memset(s->cur[s->n], 0, sizeof(s->cur[0]));
		memmove(&s->order[at + 1], &s->order[at], (s->n - at) * sizeof(s->order[0]));
		s->order[at] = (uint32_t)s->n;
		s->n++;
	}
	pthread_mutex_unlock(&s->lock);
	return rc ? -1 : (long)s->n - 1;
}

int stats_rules_loaded(struct stats *s, const struct ruleset *rs)
{
	int rc = 0, full;

	/* first every known name is "not a rule"; the ruleset's rules are marked back */
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n; i++)
		s->base[i].mark = 1;
	pthread_mutex_unlock(&s->lock);
	for (size_t r = 0; r < rs->n; r++) {
		const struct rule *rule = rs->v[r];
		char tag[RULESTORE_ETAG_SIZE];
		long i = stats_name_index(s, rule->name, strlen(rule->name), 1, &full);
		struct base *b;

		if (i < 0 || rulestore_etag(rule, tag)) {
			rc = -ENOMEM;
			continue;
		}
		pthread_mutex_lock(&s->lock);
		b = &s->base[i];
		b->mark = 0;
		if (b->state == BASE_NONE || strcmp(b->tag, tag) != 0) {
			b->state = BASE_PENDING;
			b->after = s->cycles; /* only an aggregation started after this call */
			memcpy(b->tag, tag, sizeof(tag));
			s->want = 1;
		}
		pthread_mutex_unlock(&s->lock);
	}
	/* names still marked are no longer rules: no baseline */
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n; i++)
		if (s->base[i].mark) {
			s->base[i].tag[0] = '\0';
			s->base[i].state = BASE_NONE;
		}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* The newest sample, or NULL. */
static const struct sample *newest(const struct stats *s)
{
	return s->ring_n ? &s->ring[s->ring_head] : NULL;
}

int stats_publish(struct stats *s, int64_t now_ms, int64_t duration_us)
{
	size_t slot = s->ring_n ? (s->ring_head + 1) % STATS_RING : 0;
	struct sample *smp = &s->ring[slot];

	pthread_mutex_lock(&s->lock);
	if (smp->cap < s->n) {
		void *p = realloc(smp->v, s->cap * sizeof(smp->v[0]));

		if (!p) {
			pthread_mutex_unlock(&s->lock);
			return -ENOMEM;
		}
		smp->v = p;
		smp->cap = s->cap;
	}
	if (s->n)
		memcpy(smp->v, s->cur, s->n * sizeof(s->cur[0]));
	smp->n = s->n;
	smp->t_ms = now_ms;
	s->ring_head = slot;
	if (s->ring_n < STATS_RING)
		s->ring_n++;
	for (size_t i = 0; i < s->n; i++) {
		struct base *b = &s->base[i];

		if (b->state == BASE_PENDING && b->after < s->cycles) {
			memcpy(b->v, s->cur[i], sizeof(b->v));
			b->since_ms = s->cycle_ms;
			b->state = BASE_SET;
		} else if (b->state == BASE_SET) {
			for (int d = 0; d < STATS__DECISIONS; d++)
				if (s->cur[i][d] < b->v[d])
					b->v[d] = 0; /* the sums went down: the stats were lost in Redis */
		}
	}
	s->sum.aggregations++;
	s->sum.last_ms = now_ms;
	s->sum.last_duration_us = duration_us;
	s->sum.last_round_trips = s->trips;
	s->sum.lag_ms = s->lag_ms;
	s->sum.shards_skipped = s->skipped;
	s->sum.fields_ignored = s->ignored;
	s->sum.names_dropped = s->dropped;
	s->sum.names = s->n;
	memcpy(s->sum.last_error, s->error, sizeof(s->sum.last_error));
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Per-second rates of name i over the window ending at the newest sample (lock held). */
static void rates(const struct stats *s, size_t i, double out[STATS__DECISIONS])
{
	const struct sample *last = newest(s), *old = NULL;

	for (size_t k = 1; k < s->ring_n; k++) {
		const struct sample *p = &s->ring[(s->ring_head + STATS_RING - k) % STATS_RING];

		if (p->t_ms < last->t_ms - STATS_WINDOW_MS || p->n <= i)
			break;
		if (p->t_ms < last->t_ms)
			old = p;
	}
	for (int d = 0; d < STATS__DECISIONS; d++) {
		uint64_t a = i < last->n ? last->v[i][d] : 0, b = old ? old->v[i][d] : a;

		out[d] = old && a > b ? (double)(a - b) * 1000.0 / (double)(last->t_ms - old->t_ms) : 0.0;
	}
}

int stats_rule(struct stats *s, const char *name, struct stats_rule *out)
{
	int found, rc = -ENOENT;
	size_t at;

	pthread_mutex_lock(&s->lock);
	at = lower_bound(s, name, strlen(name), &found);
	if (found && s->base[s->order[at]].state == BASE_SET && newest(s)) {
		size_t i = s->order[at];
		const struct sample *last = newest(s);

		for (int d = 0; d < STATS__DECISIONS; d++) {
			uint64_t v = i < last->n ? last->v[i][d] : 0;

			out->total[d] = v > s->base[i].v[d] ? v - s->base[i].v[d] : 0;
		}
		out->since_ms = s->base[i].since_ms;
		rates(s, i, out->per_second);
		rc = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int stats_each(struct stats *s, int (*fn)(void *arg, const char *name, const uint64_t sums[STATS__DECISIONS]),
	       void *arg)
{
	const struct sample *last;
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	last = newest(s);
	for (size_t k = 0; last && !rc && k < s->n; k++) {
		uint32_t i = s->order[k];

		if (i < last->n)
			rc = fn(arg, s->name[i], last->v[i]);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void stats_summary(struct stats *s, struct stats_summary *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->sum;
	pthread_mutex_unlock(&s->lock);
}

void stats_view_free(struct stats *s)
{
	for (size_t k = 0; k < STATS_RING; k++)
		free(s->ring[k].v);
	free(s->name);
	free(s->order);
	free(s->base);
	free(s->cur);
}

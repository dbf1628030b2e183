#include "scheduler/sched.h"

#include <errno.h>
#include <stdlib.h>

struct job {
	struct sched_stats st;
	sched_fn fn;
	void *arg;
};

struct sched {
	struct job *jobs;
	size_t n, cap;
	sched_clock clock;
	void *clock_arg;
};

struct sched *sched_new(sched_clock clock, void *clock_arg)
{
	struct sched *s;

	if (!clock)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->clock = clock;
	s->clock_arg = clock_arg;
	return s;
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	free(s->jobs);
	free(s);
}

int sched_add(struct sched *s, const char *name, int64_t period_us, int64_t first_due_us,
	      sched_fn fn, void *arg)
{
	struct job *j;

	if (period_us <= 0 || !fn)
		return -EINVAL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4;
		struct job *v = realloc(s->jobs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->jobs = v;
		s->cap = cap;
	}
	j = &s->jobs[s->n];
	*j = (struct job){ .fn = fn, .arg = arg };
	j->st.name = name;
	j->st.period_us = period_us;
	j->st.next_due_us = first_due_us;
	return (int)s->n++;
}

int sched_set_period(struct sched *s, int i, int64_t period_us)
{
	if (i < 0 || (size_t)i >= s->n || period_us <= 0)
		return -EINVAL;
	s->jobs[i].st.period_us = period_us;
	return 0;
}

int64_t sched_next_due(const struct sched *s)
{
	int64_t due = INT64_MAX;

	for (size_t i = 0; i < s->n; i++)
		if (s->jobs[i].st.next_due_us < due)
			due = s->jobs[i].st.next_due_us;
	return due;
}

int sched_run_due(struct sched *s, int64_t now_us)
{
	int ran = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct sched_stats *st = &s->jobs[i].st;
		int64_t start, end, lag;

		if (st->next_due_us > now_us)
			continue;
		start = s->clock(s->clock_arg);
		lag = start - st->next_due_us;
		st->last_lag_us = lag;
		if (lag > st->max_lag_us)
			st->max_lag_us = lag;
		st->runs++;
		if (s->jobs[i].fn(s->jobs[i].arg) < 0)
			st->failures++;
		end = s->clock(s->clock_arg);
		st->last_duration_us = end - start;
		ran++;
		/* Next slot on the grid; slots that passed while we ran are skipped. */
		st->next_due_us += st->period_us;
		if (st->next_due_us < end) {
			int64_t missed = (end - st->next_due_us + st->period_us - 1) / st->period_us;

			st->overruns += (uint64_t)missed;
			st->next_due_us += missed * st->period_us;
		}
	}
	return ran;
}

size_t sched_len(const struct sched *s)
{
	return s->n;
}

int sched_get_stats(const struct sched *s, size_t i, struct sched_stats *out)
{
	if (i >= s->n)
		return -EINVAL;
	*out = s->jobs[i].st;
	return 0;
}

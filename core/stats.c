/*
 * The aggregation of core/stats.h: every shard's stats hash read with
 * HGETALL, STATS_DEPTH per round trip; its fields summed into s->cur by rule
 * name and decision, the lag fields of the current and previous minute into
 * s->lag_ms, and those of older minutes deleted (HDEL, one round trip after
 * the round that found them, only when there are any).  The whole read is
 * bounded by the hashes, which the rules bound (three fields per rule and a
 * lag field or two per shard).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/keys.h"
#include "core/reply.h"
#include "core/shard.h"
#include "core/stats_int.h"

#define LAG_PREFIX ":lag:"
#define LAG_PREFIX_LEN 5
#define MINUTE_MS 60000

const char *stats_decision_name(enum stats_decision d)
{
	static const char *const names[STATS__DECISIONS] = { "allowed", "denied", "shadow_denied" };

	return (unsigned)d < STATS__DECISIONS ? names[d] : NULL;
}

struct stats *stats_new(void)
{
	struct stats *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (pthread_mutex_init(&s->lock, NULL)) {
		free(s);
		return NULL;
	}
	s->b = rbatch_new();
	s->del = rbatch_new();
	if (!s->b || !s->del) {
		stats_free(s);
		return NULL;
	}
	s->sum.last_ms = -1;
	s->sum.lag_ms = -1;
	s->want = 1; /* the first step aggregates */
	return s;
}

void stats_free(struct stats *s)
{
	if (!s)
		return;
	rbatch_free(s->b);
	rbatch_free(s->del);
	cmdargs_free(&s->args);
	stats_view_free(s);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* A decimal integer >= 0 of exactly `len` bytes into *out; -1 when it is not one. */
static int parse_count(const char *p, size_t len, long long *out)
{
	long long v = 0;

	if (len == 0 || len > 18)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	*out = v;
	return 0;
}

/* The decision named by `len` bytes at `p`, or -1. */
static int decision_of(const char *p, size_t len)
{
	for (int d = 0; d < STATS__DECISIONS; d++) {
		const char *n = stats_decision_name((enum stats_decision)d);

		if (strlen(n) == len && memcmp(n, p, len) == 0)
			return d;
	}
	return -1;
}

/* Queue HDEL of lag field `f` (`len` bytes) of shard k's stats, appending to the shard's open HDEL.  0 or -ENOMEM. */
static int queue_hdel(struct stats *s, const char *prefix, unsigned k, const char *f, size_t len)
{
	struct cmdargs *a = &s->args;
	const char *const *argv;
	const size_t *lens;
	int argc;

	cmdargs_reset(a);
	if (cmdargs_str(a, "HDEL") || cmdargs_end(a, keys_shard(cmdargs_begin(a), prefix, k, "stats")) ||
	    cmdargs_add(a, f, len) || (argc = cmdargs_view(a, NULL, &argv, &lens)) < 0)
		return -ENOMEM;
	return rbatch_cmd(s->del, argc, argv, lens) ? -ENOMEM : 0;
}

/* Fold one lag field (the bytes after ":lag:") of shard k.  0 or -ENOMEM. */
static int fold_lag(struct stats *s, const char *prefix, unsigned k, const redisReply *f, const redisReply *v)
{
	long long minute, lag, now_minute = s->cycle_ms / MINUTE_MS;

	/* the current and the previous minute count; any other (older, in the future,
	 * or not a minute: no script writes those) is deleted */
	if (parse_count(f->str + LAG_PREFIX_LEN, f->len - LAG_PREFIX_LEN, &minute) || minute < now_minute - 1 ||
	    minute > now_minute)
		return queue_hdel(s, prefix, k, f->str, f->len);
	if (v->type != REDIS_REPLY_STRING || parse_count(v->str, v->len, &lag)) {
		s->ignored++;
		return 0;
	}
	if (lag > s->lag_ms)
		s->lag_ms = lag;
	return 0;
}

/* Fold shard k's HGETALL reply `r` into the sums.  0 or -ENOMEM. */
static int fold_shard(struct stats *s, const char *prefix, unsigned k, const redisReply *r)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements % 2) {
		if (!s->skipped++)
			snprintf(s->error, sizeof(s->error), "shard %u's stats: %s", k, reply_describe(r));
		return 0;
	}
	for (size_t i = 0; i < r->elements; i += 2) {
		const redisReply *f = r->element[i], *v = r->element[i + 1];
		const char *colon;
		long long n;
		long idx;
		int d, full = 0, rc;

		if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
			s->ignored++;
			continue;
		}
		if (f->len > 0 && f->str[0] == ':') {
			if (f->len > LAG_PREFIX_LEN && !memcmp(f->str, LAG_PREFIX, LAG_PREFIX_LEN) &&
			    (rc = fold_lag(s, prefix, k, f, v)))
				return rc;
			continue; /* other ":" fields are reserved */
		}
		colon = memrchr(f->str, ':', f->len);
		if (!colon || (d = decision_of(colon + 1, f->len - (size_t)(colon + 1 - f->str))) < 0 ||
		    parse_count(v->str, v->len, &n)) {
			s->ignored++;
			continue;
		}
		/* only the rules this daemon loaded (stats_rules_loaded): a name that no rule
		 * has (written by hand, a rule deleted before this daemon started) neither
		 * takes a slot nor shows in /metrics */
		idx = stats_name_index(s, f->str, (size_t)(colon - f->str), 0, &full);
		if (idx < 0) {
			s->ignored++;
			continue;
		}
		s->cur[idx][d] += (uint64_t)n;
	}
	return 0;
}

/* Start an aggregation at `now`. */
static void cycle_start(struct stats *s, int64_t now)
{
	s->in_cycle = 1;
	s->want = 0;
	s->at = 0;
	s->cycle_ms = now;
	s->next_ms = now + STATS_PERIOD_MS;
	s->start_us = clock_mono_us();
	s->cycles++;
	s->lag_ms = -1;
	s->trips = s->skipped = s->ignored = s->dropped = 0;
	s->error[0] = '\0';
	if (s->n)
		memset(s->cur, 0, s->n * sizeof(s->cur[0]));
}

/* One round trip of up to STATS_DEPTH shards from s->at (and the HDELs it found).  0 or an error. */
static int round_trip(struct stats *s, struct rconn *c, const char *prefix)
{
	size_t m = SHARD_COUNT - s->at < STATS_DEPTH ? SHARD_COUNT - s->at : STATS_DEPTH;
	int rc;

	rbatch_clear(s->b);
	rbatch_clear(s->del);
	for (size_t j = 0; j < m; j++) {
		struct cmdargs *a = &s->args;
		const char *const *argv;
		const size_t *lens;
		int argc;

		cmdargs_reset(a);
		if (cmdargs_str(a, "HGETALL") ||
		    cmdargs_end(a, keys_shard(cmdargs_begin(a), prefix, (unsigned)(s->at + j), "stats")) ||
		    (argc = cmdargs_view(a, NULL, &argv, &lens)) < 0 || rbatch_cmd(s->b, argc, argv, lens))
			return -ENOMEM;
	}
	if ((rc = rbatch_run(c, s->b)))
		return rc;
	s->trips++;
	for (size_t j = 0; j < m; j++)
		if ((rc = fold_shard(s, prefix, (unsigned)(s->at + j), rbatch_reply(s->b, j))))
			return rc;
	if (rbatch_len(s->del)) {
		if ((rc = rbatch_run(c, s->del)))
			return rc;
		s->trips++;
		pthread_mutex_lock(&s->lock);
		for (size_t j = 0; j < rbatch_len(s->del); j++) {
			long long n;

			if (!reply_int(rbatch_reply(s->del, j), &n))
				s->sum.lag_fields_deleted += (uint64_t)n;
		}
		pthread_mutex_unlock(&s->lock);
	}
	s->at += m;
	return 0;
}

int stats_step(struct stats *s, struct rconn *c, const char *prefix, int64_t now_ms, int64_t budget_us,
	       int *done)
{
	int64_t start = clock_mono_us();
	int rc;

	if (done)
		*done = 0;
	if (!s->in_cycle) {
		if (!s->want && now_ms < s->next_ms && now_ms >= s->cycle_ms)
			return 0; /* not due (a clock that went back starts one) */
		cycle_start(s, now_ms);
	}
	do {
		if ((rc = round_trip(s, c, prefix))) {
			s->in_cycle = 0;
			s->next_ms = now_ms + STATS_RETRY_MS;
			pthread_mutex_lock(&s->lock);
			s->sum.failures++;
			snprintf(s->sum.last_error, sizeof(s->sum.last_error), "aggregation: %s",
				 rconn_strerror(c, rc));
			pthread_mutex_unlock(&s->lock);
			return rc;
		}
	} while (s->at < SHARD_COUNT && clock_mono_us() - start < budget_us);
	if (s->at < SHARD_COUNT)
		return 0;
	s->in_cycle = 0;
	if ((rc = stats_publish(s, now_ms, clock_mono_us() - s->start_us)))
		return rc;
	if (done)
		*done = 1;
	return 0;
}

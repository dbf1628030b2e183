#ifndef SLUICE_STATS_INT_H
#define SLUICE_STATS_INT_H
/*
 * Inside core/stats.h's collector, shared by its two files and nobody else:
 *   stats.c       the aggregation: HGETALL of every shard, parsing, HDEL of old lag fields
 *   stats_view.c  the rule names, the samples, the baselines and the readers
 */
#include <pthread.h>

#include "core/rulestore.h"
#include "core/stats.h"

/* One rule name's baseline (stats.h, "since the rule was stored"). */
enum { BASE_NONE = 0, BASE_PENDING, BASE_SET };
struct base {
	int state;
	uint64_t after;                       /* PENDING: taken by an aggregation numbered > after */
	uint64_t v[STATS__DECISIONS];         /* SET: the sums at the baseline */
	int64_t since_ms;
	char tag[RULESTORE_ETAG_SIZE];        /* the rule's ETag when last loaded; "" when not a rule */
	int mark;                             /* stats_rules_loaded: not (yet) seen in the ruleset */
};

/* One published sample: the sums of names 0..n-1 at t_ms. */
struct sample {
	int64_t t_ms;
	size_t n;
	uint64_t (*v)[STATS__DECISIONS];      /* owned, n entries (capacity cap) */
	size_t cap;
};

struct stats {
	/*
	 * Rule names, indexed in the order first seen; order[] sorts them.  Only
	 * the collecting thread adds names (under lock, as readers read them);
	 * it reads them without the lock.
	 */
	char (*name)[RULE_NAME_MAX + 1];
	uint32_t *order;
	struct base *base;
	uint64_t (*cur)[STATS__DECISIONS];    /* the aggregation being summed (collector only) */
	size_t n, cap;

	/* the aggregation in progress (collector only) */
	int in_cycle, want;
	size_t at;                            /* next shard to read */
	int64_t cycle_ms, next_ms;            /* now it started at; when the next is due */
	int64_t start_us;
	uint64_t cycles;                      /* aggregations started (numbers them) */
	int64_t lag_ms;
	uint64_t trips, skipped, ignored, dropped;
	char error[160];
	struct rbatch *b, *del;
	struct cmdargs args;

	pthread_mutex_t lock;                 /* guards everything below, and the growth of names */
	struct sample ring[STATS_RING];
	size_t ring_n, ring_head;             /* ring_head: the newest */
	struct stats_summary sum;
};

/* The index of `name` (len bytes, not NUL-terminated), adding it when `add`; -1 when absent or full (*full = 1). */
long stats_name_index(struct stats *s, const char *name, size_t len, int add, int *full);
/* Publish the sums in s->cur as the sample at `now_ms`, take the pending baselines; 0 or -ENOMEM. */
int stats_publish(struct stats *s, int64_t now_ms, int64_t duration_us);
void stats_view_free(struct stats *s);

#endif

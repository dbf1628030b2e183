/* The Redis side of GET /metrics, sampled on its own thread (admin/sampler.h). */
#include "admin/sampler.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/rconn.h"
#include "core/reply.h"
#include "core/shard.h"

struct sampler {
	pthread_mutex_t lock;
	pthread_cond_t want, got;
	pthread_t thread;
	struct rconn *conn;          /* the thread's */
	struct rbatch *batch;        /* the thread's */
	const struct layout *layouts;
	size_t nlayouts;
	int stopping;
	int64_t timeout_ms;          /* the connection's: the first scrape waits this long */
	uint64_t asked, taken;       /* samples asked for / taken (under the lock) */
	int64_t at_us;               /* CLOCK_MONOTONIC of the last sample's end; 0: none */
	int up;
	long long *paths;            /* nlayouts each */
	int *have;
};

/* Replies counting layout `l`'s registered paths: 1024 ZCARDs for sluice's own, one SCARD for a set, none for SCAN. */
static size_t registry_cmds(const struct layout *l)
{
	return !l->foreign ? SHARD_COUNT : l->scan ? 0 : 1;
}

/* PING and every count in one pipeline; the results into the given arrays.  0 or -ENOMEM. */
static int take(struct sampler *s, int *up, long long *paths, int *have)
{
	const char *ping[1] = { "PING" };
	size_t pl[1] = { 4 }, at = 1;
	struct cmdargs c = { 0 };
	int rc = -ENOMEM;

	rbatch_clear(s->batch);
	if (rbatch_cmd(s->batch, 1, ping, pl))
		goto out;
	for (size_t i = 0; i < s->nlayouts; i++) {
		const struct layout *l = &s->layouts[i];

		for (size_t k = 0; k < registry_cmds(l); k++) {
			const char *const *argv;
			const size_t *lens;
			int argc;

			cmdargs_reset(&c);
			if (cmdargs_str(&c, l->foreign ? "SCARD" : "ZCARD") ||
			    (l->foreign ? cmdargs_str(&c, l->registry)
					: cmdargs_end(&c, layout_shard_registry(l, (unsigned)k, cmdargs_begin(&c)))) ||
			    (argc = cmdargs_view(&c, NULL, &argv, &lens)) < 0 || rbatch_cmd(s->batch, argc, argv, lens))
				goto out;
		}
	}
	*up = rbatch_run(s->conn, s->batch) == 0 && rbatch_reply(s->batch, 0) &&
	      rbatch_reply(s->batch, 0)->type == REDIS_REPLY_STATUS;
	for (size_t i = 0; i < s->nlayouts; i++) {
		size_t n = registry_cmds(&s->layouts[i]);
		long long sum = 0, v;
		int ok = *up && n > 0;

		for (size_t k = 0; k < n; k++, at++) {
			if (!*up || reply_int(rbatch_reply(s->batch, at), &v))
				ok = 0; /* a registry of another type: no sample rather than a wrong one */
			else
				sum += v;
		}
		paths[i] = sum;
		have[i] = ok;
	}
	rc = 0;
out:
	cmdargs_free(&c);
	rbatch_clear(s->batch);
	return rc;
}

static void *thread_main(void *arg)
{
	struct sampler *s = arg;
	long long *paths = calloc(s->nlayouts ? s->nlayouts : 1, sizeof(*paths));
	int *have = calloc(s->nlayouts ? s->nlayouts : 1, sizeof(*have));

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		uint64_t target = s->asked;
		int up = 0, rc;

		if (s->taken >= target) {
			pthread_cond_wait(&s->want, &s->lock);
			continue;
		}
		pthread_mutex_unlock(&s->lock);
		rc = paths && have ? take(s, &up, paths, have) : -ENOMEM;
		pthread_mutex_lock(&s->lock);
		s->taken = target;
		if (!rc) {
			s->up = up;
			memcpy(s->paths, paths, s->nlayouts * sizeof(*paths));
			memcpy(s->have, have, s->nlayouts * sizeof(*have));
			s->at_us = clock_mono_us();
		}
		pthread_cond_broadcast(&s->got);
	}
	pthread_mutex_unlock(&s->lock);
	free(paths);
	free(have);
	return NULL;
}

/* Free what sampler_new made (its thread ended or never started). */
static void destroy(struct sampler *s)
{
	rbatch_free(s->batch);
	rconn_free(s->conn);
	free(s->paths);
	free(s->have);
	pthread_cond_destroy(&s->got);
	pthread_cond_destroy(&s->want);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

struct sampler *sampler_new(const struct redis_target *redis, int64_t timeout_ms, const struct layout *layouts,
			    size_t nlayouts)
{
	struct sampler *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->layouts = layouts;
	s->nlayouts = nlayouts;
	s->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
	s->asked = 1; /* a first sample at once: a scrape finds one, even when Redis hangs later */
	s->paths = calloc(nlayouts ? nlayouts : 1, sizeof(*s->paths));
	s->have = calloc(nlayouts ? nlayouts : 1, sizeof(*s->have));
	s->conn = rconn_new(redis, timeout_ms);
	s->batch = rbatch_new();
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->want, NULL);
	pthread_cond_init(&s->got, NULL);
	if (!s->paths || !s->have || !s->conn || !s->batch || pthread_create(&s->thread, NULL, thread_main, s)) {
		destroy(s);
		return NULL;
	}
	return s;
}

void sampler_abort(struct sampler *s)
{
	rconn_abort(s->conn);
}

void sampler_free(struct sampler *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = 1;
	pthread_cond_broadcast(&s->want);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	destroy(s);
}

void sampler_get(struct sampler *s, int64_t fresh_ms, int64_t wait_ms, int *up, long long *paths, int *have,
		 int64_t *age_ms)
{
	int64_t now = clock_mono_us();
	struct timespec until;

	pthread_mutex_lock(&s->lock);
	/* before the first sample there is nothing to answer with: wait as long as a Redis call may take */
	until = clock_deadline(CLOCK_REALTIME, s->at_us ? wait_ms : s->timeout_ms);
	if (!s->at_us || now - s->at_us >= fresh_ms * 1000) {
		uint64_t mine = s->taken >= s->asked ? ++s->asked : s->asked;

		pthread_cond_signal(&s->want);
		while (s->taken < mine && !s->stopping)
			if (pthread_cond_timedwait(&s->got, &s->lock, &until) == ETIMEDOUT)
				break;
	}
	*up = s->up;
	memcpy(paths, s->paths, s->nlayouts * sizeof(*paths));
	memcpy(have, s->have, s->nlayouts * sizeof(*have));
	*age_ms = s->at_us ? (clock_mono_us() - s->at_us) / 1000 : -1;
	pthread_mutex_unlock(&s->lock);
}

/* A deadline for the stop's last Redis calls (daemon/stopwatch.h). */
#include "daemon/stopwatch.h"

#include <errno.h>
#include <time.h>

#include "core/clock.h"

static void *watch(void *arg)
{
	struct stopwatch *sw = arg;
	struct timespec until = clock_deadline(CLOCK_REALTIME, sw->ms);
	int rc = 0;

	pthread_mutex_lock(&sw->lock);
	while (!sw->ended && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&sw->done, &sw->lock, &until);
	if (!sw->ended) {
		sw->fired = 1;
		worker_abort(sw->w);
	}
	pthread_mutex_unlock(&sw->lock);
	return NULL;
}

int stopwatch_start(struct stopwatch *sw, struct worker *w, int64_t ms)
{
	int rc;

	sw->w = w;
	sw->ms = ms;
	sw->ended = sw->fired = 0;
	pthread_mutex_init(&sw->lock, NULL);
	pthread_cond_init(&sw->done, NULL);
	rc = pthread_create(&sw->thread, NULL, watch, sw);
	sw->started = rc == 0;
	return -rc;
}

int stopwatch_end(struct stopwatch *sw)
{
	int fired;

	if (!sw->started)
		return 0;
	pthread_mutex_lock(&sw->lock);
	sw->ended = 1;
	pthread_cond_signal(&sw->done);
	pthread_mutex_unlock(&sw->lock);
	pthread_join(sw->thread, NULL);
	fired = sw->fired;
	pthread_cond_destroy(&sw->done);
	pthread_mutex_destroy(&sw->lock);
	sw->started = 0;
	return fired;
}

/* The admin server's request threads (admin/lanes.h). */
#include "admin/lanes.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#define LANE_THREADS_MAX 64

struct lane;

struct lane_thread {
	struct lane *lane;
	struct api *api;
	pthread_t t;
	struct lane_task *task;  /* running, or NULL; under the lock */
	int started;
};

struct lane {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct lane_task *head, *tail;
	size_t queued, queue_max;
	int closed;
	unsigned n;
	struct lane_thread th[LANE_THREADS_MAX];
};

/* Drop a reference under the lock; 1 when it was the last (the caller releases it after unlocking). */
static int unref(struct lane_task *t)
{
	return --t->refs == 0;
}

static void *thread_main(void *arg)
{
	struct lane_thread *me = arg;
	struct lane *l = me->lane;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		struct lane_task *t = l->head;
		int last = 0;

		if (!t && l->closed)
			break;
		if (!t) {
			pthread_cond_wait(&l->wake, &l->lock);
			continue;
		}
		l->head = t->next;
		if (!l->head)
			l->tail = NULL;
		l->queued--;
		if (atomic_load(&t->state) != LANE_QUEUED) { /* its connection went while it waited */
			last = unref(t);
			if (last) {
				pthread_mutex_unlock(&l->lock);
				t->release(t);
				pthread_mutex_lock(&l->lock);
			}
			continue;
		}
		atomic_store(&t->state, LANE_RUNNING);
		me->task = t;
		pthread_mutex_unlock(&l->lock);
		t->run(t, me->api);
		pthread_mutex_lock(&l->lock);
		me->task = NULL;
		if (atomic_load(&t->state) == LANE_RUNNING) {
			atomic_store(&t->state, LANE_DONE);
			t->wake(t);
		}
		last = unref(t);
		if (last) {
			pthread_mutex_unlock(&l->lock);
			t->release(t);
			pthread_mutex_lock(&l->lock);
		}
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

struct lane *lane_new(unsigned nthreads, size_t queue_max, const struct api_config *cfg)
{
	struct lane *l;

	if (nthreads < 1 || nthreads > LANE_THREADS_MAX || !(l = calloc(1, sizeof(*l))))
		return NULL;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->wake, NULL);
	l->queue_max = queue_max;
	for (unsigned i = 0; i < nthreads; i++) {
		struct lane_thread *th = &l->th[i];

		th->lane = l;
		if (!(th->api = api_new(cfg)))
			goto fail;
		l->n = i + 1;
		if (pthread_create(&th->t, NULL, thread_main, th))
			goto fail;
		th->started = 1;
	}
	return l;
fail:
	lane_free(l);
	return NULL;
}

int lane_push(struct lane *l, struct lane_task *t)
{
	int rc = 0;

	pthread_mutex_lock(&l->lock);
	if (l->closed)
		rc = -ECANCELED;
	else if (l->queued >= l->queue_max)
		rc = -EBUSY;
	if (!rc) {
		t->next = NULL;
		t->refs = 2;
		atomic_store(&t->state, LANE_QUEUED);
		if (l->tail)
			l->tail->next = t;
		else
			l->head = t;
		l->tail = t;
		l->queued++;
		pthread_cond_signal(&l->wake);
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
}

void lane_put(struct lane *l, struct lane_task *t)
{
	int st, last;

	pthread_mutex_lock(&l->lock);
	st = atomic_load(&t->state);
	if (st == LANE_QUEUED || st == LANE_RUNNING)
		atomic_store(&t->state, LANE_ABANDONED); /* never woken: the caller is gone */
	last = unref(t);
	pthread_mutex_unlock(&l->lock);
	if (last)
		t->release(t);
}

void lane_close(struct lane *l)
{
	struct lane_task *t, *next, *drop = NULL;

	pthread_mutex_lock(&l->lock);
	l->closed = 1;
	for (t = l->head; t; t = next) {
		next = t->next;
		if (atomic_load(&t->state) == LANE_QUEUED) {
			atomic_store(&t->state, LANE_ABANDONED);
			t->wake(t);
		}
		if (unref(t)) { /* the lane's reference; the caller's usually remains */
			t->next = drop;
			drop = t;
		}
	}
	l->head = l->tail = NULL;
	l->queued = 0;
	pthread_cond_broadcast(&l->wake);
	pthread_mutex_unlock(&l->lock);
	for (t = drop; t; t = next) {
		next = t->next;
		t->release(t);
	}
}

size_t lane_running(struct lane *l)
{
	size_t n = 0;

	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < l->n; i++)
		n += l->th[i].task != NULL;
	pthread_mutex_unlock(&l->lock);
	return n;
}

void lane_abandon_running(struct lane *l)
{
	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < l->n; i++) {
		struct lane_task *t = l->th[i].task;

		if (t && atomic_load(&t->state) == LANE_RUNNING) {
			atomic_store(&t->state, LANE_ABANDONED);
			t->wake(t);
		}
	}
	pthread_mutex_unlock(&l->lock);
}

void lane_abort(struct lane *l)
{
	for (unsigned i = 0; i < l->n; i++)
		api_abort(l->th[i].api);
}

void lane_free(struct lane *l)
{
	if (!l)
		return;
	lane_close(l);
	for (unsigned i = 0; i < l->n; i++) {
		if (l->th[i].started)
			pthread_join(l->th[i].t, NULL);
		api_free(l->th[i].api);
	}
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

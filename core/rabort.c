/* Aborting one owner's Redis calls from another thread (core/rabort.h). */
#include "core/rabort.h"

#include <errno.h>
#include <sys/socket.h>

void rabort_init(struct rabort *a)
{
	pthread_mutex_init(&a->lock, NULL);
	atomic_init(&a->fired, 0);
	a->n = 0;
}

void rabort_destroy(struct rabort *a)
{
	pthread_mutex_destroy(&a->lock);
}

int rabort_add(struct rabort *a, int fd)
{
	int rc = 0;

	pthread_mutex_lock(&a->lock);
	if (atomic_load(&a->fired)) {
		shutdown(fd, SHUT_RDWR);
		rc = -ECANCELED;
	} else if (a->n == RABORT_FDS_MAX) {
		rc = -ENOSPC;
	} else {
		a->fd[a->n++] = fd;
	}
	pthread_mutex_unlock(&a->lock);
	return rc;
}

void rabort_del(struct rabort *a, int fd)
{
	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < a->n; i++) {
		if (a->fd[i] == fd) {
			a->fd[i] = a->fd[--a->n];
			break;
		}
	}
	pthread_mutex_unlock(&a->lock);
}

void rabort_fire(struct rabort *a)
{
	pthread_mutex_lock(&a->lock);
	atomic_store(&a->fired, 1);
	for (size_t i = 0; i < a->n; i++)
		shutdown(a->fd[i], SHUT_RDWR);
	pthread_mutex_unlock(&a->lock);
}

int rabort_fired(const struct rabort *a)
{
	return atomic_load(&a->fired);
}

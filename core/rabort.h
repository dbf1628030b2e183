#ifndef SLUICE_RABORT_H
#define SLUICE_RABORT_H
/*
 * Aborting one owner's Redis calls from another thread: the sockets of its
 * connections (core/rnode.h registers each one it opens and unregisters it
 * before closing it), which rabort_fire shuts down, so that a thread
 * blocked in a read from a Redis that hangs returns at once with an error;
 * afterwards no new connection is opened.  For a daemon that stops.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#define RABORT_FDS_MAX 512

struct rabort {
	pthread_mutex_t lock;
	atomic_int fired;
	int fd[RABORT_FDS_MAX];
	size_t n;
};

/* Set `a` up (nothing registered, not fired). */
void rabort_init(struct rabort *a);
void rabort_destroy(struct rabort *a);
/*
 * Register `fd` (a connection just opened).  0, or -ECANCELED when `a` has
 * fired (the caller closes the connection: shut down already), or -ENOSPC.
 */
int rabort_add(struct rabort *a, int fd);
/* Unregister `fd` (before it is closed). */
void rabort_del(struct rabort *a, int fd);
/* From any thread: shut every registered socket down and refuse new ones. */
void rabort_fire(struct rabort *a);
/* 1 once fired. */
int rabort_fired(const struct rabort *a);

#endif

#ifndef SLUICE_ADMIN_LANES_H
#define SLUICE_ADMIN_LANES_H
/*
 * The admin server's request threads.  A lane is a FIFO of tasks and the
 * threads that take them, each thread with its own api object (and so its
 * own Redis connection): a request that waits on Redis holds its own thread
 * only, never the thread that reads the connections (admin/server.c).
 *
 * A task is handed over with two references, the caller's and the lane's.
 * It ends exactly once, under the lane's lock, in one of two ways: "done"
 * (a thread ran it) or "abandoned" (the lane was closed before or while it
 * ran); either way its wake() is called once, under the lock, and the
 * result must not be read before that.  Whoever drops the last reference
 * (lane_put) frees it with release().
 */
#include <stdatomic.h>
#include <stddef.h>

#include "admin/api.h"

enum lane_state { LANE_QUEUED, LANE_RUNNING, LANE_DONE, LANE_ABANDONED };

struct lane_task {
	struct lane_task *next;
	atomic_int state;                                /* enum lane_state */
	int refs;                                        /* under the lane's lock */
	void (*run)(struct lane_task *t, struct api *a); /* on a lane thread, without the lock */
	void (*wake)(struct lane_task *t);               /* once, under the lock, when it ended */
	void (*release)(struct lane_task *t);            /* frees it: the last reference went */
};

struct lane;

/*
 * A lane of `nthreads` threads (1..64), each with api_new(cfg) (cfg and what
 * it points to are copied or borrowed as api_new says).  `queue_max` tasks
 * may wait at most.  NULL on ENOMEM or when a thread cannot start.
 */
struct lane *lane_new(unsigned nthreads, size_t queue_max, const struct api_config *cfg);
/*
 * Queue `t` (its run, wake and release set): refs becomes 2.  0, -EBUSY
 * (queue_max wait already), -ECANCELED (the lane is closed); on error `t` is
 * the caller's alone (refs 1).
 */
int lane_push(struct lane *l, struct lane_task *t);
/*
 * Drop the caller's reference to `t`; the last one frees it (release).  A
 * task not ended yet is abandoned without a wake: its caller is gone.
 */
void lane_put(struct lane *l, struct lane_task *t);
/* Close the lane: no more pushes; every queued task is abandoned (woken). */
void lane_close(struct lane *l);
/* Tasks running now. */
size_t lane_running(struct lane *l);
/* Abandon the running tasks (woken now; their threads' results are dropped when they end). */
void lane_abandon_running(struct lane *l);
/* From any thread: every thread's Redis call in flight fails now, later ones at once (api_abort). */
void lane_abort(struct lane *l);
/* Close, wait for the threads (each ends its task first), free the apis and the lane.  NULL is a no-op. */
void lane_free(struct lane *l);

#endif

#ifndef SLUICE_DAEMON_STOPWATCH_H
#define SLUICE_DAEMON_STOPWATCH_H
/*
 * A deadline for the stop's last Redis calls (the leases given back): when
 * they have not ended `ms` after stopwatch_start, the worker's calls are
 * aborted (worker_abort), so a Redis that hangs cannot hold the exit.
 */
#include <pthread.h>
#include <stdint.h>

#include "worker/worker.h"

struct stopwatch {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t done;
	int started, ended, fired;
	int64_t ms;
	struct worker *w;
};

/* Arm it for `w` (borrowed).  0, or -errno when the thread cannot start (then there is no deadline). */
int stopwatch_start(struct stopwatch *sw, struct worker *w, int64_t ms);
/* The calls ended: disarm and join.  1 when the deadline had fired (the calls were aborted), else 0. */
int stopwatch_end(struct stopwatch *sw);

#endif

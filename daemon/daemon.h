#ifndef SLUICE_DAEMON_DAEMON_H
#define SLUICE_DAEMON_DAEMON_H
/*
 * What main owns (daemon/main.c), for the pieces of the daemon that work on
 * it from main's thread: the SIGHUP reload (daemon/reload.c).
 */
#include <stdatomic.h>
#include <stdint.h>

#include "core/config.h"
#include "core/layout.h"
#include "daemon/report.h"
#include "daemon/seed.h"
#include "scheduler/sched.h"
#include "worker/worker.h"

struct daemon;

/* The admin API rechecks the rules version at most this often (ms): one drain tick. */
#define API_RULES_TTL_MS 100
/* the leases given back at the stop: at most this long (the exit within 1 s of SIGTERM) */
#define STOP_RELEASE_MS 250

struct job_ctx {
	struct daemon *d;
	enum worker_job job;
	int sched_idx;
	int64_t budget_us;
	int failing;             /* last step failed: log only the transitions */
	int64_t failed_at_ms;    /* CLOCK_MONOTONIC of the first failed step of that run (for job_recovered) */
};

struct daemon {
	struct config cfg;
	char id[CONFIG_ID_MAX + 1]; /* this daemon's id among several (cfg.id, or made at start) */
	int lease_idx;           /* the lease job's scheduler index */
	struct lease_log leases;  /* what the log last said of them */
	struct layout *layouts;
	size_t nlayouts;
	struct worker *worker;
	struct seed seed;        /* the config's rules, while they wait to be stored */
	atomic_int rules_ready;  /* API_RULES_READY once they were stored (admin/api.h; read by the admin threads) */
	struct sched *sched;
	struct job_ctx jobs[WORKER__JOBS];
	struct copies_log skew;  /* what the log last said of the skew copies */
	struct copies_log copies; /* ... and of the rule copies */
};

/* The lease job's period (ms): every drain tick, and at least four times per lease TTL. */
int64_t daemon_lease_interval_ms(const struct config *cfg);
/* A job's time budget a tick (µs): sweep_budget_ms, or 80% of its period `interval_ms`. */
int64_t daemon_budget_us(const struct config *cfg, int64_t interval_ms);
/*
 * SIGHUP: read the command line and config file again.  A broken file is
 * logged and changes nothing.  Rules, intervals, the sweep budget, the skew
 * horizon (max_clock_skew_ms: every shard's copy at the next tick) and the
 * log level apply at once; the Redis address, listen address, prefix, batch
 * size, the admin settings and the log format need a restart (logged when
 * they differ: reload_partial).
 */
void daemon_reload(struct daemon *d, int argc, char **argv);

#endif

#ifndef SLUICE_DAEMON_SEED_H
#define SLUICE_DAEMON_SEED_H
/*
 * Storing the config file's rules in Redis (the rule store, core/rulestore.h):
 * at start, after SIGHUP, and again when Redis lost them.  Attempts run on
 * the worker's thread, one per tick while some wait, each on a connection
 * of its own that lives until they are stored.  The first success opens the
 * admin API's rule routes and /readyz (`ready`).
 */
#include <stdatomic.h>
#include <stdint.h>

#include "core/config.h"
#include "core/rconn.h"
#include "worker/status.h"

struct seed {
	struct rconn *conn;      /* while the config's rules wait to be stored; NULL: none wait */
	int mark_only;           /* ... or only a version given to a store that kept its rules */
	atomic_int *ready;       /* borrowed: API_RULES_READY at the first success, API_RULES_OOM while
				  * Redis refuses them for maxmemory (admin/api.h; read by the admin threads) */
	int failing;             /* the last attempt failed: log only the transitions */
	char why[200];           /* ... and when the reason changes */
	int64_t started_us;      /* CLOCK_MONOTONIC of the first attempt; 0 before */
};

/*
 * Make the config's rules wait to be stored (`mark_only`: only give the
 * store a version again), on a new connection to cfg's Redis (none is made
 * when one waits already).  0 or -ENOMEM.
 */
int seed_start(struct seed *s, const struct config *cfg, int mark_only);
/*
 * One attempt, when the rules wait: one rulestore_put each (an identical
 * rule changes nothing), then a version for the store.  0 when none wait
 * (any more), else the first error (an rconn error, -EBADMSG when Redis
 * refused, -EPROTO, -ENOMEM), logged as rules_seed_failed when the failures
 * start or their reason changes.  Rules stored before an error stay stored;
 * running it again is safe.
 */
int seed_step(struct seed *s, const struct config *cfg);
/*
 * After a worker step that succeeded, from its status `ws`: when the store
 * lost its version (Redis lost its data: a restart without persistence,
 * FLUSHALL) or its rules hash, make the config's rules wait again (logged
 * rules_lost; /readyz and the rule and path routes answer 503
 * rules_not_loaded until they are stored again), or only the version when
 * the store kept its rules (rules_version_lost: rules edited through the
 * API stay).  0 or -ENOMEM.
 */
int seed_check_lost(struct seed *s, const struct config *cfg, const struct worker_status *ws);
/* Close the connection (the rules stop waiting). */
void seed_free(struct seed *s);

#endif

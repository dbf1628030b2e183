#ifndef SLUICE_TEST_API_OBJECTS_H
#define SLUICE_TEST_API_OBJECTS_H
/*
 * The objects every admin suite works on (tests/api_fixture.h for the route
 * suites, tests/openapi_fixture.h for the document's): the test's connection
 * `c` (tests/conn_fixture.h), sluice's default layouts, the target of the
 * harness's redis-server, a worker and an api on them.
 *
 * Sets up: objects_up in a checked fixture's setup makes all of them, and
 * objects_down frees them in its teardown; the globals below are owned here,
 * one set per suite process, NULL between tests.  Objects a test makes for
 * itself (api_make, worker_make, sweeps_start) are the test's to free.
 */
#include "admin/api.h"
#include "core/config.h"
#include "core/layout.h"
#include "tests/conn_fixture.h"
#include "tests/harness.h"
#include "worker/worker.h"

#include <check.h>
#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PFX "sluice:"
/* Registry set names of 0.1's layout, for the suites that still use them as a
 * foreign layout's registry; sluice's own registries are one sorted set per
 * shard (test_registry). */
#define LB_REG "sluice:registry:leaky_bucket"
#define SL_REG "sluice:registry:sliding_log"
/*
 * How far ahead of the server clock a test admits with an explicit `now`
 * (ms): the scripts never move stored time backward, so the state is read at
 * that time and every value is exact for as long again; the client scripts
 * refuse a `now` more than max_clock_skew_ms (10 s) ahead of Redis TIME.
 */
#define AHEAD_MS 9000LL
/* Redis timeout of the api and worker objects. */
#define OBJECTS_TIMEOUT_MS 5000

/* sluice's default layouts for PFX (5 of them). */
extern struct layout *layouts;
extern size_t nlayouts;
/* test_srv_url() parsed: the server's, or in cluster mode the first primary's (tests/harness_mode.h). */
extern struct redis_target target;
/* A worker on target and layouts, in batches of 100; no thread runs it (sweeps_start serves its requests). */
extern struct worker *w;
/* An api on target and layouts with worker `w`, without auth. */
extern struct api *api;

/* An api on `t` and sluice's layouts, with worker `wk` (may be NULL) and `token` (NULL: no auth); caller frees. */
struct api *api_make(const struct redis_target *t, struct worker *wk, const char *token, int auth_reads);
/* The api_config api_make uses (for server_start); its pointers are `t`, `wk`, `token` and the fixture's layouts. */
struct api_config api_config_of(const struct redis_target *t, struct worker *wk, const char *token, int auth_reads);
/* A worker on `t` and sluice's layouts, in batches of 100; caller frees. */
struct worker *worker_make(const struct redis_target *t);

/* A flushed connection `c`, the layouts, the target, worker `w` and api `api`. */
void objects_up(void);
void objects_down(void);

/*
 * Plays the daemon's main loop: a thread that serves the sweep requests of
 * worker `wk` (POST /v1/worker/sweep runs the sweep on the worker's own
 * thread) from sweeps_start until sweeps_stop.
 */
struct sweeps {
	struct worker *wk;
	int stop[2]; /* a pipe: readable once the thread is to stop */
	pthread_t th;
};

void sweeps_start(struct sweeps *sw, struct worker *wk);
void sweeps_stop(struct sweeps *sw);

#endif

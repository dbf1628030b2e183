#ifndef SLUICE_TEST_API_OBJECTS_H
#define SLUICE_TEST_API_OBJECTS_H
/*
 * The objects every admin suite works on (tests/api_fixture.h for the route
 * suites, tests/openapi_fixture.h for the document's): the test's connection
 * `c`, sluice's default layouts, the target of the harness's redis-server, a
 * worker and an api on them (objects_up/objects_down in a checked fixture).
 *
 * Header-only and static: the Makefile links only tests/harness.o into each
 * suite, so a fixture shared by a family of suites is compiled into each of
 * them, written once here.
 */
#include "admin/api.h"
#include "core/config.h"
#include "core/layout.h"
#include "tests/harness.h"
#include "worker/worker.h"

#include <check.h>
#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PFX "sluice:"
#define LB_REG "sluice:registry:leaky_bucket"
#define SL_REG "sluice:registry:sliding_log"
#define HOUR_MS 3600000LL
/* Redis timeout of the api and worker objects. */
#define OBJECTS_TIMEOUT_MS 5000

/* Every definition below is static; a suite need not use them all. */
#define API_FIXTURE static __attribute__((unused))

static redisContext *c;
static struct layout *layouts;
static size_t nlayouts;
static struct redis_target target;
static struct worker *w;
static struct api *api;

/* An api on `t` and sluice's layouts, with worker `wk` (may be NULL) and `token` (NULL: no auth). */
API_FIXTURE struct api *api_make(const struct redis_target *t, struct worker *wk, const char *token, int auth_reads)
{
	struct api_config ac = { .redis = t, .timeout_ms = OBJECTS_TIMEOUT_MS, .prefix = PFX, .layouts = layouts,
				 .nlayouts = nlayouts, .worker = wk, .token = token, .auth_reads = auth_reads };
	struct api *a = api_new(&ac);

	ck_assert_ptr_nonnull(a);
	return a;
}

/* A worker on `t` and sluice's layouts, in batches of 100. */
API_FIXTURE struct worker *worker_make(const struct redis_target *t)
{
	struct worker_config wc = { .redis = t, .timeout_ms = OBJECTS_TIMEOUT_MS, .prefix = PFX, .batch_size = 100,
				    .layouts = layouts, .nlayouts = nlayouts };
	struct worker *wk = worker_new(&wc);

	ck_assert_ptr_nonnull(wk);
	return wk;
}

/* A flushed connection `c`, the layouts, the target, worker `w` and api `api`. */
API_FIXTURE void objects_up(void)
{
	struct sl_error err = { 0 };

	c = test_srv_connect_flushed();
	ck_assert_int_eq(layouts_default(PFX, &layouts, &nlayouts), 0);
	ck_assert_int_eq(nlayouts, 5);
	ck_assert_msg(redis_url_parse(test_srv.url, &target, &err) == 0, "%s: %s", err.field, err.message);
	w = worker_make(&target);
	api = api_make(&target, w, NULL, 0);
}

API_FIXTURE void objects_down(void)
{
	api_free(api);
	api = NULL;
	worker_free(w);
	w = NULL;
	layouts_free(layouts, nlayouts);
	layouts = NULL;
	redis_target_clear(&target);
	redisFree(c);
	c = NULL;
}

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

API_FIXTURE void *sweeps_serve(void *arg)
{
	struct sweeps *sw = arg;
	struct pollfd pfd[2] = { { .fd = worker_request_fd(sw->wk), .events = POLLIN },
				 { .fd = sw->stop[0], .events = POLLIN } };

	while (poll(pfd, 2, 30000) > 0 && !(pfd[1].revents & POLLIN))
		if (pfd[0].revents & POLLIN)
			worker_serve_requests(sw->wk);
	return NULL;
}

API_FIXTURE void sweeps_start(struct sweeps *sw, struct worker *wk)
{
	sw->wk = wk;
	ck_assert_int_eq(pipe(sw->stop), 0);
	ck_assert_int_eq(pthread_create(&sw->th, NULL, sweeps_serve, sw), 0);
}

API_FIXTURE void sweeps_stop(struct sweeps *sw)
{
	ck_assert_int_eq(write(sw->stop[1], "x", 1), 1);
	pthread_join(sw->th, NULL);
	close(sw->stop[0]);
	close(sw->stop[1]);
}

#endif

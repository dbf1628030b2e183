#include "tests/api_objects.h"

#include <poll.h>

struct layout *layouts;
size_t nlayouts;
struct redis_target target;
struct worker *w;
struct api *api;

struct api_config api_config_of(const struct redis_target *t, struct worker *wk, const char *token, int auth_reads)
{
	struct api_config ac = { .redis = t, .timeout_ms = OBJECTS_TIMEOUT_MS, .prefix = PFX, .layouts = layouts,
				 .nlayouts = nlayouts, .worker = wk, .token = token, .auth_reads = auth_reads,
				 /* every scrape reads Redis, however long it takes: the tests check exact counts */
				 .metrics_fresh_ms = -1, .metrics_wait_ms = 60000 };

	return ac;
}

struct api *api_make(const struct redis_target *t, struct worker *wk, const char *token, int auth_reads)
{
	struct api_config ac = api_config_of(t, wk, token, auth_reads);
	struct api *a = api_new(&ac);

	ck_assert_ptr_nonnull(a);
	return a;
}

struct worker *worker_make(const struct redis_target *t)
{
	struct worker_config wc = { .redis = t, .timeout_ms = OBJECTS_TIMEOUT_MS, .prefix = PFX, .batch_size = 100,
				    .layouts = layouts, .nlayouts = nlayouts, .sum_stats = 1,
				    .census = 1 };
	struct worker *wk = worker_new(&wc);

	ck_assert_ptr_nonnull(wk);
	return wk;
}

void objects_up(void)
{
	struct sl_error err = { 0 };

	conn_up();
	ck_assert_int_eq(layouts_default(PFX, &layouts, &nlayouts), 0);
	ck_assert_int_eq(nlayouts, 5);
	ck_assert_msg(redis_url_parse(test_srv_url(), &target, &err) == 0, "%s: %s", err.field, err.message);
	w = worker_make(&target);
	api = api_make(&target, w, NULL, 0);
}

void objects_down(void)
{
	api_free(api);
	api = NULL;
	worker_free(w);
	w = NULL;
	layouts_free(layouts, nlayouts);
	layouts = NULL;
	redis_target_clear(&target);
	conn_down();
}

static void *sweeps_serve(void *arg)
{
	struct sweeps *sw = arg;
	struct pollfd pfd[2] = { { .fd = worker_request_fd(sw->wk), .events = POLLIN },
				 { .fd = sw->stop[0], .events = POLLIN } };

	while (poll(pfd, 2, 30000) > 0 && !(pfd[1].revents & POLLIN))
		if (pfd[0].revents & POLLIN)
			worker_serve_requests(sw->wk, NULL, NULL);
	return NULL;
}

void sweeps_start(struct sweeps *sw, struct worker *wk)
{
	sw->wk = wk;
	ck_assert_int_eq(pipe(sw->stop), 0);
	ck_assert_int_eq(pthread_create(&sw->th, NULL, sweeps_serve, sw), 0);
}

void sweeps_stop(struct sweeps *sw)
{
	ck_assert_int_eq(write(sw->stop[1], "x", 1), 1);
	pthread_join(sw->th, NULL);
	close(sw->stop[0]);
	close(sw->stop[1]);
}

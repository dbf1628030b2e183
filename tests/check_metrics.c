/*
 * GET /metrics (admin/routes_metrics.c): the Prometheus text after sweeps and requests,
 * line by line.  The fixture and the conventions are tests/api_fixture.h's.
 */
#include <unistd.h>
#include "core/clock.h"
#include "tests/api_fixture.h"

/* ---- GET /metrics ------------------------------------------------------------- */

static char *metrics_text(void)
{
	struct api_request rq = { .method = "GET", .path = "/metrics" };
	struct api_response rs;

	api_handle(api, &rq, &rs);
	ck_assert_int_eq(rs.status, 200);
	ck_assert_ptr_null(rs.body);
	ck_assert_ptr_nonnull(rs.text);
	ck_assert_str_eq(rs.content_type, "text/plain; version=0.0.4; charset=utf-8");
	return rs.text;
}

static void has_line(const char *text, const char *line)
{
	const char *p = text;
	size_t n = strlen(line);

	while ((p = strstr(p, line)))
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return;
		else
			p++;
	/* Check passes a message through a pipe of bounded size: the text's start only */
	ck_abort_msg("metrics lack the line \"%s\"; they begin:\n%.3000s", line, text);
}

/* metrics_text() of api `a`. */
static char *metrics_of(struct api *a)
{
	struct api_request rq = { .method = "GET", .path = "/metrics" };
	struct api_response rs;

	api_handle(a, &rq, &rs);
	ck_assert_int_eq(rs.status, 200);
	ck_assert_ptr_nonnull(rs.text);
	return rs.text;
}

static void lacks(const char *text, const char *piece)
{
	ck_assert_msg(strstr(text, piece) == NULL, "metrics hold \"%s\": %.3000s", piece, strstr(text, piece));
}

START_TEST(test_metrics)
{
	/* the first leak is due by now at the drain's horizon, SKEW_MS behind Redis TIME */
	long long t = test_server_ms(c) - 10000 - test_skew_ms();
	struct worker_result r;
	char *m;

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/api/a", 10, "0.1", t);
	/* a sliding log's registry member, due in an hour (written as its client would) */
	freeReplyObject(test_cmd(c, "ZADD %s %lld /log", test_registry("sliding_log", "/log"), t + 3600000));
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, -1, &r), 0);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, -1, &r), 0);
	get("/v1/rules/nope");  /* a 404 to count */
	call("POST", "/v1/rules", NULL); /* a 405 */
	m = metrics_text();
	has_line(m, "sluice_build_info{version=\"" SLUICE_VERSION "\"} 1");
	has_line(m, "sluice_redis_up 1");
	/* registered paths: the 1024 shards' due indexes of each layout, summed */
	has_line(m, "sluice_registry_paths{layout=\"leaky_bucket\"} 1");
	has_line(m, "sluice_registry_paths{layout=\"sliding_log\"} 1");
	has_line(m, "sluice_registry_paths{layout=\"token_bucket\"} 0");
	has_line(m, "sluice_drained_entries_total{algorithm=\"leaky_bucket\",layout=\"leaky_bucket\"} 1");
	has_line(m, "sluice_pruned_entries_total{algorithm=\"sliding_log\",layout=\"sliding_log\"} 0");
	has_line(m, "sluice_sweeps_total{job=\"drain\"} 1");
	has_line(m, "sluice_paths_visited_total{job=\"drain\"} 1");
	has_line(m, "sluice_paths_visited_total{job=\"prune\"} 0"); /* the log is not due */
	has_line(m, "sluice_script_calls_total{job=\"drain\"} 1024");
	has_line(m, "sluice_script_calls_total{job=\"prune\"} 4096");
	has_line(m, "sluice_due_polls_total{job=\"drain\"} 0"); /* sweeps call every shard: no polls */
	has_line(m, "sluice_paths_unmatched_total{job=\"prune\"} 0");
	has_line(m, "sluice_due_backlog_paths{job=\"drain\"} 0");
	has_line(m, "sluice_due_backlog_paths{job=\"prune\"} 0");
	has_line(m, "# TYPE sluice_due_backlog_paths gauge");
	has_line(m, "sluice_oldest_due_age_seconds{job=\"drain\"} 0.000");
	has_line(m, "sluice_oldest_due_age_seconds{job=\"prune\"} 0.000");
	has_line(m, "# TYPE sluice_oldest_due_age_seconds gauge");
	lacks(m, "sluice_skew_shards_pending"); /* this worker keeps no skew copies */
	has_line(m, "sluice_sweep_duration_seconds_bucket{job=\"drain\",le=\"+Inf\"} 1");
	has_line(m, "sluice_sweep_duration_seconds_count{job=\"prune\"} 1");
	has_line(m, "# TYPE sluice_sweep_duration_seconds histogram");
	has_line(m, "sluice_http_requests_total{route=\"/v1/rules/{name}\",method=\"PUT\",status=\"201\"} 1");
	has_line(m, "sluice_http_requests_total{route=\"/v1/rules/{name}\",method=\"GET\",status=\"404\"} 1");
	has_line(m, "sluice_http_requests_total{route=\"unmatched\",method=\"any\",status=\"405\"} 1");
	has_line(m, "sluice_rules_loaded 1");
	/* the worker's view of each primary (one for a single Redis), slots by the cluster's map */
	for (int i = 0; i < test_srv_primaries(); i++) {
		static const char *const kinds[] = { "moved", "ask", "tryagain" };
		struct primary p;
		char line[256];

		primary_of(i, &p);
		snprintf(line, sizeof(line), "sluice_redis_node_up{node=\"%s\"} 1", p.addr);
		has_line(m, line);
		snprintf(line, sizeof(line), "sluice_redis_node_slots{node=\"%s\"} %lld", p.addr, p.slots);
		has_line(m, line);
		snprintf(line, sizeof(line), "sluice_redis_node_errors_total{node=\"%s\"} 0", p.addr);
		has_line(m, line);
		for (int k = 0; k < 3; k++) {
			snprintf(line, sizeof(line), "sluice_redis_redirects_total{node=\"%s\",kind=\"%s\"} 0", p.addr,
				 kinds[k]);
			has_line(m, line);
		}
	}
	{
		/* and no other node */
		int nodes = 0;

		for (const char *q = strstr(m, "\nsluice_redis_node_up{"); q; q = strstr(q + 1, "\nsluice_redis_node_up{"))
			nodes++;
		ck_assert_int_eq(nodes, test_srv_primaries());
	}
	/* the process collector's metrics, of this process (the suite is the daemon's process here) */
	has_line(m, "# TYPE process_cpu_seconds_total counter");
	has_line(m, "# TYPE process_resident_memory_bytes gauge");
	has_line(m, "# TYPE process_start_time_seconds gauge");
	{
		double rss = -1, fds = -1, start = -1, cpu = -1, maxfds = -1;
		const char *p;

		ck_assert_ptr_nonnull(p = strstr(m, "\nprocess_resident_memory_bytes "));
		rss = atof(p + strlen("\nprocess_resident_memory_bytes "));
		ck_assert_ptr_nonnull(p = strstr(m, "\nprocess_open_fds "));
		fds = atof(p + strlen("\nprocess_open_fds "));
		ck_assert_ptr_nonnull(p = strstr(m, "\nprocess_max_fds "));
		maxfds = atof(p + strlen("\nprocess_max_fds "));
		ck_assert_ptr_nonnull(p = strstr(m, "\nprocess_start_time_seconds "));
		start = atof(p + strlen("\nprocess_start_time_seconds "));
		ck_assert_ptr_nonnull(p = strstr(m, "\nprocess_cpu_seconds_total "));
		cpu = atof(p + strlen("\nprocess_cpu_seconds_total "));
		ck_assert_msg(rss > 1e6 && rss < 4e9, "rss %g", rss);
		ck_assert_msg(fds >= 3 && fds <= maxfds, "fds %g of %g", fds, maxfds);
		/* started before now, and within the last hour (a suite runs for seconds) */
		ck_assert_msg(start <= (double)time(NULL) + 1 && start > (double)time(NULL) - 3600, "start %f", start);
		ck_assert_msg(cpu > 0 && cpu < 3600, "cpu %g", cpu);
	}
	free(m);
	/* the scrape itself is counted by the next one */
	m = metrics_text();
	has_line(m, "sluice_http_requests_total{route=\"/metrics\",method=\"GET\",status=\"200\"} 1");
	free(m);
	/* a registry of another type: no sample for its layout rather than a wrong sum */
	freeReplyObject(test_cmd(c, "SET sluice:{3}:registry:token_bucket oops"));
	m = metrics_text();
	lacks(m, "sluice_registry_paths{layout=\"token_bucket\"}");
	has_line(m, "sluice_registry_paths{layout=\"leaky_bucket\"} 1");
	free(m);
}
END_TEST

/* The number after `name ` in metrics text `m` (fails when absent). */
static double metric(const char *m, const char *name)
{
	char needle[160];
	const char *p;

	snprintf(needle, sizeof(needle), "\n%s ", name);
	ck_assert_msg((p = strstr(m, needle)) != NULL, "no %s", name);
	return atof(p + strlen(needle));
}

/*
 * The daemon's sampling (api_config defaults): a scrape within a second of
 * the last sample reuses it (its age exported), a later one takes a new one.
 */
START_TEST(test_metrics_sampled)
{
	struct api_config ac = api_config_of(&target, w, NULL, 0);
	struct api *a;
	char *m;
	int64_t until;

	ac.metrics_fresh_ms = 0; /* the defaults: SAMPLER_FRESH_MS, SAMPLER_WAIT_MS */
	ac.metrics_wait_ms = 0;
	ck_assert_ptr_nonnull(a = api_new(&ac));
	/* the first sample may take longer than the 25 ms a scrape waits: until there is one */
	until = clock_mono_ms() + 10000;
	do {
		m = metrics_of(a);
		if (metric(m, "sluice_redis_sample_age_seconds") >= 0)
			break;
		free(m);
		ck_assert(clock_mono_ms() < until);
	} while (1);
	has_line(m, "sluice_redis_up 1");
	has_line(m, "sluice_registry_paths{layout=\"leaky_bucket\"} 0");
	free(m);
	lb_admit("/api/s", 10, "0.1", test_server_ms(c) + AHEAD_MS);
	m = metrics_of(a);
	/* within the second: the same sample */
	has_line(m, "sluice_registry_paths{layout=\"leaky_bucket\"} 0");
	ck_assert_msg(metric(m, "sluice_redis_sample_age_seconds") < 1.0, "%.3000s", m);
	free(m);
	usleep(1100 * 1000);
	until = clock_mono_ms() + 10000;
	do {
		m = metrics_of(a);
		if (strstr(m, "\nsluice_registry_paths{layout=\"leaky_bucket\"} 1\n"))
			break;
		free(m);
		ck_assert_msg(clock_mono_ms() < until, "no new sample in 10 s");
	} while (1);
	ck_assert_msg(metric(m, "sluice_redis_sample_age_seconds") < 1.0, "%.3000s", m);
	free(m);
	api_free(a);
}
END_TEST

/* INFO's used_cpu_sys + used_cpu_user of the test server (summed over a cluster's primaries), in µs. */
static long long redis_cpu_us(void)
{
	return (long long)((test_info_num(c, "cpu", "used_cpu_sys") + test_info_num(c, "cpu", "used_cpu_user")) * 1e6);
}

/*
 * What the registered-paths gauge costs: 5 x 1024 ZCARDs (one per shard's
 * due index of each own layout) and one PING per scrape, counted by Redis
 * (INFO commandstats); the Redis CPU per scrape is printed (measured, not
 * asserted: it depends on the machine).  On the machine the gauge was
 * written on, some 1.5-3 ms a scrape, so it is kept exact and uncached.
 */
START_TEST(test_registry_gauge_cost)
{
	enum { SCRAPES = 20 };
	long long cpu0, cpu1, t0, t1;
	char *m;

	m = metrics_text(); /* the connection up, its scripts loaded */
	free(m);
	freeReplyObject(test_cmd(c, "CONFIG RESETSTAT"));
	cpu0 = redis_cpu_us();
	t0 = test_now_ms();
	for (int i = 0; i < SCRAPES; i++)
		free(metrics_text());
	t1 = test_now_ms();
	cpu1 = redis_cpu_us();
	ck_assert_int_eq(test_cmdstat(c, "zcard", "calls"), 102400); /* 20 x 5 x 1024 */
	ck_assert_int_eq(test_cmdstat(c, "ping", "calls"), 20);
	ck_assert_int_eq(test_cmdstat(c, "scard", "calls"), 0); /* no foreign layout here */
	fprintf(stderr, "metrics: one scrape costs Redis %.2f ms of CPU (5120 ZCARD + PING) and takes %.2f ms (%d scrapes)\n",
		(double)(cpu1 - cpu0) / SCRAPES / 1000, (double)(t1 - t0) / SCRAPES, SCRAPES);
}
END_TEST

/* A worker that keeps the skew copies shows the horizon and the shards still pending. */
START_TEST(test_metrics_skew)
{
	struct worker_config wc = { .redis = &target, .timeout_ms = OBJECTS_TIMEOUT_MS, .prefix = PFX,
				    .batch_size = 100, .layouts = layouts, .nlayouts = nlayouts,
				    .write_skew = 1, .max_clock_skew_ms = 2500 };
	struct worker *wk = worker_new(&wc);
	struct api *a = api_make(&target, wk, NULL, 0);
	char *m;

	ck_assert_ptr_nonnull(wk);
	m = metrics_of(a);
	has_line(m, "sluice_max_clock_skew_seconds 2.500");
	has_line(m, "sluice_skew_shards_pending 1024"); /* nothing written before the first step */
	free(m);
	freeReplyObject(test_cmd(c, "SET sluice:{77}:rules oops"));
	ck_assert_int_eq(worker_step(wk, WORKER_PRUNE, INT64_MAX, 1000, NULL), 0); /* the copies do not fail a step */
	m = metrics_of(a);
	has_line(m, "sluice_skew_shards_pending 1");
	has_line(m, "# TYPE sluice_skew_shards_pending gauge");
	has_line(m, "sluice_due_polls_total{job=\"prune\"} 4096"); /* a new worker polls every shard of its 4 layouts */
	has_line(m, "sluice_script_calls_total{job=\"prune\"} 0");
	free(m);
	api_free(a);
	worker_free(wk);
}
END_TEST

/* GET `path` answers the file `file` of the tree, byte for byte, as `ctype` (and `cache`, or no Cache-Control). */
static void served(const char *path, const char *file, const char *ctype, const char *cache)
{
	struct api_request rq = { .method = "GET", .path = path };
	struct api_response rs;
	size_t len;
	char *want = test_read_src(file, &len);

	api_handle(api, &rq, &rs);
	ck_assert_int_eq(rs.status, 200);
	ck_assert_ptr_null(rs.body);
	ck_assert_ptr_nonnull(rs.text);
	ck_assert_str_eq(rs.content_type, ctype);
	if (cache)
		ck_assert_str_eq(rs.cache_control, cache);
	else
		ck_assert_ptr_null(rs.cache_control);
	ck_assert_uint_eq(strlen(rs.text), len);
	ck_assert_msg(memcmp(rs.text, want, len) == 0, "GET %s differs from %s", path, file);
	free(rs.text);
	free(want);
}

/* GET /openapi.json answers docs/openapi.json as application/json. */
START_TEST(test_openapi_served)
{
	served("/openapi.json", "docs/openapi.json", "application/json", NULL);
}
END_TEST

/* GET / answers admin/page/index.html as HTML that caches must check again. */
START_TEST(test_page_served)
{
	served("/", "admin/page/index.html", "text/html; charset=utf-8", "no-cache");
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc;

	tc = test_tcase(s, "metrics", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_metrics);
	tcase_add_test(tc, test_metrics_sampled);
	tcase_add_test(tc, test_registry_gauge_cost);
	tcase_add_test(tc, test_metrics_skew);
	tcase_add_test(tc, test_openapi_served);
	tcase_add_test(tc, test_page_served);
	return s;
}

int main(void)
{
	return test_run_suite(metrics_suite());
}

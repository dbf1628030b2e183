/*
 * GET /metrics (admin/routes_metrics.c): the Prometheus text after sweeps and requests,
 * line by line.  The fixture and the conventions are tests/api_fixture.h's.
 */
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
	ck_abort_msg("metrics lack the line \"%s\":\n%s", line, text);
}

START_TEST(test_metrics)
{
	long long t = test_server_ms(c) - 10000;
	struct worker_result r;
	char *m;

	put_ok("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.1}");
	lb_admit("/api/a", 10, "0.1", t);
	lb_admit("/api/a", 10, "0.1", t);
	sl_admit("/log", 10, 60000, t);
	ck_assert_int_eq(worker_sweep(w, WORKER_DRAIN, -1, &r), 0);
	ck_assert_int_eq(worker_sweep(w, WORKER_PRUNE, -1, &r), 0);
	get("/v1/rules/nope");  /* a 404 to count */
	call("POST", "/v1/rules", NULL); /* a 405 */
	m = metrics_text();
	has_line(m, "sluice_build_info{version=\"" SLUICE_VERSION "\"} 1");
	has_line(m, "sluice_redis_up 1");
	has_line(m, "sluice_registry_paths{layout=\"leaky_bucket\"} 1");
	has_line(m, "sluice_registry_paths{layout=\"sliding_log\"} 1");
	has_line(m, "sluice_drained_entries_total{algorithm=\"leaky_bucket\",layout=\"leaky_bucket\"} 1");
	has_line(m, "sluice_pruned_entries_total{algorithm=\"sliding_log\",layout=\"sliding_log\"} 0");
	has_line(m, "sluice_sweeps_total{job=\"drain\"} 1");
	has_line(m, "sluice_paths_visited_total{job=\"drain\"} 1");
	has_line(m, "sluice_paths_unmatched_total{job=\"prune\"} 1");
	has_line(m, "sluice_sweep_duration_seconds_bucket{job=\"drain\",le=\"+Inf\"} 1");
	has_line(m, "sluice_sweep_duration_seconds_count{job=\"prune\"} 1");
	has_line(m, "# TYPE sluice_sweep_duration_seconds histogram");
	has_line(m, "sluice_http_requests_total{route=\"PUT /v1/rules/{name}\",status=\"201\"} 1");
	has_line(m, "sluice_http_requests_total{route=\"GET /v1/rules/{name}\",status=\"404\"} 1");
	has_line(m, "sluice_http_requests_total{route=\"unmatched\",status=\"405\"} 1");
	has_line(m, "sluice_rules_loaded 1");
	free(m);
	/* the scrape itself is counted by the next one */
	m = metrics_text();
	has_line(m, "sluice_http_requests_total{route=\"GET /metrics\",status=\"200\"} 1");
	free(m);
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc;

	tc = test_tcase(s, "metrics", api_setup, api_teardown, 60);
	tcase_add_test(tc, test_metrics);
	return s;
}

int main(void)
{
	return test_run_suite(metrics_suite());
}

/*
 * sluiced: the rate-limit maintenance daemon.
 *
 * main owns everything: the config, the layouts, the worker (driven from this
 * thread by the scheduler), and the admin server (its own threads and Redis
 * connections: admin/server.h); struct daemon is in daemon/daemon.h, the
 * SIGHUP reload in daemon/reload.c.  Signals are blocked and read from a signalfd in the
 * loop, so no handler runs inside a batch.  Start-up order: config, one
 * attempt at storing the config's rules in Redis (seed_step; retried by the
 * worker's ticks until it succeeds, the admin API's rule routes and /readyz
 * answering 503 meanwhile), the admin server, the scheduler; the worker's
 * first tick writes max_clock_skew_ms into every shard's rules copy that
 * lacks it, and drains whether or not the rules could be stored.  Shutdown
 * order: stop the admin server (waiting requests answered 503), stop
 * scheduling (the batch in flight has finished by then: it runs on this
 * thread), give the leases back (at most STOP_RELEASE_MS), free everything.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "admin/api.h"
#include "admin/server.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/layout.h"
#include "core/log.h"
#include "core/rconn.h"
#include "core/rulestore.h"
#include "scheduler/sched.h"
#include "daemon/daemon.h"
#include "daemon/listen.h"
#include "daemon/options.h"
#include "daemon/report.h"
#include "daemon/seed.h"
#include "daemon/stopwatch.h"
#include "worker/members.h"
#include "worker/worker.h"

static int64_t mono_us(void *arg)
{
	(void)arg;
	return clock_mono_us();
}

static int run_job(void *arg)
{
	struct job_ctx *j = arg;
	struct daemon *d = j->d;
	struct worker_result res;
	struct worker_status ws;
	struct sched_stats st;
	int rc;

	/*
	 * The config's rules are stored first while they wait to be (seed_step
	 * logs why it failed).  The worker runs all the same: its own layouts
	 * need no rules (their state records its parameters), a foreign path
	 * with no rule yet is left alone, and at maxmemory the drain is what
	 * frees the memory that storing the rules waits for.
	 */
	seed_step(&d->seed, &d->cfg);
	if (!sched_get_stats(d->sched, (size_t)j->sched_idx, &st))
		worker_note_schedule(d->worker, j->job, st.last_lag_us, st.overruns);
	rc = worker_step(d->worker, j->job, j->budget_us, -1, &res);
	worker_status(d->worker, &ws);
	report_skew(&ws, &d->skew);
	report_copies(&ws, &d->copies);
	if (rc) {
		if (!j->failing) {
			char q[200];

			log_event(LOG_WARN, "job_failed", "job=%s error=%s", worker_job_name(j->job),
				  log_quote(q, sizeof(q), ws.job[j->job].last_error,
					    strlen(ws.job[j->job].last_error)));
		}
		if (!j->failing)
			j->failed_at_ms = clock_mono_ms();
		j->failing = 1;
		return rc;
	}
	if (j->failing)
		log_event(LOG_INFO, "job_recovered", "job=%s failed_ms=%lld", worker_job_name(j->job),
			  (long long)(clock_mono_ms() - j->failed_at_ms));
	j->failing = 0;
	if (seed_check_lost(&d->seed, &d->cfg, &ws))
		log_event(LOG_ERROR, "rules_reseed_failed", "reason=\"out of memory\"");
	if (res.sweep_done && (res.entries || res.emptied))
		log_event(LOG_DEBUG, "sweep_done", "job=%s paths=%llu entries=%llu emptied=%llu unmatched=%llu",
			  worker_job_name(j->job), (unsigned long long)res.paths,
			  (unsigned long long)res.entries, (unsigned long long)res.emptied,
			  (unsigned long long)res.unmatched);
	return 0;
}

/*
 * The lease job (worker_lease_step): the heartbeat and the leases.  Logs
 * shards_owned when the shards held or the live daemons change, and
 * lease_failed once per reason.
 */
static int run_leases(void *arg)
{
	struct daemon *d = arg;
	struct worker_status ws;
	int rc = worker_lease_step(d->worker);

	worker_status(d->worker, &ws);
	report_leases(&ws, rc, &d->leases);
	return rc;
}

/* A SIGTERM or SIGINT waits to be read: a sweep asked for over the API stops for it. */
static int term_pending(void *arg)
{
	sigset_t p;

	(void)arg;
	return !sigpending(&p) && (sigismember(&p, SIGTERM) == 1 || sigismember(&p, SIGINT) == 1);
}

static int setup_signals(void)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	/* blocked before any thread starts, so every thread inherits the mask */
	if (pthread_sigmask(SIG_BLOCK, &set, NULL))
		return -1;
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}


int main(int argc, char **argv)
{
	struct daemon d = { 0 };
	struct sl_error err = { 0 };
	enum options_action action;
	struct server *srv = NULL;
	struct api_config ac = { 0 };
	char errbuf[256], where[160], cfgq[300];
	const char *config_path = NULL;
	int sfd = -1, status = 1, stop = 0;

	if (config_defaults(&d.cfg)) {
		fprintf(stderr, "sluiced: out of memory\n");
		return 1;
	}
	if (options_parse(argc, argv, options_default_config(), &d.cfg, &action, &config_path, &err)) {
		fprintf(stderr, "sluiced: %s: %s\n", err.field, err.message);
		config_free(&d.cfg);
		return 2;
	}
	if (!config_path)
		config_path = "none"; /* for the log: no config file was read */
	if (action == OPT_HELP) {
		options_usage(stdout);
		config_free(&d.cfg);
		return 0;
	}
	if (action == OPT_VERSION) {
		printf("sluiced %s\n", SLUICE_VERSION);
		config_free(&d.cfg);
		return 0;
	}
	log_set_level(d.cfg.log_level);
	log_set_format(d.cfg.log_format);
	if (config_load_token(&d.cfg, &err)) {
		fprintf(stderr, "sluiced: %s: %s\n", err.field, err.message);
		config_free(&d.cfg);
		return 2;
	}
	if (listen_check(&d.cfg)) {
		config_free(&d.cfg);
		return 2;
	}
	if (action == OPT_CHECK) {
		char where2[160];

		printf("sluiced: config valid: redis=%s listen=%s:%d rules=%zu layouts=%zu drain_interval_ms=%lld "
		       "prune_interval_ms=%lld lease_ttl_ms=%lld id=%s auth=%s tls=%s config=%s log_format=%s\n",
		       redis_target_describe(&d.cfg.redis, where2, sizeof(where2)), d.cfg.listen_host, d.cfg.listen_port,
		       d.cfg.nrules, d.cfg.nlayouts, (long long)d.cfg.drain_interval_ms,
		       (long long)d.cfg.prune_interval_ms, (long long)d.cfg.lease_ttl_ms,
		       d.cfg.id ? d.cfg.id : "(default)",
		       !d.cfg.admin_token ? "none" : d.cfg.admin_auth_reads ? "all" : "writes",
		       d.cfg.admin_tls_cert ? "on" : "off", config_path, log_format_name(d.cfg.log_format));
		config_free(&d.cfg);
		return 0;
	}

	if ((sfd = setup_signals()) < 0) {
		fprintf(stderr, "sluiced: signalfd: %s\n", strerror(errno));
		goto out;
	}
	if (d.cfg.id) {
		snprintf(d.id, sizeof(d.id), "%s", d.cfg.id);
	} else if (members_default_id(d.id, sizeof(d.id))) {
		fprintf(stderr, "sluiced: id: no random bytes for a default id (%s); set \"id\" in the config\n",
			strerror(errno));
		goto out;
	}
	if (layouts_default(d.cfg.prefix, &d.layouts, &d.nlayouts))
		goto oom;
	/* foreign layouts after sluice's own: a rule's own layout is found first; their metas under our prefix */
	for (size_t i = 0; i < d.cfg.nlayouts; i++)
		if (layouts_append_foreign(&d.layouts, &d.nlayouts, &d.cfg.layouts[i], d.cfg.prefix))
			goto oom;
	{
		struct worker_config wc = {
			.redis = &d.cfg.redis, .timeout_ms = d.cfg.redis_timeout_ms, .prefix = d.cfg.prefix,
			.batch_size = (size_t)d.cfg.batch_size, .layouts = d.layouts, .nlayouts = d.nlayouts,
			.write_skew = 1, .max_clock_skew_ms = d.cfg.max_clock_skew_ms, .write_rules = 1,
			.sum_stats = 1,
			.census = 1,
			.lease_id = d.id, .lease_ttl_ms = d.cfg.lease_ttl_ms,
		};
		if (!(d.worker = worker_new(&wc)))
			goto oom;
		ac = (struct api_config){
			.redis = &d.cfg.redis, .timeout_ms = d.cfg.redis_timeout_ms, .prefix = d.cfg.prefix,
			.layouts = d.layouts, .nlayouts = d.nlayouts, .token = d.cfg.admin_token,
			.auth_reads = d.cfg.admin_auth_reads, .rules_ttl_ms = API_RULES_TTL_MS,
			.ready = &d.rules_ready, .worker = d.worker,
		};
	}
	/*
	 * The config's rules are stored before the admin server answers: when
	 * Redis is up, the first GET /v1/rules lists them.  When it is not, the
	 * server starts all the same (/healthz never waits on Redis), /readyz and
	 * the rule and path routes answer 503 until a worker tick's retry stored
	 * them (the worker runs meanwhile).  An attempt ends at the first
	 * connect or command that fails or times out (redis_timeout_ms).
	 */
	d.seed.ready = &d.rules_ready;
	if (!d.cfg.nrules)
		atomic_store(&d.rules_ready, API_RULES_READY);
	else if (seed_start(&d.seed, &d.cfg, 0))
		goto oom;
	seed_step(&d.seed, &d.cfg);
	{
		struct server_config sc = {
			.host = d.cfg.listen_host, .port = d.cfg.listen_port,
			.max_body_bytes = (size_t)d.cfg.max_body_bytes,
			.max_connections = (unsigned)d.cfg.max_connections,
			.max_connections_per_ip = (unsigned)d.cfg.max_connections_per_ip,
			.idle_timeout_s = (unsigned)d.cfg.idle_timeout_s,
			.header_timeout_ms = (unsigned)d.cfg.header_timeout_ms,
			.threads = (unsigned)d.cfg.admin_threads,
			.tls_cert = d.cfg.admin_tls_cert, .tls_key = d.cfg.admin_tls_key,
		};

		listen_raise_fd_limit(d.cfg.max_connections);
		listen_warn(&d.cfg);
		srv = server_start(&sc, &ac, errbuf, sizeof(errbuf));
		if (!srv) {
			fprintf(stderr, "sluiced: admin server: %s\n", errbuf);
			goto out;
		}
	}
	if (!(d.sched = sched_new(mono_us, NULL)))
		goto oom;
	{
		static const char *const names[WORKER__JOBS] = { "drain", "prune" };
		int64_t now = clock_mono_us(), interval[WORKER__JOBS] = { d.cfg.drain_interval_ms,
									   d.cfg.prune_interval_ms };

		/* the leases first: a daemon's first drain tick has its shards */
		d.lease_idx = sched_add(d.sched, "lease", daemon_lease_interval_ms(&d.cfg) * 1000, now, run_leases, &d);
		if (d.lease_idx < 0)
			goto oom;
		run_leases(&d);
		for (int j = 0; j < WORKER__JOBS; j++) {
			d.jobs[j] = (struct job_ctx){ .d = &d, .job = (enum worker_job)j,
						      .budget_us = daemon_budget_us(&d.cfg, interval[j]) };
			d.jobs[j].sched_idx = sched_add(d.sched, names[j], interval[j] * 1000, now, run_job, &d.jobs[j]);
			if (d.jobs[j].sched_idx < 0)
				goto oom;
			worker_note_period(d.worker, (enum worker_job)j, interval[j]);
		}
	}
	log_event(LOG_INFO, "started",
		  "version=%s id=%s redis=%s listen=%s:%d drain_interval_ms=%lld prune_interval_ms=%lld rules=%zu "
		  "lease_ttl_ms=%lld auth=%s tls=%s config=%s",
		  SLUICE_VERSION, d.id, redis_target_describe(&d.cfg.redis, where, sizeof(where)),
		  d.cfg.listen_host, server_port(srv), (long long)d.cfg.drain_interval_ms,
		  (long long)d.cfg.prune_interval_ms, d.cfg.nrules, (long long)d.cfg.lease_ttl_ms,
		  !d.cfg.admin_token ? "none" : d.cfg.admin_auth_reads ? "all" : "writes",
		  d.cfg.admin_tls_cert ? "on" : "off", log_quote(cfgq, sizeof(cfgq), config_path, strlen(config_path)));

	if (d.cfg.lease_ttl_ms < 2 * d.cfg.redis_timeout_ms)
		log_event(LOG_WARN, "lease_ttl_short", "lease_ttl_ms=%lld redis_timeout_ms=%lld hint=\"a renewal that "
			  "waits redis_timeout_ms on a slow Redis can outlast the lease: keep lease_ttl_ms at twice "
			  "redis_timeout_ms or more\"", (long long)d.cfg.lease_ttl_ms, (long long)d.cfg.redis_timeout_ms);
	while (!stop) {
		int64_t wait_us = sched_next_due(d.sched) - clock_mono_us();
		struct pollfd pfd[2] = { { .fd = sfd, .events = POLLIN },
					 { .fd = worker_request_fd(d.worker), .events = POLLIN } };
		int n;

		if (wait_us < 0)
			wait_us = 0;
		n = poll(pfd, 2, (int)((wait_us + 999) / 1000));
		if (n < 0 && errno != EINTR) {
			log_event(LOG_ERROR, "poll_failed", "errno=%d", errno);
			goto out;
		}
		if (n > 0 && (pfd[1].revents & POLLIN))
			worker_serve_requests(d.worker, term_pending, NULL); /* POST /v1/worker/sweep */
		if (n > 0 && (pfd[0].revents & POLLIN)) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					daemon_reload(&d, argc, argv);
					continue;
				}
				log_event(LOG_INFO, "stopping", "signal=%s", strsignal((int)si.ssi_signo));
				stop = 1;
			}
			if (stop)
				break;
		}
		sched_run_due(d.sched, clock_mono_us());
	}
	status = 0;
	goto out;
oom:
	fprintf(stderr, "sluiced: out of memory\n");
out:
	if (d.worker)
		worker_cancel_requests(d.worker); /* a sweep request waiting on this thread must not hold the stop */
	server_stop(srv);          /* 1. no more admin requests */
	sched_free(d.sched);       /* 2. no more ticks; none is in flight on this thread */
	if (d.worker && status == 0) {
		/* 3. the shards back to the others at once (they take them at their next tick) */
		struct worker_status ws;
		uint64_t before;
		size_t owned;
		int rc;

		struct stopwatch sw;

		worker_status(d.worker, &ws);
		before = ws.lease.released;
		owned = ws.lease.owned;
		stopwatch_start(&sw, d.worker, STOP_RELEASE_MS); /* a Redis that hangs does not hold the exit */
		rc = worker_lease_release(d.worker);
		stopwatch_end(&sw);
		worker_status(d.worker, &ws);
		if (rc) {
			const char *why = rc == -EIO || rc == -EAGAIN ? "redis unavailable" : strerror(-rc);

			/* holding none, only the leave of the members set went unsent: nothing to warn of */
			if (owned)
				log_event(LOG_WARN, "leases_not_released", "id=%s owned=%zu reason=\"%s\" hint=\"the others "
					  "take them once their TTL ran out\"", d.id, owned, why);
			else
				log_event(LOG_INFO, "members_not_left", "id=%s reason=\"%s\" hint=\"no lease was held; the "
					  "others count this daemon gone once its heartbeat is lease_ttl_ms old\"", d.id, why);
		} else
			log_event(LOG_INFO, "leases_released", "id=%s released=%llu", d.id,
				  (unsigned long long)(ws.lease.released - before));
	}
	worker_free(d.worker);
	seed_free(&d.seed);
	layouts_free(d.layouts, d.nlayouts);
	if (sfd >= 0)
		close(sfd);
	if (status == 0)
		log_event(LOG_INFO, "stopped", NULL);
	config_free(&d.cfg);
	return status;
}

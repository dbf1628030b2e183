/*
 * GET /metrics, the Redis side: whether the admin API reached Redis for the
 * scrape (sampled: admin/sampler.h), the paths registered per layout, and per primary (a single Redis
 * is one) what the worker's connection sees of it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "admin/metrics.h"
#include "admin/routes.h"
#include "admin/sampler.h"
#include "core/reply.h"
#include "core/shard.h"

/*
 * sluice_build_info, sluice_redis_up, sluice_redis_sample_age_seconds and,
 * when Redis was up, sluice_registry_paths: from the sampler (admin/sampler.h),
 * so a scrape waits on Redis at most metrics_wait_ms.  0 or -ENOMEM.
 */
int metrics_put_redis(struct strbuf *b, const struct api *a)
{
	long long *paths = calloc(a->nlayouts ? a->nlayouts : 1, sizeof(*paths));
	int *have = calloc(a->nlayouts ? a->nlayouts : 1, sizeof(*have)), up = 0, rc = -ENOMEM;
	int64_t age_ms = -1;

	if (!paths || !have)
		goto out;
	sampler_get(a->shared->sampler, a->shared->metrics_fresh_ms, a->shared->metrics_wait_ms, &up, paths, have,
		    &age_ms);
	if (metrics_head(b, "sluice_build_info", "gauge", "sluiced version.") ||
	    metrics_printf(b, "sluice_build_info{version=\"%s\"} 1\n", SLUICE_VERSION) ||
	    metrics_head(b, "sluice_redis_up", "gauge",
			 "1 when the admin API reached Redis at its last sample (see sluice_redis_sample_age_seconds).") ||
	    metrics_printf(b, "sluice_redis_up %d\n", up) ||
	    metrics_head(b, "sluice_redis_sample_age_seconds", "gauge",
			 "Age of the Redis sample sluice_redis_up and sluice_registry_paths come from (-1: none yet); "
			 "a scrape takes a new one unless the last is under a second old or Redis is slow to answer.") ||
	    metrics_printf(b, "sluice_redis_sample_age_seconds %.3f\n", age_ms < 0 ? -1.0 : (double)age_ms / 1000))
		goto out;
	rc = 0;
	if (!up)
		goto out;
	rc = -ENOMEM;
	if (metrics_head(b, "sluice_registry_paths", "gauge",
		     "Paths registered: in the 1024 shards' due indexes of each of sluice's own layouts, in a "
		     "foreign layout's registry set."))
		goto out;
	for (size_t i = 0; i < a->nlayouts; i++)
		if (have[i] && metrics_printf(b, "sluice_registry_paths{layout=\"%s\"} %lld\n", a->layouts[i].name, paths[i]))
			goto out;
	rc = 0;
out:
	free(paths);
	free(have);
	return rc;
}

/* The worker's view of each primary: up, slots, connection errors, redirections.  0 or -ENOMEM. */
int metrics_put_nodes(struct strbuf *b, const struct worker_status *st)
{
	static const char *const kinds[3] = { "moved", "ask", "tryagain" };

	if (metrics_head(b, "sluice_redis_node_up", "gauge",
			 "1 when the worker's connection to the primary is live (a single Redis is one primary).") ||
	    metrics_head(b, "sluice_redis_node_slots", "gauge", "Slots the primary owns in the worker's slot map.") ||
	    metrics_head(b, "sluice_redis_node_errors_total", "counter",
			 "Connection failures to the primary (refused, closed, timed out).") ||
	    metrics_head(b, "sluice_redis_redirects_total", "counter",
			 "MOVED, ASK and TRYAGAIN/CLUSTERDOWN replies from the primary, by kind."))
		return -ENOMEM;
	for (size_t i = 0; i < st->nnodes; i++) {
		const struct rconn_node_info *n = &st->node[i];
		const uint64_t counts[3] = { n->moved, n->ask, n->tryagain };

		if (metrics_printf(b, "sluice_redis_node_up{node=\"%s\"} %d\n", n->addr, n->up) ||
		    metrics_printf(b, "sluice_redis_node_slots{node=\"%s\"} %zu\n", n->addr, n->slots) ||
		    metrics_printf(b, "sluice_redis_node_errors_total{node=\"%s\"} %llu\n", n->addr,
				   (unsigned long long)n->errors))
			return -ENOMEM;
		for (int k = 0; k < 3; k++)
			if (metrics_printf(b, "sluice_redis_redirects_total{node=\"%s\",kind=\"%s\"} %llu\n", n->addr,
					   kinds[k], (unsigned long long)counts[k]))
				return -ENOMEM;
	}
	return 0;
}

/* `s` as a Prometheus label value (backslash and double quote escaped) into `out` (`cap` bytes). */
static const char *label_value(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	for (; *s && n + 3 < cap; s++) {
		if (*s == '\\' || *s == '"')
			out[n++] = '\\';
		out[n++] = *s;
	}
	out[n] = '\0';
	return out;
}

int metrics_put_leases(struct strbuf *b, const struct worker_status *st)
{
	const struct worker_lease_status *l = &st->lease;
	char id[2 * LEASE_ID_MAX + 1];
	static const struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
		{ "sluice_lease_acquired_total", "Shard leases this daemon took (SET NX won).",
		  offsetof(struct worker_lease_status, acquired) },
		{ "sluice_lease_refused_total", "Shard lease acquisitions that found another holder.",
		  offsetof(struct worker_lease_status, refused) },
		{ "sluice_lease_lost_total",
		  "Shard leases held that turned out not to be (renewal or fence refused, or their time ran out).",
		  offsetof(struct worker_lease_status, lost) },
		{ "sluice_lease_fenced_total", "Worker script calls the lease fence refused (they changed nothing).",
		  offsetof(struct worker_lease_status, fenced) },
		{ "sluice_lease_released_total", "Shard leases given up: to the daemon that should own them, or at shutdown.",
		  offsetof(struct worker_lease_status, released) },
		{ "sluice_lease_repaired_total",
		  "Keys of the leases found holding what no daemon writes (another type, no TTL), replaced.",
		  offsetof(struct worker_lease_status, repaired) },
		{ "sluice_lease_ttl_conflicts_total",
		  "Acquisitions refused by a lease with more time left than this daemon's lease_ttl_ms (another daemon's is longer).",
		  offsetof(struct worker_lease_status, ttl_conflicts) },
		{ "sluice_lease_duplicate_id_total",
		  "Acquisitions refused by a lease of another process with this daemon's id (ids must be unique).",
		  offsetof(struct worker_lease_status, duplicate_id) },
	};

	if (!l->on)
		return 0;
	if (metrics_head(b, "sluice_lease_info", "gauge", "This daemon's id among those sharing the shards (always 1).") ||
	    metrics_printf(b, "sluice_lease_info{id=\"%s\"} 1\n", label_value(l->id, id, sizeof(id))) ||
	    metrics_head(b, "sluice_lease_shards_owned", "gauge", "Shards whose lease this daemon holds.") ||
	    metrics_printf(b, "sluice_lease_shards_owned %zu\n", l->owned) ||
	    metrics_head(b, "sluice_lease_peers", "gauge", "Daemons alive by their heartbeats, this one included.") ||
	    metrics_printf(b, "sluice_lease_peers %zu\n", l->live))
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		if (metrics_head(b, counters[i].name, "counter", counters[i].help) ||
		    metrics_printf(b, "%s %llu\n", counters[i].name,
				   (unsigned long long)*(const uint64_t *)((const char *)l + counters[i].off)))
			return -ENOMEM;
	return 0;
}

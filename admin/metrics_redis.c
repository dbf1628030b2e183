/*
 * GET /metrics, the Redis side: whether the admin API reached Redis for the
 * scrape, the paths registered per layout, and per primary (a single Redis
 * is one) what the worker's connection sees of it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "admin/metrics.h"
#include "core/reply.h"
#include "core/shard.h"

/*
 * How many replies of redis_probe's pipeline count layout `l`'s registered
 * paths: 1024 ZCARDs (one per shard's due index) for sluice's own, one
 * SCARD for a foreign registry set, none for a layout found by SCAN (no
 * registry to count).
 */
static size_t registry_cmds(const struct layout *l)
{
	return !l->foreign ? SHARD_COUNT : l->scan ? 0 : 1;
}

/*
 * PING and the commands that count every layout's registered paths
 * (registry_cmds), in one pipeline on `batch`: *up is 1 when Redis answered
 * the PING (replies 1.. are then the counts, layout after layout).  Summing
 * the 1024 shards of the five own layouts is 5120 ZCARDs a scrape, some
 * 1.5 ms of Redis CPU (ZCARD is O(1); tests/check_metrics.c measures it),
 * which a scrape every few seconds affords, so the gauge is exact and
 * uncached.  0, or -ENOMEM when the pipeline could not be put together.
 */
int metrics_redis_probe(struct api *a, struct rbatch *batch, int *up)
{
	const char *ping[1] = { "PING" };
	size_t pl[1] = { 4 };
	struct cmdargs c = { 0 };
	int rc = -ENOMEM;

	if (rbatch_cmd(batch, 1, ping, pl))
		goto out;
	for (size_t i = 0; i < a->nlayouts; i++) {
		const struct layout *l = &a->layouts[i];

		for (size_t k = 0; k < registry_cmds(l); k++) {
			const char *const *argv;
			const size_t *lens;
			int argc;

			cmdargs_reset(&c);
			if (cmdargs_str(&c, l->foreign ? "SCARD" : "ZCARD") ||
			    (l->foreign ? cmdargs_str(&c, l->registry)
					: cmdargs_end(&c, layout_shard_registry(l, (unsigned)k, cmdargs_begin(&c)))) ||
			    (argc = cmdargs_view(&c, NULL, &argv, &lens)) < 0 || rbatch_cmd(batch, argc, argv, lens))
				goto out;
		}
	}
	*up = rbatch_run(a->conn, batch) == 0 && rbatch_reply(batch, 0) &&
	      rbatch_reply(batch, 0)->type == REDIS_REPLY_STATUS;
	rc = 0;
out:
	cmdargs_free(&c);
	return rc;
}

/* sluice_build_info, sluice_redis_up and, when Redis is `up`, sluice_registry_paths.  0 or -ENOMEM. */
int metrics_put_redis(struct strbuf *b, const struct api *a, struct rbatch *batch, int up)
{
	if (metrics_head(b, "sluice_build_info", "gauge", "sluiced version.") ||
	    metrics_printf(b, "sluice_build_info{version=\"%s\"} 1\n", SLUICE_VERSION) ||
	    metrics_head(b, "sluice_redis_up", "gauge", "1 when the admin API reached Redis for this scrape.") ||
	    metrics_printf(b, "sluice_redis_up %d\n", up))
		return -ENOMEM;
	if (!up)
		return 0;
	if (metrics_head(b, "sluice_registry_paths", "gauge",
		     "Paths registered: in the 1024 shards' due indexes of each of sluice's own layouts, in a "
		     "foreign layout's registry set."))
		return -ENOMEM;
	for (size_t i = 0, at = 1; i < a->nlayouts; i++) {
		size_t n = registry_cmds(&a->layouts[i]);
		long long sum = 0, v;
		int ok = n > 0;

		for (size_t k = 0; k < n; k++, at++) {
			if (reply_int(rbatch_reply(batch, at), &v))
				ok = 0; /* a registry of another type: no sample rather than a wrong one */
			else
				sum += v;
		}
		if (ok && metrics_printf(b, "sluice_registry_paths{layout=\"%s\"} %lld\n", a->layouts[i].name, sum))
			return -ENOMEM;
	}
	return 0;
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

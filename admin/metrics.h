#ifndef SLUICE_ADMIN_METRICS_H
#define SLUICE_ADMIN_METRICS_H
/*
 * GET /metrics's parts (admin/routes_metrics.c puts them together): the
 * text format's pieces (admin/metrics_text.c) and the Redis side
 * (admin/metrics_redis.c).  Every function returns 0 or -ENOMEM and appends
 * to the caller's buffer.
 */
#include "admin/routes.h"
#include "core/rconn.h"
#include "core/strbuf.h"
#include "worker/status.h"

/* Append one formatted line (at most 511 bytes). */
int metrics_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The "# HELP" and "# TYPE" lines of metric `name`. */
int metrics_head(struct strbuf *b, const char *name, const char *type, const char *help);
/* sluice_build_info, sluice_redis_up (and its sample's age) and sluice_registry_paths, from the sampler.  0 or -ENOMEM. */
int metrics_put_redis(struct strbuf *b, const struct api *a);
/* sluice_redis_node_* and sluice_redis_redirects_total, per primary of the worker's status. */
int metrics_put_nodes(struct strbuf *b, const struct worker_status *st);
/*
 * The Prometheus convention's process metrics (process_cpu_seconds_total,
 * process_resident_memory_bytes, process_virtual_memory_bytes,
 * process_open_fds, process_max_fds, process_start_time_seconds), from
 * /proc/self; a figure that cannot be read is left out.
 */
int metrics_put_process(struct strbuf *b);
/* sluice_lease_*: the shard leases of the worker's status (nothing when it runs without leases). */
int metrics_put_leases(struct strbuf *b, const struct worker_status *st);

#endif

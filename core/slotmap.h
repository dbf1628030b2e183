#ifndef SLUICE_SLOTMAP_H
#define SLUICE_SLOTMAP_H
/*
 * Redis Cluster's slot map as CLUSTER SLOTS answers it (the cluster
 * specification, "Cluster topology"; Redis's clusterReplyMultiBulkSlots):
 * an array of ranges, each [start, end, primary, replica...], a node being
 * [ip, port, id, ...].  Only the parsing lives here; core/rconn.c owns the
 * connections and routes by it.
 */
#include <hiredis/hiredis.h>
#include <stddef.h>

#include "core/rnode.h"

struct slotmap_node {
	char host[RNODE_HOST_MAX];
	int port;
};

struct slotmap_range {
	unsigned start, end;          /* slots, inclusive, 0..16383 */
	struct slotmap_node primary;
	size_t nreplicas;
	struct slotmap_node replica[4]; /* the first four replicas */
};

struct slotmap {
	struct slotmap_range *v;      /* owned; sorted by start */
	size_t n;
};

/*
 * Parse CLUSTER SLOTS reply `r` into *out (freed by slotmap_clear).  A node
 * whose ip is "" (a node that does not know its own address) is given
 * `default_host`.  0, -EPROTO (not a slot map: an error reply, or a range
 * outside 0..16383, or a node without ip and port), -ENOMEM.  *out is
 * written only on success.
 */
int slotmap_parse(const redisReply *r, const char *default_host, struct slotmap *out);
void slotmap_clear(struct slotmap *m);
/* Slots that no range covers. */
size_t slotmap_uncovered(const struct slotmap *m);

#endif

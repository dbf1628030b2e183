/*
 * The one Redis layer: a single Redis, or a Redis Cluster routed by slot
 * (DESIGN.md "Redis Cluster"), behind the same calls.  Connections to nodes
 * are core/rnode.c's; parsing CLUSTER SLOTS is core/slotmap.c's; this file
 * keeps the topology; core/rpipe.c runs the pipelines, core/rbatch.c queues them.
 */
#include "core/rconn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/rconn_int.h"
#include "core/shard.h"
#include "core/slotmap.h"

/* A map marked stale is asked again no more often than this (ms) */
#define REFRESH_MIN_MS 100

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Room for one more node in each per-node array.  0 or -ENOMEM (the arrays keep what they had). */
static int grow_nodes(struct rconn *c)
{
	size_t cap = c->capnodes ? c->capnodes * 2 : 8, old = c->capnodes;
	struct rnode *v;
	struct rconn_run *run;
	struct pollfd *pfd;
	unsigned *who;
	uint16_t *primary, *ordinal;

	if (cap > RCONN_NODES_MAX)
		cap = RCONN_NODES_MAX;
	if (!(v = realloc(c->nodes, cap * sizeof(*v))))
		return -ENOMEM;
	c->nodes = v;
	if (!(run = realloc(c->run, cap * sizeof(*run))))
		return -ENOMEM;
	c->run = run;
	memset(run + old, 0, (cap - old) * sizeof(*run));
	if (!(pfd = realloc(c->pfd, cap * sizeof(*pfd))))
		return -ENOMEM;
	c->pfd = pfd;
	if (!(who = realloc(c->pwho, cap * sizeof(*who))))
		return -ENOMEM;
	c->pwho = who;
	if (!(primary = realloc(c->primary, cap * sizeof(*primary))))
		return -ENOMEM;
	c->primary = primary;
	if (!(ordinal = realloc(c->ordinal, cap * sizeof(*ordinal))))
		return -ENOMEM;
	c->ordinal = ordinal;
	memset(ordinal + old, 0xFF, (cap - old) * sizeof(*ordinal)); /* RCONN_NO_NODE */
	c->capnodes = cap;
	return 0;
}

unsigned rconn_node_at(struct rconn *c, const char *host, int port, const char *socket)
{
	for (size_t i = 0; i < c->nnodes; i++) {
		const struct rnode *n = &c->nodes[i];

		if (socket ? n->socket && !strcmp(n->socket, socket)
			   : !n->socket && n->port == port && !strcmp(n->host, host)) {
			c->nodes[i].gen = c->gen;
			return (unsigned)i;
		}
	}
	if (c->nnodes >= c->room) {
		/*
		 * Full: reuse the entry of an address that serves no slot now and
		 * has no connection (a node that moved to another address, as pods
		 * do), not a seed's; so a daemon follows its nodes however often
		 * their addresses change.
		 */
		for (size_t i = c->nseeds; i < c->nnodes; i++) {
			int serves = c->ordinal[i] != RCONN_NO_NODE;

			for (size_t s = 0; s < SHARD_SLOTS && !serves; s++)
				serves = c->owner[s] == i;
			if (serves || c->nodes[i].ctx || c->nodes[i].gen == c->gen)
				continue;
			rnode_clear(&c->nodes[i]);
			if (rnode_init(&c->nodes[i], host, port, socket, c->t.user, c->t.password, c->t.db, c->timeout_ms))
				return RCONN_NO_NODE;
			c->nodes[i].gen = c->gen;
			c->nodes[i].abort = &c->abort;
			memset(&c->run[i], 0, sizeof(c->run[i]));
			return (unsigned)i;
		}
		return RCONN_NO_NODE;
	}
	if (c->nnodes == c->capnodes && grow_nodes(c))
		return RCONN_NO_NODE;
	if (rnode_init(&c->nodes[c->nnodes], host, port, socket, c->t.user, c->t.password, c->t.db,
		       c->timeout_ms))
		return RCONN_NO_NODE;
	c->nodes[c->nnodes].gen = c->gen;
	c->nodes[c->nnodes].abort = &c->abort;
	return (unsigned)c->nnodes++;
}

struct rconn *rconn_new(const struct redis_target *t, int64_t timeout_ms)
{
	struct rconn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->t.port = t->port;
	c->t.db = t->db;
	c->t.host = dup_or_null(t->host);
	c->t.socket = dup_or_null(t->socket);
	c->t.user = dup_or_null(t->user);
	c->t.password = dup_or_null(t->password);
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
	c->room = RCONN_NODES_MIN;
	rabort_init(&c->abort);
	if ((t->host && !c->t.host) || (t->socket && !c->t.socket) || (t->user && !c->t.user) ||
	    (t->password && !c->t.password))
		goto bad;
	/* the seeds: the URL's first node, then those after commas */
	if (rconn_node_at(c, c->t.host, c->t.port, c->t.socket) == RCONN_NO_NODE)
		goto bad;
	for (size_t i = 0; i < t->nseeds && !t->socket; i++)
		if (rconn_node_at(c, t->seeds[i].host, t->seeds[i].port, NULL) == RCONN_NO_NODE)
			goto bad;
	c->nseeds = c->nnodes;
	for (size_t s = 0; s < SHARD_SLOTS; s++)
		c->owner[s] = RCONN_NO_NODE;
	return c;
bad:
	rconn_free(c);
	return NULL;
}

void rconn_free(struct rconn *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nnodes; i++)
		rnode_clear(&c->nodes[i]);
	free(c->nodes);
	free(c->run);
	free(c->pfd);
	free(c->pwho);
	free(c->primary);
	free(c->ordinal);
	redis_target_clear(&c->t);
	rabort_destroy(&c->abort);
	free(c);
}

void rconn_abort(struct rconn *c)
{
	rabort_fire(&c->abort);
}

/* ---- topology ---------------------------------------------------------------- */

/* Make node `ni` the owner of every slot: a single Redis. */
static void become_single(struct rconn *c, unsigned ni)
{
	c->mode = RCONN_SINGLE;
	for (size_t s = 0; s < SHARD_SLOTS; s++)
		c->owner[s] = (uint16_t)ni;
	for (size_t i = 0; i < c->nnodes; i++)
		c->ordinal[i] = RCONN_NO_NODE;
	c->primary[0] = (uint16_t)ni;
	c->ordinal[ni] = 0;
	c->nprimary = 1;
	c->epoch++;
}

/* Install map `m` (from CLUSTER SLOTS).  0 or -ENOMEM (the map we had is kept). */
static int install_map(struct rconn *c, const struct slotmap *m)
{
	uint16_t owner[SHARD_SLOTS], *primary;
	size_t np = 0, named = 0;
	int changed;

	/* room for every node it names (twice, and the seeds: see RCONN_NODES_MIN) */
	for (size_t i = 0; i < m->n; i++)
		named += 1 + m->v[i].nreplicas;
	if (c->nseeds + 2 * named > c->room)
		c->room = c->nseeds + 2 * named < RCONN_NODES_MAX ? c->nseeds + 2 * named : RCONN_NODES_MAX;
	/* a primary owns a range at least: no more primaries than ranges */
	if (!(primary = malloc((m->n ? m->n : 1) * sizeof(*primary))))
		return -ENOMEM;
	for (size_t s = 0; s < SHARD_SLOTS; s++)
		owner[s] = RCONN_NO_NODE;
	c->gen++; /* the nodes this map names are not reused for one another */
	for (size_t i = 0; i < m->n; i++) {
		unsigned ni = rconn_node_at(c, m->v[i].primary.host, m->v[i].primary.port, NULL);
		size_t j;

		if (ni == RCONN_NO_NODE) {
			free(primary);
			return -ENOMEM;
		}
		for (size_t r = 0; r < m->v[i].nreplicas; r++)
			(void)rconn_node_at(c, m->v[i].replica[r].host, m->v[i].replica[r].port, NULL);
		for (unsigned s = m->v[i].start; s <= m->v[i].end; s++)
			owner[s] = (uint16_t)ni;
		/* primaries in the order of their lowest slot (the map is sorted by start) */
		for (j = 0; j < np && primary[j] != ni; j++)
			;
		if (j == np)
			primary[np++] = (uint16_t)ni;
	}
	changed = c->mode != RCONN_CLUSTER || np != c->nprimary ||
		  memcmp(primary, c->primary, np * sizeof(*primary)) || memcmp(owner, c->owner, sizeof(owner));
	memcpy(c->owner, owner, sizeof(owner));
	memcpy(c->primary, primary, np * sizeof(*primary));
	c->nprimary = np;
	free(primary);
	for (size_t i = 0; i < c->nnodes; i++)
		c->ordinal[i] = RCONN_NO_NODE;
	for (size_t j = 0; j < np; j++)
		c->ordinal[c->primary[j]] = (uint16_t)j;
	c->mode = RCONN_CLUSTER;
	/* a node that no longer serves slots keeps no connection */
	for (size_t i = 0; i < c->nnodes; i++)
		if (c->ordinal[i] == RCONN_NO_NODE)
			rnode_close(&c->nodes[i]);
	if (changed)
		c->epoch++;
	return 0;
}

int rconn_take_map(struct rconn *c, unsigned ni, redisReply *r)
{
	const struct rnode *n = &c->nodes[ni];
	struct slotmap m = { 0 };
	int rc;

	if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "cluster support disabled")) {
		freeReplyObject(r);
		if (c->mode == RCONN_CLUSTER)
			return -EPROTO; /* a node of the cluster was replaced by a plain Redis: ask another */
		become_single(c, ni);
		return 0;
	}
	rc = slotmap_parse(r, n->host, &m);
	if (rc || m.n == 0) {
		snprintf(c->err, sizeof(c->err), "%s: CLUSTER SLOTS: %.200s", n->addr,
			 r->type == REDIS_REPLY_ERROR ? r->str : "no slots assigned");
		freeReplyObject(r);
		slotmap_clear(&m);
		return -EPROTO;
	}
	freeReplyObject(r);
	rc = install_map(c, &m);
	slotmap_clear(&m);
	return rc;
}

/* Ask node `ni` for the map.  0 (installed, or became single), -EAGAIN/-EIO (node down), -EPROTO, -ENOMEM. */
static int ask_map(struct rconn *c, unsigned ni)
{
	struct rnode *n = &c->nodes[ni];
	const char *argv[2] = { "CLUSTER", "SLOTS" };
	size_t lens[2] = { 7, 5 };
	redisReply *r;
	int rc;

	if ((rc = rnode_ensure(n, c->sha)) || (rc = rnode_call(n, "CLUSTER SLOTS", 2, argv, lens, &r)))
		return rc;
	return rconn_take_map(c, ni, r);
}

/*
 * Know the topology: at first contact, and when a cluster's map was marked
 * stale (MOVED, a node lost), at most every REFRESH_MIN_MS.  Nodes asked in
 * turn: the primaries that are up, the seeds, every other node known.
 */
int rconn_topology(struct rconn *c)
{
	int64_t now = clock_mono_ms();
	int rc = -EIO;

	if (c->mode == RCONN_SINGLE || (c->mode == RCONN_CLUSTER && (!c->stale || now - c->refreshed_ms < REFRESH_MIN_MS)))
		return 0;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < c->nnodes; i++) {
			int up = c->nodes[i].ctx != NULL;

			/* pass 0: nodes already connected; pass 1: the rest */
			if (up != (pass == 0))
				continue;
			if (!(rc = ask_map(c, (unsigned)i))) {
				c->stale = 0;
				c->refreshed_ms = now;
				return 0;
			}
			if (c->nodes[i].err[0] && rc != -EPROTO)
				snprintf(c->err, sizeof(c->err), c->nnodes > 1 ? "%s: %s" : "%.0s%s", c->nodes[i].addr,
					 c->nodes[i].err);
		}
	c->refreshed_ms = now;
	if (c->mode == RCONN_CLUSTER)
		return 0; /* keep routing by the map we have; the nodes that are up still serve */
	return rc == -EPROTO ? -EIO : rc;
}

int rconn_ensure(struct rconn *c)
{
	int rc = rconn_topology(c);

	if (rc)
		return rc;
	for (size_t i = 0; i < c->nprimary; i++)
		if ((rc = rnode_ensure(&c->nodes[c->primary[i]], c->sha)))
			return rc;
	return 0;
}

int rconn_is_up(const struct rconn *c)
{
	if (!c->nprimary)
		return 0;
	for (size_t i = 0; i < c->nprimary; i++)
		if (!c->nodes[c->primary[i]].ctx)
			return 0;
	return 1;
}

const char *rconn_errstr(const struct rconn *c)
{
	return c->err;
}

uint64_t rconn_connects(const struct rconn *c)
{
	uint64_t n = 0;

	for (size_t i = 0; i < c->nnodes; i++)
		n += c->nodes[i].connects;
	return n;
}

uint64_t rconn_round_trips(const struct rconn *c)
{
	return c->round_trips;
}

int rconn_is_cluster(const struct rconn *c)
{
	return c->mode == RCONN_CLUSTER;
}

size_t rconn_primaries(const struct rconn *c)
{
	return c->nprimary;
}

size_t rconn_shard_primary(const struct rconn *c, unsigned shard)
{
	uint16_t ni;

	if (c->nprimary <= 1)
		return 0; /* a single Redis (the due walk asks this for every shard it calls) */
	ni = c->owner[shard_slot(shard)];
	/* a node a MOVED named that the map has not listed yet is no primary of ours: 0 */
	return ni != RCONN_NO_NODE && c->ordinal[ni] != RCONN_NO_NODE ? c->ordinal[ni] : 0;
}

uint64_t rconn_map_epoch(const struct rconn *c)
{
	return c->epoch;
}

const char *rconn_strerror(const struct rconn *c, int rc)
{
	switch (rc) {
	case -EIO:
	case -EAGAIN:
		return c->err[0] ? c->err : "not connected";
	case -ENOSPC:
		return REPLY_OOM_TEXT;
	case -EBADMSG:
		return "Redis refused the command";
	case -EBUSY:
		return c->moving[0] ? c->moving : "a cluster slot is being moved to another node";
	case -EPROTO:
		return "unexpected reply from Redis";
	default:
		return strerror(-rc);
	}
}

/* "0-5460 10923" style list of the slots node `ni` owns, into buf; the number of slots. */
static size_t slot_ranges(const struct rconn *c, unsigned ni, char *buf, size_t cap)
{
	size_t n = 0, used = 0;

	buf[0] = '\0';
	for (size_t s = 0; s < SHARD_SLOTS; s++) {
		size_t e = s;

		if (c->owner[s] != ni)
			continue;
		while (e + 1 < SHARD_SLOTS && c->owner[e + 1] == ni)
			e++;
		n += e - s + 1;
		if (used + 16 < cap)
			used += (size_t)snprintf(buf + used, cap - used, e > s ? "%s%zu-%zu" : "%s%zu", used ? " " : "",
						 s, e);
		s = e;
	}
	return n;
}

size_t rconn_node_info(const struct rconn *c, struct rconn_node_info *out, size_t cap)
{
	size_t i;

	for (i = 0; i < c->nprimary && i < cap; i++) {
		const struct rnode *n = &c->nodes[c->primary[i]];
		struct rconn_node_info *o = &out[i];

		memset(o, 0, sizeof(*o));
		snprintf(o->addr, sizeof(o->addr), "%.95s", n->addr);
		o->slots = slot_ranges(c, c->primary[i], o->ranges, sizeof(o->ranges));
		o->up = n->ctx != NULL;
		o->connects = n->connects;
		o->errors = n->errors;
		o->moved = n->moved;
		o->ask = n->ask;
		o->tryagain = n->tryagain;
		snprintf(o->err, sizeof(o->err), "%.159s", n->err);
	}
	return i;
}

int rconn_coverage(struct rconn *c, char *why, size_t cap)
{
	struct rbatch *b = rbatch_new();
	const char *argv[1] = { "PING" }, *info[2] = { "CLUSTER", "INFO" };
	size_t lens[1] = { 4 }, infol[2] = { 7, 4 }, missing = 0;
	int rc;

	why[0] = '\0';
	if (!b)
		return -ENOMEM;
	/* the map as the cluster has it now (slots unassigned or moved show in no reply of ours) */
	if (c->mode == RCONN_CLUSTER)
		c->stale = 1;
	if ((rc = rconn_topology(c)))
		goto out;
	for (size_t s = 0; s < SHARD_SLOTS; s++)
		missing += c->owner[s] == RCONN_NO_NODE;
	if (missing) {
		size_t s = 0;

		while (c->owner[s] != RCONN_NO_NODE)
			s++;
		snprintf(why, cap, "%zu slots have no node (slot %zu among them)", missing, s);
		c->stale = 1;
		rc = -EIO;
		goto out;
	}
	/* a cluster's primaries: CLUSTER INFO, whose cluster_state says whether it serves keys */
	for (size_t i = 0; i < c->nprimary; i++)
		if ((rc = c->mode == RCONN_CLUSTER ? rbatch_cmd_at(b, i, 2, info, infol) : rbatch_cmd_at(b, i, 1, argv, lens)))
			goto out;
	if ((rc = rbatch_run(c, b)))
		goto out;
	/* a primary that does not answer first: the others' cluster_state:fail follows from it */
	for (size_t i = 0; i < c->nprimary; i++) {
		const redisReply *r = rbatch_reply(b, i);

		if (!r || r->type == REDIS_REPLY_ERROR) {
			char ranges[64];
			const struct rnode *n = &c->nodes[c->primary[i]];

			slot_ranges(c, c->primary[i], ranges, sizeof(ranges));
			snprintf(why, cap, "slots %s (%s): %s", ranges, n->addr,
				 r && !reply_is_nodedown(r) ? r->str : n->err[0] ? n->err : "not connected");
			rc = -EIO;
			goto out;
		}
	}
	for (size_t i = 0; i < c->nprimary; i++) {
		const redisReply *r = rbatch_reply(b, i);

		if (c->mode == RCONN_CLUSTER && r->type == REDIS_REPLY_STRING && !strstr(r->str, "cluster_state:ok")) {
			char ranges[64];

			slot_ranges(c, c->primary[i], ranges, sizeof(ranges));
			snprintf(why, cap, "slots %s (%s): cluster_state:fail (the cluster lacks a node's slots)", ranges,
				 c->nodes[c->primary[i]].addr);
			c->stale = 1;
			rc = -EIO;
			goto out;
		}
	}
out:
	if (rc && !why[0])
		snprintf(why, cap, "%s", rconn_strerror(c, rc));
	rbatch_free(b);
	return rc;
}



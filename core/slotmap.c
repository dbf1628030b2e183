#include "core/slotmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/shard.h"

void slotmap_clear(struct slotmap *m)
{
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/*
 * A node [endpoint, port, id, {metadata}]: the endpoint is an ip, a hostname
 * (cluster-preferred-endpoint-type), "" or NULL (the node does not know it,
 * or its type is unknown-endpoint: the address we asked), or "?" (a hostname
 * not set: the ip in the metadata, else the address we asked).
 */
static int parse_node(const redisReply *r, const char *default_host, struct slotmap_node *out)
{
	const redisReply *ep;
	const char *host = default_host;

	if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
	    (r->element[0]->type != REDIS_REPLY_STRING && r->element[0]->type != REDIS_REPLY_NIL) ||
	    r->element[1]->type != REDIS_REPLY_INTEGER || r->element[1]->integer < 0 ||
	    r->element[1]->integer > 65535)
		return -EPROTO;
	ep = r->element[0];
	if (ep->type == REDIS_REPLY_STRING && ep->len && strcmp(ep->str, "?") != 0)
		host = ep->str;
	else if (ep->type == REDIS_REPLY_STRING && !strcmp(ep->str, "?") && r->elements >= 4 &&
		 r->element[3]->type == REDIS_REPLY_ARRAY) {
		const redisReply *md = r->element[3];

		for (size_t i = 0; i + 1 < md->elements; i += 2)
			if (md->element[i]->type == REDIS_REPLY_STRING && !strcmp(md->element[i]->str, "ip") &&
			    md->element[i + 1]->type == REDIS_REPLY_STRING)
				host = md->element[i + 1]->str;
	}
	if (strlen(host) >= sizeof(out->host))
		return -EPROTO;
	snprintf(out->host, sizeof(out->host), "%s", host);
	out->port = (int)r->element[1]->integer;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct slotmap_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int slotmap_parse(const redisReply *r, const char *default_host, struct slotmap *out)
{
	struct slotmap m = { 0 };

	if (!r || r->type != REDIS_REPLY_ARRAY)
		return -EPROTO;
	if (r->elements && !(m.v = calloc(r->elements, sizeof(*m.v))))
		return -ENOMEM;
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *e = r->element[i];
		struct slotmap_range *g = &m.v[m.n];

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER || e->element[0]->integer < 0 ||
		    e->element[1]->integer < e->element[0]->integer || e->element[1]->integer >= SHARD_SLOTS ||
		    parse_node(e->element[2], default_host, &g->primary)) {
			slotmap_clear(&m);
			return -EPROTO;
		}
		g->start = (unsigned)e->element[0]->integer;
		g->end = (unsigned)e->element[1]->integer;
		for (size_t j = 3; j < e->elements && g->nreplicas < 4; j++)
			if (!parse_node(e->element[j], default_host, &g->replica[g->nreplicas]))
				g->nreplicas++;
		m.n++;
	}
	qsort(m.v, m.n, sizeof(*m.v), by_start);
	*out = m;
	return 0;
}

size_t slotmap_uncovered(const struct slotmap *m)
{
	size_t covered = 0;
	unsigned next = 0;

	/* ranges are sorted by start; overlapping ones (a map in flux) are counted once */
	for (size_t i = 0; i < m->n; i++) {
		unsigned s = m->v[i].start > next ? m->v[i].start : next;

		if (m->v[i].end >= s) {
			covered += m->v[i].end - s + 1;
			next = m->v[i].end + 1;
		}
	}
	return SHARD_SLOTS - covered;
}

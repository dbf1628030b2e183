#include "core/walk.h"

#include "core/glob.h"
#include "core/shard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int walk_queue(struct rbatch *b, const struct layout *l, size_t node, const char *cursor, const char *match,
	       size_t count)
{
	struct cmdargs a = { 0 };
	const char *const *argv;
	const size_t *lens;
	int rc, n;

	if (!l->foreign)
		return -EINVAL; /* sluice's own are walked shard by shard: walk_read */
	if (l->scan) {
		/* SCAN MATCH <key glob> TYPE <type> */
		if ((rc = cmdargs_str(&a, "SCAN")) || (rc = cmdargs_str(&a, cursor)) || (rc = cmdargs_str(&a, "MATCH")))
			goto out;
		if (match)
			rc = cmdargs_end(&a, layout_scan_glob(l, match, cmdargs_begin(&a)));
		else
			rc = cmdargs_str(&a, l->scan_match);
		if (rc || (rc = cmdargs_str(&a, "TYPE")) || (rc = cmdargs_str(&a, l->scan_type)))
			goto out;
	} else {
		/* SSCAN <registry> [MATCH <path glob, in Redis's dialect>] */
		if ((rc = cmdargs_str(&a, "SSCAN")) || (rc = cmdargs_str(&a, l->registry)) ||
		    (rc = cmdargs_str(&a, cursor)))
			goto out;
		if (match && ((rc = cmdargs_str(&a, "MATCH")) ||
			      (rc = cmdargs_end(&a, glob_to_redis(match, cmdargs_begin(&a))))))
			goto out;
	}
	if ((rc = cmdargs_str(&a, "COUNT")) || (rc = cmdargs_int(&a, (int64_t)count)))
		goto out;
	/* SCAN walks one node's keyspace: the caller goes from primary to primary */
	rc = (n = cmdargs_view(&a, NULL, &argv, &lens)) < 0 ? n
	     : l->scan ? rbatch_cmd_at(b, node, n, argv, lens) : rbatch_cmd(b, n, argv, lens);
out:
	cmdargs_free(&a);
	return rc;
}

int walk_page(const redisReply *r, char cursor[REPLY_CURSOR_MAX], const redisReply **members)
{
	return reply_scan_page(r, cursor, members);
}

int walk_path(const struct layout *l, const redisReply *m, const char **path, size_t *plen)
{
	const char *p;
	size_t n;

	if (!m || m->type != REDIS_REPLY_STRING)
		return -EINVAL;
	p = m->str;
	n = m->len;
	if (l->scan && layout_path_of(l, m->str, m->len, &p, &n))
		return -EINVAL;
	if (n == 0)
		return -EINVAL;
	*path = p;
	*plen = n;
	return 0;
}

int walk_at_end(const char *cursor)
{
	return strcmp(cursor, "0") == 0;
}

/* ---- walks across layouts and shards -------------------------------------------- */

void walk_start(struct walk_pos *pos)
{
	memset(pos, 0, sizeof(*pos));
	pos->cursor[0] = '0';
}

void walk_pos_format(const struct walk_pos *pos, char buf[WALK_POS_MAX])
{
	if (pos->done || (pos->layout == 0 && pos->shard == 0 && walk_at_end(pos->cursor)))
		snprintf(buf, WALK_POS_MAX, "0");
	else if (walk_at_end(pos->cursor))
		snprintf(buf, WALK_POS_MAX, "%zu-%u-0", pos->layout, pos->shard);
	else
		snprintf(buf, WALK_POS_MAX, "%zu-%u-%s-%x", pos->layout, pos->shard, pos->cursor, (unsigned)pos->node);
}

/* A decimal of 1..20 digits below 2^64 at s, up to `end` (exclusive); 0 and *v, or -EINVAL. */
static int decimal(const char *s, const char *end, unsigned long long *v)
{
	char buf[24], *e;

	if (end <= s || end - s > 20)
		return -EINVAL;
	for (const char *p = s; p < end; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	memcpy(buf, s, (size_t)(end - s));
	buf[end - s] = '\0';
	errno = 0;
	*v = strtoull(buf, &e, 10);
	return errno == ERANGE || *e ? -EINVAL : 0;
}

/* A node of walk_pos_format: 1..8 lower-case hex digits at s, to its end, not 0; 0 and *v, or -EINVAL. */
static int hex32(const char *s, unsigned long long *v)
{
	size_t n = strlen(s);

	if (n < 1 || n > 8 || strspn(s, "0123456789abcdef") != n || !(*v = strtoull(s, NULL, 16)))
		return -EINVAL;
	return 0;
}

int walk_pos_parse(const char *s, const struct layout *layouts, size_t nlayouts, struct walk_pos *pos)
{
	const char *d1, *d2, *d3;
	unsigned long long l, k, cur, node = 0;
	struct walk_pos p;

	if (!s)
		return -EINVAL;
	if (strcmp(s, "0") == 0) {
		walk_start(pos);
		return 0;
	}
	if (!(d1 = strchr(s, '-')) || !(d2 = strchr(d1 + 1, '-')) || decimal(s, d1, &l) || decimal(d1 + 1, d2, &k))
		return -EINVAL;
	if (!(d3 = strchr(d2 + 1, '-')))
		d3 = d2 + 1 + strlen(d2 + 1);
	else if (hex32(d3 + 1, &node))
		return -EINVAL;
	if (decimal(d2 + 1, d3, &cur))
		return -EINVAL;
	/* a SCAN layout's "shard" is the primary whose keyspace the cursor is in */
	if (l >= nlayouts || (layouts[l].foreign ? k != 0 && !layouts[l].scan : k >= SHARD_COUNT) || k >= SHARD_COUNT)
		return -EINVAL;
	memset(&p, 0, sizeof(p));
	p.layout = (size_t)l;
	p.shard = (unsigned)k;
	snprintf(p.cursor, sizeof(p.cursor), "%llu", cur);
	p.node = (uint32_t)node;
	*pos = p;
	return 0;
}

void walk_pages_free(struct walk_pages *p)
{
	rbatch_free(p->batch);
	free(p->page);
	memset(p, 0, sizeof(*p));
}

/* Queue ZSCAN of shard `shard`'s due index of own layout `l`. */
static int queue_zscan(struct rbatch *b, const struct layout *l, unsigned shard, const char *cursor,
		       const char *match, size_t count)
{
	struct cmdargs a = { 0 };
	const char *const *argv;
	const size_t *lens;
	int rc, n;

	if ((rc = cmdargs_str(&a, "ZSCAN")) || (rc = cmdargs_end(&a, layout_shard_registry(l, shard, cmdargs_begin(&a)))) ||
	    (rc = cmdargs_str(&a, cursor)))
		goto out;
	if (match && ((rc = cmdargs_str(&a, "MATCH")) || (rc = cmdargs_end(&a, glob_to_redis(match, cmdargs_begin(&a))))))
		goto out;
	if ((rc = cmdargs_str(&a, "COUNT")) || (rc = cmdargs_int(&a, (int64_t)count)))
		goto out;
	rc = (n = cmdargs_view(&a, NULL, &argv, &lens)) < 0 ? n : rbatch_cmd(b, n, argv, lens);
out:
	cmdargs_free(&a);
	return rc;
}

int walk_read(struct rconn *c, const struct layout *layouts, size_t nlayouts, const struct walk_pos *at,
	      const char *match, size_t count, size_t width, struct walk_pages *out)
{
	const struct layout *l;
	size_t n;
	int rc;

	if (at->done || at->layout >= nlayouts)
		return -EINVAL;
	if (match && !glob_valid(match, strlen(match)))
		return -EINVAL;
	l = &layouts[at->layout];
	if (l->scan && rconn_primaries(c) && at->shard >= rconn_primaries(c))
		return -ERANGE; /* a cursor from before the cluster lost a primary */
	if (!out->batch && !(out->batch = rbatch_new()))
		return -ENOMEM;
	rbatch_clear(out->batch);
	out->n = 0;
	n = l->foreign ? 1 : SHARD_COUNT - at->shard;
	if (width < 1)
		width = 1;
	if (n > width)
		n = width;
	if (n > out->cap) {
		struct walk_page *np = realloc(out->page, n * sizeof(*np));

		if (!np)
			return -ENOMEM;
		out->page = np;
		out->cap = n;
	}
	for (size_t i = 0; i < n; i++) {
		const char *cursor = i == 0 ? at->cursor : "0";

		rc = l->foreign ? walk_queue(out->batch, l, l->scan ? at->shard : 0, cursor, match, count)
				: queue_zscan(out->batch, l, at->shard + (unsigned)i, cursor, match, count);
		if (rc)
			return rc;
	}
	if ((rc = rbatch_run(c, out->batch)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		const redisReply *r = rbatch_reply(out->batch, i);
		struct walk_page *pg = &out->page[i];

		memset(pg, 0, sizeof(*pg));
		pg->layout = at->layout;
		pg->shard = l->foreign && !l->scan ? 0 : at->shard + (unsigned)i;
		pg->nodes = rconn_primaries(c);
		if (reply_is_nodedown(r))
			return -EIO; /* a cluster node that does not answer: the walk cannot go past its shards */
		if (reply_is_moving(r))
			return -EBUSY; /* its slot is being moved: not a registry to skip, one to read again */
		if (reply_error(r)) {
			/* the caller's cursor, refused; else a registry of another type: skipped, reported */
			if (i == 0 && strstr(reply_error(r), "cursor"))
				return -ERANGE;
			if (reply_is_oom(r))
				return -ENOSPC;
			pg->error = reply_error(r);
			pg->next[0] = '0';
			continue;
		}
		if ((rc = reply_scan_page(r, pg->next, &pg->members)))
			return rc;
		pg->node = rbatch_reply_node(out->batch, i);
		if (i == 0 && !walk_at_end(at->cursor) && pg->node != at->node) {
			/*
			 * The cursor is another process's (the shard's slot moved, a
			 * failover, a restart): here it would skip or repeat at random.
			 * The registry from its start instead, a SCAN layout's from
			 * the first primary's keyspace (its keys may have moved to
			 * one walked already): paths may come twice, none is missed.
			 */
			struct walk_pos fresh = *at;

			snprintf(fresh.cursor, sizeof(fresh.cursor), "0");
			fresh.node = 0;
			if (l->scan)
				fresh.shard = 0;
			return walk_read(c, layouts, nlayouts, &fresh, match, count, width, out);
		}
		if (!walk_at_end(pg->next)) {
			/* its registry goes on at pg->next: a page of a later shard would
			 * move the caller's position (walk_after) past the rest of it */
			n = i + 1;
			break;
		}
	}
	out->n = n;
	return 0;
}

size_t walk_page_len(const struct layout *l, const struct walk_page *pg)
{
	if (!pg->members)
		return 0;
	return l->foreign ? pg->members->elements : pg->members->elements / 2;
}

int walk_member(const struct layout *l, const struct walk_page *pg, size_t i, const char **path, size_t *plen,
		double *due)
{
	const redisReply *m, *s;
	int rc;

	if (l->foreign) {
		if ((rc = walk_path(l, pg->members->element[i], path, plen)))
			return rc;
		*due = -1;
		return 0;
	}
	m = pg->members->element[2 * i];
	s = pg->members->element[2 * i + 1];
	if (reply_double(s, due) || walk_path(l, m, path, plen))
		return -EINVAL;
	return 0;
}

int walk_page_registry(const struct layout *l, const struct walk_page *pg, struct strbuf *b)
{
	if (!l->foreign)
		return layout_shard_registry(l, pg->shard, b);
	if (l->scan)
		return strbuf_add(b, l->scan_match, strlen(l->scan_match));
	return strbuf_add(b, l->registry, strlen(l->registry));
}

void walk_after(const struct layout *layouts, size_t nlayouts, const struct walk_page *pg, struct walk_pos *pos)
{
	memset(pos, 0, sizeof(*pos));
	pos->layout = pg->layout;
	pos->shard = pg->shard;
	if (!walk_at_end(pg->next)) {
		snprintf(pos->cursor, sizeof(pos->cursor), "%s", pg->next);
		pos->node = pg->node;
		return;
	}
	pos->cursor[0] = '0';
	if ((!layouts[pg->layout].foreign && pg->shard + 1 < SHARD_COUNT) ||
	    (layouts[pg->layout].scan && pg->shard + 1 < pg->nodes)) {
		pos->shard = pg->shard + 1; /* the next shard, or a SCAN layout's next primary */
		return;
	}
	pos->shard = 0;
	if (++pos->layout >= nlayouts)
		pos->done = 1;
}

#ifndef SLUICE_WALK_H
#define SLUICE_WALK_H
/*
 * Pages of a layout's paths, the one registry/keyspace walk the worker, the
 * path listing and bulk reset share.
 *
 * A foreign layout: SSCAN of the layout's registry set, or, for a layout
 * without one, SCAN MATCH <key glob> TYPE <type> of its key template.  A
 * walk is a cursor ("0" at the start and again at the end) that the caller
 * keeps; each page is queued into a pipeline so it can travel with other
 * commands (the worker sends the next page of a foreign layout with the
 * current batch's script call): walk_queue, walk_page, walk_path.
 *
 * Across layouts (the listing, bulk reset): struct walk_pos, walk_read and
 * walk_after.  sluice's own layouts (key layout 2) keep one due index per
 * shard, a sorted set, and are walked with ZSCAN shard after shard, 0 to
 * SHARD_COUNT - 1, several shards' pages in one pipeline; the foreign ones
 * after them as above.
 */
#include <hiredis/hiredis.h>
#include <stddef.h>

#include "core/layout.h"
#include "core/rconn.h"
#include "core/reply.h"

/*
 * Queue the page of foreign layout `l` after `cursor`, about `count` paths,
 * only those whose path matches the glob `match` (NULL: all), in the rules'
 * dialect (core/glob.h; Redis is sent its own).  0, -EINVAL for a glob that
 * is not glob_valid or a layout of sluice's own (walk_read walks those), or
 * -ENOMEM.
 */
int walk_queue(struct rbatch *b, const struct layout *l, size_t node, const char *cursor, const char *match,
	       size_t count);
/*
 * Read a page reply: the next cursor into `cursor`, the members borrowed.
 * 0, -EBADMSG (an error reply, e.g. a registry of another type), -EPROTO.
 */
int walk_page(const redisReply *r, char cursor[REPLY_CURSOR_MAX], const redisReply **members);
/*
 * The path member `m` of a page stands for (*path borrowed from `m`): the
 * member itself for a registry, the part of the key the template wraps for a
 * SCAN layout.  -EINVAL for a member to skip: not a string, not of the
 * layout's key shape, or empty (no client writes "", the scripts refuse it).
 */
int walk_path(const struct layout *l, const redisReply *m, const char **path, size_t *plen);
/* 1 when `cursor` is at the end (and start) of a walk. */
int walk_at_end(const char *cursor);

/* ---- walks across layouts and shards -------------------------------------------- */

/*
 * Where a walk across layouts stands.  A registry's cursor is good only on
 * the Redis process that gave it (rbatch_reply_node): a walk that resumes
 * one on another (the shard's slot moved to another node, a failover, a
 * restart) reads that registry again from its start, and a SCAN layout's
 * keyspaces from the first primary's, so that paths may come twice but none
 * is missed.
 */
struct walk_pos {
	size_t layout;                 /* index into the layouts */
	unsigned shard;                /* own layouts: the shard whose due index is walked; 0 for a foreign one */
	char cursor[REPLY_CURSOR_MAX]; /* the registry's (or keyspace's) cursor, "0": its start */
	uint32_t node;                 /* the process that gave `cursor` (rbatch_reply_node); 0 at a start,
					* or unknown (a position of before: read again from the start) */
	int done;                      /* past the last layout */
};

/* The start of a walk: layout 0, shard 0, cursor "0". */
void walk_start(struct walk_pos *pos);
/*
 * A position as text, for a client to hand back ("0" at the start and once
 * done; otherwise "<layout>-<shard>-<cursor>", and "-<node>" in hex when the
 * cursor is not a start, opaque to clients), into `buf` (WALK_POS_MAX bytes).
 */
#define WALK_POS_MAX 64
void walk_pos_format(const struct walk_pos *pos, char buf[WALK_POS_MAX]);
/*
 * Read a position walk_pos_format wrote, for `nlayouts` layouts: 0 and *pos,
 * or -EINVAL when `s` is not one (a layout out of range, a shard out of
 * 0..SHARD_COUNT-1 or not 0 for a foreign layout, a cursor that is not a
 * decimal of at most 64 bits, a node that is not 1..8 lower-case hex digits
 * or is 0).  One
 * without a node (as this API gave before) reads as node 0.
 */
int walk_pos_parse(const char *s, const struct layout *layouts, size_t nlayouts, struct walk_pos *pos);

/* One registry (or keyspace) page that walk_read read. */
struct walk_page {
	size_t layout;
	unsigned shard;                /* own layouts: the shard; a SCAN layout: the primary (its keyspace) */
	size_t nodes;                  /* primaries when it was read (a SCAN layout walks each) */
	char next[REPLY_CURSOR_MAX];   /* the registry's cursor after this page ("0": its end) */
	uint32_t node;                 /* the process that gave it (rbatch_reply_node) */
	const redisReply *members;     /* borrowed from the walk_pages; NULL when `error` is set */
	const char *error;             /* a registry that cannot be walked (a key of another type):
					* Redis's error text, borrowed; the page counts as read, empty */
};

/* The pages of one walk_read, and the replies they borrow from; zero it before the first use. */
struct walk_pages {
	struct rbatch *batch;          /* owned */
	struct walk_page *page;        /* owned */
	size_t n, cap;
};
void walk_pages_free(struct walk_pages *p);

/*
 * Read, in one pipeline, the pages from position `at` (not done) on: for an
 * own layout up to `width` shards' due indexes (at->shard with at->cursor,
 * then the next shards from their start, within that layout), for a foreign
 * one its next page; about `count` paths a page, only those whose path
 * matches the glob `match` (NULL: all; the rules' dialect, core/glob.h).
 * The pages end at the first whose registry is not finished (its next
 * cursor is not "0"), so that walk_after over them all, in order, never
 * moves past paths not yet read.  A cursor at->cursor that another process
 * gave than the one answering now (at->node) is not used: that registry is
 * read from its start (a SCAN layout: from the first primary's keyspace),
 * and the pages say so (their shard, cursor).  Replaces what `out` held.  0; -EINVAL for a glob that is not glob_valid;
 * -ERANGE when Redis refuses at->cursor (not one it gave); -EIO when a
 * cluster node does not answer, -EBUSY when a registry's slot is being
 * moved (the walk cannot go past either: try again); an rconn error or
 * -ENOMEM; -EPROTO for a reply of another shape.
 */
int walk_read(struct rconn *c, const struct layout *layouts, size_t nlayouts, const struct walk_pos *at,
	      const char *match, size_t count, size_t width, struct walk_pages *out);
/* Members of a page: paths (own layouts: pairs of path and due score, counted once). */
size_t walk_page_len(const struct layout *l, const struct walk_page *pg);
/*
 * Member `i` of a page: the path (borrowed from the reply) and, for an own
 * layout, its due time in ms (*due; -1 for a foreign layout).  -EINVAL for a
 * member to skip, as walk_path says.
 */
int walk_member(const struct layout *l, const struct walk_page *pg, size_t i, const char **path, size_t *plen,
		double *due);
/*
 * The name of the registry a page read (own layouts: the shard's due index;
 * a foreign layout's set; a SCAN layout's key glob), appended to `b`.  0 or -ENOMEM.
 */
int walk_page_registry(const struct layout *l, const struct walk_page *pg, struct strbuf *b);
/* *pos becomes the position after page `pg` of a walk over `nlayouts` layouts. */
void walk_after(const struct layout *layouts, size_t nlayouts, const struct walk_page *pg, struct walk_pos *pos);

#endif

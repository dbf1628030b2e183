#ifndef SLUICE_WALK_H
#define SLUICE_WALK_H
/*
 * Pages of a layout's paths, the one registry/keyspace walk the worker, the
 * path listing and bulk reset share: SSCAN of the layout's registry set, or,
 * for a layout without one, SCAN MATCH <key glob> TYPE <type> of its key
 * template.  A walk is a cursor ("0" at the start and again at the end) that
 * the caller keeps; each page is queued into a pipeline so it can travel with
 * other commands (the worker sends the next page with the current batch's
 * script call).
 */
#include <hiredis/hiredis.h>
#include <stddef.h>

#include "core/layout.h"
#include "core/rconn.h"
#include "core/reply.h"

/*
 * Queue the page of `l` after `cursor`, about `count` paths, only those whose
 * path matches the glob `match` (NULL: all), in the rules' dialect
 * (core/glob.h; Redis is sent its own).  0, -EINVAL for a glob that is not
 * glob_valid, or -ENOMEM.
 */
int walk_queue(struct rbatch *b, const struct layout *l, const char *cursor, const char *match, size_t count);
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

#endif

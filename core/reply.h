#ifndef SLUICE_REPLY_H
#define SLUICE_REPLY_H
/*
 * Typed reads of hiredis replies, so no caller walks a redisReply by hand.
 * Each returns 0 and writes its out-parameters only on success; when the
 * reply is a Redis error reply (reply_error() has its text) reply_errno's
 * errno (-ENOSPC at maxmemory, -EIO for NODEDOWN, -EBUSY for a slot being
 * moved, else -EBADMSG), -EPROTO when it has another shape.  Borrowed pointers live as long as the reply.
 */
#include <hiredis/hiredis.h>
#include <stddef.h>

/* Longest cursor SCAN/SSCAN answer that a caller keeps (Redis's are 64-bit decimals). */
#define REPLY_CURSOR_MAX 24

/* The text of an error reply, or NULL when `r` is not one. */
const char *reply_error(const redisReply *r);
/*
 * Redis over `maxmemory` with nothing it may evict (maxmemory-policy
 * noeviction) refuses, before they run, the commands flagged denyoom, the
 * scripts that declare flags but neither allow-oom nor no-writes, and every
 * command queued after MULTI (EXEC then answers EXECABORT), with the error
 * reply "OOM command not allowed when used memory > 'maxmemory'." (a script
 * without flags gets it, with " script: ..." after it, only when its first
 * write is a denyoom one).  Reads, deletes and allow-oom scripts still run.
 * reply_is_oom tells that reply (1) from any other; REPLY_OOM_TEXT is how
 * sluice names it to people.
 */
#define REPLY_OOM_TEXT "Redis is out of memory (maxmemory)"
int reply_is_oom(const redisReply *r);
/*
 * The error reply the one Redis layer gives a command whose cluster node did
 * not answer while other nodes of the pipeline did (core/rconn.h): starts
 * with REPLY_NODEDOWN, then the node and the cause.
 */
#define REPLY_NODEDOWN "NODEDOWN"
int reply_is_nodedown(const redisReply *r);
/*
 * The cause an error reply's text names, for people: REPLY_OOM_TEXT for
 * "OOM ...", a line of static storage for the error words that name a
 * state of Redis rather than a refusal ("MOVED: slot map changed ...",
 * "CLUSTERDOWN: the cluster is down ...", "TRYAGAIN: ...", "LOADING: ...",
 * "BUSY: ...", "READONLY: ...", "MASTERDOWN: ...", "NOAUTH: ...",
 * "WRONGPASS: ...", "NOPERM: ..."), else `text` itself; "unexpected reply"
 * for NULL.
 */
const char *reply_cause(const char *text);
/* Why `r` is not what a caller wanted, for people: reply_cause of its error text, or "unexpected reply". */
const char *reply_describe(const redisReply *r);
/*
 * A cluster's redirection that the one Redis layer hands back (core/rconn.h:
 * still MOVED, ASK or TRYAGAIN after every round it follows, or ASK for a
 * shard script, which is not followed): the slot is being moved between
 * nodes (a resharding, a map in flux), not refused.  1 for such a reply.
 */
int reply_is_moving(const redisReply *r);
/*
 * The errno of such a reply: -ENOSPC (out of memory), -EIO (a node down:
 * NODEDOWN), -EBUSY (reply_is_moving: try again once the slot has moved),
 * -EBADMSG (another error reply), -EPROTO.
 */
int reply_errno(const redisReply *r);
/* An integer reply. */
int reply_int(const redisReply *r, long long *out);
/* A bulk or status string (binary-safe: *len bytes, NUL-terminated). */
int reply_str(const redisReply *r, const char **s, size_t *len);
/* An integer or a decimal string of one (as GET answers); -EPROTO for other text. */
int reply_int_text(const redisReply *r, long long *out);
/*
 * A number in a bulk string, as Redis writes a sorted-set score ("1796…",
 * "1.5", "inf"): the whole string must read, NaN is refused.  0, or
 * -EPROTO (other text) / the shape error of a reply that is no string.
 */
int reply_double(const redisReply *r, double *out);
/* An array of at least `min` elements; *out borrowed. */
int reply_array(const redisReply *r, size_t min, const redisReply *const **elems, size_t *n);
/* Element `i` of an array reply, as an integer. */
int reply_int_at(const redisReply *r, size_t i, long long *out);
/* 1 when `r` is an array whose elements are all strings (nil excluded). */
int reply_is_strings(const redisReply *r);
/*
 * A SCAN/SSCAN page {cursor, members}: the cursor copied into `cursor` (at
 * most REPLY_CURSOR_MAX - 1 bytes) and the members array borrowed.
 */
int reply_scan_page(const redisReply *r, char cursor[REPLY_CURSOR_MAX], const redisReply **members);

#endif

#ifndef SLUICE_RCONN_H
#define SLUICE_RCONN_H
/*
 * The one place that talks to hiredis.  A `struct rconn` owns one
 * redisContext for one thread: it connects lazily, sends AUTH and SELECT,
 * loads the embedded scripts (SCRIPT LOAD), reconnects with exponential
 * backoff (100 ms doubling to 5 s) after an I/O error, and on a NOSCRIPT
 * reply loads that script and retries the call once.  A connection that was
 * up and fails on use (closed, not timed out) is re-established at once and
 * the call sent again once (so a Redis restart costs no error when Redis is
 * back); after that, backoff.
 *
 * Errors: functions return 0 or a negative errno.  -EAGAIN: not connected and
 * still inside the backoff window.  -EIO: the connection failed (the context
 * is dropped; the next call reconnects).  -ENOMEM.  A Redis error reply is not
 * an rconn error: it comes back as a reply of type REDIS_REPLY_ERROR.  The
 * modules on top return -ENOSPC when that reply is Redis's refusal at
 * maxmemory (reply_is_oom, core/reply.h).
 */
#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "core/redis_target.h"
#include "core/reply.h"
#include "core/scripts.h"

struct rconn;

/* New handle for `t` (copied) with connect and command timeout `timeout_ms`; does not connect. NULL on ENOMEM. */
struct rconn *rconn_new(const struct redis_target *t, int64_t timeout_ms);
/* Close and free; NULL is a no-op. */
void rconn_free(struct rconn *c);
/* Connect now if not connected (honouring backoff).  0, -EAGAIN, -EIO. */
int rconn_ensure(struct rconn *c);
/* 1 when the last operation left a live connection. */
int rconn_is_up(const struct rconn *c);
/* Text of the last connection error ("" if none); valid until the next call. */
const char *rconn_errstr(const struct rconn *c);
/* How many times a connection was (re)established. */
uint64_t rconn_connects(const struct rconn *c);

/*
 * One line naming error `rc` of an rconn call or of a module on top of it:
 * the connection error (rconn_errstr) for -EIO/-EAGAIN, REPLY_OOM_TEXT for
 * -ENOSPC, "Redis refused the command" for -EBADMSG, "unexpected reply from
 * Redis" for -EPROTO, else strerror.  Valid until the next call on `c`.
 */
const char *rconn_strerror(const struct rconn *c, int rc);

/* One command, binary-safe argv; *out is the reply the caller frees (freeReplyObject). */
int rconn_command(struct rconn *c, int argc, const char *const *argv, const size_t *lens,
		  redisReply **out);
/* One script call: argv holds `nkeys` keys then the arguments; NOSCRIPT handled. *out as above. */
int rconn_eval(struct rconn *c, enum script_id id, int nkeys, int argc, const char *const *argv,
	       const size_t *lens, redisReply **out);

/*
 * A pipeline: commands are queued (their arguments copied), then sent in one
 * write and their replies read in order.  Replies belong to the batch until
 * rbatch_clear()/rbatch_free().
 */
struct rbatch;
struct rbatch *rbatch_new(void);
void rbatch_free(struct rbatch *b);
/* Drop queued commands and replies; keep the allocation. */
void rbatch_clear(struct rbatch *b);
/* Queue a plain command.  0 or -ENOMEM. */
int rbatch_cmd(struct rbatch *b, int argc, const char *const *argv, const size_t *lens);
/* Queue a script call (`nkeys` keys first in argv).  0 or -ENOMEM. */
int rbatch_eval(struct rbatch *b, enum script_id id, int nkeys, int argc, const char *const *argv,
		const size_t *lens);
size_t rbatch_len(const struct rbatch *b);
/* Send everything and read every reply; NOSCRIPT replies are retried once after SCRIPT LOAD. */
int rbatch_run(struct rconn *c, struct rbatch *b);
/* Reply of command `i` after a successful run, or NULL; owned by the batch. */
redisReply *rbatch_reply(const struct rbatch *b, size_t i);
/* Reply of command `i`, handed to the caller (who frees it), or NULL. */
redisReply *rbatch_take(struct rbatch *b, size_t i);

#endif

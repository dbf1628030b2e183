#ifndef SLUICE_RNODE_H
#define SLUICE_RNODE_H
/*
 * One connection to one Redis node, for the one Redis layer (core/rconn.c,
 * which routes commands to nodes and is the only user of this header).
 *
 * A node connects lazily with a connect and command timeout, sends AUTH (ACL
 * user or password) and SELECT (db != 0), loads every embedded script (SCRIPT
 * LOAD, pipelined after INFO server in one round trip), and after an I/O error drops the context and probes the node: a
 * connect attempt (connect timeout 250 ms at most) 50 ms later, doubling to
 * every 250 ms while it stays down, so a node that is back is used again
 * within 250 ms however long it was away (an AUTH or SELECT refused backs
 * off to 5 s).  Commands are appended to
 * the context's output buffer and their replies read back in order, either
 * blocking (rnode_call) or after poll() said the socket is readable
 * (rnode_read_ready), so that one pipeline can wait on several nodes at once.
 *
 * Errors: 0 or a negative errno.  -EAGAIN: not connected and inside the
 * backoff window.  -EIO: the connection failed (context dropped; err names
 * the cause).  -ENOMEM.  A Redis error reply is a reply, not an error here.
 */
#include <hiredis/hiredis.h>

#include "core/rabort.h"
#include <stddef.h>
#include <stdint.h>

#include "core/scripts.h"

#define RNODE_HOST_MAX 256

struct rnode {
	char host[RNODE_HOST_MAX]; /* TCP host, or "" with `socket` */
	int port;
	char *socket;              /* owned unix socket path, or NULL */
	const char *user, *password; /* borrowed from the owner's target */
	int db;
	int64_t timeout_ms;
	redisContext *ctx;
	int64_t retry_at_ms;       /* CLOCK_MONOTONIC; no connect attempt before it */
	int64_t backoff_ms;
	int64_t down_since_ms;     /* CLOCK_MONOTONIC of the first failure of the outage; 0: up (or never
				    * failed): a probe's connect timeout is short only while down */
	int timed_out;             /* the last failure was a timeout, not a closed connection */
	uint64_t connects;         /* connections established */
	uint64_t errors;           /* connection failures */
	uint64_t moved, ask, tryagain; /* redirections and retries its replies asked for */
	char err[256];             /* the last connection error, "" when none */
	char addr[RNODE_HOST_MAX + 16]; /* "host:port" or the socket path, for messages */
	uint32_t tag;              /* names the Redis process connected to (rnode_ensure): a digest of its
				    * INFO run_id, or of addr when INFO is refused; never 0 once connected */
	uint64_t gen;              /* the owner's bookkeeping: the map install that last named it */
	struct rabort *abort;      /* borrowed (the owner's), or NULL: where its socket is registered */
};

/* Close the connection, if any (unregistered from n->abort first). */
void rnode_close(struct rnode *n);
/*
 * Set `n` up for host:port (or `socket` when not NULL, copied) with the
 * owner's credentials (borrowed: they must outlive the node).  Does not
 * connect.  0 or -ENOMEM.
 */
int rnode_init(struct rnode *n, const char *host, int port, const char *socket, const char *user,
	       const char *password, int db, int64_t timeout_ms);
/* Close and free what `n` owns (not `n` itself). */
void rnode_clear(struct rnode *n);
/*
 * Connect now if not connected (honouring backoff): AUTH, SELECT, INFO
 * server (for n->tag), and SCRIPT LOAD of every embedded script, whose SHA1s
 * are written to `sha` (41 bytes each).  0, -EAGAIN, -EIO, -ENOMEM.
 */
int rnode_ensure(struct rnode *n, char sha[SCRIPT__COUNT][41]);
/* Drop the context after an I/O error and back off; `what` names the step.  Returns -EIO. */
int rnode_fail(struct rnode *n, const char *what);
/* Forget the backoff: the next rnode_ensure tries at once. */
void rnode_retry_now(struct rnode *n);
/*
 * SCRIPT LOAD of script `id` on a connected node, into sha (41 bytes).  0;
 * -EIO (the connection failed: dropped, n->err says why); -EPROTO when
 * Redis refused (an error reply: with `refused` not NULL, *refused is that
 * reply, which the caller frees, and n->err is left alone; with NULL n->err
 * names it) or answered something else; -ENOENT (not embedded).
 */
int rnode_load_script(struct rnode *n, enum script_id id, char *sha, redisReply **refused);
/*
 * One blocking command on a connected node: *out is the reply (the caller
 * frees it).  0 or -EIO (the node failed; `what` names the step).
 */
int rnode_call(struct rnode *n, const char *what, int argc, const char **argv, const size_t *lens,
	       redisReply **out);
/* Write the output buffer out (blocking, within the timeout).  0 or -EIO. */
int rnode_flush(struct rnode *n);
/*
 * After poll() said the node's socket is readable: read what arrived, then
 * take one parsed reply if there is one (*out NULL when none is complete
 * yet).  0 or -EIO (connection closed or broken).
 */
int rnode_read_ready(struct rnode *n, redisReply **out);
/* A reply already parsed and buffered, without reading the socket (*out NULL when none).  0 or -EIO. */
int rnode_take_buffered(struct rnode *n, redisReply **out);

#endif

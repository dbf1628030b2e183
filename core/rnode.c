#include "core/rnode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

/*
 * While a node is down it is probed: a connect attempt (with a connect
 * timeout of at most PROBE_CONNECT_MS) every PROBE_MIN_MS doubling to
 * PROBE_MAX_MS, so a Redis that is back is used again within PROBE_MAX_MS
 * plus a tick, however long it was away.  A node that answers but refuses
 * AUTH or SELECT is not cured by Redis coming back: those retries back off
 * to REFUSED_MAX_MS.
 */
#define PROBE_MIN_MS 50
#define PROBE_MAX_MS 250
#define PROBE_CONNECT_MS 250
#define REFUSED_MAX_MS 5000

int rnode_init(struct rnode *n, const char *host, int port, const char *socket, const char *user,
	       const char *password, int db, int64_t timeout_ms)
{
	memset(n, 0, sizeof(*n));
	if (socket && !(n->socket = strdup(socket)))
		return -ENOMEM;
	snprintf(n->host, sizeof(n->host), "%s", host ? host : "");
	n->port = port;
	n->user = user;
	n->password = password;
	n->db = db;
	n->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
	n->backoff_ms = PROBE_MIN_MS;
	if (socket)
		snprintf(n->addr, sizeof(n->addr), "%s", socket);
	else
		snprintf(n->addr, sizeof(n->addr), strchr(n->host, ':') ? "[%s]:%d" : "%s:%d", n->host, port);
	return 0;
}

void rnode_close(struct rnode *n)
{
	if (!n->ctx)
		return;
	if (n->abort && n->ctx->fd >= 0)
		rabort_del(n->abort, n->ctx->fd);
	redisFree(n->ctx);
	n->ctx = NULL;
	n->tag = 0;
}

void rnode_clear(struct rnode *n)
{
	rnode_close(n);
	free(n->socket);
	memset(n, 0, sizeof(*n));
}

void rnode_retry_now(struct rnode *n)
{
	n->retry_at_ms = 0;
}

/* Drop the context, count the failure and set the next attempt `cap` ms away at most. */
static int fail_capped(struct rnode *n, const char *what, int64_t cap)
{
	/* hiredis reports a read/write timeout as an I/O error with EAGAIN's text */
	n->timed_out = n->ctx && n->ctx->err == REDIS_ERR_IO &&
		       (strcmp(n->ctx->errstr, strerror(EAGAIN)) == 0 ||
			strcmp(n->ctx->errstr, strerror(ETIMEDOUT)) == 0);
	if (!strcmp(what, "timed out"))
		n->timed_out = 1;
	snprintf(n->err, sizeof(n->err), "%s: %s", what,
		 n->timed_out ? "timed out" : n->ctx && n->ctx->errstr[0] ? n->ctx->errstr : "connection lost");
	rnode_close(n);
	n->errors++;
	if (n->backoff_ms > cap)
		n->backoff_ms = cap;
	n->retry_at_ms = clock_mono_ms() + n->backoff_ms;
	n->backoff_ms = n->backoff_ms * 2 > cap ? cap : n->backoff_ms * 2;
	if (!n->down_since_ms)
		n->down_since_ms = clock_mono_ms();
	return -EIO;
}

int rnode_fail(struct rnode *n, const char *what)
{
	return fail_capped(n, what, PROBE_MAX_MS);
}

int rnode_call(struct rnode *n, const char *what, int argc, const char **argv, const size_t *lens,
	       redisReply **out)
{
	redisReply *r = redisCommandArgv(n->ctx, argc, argv, lens);

	if (!r)
		return rnode_fail(n, what);
	*out = r;
	return 0;
}

/* A setup command that must answer OK (or anything but an error). */
static int setup_cmd(struct rnode *n, const char *what, int argc, const char **argv, const size_t *lens)
{
	redisReply *r = NULL;
	int rc;

	if ((rc = rnode_call(n, what, argc, argv, lens, &r)))
		return rc;
	rc = 0;
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(n->err, sizeof(n->err), "%s: %s", what, r->str);
		rc = -EACCES;
	}
	freeReplyObject(r);
	return rc;
}

int rnode_load_script(struct rnode *n, enum script_id id, char *sha, redisReply **refused)
{
	const struct script_src *s = script_get(id);
	const char *argv[] = { "SCRIPT", "LOAD", s ? s->body : "" };
	size_t lens[] = { 6, 4, s ? s->len : 0 };
	redisReply *r = NULL;
	int rc;

	if (!s) {
		snprintf(n->err, sizeof(n->err), "script %s not embedded", script_name(id));
		return -ENOENT;
	}
	if ((rc = rnode_call(n, "SCRIPT LOAD", 3, argv, lens, &r)))
		return rc;
	if (r->type == REDIS_REPLY_STRING && r->len == 40) {
		memcpy(sha, r->str, 41);
	} else if (r->type == REDIS_REPLY_ERROR && refused) {
		*refused = r;
		return -EPROTO;
	} else {
		snprintf(n->err, sizeof(n->err), "SCRIPT LOAD %s: %s", script_name(id),
			 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
		rc = -EPROTO;
	}
	freeReplyObject(r);
	return rc;
}

/* FNV-1a of `len` bytes, never 0. */
static uint32_t digest(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h ? h : 1;
}

/*
 * INFO server, then SCRIPT LOAD of every embedded script, in one round trip
 * (27 scripts, some 600 KB: sent one by one they cost a round trip each at
 * every connect).  INFO gives n->tag, which Redis process this connection
 * reached: its run_id is new at every start, as the seed of its hash tables
 * is, which is what a SCAN cursor's meaning depends on (a user without INFO
 * gets the address's digest: a restart at the same address is then not told
 * apart).  The SHA1s go to `sha`.  0; -EIO (the connection failed); -EPROTO
 * (a script refused: n->err names the first); -ENOENT, -ENOMEM.
 */
static int setup_scripts(struct rnode *n, char sha[SCRIPT__COUNT][41])
{
	const char *info[2] = { "INFO", "server" }, *id;
	size_t infol[2] = { 4, 6 };
	redisReply *r = NULL;
	int rc = 0;

	if (redisAppendCommandArgv(n->ctx, 2, info, infol) != REDIS_OK)
		return -ENOMEM;
	for (int i = 0; i < SCRIPT__COUNT; i++) {
		const struct script_src *s = script_get((enum script_id)i);
		const char *argv[3] = { "SCRIPT", "LOAD", s ? s->body : "" };
		size_t lens[3] = { 6, 4, s ? s->len : 0 };

		if (!s) {
			snprintf(n->err, sizeof(n->err), "script %s not embedded", script_name((enum script_id)i));
			return -ENOENT;
		}
		if (redisAppendCommandArgv(n->ctx, 3, argv, lens) != REDIS_OK)
			return -ENOMEM;
	}
	if (redisGetReply(n->ctx, (void **)&r) != REDIS_OK)
		return rnode_fail(n, "INFO");
	if (r->type == REDIS_REPLY_STRING && (id = strstr(r->str, "run_id:")) && strlen(id + 7) >= 40)
		n->tag = digest(id + 7, 40);
	else
		n->tag = digest(n->addr, strlen(n->addr));
	freeReplyObject(r);
	for (int i = 0; i < SCRIPT__COUNT; i++) {
		if (redisGetReply(n->ctx, (void **)&r) != REDIS_OK)
			return rnode_fail(n, "SCRIPT LOAD");
		if (r->type == REDIS_REPLY_STRING && r->len == 40) {
			memcpy(sha[i], r->str, 41);
		} else if (!rc) {
			/* the first refusal named; the other replies are read all the same */
			snprintf(n->err, sizeof(n->err), "SCRIPT LOAD %s: %s", script_name((enum script_id)i),
				 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
			rc = -EPROTO;
		}
		freeReplyObject(r);
	}
	return rc;
}

int rnode_ensure(struct rnode *n, char sha[SCRIPT__COUNT][41])
{
	struct timeval tv = { n->timeout_ms / 1000, (n->timeout_ms % 1000) * 1000 };
	/* a probe of a node that is down waits for the connect no longer than PROBE_CONNECT_MS */
	int64_t cto = n->down_since_ms && n->timeout_ms > PROBE_CONNECT_MS ? PROBE_CONNECT_MS : n->timeout_ms;
	struct timeval ctv = { cto / 1000, (cto % 1000) * 1000 };
	char keep[sizeof(n->err)];
	int refused = 0;

	if (n->ctx)
		return 0;
	if (n->abort && rabort_fired(n->abort)) {
		snprintf(n->err, sizeof(n->err), "connect: aborted (the daemon is stopping)");
		return -EIO;
	}
	if (clock_mono_ms() < n->retry_at_ms)
		return -EAGAIN;
	n->ctx = n->socket ? redisConnectUnixWithTimeout(n->socket, ctv)
			   : redisConnectWithTimeout(n->host, n->port, ctv);
	if (!n->ctx) {
		snprintf(n->err, sizeof(n->err), "connect: out of memory");
		return -ENOMEM;
	}
	if (n->ctx->err)
		return rnode_fail(n, "connect");
	if (n->abort && rabort_add(n->abort, n->ctx->fd)) {
		redisFree(n->ctx); /* never registered */
		n->ctx = NULL;
		snprintf(n->err, sizeof(n->err), "connect: aborted (the daemon is stopping)");
		return -EIO;
	}
	if (redisSetTimeout(n->ctx, tv) != REDIS_OK)
		return rnode_fail(n, "set timeout");
	if (n->password) {
		const char *argv[] = { "AUTH", n->user ? n->user : n->password, n->password };
		size_t lens[] = { 4, strlen(argv[1]), strlen(n->password) };

		if ((refused = setup_cmd(n, "AUTH", n->user ? 3 : 2, argv, lens)))
			goto bad;
	}
	if (n->db) {
		char db[16];
		const char *argv[] = { "SELECT", db };
		size_t lens[2] = { 6, 0 };

		lens[1] = (size_t)snprintf(db, sizeof(db), "%d", n->db);
		if ((refused = setup_cmd(n, "SELECT", 2, argv, lens)))
			goto bad;
	}
	if (setup_scripts(n, sha))
		goto bad;
	n->connects++;
	n->backoff_ms = PROBE_MIN_MS;
	n->err[0] = '\0';
	n->down_since_ms = 0;
	return 0;
bad:
	/*
	 * A refused AUTH or SELECT is not cured by retrying at once: back off
	 * (up to REFUSED_MAX_MS).  A script that would not load (Redis still
	 * LOADING its data after a restart) is probed again soon.
	 */
	if (n->ctx) {
		memcpy(keep, n->err, sizeof(keep));
		fail_capped(n, "setup", refused == -EACCES ? REFUSED_MAX_MS : PROBE_MAX_MS);
		memcpy(n->err, keep, sizeof(keep));
	}
	return -EIO;
}

int rnode_flush(struct rnode *n)
{
	int done = 0;

	while (!done)
		if (redisBufferWrite(n->ctx, &done) != REDIS_OK)
			return rnode_fail(n, "pipeline");
	return 0;
}

int rnode_take_buffered(struct rnode *n, redisReply **out)
{
	void *r = NULL;

	if (redisGetReplyFromReader(n->ctx, &r) != REDIS_OK)
		return rnode_fail(n, "pipeline");
	*out = r;
	return 0;
}

int rnode_read_ready(struct rnode *n, redisReply **out)
{
	*out = NULL;
	if (redisBufferRead(n->ctx) != REDIS_OK)
		return rnode_fail(n, "pipeline");
	return rnode_take_buffered(n, out);
}

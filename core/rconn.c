#include "core/rconn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

struct rconn {
	struct redis_target t;
	int64_t timeout_ms;
	redisContext *ctx;
	char sha[SCRIPT__COUNT][41];
	int64_t retry_at_ms;  /* CLOCK_MONOTONIC; no connect attempt before it */
	int64_t backoff_ms;
	uint64_t connects;
	int timed_out;        /* the last failure was a timeout, not a closed connection */
	char err[256];
};

struct rbatch_cmd {
	int script;       /* enum script_id, or -1 for a plain command */
	int nkeys;
	int argc;
	char **argv;      /* one allocation: pointers, then lengths, then bytes */
	size_t *lens;
	redisReply *reply;
};

struct rbatch {
	struct rbatch_cmd *v;
	size_t n, cap;
};

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
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
	if ((t->host && !c->t.host) || (t->socket && !c->t.socket) || (t->user && !c->t.user) ||
	    (t->password && !c->t.password)) {
		rconn_free(c);
		return NULL;
	}
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
	c->backoff_ms = BACKOFF_MIN_MS;
	return c;
}

void rconn_free(struct rconn *c)
{
	if (!c)
		return;
	if (c->ctx)
		redisFree(c->ctx);
	redis_target_clear(&c->t);
	free(c);
}

int rconn_is_up(const struct rconn *c)
{
	return c->ctx != NULL;
}

const char *rconn_errstr(const struct rconn *c)
{
	return c->err;
}

uint64_t rconn_connects(const struct rconn *c)
{
	return c->connects;
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
	case -EPROTO:
		return "unexpected reply from Redis";
	default:
		return strerror(-rc);
	}
}

/* Drop the context after an I/O error and schedule the next attempt. */
static int fail(struct rconn *c, const char *what)
{
	/* hiredis reports a read/write timeout as an I/O error with EAGAIN's text */
	c->timed_out = c->ctx && c->ctx->err == REDIS_ERR_IO &&
		       (strcmp(c->ctx->errstr, strerror(EAGAIN)) == 0 ||
			strcmp(c->ctx->errstr, strerror(ETIMEDOUT)) == 0);
	snprintf(c->err, sizeof(c->err), "%s: %s", what,
		 c->timed_out ? "timed out" : c->ctx && c->ctx->errstr[0] ? c->ctx->errstr : "connection lost");
	if (c->ctx) {
		redisFree(c->ctx);
		c->ctx = NULL;
	}
	c->retry_at_ms = clock_mono_ms() + c->backoff_ms;
	c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
	return -EIO;
}

/* A setup command that must answer OK or a bulk string (the SHA of SCRIPT LOAD). */
static int setup_cmd(struct rconn *c, const char *what, int argc, const char **argv,
		     const size_t *lens, char *sha_out)
{
	redisReply *r = redisCommandArgv(c->ctx, argc, argv, lens);
	int rc = 0;

	if (!r)
		return fail(c, what);
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(c->err, sizeof(c->err), "%s: %s", what, r->str);
		rc = -EACCES;
	} else if (sha_out) {
		if (r->type == REDIS_REPLY_STRING && r->len == 40)
			memcpy(sha_out, r->str, 41);
		else
			rc = -EPROTO;
	}
	freeReplyObject(r);
	return rc;
}

static int load_script(struct rconn *c, enum script_id id)
{
	const struct script_src *s = script_get(id);
	const char *argv[] = { "SCRIPT", "LOAD", s ? s->body : "" };
	size_t lens[] = { 6, 4, s ? s->len : 0 };

	if (!s) {
		snprintf(c->err, sizeof(c->err), "script %s not embedded", script_name(id));
		return -ENOENT;
	}
	return setup_cmd(c, "SCRIPT LOAD", 3, argv, lens, c->sha[id]);
}

int rconn_ensure(struct rconn *c)
{
	struct timeval tv = { c->timeout_ms / 1000, (c->timeout_ms % 1000) * 1000 };
	int rc;

	if (c->ctx)
		return 0;
	if (clock_mono_ms() < c->retry_at_ms)
		return -EAGAIN;
	c->ctx = c->t.socket ? redisConnectUnixWithTimeout(c->t.socket, tv)
			     : redisConnectWithTimeout(c->t.host, c->t.port, tv);
	if (!c->ctx) {
		snprintf(c->err, sizeof(c->err), "connect: out of memory");
		return -ENOMEM;
	}
	if (c->ctx->err)
		return fail(c, "connect");
	if (redisSetTimeout(c->ctx, tv) != REDIS_OK)
		return fail(c, "set timeout");
	if (c->t.password) {
		const char *argv[] = { "AUTH", c->t.user ? c->t.user : c->t.password, c->t.password };
		size_t lens[] = { 4, strlen(argv[1]), strlen(c->t.password) };

		if ((rc = setup_cmd(c, "AUTH", c->t.user ? 3 : 2, argv, lens, NULL)))
			goto bad;
	}
	if (c->t.db) {
		char db[16];
		const char *argv[] = { "SELECT", db };
		size_t lens[2] = { 6, 0 };

		lens[1] = (size_t)snprintf(db, sizeof(db), "%d", c->t.db);
		if ((rc = setup_cmd(c, "SELECT", 2, argv, lens, NULL)))
			goto bad;
	}
	for (int id = 0; id < SCRIPT__COUNT; id++)
		if ((rc = load_script(c, (enum script_id)id)))
			goto bad;
	c->connects++;
	c->backoff_ms = BACKOFF_MIN_MS;
	c->err[0] = '\0';
	return 0;
bad:
	/* A refused AUTH or SELECT is not cured by retrying at once: back off too. */
	if (c->ctx) {
		char keep[sizeof(c->err)];

		memcpy(keep, c->err, sizeof(keep));
		fail(c, "setup");
		memcpy(c->err, keep, sizeof(keep));
	}
	(void)rc;
	return -EIO;
}

static int is_noscript(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

/* Append one command (script calls become EVALSHA sha nkeys ...) to the output buffer. */
static int append(struct rconn *c, const struct rbatch_cmd *cmd)
{
	const char *stackv[64];
	size_t stackl[64];
	const char **v = stackv;
	size_t *l = stackl;
	char nk[16];
	int argc = cmd->argc, rc;

	if (cmd->script < 0)
		return redisAppendCommandArgv(c->ctx, argc, (const char **)cmd->argv, cmd->lens) == REDIS_OK
			       ? 0 : -ENOMEM;
	if (argc + 3 > 64) {
		v = malloc((size_t)(argc + 3) * sizeof(*v));
		l = malloc((size_t)(argc + 3) * sizeof(*l));
		if (!v || !l) {
			free(v == stackv ? NULL : v);
			free(l == stackl ? NULL : l);
			return -ENOMEM;
		}
	}
	v[0] = "EVALSHA";
	l[0] = 7;
	v[1] = c->sha[cmd->script];
	l[1] = 40;
	l[2] = (size_t)snprintf(nk, sizeof(nk), "%d", cmd->nkeys);
	v[2] = nk;
	memcpy(v + 3, cmd->argv, (size_t)argc * sizeof(*v));
	memcpy(l + 3, cmd->lens, (size_t)argc * sizeof(*l));
	rc = redisAppendCommandArgv(c->ctx, argc + 3, v, l) == REDIS_OK ? 0 : -ENOMEM;
	if (v != stackv) {
		free(v);
		free(l);
	}
	return rc;
}

static int cmd_init(struct rbatch_cmd *cmd, int script, int nkeys, int argc,
		    const char *const *argv, const size_t *lens)
{
	size_t bytes = 0, head = (size_t)argc * (sizeof(char *) + sizeof(size_t));
	char *p;

	for (int i = 0; i < argc; i++)
		bytes += lens[i] + 1;
	cmd->argv = malloc(head + bytes);
	if (!cmd->argv)
		return -ENOMEM;
	cmd->lens = (size_t *)(cmd->argv + argc);
	p = (char *)(cmd->lens + argc);
	for (int i = 0; i < argc; i++) {
		memcpy(p, argv[i], lens[i]);
		p[lens[i]] = '\0';
		cmd->argv[i] = p;
		cmd->lens[i] = lens[i];
		p += lens[i] + 1;
	}
	cmd->script = script;
	cmd->nkeys = nkeys;
	cmd->argc = argc;
	cmd->reply = NULL;
	return 0;
}

struct rbatch *rbatch_new(void)
{
	return calloc(1, sizeof(struct rbatch));
}

void rbatch_clear(struct rbatch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->v[i].argv);
		if (b->v[i].reply)
			freeReplyObject(b->v[i].reply);
	}
	b->n = 0;
}

void rbatch_free(struct rbatch *b)
{
	if (!b)
		return;
	rbatch_clear(b);
	free(b->v);
	free(b);
}

static int push(struct rbatch *b, int script, int nkeys, int argc, const char *const *argv,
		const size_t *lens)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		struct rbatch_cmd *v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	if (cmd_init(&b->v[b->n], script, nkeys, argc, argv, lens))
		return -ENOMEM;
	b->n++;
	return 0;
}

int rbatch_cmd(struct rbatch *b, int argc, const char *const *argv, const size_t *lens)
{
	return push(b, -1, 0, argc, argv, lens);
}

int rbatch_eval(struct rbatch *b, enum script_id id, int nkeys, int argc, const char *const *argv,
		const size_t *lens)
{
	if ((unsigned)id >= SCRIPT__COUNT || nkeys < 0 || nkeys > argc)
		return -EINVAL;
	return push(b, (int)id, nkeys, argc, argv, lens);
}

size_t rbatch_len(const struct rbatch *b)
{
	return b->n;
}

redisReply *rbatch_reply(const struct rbatch *b, size_t i)
{
	return i < b->n ? b->v[i].reply : NULL;
}

redisReply *rbatch_take(struct rbatch *b, size_t i)
{
	redisReply *r = rbatch_reply(b, i);

	if (r)
		b->v[i].reply = NULL;
	return r;
}

/* Send commands [0, n) that have no reply yet (all of them, or the NOSCRIPT ones) and read replies. */
static int send_pending(struct rconn *c, struct rbatch *b)
{
	size_t sent = 0;

	for (size_t i = 0; i < b->n; i++) {
		if (b->v[i].reply)
			continue;
		if (append(c, &b->v[i]))
			return fail(c, "pipeline");
		sent++;
	}
	for (size_t i = 0; i < b->n && sent; i++) {
		void *r = NULL;

		if (b->v[i].reply)
			continue;
		if (redisGetReply(c->ctx, &r) != REDIS_OK || !r)
			return fail(c, "pipeline");
		b->v[i].reply = r;
		sent--;
	}
	return 0;
}

static void drop_replies(struct rbatch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].reply) {
			freeReplyObject(b->v[i].reply);
			b->v[i].reply = NULL;
		}
}

int rbatch_run(struct rconn *c, struct rbatch *b)
{
	int reload[SCRIPT__COUNT] = { 0 }, any = 0, was_up = c->ctx != NULL, rc;

	drop_replies(b);
	if ((rc = rconn_ensure(c)))
		return rc;
	rc = send_pending(c, b);
	if (rc == -EIO && was_up && !c->timed_out) {
		/*
		 * A connection that had been idle died under us (Redis restarted,
		 * a proxy or CLIENT KILL closed it): reconnect at once and send the
		 * batch again.  Not after a timeout: a hung Redis would cost the
		 * timeout twice (and delay shutdown).  Every batch sluice sends may run twice: the scripts
		 * are idempotent at one instant and exact across instants.
		 */
		drop_replies(b);
		c->retry_at_ms = 0;
		if ((rc = rconn_ensure(c)))
			return rc;
		rc = send_pending(c, b);
	}
	if (rc)
		return rc;
	/* Redis restarted or SCRIPT FLUSH: load what it lost, retry those calls once. */
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].script >= 0 && is_noscript(b->v[i].reply)) {
			reload[b->v[i].script] = 1;
			freeReplyObject(b->v[i].reply);
			b->v[i].reply = NULL;
			any = 1;
		}
	if (!any)
		return 0;
	for (int id = 0; id < SCRIPT__COUNT; id++)
		if (reload[id] && load_script(c, (enum script_id)id))
			return c->ctx ? fail(c, "SCRIPT LOAD") : -EIO;
	return send_pending(c, b);
}

static int run_one(struct rconn *c, int script, int nkeys, int argc, const char *const *argv,
		   const size_t *lens, redisReply **out)
{
	struct rbatch b = { 0 };
	int rc = push(&b, script, nkeys, argc, argv, lens);

	if (!rc)
		rc = rbatch_run(c, &b);
	if (!rc) {
		*out = b.v[0].reply;
		b.v[0].reply = NULL;
	}
	rbatch_clear(&b);
	free(b.v);
	return rc;
}

int rconn_command(struct rconn *c, int argc, const char *const *argv, const size_t *lens,
		  redisReply **out)
{
	return run_one(c, -1, 0, argc, argv, lens, out);
}

int rconn_eval(struct rconn *c, enum script_id id, int nkeys, int argc, const char *const *argv,
	       const size_t *lens, redisReply **out)
{
	if ((unsigned)id >= SCRIPT__COUNT || nkeys < 0 || nkeys > argc)
		return -EINVAL;
	return run_one(c, (int)id, nkeys, argc, argv, lens, out);
}

/*
 * Running a pipeline across the nodes of the one Redis layer (core/rconn.h):
 * commands split by node, sent to all, replies read as they arrive from any,
 * redirections followed.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/rconn_int.h"

/* TRYAGAIN: first wait (ms), doubled each round */
#define RETRY_WAIT_MS 20

/* ---- pipelines ----------------------------------------------------------------- */

/* Append one command (script calls become EVALSHA sha nkeys ...) to node `n`'s output buffer. */
static int append(struct rconn *c, struct rnode *n, const struct rbatch_cmd *cmd)
{
	const char *stackv[64];
	size_t stackl[64];
	const char **v = stackv;
	size_t *l = stackl;
	char nk[16];
	int argc = cmd->argc, rc;

	if (cmd->script < 0)
		return redisAppendCommandArgv(n->ctx, argc, (const char **)cmd->argv, cmd->lens) == REDIS_OK
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
	rc = redisAppendCommandArgv(n->ctx, argc + 3, v, l) == REDIS_OK ? 0 : -ENOMEM;
	if (v != stackv) {
		free(v);
		free(l);
	}
	return rc;
}

/* The node of a command by its slot (or its explicit primary), or RCONN_NO_NODE. */
static unsigned route(const struct rconn *c, const struct rbatch_cmd *cmd)
{
	if (c->mode == RCONN_SINGLE)
		return c->primary[0];
	if (cmd->at >= 0)
		return (size_t)cmd->at < c->nprimary ? c->primary[cmd->at] : RCONN_NO_NODE;
	if (cmd->slot >= 0)
		return c->owner[cmd->slot];
	/* no key: any node that serves slots, the first one up */
	for (size_t i = 0; i < c->nprimary; i++)
		if (c->nodes[c->primary[i]].ctx)
			return c->primary[i];
	return c->nprimary ? c->primary[0] : RCONN_NO_NODE;
}

/* Mark every command waiting on node `ni` in this round as failed with `rc`. */
static void fail_waiting(struct rbatch *b, unsigned ni, int rc)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].node == ni && b->v[i].waiting) {
			b->v[i].waiting = 0;
			b->v[i].rc = rc;
		}
}

/*
 * Send every pending command of node `ni` (ASKING before those redirected
 * by ASK) and flush.  Sets `waiting` and the node's count of replies due.
 */
static void send_node(struct rconn *c, struct rbatch *b, unsigned ni, size_t *due)
{
	struct rnode *n = &c->nodes[ni];
	static const char *const asking[1] = { "ASKING" };
	static const size_t askl[1] = { 6 };
	int rc;

	*due = 0;
	if ((rc = rnode_ensure(n, c->sha))) {
		for (size_t i = 0; i < b->n; i++)
			if (b->v[i].node == ni && b->v[i].pending) {
				b->v[i].pending = 0;
				b->v[i].rc = rc;
			}
		return;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct rbatch_cmd *cmd = &b->v[i];

		if (cmd->node != ni || !cmd->pending)
			continue;
		cmd->pending = 0;
		cmd->waiting = 1;
		if (cmd->asking && redisAppendCommandArgv(n->ctx, 1, (const char **)asking, askl) != REDIS_OK) {
			cmd->rc = -ENOMEM;
			cmd->waiting = 0;
			continue;
		}
		if (append(c, n, cmd)) {
			cmd->rc = -ENOMEM;
			cmd->waiting = 0;
			continue;
		}
		*due += 1 + (size_t)cmd->asking;
	}
	if (*due && rnode_flush(n)) {
		fail_waiting(b, ni, -EIO);
		*due = 0;
	}
	c->round_trips += *due > 0;
}

/* Give reply `r` to the next command waiting on node `ni` (an ASKING's own reply is dropped). */
static void deliver(const struct rconn *c, struct rbatch *b, unsigned ni, size_t *cursor, redisReply *r)
{
	for (; *cursor < b->n; (*cursor)++) {
		struct rbatch_cmd *cmd = &b->v[*cursor];

		if (cmd->node != ni || !cmd->waiting)
			continue;
		if (cmd->asking == 1) {
			cmd->asking = 2; /* ASKING answered; the command's own reply is next */
			freeReplyObject(r);
			return;
		}
		cmd->waiting = 0;
		cmd->asking = 0;
		cmd->reply = r;
		cmd->tag = c->nodes[ni].tag;
		(*cursor)++;
		return;
	}
	freeReplyObject(r); /* more replies than commands: cannot happen */
}

/*
 * One round: send every pending command to its node, then read the replies
 * of all nodes as they arrive (poll), so a node that is slow or hung holds
 * up only its own commands, for at most the timeout after its last reply.
 */
static void run_round(struct rconn *c, struct rbatch *b)
{
	struct rconn_run *run = c->run;
	struct pollfd *pfd = c->pfd;
	unsigned *who = c->pwho;
	size_t left = 0;
	int64_t sent;

	for (unsigned ni = 0; ni < c->nnodes; ni++)
		run[ni].due = run[ni].cursor = 0, run[ni].any = 0;
	for (size_t i = 0; i < b->n; i++) {
		if (!b->v[i].pending)
			continue;
		if (b->v[i].node == RCONN_NO_NODE) {
			b->v[i].pending = 0;
			b->v[i].rc = -EIO;
		} else {
			run[b->v[i].node].any = 1;
		}
	}
	for (unsigned ni = 0; ni < c->nnodes; ni++) {
		if (run[ni].any)
			send_node(c, b, ni, &run[ni].due);
		left += run[ni].due;
	}
	/* every node's wait starts when all were sent (a send that blocked on a hung node is not theirs) */
	sent = clock_mono_ms();
	for (unsigned ni = 0; ni < c->nnodes; ni++)
		run[ni].last = sent;
	while (left) {
		size_t np = 0;
		int64_t now = clock_mono_ms(), wait = c->timeout_ms;

		for (unsigned ni = 0; ni < c->nnodes; ni++) {
			if (!run[ni].due)
				continue;
			if (now - run[ni].last >= c->timeout_ms) {
				rnode_fail(&c->nodes[ni], "pipeline"); /* "pipeline: timed out" */
				c->nodes[ni].timed_out = 1;
				snprintf(c->nodes[ni].err, sizeof(c->nodes[ni].err), "pipeline: timed out after %lld ms",
					 (long long)c->timeout_ms);
				fail_waiting(b, ni, -EIO);
				left -= run[ni].due;
				run[ni].due = 0;
				continue;
			}
			if (run[ni].last + c->timeout_ms - now < wait)
				wait = run[ni].last + c->timeout_ms - now;
			pfd[np].fd = c->nodes[ni].ctx->fd;
			pfd[np].events = POLLIN;
			pfd[np].revents = 0;
			who[np++] = ni;
		}
		if (!np)
			break;
		if (poll(pfd, np, (int)wait) < 0)
			continue; /* EINTR */
		for (size_t k = 0; k < np; k++) {
			unsigned ni = who[k];
			redisReply *r;
			int rc;

			if (!pfd[k].revents)
				continue;
			run[ni].last = clock_mono_ms();
			for (rc = rnode_read_ready(&c->nodes[ni], &r); !rc && r && run[ni].due;
			     rc = rnode_take_buffered(&c->nodes[ni], &r)) {
				deliver(c, b, ni, &run[ni].cursor, r);
				run[ni].due--;
				left--;
			}
			if (rc) {
				fail_waiting(b, ni, -EIO);
				left -= run[ni].due;
				run[ni].due = 0;
			}
		}
	}
}

/*
 * On a cluster, after a round: the commands whose node failed go, once, to
 * where routing sends them now.  A node lost marks the map stale, and the
 * map asked again (at most every 100 ms) may name another owner for a slot
 * (a failover that happened while nothing was sent); a command without a
 * key goes to another primary that is up.  1 when some command is pending
 * again.
 */
static int reroute(struct rconn *c, struct rbatch *b)
{
	int again = 0;

	for (size_t i = 0; i < b->n; i++)
		if (!b->v[i].reply && (b->v[i].rc == -EIO || b->v[i].rc == RCONN_CLUSTERDOWN))
			c->stale = 1; /* a node lost: its replica may have taken over */
	if (!c->stale)
		return 0;
	(void)rconn_topology(c);
	for (size_t i = 0; i < b->n; i++) {
		struct rbatch_cmd *cmd = &b->v[i];
		unsigned to;

		if (cmd->reply || (cmd->rc != -EIO && cmd->rc != RCONN_CLUSTERDOWN) || cmd->at >= 0 || cmd->rerouted)
			continue;
		if ((to = route(c, cmd)) == RCONN_NO_NODE || to == cmd->node)
			continue;
		cmd->rerouted = 1;
		cmd->node = to;
		cmd->rc = 0;
		cmd->pending = 1;
		again = 1;
	}
	return again;
}

/* A reply of type error whose text is `text`, made as hiredis makes its own (freeReplyObject frees it). */
static redisReply *error_reply(const char *text)
{
	redisReply *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->type = REDIS_REPLY_ERROR;
	if (!(r->str = strdup(text))) {
		free(r);
		return NULL;
	}
	r->len = strlen(text);
	return r;
}

int rbatch_run(struct rconn *c, struct rbatch *b)
{
	int rc, wait = 0;
	size_t ok = 0, failed = 0;

	rbatch_drop_replies(b);
	if ((rc = rconn_topology(c)))
		return rc;
	for (unsigned ni = 0; ni < c->nnodes; ni++) {
		c->run[ni].up = c->nodes[ni].ctx != NULL;
		c->run[ni].retried = 0;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct rbatch_cmd *cmd = &b->v[i];

		cmd->node = route(c, cmd);
		cmd->pending = 1;
		cmd->waiting = cmd->asking = cmd->asked = cmd->redirects = cmd->retries = cmd->reloaded = cmd->rerouted = 0;
		cmd->rc = 0;
		cmd->tag = 0;
	}
	for (int round = 0; round < MAX_ROUNDS; round++) {
		int again = 0;

		if (wait) {
			struct timespec ts = { 0, (long)RETRY_WAIT_MS * 1000000L << (round > 4 ? 4 : round - 1) };

			nanosleep(&ts, NULL);
			wait = 0;
		}
		run_round(c, b);
		for (size_t i = 0; i < b->n; i++) {
			struct rbatch_cmd *cmd = &b->v[i];

			if (cmd->reply) {
				again |= rconn_redirect(c, cmd, &wait, round == MAX_ROUNDS - 1);
			} else if (cmd->rc == -EIO && cmd->node != RCONN_NO_NODE && c->run[cmd->node].up &&
				 !c->nodes[cmd->node].timed_out && c->run[cmd->node].retried < 2) {
				/*
				 * A connection that had been idle died under us (Redis
				 * restarted, a proxy or CLIENT KILL closed it): reconnect
				 * at once and send again, once.  Not after a timeout: a
				 * hung Redis would cost the timeout twice (and delay
				 * shutdown).  Every command sluice sends may run twice:
				 * the scripts are idempotent at one instant and exact
				 * across instants.
				 */
				if (!c->run[cmd->node].retried) {
					c->run[cmd->node].retried = 1;
					rnode_retry_now(&c->nodes[cmd->node]);
				}
				cmd->rc = 0;
				cmd->pending = 1;
				again = 1;
			}
		}
		for (unsigned ni = 0; ni < c->nnodes; ni++)
			if (c->run[ni].retried == 1)
				c->run[ni].retried = 2;
		if (c->mode == RCONN_CLUSTER && round + 1 < MAX_ROUNDS)
			again |= reroute(c, b);
		if (!again)
			break;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct rbatch_cmd *cmd = &b->v[i];

		if (cmd->reply) {
			/* a node that answers again is no longer down for its cluster */
			if (cmd->node != RCONN_NO_NODE && !strncmp(c->nodes[cmd->node].err, "CLUSTERDOWN", 11) &&
			    !rconn_is_error(cmd->reply, "CLUSTERDOWN"))
				c->nodes[cmd->node].err[0] = '\0';
			/* a slot being moved, handed back: what rconn_strerror(-EBUSY) names */
			if (cmd->node != RCONN_NO_NODE && reply_is_moving(cmd->reply))
				snprintf(c->moving, sizeof(c->moving), "%.120s (%.100s answered %.150s)",
					 reply_describe(cmd->reply), c->nodes[cmd->node].addr, cmd->reply->str);
			ok++;
			continue;
		}
		if (!cmd->rc || cmd->rc == RCONN_CLUSTERDOWN)
			cmd->rc = -EIO; /* CLUSTERDOWN: callers take it for a node down */
		if (!rc)
			rc = cmd->rc;
		if (cmd->node != RCONN_NO_NODE && c->nodes[cmd->node].err[0])
			snprintf(c->err, sizeof(c->err), c->mode == RCONN_CLUSTER ? "%s: %s" : "%.0s%s",
				 c->nodes[cmd->node].addr, c->nodes[cmd->node].err);
		else if (cmd->node == RCONN_NO_NODE)
			snprintf(c->err, sizeof(c->err), "no node serves slot %d", cmd->slot);
		if (c->mode == RCONN_CLUSTER)
			c->stale = 1; /* a node lost (the last round's): its replica may have taken over */
		failed++;
	}
	if (!failed)
		return 0;
	if (c->mode != RCONN_CLUSTER || !ok) {
		rbatch_drop_replies(b);
		return rc;
	}
	/* some nodes answered: the commands of the others get an error reply naming the node */
	for (size_t i = 0; i < b->n; i++) {
		struct rbatch_cmd *cmd = &b->v[i];
		char text[600];

		if (cmd->reply)
			continue;
		if (cmd->node == RCONN_NO_NODE)
			snprintf(text, sizeof(text), "%s -: no node serves slot %d", REPLY_NODEDOWN, cmd->slot);
		else
			snprintf(text, sizeof(text), "%s %s: %s", REPLY_NODEDOWN, c->nodes[cmd->node].addr,
				 c->nodes[cmd->node].err[0] ? c->nodes[cmd->node].err : "not connected");
		if (!(cmd->reply = error_reply(text))) {
			rbatch_drop_replies(b);
			return -ENOMEM;
		}
	}
	return 0;
}

int rconn_command(struct rconn *c, int argc, const char *const *argv, const size_t *lens,
		  redisReply **out)
{
	return rbatch_run_one(c, -1, 0, argc, argv, lens, out);
}

int rconn_eval(struct rconn *c, enum script_id id, int nkeys, int argc, const char *const *argv,
	       const size_t *lens, redisReply **out)
{
	if ((unsigned)id >= SCRIPT__COUNT || nkeys < 0 || nkeys > argc)
		return -EINVAL;
	return rbatch_run_one(c, (int)id, nkeys, argc, argv, lens, out);
}

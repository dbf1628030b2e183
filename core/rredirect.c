/*
 * What a reply asks of the one Redis layer (core/rconn.h): MOVED, ASK,
 * TRYAGAIN, CLUSTERDOWN, NOSCRIPT, read off the reply of one command of a
 * pipeline's run (core/rpipe.c) and acted on: the slot map updated, the
 * command sent elsewhere or again, or failed as its node down.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/rconn_int.h"

int rconn_is_error(const redisReply *r, const char *code)
{
	size_t n = strlen(code);

	return r && r->type == REDIS_REPLY_ERROR && r->len >= n && strncmp(r->str, code, n) == 0 &&
	       (r->str[n] == ' ' || r->str[n] == '\0');
}

/*
 * What a reply asks of the layer: MOVED (the slot lives elsewhere now:
 * update the map, send there), ASK (this once, there, after ASKING),
 * TRYAGAIN (wait and send again), CLUSTERDOWN (fail as a node down), NOSCRIPT (load the script
 * on that node, send again).  Returns 1 when the command is pending again,
 * *wait set when the next round should wait first.
 */
int rconn_redirect(struct rconn *c, struct rbatch_cmd *cmd, int *wait, int last)
{
	redisReply *r = cmd->reply;
	struct rnode *from = &c->nodes[cmd->node];
	int moved = rconn_is_error(r, "MOVED"), ask = rconn_is_error(r, "ASK");

	if (moved || ask) {
		unsigned slot, ni;
		char host[RNODE_HOST_MAX];
		int port, k = 0;
		const char *colon;

		/*
		 * Counted, and a MOVED's slot updated, even when the reply stays (the
		 * last round's, or one redirection too many): the caller is handed a
		 * slot being moved (reply_is_moving), and the counts say where.
		 */
		if (sscanf(r->str + (moved ? 6 : 4), "%u %n", &slot, &k) != 1 || slot >= SHARD_SLOTS ||
		    !(colon = strrchr(r->str, ':')) || sscanf(colon + 1, "%d", &port) != 1)
			return 0;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - (r->str + (moved ? 6 : 4) + k)),
			 r->str + (moved ? 6 : 4) + k);
		if (!host[0])
			snprintf(host, sizeof(host), "%s", from->host);
		if ((ni = rconn_node_at(c, host, port, NULL)) == RCONN_NO_NODE)
			return 0;
		/* a node not known yet was added: c->nodes may have moved (realloc) */
		from = &c->nodes[cmd->node];
		if (ask && cmd->script >= 0 && !script_declares_keys((enum script_id)cmd->script)) {
			/* the slot is being migrated: a shard script waits until it is moved (MOVED) */
			from->ask++;
			return 0;
		}
		if (moved) {
			from->moved++;
			c->owner[slot] = (uint16_t)ni;
			c->stale = 1;
		} else {
			from->ask++;
		}
		if (last || cmd->redirects++ >= MAX_ROUNDS - 1)
			return 0; /* the reply stays */
		cmd->node = ni;
		cmd->asking = cmd->asked = ask;
	} else if (rconn_is_error(r, "CLUSTERDOWN")) {
		/*
		 * The node is up but its cluster lacks slots (a primary failed and is
		 * not replaced yet, slots unassigned): it serves no key until the
		 * cluster heals, which takes seconds, not a retry's wait.  The command
		 * fails as if its node were down, at once (NODEDOWN or -EIO: callers
		 * take it for Redis unavailable, not for a refusal), and the map is
		 * asked again; RCONN_CLUSTERDOWN, not -EIO, so that it is not sent
		 * again as a command whose idle connection died would be.
		 */
		from->tryagain++;
		snprintf(from->err, sizeof(from->err), "%.200s", reply_describe(r));
		freeReplyObject(r);
		cmd->reply = NULL;
		cmd->rc = RCONN_CLUSTERDOWN;
		c->stale = 1;
		return 0;
	} else if (rconn_is_error(r, "TRYAGAIN")) {
		from->tryagain++;
		if (last || cmd->retries++ >= MAX_ROUNDS - 2)
			return 0; /* the reply stays */
		cmd->asking = cmd->asked; /* a TRYAGAIN of the importing node: again with ASKING */
		*wait = 1;
	} else if (rconn_is_error(r, "NOSCRIPT") && cmd->script >= 0 && !cmd->reloaded && !last) {
		redisReply *refused = NULL;
		int rc = from->ctx ? rnode_load_script(from, (enum script_id)cmd->script, c->sha[cmd->script], &refused)
				   : -EIO;

		cmd->reloaded = 1;
		if (rc == -EIO) {
			/* the connection died under the SCRIPT LOAD: a node lost, as any */
			freeReplyObject(r);
			cmd->reply = NULL;
			cmd->rc = -EIO;
			return 0;
		}
		if (rc) {
			/* Redis refused the SCRIPT LOAD (an ACL without it, say): its reason is the reply */
			if (refused) {
				freeReplyObject(r);
				cmd->reply = refused;
			}
			return 0;
		}
	} else {
		return 0;
	}
	freeReplyObject(r);
	cmd->reply = NULL;
	cmd->pending = 1;
	return 1;
}


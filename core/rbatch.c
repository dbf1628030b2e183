/*
 * Queueing a pipeline's commands (core/rconn.h), each with the slot it is
 * routed by: a script call's first key, a plain command's first argument
 * (its key), none for a command of one word (TIME, PING) or one queued for
 * a given primary (rbatch_cmd_at: SCAN, INFO ...).  No transactions: the commands
 * between a MULTI and its EXEC could be routed to different nodes, and
 * nothing of sluice queues one.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/rconn_int.h"

static int cmd_init(struct rbatch_cmd *cmd, int script, int nkeys, int argc, const char *const *argv,
		    const size_t *lens, int at)
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
	memset(&cmd->reply, 0, sizeof(*cmd) - offsetof(struct rbatch_cmd, reply));
	cmd->script = script;
	cmd->nkeys = nkeys;
	cmd->argc = argc;
	cmd->at = at;
	cmd->slot = -1;
	/* the caller said where it goes: a primary (at), a script's first key, a plain command's first argument */
	if (at >= 0)
		;
	else if (script >= 0)
		cmd->slot = nkeys > 0 ? (int)shard_keyslot(cmd->argv[0], cmd->lens[0]) : -1;
	else if (argc >= 2)
		cmd->slot = (int)shard_keyslot(cmd->argv[1], cmd->lens[1]);
	return 0;
}

struct rbatch *rbatch_new(void)
{
	return calloc(1, sizeof(struct rbatch));
}

void rbatch_drop_replies(struct rbatch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].reply) {
			freeReplyObject(b->v[i].reply);
			b->v[i].reply = NULL;
		}
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

static int push(struct rbatch *b, int script, int nkeys, int argc, const char *const *argv, const size_t *lens,
		int at)
{
	struct rbatch_cmd *cmd;

	if (argc < 1)
		return -EINVAL;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		struct rbatch_cmd *v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	cmd = &b->v[b->n];
	if (cmd_init(cmd, script, nkeys, argc, argv, lens, at))
		return -ENOMEM;
	b->n++;
	return 0;
}

int rbatch_cmd(struct rbatch *b, int argc, const char *const *argv, const size_t *lens)
{
	return push(b, -1, 0, argc, argv, lens, -1);
}

int rbatch_cmd_at(struct rbatch *b, size_t primary, int argc, const char *const *argv, const size_t *lens)
{
	return push(b, -1, 0, argc, argv, lens, primary > RCONN_NODES_MAX ? (int)RCONN_NODES_MAX : (int)primary);
}

int rbatch_eval(struct rbatch *b, enum script_id id, int nkeys, int argc, const char *const *argv,
		const size_t *lens)
{
	if ((unsigned)id >= SCRIPT__COUNT || nkeys < 0 || nkeys > argc)
		return -EINVAL;
	return push(b, (int)id, nkeys, argc, argv, lens, -1);
}

size_t rbatch_len(const struct rbatch *b)
{
	return b->n;
}

redisReply *rbatch_reply(const struct rbatch *b, size_t i)
{
	return i < b->n ? b->v[i].reply : NULL;
}

uint32_t rbatch_reply_node(const struct rbatch *b, size_t i)
{
	return i < b->n && b->v[i].reply ? b->v[i].tag : 0;
}

redisReply *rbatch_take(struct rbatch *b, size_t i)
{
	redisReply *r = rbatch_reply(b, i);

	if (r)
		b->v[i].reply = NULL;
	return r;
}

int rbatch_run_one(struct rconn *c, int script, int nkeys, int argc, const char *const *argv,
		   const size_t *lens, redisReply **out)
{
	struct rbatch b = { 0 };
	int rc = push(&b, script, nkeys, argc, argv, lens, -1);

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

#include "core/reply.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *reply_error(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ERROR ? r->str : NULL;
}

int reply_is_oom(const redisReply *r)
{
	return reply_error(r) && strncmp(r->str, "OOM ", 4) == 0;
}

/* Redis's error words that name a state of the server or the cluster, not a refusal of the command. */
static const struct {
	const char *word; /* the error's first word */
	const char *text; /* how sluice names it */
} causes[] = {
	{ "MOVED", "MOVED: slot map changed (the slot lives on another node now)" },
	{ "ASK", "ASK: the slot is being migrated to another node" },
	{ "CLUSTERDOWN", "CLUSTERDOWN: the cluster is down (a primary failed and is not replaced, or slots are not served)" },
	{ "TRYAGAIN", "TRYAGAIN: the slot's keys are being migrated (resharding)" },
	{ "LOADING", "LOADING: Redis is loading its data set into memory (just restarted)" },
	{ "BUSY", "BUSY: Redis is running a slow script" },
	{ "READONLY", "READONLY: the node is a replica now (a failover)" },
	{ "MASTERDOWN", "MASTERDOWN: the replica lost its primary" },
	{ "NOAUTH", "NOAUTH: Redis wants a password (set one in the Redis URL)" },
	{ "WRONGPASS", "WRONGPASS: Redis refused the user or password" },
	{ "NOPERM", "NOPERM: the ACL user may not run a command sluice needs" },
};

const char *reply_cause(const char *text)
{
	if (!text)
		return "unexpected reply";
	if (strncmp(text, "OOM ", 4) == 0)
		return REPLY_OOM_TEXT;
	for (size_t i = 0; i < sizeof(causes) / sizeof(causes[0]); i++) {
		size_t n = strlen(causes[i].word);

		if (strncmp(text, causes[i].word, n) == 0 && (text[n] == ' ' || text[n] == '\0'))
			return causes[i].text;
	}
	return text;
}

const char *reply_describe(const redisReply *r)
{
	return reply_cause(reply_error(r));
}

int reply_is_nodedown(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, REPLY_NODEDOWN " ", strlen(REPLY_NODEDOWN) + 1) == 0;
}

/* 1 when `r` is an error reply whose first word is `word`. */
static int error_word(const redisReply *r, const char *word)
{
	size_t n = strlen(word);

	return reply_error(r) && strncmp(r->str, word, n) == 0 && (r->str[n] == ' ' || r->str[n] == '\0');
}

int reply_is_moving(const redisReply *r)
{
	return error_word(r, "MOVED") || error_word(r, "ASK") || error_word(r, "TRYAGAIN");
}

int reply_errno(const redisReply *r)
{
	return reply_is_oom(r) ? -ENOSPC : reply_is_nodedown(r) ? -EIO : reply_is_moving(r) ? -EBUSY
	       : reply_error(r) ? -EBADMSG : -EPROTO;
}

/*
 * Shape errors: an error reply is reply_errno's (-ENOSPC at maxmemory, -EIO
 * for a node down, -EBUSY for a slot being moved, else -EBADMSG), anything
 * else -EPROTO.
 */
static int shape(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ERROR ? reply_errno(r) : -EPROTO;
}

int reply_int(const redisReply *r, long long *out)
{
	if (!r || r->type != REDIS_REPLY_INTEGER)
		return shape(r);
	*out = r->integer;
	return 0;
}

int reply_str(const redisReply *r, const char **s, size_t *len)
{
	if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS))
		return shape(r);
	*s = r->str;
	*len = r->len;
	return 0;
}

int reply_int_text(const redisReply *r, long long *out)
{
	char *end;
	long long v;

	if (r && r->type == REDIS_REPLY_INTEGER)
		return reply_int(r, out);
	if (!r || r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 20)
		return shape(r);
	errno = 0;
	v = strtoll(r->str, &end, 10);
	if (errno || end != r->str + r->len)
		return -EPROTO;
	*out = v;
	return 0;
}

int reply_double(const redisReply *r, double *out)
{
	char *end;
	double v;

	if (!r || r->type != REDIS_REPLY_STRING || r->len == 0)
		return shape(r);
	if (isspace((unsigned char)r->str[0]))
		return -EPROTO; /* strtod would skip it; Redis writes none */
	v = strtod(r->str, &end);
	if (end != r->str + r->len || v != v)
		return -EPROTO;
	*out = v;
	return 0;
}

int reply_array(const redisReply *r, size_t min, const redisReply *const **elems, size_t *n)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < min)
		return shape(r);
	*elems = (const redisReply *const *)r->element;
	*n = r->elements;
	return 0;
}

int reply_int_at(const redisReply *r, size_t i, long long *out)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements)
		return shape(r);
	return reply_int(r->element[i], out);
}

int reply_is_strings(const redisReply *r)
{
	if (!r || r->type != REDIS_REPLY_ARRAY)
		return 0;
	for (size_t i = 0; i < r->elements; i++)
		if (r->element[i]->type != REDIS_REPLY_STRING)
			return 0;
	return 1;
}

int reply_scan_page(const redisReply *r, char cursor[REPLY_CURSOR_MAX], const redisReply **members)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len >= REPLY_CURSOR_MAX ||
	    r->element[1]->type != REDIS_REPLY_ARRAY)
		return shape(r);
	memcpy(cursor, r->element[0]->str, r->element[0]->len + 1);
	*members = r->element[1];
	return 0;
}

/*
 * Redisson's RRateLimiter (Redisson >= 3.35, org.redisson.RedissonRateLimiter),
 * a foreign layout kind of the token bucket: a layout with "kind": "redisson"
 * finds the limiters' hashes <name> by SCAN (TYPE hash) and maintains, beside
 * each, {<name>}:value (permits available) and {<name>}:permits (a sorted
 * set of the permits handed out, scored by the client's ms): the names
 * Redisson's suffixName gives (a name holding '{' gets ":value" appended as
 * is).  The hash records the settings (rate permits per interval ms, type),
 * so no rule is needed.  lua/redisson_reclaim.lua is the worker's job:
 * permits that left the interval are credited back exactly as Redisson's
 * acquire script does, and a limiter idle for its interval is reclaimed (its
 * value and permits deleted: the state a fresh trySetRate gives);
 * lua/redisson_state.lua the admin read; lua/lib/redisson.lua the permit
 * format.  README "Redisson's RRateLimiter" says what is and is not kept.
 */
#include <errno.h>
#include <string.h>

#include "core/alg/alg.h"
#include "core/shard.h"

/* Append Redisson's suffixName(key, suffix) to `b`.  0 or -ENOMEM. */
static int suffix_name(struct strbuf *b, const char *key, size_t len, const char *suffix)
{
	int braced = memchr(key, '{', len) != NULL;

	return (!braced && strbuf_add(b, "{", 1)) || strbuf_add(b, key, len) || (!braced && strbuf_add(b, "}", 1)) ||
	       strbuf_add(b, ":", 1) || strbuf_add(b, suffix, strlen(suffix)) ? -ENOMEM : 0;
}

/* {<name>}:value and {<name>}:permits after the hash <name>, both in its slot (`a` unchanged on -EINVAL). */
static int side_keys(const char *key, size_t len, struct cmdargs *a)
{
	struct strbuf v = { 0 }, p = { 0 };
	unsigned slot = shard_keyslot(key, len);
	int rc = -ENOMEM;

	if (suffix_name(&v, key, len, "value") || suffix_name(&p, key, len, "permits"))
		goto out;
	/* a name with a '{' that opens no hash tag: Redis Cluster would refuse the keys together */
	rc = -EINVAL;
	if (shard_keyslot(v.p, v.len) != slot || shard_keyslot(p.p, p.len) != slot)
		goto out;
	rc = cmdargs_add(a, v.p, v.len) || cmdargs_add(a, p.p, p.len) ? -ENOMEM : 0;
out:
	strbuf_free(&v);
	strbuf_free(&p);
	return rc;
}

const struct alg_ops alg_redisson = {
	.id = ALG_TOKEN_BUCKET,
	.name = "token_bucket",
	.action = "reclaimed",
	.job = ALG_JOB_PRUNE,
	.fields = RULE_F_CAPACITY | RULE_F_RATE,
	.foreign_type = "hash",
	.job_script = SCRIPT_REDISSON_RECLAIM,
	.state_script = SCRIPT_REDISSON_STATE,
	.state_ttl_at = 3,
	.self_described = 1,
	.side_keys = side_keys,
};

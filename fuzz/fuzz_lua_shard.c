/*
 * fuzz_lua_shard: core/shard.c and lua/lib/shard.lua must give every path
 * (the input, any bytes) the same key slot and shard.  The Lua side runs in
 * the private redis-server (fuzz/harness.h) as build/lua-fuzz/shard_probe.lua;
 * Redis's own CLUSTER KEYSLOT is not asked (a plain server refuses it), but
 * check_shard's fixed vectors tie core/shard.c to it.  A disagreement aborts
 * with both answers and the path.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/shard.h"
#include "fuzz/harness.h"

#define PROBE "build/lua-fuzz/shard_probe.lua"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = (const char *)data;
	unsigned slot = shard_keyslot(path, size), shard = shard_of(path, size);
	redisReply *r = redisCommand(fuzz_redis(), "EVALSHA %s 0 %b", fuzz_script(PROBE), path, size);

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_INTEGER ||
	    r->element[1]->type != REDIS_REPLY_INTEGER) {
		fuzz_show("path", path, size);
		fprintf(stderr, "fuzz_lua_shard: bad reply from the probe: %s\n",
			r && r->type == REDIS_REPLY_ERROR ? r->str : r ? "not two integers" : fuzz_redis()->errstr);
		abort();
	}
	if ((long long)slot != r->element[0]->integer || (long long)shard != r->element[1]->integer) {
		fuzz_show("path", path, size);
		fprintf(stderr, "fuzz_lua_shard: C says slot %u shard %u, Lua says slot %lld shard %lld\n", slot, shard,
			r->element[0]->integer, r->element[1]->integer);
		abort();
	}
	if (shard != slot % SHARD_COUNT || slot >= SHARD_SLOTS) {
		fuzz_show("path", path, size);
		fprintf(stderr, "fuzz_lua_shard: slot %u, shard %u out of range or apart\n", slot, shard);
		abort();
	}
	freeReplyObject(r);
	return 0;
}

#ifndef SLUICE_KEYS_H
#define SLUICE_KEYS_H
/*
 * The key names of sluice's own state, key layout 2 (DESIGN.md, "State
 * model (key layout 2)"): every path belongs to shard k = shard_of(path)
 * (core/shard.h), and every key of shard k carries the hash tag {k}
 * (decimal), so one script call touches one Redis Cluster slot:
 *
 *   <prefix>{k}:<algorithm>:<path>        the path's state
 *   <prefix>{k}:<algorithm>_meta:<path>   its bookkeeping (time mark, carry, parameters, rule)
 *   <prefix>{k}:registry:<algorithm>      the shard's due index (sorted set)
 *   <prefix>{k}:rules, <prefix>{k}:stats  the shard's rules copy and counters
 *
 * The path is always the last part of a per-path key, after a fixed word,
 * so no path collides with another key; a prefix holds no brace (config
 * refuses one), so the first '{' of a key opens its shard's tag.  These are
 * the names lua/lib/contract.lua checks; the functions append to a strbuf
 * and return 0 or -ENOMEM (`b` as it was on error).
 */
#include <stddef.h>

#include "core/strbuf.h"

/* Append "<prefix>{k}:<word>" (a per-shard key: "registry:leaky_bucket", "rules", "stats"). */
int keys_shard(struct strbuf *b, const char *prefix, unsigned shard, const char *word);
/*
 * Append "<prefix>{k}:<word>:<path>" for the path's shard k (`len` bytes of
 * `path`, binary-safe): `word` is the algorithm's name for the state, and
 * "<algorithm>_meta" for the meta.
 */
int keys_path(struct strbuf *b, const char *prefix, const char *word, const char *path, size_t len);
/*
 * The path inside a per-path key of word `word` (`klen` bytes of `key`):
 * *path points into `key`.  0, or -EINVAL when the key is not
 * "<prefix>{k}:<word>:<path>" with k the shard of that path.
 */
int keys_path_of(const char *prefix, const char *word, const char *key, size_t klen, const char **path,
		 size_t *plen);

#endif

#ifndef SLUICE_LAYOUT_H
#define SLUICE_LAYOUT_H
/*
 * A layout says where a limiter keeps its state: algorithm, key template
 * (data key = key_prefix + path + key_suffix) and the registry set of paths.
 * sluice's own layouts put every key of one path under one hash tag:
 *   <prefix>{<path>}:<algorithm>           data (sorted set for the logs and buckets)
 *   <prefix>{<path>}:<algorithm>:meta      leaky bucket meta (last leak ms, carry, seq)
 *   <prefix>registry:<algorithm>           registry set of paths
 */
#include <stddef.h>

#include "core/rules.h"

struct layout {
	char name[32];           /* "leaky_bucket", ... for sluice's own */
	enum algorithm algorithm;
	char *key_prefix;        /* owned, e.g. "sluice:{" */
	char *key_suffix;        /* owned, e.g. "}:leaky_bucket" */
	char *registry;          /* owned, e.g. "sluice:registry:leaky_bucket" */
};

/*
 * sluice's own layouts under key prefix `prefix`, one per algorithm the
 * worker maintains (leaky_bucket, sliding_log).  *out is a new array of *n
 * layouts, freed with layouts_free().  0 or -ENOMEM.
 */
int layouts_default(const char *prefix, struct layout **out, size_t *n);
void layouts_free(struct layout *v, size_t n);
/* The layout for algorithm `a`, or NULL; borrowed. */
const struct layout *layouts_find(const struct layout *v, size_t n, enum algorithm a);

/* A growable byte buffer; `p` is NUL-terminated after every append. */
struct strbuf {
	char *p;
	size_t len, cap;
};
/* Append `n` bytes; 0 or -ENOMEM (buffer unchanged). */
int strbuf_add(struct strbuf *b, const void *s, size_t n);
void strbuf_free(struct strbuf *b);

/*
 * Append the data key of `path` (`len` bytes, binary-safe) to `b`; with
 * `meta` set, the key of the leaky bucket's meta hash, which shares the data
 * key's hash slot: data key + ":meta" when the data key has a hash tag, else
 * "{" + data key + "}:meta".  0 or -ENOMEM.
 */
int layout_key(const struct layout *l, const char *path, size_t len, int meta, struct strbuf *b);

#endif

#include "core/keys.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/shard.h"

/* "<prefix>{k}:" into `b`; 0 or -ENOMEM. */
static int add_tag(struct strbuf *b, const char *prefix, unsigned shard)
{
	char tag[16];
	int n = snprintf(tag, sizeof(tag), "{%u}:", shard);

	return strbuf_add(b, prefix, strlen(prefix)) || strbuf_add(b, tag, (size_t)n) ? -ENOMEM : 0;
}

int keys_shard(struct strbuf *b, const char *prefix, unsigned shard, const char *word)
{
	size_t was = b->len;

	if (add_tag(b, prefix, shard) || strbuf_add(b, word, strlen(word))) {
		strbuf_truncate(b, was);
		return -ENOMEM;
	}
	return 0;
}

int keys_path(struct strbuf *b, const char *prefix, const char *word, const char *path, size_t len)
{
	size_t was = b->len;

	if (add_tag(b, prefix, shard_of(path, len)) || strbuf_add(b, word, strlen(word)) ||
	    strbuf_add(b, ":", 1) || strbuf_add(b, path, len)) {
		strbuf_truncate(b, was);
		return -ENOMEM;
	}
	return 0;
}

int keys_path_of(const char *prefix, const char *word, const char *key, size_t klen, const char **path,
		 size_t *plen)
{
	size_t p = strlen(prefix), w = strlen(word), i;
	unsigned k = 0;
	char tag[16];
	int n;

	if (klen < p + 3 || memcmp(key, prefix, p) != 0 || key[p] != '{')
		return -EINVAL;
	for (i = p + 1; i < klen && i < p + 6 && key[i] >= '0' && key[i] <= '9'; i++)
		k = k * 10 + (unsigned)(key[i] - '0');
	if (i == p + 1 || i >= klen || key[i] != '}' || k >= SHARD_COUNT)
		return -EINVAL;
	n = snprintf(tag, sizeof(tag), "{%u}:", k);
	/* the tag must be written as keys_path writes it (no leading zeros) */
	if ((size_t)n != i + 2 - p || memcmp(key + p, tag, (size_t)n) != 0)
		return -EINVAL;
	i = p + (size_t)n;
	if (klen < i + w + 2 || memcmp(key + i, word, w) != 0 || key[i + w] != ':')
		return -EINVAL;
	*path = key + i + w + 1;
	*plen = klen - (i + w + 1);
	return shard_of(*path, *plen) == k ? 0 : -EINVAL;
}

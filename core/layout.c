#include "core/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const enum algorithm maintained[] = { ALG_LEAKY_BUCKET, ALG_SLIDING_LOG };

void layouts_free(struct layout *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].key_prefix);
		free(v[i].key_suffix);
		free(v[i].registry);
	}
	free(v);
}

int layouts_default(const char *prefix, struct layout **out, size_t *n)
{
	size_t cnt = sizeof(maintained) / sizeof(maintained[0]);
	struct layout *v = calloc(cnt, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < cnt; i++) {
		const char *alg = algorithm_name(maintained[i]);

		snprintf(v[i].name, sizeof(v[i].name), "%s", alg);
		v[i].algorithm = maintained[i];
		if (asprintf(&v[i].key_prefix, "%s{", prefix) < 0)
			v[i].key_prefix = NULL;
		if (asprintf(&v[i].key_suffix, "}:%s", alg) < 0)
			v[i].key_suffix = NULL;
		if (asprintf(&v[i].registry, "%sregistry:%s", prefix, alg) < 0)
			v[i].registry = NULL;
		if (!v[i].key_prefix || !v[i].key_suffix || !v[i].registry) {
			layouts_free(v, cnt);
			return -ENOMEM;
		}
	}
	*out = v;
	*n = cnt;
	return 0;
}

const struct layout *layouts_find(const struct layout *v, size_t n, enum algorithm a)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].algorithm == a)
			return &v[i];
	return NULL;
}

int strbuf_add(struct strbuf *b, const void *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

void strbuf_free(struct strbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* Redis Cluster's rule: the tag is between the first '{' and the next '}', if non-empty. */
static int has_hash_tag(const char *k, size_t n)
{
	const char *open = memchr(k, '{', n), *close;

	if (!open)
		return 0;
	close = memchr(open + 1, '}', n - (size_t)(open + 1 - k));
	return close && close > open + 1;
}

int layout_key(const struct layout *l, const char *path, size_t len, int meta, struct strbuf *b)
{
	size_t start = b->len, plen = strlen(l->key_prefix), slen = strlen(l->key_suffix);
	int rc;

	if (meta) {
		/* whether the data key has a tag decides the meta key's form */
		char stackbuf[512];
		size_t klen = plen + len + slen;
		char *k = klen <= sizeof(stackbuf) ? stackbuf : malloc(klen);
		int tagged;

		if (!k)
			return -ENOMEM;
		memcpy(k, l->key_prefix, plen);
		memcpy(k + plen, path, len);
		memcpy(k + plen + len, l->key_suffix, slen);
		tagged = has_hash_tag(k, klen);
		rc = (tagged ? 0 : strbuf_add(b, "{", 1)) || strbuf_add(b, k, klen) ||
		     strbuf_add(b, tagged ? ":meta" : "}:meta", tagged ? 5 : 6);
		if (k != stackbuf)
			free(k);
	} else {
		rc = strbuf_add(b, l->key_prefix, plen) || strbuf_add(b, path, len) ||
		     strbuf_add(b, l->key_suffix, slen);
	}
	if (rc) {
		b->len = start;
		if (b->p)
			b->p[start] = '\0';
		return -ENOMEM;
	}
	return 0;
}

#include "core/strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int strbuf_add(struct strbuf *b, const void *s, size_t n)
{
	if (n > SIZE_MAX / 2 - 1 - b->len)
		return -ENOMEM; /* the sizes below could wrap */
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
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

void strbuf_truncate(struct strbuf *b, size_t len)
{
	if (len > b->len)
		return;
	b->len = len;
	if (b->p)
		b->p[len] = '\0';
}

void strbuf_free(struct strbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static int grow(struct cmdargs *a)
{
	size_t c = a->cap ? 2 * a->cap : 16;
	size_t *o, *l;

	if (a->n < a->cap)
		return 0;
	o = realloc(a->off, c * sizeof(*o));
	if (!o)
		return -ENOMEM;
	a->off = o;
	l = realloc(a->len, c * sizeof(*l));
	if (!l)
		return -ENOMEM;
	a->len = l;
	a->cap = c;
	return 0;
}

struct strbuf *cmdargs_begin(struct cmdargs *a)
{
	a->start = a->buf.len;
	return &a->buf;
}

int cmdargs_end(struct cmdargs *a, int rc)
{
	if (!rc && grow(a))
		rc = -ENOMEM;
	if (rc) {
		strbuf_truncate(&a->buf, a->start); /* the partial bytes go */
		return rc < 0 ? rc : -ENOMEM;
	}
	a->off[a->n] = a->start;
	a->len[a->n] = a->buf.len - a->start;
	a->n++;
	return 0;
}

int cmdargs_add(struct cmdargs *a, const void *s, size_t n)
{
	struct strbuf *b = cmdargs_begin(a);

	return cmdargs_end(a, strbuf_add(b, s, n));
}

int cmdargs_str(struct cmdargs *a, const char *s)
{
	return cmdargs_add(a, s, strlen(s));
}

int cmdargs_int(struct cmdargs *a, int64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%lld", (long long)v);

	return cmdargs_add(a, num, (size_t)n);
}

int cmdargs_double(struct cmdargs *a, double v)
{
	char num[40];
	int n = snprintf(num, sizeof(num), "%.17g", v);

	return cmdargs_add(a, num, (size_t)n);
}

void cmdargs_reset(struct cmdargs *a)
{
	a->n = 0;
	strbuf_truncate(&a->buf, 0);
}

void cmdargs_free(struct cmdargs *a)
{
	strbuf_free(&a->buf);
	free(a->off);
	free(a->len);
	free(a->view);
	free(a->vlen);
	memset(a, 0, sizeof(*a));
}

int cmdargs_view(struct cmdargs *head, const struct cmdargs *tail, const char *const **argv,
		 const size_t **lens)
{
	size_t n = head->n + (tail ? tail->n : 0);

	if (n > head->viewcap) {
		const char **v = realloc(head->view, n * sizeof(*v));
		size_t *l;

		if (!v)
			return -ENOMEM;
		head->view = v;
		l = realloc(head->vlen, n * sizeof(*l));
		if (!l)
			return -ENOMEM;
		head->vlen = l;
		head->viewcap = n;
	}
	for (size_t i = 0; i < head->n; i++) {
		head->view[i] = head->buf.p ? head->buf.p + head->off[i] : "";
		head->vlen[i] = head->len[i];
	}
	for (size_t i = 0; tail && i < tail->n; i++) {
		head->view[head->n + i] = tail->buf.p ? tail->buf.p + tail->off[i] : "";
		head->vlen[head->n + i] = tail->len[i];
	}
	*argv = head->view;
	*lens = head->vlen;
	return (int)n;
}

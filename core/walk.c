#include "core/walk.h"

#include <errno.h>
#include <string.h>

int walk_queue(struct rbatch *b, const struct layout *l, const char *cursor, const char *match, size_t count)
{
	struct cmdargs a = { 0 };
	const char *const *argv;
	const size_t *lens;
	int rc, n;

	if (l->scan) {
		struct strbuf *g;

		rc = cmdargs_str(&a, "SCAN") || cmdargs_str(&a, cursor) || cmdargs_str(&a, "MATCH");
		if (!rc) {
			g = cmdargs_begin(&a);
			rc = cmdargs_end(&a, match ? layout_scan_glob(l, match, g)
						   : strbuf_add(g, l->scan_match, strlen(l->scan_match)));
		}
		rc = rc || cmdargs_str(&a, "TYPE") || cmdargs_str(&a, l->scan_type);
	} else {
		rc = cmdargs_str(&a, "SSCAN") || cmdargs_str(&a, l->registry) || cmdargs_str(&a, cursor) ||
		     (match && (cmdargs_str(&a, "MATCH") || cmdargs_str(&a, match)));
	}
	/* every step above can only fail for memory */
	rc = rc || cmdargs_str(&a, "COUNT") || cmdargs_int(&a, (int64_t)count) ? -ENOMEM : 0;
	if (!rc)
		rc = (n = cmdargs_view(&a, NULL, &argv, &lens)) < 0 ? n : rbatch_cmd(b, n, argv, lens);
	cmdargs_free(&a);
	return rc;
}

int walk_page(const redisReply *r, char cursor[REPLY_CURSOR_MAX], const redisReply **members)
{
	return reply_scan_page(r, cursor, members);
}

int walk_path(const struct layout *l, const redisReply *m, const char **path, size_t *plen)
{
	const char *p;
	size_t n;

	if (!m || m->type != REDIS_REPLY_STRING)
		return -EINVAL;
	p = m->str;
	n = m->len;
	if (l->scan && layout_path_of(l, m->str, m->len, &p, &n))
		return -EINVAL;
	if (n == 0)
		return -EINVAL;
	*path = p;
	*plen = n;
	return 0;
}

int walk_at_end(const char *cursor)
{
	return strcmp(cursor, "0") == 0;
}

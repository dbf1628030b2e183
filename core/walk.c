#include "core/walk.h"

#include "core/glob.h"

#include <errno.h>
#include <string.h>

int walk_queue(struct rbatch *b, const struct layout *l, const char *cursor, const char *match, size_t count)
{
	struct cmdargs a = { 0 };
	const char *const *argv;
	const size_t *lens;
	int rc, n;

	if (l->scan) {
		/* SCAN MATCH <key glob> TYPE <type> */
		if ((rc = cmdargs_str(&a, "SCAN")) || (rc = cmdargs_str(&a, cursor)) || (rc = cmdargs_str(&a, "MATCH")))
			goto out;
		if (match)
			rc = cmdargs_end(&a, layout_scan_glob(l, match, cmdargs_begin(&a)));
		else
			rc = cmdargs_str(&a, l->scan_match);
		if (rc || (rc = cmdargs_str(&a, "TYPE")) || (rc = cmdargs_str(&a, l->scan_type)))
			goto out;
	} else {
		/* SSCAN <registry> [MATCH <path glob, in Redis's dialect>] */
		if ((rc = cmdargs_str(&a, "SSCAN")) || (rc = cmdargs_str(&a, l->registry)) ||
		    (rc = cmdargs_str(&a, cursor)))
			goto out;
		if (match && ((rc = cmdargs_str(&a, "MATCH")) ||
			      (rc = cmdargs_end(&a, glob_to_redis(match, cmdargs_begin(&a))))))
			goto out;
	}
	if ((rc = cmdargs_str(&a, "COUNT")) || (rc = cmdargs_int(&a, (int64_t)count)))
		goto out;
	rc = (n = cmdargs_view(&a, NULL, &argv, &lens)) < 0 ? n : rbatch_cmd(b, n, argv, lens);
out:
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

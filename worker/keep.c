/*
 * The step that skew.c and copies.c share (worker/internal.h, struct keep):
 * the rolling check, then the pending writes with a retry delay.
 */
#include <stdint.h>

#include "worker/internal.h"

void keep_reset(struct keep *k)
{
	k->check_all = 1;
	k->retry_ms = INT64_MIN;
}

int keep_step(struct worker *w, struct keep *k, const struct keep_ops *ops, int64_t now, int all)
{
	uint64_t connects = rconn_connects(w->conn);
	size_t from, n;
	int rc, failed = 0;

	if (connects != k->connects || k->check_all)
		all = 1; /* a new connection may be a new (empty) Redis */
	n = roll_slice(&k->check, now, ops->check_ms, all, &from);
	if ((rc = ops->check(w, from, n, &failed)))
		goto out;
	k->connects = connects;
	k->check_all = 0;
	if (now >= k->retry_ms && ops->pending(w)) {
		if ((rc = ops->write(w, &failed)))
			goto out;
		k->retry_ms = failed ? now + ops->retry_ms : INT64_MIN;
	}
	if (!failed && !ops->pending(w))
		k->error[0] = '\0';
out:
	if (rc)
		k->check_all = 1; /* part of it may not have been seen: all of it next time */
	rbatch_clear(w->batch);
	return rc;
}

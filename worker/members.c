/* The daemons that share the shards, and which are this one's (worker/members.h). */
#include "worker/members.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "core/reply.h"

/* FNV-1a, 64 bits (Fowler, Noll, Vo). */
static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* SplitMix64's output function (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014). */
static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t members_weight(const char *id, size_t n, unsigned k)
{
	return mix64(fnv1a(id, n) ^ mix64((uint64_t)k));
}

int members_default_id(char *buf, size_t cap)
{
	unsigned char r[3];
	char host[40] = "";

	if (cap < CONFIG_ID_MAX + 1)
		return -EINVAL;
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -errno;
	if (gethostname(host, sizeof(host) - 1) != 0 || !host[0])
		strcpy(host, "sluiced");
	host[sizeof(host) - 1] = '\0';
	for (char *p = host; *p; p++)
		if (*p <= ' ' || *p > '~')
			*p = '_';
	snprintf(buf, cap, "%s:%ld:%02x%02x%02x", host, (long)getpid(), r[0], r[1], r[2]);
	return 0;
}

void members_init(struct members *ms, const char *id, int64_t dead_ms, int64_t forget_ms)
{
	memset(ms, 0, sizeof(*ms));
	ms->idlen = strlen(id);
	memcpy(ms->id, id, ms->idlen + 1);
	ms->dead_ms = dead_ms;
	ms->forget_ms = forget_ms;
}

void members_free(struct members *ms)
{
	cmdargs_free(&ms->a);
}

int members_queue(struct members *ms, const char *prefix, struct rbatch *b, int leave)
{
	struct cmdargs *a = &ms->a;
	struct strbuf *b2;
	const char *const *argv;
	const size_t *lens;
	int argc;

	cmdargs_reset(a);
	b2 = cmdargs_begin(a);
	if (cmdargs_end(a, strbuf_add(b2, prefix, strlen(prefix)) || strbuf_add(b2, "daemons", 7)) ||
	    cmdargs_str(a, ms->id) ||
	    cmdargs_str(a, leave ? "leave" : "beat") || cmdargs_int(a, ms->forget_ms) || cmdargs_int(a, ms->dead_ms) ||
	    (argc = cmdargs_view(a, NULL, &argv, &lens)) < 0)
		return -ENOMEM;
	return rbatch_eval(b, SCRIPT_DAEMONS, 1, argc, argv, lens);
}

static int cmp_member(const void *x, const void *y)
{
	return strcmp(((const struct members_entry *)x)->id, ((const struct members_entry *)y)->id);
}

/* The members from the heartbeat's reply; 0 or the reply's errno. */
static int read_entries(struct members *ms, const redisReply *e, char *why, size_t cap)
{
	const redisReply *const *el;
	size_t n, m = 0;
	long long now;
	int self = 0;

	const char *repaired;
	size_t rlen;

	if (reply_array(e, 2, &el, &n) || reply_int(el[0], &now) || reply_str(el[1], &repaired, &rlen) || n % 2) {
		snprintf(why, cap, "heartbeat: %s", reply_describe(e));
		return reply_errno(e) ? reply_errno(e) : -EPROTO;
	}
	if (rlen) {
		ms->repaired++;
		snprintf(ms->repaired_what, sizeof(ms->repaired_what), "%.*s", (int)(rlen < 20 ? rlen : 20), repaired);
	}
	for (size_t i = 2; i + 1 < n && m < LEASE_MEMBERS_MAX; i += 2) {
		const char *id, *bad;
		size_t len;
		long long seen;

		if (reply_str(el[i], &id, &len) || len == 0 || len > CONFIG_ID_MAX || memchr(id, '\0', len) ||
		    config_id_check(id, &bad) || reply_int_text(el[i + 1], &seen))
			continue; /* not a daemon's heartbeat (no id of ours has such bytes): not one of us */
		memcpy(ms->m[m].id, id, len);
		ms->m[m].id[len] = '\0';
		ms->m[m].seen_ms = seen;
		/* a score ahead of now (the script removes those far ahead) is not a heartbeat to trust */
		ms->m[m].alive = seen > now - ms->dead_ms && seen <= now + ms->dead_ms;
		self |= len == ms->idlen && memcmp(id, ms->id, len) == 0;
		m++;
	}
	if (!self) {
		if (m == LEASE_MEMBERS_MAX)
			m--; /* a full set: this daemon in place of one of them */
		memcpy(ms->m[m].id, ms->id, ms->idlen + 1);
		ms->m[m].seen_ms = now;
		ms->m[m].alive = 1;
		m++;
	}
	qsort(ms->m, m, sizeof(ms->m[0]), cmp_member);
	ms->n = m;
	ms->now_ms = now;
	return 0;
}

int members_read(struct members *ms, const redisReply *e, char *why, size_t cap)
{
	uint64_t view = 0x51ceULL, h[LEASE_MEMBERS_MAX];
	size_t nl = 0, self = 0;
	int rc;

	if ((rc = read_entries(ms, e, why, cap)))
		return rc;
	for (size_t i = 0; i < ms->n; i++) {
		if (!ms->m[i].alive)
			continue;
		h[nl] = fnv1a(ms->m[i].id, strlen(ms->m[i].id));
		view = mix64(view ^ h[nl]);
		if (strcmp(ms->m[i].id, ms->id) == 0)
			self = nl;
		nl++;
	}
	ms->live = nl;
	if (ms->have_view && view == ms->view)
		return 0;
	for (unsigned k = 0; k < SHARD_COUNT; k++) {
		uint64_t best = 0, mk = mix64((uint64_t)k);
		size_t owner = 0;

		for (size_t j = 0; j < nl; j++) {
			uint64_t wgt = mix64(h[j] ^ mk); /* members_weight(id_j, k) */

			/* a tie (one in 2^64) goes to the smaller id: members are sorted */
			if (j == 0 || wgt > best) {
				best = wgt;
				owner = j;
			}
		}
		ms->mine[k] = owner == self;
	}
	ms->view = view;
	ms->have_view = 1;
	return 1;
}

void members_status(const struct members *ms, struct worker_lease_status *out)
{
	out->live = ms->live ? ms->live : 1;
	out->npeers = ms->n < LEASE_PEERS_MAX ? ms->n : LEASE_PEERS_MAX;
	for (size_t i = 0; i < out->npeers; i++) {
		memcpy(out->peer[i].id, ms->m[i].id, sizeof(out->peer[i].id));
		out->peer[i].alive = ms->m[i].alive;
		out->peer[i].last_seen_ms = ms->now_ms - ms->m[i].seen_ms;
	}
}

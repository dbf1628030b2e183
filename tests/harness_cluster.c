#include "tests/harness_cluster.h"

#include "core/rconn.h"
#include "core/redis_target.h"
#include "core/shard.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_NODE_TIMEOUT_MS 1000
#define DEFAULT_TIMEOUT_MS 30000
#define SLOTS_TEXT_MAX 8192 /* a normalised CLUSTER SLOTS (a few ranges) */

/* ---- what the atexit hook stops ------------------------------------------------- */

/*
 * Copies of the pids and directories of the clusters this process started
 * and has not stopped (never a pointer to the caller's struct, which may be
 * gone at exit).  A forked test inherits them with owner its runner's pid,
 * so it leaves them alone.
 */
#define LIVE_MAX 8
static struct live {
	const struct test_cluster *key; /* which cluster; compared, never dereferenced */
	pid_t owner;
	int n;
	pid_t pid[TEST_CLUSTER_MAX_NODES];
	char dir[TEST_CLUSTER_MAX_NODES][sizeof(((struct test_redis *)0)->dir)];
} live[LIVE_MAX];
static int hook_set;

static void stop_live_at_exit(void)
{
	for (int k = 0; k < LIVE_MAX; k++) {
		struct live *l = &live[k];
		char cmd[200];

		if (!l->key || l->owner != getpid())
			continue;
		for (int i = 0; i < l->n; i++)
			if (l->pid[i] > 0) {
				kill(l->pid[i], SIGKILL);
				waitpid(l->pid[i], NULL, 0);
			}
		for (int i = 0; i < l->n; i++)
			if (strncmp(l->dir[i], "/tmp/sluice-test-", 17) == 0) {
				snprintf(cmd, sizeof(cmd), "rm -rf '%s'", l->dir[i]);
				if (system(cmd) != 0)
					fprintf(stderr, "harness_cluster: could not remove %s\n", l->dir[i]);
			}
		l->key = NULL;
	}
}

static void live_set(const struct test_cluster *c)
{
	struct live *l = NULL;

	if (!hook_set) {
		atexit(stop_live_at_exit);
		hook_set = 1;
	}
	for (int k = 0; k < LIVE_MAX && !l; k++)
		if (live[k].key == c || !live[k].key)
			l = &live[k];
	if (!l) {
		fprintf(stderr, "harness_cluster: more than %d clusters at once; the last is not stopped at exit\n",
			LIVE_MAX);
		return;
	}
	l->key = c;
	l->owner = getpid();
	l->n = c->n;
	for (int i = 0; i < c->n; i++) {
		l->pid[i] = c->node[i].srv.pid;
		memcpy(l->dir[i], c->node[i].srv.dir, sizeof(l->dir[i]));
	}
}

static void live_clear(const struct test_cluster *c)
{
	for (int k = 0; k < LIVE_MAX; k++)
		if (live[k].key == c && live[k].owner == getpid())
			live[k].key = NULL;
}

/* ---- one node --------------------------------------------------------------------- */

int test_pid_running(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	if (pid <= 0 || kill(pid, 0) != 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* "pid (comm) S ...": the state after the command's name */
	return !(p && p[1] == ' ' && p[2] == 'Z');
}

static int running(const struct test_cluster *c, int i)
{
	return c->node[i].srv.pid > 0 && test_pid_running(c->node[i].srv.pid);
}

/* A connection to node[i] with short timeouts (a paused node does not hang a test), or NULL. */
static redisContext *node_conn(const struct test_cluster *c, int i, long timeout_ms)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	redisContext *r;

	if (!running(c, i))
		return NULL;
	r = redisConnectWithTimeout("127.0.0.1", c->node[i].srv.port, tv);
	if (!r || r->err || redisSetTimeout(r, tv) != REDIS_OK) {
		redisFree(r);
		return NULL;
	}
	return r;
}

/* The reply of a command on node[i] (NULL: it does not answer); the caller frees it. */
static redisReply *node_cmd(const struct test_cluster *c, int i, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static redisReply *node_cmd(const struct test_cluster *c, int i, const char *fmt, ...)
{
	redisContext *r = node_conn(c, i, 1000);
	redisReply *reply;
	va_list ap;

	if (!r)
		return NULL;
	va_start(ap, fmt);
	reply = redisvCommand(r, fmt, ap);
	va_end(ap);
	redisFree(r);
	return reply;
}

/* 1 when node[i] answers `fmt` with a status reply "OK"; else 0 after printing the answer, naming `what`. */
static int node_ok(const struct test_cluster *c, int i, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int node_ok(const struct test_cluster *c, int i, const char *what, const char *fmt, ...)
{
	redisContext *r = node_conn(c, i, 2000);
	redisReply *reply = NULL;
	int ok;
	va_list ap;

	if (r) {
		va_start(ap, fmt);
		reply = redisvCommand(r, fmt, ap);
		va_end(ap);
	}
	ok = reply && reply->type == REDIS_REPLY_STATUS && strcmp(reply->str, "OK") == 0;
	if (!ok)
		fprintf(stderr, "harness_cluster: %s on node %d (port %d) answered %s\n", what, i,
			c->node[i].srv.port, !reply ? (r ? r->errstr : "nothing: it does not answer")
			: reply->type == REDIS_REPLY_ERROR ? reply->str : "not OK");
	freeReplyObject(reply);
	redisFree(r);
	return ok;
}

static int index_of_port(const struct test_cluster *c, int port)
{
	for (int i = 0; i < c->n; i++)
		if (c->node[i].srv.port == port)
			return i;
	return -1;
}

static int index_of_id(const struct test_cluster *c, const char *id, size_t len)
{
	for (int i = 0; i < c->n; i++)
		if (strlen(c->node[i].id) == len && memcmp(c->node[i].id, id, len) == 0)
			return i;
	return -1;
}

/* ---- the slot map ------------------------------------------------------------------- */

struct range {
	long long start, end;
	int owner;             /* index into node[], -1 unknown */
	int port;
	int nrep, rep[TEST_CLUSTER_MAX_NODES]; /* replica ports, sorted */
};

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * CLUSTER SLOTS of node[i]: its ranges as text ("0-5460:port/rport,...;...",
 * sorted, for comparing nodes' views) into text, the owners into owner (when
 * not NULL), the fewest replicas of a range into *min_rep and the slots
 * covered into *covered.  0, or -1 when the node does not answer it.
 */
static int read_slots(const struct test_cluster *c, int i, char *text, size_t cap, signed char *owner, int *min_rep,
		      long long *covered)
{
	redisReply *r = node_cmd(c, i, "CLUSTER SLOTS");
	struct range *rg;
	size_t n = 0, len = 0;

	if (!r || r->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(r);
		return -1;
	}
	rg = calloc(r->elements + 1, sizeof(*rg));
	if (!rg) {
		freeReplyObject(r);
		return -1;
	}
	for (size_t k = 0; k < r->elements; k++) {
		const redisReply *e = r->element[k];
		struct range *x = &rg[n];

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->element[2]->type != REDIS_REPLY_ARRAY ||
		    e->element[2]->elements < 2)
			continue;
		x->start = e->element[0]->integer;
		x->end = e->element[1]->integer;
		x->port = (int)e->element[2]->element[1]->integer;
		x->owner = index_of_port(c, x->port);
		for (size_t j = 3; j < e->elements && x->nrep < TEST_CLUSTER_MAX_NODES; j++)
			if (e->element[j]->type == REDIS_REPLY_ARRAY && e->element[j]->elements >= 2)
				x->rep[x->nrep++] = (int)e->element[j]->element[1]->integer;
		qsort(x->rep, (size_t)x->nrep, sizeof(int), cmp_int);
		n++;
	}
	freeReplyObject(r);
	qsort(rg, n, sizeof(*rg), cmp_range);
	if (owner)
		memset(owner, -1, TEST_CLUSTER_SLOTS);
	*min_rep = n ? TEST_CLUSTER_MAX_NODES : 0;
	*covered = 0;
	if (cap)
		text[0] = '\0';
	for (size_t k = 0; k < n; k++) {
		*covered += rg[k].end - rg[k].start + 1;
		if (rg[k].nrep < *min_rep)
			*min_rep = rg[k].nrep;
		for (long long s = rg[k].start; owner && s <= rg[k].end && s < TEST_CLUSTER_SLOTS; s++)
			owner[s] = (signed char)rg[k].owner;
		if (len < cap)
			len += (size_t)snprintf(text + len, cap - len, "%s%lld-%lld:%d", k ? ";" : "", rg[k].start,
						rg[k].end, rg[k].port);
		for (int j = 0; j < rg[k].nrep && len < cap; j++)
			len += (size_t)snprintf(text + len, cap - len, "%c%d", j ? ',' : '/', rg[k].rep[j]);
	}
	free(rg);
	return 0;
}

/* Read the map into c->owner_of from the first running node that answers; 0, or -1. */
static int refresh_map(struct test_cluster *c)
{
	for (int i = 0; i < c->n; i++) {
		int min_rep;
		long long covered;

		if (running(c, i) && read_slots(c, i, NULL, 0, c->owner_of, &min_rep, &covered) == 0)
			return 0;
	}
	return -1;
}

int test_cluster_keyslot(const char *key, size_t len)
{
	return (int)shard_keyslot(key, len);
}

int test_cluster_node_for_slot(struct test_cluster *c, int slot)
{
	if (slot < 0 || slot >= TEST_CLUSTER_SLOTS || refresh_map(c) != 0)
		return -1;
	return c->owner_of[slot];
}

redisContext *test_cluster_connect_node(const struct test_cluster *c, int i)
{
	redisContext *r;

	ck_assert_msg(i >= 0 && i < c->n, "no node %d (the cluster has %d)", i, c->n);
	r = redisConnect("127.0.0.1", c->node[i].srv.port);
	ck_assert_msg(r && !r->err, "connect to node %d (port %d): %s", i, c->node[i].srv.port,
		      r ? r->errstr : "out of memory");
	return r;
}

redisContext *test_cluster_connect_slot(struct test_cluster *c, int slot)
{
	int i = test_cluster_node_for_slot(c, slot);

	ck_assert_msg(i >= 0, "no node of the cluster owns slot %d (or none answers CLUSTER SLOTS)", slot);
	return test_cluster_connect_node(c, i);
}

redisContext *test_cluster_connect_key(struct test_cluster *c, const char *key)
{
	return test_cluster_connect_slot(c, test_cluster_keyslot(key, strlen(key)));
}

const char *test_cluster_url(const struct test_cluster *c, char buf[TEST_CLUSTER_URL_MAX])
{
	int pick = -1;

	for (int i = 0; i < c->primaries && pick < 0; i++)
		if (running(c, i))
			pick = i;
	for (int i = 0; i < c->n && pick < 0; i++)
		if (running(c, i))
			pick = i;
	snprintf(buf, TEST_CLUSTER_URL_MAX, "redis://127.0.0.1:%d", c->node[pick < 0 ? 0 : pick].srv.port);
	return buf;
}

/* ---- waiting ----------------------------------------------------------------------- */

/*
 * NULL when node[i] is ready: cluster_state:ok, CLUSTER SLOTS over all the
 * slots (with at least want_rep replicas per range), its link to its primary
 * up if it is a replica; else why not (static).  Its map text into text.
 */
static const char *node_state(const struct test_cluster *c, int i, int want_rep, char *text, size_t cap)
{
	static char why[160];
	redisReply *r = node_cmd(c, i, "CLUSTER INFO");
	int min_rep, ok;
	long long covered;

	ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
	freeReplyObject(r);
	if (!ok)
		return r ? "its cluster_state is not ok" : "it does not answer";
	if (read_slots(c, i, text, cap, NULL, &min_rep, &covered) != 0)
		return "it does not answer CLUSTER SLOTS";
	if (covered != TEST_CLUSTER_SLOTS) {
		snprintf(why, sizeof(why), "its CLUSTER SLOTS covers %lld slots", covered);
		return why;
	}
	if (min_rep < want_rep) {
		snprintf(why, sizeof(why), "its CLUSTER SLOTS has a primary with %d of %d replicas", min_rep, want_rep);
		return why;
	}
	r = node_cmd(c, i, "INFO replication");
	ok = r && r->type == REDIS_REPLY_STRING &&
	     (!strstr(r->str, "role:slave") || strstr(r->str, "master_link_status:up"));
	freeReplyObject(r);
	return ok ? NULL : "its link to its primary is not up";
}

/* The test_poll state of wait_ready. */
struct ready {
	struct test_cluster *c;
	int all;      /* every node must answer (at start), else the running ones that answer */
	int want_rep; /* replicas per range in CLUSTER SLOTS */
	int bad;      /* the node not ready at the last look, -1 */
	const char *why;
	char first[SLOTS_TEXT_MAX], text[SLOTS_TEXT_MAX];
};

static int ready_now(void *arg)
{
	struct ready *w = arg;
	int ref = -1;

	w->bad = -1;
	for (int i = 0; i < w->c->n; i++) {
		const char *why;
		redisReply *p;

		if (!w->all) { /* only the nodes that answer PING now */
			p = node_cmd(w->c, i, "PING");
			if (!p || p->type != REDIS_REPLY_STATUS) {
				freeReplyObject(p);
				continue;
			}
			freeReplyObject(p);
		}
		why = node_state(w->c, i, w->want_rep, ref < 0 ? w->first : w->text, SLOTS_TEXT_MAX);
		if (!why && ref >= 0 && strcmp(w->first, w->text) != 0)
			why = "its CLUSTER SLOTS differs from the first node's";
		if (why) {
			w->bad = i;
			w->why = why;
			return 0;
		}
		if (ref < 0)
			ref = i;
	}
	if (ref < 0) {
		w->why = "no node answers";
		return 0;
	}
	return 1;
}

/* test_cluster_wait_ok with the start's options; prints the node that is not ready on timeout. */
static long long wait_ready(struct test_cluster *c, int all, int want_rep, long timeout_ms)
{
	struct ready *w = calloc(1, sizeof(*w));
	long long waited;

	if (!w)
		return -1;
	w->c = c;
	w->all = all;
	w->want_rep = want_rep;
	waited = test_poll(ready_now, w, timeout_ms, 20);
	if (waited < 0) {
		if (w->bad >= 0)
			fprintf(stderr,
				"harness_cluster: the cluster is not ready after %ld ms: node %d (port %d, %s): %s\n"
				"  its map: %s\n  the first node's: %s\n",
				timeout_ms, w->bad, w->c->node[w->bad].srv.port, w->c->node[w->bad].srv.dir, w->why,
				w->text, w->first);
		else
			fprintf(stderr, "harness_cluster: the cluster is not ready after %ld ms: %s\n", timeout_ms,
				w->why ? w->why : "?");
	} else {
		refresh_map(c);
	}
	free(w);
	return waited;
}

long long test_cluster_wait_ok(struct test_cluster *c, long timeout_ms)
{
	return wait_ready(c, 0, 0, timeout_ms);
}

/* ---- starting ----------------------------------------------------------------------- */

/* Run redis-cli --cluster create on every node; 0, or -1 after printing its output. */
static int create_by_redis_cli(struct test_cluster *c, long timeout_ms)
{
	char log[sizeof(c->node[0].srv.dir) + 32], hosts[TEST_CLUSTER_MAX_NODES][32], reps[16];
	const char *argv[TEST_CLUSTER_MAX_NODES + 8];
	int argc = 0, status = 0;
	pid_t parent = getpid(), pid;
	long long start = test_now_ms();

	snprintf(log, sizeof(log), "%s/cluster-create.log", c->node[0].srv.dir);
	snprintf(reps, sizeof(reps), "%d", c->replicas_per_primary);
	argv[argc++] = "redis-cli";
	argv[argc++] = "--cluster";
	argv[argc++] = "create";
	for (int i = 0; i < c->n; i++) {
		snprintf(hosts[i], sizeof(hosts[i]), "127.0.0.1:%d", c->node[i].srv.port);
		argv[argc++] = hosts[i];
	}
	argv[argc++] = "--cluster-replicas";
	argv[argc++] = reps;
	argv[argc++] = "--cluster-yes";
	argv[argc] = NULL;
	pid = fork();
	if (pid < 0) {
		perror("harness_cluster: fork");
		return -1;
	}
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644), null = open("/dev/null", O_RDONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent || fd < 0 || null < 0)
			_exit(1);
		dup2(null, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execvp("redis-cli", (char *const *)argv);
		fprintf(stderr, "harness_cluster: cannot exec redis-cli: %s\n", strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (test_now_ms() - start > timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			status = -1;
			break;
		}
		test_sleep_ms(20);
	}
	if (status != 0) {
		char *out = NULL;
		FILE *f = fopen(log, "r");
		size_t n = 0;

		if (f) {
			out = calloc(1, 4097);
			if (out) {
				if (fseek(f, 0, SEEK_END) == 0 && ftell(f) > 4096)
					fseek(f, -4096, SEEK_END);
				else
					fseek(f, 0, SEEK_SET);
				n = fread(out, 1, 4096, f);
			}
			fclose(f);
		}
		fprintf(stderr, "harness_cluster: redis-cli --cluster create %s; its output:\n%.*s\n",
			status < 0 ? "did not finish in time" : "failed", (int)n, out ? out : "");
		free(out);
		return -1;
	}
	return 0;
}

/* The cluster of 1 or 2 primaries that redis-cli will not create. */
static int create_by_hand(struct test_cluster *c, long timeout_ms)
{
	long long per = TEST_CLUSTER_SLOTS / c->primaries, first = 0, start;

	for (int i = 0; i < c->primaries; i++) {
		long long last = i == c->primaries - 1 ? TEST_CLUSTER_SLOTS - 1 : first + per - 1;

		if (!node_ok(c, i, "CLUSTER ADDSLOTSRANGE", "CLUSTER ADDSLOTSRANGE %lld %lld", first, last))
			return -1;
		first = last + 1;
	}
	for (int i = 0; i < c->n; i++)
		if (!node_ok(c, i, "CLUSTER SET-CONFIG-EPOCH", "CLUSTER SET-CONFIG-EPOCH %d", i + 1))
			return -1;
	for (int i = 1; i < c->n; i++)
		if (!node_ok(c, 0, "CLUSTER MEET", "CLUSTER MEET 127.0.0.1 %d %d", c->node[i].srv.port,
			     c->node[i].srv.bus))
			return -1;
	start = test_now_ms();
	for (int i = 0; i < c->n; i++) { /* every node knows every other, handshakes done */
		for (;;) {
			redisReply *r = node_cmd(c, i, "CLUSTER NODES");
			int lines = 0, pending = 0;

			for (const char *p = r && r->type == REDIS_REPLY_STRING ? r->str : ""; *p; p++)
				lines += *p == '\n';
			pending = !r || r->type != REDIS_REPLY_STRING || strstr(r->str, "handshake") ||
				  strstr(r->str, "noaddr");
			freeReplyObject(r);
			if (lines == c->n && !pending)
				break;
			if (test_now_ms() - start > timeout_ms) {
				fprintf(stderr, "harness_cluster: node %d (port %d) knows %d of %d nodes after %ld ms\n",
					i, c->node[i].srv.port, lines, c->n, timeout_ms);
				return -1;
			}
			test_sleep_ms(20);
		}
	}
	for (int i = 0; i < c->primaries; i++)
		for (int j = 0; j < c->replicas_per_primary; j++)
			if (!node_ok(c, c->primaries + i * c->replicas_per_primary + j, "CLUSTER REPLICATE",
				     "CLUSTER REPLICATE %s", c->node[i].id))
				return -1;
	return 0;
}

/*
 * Who is what, in node[0]'s CLUSTER NODES: role[i] -1 for a primary, else
 * its primary's index.  1 when every replica is known as one, else 0.
 */
static int read_roles(const struct test_cluster *c, int *role)
{
	redisReply *r = node_cmd(c, 0, "CLUSTER NODES");
	int replicas = 0;

	for (int i = 0; i < c->n; i++)
		role[i] = -1;
	if (!r || r->type != REDIS_REPLY_STRING) {
		freeReplyObject(r);
		return 0;
	}
	/* <id> <ip:port@bus> <flags> <master id or -> ... */
	for (const char *line = r->str; *line;) {
		const char *eol = strchr(line, '\n'), *f[4];
		int nf = 0;

		if (!eol)
			eol = line + strlen(line);
		for (const char *p = line; p < eol && nf < 4;) {
			f[nf++] = p;
			while (p < eol && *p != ' ')
				p++;
			while (p < eol && *p == ' ')
				p++;
		}
		if (nf == 4) {
			int me = index_of_id(c, f[0], (size_t)(strchr(f[0], ' ') - f[0]));
			int of = f[3][0] == '-' ? -1 : index_of_id(c, f[3], (size_t)(strcspn(f[3], " \n")));
			int slave = memmem(f[2], (size_t)(f[3] - f[2]), "slave", 5) != NULL;

			if (me >= 0 && slave && of >= 0) {
				role[me] = of;
				replicas++;
			}
		}
		line = *eol ? eol + 1 : eol;
	}
	freeReplyObject(r);
	return replicas == c->primaries * c->replicas_per_primary;
}

/* Put node[] in the documented order: the primaries by their first slot, then each one's replicas. */
static void order_nodes(struct test_cluster *c, const int *role)
{
	struct test_cluster_node *sorted = calloc((size_t)c->n, sizeof(*sorted));
	int first[TEST_CLUSTER_MAX_NODES], prim[TEST_CLUSTER_MAX_NODES], np = 0, k = 0;

	if (!sorted)
		return;
	for (int i = 0; i < c->n; i++) {
		first[i] = TEST_CLUSTER_SLOTS;
		for (int s = TEST_CLUSTER_SLOTS - 1; s >= 0; s--)
			if (c->owner_of[s] == i)
				first[i] = s;
		if (role[i] < 0)
			prim[np++] = i;
	}
	for (int a = 0; a < np; a++) /* a handful: insertion sort by first slot */
		for (int b = a; b > 0 && first[prim[b]] < first[prim[b - 1]]; b--) {
			int t = prim[b];

			prim[b] = prim[b - 1];
			prim[b - 1] = t;
		}
	for (int a = 0; a < np; a++) {
		sorted[k] = c->node[prim[a]];
		sorted[k++].primary = -1;
	}
	for (int a = 0; a < np; a++)
		for (int i = 0; i < c->n; i++)
			if (role[i] == prim[a]) {
				sorted[k] = c->node[i];
				sorted[k++].primary = a;
			}
	if (k == c->n)
		memcpy(c->node, sorted, (size_t)c->n * sizeof(*sorted));
	free(sorted);
	refresh_map(c);
}

int test_cluster_start(struct test_cluster *c, int primaries, int replicas_per_primary)
{
	return test_cluster_start_with(c, primaries, replicas_per_primary, NULL);
}

int test_cluster_start_with(struct test_cluster *c, int primaries, int replicas_per_primary,
			    const struct test_cluster_opts *o)
{
	long timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	struct test_redis_opts ro = { .cluster = 1 };
	long long start = test_now_ms();
	int role[TEST_CLUSTER_MAX_NODES];

	memset(c, 0, sizeof(*c));
	memset(c->owner_of, -1, sizeof(c->owner_of));
	c->owner = getpid();
	if (primaries < 1 || replicas_per_primary < 0 ||
	    primaries * (1 + replicas_per_primary) > TEST_CLUSTER_MAX_NODES) {
		fprintf(stderr, "harness_cluster: %d primaries with %d replicas each: 1 to %d nodes, please\n", primaries,
			replicas_per_primary, TEST_CLUSTER_MAX_NODES);
		return -1;
	}
	c->primaries = primaries;
	c->replicas_per_primary = replicas_per_primary;
	c->node_timeout_ms = o && o->node_timeout_ms > 0 ? o->node_timeout_ms : DEFAULT_NODE_TIMEOUT_MS;
	ro.node_timeout_ms = c->node_timeout_ms;
	for (int i = 0; i < primaries * (1 + replicas_per_primary); i++) {
		redisReply *r;

		c->node[i].primary = -1;
		if (test_redis_start_with(&c->node[i].srv, &ro) != 0) {
			fprintf(stderr, "harness_cluster: node %d of %d did not start\n", i,
				primaries * (1 + replicas_per_primary));
			goto fail;
		}
		c->n = i + 1;
		live_set(c);
		r = node_cmd(c, i, "CLUSTER MYID");
		if (!r || r->type != REDIS_REPLY_STRING || r->len != 40) {
			fprintf(stderr, "harness_cluster: node %d (port %d) has no CLUSTER MYID\n", i,
				c->node[i].srv.port);
			freeReplyObject(r);
			goto fail;
		}
		memcpy(c->node[i].id, r->str, 41);
		freeReplyObject(r);
	}
	if ((primaries >= 3 ? create_by_redis_cli(c, timeout_ms) : create_by_hand(c, timeout_ms)) != 0)
		goto fail;
	{
		long long t = test_now_ms();

		while (!read_roles(c, role)) {
			if (test_now_ms() - t > timeout_ms) {
				fprintf(stderr, "harness_cluster: node 0 (port %d) does not know all %d replicas after %ld ms\n",
					c->node[0].srv.port, primaries * replicas_per_primary, timeout_ms);
				goto fail;
			}
			test_sleep_ms(20);
		}
	}
	if (replicas_per_primary) {
		/*
		 * Redis 7.0's CLUSTER SLOTS leaves out a replica whose replication
		 * offset is 0, which it is until something goes down the
		 * replication stream: a FLUSHALL of each (empty) primary once the
		 * links are up sends one.
		 */
		if (wait_ready(c, 1, 0, timeout_ms) < 0)
			goto fail;
		for (int i = 0; i < c->n; i++)
			if (role[i] < 0 && !node_ok(c, i, "FLUSHALL", "FLUSHALL"))
				goto fail;
	}
	if (wait_ready(c, 1, replicas_per_primary, timeout_ms) < 0)
		goto fail;
	order_nodes(c, role);
	live_set(c);
	c->start_ms = test_now_ms() - start;
	return 0;
fail:
	test_cluster_stop(c);
	return -1;
}

void test_cluster_stop(struct test_cluster *c)
{
	if (c->owner != getpid())
		return; /* a forked test: its runner's nodes are the runner's to stop */
	for (int i = 0; i < c->n; i++)
		if (c->node[i].srv.pid > 0)
			kill(c->node[i].srv.pid, SIGCONT); /* a paused node could not act on SIGTERM */
	for (int i = 0; i < c->n; i++)
		test_redis_stop(&c->node[i].srv);
	live_clear(c);
	c->n = 0;
}

/* ---- commands on the node of a key ----------------------------------------------------- */

/* Send the formatted command to node[i] (after ASKING when `asking`); the reply, or NULL on I/O error. */
static redisReply *send_to(const struct test_cluster *c, int i, int asking, const char *cmd, size_t len)
{
	redisContext *r = test_cluster_connect_node(c, i);
	redisReply *reply = NULL;

	if (asking)
		redisAppendCommand(r, "ASKING");
	redisAppendFormattedCommand(r, cmd, len);
	if (asking) {
		if (redisGetReply(r, (void **)&reply) != REDIS_OK)
			reply = NULL;
		freeReplyObject(reply);
		reply = NULL;
	}
	if (redisGetReply(r, (void **)&reply) != REDIS_OK)
		reply = NULL;
	ck_assert_msg(reply != NULL, "redis I/O error on node %d (port %d): %s", i, c->node[i].srv.port, r->errstr);
	redisFree(r);
	return reply;
}

/* The node a MOVED or ASK reply names ("MOVED <slot> <host>:<port>"), or -1. */
static int redirect_target(const struct test_cluster *c, const redisReply *r, const char *kind)
{
	const char *colon;

	if (r->type != REDIS_REPLY_ERROR || strncmp(r->str, kind, strlen(kind)) != 0 || r->str[strlen(kind)] != ' ')
		return -1;
	colon = strrchr(r->str, ':');
	return colon ? index_of_port(c, atoi(colon + 1)) : -1;
}

static redisReply *run_routed(struct test_cluster *c, int slot, const char *cmd, size_t len)
{
	int i = c->owner_of[slot], to;
	redisReply *r;

	if (i < 0 || !running(c, i)) {
		refresh_map(c);
		i = c->owner_of[slot];
	}
	ck_assert_msg(i >= 0, "no node of the cluster owns slot %d (or none answers CLUSTER SLOTS)", slot);
	r = send_to(c, i, 0, cmd, len);
	if ((to = redirect_target(c, r, "MOVED")) >= 0) {
		freeReplyObject(r);
		refresh_map(c);
		r = send_to(c, to, 0, cmd, len);
	} else if ((to = redirect_target(c, r, "ASK")) >= 0) {
		freeReplyObject(r);
		r = send_to(c, to, 1, cmd, len);
	}
	return r;
}

redisReply *test_cluster_cmd(struct test_cluster *c, const char *key, const char *fmt, ...)
{
	char *cmd = NULL;
	redisReply *r;
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = redisvFormatCommand(&cmd, fmt, ap);
	va_end(ap);
	ck_assert_msg(len > 0, "cannot format the command \"%s\"", fmt);
	r = run_routed(c, test_cluster_keyslot(key, strlen(key)), cmd, (size_t)len);
	redisFreeCommand(cmd);
	return r;
}

redisReply *test_cluster_cmd_argv(struct test_cluster *c, const char *key, size_t keylen, int argc,
				  const char *const *argv, const size_t *lens)
{
	char *cmd = NULL;
	redisReply *r;
	int len = redisFormatCommandArgv(&cmd, argc, (const char **)argv, lens);

	ck_assert_msg(len > 0, "cannot format a command of %d arguments", argc);
	r = run_routed(c, test_cluster_keyslot(key, keylen), cmd, (size_t)len);
	redisFreeCommand(cmd);
	return r;
}

/* ---- failures and resharding ---------------------------------------------------------- */

void test_cluster_kill(struct test_cluster *c, int i, int sig)
{
	pid_t pid;

	ck_assert_msg(i >= 0 && i < c->n, "no node %d (the cluster has %d)", i, c->n);
	pid = c->node[i].srv.pid;
	refresh_map(c); /* the slots it owns, for test_cluster_wait_failover */
	if (pid <= 0)
		return;
	kill(pid, sig);
	if (sig != SIGKILL && sig != SIGTERM)
		return;
	if (waitpid(pid, NULL, 0) != pid) /* not our child (a forked test): until it is dead */
		for (long long t = test_now_ms(); test_pid_running(pid) && test_now_ms() - t < 5000;)
			test_sleep_ms(5);
	c->node[i].srv.pid = 0;
}

int test_cluster_wait_failover(struct test_cluster *c, int old, long timeout_ms)
{
	char *had = calloc(TEST_CLUSTER_SLOTS, 1);
	long long start = test_now_ms();
	int owner = -1, nhad = 0;

	ck_assert_ptr_nonnull(had);
	for (int s = 0; s < TEST_CLUSTER_SLOTS; s++)
		nhad += had[s] = c->owner_of[s] == old;
	ck_assert_msg(nhad > 0, "node %d owned no slot when it was killed (test_cluster_kill it first)", old);
	for (;;) {
		long left = timeout_ms - (long)(test_now_ms() - start);
		struct ready *w = calloc(1, sizeof(*w));
		int ready;

		ck_assert_ptr_nonnull(w);
		w->c = c;
		ready = ready_now(w) && refresh_map(c) == 0;
		owner = -2; /* -2: none seen yet, -3: several */
		for (int s = 0; ready && s < TEST_CLUSTER_SLOTS && owner != -3; s++)
			if (had[s])
				owner = owner == -2 || owner == c->owner_of[s] ? c->owner_of[s] : -3;
		if (ready && owner >= 0 && owner != old) {
			free(w);
			break;
		}
		if (left <= 0) {
			fprintf(stderr, "harness_cluster: no failover of node %d (port %d) after %ld ms: %s\n", old,
				c->node[old].srv.port, timeout_ms,
				!ready ? (w->why ? w->why : "the cluster is not ready")
				: owner == -3 ? "its slots have several owners" : "it still owns its slots");
			free(w);
			owner = -1;
			break;
		}
		free(w);
		test_sleep_ms(20);
	}
	free(had);
	return owner;
}

/* The nodes between which `slot` migrates (from the source's CLUSTER NODES: "[<slot>->-<dst id>]"). */
static void migration_of(const struct test_cluster *c, int slot, int *src, int *dst)
{
	char mark[32];

	*src = *dst = -1;
	snprintf(mark, sizeof(mark), "[%d->-", slot);
	for (int i = 0; i < c->n && *src < 0; i++) {
		redisReply *r = running(c, i) ? node_cmd(c, i, "CLUSTER NODES") : NULL;
		const char *me, *p;

		if (r && r->type == REDIS_REPLY_STRING && (me = strstr(r->str, "myself"))) {
			const char *bol = me, *eol = strchr(me, '\n');

			while (bol > r->str && bol[-1] != '\n')
				bol--;
			if ((p = strstr(bol, mark)) && (!eol || p < eol)) {
				*src = i;
				*dst = index_of_id(c, p + strlen(mark), 40);
			}
		}
		freeReplyObject(r);
	}
}

static void node_ok_or_fail(const struct test_cluster *c, int i, const char *what, const char *fmt, int slot,
			    const char *id)
{
	ck_assert_msg(node_ok(c, i, what, fmt, slot, id), "%s of slot %d on node %d failed (see stderr)", what, slot,
		      i);
}

void test_cluster_migrate_begin(struct test_cluster *c, int slot, int dst)
{
	int src = test_cluster_node_for_slot(c, slot);

	ck_assert_msg(src >= 0, "no node owns slot %d", slot);
	ck_assert_msg(src != dst, "slot %d is node %d's already", slot, dst);
	node_ok_or_fail(c, dst, "CLUSTER SETSLOT IMPORTING", "CLUSTER SETSLOT %d IMPORTING %s", slot, c->node[src].id);
	node_ok_or_fail(c, src, "CLUSTER SETSLOT MIGRATING", "CLUSTER SETSLOT %d MIGRATING %s", slot, c->node[dst].id);
}

long long test_cluster_migrate_keys(struct test_cluster *c, int slot, int batch, const char *const *keys, int nkeys)
{
	int src, dst, done = 0;
	long long sent = 0;
	redisContext *s;

	migration_of(c, slot, &src, &dst);
	ck_assert_msg(src >= 0 && dst >= 0, "slot %d is not migrating (test_cluster_migrate_begin first)", slot);
	if (batch < 1)
		batch = 100;
	s = test_cluster_connect_node(c, src);
	while (!done) {
		const char **argv = calloc((size_t)batch + 8, sizeof(*argv));
		redisReply *got = NULL, *r;
		int argc = 0, n = 0;
		char port[16];

		ck_assert_ptr_nonnull(argv);
		snprintf(port, sizeof(port), "%d", c->node[dst].srv.port);
		argv[argc++] = "MIGRATE";
		argv[argc++] = "127.0.0.1";
		argv[argc++] = port;
		argv[argc++] = "";
		argv[argc++] = "0";
		argv[argc++] = "5000";
		argv[argc++] = "KEYS";
		if (keys) {
			while (n < batch && sent + n < nkeys) {
				argv[argc++] = keys[sent + n];
				n++;
			}
		} else {
			got = test_cmd(s, "CLUSTER GETKEYSINSLOT %d %d", slot, batch);
			ck_assert_msg(got->type == REDIS_REPLY_ARRAY, "CLUSTER GETKEYSINSLOT %d failed", slot);
			for (size_t k = 0; k < got->elements; k++, n++)
				argv[argc++] = got->element[k]->str; /* keys with NUL bytes: not in a test of ours */
		}
		if (n == 0) {
			done = 1;
		} else {
			r = redisCommandArgv(s, argc, argv, NULL);
			ck_assert_msg(r != NULL, "MIGRATE of slot %d: I/O error %s", slot, s->errstr);
			ck_assert_msg(r->type == REDIS_REPLY_STATUS, "MIGRATE of slot %d from node %d to %d: %s", slot, src,
				      dst, r->type == REDIS_REPLY_ERROR ? r->str : "not a status reply");
			freeReplyObject(r);
			sent += n;
		}
		freeReplyObject(got);
		free(argv);
	}
	redisFree(s);
	return sent;
}

void test_cluster_migrate_finish(struct test_cluster *c, int slot)
{
	int src, dst, told[TEST_CLUSTER_MAX_NODES] = { 0 };

	migration_of(c, slot, &src, &dst);
	ck_assert_msg(src >= 0 && dst >= 0, "slot %d is not migrating", slot);
	node_ok_or_fail(c, dst, "CLUSTER SETSLOT NODE", "CLUSTER SETSLOT %d NODE %s", slot, c->node[dst].id);
	node_ok_or_fail(c, src, "CLUSTER SETSLOT NODE", "CLUSTER SETSLOT %d NODE %s", slot, c->node[dst].id);
	told[src] = told[dst] = 1;
	refresh_map(c);
	for (int s = 0; s < TEST_CLUSTER_SLOTS; s++) { /* every other primary that serves slots */
		int i = c->owner_of[s];

		if (i >= 0 && !told[i]) {
			told[i] = 1;
			if (running(c, i))
				node_ok(c, i, "CLUSTER SETSLOT NODE", "CLUSTER SETSLOT %d NODE %s", slot, c->node[dst].id);
		}
	}
}

long long test_cluster_move_slot(struct test_cluster *c, int slot, int dst)
{
	long long moved;

	test_cluster_migrate_begin(c, slot, dst);
	moved = test_cluster_migrate_keys(c, slot, 100, NULL, 0);
	test_cluster_migrate_finish(c, slot);
	ck_wait_until(test_cluster_wait_ok(c, 1000) >= 0 && c->owner_of[slot] == dst, 10000,
		      "slot %d is not node %d's everywhere after moving it", slot, dst);
	return moved;
}

struct rconn *test_cluster_rconn(const struct test_cluster *c, int i, int timeout_ms)
{
	struct redis_target t;
	char url[64];
	struct rconn *conn;

	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", c->node[i].srv.port);
	ck_assert_int_eq(redis_url_parse(url, &t, NULL), 0);
	conn = rconn_new(&t, timeout_ms);
	redis_target_clear(&t);
	ck_assert_ptr_nonnull(conn);
	return conn;
}

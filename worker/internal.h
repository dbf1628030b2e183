#ifndef SLUICE_WORKER_INTERNAL_H
#define SLUICE_WORKER_INTERNAL_H
/*
 * The worker's insides, shared by its files and nobody else:
 *   worker.c    lifetime, rules, whole sweeps
 *   due.c       one budgeted step over sluice's own layouts: the due index, shard by shard
 *   walk.c      one budgeted step over foreign layouts: the registry walk, page after page
 *   jobs.c      one page's batched job script call, built and its reply read
 *   status.c    counters, and sweeps requested by other threads
 *   skew.c      max_clock_skew_ms in every shard's rules copy
 *   copies.c    the rules in every shard's rules copy: its writes
 *   copies_check.c  ... which copies need writing (":version" and HLEN)
 *   copies_target.c ... what they are brought to
 *   lease.c     the shard leases (its own header, worker/lease.h)
 */
#include <pthread.h>

#include "core/layout.h"
#include "core/rconn.h"
#include "core/reply.h"
#include "core/rules.h"
#include "core/shard.h"
#include "worker/lease.h"
#include "worker/worker.h"

/*
 * A rolling pass over the SHARD_COUNT shards at a steady rate, all of them
 * per period whatever the tick (due.c): the due walk's poll, the check of
 * the shards' rules copies (skew.c).
 */
struct roll {
	int64_t epoch_ms;   /* when the current cycle began (ms of the steps' clock); -1: never */
	int64_t last_ms;    /* now of the last slice */
	int64_t done;       /* shards covered since epoch_ms */
	size_t at;          /* the next shard to cover */
};
void roll_init(struct roll *r);
/*
 * The slice of shards due by `now` (ms): *from its first, the count
 * returned (up to SHARD_COUNT, wrapping), so that each shard comes again at
 * most `period_ms` after it came (plus one step); all of them the first
 * time and with `all` (a new cycle starts then).  A clock that went back
 * restarts the cycle at now.
 */
size_t roll_slice(struct roll *r, int64_t now, int64_t period_ms, int all, size_t *from);

struct worker;

/*
 * What the worker keeps in every shard's rules copy (skew.c: the horizon;
 * copies.c: the rules), checked and written the same way (keep.c): a
 * rolling check of a slice of the shards every step (all of them after a
 * reconnect: a new connection may be a new, empty Redis), then the writes
 * of those pending, again after a refused one no sooner than the retry.
 */
struct keep {
	struct roll check;               /* the rolling check */
	int check_all;                   /* the next step checks every shard */
	int64_t retry_ms;                /* after a refused write: not again before (steps' clock) */
	uint64_t connects;               /* the connection's count at the last step */
	char error[160];                 /* why the last write or check failed; "" */
};
struct keep_ops {
	int64_t check_ms, retry_ms;      /* a whole check's period; the wait after a refused write */
	/* the shards this worker owns (worker_owns) not known to hold it */
	size_t (*pending)(const struct worker *w);
	/* check shards [from, from + n) (wrapping); write the pending ones; *failed set on a refusal */
	int (*check)(struct worker *w, size_t from, size_t n, int *failed);
	int (*write)(struct worker *w, int *failed);
};
/*
 * 1 when shard k is this worker's to maintain: always without leases, else
 * while it holds the shard's lease.  The copies (skew.c, copies.c) are
 * checked and written by the shard's owner only.
 */
static inline int worker_owns(const struct worker *w, unsigned k);

/* Reset `k` for a new value to keep: checked whole at the next step, written without delay. */
void keep_reset(struct keep *k);
/*
 * One step of keeping `k` (`all`: check every shard).  0 or the first rconn
 * error (then every shard is checked at the next step).
 */
int keep_step(struct worker *w, struct keep *k, const struct keep_ops *ops, int64_t now, int all);

enum { DUE_NONE = 0, DUE_POLL, DUE_CALL };

/* Where the due-driven walk of one of sluice's own layouts stands (due.c). */
struct due_state {
	const struct layout *layout;
	size_t index;                    /* the layout's index in the worker's layouts */
	int64_t next_due[SHARD_COUNT];   /* ms each shard's registry said its lowest score is
					  * (INT64_MAX: empty, or its call failed; 0: not asked yet) */
	uint32_t backlog[SHARD_COUNT];   /* paths each shard still had due after its last call */
	uint32_t gained[SHARD_COUNT];    /* with leases: lease_gained() when the shard was last
					  * looked at (it changes: the shard was taken again, and
					  * its registry is read afresh) */
	unsigned char pending[SHARD_COUNT]; /* the current pass's work left for each shard:
					  * DUE_NONE, DUE_POLL (read its registry's head), DUE_CALL
					  * (call its shard script) */
	size_t cursor;                   /* next shard of the pass */
	struct roll poll;                /* the rolling poll */
	int in_pass;
};

enum { SKEW_UNKNOWN = 0, SKEW_OK, SKEW_MISSING };

/*
 * The skew horizon in every shard's rules copy (skew.c): field
 * max_clock_skew_ms of <prefix>{k}:rules, which every script reads
 * (lua/lib/skew.lua skew_read).
 */
struct skew_state {
	int on;                          /* the worker keeps the copies */
	int64_t ms;
	char text[24];                   /* ms in decimal, as written */
	unsigned char state[SHARD_COUNT]; /* SKEW_UNKNOWN, SKEW_OK (seen or written holding it),
					  * SKEW_MISSING (seen without it: to be written) */
	struct keep keep;                /* the check and the writes (pending: owned shards not SKEW_OK,
					  * skew_pending) */
	uint64_t written;                /* copies written since start */
	uint64_t conflicts;              /* copies found holding another value after holding this
					  * one (another daemon configured otherwise rewrites them) */
	long long conflict_ms;           /* the other value the last conflict found */
};

enum { COPY_UNKNOWN = 0, COPY_OK, COPY_STALE, COPY_NEWER, COPY_PREV, COPY_DRIFT };

/* fields of a rules copy that are not rules (a rule name holds no ':') */
#define COPIES_VERSION ":version"
#define SKEW_FIELD ":max_clock_skew_ms"
/* commands per round trip of the copies' reads and writes */
#define COPIES_DEPTH 256

/*
 * The rules in every shard's rules copy (copies.c): field <name> = the
 * rule's canonical JSON, field ":version" = "<epoch>:<version>" of the
 * store the copy reflects.  The target is the ruleset the worker loaded.
 */
struct copies_state {
	int on;                          /* the worker keeps the copies */
	int have;                        /* a target is built (the rules were loaded once) */
	uint64_t version;                /* the target's store version and epoch */
	char epoch[40];
	char text[64];                   /* "<epoch>:<version>", as written to ":version" */
	char prev_text[64];              /* the previous target's, "" when none (copies_target.c) */
	size_t prev_nnames;              /* the previous target's rule count */
	struct cmdargs fields;           /* the HSET tail: name1 json1 ... ":version" text */
	struct cmdargs delta;            /* from the previous target: the HSET tail of the rules
					  * new or changed, ":version" text last */
	struct cmdargs gone;             /* ... and the names that went (an HDEL tail; may be empty) */
	size_t field_bytes;              /* bytes of `fields` */
	char **names, **texts;           /* the target's rules (name, canonical JSON), sorted by
					  * name (strcmp); owned */
	size_t nnames;
	unsigned char state[SHARD_COUNT]; /* COPY_UNKNOWN, COPY_OK (seen or written at the target),
					  * COPY_STALE (seen at another version: to be written),
					  * COPY_NEWER (seen at a later version of the same epoch,
					  * written by a daemon that reloaded first: left alone),
					  * COPY_PREV (seen at the previous target: to be written
					  * the difference), COPY_DRIFT (seen at the target with
					  * another field count: HKEYS, written whole unless its
					  * rule names are the target's) */
	uint32_t colons[SHARD_COUNT];    /* ':' fields each copy held after its last whole write
					  * or HKEYS, 0 when never seen (copies_check.c) */
	struct keep keep;                /* the rolling check of the copies' ":version" and HLEN, and
					  * the writes (pending: owned shards not COPY_OK, copies_pending) */
	uint64_t written;                /* copies written since start */
	struct rbatch *wbatch;           /* the writes of one round trip (w->batch holds the reads) */
	struct cmdargs cmd;              /* one command being built */
};

/* Where one job's walk stands: the layouts it maintains and the cursor in them. */
struct job_state {
	struct due_state *due;   /* sluice's own layouts of this job (ndue), walked by due index */
	size_t ndue, due_at;     /* due_at: the one whose pass goes on */
	int full;                /* the next step starts a whole sweep (worker_sweep) */
	int full_sweep;          /* a whole sweep is part-way: every layout's pass polls every shard */
	uint64_t connects;       /* rconn_connects at its last step: a new connection starts a whole sweep */
	int64_t now_ms;          /* the now (ms) of the last due step */
	const struct layout *layouts[WORKER_MAX_LAYOUTS]; /* the foreign layouts this job walks, in order */
	size_t index[WORKER_MAX_LAYOUTS]; /* each one's index in the worker's layouts (for the status) */
	size_t nlayouts;
	size_t layout;           /* index into layouts of the cursor */
	size_t node;             /* a SCAN layout's: the primary whose keyspace the cursor is in */
	uint64_t map_epoch;      /* ... by the slot map of this epoch (rconn_map_epoch): a SCAN cursor
				  * means nothing to another node, and primaries' ordinals move */
	char cursor[REPLY_CURSOR_MAX]; /* SSCAN/SCAN cursor, "0" at the start of a layout */
	int in_sweep;            /* a sweep is part-way: it started and not both parts ended */
	int due_swept, walk_swept; /* the due passes / the foreign walk ended since the sweep started */
	int64_t sweep_start_us;
};

/* One page's job script call, built in reused buffers (bounded by batch_size, not the registry). */
struct job_batch {
	struct cmdargs keys, args;
	size_t eligible;         /* paths in the call */
	/* per path i < eligible: its first key and first argument in keys/args, its slot */
	size_t *kat, *aat;
	unsigned *slot;
	unsigned char *done;
	size_t cap;
	size_t args_end;         /* args past the paths' (a foreign log's score unit) start here */
	/* on a cluster: one call per slot (job_queue), and EXISTS of the paths whose registry is elsewhere */
	struct cmdargs ck, ca;
	size_t *exists_path;     /* path index of EXISTS reply k */
	size_t nexists;
};

struct worker {
	struct rconn *conn;
	char *prefix;
	size_t batch_size;
	struct ruleset rules;
	size_t rules_invalid;
	int rules_lost;          /* the last refresh found the rules hash gone (rulestore_refresh -ENODATA) */
	struct job_state jobs[WORKER__JOBS];
	struct rbatch *batch;
	struct job_batch jb;
	struct skew_state skew;
	struct copies_state copies;
	struct stats *stats;     /* or NULL (no sum_stats) */
	struct census *census;   /* or NULL (no census) */
	struct lease *lease;     /* or NULL: no leases, every shard is this worker's (unfenced) */

	pthread_mutex_t lock;    /* guards st and the request fields below */
	struct worker_status st;

	/* sweep requests from other threads */
	pthread_cond_t done;     /* CLOCK_MONOTONIC */
	int reqfd;               /* eventfd */
	uint64_t req_seq, done_seq;
	struct worker_result req_res[WORKER__JOBS];
	int64_t req_us[WORKER__JOBS];
	int req_rc;
	int cancelled;           /* shutting down: sweep requests are refused */
};

/*
 * Build the job script call of layout `l` for one page of members, with
 * `now` ("" = Redis TIME): KEYS = registry, per path its data [and meta] key;
 * ARGV = now, per path the path and its rule's job arguments [, score unit]
 * [, `skew` (max_clock_skew_ms in decimal) for a kind that takes it; NULL:
 * the script's default].  A self-described kind (Redisson's) takes its keys
 * from alg->side_keys and needs no rule.
 * Counts visited, skipped and unmatched paths into *r.  0 or -ENOMEM.
 */
int job_build(struct job_batch *jb, const struct layout *l, const struct ruleset *rules,
	      const redisReply *members, const char *now, const char *skew, struct worker_result *r);
/*
 * Queue the call built by job_build (jb->eligible > 0): one call on a single
 * Redis; on a cluster one per slot of the page's keys (a foreign registry set
 * lives in a slot of its own: a call whose keys are in another slot is given
 * a key of that slot that nothing writes instead, `prefix`{tag}:no_registry,
 * and an EXISTS of each of its paths' data keys is queued after the calls,
 * jb->nexists of them, for job_unregister).  The number of calls queued (>= 1),
 * or -ENOMEM.
 */
int job_queue(struct rbatch *b, struct job_batch *jb, const struct layout *l, struct rconn *conn,
	      const char *prefix);
/*
 * After the pipeline of job_queue ran (its `ncalls` calls, then the EXISTS
 * replies): take the paths whose data key is gone out of the foreign
 * registry set (SREM, one command), counting them as emptied into *r and
 * *ls.  Not atomic with the job (a cluster cannot be): a client that writes
 * the key again in between must SADD it again, as the seed clients do on
 * every call.  0 (also when there is nothing to do), or an rconn error.
 */
int job_unregister(struct rconn *conn, struct rbatch *b, struct job_batch *jb, const struct layout *l,
		   size_t ncalls, struct worker_result *r, struct worker_layout_status *ls);
/*
 * Fold the job script's reply {entries, emptied, _, skipped?, failed?, path?,
 * error?} into *r and *ls.  0, or reply_errno() of the reply (-ENOSPC,
 * -EBADMSG, -EPROTO) with the reason in `why` (`cap` bytes).  Paths that
 * failed alone are counted, and the first named in `why` (see job_failures);
 * *nfailed (the count) tells the caller.
 */
int job_fold(const redisReply *e, const struct layout *l, struct worker_result *r, struct worker_layout_status *ls,
	     char *why, size_t cap, uint64_t *nfailed);
/*
 * The paths that failed alone in a job script's reply `e` (an array): the
 * count at element `at`, the first path at at + 1 and its error at at + 2
 * (a reply without them: 0).  When the count is > 0, `why` (`cap` bytes)
 * gets "<layout> path \"<path>\": <error>[ (and N more)]", the path's and
 * the error's bytes outside printable ASCII (and '%', '"', '\\')
 * percent-encoded, so a path of any bytes is shown whole and the text stays
 * valid JSON and one log line.  Returns the count.
 */
uint64_t job_failures(const redisReply *e, size_t at, const char *layout, char *why, size_t cap);
void job_batch_free(struct job_batch *jb);

void due_init(struct due_state *d, const struct layout *l, size_t index);
/*
 * One step over `job`'s own layouts: the pass of each (due shards, the
 * rolling poll's slice; every shard with `full`) from where the last step
 * stopped, until it ends or `budget_us` after `start_us` is spent.  `now`
 * is the step's time (ms), `nows` what the scripts get ("" = Redis TIME).
 * 1 when every pass ended, 0 when the budget ran out first, or a negative
 * errno when Redis could not be reached (-EIO, -EAGAIN) or -ENOMEM (the
 * job's last_error set); the position is kept so the next step resumes.
 * A shard call that failed (an error reply) does not stop the step: the
 * first one's errno goes to *failed (0: none) and its text to last_error.
 */
int due_step(struct worker *w, enum worker_job job, int64_t start_us, int64_t budget_us, int64_t now,
	     const char *nows, int restart, int full, struct worker_result *r, struct worker_layout_status lr[WORKER_MAX_LAYOUTS],
	     int *failed);
/* Add d's due backlog (paths) to *paths and lower *oldest to its oldest due time (ms) by now. */
void due_backlog(const struct due_state *d, int64_t now, uint64_t *paths, int64_t *oldest);

/*
 * Walk `job` from its cursor until the sweep ends or `budget_us` after
 * `start_us` is spent, counting into *r and lr[] (per layout).  0 or a
 * negative errno when Redis could not be reached or -ENOMEM (the job's
 * last_error set).  A page whose script call failed, or a path that failed
 * alone, does not stop the walk: the cursor goes past it (its paths come
 * again next sweep), and unless *failed is already set, the error goes to
 * *failed (-EBADMSG for a failed path) and its text to last_error.
 */
int walk_step(struct worker *w, enum worker_job job, int64_t start_us, int64_t budget_us, const char *now,
	      struct worker_result *r, struct worker_layout_status lr[WORKER_MAX_LAYOUTS], int *failed);

/* Start keeping the shards' copies of the skew horizon `ms` (>= 0): every shard is checked at the next step. */
void skew_init(struct skew_state *s, int64_t ms);
/*
 * Keep the shards' copies at `now` (ms, the steps' clock): check the
 * rolling slice (every shard with `all`, after a reconnect, or when asked)
 * with HGET, then write those that do not hold the value (HSET, in
 * pipelines).  A write Redis refuses (out of memory, a copy of another
 * type) is kept pending and tried again a second later: only s->error
 * says so, the step goes on.  0, or the rconn error when Redis could not
 * be reached, or -ENOMEM.
 */
int skew_step(struct worker *w, int64_t now, int all);

/*
 * Make c's target the rules of `rs` (copies_target.c): the whole HSET tail,
 * the sorted names and texts, and, when c had a target, the difference from
 * it (c->delta, c->gone, c->prev_text).  0, or -ENOMEM (c->have = 0).
 */
int copies_target_build(struct copies_state *c, const struct ruleset *rs);
/* 1 when `name` (`len` bytes, any bytes) is one of the target's rules. */
int copies_target_has(const struct copies_state *c, const char *name, size_t len);
/* Free the target (names, texts, the HSET and HDEL tails); a zeroed state is a no-op. */
void copies_target_free(struct copies_state *c);

/*
 * Check the copies of `n` shards from `from` (copies_check.c): HGET of
 * ":version" and HLEN, pipelined, into c->state (not those known stale:
 * written anyway).  A read Redis refuses is noted (copies_fail).  0 or an
 * rconn error, or -ENOMEM.
 */
int copies_check(struct worker *w, size_t from, size_t n, int *failed);
/* The ':' fields shard k's copy should hold: c->colons[k], or when never seen ":version" (+ the skew's). */
uint32_t copies_colons(const struct worker *w, unsigned k);
/* Start c->cmd as "<cmd> <prefix>{k}:rules".  0 or -ENOMEM. */
int copies_cmd_start(struct copies_state *c, const char *prefix, const char *cmd, unsigned k);
/* Queue c->cmd followed by `tail` (may be NULL) into `b`.  0 or -ENOMEM. */
int copies_cmd_queue(struct copies_state *c, const struct cmdargs *tail, struct rbatch *b);
/* Note why shard k's copy could not be read or written, when it is the step's first failure. */
void copies_fail(struct copies_state *c, unsigned k, const char *what, const redisReply *e, int *failed);

/* Start keeping the rules in every shard's copy (copies.c); 0 or -ENOMEM. */
int copies_init(struct copies_state *c);
/* Free what copies_init and the steps allocated; a zeroed state is a no-op. */
void copies_free(struct copies_state *c);
/*
 * Bring the shards' rules copies to the worker's ruleset (w->rules; nothing
 * before it was loaded once) at `now` (ms, the steps' clock): a new version
 * makes every copy checked; otherwise the rolling slice (SKEW_CHECK_MS's
 * pace; every shard with `all`, after a reconnect, or when asked) has its
 * ":version" and field count read (HGET, HLEN: copies_check); then every
 * copy at another version, or whose count is off, gets, in one round trip
 * per up to 128 shards, HKEYS, then HDEL of the names the ruleset lacks and
 * one HSET of every rule and ":version" (last); a copy at the version
 * before with the right count gets the difference only.  A copy
 * at a later version of the same epoch is left alone while the store's
 * version (one GET) is later than the ruleset's too (another daemon
 * reloaded first; this one reloads at its next step).  A refused read or
 * write (out of memory, a copy of another type) is kept pending and tried
 * again COPIES_RETRY_MS later: only c->error says so, the step goes on.
 * 0, or the rconn error when Redis could not be reached, or -ENOMEM.
 */
int copies_step(struct worker *w, int64_t now, int all);

/* Set job's last_error (printf of `fmt` with one string). */
void status_error(struct worker *w, enum worker_job job, const char *fmt, const char *detail);
/*
 * Fold one step's result (rc, counts, durations) into the status; `start_us`
 * is the step's CLOCK_MONOTONIC start, `now_ms` its time (ms of the steps'
 * clock, -1 when unknown), which the history's samples are taken by.
 */
void status_fold(struct worker *w, enum worker_job job, int rc, int64_t start_us, int64_t now_ms,
		 const struct worker_result *r, const struct worker_layout_status lr[WORKER_MAX_LAYOUTS]);
/* Set up and tear down the request machinery; 0 or -errno. */
int requests_init(struct worker *w);
void requests_destroy(struct worker *w);

static inline int worker_owns(const struct worker *w, unsigned k)
{
	return !w->lease || lease_holds(w->lease, k);
}

/* The owned shards whose skew copy is not known to hold the horizon (skew.c). */
size_t skew_pending(const struct worker *w);
/* The owned shards whose rules copy is not known to be at the target (copies.c). */
size_t copies_pending(const struct worker *w);

#endif

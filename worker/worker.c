#include "worker/worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/rconn.h"
#include "core/rulestore.h"

/* What a job does to one layout's paths: which script, and what it needs per path. */
struct op {
	enum algorithm algorithm;
	enum worker_job job;
	enum script_id script;
	int meta_key;            /* pass the meta key after the data key */
};

/*
 * The drain job runs at the leak's pace (every 100 ms by default); everything
 * else only bounds memory and repairs, at the prune job's slower pace.
 */
static const struct op ops[] = {
	{ ALG_LEAKY_BUCKET, WORKER_DRAIN, SCRIPT_LEAKY_BUCKET_DRAIN, 1 },       /* drain */
	{ ALG_SLIDING_LOG, WORKER_PRUNE, SCRIPT_SLIDING_LOG_PRUNE, 0 },         /* prune */
	{ ALG_SLIDING_COUNTER, WORKER_PRUNE, SCRIPT_SLIDING_COUNTER_PRUNE, 0 }, /* prune sub-windows */
	{ ALG_FIXED_WINDOW, WORKER_PRUNE, SCRIPT_FIXED_WINDOW_REPAIR, 0 },      /* repair TTLs */
	{ ALG_TOKEN_BUCKET, WORKER_PRUNE, SCRIPT_TOKEN_BUCKET_RECLAIM, 0 },     /* reclaim full buckets */
};

struct job_state {
	const struct layout *layouts[WORKER_MAX_LAYOUTS]; /* the layouts this job walks, in order */
	const struct op *op[WORKER_MAX_LAYOUTS];
	size_t index[WORKER_MAX_LAYOUTS]; /* each one's index in the worker's layouts (for the status) */
	size_t nlayouts;
	size_t layout;           /* index into layouts of the cursor */
	char cursor[24];         /* SSCAN cursor, "0" at the start of a layout */
	int in_sweep;
	int64_t sweep_start_us;
};

struct worker {
	struct rconn *conn;
	char *prefix;
	size_t batch_size;
	struct ruleset rules;
	size_t rules_invalid;
	struct job_state jobs[WORKER__JOBS];
	/* per-batch scratch, reused: bounded by batch_size, not by the registry */
	struct rbatch *batch;
	struct strbuf keys, args;
	size_t *koff, *klen, *aoff, *alen;
	size_t kcap, acap;
	const char **argv;
	size_t *lens;
	size_t argvcap;

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

const double worker_sweep_buckets[WORKER_SWEEP_BUCKETS] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.25,
							      0.5, 1, 2.5, 5, 10 };

const char *worker_action_name(enum algorithm a)
{
	switch (a) {
	case ALG_LEAKY_BUCKET:
		return "drained";
	case ALG_FIXED_WINDOW:
		return "repaired";
	case ALG_TOKEN_BUCKET:
		return "reclaimed";
	default:
		return "pruned";
	}
}

const char *worker_job_name(enum worker_job j)
{
	static const char *const names[WORKER__JOBS] = { "drain", "prune" };

	return (unsigned)j < WORKER__JOBS ? names[j] : NULL;
}

struct worker *worker_new(const struct worker_config *cfg)
{
	struct worker *w;

	if (!cfg->redis || !cfg->prefix || cfg->batch_size == 0)
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	pthread_mutex_init(&w->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&w->done, &ca);
		pthread_condattr_destroy(&ca);
	}
	w->reqfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->reqfd < 0) {
		pthread_cond_destroy(&w->done);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return NULL;
	}
	w->batch_size = cfg->batch_size;
	if (cfg->nlayouts > WORKER_MAX_LAYOUTS) {
		pthread_cond_destroy(&w->done);
		close(w->reqfd);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return NULL;
	}
	w->st.nlayouts = cfg->nlayouts;
	for (size_t i = 0; i < cfg->nlayouts; i++) {
		snprintf(w->st.layout[i].name, sizeof(w->st.layout[i].name), "%s", cfg->layouts[i].name);
		w->st.layout[i].algorithm = cfg->layouts[i].algorithm;
	}
	w->conn = rconn_new(cfg->redis, cfg->timeout_ms);
	w->prefix = strdup(cfg->prefix);
	w->batch = rbatch_new();
	if (!w->conn || !w->prefix || !w->batch) {
		worker_free(w);
		return NULL;
	}
	for (size_t i = 0; i < cfg->nlayouts; i++)
		for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
			struct job_state *js = &w->jobs[ops[k].job];

			if (ops[k].algorithm != cfg->layouts[i].algorithm)
				continue;
			if (js->nlayouts == sizeof(js->layouts) / sizeof(js->layouts[0])) {
				worker_free(w);
				return NULL;
			}
			js->layouts[js->nlayouts] = &cfg->layouts[i];
			js->index[js->nlayouts] = i;
			js->op[js->nlayouts++] = &ops[k];
		}
	for (int j = 0; j < WORKER__JOBS; j++)
		strcpy(w->jobs[j].cursor, "0");
	return w;
}

void worker_free(struct worker *w)
{
	if (!w)
		return;
	rconn_free(w->conn);
	rbatch_free(w->batch);
	ruleset_clear(&w->rules);
	strbuf_free(&w->keys);
	strbuf_free(&w->args);
	free(w->koff);
	free(w->klen);
	free(w->aoff);
	free(w->alen);
	free(w->argv);
	free(w->lens);
	free(w->prefix);
	close(w->reqfd);
	pthread_cond_destroy(&w->done);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

/* Grow a pair of offset/length arrays to hold `need` entries. */
static int grow(size_t **off, size_t **len, size_t *cap, size_t need)
{
	size_t *o, *l, c = *cap ? *cap : 64;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	o = realloc(*off, c * sizeof(*o));
	if (!o)
		return -ENOMEM;
	*off = o;
	l = realloc(*len, c * sizeof(*l));
	if (!l)
		return -ENOMEM;
	*len = l;
	*cap = c;
	return 0;
}


/* Scratch builders: keys and args as offsets into two buffers (they may move while growing). */
static void batch_reset(struct worker *w, size_t *nk, size_t *na)
{
	w->keys.len = 0;
	w->args.len = 0;
	*nk = *na = 0;
}

static int push_key(struct worker *w, size_t *nk, const struct layout *l, const char *path,
		    size_t len, int meta, const char *raw)
{
	size_t start = w->keys.len;
	int rc;

	if (grow(&w->koff, &w->klen, &w->kcap, *nk + 1))
		return -ENOMEM;
	rc = raw ? strbuf_add(&w->keys, raw, strlen(raw)) : layout_key(l, path, len, meta, &w->keys);
	if (rc)
		return rc;
	w->koff[*nk] = start;
	w->klen[*nk] = w->keys.len - start;
	(*nk)++;
	return 0;
}

static int push_arg(struct worker *w, size_t *na, const char *s, size_t len)
{
	size_t start = w->args.len;

	if (grow(&w->aoff, &w->alen, &w->acap, *na + 1) || strbuf_add(&w->args, s, len))
		return -ENOMEM;
	w->aoff[*na] = start;
	w->alen[*na] = len;
	(*na)++;
	return 0;
}

/* Queue the script call for the batch built in the scratch buffers. */
static int queue_eval(struct worker *w, const struct op *op, size_t nk, size_t na)
{
	size_t argc = nk + na;

	if (argc > w->argvcap) {
		const char **v = realloc(w->argv, argc * sizeof(*v));
		size_t *l;

		if (!v)
			return -ENOMEM;
		w->argv = v;
		l = realloc(w->lens, argc * sizeof(*l));
		if (!l)
			return -ENOMEM;
		w->lens = l;
		w->argvcap = argc;
	}
	for (size_t i = 0; i < nk; i++) {
		w->argv[i] = w->keys.p + w->koff[i];
		w->lens[i] = w->klen[i];
	}
	for (size_t i = 0; i < na; i++) {
		w->argv[nk + i] = w->args.p + w->aoff[i];
		w->lens[nk + i] = w->alen[i];
	}
	return rbatch_eval(w->batch, op->script, (int)nk, (int)argc, w->argv, w->lens);
}

/* One page of a layout's paths: SSCAN of its registry, or SCAN MATCH/TYPE for a layout without one. */
static int queue_sscan(struct worker *w, const struct layout *l, const char *cursor)
{
	char count[24];
	size_t n = (size_t)snprintf(count, sizeof(count), "%zu", w->batch_size);

	if (l->scan) {
		const char *argv[8] = { "SCAN", cursor, "MATCH", l->scan_match, "TYPE", l->scan_type, "COUNT", count };
		size_t lens[8] = { 4, strlen(cursor), 5, strlen(l->scan_match), 4, strlen(l->scan_type), 5, n };

		return rbatch_cmd(w->batch, 8, argv, lens);
	} else {
		const char *argv[5] = { "SSCAN", l->registry, cursor, "COUNT", count };
		size_t lens[5] = { 5, strlen(l->registry), strlen(cursor), 5, n };

		return rbatch_cmd(w->batch, 5, argv, lens);
	}
}

static int push_int(struct worker *w, size_t *na, int64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%lld", (long long)v);

	return push_arg(w, na, num, (size_t)n);
}

/* The per-path arguments of each job's script after the path (see lua/README.md). */
static int push_param(struct worker *w, size_t *na, const struct rule *r)
{
	char num[40];
	int n;

	switch (r->algorithm) {
	case ALG_LEAKY_BUCKET: /* rate, per second */
		n = snprintf(num, sizeof(num), "%.17g", r->rate);
		return push_arg(w, na, num, (size_t)n);
	case ALG_TOKEN_BUCKET: /* capacity, rate per second */
		n = snprintf(num, sizeof(num), "%.17g", r->rate);
		return push_int(w, na, r->capacity) || push_arg(w, na, num, (size_t)n) ? -ENOMEM : 0;
	case ALG_SLIDING_COUNTER: /* window ms, sub-windows */
		return push_int(w, na, r->window_ms) || push_int(w, na, r->sub_windows) ? -ENOMEM : 0;
	default: /* sliding log, fixed window: window ms */
		return push_int(w, na, r->window_ms);
	}
}

static void set_error(struct worker *w, enum worker_job job, const char *fmt, const char *detail)
{
	pthread_mutex_lock(&w->lock);
	snprintf(w->st.job[job].last_error, sizeof(w->st.job[job].last_error), fmt, detail);
	pthread_mutex_unlock(&w->lock);
}

static int valid_sscan(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	       r->element[0]->type == REDIS_REPLY_STRING && r->element[0]->len < 24 &&
	       r->element[1]->type == REDIS_REPLY_ARRAY;
}

static int refresh_rules(struct worker *w)
{
	int changed = 0, rc;
	size_t invalid = 0;

	rc = rulestore_refresh(w->conn, w->prefix, &w->rules, 0, &changed, &invalid);
	if (!rc && changed)
		w->rules_invalid = invalid;
	return rc;
}

int worker_step(struct worker *w, enum worker_job job, int64_t budget_us, int64_t now_ms,
		struct worker_result *res)
{
	struct job_state *js = &w->jobs[job];
	struct worker_result r = { 0 }, page_base = { 0 };
	struct worker_layout_status lr[WORKER_MAX_LAYOUTS] = { 0 };
	int64_t start = clock_mono_us();
	redisReply *page = NULL;
	char now[24] = "";
	int rc;

	if ((unsigned)job >= WORKER__JOBS)
		return -EINVAL;
	if (now_ms >= 0)
		snprintf(now, sizeof(now), "%lld", (long long)now_ms);
	if ((rc = refresh_rules(w))) {
		set_error(w, job, "rules: %s", rconn_errstr(w->conn)[0] ? rconn_errstr(w->conn) : "bad reply");
		goto out;
	}
	if (js->nlayouts == 0) {
		r.sweep_done = 1;
		goto out;
	}
	if (!js->in_sweep) {
		js->in_sweep = 1;
		js->sweep_start_us = start;
	}
	rbatch_clear(w->batch);
	if ((rc = queue_sscan(w, js->layouts[js->layout], js->cursor)) ||
	    (rc = rbatch_run(w->conn, w->batch)))
		goto fail;
	page = rbatch_take(w->batch, 0);

	for (;;) {
		const struct layout *l = js->layouts[js->layout];
		const struct op *op = js->op[js->layout];
		const redisReply *members;
		char next[24];
		const char *next_cursor = NULL;
		const struct layout *next_layout = NULL;
		size_t nk, na, eligible = 0;
		int more, over, has_eval = 0, has_scan = 0;

		if (!valid_sscan(page)) {
			rc = -EPROTO;
			set_error(w, job, "SSCAN: %s", page && page->type == REDIS_REPLY_ERROR ? page->str : "unexpected reply");
			/* a registry of another type: step over its layout, so the next step
			 * goes on with the others instead of failing on this one for good */
			strcpy(js->cursor, "0");
			if (++js->layout == js->nlayouts) {
				js->layout = 0;
				js->in_sweep = 0;
			}
			goto fail_noerr;
		}
		memcpy(next, page->element[0]->str, page->element[0]->len + 1);
		members = page->element[1];
		more = strcmp(next, "0") != 0;

		/* Build the script call: KEYS = registry, per path data[, meta]; ARGV = now, per path path, param. */
		batch_reset(w, &nk, &na);
		if ((rc = push_key(w, &nk, l, NULL, 0, 0, l->registry)) ||
		    (rc = push_arg(w, &na, now, strlen(now))))
			goto fail;
		for (size_t i = 0; i < members->elements; i++) {
			const redisReply *m = members->element[i];
			const struct rule *rule;
			const char *path;
			size_t plen;

			if (m->type != REDIS_REPLY_STRING)
				continue;
			r.paths++;
			path = m->str;
			plen = m->len;
			/* a scan layout finds keys: the path is what the key template wraps */
			if (l->scan && layout_path_of(l, m->str, m->len, &path, &plen)) {
				r.skipped++;
				continue;
			}
			if (plen == 0) {
				/* no client writes "" (the scripts refuse it); a foreign
				 * member must not make the script refuse the whole batch */
				r.skipped++;
				continue;
			}
			rule = ruleset_match(&w->rules, path, plen);
			if (!rule || rule->algorithm != l->algorithm) {
				r.unmatched++;
				continue;
			}
			if ((rc = push_key(w, &nk, l, path, plen, 0, NULL)) ||
			    (op->meta_key && (rc = push_key(w, &nk, l, path, plen, 1, NULL))) ||
			    (rc = push_arg(w, &na, path, plen)) || (rc = push_param(w, &na, rule)))
				goto fail;
			eligible++;
		}
		/* sorted sets of another score unit: the prune converts now and the window */
		if (eligible && l->unit != UNIT_MS && l->algorithm == ALG_SLIDING_LOG) {
			const char *u = score_unit_name(l->unit);

			if ((rc = push_arg(w, &na, u, strlen(u))))
				goto fail;
		}
		freeReplyObject(page);
		page = NULL;

		/* Where the cursor goes after this page. */
		if (more) {
			next_layout = l;
			next_cursor = next;
		} else if (js->layout + 1 < js->nlayouts) {
			next_layout = js->layouts[js->layout + 1];
			next_cursor = "0";
		}
		over = clock_mono_us() - start >= budget_us;

		rbatch_clear(w->batch);
		if (eligible) {
			if ((rc = queue_eval(w, op, nk, na)))
				goto fail;
			has_eval = 1;
		}
		if (next_layout && !over) {
			if ((rc = queue_sscan(w, next_layout, next_cursor)))
				goto fail;
			has_scan = 1;
		}
		if (rbatch_len(w->batch) && (rc = rbatch_run(w->conn, w->batch)))
			goto fail;
		/* the page's counts for this layout (entries added below) */
		lr[js->index[js->layout]].paths += r.paths - page_base.paths;
		lr[js->index[js->layout]].unmatched += r.unmatched - page_base.unmatched;
		lr[js->index[js->layout]].skipped += r.skipped - page_base.skipped;
		if (has_eval) {
			const redisReply *e = rbatch_reply(w->batch, 0);

			if (!e || e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
			    e->element[0]->type != REDIS_REPLY_INTEGER ||
			    e->element[1]->type != REDIS_REPLY_INTEGER) {
				rc = -EPROTO;
				set_error(w, job, "script: %s", e && e->type == REDIS_REPLY_ERROR ? e->str : "unexpected reply");
				goto fail_noerr;
			}
			r.entries += (uint64_t)e->element[0]->integer;
			r.emptied += (uint64_t)e->element[1]->integer;
			lr[js->index[js->layout]].entries += (uint64_t)e->element[0]->integer;
			lr[js->index[js->layout]].emptied += (uint64_t)e->element[1]->integer;
			if (e->elements >= 4 && e->element[3]->type == REDIS_REPLY_INTEGER) {
				r.skipped += (uint64_t)e->element[3]->integer;
				lr[js->index[js->layout]].skipped += (uint64_t)e->element[3]->integer;
			}
			r.batches++;
		}
		page_base = r;

		/* Commit the cursor only once the page's work is done. */
		if (more) {
			snprintf(js->cursor, sizeof(js->cursor), "%s", next);
		} else {
			strcpy(js->cursor, "0");
			if (++js->layout == js->nlayouts) {
				js->layout = 0;
				js->in_sweep = 0;
				r.sweep_done = 1;
				break;
			}
		}
		if (!has_scan)
			break; /* over budget: resume from the cursor next step */
		page = rbatch_take(w->batch, has_eval ? 1 : 0);
	}
	rc = 0;
	goto out;
fail:
	if (rc == -EIO || rc == -EAGAIN)
		set_error(w, job, "redis: %s", rconn_errstr(w->conn));
	else if (rc == -ENOMEM)
		set_error(w, job, "%s", "out of memory");
fail_noerr:
	if (page)
		freeReplyObject(page);
out:
	rbatch_clear(w->batch);
	pthread_mutex_lock(&w->lock);
	{
		struct worker_job_status *s = &w->st.job[job];
		int64_t end = clock_mono_us();

		s->steps++;
		s->paths += r.paths;
		s->entries += r.entries;
		s->emptied += r.emptied;
		s->unmatched += r.unmatched;
		s->skipped += r.skipped;
		s->batches += r.batches;
		s->last_step_us = end - start;
		if (rc)
			s->errors++;
		if (r.sweep_done && !rc) {
			double secs = (double)(end - js->sweep_start_us) / 1e6;

			s->sweeps++;
			s->last_sweep_us = end - js->sweep_start_us;
			s->sweep_seconds += secs;
			for (int i = 0; i < WORKER_SWEEP_BUCKETS; i++)
				if (secs <= worker_sweep_buckets[i])
					s->sweep_hist[i]++;
		}
		s->in_sweep = js->in_sweep;
		for (size_t i = 0; i < w->st.nlayouts; i++) {
			struct worker_layout_status *ls = &w->st.layout[i];

			ls->paths += lr[i].paths;
			ls->entries += lr[i].entries;
			ls->emptied += lr[i].emptied;
			ls->unmatched += lr[i].unmatched;
			ls->skipped += lr[i].skipped;
		}
		if (!rc)
			s->last_error[0] = '\0';
		w->st.redis_up = rconn_is_up(w->conn);
		w->st.connects = rconn_connects(w->conn);
		w->st.rules_version = w->rules.version;
		w->st.rules = w->rules.n;
		w->st.rules_invalid = w->rules_invalid;
	}
	pthread_mutex_unlock(&w->lock);
	if (res)
		*res = r;
	return rc;
}

int worker_sweep(struct worker *w, enum worker_job job, int64_t now_ms, struct worker_result *res)
{
	struct worker_result total = { 0 }, r;
	int rc;

	/* start from the top: a whole sweep, whatever a budgeted step left part-way */
	w->jobs[job].layout = 0;
	w->jobs[job].in_sweep = 0;
	strcpy(w->jobs[job].cursor, "0");
	do {
		if ((rc = worker_step(w, job, INT64_MAX, now_ms, &r)))
			return rc;
		total.paths += r.paths;
		total.entries += r.entries;
		total.emptied += r.emptied;
		total.unmatched += r.unmatched;
		total.skipped += r.skipped;
		total.batches += r.batches;
	} while (!r.sweep_done);
	total.sweep_done = 1;
	if (res)
		*res = total;
	return 0;
}

void worker_note_schedule(struct worker *w, enum worker_job job, int64_t lag_us, uint64_t overruns)
{
	pthread_mutex_lock(&w->lock);
	w->st.job[job].lag_us = lag_us;
	if (lag_us > w->st.job[job].max_lag_us)
		w->st.job[job].max_lag_us = lag_us;
	w->st.job[job].overruns = overruns;
	pthread_mutex_unlock(&w->lock);
}

void worker_status(struct worker *w, struct worker_status *out)
{
	pthread_mutex_lock(&w->lock);
	*out = w->st;
	pthread_mutex_unlock(&w->lock);
}

int worker_request_fd(const struct worker *w)
{
	return w->reqfd;
}

int worker_request_sweep(struct worker *w, int64_t timeout_ms, struct worker_result res[WORKER__JOBS],
			 int64_t duration_us[WORKER__JOBS])
{
	uint64_t one = 1, mine;
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&w->lock);
	if (w->cancelled) {
		pthread_mutex_unlock(&w->lock);
		return -ECANCELED;
	}
	mine = ++w->req_seq;
	pthread_mutex_unlock(&w->lock);
	if (write(w->reqfd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		return -errno;
	pthread_mutex_lock(&w->lock);
	while (w->done_seq < mine && rc == 0)
		rc = pthread_cond_timedwait(&w->done, &w->lock, &until);
	if (w->done_seq >= mine) {
		/* a sweep that started after our request covers it */
		memcpy(res, w->req_res, sizeof(w->req_res));
		memcpy(duration_us, w->req_us, sizeof(w->req_us));
		rc = w->req_rc;
	} else {
		rc = -ETIMEDOUT;
	}
	pthread_mutex_unlock(&w->lock);
	return rc;
}

void worker_cancel_requests(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	if (w->done_seq < w->req_seq) {
		memset(w->req_res, 0, sizeof(w->req_res));
		memset(w->req_us, 0, sizeof(w->req_us));
		w->req_rc = -ECANCELED;
		w->done_seq = w->req_seq;
		pthread_cond_broadcast(&w->done);
	}
	w->cancelled = 1; /* requests from now on are answered at once */
	pthread_mutex_unlock(&w->lock);
}

void worker_serve_requests(struct worker *w)
{
	struct worker_result r[WORKER__JOBS] = { 0 };
	int64_t us[WORKER__JOBS] = { 0 };
	uint64_t n, target;
	int rc = 0;

	if (read(w->reqfd, &n, sizeof(n)) != (ssize_t)sizeof(n))
		return;
	pthread_mutex_lock(&w->lock);
	target = w->req_seq;
	pthread_mutex_unlock(&w->lock);
	for (int j = 0; j < WORKER__JOBS && !rc; j++) {
		int64_t t0 = clock_mono_us();

		rc = worker_sweep(w, (enum worker_job)j, -1, &r[j]);
		us[j] = clock_mono_us() - t0;
	}
	pthread_mutex_lock(&w->lock);
	memcpy(w->req_res, r, sizeof(r));
	memcpy(w->req_us, us, sizeof(us));
	w->req_rc = rc;
	w->done_seq = target;
	pthread_cond_broadcast(&w->done);
	pthread_mutex_unlock(&w->lock);
}

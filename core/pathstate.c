#include "core/pathstate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonv.h"
#include "core/reply.h"
#include "core/walk.h"

/* Queue one command built in `a` (`nkeys` > 0: a call of script `id` with that many keys). */
static int queue_args(struct rbatch *b, struct cmdargs *a, int script, enum script_id id, int nkeys)
{
	const char *const *argv;
	const size_t *lens;
	int n = cmdargs_view(a, NULL, &argv, &lens);

	if (n < 0)
		return -ENOMEM;
	return script ? rbatch_eval(b, id, nkeys, n, argv, lens) : rbatch_cmd(b, n, argv, lens);
}

/*
 * Queue what reads path's state in layout `l`: its algorithm's state script
 * under `rule` (of that algorithm), else with no rule a raw size where the
 * data key counts entries (ZCARD), else its existence.
 */
static int queue_state(struct rbatch *b, const struct layout *l, const struct rule *rule,
		       const char *path, size_t len)
{
	const struct alg_ops *alg = algorithm_get(l->algorithm);
	struct cmdargs a = { 0 };
	int rc;

	if (rule) {
		rc = layout_push_key(&a, l, path, len, 0) || (alg->meta && layout_push_key(&a, l, path, len, 1)) ||
		     alg->state_args(rule, &a) || queue_args(b, &a, 1, alg->state_script, alg->meta ? 2 : 1);
	} else {
		rc = cmdargs_str(&a, alg->zset ? "ZCARD" : "EXISTS") || layout_push_key(&a, l, path, len, 0) ||
		     queue_args(b, &a, 0, 0, 0);
	}
	cmdargs_free(&a);
	return rc ? -ENOMEM : 0;
}

/* The fields every path's state starts with. */
static int add_head(cJSON *o, const struct layout *l, const struct rule *rule, const char *path, size_t len)
{
	return jsonv_add_path(o, "path", path, len) ||
	       !cJSON_AddStringToObject(o, "algorithm", algorithm_name(l->algorithm)) ||
	       !cJSON_AddStringToObject(o, "layout", l->name) ||
	       !(rule ? cJSON_AddStringToObject(o, "rule", rule->name) : cJSON_AddNullToObject(o, "rule"));
}

/* A key of another type (WRONGTYPE) under this layout's name: reported, the rest of a page goes on. */
static cJSON *error_json(const struct layout *l, const struct rule *rule, const char *path, size_t len,
			 const char *error)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || add_head(o, l, rule, path, len) || !cJSON_AddNullToObject(o, "count") ||
	    !cJSON_AddNullToObject(o, "remaining") || !cJSON_AddNullToObject(o, "reset_ms") ||
	    !cJSON_AddStringToObject(o, "error", error)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/*
 * Build the state object from the reply of queue_state().  `registered`: 1 or
 * 0 when the registry was asked, -1 when not (then no "registered" field).
 */
static cJSON *state_json(const struct layout *l, const struct rule *rule, const char *path,
			 size_t len, const redisReply *r, int registered)
{
	const struct alg_ops *alg = algorithm_get(l->algorithm);
	int under = rule && rule->algorithm == l->algorithm;
	long long count = 0, remaining = 0, reset = 0, ttl = -2;
	cJSON *o;
	int bad;

	if (reply_error(r))
		return error_json(l, rule, path, len, reply_error(r));
	/* state replies: {count, remaining, reset_ms, [last_ms,] ttl_ms} */
	if (under ? reply_int_at(r, 0, &count) || reply_int_at(r, 1, &remaining) || reply_int_at(r, 2, &reset) ||
			    reply_int_at(r, alg->state_ttl_at, &ttl)
		  : reply_int(r, &count))
		return NULL;
	/* a layout without a registry (SCAN discovery): the path is known while its key exists */
	if (l->scan && registered >= 0)
		registered = under ? ttl != -2 : count > 0;
	if (!(o = cJSON_CreateObject()))
		return NULL;
	bad = add_head(o, l, rule, path, len) ||
	      (registered >= 0 && !cJSON_AddBoolToObject(o, "registered", registered)) ||
	      (under || alg->zset ? jsonv_add_int(o, "count", count) : !cJSON_AddNullToObject(o, "count"));
	if (!bad && !under) {
		/* no rule of this algorithm governs the path: the limits are unknown */
		bad = !cJSON_AddNullToObject(o, algorithm_has_capacity(alg) ? "capacity" : "limit") ||
		      !cJSON_AddNullToObject(o, "remaining") || !cJSON_AddNullToObject(o, "reset_ms") ||
		      (rule && !cJSON_AddStringToObject(o, "note", "the path's rule is of another algorithm"));
	} else if (!bad) {
		bad = rule_add_limits(o, rule) || jsonv_add_int(o, "remaining", remaining) ||
		      jsonv_add_int(o, "reset_ms", reset) || jsonv_add_int(o, "ttl_ms", ttl);
	}
	if (bad) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int pathstate_list(struct rconn *c, const struct layout *l, const struct ruleset *rules,
		   const char *const *paths, const size_t *lens, size_t n, cJSON *out)
{
	struct rbatch *b = rbatch_new();
	const struct rule **rule = calloc(n + 1, sizeof(*rule)); /* each path's, matched once */
	int rc = 0;

	if (!b || !rule) {
		rbatch_free(b);
		free(rule);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		rule[i] = ruleset_match(rules, paths[i], lens[i]);
		rc = queue_state(b, l, rule[i] && rule[i]->algorithm == l->algorithm ? rule[i] : NULL, paths[i],
				 lens[i]);
	}
	if (!rc && n)
		rc = rbatch_run(c, b);
	for (size_t i = 0; i < n && !rc; i++) {
		cJSON *o = state_json(l, rule[i], paths[i], lens[i], rbatch_reply(b, i), 1);

		if (!o || !cJSON_AddItemToArray(out, o)) {
			cJSON_Delete(o);
			rc = -EPROTO;
		}
	}
	rbatch_free(b);
	free(rule);
	return rc;
}

static int queue_sismember(struct rbatch *b, const struct layout *l, const char *path, size_t len)
{
	const char *argv[3] = { "SISMEMBER", l->registry, path };
	size_t lens[3] = { 9, strlen(l->registry), len };

	return rbatch_cmd(b, 3, argv, lens);
}

/*
 * Several layouts may keep the rule's algorithm (sluice's own, foreign ones):
 * the first whose data key exists for the path, else the first of them.
 * NULL when none keeps it.
 */
static int pick_layout(struct rconn *c, struct rbatch *b, const struct layout *layouts, size_t nlayouts,
		       enum algorithm alg, const char *path, size_t len, const struct layout **out)
{
	size_t cand[32], nc = 0;
	int rc = 0;

	for (size_t i = 0; i < nlayouts && nc < 32; i++)
		if (layouts[i].algorithm == alg)
			cand[nc++] = i;
	*out = nc ? &layouts[cand[0]] : NULL;
	if (nc < 2)
		return 0;
	for (size_t i = 0; i < nc && !rc; i++) {
		struct cmdargs a = { 0 };

		rc = cmdargs_str(&a, "EXISTS") || layout_push_key(&a, &layouts[cand[i]], path, len, 0) ||
		     queue_args(b, &a, 0, 0, 0) ? -ENOMEM : 0;
		cmdargs_free(&a);
	}
	if (!rc && !(rc = rbatch_run(c, b)))
		for (size_t i = 0; i < nc; i++) {
			long long e;

			if (!reply_int(rbatch_reply(b, i), &e) && e == 1) {
				*out = &layouts[cand[i]];
				break;
			}
		}
	rbatch_clear(b);
	return rc;
}

/* A rule of an algorithm no layout keeps state for. */
static cJSON *unkept_json(const struct rule *rule, const char *path, size_t len)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || jsonv_add_path(o, "path", path, len) ||
	    !cJSON_AddStringToObject(o, "algorithm", algorithm_name(rule->algorithm)) ||
	    !cJSON_AddStringToObject(o, "rule", rule->name) || !cJSON_AddNullToObject(o, "count") ||
	    rule_add_limits(o, rule) || !cJSON_AddNullToObject(o, "remaining") ||
	    !cJSON_AddNullToObject(o, "reset_ms") ||
	    !cJSON_AddStringToObject(o, "note", "no maintained layout for this algorithm")) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* No rule: the first layout whose registry or keys hold the path, counted raw; NULL in *out if none. */
static int first_holder(struct rconn *c, struct rbatch *b, const struct layout *layouts, size_t nlayouts,
			const char *path, size_t len, cJSON **out)
{
	int rc;

	*out = NULL;
	for (size_t i = 0; i < nlayouts; i++)
		if (queue_sismember(b, &layouts[i], path, len) || queue_state(b, &layouts[i], NULL, path, len))
			return -ENOMEM;
	if ((rc = rbatch_run(c, b)))
		return rc;
	for (size_t i = 0; i < nlayouts; i++) {
		const redisReply *m = rbatch_reply(b, 2 * i), *n = rbatch_reply(b, 2 * i + 1);
		long long member = 0, size = 0;

		/* a registry of another type (an error reply) holds no member */
		if ((reply_int(m, &member) && !reply_error(m)) || (reply_int(n, &size) && !reply_error(n)))
			return -EPROTO;
		if (member == 1 || reply_error(n) || size) {
			*out = state_json(&layouts[i], NULL, path, len, n, member == 1);
			return *out ? 0 : -EPROTO;
		}
	}
	return 0;
}

int pathstate_get(struct rconn *c, const struct layout *layouts, size_t nlayouts,
		  const struct ruleset *rules, const char *path, size_t len, cJSON **out)
{
	const struct rule *rule = ruleset_match(rules, path, len);
	const struct layout *l = NULL;
	struct rbatch *b = rbatch_new();
	cJSON *o = NULL;
	long long member = 0;
	int rc;

	if (!b)
		return -ENOMEM;
	if (!rule) {
		rc = first_holder(c, b, layouts, nlayouts, path, len, &o);
		goto out;
	}
	if ((rc = pick_layout(c, b, layouts, nlayouts, rule->algorithm, path, len, &l)))
		goto out;
	if (!l) {
		rc = (o = unkept_json(rule, path, len)) ? 0 : -ENOMEM;
		goto out;
	}
	/* the rule decides: [SISMEMBER, state script] */
	if ((rc = queue_sismember(b, l, path, len)) || (rc = queue_state(b, l, rule, path, len)) ||
	    (rc = rbatch_run(c, b)))
		goto out;
	if (!rbatch_reply(b, 0)) {
		rc = -EPROTO;
		goto out;
	}
	reply_int(rbatch_reply(b, 0), &member);
	rc = (o = state_json(l, rule, path, len, rbatch_reply(b, 1), member == 1)) ? 0 : -EPROTO;
out:
	rbatch_free(b);
	if (!rc)
		*out = o;
	else
		cJSON_Delete(o);
	return rc;
}

/* The states of one page's members, appended to `out`; *got counts them. */
static int list_members(struct rconn *c, const struct layout *l, const struct ruleset *rules,
			const redisReply *members, cJSON *out, size_t *got)
{
	const char **paths = calloc(members->elements + 1, sizeof(*paths));
	size_t *plens = calloc(members->elements + 1, sizeof(*plens)), kept = 0;
	int rc = -ENOMEM;

	if (paths && plens) {
		for (size_t i = 0; i < members->elements; i++)
			if (!walk_path(l, members->element[i], &paths[kept], &plens[kept]))
				kept++;
		rc = pathstate_list(c, l, rules, paths, plens, kept, out);
		*got += kept;
	}
	free(paths);
	free(plens);
	return rc;
}

int pathstate_page(struct rconn *c, const struct layout *layouts, size_t nlayouts, const struct ruleset *rules,
		   const char *match, size_t count, int max_pages, struct pathstate_cursor *cur, cJSON *out)
{
	struct pathstate_cursor at = *cur;
	struct rbatch *b = rbatch_new();
	size_t got = 0;
	int rc = 0;

	if (!b)
		return -ENOMEM;
	if (at.layout >= nlayouts)
		at.done = 1;
	for (int pages = 0; !at.done && got < count && pages < max_pages && !rc; pages++) {
		const struct layout *l = &layouts[at.layout];
		const redisReply *page, *members;

		rbatch_clear(b);
		if ((rc = walk_queue(b, l, at.walk, match, count - got)) || (rc = rbatch_run(c, b)))
			break;
		page = rbatch_reply(b, 0);
		if ((rc = walk_page(page, at.walk, &members))) {
			/* an out-of-range cursor is the caller's; a registry of another type is ours */
			if (reply_error(page) && strstr(reply_error(page), "cursor"))
				rc = -ERANGE;
			break;
		}
		rc = list_members(c, l, rules, members, out, &got);
		if (walk_at_end(at.walk) && ++at.layout == nlayouts)
			at.done = 1;
	}
	rbatch_free(b);
	if (!rc)
		*cur = at;
	return rc;
}

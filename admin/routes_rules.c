/* GET /v1/rules, GET/PUT/DELETE /v1/rules/{name}; a rule's ETag and If-Match. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/reply.h"
#include "admin/routes.h"
#include "core/clock.h"
#include "core/jsonv.h"
#include "core/log.h"
#include "core/rulestore.h"

/*
 * Checked against Redis at most once per rules_ttl: a round trip per request
 * would cost the admin thread most of its time under load.  On a cluster,
 * rules once loaded are used while a node of the store does not answer.
 */
/* Offer the rules just found current (at `now`, rules_gen `gen`) to the other api objects. */
static void publish(struct api *a, int64_t now, unsigned gen)
{
	struct api_shared *sh = a->shared;
	int ok = 1;

	pthread_mutex_lock(&sh->rules_lock);
	if (!sh->rules_last.loaded || sh->rules_last.version != a->rules.version ||
	    strcmp(sh->rules_last.epoch, a->rules.epoch))
		ok = ruleset_copy(&sh->rules_last, &a->rules) == 0; /* out of memory: the old ones, not fresh */
	if (ok && now >= sh->rules_last_checked_us) {
		sh->rules_last_checked_us = now;
		sh->rules_last_gen = gen;
	}
	pthread_mutex_unlock(&sh->rules_lock);
}

/* Take the rules another api object loaded last.  0, or -ENODATA when there are none (or out of memory). */
static int take_last(struct api *a)
{
	int rc = -ENODATA;

	pthread_mutex_lock(&a->shared->rules_lock);
	if (a->shared->rules_last.loaded && ruleset_copy(&a->rules, &a->shared->rules_last) == 0) {
		a->rules.digest_due_ms = 0;
		rc = 0;
	}
	pthread_mutex_unlock(&a->shared->rules_lock);
	if (!rc) {
		free(a->rules_text);
		a->rules_text = NULL;
	}
	return rc;
}

/*
 * The loop thread's api (no_redis): the rules a request thread found current
 * less than rules_ttl ago (and no change through the API since), copied when
 * they are another version; else -EAGAIN with res->defer set.
 */
static int fresh_from_shared(struct api *a, struct api_response *res, int64_t now, unsigned gen)
{
	struct api_shared *sh = a->shared;
	int rc = -EAGAIN;

	pthread_mutex_lock(&sh->rules_lock);
	if (sh->rules_last.loaded && now - sh->rules_last_checked_us < a->rules_ttl_us && sh->rules_last_gen == gen) {
		rc = 0;
		if (!a->rules.loaded || a->rules.version != sh->rules_last.version ||
		    strcmp(a->rules.epoch, sh->rules_last.epoch)) {
			rc = ruleset_copy(&a->rules, &sh->rules_last) ? -EAGAIN : 0;
			free(a->rules_text);
			a->rules_text = NULL;
		}
	}
	pthread_mutex_unlock(&sh->rules_lock);
	if (rc)
		res->defer = 1;
	return rc;
}

int route_rules_fresh(struct api *a, struct api_response *res)
{
	int64_t now = clock_mono_us();
	unsigned gen = atomic_load(&a->shared->rules_gen);
	int changed = 0, rc;

	if (a->no_redis)
		return fresh_from_shared(a, res, now, gen);
	/* a change through another api object (thread) is seen at once too */
	if (a->rules.loaded && a->rules_checked_us && now - a->rules_checked_us < a->rules_ttl_us &&
	    gen == a->rules_gen_seen)
		return 0;
	rc = rulestore_refresh(a->conn, a->prefix, &a->rules, 0, &changed, NULL);
	if (rc == -ENODATA && a->rules.loaded)
		return 0; /* the rules hash lost: the rules held until the daemon stores them again */
	if (rc == -ENODATA) {
		reply_fail(res, 503, "redis_unavailable",
			   "the rules hash is gone while its version is not (its data was lost); the daemon stores "
			   "its config's rules again", NULL);
		return rc;
	}
	if (rc && (rc == -EIO || rc == -EAGAIN) && rconn_is_cluster(a->conn) &&
	    (a->rules.loaded || take_last(a) == 0)) {
		/*
		 * A cluster node of the rule store is down (its three keys are in three
		 * slots): reads go on with the rules held (or those another request
		 * thread loaded last), checked again next time, so a path on a node
		 * that is up still answers.
		 */
		return 0;
	}
	if (rc) {
		reply_redis_error(res, a->conn, rc);
		return rc;
	}
	a->rules_checked_us = now;
	a->rules_gen_seen = gen;
	if (changed) {
		free(a->rules_text);
		a->rules_text = NULL;
	}
	publish(a, now, gen);
	return 0;
}

/* After a change through this api: the next request to any api object checks Redis again. */
static void rules_changed(struct api *a)
{
	a->rules_checked_us = 0;
	atomic_fetch_add(&a->shared->rules_gen, 1);
}

/* A name a rule may have: no NUL inside (`len` is the decoded length), rule_name_valid. */
static int name_ok(const char *name, size_t len)
{
	return strlen(name) == len && rule_name_valid(name);
}

/* 404 naming the rule: a valid name is plain ASCII; any other (bytes the URL may now carry,
 * not UTF-8, a NUL) is not echoed into the message, which must stay valid JSON text. */
static void not_found_rule(struct api_response *res, const char *name, size_t len)
{
	char msg[128];

	if (name_ok(name, len))
		snprintf(msg, sizeof(msg), "no rule named \"%.64s\"", name);
	else
		snprintf(msg, sizeof(msg), "no rule by that name (a rule name is 1..64 characters of [A-Za-z0-9_.-])");
	reply_fail(res, 404, "not_found", msg, NULL);
}

/* {"rules": [...], "version": n}; NULL on ENOMEM. */
static cJSON *rules_json(const struct ruleset *rules)
{
	cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "rules");

	if (!arr || jsonv_add_int(o, "version", (int64_t)rules->version))
		goto fail;
	for (size_t i = 0; i < rules->n; i++) {
		cJSON *r = rule_to_json(rules->v[i]);

		if (!r || !cJSON_AddItemToArray(arr, r)) {
			cJSON_Delete(r);
			goto fail;
		}
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

void route_rules_list(struct api *a, struct api_response *res)
{
	cJSON *o;

	if (route_rules_fresh(a, res))
		return;
	/* the rendered list is kept per version: most reads change nothing */
	if (a->rules_text && a->rules_text_version == a->rules.version) {
		reply_text(res, strdup(a->rules_text), "application/json");
		return;
	}
	if (!(o = rules_json(&a->rules))) {
		reply_json(res, 500, NULL);
		return;
	}
	free(a->rules_text);
	a->rules_text = cJSON_PrintUnformatted(o);
	a->rules_text_version = a->rules.version;
	reply_json(res, 200, o);
}

/*
 * o["decisions"]: rule r's decisions since its baseline (core/stats.h), or
 * null when the worker sums none or has taken no baseline for it yet.
 * 0 or -ENOMEM.
 */
static int add_decisions(cJSON *o, struct api *a, const struct rule *r)
{
	struct stats *s = a->worker ? worker_stats(a->worker) : NULL;
	struct stats_rule sr;
	cJSON *d, *ps;

	if (!s || stats_rule(s, r->name, &sr))
		return cJSON_AddNullToObject(o, "decisions") ? 0 : -ENOMEM;
	if (!(d = cJSON_AddObjectToObject(o, "decisions")))
		return -ENOMEM;
	for (int i = 0; i < STATS__DECISIONS; i++)
		if (jsonv_add_int(d, stats_decision_name((enum stats_decision)i), (int64_t)sr.total[i]))
			return -ENOMEM;
	if (jsonv_add_int(d, "since_ms", sr.since_ms) || !(ps = cJSON_AddObjectToObject(d, "per_second")))
		return -ENOMEM;
	for (int i = 0; i < STATS__DECISIONS; i++)
		/* three decimals (cJSON prints the shortest text that reads back) */
		if (!cJSON_AddNumberToObject(ps, stats_decision_name((enum stats_decision)i),
					     (double)(int64_t)(sr.per_second[i] * 1000.0 + 0.5) / 1000.0))
			return -ENOMEM;
	return 0;
}

void route_rule_get(struct api *a, const char *name, size_t len, struct api_response *res)
{
	const struct rule *r;
	cJSON *o;

	if (route_rules_fresh(a, res))
		return;
	r = name_ok(name, len) ? ruleset_get(&a->rules, name) : NULL;
	if (!r) {
		not_found_rule(res, name, len);
		return;
	}
	/* the ETag is the rule's, whatever its counts: the counts change, the rule did not */
	if (rulestore_etag(r, res->etag)) {
		reply_json(res, 500, NULL);
		return;
	}
	o = rule_to_json(r);
	if (o && add_decisions(o, a, r)) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply_json(res, o ? 200 : 500, o);
}

/* The body as a rule named `name` (caller rule_free's), or NULL after answering 400 or 500. */
static struct rule *rule_of_body(const struct api_request *req, const char *name, struct api_response *res)
{
	struct sl_error err = { 0 };
	struct rule *r = NULL;
	char msg[400];
	cJSON *body;
	int rc;

	if (!(body = reply_parse_body(req, res)))
		return NULL;
	rc = rule_from_json(body, name, NULL, &r, &err);
	cJSON_Delete(body);
	if (rc == -ENOMEM) {
		reply_json(res, 500, NULL);
	} else if (rc) {
		snprintf(msg, sizeof(msg), "%s%s%s", err.field, err.field[0] ? ": " : "", err.message);
		reply_fail(res, 400, "invalid_rule", msg, err.field);
	}
	return rc ? NULL : r;
}

void route_rule_put(struct api *a, const struct api_request *req, const char *name, size_t len,
		    struct api_response *res)
{
	struct rule *r;
	int created = 0, rc;

	if (!name_ok(name, len)) {
		reply_fail(res, 400, "invalid_rule", "rule name must be 1..64 characters of [A-Za-z0-9_.-]", "name");
		return;
	}
	if (!(r = rule_of_body(req, name, res)))
		return;
	if ((rc = rulestore_put_if(a->conn, a->prefix, r, req->if_match, &created, NULL))) {
		if (rc == -ESTALE)
			reply_fail(res, 412, "precondition_failed",
				   "If-Match does not match the stored rule (changed or deleted since it was read)", NULL);
		else
			reply_redis_error(res, a->conn, rc);
		rule_free(r);
		return;
	}
	if (rulestore_etag(r, res->etag))
		res->etag[0] = '\0';
	rules_changed(a);
	log_event(LOG_INFO, "rule_changed", "rule=%s algorithm=%s change=%s", r->name,
		  algorithm_name(r->algorithm), created ? "created" : "replaced");
	reply_json(res, created ? 201 : 200, rule_to_json(r));
	rule_free(r);
}

void route_rule_delete(struct api *a, const struct api_request *req, const char *name, size_t len,
		       struct api_response *res)
{
	int deleted = 0, rc;
	cJSON *o;

	if (!name_ok(name, len)) {
		not_found_rule(res, name, len);
		return;
	}
	if ((rc = rulestore_delete_if(a->conn, a->prefix, name, req->if_match, &deleted))) {
		if (rc == -ESTALE)
			reply_fail(res, 412, "precondition_failed",
				   "If-Match does not match the stored rule (changed since it was read)", NULL);
		else
			reply_redis_error(res, a->conn, rc);
		return;
	}
	if (!deleted) {
		not_found_rule(res, name, len);
		return;
	}
	rules_changed(a);
	log_event(LOG_INFO, "rule_changed", "rule=%s change=deleted", name);
	o = cJSON_CreateObject();
	if (o && !cJSON_AddStringToObject(o, "deleted", name)) {
		cJSON_Delete(o);
		o = NULL;
	}
	reply_json(res, 200, o);
}

/*
 * The fixture of the rule copies' suites (check_copies.c,
 * check_copies_drift.c): see copies_fixture.h.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/layout.h"
#include "core/rulestore.h"
#include "core/shard.h"
#include "tests/copies_fixture.h"
#include "tests/harness.h"

static struct test_redis R;
redisContext *C;
struct redis_target T;
struct layout *L;
size_t NL;
struct rconn *RC;

void copies_suite_up(void)
{
	ck_assert_int_eq(test_redis_start(&R), 0);
	C = test_redis_connect(&R);
	ck_assert_int_eq(redis_url_parse(R.url, &T, NULL), 0);
	ck_assert_int_eq(layouts_default("sluice:", &L, &NL), 0);
	RC = rconn_new(&T, 1000);
}

void copies_suite_down(void)
{
	rconn_free(RC);
	layouts_free(L, NL);
	redis_target_clear(&T);
	if (C)
		redisFree(C);
	test_redis_stop(&R);
}

void copies_flush(void)
{
	test_redis_flush(C);
}

struct worker *copies_worker(int skew)
{
	struct worker_config wc = { .redis = &T, .timeout_ms = 1000, .prefix = "sluice:", .batch_size = 500,
				    .layouts = L, .nlayouts = NL, .write_rules = 1,
				    .write_skew = skew, .max_clock_skew_ms = 3000 };
	struct worker *w = worker_new(&wc);

	ck_assert_ptr_nonnull(w);
	return w;
}

void put_rule(const char *name, const char *json)
{
	struct rule *r = NULL;
	struct sl_error err;

	ck_assert_int_eq(rule_from_text(json, strlen(json), name, &r, &err), 0);
	ck_assert_int_eq(rulestore_put(RC, "sluice:", r, NULL, NULL), 0);
	rule_free(r);
}

void del_rule(const char *name)
{
	int deleted = 0;

	ck_assert_int_eq(rulestore_delete(RC, "sluice:", name, &deleted), 0);
	ck_assert_int_eq(deleted, 1);
}

/* Three rules of three algorithms. */
void three_rules(void)
{
	put_rule("api", "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.5}");
	put_rule("login", "{\"match\":\"/login\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":60000}");
	put_rule("search", "{\"match\":\"/search*\",\"algorithm\":\"token_bucket\",\"capacity\":20,\"rate\":4}");
}

/* The store's ":version" text, "<epoch>:<version>", into buf. */
const char *store_version(char *buf, size_t cap)
{
	redisReply *r = test_cmd(C, "MGET sluice:rules:version sluice:rules:epoch");

	snprintf(buf, cap, "%s:%s", r->element[1]->type == REDIS_REPLY_STRING ? r->element[1]->str : "",
		 r->element[0]->type == REDIS_REPLY_STRING ? r->element[0]->str : "0");
	freeReplyObject(r);
	return buf;
}

/* Does `copy` (an HGETALL reply) hold exactly the store's rules `store` (HGETALL) and ":version" `ver`? */
static int copy_exact(const redisReply *copy, const redisReply *store, const char *ver, int want_skew)
{
	size_t rules = 0;
	int has_ver = 0, has_skew = 0;

	if (copy->type != REDIS_REPLY_ARRAY)
		return 0;
	for (size_t i = 0; i + 1 < copy->elements; i += 2) {
		const redisReply *f = copy->element[i], *v = copy->element[i + 1];
		int found = 0;

		if (!strcmp(f->str, ":version")) {
			has_ver = !strcmp(v->str, ver);
			continue;
		}
		if (!strcmp(f->str, ":max_clock_skew_ms")) {
			has_skew = 1;
			continue;
		}
		if (f->len && f->str[0] == ':')
			continue; /* not a rule */
		for (size_t j = 0; j + 1 < store->elements && !found; j += 2)
			found = f->len == store->element[j]->len && !memcmp(f->str, store->element[j]->str, f->len) &&
				v->len == store->element[j + 1]->len &&
				!memcmp(v->str, store->element[j + 1]->str, v->len);
		if (!found)
			return 0;
		rules++;
	}
	{
		size_t store_rules = 0; /* the store's own fields (':empty' after the last delete) are no rules */

		for (size_t j = 0; j + 1 < store->elements; j += 2)
			store_rules += !(store->element[j]->len && store->element[j]->str[0] == ':');
		return has_ver && rules == store_rules && has_skew == want_skew;
	}
}

/* How many of the 1024 copies hold exactly the store's rules and version (and the skew field iff `skew`). */
int copies_exact_skew(int skew)
{
	redisReply *store = test_cmd(C, "HGETALL sluice:rules");
	char ver[96];
	int n = 0;

	store_version(ver, sizeof(ver));
	for (unsigned k = 0; k < SHARD_COUNT; k++)
		redisAppendCommand(C, "HGETALL sluice:{%u}:rules", k);
	for (unsigned k = 0; k < SHARD_COUNT; k++) {
		redisReply *r = NULL;

		ck_assert_int_eq(redisGetReply(C, (void **)&r), REDIS_OK);
		n += copy_exact(r, store, ver, skew);
		freeReplyObject(r);
	}
	freeReplyObject(store);
	return n;
}

int copies_exact(void)
{
	return copies_exact_skew(0);
}

long long cmd_calls(const char *cmd)
{
	return test_cmdstat(C, cmd, "calls");
}

long long hset_calls(void)
{
	return cmd_calls("hset");
}

void step(struct worker *w, enum worker_job job, long long now)
{
	struct worker_result res;

	ck_assert_int_eq(worker_step(w, job, INT64_MAX, now, &res), 0);
}

struct worker_status status(struct worker *w)
{
	struct worker_status st;

	worker_status(w, &st);
	return st;
}

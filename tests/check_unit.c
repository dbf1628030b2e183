/*
 * Unit suites without Redis: config and URL parsing, flags, rule validation
 * and matching, scheduler arithmetic in virtual time, JSON numbers, key layout.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/jsonv.h"
#include "core/layout.h"
#include "core/log.h"
#include "core/reply.h"
#include "core/rules.h"
#include "core/rulestore.h"
#include "daemon/options.h"
#include "scheduler/sched.h"
#include "tests/harness.h"

/* ---- Redis URL ------------------------------------------------------------ */

START_TEST(url_tcp_full)
{
	struct redis_target t;

	ck_assert_int_eq(redis_url_parse("redis://:s3cret@10.0.0.5:6380/3", &t, NULL), 0);
	ck_assert_str_eq(t.host, "10.0.0.5");
	ck_assert_int_eq(t.port, 6380);
	ck_assert_int_eq(t.db, 3);
	ck_assert_ptr_null(t.user);
	ck_assert_str_eq(t.password, "s3cret");
	ck_assert_ptr_null(t.socket);
	redis_target_clear(&t);
}
END_TEST

START_TEST(url_defaults_and_user)
{
	struct redis_target t;

	ck_assert_int_eq(redis_url_parse("redis://localhost", &t, NULL), 0);
	ck_assert_str_eq(t.host, "localhost");
	ck_assert_int_eq(t.port, 6379);
	ck_assert_int_eq(t.db, 0);
	ck_assert_ptr_null(t.password);
	redis_target_clear(&t);

	ck_assert_int_eq(redis_url_parse("redis://alice:p@ss@h:1/0", &t, NULL), 0);
	ck_assert_str_eq(t.user, "alice");
	ck_assert_str_eq(t.password, "p@ss"); /* the last '@' ends the userinfo */
	ck_assert_str_eq(t.host, "h");
	ck_assert_int_eq(t.port, 1);
	redis_target_clear(&t);

	ck_assert_int_eq(redis_url_parse("redis://[::1]:7000", &t, NULL), 0);
	ck_assert_str_eq(t.host, "::1");
	ck_assert_int_eq(t.port, 7000);
	redis_target_clear(&t);
}
END_TEST

/* A cluster's nodes after commas: the first is the node to ask, the others are tried next */
START_TEST(url_node_list)
{
	struct redis_target t;

	ck_assert_int_eq(redis_url_parse("redis://:pw@a:7000,b:7001,[::1]:7002,c/0", &t, NULL), 0);
	ck_assert_str_eq(t.host, "a");
	ck_assert_int_eq(t.port, 7000);
	ck_assert_str_eq(t.password, "pw");
	ck_assert_uint_eq(t.nseeds, 3);
	ck_assert_str_eq(t.seeds[0].host, "b");
	ck_assert_int_eq(t.seeds[0].port, 7001);
	ck_assert_str_eq(t.seeds[1].host, "::1");
	ck_assert_int_eq(t.seeds[1].port, 7002);
	ck_assert_str_eq(t.seeds[2].host, "c");
	ck_assert_int_eq(t.seeds[2].port, 6379);
	redis_target_clear(&t);
	ck_assert_uint_eq(t.nseeds, 0);
}
END_TEST

START_TEST(url_unix)
{
	struct redis_target t;

	ck_assert_int_eq(redis_url_parse("unix:///run/redis/redis.sock", &t, NULL), 0);
	ck_assert_str_eq(t.socket, "/run/redis/redis.sock");
	ck_assert_ptr_null(t.host);
	ck_assert_int_eq(t.db, 0);
	redis_target_clear(&t);
	ck_assert_int_eq(redis_url_parse("unix:///tmp/r.sock?db=2", &t, NULL), 0);
	ck_assert_str_eq(t.socket, "/tmp/r.sock");
	ck_assert_int_eq(t.db, 2);
	redis_target_clear(&t);
}
END_TEST

static const char *const bad_urls[] = {
	"", "localhost:6379", "http://h:1", "redis://", "redis://h:0", "redis://h:65536",
	"redis://h:12x", "redis://h:1/x", "redis://h/-1", "redis://[::1", "redis://[::1]x",
	"unix://relative.sock", "unix:///s?db=x", "unix:///s?foo=1", "redis://:pw@:1",
	"redis://a:1,", "redis://a:1,,b:2", "redis://a:1,b:0", "redis://,a:1",
	"redis://a,b,c,d,e,f,g,h,i,j", /* more than REDIS_SEEDS_MAX after the first */
};

START_TEST(url_bad)
{
	struct redis_target t = { 0 };
	struct sl_error err = { 0 };

	ck_assert_int_eq(redis_url_parse(bad_urls[_i], &t, &err), -EINVAL);
	ck_assert_str_eq(err.field, "redis");
	ck_assert(strlen(err.message) > 0);
}
END_TEST

/* ---- listen ------------------------------------------------------------- */

START_TEST(listen_good_and_bad)
{
	struct sl_error err;
	char *host = NULL;
	int port = -1;

	ck_assert_int_eq(listen_parse("0.0.0.0:9000", "listen", &host, &port, &err), 0);
	ck_assert_str_eq(host, "0.0.0.0");
	ck_assert_int_eq(port, 9000);
	free(host);
	ck_assert_int_eq(listen_parse("[::1]:0", "listen", &host, &port, &err), 0);
	ck_assert_str_eq(host, "::1");
	ck_assert_int_eq(port, 0);
	free(host);
	ck_assert_int_eq(listen_parse("127.0.0.1", "listen", &host, &port, &err), -EINVAL);
	ck_assert_str_eq(err.field, "listen");
	ck_assert_int_eq(listen_parse(":80", "--listen", &host, &port, &err), -EINVAL);
	ck_assert_str_eq(err.field, "--listen");
	ck_assert_int_eq(listen_parse("h:70000", "listen", &host, &port, &err), -EINVAL);
	ck_assert_int_eq(listen_parse("::1:80", "listen", &host, &port, &err), -EINVAL);
}
END_TEST

/* ---- config file ------------------------------------------------------------ */

START_TEST(config_defaults_values)
{
	struct config c;

	ck_assert_int_eq(config_defaults(&c), 0);
	ck_assert_str_eq(c.redis_url, "redis://127.0.0.1:6379/0");
	ck_assert_str_eq(c.listen_host, "127.0.0.1");
	ck_assert_int_eq(c.listen_port, 8080);
	ck_assert_str_eq(c.prefix, "sluice:");
	ck_assert_int_eq(c.drain_interval_ms, 100);
	ck_assert_int_eq(c.prune_interval_ms, 1000);
	ck_assert_int_eq(c.batch_size, 500);
	ck_assert_int_eq(c.max_body_bytes, 65536);
	/* the admin server's (README's config table) */
	ck_assert_int_eq(c.max_connections, 1024);
	ck_assert_int_eq(c.max_connections_per_ip, 64);
	ck_assert_int_eq(c.header_timeout_ms, 5000);
	ck_assert_int_eq(c.idle_timeout_s, 30);
	ck_assert_int_eq(c.admin_threads, 4);
	ck_assert_ptr_null(c.admin_tls_cert);
	ck_assert_ptr_null(c.admin_tls_key);
	ck_assert_int_eq(c.max_clock_skew_ms, 10000); /* the scripts' own default (lua/lib/skew.lua) */
	ck_assert_int_eq(c.max_clock_skew_ms, CONFIG_SKEW_DEFAULT_MS);
	ck_assert_int_eq(c.log_level, LOG_INFO);
	ck_assert_uint_eq(c.nrules, 0);
	config_free(&c);
}
END_TEST

START_TEST(config_full_file)
{
	const char *text =
		"{\"redis\":\"redis://r:6390/1\",\"listen\":\"127.0.0.1:9999\",\"prefix\":\"rl:\","
		"\"drain_interval_ms\":50,\"prune_interval_ms\":2000,\"batch_size\":64,"
		"\"max_clock_skew_ms\":2500,\"log_level\":\"debug\",\"rules\":["
		"{\"name\":\"a\",\"match\":\"/a/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":0.5},"
		"{\"name\":\"b\",\"match\":\"/b\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":1000}]}";
	struct sl_error err = { 0 };
	struct config c;

	config_defaults(&c);
	ck_assert_int_eq(config_apply_json(&c, text, strlen(text), &err), 0);
	ck_assert_str_eq(c.redis.host, "r");
	ck_assert_int_eq(c.redis.port, 6390);
	ck_assert_int_eq(c.redis.db, 1);
	ck_assert_int_eq(c.listen_port, 9999);
	ck_assert_str_eq(c.prefix, "rl:");
	ck_assert_int_eq(c.drain_interval_ms, 50);
	ck_assert_int_eq(c.prune_interval_ms, 2000);
	ck_assert_int_eq(c.batch_size, 64);
	ck_assert_int_eq(c.max_clock_skew_ms, 2500);
	ck_assert_int_eq(c.log_level, LOG_DEBUG);
	ck_assert_uint_eq(c.nrules, 2);
	ck_assert_str_eq(c.rules[0]->name, "a");
	ck_assert_int_eq(c.rules[0]->capacity, 10);
	ck_assert(c.rules[0]->rate == 0.5);
	ck_assert_int_eq(c.rules[1]->limit, 5);
	ck_assert_int_eq(c.rules[1]->window_ms, 1000);
	config_free(&c);
}
END_TEST

static const struct {
	const char *json, *field;
} bad_configs[] = {
	{ "", "config" },
	{ "[1]", "config" },
	{ "{\"admin\":{\"auth_reads\":true,\"auth_reads\":false}}", "admin.auth_reads" },
	{ "{\"admin\":[]}", "admin" },
	{ "{\"drain_interval_ms\":0}", "drain_interval_ms" },
	{ "{\"drain_interval_ms\":1.5}", "drain_interval_ms" },
	{ "{\"drain_interval_ms\":\"100\"}", "drain_interval_ms" },
	{ "{\"prune_interval_ms\":-1}", "prune_interval_ms" },
	{ "{\"batch_size\":1000000}", "batch_size" },
	{ "{\"max_clock_skew_ms\":-1}", "max_clock_skew_ms" },
	{ "{\"max_clock_skew_ms\":3600001}", "max_clock_skew_ms" },
	{ "{\"max_clock_skew_ms\":10.5}", "max_clock_skew_ms" },
	{ "{\"max_clock_skew_ms\":\"10000\"}", "max_clock_skew_ms" },
	{ "{\"max_clock_skew_ms\":null}", "max_clock_skew_ms" },
	{ "{\"max_clock_skew_ms\":1e300}", "max_clock_skew_ms" },
	{ "{\"redis\":\"tcp://x\"}", "redis" },
	{ "{\"redis\":5}", "redis" },
	{ "{\"listen\":\"nowhere\"}", "listen" },
	{ "{\"log_level\":\"loud\"}", "log_level" },
	{ "{\"prefix\":\"a{b\"}", "prefix" },
	{ "{\"prefix\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}", "prefix" }, /* 65 bytes */
	{ "{\"drain_interval_ms\":3600001}", "drain_interval_ms" },
	{ "{\"sweep_budget_ms\":3600001}", "sweep_budget_ms" },
	{ "{\"redis_timeout_ms\":0}", "redis_timeout_ms" },
	{ "{\"max_body_bytes\":0}", "max_body_bytes" },
	{ "{\"max_connections\":65537}", "max_connections" },
	{ "{\"idle_timeout_s\":3601}", "idle_timeout_s" },
	/* issue 12's admin server fields */
	{ "{\"max_connections_per_ip\":-1}", "max_connections_per_ip" },
	{ "{\"max_connections_per_ip\":65537}", "max_connections_per_ip" },
	{ "{\"header_timeout_ms\":600001}", "header_timeout_ms" },
	{ "{\"header_timeout_ms\":\"5s\"}", "header_timeout_ms" },
	{ "{\"admin_threads\":0}", "admin_threads" },
	{ "{\"admin_threads\":65}", "admin_threads" },
	{ "{\"admin\":{\"tls_cert\":\"\"}}", "admin.tls_cert" },
	{ "{\"admin\":{\"tls_key\":7}}", "admin.tls_key" },
	{ "{\"admin\":{\"token_env\":\"\"}}", "admin.token_env" },
	{ "{\"prefix\":\"\"}", "prefix" },
	{ "{\"drain_interval\":100}", "drain_interval" },
	{ "{\"batch_size\":10,\"batch_size\":20}", "batch_size" },
	{ "{\"prefix\":\"a\\u0000b\"}", "config" },
	{ "{\"rules\":{}}", "rules" },
	{ "{\"layouts\":{}}", "layouts" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"fixed_window\",\"key_prefix\":\"sluice:\",\"scan\":true}]}", "layouts[0].key_prefix" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"fixed_window\",\"key_prefix\":\"slu\",\"scan\":true}]}", "layouts[0].key_prefix" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"L:\"}]}", "layouts[0].registry" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"L:\",\"registry\":\"r\",\"scan\":true}]}", "layouts[0].registry" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"gcra\",\"key_prefix\":\"L:\",\"scan\":true}]}", "layouts[0].algorithm" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"leaky_bucket\",\"scan\":true}]}", "layouts[0].key_prefix" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"L:\",\"scan\":true,\"unit\":\"s\"}]}", "layouts[0].unit" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"L:\",\"scan\":true,\"unit\":\"h\"}]}", "layouts[0].unit" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"L:\",\"scan\":true,\"scan_type\":\"list\"}]}", "layouts[0].scan_type" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"L:\",\"scan\":true,\"extra\":1}]}", "layouts[0].extra" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"L:\",\"scan\":true,\"kind\":\"redisson\"}]}", "layouts[0].kind" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"L:\",\"scan\":true,\"cut\":\"open\"}]}", "layouts[0].cut" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"fixed_window\",\"key_prefix\":\"L:\",\"scan\":true,\"cut\":\"exclusive\"}]}", "layouts[0].cut" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"token_bucket\",\"key_prefix\":\"L:\",\"scan\":true,\"kind\":\"bucket4j\"}]}", "layouts[0].kind" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"token_bucket\",\"key_prefix\":\"L:\",\"scan\":true,\"kind\":1}]}", "layouts[0].kind" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"token_bucket\",\"key_prefix\":\"L:\",\"registry\":\"r\",\"kind\":\"redisson\"}]}", "layouts[0].scan" },
	{ "{\"layouts\":[{\"name\":\"leaky_bucket\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"L:\",\"scan\":true}]}", "layouts[0]" },
	{ "{\"layouts\":[{\"name\":\"x\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"L:\",\"scan\":true},"
	  "{\"name\":\"x\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"M:\",\"scan\":true}]}", "layouts[1]" },
	/* found by fuzz_config: a member named "" named no field at all */
	{ "{\"\":\"x\"}", "config" },
	{ "{\"a\u00e9\":3,\"\":0,\"\":\"\"}", "config" },
	{ "{\"admin\":{\"\":1}}", "admin." },
	{ "{\"admin\":{\"token\":\"x\"}}", "admin.token" },
	{ "{\"admin\":{\"token_file\":\"\"}}", "admin.token_file" },
	{ "{\"admin\":{\"auth_reads\":1}}", "admin.auth_reads" },
	{ "{\"rules\":[{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":0,\"rate\":1}]}", "rules[0].capacity" },
	{ "{\"rules\":[{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1},"
	  "{\"name\":\"b\",\"match\":\"/b\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":-2}]}", "rules[1].rate" },
	{ "{\"rules\":[{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1},"
	  "{\"name\":\"a\",\"match\":\"/b\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1}]}", "rules[1]" },
	/* issue 9: sub_windows that does not divide window_ms (the client script refuses it) */
	{ "{\"rules\":[{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1},"
	  "{\"name\":\"search\",\"match\":\"/search\",\"algorithm\":\"sliding_counter\",\"limit\":5,\"window_ms\":1000,"
	  "\"sub_windows\":3}]}", "rules[1].sub_windows" },
	{ "{\"rules\":[{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1},"
	  "{\"name\":\"trial\",\"match\":\"/t\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1,"
	  "\"mode\":\"dry_run\"}]}", "rules[1].mode" },
	/* a late error undoes the valid members before it */
	{ "{\"prefix\":\"rl:\",\"drain_interval_ms\":5,\"redis\":\"redis://h:1\",\"rules\":["
	  "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1}],"
	  "\"batch_size\":0}", "batch_size" },
	{ "{\"prefix\":\"L\",\"prune_interval_ms\":5,\"layouts\":[{\"name\":\"x\",\"algorithm\":\"sliding_log\","
	  "\"key_prefix\":\"L:\",\"scan\":true}]}", "layouts[0].key_prefix" },
};

START_TEST(config_bad_changes_nothing)
{
	struct sl_error err = { 0 };
	struct config c;

	config_defaults(&c);
	ck_assert_int_eq(config_apply_json(&c, bad_configs[_i].json, strlen(bad_configs[_i].json), &err), -EINVAL);
	ck_assert_str_eq(err.field, bad_configs[_i].field);
	/* nothing changed */
	ck_assert_int_eq(c.drain_interval_ms, 100);
	ck_assert_int_eq(c.prune_interval_ms, 1000);
	ck_assert_str_eq(c.redis_url, "redis://127.0.0.1:6379/0");
	ck_assert_str_eq(c.prefix, "sluice:");
	ck_assert_uint_eq(c.nrules, 0);
	ck_assert_int_eq(c.max_clock_skew_ms, 10000);
	config_free(&c);
}
END_TEST

/* max_clock_skew_ms: whole ms from 0 (clients all on Redis TIME) to an hour; what each bad value says. */
START_TEST(config_skew_bounds)
{
	static const struct {
		const char *json;
		int rc;
		long long want;
		const char *message;
	} cases[] = {
		{ "{\"max_clock_skew_ms\":0}", 0, 0, NULL },
		{ "{\"max_clock_skew_ms\":3600000}", 0, 3600000, NULL },
		{ "{\"max_clock_skew_ms\":-1}", -EINVAL, 10000, "must be an integer >= 0" },
		{ "{\"max_clock_skew_ms\":3600001}", -EINVAL, 10000, "must be at most 3600000" },
		{ "{\"max_clock_skew_ms\":0.5}", -EINVAL, 10000, "must be an integer" },
		{ "{\"max_clock_skew_ms\":true}", -EINVAL, 10000, "must be an integer" },
	};

	for (int i = 0; i < TEST_N(cases); i++) {
		struct sl_error err = { 0 };
		struct config c;

		config_defaults(&c);
		ck_assert_int_eq(config_apply_json(&c, cases[i].json, strlen(cases[i].json), &err), cases[i].rc);
		ck_assert_int_eq(c.max_clock_skew_ms, cases[i].want);
		if (cases[i].message) {
			ck_assert_str_eq(err.field, "max_clock_skew_ms");
			ck_assert_str_eq(err.message, cases[i].message);
		}
		config_free(&c);
	}
}
END_TEST

START_TEST(config_layouts)
{
	const char *text = "{\"layouts\":["
			   "{\"name\":\"seed004\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"LeakyBucket:\",\"registry\":\"LeakyBucket::pathSet\"},"
			   "{\"name\":\"seed000\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"limit:\",\"key_suffix\":\":*\",\"scan\":true,\"unit\":\"us\",\"cut\":\"exclusive\"},"
			   "{\"name\":\"redisson\",\"algorithm\":\"token_bucket\",\"kind\":\"redisson\",\"key_prefix\":\"TokenBucketRateLimiter:\",\"scan\":true}]}";
	struct sl_error err = { 0 };
	const char *path;
	size_t plen;
	struct config c;

	config_defaults(&c);
	ck_assert_int_eq(config_apply_json(&c, text, strlen(text), &err), 0);
	ck_assert_uint_eq(c.nlayouts, 3);
	ck_assert_str_eq(c.layouts[0].name, "seed004");
	ck_assert_int_eq(c.layouts[0].scan, 0);
	ck_assert_str_eq(c.layouts[0].registry, "LeakyBucket::pathSet");
	ck_assert_str_eq(c.layouts[0].key_suffix, "");
	ck_assert_int_eq(c.layouts[1].scan, 1);
	ck_assert_str_eq(c.layouts[1].scan_match, "limit:*:\\*"); /* the suffix's '*' is escaped */
	ck_assert_str_eq(c.layouts[1].scan_type, "zset");
	ck_assert_int_eq(c.layouts[1].unit, UNIT_US);
	ck_assert_int_eq(c.layouts[1].cut_exclusive, 1);
	ck_assert_int_eq(c.layouts[0].cut_exclusive, 0);
	ck_assert_int_eq(layout_path_of(&c.layouts[1], "limit:u1:/a:*", 13, &path, &plen), 0);
	ck_assert_uint_eq(plen, 5);
	ck_assert_int_eq(memcmp(path, "u1:/a", 5), 0);
	ck_assert_int_eq(layout_path_of(&c.layouts[1], "other:u1", 8, &path, &plen), -EINVAL);
	/* Redisson's RRateLimiter: its hashes by SCAN TYPE hash, kept by its own table */
	ck_assert_ptr_eq(c.layouts[0].kind, NULL);
	ck_assert_ptr_eq(layout_ops(&c.layouts[0]), algorithm_get(ALG_LEAKY_BUCKET));
	ck_assert_ptr_nonnull(c.layouts[2].kind);
	ck_assert_ptr_eq(layout_ops(&c.layouts[2]), c.layouts[2].kind);
	ck_assert_int_eq(c.layouts[2].kind->self_described, 1);
	ck_assert_str_eq(c.layouts[2].scan_type, "hash");
	ck_assert_str_eq(c.layouts[2].scan_match, "TokenBucketRateLimiter:*");
	{
		struct cmdargs a = { 0 };

		/* Redisson's suffixName: {name}:value, {name}:permits; a name holding '{' as is */
		ck_assert_int_eq(c.layouts[2].kind->side_keys("TokenBucketRateLimiter:/test", 28, &a), 0);
		ck_assert_uint_eq(a.n, 2);
		ck_assert_int_eq(memcmp(a.buf.p + a.off[0], "{TokenBucketRateLimiter:/test}:value", a.len[0]), 0);
		ck_assert_int_eq(memcmp(a.buf.p + a.off[1], "{TokenBucketRateLimiter:/test}:permits", a.len[1]), 0);
		ck_assert_int_eq(c.layouts[2].kind->side_keys("T:{u7}/up", 9, &a), 0);
		ck_assert_uint_eq(a.n, 4);
		ck_assert_int_eq(memcmp(a.buf.p + a.off[2], "T:{u7}/up:value", a.len[2]), 0);
		ck_assert_uint_eq(a.len[2], 15);
		/* a '{' that opens no tag: the value would be in another slot than the hash */
		ck_assert_int_eq(c.layouts[2].kind->side_keys("T:{/up", 6, &a), -EINVAL);
		ck_assert_uint_eq(a.n, 4);
		cmdargs_free(&a);
	}
	config_free(&c);
}
END_TEST

START_TEST(config_file_missing)
{
	struct sl_error err = { 0 };
	struct config c;

	config_defaults(&c);
	ck_assert_int_eq(config_apply_file(&c, "/nonexistent/sluice.json", &err), -ENOENT);
	ck_assert_str_eq(err.field, "/nonexistent/sluice.json");
	config_free(&c);
}
END_TEST

/* A directory, and a file over the 4 MiB a config may hold: the path is named and nothing changes. */
START_TEST(config_file_unreadable_or_too_large)
{
	struct sl_error err = { 0 };
	struct config c;
	char dir[] = "/tmp/sluice-cfg-XXXXXX", big[64];
	FILE *f;

	config_defaults(&c);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(config_apply_file(&c, dir, &err), -EINVAL);
	ck_assert_str_eq(err.field, dir);
	ck_assert_str_eq(err.message, "read error");
	snprintf(big, sizeof(big), "%s/big.json", dir);
	ck_assert_ptr_nonnull(f = fopen(big, "w"));
	fputc('{', f);
	for (long i = 0; i < (4L << 20); i++)
		fputc(' ', f);
	fputc('}', f);
	fclose(f);
	ck_assert_int_eq(config_apply_file(&c, big, &err), -EINVAL);
	ck_assert_str_eq(err.field, big);
	ck_assert_str_eq(err.message, "larger than 4194304 bytes");
	ck_assert_int_eq(c.drain_interval_ms, 100); /* defaults kept */
	unlink(big);
	rmdir(dir);
	config_free(&c);
}
END_TEST

START_TEST(config_admin_token)
{
	char path[] = "/tmp/sluice-token-XXXXXX", json[128];
	int fd = mkstemp(path);
	struct sl_error err = { 0 };
	struct config c;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "tok-123\n", 8), 8);
	close(fd);
	config_defaults(&c);
	snprintf(json, sizeof(json), "{\"admin\":{\"token_file\":\"%s\",\"auth_reads\":true}}", path);
	ck_assert_int_eq(config_apply_json(&c, json, strlen(json), &err), 0);
	ck_assert_int_eq(c.admin_auth_reads, 1);
	setenv("SLUICE_ADMIN_TOKEN", "from-env", 1);
	ck_assert_int_eq(config_load_token(&c, &err), 0);
	ck_assert_str_eq(c.admin_token, "tok-123"); /* the file wins; its newline is dropped */
	config_free(&c);

	/* no file: the environment variable */
	config_defaults(&c);
	ck_assert_int_eq(config_load_token(&c, &err), 0);
	ck_assert_str_eq(c.admin_token, "from-env");
	config_free(&c);
	unsetenv("SLUICE_ADMIN_TOKEN");
	config_defaults(&c);
	ck_assert_int_eq(config_load_token(&c, &err), 0);
	ck_assert_ptr_null(c.admin_token);
	config_free(&c);

	/* an empty file is an error, as is a missing one */
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, "\n", 1), 1);
	close(fd);
	config_defaults(&c);
	config_apply_json(&c, json, strlen(json), &err);
	ck_assert_int_eq(config_load_token(&c, &err), -EINVAL);
	ck_assert_str_eq(err.field, "admin.token_file");
	unlink(path);
	ck_assert_int_eq(config_load_token(&c, &err), -EINVAL);
	config_free(&c);
}
END_TEST

/* 25 foreign layouts, one more than the 24 README allows: refused as a whole, nothing kept. */
START_TEST(config_too_many_layouts)
{
	char json[8192];
	size_t n = (size_t)snprintf(json, sizeof(json), "{\"layouts\":[");
	struct sl_error err = { 0 };
	struct config c;

	for (int i = 0; i < 25; i++) /* README: at most 24 foreign layouts */
		n += (size_t)snprintf(json + n, sizeof(json) - n,
				      "%s{\"name\":\"l%d\",\"algorithm\":\"sliding_log\",\"key_prefix\":\"L%d:\",\"scan\":true}",
				      i ? "," : "", i, i);
	snprintf(json + n, sizeof(json) - n, "]}");
	config_defaults(&c);
	ck_assert_int_eq(config_apply_json(&c, json, strlen(json), &err), -EINVAL);
	ck_assert_str_eq(err.field, "layouts");
	ck_assert_uint_eq(c.nlayouts, 0);
	config_free(&c);
}
END_TEST

/* A token file over 4096 bytes, or holding a NUL byte, is refused; so is a token variable that long. */
START_TEST(config_token_too_long)
{
	static char big[5000];
	char path[] = "/tmp/sluice-token-XXXXXX", json[128];
	int fd = mkstemp(path);
	struct sl_error err = { 0 };
	struct config c;

	ck_assert_int_ge(fd, 0);
	memset(big, 't', sizeof(big) - 1);
	ck_assert_int_eq(write(fd, big, 4097), 4097);
	close(fd);
	snprintf(json, sizeof(json), "{\"admin\":{\"token_file\":\"%s\"}}", path);
	config_defaults(&c);
	ck_assert_int_eq(config_apply_json(&c, json, strlen(json), &err), 0);
	ck_assert_int_eq(config_load_token(&c, &err), -EINVAL);
	ck_assert_str_eq(err.field, "admin.token_file");
	ck_assert_ptr_null(c.admin_token);
	config_free(&c);
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, "ab\0cd", 5), 5);
	close(fd);
	config_defaults(&c);
	config_apply_json(&c, json, strlen(json), &err);
	ck_assert_int_eq(config_load_token(&c, &err), -EINVAL);
	ck_assert_str_eq(err.field, "admin.token_file");
	config_free(&c);
	unlink(path);

	big[4097] = '\0'; /* 4097 bytes */
	setenv("SLUICE_ADMIN_TOKEN", big, 1);
	config_defaults(&c);
	ck_assert_int_eq(config_load_token(&c, &err), -EINVAL);
	ck_assert_str_eq(err.field, "SLUICE_ADMIN_TOKEN");
	ck_assert_ptr_null(c.admin_token);
	config_free(&c);
	unsetenv("SLUICE_ADMIN_TOKEN");
}
END_TEST

/* reply_double: a sorted-set score as Redis writes it, the whole string, no NaN. */
START_TEST(reply_double_scores)
{
	static const struct {
		const char *s;
		int rc;
		double v;
	} cases[] = {
		{ "1796131834508", 0, 1796131834508.0 }, { "1.5", 0, 1.5 }, { "-2", 0, -2 }, { "inf", 0, 1.0 / 0.0 },
		{ "", -EPROTO, 0 }, { "12x", -EPROTO, 0 }, { "nan", -EPROTO, 0 }, { " 1", -EPROTO, 0 },
	};
	redisReply r = { .type = REDIS_REPLY_STRING };
	redisReply i = { .type = REDIS_REPLY_INTEGER, .integer = 5 };
	double v;

	for (size_t k = 0; k < TEST_N(cases); k++) {
		r.str = (char *)cases[k].s;
		r.len = strlen(cases[k].s);
		v = -7;
		ck_assert_msg(reply_double(&r, &v) == (cases[k].rc ? -EPROTO : 0) && (cases[k].rc || v == cases[k].v),
			      "\"%s\": %g", cases[k].s, v);
	}
	ck_assert_int_ne(reply_double(&i, &v), 0); /* not a string */
	ck_assert_int_ne(reply_double(NULL, &v), 0);
}
END_TEST

/*
 * Error replies name their cause, and their errno says what kind of failure
 * it is: at maxmemory -ENOSPC and "Redis is out of memory (maxmemory)" from
 * every typed read (not "unexpected reply", not a wrong-type refusal); a
 * node down -EIO; the cluster's and the server's states named by their word.
 */
START_TEST(reply_errors_name_the_cause)
{
	static const struct {
		const char *text;
		int rc;          /* reply_errno, and every typed read's error */
		const char *is;  /* reply_describe */
	} cases[] = {
		{ "OOM command not allowed when used memory > 'maxmemory'.", -ENOSPC, "Redis is out of memory (maxmemory)" },
		{ "OOM command not allowed when used memory > 'maxmemory'. script: @user_script:1.", -ENOSPC,
		  "Redis is out of memory (maxmemory)" },
		{ "MOVED 3999 127.0.0.1:6381", -EBUSY, "MOVED: slot map changed (the slot lives on another node now)" },
		{ "ASK 3999 127.0.0.1:6381", -EBUSY, "ASK: the slot is being migrated to another node" },
		{ "CLUSTERDOWN The cluster is down", -EBADMSG,
		  "CLUSTERDOWN: the cluster is down (a primary failed and is not replaced, or slots are not served)" },
		{ "CLUSTERDOWN Hash slot not served", -EBADMSG,
		  "CLUSTERDOWN: the cluster is down (a primary failed and is not replaced, or slots are not served)" },
		{ "TRYAGAIN Multiple keys request during rehashing of slot", -EBUSY,
		  "TRYAGAIN: the slot's keys are being migrated (resharding)" },
		{ "LOADING Redis is loading the dataset in memory", -EBADMSG,
		  "LOADING: Redis is loading its data set into memory (just restarted)" },
		{ "BUSY Redis is busy running a script.", -EBADMSG, "BUSY: Redis is running a slow script" },
		{ "READONLY You can't write against a read only replica.", -EBADMSG,
		  "READONLY: the node is a replica now (a failover)" },
		{ "NOAUTH Authentication required.", -EBADMSG, "NOAUTH: Redis wants a password (set one in the Redis URL)" },
		{ "WRONGPASS invalid username-password pair", -EBADMSG, "WRONGPASS: Redis refused the user or password" },
		{ "NODEDOWN 127.0.0.1:7001: connect: Connection refused", -EIO,
		  "NODEDOWN 127.0.0.1:7001: connect: Connection refused" },
		/* a word only at the start, and only a whole word */
		{ "WRONGTYPE Operation against a key holding the wrong kind of value", -EBADMSG,
		  "WRONGTYPE Operation against a key holding the wrong kind of value" },
		{ "ERR MOVED elsewhere", -EBADMSG, "ERR MOVED elsewhere" },
		{ "MOVEDX 1 a:1", -EBADMSG, "MOVEDX 1 a:1" },
		{ "OOMX", -EBADMSG, "OOMX" },
	};
	redisReply r = { .type = REDIS_REPLY_ERROR };
	redisReply ok = { .type = REDIS_REPLY_INTEGER, .integer = 3 };
	const redisReply *const *el;
	const char *str;
	size_t len, n;
	long long v;
	double d;

	for (size_t k = 0; k < TEST_N(cases); k++) {
		r.str = (char *)cases[k].text;
		r.len = strlen(cases[k].text);
		ck_assert_msg(reply_errno(&r) == cases[k].rc, "%s: errno %d", cases[k].text, reply_errno(&r));
		ck_assert_str_eq(reply_describe(&r), cases[k].is);
		ck_assert_str_eq(reply_cause(cases[k].text), cases[k].is);
		/* every typed read of that reply fails with the same errno */
		ck_assert_int_eq(reply_int(&r, &v), cases[k].rc);
		ck_assert_int_eq(reply_str(&r, &str, &len), cases[k].rc);
		ck_assert_int_eq(reply_int_text(&r, &v), cases[k].rc);
		ck_assert_int_eq(reply_double(&r, &d), cases[k].rc);
		ck_assert_int_eq(reply_array(&r, 0, &el, &n), cases[k].rc);
	}
	ck_assert_int_eq(reply_errno(&ok), -EPROTO); /* not an error reply: another shape */
	ck_assert_str_eq(reply_describe(&ok), "unexpected reply");
	ck_assert_str_eq(reply_cause(NULL), "unexpected reply");
	ck_assert_int_eq(reply_str(&ok, &str, &len), -EPROTO);
}
END_TEST

/* ---- flags ------------------------------------------------------------------ */

static int parse_argv(struct config *c, enum options_action *act, struct sl_error *err, int argc,
		      const char **argv)
{
	return options_parse(argc, (char **)argv, NULL, c, act, NULL, err);
}

START_TEST(flags_override_file)
{
	char path[] = "/tmp/sluice-unit-XXXXXX";
	const char *text = "{\"drain_interval_ms\":50,\"listen\":\"127.0.0.1:7000\",\"log_level\":\"warn\"}";
	int fd = mkstemp(path);
	struct sl_error err = { 0 };
	enum options_action act;
	struct config c;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
	close(fd);
	config_defaults(&c);
	{
		/* the flag comes before --config on the line and still wins */
		const char *argv[] = { "sluiced", "--drain-interval-ms", "25", "--config", path,
				       "--redis", "unix:///tmp/x.sock", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 7, argv), 0);
	}
	ck_assert_int_eq(act, OPT_RUN);
	ck_assert_int_eq(c.drain_interval_ms, 25);
	ck_assert_int_eq(c.listen_port, 7000);
	ck_assert_int_eq(c.log_level, LOG_WARN);
	ck_assert_str_eq(c.redis.socket, "/tmp/x.sock");
	config_free(&c);
	unlink(path);
}
END_TEST

START_TEST(flags_help_version_and_errors)
{
	struct sl_error err = { 0 };
	enum options_action act;
	struct config c;

	config_defaults(&c);
	{
		const char *argv[] = { "sluiced", "--help", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 2, argv), 0);
		ck_assert_int_eq(act, OPT_HELP);
	}
	{
		const char *argv[] = { "sluiced", "-V", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 2, argv), 0);
		ck_assert_int_eq(act, OPT_VERSION);
	}
	{
		/* --check-config parses everything as for a run (flags applied), then asks to exit */
		const char *argv[] = { "sluiced", "--check-config", "--lease-ttl-ms", "900", "--id", "a1", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 6, argv), 0);
		ck_assert_int_eq(act, OPT_CHECK);
		ck_assert_int_eq(c.lease_ttl_ms, 900);
		ck_assert_str_eq(c.id, "a1");
	}
	{
		const char *argv[] = { "sluiced", "--check-config", "--lease-ttl-ms", "299", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 4, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--lease-ttl-ms");
	}
	{
		const char *argv[] = { "sluiced", "--id", "a b", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 3, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--id");
	}
	{
		const char *argv[] = { "sluiced", "--prune-interval-ms", "10x", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 3, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--prune-interval-ms");
	}
	{
		const char *argv[] = { "sluiced", "--batch-size", "+5", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 3, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--batch-size");
	}
	{
		const char *argv[] = { "sluiced", "--config", "", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 3, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--config");
	}
	{
		const char *argv[] = { "sluiced", "--frobnicate", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 2, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--frobnicate");
	}
	{
		const char *argv[] = { "sluiced", "-x", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 2, argv), -EINVAL);
		ck_assert_str_eq(err.field, "-x");
	}
	{
		const char *argv[] = { "sluiced", "--drain-interval-ms", "0", NULL }; /* below 1 */

		ck_assert_int_eq(parse_argv(&c, &act, &err, 3, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--drain-interval-ms");
	}
	{
		const char *argv[] = { "sluiced", "--sweep-budget-ms", "3600001", NULL }; /* above the hour */

		ck_assert_int_eq(parse_argv(&c, &act, &err, 3, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--sweep-budget-ms");
	}
	{
		const char *argv[] = { "sluiced", "--redis", "tcp://x", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 3, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--redis");
	}
	{
		const char *argv[] = { "sluiced", "--listen", "[::1", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 3, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--listen");
	}
	{
		const char *argv[] = { "sluiced", "--log-level", "chatty", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 3, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--log-level");
	}
	{
		const char *argv[] = { "sluiced", "--redis", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 2, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--redis");
	}
	{
		const char *argv[] = { "sluiced", "stray", NULL };

		ck_assert_int_eq(parse_argv(&c, &act, &err, 2, argv), -EINVAL);
		ck_assert_str_eq(err.field, "stray");
	}
	ck_assert_int_eq(c.prune_interval_ms, 1000);
	config_free(&c);
}
END_TEST

/* ---- rules ---------------------------------------------------------------- */

static struct rule *rule_of(const char *json, struct sl_error *err)
{
	cJSON *o = cJSON_Parse(json);
	struct rule *r = NULL;

	ck_assert_ptr_nonnull(o);
	if (rule_from_json(o, NULL, NULL, &r, err))
		r = NULL;
	cJSON_Delete(o);
	return r;
}

START_TEST(rule_valid_roundtrip)
{
	const char *in[] = {
		"{\"name\":\"api\",\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}",
		"{\"name\":\"slow\",\"match\":\"/x\",\"algorithm\":\"leaky_bucket\",\"capacity\":9007199254740991,\"rate\":0.16666666666666666}",
		"{\"name\":\"login\",\"match\":\"/login\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":60000}",
		"{\"name\":\"c\",\"match\":\"/c\",\"algorithm\":\"sliding_counter\",\"limit\":5,\"window_ms\":60000,\"sub_windows\":6}",
		"{\"name\":\"f\",\"match\":\"/f\",\"algorithm\":\"fixed_window\",\"limit\":100,\"window_ms\":1000}",
		"{\"name\":\"t\",\"match\":\"/t\",\"algorithm\":\"token_bucket\",\"capacity\":20,\"rate\":5}",
	};

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct rule *r = rule_of(in[i], NULL);
		char *out;

		ck_assert_ptr_nonnull(r);
		out = rule_to_text(r);
		ck_assert_str_eq(out, in[i]); /* exact, integers never in exponent form */
		free(out);
		rule_free(r);
	}
}
END_TEST

/*
 * Found by fuzz_rules: a rate whose 15-digit text reads back within cJSON's
 * epsilon was printed so (3.33333333333333e+15), so a rule read back from
 * its stored text had another rate and rendered another text (and ETag).
 * Every non-integral number now renders as the shortest text that reads
 * back exactly.
 */
START_TEST(rule_rate_text_reads_back_exactly)
{
	static const struct {
		const char *rate, *text;
	} cases[] = {
		{ "3333333333333330.33", "3333333333333330.5" },
		{ "0.1", "0.1" },
		{ "1e-300", "1e-300" },
		{ "123456.789012345678", "123456.78901234567" },
		{ "2.5", "2.5" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char in[200], want[200];
		struct rule *r, *back = NULL;
		char *t1, *t2;

		snprintf(in, sizeof(in), "{\"name\":\"t\",\"match\":\"/\",\"algorithm\":\"token_bucket\",\"capacity\":1,\"rate\":%s}",
			 cases[i].rate);
		snprintf(want, sizeof(want), "{\"name\":\"t\",\"match\":\"/\",\"algorithm\":\"token_bucket\",\"capacity\":1,\"rate\":%s}",
			 cases[i].text);
		ck_assert_ptr_nonnull(r = rule_of(in, NULL));
		t1 = rule_to_text(r);
		ck_assert_str_eq(t1, want);
		ck_assert_int_eq(rule_from_text(t1, strlen(t1), "t", &back, NULL), 0);
		ck_assert_msg(back->rate == r->rate, "%s: read back %.17g, was %.17g", cases[i].rate, back->rate, r->rate);
		t2 = rule_to_text(back);
		ck_assert_str_eq(t2, t1);
		free(t1);
		free(t2);
		rule_free(back);
		rule_free(r);
	}
}
END_TEST

static const struct {
	const char *json, *field;
} bad_rules[] = {
	{ "{\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":1}", "name" },
	{ "{\"name\":\"a b\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":1}", "name" },
	{ "{\"name\":\"a\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":1}", "match" },
	{ "{\"name\":\"a\",\"match\":\"\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":1}", "match" },
	{ "{\"name\":\"a\",\"match\":\"/a[b\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":1}", "match" },
	{ "{\"name\":\"a\",\"match\":\"/a\\\\\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":1}", "match" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"capacity\":1,\"rate\":1}", "algorithm" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"gcra\",\"capacity\":1,\"rate\":1}", "algorithm" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"rate\":1}", "capacity" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":0,\"rate\":1}", "capacity" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":-3,\"rate\":1}", "capacity" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":2.5,\"rate\":1}", "capacity" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":\"5\",\"rate\":1}", "capacity" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":1e300,\"rate\":1}", "capacity" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":9007199254740994,\"rate\":1}", "capacity" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":9007199254740993,\"rate\":1}", "capacity" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":9007199254740992,\"rate\":1}", "capacity" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":0}", "rate" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":null}", "rate" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":1,\"limit\":3}", "limit" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"leaky_bucket\",\"capacity\":1,\"rate\":1,\"burst\":3}", "burst" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1}", "window_ms" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"limit\":2,\"window_ms\":1}", "limit" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":true,\"window_ms\":1}", "limit" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_counter\",\"limit\":1,\"window_ms\":10,\"sub_windows\":11}", "sub_windows" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_counter\",\"limit\":1,\"window_ms\":10,\"sub_windows\":0}", "sub_windows" },
	/* issue 9: mode is "enforce" or "shadow", nothing else */
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1,\"mode\":\"Shadow\"}", "mode" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1,\"mode\":\"\"}", "mode" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1,\"mode\":1}", "mode" },
	{ "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1,\"mode\":null}", "mode" },
};

START_TEST(rule_invalid_names_field)
{
	struct sl_error err = { 0 };

	ck_assert_ptr_null(rule_of(bad_rules[_i].json, &err));
	ck_assert_str_eq(err.field, bad_rules[_i].field);
	ck_assert(strlen(err.message) > 0);
}
END_TEST

/* mode: "shadow" is kept and rendered; "enforce" is the default and renders as a rule without
 * mode, so the text (and the ETag, and the shard copies) of every existing rule stays the same. */
START_TEST(rule_mode_round_trip)
{
	const char *base = "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1";
	char json[256], tag0[RULESTORE_ETAG_SIZE], tag1[RULESTORE_ETAG_SIZE];
	struct rule *none, *enforce, *shadow, *again;
	char *t0, *t1, *t2;

	snprintf(json, sizeof(json), "%s}", base);
	none = rule_of(json, NULL);
	snprintf(json, sizeof(json), "%s,\"mode\":\"enforce\"}", base);
	enforce = rule_of(json, NULL);
	snprintf(json, sizeof(json), "%s,\"mode\":\"shadow\"}", base);
	shadow = rule_of(json, NULL);
	ck_assert(none && enforce && shadow);
	ck_assert_int_eq(none->shadow, 0);
	ck_assert_int_eq(enforce->shadow, 0);
	ck_assert_int_eq(shadow->shadow, 1);
	t0 = rule_to_text(none);
	t1 = rule_to_text(enforce);
	t2 = rule_to_text(shadow);
	ck_assert_str_eq(t0, "{\"name\":\"a\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1}");
	ck_assert_str_eq(t1, t0);
	ck_assert_str_eq(t2, json);
	ck_assert_int_eq(rulestore_etag(none, tag0), 0);
	ck_assert_int_eq(rulestore_etag(enforce, tag1), 0);
	ck_assert_str_eq(tag0, tag1);
	ck_assert_int_eq(rulestore_etag(shadow, tag1), 0);
	ck_assert_str_ne(tag0, tag1);
	/* the stored text parses back to the same rule */
	ck_assert_int_eq(rule_from_text(t2, strlen(t2), "a", &again, NULL), 0);
	ck_assert_int_eq(again->shadow, 1);
	rule_free(again);
	free(t0);
	free(t1);
	free(t2);
	rule_free(none);
	rule_free(enforce);
	rule_free(shadow);
}
END_TEST

START_TEST(rule_url_name_must_agree)
{
	cJSON *o = cJSON_Parse("{\"name\":\"b\",\"match\":\"/a\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1}");
	struct sl_error err = { 0 };
	struct rule *r = NULL;

	ck_assert_int_eq(rule_from_json(o, "a", NULL, &r, &err), -EINVAL);
	ck_assert_str_eq(err.field, "name");
	cJSON_DeleteItemFromObject(o, "name");
	ck_assert_int_eq(rule_from_json(o, "a", NULL, &r, &err), 0);
	ck_assert_str_eq(r->name, "a");
	rule_free(r);
	cJSON_Delete(o);
}
END_TEST

static struct rule *mk(const char *name, const char *match)
{
	char json[256];

	snprintf(json, sizeof(json),
		 "{\"name\":\"%s\",\"match\":\"%s\",\"algorithm\":\"sliding_log\",\"limit\":1,\"window_ms\":1}",
		 name, match);
	return rule_of(json, NULL);
}

/* A glob's longest run after a '*' is bounded (RULE_GLOB_RUN_MAX): 32 is taken, 33 refused naming match. */
START_TEST(rule_glob_run_bound)
{
	char json[256], q[40];
	struct sl_error err = { 0 };
	struct rule *r;

	memset(q, '?', 32);
	q[32] = '\0';
	snprintf(json, sizeof(json), "{\"name\":\"g\",\"match\":\"/g/*%s*x\",\"algorithm\":\"sliding_log\","
		 "\"limit\":1,\"window_ms\":1}", q);
	ck_assert_ptr_nonnull(r = rule_of(json, NULL));
	rule_free(r);
	snprintf(json, sizeof(json), "{\"name\":\"g\",\"match\":\"/g/*%s?\",\"algorithm\":\"sliding_log\","
		 "\"limit\":1,\"window_ms\":1}", q);
	ck_assert_ptr_null(rule_of(json, &err));
	ck_assert_msg(strstr(err.field, "match") && strstr(err.message, "32"), "%s: %s", err.field, err.message);
}
END_TEST

START_TEST(ruleset_precedence)
{
	struct ruleset rs = { 0 };
	const struct rule *r;

	ruleset_put(&rs, mk("all", "*"));
	ruleset_put(&rs, mk("api", "/api/*"));
	ruleset_put(&rs, mk("users", "/api/users*"));
	ruleset_put(&rs, mk("exact", "/api/users/42"));
	ruleset_put(&rs, mk("q", "/api/?"));
	ruleset_put(&rs, mk("cls", "/v[12]/*"));

	r = ruleset_match(&rs, "/api/users/42", 13);
	ck_assert_str_eq(r->name, "exact");                 /* exact beats any glob */
	ck_assert_str_eq(ruleset_match(&rs, "/api/users/7", 12)->name, "users"); /* longest literal prefix */
	ck_assert_str_eq(ruleset_match(&rs, "/api/orders", 11)->name, "api");
	ck_assert_str_eq(ruleset_match(&rs, "/api/x", 6)->name, "api");  /* "/api/" == "/api/" prefix: the smaller name */
	ck_assert_str_eq(ruleset_match(&rs, "/v2/a", 5)->name, "cls");
	ck_assert_str_eq(ruleset_match(&rs, "/other", 6)->name, "all");
	/* a NUL byte in the path: globs see past it (core/glob.c), as exact rules do */
	ck_assert_str_eq(ruleset_match(&rs, "/api/x\0y", 8)->name, "api");
	ck_assert_str_eq(ruleset_match(&rs, "/v2\0/a", 7)->name, "all");

	/* ties go by name, not by the order the rules were put in */
	ruleset_put(&rs, mk("zeta", "/t/*"));
	ruleset_put(&rs, mk("beta", "/t/?"));
	ruleset_put(&rs, mk("exz", "/e"));
	ruleset_put(&rs, mk("exa", "/e"));
	ck_assert_str_eq(ruleset_match(&rs, "/t/x", 4)->name, "beta");
	ck_assert_str_eq(ruleset_match(&rs, "/t/xy", 5)->name, "zeta");
	ck_assert_str_eq(ruleset_match(&rs, "/e", 2)->name, "exa");

	/* replace by name keeps the position */
	ruleset_put(&rs, mk("api", "/apx/*"));
	ck_assert_uint_eq(rs.n, 10);
	ck_assert_str_eq(ruleset_get(&rs, "api")->match, "/apx/*");
	ck_assert_str_eq(ruleset_match(&rs, "/api/orders", 11)->name, "all");
	ruleset_clear(&rs);
	ck_assert_uint_eq(rs.n, 0);
}
END_TEST

/* Seed 004 keeps "/test" in three limiters: each foreign layout by the best rule of its algorithm. */
START_TEST(ruleset_match_by_algorithm)
{
	static const char *const in[] = {
		"{\"name\":\"seed004-test\",\"match\":\"/test\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":1}",
		"{\"name\":\"seed004-sliding\",\"match\":\"/test\",\"algorithm\":\"sliding_log\",\"limit\":10,\"window_ms\":1000}",
		"{\"name\":\"all-fixed\",\"match\":\"*\",\"algorithm\":\"fixed_window\",\"limit\":10,\"window_ms\":60000}",
		"{\"name\":\"t-fixed\",\"match\":\"/t*\",\"algorithm\":\"fixed_window\",\"limit\":5,\"window_ms\":60000}",
	};
	struct ruleset rs = { 0 };

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		ck_assert_int_eq(ruleset_put(&rs, rule_of(in[i], NULL)), 0);
	/* the path's rule: the exact one of the smaller name */
	ck_assert_str_eq(ruleset_match(&rs, "/test", 5)->name, "seed004-sliding");
	ck_assert_str_eq(ruleset_match_algorithm(&rs, "/test", 5, ALG_LEAKY_BUCKET)->name, "seed004-test");
	ck_assert_str_eq(ruleset_match_algorithm(&rs, "/test", 5, ALG_SLIDING_LOG)->name, "seed004-sliding");
	/* among its algorithm's globs, the longest literal prefix */
	ck_assert_str_eq(ruleset_match_algorithm(&rs, "/test", 5, ALG_FIXED_WINDOW)->name, "t-fixed");
	ck_assert_str_eq(ruleset_match_algorithm(&rs, "/x", 2, ALG_FIXED_WINDOW)->name, "all-fixed");
	ck_assert_ptr_eq(ruleset_match_algorithm(&rs, "/test", 5, ALG_TOKEN_BUCKET), NULL);
	ck_assert_ptr_eq(ruleset_match_algorithm(&rs, "/x", 2, ALG_LEAKY_BUCKET), NULL);
	ruleset_clear(&rs);
}
END_TEST

/* ---- scheduler in virtual time ------------------------------------------------ */

struct vclock {
	int64_t now;      /* µs */
	int64_t cost;     /* µs each job run advances the clock by */
	int runs;
};

static int64_t vnow(void *arg)
{
	return ((struct vclock *)arg)->now;
}

static int vjob(void *arg)
{
	struct vclock *v = arg;

	v->runs++;
	v->now += v->cost;
	return 0;
}

static int vjob_fail(void *arg)
{
	vjob(arg);
	return -EIO;
}

START_TEST(sched_on_time)
{
	struct vclock v = { .now = 1000, .cost = 10 };
	struct sched *s = sched_new(vnow, &v);
	struct sched_stats st;

	ck_assert_int_eq(sched_add(s, "a", 100, 1000, vjob, &v), 0);
	ck_assert_int_eq(sched_next_due(s), 1000);
	ck_assert_int_eq(sched_run_due(s, 1000), 1);
	ck_assert_int_eq(sched_next_due(s), 1100);
	ck_assert_int_eq(sched_run_due(s, 1050), 0); /* not due */
	v.now = 1103;                                 /* woke 3 µs late */
	ck_assert_int_eq(sched_run_due(s, v.now), 1);
	sched_get_stats(s, 0, &st);
	ck_assert_int_eq(st.runs, 2);
	ck_assert_int_eq(st.last_lag_us, 3);
	ck_assert_int_eq(st.max_lag_us, 3);
	ck_assert_int_eq(st.last_duration_us, 10);
	ck_assert_int_eq(st.overruns, 0);
	ck_assert_int_eq(st.next_due_us, 1200); /* the grid keeps its phase */
	sched_free(s);
}
END_TEST

START_TEST(sched_overrun_skips_slots)
{
	struct vclock v = { .now = 0, .cost = 350 };
	struct sched *s = sched_new(vnow, &v);
	struct sched_stats st;

	sched_add(s, "slow", 100, 0, vjob, &v);
	ck_assert_int_eq(sched_run_due(s, 0), 1); /* runs 0..350: slots 100, 200, 300 missed */
	sched_get_stats(s, 0, &st);
	ck_assert_int_eq(st.overruns, 3);
	ck_assert_int_eq(st.next_due_us, 400);
	v.cost = 100;                             /* ends exactly at the next due: no overrun */
	v.now = 400;
	sched_run_due(s, 400);
	sched_get_stats(s, 0, &st);
	ck_assert_int_eq(st.overruns, 3);
	ck_assert_int_eq(st.next_due_us, 500);
	sched_free(s);
}
END_TEST

START_TEST(sched_two_jobs_and_failures)
{
	struct vclock v = { .now = 0, .cost = 0 };
	struct sched *s = sched_new(vnow, &v);
	struct sched_stats a, b;

	ck_assert_int_eq(sched_add(s, "drain", 100, 0, vjob, &v), 0);
	ck_assert_int_eq(sched_add(s, "prune", 1000, 0, vjob_fail, &v), 1);
	ck_assert_int_eq(sched_add(s, "bad", 0, 0, vjob, &v), -EINVAL);
	for (int64_t t = 0; t < 2000; t += 100)
		sched_run_due(s, t);
	sched_get_stats(s, 0, &a);
	sched_get_stats(s, 1, &b);
	ck_assert_int_eq(a.runs, 20);
	ck_assert_int_eq(b.runs, 2);
	ck_assert_int_eq(b.failures, 2);
	ck_assert_int_eq(sched_next_due(s), 2000);
	ck_assert_int_eq(sched_set_period(s, 0, 250), 0);
	ck_assert_int_eq(sched_set_period(s, 5, 250), -EINVAL);
	sched_run_due(s, 2000);
	sched_get_stats(s, 0, &a);
	ck_assert_int_eq(a.next_due_us, 2250);
	sched_free(s);
}
END_TEST

/* ---- JSON numbers and layout keys ---------------------------------------------- */

START_TEST(jsonv_numbers)
{
	cJSON *o = cJSON_CreateObject();
	char *s;
	int64_t v;

	jsonv_add_int(o, "big", 9007199254740992LL);
	jsonv_add_int(o, "ten16", 10000000000000000LL);
	jsonv_add_int(o, "neg", -5);
	s = cJSON_PrintUnformatted(o);
	ck_assert_str_eq(s, "{\"big\":9007199254740992,\"ten16\":10000000000000000,\"neg\":-5}");
	free(s);
	cJSON_Delete(o);

	o = cJSON_Parse("[1, 1.5, -1, 9007199254740993e0, \"1\", 1e308]");
	ck_assert_int_eq(jsonv_int(cJSON_GetArrayItem(o, 0), "x", 1, &v, NULL), 0);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(jsonv_int(cJSON_GetArrayItem(o, 1), "x", 1, &v, NULL), -EINVAL);
	ck_assert_int_eq(jsonv_int(cJSON_GetArrayItem(o, 2), "x", 1, &v, NULL), -EINVAL);
	ck_assert_int_eq(jsonv_int(cJSON_GetArrayItem(o, 2), "x", -1, &v, NULL), 0);
	ck_assert_int_eq(jsonv_int(cJSON_GetArrayItem(o, 4), "x", 1, &v, NULL), -EINVAL);
	ck_assert_int_eq(jsonv_int(cJSON_GetArrayItem(o, 5), "x", 1, &v, NULL), -EINVAL);
	cJSON_Delete(o);
}
END_TEST

/* jsonv_number_text's reference: the integers in full, else the shortest of "%.15g" .. "%.17g" reading back exactly. */
static void number_text_ref(double v, char *buf)
{
	if (v == floor(v) && fabs(v) < (double)JSONV_LIMIT) {
		snprintf(buf, JSONV_NUMBER_TEXT, "%lld", (long long)v);
		return;
	}
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(buf, JSONV_NUMBER_TEXT, "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* Every number: the text of the fast paths (integers, short decimals) is the printf search's, byte for byte. */
START_TEST(jsonv_number_text_is_printf_s)
{
	static const double fixed[] = { 0.2, -0.2, 0.1, 0.5, 2.5, 1e-4, 1.5e-4, 9.99e-5, 0.00011, 123456.789,
					3333333333333330.5, 999999999999999.9, 99999999999999.99, 1e15 + 0.5,
					0.3, 1.0 / 3, 2.0 / 3, 1e-300, 4.9e-324, 1.7976931348623157e308, 9007199254740993.0,
					-9007199254740991.0, 9007199254740992.0, 0.0, -0.0, 1e22, 123.456e-2,
					0.000123456789012345, 0.999999999999999, 0.9999999999999999, 12345678901234.5 };
	char got[JSONV_NUMBER_TEXT], want[JSONV_NUMBER_TEXT];
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		number_text_ref(fixed[i], want);
		ck_assert_int_eq(jsonv_number_text(fixed[i], got), 0);
		ck_assert_msg(strcmp(got, want) == 0, "%.17g: %s, printf %s", fixed[i], got, want);
	}
	for (int i = 0; i < 400000; i++) {
		double v;
		char dec[40];

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		if (i % 4 == 0) {
			/* any bits: mostly 17-digit numbers, some NaN and infinities */
			memcpy(&v, &x, sizeof(v));
		} else {
			/* a decimal of 1 to 17 digits at a scale from 1e-8 to 1e16 */
			int digits = 1 + (int)(x % 17), scale = (int)((x >> 8) % 25) - 8;
			uint64_t m = (x >> 16) % 100000000000000000ULL;

			while (digits < 17 && m >= 10) {
				m /= 10;
				digits++;
			}
			snprintf(dec, sizeof(dec), "%llue%d", (unsigned long long)m, scale - digits);
			v = strtod(dec, NULL);
			if (x & 1)
				v = -v;
		}
		if (!isfinite(v)) {
			ck_assert_int_eq(jsonv_number_text(v, got), -EINVAL);
			continue;
		}
		number_text_ref(v, want);
		ck_assert_int_eq(jsonv_number_text(v, got), 0);
		ck_assert_msg(strcmp(got, want) == 0, "%.17g: %s, printf %s", v, got, want);
	}
}
END_TEST

START_TEST(jsonv_nul_escapes)
{
	ck_assert_int_eq(jsonv_has_nul_escape("\"a\\u0000b\"", 10), 1);
	ck_assert_int_eq(jsonv_has_nul_escape("\"a\\\\u0000b\"", 11), 0); /* escaped backslash, then text */
	ck_assert_int_eq(jsonv_has_nul_escape("\"a\\\\\\u0000b\"", 12), 1);
	ck_assert_int_eq(jsonv_has_nul_escape("\"\\u0001\"", 8), 0);
	ck_assert_int_eq(jsonv_has_nul_escape("\\u000", 5), 0);
}
END_TEST

START_TEST(jsonv_parse_strict)
{
	struct sl_error err = { 0 };
	cJSON *v;

	v = jsonv_parse(" {\"a\":1} \n", 10, "body", NULL);
	ck_assert_ptr_nonnull(v);
	cJSON_Delete(v);
	ck_assert_ptr_null(jsonv_parse("{\"a\":1} x", 10, "body", &err)); /* trailing bytes */
	ck_assert_str_eq(err.field, "body");
	ck_assert_ptr_null(jsonv_parse("{\"a\":\"x\0y\"}", 11, "body", &err)); /* raw NUL */
	ck_assert_ptr_null(jsonv_parse("", 0, "body", &err));
	ck_assert_ptr_null(jsonv_parse("{} {}", 5, "body", &err));
}
END_TEST

START_TEST(jsonv_utf8_and_paths)
{
	cJSON *o = cJSON_CreateObject();
	char *s;

	ck_assert_int_eq(jsonv_utf8_valid("/caf\xc3\xa9", 6), 1);
	ck_assert_int_eq(jsonv_utf8_valid("\xf0\x9f\x98\x80", 4), 1);   /* U+1F600 */
	ck_assert_int_eq(jsonv_utf8_valid("\xff", 1), 0);
	ck_assert_int_eq(jsonv_utf8_valid("\xc3", 1), 0);               /* truncated */
	ck_assert_int_eq(jsonv_utf8_valid("\xc0\xaf", 2), 0);           /* overlong '/' */
	ck_assert_int_eq(jsonv_utf8_valid("\xed\xa0\x80", 3), 0);       /* surrogate */
	ck_assert_int_eq(jsonv_utf8_valid("\xf4\x90\x80\x80", 4), 0);   /* above U+10FFFF */
	jsonv_add_path(o, "path", "/caf\xc3\xa9", 6);
	jsonv_add_path(o, "raw", "/a\xff%b\0c", 7);
	s = cJSON_PrintUnformatted(o);
	ck_assert_str_eq(s, "{\"path\":\"/caf\xc3\xa9\",\"raw\":\"/a%FF%25b%00c\",\"raw_encoding\":\"percent\"}");
	free(s);
	cJSON_Delete(o);
}
END_TEST

START_TEST(layout_keys)
{
	struct layout *l;
	struct strbuf b = { 0 };
	size_t n;

	ck_assert_int_eq(layouts_default("sluice:", &l, &n), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(l[0].name, "leaky_bucket");
	ck_assert_str_eq(l[2].name, "sliding_counter");
	/* key layout 2: no registry set, a due index per shard; every key of shard k tagged {k} */
	ck_assert_ptr_null(l[3].registry);
	ck_assert_int_eq(l[3].foreign, 0);
	ck_assert_str_eq(l[4].key_suffix, "");
	ck_assert_int_eq(layout_shard_registry(&l[3], 7, &b), 0);
	ck_assert_str_eq(b.p, "sluice:{7}:registry:fixed_window");
	b.len = 0;
	ck_assert_int_eq(layout_registry_key(&l[0], "/api/users", 10, &b), 0);
	ck_assert_str_eq(b.p, "sluice:{839}:registry:leaky_bucket"); /* shard_of("/api/users") = 839 */
	b.len = 0;
	ck_assert_int_eq(layout_key(&l[0], "/api/users", 10, 0, &b), 0);
	ck_assert_str_eq(b.p, "sluice:{839}:leaky_bucket:/api/users");
	b.len = 0;
	layout_key(&l[0], "/api/users", 10, 1, &b);
	ck_assert_str_eq(b.p, "sluice:{839}:leaky_bucket_meta:/api/users");
	b.len = 0;
	layout_key(&l[1], "a b\"c", 5, 0, &b);
	ck_assert_str_eq(b.p, "sluice:{393}:sliding_log:a b\"c");
	/* the meta clients are told, whatever the path holds ('}' gave 0.1 an empty hash tag) */
	b.len = 0;
	layout_key(&l[0], "}x", 2, 1, &b);
	ck_assert_str_eq(b.p, "sluice:{410}:leaky_bucket_meta:}x");
	{
		const char *path;
		size_t plen;

		ck_assert_int_eq(layout_path_of(&l[0], "sluice:{410}:leaky_bucket:}x", 28, &path, &plen), 0);
		ck_assert_int_eq(plen, 2);
		ck_assert_int_eq(memcmp(path, "}x", 2), 0);
		/* a key of another shard is not of the layout's shape */
		ck_assert_int_eq(layout_path_of(&l[0], "sluice:{411}:leaky_bucket:}x", 28, &path, &plen), -EINVAL);
	}
	layouts_free(l, n);
	/* a foreign layout: its meta under sluice's prefix, tagged with the data key's slot
	 * (LeakyBucket:/p is in slot 15052, whose tag is "Vr") */
	test_layouts("sluice:", "[{\"name\":\"seed004\",\"algorithm\":\"leaky_bucket\",\"key_prefix\":\"LeakyBucket:\","
		     "\"registry\":\"LeakyBucket::pathSet\"}]", &l, &n);
	ck_assert_uint_eq(n, 6);
	b.len = 0;
	ck_assert_int_eq(layout_key(&l[5], "/p", 2, 0, &b), 0);
	ck_assert_str_eq(b.p, "LeakyBucket:/p");
	b.len = 0;
	ck_assert_int_eq(layout_key(&l[5], "/p", 2, 1, &b), 0);
	ck_assert_str_eq(b.p, "sluice:{Vr}:seed004_meta:LeakyBucket:/p");
	/* a foreign layout not given sluice's prefix (as the config holds it): no meta key */
	free(l[5].meta_prefix);
	l[5].meta_prefix = NULL;
	b.len = 0;
	strbuf_add(&b, "k", 1);
	ck_assert_int_eq(layout_key(&l[5], "/p", 2, 1, &b), -EINVAL);
	ck_assert_str_eq(b.p, "k");
	strbuf_free(&b);
	layouts_free(l, n);
}
END_TEST

START_TEST(log_quote_escapes)
{
	char buf[64];

	ck_assert_str_eq(log_quote(buf, sizeof(buf), "a \"b\"\n\\", 7), "\"a \\\"b\\\"\\x0a\\\\\"");
	ck_assert_str_eq(log_quote(buf, 8, "abcdefghij", 10), "\"abcde\"");
	ck_assert_str_eq(log_quote(buf, sizeof(buf), "x\0y", 3), "\"x\\x00y\"");
}
END_TEST

static Suite *unit_suite(void)
{
	Suite *s = suite_create("unit");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, url_tcp_full);
	tcase_add_test(tc, url_defaults_and_user);
	tcase_add_test(tc, url_unix);
	tcase_add_test(tc, url_node_list);
	tcase_add_loop_test(tc, url_bad, 0, sizeof(bad_urls) / sizeof(bad_urls[0]));
	tcase_add_test(tc, listen_good_and_bad);
	tcase_add_test(tc, config_defaults_values);
	tcase_add_test(tc, config_full_file);
	tcase_add_test(tc, config_skew_bounds);
	tcase_add_loop_test(tc, config_bad_changes_nothing, 0, sizeof(bad_configs) / sizeof(bad_configs[0]));
	tcase_add_test(tc, config_file_missing);
	tcase_add_test(tc, config_file_unreadable_or_too_large);
	tcase_add_test(tc, config_admin_token);
	tcase_add_test(tc, reply_double_scores);
	tcase_add_test(tc, reply_errors_name_the_cause);
	tcase_add_test(tc, config_too_many_layouts);
	tcase_add_test(tc, config_token_too_long);
	tcase_add_test(tc, config_layouts);
	tcase_add_test(tc, flags_override_file);
	tcase_add_test(tc, flags_help_version_and_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("rules");
	tcase_add_test(tc, rule_valid_roundtrip);
	tcase_add_test(tc, rule_rate_text_reads_back_exactly);
	tcase_add_loop_test(tc, rule_invalid_names_field, 0, sizeof(bad_rules) / sizeof(bad_rules[0]));
	tcase_add_test(tc, rule_url_name_must_agree);
	tcase_add_test(tc, rule_mode_round_trip);
	tcase_add_test(tc, rule_glob_run_bound);
	tcase_add_test(tc, ruleset_precedence);
	tcase_add_test(tc, ruleset_match_by_algorithm);
	suite_add_tcase(s, tc);

	tc = tcase_create("scheduler");
	tcase_add_test(tc, sched_on_time);
	tcase_add_test(tc, sched_overrun_skips_slots);
	tcase_add_test(tc, sched_two_jobs_and_failures);
	suite_add_tcase(s, tc);

	tc = tcase_create("json_and_keys");
	tcase_add_test(tc, jsonv_numbers);
	tcase_add_test(tc, jsonv_number_text_is_printf_s);
	tcase_add_test(tc, jsonv_nul_escapes);
	tcase_add_test(tc, jsonv_parse_strict);
	tcase_add_test(tc, jsonv_utf8_and_paths);
	tcase_add_test(tc, layout_keys);
	tcase_add_test(tc, log_quote_escapes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(unit_suite());
}

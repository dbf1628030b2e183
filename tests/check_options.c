/*
 * daemon/options.c: the default config file (read when no --config is given
 * and it exists; absent: the defaults; broken: an error naming it),
 * --no-config, --token-file, --log-format and the config's log_format.
 * The default file's path is given to options_parse() here (a file in
 * /tmp), never the compiled-in one, so the machine's /etc does not matter.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"
#include "daemon/options.h"
#include "tests/harness.h"

static char dir[64];
static char def_path[128], other_path[128];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sluice-options-XXXXXX"); /* anew for each test (CK_FORK=no too) */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(def_path, sizeof(def_path), "%s/sluiced.json", dir);
	snprintf(other_path, sizeof(other_path), "%s/other.json", dir);
}

static void teardown(void)
{
	unlink(def_path);
	unlink(other_path);
	rmdir(dir);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

/* options_parse of the NULL-terminated `argv` with `def` as the default file. */
static int parse(const char *def, struct config *c, const char **used, struct sl_error *err, const char **argv)
{
	enum options_action act;
	int argc = 0;

	while (argv[argc])
		argc++;
	*err = (struct sl_error){ 0 };
	return options_parse(argc, (char **)argv, def, c, &act, used, err);
}

START_TEST(default_absent_gives_defaults)
{
	const char *argv[] = { "sluiced", NULL }, *used = "x";
	struct sl_error err;
	struct config c;

	config_defaults(&c);
	ck_assert_int_eq(parse(def_path, &c, &used, &err, argv), 0);
	ck_assert_ptr_null(used);
	ck_assert_int_eq(c.drain_interval_ms, 100);
	ck_assert_int_eq(c.log_format, LOG_FORMAT_TEXT);
	config_free(&c);
}
END_TEST

START_TEST(default_present_is_read)
{
	const char *argv[] = { "sluiced", "--prune-interval-ms", "700", NULL }, *used = NULL;
	struct sl_error err;
	struct config c;

	write_file(def_path, "{\"drain_interval_ms\": 77, \"prune_interval_ms\": 5000, \"log_format\": \"json\"}");
	config_defaults(&c);
	ck_assert_int_eq(parse(def_path, &c, &used, &err, argv), 0);
	ck_assert_str_eq(used, def_path);
	ck_assert_int_eq(c.drain_interval_ms, 77);
	ck_assert_int_eq(c.prune_interval_ms, 700); /* the flag over the file */
	ck_assert_int_eq(c.log_format, LOG_FORMAT_JSON);
	config_free(&c);
}
END_TEST

/* A broken default file is an error that names it first, then the field. */
START_TEST(default_broken_names_the_file)
{
	static const struct {
		const char *text;
		const char *message;
	} cases[] = {
		{ "{\"drain_interval_ms\": 0}", "drain_interval_ms: must be an integer >= 1" },
		{ "{\"log_format\": \"xml\"}", "log_format: must be text or json" },
		{ "{\"nope\": 1}", "nope: unknown field" },
		{ "{", "config: " },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = { "sluiced", NULL }, *used = NULL;
		struct sl_error err;
		struct config c;

		write_file(def_path, cases[i].text);
		config_defaults(&c);
		ck_assert_int_eq(parse(def_path, &c, &used, &err, argv), -EINVAL);
		ck_assert_str_eq(err.field, def_path);
		ck_assert_msg(!strncmp(err.message, cases[i].message, strlen(cases[i].message)), "%s: %s",
			      cases[i].text, err.message);
		ck_assert_int_eq(c.drain_interval_ms, 100); /* nothing applied */
		config_free(&c);
	}
}
END_TEST

/* Present but not a readable file (a directory): the error names it, as config_apply_file() does. */
START_TEST(default_unreadable_names_the_file)
{
	const char *argv[] = { "sluiced", NULL }, *used = NULL;
	struct sl_error err;
	struct config c;

	ck_assert_int_eq(mkdir(def_path, 0700), 0);
	config_defaults(&c);
	ck_assert_int_ne(parse(def_path, &c, &used, &err, argv), 0);
	ck_assert_str_eq(err.field, def_path);
	ck_assert_str_eq(err.message, "read error");
	config_free(&c);
	ck_assert_int_eq(rmdir(def_path), 0);
}
END_TEST

/* --config replaces the default file; --no-config reads none; both together are refused. */
START_TEST(config_and_no_config)
{
	struct sl_error err;
	struct config c;
	const char *used = NULL;

	write_file(def_path, "{\"drain_interval_ms\": 0}"); /* broken: must not be read */
	write_file(other_path, "{\"drain_interval_ms\": 33}");
	{
		const char *argv[] = { "sluiced", "--config", other_path, NULL };

		config_defaults(&c);
		ck_assert_int_eq(parse(def_path, &c, &used, &err, argv), 0);
		ck_assert_str_eq(used, other_path);
		ck_assert_int_eq(c.drain_interval_ms, 33);
		config_free(&c);
	}
	{
		const char *argv[] = { "sluiced", "--no-config", "--drain-interval-ms", "44", NULL };

		config_defaults(&c);
		used = "x";
		ck_assert_int_eq(parse(def_path, &c, &used, &err, argv), 0);
		ck_assert_ptr_null(used);
		ck_assert_int_eq(c.drain_interval_ms, 44);
		config_free(&c);
	}
	{
		const char *argv[] = { "sluiced", "--no-config", "--config", other_path, NULL };

		config_defaults(&c);
		ck_assert_int_eq(parse(def_path, &c, &used, &err, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--no-config");
		config_free(&c);
	}
	{
		/* a broken --config file is named first, as the default one is */
		const char *argv[] = { "sluiced", "-c", other_path, NULL };

		write_file(other_path, "{\"redis\": 5}");
		config_defaults(&c);
		ck_assert_int_eq(parse(def_path, &c, &used, &err, argv), -EINVAL);
		ck_assert_str_eq(err.field, other_path);
		ck_assert_str_eq(err.message, "redis: must be a string");
		config_free(&c);
	}
	{
		/* --help reads no file at all, even a broken default */
		const char *argv[] = { "sluiced", "--help", NULL };

		config_defaults(&c);
		ck_assert_int_eq(parse(def_path, &c, &used, &err, argv), 0);
		config_free(&c);
	}
	{
		/* NULL: no default file (the tests' way) */
		const char *argv[] = { "sluiced", NULL };

		config_defaults(&c);
		ck_assert_int_eq(parse(NULL, &c, &used, &err, argv), 0);
		ck_assert_ptr_null(used);
		config_free(&c);
	}
}
END_TEST

/* The compiled-in path is $(SYSCONFDIR)/sluice/sluiced.json, absolute. */
START_TEST(compiled_default_path)
{
	const char *p = options_default_config();
	size_t n = strlen(p), t = strlen("/sluice/sluiced.json");

	ck_assert_int_eq(p[0], '/');
	ck_assert_uint_gt(n, t);
	ck_assert_str_eq(p + n - t, "/sluice/sluiced.json");
}
END_TEST

START_TEST(log_format_flag_and_field)
{
	struct sl_error err;
	struct config c;
	const char *used;

	write_file(other_path, "{\"log_format\": \"json\"}");
	{
		const char *argv[] = { "sluiced", "--config", other_path, NULL };

		config_defaults(&c);
		ck_assert_int_eq(parse(NULL, &c, &used, &err, argv), 0);
		ck_assert_int_eq(c.log_format, LOG_FORMAT_JSON);
		config_free(&c);
	}
	{
		const char *argv[] = { "sluiced", "--config", other_path, "--log-format", "text", NULL };

		config_defaults(&c);
		ck_assert_int_eq(parse(NULL, &c, &used, &err, argv), 0);
		ck_assert_int_eq(c.log_format, LOG_FORMAT_TEXT);
		config_free(&c);
	}
	{
		const char *argv[] = { "sluiced", "--log-format", "logfmt", NULL };

		config_defaults(&c);
		ck_assert_int_eq(parse(NULL, &c, &used, &err, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--log-format");
		ck_assert_str_eq(err.message, "must be text or json");
		config_free(&c);
	}
	{
		const char *argv[] = { "sluiced", "--log-format", NULL };

		config_defaults(&c);
		ck_assert_int_eq(parse(NULL, &c, &used, &err, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--log-format");
		config_free(&c);
	}
	/* the field: a string, one of the two */
	config_defaults(&c);
	ck_assert_int_eq(config_apply_json(&c, "{\"log_format\": 1}", 17, &err), -EINVAL);
	ck_assert_str_eq(err.field, "log_format");
	ck_assert_int_eq(config_apply_json(&c, "{\"log_format\": \"Text\"}", 22, &err), -EINVAL);
	ck_assert_str_eq(err.field, "log_format");
	ck_assert_str_eq(err.message, "must be text or json");
	ck_assert_int_eq(c.log_format, LOG_FORMAT_TEXT);
	config_free(&c);
}
END_TEST

START_TEST(token_file_flag)
{
	struct sl_error err;
	struct config c;
	const char *used;

	{
		/* the config's own admin.token_file is named as that field */
		const char *argv[] = { "sluiced", "--config", other_path, NULL };

		write_file(other_path, "{\"admin\": {\"token_file\": \"/nonexistent/from-config\"}}");
		config_defaults(&c);
		ck_assert_int_eq(parse(NULL, &c, &used, &err, argv), 0);
		ck_assert_int_eq(config_load_token(&c, &err), -EINVAL);
		ck_assert_str_eq(err.field, "admin.token_file");
		config_free(&c);
	}
	write_file(other_path, "{\"admin\": {\"token_file\": \"/from/config\"}}");
	write_file(def_path, "s3cret\n");
	{
		const char *argv[] = { "sluiced", "--config", other_path, "--token-file", def_path, NULL };

		config_defaults(&c);
		ck_assert_int_eq(parse(NULL, &c, &used, &err, argv), 0);
		ck_assert_str_eq(c.admin_token_file, def_path);
		ck_assert_int_eq(config_load_token(&c, &err), 0);
		ck_assert_str_eq(c.admin_token, "s3cret");
		config_free(&c);
	}
	{
		const char *argv[] = { "sluiced", "--token-file", "", NULL };

		config_defaults(&c);
		ck_assert_int_eq(parse(NULL, &c, &used, &err, argv), -EINVAL);
		ck_assert_str_eq(err.field, "--token-file");
		config_free(&c);
	}
	{
		/* a file that is not there: named when the token is loaded, as the flag that gave it */
		const char *argv[] = { "sluiced", "--token-file", "/nonexistent/token", NULL };

		config_defaults(&c);
		ck_assert_int_eq(parse(NULL, &c, &used, &err, argv), 0);
		ck_assert_int_eq(config_load_token(&c, &err), -EINVAL);
		ck_assert_str_eq(err.field, "--token-file");
		ck_assert_ptr_nonnull(strstr(err.message, "/nonexistent/token"));
		config_free(&c);
	}
}
END_TEST

static Suite *options_suite(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("default_config");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, default_absent_gives_defaults);
	tcase_add_test(tc, default_present_is_read);
	tcase_add_test(tc, default_broken_names_the_file);
	tcase_add_test(tc, default_unreadable_names_the_file);
	tcase_add_test(tc, config_and_no_config);
	tcase_add_test(tc, compiled_default_path);
	suite_add_tcase(s, tc);

	tc = tcase_create("flags");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, log_format_flag_and_field);
	tcase_add_test(tc, token_file_flag);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(options_suite());
}

/*
 * core/log.h: log_format text and json.  log_json_line() (the tail's
 * key=value members parsed back, as core/log.h documents) without stderr,
 * then log_event() itself with stderr sent to a file.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/log.h"
#include "tests/harness.h"

#define TS "2026-12-01T10:00:00.000Z"

/* log_json_line of `tail`, parsed (caller frees); asserts it is a JSON object with ts, level, event. */
static cJSON *line_of(const char *tail)
{
	char *text = log_json_line(TS, "info", "ev", tail);
	cJSON *j;

	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_null(strchr(text, '\n'));
	j = cJSON_Parse(text);
	ck_assert_msg(cJSON_IsObject(j), "not a JSON object: %s", text);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "ts")->valuestring, TS);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "level")->valuestring, "info");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "event")->valuestring, "ev");
	free(text);
	return j;
}

static const char *str_member(const cJSON *j, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);

	ck_assert_msg(cJSON_IsString(v), "member %s is not a string", k);
	return v->valuestring;
}

static double num_member(const cJSON *j, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);

	ck_assert_msg(cJSON_IsNumber(v), "member %s is not a number", k);
	return v->valuedouble;
}

/* Members of `j` after ts, level and event. */
static int nmembers(const cJSON *j)
{
	return cJSON_GetArraySize(j) - 3;
}

START_TEST(json_plain_members_in_order)
{
	cJSON *j = line_of("job=drain paths=120 ms=3 listen=127.0.0.1:8080");
	const cJSON *it = j->child;
	static const char *const order[] = { "ts", "level", "event", "job", "paths", "ms", "listen" };

	ck_assert_str_eq(str_member(j, "job"), "drain");
	ck_assert(num_member(j, "paths") == 120);
	ck_assert(num_member(j, "ms") == 3);
	ck_assert_str_eq(str_member(j, "listen"), "127.0.0.1:8080");
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++, it = it->next)
		ck_assert_str_eq(it->string, order[i]);
	ck_assert_ptr_null(it);
	cJSON_Delete(j);
}
END_TEST

START_TEST(json_no_tail)
{
	cJSON *j = line_of(NULL);

	ck_assert_int_eq(nmembers(j), 0);
	cJSON_Delete(j);
	j = line_of("");
	ck_assert_int_eq(nmembers(j), 0);
	cJSON_Delete(j);
	j = line_of("   ");
	ck_assert_int_eq(nmembers(j), 0);
	cJSON_Delete(j);
}
END_TEST

/* Integers of up to 15 digits are numbers; anything else bare is a string, as written. */
START_TEST(json_numbers_and_strings)
{
	cJSON *j = line_of("a=0 b=-5 c=007 d=1234567890123456 e=1.5 f=123456789012345 g=-0 h=- i= j=12x k=true");

	ck_assert(num_member(j, "a") == 0);
	ck_assert(num_member(j, "b") == -5);
	ck_assert_str_eq(str_member(j, "c"), "007");
	ck_assert_str_eq(str_member(j, "d"), "1234567890123456");
	ck_assert_str_eq(str_member(j, "e"), "1.5");
	ck_assert(num_member(j, "f") == 123456789012345.0);
	ck_assert(num_member(j, "g") == 0);
	ck_assert_str_eq(str_member(j, "h"), "-");
	ck_assert_str_eq(str_member(j, "i"), "");
	ck_assert_str_eq(str_member(j, "j"), "12x");
	ck_assert_str_eq(str_member(j, "k"), "true");
	cJSON_Delete(j);
	/* a quoted number stays a string */
	j = line_of("version=\":0\" n=\"42\"");
	ck_assert_str_eq(str_member(j, "version"), ":0");
	ck_assert_str_eq(str_member(j, "n"), "42");
	cJSON_Delete(j);
}
END_TEST

/* What log_quote() writes comes back as the bytes it was given. */
START_TEST(json_quoted_round_trip)
{
	static const struct {
		const char *s;
		size_t len;
	} cases[] = {
		{ "a \"b\" \\ c", 9 },
		{ "line\nbreak\ttab\x01\x7f", 16 },
		{ "/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80", 15 }, /* é, €, an emoji: valid UTF-8 */
		{ "key=value with = and \"quotes\"", 29 },
		{ "", 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char q[256], tail[300];
		cJSON *j;

		log_quote(q, sizeof(q), cases[i].s, cases[i].len);
		snprintf(tail, sizeof(tail), "path=%s after=1", q);
		j = line_of(tail);
		ck_assert_int_eq(strlen(str_member(j, "path")), cases[i].len);
		ck_assert_msg(memcmp(str_member(j, "path"), cases[i].s, cases[i].len) == 0, "case %zu: %s", i,
			      str_member(j, "path"));
		ck_assert(num_member(j, "after") == 1);
		cJSON_Delete(j);
	}
}
END_TEST

/* Bytes that are not UTF-8 (or a NUL) keep their escaped text: JSON must stay valid. */
START_TEST(json_bad_utf8_kept_escaped)
{
	static const struct {
		const char *s;
		size_t len;
		const char *want;
	} cases[] = {
		{ "\xff/x", 3, "\\xff/x" },
		{ "\xc0\x80", 2, "\\xc0\\x80" },                 /* overlong NUL */
		{ "\xed\xa0\x80", 3, "\\xed\\xa0\\x80" },        /* a surrogate */
		{ "\xf4\x90\x80\x80", 4, "\\xf4\\x90\\x80\\x80" }, /* past U+10FFFF */
		{ "ab\xe2\x82", 4, "ab\\xe2\\x82" },             /* cut sequence */
		{ "x\0y", 3, "x\\x00y" },                        /* NUL */
		{ "\\\xff", 2, "\\\\\\xff" },                    /* the text as written, backslash escaped too */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char q[64], tail[100];
		cJSON *j;

		log_quote(q, sizeof(q), cases[i].s, cases[i].len);
		snprintf(tail, sizeof(tail), "path=%s", q);
		j = line_of(tail);
		ck_assert_str_eq(str_member(j, "path"), cases[i].want);
		cJSON_Delete(j);
	}
}
END_TEST

START_TEST(json_unterminated_quote_and_words)
{
	cJSON *j = line_of("a=1 reason=\"cut in the midd");

	ck_assert_str_eq(str_member(j, "reason"), "cut in the midd");
	cJSON_Delete(j);
	j = line_of("hello a=1 world reason=\"x\" !");
	ck_assert_str_eq(str_member(j, "msg"), "hello world !");
	ck_assert_str_eq(str_member(j, "reason"), "x");
	ck_assert_int_eq(nmembers(j), 3);
	cJSON_Delete(j);
	/* a trailing backslash inside a cut quote */
	j = line_of("e=\"abc\\");
	ck_assert_str_eq(str_member(j, "e"), "abc\\");
	cJSON_Delete(j);
}
END_TEST

/* No member twice: the fixed three and repeated keys get a leading '_'. */
START_TEST(json_keys_never_twice)
{
	cJSON *j = line_of("level=x event=y ts=z a=1 a=2 a=3 =e msg=m w");

	ck_assert_str_eq(str_member(j, "level"), "info");
	ck_assert_str_eq(str_member(j, "_level"), "x");
	ck_assert_str_eq(str_member(j, "_event"), "y");
	ck_assert_str_eq(str_member(j, "_ts"), "z");
	ck_assert(num_member(j, "a") == 1);
	ck_assert(num_member(j, "_a") == 2);
	ck_assert(num_member(j, "__a") == 3);
	ck_assert_str_eq(str_member(j, "_"), "e");
	ck_assert_str_eq(str_member(j, "msg"), "m");
	ck_assert_str_eq(str_member(j, "_msg"), "w");
	for (const cJSON *a = j->child; a; a = a->next)
		for (const cJSON *b = a->next; b; b = b->next)
			ck_assert_str_ne(a->string, b->string);
	cJSON_Delete(j);
}
END_TEST

START_TEST(format_parse)
{
	enum log_format f = LOG_FORMAT_JSON;

	ck_assert_int_eq(log_format_parse("text", &f), 0);
	ck_assert_int_eq(f, LOG_FORMAT_TEXT);
	ck_assert_int_eq(log_format_parse("json", &f), 0);
	ck_assert_int_eq(f, LOG_FORMAT_JSON);
	ck_assert_int_eq(log_format_parse("JSON", &f), -EINVAL);
	ck_assert_int_eq(log_format_parse("", &f), -EINVAL);
	ck_assert_int_eq(log_format_parse("logfmt", &f), -EINVAL);
	ck_assert_int_eq(f, LOG_FORMAT_JSON); /* untouched on error */
	ck_assert_str_eq(log_format_name(LOG_FORMAT_TEXT), "text");
	ck_assert_str_eq(log_format_name(LOG_FORMAT_JSON), "json");
}
END_TEST

/* Run log_event()s with stderr in a file; returns what they wrote (caller frees). */
static char *capture(enum log_format fmt, void (*emit)(void))
{
	char path[] = "/tmp/sluice-log-XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	char *buf = calloc(1, 65536);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	ck_assert_ptr_nonnull(buf);
	fflush(stderr);
	dup2(fd, 2);
	log_set_format(fmt);
	log_set_level(LOG_INFO);
	emit();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	log_set_format(LOG_FORMAT_TEXT);
	log_set_level(LOG_ERROR);
	n = pread(fd, buf, 65535, 0);
	ck_assert_int_ge(n, 0);
	close(fd);
	unlink(path);
	return buf;
}

static void emit_some(void)
{
	char q[64], big[2000];

	log_event(LOG_DEBUG, "hidden", "x=1"); /* under the threshold: nothing */
	log_event(LOG_INFO, "started", "version=%s listen=%s:%d rules=%zu", "0.1.0", "127.0.0.1", 8080, (size_t)5);
	log_event(LOG_WARN, "http_error", "message=%s", log_quote(q, sizeof(q), "bad \"x\"", 7));
	log_event(LOG_INFO, "stopped", NULL);
	/* a tail over the 1024 bytes log_event keeps: cut inside the quote */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_event(LOG_ERROR, "long", "n=1 reason=\"%s\"", big);
}

START_TEST(event_json_lines)
{
	char *out = capture(LOG_FORMAT_JSON, emit_some), *save = NULL;
	static const char *const events[] = { "started", "http_error", "stopped", "long" };
	static const char *const levels[] = { "info", "warn", "info", "error" };
	size_t i = 0;

	for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		cJSON *j = cJSON_Parse(line);
		const cJSON *ts;

		ck_assert_msg(cJSON_IsObject(j), "line %zu is not a JSON object: %.200s", i, line);
		ck_assert_uint_lt(i, 4);
		ck_assert_str_eq(str_member(j, "event"), events[i]);
		ck_assert_str_eq(str_member(j, "level"), levels[i]);
		ts = cJSON_GetObjectItemCaseSensitive(j, "ts");
		ck_assert_msg(cJSON_IsString(ts) && strlen(ts->valuestring) == 24 && ts->valuestring[10] == 'T' &&
				      ts->valuestring[23] == 'Z',
			      "ts: %s", line);
		if (i == 0) {
			ck_assert_str_eq(str_member(j, "version"), "0.1.0");
			ck_assert_str_eq(str_member(j, "listen"), "127.0.0.1:8080");
			ck_assert(num_member(j, "rules") == 5);
		} else if (i == 1) {
			ck_assert_str_eq(str_member(j, "message"), "bad \"x\"");
		} else if (i == 2) {
			ck_assert_int_eq(nmembers(j), 0);
		} else {
			ck_assert(num_member(j, "n") == 1);
			ck_assert_uint_gt(strlen(str_member(j, "reason")), 900);
		}
		cJSON_Delete(j);
	}
	ck_assert_uint_eq(i, 4);
	free(out);
}
END_TEST

static int starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The text format as it was: "<ts> level=<level> event=<event> <tail>". */
START_TEST(event_text_lines)
{
	char *out = capture(LOG_FORMAT_TEXT, emit_some);
	char *l1 = out, *l2 = strchr(l1, '\n') + 1, *l3 = strchr(l2, '\n') + 1;

	ck_assert_int_eq(l1[23], 'Z');
	ck_assert_msg(starts(l1 + 24, " level=info event=started version=0.1.0 listen=127.0.0.1:8080 rules=5\n"), "%s", l1);
	ck_assert_msg(starts(l2 + 24, " level=warn event=http_error message=\"bad \\\"x\\\"\"\n"), "%s", l2);
	ck_assert_msg(starts(l3 + 24, " level=info event=stopped\n"), "%s", l3);
	free(out);
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("json_line");

	tcase_add_test(tc, json_plain_members_in_order);
	tcase_add_test(tc, json_no_tail);
	tcase_add_test(tc, json_numbers_and_strings);
	tcase_add_test(tc, json_quoted_round_trip);
	tcase_add_test(tc, json_bad_utf8_kept_escaped);
	tcase_add_test(tc, json_unterminated_quote_and_words);
	tcase_add_test(tc, json_keys_never_twice);
	tcase_add_test(tc, format_parse);
	suite_add_tcase(s, tc);

	tc = tcase_create("event");
	tcase_add_test(tc, event_json_lines);
	tcase_add_test(tc, event_text_lines);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(log_suite());
}

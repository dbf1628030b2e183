#include "core/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Owned by main: written by log_set_level() and log_set_format() before threads start. */
static enum log_level threshold = LOG_INFO;
static enum log_format format = LOG_FORMAT_TEXT;

static const char *const names[] = { "debug", "info", "warn", "error" };
static const char *const format_names[] = { "text", "json" };

void log_set_level(enum log_level lvl)
{
	threshold = lvl;
}

void log_set_format(enum log_format fmt)
{
	format = fmt;
}

int log_format_parse(const char *s, enum log_format *out)
{
	for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
		if (strcmp(s, format_names[i]) == 0) {
			*out = (enum log_format)i;
			return 0;
		}
	return -EINVAL;
}

const char *log_format_name(enum log_format fmt)
{
	return fmt == LOG_FORMAT_JSON ? "json" : "text";
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	return -EINVAL;
}

void log_event(enum log_level lvl, const char *event, const char *fmt, ...)
{
	char tail[1024] = "";
	char stamp[40];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	size_t n;

	if (lvl < threshold)
		return;
	clock_gettime(CLOCK_REALTIME, &ts); /* display only */
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp + n, sizeof(stamp) - n, ".%03ldZ", ts.tv_nsec / 1000000L);
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(tail, sizeof(tail), fmt, ap);
		va_end(ap);
	}
	if (format == LOG_FORMAT_JSON) {
		char *line = log_json_line(stamp, names[lvl], event, tail);

		if (line) {
			fprintf(stderr, "%s\n", line);
			free(line);
			return;
		}
		/* out of memory: the text line below, rather than nothing */
	}
	fprintf(stderr, "%s level=%s event=%s%s%s\n", stamp, names[lvl], event, *tail ? " " : "", tail);
}

const char *log_quote(char *buf, size_t cap, const char *s, size_t len)
{
	size_t o = 0;

	if (cap < 3) {
		if (cap)
			buf[0] = '\0';
		return buf;
	}
	buf[o++] = '"';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[5];
		size_t n;

		if (c == '"' || c == '\\')
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		else
			n = (size_t)snprintf(tmp, sizeof(tmp), "%c", c);
		if (o + n + 2 > cap)
			break;
		memcpy(buf + o, tmp, n);
		o += n;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

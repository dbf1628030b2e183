#ifndef SLUICE_LOG_H
#define SLUICE_LOG_H
/*
 * One line per event on stderr, in one of two formats (config "log_format"):
 *
 *   text (default):
 *     2026-11-30T03:49:41.123Z level=info event=sweep_done job=drain paths=120 ms=3
 *   json (one object per line, cJSON):
 *     {"ts":"2026-11-30T03:49:41.123Z","level":"info","event":"sweep_done","job":"drain","paths":120,"ms":3}
 *
 * The caller passes the key=value tail as a printf format.  Values that may hold
 * spaces or quotes (paths, error strings) go through log_quote() first; in json
 * the tail is parsed back into members (log_json_line()).
 * Thread-safe: each line is written with one stdio call.
 */
#include <stdarg.h>
#include <stddef.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };
enum log_format { LOG_FORMAT_TEXT = 0, LOG_FORMAT_JSON };

/* Set the threshold once, from main, before any thread starts. */
void log_set_level(enum log_level lvl);
/* Parse "debug|info|warn|error"; returns 0 and writes *out, or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);
/* Set the line format once, from main, before any thread starts. */
void log_set_format(enum log_format fmt);
/* Parse "text|json"; returns 0 and writes *out, or -EINVAL (*out untouched). */
int log_format_parse(const char *s, enum log_format *out);
/* "text" or "json" (static storage). */
const char *log_format_name(enum log_format fmt);

/* Log event `event` at level `lvl`; `fmt` (may be NULL) formats the key=value tail. */
void log_event(enum log_level lvl, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Quote `s` (length `len`) for a log value: double quotes, with \" \\ and
 * non-printable bytes escaped as \xNN; cut to fit `cap` bytes (NUL included).
 * Returns `buf`.
 */
const char *log_quote(char *buf, size_t cap, const char *s, size_t len);

/*
 * The json line (no newline) of one event: members "ts" (`ts`, borrowed),
 * "level" (`level`), "event" (`event`), then one member per `key=value` of
 * `tail` (borrowed, may be NULL or empty), in their order:
 *   - a value in double quotes (as log_quote() writes it) is a string, its
 *     escapes undone (\" \\ \xNN); when the bytes it gives are not valid
 *     UTF-8, the string is the escaped text as written (between the quotes);
 *     an unterminated quote (a cut line) runs to the end;
 *   - a bare value that is a decimal integer of at most 15 digits (exact in
 *     a double) is a number; any other bare value is a string;
 *   - a key that is empty, repeats an earlier key or is ts, level or event
 *     gets a leading '_' (until it is new): a line never has a member twice;
 *   - words without '=' are joined, space-separated, into a member "msg".
 * Returns a malloc'd string the caller frees, or NULL when memory ran out.
 */
char *log_json_line(const char *ts, const char *level, const char *event, const char *tail);

#endif

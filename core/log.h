#ifndef SLUICE_LOG_H
#define SLUICE_LOG_H
/*
 * One line per event on stderr:
 *   2026-11-30T03:49:41.123Z level=info event=sweep_done job=drain paths=120 ms=3
 * The caller passes the key=value tail as a printf format.  Values that may hold
 * spaces or quotes (paths, error strings) go through log_quote() first.
 * Thread-safe: each line is written with one stdio call.
 */
#include <stdarg.h>
#include <stddef.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Set the threshold once, from main, before any thread starts. */
void log_set_level(enum log_level lvl);
/* Parse "debug|info|warn|error"; returns 0 and writes *out, or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);

/* Log event `event` at level `lvl`; `fmt` (may be NULL) formats the key=value tail. */
void log_event(enum log_level lvl, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Quote `s` (length `len`) for a log value: double quotes, with \" \\ and
 * non-printable bytes escaped as \xNN; cut to fit `cap` bytes (NUL included).
 * Returns `buf`.
 */
const char *log_quote(char *buf, size_t cap, const char *s, size_t len);

#endif

/*
 * The Prometheus text format 0.0.4's pieces for GET /metrics: a metric's
 * HELP and TYPE lines, and one formatted sample line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "admin/metrics.h"

/* Append one formatted piece (at most 511 bytes) to `b`.  0 or -ENOMEM. */
int metrics_printf(struct strbuf *b, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -ENOMEM;
	return strbuf_add(b, line, (size_t)n);
}

/* The "# HELP" and "# TYPE" lines of metric `name`.  0 or -ENOMEM. */
int metrics_head(struct strbuf *b, const char *name, const char *type, const char *help)
{
	return metrics_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}


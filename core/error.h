#ifndef SLUICE_ERROR_H
#define SLUICE_ERROR_H
/*
 * A validation error that names the offending field, for config files, flags
 * and admin API bodies alike:  field="rules[1].rate", message="must be a number > 0".
 */
#include <stdio.h>

struct sl_error {
	char field[128];
	char message[256];
};

/* Fill `err` (may be NULL); always returns -EINVAL so callers can `return sl_fail(...)`. */
int sl_fail(struct sl_error *err, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif

#include "core/error.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

int sl_fail(struct sl_error *err, const char *field, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -EINVAL;
	snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

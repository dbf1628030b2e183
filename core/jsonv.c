#include "core/jsonv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int jsonv_int(const cJSON *item, const char *field, int64_t min, int64_t *out, struct sl_error *err)
{
	double d;

	if (!cJSON_IsNumber(item))
		return sl_fail(err, field, "must be an integer");
	d = item->valuedouble;
	if (!isfinite(d) || d != floor(d))
		return sl_fail(err, field, "must be an integer");
	if (d >= (double)JSONV_LIMIT)
		return sl_fail(err, field, "must be below 2^53 (at most 9007199254740991)");
	if (d < (double)min)
		return sl_fail(err, field, "must be an integer >= %lld", (long long)min);
	*out = (int64_t)d;
	return 0;
}

int jsonv_positive(const cJSON *item, const char *field, int allow_zero, double *out,
		   struct sl_error *err)
{
	double d;

	if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble))
		return sl_fail(err, field, "must be a number");
	d = item->valuedouble;
	if (d < 0 || (!allow_zero && d == 0))
		return sl_fail(err, field, "must be a number %s 0", allow_zero ? ">=" : ">");
	if (d >= (double)JSONV_LIMIT)
		return sl_fail(err, field, "must be below 2^53 (9007199254740992)");
	*out = d;
	return 0;
}

int jsonv_string(const cJSON *item, const char *field, const char **out, struct sl_error *err)
{
	if (!cJSON_IsString(item) || !item->valuestring)
		return sl_fail(err, field, "must be a string");
	*out = item->valuestring;
	return 0;
}

static cJSON *raw_int(int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	return cJSON_CreateRaw(buf);
}

int jsonv_add_int(cJSON *obj, const char *name, int64_t v)
{
	cJSON *n = raw_int(v);

	if (!n || !cJSON_AddItemToObject(obj, name, n)) {
		cJSON_Delete(n);
		return -ENOMEM;
	}
	return 0;
}

int jsonv_push_int(cJSON *arr, int64_t v)
{
	cJSON *n = raw_int(v);

	if (!n || !cJSON_AddItemToArray(arr, n)) {
		cJSON_Delete(n);
		return -ENOMEM;
	}
	return 0;
}

int jsonv_add_strn(cJSON *obj, const char *name, const char *s, size_t len)
{
	char *copy = strndup(s, len);
	cJSON *str;

	if (!copy)
		return -ENOMEM;
	str = cJSON_CreateString(copy);
	free(copy);
	if (!str || !cJSON_AddItemToObject(obj, name, str)) {
		cJSON_Delete(str);
		return -ENOMEM;
	}
	return 0;
}

int jsonv_has_nul_escape(const char *text, size_t len)
{
	for (size_t i = 0; i + 5 < len; i++) {
		size_t bs = 0;

		if (text[i] != '\\' || memcmp(text + i + 1, "u0000", 5) != 0)
			continue;
		while (bs < i && text[i - 1 - bs] == '\\')
			bs++;
		if (bs % 2 == 0)
			return 1; /* this backslash is not itself escaped */
	}
	return 0;
}

const char *jsonv_duplicate_key(const cJSON *obj)
{
	for (const cJSON *a = obj ? obj->child : NULL; a; a = a->next)
		for (const cJSON *b = a->next; b; b = b->next)
			if (a->string && b->string && strcmp(a->string, b->string) == 0)
				return a->string;
	return NULL;
}

int jsonv_add_number(cJSON *obj, const char *name, double v)
{
	if (v == floor(v) && fabs(v) < (double)JSONV_LIMIT)
		return jsonv_add_int(obj, name, (int64_t)v);
	if (!cJSON_AddNumberToObject(obj, name, v))
		return -ENOMEM;
	return 0;
}

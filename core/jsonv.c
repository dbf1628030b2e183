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
	char text[32];
	cJSON *n;

	if (v == floor(v) && fabs(v) < (double)JSONV_LIMIT)
		return jsonv_add_int(obj, name, (int64_t)v);
	if (!isfinite(v))
		return cJSON_AddNullToObject(obj, name) ? 0 : -ENOMEM;
	/*
	 * The shortest text that reads back as exactly v, as raw JSON: cJSON's
	 * own printing keeps 15 digits when they read back within an epsilon, so
	 * 3333333333333330.5 printed as 3.33333333333333e+15 (a rule read back
	 * from its stored text had another rate, its text another ETag).
	 */
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(text, sizeof(text), "%.*g", digits, v);
		if (strtod(text, NULL) == v)
			break;
	}
	n = cJSON_CreateRaw(text);
	if (!n || !cJSON_AddItemToObject(obj, name, n)) {
		cJSON_Delete(n);
		return -ENOMEM;
	}
	return 0;
}

cJSON *jsonv_parse(const char *text, size_t len, const char *field, struct sl_error *err)
{
	const char *end = NULL;
	char *copy;
	cJSON *v;

	if (len == 0) {
		sl_fail(err, field, "is empty; a JSON value is required");
		return NULL;
	}
	if (memchr(text, '\0', len) || jsonv_has_nul_escape(text, len)) {
		sl_fail(err, field, "must not contain NUL bytes or \\u0000");
		return NULL;
	}
	/* cJSON rejects trailing bytes only in a NUL-terminated buffer */
	if (!(copy = malloc(len + 1))) {
		sl_fail(err, field, "out of memory");
		return NULL;
	}
	memcpy(copy, text, len);
	copy[len] = '\0';
	v = cJSON_ParseWithLengthOpts(copy, len + 1, &end, 1);
	if (!v)
		sl_fail(err, field, "is not valid JSON (near byte %zu)", end ? (size_t)(end - copy) : (size_t)0);
	free(copy);
	return v;
}

int jsonv_utf8_valid(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i];
		size_t n;
		unsigned cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (i + n >= len)
			return 0; /* truncated sequence */
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}

int jsonv_add_path(cJSON *obj, const char *name, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	char enc_name[64];
	char *out;
	size_t o = 0;
	int rc;

	if (!memchr(s, '\0', len) && jsonv_utf8_valid(s, len))
		return jsonv_add_strn(obj, name, s, len);
	if (!(out = malloc(3 * len + 1)))
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c > 0x20 && c < 0x7f && c != '%') {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	rc = jsonv_add_strn(obj, name, out, o);
	free(out);
	snprintf(enc_name, sizeof(enc_name), "%s_encoding", name);
	if (!rc && !cJSON_AddStringToObject(obj, enc_name, "percent"))
		rc = -ENOMEM;
	return rc;
}

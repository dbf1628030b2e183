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

/* `v` in decimal into `buf` (at least 21 bytes), NUL-terminated: snprintf's "%lld", without its cost. */
static void int_text(int64_t v, char *buf)
{
	char tmp[20];
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	size_t n = 0, o = 0;

	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		buf[o++] = '-';
	while (n)
		buf[o++] = tmp[--n];
	buf[o] = '\0';
}

cJSON *jsonv_int_item(int64_t v)
{
	char buf[24];

	int_text(v, buf);
	return cJSON_CreateRaw(buf);
}

/* Add `item` (NULL: -ENOMEM) to `obj` as `name` (copied). */
static int add_item(cJSON *obj, const char *name, cJSON *item)
{
	if (!item || !cJSON_AddItemToObject(obj, name, item)) {
		cJSON_Delete(item);
		return -ENOMEM;
	}
	return 0;
}

int jsonv_add_int(cJSON *obj, const char *name, int64_t v)
{
	return add_item(obj, name, jsonv_int_item(v));
}

int jsonv_push_int(cJSON *arr, int64_t v)
{
	cJSON *n = jsonv_int_item(v);

	if (!n || !cJSON_AddItemToArray(arr, n)) {
		cJSON_Delete(n);
		return -ENOMEM;
	}
	return 0;
}

cJSON *jsonv_strn_item(const char *s, size_t len)
{
	char *copy = strndup(s, len);
	cJSON *str;

	if (!copy)
		return NULL;
	str = cJSON_CreateString(copy);
	free(copy);
	return str;
}

int jsonv_add_strn(cJSON *obj, const char *name, const char *s, size_t len)
{
	return add_item(obj, name, jsonv_strn_item(s, len));
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

/*
 * The text "%.15g" gives for a non-integral finite `v` when it is short: a
 * decimal of at most 15 significant digits that reads back as exactly `v`,
 * and from 1e-4 up (where "%.15g" prints no exponent).  Such a decimal is
 * the 15-digit rounding of `v` (a double's half-ulp is under 1.2e-16 of it,
 * the 15-digit decimals are at least 1e-15 of it apart), so "%.15g" prints
 * it, trailing zeros dropped.  r / 10^k is exact arithmetic on exact
 * operands (r < 2^53, 10^k <= 10^22), so it is the double strtod reads the
 * decimal r x 10^-k as.  1 and the text in `buf` (at least 32 bytes), or 0
 * (then the general search below).
 */
static int short_decimal(double v, char *buf)
{
	static const double pow10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
					1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19 };
	double a = fabs(v);

	if (!(a >= 1e-4 && a < 1e15))
		return 0;
	for (int k = 1; k < (int)(sizeof(pow10) / sizeof(pow10[0])); k++) {
		double m = a * pow10[k], r;
		char digits[24];
		int n, o = 0, lead;

		if (m >= 1e15)
			return 0; /* 16 digits or more */
		r = nearbyint(m);
		if (r / pow10[k] != a)
			continue;
		int_text((int64_t)r, digits);
		n = (int)strlen(digits);
		if (v < 0)
			buf[o++] = '-';
		if (n > k) {
			memcpy(buf + o, digits, (size_t)(n - k));
			o += n - k;
			buf[o++] = '.';
			memcpy(buf + o, digits + n - k, (size_t)k);
			o += k;
		} else {
			buf[o++] = '0';
			buf[o++] = '.';
			for (lead = 0; lead < k - n; lead++)
				buf[o++] = '0';
			memcpy(buf + o, digits, (size_t)n);
			o += n;
		}
		while (buf[o - 1] == '0') /* a guard: the smallest k leaves no trailing zero */
			o--;
		buf[o] = '\0';
		return 1;
	}
	return 0;
}

int jsonv_number_text(double v, char *buf)
{
	if (!isfinite(v))
		return -EINVAL;
	if (v == floor(v) && fabs(v) < (double)JSONV_LIMIT) {
		int_text((int64_t)v, buf);
		return 0;
	}
	if (short_decimal(v, buf))
		return 0;
	/*
	 * The shortest text that reads back as exactly v: cJSON's own printing
	 * keeps 15 digits when they read back within an epsilon, so
	 * 3333333333333330.5 printed as 3.33333333333333e+15 (a rule read back
	 * from its stored text had another rate, its text another ETag).
	 */
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(buf, JSONV_NUMBER_TEXT, "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return 0;
}

cJSON *jsonv_number_item(double v)
{
	char text[JSONV_NUMBER_TEXT];

	return jsonv_number_text(v, text) ? cJSON_CreateNull() : cJSON_CreateRaw(text);
}

int jsonv_add_number(cJSON *obj, const char *name, double v)
{
	return add_item(obj, name, jsonv_number_item(v));
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

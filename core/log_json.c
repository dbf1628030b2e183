/*
 * log_format "json": an event's key=value tail (core/log.h) parsed back into
 * the members of one JSON object, written by cJSON.
 */
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Longest key kept, bytes (a longer one is cut): keys are short words. */
#define KEY_MAX 64

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 1 when the `n` bytes at `s` are valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF). */
static int utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i], need, cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3, cp = c & 0x07;
		else
			return 0;
		if (i + need >= n)
			return 0;
		for (unsigned k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((need == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (need == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return 0;
		i += need + 1;
	}
	return 1;
}

/*
 * A quoted value at *p (just past the opening quote): its string, malloc'd,
 * and *p past the closing quote (or at the end of an unterminated one).
 * NULL when memory ran out.
 */
static char *quoted_value(const char **p)
{
	const char *s = *p, *raw = s;
	size_t cap = strlen(s) + 1, o = 0;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	while (*s && *s != '"') {
		if (s[0] == '\\' && (s[1] == '"' || s[1] == '\\')) {
			out[o++] = s[1];
			s += 2;
		} else if (s[0] == '\\' && s[1] == 'x' && hexval(s[2]) >= 0 && hexval(s[3]) >= 0) {
			out[o++] = (char)(hexval(s[2]) * 16 + hexval(s[3]));
			s += 4;
		} else {
			out[o++] = *s++;
		}
	}
	out[o] = '\0';
	/* a NUL byte (\x00) would cut the string, and bad UTF-8 is not JSON: keep the text as written */
	if (memchr(out, '\0', o) || !utf8_valid((const unsigned char *)out, o)) {
		memcpy(out, raw, (size_t)(s - raw));
		out[s - raw] = '\0';
	}
	*p = *s == '"' ? s + 1 : s;
	return out;
}

/* 1 when `s` (`n` bytes) is a decimal integer of 1..15 digits: exact as a double. */
static int small_integer(const char *s, size_t n)
{
	size_t i = s[0] == '-';

	if (n == i || n - i > 15 || (s[i] == '0' && n - i > 1))
		return 0;
	for (; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* Add `item` (owned) under `key`, with leading '_' until the name is new.  0, or -1 (item freed). */
static int add_member(cJSON *obj, const char *key, size_t klen, cJSON *item)
{
	char name[KEY_MAX + 1 + 8];
	size_t u = 0;

	if (!item)
		return -1;
	if (klen > KEY_MAX)
		klen = KEY_MAX;
	for (;;) {
		memset(name, '_', u);
		memcpy(name + u, key, klen);
		name[u + klen] = '\0';
		if (*name && !cJSON_GetObjectItemCaseSensitive(obj, name))
			break;
		if (++u > 8) { /* pathological: the member is dropped, not written twice */
			cJSON_Delete(item);
			return 0;
		}
	}
	if (!cJSON_AddItemToObject(obj, name, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

/* Append the word `w` (`n` bytes) to the "msg" text, space-separated.  0, or -1. */
static int add_word(char **msg, const char *w, size_t n)
{
	size_t have = *msg ? strlen(*msg) : 0;
	char *m = realloc(*msg, have + n + 2);

	if (!m)
		return -1;
	if (have)
		m[have++] = ' ';
	memcpy(m + have, w, n);
	m[have + n] = '\0';
	*msg = m;
	return 0;
}

/* The members of `tail` into `obj`.  0, or -1 when memory ran out. */
static int parse_tail(cJSON *obj, const char *p)
{
	char *msg = NULL;
	int rc = 0;

	while (!rc) {
		const char *key, *eq, *v;
		cJSON *item;

		while (is_space(*p))
			p++;
		if (!*p)
			break;
		key = p;
		while (*p && *p != '=' && !is_space(*p))
			p++;
		if (*p != '=') {
			rc = add_word(&msg, key, (size_t)(p - key));
			continue;
		}
		eq = p++;
		if (*p == '"') {
			char *s;

			p++;
			if (!(s = quoted_value(&p))) {
				rc = -1;
				break;
			}
			item = cJSON_CreateString(s);
			free(s);
		} else {
			char tmp[32];
			size_t n;

			v = p;
			while (*p && !is_space(*p))
				p++;
			n = (size_t)(p - v);
			if (small_integer(v, n)) {
				memcpy(tmp, v, n);
				tmp[n] = '\0';
				item = cJSON_CreateNumber((double)strtoll(tmp, NULL, 10));
			} else {
				char *s = strndup(v, n);

				item = s ? cJSON_CreateString(s) : NULL;
				free(s);
			}
		}
		rc = add_member(obj, key, (size_t)(eq - key), item);
	}
	if (!rc && msg)
		rc = add_member(obj, "msg", 3, cJSON_CreateString(msg));
	free(msg);
	return rc;
}

char *log_json_line(const char *ts, const char *level, const char *event, const char *tail)
{
	cJSON *obj = cJSON_CreateObject();
	char *line = NULL;

	if (!obj || !cJSON_AddStringToObject(obj, "ts", ts) || !cJSON_AddStringToObject(obj, "level", level) ||
	    !cJSON_AddStringToObject(obj, "event", event))
		goto out;
	if (tail && parse_tail(obj, tail))
		goto out;
	line = cJSON_PrintUnformatted(obj);
out:
	cJSON_Delete(obj);
	return line;
}

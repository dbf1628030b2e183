#ifndef SLUICE_JSONV_H
#define SLUICE_JSONV_H
/*
 * Checked reads of cJSON numbers and exact writes of integers.  cJSON keeps
 * numbers as doubles; an integer field is accepted only when the double is
 * integral and within [min, 2^53 - 1].  2^53 itself is refused: 2^53 + 1 is
 * read as the same double, so accepting it would accept a number that was not
 * written; the Lua scripts draw the same line.
 */
#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/error.h"

#define JSONV_LIMIT 9007199254740992LL /* 2^53: every accepted number is below it */

/*
 * Read integer `item` into *out: 0 on success; -EINVAL (with `err` naming
 * `field`) when it is not a number, not integral, below `min` or not below 2^53.
 */
int jsonv_int(const cJSON *item, const char *field, int64_t min, int64_t *out, struct sl_error *err);
/* Read a finite number > 0 (or >= 0 when `allow_zero`) into *out; -EINVAL as above. */
int jsonv_positive(const cJSON *item, const char *field, int allow_zero, double *out,
		   struct sl_error *err);
/* Read a string into *out (borrowed from `item`); -EINVAL when not a string. */
int jsonv_string(const cJSON *item, const char *field, const char **out, struct sl_error *err);

/*
 * Parse `len` bytes of JSON text as exactly one value (whitespace around it
 * only).  Refuses what cJSON would silently cut: raw NUL bytes and \u0000
 * escapes.  Returns the value (caller cJSON_Delete's), or NULL with a reason
 * in `err` (field = `field`).
 */
cJSON *jsonv_parse(const char *text, size_t len, const char *field, struct sl_error *err);
/* 1 when `s` (`len` bytes) is valid UTF-8 (RFC 3629: no overlongs, no surrogates). */
int jsonv_utf8_valid(const char *s, size_t len);
/*
 * Add a path: as a JSON string when it is valid UTF-8 without NUL bytes;
 * otherwise percent-encoded (bytes outside printable ASCII, and '%') with
 * "<name>_encoding": "percent" beside it, so no byte is lost or made up.
 */
int jsonv_add_path(cJSON *obj, const char *name, const char *s, size_t len);

/*
 * 1 when JSON text holds a \u0000 escape (one not itself escaped): cJSON cuts
 * strings at NUL, so "/a\u0000b" would silently become "/a".  Callers refuse such text.
 */
int jsonv_has_nul_escape(const char *text, size_t len);
/*
 * The name of a member that appears twice in object `obj` (borrowed), or NULL.
 * cJSON keeps both and lookups see the first; callers refuse such objects.
 */
const char *jsonv_duplicate_key(const cJSON *obj);
/*
 * Add number `v`: integral values printed in full like jsonv_add_int, others
 * as the shortest text (15 to 17 digits, raw JSON) that reads back as
 * exactly `v`; NaN and infinities as null.  0 or -ENOMEM.
 */
int jsonv_add_number(cJSON *obj, const char *name, double v);
/* Bytes jsonv_number_text may write, its NUL included. */
#define JSONV_NUMBER_TEXT 32
/*
 * The text jsonv_add_number gives finite `v` into `buf` (JSONV_NUMBER_TEXT
 * bytes), NUL-terminated: 0, or -EINVAL (NaN, an infinity: null) with `buf`
 * untouched.
 */
int jsonv_number_text(double v, char *buf);

/*
 * The items the jsonv_add_* functions add, for a caller that adds them
 * itself (cJSON_AddItemToObjectCS, a key not copied): a new item, or NULL
 * (-ENOMEM).  jsonv_number_item: jsonv_add_number's (raw text, or null);
 * jsonv_int_item: jsonv_add_int's; jsonv_strn_item: jsonv_add_strn's.
 */
cJSON *jsonv_number_item(double v);
cJSON *jsonv_int_item(int64_t v);
cJSON *jsonv_strn_item(const char *s, size_t len);

/* Add integer `v` to `obj` as `name`, printed in full (never in exponent form). 0 or -ENOMEM. */
int jsonv_add_int(cJSON *obj, const char *name, int64_t v);
/* Append integer `v` to array `arr`, printed in full. 0 or -ENOMEM. */
int jsonv_push_int(cJSON *arr, int64_t v);
/* A binary-safe string: cJSON strings end at NUL, so a value holding NUL bytes is cut there. */
int jsonv_add_strn(cJSON *obj, const char *name, const char *s, size_t len);

#endif

#ifndef SLUICE_RULES_H
#define SLUICE_RULES_H
/*
 * Rules: which limit applies to which path.  The JSON field names are the
 * public contract of DESIGN.md ("Rules").  A ruleset answers, for a path, the
 * rule that governs it:  an exact `match` wins over a glob; among globs the
 * longest literal prefix wins; then the rule name (byte order, whatever the
 * order the rules were put in).  Globs are core/glob.h's:
 * fnmatch(3)'s dialect without flags (`*`, `?`, `[...]`; `*` crosses '/'),
 * binary-safe (a path may hold NUL bytes).
 */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "core/algorithm.h"
#include "core/error.h"

#define RULE_NAME_MAX 64     /* [A-Za-z0-9_.-], 1..64 bytes */
#define RULE_MATCH_MAX 1024  /* bytes */
#define RULE_GLOB_RUN_MAX 32 /* elements after a '*' up to the next one (core/glob.h glob_star_run) */

struct rule {
	char name[RULE_NAME_MAX + 1];
	char *match;             /* owned */
	enum algorithm algorithm;
	int64_t capacity;        /* leaky/token bucket: entries or tokens, >= 1 */
	double rate;             /* leaky: entries leaked per second; token: tokens added per second */
	int64_t limit;           /* windows: requests per window, >= 1 */
	int64_t window_ms;       /* windows: ms, >= 1 */
	int64_t sub_windows;     /* sliding_counter: parts of the window, >= 1 */
	int shadow;              /* mode "shadow" (1): decide and count, always admit; 0: "enforce" */
	/* derived from match */
	int is_glob;
	size_t literal_prefix;   /* bytes before the first glob metacharacter */
};

/*
 * Parse and validate one rule object.  `name` (may be NULL) is the name from
 * the URL or config key; when the body also has "name" they must agree.
 * Unknown fields, missing fields and bad values are -EINVAL with `err`
 * naming the field (prefixed by `where`, e.g. "rules[2]", may be NULL).
 * On success *out is a new rule the caller frees with rule_free().
 */
int rule_from_json(const cJSON *obj, const char *name, const char *where, struct rule **out,
		   struct sl_error *err);
/* Parse a rule from JSON text (as stored in Redis); same errors, plus a bad-JSON error. */
int rule_from_text(const char *text, size_t len, const char *name, struct rule **out,
		   struct sl_error *err);
/*
 * JSON object of the rule with only its algorithm's fields, and "mode" only
 * when it is "shadow" (so a rule without mode, or with "enforce", renders as
 * before: its text, ETag and shard copies stay what they were); caller owns
 * (cJSON_Delete). NULL on ENOMEM.
 */
cJSON *rule_to_json(const struct rule *r);
/* Add the rule's limit fields (capacity, rate, ... as its algorithm takes them) to `o`.  0 or -ENOMEM. */
int rule_add_limits(cJSON *o, const struct rule *r);
/* The value of limit field `bit` (RULE_F_*, core/algorithm.h) of rule `r`, as rule_add_limits writes it (a double; the integers are below 2^53, so exact). */
double rule_field_value(const struct rule *r, unsigned bit);
/* Compact JSON text of rule_to_json; caller frees with free(). NULL on ENOMEM. */
char *rule_to_text(const struct rule *r);
/* A copy; NULL on ENOMEM. */
struct rule *rule_dup(const struct rule *r);
/* 1 when `name` is a valid rule name. */
int rule_name_valid(const char *name);
void rule_free(struct rule *r);

/* Does rule `r` match path `path` (`len` bytes, binary-safe)? */
int rule_matches(const struct rule *r, const char *path, size_t len);

struct ruleset {
	struct rule **v;         /* owned */
	size_t n, cap;
	uint64_t version;        /* the Redis version counter it was loaded at */
	char epoch[40];          /* the store's epoch it was loaded at (see rulestore.h) */
	char digest[64];         /* the rules hash's digest it was loaded at (see rulestore.h) */
	int64_t digest_due_ms;   /* CLOCK_MONOTONIC ms of rulestore_refresh's next digest check (0: the next refresh) */
	int loaded;              /* 1 once loaded from Redis */
};

/* Empty the set (frees every rule) and keep it usable. */
void ruleset_clear(struct ruleset *rs);
/* Replace `dst` by a deep copy of `src` (its version, epoch and state too).  0, or -ENOMEM with `dst` unchanged. */
int ruleset_copy(struct ruleset *dst, const struct ruleset *src);
/* Add `r`, taking ownership; a rule with the same name is replaced in place. 0 or -ENOMEM (r freed). */
int ruleset_put(struct ruleset *rs, struct rule *r);
/* The rule named `name`, or NULL; borrowed. */
const struct rule *ruleset_get(const struct ruleset *rs, const char *name);
/* The governing rule for `path` by the precedence above, or NULL; borrowed. */
const struct rule *ruleset_match(const struct ruleset *rs, const char *path, size_t len);
/*
 * The rule of algorithm `a` that governs `path` among the rules of that
 * algorithm, by the same precedence, or NULL; borrowed.  What a foreign
 * layout is maintained by: one path may be kept by limiters of different
 * algorithms (seed 004's "/test" by its leaky bucket, sliding and fixed windows).
 */
const struct rule *ruleset_match_algorithm(const struct ruleset *rs, const char *path, size_t len, enum algorithm a);

#endif

#include "core/algorithm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/alg/alg.h"

static const struct alg_ops *const table[ALG__COUNT] = {
	[ALG_LEAKY_BUCKET] = &alg_leaky_bucket,
	[ALG_SLIDING_LOG] = &alg_sliding_log,
	[ALG_SLIDING_COUNTER] = &alg_sliding_counter,
	[ALG_FIXED_WINDOW] = &alg_fixed_window,
	[ALG_TOKEN_BUCKET] = &alg_token_bucket,
};

const struct alg_ops *algorithm_get(enum algorithm a)
{
	return (unsigned)a < ALG__COUNT ? table[a] : NULL;
}

const struct alg_ops *algorithm_kind(const char *kind, enum algorithm a)
{
	return strcmp(kind, "redisson") == 0 && a == alg_redisson.id ? &alg_redisson : NULL;
}

const char *algorithm_name(enum algorithm a)
{
	return (unsigned)a < ALG__COUNT ? table[a]->name : NULL;
}

int algorithm_parse(const char *s, enum algorithm *out)
{
	for (int i = 0; i < ALG__COUNT; i++)
		if (strcmp(s, table[i]->name) == 0) {
			*out = (enum algorithm)i;
			return 0;
		}
	return -EINVAL;
}

const char *algorithm_list(char *buf, size_t cap)
{
	size_t at = 0;

	if (cap)
		buf[0] = '\0';
	for (int i = 0; i < ALG__COUNT && at < cap; i++) {
		int n = snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", table[i]->name);

		if (n < 0)
			break;
		at += (size_t)n;
	}
	return buf;
}

int algorithm_has_capacity(const struct alg_ops *alg)
{
	return (alg->fields & RULE_F_CAPACITY) != 0;
}

const char *algorithm_field_name(unsigned f)
{
	switch (f) {
	case RULE_F_CAPACITY:
		return "capacity";
	case RULE_F_RATE:
		return "rate";
	case RULE_F_LIMIT:
		return "limit";
	case RULE_F_WINDOW:
		return "window_ms";
	case RULE_F_SUB:
		return "sub_windows";
	default:
		return NULL;
	}
}

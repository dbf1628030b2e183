/*
 * What the shards' rules copies are brought to (copies.c): the target, built
 * from the ruleset the worker loaded, and its difference from the target
 * before it.  A copy that holds the previous target (its ":version" is the
 * previous one, and its field count that target's rules and its ':'
 * fields: copies_check.c) needs only the difference: HDEL of the names that went and
 * one HSET of the rules that are new or changed, ":version" last.  So a PUT
 * of one rule writes one rule into each of the 1024 copies, not all of them
 * (with 1000 rules the whole set took 3.5 s a step; BENCHMARKS.md).  Any
 * other copy gets the whole target (copies.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/internal.h"

static void free_rules(char **names, char **texts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(names[i]);
		free(texts[i]);
	}
	free(names);
	free(texts);
}

void copies_target_free(struct copies_state *c)
{
	free_rules(c->names, c->texts, c->nnames);
	c->names = c->texts = NULL;
	c->nnames = 0;
	cmdargs_free(&c->fields);
	cmdargs_free(&c->delta);
	cmdargs_free(&c->gone);
}

/* Sort the parallel arrays names/texts by name (strcmp); n is small (rules). */
static void sort_rules(char **names, char **texts, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char *t = names[j];

			names[j] = names[j - 1], names[j - 1] = t;
			t = texts[j], texts[j] = texts[j - 1], texts[j - 1] = t;
		}
}

/*
 * The difference from the previous target (names/texts of `on` rules, sorted)
 * to c's: into c->delta the rules new or changed, then ":version" and the
 * text; into c->gone the names that went.  0 or -ENOMEM.
 */
static int build_delta(struct copies_state *c, char **onames, char **otexts, size_t on)
{
	size_t i = 0, j = 0;

	cmdargs_reset(&c->delta);
	cmdargs_reset(&c->gone);
	while (i < c->nnames || j < on) {
		int d = i == c->nnames ? 1 : j == on ? -1 : strcmp(c->names[i], onames[j]);

		if (d < 0 || (d == 0 && strcmp(c->texts[i], otexts[j]) != 0)) {
			if (cmdargs_str(&c->delta, c->names[i]) || cmdargs_str(&c->delta, c->texts[i]))
				return -ENOMEM;
		} else if (d > 0) {
			if (cmdargs_str(&c->gone, onames[j]))
				return -ENOMEM;
		}
		if (d <= 0)
			i++;
		if (d >= 0)
			j++;
	}
	if (cmdargs_str(&c->delta, COPIES_VERSION) || cmdargs_str(&c->delta, c->text))
		return -ENOMEM;
	return 0;
}

int copies_target_build(struct copies_state *c, const struct ruleset *rs)
{
	char **onames = c->names, **otexts = c->texts;
	size_t on = c->nnames;
	int had = c->have, rc = -ENOMEM;

	/* the previous target is kept until the difference is made */
	snprintf(c->prev_text, sizeof(c->prev_text), "%s", had ? c->text : "");
	c->prev_nnames = had ? on : 0;
	c->have = 0;
	c->names = c->texts = NULL;
	c->nnames = 0;
	cmdargs_reset(&c->fields);
	if (rs->n && (!(c->names = calloc(rs->n, sizeof(*c->names))) || !(c->texts = calloc(rs->n, sizeof(*c->texts)))))
		goto out;
	for (size_t i = 0; i < rs->n; i++) {
		if (!(c->texts[c->nnames] = rule_to_text(rs->v[i])) || !(c->names[c->nnames] = strdup(rs->v[i]->name))) {
			free(c->texts[c->nnames]);
			goto out;
		}
		c->nnames++;
	}
	sort_rules(c->names, c->texts, c->nnames);
	for (size_t i = 0; i < c->nnames; i++)
		if (cmdargs_str(&c->fields, c->names[i]) || cmdargs_str(&c->fields, c->texts[i]))
			goto out;
	snprintf(c->text, sizeof(c->text), "%s:%" PRIu64, rs->epoch, rs->version);
	if (cmdargs_str(&c->fields, COPIES_VERSION) || cmdargs_str(&c->fields, c->text))
		goto out;
	if (had && build_delta(c, onames, otexts, on))
		goto out;
	c->field_bytes = c->fields.buf.len;
	c->version = rs->version;
	memcpy(c->epoch, rs->epoch, sizeof(c->epoch));
	c->have = 1;
	rc = 0;
out:
	if (rc) {
		free_rules(c->names, c->texts, c->nnames);
		c->names = c->texts = NULL;
		c->nnames = 0;
		c->prev_text[0] = '\0';
	}
	if (!had || rc)
		c->prev_text[0] = '\0'; /* no difference to apply: whole writes only */
	free_rules(onames, otexts, on);
	return rc;
}

int copies_target_has(const struct copies_state *c, const char *name, size_t len)
{
	size_t lo = 0, hi = c->nnames;

	if (memchr(name, '\0', len))
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = strncmp(c->names[mid], name, len);

		if (!d && c->names[mid][len])
			d = 1; /* the name is longer: after */
		if (!d)
			return 1;
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

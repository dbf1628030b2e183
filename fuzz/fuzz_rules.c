/*
 * fuzz_rules: rule validation, core/rules.c's rule_from_text (cJSON, then
 * rule_from_json's checks of every field) on any bytes, as a rule comes
 * from Redis or a PUT body, with and without a name from the URL.  Beyond
 * ASan/UBSan: an error is -EINVAL with a message (or -ENOMEM); a rule taken
 * renders (rule_to_text) to a text that is taken again as the same rule,
 * and its copy (rule_dup) renders the same; its match is glob_valid, turns
 * into Redis's MATCH dialect (glob_to_redis), and an exact match matches
 * itself, in a ruleset too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/glob.h"
#include "core/rules.h"
#include "core/strbuf.h"
#include "fuzz/harness.h"

static void fail(const uint8_t *data, size_t size, const char *what, const char *a, const char *b)
{
	fuzz_show("rule", (const char *)data, size);
	fprintf(stderr, "fuzz_rules: %s\n  %s\n  %s\n", what, a ? a : "", b ? b : "");
	abort();
}

static void one(const uint8_t *data, size_t size, const char *name)
{
	struct sl_error err = { 0 };
	struct rule *r = NULL, *back = NULL, *dup;
	struct ruleset rs = { 0 };
	struct strbuf b = { 0 };
	char *text, *text2, *text3;
	int rc = rule_from_text((const char *)data, size, name, &r, &err);

	if (rc) {
		if (rc != -EINVAL && rc != -ENOMEM)
			fail(data, size, "an error other than -EINVAL and -ENOMEM", err.field, err.message);
		if (rc == -EINVAL && !err.message[0])
			fail(data, size, "an -EINVAL that says nothing", err.field, err.message);
		return;
	}
	if (name && strcmp(r->name, name))
		fail(data, size, "the rule is not named as the URL says", r->name, name);
	if (!rule_name_valid(r->name))
		fail(data, size, "a rule with an invalid name", r->name, NULL);
	if (!(text = rule_to_text(r)) || !(dup = rule_dup(r)) || !(text3 = rule_to_text(dup)))
		abort();
	if (rule_from_text(text, strlen(text), r->name, &back, &err))
		fail(data, size, "its own rendering is refused", text, err.message);
	if (!(text2 = rule_to_text(back)))
		abort();
	if (strcmp(text, text2) || strcmp(text, text3))
		fail(data, size, "rendered, read back (or copied), another rule", text, strcmp(text, text2) ? text2 : text3);
	if (!glob_valid(r->match, strlen(r->match)) || glob_to_redis(r->match, &b))
		fail(data, size, "a match that is not glob_valid", r->match, NULL);
	if (!r->is_glob && (!rule_matches(r, r->match, strlen(r->match)) || r->literal_prefix != strlen(r->match)))
		fail(data, size, "an exact match that does not match itself", r->match, NULL);
	if (ruleset_put(&rs, dup))
		abort();
	if (!r->is_glob && ruleset_match(&rs, r->match, strlen(r->match)) != rs.v[0])
		fail(data, size, "a ruleset of one exact rule does not pick it for its match", r->match, NULL);
	ruleset_clear(&rs);
	strbuf_free(&b);
	free(text);
	free(text2);
	free(text3);
	rule_free(back);
	rule_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(data, size, NULL);
	one(data, size, "fuzz");
	return 0;
}

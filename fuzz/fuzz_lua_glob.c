/*
 * fuzz_lua_glob: core/glob.c and lua/lib/glob.lua (with lib/ruleset.lua's
 * literal prefix) must answer alike for every pattern and path: glob_valid,
 * glob_match, a rule match's literal prefix and is_glob (core/rules.c).
 * Input: byte 0 is the pattern's length (at most the bytes that follow),
 * then the pattern, then the path; both any bytes.  The Lua side runs in the
 * private redis-server (fuzz/harness.h) as build/lua-fuzz/glob_probe.lua.
 * Also, for a valid pattern a rule accepts, rule_matches must agree with
 * glob_match and glob_star_run must stay within the pattern; and Redis's own
 * matcher (SSCAN MATCH, as the path listing and bulk reset use it) given the
 * pattern in its dialect (glob_to_redis) selects the path exactly when
 * glob_match matches it.  A disagreement aborts with both answers, the
 * pattern and the path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/glob.h"
#include "core/rules.h"
#include "core/strbuf.h"
#include "fuzz/harness.h"

#define PROBE "build/lua-fuzz/glob_probe.lua"

static void fail(const char *pat, size_t plen, const char *s, size_t slen, const char *what)
{
	fuzz_show("pattern", pat, plen);
	fuzz_show("path", s, slen);
	fprintf(stderr, "fuzz_lua_glob: %s\n", what);
	abort();
}

/*
 * C's literal prefix and is_glob of `pat` as a rule's match, through
 * rule_from_json, and in *matches rule_matches on the path; -1 when no rule takes it.
 */
static long long c_prefix(const char *pat, size_t plen, const char *s, size_t slen, int *is_glob, int *matches)
{
	cJSON *o = cJSON_CreateObject();
	struct sl_error err = { 0 };
	struct rule *r = NULL;
	char *m = strndup(pat, plen);
	long long n = -1;

	if (!o || !m || !cJSON_AddStringToObject(o, "match", m) ||
	    !cJSON_AddStringToObject(o, "algorithm", "fixed_window") || !cJSON_AddNumberToObject(o, "limit", 1) ||
	    !cJSON_AddNumberToObject(o, "window_ms", 1000)) {
		fprintf(stderr, "fuzz_lua_glob: out of memory\n");
		abort();
	}
	if (rule_from_json(o, "r", NULL, &r, &err) == 0) {
		n = (long long)r->literal_prefix;
		*is_glob = r->is_glob;
		*matches = rule_matches(r, s, slen);
		rule_free(r);
	}
	cJSON_Delete(o);
	free(m);
	return n;
}

/* Does SSCAN ... MATCH glob_to_redis(pat) select path s (core/walk.c's registry walk)? */
static int redis_selects(const char *pat, size_t plen, const char *s, size_t slen)
{
	struct strbuf b = { 0 };
	char *m = strndup(pat, plen);
	redisContext *c = fuzz_redis();
	redisReply *r[3];
	int sel;

	if (!m || glob_to_redis(m, &b))
		fail(pat, plen, s, slen, "glob_to_redis refused a glob_valid pattern");
	redisAppendCommand(c, "DEL fuzz:glob");
	redisAppendCommand(c, "SADD fuzz:glob %b", s, slen);
	redisAppendCommand(c, "SSCAN fuzz:glob 0 MATCH %b COUNT 100", b.p ? b.p : "", b.len);
	for (int i = 0; i < 3; i++)
		if (redisGetReply(c, (void **)&r[i]) != REDIS_OK)
			fail(pat, plen, s, slen, c->errstr);
	if (r[2]->type != REDIS_REPLY_ARRAY || r[2]->elements != 2 || r[2]->element[1]->type != REDIS_REPLY_ARRAY ||
	    strcmp(r[2]->element[0]->str, "0"))
		fail(pat, plen, s, slen, "SSCAN of one member did not answer in one page");
	sel = r[2]->element[1]->elements == 1;
	if (sel != glob_match(pat, plen, s, slen)) {
		fuzz_show("in Redis's dialect", b.p ? b.p : "", b.len);
		fprintf(stderr, "fuzz_lua_glob: glob_match says %d, Redis's MATCH %d\n", !sel, sel);
		fail(pat, plen, s, slen, "glob_to_redis: Redis selects otherwise");
	}
	for (int i = 0; i < 3; i++)
		freeReplyObject(r[i]);
	strbuf_free(&b);
	free(m);
	return sel;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t plen, slen;
	const char *pat, *s;
	redisReply *r;
	int valid, match, is_glob = 0, matches = 0;
	long long prefix;
	char msg[160];

	if (size < 1)
		return 0;
	plen = data[0] < size - 1 ? data[0] : size - 1;
	pat = (const char *)data + 1;
	s = pat + plen;
	slen = size - 1 - plen;
	valid = glob_valid(pat, plen);
	match = glob_match(pat, plen, s, slen);
	if (glob_star_run(pat, plen) > plen)
		fail(pat, plen, s, slen, "glob_star_run longer than the pattern");

	r = redisCommand(fuzz_redis(), "EVALSHA %s 0 %b %b", fuzz_script(PROBE), pat, plen, s, slen);
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 4)
		fail(pat, plen, s, slen, r && r->type == REDIS_REPLY_ERROR ? r->str : "bad reply from the probe");
	for (size_t i = 0; i < 4; i++)
		if (r->element[i]->type != REDIS_REPLY_INTEGER)
			fail(pat, plen, s, slen, "the probe's answer is not 4 integers");
	if (valid != r->element[0]->integer || match != r->element[1]->integer) {
		snprintf(msg, sizeof(msg), "C says valid %d match %d, Lua says valid %lld match %lld", valid, match,
			 r->element[0]->integer, r->element[1]->integer);
		fail(pat, plen, s, slen, msg);
	}
	/* a rule's match: no NUL (a JSON string of the config cannot hold one here), 1..RULE_MATCH_MAX */
	if (plen && !memchr(pat, '\0', plen) && (prefix = c_prefix(pat, plen, s, slen, &is_glob, &matches)) >= 0) {
		if (!valid)
			fail(pat, plen, s, slen, "a rule took a match that is not glob_valid");
		if (matches != match)
			fail(pat, plen, s, slen, "rule_matches and glob_match disagree");
		if (prefix != r->element[2]->integer || is_glob != r->element[3]->integer) {
			snprintf(msg, sizeof(msg), "C says prefix %lld is_glob %d, Lua says prefix %lld is_glob %lld",
				 prefix, is_glob, r->element[2]->integer, r->element[3]->integer);
			fail(pat, plen, s, slen, msg);
		}
	}
	/* a registry never holds "" (a path is non-empty: DESIGN.md), which Redis's matcher never selects */
	if (valid && !memchr(pat, '\0', plen) && slen)
		redis_selects(pat, plen, s, slen);
	freeReplyObject(r);
	return 0;
}

/*
 * The Lua fragments lib/glob.lua and lib/ruleset.lua against the C they must
 * agree with, on a real redis-server (the harness's):
 *   - glob_match and glob_valid against core/glob.c on random globs (every
 *     token of the dialect: '*' runs, '?', sets with '!', '^', a leading ']',
 *     ranges, reversed ranges and escapes, escaped and raw literal bytes
 *     among them NUL, '/', 0x80-0xFF) and paths built to match them (then
 *     often mutated by one byte), plus raw patterns of metacharacters (many
 *     not glob_valid) and random paths; the share of matches is asserted, so
 *     a matcher that answers 0 everywhere fails;
 *   - ruleset_match against core/rules.c's ruleset_match on random small
 *     rulesets (1..12 rules: exact ones, globs on shared stems, equal
 *     prefixes, escapes, names that differ only by case or punctuation,
 *     entries the daemon refuses) loaded as rulestore_refresh loads them
 *     (rule_from_json, put in reverse name order), and rule_literal_prefix against
 *     the rule's literal_prefix;
 *   - pathological patterns on a 10 kB path return in time;
 *   - Redis's own matcher (SSCAN MATCH, which the path listing and bulk
 *     reset use) given a set in its dialect (glob_to_redis) selects exactly
 *     the bytes glob_match does (found by fuzz/fuzz_lua_glob.c: "[a-]",
 *     reversed ranges and ranges over 0x80 were read otherwise by Redis).
 * The Lua side is tests/lua/glob_probe.lua, assembled with those fragments
 * into build/lua-test/ (make), sent with EVAL, many inputs per call.  The
 * seed is fixed (GLOB_LUA_SEED in the environment overrides it) and named in
 * every failure, with the inputs in hex.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/glob.h"
#include "core/jsonv.h"
#include "core/rules.h"
#include "core/strbuf.h"
#include "tests/conn_fixture.h"
#include "tests/harness.h"

#define PROBE "build/lua-test/glob_probe.lua"
#define SEED_DEFAULT 20260918u
#define BATCH 500          /* inputs per EVAL */
#define MAXB 512           /* bytes of a generated pattern or path */
#define SHOW_MAX 8         /* disagreements printed before the test fails */

static char *probe;        /* the assembled probe, read once per test */

static void setup(void)
{
	conn_up();
	probe = test_read_src(PROBE, NULL);
	ck_assert_msg(probe != NULL, "cannot read %s: %s (make builds it; run from the repository root)", PROBE,
		      strerror(errno));
}

static void teardown(void)
{
	free(probe);
	probe = NULL;
	conn_down();
}

static unsigned seed_of(void)
{
	const char *e = getenv("GLOB_LUA_SEED");

	return e && *e ? (unsigned)strtoul(e, NULL, 0) : SEED_DEFAULT;
}

/* xorshift32: the generator's whole state is the caller's. */
static uint32_t rnd(uint32_t *st)
{
	uint32_t x = *st;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *st = x;
}

static unsigned below(uint32_t *st, unsigned n)
{
	return rnd(st) % n;
}

/* A byte for literals and paths: mostly a small alphabet (so that things match), sometimes any. */
static unsigned char some_byte(uint32_t *st)
{
	static const unsigned char small[] = { 'a', 'b', '/', '-', ']', '!', '^', '.', 0x00, 0x80, 0xff, 0xc3 };

	return below(st, 4) ? small[below(st, sizeof(small))] : (unsigned char)below(st, 256);
}

struct bytes {
	char b[MAXB];
	size_t n;
};

static void put(struct bytes *s, unsigned char x)
{
	if (s->n < MAXB)
		s->b[s->n++] = (char)x;
}

/* Hex of n bytes into buf (cut to fit). */
static const char *hex(const char *p, size_t n, char *buf, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 3 < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%02x", (unsigned char)p[i]);
	buf[o] = '\0';
	return buf;
}

/* ---- random globs, and paths built from them ------------------------------------ */

enum tok_kind { T_LIT, T_STAR, T_ANY, T_SET };

struct tok {
	enum tok_kind kind;
	unsigned char lit;     /* T_LIT */
	unsigned char in[256]; /* T_SET: in[c] = 1 when byte c is in the set, by core/glob.c */
	int members;           /* T_SET: how many */
};

#define MAXTOK 16

struct glob_gen {
	struct bytes pat;
	struct tok t[MAXTOK];
	int nt;
};

/* A byte inside a set: ']' and '\' always escaped (and whatever `must` says), others sometimes. */
static void set_byte(struct bytes *p, unsigned char x, int must, uint32_t *st)
{
	if (must || x == ']' || x == '\\' || !below(st, 6))
		put(p, '\\');
	put(p, x);
}

/* One random set "[...]", its membership taken from core/glob.c. */
static void gen_set(struct glob_gen *g, struct tok *t, uint32_t *st)
{
	size_t start = g->pat.n;
	int items = 1 + (int)below(st, 4), neg = !below(st, 3), bracket = !below(st, 6);

	put(&g->pat, '[');
	if (neg)
		put(&g->pat, below(st, 2) ? '!' : '^');
	if (bracket)
		put(&g->pat, ']'); /* first: literal */
	for (int i = 0; i < items; i++) {
		unsigned char lo = some_byte(st);

		/* a raw '!' or '^' first would negate (and the set then not close as written) */
		set_byte(&g->pat, lo, i == 0 && !neg && !bracket && (lo == '!' || lo == '^'), st);
		if (!below(st, 3)) {
			/* a range; hi below lo now and then (an empty range) */
			unsigned char hi = below(st, 5) ? (unsigned char)(lo + below(st, 40)) : some_byte(st);

			put(&g->pat, '-');
			set_byte(&g->pat, hi, 0, st);
		}
	}
	if (!below(st, 8))
		put(&g->pat, '-'); /* a '-' before ']': literal */
	put(&g->pat, ']');
	t->kind = T_SET;
	t->members = 0;
	for (int x = 0; x < 256; x++) {
		char b = (char)x;

		t->in[x] = (unsigned char)glob_match(g->pat.b + start, g->pat.n - start, &b, 1);
		t->members += t->in[x];
	}
}

/* A random well-formed glob of 1..MAXTOK tokens. */
static void gen_glob(struct glob_gen *g, uint32_t *st)
{
	int n = 1 + (int)below(st, MAXTOK);

	g->pat.n = 0;
	g->nt = 0;
	for (int i = 0; i < n; i++) {
		struct tok *t = &g->t[g->nt++];
		unsigned k = below(st, 10);

		if (k < 5) {
			unsigned char x = below(st, 6) ? some_byte(st) : "*?[\\"[below(st, 4)];

			t->kind = T_LIT;
			t->lit = x;
			if (x == '*' || x == '?' || x == '[' || x == '\\' || !below(st, 10))
				put(&g->pat, '\\');
			put(&g->pat, x);
		} else if (k < 7) {
			t->kind = T_STAR;
			for (int j = 1 + (int)below(st, 3); j > 0; j--)
				put(&g->pat, '*');
		} else if (k < 8) {
			t->kind = T_ANY;
			put(&g->pat, '?');
		} else {
			gen_set(g, t, st);
		}
	}
}

/* A path for g: built to match it, then (half the time) changed by one byte. */
static void gen_path(const struct glob_gen *g, struct bytes *s, uint32_t *st)
{
	s->n = 0;
	for (int i = 0; i < g->nt; i++) {
		const struct tok *t = &g->t[i];

		switch (t->kind) {
		case T_LIT:
			put(s, t->lit);
			break;
		case T_STAR:
			for (int j = (int)below(st, below(st, 8) ? 4 : 40); j > 0; j--)
				put(s, some_byte(st));
			break;
		case T_ANY:
			put(s, some_byte(st));
			break;
		case T_SET: {
			unsigned char x = some_byte(st);

			for (int tries = 0; t->members && !t->in[x] && tries < 1000; tries++)
				x = (unsigned char)below(st, 256);
			put(s, x);
			break;
		}
		}
	}
	if (below(st, 2) && s->n) {
		size_t at = below(st, (unsigned)s->n);

		switch (below(st, 3)) {
		case 0:
			s->b[at] = (char)some_byte(st);
			break;
		case 1:
			memmove(s->b + at, s->b + at + 1, s->n - at - 1);
			s->n--;
			break;
		default:
			if (s->n < MAXB) {
				memmove(s->b + at + 1, s->b + at, s->n - at);
				s->b[at] = (char)some_byte(st);
				s->n++;
			}
		}
	}
}

/* Raw bytes over an alphabet rich in metacharacters: many are not glob_valid. */
static void gen_raw(struct bytes *s, size_t max, uint32_t *st)
{
	static const char alpha[] = "ab/*?[]!^-\\\0\x80\xff";

	s->n = below(st, (unsigned)max + 1);
	for (size_t i = 0; i < s->n; i++)
		s->b[i] = alpha[below(st, sizeof(alpha) - 1)];
}

/* ---- calling the probe ------------------------------------------------------------ */

struct call {
	const char **v;
	size_t *l;
	int n, cap;
};

static void call_start(struct call *k, const char *question)
{
	k->n = 0;
	if (!k->v) {
		k->cap = 16;
		k->v = malloc(sizeof(*k->v) * (size_t)k->cap);
		k->l = malloc(sizeof(*k->l) * (size_t)k->cap);
		ck_assert(k->v && k->l);
	}
	k->v[k->n] = "EVAL", k->l[k->n++] = 4;
	k->v[k->n] = probe, k->l[k->n++] = strlen(probe);
	k->v[k->n] = "0", k->l[k->n++] = 1;
	k->v[k->n] = question, k->l[k->n++] = strlen(question);
}

/* Add one argument (borrowed until the call is sent). */
static void call_arg(struct call *k, const char *p, size_t n)
{
	if (k->n == k->cap) {
		k->cap *= 2;
		k->v = realloc(k->v, sizeof(*k->v) * (size_t)k->cap);
		k->l = realloc(k->l, sizeof(*k->l) * (size_t)k->cap);
		ck_assert(k->v && k->l);
	}
	k->v[k->n] = p;
	k->l[k->n++] = n;
}

/* Send it: an array reply of `want` elements (fails the test otherwise); the caller frees. */
static redisReply *call_send(struct call *k, size_t want, unsigned seed)
{
	redisReply *r = redisCommandArgv(c, k->n, k->v, k->l);
	char show[256];

	ck_assert_msg(r != NULL, "EVAL: %s", c->errstr);
	ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == want, "seed %u: probe replied %s, expected %zu elements",
		      seed, test_show_reply(r, show, sizeof(show)), want);
	return r;
}

static void call_free(struct call *k)
{
	free(k->v);
	free(k->l);
}

/* ---- glob_match and glob_valid ------------------------------------------------------ */

struct pair {
	struct bytes pat, path;
};

struct tally {
	long cases, matched, valid, bad;
};

/* Compare one batch of pairs: glob_match, and glob_valid of the patterns. */
static void compare_batch(const struct pair *p, int n, struct tally *t, unsigned seed, long first)
{
	struct call k = { 0 };
	redisReply *r;
	char h1[2 * MAXB + 1], h2[2 * MAXB + 1];

	call_start(&k, "match");
	for (int i = 0; i < n; i++) {
		call_arg(&k, p[i].pat.b, p[i].pat.n);
		call_arg(&k, p[i].path.b, p[i].path.n);
	}
	r = call_send(&k, (size_t)n, seed);
	for (int i = 0; i < n; i++) {
		int want = glob_match(p[i].pat.b, p[i].pat.n, p[i].path.b, p[i].path.n);
		long long got = r->element[i]->type == REDIS_REPLY_INTEGER ? r->element[i]->integer : -1;

		t->cases++;
		t->matched += want;
		if (got != want && t->bad++ < SHOW_MAX)
			fprintf(stderr, "seed %u case %ld: glob %s path %s: C %d, Lua %lld\n", seed, first + i,
				hex(p[i].pat.b, p[i].pat.n, h1, sizeof(h1)), hex(p[i].path.b, p[i].path.n, h2, sizeof(h2)),
				want, got);
	}
	freeReplyObject(r);

	call_start(&k, "valid");
	for (int i = 0; i < n; i++)
		call_arg(&k, p[i].pat.b, p[i].pat.n);
	r = call_send(&k, (size_t)n, seed);
	for (int i = 0; i < n; i++) {
		int want = glob_valid(p[i].pat.b, p[i].pat.n);
		long long got = r->element[i]->type == REDIS_REPLY_INTEGER ? r->element[i]->integer : -1;

		t->valid += want;
		if (got != want && t->bad++ < SHOW_MAX)
			fprintf(stderr, "seed %u case %ld: glob_valid %s: C %d, Lua %lld\n", seed, first + i,
				hex(p[i].pat.b, p[i].pat.n, h1, sizeof(h1)), want, got);
	}
	freeReplyObject(r);
	call_free(&k);
}

/* Fixed cases: the dialect's corners, in C and in Lua (each row: pattern, path, match). */
START_TEST(test_glob_fixed)
{
	static const struct {
		const char *pat, *path;
		size_t pl, sl;
		int want;
	} cases[] = {
#define R(p, s, w) { p, s, sizeof(p) - 1, sizeof(s) - 1, w }
		R("/api/*", "/api/a/b", 1), R("/api/*", "/apix", 0), R("/u?er", "/user", 1),
		R("[]]", "]", 1), R("[!]]", "]", 0), R("[^]a]", "b", 1), R("[a-]", "-", 1),
		R("[\\]]", "]", 1), R("[A-\\]]", "]", 1), R("[a-\\]]", "]", 0), R("[z-a]", "m", 0), R("[!z-a]", "m", 1),
		R("[", "[", 1), R("[ab", "[ab", 1), R("a\\", "a\\", 0), R("a\\", "a", 0),
		R("\\*", "*", 1), R("\\a", "a", 1), R("*", "", 1), R("", "", 1), R("?", "", 0),
		R("a*b*c", "aXbYbZc", 1), R("a*b*c", "aXbYbZ", 0), R("/a\0*", "/a\0zz", 1),
		R("[\x01-\x03]", "\0", 0), R("[\x80-\xff]", "\xc3", 1), R("[!\x80-\xff]", "\x7f", 1),
		R("*[", "x[", 1), R("[[]", "[", 1), R("[!]", "!", 0), R("[!]", "[!]", 1),
#undef R
	};
	struct call k = { 0 };
	redisReply *r;

	call_start(&k, "match");
	for (int i = 0; i < TEST_N(cases); i++) {
		ck_assert_msg(glob_match(cases[i].pat, cases[i].pl, cases[i].path, cases[i].sl) == cases[i].want,
			      "C: row %d", i);
		call_arg(&k, cases[i].pat, cases[i].pl);
		call_arg(&k, cases[i].path, cases[i].sl);
	}
	r = call_send(&k, (size_t)TEST_N(cases), 0);
	for (int i = 0; i < TEST_N(cases); i++)
		ck_assert_msg(test_elem_int(r, (size_t)i) == cases[i].want, "Lua: row %d (%s)", i, cases[i].pat);
	freeReplyObject(r);
	call_free(&k);
}
END_TEST

START_TEST(test_glob_random)
{
	unsigned seed = seed_of();
	uint32_t st = seed ? seed : 1;
	struct glob_gen g;
	struct pair *p = malloc(sizeof(*p) * BATCH);
	struct tally built = { 0 }, raw = { 0 };
	long n = 0;

	ck_assert_ptr_nonnull(p);
	/* 60000 globs, each with a path built from it (half of them then changed by one byte) */
	for (int b = 0; b < 120; b++) {
		for (int i = 0; i < BATCH; i++) {
			gen_glob(&g, &st);
			p[i].pat = g.pat;
			if (below(&st, 10))
				gen_path(&g, &p[i].path, &st);
			else
				gen_raw(&p[i].path, 24, &st);
		}
		compare_batch(p, BATCH, &built, seed, n);
		n += BATCH;
	}
	/* 20000 raw patterns of metacharacters (many not glob_valid) on raw paths */
	for (int b = 0; b < 40; b++) {
		for (int i = 0; i < BATCH; i++) {
			gen_raw(&p[i].pat, 12, &st);
			gen_raw(&p[i].path, 16, &st);
		}
		compare_batch(p, BATCH, &raw, seed, n);
		n += BATCH;
	}
	free(p);
	fprintf(stderr, "glob_lua: seed %u: %ld built pairs (%ld match), %ld raw pairs (%ld match, %ld glob_valid)\n",
		seed, built.cases, built.matched, raw.cases, raw.matched, raw.valid);
	ck_assert_msg(built.bad + raw.bad == 0, "seed %u: Lua and C disagree on %ld of %ld inputs (first ones above)",
		      seed, built.bad + raw.bad, built.cases + raw.cases);
	ck_assert_int_eq(built.valid, built.cases); /* the generator writes only well-formed globs */
	/* the inputs match often enough for the comparison to mean something */
	ck_assert_msg(built.matched * 100 > built.cases * 20, "seed %u: only %ld of %ld built pairs match", seed,
		      built.matched, built.cases);
	ck_assert_msg(raw.matched * 100 > raw.cases && raw.valid * 100 > raw.cases * 20 &&
			      raw.valid * 100 < raw.cases * 80,
		      "seed %u: raw pairs: %ld match, %ld valid of %ld", seed, raw.matched, raw.valid, raw.cases);
}
END_TEST

/*
 * Pathological patterns on a 10 kB path: the matcher is iterative (no
 * exponential backtracking), so each call returns well within the script
 * time limit (busy-reply-threshold, 5 s by default), with C's answer.
 */
START_TEST(test_glob_pathological)
{
	enum { PATH = 10000 };
	char *path = malloc(PATH + 1), *stars = malloc(1024), *lit = malloc(1024), *any = malloc(1024);
	struct patho {
		const char *pat;
		size_t pl;
		int last_b; /* the path ends in 'b' */
	} cases[8];
	int n = 0;

	ck_assert(path && stars && lit);
	memset(path, 'a', PATH);
	/* "*a*a*...*a*b": 511 stars, the whole 1 kB a rule's match may have */
	for (int i = 0; i < 511; i++)
		stars[2 * i] = '*', stars[2 * i + 1] = 'a';
	stars[1022] = '*', stars[1023] = 'b';
	/* "*aaa...ab": a 1 kB literal after a star, the quadratic worst case of this algorithm */
	lit[0] = '*';
	memset(lit + 1, 'a', 1022);
	lit[1023] = 'b';
	/* "*a?a?...a?b": no run of plain bytes to find, the slowest case here (quadratic in Lua steps) */
	any[0] = '*';
	for (int i = 0; i < 511; i++)
		any[1 + 2 * i] = 'a', any[2 + 2 * i] = '?';
	any[1023] = 'b';
	cases[n++] = (struct patho){ "*a*a*a*a*a*b", 12, 0 };
	cases[n++] = (struct patho){ "*a*a*a*a*a*b", 12, 1 };
	cases[n++] = (struct patho){ stars, 1024, 0 };
	cases[n++] = (struct patho){ stars, 1024, 1 };
	cases[n++] = (struct patho){ lit, 1024, 0 };
	cases[n++] = (struct patho){ lit, 1024, 1 };
	cases[n++] = (struct patho){ any, 1024, 0 };
	cases[n++] = (struct patho){ any, 1024, 1 };
	for (int i = 0; i < n; i++) {
		struct call k = { 0 };
		redisReply *r;
		long long t0, ms;
		int want;

		path[PATH - 1] = cases[i].last_b ? 'b' : 'a';
		want = glob_match(cases[i].pat, cases[i].pl, path, PATH);
		ck_assert_int_eq(want, cases[i].last_b);
		call_start(&k, "match");
		call_arg(&k, cases[i].pat, cases[i].pl);
		call_arg(&k, path, PATH);
		t0 = test_now_ms();
		r = call_send(&k, 1, 0);
		ms = test_now_ms() - t0;
		fprintf(stderr, "glob_lua: pathological case %d (%zu-byte glob, 10 kB path): %lld ms\n", i,
			cases[i].pl, ms);
		ck_assert_int_eq(test_elem_int(r, 0), want);
		ck_assert_msg(ms < 5000, "case %d took %lld ms", i, ms);
		freeReplyObject(r);
		call_free(&k);
	}
	free(path);
	free(stars);
	free(lit);
	free(any);
}
END_TEST

/* ---- rule picking --------------------------------------------------------------------- */

#define MAXRULES 12

struct rcase {
	struct bytes name[MAXRULES], match[MAXRULES];
	int n;
	char ntext[4]; /* n in decimal, for the probe */
	struct bytes path;
};

/* Append the n bytes of p as a JSON string: quotes, '\' and control bytes escaped, others raw. */
static void json_str(char *out, size_t *o, const char *p, size_t n)
{
	out[(*o)++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char x = (unsigned char)p[i];

		if (x == '"' || x == '\\')
			out[(*o)++] = '\\', out[(*o)++] = (char)x;
		else if (x < 0x20)
			*o += (size_t)sprintf(out + *o, "\\u%04x", x);
		else
			out[(*o)++] = (char)x;
	}
	out[(*o)++] = '"';
}

/*
 * A rule as rulestore_refresh loads an entry of the rules hash (field `name`,
 * the rule's JSON text as a client or sluiced could have written it); NULL
 * when it refuses the entry (a name with a NUL, a bad name, an empty, long,
 * malformed match or one with "\u0000").  The caller frees it.
 */
static struct rule *c_rule(const struct bytes *name, const struct bytes *match)
{
	char nm[MAXB + 1], text[6 * 2 * MAXB + 128];
	size_t o = 0;
	struct rule *r = NULL;

	memcpy(nm, name->b, name->n), nm[name->n] = '\0';
	if (strlen(nm) != name->n)
		return NULL; /* rulestore_refresh: strlen(name->str) != name->len */
	o += (size_t)sprintf(text, "{\"name\":");
	json_str(text, &o, name->b, name->n);
	o += (size_t)sprintf(text + o, ",\"match\":");
	json_str(text, &o, match->b, match->n);
	o += (size_t)sprintf(text + o, ",\"algorithm\":\"fixed_window\",\"limit\":1,\"window_ms\":1000}");
	if (rule_from_text(text, o, nm, &r, NULL))
		return NULL;
	return r;
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct rule *const *)a)->name, (*(struct rule *const *)b)->name);
}

/* Stems the rules share, so that prefixes tie and nest. */
static const char *const stems[] = { "", "/", "/api", "/api/", "/api/users", "/api/users/", "/v1/", "/v1/x", "/a\\", "/a" };

static void gen_name(struct bytes *nm, uint32_t *st)
{
	static const char alpha[] = "aAbB_.-0z";

	nm->n = 0;
	switch (below(st, 30)) {
	case 0:
		memcpy(nm->b, ":max_clock_skew_ms", nm->n = 18); /* a rules copy's field, no rule */
		return;
	case 1:
		memcpy(nm->b, "a b", nm->n = 3);
		return;
	case 2:
		memset(nm->b, 'n', nm->n = 65); /* one byte too long */
		return;
	case 3:
		memcpy(nm->b, "a\0b", nm->n = 3);
		return;
	default:
		for (int i = 1 + (int)below(st, 3); i > 0; i--)
			put(nm, (unsigned char)alpha[below(st, sizeof(alpha) - 1)]);
	}
}

static void add_str(struct bytes *s, const char *p)
{
	while (*p)
		put(s, (unsigned char)*p++);
}

/*
 * Drop the rules whose match is not UTF-8: the daemon refuses them
 * (core/rules.c) and so never writes them into the copies the Lua side
 * reads; the other refusals (not glob_valid, empty, NUL) stay, for the Lua
 * side to refuse alike.
 */
static void drop_not_utf8(struct rcase *rc, struct glob_gen *globs)
{
	int k = 0;

	for (int i = 0; i < rc->n; i++)
		if (jsonv_utf8_valid(rc->match[i].b, rc->match[i].n)) {
			rc->name[k] = rc->name[i];
			rc->match[k] = rc->match[i];
			globs[k++] = globs[i];
		}
	if (!k) { /* one rule at least: an exact one */
		rc->match[0].n = 0;
		add_str(&rc->match[0], "/api");
		globs[0].nt = 0;
		k = 1;
	}
	rc->n = k;
	snprintf(rc->ntext, sizeof(rc->ntext), "%u", (unsigned)rc->n & 0xffu); /* n <= MAXRULES */
}

/* A ruleset of 1..12 rules with unique names, and (in the caller) paths for it. */
static void gen_rules(struct rcase *rc, struct glob_gen *globs, uint32_t *st)
{
	rc->n = 1 + (int)below(st, MAXRULES);
	snprintf(rc->ntext, sizeof(rc->ntext), "%d", rc->n);
	for (int i = 0; i < rc->n; i++) {
		struct bytes *m = &rc->match[i];
		int dup;

		do { /* names are a hash's fields: unique */
			gen_name(&rc->name[i], st);
			dup = 0;
			for (int j = 0; j < i; j++)
				dup |= rc->name[j].n == rc->name[i].n && !memcmp(rc->name[j].b, rc->name[i].b, rc->name[i].n);
		} while (dup);
		m->n = 0;
		globs[i].nt = 0;
		switch (below(st, 12)) {
		case 0: case 1: case 2: /* exact: a stem and a literal tail, or another rule's exact match */
			if (i && !below(st, 3) && !memchr(rc->match[i - 1].b, '*', rc->match[i - 1].n)) {
				*m = rc->match[i - 1];
				break;
			}
			add_str(m, stems[below(st, TEST_N(stems) - 2)]);
			for (int j = (int)below(st, 4); j > 0; j--)
				put(m, "ab/.-]"[below(st, 6)]);
			break;
		case 3: /* an escape only: a glob for C, though it matches one path */
			add_str(m, stems[below(st, TEST_N(stems))]);
			put(m, '\\');
			put(m, "*?a["[below(st, 4)]);
			break;
		case 4: /* something the daemon refuses: not glob_valid, empty, a NUL cut */
			add_str(m, stems[below(st, TEST_N(stems))]);
			switch (below(st, 4)) {
			case 0: add_str(m, "[ab"); break;
			case 1: put(m, '\\'); break;
			case 2: m->n = 0; break;
			default: put(m, 0); add_str(m, "*"); break;
			}
			break;
		default: { /* a glob on a stem: its tail from the glob generator, or a plain '*' */
			const char *stem = stems[below(st, TEST_N(stems))];

			if (below(st, 3)) {
				struct glob_gen *g = &globs[i];

				do /* short, and no NUL (the daemon refuses a match with one: case 4 has those) */
					gen_glob(g, st);
				while (g->pat.n > 24 || memchr(g->pat.b, 0, g->pat.n));
				add_str(m, stem);
				for (size_t j = 0; j < g->pat.n; j++)
					put(m, (unsigned char)g->pat.b[j]);
			} else {
				add_str(m, stem);
				put(m, below(st, 4) ? '*' : '?');
			}
			if (!memchr(m->b, '*', m->n) && !memchr(m->b, '?', m->n) && !memchr(m->b, '[', m->n) &&
			    !memchr(m->b, '\\', m->n)) {
				put(m, '*');
				globs[i].nt = 0; /* not stem + glob: no path is built from it */
			}
		}
		}
	}
}

/* A path for the ruleset: a rule's exact match, one built for a glob, a stem and more, or random. */
static void gen_rule_path(const struct rcase *rc, const struct glob_gen *globs, struct bytes *s, uint32_t *st)
{
	int i = (int)below(st, (unsigned)rc->n);

	s->n = 0;
	switch (below(st, 10)) {
	case 0: case 1: case 2:
		*s = rc->match[i];
		break;
	case 3: case 4: case 5:
		if (globs[i].nt) {
			const char *m = rc->match[i].b;
			size_t stem = rc->match[i].n - globs[i].pat.n;

			for (size_t j = 0; j < stem; j++)
				put(s, (unsigned char)m[j]);
			{
				struct bytes tail;

				gen_path(&globs[i], &tail, st);
				for (size_t j = 0; j < tail.n; j++)
					put(s, (unsigned char)tail.b[j]);
			}
			break;
		}
		/* fall through */
	case 6:
		add_str(s, stems[below(st, TEST_N(stems))]);
		for (int j = (int)below(st, 5); j > 0; j--)
			put(s, some_byte(st));
		break;
	case 7: case 8:
		*s = rc->match[i];
		if (s->n)
			s->n -= below(st, 2);
		put(s, some_byte(st));
		break;
	default:
		gen_raw(s, 10, st);
	}
}

struct pick_tally {
	long cases, none, exact, glob, ties, name_order, prefix_checked, bad;
};

/* C's answer for one case into winner ("" for none), and how it was decided (into the tallies). */
static void c_pick(const struct rcase *rc, struct pick_tally *t, char winner[RULE_NAME_MAX + 1])
{
	struct rule *v[MAXRULES];
	struct ruleset rs = { 0 };
	const struct rule *w;
	int nv = 0, at_best = 0, exacts = 0;

	for (int i = 0; i < rc->n; i++) {
		struct rule *r = c_rule(&rc->name[i], &rc->match[i]);

		if (r)
			v[nv++] = r;
	}
	/* in reverse name order, the worst for a tie broken by position: ruleset_match breaks
	 * ties by name whatever the order (rulestore_refresh happens to load by name) */
	qsort(v, (size_t)nv, sizeof(v[0]), by_name);
	for (int i = nv - 1; i >= 0; i--)
		ck_assert_int_eq(ruleset_put(&rs, v[i]), 0);
	w = ruleset_match(&rs, rc->path.b, rc->path.n);
	snprintf(winner, RULE_NAME_MAX + 1, "%s", w ? w->name : "");
	/* how it was decided: several matching exact rules, or globs tied on the prefix */
	for (size_t i = 0; w && i < rs.n; i++) {
		const struct rule *r = rs.v[i];

		if (!rule_matches(r, rc->path.b, rc->path.n))
			continue;
		if (!w->is_glob && !r->is_glob)
			exacts++;
		else if (w->is_glob && r->is_glob && r->literal_prefix == w->literal_prefix)
			at_best++;
	}
	t->cases++;
	t->none += !w;
	t->exact += w && !w->is_glob;
	t->glob += w && w->is_glob;
	t->ties += at_best > 1 || exacts > 1;
	ruleset_clear(&rs);
}

START_TEST(test_rule_pick_random)
{
	unsigned seed = seed_of() ^ 0x5bd1e995u;
	uint32_t st = seed ? seed : 1;
	struct pick_tally t = { 0 };
	struct glob_gen *globs = malloc(sizeof(*globs) * MAXRULES);
	struct rcase *cases = malloc(sizeof(*cases) * 50);
	char (*want)[RULE_NAME_MAX + 1] = malloc(sizeof(*want) * 50);
	char h1[2 * MAXB + 1], h2[2 * MAXB + 1];
	long caseno = 0;

	ck_assert(globs && cases && want);
	/* 400 calls of 50 cases: a ruleset (with 1..12 rules) and a path each, 4 paths a ruleset */
	for (int b = 0; b < 400; b++) {
		struct call k = { 0 };
		redisReply *r;

		call_start(&k, "pick");
		for (int i = 0; i < 50; i++) {
			struct rcase *rc = &cases[i];

			if (i % 4 == 0) {
				gen_rules(rc, globs, &st);
				drop_not_utf8(rc, globs);
			} else
				*rc = cases[i - 1];
			gen_rule_path(rc, globs, &rc->path, &st);
			c_pick(rc, &t, want[i]);
			call_arg(&k, rc->path.b, rc->path.n);
			call_arg(&k, rc->ntext, strlen(rc->ntext));
			for (int j = 0; j < rc->n; j++) {
				call_arg(&k, rc->name[j].b, rc->name[j].n);
				call_arg(&k, rc->match[j].b, rc->match[j].n);
			}
		}
		r = call_send(&k, 50, seed);
		for (int i = 0; i < 50; i++) {
			const redisReply *e = r->element[i];

			if (e->type == REDIS_REPLY_STRING && strlen(want[i]) == e->len && !memcmp(want[i], e->str, e->len))
				continue;
			if (t.bad++ < SHOW_MAX) {
				fprintf(stderr, "seed %u case %ld: path %s: C \"%s\", Lua \"%.*s\"; rules:\n", seed, caseno + i,
					hex(cases[i].path.b, cases[i].path.n, h1, sizeof(h1)), want[i],
					e->type == REDIS_REPLY_STRING ? (int)e->len : 5,
					e->type == REDIS_REPLY_STRING ? e->str : "(not)");
				for (int j = 0; j < cases[i].n; j++)
					fprintf(stderr, "  %s %s\n", hex(cases[i].name[j].b, cases[i].name[j].n, h1, sizeof(h1)),
						hex(cases[i].match[j].b, cases[i].match[j].n, h2, sizeof(h2)));
			}
		}
		freeReplyObject(r);
		call_free(&k);
		caseno += 50;
	}
	fprintf(stderr, "glob_lua: seed %u: %ld rule picks: %ld exact, %ld glob, %ld none; %ld decided among equals by name\n",
		seed, t.cases, t.exact, t.glob, t.none, t.ties);
	ck_assert_msg(t.bad == 0, "seed %u: Lua and C pick different rules in %ld of %ld cases (first ones above)", seed,
		      t.bad, t.cases);
	/* every way of deciding is exercised */
	ck_assert_msg(t.exact > t.cases / 20 && t.glob > t.cases / 5 && t.none > t.cases / 20 && t.ties > t.cases / 50,
		      "seed %u: too few of a kind", seed);
	free(globs);
	free(cases);
	free(want);
}
END_TEST

/* rule_literal_prefix against the C rule's literal_prefix and is_glob, on random valid matches. */
START_TEST(test_literal_prefix)
{
	unsigned seed = seed_of() ^ 0x27d4eb2fu;
	uint32_t st = seed ? seed : 1;
	struct glob_gen g;
	long checked = 0, globs = 0;

	for (int b = 0; b < 20; b++) {
		struct bytes m[BATCH];
		struct rule *rules[BATCH];
		struct call k = { 0 };
		redisReply *r;
		int n = 0;

		call_start(&k, "prefix");
		while (n < BATCH) {
			struct bytes nm = { .n = 1, .b = "p" };

			if (below(&st, 4)) {
				gen_glob(&g, &st);
				m[n] = g.pat;
			} else {
				gen_raw(&m[n], 10, &st);
			}
			if (!(rules[n] = c_rule(&nm, &m[n])))
				continue; /* not a rule */
			call_arg(&k, m[n].b, m[n].n);
			n++;
		}
		r = call_send(&k, 2 * BATCH, seed);
		for (int i = 0; i < n; i++) {
			char h[2 * MAXB + 1];

			ck_assert_msg(test_elem_int(r, 2 * (size_t)i) == (long long)rules[i]->literal_prefix &&
					      test_elem_int(r, 2 * (size_t)i + 1) == rules[i]->is_glob,
				      "seed %u: match %s: C prefix %zu glob %d, Lua %lld %lld", seed,
				      hex(m[i].b, m[i].n, h, sizeof(h)), rules[i]->literal_prefix, rules[i]->is_glob,
				      test_elem_int(r, 2 * (size_t)i), test_elem_int(r, 2 * (size_t)i + 1));
			globs += rules[i]->is_glob;
			checked++;
			rule_free(rules[i]);
		}
		freeReplyObject(r);
		call_free(&k);
	}
	ck_assert_int_eq(checked, 20 * BATCH);
	ck_assert_int_gt(globs, checked / 2);
	ck_assert_int_lt(globs, checked);
}
END_TEST

/*
 * The daemon's matches are C strings: it refuses rule text with "\u0000"
 * (core/jsonv.c), and lib/ruleset.lua skips a match with a NUL byte.
 */
START_TEST(test_match_nul_refused)
{
	static const char json[] =
		"{\"name\":\"n\",\"match\":\"/a\\u0000b\",\"algorithm\":\"fixed_window\",\"limit\":1,\"window_ms\":1}";
	struct rule *r = NULL;
	struct call k = { 0 };
	redisReply *rep;

	ck_assert_int_eq(rule_from_text(json, sizeof(json) - 1, NULL, &r, NULL), -EINVAL);
	ck_assert_ptr_null(r);
	call_start(&k, "pick");
	call_arg(&k, "/a", 2), call_arg(&k, "1", 1), call_arg(&k, "n", 1), call_arg(&k, "/a\0b", 4);
	call_arg(&k, "/a\0b", 4), call_arg(&k, "1", 1), call_arg(&k, "n", 1), call_arg(&k, "/a\0b", 4);
	rep = call_send(&k, 2, 0);
	ck_assert_str_eq(rep->element[0]->str, "");
	ck_assert_str_eq(rep->element[1]->str, "");
	freeReplyObject(rep);
	call_free(&k);
}
END_TEST

/*
 * Every single-byte path 0x01..0xff against sets, in SSCAN MATCH of
 * glob_to_redis's text and in glob_match: the same bytes.  Each set is one
 * Redis reads otherwise when copied as written.
 */
START_TEST(test_redis_match_sets)
{
	static const char *const pats[] = {
		"[a-]", "[!a-]", "[z-a]", "[^z-a]", "[a-\xff]", "[\x01-\xff]", "[\x80-\xff]", "[\x7f-\x81]",
		"[]-a]", "[\\]-a]", "[\\\\-a]", "[!]]", "[]a-]", "[--/]", "[\\^-a]", "[a^]", "x[a-]", "[a-c-e]",
		"[\\z-a]", "[a-\\]]", "*[b-a]*", "[\xff-\x80]", "[!\x80-\xff]",
	};

	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		struct strbuf b = { 0 };
		char cursor[32] = "0", seen[256] = { 0 };
		redisReply *r;

		ck_assert_msg(glob_valid(pats[i], strlen(pats[i])), "%s", pats[i]);
		ck_assert_int_eq(glob_to_redis(pats[i], &b), 0);
		freeReplyObject(redisCommand(c, "DEL set"));
		for (unsigned ch = 1; ch < 256; ch++) {
			char m[2] = { 'x', (char)ch };
			int x = pats[i][0] == 'x';

			freeReplyObject(redisCommand(c, "SADD set %b", m + !x, (size_t)1 + x));
		}
		do {
			r = redisCommand(c, "SSCAN set %s MATCH %b COUNT 1000", cursor, b.p, b.len);
			ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
			snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
			for (size_t k = 0; k < r->element[1]->elements; k++) {
				const redisReply *e = r->element[1]->element[k];

				seen[(unsigned char)e->str[e->len - 1]] = 1;
			}
			freeReplyObject(r);
		} while (strcmp(cursor, "0"));
		for (unsigned ch = 1; ch < 256; ch++) {
			char m[2] = { 'x', (char)ch };
			int x = pats[i][0] == 'x';

			ck_assert_msg(seen[ch] == glob_match(pats[i], strlen(pats[i]), m + !x, (size_t)1 + x),
				      "pattern \"%s\" (Redis: \"%s\"), byte 0x%02x: Redis %d, glob_match %d", pats[i],
				      b.p, ch, seen[ch], !seen[ch]);
		}
		strbuf_free(&b);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("glob_lua");
	TCase *tc = test_tcase(s, "glob_lua", setup, teardown, 120);

	tcase_add_test(tc, test_glob_fixed);
	tcase_add_test(tc, test_glob_random);
	tcase_add_test(tc, test_glob_pathological);
	tcase_add_test(tc, test_rule_pick_random);
	tcase_add_test(tc, test_literal_prefix);
	tcase_add_test(tc, test_match_nul_refused);
	tcase_add_test(tc, test_redis_match_sets);
	return test_run_suite(s);
}

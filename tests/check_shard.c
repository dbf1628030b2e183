/*
 * The shard function of key layout 2, in C (core/shard.h) and in Lua
 * (lua/lib/shard.lua), against CLUSTER KEYSLOT of a real cluster-enabled
 * redis-server (one node, no slots assigned: CLUSTER KEYSLOT and key-less
 * EVAL work without any):
 *   - fixed vectors, asserted in C, in Lua and on the server, and the same
 *     table as the one lua/README.md ("Shards") prints;
 *   - crafted inputs (braces in every order, empty tags, NUL inside and
 *     outside tags, every byte, 10 kB) and a few thousand random byte
 *     strings, compared three ways; any difference fails naming the input
 *     in hex;
 *   - the Python one-liners of lua/README.md, run with Debian's python3 and
 *     redis-py (python3-redis, which tools/deps.sh installs).
 * The Lua side is the fragment itself, read from the source tree and
 * followed by a return line: what every script that includes it runs.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/shard.h"
#include "tests/harness.h"

#define FRAGMENT "lua/lib/shard.lua"
#define README "lua/README.md"
/* Debian's interpreter, the one python3-redis installs redis-py for. */
#define PYTHON_DEFAULT "/usr/bin/python3"

static struct test_redis cluster;
static redisContext *c;
static char lua_sha[41];

static void cluster_start(void)
{
	const struct test_redis_opts o = { .cluster = 1 };

	if (test_redis_start_with(&cluster, &o) != 0)
		abort();
}

static void cluster_stop(void)
{
	test_redis_stop(&cluster);
}

/* The fragment followed by a return line, loaded once per test (SCRIPT LOAD). */
static void setup(void)
{
	static const char ret[] = "\nreturn {keyslot(ARGV[1]), shard_of(ARGV[1])}\n";
	size_t len;
	char *frag = test_read_src(FRAGMENT, &len), *script;
	redisReply *r;

	c = test_redis_connect(&cluster);
	ck_assert_msg(frag != NULL, "cannot read %s: %s (run from the repository root, or set SLUICE_SRCDIR)",
		      FRAGMENT, strerror(errno));
	/* read as is, so it must stand alone: an include would need the assembler */
	ck_assert_msg(strncmp(frag, "--@", 3) != 0 && !strstr(frag, "\n--@"),
		      "%s has a --@ directive: this test reads the fragment alone", FRAGMENT);
	script = malloc(len + sizeof(ret));
	ck_assert_ptr_nonnull(script);
	memcpy(script, frag, len);
	memcpy(script + len, ret, sizeof(ret));
	r = test_cmd(c, "SCRIPT LOAD %s", script);
	ck_assert_msg(r->type == REDIS_REPLY_STRING && r->len == 40, "SCRIPT LOAD of %s: %s", FRAGMENT,
		      r->type == REDIS_REPLY_ERROR ? r->str : "not a SHA1");
	memcpy(lua_sha, r->str, 41);
	freeReplyObject(r);
	free(script);
	free(frag);
}

static void teardown(void)
{
	redisFree(c);
	c = NULL;
}

/* "6162...(n bytes)": the first 64 bytes of s in hex, for a failure message; static buffer. */
static const char *hex(const char *s, size_t n)
{
	static char buf[200];
	size_t m = n < 64 ? n : 64, k = 0;

	for (size_t i = 0; i < m; i++)
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%02x", (unsigned char)s[i]);
	snprintf(buf + k, sizeof(buf) - k, "%s (%zu bytes)", n > m ? "..." : "", n);
	return buf;
}

/* ---- fixed vectors: the table of lua/README.md, "Shards" ---------------------------------- */

struct vector {
	const char *in;
	size_t len;
	unsigned keyslot, shard;
};

#define V(s, slot) { s, sizeof(s) - 1, slot, (slot) % 1024 }
static const struct vector vectors[] = {
	V("", 0),                         /* CRC16 of nothing */
	V("123456789", 12739),            /* the CRC16/XMODEM check value 0x31C3 */
	V("foo", 12182),                  /* the cluster specification's example */
	V("/api/users", 4935),
	V("{user1000}.following", 3443),  /* the specification's hash tags: both keys in one slot */
	V("{user1000}.followers", 3443),
	V("foo{}{bar}", 8363),            /* an empty tag: the whole string (not "bar") */
	V("{}", 15257),
	V("foo{{bar}}zap", 4015),         /* the tag is "{bar" */
	V("foo{bar}{zap}", 5061),         /* the first tag only: "bar" */
	V("a{b}c{d}", 3300),              /* "b" */
	V("}{", 12793),                   /* no '}' after the '{': the whole string */
	V("{", 4092),
	V("}", 12090),
	V("a\0{b}", 3300),                /* NUL before the tag; the tag "b" as in a{b}c{d} */
	V("{a\0b}x", 8383),               /* NUL inside the tag */
	V("\0", 0),
	V("/users/{id}/posts", 7568),     /* a path with braces is sharded by its tag: "id" */
	V("\xff{\x80}", 4488),            /* high bytes */
	V("a{}b}c", 2041),                /* an empty tag and a later '}': still the whole string */
};
#undef V

START_TEST(test_crc16_check_value)
{
	ck_assert_uint_eq(shard_crc16("123456789", 9), 0x31C3);
	ck_assert_uint_eq(shard_crc16("", 0), 0);
}
END_TEST

/* The Lua fragment's {keyslot, shard_of} of n bytes of s; fails the test on an error reply. */
static void lua_shard(const char *s, size_t n, long long *slot, long long *shard)
{
	const char *argv[] = { "EVALSHA", lua_sha, "0", s };
	size_t lens[] = { 7, 40, 1, n };
	redisReply *r = redisCommandArgv(c, 4, argv, lens);

	ck_assert_msg(r != NULL, "EVALSHA: %s", c->errstr);
	ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 2, "Lua keyslot of %s: %s", hex(s, n),
		      r->type == REDIS_REPLY_ERROR ? r->str : "not a pair");
	*slot = test_elem_int(r, 0);
	*shard = test_elem_int(r, 1);
	freeReplyObject(r);
}

static long long server_keyslot(const char *s, size_t n)
{
	redisReply *r = test_cmd(c, "CLUSTER KEYSLOT %b", s, n);
	long long v;

	ck_assert_msg(r->type == REDIS_REPLY_INTEGER, "CLUSTER KEYSLOT of %s: %s", hex(s, n),
		      r->type == REDIS_REPLY_ERROR ? r->str : "not an integer");
	v = r->integer;
	freeReplyObject(r);
	return v;
}

START_TEST(test_vectors)
{
	for (int i = 0; i < TEST_N(vectors); i++) {
		const struct vector *v = &vectors[i];
		long long slot, shard;

		ck_assert_msg(shard_keyslot(v->in, v->len) == v->keyslot, "C keyslot of %s: %u, want %u",
			      hex(v->in, v->len), shard_keyslot(v->in, v->len), v->keyslot);
		ck_assert_msg(shard_of(v->in, v->len) == v->shard, "C shard of %s: %u, want %u",
			      hex(v->in, v->len), shard_of(v->in, v->len), v->shard);
		lua_shard(v->in, v->len, &slot, &shard);
		ck_assert_msg(slot == v->keyslot && shard == v->shard, "Lua keyslot, shard of %s: %lld, %lld, want %u, %u",
			      hex(v->in, v->len), slot, shard, v->keyslot, v->shard);
		ck_assert_msg(server_keyslot(v->in, v->len) == v->keyslot, "CLUSTER KEYSLOT of %s: %lld, want %u",
			      hex(v->in, v->len), server_keyslot(v->in, v->len), v->keyslot);
	}
}
END_TEST

/* shard_slot(k): the slot of shard k's tag "{k}", as CLUSTER KEYSLOT of the real node has it, for all 1024 */
START_TEST(test_shard_slot)
{
	for (unsigned k = 0; k < SHARD_COUNT; k++) {
		char tag[16];
		int n = snprintf(tag, sizeof(tag), "{%u}", k);
		long long want = server_keyslot(tag, (size_t)n);

		ck_assert_msg(shard_slot(k) == want, "shard_slot(%u) = %u, CLUSTER KEYSLOT %s = %lld", k, shard_slot(k), tag, want);
		ck_assert_uint_eq(shard_slot(k + SHARD_COUNT), shard_slot(k));
	}
	ck_assert_uint_eq(shard_slot(0), 13907); /* CLUSTER KEYSLOT {0} */
}
END_TEST

/*
 * Bytes of a README literal b"..." (Python bytes: \xHH is exactly two hex
 * digits, \\ and \" the characters) at p, just after the opening quote, into
 * out (cap bytes); returns the length and sets *end to the closing quote,
 * or returns -1 when malformed.
 */
static long parse_literal(const char *p, char *out, size_t cap, const char **end)
{
	size_t n = 0;

	for (; *p && *p != '"'; p++) {
		unsigned v;

		if (n == cap)
			return -1;
		if (*p != '\\') {
			out[n++] = *p;
			continue;
		}
		p++;
		if (*p == '\\' || *p == '"')
			out[n++] = *p;
		else if (*p == 'x' && strspn(p + 1, "0123456789abcdefABCDEF") >= 2 && sscanf(p + 1, "%2x", &v) == 1)
			out[n++] = (char)v, p += 2;
		else
			return -1;
	}
	*end = p;
	return *p == '"' ? (long)n : -1;
}

START_TEST(test_vectors_are_the_readme_table)
{
	char *doc = test_read_src(README, NULL), *sec, *line, *save = NULL;
	int row = 0;

	ck_assert_msg(doc != NULL, "cannot read %s: %s (run from the repository root, or set SLUICE_SRCDIR)", README,
		      strerror(errno));
	sec = strstr(doc, "\n## Shards\n");
	ck_assert_msg(sec != NULL, "%s has no \"## Shards\" section", README);
	if ((line = strstr(sec + 1, "\n## ")))
		*line = '\0';
	/* the rows: | `b"<input>"` | <bytes> | <keyslot> | <shard> | */
	for (line = strtok_r(sec, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char in[64];
		long n;
		unsigned len, slot, shard;
		const char *end;

		if (strncmp(line, "| `b\"", 5) != 0)
			continue;
		n = parse_literal(line + 5, in, sizeof(in), &end);
		ck_assert_msg(n >= 0, "%s: a malformed input in the row \"%s\"", README, line);
		ck_assert_msg(sscanf(end, "\"` | %u | %u | %u |", &len, &slot, &shard) == 3,
			      "%s: cannot read the row \"%s\"", README, line);
		ck_assert_msg(row < TEST_N(vectors), "%s: more rows than the %d vectors of %s", README, TEST_N(vectors),
			      __FILE__);
		ck_assert_msg((size_t)n == vectors[row].len && memcmp(in, vectors[row].in, (size_t)n) == 0 &&
				      len == vectors[row].len && slot == vectors[row].keyslot && shard == vectors[row].shard,
			      "%s: row %d \"%s\" differs from the vector %s: %zu bytes, keyslot %u, shard %u", README,
			      row + 1, line, hex(vectors[row].in, vectors[row].len), vectors[row].len,
			      vectors[row].keyslot, vectors[row].shard);
		row++;
	}
	ck_assert_msg(row == TEST_N(vectors), "%s prints %d vectors, %s has %d", README, row, __FILE__,
		      TEST_N(vectors));
	free(doc);
}
END_TEST

/* ---- inputs compared three ways ------------------------------------------------------ */

struct inputs {
	char **s;
	size_t *len;
	int n, cap;
};

static void add(struct inputs *in, const char *s, size_t n)
{
	if (in->n == in->cap) {
		in->cap = in->cap ? in->cap * 2 : 256;
		in->s = realloc(in->s, (size_t)in->cap * sizeof(*in->s));
		in->len = realloc(in->len, (size_t)in->cap * sizeof(*in->len));
		ck_assert(in->s && in->len);
	}
	in->s[in->n] = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(in->s[in->n]);
	memcpy(in->s[in->n], s, n);
	in->len[in->n++] = n;
}

#define ADD(in, lit) add((in), (lit), sizeof(lit) - 1)

static void inputs_free(struct inputs *in)
{
	for (int i = 0; i < in->n; i++)
		free(in->s[i]);
	free(in->s);
	free(in->len);
}

/* xorshift64*: a fixed sequence, so a failure names an input that the next run makes again. */
static uint64_t rnd_state = 0x5eed5eed5eed5eedULL;

static uint32_t rnd(void)
{
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return (uint32_t)((rnd_state * 0x2545F4914F6CDD1DULL) >> 32);
}

#define BIG 10240 /* bytes: the 10 kB inputs */

/* One byte of alphabet `a`: all rich in '{', '}', NUL and bytes >= 0x80 but the last. */
static char rnd_byte(int a)
{
	static const char small[] = { '{', '}', '\0', 'a' };
	static const char mixed[] = { '{', '}', '\0', '\xff', '\x80', 'a', 'b', '{', '}' };
	uint32_t r = rnd();

	switch (a) {
	case 0:
		return small[r % sizeof(small)];
	case 1:
		return mixed[r % sizeof(mixed)];
	case 2: /* any byte, a quarter of them '{' and a quarter '}' */
		return r % 4 == 0 ? '{' : r % 4 == 1 ? '}' : (char)(r >> 8);
	case 3: /* any byte, uniformly */
		return (char)(r >> 8);
	default: /* braces rare (1 in 4000 each), so tags are long or absent */
		return r % 4000 == 0 ? '{' : r % 4000 == 1 ? '}' : (char)('c' + (r >> 8) % 20);
	}
}

static void crafted(struct inputs *in)
{
	static const char sym[] = { '{', '}', '\0', 'a', '\xff' };
	static char big[BIG + 2];
	char b[512];

	for (int i = 0; i < TEST_N(vectors); i++)
		add(in, vectors[i].in, vectors[i].len);
	ADD(in, "{}");
	ADD(in, "}{");
	ADD(in, "{{}}");
	ADD(in, "a{b}c{d}");
	ADD(in, "{");
	ADD(in, "}");
	ADD(in, "{}{}");
	ADD(in, "{}}");
	ADD(in, "{{}");
	ADD(in, "}{}{");
	ADD(in, "}{a}");
	ADD(in, "{a}}");
	ADD(in, "{\0}");
	ADD(in, "\0{\0}\0");
	ADD(in, "{\0\0}");
	ADD(in, "{a\0b}");
	ADD(in, "x{\0{}\0}");
	ADD(in, "{\0}{\0}");
	/* every string of 1, 2 and 3 of the interesting bytes */
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 5; j++) {
			b[0] = sym[i], b[1] = sym[j];
			add(in, b, 2);
			for (int k = 0; k < 5; k++) {
				b[2] = sym[k];
				add(in, b, 3);
			}
		}
	/* every byte alone, all 256 in order, and all 256 inside a tag (but '}', which ends it) */
	for (int i = 0; i < 256; i++) {
		b[0] = (char)i;
		add(in, b, 1);
	}
	for (int i = 0; i < 256; i++)
		b[i] = (char)i;
	add(in, b, 256);
	b[0] = '{';
	for (int i = 0; i < 256; i++)
		b[1 + i] = i == '}' ? 'x' : (char)i;
	b[257] = '}';
	add(in, b, 258);
	/* 10 kB: no brace; one 10 kB tag; a '{' and no '}'; '}' first, then the tag; the tag at the end */
	for (int i = 0; i < BIG; i++)
		big[i] = (char)('a' + i % 26);
	add(in, big, BIG);
	big[0] = '{', big[BIG - 1] = '}';
	add(in, big, BIG);
	big[BIG - 1] = 'z';
	add(in, big, BIG);
	big[0] = '}', big[1] = '{', big[BIG - 1] = '}';
	add(in, big, BIG);
	memcpy(big, "abc", 3);
	memcpy(big + BIG - 4, "{\0x}", 4);
	add(in, big, BIG);
}

static void random_strings(struct inputs *in, int count)
{
	static char s[BIG];

	for (int i = 0; i < count; i++) {
		int big = i % 50 == 49;
		int a = big ? 3 + (int)(rnd() % 2) : (int)(rnd() % 4);
		size_t n = big ? BIG : rnd() % 65;

		for (size_t k = 0; k < n; k++)
			s[k] = rnd_byte(a);
		add(in, s, n);
	}
}

#define MAX_SHOWN 20 /* differences shown in full in the failure message */

/*
 * C shard_keyslot and shard_of, the Lua fragment's keyslot and shard_of and
 * CLUSTER KEYSLOT on every input, pipelined in batches; fails listing the
 * inputs (hex) on which any two differ.
 */
static void compare_three_ways(const struct inputs *in)
{
	char msg[MAX_SHOWN * 320 + 64] = "";
	int bad = 0;
	size_t m = 0;

	for (int from = 0; from < in->n; from += 200) {
		int to = from + 200 < in->n ? from + 200 : in->n;

		for (int i = from; i < to; i++) {
			const char *argv[] = { "EVALSHA", lua_sha, "0", in->s[i] };
			size_t lens[] = { 7, 40, 1, in->len[i] };

			redisAppendCommandArgv(c, 4, argv, lens);
			redisAppendCommand(c, "CLUSTER KEYSLOT %b", in->s[i], in->len[i]);
		}
		for (int i = from; i < to; i++) {
			redisReply *lua = NULL, *srv = NULL;
			long long ls = -1, lsh = -1, ss = -1;
			unsigned cs = shard_keyslot(in->s[i], in->len[i]), csh = shard_of(in->s[i], in->len[i]);

			ck_assert_msg(redisGetReply(c, (void **)&lua) == REDIS_OK &&
					      redisGetReply(c, (void **)&srv) == REDIS_OK,
				      "redis I/O: %s", c->errstr);
			if (lua->type == REDIS_REPLY_ARRAY && lua->elements == 2 &&
			    lua->element[0]->type == REDIS_REPLY_INTEGER && lua->element[1]->type == REDIS_REPLY_INTEGER)
				ls = lua->element[0]->integer, lsh = lua->element[1]->integer;
			if (srv->type == REDIS_REPLY_INTEGER)
				ss = srv->integer;
			if (ls != cs || ss != cs || lsh != csh || csh != cs % 1024) {
				if (bad++ < MAX_SHOWN && m < sizeof(msg))
					m += (size_t)snprintf(msg + m, sizeof(msg) - m,
							      "\n  input %d %s: keyslot C %u, Lua %lld, CLUSTER KEYSLOT %lld; "
							      "shard C %u, Lua %lld%s%s",
							      i, hex(in->s[i], in->len[i]), cs, ls, ss, csh, lsh,
							      lua->type == REDIS_REPLY_ERROR ? "; Lua error: " : "",
							      lua->type == REDIS_REPLY_ERROR ? lua->str : "");
			}
			freeReplyObject(lua);
			freeReplyObject(srv);
		}
	}
	ck_assert_msg(bad == 0, "%d of %d inputs differ%s%s", bad, in->n, msg, bad > MAX_SHOWN ? "\n  ..." : "");
}

START_TEST(test_crafted_three_ways)
{
	struct inputs in = { 0 };

	crafted(&in);
	compare_three_ways(&in);
	inputs_free(&in);
}
END_TEST

START_TEST(test_random_three_ways)
{
	struct inputs in = { 0 };

	random_strings(&in, 4000);
	compare_three_ways(&in);
	inputs_free(&in);
}
END_TEST

/* ---- the Python one-liners of lua/README.md ------------------------------------------ */

/*
 * The README's first ```python block of "## Shards" (it defines shard() with
 * redis-py and shard_binascii() without), then a loop that reads inputs in
 * hex, one a line, and prints both shards: run on the crafted inputs and 500
 * random ones, compared with C shard_of.
 */
START_TEST(test_python_one_liners)
{
	static const char loop[] =
		"\nimport sys\n"
		"for line in sys.stdin:\n"
		"    p = bytes.fromhex(line.strip())\n"
		"    print(shard(p), shard_binascii(p))\n";
	const char *python = getenv("SLUICE_PYTHON") && *getenv("SLUICE_PYTHON") ? getenv("SLUICE_PYTHON") : PYTHON_DEFAULT;
	char *doc = test_read_src(README, NULL), *sec, *code, *end;
	char dir[] = "/tmp/sluice-shard-py-XXXXXX", script[64], data[64], errs[64], cmd[512];
	struct inputs in = { 0 };
	FILE *fp;
	int bad = 0, i = 0, status;
	unsigned a, b;

	ck_assert_msg(doc != NULL, "cannot read %s: %s", README, strerror(errno));
	sec = strstr(doc, "\n## Shards\n");
	ck_assert_msg(sec != NULL, "%s has no \"## Shards\" section", README);
	code = strstr(sec, "\n```python\n");
	end = code ? strstr(code + 11, "\n```") : NULL;
	ck_assert_msg(end != NULL, "%s: no ```python block in \"## Shards\"", README);
	*end = '\0';
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(script, sizeof(script), "%s/shard.py", dir);
	snprintf(data, sizeof(data), "%s/inputs.hex", dir);
	snprintf(errs, sizeof(errs), "%s/stderr", dir);
	fp = fopen(script, "w");
	ck_assert_ptr_nonnull(fp);
	fprintf(fp, "%s\n%s", code + 11, loop);
	fclose(fp);

	crafted(&in);
	random_strings(&in, 500);
	fp = fopen(data, "w");
	ck_assert_ptr_nonnull(fp);
	for (int k = 0; k < in.n; k++) {
		for (size_t j = 0; j < in.len[k]; j++)
			fprintf(fp, "%02x", (unsigned char)in.s[k][j]);
		fputc('\n', fp);
	}
	fclose(fp);

	snprintf(cmd, sizeof(cmd), "'%s' '%s' < '%s' 2> '%s'", python, script, data, errs);
	fp = popen(cmd, "r");
	ck_assert_ptr_nonnull(fp);
	for (char line[64]; fgets(line, sizeof(line), fp) && sscanf(line, "%u %u", &a, &b) == 2 && i < in.n; i++)
		if (a != shard_of(in.s[i], in.len[i]) || b != shard_of(in.s[i], in.len[i]))
			if (bad++ < MAX_SHOWN)
				fprintf(stderr, "python: input %s: shard %u, shard_binascii %u, C %u\n",
					hex(in.s[i], in.len[i]), a, b, shard_of(in.s[i], in.len[i]));
	status = pclose(fp);
	if (status != 0) {
		/* python's own message: no redis module, an error in the README's block */
		FILE *ep = fopen(errs, "r");
		char msg[2048] = "";
		size_t got = ep ? fread(msg, 1, sizeof(msg) - 1, ep) : 0;

		msg[got] = '\0';
		if (ep)
			fclose(ep);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "check_shard: could not remove %s\n", dir);
		ck_abort_msg("%s on the README's Python block exited with status %d:\n%s"
			     "(it needs the Debian packages python3 and python3-redis: make deps; "
			     "another interpreter: SLUICE_PYTHON)", python, status, msg);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "check_shard: could not remove %s\n", dir);
	ck_assert_msg(i == in.n, "python answered %d of %d inputs", i, in.n);
	ck_assert_msg(bad == 0, "the README's Python shard differs from C on %d of %d inputs (on stderr)", bad, in.n);
	inputs_free(&in);
	free(doc);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shard");
	TCase *tc = tcase_create("keyslot");

	tcase_add_test(tc, test_crc16_check_value);
	tcase_add_test(tc, test_vectors_are_the_readme_table);
	tcase_add_test(tc, test_python_one_liners);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);

	tc = tcase_create("cluster");
	tcase_add_unchecked_fixture(tc, cluster_start, cluster_stop);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_vectors);
	tcase_add_test(tc, test_shard_slot);
	tcase_add_test(tc, test_crafted_three_ways);
	tcase_add_test(tc, test_random_three_ways);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}

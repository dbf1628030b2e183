/*
 * lua_assemble: one self-contained Redis script from a source in lua/ and the
 * fragments it names.  Build-time tool only (the Makefile runs it into
 * build/lua/, and tools/embed_lua.c embeds what it writes):
 *
 *     lua_assemble lua/leaky_bucket.lua > build/lua/leaky_bucket.lua
 *     lua_assemble tests/lua/glob_probe.lua lua > build/lua-test/glob_probe.lua
 *
 * A line "--@include lib/leak.lua" names a fragment by its path relative to
 * the source's folder (lua/), or to the folder given second (a test's
 * script outside lua/ that uses its fragments), the same name from any file.  A fragment may
 * name others.  Every fragment a script needs is inlined once, after the
 * ones it names (dependency order), all of them before the script's own
 * code, less the fragments' functions that nothing in the script names
 * (prune_unused); the directive lines themselves go.  A "#!lua ..." shebang on the
 * source's first line stays the first line (Redis reads script flags only
 * there), the comment block heading the source follows, then one line saying
 * the file is generated and from what.
 *
 * Errors name the file and line ("lua/lib/a.lua:3: include cycle: ..."), write
 * nothing to stdout and exit 1: a fragment that cannot be read, a cycle, a
 * directive other than --@include, a path that is not a plain relative one
 * (no "..", ".", empty or absolute parts), a shebang in a fragment.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32
#define MAX_FRAGS 256
#define DIRECTIVE "--@"
#define INCLUDE "include"

struct buf {
	char *p;
	size_t len, cap;
};

struct ctx {
	const char *root;            /* folder the fragment names are relative to */
	const char *stack[MAX_DEPTH]; /* files being assembled, outermost first */
	int depth;
	const char *done[MAX_FRAGS]; /* fragments emitted, in output order */
	int ndone;
	struct buf out;
};

/* "file:line: message" (or "file: message" for line 0) and exit 1. */
static void die(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (line > 0)
		fprintf(stderr, "%s:%d: ", file, line);
	else
		fprintf(stderr, "%s: ", file);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fputs("lua_assemble: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

static void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void buf_str(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

/* One line of text, its newline added when the file's last line lacks one. */
static void buf_line(struct buf *b, const char *s, size_t n)
{
	buf_add(b, s, n);
	if (n == 0 || s[n - 1] != '\n')
		buf_add(b, "\n", 1);
}

static char *xstrndup(const char *s, size_t n)
{
	char *d = xrealloc(NULL, n + 1);

	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

/* The display name of a fragment: root/name, or name when root is ".". */
static char *path_of(const struct ctx *x, const char *name)
{
	size_t r = strlen(x->root), n = strlen(name);
	char *p;

	if (strcmp(x->root, ".") == 0)
		return xstrndup(name, n);
	p = xrealloc(NULL, r + n + 2);
	memcpy(p, x->root, r);
	p[r] = '/';
	memcpy(p + r + 1, name, n + 1);
	return p;
}

/* The whole file, NUL-terminated; NULL with errno set when it cannot be read. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct buf b = { 0 };
	char chunk[8192];
	size_t n;
	int err;

	if (!f)
		return NULL;
	buf_add(&b, "", 0);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	err = ferror(f) ? errno : 0;
	fclose(f);
	if (err) {
		free(b.p);
		errno = err;
		return NULL;
	}
	if (memchr(b.p, '\0', b.len)) {
		free(b.p);
		errno = EINVAL;
		return NULL;
	}
	return b.p;
}

/* Next line of `*s` (with its newline, if any); length 0 at the end. */
static size_t next_line(const char **s, const char **line)
{
	const char *nl = strchr(*s, '\n');
	size_t n = nl ? (size_t)(nl - *s) + 1 : strlen(*s);

	*line = *s;
	*s += n;
	return n;
}

/* A plain relative path: parts separated by single '/', none empty, "." or "..". */
static int plain_path(const char *p)
{
	if (*p == '\0' || *p == '/')
		return 0;
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		p += n;
		if (*p == '/' && *++p == '\0')
			return 0;
	}
	return 1;
}

/*
 * If the line is a directive, return the fragment it names (malloc'd) and
 * die on a malformed one; NULL for any other line.
 */
static char *directive(const char *file, int lineno, const char *s, size_t n)
{
	size_t dl = strlen(DIRECTIVE), il = strlen(INCLUDE);
	const char *a, *e = s + n, *b = s;
	char *name;

	while (b < e && (*b == ' ' || *b == '\t'))
		b++;
	if (b != s && (size_t)(e - b) >= dl && strncmp(b, DIRECTIVE, dl) == 0)
		die(file, lineno, "%s", "a directive must start its line (an indented one would be a plain comment)");
	if (lineno > 1 && n >= 2 && strncmp(s, "#!", 2) == 0)
		die(file, lineno, "%s", "#! can only be a script's first line (Redis reads flags from it)");
	if (n < dl || strncmp(s, DIRECTIVE, dl) != 0)
		return NULL;
	while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
		e--;
	a = s + dl;
	if ((size_t)(e - a) < il || strncmp(a, INCLUDE, il) != 0 ||
	    (a + il < e && a[il] != ' ' && a[il] != '\t'))
		die(file, lineno, "unknown directive %.*s (the only one is " DIRECTIVE INCLUDE " lib/<name>.lua)",
		    (int)(e - s), s);
	for (a += il; a < e && (*a == ' ' || *a == '\t'); a++)
		;
	if (a == e)
		die(file, lineno, "%s", DIRECTIVE INCLUDE " names no fragment");
	name = xstrndup(a, (size_t)(e - a));
	if (!plain_path(name))
		die(file, lineno, "%s: not a plain path relative to the lua/ folder (e.g. lib/leak.lua)", name);
	return name;
}

static int on_list(const char *const *list, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(list[i], name) == 0)
			return 1;
	return 0;
}

static int word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/*
 * 1 when `name` (n bytes) stands as a whole word in the code of [s, e)
 * outside [skip_a, skip_e): comments ("--" to the end of the line, outside a
 * quoted string) do not count, so a comment that names a function does not
 * keep it in every script.  Strings do count (conservative).
 */
static int used_outside(const char *s, const char *e, const char *name, size_t n, const char *skip_a,
			const char *skip_e)
{
	char quote = 0;

	for (const char *p = s; p < e; p++) {
		if (p >= skip_a && p < skip_e) {
			p = skip_e - 1;
			quote = 0;
			continue;
		}
		if (*p == '\n') {
			quote = 0;
		} else if (quote) {
			if (*p == '\\' && p + 1 < e)
				p++;
			else if (*p == quote)
				quote = 0;
			continue;
		} else if (*p == '\'' || *p == '"') {
			quote = *p;
			continue;
		} else if (*p == '-' && p + 1 < e && p[1] == '-') {
			while (p + 1 < e && p[1] != '\n')
				p++;
			continue;
		}
		if (p + n <= e && memcmp(p, name, n) == 0 && (p == s || !word_char(p[-1])) &&
		    (p + n == e || !word_char(p[n])))
			return 1;
	}
	return 0;
}

/*
 * Drop the fragments' top-level functions that nothing in the assembled file
 * names: Lua defines every `local function` of a script anew at each EVAL, so
 * an unused one costs every call (about 0.85k Redis instructions each; see
 * BENCHMARKS.md).  A function is a line "local function NAME(" at column 0,
 * up to the first line "end" at column 0, or that line alone when it ends in
 * " end"; it is kept when NAME appears as a word anywhere else in the
 * code (strings included, a conservative test; comments not).  Repeats until nothing changes, so a
 * function only a dropped one called goes too.  Only the fragments' part is
 * pruned: what comes before `code_at`, the script's own code.
 */
static void prune_unused(struct buf *out, size_t code_at)
{
	static const char lf[] = "local function ";
	int changed = 1;

	while (changed) {
		changed = 0;
		for (size_t at = 0; at < code_at;) {
			char *line = out->p + at, *nl = memchr(line, '\n', out->len - at), *end, *name;
			size_t n, next = nl ? (size_t)(nl - out->p) + 1 : out->len;

			if (strncmp(line, lf, sizeof(lf) - 1) != 0) {
				at = next;
				continue;
			}
			name = line + sizeof(lf) - 1;
			for (n = 0; word_char(name[n]); n++)
				;
			end = out->p + next; /* one-line function: "... end" */
			if (!(nl && nl - line >= 4 && memcmp(nl - 4, " end", 4) == 0)) {
				char *q = strstr(out->p + next, "\nend\n");

				if (strncmp(out->p + next, "end\n", 4) == 0)
					q = out->p + next - 1;
				if (!q || (size_t)(q - out->p) >= code_at)
					die("lua_assemble", 0, "%.*s: no closing \"end\" at column 0", (int)n, name);
				end = q + 5;
			}
			if (n == 0 || used_outside(out->p, out->p + out->len, name, n, line, end)) {
				at = next;
				continue;
			}
			memmove(line, end, out->len - (size_t)(end - out->p) + 1);
			out->len -= (size_t)(end - line);
			code_at -= (size_t)(end - line);
			changed = 1;
		}
	}
}

static int include(struct ctx *x, const char *name, const char *from, int lineno);

/*
 * Emit every fragment named in `text` (each once, its own first), reporting
 * errors against `file`, whose line `lineno` + 1 `text` starts at.  Returns
 * nonzero when something was emitted.
 */
static int include_all(struct ctx *x, const char *file, const char *text, int lineno)
{
	const char *s = text, *line;
	size_t n;
	int before = x->ndone;

	while ((n = next_line(&s, &line)) > 0) {
		char *name = directive(file, ++lineno, line, n);

		if (name && !include(x, name, file, lineno))
			free(name);
	}
	return x->ndone > before;
}

/* The lines of `s` but the directives and the blank lines right after them. */
static void emit_code(struct ctx *x, const char *s)
{
	const char *line;
	size_t n;
	int after = 0;

	while ((n = next_line(&s, &line)) > 0) {
		if (strncmp(line, DIRECTIVE, strlen(DIRECTIVE)) == 0) {
			after = 1;
		} else if (!after || strspn(line, " \t\r\n") < n) {
			after = 0;
			buf_line(&x->out, line, n);
		}
	}
}

/* Emit fragment `name` unless it already was; nonzero when `name` is kept (in x->done). */
static int include(struct ctx *x, const char *name, const char *from, int lineno)
{
	char *path, *text;

	if (on_list(x->stack, x->depth, name)) {
		struct buf cyc = { 0 };

		for (int i = 0; i < x->depth; i++) {
			if (strcmp(x->stack[i], name) == 0 || cyc.len > 0) {
				buf_str(&cyc, x->stack[i]);
				buf_str(&cyc, " -> ");
			}
		}
		buf_str(&cyc, name);
		die(from, lineno, "include cycle: %s", cyc.p);
	}
	if (on_list(x->done, x->ndone, name))
		return 0;
	if (x->depth == MAX_DEPTH)
		die(from, lineno, "%s: includes nested too deep", name);
	if (x->ndone == MAX_FRAGS)
		die(from, lineno, "%s: too many fragments", name);
	path = path_of(x, name);
	text = slurp(path);
	if (!text)
		die(from, lineno, "%s: %s", path, errno == EINVAL ? "contains a NUL byte" : strerror(errno));
	if (strncmp(text, "#!", 2) == 0)
		die(path, 1, "a fragment cannot start with #! (Redis reads flags from a script's first line only)");
	x->stack[x->depth++] = name;
	include_all(x, path, text, 0);
	x->depth--;
	buf_str(&x->out, "-- ---- ");
	buf_str(&x->out, name);
	buf_str(&x->out, " ----\n");
	emit_code(x, text);
	x->done[x->ndone++] = name;
	free(path);
	free(text);
	return 1;
}

int main(int argc, char **argv)
{
	struct ctx x = { 0 };
	struct buf head = { 0 };
	const char *src, *slash, *s, *line, *base;
	char *text, *root;
	size_t n, code_at;
	int head_lines = 0, comments = 0;

	if (argc != 2 && argc != 3) {
		fputs("usage: lua_assemble lua/<script>.lua [<fragment root, default: its folder>] > build/lua/<script>.lua\n",
		      stderr);
		return 2;
	}
	src = argv[1];
	slash = strrchr(src, '/');
	if (argc == 3)
		root = xstrndup(argv[2], strlen(argv[2]));
	else
		root = slash ? xstrndup(src, (size_t)(slash - src)) : xstrndup(".", 1);
	base = slash ? slash + 1 : src;
	x.root = root;
	text = slurp(src);
	if (!text)
		die(src, 0, "%s", errno == EINVAL ? "contains a NUL byte" : strerror(errno));

	/* The shebang, then the comment block that heads the source. */
	s = text;
	buf_add(&head, "", 0);
	if (strncmp(s, "#!", 2) == 0) {
		n = next_line(&s, &line);
		buf_line(&head, line, n);
		head_lines++;
	}
	while (strncmp(s, "--", 2) == 0 && strncmp(s, DIRECTIVE, strlen(DIRECTIVE)) != 0) {
		n = next_line(&s, &line);
		buf_line(&head, line, n);
		head_lines++;
		comments++;
	}

	x.stack[x.depth++] = base;
	buf_add(&x.out, "", 0);
	if (include_all(&x, src, s, head_lines)) {
		buf_str(&x.out, "-- ---- ");
		buf_str(&x.out, base);
		buf_str(&x.out, " ----\n");
	}
	code_at = x.out.len;
	emit_code(&x, s);
	prune_unused(&x.out, code_at);

	if (comments > 0)
		buf_str(&head, "--\n"); /* the line below is not part of the header's last paragraph */
	buf_str(&head, "-- Generated by tools/lua_assemble.c from ");
	buf_str(&head, src);
	for (int i = 0; i < x.ndone; i++) {
		char *p = path_of(&x, x.done[i]);

		buf_str(&head, i == 0 ? " with " : ", ");
		buf_str(&head, p);
		free(p);
		free((char *)x.done[i]);
	}
	buf_str(&head, x.ndone > 0 ? ": edit those, not this file.\n" : ": edit that, not this file.\n");
	if (x.ndone > 0)
		buf_str(&head, "\n");

	if (fwrite(head.p, 1, head.len, stdout) != head.len || fwrite(x.out.p, 1, x.out.len, stdout) != x.out.len ||
	    fflush(stdout) != 0) {
		perror("lua_assemble: stdout");
		return 1;
	}
	free(head.p);
	free(x.out.p);
	free(text);
	free(root);
	return 0;
}

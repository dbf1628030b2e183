#include "core/glob.h"

#include <errno.h>
#include <string.h>

/*
 * Match one bracket expression starting after '[' at pat[*pi]; on success
 * (a well-formed set) set *pi past the closing ']' and return 1 when byte c
 * is in the set (after negation), 0 when not; -1 when the set has no
 * closing ']' (the caller then takes '[' literally), or a range without
 * its end ("[a-" at the end of the pattern).  With `in` (256 bytes, zeroed
 * by the caller), also set in[b] for every byte b the set lists (before
 * its negation).
 */
static int bracket(const char *pat, size_t plen, size_t *pi, unsigned char c, unsigned char *in)
{
	size_t i = *pi;
	int neg = 0, hit = 0, first = 1;

	if (i < plen && (pat[i] == '!' || pat[i] == '^')) {
		neg = 1;
		i++;
	}
	for (;; first = 0) {
		unsigned char lo, hi;

		if (i >= plen)
			return -1;
		if (pat[i] == ']' && !first)
			break;
		if (pat[i] == '\\' && i + 1 < plen)
			i++;
		lo = (unsigned char)pat[i++];
		hi = lo;
		if (i + 1 < plen && pat[i] == '-' && pat[i + 1] != ']') {
			i++;
			if (pat[i] == '\\' && i + 1 < plen)
				i++;
			hi = (unsigned char)pat[i++];
		}
		if (lo <= c && c <= hi)
			hit = 1;
		for (unsigned b = lo; in && b <= hi; b++)
			in[b] = 1;
	}
	*pi = i + 1;
	return hit != neg;
}

int glob_valid(const char *pat, size_t plen)
{
	for (size_t i = 0; i < plen; i++) {
		if (pat[i] == '\\') {
			if (++i == plen)
				return 0;
		} else if (pat[i] == '[') {
			size_t q = i + 1;

			if (bracket(pat, plen, &q, 0, NULL) < 0)
				return 0;
			i = q - 1;
		}
	}
	return 1;
}

size_t glob_star_run(const char *pat, size_t plen)
{
	size_t run = 0, longest = 0;
	int after_star = 0;

	for (size_t i = 0; i < plen; i++) {
		if (pat[i] == '*') {
			after_star = 1;
			run = 0;
			continue;
		}
		if (pat[i] == '\\' && i + 1 < plen) {
			i++;
		} else if (pat[i] == '[') {
			size_t q = i + 1;

			if (bracket(pat, plen, &q, 0, NULL) >= 0)
				i = q - 1;
		}
		if (after_star && ++run > longest)
			longest = run;
	}
	return longest;
}

int glob_match(const char *pat, size_t plen, const char *s, size_t slen)
{
	size_t pi = 0, si = 0;
	size_t star_p = (size_t)-1, star_s = 0; /* where to resume after the last '*' */

	while (si < slen) {
		if (pi < plen) {
			char p = pat[pi];

			if (p == '*') {
				while (pi < plen && pat[pi] == '*')
					pi++;
				if (pi == plen)
					return 1;
				star_p = pi;
				star_s = si;
				continue;
			}
			if (p == '?') {
				pi++;
				si++;
				continue;
			}
			if (p == '[') {
				size_t q = pi + 1;
				int m = bracket(pat, plen, &q, (unsigned char)s[si], NULL);

				if (m == 1) {
					pi = q;
					si++;
					continue;
				}
				if (m == -1 && s[si] == '[') { /* no ']': a literal '[' */
					pi++;
					si++;
					continue;
				}
			} else {
				if (p == '\\') {
					if (pi + 1 == plen)
						return 0; /* a trailing '\\' escapes nothing: no match, as fnmatch */
					p = pat[++pi];
				}
				if (p == s[si]) {
					pi++;
					si++;
					continue;
				}
			}
		}
		/* mismatch: let the last '*' take one more byte */
		if (star_p == (size_t)-1)
			return 0;
		pi = star_p;
		si = ++star_s;
	}
	while (pi < plen && pat[pi] == '*')
		pi++;
	return pi == plen;
}

/*
 * Append one byte as a set element Redis reads literally ("\c": unescaped,
 * ']' would end the set, '^' first negate it, a '-' between two make a range).
 */
static int set_byte(struct strbuf *b, unsigned c)
{
	char e[2] = { '\\', (char)c };

	return strbuf_add(b, e, 2);
}

/*
 * Append the set that lists the bytes c with in[c] (negated when `neg`) in
 * Redis's set dialect (stringmatchlen in Redis's util.c): its bytes as
 * runs, a run of 3 or more as a range "lo-hi".  Written from the bytes and
 * not copied from the pattern, because Redis reads a set otherwise: a
 * reversed range "z-a" holds a..z there (nothing here), "a-]" is a range up
 * to ']' (here 'a', '-' and the end), and it compares a range's bytes as
 * signed chars (so "a-\xff" would hold 0x00..0x61 and 0xff).  Hence a
 * range never crosses 0x7f/0x80 and never starts at ']', '\\' or '^'
 * (peeled off as single bytes).
 */
static int set_to_redis(struct strbuf *b, const unsigned char in[256], int neg)
{
	int rc = strbuf_add(b, neg ? "[^" : "[", neg ? 2 : 1);

	for (unsigned c = 0; c < 256 && !rc;) {
		unsigned e = c;

		if (!in[c]) {
			c++;
			continue;
		}
		while (e + 1 < 256 && in[e + 1] && e + 1 != 0x80)
			e++; /* [c, e]: one run, on one side of 0x80 */
		while (c <= e && (c == ']' || c == '\\' || c == '^' || e - c < 2) && !rc)
			rc = set_byte(b, c++);
		if (c <= e && !rc) {
			char r[3] = { (char)c, '-', (char)e };

			rc = strbuf_add(b, r, 3);
		}
		c = e + 1;
	}
	return rc ? rc : strbuf_add(b, "]", 1);
}

int glob_to_redis(const char *pat, struct strbuf *b)
{
	size_t start = b->len, n = strlen(pat);
	int rc = 0;

	if (!glob_valid(pat, n))
		return -EINVAL;
	for (size_t i = 0; i < n && !rc; i++) {
		if (pat[i] == '\\') {
			rc = strbuf_add(b, pat + i, 2);
			i++;
		} else if (pat[i] == '[') {
			/* the set's bytes, as bracket() lists them (a valid pattern's sets all close) */
			unsigned char in[256] = { 0 };
			int neg = pat[i + 1] == '!' || pat[i + 1] == '^';
			size_t q = i + 1;

			bracket(pat, n, &q, 0, in);
			rc = set_to_redis(b, in, neg);
			i = q - 1;
		} else {
			rc = strbuf_add(b, pat + i, 1);
		}
	}
	if (rc) {
		strbuf_truncate(b, start);
		return -ENOMEM;
	}
	return 0;
}

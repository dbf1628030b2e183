#ifndef SLUICE_GLOB_H
#define SLUICE_GLOB_H
/*
 * Glob matching of rule `match` patterns against paths, binary-safe (a path
 * may hold NUL bytes, which fnmatch(3) cannot see past).  The dialect is
 * fnmatch's with no flags, as the rules have always used it:
 *   *        any run of bytes, '/' included
 *   ?        one byte
 *   [...]    one byte of the set: ranges a-z, a leading ! or ^ negates, a
 *            leading ] is literal, \ escapes the next byte
 *   \c       the byte c itself
 * (POSIX classes like
 * [[:alpha:]] are not supported: '[', ':' ... are taken literally.)
 */
#include <stddef.h>

#include "core/strbuf.h"

/*
 * 1 when `pat` is well formed: every '[' closes, no lone '\' at the end.
 * Rules refuse others; glob_match's answer for them (fnmatch's differ by
 * case) is not part of the dialect.
 */
int glob_valid(const char *pat, size_t plen);
/*
 * The longest run of elements (a byte, an escaped byte, '?' or a [...] set)
 * that follows a '*' in `pat`, up to the next '*' or the end: 0 when `pat`
 * has no '*'.  Matching backtracks over such a run at every byte of the
 * path, so the time a match takes grows as this run times the path's length
 * (in Lua, lib/glob.lua: ~35 ms for a run of 32 on an 8 kB path); rules
 * bound it (RULE_GLOB_RUN_MAX).  `pat` need not be glob_valid.
 */
size_t glob_star_run(const char *pat, size_t plen);
/* 1 when the `plen` bytes of `pat` match the `slen` bytes of `s`, else 0. */
int glob_match(const char *pat, size_t plen, const char *s, size_t slen);

/*
 * Append to `b` the NUL-terminated glob `pat` written in Redis's MATCH
 * dialect (SCAN/SSCAN MATCH, Redis's stringmatchlen), so that Redis selects
 * exactly what glob_match would: a set is written out from the bytes it
 * holds ("[^" for "[!", runs of bytes escaped, ranges that Redis reads as
 * glob_match does: Redis takes a reversed range, a '-' before ']' and bytes
 * from 0x80 otherwise), the rest is copied.  0, -EINVAL when `pat` is not
 * glob_valid (b unchanged), -ENOMEM.
 */
int glob_to_redis(const char *pat, struct strbuf *b);

#endif

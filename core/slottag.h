#ifndef SLUICE_SLOTTAG_H
#define SLUICE_SLOTTAG_H
/*
 * One short hash tag per Redis Cluster slot (DESIGN.md "Layouts"): for every
 * slot s of the 16384, slottag_of(s) is a string whose keyslot is s, so a key
 * "<anything without braces>{" tag "}<anything>" lies in slot s whatever bytes
 * follow the tag.  This is how sluice puts its bookkeeping for a foreign key
 * (its meta) in that key's slot when the key itself holds '{' or '}'.
 *
 * The tag of a slot is the first candidate, in order, whose keyslot is that
 * slot.  Candidates are the strings over [0-9A-Za-z] (no brace, no glob
 * character, nothing a shell or redis-cli must quote), shortest first, then in
 * byte order: "0" .. "z", "00" .. "zz", "000" ..; the 242,234 strings of up
 * to 3 characters already cover every slot.
 *
 * The table is computed at build time: tools/slottag_gen.c runs
 * slottag_build() and writes it as a static const array (the build's
 * gen/slottag_gen.c, which defines slottag_of).  It is a pure function of
 * CRC16, so nothing about it depends on a run: the daemon does no work for
 * it at start, nothing owns or frees it, and it is read-only memory that
 * every thread may read.
 */
#include "core/shard.h"

/* Longest tag, in bytes; a tag and its NUL fit in SLOTTAG_SIZE. */
#define SLOTTAG_MAX 3
#define SLOTTAG_SIZE (SLOTTAG_MAX + 1)

/*
 * Compute the table into `tags` (caller's memory, 64 KiB): tags[s] is the
 * first candidate (above) whose keyslot is s, NUL-terminated.  0, or -ERANGE
 * when some slot has no candidate of up to SLOTTAG_MAX characters (`tags` is
 * then partly filled; cannot happen with CRC16, and the tests check it).
 */
int slottag_build(char tags[SHARD_SLOTS][SLOTTAG_SIZE]);

/* The tag of `slot` (taken mod 16384): 1..SLOTTAG_MAX characters, static, never freed. */
const char *slottag_of(unsigned slot);

#endif

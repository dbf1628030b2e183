/*
 * The search behind the slot tags (core/slottag.h).  The daemon never runs it:
 * tools/slottag_gen.c does at build time, and the tests compare its result
 * with the table built in.
 */
#include "core/slottag.h"

#include <errno.h>
#include <string.h>

/* The candidates' characters, in byte order. */
static const char alphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
#define ALPHABET_LEN (sizeof(alphabet) - 1)

int slottag_build(char tags[SHARD_SLOTS][SLOTTAG_SIZE])
{
	size_t filled = 0;

	memset(tags, 0, (size_t)SHARD_SLOTS * SLOTTAG_SIZE);
	for (size_t len = 1; len <= SLOTTAG_MAX && filled < SHARD_SLOTS; len++) {
		size_t idx[SLOTTAG_MAX] = { 0 };
		char cand[SLOTTAG_SIZE] = { 0 };

		/* every string of `len` characters, as an odometer: the last character turns fastest */
		for (;;) {
			size_t i;
			unsigned slot;

			for (i = 0; i < len; i++)
				cand[i] = alphabet[idx[i]];
			slot = shard_keyslot(cand, len);
			if (!tags[slot][0]) {
				memcpy(tags[slot], cand, len + 1);
				filled++;
			}
			for (i = len; i > 0 && ++idx[i - 1] == ALPHABET_LEN; i--)
				idx[i - 1] = 0;
			if (i == 0)
				break;
		}
	}
	return filled == SHARD_SLOTS ? 0 : -ERANGE;
}

#include "core/shard.h"

#include <string.h>

uint16_t shard_crc16(const char *s, size_t n)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < n; i++) {
		crc ^= (uint16_t)((unsigned char)s[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

unsigned shard_keyslot(const char *key, size_t n)
{
	const char *open = memchr(key, '{', n), *close;

	if (open) {
		size_t rest = n - (size_t)(open + 1 - key);

		close = memchr(open + 1, '}', rest);
		if (close && close > open + 1)
			return shard_crc16(open + 1, (size_t)(close - open - 1)) & (SHARD_SLOTS - 1);
	}
	return shard_crc16(key, n) & (SHARD_SLOTS - 1);
}

unsigned shard_of(const char *path, size_t n)
{
	return shard_keyslot(path, n) % SHARD_COUNT;
}

#ifndef SLUICE_SHARD_H
#define SLUICE_SHARD_H
/*
 * Shards of key layout 2 (DESIGN.md "State model"): every path belongs to
 * shard keyslot(path) mod 1024, and every key of shard k carries the hash
 * tag {k}, so one script call touches one Redis Cluster slot.
 *
 * keyslot is Redis Cluster's key slot (the cluster specification,
 * "Keys distribution model"; Redis's keyHashSlot in cluster.c): CRC16
 * (XMODEM: polynomial 0x1021, initial value 0, no reflection) of the part
 * between the first '{' and the next '}' when that part is non-empty, else
 * of the whole string, mod 16384.  Binary-safe.
 */
#include <stddef.h>
#include <stdint.h>

#define SHARD_COUNT 1024
#define SHARD_SLOTS 16384

/* CRC16/XMODEM of `n` bytes (check value: "123456789" -> 0x31C3). */
uint16_t shard_crc16(const char *s, size_t n);
/* Redis Cluster's key slot of `n` bytes of `key`, 0..16383 (what CLUSTER KEYSLOT answers). */
unsigned shard_keyslot(const char *key, size_t n);
/* The shard of path `path` (`n` bytes), 0..1023. */
unsigned shard_of(const char *path, size_t n);
/* The slot of shard k's keys (keyslot of their tag "{k}", k in decimal), 0..16383; k is taken mod SHARD_COUNT. */
unsigned shard_slot(unsigned k);

#endif

-- lib/shard.lua: the shard of a path (DESIGN.md, "State model (key layout
-- 2)"): every path belongs to one of 1024 shards, and every key of shard k
-- carries the hash tag {k}.  The same function as core/shard.c.
--
-- keyslot(s) is Redis Cluster's key slot of the string s, 0..16383: what
-- CLUSTER KEYSLOT answers and every cluster client computes.  Definition: the
-- Redis Cluster specification, "Keys distribution model" (keyHashSlot in
-- Redis's src/cluster.c): CRC16/XMODEM (polynomial 0x1021, initial value 0,
-- no reflection, no final xor; "123456789" gives 0x31C3) of the hash tag, the
-- bytes between the first '{' and the first '}' after it, when that part is
-- not empty; else (no '{', no '}' after it, or "{}") of the whole string;
-- mod 16384.  shard_of(path) = keyslot(path) mod 1024, 0..1023.
-- Binary-safe: Lua strings hold any bytes (NUL too) and the finds are plain.
--
-- Speed (this runs on a client call whose path has no state yet): a table
-- step per byte, with the 256-entry table written out as constants, so that
-- Redis builds it from a constructor at each keyslot, only when a call needs
-- one (a client script: at most one per call); the bytes are read 32 at a time (one string.byte call per 32).  Measured
-- against the alternatives (bench/shard_lua.sh; figures in lua/README.md,
-- "Shards"): the plain bitwise loop, 8 steps per byte, costs more from about
-- 10 bytes on (16.7 against 10.9 us at 20 bytes, 144.5 against 43.1 at 200);
-- computing the table per call (256 x 8 steps) costs some 150 us before the
-- first byte.  Shifts are arithmetic on whole numbers below 2^16 (exact in
-- doubles); only the XORs go through Redis's `bit` library, and stay below
-- 2^16 too.

local SHARD_COUNT = 1024
local SLOT_COUNT = 16384

-- Redis Cluster's key slot of s, 0..16383 (CLUSTER KEYSLOT): CRC16/XMODEM
-- of the hash tag (the bytes between the first '{' and the next '}', when
-- there are any), else of s.  The table tbl[n] = the CRC16/XMODEM register
-- after shifting in byte n from a zero register: n * 256, shifted left 8
-- times, XOR 0x1021 whenever a 1 leaves bit 15.  It is built here, so a call
-- that computes no shard (a client call on a path that has state) neither
-- builds it nor defines more functions (Lua defines every top-level local
-- function of a script anew at each call, some 1.1k Redis instructions each).
local function keyslot(s)
  local i, j = 1, #s
  local open = string.find(s, '{', 1, true)
  if open then
    local close = string.find(s, '}', open + 1, true)
    if close and close > open + 1 then i, j = open + 1, close - 1 end
  end
  local tbl = {
    [0] = 0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50A5, 0x60C6, 0x70E7,
    0x8108, 0x9129, 0xA14A, 0xB16B, 0xC18C, 0xD1AD, 0xE1CE, 0xF1EF,
    0x1231, 0x0210, 0x3273, 0x2252, 0x52B5, 0x4294, 0x72F7, 0x62D6,
    0x9339, 0x8318, 0xB37B, 0xA35A, 0xD3BD, 0xC39C, 0xF3FF, 0xE3DE,
    0x2462, 0x3443, 0x0420, 0x1401, 0x64E6, 0x74C7, 0x44A4, 0x5485,
    0xA56A, 0xB54B, 0x8528, 0x9509, 0xE5EE, 0xF5CF, 0xC5AC, 0xD58D,
    0x3653, 0x2672, 0x1611, 0x0630, 0x76D7, 0x66F6, 0x5695, 0x46B4,
    0xB75B, 0xA77A, 0x9719, 0x8738, 0xF7DF, 0xE7FE, 0xD79D, 0xC7BC,
    0x48C4, 0x58E5, 0x6886, 0x78A7, 0x0840, 0x1861, 0x2802, 0x3823,
    0xC9CC, 0xD9ED, 0xE98E, 0xF9AF, 0x8948, 0x9969, 0xA90A, 0xB92B,
    0x5AF5, 0x4AD4, 0x7AB7, 0x6A96, 0x1A71, 0x0A50, 0x3A33, 0x2A12,
    0xDBFD, 0xCBDC, 0xFBBF, 0xEB9E, 0x9B79, 0x8B58, 0xBB3B, 0xAB1A,
    0x6CA6, 0x7C87, 0x4CE4, 0x5CC5, 0x2C22, 0x3C03, 0x0C60, 0x1C41,
    0xEDAE, 0xFD8F, 0xCDEC, 0xDDCD, 0xAD2A, 0xBD0B, 0x8D68, 0x9D49,
    0x7E97, 0x6EB6, 0x5ED5, 0x4EF4, 0x3E13, 0x2E32, 0x1E51, 0x0E70,
    0xFF9F, 0xEFBE, 0xDFDD, 0xCFFC, 0xBF1B, 0xAF3A, 0x9F59, 0x8F78,
    0x9188, 0x81A9, 0xB1CA, 0xA1EB, 0xD10C, 0xC12D, 0xF14E, 0xE16F,
    0x1080, 0x00A1, 0x30C2, 0x20E3, 0x5004, 0x4025, 0x7046, 0x6067,
    0x83B9, 0x9398, 0xA3FB, 0xB3DA, 0xC33D, 0xD31C, 0xE37F, 0xF35E,
    0x02B1, 0x1290, 0x22F3, 0x32D2, 0x4235, 0x5214, 0x6277, 0x7256,
    0xB5EA, 0xA5CB, 0x95A8, 0x8589, 0xF56E, 0xE54F, 0xD52C, 0xC50D,
    0x34E2, 0x24C3, 0x14A0, 0x0481, 0x7466, 0x6447, 0x5424, 0x4405,
    0xA7DB, 0xB7FA, 0x8799, 0x97B8, 0xE75F, 0xF77E, 0xC71D, 0xD73C,
    0x26D3, 0x36F2, 0x0691, 0x16B0, 0x6657, 0x7676, 0x4615, 0x5634,
    0xD94C, 0xC96D, 0xF90E, 0xE92F, 0x99C8, 0x89E9, 0xB98A, 0xA9AB,
    0x5844, 0x4865, 0x7806, 0x6827, 0x18C0, 0x08E1, 0x3882, 0x28A3,
    0xCB7D, 0xDB5C, 0xEB3F, 0xFB1E, 0x8BF9, 0x9BD8, 0xABBB, 0xBB9A,
    0x4A75, 0x5A54, 0x6A37, 0x7A16, 0x0AF1, 0x1AD0, 0x2AB3, 0x3A92,
    0xFD2E, 0xED0F, 0xDD6C, 0xCD4D, 0xBDAA, 0xAD8B, 0x9DE8, 0x8DC9,
    0x7C26, 0x6C07, 0x5C64, 0x4C45, 0x3CA2, 0x2C83, 0x1CE0, 0x0CC1,
    0xEF1F, 0xFF3E, 0xCF5D, 0xDF7C, 0xAF9B, 0xBFBA, 0x8FD9, 0x9FF8,
    0x6E17, 0x7E36, 0x4E55, 0x5E74, 0x2E93, 0x3EB2, 0x0ED1, 0x1EF0,
  }
  local bxor, byte, crc = bit.bxor, string.byte, 0
  for k = i, j, 32 do
    local e = k + 31
    if e > j then e = j end
    local b = { byte(s, k, e) }
    for m = 1, e - k + 1 do
      local lo = crc % 256
      crc = bxor(lo * 256, tbl[bxor((crc - lo) / 256, b[m])])
    end
  end
  return crc % SLOT_COUNT
end

-- The shard of a path, 0..1023.
local function shard_of(path)
  return keyslot(path) % SHARD_COUNT
end

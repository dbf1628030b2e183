#!lua flags=allow-oom
-- sluice: one shard's lease (DESIGN.md, "Several daemons"), for the daemon.
-- Contract: lua/README.md.
--
-- KEYS[1] <prefix>{k}:lease
-- ARGV[1] op: "acquire" (SET NX PX), "renew" (PEXPIRE while it is ours),
--         "release" (DEL while it is ours)
-- ARGV[2] owner, "<daemon id>:<token>"
-- ARGV[3] ttl (ms, an integer >= 1; ignored by release)
-- Reply {1} done, or {0, holder ("" when none), pttl (ms; -2 when none)}
-- when the lease is not (or could not become) the owner's.
--
-- The lease key holds the owner's string and nothing else; the worker's
-- shard scripts compare it with the owner they are given (lib/due.lua) and
-- change nothing when they differ, so a daemon that lost the lease cannot
-- act on the shard, even with a call it sent before it knew.  allow-oom: a
-- daemon at maxmemory must still take and keep the shards it drains (the
-- drain is what frees memory); a SET refused for memory is an error reply.

if #KEYS ~= 1 or #ARGV ~= 3 then
  return redis.error_reply('ERR sluice: lease takes KEYS <prefix>{k}:lease, ARGV op, owner, ttl_ms')
end
local key, op, owner, ttl = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
if not string.find(key, '}:lease', 1, true) or key:sub(-7) ~= '}:lease' then
  return redis.error_reply('ERR sluice: KEYS[1] must be <prefix>{k}:lease')
end
if owner == '' then return redis.error_reply('ERR sluice: ARGV[2] (owner) is empty') end
local n = tonumber(ttl)
if op ~= 'release' and (not n or n < 1 or n ~= math.floor(n) or n > 2^53) then
  return redis.error_reply('ERR sluice: ARGV[3] (ttl_ms) must be an integer >= 1')
end

local function refused()
  local holder = redis.call('GET', key)
  return { 0, holder or '', redis.call('PTTL', key) }
end

if op == 'acquire' then
  if redis.call('SET', key, owner, 'NX', 'PX', ttl) then return { 1 } end
  return refused()
end
if op ~= 'renew' and op ~= 'release' then
  return redis.error_reply('ERR sluice: ARGV[1] (op) must be acquire, renew or release')
end
if redis.call('GET', key) ~= owner then return refused() end
if op == 'renew' then
  redis.call('PEXPIRE', key, ttl)
else
  redis.call('DEL', key)
end
return { 1 }

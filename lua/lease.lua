#!lua flags=allow-oom
-- sluice: shard leases (DESIGN.md, "Several daemons"), for the daemon.
-- Contract: lua/README.md, "lease.lua".
--
-- KEYS[1..N] <prefix>{k}:lease of each shard (on a Redis Cluster N = 1:
-- every shard is a slot of its own)
-- ARGV[1] ttl (ms, an integer >= 1; ignored by release)
-- ARGV[2i], ARGV[2i+1] for KEYS[i]: op, owner
--   op "acquire" (SET NX PX), "renew" (PEXPIRE while it is the owner's),
--      "release" (DEL while it is the owner's)
--   owner "<daemon id>:<token>"
-- Reply: one entry per key, {1} done ({1, what} when an acquire replaced a
-- key no daemon makes: one of another type, or without a TTL), or {0,
-- holder ("" when none), pttl (ms; -2 when none)} when the lease is not (or
-- could not become) the owner's.
--
-- A lease key holds its owner's string and nothing else; the worker's shard
-- scripts compare it with the owner they are given (lib/due.lua: the fence)
-- and change nothing when they differ, so a daemon that lost the lease
-- cannot act on the shard, even with a call it sent before it knew.  One
-- call for many shards costs Redis one script's set-up, not one per shard
-- (a daemon renews all it holds every ttl / 3).  allow-oom: a daemon at
-- maxmemory must still take and keep the shards it drains (the drain is
-- what frees memory); a SET refused for memory is an error reply.

local n = #KEYS
if n < 1 or #ARGV ~= 1 + 2 * n then
  return redis.error_reply('ERR sluice: lease takes KEYS <prefix>{k}:lease..., ARGV ttl_ms, then op and owner per key')
end
local ttl = ARGV[1]
local t = tonumber(ttl)
local valid_ttl = t and t >= 1 and t == math.floor(t) and t <= 2^53
for i = 1, n do
  local key, op, owner = KEYS[i], ARGV[2 * i], ARGV[2 * i + 1]
  if key:sub(-7) ~= '}:lease' or not string.find(key, '{', 1, true) then
    return redis.error_reply('ERR sluice: KEYS[' .. i .. '] must be <prefix>{k}:lease')
  end
  if op ~= 'acquire' and op ~= 'renew' and op ~= 'release' then
    return redis.error_reply('ERR sluice: ARGV[' .. (2 * i) .. '] (op) must be acquire, renew or release')
  end
  if owner == '' then return redis.error_reply('ERR sluice: ARGV[' .. (2 * i + 1) .. '] (owner) is empty') end
  if op ~= 'release' and not valid_ttl then
    return redis.error_reply('ERR sluice: ARGV[1] (ttl_ms) must be an integer >= 1')
  end
end

-- A key of another type fails that key alone (its entry names the error as
-- the holder), not the keys before it, which are done and answered.
local function call(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then return nil, r.err end
  return r
end

local function refused(key)
  local holder, err = call('GET', key)
  if err then return { 0, 'error: ' .. err, -1 } end
  return { 0, holder or '', redis.call('PTTL', key) }
end

local out = {}
for i = 1, n do
  local key, op, owner = KEYS[i], ARGV[2 * i], ARGV[2 * i + 1]
  if op == 'acquire' then
    -- A lease key of another type, or one without a TTL, is none of a daemon's
    -- making (every lease has its PX): it would hold the shard for ever.  The
    -- daemon the shard belongs to replaces it, and the reply says what it was.
    local broken = ''
    local kind = redis.call('TYPE', key).ok
    if kind ~= 'none' and kind ~= 'string' then
      broken = 'a ' .. kind
    elseif kind == 'string' and redis.call('PTTL', key) == -1 then
      broken = 'a string without a TTL'
    end
    if broken ~= '' then redis.call('DEL', key) end
    -- the owner's own string already (an earlier acquire whose answer was lost):
    -- done, with the TTL given again
    local ok, err
    if kind == 'string' and broken == '' and redis.call('GET', key) == owner then
      ok = redis.call('PEXPIRE', key, ttl) == 1
    else
      ok, err = call('SET', key, owner, 'NX', 'PX', ttl)
    end
    if err then
      out[i] = { 0, 'error: ' .. err, -1 }
    elseif ok then
      out[i] = broken == '' and { 1 } or { 1, broken }
    else
      out[i] = refused(key)
    end
  else
    local holder, err = call('GET', key)
    if err then
      out[i] = { 0, 'error: ' .. err, -1 }
    elseif holder ~= owner then
      out[i] = refused(key)
    else
      if op == 'renew' then redis.call('PEXPIRE', key, ttl) else redis.call('DEL', key) end
      out[i] = { 1 }
    end
  end
end
return out

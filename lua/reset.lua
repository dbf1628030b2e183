#!lua flags=allow-oom
-- sluice: reset one path, an admin write.  Contract: lua/README.md, "reset.lua".
--
-- ARGV[1] registry_count R (integer >= 0, at most #KEYS), ARGV[2] path,
-- ARGV[3] optional "dry": report what would go and change nothing.
-- KEYS[1..R] the registries the path is taken out of: a sorted set (sluice's
--   due index of the path's shard, <prefix>{k}:registry:<algorithm>) or a set
--   (a foreign layout's registry), by their type; absent ones are skipped
-- KEYS[R+1..] the path's keys (any type), deleted: for sluice's own layouts
--   the state and meta of each algorithm, <prefix>{k}:<algorithm>[_meta]:<path>
-- Reply {registries_removed_from, skipped, {key, entries}, {key, entries}, ...}:
--   skipped = flat {registry, type, ...} of the registries of another type,
--   left alone (a key nothing of sluice's wrote: the path's keys still go);
--   one {key, entries} per key that existed, in KEYS order; entries = the
--   requests the key holds admitted: a sorted set's members (leaky bucket,
--   sliding log), a hash's `count` (fixed window) or the sum of its
--   sub-window fields (sliding counter; a token bucket's hash has neither:
--   0), a string's integer value (an INCR counter; 1 for other text), and the
--   size of a set, list or stream (SCARD, LLEN, XLEN).
-- One script so the admin sees exactly what it removed, atomically.  sluice
-- calls it once for a path's keys of its own layouts (one shard's slot: the
-- five due indexes and ten keys all carry {k}) and once per foreign layout.

--@include lib/args.lua

if type(ARGV[1]) ~= 'string' or not ARGV[1]:find('^%d+$') or tonumber(ARGV[1]) > #KEYS then
  return redis.error_reply('ERR sluice: registry_count must be an integer >= 0 and <= the number of KEYS')
end
local nreg = tonumber(ARGV[1])
local path, err = arg_path(ARGV[2])
if err then return err end
local dry = ARGV[3] == 'dry'
if ARGV[3] ~= nil and ARGV[3] ~= '' and not dry then
  return redis.error_reply('ERR sluice: mode must be "dry" or empty')
end
if #ARGV > 3 then
  return redis.error_reply('ERR sluice: reset takes ARGV registry_count, path and an optional mode')
end

-- Every registry's type before the first write: the member is removed by
-- the command of its type, and a registry of any other type is reported and
-- left alone rather than failing the reset of the path's state.
local member = { zset = 'ZSCORE', set = 'SISMEMBER' }
local remove = { zset = 'ZREM', set = 'SREM' }
local kinds, skipped = {}, {}
for i = 1, nreg do
  local kind = redis.call('TYPE', KEYS[i]).ok
  kinds[i] = kind
  if kind ~= 'none' and not member[kind] then
    skipped[#skipped + 1] = KEYS[i]
    skipped[#skipped + 1] = kind
  end
end

local size_of = { zset = 'ZCARD', set = 'SCARD', list = 'LLEN', stream = 'XLEN' }

-- The requests a hash holds admitted: its `count` (a fixed window), else the
-- sum of its fields named by a sub-window index (a sliding counter), else 0.
local function hash_entries(key)
  local f = redis.call('HGETALL', key)
  local sum = 0
  for j = 1, #f, 2 do
    if f[j] == 'count' then return stored_int(f[j + 1]) or 0 end
    if f[j]:find('^%d+$') then sum = sum + (stored_int(f[j + 1]) or 0) end
  end
  return sum
end

local removed = {}
for i = nreg + 1, #KEYS do
  local key = KEYS[i]
  local kind = redis.call('TYPE', key).ok
  if kind ~= 'none' then
    local entries = 1
    if size_of[kind] then
      entries = redis.call(size_of[kind], key)
    elseif kind == 'hash' then
      entries = hash_entries(key)
    elseif kind == 'string' then
      entries = stored_int(redis.call('GET', key)) or 1
    end
    if not dry then redis.call('DEL', key) end
    removed[#removed + 1] = { key, entries }
  end
end
local registries = 0
for i = 1, nreg do
  local kind = kinds[i]
  if member[kind] then
    if dry then
      local held = redis.call(member[kind], KEYS[i], path) -- a score or false; 1 or 0
      if held and held ~= 0 then registries = registries + 1 end
    else
      registries = registries + redis.call(remove[kind], KEYS[i], path)
    end
  end
end
table.insert(removed, 1, skipped)
table.insert(removed, 1, registries)
return removed

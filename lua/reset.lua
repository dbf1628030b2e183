#!lua flags=allow-oom
-- sluice: reset one path, an admin write.  Contract: lua/README.md.
--
-- ARGV[1] registry_count R (integer >= 0), ARGV[2] path,
-- ARGV[3] optional "dry": report what would go and change nothing,
-- ARGV[4] optional walked registry index w (1..R): a bulk reset walking
--   registry w skips a path that is also in an earlier registry (1..w-1), as
--   that walk already counted (or reset) it; the reply is then {-1}.
-- KEYS[1..R] registry sets the path is taken out of;
-- KEYS[R+1..] the path's data keys (any type), deleted
-- Reply {registries_removed_from, {key, entries}, {key, entries}, ...}:
--   one pair per data key that existed, in KEYS order; entries = ZCARD, HLEN,
--   SCARD, LLEN or XLEN by type, 1 for a string.
-- One script so the admin sees exactly what it removed, atomically.

--@include lib/args.lua

if type(ARGV[1]) ~= 'string' or not ARGV[1]:find('^%d+$') or tonumber(ARGV[1]) > #KEYS then
  return redis.error_reply('ERR sluice: registry_count must be an integer >= 0 and <= the number of KEYS')
end
local nreg = tonumber(ARGV[1])
local path, err = arg_path(ARGV[2])
if err then return err end

-- Check every registry before the first write: a failure half-way would delete
-- state and then answer an error, leaving the caller unable to tell what went.
for i = 1, nreg do
  local kind = redis.call('TYPE', KEYS[i]).ok
  if kind ~= 'set' and kind ~= 'none' then
    return redis.error_reply('ERR sluice: registry ' .. KEYS[i] .. ' is a ' .. kind .. ', not a set; nothing was reset')
  end
end

local dry = ARGV[3] == 'dry'
if ARGV[3] ~= nil and ARGV[3] ~= '' and not dry then
  return redis.error_reply('ERR sluice: mode must be "dry" or empty')
end
if ARGV[4] ~= nil and ARGV[4] ~= '' then
  local w = tonumber(ARGV[4])
  if not ARGV[4]:find('^%d+$') or w < 1 or w > nreg then
    return redis.error_reply('ERR sluice: walked registry index must be 1..registry_count')
  end
  for i = 1, w - 1 do
    if redis.call('SISMEMBER', KEYS[i], path) == 1 then return { -1 } end
  end
end

local size_of = { zset = 'ZCARD', hash = 'HLEN', set = 'SCARD', list = 'LLEN', stream = 'XLEN' }
local removed = {}
for i = nreg + 1, #KEYS do
  local key = KEYS[i]
  local kind = redis.call('TYPE', key).ok
  if kind ~= 'none' then
    local entries = 1
    if size_of[kind] then entries = redis.call(size_of[kind], key) end
    if not dry then redis.call('DEL', key) end
    removed[#removed + 1] = { key, entries }
  end
end
local registries = 0
for i = 1, nreg do
  if dry then
    registries = registries + redis.call('SISMEMBER', KEYS[i], path)
  else
    registries = registries + redis.call('SREM', KEYS[i], path)
  end
end
table.insert(removed, 1, registries)
return removed

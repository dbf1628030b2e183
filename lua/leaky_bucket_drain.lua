-- sluice: leaky bucket drain, one call for a batch of buckets (the worker's
-- job).  Contract: lua/README.md.
--
-- KEYS[1] registry set of paths; for bucket i = 1..N:
--   KEYS[2i] bucket sorted set, KEYS[2i+1] meta hash (last, carry, seq)
-- ARGV[1] now (ms, the same for the whole batch; absent or "" = Redis TIME);
--   ARGV[2i] path_i (registry member), ARGV[2i+1] rate_i (entries per second)
-- Reply {drained (entries removed), emptied (paths removed from the registry),
--        buckets (N), skipped (buckets whose keys have another type: untouched)}
--
-- Applies the same leak as leaky_bucket.lua (keep the copies identical): a
-- non-empty bucket loses floor(rate * (t - last) / 1000 + carry) entries, oldest
-- first, and keeps the fraction, so it is exact whatever the tick and running
-- it twice at one instant removes nothing the second time.  Hot path (100,000
-- buckets a sweep): one HMGET per bucket with nothing due; ZCARD and the
-- writes only where something leaks.
-- An empty or absent bucket (expired, reset, drained) loses its meta and its
-- registry entry.

local EPS = 1e-9 -- see leaky_bucket.lua: absorbs binary error in rate * ms / 1000
local MAX_INT = 9007199254740992 -- 2^53

local function fail(field, what)
  return redis.error_reply('ERR sluice: ' .. field .. ' must be ' .. what)
end

local function int_arg(s, min) -- digits only, min <= v < 2^53
  if type(s) ~= 'string' or not s:find('^%d+$') then return nil end
  local v = tonumber(s)
  if v < min or v >= MAX_INT then return nil end
  return v
end

local function rate_arg(s)
  if type(s) ~= 'string' or not s:find('^[%d%.eE%+%-]+$') then return nil end
  local v = tonumber(s)
  if not v or not (v > 0) or v >= math.huge then return nil end
  return v
end

local function stored(s)
  local v = tonumber(s)
  if not v or v ~= v or v < 0 or v >= math.huge then return nil end
  return v
end

local function fmt_int(v) return string.format('%d', v) end

local nb = (#KEYS - 1) / 2
if #KEYS < 1 or nb ~= math.floor(nb) or not (#ARGV == 2 * nb + 1 or (nb == 0 and #ARGV == 0)) then
  return redis.error_reply('ERR sluice: leaky_bucket_drain takes KEYS registry, then bucket and meta per bucket; '
    .. 'ARGV now, then path and rate per bucket')
end
-- Validate the whole batch before any write: a bad argument changes nothing.
-- A batch usually repeats a few rate strings: each distinct one is checked once.
local rates, checked = {}, {}
for i = 1, nb do
  local path, rs = ARGV[2 * i], ARGV[2 * i + 1]
  if path == '' then return fail('path', 'a non-empty string (bucket ' .. i .. ')') end
  local r = checked[rs]
  if r == nil then
    r = rate_arg(rs) or false
    checked[rs] = r
  end
  if not r then return fail('rate', 'a finite number > 0 (entries per second; bucket ' .. i .. ')') end
  rates[i] = r
end
local now
if ARGV[1] == nil or ARGV[1] == '' then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = int_arg(ARGV[1], 0)
  if not now then return fail('now', 'an integer from 0 to 2^53-1 (ms)') end
end

local registry = KEYS[1]
local drained, emptied, skipped = 0, 0, 0
for i = 1, nb do
  local bucket, meta, path, rate = KEYS[2 * i], KEYS[2 * i + 1], ARGV[2 * i], rates[i]
  -- Hot path: most ticks find nothing due, so the meta is read first and the
  -- bucket is only counted when there is something to leak (or no meta).
  -- pcall: a key of another type (a layout mismatch) must not stop the batch.
  local m = redis.pcall('HMGET', meta, 'last', 'carry')
  if m.err then
    skipped = skipped + 1
  else
    -- ---- leak (identical in leaky_bucket.lua, leaky_bucket_state.lua) ----
    local last, carry = stored(m[1]), stored(m[2]) or 0
    if carry >= 1 then carry = 0 end
    local t = now -- stored time never moves backward
    if last and last > t then t = last end
    local due, k = 0, 0
    if last then
      due = rate * (t - last) / 1000 + carry
      k = math.floor(due + EPS)
    end
    if k > 0 or not last then
      local level = redis.pcall('ZCARD', bucket)
      if type(level) ~= 'number' then
        skipped = skipped + 1
      elseif level == 0 then
        redis.call('DEL', meta) -- time spent empty earns no credit
        emptied = emptied + redis.call('SREM', registry, path)
      elseif not last then
        -- written by a limiter that keeps no meta: start accounting now.  The
        -- meta expires when the bucket would be drained (+1 s), so a daemon that
        -- stops for good leaves nothing behind; if the client refills meanwhile,
        -- accounting simply starts again.
        -- (Drained in 2^53 ms or more: no TTL, rather than one that %d
        -- turns negative, deleting the meta just written.)
        redis.call('HSET', meta, 'last', fmt_int(t), 'carry', '0')
        local ttl = math.ceil(level * 1000 / rate) + 1001
        if ttl >= MAX_INT then
          redis.call('PERSIST', meta)
        else
          redis.call('PEXPIRE', meta, fmt_int(ttl))
        end
      elseif k >= level then
        redis.call('DEL', bucket, meta) -- emptied: no credit carries over
        drained = drained + level
        emptied = emptied + redis.call('SREM', registry, path)
      else
        -- bounds as strings: Redis 7.0 would format Lua numbers with %.17g
        redis.call('ZREMRANGEBYRANK', bucket, '0', fmt_int(k - 1)) -- oldest first
        redis.call('HSET', meta, 'last', fmt_int(t),
          'carry', string.format('%.17g', math.max(0, due - k)))
        drained = drained + k
      end
    end
    -- k == 0 with a meta: write nothing; the next call recomputes from the same
    -- `last`.  (An absent bucket keeps its registry entry until something is due
    -- or its meta expires with it.)
    -- ---- end of leak ----
  end
end
return { drained, emptied, nb, skipped }

-- sluice: sliding-window counter prune, one call for a batch of counters (the
-- worker's job).  Contract: lua/README.md.
--
-- KEYS[1] registry set of paths; KEYS[1+i] counter_i hash, i = 1..N
-- ARGV[1] now (ms, the same for the whole batch; absent or "" = Redis TIME);
--   ARGV[3i-1] path_i (registry member), ARGV[3i] window_ms_i (integer >= 1),
--   ARGV[3i+1] sub_windows_i (integer >= 1 that divides window_ms_i)
-- Reply {pruned (sub-window fields removed), emptied (paths removed from the
--        registry), counters (N), skipped (keys of another type: untouched)}
--
-- Redis 7.0 has no per-field TTL, so sub-windows that left the window stay in
-- the hash until someone removes them; the hash's own TTL only goes when the
-- path is idle.  This job removes, at t = max(now, the hash's t), the fields
-- sliding_counter.lua would remove (index <= cur - N, or > cur: written under
-- another sub_ms); a hash left without a live sub-window (count > 0) is
-- deleted and its path leaves the registry, as does the path of an absent key.
-- Idempotent: a second run at the same instant removes nothing.

local MAX_INT = 9007199254740992 -- 2^53: every integer up to it is exact

local function fail(field, what)
  return redis.error_reply('ERR sluice: ' .. field .. ' must be ' .. what)
end

local function int_arg(s, min) -- digits only, min <= v < 2^53
  if type(s) ~= 'string' or not s:find('^%d+$') then return nil end
  local v = tonumber(s)
  if v < min or v >= MAX_INT then return nil end
  return v
end

local function stored_int(s)
  local v = tonumber(s)
  if not v or v ~= v or v < 0 or v >= MAX_INT or v ~= math.floor(v) then return nil end
  return v
end

local function fmt_int(v) return string.format('%d', v) end

local function index_of(f) -- as in sliding_counter.lua
  local v = int_arg(f, 0)
  if v and fmt_int(v) == f then return v end
  return nil
end

local nc = #KEYS - 1
if nc < 0 or not (#ARGV == 3 * nc + 1 or (nc == 0 and #ARGV == 0)) then
  return redis.error_reply('ERR sluice: sliding_counter_prune takes KEYS registry, then one counter per path; '
    .. 'ARGV now, then path, window_ms and sub_windows per counter')
end
-- Validate the whole batch before any write: a bad argument changes nothing.
local subs_of, sub_of = {}, {}
for i = 1, nc do
  if ARGV[3 * i - 1] == '' then return fail('path', 'a non-empty string (counter ' .. i .. ')') end
  local window = int_arg(ARGV[3 * i], 1)
  if not window then return fail('window_ms', 'an integer from 1 to 2^53-1 (counter ' .. i .. ')') end
  local subs = int_arg(ARGV[3 * i + 1], 1)
  if not subs or window % subs ~= 0 then
    return fail('sub_windows', 'an integer from 1 to 2^53-1 that divides window_ms (counter ' .. i .. ')')
  end
  subs_of[i], sub_of[i] = subs, window / subs
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
local pruned, emptied, skipped = 0, 0, 0
for i = 1, nc do
  local counter, path, subs, sub = KEYS[1 + i], ARGV[3 * i - 1], subs_of[i], sub_of[i]
  -- pcall: a key of another type (a layout mismatch) must not stop the batch.
  local h = redis.pcall('HGETALL', counter)
  if h.err then
    skipped = skipped + 1
  elseif #h == 0 then
    emptied = emptied + redis.call('SREM', registry, path) -- expired, reset
  else
    local t = now -- stored time never moves backward (as in sliding_counter.lua)
    for j = 1, #h, 2 do
      if h[j] == 't' then
        local st = stored_int(h[j + 1])
        if st and st > t then t = st end
      end
    end
    local cur = math.floor(t / sub)
    if cur * sub > t then cur = cur - 1 end
    if (cur + 1) * sub <= t then cur = cur + 1 end
    local stale, fields, alive = {}, 0, false
    for j = 1, #h, 2 do
      local idx = index_of(h[j])
      if idx then
        fields = fields + 1
        if idx <= cur - subs or idx > cur then
          stale[#stale + 1] = h[j]
        elseif (stored_int(h[j + 1]) or 0) > 0 then
          alive = true
        end
      end
    end
    if not alive then
      redis.call('DEL', counter)
      pruned = pruned + fields
      emptied = emptied + redis.call('SREM', registry, path)
    elseif #stale > 0 then
      for s = 1, #stale, 1000 do -- unpack() is limited to a few thousand values
        redis.call('HDEL', counter, unpack(stale, s, math.min(s + 999, #stale)))
      end
      pruned = pruned + #stale
    end
  end
end
return { pruned, emptied, nc, skipped }

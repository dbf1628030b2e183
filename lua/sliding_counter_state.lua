#!lua flags=no-writes
-- sluice: sliding-window counter state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] counter hash ("<j>" = count, t = latest ms, limit, window_ms,
--         sub_windows, rule = the parameters recorded), KEYS[2] meta (any
--         key: not read; the counter keeps its bookkeeping in KEYS[1])
-- KEYS may hold several such pairs, of paths of one shard (the admin
-- listing reads a registry page in one call): the reply is then an
-- array of the replies, one per pair, in order, a pair whose read fails
-- (a key of another type) answered by its error (lib/state_each.lua).
-- ARGV[1] limit (integer >= 1), ARGV[2] window_ms (integer >= 1),
-- ARGV[3] sub_windows (integer >= 1 that divides window_ms), each "" = the
-- one the counter records; ARGV[4] now (ms; "" = Redis TIME)
-- Reply {count (sum of the live sub-windows), remaining (-1: no limit or no
--        window), reset_ms (until the oldest live sub-window leaves the
--        window, 0 if none; -1: no window), ttl_ms (PTTL of the hash: -2
--        absent, -1 no TTL), recorded (flat array: limit, window_ms,
--        sub_windows as recorded, those present), rule (the recorded rule,
--        "" if none)}
--
-- What sliding_counter.lua would sum at t = max(now, stored t), without
-- removing anything.  With no window_ms or sub_windows, given or recorded,
-- the live sub-windows are unknown: count is then every sub-window field's
-- count, and reset_ms -1.

--@include lib/subwindows.lua
--@include lib/state_each.lua

local function read(KEYS, ARGV)
  if #KEYS ~= 2 or #ARGV ~= 4 then
    return usage('sliding_counter_state takes 2 KEYS (counter, meta) and ARGV limit, window_ms, sub_windows, now')
  end
  local counter = KEYS[1]

  -- A parameter: the one given (checked), else the one recorded (nil when it
  -- is none or no integer >= 1: not of sliding_counter.lua's making).
  local function param(given, recorded, field)
    if given ~= '' then return arg_int(given, field) end
    return int_arg(recorded, 1)
  end

  local h = redis.call('HGETALL', counter)
  local named, at = subs_fields(h)
  local limit, window, subs, sub, err
  limit, err = param(ARGV[1], named.limit, 'limit')
  if err then return err end
  window, err = param(ARGV[2], named.window_ms, 'window_ms')
  if err then return err end
  subs, err = param(ARGV[3], named.sub_windows, 'sub_windows')
  if err then return err end
  local now
  now, err = arg_now(ARGV[4])
  if err then return err end
  if window and subs then
    subs, sub, err = arg_subs(fmt_int(subs), window)
    -- a sub_windows that does not divide window_ms: refused when either was
    -- given, unknown when both are recorded ones (written by hand)
    if err and (ARGV[2] ~= '' or ARGV[3] ~= '') then return err end
  end

  local count, reset = 0, -1
  if sub then
    -- as in sliding_counter.lua
    local t = now
    local mark = subs_mark(named)
    if mark and mark > t then t = mark end
    local _, oldest
    count, _, oldest = subs_live(h, at, window_index(t, sub), subs)
    reset = subs_reset_ms(oldest, subs, sub, t)
  else
    -- every sub-window field's count (as subs_live reads a count)
    for k = 1, #at do
      local c = tonumber(h[at[k] + 1])
      if c and c > 0 and c % 1 == 0 then count = count + c end
    end
  end

  local recorded = {}
  for _, f in ipairs({ 'limit', 'window_ms', 'sub_windows' }) do
    if named[f] then
      recorded[#recorded + 1] = f
      recorded[#recorded + 1] = named[f]
    end
  end
  return {
    count,
    (limit and sub) and math.max(0, limit - count) or -1,
    reset,
    redis.call('PTTL', counter),
    recorded,
    named.rule or '',
  }
end

return state_each(read, 4)

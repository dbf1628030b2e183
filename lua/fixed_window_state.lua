#!lua flags=no-writes
-- sluice: fixed window state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] state: sluice's hash (window, count, t, limit, window_ms, rule:
--         lib/fixed.lua) or a foreign string counter (INCR, then EXPIRE)
-- KEYS[2] meta: accepted, never read (a foreign layout passes any key of
--         the state's slot)
-- KEYS may hold several such pairs, of paths of one shard (the admin
-- listing reads a registry page in one call): the reply is then an
-- array of the replies, one per pair, in order, a pair whose read fails
-- (a key of another type) answered by its error (lib/state_each.lua).
-- ARGV[1] limit, ARGV[2] window_ms: integers >= 1, or "" = the ones the
--         counter records (the given ones win); ARGV[3] now (ms; absent or
--         "" = Redis TIME)
-- Reply {count (admitted in the current window), remaining (-1: no limit
--        known), reset_ms (until the count resets: the window's end; 0 when
--        the count is 0; for a string, its PTTL, -1 when it has none; -1: no
--        window_ms known), ttl_ms (PTTL: -2 absent, -1 no TTL),
--        recorded (flat array: "limit", value, "window_ms", value, those the
--        counter records, as the client passed them), rule (recorded, "" if none)}
--
-- What fixed_window.lua would count at t = max(now, stored t), without
-- writing.  With no window_ms known, count is the stored one, whatever its
-- window.

--@include lib/fixed.lua
--@include lib/state_each.lua

local function read(KEYS, ARGV)
  if #KEYS ~= 2 or #ARGV < 2 or #ARGV > 3 then
    return usage('fixed_window_state takes 2 KEYS (state, meta) and ARGV limit, window_ms ("" = recorded), now')
  end
  local state = KEYS[1]
  local limit, window, now, err
  limit, err = fixed_param(ARGV[1], 'limit')
  if err then return err end
  window, err = fixed_param(ARGV[2], 'window_ms')
  if err then return err end
  now, err = arg_now(ARGV[3])
  if err then return err end

  local kind = redis.call('TYPE', state).ok
  local ttl = redis.call('PTTL', state)
  local count, reset_ms, recorded, rule = 0, 0, {}, ''
  if kind == 'string' then
    -- A foreign INCR counter: it resets when it expires (never, without a TTL).
    count = stored_int(redis.call('GET', state)) or 0
    if count > 0 then reset_ms = ttl end
  elseif kind == 'hash' then
    local m = fixed_read(state)
    if m[4] then recorded[#recorded + 1], recorded[#recorded + 2] = 'limit', m[4] end
    if m[5] then recorded[#recorded + 1], recorded[#recorded + 2] = 'window_ms', m[5] end
    rule = m[6] or ''
    limit = limit or int_arg(m[4], 1)
    window = window or int_arg(m[5], 1)
    if window then
      local t, w
      t, w, count = fixed_at(m, window, nil, now) -- as in fixed_window.lua
      if count > 0 then reset_ms = (w + 1) * window - t end
    else
      count = stored_int(m[2]) or 0
    end
  elseif kind ~= 'none' then
    return redis.error_reply('ERR sluice: fixed_window_state: the counter is a ' .. kind
      .. ', not a hash or string')
  end
  if not window then reset_ms = -1 end
  local remaining = -1
  if limit then remaining = math.max(0, limit - count) end
  return { count, remaining, reset_ms, ttl, recorded, rule }
end

return state_each(read, 3)

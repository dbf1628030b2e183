-- lib/subwindows.lua: the sliding-window counter (lua/README.md, "The
-- sliding-window counter").  Units: requests, ms.
--
-- window_ms is cut into N = sub_windows sub-windows of sub_ms = window_ms / N
-- (N divides window_ms: every sub-window has the same whole ms).  A counter
-- hash holds "<j>" = requests admitted in sub-window j, which covers
-- [j * sub_ms, (j + 1) * sub_ms), and t = ms of the latest admission.  At t,
-- with cur = floor(t / sub_ms), the live sub-windows are cur - N + 1 .. cur;
-- fields of any other index are expired (or were written under another
-- sub_ms) and are removed: Redis 7.0 has no per-field TTL.
--@include lib/window.lua

-- sub_windows (an integer >= 1 that divides window): N and sub_ms, or an
-- error reply third.
local function arg_subs(s, window, noun, i)
  local subs = int_arg(s, 1)
  if not subs or window % subs ~= 0 then
    return nil, nil, fail('sub_windows', 'an integer from 1 to 2^53-1 that divides window_ms' .. item(noun, i))
  end
  return subs, window / subs
end

-- limit, window_ms, sub_windows (as N and sub_ms) and now from argv[i]: the
-- ARGV after the path of the sliding counter's scripts.
local function arg_counter_now(argv, i)
  local limit, window, subs, sub, err
  limit, window, err = arg_window(argv[i], argv[i + 1])
  if not err then subs, sub, err = arg_subs(argv[i + 2], window) end
  if err then return nil, nil, nil, nil, nil, err end
  return limit, window, subs, sub, arg_now(argv[i + 3])
end

-- The index a field name stands for (written as fmt_int writes it), or nil.
local function index_of(f)
  local v = int_arg(f, 0)
  if v and fmt_int(v) == f then return v end
  return nil
end

-- The counter's time mark in its HGETALL h: the stored t (the time the
-- latest admission was served at), or nil.
local function subs_mark(h)
  for i = 1, #h, 2 do
    if h[i] == 't' then return stored_int(h[i + 1]) end
  end
  return nil
end

-- The counter's HGETALL h at now: t = max(now, mark) (stored time never
-- moves backward) and cur, the sub-window holding t.
local function subs_time(h, now, sub)
  local t = now
  local mark = subs_mark(h)
  if mark and mark > t then t = mark end
  return t, window_index(t, sub)
end

-- HGETALL counter, and what subs_time reads in it: h, t, cur.
local function subs_read(counter, now, sub)
  local h = redis.call('HGETALL', counter)
  return h, subs_time(h, now, sub)
end

-- The sub-window fields of h at cur: live = {index, count} of the live
-- sub-windows holding requests, their sum, cur's count, stale = the names
-- of the fields to remove, and the number of sub-window fields.
local function subs_scan(h, cur, subs)
  local live, sum, cur_count, stale, fields = {}, 0, 0, {}, 0
  for i = 1, #h, 2 do
    local idx = index_of(h[i])
    if idx then
      fields = fields + 1
      if idx <= cur - subs or idx > cur then
        stale[#stale + 1] = h[i]
      else
        local c = stored_int(h[i + 1]) or 0
        if c > 0 then
          live[#live + 1] = { idx, c }
          sum = sum + c
        end
        if idx == cur then cur_count = c end
      end
    end
  end
  return live, sum, cur_count, stale, fields
end

-- reset_ms: ms from t until the oldest of the live sub-windows leaves the
-- window (sub-window j leaves at (j + N) * sub_ms), 0 when there is none.
local function subs_reset_ms(live, subs, sub, t)
  local oldest = nil
  for _, e in ipairs(live) do
    if not oldest or e[1] < oldest then oldest = e[1] end
  end
  if not oldest then return 0 end
  return math.max(0, (oldest + subs) * sub - t)
end

-- HDEL fields of key, in slices: unpack() is limited to a few thousand values.
local function hdel_all(key, fields)
  for s = 1, #fields, 1000 do
    redis.call('HDEL', key, unpack(fields, s, math.min(s + 999, #fields)))
  end
end

-- lib/subwindows.lua: the sliding-window counter (lua/README.md, "The
-- sliding-window counter").  Units: requests, ms.
--
-- window_ms is cut into N = sub_windows sub-windows of sub_ms = window_ms / N
-- (N divides window_ms: every sub-window has the same whole ms).  A counter
-- hash holds "<j>" = requests admitted in sub-window j, which covers
-- [j * sub_ms, (j + 1) * sub_ms), and, under names that start with a letter
-- (a field whose name starts with a digit is a sub-window's), t = the ms the
-- latest admission was served at (the time mark) and the parameters
-- applied: limit, window_ms, sub_windows, rule.  At t, with cur =
-- floor(t / sub_ms), the live sub-windows are cur - N + 1 .. cur; fields of
-- any other index are expired (or were written under another sub_ms) and
-- are removed: Redis 7.0 has no per-field TTL.
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

-- limit, window_ms and sub_windows (the client's ARGV[5..7]): limit,
-- window, N and sub_ms, or nil and the error reply naming the first bad one.
local function arg_counter(limit_s, window_s, subs_s)
  local limit, window, subs = int_arg(limit_s, 1), int_arg(window_s, 1), int_arg(subs_s, 1)
  if limit and window and subs and window % subs == 0 then return limit, window, subs, window / subs end
  local err
  limit, err = arg_int(limit_s, 'limit')
  if err then return nil, nil, nil, nil, err end
  window, err = arg_int(window_s, 'window_ms')
  if err then return nil, nil, nil, nil, err end
  local _
  _, _, err = arg_subs(subs_s, window)
  return nil, nil, nil, nil, err
end

-- The time mark of a counter: its stored t (named.t, subs_fields), a whole
-- ms, or nil.
local function subs_mark(named)
  local mark = tonumber(named.t)
  if mark and (mark < 0 or mark % 1 ~= 0 or mark >= MAX_INT) then return nil end
  return mark
end

-- The counter's HGETALL h, in one pass: its named fields (names that do
-- not start with a digit: t, limit, window_ms, sub_windows, rule; false when
-- absent), a table by name of the stored strings; and the positions in h of
-- its sub-window fields (names that start with a digit), a list.
local function subs_fields(h)
  local named, at, n = { t = false, limit = false, window_ms = false, sub_windows = false, rule = false }, {}, 0
  for i = 1, #h, 2 do
    local b = string.byte(h[i], 1)
    if b and b >= 48 and b <= 57 then
      n = n + 1
      at[n] = i
    else
      named[h[i]] = h[i + 1]
    end
  end
  return named, at
end

-- The sub-window fields of h (at: their positions, subs_fields) at cur,
-- with N = subs: the sum of the live ones (cur - N < index <= cur), the
-- count of cur, the oldest live index that holds requests (nil when none
-- does), and the names of the fields to remove (index <= cur - N, or > cur:
-- written under another sub_ms), nil when there are none.  A field's index
-- is its name read as a number (sluice writes it with fmt_int); a name that
-- is not a whole number is stale too.  A count that is not a whole number
-- >= 0 reads 0.  (No function calls but tonumber: this runs on every call.)
local function subs_live(h, at, cur, subs)
  local sum, cur_count, oldest, stale = 0, 0, nil, nil
  local low = cur - subs
  for k = 1, #at do
    local i = at[k]
    local idx = tonumber(h[i])
    if not idx or idx <= low or idx > cur or idx % 1 ~= 0 then
      if stale then stale[#stale + 1] = h[i] else stale = { h[i] } end
    else
      local c = tonumber(h[i + 1])
      if not c or c < 0 or c % 1 ~= 0 then c = 0 end
      if c > 0 then
        sum = sum + c
        if not oldest or idx < oldest then oldest = idx end
      end
      if idx == cur then cur_count = c end
    end
  end
  return sum, cur_count, oldest, stale
end

-- The live sub-window whose leaving brings the oldest live ones' requests to
-- `need` (>= 1, at most their sum; h, at, cur, subs as for subs_live): after
-- it has left the window, at (index + N) * sub_ms, `need` fewer requests
-- count.
local function subs_leaving(h, at, cur, subs, need)
  local live = {}
  for k = 1, #at do
    local idx, c = tonumber(h[at[k]]), tonumber(h[at[k] + 1])
    if idx and idx > cur - subs and idx <= cur and idx % 1 == 0 and c and c >= 1 and c % 1 == 0 then
      live[#live + 1] = { idx, c }
    end
  end
  table.sort(live, function(a, b) return a[1] < b[1] end)
  local acc = 0
  for _, e in ipairs(live) do
    acc = acc + e[2]
    if acc >= need then return e[1] end
  end
  return nil
end

-- reset_ms: ms from t until the oldest live sub-window (index `oldest`,
-- nil when none holds requests) leaves the window, 0 when there is none.
local function subs_reset_ms(oldest, subs, sub, t)
  if not oldest then return 0 end
  return math.max(0, (oldest + subs) * sub - t)
end

-- HDEL fields of key, in slices: unpack() is limited to a few thousand values.
local function hdel_all(key, fields)
  for s = 1, #fields, 1000 do
    redis.call('HDEL', key, unpack(fields, s, math.min(s + 999, #fields)))
  end
end
